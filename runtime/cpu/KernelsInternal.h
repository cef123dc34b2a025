//===- KernelsInternal.h - Helpers shared by the CPU kernels ----*- C++ -*-===//
//
// Part of meshc. Private to runtime/cpu: the walks over the broadcast/stride
// plans (runtime/ShapePlan.h) the elementwise and data-movement kernels
// share, the OpenMP threshold and the dtype checks. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_CPU_KERNELSINTERNAL_H
#define MESHC_RUNTIME_CPU_KERNELSINTERNAL_H

#include "meshc/runtime/kernels.h"
#include "meshc/runtime/tensor.h"
#include "runtime/ShapePlan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>

/// The runtime library is built for the baseline x86-64 (SSE2), so that
/// rank executables run wherever their -march allows. The loops the
/// kernels spend their elementwise time in are compiled again for
/// x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512), and the loader picks the
/// widest the CPU has (GCC's target_clones: an ifunc resolved once). Other
/// compilers build the baseline alone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MESHC_CPU_CLONES                                                       \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define MESHC_CPU_CLONES
#endif

/// For the helpers of a MESHC_CPU_CLONES function: a helper the compiler
/// left out of line would be compiled once, for the baseline, and every
/// clone would call that copy.
#if defined(__GNUC__)
#define MESHC_INLINE inline __attribute__((always_inline))
#else
#define MESHC_INLINE inline
#endif

namespace meshc::rt::cpu::detail {

/// Below this many elements a kernel runs on the calling thread: waking the
/// OpenMP team costs more than the work (a few microseconds).
inline constexpr std::int64_t kParallelThreshold = 32768;

/// Elements one task of a chunked parallel loop handles; large enough to
/// amortise the per-chunk index set-up, small enough to balance 16 cores.
inline constexpr std::int64_t kChunk = 16384;

/// Stops with a clear message unless `t` is f32: the CPU kernels compute in
/// f32 only (f16/bf16 programs are for the GPU target).
void requireF32(const TensorRef &t, const char *kernel);

using meshc::rt::dtypeName;

/// Stops with "<kernel>: element type <t> is not supported on the CPU".
[[noreturn]] void unsupportedDType(const char *kernel, DType t);

/// Up to three operands read through per-dimension element strides while
/// the output is written densely (runtime/ShapePlan.h plans them for both
/// targets): a same-shape or suffix-broadcast operation is one or two
/// dimensions and the innermost one is a tight loop.
using plans::StridePlan;
using Plan = StridePlan<3>;

/// A plan that reads `numInputs` tensors broadcast (numpy rules, aligned at
/// the last dimension) to `out`'s shape.
inline Plan broadcastPlan(const TensorRef &out, const TensorRef *const *inputs,
                          int numInputs) {
  return plans::broadcastPlan<3>(out, inputs, numInputs);
}

/// Calls fn(outIndex, offsets, length) for every run of consecutive output
/// elements in [begin, end) that share an innermost row: operand k's element
/// i of the run is at offsets[k] + i * plan.innerStride(k).
template <int K, typename Fn>
void forEachRun(const StridePlan<K> &plan, std::int64_t begin, std::int64_t end,
                Fn &&fn) {
  if (begin >= end)
    return;
  const int rank = plan.rank, last = rank - 1;
  std::int64_t index[kMaxRank];
  std::int64_t offsets[K] = {};
  std::int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % plan.shape[d];
    rest /= plan.shape[d];
  }
  for (int k = 0; k < plan.numOperands; ++k)
    for (int d = 0; d < rank; ++d)
      offsets[k] += index[d] * plan.strides[k][d];
  const std::int64_t inner = plan.shape[last];
  std::int64_t pos = begin;
  while (pos < end) {
    std::int64_t len = std::min(inner - index[last], end - pos);
    fn(pos, static_cast<const std::int64_t *>(offsets), len);
    pos += len;
    if (pos >= end)
      break;
    // Move to the start of the next row (odometer over the outer dims).
    for (int k = 0; k < plan.numOperands; ++k)
      offsets[k] -= index[last] * plan.strides[k][last];
    index[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      ++index[d];
      for (int k = 0; k < plan.numOperands; ++k)
        offsets[k] += plan.strides[k][d];
      if (index[d] < plan.shape[d])
        break;
      for (int k = 0; k < plan.numOperands; ++k)
        offsets[k] -= plan.shape[d] * plan.strides[k][d];
      index[d] = 0;
    }
  }
}

