//===- LegalizeNormalization.cpp - Normalisation ONNX ops -> dfg ----------===//
//
// Part of meshc. LayerNormalization-17, RMSNormalization-23,
// InstanceNormalization (a layer norm over the spatial axes), onnxruntime's
// SimplifiedLayerNormalization and the com.microsoft Skip* forms, and the
// Gelu family (Gelu-20, com.microsoft Gelu and FastGelu). The Skip* forms
// become norms with a fused residual; EmbedLayerNormalization the embedding
// lookups, their sum and a layer norm.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// `x` times `scale`, plus `bias` (either may be null), both broadcast
/// against `x`.
FailureOr<Value> scaleAndShift(NodeContext &ctx, Value x, Value scale,
                               Value bias) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  for (auto [p, isScale] : {std::pair(scale, true), std::pair(bias, false)}) {
    if (!p)
      continue;
    ArrayRef<int64_t> left = cast<RankedTensorType>(x.getType()).getShape();
    ArrayRef<int64_t> right = cast<RankedTensorType>(p.getType()).getShape();
    FailureOr<Value> next =
        isScale ? ctx.create<dfg::MulOp>(dfg::broadcastShapes(left, right),
                                         element, x, p)
                : ctx.create<dfg::AddOp>(dfg::broadcastShapes(left, right),
                                         element, x, p);
    if (failed(next))
      return failure();
    x = *next;
  }
  return x;
}

/// Norm(X, Scale, B?) axis epsilon -> dfg.<norm>. The optional statistics
/// outputs (Mean, InvStdDev) are training aids; the importer rejects a graph
/// that reads them.
/// The type of input 0, which must be of floats, once inputs [0, n) are
/// present; an error otherwise.
FailureOr<RankedTensorType> floatInput(NodeContext &ctx, unsigned n) {
  if (failed(ctx.requireInputs(n)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (!isa<FloatType>(in.getElementType()))
    return ctx.error("needs a floating-point input, got " +
                     dfg::formatShape(in.getShape()) + " of integers");
  return in;
}

template <typename OpTy, bool hasBias>
LogicalResult legalizeNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> floats = floatInput(ctx, 2);
  if (failed(floats))
    return failure();
  RankedTensorType in = *floats;
  if (ctx.attrInt("stash_type", 1) != 1)
    return ctx.error("stash_type other than FLOAT (1) is not supported");
  Value scale = ctx.input(1), bias = hasBias ? ctx.input(2) : Value();
  float epsilon = ctx.attrFloat("epsilon", 1e-5f);
  int64_t axis = ctx.attrInt("axis", -1);
  int64_t rank = in.getRank();
  int64_t normalized = axis < 0 ? -axis : rank - axis;
  // A scale or bias wider than the normalised dimensions (torch.onnx's
  // RMSNormalization-23 of a norm without weights, whose scale is ones of
  // the input's whole shape) broadcasts against the normalised input
  // instead: a norm by 1, then the product and the sum.
  auto wider = [&](Value p) {
    return p && cast<RankedTensorType>(p.getType()).getRank() > normalized;
  };
  bool apart = wider(scale) || wider(bias);
  Value result =
      OpTy::create(ctx.builder(), ctx.loc(), in, TypeRange{}, ctx.input(0),
                   apart ? ctx.scalar(1.0, in.getElementType()) : scale,
                   apart ? Value() : bias, /*residual=*/Value(),
                   ctx.builder().getI64IntegerAttr(axis),
                   ctx.builder().getF32FloatAttr(epsilon))
          .getResult();
  if (apart) {
    FailureOr<Value> scaled = scaleAndShift(ctx, result, scale, bias);
    if (failed(scaled))
      return failure();
    result = *scaled;
  }
  return ctx.setResults(result);
}

/// InstanceNormalization(x [batch, channels, spatial...], scale [C], B [C])
/// -> a layer norm over the spatial axes (each channel of each batch row
/// normalised over its positions: wav2vec2's GroupNorm of one channel per
/// group, as both torch exporters write it), by 1, then the product by the
/// scale and the sum with the bias per channel.
LogicalResult legalizeInstanceNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> floats = floatInput(ctx, 3);
  if (failed(floats))
    return failure();
  RankedTensorType in = *floats;
  Type element = in.getElementType();
  int64_t rank = in.getRank();
  int64_t channels = rank >= 3 ? in.getDimSize(1) : ShapedType::kDynamic;
  for (unsigned i : {1u, 2u}) {
    RankedTensorType p = ctx.inputType(i);
    if (rank < 3 || p.getRank() != 1 || p.getDimSize(0) != channels)
      return ctx.error("InstanceNormalization needs an input [batch, "
                       "channels, spatial...] and a scale and bias of one "
                       "value per channel, got " +
                       dfg::formatShape(in.getShape()) + " and " +
                       dfg::formatShape(p.getShape()));
  }
  OpBuilder &b = ctx.builder();
  Value result =
      dfg::LayerNormOp::create(b, ctx.loc(), in, TypeRange{}, ctx.input(0),
                               ctx.scalar(1.0, element), Value(),
                               /*residual=*/Value(), b.getI64IntegerAttr(2),
                               b.getF32FloatAttr(ctx.attrFloat("epsilon",
                                                               1e-5f)))
          .getResult();
  // The scale and bias as [C, 1, ...] columns, one value per channel.
  SmallVector<int64_t> column(rank - 1, 1);
  column[0] = channels;
  auto perChannel = [&](unsigned i) {
    return ctx.create<dfg::ReshapeOp>(
        dfg::reshapeShape(ctx.inputType(i).getShape(), column), element,
        ctx.input(i), b.getDenseI64ArrayAttr(column));
  };
  FailureOr<Value> scale = perChannel(1), bias = perChannel(2);
  if (failed(scale) || failed(bias))
    return failure();
  FailureOr<Value> out = scaleAndShift(ctx, result, *scale, *bias);
  if (failed(out))
    return failure();
  return ctx.setResults(*out);
}

