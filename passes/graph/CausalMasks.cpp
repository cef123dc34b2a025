//===- CausalMasks.cpp - Causal masks over symbolic lengths ---------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/CausalMasks.h"

#include "dialects/dfg/IR/DfgOps.h"

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

/// `v` is range(start, start + length) with delta 1, laid along the
/// dimension `axis` of a value whose other dimensions are 1.
bool isRange(Value v, int64_t axis, AffineExpr start, AffineExpr length,
             dfg::SymbolicShapes &shapes) {
  ArrayRef<AffineExpr> dims = shapes.dims(v);
  int64_t rank = dims.size();
  if (axis < 0)
    axis += rank;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis &&
        !sameDim(dims[i], getAffineConstantExpr(1, v.getContext())))
      return false;
  // Through the unsqueeze / reshape that turned the 1-D range into a row
  // or column.
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<dfg::UnsqueezeOp, dfg::ReshapeOp>(op))
      break;
    v = op->getOperand(0);
  }
  auto range = v.getDefiningOp<dfg::RangeOp>();
  if (!range || range.getDelta() != 1)
    return false;
  SmallVector<AffineExpr> bounds =
      shapes.table().read(range.getBounds(), range.getSymbols());
  return sameDim(bounds[0], start) && sameDim(bounds[1], start + length);
}

/// GPT-2: slices [past, past + queries) of rows and [0, keys) of columns of
/// a constant lower-triangular buffer.
bool isSlicedTril(Value mask, AffineExpr queries, AffineExpr keys,
                  AffineExpr past, dfg::SymbolicShapes &shapes,
                  const ConstantReader &reader) {
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
    for (int64_t j = 0; j < cols; ++j)
      if ((values->values[i * cols + j] != 0) != (j <= i))
        return false;
  return true;
}

/// Llama: LessOrEqual(keys row, queries column).
bool isRangeCompare(Value cond, AffineExpr queries, AffineExpr keys,
                    AffineExpr past, dfg::SymbolicShapes &shapes) {
  auto le = cond.getDefiningOp<dfg::LessOrEqualOp>();
  if (!le)
    return false;
  MLIRContext *ctx = cond.getContext();
  return isRange(le.getLhs(), -1, getAffineConstantExpr(0, ctx), keys,
                 shapes) &&
         isRange(le.getRhs(), -2, past, queries, shapes);
}

} // namespace

bool isSymbolicCausalMask(Value mask, AffineExpr queries, AffineExpr keys,
                          AffineExpr past, dfg::SymbolicShapes &shapes,
                          const ConstantReader &reader) {
  if (!queries || !keys || !past || !sameDim(keys, past + queries))
    return false;
  mask = stripLeadingUnits(mask, shapes);
  if (cast<RankedTensorType>(mask.getType()).getElementType().isInteger(1))
    return isSlicedTril(mask, queries, keys, past, shapes, reader) ||
           isRangeCompare(mask, queries, keys, past, shapes);
  // An additive mask: where(visible, 0, fill).
  auto where = mask.getDefiningOp<dfg::WhereOp>();
  if (!where)
    return false;
  std::optional<double> keep = reader.splat(where.getLhs());
  std::optional<double> fill = reader.splat(where.getRhs());
  return keep && *keep == 0.0 && fill && isMaskValue(*fill) &&
         (isSlicedTril(where.getCondition(), queries, keys, past, shapes,
                       reader) ||
          isRangeCompare(where.getCondition(), queries, keys, past, shapes));
}

} // namespace meshc::graph
