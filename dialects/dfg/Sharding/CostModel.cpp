//===- CostModel.cpp - Time and bytes of ops and collectives --------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/CostModel.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include <algorithm>

using namespace mlir;

namespace meshc {
namespace {

double elements(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return 0;
  double n = 1;
  for (int64_t d : t.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : d;
  return n;
}

bool isWeightSlice(Operation *op) {
  auto slice = dyn_cast<shard::AllSliceOp>(op);
  Operation *def = slice ? slice.getInput().getDefiningOp() : nullptr;
  return def && isa<dfg::WeightOp, dfg::ConstantOp>(def);
}

/// Ring algorithms: bytes each rank sends for a collective over `n` ranks.
double ringBytes(Operation *op, int64_t n) {
  double in = tensorBytes(op->getOperand(0).getType());
  double out = tensorBytes(op->getResult(0).getType());
  if (isa<shard::AllReduceOp>(op))
    return 2.0 * (n - 1) / n * in;
  if (isa<shard::AllGatherOp>(op))
    return (n - 1.0) / n * out;
  if (isa<shard::ReduceScatterOp, shard::AllToAllOp>(op))
    return (n - 1.0) / n * in;
  return in; // send / recv: the whole tensor
}

ArrayRef<int16_t> gridAxes(Operation *op) {
  if (auto o = dyn_cast<shard::AllReduceOp>(op))
    return o.getGridAxes();
  if (auto o = dyn_cast<shard::AllGatherOp>(op))
    return o.getGridAxes();
  if (auto o = dyn_cast<shard::ReduceScatterOp>(op))
    return o.getGridAxes();
  if (auto o = dyn_cast<shard::AllToAllOp>(op))
    return o.getGridAxes();
  if (auto o = dyn_cast<shard::SendOp>(op))
    return o.getGridAxes();
  if (auto o = dyn_cast<shard::RecvOp>(op))
    return o.getGridAxes();
  return {};
}

} // namespace

double tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return 0;
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return elements(t) * std::max(1u, bits / 8);
}

OpCost estimateOpCost(Operation *op, shard::GridOp grid,
                      const DeviceModel &device, const LinkModel &link) {
  OpCost cost;
  if (isa<dfg::WeightOp, dfg::ConstantOp>(op) || isWeightSlice(op) ||
      isa<shard::RecvOp>(op)) // a receive is timed at its send
    return cost;
  if (isa<shard::ShardDialect>(op->getDialect())) {
    int64_t n = groupSize(grid, gridAxes(op));
    cost.commBytes = ringBytes(op, n);
    double steps = isa<shard::SendOp>(op) ? 1 : n - 1;
    if (isa<shard::AllReduceOp>(op))
      steps *= 2;
    cost.seconds = link.latency * std::max(1.0, steps / (n > 1 ? n - 1 : 1)) +
                   cost.commBytes / link.bandwidth;
    return cost;
  }
  if (isa<dfg::EmbeddingOp, dfg::GatherOp>(op)) {
    // A lookup reads the rows it returns, not the whole table.
    for (Value v : op->getOperands().drop_front())
      cost.bytes += tensorBytes(v.getType());
    for (Value v : op->getResults())
      cost.bytes += tensorBytes(v.getType());
  } else {
    for (Value v : op->getOperands())
      cost.bytes += tensorBytes(v.getType());
  }
  double out = 0;
  for (Value v : op->getResults())
    out += elements(v.getType());
  if (!isa<dfg::EmbeddingOp, dfg::GatherOp>(op))
    for (Value v : op->getResults())
      cost.bytes += tensorBytes(v.getType());
  if (auto linear = dyn_cast<dfg::LinearOp>(op)) {
    cost.flops = 2 * out * linear.getInFeatures();
  } else if (auto matmul = dyn_cast<dfg::MatMulOp>(op)) {
    auto lhs = cast<RankedTensorType>(matmul->getOperand(0).getType());
    cost.flops = 2 * out * std::max<int64_t>(1, lhs.getShape().back());
  } else if (auto attention = dyn_cast<dfg::AttentionOp>(op)) {
    // [B, H, S, D] queries over [B, Hkv, T, D] keys: QK^T and PV, plus
    // the softmax over the scores.
    auto q = cast<RankedTensorType>(attention.getQuery().getType());
    auto k = cast<RankedTensorType>(attention.getKey().getType());
    double keys = ShapedType::isDynamic(k.getDimSize(2)) ? 1 : k.getDimSize(2);
    double scores = elements(q) / std::max<int64_t>(1, q.getShape().back()) *
                    keys;
    cost.flops = 4 * elements(q) * keys + 5 * scores;
  } else {
    cost.flops = out;
  }
  cost.seconds = std::max(cost.flops / device.flops,
                          cost.bytes / device.memoryBandwidth);
  return cost;
}

} // namespace meshc
