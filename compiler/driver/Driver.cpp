//===- Driver.cpp - The meshc command-line driver -------------------------===//
//
// Part of meshc. `meshc import | plan | compile | run | generate`: argument
// parsing, input validation and dispatch. Each command checks everything the
// user gave it (files, mesh, flags) before any work, so that a mistake is
// reported as one line naming the culprit.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Driver.h"

#include "compiler/driver/DriverOptions.h"

#include "compiler/codegen/BuildExecutables.h"
#include "compiler/driver/PlanTool.h"
#include "compiler/driver/ReportError.h"
#include "compiler/driver/RunTool.h"
#include "compiler/import/Importer.h"
#include "compiler/import/Legalization.h"
#include "compiler/pipelines/Pipelines.h"
#include "compiler/tools/init_meshc.h"
#include "dialects/dfg/IR/SymbolicDims.h"
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
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <tuple>

using namespace llvm;

namespace meshc {
namespace {

/// Whether the graph pipeline raises exporter idioms (false with
/// --no-raise). One command runs per process; readModelOptions sets it.
bool raiseIdioms = true;
/// --input-value: graph inputs given values at import (readModelOptions).
onnximport::InputValues inputValues;

constexpr StringLiteral kCommandArray[] = {"import", "plan", "compile", "run",
                                           "generate"};
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
        // A derived name (`past_sequence_length + sequence_length`) needs
        // the sizes of the names in it.
        SmallVector<std::string> needed =
            names && i < static_cast<int64_t>(names.size())
                ? dfg::namesInDimName(
                      module.getContext(),
                      cast<mlir::StringAttr>(names[i]).getValue())
                : SmallVector<std::string>{inputs.back() + " #" +
                                           std::to_string(i)};
        for (const std::string &dim : needed) {
          symbolic.insert(dim);
          if (!is_contained(dims, dim) && !(bounds && bounds->count(dim)))
            dims.push_back(dim);
        }
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
  int64_t batch = driver::kDefaultMaxBatch, seq = driver::kDefaultMaxSeq,
          cache = driver::kDefaultMaxCache, image = driver::kDefaultMaxImage;
  bool batchGiven = false, seqGiven = false, cacheGiven = false,
       imageGiven = false;
};

/// Adds `axes` to `bounds` under the names the model gives those
/// dimensions: the batch is dimension 0 of the first input that has a
/// symbolic one; the sequence is dimension 1 of the first integer input
/// (the token ids), or of the first input where none is an integer (a
/// speech encoder's samples); the KV cache is dimension 2 of every 4-D
/// input whose dimension 2 is symbolic and not the sequence and whose
/// dimension 3 (the head size) is static (a past key or value; the
/// onnxruntime-genai builder names its sliding-window layers' caches apart
/// from the others); an image's height and width are dimensions 2 and 3 of
/// a 4-D float input whose dimension 1 (the channels) is static and whose
/// dimension 3 is symbolic (a vision model's pixels).
int resolveAxisBounds(mlir::ModuleOp module, const AxisBounds &axes,
                      onnximport::DimSizes &bounds, StringRef command,
                      llvm::StringSet<> &givenNames) {
  for (const auto &entry : bounds)
    givenNames.insert(entry.getKey()); // --max-dim
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main");
  std::string batch, seq, cache;
  auto nameOf = [&](unsigned arg, int64_t dim) -> std::string {
    auto type =
        dyn_cast<mlir::RankedTensorType>(main.getArgument(arg).getType());
    auto names = main.getArgAttrOfType<mlir::ArrayAttr>(arg, "dfg.dim_names");
    if (!type || !names || dim >= type.getRank() ||
        dim >= static_cast<int64_t>(names.size()) || !type.isDynamicDim(dim))
      return "";
    StringRef name = cast<mlir::StringAttr>(names[dim]).getValue();
    return dfg::isDerivedDimName(name) ? "" : name.str();
  };
  for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
    auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (batch.empty())
      batch = nameOf(i, 0);
    if (seq.empty() && isa<mlir::IntegerType>(type.getElementType()))
      seq = nameOf(i, 1);
  }
  // A model that reads no token ids (a speech encoder's [batch, samples]):
  // dimension 1 of its first input.
  if (seq.empty() && main && main.getNumArguments() > 0 &&
      llvm::none_of(main.getArgumentTypes(), [](mlir::Type t) {
        return isa<mlir::IntegerType>(
            cast<mlir::RankedTensorType>(t).getElementType());
      }))
    seq = nameOf(0, 1);
  SmallVector<std::string> otherCaches;
  for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
    std::string past = nameOf(i, 2);
    auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (type.getRank() != 4 || past.empty() || past == seq ||
        type.isDynamicDim(3))
      continue;
    if (cache.empty())
      cache = past;
    else if (past != cache && !is_contained(otherCaches, past))
      otherCaches.push_back(past);
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
    if (given)
      givenNames.insert(name);
  }
  if (axes.cache > 0)
    for (const std::string &name : otherCaches) {
      if (!bounds.try_emplace(name, axes.cache).second && axes.cacheGiven)
        return fail(command,
                    "--max-cache and --max-dim both bound '" + name + "'");
      if (axes.cacheGiven)
        givenNames.insert(name);
    }
  // An image's height and width.
  bool image = false;
  for (unsigned i = 0; main && axes.image > 0 && i < main.getNumArguments();
       ++i) {
    auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (!isa<mlir::FloatType>(type.getElementType()) || type.getRank() != 4 ||
        type.isDynamicDim(1) || !type.isDynamicDim(3))
      continue;
    for (int64_t d : {2, 3}) {
      std::string name = nameOf(i, d);
      if (name.empty() || name == seq || name == cache)
        continue;
      image = true;
      if (!bounds.try_emplace(name, axes.image).second && axes.imageGiven)
        return fail(command, "--max-image and --max-dim both bound '" + name +
                                 "'");
      if (axes.imageGiven)
        givenNames.insert(name);
    }
  }
  if (axes.imageGiven && axes.image > 0 && !image)
    return fail(command, "--max-image: the model has no image input (a 4-D "
                         "float input [batch, channels, height, width] whose "
                         "channels are static and whose height or width is "
                         "symbolic); name its dimensions with --max-dim");
  // Another integer [batch, width] input whose width has a name of its own.
  // With a KV cache, it is the attention mask of a cached step, which spans
  // the past and the new tokens: where the exporter names its width on its
  // own (onnxruntime-genai's total_sequence_length) rather than as past +
  // sequence, the width is bounded by both bounds together. Without one, it
  // is a second sequence of tokens (an encoder-decoder's decoder_input_ids
  // beside its source's input_ids), bounded as the sequence is.
  bool withCache = !cache.empty() && axes.cache > 0;
  if (!seq.empty() && axes.seq > 0)
    for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
      auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
      std::string width = nameOf(i, 1);
      if (!isa<mlir::IntegerType>(type.getElementType()) ||
          type.getRank() != 2 || width.empty() || width == seq ||
          width == cache)
        continue;
      if (withCache) {
        bounds.try_emplace(width, axes.seq + axes.cache);
        continue;
      }
      // (A --max-dim of its own name bounds it instead.)
      if (bounds.try_emplace(width, axes.seq).second && axes.seqGiven)
        givenNames.insert(width);
    }
  // The states of another sequence: a float [batch, length, features] input
  // whose length has a name of its own (the encoder's hidden states an
  // encoder-decoder's decoder reads: Optimum's encoder_hidden_states, whose
  // length no mask names where the model takes none, as Whisper's), bounded
  // as the sequence is; as the KV cache where a 4-D past has that length
  // (the cross-attention caches of a decoder with past), which bounds it
  // first.
  if (!batch.empty() && axes.seq > 0)
    for (unsigned i = 0; main && i < main.getNumArguments(); ++i) {
      auto type = cast<mlir::RankedTensorType>(main.getArgument(i).getType());
      std::string length = nameOf(i, 1);
      if (!isa<mlir::FloatType>(type.getElementType()) ||
          type.getRank() != 3 || nameOf(i, 0) != batch ||
          type.isDynamicDim(2) || length.empty() || length == seq)
        continue;
      if (bounds.try_emplace(length, axes.seq).second && axes.seqGiven)
        givenNames.insert(length);
    }
  return 0;
}

