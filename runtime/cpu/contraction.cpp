//===- contraction.cpp - matmul, linear and the sgemm they share ----------===//
//
// Part of meshc. f32 products go to oneDNN's sgemm (OpenBLAS's with
// MESHC_GEMM=openblas) through detail::sgemm:
// linear as one product over all rows, matmul as one product over the folded
// batch when the right operand is shared by every batch (x @ W), else one per
// batch matrix (those in parallel when each is small). Integer matmuls (shape
// arithmetic, rare and small) are plain loops.
//
// A product of one row (a decoding step's linear: M = 1) goes to sgemv
// instead: sgemm would first copy (pack) the whole weight matrix, which cost
// more than the product itself (58% of a GPT-2-small decoding step).
//
// oneDNN generates its kernels for the CPU it runs on and threads a product
// over the OpenMP team itself (and runs on one thread inside a parallel
// region, as attention's per-head products do). OpenBLAS (sgemv, and sgemm
// under MESHC_GEMM=openblas) is switched to one thread on first use and
// detail::sgemm splits large products over the OpenMP team instead: the Debian OpenBLAS uses its
// own pthreads, which busy-wait after each call, and two spinning thread pools
// on the same cores slow every kernel that follows a GEMM.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "runtime/cpu/KernelsInternal.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

namespace {
/// oneDNN's sgemm for products of several rows, unless MESHC_GEMM=openblas.
bool useDnnl() {
  static const bool dnnl = [] {
    const char *choice = std::getenv("MESHC_GEMM");
    return !choice || std::string(choice) != "openblas";
  }();
  return dnnl;
}
} // namespace

void detail::sgemm(bool transB, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const float *a, std::int64_t lda,
                   const float *b, std::int64_t ldb, float beta, float *c,
                   std::int64_t ldc) {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
  if (m == 0 || n == 0)
    return;
  const CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
  const double macs =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (m == 1) {
    // c[0, j0:j0+len] = alpha * a . op(b)[:, j0:j0+len] + beta * c: B is
    // [n, k] (transB: y = B a) or [k, n] (y = B^T a).
    auto gemv = [&](std::int64_t j0, std::int64_t len) {
      if (transB)
        cblas_sgemv(CblasRowMajor, CblasNoTrans, len, k, alpha, b + j0 * ldb,
                    ldb, a, 1, beta, c + j0, 1);
      else
        cblas_sgemv(CblasRowMajor, CblasTrans, k, len, alpha, b + j0, ldb, a,
                    1, beta, c + j0, 1);
    };
    if (threads <= 1 || macs <= kSerialGemmMacs) {
      gemv(0, n);
      return;
    }
    std::int64_t block = (n + threads - 1) / threads;
    block = (block + 15) / 16 * 16;
    const std::int64_t blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (std::int64_t p = 0; p < blocks; ++p)
      gemv(p * block, std::min(block, n - p * block));
    return;
  }
  if (useDnnl()) {
    // oneDNN threads the product over the OpenMP team itself (one thread
    // inside a parallel region).
    dnnl_status_t status =
        dnnl_sgemm('N', transB ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                   beta, c, ldc);
    if (status != dnnl_success)
      fatal("oneDNN sgemm failed (status " + std::to_string(status) + ")");
    return;
  }
  if (threads <= 1 || macs <= kSerialGemmMacs) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
    return;
  }
  // Split the longer side of C into one block per thread, rounded to the
  // kernels' register blocking (16 columns, 4 rows).
  const bool byRows = m >= n;
  const std::int64_t extent = byRows ? m : n, align = byRows ? 4 : 16;
  std::int64_t block = (extent + threads - 1) / threads;
  block = (block + align - 1) / align * align;
  const std::int64_t blocks = (extent + block - 1) / block;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t p = 0; p < blocks; ++p) {
    const std::int64_t begin = p * block;
    const std::int64_t len = std::min(block, extent - begin);
    if (byRows)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, len, n, k, alpha,
                  a + begin * lda, lda, b, ldb, beta, c + begin * ldc, ldc);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, len, k, alpha, a, lda,
                  transB ? b + begin * ldb : b + begin, ldb, beta, c + begin,
                  ldc);
  }
}

