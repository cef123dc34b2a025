//===- shape.cu - Data-movement kernels -----------------------------------===//
//
// Part of meshc. transpose, concat, gather, slice, expand, trilu, scatterND
// and embedding move elements without looking at them, so each works on any
// dtype by its byte width; copies of whole rows (concat, gather, embedding,
// scatterND) move the widest unit, up to 16 bytes, that every address and
// row size allows. A transpose that swaps the input's contiguous dimension
// away from the output's goes through 32x32 tiles in shared memory so that
// both its reads and its writes are coalesced.
//
// Index tensors are checked on the device, by the threads that use them: a
// bad index is recorded in the error slot (DeviceError, reported at the next
// synchronisation) and its row is not written, so no access leaves a
// tensor.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

#include <string>

namespace meshc::rt::cuda {
using namespace detail;

namespace {

/// Calls fn(TypeTag<U>) with U a type of `unit` bytes (1 to 16).
template <typename Fn> void dispatchUnit(std::size_t unit, Fn &&fn) {
  switch (unit) {
  case 16:
    return fn(TypeTag<uint4>{});
  case 8:
    return fn(TypeTag<std::uint64_t>{});
  case 4:
    return fn(TypeTag<std::uint32_t>{});
  case 2:
    return fn(TypeTag<std::uint16_t>{});
  default:
    return fn(TypeTag<std::uint8_t>{});
  }
}

template <typename U>
__global__ void copyRowsKernel(U *dst, std::int64_t dstPitch, const U *src,
                               std::int64_t srcPitch, std::int64_t rowUnits,
                               std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r, c;
    divmod(i, rowUnits, r, c);
    dst[r * dstPitch + c] = src[r * srcPitch + c];
  }
}

template <typename U>
__global__ void stridedCopyKernel(Plan<1> plan, const U *in, U *out,
                                  std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[1];
    planOffsets(plan, i, off);
    out[i] = in[off[0]];
  }
}

} // namespace

void detail::copyRows(void *dst, std::size_t dstPitch, const void *src,
                      std::size_t srcPitch, std::size_t rowBytes,
                      std::int64_t rows, const char *kernel) {
  if (rowBytes == 0 || rows <= 0)
    return;
  if (rows == 1 || (dstPitch == rowBytes && srcPitch == rowBytes)) {
    check(cudaMemcpyAsync(dst, src, rowBytes * static_cast<std::size_t>(rows),
                          cudaMemcpyDeviceToDevice, stream()),
          kernel);
    return;
  }
  const std::size_t unit = alignmentOf(
      dst, 16,
      {reinterpret_cast<std::uintptr_t>(src), rowBytes, dstPitch, srcPitch});
  const auto rowUnits = static_cast<std::int64_t>(rowBytes / unit);
  const std::int64_t n = rowUnits * rows;
  dispatchUnit(unit, [&](auto tag) {
    using U = typename decltype(tag)::type;
    copyRowsKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        static_cast<U *>(dst), static_cast<std::int64_t>(dstPitch / unit),
        static_cast<const U *>(src), static_cast<std::int64_t>(srcPitch / unit),
        rowUnits, n);
  });
  checkLaunch(kernel);
}

void detail::stridedCopy(const Plan<1> &plan, const void *in, void *out,
                         std::size_t width, const char *kernel) {
  const std::int64_t n = plan.numElements();
  if (n == 0)
    return;
  if (plan.rank == 1 && plan.strides[0][0] == 1) {
    check(cudaMemcpyAsync(out, in, static_cast<std::size_t>(n) * width,
                          cudaMemcpyDeviceToDevice, stream()),
          kernel);
    return;
  }
  dispatchWidth(width, [&](auto tag) {
    using U = typename decltype(tag)::type;
    stridedCopyKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        plan, static_cast<const U *>(in), static_cast<U *>(out), n);
  });
  checkLaunch(kernel);
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

