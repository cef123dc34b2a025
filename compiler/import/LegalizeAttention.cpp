//===- LegalizeAttention.cpp - Attention -> dfg.attention -----------------===//
//
// Part of meshc. ONNX Attention-23/24. dfg.attention works on
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
  if (heads <= 0)
    return ctx.error("a 3-D input needs the " + attr + " attribute");
  SmallVector<int64_t> spec{0, 0, heads, -1};
  FailureOr<Value> split = ctx.create<dfg::ReshapeOp>(
      dfg::reshapeShape(shapeOf(v), spec), elementOf(v), v,
      ctx.builder().getDenseI64ArrayAttr(spec));
  return failed(split) ? split : ctx.swapDims12(*split);
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

  double scale;
  if (ctx.attr("scale")) {
    scale = ctx.attrFloat("scale", 1.0f);
  } else {
    int64_t headDim = shapeOf(*q)[3];
    if (ShapedType::isDynamic(headDim))
      return ctx.error("head_dim is dynamic; give the scale attribute");
    scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  }

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

  // Result types come from the op's own inference (its verifier reports a
  // mismatch at this node).
  SmallVector<Type> types;
  OpBuilder &b = ctx.builder();
  Type element = elementOf(*q);
  SmallVector<int64_t> out{shapeOf(*q)[0], shapeOf(*q)[1], shapeOf(*q)[2],
                           shapeOf(*v)[3]};
  types.push_back(RankedTensorType::get(out, element));
  if (pastK)
    for (Value fresh : {*k, *v}) {
      SmallVector<int64_t> shape(shapeOf(fresh));
      int64_t p = shapeOf(pastK)[2];
      shape[2] = ShapedType::isDynamic(shape[2]) || ShapedType::isDynamic(p)
                     ? ShapedType::kDynamic
                     : shape[2] + p;
      types.push_back(RankedTensorType::get(shape, element));
    }
  auto op = dfg::AttentionOp::create(
      b, ctx.loc(), types, *q, *k, *v, mask, pastK, pastV,
      b.getF32FloatAttr(scale), b.getBoolAttr(ctx.attrInt("is_causal", 0)),
      b.getF32FloatAttr(ctx.attrFloat("softcap", 0.0f)));

  Value y = op.getResult();
  if (is3D) {
    FailureOr<Value> back = ctx.swapDims12(y);
    if (failed(back))
      return failure();
    SmallVector<int64_t> merge{0, 0, -1};
    FailureOr<Value> merged = ctx.create<dfg::ReshapeOp>(
        dfg::reshapeShape(shapeOf(*back), merge), element, *back,
        b.getDenseI64ArrayAttr(merge));
    if (failed(merged))
      return failure();
    y = *merged;
  }
  Value presentK = pastK ? op.getPresent()[0] : *k;
  Value presentV = pastK ? op.getPresent()[1] : *v;
  // Output #3 (qk_matmul_output) is not produced.
  return ctx.setResults({y, presentK, presentV});
}

} // namespace

void populateAttentionLegalizations(LegalizationTable &table) {
  table.add("", "Attention", 23, legalizeAttention);
}

} // namespace meshc::onnximport
