//===- RaiseAttention.cpp - matmul-softmax-matmul -> dfg.attention --------===//
//
// Part of meshc. Every exporter writes scaled dot-product attention as
//
//   softmax(mask(scale * Q K^T)) V
//
// with variations: the scale as Div or Mul, on the scores or on Q and K
// separately; the mask as Where(bool, scores, fill) (GPT-2's causal buffer)
// or an additive tensor (Llama's); K and V extended by a KV cache through
// Concat; GQA's K and V heads repeated by Unsqueeze/Expand/Reshape. The
// pattern starts at the second matmul and walks back:
//
//   1. P = softmax(S) over the last axis (the keys); anything else is not
//      attention. A softmax taken in f32 between casts (mixed-precision
//      exports) counts too: the op's softmax accumulates in f32. PyTorch's
//      guard where(isnan(P), 0, P) is P: dfg.attention gives zeros on the
//      rows (every key masked) where the softmax is NaN.
//   2. From S down to the score matmul: splat Mul/Div are the scale; one
//      Where with a fill below -1000 is a bool mask; one Add whose other side
//      does not lead to the scores is an additive mask. A scale applied after
//      the mask (CodeGen: (Q K^T + mask) / c) scales the mask too: the op
//      takes the mask scaled (a Where of constants gets scaled constants).
//      PyTorch's masked_fill(S, c, F), the Where with its fill first
//      (where(c, F, S); MPT, DeBERTa-v2), with F at most -1e30, is the
//      additive mask where(not(c), 0, F), and may have another additive mask
//      below it (MPT's ALiBi bias).
//      One Where with a finite fill below the additive mask (GPT-Neo:
//      where(causal bias, S, finfo.min) + HF's mask) is a second mask; see
//      step 5. So is a second Add with no scale between (BLOOM: S + ALiBi
//      bias + HF's mask): step 5 reads the first, and the op's mask is what
//      it leaves plus the second. A clamp max(x, c) above the mask, c finite
//      and at most -1e30 (XGLM's eager attention clamps at finfo.min), is
//      dropped where the mask is where(cond, 0, F) with such an F: it lifts
//      hidden keys' scores only, and fully hidden rows stay uniform.
//   3. Scores = matmul(Q, transpose(K, [0, 1, 3, 2])), with splat scales
//      on Q or K folded into the scale; K^T may also be the dynamo
//      exporter's reshape to 3-D, transpose, reshape back (keyOfTranspose).
//   4. K and V lose their GQA repetition (the same factor on both; one
//      head that the matmuls broadcast over the query heads is multi-query
//      attention), then a
//      Concat of a past and new tensor along the sequence becomes the op's
//      past input, and the Concat results its `present` results.
//   5. A mask whose values are known (a literal, or a weight when the model's
//      folder is known) and equal to "key j visible to query i iff
//      j <= i + past length" becomes `causal = true`; so does, when the
//      lengths are symbolic, one of the spellings CausalMasks.h recognises
//      (a sliced triangular buffer, a comparison of index expressions); a
//      conjunction with such a factor (HF's causal and padding masks) gives
//      `causal = true` with the other factors as the mask; any other mask
//      stays an operand. A Where fill of -1e4 instead of -inf changes
//      nothing except on rows where every key is masked, which only padding
//      queries have; where such rows can occur (a padding factor left
//      beside the causal one) a finite fill must be at most -1e30 and
//      becomes the op's `causal_fill`. Two masks, where(c, S, F) + mask:
//      with c causal, and the mask causal or its causal factor's fill F'
//      overflowing F + F' to -inf, `causal = true` and the mask's other
//      factors; otherwise the one additive mask where(c, 0, F) + mask.
//
// A second pattern applies step 5 to a dfg.attention that came with its
// mask (ONNX Attention-23, as torch.onnx writes it at opset 23, takes HF's
// combined causal and padding mask as attn_mask).
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/CausalMasks.h"
#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace meshc::graph {
namespace {

/// True if the score matmul of the attention is reachable from `v` through
/// the ops that step 2 walks.
bool reachesScores(Value v, int depth = 0) {
  Operation *op = v.getDefiningOp();
  if (!op || depth > 8)
    return false;
  if (auto mm = dyn_cast<dfg::MatMulOp>(op))
    return mm.getType().getRank() == 4;
  if (isa<dfg::MulOp, dfg::DivOp, dfg::AddOp>(op))
    return reachesScores(op->getOperand(0), depth + 1) ||
           reachesScores(op->getOperand(1), depth + 1);
  if (auto where = dyn_cast<dfg::WhereOp>(op))
    return reachesScores(where.getLhs(), depth + 1);
  if (auto tanh = dyn_cast<dfg::TanhOp>(op))
    return reachesScores(tanh.getInput(), depth + 1);
  return false;
}

/// A softcap `c * tanh(x / c)` (or `tanh(x * (1 / c)) * c`) of `v`: the cap
/// c and x, or std::nullopt for anything else.
std::optional<std::pair<double, Value>>
softcapOf(Value v, const ConstantReader &reader) {
  auto mul = defining<dfg::MulOp>(v);
  if (!mul)
    return std::nullopt;
  for (auto [t, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto tanh = defining<dfg::TanhOp>(t);
    std::optional<double> cap = reader.splat(c);
    if (!tanh || !cap || !(*cap > 0) || tanh.getType() != mul.getType())
      continue;
    Value in = tanh.getInput();
    Type element = mul.getType().getElementType();
    if (auto div = defining<dfg::DivOp>(in)) {
      std::optional<double> d = reader.splat(div.getRhs());
      if (d && isNear(*d, *cap, element) &&
          div.getLhs().getType() == div.getType())
        return std::pair(*cap, div.getLhs());
    }
    if (auto scaled = defining<dfg::MulOp>(in)) {
      for (auto [x, f] : {std::pair(scaled.getLhs(), scaled.getRhs()),
                          std::pair(scaled.getRhs(), scaled.getLhs())}) {
        std::optional<double> inv = reader.splat(f);
        if (inv && isNear(*inv, 1.0 / *cap, element) &&
            x.getType() == scaled.getType())
          return std::pair(*cap, x);
      }
    }
  }
  return std::nullopt;
}

/// where(is_nan(p), 0, p) -> p: PyTorch's scaled-dot-product attention
/// zeroes the rows whose every key is masked (their softmax is NaN), which
/// is what dfg.attention computes for such rows. Any other value is itself.
Value stripNaNGuard(Value v, const ConstantReader &reader) {
  auto where = defining<dfg::WhereOp>(v);
  if (!where || where.getType() != where.getRhs().getType())
    return v;
  auto isNaN = defining<dfg::IsNaNOp>(where.getCondition());
  std::optional<double> fill = reader.splat(where.getLhs());
  if (!isNaN || isNaN.getInput() != where.getRhs() || !fill || *fill != 0.0)
    return v;
  return where.getRhs();
}

/// The key K of K^T = `kT` (the score matmul's right operand), written
///   transpose(K, [0, 1, 3, 2]), or, as PyTorch's dynamo exporter writes it,
///   reshape(transpose(reshape(K, [b*h, s, d]), [0, 2, 1]), [b, h, d, s]):
/// the first reshape keeps K's last two dimensions (it merges the leading
/// ones), the second gives back K's leading dimensions, so the composite
/// swaps the last two. Null for anything else.
Value keyOfTranspose(Value kT, dfg::SymbolicShapes &shapes) {
  if (auto t = defining<dfg::TransposeOp>(kT))
    return t.getPerm() == ArrayRef<int64_t>{0, 1, 3, 2} ? t.getInput()
                                                        : Value();
  auto reshapeInput = [](Value v) -> Value {
    Operation *def = v.getDefiningOp();
    return isa_and_nonnull<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(def)
               ? def->getOperand(0)
               : Value();
  };
  Value t3 = reshapeInput(kT);
  auto t = t3 ? defining<dfg::TransposeOp>(t3) : dfg::TransposeOp();
  if (!t || t.getPerm() != ArrayRef<int64_t>{0, 2, 1})
    return Value();
  Value k = reshapeInput(t.getInput());
  if (!k || cast<RankedTensorType>(k.getType()).getRank() != 4 ||
      cast<RankedTensorType>(kT.getType()).getRank() != 4)
    return Value();
  SmallVector<AffineExpr> kd(shapes.dims(k)), merged(shapes.dims(t.getInput())),
      out(shapes.dims(kT));
  auto same = [](AffineExpr a, AffineExpr b) { return a && a == b; };
  if (!same(merged[1], kd[2]) || !same(merged[2], kd[3]) ||
      !same(out[0], kd[0]) || !same(out[1], kd[1]) || !same(out[2], kd[3]) ||
      !same(out[3], kd[2]))
    return Value();
  return k;
}

/// Strips multiplications and divisions by splat constants, folding them
/// into `scale`.
Value stripScale(Value v, double &scale, const ConstantReader &reader) {
  while (true) {
    if (auto mul = defining<dfg::MulOp>(v)) {
      if (auto c = reader.splat(mul.getRhs());
          c && mul.getLhs().getType() == mul.getType()) {
        scale *= *c;
        v = mul.getLhs();
        continue;
      }
      if (auto c = reader.splat(mul.getLhs());
          c && mul.getRhs().getType() == mul.getType()) {
        scale *= *c;
        v = mul.getRhs();
        continue;
      }
    }
    if (auto div = defining<dfg::DivOp>(v)) {
      if (auto c = reader.splat(div.getRhs());
          c && *c != 0.0 && div.getLhs().getType() == div.getType()) {
        scale /= *c;
        v = div.getLhs();
        continue;
      }
    }
    return v;
  }
}

/// GQA's repeat_kv: reshape(expand(unsqueeze(x, [2]), [b, g, n, s, d]),
/// [b, g * n, s, d]) -> (x, n); any other value -> (value, 1).
std::pair<Value, int64_t> stripRepeat(Value v, dfg::SymbolicShapes &shapes) {
  auto reshape = defining<dfg::ReshapeOp>(v);
  auto expand =
      reshape ? defining<dfg::ExpandOp>(reshape.getInput()) : dfg::ExpandOp();
  auto unsqueeze = expand ? defining<dfg::UnsqueezeOp>(expand.getInput())
                          : dfg::UnsqueezeOp();
  if (!unsqueeze || unsqueeze.getAxes() != ArrayRef<int64_t>{2})
    return {v, 1};
  Value x = unsqueeze.getInput();
  // Copies: a query may grow the analysis's table.
  SmallVector<AffineExpr> xd(shapes.dims(x)), ed(shapes.dims(expand)),
      rd(shapes.dims(reshape));
  auto n = ed.size() == 5 ? dyn_cast_or_null<AffineConstantExpr>(ed[2])
                          : AffineConstantExpr();
  if (xd.size() != 4 || !n || rd.size() != 4)
    return {v, 1};
  // [b, g, s, d] -> [b, g, n, s, d] -> [b, g * n, s, d]
  AffineExpr expanded[] = {xd[0], xd[1], n, xd[2], xd[3]};
  AffineExpr merged[] = {xd[0], xd[1] * n, xd[2], xd[3]};
  for (auto [got, want] : llvm::zip_equal(ed, expanded))
    if (!dfg::sameDim(got, want))
      return {v, 1};
  for (auto [got, want] : llvm::zip_equal(rd, merged))
    if (!dfg::sameDim(got, want))
      return {v, 1};
  return {x, n.getValue()};
}

/// A concat of two 4-D tensors along the sequence axis (2): a KV cache
/// extended by the new keys or values.
dfg::ConcatOp cacheConcat(Value v) {
  auto concat = defining<dfg::ConcatOp>(v);
  if (!concat || concat.getInputs().size() != 2 ||
      concat.getType().getRank() != 4)
    return {};
  int64_t axis = static_cast<int64_t>(concat.getAxis());
  return axis == 2 || axis == -2 ? concat : dfg::ConcatOp();
}

bool isBoolMask(Value m) {
  return cast<RankedTensorType>(m.getType()).getElementType().isInteger(1);
}

/// True if the shapes of `a` and `b` broadcast together (two masks summed).
bool broadcastable(Value a, Value b) {
  auto joint =
      dfg::broadcastShapes(cast<RankedTensorType>(a.getType()).getShape(),
                           cast<RankedTensorType>(b.getType()).getShape());
  if (joint)
    return true;
  llvm::consumeError(joint.takeError());
  return false;
}

/// not(c), seen through what builds c: not(x) is x, and bool(where(v, 0,
/// F)) with F nonzero (MPT's bool of HF's additive mask) is not(v).
Value negated(Value c, const ConstantReader &reader, OpBuilder &builder) {
  if (auto inner = defining<dfg::NotOp>(c))
    return inner.getInput();
  auto cast = defining<dfg::CastOp>(c);
  auto where = cast ? defining<dfg::WhereOp>(cast.getInput()) : nullptr;
  if (where && cast.getType().getElementType().isInteger(1) &&
      where.getCondition().getType().getShape() == cast.getType().getShape()) {
    std::optional<double> kept = reader.splat(where.getLhs());
    std::optional<double> fill = reader.splat(where.getRhs());
    if (kept && fill && *kept == 0.0 && *fill != 0.0)
      return where.getCondition();
  }
  return dfg::NotOp::create(builder, c.getLoc(), c);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// slice(p, keys [0, -1)) over the last axis of a 4-D p: the scores of the
/// keys without the last column (gpt-oss drops its sinks' column so); p, or
/// null for anything else.
Value withoutLastKey(Value v) {
  auto slice = defining<dfg::SliceOp>(v);
  if (!slice || shapeOf(slice.getInput()).size() != 4 ||
      slice.getAxes().size() != 1 ||
      (slice.getAxes()[0] != 3 && slice.getAxes()[0] != -1) ||
      slice.getStarts()[0] != 0 || slice.getEnds()[0] != -1 ||
      slice.getSteps()[0] != 1)
    return Value();
  return slice.getInput();
}

/// x - reduce_max(x, [last axis], keep_dims) -> x: a softmax's input less
/// its rows' maxima, which the softmax subtracts itself.
Value stripRowMax(Value v) {
  auto sub = defining<dfg::SubOp>(v);
  auto max = sub ? defining<dfg::ReduceMaxOp>(sub.getRhs()) : nullptr;
  int64_t rank = shapeOf(v).size();
  if (!max || max.getInput() != sub.getLhs() || !max.getKeepDims() ||
      max.getAxes().size() != 1 ||
      (max.getAxes()[0] != rank - 1 && max.getAxes()[0] != -1) ||
      sub.getType() != sub.getLhs().getType())
    return v;
  return sub.getLhs();
}

/// The sink column of gpt-oss's scores, concat(S, column) along the keys:
/// a broadcast (expand) of one value per head, [1, heads, 1, 1] (or
/// [heads, 1, 1]), with `heads` static. The per-head value, or null.
Value sinkSource(Value column, int64_t heads) {
  Value source = column;
  while (true) {
    if (auto expand = defining<dfg::ExpandOp>(source))
      source = expand.getInput();
    else if (auto expand = defining<dfg::SymbolicExpandOp>(source))
      source = expand.getInput();
    else
      break;
  }
  ArrayRef<int64_t> shape = shapeOf(source);
  if (shape.size() < 3 || shape.size() > 4 || ShapedType::isDynamic(heads))
    return Value();
  int64_t lead = 4 - shape.size();
  for (int64_t d = 0; d < 4; ++d) {
    int64_t size = d < lead ? 1 : shape[d - lead];
    if (size != (d == 1 ? heads : 1))
      return Value();
  }
  return source;
}

/// softmax(mask(scale * Q K^T)) V -> attention(Q, K, V)   (see the outline)
struct SoftmaxAttention : OpRewritePattern<dfg::MatMulOp> {
  SoftmaxAttention(MLIRContext *ctx, const ConstantReader &reader,
                   dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::MatMulOp op,
                                PatternRewriter &rewriter) const override {
    // 1. Probabilities over the keys (computed in f32 and narrowed back in
    //    mixed-precision exports: cast(softmax(cast(S, f32)), f16)).
    Type element = op.getType().getElementType();
    // gpt-oss's sinks: P = slice(softmax(concat(S, sinks) - max), every key
    // but the sinks' column); see sinkSource.
    Value probabilities = op.getLhs();
    Value sinkValues;
    if (Value withSink = withoutLastKey(probabilities))
      probabilities = withSink;
    bool sinkColumn = probabilities != op.getLhs();
    probabilities = stripNaNGuard(probabilities, reader);
    auto narrow = defining<dfg::CastOp>(probabilities);
    if (narrow)
      probabilities = stripNaNGuard(narrow.getInput(), reader);
    auto softmax = defining<dfg::SoftmaxOp>(probabilities);
    if (!softmax || op.getType().getRank() != 4 ||
        softmax.getNormalizedAxis() != 3)
      return failure();
    Value s = softmax.getInput();
    if (sinkColumn) {
      auto joined = defining<dfg::ConcatOp>(stripRowMax(s));
      int64_t heads = shapeOf(s)[1];
      if (!joined || joined.getInputs().size() != 2 ||
          (static_cast<int64_t>(joined.getAxis()) + 4) % 4 != 3 ||
          shapeOf(joined.getInputs()[1])[3] != 1)
        return failure();
      sinkValues = sinkSource(joined.getInputs()[1], heads);
      if (!sinkValues ||
          cast<RankedTensorType>(sinkValues.getType()).getElementType() !=
              cast<RankedTensorType>(s.getType()).getElementType())
        return failure();
      s = joined.getInputs()[0];
    }
    if (narrow) {
      auto widen = defining<dfg::CastOp>(s);
      if (!widen ||
          cast<RankedTensorType>(widen.getInput().getType()).getElementType() !=
              element ||
          !isa<FloatType>(softmax.getType().getElementType()))
        return failure();
      s = widen.getInput();
    }

    // 2. Scale, mask and softcap down to the score matmul.
    double scale = 1.0, scaleAbove = 1.0, softcap = 0.0, maskScale = 1.0;
    bool softcapFirst = false;
    Value mask;
    // A bool mask below an additive one (GPT-Neo: where(c, S, F) + mask):
    // c and its finite fill F.
    Value innerCondition;
    double innerFill = 0.0;
    // A second additive mask below the first (BLOOM: ALiBi, then HF's mask).
    Value extraMask;
    // PyTorch's masked_fill(S, c, F), the fill first (where(c, F, S); MPT,
    // DeBERTa-v2): `mask` holds c, the keys it hides, and the op's mask is
    // the additive where(not(c), 0, F) (built once the match stands), F at
    // most -1e30 so that S + F is F.
    bool maskNegated = false;
    double maskFill = 0.0;
    // max(masked scores, c) above the mask (XGLM, OPT-style eager
    // attention: the sum clamped at finfo.min).
    bool clamped = false;
    for (int step = 0; step < 10; ++step) {
      if (auto clamp = defining<dfg::MaxOp>(s)) {
        std::optional<double> bound = reader.splat(clamp.getRhs());
        if (clamped || mask || !bound || !std::isfinite(*bound) ||
            !(*bound * scaleAbove <= kFiniteCausalFillMax) ||
            clamp.getType() != clamp.getLhs().getType())
          return failure();
        clamped = true;
        s = clamp.getLhs();
        continue;
      }
      // A softcap with nothing scaled above it; below the mask (Gemma-2:
      // capped, then masked) or above it (ONNX's order).
      if (auto cap = softcapOf(s, reader)) {
        if (softcap > 0 || scaleAbove != 1.0)
          return failure();
        softcap = cap->first;
        softcapFirst = static_cast<bool>(mask);
        s = cap->second;
        continue;
      }
      Value stripped = stripScale(s, scaleAbove, reader);
      if (stripped != s) {
        s = stripped;
        continue;
      }
      if (auto where = defining<dfg::WhereOp>(s)) {
        std::optional<double> first = reader.splat(where.getLhs());
        if (first && !reader.splat(where.getRhs()) &&
            reachesScores(where.getRhs())) {
          if (mask || !(*first * scaleAbove <= kFiniteCausalFillMax) ||
              where.getType() != where.getRhs().getType())
            return failure();
          mask = where.getCondition();
          maskNegated = true;
          maskFill = *first * scaleAbove;
          maskScale = scaleAbove;
          s = where.getRhs();
          continue;
        }
        std::optional<double> fill = reader.splat(where.getRhs());
        if (!fill || !isMaskValue(*fill * scaleAbove) ||
            where.getType() != where.getLhs().getType())
          return failure();
        if (mask) {
          // Below an additive mask, with no scale between, and only one: a
          // finite fill that absorbs the scores (at most -1e30, as
          // causal_fill), since it ends up added to them.
          // The two masks may have to become one (sumOfMasks).
          if (innerCondition || isBoolMask(mask) || scaleAbove != maskScale ||
              !std::isfinite(*fill) ||
              !(*fill * scaleAbove <= kFiniteCausalFillMax) || softcap > 0 ||
              !broadcastable(where.getCondition(), mask))
            return failure();
          innerCondition = where.getCondition();
          innerFill = *fill * scaleAbove;
        } else {
          mask = where.getCondition();
        }
        s = where.getLhs();
        continue;
      }
      if (auto add = defining<dfg::AddOp>(s)) {
        bool lhsScores = reachesScores(add.getLhs());
        if (!(scaleAbove > 0) || lhsScores == reachesScores(add.getRhs()))
          return failure();
        Value scores = lhsScores ? add.getLhs() : add.getRhs();
        Value other = lhsScores ? add.getRhs() : add.getLhs();
        if (scores.getType() != add.getType())
          return failure();
        if (mask) {
          // A second additive mask, with no scale between: the op adds the
          // sum of the two (built once the match stands).
          if (extraMask || innerCondition ||
              (isBoolMask(mask) && !maskNegated) || isBoolMask(other) ||
              scaleAbove != maskScale || softcap > 0 ||
              !broadcastable(mask, other))
            return failure();
          extraMask = other;
        } else {
          maskScale = scaleAbove;
          mask = other;
        }
        s = scores;
        continue;
      }
      break;
    }
    scale *= scaleAbove;
    // The clamp only lifts scores already below -1e30 to c: keys the mask
    // hides. A key visible to a query scores above it and weighs the same;
    // a row with every key hidden scores the mask's finite fill F (S + F
    // rounds to F) or c, uniform either way. So the clamp is dropped where
    // the mask is where(cond, 0, F) with F finite and at most -1e30, and
    // alone (with -inf fills those rows would differ).
    if (clamped) {
      auto where = mask ? defining<dfg::WhereOp>(mask) : dfg::WhereOp();
      std::optional<double> zero, fill;
      if (where) {
        zero = reader.splat(where.getLhs());
        fill = reader.splat(where.getRhs());
      }
      if (!where || extraMask || innerCondition || !zero || *zero != 0.0 ||
          !fill || !std::isfinite(*fill) ||
          !(*fill * maskScale <= kFiniteCausalFillMax))
        return failure();
    }

    // 3. Scores = Q K^T.
    auto scores = defining<dfg::MatMulOp>(s);
    if (!scores)
      return failure();
    Value q = stripScale(scores.getLhs(), scale, reader);
    Value scoresRhs = stripScale(scores.getRhs(), scale, reader);
    Value kT = keyOfTranspose(scoresRhs, shapes);
    // K^T as one transpose of another layout (GPT-2's TorchScript export
    // writes transpose(X, [0, 2, 3, 1]) of the [B, S, H, D] view): K is
    // transpose(X, P) with P that perm's last two entries swapped, made
    // only once the match has succeeded.
    Value keyView;
    SmallVector<int64_t> keyPerm;
    if (!kT) {
      auto t = defining<dfg::TransposeOp>(scoresRhs);
      if (!t || t.getPerm().size() != 4)
        return failure();
      keyView = t.getInput();
      keyPerm.assign(t.getPerm().begin(), t.getPerm().end());
      std::swap(keyPerm[2], keyPerm[3]);
    }
    Value k = kT ? stripScale(kT, scale, reader) : Value();

    // 4. GQA repetition and KV cache.
    auto [key, kRepeat] =
        k ? stripRepeat(k, shapes) : std::pair<Value, int64_t>(Value(), 1);
    auto [value, vRepeat] = stripRepeat(op.getRhs(), shapes);
    if (kRepeat != vRepeat || !(scale > 0))
      return failure();
    auto qt = cast<RankedTensorType>(q.getType());
    RankedTensorType kt;
    if (key) {
      kt = cast<RankedTensorType>(key.getType());
    } else {
      auto view = cast<RankedTensorType>(keyView.getType());
      SmallVector<int64_t> shape;
      for (int64_t p : keyPerm)
        shape.push_back(view.getDimSize(p));
      kt = RankedTensorType::get(shape, view.getElementType());
    }
    auto vt = cast<RankedTensorType>(value.getType());
    // Multi-query attention written as the matmuls' broadcast of one key and
    // value head over the query heads (Falcon's exports).
    if (kRepeat == 1 && vRepeat == 1 && qt.getRank() == 4 &&
        kt.getRank() == 4 && vt.getRank() == 4 && !qt.isDynamicDim(1) &&
        kt.getDimSize(1) == 1 && vt.getDimSize(1) == 1)
      kRepeat = vRepeat = qt.getDimSize(1);
    // Heads and head sizes must be static; batch and lengths may be
    // symbolic.
    if (qt.getRank() != 4 || kt.getRank() != 4 || vt.getRank() != 4 ||
        qt.getElementType() != element || qt.isDynamicDim(1) ||
        kt.isDynamicDim(1) || qt.isDynamicDim(3) || kt.isDynamicDim(3) ||
        qt.getDimSize(1) != kt.getDimSize(1) * kRepeat)
      return failure();
    Value pastK, pastV, newK = key, newV = value;
    auto kCat = key ? cacheConcat(key) : dfg::ConcatOp(),
         vCat = cacheConcat(value);
    if (kCat && vCat) {
      pastK = kCat.getInputs()[0];
      pastV = vCat.getInputs()[0];
      newK = kCat.getInputs()[1];
      newV = vCat.getInputs()[1];
      if (!dfg::sameDim(shapes.dims(pastK)[2], shapes.dims(pastV)[2]) ||
          !dfg::sameDim(shapes.dims(newK)[2], shapes.dims(newV)[2])) {
        pastK = pastV = Value();
        newK = key;
        newV = value;
      }
    }

    for (Value m : {mask, extraMask}) {
      if (!m)
        continue;
      auto mt = cast<RankedTensorType>(m.getType());
      if (!mt.getElementType().isInteger(1) && mt.getElementType() != element)
        return failure();
    }
    // From here on the match stands: the rest may build ops.
    if (mask && maskScale != 1.0)
      mask = scaledMask(mask, maskScale, rewriter);
    if (extraMask && maskScale != 1.0)
      extraMask = scaledMask(extraMask, maskScale, rewriter);

    // masked_fill's mask as the additive where(not(c), 0, F): a row whose
    // every key is masked spreads over all keys, as the fill makes it (F
    // becomes causal_fill in step 5 where the mask holds the causal limit).
    if (maskNegated)
      mask = filledMask(negated(mask, reader, rewriter), maskFill, element,
                        rewriter);

    // 5. A causal mask becomes the flag; so does the causal factor of a
    //    conjunction (HF's causal and padding masks), the rest staying the
    //    operand.
    bool causal = false;
    double causalFill = -std::numeric_limits<double>::infinity();
    AffineExpr pastLen = pastK ? shapes.dims(pastK)[2]
                               : getAffineConstantExpr(0, op.getContext());
    AffineExpr keysLen =
        key ? shapes.dims(key)[2] : shapes.dims(keyView)[keyPerm[2]];
    AffineExpr queriesLen = shapes.dims(q)[2];
    auto isCausal = [&](Value m) {
      if (qt.hasStaticShape() && kt.hasStaticShape() &&
          (!pastK ||
           cast<RankedTensorType>(pastK.getType()).hasStaticShape())) {
        int64_t queries = qt.getDimSize(2), keys = kt.getDimSize(2);
        int64_t past =
            pastK ? cast<RankedTensorType>(pastK.getType()).getDimSize(2) : 0;
        if (keys - queries == past &&
            isCausalMask(m, queries, keys, past, reader))
          return true;
      }
      return isSymbolicCausalMask(m, queriesLen, keysLen, pastLen, shapes,
                                  reader);
    };
    if (innerCondition) {
      // where(c, S, F) + mask: a key that c masks scores F + mask. With c
      // causal, and the mask causal too or its causal factor filling those
      // keys with F' where F + F' overflows to -inf (HF's causal and
      // padding mask beside GPT-Neo's causal bias, both finfo.min), every
      // key past the limit is -inf: the op is causal, the mask's other
      // factors its mask. (A wholly causal mask leaves every row a key
      // without a fill, beside which the keys past the limit weigh zero
      // however they are filled.) A c that keeps fewer keys than the
      // limit (GPT-Neo's banded local bias) gives the same causal op with
      // where(c, 0, F) added to its mask. Otherwise the two become one
      // additive mask, where(c, 0, F) + mask: S + F rounds to F (F is at
      // most -1e30), as the Where writes it.
      bool innerCausal = isCausal(innerCondition);
      bool innerWithin =
          innerCausal || keepsOnlyCausalKeys(innerCondition, queriesLen,
                                             keysLen, pastLen, shapes, reader);
      Type element = cast<RankedTensorType>(mask.getType()).getElementType();
      double fill = 0.0;
      if (innerCausal && isCausal(mask)) {
        causal = true;
        mask = Value();
      } else if (std::optional<Value> rest =
                     innerWithin
                         ? splitCausalFactor(mask, queriesLen, keysLen, pastLen,
                                             shapes, reader, rewriter, fill)
                         : std::nullopt;
                 rest && std::isinf(static_cast<float>(innerFill) +
                                    static_cast<float>(fill))) {
        causal = true;
        mask = *rest;
        if (!innerCausal) {
          Value band = filledMask(innerCondition, innerFill, element, rewriter);
          mask = mask ? sumOfMasks(band, mask, rewriter) : band;
        }
      } else {
        mask =
            sumOfMasks(filledMask(innerCondition, innerFill, element, rewriter),
                       mask, rewriter);
      }
    } else if (mask && isCausal(mask)) {
      causal = true;
      mask = Value();
    } else if (mask) {
      if (std::optional<Value> rest =
              splitCausalFactor(mask, queriesLen, keysLen, pastLen, shapes,
                                reader, rewriter, causalFill)) {
        causal = true;
        mask = *rest;
      }
    }

    // The second additive mask joins what step 5 left of the first: a key
    // past a causal limit scores the fill (or -inf) whatever it adds, as
    // it does the first mask's value.
    if (extraMask)
      mask = mask ? sumOfMasks(mask, extraMask, rewriter) : extraMask;

    if (keyView)
      newK = key =
          dfg::TransposeOp::create(rewriter, op.getLoc(), kt, keyView, keyPerm);
    SmallVector<Type> present;
    if (pastK)
      present = {key.getType(), value.getType()};
    Value sinks;
    if (sinkValues) {
      int64_t heads = shapeOf(sinkValues)[shapeOf(sinkValues).size() - 3];
      sinks = dfg::ReshapeOp::create(
          rewriter, op.getLoc(),
          RankedTensorType::get(
              {heads},
              cast<RankedTensorType>(sinkValues.getType()).getElementType()),
          sinkValues, rewriter.getDenseI64ArrayAttr({heads}));
    }
    auto attention = dfg::AttentionOp::create(
        rewriter, op.getLoc(), op.getType(), present, q, newK, newV, mask,
        pastK, pastV, /*past_lengths=*/Value(), sinks,
        rewriter.getF32FloatAttr(static_cast<float>(scale)),
        rewriter.getBoolAttr(causal),
        rewriter.getF32FloatAttr(static_cast<float>(softcap)),
        rewriter.getBoolAttr(softcapFirst),
        // Only a padding mask left beside it can mask a whole row.
        std::isfinite(causalFill) && mask
            ? rewriter.getF32FloatAttr(static_cast<float>(causalFill))
            : FloatAttr());
    if (pastK) {
      // Later readers of the extended cache (the present outputs) read the
      // op's results; the decomposed chain before it dies with the root.
      auto later = [&](OpOperand &use) {
        return attention->isBeforeInBlock(use.getOwner());
      };
      rewriter.replaceUsesWithIf(key, attention.getPresent()[0], later);
      rewriter.replaceUsesWithIf(value, attention.getPresent()[1], later);
    }
    rewriter.replaceOp(op, attention.getResult());
    return success();
  }

  /// The additive mask a + b (bool masks as 0 / -inf).
  static Value sumOfMasks(Value a, Value b, PatternRewriter &rewriter) {
    auto at = cast<RankedTensorType>(a.getType()),
         bt = cast<RankedTensorType>(b.getType());
    Type element = at.getElementType().isInteger(1) ? bt.getElementType()
                                                    : at.getElementType();
    auto additive = [&](Value m) -> Value {
      return cast<RankedTensorType>(m.getType()).getElementType().isInteger(1)
                 ? filledMask(m, -std::numeric_limits<double>::infinity(),
                              element, rewriter)
                 : m;
    };
    // Checked when the pattern matched (or the mask's parts broadcast as it
    // does).
    auto shape =
        llvm::cantFail(dfg::broadcastShapes(at.getShape(), bt.getShape()));
    return dfg::AddOp::create(rewriter, a.getLoc(),
                              RankedTensorType::get(shape, element),
                              additive(a), additive(b));
  }

  /// The additive mask `mask * factor`: a Where of two splat constants
  /// (HF's 0 / finfo.min) becomes the Where of the scaled constants, so
  /// that step 5 still reads its fill; any other mask is multiplied.
  Value scaledMask(Value mask, double factor, PatternRewriter &rewriter) const {
    Location loc = mask.getLoc();
    auto splatOf = [&](Type type, double v) -> Value {
      auto t = cast<RankedTensorType>(type);
      return dfg::ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(t, FloatAttr::get(t.getElementType(), v)));
    };
    if (auto where = defining<dfg::WhereOp>(mask)) {
      std::optional<double> keep = reader.splat(where.getLhs());
      std::optional<double> fill = reader.splat(where.getRhs());
      if (keep && fill)
        return dfg::WhereOp::create(
            rewriter, loc, where.getType(), where.getCondition(),
            splatOf(where.getLhs().getType(), *keep * factor),
            splatOf(where.getRhs().getType(), *fill * factor));
    }
    auto mt = cast<RankedTensorType>(mask.getType());
    return dfg::MulOp::create(
        rewriter, loc, mt, mask,
        splatOf(RankedTensorType::get({}, mt.getElementType()), factor));
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

/// Step 5 on a dfg.attention that is not causal and has a mask: the causal
/// mask, or the causal factor of a conjunction, becomes the flag.
struct CausalFromMask : OpRewritePattern<dfg::AttentionOp> {
  CausalFromMask(MLIRContext *ctx, const ConstantReader &reader,
                 dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Value mask = op.getMask();
    // With past_lengths the causal flag counts from each row's own history,
    // which a mask causal from the past's length is not.
    if (op.getCausal() || !mask || op.getPastLengths())
      return failure();
    Value pastK = op.getPastKey();
    AffineExpr queries = shapes.dims(op.getQuery())[2];
    AffineExpr past = pastK ? shapes.dims(pastK)[2]
                            : getAffineConstantExpr(0, op.getContext());
    AffineExpr keys = shapes.dims(op.getKey())[2] + past;
    Value rest;
    double fill = -std::numeric_limits<double>::infinity();
    auto qt = cast<RankedTensorType>(op.getQuery().getType());
    auto kt = cast<RankedTensorType>(op.getKey().getType());
    auto staticLength = [](AffineExpr e) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      return c ? std::optional<int64_t>(c.getValue()) : std::nullopt;
    };
    std::optional<int64_t> p = staticLength(past);
    bool whole =
        qt.hasStaticShape() && kt.hasStaticShape() && p &&
        isCausalMask(mask, qt.getDimSize(2), kt.getDimSize(2) + *p, *p, reader);
    if (!whole)
      whole = isSymbolicCausalMask(mask, queries, keys, past, shapes, reader);
    if (!whole) {
      std::optional<Value> split = splitCausalFactor(
          mask, queries, keys, past, shapes, reader, rewriter, fill);
      if (!split)
        return failure();
      rest = *split;
    }
    auto causal = dfg::AttentionOp::create(
        rewriter, op.getLoc(), op.getResultTypes(), op.getQuery(), op.getKey(),
        op.getValue(), rest, pastK, op.getPastValue(), op.getPastLengths(),
        op.getSinks(), op.getScaleAttr(), rewriter.getBoolAttr(true),
        op.getSoftcapAttr(), op.getSoftcapFirstAttr(),
        std::isfinite(fill) && rest
            ? rewriter.getF32FloatAttr(static_cast<float>(fill))
            : FloatAttr());
    rewriter.replaceOp(op, causal->getResults());
    return success();
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

/// transpose(where(c, a, b)) with scalar a and b, c of the where's rank
///   -> where(transpose(c), a, b)
/// A mask's layout moved onto its condition (GPT-BigCode under
/// transformers 4.x transposes the additive mask it built on [batch,
/// queries, 1, keys]), where the bool layout patterns below and the causal
/// analysis see it.
struct TransposeOfSelect : OpRewritePattern<dfg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dfg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto where = op.getInput().getDefiningOp<dfg::WhereOp>();
    if (!where || !where->hasOneUse())
      return failure();
    auto rankOf = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getRank();
    };
    if (rankOf(where.getLhs()) != 0 || rankOf(where.getRhs()) != 0 ||
        rankOf(where.getCondition()) != rankOf(op.getInput()))
      return failure();
    Value cond = dfg::TransposeOp::create(
        rewriter, op.getLoc(), where.getCondition(), op.getPermAttr());
    rewriter.replaceOpWithNewOp<dfg::WhereOp>(op, op.getType(), cond,
                                              where.getLhs(), where.getRhs());
    return success();
  }
};

/// transpose(unsqueeze(x, axes), perm) of bools, perm keeping the order of
/// x's axes -> unsqueeze(x, the positions perm gives the inserted axes)
/// (only the unit axes move: GPT-BigCode's mask heads, unsqueezed at axis 2
/// and moved to axis 1).
struct TransposeOfUnsqueeze : OpRewritePattern<dfg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(dfg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto unsqueeze = op.getInput().getDefiningOp<dfg::UnsqueezeOp>();
    if (!unsqueeze || !op.getType().getElementType().isInteger(1))
      return failure();
    int64_t rank = op.getType().getRank();
    SmallVector<bool> inserted(rank, false);
    for (int64_t a : unsqueeze.getAxes())
      inserted[a < 0 ? a + rank : a] = true;
    SmallVector<int64_t> axes;
    int64_t last = -1;
    for (auto [o, in] : llvm::enumerate(op.getPerm())) {
      if (inserted[in]) {
        axes.push_back(static_cast<int64_t>(o));
      } else {
        if (in < last)
          return failure();
        last = in;
      }
    }
    rewriter.replaceOpWithNewOp<dfg::UnsqueezeOp>(
        op, op.getType(), unsqueeze.getInput(),
        rewriter.getDenseI64ArrayAttr(axes));
    return success();
  }
};

} // namespace

void populateMaskLayoutPatterns(RewritePatternSet &patterns) {
  patterns.add<TransposeOfSelect, TransposeOfUnsqueeze>(patterns.getContext());
}

void populateRaiseAttentionPatterns(RewritePatternSet &patterns,
                                    const ConstantReader &reader,
                                    dfg::SymbolicShapes &shapes) {
  patterns.add<SoftmaxAttention, CausalFromMask>(patterns.getContext(), reader,
                                                 shapes);
}

} // namespace meshc::graph