namespace {

constexpr int kTile = 32;

/// Batched 2-D transposes: for every batch index z (operand offsets from
/// `batch`: 0 the input, 1 the output), out[t * outStrideT + l] =
/// in[l * inStrideL + t] for t < nT, l < nL. A block reads a 32x32 tile
/// along t (the input's contiguous dimension) and writes it along l (the
/// output's); the padding column keeps the transposed reads of the tile
/// free of bank conflicts.
template <typename U>
__global__ void transposeTiledKernel(const U *in, U *out, Plan<2> batch,
                                     std::int64_t batches, std::int64_t nT,
                                     std::int64_t nL, std::int64_t inStrideL,
                                     std::int64_t outStrideT) {
  __shared__ U tile[kTile][kTile + 1];
  const std::int64_t tilesT = (nT + kTile - 1) / kTile;
  const std::int64_t tilesL = (nL + kTile - 1) / kTile;
  for (std::int64_t z = blockIdx.z; z < batches; z += gridDim.z) {
    std::int64_t off[2];
    planOffsets(batch, z, off);
    const U *src = in + off[0];
    U *dst = out + off[1];
    for (std::int64_t ty = blockIdx.y; ty < tilesT; ty += gridDim.y)
      for (std::int64_t tx = blockIdx.x; tx < tilesL; tx += gridDim.x) {
        const std::int64_t t0 = ty * kTile, l0 = tx * kTile;
        for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
          const std::int64_t l = l0 + r, t = t0 + threadIdx.x;
          if (l < nL && t < nT)
            tile[r][threadIdx.x] = src[l * inStrideL + t];
        }
        __syncthreads();
        for (int r = threadIdx.y; r < kTile; r += blockDim.y) {
          const std::int64_t t = t0 + r, l = l0 + threadIdx.x;
          if (l < nL && t < nT)
            dst[t * outStrideT + l] = tile[threadIdx.x][r];
        }
        __syncthreads();
      }
  }
}

unsigned capGrid(std::int64_t n, std::int64_t cap) {
  return static_cast<unsigned>(n < 1 ? 1 : (n < cap ? n : cap));
}

} // namespace

void transpose(const TensorRef &in, const std::int64_t *perm,
               const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const Plan<1> plan = plans::transposePlan(in, perm, out);
  const std::size_t width = byteWidth(in.dtype);
  const int last = plan.rank - 1;
  int contiguous = -1; // the output dimension the input walks with stride 1
  for (int d = 0; d < last; ++d)
    if (plan.strides[0][d] == 1)
      contiguous = d;
  if (contiguous < 0 || plan.strides[0][last] == 1)
    return stridedCopy(plan, in.data, out.data, width, "transpose");

  // Tiles over (contiguous, last); every other dimension is a batch index
  // with its input stride and its dense output stride.
  std::int64_t outStrides[kMaxRank];
  for (std::int64_t d = last, s = 1; d >= 0; --d) {
    outStrides[d] = s;
    s *= plan.shape[d];
  }
  Plan<2> batch;
  for (int d = 0; d <= last; ++d) {
    if (d == contiguous || d == last)
      continue;
    batch.shape[batch.rank] = plan.shape[d];
    batch.strides[0][batch.rank] = plan.strides[0][d];
    batch.strides[1][batch.rank] = outStrides[d];
    ++batch.rank;
  }
  simplify(batch);
  const std::int64_t batches = batch.numElements();
  const std::int64_t nT = plan.shape[contiguous], nL = plan.shape[last];
  const dim3 grid(capGrid((nL + kTile - 1) / kTile, 1 << 16),
                  capGrid((nT + kTile - 1) / kTile, 65535),
                  capGrid(batches, 65535));
  dispatchWidth(width, [&](auto tag) {
    using U = typename decltype(tag)::type;
    transposeTiledKernel<U><<<grid, dim3(kTile, 8), 0, stream()>>>(
        in.as<const U>(), out.as<U>(), batch, batches, nT, nL,
        plan.strides[0][last], outStrides[contiguous]);
  });
  checkLaunch("transpose");
}

//===----------------------------------------------------------------------===//
// Concat, slice, expand, trilu
//===----------------------------------------------------------------------===//

void concat(const TensorRef *inputs, int count, std::int64_t axis,
            const TensorRef &out) {
  const std::size_t width = byteWidth(out.dtype);
  const plans::ConcatPlan p = plans::concatPlan(out, axis);
  const std::size_t outRow = static_cast<std::size_t>(p.outRow) * width;
  std::size_t start = 0;
  auto *dst = static_cast<unsigned char *>(out.data);
  for (int i = 0; i < count; ++i) {
    const TensorRef &in = inputs[i];
    const std::size_t row = static_cast<std::size_t>(p.rowOf(in)) * width;
    copyRows(dst + start, outRow, in.data, row, row, p.outer, "concat");
    start += row;
  }
}