/// BatchNormalization(x [batch, channels, spatial...], scale, B, mean, var)
/// -> x · a + (B - mean · a) per channel, a = scale / sqrt(var + epsilon):
/// inference with the running statistics (a CNN's eval mode: ResNet,
/// MobileNet, EfficientNet, as the exporters write it unfused). With
/// training_mode (BiT's weight standardisation, a batch norm of its
/// weights in training mode) the mean and the (population) variance are
/// the input's over every axis but the channels', and the running
/// statistics it may also return are input · momentum + current · (1 -
/// momentum), as ONNX defines them.
LogicalResult legalizeBatchNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> floats = floatInput(ctx, 5);
  if (failed(floats))
    return failure();
  RankedTensorType in = *floats;
  Type element = in.getElementType();
  int64_t rank = in.getRank();
  int64_t channels = rank >= 2 ? in.getDimSize(1) : ShapedType::kDynamic;
  for (unsigned i = 1; i < 5; ++i) {
    RankedTensorType p = ctx.inputType(i);
    if (rank < 2 || p.getRank() != 1 || p.getDimSize(0) != channels ||
        p.getElementType() != element)
      return ctx.error("BatchNormalization needs an input [batch, channels, "
                       "...] and a scale, bias, mean and variance of one "
                       "value per channel of its type, got " +
                       dfg::formatShape(in.getShape()) + " and " +
                       dfg::formatShape(p.getShape()));
  }
  bool training = ctx.attrInt("training_mode", 0) != 0;
  if (!training && ctx.numOutputs() > 1)
    return ctx.error("BatchNormalization's running statistics are outputs "
                     "in training mode only");
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  float epsilon = ctx.attrFloat("epsilon", 1e-5f);
  // [C] -> [C, 1, ...]: one value per channel against [batch, C, ...].
  SmallVector<int64_t> column(rank - 1, 1);
  column[0] = channels;
  auto asColumn = [&](Value v) {
    return ctx.create<dfg::ReshapeOp>(
        dfg::reshapeShape(cast<RankedTensorType>(v.getType()).getShape(),
                          column),
        element, v, b.getDenseI64ArrayAttr(column));
  };
  auto vector = RankedTensorType::get({channels}, element);
  Value x = ctx.input(0), mean = ctx.input(3), var = ctx.input(4);
  SmallVector<Value> results;
  if (training) {
    // The statistics of x over every axis but 1, kept as [1, C, 1, ...].
    SmallVector<int64_t> axes = {0};
    for (int64_t a = 2; a < rank; ++a)
      axes.push_back(a);
    auto kept = RankedTensorType::get(dfg::reduceShape(in.getShape(), axes,
                                                       /*keepDims=*/true),
                                      element);
    Value m = dfg::ReduceMeanOp::create(b, loc, kept, x,
                                        b.getDenseI64ArrayAttr(axes), true);
    Value centred = dfg::SubOp::create(b, loc, in, x, m);
    Value square = dfg::MulOp::create(b, loc, in, centred, centred);
    Value v = dfg::ReduceMeanOp::create(b, loc, kept, square,
                                        b.getDenseI64ArrayAttr(axes), true);
    Value denom = dfg::SqrtOp::create(
        b, loc, kept,
        dfg::AddOp::create(b, loc, kept, v, ctx.scalar(epsilon, element)));
    FailureOr<Value> scale = asColumn(ctx.input(1)),
                     bias = asColumn(ctx.input(2));
    if (failed(scale) || failed(bias))
      return failure();
    Value normed = dfg::DivOp::create(b, loc, in, centred, denom);
    FailureOr<Value> y = scaleAndShift(ctx, normed, *scale, *bias);
    if (failed(y))
      return failure();
    results.push_back(*y);
    if (ctx.numOutputs() > 1) {
      // running = input · momentum + current · (1 - momentum).
      double momentum = ctx.attrFloat("momentum", 0.9f);
      auto flat = [&](Value stat) {
        return ctx.create<dfg::ReshapeOp>(
            dfg::reshapeShape(kept.getShape(), {channels}), element, stat,
            b.getDenseI64ArrayAttr({channels}));
      };
      for (auto [running, current] : {std::pair(mean, m), std::pair(var, v)}) {
        FailureOr<Value> c = flat(current);
        if (failed(c))
          return failure();
        Value blended = dfg::AddOp::create(
            b, loc, vector,
            dfg::MulOp::create(b, loc, vector, running,
                               ctx.scalar(momentum, element)),
            dfg::MulOp::create(b, loc, vector, *c,
                               ctx.scalar(1.0 - momentum, element)));
        results.push_back(blended);
      }
      results.resize(std::min<size_t>(results.size(), ctx.numOutputs()));
    }
    return ctx.setResults(results);
  }
  // a = scale / sqrt(var + eps); shift = B - mean · a.
  Value a = dfg::DivOp::create(
      b, loc, vector, ctx.input(1),
      dfg::SqrtOp::create(
          b, loc, vector,
          dfg::AddOp::create(b, loc, vector, var,
                             ctx.scalar(epsilon, element))));
  Value shift = dfg::SubOp::create(b, loc, vector, ctx.input(2),
                                   dfg::MulOp::create(b, loc, vector, mean, a));
  FailureOr<Value> scale = asColumn(a), bias = asColumn(shift);
  if (failed(scale) || failed(bias))
    return failure();
  FailureOr<Value> y = scaleAndShift(ctx, x, *scale, *bias);
  if (failed(y))
    return failure();
  return ctx.setResults(*y);
}

