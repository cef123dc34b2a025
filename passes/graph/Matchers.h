//===- Matchers.h - Helpers of the raising patterns -------------*- C++ -*-===//
//
// Part of meshc. What the pattern families of passes/graph/Raise*.cpp share:
// reading constant data (literals, and small weights when the model's
// folder is known), recognising scalar constants with a tolerance fit for
// their element type, and reading an expression tree of elementwise ops as
// a polynomial in one value.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_GRAPH_MATCHERS_H
#define MESHC_PASSES_GRAPH_MATCHERS_H

#include "dialects/dfg/Eval/Evaluator.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace meshc::graph {

/// Reads the values of constant tensors for patterns whose validity depends
/// on data (is this mask causal? are the two halves of this cos table
/// equal?). Without a weights folder only `dfg.constant` literals are read,
/// and patterns that need a weight's data do not fire.
class ConstantReader {
public:
  /// Larger tensors are not read (a pattern that needs one does not fire).
  static constexpr int64_t kMaxElements = int64_t(1) << 22;

  explicit ConstantReader(std::string weightsDir)
      : weightsDir_(std::move(weightsDir)) {}

  /// The values of `value` if it is a `dfg.constant`, or a `dfg.weight` of
  /// at most kMaxElements elements whose file can be read.
  std::optional<dfg::EvalTensor> read(mlir::Value value) const;

  /// The value of a literal whose elements are all equal (a scalar, a splat).
  std::optional<double> splat(mlir::Value value) const;

private:
  std::string weightsDir_;
};

/// True if `actual` is `expected` up to a few units in the last place of
/// `element` (f32, f16 or bf16 spellings of the same constant all match).
bool isNear(double actual, double expected, mlir::Type element);

/// True if `v` hides a score: below -1000 (or -inf). Softmax turns such a
/// score into an exact zero weight for any score within 1000 of the row's
/// maximum (exp(-1000) underflows even a double), as exporters' -1e4,
/// finfo.min and -inf fills do.
inline bool isMaskValue(double v) { return v <= -1000.0; }

/// `expr` as a polynomial in `x` of degree at most 4 (coefficients by
/// degree), read through add, sub, mul, neg, pow by a small integer and
/// division by a splat constant; std::nullopt if any other op, or another
/// non-constant value, is met. Splat constants may broadcast only if `expr`
/// keeps `x`'s type, which the callers check.
std::optional<llvm::SmallVector<double, 5>>
polynomialIn(mlir::Value expr, mlir::Value x, const ConstantReader &reader);

/// A product of factors read through a tree of dfg.mul, dfg.neg and
/// division by splat constants: `coefficient * terms[0] * terms[1] * ...`.
struct Product {
  double coefficient = 1.0;
  llvm::SmallVector<mlir::Value, 4> terms;
};
Product productOf(mlir::Value value, const ConstantReader &reader);

/// A sum read through a tree of dfg.add and dfg.sub:
/// `constant + sum_i sign_i * terms[i]`.
struct Sum {
  double constant = 0.0;
  llvm::SmallVector<std::pair<mlir::Value, double>, 4> terms;
};
Sum sumOf(mlir::Value value, const ConstantReader &reader);

/// The dimensions `[first, rank)` if `axes` lists exactly the trailing
/// dimensions of a tensor of rank `rank` (the only normalisations raised).
std::optional<int64_t> trailingAxesStart(llvm::ArrayRef<int64_t> axes,
                                         int64_t rank);

/// `value`'s defining op if it is an `OpTy`, else null.
template <typename OpTy> OpTy defining(mlir::Value value) {
  return value ? value.getDefiningOp<OpTy>() : OpTy();
}

} // namespace meshc::graph

#endif // MESHC_PASSES_GRAPH_MATCHERS_H
