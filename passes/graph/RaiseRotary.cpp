//===- RaiseRotary.cpp - Rotate-half RoPE -> dfg.rotary -------------------===//
//
// Part of meshc. Llama-family exporters write rotary embeddings as
// `x * cos + rotate_half(x) * sin` with `rotate_half(x) = concat(-x2, x1)`
// over the two halves of the head dimension, and cos/sin tables whose two
// halves repeat the same frequencies (`emb = cat(freqs, freqs)`). The
// pattern only fires when that repetition is proven: structurally, through
// whatever elementwise ops compute the tables from concat(f, f) in the
// graph (cos, sin, casts, HF's attention scaling), or by reading the
// table's values. Partial rotary
// (GPT-NeoX, Phi: only the first r features of a head turn) is the same on
// a slice of the head, concatenated with the rest.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace meshc::graph {
namespace {

/// True if `axis` (possibly negative) names the last of `rank` dimensions.
bool isLastAxis(int64_t axis, int64_t rank) {
  return axis == rank - 1 || axis == -1;
}

/// The range [begin, end) that a unit-step slice of the last dimension (of
/// static size `dim`) takes, or std::nullopt for any other slice.
std::optional<std::pair<int64_t, int64_t>> lastDimRange(dfg::SliceOp slice,
                                                        int64_t dim) {
  int64_t rank = cast<RankedTensorType>(slice.getInput().getType()).getRank();
  if (slice.getAxes().size() != 1 || slice.getSteps()[0] != 1)
    return std::nullopt;
  if (!isLastAxis(slice.getAxes()[0], rank))
    return std::nullopt;
  auto clampIndex = [dim](int64_t i) {
    if (i < 0)
      i += dim;
    return std::clamp<int64_t>(i, 0, dim);
  };
  return std::make_pair(clampIndex(slice.getStarts()[0]),
                        clampIndex(slice.getEnds()[0]));
}

/// True if `v` is the half [lo, lo + half) of the last dimension of `x`
/// (lower or upper): such a slice, or that result of a split in two halves.
bool isHalfOf(Value v, Value x, int64_t dim, bool upper) {
  int64_t half = dim / 2;
  if (auto slice = defining<dfg::SliceOp>(v)) {
    auto range = lastDimRange(slice, dim);
    int64_t lo = upper ? half : 0;
    return slice.getInput() == x && range && range->first == lo &&
           range->second == lo + half;
  }
  auto split = defining<dfg::SplitOp>(v);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  return split && split.getInput() == x &&
         isLastAxis(static_cast<int64_t>(split.getAxis()), rank) &&
         split.getSizes() == ArrayRef<int64_t>{half, half} &&
         v == split.getResult(upper ? 1 : 0);
}

/// True if `r = concat(-x2, x1)` over the last dimension: rotate_half(x).
bool isRotateHalf(Value r, Value x) {
  auto concat = defining<dfg::ConcatOp>(r);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t dim = xt.getShape().back();
  if (!concat || concat.getInputs().size() != 2 || ShapedType::isDynamic(dim) ||
      dim % 2)
    return false;
  if (!isLastAxis(static_cast<int64_t>(concat.getAxis()), xt.getRank()))
    return false;
  auto neg = defining<dfg::NegOp>(concat.getInputs()[0]);
  return neg && isHalfOf(neg.getInput(), x, dim, /*upper=*/true) &&
         isHalfOf(concat.getInputs()[1], x, dim, /*upper=*/false);
}

/// A value holding the first half of the table `table` (last dimension
/// `dim`), provided both halves are equal; null if that is not proven. With
/// a null `rewriter` it only checks, and returns `table` on success.
///
/// Equal halves are proven structurally, whatever computes the table from
/// the frequencies: concat(f, f) over the last axis; any elementwise op
/// (cos, sin, a Cast, HF's `* attention_scaling`, ...) whose operands either
/// have equal halves themselves or are constant along the last axis (a
/// scalar, a size-1 last dimension); a gather of table rows; an unsqueeze
/// that keeps the last axis; or, for a literal or weight, by reading it.
/// The rewritten chain computes the same ops on the first halves.
Value firstHalfOfTable(Value table, int64_t dim, PatternRewriter *rewriter,
                       const ConstantReader &reader, int depth = 0) {
  auto type = cast<RankedTensorType>(table.getType());
  if (depth > 16 || !type.getRank() || type.getShape().back() != dim)
    return {};
  int64_t half = dim / 2;
  SmallVector<int64_t> halfShape(type.getShape());
  halfShape.back() = half;
  auto halfType = RankedTensorType::get(halfShape, type.getElementType());
  Location loc = table.getLoc();
  int64_t last = type.getRank() - 1;
  // concat(f, f) -> f
  if (auto concat = defining<dfg::ConcatOp>(table)) {
    if (concat.getInputs().size() == 2 &&
        concat.getInputs()[0] == concat.getInputs()[1] &&
        isLastAxis(static_cast<int64_t>(concat.getAxis()), type.getRank()))
      return rewriter ? concat.getInputs()[0] : table;
  }
  // op(a, b, ...) -> op(half(a), b, ...) for an elementwise op whose
  // operands have equal halves or broadcast along the last axis.
  Operation *def = table.getDefiningOp();
  if (def && isa<dfg::ElementwiseOpInterface>(def) &&
      def->getNumResults() == 1) {
    SmallVector<Value> halves;
    bool anyHalved = false;
    for (Value operand : def->getOperands()) {
      auto ot = cast<RankedTensorType>(operand.getType());
      if (!ot.getRank() || ot.getShape().back() == 1) {
        halves.push_back(operand);
        continue;
      }
      Value h = firstHalfOfTable(operand, dim, rewriter, reader, depth + 1);
      if (!h)
        return {};
      halves.push_back(h);
      anyHalved = true;
    }
    if (!anyHalved)
      return {};
    if (!rewriter)
      return table;
    IRMapping mapping;
    mapping.map(def->getOperands(), halves);
    Operation *clone = rewriter->clone(*def, mapping);
    clone->getResult(0).setType(halfType);
    return clone->getResult(0);
  }
  // gather(t, positions) -> gather(first half of t, positions): the table
  // rows of a dynamic-axes export, looked up at Range positions.
  if (auto gather = defining<dfg::GatherOp>(table)) {
    auto data = cast<RankedTensorType>(gather.getData().getType());
    if (data.getRank() != 2 || gather.getAxis() != 0)
      return {};
    Value h =
        firstHalfOfTable(gather.getData(), dim, rewriter, reader, depth + 1);
    if (!h || !rewriter)
      return h ? table : Value();
    return dfg::GatherOp::create(*rewriter, loc, halfType, h,
                                 gather.getIndices(), 0);
  }
  // unsqueeze(t) -> unsqueeze(first half of t)
  if (auto unsqueeze = defining<dfg::UnsqueezeOp>(table)) {
    Value h = firstHalfOfTable(unsqueeze.getInput(), dim, rewriter, reader,
                               depth + 1);
    if (!h || !rewriter)
      return h ? table : Value();
    return dfg::UnsqueezeOp::create(*rewriter, loc, halfType, h,
                                    unsqueeze.getAxes());
  }
  // A literal or weight whose halves are read and compared.
  std::optional<dfg::EvalTensor> values = reader.read(table);
  if (!values)
    return {};
  for (int64_t row = 0, rows = values->numElements() / dim; row < rows; ++row)
    for (int64_t i = 0; i < half; ++i)
      if (values->values[row * dim + i] != values->values[row * dim + half + i])
        return {};
  if (!rewriter)
    return table;
  auto &b = *rewriter;
  return dfg::SliceOp::create(
      b, loc, halfType, table, b.getDenseI64ArrayAttr({0}),
      b.getDenseI64ArrayAttr({half}), b.getDenseI64ArrayAttr({last}),
      b.getDenseI64ArrayAttr({1}));
}

/// x * cos + rotate_half(x) * sin -> rotary(x, cos[..., :d/2], sin[..., :d/2])
///   (half-split RoPE over the whole head; cos/sin halves proven equal)
struct RotateHalfToRotary : OpRewritePattern<dfg::AddOp> {
  RotateHalfToRotary(MLIRContext *ctx, const ConstantReader &reader,
                     dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::AddOp op,
                                PatternRewriter &rewriter) const override {
    auto type = op.getType();
    // Batch and sequence may be symbolic; the head size is not.
    if (type.getRank() != 4 || type.isDynamicDim(1) || type.isDynamicDim(3))
      return failure();
    for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto direct = defining<dfg::MulOp>(a), rotated = defining<dfg::MulOp>(b);
      if (!direct || !rotated)
        continue;
      for (auto [x, cos] : {std::pair(direct.getLhs(), direct.getRhs()),
                            std::pair(direct.getRhs(), direct.getLhs())}) {
        if (x.getType() != type)
          continue;
        for (auto [r, sin] : {std::pair(rotated.getLhs(), rotated.getRhs()),
                              std::pair(rotated.getRhs(), rotated.getLhs())}) {
          if (!isRotateHalf(r, x) || cos.getType() != sin.getType())
            continue;
          if (succeeded(rewrite(op, x, cos, sin, rewriter)))
            return success();
        }
      }
    }
    return failure();
  }

