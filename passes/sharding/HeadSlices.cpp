//===- HeadSlices.cpp - Selections of heads as column blocks --------------===//
//
// Part of meshc.
//
// A fused QKV projection whose heads are taken from a [..., heads, d] view
// of its features (Falcon's multi-query attention: 4 query heads, then one
// key and one value head of one matmul) is written three ways by the
// exporters: a Slice of the heads axis, a Gather of it at constant indices,
// and a Transpose that puts the heads first followed by a GatherND at a
// constant index tuple. Each selects a contiguous block of heads, which is
// a contiguous block of the projection's features: the column block that
// splitSlicedProjections turns into a projection of its own.
//
// sliceHeadSelections rewrites, in this order and to a fixed point:
//   1. gather(x, constant consecutive indices, axis a) and gather_nd(x,
//      constant [..., 1] index tuples of consecutive values) into slices of
//      one axis (a reshape drops the axis a scalar index removes);
//   2. slice(transpose(x, perm), axis a) into transpose(slice(x, axis
//      perm[a]), perm);
//   3. slice(reshape(p : [..., n] -> [..., h, d]), axis of h, [s, e)) into
//      reshape(slice(p, last axis, [s*d, e*d))), and likewise for a view
//      of more parts ([..., 3, h, d]: ModernBERT's packed QKV, its parts
//      taken by slices of the 3 and squeezed: the squeeze folds into the
//      reshape).
// A slice moves before a transpose or reshape only when slices of one axis
// are all that read it (so the view goes away); ops left without users are
// erased.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>

using namespace mlir;

namespace meshc {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The values of a constant integer tensor, when `v` is one.
std::optional<SmallVector<int64_t>> constantInts(Value v) {
  auto c = v.getDefiningOp<dfg::ConstantOp>();
  auto dense = c ? dyn_cast<DenseIntElementsAttr>(c.getValue()) : nullptr;
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &i : dense.getValues<APInt>())
    values.push_back(i.getSExtValue());
  return values;
}

/// [first, first + count) when `indices` (into a dimension of static size
/// `size`) are consecutive after normalising negative ones.
std::optional<int64_t> consecutiveFrom(ArrayRef<int64_t> indices,
                                       int64_t size) {
  if (indices.empty() || ShapedType::isDynamic(size))
    return std::nullopt;
  int64_t first =
      indices.front() < 0 ? indices.front() + size : indices.front();
  for (auto [k, i] : llvm::enumerate(indices)) {
    int64_t n = i < 0 ? i + size : i;
    if (n < 0 || n >= size || n != first + static_cast<int64_t>(k))
      return std::nullopt;
  }
  return first;
}

/// Replaces `op`'s one result by `v` and erases `op` and whatever it alone
/// kept alive among `dfg` views (reshapes, transposes).
void replaceAndErase(Operation *op, Value v) {
  op->getResult(0).replaceAllUsesWith(v);
  SmallVector<Operation *> dead = {op};
  while (!dead.empty()) {
    Operation *d = dead.pop_back_val();
    Operation *input =
        d->getNumOperands() ? d->getOperand(0).getDefiningOp() : nullptr;
    d->erase();
    if (input && input->use_empty() &&
        isa<dfg::ReshapeOp, dfg::TransposeOp, dfg::ConstantOp>(input))
      dead.push_back(input);
  }
}

/// 1. A gather or gather_nd at constant consecutive indices as a slice.
bool gatherToSlice(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (auto gather = dyn_cast<dfg::GatherOp>(op)) {
    RankedTensorType data = typeOf(gather.getData());
    int64_t axis = gather.getAxis();
    if (axis < 0)
      axis += data.getRank();
    auto indices = constantInts(gather.getIndices());
    int64_t indexRank = typeOf(gather.getIndices()).getRank();
    if (!indices || indexRank > 1)
      return false;
    std::optional<int64_t> first =
        consecutiveFrom(*indices, data.getDimSize(axis));
    if (!first)
      return false;
    int64_t end = *first + static_cast<int64_t>(indices->size());
    Value slice = dfg::SliceOp::create(b, loc, gather.getData(), {*first},
                                       {end}, {axis}, {1});
    if (indexRank == 0) {
      // A scalar index removes the axis: a reshape copies the dynamic
      // dimensions before it (0) and infers one after it (-1).
      SmallVector<int64_t> spec;
      bool inferred = false;
      for (auto [j, size] : llvm::enumerate(result.getShape())) {
        if (!ShapedType::isDynamic(size))
          spec.push_back(size);
        else if (static_cast<int64_t>(j) < axis)
          spec.push_back(0);
        else if (!inferred)
          spec.push_back(-1), inferred = true;
        else
          return false;
      }
      slice = dfg::ReshapeOp::create(b, loc, result, slice,
                                     b.getDenseI64ArrayAttr(spec));
    }
    replaceAndErase(op, slice);
    return true;
  }
  auto gatherNd = dyn_cast<dfg::GatherNDOp>(op);
  if (!gatherNd || gatherNd.getBatchDims() != 0)
    return false;
  RankedTensorType data = typeOf(gatherNd.getData());
  RankedTensorType indexType = typeOf(gatherNd.getIndices());
  auto indices = constantInts(gatherNd.getIndices());
  // Tuples of one index into dimension 0, in a [m, 1] list.
  if (!indices || indexType.getRank() != 2 || indexType.getDimSize(1) != 1)
    return false;
  std::optional<int64_t> first = consecutiveFrom(*indices, data.getDimSize(0));
  if (!first)
    return false;
  int64_t end = *first + static_cast<int64_t>(indices->size());
  Value slice = dfg::SliceOp::create(b, loc, gatherNd.getData(), {*first},
                                     {end}, {0}, {1});
  if (slice.getType() != result)
    return false;
  replaceAndErase(op, slice);
  return true;
}

