//===- LegalizeContraction.cpp - MatMul and Gemm -> dfg -------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// MatMul(a, b) -> dfg.matmul(a, b)
LogicalResult legalizeMatMul(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType a = ctx.inputType(0), b = ctx.inputType(1);
  if (a.getElementType() != b.getElementType())
    return ctx.mismatchedTypes();
  return ctx.emit<dfg::MatMulOp>(dfg::matmulShape(a.getShape(), b.getShape()),
                                 a.getElementType(), ctx.input(0),
                                 ctx.input(1));
}

/// Gemm(A, B, C) = alpha * A' * B' + beta * C
///   -> add(mul(matmul(transpose?(A), transpose?(B)), alpha), mul(C, beta)),
/// with the multiplications by 1 left out.
LogicalResult legalizeGemm(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Type element = ctx.inputType(0).getElementType();
  if (ctx.inputType(0).getRank() != 2 || ctx.inputType(1).getRank() != 2)
    return ctx.error("Gemm operands A and B must be 2-D, got " +
                     dfg::formatShape(ctx.inputType(0).getShape()) + " and " +
                     dfg::formatShape(ctx.inputType(1).getShape()));

  auto transposed = [&](unsigned i, StringRef attr) -> FailureOr<Value> {
    if (!ctx.attrInt(attr, 0))
      return ctx.input(i);
    SmallVector<int64_t> perm{1, 0};
    return ctx.create<dfg::TransposeOp>(
        dfg::transposeShape(ctx.inputType(i).getShape(), perm), element,
        ctx.input(i), ctx.builder().getDenseI64ArrayAttr(perm));
  };
  FailureOr<Value> a = transposed(0, "transA");
  FailureOr<Value> b = transposed(1, "transB");
  if (failed(a) || failed(b))
    return failure();
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  FailureOr<Value> y = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(*a), shapeOf(*b)), element, *a, *b);
  if (failed(y))
    return failure();

  auto scaled = [&](Value v, float factor) -> FailureOr<Value> {
    if (factor == 1.0f)
      return v;
    return ctx.create<dfg::MulOp>(dfg::broadcastShapes(shapeOf(v), {}), element,
                                  v, ctx.scalar(factor, element));
  };
  y = scaled(*y, ctx.attrFloat("alpha", 1.0f));
  if (failed(y) || !ctx.input(2))
    return failed(y) ? failure() : ctx.setResults(*y);

  FailureOr<Value> c = scaled(ctx.input(2), ctx.attrFloat("beta", 1.0f));
  if (failed(c))
    return failure();
  // C broadcasts unidirectionally to M x N.
  auto sum = dfg::broadcastShapes(shapeOf(*y), shapeOf(*c));
  if (sum && *sum != dfg::Shape(shapeOf(*y)))
    return ctx.error("Gemm bias C " + dfg::formatShape(shapeOf(*c)) +
                     " does not broadcast to the product " +
                     dfg::formatShape(shapeOf(*y)));
  return ctx.emit<dfg::AddOp>(std::move(sum), element, *y, *c);
}

} // namespace

void populateContractionLegalizations(LegalizationTable &table) {
  table.add("", "MatMul", 13, legalizeMatMul);
  table.add("", "Gemm", 13, legalizeGemm);
}

} // namespace meshc::onnximport
