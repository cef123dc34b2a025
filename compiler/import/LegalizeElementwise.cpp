//===- LegalizeElementwise.cpp - Elementwise ONNX ops -> dfg --------------===//
//
// Part of meshc. Broadcasting arithmetic, logic and comparisons, Where, Cast
// and the unary functions.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "compiler/import/OnnxTensors.h"
#include "dialects/dfg/IR/DfgOps.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Binary(a, b) -> dfg.<op>(a, b) with the broadcast result shape.
template <typename OpTy>
LogicalResult legalizeBroadcastBinary(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType lhs = ctx.inputType(0), rhs = ctx.inputType(1);
  if (lhs.getElementType() != rhs.getElementType())
    return ctx.mismatchedTypes();
  return ctx.emit<OpTy>(dfg::broadcastShapes(lhs.getShape(), rhs.getShape()),
                        lhs.getElementType(), ctx.input(0), ctx.input(1));
}

/// Compare(a, b) -> dfg.<compare>(a, b) : bool with the broadcast shape.
template <typename OpTy> LogicalResult legalizeCompare(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType lhs = ctx.inputType(0), rhs = ctx.inputType(1);
  if (lhs.getElementType() != rhs.getElementType())
    return ctx.mismatchedTypes();
  return ctx.emit<OpTy>(dfg::broadcastShapes(lhs.getShape(), rhs.getShape()),
                        ctx.builder().getI1Type(), ctx.input(0), ctx.input(1));
}

/// Min/Max(x0, x1, ..., xn) -> dfg.<op>(...dfg.<op>(x0, x1)..., xn)
template <typename OpTy> LogicalResult legalizeVariadic(NodeContext &ctx) {
  if (failed(ctx.requireAllInputs()))
    return failure();
  Value acc = ctx.input(0);
  for (unsigned i = 1; i < ctx.numInputs(); ++i) {
    auto lhs = cast<RankedTensorType>(acc.getType());
    RankedTensorType rhs = ctx.inputType(i);
    if (lhs.getElementType() != rhs.getElementType())
      return ctx.error("input " + std::to_string(i) +
                       " has a different element type from input 0");
    FailureOr<Value> next =
        ctx.create<OpTy>(dfg::broadcastShapes(lhs.getShape(), rhs.getShape()),
                         lhs.getElementType(), acc, ctx.input(i));
    if (failed(next))
      return failure();
    acc = *next;
  }
  return ctx.setResults(acc);
}

/// Pow(x, y) -> dfg.pow(x, cast(y)); ONNX lets the exponent have its own
/// type, dfg.pow takes both in the base's type.
LogicalResult legalizePow(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType base = ctx.inputType(0), exponent = ctx.inputType(1);
  Value y = ctx.input(1);
  if (exponent.getElementType() != base.getElementType())
    y = dfg::CastOp::create(
        ctx.builder(), ctx.loc(),
        RankedTensorType::get(exponent.getShape(), base.getElementType()), y,
        base.getElementType());
  return ctx.emit<dfg::PowOp>(
      dfg::broadcastShapes(base.getShape(), exponent.getShape()),
      base.getElementType(), ctx.input(0), y);
}

/// Where(c, x, y) -> dfg.where(c, x, y)
LogicalResult legalizeWhere(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  RankedTensorType c = ctx.inputType(0), x = ctx.inputType(1),
                   y = ctx.inputType(2);
  if (x.getElementType() != y.getElementType())
    return ctx.error("X and Y have different element types");
  auto values = dfg::broadcastShapes(x.getShape(), y.getShape());
  if (!values)
    return ctx.error(llvm::toString(values.takeError()));
  return ctx.emit<dfg::WhereOp>(dfg::broadcastShapes(c.getShape(), *values),
                                x.getElementType(), ctx.input(0), ctx.input(1),
                                ctx.input(2));
}

/// Cast(x, to) -> dfg.cast(x) to type(to)
LogicalResult legalizeCast(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  const onnx::AttributeProto *to = ctx.attr("to");
  if (!to)
    return ctx.error("Cast without a 'to' attribute");
  FailureOr<Type> element = elementType(*ctx.builder().getContext(), to->i(),
                                        "the cast target", ctx.loc());
  if (failed(element))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Value result = dfg::CastOp::create(
      ctx.builder(), ctx.loc(), RankedTensorType::get(in.getShape(), *element),
      ctx.input(0), *element);
  return ctx.setResults(result);
}

/// CastLike(x, like) -> dfg.cast(x) to element type of like
LogicalResult legalizeCastLike(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Type element = ctx.inputType(1).getElementType();
  RankedTensorType in = ctx.inputType(0);
  Value result = dfg::CastOp::create(
      ctx.builder(), ctx.loc(), RankedTensorType::get(in.getShape(), element),
      ctx.input(0), element);
  return ctx.setResults(result);
}

