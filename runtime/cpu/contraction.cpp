//===- contraction.cpp - matmul, linear and the sgemm they share ----------===//
//
// Part of meshc. f32 products go to oneDNN's sgemm (OpenBLAS's with
// MESHC_GEMM=openblas) through detail::sgemm:
// linear as one product over all rows, matmul as one product over the folded
// batch when the right operand is shared by every batch (x @ W), else one per
// batch matrix (those in parallel when each is small). Integer matmuls (shape
// arithmetic, rare and small) are plain loops.
//
// A product of a few rows (1 to kFewRows: a decoding step) by a [k, n]
// weight, f32 or bf16, does not go to sgemm, which packs the weight for a
// product that uses each element only a few times (packing cost more than
// the product itself: 58% of a GPT-2-small decoding step): each thread
// takes a run of the weight's rows, streams it once and multiplies every row
// of the input by it (fewRowsProduct: 8 weight rows at a time against strips
// of 32 or 64 columns whose sums stay in registers), the partial sums added
// after. One row by an [n, k] weight is one dot product per output
// (gemvRows), each thread reading a contiguous block of the weight's rows.
// These are meshc's own loops, compiled per CPU level, not OpenBLAS's sgemv:
// the Debian OpenBLAS runs its oldest kernels (Prescott's) on CPUs newer
// than itself, at two thirds of the memory's speed.
//
// A bf16 weight (--dtype bf16 on the cpu target: the weights products read
// are stored in bf16, activations and sums stay f32) is widened as it is
// read, so a decoding step reads half the bytes of f32: by the same
// kernels as f32's for a few rows; a product of more rows widens the weight a
// block of columns at a time into f32 and multiplies the block by sgemm.
// Widening is exact (bf16 is f32's upper half), so the results are those of
// the f32 kernels on the bf16-rounded weights.
//
// A transposed weight of the program ([n, k]: a tied lm_head reading its
// embedding table; LinearOptions::constantWeight) times several rows goes to
// oneDNN's matmul primitive instead, with the weight repacked once into the
// primitive's layout on first use (PackedWeight): sgemm would pack it again
// on every call.
//
// linear's epilogue (LinearOptions: the bias, an activation, an add or a
// multiply by a tensor of the output's shape) is one pass over the output:
// for one row and for a few rows inside the pass that adds the threads'
// partial sums (detail::Finish, called on each finished range), else right
// after the product. A plain linear preloads its bias instead, which the
// product is added to.
//
// oneDNN generates its kernels for the CPU it runs on and threads a product
// over the OpenMP team itself (and runs on one thread inside a parallel
// region, as attention's per-head products do). OpenBLAS (sgemm under
// MESHC_GEMM=openblas) is switched to one thread on first use and
// detail::sgemm splits large products over the OpenMP team instead: the Debian
// OpenBLAS uses its own pthreads, which busy-wait after each call, and two
// spinning thread pools on the same cores slow every kernel that follows a
// GEMM.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "meshc/runtime/half.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
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
/// The fewest weight rows per thread in fewRowsGemm: shorter runs would
/// make the partial sums cost more than they save.
constexpr std::int64_t kMinRunRows = 64;

/// Rows of an input that go to fewRowsProduct instead of sgemm (by a [k, n]
/// weight).
constexpr std::int64_t kFewRows = 8;

/// A weight element as f32 (a bf16 one widened, which is exact).
inline float weightValue(float v) { return v; }
inline float weightValue(std::uint16_t b) { return bfloat16ToFloat(b); }

/// 16 floats, and 16 bf16 values: GCC vector types, so that each clone of
/// the kernels below (MESHC_CPU_CLONES) keeps them in its widest registers
/// (one zmm on x86-64-v4, two ymm on v3, four xmm on the baseline). The
/// alignment of one element lets them load from any element.
typedef float F32x16 __attribute__((vector_size(64), aligned(4)));
typedef std::uint16_t Bf16x16 __attribute__((vector_size(32), aligned(2)));
typedef std::uint32_t U32x16 __attribute__((vector_size(64)));

