//===- attention.cu - Scaled dot-product attention ------------------------===//
//
// Part of meshc. attention on the GPU, with the semantics of the CPU kernel:
//
//   1. K and V are `present` (past ++ new, written first) or key/value; with
//      an in-place cache, the cache buffers after the new rows are appended.
//   2. The score of query i and key j < limit(i) (limit: i + P + 1 under a
//      causal mask without softcap or with softcapFirst, else all keys) is
//      scale * q . k_j; then the mask (bool: -inf where false; float:
//      added), then with a softcap the causal -inf and s = softcap *
//      tanh(s / softcap), so that a masked key scores -softcap (ONNX
//      Attention-23's order); with softcapFirst the softcap comes before the
//      mask (Gemma-2's order) and a masked key is excluded.
//   3. A softmax over those scores weights the value rows. A row without a
//      finite score gives zeros; a NaN score with a finite maximum makes the
//      row NaN (as the CPU's max-subtracted softmax does).
//
// With sinks (one score per query head, in no value row's place) the
// finished row divides by l + exp(sink - m): the sink joins the softmax's
// denominator only.
//
// With a finite causal fill (HF's finfo.min) every key is scored, those past
// the causal limit carrying the fill in place of the mask's value: a row
// whose every key carries a fill
// then spreads over all keys, as the unraised mask computes it. (The CPU
// kernel skips the later keys and scores such rows again; here the skip is
// given up for those models instead.)
//
// The softmax is online (flash attention): a running maximum m, a running
// sum l of exp(s - m) and an accumulator of exp(s - m) v, rescaled by
// exp(m_old - m_new) when the maximum grows, all in f32 whatever the element
// type. Two kernels:
//
//   - prefill (more than a few queries): a block per (batch, head, 32
//     queries); tiles of 32 keys and their values are converted to f32 in
//     shared memory, each warp owns 4 query rows, a lane scores one key of
//     the tile for its rows and then accumulates 1/32 of the value columns.
//   - decode (a few queries, or head dimensions whose tiles do not fit in
//     shared memory): a block per query row and per split of the keys; each
//     warp walks every fourth key of the split (lanes split the head
//     dimension, a shuffle reduction gives the score), the block merges its
//     warps, and with several splits a second kernel merges the splits'
//     (m, l, accumulator) triples, kept in the cuBLASLt workspace (the
//     stream orders its uses).
//
// Head dimensions up to 256 (8 values per lane in registers).
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/cuda_kernels.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelsInternal.cuh"

#include <algorithm>
#include <string>
#include <vector>

