//===- CausalMasks.cpp - Causal masks over symbolic lengths ---------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/CausalMasks.h"
#include "passes/graph/IndexForms.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace meshc::graph {
namespace {

using dfg::sameDim;

/// Strips ops that only put unit dimensions in front (unsqueeze at leading
/// axes, a reshape that adds leading 1s): the mask broadcasts the same.
Value stripLeadingUnits(Value v, dfg::SymbolicShapes &shapes) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<dfg::UnsqueezeOp, dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op))
      return v;
    Value in = op->getOperand(0);
    SmallVector<AffineExpr> outDims(shapes.dims(v)), inDims(shapes.dims(in));
    if (outDims.size() < inDims.size())
      return v;
    size_t lead = outDims.size() - inDims.size();
    for (size_t i = 0; i < outDims.size(); ++i) {
      AffineExpr want = i < lead ? getAffineConstantExpr(1, v.getContext())
                                 : inDims[i - lead];
      if (!sameDim(outDims[i], want))
        return v;
    }
    v = in;
  }
  return v;
}

/// GPT-2: slices [past, past + queries) of rows and [0, keys) of columns of
/// a constant lower-triangular buffer. With `lowerOnly`, the buffer need
/// only keep no entry above its diagonal (GPT-Neo's banded local bias).
bool isSlicedTril(Value mask, AffineExpr queries, AffineExpr keys,
                  AffineExpr past, dfg::SymbolicShapes &shapes,
                  const ConstantReader &reader, bool lowerOnly = false) {
  MLIRContext *ctx = mask.getContext();
  bool rowsDone = false, colsDone = false;
  Value v = mask;
  for (int step = 0; step < 2; ++step) {
    auto slice = v.getDefiningOp<dfg::SymbolicSliceOp>();
    if (!slice || slice.getAxes().size() != 1 || slice.getSteps()[0] != 1)
      return false;
    int64_t rank = cast<RankedTensorType>(slice.getType()).getRank();
    int64_t axis =
        slice.getAxes()[0] < 0 ? slice.getAxes()[0] + rank : slice.getAxes()[0];
    AffineExpr start =
        shapes.table().read(slice.getStarts(), slice.getSymbols())[0];
    AffineExpr end =
        shapes.table().read(slice.getEnds(), slice.getSymbols())[0];
    if (axis == rank - 2 && !rowsDone && sameDim(start, past) &&
        sameDim(end, past + queries))
      rowsDone = true;
    else if (axis == rank - 1 && !colsDone &&
             sameDim(start, getAffineConstantExpr(0, ctx)) &&
             sameDim(end, keys))
      colsDone = true;
    else
      return false;
    v = slice.getInput();
  }
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.getElementType().isInteger(1) || type.getRank() < 2 ||
      !type.hasStaticShape())
    return false;
  std::optional<dfg::EvalTensor> values = reader.read(v);
  if (!values)
    return false;
  int64_t rows = type.getDimSize(type.getRank() - 2);
  int64_t cols = type.getDimSize(type.getRank() - 1);
  if (type.getNumElements() != rows * cols)
    return false;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      bool kept = values->values[i * cols + j] != 0;
      if (lowerOnly ? kept && j > i : kept != (j <= i))
        return false;
    }
  return true;
}

/// A value of the mask's computation, broadcast over [..., queries, keys],
/// as the integer function `q * i + k * j + offset` of the query row i and
/// the key column j (offset symbolic, e.g. the past length).
struct MaskForm {
  int64_t q = 0, k = 0;
  AffineExpr offset;
};

MaskForm combine(const MaskForm &a, const MaskForm &b, int64_t sign) {
  return {a.q + sign * b.q, a.k + sign * b.k, a.offset + b.offset * sign};
}

