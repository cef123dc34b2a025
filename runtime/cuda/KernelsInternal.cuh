//===- KernelsInternal.cuh - Helpers shared by the CUDA kernels -*- C++ -*-===//
//
// Part of meshc. Private to runtime/cuda: the broadcast/stride plans the
// elementwise and data-movement kernels walk (built on the host, passed to a
// kernel by value), f32/f16/bf16 loads and stores computing in f32, dtype
// dispatch, warp and block reductions, launch sizes and the device-side
// recording of data-dependent errors. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_CUDA_KERNELSINTERNAL_CUH
#define MESHC_RUNTIME_CUDA_KERNELSINTERNAL_CUH

#include "meshc/runtime/error.h"
#include "meshc/runtime/tensor.h"
#include "runtime/ShapePlan.h"
#include "runtime/cuda/CudaDevice.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace meshc::rt::cuda::detail {

//===----------------------------------------------------------------------===//
// Messages and dtype dispatch (host)
//===----------------------------------------------------------------------===//

/// Stops with "<kernel>: element type <t> is not supported by the CUDA
/// kernels".
[[noreturn]] inline void unsupportedDType(const char *kernel, DType t) {
  fatal(std::string(kernel) + ": element type " + dtypeName(t) +
        " is not supported by the CUDA kernels");
}

/// Stops unless `t` has element type `want` (operands that the dfg verifiers
/// require to share a type; checked because a mismatch would be read as the
/// wrong bits, not because a correct program can produce one).
inline void requireDType(const TensorRef &t, DType want, const char *kernel) {
  if (t.dtype != want)
    fatal(std::string(kernel) + ": operand of element type " +
          dtypeName(t.dtype) + " where " + dtypeName(want) + " is expected");
}

/// Stops unless `t` holds i64 or i32 indices.
inline void requireIndices(const TensorRef &t, const char *kernel) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    fatal(std::string(kernel) + ": indices must be i64 or i32, not " +
          dtypeName(t.dtype));
}

/// A type carried as a value, so that a generic host lambda can receive the
/// element type a dispatch picked (`using T = typename decltype(tag)::type`).
template <typename T> struct TypeTag { using type = T; };

/// Calls fn(TypeTag<T>) with T the CUDA type of a floating-point dtype
/// (float, __half, __nv_bfloat16); any other dtype is fatal.
template <typename Fn>
void dispatchFloat(DType t, const char *kernel, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(TypeTag<float>{});
  case DType::F16:
    return fn(TypeTag<__half>{});
  case DType::BF16:
    return fn(TypeTag<__nv_bfloat16>{});
  default:
    unsupportedDType(kernel, t);
  }
}

/// Calls fn(TypeTag<T>) for a numeric dtype (f32, f16, bf16, i64, i32): what
/// binary arithmetic, comparisons, reductions and matmul take.
template <typename Fn>
void dispatchNumeric(DType t, const char *kernel, Fn &&fn) {
  switch (t) {
  case DType::F32:
    return fn(TypeTag<float>{});
  case DType::F16:
    return fn(TypeTag<__half>{});
  case DType::BF16:
    return fn(TypeTag<__nv_bfloat16>{});
  case DType::I64:
    return fn(TypeTag<std::int64_t>{});
  case DType::I32:
    return fn(TypeTag<std::int32_t>{});
  default:
    unsupportedDType(kernel, t);
  }
}

/// Calls fn(TypeTag<T>) with T the unsigned integer type of `width` bytes,
/// so that data-movement kernels handle every dtype by its byte width.
template <typename Fn> void dispatchWidth(std::size_t width, Fn &&fn) {
  switch (width) {
  case 1:
    return fn(TypeTag<std::uint8_t>{});
  case 2:
    return fn(TypeTag<std::uint16_t>{});
  case 4:
    return fn(TypeTag<std::uint32_t>{});
  default:
    return fn(TypeTag<std::uint64_t>{});
  }
}

//===----------------------------------------------------------------------===//
// Launch sizes (host)
//===----------------------------------------------------------------------===//

