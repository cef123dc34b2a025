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
  if (std::is_same_v<OpTy, dfg::EqualOp> && lhs.getElementType().isInteger(1)) {
    // Equal of bools (torch's floor division tests `(r < 0) == (d < 0)`):
    // both true or both false.
    OpBuilder &b = ctx.builder();
    Type i1 = b.getI1Type();
    Value notL = dfg::NotOp::create(b, ctx.loc(), lhs, ctx.input(0));
    Value notR = dfg::NotOp::create(b, ctx.loc(), rhs, ctx.input(1));
    FailureOr<Value> both =
        binary<dfg::AndOp>(ctx, ctx.input(0), ctx.input(1), i1);
    FailureOr<Value> neither = binary<dfg::AndOp>(ctx, notL, notR, i1);
    if (failed(both) || failed(neither))
      return failure();
    FailureOr<Value> equal = binary<dfg::OrOp>(ctx, *both, *neither, i1);
    return failed(equal) ? failure() : ctx.setResults(*equal);
  }
  return ctx.emit<OpTy>(dfg::broadcastShapes(lhs.getShape(), rhs.getShape()),
                        ctx.builder().getI1Type(), ctx.input(0), ctx.input(1));
}

/// dfg.<op>(...dfg.<op>(x0, x1)..., xn) over the node's inputs.
template <typename OpTy> FailureOr<Value> foldInputs(NodeContext &ctx) {
  if (failed(ctx.requireAllInputs()))
    return failure();
  Value acc = ctx.input(0);
  for (unsigned i = 1; i < ctx.numInputs(); ++i) {
    if (elementOf(acc) != ctx.inputType(i).getElementType())
      return ctx.error("input " + std::to_string(i) +
                       " has a different element type from input 0");
    FailureOr<Value> next =
        binary<OpTy>(ctx, acc, ctx.input(i), elementOf(acc));
    if (failed(next))
      return failure();
    acc = *next;
  }
  return acc;
}

/// Min/Max/Sum(x0, x1, ..., xn) -> dfg.<op>(...dfg.<op>(x0, x1)..., xn)
template <typename OpTy> LogicalResult legalizeVariadic(NodeContext &ctx) {
  FailureOr<Value> acc = foldInputs<OpTy>(ctx);
  return failed(acc) ? failure() : ctx.setResults(*acc);
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

/// EyeLike(x) k dtype -> ones where column - row == k, zeros elsewhere,
/// shaped as the 2-D x (symbolic sizes included: positions from ranges),
/// of `dtype` (x's element type by default).
LogicalResult legalizeEyeLike(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (in.getRank() != 2)
    return ctx.error("EyeLike of a tensor of rank " +
                     std::to_string(in.getRank()) + ": ONNX takes rank 2");
  Type element = in.getElementType();
  if (const onnx::AttributeProto *dtype = ctx.attr("dtype")) {
    FailureOr<Type> given = elementType(*ctx.builder().getContext(), dtype->i(),
                                        "dtype", ctx.loc());
    if (failed(given))
      return failure();
    element = *given;
  }
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  if (!dims[0] || !dims[1])
    return ctx.error("EyeLike of " + dfg::formatShape(in.getShape()) +
                     ", whose sizes follow from no named input dimension");
  FailureOr<Value> rows = ctx.iota(dims[0], {-1, 1});
  FailureOr<Value> cols = ctx.iota(dims[1], {1, -1});
  if (failed(rows) || failed(cols))
    return failure();
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Type i64 = b.getI64Type();
  auto shape = RankedTensorType::get(in.getShape(), i64);
  Value offset =
      ctx.refineType(dfg::SubOp::create(b, loc, shape, *cols, *rows));
  Value diagonal = ctx.refineType(dfg::EqualOp::create(
      b, loc, RankedTensorType::get(in.getShape(), b.getI1Type()), offset,
      ctx.scalar(static_cast<double>(ctx.attrInt("k", 0)), i64)));
  return ctx.setResults(
      dfg::CastOp::create(b, loc, RankedTensorType::get(in.getShape(), element),
                          diagonal, element)
          .getResult());
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
  Value result = dfg::MaxOp::create(ctx.builder(), ctx.loc(), in, ctx.input(0),
                                    ctx.scalar(0, in.getElementType()));
  return ctx.setResults(result);
}

// Activations and small functions ONNX names that meshc writes with the ops
// it has: one place each, here, and the kernels stay as they are.

/// Builds an activation of the node's one input, elementwise in its type.
struct Activation {
  NodeContext &ctx;
  RankedTensorType type;
  Value x;

  OpBuilder &b() { return ctx.builder(); }
  Value scalar(double v) { return ctx.scalar(v, type.getElementType()); }
  template <typename OpTy, typename... Args> Value make(Args... args) {
    return OpTy::create(ctx.builder(), ctx.loc(), type, args...);
  }
  Value magnitude(Value v) { return make<dfg::MaxOp>(v, make<dfg::NegOp>(v)); }
  Value less(Value l, Value r) {
    return dfg::LessOp::create(b(), ctx.loc(), type.clone(b().getI1Type()), l,
                               r);
  }
};

/// The activation of a node's one input; `floats`: defined on
/// floating-point values only (an error names the type otherwise).
FailureOr<Activation> activation(NodeContext &ctx, bool floats = true) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (floats && !isa<FloatType>(in.getElementType()))
    return ctx.error("needs a floating-point input, got " +
                     dfg::formatShape(in.getShape()) + " of integers or bools");
  return Activation{ctx, in, ctx.input(0)};
}

