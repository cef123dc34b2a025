//===- Evaluator.h - Reference evaluator for dfg ----------------*- C++ -*-===//
//
// Part of meshc. Runs a dfg function on concrete inputs, one op at a time, in
// double precision, rounding each result to its element type. It is the
// numerical reference for meshc's passes (compare a function before and
// after a transformation) and, through meshc-eval, for import (compare with
// onnxruntime). Meant for small tensors: clarity over speed.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_EVAL_EVALUATOR_H
#define MESHC_DIALECTS_DFG_EVAL_EVALUATOR_H

#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace meshc::dfg {

/// A tensor of the evaluator: its values as doubles (integers and bools
/// exactly, as long as they stay below 2^53).
struct EvalTensor {
  llvm::SmallVector<int64_t, 6> shape;
  mlir::Type elementType;
  std::vector<double> values;

  int64_t numElements() const;
  /// False if an integer element lies outside +-2^53, where a double no
  /// longer holds every integer (INT64_MAX, exporters' "to the end", is one):
  /// such a tensor's values are not exact.
  bool isExact() const;
};

/// Evaluates `func` with one tensor per argument. Weight files are found
/// relative to `weightsDir`. On failure (an op the evaluator does not
/// support, an input of the wrong shape, an unreadable weight) emits one
/// diagnostic at the op or function and returns failure.
mlir::FailureOr<llvm::SmallVector<EvalTensor>>
evaluate(mlir::func::FuncOp func, llvm::ArrayRef<EvalTensor> inputs,
         llvm::StringRef weightsDir);

/// Evaluates the single op `op` on operand values (constant folding; the
/// SPMD evaluator). Ops on symbolic dimensions need their sizes in `dims`.
mlir::FailureOr<llvm::SmallVector<EvalTensor>>
evaluateOp(mlir::Operation *op, llvm::ArrayRef<EvalTensor> operands,
           llvm::StringRef weightsDir, const DimBindings *dims = nullptr);

/// The sizes of the named dimensions of `func`'s arguments (`dfg.dim_names`)
/// in `inputs`; inputs that disagree on a name are an error at `func`.
mlir::FailureOr<DimBindings> bindDims(mlir::func::FuncOp func,
                                      llvm::ArrayRef<EvalTensor> inputs);

/// Rounds every value of `tensor` to its element type (f16, bf16, f32
/// precision; integers truncated; bools to 0/1).
void roundToElementType(EvalTensor &tensor);

/// `x` as a value of `element`, the conversion roundToElementType applies:
/// floats rounded to their precision; integers truncated, NaN 0 and values
/// beyond the type's range saturated (C++ leaves those undefined); bools
/// 0/1.
double roundToElementType(mlir::Type element, double x);

/// The value of `tensor` as an attribute of its (static) type.
mlir::DenseElementsAttr toDenseAttr(const EvalTensor &tensor);

/// A tensor from `bytes`: little-endian elements of `elementType` (bool one
/// byte each), as weight files and .npy files hold them; `bytes` holds at
/// least the shape's element count of them.
EvalTensor decodeTensor(mlir::Type elementType, llvm::ArrayRef<int64_t> shape,
                        const uint8_t *bytes);

/// The tensor's values as little-endian bytes of its element type (bool one
/// byte each; floats rounded to nearest even).
std::vector<uint8_t> encodeTensor(const EvalTensor &tensor);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_EVAL_EVALUATOR_H
