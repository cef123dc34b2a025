//===- SymbolicFolding.cpp - Shape arithmetic on symbolic dimensions ------===//
//
// Part of meshc. The exporters compute shapes as data: Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, Sub of two lengths for a mask's bounds, Mul
// of two dimensions for a merged one. With symbolic dimensions, Shape gives a
// dfg.sizes (a vector of expressions over the named dimensions); this file
// folds the integer ops the importer creates on such vectors into new
// dfg.sizes, the way constant folding turns them into dfg.constant when
// shapes are static, so that the shape-consuming nodes (Reshape, Expand,
// Slice, Range, ConstantOfShape) read expressions.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <map>

using namespace mlir;

namespace meshc::onnximport {

bool isNonNegative(AffineExpr e) {
  std::optional<int64_t> least = dfg::boundsOf(e).least;
  return least && *least >= 0;
}

namespace {

using Exprs = SmallVector<AffineExpr>;

/// Elementwise `fn` with numpy broadcasting of 0-D / 1-D vectors.
std::optional<Exprs>
zipWith(const Exprs &a, const Exprs &b,
        function_ref<AffineExpr(AffineExpr, AffineExpr)> fn) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1)
    return std::nullopt;
  Exprs out;
  for (size_t i = 0, n = std::max(a.size(), b.size()); i < n; ++i) {
    AffineExpr r = fn(a[a.size() == 1 ? 0 : i], b[b.size() == 1 ? 0 : i]);
    if (!r)
      return std::nullopt;
    out.push_back(r);
  }
  return out;
}

/// Whether `e` is at least 1 for every size of the symbols in it.
bool isPositive(AffineExpr e) {
  std::optional<int64_t> least = dfg::boundsOf(e).least;
  return least && *least >= 1;
}

/// The sign of `e` at every size of its one symbol, where `e` is that
/// symbol's affine function plus floor divisions and remainders by
/// constants (min(S, the round-up of S to a multiple of 4) is S: the
/// difference is -((-S) mod 4)). With L the product of the divisors,
/// e(s + L) - e(s) is the same for every s, so e's values at 1 .. L and
/// that step decide its sign for every s >= 1. 1 if e >= 0 everywhere,
/// -1 if e <= 0, nullopt otherwise or for another form.
std::optional<int> periodicSign(AffineExpr e) {
  std::optional<unsigned> symbol;
  int64_t period = 1;
  bool ok = true;
  e.walk([&](AffineExpr sub) {
    if (auto s = dyn_cast<AffineSymbolExpr>(sub)) {
      ok &= !symbol || *symbol == s.getPosition();
      symbol = s.getPosition();
    } else if (isa<AffineDimExpr>(sub)) {
      ok = false;
    } else if (sub.getKind() == AffineExprKind::FloorDiv ||
               sub.getKind() == AffineExprKind::CeilDiv ||
               sub.getKind() == AffineExprKind::Mod) {
      auto d =
          dyn_cast<AffineConstantExpr>(cast<AffineBinaryOpExpr>(sub).getRHS());
      ok &= d && d.getValue() > 0 && d.getValue() <= 4096;
      if (ok)
        period *= d.getValue();
      ok &= period <= 4096;
    }
  });
  if (!ok || !symbol || period == 1)
    return std::nullopt;
  MLIRContext *ctx = e.getContext();
  SmallVector<AffineExpr> replacements;
  for (unsigned i = 0; i <= *symbol; ++i)
    replacements.push_back(getAffineSymbolExpr(i, ctx));
  auto at = [&](int64_t v) -> std::optional<int64_t> {
    replacements[*symbol] = getAffineConstantExpr(v, ctx);
    auto c = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(e.replaceSymbols(replacements), 0, *symbol + 1));
    return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
  };
  bool nonNegative = true, nonPositive = true;
  for (int64_t v = 1; v <= period; ++v) {
    std::optional<int64_t> x = at(v), y = at(v + period);
    if (!x || !y)
      return std::nullopt;
    nonNegative &= *x >= 0 && *y >= *x;
    nonPositive &= *x <= 0 && *y <= *x;
  }
  if (nonNegative)
    return 1;
  if (nonPositive)
    return -1;
  return std::nullopt;
}

