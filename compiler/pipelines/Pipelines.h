//===- Pipelines.h - meshc's named pass pipelines ---------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_PIPELINES_PIPELINES_H
#define MESHC_COMPILER_PIPELINES_PIPELINES_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

namespace mlir {
class OpPassManager;
class Operation;
class PassManager;
} // namespace mlir

namespace meshc {

/// meshc-graph-pipeline: what `meshc import --optimize` and `meshc compile`
/// run on freshly imported IR: shape inference, constant folding,
/// canonicalisation, CSE, raising of exporter idioms to transformer-level ops
/// (meshc-graph-raise, reading weights under `weightsDir` where a pattern
/// needs their values), folding and canonicalisation again, CSE and removal
/// of dead symbols. Without `raise` (--no-raise) the exporter's primitive ops
/// stay as they are: slower kernels; the parallelism still follows from the
/// graph.
void buildGraphPipeline(mlir::OpPassManager &pm, llvm::StringRef weightsDir,
                        bool raise = true);

/// meshc-shard-pipeline: transformer-level IR to the SPMD program for
/// `mesh` ("dp=2,pp=2,tp=2"): plan the shardings, partition into the
/// per-rank program with collectives, split it into pipeline stages joined
/// by send/recv (with `microbatches` per dp block), verify it, and clean up
/// (canonicalize, CSE).
void buildShardingPipeline(mlir::OpPassManager &pm, llvm::StringRef mesh,
                           bool sequenceParallel, int64_t microbatches = 1);

/// `meshc compile --dtype`: makes the program compute in `dtype` (f32, f16,
/// bf16; meshc-graph-convert-dtype), then folds the casts that convert nothing.
/// Adds nothing when `dtype` is empty.
void buildDTypeConversion(mlir::OpPassManager &pm, llvm::StringRef dtype);

/// What code generation runs on the rank programs (`meshc compile` with
/// executables): fusion of elementwise chains into generated kernels
/// (meshc-lower-fuse-elementwise), then, unless `overlap` is false
/// (--no-overlap), collectives issued early and waited for late
/// (meshc-lower-schedule-collectives).
void buildLoweringPipeline(mlir::OpPassManager &pm, bool overlap = true);

/// Registers the pipelines with the pass registry (for meshc-opt).
void registerMeshcPipelines();

/// Runs `pm` on `op`. A fatal error inside a pass (a rewrite whose type
/// inference fails: LLVM would abort) ends in one line, `<tool>: error:
/// internal error in pass '<pass>' on '<op>': <reason>`, and exit status 1.
mlir::LogicalResult runPipeline(mlir::PassManager &pm, mlir::Operation *op,
                                llvm::StringRef tool);

} // namespace meshc

#endif // MESHC_COMPILER_PIPELINES_PIPELINES_H