/// A unit-step slice of one axis: (axis, start, end), bounds normalised.
std::optional<std::tuple<int64_t, int64_t, int64_t>>
oneAxisSlice(dfg::SliceOp slice) {
  RankedTensorType in = typeOf(slice.getInput());
  if (slice.getAxes().size() != 1 || slice.getSteps().front() != 1)
    return std::nullopt;
  int64_t axis = slice.getAxes().front();
  if (axis < 0)
    axis += in.getRank();
  int64_t size = in.getDimSize(axis);
  if (ShapedType::isDynamic(size))
    return std::nullopt;
  int64_t start = slice.getStarts().front(), end = slice.getEnds().front();
  start = std::clamp<int64_t>(start < 0 ? start + size : start, 0, size);
  end = std::clamp<int64_t>(end < 0 ? end + size : end, 0, size);
  if (start >= end)
    return std::nullopt;
  return std::make_tuple(axis, start, end);
}

/// 2. and 3.: a slice moved before the transpose or head reshape it reads.
bool hoistSlice(dfg::SliceOp slice) {
  auto bounds = oneAxisSlice(slice);
  if (!bounds)
    return false;
  auto [axis, start, end] = *bounds;
  OpBuilder b(slice);
  Location loc = slice.getLoc();
  // Only views that selections alone read, so that the view goes away.
  Operation *view = slice.getInput().getDefiningOp();
  if (!view || !llvm::all_of(view->getUsers(), [](Operation *user) {
        auto s = dyn_cast<dfg::SliceOp>(user);
        return s && oneAxisSlice(s);
      }))
    return false;
  if (auto t = dyn_cast<dfg::TransposeOp>(view)) {
    int64_t from = t.getPerm()[axis];
    Value inner =
        dfg::SliceOp::create(b, loc, t.getInput(), {start}, {end}, {from}, {1});
    Value moved = dfg::TransposeOp::create(b, t.getLoc(), slice.getType(),
                                           inner, t.getPermAttr());
    replaceAndErase(slice, moved);
    return true;
  }
  auto r = dyn_cast<dfg::ReshapeOp>(view);
  if (!r)
    return false;
  ArrayRef<int64_t> in = typeOf(r.getInput()).getShape(),
                    out = r.getType().getShape();
  int64_t rank = out.size(), lead = static_cast<int64_t>(in.size()) - 1;
  // [..., n] -> [..., a0, a1, ...], the leading dimensions kept, the
  // outermost of the parts (a0: the heads of [h, d], or the parts of a
  // packed [3, h, d]) sliced.
  if (lead < 0 || rank < lead + 2 || axis != lead ||
      ShapedType::isDynamic(in.back()))
    return false;
  int64_t inner = 1;
  for (int64_t i = lead + 1; i < rank; ++i) {
    if (ShapedType::isDynamic(out[i]))
      return false;
    inner *= out[i];
  }
  if (ShapedType::isDynamic(out[lead]) || in.back() != out[lead] * inner)
    return false;
  ArrayRef<int64_t> spec = r.getShape();
  for (int64_t i = 0; i < lead; ++i)
    if (!(spec[i] == 0 || (!ShapedType::isDynamic(in[i]) && spec[i] == in[i])))
      return false;
  Value columns = dfg::SliceOp::create(b, loc, r.getInput(), {start * inner},
                                       {end * inner}, {lead}, {1});
  SmallVector<int64_t> parts(lead, 0);
  parts.push_back(end - start);
  parts.append(out.begin() + lead + 1, out.end());
  // One part taken and squeezed (ModernBERT's q, k and v of its packed
  // [..., 3, h, d]): the columns viewed as the squeezed result directly.
  auto squeeze = slice->hasOneUse()
                     ? dyn_cast<dfg::SqueezeOp>(*slice->getUsers().begin())
                     : dfg::SqueezeOp();
  if (end - start == 1 && squeeze && squeeze.getAxes().size() == 1 &&
      (squeeze.getAxes().front() == axis ||
       squeeze.getAxes().front() == axis - rank)) {
    parts.erase(parts.begin() + lead);
    Value moved =
        dfg::ReshapeOp::create(b, r.getLoc(), squeeze.getType(), columns,
                               b.getDenseI64ArrayAttr(parts));
    squeeze.getResult().replaceAllUsesWith(moved);
    squeeze.erase();
    replaceAndErase(slice, moved); // no uses left: erased with the view
    return true;
  }
  Value moved = dfg::ReshapeOp::create(b, r.getLoc(), slice.getType(), columns,
                                       b.getDenseI64ArrayAttr(parts));
  replaceAndErase(slice, moved);
  return true;
}

} // namespace

void sliceHeadSelections(func::FuncOp func) {
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<dfg::GatherOp, dfg::GatherNDOp, dfg::SliceOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto slice = dyn_cast<dfg::SliceOp>(op))
        changed |= hoistSlice(slice);
      else
        changed |= gatherToSlice(op);
    }
  }
}

} // namespace meshc
