//===- reduction.cu - reductions, softmax, cumsum, top_k
//-------------------===//
//
// Part of meshc. reduce groups the input's dimensions into runs of kept and
// reduced dimensions, as the CPU kernel does. A single reduced run that is
// innermost (a row reduction) gives each output a warp or a block that
// reads its row coalesced; anything else (a column reduction, several
// reduced runs) gives each output a thread that walks its reduced elements
// with an odometer, neighbouring outputs reading neighbouring addresses.
// Float sums accumulate in double, as on the CPU; integer sums in i64.
//
// softmax along the last axis is a row kernel (max, sum of exponentials,
// scale: three passes over a row that stays in L1/L2); along another axis
// each thread owns one column of `inner`-strided elements. Both compute in
// f32 with CUDA's accurate expf. cumsum gives each thread one column's
// running sum, accumulated as the reductions do. top_k gives each element a
// thread that counts the elements ordered before it in its slice.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

#include <cstring>
#include <limits>
#include <type_traits>

namespace meshc::rt::cuda {
using namespace detail;

namespace {

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

/// Accumulator types: sums of floats in double and of integers in i64;
/// maxima of 16-bit floats in f32 (exact), of the others in their own type.
template <typename T, bool = kIsFloat<T>> struct Accumulator {
  using Sum = std::int64_t;
  using Max = T;
  __device__ static Max load(T x) { return x; }
  __device__ static T fromSum(Sum s) { return static_cast<T>(s); }
  __device__ static T fromMax(Max m) { return m; }
};
template <typename T> struct Accumulator<T, true> {
  using Sum = double;
  using Max = float;
  __device__ static Max load(T x) { return toFloat(x); }
  __device__ static T fromSum(Sum s) {
    return fromFloat<T>(static_cast<float>(s));
  }
  __device__ static T fromMax(Max m) { return fromFloat<T>(m); }
};

/// The identity of the max: -inf for floats, the lowest value for integers.
template <typename M> __device__ __forceinline__ M maxIdentity() {
  if constexpr (std::is_same_v<M, float>)
    return -INFINITY;
  else if constexpr (std::is_same_v<M, std::int64_t>)
    return INT64_MIN;
  else
    return INT32_MIN;
}

/// A sum or mean of `count` elements, as the CPU's Reducer::finish: the
/// mean divides in the accumulator type (integer means truncate).
template <typename T>
__device__ __forceinline__ T finishSum(typename Accumulator<T>::Sum sum,
                                       ReduceOp op, std::int64_t count) {
  using Sum = typename Accumulator<T>::Sum;
  if (op == ReduceOp::Mean)
    sum = sum / static_cast<Sum>(count);
  return Accumulator<T>::fromSum(sum);
}

/// Row reductions: output `row` reduces the `r` contiguous elements
/// x[row * r, (row + 1) * r). One warp per row, or a block per row when rows
/// are long (see rowLaunch).
template <typename T>
__global__ void reduceRowsKernel(ReduceOp op, const T *x, T *y,
                                 std::int64_t rows, std::int64_t r) {
  using A = Accumulator<T>;
  __shared__ typename A::Sum sumScratch[32];
  __shared__ typename A::Max maxScratch[32];
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.y) + threadIdx.y;
       row < rows; row += std::int64_t(gridDim.x) * blockDim.y) {
    const T *xr = x + row * r;
    if (op == ReduceOp::Max) {
      typename A::Max m = maxIdentity<typename A::Max>();
      for (std::int64_t i = threadIdx.x; i < r; i += blockDim.x)
        m = MaxOp{}(m, A::load(xr[i]));
      m = rowReduce(m, MaxOp{}, maxScratch);
      if (threadIdx.x == 0)
        y[row] = A::fromMax(m);
    } else {
      typename A::Sum s = 0;
      for (std::int64_t i = threadIdx.x; i < r; i += blockDim.x)
        s += static_cast<typename A::Sum>(A::load(xr[i]));
      s = rowReduce(s, SumOp{}, sumScratch);
      if (threadIdx.x == 0)
        y[row] = finishSum<T>(s, op, r);
    }
  }
}

/// Where each output's elements lie: plans::ReduceLayout (the output index
/// decomposes over the kept runs into a base offset, an odometer walks the
/// reduced runs from there). One thread per output; loops run over compile-time
/// run numbers so the layout stays in parameter space and the odometer in
/// registers.
template <typename T>
__global__ void reduceStridedKernel(ReduceOp op, plans::ReduceLayout layout,
                                    const T *x, T *y, std::int64_t outputs,
                                    std::int64_t count) {
  using A = Accumulator<T>;
  for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       o < outputs; o += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t offset = 0, rest = o;
#pragma unroll
    for (int k = kMaxRank - 1; k >= 0; --k) {
      if (k >= layout.numKept)
        continue;
      std::int64_t q, r;
      divmod(rest, layout.keptSize[k], q, r);
      offset += r * layout.keptStride[k];
      rest = q;
    }
    std::int64_t index[kMaxRank] = {};
    typename A::Sum s = 0;
    typename A::Max m = maxIdentity<typename A::Max>();
    const bool isMax = op == ReduceOp::Max;
    for (std::int64_t e = 0; e < count; ++e) {
      const typename A::Max v = A::load(x[offset]);
      if (isMax)
        m = MaxOp{}(m, v);
      else
        s += static_cast<typename A::Sum>(v);
#pragma unroll
      for (int k = kMaxRank - 1; k >= 0; --k) {
        if (k >= layout.numReduced)
          continue;
        offset += layout.reducedStride[k];
        if (++index[k] < layout.reducedSize[k])
          break;
        offset -= layout.reducedSize[k] * layout.reducedStride[k];
        index[k] = 0;
      }
    }
    y[o] = isMax ? A::fromMax(m) : finishSum<T>(s, op, count);
  }
}

