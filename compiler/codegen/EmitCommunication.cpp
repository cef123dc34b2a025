//===- EmitCommunication.cpp - C++ for collectives and their waits --------===//
//
// Part of meshc. Every shard op a rank program holds (all_reduce, all_gather,
// reduce_scatter, all_to_all, send, recv) becomes a call on the rank
// communicator; one that a dfg.wait completes is started there and waited
// for at the wait (its ticket).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitterImpl.h"

#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace meshc::codegen {

LogicalResult FunctionEmitter::emitCollective(Operation *op,
                                              llvm::raw_ostream &os) {
  ArrayRef<int16_t> axes = collectiveGridAxes(op);
  std::string what = cppString(
      (op->getName().getStringRef() + " #" + Twine(++collectiveCount_)).str());
  SmallVector<int64_t> axes64(axes.begin(), axes.end());
  auto group = [&]() {
    return "p.group(" + std::to_string(groups_.lookup(groupKey(axes))) + ")";
  };
  // "  p.comm().allReduceSum(", or, for a collective a dfg.wait completes,
  // "  const int t4 = p.comm().startAllReduceSum(" (the wait's ticket).
  auto call = [&](StringRef method) {
    dfg::WaitOp wait = waitOf(op);
    if (!wait)
      return ("  p.comm()." + method + "(").str();
    std::string ticket = "t" + std::to_string(next_++);
    tickets_[wait] = ticket;
    std::string start = method.str();
    start[0] = llvm::toUpper(start[0]);
    return "  const int " + ticket + " = p.comm().start" + start + "(";
  };
  if (auto send = dyn_cast<shard::SendOp>(op)) {
    std::string in = operand(send.getInput(), os);
    os << call("send") << "p.comm().peer(" << list(axes64) << ", "
       << list(send.getDestination()) << "), " << in << ", " << what << ");\n";
    declare(send.getResult(), os);
    return success();
  }
  if (auto recv = dyn_cast<shard::RecvOp>(op)) {
    std::optional<ArrayRef<int64_t>> source = recv.getSource();
    if (!source)
      return op->emitOpError("needs a static source for ") << theTarget();
    std::string o = declare(recv.getResult(), os);
    os << call("recv") << "p.comm().peer(" << list(axes64) << ", "
       << list(*source) << "), " << o << ", " << what << ");\n";
    return success();
  }
  std::string in = operand(op->getOperand(0), os);
  auto checkSum = [&](shard::ReductionKind kind) -> LogicalResult {
    if (kind != shard::ReductionKind::Sum)
      return op->emitOpError("reduction ")
             << shard::stringifyReductionKind(kind) << " is not supported by "
             << theTarget() << " (sum only)";
    return success();
  };
  if (auto ar = dyn_cast<shard::AllReduceOp>(op)) {
    // Sums, and the largest values (a reduce_max over a split axis).
    bool largest = ar.getReduction() == shard::ReductionKind::Max;
    if (!largest && failed(checkSum(ar.getReduction())))
      return failure();
    std::string o = declare(ar.getResult(), os);
    os << call(largest ? "allReduceMax" : "allReduceSum") << group() << ", "
       << in << ", " << o << ", " << what << ");\n";
    return success();
  }
  if (auto ag = dyn_cast<shard::AllGatherOp>(op)) {
    std::string o = declare(ag.getResult(), os);
    os << call("allGather") << group() << ", " << in << ", " << o << ", "
       << ag.getGatherAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  if (auto rs = dyn_cast<shard::ReduceScatterOp>(op)) {
    if (failed(checkSum(rs.getReduction())))
      return failure();
    std::string o = declare(rs.getResult(), os);
    os << call("reduceScatterSum") << group() << ", " << in << ", " << o << ", "
       << rs.getScatterAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  if (auto a2a = dyn_cast<shard::AllToAllOp>(op)) {
    std::string o = declare(a2a.getResult(), os);
    os << call("allToAll") << group() << ", " << in << ", " << o << ", "
       << a2a.getSplitAxis().getSExtValue() << ", "
       << a2a.getConcatAxis().getSExtValue() << ", " << what << ");\n";
    return success();
  }
  return op->emitOpError("is not supported by ")
         << theTarget()
         << " (rank programs hold only all_reduce, all_gather, reduce_scatter, "
            "all_to_all, send and recv)";
}

LogicalResult FunctionEmitter::emitWait(dfg::WaitOp wait,
                                        llvm::raw_ostream &os) {
  auto ticket = tickets_.find(wait);
  if (ticket == tickets_.end())
    return wait->emitOpError("waits for a collective that was not issued");
  os << "  p.comm().wait(" << ticket->second << ");\n";
  declare(wait.getResult(), os);
  return success();
}

} // namespace meshc::codegen
