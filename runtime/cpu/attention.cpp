//===- attention.cpp - Scaled dot-product attention and rotary ------------===//
//
// Part of meshc. attention computes one score row per (batch, head, query):
//
//   1. K and V are `present` (past ++ new, written first) or key/value; with
//      an in-place cache, the cache buffers after the new rows are appended.
//   2. scores = scale * q . k_j, by a single-threaded sgemm per (batch,
//      head, block of queries) task when the sequences are long (prefill),
//      else by direct dot products with every row an independent OpenMP task
//      (decode, short prompts).
//   3. Each row: the mask and the causal limit (j <= i + P), then softcap
//      (ONNX's order; with softcapFirst the softcap comes first, Gemma-2's
//      order), then a max-subtracted softmax; a row with no finite score
//      gives zeros.
//   4. out = P V, by sgemm or by axpy over the value rows.
//
// With a finite causal fill F (HF's finfo.min) the keys past the causal
// limit are still skipped: beside a key without a fill they weigh exactly
// zero. A row whose every scored key carries a fill (its maximum at most
// F / 2: a left-padding query) is scored again over all keys, the later
// ones carrying F, as the unraised mask computes it.
//
// rotary rotates feature pairs per (batch, head, position) row.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "meshc/runtime/error.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

namespace {

/// Queries and keys from which the per-(batch, head) sgemm beats direct dot
/// products run in parallel over rows.
constexpr std::int64_t kGemmMinQueries = 32;
constexpr std::int64_t kGemmMinKeys = 32;
/// Queries per sgemm task: small enough that B * H * S / kQueryBlock tasks
/// keep 16 cores busy, large enough for sgemm to reach its speed.
constexpr std::int64_t kQueryBlock = 32;

/// What one attention call needs to turn a row of raw scores into weights.
struct RowContext {
  std::int64_t total = 0, past = 0;
  /// Per batch row, in place of `past` (dfg.attention's past_lengths).
  const std::int64_t *rowPast = nullptr;
  bool causal = false;
  /// Added to keys past the causal limit: -inf, or a finite fill.
  float causalFill = -std::numeric_limits<float>::infinity();
  float softcap = 0.0f;
  bool softcapFirst = false;
  /// Per query head: one more score in the softmax (dfg.attention's sinks).
  const float *sinks = nullptr;
  const TensorRef *mask = nullptr;
  bool boolMask = false;
  std::int64_t maskStrides[4] = {};
};

/// Keys j < limit are scored for query i: those not causally masked, or
/// all of them under a softcap after the mask (where a masked key scores
/// -softcap).
inline std::int64_t pastOf(const RowContext &ctx, std::int64_t b) {
  return ctx.rowPast ? ctx.rowPast[b] : ctx.past;
}
inline std::int64_t keyLimit(const RowContext &ctx, std::int64_t b,
                             std::int64_t i) {
  // A negative history (past_lengths) leaves no key to a query before its
  // row's start.
  return ctx.causal && (ctx.softcap <= 0.0f || ctx.softcapFirst)
             ? std::clamp<std::int64_t>(i + pastOf(ctx, b) + 1, 0, ctx.total)
             : ctx.total;
}

/// What softmaxRow made of a row.
enum class Row {
  Weights, ///< softmax weights
  Zeros,   ///< every key masked: the caller writes zeros
  AllKeys, ///< every scored key carries a finite fill: see allKeysRow
};

/// Turns `scores` (scale * q.k for j < limit) into softmax weights over the
/// `width` keys of the buffer (zero from limit on). The mask and the causal
/// limit come first, then the softcap, as ONNX Attention-23 and onnxruntime
/// order them (a masked key then scores -softcap). Unless it returns
/// Row::Weights the row is left unspecified.
MESHC_CPU_CLONES
Row softmaxRow(const RowContext &ctx, float *scores, std::int64_t b,
               std::int64_t h, std::int64_t i, std::int64_t limit,
               std::int64_t width) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  if (ctx.softcap > 0.0f && ctx.softcapFirst) {
    const float cap = ctx.softcap, inv = 1.0f / ctx.softcap;
    for (std::int64_t j = 0; j < limit; ++j)
      scores[j] = cap * std::tanh(scores[j] * inv);
  }
  // Keys from `visible` on are past the causal limit. They are scored under
  // a softcap after the mask, and in a row scored again by allKeysRow; a
  // finite causal fill takes the place of the mask's value there.
  const bool finiteFill = std::isfinite(ctx.causalFill);
  const std::int64_t visible =
      ctx.causal
          ? std::min(limit, std::max<std::int64_t>(i + pastOf(ctx, b) + 1, 0))
                 : limit;
  const std::int64_t maskEnd = finiteFill ? visible : limit;
  if (ctx.mask) {
    const std::int64_t *ms = ctx.maskStrides;
    const std::int64_t base = b * ms[0] + h * ms[1] + i * ms[2];
    const std::int64_t sj = ms[3];
    if (ctx.boolMask) {
      const auto *m = ctx.mask->as<const std::uint8_t>() + base;
      for (std::int64_t j = 0; j < maskEnd; ++j)
        if (!m[j * sj])
          scores[j] = kNegInf;
    } else {
      const float *m = ctx.mask->as<const float>() + base;
      for (std::int64_t j = 0; j < maskEnd; ++j)
        scores[j] += m[j * sj];
    }
  }
  for (std::int64_t j = visible; j < limit; ++j)
    scores[j] = finiteFill ? scores[j] + ctx.causalFill : kNegInf;
  const float sink = ctx.sinks ? ctx.sinks[h] : kNegInf;
  if (ctx.causal && finiteFill && visible > 0 && limit < ctx.total) {
    // A sink above the fill outweighs every filled key: not such a row.
    float top = sink;
    for (std::int64_t j = 0; j < limit; ++j)
      top = std::max(top, scores[j]);
    if (!(top > ctx.causalFill * 0.5f))
      return Row::AllKeys;
  }
  if (ctx.softcap > 0.0f && !ctx.softcapFirst) {
    const float cap = ctx.softcap, inv = 1.0f / ctx.softcap;
    for (std::int64_t j = 0; j < limit; ++j)
      scores[j] = cap * std::tanh(scores[j] * inv);
  }
  if (!softmaxContiguous(scores, scores, limit, sink))
    return Row::Zeros;
  for (std::int64_t j = limit; j < width; ++j)
    scores[j] = 0.0f;
  return Row::Weights;
}

