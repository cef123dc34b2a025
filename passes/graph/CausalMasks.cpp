//===- CausalMasks.cpp - Causal masks over symbolic lengths ---------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/CausalMasks.h"

#include "dialects/dfg/IR/DfgOps.h"

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
    if (!isa<dfg::UnsqueezeOp, dfg::ReshapeOp>(op))
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
struct IndexForm {
  int64_t q = 0, k = 0;
  AffineExpr offset;
};

IndexForm combine(const IndexForm &a, const IndexForm &b, int64_t sign) {
  return {a.q + sign * b.q, a.k + sign * b.k, a.offset + b.offset * sign};
}

/// `v` as an IndexForm: a unit-step Range laid along the key axis (length
/// `keys`) or the query axis (length `queries`), other dimensions 1; a
/// constant or symbolic scalar; casts, sums and differences of those.
std::optional<IndexForm> indexForm(Value v, AffineExpr queries,
                                   AffineExpr keys, dfg::SymbolicShapes &shapes,
                                   const ConstantReader &reader,
                                   int depth = 0) {
  MLIRContext *ctx = v.getContext();
  if (depth > 12)
    return std::nullopt;
  // A copy: a query may grow the analysis's table.
  SmallVector<AffineExpr> dims(shapes.dims(v));
  auto one = getAffineConstantExpr(1, ctx);
  // Which trailing position (0: keys, 1: queries) varies, if one does.
  int64_t rank = dims.size(), varying = -1;
  for (int64_t i = 0; i < rank; ++i) {
    if (sameDim(dims[i], one))
      continue;
    if (varying >= 0 || rank - 1 - i > 1)
      return std::nullopt;
    varying = rank - 1 - i;
  }
  if (varying < 0) {
    // A scalar: a splat literal or a symbolic size.
    if (std::optional<double> c = reader.splat(v)) {
      if (*c != std::floor(*c) || std::fabs(*c) > 1e15)
        return std::nullopt;
      return IndexForm{0, 0,
                       getAffineConstantExpr(static_cast<int64_t>(*c), ctx)};
    }
    if (auto sizes = v.getDefiningOp<dfg::SizesOp>()) {
      SmallVector<AffineExpr> read =
          shapes.table().read(sizes.getMap(), sizes.getSymbols());
      if (read.size() == 1)
        return IndexForm{0, 0, read[0]};
    }
  }
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (isa<dfg::CastOp>(op)) {
    auto to = cast<RankedTensorType>(v.getType()).getElementType();
    if (!to.isSignlessInteger() || to.getIntOrFloatBitWidth() < 32)
      return std::nullopt;
    return indexForm(op->getOperand(0), queries, keys, shapes, reader,
                     depth + 1);
  }
  if (isa<dfg::AddOp, dfg::SubOp>(op)) {
    auto a = indexForm(op->getOperand(0), queries, keys, shapes, reader,
                       depth + 1);
    auto b = indexForm(op->getOperand(1), queries, keys, shapes, reader,
                       depth + 1);
    if (!a || !b)
      return std::nullopt;
    return combine(*a, *b, isa<dfg::AddOp>(op) ? 1 : -1);
  }
  if (varying < 0)
    return std::nullopt;
  // A range, through the unsqueezes / reshapes that made it a row or column.
  Value r = v;
  while (isa_and_nonnull<dfg::UnsqueezeOp, dfg::ReshapeOp>(r.getDefiningOp()))
    r = r.getDefiningOp()->getOperand(0);
  auto range = r.getDefiningOp<dfg::RangeOp>();
  if (!range || range.getDelta() != 1 ||
      cast<RankedTensorType>(range.getType()).getRank() != 1)
    return std::nullopt;
  SmallVector<AffineExpr> bounds =
      shapes.table().read(range.getBounds(), range.getSymbols());
  AffineExpr length = varying == 0 ? keys : queries;
  if (!sameDim(bounds[1] - bounds[0], length) ||
      !sameDim(dims[rank - 1 - varying], length))
    return std::nullopt;
  return IndexForm{varying == 1 ? 1 : 0, varying == 0 ? 1 : 0, bounds[0]};
}

/// True if the bool `cond` is `j <= i + past`: a comparison of two index
/// forms (<=, <, >=, >, possibly negated) that reduces to
/// `j - i - past <= 0`.
bool isCausalComparison(Value cond, AffineExpr queries, AffineExpr keys,
                        AffineExpr past, dfg::SymbolicShapes &shapes,
                        const ConstantReader &reader) {
  MLIRContext *ctx = cond.getContext();
  bool negated = false;
  while (auto n = cond.getDefiningOp<dfg::NotOp>()) {
    negated = !negated;
    cond = n.getInput();
  }
  Operation *op = cond.getDefiningOp();
  if (!isa_and_nonnull<dfg::LessOrEqualOp, dfg::LessOp, dfg::GreaterOrEqualOp,
                       dfg::GreaterOp>(op))
    return false;
  auto a = indexForm(op->getOperand(0), queries, keys, shapes, reader);
  auto b = indexForm(op->getOperand(1), queries, keys, shapes, reader);
  if (!a || !b)
    return false;
  // e <= 0 with e integer-valued.
  bool lhsSmall = isa<dfg::LessOrEqualOp, dfg::LessOp>(op);
  bool strict = isa<dfg::LessOp, dfg::GreaterOp>(op);
  IndexForm e = lhsSmall ? combine(*a, *b, -1) : combine(*b, *a, -1);
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
/// unit dimensions, an expand (the mask broadcasts anyway), a slice that
/// takes everything.
Value stripBroadcasts(Value v, dfg::SymbolicShapes &shapes) {
  while (true) {
    Value stripped = stripLeadingUnits(v, shapes);
    if (auto expand = stripped.getDefiningOp<dfg::ExpandOp>())
      stripped = expand.getInput();
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

/// True if the bool factor `cond` is the causal mask.
bool isCausalFactor(Value cond, AffineExpr queries, AffineExpr keys,
                    AffineExpr past, dfg::SymbolicShapes &shapes,
                    const ConstantReader &reader) {
  return isSlicedTril(cond, queries, keys, past, shapes, reader) ||
         isCausalComparison(cond, queries, keys, past, shapes, reader);
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

} // namespace

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

std::optional<Value> splitCausalFactor(Value mask, AffineExpr queries,
                                       AffineExpr keys, AffineExpr past,
                                       dfg::SymbolicShapes &shapes,
                                       const ConstantReader &reader,
                                       OpBuilder &builder, double &fill) {
  if (!queries || !keys || !past || !sameDim(keys, past + queries))
    return std::nullopt;
  Value cond = mask;
  dfg::WhereOp where;
  double whereFill = -std::numeric_limits<double>::infinity();
  if (!cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1)) {
    // where(visible, 0, F): -inf, or a finite F that absorbs any score
    // (the causal limit then adds F too, so that a row whose every key is
    // masked still spreads over all keys, as the whole mask makes it).
    auto additive = additiveMask(mask, shapes, reader);
    if (!additive || additive->second >= 0)
      return std::nullopt;
    if (!std::isinf(additive->second) &&
        !(additive->second <= kFiniteCausalFillMax))
      return std::nullopt;
    where = additive->first;
    cond = where.getCondition();
    whereFill = additive->second;
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
  if (!where)
    return rest;
  return dfg::WhereOp::create(builder, loc, rest, where.getLhs(),
                              where.getRhs())
      .getResult();
}

} // namespace meshc::graph
