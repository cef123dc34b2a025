//===- LegalizeNormalization.cpp - Normalisation ONNX ops -> dfg ----------===//
//
// Part of meshc. LayerNormalization-17, RMSNormalization-23, onnxruntime's
// SimplifiedLayerNormalization and the com.microsoft Skip* forms, and the
// Gelu family (Gelu-20, com.microsoft Gelu and FastGelu). The Skip* forms
// become norms with a fused residual.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Norm(X, Scale, B?) axis epsilon -> dfg.<norm>. The optional statistics
/// outputs (Mean, InvStdDev) are training aids; the importer rejects a graph
/// that reads them.
template <typename OpTy, bool hasBias>
LogicalResult legalizeNorm(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (!isa<FloatType>(in.getElementType()))
    return ctx.error("needs a floating-point input, got " +
                     dfg::formatShape(in.getShape()) + " of integers");
  if (ctx.attrInt("stash_type", 1) != 1)
    return ctx.error("stash_type other than FLOAT (1) is not supported");
  Value bias = hasBias ? ctx.input(2) : Value();
  float epsilon = ctx.attrFloat("epsilon", 1e-5f);
  Value result =
      OpTy::create(ctx.builder(), ctx.loc(), in, TypeRange{}, ctx.input(0),
                   ctx.input(1), bias, /*residual=*/Value(),
                   ctx.builder().getI64IntegerAttr(ctx.attrInt("axis", -1)),
                   ctx.builder().getF32FloatAttr(epsilon))
          .getResult();
  return ctx.setResults(result);
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
  table.add("", "LayerNormalization", 17,
            legalizeNorm<dfg::LayerNormOp, /*hasBias=*/true>);
  table.add("", "RMSNormalization", 23,
            legalizeNorm<dfg::RmsNormOp, /*hasBias=*/false>);
}

} // namespace meshc::onnximport
