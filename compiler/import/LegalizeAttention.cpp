//===- LegalizeAttention.cpp - Attention -> dfg.attention -----------------===//
//
// Part of meshc. ONNX Attention-23/24 and com.microsoft MultiHeadAttention
// and GroupQueryAttention.
// dfg.attention works on
// [batch, heads, seq, head_dim]; 3-D inputs ([batch, seq, heads * head_dim],
// with q_num_heads / kv_num_heads) are reshaped and transposed to it, and the
// result back.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

#include <cmath>

using namespace mlir;

namespace meshc::onnximport {

FailureOr<double> attentionScale(NodeContext &ctx, Value q) {
  if (ctx.attr("scale"))
    return static_cast<double>(ctx.attrFloat("scale", 1.0f));
  int64_t headDim = shapeOf(q)[3];
  if (ShapedType::isDynamic(headDim))
    return ctx.error("head_dim is dynamic; give the scale attribute");
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

FailureOr<SmallVector<Value>> splitLast(NodeContext &ctx, Value x,
                                        ArrayRef<int64_t> sizes) {
  int64_t axis = static_cast<int64_t>(shapeOf(x).size()) - 1;
  SmallVector<Value> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    FailureOr<Value> part = sliceAxis(ctx, x, axis, start, start + size);
    if (failed(part))
      return failure();
    parts.push_back(*part);
    start += size;
  }
  return parts;
}

namespace {

/// [batch, seq, heads * d] -> [batch, heads, seq, d]; 4-D passes through.
FailureOr<Value> toHeads(NodeContext &ctx, Value v, int64_t heads,
                         StringRef attr) {
  if (shapeOf(v).size() == 4)
    return v;
  if (shapeOf(v).size() != 3)
    return ctx.error("attention inputs must be 3-D or 4-D, got " +
                     dfg::formatShape(shapeOf(v)));
  int64_t hidden = shapeOf(v)[2];
  if (heads > 0 && !ShapedType::isDynamic(hidden) && hidden % heads != 0)
    return ctx.error(attr + " " + std::to_string(heads) +
                     " does not divide the hidden size " +
                     std::to_string(hidden));
  return ctx.splitHeads(v, heads, attr);
}

/// Creates dfg.attention and binds Y (merged back to 3-D when `merge`),
/// present_key, present_value; without a past, the presents are K and V
/// (or presentK and presentV where given). `softcapFirst`: the softcap
/// before the mask (GroupQueryAttention caps the scores, then leaves the
/// masked keys out), else after it (ONNX Attention-23 as onnxruntime 1.23
/// computes it). `sinks`: GroupQueryAttention's head_sink, [heads].
LogicalResult emitAttention(NodeContext &ctx, Value q, Value k, Value v,
                            Value mask, Value pastK, Value pastV, double scale,
                            bool causal, double softcap, bool softcapFirst,
                            bool merge, Value presentK = Value(),
                            Value presentV = Value(),
                            Value pastLengths = Value(),
                            Value sinks = Value()) {
  OpBuilder &b = ctx.builder();
  Type element = elementOf(q);
  for (Value operand : {q, k, v, pastK, pastV})
    if (operand && shapeOf(operand).size() != 4)
      return ctx.error("attention operands must be [batch, heads, seq, "
                       "head_dim] here, got " +
                       dfg::formatShape(shapeOf(operand)));
  // A past's head size is the new keys' and values' (onnxruntime-genai's
  // builder names it kv_cache_dim): a symbolic one is sized by importing
  // again.
  if (pastK && pastV) {
    bool pinned = false;
    for (auto [past, fresh] : {std::pair{pastK, k}, std::pair{pastV, v}})
      if (ShapedType::isDynamic(shapeOf(past)[3]) &&
          !ShapedType::isDynamic(shapeOf(fresh)[3]))
        pinned |= ctx.pinDim(past, 3, shapeOf(fresh)[3]);
    if (pinned)
      return ctx.error("past head size is symbolic (imported again with it "
                       "sized " +
                       std::to_string(shapeOf(v)[3]) + ")");
  }
  SmallVector<Type> types{RankedTensorType::get(
      {shapeOf(q)[0], shapeOf(q)[1], shapeOf(q)[2], shapeOf(v)[3]}, element)};
  if (pastK)
    for (Value fresh : {k, v}) {
      SmallVector<int64_t> shape(shapeOf(fresh));
      int64_t p = shapeOf(pastK)[2];
      shape[2] = ShapedType::isDynamic(shape[2]) || ShapedType::isDynamic(p)
                     ? ShapedType::kDynamic
                     : shape[2] + p;
      types.push_back(RankedTensorType::get(shape, element));
    }
  auto op = dfg::AttentionOp::create(
      b, ctx.loc(), types, q, k, v, mask, pastK, pastV, pastLengths, sinks,
      b.getF32FloatAttr(scale), b.getBoolAttr(causal),
      b.getF32FloatAttr(softcap), b.getBoolAttr(softcap > 0 && softcapFirst),
      FloatAttr());
  Value y = op.getResult();
  if (merge) {
    FailureOr<Value> merged = ctx.mergeHeads(y);
    if (failed(merged))
      return failure();
    y = *merged;
  }
  if (presentK)
    return ctx.setResults({y, presentK, presentV});
  return ctx.setResults(
      {y, pastK ? op.getPresent()[0] : k, pastK ? op.getPresent()[1] : v});
}

/// Attention-23(Q, K, V, attn_mask?, past_key?, past_value?)
///   -> dfg.attention; Y, present_key, present_value.
LogicalResult legalizeAttention(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  if (ctx.input(6))
    return ctx.error("nonpad_kv_seqlen is not supported");
  bool is3D = shapeOf(ctx.input(0)).size() == 3;
  FailureOr<Value> q =
      toHeads(ctx, ctx.input(0), ctx.attrInt("q_num_heads", 0), "q_num_heads");
  FailureOr<Value> k = toHeads(ctx, ctx.input(1),
                               ctx.attrInt("kv_num_heads", 0), "kv_num_heads");
  FailureOr<Value> v = toHeads(ctx, ctx.input(2),
                               ctx.attrInt("kv_num_heads", 0), "kv_num_heads");
  if (failed(q) || failed(k) || failed(v))
    return failure();
  Value pastK = ctx.input(4), pastV = ctx.input(5);
  if (bool(pastK) != bool(pastV))
    return ctx.error("past_key and past_value must be given together");
  if (pastK && (shapeOf(pastK).size() != 4 || shapeOf(pastV).size() != 4))
    return ctx.error("past_key and past_value must be [batch, kv_heads, "
                     "past, head_dim]");

  Value mask = ctx.input(3);
  if (mask && shapeOf(mask).empty())
    return ctx.error("attn_mask must have a key axis (rank 0 given)");
  if (mask) {
    int64_t total = shapeOf(*k)[2];
    if (pastK && !ShapedType::isDynamic(total))
      total = ShapedType::isDynamic(shapeOf(pastK)[2])
                  ? ShapedType::kDynamic
                  : total + shapeOf(pastK)[2];
    int64_t last = shapeOf(mask).back();
    if (!ShapedType::isDynamic(last) && !ShapedType::isDynamic(total) &&
        last != 1 && last < total)
      return ctx.error("an attn_mask shorter than the keys (" +
                       std::to_string(last) + " < " + std::to_string(total) +
                       ", padded by ONNX) is not supported");
  }

  FailureOr<double> scale = attentionScale(ctx, *q);
  if (failed(scale))
    return failure();
  // Output #3 (qk_matmul_output) is not produced.
  return emitAttention(ctx, *q, *k, *v, mask, pastK, pastV, *scale,
                       ctx.attrInt("is_causal", 0) != 0,
                       ctx.attrFloat("softcap", 0.0f), /*softcapFirst=*/false,
                       /*merge=*/is3D);
}

/// com.microsoft MultiHeadAttention(query, key, value, bias?,
///   key_padding_mask?, attention_bias?, past_key?, past_value?)
///   -> dfg.attention. The packed bias [3 * hidden] is added to q, k, v;
///   key_padding_mask [batch, total] becomes (1 - m) * mask_filter_value,
///   added to attention_bias; unidirectional is causal.
LogicalResult legalizeMultiHeadAttention(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  if (ctx.input(8) || ctx.input(9))
    return ctx.error("past_sequence_length and cache_indirection are not "
                     "supported");
  int64_t heads = ctx.attrInt("num_heads", 0);
  if (shapeOf(ctx.input(0)).size() != 3)
    return ctx.error("only a 3-D query is supported (packed QKV forms are "
                     "not)");
  OpBuilder &b = ctx.builder();
  Type element = elementOf(ctx.input(0));
  Value q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);