/// scores[j] = scale * q . k_j for the first `keys` key rows of `kh`.
MESHC_CPU_CLONES
void scoreKeys(const float *qi, const float *kh, std::int64_t dim, float scale,
               std::int64_t keys, float *scores) {
  for (std::int64_t j = 0; j < keys; ++j) {
    const float *kj = kh + j * dim;
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (std::int64_t d = 0; d < dim; ++d)
      acc += qi[d] * kj[d];
    scores[j] = scale * acc;
  }
}

/// out += sum over the `keys` value rows of weight p[j] times row j.
MESHC_CPU_CLONES
void addWeightedRows(const float *p, std::int64_t keys, const float *vh,
                     std::int64_t vDim, float *out) {
  for (std::int64_t j = 0; j < keys; ++j) {
    if (p[j] == 0.0f)
      continue;
    const float *vj = vh + j * vDim;
#pragma omp simd
    for (std::int64_t d = 0; d < vDim; ++d)
      out[d] += p[j] * vj[d];
  }
}

/// Query row i scored against all `ctx.total` keys (`scores` holds that
/// many), its weights applied to the value rows into `oi`: the rows whose
/// every key before the causal limit carries a finite fill.
void allKeysRow(const RowContext &ctx, const float *qi, const float *kh,
                const float *vh, std::int64_t dim, std::int64_t vDim,
                float scale, std::int64_t b, std::int64_t h, std::int64_t i,
                float *scores, float *oi) {
  scoreKeys(qi, kh, dim, scale, ctx.total, scores);
  std::fill(oi, oi + vDim, 0.0f);
  if (softmaxRow(ctx, scores, b, h, i, ctx.total, ctx.total) == Row::Weights)
    addWeightedRows(scores, ctx.total, vh, vDim, oi);
}

