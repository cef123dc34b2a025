//===- kernels.h - CPU kernels of the cpu target ----------------*- C++ -*-===//
//
// Part of meshc. The kernels of kernel_api.inc on host memory, for the cpu
// target. Element types: floating-point kernels take f32; integer and bool
// tensors (i64, i32, bool) flow through the shape, compare, select, cast and
// gather-style kernels (cast also converts f16/bf16). GEMMs (matmul, linear,
// attention's products) go through OpenBLAS; the rest is meshc's own code,
// parallel with OpenMP. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_KERNELS_H
#define MESHC_RUNTIME_KERNELS_H

#include "meshc/runtime/tensor.h"

#include <cstdint>

namespace meshc::rt::cpu {

#include "meshc/runtime/kernel_api.inc"

} // namespace meshc::rt::cpu

#endif // MESHC_RUNTIME_KERNELS_H