/// Running sums: one thread per column of `inner`-strided elements, the sum in
/// the reduce kernels' accumulator type.
template <typename T>
__global__ void cumSumKernel(const T *x, T *y, std::int64_t outer,
                             std::int64_t n, std::int64_t inner,
                             bool exclusive, bool reverse) {
  using A = Accumulator<T>;
  const std::int64_t columns = outer * inner;
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       c < columns; c += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t o, i;
    divmod(c, inner, o, i);
    const std::int64_t base = o * n * inner + i;
    typename A::Sum s = 0;
    for (std::int64_t step = 0; step < n; ++step) {
      const std::int64_t at = base + (reverse ? n - 1 - step : step) * inner;
      const typename A::Sum v = static_cast<typename A::Sum>(A::load(x[at]));
      if (!exclusive)
        s += v;
      y[at] = A::fromSum(s);
      if (exclusive)
        s += v;
    }
  }
}

/// top_k's order key: floats compare in f32 (exact for f16 and bf16),
/// integers as they are.
template <typename T> __device__ __forceinline__ T orderKey(T x) { return x; }
__device__ __forceinline__ float orderKey(__half x) { return toFloat(x); }
__device__ __forceinline__ float orderKey(__nv_bfloat16 x) {
  return toFloat(x);
}

/// a > b with NaN above every number, the cpu kernel's order.
template <typename K> __device__ __forceinline__ bool orderedAbove(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    if (isnan(a))
      return !isnan(b);
    if (isnan(b))
      return false;
  }
  return a > b;
}

/// One thread per input element: its rank in its slice is the number of
/// elements ordered before it (by value, then position), and an element of
/// rank below k writes itself there. O(n) per element, O(n^2) per slice:
/// meant for the axes exporters sort (experts, expert choices), not a
/// vocabulary.
template <typename T>
__global__ void topKKernel(const T *x, T *values, std::int64_t *indices,
                           std::int64_t outer, std::int64_t n,
                           std::int64_t inner, std::int64_t k, bool largest) {
  const std::int64_t total = outer * n * inner;
  for (std::int64_t at = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       at < total; at += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t rest, e, o, i;
    divmod(at, inner, rest, e);
    divmod(rest, n, o, i);
    const T *slice = x + o * n * inner + e;
    const auto mine = orderKey(slice[i * inner]);
    std::int64_t rank = 0;
    for (std::int64_t j = 0; j < n && rank < k; ++j) {
      const auto other = orderKey(slice[j * inner]);
      const bool ahead =
          largest ? orderedAbove(other, mine) : orderedAbove(mine, other);
      const bool tie = !orderedAbove(other, mine) && !orderedAbove(mine, other);
      rank += ahead || (tie && j < i);
    }
    if (rank < k) {
      const std::int64_t out = (o * k + rank) * inner + e;
      values[out] = slice[i * inner];
      indices[out] = i;
    }
  }
}

/// ONNX's reduction of nothing: 0 for sums and means, the lowest value (-inf
/// for floats) for the max.
template <typename T>
__global__ void fillReduceIdentityKernel(bool isMax, T *y, std::int64_t n) {
  using A = Accumulator<T>;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = isMax ? A::fromMax(maxIdentity<typename A::Max>())
                 : A::fromSum(typename A::Sum(0));
}

} // namespace

void reduce(ReduceOp op, const TensorRef &in, const std::int64_t *axes,
            int numAxes, const TensorRef &out) {
  // Alternating kept/reduced runs, size-1 dimensions dropped.
  const plans::ReducePlan p = plans::reducePlan(in, axes, numAxes);
  const std::int64_t count = p.count;
  const std::int64_t outputs = out.numElements();
  if (outputs == 0)
    return;
  dispatchNumeric(in.dtype, "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *x = in.as<const T>();
    T *y = out.as<T>();
    if (count == 0) {
      fillReduceIdentityKernel<T><<<gridFor(outputs), kThreads, 0, stream()>>>(
          op == ReduceOp::Max, y, outputs);
      return;
    }
    if (p.reducedRuns == 0) {
      check(cudaMemcpyAsync(y, x, static_cast<std::size_t>(outputs) * sizeof(T),
                            cudaMemcpyDeviceToDevice, stream()),
            "reduce");
      return;
    }
    if (p.reducedRuns == 1 && p.inner == 1) { // the reduced run is innermost
      const RowLaunch l = rowLaunch(outputs, p.r);
      reduceRowsKernel<T>
          <<<l.grid, l.block, 0, stream()>>>(op, x, y, outputs, p.r);
      return;
    }
    reduceStridedKernel<T><<<gridFor(outputs), kThreads, 0, stream()>>>(
        op, p.layout, x, y, outputs, count);
  });
  checkLaunch("reduce");
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