void slice(const TensorRef &in, const std::int64_t *starts,
           const std::int64_t *steps, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const plans::SlicePlan p = plans::slicePlan(in, starts, steps, out);
  const std::size_t width = byteWidth(in.dtype);
  stridedCopy(p.read,
              static_cast<const unsigned char *>(in.data) + p.base * width,
              out.data, width, "slice");
}

void expand(const TensorRef &in, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const TensorRef *inputs[] = {&in};
  const Plan<1> plan = broadcastPlan<1>(out, inputs);
  stridedCopy(plan, in.data, out.data, byteWidth(in.dtype), "expand");
}

namespace {

/// Keeps element (i, j) of each matrix where j - i >= diagonal (upper) or
/// j - i <= diagonal (lower), zero elsewhere.
template <typename U>
__global__ void triluKernel(const U *in, U *out, std::int64_t rows,
                            std::int64_t cols, bool upper,
                            std::int64_t diagonal, std::int64_t n) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       e < n; e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t rest, j, matrix, i;
    divmod(e, cols, rest, j);
    divmod(rest, rows, matrix, i);
    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    out[e] = keep ? in[e] : U(0);
  }
}

} // namespace

void trilu(const TensorRef &in, bool upper, std::int64_t diagonal,
           const TensorRef &out) {
  const std::int64_t n = out.numElements();
  if (n == 0)
    return;
  const plans::TriluPlan p = plans::triluPlan(in);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    triluKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        in.as<const U>(), out.as<U>(), p.rows, p.cols, upper, diagonal, n);
  });
  checkLaunch("trilu");
}

//===----------------------------------------------------------------------===//
// Gather, embedding
//===----------------------------------------------------------------------===//

namespace {

/// out row r = (o, j) of [outer, count] rows of `rowUnits` units is source
/// row o * dim + indices[j] (negative indices count from the end). An index
/// outside [-dim, dim) is recorded once per row and the row is left
/// unwritten.
template <typename U>
__global__ void
gatherRowsKernel(const U *src, U *dst, const void *indices, bool is32,
                 std::int64_t count, std::int64_t dim, std::int64_t rowUnits,
                 std::int64_t n, std::int64_t *slot, DeviceError kind) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       e < n; e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r, c, o, j;
    divmod(e, rowUnits, r, c);
    divmod(r, count, o, j);
    std::int64_t index = readIndex(indices, is32, j);
    if (index < -dim || index >= dim) {
      if (c == 0)
        recordError(slot, kind, index, dim);
      continue;
    }
    if (index < 0)
      index += dim;
    dst[e] = src[(o * dim + index) * rowUnits + c];
  }
}

/// Checks indices alone, for a gather whose output is empty (no row kernel
/// runs, but a bad index is still an error, as on the CPU).
__global__ void checkIndicesKernel(const void *indices, bool is32,
                                   std::int64_t count, std::int64_t dim,
                                   std::int64_t *slot, DeviceError kind) {
  for (std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       j < count; j += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t index = readIndex(indices, is32, j);
    if (index < -dim || index >= dim)
      recordError(slot, kind, index, dim);
  }
}

/// The gather/embedding row copy shared by both kernels.
void gatherRows(const TensorRef &data, const TensorRef &indices,
                const plans::GatherPlan &p, const TensorRef &out,
                DeviceError kind, const char *kernel) {
  const std::int64_t count = p.count, outer = p.outer, dim = p.dim;
  if (count == 0)
    return;
  const bool is32 = indices.dtype == DType::I32;
  const std::size_t rowBytes =
      static_cast<std::size_t>(p.inner) * byteWidth(data.dtype);
  if (outer == 0 || rowBytes == 0) {
    checkIndicesKernel<<<gridFor(count), kThreads, 0, stream()>>>(
        indices.data, is32, count, dim, errorSlot(), kind);
    return checkLaunch(kernel);
  }
  const std::size_t unit = alignmentOf(
      out.data, 16, {reinterpret_cast<std::uintptr_t>(data.data), rowBytes});
  const auto rowUnits = static_cast<std::int64_t>(rowBytes / unit);
  const std::int64_t n = outer * count * rowUnits;
  dispatchUnit(unit, [&](auto tag) {
    using U = typename decltype(tag)::type;
    gatherRowsKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        data.as<const U>(), out.as<U>(), indices.data, is32, count, dim,
        rowUnits, n, errorSlot(), kind);
  });
  checkLaunch(kernel);
}

} // namespace