/// forEachRun over the whole plan, in parallel chunks when it is large.
template <int K, typename Fn>
void parallelRuns(const StridePlan<K> &plan, Fn &&fn) {
  const std::int64_t total = plan.numElements();
  const std::int64_t chunks = (total + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
  for (std::int64_t c = 0; c < chunks; ++c)
    forEachRun(plan, c * kChunk, std::min(total, (c + 1) * kChunk), fn);
}

/// Copies `plan`'s elements of width sizeof(T) from `in` (read through
/// operand 0's strides, starting at `inBase`) densely into `out`.
template <typename T, int K>
void stridedCopy(const StridePlan<K> &plan, const T *in, std::int64_t inBase,
                 T *out) {
  const std::int64_t s = plan.innerStride(0);
  parallelRuns(
      plan, [&](std::int64_t pos, const std::int64_t *off, std::int64_t len) {
        const T *src = in + inBase + off[0];
        T *dst = out + pos;
        if (s == 1)
          std::memcpy(dst, src, static_cast<std::size_t>(len) * sizeof(T));
        else if (s == 0)
          std::fill(dst, dst + len, *src);
        else
          for (std::int64_t i = 0; i < len; ++i)
            dst[i] = src[i * s];
      });
}

/// Calls fn(T{}) with T the unsigned integer type of `width` bytes, so that
/// data-movement kernels handle every dtype by its byte width.
template <typename Fn> void dispatchWidth(std::size_t width, Fn &&fn) {
  switch (width) {
  case 1:
    fn(std::uint8_t{});
    return;
  case 2:
    fn(std::uint16_t{});
    return;
  case 4:
    fn(std::uint32_t{});
    return;
  default:
    fn(std::uint64_t{});
    return;
  }
}

/// exp(x) in f32 within 1e-7 relative error, written so that GCC vectorises
/// the loops that call it (glibc's expf is a scalar call; the runtime/cpu
/// sources are built with -fno-trapping-math so that the selects below
/// if-convert): x = n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor
/// polynomial (truncation below 1e-8), 2^(n-1) built in the exponent bits.
/// Below -86.6 (e^x < 3e-38) the result is exactly 0, so -inf scores vanish;
/// above ln(FLT_MAX) it is +inf; NaN stays NaN.
inline float fastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f; // 1.5 * 2^23: rounds to an integer
  constexpr float kLow = -86.6f, kHigh = 88.7228317f;
  float xc = x < kHigh ? x : kHigh; // NaN becomes kHigh here, restored below
  xc = xc > kLow ? xc : kLow;
  const float t = xc * kLog2e + kRound;
  const float n = t - kRound;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  std::int32_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  // 2^(n-1) stays a normal float for n in [-125, 128]; the factor 2 goes
  // into p first.
  const std::int32_t scaleBits = (bits - 0x4B400000 + 126) * (1 << 23);
  float scale;
  std::memcpy(&scale, &scaleBits, sizeof scale);
  float y = (p * 2.0f) * scale;
  y = x > kLow ? y : 0.0f;
  y = x > kHigh ? std::numeric_limits<float>::infinity() : y;
  return x == x ? y : x;
}

/// y = softmax(x) over a contiguous row of n floats (max-subtracted; x and y
/// may be the same row). Returns false, leaving y unwritten, when the row's
/// maximum is -inf or NaN: no finite score to normalise by. A `sink` is one
/// more score in the denominator that y does not hold (an attention sink).
inline bool
softmaxContiguous(const float *x, float *y, std::int64_t n,
                  float sink = -std::numeric_limits<float>::infinity()) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (std::int64_t i = 0; i < n; ++i)
    m = std::max(m, x[i]);
  if (m == kNegInf || std::isnan(m))
    return false;
  m = std::max(m, sink);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = fastExp(x[i] - m);
  double denom = sink == kNegInf ? 0.0 : std::exp(double(sink) - m);
#pragma omp simd reduction(+ : denom)
  for (std::int64_t i = 0; i < n; ++i)
    denom += y[i];
  const float inv = static_cast<float>(1.0 / denom);
  for (std::int64_t i = 0; i < n; ++i)
    y[i] *= inv;
  return true;
}

/// Reads element `i` of an integer index tensor (i64 or i32).
inline std::int64_t readIndex(const TensorRef &t, std::int64_t i) {
  return t.dtype == DType::I32 ? t.as<const std::int32_t>()[i]
                               : t.as<const std::int64_t>()[i];
}

/// Stops unless `t` holds i64 or i32 indices.
void requireIndices(const TensorRef &t, const char *kernel);

/// Copies `bytes` bytes, in parallel chunks when large.
void parallelMemcpy(void *dst, const void *src, std::size_t bytes);

/// Row-major C = alpha * A * op(B) + beta * C (op(B) = B^T with `transB`),
/// A [m, k], op(B) [k, n]. OpenBLAS runs single-threaded and large products
/// are split over the OpenMP team by rows or columns of C: one threading
/// runtime for the whole program, so OpenBLAS's spinning pthreads never
/// compete with OpenMP's for the cores. Inside a parallel region it is one
/// single-threaded sgemm on the calling thread.
///
/// With `finish` (then ldc == n), finish(begin, end) is called once for each
/// of disjoint ranges that cover C's m * n elements, as soon as they are
/// final: inside the pass that sums a few-row product's partial sums, else
/// in one parallel pass after the product. It may run on any thread of the
/// team, several at once.
using Finish = std::function<void(std::int64_t begin, std::int64_t end)>;
void sgemm(bool transB, std::int64_t m, std::int64_t n, std::int64_t k,
           float alpha, const float *a, std::int64_t lda, const float *b,
           std::int64_t ldb, float beta, float *c, std::int64_t ldc,
           const Finish *finish = nullptr);

/// How many transposed program weights linear has repacked for oneDNN's
/// matmul primitive (LinearOptions::constantWeight), for tests.
std::size_t packedWeightCount();

/// finish over [0, count) in chunks, in parallel when large.
void finishAll(const Finish &finish, std::int64_t count);

/// y[i] = op(x[i]) for i < n (x == y allowed), compiled for each x86-64
/// level: the f32 unary ops' loops (runtime/cpu/elementwise.cpp), null for
/// an op that has none.
using FloatRun = void (*)(const float *, float *, std::int64_t);
FloatRun floatRun(UnaryOp op);

/// Products of at most this many multiply-adds are not worth splitting.
inline constexpr double kSerialGemmMacs = 1 << 20;

} // namespace meshc::rt::cpu::detail

#endif // MESHC_RUNTIME_CPU_KERNELSINTERNAL_H
