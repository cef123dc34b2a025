//===- LegalizeRotary.cpp - Rotary position embedding -> dfg.rotary -------===//
//
// Part of meshc. ONNX RotaryEmbedding-23 and com.microsoft RotaryEmbedding.
// dfg.rotary works on [batch, heads, seq, head_dim]; 3-D inputs
// ([batch, seq, heads * head_dim]) are reshaped and transposed to that layout
// and back.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::onnximport {

FailureOr<Value> rotate(NodeContext &ctx, Value x, Value cos, Value sin,
                        Value positions, int64_t numHeads, int64_t rotaryDim,
                        bool interleaved) {
  OpBuilder &b = ctx.builder();
  ArrayRef<int64_t> in = shapeOf(x);
  bool is3D = in.size() == 3;
  if (in.size() != 3 && in.size() != 4)
    return ctx.error("input " + dfg::formatShape(in) + " must be 3-D or 4-D");
  if (is3D) {
    // As onnxruntime: without num_heads, a whole-head rotation's head_dim is
    // twice the caches' width.
    int64_t half =
        shapeOf(cos).empty() ? ShapedType::kDynamic : shapeOf(cos).back();
    if (numHeads == 0 && rotaryDim == 0 && !ShapedType::isDynamic(in[2]) &&
        !ShapedType::isDynamic(half) && half > 0 && in[2] % (2 * half) == 0)
      numHeads = in[2] / (2 * half);
    FailureOr<Value> heads = ctx.splitHeads(x, numHeads, "num_heads");
    if (failed(heads))
      return failure();
    x = *heads;
  }
  int64_t headDim = shapeOf(x)[3];
  if (rotaryDim == 0) {
    if (ShapedType::isDynamic(headDim))
      return ctx.error("head_dim is dynamic; give rotary_embedding_dim");
    rotaryDim = headDim;
  }
  Value rotated = dfg::RotaryOp::create(b, ctx.loc(), x.getType(), x, cos, sin,
                                        positions, interleaved, rotaryDim);
  if (!is3D)
    return rotated;
  return ctx.mergeHeads(rotated);
}

namespace {

/// rotate(), bound as the node's output.
LogicalResult emitRotary(NodeContext &ctx, Value x, Value cos, Value sin,
                         Value positions, int64_t numHeads, int64_t rotaryDim,
                         bool interleaved) {
  FailureOr<Value> rotated =
      rotate(ctx, x, cos, sin, positions, numHeads, rotaryDim, interleaved);
  return failed(rotated) ? failure() : ctx.setResults(*rotated);
}

/// RotaryEmbedding-23(X, cos_cache, sin_cache, position_ids?)
LogicalResult legalizeRotary23(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  return emitRotary(ctx, ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                    ctx.attrInt("num_heads", 0),
                    ctx.attrInt("rotary_embedding_dim", 0),
                    ctx.attrInt("interleaved", 0) != 0);
}

/// com.microsoft RotaryEmbedding(input, position_ids, cos_cache, sin_cache):
/// the same rotation with the inputs in another order. position_ids may be
/// [batch, seq] or a single offset (positions offset .. offset + seq - 1),
/// which must then be a constant.
LogicalResult legalizeRotaryMs(NodeContext &ctx) {
  if (failed(ctx.requireInputs(4)))
    return failure();
  if (ctx.attrFloat("scale", 1.0f) != 1.0f)
    return ctx.error("scale other than 1 is not supported");
  if (ctx.attrInt("is_packed_batching", 0))
    return ctx.error("packed batching is not supported");
  Value x = ctx.input(0), positions = ctx.input(1);
  ArrayRef<int64_t> in = shapeOf(x);
  if (cast<RankedTensorType>(positions.getType()).getRank() != 2) {
    // A single offset: build the [batch, seq] table of positions.
    auto offset = ctx.constantInts(1, "position_ids (an offset)");
    if (failed(offset))
      return failure();
    int64_t batch = in[0], seq = in.size() == 3 ? in[1] : in[2];
    if (offset->size() != 1 || ShapedType::isDynamic(batch) ||
        ShapedType::isDynamic(seq))
      return ctx.error("an offset position_ids needs a static batch and "
                       "sequence length");
    FailureOr<Value> table =
        ctx.positionTable(batch, seq, offset->front(), "an offset position_ids");
    if (failed(table))
      return failure();
    positions = *table;
  }
  return emitRotary(ctx, x, ctx.input(2), ctx.input(3), positions,
                    ctx.attrInt("num_heads", 0),
                    ctx.attrInt("rotary_embedding_dim", 0),
                    ctx.attrInt("interleaved", 0) != 0);
}

} // namespace

void populateRotaryLegalizations(LegalizationTable &table) {
  table.add("", "RotaryEmbedding", 23, legalizeRotary23);
  table.add("com.microsoft", "RotaryEmbedding", 1, legalizeRotaryMs);
}

} // namespace meshc::onnximport
