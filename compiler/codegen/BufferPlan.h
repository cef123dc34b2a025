//===- BufferPlan.h - Static arena planning by liveness ---------*- C++ -*-===//
//
// Part of meshc. Places buffers with known sizes and live ranges at offsets
// of one arena so that buffers live at the same time never overlap, keeping
// the arena's peak small: greedy by decreasing size, each buffer at the
// lowest offset free during its whole live range (the classic offset-
// assignment heuristic of TFLite's and XLA's static planners).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_BUFFERPLAN_H
#define MESHC_COMPILER_CODEGEN_BUFFERPLAN_H

#include <cstdint>
#include <vector>

namespace meshc::codegen {

/// A buffer live from step `first` to step `last`, both included.
struct BufferRequest {
  std::uint64_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

struct BufferPlan {
  std::vector<std::uint64_t> offsets; ///< one per request, aligned
  std::uint64_t peak = 0;             ///< arena bytes the plan needs
};

/// Every offset is a multiple of `alignment` (a power of two).
BufferPlan planBuffers(const std::vector<BufferRequest> &requests,
                       std::uint64_t alignment = 64);

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_BUFFERPLAN_H
