//===- LegalizeElementwise.cpp - Elementwise ONNX ops -> dfg --------------===//
//
// Part of meshc. Add, Sub, Mul, Div (multidirectional broadcasting).
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Binary(a, b) -> dfg.<op>(a, b) with the broadcast result shape.
template <typename OpTy>
LogicalResult legalizeBroadcastBinary(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType lhs = ctx.inputType(0), rhs = ctx.inputType(1);
  if (lhs.getElementType() != rhs.getElementType())
    return ctx.mismatchedTypes();
  FailureOr<Value> result =
      ctx.create<OpTy>(dfg::broadcastShapes(lhs.getShape(), rhs.getShape()),
                       lhs.getElementType(), ctx.input(0), ctx.input(1));
  return failed(result) ? failure() : ctx.setResults(*result);
}

} // namespace

void populateElementwiseLegalizations(LegalizationTable &table) {
  // The opset-13 and opset-14 schemas differ only in the types they allow.
  table.add("", "Add", 13, legalizeBroadcastBinary<dfg::AddOp>);
  table.add("", "Sub", 13, legalizeBroadcastBinary<dfg::SubOp>);
  table.add("", "Mul", 13, legalizeBroadcastBinary<dfg::MulOp>);
  table.add("", "Div", 13, legalizeBroadcastBinary<dfg::DivOp>);
}

} // namespace meshc::onnximport
