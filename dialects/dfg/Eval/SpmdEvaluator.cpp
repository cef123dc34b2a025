//===- SpmdEvaluator.cpp - Run every rank of an SPMD program --------------===//
//
// Part of meshc. Ranks run in lockstep, one op at a time: an SPMD program
// has no control flow, so every rank reaches each collective at the same
// point. Ranks are numbered row-major over the grid's axes. With pipeline
// stages, an op with `meshc.stage` runs on the ranks of that pp coordinate
// (a call runs the stage function on them), other ops on the ranks that
// hold their operands, and shard.recv takes what the peer of the source
// stage sent.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/SpmdEvaluator.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

using namespace mlir;

namespace meshc::dfg {
namespace {

/// Copies block `index` of `parts` equal blocks along `dim`.
EvalTensor sliceBlock(const EvalTensor &t, int64_t dim, int64_t parts,
                      int64_t index) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= t.shape[d];
  for (size_t d = dim + 1; d < t.shape.size(); ++d)
    inner *= t.shape[d];
  int64_t block = t.shape[dim] / parts;
  EvalTensor r;
  r.shape = t.shape;
  r.shape[dim] = block;
  r.elementType = t.elementType;
  r.values.reserve(outer * block * inner);
  for (int64_t o = 0; o < outer; ++o) {
    auto begin = t.values.begin() + (o * t.shape[dim] + index * block) * inner;
    r.values.insert(r.values.end(), begin, begin + block * inner);
  }
  return r;
}

/// Concatenates `blocks` (equal shapes) along `dim`.
EvalTensor concatBlocks(ArrayRef<const EvalTensor *> blocks, int64_t dim) {
  const EvalTensor &first = *blocks.front();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= first.shape[d];
  for (size_t d = dim + 1; d < first.shape.size(); ++d)
    inner *= first.shape[d];
  EvalTensor r;
  r.shape = first.shape;
  r.shape[dim] *= blocks.size();
  r.elementType = first.elementType;
  r.values.reserve(outer * r.shape[dim] * inner);
  int64_t chunk = first.shape[dim] * inner;
  for (int64_t o = 0; o < outer; ++o)
    for (const EvalTensor *b : blocks)
      r.values.insert(r.values.end(), b->values.begin() + o * chunk,
                      b->values.begin() + (o + 1) * chunk);
  return r;
}

class SpmdEvaluator {
public:
  SpmdEvaluator(shard::GridOp grid, StringRef weightsDir)
      : grid_(grid), shape_(grid.getShape()), weightsDir_(weightsDir.str()),
        pp_(findAxis(grid, "pp")) {
    world_ = 1;
    for (int64_t n : shape_)
      world_ *= n;
  }

  FailureOr<SmallVector<EvalTensor>> run(func::FuncOp func,
                                         ArrayRef<EvalTensor> inputs);

private:
  using PerRank = std::vector<EvalTensor>;

  int64_t coord(int64_t rank, int64_t axis) const {
    return gridCoordinate(shape_, rank, axis);
  }

  /// The rank's index within its group over `axes` (major to minor).
  int64_t groupIndex(int64_t rank, ArrayRef<int16_t> axes) const {
    return meshc::groupIndex(shape_, rank, axes);
  }

  /// The members of `rank`'s group over `axes`, by group index.
  SmallVector<int64_t> group(int64_t rank, ArrayRef<int16_t> axes) const {
    int64_t n = 1;
    for (int16_t a : axes)
      n *= shape_[a];
    SmallVector<int64_t> members(n, -1);
    for (int64_t r = 0; r < world_; ++r) {
      bool same = true;
      for (int64_t a = 0, e = shape_.size(); a < e && same; ++a)
        same = llvm::is_contained(axes, a) || coord(r, a) == coord(rank, a);
      if (same)
        members[groupIndex(r, axes)] = r;
    }
    return members;
  }