/// Mod(a, b): the remainder of the quotient truncated toward zero,
/// a - trunc(a / b) * b (fmod = 1: C's fmod, the only form ONNX allows for
/// floats); for integers with fmod = 0 (Python's %, the default), the
/// remainder takes the divisor's sign: b is added where it is non-zero and
/// its sign differs from b's. Canine hashes its character ids so.
LogicalResult legalizeMod(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Value a = ctx.input(0), b = ctx.input(1);
  if (ctx.isSymbolic(0) &&
      isa_and_nonnull<dfg::ConstantOp>(b.getDefiningOp()) &&
      elementOf(a).isSignlessInteger() && elementOf(b) == elementOf(a)) {
    // Sizes modulo a positive constant (a pad up to a multiple of a chunk:
    // (c - S mod c) mod c): kept symbolic, as the floor remainder that
    // Python's sign gives for a positive divisor.
    FailureOr<SmallVector<AffineExpr>> sizes = ctx.symbolicInts(0, "A");
    FailureOr<SmallVector<int64_t>> divisor = ctx.constantInts(1, "B");
    if (succeeded(sizes) && succeeded(divisor) &&
        llvm::all_of(*divisor, [](int64_t d) { return d > 0; }) &&
        (divisor->size() == 1 || divisor->size() == sizes->size()) &&
        ctx.inputType(1).getRank() <= ctx.inputType(0).getRank()) {
      SmallVector<AffineExpr> rest;
      for (auto [i, e] : llvm::enumerate(*sizes))
        rest.push_back(e % (*divisor)[divisor->size() == 1 ? 0 : i]);
      auto [map, names] = ctx.dimTable().write(rest);
      return ctx.setResults(dfg::SizesOp::create(ctx.builder(), ctx.loc(),
                                                 ctx.inputType(0), map, names)
                                .getResult());
    }
  }
  Type element = elementOf(a);
  if (element != elementOf(b))
    return ctx.mismatchedTypes();
  bool floats = isa<FloatType>(element);
  bool fmod = ctx.attrInt("fmod", 0) != 0;
  if (floats && !fmod)
    return ctx.error("Mod of floating-point values needs fmod = 1");
  Type i1 = ctx.builder().getI1Type();
  Value zero = ctx.scalar(0, element);
  FailureOr<Value> q = binary<dfg::DivOp>(ctx, a, b, element);
  if (failed(q))
    return failure();
  Value quotient = *q;
  if (floats) {
    // Float division does not truncate: trunc(q) = q < 0 ? ceil(q) : floor(q).
    FailureOr<Value> negative = binary<dfg::LessOp>(ctx, quotient, zero, i1);
    if (failed(negative))
      return failure();
    auto type = cast<RankedTensorType>(quotient.getType());
    Value up = dfg::CeilOp::create(ctx.builder(), ctx.loc(), type, quotient);
    Value down = dfg::FloorOp::create(ctx.builder(), ctx.loc(), type, quotient);
    quotient = dfg::WhereOp::create(ctx.builder(), ctx.loc(), type, *negative,
                                    up, down);
  }
  FailureOr<Value> product = binary<dfg::MulOp>(ctx, quotient, b, element);
  FailureOr<Value> r =
      failed(product) ? product : binary<dfg::SubOp>(ctx, a, *product, element);
  if (failed(r) || fmod)
    return failed(r) ? failure() : ctx.setResults(*r);
  // Python's sign: r + b where r's sign is the other one than b's,
  // fix = b < 0 ? r > 0 : r < 0.
  FailureOr<Value> rNegative = binary<dfg::LessOp>(ctx, *r, zero, i1);
  FailureOr<Value> rPositive = binary<dfg::LessOp>(ctx, zero, *r, i1);
  FailureOr<Value> bNegative = binary<dfg::LessOp>(ctx, b, zero, i1);
  FailureOr<Value> fix =
      failed(rNegative) || failed(rPositive) || failed(bNegative)
          ? FailureOr<Value>(failure())
          : ctx.create<dfg::WhereOp>(
                dfg::broadcastShapes(shapeOf(*bNegative), shapeOf(*r)), i1,
                *bNegative, *rPositive, *rNegative);
  FailureOr<Value> shifted =
      failed(fix) ? fix : binary<dfg::AddOp>(ctx, *r, b, element);
  if (failed(shifted))
    return failure();
  auto type = cast<RankedTensorType>(shifted->getType());
  Value result =
      dfg::WhereOp::create(ctx.builder(), ctx.loc(), type, *fix, *shifted, *r);
  return ctx.setResults(result);
}

