//===- CostModel.cpp - Time and bytes of ops and collectives --------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/CostModel.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include <algorithm>
#include <functional>

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
    int64_t n = groupSize(grid, collectiveGridAxes(op));
    cost.commBytes = ringBytes(op, n);
    // An all-reduce is a reduce-scatter and an all-gather: two latencies.
    double latencies = isa<shard::AllReduceOp>(op) ? 2 : 1;
    cost.seconds = link.latency * latencies + cost.commBytes / link.bandwidth;
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
    double scores =
        elements(q) / std::max<int64_t>(1, q.getShape().back()) * keys;
    cost.flops = 4 * elements(q) * keys + 5 * scores;
  } else {
    cost.flops = out;
  }
  cost.seconds =
      std::max(cost.flops / device.flops, cost.bytes / device.memoryBandwidth);
  return cost;
}

} // namespace meshc

namespace meshc {
namespace {

/// Rank numbering and links of a grid on a topology.
class Placement {
public:
  Placement(shard::GridOp grid, const Topology &topology)
      : shape_(grid.getShape()), topology_(topology) {
    for (int64_t n : shape_)
      world_ *= n;
  }

  int64_t world() const { return world_; }

  int64_t stride(int64_t axis) const {
    int64_t s = 1;
    for (int64_t a = shape_.size() - 1; a > axis; --a)
      s *= shape_[a];
    return s;
  }

  /// Whether rank 0's group over `axes` sits on one node (groups are
  /// translates of each other, so rank 0's speaks for all when nodes hold
  /// whole blocks of ranks).
  bool intraNode(ArrayRef<int16_t> axes) const {
    int64_t perNode =
        topology_.gpusPerNode > 0 ? topology_.gpusPerNode : world_;
    int64_t last = 0;
    for (int16_t a : axes)
      last += (shape_[a] - 1) * stride(a);
    return last / perNode == 0;
  }

  const LinkModel &link(ArrayRef<int16_t> axes) const {
    return intraNode(axes) ? topology_.intraNode : topology_.interNode;
  }

  /// The ranks whose coordinate on `axis` is `index`.
  SmallVector<int64_t> ranksAt(int64_t axis, int64_t index) const {
    SmallVector<int64_t> ranks;
    for (int64_t r = 0; r < world_; ++r)
      if (r / stride(axis) % shape_[axis] == index)
        ranks.push_back(r);
    return ranks;
  }

private:
  ArrayRef<int64_t> shape_;
  const Topology &topology_;
  int64_t world_ = 1;
};

/// Bytes of weights a rank holds: for each weight, the values its compute
/// ops read (after slices, reshapes and the rank's all_slice), at most the
/// whole weight.
double heldWeightBytes(func::FuncOp func) {
  double total = 0;
  func.walk([&](Operation *op) {
    if (!isa<dfg::WeightOp, dfg::ConstantOp>(op))
      return;
    llvm::SmallPtrSet<Value, 8> read;
    std::function<void(Value)> visit = [&](Value v) {
      for (Operation *user : v.getUsers()) {
        if (isa<dfg::SliceOp, dfg::ReshapeOp, dfg::TransposeOp,
                shard::AllSliceOp>(user))
          visit(user->getResult(0));
        else
          read.insert(v);
      }
    };
    visit(op->getResult(0));
    double bytes = 0;
    for (Value v : read)
      bytes += tensorBytes(v.getType());
    total += std::min(bytes, tensorBytes(op->getResult(0).getType()));
  });
  return total;
}

/// Peak bytes of activations live at once in `func` (weights and what is
/// made of them excluded), for one call.
double peakActivationBytes(func::FuncOp func) {
  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [i, op] : llvm::enumerate(body))
    index[&op] = i;
  auto isWeight = [](Value v) {
    Operation *def = v.getDefiningOp();
    while (
        def &&
        isa<dfg::SliceOp, dfg::ReshapeOp, dfg::TransposeOp, shard::AllSliceOp>(
            def))
      def = def->getOperand(0).getDefiningOp();
    return def && isa<dfg::WeightOp, dfg::ConstantOp>(def);
  };
  // Bytes freed after each op (values whose last use it is).
  std::vector<double> freed(body.getOperations().size(), 0.0);
  auto lastUse = [&](Value v) {
    size_t last = 0;
    for (Operation *user : v.getUsers())
      last = std::max(last, index.lookup(user));
    return last;
  };
  double live = 0;
  for (BlockArgument a : body.getArguments()) {
    live += tensorBytes(a.getType());
    freed[lastUse(a)] += tensorBytes(a.getType());
  }
  double peak = live;
  for (auto [i, op] : llvm::enumerate(body)) {
    for (Value r : op.getResults()) {
      if (isWeight(r) || r.use_empty())
        continue;
      live += tensorBytes(r.getType());
      freed[lastUse(r)] += tensorBytes(r.getType());
    }
    peak = std::max(peak, live);
    live -= freed[i];
  }
  return peak;
}

} // namespace

