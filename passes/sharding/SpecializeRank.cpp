//===- SpecializeRank.cpp - The program one rank runs ---------------------===//
//
// Part of meshc.
//
// Algorithm, for rank r with coordinates c on the grid:
//   0. A symbolic input dimension split over the mesh is renamed "name@n"
//      in @main's `dfg.dim_names` (the rank holds one of n pieces).
//   1. Every shard.all_slice becomes a dfg.slice of block groupIndex(c, axes)
//      along its slice axis (static starts: the rank is known now); along
//      a symbolic dimension, a dfg.symbolic_slice.
//   2. With pipeline stages (a pp axis), s = c[pp]. Stage functions of
//      other stages are erased. In the schedule, an op tagged `meshc.stage`
//      runs where its tag is s; an untagged op runs where the rank holds all
//      its operands; what does not run is erased (uses first). A receive
//      that runs takes a tensor.empty buffer in place of the send; with
//      symbolic dimensions, the stage functions first state the dimensions
//      of what they take and return (`dfg.dims`), and the buffer is a
//      dfg.symbolic_expand of zero to the sent value's dimensions.
//   3. Results the rank does not hold leave the return and the signature.
//   4. Slices of weights seen through views and concats (padding) move onto
//      the weights (moveSlicesToWeights, WeightSlices.cpp): the rank reads
//      its shard of a padded weight, not the whole.
//
// buildRankRoles specialises for every rank, canonicalises, and groups the
// ranks whose programs print the same (dp replicas, say) into one role.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/RankRoles.h"

#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"
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

/// Symbolic dimensions split over the mesh (dp over the batch): the rank's
/// input holds a piece, so the dimension is renamed "name@n" (n the number
/// of pieces) in `main`'s `dfg.dim_names`: everything derived from it is then
/// the rank's piece, and the whole is n times it.
void nameSplitDims(func::FuncOp main, ArrayRef<int64_t> gridShape) {
  MLIRContext *ctx = main.getContext();
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto type = cast<RankedTensorType>(main.getArgument(i).getType());
    auto names = main.getArgAttrOfType<ArrayAttr>(i, "dfg.dim_names");
    if (!names)
      continue;
    TensorSharding sharding =
        fromAttr(main.getArgAttr(i, kShardingAttr), type.getRank());
    SmallVector<Attribute> renamed;
    for (auto [d, n] : llvm::enumerate(names.getValue())) {
      StringRef name = cast<StringAttr>(n).getValue();
      int64_t pieces = 1;
      if (d < sharding.size())
        for (shard::GridAxis a : sharding[d])
          pieces *= gridShape[a];
      // A derived name (`past + seq`) stays: its expression's names are
      // bound whole, and the run checks the piece against it (so a split
      // one is refused there, not miscomputed).
      if (!name.empty() && pieces > 1 && type.isDynamicDim(d) &&
          !name.contains('@') && !dfg::isDerivedDimName(name))
        renamed.push_back(StringAttr::get(ctx, name + "@" + Twine(pieces)));
      else
        renamed.push_back(n);
    }
    main.setArgAttr(i, "dfg.dim_names", ArrayAttr::get(ctx, renamed));
  }
}

/// all_slice ==> dfg.slice of the rank's block; along a symbolic dimension
/// S split over n ranks, a dfg.symbolic_slice of [k * (S floordiv n),
/// (k + 1) * (S floordiv n)) marked `meshc.split_over = n` (the emitters
/// check at run time that S divides).
LogicalResult concretizeSlices(ModuleOp module, ArrayRef<int64_t> gridShape,
                               int64_t rank) {
  SmallVector<shard::AllSliceOp> slices;
  module.walk([&](shard::AllSliceOp op) { slices.push_back(op); });
  dfg::DimTable table(module.getContext());
  dfg::SymbolicShapes shapes(table);
  for (shard::AllSliceOp op : slices) {
    auto type = cast<RankedTensorType>(op.getResult().getType());
    int64_t axis = op.getSliceAxis().getSExtValue();
    int64_t size = type.getDimSize(axis);
    int64_t block = groupIndex(gridShape, rank, op.getGridAxes());
    OpBuilder b(op);
    Value sliced;
    if (!ShapedType::isDynamic(size)) {
      sliced =
          dfg::SliceOp::create(b, op.getLoc(), op.getInput(), {block * size},
                               {(block + 1) * size}, {axis}, {1});
    } else {
      AffineExpr whole = shapes.dims(op.getInput())[axis];
      if (!whole)
        return op.emitOpError("slices dimension ")
               << axis << ", whose size follows from no symbolic input "
               << "dimension";
      int64_t pieces = 1;
      for (int16_t a : op.getGridAxes())
        pieces *= gridShape[a];
      AffineExpr piece = whole.floorDiv(pieces);
      auto [map, names] = table.write({piece * block, piece * (block + 1)});
      auto symbolic = dfg::SymbolicSliceOp::create(
          b, op.getLoc(), type, op.getInput(),
          AffineMap::get(0, map.getNumSymbols(), map.getResult(0)),
          AffineMap::get(0, map.getNumSymbols(), map.getResult(1)), {axis}, {1},
          names);
      symbolic->setAttr(kSplitOverAttr, b.getI64IntegerAttr(pieces));
      sliced = symbolic.getResult();
    }
    op.getResult().replaceAllUsesWith(sliced);
    shapes.forget(op.getResult());
    op.erase();
  }
  return success();
}

