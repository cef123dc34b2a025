//===- InferShapes.cpp - Refine dfg result types --------------------------===//
//
// Part of meshc.
//
// Algorithm:
//   1. Visit the ops of each function in program order (operands are refined
//      before their users).
//   2. For each dfg op with shape inference, infer its result types from the
//      current operand types; a failure is an invalid op and fails the pass.
//   3. Join each declared result type with the inferred one (a static
//      dimension on either side wins) and remember the values that changed.
//   4. Give non-dfg users of a changed value a tensor.cast back to the type
//      they were built against.
//   5. Update the function's result types from its returns, unless the
//      function is used elsewhere in the module; then cast the returned
//      values back to the declared types instead.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

namespace meshc {
#define GEN_PASS_DEF_INFERSHAPESPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

/// The more refined of two compatible ranked tensor types: per dimension,
/// a static size beats a dynamic one.
RankedTensorType joinTypes(RankedTensorType declared,
                           RankedTensorType inferred) {
  SmallVector<int64_t> shape(declared.getShape());
  for (auto [d, i] : llvm::zip_equal(shape, inferred.getShape()))
    if (ShapedType::isDynamic(d))
      d = i;
  return RankedTensorType::get(shape, declared.getElementType(),
                               declared.getEncoding());
}

bool isDfgOp(Operation *op) { return isa<dfg::DfgDialect>(op->getDialect()); }

class InferShapesPass : public impl::InferShapesPassBase<InferShapesPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(refine(func, module)))
        return signalPassFailure();
  }

private:
  LogicalResult refine(func::FuncOp func, ModuleOp module);
};

LogicalResult InferShapesPass::refine(func::FuncOp func, ModuleOp module) {
  // Steps 1-3.
  SmallVector<std::pair<Value, Type>> changed;
  WalkResult walk = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer || !isDfgOp(op))
      return WalkResult::advance();
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), inferred)))
      return WalkResult::interrupt();
    for (auto [result, type] : llvm::zip_equal(op->getResults(), inferred)) {
      auto declared = cast<RankedTensorType>(result.getType());
      auto joined = joinTypes(declared, cast<RankedTensorType>(type));
      if (joined == declared)
        continue;
      changed.emplace_back(result, declared);
      result.setType(joined);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Step 4.
  for (auto [value, oldType] : changed) {
    SmallVector<OpOperand *> foreign;
    for (OpOperand &use : value.getUses())
      if (!isDfgOp(use.getOwner()) && !isa<func::ReturnOp>(use.getOwner()))
        foreign.push_back(&use);
    if (foreign.empty())
      continue;
    OpBuilder b = OpBuilder::atBlockEnd(value.getParentBlock());
    b.setInsertionPointAfterValue(value);
    Value cast = tensor::CastOp::create(b, value.getLoc(), oldType, value);
    for (OpOperand *use : foreign)
      use->set(cast);
  }

  // Step 5.
  bool mayChangeSignature = SymbolTable::symbolKnownUseEmpty(func, module);
  FunctionType fnType = func.getFunctionType();
  SmallVector<Type> results(fnType.getResults());
  func.walk([&](func::ReturnOp ret) {
    for (OpOperand &operand : ret->getOpOperands()) {
      Type declared = fnType.getResult(operand.getOperandNumber());
      Type actual = operand.get().getType();
      if (actual == declared)
        continue;
      if (mayChangeSignature) {
        results[operand.getOperandNumber()] = actual;
        continue;
      }
      OpBuilder b(ret);
      operand.set(
          tensor::CastOp::create(b, ret.getLoc(), declared, operand.get()));
    }
  });
  func.setFunctionType(
      FunctionType::get(func.getContext(), fnType.getInputs(), results));
  return success();
}

} // namespace
} // namespace meshc