double PlanReport::peakMemoryBytes() const {
  double peak = 0;
  for (const StageReport &s : stages)
    peak = std::max(peak, s.memoryBytes());
  return peak;
}

FailureOr<PlanReport> analyzePlan(ModuleOp module, const DeviceModel &device,
                                  const Topology &topology) {
  FailureOr<shard::GridOp> grid = lookupGrid(module);
  if (failed(grid))
    return failure();
  Placement placement(*grid, topology);
  PlanReport report;
  report.worldSize = placement.world();
  // Per mesh axis (tp for its sub-axes tp.kv x tp.rep).
  for (int16_t a = 0, e = grid->getShape().size(); a < e; ++a) {
    std::string name = meshAxisName(*grid, a);
    DimAxes axes = findAxes(*grid, name);
    if (!axes.empty() && axes.front() == a)
      report.axes.emplace_back(name, groupSize(*grid, axes),
                               placement.intraNode(axes));
  }

  func::FuncOp entry;
  llvm::SmallVector<func::FuncOp> stageFuncs;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (auto s = func->getAttrOfType<IntegerAttr>(kStageAttr)) {
      if (s.getInt() >= static_cast<int64_t>(stageFuncs.size()))
        stageFuncs.resize(s.getInt() + 1);
      stageFuncs[s.getInt()] = func;
    } else if (!entry) {
      entry = func;
    }
  }
  if (!entry)
    return module.emitError("no function to plan");
  bool pipelined = !stageFuncs.empty();
  if (!pipelined)
    stageFuncs.push_back(entry);

  // Microbatches: the calls of stage 0.
  if (pipelined) {
    report.microbatches = 0;
    entry.walk([&](func::CallOp call) {
      if (call.getCallee() == stageFuncs.front().getSymName())
        ++report.microbatches;
    });
    report.microbatches = std::max<int64_t>(1, report.microbatches);
  }

  auto costOf = [&](Operation *op) {
    return estimateOpCost(op, *grid, device,
                          placement.link(collectiveGridAxes(op)));
  };

  std::optional<shard::GridAxis> pp = findAxis(*grid, "pp");
  for (auto [s, func] : llvm::enumerate(stageFuncs)) {
    StageReport row;
    row.stage = s;
    if (pipelined && pp)
      row.ranks = placement.ranksAt(*pp, s);
    else
      for (int64_t r = 0; r < placement.world(); ++r)
        row.ranks.push_back(r);
    row.weightBytes = heldWeightBytes(func);
    row.activationBytes = peakActivationBytes(func);
    func.walk([&](Operation *op) {
      if (isa<dfg::AttentionOp>(op))
        ++row.layers;
      if (isa<func::FuncOp, func::ReturnOp>(op))
        return;
      OpCost c = costOf(op);
      if (isa<shard::ShardDialect>(op->getDialect())) {
        row.commBytes += c.commBytes;
        row.commSeconds += c.seconds;
      } else {
        row.computeSeconds += c.seconds;
      }
    });
    report.stages.push_back(std::move(row));
  }
  // Sends between stages (per microbatch) and the KV cache outputs.
  if (pipelined)
    entry.walk([&](shard::SendOp send) {
      auto s = send->getAttrOfType<IntegerAttr>(kStageAttr);
      if (!s || s.getInt() >= static_cast<int64_t>(report.stages.size()))
        return;
      OpCost c = costOf(send);
      StageReport &row = report.stages[s.getInt()];
      row.commBytes += c.commBytes / report.microbatches;
      row.commSeconds += c.seconds / report.microbatches;
    });
  for (unsigned i = 0; i < entry.getNumResults(); ++i) {
    auto name = entry.getResultAttrOfType<StringAttr>(i, "onnx.name");
    if (!name || !name.getValue().starts_with("present"))
      continue;
    auto s = entry.getResultAttrOfType<IntegerAttr>(i, kStageAttr);
    int64_t stage = s ? s.getInt() : 0;
    if (stage < static_cast<int64_t>(report.stages.size()))
      report.stages[stage].kvCacheBytes +=
          tensorBytes(entry.getResultTypes()[i]);
  }

  double slowest = 0;
  for (const StageReport &row : report.stages)
    slowest = std::max(slowest, row.seconds());
  int64_t stages = report.stages.size();
  report.bubble = double(stages - 1) / double(report.microbatches + stages - 1);
  report.stepSeconds = (report.microbatches + stages - 1) * slowest;
  return report;
}

} // namespace meshc
