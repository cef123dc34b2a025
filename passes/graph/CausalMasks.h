//===- CausalMasks.h - Causal masks over symbolic lengths -------*- C++ -*-===//
//
// Part of meshc. Recognises the causal masks exporters build when the
// sequence and past lengths are symbolic, so that the attention raise can
// state them as `causal = true`; at static lengths, a mask or factor whose
// values are known is checked element by element.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_GRAPH_CAUSALMASKS_H
#define MESHC_PASSES_GRAPH_CAUSALMASKS_H

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/SymbolicDims.h"

namespace meshc::graph {

/// True if `mask` (bool: true keeps; float: 0 keeps, below -1000 masks),
/// broadcast to [batch, heads, queries, keys], is "key j visible to query i
/// iff j <= i + past" for the symbolic `queries` and `past`. Two spellings:
///   - GPT-2's buffer: a constant lower-triangular [1, 1, M, N] bias sliced
///     to rows [past, past + queries) and columns [0, keys);
///   - a comparison (<=, <, >=, >, or its negation) of two integer functions
///     of the query row i and key column j that reduces to
///     `j - i - past <= 0`: unit-step ranges laid along the key or query
///     axis, constant and symbolic scalars, their sums, differences and
///     casts (Llama's LessOrEqual(kv_idx row, q_idx column), with or
///     without offsets, however the exporter spells it);
/// as a bool or through Where(cond, 0, fill).
bool isSymbolicCausalMask(mlir::Value mask, mlir::AffineExpr queries,
                          mlir::AffineExpr keys, mlir::AffineExpr past,
                          dfg::SymbolicShapes &shapes,
                          const ConstantReader &reader);

/// True if the known values of `mask` (bool: true keeps; float: 0 keeps,
/// below -1000 masks) are exactly "key j visible to query i iff
/// j <= i + offset", with every leading dimension 1.
bool isCausalMask(mlir::Value mask, int64_t queries, int64_t keys,
                  int64_t offset, const ConstantReader &reader);

/// True if the bool `mask` keeps no key past the causal limit (j > i +
/// past): a causal mask as above, or a slice as GPT-2's of a constant buffer
/// that keeps nothing above its diagonal (GPT-Neo's banded local bias).
bool keepsOnlyCausalKeys(mlir::Value mask, mlir::AffineExpr queries,
                         mlir::AffineExpr keys, mlir::AffineExpr past,
                         dfg::SymbolicShapes &shapes,
                         const ConstantReader &reader);

/// For a mask that is a conjunction (dfg.and, through expands and leading
/// unit dimensions) of bool factors, one of which is causal as above, and
/// others (HF's padding mask), builds the mask of the other factors and
/// returns it, or a null Value when no other factor is left (all literal
/// true). std::nullopt if the mask is not such a conjunction. An additive
/// mask splits as where(cond, 0, F) with F = -inf or a finite F at most
/// kFiniteCausalFillMax (HF's finfo.min), returned in `fill` (-inf for a
/// bool mask): the attention's causal_fill, so that a row whose every key
/// is masked spreads over all keys as before.
std::optional<mlir::Value>
splitCausalFactor(mlir::Value mask, mlir::AffineExpr queries,
                  mlir::AffineExpr keys, mlir::AffineExpr past,
                  dfg::SymbolicShapes &shapes, const ConstantReader &reader,
                  mlir::OpBuilder &builder, double &fill);

/// The additive mask where(condition, 0, fill) of `element` values.
mlir::Value filledMask(mlir::Value condition, double fill, mlir::Type element,
                       mlir::OpBuilder &builder);

/// The largest finite causal_fill dfg.attention takes (invariant 7).
inline constexpr double kFiniteCausalFillMax = -1e30;

} // namespace meshc::graph

#endif // MESHC_PASSES_GRAPH_CAUSALMASKS_H
