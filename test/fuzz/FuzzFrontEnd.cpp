//===- FuzzFrontEnd.cpp - libFuzzer harness of meshc's front end ----------===//
//
// Part of meshc. `meshc-fuzz-frontend` (built with -DMESHC_FUZZ=ON by clang,
// `make fuzz`): each input is an ONNX model, taken through what
// `meshc compile --emit sharded` does: import (legalisation, constant
// folding by the reference evaluator), the graph pipeline, the sharding
// pipeline (plan and partition) for a mesh chosen from the input, and the
// split into per-rank roles. Any diagnostic is a fine outcome; a crash, an
// abort, a sanitizer report, an exit() from inside meshc, a timeout or
// memory past the limit is a finding.
//
// LLVMFuzzerCustomMutator parses the model and changes its meaning
// (OnnxMutator.h); inputs that are not a model get libFuzzer's byte
// mutations. MESHC_FUZZ_VERBOSE=1 prints the diagnostics and mutations, to
// see what a reproducer does.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Importer.h"
#include "compiler/pipelines/Pipelines.h"
#include "compiler/tools/init_meshc.h"
#include "passes/sharding/RankRoles.h"
#include "test/fuzz/OnnxMutator.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <cstring>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// The meshes a model is planned for; the input's hash picks one, so that a
/// reproducer replays the same.
constexpr const char *kMeshes[] = {"tp=2",      "pp=2", "dp=2,tp=2", "tp=3",
                                   "tp=4,pp=2", "dp=2", "tp=1"};

bool verbose() {
  static bool on = [] {
    const char *v = std::getenv("MESHC_FUZZ_VERBOSE");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

/// A folder of this process's own, where each input is written as
/// model.onnx (the importer reads a path; external data resolves there).
const std::string &workFolder() {
  static std::string folder = [] {
    llvm::SmallString<128> path;
    if (llvm::sys::fs::createUniqueDirectory("meshc-fuzz", path)) {
      llvm::errs() << "meshc-fuzz-frontend: cannot make a temporary folder\n";
      std::abort();
    }
    return path.str().str();
  }();
  return folder;
}

uint64_t hashOf(const uint8_t *data, size_t size) {
  uint64_t h = 1469598103934665603ull; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

void runFrontEnd(llvm::StringRef model, llvm::StringRef mesh) {
  mlir::DialectRegistry registry;
  meshc::registerAllMeshcDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &diag) {
    if (verbose())
      llvm::errs() << "diagnostic: " << diag.str() << "\n";
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      meshc::onnximport::importOnnxModel(context, model);
  if (!module)
    return;
  llvm::StringRef folder = llvm::sys::path::parent_path(model);
  mlir::PassManager graph(&context);
  meshc::buildGraphPipeline(graph, folder);
  if (mlir::failed(graph.run(*module)))
    return;
  mlir::PassManager sharding(&context);
  meshc::buildShardingPipeline(sharding, mesh, /*sequenceParallel=*/false);
  if (mlir::failed(sharding.run(*module)))
    return;
  (void)meshc::buildRankRoles(*module);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string model = workFolder() + "/model.onnx";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(model, ec);
    if (ec) {
      llvm::errs() << "meshc-fuzz-frontend: cannot write " << model << "\n";
      std::abort();
    }
    out.write(reinterpret_cast<const char *>(data), size);
  }
  const char *mesh =
      kMeshes[hashOf(data, size) % (sizeof(kMeshes) / sizeof(*kMeshes))];
  if (verbose())
    llvm::errs() << "mesh: " << mesh << "\n";
  runFrontEnd(model, mesh);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  // One in ten mutations works on the bytes, as libFuzzer's own do: raw
  // tensor data and strings change, and a model may come apart.
  onnx::ModelProto model;
  if (size == 0 || seed % 10 == 0 ||
      !model.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  meshc::fuzz::OnnxMutator mutator(seed);
  std::vector<std::string> done = mutator.mutate(model);
  std::string bytes;
  if (done.empty() || !model.SerializeToString(&bytes) ||
      bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  if (verbose())
    for (const std::string &line : done)
      llvm::errs() << "mutation: " << line << "\n";
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
