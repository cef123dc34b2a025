//===- LegalizeShapes.cpp - The shape family of ONNX ops -> constants -----===//
//
// Part of meshc. Shape, Size, Range and ConstantOfShape: the exporters' shape
// arithmetic. With static shapes they become dfg.constant values, which the
// importer's constant folding carries through Gather, Unsqueeze, Concat and
// the arithmetic to the Reshape / Expand / Slice nodes that read them, so none
// of them reaches the IR. Dynamic dimensions need symbolic folding, which
// meshc does not do yet; those nodes are rejected with that reason, naming
// --dim, which makes the graph inputs' symbolic dimensions static.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/STLExtras.h"

#include <onnx/onnx_pb.h>

#include <cmath>

using namespace mlir;

namespace meshc::onnximport {
namespace {

LogicalResult bindConstant(NodeContext &ctx, DenseElementsAttr value) {
  return ctx.setResults(
      dfg::ConstantOp::create(ctx.builder(), ctx.loc(), value).getResult());
}

LogicalResult needsStaticShape(NodeContext &ctx, RankedTensorType type) {
  return ctx.error("the input " + dfg::formatShape(type.getShape()) +
                   " has dynamic dimensions; meshc folds shape arithmetic on "
                   "static dimensions only: give the model's symbolic input "
                   "dimensions sizes with --dim NAME=SIZE");
}

/// Shape(x) [start, end) -> dfg.constant of x's static dimensions.
LogicalResult legalizeShape(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  int64_t rank = in.getRank();
  // Shape-15 slices the dimensions; negative bounds count from the back and
  // both are clamped to [0, rank].
  auto clampDim = [&](int64_t d) {
    return std::clamp<int64_t>(d < 0 ? d + rank : d, 0, rank);
  };
  int64_t start = clampDim(ctx.attrInt("start", 0));
  int64_t end = clampDim(ctx.attrInt("end", rank));
  ArrayRef<int64_t> dims =
      in.getShape().slice(start, std::max<int64_t>(end - start, 0));
  if (llvm::any_of(dims, ShapedType::isDynamic))
    return needsStaticShape(ctx, in);
  auto type = RankedTensorType::get({static_cast<int64_t>(dims.size())},
                                    ctx.builder().getI64Type());
  return bindConstant(ctx, DenseElementsAttr::get(type, dims));
}

/// Size(x) -> dfg.constant of x's element count.
LogicalResult legalizeSize(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (!in.hasStaticShape())
    return needsStaticShape(ctx, in);
  auto type = RankedTensorType::get({}, ctx.builder().getI64Type());
  return bindConstant(ctx, DenseElementsAttr::get(
                               type, ArrayRef<int64_t>{in.getNumElements()}));
}

/// The value of a constant scalar input (dfg.constant, or a small integer
/// weight), through the reference evaluator.
FailureOr<double> scalarInput(NodeContext &ctx, unsigned i, StringRef what,
                              StringRef weightsDir) {
  Value v = ctx.input(i);
  Operation *def = v ? v.getDefiningOp() : nullptr;
  if (!isa_and_nonnull<dfg::ConstantOp, dfg::WeightOp>(def) ||
      ctx.inputType(i).getNumElements() != 1)
    return ctx.error(what + " must be a constant scalar");
  auto value = dfg::evaluateOp(def, {}, weightsDir);
  if (failed(value))
    return failure();
  return value->front().values.front();
}

/// Range(start, limit, delta) -> dfg.constant [start, start + delta, ...)
/// with ONNX's length max(ceil((limit - start) / delta), 0).
LogicalResult legalizeRange(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  StringRef folder = ctx.modelFolder();
  FailureOr<double> start = scalarInput(ctx, 0, "start", folder);
  FailureOr<double> limit = scalarInput(ctx, 1, "limit", folder);
  FailureOr<double> delta = scalarInput(ctx, 2, "delta", folder);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return ctx.error("delta is 0");
  double count = std::max(std::ceil((*limit - *start) / *delta), 0.0);
  if (count > dfg::ConstantOp::kMaxConstantElements)
    return ctx.error("the range has " + std::to_string(int64_t(count)) +
                     " elements, more than a literal may hold");
  dfg::EvalTensor t;
  t.elementType = ctx.inputType(0).getElementType();
  t.shape = {static_cast<int64_t>(count)};
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
    t.values.push_back(*start + i * *delta);
  t.values.push_back(*limit);
  bool exact = t.isExact();
  t.values.pop_back();
  if (!exact)
    return ctx.error("the range's bounds are too large to compute exactly "
                     "(beyond 2^53)");
  return bindConstant(ctx, dfg::toDenseAttr(t));
}

/// ConstantOfShape(shape) value -> a splat dfg.constant.
LogicalResult legalizeConstantOfShape(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  auto shape = ctx.constantInts(0, "the shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return ctx.error("the shape has a negative dimension");
  OpBuilder &b = ctx.builder();
  Attribute element = b.getF32FloatAttr(0.0f);
  if (const onnx::AttributeProto *value = ctx.attr("value")) {
    FailureOr<DenseElementsAttr> attr = ctx.tensorAttr(*value);
    if (failed(attr))
      return failure();
    if (attr->getNumElements() != 1)
      return ctx.error("value must hold exactly one element");
    element = *attr->value_begin<Attribute>();
  }
  auto type = RankedTensorType::get(*shape, cast<TypedAttr>(element).getType());
  return bindConstant(ctx, DenseElementsAttr::get(type, element));
}

} // namespace

void populateShapeLegalizations(LegalizationTable &table) {
  table.add("", "Shape", 13, legalizeShape);
  table.add("", "Shape", 15, legalizeShape); // + start, end
  table.add("", "Size", 13, legalizeSize);
  table.add("", "Range", 11, legalizeRange);
  table.add("", "ConstantOfShape", 9, legalizeConstantOfShape);
}

} // namespace meshc::onnximport