/// `v` as a MaskForm: an IndexForm (passes/graph/IndexForms.h) that varies
/// only along its last dimension, of length `keys`, and the one before,
/// of length `queries`.
std::optional<MaskForm> maskForm(Value v, AffineExpr queries, AffineExpr keys,
                                 IndexForms &forms,
                                 dfg::SymbolicShapes &shapes) {
  std::optional<IndexForm> form = forms.of(v);
  if (!form)
    return std::nullopt;
  SmallVector<AffineExpr> dims(shapes.dims(v));
  int64_t rank = static_cast<int64_t>(form->coef.size());
  MaskForm out{0, 0, form->offset};
  for (int64_t a = 0; a < rank; ++a) {
    int64_t c = form->coef[a];
    if (c == 0)
      continue;
    if (a == rank - 1 && dims[a] && sameDim(dims[a], keys))
      out.k = c;
    else if (a == rank - 2 && dims[a] && sameDim(dims[a], queries))
      out.q = c;
    else
      return std::nullopt;
  }
  return out;
}

/// True if the bool `cond` (its negation with `negate`) is `j <= i + past`:
/// a comparison of two index forms (<=, <, >=, >, possibly negated) that
/// reduces to `j - i - past <= 0`.
bool isCausalComparison(Value cond, AffineExpr queries, AffineExpr keys,
                        AffineExpr past, dfg::SymbolicShapes &shapes,
                        const ConstantReader &reader, bool negate = false) {
  MLIRContext *ctx = cond.getContext();
  bool negated = negate;
  while (auto n = cond.getDefiningOp<dfg::NotOp>()) {
    negated = !negated;
    cond = n.getInput();
  }
  Operation *op = cond.getDefiningOp();
  if (!isa_and_nonnull<dfg::LessOrEqualOp, dfg::LessOp, dfg::GreaterOrEqualOp,
                       dfg::GreaterOp>(op))
    return false;
  IndexForms forms(shapes, reader);
  auto a = maskForm(op->getOperand(0), queries, keys, forms, shapes);
  auto b = maskForm(op->getOperand(1), queries, keys, forms, shapes);
  if (!a || !b)
    return false;
  // e <= 0 with e integer-valued.
  bool lhsSmall = isa<dfg::LessOrEqualOp, dfg::LessOp>(op);
  bool strict = isa<dfg::LessOp, dfg::GreaterOp>(op);
  MaskForm e = lhsSmall ? combine(*a, *b, -1) : combine(*b, *a, -1);
  if (strict)
    e.offset = e.offset + 1;
  if (negated) // not(e <= 0) is -e + 1 <= 0
    e = {-e.q, -e.k, e.offset * -1 + 1};
  return e.k == 1 && e.q == -1 && sameDim(e.offset, past * -1) &&
         !sameDim(queries, getAffineConstantExpr(0, ctx));
}

/// True if `slice` takes every element of its input: each axis from 0 to
/// at least its size, with step 1 (HF's `mask[:, :, :, :kv_len]` once the
/// lengths agree).
bool isWholeSlice(dfg::SliceOp slice) {
  auto in = cast<RankedTensorType>(slice.getInput().getType());
  for (auto [axis, start, end, step] :
       llvm::zip_equal(slice.getAxes(), slice.getStarts(), slice.getEnds(),
                       slice.getSteps())) {
    int64_t a = axis < 0 ? axis + in.getRank() : axis;
    bool toEnd = end == std::numeric_limits<int64_t>::max() ||
                 (!in.isDynamicDim(a) && end >= in.getDimSize(a));
    if (start != 0 || step != 1 || !toEnd)
      return false;
  }
  return true;
}

/// `v` without the ops that leave its meaning as a mask unchanged: leading
/// unit dimensions, an expand or symbolic_expand (the mask broadcasts
/// anyway), a reshape to its own dimensions, a slice that takes everything.
Value stripBroadcasts(Value v, dfg::SymbolicShapes &shapes) {
  while (true) {
    Value stripped = stripLeadingUnits(v, shapes);
    if (auto expand = stripped.getDefiningOp<dfg::ExpandOp>())
      stripped = expand.getInput();
    else if (auto expand = stripped.getDefiningOp<dfg::SymbolicExpandOp>())
      stripped = expand.getInput();
    else if (auto view = stripped.getDefiningOp<dfg::ReshapeOp>();
             view && llvm::equal(shapes.dims(view.getInput()),
                                 shapes.dims(view.getResult()),
                                 [](AffineExpr a, AffineExpr b) {
                                   return a && b && sameDim(a, b);
                                 }))
      stripped = view.getInput();
    else if (auto slice = stripped.getDefiningOp<dfg::SliceOp>();
             slice && isWholeSlice(slice))
      stripped = slice.getInput();
    if (stripped == v)
      return v;
    v = stripped;
  }
}