/// Abs(x) -> dfg.max(x, -x) (integers too).
LogicalResult legalizeAbs(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx, /*floats=*/false);
  return failed(a) ? failure() : ctx.setResults(a->magnitude(a->x));
}

/// Sign(x) -> where(x > 0, 1, where(x < 0, -1, x)): 0 and NaN stay.
LogicalResult legalizeSign(NodeContext &ctx) {
  // Of numbers, integers too (DeBERTa's relative position buckets take
  // the sign of integer distances).
  FailureOr<Activation> a = activation(ctx, /*floats=*/false);
  if (failed(a))
    return failure();
  if (a->type.getElementType().isInteger(1))
    return ctx.error("Sign of a bool tensor: ONNX takes the sign of numbers");
  Value x = a->x, zero = a->scalar(0);
  Value low = a->make<dfg::WhereOp>(a->less(x, zero), a->scalar(-1), x);
  return ctx.setResults(
      a->make<dfg::WhereOp>(a->less(zero, x), a->scalar(1), low));
}

/// LeakyRelu(x) alpha -> where(x < 0, alpha x, x); Elu(x) alpha ->
/// where(x < 0, alpha (exp(x) - 1), x).
LogicalResult legalizeNegativeSlope(NodeContext &ctx, bool exponential) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value x = a->x, below = x;
  if (exponential)
    below = a->make<dfg::SubOp>(a->make<dfg::ExpOp>(x), a->scalar(1));
  below = a->make<dfg::MulOp>(
      below, a->scalar(ctx.attrFloat("alpha", exponential ? 1.0f : 0.01f)));
  return ctx.setResults(
      a->make<dfg::WhereOp>(a->less(x, a->scalar(0)), below, x));
}