namespace meshc::rt::cuda {
using namespace detail;

namespace {

/// Largest head dimension (of keys and of values) the kernels take.
constexpr int kMaxHeadDim = 256;
/// Elements of a head vector one lane holds.
constexpr int kLaneChunks = kMaxHeadDim / 32;

/// Queries per block and keys per tile of the prefill kernel, its warps,
/// and the query rows each warp owns (rows warp, warp + 8, ...).
constexpr int kBlockQ = 32;
constexpr int kBlockK = 32;
constexpr int kFlashWarps = 8;
constexpr int kRowsPerWarp = kBlockQ / kFlashWarps;

/// Warps of a decode block; queries up to which decode beats prefill (the
/// prefill block would mostly compute padding rows).
constexpr int kDecodeWarps = 4;
constexpr std::int64_t kDecodeMaxQueries = 4;
/// Keys below which a split is not worth its share of the merge.
constexpr std::int64_t kMinKeysPerSplit = 64;

enum class MaskKind : int { None, Bool, SameAsQuery, F32 };

/// Everything both kernels read: q [B, H, S, D], k [B, Hkv, T, D], v [B,
/// Hkv, T, Dv], out [B, H, S, Dv] (T = past + new keys), the mask read
/// through broadcast strides over [B, H, S, T].
template <typename T> struct AttentionArgs {
  const T *q = nullptr, *k = nullptr, *v = nullptr;
  T *out = nullptr;
  const void *mask = nullptr;
  MaskKind maskKind = MaskKind::None;
  std::int64_t maskStrides[4] = {};
  std::int64_t heads = 0, kvHeads = 0, group = 1, seq = 0, total = 0, past = 0;
  /// Per batch row, in place of `past` (dfg.attention's past_lengths; device
  /// memory).
  const std::int64_t *rowPast = nullptr;
  /// Positions per KV head in k and v: total, or the in-place cache's
  /// capacity.
  std::int64_t kvStride = 0;
  int dim = 0, vDim = 0;
  float scale = 1.0f, softcap = 0.0f;
  /// Added to keys past the causal limit: -inf, or a finite fill.
  float causalFill = -INFINITY;
  bool causal = false, softcapFirst = false;
  /// One score per query head in the softmax's denominator (dfg.attention's
  /// sinks; device memory), or null.
  const T *sinks = nullptr;
};

/// Head h's sink, -inf without sinks.
template <typename T>
__device__ __forceinline__ float sinkOf(const T *sinks, std::int64_t h) {
  return sinks ? toFloat(sinks[h]) : -INFINITY;
}

/// Keys j < keyLimit(i) are scored for query i: those not causally masked,
/// or all of them under a softcap after the mask (where a masked key scores
/// -softcap) or a finite causal fill.
template <typename T>
__device__ __forceinline__ std::int64_t pastOf(const AttentionArgs<T> &a,
                                               std::int64_t b) {
  return a.rowPast ? a.rowPast[b] : a.past;
}
template <typename T>
__device__ __forceinline__ std::int64_t keyLimit(const AttentionArgs<T> &a,
                                                 std::int64_t b,
                                                 std::int64_t i) {
  const std::int64_t past = pastOf(a, b);
  if (a.causal && (a.softcap <= 0.0f || a.softcapFirst) &&
      !isfinite(a.causalFill) && i + past + 1 < a.total)
    return i + past + 1 > 0 ? i + past + 1 : 0; // none before a row's start
  return a.total;
}

/// The score of query (b, h, i) and key j from the raw dot product: scaled,
/// masked, then soft-capped (see the file comment for the order).
template <typename T>
__device__ __forceinline__ float
finishScore(const AttentionArgs<T> &a, float dot, std::int64_t b,
            std::int64_t h, std::int64_t i, std::int64_t j) {
  float s = a.scale * dot;
  if (a.softcap > 0.0f && a.softcapFirst)
    s = a.softcap * tanhf(s * (1.0f / a.softcap));
  const bool future = a.causal && j > i + pastOf(a, b);
  if (future && isfinite(a.causalFill)) {
    s += a.causalFill; // in place of the mask's value
  } else if (a.maskKind != MaskKind::None) {
    const std::int64_t off = b * a.maskStrides[0] + h * a.maskStrides[1] +
                             i * a.maskStrides[2] + j * a.maskStrides[3];
    if (a.maskKind == MaskKind::Bool) {
      if (!static_cast<const std::uint8_t *>(a.mask)[off])
        s = -INFINITY;
    } else if (a.maskKind == MaskKind::SameAsQuery) {
      s += toFloat(static_cast<const T *>(a.mask)[off]);
    } else {
      s += static_cast<const float *>(a.mask)[off];
    }
  }
  if (future && !isfinite(a.causalFill))
    s = -INFINITY;
  if (a.softcap > 0.0f && !a.softcapFirst) {
    s = a.softcap * tanhf(s * (1.0f / a.softcap));
  }
  return s;
}

/// The output of a row from its online-softmax state, a sink (-inf: none)
/// added to the denominator (exp(sink - m) scales it as l is scaled).
__device__ __forceinline__ float finishRow(float acc, float m, float l,
                                           bool nan, float sink) {
  if (m == -INFINITY)
    return 0.0f;
  return nan ? NAN : acc / (l + expf(sink - m));
}

//===----------------------------------------------------------------------===//
// Prefill
//===----------------------------------------------------------------------===//

/// Dynamic shared memory of the prefill kernel: the query tile, the key
/// tile (rows padded to an odd length, so that lanes reading different keys
/// at the same feature hit different banks), the value tile and the
/// weights.
std::size_t flashSharedBytes(int dim, int vDim) {
  return sizeof(float) *
         (static_cast<std::size_t>(kBlockQ) * dim +
          static_cast<std::size_t>(kBlockK) * (dim | 1) +
          static_cast<std::size_t>(kBlockK) * vDim + kBlockQ * kBlockK);
}

template <typename T>
__global__ void __launch_bounds__(kFlashWarps * 32)
    attentionFlashKernel(AttentionArgs<T> a) {
  extern __shared__ float smem[];
  const int dim = a.dim, vDim = a.vDim, ldk = dim | 1;
  float *qs = smem;                // [kBlockQ][dim]
  float *ks = qs + kBlockQ * dim;  // [kBlockK][ldk]
  float *vs = ks + kBlockK * ldk;  // [kBlockK][vDim]
  float *ps = vs + kBlockK * vDim; // [kBlockQ][kBlockK]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const std::int64_t q0 = std::int64_t(blockIdx.x) * kBlockQ;
  const std::int64_t h = blockIdx.y, b = blockIdx.z;
  const std::int64_t kvHead = b * a.kvHeads + h / a.group;
  const T *qh = a.q + (b * a.heads + h) * a.seq * dim;
  const T *kh = a.k + kvHead * a.kvStride * dim;
  const T *vh = a.v + kvHead * a.kvStride * vDim;
  T *oh = a.out + (b * a.heads + h) * a.seq * vDim;
  const int rows =
      a.seq - q0 < kBlockQ ? static_cast<int>(a.seq - q0) : kBlockQ;

  for (int e = tid; e < kBlockQ * dim; e += blockDim.x) {
    const int r = e / dim, d = e - r * dim;
    qs[e] = r < rows ? toFloat(qh[(q0 + r) * dim + d]) : 0.0f;
  }
  // keyLimit grows with i: the block's last query sees the most keys.
  const std::int64_t keyEnd = keyLimit(a, b, q0 + rows - 1);

  float m[kRowsPerWarp], l[kRowsPerWarp];
  bool nan[kRowsPerWarp];
  float acc[kRowsPerWarp][kLaneChunks];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    nan[r] = false;
#pragma unroll
    for (int t = 0; t < kLaneChunks; ++t)
      acc[r][t] = 0.0f;
  }