/// Symbolic dimensions across stage calls: each stage function's arguments
/// and results get `dfg.dims`, the expressions (over the model's dimension
/// names) of the values `func` passes and receives, in call order, so that
/// a stage is analysed on its own and a receive knows what arrives.
void stateStageDims(func::FuncOp func) {
  dfg::DimTable table(func.getContext());
  dfg::SymbolicShapes shapes(table);
  auto state = [&](Value v) -> DictionaryAttr {
    if (cast<RankedTensorType>(v.getType()).hasStaticShape())
      return {};
    SmallVector<AffineExpr> dims(shapes.dims(v));
    // A dimension nothing derives stays unstated; the emitter reports it.
    if (llvm::is_contained(dims, AffineExpr()))
      return {};
    return dfg::dimsAttr(table, dims);
  };
  func.walk([&](func::CallOp call) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || callee.isExternal() || !callee->hasAttr(kStageAttr))
      return;
    for (auto [i, v] : llvm::enumerate(call.getOperands()))
      if (DictionaryAttr dims = state(v))
        callee.setArgAttr(i, dfg::kDimsAttr, dims);
    dfg::SymbolicShapes inside(table);
    Operation *ret = callee.getBody().front().getTerminator();
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      if (cast<RankedTensorType>(v.getType()).hasStaticShape())
        continue;
      SmallVector<AffineExpr> dims(inside.dims(v));
      if (!llvm::is_contained(dims, AffineExpr()))
        callee.setResultAttr(i, dfg::kDimsAttr, dfg::dimsAttr(table, dims));
    }
  });
}

/// The buffer a receive of `type` fills: tensor.empty, or, with symbolic
/// dimensions, zeros broadcast to the sent value's dimensions (the
/// emitters allocate it and write nothing).
FailureOr<Value> receiveBuffer(shard::RecvOp recv,
                               dfg::SymbolicShapes &shapes) {
  OpBuilder b(recv);
  auto type = cast<RankedTensorType>(recv.getInput().getType());
  if (type.hasStaticShape())
    return tensor::EmptyOp::create(b, recv.getLoc(), type.getShape(),
                                   type.getElementType())
        .getResult();
  SmallVector<AffineExpr> dims(shapes.dims(recv.getInput()));
  if (llvm::is_contained(dims, AffineExpr()))
    return recv.emitOpError("receives a tensor of shape ")
           << type
           << " whose dynamic dimensions follow from no symbolic input "
              "dimension";
  auto [map, names] = shapes.table().write(dims);
  Type element = type.getElementType();
  Value zero = dfg::ConstantOp::create(
      b, recv.getLoc(),
      DenseElementsAttr::get(RankedTensorType::get({}, element),
                             b.getZeroAttr(element)));
  return dfg::SymbolicExpandOp::create(b, recv.getLoc(), type, zero, map, names)
      .getResult();
}

/// Keeps the ops of `func`'s body that `stage` runs (see the header).
LogicalResult keepStage(func::FuncOp func, int64_t stage) {
  dfg::DimTable table(func.getContext());
  dfg::SymbolicShapes shapes(table);
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
      FailureOr<Value> buffer = receiveBuffer(recv, shapes);
      if (failed(buffer))
        return failure();
      recv.getInputMutable().assign(*buffer);
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
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    nameSplitDims(main, shape);
  // Schedules (functions that call pipeline stages) and stages.
  SmallVector<func::FuncOp> schedules, stageFuncs;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      (func->hasAttr(kStageAttr) ? stageFuncs : schedules).push_back(func);
  std::optional<shard::GridAxis> pp = findAxis(*grid, "pp");
  if (pp)
    for (func::FuncOp func : schedules)
      stateStageDims(func);
  if (failed(concretizeSlices(module, shape, rank)))
    return failure();
  if (pp) {
    int64_t stage = gridCoordinate(shape, rank, *pp);
    // The schedules first, while every stage function is there to say what
    // its calls return; then the other stages' functions go.
    for (func::FuncOp func : schedules)
      if (failed(keepStage(func, stage)))
        return failure();
    for (func::FuncOp func : stageFuncs)
      if (func->getAttrOfType<IntegerAttr>(kStageAttr).getInt() != stage)
        func.erase();
  }
  moveSlicesToWeights(module);
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