/// K or V as attention reads them: `present` filled with past ++ fresh when
/// given (then read from it), else `fresh` itself.
const float *keysOrValues(const TensorRef &fresh, const TensorRef *past,
                          const TensorRef *present) {
  if (!present)
    return fresh.as<const float>();
  if (past) {
    const TensorRef parts[] = {*past, fresh};
    concat(parts, 2, 2, *present);
  } else {
    copy(fresh, *present);
  }
  return present->as<const float>();
}

/// The in-place cache: the new rows `fresh` [B, Hkv, S, D] written after
/// the `past` positions (rowPast[b] for batch row b, where given) of each
/// head of `cache` (capacity positions per head); returns the cache, which
/// attention then reads.
const float *appendInPlace(const TensorRef &fresh, const TensorRef &cache,
                           std::int64_t past, std::int64_t capacity,
                           const std::int64_t *rowPast) {
  const std::int64_t kvHeads = fresh.shape[1], heads = fresh.shape[0] * kvHeads,
                     rows = fresh.shape[2], width = fresh.shape[3];
  const float *in = fresh.as<const float>();
  float *base = cache.as<float>();
  for (std::int64_t h = 0; h < heads; ++h) {
    const std::int64_t at = rowPast ? rowPast[h / kvHeads] : past;
    const std::int64_t dropped = std::max<std::int64_t>(-at, 0);
    std::memcpy(base + (h * capacity + at + dropped) * width,
                in + (h * rows + dropped) * width,
                static_cast<std::size_t>((rows - dropped) * width) *
                    sizeof(float));
  }
  return base;
}

