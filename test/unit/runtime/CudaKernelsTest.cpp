//===- CudaKernelsTest.cpp - The CUDA kernels against the CPU kernels -----===//
//
// Part of meshc. Every kernel of runtime/include/meshc/runtime/cuda_kernels.h
// on random inputs drawn with a fixed seed, compared with the CPU kernel of
// the same name (kernels.h) on the same values. f16 and bf16 inputs are
// drawn representable in their type; the CPU kernel, which computes in f32,
// gets them widened, and its result is rounded to the type before the
// comparison. Shapes cover broadcasting, odd sizes that leave partial tiles
// and warps, both paths of the row kernels (a warp per row up to 1024
// elements, a block beyond), the tiled transpose, matmul's folded, strided
// and looped batches, and attention's prefill (flash) and decode (split
// keys) kernels with grouped heads, a KV cache, causal, bool and float
// masks, fully masked rows and a softcap. Without a usable CUDA GPU every
// kernel test is skipped; the tests of the harness itself (DeviceTensor's
// refusal of a host tensor whose bytes disagree with its shape, the parsing
// of MESHC_CUDA_GEMM) run anyway. Under MESHC_CUDA_GEMM=fallback the float
// matmul and linear tests check meshc's own GEMM kernel instead of cuBLASLt
// (docs/testing.md).
//
// Tolerances, |got - want| <= atol + rtol * |want| (NaN matches NaN):
//   - data movement, integer and bool results, casts and comparisons:
//     exact;
//   - f32: rtol 1e-4, atol 1e-5 (GEMMs and reductions sum in another order;
//     CUDA's expf, erff, tanhf and powf are within a few ulps of glibc's and
//     of the CPU's fastExp; inputs in [-1, 1] and GEMM depths K <= 96 keep
//     the absolute error of sums that cancel to near zero below 1e-5);
//   - f16: rtol 2e-3, atol 1e-4 (both sides round an f32 value that may
//     differ in its last bits, so near a rounding boundary they can be one
//     f16 ulp, 2^-10 relative, apart);
//   - bf16: rtol 1.6e-2, atol 1e-3 (likewise with bf16's 2^-7).
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/kernels.h"
#include "runtime/cuda/CudaDevice.h"
#include "test/unit/runtime/HostTensor.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace meshc::rt;
namespace cpu = meshc::rt::cpu;
namespace gpu = meshc::rt::cuda;

namespace {

using meshc::test::broadcastShape;
using meshc::test::HostTensor;
using meshc::test::numElementsOf;
using meshc::test::Shape;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// `t`'s values in dtype `to` (rounded when narrowing floats).
HostTensor convert(const HostTensor &t, DType to) {
  HostTensor out(to, t.shape);
  for (std::int64_t i = 0; i < t.size(); ++i)
    out.set(i, t.at(i));
  return out;
}

/// f16/bf16 tensors widened to f32 for the CPU kernels; others unchanged.
HostTensor forCpu(const HostTensor &t) {
  return t.dtype == DType::F16 || t.dtype == DType::BF16
             ? convert(t, DType::F32)
             : t;
}

std::mt19937 &rng() {
  static std::mt19937 engine(20250611);
  return engine;
}

/// Floats uniform in [lo, hi) (rounded to the dtype), integers uniform in
/// [lo, hi], bools 0/1.
HostTensor randomTensor(DType t, Shape shape, double lo = -1.0,
                        double hi = 1.0) {
  HostTensor h(t, std::move(shape));
  for (std::int64_t i = 0; i < h.size(); ++i) {
    if (isFloat(t)) {
      std::uniform_real_distribution<double> dist(lo, hi);
      h.set(i, dist(rng()));
    } else if (t == DType::Bool) {
      h.set(i, std::uniform_int_distribution<int>(0, 1)(rng()));
    } else {
      std::uniform_int_distribution<std::int64_t> dist(
          static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
      h.set(i, static_cast<double>(dist(rng())));
    }
  }
  return h;
}

void cudaOrDie(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "CudaKernelsTest: %s: %s\n", what,
                 cudaGetErrorString(status));
    std::abort();
  }
}

/// Why `h` cannot be uploaded: its bytes disagree with its shape's element
/// count times its element type's width; empty when they agree. A default
/// HostTensor (shape {}: one element, no bytes) is such a tensor: it once
/// stood for an absent attention mask and was uploaded from a null pointer.
/// Host-only, so that a test checks it without a GPU.
std::string uploadProblem(const HostTensor &h) {
  const std::int64_t elements = numElementsOf(h.shape);
  const std::size_t want =
      elements < 0 ? 0
                   : static_cast<std::size_t>(elements) * byteWidth(h.dtype);
  if (elements >= 0 && h.bytes.size() == want)
    return {};
  return "a host tensor of shape " + shapeString(h.shape) + " and type " +
         dtypeName(h.dtype) + " must hold " + std::to_string(want) +
         " bytes, not " + std::to_string(h.bytes.size()) +
         " (an absent operand takes no device tensor)";
}

/// `h`, unless uploadProblem finds it inconsistent: then the test binary
/// stops with the reason, instead of copying from a short or null buffer.
const HostTensor &checkedForUpload(const HostTensor &h) {
  const std::string problem = uploadProblem(h);
  if (!problem.empty()) {
    std::fprintf(stderr, "CudaKernelsTest: DeviceTensor: %s\n",
                 problem.c_str());
    std::abort();
  }
  return h;
}