  /// Ranks run the ops of `body` in order, each op on the ranks of `active`
  /// that run it: those of its pipeline stage (`meshc.stage`), or else those
  /// that hold all its operands.
  LogicalResult execute(Block &body, const std::vector<bool> &active);
  LogicalResult collective(Operation *op, const std::vector<bool> &ranks);
  LogicalResult call(func::CallOp op, const std::vector<bool> &ranks);

  static bool holds(const EvalTensor &t) { return bool(t.elementType); }

  shard::GridOp grid_;
  SmallVector<int64_t> shape_;
  std::string weightsDir_;
  /// Sizes of the symbolic dimensions, from the global inputs.
  DimBindings dims_;
  std::optional<shard::GridAxis> pp_;
  int64_t world_;
  /// Per value, each rank's tensor; a rank that does not hold the value
  /// (another pipeline stage's) has an empty one.
  llvm::DenseMap<Value, PerRank> values_;
};

LogicalResult SpmdEvaluator::collective(Operation *op,
                                        const std::vector<bool> &ranks) {
  const PerRank &in = values_[op->getOperand(0)];
  PerRank out(world_);
  // Every member of a group must take part: a group that spans ranks
  // that do not run the op would hang on a real machine.
  auto members =
      [&](int64_t r,
          ArrayRef<int16_t> axes) -> FailureOr<SmallVector<int64_t>> {
    SmallVector<int64_t> group = this->group(r, axes);
    for (int64_t m : group)
      if (!ranks[m] || !holds(in[m]))
        return op->emitOpError("groups rank ")
               << r << " with rank " << m << ", which does not run it";
    return group;
  };
  for (int64_t r = 0; r < world_; ++r) {
    if (!ranks[r])
      continue;
    if (!isa<shard::RecvOp>(op) && !holds(in[r]))
      return op->emitOpError("runs on rank ")
             << r << ", which does not hold its operand";
    if (auto s = dyn_cast<shard::AllSliceOp>(op)) {
      int64_t n = groupSize(grid_, s.getGridAxes());
      out[r] = sliceBlock(in[r], s.getSliceAxis().getSExtValue(), n,
                          groupIndex(r, s.getGridAxes()));
    } else if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
      auto group = members(r, g.getGridAxes());
      if (failed(group))
        return failure();
      SmallVector<const EvalTensor *> blocks;
      for (int64_t m : *group)
        blocks.push_back(&in[m]);
      out[r] = concatBlocks(blocks, g.getGatherAxis().getSExtValue());
    } else if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op)) {
      ArrayRef<int16_t> axes = collectiveGridAxes(op);
      auto kind = isa<shard::AllReduceOp>(op)
                      ? cast<shard::AllReduceOp>(op).getReduction()
                      : cast<shard::ReduceScatterOp>(op).getReduction();
      bool largest = kind == shard::ReductionKind::Max &&
                     isa<shard::AllReduceOp>(op);
      if (kind != shard::ReductionKind::Sum && !largest)
        return op->emitOpError("reduction ")
               << shard::stringifyReductionKind(kind)
               << " is not supported by the reference evaluator (sum, and "
                  "max of an all_reduce)";
      auto group = members(r, axes);
      if (failed(group))
        return failure();
      // Members summed (or their largest taken) in group order, so every
      // member gets the same bits.
      EvalTensor sum = in[group->front()];
      for (int64_t m : ArrayRef(*group).drop_front())
        for (size_t i = 0; i < sum.values.size(); ++i)
          sum.values[i] = largest ? std::max(sum.values[i], in[m].values[i])
                                  : sum.values[i] + in[m].values[i];
      roundToElementType(sum);
      if (auto rs = dyn_cast<shard::ReduceScatterOp>(op))
        sum = sliceBlock(sum, rs.getScatterAxis().getSExtValue(), group->size(),
                         groupIndex(r, axes));
      out[r] = std::move(sum);
    } else if (isa<shard::SendOp>(op)) {
      out[r] = in[r]; // what the receiver gets
    } else if (auto recv = dyn_cast<shard::RecvOp>(op)) {
      // The sender: this rank's peer on the source stage.
      std::optional<ArrayRef<int64_t>> source = recv.getSource();
      if (!pp_ || !source || source->size() != 1)
        return op->emitOpError("needs a static source stage on the pp axis");
      int64_t stride = 1;
      for (int64_t a = shape_.size() - 1; a > *pp_; --a)
        stride *= shape_[a];
      int64_t peer = r + ((*source)[0] - coord(r, *pp_)) * stride;
      if (!holds(in[peer]))
        return op->emitOpError("receives on rank ")
               << r << " from rank " << peer << ", which sent nothing";
      out[r] = in[peer];
    } else {
      return op->emitOpError("is not supported by the reference evaluator");
    }
  }
  values_[op->getResult(0)] = std::move(out);
  return success();
}

