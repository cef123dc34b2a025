//===- BuildExecutables.cpp - `meshc compile` to executables -------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/BuildExecutables.h"
#include "compiler/codegen/DTypes.h"

#include "compiler/codegen/RankEmitter.h"
#include "compiler/codegen/ToolchainConfig.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/Sharding/Sharding.h"
#include "meshc/runtime/safetensors.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>

using namespace mlir;
using json = nlohmann::ordered_json;

namespace meshc::codegen {

namespace {

/// The manifest's view of a signature entry: global shape and, per
/// dimension, the grid axes it is split over.
json signatureJson(const SignatureEntry &e, shard::GridOp grid) {
  int64_t rank = e.localType.getRank();
  TensorSharding sharding = fromAttr(e.sharding, rank);
  SmallVector<int64_t> global(e.localType.getShape());
  json axes = json::array();
  for (int64_t d = 0; d < rank; ++d) {
    json dimAxes = json::array();
    for (shard::GridAxis a : sharding[d]) {
      if (!ShapedType::isDynamic(global[d]))
        global[d] *= grid.getShape()[a];
      dimAxes.push_back(a);
    }
    // A symbolic dimension: -1, and its name or expression under "dims".
    if (ShapedType::isDynamic(global[d]))
      global[d] = -1;
    axes.push_back(dimAxes);
  }
  json entry{{"name", e.name},
             {"dtype", std::string(rt::safetensorsName(
                           *elementDType(e.localType.getElementType())))},
             {"shape", std::vector<int64_t>(global.begin(), global.end())},
             {"sharding", axes}};
  if (!e.localType.hasStaticShape())
    entry["dims"] = e.dims;
  // Heads tp padded: the model's tensor holds `size` along `axis`, the
  // program's the whole "shape" (the runtime pads an input with zeros,
  // drops the rest of an output).
  if (e.padded.size() == 2)
    entry["padded"] = {{"axis", e.padded[0]}, {"size", e.padded[1]}};
  return entry;
}

/// The JSON object a file of the model's folder holds, or null.
json folderConfig(StringRef folder, StringRef file) {
  SmallString<256> path(folder);
  llvm::sys::path::append(path, file);
  auto text = llvm::MemoryBuffer::getFile(path);
  if (!text)
    return nullptr;
  json config = json::parse((*text)->getBuffer().begin(),
                            (*text)->getBuffer().end(), nullptr,
                            /*allow_exceptions=*/false);
  return config.is_object() ? config : json(nullptr);
}

/// The end-of-sequence ids the model's folder declares, within the
/// vocabulary: Hugging Face's generation_config.json, onnxruntime-genai's
/// genai_config.json, or config.json, the first that has them; and that
/// file's name.
std::pair<std::vector<int64_t>, std::string>
declaredStopTokens(StringRef folder, int64_t vocabulary) {
  for (const char *file :
       {"generation_config.json", "genai_config.json", "config.json"}) {
    json config = folderConfig(folder, file);
    if (!config.is_object())
      continue;
    const json *eos = nullptr;
    if (config.contains("eos_token_id"))
      eos = &config["eos_token_id"];
    else if (config.contains("model") && config["model"].is_object() &&
             config["model"].contains("eos_token_id"))
      eos = &config["model"]["eos_token_id"];
    if (!eos)
      continue;
    std::vector<int64_t> ids;
    for (const json &id : eos->is_array() ? *eos : json::array({*eos}))
      if (id.is_number_integer() && id.get<int64_t>() >= 0 &&
          id.get<int64_t>() < vocabulary)
        ids.push_back(id.get<int64_t>());
    return {ids, file};
  }
  return {{}, ""};
}

/// The token an encoder-decoder's decoder starts from, as the model's
/// folder declares it (`decoder_start_token_id` of generation_config.json or
/// config.json, within the vocabulary), and that file's name.
std::optional<std::pair<int64_t, std::string>>
declaredDecoderStart(StringRef folder, int64_t vocabulary) {
  for (const char *file : {"generation_config.json", "config.json"}) {
    json config = folderConfig(folder, file);
    if (!config.is_object() || !config.contains("decoder_start_token_id"))
      continue;
    const json &id = config["decoder_start_token_id"];
    if (id.is_number_integer() && id.get<int64_t>() >= 0 &&
        id.get<int64_t>() < vocabulary)
      return std::make_pair(id.get<int64_t>(), std::string(file));
  }
  return std::nullopt;
}

/// What `meshc generate` needs to drive the model token by token: which
/// inputs carry the tokens, the attention mask and the positions, which
/// output the logits, and the KV caches (past input, present output, the
/// axis that grows), with the symbols for the batch, the step's tokens and
/// the cached length. The roles of the token inputs come from the names the
/// exporters give them (input_ids, attention_mask, position_ids, logits:
/// Hugging Face's, which torch.onnx, Optimum and onnxruntime-genai keep); the
/// caches from the shapes (CachePair). Every other input is one every step
/// reads unchanged (an encoder-decoder's source: "fixed_inputs"), unless it
/// grows with the tokens. A model that is not a decoder gets "unsupported"
/// with the reason.
json generateSection(const json &inputs, const json &outputs,
                     const json &symbols, const std::vector<CachePair> &cache,
                     const std::set<std::string> &readByNone,
                     StringRef modelFolder, bool sequenceParallel) {
  if (sequenceParallel)
    return {{"unsupported",
             "it was compiled with --sequence-parallel, which splits every "
             "step's tokens over tp, and a decoding step has one token; "
             "recompile without --sequence-parallel"}};
  auto find = [](const json &list, StringRef name) -> const json * {
    for (const json &e : list)
      if (e.value("name", "") == name)
        return &e;
    return nullptr;
  };
  auto dimName = [](const json &entry, size_t d) -> std::string {
    if (!entry.contains("dims") || d >= entry["dims"].size())
      return "";
    return entry["dims"][d].get<std::string>();
  };
  json gen = json::object();
  // An encoder-decoder exported whole reads the decoder's tokens as
  // `decoder_input_ids` (with `decoder_attention_mask` and
  // `decoder_position_ids` where it takes them) beside the source's
  // `input_ids` and `attention_mask`: generation grows the decoder's, and the
  // source's are inputs held fixed (below).
  std::string prefix = find(inputs, "decoder_input_ids") ? "decoder_" : "";
  std::string idsName = prefix + "input_ids";
  const json *ids = find(inputs, idsName);
  const json *logits = find(outputs, "logits");
  if (!ids || (*ids)["shape"].size() != 2 ||
      ((*ids)["dtype"] != "I64" && (*ids)["dtype"] != "I32"))
    return {{"unsupported",
             "the model has no 2-D integer input '" + idsName +
                 "' (the token ids of a decoder)"}};
  if (!logits || (*logits)["shape"].size() != 3 ||
      ((*logits)["dtype"] != "F32" && (*logits)["dtype"] != "F16" &&
       (*logits)["dtype"] != "BF16") ||
      (*logits)["shape"][2].get<int64_t>() < 0)
    return {{"unsupported", "the model has no output 'logits' of shape "
                            "[batch, sequence, vocabulary] of floats (is it "
                            "a decoder language model?)"}};
  std::string batch = dimName(*ids, 0), step = dimName(*ids, 1);
  if (step.empty())
    return {{"unsupported",
             "input '" + idsName +
                 "' has a fixed sequence length; generation needs it "
                 "symbolic (compile without --dim for it)"}};
  gen["input_ids"] = idsName;
  gen["logits"] = "logits";
  gen["vocabulary"] = (*logits)["shape"][2];
  gen["batch_symbol"] = batch;
  gen["step_symbol"] = step;
  std::set<std::string> known = {idsName};
  if (find(inputs, prefix + "attention_mask")) {
    gen["attention_mask"] = prefix + "attention_mask";
    known.insert(prefix + "attention_mask");
  }
  if (find(inputs, prefix + "position_ids")) {
    gen["position_ids"] = prefix + "position_ids";
    known.insert(prefix + "position_ids");
  }
  json pairs = json::array();
  std::string pastSymbol;
  for (const CachePair &pair : cache) {
    if (pair.newSymbol != step)
      continue;
    if (!pastSymbol.empty() && pair.pastSymbol != pastSymbol)
      return {
          {"unsupported", "the KV caches '" + pair.past +
                              "' and others grow from different lengths ('" +
                              pair.pastSymbol + "', '" + pastSymbol + "')"}};
    pastSymbol = pair.pastSymbol;
    pairs.push_back(
        {{"past", pair.past}, {"present", pair.present}, {"axis", pair.axis}});
    known.insert(pair.past);
  }
  if (!pastSymbol.empty())
    gen["past_symbol"] = pastSymbol;
  auto [stops, source] =
      declaredStopTokens(modelFolder, gen["vocabulary"].get<int64_t>());
  gen["stop_tokens"] = stops;
  if (!source.empty())
    gen["stop_tokens_from"] = source;
  // The decoder of an encoder-decoder (exported whole, or Optimum's decoder
  // reading `encoder_hidden_states`) starts from the token its folder
  // declares when no decoder prompt is given.
  if (!prefix.empty() || find(inputs, "encoder_hidden_states"))
    if (auto start = declaredDecoderStart(
            modelFolder, gen["vocabulary"].get<int64_t>())) {
      gen["decoder_start_token"] = start->first;
      gen["decoder_start_token_from"] = start->second;
    }
  json fixed = json::array();
  for (const json &e : inputs) {
    std::string name = e.value("name", std::string());
    if (known.count(name))
      continue;
    // An input no program reads (the pasts of Optimum's merged decoder
    // compiled with use_cache_branch=false) is nothing to generation: a
    // fixed input that need not be given.
    if (readByNone.count(name)) {
      fixed.push_back(name);
      continue;
    }
    // A cache whose present keeps the past's length (onnxruntime-genai's
    // sliding-window layers: sliding_window_cache): fed back at a fixed
    // capacity, the least the model takes (its window).
    std::string capacity = dimName(e, 2);
    if (e.value("shape", json::array()).size() == 4 && !capacity.empty() &&
        e["shape"][2].get<int64_t>() < 0) {
      std::string present;
      for (auto [from, to] : {std::pair<StringRef, StringRef>{"past_key_values",
                                                              "present"},
                              {"past_key", "present_key"},
                              {"past_value", "present_value"},
                              {"past", "present"}})
        if (StringRef(name).starts_with(from)) {
          present = (to + StringRef(name).drop_front(from.size())).str();
          break;
        }
      const json *o = present.empty() ? nullptr : find(outputs, present);
      int64_t least = symbols.contains(capacity)
                          ? symbols[capacity].value("min", int64_t(0))
                          : 0;
      if (o && dimName(*o, 2) == capacity) {
        if (least < 1)
          return {{"unsupported",
                   "KV cache '" + name + "' keeps a fixed length '" +
                       capacity +
                       "', but the model states no least size for it (the "
                       "window meshc generate would hold)"}};
        pairs.push_back({{"past", name},
                         {"present", present},
                         {"axis", 2},
                         {"fixed", least}});
        known.insert(name);
        continue;
      }
    }
    // Anything else (an encoder-decoder's source, Optimum's
    // encoder_hidden_states and cross-attention caches) is given by the
    // user once and read unchanged by every step; it must not grow with
    // the tokens.
    for (size_t d = 0; d < e.value("shape", json::array()).size(); ++d) {
      std::string dim = dimName(e, d);
      if (!dim.empty() && (dim == step || dim == pastSymbol))
        return {{"unsupported",
                 "input '" + name + "' grows with the tokens (its dimension " +
                     std::to_string(d) + " is '" + dim +
                     "'), but it is neither the tokens, the attention mask, "
                     "the positions nor a KV cache, so generation cannot "
                     "supply it"}};
    }
    fixed.push_back(name);
  }
  gen["cache"] = pairs;
  gen["fixed_inputs"] = fixed;
  return gen;
}

LogicalResult fail(ModuleOp where, const Twine &message) {
  return emitError(where.getLoc()) << message;
}

/// How many compilers run at once: MESHC_COMPILE_JOBS when set, else the
/// machine's cores.
FailureOr<unsigned> compileJobs(ModuleOp where) {
  std::optional<std::string> jobs =
      llvm::sys::Process::GetEnv("MESHC_COMPILE_JOBS");
  if (!jobs)
    return std::max(
        1u, llvm::heavyweight_hardware_concurrency().compute_thread_count());
  unsigned n = 0;
  if (StringRef(*jobs).getAsInteger(10, n) || n == 0)
    return fail(where, "MESHC_COMPILE_JOBS='" + *jobs +
                           "' is not a positive number of compiler jobs");
  return n;
}

/// Runs the compiler commands side by side, `width` at once; on a failure,
/// starts no more, waits for those running and reports the first failure's
/// output.
LogicalResult runTools(ModuleOp where,
                       ArrayRef<std::vector<std::string>> commands,
                       unsigned width, bool verbose) {
  struct Running {
    const std::vector<std::string> *argv;
    llvm::sys::ProcessInfo process;
    SmallString<128> log;
  };
  std::vector<Running> running;
  std::string firstError;
  auto finish = [&](Running &job) {
    std::string error;
    llvm::sys::ProcessInfo done =
        llvm::sys::Wait(job.process, std::nullopt, &error);
    auto text = llvm::MemoryBuffer::getFile(job.log);
    llvm::sys::fs::remove(job.log);
    if (done.ReturnCode == 0 || !firstError.empty())
      return;
    std::string output = text ? (*text)->getBuffer().str() : "";
    if (output.size() > 4000)
      output = output.substr(0, 4000) + "\n...";
    firstError = "'" + job.argv->front() + "' failed" +
                 (error.empty() ? "" : " (" + error + ")") +
                 " building a rank executable:\n" + output;
  };
  for (const std::vector<std::string> &argv : commands) {
    if (!firstError.empty())
      break;
    if (running.size() == width) {
      finish(running.front());
      running.erase(running.begin());
      if (!firstError.empty())
        break;
    }
    if (verbose)
      llvm::errs() << "meshc compile: " << llvm::join(argv, " ") << "\n";
    Running job{&argv, {}, {}};
    if (llvm::sys::fs::createTemporaryFile("meshc-cxx", "log", job.log)) {
      firstError = "cannot create a temporary file for the compiler log";
      break;
    }
    SmallVector<StringRef> args(argv.begin(), argv.end());
    std::optional<StringRef> redirects[] = {std::nullopt, StringRef(job.log),
                                            StringRef(job.log)};
    std::string error;
    bool failedToStart = false;
    job.process = llvm::sys::ExecuteNoWait(
        argv.front(), args, std::nullopt, redirects, 0, &error, &failedToStart);
    if (failedToStart) {
      llvm::sys::fs::remove(job.log);
      firstError = "'" + argv.front() + "' could not be started (" + error +
                   ") to build a rank executable";
      break;
    }
    running.push_back(std::move(job));
  }
  for (Running &job : running)
    finish(job);
  if (!firstError.empty())
    return fail(where, firstError);
  return success();
}

} // namespace

std::vector<std::string> BuildOptions::cudaArchitectures() {
  std::vector<std::string> archs;
  for (StringRef a : llvm::split(MESHC_CUDA_ARCHITECTURES, ';'))
    if (!a.empty())
      archs.push_back("sm_" + a.str());
  return archs;
}

std::string targetProblem(const BuildOptions &options) {
  if (options.target != Target::Cuda) {
    if (options.dtype == "f16")
      return "--dtype f16 needs --target cuda: the cpu target's kernels "
             "compute in f32 (--dtype bf16 keeps its weights in bf16; --emit "
             "sharded and --emit ranks take any --dtype)";
    return "";
  }
  if (!MESHC_HAVE_CUDA)
    return "this meshc was built without the CUDA toolkit (nvcc, cuBLASLt "
           "and NCCL were not found when it was configured), so it cannot "
           "build --target cuda executables; install the toolkit and rebuild "
           "meshc, or use --target cpu";
  std::vector<std::string> archs = BuildOptions::cudaArchitectures();
  if (!llvm::is_contained(archs, options.cudaArch))
    return "--cuda-arch " + options.cudaArch +
           ": the runtime's CUDA kernels are built for " +
           llvm::join(archs, ", ") + " only";
  return "";
}

namespace {

/// The compiler command that builds rank program `src` into `exe`.
std::vector<std::string> buildCommand(const BuildOptions &options,
                                      StringRef src, StringRef exe) {
  std::vector<std::string> argv;
  StringRef link;
  if (options.target == Target::Cuda) {
    // nvcc compiles the program (host code and the fused kernels, whose
    // bodies are __device__ lambdas) for one architecture and links the
    // runtime's CUDA half.
    argv = {MESHC_NVCC,
            "-std=c++17",
            "-O3",
            "--extended-lambda",
            "-arch=" + options.cudaArch,
            "-Xcompiler=-march=" + options.march,
            "-I" MESHC_RUNTIME_INCLUDE_DIR,
            src.str(),
            "-o",
            exe.str(),
            MESHC_RUNTIME_CUDA_LIBRARY};
    link = MESHC_RUNTIME_CUDA_LINK;
  } else {
    argv = {MESHC_CXX_COMPILER,
            "-std=c++17",
            "-O3",
            "-march=" + options.march,
            "-fopenmp",
            "-I" MESHC_RUNTIME_INCLUDE_DIR};
    for (StringRef flags : {MESHC_RANK_CXX_FLAGS, MESHC_RANK_LINK_FLAGS})
      for (StringRef flag : llvm::split(flags, ';'))
        if (!flag.empty())
          argv.push_back(flag.str());
    // The runtime headers precompiled for the default -march (the build's
    // MeshcRankPch): g++ falls back to the headers where its flags differ,
    // so only the default asks for it.
    if (options.march == "native" && *MESHC_RANK_PCH_HEADER &&
        llvm::sys::fs::exists(MESHC_RANK_PCH_HEADER ".gch"))
      argv.insert(argv.end(), {"-include", MESHC_RANK_PCH_HEADER});
    argv.insert(argv.end(),
                {src.str(), "-o", exe.str(), MESHC_RUNTIME_CPU_LIBRARY});
    link = MESHC_RUNTIME_CPU_LINK;
  }
  llvm::SmallSetVector<StringRef, 4> libraryDirs;
  for (StringRef lib : llvm::split(link, ';')) {
    if (lib.empty())
      continue;
    argv.push_back(lib.str());
    if (lib.ends_with(".so") && llvm::sys::path::is_absolute(lib))
      libraryDirs.insert(llvm::sys::path::parent_path(lib));
  }
  // The CUDA libraries need not be on the loader's path where ranks run.
  if (options.target == Target::Cuda)
    for (StringRef dir : libraryDirs)
      argv.push_back("-Xlinker=-rpath=" + dir.str());
  return argv;
}

} // namespace

/// "0, 1": the ranks that run `role`.
static std::string rankList(const RoleProgram &role) {
  return llvm::join(
      llvm::map_range(role.ranks, [](int64_t r) { return std::to_string(r); }),
      ", ");
}

/// The source of `role` for the options' target and bounds.
static FailureOr<EmittedProgram> emitRole(const RoleProgram &role,
                                          StringRef name, StringRef banner,
                                          ArrayRef<GroupAxes> groups,
                                          WeightShards &weights,
                                          const BuildOptions &options) {
  weights.setProductWeightsInBf16(options.bf16WeightsOnly());
  return emitRankProgram(role.module, name, groups, banner, weights,
                         options.bounds.empty() ? nullptr : &options.bounds,
                         options.target);
}

LogicalResult writeRankSources(ArrayRef<RoleProgram> roles,
                               ModuleOp ranksModule,
                               const BuildOptions &options, raw_ostream &os) {
  std::vector<GroupAxes> groups = collectGroups(ranksModule);
  for (auto [k, role] : llvm::enumerate(roles)) {
    std::string name = "role" + std::to_string(k);
    WeightShards weights;
    FailureOr<EmittedProgram> program = emitRole(
        role, name, "// ----- " + name + ": rank(s) " + rankList(role) + "\n",
        groups, weights, options);
    if (failed(program))
      return failure();
    os << program->source;
  }
  return success();
}

LogicalResult buildExecutables(ArrayRef<RoleProgram> roles,
                               ModuleOp ranksModule,
                               const BuildOptions &options) {
  namespace fs = llvm::sys::fs;
  namespace path = llvm::sys::path;
  std::string problem = targetProblem(options);
  if (!problem.empty())
    return fail(ranksModule, problem);
  SmallString<256> weightsDir(options.outputDir), srcDir(options.outputDir);
  path::append(weightsDir, "weights");
  path::append(srcDir, "src");
  for (StringRef dir :
       {StringRef(options.outputDir), weightsDir.str(), srcDir.str()})
    if (std::error_code ec = fs::create_directories(dir))
      return fail(ranksModule, "cannot create '" + dir + "': " + ec.message());

  std::vector<GroupAxes> groups = collectGroups(ranksModule);
  ModuleOp first = roles.front().module;
  auto grid = first.lookupSymbol<shard::GridOp>(kGridName);
  int64_t world = 1;
  for (int64_t d : grid.getShape())
    world *= d;

  json manifest;
  manifest["format"] = "meshc-manifest";
  manifest["format_version"] = 1;
  manifest["meshc_version"] = options.version;
  manifest["target"] = targetName(options.target).str();
  if (options.target == Target::Cuda) {
    manifest["cuda_arch"] = options.cudaArch;
    manifest["cuda_graph"] = !options.noCudaGraph;
  }
  if (!options.dtype.empty())
    manifest["dtype"] = options.dtype;
  manifest["overlap"] = !options.noOverlap;
  manifest["model"] = options.model;
  manifest["mesh"] = options.mesh;
  manifest["sequence_parallel"] = options.sequenceParallel;
  manifest["world_size"] = world;
  json axisNames = json::array();
  for (int64_t a = 0, e = grid.getShape().size(); a < e; ++a)
    axisNames.push_back(axisName(grid, a));
  manifest["grid"] = {{"shape", std::vector<int64_t>(grid.getShape().begin(),
                                                     grid.getShape().end())},
                      {"axes", axisNames},
                      {"numbering", "row-major"}};
  manifest["topology"] = {{"nodes", 1}};
  // Executables for a range of sizes: the largest size of each symbolic
  // dimension (the runtime checks the inputs against them).
  if (!options.bounds.empty()) {
    json symbols = json::object();
    for (const auto &entry : options.bounds)
      symbols[entry.getKey().str()] = {{"max", entry.getValue()}};
    // Least sizes the model's ops need (a sliding-window cache holds its
    // window; NodeContext::requireDimAtLeast), checked with the bounds.
    if (auto least =
            ranksModule->getAttrOfType<DictionaryAttr>("dfg.dim_minimums"))
      for (NamedAttribute entry : least) {
        std::string name = entry.getName().str();
        int64_t min = cast<IntegerAttr>(entry.getValue()).getInt();
        if (!symbols.contains(name))
          continue;
        int64_t max = symbols[name]["max"].get<int64_t>();
        if (max < min)
          return fail(ranksModule,
                      "dimension '" + name + "' is bounded at " + Twine(max) +
                          ", but the model needs at least " + Twine(min) +
                          " (raise its bound: --max-cache or --max-dim " +
                          name + "=N)");
        symbols[name]["min"] = min;
      }
    manifest["symbols"] = symbols;
  }
  json roleList = json::array();
  std::vector<std::string> rankRole(world);
  // For each input, how many roles do not read it.
  std::map<std::string, size_t> unreadBy;
  json inputs = json::array();
  std::map<std::string, json> outputs;
  std::vector<std::string> outputOrder;
  std::vector<std::string> sources;
  std::vector<std::vector<std::string>> commands;
  FailureOr<unsigned> jobs = compileJobs(ranksModule);
  if (failed(jobs))
    return failure();
  std::vector<CachePair> cache;
  bool progress = llvm::sys::Process::StandardErrIsDisplayed();

  for (auto [k, role] : llvm::enumerate(roles)) {
    std::string name = "role" + std::to_string(k);
    std::string ranks = rankList(role);
    std::string banner =
        "//===- " + name + ".cpp - generated by meshc " + options.version +
        " -----===//\n//\n// Rank program " + name + " of " + options.model +
        " on mesh " + options.mesh + ", run by rank(s) " + ranks +
        ".\n// Generated code: edit the model or meshc, not this file.\n//\n"
        "//===----------------------------------------------------------------"
        "------===//\n";
    WeightShards weights;
    FailureOr<EmittedProgram> program =
        emitRole(role, name, banner, groups, weights, options);
    if (failed(program))
      return failure();

    SmallString<256> src(srcDir), exe(options.outputDir), shard(weightsDir);
    path::append(src, name + (options.target == Target::Cuda ? ".cu" : ".cpp"));
    path::append(exe, name);
    path::append(shard, name + ".safetensors");
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(src, ec);
      if (ec)
        return fail(ranksModule, "cannot write '" + src + "': " + ec.message());
      os << program->source;
    }
    sources.push_back(src.str().str());

    auto written = weights.write(shard.str().str(), options.weightsDir,
                                 progress ? &llvm::errs() : nullptr);
    if (!written)
      return fail(ranksModule, llvm::toString(written.takeError()));

    commands.push_back(buildCommand(options, src, exe));

    for (int64_t r : role.ranks)
      rankRole[r] = name;
    json unread = json::array();
    for (const SignatureEntry &e : program->inputs)
      if (!e.read) {
        unread.push_back(e.name);
        ++unreadBy[e.name];
      }
    for (const CachePair &pair : program->cache)
      if (llvm::none_of(cache, [&](const CachePair &known) {
            return known.past == pair.past;
          }))
        cache.push_back(pair);
    roleList.push_back({{"name", name},
                        {"executable", name},
                        {"weights", "weights/" + name + ".safetensors"},
                        {"weights_bytes", written->first},
                        {"weights_xxh64", rt::hex64(written->second)},
                        {"weight_tensors", weights.entries().size()},
                        {"collective_hash", rt::hex64(program->collectiveHash)},
                        {"arena_bytes", program->arenaBytes},
                        {"unread_inputs", unread},
                        {"in_place_caches", program->inPlaceInputs},
                        {"ranks", role.ranks}});
    if (inputs.empty())
      for (const SignatureEntry &e : program->inputs)
        inputs.push_back(signatureJson(e, grid));
    for (const SignatureEntry &e : program->outputs) {
      auto [it, inserted] = outputs.emplace(e.name, signatureJson(e, grid));
      if (inserted) {
        outputOrder.push_back(e.name);
        it->second["ranks"] = json::array();
      }
      for (int64_t r : role.ranks)
        it->second["ranks"].push_back(r);
    }
  }
  if (failed(runTools(ranksModule, commands, *jobs, options.verbose)))
    return failure();
  json rankList = json::array();
  for (int64_t r = 0; r < world; ++r) {
    if (rankRole[r].empty())
      return fail(ranksModule, "rank " + Twine(r) + " runs no program");
    rankList.push_back({{"rank", r}, {"role", rankRole[r]}});
  }
  manifest["roles"] = roleList;
  manifest["ranks"] = rankList;
  manifest["inputs"] = inputs;
  // An input dimension whose name is an expression over the symbols
  // (`past_sequence_length + sequence_length`) is derived: the run checks
  // it against the expression instead of binding it.
  if (manifest.contains("symbols"))
    for (const json &input : inputs)
      for (const json &dim : input.value("dims", json::array()))
        if (dim.is_string() && !dim.get<std::string>().empty() &&
            !manifest["symbols"].contains(dim.get<std::string>()))
          manifest["symbols"][dim.get<std::string>()] = {{"derived", true}};
  json outputList = json::array();
  for (const std::string &name : outputOrder) {
    json &o = outputs[name];
    std::vector<int64_t> holders = o["ranks"].get<std::vector<int64_t>>();
    llvm::sort(holders);
    o["ranks"] = holders;
    outputList.push_back(o);
  }
  manifest["outputs"] = outputList;
  std::set<std::string> readByNone;
  for (const auto &[input, roleCount] : unreadBy)
    if (roleCount == roles.size())
      readByNone.insert(input);
  manifest["generate"] = generateSection(
      inputs, outputList,
      manifest.contains("symbols") ? manifest["symbols"] : json::object(),
      cache, readByNone, options.weightsDir, options.sequenceParallel);

  SmallString<256> manifestPath(options.outputDir);
  path::append(manifestPath, "manifest.json");
  std::error_code ec;
  llvm::raw_fd_ostream os(manifestPath, ec);
  if (ec)
    return fail(ranksModule,
                "cannot write '" + manifestPath + "': " + ec.message());
  os << manifest.dump(2) << "\n";
  if (!options.keepSources) {
    for (const std::string &s : sources)
      fs::remove(s);
    fs::remove(srcDir);
  }
  return success();
}

} // namespace meshc::codegen
