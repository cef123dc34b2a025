//===- RaiseNorms.cpp - Decomposed normalisations -> dfg norms ------------===//
//
// Part of meshc. The exporters spell LayerNorm as ReduceMean, Sub, Pow,
// ReduceMean, Add, Sqrt, Div, Mul, Add and RMSNorm as Pow, ReduceMean, (Add,)
// Sqrt, (Reciprocal,) Div or Mul, Mul (or Pow by -0.5 and Mul). The
// statistics pattern recognises the normalisation itself with a unit scale;
// the scale, bias and residual patterns then absorb the Mul, the Add and the
// preceding residual Add one at a time, so every spelling meets the same ops;
// casts to f32 and back around the statistics (mixed-precision exports) are
// absorbed too.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/Error.h"

using namespace mlir;

namespace meshc::graph {
namespace {

/// Creates a norm op with the result types its operands imply.
template <typename NormOp>
NormOp createNorm(PatternRewriter &rewriter, Location loc, Value input,
                  Value scale, Value bias, Value residual, int64_t axis,
                  APFloat epsilon) {
  Type type = input.getType();
  SmallVector<Type> sumTypes;
  if (residual)
    sumTypes.push_back(type);
  return NormOp::create(rewriter, loc, type, sumTypes, input, scale, bias,
                        residual, rewriter.getI64IntegerAttr(axis),
                        rewriter.getFloatAttr(rewriter.getF32Type(), epsilon));
}

/// `v`'s operand if `v = sqrt(a)` or `v = pow(a, 0.5)`.
Value sqrtOperand(Value v, const ConstantReader &reader) {
  if (auto sqrt = defining<dfg::SqrtOp>(v))
    return sqrt.getInput();
  if (auto pow = defining<dfg::PowOp>(v)) {
    std::optional<double> e = reader.splat(pow.getRhs());
    if (e && *e == 0.5)
      return pow.getLhs();
  }
  return {};
}

/// `x` if `v = x * x` or `v = pow(x, 2)`.
Value squareOperand(Value v, const ConstantReader &reader) {
  if (auto mul = defining<dfg::MulOp>(v))
    if (mul.getLhs() == mul.getRhs())
      return mul.getLhs();
  if (auto pow = defining<dfg::PowOp>(v)) {
    std::optional<double> e = reader.splat(pow.getRhs());
    if (e && *e == 2.0)
      return pow.getLhs();
  }
  return {};
}

/// The mean over trailing axes that a norm reduces with: `reduce_mean(v)`
/// over `[first, rank)` with kept dimensions. Returns `v` and `first`.
std::optional<std::pair<Value, int64_t>> trailingMean(Value mean) {
  auto reduce = defining<dfg::ReduceMeanOp>(mean);
  if (!reduce || !reduce.getKeepDims())
    return std::nullopt;
  auto type = cast<RankedTensorType>(reduce.getInput().getType());
  std::optional<int64_t> first =
      trailingAxesStart(reduce.getAxes(), type.getRank());
  if (!first)
    return std::nullopt;
  return std::make_pair(reduce.getInput(), *first);
}

/// d / sqrt(mean(d^2) + eps) with d = x - mean(x)
///   -> layer_norm(x, 1, eps)                        (LayerNorm, unit scale)
/// x / sqrt(mean(x^2) + eps) -> rms_norm(x, 1, eps)  (RMSNorm, unit scale)
/// The division may be spelled d * reciprocal(sqrt(..)), d * (1 / sqrt(..))
/// or d * pow(.., -0.5), the square x * x or pow(x, 2), the root sqrt or
/// pow(.., 0.5). Only statistics over trailing axes qualify.
struct NormFromStatistics : RewritePattern {
  NormFromStatistics(MLIRContext *ctx, const ConstantReader &reader)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        reader(reader) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    Value numerator, denominator, radicand;
    if (auto div = dyn_cast<dfg::DivOp>(op)) {
      numerator = div.getLhs();
      denominator = div.getRhs();
    } else if (auto mul = dyn_cast<dfg::MulOp>(op)) {
      for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        if (auto rcp = defining<dfg::ReciprocalOp>(b)) {
          numerator = a;
          denominator = rcp.getInput();
        } else if (auto inv = defining<dfg::DivOp>(b)) {
          std::optional<double> one = reader.splat(inv.getLhs());
          if (one && *one == 1.0) {
            numerator = a;
            denominator = inv.getRhs();
          }
        } else if (auto pow = defining<dfg::PowOp>(b)) {
          // The root's reciprocal as one power (Gemma 4's norms).
          std::optional<double> e = reader.splat(pow.getRhs());
          if (e && *e == -0.5) {
            numerator = a;
            radicand = pow.getLhs();
          }
        }
        if (numerator)
          break;
      }
    }
    if (!numerator)
      return failure();
    if (!radicand)
      radicand = sqrtOperand(denominator, reader);
    if (!radicand)
      return failure();
    // The epsilon added to the statistic; none (0) where the exporter
    // dropped it (Helium's 1e-8 in torch.onnx dynamo's f32 export).
    std::optional<double> eps = 0.0;
    Value variance = radicand;
    if (auto addEps = defining<dfg::AddOp>(radicand)) {
      for (auto [a, b] : {std::pair(addEps.getLhs(), addEps.getRhs()),
                          std::pair(addEps.getRhs(), addEps.getLhs())})
        if (std::optional<double> e = reader.splat(b)) {
          eps = e;
          variance = a;
          break;
        }
    }
    if (!(*eps >= 0))
      return failure();
    auto meanOfSquares = trailingMean(variance);
    if (!meanOfSquares ||
        squareOperand(meanOfSquares->first, reader) != numerator)
      return failure();
    int64_t axis = meanOfSquares->second;

