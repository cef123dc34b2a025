//===- IndexForms.h - Index tensors as affine functions of position -*- C++
//-*-===//
//
// Part of meshc. Exporters compute positions in the graph: the tuples of a
// scatter that writes one slice, the batch rows of a padding mask's gather,
// the query and key positions a causal mask compares. Each is an integer
// tensor whose element at index i is an affine function of i. IndexForms
// reads such a tensor back as that function, from what exporters write for
// it, so that the passes that need a position (RaiseScatter, the causal
// mask analysis, BatchGathers) share one analysis.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_GRAPH_INDEXFORMS_H
#define MESHC_PASSES_GRAPH_INDEXFORMS_H

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/SymbolicDims.h"

#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace meshc::graph {

/// A tensor whose element at index i is `sum_a coef[a] * i[a] + offset`,
/// the offset possibly symbolic (the past length of a KV cache). The
/// coefficient of a dimension of static size 1 is 0.
struct IndexForm {
  llvm::SmallVector<int64_t> coef;
  mlir::AffineExpr offset;

  /// Element i is i[axis].
  bool isPosition(int64_t axis) const;
  /// The same value everywhere.
  bool isUniform() const;
  /// The offset, if it is a constant.
  std::optional<int64_t> constantOffset() const;
};

/// Reads values as IndexForms, through:
///   - literals: a splat, or values that are affine in their position;
///   - a scalar dfg.sizes (a symbolic offset);
///   - dfg.range with a constant step (its start may be symbolic);
///   - views that keep the dimensions other than 1 in order (reshape,
///     unsqueeze, squeeze), transposes, broadcasts (expand,
///     symbolic_expand);
///   - add, sub, neg, a product by an integer constant, and casts;
///   - gather and gather_nd of a form at indices that are forms with no
///     negative element (position ids read at the query and key positions).
/// Every value on the way must hold integers exactly: integers of 32 bits
/// or more, or f32 / f64 (exact for positions below 2^24). A cast to bool
/// or to a narrow integer is not followed. Sizes are compared as symbolic
/// expressions. Answers are remembered for the object's life: make one per
/// query of a changing IR.
class IndexForms {
public:
  IndexForms(dfg::SymbolicShapes &shapes, const ConstantReader &reader)
      : shapes_(shapes), reader_(reader) {}

  std::optional<IndexForm> of(mlir::Value v);

  /// Element i of `v` is i[axis] at every index.
  bool isPosition(mlir::Value v, int64_t axis);

private:
  std::optional<IndexForm> compute(mlir::Value v, int depth);
  std::optional<IndexForm> at(mlir::Value v, int depth);
  /// A gather or gather_nd of a form at indices that are forms.
  std::optional<IndexForm> gathered(mlir::Operation *def, mlir::Value v,
                                    int depth);
  /// The forms of the components of a gather_nd's index tuples (its last
  /// axis), over its other axes.
  std::optional<llvm::SmallVector<IndexForm>> tupleForms(mlir::Value indices,
                                                         int depth);
  /// `form` of `from` as a form of `to`, which has the same dimensions
  /// other than 1 in the same order.
  std::optional<IndexForm> keepNonUnit(const IndexForm &form, mlir::Value from,
                                       mlir::Value to);
  /// `form` of `from` broadcast to the shape of `to` (trailing alignment).
  std::optional<IndexForm> broadcastTo(const IndexForm &form, mlir::Value from,
                                       mlir::Value to);

  dfg::SymbolicShapes &shapes_;
  const ConstantReader &reader_;
  llvm::DenseMap<mlir::Value, std::optional<IndexForm>> memo_;
  /// Set when an answer met the depth bound.
  bool cutShort_ = false;
};

} // namespace meshc::graph

#endif // MESHC_PASSES_GRAPH_INDEXFORMS_H
