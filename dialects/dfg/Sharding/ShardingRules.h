//===- ShardingRules.h - How each dfg op may be sharded ---------*- C++ -*-===//
//
// Part of meshc. The factor rule of any dfg op (the model is described in
// dialects/dfg/IR/ShardingRule.h; each op states its rule through
// ShardingRuleOpInterface), and how grid axes distribute over a dimension's
// factors.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H
#define MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H

#include "dialects/dfg/IR/ShardingRule.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace meshc::dfg {

/// The factor rule of a dfg op. Fails, with an error at the op, for an op
/// that is not a dfg op or whose operands are not ranked tensors.
mlir::FailureOr<ShardingRule> getShardingRule(mlir::Operation *op);

/// Grid axes, major to minor (the entries of a shard.grid's split_axes).
using GridAxes = llvm::SmallVector<int16_t, 2>;

/// How a dimension split over `axes` (of a grid of shape `gridShape`)
/// shards the dimension's factors `dims`, outermost first: each factor takes
/// the leading axes whose group divides it; the next factor starts only
/// where that group fills its factor exactly. A dimension (kv_heads=2,
/// group=4) split over axes of sizes (2, 2) gives kv_heads the first axis
/// and group the second. Fails where the axes do not fit so.
mlir::FailureOr<llvm::SmallVector<GridAxes>>
distributeAxes(const ShardingRule &rule, const DimFactors &dims,
               llvm::ArrayRef<int16_t> axes, llvm::ArrayRef<int64_t> gridShape);

/// The axes a dimension is split over when its factors `dims` are sharded
/// as `factorAxes` says (indexed by factor): the outermost factor's axes,
/// then the next factor's while each one before is split whole.
GridAxes dimensionAxes(const ShardingRule &rule, const DimFactors &dims,
                       llvm::ArrayRef<GridAxes> factorAxes,
                       llvm::ArrayRef<int64_t> gridShape);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H
