//===- RaiseLinear.cpp - Dense layers and embeddings -> dfg ops -----------===//
//
// Part of meshc. A dense layer reaches meshc as MatMul(x, W) (+ bias), as
// Gemm with transB (a transpose of W), or as GPT-2's Conv1D: x flattened to
// [tokens, in], Gemm, reshaped back. All become one dfg.linear whose weight
// operand is the weight reference itself, in whichever layout it is stored,
// so that no transpose or reshape of a weight is ever materialised.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace meshc::graph {
namespace {

/// reshape(weight) -> weight with the new shape (the same row-major bytes).
struct ReshapeOfWeight : OpRewritePattern<dfg::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto weight = defining<dfg::WeightOp>(op.getInput());
    if (!weight || !op.getType().hasStaticShape())
      return failure();
    rewriter.replaceOpWithNewOp<dfg::WeightOp>(
        op, op.getType(), weight.getName(), weight.getFile(),
        weight.getOffset(), weight.getLength(), weight.getStoredAttr(),
        weight.getQuantizationAttr());
    return success();
  }
};

/// matmul(x, W)            -> linear(x, W)                  (W stored [in,
/// out]) matmul(x, transpose(W)) -> linear(x, W, transposed)      (W stored
/// [out, in])
struct MatMulOfWeight : OpRewritePattern<dfg::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::MatMulOp op,
                                PatternRewriter &rewriter) const override {
    Value w = op.getRhs();
    bool transposed = false;
    if (auto t = defining<dfg::TransposeOp>(w)) {
      if (t.getPerm() != ArrayRef<int64_t>{1, 0})
        return failure();
      w = t.getInput();
      transposed = true;
    }
    auto wt = cast<RankedTensorType>(w.getType());
    if (!defining<dfg::WeightOp>(w) || wt.getRank() != 2 ||
        cast<RankedTensorType>(op.getLhs().getType()).getRank() < 2)
      return failure();
    rewriter.replaceOpWithNewOp<dfg::LinearOp>(op, op.getType(), op.getLhs(), w,
                                               Value(), transposed);
    return success();
  }
};

/// linear(x, W) + b -> linear(x, W, b)          (b of shape [out])
struct LinearBias : OpRewritePattern<dfg::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::AddOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto linear = defining<dfg::LinearOp>(a);
      auto bt = cast<RankedTensorType>(b.getType());
      if (!linear || linear.getBias() || !linear->hasOneUse() ||
          op.getType() != linear.getType() || bt.getRank() != 1 ||
          bt.getDimSize(0) != linear.getOutFeatures())
        continue;
      rewriter.replaceOpWithNewOp<dfg::LinearOp>(
          op, op.getType(), linear.getInput(), linear.getWeight(), b,
          linear.getTransposeWeight());
      return success();
    }
    return failure();
  }
};

/// reshape(linear(reshape(x, [tokens, in])), x.shape[:-1] + [out])
///   -> linear(x)                          (a linear acts on the last dim)
/// The outer reshape may be symbolic (dfg.symbolic_reshape back to [batch,
/// seq, out] of a dynamic-axes export): shapes are compared as symbolic
/// dimensions.
LogicalResult linearThroughFlatten(Operation *op, PatternRewriter &rewriter,
                                   dfg::SymbolicShapes &shapes) {
  auto linear = defining<dfg::LinearOp>(op->getOperand(0));
  auto flatten =
      linear ? defining<dfg::ReshapeOp>(linear.getInput()) : dfg::ReshapeOp();
  if (!flatten || !linear->hasOneUse())
    return failure();
  Value x = flatten.getInput();
  auto xt = cast<RankedTensorType>(x.getType());
  auto ft = cast<RankedTensorType>(flatten.getType());
  if (xt.getRank() < 1 || xt.isDynamicDim(xt.getRank() - 1) ||
      ft.getShape().back() != xt.getShape().back())
    return failure();
  SmallVector<AffineExpr> expected(shapes.dims(x));
  expected.back() = getAffineConstantExpr(linear.getType().getShape().back(),
                                          op->getContext());
  ArrayRef<AffineExpr> got = shapes.dims(op->getResult(0));
  if (got.size() != expected.size() ||
      !llvm::all_of(llvm::zip_equal(got, expected), [](auto pair) {
        return dfg::sameDim(std::get<0>(pair), std::get<1>(pair));
      }))
    return failure();
  rewriter.replaceOpWithNewOp<dfg::LinearOp>(
      op, op->getResult(0).getType(), x, linear.getWeight(), linear.getBias(),
      linear.getTransposeWeight());
  return success();
}

struct LinearThroughFlatten : OpRewritePattern<dfg::ReshapeOp> {
  LinearThroughFlatten(MLIRContext *ctx, dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), shapes(shapes) {}
  dfg::SymbolicShapes &shapes;
  LogicalResult matchAndRewrite(dfg::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    return linearThroughFlatten(op, rewriter, shapes);
  }
};

