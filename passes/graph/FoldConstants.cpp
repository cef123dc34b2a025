//===- FoldConstants.cpp - Evaluate dfg ops on constant operands ----------===//
//
// Part of meshc.
//
// Algorithm:
//   1. Visit the ops of each function in program order, so that a folded
//      result makes its users foldable in the same sweep.
//   2. Fold each op whose operands are literals (or integer weights under
//      `weights-dir`) and whose results are small static tensors, with the
//      reference evaluator (dfg::foldWithEvaluator: never float weights,
//      never integers beyond 2^53).
//   3. Replace its results by the new constants and erase it, with the
//      literals that only it used; an op that the evaluator rejects (an
//      index out of range) fails the pass with the evaluator's diagnostic.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/Eval/Folding.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace meshc {
#define GEN_PASS_DEF_FOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

struct FoldConstantsPass : impl::FoldConstantsPassBase<FoldConstantsPass> {
  using FoldConstantsPassBase::FoldConstantsPassBase;

  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](func::FuncOp func) {
      func.walk([&](Operation *op) { ops.push_back(op); });
    });
    OpBuilder builder(&getContext());
    for (Operation *op : ops) {
      auto constants = dfg::foldWithEvaluator(op, weightsDir, builder);
      if (failed(constants))
        return signalPassFailure();
      if (constants->empty())
        continue;
      // Each defining op once: a literal read twice (add(%c, %c)) must be
      // erased once (the sanitizer build caught the second erase).
      llvm::SetVector<Operation *> inputs;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          inputs.insert(def);
      op->replaceAllUsesWith(*constants);
      op->erase();
      // Literals that only fed the folded op go with it.
      for (Operation *input : inputs)
        if (isa<dfg::ConstantOp>(input) && input->use_empty())
          input->erase();
    }
  }
};

} // namespace
} // namespace meshc
