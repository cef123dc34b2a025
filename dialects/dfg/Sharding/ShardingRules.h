//===- ShardingRules.h - How each dfg op may be sharded ---------*- C++ -*-===//
//
// Part of meshc. The sharding model of every dfg op, as a factor rule: the
// op's iteration space is a list of factors (loops), and each dimension of
// each operand and result is a product of factors, outermost first. A
// reshape [B,S,H*D] -> [B,S,H,D] has factors b, s, h, d; its input's last
// dimension is (h, d) and its result's dimensions are (b), (s), (h), (d).
// Sharding a dimension over mesh axes shards its outermost factor; the other
// factors of that dimension stay whole. This is the information the upstream
// ShardingInterface carries in iterator types and indexing maps, extended to
// the dimension merges and splits that reshapes, grouped-query heads and
// packed projections need.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H
#define MESHC_DIALECTS_DFG_SHARDING_SHARDINGRULES_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace meshc::dfg {

/// What sharding a factor means for the op.
enum class FactorKind {
  /// Each rank computes its slice of the results independently.
  Parallel,
  /// The op sums over the factor: sharded, each rank holds a partial sum of
  /// the results, which an all_reduce (or reduce_scatter) completes.
  Reduction,
  /// The op needs the whole factor on every rank (a softmax or norm axis, a
  /// sliced or concatenated axis): a sharded operand is gathered first.
  Pinned,
};

struct Factor {
  /// ShapedType::kDynamic when unknown.
  int64_t size;
  FactorKind kind;
  /// Short name for diagnostics ("heads", "in_features", "dim 2").
  std::string name;
};

/// The factors of one tensor dimension, outermost first; empty for a
/// dimension of size 1 (or broadcast), which is never sharded.
using DimFactors = llvm::SmallVector<int, 2>;
using TensorFactors = llvm::SmallVector<DimFactors, 4>;

struct ShardingRule {
  llvm::SmallVector<Factor> factors;
  llvm::SmallVector<TensorFactors> operands;
  llvm::SmallVector<TensorFactors> results;
};

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