LogicalResult SpmdEvaluator::call(func::CallOp op,
                                  const std::vector<bool> &ranks) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      op, op.getCalleeAttr());
  if (!callee || callee.isExternal())
    return op.emitOpError("calls no function with a body");
  Block &body = callee.getBody().front();
  // Copied out before values_[...] inserts: an insertion that grows the map
  // would leave a reference into it dangling.
  for (auto [arg, operand] :
       llvm::zip_equal(body.getArguments(), op.getOperands())) {
    PerRank value = values_.lookup(operand);
    values_[arg] = std::move(value);
  }
  if (failed(execute(body, ranks)))
    return failure();
  for (auto [result, v] :
       llvm::zip_equal(op.getResults(), body.getTerminator()->getOperands())) {
    PerRank value = values_.lookup(v);
    values_[result] = std::move(value);
  }
  return success();
}

LogicalResult SpmdEvaluator::execute(Block &body,
                                     const std::vector<bool> &active) {
  for (Operation &op : body.without_terminator()) {
    std::vector<bool> ranks = active;
    auto stage = op.getAttrOfType<IntegerAttr>(kStageAttr);
    for (int64_t r = 0; r < world_; ++r) {
      if (stage)
        ranks[r] = ranks[r] && pp_ && coord(r, *pp_) == stage.getInt();
      else if (!isa<shard::RecvOp>(op))
        for (Value v : op.getOperands())
          ranks[r] = ranks[r] && holds(values_[v][r]);
    }
    if (auto c = dyn_cast<func::CallOp>(op)) {
      if (failed(call(c, ranks)))
        return failure();
      continue;
    }
    if (isa<shard::ShardDialect>(op.getDialect())) {
      if (failed(collective(&op, ranks)))
        return failure();
      continue;
    }
    if (isa<WeightOp, ConstantOp>(op)) {
      // The same on every rank: evaluated once.
      auto results = evaluateOp(&op, {}, weightsDir_, &dims_);
      if (failed(results))
        return failure();
      PerRank perRank(world_);
      for (int64_t r = 0; r < world_; ++r)
        if (ranks[r])
          perRank[r] = (*results)[0];
      values_[op.getResult(0)] = std::move(perRank);
      continue;
    }
    SmallVector<PerRank> results(op.getNumResults(), PerRank(world_));
    for (int64_t r = 0; r < world_; ++r) {
      if (!ranks[r])
        continue;
      SmallVector<EvalTensor> operands;
      for (Value v : op.getOperands()) {
        if (!holds(values_[v][r]))
          return op.emitOpError("runs on rank ")
                 << r << ", which does not hold its operands";
        operands.push_back(values_[v][r]);
      }
      auto out = evaluateOp(&op, operands, weightsDir_, &dims_);
      if (failed(out))
        return failure();
      for (auto [i, t] : llvm::enumerate(*out))
        results[i][r] = std::move(t);
    }
    for (auto [v, perRank] : llvm::zip_equal(op.getResults(), results))
      values_[v] = std::move(perRank);
  }
  return success();
}

