//===- contraction.cu - matmul and linear ---------------------------------===//
//
// Part of meshc. Both kernels reduce to row-major batched products
// C = A op(B) (+ bias), described by a Product, which f32/f16/bf16 run
// through cuBLASLt (f32 compute and scale, no TF32: the f32 tolerances of
// the CPU target hold) and integers through a plain kernel.
//
// cuBLAS is column-major: a row-major [r, c] matrix is the column-major
// [c, r] matrix with the same leading dimension, so C = A B is computed as
// C^T = B^T A^T with cuBLAS's A := B and B := A, and nothing moves. matmul's
// broadcast batch becomes strided batches (stride 0 for a broadcast
// operand) along its innermost batch dimension, looped over the outer ones;
// a batch that only the left operand has folds into M.
//
// Descriptors and the heuristic's algorithm are cached per shape, layout
// and pointer alignment (cuBLASLt assumes 256-byte alignment unless told
// otherwise, and arena offsets rarely have it). linear's bias goes into the
// epilogue where cuBLASLt offers one, else C is preloaded with the bias and
// accumulated into; where cuBLASLt has no algorithm at all, a plain kernel
// computes the product.
//
// MESHC_CUDA_GEMM=fallback (CudaDevice.h, docs/testing.md) sends every float
// product to that plain kernel (f32 accumulation, the bias added before the
// one rounding) and never calls cuBLASLt, so that the rest of the CUDA
// kernels can be tested where cuBLASLt cannot run, such as a GPU simulator.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

namespace meshc::rt::cuda {
using namespace detail;

namespace {

/// A row-major batched product: for b < batch, C_b = A_b op(B_b) + bias,
/// A_b = a + b * strideA ([m, k], leading dimension k), B_b = b + b *
/// strideB ([k, n] with leading dimension n, or with transB [n, k] with
/// leading dimension k), C_b = c + b * strideC ([m, n], leading dimension
/// n). Strides in elements; bias, when given, has n elements. With beta = 1
/// the product is added to what C holds.
struct Product {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  const void *a = nullptr, *b = nullptr, *bias = nullptr;
  void *c = nullptr;
  std::int64_t strideA = 0, strideB = 0, strideC = 0;
  bool transB = false;
  float beta = 0.0f;
};

//===----------------------------------------------------------------------===//
// cuBLASLt
//===----------------------------------------------------------------------===//

/// What one cached cuBLASLt configuration holds: the descriptors (C and D
/// share a layout) and the algorithm, or found = false when the heuristic
/// offered none. Entries live as long as the process: a program has a fixed
/// set of shapes.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false;
};

using LtKey = std::array<std::int64_t, 15>;

cudaDataType blasType(DType t) {
  switch (t) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  default:
    return CUDA_R_32F;
  }
}

void setLayoutBatch(cublasLtMatrixLayout_t layout, std::int64_t batch,
                    std::int64_t stride) {
  const auto count = static_cast<std::int32_t>(batch);
  checkBlas(cublasLtMatrixLayoutSetAttribute(layout,
                                             CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                             &count, sizeof count),
            "cublasLtMatrixLayoutSetAttribute(batch count)");
  checkBlas(cublasLtMatrixLayoutSetAttribute(
                layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                sizeof stride),
            "cublasLtMatrixLayoutSetAttribute(batch stride)");
}

