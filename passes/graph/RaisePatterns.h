//===- RaisePatterns.h - Exporter idioms -> transformer ops -----*- C++ -*-===//
//
// Part of meshc. One pattern set per family, each in its own Raise*.cpp;
// meshc-graph-raise (Raise.cpp) runs them all. Every pattern carries a
// one-line algebraic comment and never fires on a near miss (a norm over a
// non-trailing axis, a mask that is not causal, a softmax not over keys).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_GRAPH_RAISEPATTERNS_H
#define MESHC_PASSES_GRAPH_RAISEPATTERNS_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace meshc::dfg {
class SymbolicShapes;
} // namespace meshc::dfg

namespace meshc::graph {

class ConstantReader;

/// LayerNorm and RMSNorm from their statistics, scale and bias.
void populateRaiseNormPatterns(mlir::RewritePatternSet &patterns,
                               const ConstantReader &reader);

/// A norm's input sum fused as its residual. Applied once the other raise
/// patterns are done: the sum may be a rotation (NanoChat's norm after
/// the rotary), which the rotary pattern must see first.
void populateFuseNormResidualPatterns(mlir::RewritePatternSet &patterns);

/// GELU (exact and tanh) and SiLU from their formulas.
void populateRaiseActivationPatterns(mlir::RewritePatternSet &patterns,
                                     const ConstantReader &reader);

/// dfg.linear from matmuls with weights (bias, reshapes, transposed
/// layouts), dfg.embedding from row gathers of weights, reshapes of weights
/// folded into the weight reference.
/// `shapes` compares symbolic dimensions (shared by the pass; it forgets
/// what rewrites erase).
void populateRaiseLinearPatterns(mlir::RewritePatternSet &patterns,
                                 dfg::SymbolicShapes &shapes);

/// dfg.rotary from the rotate-half spelling of RoPE.
void populateRaiseRotaryPatterns(mlir::RewritePatternSet &patterns,
                                 const ConstantReader &reader,
                                 dfg::SymbolicShapes &shapes);

/// dfg.attention from matmul-softmax-matmul chains with their scaling,
/// masks, KV-cache concatenations and GQA head repetition.
void populateRaiseAttentionPatterns(mlir::RewritePatternSet &patterns,
                                    const ConstantReader &reader,
                                    dfg::SymbolicShapes &shapes);

/// Layout ops moved onto a mask's bool condition and merged there
/// (RaiseAttention.cpp), before the attention patterns read the mask.
void populateMaskLayoutPatterns(mlir::RewritePatternSet &patterns);

/// Scatters that write one slice at a constant position, as concats of
/// slices (RaiseScatter.cpp).
void populateRaiseScatterPatterns(mlir::RewritePatternSet &patterns,
                                  const ConstantReader &reader,
                                  dfg::SymbolicShapes &shapes);

} // namespace meshc::graph

#endif // MESHC_PASSES_GRAPH_RAISEPATTERNS_H
