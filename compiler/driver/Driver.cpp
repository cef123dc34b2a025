//===- Driver.cpp - The meshc command-line driver -------------------------===//
//
// Part of meshc. `meshc import | plan | compile | run`: argument parsing,
// input validation and dispatch. Each command checks everything the user gave
// it (files, mesh, flags) before any work, so that a mistake is reported as
// one line naming the culprit.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Driver.h"

#include "compiler/codegen/CompileCpu.h"
#include "compiler/driver/PlanTool.h"
#include "compiler/driver/ReportError.h"
#include "compiler/driver/RunTool.h"
#include "compiler/import/Importer.h"
#include "compiler/import/Legalization.h"
#include "compiler/pipelines/Pipelines.h"
#include "compiler/tools/init_meshc.h"
#include "dialects/dfg/Sharding/MeshSpec.h"
#include "passes/sharding/RankRoles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <tuple>

using namespace llvm;

namespace meshc {
namespace {

constexpr StringLiteral kCommandArray[] = {"import", "plan", "compile", "run"};
constexpr ArrayRef<StringLiteral> kCommands(kCommandArray);

/// Prints "meshc <command>: error: <msg>" and returns the failure status.
int fail(StringRef command, const Twine &msg) {
  return reportError(command.empty() ? "meshc" : ("meshc " + command).str(),
                     msg);
}

/// `path` names a readable regular file (what: "model", "input", ...).
Error checkReadableFile(StringRef path, StringRef what) {
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(path, status))
    return createStringError(ec, "cannot open %s '%s': %s", what.data(),
                             path.str().c_str(), ec.message().c_str());
  if (sys::fs::is_directory(status))
    return createStringError(inconvertibleErrorCode(),
                             "%s '%s' is a directory, expected a file",
                             what.data(), path.str().c_str());
  int fd = -1;
  if (std::error_code ec = sys::fs::openFileForRead(path, fd))
    return createStringError(ec, "cannot read %s '%s': %s", what.data(),
                             path.str().c_str(), ec.message().c_str());
  return errorCodeToError(sys::Process::SafelyCloseFileDescriptor(fd));
}

/// Parses the entries of `flag` (--dim or --max-dim): "NAME=SIZE", each a
/// symbolic input dimension and a positive size; a name given twice is an
/// error.
Expected<onnximport::DimSizes> parseDimSizes(ArrayRef<std::string> entries,
                                             StringRef flag) {
  onnximport::DimSizes sizes;
  for (const std::string &entry : entries) {
    auto [name, text] = StringRef(entry).split('=');
    int64_t size = 0;
    if (name.empty() || text.empty() || text.getAsInteger(10, size))
      return createStringError(inconvertibleErrorCode(),
                               "%s '%s' is not NAME=SIZE", flag.str().c_str(),
                               entry.c_str());
    if (size < 1)
      return createStringError(inconvertibleErrorCode(),
                               "%s %s: the size must be at least 1",
                               flag.str().c_str(), entry.c_str());
    if (!sizes.try_emplace(name, size).second)
      return createStringError(inconvertibleErrorCode(), "%s names '%s' twice",
                               flag.str().c_str(), name.str().c_str());
  }
  return sizes;
}

/// "model.onnx: node 'MatMul_3' (MatMul, #12)" for the locations the
/// importer gives; file:line:col for IR files.
std::string describeLocation(mlir::Location loc) {
  if (auto name = dyn_cast<mlir::NameLoc>(loc)) {
    std::string where = describeLocation(name.getChildLoc());
    return where.empty() ? name.getName().str()
                         : where + ": " + name.getName().str();
  }
  if (auto file = dyn_cast<mlir::FileLineColLoc>(loc)) {
    std::string where = file.getFilename().str();
    if (file.getLine() != 0)
      where += ":" + std::to_string(file.getLine()) + ":" +
               std::to_string(file.getColumn());
    return where;
  }
  if (auto fused = dyn_cast<mlir::FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return describeLocation(fused.getLocations().front());
  return "";
}

/// Prints each MLIR diagnostic as one line: "meshc <command>: error: <where>:
/// <message>"; notes follow on their own lines.
class DiagnosticPrinter {
public:
  DiagnosticPrinter(mlir::MLIRContext &context, StringRef command)
      : handler(&context, [this, command](mlir::Diagnostic &diag) {
          print(command, diag);
          return mlir::success();
        }) {}
  bool sawError() const { return errors > 0; }

private:
  void print(StringRef command, mlir::Diagnostic &diag) {
    std::string prefix = ("meshc " + command).str();
    raw_ostream &os = diag.getSeverity() == mlir::DiagnosticSeverity::Error
                          ? WithColor::error(errs(), prefix)
                      : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                          ? WithColor::warning(errs(), prefix)
                          : WithColor::note(errs(), prefix);
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    std::string where = describeLocation(diag.getLocation());
    os << (where.empty() ? "" : where + ": ") << diag.str() << "\n";
    for (mlir::Diagnostic &note : diag.getNotes())
      print(command, note);
  }

  mlir::ScopedDiagnosticHandler handler;
  int errors = 0;
};

/// `meshc plan` and `meshc compile` (but --emit sharded) work on static
/// shapes: the symbolic input dimensions that --dim did not size are
/// reported, with their input.
int checkStaticInputs(mlir::ModuleOp module, StringRef command,
                      const onnximport::DimSizes *bounds) {
  SmallVector<std::string> dims, inputs;
  llvm::StringSet<> symbolic;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    for (auto arg : func.getArguments()) {
      auto type = dyn_cast<mlir::RankedTensorType>(arg.getType());
      if (!type || type.hasStaticShape())
        continue;
      auto names = func.getArgAttrOfType<mlir::ArrayAttr>(arg.getArgNumber(),
                                                          "dfg.dim_names");
      auto onnxName = func.getArgAttrOfType<mlir::StringAttr>(
          arg.getArgNumber(), "onnx.name");
      inputs.push_back("'" +
                       (onnxName ? onnxName.getValue().str()
                                 : "#" + std::to_string(arg.getArgNumber())) +
                       "'");
      for (int64_t i = 0; i < type.getRank(); ++i) {
        if (!type.isDynamicDim(i))
          continue;
        std::string dim =
            names && i < static_cast<int64_t>(names.size())
                ? cast<mlir::StringAttr>(names[i]).getValue().str()
                : inputs.back() + " #" + std::to_string(i);
        symbolic.insert(dim);
        if (!is_contained(dims, dim) && !(bounds && bounds->count(dim)))
          dims.push_back(dim);
      }
    }
  if (bounds)
    for (const auto &entry : *bounds)
      if (!symbolic.contains(entry.getKey()))
        return fail(command, "--max-dim " + entry.getKey() +
                                 ": the model has no symbolic input "
                                 "dimension of that name (one --dim fixed, "
                                 "or misspelt?)");
  if (dims.empty())
    return 0;
  if (inputs.size() > 3) {
    size_t more = inputs.size() - 2;
    inputs.resize(2);
    inputs.push_back("and " + std::to_string(more) + " more");
  }
  return fail(
      command,
      "'meshc " + command + "' needs static shapes, but the model's inputs (" +
          join(inputs, ", ") + ") have symbolic dimensions without a size: " +
          join(dims, ", ") + "; give each one with --dim NAME=SIZE" +
          (command == "compile"
               ? " (a fixed size) or --max-dim NAME=N (executables for any "
                 "size up to N; --emit sharded keeps them symbolic)"
               : ""));
}

/// --max-batch / --max-seq / --max-cache: bounds for the model's batch,
/// sequence and KV-cache dimensions, whatever their dim_param names (0: no
/// bound). A default bound applies only where the model has the dimension
/// and neither --dim nor --max-dim sizes it; a given one must find it.
struct AxisBounds {
  static constexpr int64_t kDefaultBatch = 8, kDefaultSeq = 512,
                           kDefaultCache = 512;
  int64_t batch = kDefaultBatch, seq = kDefaultSeq, cache = kDefaultCache;
  bool batchGiven = false, seqGiven = false, cacheGiven = false;
};

/// Adds `axes` to `bounds` under the names the model gives those
/// dimensions: the batch is dimension 0 of the first input that has a
/// symbolic one; the sequence is dimension 1 of the first integer input
/// (the token ids); the KV cache is dimension 2 of the first 4-D input whose
/// dimension 2 is symbolic and not the sequence (a past key or value).
int resolveAxisBounds(mlir::ModuleOp module, const AxisBounds &axes,
                      onnximport::DimSizes &bounds, StringRef command) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  std::string batch, seq, cache;
  auto nameOf = [&](unsigned arg, int64_t dim) -> std::string {
    auto type =
        dyn_cast<mlir::RankedTensorType>(main.getArgument(arg).getType());
    auto names = main.getArgAttrOfType<mlir::ArrayAttr>(arg, "dfg.dim_names");
    if (!type || !names || dim >= type.getRank() ||
        dim >= static_cast<int64_t>(names.size()) || !type.isDynamicDim(dim))
      return "";
    return cast<mlir::StringAttr>(names[dim]).getValue().str();
  };
  for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
    auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (batch.empty())
      batch = nameOf(i, 0);
    if (seq.empty() && isa<mlir::IntegerType>(type.getElementType()))
      seq = nameOf(i, 1);
  }
  for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
    std::string past = nameOf(i, 2);
    auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (cache.empty() && type.getRank() == 4 && past != seq)
      cache = past;
  }
  for (auto [flag, size, given, name, what] :
       {std::tuple<StringRef, int64_t, bool, std::string, StringRef>{
            "--max-batch", axes.batch, axes.batchGiven, batch,
            "batch (dimension 0 of the inputs)"},
        {"--max-seq", axes.seq, axes.seqGiven, seq,
         "sequence (dimension 1 of the integer input)"},
        {"--max-cache", axes.cache, axes.cacheGiven, cache,
         "KV-cache (dimension 2 of a 4-D past input)"}}) {
    if (size <= 0)
      continue;
    if (name.empty()) {
      if (!given)
        continue; // the model's dimension is static (or --dim fixed it)
      return fail(command, flag + ": the model has no symbolic " + what +
                               " dimension; name one with --max-dim");
    }
    if (!bounds.try_emplace(name, size).second && given)
      return fail(command, flag + " and --max-dim both bound '" + name + "'");
  }
  return 0;
}

