//===- Partition.cpp - The SPMD program of a planned graph ----------------===//
//
// Part of meshc.
//
// Algorithm (per function, in program order):
//   1. Arguments take their local types from their planned shardings.
//   2. For each dfg op, from its factor rule (ShardingRules.h): factors that
//      reach no result (contractions) take their operands' sharding; the
//      others take the result's planned sharding where its axes are still
//      free. Pinned factors stay whole.
//   3. Each operand is brought to the sharding its factors ask for:
//      shard.all_gather where it is split but must not be, shard.all_slice
//      where it is whole but must be split (weights and constants are whole
//      on every rank, so each use slices them: that slice is the rank's
//      weight shard).
//   4. The op is rebuilt on the local operands (shape attributes of reshape
//      and expand made local) and its result types re-inferred.
//   5. A sharded contraction leaves partial sums: shard.all_reduce over its
//      axes completes them, or shard.reduce_scatter where the planned result
//      is split over those same axes (sequence parallelism). A linear's bias
//      is added after the reduction, once.
//   6. Results are brought to their planned shardings; returned values to
//      the function's result shardings.
//   7. Sum all_reduces of projections that read the same input (the parts
//      of a packed projection) become one all_reduce of their joined
//      outputs (mergeSiblingReductions).
//   8. A sum all_reduce read only by an op linear in it (a view, a sum over
//      some dimensions, a product by a value the same on every rank of the
//      group, updates scattered into zeros) moves after it (sinkReductions).
//      Sum reductions that are added (or are a norm's input and fused
//      residual), selected between by a condition the same on every rank,
//      or concatenated, and used nowhere else, then become one reduction of
//      the op on the partial sums; twice, so that a merged reduction moves
//      on.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace meshc {
#define GEN_PASS_DEF_SHARDPARTITIONPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

struct Local {
  Value value;
  TensorSharding sharding;
};

class Partitioner {
public:
  Partitioner(shard::GridOp grid, func::FuncOp func)
      : grid_(grid), func_(func), b_(func.getContext()) {}

  LogicalResult run() {
    Block &body = func_.getBody().front();
    // Rules read operand shapes: take them while the arguments are global.
    for (Operation &op : body.without_terminator()) {
      if (isa<dfg::WeightOp, dfg::ConstantOp>(op))
        continue;
      if (!isa<dfg::DfgDialect>(op.getDialect()))
        return op.emitOpError("cannot be partitioned: meshc partitions "
                              "graphs of dfg ops only");
      FailureOr<dfg::ShardingRule> rule = dfg::getShardingRule(&op);
      if (failed(rule))
        return failure();
      rules_[&op] = std::move(*rule);
    }
    for (BlockArgument arg : body.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      TensorSharding s = fromAttr(
          func_.getArgAttr(arg.getArgNumber(), kShardingAttr), type.getRank());
      FailureOr<RankedTensorType> local = localType(grid_, type, s);
      if (failed(local))
        return func_.emitError("argument #")
               << arg.getArgNumber() << " of type " << type
               << " does not divide into its sharding "
               << toAttr(func_.getContext(), s);
      arg.setType(*local);
      locals_[arg] = {arg, s};
    }
    SmallVector<Operation *> old;
    for (Operation &op : body.without_terminator())
      old.push_back(&op);
    for (Operation *op : old) {
      if (isa<dfg::WeightOp, dfg::ConstantOp>(op)) {
        locals_[op->getResult(0)] = {op->getResult(0), whole(op->getResult(0))};
        continue;
      }
      if (failed(partition(op)))
        return failure();
    }
    Operation *ret = body.getTerminator();
    b_.setInsertionPoint(ret);
    SmallVector<Type> resultTypes;
    for (OpOperand &operand : ret->getOpOperands()) {
      auto type = cast<RankedTensorType>(operand.get().getType());
      TensorSharding s = fromAttr(
          func_.getResultAttr(operand.getOperandNumber(), kShardingAttr),
          type.getRank());
      Value v = reshard(operand.get(), s, ret->getLoc());
      operand.set(v);
      resultTypes.push_back(v.getType());
    }
    for (Operation *op : llvm::reverse(old))
      if (!isa<dfg::WeightOp, dfg::ConstantOp>(op))
        op->erase();
    func_.setFunctionType(FunctionType::get(
        func_.getContext(), body.getArgumentTypes(), resultTypes));
    return success();
  }

private:
  static TensorSharding whole(Value v) {
    return TensorSharding(cast<RankedTensorType>(v.getType()).getRank());
  }

  TensorSharding planned(Operation *op, unsigned result) {
    auto attr = op->getAttrOfType<ArrayAttr>(kShardingAttr);
    int64_t rank =
        cast<RankedTensorType>(op->getResult(result).getType()).getRank();
    return fromAttr(attr && result < attr.size() ? attr[result] : Attribute(),
                    rank);
  }