/// A device tensor. A fresh one is filled with 0xff bytes (NaN in every
/// float type, -1 in the integers) so that elements a kernel forgets to
/// write show up. Uploads wait for the device, since the kernels run on the
/// runtime's own stream; a host tensor whose bytes disagree with its shape
/// is refused before anything is allocated (checkedForUpload).
class DeviceTensor {
public:
  DeviceTensor(DType t, Shape s)
      : dtype(t), shape(std::move(s)),
        bytes(static_cast<std::size_t>(numElementsOf(shape)) * byteWidth(t)) {
    if (bytes == 0)
      return;
    cudaOrDie(cudaMalloc(&data, bytes), "cudaMalloc");
    cudaOrDie(cudaMemset(data, 0xff, bytes), "cudaMemset");
    cudaOrDie(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  explicit DeviceTensor(const HostTensor &h)
      : DeviceTensor(checkedForUpload(h).dtype, h.shape) {
    if (bytes == 0)
      return;
    cudaOrDie(cudaMemcpy(data, h.bytes.data(), bytes, cudaMemcpyHostToDevice),
              "cudaMemcpy");
    cudaOrDie(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  ~DeviceTensor() {
    if (data)
      cudaFree(data);
  }

  TensorRef ref() const {
    TensorRef r;
    r.data = data;
    r.dtype = dtype;
    r.rank = static_cast<int>(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i)
      r.shape[i] = shape[i];
    return r;
  }

  /// Waits for the kernels (a recorded device error is fatal there) and
  /// copies the tensor back.
  HostTensor download() const {
    gpu::synchronize("test");
    HostTensor h(dtype, shape);
    if (bytes)
      cudaOrDie(cudaMemcpy(h.bytes.data(), data, bytes, cudaMemcpyDeviceToHost),
                "cudaMemcpy");
    return h;
  }

private:
  DType dtype;
  Shape shape;
  std::size_t bytes;
  void *data = nullptr;
};

struct Tolerance {
  double rtol, atol;
};
constexpr Tolerance kExact{0.0, 0.0};

Tolerance tolerance(DType t) {
  switch (t) {
  case DType::F32:
    return {1e-4, 1e-5};
  case DType::F16:
    return {2e-3, 1e-4};
  case DType::BF16:
    return {1.6e-2, 1e-3};
  default:
    return kExact;
  }
}

/// Checks `got` against `want` element by element; reports the first few
/// mismatches, naming `what`.
void expectNear(const HostTensor &got, const HostTensor &want, Tolerance tol,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(got.dtype, want.dtype) << what;
  int failures = 0;
  for (std::int64_t i = 0; i < got.size() && failures < 5; ++i) {
    const double g = got.at(i), w = want.at(i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    if (std::isinf(w) && g == w)
      continue;
    if (!(std::abs(g - w) <= tol.atol + tol.rtol * std::abs(w))) {
      ADD_FAILURE() << what << ": element " << i << ": got " << g << ", want "
                    << w;
      ++failures;
    }
  }
}

/// Data movement: the bytes must be identical.
void expectSameBytes(const HostTensor &got, const HostTensor &want,
                     const std::string &what) {
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  const std::size_t width = byteWidth(got.dtype);
  for (std::size_t i = 0; i < got.bytes.size(); ++i)
    if (got.bytes[i] != want.bytes[i]) {
      ADD_FAILURE() << what << ": element " << i / width << " differs (got "
                    << got.at(static_cast<std::int64_t>(i / width)) << ", want "
                    << want.at(static_cast<std::int64_t>(i / width)) << ")";
      return;
    }
}

/// The CPU's f32 result `want` in the dtype of the GPU's result, compared
/// with that dtype's tolerance (exact for non-floats).
void expectMatchesCpu(const HostTensor &got, const HostTensor &want,
                      const std::string &what) {
  const HostTensor rounded =
      want.dtype == got.dtype ? want : convert(want, got.dtype);
  expectNear(got, rounded, tolerance(got.dtype), what);
}

/// f16/bf16 operands that may be absent, widened for the CPU kernels.
std::optional<HostTensor> forCpu(const std::optional<HostTensor> &t) {
  if (!t)
    return std::nullopt;
  return forCpu(*t);
}

/// The device copy of an operand that may be absent: none for an absent one.
std::unique_ptr<DeviceTensor> upload(const std::optional<HostTensor> &t) {
  return t ? std::make_unique<DeviceTensor>(*t) : nullptr;
}

/// The TensorRef of a HostTensor or DeviceTensor that may be absent (an
/// optional or a pointer); a kernel takes a null `const TensorRef *` for an
/// absent operand (refPointer).
template <typename Holder> std::optional<TensorRef> refOf(const Holder &t) {
  if (!t)
    return std::nullopt;
  return t->ref();
}
const TensorRef *refPointer(const std::optional<TensorRef> &r) {
  return r ? &*r : nullptr;
}

//===----------------------------------------------------------------------===//
// The test harness itself (no GPU needed)
//===----------------------------------------------------------------------===//

TEST(DeviceTensorUpload, HostBytesMustMatchTheShape) {
  EXPECT_EQ(uploadProblem(HostTensor(DType::F16, {2, 3})), "");
  EXPECT_EQ(uploadProblem(HostTensor(DType::Bool, {0, 4})), "");
  EXPECT_EQ(uploadProblem(HostTensor(DType::I64, {})), ""); // a scalar
  // A default HostTensor: shape {} is one element, but it has no bytes.
  const std::string absent = uploadProblem(HostTensor());
  EXPECT_NE(absent.find("shape [] and type f32 must hold 4 bytes, not 0"),
            std::string::npos)
      << absent;
  HostTensor shortOne(DType::I32, {3, 2});
  shortOne.bytes.resize(20);
  const std::string truncated = uploadProblem(shortOne);
  EXPECT_NE(truncated.find("must hold 24 bytes, not 20"), std::string::npos)
      << truncated;
  HostTensor negative(DType::F32, {});
  negative.shape = {-1, 2};
  EXPECT_NE(uploadProblem(negative), "");
}

// Refused before any CUDA call, so this runs without a GPU too. The death
// tests re-run the binary ("threadsafe") instead of forking it: a library
// linked in has already started a second thread, and gtest warns that a fork
// of a threaded process is unsafe.
TEST(DeviceTensorUploadDeathTest, RefusesAHostTensorWithoutItsBytes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(DeviceTensor{HostTensor()},
               "DeviceTensor: a host tensor of shape \\[\\] and type f32 "
               "must hold 4 bytes, not 0");
}

TEST(GemmPath, ParsesMeshcCudaGemm) {
  EXPECT_EQ(gpu::parseGemmPath(nullptr), gpu::GemmPath::CublasLt);
  EXPECT_EQ(gpu::parseGemmPath(""), gpu::GemmPath::CublasLt);
  EXPECT_EQ(gpu::parseGemmPath("cublaslt"), gpu::GemmPath::CublasLt);
  EXPECT_EQ(gpu::parseGemmPath("fallback"), gpu::GemmPath::Fallback);
}

TEST(GemmPathDeathTest, AnUnknownValueIsFatalNamingTheAcceptedOnes) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(gpu::parseGemmPath("cutlass"), ::testing::ExitedWithCode(1),
              "MESHC_CUDA_GEMM=cutlass is not understood: accepted values are "
              "'cublaslt' .* and 'fallback'");
}

//===----------------------------------------------------------------------===//
// The kernels (each test skips itself without a GPU)
//===----------------------------------------------------------------------===//

class CudaKernelsTest : public ::testing::Test {
protected:
  void SetUp() override {
    static const bool usable = [] {
      int count = 0;
      return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    }();
    if (!usable)
      GTEST_SKIP() << "no usable CUDA GPU";
    static const bool ready = [] {
      gpu::initDevice(0, 1);
      return true;
    }();
    (void)ready;
  }
};

constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

bool isComparison(gpu::BinaryOp op) {
  return op == gpu::BinaryOp::Equal || op == gpu::BinaryOp::Less ||
         op == gpu::BinaryOp::Greater || op == gpu::BinaryOp::LessOrEqual ||
         op == gpu::BinaryOp::GreaterOrEqual;
}

void checkBinary(gpu::BinaryOp op, const HostTensor &a, const HostTensor &b) {
  const Shape outShape = broadcastShape(a.shape, b.shape);
  const bool boolResult =
      isComparison(op) || op == gpu::BinaryOp::And || op == gpu::BinaryOp::Or;
  const DType outType = boolResult ? DType::Bool : a.dtype;
  const HostTensor a32 = forCpu(a), b32 = forCpu(b);
  HostTensor want(boolResult ? DType::Bool : a32.dtype, outShape);
  cpu::binary(static_cast<cpu::BinaryOp>(op), a32.ref(), b32.ref(), want.ref());
  const DeviceTensor da(a), db(b);
  DeviceTensor out(outType, outShape);
  gpu::binary(op, da.ref(), db.ref(), out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("binary ") +
                       std::to_string(static_cast<int>(op)) + " " +
                       dtypeName(a.dtype) + " " + shapeString(a.shape) +
                       " with " + shapeString(b.shape));
}

const std::vector<std::pair<Shape, Shape>> kBinaryShapes = {
    {{3, 5, 7}, {3, 5, 7}}, {{3, 1, 7}, {5, 1}},
    {{2, 3, 4, 5}, {}},     {{}, {4}},
    {{64, 129}, {129}},     {{5, 1, 3}, {1, 4, 1}}};

TEST_F(CudaKernelsTest, BinaryArithmeticOnEveryType) {
  const gpu::BinaryOp ops[] = {gpu::BinaryOp::Add, gpu::BinaryOp::Sub,
                               gpu::BinaryOp::Mul, gpu::BinaryOp::Div,
                               gpu::BinaryOp::Pow, gpu::BinaryOp::Min,
                               gpu::BinaryOp::Max};
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                         DType::I32};
  for (DType t : types)
    for (gpu::BinaryOp op : ops)
      for (const auto &[sa, sb] : kBinaryShapes) {
        HostTensor a, b;
        if (op == gpu::BinaryOp::Pow) {
          a = isFloat(t) ? randomTensor(t, sa, 0.1, 2.0)
                         : randomTensor(t, sa, -3, 3);
          b = isFloat(t) ? randomTensor(t, sb, -2.0, 2.0)
                         : randomTensor(t, sb, 0, 4);
        } else {
          a = isFloat(t) ? randomTensor(t, sa) : randomTensor(t, sa, -50, 50);
          b = isFloat(t) ? randomTensor(t, sb) : randomTensor(t, sb, -50, 50);
        }
        if (op == gpu::BinaryOp::Div) // keep divisors away from zero
          for (std::int64_t i = 0; i < b.size(); ++i)
            if (std::abs(b.at(i)) < 0.125)
              b.set(i, 1 + (i % 3));
        checkBinary(op, a, b);
      }
}

TEST_F(CudaKernelsTest, BitwiseOnIntegers) {
  const gpu::BinaryOp ops[] = {gpu::BinaryOp::BitwiseAnd,
                               gpu::BinaryOp::BitwiseOr,
                               gpu::BinaryOp::BitwiseXor};
  for (DType t : {DType::I64, DType::I32})
    for (gpu::BinaryOp op : ops)
      for (const auto &[sa, sb] : kBinaryShapes)
        checkBinary(op, randomTensor(t, sa, -1000, 1000),
                    randomTensor(t, sb, -1000, 1000));
}

TEST_F(CudaKernelsTest, IntegerDivisionTruncatesTowardZero) {
  HostTensor a(DType::I64, {6}), b(DType::I64, {6});
  const double as[] = {7, -7, 7, -7, 0, -9};
  const double bs[] = {2, 2, -2, -2, 3, -1};
  for (int i = 0; i < 6; ++i) {
    a.set(i, as[i]);
    b.set(i, bs[i]);
  }
  checkBinary(gpu::BinaryOp::Div, a, b);
  checkBinary(gpu::BinaryOp::Div, convert(a, DType::I32),
              convert(b, DType::I32));
}

TEST_F(CudaKernelsTest, ComparisonsAndLogic) {
  const gpu::BinaryOp ops[] = {
      gpu::BinaryOp::Equal, gpu::BinaryOp::Less, gpu::BinaryOp::Greater,
      gpu::BinaryOp::LessOrEqual, gpu::BinaryOp::GreaterOrEqual};
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::I64,
                         DType::I32};
  for (DType t : types)
    for (gpu::BinaryOp op : ops)
      for (const auto &[sa, sb] : kBinaryShapes) {
        // Few distinct values, so that Equal is sometimes true.
        HostTensor a = randomTensor(t, sa, -2, 2),
                   b = randomTensor(t, sb, -2, 2);
        if (isFloat(t))
          for (std::int64_t i = 0; i < a.size(); ++i)
            a.set(i, std::round(a.at(i)));
        if (isFloat(t))
          for (std::int64_t i = 0; i < b.size(); ++i)
            b.set(i, std::round(b.at(i)));
        checkBinary(op, a, b);
      }
  for (gpu::BinaryOp op : {gpu::BinaryOp::And, gpu::BinaryOp::Or})
    for (const auto &[sa, sb] : kBinaryShapes)
      checkBinary(op, randomTensor(DType::Bool, sa),
                  randomTensor(DType::Bool, sb));
}

TEST_F(CudaKernelsTest, UnaryOps) {
  const gpu::UnaryOp ops[] = {
      gpu::UnaryOp::Sqrt,    gpu::UnaryOp::Reciprocal, gpu::UnaryOp::Neg,
      gpu::UnaryOp::Silu,    gpu::UnaryOp::Erf,        gpu::UnaryOp::Tanh,
      gpu::UnaryOp::Sigmoid, gpu::UnaryOp::Exp,        gpu::UnaryOp::Cos,
      gpu::UnaryOp::Sin,     gpu::UnaryOp::Gelu,       gpu::UnaryOp::GeluTanh,
      gpu::UnaryOp::Log,     gpu::UnaryOp::Floor,      gpu::UnaryOp::Ceil,
      gpu::UnaryOp::Round,   gpu::UnaryOp::Tan,        gpu::UnaryOp::Asin,
      gpu::UnaryOp::Acos,    gpu::UnaryOp::Atan,       gpu::UnaryOp::Sinh,
      gpu::UnaryOp::Cosh,    gpu::UnaryOp::Asinh,      gpu::UnaryOp::Acosh,
      gpu::UnaryOp::Atanh};
  for (DType t : kFloatTypes)
    for (gpu::UnaryOp op : ops) {
      // Inside each function's domain, away from poles and branch points.
      double lo = -4.0, hi = 4.0;
      if (op == gpu::UnaryOp::Sqrt || op == gpu::UnaryOp::Reciprocal ||
          op == gpu::UnaryOp::Log)
        lo = 0.25;
      else if (op == gpu::UnaryOp::Asin || op == gpu::UnaryOp::Acos ||
               op == gpu::UnaryOp::Atanh)
        lo = -0.99, hi = 0.99;
      else if (op == gpu::UnaryOp::Acosh)
        lo = 1.01;
      else if (op == gpu::UnaryOp::Tan)
        lo = -1.4, hi = 1.4;
      const HostTensor x = randomTensor(t, {7, 131}, lo, hi);
      const HostTensor x32 = forCpu(x);
      HostTensor want(DType::F32, x.shape);
      cpu::unary(static_cast<cpu::UnaryOp>(op), x32.ref(), want.ref());
      const DeviceTensor dx(x);
      DeviceTensor out(t, x.shape);
      gpu::unary(op, dx.ref(), out.ref());
      expectMatchesCpu(out.download(), want,
                       std::string("unary ") +
                           std::to_string(static_cast<int>(op)) + " " +
                           dtypeName(t));
    }
  for (DType t : {DType::I64, DType::I32, DType::Bool}) {
    const gpu::UnaryOp op =
        t == DType::Bool ? gpu::UnaryOp::Not : gpu::UnaryOp::Neg;
    HostTensor x = randomTensor(t, {3, 50}, -1000, 1000);
    if (t == DType::I32)
      x.set(0, std::numeric_limits<std::int32_t>::min()); // wraps
    HostTensor want(t, x.shape);
    cpu::unary(static_cast<cpu::UnaryOp>(op), x.ref(), want.ref());
    const DeviceTensor dx(x);
    DeviceTensor out(t, x.shape);
    gpu::unary(op, dx.ref(), out.ref());
    expectSameBytes(out.download(), want, std::string("unary ") + dtypeName(t));
  }
}

TEST_F(CudaKernelsTest, WhereOnEveryWidth) {
  for (DType t : {DType::Bool, DType::F16, DType::F32, DType::I64}) {
    const HostTensor cond = randomTensor(DType::Bool, {4, 1});
    const HostTensor a = randomTensor(t, {3, 4, 5}, -9, 9);
    const HostTensor b = randomTensor(t, {5}, -9, 9);
    HostTensor want(t, {3, 4, 5});
    cpu::where(cond.ref(), a.ref(), b.ref(), want.ref());
    const DeviceTensor dc(cond), da(a), db(b);
    DeviceTensor out(t, {3, 4, 5});
    gpu::where(dc.ref(), da.ref(), db.ref(), out.ref());
    expectSameBytes(out.download(), want, std::string("where ") + dtypeName(t));
  }
}

/// Values of each dtype that exercise a cast: signs, fractions, ties,
/// out-of-range magnitudes, NaN and infinities.
HostTensor castSource(DType t) {
  std::vector<double> v;
  if (isFloat(t))
    v = {0.0,   -0.0,  0.5,  -0.5,    1.5,     -2.5, 3.75,
         1e10,  -1e10, 3e9,  70000.0, 65520.0, 1e-8, -7.9,
         255.5, kNaN,  kInf, -kInf,   123.456, -1e-3};
  else if (t == DType::Bool)
    v = {0, 1, 1, 0};
  else if (t == DType::I32)
    v = {0,         1,     -1,      7, -300, 2147483647.0, -2147483648.0,
         123456789, 65519, 16777217};
  else
    v = {0,         1,     -1,      7, -300, 1099511627776.0, -1099511627776.0,
         123456789, 65519, 16777217};
  HostTensor h(t, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i)
    h.set(static_cast<std::int64_t>(i), v[i]);
  return h;
}

TEST_F(CudaKernelsTest, CastBetweenEveryPairOfTypes) {
  const DType all[] = {DType::F32, DType::F16, DType::BF16,
                       DType::I64, DType::I32, DType::Bool};
  for (DType from : all)
    for (DType to : all) {
      const HostTensor x = castSource(from);
      HostTensor want(to, x.shape);
      cpu::cast(x.ref(), want.ref());
      const DeviceTensor dx(x);
      DeviceTensor out(to, x.shape);
      gpu::cast(dx.ref(), out.ref());
      // By value: NaN matches NaN whatever its payload.
      expectNear(out.download(), want, kExact,
                 std::string("cast ") + dtypeName(from) + " to " +
                     dtypeName(to));
    }
}

TEST_F(CudaKernelsTest, CopyIotaAndFillIntegers) {
  const HostTensor x = randomTensor(DType::F16, {5, 77});
  const DeviceTensor dx(x);
  DeviceTensor out(DType::F16, {5, 77});
  gpu::copy(dx.ref(), out.ref());
  expectSameBytes(out.download(), x, "copy");

  for (DType t : {DType::I64, DType::I32}) {
    HostTensor want(t, {100});
    cpu::iota(want.ref(), -3, 2);
    DeviceTensor got(t, {100});
    gpu::iota(got.ref(), -3, 2);
    expectSameBytes(got.download(), want, "iota");

    // More values than one launch carries.
    std::vector<std::int64_t> values(70);
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<std::int64_t>(i * i) - 40;
    HostTensor wantFill(t, {70});
    cpu::fillIntegers(wantFill.ref(), values.data(), 70);
    DeviceTensor fill(t, {70});
    gpu::fillIntegers(fill.ref(), values.data(), 70);
    values.assign(values.size(), 0); // the kernel must not read them later
    expectSameBytes(fill.download(), wantFill, "fillIntegers");
  }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

TEST_F(CudaKernelsTest, Transpose) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4, 5}, {0, 2, 1, 3}}, // inner dimension stays contiguous
      {{37, 45}, {1, 0}},           // tiled, partial tiles
      {{3, 33, 65}, {0, 2, 1}},     // tiled with a batch
      {{4, 5, 6}, {2, 0, 1}},       {{2, 3, 4, 5}, {3, 1, 2, 0}},
      {{70, 1, 40}, {2, 1, 0}}};
  for (DType t : {DType::Bool, DType::F16, DType::F32, DType::I64})
    for (const auto &[shape, perm] : cases) {
      const HostTensor x = randomTensor(t, shape, -100, 100);
      Shape outShape;
      for (std::int64_t p : perm)
        outShape.push_back(shape[p]);
      HostTensor want(t, outShape);
      cpu::transpose(x.ref(), perm.data(), want.ref());
      const DeviceTensor dx(x);
      DeviceTensor out(t, outShape);
      gpu::transpose(dx.ref(), perm.data(), out.ref());
      expectSameBytes(out.download(), want,
                      std::string("transpose ") + dtypeName(t) + " " +
                          shapeString(shape) + " by " + shapeString(perm));
    }
}

