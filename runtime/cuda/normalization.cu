//===- normalization.cu - layer_norm, rms_norm, rotary --------------------===//
//
// Part of meshc. The norms see the input as [rows, inner] (inner the product
// of the normalised dimensions) and give each row a warp, or a block when
// rows are long. Three passes over the row, which stays in L1/L2: the fused
// residual sum and the mean, the squared deviations, the affine output.
// Statistics accumulate in double, as on the CPU, so the two targets agree
// to f32 rounding whatever the row length; the output is computed in f32
// and rounded once to the element type.
//
// rotary gives each output element a thread that reads its pair partner
// and its cos/sin entries.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

namespace meshc::rt::cuda {
using namespace detail;

namespace {

//===----------------------------------------------------------------------===//
// LayerNorm / RmsNorm
//===----------------------------------------------------------------------===//

/// Everything one norm call passes to its kernel. `scale` and `bias` are
/// read through plans over the normalised dimensions (one contiguous
/// dimension when they match them, stride 0 where they broadcast).
template <typename T> struct NormArgs {
  const T *x = nullptr, *residual = nullptr;
  const T *scale = nullptr, *bias = nullptr;
  T *out = nullptr, *sum = nullptr;
  Plan<1> scalePlan, biasPlan;
  std::int64_t rows = 0, inner = 0;
  float epsilon = 0.0f;
  bool rms = false;
};

template <typename T> __global__ void normKernel(NormArgs<T> a) {
  __shared__ double scratch[32];
  const std::int64_t inner = a.inner;
  for (std::int64_t row = blockIdx.x * std::int64_t(blockDim.y) + threadIdx.y;
       row < a.rows; row += std::int64_t(gridDim.x) * blockDim.y) {
    const T *x = a.x + row * inner;
    const T *res = a.residual ? a.residual + row * inner : nullptr;
    T *sum = a.sum ? a.sum + row * inner : nullptr;
    T *y = a.out + row * inner;
    // x = in + residual rounded to the element type, as the unfused add
    // would be; recomputed in each pass instead of re-read from `sum`.
    auto load = [&](std::int64_t i) {
      if (!res)
        return toFloat(x[i]);
      return toFloat(fromFloat<T>(toFloat(x[i]) + toFloat(res[i])));
    };
    double mean = 0.0;
    if (!a.rms || sum) {
      double acc = 0.0;
      for (std::int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
        const float v = load(i);
        if (sum)
          sum[i] = fromFloat<T>(v);
        acc += v;
      }
      if (!a.rms) // the same for every thread of the row
        mean = rowReduce(acc, SumOp{}, scratch) / static_cast<double>(inner);
    }
    double sq = 0.0;
    for (std::int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      const double c = static_cast<double>(load(i)) - mean;
      sq += c * c;
    }
    sq = rowReduce(sq, SumOp{}, scratch);
    const float inv =
        static_cast<float>(1.0 / sqrt(sq * (1.0 / static_cast<double>(inner)) +
                                      static_cast<double>(a.epsilon)));
    const float m = static_cast<float>(mean);
    for (std::int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      std::int64_t g[1];
      planOffsets(a.scalePlan, i, g);
      float v = (load(i) - m) * inv * toFloat(a.scale[g[0]]);
      if (a.bias) {
        std::int64_t b[1];
        planOffsets(a.biasPlan, i, b);
        v += toFloat(a.bias[b[0]]);
      }
      y[i] = fromFloat<T>(v);
    }
  }
}

void normalize(const TensorRef &in, const TensorRef &scale,
               const TensorRef *bias, const TensorRef *residual,
               std::int64_t axis, float epsilon, const TensorRef &out,
               const TensorRef *sum, bool rms) {
  const char *name = rms ? "rms_norm" : "layer_norm";
  requireDType(scale, in.dtype, name);
  if (bias)
    requireDType(*bias, in.dtype, name);
  if (residual)
    requireDType(*residual, in.dtype, name);
  const plans::NormPlan norm = plans::normPlan(in, axis);
  if (norm.empty())
    return;
  dispatchFloat(in.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    NormArgs<T> a;
    a.x = in.as<const T>();
    a.residual = residual ? residual->as<const T>() : nullptr;
    a.sum = (residual && sum) ? sum->as<T>() : nullptr;
    a.scale = scale.as<const T>();
    a.bias = bias ? bias->as<const T>() : nullptr;
    a.out = out.as<T>();
    // Scale and bias are read directly when they have a row's elements
    // (as the CPU kernel does), else broadcast to the normalised dimensions.
    a.scalePlan = plans::normOperandPlan(scale, in, norm);
    if (bias)
      a.biasPlan = plans::normOperandPlan(*bias, in, norm);
    a.rows = norm.rows;
    a.inner = norm.inner;
    a.epsilon = epsilon;
    a.rms = rms;
    const RowLaunch l = rowLaunch(a.rows, a.inner);
    normKernel<T><<<l.grid, l.block, 0, stream()>>>(a);
  });
  checkLaunch(name);
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

//===----------------------------------------------------------------------===//
// Rotary
//===----------------------------------------------------------------------===//

namespace {

template <typename T> struct RotaryArgs {
  const T *x = nullptr, *cos = nullptr, *sin = nullptr;
  T *y = nullptr;
  const void *positions = nullptr;
  bool positions32 = false, interleaved = false, sharedTable = false;
  std::int64_t heads = 0, seq = 0, dim = 0, half = 0, rotaryDim = 0;
  std::int64_t cacheRows = 0, n = 0;
  std::int64_t *slot = nullptr;
};

/// Element d of row r = (b, h, s) of [B, H, S, D]: features past rotaryDim
/// are copied; the others are one half of a rotated pair (x0, x1), the
/// pair (d, d + half) or (2i, 2i + 1), by the angle of table row `p`
/// (positions[b, s], or (b or 0) * S + s). A position outside the cos/sin
/// cache is recorded as a gather index error (rotary gathers table rows by
/// position; the device error slot has no kind of its own for it) and the
/// row passes through.
template <typename T> __global__ void rotaryKernel(RotaryArgs<T> a) {
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       e < a.n; e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t r, d;
    divmod(e, a.dim, r, d);
    if (d >= a.rotaryDim) {
      a.y[e] = a.x[e];
      continue;
    }
    std::int64_t bh, s, b, h;
    divmod(r, a.seq, bh, s);
    divmod(bh, a.heads, b, h);
    std::int64_t p;
    if (a.positions) {
      p = readIndex(a.positions, a.positions32, b * a.seq + s);
      if (p < 0 || p >= a.cacheRows) {
        if (d == 0)
          recordError(a.slot, DeviceError::RotaryPosition, p, a.cacheRows);
        a.y[e] = a.x[e];
        continue;
      }
    } else {
      p = (a.sharedTable ? 0 : b) * a.seq + s;
    }
    const T *xr = a.x + r * a.dim;
    float result;
    if (a.interleaved) {
      const std::int64_t i = d >> 1;
      const float x0 = toFloat(xr[2 * i]), x1 = toFloat(xr[2 * i + 1]);
      const float c = toFloat(a.cos[p * a.half + i]);
      const float sn = toFloat(a.sin[p * a.half + i]);
      result = (d & 1) ? x1 * c + x0 * sn : x0 * c - x1 * sn;
    } else {
      const bool first = d < a.half;
      const std::int64_t i = first ? d : d - a.half;
      const float x0 = toFloat(xr[i]), x1 = toFloat(xr[i + a.half]);
      const float c = toFloat(a.cos[p * a.half + i]);
      const float sn = toFloat(a.sin[p * a.half + i]);
      result = first ? x0 * c - x1 * sn : x1 * c + x0 * sn;
    }
    a.y[e] = fromFloat<T>(result);
  }
}

} // namespace

void rotary(const TensorRef &in, const TensorRef &cos, const TensorRef &sin,
            const TensorRef *positions, bool interleaved,
            std::int64_t rotaryDim, const TensorRef &out) {
  requireDType(cos, in.dtype, "rotary");
  requireDType(sin, in.dtype, "rotary");
  if (positions)
    requireIndices(*positions, "rotary");
  const std::int64_t n = in.numElements();
  if (n == 0)
    return;
  const plans::RotaryPlan p =
      plans::rotaryPlan(in, cos, positions != nullptr, rotaryDim);
  dispatchFloat(in.dtype, "rotary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RotaryArgs<T> a;
    a.x = in.as<const T>();
    a.y = out.as<T>();
    a.cos = cos.as<const T>();
    a.sin = sin.as<const T>();
    a.positions = positions ? positions->data : nullptr;
    a.positions32 = positions && positions->dtype == DType::I32;
    a.interleaved = interleaved;
    a.sharedTable = p.sharedTable;
    a.heads = p.heads;
    a.seq = p.seq;
    a.dim = p.dim;
    a.half = p.half;
    a.rotaryDim = p.rotaryDim;
    a.cacheRows = p.cacheRows;
    a.n = n;
    a.slot = errorSlot();
    rotaryKernel<T><<<gridFor(n), kThreads, 0, stream()>>>(a);
  });
  checkLaunch("rotary");
}

} // namespace meshc::rt::cuda
