//===- KernelsTest.cpp - Tests of the CPU kernels -------------------------===//
//
// Part of meshc. Every kernel of runtime/include/meshc/runtime/kernels.h
// against a straightforward float64 reference written here, on small random
// inputs drawn with a fixed seed. Some cases are sized past the kernels'
// OpenMP threshold (32k elements) or attention's sgemm threshold (64 queries
// and keys) so that both code paths of a kernel are compared.
//
// Tolerances: f32 results must satisfy |got - want| <= kAtol + kRtol * |want|
// with kRtol = 1e-5 (a few f32 ulps, allowing for a different summation
// order in sgemm and the reductions) and kAtol = 1e-5 (for values that cancel
// to near zero, such as dot products of inputs in [-1, 1] with K <= 80);
// integer, bool and data-movement results must be exact.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"
#include "runtime/cpu/KernelsInternal.h"
#include "test/unit/runtime/HostTensor.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

using namespace meshc::rt;
using namespace meshc::rt::cpu;

namespace {

constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-5;
constexpr double kInf = std::numeric_limits<double>::infinity();

using meshc::test::broadcastShape;
using meshc::test::numElementsOf;
using meshc::test::Shape;
/// An owning dense tensor of any dtype, with element access as doubles.
using Tensor = meshc::test::HostTensor;

std::mt19937 &rng() {
  static std::mt19937 engine(20240607);
  return engine;
}

/// f32 values uniform in [lo, hi).
Tensor randomF32(Shape shape, double lo = -1.0, double hi = 1.0) {
  Tensor t(DType::F32, std::move(shape));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::int64_t i = 0; i < t.size(); ++i)
    t.set(i, dist(rng()));
  return t;
}

/// Integers uniform in [lo, hi] (or 0/1 for bool).
Tensor randomInt(DType dtype, Shape shape, int lo, int hi) {
  Tensor t(dtype, std::move(shape));
  std::uniform_int_distribution<int> dist(lo, hi);
  for (std::int64_t i = 0; i < t.size(); ++i)
    t.set(i, dist(rng()));
  return t;
}

Tensor fromValues(DType dtype, Shape shape, const std::vector<double> &v) {
  Tensor t(dtype, std::move(shape));
  for (std::int64_t i = 0; i < t.size(); ++i)
    t.set(i, v[i]);
  return t;
}

/// Calls fn(linear index, multi-index) for every element of `shape`.
void forEachIndex(const Shape &shape,
                  const std::function<void(std::int64_t, const Shape &)> &fn) {
  Shape index(shape.size(), 0);
  const std::int64_t n = numElementsOf(shape);
  for (std::int64_t linear = 0; linear < n; ++linear) {
    fn(linear, index);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// The linear index in a tensor of `inShape` that numpy broadcasting reads
/// for the output multi-index `index`.
std::int64_t broadcastOffset(const Shape &index, const Shape &inShape) {
  const std::size_t skip = index.size() - inShape.size();
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < inShape.size(); ++d)
    offset = offset * inShape[d] + (inShape[d] == 1 ? 0 : index[skip + d]);
  return offset;
}

/// Checks `got` against `want` within atol + rtol * |want| (NaN matches NaN,
/// an infinity itself); reports the first few mismatches.
void expectNear(const Tensor &got, const std::vector<double> &want,
                double rtol = kRtol, double atol = kAtol) {
  ASSERT_EQ(got.size(), static_cast<std::int64_t>(want.size()));
  int failures = 0;
  for (std::int64_t i = 0; i < got.size() && failures < 5; ++i) {
    const double g = got.at(i), w = want[i];
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w))) {
      ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
      ++failures;
    }
  }
}

void expectExact(const Tensor &got, const std::vector<double> &want) {
  expectNear(got, want, 0.0, 0.0);
}

/// Death tests fork while OpenMP's threads exist: re-execute instead.
void useThreadsafeDeathTests() {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

double refBinary(BinaryOp op, double a, double b, bool integer) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return integer ? std::trunc(a / b) : a / b;
  case BinaryOp::Pow:
    return integer ? std::trunc(std::pow(a, b)) : std::pow(a, b);
  case BinaryOp::Min:
    return std::min(a, b);
  case BinaryOp::Max:
    return std::max(a, b);
  case BinaryOp::BitwiseAnd:
    return double(std::int64_t(a) & std::int64_t(b));
  case BinaryOp::BitwiseOr:
    return double(std::int64_t(a) | std::int64_t(b));
  case BinaryOp::BitwiseXor:
    return double(std::int64_t(a) ^ std::int64_t(b));
  case BinaryOp::And:
    return a != 0 && b != 0;
  case BinaryOp::Or:
    return a != 0 || b != 0;
  case BinaryOp::Equal:
    return a == b;
  case BinaryOp::Less:
    return a < b;
  case BinaryOp::Greater:
    return a > b;
  case BinaryOp::LessOrEqual:
    return a <= b;
  case BinaryOp::GreaterOrEqual:
    return a >= b;
  }
  return 0;
}

bool isComparison(BinaryOp op) {
  return op == BinaryOp::Equal || op == BinaryOp::Less ||
         op == BinaryOp::Greater || op == BinaryOp::LessOrEqual ||
         op == BinaryOp::GreaterOrEqual;
}

/// Runs binary(op) on `a` and `b` and checks it against refBinary.
void checkBinary(BinaryOp op, const Tensor &a, const Tensor &b) {
  const Shape shape = broadcastShape(a.shape, b.shape);
  const bool boolResult =
      isComparison(op) || op == BinaryOp::And || op == BinaryOp::Or;
  Tensor out(boolResult ? DType::Bool : a.dtype, shape);
  binary(op, a.ref(), b.ref(), out.ref());
  const bool integer = a.dtype == DType::I64 || a.dtype == DType::I32;
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    // Operands round to f32 before the reference sees them.
    want[i] = refBinary(op, a.at(broadcastOffset(index, a.shape)),
                        b.at(broadcastOffset(index, b.shape)), integer);
  });
  if (out.dtype == DType::F32)
    expectNear(out, want);
  else
    expectExact(out, want);
}

TEST(KernelsTest, BinaryArithmeticF32SameShapeAndBroadcast) {
  const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul,
                          BinaryOp::Div, BinaryOp::Min, BinaryOp::Max};
  const std::pair<Shape, Shape> shapes[] = {
      {{2, 3, 4}, {2, 3, 4}}, // same shape
      {{2, 3, 4}, {4}},       // rhs a contiguous suffix (bias)
      {{2, 3, 4}, {3, 4}},    // rhs a longer suffix
      {{4}, {2, 3, 4}},       // lhs broadcast
      {{2, 1, 4}, {3, 1}},    // both broadcast, general path
      {{2, 3, 4}, {}},        // scalar rhs
      {{}, {5}},              // scalar lhs
      {{2, 3, 1}, {1, 3, 5}}, // outer product-like
  };
  for (BinaryOp op : ops)
    for (const auto &[sa, sb] : shapes) {
      SCOPED_TRACE(static_cast<int>(op));
      Tensor a = randomF32(sa), b = randomF32(sb, 0.5, 2.0);
      checkBinary(op, a, b);
    }
}

TEST(KernelsTest, BinaryPowF32) {
  Tensor a = randomF32({3, 4}, 0.1, 3.0), b = randomF32({4}, -2.0, 2.0);
  checkBinary(BinaryOp::Pow, a, b);
}

TEST(KernelsTest, BinaryLargeTensorsTakeTheParallelPath) {
  Tensor a = randomF32({64, 1024}), bias = randomF32({1024});
  checkBinary(BinaryOp::Add, a, bias);
  Tensor c = randomF32({64, 1024});
  checkBinary(BinaryOp::Mul, a, c);
  Tensor col = randomF32({64, 1});
  checkBinary(BinaryOp::Sub, a, col);
  Tensor x = randomF32({8, 1, 64, 64}), y = randomF32({1, 12, 64, 64});
  checkBinary(BinaryOp::Add, x, y);
}

TEST(KernelsTest, BinaryIntegers) {
  // Division truncates toward zero, also for negative operands.
  Tensor a = fromValues(DType::I64, {2, 3}, {7, -7, 9, -9, 0, 100});
  Tensor b = fromValues(DType::I64, {3}, {2, 2, -4});
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul,
                      BinaryOp::Div, BinaryOp::Min, BinaryOp::Max})
    checkBinary(op, a, b);
  Tensor c = randomInt(DType::I32, {2, 3, 4}, -50, 50);
  Tensor d = randomInt(DType::I32, {3, 1}, 1, 9);
  for (BinaryOp op : {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div})
    checkBinary(op, c, d);
  Tensor base = fromValues(DType::I64, {4}, {2, 3, -2, 5});
  Tensor exp = fromValues(DType::I64, {4}, {10, 3, 3, 0});
  checkBinary(BinaryOp::Pow, base, exp);
}

TEST(KernelsTest, BinaryBitwiseOnIntegers) {
  // Both signs and values past 32 bits, broadcast; int32 as CPM-Ant's mask.
  Tensor a = fromValues(DType::I64, {2, 3},
                        {7, -7, 0x5555, -(1LL << 40), (1LL << 40) + 3, 0});
  Tensor b = fromValues(DType::I64, {3}, {3, -4, -(1LL << 33)});
  Tensor c = randomInt(DType::I32, {2, 3, 4}, -1000, 1000);
  Tensor d = randomInt(DType::I32, {3, 1}, -1000, 1000);
  for (BinaryOp op :
       {BinaryOp::BitwiseAnd, BinaryOp::BitwiseOr, BinaryOp::BitwiseXor}) {
    checkBinary(op, a, b);
    checkBinary(op, c, d);
  }
}

TEST(KernelsTest, BinaryComparisonsGiveBool) {
  const BinaryOp ops[] = {BinaryOp::Equal, BinaryOp::Less, BinaryOp::Greater,
                          BinaryOp::LessOrEqual, BinaryOp::GreaterOrEqual};
  for (BinaryOp op : ops) {
    Tensor a = randomInt(DType::I64, {8, 8}, 0, 7);
    Tensor b = randomInt(DType::I64, {8}, 0, 7);
    checkBinary(op, a, b);
    Tensor c = randomInt(DType::I32, {2, 1, 4}, -2, 2);
    Tensor d = randomInt(DType::I32, {3, 1}, -2, 2);
    checkBinary(op, c, d);
    Tensor e = randomF32({3, 4});
    Tensor f = fromValues(DType::F32, {}, {e.at(5)});
    checkBinary(op, e, f);
  }
}

TEST(KernelsTest, BinaryAndOr) {
  Tensor a = randomInt(DType::Bool, {2, 3, 4}, 0, 1);
  Tensor b = randomInt(DType::Bool, {3, 1}, 0, 1);
  checkBinary(BinaryOp::And, a, b);
  checkBinary(BinaryOp::Or, a, b);
}

TEST(KernelsTest, IntegerDivisionByZeroIsFatal) {
  useThreadsafeDeathTests();
  Tensor a = fromValues(DType::I64, {2}, {1, 2});
  Tensor b = fromValues(DType::I64, {2}, {1, 0});
  Tensor out(DType::I64, {2});
  EXPECT_EXIT(binary(BinaryOp::Div, a.ref(), b.ref(), out.ref()),
              ::testing::ExitedWithCode(1),
              "meshc: error: div: integer division by zero");
}

//===----------------------------------------------------------------------===//
// Unary, where, cast, copy
//===----------------------------------------------------------------------===//

