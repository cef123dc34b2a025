//===- DfgOps.h - The dfg dialect and its ops -------------------*- C++ -*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGOPS_H
#define MESHC_DIALECTS_DFG_IR_DFGOPS_H

#include "dialects/dfg/IR/ShardingRule.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// `pattern` with `@0`, `@1`, ... replaced by `operands[0]`, `operands[1]`,
/// ...: the body of an elementwise op in a generated fused kernel
/// (ElementwiseOpInterface::getFusedExpression); empty for an empty pattern.
std::string fusedExpression(llvm::StringRef pattern,
                            llvm::ArrayRef<std::string> operands);

/// The verifier of every op with shape inference: runs the inference (which
/// reports a broken invariant by its number's message) and checks that the
/// declared result types agree with the inferred ones.
llvm::LogicalResult verifyInferredTypes(mlir::InferTypeOpInterface op);

class SymbolicShapes;

/// The symbolic dimensions of `op`'s first operand: the shape rule of an op
/// whose results are shaped as its input (SymbolicShapeOpInterface's
/// default).
llvm::SmallVector<mlir::AffineExpr>
dimsOfFirstOperand(mlir::Operation *op, SymbolicShapes &shapes);

/// Views, broadcasts and constant slices: every element of the result is
/// one of its operand's.
bool movesElements(mlir::Operation *op);

/// Whether every element of `v` is provably zero: a zero splat literal, seen
/// through views, slices and broadcasts (movesElements, and symbolic slices;
/// ConstantOfShape's zeros at a symbolic shape included).
bool isZeroFill(mlir::Value v);

} // namespace meshc::dfg

#include "dialects/dfg/IR/DfgInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/dfg/IR/DfgOps.h.inc"

#endif // MESHC_DIALECTS_DFG_IR_DFGOPS_H