/// The one symbol `e` reads, if it reads exactly one.
std::optional<unsigned> soleSymbol(AffineExpr e) {
  std::optional<unsigned> found;
  bool several = false;
  e.walk([&](AffineExpr x) {
    if (auto s = dyn_cast<AffineSymbolExpr>(x)) {
      if (found && *found != s.getPosition())
        several = true;
      found = s.getPosition();
    }
  });
  return several ? std::nullopt : found;
}

/// The least size s >= `from` of the one symbol `e` reads such that `e` is
/// at least 0 at every size from s on, up to 2^24.
std::optional<int64_t> leastWhereNonNegative(AffineExpr e, int64_t from) {
  auto holdsFrom = [&](int64_t s) {
    std::optional<int64_t> least =
        dfg::boundsOf(e, [&](unsigned) {
          return dfg::DimBounds{s, std::nullopt};
        }).least;
    return least && *least >= 0;
  };
  int64_t lo = from, hi = from + (int64_t(1) << 24);
  if (!holdsFrom(hi))
    return std::nullopt;
  while (lo < hi) { // holdsFrom only gains as the least size grows
    int64_t mid = lo + (hi - lo) / 2;
    if (holdsFrom(mid))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// a == b, when it is decidable: 1 or 0 as a constant expression. `bounds`
/// gives an expression's bounds at the sizes the model runs at.
AffineExpr decideEqual(AffineExpr a, AffineExpr b,
                       function_ref<dfg::DimBounds(AffineExpr)> bounds) {
  MLIRContext *ctx = a.getContext();
  if (dfg::sameDim(a, b))
    return getAffineConstantExpr(1, ctx);
  auto ca = dyn_cast<AffineConstantExpr>(a),
       cb = dyn_cast<AffineConstantExpr>(b);
  if (ca && cb)
    return getAffineConstantExpr(ca.getValue() == cb.getValue(), ctx);
  // An expression never equals a constant outside its bounds: a size is
  // positive, so never -1 (the exporters' "infer this one"), and a length
  // computed through convolutions is at least what their least input
  // gives.
  if (!ca && !cb)
    return {};
  int64_t c = ca ? ca.getValue() : cb.getValue();
  dfg::DimBounds range = bounds(ca ? b : a);
  if ((range.least && *range.least > c) || (range.most && *range.most < c))
    return getAffineConstantExpr(0, ctx);
  return {};
}

std::optional<int64_t> constantOf(AffineExpr e) {
  if (auto c = dyn_cast<AffineConstantExpr>(e))
    return c.getValue();
  return std::nullopt;
}

/// `e` as sum(coefficients[i] * symbol i) + constant, when it is linear.
struct Linear {
  std::map<unsigned, int64_t> coefficients;
  int64_t constant = 0;
};
std::optional<Linear> linearOf(AffineExpr e) {
  Linear out;
  if (auto c = dyn_cast<AffineConstantExpr>(e)) {
    out.constant = c.getValue();
    return out;
  }
  if (auto s = dyn_cast<AffineSymbolExpr>(e)) {
    out.coefficients[s.getPosition()] = 1;
    return out;
  }
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return std::nullopt;
  std::optional<Linear> l = linearOf(bin.getLHS()), r = linearOf(bin.getRHS());
  if (!l || !r)
    return std::nullopt;
  if (e.getKind() == AffineExprKind::Add) {
    for (auto [s, c] : r->coefficients)
      l->coefficients[s] += c;
    l->constant += r->constant;
    return l;
  }
  if (e.getKind() != AffineExprKind::Mul)
    return std::nullopt;
  // One side is a constant.
  if (!r->coefficients.empty())
    std::swap(l, r);
  if (!r->coefficients.empty())
    return std::nullopt;
  for (auto &[s, c] : l->coefficients)
    c *= r->constant;
  l->constant *= r->constant;
  return l;
}

/// How a and b compare for every size (each symbol at least 1), when that
/// is decidable: 1 if a >= b always, -1 if a <= b always. Where the order
/// flips at some size of one symbol s, the order at s = 1 with `bound` set
/// to (s, the largest size of s for which it holds).
std::optional<int>
decideOrder(AffineExpr a, AffineExpr b,
            std::optional<std::pair<unsigned, int64_t>> &bound) {
  // A difference whose sign the bounds decide at every size.
  dfg::DimBounds diff = dfg::boundsOf(a - b);
  if (diff.least && *diff.least >= 0)
    return 1;
  if (diff.most && *diff.most <= 0)
    return -1;
  if (std::optional<int> sign = periodicSign(a - b))
    return *sign;
  std::optional<Linear> d = linearOf(a - b);
  if (!d)
    return std::nullopt;
  bool up = true, down = true; // the difference only grows / only shrinks
  int64_t atOne = d->constant;
  std::optional<std::pair<unsigned, int64_t>> only;
  int terms = 0;
  for (auto [s, c] : d->coefficients) {
    if (c == 0)
      continue;
    up &= c > 0;
    down &= c < 0;
    atOne += c;
    only = {s, c};
    ++terms;
  }
  // Monotone from its value at 1 in the direction that keeps its sign.
  if (atOne >= 0 && up)
    return 1;
  if (atOne <= 0 && down)
    return -1;
  if (terms != 1)
    return std::nullopt;
  auto [s, c] = *only;
  // d = c * s + k changes sign once: at s = 1 it has the sign of atOne.
  int64_t k = d->constant;
  if (c < 0) { // atOne > 0: a >= b while c * s + k >= 0
    bound = {{s, k / -c}};
    return 1;
  }
  // c > 0, atOne < 0: a <= b while c * s + k <= 0
  bound = {{s, -k / c}};
  return -1;
}

/// The elements of an output of `outShape` (row-major) read from `values`
/// of `inShape`, the output element at index `at` reading input index
/// `source(at, d)` along each input axis d; nullopt on a mismatch.
std::optional<Exprs>
gatherElements(const Exprs &values, ArrayRef<int64_t> inShape,
               ArrayRef<int64_t> outShape,
               function_ref<int64_t(ArrayRef<int64_t>, int64_t)> source) {
  int64_t count = 1;
  for (int64_t d : outShape)
    count *= d;
  Exprs r;
  SmallVector<int64_t> at(outShape.size(), 0);
  for (int64_t k = 0; k < count; ++k) {
    for (int64_t i = outShape.size() - 1, rest = k; i >= 0; --i) {
      at[i] = rest % outShape[i];
      rest /= outShape[i];
    }
    int64_t flat = 0;
    for (size_t d = 0; d < inShape.size(); ++d) {
      int64_t index = source(at, d);
      if (index < 0 || index >= inShape[d])
        return std::nullopt;
      flat = flat * inShape[d] + index;
    }
    if (flat >= static_cast<int64_t>(values.size()))
      return std::nullopt;
    r.push_back(values[flat]);
  }
  return r;
}

/// `out` as the value of `op` (of `type`): a dfg.constant where every
/// expression is constant, else a dfg.sizes; null for bools that are not
/// constant.
Value materialize(Operation *op, RankedTensorType type, Exprs out,
                  dfg::DimTable &table) {
  OpBuilder b(op);
  for (AffineExpr &e : out)
    e = simplifyAffineExpr(e, 0, table.size());
  if (llvm::all_of(out, [](AffineExpr e) { return constantOf(e); })) {
    SmallVector<APInt> values;
    unsigned width = type.getElementType().getIntOrFloatBitWidth();
    for (AffineExpr e : out)
      values.push_back(APInt(width, *constantOf(e), /*isSigned=*/true,
                             /*implicitTrunc=*/true));
    return dfg::ConstantOp::create(b, op->getLoc(),
                                   DenseElementsAttr::get(type, values));
  }
  if (type.getElementType().isInteger(1))
    return {};
  auto [map, names] = table.write(out);
  if (type.getRank() <= 1)
    return dfg::SizesOp::create(b, op->getLoc(), type, map, names);
  // A matrix of sizes (TorchScript's pads as [axes, 2] pairs): the sizes in
  // row-major order, reshaped.
  Value flat = dfg::SizesOp::create(
      b, op->getLoc(),
      RankedTensorType::get({type.getNumElements()}, type.getElementType()),
      map, names);
  return dfg::ReshapeOp::create(b, op->getLoc(), type, flat,
                                b.getDenseI64ArrayAttr(type.getShape()));
}

/// The dfg.sizes `v` is, or that a reshape of it reads (materialize's
/// matrices); null otherwise.
dfg::SizesOp sizesBehind(Value v) {
  if (auto reshape = v.getDefiningOp<dfg::ReshapeOp>())
    v = reshape.getInput();
  return v.getDefiningOp<dfg::SizesOp>();
}

/// The elements of `v` as expressions in row-major order: those
/// SymbolicShapes::values reads, through a reshape of sizes too.
std::optional<Exprs> valuesOf(dfg::SymbolicShapes &shapes, Value v) {
  if (dfg::SizesOp sizes = sizesBehind(v))
    return shapes.values(sizes.getResult());
  return shapes.values(v);
}

/// A float value computed from sizes: numerators over one positive
/// denominator, each element numerator / denominator exactly.
struct Rational {
  Exprs numerators;
  int64_t denominator = 1;
};

/// The integer value of a float literal's elements, where each is one.
std::optional<Exprs> integralLiteral(Value v) {
  auto constant = v.getDefiningOp<dfg::ConstantOp>();
  auto attr = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue())
                       : DenseFPElementsAttr();
  if (!attr || attr.getNumElements() > 64)
    return std::nullopt;
  Exprs r;
  for (const APFloat &f : attr.getValues<APFloat>()) {
    double x = f.convertToDouble();
    if (x != std::trunc(x) || std::abs(x) > 1e15)
      return std::nullopt;
    r.push_back(getAffineConstantExpr(static_cast<int64_t>(x),
                                      v.getContext()));
  }
  return r;
}

/// The float value `v` as a rational of sizes, through the float
/// arithmetic exporters write on sizes (MobileViT's
/// `int(math.ceil(height / patch) * patch)`: Cast to float, Div by a
/// constant, Ceil or Floor, Mul, Add or Sub of constants); nullopt for any
/// other op or a divisor that is not a positive integer.
std::optional<Rational> rationalOf(dfg::SymbolicShapes &shapes, Value v,
                                   int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  if (std::optional<Exprs> c = integralLiteral(v))
    return Rational{*c, 1};
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto conversion = dyn_cast<dfg::CastOp>(def)) {
    Type from = cast<RankedTensorType>(conversion.getInput().getType())
                    .getElementType();
    if (from.isSignlessInteger()) {
      std::optional<Exprs> values = valuesOf(shapes, conversion.getInput());
      return values ? std::optional<Rational>(Rational{*values, 1})
                    : std::nullopt;
    }
    return rationalOf(shapes, conversion.getInput(), depth + 1);
  }
  if (isa<dfg::CeilOp, dfg::FloorOp>(def)) {
    std::optional<Rational> x = rationalOf(shapes, def->getOperand(0),
                                           depth + 1);
    if (!x)
      return std::nullopt;
    Rational r;
    for (AffineExpr n : x->numerators)
      r.numerators.push_back(isa<dfg::CeilOp>(def)
                                 ? dfg::ceilDivide(n, x->denominator)
                                 : n.floorDiv(x->denominator));
    return r;
  }
  if (!isa<dfg::DivOp, dfg::MulOp, dfg::AddOp, dfg::SubOp>(def))
    return std::nullopt;
  std::optional<Rational> a = rationalOf(shapes, def->getOperand(0), depth + 1);
  std::optional<Rational> b = rationalOf(shapes, def->getOperand(1), depth + 1);
  if (!a || !b)
    return std::nullopt;
  std::optional<Exprs> out;
  int64_t denominator = a->denominator;
  if (isa<dfg::DivOp>(def)) {
    // By a positive integer.
    if (b->denominator != 1 || b->numerators.size() != 1)
      return std::nullopt;
    std::optional<int64_t> c = constantOf(b->numerators.front());
    if (!c || *c <= 0 || a->denominator > (int64_t(1) << 30) / *c)
      return std::nullopt;
    return Rational{a->numerators, a->denominator * *c};
  }
  if (isa<dfg::MulOp>(def)) {
    if (a->denominator != 1 && b->denominator != 1)
      return std::nullopt;
    denominator = a->denominator * b->denominator;
    out = zipWith(a->numerators, b->numerators,
                  [](AffineExpr x, AffineExpr y) { return x * y; });
  } else {
    // A sum over one denominator.
    if (a->denominator != b->denominator)
      return std::nullopt;
    bool add = isa<dfg::AddOp>(def);
    out = zipWith(a->numerators, b->numerators,
                  [&](AffineExpr x, AffineExpr y) { return add ? x + y : x - y; });
  }
  return out ? std::optional<Rational>(Rational{*out, denominator})
             : std::nullopt;
}

} // namespace