TEST_F(CudaKernelsTest, Concat) {
  for (DType t : {DType::Bool, DType::BF16, DType::I32, DType::I64})
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<HostTensor> parts;
      Shape outShape = {2, 3, 5};
      outShape[axis] = 0;
      for (std::int64_t extent : {1, 4, 3}) {
        Shape s = {2, 3, 5};
        s[axis] = extent;
        outShape[axis] += extent;
        parts.push_back(randomTensor(t, s, -100, 100));
      }
      std::vector<TensorRef> hostRefs;
      std::vector<std::unique_ptr<DeviceTensor>> device;
      std::vector<TensorRef> deviceRefs;
      for (const HostTensor &p : parts) {
        hostRefs.push_back(p.ref());
        device.push_back(std::make_unique<DeviceTensor>(p));
        deviceRefs.push_back(device.back()->ref());
      }
      HostTensor want(t, outShape);
      cpu::concat(hostRefs.data(), 3, axis, want.ref());
      DeviceTensor out(t, outShape);
      gpu::concat(deviceRefs.data(), 3, axis, out.ref());
      expectSameBytes(out.download(), want,
                      std::string("concat ") + dtypeName(t) + " axis " +
                          std::to_string(axis));
    }
}

TEST_F(CudaKernelsTest, GatherWithNegativeIndices) {
  const Shape dataShape = {5, 6, 7};
  for (DType t : {DType::F32, DType::F16, DType::I64})
    for (DType it : {DType::I64, DType::I32})
      for (int axis = 0; axis < 3; ++axis) {
        const HostTensor data = randomTensor(t, dataShape, -100, 100);
        const std::int64_t dim = dataShape[axis];
        const HostTensor indices = randomTensor(it, {2, 3}, -dim, dim - 1);
        Shape outShape;
        for (int d = 0; d < axis; ++d)
          outShape.push_back(dataShape[d]);
        outShape.insert(outShape.end(), {2, 3});
        for (int d = axis + 1; d < 3; ++d)
          outShape.push_back(dataShape[d]);
        HostTensor want(t, outShape);
        cpu::gather(data.ref(), indices.ref(), axis, want.ref());
        const DeviceTensor dd(data), di(indices);
        DeviceTensor out(t, outShape);
        gpu::gather(dd.ref(), di.ref(), axis, out.ref());
        expectSameBytes(out.download(), want,
                        std::string("gather ") + dtypeName(t) + " axis " +
                            std::to_string(axis));
      }
}