  /// The local value of `global` with sharding `target`. Conversions are
  /// shared by all uses (three projections of one normed input gather it
  /// once); a weight's or constant's slices sit right after it.
  Value reshard(Value global, const TensorSharding &target, Location loc) {
    Local &local = locals_[global];
    if (local.sharding == target)
      return local.value;
    auto key = std::make_pair(global, toAttr(global.getContext(), target));
    auto it = conversions_.find(key);
    if (it != conversions_.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b_);
    Operation *def = global.getDefiningOp();
    if (def && isa<dfg::WeightOp, dfg::ConstantOp>(def))
      b_.setInsertionPointAfter(def);
    Value v = convert(local.value, local.sharding, target, loc);
    conversions_[key] = v;
    return v;
  }

  /// Gathers the dimensions split otherwise than `to`, then slices those
  /// `to` splits.
  Value convert(Value v, TensorSharding from, const TensorSharding &to,
                Location loc) {
    StringRef grid = grid_.getSymName();
    for (size_t d = 0; d < from.size(); ++d) {
      if (from[d].empty() || from[d] == to[d])
        continue;
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      if (!ShapedType::isDynamic(shape[d]))
        shape[d] *= groupSize(grid_, from[d]);
      v = shard::AllGatherOp::create(
          b_, loc, RankedTensorType::get(shape, type.getElementType()), grid,
          from[d], v, APInt(64, d));
      from[d].clear();
    }
    for (size_t d = 0; d < from.size(); ++d) {
      if (to[d].empty() || from[d] == to[d])
        continue;
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      if (!ShapedType::isDynamic(shape[d]))
        shape[d] /= groupSize(grid_, to[d]);
      v = shard::AllSliceOp::create(
          b_, loc, RankedTensorType::get(shape, type.getElementType()), v, grid,
          to[d], d);
    }
    return v;
  }