/// v = the 16 weights from w[0..16) as f32 (a bf16 one widened: its bits
/// are f32's upper half, so this is exact). Out-parameters rather than
/// returned vectors: the baseline clone has no register for a 64-byte
/// value.
MESHC_INLINE void load16(F32x16 &v, const float *w) { std::memcpy(&v, w, 64); }
MESHC_INLINE void load16(F32x16 &v, const std::uint16_t *w) {
  Bf16x16 half;
  std::memcpy(&half, w, 32);
  const U32x16 wide = __builtin_convertvector(half, U32x16) << 16;
  std::memcpy(&v, &wide, 64);
}

/// Weight rows multiplied per pass over the output block: each 64-byte
/// strip of output is loaded and stored once per kTileRows weight rows,
/// whose kTileRows streams the prefetchers follow.
constexpr int kTileRows = 8;

/// y[i, j0 .. j0 + cols) += sum over q < R of x[i, q] * w[q, j0 ..] for the
/// M rows of x: strips of 32 or 64 columns, their sums in registers while
/// the R weight rows' pieces are loaded, widened and multiplied by every
/// row; the columns past the last whole strip one at a time.
/// How far ahead in each weight row fewRowsTile asks for the next lines
/// (prefetcht0): the hardware prefetchers alone kept 4-row products at 25-27
/// GB/s where one row reached 31; with it both stream at 29-33, bf16 too
/// (bench/cpu_products.sh). 1 KB or more ahead was slower, and a
/// non-temporal hint halved the speed.
constexpr std::int64_t kPrefetchBytes = 512;

template <int M, int R, typename W>
MESHC_INLINE void fewRowsTile(const float *__restrict x, std::int64_t ldx,
                              const W *__restrict w, std::int64_t ldw,
                              std::int64_t cols, float *__restrict y,
                              std::int64_t ldy) {
  // Vectors of 16 columns per strip: 4 for one or two rows, so that the
  // chains of dependent additions are long enough to hide their latency.
  constexpr int U = M <= 2 ? 4 : 2;
  constexpr std::int64_t kStrip = 16 * U;
  float a[M][R];
  for (int i = 0; i < M; ++i)
    for (int q = 0; q < R; ++q)
      a[i][q] = x[i * ldx + q];
  std::int64_t j = 0;
  for (; j + kStrip <= cols; j += kStrip) {
    F32x16 acc[M][U] = {};
    for (int q = 0; q < R; ++q) {
      F32x16 wq[U];
      for (int u = 0; u < U; ++u) {
        // One request per 64-byte line: every piece of f32, every other
        // of bf16.
        if ((u * 16 * sizeof(W)) % 64 == 0)
          __builtin_prefetch(w + q * ldw + j + 16 * u +
                                 kPrefetchBytes / std::int64_t(sizeof(W)),
                             0, 3);
        load16(wq[u], w + q * ldw + j + 16 * u);
      }
      for (int i = 0; i < M; ++i)
        for (int u = 0; u < U; ++u)
          acc[i][u] += a[i][q] * wq[u];
    }
    for (int i = 0; i < M; ++i)
      for (int u = 0; u < U; ++u) {
        F32x16 sum;
        load16(sum, y + i * ldy + j + 16 * u);
        sum += acc[i][u];
        std::memcpy(y + i * ldy + j + 16 * u, &sum, 64);
      }
  }
  for (; j < cols; ++j)
    for (int i = 0; i < M; ++i) {
      float sum = 0.0f;
      for (int q = 0; q < R; ++q)
        sum += a[i][q] * weightValue(w[q * ldw + j]);
      y[i * ldy + j] += sum;
    }
}

/// y[i, :] = sum over r < rows of x[i, r] * w[r, :] for the M rows of x
/// (leading dimensions ldx, ldw, ldy), by blocks of columns whose M output
/// pieces stay in L2 while kTileRows weight rows at a time are streamed
/// through them (32 KB pieces of each row, long enough for the prefetchers)
/// and used by every row.
template <int M, typename W>
MESHC_INLINE void fewRowsBlock(const float *__restrict x, std::int64_t ldx,
                               const W *__restrict w, std::int64_t rows,
                               std::int64_t n, std::int64_t ldw,
                               float *__restrict y, std::int64_t ldy) {
  constexpr std::int64_t kCols = 8192;
  for (std::int64_t j0 = 0; j0 < n; j0 += kCols) {
    const std::int64_t cols = std::min(kCols, n - j0);
    for (int i = 0; i < M; ++i)
      std::fill(y + i * ldy + j0, y + i * ldy + j0 + cols, 0.0f);
    std::int64_t r = 0;
    for (; r + kTileRows <= rows; r += kTileRows)
      fewRowsTile<M, kTileRows>(x + r, ldx, w + r * ldw + j0, ldw, cols, y + j0,
                                ldy);
    for (; r < rows; ++r)
      fewRowsTile<M, 1>(x + r, ldx, w + r * ldw + j0, ldw, cols, y + j0, ldy);
  }
}