  for (std::int64_t k0 = 0; k0 < keyEnd; k0 += kBlockK) {
    __syncthreads(); // the previous tile is consumed (and qs is written)
    for (int e = tid; e < kBlockK * dim; e += blockDim.x) {
      const int j = e / dim, d = e - j * dim;
      ks[j * ldk + d] =
          k0 + j < keyEnd ? toFloat(kh[(k0 + j) * dim + d]) : 0.0f;
    }
    for (int e = tid; e < kBlockK * vDim; e += blockDim.x) {
      const int j = e / vDim, d = e - j * vDim;
      vs[e] = k0 + j < keyEnd ? toFloat(vh[(k0 + j) * vDim + d]) : 0.0f;
    }
    __syncthreads();

    // Lane `lane` scores key k0 + lane for the warp's rows.
    float dot[kRowsPerWarp] = {};
    const float *kRow = ks + lane * ldk;
    for (int d = 0; d < dim; ++d) {
      const float kd = kRow[d];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r)
        dot[r] += qs[(warp + r * kFlashWarps) * dim + d] * kd;
    }
    const std::int64_t j = k0 + lane;
    float corr[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp + r * kFlashWarps;
      const std::int64_t i = q0 + row;
      float s = -INFINITY;
      if (row < rows && j < keyLimit(a, b, i))
        s = finishScore(a, dot[r], b, h, i, j);
      const bool isNan = isnan(s);
      const bool anyNan = __any_sync(0xffffffffu, isNan);
      nan[r] = nan[r] || anyNan;
      // fmaxf drops NaN: a NaN score never becomes the maximum.
      const float tileMax = warpReduce(s, FMaxOp{});
      float p = 0.0f;
      corr[r] = 1.0f;
      if (tileMax != -INFINITY) { // the same for the whole warp
        const float mNew = fmaxf(m[r], tileMax);
        corr[r] = expf(m[r] - mNew);
        p = (isNan || s == -INFINITY) ? 0.0f : expf(s - mNew);
        l[r] = l[r] * corr[r] + warpReduce(p, SumOp{});
        m[r] = mNew;
      }
      ps[row * kBlockK + lane] = p;
    }
    __syncwarp();