/// HardSigmoid(x) alpha beta -> min(max(alpha x + beta, 0), 1);
/// HardSwish(x) -> x HardSigmoid(x) with alpha 1/6, beta 1/2.
LogicalResult legalizeHard(NodeContext &ctx, bool swish) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  float alpha = swish ? 1.0f / 6 : ctx.attrFloat("alpha", 0.2f);
  float beta = swish ? 0.5f : ctx.attrFloat("beta", 0.5f);
  Value y = a->make<dfg::MulOp>(a->x, a->scalar(alpha));
  y = a->make<dfg::AddOp>(y, a->scalar(beta));
  y = a->make<dfg::MaxOp>(y, a->scalar(0));
  y = a->make<dfg::MinOp>(y, a->scalar(1));
  return ctx.setResults(swish ? a->make<dfg::MulOp>(a->x, y) : y);
}

/// com.microsoft QuickGelu(x) alpha -> x sigmoid(alpha x) (onnxruntime's
/// transformer optimizer fuses CLIP's `x * sigmoid(1.702 x)` so).
LogicalResult legalizeQuickGelu(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value scaled =
      a->make<dfg::MulOp>(a->x, a->scalar(ctx.attrFloat("alpha", 1.702f)));
  return ctx.setResults(
      a->make<dfg::MulOp>(a->x, a->make<dfg::SigmoidOp>(scaled)));
}

/// Softsign(x) -> x / (1 + |x|).
LogicalResult legalizeSoftsign(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value below = a->make<dfg::AddOp>(a->magnitude(a->x), a->scalar(1));
  return ctx.setResults(a->make<dfg::DivOp>(a->x, below));
}

/// softplus(x) = log(1 + exp(x)), written max(x, 0) + log(1 + exp(-|x|))
/// so that no exp overflows.
Value softplus(Activation &a, Value x) {
  Value tail = a.make<dfg::ExpOp>(a.make<dfg::NegOp>(a.magnitude(x)));
  tail = a.make<dfg::LogOp>(a.make<dfg::AddOp>(tail, a.scalar(1)));
  return a.make<dfg::AddOp>(a.make<dfg::MaxOp>(x, a.scalar(0)), tail);
}

/// Softplus(x) -> softplus(x) (Doge's gates, Mamba's step sizes).
LogicalResult legalizeSoftplus(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx);
  return failed(a) ? failure() : ctx.setResults(softplus(*a, a->x));
}

/// Mish(x) -> x tanh(softplus(x)).
LogicalResult legalizeMish(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value t = a->make<dfg::TanhOp>(softplus(*a, a->x));
  return ctx.setResults(a->make<dfg::MulOp>(a->x, t));
}

/// Selu(x) alpha gamma -> gamma where(x <= 0, alpha (exp(x) - 1), x);
/// Celu(x) alpha -> max(x, 0) + min(alpha (exp(x / alpha) - 1), 0).
LogicalResult legalizeScaledExponential(NodeContext &ctx, bool celu) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value x = a->x;
  if (celu) {
    float alpha = ctx.attrFloat("alpha", 1.0f);
    if (alpha == 0)
      return ctx.error("Celu's alpha must not be 0");
    Value e = a->make<dfg::ExpOp>(a->make<dfg::DivOp>(x, a->scalar(alpha)));
    e = a->make<dfg::MulOp>(a->make<dfg::SubOp>(e, a->scalar(1)),
                            a->scalar(alpha));
    return ctx.setResults(
        a->make<dfg::AddOp>(a->make<dfg::MaxOp>(x, a->scalar(0)),
                            a->make<dfg::MinOp>(e, a->scalar(0))));
  }
  float alpha = ctx.attrFloat("alpha", 1.67326319217681884765625f);
  float gamma = ctx.attrFloat("gamma", 1.05070102214813232421875f);
  Value below = a->make<dfg::SubOp>(a->make<dfg::ExpOp>(x), a->scalar(1));
  below = a->make<dfg::MulOp>(below, a->scalar(alpha));
  Value y = a->make<dfg::WhereOp>(a->less(a->scalar(0), x), x, below);
  return ctx.setResults(a->make<dfg::MulOp>(y, a->scalar(gamma)));
}

