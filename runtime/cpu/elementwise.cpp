//===- elementwise.cpp - Broadcast binary, unary, where, cast, copy -------===//
//
// Part of meshc. Every broadcasting kernel walks a detail::Plan: after
// simplification a same-shape operation is one flat loop and a bias or mask
// broadcast along leading dimensions is rows of a flat loop whose broadcast
// operand is either contiguous or a single value, so the compiler vectorises
// the inner loops without per-element index arithmetic.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "meshc/runtime/error.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/scalar.h"
#include "runtime/cpu/KernelsInternal.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

namespace meshc::rt::cpu {
using namespace detail;

namespace {

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// Runs `op` over a run of `len` elements whose inner strides are 0 or 1;
/// the four stride combinations are separate loops so each vectorises.
template <typename T, typename R, typename Op>
inline void binaryRun(const T *a, std::int64_t sa, const T *b, std::int64_t sb,
                      R *o, std::int64_t len, Op op) {
  if (sa == 1 && sb == 1) {
    for (std::int64_t i = 0; i < len; ++i)
      o[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (std::int64_t i = 0; i < len; ++i)
      o[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (std::int64_t i = 0; i < len; ++i)
      o[i] = op(av, b[i]);
  } else {
    const R v = op(*a, *b);
    for (std::int64_t i = 0; i < len; ++i)
      o[i] = v;
  }
}

template <typename T, typename R, typename Op>
void broadcastBinary(const TensorRef &lhs, const TensorRef &rhs,
                     const TensorRef &out, Op op) {
  const TensorRef *inputs[] = {&lhs, &rhs};
  const Plan plan = broadcastPlan(out, inputs, 2);
  const T *a = lhs.as<const T>();
  const T *b = rhs.as<const T>();
  R *o = out.as<R>();
  const std::int64_t sa = plan.innerStride(0), sb = plan.innerStride(1);
  parallelRuns(
      plan, [&](std::int64_t pos, const std::int64_t *off, std::int64_t len) {
        binaryRun(a + off[0], sa, b + off[1], sb, o + pos, len, op);
      });
}

/// Integer division truncating toward zero (ONNX Div); a zero divisor is
/// recorded in `divByZero` and gives 0 so the loop can finish first.
template <typename T> struct IntDiv {
  std::atomic<bool> *divByZero;
  T operator()(T x, T y) const {
    if (y == 0) {
      divByZero->store(true, std::memory_order_relaxed);
      return 0;
    }
    if (y == -1) // avoids the overflow trap of INT_MIN / -1
      return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x));
    return x / y;
  }
};

template <typename T>
void arithmetic(BinaryOp op, const TensorRef &lhs, const TensorRef &rhs,
                const TensorRef &out) {
  constexpr bool isFloat = std::is_floating_point_v<T>;
  switch (op) {
  case BinaryOp::Add:
    return broadcastBinary<T, T>(lhs, rhs, out,
                                 [](T x, T y) { return T(x + y); });
  case BinaryOp::Sub:
    return broadcastBinary<T, T>(lhs, rhs, out,
                                 [](T x, T y) { return T(x - y); });
  case BinaryOp::Mul:
    return broadcastBinary<T, T>(lhs, rhs, out,
                                 [](T x, T y) { return T(x * y); });
  case BinaryOp::Div:
    if constexpr (isFloat) {
      return broadcastBinary<T, T>(lhs, rhs, out,
                                   [](T x, T y) { return x / y; });
    } else {
      std::atomic<bool> divByZero{false};
      broadcastBinary<T, T>(lhs, rhs, out, IntDiv<T>{&divByZero});
      if (divByZero.load())
        fatal("div: integer division by zero");
      return;
    }
  case BinaryOp::Pow:
    if constexpr (isFloat) {
      return broadcastBinary<T, T>(lhs, rhs, out,
                                   [](T x, T y) { return std::pow(x, y); });
    } else {
      return broadcastBinary<T, T>(
          lhs, rhs, out, [](T x, T y) { return scalar::intPow<T>(x, y); });
    }
  case BinaryOp::Min:
    return broadcastBinary<T, T>(lhs, rhs, out,
                                 [](T x, T y) { return y < x ? y : x; });
  case BinaryOp::Max:
    return broadcastBinary<T, T>(lhs, rhs, out,
                                 [](T x, T y) { return x < y ? y : x; });
#define MESHC_BITWISE(Name, name, expr)                                        \
  case BinaryOp::Name:                                                         \
    if constexpr (!isFloat)                                                    \
      return broadcastBinary<T, T>(lhs, rhs, out,                              \
                                   [](T x, T y) { return T(expr); });          \
    break;
#define MESHC_COMPARISON(Name, name, expr)                                     \
  case BinaryOp::Name:                                                         \
    return broadcastBinary<T, std::uint8_t>(                                   \
        lhs, rhs, out, [](T x, T y) { return std::uint8_t(expr); });
#define MESHC_LOGICAL(Name, name, expr) case BinaryOp::Name:
#include "meshc/runtime/elementwise_ops.def"
    break;
  }
  unsupportedDType("binary", lhs.dtype);
}

} // namespace

void binary(BinaryOp op, const TensorRef &lhs, const TensorRef &rhs,
            const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  switch (op) {
#define MESHC_LOGICAL(Name, name, expr)                                        \
  case BinaryOp::Name:                                                         \
    if (lhs.dtype != DType::Bool)                                              \
      unsupportedDType(name, lhs.dtype);                                       \
    return broadcastBinary<std::uint8_t, std::uint8_t>(                        \
        lhs, rhs, out, [](std::uint8_t xb, std::uint8_t yb) {                  \
          const bool x = xb != 0, y = yb != 0;                                 \
          return std::uint8_t(expr);                                           \
        });
#include "meshc/runtime/elementwise_ops.def"
  default:
    break;
  }
  switch (lhs.dtype) {
  case DType::F32:
    return arithmetic<float>(op, lhs, rhs, out);
  case DType::I64:
    return arithmetic<std::int64_t>(op, lhs, rhs, out);
  case DType::I32:
    return arithmetic<std::int32_t>(op, lhs, rhs, out);
  default:
    unsupportedDType("binary", lhs.dtype);
  }
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

namespace {

template <typename T, typename R, typename Op>
void mapTo(const TensorRef &in, const TensorRef &out, Op op) {
  const T *x = in.as<const T>();
  R *y = out.as<R>();
  const std::int64_t n = in.numElements();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = op(x[i]);
}

template <typename T, typename Op>
void map(const TensorRef &in, const TensorRef &out, Op op) {
  mapTo<T, T>(in, out, op);
}

/// y[i] = f(x[i]) over one run (detail::FloatRun), compiled for each x86-64
/// level (MESHC_CPU_CLONES): the bodies of exp, sigmoid and the like
/// vectorise; erf and tanh stay library calls.
#define MESHC_FLOAT_RUN(Name, expr)                                            \
  MESHC_CPU_CLONES void Name(const float *x, float *y, std::int64_t n) {       \
    for (std::int64_t i = 0; i < n; ++i) {                                     \
      const float v = x[i];                                                    \
      y[i] = (expr);                                                           \
    }                                                                          \
  }
MESHC_FLOAT_RUN(sqrtRun, std::sqrt(v))
MESHC_FLOAT_RUN(reciprocalRun, 1.0f / v)
MESHC_FLOAT_RUN(negRun, -v)
MESHC_FLOAT_RUN(siluRun, v / (1.0f + fastExp(-v)))
MESHC_FLOAT_RUN(sigmoidRun, 1.0f / (1.0f + fastExp(-v)))
MESHC_FLOAT_RUN(expRun, fastExp(v))
// 0.5 (1 + tanh(u)) = sigmoid(2u): one vectorised exp and no cancellation
// where tanh(u) is close to -1; 2 sqrt(2 / pi) = 1.59576912160573072.
MESHC_FLOAT_RUN(geluTanhRun,
                v / (1.0f + fastExp(-1.59576912160573072f *
                                    (v + 0.044715f * v * v * v))))
MESHC_FLOAT_RUN(geluRun, 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)))
MESHC_FLOAT_RUN(erfRun, std::erf(v))
MESHC_FLOAT_RUN(tanhRun, std::tanh(v))
#undef MESHC_FLOAT_RUN

/// `run` over `in` into `out` (f32, same size), in chunks over the OpenMP
/// team when large.
void mapRuns(const TensorRef &in, const TensorRef &out, FloatRun run) {
  const float *x = in.as<const float>();
  float *y = out.as<float>();
  const std::int64_t n = in.numElements();
  if (n <= kParallelThreshold) {
    run(x, y, n);
    return;
  }
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c)
    run(x + c * kChunk, y + c * kChunk, std::min(kChunk, n - c * kChunk));
}

} // namespace

