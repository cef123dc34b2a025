//===- LegalizeNormalization.cpp - Normalisation ONNX ops -> dfg ----------===//
//
// Part of meshc. LayerNormalization-17 and RMSNormalization-23. (The
// decomposed forms exporters also write are raised to the same ops by the
// graph passes.)
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
  Value result = OpTy::create(
      ctx.builder(), ctx.loc(), in, ctx.input(0), ctx.input(1), bias,
      ctx.builder().getI64IntegerAttr(ctx.attrInt("axis", -1)),
      ctx.builder().getF32FloatAttr(epsilon));
  return ctx.setResults(result);
}

} // namespace

void populateNormalizationLegalizations(LegalizationTable &table) {
  table.add("", "LayerNormalization", 17,
            legalizeNorm<dfg::LayerNormOp, /*hasBias=*/true>);
  table.add("", "RMSNormalization", 23,
            legalizeNorm<dfg::RmsNormOp, /*hasBias=*/false>);
}

} // namespace meshc::onnximport
