//===- RunTool.cpp - `meshc run`: launch a compiled model -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/RunTool.h"

#include "compiler/codegen/ToolchainConfig.h"
#include "compiler/driver/ReportError.h"
#include "meshc/runtime/error.h"
#include "meshc/runtime/npy.h"
#include "meshc/runtime/safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdlib>
#include <map>
#include <optional>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

using namespace llvm;
using json = nlohmann::json;

namespace meshc {

namespace {

int fail(const Twine &msg) { return reportError("meshc run", msg); }

/// The launcher's process while it runs, for the signal handler.
volatile sig_atomic_t childPid = 0;
volatile sig_atomic_t interrupted = 0;

void forwardSignal(int signal) {
  interrupted = signal;
  if (childPid > 0)
    ::kill(static_cast<pid_t>(childPid), SIGTERM);
}

/// A directory of one job's own under the system's temporary directory,
/// which mpirun gets as its TMPDIR, removed when the job ends. OpenMPI keeps
/// its session directory, $TMPDIR/ompi.<host>.<uid>, per host and user,
/// shared by all of that user's jobs: a job checks for it and then makes
/// it, and the job that ends last removes it. So a job that starts while
/// another ends can lose it between the two and stop before any rank starts
/// ("mkdir .../ompi.<host>.<uid>/pid.N: No such file or directory",
/// orte_session_dir failed; seen with `meshc run`s side by side), two that
/// start together race to make it, and a stale one of another owner or
/// kind stops every job. A job with a directory of its own shares none of
/// it. Ranks on other hosts keep their own TMPDIR (mpirun does not pass
/// its environment to remote daemons). Where no directory can be made, the
/// job runs with the environment as it is.
class JobTempDir {
public:
  JobTempDir() {
    SmallString<128> prefix;
    sys::path::system_temp_directory(/*erasedOnReboot=*/true, prefix);
    // A relative TMPDIR is made absolute: the ranks need not start where
    // meshc runs.
    (void)sys::fs::make_absolute(prefix);
    sys::path::append(prefix, "meshc-job");
    if (sys::fs::createUniqueDirectory(prefix, path_))
      path_.clear();
  }
  ~JobTempDir() {
    if (!path_.empty())
      (void)sys::fs::remove_directories(path_);
  }
  JobTempDir(const JobTempDir &) = delete;
  JobTempDir &operator=(const JobTempDir &) = delete;

