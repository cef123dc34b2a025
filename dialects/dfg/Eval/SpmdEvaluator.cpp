//===- SpmdEvaluator.cpp - Run every rank of an SPMD program --------------===//
//
// Part of meshc. Ranks run in lockstep, one op at a time: an SPMD program
// has no control flow, so every rank reaches each collective at the same
// point. Ranks are numbered row-major over the grid's axes.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/SpmdEvaluator.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
      : grid_(grid), shape_(grid.getShape()), weightsDir_(weightsDir.str()) {
    world_ = 1;
    for (int64_t n : shape_)
      world_ *= n;
  }

  FailureOr<SmallVector<EvalTensor>> run(func::FuncOp func,
                                         ArrayRef<EvalTensor> inputs);

private:
  using PerRank = std::vector<EvalTensor>;

  int64_t coord(int64_t rank, int64_t axis) const {
    for (int64_t a = shape_.size() - 1; a > axis; --a)
      rank /= shape_[a];
    return rank % shape_[axis];
  }

  /// The rank's index within its group over `axes` (major to minor).
  int64_t groupIndex(int64_t rank, ArrayRef<int16_t> axes) const {
    int64_t index = 0;
    for (int16_t a : axes)
      index = index * shape_[a] + coord(rank, a);
    return index;
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

  LogicalResult collective(Operation *op);

  shard::GridOp grid_;
  SmallVector<int64_t> shape_;
  std::string weightsDir_;
  int64_t world_;
  llvm::DenseMap<Value, PerRank> values_;
};

LogicalResult SpmdEvaluator::collective(Operation *op) {
  const PerRank &in = values_[op->getOperand(0)];
  PerRank out(world_);
  if (auto s = dyn_cast<shard::AllSliceOp>(op)) {
    int64_t n = groupSize(grid_, s.getGridAxes());
    int64_t dim = s.getSliceAxis().getSExtValue();
    for (int64_t r = 0; r < world_; ++r)
      out[r] = sliceBlock(in[r], dim, n, groupIndex(r, s.getGridAxes()));
  } else if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
    int64_t dim = g.getGatherAxis().getSExtValue();
    for (int64_t r = 0; r < world_; ++r) {
      SmallVector<const EvalTensor *> blocks;
      for (int64_t m : group(r, g.getGridAxes()))
        blocks.push_back(&in[m]);
      out[r] = concatBlocks(blocks, dim);
    }
  } else if (isa<shard::AllReduceOp, shard::ReduceScatterOp>(op)) {
    ArrayRef<int16_t> axes =
        isa<shard::AllReduceOp>(op)
            ? cast<shard::AllReduceOp>(op).getGridAxes()
            : cast<shard::ReduceScatterOp>(op).getGridAxes();
    auto kind = isa<shard::AllReduceOp>(op)
                    ? cast<shard::AllReduceOp>(op).getReduction()
                    : cast<shard::ReduceScatterOp>(op).getReduction();
    if (kind != shard::ReductionKind::Sum)
      return op->emitOpError("reduction ")
             << shard::stringifyReductionKind(kind)
             << " is not supported by the reference evaluator (sum only)";
    for (int64_t r = 0; r < world_; ++r) {
      // Members summed in group order, so every member gets the same bits.
      SmallVector<int64_t> members = group(r, axes);
      EvalTensor sum = in[members.front()];
      for (int64_t m : ArrayRef(members).drop_front())
        for (size_t i = 0; i < sum.values.size(); ++i)
          sum.values[i] += in[m].values[i];
      roundToElementType(sum);
      if (auto rs = dyn_cast<shard::ReduceScatterOp>(op))
        sum = sliceBlock(sum, rs.getScatterAxis().getSExtValue(),
                         members.size(), groupIndex(r, axes));
      out[r] = std::move(sum);
    }
  } else {
    return op->emitOpError("is not supported by the reference evaluator");
  }
  values_[op->getResult(0)] = std::move(out);
  return success();
}

FailureOr<SmallVector<EvalTensor>>
SpmdEvaluator::run(func::FuncOp func, ArrayRef<EvalTensor> inputs) {
  Block &body = func.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return func.emitError("expects ")
           << body.getNumArguments() << " inputs, got " << inputs.size();
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

  for (Operation &op : body.without_terminator()) {
    if (isa<shard::ShardDialect>(op.getDialect())) {
      if (failed(collective(&op)))
        return failure();
      continue;
    }
    if (isa<WeightOp, ConstantOp>(op)) {
      // Replicated: evaluated once, shared by every rank.
      auto results = evaluateOp(&op, {}, weightsDir_);
      if (failed(results))
        return failure();
      values_[op.getResult(0)] = PerRank(world_, (*results)[0]);
      continue;
    }
    SmallVector<PerRank> results(op.getNumResults(), PerRank(world_));
    for (int64_t r = 0; r < world_; ++r) {
      SmallVector<EvalTensor> operands;
      for (Value v : op.getOperands())
        operands.push_back(values_[v][r]);
      auto out = evaluateOp(&op, operands, weightsDir_);
      if (failed(out))
        return failure();
      for (auto [i, t] : llvm::enumerate(*out))
        results[i][r] = std::move(t);
    }
    for (auto [v, perRank] : llvm::zip_equal(op.getResults(), results))
      values_[v] = std::move(perRank);
  }

  // Assemble each result: concatenate the blocks of the split dimensions,
  // checking that the ranks holding the same block agree.
  SmallVector<EvalTensor> outputs;
  for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands())) {
    auto type = cast<RankedTensorType>(v.getType());
    TensorSharding s =
        fromAttr(func.getResultAttr(i, kShardingAttr), type.getRank());
    PerRank blocks = values_[v];
    std::vector<int64_t> owners(world_);
    for (int64_t r = 0; r < world_; ++r)
      owners[r] = r;
    // Gather dimension by dimension, as all_gather would.
    for (auto [dim, axes] : llvm::enumerate(s)) {
      if (axes.empty())
        continue;
      PerRank next(world_);
      for (int64_t r = 0; r < world_; ++r) {
        SmallVector<const EvalTensor *> parts;
        for (int64_t m : group(r, axes))
          parts.push_back(&blocks[m]);
        next[r] = concatBlocks(parts, dim);
      }
      blocks = std::move(next);
    }
    for (int64_t r = 1; r < world_; ++r)
      if (blocks[r].values != blocks[0].values)
        return func.emitError("result #")
               << i << ": rank " << r
               << " disagrees with rank 0 on a block both should hold";
    outputs.push_back(std::move(blocks[0]));
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