/// K or V under past_lengths: present [B, Hkv, P + S, D] holds row b's
/// first rowPast[b] past positions, then `fresh`'s S, then zeros; a
/// negative rowPast[b] drops that many of `fresh`'s first positions.
const float *placeRows(const TensorRef &fresh, const TensorRef &past,
                       const std::int64_t *rowPast, const TensorRef &present) {
  const std::int64_t kvHeads = fresh.shape[1], heads = fresh.shape[0] * kvHeads,
                     rows = fresh.shape[2], width = fresh.shape[3],
                     pastRows = past.shape[2], total = present.shape[2];
  const float *in = fresh.as<const float>(), *old = past.as<const float>();
  float *dst = present.as<float>();
  for (std::int64_t h = 0; h < heads; ++h) {
    const std::int64_t at = std::max<std::int64_t>(rowPast[h / kvHeads], 0),
                       dropped = at - rowPast[h / kvHeads];
    float *head = dst + h * total * width;
    std::memcpy(head, old + h * pastRows * width,
                static_cast<std::size_t>(at * width) * sizeof(float));
    std::memcpy(head + at * width, in + (h * rows + dropped) * width,
                static_cast<std::size_t>((rows - dropped) * width) *
                    sizeof(float));
    std::fill(head + (at + rows - dropped) * width, head + total * width,
              0.0f);
  }
  return dst;
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
  requireF32(query, "attention");
  requireF32(key, "attention");
  requireF32(value, "attention");
  const plans::AttentionPlan plan = plans::attentionPlan(
      query, key, value, mask, pastKey, pastValue, presentKey, presentValue);
  const std::int64_t batch = plan.batch, heads = plan.heads, seq = plan.seq,
                     dim = plan.dim, kvHeads = plan.kvHeads, vDim = plan.vDim;
  const std::int64_t past = plan.past, total = plan.total, group = plan.group;
  // Positions per KV head in the buffers K and V are read from.
  const std::int64_t stride = cacheCapacity > 0 ? cacheCapacity : total;
  if (cacheCapacity > 0 && (!pastKey || !pastValue || total > cacheCapacity))
    fatal("attention: an in-place KV cache needs the past key and value, and "
          "room for " +
          std::to_string(total) + " positions (it has " +
          std::to_string(cacheCapacity) + ")");
  // Each row's history (past_lengths), checked before anything is written.
  const std::int64_t *rowPast = nullptr;
  if (pastLengths) {
    plans::checkPastLengthsShape(*pastLengths, plan, pastKey && pastValue);
    rowPast = pastLengths->as<const std::int64_t>();
    plans::checkPastLengthValues(rowPast, plan);
  }
  const float *k =
      cacheCapacity > 0 ? appendInPlace(key, *pastKey, past, cacheCapacity,
                                        rowPast)
      : rowPast       ? placeRows(key, *pastKey, rowPast, *presentKey)
                      : keysOrValues(key, pastKey, presentKey);
  const float *v =
      cacheCapacity > 0 ? appendInPlace(value, *pastValue, past, cacheCapacity,
                                        rowPast)
      : rowPast       ? placeRows(value, *pastValue, rowPast, *presentValue)
                      : keysOrValues(value, pastValue, presentValue);
  const float *q = query.as<const float>();
  float *o = out.as<float>();

  RowContext ctx;
  ctx.total = total;
  ctx.past = past;
  ctx.rowPast = rowPast;
  ctx.causal = causal;
  ctx.causalFill = causalFill;
  ctx.softcap = softcap;
  ctx.softcapFirst = softcapFirst;
  if (sinks) {
    requireF32(*sinks, "attention sinks");
    if (sinks->rank != 1 || sinks->shape[0] != heads)
      fatal("attention: sinks must be [" + std::to_string(heads) +
            "], one per query head");
    ctx.sinks = sinks->as<const float>();
  }
  if (mask) {
    if (mask->dtype != DType::Bool)
      requireF32(*mask, "attention mask");
    ctx.mask = mask;
    ctx.boolMask = mask->dtype == DType::Bool;
    std::copy(plan.maskStrides, plan.maskStrides + 4, ctx.maskStrides);
  }
  const std::int64_t rows = plan.rows();
  if (rows == 0 || vDim == 0)
    return;

  auto kHead = [&](std::int64_t b, std::int64_t h) {
    return k + (b * kvHeads + h / group) * stride * dim;
  };
  auto vHead = [&](std::int64_t b, std::int64_t h) {
    return v + (b * kvHeads + h / group) * stride * vDim;
  };

  if (seq >= kGemmMinQueries && total >= kGemmMinKeys && dim > 0) {
    // Prefill: one task per (batch, head, block of queries), each two
    // single-threaded sgemms around the row softmaxes. With `causal` a
    // block only reads the keys its last query may see.
    const std::int64_t blocksPerHead = (seq + kQueryBlock - 1) / kQueryBlock;
    const std::int64_t tasks = batch * heads * blocksPerHead;
#pragma omp parallel
    {
      std::vector<float> scores(
          static_cast<std::size_t>(std::min(seq, kQueryBlock) * total));
      float *sc = scores.data();
      std::vector<float> wide; // allKeysRow's scores
      std::vector<std::int64_t> redo;
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t t = 0; t < tasks; ++t) {
        const std::int64_t i0 = (t % blocksPerHead) * kQueryBlock;
        const std::int64_t h = (t / blocksPerHead) % heads;
        const std::int64_t b = t / (blocksPerHead * heads);
        const std::int64_t m = std::min(kQueryBlock, seq - i0);
        const std::int64_t keys = keyLimit(ctx, b, i0 + m - 1);
        const std::int64_t row0 = (b * heads + h) * seq + i0;
        if (keys == 0) { // queries before their row's start (past_lengths)
          std::fill(o + row0 * vDim, o + (row0 + m) * vDim, 0.0f);
          continue;
        }
        sgemm(/*transB=*/true, m, keys, dim, scale, q + row0 * dim, dim,
              kHead(b, h), dim, 0.0f, sc, keys);
        redo.clear();
        for (std::int64_t r = 0; r < m; ++r) {
          const std::int64_t i = i0 + r;
          float *row = sc + r * keys;
          const Row made =
              softmaxRow(ctx, row, b, h, i, keyLimit(ctx, b, i), keys);
          if (made != Row::Weights)
            std::fill(row, row + keys, 0.0f);
          if (made == Row::AllKeys)
            redo.push_back(r);
        }
        sgemm(/*transB=*/false, m, vDim, keys, 1.0f, sc, keys, vHead(b, h),
              vDim, 0.0f, o + row0 * vDim, vDim);
        if (!redo.empty())
          wide.resize(static_cast<std::size_t>(total));
        for (std::int64_t r : redo)
          allKeysRow(ctx, q + (row0 + r) * dim, kHead(b, h), vHead(b, h), dim,
                     vDim, scale, b, h, i0 + r, wide.data(),
                     o + (row0 + r) * vDim);
      }
    }
    return;
  }

  // Decode and short prompts: every (batch, head, query) row on its own.
  const std::int64_t work = rows * total * (dim + vDim);