    // Lane `lane` accumulates value columns lane, lane + 32, ...
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
      for (int t = 0; t < kLaneChunks; ++t)
        acc[r][t] *= corr[r];
    for (int jj = 0; jj < kBlockK; ++jj) {
      float v[kLaneChunks];
#pragma unroll
      for (int t = 0; t < kLaneChunks; ++t) {
        const int dv = lane + 32 * t;
        v[t] = dv < vDim ? vs[jj * vDim + dv] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float p = ps[(warp + r * kFlashWarps) * kBlockK + jj];
#pragma unroll
        for (int t = 0; t < kLaneChunks; ++t)
          acc[r][t] += p * v[t];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp + r * kFlashWarps;
    if (row >= rows)
      continue;
#pragma unroll
    for (int t = 0; t < kLaneChunks; ++t) {
      const int dv = lane + 32 * t;
      if (dv < vDim)
        oh[(q0 + row) * vDim + dv] = fromFloat<T>(
            finishRow(acc[r][t], m[r], l[r], nan[r], sinkOf(a.sinks, h)));
    }
  }
}

//===----------------------------------------------------------------------===//
// Decode
//===----------------------------------------------------------------------===//

/// Floats one split's partial result takes: m, l, the NaN flag, then the
/// unnormalised accumulator of vDim values.
__host__ __device__ constexpr std::int64_t partialStride(int vDim) {
  return vDim + 3;
}

/// Block (row, split): query row = (b, h, i), keys [split * keysPerSplit,
/// (split + 1) * keysPerSplit) below keyLimit(i). With one split it writes
/// the output; otherwise its partial triple to `partial`.
template <typename T>
__global__ void __launch_bounds__(kDecodeWarps * 32)
    attentionDecodeKernel(AttentionArgs<T> a, int splits,
                          std::int64_t keysPerSplit, float *partial) {
  __shared__ float warpM[kDecodeWarps], warpL[kDecodeWarps];
  __shared__ int warpNan[kDecodeWarps];
  __shared__ float warpAcc[kDecodeWarps][kMaxHeadDim];
  const int dim = a.dim, vDim = a.vDim;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::int64_t row = blockIdx.x;
  const int split = blockIdx.y;
  std::int64_t bh, i, b, h;
  divmod(row, a.seq, bh, i);
  divmod(bh, a.heads, b, h);
  const std::int64_t kvHead = b * a.kvHeads + h / a.group;
  const T *qr = a.q + row * dim;
  const T *kh = a.k + kvHead * a.kvStride * dim;
  const T *vh = a.v + kvHead * a.kvStride * vDim;

  float q[kLaneChunks];
#pragma unroll
  for (int t = 0; t < kLaneChunks; ++t) {
    const int d = lane + 32 * t;
    q[t] = d < dim ? toFloat(qr[d]) : 0.0f;
  }
  float acc[kLaneChunks] = {};
  float m = -INFINITY, l = 0.0f;
  bool nan = false;
  const std::int64_t begin = split * keysPerSplit;
  const std::int64_t limit = keyLimit(a, b, i);
  const std::int64_t end =
      begin + keysPerSplit < limit ? begin + keysPerSplit : limit;
  for (std::int64_t j = begin + warp; j < end; j += kDecodeWarps) {
    const T *kj = kh + j * dim;
    float dot = 0.0f;
#pragma unroll
    for (int t = 0; t < kLaneChunks; ++t) {
      const int d = lane + 32 * t;
      if (d < dim)
        dot += q[t] * toFloat(kj[d]);
    }
    dot = warpReduce(dot, SumOp{});
    const float s = finishScore(a, dot, b, h, i, j);
    if (isnan(s)) {
      nan = true;
      continue;
    }
    if (s == -INFINITY)
      continue;
    const float mNew = fmaxf(m, s);
    const float corr = expf(m - mNew);
    const float p = expf(s - mNew);
    l = l * corr + p;
    const T *vj = vh + j * vDim;
#pragma unroll
    for (int t = 0; t < kLaneChunks; ++t) {
      const int dv = lane + 32 * t;
      if (dv < vDim)
        acc[t] = acc[t] * corr + p * toFloat(vj[dv]);
    }
    m = mNew;
  }

  // Merge the warps: rescale each to the block's maximum.
  if (lane == 0) {
    warpM[warp] = m;
    warpL[warp] = l;
    warpNan[warp] = nan;
  }
#pragma unroll
  for (int t = 0; t < kLaneChunks; ++t) {
    const int dv = lane + 32 * t;
    if (dv < vDim)
      warpAcc[warp][dv] = acc[t];
  }
  __syncthreads();
  float blockM = -INFINITY, blockL = 0.0f;
  bool blockNan = false;
  float factor[kDecodeWarps];
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    blockM = fmaxf(blockM, warpM[w]);
    blockNan = blockNan || warpNan[w];
  }
#pragma unroll
  for (int w = 0; w < kDecodeWarps; ++w) {
    // A warp that scored no key has m = -inf and nothing to add.
    factor[w] = warpM[w] == -INFINITY ? 0.0f : expf(warpM[w] - blockM);
    blockL += warpL[w] * factor[w];
  }
  const std::int64_t base = (row * splits + split) * partialStride(vDim);
  for (int dv = threadIdx.x; dv < vDim; dv += blockDim.x) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kDecodeWarps; ++w)
      sum += warpAcc[w][dv] * factor[w];
    if (splits == 1)
      a.out[row * vDim + dv] = fromFloat<T>(
          finishRow(sum, blockM, blockL, blockNan, sinkOf(a.sinks, h)));
    else
      partial[base + 3 + dv] = sum;
  }
  if (splits > 1 && threadIdx.x == 0) {
    partial[base] = blockM;
    partial[base + 1] = blockL;
    partial[base + 2] = blockNan ? 1.0f : 0.0f;
  }
}

