//===- RankEmitter.h - C++ for one rank program -----------------*- C++ -*-===//
//
// Part of meshc. Turns one rank program (a `@role<k>` module of
// `meshc compile --emit ranks`) into a C++ translation unit against the
// runtime API (runtime/include/meshc/runtime/): one C++ function per pipeline
// stage function and one for `@main`'s schedule, every activation a view into
// one static arena planned by liveness (BufferPlan.h), every weight and
// constant a tensor of the rank's weight file (WeightShards.h), every
// collective a call on the rank communicator (MPI on the cpu target, NCCL on
// the cuda target), comments naming the ONNX nodes.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_RANKEMITTER_H
#define MESHC_COMPILER_CODEGEN_RANKEMITTER_H

#include "compiler/codegen/WeightShards.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace meshc::codegen {

/// A model input or output as one rank program sees it.
struct SignatureEntry {
  std::string name;
  mlir::RankedTensorType localType;
  mlir::Attribute sharding; ///< meshc.sharding, or null (replicated)
  /// Per dimension, what a dynamic one is: the symbolic dimension's name
  /// (inputs) or its expression (outputs); "" for static dimensions.
  std::vector<std::string> dims;
  /// Whether the program reads it (inputs; a pipeline stage reads only the
  /// inputs of its layers).
  bool read = true;
  /// Attention heads tp padded (kPaddedAttr): {axis, the model's size along
  /// it}, where the program's shape holds more; empty otherwise.
  std::vector<int64_t> padded;
};

/// A KV cache the program carries from step to step: output `present` is
/// input `past` extended along `axis`, where the input's length is symbol
/// `pastSymbol` and the output's is that plus symbol `newSymbol` (the tokens
/// of the step). Found from the shapes, whatever the names.
struct CachePair {
  std::string past, present;
  int64_t axis;
  std::string pastSymbol, newSymbol;
};

struct EmittedProgram {
  std::string source;
  uint64_t collectiveHash = 0;
  uint64_t arenaBytes = 0;
  std::vector<SignatureEntry> inputs, outputs;
  std::vector<CachePair> cache; ///< among the outputs this program returns
  /// Inputs an attention reads as its past key or value and whose cache
  /// `meshc generate` may hold in place (Program::cacheCapacity).
  std::vector<std::string> inPlaceInputs;
};

/// What a rank program is emitted for: one program text, whose kernels come
/// from meshc::rt::cpu (host memory) or meshc::rt::cuda (the rank's GPU).
enum class Target { Cpu, Cuda };
llvm::StringRef targetName(Target target);

/// The grid-axis sets every rank's groups are opened for, in one order for
/// all roles (opening a group is collective over the whole job).
using GroupAxes = llvm::SmallVector<int16_t, 2>;
std::vector<GroupAxes> collectGroups(mlir::ModuleOp ranksModule);

/// Emits `role` for `target`. Fails with a diagnostic on the op the target
/// cannot run. With `bounds` (the largest size of each symbolic dimension),
/// shapes are computed when the program runs and buffers are planned at the
/// bounds; without, every shape must be static.
mlir::FailureOr<EmittedProgram>
emitRankProgram(mlir::ModuleOp role, llvm::StringRef roleName,
                llvm::ArrayRef<GroupAxes> groups, llvm::StringRef banner,
                WeightShards &weights, const dfg::DimBindings *bounds = nullptr,
                Target target = Target::Cpu);

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_RANKEMITTER_H