/// Builds the descriptors of `p` in cuBLAS's terms and asks the heuristic
/// for an algorithm that accepts the given alignments.
LtPlan makeLtPlan(const Product &p, cudaDataType type,
                  const std::uint32_t (&align)[3]) {
  LtPlan plan;
  checkBlas(
      cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
      "cublasLtMatmulDescCreate");
  // cuBLAS's A is our B (op T when B is [n, k]); cuBLAS's B is our A.
  const cublasOperation_t opA = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = CUBLAS_OP_N;
  checkBlas(cublasLtMatmulDescSetAttribute(
                plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA),
            "cublasLtMatmulDescSetAttribute(transa)");
  checkBlas(cublasLtMatmulDescSetAttribute(
                plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB),
            "cublasLtMatmulDescSetAttribute(transb)");
  if (p.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    checkBlas(cublasLtMatmulDescSetAttribute(plan.desc,
                                             CUBLASLT_MATMUL_DESC_EPILOGUE,
                                             &epilogue, sizeof epilogue),
              "cublasLtMatmulDescSetAttribute(epilogue)");
    // The heuristic reads the pointer's alignment from here.
    checkBlas(cublasLtMatmulDescSetAttribute(plan.desc,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &p.bias, sizeof p.bias),
              "cublasLtMatmulDescSetAttribute(bias)");
  }
  const auto n = static_cast<std::uint64_t>(p.n);
  const auto m = static_cast<std::uint64_t>(p.m);
  const auto k = static_cast<std::uint64_t>(p.k);
  checkBlas(p.transB ? cublasLtMatrixLayoutCreate(&plan.a, type, k, n, p.k)
                     : cublasLtMatrixLayoutCreate(&plan.a, type, n, k, p.n),
            "cublasLtMatrixLayoutCreate(A)");
  checkBlas(cublasLtMatrixLayoutCreate(&plan.b, type, k, m, p.k),
            "cublasLtMatrixLayoutCreate(B)");
  checkBlas(cublasLtMatrixLayoutCreate(&plan.d, type, n, m, p.n),
            "cublasLtMatrixLayoutCreate(D)");
  if (p.batch > 1) {
    setLayoutBatch(plan.a, p.batch, p.strideB);
    setLayoutBatch(plan.b, p.batch, p.strideA);
    setLayoutBatch(plan.d, p.batch, p.strideC);
  }
  cublasLtMatmulPreference_t pref = nullptr;
  checkBlas(cublasLtMatmulPreferenceCreate(&pref),
            "cublasLtMatmulPreferenceCreate");
  const std::uint64_t workspaceSize = workspaceBytes();
  checkBlas(cublasLtMatmulPreferenceSetAttribute(
                pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceSize,
                sizeof workspaceSize),
            "cublasLtMatmulPreferenceSetAttribute(workspace)");
  const cublasLtMatmulPreferenceAttributes_t alignAttrs[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const std::uint32_t alignValues[4] = {align[0], align[1], align[2], align[2]};
  for (int i = 0; i < 4; ++i)
    checkBlas(cublasLtMatmulPreferenceSetAttribute(
                  pref, alignAttrs[i], &alignValues[i], sizeof alignValues[i]),
              "cublasLtMatmulPreferenceSetAttribute(alignment)");
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      blasLt(), plan.desc, plan.a, plan.b, plan.d, plan.d, pref, 1, &result,
      &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  // Any refusal (NOT_SUPPORTED, or INVALID_VALUE for a combination this
  // cuBLASLt does not take) leaves the product to the caller's fallback,
  // which computes the same thing.
  plan.found = status == CUBLAS_STATUS_SUCCESS && returned > 0 &&
               result.state == CUBLAS_STATUS_SUCCESS;
  plan.algo = result.algo;
  return plan;
}

/// Runs `p` through cuBLASLt; false (nothing enqueued) when cuBLASLt has no
/// algorithm for it.
bool runLt(const Product &p, DType dtype) {
  const std::size_t es = byteWidth(dtype);
  const bool batched = p.batch > 1;
  auto align = [&](const void *ptr, std::int64_t stride) {
    return static_cast<std::uint32_t>(alignmentOf(
        ptr, 256, {batched ? static_cast<std::size_t>(stride) * es : 0}));
  };
  // Our A, B, C are cuBLAS's B, A, D.
  const std::uint32_t alignment[3] = {
      align(p.b, p.strideB), align(p.a, p.strideA), align(p.c, p.strideC)};
  const std::int64_t biasAlign =
      p.bias ? static_cast<std::int64_t>(alignmentOf(p.bias, 256)) : 0;
  const LtKey key = {static_cast<std::int64_t>(dtype),
                     p.m,
                     p.n,
                     p.k,
                     p.batch,
                     batched ? p.strideA : 0,
                     batched ? p.strideB : 0,
                     batched ? p.strideC : 0,
                     p.transB,
                     p.bias != nullptr,
                     biasAlign,
                     alignment[0],
                     alignment[1],
                     alignment[2],
                     p.beta != 0.0f};
  static std::mutex mutex;
  static std::map<LtKey, LtPlan> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, makeLtPlan(p, blasType(dtype), alignment)).first;
  const LtPlan &plan = it->second;
  if (!plan.found)
    return false;
  if (p.bias)
    checkBlas(cublasLtMatmulDescSetAttribute(plan.desc,
                                             CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                             &p.bias, sizeof p.bias),
              "cublasLtMatmulDescSetAttribute(bias)");
  const float alpha = 1.0f, beta = p.beta;
  checkBlas(cublasLtMatmul(blasLt(), plan.desc, &alpha, p.b, plan.a, p.a,
                           plan.b, &beta, p.c, plan.d, p.c, plan.d, &plan.algo,
                           workspace(), workspaceBytes(), stream()),
            "cublasLtMatmul");
  return true;
}

