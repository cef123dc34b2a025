//===- SpecializeRank.cpp - The program one rank runs ---------------------===//
//
// Part of meshc.
//
// Algorithm, for rank r with coordinates c on the grid:
//   1. Every shard.all_slice becomes a dfg.slice of block groupIndex(c, axes)
//      along its slice axis (static starts: the rank is known now).
//   2. With pipeline stages (a pp axis), s = c[pp]. Stage functions of
//      other stages are erased. In the schedule, an op tagged `meshc.stage`
//      runs where its tag is s; an untagged op runs where the rank holds all
//      its operands; what does not run is erased (uses first). A receive
//      that runs takes a tensor.empty buffer in place of the send.
//   3. Results the rank does not hold leave the return and the signature.
//
// buildRankRoles specialises for every rank, canonicalises, and groups the
// ranks whose programs print the same (dp replicas, say) into one role.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/RankRoles.h"

#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringMap.h"

namespace meshc {
#define GEN_PASS_DEF_SPECIALIZERANKPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

/// The number of ranks on `grid`.
int64_t worldSize(shard::GridOp grid) {
  int64_t n = 1;
  for (int64_t size : grid.getShape())
    n *= size;
  return n;
}

/// all_slice ==> dfg.slice of the rank's block.
LogicalResult concretizeSlices(ModuleOp module, ArrayRef<int64_t> gridShape,
                               int64_t rank) {
  SmallVector<shard::AllSliceOp> slices;
  module.walk([&](shard::AllSliceOp op) { slices.push_back(op); });
  for (shard::AllSliceOp op : slices) {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    int64_t axis = op.getSliceAxis().getSExtValue();
    int64_t size = type.getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return op.emitOpError("slices a dimension of dynamic size; meshc "
                            "specializes ranks of static shapes only");
    int64_t start = groupIndex(gridShape, rank, op.getGridAxes()) * size;
    OpBuilder b(op);
    auto slice = dfg::SliceOp::create(b, op.getLoc(), op.getInput(), {start},
                                      {start + size}, {axis}, {1});
    op.getResult().replaceAllUsesWith(slice.getResult());
    op.erase();
  }
  return success();
}

/// Keeps the ops of `func`'s body that `stage` runs (see the header).
LogicalResult keepStage(func::FuncOp func, int64_t stage) {
  Block &body = func.getBody().front();
  llvm::DenseSet<Value> held(body.getArguments().begin(),
                             body.getArguments().end());
  SmallVector<Operation *> dead;
  for (Operation &op : body.without_terminator()) {
    bool runs;
    if (auto tag = op.getAttrOfType<IntegerAttr>(kStageAttr))
      runs = tag.getInt() == stage;
    else
      runs = llvm::all_of(op.getOperands(),
                          [&](Value v) { return held.contains(v); });
    if (!runs) {
      dead.push_back(&op);
      continue;
    }
    held.insert(op.getResults().begin(), op.getResults().end());
    if (auto recv = dyn_cast<shard::RecvOp>(op)) {
      OpBuilder b(recv);
      auto type = cast<RankedTensorType>(recv.getInput().getType());
      // The receive buffer's shape must be known here; with symbolic
      // dimensions it is known only when the program runs.
      if (!type.hasStaticShape())
        return recv.emitOpError("receives a tensor of symbolic shape ")
               << type
               << "; pipeline stages need static shapes (give the "
                  "symbolic dimensions sizes with --dim)";
      recv.getInputMutable().assign(tensor::EmptyOp::create(
          b, recv.getLoc(), type.getShape(), type.getElementType()));
    }
  }
  Operation *ret = body.getTerminator();
  llvm::BitVector dropped(ret->getNumOperands());
  for (OpOperand &operand : ret->getOpOperands())
    if (!held.contains(operand.get()))
      dropped.set(operand.getOperandNumber());
  ret->eraseOperands(dropped);
  (void)func.eraseResults(dropped);
  for (Operation *op : llvm::reverse(dead)) {
    op->dropAllUses();
    op->erase();
  }
  return success();
}

class SpecializeRankPass
    : public impl::SpecializeRankPassBase<SpecializeRankPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    if (failed(specializeForRank(getOperation(), rank)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult specializeForRank(ModuleOp module, int64_t rank) {
  FailureOr<shard::GridOp> grid = lookupGrid(module);
  if (failed(grid))
    return failure();
  SmallVector<int64_t> shape(grid->getShape());
  int64_t world = worldSize(*grid);
  if (rank < 0 || rank >= world)
    return module.emitError("rank ")
           << rank << " is not on the grid of " << world << " ranks";
  if (failed(concretizeSlices(module, shape, rank)))
    return failure();
  if (std::optional<shard::GridAxis> pp = findAxis(*grid, "pp")) {
    int64_t stage = gridCoordinate(shape, rank, *pp);
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      if (auto tag = func->getAttrOfType<IntegerAttr>(kStageAttr)) {
        if (tag.getInt() != stage)
          func.erase();
        continue;
      }
      if (failed(keepStage(func, stage)))
        return failure();
    }
  }
  module->setAttr(
      "meshc.rank",
      IntegerAttr::get(IntegerType::get(module.getContext(), 64), rank));
  return success();
}

FailureOr<SmallVector<RankRole>> buildRankRoles(ModuleOp sharded) {
  FailureOr<shard::GridOp> grid = lookupGrid(sharded);
  if (failed(grid))
    return failure();
  int64_t world = worldSize(*grid);
  SmallVector<RankRole> roles;
  llvm::StringMap<size_t> byText;
  for (int64_t rank = 0; rank < world; ++rank) {
    OwningOpRef<ModuleOp> program(sharded.clone());
    if (failed(specializeForRank(*program, rank)))
      return failure();
    PassManager pm(sharded.getContext());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(*program)))
      return failure();
    // Ranks whose programs differ only in their number share a role.
    (*program)->removeAttr("meshc.rank");
    std::string text;
    llvm::raw_string_ostream os(text);
    program->print(os);
    auto [it, inserted] = byText.try_emplace(text, roles.size());
    if (inserted)
      roles.push_back({{}, std::move(program)});
    roles[it->second].ranks.push_back(rank);
  }
  return roles;
}

} // namespace meshc