/// fewRowsBlock for any number of rows, four at a time.
template <typename W>
MESHC_INLINE void fewRowsRows(const float *x, std::int64_t ldx, std::int64_t m,
                              const W *w, std::int64_t rows, std::int64_t n,
                              std::int64_t ldw, float *y, std::int64_t ldy) {
  for (std::int64_t i = 0; i < m; i += 4) {
    const float *xi = x + i * ldx;
    float *yi = y + i * ldy;
    switch (std::min<std::int64_t>(4, m - i)) {
    case 1:
      fewRowsBlock<1>(xi, ldx, w, rows, n, ldw, yi, ldy);
      break;
    case 2:
      fewRowsBlock<2>(xi, ldx, w, rows, n, ldw, yi, ldy);
      break;
    case 3:
      fewRowsBlock<3>(xi, ldx, w, rows, n, ldw, yi, ldy);
      break;
    default:
      fewRowsBlock<4>(xi, ldx, w, rows, n, ldw, yi, ldy);
    }
  }
}

/// fewRowsRows on an f32 or a bf16 weight (widened as it is read, which is
/// exact), compiled for each x86-64 level (MESHC_CPU_CLONES).
MESHC_CPU_CLONES
void fewRowsProduct(const float *x, std::int64_t ldx, std::int64_t m,
                    const float *w, std::int64_t rows, std::int64_t n,
                    std::int64_t ldw, float *y, std::int64_t ldy) {
  fewRowsRows(x, ldx, m, w, rows, n, ldw, y, ldy);
}
MESHC_CPU_CLONES
void fewRowsProduct(const float *x, std::int64_t ldx, std::int64_t m,
                    const std::uint16_t *w, std::int64_t rows, std::int64_t n,
                    std::int64_t ldw, float *y, std::int64_t ldy) {
  fewRowsRows(x, ldx, m, w, rows, n, ldw, y, ldy);
}

