//===- dims.h - Sizes computed at run time ----------------------*- C++ -*-===//
//
// Part of meshc. Executables compiled for a range of sizes (`meshc compile
// --max-dim`) compute each tensor's shape when they run, from the sizes of
// the model's symbolic dimensions in its inputs. These are the helpers that
// generated code uses for that: the floor/ceil division and modulo of the
// compiler's symbolic expressions, ONNX's clamping of slice starts, and a
// view of an arena buffer that refuses a shape its planned capacity cannot
// hold (never a write past it), and the check that a dimension split inside
// the program divides.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_DIMS_H
#define MESHC_RUNTIME_DIMS_H

#include "meshc/runtime/error.h"
#include "meshc/runtime/tensor.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

namespace meshc::rt {

/// a floordiv b, a ceildiv b, a mod b (b > 0), as affine expressions define
/// them: rounding towards minus infinity, a non-negative remainder.
inline std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return -floorDiv(-a, b);
}
inline std::int64_t mod(std::int64_t a, std::int64_t b) {
  std::int64_t r = a % b;
  return r < 0 ? r + (b < 0 ? -b : b) : r;
}

/// Where an ONNX Slice with `start` and `step` starts along a dimension of
/// size `dim`: a negative start counts from the end; the result is clamped
/// to [0, dim] (to [0, dim - 1] when stepping backwards).
inline std::int64_t sliceStart(std::int64_t start, std::int64_t dim,
                               std::int64_t step) {
  if (start < 0)
    start += dim;
  return step > 0 ? std::clamp<std::int64_t>(start, 0, dim)
                  : std::clamp<std::int64_t>(start, 0, dim - 1);
}

/// A view of the arena buffer at `data`, planned for `capacity` bytes (the
/// shape at the compiled bounds); a shape that needs more is a fatal error
/// naming the value.
inline TensorRef boundedView(void *data, std::size_t capacity, DType dtype,
                             std::initializer_list<std::int64_t> shape,
                             const char *what) {
  TensorRef t = view(data, dtype, shape);
  if (t.byteSize() > capacity)
    fatal(std::string(what) + " needs " + std::to_string(t.byteSize()) +
          " bytes, more than the " + std::to_string(capacity) +
          " planned for the sizes this executable was compiled for");
  return t;
}

/// Checks that `size`, the size of the symbolic dimension `what` in this
/// run, splits into `pieces` equal pieces over the mesh (a program that
/// slices it inside, as sequence parallelism does).
inline void requireSplit(std::int64_t size, std::int64_t pieces,
                         const char *what) {
  if (size % pieces != 0)
    fatal("the dimension '" + std::string(what) + "' is " +
          std::to_string(size) + " in this run; the program splits it into " +
          std::to_string(pieces) +
          " equal pieces over the mesh (sequence parallelism), so it must be "
          "a multiple of " +
          std::to_string(pieces));
}

} // namespace meshc::rt

#endif // MESHC_RUNTIME_DIMS_H
