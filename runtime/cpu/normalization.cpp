//===- normalization.cpp - layer_norm, rms_norm, softmax ------------------===//
//
// Part of meshc. The norms see the input as [outer, inner] rows (inner the
// product of the normalised dimensions) and process each row in three tight
// passes: the fused residual sum, the statistics in double, the affine
// output. A scale or bias that broadcasts to the normalised dimensions
// without matching them is expanded once per call.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "runtime/cpu/KernelsInternal.h"

#include <cmath>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

namespace {

/// `t`'s values broadcast to the normalised dimensions of `in` (a row of
/// `norm.inner` elements): `t`'s own data when it already has that many,
/// else a copy expanded into `storage`.
const float *normalisedOperand(const TensorRef &t, const TensorRef &in,
                               const plans::NormPlan &norm,
                               std::vector<float> &storage) {
  requireF32(t, "norm");
  const StridePlan<1> read = plans::normOperandPlan(t, in, norm);
  if (plans::isContiguous(read))
    return t.as<const float>();
  storage.resize(static_cast<std::size_t>(norm.inner));
  stridedCopy(read, t.as<const float>(), 0, storage.data());
  return storage.data();
}

/// One row of `inner` elements: the fused residual sum (into `sum`, or into
/// `y` when the sum is not an output), the statistics in double, the affine
/// output. Compiled for each x86-64 level (MESHC_CPU_CLONES).
MESHC_CPU_CLONES
void normalizeRow(const float *x, const float *r, float *sum, const float *g,
                  const float *beta, std::int64_t inner, double invInner,
                  float epsilon, bool rms, float *y) {
  if (r) {
    // x = in + residual, rounded to f32 as the unfused add would be.
    float *s = sum ? sum : y;
    for (std::int64_t i = 0; i < inner; ++i)
      s[i] = x[i] + r[i];
    x = s;
  }
  double mean = 0.0;
  if (!rms) {
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t i = 0; i < inner; ++i)
      acc += x[i];
    mean = acc * invInner;
  }
  double sq = 0.0;
#pragma omp simd reduction(+ : sq)
  for (std::int64_t i = 0; i < inner; ++i) {
    const double c = x[i] - mean;
    sq += c * c;
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(sq * invInner + epsilon));
  const float m = static_cast<float>(mean);
  if (beta) {
    for (std::int64_t i = 0; i < inner; ++i)
      y[i] = (x[i] - m) * inv * g[i] + beta[i];
  } else {
    for (std::int64_t i = 0; i < inner; ++i)
      y[i] = (x[i] - m) * inv * g[i];
  }
}

void normalize(const TensorRef &in, const TensorRef &scale,
               const TensorRef *bias, const TensorRef *residual,
               std::int64_t axis, float epsilon, const TensorRef &out,
               const TensorRef *sum, bool rms) {
  const char *name = rms ? "rms_norm" : "layer_norm";
  requireF32(in, name);
  const plans::NormPlan norm = plans::normPlan(in, axis);
  if (norm.empty())
    return;
  const std::int64_t inner = norm.inner, outer = norm.rows;
  const std::int64_t total = in.numElements();
  std::vector<float> scaleStorage, biasStorage;
  const float *g = normalisedOperand(scale, in, norm, scaleStorage);
  const float *beta =
      bias ? normalisedOperand(*bias, in, norm, biasStorage) : nullptr;
  const float *x0 = in.as<const float>();
  const float *res = residual ? residual->as<const float>() : nullptr;
  float *sumData = (residual && sum) ? sum->as<float>() : nullptr;
  float *y0 = out.as<float>();
  const double invInner = 1.0 / static_cast<double>(inner);

#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
  for (std::int64_t o = 0; o < outer; ++o)
    normalizeRow(x0 + o * inner, res ? res + o * inner : nullptr,
                 sumData ? sumData + o * inner : nullptr, g, beta, inner,
                 invInner, epsilon, rms, y0 + o * inner);
}

} // namespace

void layerNorm(const TensorRef &in, const TensorRef &scale,
               const TensorRef *bias, const TensorRef *residual,
               std::int64_t axis, float epsilon, const TensorRef &out,
               const TensorRef *sum) {
  normalize(in, scale, bias, residual, axis, epsilon, out, sum,
            /*rms=*/false);
}

void rmsNorm(const TensorRef &in, const TensorRef &scale, const TensorRef *bias,
             const TensorRef *residual, std::int64_t axis, float epsilon,
             const TensorRef &out, const TensorRef *sum) {
  normalize(in, scale, bias, residual, axis, epsilon, out, sum, /*rms=*/true);
}

void softmax(const TensorRef &in, std::int64_t axis, const TensorRef &out) {
  requireF32(in, "softmax");
  const plans::AxisSplit split = plans::splitAt(in, axis);
  const std::int64_t outer = split.outer, n = split.size, inner = split.inner;
  const std::int64_t total = outer * n * inner;
  if (total == 0)
    return;
  const float *x0 = in.as<const float>();
  float *y0 = out.as<float>();
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
    for (std::int64_t o = 0; o < outer; ++o) {
      const float *x = x0 + o * n;
      float *y = y0 + o * n;
      // A row of -inf (or with NaN) is NaN throughout, as onnxruntime's.
      if (!softmaxContiguous(x, y, n))
        std::fill(y, y + n, std::numeric_limits<float>::quiet_NaN());
    }
    return;
  }
  // A softmax over a non-trailing axis: whole rows of `inner` at a time.
#pragma omp parallel if (total > kParallelThreshold)
  {
    std::vector<float> maxes(static_cast<std::size_t>(inner));
    std::vector<double> sums(static_cast<std::size_t>(inner));
#pragma omp for schedule(static)
    for (std::int64_t o = 0; o < outer; ++o) {
      const float *x = x0 + o * n * inner;
      float *y = y0 + o * n * inner;
      std::copy(x, x + inner, maxes.begin());
      for (std::int64_t k = 1; k < n; ++k)
        for (std::int64_t i = 0; i < inner; ++i)
          maxes[i] = std::max(maxes[i], x[k * inner + i]);
      std::fill(sums.begin(), sums.end(), 0.0);
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t i = 0; i < inner; ++i) {
          const float e = fastExp(x[k * inner + i] - maxes[i]);
          y[k * inner + i] = e;
          sums[i] += e;
        }
      for (std::int64_t i = 0; i < inner; ++i)
        maxes[i] = static_cast<float>(1.0 / sums[i]); // now the inverses
      for (std::int64_t k = 0; k < n; ++k)
        for (std::int64_t i = 0; i < inner; ++i)
          y[k * inner + i] *= maxes[i];
    }
  }
}

} // namespace meshc::rt::cpu