double refUnary(UnaryOp op, double x) {
  switch (op) {
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Reciprocal:
    return 1 / x;
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Silu:
    return x / (1 + std::exp(-x));
  case UnaryOp::Erf:
    return std::erf(x);
  case UnaryOp::Tanh:
    return std::tanh(x);
  case UnaryOp::Sigmoid:
    return 1 / (1 + std::exp(-x));
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Cos:
    return std::cos(x);
  case UnaryOp::Sin:
    return std::sin(x);
  case UnaryOp::Tan:
    return std::tan(x);
  case UnaryOp::Asin:
    return std::asin(x);
  case UnaryOp::Acos:
    return std::acos(x);
  case UnaryOp::Atan:
    return std::atan(x);
  case UnaryOp::Sinh:
    return std::sinh(x);
  case UnaryOp::Cosh:
    return std::cosh(x);
  case UnaryOp::Asinh:
    return std::asinh(x);
  case UnaryOp::Acosh:
    return std::acosh(x);
  case UnaryOp::Atanh:
    return std::atanh(x);
  case UnaryOp::Log:
    return std::log(x);
  case UnaryOp::Floor:
    return std::floor(x);
  case UnaryOp::Ceil:
    return std::ceil(x);
  case UnaryOp::Round:
    return std::nearbyint(x);
  case UnaryOp::Not:
    return x == 0;
  case UnaryOp::IsNaN:
    return std::isnan(x);
  case UnaryOp::Gelu:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case UnaryOp::GeluTanh: {
    const double c = std::sqrt(2 / M_PI);
    return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }
  }
  return 0;
}

void checkUnary(UnaryOp op, const Tensor &in) {
  Tensor out(in.dtype, in.shape);
  unary(op, in.ref(), out.ref());
  std::vector<double> want = in.values();
  for (double &v : want)
    v = refUnary(op, v);
  if (in.dtype == DType::F32)
    expectNear(out, want);
  else
    expectExact(out, want);
}

/// Where each unary function is checked: inside its domain, away from its
/// poles (tan) and branch points, where float64 is the reference.
std::pair<double, double> unaryDomain(UnaryOp op) {
  switch (op) {
  case UnaryOp::Sqrt:
  case UnaryOp::Reciprocal:
  case UnaryOp::Log:
    return {0.1, 4.0};
  case UnaryOp::Asin:
  case UnaryOp::Acos:
  case UnaryOp::Atanh:
    return {-0.99, 0.99};
  case UnaryOp::Acosh:
    return {1.01, 4.0};
  case UnaryOp::Tan:
    return {-1.4, 1.4};
  default:
    return {-4.0, 4.0};
  }
}

TEST(KernelsTest, UnaryF32) {
  const UnaryOp ops[] = {
      UnaryOp::Sqrt, UnaryOp::Reciprocal, UnaryOp::Neg,     UnaryOp::Silu,
      UnaryOp::Erf,  UnaryOp::Tanh,       UnaryOp::Sigmoid, UnaryOp::Exp,
      UnaryOp::Cos,  UnaryOp::Sin,        UnaryOp::Gelu,    UnaryOp::GeluTanh,
      UnaryOp::Log,  UnaryOp::Floor,      UnaryOp::Ceil,    UnaryOp::Round,
      UnaryOp::Tan,  UnaryOp::Asin,       UnaryOp::Acos,    UnaryOp::Atan,
      UnaryOp::Sinh, UnaryOp::Cosh,       UnaryOp::Asinh,   UnaryOp::Acosh,
      UnaryOp::Atanh};
  for (UnaryOp op : ops) {
    SCOPED_TRACE(static_cast<int>(op));
    const auto [lo, hi] = unaryDomain(op);
    checkUnary(op, randomF32({3, 5}, lo, hi));
    checkUnary(op, randomF32({128, 3 * 256}, lo, hi));
  }
}

TEST(KernelsTest, RoundHalvesToEven) {
  Tensor in = fromValues(DType::F32, {2, 4},
                         {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7});
  Tensor out(DType::F32, {2, 4});
  unary(UnaryOp::Round, in.ref(), out.ref());
  expectExact(out, {-2, -2, -0.0, 0, 2, 2, 0, -4});
}

TEST(KernelsTest, IsNaNGivesBool) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  Tensor in = fromValues(DType::F32, {2, 3}, {0.0, nan, -inf, inf, -nan, 1.5});
  Tensor out(DType::Bool, in.shape);
  unary(UnaryOp::IsNaN, in.ref(), out.ref());
  expectExact(out, {0, 1, 0, 0, 1, 0});
}

TEST(KernelsTest, IntegerPowIsExact) {
  // The powers a double pow may round below the integer (issue: the GPU's
  // 2-ulp pow gave 3^1 = 2, 2^11 = 2047); every x in [-20, 20], y in
  // [-2, 12] against square-and-multiply in 128-bit integers.
  std::vector<double> xs, ys, want;
  for (int x = -20; x <= 20; ++x)
    for (int y = -2; y <= 12; ++y) {
      __int128 p = 1;
      for (int k = 0; k < y; ++k)
        p *= x;
      double w = y >= 0 ? double(p)
                        : (x == 1    ? 1
                           : x == -1 ? (y % 2 ? -1 : 1)
                                     : 0);
      if (y >= 0 && (p >= (__int128)9200000000000000000ll ||
                     p <= -(__int128)9200000000000000000ll))
        w = 0;
      xs.push_back(x);
      ys.push_back(y);
      want.push_back(w);
    }
  const std::int64_t n = static_cast<std::int64_t>(xs.size());
  Tensor a = fromValues(DType::I64, {n}, xs),
         b = fromValues(DType::I64, {n}, ys);
  Tensor out(DType::I64, {n});
  binary(BinaryOp::Pow, a.ref(), b.ref(), out.ref());
  expectExact(out, want);
  // Beyond 2^53, where a double cannot hold the power: 3^39 and 7^22.
  Tensor big = fromValues(DType::I64, {2}, {3, 7}),
         e = fromValues(DType::I64, {2}, {39, 22});
  Tensor got(DType::I64, {2});
  binary(BinaryOp::Pow, big.ref(), e.ref(), got.ref());
  EXPECT_EQ(got.ref().as<const std::int64_t>()[0], 4052555153018976267ll);
  EXPECT_EQ(got.ref().as<const std::int64_t>()[1], 3909821048582988049ll);
}

TEST(KernelsTest, UnaryIntegersAndBool) {
  checkUnary(UnaryOp::Neg, randomInt(DType::I64, {7}, -100, 100));
  checkUnary(UnaryOp::Neg, randomInt(DType::I32, {7}, -100, 100));
  checkUnary(UnaryOp::Not, randomInt(DType::Bool, {2, 5}, 0, 1));
}

void checkWhere(const Tensor &c, const Tensor &a, const Tensor &b) {
  const Shape shape = broadcastShape(broadcastShape(c.shape, a.shape), b.shape);
  Tensor out(a.dtype, shape);
  where(c.ref(), a.ref(), b.ref(), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    want[i] = c.at(broadcastOffset(index, c.shape)) != 0
                  ? a.at(broadcastOffset(index, a.shape))
                  : b.at(broadcastOffset(index, b.shape));
  });
  expectExact(out, want);
}

TEST(KernelsTest, WhereOnEveryWidth) {
  Tensor c = randomInt(DType::Bool, {2, 1, 4}, 0, 1);
  checkWhere(c, randomF32({3, 4}), fromValues(DType::F32, {}, {-1e9}));
  checkWhere(c, randomInt(DType::I64, {2, 3, 4}, -9, 9),
             randomInt(DType::I64, {4}, -9, 9));
  checkWhere(c, randomInt(DType::I32, {3, 1}, -9, 9),
             randomInt(DType::I32, {1}, -9, 9));
  checkWhere(c, randomInt(DType::Bool, {3, 4}, 0, 1),
             randomInt(DType::Bool, {2, 3, 4}, 0, 1));
  checkWhere(randomInt(DType::Bool, {1, 1, 64, 64}, 0, 1),
             randomF32({2, 12, 64, 64}), fromValues(DType::F32, {}, {-kInf}));
}

TEST(KernelsTest, CastBetweenF32IntegersAndBool) {
  Tensor f =
      fromValues(DType::F32, {8}, {1.9, -1.9, 0.0, -0.0, 2.5, -3.5, 1e3, 0.25});
  Tensor toI64(DType::I64, f.shape), toI32(DType::I32, f.shape),
      toBool(DType::Bool, f.shape);
  cast(f.ref(), toI64.ref());
  cast(f.ref(), toI32.ref());
  cast(f.ref(), toBool.ref());
  expectExact(toI64, {1, -1, 0, 0, 2, -3, 1000, 0});
  expectExact(toI32, {1, -1, 0, 0, 2, -3, 1000, 0});
  expectExact(toBool, {1, 1, 0, 0, 1, 1, 1, 1});

  Tensor nan =
      fromValues(DType::F32, {1}, {std::numeric_limits<double>::quiet_NaN()});
  Tensor nanOut(DType::I64, {1});
  cast(nan.ref(), nanOut.ref());
  expectExact(nanOut, {0});

  Tensor i = fromValues(DType::I64, {4}, {-5, 0, 7, 1 << 20});
  Tensor iToF(DType::F32, i.shape), iToI32(DType::I32, i.shape),
      iToBool(DType::Bool, i.shape);
  cast(i.ref(), iToF.ref());
  cast(i.ref(), iToI32.ref());
  cast(i.ref(), iToBool.ref());
  expectExact(iToF, {-5, 0, 7, 1 << 20});
  expectExact(iToI32, {-5, 0, 7, 1 << 20});
  expectExact(iToBool, {1, 0, 1, 1});

  Tensor b = fromValues(DType::Bool, {3}, {1, 0, 1});
  Tensor bToF(DType::F32, b.shape), bToI64(DType::I64, b.shape);
  cast(b.ref(), bToF.ref());
  cast(b.ref(), bToI64.ref());
  expectExact(bToF, {1, 0, 1});
  expectExact(bToI64, {1, 0, 1});

  Tensor same(DType::F32, f.shape);
  cast(f.ref(), same.ref());
  expectExact(same, f.values());
}

/// The value of a 16-bit float pattern with `mantBits` mantissa bits and
/// exponent bias `bias` (f16: 10, 15; bf16: 7, 127), decoded in double.
double decode16(std::uint16_t h, int mantBits, int bias) {
  const int expBits = 15 - mantBits;
  const int exp = (h >> mantBits) & ((1 << expBits) - 1);
  const int mant = h & ((1 << mantBits) - 1);
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == (1 << expBits) - 1)
    return mant ? std::numeric_limits<double>::quiet_NaN() : sign * kInf;
  if (exp == 0)
    return sign * std::ldexp(mant, 1 - bias - mantBits);
  return sign * std::ldexp(1.0 + std::ldexp(mant, -mantBits), exp - bias);
}

/// Round-to-nearest-even into a 16-bit float by search over the (monotonic)
/// non-negative patterns; the pattern after the largest finite one stands for
/// the first value that rounds to infinity.
std::uint16_t encode16(double x, int mantBits, int bias) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double ax = std::fabs(x);
  const std::uint16_t inf =
      static_cast<std::uint16_t>(((1 << (15 - mantBits)) - 1) << mantBits);
  std::uint16_t lo = 0, hi = inf; // decode(lo) <= ax < decode(hi), hi virtual
  auto value = [&](std::uint16_t h) {
    return h == inf ? std::ldexp(1.0, (1 << (15 - mantBits)) - 1 - bias)
                    : decode16(h, mantBits, bias);
  };
  if (ax >= value(inf))
    return sign | inf;
  while (hi - lo > 1) {
    const auto mid = static_cast<std::uint16_t>((lo + hi) / 2);
    (value(mid) <= ax ? lo : hi) = mid;
  }
  const double dl = ax - value(lo), dh = value(hi) - ax;
  const std::uint16_t pick = dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo);
  return sign | pick;
}

