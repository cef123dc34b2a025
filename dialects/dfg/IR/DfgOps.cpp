//===- DfgOps.cpp - Verifiers and shape inference of dfg ops --------------===//
//
// Part of meshc. Each check names the invariant number of the op's
// description in DfgOps.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"

#include "dialects/dfg/IR/DfgShapes.h"
#include "meshc/runtime/dtype.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace meshc::dfg {

bool areCompatibleTensorTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip_equal(lhs, rhs)) {
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt || lt.getElementType() != rt.getElementType() ||
        lt.getEncoding() != rt.getEncoding() ||
        failed(verifyCompatibleShape(lt.getShape(), rt.getShape())))
      return false;
  }
  return true;
}

/// Pushes a tensor of `shape` with `like`'s element type, or reports `shape`'s
/// error at `loc`.
static LogicalResult pushInferred(std::optional<Location> loc,
                                  llvm::Expected<Shape> shape,
                                  RankedTensorType like,
                                  SmallVectorImpl<Type> &types) {
  if (!shape)
    return emitOptionalError(loc, llvm::toString(shape.takeError()));
  types.push_back(RankedTensorType::get(*shape, like.getElementType()));
  return success();
}

LogicalResult inferBroadcastBinary(std::optional<Location> loc, Value lhs,
                                   Value rhs, SmallVectorImpl<Type> &types) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  // Invariant 1 is SameOperandsAndResultElementType; checked first so that a
  // type mismatch is not reported as a shape problem.
  if (lt.getElementType() != rt.getElementType())
    return emitOptionalError(loc, "operand element types differ: ", lt,
                             " vs ", rt);
  return pushInferred(loc, broadcastShapes(lt.getShape(), rt.getShape()), lt,
                      types); // invariants 2 and 3
}

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

/// The byte width of a dfg element type (which ODS has already restricted).
static int64_t elementByteWidth(Type t) {
  rt::DType dtype = rt::DType::F32;
  if (t.isF16())
    dtype = rt::DType::F16;
  else if (t.isBF16())
    dtype = rt::DType::BF16;
  else if (t.isInteger(64))
    dtype = rt::DType::I64;
  else if (t.isInteger(32))
    dtype = rt::DType::I32;
  else if (t.isInteger(1))
    dtype = rt::DType::Bool;
  return static_cast<int64_t>(rt::byteWidth(dtype));
}

LogicalResult WeightOp::verify() {
  auto type = getType();
  if (!type.hasStaticShape()) // 1
    return emitOpError("weight '")
           << getName() << "' must have a static shape, got " << type;
  // ODS getters of I64Attr are unsigned; the attribute itself is signed.
  int64_t offset = static_cast<int64_t>(getOffset());
  int64_t length = static_cast<int64_t>(getLength());
  if (offset < 0) // 2
    return emitOpError("weight '")
           << getName() << "' has negative offset " << offset;
  int64_t expected = type.getNumElements() *
                     elementByteWidth(type.getElementType());
  if (length != expected) // 3
    return emitOpError("weight '")
           << getName() << "' has length " << length << " bytes but "
           << type << " needs " << expected;
  StringRef file = getFile();
  if (file.empty()) // 4
    return emitOpError("weight '") << getName() << "' has an empty file path";
  if (llvm::sys::path::is_absolute(file) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(file),
                                          llvm::sys::path::end(file)),
                         ".."))
    return emitOpError("weight '")
           << getName() << "' refers to '" << file
           << "', which leaves the model's folder (absolute path or '..')";
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  int64_t n = getType().getNumElements(); // 2 is ODS (static, same type)
  if (n > kMaxConstantElements)           // 1
    return emitOpError("holds ")
           << n << " elements; literal constants hold at most "
           << kMaxConstantElements << " (use dfg.weight for larger tensors)";
  return success();
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lt = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rt = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lt.getElementType() != rt.getElementType()) // 1
    return emitOptionalError(loc, "operand element types differ: ", lt,
                             " vs ", rt);
  return pushInferred(loc, matmulShape(lt.getShape(), rt.getShape()), lt,
                      types); // 1 (rank), 2, 3, 4
}

bool MatMulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return areCompatibleTensorTypes(l, r);
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, reshapeShape(in.getShape(), adaptor.getShape()), in,
                      types); // 1, 2, 3, 4
}

bool ReshapeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return areCompatibleTensorTypes(l, r);
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, transposeShape(in.getShape(), adaptor.getPerm()),
                      in, types); // 1, 2, 3
}

bool TransposeOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return areCompatibleTensorTypes(l, r);
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType()); // 3
  return success();
}

bool SoftmaxOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return areCompatibleTensorTypes(l, r);
}

LogicalResult SoftmaxOp::verify() {
  // 1 is ODS (Dfg_FloatTensor).
  int64_t rank = getInput().getType().getRank();
  int64_t axis = static_cast<int64_t>(getAxis());
  if (rank == 0 || axis < -rank || axis >= rank) // 2
    return emitOpError("axis ")
           << axis << " is out of range for an input of rank " << rank
           << " (expected [" << -rank << ", " << rank << "))";
  return success();
}

} // namespace meshc::dfg

#define GET_OP_CLASSES
#include "dialects/dfg/IR/DfgOps.cpp.inc"
