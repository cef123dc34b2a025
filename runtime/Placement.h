//===- Placement.h - Where a rank program's tensors live --------*- C++ -*-===//
//
// Part of meshc. Internal to the runtime: the one place where the program
// harness (program.cpp) differs between targets. The cpu target keeps
// everything in host memory (the arena is malloc'd, weights are read from
// the mapped file where they lie, inputs from their host buffers); the cuda
// target puts the arena, the weights and the inputs on the rank's GPU,
// routes the tensor collectives through NCCL and waits for the device at the
// end of each step. Each runtime library links exactly one implementation.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_PLACEMENT_H
#define MESHC_RUNTIME_PLACEMENT_H

#include <cstddef>

namespace meshc::rt {
class Comm;
class Program;
} // namespace meshc::rt

namespace meshc::rt::placement {

/// The target's name in messages ("cpu", "cuda").
const char *targetName();
/// Sets up the target for this rank once MPI is up (the cuda target picks
/// the node-local GPU and installs its collectives on `comm`), before any
/// group is opened.
void start(Comm &comm);
/// The activation arena, `bytes` long and 64-byte aligned.
void *allocateArena(std::size_t bytes);
/// Where kernels read the weights whose bytes lie at host address `mapped`:
/// the same address, or a device copy.
const void *placeWeights(const void *mapped, std::size_t bytes);
/// Where kernels read an input piece whose bytes lie at `host`.
void *placeInput(const void *host, std::size_t bytes);
/// A buffer kernels can read and write, `bytes` long, kept until stop()
/// (the KV caches and the per-step inputs of `meshc generate`).
void *allocateBuffer(std::size_t bytes, const char *what);
/// Copies `bytes` from host memory into a buffer of allocateBuffer.
void upload(void *placed, const void *host, std::size_t bytes);
/// Copies `bytes` between placed tensors (a present into its cache),
/// ordered after the work enqueued so far.
void copyPlaced(void *to, const void *from, std::size_t bytes);
/// Copies `bytes` of a tensor kernels wrote at `placed` to host memory.
void fetch(void *host, const void *placed, std::size_t bytes);
/// The end of one forward step (and of the start-up uploads): waits for the
/// work enqueued so far, reporting any failure naming `what`.
void synchronize(const char *what);
/// Whether this target can record a forward step once and replay it (the
/// cuda target's CUDA graphs; not the cpu target).
bool canRecord();
/// Records `body(program)` (enqueueing nothing) for replay(). False, after a
/// warning, when the step cannot be recorded: the caller runs it directly.
bool record(void (*body)(Program &), Program &program);
/// Enqueues the recorded step; synchronize() waits for it.
void replay();
/// Releases what start and the placements made.
void stop();

} // namespace meshc::rt::placement

#endif // MESHC_RUNTIME_PLACEMENT_H