/// The factors of a conjunction of bool masks (through dfg.and).
void conjuncts(Value v, dfg::SymbolicShapes &shapes,
               SmallVectorImpl<Value> &out) {
  v = stripBroadcasts(v, shapes);
  if (auto a = v.getDefiningOp<dfg::AndOp>()) {
    conjuncts(a.getLhs(), shapes, out);
    conjuncts(a.getRhs(), shapes, out);
    return;
  }
  out.push_back(v);
}

/// At static lengths, a factor whose values are known (a constant, or what
/// folds from constants: the causal part of a mask an export traced at one
/// length, or one compiled with --dim) and are the causal triangle.
bool isLiteralCausal(Value cond, AffineExpr queries, AffineExpr keys,
                     AffineExpr past, const ConstantReader &reader) {
  auto q = dyn_cast<AffineConstantExpr>(queries);
  auto k = dyn_cast<AffineConstantExpr>(keys);
  auto p = dyn_cast<AffineConstantExpr>(past);
  return q && k && p &&
         isCausalMask(cond, q.getValue(), k.getValue(), p.getValue(), reader);
}

/// True if the bool factor `cond` is the causal mask (seen through
/// broadcasts: BART's decoder expands its causal mask over the batch).
bool isCausalFactor(Value cond, AffineExpr queries, AffineExpr keys,
                    AffineExpr past, dfg::SymbolicShapes &shapes,
                    const ConstantReader &reader) {
  cond = stripBroadcasts(cond, shapes);
  return isSlicedTril(cond, queries, keys, past, shapes, reader) ||
         isCausalComparison(cond, queries, keys, past, shapes, reader) ||
         isLiteralCausal(cond, queries, keys, past, reader);
}

/// An additive mask `where(visible, 0, fill)` (seen through broadcasts):
/// the where and its fill; std::nullopt for anything else.
std::optional<std::pair<dfg::WhereOp, double>>
additiveMask(Value mask, dfg::SymbolicShapes &shapes,
             const ConstantReader &reader) {
  auto where = stripBroadcasts(mask, shapes).getDefiningOp<dfg::WhereOp>();
  if (!where)
    return std::nullopt;
  std::optional<double> keep = reader.splat(where.getLhs());
  std::optional<double> fill = reader.splat(where.getRhs());
  if (!keep || *keep != 0.0 || !fill)
    return std::nullopt;
  return std::pair(where, *fill);
}

/// An additive mask that holds only 0 and one fill F, read as where it
/// holds F: a disjunction of terms, each a conjunction of literals. A
/// literal is a bool value (or its negation) or "j - i >= k" of an upper
/// triangle. transformers 4.x writes its causal and padding masks so:
///   C = triu(full(F), 1) * (arange(keys) > cache_position)   (causal)
///   M = where(C + padding == 0, F, C)                        (and padding)
/// M holds F where C does or where `C + padding == 0`, so whatever that
/// comparison says where C is F, the literal `C + padding == 0` stands for
/// the padding beside C's term.
struct MaskLiteral {
  Value cond;                  // null for a triangle
  bool negated = false;        // F where `cond` is false
  std::optional<int64_t> triu; // F where j - i >= *triu
};
using MaskTerm = SmallVector<MaskLiteral, 2>;

/// The splat behind broadcasts (stripBroadcasts), if any.
std::optional<double> splatOf(Value v, dfg::SymbolicShapes &shapes,
                              const ConstantReader &reader) {
  return reader.splat(stripBroadcasts(v, shapes));
}

/// The bool a float value is a cast of (through broadcasts), if it is.
Value castOfBool(Value v, dfg::SymbolicShapes &shapes) {
  auto cast = stripBroadcasts(v, shapes).getDefiningOp<dfg::CastOp>();
  if (!cast || !getElementTypeOrSelf(cast.getInput().getType()).isInteger(1))
    return {};
  return cast.getInput();
}