TEST_F(CudaKernelsTest, GatherIndexOutOfRangeIsReported) {
  // The report is fatal (it ends the process): a death test, re-executed
  // rather than forked, since a forked child cannot use the parent's CUDA
  // context.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        HostTensor indices(DType::I64, {2});
        indices.set(0, 1);
        indices.set(1, 9);
        const DeviceTensor data(randomTensor(DType::F32, {5, 4}));
        const DeviceTensor di(indices);
        DeviceTensor out(DType::F32, {2, 4});
        gpu::gather(data.ref(), di.ref(), 0, out.ref());
        gpu::synchronize("test");
      },
      "gather: index 9");
}

TEST_F(CudaKernelsTest, SliceWithPositiveAndNegativeSteps) {
  const HostTensor x = randomTensor(DType::I32, {6, 7, 8}, -100, 100);
  const std::int64_t starts[] = {1, 6, 0}, steps[] = {2, -2, 3};
  const Shape outShape = {3, 4, 3};
  HostTensor want(DType::I32, outShape);
  cpu::slice(x.ref(), starts, steps, want.ref());
  const DeviceTensor dx(x);
  DeviceTensor out(DType::I32, outShape);
  gpu::slice(dx.ref(), starts, steps, out.ref());
  expectSameBytes(out.download(), want, "slice");

  // A contiguous block (one copy).
  const std::int64_t starts2[] = {2, 0, 0}, steps2[] = {1, 1, 1};
  HostTensor want2(DType::I32, {3, 7, 8});
  cpu::slice(x.ref(), starts2, steps2, want2.ref());
  DeviceTensor out2(DType::I32, {3, 7, 8});
  gpu::slice(dx.ref(), starts2, steps2, out2.ref());
  expectSameBytes(out2.download(), want2, "slice (contiguous)");
}

TEST_F(CudaKernelsTest, Expand) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 1, 5}, {2, 3, 4, 5}}, {{1}, {7, 3}}, {{4, 1}, {4, 9}}};
  for (const auto &[in, outShape] : cases) {
    const HostTensor x = randomTensor(DType::F16, in);
    HostTensor want(DType::F16, outShape);
    cpu::expand(x.ref(), want.ref());
    const DeviceTensor dx(x);
    DeviceTensor out(DType::F16, outShape);
    gpu::expand(dx.ref(), out.ref());
    expectSameBytes(out.download(), want, "expand " + shapeString(in));
  }
}

TEST_F(CudaKernelsTest, TriluUpperAndLower) {
  for (DType t : {DType::F32, DType::I64, DType::Bool})
    for (bool upper : {true, false})
      for (std::int64_t diagonal : {-2, 0, 3}) {
        const HostTensor x = randomTensor(t, {2, 5, 7}, -9, 9);
        HostTensor want(t, x.shape);
        cpu::trilu(x.ref(), upper, diagonal, want.ref());
        const DeviceTensor dx(x);
        DeviceTensor out(t, x.shape);
        gpu::trilu(dx.ref(), upper, diagonal, out.ref());
        expectSameBytes(out.download(), want,
                        std::string("trilu ") + (upper ? "upper " : "lower ") +
                            std::to_string(diagonal));
      }
}

TEST_F(CudaKernelsTest, CumSumMatchesCpu) {
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      for (int axis : {0, 1, 2}) {
        const std::string what = "cumsum axis " + std::to_string(axis) +
                                 (exclusive ? " exclusive" : "") +
                                 (reverse ? " reverse" : "");
        // A 0/1 mask (integer sums exact) and floats.
        for (DType t : {DType::I64, DType::F32}) {
          const HostTensor x = t == DType::I64
                                   ? randomTensor(t, {3, 5, 4}, 0, 1)
                                   : randomTensor(t, {3, 5, 4});
          HostTensor want(t, x.shape);
          cpu::cumSum(x.ref(), axis, exclusive, reverse, want.ref());
          const DeviceTensor dx(x);
          DeviceTensor out(t, x.shape);
          gpu::cumSum(dx.ref(), axis, exclusive, reverse, out.ref());
          expectMatchesCpu(out.download(), want, what);
        }
      }
}

TEST_F(CudaKernelsTest, TopKMatchesCpu) {
  // A router's top 2, a middle axis, a sort with ties (int64 ids), K > 64.
  struct Case {
    DType t;
    Shape shape;
    int axis;
    std::int64_t k;
  };
  for (bool largest : {true, false})
    for (const Case &c :
         {Case{DType::F32, {6, 8}, 1, 2}, Case{DType::F32, {3, 7, 4}, 1, 3},
          Case{DType::I64, {2, 40}, 1, 40},
          Case{DType::F32, {4, 300}, 1, 70}}) {
      const HostTensor x = c.t == DType::I64 ? randomTensor(c.t, c.shape, 0, 3)
                                             : randomTensor(c.t, c.shape);
      Shape shape = c.shape;
      shape[c.axis] = c.k;
      HostTensor wantValues(c.t, shape), wantIndices(DType::I64, shape);
      cpu::topK(x.ref(), c.axis, largest, wantValues.ref(), wantIndices.ref());
      const DeviceTensor dx(x);
      DeviceTensor values(c.t, shape), indices(DType::I64, shape);
      gpu::topK(dx.ref(), c.axis, largest, values.ref(), indices.ref());
      const std::string what = "top_k k=" + std::to_string(c.k) +
                               (largest ? " largest" : " smallest");
      expectSameBytes(values.download(), wantValues, what + " values");
      expectSameBytes(indices.download(), wantIndices, what + " indices");
    }
}

