//===- RaiseActivations.cpp - GELU and SiLU formulas -> dfg ops -----------===//
//
// Part of meshc. Products and sums are read as flattened trees with their
// constant factors collected, so every association order and spelling of
// the same formula (x * 0.5 * (1 + t), 0.5 * x * (1 + t), x * (0.5 + 0.5 t),
// division by sqrt(2) or multiplication by its inverse, pow(x, 3) or
// x * x * x) meets one check of the coefficients.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;

namespace meshc::graph {
namespace {

/// True if `coefficients` (by degree) equal `expected` to the tolerance of
/// `element`; missing high degrees count as zero.
bool polynomialIs(ArrayRef<double> coefficients, ArrayRef<double> expected,
                  Type element) {
  for (size_t i = 0; i < std::max(coefficients.size(), expected.size()); ++i) {
    double c = i < coefficients.size() ? coefficients[i] : 0.0;
    double e = i < expected.size() ? expected[i] : 0.0;
    if (e == 0.0 ? std::abs(c) > 1e-12 : !isNear(c, e, element))
      return false;
  }
  return true;
}

/// x * 0.5 * (1 + erf(x / sqrt(2)))                           -> gelu(x, exact)
/// x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))      -> gelu(x, tanh)
struct GeluFromFormula : OpRewritePattern<dfg::MulOp> {
  GeluFromFormula(MLIRContext *ctx, const ConstantReader &reader)
      : OpRewritePattern(ctx), reader(reader) {}

  LogicalResult matchAndRewrite(dfg::MulOp op,
                                PatternRewriter &rewriter) const override {
    Type element = op.getType().getElementType();
    Product product = productOf(op.getResult(), reader);
    if (product.terms.size() != 2)
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value x = product.terms[1 - i];
      // The other factor is a + b * f(A) with a == b.
      Sum sum = sumOf(product.terms[i], reader);
      if (sum.terms.size() != 1 || x.getType() != op.getType())
        continue;
      Product inner = productOf(sum.terms[0].first, reader);
      double b = inner.coefficient * sum.terms[0].second;
      if (inner.terms.size() != 1 || !isNear(sum.constant, b, element) ||
          !isNear(product.coefficient * b, 0.5, element))
        continue;
      Operation *f = inner.terms[0].getDefiningOp();
      if (!f || !isa<dfg::ErfOp, dfg::TanhOp>(f))
        continue;
      auto poly = polynomialIn(f->getOperand(0), x, reader);
      if (!poly)
        continue;
      bool exact = isa<dfg::ErfOp>(f);
      double c = std::sqrt(2.0 / M_PI);
      SmallVector<double> expected =
          exact ? SmallVector<double>{0.0, 1.0 / std::sqrt(2.0)}
                : SmallVector<double>{0.0, c, 0.0, c * 0.044715};
      if (!polynomialIs(*poly, expected, element))
        continue;
      rewriter.replaceOpWithNewOp<dfg::GeluOp>(op, op.getType(), x, exact);
      return success();
    }
    return failure();
  }

  const ConstantReader &reader;
};

/// x * sigmoid(x) -> silu(x)
struct SiluFromFormula : OpRewritePattern<dfg::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto sigmoid = defining<dfg::SigmoidOp>(s);
      if (!sigmoid || sigmoid.getInput() != x || x.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<dfg::SiluOp>(op, op.getType(), x);
      return success();
    }
    return failure();
  }
};

} // namespace

void populateRaiseActivationPatterns(RewritePatternSet &patterns,
                                     const ConstantReader &reader) {
  patterns.add<GeluFromFormula>(patterns.getContext(), reader);
  patterns.add<SiluFromFormula>(patterns.getContext());
}

} // namespace meshc::graph