    // Centred (LayerNorm) when the numerator is x - mean(x) over the same
    // axes; otherwise the numerator itself is normalised (RMSNorm).
    Value x = numerator;
    bool centred = false;
    if (auto sub = defining<dfg::SubOp>(numerator)) {
      auto mean = trailingMean(sub.getRhs());
      if (mean && mean->first == sub.getLhs() && mean->second == axis) {
        x = sub.getLhs();
        centred = true;
      }
    }
    auto type = cast<RankedTensorType>(x.getType());
    if (op->getResult(0).getType() != type ||
        !isa<FloatType>(type.getElementType()))
      return failure();
    auto tail = type.getShape().drop_front(axis);
    if (ShapedType::isDynamicShape(tail))
      return failure();
    auto ones = dfg::ConstantOp::create(
        rewriter, op->getLoc(),
        DenseElementsAttr::get(
            RankedTensorType::get(tail, type.getElementType()),
            FloatAttr::get(type.getElementType(), 1.0)));
    APFloat epsilon(static_cast<float>(*eps));
    Value norm = centred
                     ? createNorm<dfg::LayerNormOp>(rewriter, op->getLoc(), x,
                                                    ones, {}, {}, axis, epsilon)
                           .getResult()
                     : createNorm<dfg::RmsNormOp>(rewriter, op->getLoc(), x,
                                                  ones, {}, {}, axis, epsilon)
                           .getResult();
    rewriter.replaceOp(op, norm);
    return success();
  }

  const ConstantReader &reader;
};

/// True if `param` can be a norm's scale or bias: it broadcasts to the
/// normalised dimensions without adding dimensions of its own.
bool fitsTail(Value param, Value input, int64_t axis) {
  auto pt = cast<RankedTensorType>(param.getType());
  auto in = cast<RankedTensorType>(input.getType());
  if (pt.getElementType() != in.getElementType())
    return false;
  int64_t first = axis < 0 ? axis + in.getRank() : axis;
  ArrayRef<int64_t> tail = in.getShape().drop_front(first);
  if (pt.getRank() > static_cast<int64_t>(tail.size()))
    return false;
  auto joined = dfg::broadcastShapes(pt.getShape(), tail);
  if (!joined) {
    llvm::consumeError(joined.takeError());
    return false;
  }
  return ArrayRef<int64_t>(*joined) == tail;
}

/// norm(x, 1) * g -> norm(x, g)                    (scale absorbed)
/// norm(x, s) + b -> norm(x, s, b)                 (bias absorbed)
/// A norm read elsewhere too is not changed: the reader gets a norm of its
/// own (a parallel residual's two norms of the same x, whose shared
/// normalisation TorchScript writes once at opsets before
/// LayerNormalization, each with its own scale and bias).
template <typename NormOp, typename BinaryOp>
struct AbsorbNormParameter : OpRewritePattern<BinaryOp> {
  AbsorbNormParameter(MLIRContext *ctx, const ConstantReader &reader)
      : OpRewritePattern<BinaryOp>(ctx), reader(reader) {}

  LogicalResult matchAndRewrite(BinaryOp op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isScale = std::is_same_v<BinaryOp, dfg::MulOp>;
    for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = defining<NormOp>(a);
      if (!norm ||
          (!norm.getResult().hasOneUse() && norm.getResidual()) ||
          norm.getBias() ||
          op.getType() != norm.getResult().getType() ||
          !fitsTail(b, norm.getInput(), norm.getAxis()))
        continue;
      Value scale = norm.getScale();
      if (isScale) {
        std::optional<double> unit = reader.splat(scale);
        if (!unit || *unit != 1.0)
          continue;
        scale = b;
      }
      auto fused = createNorm<NormOp>(
          rewriter, norm.getLoc(), norm.getInput(), scale,
          isScale ? Value() : b, norm.getResidual(),
          static_cast<int64_t>(norm.getAxis()), norm.getEpsilon());
      if (norm.getResidual())
        rewriter.replaceAllUsesWith(norm.getSum().front(),
                                    fused.getSum().front());
      rewriter.replaceOp(op, fused.getResult());
      return success();
    }
    return failure();
  }

  const ConstantReader &reader;
};