  /// Builds the rotary op once the tables are shown to be [1 | B, 1, S, D]
  /// (or [S, D]) with equal halves.
  LogicalResult rewrite(dfg::AddOp op, Value x, Value cos, Value sin,
                        PatternRewriter &rewriter) const {
    auto xt = cast<RankedTensorType>(x.getType());
    auto ct = cast<RankedTensorType>(cos.getType());
    int64_t dim = xt.getDimSize(3);
    // Sizes compared as symbolic dimensions (static ones are constants).
    SmallVector<AffineExpr> xd(shapes.dims(x)), cd(shapes.dims(cos));
    auto one = getAffineConstantExpr(1, op.getContext());
    if (ct.getRank() < 2 || ct.getRank() > 4 ||
        ct.isDynamicDim(ct.getRank() - 1) || ct.getShape().back() != dim ||
        !dfg::sameDim(cd[ct.getRank() - 2], xd[2]))
      return failure();
    // Per-row tables: [b, 1, S, D] with b in {1, B}, or [1, S, D] / [S, D].
    int64_t rows = 1;
    if (ct.getRank() == 4) {
      if (!dfg::sameDim(cd[1], one) ||
          (!dfg::sameDim(cd[0], one) && !dfg::sameDim(cd[0], xd[0])))
        return failure();
      rows = ct.getDimSize(0);
    } else if (ct.getRank() == 3 && !dfg::sameDim(cd[0], one)) {
      return failure();
    }
    // Check both tables before creating anything for either.
    if (!firstHalfOfTable(cos, dim, nullptr, reader) ||
        !firstHalfOfTable(sin, dim, nullptr, reader))
      return failure();
    Value cosHalf = firstHalfOfTable(cos, dim, &rewriter, reader);
    Value sinHalf = firstHalfOfTable(sin, dim, &rewriter, reader);
    int64_t seq = xt.getDimSize(2);
    auto tableType =
        RankedTensorType::get({rows, seq, dim / 2}, ct.getElementType());
    auto flat = [&](Value half) -> Value {
      // [rows, S, D/2]; a symbolic S (or rows) is inferred or copied.
      SmallVector<int64_t> spec{rows, seq, dim / 2};
      if (ShapedType::isDynamic(seq))
        spec[1] = -1;
      if (ShapedType::isDynamic(rows))
        spec[0] = ShapedType::isDynamic(seq) ? 0 : -1;
      return dfg::ReshapeOp::create(rewriter, op.getLoc(), tableType, half,
                                    rewriter.getDenseI64ArrayAttr(spec));
    };
    rewriter.replaceOpWithNewOp<dfg::RotaryOp>(
        op, op.getType(), x, flat(cosHalf), flat(sinHalf), Value(),
        /*interleaved=*/false, dim);
    return success();
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

/// concat(rotary(x[..., :r]), x[..., r:]) -> rotary(x, rotary_dim = r)
///   (partial rotary: only the first r features of each head turn)
struct PartialRotary : OpRewritePattern<dfg::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto type = op.getType();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (op.getInputs().size() != 2 || type.getRank() != 4 ||
        !isLastAxis(axis, 4) || !type.hasStaticShape())
      return failure();
    auto rotary = defining<dfg::RotaryOp>(op.getInputs()[0]);
    auto rotated =
        rotary ? defining<dfg::SliceOp>(rotary.getInput()) : dfg::SliceOp();
    auto pass = defining<dfg::SliceOp>(op.getInputs()[1]);
    if (!rotated || !pass || rotated.getInput() != pass.getInput() ||
        rotated.getInput().getType() != type)
      return failure();
    int64_t dim = type.getDimSize(3);
    int64_t r = static_cast<int64_t>(rotary.getRotaryDim());
    auto head = lastDimRange(rotated, dim), tail = lastDimRange(pass, dim);
    if (!head || !tail || *head != std::pair<int64_t, int64_t>(0, r) ||
        *tail != std::pair<int64_t, int64_t>(r, dim) ||
        rotary.getType().getDimSize(3) != r)
      return failure();
    rewriter.replaceOpWithNewOp<dfg::RotaryOp>(
        op, type, rotated.getInput(), rotary.getCos(), rotary.getSin(),
        rotary.getPositions(), rotary.getInterleaved(), r);
    return success();
  }
};

} // namespace

void populateRaiseRotaryPatterns(RewritePatternSet &patterns,
                                 const ConstantReader &reader,
                                 dfg::SymbolicShapes &shapes) {
  patterns.add<RotateHalfToRotary>(patterns.getContext(), reader, shapes);
  patterns.add<PartialRotary>(patterns.getContext());
}

} // namespace meshc::graph
