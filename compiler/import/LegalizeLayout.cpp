//===- LegalizeLayout.cpp - Layout and pass-through ONNX ops -> dfg -------===//
//
// Part of meshc. Reshape, Transpose, Flatten, Softmax, Identity, Dropout and
// Constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "compiler/import/OnnxTensors.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/STLExtras.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace meshc::onnximport {
namespace {

LogicalResult reshapeTo(NodeContext &ctx, ArrayRef<int64_t> spec) {
  RankedTensorType in = ctx.inputType(0);
  return ctx.emit<dfg::ReshapeOp>(dfg::reshapeShape(in.getShape(), spec),
                                  in.getElementType(), ctx.input(0),
                                  ctx.builder().getDenseI64ArrayAttr(spec));
}

/// Reshape-13(data, shape) -> dfg.reshape(data) to shape  (0 copies, -1 infers)
LogicalResult legalizeReshape13(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  FailureOr<SmallVector<int64_t>> spec = ctx.constantInts(1, "the shape");
  return failed(spec) ? failure() : reshapeTo(ctx, *spec);
}

/// Reshape-14 adds allowzero; with allowzero = 1 a 0 entry is a literal 0,
/// which dfg.reshape (copy semantics) cannot express.
LogicalResult legalizeReshape14(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  FailureOr<SmallVector<int64_t>> spec = ctx.constantInts(1, "the shape");
  if (failed(spec))
    return failure();
  if (ctx.attrInt("allowzero", 0) && llvm::is_contained(*spec, 0))
    return ctx.error("allowzero = 1 with a 0 in the shape (an empty "
                     "dimension) is not supported");
  return reshapeTo(ctx, *spec);
}

/// Transpose(x, perm) -> dfg.transpose(x, perm); perm defaults to reversed.
LogicalResult legalizeTranspose(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  SmallVector<int64_t> perm;
  if (auto given = ctx.attrInts("perm"))
    perm = *given;
  else
    for (int64_t i = in.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  return ctx.emit<dfg::TransposeOp>(dfg::transposeShape(in.getShape(), perm),
                                    in.getElementType(), ctx.input(0),
                                    ctx.builder().getDenseI64ArrayAttr(perm));
}

/// Flatten(x, axis) -> reshape to [prod(dims[:axis]), prod(dims[axis:])].
LogicalResult legalizeFlatten(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  ArrayRef<int64_t> shape = ctx.inputType(0).getShape();
  int64_t rank = shape.size();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  auto product = [](ArrayRef<int64_t> dims) -> std::optional<int64_t> {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (ShapedType::isDynamic(d))
        return std::nullopt;
      p *= d;
    }
    return p;
  };
  std::optional<int64_t> outer = product(shape.take_front(axis));
  std::optional<int64_t> inner = product(shape.drop_front(axis));
  // Copy a lone leading dimension; otherwise one side must be static.
  if (axis == 1)
    return reshapeTo(ctx, {0, -1});
  if (outer)
    return reshapeTo(ctx, {*outer, -1});
  if (inner)
    return reshapeTo(ctx, {-1, *inner});
  return ctx.error("cannot flatten " + dfg::formatShape(shape) + " at axis " +
                   std::to_string(axis) +
                   ": both sides have dynamic dimensions");
}

/// Softmax-13(x, axis) -> dfg.softmax(x, axis). (Before opset 13, Softmax
/// flattened to 2-D, which is why no earlier entry exists.)
LogicalResult legalizeSoftmax(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  int64_t axis = ctx.attrInt("axis", -1);
  if (!isa<FloatType>(in.getElementType()))
    return ctx.error("Softmax needs a floating-point input");
  if (in.getRank() == 0 || axis < -in.getRank() || axis >= in.getRank())
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " +
                     std::to_string(in.getRank()));
  Value result =
      dfg::SoftmaxOp::create(ctx.builder(), ctx.loc(), in, ctx.input(0), axis);
  return ctx.setResults(result);
}

/// Identity(x) -> x
LogicalResult legalizeIdentity(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  return ctx.setResults(ctx.input(0));
}

/// Dropout(x, ratio, training_mode = false) -> x  (inference)
LogicalResult legalizeDropout(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  if (ctx.input(2)) {
    FailureOr<SmallVector<int64_t>> training =
        ctx.constantInts(2, "training_mode");
    if (failed(training))
      return failure();
    if (!training->empty() && training->front() != 0)
      return ctx.error("training_mode is true; meshc compiles inference");
  }
  return ctx.setResults(ctx.input(0));
}

/// Constant(value = t) -> dfg.constant t   (small literals only)
LogicalResult legalizeConstant(NodeContext &ctx) {
  OpBuilder &b = ctx.builder();
  DenseElementsAttr value;
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    FailureOr<DenseElementsAttr> attr = ctx.tensorAttr(*a);
    if (failed(attr))
      return failure();
    value = *attr;
  } else if (const onnx::AttributeProto *a = ctx.attr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   a->f());
  } else if (const onnx::AttributeProto *a = ctx.attr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   static_cast<int64_t>(a->i()));
  } else if (const onnx::AttributeProto *a = ctx.attr("value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getF32Type()),
        ArrayRef<float>(v));
  } else if (const onnx::AttributeProto *a = ctx.attr("value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return ctx.error("Constant without a supported value attribute (value, "
                     "value_float(s), value_int(s)); sparse and string "
                     "constants are not supported");
  }
  return ctx.setResults(
      dfg::ConstantOp::create(b, ctx.loc(), value).getResult());
}

} // namespace

void populateLayoutLegalizations(LegalizationTable &table) {
  table.add("", "Reshape", 13, legalizeReshape13);
  table.add("", "Reshape", 14, legalizeReshape14);
  table.add("", "Transpose", 13, legalizeTranspose);
  table.add("", "Flatten", 13, legalizeFlatten);
  table.add("", "Softmax", 13, legalizeSoftmax);
  table.add("", "Identity", 13, legalizeIdentity);
  table.add("", "Dropout", 13, legalizeDropout);
  table.add("", "Constant", 13, legalizeConstant);
}

} // namespace meshc::onnximport
