//===- Folding.cpp - Constant folding with the reference evaluator --------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/Folding.h"

#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::dfg {

FailureOr<SmallVector<Value>>
foldWithEvaluator(Operation *op, StringRef weightsDir, OpBuilder &builder) {
  constexpr int64_t kMaxFolded = ConstantOp::kMaxConstantElements;
  auto foldable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    auto type = cast<RankedTensorType>(v.getType());
    if (isa_and_nonnull<ConstantOp>(def))
      return true;
    return isa_and_nonnull<WeightOp>(def) && !weightsDir.empty() &&
           !isa<FloatType>(type.getElementType()) &&
           type.getNumElements() <= kMaxFolded;
  };
  SmallVector<Value> constants;
  // Ops on symbolic dimensions (DfgSymbolicOps.td) depend on sizes known
  // only at run time.
  if (isa<ConstantOp, WeightOp, SizesOp, SymbolicReshapeOp, SymbolicExpandOp,
          SymbolicSliceOp, RangeOp>(op) ||
      op->getNumOperands() == 0 || !isa<DfgDialect>(op->getDialect()) ||
      !llvm::all_of(op->getOperands(), foldable) ||
      !llvm::all_of(op->getResultTypes(), [&](Type t) {
        auto type = dyn_cast<RankedTensorType>(t);
        return type && type.hasStaticShape() &&
               type.getNumElements() <= kMaxFolded;
      }))
    return constants;
  SmallVector<EvalTensor> operands;
  for (Value v : op->getOperands()) {
    auto value = evaluateOp(v.getDefiningOp(), {}, weightsDir);
    if (failed(value))
      return failure();
    operands.push_back(std::move(value->front()));
  }
  // The evaluator computes in doubles: integers beyond 2^53 would come back
  // wrong, so such ops are left to run time.
  auto exact = [](const EvalTensor &t) { return t.isExact(); };
  if (!llvm::all_of(operands, exact))
    return constants;
  auto folded = evaluateOp(op, operands, weightsDir);
  if (failed(folded))
    return failure();
  if (!llvm::all_of(*folded, exact))
    return constants;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  for (const EvalTensor &tensor : *folded)
    constants.push_back(
        ConstantOp::create(builder, op->getLoc(), toDenseAttr(tensor)));
  return constants;
}

} // namespace meshc::dfg
