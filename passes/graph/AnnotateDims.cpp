//===- AnnotateDims.cpp - Name every symbolic dimension -------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace meshc {
#define GEN_PASS_DEF_ANNOTATEDIMSPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

struct AnnotateDimsPass : impl::AnnotateDimsPassBase<AnnotateDimsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      dfg::DimTable table(&getContext());
      dfg::SymbolicShapes shapes(table);
      Builder b(&getContext());
      func.walk([&](Operation *op) {
        bool dynamic = false;
        SmallVector<Attribute> described;
        for (Value result : op->getResults()) {
          auto type = dyn_cast<RankedTensorType>(result.getType());
          if (!type)
            return;
          dynamic |= !type.hasStaticShape();
          SmallVector<std::string> dims;
          for (AffineExpr d : shapes.dims(result))
            dims.push_back(table.format(d));
          described.push_back(b.getStringAttr(llvm::join(dims, " x ")));
        }
        if (dynamic)
          op->setAttr("dfg.dims", b.getArrayAttr(described));
      });
    }
  }
};

} // namespace
} // namespace meshc
