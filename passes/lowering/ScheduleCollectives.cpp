//===- ScheduleCollectives.cpp - Issue collectives early, wait late ------===//
//
// Part of meshc.
//
// Algorithm, for each function's body, in program order:
//   1. Issue early. Each collective (dfg::WaitOp::isWaitable) moves up to
//      just after the last of: the producers of its operands in the body,
//      and the previous *ordered* op. Ordered ops are the collectives and
//      every op with side effects other than a dfg.wait (a call to a stage
//      function, which holds collectives). So collectives keep their order,
//      and every rank still starts them in the SPMD program's order: the
//      cuda target runs them on one stream in exactly that order, which is
//      why none may overtake another.
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

/// Collectives and ops with side effects keep their relative order.
bool isOrdered(Operation *op) {
  if (isa<WaitOp>(op))
    return false;
  return WaitOp::isWaitable(op) || !isMemoryEffectFree(op);
}

/// Step 1: moves each scheduled collective up to its earliest place.
void issueEarly(Block &body) {
  Operation *lastOrdered = nullptr; // nullptr: the start of the body
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (!isOrdered(&op))
      continue;
    if (isScheduled(&op)) {
      Operation *after = lastOrdered;
      for (Value v : op.getOperands()) {
        Operation *producer = v.getDefiningOp();
        if (producer && producer->getBlock() == &body &&
            (!after || after->isBeforeInBlock(producer)))
          after = producer;
      }
      if (after)
        op.moveAfter(after);
      else
        op.moveBefore(&body, body.begin());
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
    getOperation().walk([&](func::FuncOp func) {
      if (func.isDeclaration())
        return;
      Block &body = func.getBody().front();
      issueEarly(body);
      waitLate(body);
    });
  }
};

} // namespace
} // namespace meshc
