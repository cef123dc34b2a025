//===- WeightSlices.cpp - A rank's slices moved onto its weights ----------===//
//
// Part of meshc. In a rank program a weight reaches its reader through data
// movement: the rank's slice (meshc-shard-specialize-rank), views, and the
// concats of zeros with which meshc-shard-pad-heads pads heads (and other
// padding). The code generator stores a slice of a weight seen through views
// as the box the rank reads, but a slice of a concat read the whole weight
// at every step: the concat ran first, on the whole padded weight.
//
// moveSlicesToWeights moves each slice of such a weight-only value towards
// the weights, to a fixed point:
//   1. slice(concat(a, b, ...)) is the concat of the slices of the parts the
//      slice reaches (a part wholly inside the slice is taken whole; a part
//      outside it is dropped);
//   2. slice(reshape(x)) is reshape(slice(x)) where the slice is a box of
//      x's dimensions too: within each group of dimensions the reshape
//      merges or splits, a slice of a split that is one run of x's
//      dimension (one index of the outer dimensions, then a run of whole
//      blocks of the inner ones, or a strided run of single elements), or
//      a slice of a merge that covers whole rows of the dimensions below the
//      one it cuts and one index of those above (squeeze and unsqueeze are
//      reshapes);
//   3. slice(slice(x)) is one slice of x;
//   4. a slice of a splat constant (padding's zeros) is a smaller splat.
// What reaches the weights is the rank's shard, and what remains of the
// padding is a concat of that shard with zeros, which the code generator
// stores as it is (compiler/codegen/WeightShards.cpp): the rank's file holds
// its shard with the zeros, and nothing is concatenated at run time.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/RankRoles.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;

