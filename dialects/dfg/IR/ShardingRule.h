//===- ShardingRule.h - The factor rule an op is sharded by -----*- C++ -*-===//
//
// Part of meshc. The sharding model of a dfg op, as a factor rule: the op's
// iteration space is a list of factors (loops), and each dimension of each
// operand and result is a product of factors, outermost first. A reshape
// [B,S,H*D] -> [B,S,H,D] has factors b, s, h, d; its input's last dimension
// is (h, d) and its result's dimensions are (b), (s), (h), (d). Sharding a
// dimension over mesh axes shards its outermost factor; the other factors of
// that dimension stay whole. This is the information the upstream
// ShardingInterface carries in iterator types and indexing maps, extended to
// the dimension merges and splits that reshapes, grouped-query heads and
// packed projections need.
//
// Each op states its rule through ShardingRuleOpInterface (DfgInterfaces.td);
// the builder and the rules shared by families of ops are here.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_SHARDINGRULE_H
#define MESHC_DIALECTS_DFG_IR_SHARDINGRULE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <cstdint>
#include <string>

namespace mlir {
class Operation;
} // namespace mlir

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
  /// A Reduction whose partial results combine by their largest (a
  /// reduce_max: an all_reduce max completes it), not by their sum.
  bool byMax = false;
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

/// Builds a rule operand by operand, result by result.
class RuleBuilder {
public:
  /// A new factor; its index.
  int factor(int64_t size, FactorKind kind, const llvm::Twine &name);

  /// One factor per dimension of `shape` (none for a size-1 dimension).
  TensorFactors fresh(llvm::ArrayRef<int64_t> shape, FactorKind kind);

  /// The factors of `shape` broadcast to `target` (aligned at the right):
  /// a dimension of size 1 where the target's is not carries no factor.
  static TensorFactors broadcastTo(llvm::ArrayRef<int64_t> shape,
                                   llvm::ArrayRef<int64_t> targetShape,
                                   const TensorFactors &target);

  /// A pinned factor of its own for dimension `d` of `shape` (none when the
  /// dimension has size 1).
  DimFactors pinned(llvm::ArrayRef<int64_t> shape, int64_t d);

  /// A factor of `size` and `kind`, none when `size` is 1.
  DimFactors maybe(int64_t size, FactorKind kind, const llvm::Twine &name);

  void operand(TensorFactors t) { rule_.operands.push_back(std::move(t)); }
  void result(TensorFactors t) { rule_.results.push_back(std::move(t)); }
  Factor &at(int f) { return rule_.factors[f]; }
  ShardingRule take() { return std::move(rule_); }

private:
  ShardingRule rule_;
};

// Rules shared by families of ops. Operands and results are ranked tensors.

/// Elementwise with broadcasting: the result's dimensions are parallel;
/// every operand reuses the factors of the dimensions it does not broadcast.
ShardingRule elementwiseRule(mlir::Operation *op);

/// Every dimension whole on every rank: operands and results replicated.
ShardingRule replicatedRule(mlir::Operation *op);

/// Operand 0 and every result matched dimension by dimension, except that
/// the `pinnedDims` get factors of their own held whole.
ShardingRule sameShapeRule(mlir::Operation *op,
                           llvm::ArrayRef<int64_t> pinnedDims);

/// Operands and results share every dimension but `axis`, which each of
/// them holds whole (concat's inputs, split's results).
ShardingRule alongAxisRule(mlir::Operation *op, int64_t axis);

/// The input's factors with the non-unit dimensions matched in order
/// (squeeze and unsqueeze only add or drop dimensions of size 1).
ShardingRule unitDimsRule(mlir::Operation *op);

/// How a reduction combines its elements, for its sharding rule.
enum class Combine { Sum, Max, Other };

/// result = input with `axes` reduced (all of them when empty); summing
/// over a sharded axis leaves partial sums (an all_reduce sum completes
/// them), taking the largest leaves partial maxima (an all_reduce max), any
/// other reduction (a mean) needs the axis whole.
ShardingRule reductionRule(mlir::Operation *op, llvm::ArrayRef<int64_t> axes,
                           bool keepDims, Combine combine);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_IR_SHARDINGRULE_H
