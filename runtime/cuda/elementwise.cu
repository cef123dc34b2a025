//===- elementwise.cu - Broadcast binary, unary, where, cast, copy --------===//
//
// Part of meshc. The elementwise kernels of the cuda target: one thread per
// output element in a grid-stride loop, operands read through a
// detail::Plan (a same-shape operation is one dimension, so its offsets cost
// no division). The op is a kernel argument switched on per element rather
// than a template parameter: every thread takes the same branch, the
// kernels are memory-bound anyway, and one kernel per element type keeps
// the build to a few dozen instantiations instead of hundreds. f16 and bf16
// compute in f32 and round once per result, as the CPU kernels' f32 results
// would be rounded. iota and fillIntegers, which write small integer tensors
// that generated code used to fill on the host, live here too.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"
#include "meshc/runtime/scalar.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

#include <cmath>
#include <string>
#include <type_traits>

namespace meshc::rt::cuda {
using namespace detail;

namespace {

/// Calls fn(TypeTag<T>) for any dtype (bool as its byte).
template <typename Fn> void dispatchAny(DType t, Fn &&fn) {
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
  case DType::Bool:
    return fn(TypeTag<std::uint8_t>{});
  }
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// Arithmetic on f32 values (f16 and bf16 arrive widened).
__device__ __forceinline__ float arithmeticF32(BinaryOp op, float x, float y) {
  switch (op) {
  case BinaryOp::Add:
    return x + y;
  case BinaryOp::Sub:
    return x - y;
  case BinaryOp::Mul:
    return x * y;
  case BinaryOp::Div:
    return x / y;
  case BinaryOp::Pow:
    return powf(x, y);
  case BinaryOp::Min:
    return y < x ? y : x;
  case BinaryOp::Max:
    return x < y ? y : x;
  default:
    return 0.0f;
  }
}

/// Arithmetic on i64 or i32, wrapping on overflow. Div truncates toward zero
/// (ONNX); a zero divisor gives 0 here and is recorded as an error by the
/// kernel (reported at the next synchronisation, as the CPU stops). Pow is
/// exact, as the CPU's (scalar::intPow). The bitwise ops are integers' only.
template <typename I>
__device__ __forceinline__ I arithmeticInt(BinaryOp op, I x, I y) {
  using U = std::make_unsigned_t<I>;
  switch (op) {
  case BinaryOp::Add:
    return static_cast<I>(static_cast<U>(x) + static_cast<U>(y));
  case BinaryOp::Sub:
    return static_cast<I>(static_cast<U>(x) - static_cast<U>(y));
  case BinaryOp::Mul:
    return static_cast<I>(static_cast<U>(x) * static_cast<U>(y));
  case BinaryOp::Div:
    if (y == 0)
      return 0;
    if (y == -1) // INT_MIN / -1 would trap
      return static_cast<I>(U(0) - static_cast<U>(x));
    return x / y;
  case BinaryOp::Pow:
    return scalar::intPow<I>(x, y);
  case BinaryOp::Min:
    return y < x ? y : x;
  case BinaryOp::Max:
    return x < y ? y : x;
#define MESHC_BITWISE(Name, name, expr)                                        \
  case BinaryOp::Name:                                                         \
    return expr;
#define MESHC_BINARY(Name, name)
#include "meshc/runtime/elementwise_ops.def"
  default:
    return 0;
  }
}

template <typename T>
__global__ void arithmeticKernel(BinaryOp op, Plan<2> plan, const T *a,
                                 const T *b, T *out, std::int64_t n,
                                 std::int64_t *slot) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[2];
    planOffsets(plan, i, off);
    if constexpr (kIsFloat<T>)
      out[i] = fromFloat<T>(
          arithmeticF32(op, toFloat(a[off[0]]), toFloat(b[off[1]])));
    else {
      if (op == BinaryOp::Div && b[off[1]] == 0)
        recordError(slot, DeviceError::DivisionByZero, a[off[0]], 0);
      out[i] = arithmeticInt(op, a[off[0]], b[off[1]]);
    }
  }
}

template <typename V>
__device__ __forceinline__ bool compare(BinaryOp op, V x, V y) {
  switch (op) {
#define MESHC_COMPARISON(Name, name, expr)                                     \
  case BinaryOp::Name:                                                         \
    return expr;
#include "meshc/runtime/elementwise_ops.def"
  default:
    return false;
  }
}

