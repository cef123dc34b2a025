//===- RunTool.h - `meshc run`: launch a compiled model ---------*- C++ -*-===//
//
// Part of meshc. Reads a compiled folder's manifest, checks the inputs and
// executables it names, and starts every rank through OpenMPI's mpirun
// (MPMD: each rank runs its role's executable), then reports the job's
// outcome. Outputs land as <output-dir>/<name>.npy.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_RUNTOOL_H
#define MESHC_COMPILER_DRIVER_RUNTOOL_H

#include <string>
#include <utility>
#include <vector>

namespace meshc {

struct RunRequest {
  std::string folder;
  std::vector<std::pair<std::string, std::string>> inputs; ///< name, file
  std::string outputDir = ".";
  double collectiveTimeout = 300;
  unsigned threads = 0; ///< 0: cores / ranks
  std::string mpirunArgs;
  unsigned repeat = 1;      ///< > 1: benchmark, rank 0 prints the timings
  bool noCudaGraph = false; ///< replay no CUDA graph (cuda target)
};

/// Runs the job; returns the exit status for meshc.
int runCompiled(const RunRequest &request);

} // namespace meshc

#endif // MESHC_COMPILER_DRIVER_RUNTOOL_H
