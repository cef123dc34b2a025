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
// NonZero of a tensor proven nonzero everywhere (torch's repeat_interleave)
// is the coordinates of its elements.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/TypeUtilities.h"
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
  // A float range one of whose bounds is a size cast to float
  // (`torch.arange(seq_len)` of floats, as a rotary table takes its
  // positions): the int64 range of the whole bounds, cast.
  auto castSize = [&](unsigned i) -> Value {
    auto cast = ctx.input(i).getDefiningOp<dfg::CastOp>();
    return cast && isa_and_nonnull<dfg::SizesOp>(
                       cast.getInput().getDefiningOp())
               ? cast.getInput()
               : Value();
  };
  Type element = ctx.inputType(0).getElementType();
  if (isa<FloatType>(element) && (castSize(0) || castSize(1))) {
    SmallVector<AffineExpr> bounds;
    for (unsigned i : {0u, 1u}) {
      if (Value size = castSize(i)) {
        std::optional<SmallVector<AffineExpr>> exprs = ctx.valuesOf(size);
        if (!exprs || exprs->size() != 1)
          return ctx.error("the range's bounds must be scalars");
        bounds.push_back(exprs->front());
        continue;
      }
      FailureOr<double> v =
          scalarInput(ctx, i, i == 0 ? "start" : "limit", folder);
      if (failed(v))
        return failure();
      if (*v != std::trunc(*v) || std::abs(*v) > 9.0e15)
        return ctx.error("a float range whose other bound is a size must "
                         "start and end at whole numbers");
      bounds.push_back(getAffineConstantExpr(static_cast<int64_t>(*v),
                                             ctx.builder().getContext()));
    }
    FailureOr<double> delta = scalarInput(ctx, 2, "delta", folder);
    if (failed(delta))
      return failure();
    if (*delta == 0 || *delta != std::trunc(*delta))
      return ctx.error("a float range whose bound is a size must step by a "
                       "whole number other than 0");
    Type i64 = ctx.builder().getI64Type();
    auto [map, names] = ctx.dimTable().write(bounds);
    Value range = ctx.refineType(
        dfg::RangeOp::create(ctx.builder(), ctx.loc(),
                             RankedTensorType::get({ShapedType::kDynamic}, i64),
                             map, static_cast<int64_t>(*delta), names));
    Value cast = ctx.refineType(dfg::CastOp::create(
        ctx.builder(), ctx.loc(),
        RankedTensorType::get({ShapedType::kDynamic}, element), range,
        element));
    return ctx.setResults(cast);
  }
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

/// The least and greatest element of an integer or bool value, from how it
/// is computed: literals, constant ranges, views and broadcasts of them,
/// integer casts, maxima and means (of values at least one element wide),
/// sums and differences; std::nullopt where unknown.
std::optional<std::pair<double, double>> valueBounds(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16 ||
      isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()))
    return std::nullopt;
  if (auto c = dyn_cast<dfg::ConstantOp>(op)) {
    auto attr = dyn_cast<DenseIntElementsAttr>(c.getValue());
    if (!attr || attr.empty())
      return std::nullopt;
    bool isBool = attr.getElementType().isInteger(1);
    double lo = INFINITY, hi = -INFINITY;
    for (const APInt &x : attr) {
      double d = isBool ? double(x.getBoolValue()) : double(x.getSExtValue());
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    return std::pair(lo, hi);
  }
  if (dfg::movesElements(op) || isa<dfg::ReduceMaxOp>(op))
    return valueBounds(op->getOperand(0), depth + 1);
  if (auto c = dyn_cast<dfg::CastOp>(op)) {
    // To bool: 1 where nonzero. To a narrower integer: only values it
    // holds as they are.
    auto in = valueBounds(c.getInput(), depth + 1);
    Type to = getElementTypeOrSelf(c.getType());
    if (!in)
      return std::nullopt;
    if (to.isInteger(1)) {
      bool zero = in->first <= 0 && in->second >= 0;
      bool nonzero = in->first != 0 || in->second != 0;
      return std::pair(zero ? 0.0 : 1.0, nonzero ? 1.0 : 0.0);
    }
    if (to.isInteger(32) && (in->first < INT32_MIN || in->second > INT32_MAX))
      return std::nullopt;
    return in;
  }
  if (isa<dfg::AddOp, dfg::SubOp>(op)) {
    auto a = valueBounds(op->getOperand(0), depth + 1);
    auto b = valueBounds(op->getOperand(1), depth + 1);
    if (!a || !b)
      return std::nullopt;
    if (isa<dfg::AddOp>(op))
      return std::pair(a->first + b->first, a->second + b->second);
    return std::pair(a->first - b->second, a->second - b->first);
  }
  return std::nullopt;
}