  /// This process's environment with TMPDIR set to the directory; empty
  /// when there is no directory.
  std::vector<std::string> environment() const {
    std::vector<std::string> env;
    if (path_.empty())
      return env;
    for (char **var = environ; var && *var; ++var)
      if (!StringRef(*var).starts_with("TMPDIR="))
        env.emplace_back(*var);
    env.push_back(("TMPDIR=" + path_).str());
    return env;
  }

private:
  SmallString<128> path_;
};

/// Reads the manifest of `folder` into `m`; false (after reporting through
/// `failWith`) when it is missing or not meshc's.
template <typename Fail>
bool readManifest(StringRef folder, json &m, SmallString<256> &manifestPath,
                  Fail failWith) {
  manifestPath = folder;
  sys::path::append(manifestPath, "manifest.json");
  auto text = MemoryBuffer::getFile(manifestPath);
  if (!text) {
    failWith("cannot read '" + manifestPath +
             "': " + text.getError().message() +
             " (is this a folder written by 'meshc compile'?)");
    return false;
  }
  m = json::parse((*text)->getBuffer().begin(), (*text)->getBuffer().end(),
                  nullptr,
                  /*allow_exceptions=*/false);
  if (!m.is_object() || m.value("format", "") != "meshc-manifest" ||
      !m["ranks"].is_array() || !m["roles"].is_array() ||
      !m["world_size"].is_number_integer()) {
    failWith("'" + manifestPath +
             "' is not a meshc manifest (written by 'meshc compile')");
    return false;
  }
  return true;
}

/// Starts every rank of the compiled folder through mpirun (MPMD) or srun
/// (a shell that runs each task's program) with
/// `extra` after the harness's own options, waits, and reports the job's
/// outcome as `command`.
int launch(StringRef command, const RunRequest &request, const json &m,
           StringRef manifestPath, ArrayRef<std::string> extra) {
  auto failWith = [&](const Twine &msg) {
    return reportError(("meshc " + command).str(), msg);
  };
  int64_t world = m["world_size"].get<int64_t>();
  if (static_cast<int64_t>(m["ranks"].size()) != world)
    return failWith("'" + manifestPath + "' lists " + Twine(m["ranks"].size()) +
                    " ranks for a world of " + Twine(world));
  std::map<std::string, std::string> executables;
  for (const json &role : m["roles"]) {
    SmallString<256> exe(request.folder);
    sys::path::append(exe, role.value("executable", ""));
    if (!sys::fs::can_execute(exe))
      return failWith("rank executable '" + exe +
                      "' is missing or not executable (recompile with 'meshc "
                      "compile')");
    SmallString<256> absolute(exe);
    sys::fs::make_absolute(absolute);
    executables[role.value("name", "")] = absolute.str().str();
  }

  SmallString<256> manifestAbs(manifestPath);
  sys::fs::make_absolute(manifestAbs);
  std::vector<std::string> rankArgs = {
      "--manifest",           manifestAbs.str().str(),
      "--output-dir",         request.outputDir,
      "--collective-timeout", std::to_string(request.collectiveTimeout)};
  if (request.noCudaGraph)
    rankArgs.push_back("--no-cuda-graph");
  if (request.repeat > 1) {
    rankArgs.push_back("--repeat");
    rankArgs.push_back(std::to_string(request.repeat));
  }
  // Threads per rank: as given; else under mpirun this machine's cores
  // shared by the ranks, and under srun the CPUs Slurm gives each task
  // (OpenMP's default, so --threads is left out).
  bool srun = request.launcher == Launcher::Srun;
  if (request.threads || !srun) {
    unsigned threads = request.threads;
    if (!threads)
      threads = std::max<unsigned>(
          1, llvm::hardware_concurrency().compute_thread_count() / world);
    rankArgs.push_back("--threads");
    rankArgs.push_back(std::to_string(threads));
  }
  rankArgs.insert(rankArgs.end(), extra.begin(), extra.end());

  // Consecutive ranks of one role form one group: an app context of
  // mpirun's MPMD command line, a case of the shell srun runs.
  struct Group {
    int64_t first, count;
    std::string executable;
  };
  std::vector<Group> groups;
  for (int64_t r = 0; r < world;) {
    std::string role = m["ranks"][r].value("role", "");
    if (!executables.count(role))
      return failWith("rank " + Twine(r) + " has role '" + role +
                      "', which the manifest does not describe");
    int64_t n = 1;
    while (r + n < world && m["ranks"][r + n].value("role", "") == role)
      ++n;
    groups.push_back({r, n, executables[role]});
    r += n;
  }

  std::string launcher = srun ? "srun" : MESHC_MPIRUN;
  std::vector<std::string> argv = {launcher};
  if (srun) {
    // One command for every task: a shell that picks the task's program
    // by its rank (SLURM_PROCID) and runs it with the arguments, each
    // quoted, so that no path or argument is too long, too many or
    // mangled, as in srun's --multi-prog file (128 arguments at most, split
    // at spaces, %t and %o substituted). --mpi=pmix is how Debian's
    // OpenMPI, which the ranks link, wires up under srun. A task that fails
    // ends the step (--kill-on-bad-exit), as mpirun ends the job. Each task
    // runs on the CPUs Slurm gives it (one, unless --srun-args asks for
    // more with -c) and, unless --threads is given, as many threads as
    // those CPUs (OpenMP's default). --srun-args come last and can
    // override these.
    argv.insert(argv.end(), {"-n", std::to_string(world), "--mpi=pmix",
                             "--kill-on-bad-exit=1"});
    for (StringRef more : llvm::split(request.launcherArgs, ' '))
      if (!more.empty())
        argv.push_back(more.str());
    auto quote = [](StringRef s) {
      std::string q = "'";
      for (char ch : s)
        q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
      return q + "'";
    };
    std::string script = "case \"${SLURM_PROCID:?not started by srun}\" in\n";
    for (const Group &g : groups) {
      for (int64_t r = g.first; r < g.first + g.count; ++r)
        script += (r == g.first ? "  " : "|") + std::to_string(r);
      script += ") exec " + quote(g.executable);
      for (const std::string &arg : rankArgs)
        script += " " + quote(arg);
      script += " ;;\n";
    }
    script += "esac\necho \"meshc: srun task $SLURM_PROCID has no rank "
              "program (the job has " +
              std::to_string(world) + " ranks)\" >&2\nexit 1\n";
    argv.insert(argv.end(), {"/bin/sh", "-c", script});
  } else {
    if (geteuid() == 0)
      argv.push_back("--allow-run-as-root");
    argv.push_back("--oversubscribe");
    // OpenMPI binds each rank of a small job to one core, which would put all
    // of a rank's kernel threads on that core (2.1x slower on GPT-2-small,
    // bench/RESULTS.md); the OS places threads better. --mpirun-args can
    // bind.
    argv.push_back("--bind-to");
    argv.push_back("none");
    // Across hosts, a link that fails leaves mpirun waiting on a daemon it
    // can no longer reach: OpenMPI probes its daemons' connections only
    // after 300 s of silence, then 9 probes 20 s apart. Probing after 10 s,
    // 3 probes 5 s apart, ends the job within 25 s of the failure, naming
    // the host ("ORTE has lost communication with a remote daemon");
    // --mpirun-args can override these.
    const std::pair<const char *, const char *> keepalive[] = {
        {"oob_tcp_keepalive_time", "10"},
        {"oob_tcp_keepalive_intvl", "5"},
        {"oob_tcp_keepalive_probes", "3"}};
    for (auto [name, value] : keepalive)
      argv.insert(argv.end(), {"--mca", name, value});
    for (StringRef more : llvm::split(request.launcherArgs, ' '))
      if (!more.empty())
        argv.push_back(more.str());
    for (const Group &g : groups) {
      if (g.first)
        argv.push_back(":");
      argv.insert(argv.end(), {"-np", std::to_string(g.count), g.executable});
      argv.insert(argv.end(), rankArgs.begin(), rankArgs.end());
    }
  }

  auto program = sys::findProgramByName(launcher);
  if (!program)
    return failWith("cannot find '" + launcher + "' (" +
                    (srun ? "Slurm's launcher; is this a Slurm machine?"
                          : "OpenMPI's launcher; scripts/bootstrap.sh "
                            "installs it") +
                    ")");
  SmallVector<StringRef> args(argv.begin(), argv.end());
  std::optional<JobTempDir> tempDir;
  std::vector<std::string> envStrings;
  if (!srun) {
    tempDir.emplace();
    envStrings = tempDir->environment();
  }
  SmallVector<StringRef> envRefs(envStrings.begin(), envStrings.end());
  std::optional<ArrayRef<StringRef>> env;
  if (!envStrings.empty())
    env = ArrayRef<StringRef>(envRefs);
  std::string error;
  // Ctrl-C or a SIGTERM to meshc stops the job: mpirun and srun, on SIGTERM,
  // end every rank they started.
  struct sigaction action = {}, oldInt = {}, oldTerm = {};
  action.sa_handler = forwardSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &oldInt);
  sigaction(SIGTERM, &action, &oldTerm);
  interrupted = 0;
  sys::ProcessInfo child =
      sys::ExecuteNoWait(*program, args, env, {}, 0, &error);
  childPid = child.Pid;
  if (interrupted && child.Pid > 0)
    ::kill(child.Pid, SIGTERM);
  int status = -1;
  if (child.Pid > 0) {
    sys::ProcessInfo done = sys::Wait(child, std::nullopt, &error);
    status = done.ReturnCode;
  }
  childPid = 0;
  sigaction(SIGINT, &oldInt, nullptr);
  sigaction(SIGTERM, &oldTerm, nullptr);
  if (interrupted) {
    failWith("interrupted (" +
             Twine(interrupted == SIGINT ? "SIGINT" : "SIGTERM") +
             "): every rank was stopped");
    return 128 + interrupted;
  }
  if (status < 0 && child.Pid <= 0)
    return failWith("cannot start " + launcher + ": " + error);
  if (status != 0)
    return failWith("the job of " + Twine(world) + " rank(s) failed (" +
                    launcher + " exit status " + Twine(status) +
                    "); the launcher's and the ranks' messages are above");
  return 0;
}

/// Whether some role's program reads input `name` (the manifest's
/// unread_inputs). (Not llvm::is_contained on the JSON array: it would call
/// json's contains(), which looks for an object's key.)
bool readBySomeRole(const json &m, const std::string &name) {
  for (const json &role : m.value("roles", json::array())) {
    json unread = role.value("unread_inputs", json::array());
    if (std::find(unread.begin(), unread.end(), json(name)) == unread.end())
      return true;
  }
  return false;
}

} // namespace

