//===- program.cpp - The harness of a generated rank executable -----------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/program.h"
#include "runtime/ProgramInternal.h"

#include "meshc/runtime/error.h"
#include "meshc/runtime/npy.h"
#include "meshc/runtime/safetensors.h"
#include "runtime/Placement.h"

#include <nlohmann/json.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace meshc::rt {

namespace {

using json = nlohmann::json;
using Shape = std::vector<std::int64_t>;

Shape specShape(const TensorSpec &spec) {
  return Shape(spec.shape, spec.shape + spec.rank);
}

/// True if `got` is the manifest's `declared` shape, where -1 marks a
/// dimension given when the program runs (executables compiled for a range
/// of sizes).
bool sameShape(const Shape &declared, const Shape &got) {
  if (declared.size() != got.size())
    return false;
  for (std::size_t d = 0; d < got.size(); ++d)
    if (declared[d] >= 0 && declared[d] != got[d])
      return false;
  return true;
}

[[noreturn]] void usage(const std::string &message) {
  fatal(message + "\nusage: <rank executable> --manifest out/manifest.json "
                  "[--input NAME=FILE.npy ...] [--output-dir DIR] "
                  "[--collective-timeout SECONDS] [--threads N] [--repeat "
                  "N] [--no-cuda-graph]\n(normally started by "
                  "'meshc run out/ ...', 'meshc generate out/ ...' or "
                  "'mpirun', which pass these)");
}

std::uint64_t parseHex(const json &value) {
  return value.is_string()
             ? std::strtoull(value.get<std::string>().c_str(), nullptr, 16)
             : 0;
}

} // namespace

