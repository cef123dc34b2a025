//===- VerifyPartition.cpp - Check an SPMD program before it splits -------===//
//
// Part of meshc.
//
// Every rank runs the same SPMD program, so the ranks agree on shapes and on
// the sequence of collectives exactly when the program itself is consistent.
// Checks, in this order:
//   1. The module has one shard.grid, and no planning annotations remain on
//      ops (the program is partitioned).
//   2. Collectives sit directly in a function body (no rank may skip one
//      inside a region) and name the grid, with distinct axes of size > 1.
//   3. Each collective's shapes match its group: all_gather multiplies the
//      gathered dimension by the group size, all_slice and reduce_scatter
//      divide it (evenly), all_reduce keeps the shape.
//   4. Every dfg op's result types are those its local operands infer.
//   5. Argument and result shardings use valid, distinct axes.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace meshc {
#define GEN_PASS_DEF_SHARDVERIFYPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

LogicalResult verifyAxes(Operation *op, shard::GridOp grid,
                         ArrayRef<int16_t> axes, StringRef what) {
  int64_t rank = grid.getShape().size();
  for (auto [i, a] : llvm::enumerate(axes)) {
    if (a < 0 || a >= rank)
      return op->emitOpError(what)
             << " names grid axis " << a << ", but the grid has " << rank;
    if (llvm::is_contained(axes.take_front(i), a))
      return op->emitOpError(what) << " names grid axis " << a << " twice";
    if (grid.getShape()[a] <= 1)
      return op->emitOpError(what)
             << " names grid axis " << a << " (" << axisName(grid, a)
             << "), whose size is " << grid.getShape()[a];
  }
  return success();
}

/// `resized` dimension `dim` of `out` is `in`'s times `num` / `den`; every
/// other dimension is equal.
LogicalResult verifyResize(Operation *op, Value in, Value out, int64_t dim,
                           int64_t num, int64_t den) {
  auto a = cast<RankedTensorType>(in.getType());
  auto b = cast<RankedTensorType>(out.getType());
  if (a.getRank() != b.getRank() || dim < 0 || dim >= a.getRank())
    return op->emitOpError("axis ") << dim << " is out of range for " << a;
  for (int64_t d = 0; d < a.getRank(); ++d) {
    int64_t x = a.getDimSize(d), y = b.getDimSize(d);
    if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y))
      continue;
    if (d == dim ? (x * num % den != 0 || x * num / den != y) : x != y)
      return op->emitOpError("maps ")
             << a << " to " << b << ", but its group of " << std::max(num, den)
             << " ranks gives dimension " << dim << " = " << x << " * " << num
             << " / " << den;
  }
  return success();
}

std::optional<int64_t> stageOf(Operation *op) {
  if (auto attr = op->getAttrOfType<IntegerAttr>(kStageAttr))
    return attr.getInt();
  return std::nullopt;
}

/// A send and its receive: one pp peer each, on their stages; the receive
/// takes the send's result (what arrives is what was sent).
LogicalResult verifyTransfer(Operation *op, shard::GridOp grid) {
  std::optional<shard::GridAxis> pp = findAxis(grid, "pp");
  auto send = dyn_cast<shard::SendOp>(op);
  auto recv = dyn_cast<shard::RecvOp>(op);
  StringRef gridName = send ? send.getGrid() : recv.getGrid();
  ArrayRef<int16_t> axes = collectiveGridAxes(op);
  if (!pp || gridName != grid.getSymName() || axes != ArrayRef<int16_t>{*pp})
    return op->emitOpError("must run over the pp axis of @")
           << grid.getSymName();
  std::optional<int64_t> stage = stageOf(op);
  if (!stage || *stage < 0 || *stage >= grid.getShape()[*pp])
    return op->emitOpError("has no pipeline stage (meshc.stage) of the grid");
  if (send) {
    if (send.getDestination().size() != 1 ||
        send.getDestination()[0] == *stage || send.getDestination()[0] < 0 ||
        send.getDestination()[0] >= grid.getShape()[*pp])
      return op->emitOpError("sends from stage ")
             << *stage << " to no other stage of pp=" << grid.getShape()[*pp];
    if (!send->hasOneUse() || !isa<shard::RecvOp>(*send->getUsers().begin()))
      return op->emitOpError("must be received by exactly one shard.recv");
    return success();
  }
  auto from = recv.getInput().getDefiningOp<shard::SendOp>();
  std::optional<ArrayRef<int64_t>> source = recv.getSource();
  if (!from || !source || source->size() != 1 ||
      (*source)[0] != stageOf(from) ||
      from.getDestination() != ArrayRef<int64_t>{*stage})
    return op->emitOpError("must receive the shard.send of stage ")
           << (source && source->size() == 1 ? (*source)[0] : -1)
           << " addressed to stage " << *stage;
  if (recv.getResult().getType() != from.getInput().getType())
    return op->emitOpError("receives ")
           << recv.getResult().getType() << ", but "
           << from.getInput().getType() << " is sent";
  return success();
}