FloatRun detail::floatRun(UnaryOp op) {
  switch (op) {
  case UnaryOp::Sqrt:
    return sqrtRun;
  case UnaryOp::Reciprocal:
    return reciprocalRun;
  case UnaryOp::Neg:
    return negRun;
  case UnaryOp::Silu:
    return siluRun;
  case UnaryOp::Erf:
    return erfRun;
  case UnaryOp::Tanh:
    return tanhRun;
  case UnaryOp::Sigmoid:
    return sigmoidRun;
  case UnaryOp::Exp:
    return expRun;
  case UnaryOp::Gelu:
    return geluRun;
  case UnaryOp::GeluTanh:
    return geluTanhRun;
  default:
    return nullptr;
  }
}

namespace {

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
  if (in.numElements() == 0)
    return;
  switch (op) {
#define MESHC_UNARY_LOGICAL(Name, name, expr)                                  \
  case UnaryOp::Name:                                                          \
    if (in.dtype != DType::Bool)                                               \
      unsupportedDType(name, in.dtype);                                        \
    return map<std::uint8_t>(in, out, [](std::uint8_t xb) {                    \
      const bool x = xb != 0;                                                  \
      return std::uint8_t(expr);                                               \
    });
#define MESHC_UNARY_PREDICATE(Name, name, expr)                                \
  case UnaryOp::Name:                                                          \
    requireF32(in, name);                                                      \
    return mapTo<float, std::uint8_t>(                                         \
        in, out, [](float x) { return std::uint8_t(expr); });
#include "meshc/runtime/elementwise_ops.def"
  default:
    break;
  }
  if (op == UnaryOp::Neg && in.dtype == DType::I64)
    return map<std::int64_t>(in, out, [](std::int64_t x) {
      return static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x));
    });
  if (op == UnaryOp::Neg && in.dtype == DType::I32)
    return map<std::int32_t>(in, out, [](std::int32_t x) {
      return static_cast<std::int32_t>(0 - static_cast<std::uint32_t>(x));
    });
  requireF32(in, unaryName(op));
  if (FloatRun run = floatRun(op))
    return mapRuns(in, out, run);
  switch (op) {
  case UnaryOp::Cos:
    return map<float>(in, out, [](float x) { return std::cos(x); });
  case UnaryOp::Sin:
    return map<float>(in, out, [](float x) { return std::sin(x); });
  case UnaryOp::Tan:
    return map<float>(in, out, [](float x) { return std::tan(x); });
  case UnaryOp::Asin:
    return map<float>(in, out, [](float x) { return std::asin(x); });
  case UnaryOp::Acos:
    return map<float>(in, out, [](float x) { return std::acos(x); });
  case UnaryOp::Atan:
    return map<float>(in, out, [](float x) { return std::atan(x); });
  case UnaryOp::Sinh:
    return map<float>(in, out, [](float x) { return std::sinh(x); });
  case UnaryOp::Cosh:
    return map<float>(in, out, [](float x) { return std::cosh(x); });
  case UnaryOp::Asinh:
    return map<float>(in, out, [](float x) { return std::asinh(x); });
  case UnaryOp::Acosh:
    return map<float>(in, out, [](float x) { return std::acosh(x); });
  case UnaryOp::Atanh:
    return map<float>(in, out, [](float x) { return std::atanh(x); });
  case UnaryOp::Log:
    return map<float>(in, out, [](float x) { return std::log(x); });
  case UnaryOp::Floor:
    return map<float>(in, out, [](float x) { return std::floor(x); });
  case UnaryOp::Ceil:
    return map<float>(in, out, [](float x) { return std::ceil(x); });
  case UnaryOp::Round:
    // The default rounding mode: halves to even, as ONNX's Round.
    return map<float>(in, out, [](float x) { return std::nearbyint(x); });
  default:
    break;
  }
}