void checkCast16(DType t, int mantBits, int bias) {
  // Every pattern widens exactly and narrows back to itself (NaN to a NaN).
  Tensor all(t, {65536}), wide(DType::F32, {65536}), back(t, {65536});
  auto *bits = reinterpret_cast<std::uint16_t *>(all.bytes.data());
  for (int i = 0; i < 65536; ++i)
    bits[i] = static_cast<std::uint16_t>(i);
  cast(all.ref(), wide.ref());
  cast(wide.ref(), back.ref());
  const auto *round =
      reinterpret_cast<const std::uint16_t *>(back.bytes.data());
  for (int i = 0; i < 65536; ++i) {
    const double want = decode16(static_cast<std::uint16_t>(i), mantBits, bias);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(wide.at(i))) << i;
      EXPECT_TRUE(std::isnan(decode16(round[i], mantBits, bias))) << i;
      continue;
    }
    ASSERT_EQ(wide.at(i), want) << "pattern " << i;
    ASSERT_EQ(round[i], i) << "pattern " << i;
  }
  // Random floats over the whole range (subnormals, overflow, exact ties)
  // narrow to the nearest pattern, ties to even.
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> exp(-30, 20), tie(0, 3);
  Tensor f(DType::F32, {20000}), narrow(t, {20000});
  for (std::int64_t i = 0; i < f.size(); ++i) {
    double x =
        std::ldexp(mant(rng()), t == DType::F16 ? exp(rng()) : 4 * exp(rng()));
    const std::uint16_t near = encode16(x, mantBits, bias);
    const double next = decode16(near + 1, mantBits, bias);
    if (tie(rng()) == 0 && std::isfinite(next)) // halfway between neighbours
      x = (decode16(near, mantBits, bias) + next) / 2;
    f.set(i, i % 2 ? -x : x);
  }
  cast(f.ref(), narrow.ref());
  const auto *got =
      reinterpret_cast<const std::uint16_t *>(narrow.bytes.data());
  for (std::int64_t i = 0; i < f.size(); ++i)
    ASSERT_EQ(got[i], encode16(f.at(i), mantBits, bias)) << "value " << f.at(i);
}

TEST(KernelsTest, CastF16AndBF16RoundToNearestEven) {
  checkCast16(DType::F16, 10, 15);
  checkCast16(DType::BF16, 7, 127);

  // Integers and bools go through float.
  Tensor h(DType::F16, {4});
  auto *hb = reinterpret_cast<std::uint16_t *>(h.bytes.data());
  hb[0] = 0x3c00; // 1
  hb[1] = 0xc500; // -5
  hb[2] = 0x0000;
  hb[3] = 0x3a00; // 0.75
  Tensor hToI64(DType::I64, h.shape), hToBool(DType::Bool, h.shape);
  cast(h.ref(), hToI64.ref());
  cast(h.ref(), hToBool.ref());
  expectExact(hToI64, {1, -5, 0, 0});
  expectExact(hToBool, {1, 1, 0, 1});
  Tensor i = fromValues(DType::I64, {2}, {-3, 257});
  Tensor iToBf(DType::BF16, i.shape);
  cast(i.ref(), iToBf.ref());
  const auto *bf = reinterpret_cast<const std::uint16_t *>(iToBf.bytes.data());
  EXPECT_EQ(bf[0], 0xc040); // -3
  EXPECT_EQ(bf[1], 0x4380); // 257 rounds to 256 (tie, even)
}

TEST(KernelsTest, CopyCopiesBytes) {
  Tensor in = randomF32({3, 1000, 300});
  Tensor out(DType::F32, in.shape);
  copy(in.ref(), out.ref());
  EXPECT_EQ(in.bytes, out.bytes);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

void checkTranspose(const Tensor &in, const Shape &perm) {
  Shape shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    shape[i] = in.shape[perm[i]];
  Tensor out(in.dtype, shape);
  transpose(in.ref(), perm.data(), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    Shape src(perm.size());
    for (std::size_t d = 0; d < perm.size(); ++d)
      src[perm[d]] = index[d];
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < perm.size(); ++d)
      offset = offset * in.shape[d] + src[d];
    want[i] = in.at(offset);
  });
  expectExact(out, want);
}

TEST(KernelsTest, Transpose) {
  checkTranspose(randomF32({2, 3, 4, 5}), {0, 2, 1, 3});
  checkTranspose(randomF32({2, 3, 4, 5}), {3, 1, 2, 0});
  checkTranspose(randomF32({2, 3, 4, 5}), {0, 1, 3, 2});
  checkTranspose(randomInt(DType::I64, {5, 7}, -9, 9), {1, 0});
  checkTranspose(randomInt(DType::Bool, {3, 1, 4}, 0, 1), {2, 0, 1});
  checkTranspose(randomInt(DType::I32, {4}, -9, 9), {0});
  checkTranspose(randomF32({1, 128, 12, 64}), {0, 2, 1, 3});
  checkTranspose(randomF32({300, 200}), {1, 0});
}

void checkConcat(const std::vector<Tensor> &inputs, std::int64_t axis) {
  Shape shape = inputs[0].shape;
  shape[axis] = 0;
  for (const Tensor &t : inputs)
    shape[axis] += t.shape[axis];
  Tensor out(inputs[0].dtype, shape);
  std::vector<TensorRef> refs;
  for (const Tensor &t : inputs)
    refs.push_back(t.ref());
  concat(refs.data(), static_cast<int>(refs.size()), axis, out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    std::int64_t at = index[axis];
    std::size_t which = 0;
    while (at >= inputs[which].shape[axis])
      at -= inputs[which++].shape[axis];
    Shape src = index;
    src[axis] = at;
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < src.size(); ++d)
      offset = offset * inputs[which].shape[d] + src[d];
    want[i] = inputs[which].at(offset);
  });
  expectExact(out, want);
}

TEST(KernelsTest, Concat) {
  checkConcat({randomF32({2, 3, 4}), randomF32({1, 3, 4})}, 0);
  checkConcat(
      {randomF32({2, 3, 4}), randomF32({2, 1, 4}), randomF32({2, 2, 4})}, 1);
  checkConcat({randomInt(DType::I32, {2, 3, 1}, -9, 9),
               randomInt(DType::I32, {2, 3, 5}, -9, 9)},
              2);
  checkConcat(
      {randomInt(DType::I64, {3}, -9, 9), randomInt(DType::I64, {2}, -9, 9)},
      0);
  checkConcat({randomF32({1, 12, 100, 64}), randomF32({1, 12, 1, 64})}, 2);
}

void checkGather(const Tensor &data, const Tensor &indices, std::int64_t axis) {
  Shape shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  Tensor out(data.dtype, shape);
  gather(data.ref(), indices.ref(), axis, out.ref());
  const std::int64_t q = static_cast<std::int64_t>(indices.shape.size());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    std::int64_t flat = 0;
    for (std::int64_t d = 0; d < q; ++d)
      flat = flat * indices.shape[d] + index[axis + d];
    std::int64_t which = static_cast<std::int64_t>(indices.at(flat));
    if (which < 0)
      which += data.shape[axis];
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < data.shape.size(); ++d) {
      const std::int64_t id = static_cast<std::int64_t>(d) < axis ? index[d]
                              : static_cast<std::int64_t>(d) == axis
                                  ? which
                                  : index[d - 1 + q];
      offset = offset * data.shape[d] + id;
    }
    want[i] = data.at(offset);
  });
  expectExact(out, want);
}

TEST(KernelsTest, GatherWithNegativeIndices) {
  checkGather(randomF32({5, 3}), fromValues(DType::I64, {4}, {0, -1, 4, -5}),
              0);
  checkGather(randomF32({2, 6, 3}),
              fromValues(DType::I32, {2, 2}, {5, -6, 0, -2}), 1);
  checkGather(randomInt(DType::I64, {3, 4}, -9, 9),
              fromValues(DType::I64, {}, {-1}), 1);
  checkGather(randomInt(DType::Bool, {4, 2}, 0, 1),
              fromValues(DType::I64, {3}, {3, 3, 0}), 0);
}

TEST(KernelsTest, GatherOutOfRangeIsFatal) {
  useThreadsafeDeathTests();
  Tensor data = randomF32({5, 3});
  Tensor indices = fromValues(DType::I64, {2}, {0, 5});
  Tensor out(DType::F32, {2, 3});
  EXPECT_EXIT(gather(data.ref(), indices.ref(), 0, out.ref()),
              ::testing::ExitedWithCode(1), "gather: index 5 is outside");
}

/// gatherND against the definition, element by element.
void checkGatherND(const Tensor &data, const Tensor &indices,
                   std::int64_t batch) {
  const std::int64_t k = indices.shape.back();
  Shape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + batch + k, data.shape.end());
  Tensor out(data.dtype, shape);
  gatherND(data.ref(), indices.ref(), batch, out.ref());
  const std::int64_t q = static_cast<std::int64_t>(indices.shape.size());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    Shape at(index.begin(), index.begin() + batch);
    std::int64_t tuple = 0;
    for (std::int64_t d = 0; d < q - 1; ++d)
      tuple = tuple * indices.shape[d] + index[d];
    for (std::int64_t j = 0; j < k; ++j) {
      std::int64_t v = static_cast<std::int64_t>(indices.at(tuple * k + j));
      at.push_back(v < 0 ? v + data.shape[batch + j] : v);
    }
    at.insert(at.end(), index.begin() + (q - 1), index.end());
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < data.shape.size(); ++d)
      offset = offset * data.shape[d] + at[d];
    want[i] = data.at(offset);
  });
  expectExact(out, want);
}

TEST(KernelsTest, GatherNDTuplesBatchesAndNegativeIndices) {
  // Pairs indexing the first two dimensions, rows of the third kept.
  checkGatherND(randomF32({2, 3, 4}),
                fromValues(DType::I64, {3, 2}, {0, 1, 1, -1, -2, 0}), 0);
  // One batch dimension: each batch picks its own rows.
  checkGatherND(randomF32({2, 3, 4}),
                fromValues(DType::I32, {2, 2, 1}, {2, 0, -3, 1}), 1);
  // Full tuples (scalars out), and the padding-mask form PyTorch's exporter
  // writes: mask[batch_idx, kv_idx] over a grid of both.
  checkGatherND(randomInt(DType::I64, {2, 3}, -9, 9),
                fromValues(DType::I64, {2, 2}, {1, 2, 0, -1}), 0);
  std::vector<double> grid;
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 5; ++s) {
      grid.push_back(b);
      grid.push_back(s);
    }
  checkGatherND(randomInt(DType::Bool, {2, 5}, 0, 1),
                fromValues(DType::I64, {2, 5, 2}, grid), 0);
}

TEST(KernelsTest, GatherNDOutOfRangeIsFatal) {
  useThreadsafeDeathTests();
  Tensor data = randomF32({2, 3});
  Tensor indices = fromValues(DType::I64, {1, 2}, {1, 3});
  Tensor out(DType::F32, {1});
  EXPECT_EXIT(gatherND(data.ref(), indices.ref(), 0, out.ref()),
              ::testing::ExitedWithCode(1),
              "gather_nd: index 3 is outside \\[-3, 3\\) of dimension 1");
}

