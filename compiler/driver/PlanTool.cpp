//===- PlanTool.cpp - meshc plan: the cost of a mesh, or the best one -----===//
//
// Part of meshc. `meshc plan` runs the sharding pipeline on the model for a
// mesh and prints what each pipeline stage's ranks hold and do under the
// cost model (CostModel.h). With `--mesh auto --devices N` it plans every
// dp x pp x tp factorisation of N, with and without sequence parallelism,
// and keeps the fastest plan that fits the device memory. For a given mesh it
// also prints the static arena each rank program gets on the cpu target (the
// liveness-based buffer plan `meshc compile` makes).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanTool.h"
#include "compiler/driver/ReportError.h"

#include "compiler/codegen/RankEmitter.h"
#include "compiler/pipelines/Pipelines.h"
#include "dialects/dfg/Sharding/MeshSpec.h"
#include "passes/sharding/RankRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace meshc {
namespace {

int fail(const Twine &msg) { return reportError("meshc plan", msg); }

std::string bytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return formatv(u == 0 ? "{0:F0} {1}" : "{0:F2} {1}", b, units[u]).str();
}

std::string seconds(double s) {
  if (s >= 1)
    return formatv("{0:F2} s", s).str();
  if (s >= 1e-3)
    return formatv("{0:F2} ms", s * 1e3).str();
  return formatv("{0:F2} us", s * 1e6).str();
}

