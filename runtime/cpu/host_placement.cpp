//===- host_placement.cpp - Tensors in host memory (cpu target) -----------===//
//
// Part of meshc. The cpu target's Placement.h: kernels and MPI collectives
// work on host memory, so weights are read where the mapped file holds them
// and inputs where they were loaded; only the arena is allocated.
//
//===----------------------------------------------------------------------===//
#include "runtime/Placement.h"

#include "meshc/runtime/error.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace meshc::rt::placement {
namespace {
std::vector<void *> arenas;
} // namespace

const char *targetName() { return "cpu"; }

void start(Comm &) {}

void *allocateArena(std::size_t bytes) {
  void *arena = nullptr;
  if (posix_memalign(&arena, 64, bytes ? bytes : 64) != 0)
    fatal("cannot allocate the " + std::to_string(bytes) +
          "-byte activation arena");
  arenas.push_back(arena);
  return arena;
}

const void *placeWeights(const void *mapped, std::size_t) { return mapped; }

void *placeInput(const void *host, std::size_t) {
  return const_cast<void *>(host);
}

void *allocateBuffer(std::size_t bytes, const char *what) {
  void *buffer = nullptr;
  if (posix_memalign(&buffer, 64, bytes ? bytes : 64) != 0)
    fatal("cannot allocate " + std::to_string(bytes) + " bytes for " + what);
  arenas.push_back(buffer);
  return buffer;
}

void upload(void *placed, const void *host, std::size_t bytes) {
  if (bytes)
    std::memcpy(placed, host, bytes);
}

void copyPlaced(void *to, const void *from, std::size_t bytes) {
  if (bytes)
    std::memcpy(to, from, bytes);
}

void fetch(void *host, const void *placed, std::size_t bytes) {
  if (bytes)
    std::memcpy(host, placed, bytes);
}

void synchronize(const char *) {}

// Kernels run on the calling thread as they are called: there is nothing to
// record.
bool canRecord() { return false; }

bool record(void (*)(Program &), Program &) { return false; }

void replay() { fatal("the cpu target records no forward step to replay"); }

void stop() {
  for (void *arena : arenas)
    std::free(arena);
  arenas.clear();
}

} // namespace meshc::rt::placement
