//===- OnnxTensors.cpp - ONNX tensor types and literals -------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/OnnxTensors.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

using namespace mlir;
using namespace llvm;

namespace meshc::onnximport {

FailureOr<Type> elementType(MLIRContext &context, int onnxType, StringRef what,
                            Location loc) {
  Builder b(&context);
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return Type(b.getF32Type());
  case onnx::TensorProto::FLOAT16:
    return Type(b.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(b.getBF16Type());
  case onnx::TensorProto::INT64:
    return Type(b.getI64Type());
  case onnx::TensorProto::INT32:
    return Type(b.getI32Type());
  case onnx::TensorProto::BOOL:
    return Type(b.getI1Type());
  default:
    break;
  }
  std::string name =
      onnx::TensorProto::DataType_IsValid(onnxType)
          ? onnx::TensorProto::DataType_Name(
                static_cast<onnx::TensorProto::DataType>(onnxType))
          : "#" + std::to_string(onnxType);
  return emitError(loc) << what << " has element type " << name
                        << ", which meshc does not support (supported: FLOAT, "
                        << "FLOAT16, BFLOAT16, INT64, INT32, BOOL)";
}

FailureOr<RankedTensorType> tensorType(MLIRContext &context,
                                       const onnx::TensorProto &tensor,
                                       Location loc) {
  FailureOr<Type> element = elementType(context, tensor.data_type(),
                                        "tensor '" + tensor.name() + "'", loc);
  if (failed(element))
    return failure();
  SmallVector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  for (int64_t d : shape)
    if (d < 0)
      return emitError(loc) << "tensor '" << tensor.name()
                            << "' has a negative dimension " << d;
  if (!tensorBytes(shape, *element))
    return emitError(loc) << "tensor '" << tensor.name() << "' of shape ["
                          << llvm::join(llvm::map_range(shape,
                                                        [](int64_t d) {
                                                          return std::to_string(
                                                              d);
                                                        }),
                                        ", ")
                          << "] is larger than meshc accepts (2^48 bytes)";
  return RankedTensorType::get(shape, *element);
}

std::optional<int64_t> tensorBytes(ArrayRef<int64_t> shape, Type element) {
  int64_t bytes =
      element.isIntOrFloat()
          ? std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8)
          : 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      continue;
    if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes) ||
        bytes > kMaxTensorBytes)
      return std::nullopt;
  }
  return bytes;
}

DenseElementsAttr rawToAttr(RankedTensorType type, StringRef raw) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : raw)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(raw.data(), raw.size()));
}