/// The largest sizes the model's shape arithmetic was imported for
/// (`dfg.dim_maximums`: MPT's ALiBi table sliced at max(0, max_seq_len -
/// sequence_length) holds for sequence_length <= max_seq_len): a default
/// bound above one is lowered to it, a bound the user gave is refused.
int applyModelMaximums(mlir::ModuleOp module, onnximport::DimSizes &bounds,
                       const llvm::StringSet<> &givenNames, StringRef command) {
  auto most = module->getAttrOfType<mlir::DictionaryAttr>("dfg.dim_maximums");
  if (!most)
    return 0;
  for (mlir::NamedAttribute entry : most) {
    StringRef name = entry.getName().getValue();
    int64_t max = cast<mlir::IntegerAttr>(entry.getValue()).getInt();
    auto it = bounds.find(name);
    if (it == bounds.end() || it->second <= max)
      continue;
    if (givenNames.contains(name))
      return fail(command, "dimension '" + name + "' is bounded at " +
                               Twine(it->second) +
                               ", but the model's shape arithmetic holds "
                               "only up to " +
                               Twine(max) + " (see the note above)");
    errs() << "meshc " << command << ": note: dimension '" << name
           << "' is bounded at " << max << " (not the default " << it->second
           << "): the model holds only up to " << max << "\n";
    it->second = max;
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
      onnximport::importOnnxModel(context, model, dims, inputValues);
  if (!module)
    return 1;
  if (bounds && axes) {
    llvm::StringSet<> givenNames;
    if (int status =
            resolveAxisBounds(*module, *axes, *bounds, command, givenNames))
      return status;
    if (int status = applyModelMaximums(*module, *bounds, givenNames, command))
      return status;
  }
  if (!symbolicOk)
    if (int status = checkStaticInputs(*module, command, bounds))
      return status;
  mlir::PassManager pm(&context);
  SmallString<256> folder = sys::path::parent_path(model);
  build(pm, folder.empty() ? StringRef(".") : folder.str());
  if (!pm.getPasses().empty() &&
      failed(runPipeline(pm, *module, ("meshc " + command).str())))
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
        buildGraphPipeline(pm, folder, raiseIdioms);
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
                         buildGraphPipeline(pm, folder, raiseIdioms);
                     });
}