/// c = alpha * a . b + beta * c for the m (<= kFewRows) rows of a and a
/// [k, n] weight b: the weight's rows split into one run per thread (runs
/// of at least kMinRunRows), each run's product by fewRowsProduct, the
/// partial sums added after. A weight too short for a run per thread, in a
/// product worth threading, is split by blocks of columns instead.
template <typename W>
void fewRowsGemm(int threads, std::int64_t m, std::int64_t n, std::int64_t k,
                 float alpha, const float *a, std::int64_t lda, const W *b,
                 std::int64_t ldb, float beta, float *c, std::int64_t ldc,
                 const Finish *finish) {
  const std::int64_t most = std::max<std::int64_t>(
      1, std::min<std::int64_t>(threads, k / kMinRunRows));
  const std::int64_t rowsPer = (k + most - 1) / most;
  int runs = static_cast<int>((k + rowsPer - 1) / rowsPer);
  static thread_local std::vector<float> parts;
  float *sums;
  if (runs<threads &&static_cast<double>(m) * static_cast<double>(n) * k>
          kSerialGemmMacs &&
      n >= 64 * threads) {
    runs = 1;
    parts.resize(static_cast<std::size_t>(m * n));
    sums = parts.data();
    const std::int64_t block = ((n + threads - 1) / threads + 63) / 64 * 64;
    const int blocks = static_cast<int>((n + block - 1) / block);
#pragma omp parallel for schedule(static) num_threads(blocks)
    for (int p = 0; p < blocks; ++p) {
      const std::int64_t j0 = p * block;
      fewRowsProduct(a, lda, m, b + j0, k, std::min(block, n - j0), ldb,
                     sums + j0, n);
    }
  } else {
    parts.resize(static_cast<std::size_t>(runs * m * n));
    sums = parts.data();
#pragma omp parallel for schedule(static) num_threads(runs) if (runs > 1)
    for (int p = 0; p < runs; ++p) {
      const std::int64_t l0 = p * rowsPer;
      fewRowsProduct(a + l0, lda, m, b + l0 * ldb, std::min(rowsPer, k - l0), n,
                     ldb, sums + p * m * n, n);
    }
  }
  const std::int64_t total = m * n;
  const std::int64_t chunks = (total + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (total * runs > kParallelThreshold)
  for (std::int64_t q = 0; q < chunks; ++q) {
    const std::int64_t e0 = q * kChunk, e1 = std::min(total, e0 + kChunk);
    for (std::int64_t e = e0; e < e1; ++e) {
      float sum = 0.0f;
      for (int p = 0; p < runs; ++p)
        sum += sums[p * total + e];
      float &out = c[(e / n) * ldc + e % n];
      out = (beta == 0.0f ? 0.0f : beta * out) + alpha * sum;
    }
    if (finish)
      (*finish)(e0, e1);
  }
}
/// c[j] = beta * c[j] + alpha * sum_l a[l] * B[j, l] for j in [j0, j0 +
/// len), B an f32 or bf16 [n, k] matrix (leading dimension ldb): one dot
/// product per row of B, in 16 lanes (which the compiler vectorises without
/// reordering a sum) added at the end.
template <typename W>
MESHC_INLINE void gemvRowsOf(const float *__restrict a, const W *__restrict b,
                             std::int64_t ldb, std::int64_t k, std::int64_t j0,
                             std::int64_t len, float alpha, float beta,
                             float *__restrict c) {
  constexpr std::int64_t kLanes = 16;
  const std::int64_t body = k / kLanes * kLanes;
  for (std::int64_t j = j0; j < j0 + len; ++j) {
    const W *row = b + j * ldb;
    float lanes[kLanes] = {};
    for (std::int64_t l = 0; l < body; l += kLanes)
      for (std::int64_t i = 0; i < kLanes; ++i)
        lanes[i] += a[l + i] * weightValue(row[l + i]);
    float sum = 0.0f;
    for (std::int64_t l = body; l < k; ++l)
      sum += a[l] * weightValue(row[l]);
    for (std::int64_t i = 0; i < kLanes; ++i)
      sum += lanes[i];
    c[j] = (beta == 0.0f ? 0.0f : beta * c[j]) + alpha * sum;
  }
}

/// gemvRowsOf on an f32 or a bf16 B, compiled for each x86-64 level
/// (MESHC_CPU_CLONES).
MESHC_CPU_CLONES
void gemvRows(const float *a, const float *b, std::int64_t ldb, std::int64_t k,
              std::int64_t j0, std::int64_t len, float alpha, float beta,
              float *c) {
  gemvRowsOf(a, b, ldb, k, j0, len, alpha, beta, c);
}
MESHC_CPU_CLONES
void gemvRows(const float *a, const std::uint16_t *b, std::int64_t ldb,
              std::int64_t k, std::int64_t j0, std::int64_t len, float alpha,
              float beta, float *c) {
  gemvRowsOf(a, b, ldb, k, j0, len, alpha, beta, c);
}

/// c = alpha * a . B^T + beta * c for one row a and an [n, k] B (leading
/// dimension ldb): each thread takes one contiguous block of B's rows, so
/// that its loads stream.
template <typename W>
void gemvByRows(int threads, std::int64_t n, std::int64_t k, float alpha,
                const float *a, const W *b, std::int64_t ldb, float beta,
                float *c, const Finish *finish) {
  if (threads <= 1 || static_cast<double>(n) * k <= kSerialGemmMacs) {
    gemvRows(a, b, ldb, k, 0, n, alpha, beta, c);
  } else {
    const std::int64_t block = (n + threads - 1) / threads;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int p = 0; p < threads; ++p) {
      const std::int64_t j0 = p * block;
      if (j0 < n)
        gemvRows(a, b, ldb, k, j0, std::min(block, n - j0), alpha, beta, c);
    }
  }
  if (finish)
    detail::finishAll(*finish, n);
}
} // namespace