/// Merges the splits of each row (one block per row) as the decode kernel
/// merges its warps.
template <typename T>
__global__ void attentionMergeKernel(const float *partial, int splits, int vDim,
                                     T *out, const T *sinks, std::int64_t seq,
                                     std::int64_t heads) {
  const std::int64_t row = blockIdx.x;
  const float sink = sinkOf(sinks, (row / seq) % heads);
  const std::int64_t stride = partialStride(vDim);
  const float *p = partial + row * splits * stride;
  float m = -INFINITY, l = 0.0f;
  bool nan = false;
  for (int s = 0; s < splits; ++s) {
    m = fmaxf(m, p[s * stride]);
    nan = nan || p[s * stride + 2] != 0.0f;
  }
  for (int s = 0; s < splits; ++s) {
    const float ms = p[s * stride];
    if (ms != -INFINITY)
      l += p[s * stride + 1] * expf(ms - m);
  }
  for (int dv = threadIdx.x; dv < vDim; dv += blockDim.x) {
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float ms = p[s * stride];
      if (ms != -INFINITY)
        sum += p[s * stride + 3 + dv] * expf(ms - m);
    }
    out[row * vDim + dv] = fromFloat<T>(finishRow(sum, m, l, nan, sink));
  }
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

/// K or V as attention reads them: `present` filled with past ++ fresh
/// along the sequence when given (then read from it), else `fresh`.
const void *keysOrValues(const TensorRef &fresh, const TensorRef *past,
                         const TensorRef *present) {
  if (!present)
    return fresh.data;
  if (past) {
    const std::size_t width = byteWidth(fresh.dtype);
    const plans::ConcatPlan p = plans::presentPlan(*present);
    const std::size_t pastRow =
        static_cast<std::size_t>(p.rowOf(*past)) * width;
    const std::size_t freshRow =
        static_cast<std::size_t>(p.rowOf(fresh)) * width;
    const std::size_t presentRow = static_cast<std::size_t>(p.outRow) * width;
    auto *dst = static_cast<unsigned char *>(present->data);
    copyRows(dst, presentRow, past->data, pastRow, pastRow, p.outer,
             "attention");
    copyRows(dst + pastRow, presentRow, fresh.data, freshRow, freshRow, p.outer,
             "attention");
  } else {
    copy(fresh, *present);
  }
  return present->data;
}

