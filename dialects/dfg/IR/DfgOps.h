//===- DfgOps.h - The dfg dialect and its ops -------------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGOPS_H
#define MESHC_DIALECTS_DFG_IR_DFGOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "meshc/runtime/dtype.h"

#include <optional>

#include "dialects/dfg/IR/DfgDialect.h.inc"

namespace meshc::dfg {

/// Infers the result type of a broadcasting elementwise op (element type:
/// the operands', or `resultElement` when given, as for comparisons); emits
/// the reason at `loc` when the operand shapes do not broadcast.
llvm::LogicalResult
inferBroadcastBinary(std::optional<mlir::Location> loc, llvm::StringRef opName,
                     mlir::Value lhs, mlir::Value rhs,
                     llvm::SmallVectorImpl<mlir::Type> &types,
                     mlir::Type resultElement = {});

/// Infers the result of a reduction; reports invalid axes at `loc`.
llvm::LogicalResult inferReduction(std::optional<mlir::Location> loc,
                                   llvm::StringRef opName, mlir::Value input,
                                   llvm::ArrayRef<int64_t> axes, bool keepDims,
                                   llvm::SmallVectorImpl<mlir::Type> &types);

/// Infers the results of a normalisation (the normalised tensor, and the
/// sum when a residual is fused); reports a broken invariant at `loc`.
llvm::LogicalResult
inferNormalization(std::optional<mlir::Location> loc, llvm::StringRef opName,
                   mlir::Value input, mlir::Value scale, mlir::Value bias,
                   mlir::Value residual, int64_t axis, double epsilon,
                   llvm::SmallVectorImpl<mlir::Type> &types);

/// Result types agree with inferred ones when element types are equal and
/// every dimension is equal or dynamic on one side: an op's declared result
/// may be more or less refined than what inference derives.
bool areCompatibleTensorTypes(mlir::TypeRange lhs, mlir::TypeRange rhs);

/// The runtime element type of a dfg element type (f32, f16, bf16, i64, i32,
/// i1); std::nullopt for any other type. Weight files, .npy files and
/// generated code all name element types this way.
std::optional<rt::DType> elementDType(mlir::Type type);

/// The verifier of every op with shape inference: runs the inference (which
/// reports a broken invariant by its number's message) and checks that the
/// declared result types agree with the inferred ones.
llvm::LogicalResult verifyInferredTypes(mlir::InferTypeOpInterface op);

} // namespace meshc::dfg

#define GET_OP_CLASSES
#include "dialects/dfg/IR/DfgOps.h.inc"

#endif // MESHC_DIALECTS_DFG_IR_DFGOPS_H
