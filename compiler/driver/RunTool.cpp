//===- RunTool.cpp - `meshc run`: launch a compiled model -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/RunTool.h"

#include "compiler/codegen/ToolchainConfig.h"
#include "compiler/driver/ReportError.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <map>
#include <unistd.h>

using namespace llvm;
using json = nlohmann::json;

namespace meshc {

namespace {
int fail(const Twine &msg) { return reportError("meshc run", msg); }
} // namespace

int runCompiled(const RunRequest &request) {
  SmallString<256> manifestPath(request.folder);
  sys::path::append(manifestPath, "manifest.json");
  auto text = MemoryBuffer::getFile(manifestPath);
  if (!text)
    return fail("cannot read '" + manifestPath +
                "': " + text.getError().message() +
                " (is this a folder written by 'meshc compile'?)");
  json m = json::parse((*text)->getBuffer().begin(), (*text)->getBuffer().end(),
                       nullptr,
                       /*allow_exceptions=*/false);
  if (!m.is_object() || m.value("format", "") != "meshc-manifest" ||
      !m["ranks"].is_array() || !m["roles"].is_array() ||
      !m["world_size"].is_number_integer())
    return fail("'" + manifestPath +
                "' is not a meshc manifest (written by 'meshc compile')");

  // Inputs: names the model has, all of them given, files readable (the
  // ranks check dtype and shape).
  std::map<std::string, std::string> given;
  for (const auto &[name, file] : request.inputs)
    given[name] = file;
  std::string names;
  std::map<std::string, bool> known;
  for (const json &in : m["inputs"]) {
    std::string name = in.value("name", "");
    known[name] = true;
    names += (names.empty() ? "" : ", ") + name;
    if (!given.count(name))
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

  int64_t world = m["world_size"].get<int64_t>();
  if (static_cast<int64_t>(m["ranks"].size()) != world)
    return fail("'" + manifestPath + "' lists " + Twine(m["ranks"].size()) +
                " ranks for a world of " + Twine(world));
  std::map<std::string, std::string> executables;
  for (const json &role : m["roles"]) {
    SmallString<256> exe(request.folder);
    sys::path::append(exe, role.value("executable", ""));
    if (!sys::fs::can_execute(exe))
      return fail("rank executable '" + exe +
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
  unsigned threads = request.threads;
  if (!threads)
    threads = std::max<unsigned>(
        1, llvm::hardware_concurrency().compute_thread_count() / world);
  if (request.noCudaGraph)
    rankArgs.push_back("--no-cuda-graph");
  if (request.repeat > 1) {
    rankArgs.push_back("--repeat");
    rankArgs.push_back(std::to_string(request.repeat));
  }
  rankArgs.push_back("--threads");
  rankArgs.push_back(std::to_string(threads));
  for (const auto &[name, file] : given) {
    rankArgs.push_back("--input");
    rankArgs.push_back(name + "=" + file);
  }

  // MPMD: consecutive ranks of one role share an app context.
  std::vector<std::string> argv = {MESHC_MPIRUN};
  if (geteuid() == 0)
    argv.push_back("--allow-run-as-root");
  argv.push_back("--oversubscribe");
  // OpenMPI binds each rank of a small job to one core, which would put all
  // of a rank's kernel threads on that core (2.1x slower on GPT-2-small,
  // bench/RESULTS.md); the OS places threads better. --mpirun-args can bind.
  argv.push_back("--bind-to");
  argv.push_back("none");
  for (StringRef extra : llvm::split(request.mpirunArgs, ' '))
    if (!extra.empty())
      argv.push_back(extra.str());
  int64_t r = 0;
  while (r < world) {
    std::string role = m["ranks"][r].value("role", "");
    if (!executables.count(role))
      return fail("rank " + Twine(r) + " has role '" + role +
                  "', which the manifest does not describe");
    int64_t n = 1;
    while (r + n < world && m["ranks"][r + n].value("role", "") == role)
      ++n;
    if (r)
      argv.push_back(":");
    argv.push_back("-np");
    argv.push_back(std::to_string(n));
    argv.push_back(executables[role]);
    argv.insert(argv.end(), rankArgs.begin(), rankArgs.end());
    r += n;
  }

  auto mpirun = sys::findProgramByName(MESHC_MPIRUN);
  if (!mpirun)
    return fail("cannot find '" MESHC_MPIRUN
                "' (OpenMPI's launcher; scripts/bootstrap.sh installs it)");
  SmallVector<StringRef> args(argv.begin(), argv.end());
  std::string error;
  int status =
      sys::ExecuteAndWait(*mpirun, args, std::nullopt, {}, 0, 0, &error);
  if (status < 0)
    return fail("cannot start mpirun: " + error);
  if (status != 0)
    return fail("the job of " + Twine(world) +
                " rank(s) failed (mpirun exit "
                "status " +
                Twine(status) + "); the rank's message is above");
  return 0;
}

} // namespace meshc
