//===- cuda_kernels.h - GPU kernels of the cuda target ----------*- C++ -*-===//
//
// Part of meshc. The kernels of kernel_api.inc on device memory, for the cuda
// target: every TensorRef points into the rank's GPU (its arena, its uploaded
// weights, its uploaded inputs). A call enqueues its work on the rank's
// stream and returns; host arrays it takes (perm, starts, steps, axes,
// values) are read before it returns. Element types as on the cpu target,
// with f16 and bf16 beside f32 for the floating-point kernels (accumulating
// in f32). GEMMs go through cuBLASLt; the rest is meshc's own CUDA. A
// data-dependent error (an index out of range) is recorded on the device
// and reported, naming the kernel, at the next synchronisation. No LLVM or
// MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_CUDA_KERNELS_H
#define MESHC_RUNTIME_CUDA_KERNELS_H

#include "meshc/runtime/tensor.h"

#include <cstdint>

namespace meshc::rt::cuda {

#include "meshc/runtime/kernel_api.inc"

} // namespace meshc::rt::cuda

#endif // MESHC_RUNTIME_CUDA_KERNELS_H
