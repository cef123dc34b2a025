//===- ShardingRules.cpp - How each dfg op may be sharded -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace meshc::dfg {
namespace {

bool hasRankedOperands(Operation *op) {
  auto ranked = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::all_of(op->getOperandTypes(), ranked) &&
         llvm::all_of(op->getResultTypes(), ranked);
}

} // namespace

FailureOr<ShardingRule> getShardingRule(Operation *op) {
  if (!isa<DfgDialect>(op->getDialect()))
    return op->emitOpError("has no sharding rule (not a dfg op)");
  if (!hasRankedOperands(op))
    return op->emitOpError(
        "has no sharding rule: its operands and results must be ranked "
        "tensors");
  if (isa<ElementwiseOpInterface>(op))
    return elementwiseRule(op);
  if (auto ruled = dyn_cast<ShardingRuleOpInterface>(op))
    return ruled.getShardingRule();
  return op->emitOpError("has no sharding rule");
}

namespace {
int64_t groupOf(ArrayRef<int16_t> axes, ArrayRef<int64_t> gridShape) {
  int64_t n = 1;
  for (int16_t a : axes)
    n *= gridShape[a];
  return n;
}
} // namespace

FailureOr<SmallVector<GridAxes>> distributeAxes(const ShardingRule &rule,
                                                const DimFactors &dims,
                                                ArrayRef<int16_t> axes,
                                                ArrayRef<int64_t> gridShape) {
  SmallVector<GridAxes> out(dims.size());
  size_t next = 0;
  for (auto [k, f] : llvm::enumerate(dims)) {
    if (next == axes.size())
      break;
    int64_t size = rule.factors[f].size;
    if (ShapedType::isDynamic(size)) {
      out[k].assign(axes.begin() + next, axes.end());
      next = axes.size();
      break;
    }
    int64_t group = 1;
    while (next < axes.size() && size % (group * gridShape[axes[next]]) == 0)
      group *= gridShape[axes[next]], out[k].push_back(axes[next++]);
    if (next < axes.size() && group != size)
      return failure();
  }
  if (next != axes.size())
    return failure();
  return out;
}

GridAxes dimensionAxes(const ShardingRule &rule, const DimFactors &dims,
                       ArrayRef<GridAxes> factorAxes,
                       ArrayRef<int64_t> gridShape) {
  GridAxes axes;
  for (int f : dims) {
    const GridAxes &mine = factorAxes[f];
    axes.append(mine.begin(), mine.end());
    if (mine.empty() || groupOf(mine, gridShape) != rule.factors[f].size)
      break;
  }
  return axes;
}

SmallVector<GridAxes> assignFactors(const ShardingRule &rule,
                                    ArrayRef<SmallVector<GridAxes, 4>> operands,
                                    ArrayRef<SmallVector<GridAxes, 4>> results,
                                    ArrayRef<int64_t> gridShape,
                                    ArrayRef<GridAxes> preset) {
  size_t n = rule.factors.size();
  SmallVector<GridAxes> factors(n);
  if (!preset.empty())
    factors.assign(preset.begin(), preset.end());
  SmallVector<bool> inResult(n, false);
  for (const TensorFactors &tf : rule.results)
    for (const DimFactors &dims : tf)
      for (int f : dims)
        inResult[f] = true;
  auto clashes = [&](ArrayRef<int16_t> axes) {
    return llvm::any_of(factors, [&](const GridAxes &other) {
      return llvm::any_of(
          axes, [&](int16_t a) { return llvm::is_contained(other, a); });
    });
  };
  // Gives the factors of one dimension the axes it is split over, where
  // `admit` takes each factor and none is pinned, taken or clashing.
  auto assign = [&](ArrayRef<int16_t> axes, const DimFactors &dims,
                    llvm::function_ref<bool(int)> admit) {
    if (axes.empty() || dims.empty() || clashes(axes))
      return;
    FailureOr<SmallVector<GridAxes>> split =
        distributeAxes(rule, dims, axes, gridShape);
    if (failed(split))
      return;
    for (auto [f, mine] : llvm::zip(dims, *split))
      if (!mine.empty() &&
          (!admit(f) || rule.factors[f].kind == FactorKind::Pinned ||
           !factors[f].empty()))
        return;
    for (auto [f, mine] : llvm::zip(dims, *split))
      if (!mine.empty())
        factors[f] = mine;
  };
  // Contractions first: sharded as their operands are.
  for (auto [sharding, tf] : llvm::zip_equal(operands, rule.operands))
    for (auto [axes, dims] : llvm::zip_equal(sharding, tf))
      assign(axes, dims, [&](int f) { return !inResult[f]; });
  // Then the results' planned shardings, where the axes are free (with a
  // contraction over tp, a result split over tp is reached by a
  // reduce_scatter after the op instead).
  for (auto [sharding, tf] : llvm::zip_equal(results, rule.results))
    for (auto [axes, dims] : llvm::zip_equal(sharding, tf))
      assign(axes, dims, [](int) { return true; });
  dropUnreachableFactors(rule, factors, gridShape);
  return factors;
}

SmallVector<GridAxes> presetFactors(Operation *op, const ShardingRule &rule) {
  SmallVector<GridAxes> preset;
  if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>(kVocabAxesAttr)) {
    preset.resize(rule.factors.size());
    preset[rule.operands[0][0].front()].assign(axes.asArrayRef().begin(),
                                               axes.asArrayRef().end());
  }
  return preset;
}

void dropUnreachableFactors(const ShardingRule &rule,
                            SmallVectorImpl<GridAxes> &factorAxes,
                            ArrayRef<int64_t> gridShape) {
  for (bool changed = true; changed;) {
    changed = false;
    auto visit = [&](const DimFactors &dims) {
      bool reachable = true;
      for (int f : dims) {
        if (!reachable && !factorAxes[f].empty()) {
          factorAxes[f].clear();
          changed = true;
        }
        reachable = reachable && !factorAxes[f].empty() &&
                    groupOf(factorAxes[f], gridShape) == rule.factors[f].size;
      }
    };
    for (const TensorFactors &tf : rule.operands)
      llvm::for_each(tf, visit);
    for (const TensorFactors &tf : rule.results)
      llvm::for_each(tf, visit);
  }
}

SmallVector<GridAxes, 4> tensorAxes(const ShardingRule &rule,
                                    const TensorFactors &tf,
                                    ArrayRef<GridAxes> factorAxes,
                                    ArrayRef<int64_t> gridShape) {
  SmallVector<GridAxes, 4> s(tf.size());
  for (auto [axes, dims] : llvm::zip_equal(s, tf))
    axes = dimensionAxes(rule, dims, factorAxes, gridShape);
  return s;
}

} // namespace meshc::dfg
