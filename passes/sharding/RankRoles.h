//===- RankRoles.h - Per-rank programs of an SPMD program -------*- C++ -*-===//
//
// Part of meshc. From the verified SPMD program of meshc-shard-pipeline, the
// program each rank runs (meshc-shard-specialize-rank), and the distinct ones:
// ranks whose programs are identical (dp replicas) form one role.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_SHARDING_RANKROLES_H
#define MESHC_PASSES_SHARDING_RANKROLES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"

namespace meshc {

/// Rewrites `module` in place into the program of `rank` (row-major over
/// the module's grid); see meshc-shard-specialize-rank. Errors at the op that
/// cannot be specialized.
mlir::LogicalResult specializeForRank(mlir::ModuleOp module, int64_t rank);

/// Moves the slices of values made from weights by data movement alone
/// (views, and concats such as padding's) onto the weights, so that a rank
/// reads its shard, not the whole weight (passes/sharding/WeightSlices.cpp).
/// Part of specializeForRank.
void moveSlicesToWeights(mlir::ModuleOp module);

/// One distinct per-rank program and the ranks that run it.
struct RankRole {
  llvm::SmallVector<int64_t> ranks;
  mlir::OwningOpRef<mlir::ModuleOp> program;
};

/// The programs of every rank of `sharded`, canonicalized, grouped into
/// roles of identical programs, in the order of their first rank.
mlir::FailureOr<llvm::SmallVector<RankRole>>
buildRankRoles(mlir::ModuleOp sharded);

} // namespace meshc

#endif // MESHC_PASSES_SHARDING_RANKROLES_H
