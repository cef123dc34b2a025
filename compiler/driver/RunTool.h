//===- RunTool.h - `meshc run`: launch a compiled model ---------*- C++ -*-===//
//
// Part of meshc. Reads a compiled folder's manifest, checks the inputs and
// executables it names, and starts every rank through OpenMPI's mpirun
// (MPMD: each rank runs its role's executable) or Slurm's srun (a shell
// per task that runs its rank's executable), then reports the job's
// outcome. Outputs land as <output-dir>/<name>.npy. `meshc generate` starts
// the same job with the --generate-* options of the rank harness. SIGINT and
// SIGTERM to meshc are passed to the launcher, which stops every rank.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_RUNTOOL_H
#define MESHC_COMPILER_DRIVER_RUNTOOL_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace meshc {

/// What starts the ranks: OpenMPI's mpirun, or Slurm's srun (its tasks wire
/// up through PMIx, as Debian's OpenMPI is built).
enum class Launcher { Mpirun, Srun };

struct RunRequest {
  std::string folder;
  std::vector<std::pair<std::string, std::string>> inputs; ///< name, file
  std::string outputDir = ".";
  double collectiveTimeout = 300;
  unsigned threads = 0; ///< 0: cores / ranks
  Launcher launcher = Launcher::Mpirun;
  std::string launcherArgs; ///< --mpirun-args or --srun-args, split at spaces
  unsigned repeat = 1;      ///< > 1: benchmark, rank 0 prints the timings
  bool noCudaGraph = false; ///< replay no CUDA graph (cuda target)
};

/// Runs the job; returns the exit status for meshc.
int runCompiled(const RunRequest &request);

/// `meshc generate`: the prompts, the sampling and where the ids go.
struct GenerateRequest {
  RunRequest run; ///< folder, threads, timeout, launcher
  std::string promptIds, attentionMask, outputIds;
  int maxNewTokens = 0;
  std::vector<int64_t> stopTokens; ///< empty: the model's own (ignoreEos: none)
  bool ignoreEos = false;
  double temperature = -1; ///< < 0: not given
  int topK = 0;
  double topP = 1;
  uint64_t seed = 0;
  bool jsonl = false;
};

/// Checks the request against the manifest (a decoder, the prompts within
/// the vocabulary and the compiled bounds, the batch dividing over dp)
/// before any rank starts, then runs the job; returns meshc's exit status.
int generateCompiled(const GenerateRequest &request);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_RUNTOOL_H