void gather(const TensorRef &data, const TensorRef &indices, std::int64_t axis,
            const TensorRef &out) {
  requireIndices(indices, "gather");
  gatherRows(data, indices, plans::gatherPlan(data, indices, axis), out,
             DeviceError::GatherIndex, "gather");
}

namespace {

/// Output element e is element e % inner of row e / inner (see
/// plans::GatherNDPlan).
template <typename U>
__global__ void gatherNDKernel(const U *src, U *dst, const void *indices,
                               bool is32, plans::GatherNDPlan g, std::int64_t n,
                               std::int64_t *slot) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       e < n; e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r, c;
    divmod(e, g.inner, r, c);
    std::int64_t offset = (r / g.perBatch) * g.batchStride;
    bool bad = false;
    for (int j = 0; j < g.k; ++j) {
      std::int64_t index = readIndex(indices, is32, r * g.k + j);
      if (index < -g.size[j] || index >= g.size[j]) {
        if (c == 0)
          recordError(slot, DeviceError::GatherIndex, index, g.size[j]);
        bad = true;
        break;
      }
      if (index < 0)
        index += g.size[j];
      offset += index * g.stride[j];
    }
    if (!bad)
      dst[e] = src[offset + c];
  }
}

} // namespace

void gatherND(const TensorRef &data, const TensorRef &indices,
              std::int64_t batchDims, const TensorRef &out) {
  requireIndices(indices, "gather_nd");
  const plans::GatherNDPlan g = plans::gatherNDPlan(data, indices, batchDims);
  const std::int64_t n = out.numElements();
  if (n == 0 || g.inner == 0)
    return;
  const bool is32 = indices.dtype == DType::I32;
  dispatchUnit(byteWidth(data.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    gatherNDKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        data.as<const U>(), out.as<U>(), indices.data, is32, g, n, errorSlot());
  });
  checkLaunch("gather_nd");
}

void embedding(const TensorRef &table, const TensorRef &ids,
               const TensorRef &out) {
  requireIndices(ids, "embedding");
  gatherRows(table, ids, plans::embeddingPlan(table, ids), out,
             DeviceError::EmbeddingId, "embedding");
}

//===----------------------------------------------------------------------===//
// ScatterND
//===----------------------------------------------------------------------===//

