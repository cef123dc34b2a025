//===- fused.h - Kernels the compiler generates for fused chains -*- C++
//-*-===//
//
// Part of meshc. A dfg.fused_elementwise op becomes, in generated code, one
// call of k::fusedElementwise with a lambda that computes the chain for one
// element: it gets the inputs' values as floats, already broadcast, and sets
// the outputs' values:
//
//   const rt::TensorRef ins[] = {gate, up}, outs[] = {y};
//   k::fusedElementwise(ins, 2, outs, 1,
//       [] MESHC_FUSED_FN(const float *x, float *y) {
//         const float t0 = rt::fused::silu(x[0]);
//         y[0] = t0 * x[1];
//       });
//
// Under nvcc (the cuda target) the lambda is a __device__ lambda
// (--extended-lambda) run by a grid-stride CUDA kernel on the rank's stream;
// under the host compiler (the cpu target) an OpenMP loop runs it. Values
// are loaded and stored in their element types (f32, f16, bf16) and computed
// in f32. The math matches the kernels' unfused functions.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_FUSED_H
#define MESHC_RUNTIME_FUSED_H

#include "meshc/runtime/error.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/tensor.h"

#include <cmath>
#include <cstdint>
#include <string>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define MESHC_FUSED_FN __device__
#define MESHC_HD __host__ __device__
#else
#define MESHC_FUSED_FN
#define MESHC_HD
#endif

namespace meshc::rt::fused {

// The functions the unfused kernels compute (runtime/cpu/elementwise.cpp,
// runtime/cuda/elementwise.cu), in f32.
MESHC_HD inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
MESHC_HD inline float silu(float x) { return x / (1.0f + expf(-x)); }
MESHC_HD inline float gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
/// 0.5 x (1 + tanh(u)) written as x sigmoid(2u).
MESHC_HD inline float geluTanh(float x) {
  constexpr float kTwoC = 1.59576912160573072f; // 2 sqrt(2 / pi)
  const float u2 = kTwoC * (x + 0.044715f * x * x * x);
  return x / (1.0f + expf(-u2));
}
MESHC_HD inline float minimum(float x, float y) { return y < x ? y : x; }
MESHC_HD inline float maximum(float x, float y) { return x < y ? y : x; }
/// A cast to f16 or bf16 inside a chain rounds as the unfused cast does.
MESHC_HD inline float roundToHalf(float x) {
#ifdef __CUDA_ARCH__
  return __half2float(__float2half_rn(x));
#else
  return halfToFloat(floatToHalf(x));
#endif
}
MESHC_HD inline float roundToBfloat16(float x) {
#ifdef __CUDA_ARCH__
  return __bfloat162float(__float2bfloat16_rn(x));
#else
  return bfloat16ToFloat(floatToBfloat16(x));
#endif
}

inline constexpr int kMaxInputs = 8, kMaxOutputs = 4;

/// One tensor of the call: element strides over the output's dimensions
/// (0 where it is broadcast), or `dense` when it has the output's shape.
struct Operand {
  void *data;
  DType dtype;
  bool dense;
  std::int64_t strides[kMaxRank];
};

struct Args {
  int rank;
  std::int64_t shape[kMaxRank];
  std::int64_t count;
  int numInputs, numOutputs;
  Operand in[kMaxInputs];
  Operand out[kMaxOutputs];
};

/// The call's plan: the outputs' shape and each input's strides under
/// numpy broadcasting. Mismatched shapes or types are fatal (the compiler
/// verified them; this guards the runtime API).
inline Args plan(const TensorRef *ins, int numInputs, const TensorRef *outs,
                 int numOutputs) {
  if (numInputs < 0 || numInputs > kMaxInputs || numOutputs < 1 ||
      numOutputs > kMaxOutputs)
    fatal("fusedElementwise: " + std::to_string(numInputs) + " inputs and " +
          std::to_string(numOutputs) + " outputs (at most 8 and 4)");
  Args a{};
  const TensorRef &shape = outs[0];
  a.rank = shape.rank;
  a.count = shape.numElements();
  for (int d = 0; d < shape.rank; ++d)
    a.shape[d] = shape.shape[d];
  auto floating = [](DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
  };
  auto describe = [&](const TensorRef &t, Operand &o, const char *role) {
    if (!floating(t.dtype))
      fatal(std::string("fusedElementwise: ") + role + " of type " +
            dtypeName(t.dtype) + " (f32, f16 or bf16 only)");
    o.data = t.data;
    o.dtype = t.dtype;
    o.dense = t.rank == shape.rank;
    if (t.rank > shape.rank)
      fatal(std::string("fusedElementwise: ") + role + " of rank " +
            std::to_string(t.rank) + " does not broadcast to rank " +
            std::to_string(shape.rank));
    // Aligned at the last dimension; size-1 (and missing) dimensions
    // broadcast.
    std::int64_t stride = 1;
    for (int d = shape.rank - 1; d >= 0; --d) {
      int td = d - (shape.rank - t.rank);
      std::int64_t size = td >= 0 ? t.shape[td] : 1;
      if (size != shape.shape[d] && size != 1)
        fatal(std::string("fusedElementwise: ") + role +
              " does not broadcast to the output's shape");
      if (size != shape.shape[d])
        o.dense = false;
      o.strides[d] = size == 1 ? 0 : stride;
      stride *= size;
    }
  };
  a.numInputs = numInputs;
  a.numOutputs = numOutputs;
  for (int k = 0; k < numInputs; ++k)
    describe(ins[k], a.in[k], "an input");
  for (int k = 0; k < numOutputs; ++k) {
    describe(outs[k], a.out[k], "an output");
    if (!a.out[k].dense)
      fatal("fusedElementwise: outputs differ in shape");
  }
  return a;
}

/// Where element `i` of the output reads `o`.
MESHC_HD inline std::int64_t offset(const Args &a, const Operand &o,
                                    std::int64_t i) {
  if (o.dense)
    return i;
  std::int64_t at = 0;
  for (int d = a.rank - 1; d >= 0; --d) {
    const std::int64_t size = a.shape[d];
    at += (i % size) * o.strides[d];
    i /= size;
  }
  return at;
}

MESHC_HD inline float load(const Operand &o, std::int64_t i) {
  switch (o.dtype) {
  case DType::F16:
#ifdef __CUDA_ARCH__
    return __half2float(static_cast<const __half *>(o.data)[i]);
#else
    return halfToFloat(static_cast<const std::uint16_t *>(o.data)[i]);
#endif
  case DType::BF16:
#ifdef __CUDA_ARCH__
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(o.data)[i]);
#else
    return bfloat16ToFloat(static_cast<const std::uint16_t *>(o.data)[i]);
#endif
  default:
    return static_cast<const float *>(o.data)[i];
  }
}

