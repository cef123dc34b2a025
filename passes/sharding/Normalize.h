//===- Normalize.h - Rewrites before sharding -------------------*- C++ -*-===//
//
// Part of meshc. Rewrites the planner (Plan.cpp) runs before it chooses
// shardings, so that what exporters write keeps a dimension the factor rules
// can split: the batch of a gather at index tuples (on every mesh), and,
// with a tp axis, what they write around heads.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_SHARDING_NORMALIZE_H
#define MESHC_PASSES_SHARDING_NORMALIZE_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace mlir {
class Value;
class Operation;
class Location;
} // namespace mlir

namespace meshc {

/// A location as a user reads it: an ONNX node's name where there is one
/// (Plan.cpp).
std::string describeLocation(mlir::Location loc);

/// A weight, a constant, or a slice, reshape or transpose of one, or a
/// concat of such (a weight padded with zeros, PadHeads.cpp): the same on
/// every rank, so each use slices it as it needs (Plan.cpp).
bool isSource(mlir::Value v);

/// A gather_nd whose first tuple component is the tuple's own position along
/// the batch (the dynamo exporter's padding mask `mask[batch_idx, kv_idx]`)
/// becomes a gather_nd with one more batch dimension over the other
/// components, so that dp splits it by rows (BatchGathers.cpp). Returns
/// whether anything was rewritten.
bool batchPositionalGathers(mlir::func::FuncOp func);

/// Attention heads that tp does not divide, padded with zero-weight heads to
/// a multiple of tp where every op they reach treats heads independently and
/// they end in projections or go unused (PadHeads.cpp); each padded group is
/// said in a note, and so is the op that stopped a group from being padded.
void padUnevenHeads(mlir::func::FuncOp func, int64_t tp);

/// The KV head count padUnevenHeads pads `kvHeads` to on `tp`: the least
/// count at least `kvHeads` that tp divides or is a multiple of (itself when
/// it already is).
int64_t paddedKvHeads(int64_t kvHeads, int64_t tp);

/// When `op` is a written-out repeat of KV heads for their query heads (an
/// unraised GQA, transformers' repeat_kv): a dfg.reshape merging axes a and
/// a + 1 of an expand's [..., kv, g, ...] (g copies of each KV head) into
/// [..., kv * g, ...]. Returns a.
std::optional<int64_t> repeatMergeAxis(mlir::Operation *op);

/// Ops on a tensor whose leading dimensions a reshape merged ([B, H, S, D]
/// -> [B*H, S, D]) and that treat the merged dimension as independent rows
/// are rebuilt on the unmerged tensor, up to the reshapes that split it back
/// (UnmergeLeading.cpp). Returns whether anything was rebuilt.
bool unmergeLeadingDims(mlir::func::FuncOp func);

/// The highest rank the executables hold (meshc::rt::kMaxRank): the
/// rewrites that give merged dimensions their own lift no tensor past it.
inline constexpr int64_t kMaxTensorRank = 8;

/// Ops that treat each row of a tensor's last axis alike (norms over it,
/// elementwise ops whose other operands vary along it at most), on tensors
/// that reshapes merged into rows of that axis ([B, S, H*D] -> [B*S*H, D],
/// or [B, S*H, D]), are rebuilt on the rows given dimensions of their own
/// ([B, S, H, D]) up to the reshapes that read them (UnmergeLeading.cpp).
void unmergeRowGroups(mlir::func::FuncOp func);

/// Selections of a contiguous block of heads from a [..., heads, d] view of
/// a projection (a slice, a gather at constant indices, a gather_nd after a
/// transpose) become slices of the projection's features, the column blocks
/// splitSlicedProjections splits (HeadSlices.cpp).
void sliceHeadSelections(mlir::func::FuncOp func);

/// Whether decomposeRmsNorm can rewrite `op`: a dfg.rms_norm over the last
/// axis, of static size, with a 1-D scale and no bias or fused residual.
bool isDecomposableNorm(mlir::Operation *op);

/// Rewrites a norm isDecomposableNorm accepts as a sum of squares and
/// elementwise ops, so that a split of its features sums partial squares
/// (one all_reduce of [..., 1]) instead of gathering them (SplitNorms.cpp).
/// Returns the value that replaced its result.
mlir::Value decomposeRmsNorm(mlir::Operation *norm);

/// The ops decomposeRmsNorm writes, built before `norm`, which stays as it
/// is; returns their result.
mlir::Value buildRmsNormSum(mlir::Operation *norm);

/// Every floating-point reduce_mean becomes a reduce_sum divided by its
/// static count, which splits where a mean is pinned (SplitNorms.cpp).
void meansToSums(mlir::func::FuncOp func);

} // namespace meshc

#endif // MESHC_PASSES_SHARDING_NORMALIZE_H
