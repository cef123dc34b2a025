//===- Folding.h - Constant folding with the reference evaluator -*- C++
//-*-===//
//
// Part of meshc. Shared by the importer (which folds each node's ops as it
// creates them) and the meshc-graph-fold-constants pass.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_EVAL_FOLDING_H
#define MESHC_DIALECTS_DFG_EVAL_FOLDING_H

#include "mlir/IR/Builders.h"
#include "mlir/Support/LLVM.h"

namespace meshc::dfg {

/// Evaluates `op` if every operand is a literal constant or an integer
/// weight (shape data, read from `weightsDir`; never with an empty one) and
/// every result is a static tensor of at most ConstantOp's element limit,
/// and every integer involved is exact in a double (below 2^53; exporters'
/// INT64_MAX sentinels are not). Views, concats and casts of integer
/// literals are folded on their integers instead, exact for any value. Ops
/// on float weights are never folded, so weight data never enters the IR.
///
/// Returns the `dfg.constant` values (created with `builder` before `op`)
/// that replace `op`'s results, an empty vector when `op` does not qualify,
/// or failure when evaluation itself reports an error (an index out of
/// range), which is then diagnosed at `op`.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
foldWithEvaluator(mlir::Operation *op, llvm::StringRef weightsDir,
                  mlir::OpBuilder &builder);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_EVAL_FOLDING_H