//===----------------------------------------------------------------------===//
// Where
//===----------------------------------------------------------------------===//

void where(const TensorRef &cond, const TensorRef &lhs, const TensorRef &rhs,
           const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  if (cond.dtype != DType::Bool)
    fatal(std::string("where: the condition must be bool, not ") +
          dtypeName(cond.dtype));
  const TensorRef *inputs[] = {&cond, &lhs, &rhs};
  const Plan plan = broadcastPlan(out, inputs, 3);
  const std::int64_t sc = plan.innerStride(0), sa = plan.innerStride(1),
                     sb = plan.innerStride(2);
  const auto *c = cond.as<const std::uint8_t>();
  dispatchWidth(byteWidth(out.dtype), [&](auto tag) {
    using T = decltype(tag);
    const T *a = lhs.as<const T>();
    const T *b = rhs.as<const T>();
    T *o = out.as<T>();
    parallelRuns(
        plan, [&](std::int64_t pos, const std::int64_t *off, std::int64_t len) {
          const std::uint8_t *cr = c + off[0];
          const T *ar = a + off[1];
          const T *br = b + off[2];
          T *orow = o + pos;
          for (std::int64_t i = 0; i < len; ++i)
            orow[i] = cr[i * sc] ? ar[i * sa] : br[i * sb];
        });
  });
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

namespace {

/// Float to integer as ONNX Cast: truncation toward zero; NaN gives 0 (as
/// the reference evaluator) and out-of-range values saturate instead of
/// being undefined behaviour.
template <typename I> I floatToInt(float x) {
  if (std::isnan(x))
    return 0;
  const double t = std::trunc(static_cast<double>(x));
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (t <= lo)
    return std::numeric_limits<I>::min();
  if (t >= hi)
    return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

template <typename From, typename To> To convert(From x) {
  if constexpr (std::is_same_v<To, std::uint8_t>)
    return x != From(0) ? 1 : 0;
  else if constexpr (std::is_same_v<From, float> && std::is_integral_v<To>)
    return floatToInt<To>(x);
  else
    return static_cast<To>(x);
}

/// 16-bit floats are converted through float, element by element.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

template <typename T> float widen(T x) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToFloat(x.bits);
  else
    return bfloat16ToFloat(x.bits);
}

template <typename From, typename To> To castElement(From x) {
  constexpr bool from16 =
      std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>;
  if constexpr (std::is_same_v<To, Half>)
    return Half{floatToHalf(castElement<From, float>(x))};
  else if constexpr (std::is_same_v<To, BFloat16>)
    return BFloat16{floatToBfloat16(castElement<From, float>(x))};
  else if constexpr (from16)
    return convert<float, To>(widen(x));
  else
    return convert<From, To>(x);
}

template <typename From, typename To>
void map2(const TensorRef &in, const TensorRef &out) {
  const From *x = in.as<const From>();
  To *y = out.as<To>();
  const std::int64_t n = in.numElements();
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = castElement<From, To>(x[i]);
}

template <typename From>
void castFrom(const TensorRef &in, const TensorRef &out) {
  switch (out.dtype) {
  case DType::F32:
    return map2<From, float>(in, out);
  case DType::F16:
    return map2<From, Half>(in, out);
  case DType::BF16:
    return map2<From, BFloat16>(in, out);
  case DType::I64:
    return map2<From, std::int64_t>(in, out);
  case DType::I32:
    return map2<From, std::int32_t>(in, out);
  case DType::Bool:
    return map2<From, std::uint8_t>(in, out);
  }
  unsupportedDType("cast", out.dtype);
}

} // namespace

void cast(const TensorRef &in, const TensorRef &out) {
  if (in.numElements() == 0)
    return;
  if (in.dtype == out.dtype)
    return copy(in, out);
  switch (in.dtype) {
  case DType::F32:
    return castFrom<float>(in, out);
  case DType::F16:
    return castFrom<Half>(in, out);
  case DType::BF16:
    return castFrom<BFloat16>(in, out);
  case DType::I64:
    return castFrom<std::int64_t>(in, out);
  case DType::I32:
    return castFrom<std::int32_t>(in, out);
  case DType::Bool:
    return castFrom<std::uint8_t>(in, out);
  }
  unsupportedDType("cast", in.dtype);
}

//===----------------------------------------------------------------------===//
// Copy
//===----------------------------------------------------------------------===//

void copy(const TensorRef &in, const TensorRef &out) {
  parallelMemcpy(out.data, in.data, in.byteSize());
}

} // namespace meshc::rt::cpu
