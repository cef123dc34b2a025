//===- reduction.cpp - reduce_sum, reduce_mean, reduce_max, cumsum, top_k -===//
//
// Part of meshc. The input's dimensions are grouped into runs of kept and
// reduced dimensions. The usual cases (one reduced run: a row reduction
// [outer, r] or a column reduction [outer, r, inner]) are tight loops; more
// than one reduced run falls back to an odometer over the reduced indices of
// each output element. Float sums accumulate in double, as the reference
// evaluator does; so do cumsum's running sums, one column per iteration.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "runtime/cpu/KernelsInternal.h"

#include <algorithm>
#include <cmath>
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
  // Alternating kept/reduced runs, size-1 dimensions dropped.
  const plans::ReducePlan p = plans::reducePlan(in, axes, numAxes);
  const std::int64_t count = p.count;
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
  if (p.reducedRuns == 0) {
    std::memcpy(y, x, static_cast<std::size_t>(outCount) * sizeof(T));
    return;
  }
  if (p.reducedRuns == 1) {
    const std::int64_t outer = p.outer, r = p.r, inner = p.inner;
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
  const plans::ReduceLayout &l = p.layout;
#pragma omp parallel for schedule(static) if (outCount * count >               \
                                              kParallelThreshold)
  for (std::int64_t o = 0; o < outCount; ++o) {
    std::int64_t base = 0, rest = o;
    for (int k = l.numKept - 1; k >= 0; --k) {
      base += (rest % l.keptSize[k]) * l.keptStride[k];
      rest /= l.keptSize[k];
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
      for (int k = l.numReduced - 1; k >= 0; --k) {
        offset += l.reducedStride[k];
        if (++index[k] < l.reducedSize[k])
          break;
        offset -= l.reducedSize[k] * l.reducedStride[k];
        index[k] = 0;
      }
    }
    y[o] = isMax ? m : reducer.finish(sum);
  }
}

template <typename T>
void cumSumTyped(const TensorRef &in, std::int64_t axis, bool exclusive,
                 bool reverse, const TensorRef &out) {
  const plans::AxisSplit s = plans::splitAt(in, axis);
  const std::int64_t outer = s.outer, n = s.size, inner = s.inner;
  const T *x = in.as<const T>();
  T *y = out.as<T>();
#pragma omp parallel for schedule(static) if (outer * n * inner >             \
                                                  kParallelThreshold)
  for (std::int64_t c = 0; c < outer * inner; ++c) {
    const std::int64_t base = (c / inner) * n * inner + c % inner;
    SumType<T> sum = 0;
    for (std::int64_t step = 0; step < n; ++step) {
      const std::int64_t at = base + (reverse ? n - 1 - step : step) * inner;
      const T v = x[at];
      if (!exclusive)
        sum += v;
      y[at] = static_cast<T>(sum);
      if (exclusive)
        sum += v;
    }
  }
}

/// a > b, with NaN above every number (as torch.topk orders it): a strict
/// weak order even where NaN occurs.
template <typename T> bool orderedAbove(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a))
      return !std::isnan(b);
    if (std::isnan(b))
      return false;
  }
  return a > b;
}

/// Each slice along the axis orders its positions by (value, position): a
/// strict total order, so the partial sort is deterministic and equal values
/// keep their order, as ONNX asks.
template <typename T>
void topKTyped(const TensorRef &in, std::int64_t axis, bool largest,
               const TensorRef &values, const TensorRef &indices) {
  const plans::AxisSplit s = plans::splitAt(in, axis);
  const std::int64_t n = s.size, inner = s.inner;
  const std::int64_t k = values.shape[s.axis];
  const T *x = in.as<const T>();
  T *v = values.as<T>();
  std::int64_t *ix = indices.as<std::int64_t>();
#pragma omp parallel if (s.outer * n * inner > kParallelThreshold)
  {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
#pragma omp for schedule(static)
    for (std::int64_t c = 0; c < s.outer * inner; ++c) {
      const std::int64_t o = c / inner, e = c % inner;
      const T *slice = x + o * n * inner + e;
      for (std::int64_t i = 0; i < n; ++i)
        order[i] = i;
      auto before = [&](std::int64_t a, std::int64_t b) {
        const T va = slice[a * inner], vb = slice[b * inner];
        if (orderedAbove(va, vb))
          return largest;
        if (orderedAbove(vb, va))
          return !largest;
        return a < b;
      };
      if (k < n)
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          before);
      else
        std::sort(order.begin(), order.end(), before);
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t at = (o * k + j) * inner + e;
        v[at] = slice[order[j] * inner];
        ix[at] = order[j];
      }
    }
  }
}

} // namespace

void topK(const TensorRef &in, std::int64_t axis, bool largest,
          const TensorRef &values, const TensorRef &indices) {
  if (values.numElements() == 0)
    return;
  switch (in.dtype) {
  case DType::F32:
    return topKTyped<float>(in, axis, largest, values, indices);
  case DType::I64:
    return topKTyped<std::int64_t>(in, axis, largest, values, indices);
  case DType::I32:
    return topKTyped<std::int32_t>(in, axis, largest, values, indices);
  default:
    unsupportedDType("top_k", in.dtype);
  }
}

void cumSum(const TensorRef &in, std::int64_t axis, bool exclusive,
            bool reverse, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  switch (in.dtype) {
  case DType::F32:
    return cumSumTyped<float>(in, axis, exclusive, reverse, out);
  case DType::I64:
    return cumSumTyped<std::int64_t>(in, axis, exclusive, reverse, out);
  case DType::I32:
    return cumSumTyped<std::int32_t>(in, axis, exclusive, reverse, out);
  default:
    unsupportedDType("cumsum", in.dtype);
  }
}

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