/// Imports `model`, runs the pipelines `build` adds (given the model's
/// folder, where its weights are) and hands the module to `use`.
int withFrontEnd(
    StringRef command, StringRef model, const onnximport::DimSizes &dims,
    bool symbolicOk, onnximport::DimSizes *bounds, const AxisBounds *axes,
    llvm::function_ref<void(mlir::OpPassManager &, StringRef)> build,
    llvm::function_ref<int(mlir::ModuleOp)> use) {
  mlir::DialectRegistry registry;
  registerAllMeshcDialects(registry);
  mlir::MLIRContext context(registry);
  // One line per problem: no dump of the operation after each diagnostic.
  context.printOpOnDiagnostic(false);
  DiagnosticPrinter diagnostics(context, command);

  mlir::OwningOpRef<mlir::ModuleOp> module =
      onnximport::importOnnxModel(context, model, dims);
  if (!module)
    return 1;
  if (bounds && axes)
    if (int status = resolveAxisBounds(*module, *axes, *bounds, command))
      return status;
  if (!symbolicOk)
    if (int status = checkStaticInputs(*module, command, bounds))
      return status;
  mlir::PassManager pm(&context);
  SmallString<256> folder = sys::path::parent_path(model);
  build(pm, folder.empty() ? StringRef(".") : folder.str());
  if (!pm.getPasses().empty() && failed(pm.run(*module)))
    return 1;
  int status = use(*module);
  return status ? status : diagnostics.sawError() ? 1 : 0;
}

