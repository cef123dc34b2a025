//===- kernels.cpp - Shared helpers of the CPU kernels --------------------===//
//
// Part of meshc. The iteration plans and dtype checks of KernelsInternal.h;
// the kernels themselves live in elementwise.cpp, shape.cpp, reduction.cpp,
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

void simplify(Plan &plan) {
  // Drop size-1 dimensions: they contribute nothing to any offset.
  int rank = 0;
  for (int d = 0; d < plan.rank; ++d) {
    if (plan.shape[d] == 1)
      continue;
    plan.shape[rank] = plan.shape[d];
    for (int k = 0; k < plan.numOperands; ++k)
      plan.strides[k][rank] = plan.strides[k][d];
    ++rank;
  }
  if (rank == 0) {
    plan.rank = 1;
    plan.shape[0] = 1;
    for (int k = 0; k < plan.numOperands; ++k)
      plan.strides[k][0] = 0;
    return;
  }
  // Merge dimension d into its inner neighbour when every operand steps
  // over the inner one exactly once per step of d.
  int merged = 0;
  for (int d = 1; d < rank; ++d) {
    bool mergeable = true;
    for (int k = 0; k < plan.numOperands; ++k)
      if (plan.strides[k][merged] != plan.strides[k][d] * plan.shape[d])
        mergeable = false;
    if (mergeable) {
      plan.shape[merged] *= plan.shape[d];
      for (int k = 0; k < plan.numOperands; ++k)
        plan.strides[k][merged] = plan.strides[k][d];
      continue;
    }
    ++merged;
    plan.shape[merged] = plan.shape[d];
    for (int k = 0; k < plan.numOperands; ++k)
      plan.strides[k][merged] = plan.strides[k][d];
  }
  plan.rank = merged + 1;
}

Plan broadcastPlan(const TensorRef &out, const TensorRef *const *inputs,
                   int numInputs) {
  Plan plan;
  plan.rank = out.rank;
  plan.numOperands = numInputs;
  for (int d = 0; d < out.rank; ++d)
    plan.shape[d] = out.shape[d];
  for (int k = 0; k < numInputs; ++k) {
    const TensorRef &in = *inputs[k];
    std::int64_t dense[kMaxRank];
    denseStrides(in, dense);
    const int offset = out.rank - in.rank;
    for (int d = 0; d < out.rank; ++d) {
      const int id = d - offset;
      plan.strides[k][d] = (id < 0 || in.shape[id] == 1) ? 0 : dense[id];
    }
  }
  simplify(plan);
  return plan;
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