/// ThresholdedRelu(x) alpha -> where(alpha < x, x, 0).
LogicalResult legalizeThresholdedRelu(NodeContext &ctx) {
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  Value above = a->less(a->scalar(ctx.attrFloat("alpha", 1.0f)), a->x);
  return ctx.setResults(a->make<dfg::WhereOp>(above, a->x, a->scalar(0)));
}

/// PRelu(x, slope) -> where(x < 0, slope x, x), the slope broadcast to x
/// (its result has x's shape: ONNX's unidirectional broadcast).
LogicalResult legalizePRelu(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  FailureOr<Activation> a = activation(ctx);
  if (failed(a))
    return failure();
  if (ctx.inputType(1).getElementType() != a->type.getElementType())
    return ctx.mismatchedTypes();
  auto shape =
      dfg::broadcastShapes(a->type.getShape(), ctx.inputType(1).getShape());
  if (!shape)
    return ctx.error(llvm::toString(shape.takeError()));
  if (ArrayRef<int64_t>(*shape) != a->type.getShape())
    return ctx.error(
        "the slope " + dfg::formatShape(ctx.inputType(1).getShape()) +
        " must broadcast to the input " + dfg::formatShape(a->type.getShape()));
  Value scaled = a->make<dfg::MulOp>(a->x, ctx.input(1));
  return ctx.setResults(
      a->make<dfg::WhereOp>(a->less(a->x, a->scalar(0)), scaled, a->x));
}

/// Mean(x0, ..., xn) -> Sum(x0, ..., xn) / (n + 1).
LogicalResult legalizeMean(NodeContext &ctx) {
  FailureOr<Value> sum = foldInputs<dfg::AddOp>(ctx);
  if (failed(sum))
    return failure();
  auto type = cast<RankedTensorType>(sum->getType());
  if (!isa<FloatType>(type.getElementType()))
    return ctx.error("Mean needs floating-point inputs");
  Value mean = dfg::DivOp::create(
      ctx.builder(), ctx.loc(), type, *sum,
      ctx.scalar(double(ctx.numInputs()), type.getElementType()));
  return ctx.setResults(mean);
}

