//===- Raise.cpp - Raise exporter idioms to transformer-level dfg ops -----===//
//
// Part of meshc.
//
// Algorithm:
//   1. Collect the pattern families of RaisePatterns.h: norms, activations,
//      dense layers and embeddings, rotary embeddings, attention, scatters
//      of one slice.
//   2. Apply them greedily to every function until nothing changes (the
//      scatters and masks' layouts alone first, so that a mask scattered
//      whole into a copy is its updates, and a mask's layout is on its
//      condition, before the attention pattern reads it). Each
//      pattern rewrites the root of a decomposed idiom; the ops it no longer
//      needs die and are removed by the driver.
//   3. Ops left on merged leading dimensions (attention over [B*H, S, S]
//      scores) are rebuilt on the unmerged tensors (unmergeLeadingDims,
//      UnmergeLeading.cpp) and, where that changed anything, step 2 runs
//      again.
//   4. Patterns that must see data (a causal mask, a cos table) read
//      literals, and weights from `weights-dir` when it is given.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "passes/graph/Matchers.h"
#include "passes/graph/RaisePatterns.h"
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace meshc {
#define GEN_PASS_DEF_RAISEPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

/// Keeps the shared symbolic-shape analysis true while rewrites erase ops.
struct ForgetErased : RewriterBase::Listener {
  explicit ForgetErased(dfg::SymbolicShapes &shapes) : shapes(shapes) {}
  void notifyOperationErased(Operation *op) override {
    for (Value r : op->getResults())
      shapes.forget(r);
  }
  dfg::SymbolicShapes &shapes;
};

struct RaisePass : impl::RaisePassBase<RaisePass> {
  using RaisePassBase::RaisePassBase;

  void runOnOperation() override {
    graph::ConstantReader reader(weightsDir);
    // One symbolic-shape analysis for all matches: a fresh one per match
    // re-derived the graph back to its inputs each time.
    dfg::DimTable table(&getContext());
    dfg::SymbolicShapes shapes(table);
    ForgetErased forget(shapes);
    RewritePatternSet patterns(&getContext());
    graph::populateRaiseNormPatterns(patterns, reader);
    graph::populateRaiseActivationPatterns(patterns, reader);
    graph::populateRaiseLinearPatterns(patterns, shapes);
    graph::populateRaiseRotaryPatterns(patterns, reader, shapes);
    graph::populateRaiseAttentionPatterns(patterns, reader, shapes);
    graph::populateRaiseScatterPatterns(patterns, reader, shapes);
    FrozenRewritePatternSet frozen(std::move(patterns));
    // Scatters and masks' layouts first, alone: a scatter that writes every
    // element is its updates, and a mask's layout moves onto its bool
    // condition, which the attention pattern must see (transformers 4.48
    // scatters its whole mask into a copy; GPT-BigCode transposes its
    // additive mask) when it reads a mask through ops it does not revisit.
    RewritePatternSet preparePatterns(&getContext());
    graph::populateRaiseScatterPatterns(preparePatterns, reader, shapes);
    graph::populateMaskLayoutPatterns(preparePatterns);
    FrozenRewritePatternSet prepare(std::move(preparePatterns));
    // Residual sums fused into the norms last, once nothing else is to be
    // raised from them.
    RewritePatternSet residualPatterns(&getContext());
    graph::populateFuseNormResidualPatterns(residualPatterns);
    FrozenRewritePatternSet residuals(std::move(residualPatterns));
    auto apply = [&](const FrozenRewritePatternSet &set) {
      if (failed(applyPatternsGreedily(
              getOperation(), set, GreedyRewriteConfig().setListener(&forget))))
        getOperation().emitWarning(
            "meshc-graph-raise did not reach a fixed point");
    };
    apply(prepare);
    apply(frozen);
    // What is left over merged batch and heads ([B*H, S, S] scores: BLOOM's
    // baddbmm with its ALiBi bias) rebuilt on [B, H, S, S], where the
    // attention pattern sees it; then raised again. After the first round,
    // so that what the patterns see whole is not rebuilt.
    bool merged = false;
    for (auto func : getOperation().getOps<func::FuncOp>())
      merged |= unmergeLeadingDims(func);
    if (merged) {
      shapes.clear();
      apply(frozen);
    }
    apply(residuals);
  }
};

} // namespace
} // namespace meshc