FailureOr<SmallVector<EvalTensor>>
SpmdEvaluator::run(func::FuncOp func, ArrayRef<EvalTensor> inputs) {
  Block &body = func.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return func.emitError("expects ")
           << body.getNumArguments() << " inputs, got " << inputs.size();
  // Symbolic dimensions are never split, so the global inputs give their
  // sizes on every rank.
  FailureOr<DimBindings> dims = bindDims(func, inputs);
  if (failed(dims))
    return failure();
  dims_ = std::move(*dims);
  for (auto [arg, input] : llvm::zip_equal(body.getArguments(), inputs)) {
    auto type = cast<RankedTensorType>(arg.getType());
    TensorSharding s = fromAttr(
        func.getArgAttr(arg.getArgNumber(), kShardingAttr), type.getRank());
    PerRank perRank(world_, input);
    for (auto [dim, axes] : llvm::enumerate(s)) {
      if (axes.empty())
        continue;
      int64_t n = groupSize(grid_, axes);
      if (dim >= input.shape.size() || input.shape[dim] % n != 0)
        return func.emitError("input #")
               << arg.getArgNumber() << " does not split over "
               << describeAxes(grid_, axes) << " along dimension " << dim;
      for (int64_t r = 0; r < world_; ++r)
        perRank[r] = sliceBlock(perRank[r], dim, n, groupIndex(r, axes));
    }
    if (input.elementType != type.getElementType() ||
        failed(verifyCompatibleShape(type.getShape(), perRank[0].shape)))
      return func.emitError("input #")
             << arg.getArgNumber() << " gives each rank a "
             << perRank[0].shape.size() << "-d block of " << input.elementType
             << " that does not match " << type;
    values_[arg] = std::move(perRank);
  }

  if (failed(execute(body, std::vector<bool>(world_, true))))
    return failure();

  // Assemble each result: concatenate the blocks of the split dimensions,
  // checking that the ranks holding the same block agree.
  SmallVector<EvalTensor> outputs;
  for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
    auto type = cast<RankedTensorType>(v.getType());
    TensorSharding s =
        fromAttr(func.getResultAttr(i, kShardingAttr), type.getRank());
    PerRank blocks = values_[v];
    // Gather dimension by dimension, as all_gather would, on the ranks
    // that hold the result (its pipeline stage's).
    for (auto [dim, axes] : llvm::enumerate(s)) {
      if (axes.empty())
        continue;
      PerRank next(world_);
      for (int64_t r = 0; r < world_; ++r) {
        if (!holds(blocks[r]))
          continue;
        SmallVector<const EvalTensor *> parts;
        for (int64_t m : group(r, axes)) {
          if (!holds(blocks[m]))
            return func.emitError("result #")
                   << i << ": rank " << m << " holds no block of it";
          parts.push_back(&blocks[m]);
        }
        next[r] = concatBlocks(parts, dim);
      }
      blocks = std::move(next);
    }
    int64_t first = -1;
    for (int64_t r = 0; r < world_; ++r) {
      if (!holds(blocks[r]))
        continue;
      if (first < 0)
        first = r;
      else if (blocks[r].values != blocks[first].values)
        return func.emitError("result #")
               << i << ": rank " << r << " disagrees with rank " << first
               << " on a block both should hold";
    }
    if (first < 0)
      return func.emitError("result #") << i << " is held by no rank";
    outputs.push_back(std::move(blocks[first]));
  }
  return outputs;
}

} // namespace

FailureOr<SmallVector<EvalTensor>>
evaluateSpmd(func::FuncOp func, shard::GridOp grid,
             ArrayRef<EvalTensor> globalInputs, StringRef weightsDir) {
  return SpmdEvaluator(grid, weightsDir).run(func, globalInputs);
}

} // namespace meshc::dfg