Value foldSymbolic(Operation *op, dfg::DimTable &table, StringRef weightsDir,
                   llvm::StringMap<int64_t> *maximums,
                   llvm::StringMap<int64_t> *minimums) {
  // The least size of symbol `position` the model runs at: 1, or the least
  // size the model's ops need of it.
  auto leastOf = [&](unsigned position) -> int64_t {
    if (!minimums)
      return 1;
    auto it = minimums->find(table.name(position));
    return it == minimums->end() ? 1 : std::max<int64_t>(1, it->second);
  };
  // Bounds at every size the model runs at.
  auto boundsAtSizes = [&](AffineExpr e) {
    return dfg::boundsOf(e, [&](unsigned position) {
      return dfg::DimBounds{leastOf(position), std::nullopt};
    });
  };
  auto nonNegative = [&](AffineExpr e) {
    std::optional<int64_t> least = boundsAtSizes(e).least;
    return least && *least >= 0;
  };
  if (op->getNumResults() != 1 || op->getNumOperands() == 0)
    return {};
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 2 ||
      type.getNumElements() > 64 || !type.getElementType().isSignlessInteger())
    return {};
  dfg::SymbolicShapes shapes(table);
  // A float computed from sizes, cast back to integers (ONNX's Cast
  // truncates): the quotient of its rational, where the numerator is at
  // least 0.
  if (auto conversion = dyn_cast<dfg::CastOp>(op);
      conversion &&
      isa<FloatType>(cast<RankedTensorType>(conversion.getInput().getType())
                         .getElementType())) {
    std::optional<Rational> r = rationalOf(shapes, conversion.getInput());
    if (!r || llvm::none_of(r->numerators,
                            [](AffineExpr e) { return !constantOf(e); }))
      return {};
    Exprs out;
    for (AffineExpr n : r->numerators) {
      if (r->denominator != 1 && !nonNegative(n))
        return {};
      out.push_back(r->denominator == 1 ? n : n.floorDiv(r->denominator));
    }
    return materialize(op, type, out, table);
  }
  // Elements of a range with symbolic bounds at constant positions (torch's
  // `cache_position[-1] + 1`, the length of the positions): start + k *
  // delta, a negative k counting back from the range's length.
  if (auto g = dyn_cast<dfg::GatherOp>(op);
      g && (static_cast<int64_t>(g.getAxis()) == 0 ||
            static_cast<int64_t>(g.getAxis()) == -1)) {
    auto range = g->getOperand(0).getDefiningOp<dfg::RangeOp>();
    std::optional<Exprs> at =
        range ? shapes.values(g->getOperand(1)) : std::nullopt;
    if (range && at &&
        static_cast<int64_t>(at->size()) == type.getNumElements()) {
      Exprs bounds = table.read(range.getBounds(), range.getSymbols());
      AffineExpr length = shapes.dims(range.getResult()).front();
      int64_t delta = range.getDelta();
      Exprs out;
      for (AffineExpr index : *at) {
        std::optional<int64_t> k = constantOf(index);
        if (!k || !length || bounds.size() != 2 || !bounds[0])
          return {};
        AffineExpr position =
            *k >= 0 ? getAffineConstantExpr(*k, op->getContext())
                    : simplifyAffineExpr(length + *k, 0, table.size());
        // Only where the position is provably inside the range.
        std::optional<int64_t> least = dfg::boundsOf(position).least;
        std::optional<int64_t> room =
            dfg::boundsOf(
                simplifyAffineExpr(length - position - 1, 0, table.size()))
                .least;
        if (!least || *least < 0 || !room || *room < 0)
          return {};
        out.push_back(
            simplifyAffineExpr(bounds[0] + position * delta, 0, table.size()));
      }
      return materialize(op, type, out, table);
    }
  }
  bool anySymbolic = false;
  SmallVector<Exprs> in;
  for (Value v : op->getOperands()) {
    std::optional<Exprs> values = valuesOf(shapes, v);
    // A small integer initializer (a shape tail such as [heads, head_dim]).
    auto weight = dyn_cast_or_null<dfg::WeightOp>(v.getDefiningOp());
    auto wtype = cast<RankedTensorType>(v.getType());
    if (!values && weight && wtype.getRank() <= 1 &&
        wtype.getNumElements() <= 64 &&
        wtype.getElementType().isSignlessInteger()) {
      auto read = dfg::evaluateOp(weight, {}, weightsDir);
      if (failed(read) || !read->front().isExact())
        return {};
      values.emplace();
      for (double x : read->front().values)
        values->push_back(
            getAffineConstantExpr(static_cast<int64_t>(x), op->getContext()));
    }
    if (!values)
      return {};
    anySymbolic |= static_cast<bool>(sizesBehind(v));
    in.push_back(std::move(*values));
  }
  if (!anySymbolic)
    return {};

  auto binary = [&](auto fn) { return zipWith(in[0], in[1], fn); };
  std::optional<Exprs> out =
      llvm::TypeSwitch<Operation *, std::optional<Exprs>>(op)
          .Case([&](dfg::GatherOp g) -> std::optional<Exprs> {
            if (static_cast<int64_t>(g.getAxis()) != 0 &&
                static_cast<int64_t>(g.getAxis()) != -1)
              return std::nullopt;
            Exprs r;
            int64_t n = in[0].size();
            for (AffineExpr index : in[1]) {
              std::optional<int64_t> k = constantOf(index);
              if (!k || *k < -n || *k >= n)
                return std::nullopt;
              r.push_back(in[0][*k < 0 ? *k + n : *k]);
            }
            return r;
          })
          .Case([&](dfg::SliceOp s) -> std::optional<Exprs> {
            auto inType = cast<RankedTensorType>(s.getInput().getType());
            if (!inType.hasStaticShape() ||
                inType.getNumElements() != static_cast<int64_t>(in[0].size()))
              return std::nullopt;
            ArrayRef<int64_t> inShape = inType.getShape();
            auto shape = dfg::sliceShape(inShape, s.getStarts(), s.getEnds(),
                                         s.getAxes(), s.getSteps());
            if (!shape) {
              llvm::consumeError(shape.takeError());
              return std::nullopt;
            }
            dfg::Shape first, step;
            dfg::sliceOrigin(inShape, s.getStarts(), s.getAxes(),
                             s.getSteps(), first, step);
            return gatherElements(in[0], inShape, *shape,
                                  [&](ArrayRef<int64_t> at, int64_t d) {
                                    return first[d] + at[d] * step[d];
                                  });
          })
          .Case([&](dfg::TransposeOp t) -> std::optional<Exprs> {
            auto inType = cast<RankedTensorType>(t.getInput().getType());
            ArrayRef<int64_t> perm = t.getPerm();
            return gatherElements(in[0], inType.getShape(), type.getShape(),
                                  [&](ArrayRef<int64_t> at, int64_t d) {
                                    // Input axis d is output axis perm^-1(d).
                                    return at[llvm::find(perm, d) -
                                              perm.begin()];
                                  });
          })
          .Case([&](dfg::ConcatOp) -> std::optional<Exprs> {
            Exprs r;
            for (const Exprs &part : in)
              r.append(part.begin(), part.end());
            return r;
          })
          .Case<dfg::UnsqueezeOp, dfg::SqueezeOp, dfg::ReshapeOp, dfg::CastOp>(
              [&](Operation *) { return in[0]; })
          .Case([&](dfg::AddOp) {
            return binary([](AffineExpr a, AffineExpr b) { return a + b; });
          })
          .Case([&](dfg::NegOp) {
            Exprs r;
            for (AffineExpr e : in[0])
              r.push_back(-e);
            return std::optional<Exprs>(r);
          })
          .Case([&](dfg::SubOp) {
            return binary([](AffineExpr a, AffineExpr b) { return a - b; });
          })
          .Case([&](dfg::MulOp) {
            return binary([](AffineExpr a, AffineExpr b) { return a * b; });
          })
          .Case([&](dfg::DivOp) {
            // ONNX integer Div truncates; sizes are positive, so a positive
            // constant divisor makes it a floor division.
            return binary([&](AffineExpr a, AffineExpr b) -> AffineExpr {
              std::optional<int64_t> d = constantOf(b);
              if (!d && isPositive(b)) {
                // By a size that is a factor of the dividend (128 * S / S):
                // the factors cancel.
                AffineExpr q = dfg::divideDims({a}, {b});
                return q && dfg::sameDim(q * b, a) ? q : AffineExpr();
              }
              if (!d || *d <= 0)
                return {};
              if (std::optional<int64_t> n = constantOf(a)) // truncates
                return getAffineConstantExpr(*n / *d, a.getContext());
              if (nonNegative(a))
                return a.floorDiv(*d);
              // A dividend of one symbol that is at least 0 from some size of
              // it on: the model is compiled for sizes from there (where
              // ONNX's truncation is the floor division).
              std::optional<unsigned> symbol = soleSymbol(a);
              if (!maximums || !minimums || !symbol)
                return {};
              std::optional<int64_t> from =
                  leastWhereNonNegative(a, leastOf(*symbol));
              if (!from)
                return {};
              std::string name = table.name(*symbol).str();
              (*minimums)[name] = *from;
              op->emitRemark() << table.format(a) << " is at least 0 (ONNX's "
                               << "truncating Div a floor division) while "
                               << name << " >= " << *from
                               << ": the model is compiled for " << name
                               << " from " << *from;
              return a.floorDiv(*d);
            });
          })
          .Case<dfg::MinOp, dfg::MaxOp>([&](Operation *) {
            bool isMin = isa<dfg::MinOp>(op);
            return binary([&](AffineExpr a, AffineExpr b) -> AffineExpr {
              if (dfg::sameDim(a, b))
                return a;
              std::optional<int64_t> ca = constantOf(a), cb = constantOf(b);
              if (ca && cb)
                return getAffineConstantExpr(isMin ? std::min(*ca, *cb)
                                                   : std::max(*ca, *cb),
                                             a.getContext());
              // A size is at least 1: min(size, c <= 1) = c, max = size.
              if (ca && *ca <= 1 && isPositive(b))
                return isMin ? a : b;
              if (cb && *cb <= 1 && isPositive(a))
                return isMin ? b : a;
              std::optional<std::pair<unsigned, int64_t>> bound;
              std::optional<int> order = decideOrder(a, b, bound);
              if (!order || (bound && (!maximums || bound->second < 1)))
                return {};
              AffineExpr result = (*order > 0) != isMin ? a : b;
              if (bound) {
                std::string name = table.name(bound->first).str();
                auto [it, added] = maximums->try_emplace(name, bound->second);
                if (added || bound->second < it->second) {
                  it->second = bound->second;
                  op->emitRemark()
                      << (isMin ? "min(" : "max(") << table.format(a) << ", "
                      << table.format(b) << ") is " << table.format(result)
                      << " while " << name << " <= " << bound->second
                      << ": the model is compiled for " << name << " up to "
                      << bound->second;
                }
              }
              return result;
            });
          })
          .Case([&](dfg::EqualOp) {
            return binary([&](AffineExpr a, AffineExpr b) {
              return decideEqual(a, b, boundsAtSizes);
            });
          })
          .Case([&](dfg::WhereOp) -> std::optional<Exprs> {
            size_t n = std::max({in[0].size(), in[1].size(), in[2].size()});
            Exprs r;
            for (size_t i = 0; i < n; ++i) {
              auto at = [&](const Exprs &e) {
                return e[e.size() == 1 ? 0 : i];
              };
              std::optional<int64_t> cond = constantOf(at(in[0]));
              if (!cond)
                return std::nullopt;
              r.push_back(*cond ? at(in[1]) : at(in[2]));
            }
            return r;
          })
          .Default([](Operation *) { return std::nullopt; });
  if (!out || static_cast<int64_t>(out->size()) != type.getNumElements())
    return {};
  return materialize(op, type, *out, table);
}

} // namespace meshc::onnximport
