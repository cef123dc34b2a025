//===- PlanTool.h - meshc plan: the cost of a mesh, or the best one -*- C++
//-*-===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_PLANTOOL_H
#define MESHC_COMPILER_DRIVER_PLANTOOL_H

#include "dialects/dfg/Sharding/CostModel.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace meshc {

struct PlanRequest {
  std::string model;   ///< for the header line
  std::string mesh;    ///< "dp=2,tp=4", or "auto"
  int64_t devices = 0; ///< with "auto" (required), or a check of the mesh
  bool sequenceParallel = false;
  int64_t microbatches = 0;   ///< 0: 1, or with "auto" the search picks
  int64_t batch = 0, seq = 0; ///< 0: the model's
  std::string topology;       ///< "nodes=2,gpus-per-node=8,..." or ""
  double deviceMemoryBytes = 80.0 * (1ull << 30);
  std::string dtype; ///< --dtype: "" (the model's), f32, f16 or bf16
  DeviceModel device;
};

/// Parses --topology: nodes=N, gpus-per-node=G, and optional link figures
/// nvlink-gbps, nvlink-us, network-gbps, network-us (GB/s, microseconds).
llvm::Expected<Topology> parseTopology(llvm::StringRef text);

/// Plans `graph` (the transformer-level IR, after the graph pipeline) for
/// the request's mesh, or searches the meshes of `devices` ranks, and
/// prints the per-stage table to `os`. Errors are reported through the
/// context's diagnostics or as "meshc plan: error: ..." and give 1.
int runPlan(mlir::ModuleOp graph, const PlanRequest &request,
            llvm::raw_ostream &os);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_PLANTOOL_H