void checkSlice(const Tensor &in, const Shape &starts, const Shape &steps,
                const Shape &shape) {
  Tensor out(in.dtype, shape);
  slice(in.ref(), starts.data(), steps.data(), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < shape.size(); ++d)
      offset = offset * in.shape[d] + starts[d] + index[d] * steps[d];
    want[i] = in.at(offset);
  });
  expectExact(out, want);
}

TEST(KernelsTest, SliceWithStepsAndNegativeSteps) {
  Tensor in = randomF32({4, 5, 6});
  checkSlice(in, {0, 0, 0}, {1, 1, 1}, {4, 5, 6});
  checkSlice(in, {1, 0, 2}, {1, 1, 1}, {2, 5, 3});
  checkSlice(in, {0, 4, 5}, {2, -1, -2}, {2, 5, 3});
  checkSlice(in, {3, 1, 0}, {-1, 2, 3}, {4, 2, 2});
  checkSlice(randomInt(DType::I64, {10}, -9, 9), {9}, {-3}, {4});
  checkSlice(randomF32({1, 128, 2304}), {0, 0, 768}, {1, 1, 1}, {1, 128, 768});
}

void checkExpand(const Tensor &in, const Shape &shape) {
  Tensor out(in.dtype, shape);
  expand(in.ref(), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  forEachIndex(shape, [&](std::int64_t i, const Shape &index) {
    want[i] = in.at(broadcastOffset(index, in.shape));
  });
  expectExact(out, want);
}

TEST(KernelsTest, Expand) {
  checkExpand(randomF32({3, 1}), {2, 3, 4});
  checkExpand(fromValues(DType::F32, {}, {2.5}), {5});
  checkExpand(randomInt(DType::I64, {4}, -9, 9), {3, 4});
  checkExpand(randomInt(DType::Bool, {1, 1, 4, 1}, 0, 1), {2, 3, 4, 5});
  checkExpand(randomF32({1, 2, 1, 64, 16}), {1, 2, 4, 64, 16});
}

void checkTrilu(const Tensor &in, bool upper, std::int64_t diagonal) {
  Tensor out(in.dtype, in.shape);
  trilu(in.ref(), upper, diagonal, out.ref());
  const std::size_t rank = in.shape.size();
  std::vector<double> want = in.values();
  forEachIndex(in.shape, [&](std::int64_t i, const Shape &index) {
    const std::int64_t diff = index[rank - 1] - index[rank - 2];
    if (upper ? diff < diagonal : diff > diagonal)
      want[i] = 0;
  });
  expectExact(out, want);
}

TEST(KernelsTest, TriluUpperAndLower) {
  for (std::int64_t diagonal : {-6, -1, 0, 2, 7})
    for (bool upper : {false, true}) {
      checkTrilu(randomF32({2, 4, 5}), upper, diagonal);
      checkTrilu(randomInt(DType::Bool, {5, 3}, 1, 1), upper, diagonal);
      checkTrilu(randomInt(DType::I64, {3, 3}, 1, 9), upper, diagonal);
    }
}

/// cumSum against running sums in float64 along `axis`.
void checkCumSum(const Tensor &in, int axis, bool exclusive, bool reverse) {
  Tensor out(in.dtype, in.shape);
  cumSum(in.ref(), axis, exclusive, reverse, out.ref());
  std::int64_t n = in.shape[axis], inner = 1;
  for (std::size_t d = axis + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  const std::vector<double> x = in.values();
  std::vector<double> want(x.size());
  for (std::int64_t at = 0; at < static_cast<std::int64_t>(x.size()); ++at) {
    const std::int64_t i = at / inner % n, base = at - i * inner;
    double sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      const bool counted = reverse ? (exclusive ? j > i : j >= i)
                                   : (exclusive ? j < i : j <= i);
      if (counted)
        sum += x[base + j * inner];
    }
    want[at] = sum;
  }
  expectNear(out, want);
}

TEST(KernelsTest, CumSumEveryDirection) {
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      checkCumSum(randomInt(DType::I64, {2, 7}, 0, 1), 1, exclusive, reverse);
      checkCumSum(randomInt(DType::I32, {5, 3}, -9, 9), 0, exclusive, reverse);
      checkCumSum(randomF32({3, 6, 4}), 1, exclusive, reverse);
      checkCumSum(randomF32({300, 130}), 1, exclusive, reverse); // threaded
      checkCumSum(randomF32({4}), 0, exclusive, reverse);
    }
}

/// topK against a stable sort in float64 of each slice along `axis`: by
/// value (NaN above every number), then by position.
void checkTopK(const Tensor &in, int axis, std::int64_t k, bool largest) {
  Shape shape = in.shape;
  shape[axis] = k;
  Tensor values(in.dtype, shape), indices(DType::I64, shape);
  topK(in.ref(), axis, largest, values.ref(), indices.ref());
  std::int64_t n = in.shape[axis], inner = 1;
  for (std::size_t d = axis + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  const std::int64_t outer = in.size() / (n * inner);
  const std::vector<double> x = in.values();
  std::vector<double> wantValues(values.size()), wantIndices(values.size());
  auto above = [](double a, double b) {
    if (std::isnan(a))
      return !std::isnan(b);
    return !std::isnan(b) && a > b;
  };
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t e = 0; e < inner; ++e) {
      std::vector<std::int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      auto at = [&](std::int64_t i) { return x[(o * n + i) * inner + e]; };
      std::stable_sort(
          order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
            return largest ? above(at(a), at(b)) : above(at(b), at(a));
          });
      for (std::int64_t j = 0; j < k; ++j) {
        wantValues[(o * k + j) * inner + e] = at(order[j]);
        wantIndices[(o * k + j) * inner + e] = static_cast<double>(order[j]);
      }
    }
  expectExact(values, wantValues);
  expectExact(indices, wantIndices);
}

TEST(KernelsTest, TopKMatchesAStableSort) {
  for (bool largest : {true, false}) {
    checkTopK(randomF32({6, 8}), 1, 2, largest);    // a router's top 2
    checkTopK(randomF32({3, 7, 4}), 1, 3, largest); // a middle axis
    checkTopK(randomF32({5, 9}), 0, 5, largest);    // a sort of axis 0
    checkTopK(randomInt(DType::I64, {40}, 0, 3), 0, 40, largest); // ties
    checkTopK(randomInt(DType::I32, {4, 30}, -2, 2), 1, 7, largest);
    checkTopK(randomF32({200, 300}), 1, 70, largest); // threaded, K > 64
    checkTopK(fromValues(DType::F32, {6}, {1, NAN, 3, NAN, -1, 3}), 0, 6,
              largest);
  }
}

/// scatterND against writes (or, with `accumulate`, sums in tuple order)
/// into a float64 copy of `data`; the first `batch` dimensions are batch
/// dimensions (each tuple writes into its own batch).
void checkScatterND(const Tensor &data, const Tensor &indices,
                    const Tensor &updates, bool accumulate = false,
                    std::int64_t batch = 0) {
  Tensor out(data.dtype, data.shape);
  scatterND(data.ref(), indices.ref(), updates.ref(), accumulate, batch,
            out.ref());
  std::vector<double> want = data.values();
  const std::int64_t q = indices.shape.back();
  std::int64_t slice = 1, perBatch = 1;
  for (std::size_t d = batch + q; d < data.shape.size(); ++d)
    slice *= data.shape[d];
  for (std::size_t d = batch; d + 1 < indices.shape.size(); ++d)
    perBatch *= indices.shape[d];
  for (std::int64_t t = 0; t < indices.size() / q; ++t) {
    // The batch's coordinates, then the tuple's, as a data index.
    std::int64_t offset = 0, rest = t / perBatch;
    std::vector<std::int64_t> at(batch);
    for (std::int64_t d = batch - 1; d >= 0; --d) {
      at[d] = rest % data.shape[d];
      rest /= data.shape[d];
    }
    for (std::int64_t d = 0; d < batch; ++d)
      offset = offset * data.shape[d] + at[d];
    for (std::int64_t d = 0; d < q; ++d) {
      std::int64_t i = static_cast<std::int64_t>(indices.at(t * q + d));
      if (i < 0)
        i += data.shape[batch + d];
      offset = offset * data.shape[batch + d] + i;
    }
    offset *= slice;
    for (std::int64_t e = 0; e < slice; ++e)
      want[offset + e] = accumulate
                             ? want[offset + e] + updates.at(t * slice + e)
                             : updates.at(t * slice + e);
  }
  if (accumulate && data.dtype == DType::F32)
    expectNear(out, want);
  else
    expectExact(out, want);
}

TEST(KernelsTest, ScatterNDAccumulatesRepeatedIndices) {
  // A mixture of experts adding each expert's rows back at its tokens:
  // token 2 gets three rows, token 0 two.
  checkScatterND(randomF32({4, 6}),
                 fromValues(DType::I64, {6, 1}, {2, 0, 2, 3, 0, 2}),
                 randomF32({6, 6}), true);
  checkScatterND(randomInt(DType::I64, {3, 4}, -9, 9),
                 fromValues(DType::I64, {4, 2}, {1, 1, 1, 1, 0, 3, -1, 0}),
                 randomInt(DType::I64, {4}, 1, 5), true);
  checkScatterND(randomInt(DType::I32, {5}, 0, 3),
                 fromValues(DType::I64, {3, 1}, {4, 4, 4}),
                 randomInt(DType::I32, {3}, 1, 5), true);
}

TEST(KernelsTest, ScatterND) {
  // q = 2 of rank 3: rows of 6 elements; a negative index counts from the
  // end.
  checkScatterND(randomF32({4, 5, 6}),
                 fromValues(DType::I64, {2, 2}, {0, 1, -1, 4}),
                 randomF32({2, 6}));
  // q = 3: single elements (a KV-cache position write in i64).
  checkScatterND(randomInt(DType::I64, {2, 3, 4}, -9, 9),
                 fromValues(DType::I64, {1, 2, 3}, {1, 2, 3, 0, 0, 0}),
                 randomInt(DType::I64, {1, 2}, 10, 20));
  // q = 1: whole slabs.
  checkScatterND(randomF32({4, 3}), fromValues(DType::I64, {2, 1}, {2, 0}),
                 randomF32({2, 3}));
}

TEST(KernelsTest, ScatterNDWithBatchDimensions) {
  // batch_dims = 2 over [2, 3, 4, 5]: each of the 6 batches gets two rows
  // of 5, the same tuple values in every batch (so a kernel that ignored
  // the batch would write batch 0 only); one negative index.
  std::vector<double> rows;
  for (int b = 0; b < 6; ++b)
    rows.insert(rows.end(), {double(b % 4), -1});
  checkScatterND(randomF32({2, 3, 4, 5}),
                 fromValues(DType::I64, {2, 3, 2, 1}, rows),
                 randomF32({2, 3, 2, 5}), false, 2);
  // batch_dims = 1 with full tuples (q = 2, single elements), accumulating
  // a repeated tuple within a batch; i64 data.
  checkScatterND(randomInt(DType::I64, {3, 4, 2}, -9, 9),
                 fromValues(DType::I64, {3, 2, 2},
                            {0, 1, 0, 1, 3, 0, 2, 1, 1, 1, 3, 1}),
                 randomInt(DType::I64, {3, 2}, 1, 5), true, 1);
}