template <typename T>
__global__ void compareKernel(BinaryOp op, Plan<2> plan, const T *a, const T *b,
                              std::uint8_t *out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[2];
    planOffsets(plan, i, off);
    bool r;
    if constexpr (kIsFloat<T>)
      r = compare(op, toFloat(a[off[0]]), toFloat(b[off[1]]));
    else
      r = compare(op, a[off[0]], b[off[1]]);
    out[i] = r ? 1 : 0;
  }
}

__device__ __forceinline__ bool logical(BinaryOp op, bool x, bool y) {
  switch (op) {
#define MESHC_LOGICAL(Name, name, expr)                                        \
  case BinaryOp::Name:                                                         \
    return expr;
#include "meshc/runtime/elementwise_ops.def"
  default:
    return false;
  }
}

__global__ void logicKernel(BinaryOp op, Plan<2> plan, const std::uint8_t *a,
                            const std::uint8_t *b, std::uint8_t *out,
                            std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[2];
    planOffsets(plan, i, off);
    out[i] = logical(op, a[off[0]] != 0, b[off[1]] != 0) ? 1 : 0;
  }
}

/// The family of a BinaryOp (elementwise_ops.def).
enum class BinaryFamily { Arithmetic, Comparison, Logical };
BinaryFamily familyOf(BinaryOp op) {
  switch (op) {
#define MESHC_ARITHMETIC(Name, name)                                           \
  case BinaryOp::Name:                                                         \
    return BinaryFamily::Arithmetic;
#define MESHC_COMPARISON(Name, name, expr)                                     \
  case BinaryOp::Name:                                                         \
    return BinaryFamily::Comparison;
#define MESHC_LOGICAL(Name, name, expr)                                        \
  case BinaryOp::Name:                                                         \
    return BinaryFamily::Logical;
#include "meshc/runtime/elementwise_ops.def"
  }
  return BinaryFamily::Arithmetic;
}

const char *binaryName(BinaryOp op) {
  switch (op) {
#define MESHC_BINARY(Name, name)                                               \
  case BinaryOp::Name:                                                         \
    return name;
#include "meshc/runtime/elementwise_ops.def"
  }
  return "binary";
}

} // namespace

void binary(BinaryOp op, const TensorRef &lhs, const TensorRef &rhs,
            const TensorRef &out) {
  const std::int64_t n = out.numElements();
  if (n == 0)
    return;
  const TensorRef *inputs[] = {&lhs, &rhs};
  const Plan<2> plan = broadcastPlan<2>(out, inputs);
  const unsigned grid = gridFor(n);
  const BinaryFamily family = familyOf(op);
  if (family == BinaryFamily::Logical) {
    const char *name = binaryName(op);
    if (lhs.dtype != DType::Bool || rhs.dtype != DType::Bool)
      unsupportedDType(name, lhs.dtype != DType::Bool ? lhs.dtype : rhs.dtype);
    logicKernel<<<grid, kThreads, 0, stream()>>>(
        op, plan, lhs.as<const std::uint8_t>(), rhs.as<const std::uint8_t>(),
        out.as<std::uint8_t>(), n);
    return checkLaunch(name);
  }
  requireDType(rhs, lhs.dtype, "binary");
  if (family == BinaryFamily::Comparison) {
    dispatchNumeric(lhs.dtype, "compare", [&](auto tag) {
      using T = typename decltype(tag)::type;
      compareKernel<T><<<grid, kThreads, 0, stream()>>>(
          op, plan, lhs.as<const T>(), rhs.as<const T>(),
          out.as<std::uint8_t>(), n);
    });
    return checkLaunch("compare");
  }
  dispatchNumeric(lhs.dtype, "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    arithmeticKernel<T><<<grid, kThreads, 0, stream()>>>(
        op, plan, lhs.as<const T>(), rhs.as<const T>(), out.as<T>(), n,
        errorSlot());
  });
  checkLaunch("binary");
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

