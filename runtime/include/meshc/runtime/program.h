//===- program.h - The harness of a generated rank executable ---*- C++ -*-===//
//
// Part of meshc. Generated code describes its program in a ProgramInfo (role,
// grid, collective-sequence hash, arena size, weights, inputs, outputs) and
// runs its body between Program's constructor and finish():
//
//   int main(int argc, char **argv) {
//     meshc::rt::Program p(argc, argv, kInfo);   // start-up checks, loading
//     run(p);                                    // kernels + collectives
//     return p.finish();                         // outputs assembled, written
//   }
//
// The constructor parses the command line (--manifest, --input NAME=FILE,
// --output-dir, --collective-timeout, --threads, and the --generate-*
// options `meshc generate` passes), joins the MPI job and checks,
// before any computation, everything that could make ranks disagree or
// compute garbage: the world size against the manifest's mesh, that this rank
// runs the program the manifest gives it, that every rank's collective
// sequence hash is the one the manifest records, the weight file's size,
// checksum and tensors, and each input's name, dtype and shape. Each failure
// is one line naming the rank and the culprit, and a non-zero exit of the
// whole job. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_PROGRAM_H
#define MESHC_RUNTIME_PROGRAM_H

#include "meshc/runtime/comm.h"
#include "meshc/runtime/tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace meshc::rt {

/// A tensor the program reads or writes by name: a weight of its file, or
/// one of its inputs or outputs (the rank's local piece of it).
struct TensorSpec {
  const char *name;
  DType dtype;
  int rank;
  std::int64_t shape[kMaxRank];
};

/// A communication group: the ranks that differ only in these grid axes.
struct GroupSpec {
  int numAxes;
  std::int64_t axes[kMaxRank];
};

/// What generated code tells the harness about itself.
struct ProgramInfo {
  const char *role;             ///< "role0": the manifest's name for it
  std::uint64_t collectiveHash; ///< hash of its collective sequence
  std::size_t arenaBytes;       ///< the static buffer plan's peak
  int gridRank;
  const std::int64_t *grid; ///< grid shape, row-major rank numbering
  int numWeights;
  const TensorSpec *weights;
  int numInputs;
  const TensorSpec *inputs;
  int numOutputs;
  const TensorSpec *outputs;
  int numGroups; ///< the same list, in the same order, on every rank
  const GroupSpec *groups;
};

class Program {
public:
  Program(int argc, char **argv, const ProgramInfo &info);
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  Comm &comm() { return *comm_; }
  /// The Comm handle of group `index` of ProgramInfo::groups.
  int group(int index) const { return groupHandles_[index]; }
  /// The arena all activations live in (64-byte aligned).
  std::uint8_t *arena() { return arena_; }

  /// Weight `index` of ProgramInfo::weights, mapped from the rank's file.
  TensorRef weight(int index) const;
  /// The rank's piece of input `index` of ProgramInfo::inputs.
  TensorRef input(int index) const;
  /// Records output `index` (copied; assembled across ranks by finish()).
  void output(int index, const TensorRef &value);
  /// The capacity (positions per head) of the in-place KV cache whose past
  /// key and value are inputs `pastKey` and `pastValue`, when `meshc
  /// generate` holds them as one; 0 otherwise (attention then writes its
  /// presents, as for `meshc run`).
  std::int64_t cacheCapacity(int pastKey, int pastValue) const;

  /// Runs `body` (the generated program) once, or `--repeat N` times for
  /// benchmarks, timing each run between barriers; rank 0 prints the
  /// median and the fastest when repeated. Started by `meshc generate`
  /// (--generate-prompt), runs the token loop instead: a prefill step over
  /// the prompts, then one step per new token, the KV caches kept on the
  /// rank between steps (runtime/generate.cpp).
  void execute(void (*body)(Program &));

  /// Assembles every output from the ranks that hold its pieces, writes
  /// each as <output-dir>/<name>.npy on the writing rank, leaves the MPI job
  /// and returns the exit status.
  int finish();

  struct State;

private:
  void generate(void (*body)(Program &));

  const ProgramInfo &info_;
  Comm *comm_ = nullptr;
  std::uint8_t *arena_ = nullptr;
  std::unique_ptr<State> state_;
  std::vector<int> groupHandles_;
};

} // namespace meshc::rt

#endif // MESHC_RUNTIME_PROGRAM_H
