//===- DfgFusedOps.cpp - Verifiers of dfg.fused_elementwise and dfg.wait --===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;

namespace meshc::dfg {

namespace {
bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor)
    return false;
  Type e = tensor.getElementType();
  return e.isF32() || e.isF16() || e.isBF16();
}
} // namespace

bool FusedElementwiseOp::isFusible(Operation *op) {
  auto elementwise = dyn_cast<ElementwiseOpInterface>(op);
  if (!elementwise)
    return false;
  SmallVector<std::string> names(op->getNumOperands(), "x");
  if (elementwise.getFusedExpression(names).empty())
    return false;
  return llvm::all_of(op->getOperandTypes(), isFloatTensor) &&
         llvm::all_of(op->getResultTypes(), isFloatTensor);
}

LogicalResult FusedElementwiseOp::verify() {
  if (getInputs().size() > kMaxInputs || getResults().size() > kMaxResults)
    return emitOpError("has ")
           << getInputs().size() << " inputs and " << getResults().size()
           << " results; at most " << kMaxInputs << " and " << kMaxResults;
  if (getResults().empty())
    return emitOpError("has no results");
  auto shapeType = cast<RankedTensorType>(getResult(0).getType());
  if (!shapeType.hasStaticShape())
    return emitOpError("needs a static result shape, got ") << shapeType;
  ArrayRef<int64_t> shape = shapeType.getShape();
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size()) // 1
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments for " << getInputs().size()
           << " inputs";
  for (auto [arg, input] : llvm::zip_equal(body.getArguments(), getInputs())) {
    if (arg.getType() != input.getType())
      return emitOpError("body argument #")
             << arg.getArgNumber() << " is " << arg.getType() << ", input is "
             << input.getType();
    auto in = cast<RankedTensorType>(input.getType());
    auto b = broadcastShapes(in.getShape(), shape); // 3
    if (!b || *b != Shape(shape)) {
      if (!b)
        llvm::consumeError(b.takeError());
      return emitOpError("input ")
             << in << " does not broadcast to the result shape";
    }
  }
  for (Operation &op : body.without_terminator()) {
    if (!isFusible(&op)) // 2
      return emitOpError("body holds ")
             << op.getName() << ", which is not a fusible elementwise op";
    for (Type t : op.getResultTypes())
      if (cast<RankedTensorType>(t).getShape() != shape) // 3
        return emitOpError("body computes ") << t << ", not the result shape";
  }
  Operation *terminator = body.getTerminator();
  if (!isa<YieldOp>(terminator) ||
      TypeRange(terminator->getOperandTypes()) != getResultTypes()) // 1
    return emitOpError("body must end in dfg.yield of the result types");
  for (Type t : getResultTypes())
    if (cast<RankedTensorType>(t).getShape() != shape) // 3
      return emitOpError("results differ in shape: ")
             << t << " and " << shapeType;
  return success();
}

bool WaitOp::isWaitable(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllToAllOp, shard::SendOp, shard::RecvOp>(op);
}

LogicalResult WaitOp::verify() {
  Operation *producer = getInput().getDefiningOp();
  if (!producer || !isWaitable(producer))
    return emitOpError("waits for a value that no collective produces (it "
                       "must be the result of shard.all_reduce, all_gather, "
                       "reduce_scatter, all_to_all, send or recv)");
  if (producer->getBlock() != (*this)->getBlock())
    return emitOpError("waits for a collective of another block");
  if (!getInput().hasOneUse())
    return emitOpError("waits for a collective whose result has other uses; "
                       "they must read the wait's result");
  return success();
}

} // namespace meshc::dfg