  LogicalResult partition(Operation *op) {
    const dfg::ShardingRule *rule = &rules_[op];
    ArrayRef<int64_t> gridShape = grid_.getShape();
    SmallVector<TensorSharding> operandShardings, resultShardings;
    for (Value v : op->getOperands())
      operandShardings.push_back(locals_[v].sharding);
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      resultShardings.push_back(planned(op, r));
    // A vocabulary-parallel embedding: the table's rows, as planned.
    SmallVector<DimAxes> factors =
        dfg::assignFactors(*rule, operandShardings, resultShardings, gridShape,
                           dfg::presetFactors(op, *rule));
    auto shardingOf = [&](const dfg::TensorFactors &tf) {
      return dfg::tensorAxes(*rule, tf, factors, gridShape);
    };

    b_.setInsertionPoint(op);
    Location loc = op->getLoc();
    IRMapping mapping;
    for (auto [v, tf] : llvm::zip_equal(op->getOperands(), rule->operands))
      mapping.map(v, reshard(v, shardingOf(tf), loc));

    // Partial results: sums, or the largest values of a reduce_max (an
    // all_reduce max completes them; never a reduce_scatter).
    DimAxes partialAxes;
    bool byMax = false;
    for (auto [f, axes] : llvm::enumerate(factors))
      if (rule->factors[f].kind == dfg::FactorKind::Reduction) {
        partialAxes.append(axes.begin(), axes.end());
        byMax |= rule->factors[f].byMax && !axes.empty();
      }

    Operation *local;
    Value bias;
    auto linear = dyn_cast<dfg::LinearOp>(op);
    auto embedding = dyn_cast<dfg::EmbeddingOp>(op);
    if (embedding && !partialAxes.empty()) {
      local =
          lookupOwnRows(embedding, mapping.lookup(embedding.getTable()),
                        mapping.lookup(embedding.getIds()), partialAxes, loc);
    } else if (linear && linear.getBias() && !partialAxes.empty()) {
      // x W + b with x and W split along `in`: sum the partial products,
      // then add b once.
      bias = mapping.lookup(linear.getBias());
      local = dfg::LinearOp::create(b_, loc, mapping.lookup(linear.getInput()),
                                    mapping.lookup(linear.getWeight()), Value(),
                                    linear.getTransposeWeight());
    } else {
      local = b_.clone(*op, mapping);
      local->removeAttr(kShardingAttr);
    }

    // Local result types, and the shape attributes that spell them.
    SmallVector<RankedTensorType> expected;
    for (auto [r, tf] : llvm::enumerate(rule->results)) {
      auto global = cast<RankedTensorType>(op->getResult(r).getType());
      FailureOr<RankedTensorType> t = localType(grid_, global, shardingOf(tf));
      if (failed(t))
        return op->emitOpError("result #")
               << r << " of type " << global << " does not divide into "
               << toAttr(op->getContext(), shardingOf(tf));
      expected.push_back(*t);
    }
    if (isa<dfg::ReshapeOp, dfg::ExpandOp>(local)) {
      // Static dimensions take their local sizes; a dynamic one (symbolic,
      // never split) keeps its entry: a reshape's 0 (copy) or -1 (inferred
      // from the local element count), an expand's 1 (keep the input's).
      ArrayRef<int64_t> original =
          local->getAttrOfType<DenseI64ArrayAttr>("shape").asArrayRef();
      SmallVector<int64_t> spec(expected.front().getShape());
      size_t offset = spec.size() - original.size();
      for (size_t i = 0; i < spec.size(); ++i)
        if (ShapedType::isDynamic(spec[i]))
          spec[i] = i >= offset ? original[i - offset] : 1;
      local->setAttr("shape", b_.getDenseI64ArrayAttr(spec));
    }
    if (auto reshape = dyn_cast<dfg::SymbolicReshapeOp>(local)) {
      // The static dimensions of the target (the map's constants) take
      // their local sizes; a symbolic one split n ways (the leading one,
      // dp's batch) is its expression floordiv n, the rank's piece as
      // meshc-shard-specialize-rank slices it.
      AffineMap map = reshape.getShape();
      SmallVector<AffineExpr> exprs(map.getResults());
      TensorSharding split = shardingOf(rule->results.front());
      for (auto [d, expr, size] :
           llvm::enumerate(exprs, expected.front().getShape())) {
        if (isa<AffineConstantExpr>(expr) && !ShapedType::isDynamic(size))
          expr = getAffineConstantExpr(size, op->getContext());
        else if (!isa<AffineConstantExpr>(expr) && d < split.size() &&
                 !split[d].empty())
          expr = expr.floorDiv(groupSize(grid_, split[d]));
      }
      reshape.setShapeAttr(AffineMapAttr::get(AffineMap::get(
          map.getNumDims(), map.getNumSymbols(), exprs, op->getContext())));
      reshape.getResult().setType(expected.front());
    }
    if (auto expand = dyn_cast<dfg::SymbolicExpandOp>(local)) {
      // A split dimension the input has keeps the input's piece (a 1 in the
      // map); one the input broadcasts from 1 takes its expression floordiv
      // n (a constant, its local size).
      AffineMap map = expand.getShape();
      SmallVector<AffineExpr> exprs(map.getResults());
      TensorSharding split = shardingOf(rule->results.front());
      ArrayRef<int64_t> in =
          cast<RankedTensorType>(expand.getInput().getType()).getShape();
      int64_t rank = expected.front().getRank();
      int64_t inOffset = rank - int64_t(in.size());
      int64_t mapOffset = rank - int64_t(exprs.size());
      for (int64_t d = 0; d < rank; ++d) {
        if (d >= int64_t(split.size()) || split[d].empty() || d < mapOffset)
          continue;
        AffineExpr &expr = exprs[d - mapOffset];
        bool inputHas = d >= inOffset && in[d - inOffset] != 1;
        int64_t size = expected.front().getDimSize(d);
        if (inputHas)
          expr = getAffineConstantExpr(1, op->getContext());
        else if (isa<AffineConstantExpr>(expr) && !ShapedType::isDynamic(size))
          expr = getAffineConstantExpr(size, op->getContext());
        else
          expr = expr.floorDiv(groupSize(grid_, split[d]));
      }
      expand.setShapeAttr(AffineMapAttr::get(AffineMap::get(
          map.getNumDims(), map.getNumSymbols(), exprs, op->getContext())));
      expand.getResult().setType(expected.front());
    }
    // A symbolic slice keeps its sliced axes whole (its rule pins them);
    // the others are its input's pieces.
    if (auto slice = dyn_cast<dfg::SymbolicSliceOp>(local))
      slice.getResult().setType(expected.front());
    if (failed(refineTypes(local)))
      return failure();
    for (auto [r, t] : llvm::enumerate(expected)) {
      // Inference may know less than the sharding (a dynamic dimension).
      if (dfg::areCompatibleTensorTypes(local->getResult(r).getType(), t))
        local->getResult(r).setType(t);
      if (local->getResult(r).getType() != t)
        return op->emitOpError("partitions to a result #")
               << r << " of type " << local->getResult(r).getType()
               << ", but its sharding gives " << t;
    }

    for (auto [r, tf] : llvm::enumerate(rule->results)) {
      Value v = local->getResult(r);
      TensorSharding have = shardingOf(tf);
      TensorSharding want = planned(op, r);
      if (!partialAxes.empty()) {
        // Partial sums: reduce_scatter where the result is to be split over
        // exactly the contraction's axes, all_reduce otherwise.
        auto type = cast<RankedTensorType>(v.getType());
        int64_t n = groupSize(grid_, partialAxes);
        auto scatter =
            llvm::find_if(llvm::seq<size_t>(0, want.size()), [&](size_t d) {
              // Not along a bias's axis (the last): the bias added next is
              // whole there (the fuzzer found an abort on this path).
              return !byMax && want[d] == partialAxes && have[d].empty() &&
                     !type.isDynamicDim(d) && type.getDimSize(d) % n == 0 &&
                     !(bias && d + 1 == want.size());
            });
        if (scatter != llvm::seq<size_t>(0, want.size()).end()) {
          size_t d = *scatter;
          SmallVector<int64_t> shape(type.getShape());
          shape[d] /= n;
          v = shard::ReduceScatterOp::create(
              b_, loc, RankedTensorType::get(shape, type.getElementType()),
              grid_.getSymName(), partialAxes, v, shard::ReductionKind::Sum,
              APInt(64, d));
          have[d] = partialAxes;
        } else if (byMax) {
          v = shard::AllReduceOp::create(b_, loc, v.getType(),
                                         grid_.getSymName(), partialAxes, v,
                                         shard::ReductionKind::Max);
        } else {
          v = shard::AllReduceOp::create(b_, loc, v.getType(),
                                         grid_.getSymName(), partialAxes, v);
        }
      }
      if (bias)
        v = dfg::AddOp::create(b_, loc, v, bias);
      locals_[op->getResult(r)] = {convert(v, have, want, loc), want};
    }
    return success();
  }