TEST_F(CudaKernelsTest, ScatterNDAccumulateMatchesCpu) {
  // Rows added back at their tokens, token 2 three times (the order of the
  // atomic sums is not fixed: floats within the sum's rounding).
  const HostTensor data = randomTensor(DType::F32, {4, 6});
  HostTensor indices(DType::I64, {6, 1});
  const double idx[] = {2, 0, 2, 3, 0, 2};
  for (int i = 0; i < 6; ++i)
    indices.set(i, idx[i]);
  const HostTensor updates = randomTensor(DType::F32, {6, 6});
  HostTensor want(DType::F32, data.shape);
  cpu::scatterND(data.ref(), indices.ref(), updates.ref(), true, 0,
                 want.ref());
  const DeviceTensor dd(data), di(indices), du(updates);
  DeviceTensor out(DType::F32, data.shape);
  gpu::scatterND(dd.ref(), di.ref(), du.ref(), true, 0, out.ref());
  expectMatchesCpu(out.download(), want, "scatter_nd accumulate");
}

TEST_F(CudaKernelsTest, ScatterNDWithDuplicatesAndNegativeIndices) {
  const HostTensor data = randomTensor(DType::F32, {4, 5, 6});
  {
    // q = 2: slices of 6; tuple 3 repeats tuple 0 (it must win) and tuple 1
    // counts from the end.
    HostTensor indices(DType::I64, {4, 2});
    const double idx[] = {1, 2, -1, 0, 3, 4, 1, 2};
    for (int i = 0; i < 8; ++i)
      indices.set(i, idx[i]);
    const HostTensor updates = randomTensor(DType::F32, {4, 6}, 5, 6);
    HostTensor want(DType::F32, data.shape);
    cpu::scatterND(data.ref(), indices.ref(), updates.ref(), false, 0,
                   want.ref());
    const DeviceTensor dd(data), di(indices), du(updates);
    DeviceTensor out(DType::F32, data.shape);
    gpu::scatterND(dd.ref(), di.ref(), du.ref(), false, 0, out.ref());
    expectSameBytes(out.download(), want, "scatter_nd q=2");
  }
  {
    HostTensor indices(DType::I32, {2, 1});
    indices.set(0, 3);
    indices.set(1, -4);
    const HostTensor updates = randomTensor(DType::F32, {2, 5, 6}, 5, 6);
    HostTensor want(DType::F32, data.shape);
    cpu::scatterND(data.ref(), indices.ref(), updates.ref(), false, 0,
                   want.ref());
    const DeviceTensor dd(data), di(indices), du(updates);
    DeviceTensor out(DType::F32, data.shape);
    gpu::scatterND(dd.ref(), di.ref(), du.ref(), false, 0, out.ref());
    expectSameBytes(out.download(), want, "scatter_nd q=1");
  }
}

TEST_F(CudaKernelsTest, ScatterNDWithBatchDimensionsMatchesCpu) {
  // batch_dims = 2 over [2, 3, 4, 5]: in every batch tuple 1 repeats tuple
  // 0 (it must win within its batch, and must not suppress another batch's
  // write of the same tuple values).
  const HostTensor data = randomTensor(DType::F32, {2, 3, 4, 5});
  HostTensor indices(DType::I64, {2, 3, 2, 1});
  for (int b = 0; b < 6; ++b) {
    indices.set(2 * b, b % 4);
    indices.set(2 * b + 1, b % 4);
  }
  const HostTensor updates = randomTensor(DType::F32, {2, 3, 2, 5}, 5, 6);
  for (bool accumulate : {false, true}) {
    HostTensor want(DType::F32, data.shape);
    cpu::scatterND(data.ref(), indices.ref(), updates.ref(), accumulate, 2,
                   want.ref());
    const DeviceTensor dd(data), di(indices), du(updates);
    DeviceTensor out(DType::F32, data.shape);
    gpu::scatterND(dd.ref(), di.ref(), du.ref(), accumulate, 2, out.ref());
    expectMatchesCpu(out.download(), want, "scatter_nd batch_dims=2");
  }
}

TEST_F(CudaKernelsTest, EmbeddingWithNegativeIds) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (std::int64_t hidden : {16, 7}) {
      const HostTensor table = randomTensor(t, {10, hidden});
      const HostTensor ids = randomTensor(DType::I64, {2, 3}, -10, 9);
      HostTensor want(t, {2, 3, hidden});
      cpu::embedding(table.ref(), ids.ref(), want.ref());
      const DeviceTensor dt(table), di(ids);
      DeviceTensor out(t, {2, 3, hidden});
      gpu::embedding(dt.ref(), di.ref(), out.ref());
      expectSameBytes(out.download(), want,
                      std::string("embedding ") + dtypeName(t));
    }
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

void checkReduce(gpu::ReduceOp op, DType t, const Shape &shape,
                 const std::vector<std::int64_t> &axes) {
  const HostTensor x =
      isFloat(t) ? randomTensor(t, shape) : randomTensor(t, shape, -50, 50);
  Shape outShape = shape;
  for (std::int64_t a : axes)
    outShape[a] = 1;
  const HostTensor x32 = forCpu(x);
  HostTensor want(x32.dtype, outShape);
  cpu::reduce(static_cast<cpu::ReduceOp>(op), x32.ref(), axes.data(),
              static_cast<int>(axes.size()), want.ref());
  const DeviceTensor dx(x);
  DeviceTensor out(t, outShape);
  gpu::reduce(op, dx.ref(), axes.data(), static_cast<int>(axes.size()),
              out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("reduce ") +
                       std::to_string(static_cast<int>(op)) + " " +
                       dtypeName(t) + " " + shapeString(shape) + " over " +
                       shapeString(axes));
}

TEST_F(CudaKernelsTest, ReduceOverOneOrSeveralAxes) {
  const std::vector<std::pair<Shape, std::vector<std::int64_t>>> cases = {
      {{4, 5, 6}, {2}},    {{4, 5, 6}, {0}},       {{4, 5, 6}, {1}},
      {{4, 5, 6}, {0, 2}}, {{4, 5, 6}, {0, 1, 2}}, {{3, 2000}, {1}},
      {{2, 3, 1, 4}, {2}}, {{2, 3, 1, 4}, {1, 3}}, {{3, 4}, {}}};
  for (gpu::ReduceOp op :
       {gpu::ReduceOp::Sum, gpu::ReduceOp::Mean, gpu::ReduceOp::Max})
    for (DType t :
         {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32})
      for (const auto &[shape, axes] : cases)
        checkReduce(op, t, shape, axes);
}

void checkSoftmax(const HostTensor &x, std::int64_t axis) {
  const HostTensor x32 = forCpu(x);
  HostTensor want(DType::F32, x.shape);
  cpu::softmax(x32.ref(), axis, want.ref());
  const DeviceTensor dx(x);
  DeviceTensor out(x.dtype, x.shape);
  gpu::softmax(dx.ref(), axis, out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("softmax ") + dtypeName(x.dtype) + " " +
                       shapeString(x.shape) + " axis " + std::to_string(axis));
}

TEST_F(CudaKernelsTest, SoftmaxAlongAnyAxis) {
  for (DType t : kFloatTypes) {
    checkSoftmax(randomTensor(t, {3, 4, 10}, -4, 4), 2);
    checkSoftmax(randomTensor(t, {2, 1500}, -4, 4), 1); // a block per row
    checkSoftmax(randomTensor(t, {3, 5, 4}, -4, 4), 1); // columns
    checkSoftmax(randomTensor(t, {3, 5, 4}, -4, 4), 0);
  }
  // A row of -inf is NaN throughout, as on the CPU.
  HostTensor x = randomTensor(DType::F32, {2, 3});
  for (int i = 0; i < 3; ++i)
    x.set(i, -kInf);
  checkSoftmax(x, 1);
}

//===----------------------------------------------------------------------===//
// Normalisation and rotary
//===----------------------------------------------------------------------===//

struct NormCase {
  Shape shape;
  std::int64_t axis;
  Shape scaleShape;
  bool bias = false, residual = false;
};

