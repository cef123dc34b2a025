//===- Pipelines.h - meshc's named pass pipelines ---------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_PIPELINES_PIPELINES_H
#define MESHC_COMPILER_PIPELINES_PIPELINES_H

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace meshc {

/// meshc-graph-pipeline: what `meshc import --optimize` and `meshc compile`
/// run on freshly imported IR. Today: shape inference, canonicalisation, CSE
/// and removal of dead symbols.
void buildGraphPipeline(mlir::OpPassManager &pm);

/// Registers the pipelines with the pass registry (for meshc-opt).
void registerMeshcPipelines();

} // namespace meshc

#endif // MESHC_COMPILER_PIPELINES_PIPELINES_H