/// Skip[Simplified]LayerNormalization(x, skip, gamma, [beta,] bias?)
///   -> out, s = norm(x + r) with the fused residual r = skip (+ bias), over
///   the last axis. Output #3 (input_skip_bias_sum) is the sum `s`; #1 and
///   #2 (statistics) are not produced.
template <typename OpTy, bool hasBeta>
LogicalResult legalizeSkipNorm(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Value residual = ctx.input(1);
  if (Value bias = ctx.input(hasBeta ? 4 : 3)) {
    FailureOr<Value> sum = ctx.create<dfg::AddOp>(
        dfg::broadcastShapes(ctx.inputType(1).getShape(),
                             cast<RankedTensorType>(bias.getType()).getShape()),
        in.getElementType(), residual, bias);
    if (failed(sum))
      return failure();
    residual = *sum;
  }
  Value input = ctx.input(0), beta = hasBeta ? ctx.input(3) : Value();
  auto epsilon = ctx.builder().getF32FloatAttr(ctx.attrFloat("epsilon", 1e-5f));
  auto axis = ctx.builder().getI64IntegerAttr(-1);
  if (cast<RankedTensorType>(residual.getType()).getShape() == in.getShape()) {
    auto norm = OpTy::create(ctx.builder(), ctx.loc(), in, TypeRange{in}, input,
                             ctx.input(2), beta, residual, axis, epsilon);
    return ctx.setResults(
        {norm.getResult(), Value(), Value(), norm.getSum().front()});
  }
  // A skip of shape [seq, hidden] (or [1, seq, hidden]) broadcasts over the
  // batch: the sum is an explicit add, which must keep the input's shape.
  FailureOr<Value> sum = ctx.create<dfg::AddOp>(
      dfg::broadcastShapes(
          in.getShape(), cast<RankedTensorType>(residual.getType()).getShape()),
      in.getElementType(), input, residual);
  if (failed(sum))
    return failure();
  if (cast<RankedTensorType>(sum->getType()).getShape() != in.getShape())
    return ctx.error("skip " + dfg::formatShape(ctx.inputType(1).getShape()) +
                     " changes the shape of the input " +
                     dfg::formatShape(in.getShape()));
  Value out = OpTy::create(ctx.builder(), ctx.loc(), in, TypeRange{}, *sum,
                           ctx.input(2), beta, Value(), axis, epsilon)
                  .getResult();
  return ctx.setResults({out, Value(), Value(), *sum});
}