namespace {

/// The shape of a numpy matmul: M, K, N, and the offsets (in elements) of
/// each batch's lhs and rhs matrices.
struct MatmulShape {
  std::int64_t m = 1, k = 1, n = 1;
  std::vector<std::pair<std::int64_t, std::int64_t>> batches;
  /// True when every batch reads the same rhs and consecutive lhs matrices,
  /// so the batch folds into M.
  bool foldable = false;
};

MatmulShape matmulShape(const TensorRef &lhs, const TensorRef &rhs) {
  const plans::MatmulPlan p = plans::matmulPlan(lhs, rhs);
  MatmulShape s;
  s.m = p.m;
  s.k = p.k;
  s.n = p.n;
  const StridePlan<2> &plan = p.batch;
  const std::int64_t count = p.batches();
  s.batches.reserve(count);
  forEachRun(plan, 0, count,
             [&](std::int64_t, const std::int64_t *off, std::int64_t len) {
               for (std::int64_t i = 0; i < len; ++i)
                 s.batches.emplace_back(
                     (off[0] + i * plan.innerStride(0)) * s.m * s.k,
                     (off[1] + i * plan.innerStride(1)) * s.k * s.n);
             });
  s.foldable = p.foldable();
  return s;
}

template <typename T>
void integerMatmul(const TensorRef &lhs, const TensorRef &rhs,
                   const TensorRef &out, const MatmulShape &s) {
  const T *a = lhs.as<const T>();
  const T *b = rhs.as<const T>();
  T *c = out.as<T>();
  const std::int64_t batches = static_cast<std::int64_t>(s.batches.size());
  const std::int64_t rows = batches * s.m;
#pragma omp parallel for schedule(static) if (rows * s.n * s.k >               \
                                              kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t bi = r / s.m, i = r % s.m;
    const T *arow = a + s.batches[bi].first + i * s.k;
    const T *bm = b + s.batches[bi].second;
    T *crow = c + r * s.n;
    for (std::int64_t j = 0; j < s.n; ++j)
      crow[j] = 0;
    for (std::int64_t l = 0; l < s.k; ++l) {
      const T av = arow[l];
      const T *brow = bm + l * s.n;
      for (std::int64_t j = 0; j < s.n; ++j)
        crow[j] += av * brow[j];
    }
  }
}

} // namespace

void matmul(const TensorRef &lhs, const TensorRef &rhs, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const MatmulShape s = matmulShape(lhs, rhs);
  switch (lhs.dtype) {
  case DType::F32:
    break;
  case DType::I64:
    return integerMatmul<std::int64_t>(lhs, rhs, out, s);
  case DType::I32:
    return integerMatmul<std::int32_t>(lhs, rhs, out, s);
  default:
    unsupportedDType("matmul", lhs.dtype);
  }
  const float *a = lhs.as<const float>();
  const float *b = rhs.as<const float>();
  float *c = out.as<float>();
  if (s.k == 0) {
    std::fill(c, c + out.numElements(), 0.0f);
    return;
  }
  // A 1-D rhs is a K x 1 column: row-major with leading dimension 1.
  const std::int64_t ldb = s.n;
  const std::int64_t batches = static_cast<std::int64_t>(s.batches.size());
  if (s.foldable) {
    sgemm(false, s.m * batches, s.n, s.k, 1.0f, a + s.batches[0].first, s.k,
          b + s.batches[0].second, ldb, 0.0f, c, s.n);
    return;
  }
  const double macs = static_cast<double>(s.m) * static_cast<double>(s.n) *
                      static_cast<double>(s.k);
  if (macs > kSerialGemmMacs) {
    for (std::int64_t i = 0; i < batches; ++i)
      sgemm(false, s.m, s.n, s.k, 1.0f, a + s.batches[i].first, s.k,
            b + s.batches[i].second, ldb, 0.0f, c + i * s.m * s.n, s.n);
    return;
  }
  // Many small products (attention written as matmuls): one per thread.
#pragma omp parallel for schedule(static) if (macs * batches > kSerialGemmMacs)
  for (std::int64_t i = 0; i < batches; ++i)
    sgemm(false, s.m, s.n, s.k, 1.0f, a + s.batches[i].first, s.k,
          b + s.batches[i].second, ldb, 0.0f, c + i * s.m * s.n, s.n);
}

void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const TensorRef &out) {
  requireF32(in, "linear");
  requireF32(weight, "linear");
  const plans::LinearPlan p = plans::linearPlan(in, out);
  if (p.empty())
    return;
  const std::int64_t k = p.k, n = p.n, rows = p.rows;
  float *c = out.as<float>();
  float beta = 0.0f;
  if (bias) {
    // Preload every row with the bias; sgemm then adds the product.
    requireF32(*bias, "linear");
    const float *b = bias->as<const float>();
#pragma omp parallel for schedule(static) if (rows * n > kParallelThreshold)
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(c + r * n, b, static_cast<std::size_t>(n) * sizeof(float));
    beta = 1.0f;
  }
  if (k == 0) {
    if (!bias)
      std::fill(c, c + rows * n, 0.0f);
    return;
  }
  sgemm(transposeWeight, rows, n, k, 1.0f, in.as<const float>(), k,
        weight.as<const float>(), transposeWeight ? k : n, beta, c, n);
}

} // namespace meshc::rt::cpu