  /// A 1-D integer constant of `type`'s element type.
  Value intConstant(Type elementType, ArrayRef<int64_t> values, Location loc) {
    unsigned width = elementType.getIntOrFloatBitWidth();
    SmallVector<APInt> bits;
    for (int64_t v : values)
      bits.push_back(APInt(width, v, /*isSigned=*/true));
    auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                      elementType);
    return dfg::ConstantOp::create(b_, loc, DenseElementsAttr::get(type, bits));
  }

  /// The vocabulary-parallel lookup of `op` (Megatron's): `table` holds this
  /// rank's block of rows, the block at its index in the group over `axes`.
  /// Ids outside the block give zero rows, so the ranks' results are
  /// partial sums of the whole lookup (the caller all_reduces them).
  Operation *lookupOwnRows(dfg::EmbeddingOp op, Value table, Value ids,
                           ArrayRef<int16_t> axes, Location loc) {
    auto idsType = cast<RankedTensorType>(ids.getType());
    Type idType = idsType.getElementType();
    int64_t n = groupSize(grid_, axes);
    int64_t vocab =
        cast<RankedTensorType>(op.getTable().getType()).getDimSize(0);
    int64_t rows = vocab / n;
    // Each rank slices its block's first row out of all of them.
    SmallVector<int64_t> starts;
    for (int64_t k = 0; k < n; ++k)
      starts.push_back(k * rows);
    Value start = shard::AllSliceOp::create(
        b_, loc, RankedTensorType::get({1}, idType),
        intConstant(idType, starts, loc), grid_.getSymName(), axes, 0);
    // One statement per op: the IR's order does not hang on the order in
    // which the compiler evaluates arguments.
    Value zero = intConstant(idType, {0}, loc);
    Value vocabSize = intConstant(idType, {vocab}, loc);
    Value blockSize = intConstant(idType, {rows}, loc);
    // Ids count from the end of the table when negative (ONNX Gather).
    Value negative = dfg::LessOp::create(b_, loc, ids, zero);
    Value up = dfg::AddOp::create(b_, loc, ids, vocabSize);
    Value wrapped = dfg::WhereOp::create(b_, loc, negative, up, ids);
    Value row = dfg::SubOp::create(b_, loc, wrapped, start);
    Value above = dfg::LessOrEqualOp::create(b_, loc, zero, row);
    Value below = dfg::LessOp::create(b_, loc, row, blockSize);
    Value mine = dfg::AndOp::create(b_, loc, above, below);
    Value safe = dfg::WhereOp::create(b_, loc, mine, row, zero);
    Value found = dfg::EmbeddingOp::create(b_, loc, table, safe);
    Type elementType = op.getType().getElementType();
    Value none = dfg::ConstantOp::create(
        b_, loc,
        DenseElementsAttr::get(RankedTensorType::get({1}, elementType),
                               b_.getFloatAttr(elementType, 0.0)));
    Value mask = dfg::UnsqueezeOp::create(b_, loc, mine, ArrayRef<int64_t>{-1});
    return dfg::WhereOp::create(b_, loc, mask, found, none);
  }

  /// Re-infers the result types of a rebuilt op from its local operands.
  LogicalResult refineTypes(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return success();
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip_equal(op->getResults(), types))
      result.setType(type);
    return success();
  }

  shard::GridOp grid_;
  func::FuncOp func_;
  OpBuilder b_;
  llvm::DenseMap<Value, Local> locals_;
  llvm::DenseMap<Operation *, dfg::ShardingRule> rules_;
  llvm::DenseMap<std::pair<Value, Attribute>, Value> conversions_;
};

/// A sum all_reduce or reduce_scatter whose result has one use.
Operation *summedOnce(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || !def->hasOneUse())
    return nullptr;
  if (auto r = dyn_cast<shard::AllReduceOp>(def))
    return r.getReduction() == shard::ReductionKind::Sum ? def : nullptr;
  if (auto r = dyn_cast<shard::ReduceScatterOp>(def))
    return r.getReduction() == shard::ReductionKind::Sum ? def : nullptr;
  return nullptr;
}