//===----------------------------------------------------------------------===//
// The plain kernel
//===----------------------------------------------------------------------===//

/// One thread per element of C: integer products (wrapping, as the CPU's
/// loops do in practice) and float products cuBLASLt refuses (f32
/// accumulation, one rounding at the end).
template <typename T, bool = kIsFloat<T>> struct PlainAccumulator {
  using type = std::make_unsigned_t<T>;
};
template <typename T> struct PlainAccumulator<T, true> { using type = float; };

template <typename T>
__global__ void plainProductKernel(Product p, const T *a, const T *b,
                                   const T *bias, T *c, std::int64_t total) {
  using Acc = typename PlainAccumulator<T>::type;
  const std::int64_t bRow = p.transB ? 1 : p.n, bCol = p.transB ? p.k : 1;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
       e < total; e += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t rest, j, batch, i;
    divmod(e, p.n, rest, j);
    divmod(rest, p.m, batch, i);
    const T *ai = a + batch * p.strideA + i * p.k;
    const T *bj = b + batch * p.strideB + j * bCol;
    Acc acc = 0;
    for (std::int64_t l = 0; l < p.k; ++l) {
      if constexpr (kIsFloat<T>)
        acc += toFloat(ai[l]) * toFloat(bj[l * bRow]);
      else
        acc += static_cast<Acc>(ai[l]) * static_cast<Acc>(bj[l * bRow]);
    }
    if constexpr (kIsFloat<T>) {
      if (bias)
        acc += toFloat(bias[j]);
      c[batch * p.strideC + i * p.n + j] = fromFloat<T>(acc);
    } else {
      if (bias)
        acc += static_cast<Acc>(bias[j]);
      c[batch * p.strideC + i * p.n + j] = static_cast<T>(acc);
    }
  }
}

template <typename T> void runPlain(const Product &p, const char *kernel) {
  const std::int64_t total = p.batch * p.m * p.n;
  if (total == 0)
    return;
  plainProductKernel<T><<<gridFor(total), kThreads, 0, stream()>>>(
      p, static_cast<const T *>(p.a), static_cast<const T *>(p.b),
      static_cast<const T *>(p.bias), static_cast<T *>(p.c), total);
  checkLaunch(kernel);
}

/// Runs `p` (beta 0) on element type T: cuBLASLt for floats, with the bias
/// in the epilogue or, where that is refused, preloaded into C; the plain
/// kernel for integers, whatever cuBLASLt refuses, and every product under
/// MESHC_CUDA_GEMM=fallback.
template <typename T>
void runProduct(const Product &p, DType dtype, const char *kernel) {
  if (p.batch * p.m * p.n == 0)
    return;
  if constexpr (kIsFloat<T>) {
    if (gemmPath() == GemmPath::Fallback)
      return runPlain<T>(p, kernel);
    if (runLt(p, dtype))
      return;
    if (p.bias) {
      TensorRef biasRef = view(const_cast<void *>(p.bias), dtype, {p.n});
      TensorRef outRef = view(p.c, dtype, {p.batch * p.m, p.n});
      Product q = p;
      q.bias = nullptr;
      q.beta = 1.0f;
      expand(biasRef, outRef);
      if (runLt(q, dtype))
        return;
    }
  }
  runPlain<T>(p, kernel);
}

