//===- LegalizeShapes.cpp - The shape family of ONNX ops -> constants -----===//
//
// Part of meshc. Shape, Size, Range and ConstantOfShape: the exporters' shape
// arithmetic. With static shapes they become dfg.constant values, which the
// importer's constant folding carries through Gather, Unsqueeze, Concat and
// the arithmetic to the Reshape / Expand / Slice nodes that read them, so none
// of them reaches the IR. A symbolic dimension (a graph input's dim_param, as
// derived through the ops in between) becomes an expression in a dfg.sizes,
// which symbolic folding (SymbolicFolding.cpp) carries the same way; Range
// and ConstantOfShape on such sizes become dfg.range and dfg.symbolic_expand.
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

/// The dimensions [start, end) of input 0 as a dfg.constant when static,
/// else a dfg.sizes of their symbolic expressions; `product` multiplies them
/// into one scalar (Size).
LogicalResult bindDims(NodeContext &ctx, int64_t start, int64_t end,
                       bool product) {
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  SmallVector<AffineExpr> picked(dims.begin() + start, dims.begin() + end);
  MLIRContext *context = ctx.builder().getContext();
  for (auto [i, d] : llvm::enumerate(picked))
    if (!d)
      return ctx.error("dimension " + std::to_string(start + i) +
                       " of the input " +
                       dfg::formatShape(ctx.inputType(0).getShape()) +
                       " is dynamic and follows from no named input "
                       "dimension; give the model's symbolic input "
                       "dimensions sizes with --dim NAME=SIZE");
  if (product) {
    AffineExpr p = getAffineConstantExpr(1, context);
    for (AffineExpr d : picked)
      p = p * d;
    picked.assign({p});
  }
  auto i64 = ctx.builder().getI64Type();
  auto type =
      product
          ? RankedTensorType::get({}, i64)
          : RankedTensorType::get({static_cast<int64_t>(picked.size())}, i64);
  if (llvm::all_of(picked,
                   [](AffineExpr d) { return isa<AffineConstantExpr>(d); })) {
    SmallVector<int64_t> values;
    for (AffineExpr d : picked)
      values.push_back(cast<AffineConstantExpr>(d).getValue());
    return bindConstant(
        ctx, DenseElementsAttr::get(type, ArrayRef<int64_t>(values)));
  }
  auto [map, names] = ctx.dimTable().write(picked);
  return ctx.setResults(
      dfg::SizesOp::create(ctx.builder(), ctx.loc(), type, map, names)
          .getResult());
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
  return bindDims(ctx, start, std::max(start, end), /*product=*/false);
}

/// Size(x) -> dfg.constant of x's element count.
LogicalResult legalizeSize(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  return bindDims(ctx, 0, ctx.inputType(0).getRank(), /*product=*/true);
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
  if (ctx.isSymbolic(0) || ctx.isSymbolic(1)) {
    // Bounds from symbolic dimensions (position ids past .. past + seq):
    // dfg.range, its length derived by the symbolic shape rules.
    Type element = ctx.inputType(0).getElementType();
    if (!element.isInteger(64) && !element.isInteger(32))
      return ctx.error("a Range with symbolic bounds must be of int64 or "
                       "int32");
    auto start = ctx.symbolicInts(0, "start");
    auto limit = ctx.symbolicInts(1, "limit");
    auto delta = ctx.constantInts(2, "delta");
    if (failed(start) || failed(limit) || failed(delta))
      return failure();
    if (start->size() != 1 || limit->size() != 1 || delta->size() != 1 ||
        delta->front() == 0)
      return ctx.error("start, limit and delta must be scalars, delta not 0");
    auto [map, names] = ctx.dimTable().write({start->front(), limit->front()});
    Value range = dfg::RangeOp::create(
        ctx.builder(), ctx.loc(),
        RankedTensorType::get({ShapedType::kDynamic}, element), map,
        delta->front(), names);
    return ctx.setResults(ctx.refineType(range));
  }
  StringRef folder = ctx.modelFolder();
  FailureOr<double> start = scalarInput(ctx, 0, "start", folder);
  FailureOr<double> limit = scalarInput(ctx, 1, "limit", folder);
  FailureOr<double> delta = scalarInput(ctx, 2, "delta", folder);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  if (*delta == 0)
    return ctx.error("delta is 0");
  double count = std::ceil((*limit - *start) / *delta);
  if (std::isnan(count))
    return ctx.error("start, limit and delta give no count of elements "
                     "(NaN or infinite)");
  count = std::max(count, 0.0);
  // Compared as a double: the count may be past int64 (or infinite).
  if (count > dfg::ConstantOp::kMaxConstantElements)
    return ctx.error("the range has " +
                     (count < 9.2e18 ? std::to_string(int64_t(count))
                                     : std::string("more than 2^63")) +
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

/// ConstantOfShape's `value`: one element, by default the float 0.
FailureOr<Attribute> fillValue(NodeContext &ctx) {
  const onnx::AttributeProto *value = ctx.attr("value");
  if (!value)
    return Attribute(ctx.builder().getF32FloatAttr(0.0f));
  FailureOr<DenseElementsAttr> attr = ctx.tensorAttr(*value);
  if (failed(attr))
    return failure();
  if (attr->getNumElements() != 1)
    return ctx.error("value must hold exactly one element");
  return *attr->value_begin<Attribute>();
}

/// ConstantOfShape(shape) value -> a splat dfg.constant; with a symbolic
/// shape, the scalar broadcast to it (dfg.symbolic_expand).
LogicalResult legalizeConstantOfShape(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  FailureOr<Attribute> element = fillValue(ctx);
  if (failed(element))
    return failure();
  Type elementType = cast<TypedAttr>(*element).getType();
  OpBuilder &b = ctx.builder();
  if (ctx.isSymbolic(0)) {
    auto dims = ctx.symbolicInts(0, "the shape");
    if (failed(dims))
      return failure();
    Value scalar = dfg::ConstantOp::create(
        b, ctx.loc(),
        DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                               *element));
    auto [map, names] = ctx.dimTable().write(*dims);
    SmallVector<int64_t> shape(dims->size(), ShapedType::kDynamic);
    Value filled = dfg::SymbolicExpandOp::create(
        b, ctx.loc(), RankedTensorType::get(shape, elementType), scalar, map,
        names);
    return ctx.setResults(ctx.refineType(filled));
  }
  auto shape = ctx.constantInts(0, "the shape");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; }))
    return ctx.error("the shape has a negative dimension");
  return bindConstant(
      ctx, DenseElementsAttr::get(RankedTensorType::get(*shape, elementType),
                                  *element));
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
