//===- Passes.h - meshc passes ----------------------------------*- C++ -*-===//
//
// Part of meshc. Declarations only; each pass lives in its own .cpp.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_PASSES_H
#define MESHC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tensor {
class TensorDialect;
} // namespace mlir::tensor

namespace meshc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace meshc

#endif // MESHC_PASSES_PASSES_H
