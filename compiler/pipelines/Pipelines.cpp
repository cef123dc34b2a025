//===- Pipelines.cpp - meshc's named pass pipelines -----------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/pipelines/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/WithColor.h"

#include <cstdlib>
#include <memory>
#include <mutex>

namespace meshc {

namespace {
struct GraphPipelineOptions : mlir::PassPipelineOptions<GraphPipelineOptions> {
  Option<std::string> weightsDir{
      *this, "weights-dir",
      llvm::cl::desc("Folder of the model's weight files (for patterns that "
                     "read weight values)"),
      llvm::cl::init("")};
  Option<bool> raise{*this, "raise",
                     llvm::cl::desc("Raise exporter idioms to "
                                    "transformer-level ops (default true)"),
                     llvm::cl::init(true)};
};
struct ShardingPipelineOptions
    : mlir::PassPipelineOptions<ShardingPipelineOptions> {
  Option<std::string> mesh{*this, "mesh",
                           llvm::cl::desc("Device mesh, e.g. dp=2,tp=2"),
                           llvm::cl::init("")};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Split the residual stream along the sequence over tp"),
      llvm::cl::init(false)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Microbatches per dp block through the pipeline stages"),
      llvm::cl::init(1)};
};
} // namespace

void buildShardingPipeline(mlir::OpPassManager &pm, llvm::StringRef mesh,
                           bool sequenceParallel, int64_t microbatches) {
  pm.addPass(createShardPlanPass(
      ShardPlanPassOptions{mesh.str(), sequenceParallel, microbatches}));
  pm.addPass(createShardPartitionPass());
  pm.addPass(createPipelineSplitPass());
  pm.addPass(createShardVerifyPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void buildGraphPipeline(mlir::OpPassManager &pm, llvm::StringRef weightsDir,
                        bool raise) {
  pm.addPass(createInferShapesPass());
  pm.addPass(
      createFoldConstantsPass(FoldConstantsPassOptions{weightsDir.str()}));
  pm.addPass(mlir::createCanonicalizerPass());
  // Patterns compare values: an idiom spelled with duplicated ops (two
  // identical `x - mean(x)`) must be one value first.
  pm.addPass(mlir::createCSEPass());
  if (raise)
    pm.addPass(createRaisePass(RaisePassOptions{weightsDir.str()}));
  // Raising slices literal tables (half of a cos table): fold them again.
  pm.addPass(
      createFoldConstantsPass(FoldConstantsPassOptions{weightsDir.str()}));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createSymbolDCEPass());
}

void buildDTypeConversion(mlir::OpPassManager &pm, llvm::StringRef dtype) {
  if (dtype.empty())
    return;
  pm.addPass(createConvertDTypePass(ConvertDTypePassOptions{dtype.str()}));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

void buildLoweringPipeline(mlir::OpPassManager &pm, bool overlap) {
  pm.addPass(createFuseElementwisePass());
  if (overlap)
    pm.addPass(createScheduleCollectivesPass());
}

void registerMeshcPipelines() {
  mlir::PassPipelineRegistration<GraphPipelineOptions>(
      "meshc-graph-pipeline",
      "Imported dfg IR to transformer-level IR: shape inference, "
      "canonicalize, raise exporter idioms, CSE",
      [](mlir::OpPassManager &pm, const GraphPipelineOptions &options) {
        buildGraphPipeline(pm, options.weightsDir, options.raise);
      });
  mlir::PassPipelineRegistration<ShardingPipelineOptions>(
      "meshc-shard-pipeline",
      "Transformer-level IR to the verified SPMD program for a mesh: plan, "
      "partition, pipeline stages, verify, canonicalize, CSE",
      [](mlir::OpPassManager &pm, const ShardingPipelineOptions &options) {
        buildShardingPipeline(pm, options.mesh, options.sequenceParallel,
                              options.microbatches);
      });
}

namespace {

/// What runPipeline's fatal error handler names: the latest pass to start
/// (function passes may run on several threads) and the last error.
struct PassInFlight {
  std::string tool, where = "(none)", lastError;
  std::mutex mutex;

  static void onFatal(void *self, const char *reason, bool) {
    auto *state = static_cast<PassInFlight *>(self);
    std::string message = state->lastError;
    if (message.empty())
      message = llvm::StringRef(reason).split('\n').first.rtrim(": ").str();
    llvm::WithColor::error(llvm::errs(), state->tool)
        << "internal error in pass " << state->where << ": " << message
        << " (a meshc bug: please report it with the model)\n";
    llvm::errs().flush();
    // Other threads may still run passes: no static destructors under them.
    std::_Exit(1);
  }
};

class TrackPasses : public mlir::PassInstrumentation {
public:
  explicit TrackPasses(std::shared_ptr<PassInFlight> state)
      : state_(std::move(state)) {}
  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    llvm::StringRef name = pass->getArgument(); // the flag, where it has one
    std::string where = "'" + (name.empty() ? pass->getName() : name).str() +
                        "' on '" + op->getName().getStringRef().str() + "'";
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->where = std::move(where);
  }

private:
  std::shared_ptr<PassInFlight> state_;
};

} // namespace

mlir::LogicalResult runPipeline(mlir::PassManager &pm, mlir::Operation *op,
                                llvm::StringRef tool) {
  auto state = std::make_shared<PassInFlight>();
  state->tool = tool.str();
  pm.addInstrumentation(std::make_unique<TrackPasses>(state));
  mlir::ScopedDiagnosticHandler record(
      op->getContext(), [&](mlir::Diagnostic &diag) {
        if (diag.getSeverity() == mlir::DiagnosticSeverity::Error) {
          std::lock_guard<std::mutex> lock(state->mutex);
          state->lastError = diag.str();
        }
        return mlir::failure(); // reported as usual too
      });
  llvm::install_fatal_error_handler(&PassInFlight::onFatal, state.get());
  mlir::LogicalResult result = pm.run(op);
  llvm::remove_fatal_error_handler();
  return result;
}

} // namespace meshc
