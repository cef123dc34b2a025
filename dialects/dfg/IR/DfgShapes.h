//===- DfgShapes.h - Shape rules of dfg ops ---------------------*- C++ -*-===//
//
// Part of meshc. The shape arithmetic behind dfg's verifiers and shape
// inference, as plain functions over dimension lists so that unit tests and
// later passes (import, sharding) use exactly the rules the verifiers enforce.
// Dynamic dimensions are kDynamic (equal to mlir::ShapedType::kDynamic).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGSHAPES_H
#define MESHC_DIALECTS_DFG_IR_DFGSHAPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <limits>
#include <string>

namespace meshc::dfg {

/// A dimension whose size is not known at compile time.
inline constexpr int64_t kDynamic = std::numeric_limits<int64_t>::min();

using Shape = llvm::SmallVector<int64_t, 6>;

/// "2x?x64" (a scalar prints as "scalar").
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// ONNX multidirectional (numpy) broadcasting of two shapes.
llvm::Expected<Shape> broadcastShapes(llvm::ArrayRef<int64_t> lhs,
                                      llvm::ArrayRef<int64_t> rhs);

/// numpy.matmul: batch dimensions broadcast, 1-D operands promoted and the
/// promoted dimension dropped again.
llvm::Expected<Shape> matmulShape(llvm::ArrayRef<int64_t> lhs,
                                  llvm::ArrayRef<int64_t> rhs);

/// ONNX Reshape (allowzero = 0): 0 copies the input dimension, -1 is inferred.
llvm::Expected<Shape> reshapeShape(llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> spec);

/// Result dimension i is input dimension perm[i].
llvm::Expected<Shape> transposeShape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> perm);

/// Normalises `axes` (negative counts from the back) against `rank`; fails
/// on an axis out of [-rank, rank) or a repeated axis. Sorted on success.
llvm::Expected<Shape> normalizeAxes(llvm::ArrayRef<int64_t> axes, int64_t rank);

/// ONNX Unsqueeze: `axes` index the result (rank + axes.size()).
llvm::Expected<Shape> unsqueezeShape(llvm::ArrayRef<int64_t> input,
                                     llvm::ArrayRef<int64_t> axes);

/// ONNX Squeeze with explicit axes: each must be 1 (or dynamic).
llvm::Expected<Shape> squeezeShape(llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> axes);

/// ONNX Concat: equal ranks, equal dimensions off `axis`, summed on it.
llvm::Expected<Shape>
concatShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs, int64_t axis);

/// ONNX Gather: data[:axis] + indices + data[axis+1:].
llvm::Expected<Shape> gatherShape(llvm::ArrayRef<int64_t> data,
                                  llvm::ArrayRef<int64_t> indices,
                                  int64_t axis);

/// ONNX GatherND: `indices[:-1] + data[batchDims + k:]` with k the (static)
/// last dimension of `indices`; an error when k is dynamic or out of
/// [1, rank(data) - batchDims], or the batch dimensions disagree.
llvm::Expected<Shape> gatherNDShape(llvm::ArrayRef<int64_t> data,
                                    llvm::ArrayRef<int64_t> indices,
                                    int64_t batchDims);

/// Reduction over `axes` (already normalised), keeping them as 1 or not.
Shape reduceShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> axes,
                  bool keepDims);

/// ONNX Slice with constant starts/ends/axes/steps (clamped as ONNX does).
llvm::Expected<Shape> sliceShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> starts,
                                 llvm::ArrayRef<int64_t> ends,
                                 llvm::ArrayRef<int64_t> axes,
                                 llvm::ArrayRef<int64_t> steps);

/// Where a slice (valid for sliceShape) starts and how it steps along every
/// dimension of `input`: a negative start counts from the end and is clamped
/// as ONNX Slice clamps it; dimensions not sliced start at 0 with step 1.
/// Element i along dimension d is input index first[d] + i * step[d].
void sliceOrigin(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> starts,
                 llvm::ArrayRef<int64_t> axes, llvm::ArrayRef<int64_t> steps,
                 Shape &first, Shape &step);

/// ONNX Expand: bidirectional broadcast of the input against `shape`.
llvm::Expected<Shape> expandShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> shape);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_IR_DFGSHAPES_H