  if (Value bias = ctx.input(3)) {
    // bias = [q_bias | k_bias | v_bias], each hidden wide.
    int64_t hidden = shapeOf(q)[2];
    if (ShapedType::isDynamic(hidden) || shapeOf(bias).size() != 1 ||
        shapeOf(bias)[0] != 3 * hidden || shapeOf(k).size() != 3 ||
        shapeOf(v).size() != 3)
      return ctx.error("bias must be [3 * hidden] with 3-D query, key and "
                       "value");
    auto parts = splitLast(ctx, bias, {hidden, hidden, hidden});
    if (failed(parts))
      return failure();
    Value *targets[] = {&q, &k, &v};
    for (int64_t i = 0; i < 3; ++i) {
      FailureOr<Value> sum = ctx.create<dfg::AddOp>(
          dfg::broadcastShapes(shapeOf(*targets[i]), shapeOf((*parts)[i])),
          element, *targets[i], (*parts)[i]);
      if (failed(sum))
        return failure();
      *targets[i] = *sum;
    }
  }

  FailureOr<Value> qh = toHeads(ctx, q, heads, "num_heads");
  FailureOr<Value> kh = toHeads(ctx, k, heads, "num_heads");
  FailureOr<Value> vh = toHeads(ctx, v, heads, "num_heads");
  if (failed(qh) || failed(kh) || failed(vh))
    return failure();

