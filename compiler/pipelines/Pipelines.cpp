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

void buildGraphPipeline(mlir::OpPassManager &pm) {
  pm.addPass(createInferShapesPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createSymbolDCEPass());
}

void registerMeshcPipelines() {
  mlir::PassPipelineRegistration<>(
      "meshc-graph-pipeline",
      "Clean up imported dfg IR: shape inference, canonicalize, CSE",
      buildGraphPipeline);
}

} // namespace meshc
