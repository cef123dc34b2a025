//===- ShardingRulesTest.cpp - Factor rules of dfg ops
//---------------------===//
//
// Part of meshc. The factor rules that planning and partition read: which
// factors make up each dimension, and which may be sharded how.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace meshc::dfg;

namespace {

class ShardingRulesTest : public ::testing::Test {
protected:
  ShardingRulesTest() : builder(&ctx) {
    ctx.loadDialect<DfgDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }
  Value weight(ArrayRef<int64_t> shape) {
    RankedTensorType type = f32(shape);
    return WeightOp::create(builder, builder.getUnknownLoc(), type, "w",
                            "w.bin", 0, type.getNumElements() * 4);
  }
  /// Causal attention of 4 query heads over 2 KV heads.
  Operation *gqaAttention() {
    Value q = weight({1, 4, 8, 8}), k = weight({1, 2, 8, 8});
    return AttentionOp::create(
        builder, builder.getUnknownLoc(), TypeRange{f32({1, 4, 8, 8})}, q, k, k,
        Value(), Value(), Value(), Value(), Value(),
        builder.getF32FloatAttr(0.5), builder.getBoolAttr(true),
        builder.getF32FloatAttr(0.0), builder.getBoolAttr(false), FloatAttr());
  }
  ShardingRule rule(Operation *op) {
    FailureOr<ShardingRule> r = getShardingRule(op);
    EXPECT_TRUE(succeeded(r));
    return succeeded(r) ? *r : ShardingRule();
  }