void checkNorm(bool rms, DType t, const NormCase &c) {
  const HostTensor x = randomTensor(t, c.shape, -2, 2);
  const HostTensor scale = randomTensor(t, c.scaleShape, 0.5, 1.5);
  const HostTensor bias = randomTensor(t, c.scaleShape);
  const HostTensor residual = randomTensor(t, c.shape);
  const float epsilon = 1e-5f;
  const std::string what = std::string(rms ? "rms_norm " : "layer_norm ") +
                           dtypeName(t) + " " + shapeString(c.shape) +
                           " axis " + std::to_string(c.axis) + " scale " +
                           shapeString(c.scaleShape) + (c.bias ? " bias" : "") +
                           (c.residual ? " residual" : "");
  auto cpuNorm = rms ? cpu::rmsNorm : cpu::layerNorm;
  auto gpuNorm = rms ? gpu::rmsNorm : gpu::layerNorm;

  // The reference normalises x = in + residual as the GPU does: rounded to
  // the element type (for f32 the CPU kernel's own fused path).
  const HostTensor scale32 = forCpu(scale), bias32 = forCpu(bias);
  HostTensor want(DType::F32, c.shape), wantSum;
  const TensorRef scaleRef = scale32.ref(), biasRef = bias32.ref();
  if (c.residual && t != DType::F32) {
    const HostTensor x32 = forCpu(x), r32 = forCpu(residual);
    HostTensor sum32(DType::F32, c.shape);
    cpu::binary(cpu::BinaryOp::Add, x32.ref(), r32.ref(), sum32.ref());
    wantSum = convert(sum32, t);
    const HostTensor rounded = forCpu(wantSum);
    cpuNorm(rounded.ref(), scaleRef, c.bias ? &biasRef : nullptr, nullptr,
            c.axis, epsilon, want.ref(), nullptr);
  } else {
    const HostTensor x32 = forCpu(x), r32 = forCpu(residual);
    HostTensor sum32(DType::F32, c.shape);
    const TensorRef rRef = r32.ref(), sRef = sum32.ref();
    cpuNorm(x32.ref(), scaleRef, c.bias ? &biasRef : nullptr,
            c.residual ? &rRef : nullptr, c.axis, epsilon, want.ref(),
            c.residual ? &sRef : nullptr);
    wantSum = sum32;
  }

  const DeviceTensor dx(x), ds(scale), db(bias), dr(residual);
  DeviceTensor out(t, c.shape), sum(t, c.shape);
  const TensorRef dbRef = db.ref(), drRef = dr.ref(), sumRef = sum.ref();
  gpuNorm(dx.ref(), ds.ref(), c.bias ? &dbRef : nullptr,
          c.residual ? &drRef : nullptr, c.axis, epsilon, out.ref(),
          c.residual ? &sumRef : nullptr);
  expectMatchesCpu(out.download(), want, what);
  if (c.residual)
    expectNear(sum.download(), wantSum, kExact, what + " (sum)");
}

TEST_F(CudaKernelsTest, LayerNormAndRmsNorm) {
  const std::vector<NormCase> cases = {
      {{2, 3, 64}, 2, {64}, true, false}, {{2, 3, 64}, 2, {64}, false, true},
      {{2, 3, 64}, 2, {64}, true, true},  {{2, 3, 64}, 1, {3, 64}, true, false},
      {{2, 3, 64}, 1, {64}, true, true},  // scale broadcast over the rows
      {{3, 2000}, 1, {2000}, true, true}, // a block per row
      {{5, 37}, 1, {1, 37}, false, false}};
  for (bool rms : {false, true})
    for (DType t : kFloatTypes)
      for (const NormCase &c : cases)
        checkNorm(rms, t, c);
}

struct RotaryCase {
  std::int64_t batch = 2, heads = 3, seq = 4, dim = 8, rotaryDim = 8;
  bool interleaved = false, positions = false, sharedTable = false;
};

void checkRotary(DType t, const RotaryCase &c) {
  constexpr std::int64_t kMaxPositions = 16;
  const std::int64_t half = c.rotaryDim / 2;
  const HostTensor x = randomTensor(t, {c.batch, c.heads, c.seq, c.dim});
  Shape tableShape;
  if (c.positions)
    tableShape = {kMaxPositions, half};
  else
    tableShape = {c.sharedTable ? 1 : c.batch, c.seq, half};
  const HostTensor cosT = randomTensor(t, tableShape);
  const HostTensor sinT = randomTensor(t, tableShape);
  const HostTensor positions =
      randomTensor(DType::I64, {c.batch, c.seq}, 0, kMaxPositions - 1);
  const HostTensor x32 = forCpu(x), cos32 = forCpu(cosT), sin32 = forCpu(sinT);
  HostTensor want(DType::F32, x.shape);
  const TensorRef posRef = positions.ref();
  cpu::rotary(x32.ref(), cos32.ref(), sin32.ref(),
              c.positions ? &posRef : nullptr, c.interleaved, c.rotaryDim,
              want.ref());
  const DeviceTensor dx(x), dc(cosT), ds(sinT), dp(positions);
  DeviceTensor out(t, x.shape);
  const TensorRef dpRef = dp.ref();
  gpu::rotary(dx.ref(), dc.ref(), ds.ref(), c.positions ? &dpRef : nullptr,
              c.interleaved, c.rotaryDim, out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("rotary ") + dtypeName(t) +
                       (c.interleaved ? " interleaved" : " half-split") +
                       (c.positions ? " positions" : "") +
                       (c.sharedTable ? " shared" : "") + " rotaryDim " +
                       std::to_string(c.rotaryDim));
}

TEST_F(CudaKernelsTest, RotaryWithAndWithoutPositions) {
  for (DType t : kFloatTypes)
    for (bool interleaved : {false, true})
      for (bool positions : {false, true}) {
        RotaryCase c;
        c.interleaved = interleaved;
        c.positions = positions;
        checkRotary(t, c);
        c.dim = 10; // features past rotaryDim pass through
        c.rotaryDim = 6;
        checkRotary(t, c);
        if (!positions) {
          c.sharedTable = true;
          checkRotary(t, c);
        }
      }
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

Shape matmulShape(const Shape &a, const Shape &b) {
  const Shape ab(a.begin(), a.end() - std::min<std::size_t>(a.size(), 2));
  const Shape bb(b.begin(), b.end() - std::min<std::size_t>(b.size(), 2));
  Shape out =
      broadcastShape(a.size() > 1 ? ab : Shape{}, b.size() > 1 ? bb : Shape{});
  if (a.size() > 1)
    out.push_back(a[a.size() - 2]);
  if (b.size() > 1)
    out.push_back(b.back());
  return out;
}

void checkMatmul(DType t, const Shape &sa, const Shape &sb) {
  const HostTensor a =
      isFloat(t) ? randomTensor(t, sa) : randomTensor(t, sa, -5, 5);
  const HostTensor b =
      isFloat(t) ? randomTensor(t, sb) : randomTensor(t, sb, -5, 5);
  const Shape outShape = matmulShape(sa, sb);
  const HostTensor a32 = forCpu(a), b32 = forCpu(b);
  HostTensor want(a32.dtype, outShape);
  cpu::matmul(a32.ref(), b32.ref(), want.ref());
  const DeviceTensor da(a), db(b);
  DeviceTensor out(t, outShape);
  gpu::matmul(da.ref(), db.ref(), out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("matmul ") + dtypeName(t) + " " +
                       shapeString(sa) + " x " + shapeString(sb));
}

TEST_F(CudaKernelsTest, MatmulBatchesAndVectors) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},
      {{2, 3, 4}, {4, 5}},       // the batch folds into M
      {{2, 3, 4}, {2, 4, 5}},    // strided batches
      {{2, 1, 3, 4}, {3, 4, 5}}, // both operands broadcast
      {{1, 2, 3, 4}, {2, 1, 4, 5}},
      {{3, 2, 3, 4}, {3, 1, 4, 5}}, // looped over the outer batch
      {{4}, {4, 5}},
      {{2, 3, 4}, {4}},
      {{4}, {2, 4, 5}},
      {{7, 33}, {33, 17}}, // odd sizes: unaligned rows
      {{2, 65, 96}, {96, 3}}};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32})
    for (const auto &[sa, sb] : cases)
      checkMatmul(t, sa, sb);
}

void checkLinear(DType t, const Shape &inShape, std::int64_t n, bool transpose,
                 bool withBias) {
  const std::int64_t k = inShape.back();
  const HostTensor in = randomTensor(t, inShape);
  const HostTensor weight =
      randomTensor(t, transpose ? Shape{n, k} : Shape{k, n});
  const HostTensor bias = randomTensor(t, {n});
  Shape outShape = inShape;
  outShape.back() = n;
  const HostTensor in32 = forCpu(in), w32 = forCpu(weight), b32 = forCpu(bias);
  HostTensor want(DType::F32, outShape);
  const TensorRef b32Ref = b32.ref();
  cpu::linear(in32.ref(), w32.ref(), withBias ? &b32Ref : nullptr, transpose,
              want.ref());
  const DeviceTensor din(in), dw(weight), dbias(bias);
  DeviceTensor out(t, outShape);
  const TensorRef dbRef = dbias.ref();
  gpu::linear(din.ref(), dw.ref(), withBias ? &dbRef : nullptr, transpose,
              out.ref());
  expectMatchesCpu(out.download(), want,
                   std::string("linear ") + dtypeName(t) + " " +
                       shapeString(inShape) + " n " + std::to_string(n) +
                       (transpose ? " transposed" : "") +
                       (withBias ? " bias" : ""));
}