/// The in-place cache: the new rows `fresh` [B, Hkv, S, D] written after
/// the `past` positions (rowPast[b] for batch row b, where given: host
/// memory) of each head of `cache` (capacity positions per head); returns
/// the cache, which attention then reads.
const void *appendInPlace(const TensorRef &fresh, const TensorRef &cache,
                          std::int64_t past, std::int64_t capacity,
                          const std::int64_t *rowPast) {
  const std::size_t width = byteWidth(fresh.dtype);
  const std::size_t row =
      static_cast<std::size_t>(fresh.shape[2] * fresh.shape[3]) * width;
  const std::size_t head =
      static_cast<std::size_t>(capacity * fresh.shape[3]) * width;
  auto *base = static_cast<unsigned char *>(cache.data);
  auto *in = static_cast<const unsigned char *>(fresh.data);
  const std::int64_t kvHeads = fresh.shape[1];
  if (!rowPast) {
    copyRows(base + static_cast<std::size_t>(past * fresh.shape[3]) * width,
             head, in, row, row, fresh.shape[0] * kvHeads, "attention");
    return cache.data;
  }
  // A negative rowPast[b] drops that many of the row's first new positions.
  const std::size_t position = static_cast<std::size_t>(fresh.shape[3]) * width;
  for (std::int64_t b = 0; b < fresh.shape[0]; ++b) {
    const std::int64_t at = rowPast[b] > 0 ? rowPast[b] : 0;
    const std::size_t dropped = static_cast<std::size_t>(at - rowPast[b]) *
                                position;
    copyRows(base + static_cast<std::size_t>(b * kvHeads) * head +
                 static_cast<std::size_t>(at) * position,
             head, in + static_cast<std::size_t>(b * kvHeads) * row + dropped,
             row, row - dropped, kvHeads, "attention");
  }
  return cache.data;
}

/// K or V under past_lengths: present [B, Hkv, P + S, D] holds row b's
/// first rowPast[b] (host memory) past positions, then `fresh`'s S, then
/// zeros; a negative rowPast[b] drops that many of `fresh`'s first
/// positions.
const void *placeRows(const TensorRef &fresh, const TensorRef &past,
                      const std::int64_t *rowPast, const TensorRef &present) {
  const std::size_t width = byteWidth(fresh.dtype);
  const std::int64_t kvHeads = fresh.shape[1];
  const std::size_t position = static_cast<std::size_t>(fresh.shape[3]) * width;
  const std::size_t freshHead = static_cast<std::size_t>(fresh.shape[2]) *
                                position,
                    pastHead = static_cast<std::size_t>(past.shape[2]) *
                               position,
                    head = static_cast<std::size_t>(present.shape[2]) *
                           position;
  auto *dst = static_cast<unsigned char *>(present.data);
  auto *in = static_cast<const unsigned char *>(fresh.data);
  auto *old = static_cast<const unsigned char *>(past.data);
  for (std::int64_t b = 0; b < fresh.shape[0]; ++b) {
    const std::int64_t at = rowPast[b] > 0 ? rowPast[b] : 0;
    const std::size_t kept = static_cast<std::size_t>(at) * position,
                      dropped =
                          static_cast<std::size_t>(at - rowPast[b]) * position,
                      added = freshHead - dropped;
    unsigned char *rows = dst + static_cast<std::size_t>(b * kvHeads) * head;
    if (kept > 0)
      copyRows(rows, head, old + static_cast<std::size_t>(b * kvHeads) * pastHead,
               pastHead, kept, kvHeads, "attention");
    if (added > 0)
      copyRows(rows + kept, head,
               in + static_cast<std::size_t>(b * kvHeads) * freshHead + dropped,
               freshHead, added, kvHeads, "attention");
    const std::size_t tail = head - kept - added;
    if (tail > 0)
      check(cudaMemset2DAsync(rows + kept + added, head, 0, tail,
                              static_cast<std::size_t>(kvHeads), stream()),
            "attention");
  }
  return present.data;
}

