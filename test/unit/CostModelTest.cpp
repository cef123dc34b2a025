//===- CostModelTest.cpp - Op costs and the plan report -------------------===//
//
// Part of meshc. The cost model's figures are formulas (FLOPs of a
// contraction, ring volumes of collectives) and bookkeeping (which ranks a
// stage has, what weights a rank holds, the GPipe bubble): each is checked
// against the value worked out by hand.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/CostModel.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace meshc;

namespace {

class CostModelTest : public ::testing::Test {
protected:
  CostModelTest() {
    ctx.loadDialect<dfg::DfgDialect, shard::ShardDialect, func::FuncDialect>();
  }
  OwningOpRef<ModuleOp> parse(StringRef text) {
    return parseSourceString<ModuleOp>(text, &ctx);
  }
  template <typename OpT> OpT first(ModuleOp m) {
    OpT found;
    m.walk([&](OpT op) {
      if (!found)
        found = op;
    });
    return found;
  }
  MLIRContext ctx;
};

constexpr StringLiteral kPipelined = R"mlir(
shard.grid @mesh(shape = 2x2) {meshc.axes = ["pp", "tp"]}
func.func private @f_stage0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {meshc.stage = 0 : i64} {
  %w = dfg.weight "w0" in "w.bin" [offset = 0, length = 1024] : tensor<8x32xf32>
  %ws = shard.all_slice %w on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x32xf32> -> tensor<8x16xf32>
  %v = dfg.weight "v0" in "w.bin" [offset = 1024, length = 1024] : tensor<32x8xf32>
  %vs = shard.all_slice %v on @mesh grid_axes = [1] slice_axis = 0 : tensor<32x8xf32> -> tensor<16x8xf32>
  %h = dfg.linear %x, %ws transpose_weight = false : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = dfg.linear %h, %vs transpose_weight = false : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %r = shard.all_reduce %y on @mesh grid_axes = [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
func.func private @f_stage1(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {meshc.stage = 1 : i64} {
  %w = dfg.weight "w1" in "w.bin" [offset = 2048, length = 256] : tensor<8x8xf32>
  %y = dfg.linear %x, %w transpose_weight = false : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @f(%x: tensor<8x8xf32>) -> (tensor<8x8xf32> {meshc.stage = 1 : i64}) {
  %x0 = dfg.slice %x starts = [0] ends = [4] axes = [0] steps = [1] : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %a0 = call @f_stage0(%x0) {meshc.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s0 = shard.send %a0 on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r0 = shard.recv %s0 on @mesh grid_axes = [0] source = [0] {meshc.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b0 = call @f_stage1(%r0) {meshc.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %x1 = dfg.slice %x starts = [4] ends = [8] axes = [0] steps = [1] : (tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = call @f_stage0(%x1) {meshc.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s1 = shard.send %a1 on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r1 = shard.recv %s1 on @mesh grid_axes = [0] source = [0] {meshc.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b1 = call @f_stage1(%r1) {meshc.stage = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = dfg.concat %b0, %b1 axis = 0 {meshc.stage = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
)mlir";

// A linear is 2*M*N*K FLOPs; its bytes are its operands and result.
TEST_F(CostModelTest, LinearFlopsAndBytes) {
  OwningOpRef<ModuleOp> m = parse(kPipelined);
  ASSERT_TRUE(m);
  auto linear = first<dfg::LinearOp>(*m); // [4,8] x [8,16]
  OpCost c =
      estimateOpCost(linear, *lookupGrid(*m), DeviceModel(), LinkModel());
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 4 * 16 * 8);
  EXPECT_DOUBLE_EQ(c.bytes, (4 * 8 + 8 * 16 + 4 * 16) * 4.0);
  EXPECT_DOUBLE_EQ(c.seconds, c.bytes / DeviceModel().memoryBandwidth);
}

// Ring all-reduce sends 2(T-1)/T of the tensor per rank; a send, all of it.
TEST_F(CostModelTest, CollectiveVolumes) {
  OwningOpRef<ModuleOp> m = parse(kPipelined);
  ASSERT_TRUE(m);
  shard::GridOp grid = *lookupGrid(*m);
  LinkModel link{100e9, 5e-6};
  OpCost ar =
      estimateOpCost(first<shard::AllReduceOp>(*m), grid, DeviceModel(), link);
  EXPECT_DOUBLE_EQ(ar.commBytes, 2.0 * 1 / 2 * 4 * 8 * 4);
  EXPECT_DOUBLE_EQ(ar.seconds, 2 * 5e-6 + ar.commBytes / 100e9);
  OpCost send =
      estimateOpCost(first<shard::SendOp>(*m), grid, DeviceModel(), link);
  EXPECT_DOUBLE_EQ(send.commBytes, 4 * 8 * 4.0);
  // The rank's weight slice is loaded, not computed.
  OpCost slice =
      estimateOpCost(first<shard::AllSliceOp>(*m), grid, DeviceModel(), link);
  EXPECT_EQ(slice.seconds, 0.0);
}

// Two stages of the grid pp=2 x tp=2: ranks {0,1} and {2,3}; two
// microbatches, so the bubble is (2-1)/(2+2-1); a weight sliced over tp
// counts half.
TEST_F(CostModelTest, PlanReportOfAPipeline) {
  OwningOpRef<ModuleOp> m = parse(kPipelined);
  ASSERT_TRUE(m);
  Topology topology;
  FailureOr<PlanReport> r = analyzePlan(*m, DeviceModel(), topology);
  ASSERT_TRUE(succeeded(r));
  ASSERT_EQ(r->stages.size(), 2u);
  EXPECT_EQ(r->worldSize, 4);
  EXPECT_EQ(r->microbatches, 2);
  EXPECT_EQ(r->stages[0].ranks, (SmallVector<int64_t>{0, 1}));
  EXPECT_EQ(r->stages[1].ranks, (SmallVector<int64_t>{2, 3}));
  EXPECT_DOUBLE_EQ(r->stages[0].weightBytes, (8 * 16 + 16 * 8) * 4.0);
  EXPECT_DOUBLE_EQ(r->stages[1].weightBytes, 8 * 8 * 4.0);
  EXPECT_DOUBLE_EQ(r->bubble, 1.0 / 3.0);
  // Stage 0 sends one microbatch's activations per microbatch.
  EXPECT_GT(r->stages[0].commBytes, 4 * 8 * 4.0);
  double slowest = std::max(r->stages[0].seconds(), r->stages[1].seconds());
  EXPECT_DOUBLE_EQ(r->stepSeconds, 3 * slowest);
  // Stage 0's peak is an op's operand and result: x and h (4x8 + 4x16
  // floats) while h is computed, h and y after.
  EXPECT_DOUBLE_EQ(r->stages[0].activationBytes, (32 + 64) * 4.0);
}

// With 2 GPUs per node, the pp axis (stride 2) crosses nodes, tp does not.
TEST_F(CostModelTest, AxesMapToLinks) {
  OwningOpRef<ModuleOp> m = parse(kPipelined);
  ASSERT_TRUE(m);
  Topology topology;
  topology.nodes = 2;
  topology.gpusPerNode = 2;
  FailureOr<PlanReport> r = analyzePlan(*m, DeviceModel(), topology);
  ASSERT_TRUE(succeeded(r));
  ASSERT_EQ(r->axes.size(), 2u);
  EXPECT_EQ(std::get<0>(r->axes[0]), "pp");
  EXPECT_FALSE(std::get<2>(r->axes[0]));
  EXPECT_EQ(std::get<0>(r->axes[1]), "tp");
  EXPECT_TRUE(std::get<2>(r->axes[1]));
}

} // namespace