namespace {

/// Up to this many index tuples, a tuple that a later one repeats is not
/// written, so that the last duplicate wins as on the CPU (each block scans
/// the later tuples: quadratic work, a few milliseconds at this bound).
/// Beyond it duplicates race; ONNX leaves them undefined for reduction none.
constexpr std::int64_t kScatterDedupLimit = 16384;

/// Index tuple t: its indices, negative ones normalised, into `index`, and
/// its offset in slices; false (thread 0 recording the error) when an index
/// lies outside its dimension.
__device__ __forceinline__ bool tupleAt(const void *indices, bool is32,
                                        const plans::ScatterNDPlan &dims,
                                        std::int64_t t, std::int64_t *slot,
                                        std::int64_t (&index)[kMaxRank],
                                        std::int64_t &offset) {
  const int q = dims.q;
  offset = dims.batchStart(t);
#pragma unroll
  for (int d = 0; d < kMaxRank; ++d) {
    if (d >= q)
      continue;
    std::int64_t i = readIndex(indices, is32, t * q + d);
    if (i < -dims.shape[d] || i >= dims.shape[d]) {
      if (threadIdx.x == 0)
        recordError(slot, DeviceError::ScatterIndex, i, dims.shape[d]);
      return false;
    }
    if (i < 0)
      i += dims.shape[d];
    index[d] = i;
    offset += i * dims.stride[d];
  }
  return true;
}

/// One block per index tuple: checks it, normalises negative indices, skips
/// it when a later tuple repeats it (`dedup`), then copies its slice. `dims`
/// holds the first q dimensions of the data with their strides counted in
/// slices.
template <typename U>
__global__ void scatterKernel(U *out, const U *updates, const void *indices,
                              bool is32, plans::ScatterNDPlan dims,
                              std::int64_t sliceUnits, bool dedup,
                              std::int64_t *slot) {
  const int q = dims.q;
  const std::int64_t tuples = dims.tuples;
  for (std::int64_t t = blockIdx.x; t < tuples; t += gridDim.x) {
    std::int64_t index[kMaxRank] = {};
    std::int64_t offset = 0;
    if (!tupleAt(indices, is32, dims, t, slot, index, offset))
      continue; // the same for every thread of the block
    if (dedup) {
      // Only a later tuple of the same batch can write the same slice.
      const std::int64_t end =
          dims.perBatch > 0 ? (t / dims.perBatch + 1) * dims.perBatch : tuples;
      bool repeated = false;
      for (std::int64_t t2 = t + 1 + threadIdx.x; t2 < end && !repeated;
           t2 += blockDim.x) {
        bool same = true;
#pragma unroll
        for (int d = 0; d < kMaxRank; ++d) {
          if (d >= q || !same)
            continue;
          std::int64_t i = readIndex(indices, is32, t2 * q + d);
          if (i < 0)
            i += dims.shape[d];
          same = i == index[d];
        }
        repeated = same;
      }
      if (__syncthreads_or(repeated))
        continue;
    }
    U *dst = out + offset * sliceUnits;
    const U *src = updates + t * sliceUnits;
    for (std::int64_t c = threadIdx.x; c < sliceUnits; c += blockDim.x)
      dst[c] = src[c];
  }
}

/// out[i] += x for scatter_nd's accumulate: CUDA's atomics (f16 from sm_70,
/// bf16 from sm_80; i64 as unsigned, whose wrap-around sum is the same).
__device__ __forceinline__ void atomicAddTo(float *o, float x) {
  atomicAdd(o, x);
}
__device__ __forceinline__ void atomicAddTo(__half *o, __half x) {
  atomicAdd(o, x);
}
__device__ __forceinline__ void atomicAddTo(__nv_bfloat16 *o, __nv_bfloat16 x) {
  atomicAdd(o, x);
}
__device__ __forceinline__ void atomicAddTo(std::int32_t *o, std::int32_t x) {
  atomicAdd(o, x);
}
__device__ __forceinline__ void atomicAddTo(std::int64_t *o, std::int64_t x) {
  atomicAdd(reinterpret_cast<unsigned long long *>(o),
            static_cast<unsigned long long>(x));
}

/// scatter_nd with accumulate: one block per index tuple, which adds its
/// slice element by element with atomics (duplicates sum, in no fixed
/// order: floats may differ from the cpu's ordered sum in the last bits).
template <typename T>
__global__ void scatterAddKernel(T *out, const T *updates, const void *indices,
                                 bool is32, plans::ScatterNDPlan dims,
                                 std::int64_t *slot) {
  for (std::int64_t t = blockIdx.x; t < dims.tuples; t += gridDim.x) {
    std::int64_t index[kMaxRank] = {};
    std::int64_t offset = 0;
    if (!tupleAt(indices, is32, dims, t, slot, index, offset))
      continue;
    for (std::int64_t c = threadIdx.x; c < dims.slice; c += blockDim.x)
      atomicAddTo(out + offset * dims.slice + c, updates[t * dims.slice + c]);
  }
}

} // namespace

void scatterND(const TensorRef &data, const TensorRef &indices,
               const TensorRef &updates, bool accumulate,
               std::int64_t batchDims, const TensorRef &out) {
  requireIndices(indices, "scatter_nd");
  copy(data, out);
  const plans::ScatterNDPlan dims =
      plans::scatterNDPlan(data, indices, batchDims);
  const std::int64_t tuples = dims.tuples;
  if (tuples == 0)
    return;
  if (accumulate) {
    dispatchNumeric(data.dtype, "scatter_nd (accumulate)", [&](auto tag) {
      using T = typename decltype(tag)::type;
      scatterAddKernel<T><<<gridFor(tuples, 1), kThreads, 0, stream()>>>(
          out.as<T>(), updates.as<const T>(), indices.data,
          indices.dtype == DType::I32, dims, errorSlot());
    });
    checkLaunch("scatter_nd");
    return;
  }
  const std::size_t sliceBytes =
      static_cast<std::size_t>(dims.slice) * byteWidth(data.dtype);
  const std::size_t unit =
      alignmentOf(out.data, 16,
                  {reinterpret_cast<std::uintptr_t>(updates.data), sliceBytes});
  const auto sliceUnits = static_cast<std::int64_t>(sliceBytes / unit);
  dispatchUnit(unit, [&](auto tag) {
    using U = typename decltype(tag)::type;
    scatterKernel<U><<<gridFor(tuples, 1), kThreads, 0, stream()>>>(
        out.as<U>(), updates.as<const U>(), indices.data,
        indices.dtype == DType::I32, dims, sliceUnits,
        tuples <= kScatterDedupLimit, errorSlot());
  });
  checkLaunch("scatter_nd");
}

} // namespace meshc::rt::cuda