/// reduce(a) + reduce(b) as reduce(a + b), of type `type`, for two alike
/// reductions used only there; null where they are not.
Value mergeReductions(Value x, Value y, RankedTensorType type, Location loc) {
  Operation *lhs = summedOnce(x), *rhs = summedOnce(y);
  if (!lhs || !rhs || lhs == rhs || lhs->getName() != rhs->getName() ||
      lhs->getAttrDictionary() != rhs->getAttrDictionary())
    return Value();
  Value a = lhs->getOperand(0), b = rhs->getOperand(0);
  auto shapeOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  };
  if (auto scatter = dyn_cast<shard::ReduceScatterOp>(lhs)) {
    // Broadcast anywhere but along the scattered dimension.
    int64_t d = scatter.getScatterAxis().getSExtValue();
    if (shapeOf(a).size() != shapeOf(b).size() ||
        shapeOf(a)[d] != shapeOf(b)[d])
      return Value();
  }
  // Both partial sums are ready where the later reduction stands.
  OpBuilder builder(lhs->isBeforeInBlock(rhs) ? rhs : lhs);
  auto sum = dfg::AddOp::create(builder, loc, a, b);
  bool fits = isa<shard::ReduceScatterOp>(lhs)
                  ? sum.getType().getRank() == type.getRank()
                  : sum.getType() == type;
  if (!fits) {
    sum.erase();
    return Value();
  }
  Operation *merged = builder.clone(*lhs);
  merged->setOperand(0, sum);
  merged->getResult(0).setType(type);
  lhs->getResult(0).dropAllUses();
  rhs->getResult(0).dropAllUses();
  lhs->erase();
  rhs->erase();
  return merged->getResult(0);
}

/// Whether `v` may differ between the ranks of a group over `axes`: it is
/// split over one of them somewhere upstream and no collective over all of
/// them made it whole again. In the partitioned program a value varies
/// along an axis only by being split over it, or as partial sums, which
/// come from split operands too.
class Variance {
public:
  Variance(func::FuncOp func, ArrayRef<int16_t> axes)
      : func_(func), axes_(axes.begin(), axes.end()) {}

  bool varies(Value v) {
    auto it = memo_.find(v);
    if (it != memo_.end())
      return it->second;
    // Programs are thousands of ops deep: an explicit stack, not recursion.
    SmallVector<Value> stack{v};
    while (!stack.empty()) {
      Value top = stack.back();
      if (memo_.count(top)) {
        stack.pop_back();
        continue;
      }
      std::optional<bool> known = direct(top);
      if (known) {
        memo_[top] = *known;
        stack.pop_back();
        continue;
      }
      Operation *def = top.getDefiningOp();
      bool pending = false, any = false;
      for (Value operand : def->getOperands()) {
        auto found = memo_.find(operand);
        if (found == memo_.end()) {
          stack.push_back(operand);
          pending = true;
        } else {
          any |= found->second;
        }
      }
      if (!pending) {
        memo_[top] = any;
        stack.pop_back();
      }
    }
    return memo_[v];
  }

private:
  bool covers(ArrayRef<int16_t> grid) const {
    return llvm::all_of(axes_,
                        [&](int16_t a) { return llvm::is_contained(grid, a); });
  }
  bool meets(ArrayRef<int16_t> grid) const {
    return llvm::any_of(axes_,
                        [&](int16_t a) { return llvm::is_contained(grid, a); });
  }

  /// The answer where it does not depend on the operands.
  std::optional<bool> direct(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto type = cast<RankedTensorType>(arg.getType());
      TensorSharding s = fromAttr(
          func_.getArgAttr(arg.getArgNumber(), kShardingAttr), type.getRank());
      return llvm::any_of(s, [&](const DimAxes &d) { return meets(d); });
    }
    Operation *def = v.getDefiningOp();
    if (isa<dfg::WeightOp, dfg::ConstantOp>(def))
      return false;
    if (auto slice = dyn_cast<shard::AllSliceOp>(def))
      return meets(slice.getGridAxes()) ? std::optional<bool>(true)
                                        : std::nullopt;
    if (auto gather = dyn_cast<shard::AllGatherOp>(def))
      return covers(gather.getGridAxes()) ? std::optional<bool>(false)
                                          : std::nullopt;
    if (auto reduce = dyn_cast<shard::AllReduceOp>(def))
      return covers(reduce.getGridAxes()) ? std::optional<bool>(false)
                                          : std::nullopt;
    if (!isa<dfg::DfgDialect>(def->getDialect()))
      return true; // another collective: assume the worst
    return std::nullopt;
  }

  func::FuncOp func_;
  SmallVector<int16_t> axes_;
  llvm::DenseMap<Value, bool> memo_;
};