namespace {

/// The float unary ops, in f32 with CUDA's accurate (not __fast) functions.
__device__ __forceinline__ float unaryF32(UnaryOp op, float x) {
  switch (op) {
  case UnaryOp::Sqrt:
    return sqrtf(x);
  case UnaryOp::Reciprocal:
    return 1.0f / x;
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Silu:
    return x / (1.0f + expf(-x));
  case UnaryOp::Erf:
    return erff(x);
  case UnaryOp::Tanh:
    return tanhf(x);
  case UnaryOp::Sigmoid:
    return 1.0f / (1.0f + expf(-x));
  case UnaryOp::Exp:
    return expf(x);
  case UnaryOp::Cos:
    return cosf(x);
  case UnaryOp::Sin:
    return sinf(x);
  case UnaryOp::Tan:
    return tanf(x);
  case UnaryOp::Asin:
    return asinf(x);
  case UnaryOp::Acos:
    return acosf(x);
  case UnaryOp::Atan:
    return atanf(x);
  case UnaryOp::Sinh:
    return sinhf(x);
  case UnaryOp::Cosh:
    return coshf(x);
  case UnaryOp::Asinh:
    return asinhf(x);
  case UnaryOp::Acosh:
    return acoshf(x);
  case UnaryOp::Atanh:
    return atanhf(x);
  case UnaryOp::Log:
    return logf(x);
  case UnaryOp::Floor:
    return floorf(x);
  case UnaryOp::Ceil:
    return ceilf(x);
  case UnaryOp::Round:
    return rintf(x); // halves to even
  case UnaryOp::Gelu:
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  case UnaryOp::GeluTanh: {
    // 0.5 (1 + tanh(u)) = sigmoid(2u), as the CPU kernel writes it: no
    // cancellation where tanh(u) is close to -1.
    constexpr float kTwoC = 1.59576912160573072f; // 2 sqrt(2 / pi)
    const float u2 = kTwoC * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-u2));
  }
#define MESHC_UNARY_PREDICATE(Name, name, expr) case UnaryOp::Name:
#define MESHC_UNARY_LOGICAL(Name, name, expr) case UnaryOp::Name:
#include "meshc/runtime/elementwise_ops.def"
  break;
  }
  return 0.0f;
}

/// Predicates (float to bool) and logical ops (bool to bool).
__device__ __forceinline__ bool unaryPredicate(UnaryOp op, float x) {
  switch (op) {
#define MESHC_UNARY_PREDICATE(Name, name, expr)                                \
  case UnaryOp::Name:                                                          \
    return expr;
#include "meshc/runtime/elementwise_ops.def"
  default:
    return false;
  }
}

__device__ __forceinline__ bool unaryLogical(UnaryOp op, bool x) {
  switch (op) {
#define MESHC_UNARY_LOGICAL(Name, name, expr)                                  \
  case UnaryOp::Name:                                                          \
    return expr;
#include "meshc/runtime/elementwise_ops.def"
  default:
    return false;
  }
}

template <typename T>
__global__ void predicateKernel(UnaryOp op, const T *in, std::uint8_t *out,
                                std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = unaryPredicate(op, toFloat(in[i])) ? 1 : 0;
}

template <typename T>
__global__ void unaryKernel(UnaryOp op, const T *in, T *out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = fromFloat<T>(unaryF32(op, toFloat(in[i])));
}

/// Integer negation wraps (-INT_MIN is INT_MIN), as the CPU's.
template <typename I>
__global__ void negIntKernel(const I *in, I *out, std::int64_t n) {
  using U = std::make_unsigned_t<I>;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<I>(U(0) - static_cast<U>(in[i]));
}

__global__ void logicalUnaryKernel(UnaryOp op, const std::uint8_t *in,
                                   std::uint8_t *out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = unaryLogical(op, in[i] != 0) ? 1 : 0;
}

/// The family of a UnaryOp (elementwise_ops.def).
enum class UnaryFamily { Math, Predicate, Logical };
UnaryFamily familyOf(UnaryOp op) {
  switch (op) {
#define MESHC_UNARY_MATH(Name, name)                                           \
  case UnaryOp::Name:                                                          \
    return UnaryFamily::Math;
#define MESHC_UNARY_PREDICATE(Name, name, expr)                                \
  case UnaryOp::Name:                                                          \
    return UnaryFamily::Predicate;
#define MESHC_UNARY_LOGICAL(Name, name, expr)                                  \
  case UnaryOp::Name:                                                          \
    return UnaryFamily::Logical;
#include "meshc/runtime/elementwise_ops.def"
  }
  return UnaryFamily::Math;
}

