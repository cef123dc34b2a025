//===- HeadNorms.cpp - Norms over all heads as a sum of partial squares ---===//
//
// Part of meshc.
//
// OLMo-2 normalises its queries and keys over all heads at once: an RMS
// norm of the projection's features [..., heads * d], then the view
// [..., heads, d]. A tp split of the heads splits the norm's axis, which
// dfg.rms_norm needs whole, so the split stopped at the norm and the
// attention stayed whole on every rank. Its statistic is a sum, though:
//
//   rms_norm(x) = x * 1 / sqrt(reduce_sum(x * x) / n + epsilon) * scale
//
// Written so, each rank sums the squares of its features, one all_reduce of
// [..., 1] completes the sum (partition adds it for the reduction split over
// tp), and the rest is elementwise on the split features.
// decomposeHeadNorms rewrites such norms (over the last axis, without bias
// or fused residual, read as heads by a reshape); the statistic is computed
// in f32 whatever the element type. Every reduce_mean (an unraised norm's
// mean, as --no-raise keeps it) becomes a reduce_sum divided by its static
// count, for the same reason: a mean is Pinned, a sum splits.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace meshc {
namespace {

/// Whether `user` views a [..., n] tensor as [..., h, d] heads, h > 1.
bool viewsAsHeads(Operation *user, RankedTensorType in) {
  if (!isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(user))
    return false;
  auto out = cast<RankedTensorType>(user->getResult(0).getType());
  if (out.getRank() != in.getRank() + 1)
    return false;
  int64_t n = in.getShape().back(), h = out.getShape()[out.getRank() - 2],
          d = out.getShape().back();
  return !ShapedType::isDynamic(n) && !ShapedType::isDynamic(h) &&
         !ShapedType::isDynamic(d) && h > 1 && h * d == n;
}

Value scalar(OpBuilder &b, Location loc, Type element, double value) {
  return dfg::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, element),
                             FloatAttr::get(element, value)));
}

void decompose(dfg::RmsNormOp norm) {
  OpBuilder b(norm);
  Location loc = norm.getLoc();
  Value x = norm.getInput();
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType(), f32 = b.getF32Type();
  int64_t rank = type.getRank(), n = type.getShape().back();
  Value wide = x;
  if (element != f32)
    wide = dfg::CastOp::create(b, loc, type.clone(f32), x, f32);
  auto wideType = cast<RankedTensorType>(wide.getType());
  Value squares = dfg::MulOp::create(b, loc, wideType, wide, wide);
  SmallVector<int64_t> statShape(type.getShape());
  statShape.back() = 1;
  auto statType = RankedTensorType::get(statShape, f32);
  Value sum = dfg::ReduceSumOp::create(b, loc, statType, squares,
                                       b.getDenseI64ArrayAttr({rank - 1}),
                                       /*keep_dims=*/true);
  Value mean = dfg::DivOp::create(b, loc, statType, sum,
                                  scalar(b, loc, f32, static_cast<double>(n)));
  Value shifted = dfg::AddOp::create(
      b, loc, statType, mean,
      scalar(b, loc, f32, norm.getEpsilon().convertToFloat()));
  Value root = dfg::SqrtOp::create(b, loc, statType, shifted);
  Value inverse = dfg::ReciprocalOp::create(b, loc, statType, root);
  if (element != f32)
    inverse =
        dfg::CastOp::create(b, loc, statType.clone(element), inverse, element);
  Value normalized = dfg::MulOp::create(b, loc, type, x, inverse);
  Value scaled = dfg::MulOp::create(b, loc, type, normalized, norm.getScale());
  norm.getResult().replaceAllUsesWith(scaled);
  norm.erase();
}

/// reduce_mean(x, axes) ==> reduce_sum(x, axes) / count, the count static.
void meanToSum(dfg::ReduceMeanOp mean) {
  auto in = cast<RankedTensorType>(mean.getInput().getType());
  auto out = cast<RankedTensorType>(mean.getType());
  int64_t count = 1;
  SmallVector<int64_t> axes(mean.getAxes());
  if (axes.empty())
    for (int64_t d = 0; d < in.getRank(); ++d)
      axes.push_back(d);
  for (int64_t a : axes) {
    int64_t size = in.getDimSize(a < 0 ? a + in.getRank() : a);
    if (ShapedType::isDynamic(size))
      return;
    count *= size;
  }
  OpBuilder b(mean);
  Location loc = mean.getLoc();
  Value sum = dfg::ReduceSumOp::create(b, loc, out, mean.getInput(),
                                       mean.getAxesAttr(), mean.getKeepDims());
  Value divided = dfg::DivOp::create(
      b, loc, out, sum,
      scalar(b, loc, out.getElementType(), static_cast<double>(count)));
  mean.getResult().replaceAllUsesWith(divided);
  mean.erase();
}

} // namespace

void decomposeHeadNorms(func::FuncOp func) {
  // An unraised norm's mean over split features is a sum too.
  SmallVector<dfg::ReduceMeanOp> means;
  func.walk([&](dfg::ReduceMeanOp mean) {
    if (isa<FloatType>(mean.getType().getElementType()))
      means.push_back(mean);
  });
  for (dfg::ReduceMeanOp mean : means)
    meanToSum(mean);

  SmallVector<dfg::RmsNormOp> norms;
  func.walk([&](dfg::RmsNormOp norm) {
    auto type = cast<RankedTensorType>(norm.getInput().getType());
    int64_t axis = norm.getAxis();
    auto scale = cast<RankedTensorType>(norm.getScale().getType());
    if (norm->getNumResults() != 1 || norm.getBias() || norm.getResidual() ||
        (axis != -1 && axis != type.getRank() - 1) || scale.getRank() != 1 ||
        !isa<FloatType>(type.getElementType()))
      return;
    if (llvm::any_of(norm->getUsers(),
                     [&](Operation *user) { return viewsAsHeads(user, type); }))
      norms.push_back(norm);
  });
  for (dfg::RmsNormOp norm : norms)
    decompose(norm);
}

} // namespace meshc
