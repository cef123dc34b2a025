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

/// reshape(x : T) -> x : T   (a reshape to the operand's own static type)
OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  return {};
}

/// transpose(x, [0, 1, ..., n-1]) -> x
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (p != static_cast<int64_t>(i))
      return {};
  return getType() == getInput().getType() ? getInput() : OpFoldResult();
}

} // namespace meshc::dfg