/// norm(a + r) -> norm(a, residual r), whose second result is a + r
/// (the pre-norm residual stream, fused as the Skip* ops do). The sum's
/// readers after the norm read its second result; readers before it keep
/// the add (with a parallel residual, GPT-NeoX, GPT-J, Phi-2 and Falcon, two
/// norms read the same sum: the later one must not be the only producer).
template <typename NormOp> struct FuseNormResidual : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    auto add = defining<dfg::AddOp>(norm.getInput());
    if (!add || norm.getResidual() || add.getLhs().getType() != add.getType() ||
        add.getRhs().getType() != add.getType())
      return failure();
    auto fused = createNorm<NormOp>(
        rewriter, norm.getLoc(), add.getLhs(), norm.getScale(), norm.getBias(),
        add.getRhs(), static_cast<int64_t>(norm.getAxis()), norm.getEpsilon());
    Operation *op = fused.getOperation();
    rewriter.replaceUsesWithIf(add.getResult(), fused.getSum().front(),
                               [&](OpOperand &use) {
                                 Operation *reader = use.getOwner();
                                 return reader != norm.getOperation() &&
                                        reader->getBlock() == op->getBlock() &&
                                        op->isBeforeInBlock(reader);
                               });
    rewriter.replaceOp(norm, fused.getResult());
    return success();
  }
};

/// True if `wide` is a float type at least as wide as the float `narrow`.
bool widens(Type narrow, Type wide) {
  auto n = dyn_cast<FloatType>(narrow), w = dyn_cast<FloatType>(wide);
  return n && w && w.getWidth() >= n.getWidth() && n != w;
}

/// cast(norm(cast(x, f32), 1), f16) -> norm(x, 1)   (statistics in f32)
///   Mixed-precision exports (Optimum's fp16 Llama) widen the input of a
///   norm and narrow its result; a dfg norm already accumulates in f32 or
///   wider and rounds its result to the input's type.
template <typename NormOp>
struct NormInWiderType : OpRewritePattern<dfg::CastOp> {
  NormInWiderType(MLIRContext *ctx, const ConstantReader &reader)
      : OpRewritePattern<dfg::CastOp>(ctx), reader(reader) {}

  LogicalResult matchAndRewrite(dfg::CastOp op,
                                PatternRewriter &rewriter) const override {
    auto norm = defining<NormOp>(op.getInput());
    auto widen = norm ? defining<dfg::CastOp>(norm.getInput()) : dfg::CastOp();
    if (!widen || norm.getBias() || norm.getResidual() ||
        !norm.getResult().hasOneUse())
      return failure();
    Value x = widen.getInput();
    auto type = cast<RankedTensorType>(x.getType());
    std::optional<double> unit = reader.splat(norm.getScale());
    if (op.getType() != type || !unit || *unit != 1.0 ||
        !widens(type.getElementType(),
                norm.getResult().getType().getElementType()))
      return failure();
    auto scaleType = cast<RankedTensorType>(norm.getScale().getType());
    auto ones = dfg::ConstantOp::create(
        rewriter, op.getLoc(),
        DenseElementsAttr::get(scaleType.clone(type.getElementType()),
                               FloatAttr::get(type.getElementType(), 1.0)));
    auto narrow = createNorm<NormOp>(rewriter, norm.getLoc(), x, ones, {}, {},
                                     static_cast<int64_t>(norm.getAxis()),
                                     norm.getEpsilon());
    rewriter.replaceOp(op, narrow.getResult());
    return success();
  }

  const ConstantReader &reader;
};

} // namespace

void populateRaiseNormPatterns(RewritePatternSet &patterns,
                               const ConstantReader &reader) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<NormFromStatistics,
               AbsorbNormParameter<dfg::LayerNormOp, dfg::MulOp>,
               AbsorbNormParameter<dfg::LayerNormOp, dfg::AddOp>,
               AbsorbNormParameter<dfg::RmsNormOp, dfg::MulOp>,
               AbsorbNormParameter<dfg::RmsNormOp, dfg::AddOp>>(ctx, reader);
  patterns
      .add<NormInWiderType<dfg::LayerNormOp>, NormInWiderType<dfg::RmsNormOp>>(
          ctx, reader);
}

void populateFuseNormResidualPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseNormResidual<dfg::LayerNormOp>,
               FuseNormResidual<dfg::RmsNormOp>>(patterns.getContext());
}

} // namespace meshc::graph
