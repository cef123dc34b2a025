//===- BuildExecutables.h - `meshc compile` to executables -----*- C++ -*-===//
//
// Part of meshc. From the rank programs of a model (one `@role<k>` module per
// distinct program, as `--emit ranks` writes them) to a folder that runs:
//
//   out/role<k>                    one executable per distinct rank program
//   out/weights/role<k>.safetensors its weight shards (ranks of one role,
//                                  the dp replicas, hold the same ones)
//   out/manifest.json              mesh, rank -> executable + weights,
//                                  signature, collective hashes, checksums
//   out/src/role<k>.cpp            the generated C++ (with --keep-sources;
//                                  role<k>.cu for the cuda target)
//
// Both targets emit the same program text (RankEmitter); the cpu target builds
// it with g++ against libmeshc_rt_cpu, the cuda target with nvcc against
// libmeshc_rt_cuda.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_BUILDEXECUTABLES_H
#define MESHC_COMPILER_CODEGEN_BUILDEXECUTABLES_H

#include "compiler/codegen/RankEmitter.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace meshc::codegen {

struct BuildOptions {
  std::string outputDir = "out";
  std::string weightsDir; ///< the model's folder, where weight files are
  std::string model;      ///< the model's file name, for the manifest
  std::string mesh;       ///< "dp=2,tp=2", for the manifest
  bool sequenceParallel = false; ///< --sequence-parallel, for the manifest
  std::string version;    ///< meshc's, for the manifest
  std::string march = "native";
  /// --target: cpu (g++, OpenBLAS, MPI) or cuda (nvcc, cuBLASLt, NCCL).
  Target target = Target::Cpu;
  std::string cudaArch = "sm_90"; ///< --cuda-arch
  /// --dtype: the floating-point type the programs compute in ("" keeps the
  /// model's; f16 needs the cuda target). On the cpu target, bf16 keeps the
  /// weights that products read in bf16 and computes in f32
  /// (bf16WeightsOnly()).
  std::string dtype;
  /// --dtype bf16 on the cpu target: the graph stays f32; the rank programs
  /// store the weights of linear, matmul and embedding in bf16 and the
  /// kernels widen them as they read (WeightShards).
  bool bf16WeightsOnly() const {
    return target == Target::Cpu && dtype == "bf16";
  }
  /// --no-cuda-graph: repeated steps are never recorded as a CUDA graph.
  bool noCudaGraph = false;
  /// --no-overlap: every collective blocks where it stands (no
  /// meshc-lower-schedule-collectives).
  bool noOverlap = false;
  /// The architectures the runtime's CUDA half was built for ("sm_80").
  static std::vector<std::string> cudaArchitectures();
  bool keepSources = false;
  bool verbose = false; ///< print the compiler command lines
  /// The largest size of each symbolic dimension (--max-dim); empty when
  /// the rank programs have static shapes.
  dfg::DimBindings bounds;
};

/// One rank program to build, and the ranks that run it.
struct RoleProgram {
  mlir::ModuleOp module;
  std::vector<int64_t> ranks;
};

/// Why `options` cannot be built here ("" when it can): the cuda target
/// without the CUDA toolkit, an architecture the runtime lacks, or a 16-bit
/// --dtype for the cpu target.
std::string targetProblem(const BuildOptions &options);

/// Writes the folder. Fails with a diagnostic (an op the cpu target cannot
/// run) or an error line (a file that cannot be written, g++ failing).
mlir::LogicalResult buildExecutables(llvm::ArrayRef<RoleProgram> roles,
                                     mlir::ModuleOp ranksModule,
                                     const BuildOptions &options);

/// Writes the generated source of every rank program to `os` (C++ for the
/// cpu target, CUDA C++ for the cuda target), each under a `// ----- role<k>`
/// line, and builds nothing (`meshc compile --emit cpp`: what the golden tests
/// of test/compiler/codegen read).
mlir::LogicalResult writeRankSources(llvm::ArrayRef<RoleProgram> roles,
                                     mlir::ModuleOp ranksModule,
                                     const BuildOptions &options,
                                     llvm::raw_ostream &os);

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_BUILDEXECUTABLES_H
