//===- LegalizeAttention.cpp - Attention -> dfg.attention -----------------===//
//
// Part of meshc. ONNX Attention-23/24 and com.microsoft MultiHeadAttention.
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
namespace {

/// [batch, seq, heads * d] -> [batch, heads, seq, d]; 4-D passes through.
FailureOr<Value> toHeads(NodeContext &ctx, Value v, int64_t heads,
                         StringRef attr) {
  if (shapeOf(v).size() == 4)
    return v;
  if (shapeOf(v).size() != 3)
    return ctx.error("attention inputs must be 3-D or 4-D, got " +
                     dfg::formatShape(shapeOf(v)));
  return ctx.splitHeads(v, heads, attr);
}

/// Creates dfg.attention and binds Y (merged back to 3-D when `merge`),
/// present_key, present_value; without a past, the presents are K and V.
LogicalResult emitAttention(NodeContext &ctx, Value q, Value k, Value v,
                            Value mask, Value pastK, Value pastV, double scale,
                            bool causal, double softcap, bool merge) {
  OpBuilder &b = ctx.builder();
  Type element = elementOf(q);
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
  auto op =
      dfg::AttentionOp::create(b, ctx.loc(), types, q, k, v, mask, pastK, pastV,
                               b.getF32FloatAttr(scale), b.getBoolAttr(causal),
                               b.getF32FloatAttr(softcap));
  Value y = op.getResult();
  if (merge) {
    FailureOr<Value> merged = ctx.mergeHeads(y);
    if (failed(merged))
      return failure();
    y = *merged;
  }
  return ctx.setResults(
      {y, pastK ? op.getPresent()[0] : k, pastK ? op.getPresent()[1] : v});
}

/// 1/sqrt(head_dim) unless the node gives `scale`.
FailureOr<double> attentionScale(NodeContext &ctx, Value q) {
  if (ctx.attr("scale"))
    return static_cast<double>(ctx.attrFloat("scale", 1.0f));
  int64_t headDim = shapeOf(q)[3];
  if (ShapedType::isDynamic(headDim))
    return ctx.error("head_dim is dynamic; give the scale attribute");
  return 1.0 / std::sqrt(static_cast<double>(headDim));
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

  Value mask = ctx.input(3);
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
                       ctx.attrFloat("softcap", 0.0f), /*merge=*/is3D);
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
    Value *targets[] = {&q, &k, &v};
    for (int64_t i = 0; i < 3; ++i) {
      SmallVector<int64_t> starts{i * hidden}, ends{(i + 1) * hidden}, axes{0},
          steps{1};
      FailureOr<Value> part = ctx.create<dfg::SliceOp>(
          dfg::sliceShape(shapeOf(bias), starts, ends, axes, steps), element,
          bias, b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
          b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
      FailureOr<Value> sum =
          failed(part)
              ? part
              : ctx.create<dfg::AddOp>(
                    dfg::broadcastShapes(shapeOf(*targets[i]), shapeOf(*part)),
                    element, *targets[i], *part);
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
                       /*merge=*/true);
}

} // namespace

void populateAttentionLegalizations(LegalizationTable &table) {
  table.add("", "Attention", 23, legalizeAttention);
  table.add("com.microsoft", "MultiHeadAttention", 1,
            legalizeMultiHeadAttention);
}

} // namespace meshc::onnximport
