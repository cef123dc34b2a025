//===- ImportGuardTest.cpp - Fatal errors during import -------------------===//
//
// Part of meshc. An op built through a type-inferring `create` whose
// inference fails ends in LLVM's fatal error, which aborts. While the
// importer legalises a node it holds a FatalErrorAtNode, which turns that
// into one line naming the node and the inference's message, and exit
// status 1 (the legalisations check first; this is the net behind them).
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"
#include "compiler/pipelines/Pipelines.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "gtest/gtest.h"

using namespace mlir;

namespace {

/// A dfg.split of a rank-3 tensor along axis 7: its inference fails.
void buildBadSplit(bool guarded) {
  MLIRContext ctx;
  ctx.loadDialect<meshc::dfg::DfgDialect>();
  ctx.printOpOnDiagnostic(false);
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module->getBody());
  auto type = RankedTensorType::get({2, 4, 6}, b.getF32Type());
  Value x = meshc::dfg::WeightOp::create(b, b.getUnknownLoc(), type, "x",
                                         "x.bin", 0, 2 * 4 * 6 * 4);
  std::optional<meshc::onnximport::FatalErrorAtNode> net;
  if (guarded)
    net.emplace(ctx, "model.onnx: node 'cut' (Split, #3)");
  meshc::dfg::SplitOp::create(b, b.getUnknownLoc(), x, 7,
                              b.getDenseI64ArrayAttr({1, 1}));
}

TEST(ImportGuardTest, FailedInferenceNamesTheNodeAndExitsWithOne) {
  EXPECT_EXIT(buildBadSplit(/*guarded=*/true), testing::ExitedWithCode(1),
              "meshc: error: model.onnx: node 'cut' \\(Split, #3\\): "
              "'dfg.split' op axis 7 is out of range for rank 3");
}

TEST(ImportGuardTest, WithoutTheGuardItAborts) {
  EXPECT_DEATH(buildBadSplit(/*guarded=*/false), "Failed to infer");
}

/// A rewrite that builds the same bad dfg.split: what a pass with a wrong
/// inferring create would do.
struct BadSplitPass
    : public PassWrapper<BadSplitPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BadSplitPass)
  StringRef getArgument() const final { return "bad-split"; }
  void runOnOperation() override {
    OpBuilder b(getOperation().getBodyRegion());
    Value x = meshc::dfg::WeightOp::create(
        b, b.getUnknownLoc(), RankedTensorType::get({2, 4, 6}, b.getF32Type()),
        "x", "x.bin", 0, 2 * 4 * 6 * 4);
    meshc::dfg::SplitOp::create(b, b.getUnknownLoc(), x, 7,
                                b.getDenseI64ArrayAttr({1, 1}));
  }
};

void runBadPass(bool guarded) {
  MLIRContext ctx;
  ctx.loadDialect<meshc::dfg::DfgDialect>();
  ctx.printOpOnDiagnostic(false);
  ctx.disableMultithreading();
  OpBuilder b(&ctx);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  PassManager pm(&ctx);
  pm.addPass(std::make_unique<BadSplitPass>());
  if (guarded)
    (void)meshc::runPipeline(pm, *module, "meshc compile");
  else
    (void)pm.run(*module);
}

TEST(ImportGuardTest, FailedInferenceInAPassNamesThePassAndExitsWithOne) {
  EXPECT_EXIT(runBadPass(/*guarded=*/true), testing::ExitedWithCode(1),
              "meshc compile: error: internal error in pass 'bad-split' "
              "on 'builtin.module': 'dfg.split' op axis 7 is out of range "
              "for rank 3");
}

TEST(ImportGuardTest, APassWithoutTheGuardAborts) {
  EXPECT_DEATH(runBadPass(/*guarded=*/false), "Failed to infer");
}

} // namespace
