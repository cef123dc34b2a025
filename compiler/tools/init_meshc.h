//===- init_meshc.h - Dialect and pass registration -------------*- C++ -*-===//
//
// Part of meshc. The one place that says which dialects and passes meshc's
// tools know: meshc's own, plus the few upstream ones meshc uses (never
// registerAllDialects / registerAllPasses).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_TOOLS_INIT_MESHC_H
#define MESHC_COMPILER_TOOLS_INIT_MESHC_H

#include "compiler/pipelines/Pipelines.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace meshc {

/// dfg, plus the upstream dialects meshc's IR mixes with it: func (graphs are
/// functions), arith and tensor (casts, index arithmetic) and shard (device
/// meshes, shardings and collectives).
inline void registerAllMeshcDialects(mlir::DialectRegistry &registry) {
  registry.insert<dfg::DfgDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::shard::ShardDialect,
                  mlir::tensor::TensorDialect>();
}

/// meshc's passes and pipelines, plus the generic upstream clean-ups its
/// pipelines use.
inline void registerAllMeshcPasses() {
  registerMeshcPasses();
  registerMeshcPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
}

} // namespace meshc

#endif // MESHC_COMPILER_TOOLS_INIT_MESHC_H
