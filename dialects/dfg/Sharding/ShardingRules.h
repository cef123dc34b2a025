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

/// The grid axes every factor of `rule` is split over, as partition
/// realises an op whose operands are sharded as `operands` and whose results
/// are planned as `results` (one list of axes per dimension each): factors
/// that reach no result (contractions) take their operands' axes, then the
/// others take the results' where the axes are still free; a pinned factor
/// stays whole. `preset` fixes factors in advance (a vocabulary-parallel
/// table's rows); it is empty or has one entry per factor.
llvm::SmallVector<GridAxes>
assignFactors(const ShardingRule &rule,
              llvm::ArrayRef<llvm::SmallVector<GridAxes, 4>> operands,
              llvm::ArrayRef<llvm::SmallVector<GridAxes, 4>> results,
              llvm::ArrayRef<int64_t> gridShape,
              llvm::ArrayRef<GridAxes> preset = {});

/// The factors fixed before assignFactors: a vocabulary-parallel embedding's
/// table rows (`meshc.vocab_axes`, set by the planner); empty otherwise.
llvm::SmallVector<GridAxes> presetFactors(mlir::Operation *op,
                                          const ShardingRule &rule);

/// Clears the axes of every factor that some dimension holds behind a factor
/// not split whole (a dimension (b, h) of a reshape with only h split): no
/// sharding of that dimension gives each rank its slice of h.
void dropUnreachableFactors(const ShardingRule &rule,
                            llvm::SmallVectorImpl<GridAxes> &factorAxes,
                            llvm::ArrayRef<int64_t> gridShape);

/// The sharding (axes per dimension) of a tensor whose factors are `tf`,
/// when the factors are split as `factorAxes` says.
llvm::SmallVector<GridAxes, 4> tensorAxes(const ShardingRule &rule,
                                          const TensorFactors &tf,
                                          llvm::ArrayRef<GridAxes> factorAxes,
                                          llvm::ArrayRef<int64_t> gridShape);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H
