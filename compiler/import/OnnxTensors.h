//===- OnnxTensors.h - ONNX tensor types and literals -----------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_IMPORT_ONNXTENSORS_H
#define MESHC_COMPILER_IMPORT_ONNXTENSORS_H

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace meshc::onnximport {

/// The dfg element type of ONNX TensorProto.DataType `onnxType` (f32, f16,
/// bf16, i64, i32, bool); reports an unsupported one, naming `what`.
mlir::FailureOr<mlir::Type> elementType(mlir::MLIRContext &context,
                                        int onnxType, llvm::StringRef what,
                                        mlir::Location loc);

/// The largest tensor meshc accepts from a model, in bytes (256 TiB): far
/// beyond any real one, and far enough below 2^63 that sizes, offsets and
/// element counts computed from it never overflow.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 48;

/// The bytes of a tensor of `shape` and `element`, counting its dynamic
/// dimensions as 1; std::nullopt when that exceeds kMaxTensorBytes.
std::optional<int64_t> tensorBytes(llvm::ArrayRef<int64_t> shape,
                                   mlir::Type element);

/// The static tensor type of an initializer or Constant value; an error
/// for a negative dimension or more than kMaxTensorBytes.
mlir::FailureOr<mlir::RankedTensorType>
tensorType(mlir::MLIRContext &context, const onnx::TensorProto &tensor,
           mlir::Location loc);

/// The value of a small tensor stored in the protobuf (raw_data or typed
/// fields), at most dfg::ConstantOp::kMaxConstantElements elements.
mlir::FailureOr<mlir::DenseElementsAttr>
tensorToAttr(mlir::MLIRContext &context, const onnx::TensorProto &tensor,
             mlir::RankedTensorType type, mlir::Location loc);

/// The value of `type` from its little-endian bytes (a bool per byte), which
/// must be as many as the type needs.
mlir::DenseElementsAttr rawToAttr(mlir::RankedTensorType type,
                                  llvm::StringRef raw);

/// The `length` bytes at `offset` of `file` (relative to `folder`, the
/// model's), or an error at `loc` naming `what` ("weight 'w'").
mlir::FailureOr<std::unique_ptr<llvm::MemoryBuffer>>
readFileSlice(llvm::StringRef folder, llvm::StringRef file, int64_t offset,
              int64_t length, const llvm::Twine &what, mlir::Location loc);

/// Reads the integers of a small i32/i64 weight from its file (folder is the
/// model's); used for shape operands stored as initializers.
mlir::FailureOr<llvm::SmallVector<int64_t>>
readWeightInts(dfg::WeightOp weight, llvm::StringRef folder,
               mlir::Location loc);

/// The same for a small f32/f64 weight read as floats (Resize's scales).
mlir::FailureOr<llvm::SmallVector<double>>
readWeightFloats(dfg::WeightOp weight, llvm::StringRef folder,
                 mlir::Location loc);

} // namespace meshc::onnximport

#endif // MESHC_COMPILER_IMPORT_ONNXTENSORS_H