/// meshc compile MODEL --mesh M --emit sharded [-o FILE]: import, the graph
/// pipeline, then the sharding pipeline; writes the SPMD program.
int runCompileSharded(StringRef model, const onnximport::DimSizes &dims,
                      StringRef mesh, bool sequenceParallel,
                      int64_t microbatches, StringRef dtype, StringRef output) {
  return runFrontEnd("compile", model, dims, output,
                     [&](mlir::OpPassManager &pm, StringRef folder) {
                       buildGraphPipeline(pm, folder, raiseIdioms);
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
        buildGraphPipeline(pm, folder, raiseIdioms);
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
/// then per-rank executables, weight shards and the manifest
/// (BuildExecutables.h); with `sourcesOutput` (--emit cpp), only the
/// generated source of each rank program, written there.
int runCompileExecutables(StringRef model, const onnximport::DimSizes &dims,
                          StringRef mesh, bool sequenceParallel,
                          int64_t microbatches, codegen::BuildOptions options,
                          AxisBounds axes, StringRef sourcesOutput = "") {
  SmallString<256> folder = sys::path::parent_path(model);
  options.weightsDir = folder.empty() ? "." : folder.str().str();
  options.model = sys::path::filename(model).str();
  options.mesh = mesh.str();
  options.sequenceParallel = sequenceParallel;
  options.version = MESHC_VERSION;
  // The cpu target's bf16 computes in f32 (a model stored in 16 bits is
  // converted to it): only the weights that products read are stored in
  // bf16 (BuildOptions::bf16WeightsOnly).
  return withRankPrograms(
      model, dims, &options.bounds, &axes, mesh, sequenceParallel, microbatches,
      options.bf16WeightsOnly() ? StringRef("f32") : StringRef(options.dtype),
      [&](mlir::ModuleOp all, ArrayRef<codegen::RoleProgram> roles) {
        mlir::PassManager pm(all.getContext());
        buildLoweringPipeline(pm, !options.noOverlap);
        if (failed(runPipeline(pm, all, "meshc compile")))
          return 1;
        if (!sourcesOutput.empty()) {
          std::string error;
          auto out = mlir::openOutputFile(sourcesOutput, &error);
          if (!out)
            return fail("compile", error);
          if (failed(codegen::writeRankSources(roles, all, options, out->os())))
            return 1;
          out->keep();
          return 0;
        }
        if (failed(codegen::buildExecutables(roles, all, options)))
          return 1;
        outs() << "meshc compile: wrote " << options.outputDir << "/ ("
               << roles.size() << " rank program(s) for mesh " << mesh
               << "); run it with 'meshc run " << options.outputDir
               << " --input NAME=FILE.npy ...'";
        // A decoder: say how to generate with it too.
        SmallString<256> manifest(options.outputDir);
        sys::path::append(manifest, "manifest.json");
        if (auto text = MemoryBuffer::getFile(manifest)) {
          auto m = nlohmann::json::parse((*text)->getBuffer().begin(),
                                         (*text)->getBuffer().end(), nullptr,
                                         /*allow_exceptions=*/false);
          if (m.is_object() && m["generate"].is_object() &&
              !m["generate"].contains("unsupported"))
            outs() << ", or generate with 'meshc generate " << options.outputDir
                   << " --prompt-ids IDS.npy --max-new-tokens N "
                      "--output-ids OUT.npy'";
        }
        outs() << "\n";
        return 0;
      });
}

/// The model file in a folder an exporter wrote: the decoder's `filename`
/// of onnxruntime-genai's genai_config.json, else model.onnx (Optimum's and
/// torch.onnx's name).
Expected<std::string> modelInFolder(StringRef folder) {
  SmallString<256> config(folder);
  sys::path::append(config, "genai_config.json");
  std::string file = "model.onnx";
  if (auto text = MemoryBuffer::getFile(config)) {
    auto json = nlohmann::json::parse((*text)->getBuffer().begin(),
                                      (*text)->getBuffer().end(), nullptr,
                                      /*allow_exceptions=*/false);
    if (json.is_object() && json["model"].is_object() &&
        json["model"]["decoder"].is_object() &&
        json["model"]["decoder"]["filename"].is_string())
      file = json["model"]["decoder"]["filename"].get<std::string>();
  }
  SmallString<256> path(folder);
  sys::path::append(path, file);
  if (!sys::fs::exists(path)) {
    // The models the folder holds (Optimum's encoder-decoder: its encoder,
    // its decoders), each to be compiled on its own.
    std::vector<std::string> models;
    std::error_code ec;
    for (sys::fs::directory_iterator it(folder, ec), end; it != end && !ec;
         it.increment(ec))
      if (sys::path::extension(it->path()) == ".onnx")
        models.push_back(sys::path::filename(it->path()).str());
    llvm::sort(models);
    return createStringError(
        inconvertibleErrorCode(), "model folder '%s' has no %s (%s)",
        folder.str().c_str(), file.c_str(),
        models.empty() ? "give the .onnx file itself"
                       : ("it holds " + join(models, ", ") +
                          "; give the one to compile, each is compiled on its "
                          "own")
                             .c_str());
  }
  return path.str().str();
}

/// The model file of a command and its --dim sizes, checked; --no-raise
/// taken into raiseIdioms. A folder stands for the model file in it.
Expected<onnximport::DimSizes> readModelOptions(driver::ModelOptions &m) {
  raiseIdioms = !m.noRaise;
  if (sys::fs::is_directory(m.path)) {
    Expected<std::string> file = modelInFolder(m.path);
    if (!file)
      return file.takeError();
    m.path = *file;
  }
  if (Error e = checkReadableFile(m.path, "model"))
    return std::move(e);
  inputValues.clear();
  for (const std::string &entry : m.inputValues) {
    auto [name, text] = StringRef(entry).split('=');
    if (name.empty() || text.empty())
      return createStringError(inconvertibleErrorCode(),
                               "--input-value '%s' is not NAME=VALUE",
                               entry.c_str());
    if (!inputValues.try_emplace(name, text.str()).second)
      return createStringError(inconvertibleErrorCode(),
                               "--input-value names '%s' twice",
                               name.str().c_str());
  }
  return parseDimSizes(m.dims, "--dim");
}

/// The checks of --dtype and --microbatches that plan and compile share.
Error checkMeshOptions(const driver::MeshOptions &m) {
  if (!llvm::is_contained({"", "f32", "f16", "bf16"}, m.dtype))
    return createStringError("--dtype '" + m.dtype +
                             "' is not one of f32, f16, bf16");
  if (m.microbatches == 0)
    return createStringError("--microbatches must be at least 1");
  return Error::success();
}

/// --mesh parsed, and --microbatches checked against its pp axis.
Expected<MeshSpec> parseMesh(const driver::MeshOptions &m) {
  auto spec = MeshSpec::parse(m.mesh);
  if (!spec)
    return spec.takeError();
  if (m.microbatches > 1 && spec->axisSize("pp").value_or(1) <= 1)
    return createStringError("--microbatches " +
                             std::to_string(m.microbatches) +
                             " needs a pp axis in --mesh (microbatches keep "
                             "pipeline stages busy)");
  return spec;
}

/// meshc import MODEL [--dim ...] [--optimize] [-o FILE].
int importCommand(driver::ModelOptions &model,
                  const driver::ImportOptions &options) {
  auto dims = readModelOptions(model);
  if (!dims)
    return fail("import", toString(dims.takeError()));
  return runImport(model.path, *dims, options.output, options.optimize);
}

/// meshc plan MODEL --mesh M|auto [...].
int planCommand(driver::ModelOptions &model, const driver::MeshOptions &mesh,
                const driver::PlanOptions &options) {
  auto dims = readModelOptions(model);
  if (!dims)
    return fail("plan", toString(dims.takeError()));
  if (Error e = checkMeshOptions(mesh))
    return fail("plan", toString(std::move(e)));
  if (options.deviceMemory <= 0)
    return fail("plan", "--device-memory must be positive (GiB)");
  if ((options.batch.getNumOccurrences() && options.batch == 0) ||
      (options.seq.getNumOccurrences() && options.seq == 0))
    return fail("plan", "--batch and --seq must be at least 1");
  PlanRequest request;
  request.model = model.path;
  request.mesh = mesh.mesh;
  request.devices = options.devices;
  request.sequenceParallel = mesh.sequenceParallel;
  request.microbatches =
      mesh.microbatches.getNumOccurrences() ? int64_t(mesh.microbatches) : 0;
  request.batch = options.batch;
  request.seq = options.seq;
  request.topology = options.topology;
  request.deviceMemoryBytes = options.deviceMemory * double(1ull << 30);
  request.dtype = mesh.dtype;
  if (mesh.mesh != "auto") {
    auto spec = parseMesh(mesh);
    if (!spec)
      return fail("plan", toString(spec.takeError()));
    request.mesh = spec->str();
  }
  return runPlanCommand(request, *dims);
}

/// meshc compile MODEL --mesh M [...]: the IR (--emit sharded, ranks), the
/// generated sources (--emit cpp) or the executables.
int compileCommand(driver::ModelOptions &model, const driver::MeshOptions &mesh,
                   const driver::CompileOptions &options) {
  auto dims = readModelOptions(model);
  if (!dims)
    return fail("compile", toString(dims.takeError()));
  if (Error e = checkMeshOptions(mesh))
    return fail("compile", toString(std::move(e)));
  auto meshSpec = parseMesh(mesh);
  if (!meshSpec)
    return fail("compile", toString(meshSpec.takeError()));
  StringRef irOutput = options.output.getNumOccurrences()
                           ? StringRef(options.output)
                           : StringRef("-");
  if (options.emit == driver::Emit::Sharded)
    return runCompileSharded(model.path, *dims, meshSpec->str(),
                             mesh.sequenceParallel, mesh.microbatches,
                             mesh.dtype, irOutput);
  if (options.emit == driver::Emit::Ranks)
    return runCompileRanks(model.path, *dims, meshSpec->str(),
                           mesh.sequenceParallel, mesh.microbatches, mesh.dtype,
                           irOutput);
  codegen::BuildOptions build;
  auto bounds = parseDimSizes(options.maxDims, "--max-dim");
  if (!bounds)
    return fail("compile", toString(bounds.takeError()));
  for (const auto &entry : *bounds) {
    if (dims->count(entry.getKey()))
      return fail("compile",
                  "--dim and --max-dim both give '" + entry.getKey() + "'");
    build.bounds[entry.getKey()] = entry.getValue();
  }
  build.outputDir = options.output;
  build.march = options.march;
  build.target = options.target;
  build.cudaArch = options.cudaArch;
  build.dtype = mesh.dtype;
  build.noCudaGraph = options.noCudaGraph;
  build.noOverlap = options.noOverlap;
  std::string problem = codegen::targetProblem(build);
  if (!problem.empty())
    return fail("compile", problem);
  build.keepSources = options.keepSources;
  build.verbose = options.verbose;
  AxisBounds axes;
  axes.batch = options.maxBatch;
  axes.seq = options.maxSeq;
  axes.cache = options.maxCache;
  axes.image = options.maxImage;
  axes.batchGiven = options.maxBatch.getNumOccurrences() > 0;
  axes.seqGiven = options.maxSeq.getNumOccurrences() > 0;
  axes.cacheGiven = options.maxCache.getNumOccurrences() > 0;
  axes.imageGiven = options.maxImage.getNumOccurrences() > 0;
  return runCompileExecutables(
      model.path, *dims, meshSpec->str(), mesh.sequenceParallel,
      mesh.microbatches, build, axes,
      options.emit == driver::Emit::Sources ? irOutput : StringRef());
}

/// The launcher and its arguments from `options` into `request`; an error
/// when the arguments given are for the other launcher.
Error chooseLauncher(const driver::RunOptions &options, RunRequest &request) {
  request.launcher = options.launcher;
  bool srun = options.launcher == Launcher::Srun;
  if (srun && options.mpirunArgs.getNumOccurrences())
    return createStringError("--mpirun-args is for --launcher mpirun; give "
                             "srun's arguments with --srun-args");
  if (!srun && options.srunArgs.getNumOccurrences())
    return createStringError("--srun-args needs --launcher srun");
  request.launcherArgs = srun ? options.srunArgs : options.mpirunArgs;
  return Error::success();
}

/// The --input entries of run and generate, NAME=FILE each with FILE
/// readable, into `inputs`.
Error readInputFlags(ArrayRef<std::string> entries,
                     std::vector<std::pair<std::string, std::string>> &inputs) {
  for (const std::string &input : entries) {
    auto [name, file] = StringRef(input).split('=');
    if (name.empty() || file.empty())
      return createStringError(inconvertibleErrorCode(),
                               "--input '%s' is not NAME=FILE", input.c_str());
    if (Error e = checkReadableFile(file, "input"))
      return e;
    inputs.emplace_back(name.str(), file.str());
  }
  return Error::success();
}

/// meshc run FOLDER --input NAME=FILE.npy ... [...].
int runCommand(const driver::RunOptions &options, bool noCudaGraph) {
  RunRequest request;
  if (Error e = chooseLauncher(options, request))
    return fail("run", toString(std::move(e)));
  if (!sys::fs::is_directory(options.folder))
    return fail("run",
                "compiled folder '" + options.folder + "' does not exist");
  SmallString<256> manifest(options.folder);
  sys::path::append(manifest, "manifest.json");
  if (Error e = checkReadableFile(manifest, "manifest"))
    return fail("run", toString(std::move(e)) +
                           " (is this a folder written by 'meshc compile'?)");
  if (Error e = readInputFlags(options.inputs, request.inputs))
    return fail("run", toString(std::move(e)));
  request.folder = options.folder;
  request.outputDir = options.outputDir;
  request.collectiveTimeout = options.timeout;
  request.threads = options.threads;
  request.repeat = options.repeat;
  request.noCudaGraph = noCudaGraph;
  return runCompiled(request);
}

/// meshc generate FOLDER [--prompt-ids FILE.npy] [--input NAME=FILE.npy ...]
/// --max-new-tokens N --output-ids OUT.npy [...].
int generateCommand(const driver::RunOptions &run,
                    const driver::GenerateOptions &options) {
  GenerateRequest request;
  if (Error e = chooseLauncher(run, request.run))
    return fail("generate", toString(std::move(e)));
  if (!sys::fs::is_directory(run.folder))
    return fail("generate",
                "compiled folder '" + run.folder + "' does not exist");
  for (StringRef file :
       {StringRef(options.promptIds), StringRef(options.attentionMask)})
    if (!file.empty())
      if (Error e = checkReadableFile(file, "input"))
        return fail("generate", toString(std::move(e)));
  if (Error e = readInputFlags(run.inputs, request.run.inputs))
    return fail("generate", toString(std::move(e)));
  request.run.folder = run.folder;
  request.run.collectiveTimeout = run.timeout;
  request.run.threads = run.threads;
  request.promptIds = options.promptIds;
  request.attentionMask = options.attentionMask;
  request.outputIds = options.outputIds;
  request.maxNewTokens = options.maxNewTokens;
  request.stopTokens.assign(options.stopTokens.begin(),
                            options.stopTokens.end());
  request.ignoreEos = options.ignoreEos;
  request.temperature = options.temperature;
  request.topK = options.topK;
  request.topP = options.topP;
  request.seed = options.seed;
  request.jsonl = options.jsonl;
  return generateCompiled(request);
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

  driver::Commands commands;
  driver::ModelOptions model(commands);
  driver::MeshOptions mesh(commands);
  driver::ImportOptions importOptions(commands);
  driver::PlanOptions planOptions(commands);
  driver::CompileOptions compileOptions(commands);
  driver::RunOptions runOptions(commands);
  driver::GenerateOptions generateOptions(commands);

  // libLLVM registers options of its own; show only meshc's.
  for (cl::SubCommand *sub :
       {&cl::SubCommand::getTopLevel(), &commands.import, &commands.plan,
        &commands.compile, &commands.run, &commands.generate})
    cl::HideUnrelatedOptions(commands.category, *sub);
  cl::SetVersionPrinter(printVersion);
  cl::ParseCommandLineOptions(
      argc, argv,
      "meshc: compiles ONNX transformers into per-rank executables for a "
      "device mesh\n");

  if (commands.supportedOps) {
    for (const auto &[domain, opType, since] :
         onnximport::LegalizationTable::get().entries())
      outs() << domain << " " << opType << " " << since << "\n";
    return 0;
  }
  if (commands.import)
    return importCommand(model, importOptions);
  if (commands.plan)
    return planCommand(model, mesh, planOptions);
  if (commands.compile)
    return compileCommand(model, mesh, compileOptions);
  if (commands.run)
    return runCommand(runOptions, compileOptions.noCudaGraph);
  if (commands.generate)
    return generateCommand(runOptions, generateOptions);
  return fail("", "no command given; usage: meshc <" + join(kCommands, "|") +
                      "> ... (see 'meshc --help')");
}

} // namespace meshc