namespace detail {

/// The per-dimension grid axes of a manifest "sharding" entry.
std::vector<std::vector<std::int64_t>> parseSharding(const json &entry,
                                                     std::size_t rank) {
  std::vector<std::vector<std::int64_t>> axes(rank);
  if (entry.contains("sharding"))
    for (std::size_t d = 0; d < rank && d < entry["sharding"].size(); ++d)
      axes[d] = entry["sharding"][d].get<std::vector<std::int64_t>>();
  return axes;
}

std::int64_t coordinateOf(const Shape &grid, std::int64_t rank,
                          std::int64_t axis) {
  std::int64_t stride = 1;
  for (std::size_t a = axis + 1; a < grid.size(); ++a)
    stride *= grid[a];
  return (rank / stride) % grid[axis];
}

/// The manifest's "padded" of an input or output (attention heads tp
/// padded): {axis, the model's size along it}, or {-1, 0}.
std::pair<std::int64_t, std::int64_t> paddedAxis(const json &entry) {
  if (!entry.contains("padded"))
    return {-1, 0};
  return {entry["padded"].value("axis", std::int64_t(-1)),
          entry["padded"].value("size", std::int64_t(0))};
}

/// Where rank `rank`'s piece of a tensor of `global` shape, split as
/// `sharding`, starts, and its shape.
void pieceOf(const Shape &grid, std::int64_t rank, const Shape &global,
             const std::vector<std::vector<std::int64_t>> &sharding,
             Shape &offsets, Shape &local) {
  offsets.assign(global.size(), 0);
  local = global;
  for (std::size_t d = 0; d < global.size(); ++d) {
    std::int64_t index = 0, count = 1;
    for (std::int64_t axis : sharding[d]) {
      index = index * grid[axis] + coordinateOf(grid, rank, axis);
      count *= grid[axis];
    }
    local[d] = global[d] / count;
    offsets[d] = index * local[d];
  }
}

/// Copies the box `local` at `offsets` of a row-major tensor of `global`
/// shape to (toPiece) or from a dense buffer.
void copyBox(std::uint8_t *full, const Shape &global, std::uint8_t *piece,
             const Shape &offsets, const Shape &local, std::size_t width,
             bool toPiece) {
  std::size_t rank = global.size();
  if (rank == 0) {
    toPiece ? std::memcpy(piece, full, width) : std::memcpy(full, piece, width);
    return;
  }
  Shape strides(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d)
    strides[d - 1] = strides[d] * global[d];
  std::int64_t rows = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d)
    rows *= local[d];
  std::size_t run = static_cast<std::size_t>(local[rank - 1]) * width;
  Shape index(rank, 0);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t at = offsets[rank - 1];
    for (std::size_t d = 0; d + 1 < rank; ++d)
      at += (offsets[d] + index[d]) * strides[d];
    std::uint8_t *f = full + static_cast<std::size_t>(at) * width;
    std::uint8_t *p = piece + static_cast<std::size_t>(r) * run;
    toPiece ? std::memcpy(p, f, run) : std::memcpy(f, p, run);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < local[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace detail

using namespace detail;

Program::Program(int argc, char **argv, const ProgramInfo &info)
    : info_(info), state_(std::make_unique<State>()) {
  comm_ = &Comm::init(&argc, &argv);
  State &s = *state_;
  double timeout = 300;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage("option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--manifest")
      s.manifestPath = value();
    else if (arg == "--output-dir")
      s.outputDir = value();
    else if (arg == "--input") {
      std::string v = value();
      std::size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        usage("--input '" + v + "' is not NAME=FILE");
      s.inputFiles[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (arg == "--collective-timeout") {
      std::string v = value();
      char *end = nullptr;
      timeout = std::strtod(v.c_str(), &end);
      if (!end || *end || timeout <= 0)
        usage("--collective-timeout '" + v + "' is not a positive number");
    } else if (arg == "--repeat") {
      std::string v = value();
      s.repeat = std::atoi(v.c_str());
      if (s.repeat <= 0)
        usage("--repeat '" + v + "' is not a positive number");
    } else if (arg == "--no-cuda-graph") {
      s.cudaGraph = false;
    } else if (arg == "--generate-prompt") {
      s.generate.promptFile = value();
    } else if (arg == "--generate-start-token") {
      s.generate.startToken = std::atoll(value().c_str());
    } else if (arg == "--generate-batch") {
      s.generate.batch = std::atoll(value().c_str());
    } else if (arg == "--generate-mask") {
      s.generate.maskFile = value();
    } else if (arg == "--generate-output") {
      s.generate.outputFile = value();
    } else if (arg == "--generate-max-new-tokens") {
      s.generate.maxNewTokens = std::atoi(value().c_str());
    } else if (arg == "--generate-stop-token") {
      s.generate.stopTokens.push_back(std::atoll(value().c_str()));
    } else if (arg == "--generate-temperature") {
      s.generate.temperature = std::atof(value().c_str());
    } else if (arg == "--generate-top-k") {
      s.generate.topK = std::atoi(value().c_str());
    } else if (arg == "--generate-top-p") {
      s.generate.topP = std::atof(value().c_str());
    } else if (arg == "--generate-seed") {
      s.generate.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (arg == "--generate-jsonl") {
      s.generate.jsonl = true;
    } else if (arg == "--threads") {
      std::string v = value();
      threads = std::atoi(v.c_str());
      if (threads <= 0)
        usage("--threads '" + v + "' is not a positive number");
    } else {
      usage("unknown option '" + arg + "'");
    }
  }
  comm_->setTimeout(timeout);
  // The kernels run OpenBLAS single-threaded inside their own OpenMP
  // threads (runtime/cpu/contraction.cpp), so OpenMP's count is the one.
  if (threads > 0)
    omp_set_num_threads(threads);
  if (s.manifestPath.empty())
    usage("no --manifest given");

  // The manifest.
  std::ifstream in(s.manifestPath);
  if (!in)
    fatal("cannot read manifest '" + s.manifestPath +
          "': " + std::strerror(errno));
  s.manifest = json::parse(in, nullptr, /*allow_exceptions=*/false);
  const json &m = s.manifest;
  if (!m.is_object() || m.value("format", "") != "meshc-manifest" ||
      !m.contains("grid") || !m.contains("ranks") || !m.contains("roles"))
    fatal("'" + s.manifestPath +
          "' is not a meshc manifest (written by 'meshc compile')");
  std::size_t slash = s.manifestPath.find_last_of('/');
  s.manifestDir =
      slash == std::string::npos ? "." : s.manifestPath.substr(0, slash);

  // The mesh: world size, grid, this rank's role.
  Shape grid = m["grid"]["shape"].get<Shape>();
  if (grid != Shape(info.grid, info.grid + info.gridRank))
    fatal("the manifest's grid " + formatShape(grid) +
          " is not the one this program was compiled for " +
          formatShape(Shape(info.grid, info.grid + info.gridRank)));
  std::int64_t world = m.value("world_size", std::int64_t(0));
  if (world != comm_->size())
    fatal("the model was compiled for " + std::to_string(world) +
          " ranks (mesh " + m.value("mesh", std::string("?")) +
          ") but the job has " + std::to_string(comm_->size()) +
          " (use 'meshc run', or mpirun -np " + std::to_string(world) + ")");
  comm_->setGrid(grid);
  const json &me = m["ranks"][comm_->rank()];
  std::string role = me.value("role", "");
  const json *roleEntry = nullptr;
  for (const json &r : m["roles"])
    if (r.value("name", "") == role)
      roleEntry = &r;
  if (role != info.role || !roleEntry)
    fatal("this executable is the program of " + std::string(info.role) +
          ", but the manifest assigns rank " + std::to_string(comm_->rank()) +
          " " + role + " (executable '" +
          (roleEntry ? roleEntry->value("executable", "?") : "?") +
          "'); check the mpirun command line or use 'meshc run'");

  // Every rank runs the collective sequence the manifest records for it.
  std::vector<std::uint64_t> hashes =
      comm_->allGatherWorld(info.collectiveHash, "start-up check");
  for (std::size_t r = 0; r < hashes.size(); ++r) {
    std::string rRole = m["ranks"][r].value("role", "");
    for (const json &e : m["roles"])
      if (e.value("name", "") == rRole &&
          parseHex(e["collective_hash"]) != hashes[r])
        fatal("rank " + std::to_string(r) +
              " runs a program whose collective sequence (hash " +
              hex64(hashes[r]) + ") differs from the manifest's " + rRole +
              " (" + e.value("collective_hash", "?") +
              "): the folder mixes executables of different compilations");
  }

  // The target's device (the cuda target's GPU and collectives).
  placement::start(*comm_);

  // Weights.
  std::string weightsPath =
      s.manifestDir + "/" + roleEntry->value("weights", "");
  std::string error;
  if (!s.weights.open(weightsPath, roleEntry->value("weights_bytes", 0ull),
                      parseHex((*roleEntry)["weights_xxh64"]), error))
    fatal(error);
  for (int i = 0; i < info.numWeights; ++i) {
    const TensorSpec &w = info.weights[i];
    const void *data = s.weights.tensor(w.name, w.dtype, specShape(w), error);
    if (!data)
      fatal(error);
    s.weightData.push_back(data);
  }
  if (info.numWeights > 0) {
    // One placement for the file's data section: the weights keep their
    // offsets in it.
    const auto *mapped = static_cast<const std::uint8_t *>(s.weights.data());
    const auto *placed = static_cast<const std::uint8_t *>(
        placement::placeWeights(mapped, s.weights.dataBytes()));
    for (const void *&data : s.weightData)
      data = placed + (static_cast<const std::uint8_t *>(data) - mapped);
  }

  // Inputs: every name known, every model input given, dtype and shape as
  // the manifest says; then the rank's piece.
  std::map<std::string, const json *> declared;
  // The sizes of the symbolic dimensions, as the first input that has each
  // gives them; every input must agree, and stay within the compiled bound.
  std::map<std::string, std::int64_t> symbolSizes;
  const json noSymbols = json::object();
  const json &symbols = m.contains("symbols") ? m["symbols"] : noSymbols;
  // The KV caches' past length, which may be empty (a prompt's first step,
  // as generation runs it).
  const std::string pastSymbol =
      m.contains("generate") && m["generate"].is_object()
          ? m["generate"].value("past_symbol", std::string())
          : std::string();
  std::string names;
  for (const json &e : m["inputs"]) {
    declared[e.value("name", "")] = &e;
    names += (names.empty() ? "" : ", ") + e.value("name", std::string());
  }
  for (auto &[name, file] : s.inputFiles)
    if (!declared.count(name))
      fatal("unknown input '" + name + "'; the model's inputs are: " + names);
  // `meshc generate` makes the inputs of each step itself, but those every
  // step reads unchanged (an encoder-decoder's source), which are files. An
  // input this rank's program does not read may be left out.
  for (const json &name : roleEntry->value("unread_inputs", json::array()))
    s.unreadInputs.insert(name.get<std::string>());
  for (int i = 0; i < info.numInputs; ++i) {
    const TensorSpec &spec = info.inputs[i];
    auto it = s.inputFiles.find(spec.name);
    if (it == s.inputFiles.end() &&
        (s.generate.enabled() || s.unreadInputs.count(spec.name))) {
      s.inputs.emplace_back();
      continue;
    }
    if (it == s.inputFiles.end())
      fatal("input '" + std::string(spec.name) + "' is missing (--input " +
            spec.name + "=FILE.npy)");
    const json &entry = *declared.at(spec.name);
    HostTensor full;
    if (!readNpy(it->second, full, error))
      fatal(error);
    Shape declaredShape = entry["shape"].get<Shape>();
    Shape global = declaredShape;
    if (full.shape.size() == declaredShape.size())
      for (std::size_t d = 0; d < global.size(); ++d) {
        if (declaredShape[d] >= 0)
          continue;
        std::string dim = entry["dims"][d].get<std::string>();
        std::int64_t size = full.shape[d];
        global[d] = size;
        // A derived dimension (an expression over the symbols) is checked
        // against its expression by the program.
        if (symbols.contains(dim) && symbols[dim].value("derived", false))
          continue;
        std::int64_t max = symbols.contains(dim)
                               ? symbols[dim].value("max", std::int64_t(0))
                               : 0;
        // At least 1 (0 for the past length); more where the model's ops
        // need it (a sliding-window cache holds its window).
        std::int64_t least = dim == pastSymbol ? 0 : 1;
        std::int64_t min =
            symbols.contains(dim) ? symbols[dim].value("min", least) : least;
        std::string where = "input '" + std::string(spec.name) + "' (" +
                            it->second + ") has " + std::to_string(size) +
                            " along dimension " + std::to_string(d) + " ('" +
                            dim + "')";
        bool modelMin = symbols.contains(dim) && symbols[dim].contains("min");
        if (size < min || size > max)
          fatal(where + "; this executable takes " + std::to_string(min) +
                " to " + std::to_string(max) +
                (size > max ? " (meshc compile --max-dim " + dim + "=N)"
                 : modelMin ? std::string(" (the model needs at least ") +
                                  std::to_string(min) + ")"
                            : std::string(" (no dimension of an executable "
                                          "is empty but a KV cache's past)")));
        auto [known, added] = symbolSizes.emplace(dim, size);
        if (!added && known->second != size)
          fatal(where + ", but another input has " +
                std::to_string(known->second));
        global[d] = size;
      }
    if (full.dtype != spec.dtype)
      fatal("input '" + std::string(spec.name) + "' (" + it->second +
            ") holds " + std::string(safetensorsName(full.dtype)) +
            ", the model takes " + std::string(safetensorsName(spec.dtype)));
    // Attention heads tp padded: the model's tensor holds the first
    // `size` along `axis`, the program's zeros after them.
    auto [padAxis, padSize] = paddedAxis(entry);
    Shape modelShape = global, modelDeclared = declaredShape;
    if (padAxis >= 0 && padAxis < static_cast<std::int64_t>(global.size())) {
      modelShape[padAxis] = padSize;
      modelDeclared[padAxis] = padSize;
    }
    if (full.shape != modelShape)
      fatal("input '" + std::string(spec.name) + "' (" + it->second +
            ") has shape " + formatShape(full.shape) +
            ", the model was compiled for " + formatShape(modelDeclared));
    if (modelShape != global) {
      HostTensor padded;
      padded.dtype = full.dtype;
      padded.shape = global;
      padded.bytes.assign(static_cast<std::size_t>(padded.numElements()) *
                              byteWidth(full.dtype),
                          0);
      copyBox(padded.bytes.data(), global, full.bytes.data(),
              Shape(global.size(), 0), modelShape, byteWidth(full.dtype),
              /*toPiece=*/false);
      full = std::move(padded);
    }
    auto inputSharding = parseSharding(entry, global.size());
    for (std::size_t d = 0; d < global.size(); ++d) {
      // A size given at run time must split evenly over its axes.
      std::int64_t count = 1;
      for (std::int64_t axis : inputSharding[d])
        count *= grid[axis];
      if (declaredShape[d] < 0 && global[d] % count != 0)
        fatal("input '" + std::string(spec.name) + "' (" + it->second +
              ") has " + std::to_string(global[d]) + " along dimension " +
              std::to_string(d) + " ('" + entry["dims"][d].get<std::string>() +
              "'), which does not split into " + std::to_string(count) +
              " equal pieces over the mesh");
    }
    Shape offsets, local;
    pieceOf(grid, comm_->rank(), global, inputSharding, offsets, local);
    HostTensor piece;
    piece.dtype = full.dtype;
    piece.shape = local;
    piece.bytes.resize(static_cast<std::size_t>(piece.numElements()) *
                       byteWidth(piece.dtype));
    copyBox(full.bytes.data(), global, piece.bytes.data(), offsets, local,
            byteWidth(full.dtype), /*toPiece=*/true);
    if (!sameShape(specShape(spec), local))
      fatal("input '" + std::string(spec.name) + "': this rank's piece is " +
            formatShape(local) + ", the program expects " +
            formatShape(specShape(spec)));
    s.inputs.push_back(std::move(piece));
  }
  s.outputs.resize(info.numOutputs);
  s.produced.resize(info.numOutputs);
  s.outputSet.assign(info.numOutputs, false);

  for (int g = 0; g < info.numGroups; ++g)
    groupHandles_.push_back(comm_->openGroup(std::vector<std::int64_t>(
        info.groups[g].axes, info.groups[g].axes + info.groups[g].numAxes)));

  // Fault injection for meshc's own tests (test/e2e/faults.test): a rank
  // that dies, or stalls, after the start-up checks.
  if (const char *kill = std::getenv("MESHC_FAULT_KILL_RANK"))
    if (std::atoi(kill) == comm_->rank())
      std::raise(SIGKILL);
  if (const char *stall = std::getenv("MESHC_FAULT_STALL_RANK"))
    if (std::atoi(stall) == comm_->rank())
      for (;;)
        pause();

  for (std::size_t i = 0; i < s.inputs.size(); ++i) {
    const HostTensor &piece = s.inputs[i];
    bool absent = piece.bytes.empty() &&
                  !s.inputFiles.count(info.inputs[i].name);
    s.inputData.push_back(
        absent ? nullptr
               : placement::placeInput(piece.bytes.data(), piece.bytes.size()));
  }
  s.inputSymbolSizes = std::move(symbolSizes);
  arena_ =
      static_cast<std::uint8_t *>(placement::allocateArena(info.arenaBytes));
  placement::synchronize("loading the weights and inputs");
}

Program::~Program() { placement::stop(); }

TensorRef Program::weight(int index) const {
  const TensorSpec &spec = info_.weights[index];
  TensorRef t;
  t.data = const_cast<void *>(state_->weightData[index]);
  t.dtype = spec.dtype;
  t.rank = spec.rank;
  std::memcpy(t.shape, spec.shape, sizeof(t.shape));
  return t;
}

TensorRef Program::input(int index) const {
  const HostTensor &h = state_->inputs[index];
  TensorRef t;
  t.data = state_->inputData[index];
  t.dtype = h.dtype;
  t.rank = static_cast<int>(h.shape.size());
  for (int d = 0; d < t.rank; ++d)
    t.shape[d] = h.shape[d];
  return t;
}

std::int64_t Program::cacheCapacity(int pastKey, int pastValue) const {
  const std::vector<std::int64_t> &c = state_->cacheCapacity;
  if (pastKey < 0 || pastValue < 0 ||
      static_cast<std::size_t>(std::max(pastKey, pastValue)) >= c.size() ||
      c[pastKey] != c[pastValue])
    return 0;
  return c[pastKey];
}

void Program::output(int index, const TensorRef &value) {
  // Outputs are the operands of the program's return, so nothing writes
  // their buffers after this: they are fetched once the last step is done,
  // and a timed step (--repeat) leaves its results where it computed them.
  state_->produced[index] = value;
  state_->outputSet[index] = true;
}

void Program::execute(void (*body)(Program &)) {
  State &s = *state_;
  if (s.generate.enabled())
    return generate(body);
  int n = s.repeat;
  // Repeated steps on a target that can record one (the cuda target's CUDA
  // graphs): the first runs directly (it sizes the collectives' buffers and
  // warms the GEMM heuristics), the second is recorded, and every later one
  // replays the recording. Inputs are fixed for the run, so every step has
  // the same shapes.
  bool record = n > 1 && s.cudaGraph && s.manifest.value("cuda_graph", true) &&
                placement::canRecord();
  bool recorded = false;
  std::vector<double> times;
  for (int i = 0; i < n; ++i) {
    if (n > 1)
      comm_->barrier("benchmark start");
    auto start = std::chrono::steady_clock::now();
    if (record && i > 0 && !recorded)
      recorded = record = placement::record(body, *this);
    if (recorded)
      placement::replay();
    else
      body(*this);
    // Generated code waits for every collective it starts.
    if (comm_->inFlight() != 0)
      fatal("the forward step of " + std::string(info_.role) + " left " +
            std::to_string(comm_->inFlight()) +
            " collective(s) started and never waited for");
    placement::synchronize("the forward step");
    if (n > 1)
      comm_->barrier("benchmark stop");
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  if (n > 1 && comm_->rank() == 0) {
    std::sort(times.begin(), times.end());
    std::printf("meshc: %d runs of %s: median %.3f ms, fastest %.3f ms%s\n", n,
                info_.role, times[times.size() / 2], times.front(),
                recorded ? " (CUDA graph)" : "");
    std::fflush(stdout);
  }
  for (int i = 0; i < info_.numOutputs; ++i) {
    if (!s.outputSet[i])
      continue;
    const TensorRef &value = s.produced[i];
    HostTensor &h = s.outputs[i];
    h.dtype = value.dtype;
    h.shape.assign(value.shape, value.shape + value.rank);
    h.bytes.resize(value.byteSize());
    placement::fetch(h.bytes.data(), value.data, h.bytes.size());
  }
}

int Program::finish() {
  State &s = *state_;
  if (s.generate.enabled()) {
    std::string error;
    if (s.writesGenerated && !writeNpy(s.generate.outputFile, s.generated, error))
      fatal(error);
    Comm::finalize();
    return 0;
  }
  const Shape &grid = comm_->grid();
  std::int64_t me = comm_->rank();
  int tag = 0;
  for (const json &entry : s.manifest["outputs"]) {
    ++tag;
    std::string name = entry.value("name", "");
    Shape global = entry["shape"].get<Shape>();
    auto sharding = parseSharding(entry, global.size());
    std::vector<std::int64_t> holders =
        entry["ranks"].get<std::vector<std::int64_t>>();
    if (holders.empty())
      continue;
    int index = -1;
    for (int i = 0; i < info_.numOutputs; ++i)
      if (name == info_.outputs[i].name)
        index = i;
    if (std::find(global.begin(), global.end(), -1) != global.end()) {
      // Sizes given at run time: a holder's piece times the number of
      // pieces along each dimension; ranks that hold no piece take no part.
      if (std::find(holders.begin(), holders.end(), me) == holders.end())
        continue;
      if (index < 0 || !s.outputSet[index])
        fatal("output '" + name + "' was never computed");
      for (std::size_t d = 0; d < global.size(); ++d) {
        if (global[d] >= 0)
          continue;
        global[d] = s.outputs[index].shape[d];
        for (std::int64_t axis : sharding[d])
          global[d] *= grid[axis];
      }
    }
    // The lowest rank holding each distinct piece sends it; the lowest
    // holder of all writes the file.
    std::map<Shape, std::int64_t> senders;
    for (std::int64_t r : holders) {
      Shape offsets, local;
      pieceOf(grid, r, global, sharding, offsets, local);
      senders.emplace(offsets, r);
    }
    std::int64_t writer = holders.front();
    Shape offsets, local;
    pieceOf(grid, me, global, sharding, offsets, local);
    std::string what = "assembling output '" + name + "'";
    if (me != writer) {
      if (index >= 0 && senders.at(offsets) == me) {
        if (!s.outputSet[index])
          fatal("output '" + name + "' was never computed");
        const HostTensor &h = s.outputs[index];
        comm_->sendBytes(static_cast<int>(writer), h.bytes.data(),
                         h.bytes.size(), tag, what.c_str());
      }
      continue;
    }
    if (index < 0 || !s.outputSet[index])
      fatal("output '" + name + "' was never computed");
    HostTensor full;
    full.dtype = s.outputs[index].dtype;
    full.shape = global;
    std::size_t width = byteWidth(full.dtype);
    full.bytes.resize(static_cast<std::size_t>(full.numElements()) * width);
    std::vector<std::uint8_t> buffer;
    for (auto &[pieceOffsets, sender] : senders) {
      Shape o, l;
      pieceOf(grid, sender, global, sharding, o, l);
      std::int64_t n = 1;
      for (std::int64_t d : l)
        n *= d;
      std::uint8_t *data;
      if (sender == me) {
        data = s.outputs[index].bytes.data();
      } else {
        buffer.resize(static_cast<std::size_t>(n) * width);
        comm_->recvBytes(static_cast<int>(sender), buffer.data(), buffer.size(),
                         tag, what.c_str());
        data = buffer.data();
      }
      copyBox(full.bytes.data(), global, data, o, l, width,
              /*toPiece=*/false);
    }
    // Attention heads tp padded: the model's output is the first `size`
    // along `axis`.
    if (auto [padAxis, padSize] = paddedAxis(entry);
        padAxis >= 0 && padAxis < static_cast<std::int64_t>(global.size())) {
      HostTensor trimmed;
      trimmed.dtype = full.dtype;
      trimmed.shape = global;
      trimmed.shape[padAxis] = padSize;
      trimmed.bytes.resize(static_cast<std::size_t>(trimmed.numElements()) *
                           width);
      copyBox(full.bytes.data(), global, trimmed.bytes.data(),
              Shape(global.size(), 0), trimmed.shape, width,
              /*toPiece=*/true);
      full = std::move(trimmed);
    }
    if (mkdir(s.outputDir.c_str(), 0777) != 0 && errno != EEXIST)
      fatal("cannot create output folder '" + s.outputDir +
            "': " + std::strerror(errno));
    std::string path = s.outputDir + "/" + name + ".npy";
    std::string error;
    if (!writeNpy(path, full, error))
      fatal(error);
  }
  Comm::finalize();
  return 0;
}

} // namespace meshc::rt