int runCompiled(const RunRequest &request) {
  json m;
  SmallString<256> manifestPath;
  if (!readManifest(request.folder, m, manifestPath,
                    [](const Twine &msg) { fail(msg); }))
    return 1;

  // Inputs: names the model has, all of them given but those no rank reads
  // (the pasts of a merged decoder compiled without its cache branch),
  // files readable (the ranks check dtype and shape).
  std::map<std::string, std::string> given;
  for (const auto &[name, file] : request.inputs)
    given[name] = file;
  std::string names;
  std::map<std::string, bool> known;
  for (const json &in : m["inputs"]) {
    std::string name = in.value("name", "");
    known[name] = true;
    names += (names.empty() ? "" : ", ") + name;
  }
  for (const json &in : m["inputs"]) {
    std::string name = in.value("name", "");
    if (!given.count(name) && readBySomeRole(m, name))
      return fail("input '" + name + "' is missing (--input " + name +
                  "=FILE.npy); the model's inputs are: " + names);
  }
  for (const auto &[name, file] : given)
    if (!known.count(name))
      return fail("unknown input '" + name +
                  "'; the model's inputs are: " + names);

  if (std::error_code ec = sys::fs::create_directories(request.outputDir))
    return fail("cannot create output folder '" + request.outputDir +
                "': " + ec.message());

  std::vector<std::string> extra;
  for (const auto &[name, file] : given) {
    extra.push_back("--input");
    extra.push_back(name + "=" + file);
  }
  return launch("run", request, m, manifestPath, extra);
}