/// Threads of the elementwise and data-movement kernels' blocks.
inline constexpr int kThreads = 256;

/// Blocks of a grid-stride loop over `n` items with `threads` per block. The
/// cap keeps the grid within what every GPU accepts; each thread then loops.
inline unsigned gridFor(std::int64_t n, int threads = kThreads) {
  constexpr std::int64_t kMaxBlocks = std::int64_t(1) << 20;
  std::int64_t blocks = (n + threads - 1) / threads;
  if (blocks > kMaxBlocks)
    blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

/// The GPU's streaming multiprocessors (one GPU per process, asked once).
inline int multiProcessorCount() {
  static const int count = [] {
    int device = 0, value = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(
        cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute(multiProcessorCount)");
    return value;
  }();
  return count;
}

/// The largest dynamic shared memory a block may opt into on this GPU.
inline int maxSharedMemoryOptin() {
  static const int bytes = [] {
    int device = 0, value = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(
              &value, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          "cudaDeviceGetAttribute(maxSharedMemoryPerBlockOptin)");
    return value;
  }();
  return bytes;
}

/// The largest power of two, at most `cap`, dividing the address `p` and
/// every one of `sizes` (bytes): the widest access all of them allow.
inline std::size_t alignmentOf(const void *p, std::size_t cap,
                               std::initializer_list<std::size_t> sizes = {}) {
  std::size_t bits = reinterpret_cast<std::uintptr_t>(p);
  for (std::size_t s : sizes)
    bits |= s;
  std::size_t a = 1;
  while (a < cap && (bits & a) == 0)
    a <<= 1;
  return a;
}

//===----------------------------------------------------------------------===//
// Broadcast / stride plans
//===----------------------------------------------------------------------===//

/// K operands read through per-dimension element strides (0 on a broadcast
/// dimension) while the output is walked densely: runtime/ShapePlan.h's
/// plans, the same as the CPU kernels walk. Built on the host and passed to
/// a kernel by value (a few hundred bytes of parameter space); a same-shape
/// operation is one dimension and its offsets cost no division.
template <int K> using Plan = plans::StridePlan<K>;
using plans::broadcastPlan;
using plans::simplify;

//===----------------------------------------------------------------------===//
// Index arithmetic (device)
//===----------------------------------------------------------------------===//

/// q = a / b, r = a % b for non-negative a and positive b; 32-bit division
/// when both fit (64-bit division is a long emulated sequence on the GPU).
__device__ __forceinline__ void divmod(std::int64_t a, std::int64_t b,
                                       std::int64_t &q, std::int64_t &r) {
  if (((a | b) >> 32) == 0) {
    const std::uint32_t q32 =
        static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(b);
    q = q32;
    r = a - static_cast<std::int64_t>(q32) * b;
  } else {
    q = a / b;
    r = a - q * b;
  }
}

/// Operand offsets of dense output element `i` of `plan`. The loop runs over
/// compile-time dimension numbers so the plan stays in parameter space
/// (indexing it with a run-time number would copy it to local memory).
template <int K>
__device__ __forceinline__ void planOffsets(const Plan<K> &plan, std::int64_t i,
                                            std::int64_t (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k)
    off[k] = 0;
#pragma unroll
  for (int d = kMaxRank - 1; d > 0; --d) {
    if (d < plan.rank) {
      std::int64_t q, r;
      divmod(i, plan.shape[d], q, r);
#pragma unroll
      for (int k = 0; k < K; ++k)
        off[k] += r * plan.strides[k][d];
      i = q;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k)
    off[k] += i * plan.strides[k][0];
}

/// Element `i` of an index tensor of i32 (`is32`) or i64.
__device__ __forceinline__ std::int64_t readIndex(const void *p, bool is32,
                                                  std::int64_t i) {
  return is32 ? static_cast<std::int64_t>(
                    static_cast<const std::int32_t *>(p)[i])
              : static_cast<const std::int64_t *>(p)[i];
}

/// Records the first data-dependent error of the program in `slot` (see
/// CudaDevice.h): only the thread that moves the kind from 0 writes the value
/// and the bound, so the three words describe one error.
__device__ __forceinline__ void recordError(std::int64_t *slot,
                                            DeviceError kind,
                                            std::int64_t value,
                                            std::int64_t bound) {
  auto *kindWord = reinterpret_cast<unsigned long long *>(slot);
  if (atomicCAS(kindWord, 0ull, static_cast<unsigned long long>(kind)) ==
      0ull) {
    slot[1] = value;
    slot[2] = bound;
  }
}

//===----------------------------------------------------------------------===//
// Element types (device)
//===----------------------------------------------------------------------===//

template <typename T>
inline constexpr bool kIsFloat =
    std::is_same_v<T, float> || std::is_same_v<T, __half> ||
    std::is_same_v<T, __nv_bfloat16>;

/// Widens a floating-point element to f32 (exact).
__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

/// Narrows f32 to a floating-point element, rounding to nearest even (as
/// meshc/runtime/half.h does on the host).
template <typename T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

//===----------------------------------------------------------------------===//
// Reductions (device)
//===----------------------------------------------------------------------===//

struct SumOp {
  template <typename V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a + b;
  }
};
/// The CPU kernels' max, `a < b ? b : a`.
struct MaxOp {
  template <typename V>
  __device__ __forceinline__ V operator()(V a, V b) const {
    return a < b ? b : a;
  }
};
/// fmaxf: a NaN operand loses, so NaN never becomes a row's maximum.
struct FMaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return fmaxf(a, b);
  }
};