TEST_F(CudaKernelsTest, LinearWithAndWithoutTransposeAndBias) {
  for (DType t : kFloatTypes)
    for (bool transpose : {false, true})
      for (bool withBias : {false, true}) {
        checkLinear(t, {2, 3, 8}, 5, transpose, withBias);
        checkLinear(t, {5, 33}, 17, transpose, withBias);
        checkLinear(t, {64, 96}, 80, transpose, withBias);
      }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct AttentionCase {
  std::int64_t batch = 1, heads = 2, kvHeads = 2, seq = 3, past = 0, newKv = 3,
               dim = 8, vDim = 8;
  bool causal = false;
  /// Added to keys past the causal limit (a finite fill: HF's finfo.min).
  float causalFill = -INFINITY;
  float softcap = 0.0f;
  bool softcapFirst = false;   // Gemma-2's order: softcap, then the mask
  Shape maskShape;             // empty: no mask
  /// With a float mask [batch, 1, 1, total]: HF's left-padding mask, 0 or
  /// finfo.min, the first leftPad[b] keys of batch row b masked.
  std::vector<std::int64_t> leftPad;
  DType maskType = DType::F32; // Bool, or a float mask
  bool maskInQueryType = true; // a float mask of the query's type
  bool maskWholeRows = false;  // query 0 sees no key (bool masks)
  /// Non-empty: past_lengths, each batch row's history (at most `past`).
  std::vector<std::int64_t> pastLengths;
  bool sinks = false; // one score per query head in the denominator
};

std::string describe(const AttentionCase &c, DType t) {
  return std::string("attention ") + dtypeName(t) + " B" +
         std::to_string(c.batch) + " H" + std::to_string(c.heads) + "/" +
         std::to_string(c.kvHeads) + " S" + std::to_string(c.seq) + " P" +
         std::to_string(c.past) + " D" + std::to_string(c.dim) + "/" +
         std::to_string(c.vDim) + (c.causal ? " causal" : "") +
         (std::isfinite(c.causalFill) ? " fill" : "") +
         (c.softcap > 0 ? (c.softcapFirst ? " softcap-first" : " softcap")
                        : "") +
         (c.pastLengths.empty() ? "" : " past_lengths") +
         (c.sinks ? " sinks" : "") +
         (c.maskShape.empty()
              ? ""
              : std::string(" mask ") +
                    (c.maskType == DType::Bool ? "bool " : "float ") +
                    shapeString(c.maskShape));
}

void checkAttention(const AttentionCase &c, DType t) {
  const std::int64_t total = c.past + c.newKv;
  const HostTensor q = randomTensor(t, {c.batch, c.heads, c.seq, c.dim});
  const HostTensor k = randomTensor(t, {c.batch, c.kvHeads, c.newKv, c.dim});
  const HostTensor v = randomTensor(t, {c.batch, c.kvHeads, c.newKv, c.vDim});
  const bool hasMask = !c.maskShape.empty(), hasPast = c.past > 0;
  // Absent operands (no mask, no past) have no tensor at all, on either
  // side: the kernels get a null pointer for them.
  std::optional<HostTensor> pk, pv, mask;
  if (hasPast) {
    pk = randomTensor(t, {c.batch, c.kvHeads, c.past, c.dim});
    pv = randomTensor(t, {c.batch, c.kvHeads, c.past, c.vDim});
  }
  if (hasMask && c.maskType == DType::Bool) {
    mask = randomTensor(DType::Bool, c.maskShape);
    const std::size_t r = c.maskShape.size();
    if (c.maskWholeRows && r >= 2 && c.maskShape[r - 2] == c.seq) {
      // Elements whose query coordinate is 0.
      const std::int64_t cols = c.maskShape[r - 1];
      for (std::int64_t i = 0; i < mask->size(); ++i)
        if ((i / cols) % c.seq == 0)
          mask->set(i, 0);
    }
  } else if (hasMask && !c.leftPad.empty()) {
    mask = HostTensor(DType::F32, c.maskShape);
    const std::int64_t cols = c.maskShape.back();
    for (std::int64_t i = 0; i < mask->size(); ++i)
      mask->set(i, i % cols < c.leftPad[i / cols]
                       ? std::numeric_limits<float>::lowest()
                       : 0.0f);
  } else if (hasMask) {
    mask = randomTensor(c.maskInQueryType ? t : DType::F32, c.maskShape, -3, 1);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
  std::optional<HostTensor> lengths;
  if (!c.pastLengths.empty()) {
    lengths = HostTensor(DType::I64, {c.batch});
    for (std::int64_t b = 0; b < c.batch; ++b)
      lengths->set(b, static_cast<double>(c.pastLengths[b]));
  }

  std::optional<HostTensor> sinks;
  if (c.sinks)
    sinks = randomTensor(t, {c.heads}, -1, 3);

  const HostTensor q32 = forCpu(q), k32 = forCpu(k), v32 = forCpu(v);
  const std::optional<HostTensor> pk32 = forCpu(pk), pv32 = forCpu(pv),
                                  mask32 = forCpu(mask),
                                  sinks32 = forCpu(sinks);
  HostTensor want(DType::F32, {c.batch, c.heads, c.seq, c.vDim});
  HostTensor wantK(DType::F32, {c.batch, c.kvHeads, total, c.dim});
  HostTensor wantV(DType::F32, {c.batch, c.kvHeads, total, c.vDim});
  {
    const std::optional<TensorRef> m = refOf(mask32), pkr = refOf(pk32),
                                   pvr = refOf(pv32), lr = refOf(lengths),
                                   sr = refOf(sinks32);
    const TensorRef kr = wantK.ref(), vr = wantV.ref();
    cpu::attention(q32.ref(), k32.ref(), v32.ref(), refPointer(m),
                   refPointer(pkr), refPointer(pvr), scale, c.causal,
                   c.causalFill, c.softcap, c.softcapFirst, want.ref(),
                   hasPast ? &kr : nullptr, hasPast ? &vr : nullptr, 0,
                   refPointer(lr), refPointer(sr));
  }

  const DeviceTensor dq(q), dk(k), dv(v);
  const std::unique_ptr<DeviceTensor> dpk = upload(pk), dpv = upload(pv),
                                      dmask = upload(mask),
                                      dlengths = upload(lengths),
                                      dsinks = upload(sinks);
  DeviceTensor out(t, want.shape), presentK(t, wantK.shape),
      presentV(t, wantV.shape);
  const std::optional<TensorRef> m = refOf(dmask), pkr = refOf(dpk),
                                 pvr = refOf(dpv), lr = refOf(dlengths),
                                 sr = refOf(dsinks);
  const TensorRef kr = presentK.ref(), vr = presentV.ref();
  gpu::attention(dq.ref(), dk.ref(), dv.ref(), refPointer(m), refPointer(pkr),
                 refPointer(pvr), scale, c.causal, c.causalFill, c.softcap,
                 c.softcapFirst, out.ref(), hasPast ? &kr : nullptr,
                 hasPast ? &vr : nullptr, 0, refPointer(lr), refPointer(sr));
  const std::string what = describe(c, t);
  expectMatchesCpu(out.download(), want, what);
  if (hasPast) {
    expectNear(presentK.download(), convert(wantK, t), kExact,
               what + " (present key)");
    expectNear(presentV.download(), convert(wantV, t), kExact,
               what + " (present value)");
  }
}

TEST_F(CudaKernelsTest, AttentionCacheInPlace) {
  // `meshc generate`'s in-place KV cache: the past at the start of buffers
  // of `capacity` positions per head, the new keys and values appended
  // there; compared with the CPU kernel's past ++ new.
  const std::int64_t batch = 2, heads = 4, kvHeads = 2, dim = 16,
                     capacity = 48;
  for (auto [past, seq] : {std::pair<std::int64_t, std::int64_t>{0, 40},
                           {40, 1}, {44, 4}}) {
    const std::int64_t total = past + seq;
    const HostTensor q = randomTensor(DType::F32, {batch, heads, seq, dim});
    const HostTensor k = randomTensor(DType::F32, {batch, kvHeads, seq, dim});
    const HostTensor v = randomTensor(DType::F32, {batch, kvHeads, seq, dim});
    const HostTensor pk = randomTensor(DType::F32, {batch, kvHeads, past, dim});
    const HostTensor pv = randomTensor(DType::F32, {batch, kvHeads, past, dim});
    const float scale = 0.25f;
    HostTensor want(DType::F32, {batch, heads, seq, dim});
    HostTensor wantK(DType::F32, {batch, kvHeads, total, dim});
    HostTensor wantV(DType::F32, {batch, kvHeads, total, dim});
    const TensorRef pkr = pk.ref(), pvr = pv.ref(), kr = wantK.ref(),
                    vr = wantV.ref();
    cpu::attention(q.ref(), k.ref(), v.ref(), nullptr, &pkr, &pvr, scale,
                   /*causal=*/true, -INFINITY, 0.0f, false, want.ref(), &kr,
                   &vr);

    // The first `n` positions of each head of `from` (`fromPositions` per
    // head) in a tensor of `toPositions` per head.
    auto heads = [&](const HostTensor &from, std::int64_t fromPositions,
                     std::int64_t toPositions, std::int64_t n) {
      HostTensor to(DType::F32, {batch, kvHeads, toPositions, dim});
      for (std::int64_t bh = 0; bh < batch * kvHeads; ++bh)
        for (std::int64_t i = 0; i < n * dim; ++i)
          to.set(bh * toPositions * dim + i,
                 from.at(bh * fromPositions * dim + i));
      return to;
    };
    auto cacheOf = [&](const HostTensor &p) {
      return heads(p, past, capacity, past);
    };
    DeviceTensor dq(q), dk(k), dv(v), cacheK(cacheOf(pk)), cacheV(cacheOf(pv));
    DeviceTensor out(DType::F32, want.shape),
        presentK(DType::F32, wantK.shape), presentV(DType::F32, wantV.shape);
    TensorRef ck = cacheK.ref(), cv = cacheV.ref();
    ck.shape[2] = cv.shape[2] = past;
    const TensorRef presentKRef = presentK.ref(), presentVRef = presentV.ref();
    gpu::attention(dq.ref(), dk.ref(), dv.ref(), nullptr, &ck, &cv, scale,
                   true, -INFINITY, 0.0f, false, out.ref(), &presentKRef,
                   &presentVRef, capacity);
    const std::string what = "in-place cache, past " + std::to_string(past) +
                             ", new " + std::to_string(seq);
    expectMatchesCpu(out.download(), want, what);
    auto prefix = [&](const HostTensor &cache) {
      return heads(cache, capacity, total, total);
    };
    expectNear(prefix(cacheK.download()), wantK, kExact, what + " (keys)");
    expectNear(prefix(cacheV.download()), wantV, kExact, what + " (values)");
  }
}

// dfg.attention's past_lengths: rows with 0, some and all of the past's
// positions, decode and prefill (flash), with a bool mask beside.
TEST_F(CudaKernelsTest, AttentionWithPastLengths) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.batch = 3;
    c.heads = 4;
    c.kvHeads = 2;
    c.past = 5;
    c.causal = true;
    c.pastLengths = {0, 3, 5};
    for (std::int64_t seq : {1, 40}) {
      c.seq = c.newKv = seq;
      c.maskShape.clear();
      checkAttention(c, t);
      c.maskType = DType::Bool;
      c.maskShape = {3, 1, seq, 5 + seq};
      checkAttention(c, t);
    }
    // Left-padded rows: a negative history drops the row's first new
    // tokens, whose queries see no key.
    c.maskShape.clear();
    for (std::int64_t seq : {3, 40}) {
      c.seq = c.newKv = seq;
      c.pastLengths = {-2, 0, -seq};
      checkAttention(c, t);
    }
  }
}