/// Whether `user`, reading the partial sums `partial`, gives partial sums of
/// its own result, no larger: it is linear in them (a view of them, a sum
/// over some of their dimensions, a slice, or a product or quotient by a
/// value that is the same on every rank of the group) and its result has
/// no more elements.
bool keepsPartialSums(Operation *user, Value partial, Variance &variance) {
  if (user->getNumResults() != 1)
    return false;
  // An expand that changes nothing.
  if (isa<dfg::ExpandOp>(user))
    return user->getResult(0).getType() == partial.getType();
  // Updates written into zeros at indices the same on every rank: each
  // element of the result is one update's element or zero (JetMoE's experts
  // returning to their tokens).
  if (auto scatter = dyn_cast<dfg::ScatterNDOp>(user))
    return dfg::isZeroFill(scatter.getData()) &&
           scatter.getUpdates() == partial && scatter.getData() != partial &&
           scatter.getIndices() != partial &&
           !variance.varies(scatter.getIndices());
  // A select between them and zeros by a condition the same on every rank
  // (a mixture's rows that an expert did not take), and a sum with zeros.
  if (auto where = dyn_cast<dfg::WhereOp>(user)) {
    Value other = where.getLhs() == partial ? where.getRhs() : where.getLhs();
    return user->getResult(0).getType() == partial.getType() &&
           where.getCondition() != partial && other != partial &&
           dfg::isZeroFill(other) && !variance.varies(where.getCondition());
  }
  if (isa<dfg::AddOp>(user)) {
    Value other = user->getOperand(0) == partial ? user->getOperand(1)
                                                 : user->getOperand(0);
    return user->getResult(0).getType() == partial.getType() &&
           other != partial && dfg::isZeroFill(other);
  }
  if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp, dfg::SqueezeOp,
          dfg::UnsqueezeOp, dfg::TransposeOp, dfg::ReduceSumOp, dfg::SliceOp,
          dfg::NegOp>(user))
    return user->getOperand(0) == partial &&
           llvm::all_of(user->getOperands().drop_front(),
                        [&](Value v) { return !variance.varies(v); });
  if (!isa<dfg::MulOp, dfg::DivOp>(user) ||
      user->getResult(0).getType() != partial.getType())
    return false;
  Value lhs = user->getOperand(0), rhs = user->getOperand(1);
  if (lhs == rhs)
    return false; // a square
  if (lhs == partial)
    return !variance.varies(rhs);
  return isa<dfg::MulOp>(user) && !variance.varies(lhs);
}

/// A sum all_reduce read by one op that keeps partial sums moves after that
/// op, as far as such ops go: a mixture's routed experts, weighted per token
/// and summed over the chosen experts, reach the residual add as partial
/// sums, beside the shared expert's, and the two cross the wire once
/// (mergeSummedReductions). Each step leaves as many or fewer elements to
/// reduce.
void sinkReductions(func::FuncOp func) {
  SmallVector<shard::AllReduceOp> reductions;
  func.walk([&](shard::AllReduceOp op) {
    if (op.getReduction() == shard::ReductionKind::Sum)
      reductions.push_back(op);
  });
  for (shard::AllReduceOp reduce : reductions) {
    Variance variance(func, reduce.getGridAxes());
    while (reduce->hasOneUse()) {
      Operation *user = *reduce->getUsers().begin();
      Value partial = reduce.getInput();
      if (!keepsPartialSums(user, reduce.getResult(), variance))
        break;
      user->replaceUsesOfWith(reduce.getResult(), partial);
      OpBuilder b(user->getContext());
      b.setInsertionPointAfter(user);
      Value result = user->getResult(0);
      auto moved = shard::AllReduceOp::create(
          b, reduce.getLoc(), result.getType(), reduce.getGridAttr(),
          reduce.getGridAxesAttr(), result, reduce.getReductionAttr());
      result.replaceAllUsesExcept(moved.getResult(), moved);
      reduce.erase();
      reduce = moved;
    }
  }
}

/// An op linear in several sum all_reduces used only there (a select
/// between them by a condition the same on every rank, a concat of them) as
/// one all_reduce of the op on their partial sums: a mixture's experts,
/// joined per token by selects (JetMoE's dynamo export) or by a concat of
/// each expert's rows (its TorchScript export), cross the wire once.
/// Returns the new reduction, or null where `op` is not such a join.
Value mergeJoinedReductions(Operation *op) {
  SmallVector<unsigned> partials;
  if (isa<dfg::WhereOp>(op))
    partials = {1, 2};
  else if (isa<dfg::ConcatOp>(op))
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      partials.push_back(i);
  else
    return Value();
  SmallVector<shard::AllReduceOp> reductions;
  for (unsigned i : partials) {
    auto reduce =
        dyn_cast_or_null<shard::AllReduceOp>(summedOnce(op->getOperand(i)));
    if (!reduce || llvm::is_contained(reductions, reduce) ||
        (!reductions.empty() && reduce->getAttrDictionary() !=
                                    reductions.front()->getAttrDictionary()))
      return Value();
    reductions.push_back(reduce);
  }
  Variance variance(op->getParentOfType<func::FuncOp>(),
                    reductions.front().getGridAxes());
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (!llvm::is_contained(partials, i) && variance.varies(operand))
      return Value();
  for (auto [i, reduce] : llvm::zip(partials, reductions))
    op->setOperand(i, reduce.getInput());
  for (shard::AllReduceOp reduce : reductions)
    reduce.erase();
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Value result = op->getResult(0);
  shard::AllReduceOp first = reductions.front();
  auto merged = shard::AllReduceOp::create(
      b, op->getLoc(), result.getType(), first.getGridAttr(),
      first.getGridAxesAttr(), result, first.getReductionAttr());
  result.replaceAllUsesExcept(merged.getResult(), merged);
  return merged.getResult();
}

