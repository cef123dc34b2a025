//===- shape.cpp - Data-movement kernels ----------------------------------===//
//
// Part of meshc. transpose, concat, gather, slice, expand, trilu, scatterND
// and embedding move elements without looking at them, so each works on any
// dtype by its byte width; iota and fillIntegers write integer tensors. Index
// tensors are checked before any parallel loop runs, so a bad index stops the
// process from the calling thread.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "meshc/runtime/error.h"
#include "meshc/runtime/half.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cstring>
#include <string>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

void transpose(const TensorRef &in, const std::int64_t *perm,
               const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const StridePlan<1> plan = plans::transposePlan(in, perm, out);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(plan, in.as<const T>(), 0, out.as<T>());
  });
}

void concat(const TensorRef *inputs, int count, std::int64_t axis,
            const TensorRef &out) {
  const std::size_t width = byteWidth(out.dtype);
  const plans::ConcatPlan p = plans::concatPlan(out, axis);
  const std::int64_t outer = p.outer;
  const std::size_t outRow = static_cast<std::size_t>(p.outRow) * width;
  std::size_t start = 0;
  auto *dst = static_cast<unsigned char *>(out.data);
  for (int i = 0; i < count; ++i) {
    const TensorRef &in = inputs[i];
    const std::size_t row = static_cast<std::size_t>(p.rowOf(in)) * width;
    const auto *src = static_cast<const unsigned char *>(in.data);
    if (outer == 1) {
      parallelMemcpy(dst + start, src, row);
    } else {
      const std::int64_t total = outer * p.rowOf(in);
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
      for (std::int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * outRow + start, src + o * row, row);
    }
    start += row;
  }
}

void gather(const TensorRef &data, const TensorRef &indices, std::int64_t axis,
            const TensorRef &out) {
  requireIndices(indices, "gather");
  const plans::GatherPlan p = plans::gatherPlan(data, indices, axis);
  const std::int64_t dim = p.dim, count = p.count, inner = p.inner;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t index = readIndex(indices, i);
    if (index < -dim || index >= dim)
      fatal("gather: index " + std::to_string(index) + " is outside [-" +
            std::to_string(dim) + ", " + std::to_string(dim) + ") of axis " +
            std::to_string(p.axis));
  }
  if (out.numElements() == 0)
    return;
  const std::size_t width = byteWidth(data.dtype);
  const std::size_t slice = static_cast<std::size_t>(inner) * width;
  const auto *src = static_cast<const unsigned char *>(data.data);
  auto *dst = static_cast<unsigned char *>(out.data);
  const std::int64_t rows = p.rows();
#pragma omp parallel for schedule(static) if (rows * inner > kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t o = r / count, j = r % count;
    std::int64_t index = readIndex(indices, j);
    if (index < 0)
      index += dim;
    std::memcpy(dst + r * slice, src + (o * dim + index) * slice, slice);
  }
}

void gatherND(const TensorRef &data, const TensorRef &indices,
              std::int64_t batchDims, const TensorRef &out) {
  requireIndices(indices, "gather_nd");
  // A row of the output is one slice of data's trailing dimensions.
  const plans::GatherNDPlan p = plans::gatherNDPlan(data, indices, batchDims);
  const int k = p.k;
  const std::int64_t inner = p.inner, rows = p.rows();
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t offset = (r / p.perBatch) * p.batchStride;
    for (int j = 0; j < k; ++j) {
      const std::int64_t dim = p.size[j];
      std::int64_t index = readIndex(indices, r * k + j);
      if (index < -dim || index >= dim)
        fatal("gather_nd: index " + std::to_string(index) + " is outside [-" +
              std::to_string(dim) + ", " + std::to_string(dim) +
              ") of dimension " + std::to_string(p.batchDims + j));
      if (index < 0)
        index += dim;
      offset += index * p.stride[j];
    }
    offsets[static_cast<std::size_t>(r)] = offset;
  }
  if (out.numElements() == 0)
    return;
  const std::size_t width = byteWidth(data.dtype);
  const std::size_t slice = static_cast<std::size_t>(inner) * width;
  const auto *src = static_cast<const unsigned char *>(data.data);
  auto *dst = static_cast<unsigned char *>(out.data);
#pragma omp parallel for schedule(static) if (rows * inner > kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * slice,
                src + offsets[static_cast<std::size_t>(r)] * width, slice);
}

void slice(const TensorRef &in, const std::int64_t *starts,
           const std::int64_t *steps, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const plans::SlicePlan p = plans::slicePlan(in, starts, steps, out);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(p.read, in.as<const T>(), p.base, out.as<T>());
  });
}

void expand(const TensorRef &in, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const TensorRef *inputs[] = {&in};
  const StridePlan<1> plan = plans::broadcastPlan<1>(out, inputs);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(plan, in.as<const T>(), 0, out.as<T>());
  });
}