FailureOr<DenseElementsAttr> tensorToAttr(MLIRContext &context,
                                          const onnx::TensorProto &tensor,
                                          RankedTensorType type, Location loc) {
  int64_t n = type.getNumElements();
  if (n > dfg::ConstantOp::kMaxConstantElements)
    return emitError(loc)
           << "tensor '" << tensor.name() << "' (" << n
           << " elements) is too large for a literal and stored where meshc "
           << "cannot refer to it in place (it can: an initializer's or a "
           << "main-graph Constant node's raw_data, packed float_data or "
           << "external data)";
  auto countError = [&](int64_t have) {
    return emitError(loc) << "tensor '" << tensor.name() << "' holds " << have
                          << " values but its shape needs " << n;
  };
  Type element = type.getElementType();

  if (tensor.has_raw_data()) {
    StringRef raw = tensor.raw_data();
    if (static_cast<int64_t>(raw.size()) !=
        *tensorBytes(type.getShape(), element))
      return countError(raw.size() /
                        *tensorBytes(ArrayRef<int64_t>{}, element));
    return rawToAttr(type, raw);
  }

  if (element.isF32()) {
    if (tensor.float_data_size() != n)
      return countError(tensor.float_data_size());
    return DenseElementsAttr::get(
        type, ArrayRef<float>(tensor.float_data().data(), n));
  }
  if (element.isInteger(64)) {
    if (tensor.int64_data_size() != n)
      return countError(tensor.int64_data_size());
    return DenseElementsAttr::get(
        type, ArrayRef<int64_t>(tensor.int64_data().data(), n));
  }
  // INT32, BOOL, FLOAT16 and BFLOAT16 travel in int32_data.
  if (tensor.int32_data_size() != n)
    return countError(tensor.int32_data_size());
  if (element.isInteger(32))
    return DenseElementsAttr::get(
        type, ArrayRef<int32_t>(tensor.int32_data().data(), n));
  if (element.isInteger(1)) {
    SmallVector<bool> bits;
    for (int32_t v : tensor.int32_data())
      bits.push_back(v != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  auto &semantics = cast<FloatType>(element).getFloatSemantics();
  SmallVector<APFloat> values;
  for (int32_t v : tensor.int32_data())
    values.emplace_back(semantics, APInt(16, static_cast<uint16_t>(v)));
  return DenseElementsAttr::get(type, values);
}

FailureOr<std::unique_ptr<MemoryBuffer>>
readFileSlice(StringRef folder, StringRef file, int64_t offset, int64_t length,
              const Twine &what, Location loc) {
  SmallString<256> path(folder);
  sys::path::append(path, file);
  auto buffer =
      MemoryBuffer::getFileSlice(path, length, offset, /*IsVolatile=*/false);
  if (!buffer)
    return emitError(loc) << "cannot read " << what << " from '" << path
                          << "': " << buffer.getError().message();
  return std::move(*buffer);
}

namespace {

/// The bytes of a small weight read at compile time, `width` bytes per
/// element (at least that many for its type), or an error naming it.
FailureOr<std::unique_ptr<MemoryBuffer>>
weightBytes(dfg::WeightOp weight, StringRef folder, Location loc,
            int64_t width, StringRef use) {
  auto type = weight.getType();
  if (type.getNumElements() > dfg::ConstantOp::kMaxConstantElements)
    return emitError(loc) << "weight '" << weight.getName() << "' has "
                          << type.getNumElements() << " elements, too many for "
                          << use;
  auto buffer =
      readFileSlice(folder, weight.getFile(), weight.getOffset(),
                    weight.getLength(), "weight '" + weight.getName() + "'", loc);
  if (failed(buffer))
    return failure();
  if (static_cast<int64_t>((*buffer)->getBufferSize()) <
      type.getNumElements() * width)
    return emitError(loc) << "weight '" << weight.getName() << "' holds "
                          << (*buffer)->getBufferSize()
                          << " bytes, too few for " << type;
  return std::move(*buffer);
}

} // namespace

FailureOr<SmallVector<int64_t>> readWeightInts(dfg::WeightOp weight,
                                               StringRef folder, Location loc) {
  auto type = weight.getType();
  bool is64 = type.getElementType().isInteger(64);
  if (!is64 && !type.getElementType().isInteger(32))
    return emitError(loc) << "weight '" << weight.getName() << "' of type "
                          << type << " is used as integers (int32 or int64)";
  FailureOr<std::unique_ptr<MemoryBuffer>> buffer =
      weightBytes(weight, folder, loc, is64 ? 8 : 4, "a shape operand");
  if (failed(buffer))
    return failure();
  const char *bytes = (*buffer)->getBufferStart();
  SmallVector<int64_t> ints;
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i)
    ints.push_back(is64 ? support::endian::read64le(bytes + 8 * i)
                        : static_cast<int32_t>(
                              support::endian::read32le(bytes + 4 * i)));
  return ints;
}

FailureOr<SmallVector<double>> readWeightFloats(dfg::WeightOp weight,
                                                StringRef folder, Location loc) {
  auto type = weight.getType();
  Type element = type.getElementType();
  if (!element.isF32() && !element.isF64())
    return emitError(loc) << "weight '" << weight.getName() << "' of type "
                          << type << " is used as floats (f32 or f64)";
  int64_t width = element.isF64() ? 8 : 4;
  FailureOr<std::unique_ptr<MemoryBuffer>> buffer = weightBytes(
      weight, folder, loc, width, "an operand read at compile time");
  if (failed(buffer))
    return failure();
  const char *bytes = (*buffer)->getBufferStart();
  SmallVector<double> values;
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i)
    values.push_back(
        width == 8
            ? llvm::bit_cast<double>(support::endian::read64le(bytes + 8 * i))
            : static_cast<double>(llvm::bit_cast<float>(
                  support::endian::read32le(bytes + 4 * i))));
  return values;
}

} // namespace meshc::onnximport
