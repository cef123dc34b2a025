//===- DfgSymbolicOps.cpp - Verifiers of the symbolic dfg ops -------------===//
//
// Part of meshc. Each check names the invariant of DfgSymbolicOps.td it
// enforces (S1, S2 shared; 1, 2 per op).
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/SymbolicDims.h"

using namespace mlir;

namespace meshc::dfg {
namespace {

/// S1, S2 for `map`, reported on `op`.
LogicalResult checkSymbols(Operation *op, AffineMap map, ArrayAttr names,
                           StringRef what) {
  if (llvm::Error e = verifySymbols(map, names, what))
    return op->emitOpError(llvm::toString(std::move(e)));
  return success();
}

/// The constant value of map result `i`, if it is one.
std::optional<int64_t> constantResult(AffineMap map, unsigned i) {
  if (auto c = dyn_cast<AffineConstantExpr>(map.getResult(i)))
    return c.getValue();
  return std::nullopt;
}

} // namespace

LogicalResult SizesOp::verify() {
  if (failed(checkSymbols(*this, getMap(), getSymbols(), "map")))
    return failure();
  auto type = getResult().getType();
  Type e = type.getElementType();
  if (type.getRank() > 1 || !(e.isInteger(64) || e.isInteger(32)) ||
      type.getNumElements() != getMap().getNumResults() ||
      (type.getRank() == 0 && getMap().getNumResults() != 1)) // 1
    return emitOpError("the result must be a 0-D or 1-D i64/i32 tensor with "
                       "one element per map result (")
           << getMap().getNumResults() << "), got " << type;
  return success();
}

LogicalResult SymbolicReshapeOp::verify() {
  if (failed(checkSymbols(*this, getShape(), getSymbols(), "the shape")))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  AffineMap map = getShape();
  if (out.getRank() != static_cast<int64_t>(map.getNumResults())) // 1
    return emitOpError("the result rank ")
           << out.getRank() << " differs from the shape's "
           << map.getNumResults() << " entries";
  for (int64_t i = 0; i < out.getRank(); ++i) {
    std::optional<int64_t> c = constantResult(map, i);
    if (out.isDynamicDim(i) ? c.has_value() : c != out.getDimSize(i)) // 1
      return emitOpError("result dimension ")
             << i << " disagrees with the shape's entry "
             << AffineMapAttr::get(
                    AffineMap::get(0, map.getNumSymbols(), map.getResult(i)));
  }
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements()) // 2
    return emitOpError("input ") << in << " and result " << out
                                 << " hold different numbers of elements";
  return success();
}

LogicalResult SymbolicExpandOp::verify() {
  if (failed(checkSymbols(*this, getShape(), getSymbols(), "the shape")))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  AffineMap map = getShape();
  int64_t rank = std::max<int64_t>(in.getRank(), map.getNumResults());
  if (out.getRank() != rank) // 1
    return emitOpError("the result rank must be ")
           << rank << ", got " << out.getRank();
  for (int64_t i = 0; i < rank; ++i) {
    int64_t k = i - (rank - in.getRank()), m = i - (rank - map.getNumResults());
    int64_t inDim = k >= 0 ? in.getDimSize(k) : 1;
    std::optional<int64_t> c =
        m >= 0 ? constantResult(map, m) : std::optional<int64_t>(1);
    if (out.isDynamicDim(i) || ShapedType::isDynamic(inDim) || !c)
      continue;
    int64_t want = *c == 1 ? inDim : *c;
    if ((inDim != 1 && *c != 1 && inDim != *c) ||
        out.getDimSize(i) != want) // 1
      return emitOpError("result dimension ")
             << i << " (" << out.getDimSize(i)
             << ") is not the broadcast of the input's " << inDim
             << " and the shape's " << *c;
  }
  return success();
}

LogicalResult SymbolicSliceOp::verify() {
  if (failed(checkSymbols(*this, getStarts(), getSymbols(), "starts")) ||
      failed(checkSymbols(*this, getEnds(), getSymbols(), "ends")))
    return failure();
  auto in = getInput().getType(), out = getResult().getType();
  size_t n = getAxes().size();
  if (getStarts().getNumResults() != n || getEnds().getNumResults() != n ||
      getSteps().size() != n) // 1
    return emitOpError("starts, ends, axes and steps must have the same "
                       "length");
  SmallVector<bool> sliced(in.getRank(), false);
  for (auto [axis, step] : llvm::zip_equal(getAxes(), getSteps())) {
    int64_t a = axis < 0 ? axis + in.getRank() : axis;
    if (a < 0 || a >= in.getRank() || sliced[a] || step == 0) // 1
      return emitOpError("axis ")
             << axis << " is out of range or repeated, or its step is 0";
    sliced[a] = true;
  }
  if (out.getRank() != in.getRank()) // 2
    return emitOpError("the result rank must be the input's");
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (!sliced[i] && !in.isDynamicDim(i) && !out.isDynamicDim(i) &&
        in.getDimSize(i) != out.getDimSize(i)) // 2
      return emitOpError("dimension ") << i << " is not sliced but changes";
  return success();
}

LogicalResult RangeOp::verify() {
  if (failed(checkSymbols(*this, getBounds(), getSymbols(), "bounds")))
    return failure();
  if (getBounds().getNumResults() != 2 || getDelta() == 0) // 1
    return emitOpError("bounds must give (start, limit) and delta must not "
                       "be 0");
  if (getResult().getType().getRank() != 1) // 2
    return emitOpError("the result must be 1-D");
  return success();
}

} // namespace meshc::dfg
