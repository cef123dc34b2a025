//===- DfgFolders.cpp - Folders of dfg ops --------------------------------===//
//
// Part of meshc. Folders only simplify; they never materialise weight data.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::dfg {

/// constant(v) -> v
OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// cast(x : T) to T -> x   (a conversion that converts nothing)
OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

/// reshape(x : T) -> x : T   (a reshape to the operand's own static type)
/// reshape(reshape(x : T)) : T -> x   (a reshape that undoes another)
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (!getType().hasStaticShape())
    return {};
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>())
    if (inner.getInput().getType() == getType())
      return inner.getInput();
  return {};
}

/// transpose(x, [0, 1, ..., n-1]) -> x
/// transpose(transpose(x, p), q) -> x   when q undoes p. (Other compositions
/// stay two ops: the raising patterns read exporters' transpose pairs.)
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto isIdentity = [](ArrayRef<int64_t> perm) {
    for (auto [i, p] : llvm::enumerate(perm))
      if (p != static_cast<int64_t>(i))
        return false;
    return true;
  };
  if (isIdentity(getPerm()))
    return getType() == getInput().getType() ? getInput() : OpFoldResult();
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : getPerm())
      composed.push_back(inner.getPerm()[p]);
    if (isIdentity(composed) && inner.getInput().getType() == getType())
      return inner.getInput();
  }
  return {};
}

/// slice(x) -> x   where each sliced axis is taken whole: from 0 to an end
/// at or past the dimension (an end of 2^40 or more is "to the end" of a
/// symbolic one, as exporters write INT64_MAX), step 1.
OpFoldResult SliceOp::fold(FoldAdaptor) {
  auto type = cast<RankedTensorType>(getInput().getType());
  if (type != getType())
    return {};
  for (auto [start, end, axis, step] :
       llvm::zip(getStarts(), getEnds(), getAxes(), getSteps())) {
    int64_t dim = type.getDimSize(axis < 0 ? axis + type.getRank() : axis);
    bool toEnd = end >= (int64_t(1) << 40) ||
                 (!ShapedType::isDynamic(dim) && end >= dim);
    if (step != 1 || start != 0 || !toEnd)
      return {};
  }
  return getInput();
}

bool movesElements(Operation *op) {
  return isa<UnsqueezeOp, SqueezeOp, ReshapeOp, SymbolicReshapeOp, ExpandOp,
             SymbolicExpandOp, TransposeOp, SliceOp>(op);
}

bool isZeroFill(Value v) {
  for (int depth = 0; depth < 16; ++depth) {
    Operation *op = v.getDefiningOp();
    if (!op)
      return false;
    if (auto c = dyn_cast<ConstantOp>(op)) {
      auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!attr || !attr.isSplat())
        return false;
      if (isa<FloatType>(attr.getElementType()))
        return attr.getSplatValue<APFloat>().isZero();
      if (isa<IntegerType>(attr.getElementType()))
        return attr.getSplatValue<APInt>().isZero();
      return false;
    }
    if (!movesElements(op) && !isa<SymbolicSliceOp>(op))
      return false;
    v = op->getOperand(0);
  }
  return false;
}

} // namespace meshc::dfg