/// The fill F of an additive mask as maskTerms reads it: a splat of at most
/// kFiniteCausalFillMax, or -inf, that a where selects, a product scales or
/// an upper triangle keeps.
std::optional<double> additiveFill(Value v, dfg::SymbolicShapes &shapes,
                                   const ConstantReader &reader, int depth) {
  auto isFill = [](std::optional<double> f) {
    return f && (*f <= kFiniteCausalFillMax);
  };
  v = stripBroadcasts(v, shapes);
  if (depth > 8)
    return std::nullopt;
  if (auto w = v.getDefiningOp<dfg::WhereOp>()) {
    for (Value side : {w.getLhs(), w.getRhs()}) {
      std::optional<double> f = splatOf(side, shapes, reader);
      if (isFill(f))
        return f;
    }
    for (Value side : {w.getLhs(), w.getRhs()})
      if (std::optional<double> f =
              additiveFill(side, shapes, reader, depth + 1))
        return f;
    return std::nullopt;
  }
  if (auto t = v.getDefiningOp<dfg::TriluOp>()) {
    std::optional<double> f = splatOf(t.getInput(), shapes, reader);
    return isFill(f) ? f : std::nullopt;
  }
  if (auto m = v.getDefiningOp<dfg::MulOp>()) {
    // X * c with c > 0 (a scale moved onto the mask) holds X's fill times c;
    // X * cast(b) holds X's.
    for (auto [x, y] : {std::pair(m.getLhs(), m.getRhs()),
                        std::pair(m.getRhs(), m.getLhs())}) {
      std::optional<double> f = additiveFill(x, shapes, reader, depth + 1);
      if (!f)
        continue;
      std::optional<double> c = splatOf(y, shapes, reader);
      if (!c)
        return castOfBool(y, shapes) ? f : std::nullopt;
      double scaled = static_cast<float>(*f * *c);
      return *c > 0 && isFill(scaled) ? std::optional<double>(scaled)
                                      : std::nullopt;
    }
  }
  return std::nullopt;
}

/// Appends to `terms` where `v` holds `fill` (see MaskLiteral); false if `v`
/// is not such a mask (or holds a value other than 0 and `fill`).
bool maskTerms(Value v, double fill, AffineExpr queries, AffineExpr keys,
               dfg::SymbolicShapes &shapes, const ConstantReader &reader,
               SmallVectorImpl<MaskTerm> &terms, int depth) {
  if (depth > 8)
    return false;
  v = stripBroadcasts(v, shapes);
  if (std::optional<double> c = splatOf(v, shapes, reader)) {
    if (*c == fill)
      terms.push_back({}); // F everywhere
    return *c == fill || *c == 0.0;
  }
  if (auto w = v.getDefiningOp<dfg::WhereOp>()) {
    // where(c, F, X): F where c, else X; where(c, X, F) the other way.
    std::optional<double> l = splatOf(w.getLhs(), shapes, reader);
    std::optional<double> r = splatOf(w.getRhs(), shapes, reader);
    Value other;
    if (l && *l == fill) {
      terms.push_back({MaskLiteral{w.getCondition(), false, std::nullopt}});
      other = w.getRhs();
    } else if (r && *r == fill) {
      // F where not (f1 and f2 ...): a term per factor.
      SmallVector<Value> factors;
      conjuncts(w.getCondition(), shapes, factors);
      for (Value f : factors)
        terms.push_back({MaskLiteral{f, true, std::nullopt}});
      other = w.getLhs();
    } else {
      return false;
    }
    return maskTerms(other, fill, queries, keys, shapes, reader, terms,
                     depth + 1);
  }
  if (auto t = v.getDefiningOp<dfg::TriluOp>()) {
    // An upper triangle of F over [queries, keys].
    std::optional<double> f = splatOf(t.getInput(), shapes, reader);
    ArrayRef<AffineExpr> dims = shapes.dims(t.getResult());
    if (!t.getUpper() || !f || *f != fill || dims.size() < 2 ||
        !dims[dims.size() - 2] || !dims.back() ||
        !sameDim(dims[dims.size() - 2], queries) || !sameDim(dims.back(), keys))
      return false;
    terms.push_back({MaskLiteral{Value(), false, t.getDiagonal()}});
    return true;
  }
  if (auto m = v.getDefiningOp<dfg::MulOp>()) {
    // X * c with c > 0: F where X holds its own fill F / c.
    for (auto [x, y] : {std::pair(m.getLhs(), m.getRhs()),
                        std::pair(m.getRhs(), m.getLhs())}) {
      std::optional<double> c = splatOf(y, shapes, reader);
      std::optional<double> inner =
          c && *c > 0 ? additiveFill(x, shapes, reader, 0) : std::nullopt;
      if (!inner || static_cast<float>(*inner * *c) != static_cast<float>(fill))
        continue;
      return maskTerms(x, *inner, queries, keys, shapes, reader, terms,
                       depth + 1);
    }
    // X * cast(b): F where X is and b holds.
    for (auto [x, y] : {std::pair(m.getLhs(), m.getRhs()),
                        std::pair(m.getRhs(), m.getLhs())}) {
      Value b = castOfBool(y, shapes);
      if (!b)
        continue;
      SmallVector<MaskTerm> inner;
      if (!maskTerms(x, fill, queries, keys, shapes, reader, inner, depth + 1))
        return false;
      for (MaskTerm &term : inner) {
        term.push_back(MaskLiteral{b, false, std::nullopt});
        terms.push_back(std::move(term));
      }
      return true;
    }
  }
  return false;
}

