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

#include "mlir/IR/Operation.h"

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
  double bytes = 0; ///< read and written
  double commBytes = 0; ///< sent per rank (collectives, send/recv)
  double seconds = 0;
};

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