template <typename T>
void launchFlash(const AttentionArgs<T> &a, std::int64_t batch,
                 std::size_t sharedBytes) {
  // Opting into more than 48 KiB of dynamic shared memory is a property of
  // the kernel, set once per size reached.
  static std::size_t optedIn = 48 * 1024;
  if (sharedBytes > optedIn) {
    check(cudaFuncSetAttribute(attentionFlashKernel<T>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(sharedBytes)),
          "attention: cudaFuncSetAttribute");
    optedIn = sharedBytes;
  }
  const dim3 grid(static_cast<unsigned>((a.seq + kBlockQ - 1) / kBlockQ),
                  static_cast<unsigned>(a.heads), static_cast<unsigned>(batch));
  attentionFlashKernel<T><<<grid, kFlashWarps * 32, sharedBytes, stream()>>>(a);
  checkLaunch("attention");
}

template <typename T>
void launchDecode(const AttentionArgs<T> &a, std::int64_t rows) {
  // Enough blocks to fill the GPU when there are few rows, without splits
  // shorter than kMinKeysPerSplit, and no more partials than the workspace
  // holds.
  const std::int64_t target =
      4 * static_cast<std::int64_t>(multiProcessorCount());
  std::int64_t splits = rows < target ? (target + rows - 1) / rows : 1;
  splits =
      std::min(splits, (a.total + kMinKeysPerSplit - 1) / kMinKeysPerSplit);
  splits = std::clamp<std::int64_t>(splits, 1, 65535);
  const std::int64_t rowBytes =
      partialStride(a.vDim) * static_cast<std::int64_t>(sizeof(float)) * rows;
  if (splits > 1) {
    const auto capacity =
        static_cast<std::int64_t>(workspaceBytes()) / rowBytes;
    splits = std::min(splits, capacity);
    if (splits < 2)
      splits = 1;
  }
  const std::int64_t keysPerSplit =
      std::max<std::int64_t>(1, (a.total + splits - 1) / splits);
  float *partial = splits > 1 ? static_cast<float *>(workspace()) : nullptr;
  const dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(splits));
  attentionDecodeKernel<T><<<grid, kDecodeWarps * 32, 0, stream()>>>(
      a, static_cast<int>(splits), keysPerSplit, partial);
  checkLaunch("attention");
  if (splits > 1) {
    attentionMergeKernel<T><<<static_cast<unsigned>(rows), 128, 0, stream()>>>(
        partial, static_cast<int>(splits), a.vDim, a.out, a.sinks, a.seq,
        a.heads);
    checkLaunch("attention");
  }
}

} // namespace

