//===- Pipelines.cpp - meshc's named pass pipelines -----------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipelines/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace meshc {

namespace {
struct GraphPipelineOptions : mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<std::string> weightsDir{
      *this, "weights-dir",
      llvm::cl::desc("Folder of the model's weight files (for patterns that "
                     "read weight values)"),
      llvm::cl::init("")};
};
} // namespace

void buildGraphPipeline(mlir::OpPassManager &pm, llvm::StringRef weightsDir) {
  pm.addPass(createInferShapesPass());
  pm.addPass(
      createFoldConstantsPass(FoldConstantsPassOptions{weightsDir.str()}));
  pm.addPass(mlir::createCanonicalizerPass());
  // Patterns compare values: an idiom spelled with duplicated ops (two
  // identical `x - mean(x)`) must be one value first.
  pm.addPass(mlir::createCSEPass());
  pm.addPass(createRaisePass(RaisePassOptions{weightsDir.str()}));
  // Raising slices literal tables (half of a cos table): fold them again.
  pm.addPass(
      createFoldConstantsPass(FoldConstantsPassOptions{weightsDir.str()}));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createSymbolDCEPass());
}

void registerMeshcPipelines() {
  mlir::PassPipelineRegistration<GraphPipelineOptions>(
      "meshc-graph-pipeline",
      "Imported dfg IR to transformer-level IR: shape inference, "
      "canonicalize, raise exporter idioms, CSE",
      [](mlir::OpPassManager &pm, const GraphPipelineOptions &options) {
        buildGraphPipeline(pm, options.weightsDir);
      });
}

} // namespace meshc