TEST_F(CudaKernelsTest, AttentionPlainAndGroupedWithPast) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    checkAttention(c, t);
    c.vDim = 5; // value width differs from the key width
    checkAttention(c, t);

    AttentionCase g;
    g.batch = 2;
    g.heads = 4;
    g.kvHeads = 2;
    g.seq = 2;
    g.past = 3;
    g.newKv = 2;
    g.causal = true;
    checkAttention(g, t);
    g.kvHeads = 1; // multi-query
    checkAttention(g, t);
    g.seq = 1; // decode: one new token
    g.newKv = 1;
    g.past = 7;
    checkAttention(g, t);
  }
}

TEST_F(CudaKernelsTest, AttentionDecodeOverALongCache) {
  for (DType t : kFloatTypes) {
    // Few rows and many keys: the keys are split across blocks and merged.
    AttentionCase c;
    c.batch = 2;
    c.heads = 8;
    c.kvHeads = 2;
    c.seq = 1;
    c.past = 300;
    c.newKv = 1;
    c.dim = 64;
    c.vDim = 64;
    c.causal = true;
    checkAttention(c, t);
    c.maskType = DType::Bool; // key padding per batch row
    c.maskShape = {2, 1, 1, 301};
    checkAttention(c, t);
    c.maskType = DType::F32;
    c.maskShape = {301};
    checkAttention(c, t);
    c.maskShape = {};
    c.softcap = 1.5f;
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionMasks) {
  for (DType t : kFloatTypes) {
    AttentionCase f;
    f.batch = 2;
    f.seq = 4;
    f.newKv = 4;
    f.maskShape = {2, 1, 4, 4}; // broadcast over heads
    checkAttention(f, t);
    f.maskInQueryType = false; // an f32 mask beside 16-bit queries
    checkAttention(f, t);
    f.maskInQueryType = true;
    f.causal = true;
    f.maskShape = {4}; // a key-padding bias broadcast to every row
    checkAttention(f, t);

    AttentionCase b;
    b.heads = 4;
    b.kvHeads = 2;
    b.seq = 3;
    b.past = 2;
    b.newKv = 3;
    b.maskType = DType::Bool;
    b.maskShape = {3, 5};
    checkAttention(b, t);
    b.maskWholeRows = true; // query 0 sees no key: its output is zeros
    b.causal = true;
    checkAttention(b, t);
    b.seq = 40; // the same through the prefill kernel
    b.newKv = 40;
    b.maskShape = {40, 42};
    checkAttention(b, t);
  }
}

TEST_F(CudaKernelsTest, AttentionSoftcap) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.seq = 4;
    c.newKv = 4;
    c.softcap = 0.5f;
    checkAttention(c, t);
    c.causal = true;
    c.maskType = DType::Bool;
    c.maskShape = {1, 1, 4, 4};
    checkAttention(c, t);
    c.seq = 37; // prefill: masked keys score -softcap there too
    c.newKv = 37;
    c.maskShape = {1, 1, 37, 37};
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionSinks) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.sinks = true;
    c.heads = 4;
    c.kvHeads = 2;
    checkAttention(c, t);
    c.causal = true; // HF's padding mask with finfo.min: the sink wins
    c.batch = 2;
    c.seq = c.newKv = 37; // the tiled prefill kernel
    c.causalFill = std::numeric_limits<float>::lowest();
    c.maskShape = {2, 1, 1, 37};
    c.leftPad = {5, 0};
    checkAttention(c, t);
    c.maskShape.clear();
    c.leftPad.clear();
    c.causalFill = -INFINITY;
    c.past = 300; // decode over a long cache: split keys merged
    c.seq = c.newKv = 1;
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionCausalFillSpreadsFullyMaskedRows) {
  // HF's causal and padding mask raised (finfo.min fills): the queries
  // before the padding ends spread over every key, future ones included.
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.batch = 2;
    c.heads = 4;
    c.kvHeads = 2;
    c.seq = c.newKv = 4; // decode kernel
    c.causal = true;
    c.causalFill = std::numeric_limits<float>::lowest();
    c.maskShape = {2, 1, 1, 4};
    c.leftPad = {2, 0};
    checkAttention(c, t);
    c.softcap = 0.5f; // Gemma-2: capped, then masked
    c.softcapFirst = true;
    checkAttention(c, t);
    c.softcap = 0.0f;
    c.seq = c.newKv = 37; // prefill kernel, with a past
    c.past = 3;
    c.maskShape = {2, 1, 1, 40};
    c.leftPad = {9, 35};
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionSoftcapBeforeMask) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.seq = 4;
    c.newKv = 4;
    c.softcap = 0.5f;
    c.softcapFirst = true;
    c.causal = true; // masked keys excluded, not scored -softcap
    checkAttention(c, t);
    c.maskShape = {1, 1, 4, 4};
    checkAttention(c, t);
    c.seq = 37; // prefill, with a past
    c.newKv = 37;
    c.past = 3;
    c.maskType = DType::Bool;
    c.maskShape = {1, 1, 37, 40};
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionLongSequencesUseTheTiledKernel) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.batch = 1;
    c.heads = 4;
    c.kvHeads = 2;
    c.seq = 80; // three query blocks, three key tiles, partial ones
    c.newKv = 80;
    c.dim = 16;
    c.vDim = 12;
    c.causal = true;
    checkAttention(c, t);
    c.maskShape = {1, 1, 80, 80};
    checkAttention(c, t);
    c.maskType = DType::Bool;
    c.maskShape = {80};
    c.past = 10;
    c.seq = 70;
    c.newKv = 70;
    c.softcap = 2.0f;
    checkAttention(c, t);
  }
}

TEST_F(CudaKernelsTest, AttentionLargeHeadDimensions) {
  for (DType t : kFloatTypes) {
    AttentionCase c;
    c.heads = 2;
    c.kvHeads = 1;
    c.seq = 40;
    c.newKv = 40;
    c.dim = 256;
    c.vDim = 256;
    c.causal = true;
    checkAttention(c, t);
    c.dim = 128; // keys and values of different widths
    c.vDim = 64;
    c.past = 30;
    checkAttention(c, t);
    c.seq = 1; // decode with a wide head
    c.newKv = 1;
    c.dim = 256;
    c.vDim = 200;
    c.past = 100;
    checkAttention(c, t);
  }
}

} // namespace