/// True if the term is "j > i + past": a literal that is that comparison,
/// or the triangle j - i >= 1 when there is no past, beside literals that
/// it implies (triangles j - i >= k with k <= 1, as past >= 0).
bool isCausalTerm(const MaskTerm &term, AffineExpr queries, AffineExpr keys,
                  AffineExpr past, dfg::SymbolicShapes &shapes,
                  const ConstantReader &reader) {
  bool exact = false;
  bool noPast = sameDim(past, getAffineConstantExpr(0, past.getContext()));
  for (const MaskLiteral &l : term) {
    if (l.triu) {
      if (*l.triu > 1)
        return false;
      exact |= *l.triu == 1 && noPast;
      continue;
    }
    // F where the literal holds: where `j <= i + past` does not.
    if (!isCausalComparison(l.cond, queries, keys, past, shapes, reader,
                            /*negate=*/!l.negated))
      return false;
    exact = true;
  }
  return exact;
}

/// For a float mask holding 0 and a fill F in the terms maskTerms reads,
/// one of them causal: where(rest, 0, F) of the other terms (a null Value
/// when there are none), with F in `fill`.
std::optional<Value> splitAdditiveCausal(Value mask, AffineExpr queries,
                                         AffineExpr keys, AffineExpr past,
                                         dfg::SymbolicShapes &shapes,
                                         const ConstantReader &reader,
                                         OpBuilder &builder, double &fill) {
  std::optional<double> f = additiveFill(mask, shapes, reader, 0);
  SmallVector<MaskTerm> terms;
  if (!f || !maskTerms(mask, *f, queries, keys, shapes, reader, terms, 0))
    return std::nullopt;
  auto causal = llvm::find_if(terms, [&](const MaskTerm &t) {
    return isCausalTerm(t, queries, keys, past, shapes, reader);
  });
  if (causal == terms.end())
    return std::nullopt;
  terms.erase(causal);
  // Visible where no other term holds: the and, over terms, of the or of
  // their literals' negations.
  Location loc = mask.getLoc();
  Value rest;
  for (const MaskTerm &term : terms) {
    if (term.empty())
      return std::nullopt; // F everywhere: nothing causal about it
    Value visible;
    for (const MaskLiteral &l : term) {
      if (l.triu)
        return std::nullopt;
      Value v = l.negated
                    ? l.cond
                    : dfg::NotOp::create(builder, loc, l.cond.getType(), l.cond)
                          .getResult();
      visible = visible ? dfg::OrOp::create(builder, loc, visible, v) : v;
    }
    rest = rest ? dfg::AndOp::create(builder, loc, rest, visible) : visible;
  }
  fill = *f;
  if (!rest)
    return Value();
  return filledMask(rest, *f,
                    cast<RankedTensorType>(mask.getType()).getElementType(),
                    builder);
}