void detail::finishAll(const Finish &finish, std::int64_t count) {
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (count > kParallelThreshold)
  for (std::int64_t q = 0; q < chunks; ++q)
    finish(q * kChunk, std::min(count, (q + 1) * kChunk));
}

void detail::sgemm(bool transB, std::int64_t m, std::int64_t n, std::int64_t k,
                   float alpha, const float *a, std::int64_t lda,
                   const float *b, std::int64_t ldb, float beta, float *c,
                   std::int64_t ldc, const Finish *finish) {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
  if (m == 0 || n == 0)
    return;
  if (finish && ldc != n)
    fatal("sgemm: an epilogue needs a contiguous output");
  // The paths that sum partial products finish each range as they write
  // it; the others finish after the product.
  auto thenFinish = [&] {
    if (finish)
      finishAll(*finish, m * n);
  };
  const CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
  const double macs =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (m == 1 && transB) {
    gemvByRows(threads, n, k, alpha, a, b, ldb, beta, c, finish);
    return;
  }
  if (!transB && m <= kFewRows) {
    fewRowsGemm(threads, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, finish);
    return;
  }
  if (useDnnl()) {
    // oneDNN threads the product over the OpenMP team itself (one thread
    // inside a parallel region).
    dnnl_status_t status = dnnl_sgemm('N', transB ? 'T' : 'N', m, n, k, alpha,
                                      a, lda, b, ldb, beta, c, ldc);
    if (status != dnnl_success)
      fatal("oneDNN sgemm failed (status " + std::to_string(status) + ")");
    return thenFinish();
  }
  if (threads <= 1 || macs <= kSerialGemmMacs) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
    return thenFinish();
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
  thenFinish();
}