/// The dfg op a UnaryOp implements, for messages.
const char *unaryName(UnaryOp op) {
  switch (op) {
#define MESHC_UNARY(Name, name)                                                \
  case UnaryOp::Name:                                                          \
    return name;
#include "meshc/runtime/elementwise_ops.def"
  }
  return "unary";
}

} // namespace

void unary(UnaryOp op, const TensorRef &in, const TensorRef &out) {
  const std::int64_t n = in.numElements();
  if (n == 0)
    return;
  const char *name = unaryName(op);
  const unsigned grid = gridFor(n);
  const UnaryFamily family = familyOf(op);
  if (family == UnaryFamily::Logical) {
    if (in.dtype != DType::Bool)
      unsupportedDType(name, in.dtype);
    logicalUnaryKernel<<<grid, kThreads, 0, stream()>>>(
        op, in.as<const std::uint8_t>(), out.as<std::uint8_t>(), n);
    return checkLaunch(name);
  }
  if (family == UnaryFamily::Predicate) {
    dispatchFloat(in.dtype, name, [&](auto tag) {
      using T = typename decltype(tag)::type;
      predicateKernel<T><<<grid, kThreads, 0, stream()>>>(
          op, in.as<const T>(), out.as<std::uint8_t>(), n);
    });
    return checkLaunch(name);
  }
  if (op == UnaryOp::Neg && in.dtype == DType::I64) {
    negIntKernel<<<grid, kThreads, 0, stream()>>>(in.as<const std::int64_t>(),
                                                  out.as<std::int64_t>(), n);
    return checkLaunch(name);
  }
  if (op == UnaryOp::Neg && in.dtype == DType::I32) {
    negIntKernel<<<grid, kThreads, 0, stream()>>>(in.as<const std::int32_t>(),
                                                  out.as<std::int32_t>(), n);
    return checkLaunch(name);
  }
  dispatchFloat(in.dtype, name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    unaryKernel<T>
        <<<grid, kThreads, 0, stream()>>>(op, in.as<const T>(), out.as<T>(), n);
  });
  checkLaunch(name);
}

//===----------------------------------------------------------------------===//
// Where
//===----------------------------------------------------------------------===//

namespace {

template <typename U>
__global__ void whereKernel(Plan<3> plan, const std::uint8_t *cond, const U *a,
                            const U *b, U *out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off[3];
    planOffsets(plan, i, off);
    out[i] = cond[off[0]] ? a[off[1]] : b[off[2]];
  }
}

} // namespace