/// An unsqueeze or transpose whose result keeps its operand's last two
/// axes last, in order (a mask's queries and keys).
bool keepsLastTwoAxes(Operation *op) {
  if (!isa_and_nonnull<dfg::UnsqueezeOp, dfg::TransposeOp>(op))
    return false;
  int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  if (cast<RankedTensorType>(op->getOperand(0).getType()).getRank() < 2)
    return false;
  if (auto t = dyn_cast<dfg::TransposeOp>(op))
    return t.getPerm()[rank - 2] == rank - 2 &&
           t.getPerm()[rank - 1] == rank - 1;
  return llvm::all_of(cast<dfg::UnsqueezeOp>(op).getAxes(), [&](int64_t a) {
    return (a < 0 ? a + rank : a) < rank - 2;
  });
}

/// `v` laid out by a copy of `layout` (keepsLastTwoAxes).
Value layOutAgain(Operation *layout, Value v, OpBuilder &builder) {
  Location loc = layout->getLoc();
  if (auto t = dyn_cast<dfg::TransposeOp>(layout))
    return dfg::TransposeOp::create(builder, loc, v, t.getPermAttr());
  return dfg::UnsqueezeOp::create(builder, loc, v,
                                  cast<dfg::UnsqueezeOp>(layout).getAxesAttr());
}

} // namespace

/// True if the known values of `mask` (bool: true keeps; float: 0 keeps,
/// below -1000 masks) are exactly "key j visible to query i iff
/// j <= i + offset", with every leading dimension 1.
bool isCausalMask(Value mask, int64_t queries, int64_t keys, int64_t offset,
                  const ConstantReader &reader) {
  auto type = cast<RankedTensorType>(mask.getType());
  if (type.getRank() < 2 || !type.hasStaticShape() ||
      type.getDimSize(type.getRank() - 2) != queries ||
      type.getDimSize(type.getRank() - 1) != keys ||
      type.getNumElements() != queries * keys)
    return false;
  std::optional<dfg::EvalTensor> values = reader.read(mask);
  if (!values)
    return false;
  bool isBool = type.getElementType().isInteger(1);
  for (int64_t i = 0; i < queries; ++i)
    for (int64_t j = 0; j < keys; ++j) {
      double m = values->values[i * keys + j];
      bool keep = isBool ? m != 0 : m == 0;
      bool masked = isBool ? m == 0 : isMaskValue(m);
      if (j <= i + offset ? !keep : !masked)
        return false;
    }
  return true;
}

bool isSymbolicCausalMask(Value mask, AffineExpr queries, AffineExpr keys,
                          AffineExpr past, dfg::SymbolicShapes &shapes,
                          const ConstantReader &reader) {
  if (!queries || !keys || !past || !sameDim(keys, past + queries))
    return false;
  mask = stripLeadingUnits(mask, shapes);
  if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
    return isCausalFactor(mask, queries, keys, past, shapes, reader);
  auto additive = additiveMask(mask, shapes, reader);
  return additive && isMaskValue(additive->second) &&
         isCausalFactor(additive->first.getCondition(), queries, keys, past,
                        shapes, reader);
}