TEST(KernelsTest, ScatterNDOutOfRangeIsFatal) {
  useThreadsafeDeathTests();
  Tensor data = randomF32({4, 5});
  Tensor indices = fromValues(DType::I64, {1, 2}, {1, 5});
  Tensor updates = randomF32({1});
  Tensor out(DType::F32, data.shape);
  EXPECT_EXIT(
      scatterND(data.ref(), indices.ref(), updates.ref(), false, 0,
                out.ref()),
      ::testing::ExitedWithCode(1),
      "scatter_nd: index 5 is outside dimension 1 of size 5");
  // With a batch dimension, the dimension is named as data's.
  Tensor batched = fromValues(DType::I64, {4, 1}, {0, 4, 5, 1});
  EXPECT_EXIT(scatterND(data.ref(), batched.ref(), randomF32({4}).ref(), false,
                        1, out.ref()),
              ::testing::ExitedWithCode(1),
              "scatter_nd: index 5 is outside dimension 1 of size 5");
}

TEST(KernelsTest, EmbeddingWithNegativeIds) {
  Tensor table = randomF32({64, 16});
  for (DType idType : {DType::I64, DType::I32}) {
    Tensor ids = fromValues(idType, {2, 3}, {0, 63, -1, -64, 5, 5});
    Tensor out(DType::F32, {2, 3, 16});
    embedding(table.ref(), ids.ref(), out.ref());
    std::vector<double> want;
    for (std::int64_t i = 0; i < ids.size(); ++i) {
      std::int64_t id = static_cast<std::int64_t>(ids.at(i));
      if (id < 0)
        id += 64;
      for (std::int64_t h = 0; h < 16; ++h)
        want.push_back(table.at(id * 16 + h));
    }
    expectExact(out, want);
  }
}

TEST(KernelsTest, EmbeddingOutOfRangeIdIsFatal) {
  useThreadsafeDeathTests();
  Tensor table = randomF32({64, 8});
  Tensor ids = fromValues(DType::I64, {1, 2}, {3, 70});
  Tensor out(DType::F32, {1, 2, 8});
  EXPECT_EXIT(embedding(table.ref(), ids.ref(), out.ref()),
              ::testing::ExitedWithCode(1),
              "meshc: error: embedding: token id 70 is outside the table's "
              "64 rows");
  Tensor negative = fromValues(DType::I32, {1}, {-65});
  Tensor out1(DType::F32, {1, 8});
  EXPECT_EXIT(embedding(table.ref(), negative.ref(), out1.ref()),
              ::testing::ExitedWithCode(1),
              "embedding: token id -65 is outside the table's 64 rows");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

void checkReduce(ReduceOp op, const Tensor &in, const Shape &axes) {
  Shape kept = in.shape;
  std::int64_t count = 1;
  for (std::int64_t a : axes) {
    kept[a] = 1;
    count *= in.shape[a];
  }
  Tensor out(in.dtype, kept);
  reduce(op, in.ref(), axes.data(), static_cast<int>(axes.size()), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()),
                           op == ReduceOp::Max ? -kInf : 0.0);
  forEachIndex(in.shape, [&](std::int64_t i, const Shape &index) {
    double &slot = want[broadcastOffset(index, kept)];
    slot = op == ReduceOp::Max ? std::max(slot, in.at(i)) : slot + in.at(i);
  });
  if (op == ReduceOp::Mean)
    for (double &v : want)
      v = in.dtype == DType::F32 ? v / count : std::trunc(v / count);
  if (in.dtype == DType::F32)
    expectNear(out, want);
  else
    expectExact(out, want);
}

TEST(KernelsTest, ReduceOverOneOrSeveralAxes) {
  Tensor in = randomF32({2, 3, 4, 5});
  const Shape axesSets[] = {{3},    {1},    {0},       {0, 1},       {2, 3},
                            {0, 2}, {1, 3}, {0, 2, 3}, {0, 1, 2, 3}, {}};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max})
    for (const Shape &axes : axesSets) {
      SCOPED_TRACE(static_cast<int>(op));
      SCOPED_TRACE(axes.size());
      checkReduce(op, in, axes);
    }
}

TEST(KernelsTest, ReduceLargeAndInteger) {
  Tensor big = randomF32({64, 2048});
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
    checkReduce(op, big, {0});
    checkReduce(op, big, {1});
    checkReduce(op, big, {0, 1});
  }
  Tensor ints = randomInt(DType::I64, {3, 4, 5}, -100, 100);
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max}) {
    checkReduce(op, ints, {1});
    checkReduce(op, ints, {0, 2});
  }
  checkReduce(ReduceOp::Sum, randomInt(DType::I32, {6, 2}, -9, 9), {0});
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

void checkMatmul(const Tensor &a, const Tensor &b) {
  Shape as = a.shape, bs = b.shape;
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  const std::int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  const Shape aBatch(as.begin(), as.end() - 2),
      bBatch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcastShape(aBatch, bBatch);
  Shape outShape = batch;
  if (a.shape.size() > 1)
    outShape.push_back(m);
  if (b.shape.size() > 1)
    outShape.push_back(n);
  Tensor out(a.dtype, outShape);
  matmul(a.ref(), b.ref(), out.ref());
  std::vector<double> want(static_cast<std::size_t>(out.size()));
  const std::int64_t batches = numElementsOf(batch);
  forEachIndex(batch, [&](std::int64_t bi, const Shape &index) {
    const std::int64_t ao = broadcastOffset(index, aBatch) * m * k;
    const std::int64_t bo = broadcastOffset(index, bBatch) * k * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < k; ++l)
          sum += a.at(ao + i * k + l) * b.at(bo + l * n + j);
        want[(bi * m + i) * n + j] = sum;
      }
  });
  ASSERT_EQ(batches * m * n, out.size());
  if (a.dtype == DType::F32)
    expectNear(out, want);
  else
    expectExact(out, want);
}

TEST(KernelsTest, MatmulBatchesAndVectors) {
  checkMatmul(randomF32({3, 4}), randomF32({4, 5}));
  checkMatmul(randomF32({2, 3, 4}), randomF32({4, 5}));       // folded batch
  checkMatmul(randomF32({2, 1, 3, 4}), randomF32({3, 4, 5})); // broadcast
  checkMatmul(randomF32({1, 3, 4}), randomF32({2, 4, 5}));    // lhs shared
  checkMatmul(randomF32({4}), randomF32({2, 4, 5}));          // 1-D lhs
  checkMatmul(randomF32({2, 3, 4}), randomF32({4}));          // 1-D rhs
  checkMatmul(randomF32({4}), randomF32({4}));                // dot
  checkMatmul(randomF32({2, 12, 64, 32}), randomF32({2, 12, 32, 64}));
  checkMatmul(randomF32({2, 128, 96}), randomF32({2, 96, 128})); // split
  checkMatmul(randomInt(DType::I64, {2, 3, 4}, -9, 9),
              randomInt(DType::I64, {4, 2}, -9, 9));
  checkMatmul(randomInt(DType::I32, {3}, -9, 9),
              randomInt(DType::I32, {2, 3, 2}, -9, 9));
}

/// in . W + bias in float64 (W transposed: [n, k]).
std::vector<double> linearReference(const Tensor &in, const Tensor &weight,
                                    const Tensor *bias, bool transposeWeight) {
  const std::int64_t k = in.shape.back();
  const std::int64_t n = weight.shape[transposeWeight ? 0 : 1];
  const std::int64_t rows = in.size() / k;
  std::vector<double> want(static_cast<std::size_t>(rows * n));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias->at(j) : 0.0;
      for (std::int64_t i = 0; i < k; ++i)
        acc += in.at(r * k + i) *
               weight.at(transposeWeight ? j * k + i : i * n + j);
      want[r * n + j] = acc;
    }
  return want;
}

void checkLinear(const Tensor &in, const Tensor &weight, const Tensor *bias,
                 bool transposeWeight) {
  const std::int64_t n = weight.shape[transposeWeight ? 0 : 1];
  Shape shape = in.shape;
  shape.back() = n;
  Tensor out(DType::F32, shape);
  TensorRef biasRef;
  if (bias)
    biasRef = bias->ref();
  linear(in.ref(), weight.ref(), bias ? &biasRef : nullptr, transposeWeight,
         out.ref());
  expectNear(out, linearReference(in, weight, bias, transposeWeight));
}

TEST(KernelsTest, LinearWithAndWithoutTransposeAndBias) {
  Tensor in = randomF32({2, 5, 32});
  Tensor w = randomF32({32, 24}), wt = randomF32({24, 32});
  Tensor bias = randomF32({24});
  checkLinear(in, w, nullptr, false);
  checkLinear(in, w, &bias, false);
  checkLinear(in, wt, nullptr, true);
  checkLinear(in, wt, &bias, true);
  Tensor vec = randomF32({32});
  checkLinear(vec, w, &bias, false);
  // Past 2^20 multiply-adds a product is split over the OpenMP team: by
  // columns of C when N is the longer side, else by rows.
  Tensor big = randomF32({1, 128, 64});
  Tensor wBig = randomF32({64, 300}), bBig = randomF32({300});
  checkLinear(big, wBig, &bBig, false);
  Tensor wBigT = randomF32({300, 64});
  checkLinear(big, wBigT, &bBig, true);
  Tensor tall = randomF32({2, 400, 64});
  Tensor wNarrow = randomF32({64, 48}), bNarrow = randomF32({48});
  checkLinear(tall, wNarrow, &bNarrow, false);
  Tensor wNarrowT = randomF32({48, 64});
  checkLinear(tall, wNarrowT, nullptr, true);
}

// One row (a decoding step) goes to meshc's own kernels, not to sgemm: by a
// [k, n] weight the few-rows kernel, by an [n, k] one a dot product per
// output, serially and split over the OpenMP team by blocks of outputs past
// 2^20 multiply-adds (3000 outputs over the threads); matmul of one row too.
TEST(KernelsTest, OneRowProductsUseOwnKernels) {
  Tensor row = randomF32({1, 1, 32});
  Tensor w = randomF32({32, 24}), wt = randomF32({24, 32}), bias = randomF32({24});
  checkLinear(row, w, &bias, false);
  checkLinear(row, wt, nullptr, true);
  Tensor wide = randomF32({1, 1, 512});
  Tensor wWide = randomF32({512, 3000}), wWideT = randomF32({3000, 512});
  Tensor bWide = randomF32({3000});
  checkLinear(wide, wWide, &bWide, false);
  checkLinear(wide, wWideT, &bWide, true);
  checkMatmul(randomF32({1, 512}), randomF32({512, 3000}));
  checkMatmul(randomF32({2, 1, 64}), randomF32({2, 64, 40})); // per batch
}

/// `t` rounded to bf16 (--dtype bf16 stores products' weights so).
Tensor asBf16(const Tensor &t) {
  Tensor out(DType::BF16, t.shape);
  for (std::int64_t i = 0; i < t.size(); ++i)
    out.set(i, t.at(i));
  return out;
}

