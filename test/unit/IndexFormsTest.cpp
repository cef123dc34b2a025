//===- IndexFormsTest.cpp - Index tensors as affine functions -------------===//
//
// Part of meshc. IndexForms (passes/graph/IndexForms.h) on what exporters
// write for positions: ranges over symbolic lengths, views, broadcasts,
// sums, products by constants and casts; literals whose values are affine
// in their position; and the near misses that must not be read as
// positions (a cast to bool or to f16, a broadcast of a dimension of size 1, a
// product by a value that is not a constant, a literal that is not affine).
//
//===----------------------------------------------------------------------===//
#include "passes/graph/IndexForms.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace meshc;

namespace {

class IndexFormsTest : public ::testing::Test {
protected:
  IndexFormsTest() : table(&ctx), shapes(table), reader("") {
    ctx.loadDialect<dfg::DfgDialect, func::FuncDialect>();
  }
  /// The values `func.return` returns, in order.
  SmallVector<Value> results(StringRef text) {
    module = parseSourceString<ModuleOp>(text, &ctx);
    EXPECT_TRUE(module);
    SmallVector<Value> out;
    if (module)
      module->walk([&](func::ReturnOp ret) {
        out.append(ret->operand_begin(), ret->operand_end());
      });
    return out;
  }
  MLIRContext ctx;
  dfg::DimTable table;
  dfg::SymbolicShapes shapes;
  graph::ConstantReader reader;
  OwningOpRef<ModuleOp> module;
};

constexpr StringLiteral kPositions = R"mlir(
func.func @f(%x: tensor<?x?xf32> {dfg.dim_names = ["b", "s"]}) -> (tensor<?x1xi64>, tensor<1x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>, tensor<3x2xi64>, tensor<?xf32>, tensor<?x?xi64>) {
  %r = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %col = dfg.unsqueeze %r axes = [1] : (tensor<?xi64>) -> tensor<?x1xi64>
  %k = dfg.range affine_map<()[s0] -> (s0, s0 * 2)> delta = 1 symbols ["s"] : tensor<?xi64>
  %row = dfg.reshape %k to [1, -1] : (tensor<?xi64>) -> tensor<1x?xi64>
  %grid = dfg.symbolic_expand %col to affine_map<()[s0, s1] -> (s0, s1)> symbols ["b", "s"] : (tensor<?x1xi64>) -> tensor<?x?xi64>
  %two = dfg.constant dense<2> : tensor<i64>
  %twice = dfg.mul %two, %row : (tensor<i64>, tensor<1x?xi64>) -> tensor<1x?xi64>
  %diff = dfg.sub %twice, %grid : (tensor<1x?xi64>, tensor<?x?xi64>) -> tensor<?x?xi64>
  %lit = dfg.constant dense<[[7, 5], [10, 8], [13, 11]]> : tensor<3x2xi64>
  %f = dfg.cast %r to f32 : (tensor<?xi64>) -> tensor<?xf32>
  %t = dfg.transpose %diff perm = [1, 0] : (tensor<?x?xi64>) -> tensor<?x?xi64>
  return %col, %row, %grid, %diff, %lit, %f, %t : tensor<?x1xi64>, tensor<1x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>, tensor<3x2xi64>, tensor<?xf32>, tensor<?x?xi64>
}
)mlir";

TEST_F(IndexFormsTest, ReadsPositionsThroughWhatExportersWrite) {
  SmallVector<Value> v = results(kPositions);
  ASSERT_EQ(v.size(), 7u);
  graph::IndexForms forms(shapes, reader);
  AffineExpr s = table.symbol("s");

  EXPECT_TRUE(forms.isPosition(v[0], 0)); // the column of batch positions
  EXPECT_FALSE(forms.isPosition(v[0], 1));

  // A range from the symbolic s: offset s, unit step along dimension 1.
  std::optional<graph::IndexForm> row = forms.of(v[1]);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->coef, (SmallVector<int64_t>{0, 1}));
  EXPECT_TRUE(dfg::sameDim(row->offset, s));
  EXPECT_FALSE(row->constantOffset());

  EXPECT_TRUE(forms.isPosition(v[2], 0)); // the column broadcast over s

  // 2 * (j + s) - i.
  std::optional<graph::IndexForm> diff = forms.of(v[3]);
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->coef, (SmallVector<int64_t>{-1, 2}));
  EXPECT_TRUE(dfg::sameDim(diff->offset, s * 2));

  // 7 + 3 i - 2 j, read from the values.
  std::optional<graph::IndexForm> lit = forms.of(v[4]);
  ASSERT_TRUE(lit);
  EXPECT_EQ(lit->coef, (SmallVector<int64_t>{3, -2}));
  EXPECT_EQ(lit->constantOffset(), 7);

  EXPECT_TRUE(forms.isPosition(v[5], 0)); // f32 holds small integers

  std::optional<graph::IndexForm> t = forms.of(v[6]);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->coef, (SmallVector<int64_t>{2, -1}));
}