/// "0-7" or "0-1,4-5".
std::string rankList(ArrayRef<int64_t> ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) +
         (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

struct Candidate {
  std::string mesh;
  bool sequenceParallel = false;
  int64_t microbatches = 1;
  std::string label() const {
    std::string s = mesh;
    if (sequenceParallel)
      s += " +sp";
    if (microbatches > 1)
      s += " m=" + std::to_string(microbatches);
    return s;
  }
};

struct Outcome {
  Candidate candidate;
  PlanReport report;
};

/// Captures the first error reported on `context` into `why` while alive.
class FirstError {
public:
  FirstError(mlir::MLIRContext *context, std::string *why)
      : handler(context, [why](mlir::Diagnostic &diag) {
          if (why->empty() &&
              diag.getSeverity() == mlir::DiagnosticSeverity::Error)
            *why = diag.str();
          return mlir::success();
        }) {}

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// The sharding pipeline for `c` run on a copy of `graph`.
FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> shardCopy(mlir::ModuleOp graph,
                                                       const Candidate &c) {
  mlir::OwningOpRef<mlir::ModuleOp> module = graph.clone();
  mlir::PassManager pm(graph.getContext());
  buildShardingPipeline(pm, c.mesh, c.sequenceParallel, c.microbatches);
  if (failed(runPipeline(pm, *module, "meshc plan")))
    return failure();
  return module;
}

/// Runs the sharding pipeline on a copy of `graph` and analyses it. With
/// `quiet`, a failure's first message is returned instead of printed.
FailureOr<PlanReport> planOne(mlir::ModuleOp graph, const Candidate &c,
                              const PlanRequest &request,
                              const Topology &topology, bool quiet,
                              std::string *why) {
  std::optional<FirstError> capture;
  if (quiet)
    capture.emplace(graph.getContext(), why);
  auto module = shardCopy(graph, c);
  if (failed(module))
    return failure();
  return analyzePlan(**module, request.device, topology);
}

/// The arena bytes of each rank program on the cpu target, as `meshc
/// compile` plans them, with the ranks that run it; on failure, the first
/// error is returned in `why` (e.g. an op the cpu target cannot run).
FailureOr<SmallVector<std::pair<SmallVector<int64_t>, uint64_t>>>
cpuArenas(mlir::ModuleOp graph, const Candidate &c, std::string *why) {
  FirstError capture(graph.getContext(), why);
  auto module = shardCopy(graph, c);
  if (failed(module))
    return failure();
  auto roles = buildRankRoles(**module);
  if (failed(roles))
    return failure();
  std::vector<codegen::GroupAxes> groups;
  for (RankRole &role : *roles)
    for (const codegen::GroupAxes &g : codegen::collectGroups(*role.program))
      if (!llvm::is_contained(groups, g))
        groups.push_back(g);
  llvm::sort(groups);
  SmallVector<std::pair<SmallVector<int64_t>, uint64_t>> arenas;
  for (RankRole &role : *roles) {
    codegen::WeightShards weights;
    auto program =
        codegen::emitRankProgram(*role.program, "role", groups, "", weights);
    if (failed(program))
      return failure();
    arenas.emplace_back(role.ranks, program->arenaBytes);
  }
  return arenas;
}

void printReport(raw_ostream &os, const PlanRequest &request,
                 const Candidate &c, const PlanReport &r,
                 const Topology &topology) {
  int64_t perNode = topology.gpusPerNode ? topology.gpusPerNode : r.worldSize;
  os << "meshc plan: " << request.model << " on " << c.mesh
     << (c.sequenceParallel ? " with sequence parallelism" : "") << " ("
     << r.worldSize << " ranks on " << (r.worldSize + perNode - 1) / perNode
     << " node(s) of " << perNode << " GPUs";
  if (r.stages.size() > 1)
    os << "; " << r.microbatches << " microbatch"
       << (r.microbatches > 1 ? "es" : "");
  os << ")\n";
  os << "links:";
  for (auto [name, size, intra] : r.axes)
    os << " " << name << "=" << size << " over "
       << (intra ? "NVLink" : "the network") << ";";
  // %g: a calibrated link (bench/comm_wire.py) may be well under 1 GB/s.
  os << format(" NVLink %g GB/s, %.1f us; network %g GB/s, %.1f us\n",
               topology.intraNode.bandwidth / 1e9,
               topology.intraNode.latency * 1e6,
               topology.interNode.bandwidth / 1e9,
               topology.interNode.latency * 1e6);
  os << formatv("device: {0:F0} TFLOP/s, {1:F1} TB/s memory bandwidth\n\n",
                request.device.flops / 1e12,
                request.device.memoryBandwidth / 1e12);
  os << formatv("{0,-6}{1,-14}{2,7}{3,12}{4,13}{5,11}{6,12}{7,12}{8,12}{9,12}"
                "\n",
                "stage", "ranks", "layers", "weights", "activations",
                "KV cache", "memory", "compute", "comm", "comm time");
  for (const StageReport &s : r.stages)
    os << formatv("{0,-6}{1,-14}{2,7}{3,12}{4,13}{5,11}{6,12}{7,12}{8,12}"
                  "{9,12}\n",
                  s.stage, rankList(s.ranks), s.layers, bytes(s.weightBytes),
                  bytes(s.activationBytes), bytes(s.kvCacheBytes),
                  bytes(s.memoryBytes()), seconds(s.computeSeconds),
                  bytes(s.commBytes), seconds(s.commSeconds));
  os << "(per rank; compute and communication per microbatch)\n";
  if (r.stages.size() > 1)
    os << formatv("pipeline: {0} stages, {1} microbatch{3}, bubble {2:P1}\n",
                  r.stages.size(), r.microbatches, r.bubble,
                  r.microbatches > 1 ? "es" : "");
  os << "predicted step time: " << seconds(r.stepSeconds)
     << "; peak memory per rank: " << bytes(r.peakMemoryBytes()) << "\n";
}

/// The model's batch: dimension 0 of its first input (1 if none).
int64_t modelBatch(mlir::ModuleOp graph) {
  for (auto func : graph.getOps<mlir::func::FuncOp>())
    if (!func.isExternal() && func.getNumArguments() > 0)
      if (auto t = dyn_cast<mlir::RankedTensorType>(func.getArgumentTypes()[0]))
        if (t.getRank() > 0 && !t.isDynamicDim(0))
          return t.getDimSize(0);
  return 1;
}

/// The static [batch, sequence] of the model's first input must be what the
/// user asks for: meshc plans at the model's shapes.
LogicalResult checkShapes(mlir::ModuleOp graph, const PlanRequest &request) {
  for (auto func : graph.getOps<mlir::func::FuncOp>()) {
    if (func.isExternal() || func.getNumArguments() == 0)
      continue;
    auto t = dyn_cast<mlir::RankedTensorType>(func.getArgumentTypes()[0]);
    if (!t || t.getRank() < 2)
      return success();
    auto differs = [&](int64_t want, int64_t dim) {
      return want && !t.isDynamicDim(dim) && t.getDimSize(dim) != want;
    };
    if (differs(request.batch, 0) || differs(request.seq, 1)) {
      fail(formatv("the model's first input is {0}x{1} (batch x sequence) "
                   "and its shapes are static: meshc plans at the model's "
                   "shapes; export it with --batch {2} --seq {3} or leave "
                   "--batch/--seq out",
                   t.getDimSize(0), t.getDimSize(1),
                   request.batch ? request.batch : t.getDimSize(0),
                   request.seq ? request.seq : t.getDimSize(1)));
      return failure();
    }
    return success();
  }
  return success();
}

SmallVector<Candidate> searchSpace(mlir::ModuleOp graph,
                                   const PlanRequest &request) {
  SmallVector<Candidate> out;
  int64_t n = request.devices, batch = modelBatch(graph);
  for (int64_t dp = 1; dp <= n; ++dp)
    for (int64_t pp = 1; dp * pp <= n; ++pp) {
      if (n % (dp * pp) != 0)
        continue;
      int64_t tp = n / (dp * pp);
      SmallVector<std::string> axes;
      if (dp > 1)
        axes.push_back("dp=" + std::to_string(dp));
      if (pp > 1)
        axes.push_back("pp=" + std::to_string(pp));
      if (tp > 1 || axes.empty())
        axes.push_back("tp=" + std::to_string(tp));
      // Microbatches keep the stages busy: as many as the batch allows,
      // up to twice the stages.
      int64_t m = 1;
      if (pp > 1 && batch % dp == 0)
        for (int64_t k = std::min(2 * pp, batch / dp); k > 1; --k)
          if ((batch / dp) % k == 0) {
            m = k;
            break;
          }
      if (request.microbatches > 0 && pp > 1)
        m = request.microbatches;
      for (bool sp : {false, true}) {
        if (sp && tp == 1)
          continue;
        out.push_back({join(axes, ","), sp, m});
      }
    }
  return out;
}

} // namespace

Expected<Topology> parseTopology(StringRef text) {
  Topology t;
  SmallVector<StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    key = key.trim();
    double x = 0;
    if (value.trim().getAsDouble(x) || x <= 0)
      return createStringError(inconvertibleErrorCode(),
                               "--topology: '%s' needs a positive number, "
                               "as in nodes=2,gpus-per-node=8",
                               item.str().c_str());
    if (key == "nodes" || key == "gpus-per-node") {
      if (x != static_cast<int64_t>(x))
        return createStringError(inconvertibleErrorCode(),
                                 "--topology: %s must be a whole number",
                                 key.str().c_str());
      (key == "nodes" ? t.nodes : t.gpusPerNode) = static_cast<int64_t>(x);
    } else if (key == "nvlink-gbps") {
      t.intraNode.bandwidth = x * 1e9;
    } else if (key == "nvlink-us") {
      t.intraNode.latency = x * 1e-6;
    } else if (key == "network-gbps") {
      t.interNode.bandwidth = x * 1e9;
    } else if (key == "network-us") {
      t.interNode.latency = x * 1e-6;
    } else {
      return createStringError(
          inconvertibleErrorCode(),
          "--topology: unknown key '%s' (known: nodes, gpus-per-node, "
          "nvlink-gbps, nvlink-us, network-gbps, network-us)",
          key.str().c_str());
    }
  }
  return t;
}