void where(const TensorRef &cond, const TensorRef &lhs, const TensorRef &rhs,
           const TensorRef &out) {
  const std::int64_t n = out.numElements();
  if (n == 0)
    return;
  if (cond.dtype != DType::Bool)
    fatal(std::string("where: the condition must be bool, not ") +
          dtypeName(cond.dtype));
  const TensorRef *inputs[] = {&cond, &lhs, &rhs};
  const Plan<3> plan = broadcastPlan<3>(out, inputs);
  dispatchWidth(byteWidth(out.dtype), [&](auto tag) {
    using U = typename decltype(tag)::type;
    whereKernel<U><<<gridFor(n), kThreads, 0, stream()>>>(
        plan, cond.as<const std::uint8_t>(), lhs.as<const U>(),
        rhs.as<const U>(), out.as<U>(), n);
  });
  checkLaunch("where");
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

namespace {

/// Float to integer as ONNX Cast and the CPU kernel: truncation toward zero
/// in double; NaN gives 0 and out-of-range values saturate.
template <typename I> __device__ __forceinline__ I floatToInt(float x) {
  if (isnan(x))
    return 0;
  const double t = trunc(static_cast<double>(x));
  constexpr I lowest = std::is_same_v<I, std::int64_t>
                           ? static_cast<I>(INT64_MIN)
                           : static_cast<I>(INT32_MIN);
  constexpr I highest = std::is_same_v<I, std::int64_t>
                            ? static_cast<I>(INT64_MAX)
                            : static_cast<I>(INT32_MAX);
  if (t <= static_cast<double>(lowest))
    return lowest;
  if (t >= static_cast<double>(highest))
    return highest;
  return static_cast<I>(t);
}

/// One element of an ONNX Cast, as the CPU's castElement: 16-bit floats go
/// through f32; to bool is x != 0; integers (and bool bytes) to float round
/// to nearest, then to the 16-bit format if that is the target.
template <typename From, typename To>
__device__ __forceinline__ To castElement(From x) {
  if constexpr (std::is_same_v<To, std::uint8_t>) {
    if constexpr (kIsFloat<From>)
      return toFloat(x) != 0.0f ? 1 : 0;
    else
      return x != From(0) ? 1 : 0;
  } else if constexpr (kIsFloat<To>) {
    if constexpr (kIsFloat<From>)
      return fromFloat<To>(toFloat(x));
    else
      return fromFloat<To>(static_cast<float>(x));
  } else if constexpr (kIsFloat<From>) {
    return floatToInt<To>(toFloat(x));
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
__global__ void castKernel(const From *in, To *out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = castElement<From, To>(in[i]);
}

} // namespace

void cast(const TensorRef &in, const TensorRef &out) {
  const std::int64_t n = in.numElements();
  if (n == 0)
    return;
  if (in.dtype == out.dtype)
    return copy(in, out);
  dispatchAny(in.dtype, [&](auto fromTag) {
    using From = typename decltype(fromTag)::type;
    dispatchAny(out.dtype, [&](auto toTag) {
      using To = typename decltype(toTag)::type;
      if constexpr (!std::is_same_v<From, To>)
        castKernel<From, To><<<gridFor(n), kThreads, 0, stream()>>>(
            in.as<const From>(), out.as<To>(), n);
    });
  });
  checkLaunch("cast");
}

//===----------------------------------------------------------------------===//
// Copy
//===----------------------------------------------------------------------===//

void copy(const TensorRef &in, const TensorRef &out) {
  const std::size_t bytes = in.byteSize();
  if (bytes == 0 || in.data == out.data)
    return;
  check(cudaMemcpyAsync(out.data, in.data, bytes, cudaMemcpyDeviceToDevice,
                        stream()),
        "copy");
}

//===----------------------------------------------------------------------===//
// iota, fillIntegers
//===----------------------------------------------------------------------===//

namespace {

/// Writes in unsigned arithmetic so that an overflowing range wraps instead
/// of being undefined.
template <typename I>
__global__ void iotaKernel(I *out, std::int64_t start, std::int64_t delta,
                           std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<I>(static_cast<std::uint64_t>(start) +
                            static_cast<std::uint64_t>(i) *
                                static_cast<std::uint64_t>(delta));
}

/// Values fillIntegers passes to one launch by value: the host array may
/// die as soon as the call returns, long before the kernel runs.
constexpr int kFillChunk = 64;
struct FillValues {
  std::int64_t v[kFillChunk];
};

template <typename I>
__global__ void fillKernel(I *out, FillValues values, int count) {
  const int i = threadIdx.x;
  if (i < count)
    out[i] = static_cast<I>(values.v[i]);
}

} // namespace

void iota(const TensorRef &out, std::int64_t start, std::int64_t delta) {
  const std::int64_t n = out.numElements();
  if (n == 0)
    return;
  if (out.dtype == DType::I64)
    iotaKernel<<<gridFor(n), kThreads, 0, stream()>>>(out.as<std::int64_t>(),
                                                      start, delta, n);
  else if (out.dtype == DType::I32)
    iotaKernel<<<gridFor(n), kThreads, 0, stream()>>>(out.as<std::int32_t>(),
                                                      start, delta, n);
  else
    unsupportedDType("range", out.dtype);
  checkLaunch("range");
}

void fillIntegers(const TensorRef &out, const std::int64_t *values, int count) {
  if (out.dtype != DType::I64 && out.dtype != DType::I32)
    unsupportedDType("sizes", out.dtype);
  for (int begin = 0; begin < count; begin += kFillChunk) {
    const int chunk = count - begin < kFillChunk ? count - begin : kFillChunk;
    FillValues v{};
    for (int i = 0; i < chunk; ++i)
      v.v[i] = values[begin + i];
    if (out.dtype == DType::I64)
      fillKernel<<<1, kFillChunk, 0, stream()>>>(out.as<std::int64_t>() + begin,
                                                 v, chunk);
    else
      fillKernel<<<1, kFillChunk, 0, stream()>>>(out.as<std::int32_t>() + begin,
                                                 v, chunk);
    checkLaunch("sizes");
  }
}

} // namespace meshc::rt::cuda