/// Xor(a, b) -> (a or b) and not (a and b).
LogicalResult legalizeXor(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Value x = ctx.input(0), y = ctx.input(1);
  if (elementOf(x) != elementOf(y))
    return ctx.mismatchedTypes();
  FailureOr<Value> either = binary<dfg::OrOp>(ctx, x, y, elementOf(x));
  FailureOr<Value> both = binary<dfg::AndOp>(ctx, x, y, elementOf(x));
  if (failed(either) || failed(both))
    return failure();
  OpBuilder &b = ctx.builder();
  auto type = cast<RankedTensorType>(both->getType());
  Value neither = dfg::NotOp::create(b, ctx.loc(), type, *both);
  return ctx.setResults(
      Value(dfg::AndOp::create(b, ctx.loc(), type, *either, neither)));
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

LogicalResult bitwiseTypeError(NodeContext &ctx, Type element) {
  std::string name;
  llvm::raw_string_ostream(name) << element;
  return ctx.error("computes on " + name +
                   "; meshc's bitwise ops take int64 or int32");
}

/// BitwiseAnd/Or/Xor(x, y) on integers -> dfg.bitwise_*.
template <typename OpTy> LogicalResult legalizeBitwise(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Type element = elementOf(ctx.input(0));
  if (element != elementOf(ctx.input(1)))
    return ctx.mismatchedTypes();
  if (!element.isInteger(64) && !element.isInteger(32))
    return bitwiseTypeError(ctx, element);
  return legalizeBroadcastBinary<OpTy>(ctx);
}

/// BitwiseNot(x) on integers: -1 - x (two's complement, exact for every
/// value).
LogicalResult legalizeBitwiseNot(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Type element = elementOf(ctx.input(0));
  if (!element.isInteger(64) && !element.isInteger(32))
    return bitwiseTypeError(ctx, element);
  return ctx.emit<dfg::SubOp>(dfg::Shape(ctx.inputType(0).getShape()), element,
                              ctx.scalar(-1, element), ctx.input(0));
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
  table.add("", "Mod", 13, legalizeMod);
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
  table.add("", "EyeLike", 9, legalizeEyeLike);
  table.add("", "EyeLike", 22, legalizeEyeLike); // + bf16
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
  table.add("", "Tan", 7, legalizeUnary<dfg::TanOp>);
  table.add("", "Asin", 7, legalizeUnary<dfg::AsinOp>);
  table.add("", "Acos", 7, legalizeUnary<dfg::AcosOp>);
  table.add("", "Atan", 7, legalizeUnary<dfg::AtanOp>);
  table.add("", "Sinh", 9, legalizeUnary<dfg::SinhOp>);
  table.add("", "Cosh", 9, legalizeUnary<dfg::CoshOp>);
  table.add("", "Asinh", 9, legalizeUnary<dfg::AsinhOp>);
  table.add("", "Acosh", 9, legalizeUnary<dfg::AcoshOp>);
  table.add("", "Atanh", 9, legalizeUnary<dfg::AtanhOp>);
  table.add("", "Log", 13, legalizeUnary<dfg::LogOp>);
  table.add("", "Floor", 13, legalizeUnary<dfg::FloorOp>);
  table.add("", "Ceil", 13, legalizeUnary<dfg::CeilOp>);
  table.add("", "Round", 11, legalizeUnary<dfg::RoundOp>);
  table.add("", "Not", 1, legalizeUnary<dfg::NotOp>);
  table.add("", "IsNaN", 9, legalizePredicate<dfg::IsNaNOp>);
  table.add("", "Abs", 13, legalizeAbs);
  table.add("", "Sign", 13, legalizeSign);
  table.add("", "LeakyRelu", 6, [](NodeContext &ctx) {
    return legalizeNegativeSlope(ctx, /*exponential=*/false);
  });
  table.add("", "Elu", 6, [](NodeContext &ctx) {
    return legalizeNegativeSlope(ctx, /*exponential=*/true);
  });
  table.add("", "HardSigmoid", 6,
            [](NodeContext &ctx) { return legalizeHard(ctx, false); });
  table.add("", "HardSwish", 14,
            [](NodeContext &ctx) { return legalizeHard(ctx, true); });
  table.add("", "Softsign", 1, legalizeSoftsign);
  table.add("com.microsoft", "QuickGelu", 1, legalizeQuickGelu);
  table.add("", "Softplus", 1, legalizeSoftplus);
  table.add("", "Mish", 18, legalizeMish);
  table.add("", "Selu", 6, [](NodeContext &ctx) {
    return legalizeScaledExponential(ctx, /*celu=*/false);
  });
  table.add("", "Celu", 12, [](NodeContext &ctx) {
    return legalizeScaledExponential(ctx, /*celu=*/true);
  });
  table.add("", "ThresholdedRelu", 10, legalizeThresholdedRelu);
  table.add("", "PRelu", 9, legalizePRelu);
  table.add("", "Sum", 13, legalizeVariadic<dfg::AddOp>);
  table.add("", "Mean", 13, legalizeMean);
  table.add("", "Xor", 7, legalizeXor);
  table.add("", "BitwiseAnd", 18, legalizeBitwise<dfg::BitwiseAndOp>);
  table.add("", "BitwiseOr", 18, legalizeBitwise<dfg::BitwiseOrOp>);
  table.add("", "BitwiseXor", 18, legalizeBitwise<dfg::BitwiseXorOp>);
  table.add("", "BitwiseNot", 18, legalizeBitwiseNot);
}

} // namespace meshc::onnximport
