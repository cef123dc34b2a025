//===- SpmdEvaluator.h - Run every rank of an SPMD program ------*- C++ -*-===//
//
// Part of meshc. Simulates all ranks of a partitioned dfg program (the output
// of meshc-shard-partition) in one process: dfg ops run per rank through the
// reference evaluator, shard collectives combine the ranks' values in
// memory. The global inputs are split by the arguments' `meshc.sharding`, and
// the results are assembled from the ranks by the results' shardings, so the
// outcome compares directly with the unpartitioned program or onnxruntime.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_EVAL_SPMDEVALUATOR_H
#define MESHC_DIALECTS_DFG_EVAL_SPMDEVALUATOR_H

#include "dialects/dfg/Eval/Evaluator.h"

namespace mlir::shard {
class GridOp;
} // namespace mlir::shard

namespace meshc::dfg {

/// Evaluates `func` on every rank of `grid`. Ranks that hold copies of the
/// same block of a result must agree exactly; a disagreement is reported as
/// an error (it would mean the program is not SPMD-consistent).
mlir::FailureOr<llvm::SmallVector<EvalTensor>>
evaluateSpmd(mlir::func::FuncOp func, mlir::shard::GridOp grid,
             llvm::ArrayRef<EvalTensor> globalInputs,
             llvm::StringRef weightsDir);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_EVAL_SPMDEVALUATOR_H
