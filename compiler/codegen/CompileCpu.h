//===- CompileCpu.h - `meshc compile --target cpu` --------------*- C++ -*-===//
//
// Part of meshc. From the rank programs of a model (one `@role<k>` module per
// distinct program, as `--emit ranks` writes them) to a folder that runs:
//
//   out/role<k>                    one executable per distinct rank program
//   out/weights/role<k>.safetensors its weight shards (ranks of one role,
//                                  the dp replicas, hold the same ones)
//   out/manifest.json              mesh, rank -> executable + weights,
//                                  signature, collective hashes, checksums
//   out/src/role<k>.cpp            the generated C++ (with --keep-sources)
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_COMPILECPU_H
#define MESHC_COMPILER_CODEGEN_COMPILECPU_H

#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace meshc::codegen {

struct CpuCompileOptions {
  std::string outputDir = "out";
  std::string weightsDir; ///< the model's folder, where weight files are
  std::string model;      ///< the model's file name, for the manifest
  std::string mesh;       ///< "dp=2,tp=2", for the manifest
  std::string version;    ///< meshc's, for the manifest
  std::string march = "native";
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

/// Writes the folder. Fails with a diagnostic (an op the cpu target cannot
/// run) or an error line (a file that cannot be written, g++ failing).
mlir::LogicalResult compileCpu(llvm::ArrayRef<RoleProgram> roles,
                               mlir::ModuleOp ranksModule,
                               const CpuCompileOptions &options);

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_COMPILECPU_H