struct LinearThroughSymbolicFlatten : OpRewritePattern<dfg::SymbolicReshapeOp> {
  LinearThroughSymbolicFlatten(MLIRContext *ctx, dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), shapes(shapes) {}
  dfg::SymbolicShapes &shapes;
  LogicalResult matchAndRewrite(dfg::SymbolicReshapeOp op,
                                PatternRewriter &rewriter) const override {
    return linearThroughFlatten(op, rewriter, shapes);
  }
};

/// gather(W, i, axis = 0), i a constant scalar or [i]
///   -> the weight of W's i-th block along axis 0 (at offset + i * stride)
/// A stacked weight read one matrix at a time by index (JetMoE's experts,
/// `weight[i]` in a loop): each matrix becomes a weight of its own, so a
/// product by it is a linear, and tp slices it like any other.
struct BlockOfWeight : OpRewritePattern<dfg::GatherOp> {
  BlockOfWeight(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(dfg::GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto weight = defining<dfg::WeightOp>(op.getData());
    auto index = defining<dfg::ConstantOp>(op.getIndices());
    auto indices = cast<RankedTensorType>(op.getIndices().getType());
    auto table = cast<RankedTensorType>(op.getData().getType());
    // (A quantized weight's blocks are not byte ranges of one stride.)
    if (!weight || weight.getQuantization() || !index || op.getAxis() != 0 ||
        table.getRank() < 2 ||
        indices.getNumElements() != 1 || indices.getRank() > 1 ||
        !op.getType().hasStaticShape())
      return failure();
    auto values = dyn_cast<DenseIntElementsAttr>(index.getValue());
    if (!values)
      return failure();
    int64_t rows = table.getDimSize(0);
    int64_t i = (*values.getValues<APInt>().begin()).getSExtValue();
    if (i < 0)
      i += rows;
    if (i < 0 || i >= rows || weight.getLength() % rows != 0)
      return failure();
    int64_t stride = weight.getLength() / rows;
    rewriter.replaceOpWithNewOp<dfg::WeightOp>(
        op, op.getType(), (weight.getName() + "[" + Twine(i) + "]").str(),
        weight.getFile(), weight.getOffset() + i * stride, stride,
        weight.getStoredAttr());
    return success();
  }
};

/// gather(W, ids, axis = 0) -> embedding(W, ids)     (W a 2-D float weight)
struct GatherRowsOfWeight : OpRewritePattern<dfg::GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto table = cast<RankedTensorType>(op.getData().getType());
    if (!defining<dfg::WeightOp>(op.getData()) || table.getRank() != 2 ||
        !isa<FloatType>(table.getElementType()) || op.getAxis() != 0)
      return failure();
    rewriter.replaceOpWithNewOp<dfg::EmbeddingOp>(
        op, op.getType(), op.getData(), op.getIndices());
    return success();
  }
};

/// gather(transpose(W, [1, 0]), ids, axis = 0)
///   -> transpose(gather(W, ids, axis = 1), [1, ..., r, 0])
/// An embedding tied to an lm_head whose weight is stored [hidden, vocab]
/// (onnxruntime-genai's builder): the ids' columns of W are read, instead
/// of the whole weight transposed at every step.
struct GatherColumnsOfWeight : OpRewritePattern<dfg::GatherOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::GatherOp op,
                                PatternRewriter &rewriter) const override {
    auto transpose = defining<dfg::TransposeOp>(op.getData());
    if (!transpose || op.getAxis() != 0 ||
        transpose.getPerm() != ArrayRef<int64_t>{1, 0} ||
        !defining<dfg::WeightOp>(transpose.getInput()))
      return failure();
    auto weight = cast<RankedTensorType>(transpose.getInput().getType());
    auto ids = cast<RankedTensorType>(op.getIndices().getType());
    // [hidden, ids...], then the hidden dimension moved last.
    SmallVector<int64_t> shape{weight.getDimSize(0)};
    llvm::append_range(shape, ids.getShape());
    SmallVector<int64_t> perm;
    for (int64_t i = 1, r = ids.getRank(); i <= r; ++i)
      perm.push_back(i);
    perm.push_back(0);
    Value columns = dfg::GatherOp::create(
        rewriter, op.getLoc(),
        RankedTensorType::get(shape, weight.getElementType()),
        transpose.getInput(), op.getIndices(), 1);
    rewriter.replaceOpWithNewOp<dfg::TransposeOp>(
        op, op.getType(), columns, rewriter.getDenseI64ArrayAttr(perm));
    return success();
  }
};

} // namespace

void populateRaiseLinearPatterns(RewritePatternSet &patterns,
                                 dfg::SymbolicShapes &shapes) {
  patterns.add<ReshapeOfWeight, MatMulOfWeight, LinearBias, GatherRowsOfWeight,
               GatherColumnsOfWeight, BlockOfWeight>(patterns.getContext());
  patterns.add<LinearThroughFlatten, LinearThroughSymbolicFlatten>(
      patterns.getContext(), shapes);
}

} // namespace meshc::graph
