//===- ScheduleCollectives.cpp - Issue collectives early, wait late ------===//
//
// Part of meshc.
//
// Algorithm, for each function's body, in program order:
//   1. Issue early. Each collective (dfg::WaitOp::isWaitable) moves up to
//      just after the last of: the producers of its operands in the body,
//      and the previous *ordered* op (a receive takes along its buffer, the
//      op that makes the tensor it fills, when nothing else uses it). Ordered
//      ops are the collectives, the calls of functions that hold collectives
//      (pipeline stages under tp), and every other op with side effects except
//      a dfg.wait. So collectives keep their order, and every rank still starts
//      them in the SPMD program's order: the cuda target runs them on one
//      stream in exactly that order, which is why none may overtake another. A
//      call of a stage without collectives (pp alone) is overtaken: the last
//      stage receives the next microbatch while it computes this one.
//   2. Wait late. Each collective gets one dfg.wait, right before the first
//      op that reads its result; the readers read the wait's result. A send
//      (nothing reads its result) waits before the terminator, so that its
//      operand's buffer is not reused while the send may still read it.
//
// Left as they are (the emitter runs them blocking): a send whose result is
// read (the send -> recv pairs of an SPMD program, before meshc-specialize-
// rank), a recv of a send's result, and collectives already waited for.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace meshc {
#define GEN_PASS_DEF_SCHEDULECOLLECTIVESPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

using dfg::WaitOp;

/// Whether `op` is a collective this pass schedules.
bool isScheduled(Operation *op) {
  if (!WaitOp::isWaitable(op))
    return false;
  if (auto send = dyn_cast<shard::SendOp>(op))
    return send.getResult().use_empty();
  if (auto recv = dyn_cast<shard::RecvOp>(op))
    if (recv.getInput().getDefiningOp<shard::SendOp>())
      return false;
  Value result = op->getResult(0);
  return !(result.hasOneUse() && isa<WaitOp>(*result.getUsers().begin()));
}

/// Which calls keep their place among the collectives: those whose callee
/// starts a collective, itself or through a call, or is unknown. Memoized
/// per callee (a pipeline's @main calls each stage once per microbatch); a
/// recursive callee counts as starting one.
class OrderedCalls {
public:
  bool isOrdered(func::CallOp call) {
    auto callee = symbols_.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    return !callee || holdsCollectives(callee);
  }

private:
  bool holdsCollectives(func::FuncOp fn) {
    if (auto it = memo_.find(fn); it != memo_.end())
      return it->second;
    memo_[fn] = true; // while `fn` is walked
    bool holds = fn.isDeclaration() ||
                 fn.walk([&](Operation *op) {
                     auto call = dyn_cast<func::CallOp>(op);
                     return WaitOp::isWaitable(op) || (call && isOrdered(call))
                                ? WalkResult::interrupt()
                                : WalkResult::advance();
                   }).wasInterrupted();
    memo_[fn] = holds;
    return holds;
  }

  SymbolTableCollection symbols_;
  llvm::DenseMap<Operation *, bool> memo_;
};

/// Collectives, calls that start collectives and ops with other side effects
/// keep their relative order.
bool isOrdered(Operation *op, OrderedCalls &calls) {
  if (isa<WaitOp>(op))
    return false;
  if (WaitOp::isWaitable(op))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op))
    return calls.isOrdered(call);
  return !isMemoryEffectFree(op);
}

/// The last of `after` and the producers in `body` of `op`'s operands.
Operation *lastProducer(Operation *op, Operation *after, Block &body) {
  for (Value v : op->getOperands()) {
    Operation *producer = v.getDefiningOp();
    if (producer && producer->getBlock() == &body &&
        (!after || after->isBeforeInBlock(producer)))
      after = producer;
  }
  return after;
}

/// Moves `op` just after `after` (nullptr: to the start of `body`).
void placeAfter(Operation *op, Operation *after, Block &body) {
  if (after)
    op->moveAfter(after);
  else
    op->moveBefore(&body, body.begin());
}

/// Step 1: moves each scheduled collective up to its earliest place. A
/// receive takes its buffer (an op of its own, used by it alone) along.
void issueEarly(Block &body, OrderedCalls &calls) {
  Operation *lastOrdered = nullptr; // nullptr: the start of the body
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (!isOrdered(&op, calls))
      continue;
    if (isScheduled(&op)) {
      Operation *buffer = nullptr;
      if (auto recv = dyn_cast<shard::RecvOp>(op)) {
        buffer = recv.getInput().getDefiningOp();
        if (!buffer || buffer->getBlock() != &body ||
            !recv.getInput().hasOneUse() || !isMemoryEffectFree(buffer))
          buffer = nullptr;
      }
      if (buffer) {
        placeAfter(buffer, lastProducer(buffer, lastOrdered, body), body);
        op.moveAfter(buffer);
      } else {
        placeAfter(&op, lastProducer(&op, lastOrdered, body), body);
      }
    }
    lastOrdered = &op;
  }
}

/// Step 2: one dfg.wait per scheduled collective, before its first reader.
void waitLate(Block &body) {
  SmallVector<Operation *> collectives;
  for (Operation &op : body)
    if (isScheduled(&op))
      collectives.push_back(&op);
  for (Operation *op : collectives) {
    Value result = op->getResult(0);
    Operation *first = body.getTerminator();
    for (Operation *user : result.getUsers()) {
      Operation *reader = body.findAncestorOpInBlock(*user);
      if (reader && reader->isBeforeInBlock(first))
        first = reader;
    }
    OpBuilder b(first);
    auto wait = WaitOp::create(b, op->getLoc(), result);
    result.replaceAllUsesExcept(wait.getResult(), wait);
  }
}

struct ScheduleCollectivesPass
    : impl::ScheduleCollectivesPassBase<ScheduleCollectivesPass> {
  using ScheduleCollectivesPassBase::ScheduleCollectivesPassBase;

  void runOnOperation() override {
    OrderedCalls calls;
    getOperation().walk([&](func::FuncOp func) {
      if (func.isDeclaration())
        return;
      Block &body = func.getBody().front();
      issueEarly(body, calls);
      waitLate(body);
    });
  }
};

} // namespace
} // namespace meshc