/// Most batches one cuBLASLt call takes (its batch count is 32-bit; the
/// grid's third dimension is the tighter bound of some kernels).
constexpr std::int64_t kMaxBatch = 65535;

} // namespace

void matmul(const TensorRef &lhs, const TensorRef &rhs, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  requireDType(rhs, lhs.dtype, "matmul");
  // Broadcast strides of each operand over the batch, in matrices.
  const plans::MatmulPlan mp = plans::matmulPlan(lhs, rhs);
  const std::int64_t m = mp.m, k = mp.k, n = mp.n;
  const Plan<2> &plan = mp.batch;
  const std::int64_t count = mp.batches();
  const std::size_t es = byteWidth(lhs.dtype);

  dispatchNumeric(lhs.dtype, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (kIsFloat<T> && k == 0) { // an empty sum; cuBLASLt wants k >= 1
      check(cudaMemsetAsync(out.data, 0, out.byteSize(), stream()), "matmul");
      return;
    }
    if (mp.foldable()) {
      Product p;
      p.m = m * count;
      p.n = n;
      p.k = k;
      p.a = lhs.data;
      p.b = rhs.data;
      p.c = out.data;
      return runProduct<T>(p, lhs.dtype, "matmul");
    }
    // Strided batches along the innermost batch dimension, one call per
    // index of the outer ones.
    const int last = plan.rank - 1;
    const std::int64_t inner = plan.shape[last];
    const std::int64_t outerCount = count / inner;
    for (std::int64_t o = 0; o < outerCount; ++o) {
      std::int64_t rest = o, offA = 0, offB = 0;
      for (int d = last - 1; d >= 0; --d) {
        const std::int64_t index = rest % plan.shape[d];
        rest /= plan.shape[d];
        offA += index * plan.strides[0][d];
        offB += index * plan.strides[1][d];
      }
      for (std::int64_t b0 = 0; b0 < inner; b0 += kMaxBatch) {
        Product p;
        p.m = m;
        p.n = n;
        p.k = k;
        p.batch = std::min(kMaxBatch, inner - b0);
        p.strideA = plan.strides[0][last] * m * k;
        p.strideB = plan.strides[1][last] * k * n;
        p.strideC = m * n;
        p.a = static_cast<const unsigned char *>(lhs.data) +
              (offA * m * k + b0 * p.strideA) * es;
        p.b = static_cast<const unsigned char *>(rhs.data) +
              (offB * k * n + b0 * p.strideB) * es;
        p.c = static_cast<unsigned char *>(out.data) +
              ((o * inner + b0) * m * n) * es;
        runProduct<T>(p, lhs.dtype, "matmul");
      }
    }
  });
}

void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const TensorRef &out) {
  requireDType(weight, in.dtype, "linear");
  requireDType(out, in.dtype, "linear");
  if (bias)
    requireDType(*bias, in.dtype, "linear");
  const plans::LinearPlan lp = plans::linearPlan(in, out);
  if (lp.empty())
    return;
  const std::int64_t k = lp.k, n = lp.n, rows = lp.rows;
  dispatchFloat(in.dtype, "linear", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (k == 0) { // an empty sum: the bias alone, or zeros
      if (bias)
        expand(view(bias->data, bias->dtype, {n}),
               view(out.data, out.dtype, {rows, n}));
      else
        check(cudaMemsetAsync(out.data, 0, out.byteSize(), stream()), "linear");
      return;
    }
    Product p;
    p.m = rows;
    p.n = n;
    p.k = k;
    p.a = in.data;
    p.b = weight.data;
    p.transB = transposeWeight;
    p.c = out.data;
    p.bias = bias ? bias->data : nullptr;
    runProduct<T>(p, in.dtype, "linear");
  });
}

} // namespace meshc::rt::cuda