bool keepsOnlyCausalKeys(Value mask, AffineExpr queries, AffineExpr keys,
                         AffineExpr past, dfg::SymbolicShapes &shapes,
                         const ConstantReader &reader) {
  if (!queries || !keys || !past || !sameDim(keys, past + queries) ||
      !cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
    return false;
  mask = stripLeadingUnits(mask, shapes);
  return isCausalFactor(mask, queries, keys, past, shapes, reader) ||
         isSlicedTril(mask, queries, keys, past, shapes, reader,
                      /*lowerOnly=*/true);
}

/// where(c, X, F) for a float X that is not 0 (T5's relative position
/// bias where its causal mask keeps the key, F elsewhere), c causal or a
/// conjunction with a causal factor: X (or where(the other factors, X, F)),
/// F as the fill. A key past the limit scores F as before; every other key
/// scores what it did.
static std::optional<Value> splitCausalSelect(Value mask, AffineExpr queries,
                                       AffineExpr keys, AffineExpr past,
                                       dfg::SymbolicShapes &shapes,
                                       const ConstantReader &reader,
                                       OpBuilder &builder, double &fill) {
  auto where = stripBroadcasts(mask, shapes).getDefiningOp<dfg::WhereOp>();
  if (!where)
    return std::nullopt;
  std::optional<double> f = reader.splat(where.getRhs());
  if (!f || !(*f <= kFiniteCausalFillMax)) // -inf, or a finite fill
    return std::nullopt;
  Value kept = where.getLhs();
  if (!isa<FloatType>(getElementTypeOrSelf(kept.getType())) ||
      reader.splat(kept))
    return std::nullopt;
  Value cond = where.getCondition();
  if (isCausalFactor(cond, queries, keys, past, shapes, reader)) {
    fill = *f;
    return kept;
  }
  double boolFill = 0.0;
  std::optional<Value> rest = splitCausalFactor(
      cond, queries, keys, past, shapes, reader, builder, boolFill);
  if (!rest)
    return std::nullopt;
  fill = *f;
  if (!*rest)
    return kept;
  return dfg::WhereOp::create(builder, mask.getLoc(), *rest, kept,
                              where.getRhs())
      .getResult();
}

std::optional<Value> splitCausalFactor(Value mask, AffineExpr queries,
                                       AffineExpr keys, AffineExpr past,
                                       dfg::SymbolicShapes &shapes,
                                       const ConstantReader &reader,
                                       OpBuilder &builder, double &fill) {
  if (!queries || !keys || !past || !sameDim(keys, past + queries))
    return std::nullopt;
  // A mask laid out by an unsqueeze or a transpose that keeps its last two
  // axes (queries, keys) last: split what it lays out, and lay the rest out
  // the same way (GPT-BigCode under transformers 4.x builds its mask
  // [batch, queries, keys], unsqueezes the heads at axis 2 and moves them
  // to axis 1). Each axis of the rest is where the same axis of the mask
  // was, so it broadcasts as the mask did.
  if (Operation *layout = mask.getDefiningOp(); keepsLastTwoAxes(layout)) {
    std::optional<Value> rest =
        splitCausalFactor(layout->getOperand(0), queries, keys, past, shapes,
                          reader, builder, fill);
    if (!rest || !*rest)
      return rest;
    return layOutAgain(layout, *rest, builder);
  }
  Value cond = mask;
  dfg::WhereOp where;
  double whereFill = -std::numeric_limits<double>::infinity();
  if (!cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1)) {
    // where(visible, 0, F): -inf, or a finite F that absorbs any score
    // (the causal limit then adds F too, so that a row whose every key is
    // masked still spreads over all keys, as the whole mask makes it).
    auto additive = additiveMask(mask, shapes, reader);
    if (auto sum = stripBroadcasts(mask, shapes).getDefiningOp<dfg::AddOp>();
        !additive && sum) {
      // A + B, A wholly causal where(visible, 0, F_A) (GPT-Neo's bias
      // beside transformers 4.x's mask, added before the scores), B with a
      // causal factor or term of its own whose fill F_B makes F_A + F_B
      // overflow to -inf: the keys past the limit are -inf in the sum, so
      // the op is causal without a fill and B's other factors are its mask.
      // (Without B's own causal part, a key past the limit that B masks
      // too is -inf and one it keeps is F_A: no single fill says that.)
      for (auto [a, b] : {std::pair(sum.getLhs(), sum.getRhs()),
                          std::pair(sum.getRhs(), sum.getLhs())}) {
        auto whole = additiveMask(a, shapes, reader);
        if (!whole ||
            !isSymbolicCausalMask(a, queries, keys, past, shapes, reader))
          continue;
        double fillA = whole->second, fillB = 0.0;
        if (std::optional<Value> rest = splitCausalFactor(
                b, queries, keys, past, shapes, reader, builder, fillB);
            rest &&
            std::isinf(static_cast<float>(fillA) + static_cast<float>(fillB))) {
          fill = -std::numeric_limits<double>::infinity();
          return *rest;
        }
      }
      // X + B, X no mask of its own (T5's relative position bias) and B
      // with a causal factor filled by F (transformers 4.x's causal and
      // padding mask): a key past the limit scores X + F, which rounds to
      // F; so the op is causal with F as its fill, and X + B's other
      // factors its mask.
      for (auto [x, b] : {std::pair(sum.getLhs(), sum.getRhs()),
                          std::pair(sum.getRhs(), sum.getLhs())}) {
        if (additiveMask(x, shapes, reader) ||
            !isa<FloatType>(getElementTypeOrSelf(x.getType())))
          continue;
        double fillB = 0.0;
        std::optional<Value> rest = splitCausalFactor(
            b, queries, keys, past, shapes, reader, builder, fillB);
        if (!rest || !(fillB <= kFiniteCausalFillMax))
          continue;
        if (!*rest) {
          fill = fillB;
          return x;
        }
        Value other = *rest;
        Type element = getElementTypeOrSelf(x.getType());
        if (getElementTypeOrSelf(other.getType()).isInteger(1))
          other = filledMask(other, fillB, element, builder);
        llvm::Expected<dfg::Shape> shape = dfg::broadcastShapes(
            cast<RankedTensorType>(x.getType()).getShape(),
            cast<RankedTensorType>(other.getType()).getShape());
        if (!shape) {
          llvm::consumeError(shape.takeError());
          continue;
        }
        fill = fillB;
        return dfg::AddOp::create(builder, mask.getLoc(),
                                  RankedTensorType::get(*shape, element), x,
                                  other)
            .getResult();
      }
    }
    if (!additive) {
      if (std::optional<Value> rest = splitCausalSelect(
              mask, queries, keys, past, shapes, reader, builder, fill))
        return rest;
    }
    if (!additive || additive->second >= 0)
      return splitAdditiveCausal(mask, queries, keys, past, shapes, reader,
                                 builder, fill);
    if (!std::isinf(additive->second) &&
        !(additive->second <= kFiniteCausalFillMax))
      return std::nullopt;
    where = additive->first;
    cond = where.getCondition();
    whereFill = additive->second;
  }
  // where(visible, 0, F): the split of its bool condition (laid out as
  // above, or a conjunction), under the same where.
  if (where) {
    double boolFill = 0.0;
    std::optional<Value> rest = splitCausalFactor(
        cond, queries, keys, past, shapes, reader, builder, boolFill);
    if (!rest)
      return std::nullopt;
    fill = whereFill;
    if (!*rest)
      return Value();
    return dfg::WhereOp::create(builder, mask.getLoc(), *rest, where.getLhs(),
                                where.getRhs())
        .getResult();
  }
  SmallVector<Value> factors;
  conjuncts(cond, shapes, factors);
  if (factors.size() < 2)
    return std::nullopt;
  auto causal = llvm::find_if(factors, [&](Value f) {
    return isCausalFactor(f, queries, keys, past, shapes, reader);
  });
  if (causal == factors.end())
    return std::nullopt;
  fill = whereFill;
  factors.erase(causal);
  // Factors that are literally true say nothing.
  llvm::erase_if(factors, [&](Value f) {
    std::optional<double> c = reader.splat(f);
    return c && *c != 0.0;
  });
  if (factors.empty())
    return Value();
  Location loc = mask.getLoc();
  Value rest = factors.front();
  for (Value f : llvm::drop_begin(factors))
    rest = dfg::AndOp::create(builder, loc, rest, f);
  return rest;
}

Value filledMask(Value condition, double fill, Type element,
                 OpBuilder &builder) {
  Location loc = condition.getLoc();
  auto scalar = [&](double v) -> Value {
    auto t = RankedTensorType::get({}, element);
    return dfg::ConstantOp::create(
        builder, loc, DenseElementsAttr::get(t, FloatAttr::get(element, v)));
  };
  auto ct = cast<RankedTensorType>(condition.getType());
  return dfg::WhereOp::create(builder, loc,
                              RankedTensorType::get(ct.getShape(), element),
                              condition, scalar(0.0), scalar(fill));
}

} // namespace meshc::graph
