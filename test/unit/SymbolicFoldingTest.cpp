//===- SymbolicFoldingTest.cpp - Min and Max of symbolic sizes ------------===//
//
// Part of meshc. The importer folds the exporters' shape arithmetic on
// symbolic dimensions (compiler/import/SymbolicFolding.cpp). A Min or Max of
// two sizes folds where their order is the same for every size (each
// dimension at least 1); where it flips at some size of one dimension, the
// order that holds for small sizes is taken and the largest size for which
// it holds is recorded (MPT's max(0, max_seq_len - sequence_length)), when
// the importer asks for it (only after an exact import failed: a sliding
// window's clamp must not bound the cache); with two dimensions in the
// difference, nothing folds.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace meshc;

namespace {

class SymbolicFoldingTest : public ::testing::Test {
protected:
  SymbolicFoldingTest() : builder(&ctx), table(&ctx) {
    ctx.loadDialect<dfg::DfgDialect>();
    ctx.printOpOnDiagnostic(false);
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    // Notes (the recorded maximum) are not failures here.
    handler.emplace(&ctx, [](Diagnostic &) { return success(); });
  }

  /// A one-element dfg.sizes holding `e`.
  Value sizes(AffineExpr e) {
    auto [map, names] = table.write({e});
    return dfg::SizesOp::create(
        builder, builder.getUnknownLoc(),
        RankedTensorType::get({1}, builder.getI64Type()), map, names);
  }

  /// `op`'s folded value as an expression over the table's symbols, or
  /// null when it did not fold.
  AffineExpr fold(Operation *op) {
    Value folded =
        onnximport::foldSymbolic(op, table, "", assume ? &maximums : nullptr);
    if (!folded)
      return {};
    if (auto c = folded.getDefiningOp<dfg::ConstantOp>())
      return getAffineConstantExpr(cast<DenseIntElementsAttr>(c.getValue())
                                       .getValues<APInt>()[0]
                                       .getSExtValue(),
                                   &ctx);
    auto s = folded.getDefiningOp<dfg::SizesOp>();
    return table.read(s.getMap(), s.getSymbols()).front();
  }

  template <typename Op> AffineExpr fold(AffineExpr a, AffineExpr b) {
    Operation *op =
        Op::create(builder, builder.getUnknownLoc(), sizes(a), sizes(b));
    return fold(op);
  }

  MLIRContext ctx;
  OpBuilder builder;
  dfg::DimTable table;
  OwningOpRef<ModuleOp> module;
  std::optional<ScopedDiagnosticHandler> handler;
  llvm::StringMap<int64_t> maximums;
  bool assume = true;
};

TEST_F(SymbolicFoldingTest, FlippingOrderTakesSmallSizesAndRecordsTheLargest) {
  AffineExpr s = table.symbol("sequence_length");
  AffineExpr c = getAffineConstantExpr(64, &ctx);
  AffineExpr zero = getAffineConstantExpr(0, &ctx);
  // max(0, 64 - s) = 64 - s while s <= 64.
  AffineExpr got = fold<dfg::MaxOp>(zero, c - s);
  ASSERT_TRUE(got);
  EXPECT_TRUE(dfg::sameDim(got, c - s));
  ASSERT_EQ(maximums.count("sequence_length"), 1u);
  EXPECT_EQ(maximums["sequence_length"], 64);
  // min(2s - 10, 0) = 2s - 10 while s <= 5: the least maximum is kept.
  got = fold<dfg::MinOp>(s * 2 - 10, zero);
  ASSERT_TRUE(got);
  EXPECT_TRUE(dfg::sameDim(got, s * 2 - 10));
  EXPECT_EQ(maximums["sequence_length"], 5);
}

TEST_F(SymbolicFoldingTest, WithoutAssumingAFlippingOrderDoesNotFold) {
  AffineExpr s = table.symbol("sequence_length");
  assume = false;
  EXPECT_FALSE(fold<dfg::MaxOp>(getAffineConstantExpr(0, &ctx),
                                getAffineConstantExpr(64, &ctx) - s));
  // An order that holds for every size needs no assumption.
  EXPECT_TRUE(fold<dfg::MaxOp>(s + 2, getAffineConstantExpr(3, &ctx)));
  EXPECT_TRUE(maximums.empty());
}

TEST_F(SymbolicFoldingTest, AnOrderThatHoldsForEverySizeRecordsNothing) {
  AffineExpr s = table.symbol("sequence_length");
  AffineExpr zero = getAffineConstantExpr(0, &ctx);
  // 1 - s <= 0 for every s >= 1: max(0, 1 - s) = 0.
  AffineExpr got = fold<dfg::MaxOp>(zero, getAffineConstantExpr(1, &ctx) - s);
  ASSERT_TRUE(got);
  EXPECT_TRUE(dfg::sameDim(got, zero));
  // s + 2 >= 3 for every s >= 1.
  got = fold<dfg::MaxOp>(s + 2, getAffineConstantExpr(3, &ctx));
  ASSERT_TRUE(got);
  EXPECT_TRUE(dfg::sameDim(got, s + 2));
  got = fold<dfg::MinOp>(s + 2, getAffineConstantExpr(3, &ctx));
  ASSERT_TRUE(got);
  EXPECT_TRUE(dfg::sameDim(got, getAffineConstantExpr(3, &ctx)));
  EXPECT_TRUE(maximums.empty());
}

TEST_F(SymbolicFoldingTest, TwoDimensionsInTheDifferenceDoNotFold) {
  AffineExpr s = table.symbol("sequence_length");
  AffineExpr p = table.symbol("past_sequence_length");
  EXPECT_FALSE(fold<dfg::MaxOp>(getAffineConstantExpr(0, &ctx), s - p));
  EXPECT_TRUE(maximums.empty());
}

} // namespace