LogicalResult verifyCollective(Operation *op, shard::GridOp grid) {
  auto check = [&](StringRef gridName,
                   ArrayRef<int16_t> axes) -> LogicalResult {
    if (gridName != grid.getSymName())
      return op->emitOpError("names grid @")
             << gridName << "; the module's grid is @" << grid.getSymName();
    if (axes.empty())
      return op->emitOpError("has no grid axes");
    return verifyAxes(op, grid, axes, "grid_axes");
  };
  if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
    int64_t n = groupSize(grid, g.getGridAxes());
    return failure(
        failed(check(g.getGrid(), g.getGridAxes())) ||
        failed(verifyResize(op, g.getInput(), g.getResult(),
                            g.getGatherAxis().getSExtValue(), n, 1)));
  }
  if (auto s = dyn_cast<shard::AllSliceOp>(op)) {
    int64_t n = groupSize(grid, s.getGridAxes());
    return failure(failed(check(s.getGrid(), s.getGridAxes())) ||
                   failed(verifyResize(op, s.getInput(), s.getResult(),
                                       s.getSliceAxis().getSExtValue(), 1, n)));
  }
  if (auto r = dyn_cast<shard::ReduceScatterOp>(op)) {
    int64_t n = groupSize(grid, r.getGridAxes());
    return failure(
        failed(check(r.getGrid(), r.getGridAxes())) ||
        failed(verifyResize(op, r.getInput(), r.getResult(),
                            r.getScatterAxis().getSExtValue(), 1, n)));
  }
  if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
    if (r.getInput().getType() != r.getResult().getType())
      return op->emitOpError("changes the type ")
             << r.getInput().getType() << " to " << r.getResult().getType();
    return check(r.getGrid(), r.getGridAxes());
  }
  if (isa<shard::SendOp, shard::RecvOp>(op))
    return verifyTransfer(op, grid);
  return op->emitOpError("is not a collective meshc's runtime implements");
}

/// Pipeline stages: a stage function (`meshc.stage`) neither calls nor
/// sends; in the function that runs the schedule, every op runs on the
/// stage whose ranks hold its operands (a value is held by every stage, or
/// by the one that made or received it), and each result is held where its
/// `meshc.stage` says.
LogicalResult verifyStages(func::FuncOp func) {
  bool isStage = func->hasAttr(kStageAttr);
  // std::nullopt: every stage holds the value.
  llvm::DenseMap<Value, std::optional<int64_t>> held;
  auto holder = [&](Value v) -> std::optional<int64_t> {
    auto it = held.find(v);
    return it == held.end() ? std::nullopt : it->second;
  };
  for (Operation &op : func.getBody().front()) {
    bool staged = isa<func::CallOp, shard::SendOp, shard::RecvOp>(op);
    if (isStage && staged)
      return op.emitOpError("sits in pipeline stage function @")
             << func.getSymName() << "; stages neither call nor send";
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
        auto attr = func.getResultAttrOfType<IntegerAttr>(i, kStageAttr);
        std::optional<int64_t> h = holder(v);
        if (h && (!attr || attr.getInt() != *h))
          return ret.emitOpError("returns as result #")
                 << i << " a value held by stage " << *h
                 << ", but the result says "
                 << (attr ? "stage " + std::to_string(attr.getInt())
                          : std::string("every stage"));
      }
      continue;
    }
    std::optional<int64_t> stage = stageOf(&op);
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee || !stage || stageOf(callee) != stage)
        return call.emitOpError("must call the pipeline stage function of "
                                "its own meshc.stage");
    }
    for (Value v : op.getOperands()) {
      if (isa<shard::RecvOp>(op))
        break; // its operand lives on the sender
      std::optional<int64_t> h = holder(v);
      if (!h)
        continue;
      if (stage && *stage != *h)
        return op.emitOpError("runs on stage ")
               << *stage << " but reads a value held by stage " << *h;
      stage = h;
    }
    for (Value r : op.getResults())
      held[r] = stage;
  }
  return success();
}

class ShardVerifyPass : public impl::ShardVerifyPassBase<ShardVerifyPass> {
public:
  void runOnOperation() override {
    if (failed(forEachFunctionOnGrid(
            getOperation(), [&](func::FuncOp func, shard::GridOp grid) {
              return verify(func, grid);
            })))
      signalPassFailure();
  }

private:
  LogicalResult verify(func::FuncOp func, shard::GridOp grid) {
    auto checkSharding = [&](Attribute attr, Type type) -> LogicalResult {
      if (!attr)
        return success();
      auto t = cast<RankedTensorType>(type);
      TensorSharding s = fromAttr(attr, t.getRank());
      DimAxes all;
      for (const DimAxes &d : s)
        all.append(d.begin(), d.end());
      return verifyAxes(func, grid, all, "sharding");
    };
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (failed(checkSharding(func.getArgAttr(i, kShardingAttr),
                               func.getArgumentTypes()[i])))
        return failure();
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (failed(checkSharding(func.getResultAttr(i, kShardingAttr),
                               func.getResultTypes()[i])))
        return failure();

    if (failed(verifyStages(func)))
      return failure();
    WalkResult walk = func.walk([&](Operation *op) {
      if (op->hasAttr(kShardingAttr)) {
        op->emitOpError("still carries a planned sharding: run "
                        "meshc-shard-partition first");
        return WalkResult::interrupt();
      }
      if (isa<shard::ShardDialect>(op->getDialect())) {
        if (op->getParentOp() != func.getOperation()) {
          op->emitOpError("sits inside a region; collectives must run on "
                          "every rank, at the top level of the function");
          return WalkResult::interrupt();
        }
        if (failed(verifyCollective(op, grid)))
          return WalkResult::interrupt();
        return WalkResult::advance();
      }
      if (auto infer = dyn_cast<InferTypeOpInterface>(op))
        if (isa<dfg::DfgDialect>(op->getDialect()) &&
            failed(dfg::verifyInferredTypes(infer)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }
};

} // namespace
} // namespace meshc