#pragma omp parallel if (work > kParallelThreshold)
  {
    std::vector<float> scores(static_cast<std::size_t>(total));
    float *sc = scores.data();
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t i = r % seq, h = (r / seq) % heads,
                         b = r / (seq * heads);
      const float *qi = q + r * dim;
      const float *kh = kHead(b, h);
      const std::int64_t limit = keyLimit(ctx, b, i);
      scoreKeys(qi, kh, dim, scale, limit, sc);
      float *oi = o + r * vDim;
      std::fill(oi, oi + vDim, 0.0f);
      const float *vh = vHead(b, h);
      const Row made = softmaxRow(ctx, sc, b, h, i, limit, total);
      if (made == Row::AllKeys)
        allKeysRow(ctx, qi, kh, vh, dim, vDim, scale, b, h, i, sc, oi);
      if (made == Row::Weights)
        addWeightedRows(sc, limit, vh, vDim, oi);
    }
  }
}

void rotary(const TensorRef &in, const TensorRef &cos, const TensorRef &sin,
            const TensorRef *positions, bool interleaved,
            std::int64_t rotaryDim, const TensorRef &out) {
  requireF32(in, "rotary");
  requireF32(cos, "rotary");
  requireF32(sin, "rotary");
  const plans::RotaryPlan plan =
      plans::rotaryPlan(in, cos, positions != nullptr, rotaryDim);
  const std::int64_t batch = plan.batch, heads = plan.heads, seq = plan.seq,
                     dim = plan.dim, half = plan.half;
  if (positions) {
    requireIndices(*positions, "rotary");
    const std::int64_t cacheRows = plan.cacheRows;
    for (std::int64_t i = 0, n = batch * seq; i < n; ++i) {
      const std::int64_t p = readIndex(*positions, i);
      if (p < 0 || p >= cacheRows)
        fatal("rotary: position " + std::to_string(p) +
              " is outside the cos/sin cache of " + std::to_string(cacheRows) +
              " positions");
    }
  }
  // Without positions the tables are [batch or 1, seq, half].
  const bool sharedTable = plan.sharedTable;
  const float *cosData = cos.as<const float>();
  const float *sinData = sin.as<const float>();
  const float *x = in.as<const float>();
  float *y = out.as<float>();
  const std::int64_t rows = plan.rows();
#pragma omp parallel for schedule(static) if (rows * dim > kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t s = r % seq, b = r / (seq * heads);
    const std::int64_t tableRow = positions ? readIndex(*positions, b * seq + s)
                                            : (sharedTable ? 0 : b) * seq + s;
    const float *c = cosData + tableRow * half;
    const float *sn = sinData + tableRow * half;
    const float *xi = x + r * dim;
    float *yi = y + r * dim;
    if (interleaved) {
      for (std::int64_t i = 0; i < half; ++i) {
        const float x0 = xi[2 * i], x1 = xi[2 * i + 1];
        yi[2 * i] = x0 * c[i] - x1 * sn[i];
        yi[2 * i + 1] = x1 * c[i] + x0 * sn[i];
      }
    } else {
      for (std::int64_t i = 0; i < half; ++i) {
        const float x0 = xi[i], x1 = xi[i + half];
        yi[i] = x0 * c[i] - x1 * sn[i];
        yi[i + half] = x1 * c[i] + x0 * sn[i];
      }
    }
    for (std::int64_t i = rotaryDim; i < dim; ++i)
      yi[i] = xi[i];
  }
}

} // namespace meshc::rt::cpu