// --dtype bf16 on the cpu target: a product's weight in bf16, widened as it
// is read; the float64 reference multiplies by the same bf16 values, so the
// tolerance is f32's. One row (multiplied as loaded, split over threads by
// runs of rows past 2^20 multiply-adds), several rows (the weight widened a block of columns
// at a time: k = 256 gives blocks of 4096, so 9000 columns take three), both
// layouts, with and without bias; matmul folded and per batch; embedding.
TEST(KernelsTest, Bf16WeightsAreWidenedAsRead) {
  Tensor bias = randomF32({9000});
  for (std::int64_t rows : {1, 5}) {
    Tensor in = randomF32({1, rows, 256});
    checkLinear(in, asBf16(randomF32({256, 9000})), &bias, false);
    checkLinear(in, asBf16(randomF32({9000, 256})), nullptr, true);
  }
  Tensor small = randomF32({2, 3, 32});
  checkLinear(small, asBf16(randomF32({32, 24})), nullptr, false);
  checkLinear(randomF32({1, 1, 512}), asBf16(randomF32({3000, 512})), nullptr,
              true);
  checkMatmul(randomF32({2, 3, 64}), asBf16(randomF32({64, 40})));
  checkMatmul(randomF32({1, 64}), asBf16(randomF32({64, 40})));
  checkMatmul(randomF32({2, 3, 64}), asBf16(randomF32({2, 64, 40})));

  Tensor table = asBf16(randomF32({64, 16}));
  Tensor ids = fromValues(DType::I64, {2, 2}, {0, 63, -1, 7});
  Tensor out(DType::F32, {2, 2, 16});
  embedding(table.ref(), ids.ref(), out.ref());
  std::vector<double> want;
  for (std::int64_t i = 0; i < ids.size(); ++i) {
    std::int64_t id = static_cast<std::int64_t>(ids.at(i));
    for (std::int64_t h = 0; h < 16; ++h)
      want.push_back(table.at((id < 0 ? id + 64 : id) * 16 + h));
  }
  expectExact(out, want);
}

// A one-row product over a [k, n] weight, past 2^20 multiply-adds, is split
// over threads by runs of at least 64 of the weight's rows, whose partial
// sums are added after (by columns when k has fewer than two runs). With
// many threads and a k they do not divide, no run may be empty or stale:
// 40 threads over k = 768 (12 runs), k = 130 (2 runs), k = 100 (columns),
// in f32 and in bf16, twice each (the second reuses the partial sums'
// buffer of the first).
TEST(KernelsTest, OneRowProductsSplitByRowRunsOnManyThreads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(40);
  for (int round = 0; round < 2; ++round)
    for (std::int64_t k : {768, 130, 100}) {
      Tensor in = randomF32({1, 1, k}), bias = randomF32({20000});
      Tensor w = randomF32({k, 20000});
      checkLinear(in, w, &bias, false);
      checkLinear(in, asBf16(w), nullptr, false);
    }
  omp_set_num_threads(before);
}

// Products of 2 to 8 rows by a [k, n] weight, f32 or bf16 (a small batch's
// decoding step), and of one row by a bf16 one, go to the few-rows kernel,
// whose weight-row runs are split over the threads and summed after (split
// by columns where the weight has too few rows for a run per thread);
// against float64, with and without a bias, on one thread and on many (more
// threads than runs), sizes that leave remainders of rows (k mod 8), of
// register strips (n mod 32 and 64) and of column blocks.
TEST(KernelsTest, FewRowProductsMatchFloat64) {
  const int before = omp_get_max_threads();
  for (int threads : {1, 2, 40}) {
    omp_set_num_threads(threads);
    for (std::int64_t rows : {1, 2, 3, 5, 8})
      for (std::int64_t k : {100, 130, 771})
        for (std::int64_t n : {70, 2050, 12007}) {
          if (k * n > 771 * 2050)
            continue;
          Tensor in = randomF32({1, rows, k}), bias = randomF32({n});
          Tensor w = randomF32({k, n});
          checkLinear(in, w, &bias, false);
          checkLinear(in, w, nullptr, false);
          checkLinear(in, asBf16(w), &bias, false);
        }
  }
  omp_set_num_threads(before);
}

/// linear with options against float64: out = binary(unary(in . W + bias),
/// other) for the options' unary and binary ops.
void checkLinearEpilogue(const Tensor &in, const Tensor &weight,
                         const Tensor *bias, bool transposeWeight,
                         LinearOptions options, const Tensor *other) {
  const std::int64_t n = weight.shape[transposeWeight ? 0 : 1];
  Shape shape = in.shape;
  shape.back() = n;
  Tensor out(DType::F32, shape);
  TensorRef biasRef, otherRef;
  if (bias)
    biasRef = bias->ref();
  if (other)
    otherRef = other->ref();
  options.other = other ? &otherRef : nullptr;
  linear(in.ref(), weight.ref(), bias ? &biasRef : nullptr, transposeWeight,
         options, out.ref());
  auto unary = [&](double x) {
    switch (options.unary) {
    case UnaryOp::GeluTanh:
      return 0.5 * x *
             (1.0 +
              std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case UnaryOp::Gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case UnaryOp::Silu:
      return x / (1.0 + std::exp(-x));
    default:
      ADD_FAILURE() << "no float64 reference for this unary op";
      return x;
    }
  };
  std::vector<double> want = linearReference(in, weight, bias, transposeWeight);
  for (std::size_t e = 0; e < want.size(); ++e) {
    double &acc = want[e];
    if (options.hasUnary)
      acc = unary(acc);
    if (other)
      acc = options.binary == BinaryOp::Mul ? acc * other->at(e)
                                            : acc + other->at(e);
  }
  expectNear(out, want);
}

// The cpu target's fused linear: bias, activation and a residual's add or a
// gate's multiply in the pass after the product (inside the pass that sums
// the partial products of one and of a few rows), on every product path:
// one row (serial sgemv, and split into runs of weight rows), a few rows,
// sgemm, bf16 weights, and a transposed program weight repacked for
// oneDNN's matmul primitive; on one thread and on two.
TEST(KernelsTest, LinearEpiloguesMatchFloat64) {
  const int before = omp_get_max_threads();
  struct Case {
    bool hasUnary;
    UnaryOp unary;
    bool other;
    BinaryOp binary;
  };
  const Case cases[] = {{true, UnaryOp::GeluTanh, false, BinaryOp::Add},
                        {true, UnaryOp::Gelu, true, BinaryOp::Add},
                        {true, UnaryOp::Silu, true, BinaryOp::Mul},
                        {false, UnaryOp::Neg, true, BinaryOp::Add}};
  // Program weights stay at their addresses for the process's life.
  static std::deque<Tensor> kept;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (std::int64_t rows : {1, 4, 40})
      for (auto [k, n] :
           {std::pair<std::int64_t, std::int64_t>{32, 24}, {256, 3000}}) {
        Tensor in = randomF32({1, rows, k}), bias = randomF32({n});
        Tensor other = randomF32({1, rows, n});
        Tensor w = randomF32({k, n});
        kept.push_back(randomF32({n, k}));
        const Tensor &wt = kept.back();
        for (const Case &c : cases) {
          LinearOptions options;
          options.hasUnary = c.hasUnary;
          options.unary = c.unary;
          options.binary = c.binary;
          const Tensor *o = c.other ? &other : nullptr;
          checkLinearEpilogue(in, w, &bias, false, options, o);
          checkLinearEpilogue(in, w, nullptr, false, options, o);
          checkLinearEpilogue(in, asBf16(w), &bias, false, options, o);
          checkLinearEpilogue(in, wt, &bias, true, options, o);
          options.constantWeight = true;
          checkLinearEpilogue(in, wt, &bias, true, options, o);
        }
        // The plain linear of a repacked weight adds its bias after.
        LinearOptions packed;
        packed.constantWeight = true;
        checkLinearEpilogue(in, wt, &bias, true, packed, nullptr);
        checkLinearEpilogue(in, wt, nullptr, true, packed, nullptr);
      }
  }
  omp_set_num_threads(before);
  // 4 and 40 rows of the 3000 x 256 weight, on each thread count; none of
  // one row, nor of the small weights (too few multiply-adds).
  EXPECT_EQ(meshc::rt::cpu::detail::packedWeightCount(), 4u);
}

//===----------------------------------------------------------------------===//
// Attention and rotary
//===----------------------------------------------------------------------===//

struct AttentionCase {
  std::int64_t batch = 1, heads = 2, kvHeads = 2, seq = 3, past = 0, newKv = 3,
               dim = 8, vDim = 8;
  bool causal = false;
  /// Added to keys past the causal limit (a finite fill: HF's finfo.min).
  float causalFill = -std::numeric_limits<float>::infinity();
  float softcap = 0.0f;
  bool softcapFirst = false; // Gemma-2's order: softcap, then the mask
  /// The mask: none, bool or f32, of this shape.
  DType maskType = DType::F32;
  Shape maskShape;
  /// With an f32 mask [batch, 1, 1, total]: HF's left-padding mask, 0 or
  /// finfo.min, the first leftPad[b] keys of batch row b masked (the
  /// queries before them see no key).
  std::vector<std::int64_t> leftPad;
  /// Masks out whole query rows (bool masks: every key false of a row).
  bool maskWholeRows = false;
  /// > 0: the KV cache in place (`meshc generate`): the past sits at the
  /// start of buffers of this many positions per head, the new keys and
  /// values are appended there, and no present is written.
  std::int64_t cacheCapacity = 0;
  /// Non-empty: past_lengths, each batch row's history (at most `past`):
  /// its new keys and values go there, and its causal limit counts from it.
  std::vector<std::int64_t> pastLengths;
  /// Attention sinks, one score per query head in the softmax's denominator.
  bool sinks = false;
};