/// Imports `model`, runs the pipelines `build` adds and writes the IR to
/// `output`.
int runFrontEnd(
    StringRef command, StringRef model, const onnximport::DimSizes &dims,
    StringRef output,
    llvm::function_ref<void(mlir::OpPassManager &, StringRef)> build) {
  // Import and the SPMD program keep symbolic dimensions.
  return withFrontEnd(command, model, dims, /*symbolicOk=*/true, nullptr,
                      nullptr, build, [&](mlir::ModuleOp module) {
                        std::string error;
                        auto out = mlir::openOutputFile(output, &error);
                        if (!out)
                          return fail(command, error);
                        module.print(out->os());
                        out->keep();
                        return 0;
                      });
}

/// meshc plan MODEL --mesh M|auto ...: the graph pipeline once, then the
/// plan tool (PlanTool.h).
int runPlanCommand(PlanRequest request, const onnximport::DimSizes &dims) {
  return withFrontEnd(
      "plan", request.model, dims, /*symbolicOk=*/false, nullptr, nullptr,
      [&](mlir::OpPassManager &pm, StringRef folder) {
        buildGraphPipeline(pm, folder);
        buildDTypeConversion(pm, request.dtype);
      },
      [&](mlir::ModuleOp module) { return runPlan(module, request, outs()); });
}

/// meshc import MODEL [-o FILE] [--optimize]
int runImport(StringRef model, const onnximport::DimSizes &dims,
              StringRef output, bool optimize) {
  return runFrontEnd("import", model, dims, output,
                     [&](mlir::OpPassManager &pm, StringRef folder) {
                       if (optimize)
                         buildGraphPipeline(pm, folder);
                     });
}