namespace {

/// Softmax of contiguous rows of n elements. A row whose maximum is -inf (no
/// finite score) is NaN throughout, as the CPU kernel's (and onnxruntime's);
/// a NaN element makes the sum, hence the whole row, NaN, as there.
template <typename T>
__global__ void softmaxRowsKernel(const T *x, T *y, std::int64_t rows,
                                  std::int64_t n) {
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.y) + threadIdx.y;
       row < rows; row += std::int64_t(gridDim.x) * blockDim.y) {
    const T *xr = x + row * n;
    T *yr = y + row * n;
    float m = -INFINITY;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      m = fmaxf(m, toFloat(xr[i]));
    m = rowReduce(m, FMaxOp{}, scratch);
    if (m == -INFINITY) { // the same for every thread of the row
      for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = fromFloat<T>(NAN);
      continue;
    }
    float s = 0.0f;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      s += expf(toFloat(xr[i]) - m);
    s = rowReduce(s, SumOp{}, scratch);
    const float inv = 1.0f / s;
    for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
      yr[i] = fromFloat<T>(expf(toFloat(xr[i]) - m) * inv);
  }
}

/// Softmax over a non-trailing axis: the thread of column (o, i) walks the n
/// elements x[(o * n + k) * inner + i]; neighbouring threads read
/// neighbouring columns.
template <typename T>
__global__ void softmaxColumnsKernel(const T *x, T *y, std::int64_t outer,
                                     std::int64_t n, std::int64_t inner) {
  const std::int64_t columns = outer * inner;
  for (std::int64_t c = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       c < columns; c += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t o, i;
    divmod(c, inner, o, i);
    const std::int64_t base = o * n * inner + i;
    float m = -INFINITY;
    for (std::int64_t k = 0; k < n; ++k)
      m = fmaxf(m, toFloat(x[base + k * inner]));
    if (m == -INFINITY) {
      for (std::int64_t k = 0; k < n; ++k)
        y[base + k * inner] = fromFloat<T>(NAN);
      continue;
    }
    float s = 0.0f;
    for (std::int64_t k = 0; k < n; ++k)
      s += expf(toFloat(x[base + k * inner]) - m);
    const float inv = 1.0f / s;
    for (std::int64_t k = 0; k < n; ++k)
      y[base + k * inner] =
          fromFloat<T>(expf(toFloat(x[base + k * inner]) - m) * inv);
  }
}

} // namespace

void softmax(const TensorRef &in, std::int64_t axis, const TensorRef &out) {
  const plans::AxisSplit split = plans::splitAt(in, axis);
  const std::int64_t outer = split.outer, n = split.size, inner = split.inner;
  if (outer * n * inner == 0)
    return;
  dispatchFloat(in.dtype, "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (inner == 1) {
      const RowLaunch l = rowLaunch(outer, n);
      softmaxRowsKernel<T><<<l.grid, l.block, 0, stream()>>>(
          in.as<const T>(), out.as<T>(), outer, n);
    } else {
      softmaxColumnsKernel<T>
          <<<gridFor(outer * inner), kThreads, 0, stream()>>>(
              in.as<const T>(), out.as<T>(), outer, n, inner);
    }
  });
  checkLaunch("softmax");
}

void cumSum(const TensorRef &in, std::int64_t axis, bool exclusive,
            bool reverse, const TensorRef &out) {
  const plans::AxisSplit s = plans::splitAt(in, axis);
  if (s.outer * s.size * s.inner == 0)
    return;
  dispatchNumeric(in.dtype, "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cumSumKernel<T><<<gridFor(s.outer * s.inner), kThreads, 0, stream()>>>(
        in.as<const T>(), out.as<T>(), s.outer, s.size, s.inner, exclusive,
        reverse);
  });
  checkLaunch("cumsum");
}

void topK(const TensorRef &in, std::int64_t axis, bool largest,
          const TensorRef &values, const TensorRef &indices) {
  const plans::AxisSplit s = plans::splitAt(in, axis);
  const std::int64_t k = values.shape[s.axis];
  if (s.outer * s.size * s.inner == 0 || k == 0)
    return;
  dispatchNumeric(in.dtype, "top_k", [&](auto tag) {
    using T = typename decltype(tag)::type;
    topKKernel<T>
        <<<gridFor(s.outer * s.size * s.inner), kThreads, 0, stream()>>>(
            in.as<const T>(), values.as<T>(), indices.as<std::int64_t>(),
            s.outer, s.size, s.inner, k, largest);
  });
  checkLaunch("top_k");
}

} // namespace meshc::rt::cuda