  Value mask = ctx.input(5);
  if (Value padding = ctx.input(4)) {
    if (shapeOf(padding).size() != 2)
      return ctx.error("only a [batch, total_sequence] key_padding_mask is "
                       "supported");
    // (1 - float(m)) * mask_filter_value, as [batch, 1, 1, total].
    auto f = RankedTensorType::get(shapeOf(padding), element);
    Value m = dfg::CastOp::create(b, ctx.loc(), f, padding, element);
    Value keep =
        dfg::SubOp::create(b, ctx.loc(), f, ctx.scalar(1.0, element), m);
    Value additive = dfg::MulOp::create(
        b, ctx.loc(), f, keep,
        ctx.scalar(ctx.attrFloat("mask_filter_value", -10000.0f), element));
    FailureOr<Value> wide = ctx.create<dfg::UnsqueezeOp>(
        dfg::unsqueezeShape(shapeOf(additive), {1, 2}), element, additive,
        b.getDenseI64ArrayAttr({1, 2}));
    if (failed(wide))
      return failure();
    if (mask) {
      FailureOr<Value> sum = ctx.create<dfg::AddOp>(
          dfg::broadcastShapes(shapeOf(mask), shapeOf(*wide)), element, mask,
          *wide);
      if (failed(sum))
        return failure();
      mask = *sum;
    } else {
      mask = *wide;
    }
  }
  FailureOr<double> scale = attentionScale(ctx, *qh);
  if (failed(scale))
    return failure();
  return emitAttention(ctx, *qh, *kh, *vh, mask, ctx.input(6), ctx.input(7),
                       *scale, ctx.attrInt("unidirectional", 0) != 0, 0.0,
                       /*softcapFirst=*/false, /*merge=*/true);
}

/// GroupQueryAttention's fused Q/K norm (q_norm_weight, k_norm_weight:
/// onnxruntime-genai's builder folds Qwen3's per-head RMS norms into the op
/// for the cuda provider): x [batch, seq, heads * d] normalised over each
/// head's d features with `weight` [d] and qk_norm_epsilon, before the
/// rotary.
FailureOr<Value> normHeads(NodeContext &ctx, Value x, int64_t heads,
                           Value weight, StringRef what) {
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t d = shape[2] / heads;
  if (shapeOf(weight).size() != 1 || shapeOf(weight)[0] != d ||
      elementOf(weight) != elementOf(x))
    return ctx.error(what + " must be [head_size] = [" + std::to_string(d) +
                     "] of the query's element type, got " +
                     dfg::formatShape(shapeOf(weight)));
  OpBuilder &b = ctx.builder();
  FailureOr<Value> perHead = ctx.create<dfg::ReshapeOp>(
      dfg::reshapeShape(shape, {0, 0, heads, d}), elementOf(x), x,
      b.getDenseI64ArrayAttr({0, 0, heads, d}));
  if (failed(perHead))
    return failure();
  Value normed =
      dfg::RmsNormOp::create(
          b, ctx.loc(), cast<RankedTensorType>(perHead->getType()),
          TypeRange{}, *perHead, weight, Value(), Value(),
          b.getI64IntegerAttr(-1),
          b.getF32FloatAttr(ctx.attrFloat("qk_norm_epsilon", 1e-6f)))
          .getResult();
  return ctx.create<dfg::ReshapeOp>(
      dfg::reshapeShape(shapeOf(normed), {0, 0, heads * d}), elementOf(x),
      normed, b.getDenseI64ArrayAttr({0, 0, heads * d}));
}

/// GroupQueryAttention's do_rotary: rotates q and k (still [batch, seq,
/// hidden]) by cos_cache / sin_cache at position_ids, or at the positions
/// `defaultPositions` builds when the node has none.
LogicalResult
rotateQK(NodeContext &ctx, Value &q, Value &k, int64_t heads, int64_t kvHeads,
         llvm::function_ref<FailureOr<Value>()> defaultPositions) {
  if (ctx.attrInt("do_rotary", 0) == 0)
    return success();
  Value cos = ctx.input(7), sin = ctx.input(8);
  if (!cos || !sin)
    return ctx.error("do_rotary needs cos_cache and sin_cache");
  Value positions = ctx.input(9);
  if (!positions) {
    FailureOr<Value> built = defaultPositions();
    if (failed(built))
      return failure();
    positions = *built;
  }
  bool interleaved = ctx.attrInt("rotary_interleaved", 0) != 0;
  FailureOr<Value> rq =
      rotate(ctx, q, cos, sin, positions, heads, 0, interleaved);
  FailureOr<Value> rk =
      failed(rq) ? rq
                 : rotate(ctx, k, cos, sin, positions, kvHeads, 0, interleaved);
  if (failed(rk))
    return failure();
  q = *rq, k = *rk;
  return success();
}

/// GroupQueryAttention's seqlens_k (input 5) as [batch]: onnxruntime also
/// takes it as [batch, 1], as onnxruntime-genai's builder before 0.7 writes
/// it (a ReduceSum of the mask that keeps its dimension).
FailureOr<Value> seqlensOf(NodeContext &ctx) {
  Value seqlens = ctx.input(5);
  auto type = cast<RankedTensorType>(seqlens.getType());
  if (type.getRank() == 1)
    return seqlens;
  if (type.getRank() != 2 || type.getDimSize(1) != 1)
    return ctx.error("seqlens_k must be [batch] or [batch, 1], got " +
                     dfg::formatShape(type.getShape()));
  SmallVector<int64_t> flat = {-1};
  return ctx.create<dfg::ReshapeOp>(dfg::reshapeShape(type.getShape(), flat),
                                    type.getElementType(), seqlens,
                                    ctx.builder().getDenseI64ArrayAttr(flat));
}

/// GroupQueryAttention's local_window_size W: query i sees only the keys
/// j > pos_i - W (a window of W keys ending at itself: Hugging Face's
/// sliding_window, and onnxruntime's rule since the 1.2x releases that
/// onnxruntime-genai's builder writes for; 1.23 took W + 1 keys), where
/// pos_i = i in a first prompt and start_b + i after a past. `keys` is [1, 1, 1, T], `queries` [1, 1, seq, 1] and `start` the
/// rows' [batch, 1, 1, 1] first new position (null for a first prompt); the
/// window is and-ed into `mask` (is the mask where `mask` is null).
FailureOr<Value> applyLocalWindow(NodeContext &ctx, Value mask, Value keys,
                                  Value queries, Value start, int64_t window) {
  Type i64 = ctx.builder().getI64Type(), i1 = ctx.builder().getI1Type();
  FailureOr<Value> pos =
      start ? binary<dfg::AddOp>(ctx, start, queries, i64) : queries;
  FailureOr<Value> low =
      failed(pos)
          ? pos
          : binary<dfg::SubOp>(
                ctx, *pos, ctx.scalar(static_cast<double>(window), i64), i64);
  FailureOr<Value> inside =
      failed(low) ? low : binary<dfg::GreaterOp>(ctx, keys, *low, i1);
  if (failed(inside) || !mask)
    return inside;
  return binary<dfg::AndOp>(ctx, mask, *inside, i1);
}

/// GroupQueryAttention whose past or new length is symbolic (executables
/// for any length: the onnxruntime-genai builder's decoders, where
/// total_sequence_length is the attention mask's width): the rule
/// onnxruntime applies to every batch and sequence, written once over
/// symbolic sizes. Row b's new tokens sit at start_b .. start_b + seq - 1,
/// start_b = seqlens_k[b] + 1 - seq, after that row's valid past: a
/// dfg.attention whose past_lengths are start_b (the presents hold each
/// row's history, then its new tokens, then zeros; `meshc generate` keeps
/// them in place), causal from each row's own position (query i of row b
/// sees keys j <= start_b + i). Rotary
/// without position_ids rotates at start_b + i after a past, at i in a first
/// prompt. The present holds past + new positions: with onnxruntime-genai's
/// shared buffer (a past longer than the history the mask counts, written in
/// place by onnxruntime) its positions hold what onnxruntime's buffer holds,
/// and the one past the buffer per new token holds zeros
/// (test/e2e/genai_shared_buffer.test).
LogicalResult legalizeSymbolicGQA(NodeContext &ctx, Value q, Value k, Value v,
                                  Value pastK, Value pastV, int64_t heads,
                                  int64_t kvHeads) {
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  MLIRContext *mctx = b.getContext();
  AffineExpr seqE = ctx.dimsOf(q)[1];
  AffineExpr pastE =
      pastK ? ctx.dimsOf(pastK)[2] : getAffineConstantExpr(0, mctx);
  if (!seqE || !pastE)
    return ctx.error("the past and new lengths follow from no named input "
                     "dimension; give them sizes with --dim NAME=SIZE");
  AffineExpr totalE = pastE + seqE;
  // A 0-D i64 value of a symbolic size.
  auto sizeOf = [&](AffineExpr e) -> Value {
    auto [map, names] = ctx.dimTable().write({e});
    return dfg::SizesOp::create(b, ctx.loc(), RankedTensorType::get({}, i64),
                                map, names)
        .getResult();
  };
  auto iota = [&](AffineExpr n, ArrayRef<int64_t> shape) {
    return ctx.iota(n, shape);
  };
  auto reshape = [&](Value x, ArrayRef<int64_t> shape) {
    return ctx.create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(x), shape),
                                      elementOf(x), x,
                                      b.getDenseI64ArrayAttr(shape));
  };

  // start_b = seqlens_k[b] + 1 - seq, as [batch, 1].
  FailureOr<Value> seqlensVector = seqlensOf(ctx);
  if (failed(seqlensVector))
    return failure();
  Value seqlens = *seqlensVector;
  auto lensType = cast<RankedTensorType>(seqlens.getType());
  Value lens = dfg::CastOp::create(
      b, ctx.loc(), RankedTensorType::get(lensType.getShape(), i64), seqlens,
      i64);
  FailureOr<Value> lensCol = reshape(lens, {-1, 1});
  FailureOr<Value> oneMinusSeq =
      binary<dfg::SubOp>(ctx, ctx.scalar(1, i64), sizeOf(seqE), i64);
  if (failed(lensCol) || failed(oneMinusSeq))
    return failure();
  FailureOr<Value> start = binary<dfg::AddOp>(ctx, *lensCol, *oneMinusSeq, i64);
  FailureOr<Value> newPos = iota(seqE, {1, -1});
  if (failed(start) || failed(newPos))
    return failure();

  // Rotary without position_ids: after a past, at start_b + i; in a first
  // prompt at i, whatever the row's padding (onnxruntime's rule). A
  // left-padded row starts at a negative start_b: its padding is rotated as
  // position 0, and attention drops its keys and gives its queries none.
  if (failed(rotateQK(ctx, q, k, heads, kvHeads, [&]() -> FailureOr<Value> {
        if (pastK) {
          FailureOr<Value> at =
              binary<dfg::AddOp>(ctx, *start, *newPos, i64); // [batch, seq]
          return failed(at) ? at
                            : binary<dfg::MaxOp>(ctx, *at, ctx.scalar(0, i64),
                                                 i64);
        }
        FailureOr<Value> zero =
            binary<dfg::MulOp>(ctx, *start, ctx.scalar(0, i64), i64);
        return failed(zero) ? zero
                            : binary<dfg::AddOp>(ctx, *zero, *newPos, i64);
      })))
    return failure();

  FailureOr<Value> qh = ctx.splitHeads(q, heads, "num_heads");
  FailureOr<Value> kh = ctx.splitHeads(k, kvHeads, "kv_num_heads");
  FailureOr<Value> vh = ctx.splitHeads(v, kvHeads, "kv_num_heads");
  if (failed(qh) || failed(kh) || failed(vh))
    return failure();

  auto select = [&](Value cond, Value yes, Value no) {
    auto shape = dfg::broadcastShapes(shapeOf(cond), shapeOf(yes));
    if (!shape)
      return FailureOr<Value>(ctx.error(toString(shape.takeError())));
    return ctx.create<dfg::WhereOp>(dfg::broadcastShapes(*shape, shapeOf(no)),
                                    elementOf(yes), cond, yes, no);
  };
  // past ++ new along the positions.
  auto pastThenNew = [&](Value pastPart, Value fresh) {
    SmallVector<ArrayRef<int64_t>> shapes{shapeOf(pastPart), shapeOf(fresh)};
    return ctx.create<dfg::ConcatOp>(dfg::concatShape(shapes, 2),
                                     elementOf(fresh),
                                     ValueRange{pastPart, fresh}, 2);
  };
  // x [batch, kv_heads, N, d] -> x[b, :, index[b, m]]: [batch, kv_heads,
  // M, d], for index [batch, M].
  auto gatherPositions = [&](Value x, Value index) -> FailureOr<Value> {
    FailureOr<Value> index3 = reshape(index, {0, -1, 1}); // [batch, M, 1]
    FailureOr<Value> rows = failed(index3) ? index3 : ctx.swapDims12(x);
    if (failed(rows))
      return failure();
    FailureOr<Value> gathered = ctx.create<dfg::GatherNDOp>(
        dfg::gatherNDShape(shapeOf(*rows), shapeOf(*index3), 1),
        elementOf(*rows), *rows, *index3, 1);
    return failed(gathered) ? gathered : ctx.swapDims12(*gathered);
  };

  if (ctx.attrInt("sliding_window_cache", 0) != 0) {
    // Fixed-capacity caches (onnxruntime-genai's sliding-window layers):
    // past and present hold C = the past's length positions, the latest
    // L(n) of the n a row has seen, oldest first from position 0, where
    // L(n) = n up to C, and past C the cache drops G = C - W + 1 positions
    // at once: L(n) = n - G * ceil((n - C) / G). With P_b = start_b tokens
    // before the step and T_b = P_b + seq after it, the keys are
    // K_b = past[b, :, :L(P_b)] ++ new[b] (positions P_b - L(P_b) ..
    // T_b - 1); query s sees the W of them ending at its position P_b + s;
    // the present is the last L(T_b) rows of K_b, zeros after them.
    int64_t window = ctx.attrInt("local_window_size", -1);
    if (window < 1)
      return ctx.error("sliding_window_cache needs local_window_size > 0");
    if (!pastK)
      return ctx.error("sliding_window_cache needs past_key and past_value "
                       "(the cache of fixed capacity)");
    // The capacity must hold the window: checked against the inputs when
    // the executable runs.
    if (failed(ctx.requireDimAtLeast(pastK, 2, window,
                                     "the sliding-window cache (past_key "
                                     "dimension 2)")))
      return failure();
    AffineExpr capacityE = pastE;
    Value capacity = sizeOf(capacityE);
    FailureOr<Value> drop = binary<dfg::SubOp>(
        ctx, capacity, ctx.scalar(static_cast<double>(window - 1), i64), i64);
    // G >= 1 once the capacity holds the window; max keeps the division
    // defined before that check.
    FailureOr<Value> dropAtLeast1 =
        failed(drop) ? drop
                     : binary<dfg::MaxOp>(ctx, *drop, ctx.scalar(1, i64), i64);
    if (failed(dropAtLeast1))
      return failure();
    auto kept = [&](Value n) -> FailureOr<Value> {
      FailureOr<Value> over = binary<dfg::SubOp>(ctx, n, capacity, i64);
      FailureOr<Value> up =
          failed(over) ? over
                       : binary<dfg::AddOp>(ctx, *over, *dropAtLeast1, i64);
      FailureOr<Value> up1 =
          failed(up) ? up
                     : binary<dfg::SubOp>(ctx, *up, ctx.scalar(1, i64), i64);
      FailureOr<Value> times =
          failed(up1) ? up1
                      : binary<dfg::DivOp>(ctx, *up1, *dropAtLeast1, i64);
      FailureOr<Value> dropped =
          failed(times) ? times
                        : binary<dfg::MulOp>(ctx, *times, *dropAtLeast1, i64);
      FailureOr<Value> less =
          failed(dropped) ? dropped : binary<dfg::SubOp>(ctx, n, *dropped, i64);
      FailureOr<Value> full =
          failed(less) ? less : binary<dfg::GreaterOp>(ctx, n, capacity, i1);
      if (failed(full))
        return failure();
      return select(*full, *less, n);
    };
    FailureOr<Value> end = binary<dfg::AddOp>(ctx, *start, sizeOf(seqE), i64);
    FailureOr<Value> lp = kept(*start);               // [batch, 1]
    FailureOr<Value> lt = failed(end) ? end : kept(*end);
    FailureOr<Value> m = iota(capacityE + seqE, {1, -1}); // [1, C + seq]
    if (failed(lp) || failed(lt) || failed(m))
      return failure();
    // K_b's position m is cat[m] below L(P_b), cat[C + m - L(P_b)] after
    // (rows past L(P_b) + seq are never attended: clamped).
    FailureOr<Value> inPast = binary<dfg::LessOp>(ctx, *m, *lp, i1);
    FailureOr<Value> shifted = binary<dfg::SubOp>(ctx, *m, *lp, i64);
    FailureOr<Value> fromNew =
        failed(shifted) ? shifted
                        : binary<dfg::AddOp>(ctx, *shifted, capacity, i64);
    FailureOr<Value> last = binary<dfg::AddOp>(
        ctx, capacity, sizeOf(seqE - 1), i64);
    FailureOr<Value> clamped =
        failed(fromNew) || failed(last)
            ? FailureOr<Value>(failure())
            : binary<dfg::MinOp>(ctx, *fromNew, *last, i64);
    FailureOr<Value> source =
        failed(inPast) || failed(clamped) ? FailureOr<Value>(failure())
                                          : select(*inPast, *m, *clamped);
    if (failed(source))
      return failure();
    auto keysOf = [&](Value pastPart, Value fresh) -> FailureOr<Value> {
      FailureOr<Value> cat = pastThenNew(pastPart, fresh);
      return failed(cat) ? cat : gatherPositions(*cat, *source);
    };
    FailureOr<Value> allK = keysOf(pastK, *kh), allV = keysOf(pastV, *vh);
    if (failed(allK) || failed(allV))
      return failure();
    // Query s sees K_b's positions m with L(P_b) + s - W < m <= L(P_b) + s.
    FailureOr<Value> keys = iota(capacityE + seqE, {1, 1, 1, -1});
    FailureOr<Value> queries = iota(seqE, {1, 1, -1, 1});
    FailureOr<Value> lp4 = reshape(*lp, {-1, 1, 1, 1});
    if (failed(keys) || failed(queries) || failed(lp4))
      return failure();
    FailureOr<Value> hi = binary<dfg::AddOp>(ctx, *lp4, *queries, i64);
    FailureOr<Value> lo =
        failed(hi) ? hi
                   : binary<dfg::SubOp>(
                         ctx, *hi, ctx.scalar(static_cast<double>(window), i64),
                         i64);
    FailureOr<Value> notAfter =
        failed(hi) ? hi : binary<dfg::LessOrEqualOp>(ctx, *keys, *hi, i1);
    FailureOr<Value> inWindow =
        failed(lo) ? lo : binary<dfg::GreaterOp>(ctx, *keys, *lo, i1);
    FailureOr<Value> visible =
        failed(notAfter) || failed(inWindow)
            ? FailureOr<Value>(failure())
            : binary<dfg::AndOp>(ctx, *notAfter, *inWindow, i1);
    if (failed(visible))
      return failure();
    // The present: row r is K_b's position r + L(P_b) + seq - L(T_b), for
    // r < L(T_b).
    FailureOr<Value> r = iota(capacityE, {1, -1}); // [1, C]
    FailureOr<Value> grown = binary<dfg::AddOp>(ctx, *lp, sizeOf(seqE), i64);
    FailureOr<Value> shift =
        failed(grown) ? grown : binary<dfg::SubOp>(ctx, *grown, *lt, i64);
    FailureOr<Value> at =
        failed(r) || failed(shift) ? FailureOr<Value>(failure())
                                   : binary<dfg::AddOp>(ctx, *r, *shift, i64);
    FailureOr<Value> atClamped =
        failed(at) || failed(last) ? FailureOr<Value>(failure())
                                   : binary<dfg::MinOp>(ctx, *at, *last, i64);
    FailureOr<Value> held =
        failed(r) ? r : binary<dfg::LessOp>(ctx, *r, *lt, i1); // [batch, C]
    FailureOr<Value> held4 = failed(held) ? held : reshape(*held, {0, 1, -1, 1});
    if (failed(atClamped) || failed(held4))
      return failure();
    auto presentOf = [&](Value all) -> FailureOr<Value> {
      FailureOr<Value> rows = gatherPositions(all, *atClamped);
      return failed(rows) ? rows
                          : select(*held4, *rows, ctx.scalar(0, elementOf(all)));
    };
    FailureOr<Value> pk = presentOf(*allK), pv = presentOf(*allV);
    FailureOr<double> scale = attentionScale(ctx, *qh);
    if (failed(pk) || failed(pv) || failed(scale))
      return failure();
    return emitAttention(ctx, *qh, *allK, *allV, *visible, Value(), Value(),
                         *scale, /*causal=*/false,
                         ctx.attrFloat("softcap", 0.0f),
                         /*softcapFirst=*/true, /*merge=*/true, *pk, *pv,
                         Value(), ctx.input(11));
  }

  Value presentK = *kh, presentV = *vh, mask, pastLengths;
  bool causal = false;
  if (!pastK) {
    // A prompt: causal, and key j of row b attended iff j <= seqlens_k[b]
    // (right padding).
    FailureOr<Value> keys = iota(seqE, {1, 1, 1, -1});
    FailureOr<Value> lens4 = failed(keys) ? keys : reshape(lens, {-1, 1, 1, 1});
    FailureOr<Value> keyMask =
        failed(lens4) ? lens4
                      : binary<dfg::LessOrEqualOp>(ctx, *keys, *lens4, i1);
    if (failed(keyMask))
      return failure();
    mask = *keyMask;
    causal = true;
  } else {
    // Row b's new tokens go after its own history, start_b positions of its
    // past: dfg.attention's past_lengths, whose presents are the row's
    // history, its new tokens and zeros beyond (as onnxruntime writes
    // them), and whose causal limit counts from start_b (query i of row b
    // sees keys j <= start_b + i).
    FailureOr<Value> lengths = reshape(*start, {-1});
    if (failed(lengths))
      return failure();
    pastLengths = *lengths;
    causal = true;
  }
  if (int64_t window = ctx.attrInt("local_window_size", -1); window >= 0) {
    FailureOr<Value> keys = iota(totalE, {1, 1, 1, -1});
    FailureOr<Value> queries = iota(seqE, {1, 1, -1, 1});
    FailureOr<Value> start4 =
        pastK ? reshape(*start, {-1, 1, 1, 1}) : FailureOr<Value>(Value());
    FailureOr<Value> windowed =
        failed(keys) || failed(queries) || failed(start4)
            ? FailureOr<Value>(failure())
            : applyLocalWindow(ctx, mask, *keys, *queries, *start4, window);
    if (failed(windowed))
      return failure();
    mask = *windowed;
  }

  FailureOr<double> scale = attentionScale(ctx, *qh);
  if (failed(scale))
    return failure();
  if (pastLengths)
    return emitAttention(ctx, *qh, *kh, *vh, mask, pastK, pastV, *scale, causal,
                         ctx.attrFloat("softcap", 0.0f),
                         /*softcapFirst=*/true, /*merge=*/true, Value(),
                         Value(), pastLengths, ctx.input(11));
  return emitAttention(ctx, *qh, presentK, presentV, mask, Value(), Value(),
                       *scale, causal, ctx.attrFloat("softcap", 0.0f),
                       /*softcapFirst=*/true, /*merge=*/true, Value(), Value(),
                       Value(), ctx.input(11));
}