/// meshc compile MODEL --mesh M --emit sharded [-o FILE]: import, the graph
/// pipeline, then the sharding pipeline; writes the SPMD program.
int runCompileSharded(StringRef model, const onnximport::DimSizes &dims,
                      StringRef mesh, bool sequenceParallel,
                      int64_t microbatches, StringRef dtype, StringRef output) {
  return runFrontEnd("compile", model, dims, output,
                     [&](mlir::OpPassManager &pm, StringRef folder) {
                       buildGraphPipeline(pm, folder);
                       buildDTypeConversion(pm, dtype);
                       buildShardingPipeline(pm, mesh, sequenceParallel,
                                             microbatches);
                     });
}

/// Imports `model`, runs the graph and sharding pipelines and hands the
/// rank programs (one module per distinct program) to `use`, inside one
/// module that holds them all.
int withRankPrograms(
    StringRef model, const onnximport::DimSizes &dims,
    onnximport::DimSizes *bounds, const AxisBounds *axes, StringRef mesh,
    bool sequenceParallel, int64_t microbatches, StringRef dtype,
    llvm::function_ref<int(mlir::ModuleOp, ArrayRef<codegen::RoleProgram>)>
        use) {
  return withFrontEnd(
      "compile", model, dims, /*symbolicOk=*/false, bounds, axes,
      [&](mlir::OpPassManager &pm, StringRef folder) {
        buildGraphPipeline(pm, folder);
        buildDTypeConversion(pm, dtype);
        buildShardingPipeline(pm, mesh, sequenceParallel, microbatches);
      },
      [&](mlir::ModuleOp sharded) {
        auto roles = buildRankRoles(sharded);
        if (failed(roles))
          return 1;
        mlir::OpBuilder b(sharded.getContext());
        mlir::OwningOpRef<mlir::ModuleOp> all =
            mlir::ModuleOp::create(sharded.getLoc());
        (*all)->setAttrs(sharded->getAttrDictionary());
        (*all)->setAttr("meshc.mesh", b.getStringAttr(mesh));
        b.setInsertionPointToEnd(all->getBody());
        std::vector<codegen::RoleProgram> programs;
        for (auto [k, role] : llvm::enumerate(*roles)) {
          mlir::ModuleOp program = role.program.release();
          program.setSymName(("role" + Twine(k)).str());
          program->setAttr("meshc.ranks", b.getDenseI64ArrayAttr(role.ranks));
          program->removeAttr("dfg.source");
          b.insert(program);
          programs.push_back({program, std::vector<int64_t>(role.ranks.begin(),
                                                            role.ranks.end())});
        }
        return use(*all, programs);
      });
}

/// meshc compile MODEL --mesh M --emit ranks [-o FILE]: as --emit sharded,
/// then one module per distinct rank program (`@role<k>`, with the ranks
/// that run it as `meshc.ranks`) inside one module.
int runCompileRanks(StringRef model, const onnximport::DimSizes &dims,
                    StringRef mesh, bool sequenceParallel, int64_t microbatches,
                    StringRef dtype, StringRef output) {
  return withRankPrograms(
      model, dims, nullptr, nullptr, mesh, sequenceParallel, microbatches,
      dtype, [&](mlir::ModuleOp all, ArrayRef<codegen::RoleProgram>) {
        std::string error;
        auto out = mlir::openOutputFile(output, &error);
        if (!out)
          return fail("compile", error);
        all.print(out->os());
        out->keep();
        return 0;
      });
}

/// meshc compile MODEL --mesh M [--target cpu] [-o DIR]: the rank programs,
/// then per-rank executables, weight shards and the manifest (CompileCpu.h).
int runCompileCpu(StringRef model, const onnximport::DimSizes &dims,
                  StringRef mesh, bool sequenceParallel, int64_t microbatches,
                  codegen::CpuCompileOptions options, AxisBounds axes) {
  SmallString<256> folder = sys::path::parent_path(model);
  options.weightsDir = folder.empty() ? "." : folder.str().str();
  options.model = sys::path::filename(model).str();
  options.mesh = mesh.str();
  options.version = MESHC_VERSION;
  return withRankPrograms(
      model, dims, &options.bounds, &axes, mesh, sequenceParallel, microbatches,
      options.dtype,
      [&](mlir::ModuleOp all, ArrayRef<codegen::RoleProgram> roles) {
        mlir::PassManager pm(all.getContext());
        buildLoweringPipeline(pm, !options.noOverlap);
        if (failed(pm.run(all)) ||
            failed(codegen::compileCpu(roles, all, options)))
          return 1;
        outs() << "meshc compile: wrote " << options.outputDir << "/ ("
               << roles.size() << " rank program(s) for mesh " << mesh
               << "); run it with 'meshc run " << options.outputDir
               << " --input NAME=FILE.npy ...'\n";
        return 0;
      });
}

