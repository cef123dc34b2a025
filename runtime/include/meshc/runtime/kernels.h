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

/// What the cpu target's generated code tells `linear` beyond the kernel
/// API's arguments:
/// - `constantWeight`: the weight is one of the program's weights, unchanged
///   at its address for the process's life, so a repacked copy of it may be
///   made once and reused (a transposed weight's product of several rows);
/// - an epilogue applied to the product in the pass that adds the bias:
///   `unary` (an activation, when `hasUnary`), then `binary` with `other`, a
///   tensor of the output's shape (a residual's add, a gate's multiply):
///   out = binary(unary(in . W + bias), other).
struct LinearOptions {
  bool constantWeight = false;
  bool hasUnary = false;
  UnaryOp unary = UnaryOp::Neg;
  const TensorRef *other = nullptr;
  BinaryOp binary = BinaryOp::Add;
};

/// linear with options: f32 weights (or bf16, --dtype bf16); the unary op
/// one of the f32 math ops, the binary op Add or Mul.
void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const LinearOptions &options,
            const TensorRef &out);

} // namespace meshc::rt::cpu

#endif // MESHC_RUNTIME_KERNELS_H