/// Gelu(x) -> dfg.gelu(x); `approximate` says exact or tanh (Gelu-20).
LogicalResult legalizeGelu(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  std::string approximate = ctx.attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return ctx.error("unknown approximate = '" + approximate +
                     "' (expected 'none' or 'tanh')");
  Value result = dfg::GeluOp::create(ctx.builder(), ctx.loc(), ctx.inputType(0),
                                     ctx.input(0), approximate == "none");
  return ctx.setResults(result);
}

/// com.microsoft FastGelu(x, bias?) -> dfg.gelu(x + bias) exact = false
/// com.microsoft BiasGelu(x, bias)  -> dfg.gelu(x + bias) exact = true
///   (onnxruntime's transformer optimizer fuses BERT's bias and erf GELU)
template <bool Exact> LogicalResult legalizeBiasedGelu(NodeContext &ctx) {
  if (failed(ctx.requireInputs(Exact ? 2 : 1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Value x = ctx.input(0);
  if (ctx.input(1)) {
    FailureOr<Value> biased = ctx.create<dfg::AddOp>(
        dfg::broadcastShapes(in.getShape(), ctx.inputType(1).getShape()),
        in.getElementType(), x, ctx.input(1));
    if (failed(biased))
      return failure();
    x = *biased;
  }
  Value result = dfg::GeluOp::create(
      ctx.builder(), ctx.loc(), cast<RankedTensorType>(x.getType()), x, Exact);
  return ctx.setResults(result);
}

/// com.microsoft EmbedLayerNormalization(input_ids, segment_ids?, word,
///   position, segment?, gamma, beta, mask?, position_ids?)
///   -> out = layer_norm(word[ids] + position[pos] (+ segment[seg])),
///      mask_index[b] = the number of ones in mask[b] (0 without a mask),
///      embedding_sum = the sum before the norm;
///   pos = position_ids, or 0 .. seq-1 without them (onnxruntime's fusion of
///   BERT's embeddings).
LogicalResult legalizeEmbedLayerNorm(NodeContext &ctx) {
  for (unsigned i : {0u, 2u, 3u, 5u, 6u})
    if (!ctx.input(i))
      return ctx.error("input #" + std::to_string(i) +
                       " (input_ids, word_embedding, position_embedding, "
                       "gamma, beta) is missing");
  OpBuilder &b = ctx.builder();
  RankedTensorType ids = ctx.inputType(0), words = ctx.inputType(2);
  if (ids.getRank() != 2 || words.getRank() != 2)
    return ctx.error("needs input_ids [batch, seq] and a word_embedding "
                     "[vocab, hidden], got " +
                     dfg::formatShape(ids.getShape()) + " and " +
                     dfg::formatShape(words.getShape()));
  Type element = words.getElementType();
  auto lookup = [&](Value table, Value indices) {
    return ctx.create<dfg::GatherOp>(
        dfg::gatherShape(shapeOf(table), shapeOf(indices), 0), element, table,
        indices, 0);
  };
  auto add = [&](Value l, Value r) {
    return binary<dfg::AddOp>(ctx, l, r, element);
  };
  FailureOr<Value> sum = lookup(ctx.input(2), ctx.input(0));
  if (failed(sum))
    return failure();
  Value positions = ctx.input(8);
  if (!positions) {
    AffineExpr seq = ctx.inputDims(0)[1];
    if (!seq)
      return ctx.error("the sequence length of input_ids follows from no "
                       "named input dimension; give it a size with --dim");
    FailureOr<Value> range = ctx.iota(seq, {-1});
    if (failed(range))
      return failure();
    positions = *range;
  }
  FailureOr<Value> position = lookup(ctx.input(3), positions);
  if (failed(position) || failed(sum = add(*sum, *position)))
    return failure();
  if (ctx.input(1) && ctx.input(4)) {
    FailureOr<Value> segment = lookup(ctx.input(4), ctx.input(1));
    if (failed(segment) || failed(sum = add(*sum, *segment)))
      return failure();
  }
  if (shapeOf(*sum).size() != 3)
    return ctx.error("the embeddings sum to " +
                     dfg::formatShape(shapeOf(*sum)) +
                     ", not [batch, seq, hidden]");
  Value out = dfg::LayerNormOp::create(
                  b, ctx.loc(), cast<RankedTensorType>(sum->getType()),
                  TypeRange{}, *sum, ctx.input(5), ctx.input(6),
                  /*residual=*/Value(), b.getI64IntegerAttr(-1),
                  b.getF32FloatAttr(ctx.attrFloat("epsilon", 1e-12f)))
                  .getResult();
  // mask_index: the ones of each row of the mask, counted; without a mask a
  // zero per row (ids < ids is false everywhere).
  Type i32 = b.getI32Type();
  Value mask = ctx.input(7);
  FailureOr<Value> ones =
      mask
          ? binary<dfg::EqualOp>(ctx, mask, ctx.scalar(1, elementOf(mask)),
                                 b.getI1Type())
          : binary<dfg::LessOp>(ctx, ctx.input(0), ctx.input(0), b.getI1Type());
  if (failed(ones))
    return failure();
  auto counted = dfg::CastOp::create(
      b, ctx.loc(), RankedTensorType::get(shapeOf(*ones), i32), *ones, i32);
  Value maskIndex = dfg::ReduceSumOp::create(
      b, ctx.loc(),
      RankedTensorType::get(dfg::reduceShape(shapeOf(counted), {1}, false),
                            i32),
      counted, b.getDenseI64ArrayAttr({1}), false);
  return ctx.setResults({out, maskIndex, *sum});
}

} // namespace

void populateNormalizationLegalizations(LegalizationTable &table) {
  // onnxruntime registers SimplifiedLayerNormalization in the default domain.
  table.add("", "SimplifiedLayerNormalization", 1,
            legalizeNorm<dfg::RmsNormOp, /*hasBias=*/false>);
  table.add("com.microsoft", "SimplifiedLayerNormalization", 1,
            legalizeNorm<dfg::RmsNormOp, /*hasBias=*/false>);
  table.add("com.microsoft", "SkipLayerNormalization", 1,
            legalizeSkipNorm<dfg::LayerNormOp, /*hasBeta=*/true>);
  table.add("com.microsoft", "SkipSimplifiedLayerNormalization", 1,
            legalizeSkipNorm<dfg::RmsNormOp, /*hasBeta=*/false>);
  table.add("", "Gelu", 20, legalizeGelu);
  table.add("com.microsoft", "Gelu", 1, legalizeGelu);
  table.add("com.microsoft", "FastGelu", 1, legalizeBiasedGelu<false>);
  table.add("com.microsoft", "BiasGelu", 1, legalizeBiasedGelu<true>);
  table.add("com.microsoft", "EmbedLayerNormalization", 1,
            legalizeEmbedLayerNorm);
  table.add("", "LayerNormalization", 17,
            legalizeNorm<dfg::LayerNormOp, /*hasBias=*/true>);
  table.add("", "BatchNormalization", 9, legalizeBatchNorm);
  table.add("", "BatchNormalization", 14, legalizeBatchNorm); // training_mode
  table.add("", "BatchNormalization", 15, legalizeBatchNorm); // + types
  table.add("", "InstanceNormalization", 6, legalizeInstanceNorm);
  table.add("", "InstanceNormalization", 22, legalizeInstanceNorm); // + bf16
  table.add("", "RMSNormalization", 23,
            legalizeNorm<dfg::RmsNormOp, /*hasBias=*/false>);
}

} // namespace meshc::onnximport