MESHC_HD inline void store(const Operand &o, std::int64_t i, float v) {
  switch (o.dtype) {
  case DType::F16:
#ifdef __CUDA_ARCH__
    static_cast<__half *>(o.data)[i] = __float2half_rn(v);
#else
    static_cast<std::uint16_t *>(o.data)[i] = floatToHalf(v);
#endif
    return;
  case DType::BF16:
#ifdef __CUDA_ARCH__
    static_cast<__nv_bfloat16 *>(o.data)[i] = __float2bfloat16_rn(v);
#else
    static_cast<std::uint16_t *>(o.data)[i] = floatToBfloat16(v);
#endif
    return;
  default:
    static_cast<float *>(o.data)[i] = v;
  }
}

/// Output element `i`: load the inputs, run the chain, store the results.
template <class F>
MESHC_HD inline void element(const Args &a, std::int64_t i, const F &f) {
  float x[kMaxInputs], y[kMaxOutputs];
  for (int k = 0; k < a.numInputs; ++k)
    x[k] = load(a.in[k], offset(a, a.in[k], i));
  f(x, y);
  for (int k = 0; k < a.numOutputs; ++k)
    store(a.out[k], i, y[k]);
}

} // namespace meshc::rt::fused

#ifdef __CUDACC__
namespace meshc::rt::cuda {

// From the runtime's CUDA half (runtime/cuda/CudaDevice.h).
cudaStream_t stream();
void checkLaunch(const char *kernel);

template <class F> __global__ void fusedElementwiseKernel(fused::Args a, F f) {
  for (std::int64_t i =
           static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < a.count; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    fused::element(a, i, f);
}

template <class F>
void fusedElementwise(const TensorRef *ins, int numInputs,
                      const TensorRef *outs, int numOutputs, F f) {
  const fused::Args a = fused::plan(ins, numInputs, outs, numOutputs);
  if (a.count == 0)
    return;
  constexpr int kThreads = 256;
  const std::int64_t blocks = (a.count + kThreads - 1) / kThreads;
  fusedElementwiseKernel<<<static_cast<unsigned>(blocks < 65536 ? blocks
                                                                : 65536),
                           kThreads, 0, stream()>>>(a, f);
  checkLaunch("a fused elementwise kernel");
}

} // namespace meshc::rt::cuda
#else
namespace meshc::rt::cpu {

template <class F>
void fusedElementwise(const TensorRef *ins, int numInputs,
                      const TensorRef *outs, int numOutputs, F f) {
  const fused::Args a = fused::plan(ins, numInputs, outs, numOutputs);
#pragma omp parallel for schedule(static) if (a.count > 32768)
  for (std::int64_t i = 0; i < a.count; ++i)
    fused::element(a, i, f);
}

} // namespace meshc::rt::cpu
#endif

#endif // MESHC_RUNTIME_FUSED_H