/// Clip(x, lo?, hi?) -> dfg.min(dfg.max(x, lo), hi); an omitted bound is
/// no bound.
LogicalResult legalizeClip(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Value acc = ctx.input(0);
  RankedTensorType in = ctx.inputType(0);
  for (unsigned i : {1u, 2u}) {
    if (!ctx.input(i))
      continue;
    RankedTensorType bound = ctx.inputType(i);
    if (bound.getRank() != 0 || bound.getElementType() != in.getElementType())
      return ctx.error("Clip bounds must be scalars of the input's type");
    Value next = i == 1 ? Value(dfg::MaxOp::create(ctx.builder(), ctx.loc(), in,
                                                   acc, ctx.input(i)))
                        : Value(dfg::MinOp::create(ctx.builder(), ctx.loc(), in,
                                                   acc, ctx.input(i)));
    acc = next;
  }
  return ctx.setResults(acc);
}

/// Relu(x) -> dfg.max(x, 0)
LogicalResult legalizeRelu(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Value result =
      dfg::MaxOp::create(ctx.builder(), ctx.loc(), in, ctx.input(0),
                         ctx.scalar(0, in.getElementType()));
  return ctx.setResults(result);
}

/// Trilu(x, k?) upper -> dfg.trilu with a constant diagonal k.
LogicalResult legalizeTrilu(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  int64_t k = 0;
  if (ctx.input(1)) {
    auto given = ctx.constantInts(1, "k");
    if (failed(given))
      return failure();
    if (given->size() != 1)
      return ctx.error("k must be a scalar");
    k = given->front();
  }
  if (ctx.inputType(0).getRank() < 2)
    return ctx.error("Trilu needs rank at least 2");
  Value result =
      dfg::TriluOp::create(ctx.builder(), ctx.loc(), ctx.inputType(0),
                           ctx.input(0), ctx.attrInt("upper", 1) != 0, k);
  return ctx.setResults(result);
}

/// Unary(x) -> dfg.<op>(x)
template <typename OpTy> LogicalResult legalizeUnary(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Value result =
      OpTy::create(ctx.builder(), ctx.loc(), ctx.inputType(0), ctx.input(0));
  return ctx.setResults(result);
}

/// IsNaN(x) -> dfg.<op>(x): a float tensor in, a bool tensor of its shape out
template <typename OpTy> LogicalResult legalizePredicate(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (!isa<FloatType>(in.getElementType()))
    return ctx.error("needs a floating-point input");
  return ctx.emit<OpTy>(dfg::Shape(in.getShape()), ctx.builder().getI1Type(),
                        ctx.input(0));
}

} // namespace

void populateElementwiseLegalizations(LegalizationTable &table) {
  // Each entry is registered at the since-version from which its current
  // semantics hold; later schema versions that only widen the accepted
  // types (Add-14, Cast-19/21/23, Where-16, ...) resolve to it.
  table.add("", "Add", 13, legalizeBroadcastBinary<dfg::AddOp>);
  table.add("", "Sub", 13, legalizeBroadcastBinary<dfg::SubOp>);
  table.add("", "Mul", 13, legalizeBroadcastBinary<dfg::MulOp>);
  table.add("", "Div", 13, legalizeBroadcastBinary<dfg::DivOp>);
  table.add("", "Pow", 13, legalizePow);
  table.add("", "Min", 13, legalizeVariadic<dfg::MinOp>);
  table.add("", "Max", 13, legalizeVariadic<dfg::MaxOp>);
  table.add("", "And", 7, legalizeBroadcastBinary<dfg::AndOp>);
  table.add("", "Or", 7, legalizeBroadcastBinary<dfg::OrOp>);
  table.add("", "Equal", 13, legalizeCompare<dfg::EqualOp>);
  table.add("", "Less", 13, legalizeCompare<dfg::LessOp>);
  table.add("", "Greater", 13, legalizeCompare<dfg::GreaterOp>);
  table.add("", "LessOrEqual", 12, legalizeCompare<dfg::LessOrEqualOp>);
  table.add("", "GreaterOrEqual", 12, legalizeCompare<dfg::GreaterOrEqualOp>);
  table.add("", "Where", 9, legalizeWhere);
  table.add("", "Cast", 13, legalizeCast);
  table.add("", "CastLike", 15, legalizeCastLike);
  table.add("", "Clip", 13, legalizeClip);
  table.add("", "Relu", 13, legalizeRelu);
  table.add("", "Trilu", 14, legalizeTrilu);
  table.add("", "Sqrt", 13, legalizeUnary<dfg::SqrtOp>);
  table.add("", "Reciprocal", 13, legalizeUnary<dfg::ReciprocalOp>);
  table.add("", "Neg", 13, legalizeUnary<dfg::NegOp>);
  table.add("", "Erf", 13, legalizeUnary<dfg::ErfOp>);
  table.add("", "Tanh", 13, legalizeUnary<dfg::TanhOp>);
  table.add("", "Sigmoid", 13, legalizeUnary<dfg::SigmoidOp>);
  table.add("", "Exp", 13, legalizeUnary<dfg::ExpOp>);
  table.add("", "Cos", 7, legalizeUnary<dfg::CosOp>);
  table.add("", "Sin", 7, legalizeUnary<dfg::SinOp>);
  table.add("", "Not", 1, legalizeUnary<dfg::NotOp>);
  table.add("", "IsNaN", 9, legalizePredicate<dfg::IsNaNOp>);
}

} // namespace meshc::onnximport