/// True (false) if every element of the integer or bool `v` is provably
/// nonzero (zero); std::nullopt where that depends on the data. Comparisons
/// decide by their operands' bounds; not, and, or and casts carry it.
std::optional<bool> uniformTruth(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 16)
    return std::nullopt;
  if (dfg::movesElements(op) ||
      (isa<dfg::CastOp>(op) &&
       !isa<FloatType>(getElementTypeOrSelf(op->getOperand(0).getType()))))
    return uniformTruth(op->getOperand(0), depth + 1);
  if (isa<dfg::NotOp>(op)) {
    std::optional<bool> in = uniformTruth(op->getOperand(0), depth + 1);
    return in ? std::optional<bool>(!*in) : std::nullopt;
  }
  if (isa<dfg::AndOp, dfg::OrOp>(op)) {
    std::optional<bool> a = uniformTruth(op->getOperand(0), depth + 1);
    std::optional<bool> b = uniformTruth(op->getOperand(1), depth + 1);
    bool isAnd = isa<dfg::AndOp>(op);
    if (a && b)
      return isAnd ? *a && *b : *a || *b;
    if ((a && *a != isAnd) || (b && *b != isAnd))
      return !isAnd; // a false factor, a true term
    return std::nullopt;
  }
  if (isa<dfg::LessOp, dfg::LessOrEqualOp, dfg::GreaterOp,
          dfg::GreaterOrEqualOp, dfg::EqualOp>(op)) {
    auto a = valueBounds(op->getOperand(0));
    auto b = valueBounds(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    auto [alo, ahi] = *a;
    auto [blo, bhi] = *b;
    auto decide = [](bool always, bool never) -> std::optional<bool> {
      if (always)
        return true;
      if (never)
        return false;
      return std::nullopt;
    };
    if (isa<dfg::LessOp>(op))
      return decide(ahi < blo, alo >= bhi);
    if (isa<dfg::LessOrEqualOp>(op))
      return decide(ahi <= blo, alo > bhi);
    if (isa<dfg::GreaterOp>(op))
      return decide(alo > bhi, ahi <= blo);
    if (isa<dfg::GreaterOrEqualOp>(op))
      return decide(alo >= bhi, ahi < blo);
    return decide(alo == ahi && blo == bhi && alo == blo,
                  ahi < blo || bhi < alo);
  }
  auto b = valueBounds(v, depth);
  if (!b)
    return std::nullopt;
  if (b->first > 0 || b->second < 0)
    return true;
  if (b->first == 0 && b->second == 0)
    return false;
  return std::nullopt;
}

/// NonZero(x): the coordinates of every element of x in row-major order,
/// [rank, numel] (numel symbolic where x's dimensions are). Where x is
/// provably nonzero everywhere, that is NonZero's result: torch's
/// repeat_interleave, as TorchScript writes it, takes NonZero(Less(Range(0,
/// max(r)), r)) of constant repeats r (Cohere's and GLM's interleaved rotary
/// tables). Where the data decides (a mixture of experts routing tokens,
/// transformers 4.x's `torch.where(expert_mask[e])`), the columns x selects
/// are marked by a mask (x != 0, flattened) for the importer to follow to
/// the scatter that adds them up (RunTimeSplits): every column is computed,
/// the unselected ones add nothing.
LogicalResult legalizeNonZero(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Value x = ctx.input(0);
  bool everywhere = uniformTruth(x) == std::optional<bool>(true);
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0)
    return ctx.error("NonZero of a scalar is not supported");
  if (llvm::is_contained(dims, AffineExpr()))
    return ctx.error("the input's dimensions follow from no named input "
                     "dimension");
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Type i64 = b.getI64Type();
  auto [map, names] = ctx.dimTable().write(dims);
  SmallVector<Value> rows;
  for (int64_t a = 0; a < rank; ++a) {
    SmallVector<int64_t> laid(rank, 1);
    laid[a] = -1;
    FailureOr<Value> along = ctx.iota(dims[a], laid);
    if (failed(along))
      return failure();
    Value grid = ctx.refineType(dfg::SymbolicExpandOp::create(
        b, loc,
        RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                              i64),
        *along, map, names));
    SmallVector<int64_t> flat = {1, -1};
    rows.push_back(ctx.refineType(dfg::ReshapeOp::create(
        b, loc, RankedTensorType::get({1, ShapedType::kDynamic}, i64), grid,
        b.getDenseI64ArrayAttr(flat))));
  }
  Value coords =
      rows.size() == 1
          ? rows.front()
          : ctx.refineType(dfg::ConcatOp::create(
                b, loc,
                RankedTensorType::get({rank, ShapedType::kDynamic}, i64), rows,
                0));
  if (!everywhere) {
    // The mask of the selected columns: x != 0, in the coordinates' order.
    Type i1 = b.getI1Type();
    RankedTensorType in = ctx.inputType(0);
    Value truth = x;
    if (!in.getElementType().isInteger(1)) {
      FailureOr<Value> zero =
          binary<dfg::EqualOp>(ctx, x, ctx.scalar(0, in.getElementType()), i1);
      if (failed(zero))
        return failure();
      truth = dfg::NotOp::create(b, loc, zero->getType(), *zero);
    }
    SmallVector<int64_t> flat = {-1};
    Value mask = ctx.refineType(dfg::ReshapeOp::create(
        b, loc, RankedTensorType::get({ShapedType::kDynamic}, i1), truth,
        b.getDenseI64ArrayAttr(flat)));
    ctx.setSelection(mask);
  }
  return ctx.setResults(coords);
}

} // namespace

void populateShapeLegalizations(LegalizationTable &table) {
  table.add("", "Shape", 13, legalizeShape);
  table.add("", "Shape", 15, legalizeShape); // + start, end
  table.add("", "Size", 13, legalizeSize);
  table.add("", "Range", 11, legalizeRange);
  table.add("", "ConstantOfShape", 9, legalizeConstantOfShape);
  table.add("", "NonZero", 13, legalizeNonZero);
}

} // namespace meshc::onnximport
