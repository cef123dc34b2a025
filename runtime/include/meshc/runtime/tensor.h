//===- tensor.h - Tensor views the runtime's kernels work on ----*- C++ -*-===//
//
// Part of meshc. A TensorRef is a non-owning view of a dense row-major tensor:
// a pointer (into a rank's arena, its mapped weight file or an input buffer),
// an element type and a shape. Generated code builds one per SSA value of its
// program, with the shape the compiler fixed, and hands them to kernels and
// collectives. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_TENSOR_H
#define MESHC_RUNTIME_TENSOR_H

#include "meshc/runtime/dtype.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace meshc::rt {

/// The highest rank a meshc tensor may have (meshc compile refuses a rank
/// program with more: RankEmitter.cpp; the sharding passes lift no tensor
/// past it).
inline constexpr int kMaxRank = 8;

/// A view of `shape[0] x ... x shape[rank-1]` elements of `dtype` at `data`,
/// dense and row-major. Rank 0 is a scalar (one element).
struct TensorRef {
  void *data = nullptr;
  DType dtype = DType::F32;
  int rank = 0;
  std::int64_t shape[kMaxRank] = {};

  std::int64_t numElements() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= shape[i];
    return n;
  }
  std::size_t byteSize() const {
    return static_cast<std::size_t>(numElements()) * byteWidth(dtype);
  }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// A view of `data` as `dtype` with `shape` (what generated code builds for
/// each arena buffer).
inline TensorRef view(void *data, DType dtype,
                      std::initializer_list<std::int64_t> shape) {
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  for (std::int64_t d : shape)
    t.shape[t.rank++] = d;
  return t;
}

/// The same bytes with another shape of equal element count (reshape,
/// squeeze and unsqueeze cost nothing).
inline TensorRef reshaped(const TensorRef &t,
                          std::initializer_list<std::int64_t> shape) {
  return view(t.data, t.dtype, shape);
}

} // namespace meshc::rt

#endif // MESHC_RUNTIME_TENSOR_H