/// Runs attention on random inputs and compares with a float64 reference:
/// the mask and the causal limit (j > i + past is -inf, or the causal fill
/// added in place of the mask's value), then softcap (ONNX's order; before the
/// mask with softcapFirst), then softmax; a row whose keys are all masked by
/// -inf is zeros. A finite value is added as f32 arithmetic adds it (rounded to
/// f32, so finfo.min absorbs the score). With sinks, each head's sink joins the
/// softmax's denominator.
void checkAttention(const AttentionCase &c) {
  const std::int64_t total = c.past + c.newKv;
  Tensor q = randomF32({c.batch, c.heads, c.seq, c.dim}, -2, 2);
  Tensor k = randomF32({c.batch, c.kvHeads, c.newKv, c.dim}, -2, 2);
  Tensor v = randomF32({c.batch, c.kvHeads, c.newKv, c.vDim});
  Tensor pk = randomF32({c.batch, c.kvHeads, c.past, c.dim}, -2, 2);
  Tensor pv = randomF32({c.batch, c.kvHeads, c.past, c.vDim});
  Tensor presentK(DType::F32, {c.batch, c.kvHeads, total, c.dim});
  Tensor presentV(DType::F32, {c.batch, c.kvHeads, total, c.vDim});
  Tensor mask;
  const bool hasMask = !c.maskShape.empty();
  if (hasMask) {
    if (c.maskType == DType::Bool) {
      mask = randomInt(DType::Bool, c.maskShape, 0, 1);
      if (c.maskWholeRows) // clear the first query row of every mask matrix
        forEachIndex(c.maskShape, [&](std::int64_t i, const Shape &index) {
          if (index[index.size() - 2] == 0)
            mask.set(i, 0);
        });
    } else if (!c.leftPad.empty()) {
      mask = Tensor(DType::F32, c.maskShape);
      forEachIndex(c.maskShape, [&](std::int64_t i, const Shape &index) {
        mask.set(i, index.back() < c.leftPad[index[0]]
                        ? std::numeric_limits<float>::lowest()
                        : 0.0f);
      });
    } else {
      mask = randomF32(c.maskShape, -3, 1);
    }
  }
  Tensor out(DType::F32, {c.batch, c.heads, c.seq, c.vDim});
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  TensorRef maskRef = mask.ref(), pkRef = pk.ref(), pvRef = pv.ref(),
            presentKRef = presentK.ref(), presentVRef = presentV.ref();
  const bool hasPast = c.past > 0 || c.cacheCapacity > 0;
  const bool rowPasts = !c.pastLengths.empty();
  Tensor lengths(DType::I64, {c.batch});
  for (std::int64_t b = 0; rowPasts && b < c.batch; ++b)
    lengths.set(b, static_cast<double>(c.pastLengths[b]));
  TensorRef lengthsRef = lengths.ref();
  Tensor sinks = randomF32({c.heads}, -1, 3);
  TensorRef sinksRef = sinks.ref();
  // Row b's history: its past_lengths, else the whole past.
  auto pastOf = [&](std::int64_t b) {
    return rowPasts ? c.pastLengths[b] : c.past;
  };
  // The in-place cache: the past copied to the start of each head's
  // capacity, the past operands viewing those buffers.
  const std::int64_t capacity = c.cacheCapacity;
  Tensor cacheK, cacheV;
  auto toCache = [&](const Tensor &past, std::int64_t d, Tensor &cache,
                     TensorRef &ref) {
    cache = Tensor(DType::F32, {c.batch, c.kvHeads, capacity, d});
    for (std::int64_t bh = 0; bh < c.batch * c.kvHeads; ++bh)
      for (std::int64_t i = 0; i < c.past * d; ++i)
        cache.set(bh * capacity * d + i, past.at(bh * c.past * d + i));
    ref = cache.ref();
    ref.shape[2] = c.past;
  };
  if (capacity > 0) {
    toCache(pk, c.dim, cacheK, pkRef);
    toCache(pv, c.vDim, cacheV, pvRef);
  }
  attention(q.ref(), k.ref(), v.ref(), hasMask ? &maskRef : nullptr,
            hasPast ? &pkRef : nullptr, hasPast ? &pvRef : nullptr, scale,
            c.causal, c.causalFill, c.softcap, c.softcapFirst, out.ref(),
            hasPast ? &presentKRef : nullptr, hasPast ? &presentVRef : nullptr,
            capacity, rowPasts ? &lengthsRef : nullptr,
            c.sinks ? &sinksRef : nullptr);

  // K = past ++ key, V likewise (row b's first pastOf(b) past positions,
  // then its new ones, then zeros; a negative pastOf(b) drops that many new
  // ones).
  auto join = [&](const Tensor &old, const Tensor &fresh, std::int64_t d) {
    std::vector<double> joined;
    for (std::int64_t bh = 0; bh < c.batch * c.kvHeads; ++bh) {
      const std::int64_t kept = pastOf(bh / c.kvHeads);
      for (std::int64_t i = 0; i < kept * d; ++i)
        joined.push_back(old.at(bh * c.past * d + i));
      for (std::int64_t i = std::max<std::int64_t>(-kept, 0) * d;
           i < c.newKv * d; ++i)
        joined.push_back(fresh.at(bh * c.newKv * d + i));
      joined.resize(static_cast<std::size_t>((bh + 1) * total * d), 0.0);
    }
    return joined;
  };
  const std::vector<double> kk = join(pk, k, c.dim), vv = join(pv, v, c.vDim);
  if (capacity > 0) {
    // The cache holds past ++ new at the start of each head's capacity
    // (under past_lengths, the row's history and its new positions; what
    // follows them is not compared: the causal limit never reads it).
    auto prefix = [&](const Tensor &cache, const std::vector<double> &want,
                      std::int64_t d) {
      Tensor held(DType::F32, {c.batch, c.kvHeads, total, d});
      std::vector<double> expected(want);
      for (std::int64_t bh = 0; bh < c.batch * c.kvHeads; ++bh)
        for (std::int64_t i = 0; i < total * d; ++i) {
          const bool written = i < (pastOf(bh / c.kvHeads) + c.newKv) * d;
          held.set(bh * total * d + i,
                   written ? cache.at(bh * capacity * d + i) : 0.0);
          if (!written)
            expected[bh * total * d + i] = 0.0;
        }
      expectExact(held, expected);
    };
    prefix(cacheK, kk, c.dim);
    prefix(cacheV, vv, c.vDim);
  } else if (hasPast) {
    expectExact(presentK, kk);
    expectExact(presentV, vv);
  }
  std::vector<double> want(static_cast<std::size_t>(out.size()), 0.0);
  const std::int64_t group = c.heads / c.kvHeads;
  std::vector<double> s(static_cast<std::size_t>(total));
  for (std::int64_t b = 0; b < c.batch; ++b)
    for (std::int64_t h = 0; h < c.heads; ++h)
      for (std::int64_t i = 0; i < c.seq; ++i) {
        const std::int64_t kvh = h / group;
        double maxScore = -kInf;
        for (std::int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < c.dim; ++d)
            dot += q.at(((b * c.heads + h) * c.seq + i) * c.dim + d) *
                   kk[((b * c.kvHeads + kvh) * total + j) * c.dim + d];
          double score = static_cast<double>(scale) * dot;
          if (c.softcap > 0 && c.softcapFirst)
            score = c.softcap * std::tanh(score / c.softcap);
          auto add = [&](double m) {
            score = std::isfinite(m) && m != 0
                        ? static_cast<float>(score + m)
                        : score + m;
          };
          const bool future = c.causal && j > i + pastOf(b);
          if (future && std::isfinite(c.causalFill)) {
            add(c.causalFill); // in place of the mask's value
          } else {
            if (hasMask) {
              const double m =
                  mask.at(broadcastOffset({b, h, i, j}, c.maskShape));
              add(c.maskType == DType::Bool ? (m != 0 ? 0.0 : -kInf) : m);
            }
            if (future)
              score = -kInf;
          }
          if (c.softcap > 0 && !c.softcapFirst)
            score = c.softcap * std::tanh(score / c.softcap);
          s[j] = score;
          maxScore = std::max(maxScore, score);
        }
        if (maxScore == -kInf)
          continue; // a fully masked row gives zeros
        const double sink = c.sinks ? sinks.at(h) : -kInf;
        maxScore = std::max(maxScore, sink);
        double denom = std::exp(sink - maxScore);
        for (double &x : s)
          denom += (x = std::exp(x - maxScore));
        for (std::int64_t j = 0; j < total; ++j)
          for (std::int64_t d = 0; d < c.vDim; ++d)
            want[((b * c.heads + h) * c.seq + i) * c.vDim + d] +=
                s[j] / denom *
                vv[((b * c.kvHeads + kvh) * total + j) * c.vDim + d];
      }
  expectNear(out, want);
}

TEST(KernelsTest, AttentionPlain) {
  AttentionCase c;
  checkAttention(c);
  c.vDim = 5; // value width differs from the key width
  checkAttention(c);
}

// dfg.attention's past_lengths (GroupQueryAttention's per-row history):
// rows with 0, some and all of the past's positions, one and several new
// tokens (and a prefill's 40), with a bool mask beside (a sliding window),
// into the presents
// (zeros after each row's new positions) and in place.
TEST(KernelsTest, AttentionWithPastLengths) {
  AttentionCase c;
  c.batch = 3;
  c.heads = 4;
  c.kvHeads = 2;
  c.past = 5;
  c.causal = true;
  c.pastLengths = {0, 3, 5};
  for (std::int64_t seq : {1, 3, 40}) { // 40: the prefill's sgemm path
    c.seq = c.newKv = seq;
    c.maskShape.clear();
    c.cacheCapacity = 0;
    checkAttention(c);
    c.cacheCapacity = 5 + seq + 2;
    checkAttention(c);
    c.cacheCapacity = 0;
    c.maskType = DType::Bool;
    c.maskShape = {3, 1, seq, 5 + seq};
    checkAttention(c);
  }
  // Left-padded rows (onnxruntime-genai's prompts): a negative history, down
  // to -seq, drops the row's first new tokens, whose queries see no key.
  c.maskShape.clear();
  for (std::int64_t seq : {3, 40}) {
    c.seq = c.newKv = seq;
    c.pastLengths = {-2, 0, -seq};
    c.cacheCapacity = 0;
    checkAttention(c);
    c.cacheCapacity = 5 + seq;
    checkAttention(c);
  }
}

TEST(KernelsTest, AttentionGroupedQueryWithPastAndCausal) {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.seq = 2;
  c.past = 3;
  c.newKv = 2;
  c.causal = true;
  checkAttention(c);
  c.kvHeads = 1; // multi-query
  checkAttention(c);
  c.seq = 1; // decode: one new token
  c.newKv = 1;
  c.past = 7;
  checkAttention(c);
}

TEST(KernelsTest, AttentionFloatMask) {
  AttentionCase c;
  c.batch = 2;
  c.seq = 4;
  c.newKv = 4;
  c.maskShape = {2, 1, 4, 4}; // broadcast over heads
  checkAttention(c);
  c.causal = true;
  c.maskShape = {4}; // a key-padding bias broadcast to every row
  checkAttention(c);
}

TEST(KernelsTest, AttentionBoolMaskAndFullyMaskedRows) {
  AttentionCase c;
  c.heads = 4;
  c.kvHeads = 2;
  c.seq = 3;
  c.past = 2;
  c.newKv = 3;
  c.maskType = DType::Bool;
  c.maskShape = {3, 5};
  checkAttention(c);
  c.maskWholeRows = true; // query 0 sees no key: its output is zeros
  c.causal = true;
  checkAttention(c);
}

/// HF's causal and padding mask raised: causal with finfo.min as the fill,
/// the padding mask 0 / finfo.min. A query before the padding ends sees no
/// key: onnxruntime's softmax spreads it over every key, future ones
/// included, and so must the kernel (which skips the future keys of every
/// other row), on the direct-product and the sgemm paths.
TEST(KernelsTest, AttentionCausalFillSpreadsFullyMaskedRows) {
  AttentionCase c;
  c.batch = 2;
  c.heads = 4;
  c.kvHeads = 2;
  c.seq = c.newKv = 6;
  c.causal = true;
  c.causalFill = std::numeric_limits<float>::lowest();
  c.maskShape = {2, 1, 1, 6};
  c.leftPad = {3, 0};
  checkAttention(c);
  c.softcap = 0.5f; // Gemma-2: capped, then masked
  c.softcapFirst = true;
  checkAttention(c);
  c.softcapFirst = false; // ONNX's order: every key scored anyway
  checkAttention(c);
  c.softcap = 0.0f;
  c.seq = c.newKv = 40; // prefill through the sgemm path, with a past
  c.past = 4;
  c.maskShape = {2, 1, 1, 44};
  c.leftPad = {11, 37};
  checkAttention(c);
  c.maskType = DType::Bool; // a row masked by -inf: the fill's keys only
  c.leftPad.clear();
  c.maskWholeRows = true;
  c.maskShape = {2, 1, 40, 44};
  checkAttention(c);
}

TEST(KernelsTest, AttentionSoftcap) {
  AttentionCase c;
  c.seq = 4;
  c.newKv = 4;
  c.softcap = 0.5f;
  checkAttention(c);
  c.causal = true;
  c.maskType = DType::Bool;
  c.maskShape = {1, 1, 4, 4};
  checkAttention(c);
}

TEST(KernelsTest, AttentionSoftcapBeforeMask) {
  AttentionCase c;
  c.seq = 4;
  c.newKv = 4;
  c.softcap = 0.5f;
  c.softcapFirst = true;
  c.causal = true; // masked keys excluded, not scored -softcap
  checkAttention(c);
  c.maskShape = {1, 1, 4, 4}; // an additive mask after the cap
  checkAttention(c);
  c.maskType = DType::Bool;
  c.maskWholeRows = true;
  checkAttention(c);
  c.heads = 4; // prefill through the sgemm path, with a past
  c.kvHeads = 2;
  c.seq = c.newKv = 40;
  c.past = 5;
  c.maskShape = {45};
  c.maskWholeRows = false;
  checkAttention(c);
}

