//===- kernels.cpp - Shared helpers of the CPU kernels --------------------===//
//
// Part of meshc. The dtype checks and the parallel memcpy of
// KernelsInternal.h (the iteration plans are runtime/ShapePlan.h's); the
// kernels themselves live in elementwise.cpp, shape.cpp, reduction.cpp,
// contraction.cpp, attention.cpp and normalization.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/KernelsInternal.h"

#include "meshc/runtime/error.h"

#include <string>

namespace meshc::rt::cpu::detail {

void unsupportedDType(const char *kernel, DType t) {
  fatal(std::string(kernel) + ": element type " + dtypeName(t) +
        " is not supported by the CPU kernels");
}

void requireF32(const TensorRef &t, const char *kernel) {
  if (t.dtype != DType::F32)
    fatal(std::string(kernel) + ": element type " + dtypeName(t.dtype) +
          " is not supported by the CPU kernels (f32 only; f16/bf16 programs "
          "need a GPU target)");
}

void requireIndices(const TensorRef &t, const char *kernel) {
  if (t.dtype != DType::I64 && t.dtype != DType::I32)
    fatal(std::string(kernel) + ": indices must be i64 or i32, not " +
          dtypeName(t.dtype));
}

void parallelMemcpy(void *dst, const void *src, std::size_t bytes) {
  constexpr std::size_t kBlock = std::size_t(1) << 20;
  if (bytes <= 2 * kBlock) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::int64_t blocks =
      static_cast<std::int64_t>((bytes + kBlock - 1) / kBlock);
  auto *d = static_cast<unsigned char *>(dst);
  const auto *s = static_cast<const unsigned char *>(src);
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kBlock;
    std::memcpy(d + begin, s + begin, std::min(kBlock, bytes - begin));
  }
}

} // namespace meshc::rt::cpu::detail
