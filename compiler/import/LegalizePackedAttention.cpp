//===- LegalizePackedAttention.cpp - com.microsoft Attention --------------===//
//
// Part of meshc. com.microsoft Attention, the fused self-attention of
// onnxruntime's transformer optimizer (BERT and GPT-2 exports): the q | k | v
// projection is inside the op, its masks come in onnxruntime's mask_index
// formats, and the KV cache is one tensor with key and value stacked. It
// becomes the projection (dfg.matmul + dfg.add, which the graph pipeline
// raises to dfg.linear) and dfg.attention.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// The keys each batch row may attend, as a bool tensor that broadcasts to
/// [batch, heads, seq, total], from onnxruntime's mask_index formats:
///   [batch, total]        raw mask, nonzero = attend;
///   [batch, seq, total]   raw mask per query;
///   [batch]               end positions: key j attended iff j < end[b];
///   [2 * batch]           end positions, then start positions: and j >=
///                         start[b] (left padding).
/// `totalE` is the total length as an expression of the named dimensions.
FailureOr<Value> keepMask(NodeContext &ctx, Value index, int64_t batch,
                          int64_t total, AffineExpr totalE) {
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  ArrayRef<int64_t> shape = shapeOf(index);
  auto as64 = [&](Value v) -> Value {
    return dfg::CastOp::create(b, ctx.loc(),
                               RankedTensorType::get(shapeOf(v), i64), v, i64);
  };
  auto unsqueeze = [&](Value v, ArrayRef<int64_t> axes) {
    return ctx.create<dfg::UnsqueezeOp>(dfg::unsqueezeShape(shapeOf(v), axes),
                                        elementOf(v), v,
                                        b.getDenseI64ArrayAttr(axes));
  };
  if (shape.size() == 2 || shape.size() == 3) {
    if (shape.back() != total)
      return ctx.error("mask_index " + dfg::formatShape(shape) +
                       " must end in the total sequence length " +
                       std::to_string(total));
    FailureOr<Value> keep =
        binary<dfg::GreaterOp>(ctx, as64(index), ctx.scalar(0, i64), i1);
    if (failed(keep))
      return failure();
    // [batch, total] -> [batch, 1, 1, total]; [batch, seq, total] ->
    // [batch, 1, seq, total].
    return shape.size() == 2 ? unsqueeze(*keep, {1, 2}) : unsqueeze(*keep, {1});
  }
  // (A symbolic batch is ShapedType::kDynamic, which doubling overflows.)
  if (shape.size() != 1 ||
      (shape[0] != batch &&
       (ShapedType::isDynamic(batch) || shape[0] != 2 * batch)))
    return ctx.error("mask_index " + dfg::formatShape(shape) +
                     " is not supported (meshc takes [batch], [2 * batch], "
                     "[batch, total] and [batch, seq, total])");
  if (!totalE)
    return ctx.error("the sequence length follows from no named input "
                     "dimension; give it a size with --dim NAME=SIZE");
  // Positions as a column [rows, 1, 1, 1] against keys [1, 1, 1, total].
  FailureOr<Value> column = ctx.create<dfg::ReshapeOp>(
      dfg::reshapeShape(shape, {-1, 1, 1, 1}), i64, as64(index),
      b.getDenseI64ArrayAttr({-1, 1, 1, 1}));
  if (failed(column))
    return failure();
  FailureOr<Value> keys = ctx.iota(totalE, {1, 1, 1, -1});
  if (failed(keys))
    return failure();
  if (shape[0] == batch)
    return binary<dfg::LessOp>(ctx, *keys, *column, i1);
  auto rows = [&](int64_t start) {
    return sliceAxis(ctx, *column, 0, start, start + batch);
  };
  FailureOr<Value> ends = rows(0), starts = rows(batch);
  if (failed(ends) || failed(starts))
    return failure();
  FailureOr<Value> beforeEnd = binary<dfg::LessOp>(ctx, *keys, *ends, i1);
  FailureOr<Value> afterStart =
      binary<dfg::LessOrEqualOp>(ctx, *starts, *keys, i1);
  if (failed(beforeEnd) || failed(afterStart))
    return failure();
  return binary<dfg::AndOp>(ctx, *beforeEnd, *afterStart, i1);
}