int generateCompiled(const GenerateRequest &request) {
  auto failGen = [](const Twine &msg) {
    return reportError("meshc generate", msg);
  };
  json m;
  SmallString<256> manifestPath;
  if (!readManifest(request.run.folder, m, manifestPath,
                    [&](const Twine &msg) { failGen(msg); }))
    return 1;
  if (!m.contains("generate") || !m["generate"].is_object())
    return failGen("'" + manifestPath +
                   "' was written by a meshc without generation; recompile "
                   "the model");
  const json &gen = m["generate"];
  if (gen.contains("unsupported"))
    return failGen("'" + request.run.folder + "' cannot generate: " +
                   gen["unsupported"].get<std::string>());
  int64_t vocab = gen.value("vocabulary", int64_t(0));

  // The options.
  if (request.maxNewTokens < 1)
    return failGen("--max-new-tokens " + Twine(request.maxNewTokens) +
                   " must be at least 1");
  if (request.topK < 0)
    return failGen("--top-k " + Twine(request.topK) + " must be 0 or more");
  if (!(request.topP > 0 && request.topP <= 1))
    return failGen("--top-p " + Twine(std::to_string(request.topP)) +
                   " must be in (0, 1]");
  if (request.temperature < 0 && request.temperature != -1)
    return failGen("--temperature " +
                   Twine(std::to_string(request.temperature)) +
                   " must be 0 (greedy) or more");
  std::vector<int64_t> stopTokens = request.stopTokens;
  if (stopTokens.empty() && !request.ignoreEos && gen.contains("stop_tokens"))
    stopTokens = gen["stop_tokens"].get<std::vector<int64_t>>();
  for (int64_t stop : request.stopTokens)
    if (stop < 0 || stop >= vocab)
      return failGen("--stop-token " + Twine(stop) +
                     " is outside the vocabulary (0 to " + Twine(vocab - 1) +
                     ")");

  // The inputs every step reads unchanged (an encoder-decoder's source):
  // each given once with --input, nothing else given so; the batch they
  // hold along the batch's dimension.
  std::string batchSymbol = gen.value("batch_symbol", "");
  std::map<std::string, std::string> fixedFiles;
  std::string fixedNames;
  for (const json &name : gen.value("fixed_inputs", json::array())) {
    fixedFiles[name.get<std::string>()] = "";
    fixedNames += (fixedNames.empty() ? "" : ", ") + name.get<std::string>();
  }
  for (const auto &[name, file] : request.run.inputs) {
    if (!fixedFiles.count(name))
      return failGen(
          "--input " + name + ": " +
          (fixedFiles.empty()
               ? Twine("this model takes no input other than those "
                       "generation makes each step (the tokens, the mask, "
                       "the positions and the KV caches)")
               : Twine("the inputs given with --input are those every step "
                       "reads unchanged: ") +
                     fixedNames));
    fixedFiles[name] = file;
  }
  std::string error;
  int64_t sourceBatch = -1;
  std::string sourceBatchFrom;
  for (const json &e : m["inputs"]) {
    std::string name = e.value("name", "");
    if (!fixedFiles.count(name))
      continue;
    const std::string &file = fixedFiles[name];
    if (file.empty() && !readBySomeRole(m, name))
      continue; // no role reads it: no file needed
    if (file.empty())
      return failGen("input '" + name +
                     "' is read unchanged by every step; give it with "
                     "--input " +
                     name + "=FILE.npy");
    rt::HostTensor t;
    if (!rt::readNpy(file, t, error))
      return failGen(error);
    // The ranks check the dtype, the shape and the bounds; the batch must
    // agree with the prompts' here.
    if (!t.shape.empty() && e.contains("dims") && !e["dims"].empty() &&
        e["dims"][0] == batchSymbol && !batchSymbol.empty()) {
      if (sourceBatch >= 0 && t.shape[0] != sourceBatch)
        return failGen("input '" + name + "' (" + file + ") holds " +
                       Twine(t.shape[0]) + " sequences, input '" +
                       sourceBatchFrom + "' " + Twine(sourceBatch));
      if (sourceBatch < 0) {
        sourceBatch = t.shape[0];
        sourceBatchFrom = name;
      }
    }
  }

  // The prompts (of an encoder-decoder, the decoder's: by default its
  // start token, one per sequence of the source) and the mask.
  rt::HostTensor prompt, mask;
  std::optional<int64_t> startToken;
  if (request.promptIds.empty()) {
    if (!gen.contains("decoder_start_token"))
      return failGen(
          Twine("--prompt-ids is required") +
          (gen.contains("fixed_inputs") && !gen["fixed_inputs"].empty()
               ? " (the model's folder declares no decoder_start_token_id "
                 "in generation_config.json or config.json to start the "
                 "decoder from)"
               : ""));
    if (sourceBatch < 0)
      return failGen("without --prompt-ids, the batch comes from the inputs "
                     "given with --input, but none of them has the batch's "
                     "dimension '" +
                     batchSymbol + "'");
    startToken = gen["decoder_start_token"].get<int64_t>();
    prompt.dtype = rt::DType::I64;
    prompt.shape = {sourceBatch, 1};
    prompt.bytes.resize(static_cast<size_t>(sourceBatch) * sizeof(int64_t));
    for (int64_t b = 0; b < sourceBatch; ++b)
      reinterpret_cast<int64_t *>(prompt.bytes.data())[b] = *startToken;
  } else if (!rt::readNpy(request.promptIds, prompt, error)) {
    return failGen(error);
  }
  if (prompt.shape.size() != 2 ||
      (prompt.dtype != rt::DType::I64 && prompt.dtype != rt::DType::I32) ||
      prompt.shape[0] < 1 || prompt.shape[1] < 1)
    return failGen("the prompt ids '" + request.promptIds +
                   "' must be a non-empty 2-D array of int64 or int32 "
                   "[batch, length], not " +
                   rt::safetensorsName(prompt.dtype) + " " +
                   rt::formatShape(prompt.shape));
  auto element = [](const rt::HostTensor &t, int64_t k) -> int64_t {
    return t.dtype == rt::DType::I64
               ? reinterpret_cast<const int64_t *>(t.bytes.data())[k]
               : reinterpret_cast<const int32_t *>(t.bytes.data())[k];
  };
  int64_t batch = prompt.shape[0], length = prompt.shape[1];
  if (sourceBatch >= 0 && sourceBatch != batch)
    return failGen("the prompt ids '" + request.promptIds + "' hold " +
                   Twine(batch) + " sequences, input '" + sourceBatchFrom +
                   "' " + Twine(sourceBatch));
  for (int64_t k = 0; k < batch * length; ++k)
    if (element(prompt, k) < 0 || element(prompt, k) >= vocab)
      return failGen("the prompt ids '" + request.promptIds + "' hold " +
                     Twine(element(prompt, k)) + " (sequence " +
                     Twine(k / length) + ", position " + Twine(k % length) +
                     "), outside the model's vocabulary of " + Twine(vocab));
  if (!request.attentionMask.empty()) {
    if (!rt::readNpy(request.attentionMask, mask, error))
      return failGen(error);
    if (mask.shape != prompt.shape ||
        (mask.dtype != rt::DType::I64 && mask.dtype != rt::DType::I32))
      return failGen("the attention mask '" + request.attentionMask + "' is " +
                     rt::safetensorsName(mask.dtype) + " " +
                     rt::formatShape(mask.shape) +
                     "; it must be int64 or int32 shaped as the prompt ids " +
                     rt::formatShape(prompt.shape));
    for (int64_t b = 0; b < batch; ++b) {
      int64_t ones = 0;
      for (int64_t j = 0; j < length; ++j) {
        int64_t v = element(mask, b * length + j);
        if (v != 0 && v != 1)
          return failGen("the attention mask '" + request.attentionMask +
                         "' holds " + Twine(v) + "; it must be 0 or 1");
        ones += v;
      }
      if (!ones)
        return failGen("the attention mask '" + request.attentionMask +
                       "' masks every token of sequence " + Twine(b));
      if (ones != length && !gen.contains("attention_mask"))
        return failGen("the attention mask '" + request.attentionMask +
                       "' pads sequence " + Twine(b) +
                       ", but the model takes no attention mask, so padding "
                       "would be attended to; give prompts of one length");
    }
  }

  // The compiled bounds and the mesh.
  const json symbols = m.contains("symbols") ? m["symbols"] : json::object();
  auto bound = [&](const std::string &symbol) -> int64_t {
    if (symbol.empty() || !symbols.contains(symbol))
      return -1;
    return symbols[symbol].value("max", int64_t(-1));
  };
  auto tooLong = [&](const Twine &what, int64_t size, const std::string &symbol,
                     const Twine &flag) {
    return failGen(what + " needs " + Twine(size) + " along '" + symbol +
                   "', but '" + request.run.folder +
                   "' was compiled for at "
                   "most " +
                   Twine(bound(symbol)) + " (meshc compile " + flag + ")");
  };
  const json *ids = nullptr, *maskEntry = nullptr;
  for (const json &e : m["inputs"]) {
    if (e.value("name", "") == gen.value("input_ids", ""))
      ids = &e;
    if (gen.contains("attention_mask") &&
        e.value("name", "") == gen.value("attention_mask", ""))
      maskEntry = &e;
  }
  if (!ids)
    return failGen("the manifest names no token input");
  int64_t fixedBatch = (*ids)["shape"][0].get<int64_t>();
  if (fixedBatch >= 0 && fixedBatch != batch)
    return failGen("the prompt ids hold " + Twine(batch) +
                   " sequences; the model was compiled for a batch of " +
                   Twine(fixedBatch));
  if (fixedBatch < 0 && bound(batchSymbol) >= 0 && batch > bound(batchSymbol))
    return tooLong("a batch of " + Twine(batch) + " sequences", batch,
                   batchSymbol, "--max-batch");
  int64_t replicas = 1;
  if ((*ids).contains("sharding"))
    for (const json &axis : (*ids)["sharding"][0])
      replicas *= m["grid"]["shape"][axis.get<int64_t>()].get<int64_t>();
  if (batch % replicas != 0)
    return failGen("the prompt ids hold " + Twine(batch) +
                   " sequences, which do not split over the " +
                   Twine(replicas) + " data-parallel replicas of mesh " +
                   m.value("mesh", std::string("?")) + " (give a multiple of " +
                   Twine(replicas) + ")");
  bool cached = !gen["cache"].empty();
  int64_t longest = length + request.maxNewTokens - 1;
  std::string step = gen.value("step_symbol", "");
  int64_t stepMax = bound(step);
  if (stepMax >= 0 && (cached ? length : longest) > stepMax)
    return tooLong(cached ? Twine("a prompt of ") + Twine(length) + " tokens"
                          : Twine("a prompt of ") + Twine(length) +
                                " tokens and " + Twine(request.maxNewTokens) +
                                " new ones (this model has no KV cache: every "
                                "step reads the whole sequence)",
                   cached ? length : longest, step, "--max-seq");
  if (cached) {
    std::string past = gen.value("past_symbol", "");
    if (bound(past) >= 0 && longest - 1 > bound(past))
      return tooLong("a prompt of " + Twine(length) + " tokens and " +
                         Twine(request.maxNewTokens) + " new ones",
                     longest - 1, past, "--max-cache");
  }
  if (maskEntry && maskEntry->contains("dims")) {
    std::string dim = (*maskEntry)["dims"][1].get<std::string>();
    if (bound(dim) >= 0 && longest > bound(dim))
      return tooLong("a prompt of " + Twine(length) + " tokens and " +
                         Twine(request.maxNewTokens) + " new ones",
                     longest, dim, "--max-dim " + dim + "=N");
  }

  // The output folder exists before any rank starts.
  StringRef parent = sys::path::parent_path(request.outputIds);
  if (!parent.empty() && !sys::fs::is_directory(parent))
    return failGen("cannot write '" + request.outputIds + "': folder '" +
                   parent + "' does not exist");

  std::vector<std::string> extra = {
      "--generate-output", request.outputIds, "--generate-max-new-tokens",
      std::to_string(request.maxNewTokens)};
  if (startToken) {
    extra.push_back("--generate-start-token");
    extra.push_back(std::to_string(*startToken));
    extra.push_back("--generate-batch");
    extra.push_back(std::to_string(batch));
  } else {
    extra.push_back("--generate-prompt");
    extra.push_back(request.promptIds);
  }
  for (const auto &[name, file] : fixedFiles) {
    if (file.empty())
      continue;
    extra.push_back("--input");
    extra.push_back(name + "=" + file);
  }
  if (!request.attentionMask.empty()) {
    extra.push_back("--generate-mask");
    extra.push_back(request.attentionMask);
  }
  for (int64_t stop : stopTokens) {
    extra.push_back("--generate-stop-token");
    extra.push_back(std::to_string(stop));
  }
  if (request.temperature >= 0) {
    extra.push_back("--generate-temperature");
    extra.push_back(std::to_string(request.temperature));
  }
  if (request.topK > 0) {
    extra.push_back("--generate-top-k");
    extra.push_back(std::to_string(request.topK));
  }
  if (request.topP < 1) {
    extra.push_back("--generate-top-p");
    extra.push_back(std::to_string(request.topP));
  }
  extra.push_back("--generate-seed");
  extra.push_back(std::to_string(request.seed));
  if (request.jsonl)
    extra.push_back("--generate-jsonl");
  return launch("generate", request.run, m, manifestPath, extra);
}

} // namespace meshc