constexpr StringLiteral kNearMisses = R"mlir(
func.func @f(%x: tensor<?x?xf32> {dfg.dim_names = ["b", "s"]}, %n: tensor<i64>) -> (tensor<?xi1>, tensor<?x4xi64>, tensor<?xi64>, tensor<3xi64>, tensor<?xf16>, tensor<?xi64>) {
  %r = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %bool = dfg.cast %r to i1 : (tensor<?xi64>) -> tensor<?xi1>
  %one = dfg.constant dense<0> : tensor<1xi64>
  %col = dfg.unsqueeze %one axes = [1] : (tensor<1xi64>) -> tensor<1x1xi64>
  %bcast = dfg.symbolic_expand %col to affine_map<()[s0] -> (s0, 4)> symbols ["b"] : (tensor<1x1xi64>) -> tensor<?x4xi64>
  %byn = dfg.mul %r, %n : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %lit = dfg.constant dense<[0, 1, 3]> : tensor<3xi64>
  %narrow = dfg.cast %r to f16 : (tensor<?xi64>) -> tensor<?xf16>
  %back = dfg.cast %narrow to i64 : (tensor<?xf16>) -> tensor<?xi64>
  return %bool, %bcast, %byn, %lit, %narrow, %back : tensor<?xi1>, tensor<?x4xi64>, tensor<?xi64>, tensor<3xi64>, tensor<?xf16>, tensor<?xi64>
}
)mlir";

TEST_F(IndexFormsTest, NearMissesAreNotPositions) {
  SmallVector<Value> v = results(kNearMisses);
  ASSERT_EQ(v.size(), 6u);
  graph::IndexForms forms(shapes, reader);
  EXPECT_FALSE(forms.of(v[0])); // bool does not keep the positions
  // A dimension of size 1 broadcast is uniform along the result's axis.
  std::optional<graph::IndexForm> bcast = forms.of(v[1]);
  ASSERT_TRUE(bcast);
  EXPECT_TRUE(bcast->isUniform());
  EXPECT_FALSE(forms.isPosition(v[1], 0));
  EXPECT_FALSE(forms.of(v[2])); // a product by a runtime value
  EXPECT_FALSE(forms.of(v[3])); // 0, 1, 3 is not affine
  EXPECT_FALSE(forms.of(v[4])); // f16 holds integers only up to 2048
  EXPECT_FALSE(forms.of(v[5])); // nor does widening it again recover them
}

// Position ids read at index forms (HF's causal mask through the positions:
// pos[b, j] gathered at the key and query indices): Gather along an axis,
// GatherND with batch dimensions, and GatherND whose tuples are a concat of
// a batch and a position index. Near miss: indices counting from the back
// (-1 - j) are not read (a negative index wraps around).
constexpr StringLiteral kGathers = R"mlir(
func.func @f(%x: tensor<?x?xf32> {dfg.dim_names = ["b", "s"]}) -> (tensor<?x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>) {
  %p = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %p2 = dfg.unsqueeze %p axes = [0] : (tensor<?xi64>) -> tensor<1x?xi64>
  %three = dfg.constant dense<3> : tensor<i64>
  %shifted = dfg.add %p2, %three : (tensor<1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %pos = dfg.symbolic_expand %shifted to affine_map<()[s0, s1] -> (s0, s1)> symbols ["b", "s"] : (tensor<1x?xi64>) -> tensor<?x?xi64>
  %two = dfg.constant dense<2> : tensor<i64>
  %idx = dfg.mul %p, %two : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %g = dfg.gather %pos, %idx axis = 1 : (tensor<?x?xi64>, tensor<?xi64>) -> tensor<?x?xi64>
  %i3 = dfg.unsqueeze %p axes = [0, 2] : (tensor<?xi64>) -> tensor<1x?x1xi64>
  %ib = dfg.symbolic_expand %i3 to affine_map<()[s0, s1] -> (s0, s1, 1)> symbols ["b", "s"] : (tensor<1x?x1xi64>) -> tensor<?x?x1xi64>
  %nd = dfg.gather_nd %pos, %ib batch_dims = 1 : (tensor<?x?xi64>, tensor<?x?x1xi64>) -> tensor<?x?xi64>
  %b = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %b3 = dfg.unsqueeze %b axes = [1, 2] : (tensor<?xi64>) -> tensor<?x1x1xi64>
  %bb = dfg.symbolic_expand %b3 to affine_map<()[s0, s1] -> (s0, s1, 1)> symbols ["b", "s"] : (tensor<?x1x1xi64>) -> tensor<?x?x1xi64>
  %tuples = dfg.concat %bb, %ib axis = -1 : (tensor<?x?x1xi64>, tensor<?x?x1xi64>) -> tensor<?x?x2xi64>
  %cat = dfg.gather_nd %pos, %tuples batch_dims = 0 : (tensor<?x?xi64>, tensor<?x?x2xi64>) -> tensor<?x?xi64>
  %m1 = dfg.constant dense<-1> : tensor<i64>
  %back = dfg.sub %m1, %p : (tensor<i64>, tensor<?xi64>) -> tensor<?xi64>
  %wrap = dfg.gather %pos, %back axis = 1 : (tensor<?x?xi64>, tensor<?xi64>) -> tensor<?x?xi64>
  return %g, %nd, %cat, %wrap : tensor<?x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>, tensor<?x?xi64>
}
)mlir";

TEST_F(IndexFormsTest, ReadsGathersAtIndexForms) {
  SmallVector<Value> v = results(kGathers);
  ASSERT_EQ(v.size(), 4u);
  graph::IndexForms forms(shapes, reader);
  // pos[b, 2 j] = 2 j + 3.
  std::optional<graph::IndexForm> g = forms.of(v[0]);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->coef, (SmallVector<int64_t>{0, 2}));
  EXPECT_EQ(g->constantOffset(), 3);
  // pos[b, j] = j + 3, batched and by concatenated tuples alike.
  for (Value read : {v[1], v[2]}) {
    std::optional<graph::IndexForm> f = forms.of(read);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->coef, (SmallVector<int64_t>{0, 1}));
    EXPECT_EQ(f->constantOffset(), 3);
  }
  EXPECT_FALSE(forms.of(v[3])); // indices below 0 wrap around
}

} // namespace