namespace {

/// dst[0..n) = the bf16 values src[0..n) as f32, compiled for each x86-64
/// level (MESHC_CPU_CLONES), as the other bf16 loops below.
MESHC_CPU_CLONES void widenBf16(const std::uint16_t *src, float *dst,
                                 std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    dst[i] = bfloat16ToFloat(src[i]);
}

/// C[m, n] = A[m, k] . op(B) + beta * C for a bf16 B: [n, k] with transB,
/// else [k, n]; A and C f32 with leading dimensions k and n.
void productBf16(bool transB, std::int64_t m, std::int64_t n, std::int64_t k,
                 const float *a, const std::uint16_t *b, float beta, float *c,
                 const Finish *finish) {
  if (m == 0 || n == 0)
    return;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (!transB && m <= kFewRows) {
    fewRowsGemm(threads, m, n, k, 1.0f, a, k, b, n, beta, c, n, finish);
    return;
  }
  auto thenFinish = [&] {
    if (finish)
      finishAll(*finish, m * n);
  };
  if (m == 1) {
    // B [n, k] (the [k, n] layout went to fewRowsGemm).
    gemvByRows(threads, n, k, 1.0f, a, b, k, beta, c, finish);
    return;
  }
  // Widen a block of B's columns (about 4 MB of f32) and multiply it.
  std::int64_t block = std::max<std::int64_t>(64, (std::int64_t(1) << 20) / k);
  block = std::min(n, (block + 63) / 64 * 64);
  static thread_local std::vector<float> scratch;
  scratch.resize(static_cast<std::size_t>(block * k));
  float *wide = scratch.data();
  for (std::int64_t j0 = 0; j0 < n; j0 += block) {
    const std::int64_t len = std::min(block, n - j0);
    if (transB) {
      widenBf16(b + j0 * k, wide, len * k); // rows j0.. of [n, k]: contiguous
    } else {
#pragma omp parallel for schedule(static) if (len * k > kParallelThreshold)
      for (std::int64_t l = 0; l < k; ++l)
        widenBf16(b + l * n + j0, wide + l * len, len);
    }
    sgemm(transB, m, len, k, 1.0f, a, k, wide, transB ? k : len, beta, c + j0,
          n);
  }
  thenFinish();
}

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
  float *c = out.as<float>();
  if (s.k == 0) {
    std::fill(c, c + out.numElements(), 0.0f);
    return;
  }
  if (rhs.dtype == DType::BF16) {
    // A bf16 weight (--dtype bf16): shared by every batch, one product over
    // the folded rows; otherwise widened whole, then the f32 path.
    const auto *b16 = rhs.as<const std::uint16_t>();
    if (s.foldable) {
      productBf16(false, s.m * static_cast<std::int64_t>(s.batches.size()), s.n,
                  s.k, a + s.batches[0].first, b16 + s.batches[0].second, 0.0f,
                  c, nullptr);
      return;
    }
    std::vector<float> wide(static_cast<std::size_t>(rhs.numElements()));
    widenBf16(b16, wide.data(), rhs.numElements());
    TensorRef f32 = rhs;
    f32.dtype = DType::F32;
    f32.data = wide.data();
    return matmul(lhs, f32, out);
  }
  const float *b = rhs.as<const float>();
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

namespace {

/// A transposed weight ([n, k]: a tied lm_head reading its embedding table)
/// repacked once into oneDNN's layout for its matmul primitive, and that
/// primitive, built for any number of rows. For products of several rows
/// it is faster than sgemm, which packs the transposed weight again on
/// every call (GPT-2-small's tied lm_head, 128 rows: 47 against 62 ms; the
/// [k, n] weights gain nothing and stay on sgemm, unpacked).
struct PackedWeight {
  dnnl::matmul product;
  dnnl::memory weights;
};

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// The packed copy of the [n, k] weight at `w`, made on first use; null
/// where oneDNN offers no primitive (the caller uses sgemm then). The
/// weight must stay unchanged at `w` for the process's life (the program's
/// weights do: LinearOptions::constantWeight).
std::mutex packedMutex;
std::map<std::tuple<const float *, std::int64_t, std::int64_t>,
         std::unique_ptr<PackedWeight>>
    packedCache;

const PackedWeight *packedWeight(const float *w, std::int64_t n,
                                 std::int64_t k) {
  std::lock_guard<std::mutex> lock(packedMutex);
  auto &cache = packedCache;
  auto [it, fresh] = cache.try_emplace({w, n, k});
  if (!fresh)
    return it->second.get();
  using dnnl::memory;
  try {
    const memory::desc src({DNNL_RUNTIME_DIM_VAL, k}, memory::data_type::f32,
                           memory::format_tag::ab),
        dst({DNNL_RUNTIME_DIM_VAL, n}, memory::data_type::f32,
            memory::format_tag::ab),
        any({k, n}, memory::data_type::f32, memory::format_tag::any),
        plain({k, n}, memory::data_type::f32, memory::format_tag::ba);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, dst),
                                    cpuEngine());
    auto packed = std::make_unique<PackedWeight>();
    packed->product = dnnl::matmul(pd);
    packed->weights = memory(pd.weights_desc(), cpuEngine());
    memory original(plain, cpuEngine(), const_cast<float *>(w));
    dnnl::stream stream(cpuEngine());
    dnnl::reorder(original, packed->weights)
        .execute(stream, original, packed->weights);
    stream.wait();
    it->second = std::move(packed);
  } catch (const dnnl::error &) {
    // No primitive for this shape or CPU: sgemm serves it (it->second
    // stays null, so this is tried once).
  }
  return it->second.get();
}

} // namespace

std::size_t detail::packedWeightCount() {
  std::lock_guard<std::mutex> lock(packedMutex);
  std::size_t count = 0;
  for (const auto &entry : packedCache)
    count += entry.second != nullptr;
  return count;
}