/// Where mergeSummedReductions joins sum reductions into one.
bool joinsReductions(Operation *op) {
  return isa<dfg::AddOp, dfg::LayerNormOp, dfg::RmsNormOp, dfg::WhereOp,
             dfg::ConcatOp>(op);
}

/// Two sum reductions that meet in an add (or a norm's fused residual) and
/// nowhere else become one reduction of the added partial sums, which cross
/// the wire once. The embeddings that GPT-2 and BERT sum (word, position,
/// token type), each vocabulary-parallel, need one all_reduce, not three.
void mergeSummedReductions(func::FuncOp func) {
  SmallVector<Operation *> sites;
  func.walk([&](Operation *op) {
    if (joinsReductions(op))
      sites.push_back(op);
  });
  for (Operation *op : sites) {
    Location loc = op->getLoc();
    if (isa<dfg::WhereOp, dfg::ConcatOp>(op)) {
      mergeJoinedReductions(op);
      continue;
    }
    if (auto add = dyn_cast<dfg::AddOp>(op)) {
      if (Value v =
              mergeReductions(add.getLhs(), add.getRhs(),
                              cast<RankedTensorType>(add.getType()), loc)) {
        add.replaceAllUsesWith(v);
        add.erase();
      }
      continue;
    }
    auto fold = [&](auto norm) {
      if (!norm.getResidual())
        return;
      auto type = cast<RankedTensorType>(norm.getInput().getType());
      Value v = mergeReductions(norm.getInput(), norm.getResidual(), type, loc);
      if (!v)
        return;
      OpBuilder b(norm);
      auto plain = decltype(norm)::create(
          b, loc, type, TypeRange(), v, norm.getScale(), norm.getBias(),
          Value(), norm.getAxisAttr(), norm.getEpsilonAttr());
      norm.getResult().replaceAllUsesWith(plain.getResult());
      norm.getSum().front().replaceAllUsesWith(v);
      norm.erase();
    };
    if (auto norm = dyn_cast<dfg::LayerNormOp>(op))
      fold(norm);
    else if (auto norm = dyn_cast<dfg::RmsNormOp>(op))
      fold(norm);
  }
}

/// Moves `op` to just after `point` (in the same block) with what it reads
/// that stands after `point`, operands first; false, moving nothing, where
/// one of them is not a local computation (a collective, an op with
/// regions).
bool hoistAfter(Operation *op, Operation *&point) {
  SmallVector<Operation *> order;
  llvm::SmallPtrSet<Operation *, 8> seen;
  // Post-order over the defining ops that stand after `point`.
  SmallVector<std::pair<Operation *, bool>> stack{{op, false}};
  while (!stack.empty()) {
    auto [top, expanded] = stack.pop_back_val();
    if (expanded) {
      order.push_back(top);
      continue;
    }
    if (!seen.insert(top).second)
      continue;
    if (top->getBlock() != point->getBlock() || top->getNumRegions() != 0 ||
        !(isa<dfg::DfgDialect>(top->getDialect()) ||
          isa<shard::AllSliceOp>(top)))
      return false;
    stack.push_back({top, true});
    for (Value v : top->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == point->getBlock() &&
          point->isBeforeInBlock(def))
        stack.push_back({def, false});
  }
  for (Operation *moved : order) {
    moved->moveAfter(point);
    point = moved;
  }
  return true;
}

