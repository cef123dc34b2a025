//===- DTypes.h - dfg element types as runtime dtypes -----------*- C++ -*-===//
//
// Part of meshc. The bridge between MLIR element types and the runtime's
// DType (weight files, .npy files and generated code name element types the
// runtime's way). It lives on the compiler's side of the boundary so that
// the dfg dialect includes no runtime header.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_DTYPES_H
#define MESHC_COMPILER_CODEGEN_DTYPES_H

#include "meshc/runtime/dtype.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#include <optional>

namespace meshc::codegen {

/// The runtime element type of a dfg element type (f32, f16, bf16, i64, i32,
/// i1); std::nullopt for any other type.
inline std::optional<rt::DType> elementDType(mlir::Type t) {
  if (t.isF32())
    return rt::DType::F32;
  if (t.isF16())
    return rt::DType::F16;
  if (t.isBF16())
    return rt::DType::BF16;
  if (t.isInteger(64))
    return rt::DType::I64;
  if (t.isInteger(32))
    return rt::DType::I32;
  if (t.isInteger(1))
    return rt::DType::Bool;
  return std::nullopt;
}

/// The dfg element type of a runtime element type.
inline mlir::Type elementTypeOf(rt::DType dtype, mlir::MLIRContext *context) {
  mlir::Builder b(context);
  switch (dtype) {
  case rt::DType::F32:
    return b.getF32Type();
  case rt::DType::F16:
    return b.getF16Type();
  case rt::DType::BF16:
    return b.getBF16Type();
  case rt::DType::I64:
    return b.getI64Type();
  case rt::DType::I32:
    return b.getI32Type();
  case rt::DType::Bool:
    return b.getI1Type();
  }
  return b.getF32Type();
}

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_DTYPES_H
