//===- SplitNorms.cpp - Norms over split features as partial sums ---------===//
//
// Part of meshc.
//
// A norm whose features tp splits: OLMo-2's q/k norms over all heads of a
// projection, BitNet's sub-norms over the merged heads before the output
// projection and over the MLP's hidden features before the down projection.
// dfg.rms_norm needs its axis whole, so the plan would all_gather the
// features before the norm, and a projection behind it would stay whole on
// every rank. Its statistic is a sum, though:
//
//   rms_norm(x) = x * 1 / sqrt(reduce_sum(x * x) / n + epsilon) * scale
//
// Written so, each rank sums the squares of its features, one all_reduce of
// [..., 1] completes the sum (partition adds it for the reduction split over
// tp), and the rest is elementwise on the split features. The planner
// decides which norms (Plan.cpp): those whose input its plan splits along
// the axis, and those that stop a projection's trial split. The statistic is
// computed in f32 whatever the element type. meansToSums turns every
// reduce_mean (an unraised norm's mean, as --no-raise keeps it) into a
// reduce_sum divided by its static count, for the same reason: a mean is
// Pinned, a sum splits.
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

Value scalar(OpBuilder &b, Location loc, Type element, double value) {
  return dfg::ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, element),
                             FloatAttr::get(element, value)));
}

} // namespace

Value buildRmsNormSum(Operation *op) {
  auto norm = cast<dfg::RmsNormOp>(op);
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
  return scaled;
}

Value decomposeRmsNorm(Operation *norm) {
  Value scaled = buildRmsNormSum(norm);
  norm->getResult(0).replaceAllUsesWith(scaled);
  norm->erase();
  return scaled;
}

namespace {

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

bool isDecomposableNorm(Operation *op) {
  auto norm = dyn_cast<dfg::RmsNormOp>(op);
  if (!norm)
    return false;
  auto type = cast<RankedTensorType>(norm.getInput().getType());
  int64_t axis = norm.getAxis();
  auto scale = cast<RankedTensorType>(norm.getScale().getType());
  return norm->getNumResults() == 1 && !norm.getBias() && !norm.getResidual() &&
         (axis == -1 || axis == type.getRank() - 1) && scale.getRank() == 1 &&
         !ShapedType::isDynamic(type.getShape().back()) &&
         isa<FloatType>(type.getElementType());
}

void meansToSums(func::FuncOp func) {
  SmallVector<dfg::ReduceMeanOp> means;
  func.walk([&](dfg::ReduceMeanOp mean) {
    if (isa<FloatType>(mean.getType().getElementType()))
      means.push_back(mean);
  });
  for (dfg::ReduceMeanOp mean : means)
    meanToSum(mean);
}

} // namespace meshc
