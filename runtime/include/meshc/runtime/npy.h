//===- npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of meshc. Reads and writes the .npy format (versions 1.0-3.0,
// little-endian, C order) for meshc's element types: how executables take
// their inputs and write their outputs, and how tests exchange tensors with
// onnxruntime. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_NPY_H
#define MESHC_RUNTIME_NPY_H

#include "meshc/runtime/dtype.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::rt {

/// A tensor in host memory: element type, shape, dense row-major bytes.
struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t numElements() const;
};

/// The .npy `descr` of a dtype ("<f4", "<f2", "<i8", "<i4", "|b1"). NumPy has
/// no bfloat16, so bf16 tensors travel as their bits in uint16 ("<u2"), the
/// form onnx's numpy_helper gives them: a "<u2" file reads as bf16.
std::string npyDescr(DType dtype);

/// Reads `path`. On failure returns false and sets `error` to one line naming
/// the file and the problem (not .npy, Fortran order, big-endian, an element
/// type meshc does not handle, truncated data).
bool readNpy(const std::string &path, HostTensor &out, std::string &error);

/// Writes `tensor` to `path` (format 1.0). On failure returns false and sets
/// `error`.
bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error);

} // namespace meshc::rt

#endif // MESHC_RUNTIME_NPY_H
