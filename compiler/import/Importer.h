//===- Importer.h - ONNX model -> dfg IR ------------------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_IMPORT_IMPORTER_H
#define MESHC_COMPILER_IMPORT_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

namespace meshc::onnximport {

/// The opset range of the default domain that meshc imports.
inline constexpr int64_t kMinOnnxOpset = 13;
inline constexpr int64_t kMaxOnnxOpset = 24;

/// Sizes given to symbolic dimensions (ONNX dim_param names) of the graph
/// inputs, as onnxruntime's free-dimension overrides do: each input dimension
/// named `name` becomes static with that size, so that the exporters' shape
/// arithmetic folds to constants.
using DimSizes = llvm::StringMap<int64_t>;
/// Input dimension names read as other expressions of names.
using DimRenames = llvm::StringMap<std::string>;
/// Values given to graph inputs at import (`--input-value NAME=VALUE`):
/// each such input, of a static shape, becomes a constant filled with the
/// value, so that what depends on it folds (an If on it takes one branch:
/// Optimum's merged decoder's use_cache_branch). The text is read as the
/// input's element type: true/false or an integer for bool, an integer, or
/// a number.
using InputValues = llvm::StringMap<std::string>;

/// Imports the ONNX model at `path` as one func.func @main of dfg ops.
/// Initializers become dfg.weight references into the model file or its
/// external-data files; no weight bytes are copied into the IR. Symbolic
/// input dimensions named in `dimSizes` take those sizes; naming a dimension
/// that no input has is an error. Inputs named in `values` become constants
/// and are no longer inputs; naming no input is an error. On failure,
/// reports one diagnostic naming the culprit (file, initializer, or node by
/// name, op type and position) and returns null.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
                const DimSizes &dimSizes = {}, const InputValues &values = {});

} // namespace meshc::onnximport

#endif // MESHC_COMPILER_IMPORT_IMPORTER_H