void printVersion(raw_ostream &os) {
  os << "meshc " MESHC_VERSION " (LLVM/MLIR " LLVM_VERSION_STRING ")\n";
}

} // namespace

int runDriver(int argc, char **argv) {
  // An unknown first word would otherwise surface as a confusing
  // "too many positional arguments".
  if (argc < 2)
    return fail("", "no command given; usage: meshc <" + join(kCommands, "|") +
                        "> ... (see 'meshc --help')");
  StringRef first = argv[1];
  if (!first.starts_with("-") && !is_contained(kCommands, first))
    return fail("", "unknown command '" + first + "' (commands: " +
                        join(kCommands, ", ") + "; see 'meshc --help')");

  cl::OptionCategory category("meshc options");

  cl::opt<bool> supportedOps(
      "supported-ops",
      cl::desc("List the ONNX ops meshc imports: domain, op type and the "
               "opset versions from which each legalisation applies"),
      cl::cat(category));

  cl::SubCommand importCmd("import", "Import an ONNX model into dfg IR");
  cl::SubCommand planCmd("plan", "Print the per-rank cost and memory plan of "
                                 "a model on a device mesh");
  cl::SubCommand compileCmd("compile", "Compile a model into per-rank "
                                       "executables for a device mesh");

  // Shared by the commands that read a model / take a mesh.
  cl::opt<std::string> model(cl::Positional, cl::Required,
                             cl::desc("<model.onnx>"), cl::sub(importCmd),
                             cl::sub(planCmd), cl::sub(compileCmd),
                             cl::cat(category));
  cl::opt<std::string> mesh(
      "mesh", cl::Required, cl::value_desc("axis=size,..."),
      cl::desc("Device mesh, e.g. dp=2,pp=2,tp=4 (axes: dp, pp, tp); for "
               "'meshc plan' also 'auto' (with --devices)"),
      cl::sub(planCmd), cl::sub(compileCmd), cl::cat(category));

  cl::list<std::string> dimSizes(
      "dim",
      cl::desc("Give a symbolic input dimension (an ONNX dim_param such as "
               "batch_size or sequence_length) a fixed size; repeatable or "
               "comma-separated. Exporters' shape arithmetic on it then "
               "folds to constants"),
      cl::value_desc("name=size"), cl::CommaSeparated, cl::sub(importCmd),
      cl::sub(planCmd), cl::sub(compileCmd), cl::cat(category));

  cl::list<std::string> maxDims(
      "max-dim",
      cl::desc("Compile executables that accept any size up to N for a "
               "symbolic input dimension (batch_size, sequence_length, "
               "past_sequence_length, ...); repeatable or comma-separated. "
               "Buffers are planned at the bounds; each run checks its "
               "inputs against them"),
      cl::value_desc("name=N"), cl::CommaSeparated, cl::sub(compileCmd),
      cl::cat(category));

  cl::opt<unsigned> maxBatch(
      "max-batch",
      cl::desc("As --max-dim for the model's batch dimension (dimension 0 of "
               "its inputs), whatever its name (default 8 where the model's "
               "batch is symbolic and neither --dim nor --max-dim sizes it; "
               "0: no bound, --dim must size it)"),
      cl::value_desc("N"), cl::init(AxisBounds::kDefaultBatch),
      cl::sub(compileCmd), cl::cat(category));
  cl::opt<unsigned> maxSeq(
      "max-seq",
      cl::desc("As --max-dim for the sequence dimension (dimension 1 of the "
               "token ids; default 512, applied as --max-batch's)"),
      cl::value_desc("N"), cl::init(AxisBounds::kDefaultSeq),
      cl::sub(compileCmd), cl::cat(category));
  cl::opt<unsigned> maxCache(
      "max-cache",
      cl::desc("As --max-dim for the KV-cache length (dimension 2 of the past "
               "keys and values; default 512, applied as --max-batch's)"),
      cl::value_desc("N"), cl::init(AxisBounds::kDefaultCache),
      cl::sub(compileCmd), cl::cat(category));

  cl::opt<std::string> importOutput(
      "o", cl::desc("Write the IR to <file> (default: standard output)"),
      cl::value_desc("file"), cl::init("-"), cl::sub(importCmd),
      cl::cat(category));
  cl::opt<bool> importOptimize("optimize",
                               cl::desc("Run the graph pipeline after import"),
                               cl::sub(importCmd), cl::cat(category));

  cl::opt<unsigned> planBatch(
      "batch",
      cl::desc("Batch size to plan for (default: the model's; its shapes are "
               "static, so a different size is refused)"),
      cl::init(0), cl::sub(planCmd), cl::cat(category));
  cl::opt<unsigned> planSeq(
      "seq",
      cl::desc("Sequence length to plan for (default: the model's; as "
               "--batch)"),
      cl::init(0), cl::sub(planCmd), cl::cat(category));
  cl::opt<unsigned> planDevices(
      "devices",
      cl::desc("Number of GPUs: required with --mesh auto (which searches "
               "their dp x pp x tp factorisations), else checked against the "
               "mesh"),
      cl::value_desc("N"), cl::init(0), cl::sub(planCmd), cl::cat(category));
  cl::opt<std::string> planTopology(
      "topology",
      cl::desc("Where the ranks sit, e.g. nodes=2,gpus-per-node=8; optional "
               "link figures nvlink-gbps, nvlink-us, network-gbps, network-us "
               "(defaults 450 GB/s, 4 us; 50 GB/s, 8 us). Default: one node"),
      cl::value_desc("spec"), cl::sub(planCmd), cl::cat(category));
  cl::opt<double> planDeviceMemory(
      "device-memory",
      cl::desc("Memory per GPU in GiB that a plan must fit (default 80)"),
      cl::value_desc("GiB"), cl::init(80), cl::sub(planCmd), cl::cat(category));

  using codegen::Target;
  cl::opt<Target> compileTarget(
      "target", cl::desc("Code-generation target (default cpu)"),
      cl::values(clEnumValN(Target::Cpu, "cpu",
                            "OpenBLAS + MPI executables, built by g++"),
                 clEnumValN(Target::Cuda, "cuda",
                            "CUDA + cuBLASLt + NCCL executables, built by "
                            "nvcc (one GPU per rank)")),
      cl::init(Target::Cpu), cl::sub(compileCmd), cl::cat(category));
  cl::opt<std::string> cudaArch(
      "cuda-arch",
      cl::desc("GPU architecture of --target cuda executables: sm_90 "
               "(default; H100, H200) or sm_80 (A100)"),
      cl::value_desc("sm_NN"), cl::init("sm_90"), cl::sub(compileCmd),
      cl::cat(category));
  cl::opt<std::string> computeDType(
      "dtype",
      cl::desc("Floating-point type the program computes in and keeps its "
               "weights in: f32, f16 or bf16 (default: the model's own). "
               "Weights are converted while they are sharded; inputs and "
               "outputs keep the model's types. f16 and bf16 need --target "
               "cuda to build executables"),
      cl::value_desc("type"), cl::sub(planCmd), cl::sub(compileCmd),
      cl::cat(category));
  cl::opt<std::string> compileOutput(
      "o",
      cl::desc("Output folder (default: out); with --emit sharded or "
               "ranks, the IR file (default: standard output)"),
      cl::value_desc("path"), cl::init("out"), cl::sub(compileCmd),
      cl::cat(category));
  enum class Emit { Executables, Sharded, Ranks };
  cl::opt<Emit> compileEmit(
      "emit", cl::desc("What to write (default exe)"),
      cl::values(clEnumValN(Emit::Executables, "exe",
                            "Per-rank executables, weight shards and a "
                            "manifest"),
                 clEnumValN(Emit::Sharded, "sharded",
                            "The partitioned SPMD program (dfg + shard "
                            "collectives), as MLIR"),
                 clEnumValN(Emit::Ranks, "ranks",
                            "One program per distinct rank role (pipeline "
                            "stage x tp position), with the rank's weight "
                            "slices as references, as MLIR")),
      cl::init(Emit::Executables), cl::sub(compileCmd), cl::cat(category));
  cl::opt<std::string> compileMarch(
      "march",
      cl::desc("Target CPU of the rank executables, as g++ -march (default "
               "native: the machine compiling)"),
      cl::value_desc("cpu"), cl::init("native"), cl::sub(compileCmd),
      cl::cat(category));
  cl::opt<bool> keepSources(
      "keep-sources",
      cl::desc("Keep the generated C++ in <output>/src/ (default: deleted "
               "once built)"),
      cl::sub(compileCmd), cl::cat(category));
  cl::opt<bool> compileVerbose(
      "verbose", cl::desc("Print the compiler command lines meshc runs"),
      cl::sub(compileCmd), cl::cat(category));
  cl::opt<bool> sequenceParallel(
      "sequence-parallel",
      cl::desc("Split the residual stream along the sequence over tp "
               "(reduce_scatter / all_gather around the norms instead of "
               "all_reduce)"),
      cl::sub(planCmd), cl::sub(compileCmd), cl::cat(category));
  cl::opt<unsigned> microbatches(
      "microbatches",
      cl::desc("With a pp axis: split each dp block of the batch into N "
               "microbatches that flow through the pipeline stages one after "
               "another (default 1)"),
      cl::value_desc("N"), cl::init(1), cl::sub(planCmd), cl::sub(compileCmd),
      cl::cat(category));

  cl::SubCommand runCmd("run", "Launch a compiled model's ranks and write "
                               "its outputs");
  cl::opt<std::string> runDir(cl::Positional, cl::Required,
                              cl::desc("<compiled folder>"), cl::sub(runCmd),
                              cl::cat(category));
  cl::list<std::string> runInputs(
      "input", cl::desc("A model input, NAME=FILE.npy (repeatable)"),
      cl::value_desc("NAME=FILE"), cl::sub(runCmd), cl::cat(category));
  cl::opt<std::string> runOutputDir(
      "output-dir", cl::desc("Folder for the outputs (default: .)"),
      cl::value_desc("dir"), cl::init("."), cl::sub(runCmd), cl::cat(category));

  cl::opt<double> runTimeout(
      "collective-timeout",
      cl::desc("Seconds a rank waits in a collective before the whole job "
               "is aborted with a message naming the op (default 300)"),
      cl::value_desc("s"), cl::init(300), cl::sub(runCmd), cl::cat(category));
  cl::opt<unsigned> runThreads(
      "threads",
      cl::desc("Threads per rank for the kernels (default: the machine's "
               "cores divided by the ranks, at least 1)"),
      cl::value_desc("N"), cl::init(0), cl::sub(runCmd), cl::cat(category));
  cl::opt<unsigned> runRepeat(
      "repeat",
      cl::desc("Run the forward step N times (benchmarking); rank 0 prints "
               "the median and fastest time (default 1)"),
      cl::value_desc("N"), cl::init(1), cl::sub(runCmd), cl::cat(category));
  cl::opt<bool> noCudaGraph(
      "no-cuda-graph",
      cl::desc("--target cuda: run every step directly instead of recording "
               "the forward step once as a CUDA graph and replaying it when "
               "it is repeated (meshc run --repeat); with compile, recorded "
               "in the manifest"),
      cl::sub(compileCmd), cl::sub(runCmd), cl::cat(category));
  cl::opt<bool> noOverlap(
      "no-overlap",
      cl::desc("Run every collective blocking where it stands, instead of "
               "issuing it early and waiting for it where its result is "
               "first read (meshc-schedule-collectives); recorded in the "
               "manifest"),
      cl::sub(compileCmd), cl::cat(category));
  cl::opt<std::string> runMpirunArgs(
      "mpirun-args",
      cl::desc("Extra arguments for mpirun, e.g. \"--hostfile hosts\" "
               "(split at spaces)"),
      cl::value_desc("args"), cl::sub(runCmd), cl::cat(category));

  // libLLVM registers options of its own; show only meshc's.
  for (cl::SubCommand *sub : {&cl::SubCommand::getTopLevel(), &importCmd,
                              &planCmd, &compileCmd, &runCmd})
    cl::HideUnrelatedOptions(category, *sub);
  cl::SetVersionPrinter(printVersion);
  cl::ParseCommandLineOptions(
      argc, argv,
      "meshc: compiles ONNX transformers into per-rank executables for a "
      "device mesh\n");

  if (supportedOps) {
    for (const auto &[domain, opType, since] :
         onnximport::LegalizationTable::get().entries())
      outs() << domain << " " << opType << " " << since << "\n";
    return 0;
  }
  if (importCmd || planCmd || compileCmd) {
    StringRef command = importCmd ? "import" : planCmd ? "plan" : "compile";
    if (Error e = checkReadableFile(model, "model"))
      return fail(command, toString(std::move(e)));
    auto dims = parseDimSizes(dimSizes, "--dim");
    if (!dims)
      return fail(command, toString(dims.takeError()));
    if (!llvm::is_contained({"", "f32", "f16", "bf16"}, computeDType))
      return fail(command, "--dtype '" + computeDType +
                               "' is not one of f32, f16, bf16");
    if (importCmd)
      return runImport(model, *dims, importOutput, importOptimize);
    if (microbatches == 0)
      return fail(command, "--microbatches must be at least 1");
    if (planCmd) {
      if (planDeviceMemory <= 0)
        return fail(command, "--device-memory must be positive (GiB)");
      if ((planBatch.getNumOccurrences() && planBatch == 0) ||
          (planSeq.getNumOccurrences() && planSeq == 0))
        return fail(command, "--batch and --seq must be at least 1");
      PlanRequest request;
      request.model = model;
      request.mesh = mesh;
      request.devices = planDevices;
      request.sequenceParallel = sequenceParallel;
      request.microbatches =
          microbatches.getNumOccurrences() ? int64_t(microbatches) : 0;
      request.batch = planBatch;
      request.seq = planSeq;
      request.topology = planTopology;
      request.deviceMemoryBytes = planDeviceMemory * double(1ull << 30);
      request.dtype = computeDType;
      if (mesh != "auto") {
        auto spec = MeshSpec::parse(mesh);
        if (!spec)
          return fail(command, toString(spec.takeError()));
        if (microbatches > 1 && spec->axisSize("pp").value_or(1) <= 1)
          return fail(command, "--microbatches " +
                                   std::to_string(microbatches) +
                                   " needs a pp axis in --mesh (microbatches "
                                   "keep pipeline stages busy)");
        request.mesh = spec->str();
      }
      return runPlanCommand(request, *dims);
    }
    auto meshSpec = MeshSpec::parse(mesh);
    if (!meshSpec)
      return fail(command, toString(meshSpec.takeError()));
    if (microbatches > 1 && meshSpec->axisSize("pp").value_or(1) <= 1)
      return fail(command, "--microbatches " + std::to_string(microbatches) +
                               " needs a pp axis in --mesh (microbatches keep "
                               "pipeline stages busy)");
    StringRef irOutput = compileOutput.getNumOccurrences()
                             ? StringRef(compileOutput)
                             : StringRef("-");
    if (compileCmd && compileEmit == Emit::Sharded)
      return runCompileSharded(model, *dims, meshSpec->str(), sequenceParallel,
                               microbatches, computeDType, irOutput);
    if (compileCmd && compileEmit == Emit::Ranks)
      return runCompileRanks(model, *dims, meshSpec->str(), sequenceParallel,
                             microbatches, computeDType, irOutput);
    codegen::CpuCompileOptions options;
    auto bounds = parseDimSizes(maxDims, "--max-dim");
    if (!bounds)
      return fail(command, toString(bounds.takeError()));
    for (const auto &entry : *bounds) {
      if (dims->count(entry.getKey()))
        return fail(command,
                    "--dim and --max-dim both give '" + entry.getKey() + "'");
      options.bounds[entry.getKey()] = entry.getValue();
    }
    options.outputDir = compileOutput;
    options.march = compileMarch;
    options.target = compileTarget;
    options.cudaArch = cudaArch;
    options.dtype = computeDType;
    options.noCudaGraph = noCudaGraph;
    options.noOverlap = noOverlap;
    std::string problem = codegen::targetProblem(options);
    if (!problem.empty())
      return fail(command, problem);
    options.keepSources = keepSources;
    options.verbose = compileVerbose;
    AxisBounds axes;
    axes.batch = maxBatch;
    axes.seq = maxSeq;
    axes.cache = maxCache;
    axes.batchGiven = maxBatch.getNumOccurrences() > 0;
    axes.seqGiven = maxSeq.getNumOccurrences() > 0;
    axes.cacheGiven = maxCache.getNumOccurrences() > 0;
    return runCompileCpu(model, *dims, meshSpec->str(), sequenceParallel,
                         microbatches, options, axes);
  }
  if (runCmd) {
    if (!sys::fs::is_directory(runDir))
      return fail("run", "compiled folder '" + runDir + "' does not exist");
    SmallString<256> manifest(runDir);
    sys::path::append(manifest, "manifest.json");
    if (Error e = checkReadableFile(manifest, "manifest"))
      return fail("run", toString(std::move(e)) +
                             " (is this a folder written by 'meshc compile'?)");
    for (const std::string &input : runInputs) {
      auto [name, file] = StringRef(input).split('=');
      if (name.empty() || file.empty())
        return fail("run", "--input '" + input + "' is not NAME=FILE");
      if (Error e = checkReadableFile(file, "input"))
        return fail("run", toString(std::move(e)));
    }
    RunRequest request;
    request.folder = runDir;
    request.outputDir = runOutputDir;
    request.collectiveTimeout = runTimeout;
    request.threads = runThreads;
    request.mpirunArgs = runMpirunArgs;
    request.repeat = runRepeat;
    request.noCudaGraph = noCudaGraph;
    for (const std::string &input : runInputs) {
      auto [name, file] = StringRef(input).split('=');
      request.inputs.emplace_back(name.str(), file.str());
    }
    return runCompiled(request);
  }
  return fail("", "no command given; usage: meshc <" + join(kCommands, "|") +
                      "> ... (see 'meshc --help')");
}

} // namespace meshc
