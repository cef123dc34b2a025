//===- CausalMasks.h - Causal masks over symbolic lengths -------*- C++ -*-===//
//
// Part of meshc. Recognises the causal masks exporters build when the
// sequence and past lengths are symbolic, so that the attention raise can
// state them as `causal = true` (a static mask is checked element by element
// in RaiseAttention.cpp instead).
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
///   - Llama's: LessOrEqual(range(0, keys) as a row, range(past, past +
///     queries) as a column), as a bool or through Where(cond, 0, fill).
bool isSymbolicCausalMask(mlir::Value mask, mlir::AffineExpr queries,
                          mlir::AffineExpr keys, mlir::AffineExpr past,
                          dfg::SymbolicShapes &shapes,
                          const ConstantReader &reader);

} // namespace meshc::graph

#endif // MESHC_PASSES_GRAPH_CAUSALMASKS_H