/// Reduces `v` over the 32 lanes of a warp; every lane gets the result.
template <typename V, typename Op>
__device__ __forceinline__ V warpReduce(V v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Reduces `v` over the threads that share a row: the warp when blockDim.x
/// is 32 (several rows per block, one per threadIdx.y), else the whole block
/// (blockDim.y == 1). `scratch` holds 32 values in shared memory. Every
/// thread gets the result; the warps combine in a fixed order, so the result
/// does not depend on scheduling.
template <typename V, typename Op>
__device__ __forceinline__ V rowReduce(V v, Op op, V *scratch) {
  v = warpReduce(v, op);
  const int warps = blockDim.x >> 5;
  if (warps == 1)
    return v;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads(); // the previous call's readers are done with scratch
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  V r = scratch[0];
  for (int w = 1; w < warps; ++w)
    r = op(r, scratch[w]);
  return r;
}

/// Block shape of a row-wise kernel (softmax, norms, row reductions): one
/// warp per row and 8 rows per block up to 1024 elements per row, else one
/// block of 256 or 1024 threads per row.
struct RowLaunch {
  dim3 block;
  unsigned grid;
};
inline RowLaunch rowLaunch(std::int64_t rows, std::int64_t rowLength) {
  RowLaunch l;
  if (rowLength <= 1024) {
    l.block = dim3(32, 8);
    l.grid = gridFor(rows, 8);
  } else {
    l.block = dim3(rowLength <= 8192 ? 256 : 1024, 1);
    l.grid = gridFor(rows, 1);
  }
  return l;
}

//===----------------------------------------------------------------------===//
// Shared data movement (host; defined in shape.cu)
//===----------------------------------------------------------------------===//

/// Copies `rows` rows of `rowBytes` bytes from `src` (rows `srcPitch` bytes
/// apart) to `dst` (rows `dstPitch` bytes apart) on the stream, with the
/// widest accesses the addresses and sizes allow; one cudaMemcpyAsync when
/// the rows are contiguous on both sides. `kernel` names the caller in
/// launch errors.
void copyRows(void *dst, std::size_t dstPitch, const void *src,
              std::size_t srcPitch, std::size_t rowBytes, std::int64_t rows,
              const char *kernel);

/// Copies the elements of `plan` (operand 0 read from `in` at element
/// offsets relative to `in`) densely into `out`, elements of `width` bytes.
void stridedCopy(const Plan<1> &plan, const void *in, void *out,
                 std::size_t width, const char *kernel);

} // namespace meshc::rt::cuda::detail

#endif // MESHC_RUNTIME_CUDA_KERNELSINTERNAL_CUH