void attention(const TensorRef &query, const TensorRef &key,
               const TensorRef &value, const TensorRef *mask,
               const TensorRef *pastKey, const TensorRef *pastValue,
               float scale, bool causal, float causalFill, float softcap,
               bool softcapFirst, const TensorRef &out,
               const TensorRef *presentKey, const TensorRef *presentValue,
               std::int64_t cacheCapacity, const TensorRef *pastLengths,
               const TensorRef *sinks) {
  requireDType(key, query.dtype, "attention");
  if (sinks) {
    requireDType(*sinks, query.dtype, "attention sinks");
    if (sinks->rank != 1 || sinks->shape[0] != query.shape[1])
      fatal("attention: sinks must be [" + std::to_string(query.shape[1]) +
            "], one per query head");
  }
  requireDType(value, query.dtype, "attention");
  const plans::AttentionPlan plan = plans::attentionPlan(
      query, key, value, mask, pastKey, pastValue, presentKey, presentValue);
  if (pastKey) {
    requireDType(*pastKey, query.dtype, "attention");
    requireDType(*pastValue, query.dtype, "attention");
  }
  const std::int64_t batch = plan.batch, heads = plan.heads, seq = plan.seq,
                     dim = plan.dim, vDim = plan.vDim;
  if (dim > kMaxHeadDim || vDim > kMaxHeadDim)
    fatal("attention: head dimension " + std::to_string(std::max(dim, vDim)) +
          " is larger than the " + std::to_string(kMaxHeadDim) +
          " the CUDA kernels support");
  if (cacheCapacity > 0 &&
      (!pastKey || !pastValue || plan.total > cacheCapacity))
    fatal("attention: an in-place KV cache needs the past key and value, and "
          "room for " +
          std::to_string(plan.total) + " positions (it has " +
          std::to_string(cacheCapacity) + ")");
  // Each row's history (past_lengths), read back to place the rows and
  // checked before anything is written.
  std::vector<std::int64_t> rowPast;
  if (pastLengths) {
    plans::checkPastLengthsShape(*pastLengths, plan, pastKey && pastValue);
    rowPast.resize(static_cast<std::size_t>(batch));
    check(cudaMemcpyAsync(rowPast.data(), pastLengths->data,
                          rowPast.size() * sizeof(std::int64_t),
                          cudaMemcpyDeviceToHost, stream()),
          "attention: past_lengths");
    check(cudaStreamSynchronize(stream()), "attention: past_lengths");
    plans::checkPastLengthValues(rowPast.data(), plan);
  }
  const std::int64_t *hostPast = pastLengths ? rowPast.data() : nullptr;
  const void *k =
      cacheCapacity > 0
          ? appendInPlace(key, *pastKey, plan.past, cacheCapacity, hostPast)
      : hostPast ? placeRows(key, *pastKey, hostPast, *presentKey)
                 : keysOrValues(key, pastKey, presentKey);
  const void *v =
      cacheCapacity > 0
          ? appendInPlace(value, *pastValue, plan.past, cacheCapacity, hostPast)
      : hostPast ? placeRows(value, *pastValue, hostPast, *presentValue)
                 : keysOrValues(value, pastValue, presentValue);
  const std::int64_t rows = plan.rows();
  if (rows == 0 || vDim == 0)
    return;

  dispatchFloat(query.dtype, "attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    AttentionArgs<T> a;
    a.q = query.as<const T>();
    a.k = static_cast<const T *>(k);
    a.v = static_cast<const T *>(v);
    a.out = out.as<T>();
    a.heads = heads;
    a.kvHeads = plan.kvHeads;
    a.group = plan.group;
    a.seq = seq;
    a.total = plan.total;
    a.past = plan.past;
    if (pastLengths)
      a.rowPast = pastLengths->as<const std::int64_t>();
    a.kvStride = cacheCapacity > 0 ? cacheCapacity : plan.total;
    a.dim = static_cast<int>(dim);
    a.vDim = static_cast<int>(vDim);
    a.scale = scale;
    a.softcap = softcap;
    a.softcapFirst = softcapFirst;
    a.causal = causal;
    a.causalFill = causalFill;
    if (sinks)
      a.sinks = sinks->as<const T>();
    if (mask) {
      if (mask->dtype == DType::Bool)
        a.maskKind = MaskKind::Bool;
      else if (mask->dtype == query.dtype)
        a.maskKind = MaskKind::SameAsQuery;
      else if (mask->dtype == DType::F32)
        a.maskKind = MaskKind::F32;
      else
        unsupportedDType("attention mask", mask->dtype);
      a.mask = mask->data;
      std::copy(plan.maskStrides, plan.maskStrides + 4, a.maskStrides);
    }
    const std::size_t sharedBytes = flashSharedBytes(a.dim, a.vDim);
    const bool flash =
        seq > kDecodeMaxQueries && heads <= 65535 && batch <= 65535 &&
        sharedBytes <= static_cast<std::size_t>(maxSharedMemoryOptin());
    if (flash)
      launchFlash(a, batch, sharedBytes);
    else
      launchDecode(a, rows);
  });
}

} // namespace meshc::rt::cuda