namespace {

/// c[m, n] = a[m, k] . W^T by the packed weight.
void packedProduct(const PackedWeight &packed, std::int64_t m, std::int64_t n,
                   std::int64_t k, const float *a, float *c) {
  using dnnl::memory;
  try {
    memory src({{m, k}, memory::data_type::f32, memory::format_tag::ab},
               cpuEngine(), const_cast<float *>(a));
    memory dst({{m, n}, memory::data_type::f32, memory::format_tag::ab},
               cpuEngine(), c);
    dnnl::stream stream(cpuEngine());
    packed.product.execute(stream, {{DNNL_ARG_SRC, src},
                                    {DNNL_ARG_WEIGHTS, packed.weights},
                                    {DNNL_ARG_DST, dst}});
    stream.wait();
  } catch (const dnnl::error &e) {
    fatal(std::string("oneDNN matmul failed: ") + e.what());
  }
}

/// The bias, activation and binary op of `options` on elements [begin, end)
/// of the [rows, n] output c, in place, one row's piece at a time.
void applyEpilogue(const LinearOptions &options, const float *bias,
                   FloatRun unary, const float *other, std::int64_t n, float *c,
                   std::int64_t begin, std::int64_t end) {
  for (std::int64_t e = begin; e < end;) {
    const std::int64_t col = e % n, len = std::min(end - e, n - col);
    float *y = c + e;
    if (bias)
      for (std::int64_t j = 0; j < len; ++j)
        y[j] += bias[col + j];
    if (unary)
      unary(y, y, len);
    if (other) {
      const float *x = other + e;
      if (options.binary == BinaryOp::Mul)
        for (std::int64_t j = 0; j < len; ++j)
          y[j] *= x[j];
      else
        for (std::int64_t j = 0; j < len; ++j)
          y[j] += x[j];
    }
    e += len;
  }
}

} // namespace

void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const TensorRef &out) {
  linear(in, weight, bias, transposeWeight, LinearOptions{}, out);
}

void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const LinearOptions &options,
            const TensorRef &out) {
  requireF32(in, "linear");
  if (weight.dtype != DType::BF16)
    requireF32(weight, "linear");
  const plans::LinearPlan p = plans::linearPlan(in, out);
  if (p.empty())
    return;
  const std::int64_t k = p.k, n = p.n, rows = p.rows;
  const float *a = in.as<const float>();
  float *c = out.as<float>();
  const float *b = nullptr;
  if (bias) {
    requireF32(*bias, "linear");
    b = bias->as<const float>();
  }
  FloatRun unary = nullptr;
  if (options.hasUnary && !(unary = floatRun(options.unary)))
    fatal("linear: the epilogue's unary op is not an f32 math op");
  const float *other = nullptr;
  if (options.other) {
    requireF32(*options.other, "linear");
    if (options.other->numElements() != rows * n)
      fatal("linear: the epilogue's operand has " +
            std::to_string(options.other->numElements()) +
            " elements, the output " + std::to_string(rows * n));
    if (options.binary != BinaryOp::Add && options.binary != BinaryOp::Mul)
      fatal("linear: the epilogue's binary op is neither add nor mul");
    other = options.other->as<const float>();
  }
  // A transposed program weight times several rows: by its packed copy.
  const PackedWeight *packed = nullptr;
  if (weight.dtype == DType::F32 && transposeWeight && options.constantWeight &&
      rows > 1 && k > 0 && useDnnl() && !omp_in_parallel() &&
      static_cast<double>(rows) * static_cast<double>(n) * k > kSerialGemmMacs)
    packed = packedWeight(weight.as<const float>(), n, k);
  // The bias, the activation and the binary op in one pass: inside the
  // pass that sums a few-row product's partial sums, else after the
  // product. A plain linear instead preloads the bias, which the product
  // is added to.
  Finish finish = [&](std::int64_t begin, std::int64_t end) {
    applyEpilogue(options, b, unary, other, n, c, begin, end);
  };
  const bool inPass = unary || other || (b && packed);
  const Finish *then = inPass ? &finish : nullptr;
  float beta = 0.0f;
  if (b && !inPass) {
#pragma omp parallel for schedule(static) if (rows * n > kParallelThreshold)
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(c + r * n, b, static_cast<std::size_t>(n) * sizeof(float));
    beta = 1.0f;
  }
  if (k == 0) {
    if (beta == 0.0f)
      std::fill(c, c + rows * n, 0.0f);
    if (then)
      finishAll(*then, rows * n);
    return;
  }
  if (packed) {
    packedProduct(*packed, rows, n, k, a, c);
    if (then)
      finishAll(*then, rows * n);
    return;
  }
  if (weight.dtype == DType::BF16) {
    productBf16(transposeWeight, rows, n, k, a,
                weight.as<const std::uint16_t>(), beta, c, then);
    return;
  }
  sgemm(transposeWeight, rows, n, k, 1.0f, a, k, weight.as<const float>(),
        transposeWeight ? k : n, beta, c, n, then);
}

} // namespace meshc::rt::cpu