void trilu(const TensorRef &in, bool upper, std::int64_t diagonal,
           const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const plans::TriluPlan p = plans::triluPlan(in);
  const std::int64_t rows = p.rows, cols = p.cols;
  const std::size_t width = byteWidth(in.dtype);
  const auto *src = static_cast<const unsigned char *>(in.data);
  auto *dst = static_cast<unsigned char *>(out.data);
  const std::int64_t total = p.matrices * rows;
#pragma omp parallel for schedule(static) if (total * cols > kParallelThreshold)
  for (std::int64_t r = 0; r < total; ++r) {
    const std::int64_t i = r % rows;
    // Kept columns: j - i >= diagonal (upper) or j - i <= diagonal (lower).
    std::int64_t keepBegin = 0, keepEnd = cols;
    if (upper)
      keepBegin = std::clamp<std::int64_t>(i + diagonal, 0, cols);
    else
      keepEnd = std::clamp<std::int64_t>(i + diagonal + 1, 0, cols);
    unsigned char *o = dst + r * cols * width;
    const unsigned char *x = src + r * cols * width;
    if (keepBegin >= keepEnd) {
      std::memset(o, 0, cols * width);
      continue;
    }
    std::memset(o, 0, keepBegin * width);
    std::memcpy(o + keepBegin * width, x + keepBegin * width,
                (keepEnd - keepBegin) * width);
    std::memset(o + keepEnd * width, 0, (cols - keepEnd) * width);
  }
}

namespace {
/// out[at..at+n) += in[0..n).
template <typename T>
void addSlice(unsigned char *out, const unsigned char *in, std::int64_t n) {
  T *o = reinterpret_cast<T *>(out);
  const T *x = reinterpret_cast<const T *>(in);
  for (std::int64_t e = 0; e < n; ++e)
    o[e] += x[e];
}
} // namespace

void scatterND(const TensorRef &data, const TensorRef &indices,
               const TensorRef &updates, bool accumulate,
               std::int64_t batchDims, const TensorRef &out) {
  void (*add)(unsigned char *, const unsigned char *, std::int64_t) = nullptr;
  if (accumulate) {
    switch (data.dtype) {
    case DType::F32:
      add = addSlice<float>;
      break;
    case DType::I64:
      add = addSlice<std::int64_t>;
      break;
    case DType::I32:
      add = addSlice<std::int32_t>;
      break;
    default:
      unsupportedDType("scatter_nd (accumulate)", data.dtype);
    }
  }
  requireIndices(indices, "scatter_nd");
  copy(data, out);
  const plans::ScatterNDPlan p = plans::scatterNDPlan(data, indices, batchDims);
  const int q = p.q;
  const std::int64_t tuples = p.tuples;
  const std::size_t bytes =
      static_cast<std::size_t>(p.slice) * byteWidth(data.dtype);
  // Check every tuple first; then the writes, in order (a later duplicate
  // wins, deterministically; with `accumulate`, sums in tuple order).
  for (std::int64_t t = 0; t < tuples; ++t)
    for (int d = 0; d < q; ++d) {
      const std::int64_t i = readIndex(indices, t * q + d);
      if (i < -p.shape[d] || i >= p.shape[d])
        fatal("scatter_nd: index " + std::to_string(i) +
              " is outside dimension " + std::to_string(batchDims + d) +
              " of size " +
              std::to_string(p.shape[d]));
    }
  auto *dst = static_cast<unsigned char *>(out.data);
  const auto *src = static_cast<const unsigned char *>(updates.data);
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t slices = p.batchStart(t); // the offset in slices
    for (int d = 0; d < q; ++d) {
      std::int64_t i = readIndex(indices, t * q + d);
      if (i < 0)
        i += p.shape[d];
      slices += i * p.stride[d];
    }
    if (add)
      add(dst + slices * bytes, src + t * bytes, p.slice);
    else
      std::memcpy(dst + slices * bytes, src + t * bytes, bytes);
  }
}

void embedding(const TensorRef &table, const TensorRef &ids,
               const TensorRef &out) {
  requireIndices(ids, "embedding");
  const plans::GatherPlan p = plans::embeddingPlan(table, ids);
  const std::int64_t vocab = p.dim, hidden = p.inner, count = p.count;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t id = readIndex(ids, i);
    if (id < -vocab || id >= vocab)
      fatal("embedding: token id " + std::to_string(id) +
            " is outside the table's " + std::to_string(vocab) + " rows");
  }
  // A bf16 table under an f32 result (--dtype bf16): each row widened to
  // f32 as it is copied; otherwise rows are copied as they are.
  const bool widen = table.dtype == DType::BF16 && out.dtype == DType::F32;
  const std::size_t row =
      static_cast<std::size_t>(hidden) * byteWidth(table.dtype);
  const auto *src = static_cast<const unsigned char *>(table.data);
  auto *dst = static_cast<unsigned char *>(out.data);
#pragma omp parallel for schedule(static) if (count * hidden >                 \
                                              kParallelThreshold)
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t id = readIndex(ids, i);
    if (id < 0)
      id += vocab;
    if (!widen) {
      std::memcpy(dst + i * row, src + id * row, row);
      continue;
    }
    const auto *from = reinterpret_cast<const std::uint16_t *>(src) + id * hidden;
    float *to = reinterpret_cast<float *>(dst) + i * hidden;
    for (std::int64_t j = 0; j < hidden; ++j)
      to[j] = bfloat16ToFloat(from[j]);
  }
}

void iota(const TensorRef &out, std::int64_t start, std::int64_t delta) {
  const std::int64_t n = out.numElements();
  for (std::int64_t i = 0; i < n; ++i) {
    if (out.dtype == DType::I32)
      out.as<std::int32_t>()[i] = static_cast<std::int32_t>(start + i * delta);
    else
      out.as<std::int64_t>()[i] = start + i * delta;
  }
}

void fillIntegers(const TensorRef &out, const std::int64_t *values, int count) {
  for (int i = 0; i < count; ++i) {
    if (out.dtype == DType::I32)
      out.as<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    else
      out.as<std::int64_t>()[i] = values[i];
  }
}

} // namespace meshc::rt::cpu
