//===- DfgDialect.cpp - The dfg dialect -----------------------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;
using namespace meshc::dfg;

#include "dialects/dfg/IR/DfgDialect.cpp.inc"

void DfgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/dfg/IR/DfgOps.cpp.inc"
      >();
}

/// Folded values become dfg.constant when they are dense tensors of a dfg
/// type; anything else is left to the caller.
Operation *DfgDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
