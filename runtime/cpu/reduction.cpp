//===- reduction.cpp - reduce_sum, reduce_mean, reduce_max ----------------===//
//
// Part of meshc. The input's dimensions are grouped into runs of kept and
// reduced dimensions. The usual cases (one reduced run: a row reduction
// [outer, r] or a column reduction [outer, r, inner]) are tight loops; more
// than one reduced run falls back to an odometer over the reduced indices of
// each output element. Float sums accumulate in double, as the reference
// evaluator does.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

namespace {

/// The accumulator of a sum: double for f32, int64 for integers.
template <typename T>
using SumType =
    std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <typename T> struct Reducer {
  ReduceOp op;
  std::int64_t count; // elements per output, for the mean

  T finish(SumType<T> sum) const {
    if (op == ReduceOp::Mean)
      return static_cast<T>(sum / static_cast<SumType<T>>(count));
    return static_cast<T>(sum);
  }
};

template <typename T>
void reduceTyped(ReduceOp op, const TensorRef &in, const std::int64_t *axes,
                 int numAxes, const TensorRef &out) {
  const T *x = in.as<const T>();
  T *y = out.as<T>();
  bool reduced[kMaxRank] = {};
  for (int i = 0; i < numAxes; ++i)
    reduced[axes[i]] = true;
  // Group into alternating kept/reduced runs, dropping size-1 dimensions.
  int groups = 0;
  std::int64_t size[kMaxRank];
  bool isReduced[kMaxRank];
  std::int64_t count = 1;
  for (int d = 0; d < in.rank; ++d) {
    if (reduced[d])
      count *= in.shape[d];
    if (in.shape[d] == 1)
      continue;
    if (groups > 0 && isReduced[groups - 1] == reduced[d]) {
      size[groups - 1] *= in.shape[d];
      continue;
    }
    size[groups] = in.shape[d];
    isReduced[groups] = reduced[d];
    ++groups;
  }
  const Reducer<T> reducer{op, count};
  const std::int64_t outCount = out.numElements();
  const bool isMax = op == ReduceOp::Max;
  if (count == 0) {
    // ONNX: the sum of nothing is 0, the max of nothing the lowest value.
    T init = T(0);
    if (isMax)
      init = std::numeric_limits<T>::has_infinity
                 ? -std::numeric_limits<T>::infinity()
                 : std::numeric_limits<T>::lowest();
    std::fill(y, y + outCount, init);
    return;
  }
  int reducedRuns = 0;
  for (int g = 0; g < groups; ++g)
    reducedRuns += isReduced[g];
  if (reducedRuns == 0) {
    std::memcpy(y, x, static_cast<std::size_t>(outCount) * sizeof(T));
    return;
  }
  if (reducedRuns == 1) {
    std::int64_t outer = 1, r = 1, inner = 1;
    for (int g = 0, seen = 0; g < groups; ++g) {
      if (isReduced[g]) {
        r = size[g];
        seen = 1;
      } else {
        (seen ? inner : outer) *= size[g];
      }
    }
    const std::int64_t total = outer * r * inner;
    if (inner == 1) {
      // Row reductions: each output reads r contiguous elements.
      if (outer == 1 && !isMax) {
        SumType<T> sum = 0;
#pragma omp parallel for reduction(+ : sum) if (total > kParallelThreshold)
        for (std::int64_t i = 0; i < r; ++i)
          sum += x[i];
        y[0] = reducer.finish(sum);
        return;
      }
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
      for (std::int64_t o = 0; o < outer; ++o) {
        const T *row = x + o * r;
        if (isMax) {
          T m = row[0];
          for (std::int64_t i = 1; i < r; ++i)
            m = m < row[i] ? row[i] : m;
          y[o] = m;
        } else {
          SumType<T> sum = 0;
#pragma omp simd reduction(+ : sum)
          for (std::int64_t i = 0; i < r; ++i)
            sum += row[i];
          y[o] = reducer.finish(sum);
        }
      }
      return;
    }
    // Column reductions: accumulate whole rows of `inner` elements, in
    // blocks so that outer == 1 still spreads over the threads.
    constexpr std::int64_t kBlock = 1024;
    const std::int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2)                                           \
    schedule(static) if (total > kParallelThreshold)
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t b = 0; b < blocks; ++b) {
        const std::int64_t begin = b * kBlock;
        const std::int64_t n = std::min(kBlock, inner - begin);
        const T *base = x + o * r * inner + begin;
        T *dst = y + o * inner + begin;
        if (isMax) {
          std::copy(base, base + n, dst);
          for (std::int64_t k = 1; k < r; ++k) {
            const T *row = base + k * inner;
            for (std::int64_t i = 0; i < n; ++i)
              dst[i] = dst[i] < row[i] ? row[i] : dst[i];
          }
        } else {
          SumType<T> acc[kBlock];
          for (std::int64_t i = 0; i < n; ++i)
            acc[i] = base[i];
          for (std::int64_t k = 1; k < r; ++k) {
            const T *row = base + k * inner;
            for (std::int64_t i = 0; i < n; ++i)
              acc[i] += row[i];
          }
          for (std::int64_t i = 0; i < n; ++i)
            dst[i] = reducer.finish(acc[i]);
        }
      }
    return;
  }
  // General case: walk the kept runs for the output index and the reduced
  // runs with an odometer.
  std::int64_t strides[kMaxRank];
  for (std::int64_t g = groups - 1, s = 1; g >= 0; --g) {
    strides[g] = s;
    s *= size[g];
  }
  int keptDims[kMaxRank], redDims[kMaxRank];
  int numKept = 0, numRed = 0;
  for (int g = 0; g < groups; ++g)
    (isReduced[g] ? redDims[numRed++] : keptDims[numKept++]) = g;
#pragma omp parallel for schedule(static) if (outCount * count >               \
                                              kParallelThreshold)
  for (std::int64_t o = 0; o < outCount; ++o) {
    std::int64_t base = 0, rest = o;
    for (int k = numKept - 1; k >= 0; --k) {
      const int g = keptDims[k];
      base += (rest % size[g]) * strides[g];
      rest /= size[g];
    }
    std::int64_t index[kMaxRank] = {};
    std::int64_t offset = base;
    SumType<T> sum = 0;
    T m = x[base];
    for (std::int64_t e = 0; e < count; ++e) {
      const T v = x[offset];
      if (isMax)
        m = m < v ? v : m;
      else
        sum += v;
      for (int k = numRed - 1; k >= 0; --k) {
        const int g = redDims[k];
        offset += strides[g];
        if (++index[k] < size[g])
          break;
        offset -= size[g] * strides[g];
        index[k] = 0;
      }
    }
    y[o] = isMax ? m : reducer.finish(sum);
  }
}

} // namespace

void reduce(ReduceOp op, const TensorRef &in, const std::int64_t *axes,
            int numAxes, const TensorRef &out) {
  switch (in.dtype) {
  case DType::F32:
    return reduceTyped<float>(op, in, axes, numAxes, out);
  case DType::I64:
    return reduceTyped<std::int64_t>(op, in, axes, numAxes, out);
  case DType::I32:
    return reduceTyped<std::int32_t>(op, in, axes, numAxes, out);
  default:
    unsupportedDType("reduce", in.dtype);
  }
}

} // namespace meshc::rt::cpu