namespace meshc {
namespace {

/// Where a slice starts, how it steps and how many it takes, per dimension.
struct Box {
  SmallVector<int64_t> first, step, count;
};

std::optional<ArrayRef<int64_t>> staticShape(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return type.getShape();
}

/// The box `slice` takes of its input, when every step is positive and
/// shapes are static.
std::optional<Box> boxOf(dfg::SliceOp slice) {
  auto in = staticShape(slice.getInput());
  auto out = staticShape(slice.getResult());
  if (!in || !out)
    return std::nullopt;
  for (int64_t s : slice.getSteps())
    if (s <= 0)
      return std::nullopt;
  Box box;
  dfg::Shape first, step;
  dfg::sliceOrigin(*in, slice.getStarts(), slice.getAxes(), slice.getSteps(),
                   first, step);
  box.first.assign(first.begin(), first.end());
  box.step.assign(step.begin(), step.end());
  box.count.assign(out->begin(), out->end());
  return box;
}

/// `box` of `x` as a dfg.slice (x itself when the box is all of it).
Value sliceOf(OpBuilder &b, Location loc, Value x, const Box &box) {
  ArrayRef<int64_t> shape = *staticShape(x);
  SmallVector<int64_t> starts, ends, axes, steps;
  for (auto [d, size] : llvm::enumerate(shape)) {
    if (box.first[d] == 0 && box.step[d] == 1 && box.count[d] == size)
      continue;
    starts.push_back(box.first[d]);
    ends.push_back(box.first[d] + (box.count[d] - 1) * box.step[d] + 1);
    axes.push_back(d);
    steps.push_back(box.step[d]);
  }
  if (axes.empty())
    return x;
  return dfg::SliceOp::create(b, loc, x, starts, ends, axes, steps);
}

/// Values made from weights and constants by data movement alone.
class WeightOnly {
public:
  bool operator()(Value v) {
    if (auto it = memo_.find(v); it != memo_.end())
      return it->second;
    Operation *op = v.getDefiningOp();
    bool result = false;
    if (op && isa<dfg::WeightOp, dfg::ConstantOp>(op))
      result = true;
    else if (op && isa<dfg::SliceOp, dfg::ReshapeOp, dfg::SqueezeOp,
                       dfg::UnsqueezeOp, dfg::ConcatOp>(op))
      result =
          llvm::all_of(op->getOperands(), [&](Value x) { return (*this)(x); });
    memo_[v] = result;
    return result;
  }

private:
  llvm::DenseMap<Value, bool> memo_;
};

/// slice(concat(parts)): the concat of each part's share of the box.
Value throughConcat(OpBuilder &b, Location loc, dfg::ConcatOp concat,
                    const Box &box) {
  int64_t rank = box.first.size();
  int64_t axis = concat.getAxis();
  if (axis < 0)
    axis += rank;
  int64_t f = box.first[axis], s = box.step[axis], c = box.count[axis];
  SmallVector<Value> pieces;
  int64_t offset = 0;
  for (Value part : concat.getInputs()) {
    int64_t size = (*staticShape(part))[axis];
    // The box's indices i with offset <= f + i * s < offset + size.
    auto firstAtOrPast = [&](int64_t at) {
      return at <= f ? 0 : (at - f + s - 1) / s;
    };
    int64_t lo = std::min(firstAtOrPast(offset), c);
    int64_t hi = std::min(firstAtOrPast(offset + size), c);
    if (lo < hi) {
      Box share = box;
      share.first[axis] = f + lo * s - offset;
      share.count[axis] = hi - lo;
      pieces.push_back(sliceOf(b, loc, part, share));
    }
    offset += size;
  }
  if (pieces.size() == 1)
    return pieces.front();
  SmallVector<int64_t> shape(box.count);
  auto type = RankedTensorType::get(
      shape, cast<RankedTensorType>(concat.getType()).getElementType());
  return dfg::ConcatOp::create(b, loc, type, pieces, b.getI64IntegerAttr(axis))
      .getResult();
}

/// slice(view(x)) as a box of x, where it is one: the dimensions of sizes
/// other than 1 pair into groups of equal products, and each group's part
/// of the box must be a box of x's dimensions in the group.
std::optional<Box> boxThroughView(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                                  const Box &box) {
  SmallVector<int64_t> ins, outs;
  for (auto [d, size] : llvm::enumerate(in)) {
    if (size == 0)
      return std::nullopt;
    if (size != 1)
      ins.push_back(d);
  }
  for (auto [d, size] : llvm::enumerate(out))
    if (size != 1)
      outs.push_back(d);
  Box result;
  for (int64_t size : in) {
    result.first.push_back(0);
    result.step.push_back(1);
    result.count.push_back(size);
  }
  auto whole = [&](int64_t d) {
    return box.first[d] == 0 && box.step[d] == 1 && box.count[d] == out[d];
  };
  size_t a = 0, b = 0;
  while (a < ins.size() && b < outs.size()) {
    SmallVector<int64_t> gin{ins[a++]}, gout{outs[b++]};
    int64_t pin = in[gin.back()], pout = out[gout.back()];
    while (pin != pout) {
      if (pin < pout && a < ins.size()) {
        gin.push_back(ins[a]);
        pin *= in[ins[a++]];
      } else if (pout < pin && b < outs.size()) {
        gout.push_back(outs[b]);
        pout *= out[outs[b++]];
      } else {
        return std::nullopt;
      }
    }
    auto cut = llvm::find_if(gout, [&](int64_t d) { return !whole(d); });
    if (cut == gout.end())
      continue;
    if (gin.size() == 1) {
      // A split of one dimension: the dimensions of the split before the
      // first that takes several indices take one each; those after it take
      // all (a run of whole blocks) or one each (a strided run).
      size_t m = 0;
      while (m + 1 < gout.size() && box.count[gout[m]] == 1)
        ++m;
      SmallVector<int64_t> stride(gout.size(), 1);
      for (size_t k = gout.size() - 1; k-- > 0;)
        stride[k] = stride[k + 1] * out[gout[k + 1]];
      int64_t start = 0;
      for (size_t k = 0; k <= m; ++k)
        start += box.first[gout[k]] * stride[k];
      bool restWhole = true, restOne = true;
      for (size_t k = m + 1; k < gout.size(); ++k) {
        restWhole &= whole(gout[k]);
        restOne &= box.count[gout[k]] == 1;
      }
      int64_t d = gin.front(), s = box.step[gout[m]], c = box.count[gout[m]];
      if (restOne) {
        for (size_t k = m + 1; k < gout.size(); ++k)
          start += box.first[gout[k]] * stride[k];
        result.first[d] = start;
        result.step[d] = s * stride[m];
        result.count[d] = c;
      } else if (restWhole && s == 1) {
        result.first[d] = start;
        result.count[d] = c * stride[m];
      } else {
        return std::nullopt;
      }
      continue;
    }
    if (gout.size() != 1)
      return std::nullopt;
    // A merge of several dimensions: find the one the slice cuts, below
    // which it takes whole rows and above which it stays at one index.
    int64_t o = gout.front();
    int64_t f = box.first[o], s = box.step[o], c = box.count[o];
    bool found = false;
    for (size_t m = 0; m < gin.size() && !found; ++m) {
      int64_t below = 1;
      for (size_t k = m + 1; k < gin.size(); ++k)
        below *= in[gin[k]];
      if ((s != 1 && below != 1) || f % below || c % below)
        continue;
      int64_t lo = f / below, n = s == 1 ? c / below : c;
      int64_t size = in[gin[m]];
      int64_t block = lo / size;
      if (block != (lo + (n - 1) * s) / size)
        continue;
      for (size_t k = m; k-- > 0;) {
        result.first[gin[k]] = block % in[gin[k]];
        result.count[gin[k]] = 1;
        block /= in[gin[k]];
      }
      result.first[gin[m]] = lo % size;
      result.step[gin[m]] = s;
      result.count[gin[m]] = n;
      found = true;
    }
    if (!found)
      return std::nullopt;
  }
  return result;
}

/// One rewrite of `slice`, or null.
Value moveOnce(dfg::SliceOp slice) {
  std::optional<Box> box = boxOf(slice);
  if (!box)
    return {};
  Value input = slice.getInput();
  Operation *def = input.getDefiningOp();
  OpBuilder b(slice);
  Location loc = slice.getLoc();
  if (auto concat = dyn_cast_or_null<dfg::ConcatOp>(def))
    return throughConcat(b, loc, concat, *box);
  if (def && isa<dfg::ReshapeOp, dfg::SqueezeOp, dfg::UnsqueezeOp>(def)) {
    Value x = def->getOperand(0);
    auto in = staticShape(x);
    if (!in)
      return {};
    std::optional<Box> inner = boxThroughView(*in, *staticShape(input), *box);
    if (!inner)
      return {};
    Value sliced = sliceOf(b, loc, x, *inner);
    auto type = slice.getType();
    return dfg::ReshapeOp::create(b, loc, type, sliced,
                                  b.getDenseI64ArrayAttr(type.getShape()))
        .getResult();
  }
  if (auto inner = dyn_cast_or_null<dfg::SliceOp>(def)) {
    std::optional<Box> first = boxOf(inner);
    if (!first)
      return {};
    Box composed = *first;
    for (size_t d = 0; d < composed.first.size(); ++d) {
      composed.first[d] += box->first[d] * first->step[d];
      composed.step[d] *= box->step[d];
      composed.count[d] = box->count[d];
    }
    return sliceOf(b, loc, inner.getInput(), composed);
  }
  if (auto constant = dyn_cast_or_null<dfg::ConstantOp>(def)) {
    auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!splat)
      return {};
    auto type = slice.getType();
    return dfg::ConstantOp::create(b, loc, type, splat.resizeSplat(type))
        .getResult();
  }
  return {};
}

/// Whether `op` is data movement (or a constant) that can go once unused.
bool isMover(Operation *op) {
  return op && isa<dfg::SliceOp, dfg::ReshapeOp, dfg::SqueezeOp,
                   dfg::UnsqueezeOp, dfg::ConcatOp, dfg::ConstantOp>(op);
}

} // namespace