TEST(KernelsTest, AttentionCacheInPlace) {
  // A prefill into an empty cache, a decoding step and a few tokens at a
  // time, with GQA, a mask and the causal limit, on both kernel paths.
  AttentionCase c;
  c.heads = 4;
  c.kvHeads = 2;
  c.causal = true;
  c.cacheCapacity = 12;
  c.seq = c.newKv = 5; // prefill, past 0
  checkAttention(c);
  c.past = 5;
  c.seq = c.newKv = 1; // decode
  c.maskShape = {1, 1, 1, 6};
  checkAttention(c);
  c.past = 8;
  c.seq = c.newKv = 4; // fills the cache exactly
  c.maskShape = {};
  checkAttention(c);
  c.cacheCapacity = 100; // the sgemm path
  c.past = 30;
  c.seq = c.newKv = 40;
  c.maskShape = {70};
  c.maskType = DType::Bool;
  checkAttention(c);
}

TEST(KernelsTest, AttentionLongSequencesUseGemm) {
  AttentionCase c;
  c.batch = 1;
  c.heads = 4;
  c.kvHeads = 2;
  c.seq = 80;
  c.newKv = 80;
  c.dim = 16;
  c.vDim = 12;
  c.causal = true;
  checkAttention(c);
  c.maskShape = {1, 1, 80, 80};
  checkAttention(c);
  c.maskType = DType::Bool;
  c.maskShape = {80};
  c.past = 10;
  c.seq = 70;
  c.newKv = 70;
  c.softcap = 2.0f;
  checkAttention(c);
}

TEST(KernelsTest, AttentionSinks) {
  AttentionCase c;
  c.sinks = true;
  c.heads = 4;
  c.kvHeads = 2;
  checkAttention(c);
  c.causal = true; // gpt-oss: causal, HF's padding mask filled with finfo.min
  c.batch = 2;
  c.seq = c.newKv = 6;
  c.causalFill = std::numeric_limits<float>::lowest();
  c.maskShape = {2, 1, 1, 6};
  c.leftPad = {3, 0}; // padding queries: the sink outweighs every key
  checkAttention(c);
  c.causalFill = -std::numeric_limits<float>::infinity();
  c.maskType = DType::Bool; // fully masked rows: zeros, sink or not
  c.leftPad.clear();
  c.maskWholeRows = true;
  c.maskShape = {2, 1, 6, 6};
  checkAttention(c);
  c.maskShape.clear();
  c.maskWholeRows = false;
  c.past = 4; // a decoding step with a past, and the in-place cache
  c.seq = c.newKv = 1;
  checkAttention(c);
  c.cacheCapacity = 8;
  checkAttention(c);
  c.cacheCapacity = 0;
  c.past = 10; // prefill through the sgemm path
  c.seq = c.newKv = 40;
  checkAttention(c);
}

struct RotaryCase {
  std::int64_t batch = 2, heads = 3, seq = 4, dim = 8, rotaryDim = 8;
  bool interleaved = false;
  bool withPositions = false;
  bool sharedTable = false;
  std::int64_t maxPositions = 10;
};

void checkRotary(const RotaryCase &c) {
  const std::int64_t half = c.rotaryDim / 2;
  Tensor in = randomF32({c.batch, c.heads, c.seq, c.dim});
  Shape tableShape = c.withPositions
                         ? Shape{c.maxPositions, half}
                         : Shape{c.sharedTable ? 1 : c.batch, c.seq, half};
  Tensor cos = randomF32(tableShape), sin = randomF32(tableShape);
  Tensor positions = randomInt(DType::I64, {c.batch, c.seq}, 0,
                               static_cast<int>(c.maxPositions - 1));
  TensorRef positionsRef = positions.ref();
  Tensor out(DType::F32, in.shape);
  rotary(in.ref(), cos.ref(), sin.ref(),
         c.withPositions ? &positionsRef : nullptr, c.interleaved, c.rotaryDim,
         out.ref());
  std::vector<double> want = in.values();
  for (std::int64_t b = 0; b < c.batch; ++b)
    for (std::int64_t h = 0; h < c.heads; ++h)
      for (std::int64_t s = 0; s < c.seq; ++s) {
        const std::int64_t row =
            c.withPositions
                ? static_cast<std::int64_t>(positions.at(b * c.seq + s))
                : (c.sharedTable ? 0 : b) * c.seq + s;
        const std::int64_t base = ((b * c.heads + h) * c.seq + s) * c.dim;
        for (std::int64_t i = 0; i < half; ++i) {
          const std::int64_t x0 = c.interleaved ? 2 * i : i;
          const std::int64_t x1 = c.interleaved ? 2 * i + 1 : i + half;
          const double cv = cos.at(row * half + i), sv = sin.at(row * half + i);
          want[base + x0] = in.at(base + x0) * cv - in.at(base + x1) * sv;
          want[base + x1] = in.at(base + x1) * cv + in.at(base + x0) * sv;
        }
      }
  expectNear(out, want);
}

TEST(KernelsTest, RotaryWithAndWithoutPositions) {
  for (bool interleaved : {false, true}) {
    RotaryCase c;
    c.interleaved = interleaved;
    checkRotary(c); // per-batch tables
    c.sharedTable = true;
    checkRotary(c); // one [1, seq, half] table
    c.withPositions = true;
    checkRotary(c);  // cos/sin caches indexed by position
    c.rotaryDim = 4; // features 4..7 pass through
    checkRotary(c);
    c.withPositions = false;
    checkRotary(c);
  }
  RotaryCase big;
  big.batch = 1;
  big.heads = 12;
  big.seq = 128;
  big.dim = 64;
  big.rotaryDim = 32;
  big.withPositions = true;
  big.maxPositions = 256;
  checkRotary(big);
}

TEST(KernelsTest, RotaryPositionOutsideTheCacheIsFatal) {
  useThreadsafeDeathTests();
  Tensor in = randomF32({1, 1, 2, 4});
  Tensor cos = randomF32({3, 2}), sin = randomF32({3, 2});
  Tensor positions = fromValues(DType::I64, {1, 2}, {0, 3});
  TensorRef positionsRef = positions.ref();
  Tensor out(DType::F32, in.shape);
  EXPECT_EXIT(rotary(in.ref(), cos.ref(), sin.ref(), &positionsRef, false, 4,
                     out.ref()),
              ::testing::ExitedWithCode(1),
              "rotary: position 3 is outside the cos/sin cache of 3");
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

struct NormCase {
  Shape shape{2, 3, 16};
  std::int64_t axis = 2;
  Shape scaleShape{16};
  bool withBias = false, withResidual = false, rms = false;
};

void checkNorm(const NormCase &c) {
  Tensor in = randomF32(c.shape, -2, 3);
  Tensor scale = randomF32(c.scaleShape, 0.5, 1.5);
  Tensor bias = randomF32(c.scaleShape);
  Tensor residual = randomF32(c.shape);
  Tensor out(DType::F32, c.shape), sum(DType::F32, c.shape);
  TensorRef biasRef = bias.ref(), residualRef = residual.ref(),
            sumRef = sum.ref();
  const float epsilon = 1e-5f;
  auto *norm = c.rms ? &rmsNorm : &layerNorm;
  norm(in.ref(), scale.ref(), c.withBias ? &biasRef : nullptr,
       c.withResidual ? &residualRef : nullptr, c.axis, epsilon, out.ref(),
       c.withResidual ? &sumRef : nullptr);
  // x = in + residual, rounded to f32 as the unfused add would be.
  std::vector<double> x = in.values();
  if (c.withResidual) {
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(x[i] + residual.at(i));
    expectExact(sum, x);
  }
  const Shape tail(c.shape.begin() + c.axis, c.shape.end());
  const std::int64_t inner = numElementsOf(tail);
  std::vector<double> want(x.size());
  for (std::int64_t o = 0; o < in.size() / inner; ++o) {
    double mean = 0, sq = 0;
    for (std::int64_t i = 0; i < inner; ++i)
      mean += x[o * inner + i];
    mean /= inner;
    for (std::int64_t i = 0; i < inner; ++i) {
      const double d = c.rms ? x[o * inner + i] : x[o * inner + i] - mean;
      sq += d * d;
    }
    const double inv = 1 / std::sqrt(sq / inner + epsilon);
    forEachIndex(tail, [&](std::int64_t i, const Shape &index) {
      double y = (c.rms ? x[o * inner + i] : x[o * inner + i] - mean) * inv *
                 scale.at(broadcastOffset(index, c.scaleShape));
      if (c.withBias)
        y += bias.at(broadcastOffset(index, c.scaleShape));
      want[o * inner + i] = y;
    });
  }
  expectNear(out, want);
}

TEST(KernelsTest, LayerNormWithBiasResidualAndSeveralAxes) {
  NormCase c;
  checkNorm(c);
  c.withBias = true;
  checkNorm(c);
  c.withResidual = true;
  checkNorm(c);
  c.axis = 1; // normalise [3, 16] with a [16] scale broadcast over it
  checkNorm(c);
  c.scaleShape = {3, 16};
  checkNorm(c);
  NormCase big;
  big.shape = {1, 128, 768};
  big.scaleShape = {768};
  big.withBias = true;
  big.withResidual = true;
  checkNorm(big);
}

TEST(KernelsTest, RmsNormWithAndWithoutBiasAndResidual) {
  NormCase c;
  c.rms = true;
  checkNorm(c);
  c.withResidual = true;
  checkNorm(c);
  c.withBias = true;
  checkNorm(c);
  c.axis = 1;
  checkNorm(c);
  NormCase big;
  big.rms = true;
  big.shape = {2, 64, 512};
  big.axis = 2;
  big.scaleShape = {512};
  big.withResidual = true;
  checkNorm(big);
}

void checkSoftmax(const Tensor &in, std::int64_t axis) {
  Tensor out(DType::F32, in.shape);
  softmax(in.ref(), axis, out.ref());
  const std::int64_t n = in.shape[axis];
  std::int64_t inner = 1;
  for (std::size_t d = axis + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  const std::int64_t outer = in.size() / (n * inner);
  std::vector<double> want(static_cast<std::size_t>(in.size()));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      auto at = [&](std::int64_t k) { return (o * n + k) * inner + i; };
      double m = -kInf, denom = 0;
      for (std::int64_t k = 0; k < n; ++k)
        m = std::max(m, in.at(at(k)));
      for (std::int64_t k = 0; k < n; ++k)
        denom += std::exp(in.at(at(k)) - m);
      for (std::int64_t k = 0; k < n; ++k)
        want[at(k)] = std::exp(in.at(at(k)) - m) / denom;
    }
  expectNear(out, want);
}

TEST(KernelsTest, SoftmaxAlongAnyAxis) {
  Tensor in = randomF32({2, 3, 5}, -5, 5);
  checkSoftmax(in, 2);
  checkSoftmax(in, 1);
  checkSoftmax(in, 0);
  checkSoftmax(randomF32({12, 64, 64}, -10, 10), 2);
  checkSoftmax(randomF32({4, 256, 64}, -10, 10), 1);
}

TEST(KernelsTest, HalfPrecisionIsRefusedOnTheCpu) {
  useThreadsafeDeathTests();
  Tensor in(DType::F16, {4});
  Tensor out(DType::F16, {4});
  EXPECT_EXIT(unary(UnaryOp::Exp, in.ref(), out.ref()),
              ::testing::ExitedWithCode(1),
              "element type f16 is not supported");
}

} // namespace