int runPlan(mlir::ModuleOp graph, const PlanRequest &request, raw_ostream &os) {
  Expected<Topology> parsed = parseTopology(request.topology);
  if (!parsed)
    return fail(toString(parsed.takeError()));
  Topology topology = *parsed;
  if (failed(checkShapes(graph, request)))
    return 1;

  bool automatic = request.mesh == "auto";
  int64_t world = request.devices;
  if (automatic) {
    if (request.devices <= 0)
      return fail("--mesh auto needs --devices N (the number of GPUs)");
  } else {
    Expected<MeshSpec> spec = MeshSpec::parse(request.mesh);
    if (!spec)
      return fail(toString(spec.takeError()));
    if (request.devices > 0 && spec->worldSize() != request.devices)
      return fail(formatv("the mesh {0} has {1} ranks, but --devices is {2}",
                          spec->str(), spec->worldSize(), request.devices));
    world = spec->worldSize();
  }
  if (!request.topology.empty()) {
    if (topology.gpusPerNode == 0) {
      if (world % topology.nodes != 0)
        return fail(formatv("--topology: {0} ranks do not spread evenly over "
                            "{1} nodes",
                            world, topology.nodes));
      topology.gpusPerNode = world / topology.nodes;
    }
    if (topology.nodes * topology.gpusPerNode != world)
      return fail(formatv("--topology gives {0} nodes x {1} GPUs = {2}, but "
                          "the mesh has {3} ranks",
                          topology.nodes, topology.gpusPerNode,
                          topology.nodes * topology.gpusPerNode, world));
  }

  if (!automatic) {
    Candidate c{request.mesh, request.sequenceParallel,
                std::max<int64_t>(1, request.microbatches)};
    std::string unused;
    FailureOr<PlanReport> report =
        planOne(graph, c, request, topology, /*quiet=*/false, &unused);
    if (failed(report))
      return 1;
    printReport(os, request, c, *report, topology);
    std::string why;
    auto arenas = cpuArenas(graph, c, &why);
    if (succeeded(arenas)) {
      os << "cpu target arena (activations, static plan by liveness):";
      for (auto [ranks, arena] : *arenas)
        os << " ranks " << rankList(ranks) << ": " << bytes(arena) << " ("
           << arena << " bytes);";
      os << "\n";
    } else {
      os << "cpu target arena: not planned (" << why << ")\n";
    }
    if (report->peakMemoryBytes() > request.deviceMemoryBytes)
      WithColor::warning(errs(), "meshc plan")
          << "rank memory " << bytes(report->peakMemoryBytes())
          << " exceeds the device memory " << bytes(request.deviceMemoryBytes)
          << " (--device-memory)\n";
    return 0;
  }

  std::vector<Outcome> fits;
  SmallVector<std::string> refused, tooBig;
  for (const Candidate &c : searchSpace(graph, request)) {
    std::string why;
    FailureOr<PlanReport> report =
        planOne(graph, c, request, topology, /*quiet=*/true, &why);
    if (failed(report)) {
      refused.push_back(c.label() + ": " + why);
      continue;
    }
    if (report->peakMemoryBytes() > request.deviceMemoryBytes) {
      tooBig.push_back(c.label());
      continue;
    }
    fits.push_back({c, std::move(*report)});
  }
  size_t tried = fits.size() + refused.size() + tooBig.size();
  if (fits.empty()) {
    std::string msg = formatv("no mesh of {0} devices fits: {1} of {2} "
                              "exceed {3} per rank (--device-memory), {4} "
                              "are refused",
                              request.devices, tooBig.size(), tried,
                              bytes(request.deviceMemoryBytes), refused.size())
                          .str();
    if (!refused.empty())
      msg += " (e.g. " + refused.front() + ")";
    return fail(msg);
  }
  llvm::stable_sort(fits, [](const Outcome &a, const Outcome &b) {
    return a.report.stepSeconds < b.report.stepSeconds;
  });
  const Outcome &best = fits.front();
  printReport(os, request, best.candidate, best.report, topology);
  os << "\nchose " << best.candidate.label() << ": the fastest of "
     << fits.size() << " plans that fit " << bytes(request.deviceMemoryBytes)
     << " per rank (" << tried << " tried; " << tooBig.size() << " too large; "
     << refused.size() << " refused";
  if (!refused.empty())
    os << ", e.g. " << refused.front();
  os << ").\n";
  if (fits.size() > 1) {
    const Outcome &next = fits[1];
    os << "runner-up " << next.candidate.label() << ": "
       << seconds(next.report.stepSeconds) << " per step ("
       << formatv("{0:F2}", next.report.stepSeconds /
                                std::max(best.report.stepSeconds, 1e-12))
       << "x), " << bytes(next.report.peakMemoryBytes()) << " per rank.\n";
  } else {
    os << "no other plan fits.\n";
  }
  return 0;
}

} // namespace meshc