/// Sum all_reduces of projections that read the same input (the parts of a
/// packed projection that the plan cut apart: Mamba's x_proj into dt, B and
/// C) ==> one all_reduce of their outputs joined along the last axis, cut
/// again after it: one collective where there were several, of the same
/// bytes.
void mergeSiblingReductions(func::FuncOp func) {
  llvm::MapVector<std::pair<Value, Attribute>, SmallVector<shard::AllReduceOp>>
      groups;
  func.walk([&](shard::AllReduceOp reduce) {
    Operation *def = reduce.getInput().getDefiningOp();
    auto matmul = dyn_cast_or_null<dfg::MatMulOp>(def);
    bool projection =
        isa_and_nonnull<dfg::LinearOp>(def) ||
        (matmul &&
         cast<RankedTensorType>(matmul.getRhs().getType()).getRank() == 2);
    if (reduce.getReduction() == shard::ReductionKind::Sum && projection &&
        def->hasOneUse())
      groups[{def->getOperand(0), reduce->getAttrDictionary()}].push_back(
          reduce);
  });
  for (auto &[key, reductions] : groups) {
    if (reductions.size() < 2)
      continue;
    SmallVector<Operation *> parts;
    for (shard::AllReduceOp reduce : reductions)
      parts.push_back(reduce.getInput().getDefiningOp());
    if (llvm::any_of(parts, [&](Operation *p) {
          return p->getBlock() != parts.front()->getBlock();
        }))
      continue;
    // Partial sums that are joined further on (experts on the same rows
    // joined by a select), each through ops that keep partial sums, are
    // reduced once where they meet (mergeSummedReductions), with fewer
    // bytes than joined here.
    Variance variance(func, reductions.front().getGridAxes());
    llvm::SmallPtrSet<Operation *, 16> reached;
    bool meet = false;
    for (shard::AllReduceOp reduce : reductions) {
      Value partial = reduce.getResult();
      for (int step = 0; step < 8 && !meet && partial.hasOneUse(); ++step) {
        Operation *user = *partial.getUsers().begin();
        if (joinsReductions(user))
          meet = !reached.insert(user).second;
        if (!keepsPartialSums(user, partial, variance))
          break;
        partial = user->getResult(0);
      }
    }
    if (meet)
      continue;
    // In program order, the parts and their reductions alike.
    llvm::sort(reductions, [](shard::AllReduceOp x, shard::AllReduceOp y) {
      return x.getInput().getDefiningOp()->isBeforeInBlock(
          y.getInput().getDefiningOp());
    });
    for (auto [p, reduce] : llvm::zip_equal(parts, reductions))
      p = reduce.getInput().getDefiningOp();
    auto type = cast<RankedTensorType>(parts.front()->getResult(0).getType());
    int64_t rank = type.getRank(), width = 0;
    bool alike = true;
    for (Operation *p : parts) {
      auto t = cast<RankedTensorType>(p->getResult(0).getType());
      alike &= t.getElementType() == type.getElementType() &&
               t.getShape().drop_back() == type.getShape().drop_back() &&
               !ShapedType::isDynamic(t.getShape().back());
      width += t.getShape().back();
    }
    if (!alike)
      continue;
    // Every reduction's readers must stand after the joined one.
    Operation *point = parts.front();
    for (Operation *p : ArrayRef(parts).drop_front())
      if (!hoistAfter(p, point))
        break;
    bool readersAfter = llvm::all_of(reductions, [&](shard::AllReduceOp r) {
      return llvm::all_of(r->getUsers(), [&](Operation *user) {
        return user->getBlock() == point->getBlock() &&
               point->isBeforeInBlock(user);
      });
    });
    if (!readersAfter || !llvm::all_of(parts, [&](Operation *p) {
          return p == point || p->isBeforeInBlock(point);
        }))
      continue;
    OpBuilder b(point->getContext());
    b.setInsertionPointAfter(point);
    Location loc = reductions.front().getLoc();
    SmallVector<int64_t> joinedShape(type.getShape());
    joinedShape.back() = width;
    auto joinedType = RankedTensorType::get(joinedShape, type.getElementType());
    SmallVector<Value> partials;
    for (Operation *p : parts)
      partials.push_back(p->getResult(0));
    Value joined = dfg::ConcatOp::create(b, loc, joinedType, partials,
                                         b.getI64IntegerAttr(rank - 1));
    shard::AllReduceOp first = reductions.front();
    Value summed = shard::AllReduceOp::create(
        b, loc, joinedType, first.getGridAttr(), first.getGridAxesAttr(),
        joined, first.getReductionAttr());
    int64_t start = 0;
    for (auto [p, reduce] : llvm::zip_equal(parts, reductions)) {
      int64_t n =
          cast<RankedTensorType>(p->getResult(0).getType()).getShape().back();
      Value piece = dfg::SliceOp::create(b, reduce.getLoc(), summed, {start},
                                         {start + n}, {rank - 1}, {1});
      reduce.getResult().replaceAllUsesWith(piece);
      start += n;
    }
    // Erased last: the builder inserts before the op after `point`, which
    // may be one of them.
    for (shard::AllReduceOp reduce : reductions)
      reduce.erase();
  }
}

class ShardPartitionPass
    : public impl::ShardPartitionPassBase<ShardPartitionPass> {
public:
  void runOnOperation() override {
    if (failed(forEachFunctionOnGrid(
            getOperation(), [](func::FuncOp func, shard::GridOp grid) {
              if (failed(Partitioner(grid, func).run()))
                return failure();
              mergeSiblingReductions(func);
              sinkReductions(func);
              mergeSummedReductions(func);
              // What the merges leave may move further (a join's reduction
              // past the routing weights that scale it).
              sinkReductions(func);
              mergeSummedReductions(func);
              return success();
            })))
      signalPassFailure();
  }
};

} // namespace
} // namespace meshc