void moveSlicesToWeights(ModuleOp module) {
  WeightOnly weightOnly;
  SmallVector<dfg::SliceOp> work;
  module.walk([&](dfg::SliceOp slice) {
    if (weightOnly(slice.getInput()))
      work.push_back(slice);
  });
  // Ops left without users are erased at the end, so that no op on the
  // work list is erased while it waits there.
  llvm::SetVector<Operation *> unused;
  while (!work.empty()) {
    dfg::SliceOp slice = work.pop_back_val();
    if (slice->use_empty())
      continue;
    Value moved = moveOnce(slice);
    if (!moved)
      continue;
    // The slices the rewrite made move on in turn.
    for (Value v = moved;;) {
      Operation *def = v.getDefiningOp();
      if (auto s = dyn_cast_or_null<dfg::SliceOp>(def)) {
        work.push_back(s);
        break;
      }
      if (auto concat = dyn_cast_or_null<dfg::ConcatOp>(def)) {
        for (Value part : concat.getInputs())
          if (auto s = part.getDefiningOp<dfg::SliceOp>())
            work.push_back(s);
        break;
      }
      if (!isa_and_nonnull<dfg::ReshapeOp>(def))
        break;
      v = def->getOperand(0);
    }
    slice.getResult().replaceAllUsesWith(moved);
    unused.insert(slice);
  }
  while (!unused.empty()) {
    Operation *op = unused.pop_back_val();
    if (!op->use_empty())
      continue;
    for (Value x : op->getOperands())
      if (Operation *def = x.getDefiningOp(); isMover(def))
        unused.insert(def);
    op->erase();
  }
}

} // namespace meshc
