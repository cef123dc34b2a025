//===- CostModel.h - Time and bytes of ops and collectives ------*- C++ -*-===//
//
// Part of meshc. A first-order cost model: an op takes the longer of its
// FLOPs at the device's peak and its bytes (operands read, results written)
// at its memory bandwidth; a collective takes alpha + bytes / beta over the
// link of its grid axes, with ring volumes. The defaults are the figures of
// ARCHITECTURE.md (H100 SXM, NVLink); the pipeline split balances stages with
// it, and `meshc plan` reports it.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_SHARDING_COSTMODEL_H
#define MESHC_DIALECTS_DFG_SHARDING_COSTMODEL_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::shard {
class GridOp;
} // namespace mlir::shard

namespace meshc {

struct DeviceModel {
  /// Dense matmul throughput (FLOP/s) and memory bandwidth (B/s).
  double flops = 790e12;
  double memoryBandwidth = 3.0e12;
};

struct LinkModel {
  double bandwidth = 450e9; ///< B/s per direction per GPU
  double latency = 4e-6;    ///< s per collective
};

/// The work of one op on its (local) types.
struct OpCost {
  double flops = 0;
  double bytes = 0;     ///< read and written
  double commBytes = 0; ///< sent per rank (collectives, send/recv)
  double seconds = 0;
};

/// Where the ranks sit: `nodes` nodes of `gpusPerNode` GPUs each, ranks
/// numbered row-major over the grid (the mesh's last axis varies fastest)
/// and filled node by node. A collective whose group stays on one node runs
/// over `intraNode`, others over `interNode`.
struct Topology {
  int64_t nodes = 1;
  int64_t gpusPerNode = 0;          ///< 0: every rank on the one node
  LinkModel intraNode{450e9, 4e-6}; ///< NVLink (H100)
  LinkModel interNode{50e9, 8e-6};  ///< InfiniBand NDR, per port
};

/// What one pipeline stage's ranks hold and do (every rank of a stage runs
/// the same program on equal shards, so one row describes them all).
struct StageReport {
  int64_t stage = 0;
  llvm::SmallVector<int64_t> ranks;
  int64_t layers = 0; ///< dfg.attention ops
  double weightBytes = 0;
  double activationBytes = 0; ///< peak live activations, one microbatch
  double kvCacheBytes = 0;    ///< present.* outputs the stage holds
  double computeSeconds = 0;  ///< per microbatch
  double commBytes = 0;       ///< sent per rank, per microbatch
  double commSeconds = 0;     ///< per microbatch
  double memoryBytes() const {
    return weightBytes + activationBytes + kvCacheBytes;
  }
  double seconds() const { return computeSeconds + commSeconds; }
};

struct PlanReport {
  llvm::SmallVector<StageReport> stages;
  int64_t worldSize = 1;
  int64_t microbatches = 1;
  /// Per grid axis: its name, size and whether its groups stay on a node.
  llvm::SmallVector<std::tuple<std::string, int64_t, bool>> axes;
  double bubble = 0;      ///< idle fraction of a stage, (pp-1)/(m+pp-1)
  double stepSeconds = 0; ///< (m + pp - 1) x the slowest stage's microbatch
  double peakMemoryBytes() const;
};

/// Analyses a module after the sharding pipeline (partitioned, split into
/// stages): per stage, memory, time and communication under `device` and
/// `topology`, and the predicted step time of the GPipe schedule (no
/// overlap of communication with compute is assumed).
mlir::FailureOr<PlanReport> analyzePlan(mlir::ModuleOp module,
                                        const DeviceModel &device,
                                        const Topology &topology);

/// Bytes of a tensor type (dynamic dimensions count as 1).
double tensorBytes(mlir::Type type);

/// The cost of `op` on its local types. Weights and constants cost nothing
/// (their bytes count where they are used); so does shard.all_slice of one
/// (it is the rank's own shard, loaded once). Collectives and send/recv are
/// timed over `link` with the group sizes of `grid`.
OpCost estimateOpCost(mlir::Operation *op, mlir::shard::GridOp grid,
                      const DeviceModel &device, const LinkModel &link);

} // namespace meshc

#endif // MESHC_DIALECTS_DFG_SHARDING_COSTMODEL_H
