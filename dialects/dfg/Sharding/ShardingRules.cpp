//===- ShardingRules.cpp - How each dfg op may be sharded -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "dialects/dfg/IR/DfgOps.h"

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

} // namespace meshc::dfg