  MLIRContext ctx;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

// [B, S, H*D] -> [B, S, H, D]: the merged dimension is (h, d), outermost
// first, so splitting it splits the heads.
TEST_F(ShardingRulesTest, ReshapeSplitsADimensionIntoFactors) {
  Value x = weight({2, 8, 32});
  auto op = ReshapeOp::create(builder, builder.getUnknownLoc(), x,
                              ArrayRef<int64_t>{2, 8, 4, 8});
  ShardingRule r = rule(op);
  ASSERT_EQ(r.operands.size(), 1u);
  const TensorFactors &in = r.operands[0], &out = r.results[0];
  ASSERT_EQ(in[2].size(), 2u);
  EXPECT_EQ(in[2][0], out[2][0]);
  EXPECT_EQ(in[2][1], out[3][0]);
  EXPECT_EQ(in[0], out[0]);
  EXPECT_EQ(r.factors[out[2][0]].size, 4);
  EXPECT_EQ(r.factors[out[2][0]].kind, FactorKind::Parallel);
}

// A reshape that regroups dimensions ([6, 4] -> [4, 6]) pins them.
TEST_F(ShardingRulesTest, ReshapeThatRegroupsIsPinned) {
  Value x = weight({6, 4});
  auto op = ReshapeOp::create(builder, builder.getUnknownLoc(), x,
                              ArrayRef<int64_t>{4, 6});
  ShardingRule r = rule(op);
  for (const DimFactors &d : r.operands[0])
    for (int f : d)
      EXPECT_EQ(r.factors[f].kind, FactorKind::Pinned);
  EXPECT_NE(r.operands[0][0], r.results[0][0]);
}

// linear: `in` is a reduction shared by input and weight; `out` by weight,
// bias and result; with transpose_weight the weight is [out, in].
TEST_F(ShardingRulesTest, LinearContractsInFeatures) {
  Value x = weight({2, 8}), w = weight({16, 8}), bias = weight({16});
  auto op = LinearOp::create(builder, builder.getUnknownLoc(), x, w, bias,
                             /*transpose_weight=*/true);
  ShardingRule r = rule(op);
  int in = r.operands[0][1][0], out = r.results[0][1][0];
  EXPECT_EQ(r.factors[in].kind, FactorKind::Reduction);
  EXPECT_EQ(r.factors[out].kind, FactorKind::Parallel);
  EXPECT_EQ(r.operands[1][0], DimFactors{out});
  EXPECT_EQ(r.operands[1][1], DimFactors{in});
  EXPECT_EQ(r.operands[2][0], DimFactors{out});
  EXPECT_EQ(r.results[0][0], r.operands[0][0]);
}

// GQA: query heads are (kv_heads, group), so the KV heads lead them; the key
// sequence is pinned.
TEST_F(ShardingRulesTest, AttentionHeadsLeadWithKvHeads) {
  ShardingRule r = rule(gqaAttention());
  const DimFactors &qHeads = r.operands[0][1], &kHeads = r.operands[1][1];
  ASSERT_EQ(qHeads.size(), 2u);
  EXPECT_EQ(qHeads[0], kHeads[0]);
  EXPECT_EQ(r.factors[qHeads[0]].size, 2);
  EXPECT_EQ(r.factors[qHeads[1]].size, 2);
  EXPECT_EQ(r.factors[r.operands[1][2][0]].kind, FactorKind::Pinned);
  EXPECT_EQ(r.results[0][1], qHeads);
}

// Attention sinks ([heads], gpt-oss's): one per query head, so they split
// with the query heads, KV heads leading.
TEST_F(ShardingRulesTest, AttentionSinksFollowTheQueryHeads) {
  Value q = weight({1, 4, 8, 8}), k = weight({1, 2, 8, 8}),
        sinks = weight({4});
  auto op = AttentionOp::create(
      builder, builder.getUnknownLoc(), TypeRange{f32({1, 4, 8, 8})}, q, k, k,
      Value(), Value(), Value(), Value(), sinks, builder.getF32FloatAttr(0.5),
      builder.getBoolAttr(true), builder.getF32FloatAttr(0.0),
      builder.getBoolAttr(false), FloatAttr());
  ShardingRule r = rule(op);
  ASSERT_EQ(r.operands.size(), 4u);
  EXPECT_EQ(r.operands[3][0], r.operands[0][1]);
  EXPECT_EQ(r.operands[3][0], r.results[0][1]);
}

// Rotary with per-row tables ([batch, seq, d/2], as positions times
// inv_freq computed in the graph give them): the tables' rows are the
// input's batch, so a batch split (dp) splits them too; a table shared by
// every row ([1, seq, d/2]) stays whole.
TEST_F(ShardingRulesTest, RotaryTablesFollowTheBatch) {
  Value x = weight({2, 4, 8, 16}), rows = weight({2, 8, 8}),
        shared = weight({1, 8, 8});
  auto perRow = RotaryOp::create(builder, builder.getUnknownLoc(), x, rows,
                                 rows, Value(), false, 16);
  ShardingRule r = rule(perRow);
  EXPECT_EQ(r.operands[1][0], r.operands[0][0]);
  EXPECT_EQ(r.operands[2][0], r.operands[0][0]);
  EXPECT_EQ(r.factors[r.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[r.operands[1][2][0]].kind, FactorKind::Pinned);
  auto sharedRows = RotaryOp::create(builder, builder.getUnknownLoc(), x,
                                     shared, shared, Value(), false, 16);
  ShardingRule s = rule(sharedRows);
  EXPECT_NE(s.operands[1][0], s.operands[0][0]);
  EXPECT_NE(s.operands[2][0], s.operands[0][0]);
}

// Query heads (kv_heads=2, group=2) split over grid axes of sizes (2, 2):
// the first axis fills the KV heads, so the second reaches the group; read
// back, the query heads are split over both and the KV heads over the first.
// Axes that do not fit the factors are refused.
TEST_F(ShardingRulesTest, AxesDistributeOverADimensionsFactors) {
  ShardingRule r = rule(gqaAttention());
  const DimFactors &qHeads = r.operands[0][1], &kHeads = r.operands[1][1];
  SmallVector<int64_t> grid = {2, 2};
  FailureOr<SmallVector<GridAxes>> split =
      distributeAxes(r, qHeads, {0, 1}, grid);
  ASSERT_TRUE(succeeded(split));
  EXPECT_EQ((*split)[0], GridAxes{0});
  EXPECT_EQ((*split)[1], GridAxes{1});

  SmallVector<GridAxes> factorAxes(r.factors.size());
  factorAxes[qHeads[0]] = (*split)[0];
  factorAxes[qHeads[1]] = (*split)[1];
  EXPECT_EQ(dimensionAxes(r, qHeads, factorAxes, grid), (GridAxes{0, 1}));
  EXPECT_EQ(dimensionAxes(r, kHeads, factorAxes, grid), GridAxes{0});
  // Only the group split: the heads dimension cannot say so.
  factorAxes[qHeads[0]].clear();
  EXPECT_TRUE(dimensionAxes(r, qHeads, factorAxes, grid).empty());

  // Axes of sizes (4, 2) over (2, 2): the first overflows the KV heads.
  EXPECT_TRUE(failed(distributeAxes(r, qHeads, {0, 1}, {4, 2})));
  // A single axis of 4 fills both factors' product only as one: refused.
  EXPECT_TRUE(failed(distributeAxes(r, qHeads, {0}, {4})));
}

// Broadcast operands carry no factor on their size-1 dimensions; summing
// over an axis makes it a reduction, taking the largest a reduction whose
// partial results combine by max, a mean pins it.
TEST_F(ShardingRulesTest, BroadcastAndReductions) {
  Value a = weight({4, 8}), b = weight({1, 8});
  auto add = AddOp::create(builder, builder.getUnknownLoc(), a, b);
  ShardingRule r = rule(add);
  EXPECT_TRUE(r.operands[1][0].empty());
  EXPECT_EQ(r.operands[1][1], r.results[0][1]);

  auto sum = ReduceSumOp::create(builder, builder.getUnknownLoc(), a,
                                 ArrayRef<int64_t>{1}, false);
  ShardingRule s = rule(sum);
  EXPECT_EQ(s.factors[s.operands[0][1][0]].kind, FactorKind::Reduction);
  EXPECT_FALSE(s.factors[s.operands[0][1][0]].byMax);
  auto max = ReduceMaxOp::create(builder, builder.getUnknownLoc(), a,
                                 ArrayRef<int64_t>{0, 1}, false);
  ShardingRule x = rule(max);
  for (const DimFactors &d : x.operands[0]) {
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(x.factors[d[0]].kind, FactorKind::Reduction);
    EXPECT_TRUE(x.factors[d[0]].byMax);
  }
  auto mean = ReduceMeanOp::create(builder, builder.getUnknownLoc(), a,
                                   ArrayRef<int64_t>{1}, false);
  ShardingRule m = rule(mean);
  EXPECT_EQ(m.factors[m.operands[0][1][0]].kind, FactorKind::Pinned);
}

} // namespace

// [B, S, H, D] -> [B*S, H*D] with B and S dynamic: the dynamic dimensions do
// not pair with the static ones, but the static suffixes (h, d) and (h*d)
// hold the same elements, so the heads still lead the merged dimension.
TEST_F(ShardingRulesTest, ReshapePairsItsStaticSuffixBehindDynamicDims) {
  Value x = weight({ShapedType::kDynamic, ShapedType::kDynamic, 4, 8});
  auto op = ReshapeOp::create(builder, builder.getUnknownLoc(),
                              f32({ShapedType::kDynamic, 32}), x,
                              builder.getDenseI64ArrayAttr({-1, 32}));
  ShardingRule r = rule(op);
  const TensorFactors &in = r.operands[0], &out = r.results[0];
  ASSERT_EQ(out[1].size(), 2u);
  EXPECT_EQ(out[1][0], in[2][0]);
  EXPECT_EQ(out[1][1], in[3][0]);
  EXPECT_EQ(r.factors[in[2][0]].kind, FactorKind::Parallel);
}

// [B*H, S, D] -> [B, H, S, D] (the dynamo exporter's way back from 3-D
// matmuls): the input's first dimension is (b, h). A result split over its
// heads alone is no sharding of B*H, so assignFactors drops the heads' axis
// (partition then slices the result instead of building a reshape of the
// wrong size).
TEST_F(ShardingRulesTest, AFactorBehindAWholeOneIsDropped) {
  Value x = weight({8, 5, 16});
  auto op = ReshapeOp::create(builder, builder.getUnknownLoc(), x,
                              ArrayRef<int64_t>{2, 4, 5, 16});
  ShardingRule r = rule(op);
  int b = r.results[0][0][0], h = r.results[0][1][0];
  ASSERT_EQ(r.operands[0][0], (DimFactors{b, h}));
  SmallVector<GridAxes, 4> whole(3), heads = {{}, {0}, {}, {}};
  SmallVector<GridAxes> factors =
      assignFactors(r, {whole}, {heads}, /*gridShape=*/{2});
  EXPECT_TRUE(factors[h].empty());
  // With b split whole first, h may follow it.
  SmallVector<GridAxes, 4> both = {{0}, {1}, {}, {}};
  factors = assignFactors(r, {whole}, {both}, /*gridShape=*/{2, 4});
  EXPECT_EQ(factors[b], GridAxes{0});
  EXPECT_EQ(factors[h], GridAxes{1});
}

// A symbolic reshape [b*s, 32] -> [b, s, 32] keeps the split of its last
// dimension; its first dimensions pair (a split of the first into contiguous
// blocks is one of the whole tensor: dp's batch), the other symbolic one is
// held whole.
TEST_F(ShardingRulesTest, SymbolicReshapeKeepsItsStaticSuffix) {
  Value x = weight({ShapedType::kDynamic, 32});
  MLIRContext *c = &ctx;
  AffineMap map =
      AffineMap::get(0, 2,
                     {getAffineSymbolExpr(0, c), getAffineSymbolExpr(1, c),
                      getAffineConstantExpr(32, c)},
                     c);
  auto op = SymbolicReshapeOp::create(
      builder, builder.getUnknownLoc(),
      f32({ShapedType::kDynamic, ShapedType::kDynamic, 32}), x, map,
      builder.getStrArrayAttr({"b", "s"}));
  ShardingRule r = rule(op);
  EXPECT_EQ(r.operands[0][1], r.results[0][2]);
  EXPECT_EQ(r.factors[r.results[0][2][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.operands[0][0], r.results[0][0]);
  EXPECT_EQ(r.factors[r.operands[0][0][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(r.factors[r.results[0][1][0]].kind, FactorKind::Pinned);
}

// A slice of every second feature from the first or second keeps the outer
// factor of [16] = [8, 2] shardable (gpt-oss's interleaved gate and up); a
// slice of step 2 from 2 does not.
TEST_F(ShardingRulesTest, StridedSliceKeepsWholeGroupsShardable) {
  Value x = weight({4, 16});
  auto slice = [&](int64_t start, int64_t size) {
    return SliceOp::create(builder, builder.getUnknownLoc(), f32({4, size}), x,
                           builder.getDenseI64ArrayAttr({start}),
                           builder.getDenseI64ArrayAttr({INT64_MAX}),
                           builder.getDenseI64ArrayAttr({1}),
                           builder.getDenseI64ArrayAttr({2}));
  };
  ShardingRule odd = rule(slice(1, 8));
  ASSERT_EQ(odd.operands[0][1].size(), 2u);
  EXPECT_EQ(odd.operands[0][1][0], odd.results[0][1][0]);
  EXPECT_EQ(odd.factors[odd.results[0][1][0]].kind, FactorKind::Parallel);
  EXPECT_EQ(odd.factors[odd.operands[0][1][1]].kind, FactorKind::Pinned);
  ShardingRule skip = rule(slice(2, 7));
  EXPECT_EQ(skip.factors[skip.results[0][1][0]].kind, FactorKind::Pinned);
}