/// past [2, batch, heads, past, head_dim] -> its key (i = 0) or value (1).
FailureOr<Value> pastPart(NodeContext &ctx, Value past, int64_t i) {
  FailureOr<Value> slice = sliceAxis(ctx, past, 0, i, i + 1);
  if (failed(slice))
    return failure();
  return ctx.create<dfg::SqueezeOp>(
      dfg::squeezeShape(shapeOf(*slice), {0}), elementOf(past), *slice,
      ctx.builder().getDenseI64ArrayAttr({0}));
}

/// com.microsoft Attention(input, weights, bias?, mask_index?, past?,
///   attention_bias?, past_sequence_length?) -> output [batch, seq,
///   v_hidden], present [2, batch, heads, past + seq, head_dim].
/// q | k | v = input @ weights + bias, cut by qkv_hidden_sizes (default
/// three equal parts); scores = scale * q k^T, then mask_filter_value
/// (default -10000) is added where mask_index hides a key, and
/// attention_bias is added; unidirectional is causal (query i sees keys up
/// to past + i). Not supported: onnxruntime's shared past/present buffer
/// (past_present_share_buffer, past_sequence_length), do_rotary, and the 4-D
/// Megatron mask.
LogicalResult legalizePackedAttention(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  if (ctx.attrInt("past_present_share_buffer", 0) != 0 || ctx.input(6))
    return ctx.error("the shared past/present buffer "
                     "(past_present_share_buffer, past_sequence_length) is "
                     "not supported");
  if (ctx.attrInt("do_rotary", 0) != 0)
    return ctx.error("do_rotary is not supported");
  int64_t heads = ctx.attrInt("num_heads", 0);
  if (heads <= 0)
    return ctx.error("num_heads must be positive, got " +
                     std::to_string(heads));
  Value x = ctx.input(0), weights = ctx.input(1);
  ArrayRef<int64_t> xShape = shapeOf(x), wShape = shapeOf(weights);
  if (xShape.size() != 3 || wShape.size() != 2)
    return ctx.error("input must be [batch, seq, hidden] and weights [hidden, "
                     "q + k + v hidden], got " +
                     dfg::formatShape(xShape) + " and " +
                     dfg::formatShape(wShape));
  if (ShapedType::isDynamic(wShape[1]))
    return ctx.error("the weights' width must be static");
  SmallVector<int64_t> sizes;
  if (auto given = ctx.attrInts("qkv_hidden_sizes"))
    sizes = *given;
  else if (wShape[1] % 3 == 0)
    sizes.assign(3, wShape[1] / 3);
  if (sizes.size() != 3 || sizes[0] != sizes[1] ||
      sizes[0] + sizes[1] + sizes[2] != wShape[1] || sizes[0] % heads != 0 ||
      sizes[2] % heads != 0)
    return ctx.error(
        "the projection width " + std::to_string(wShape[1]) +
        " must split into q, k, v hidden sizes with q = k and each a "
        "multiple of num_heads (" +
        std::to_string(heads) + "); give qkv_hidden_sizes");

  Type element = elementOf(x);
  FailureOr<Value> proj = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(xShape, wShape), element, x, weights);
  if (failed(proj))
    return failure();
  if (Value bias = ctx.input(2)) {
    proj = binary<dfg::AddOp>(ctx, *proj, bias, element);
    if (failed(proj))
      return failure();
  }
  auto qkv = splitLast(ctx, *proj, sizes);
  if (failed(qkv))
    return failure();
  FailureOr<Value> q = ctx.splitHeads((*qkv)[0], heads, "num_heads");
  FailureOr<Value> k = ctx.splitHeads((*qkv)[1], heads, "num_heads");
  FailureOr<Value> v = ctx.splitHeads((*qkv)[2], heads, "num_heads");
  if (failed(q) || failed(k) || failed(v))
    return failure();

  Value pastK, pastV;
  int64_t past = 0;
  if (Value stacked = ctx.input(4)) {
    ArrayRef<int64_t> p = shapeOf(stacked);
    if (p.size() != 5 || p[0] != 2)
      return ctx.error("past must be [2, batch, num_heads, past, head_dim], "
                       "got " +
                       dfg::formatShape(p));
    FailureOr<Value> pk = pastPart(ctx, stacked, 0);
    FailureOr<Value> pv = pastPart(ctx, stacked, 1);
    if (failed(pk) || failed(pv))
      return failure();
    pastK = *pk, pastV = *pv, past = p[3];
  }
  int64_t seq = xShape[1];
  int64_t total = ShapedType::isDynamic(seq) || ShapedType::isDynamic(past)
                      ? ShapedType::kDynamic
                      : past + seq;

  // The additive mask: mask_filter_value where mask_index hides a key, plus
  // attention_bias.
  Value mask;
  if (Value index = ctx.input(3)) {
    AffineExpr seqE = ctx.dimsOf(x)[1];
    AffineExpr totalE =
        !seqE || !pastK ? seqE
                        : (ctx.dimsOf(pastK)[2] ? ctx.dimsOf(pastK)[2] + seqE
                                                : AffineExpr());
    FailureOr<Value> keep = keepMask(ctx, index, xShape[0], total, totalE);
    if (failed(keep))
      return failure();
    auto f = RankedTensorType::get(shapeOf(*keep), element);
    Value keepF =
        dfg::CastOp::create(ctx.builder(), ctx.loc(), f, *keep, element);
    FailureOr<Value> hidden =
        binary<dfg::SubOp>(ctx, ctx.scalar(1.0, element), keepF, element);
    if (failed(hidden))
      return failure();
    FailureOr<Value> additive = binary<dfg::MulOp>(
        ctx, *hidden,
        ctx.scalar(ctx.attrFloat("mask_filter_value", -10000.0f), element),
        element);
    if (failed(additive))
      return failure();
    mask = *additive;
  }
  if (Value bias = ctx.input(5)) {
    if (mask) {
      FailureOr<Value> sum = binary<dfg::AddOp>(ctx, mask, bias, element);
      if (failed(sum))
        return failure();
      mask = *sum;
    } else {
      mask = bias;
    }
  }

  FailureOr<double> scale = attentionScale(ctx, *q);
  if (failed(scale))
    return failure();
  OpBuilder &b = ctx.builder();
  ArrayRef<int64_t> qShape = shapeOf(*q);
  SmallVector<Type> types{RankedTensorType::get(
      {qShape[0], qShape[1], qShape[2], shapeOf(*v)[3]}, element)};
  if (pastK)
    for (Value fresh : {*k, *v}) {
      SmallVector<int64_t> shape(shapeOf(fresh));
      shape[2] = total;
      types.push_back(RankedTensorType::get(shape, element));
    }
  auto op = dfg::AttentionOp::create(
      b, ctx.loc(), types, *q, *k, *v, mask, pastK, pastV,
      /*past_lengths=*/Value(), /*sinks=*/Value(), b.getF32FloatAttr(*scale),
      b.getBoolAttr(ctx.attrInt("unidirectional", 0) != 0),
      b.getF32FloatAttr(0.0f), b.getBoolAttr(false), FloatAttr());
  FailureOr<Value> output = ctx.mergeHeads(op.getResult());
  if (failed(output))
    return failure();
  if (ctx.numOutputs() < 2)
    return ctx.setResults({*output});

  // present = stack(key, value) along a new leading axis.
  Value presentK = pastK ? op.getPresent()[0] : *k;
  Value presentV = pastK ? op.getPresent()[1] : *v;
  SmallVector<Value> parts;
  for (Value t : {presentK, presentV}) {
    FailureOr<Value> wide =
        ctx.create<dfg::UnsqueezeOp>(dfg::unsqueezeShape(shapeOf(t), {0}),
                                     element, t, b.getDenseI64ArrayAttr({0}));
    if (failed(wide))
      return failure();
    parts.push_back(*wide);
  }
  SmallVector<ArrayRef<int64_t>> shapes{shapeOf(parts[0]), shapeOf(parts[1])};
  FailureOr<Value> present = ctx.create<dfg::ConcatOp>(
      dfg::concatShape(shapes, 0), element, ValueRange(parts), 0);
  if (failed(present))
    return failure();
  return ctx.setResults({*output, *present});
}

} // namespace

void populatePackedAttentionLegalizations(LegalizationTable &table) {
  table.add("com.microsoft", "Attention", 1, legalizePackedAttention);
}

} // namespace meshc::onnximport