/// com.microsoft GroupQueryAttention(query, key?, value?, past_key?,
///   past_value?, seqlens_k, total_sequence_length, cos_cache?, sin_cache?,
///   position_ids?) -> dfg.attention with GQA (num_heads / kv_num_heads).
/// query/key/value are [batch, seq, heads * head_dim] (key and value omitted:
/// query packs q | k | v); past_key/value are [batch, kv_heads, past, d]; the
/// presents are [batch, kv_heads, past + seq, d], so total_sequence_length
/// (a constant) must be past + seq: onnxruntime's shared past/present buffer
/// is not supported. do_rotary rotates q and k by cos_cache / sin_cache at
/// position_ids, or at past .. past + seq - 1.
/// seqlens_k (runtime data) is followed as onnxruntime does: without a past,
/// attention is causal and key j of row b is attended only if j <=
/// seqlens_k[b] (a right-padded prompt; padded query rows are unspecified).
/// With a past, row b's new tokens are written at seqlens_k[b] + 1 - seq,
/// after that row's valid history: for one new token by a select on
/// past ++ new, for several (batch 1, as onnxruntime requires) by a gather;
/// the mask then carries the causal rule from each row's own position.
LogicalResult legalizeGroupQueryAttention(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  if (!ctx.input(5) || !ctx.input(6))
    return ctx.error("seqlens_k and total_sequence_length are required");
  if (ctx.input(10))
    return ctx.error("attention_bias is not supported");
  if (ctx.input(12) || ctx.input(13) || ctx.attr("k_quant_type") ||
      ctx.attr("v_quant_type") || ctx.attr("kv_cache_bit_width"))
    return ctx.error("a quantized KV cache (k_scale, v_scale, k_quant_type, "
                     "v_quant_type, kv_cache_bit_width) is not supported");
  if (bool(ctx.input(14)) != bool(ctx.input(15)))
    return ctx.error("q_norm_weight and k_norm_weight must be given together");
  for (unsigned i = 16; i < ctx.numInputs(); ++i)
    if (ctx.input(i))
      return ctx.error("input #" + std::to_string(i) +
                       " is beyond the inputs meshc knows (query .. "
                       "k_norm_weight, #0 to #15)");
  if (int64_t w = ctx.attrInt("local_window_size", -1); w < -1 || w == 0)
    return ctx.error("local_window_size must be -1 (no window) or positive "
                     "(the keys a query sees, itself included), got " +
                     std::to_string(w));
  if (ctx.attrInt("smooth_softmax", 0) != 0)
    return ctx.error("smooth_softmax is not supported");
  if (ctx.attrInt("qk_output", 0) != 0)
    return ctx.error("qk_output is not supported");
  int64_t heads = ctx.attrInt("num_heads", 0);
  int64_t kvHeads = ctx.attrInt("kv_num_heads", 0);
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    return ctx.error("num_heads (" + std::to_string(heads) +
                     ") must be a positive multiple of kv_num_heads (" +
                     std::to_string(kvHeads) + ")");
  // head_sink: one score per head beside the keys' in the softmax
  // (dfg.attention's sinks).
  if (Value sink = ctx.input(11);
      sink && (shapeOf(sink).size() != 1 ||
               (!ShapedType::isDynamic(shapeOf(sink)[0]) &&
                shapeOf(sink)[0] != heads) ||
               elementOf(sink) != elementOf(ctx.input(0))))
    return ctx.error("head_sink must be [num_heads] = [" +
                     std::to_string(heads) +
                     "] of the query's element type, got " +
                     dfg::formatShape(shapeOf(sink)));

  Value q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  if (bool(k) != bool(v))
    return ctx.error("key and value must be given together");
  ArrayRef<int64_t> qShape = shapeOf(q);
  if (qShape.size() != 3 || ShapedType::isDynamic(qShape[2]))
    return ctx.error("query must be [batch, seq, hidden] with a static "
                     "hidden size, got " +
                     dfg::formatShape(qShape));
  if (!k) {
    // Packed: hidden = (heads + 2 kv_heads) * head_dim.
    if (qShape[2] % (heads + 2 * kvHeads) != 0)
      return ctx.error("packed query width " + std::to_string(qShape[2]) +
                       " is not (num_heads + 2 * kv_num_heads) * head_dim");
    int64_t d = qShape[2] / (heads + 2 * kvHeads);
    auto parts = splitLast(ctx, q, {heads * d, kvHeads * d, kvHeads * d});
    if (failed(parts))
      return failure();
    q = (*parts)[0], k = (*parts)[1], v = (*parts)[2];
  }
  if (shapeOf(k).size() != 3 || shapeOf(v).size() != 3)
    return ctx.error("key and value must be [batch, seq, kv_hidden]");
  int64_t batch = shapeOf(q)[0], seq = shapeOf(q)[1];
  if (ctx.input(14)) {
    FailureOr<Value> nq = normHeads(ctx, q, heads, ctx.input(14),
                                    "q_norm_weight");
    FailureOr<Value> nk = failed(nq) ? nq
                                     : normHeads(ctx, k, kvHeads,
                                                 ctx.input(15),
                                                 "k_norm_weight");
    if (failed(nk))
      return failure();
    q = *nq, k = *nk;
  }

  Value pastK = ctx.input(3), pastV = ctx.input(4);
  if (bool(pastK) != bool(pastV))
    return ctx.error("past_key and past_value must be given together");
  if (pastK && (shapeOf(pastK).size() != 4 || shapeOf(pastV).size() != 4))
    return ctx.error("past_key and past_value must be [batch, kv_heads, "
                     "past, head_dim]");
  int64_t past = pastK ? shapeOf(pastK)[2] : 0;
  // The past's head size is the query's (onnxruntime-genai names it
  // kv_cache_dim): a symbolic one is sized by importing again.
  int64_t headDim = shapeOf(q)[2] / heads;
  if (pastK && (ShapedType::isDynamic(shapeOf(pastK)[3]) ||
                ShapedType::isDynamic(shapeOf(pastV)[3]))) {
    bool pinned = ctx.pinDim(pastK, 3, headDim);
    pinned = ctx.pinDim(pastV, 3, headDim) && pinned;
    return ctx.error(pinned ? "past head size is symbolic (imported again "
                              "with it sized " +
                                  std::to_string(headDim) + ")"
                            : "past_key and past_value must have a static "
                              "head size (" +
                                  std::to_string(headDim) + ")");
  }
  // A fixed-capacity cache follows one rule for every size.
  if (ShapedType::isDynamic(past) || ShapedType::isDynamic(seq) ||
      ctx.attrInt("sliding_window_cache", 0) != 0)
    return legalizeSymbolicGQA(ctx, q, k, v, pastK, pastV, heads, kvHeads);
  FailureOr<SmallVector<int64_t>> total =
      ctx.constantInts(6, "total_sequence_length");
  if (failed(total))
    return failure();
  if (total->size() != 1 || total->front() != past + seq)
    return ctx.error(
        "total_sequence_length (" +
        (total->size() == 1 ? std::to_string(total->front()) : "not a scalar") +
        ") must be past (" + std::to_string(past) + ") + new (" +
        std::to_string(seq) +
        ") tokens: the present holds the past buffer and the new tokens "
        "(onnxruntime's shared past/present buffer is not supported)");

  OpBuilder &b = ctx.builder();
  FailureOr<Value> seqlensVector = seqlensOf(ctx);
  if (failed(seqlensVector))
    return failure();
  Value seqlens = *seqlensVector;
  auto lensType = cast<RankedTensorType>(seqlens.getType());
  int64_t totalLen = total->front();
  // The masks below are built from constant position tables of up to
  // seq x total entries: bounded, so that a large static shape is refused,
  // not allocated.
  if (totalLen > (int64_t(1) << 24) / std::max<int64_t>(seq, 1))
    return ctx.error("a static GroupQueryAttention over " +
                     std::to_string(seq) + " new of " +
                     std::to_string(totalLen) +
                     " tokens needs position tables of more than 2^24 "
                     "entries; export it with symbolic lengths");
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  // Index arithmetic in i64.
  Value lens = dfg::CastOp::create(
      b, ctx.loc(), RankedTensorType::get(lensType.getShape(), i64), seqlens,
      i64);

  if (failed(rotateQK(ctx, q, k, heads, kvHeads, [&]() -> FailureOr<Value> {
        if (pastK) {
          // After a past, onnxruntime rotates row b's new tokens at their
          // own positions, seqlens_k[b] + 1 - seq + s (rows of a padded
          // batch hold different amounts of history), not at past + s.
          FailureOr<Value> col = ctx.create<dfg::ReshapeOp>(
              dfg::reshapeShape(shapeOf(lens), {-1, 1}), i64, lens,
              b.getDenseI64ArrayAttr({-1, 1}));
          if (failed(col))
            return failure();
          SmallVector<int64_t> offsets;
          for (int64_t s = 0; s < seq; ++s)
            offsets.push_back(1 - seq + s);
          auto type = RankedTensorType::get({1, seq}, i64);
          Value offset = dfg::ConstantOp::create(
              b, ctx.loc(),
              DenseElementsAttr::get(type, ArrayRef<int64_t>(offsets)));
          return binary<dfg::AddOp>(ctx, *col, offset, i64);
        }
        if (ShapedType::isDynamic(batch))
          return ctx.error("do_rotary without position_ids needs a static "
                           "batch");
        return ctx.positionTable(batch, seq, past,
                                 "do_rotary without position_ids");
      })))
    return failure();

  FailureOr<Value> qh = ctx.splitHeads(q, heads, "num_heads");
  FailureOr<Value> kh = ctx.splitHeads(k, kvHeads, "kv_num_heads");
  FailureOr<Value> vh = ctx.splitHeads(v, kvHeads, "kv_num_heads");
  if (failed(qh) || failed(kh) || failed(vh))
    return failure();

  // seqlens_k as [batch, 1, 1, 1].
  FailureOr<Value> lensCol = ctx.create<dfg::ReshapeOp>(
      dfg::reshapeShape(shapeOf(lens), {-1, 1, 1, 1}), i64, lens,
      b.getDenseI64ArrayAttr({-1, 1, 1, 1}));
  if (failed(lensCol))
    return failure();
  // positions(shape): 0 .. n-1 laid along the one non-unit dimension.
  auto positions = [&](ArrayRef<int64_t> shape, int64_t offsetPerRow = 0) {
    auto type = RankedTensorType::get(shape, i64);
    SmallVector<int64_t> values;
    int64_t cols = shape.back();
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      values.push_back(cols == 1 ? i : i % cols - offsetPerRow * (i / cols));
    return dfg::ConstantOp::create(
        b, ctx.loc(), DenseElementsAttr::get(type, ArrayRef<int64_t>(values)));
  };
  // Key j of row b is attended iff j <= seqlens_k[b]: [batch, 1, 1, total].
  FailureOr<Value> keyMask = binary<dfg::LessOrEqualOp>(
      ctx, positions({1, 1, 1, totalLen}), *lensCol, i1);
  if (failed(keyMask))
    return failure();

  Value mask = *keyMask, presentK = *kh, presentV = *vh;
  bool causal = true;
  if (pastK) {
    // onnxruntime writes row b's new tokens at past_b = seqlens_k[b] + 1 -
    // seq, after that row's valid past, so rows may hold different amounts of
    // history. With one new token: the present is past ++ new, with the new
    // token moved to position seqlens_k[b]; the key mask is the whole of the
    // causal rule.
    auto concat = [&](Value pastPart, Value fresh) {
      SmallVector<ArrayRef<int64_t>> shapes{shapeOf(pastPart), shapeOf(fresh)};
      return ctx.create<dfg::ConcatOp>(dfg::concatShape(shapes, 2),
                                       elementOf(fresh),
                                       ValueRange{pastPart, fresh}, 2);
    };
    FailureOr<Value> catK = concat(pastK, *kh), catV = concat(pastV, *vh);
    if (failed(catK) || failed(catV))
      return failure();
    causal = false;
    if (seq == 1) {
      FailureOr<Value> isNew = binary<dfg::EqualOp>(
          ctx, positions({1, 1, totalLen, 1}), *lensCol, i1);
      if (failed(isNew))
        return failure();
      auto place = [&](Value fresh, Value cat) -> FailureOr<Value> {
        auto shape = dfg::broadcastShapes(shapeOf(*isNew), shapeOf(fresh));
        if (!shape)
          return ctx.error(toString(shape.takeError()));
        return ctx.create<dfg::WhereOp>(
            dfg::broadcastShapes(*shape, shapeOf(cat)), elementOf(cat), *isNew,
            fresh, cat);
      };
      FailureOr<Value> k1 = place(*kh, *catK), v1 = place(*vh, *catV);
      // onnxruntime leaves zeros beyond row b's new token.
      FailureOr<Value> beyond = binary<dfg::GreaterOp>(
          ctx, positions({1, 1, totalLen, 1}), *lensCol, i1);
      if (failed(k1) || failed(v1) || failed(beyond))
        return failure();
      auto clear = [&](Value x) {
        return ctx.create<dfg::WhereOp>(
            dfg::broadcastShapes(shapeOf(*beyond), shapeOf(x)), elementOf(x),
            *beyond, ctx.scalar(0, elementOf(x)), x);
      };
      FailureOr<Value> k2 = clear(*k1), v2 = clear(*v1);
      if (failed(k2) || failed(v2))
        return failure();
      presentK = *k2, presentV = *v2;
    } else if (batch == 1) {
      // present[t] = cat[t < past_0 ? t : past + t - past_0], and query i
      // sees keys j <= past_0 + i.
      FailureOr<Value> start = binary<dfg::AddOp>(
          ctx, *lensCol, ctx.scalar(static_cast<double>(1 - seq), i64), i64);
      FailureOr<Value> flatStart =
          failed(start) ? start
                        : ctx.create<dfg::ReshapeOp>(
                              dfg::reshapeShape(shapeOf(*start), {1}), i64,
                              *start, b.getDenseI64ArrayAttr({1}));
      if (failed(flatStart))
        return failure();
      Value t = positions({totalLen});
      FailureOr<Value> before = binary<dfg::LessOp>(ctx, t, *flatStart, i1);
      FailureOr<Value> shifted = binary<dfg::SubOp>(ctx, t, *flatStart, i64);
      FailureOr<Value> fromNew =
          failed(shifted)
              ? shifted
              : binary<dfg::AddOp>(ctx, *shifted,
                                   ctx.scalar(static_cast<double>(past), i64),
                                   i64);
      FailureOr<Value> clamped =
          failed(fromNew)
              ? fromNew
              : binary<dfg::MinOp>(
                    ctx, *fromNew,
                    ctx.scalar(static_cast<double>(totalLen - 1), i64), i64);
      if (failed(before) || failed(clamped))
        return failure();
      FailureOr<Value> index = ctx.create<dfg::WhereOp>(
          dfg::broadcastShapes(shapeOf(t), shapeOf(*clamped)), i64, *before, t,
          *clamped);
      if (failed(index))
        return failure();
      auto gather = [&](Value cat) {
        return ctx.create<dfg::GatherOp>(
            dfg::gatherShape(shapeOf(cat), shapeOf(*index), 2), elementOf(cat),
            cat, *index, 2);
      };
      FailureOr<Value> gk = gather(*catK), gv = gather(*catV);
      // (j - i) <= past_0: [1, 1, seq, total].
      FailureOr<Value> causalMask = binary<dfg::LessOrEqualOp>(
          ctx, positions({1, 1, seq, totalLen}, 1), *start, i1);
      if (failed(gk) || failed(gv) || failed(causalMask))
        return failure();
      presentK = *gk, presentV = *gv, mask = *causalMask;
    } else {
      return ctx.error("several new tokens after a past need batch 1 (as "
                       "onnxruntime requires), got batch " +
                       std::to_string(batch) + " and " + std::to_string(seq) +
                       " new tokens");
    }
  }
  if (int64_t window = ctx.attrInt("local_window_size", -1); window >= 0) {
    FailureOr<Value> start =
        pastK
            ? binary<dfg::AddOp>(ctx, *lensCol,
                                 ctx.scalar(static_cast<double>(1 - seq), i64),
                                 i64)
            : FailureOr<Value>(Value());
    FailureOr<Value> windowed =
        failed(start)
            ? start
            : applyLocalWindow(ctx, mask, positions({1, 1, 1, totalLen}),
                               positions({1, 1, seq, 1}), *start, window);
    if (failed(windowed))
      return failure();
    mask = *windowed;
  }

  FailureOr<double> scale = attentionScale(ctx, *qh);
  if (failed(scale))
    return failure();
  return emitAttention(ctx, *qh, presentK, presentV, mask, Value(), Value(),
                       *scale, causal, ctx.attrFloat("softcap", 0.0f),
                       /*softcapFirst=*/true, /*merge=*/true, Value(), Value(),
                       Value(), ctx.input(11));
}

} // namespace

void populateAttentionLegalizations(LegalizationTable &table) {
  table.add("com.microsoft", "GroupQueryAttention", 1,
            legalizeGroupQueryAttention);
  table.add("", "Attention", 23, legalizeAttention);
  table.add("com.microsoft", "MultiHeadAttention", 1,
            legalizeMultiHeadAttention);
}

} // namespace meshc::onnximport
