//===- RaiseRotary.cpp - Rotate-half RoPE -> dfg.rotary -------------------===//
//
// Part of meshc. Llama-family exporters write rotary embeddings as
// `x * cos + rotate_half(x) * sin` with `rotate_half(x) = concat(-x2, x1)`
// over the two halves of the head dimension, and cos/sin tables whose two
// halves repeat the same frequencies (`emb = cat(freqs, freqs)`). The
// pattern only fires when that repetition is proven: structurally, through
// whatever elementwise ops compute the tables from concat(f, f) in the
// graph (cos, sin, casts, HF's attention scaling), or by reading the
// table's values. Interleaved RoPE (GPT-J, CodeGen, Cohere, GLM:
// `rotate_every_two(x) = stack(-x[1::2], x[0::2]).flatten(-1)` with tables
// `repeat_interleave(f, 2)`) is proven the same way, on pairs instead of
// halves. Partial rotary (GPT-NeoX, Phi, GPT-J: only the first r features
// of a head turn) is the same on a slice of the head, concatenated with the
// rest. Heads may sit before or after the sequence (`[B, H, S, D]`, or
// GPT-J's `[B, S, H, D]`, rotated between two transposes). gpt-oss writes
// the rotation out on the halves, concat(x1 cos - x2 sin, x2 cos + x1 sin),
// with tables of the angles once: nothing to prove about them; DeepSeek-V3
// the same on the even and odd features (x[..., ::2], x[..., 1::2]), which
// is the rotation of their concatenation. Rotate-half the other way
// (NanoChat's `concat(x2, -x1)`, and its interleaved counterpart) turns by
// the negated angles: the rotary's sine table is negated.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/Eval/Evaluator.h"
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

/// `t` (4-D) with dimensions 1 and 2 swapped: the type of its transpose by
/// [0, 2, 1, 3].
RankedTensorType middleSwapped(RankedTensorType t) {
  return RankedTensorType::get(
      {t.getDimSize(0), t.getDimSize(2), t.getDimSize(1), t.getDimSize(3)},
      t.getElementType());
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

/// True if `r = concat(-x2, x1)` over the last dimension: rotate_half(x);
/// also `concat(x2, -x1)`, the rotation the other way (NanoChat's), with
/// `flipped` set.
bool isRotateHalf(Value r, Value x, bool &flipped) {
  auto concat = defining<dfg::ConcatOp>(r);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t dim = xt.getShape().back();
  if (!concat || concat.getInputs().size() != 2 || ShapedType::isDynamic(dim) ||
      dim % 2)
    return false;
  if (!isLastAxis(static_cast<int64_t>(concat.getAxis()), xt.getRank()))
    return false;
  Value first = concat.getInputs()[0], second = concat.getInputs()[1];
  if (auto neg = defining<dfg::NegOp>(first);
      neg && isHalfOf(neg.getInput(), x, dim, /*upper=*/true) &&
      isHalfOf(second, x, dim, /*upper=*/false)) {
    flipped = false;
    return true;
  }
  auto neg = defining<dfg::NegOp>(second);
  flipped = true;
  return neg && isHalfOf(first, x, dim, /*upper=*/true) &&
         isHalfOf(neg.getInput(), x, dim, /*upper=*/false);
}

/// True if `v = x[..., odd::2]`: the even (odd = false) or odd features of
/// the last dimension (of static size `dim`) of `x`.
bool isEveryOtherOf(Value v, Value x, int64_t dim, bool odd) {
  auto slice = defining<dfg::SliceOp>(v);
  if (!slice || slice.getInput() != x || slice.getAxes().size() != 1 ||
      slice.getSteps()[0] != 2)
    return false;
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t start = slice.getStarts()[0], end = slice.getEnds()[0];
  if (end < 0)
    end += dim;
  return isLastAxis(slice.getAxes()[0], rank) && start == (odd ? 1 : 0) &&
         end >= dim;
}

/// True if `v` is `x` with a trailing dimension of 1 (an unsqueeze of the
/// last axis), as torch.stack over the last axis writes its operands.
Value unsqueezedLast(Value v) {
  auto unsqueeze = defining<dfg::UnsqueezeOp>(v);
  if (!unsqueeze || unsqueeze.getAxes().size() != 1)
    return {};
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  int64_t axis = unsqueeze.getAxes()[0];
  return axis == -1 || axis == rank - 1 ? unsqueeze.getInput() : Value();
}

/// True if `r = stack(-x[..., 1::2], x[..., 0::2], -1).flatten(-2)`:
/// rotate_every_two(x), the interleaved form of rotate_half; also
/// `stack(x[..., 1::2], -x[..., 0::2])`, the other way, with `flipped` set.
/// The flattening reshape keeps every other dimension (compared as symbolic
/// sizes).
bool isRotateEveryTwo(Value r, Value x, dfg::SymbolicShapes &shapes,
                      bool &flipped) {
  auto reshape = defining<dfg::ReshapeOp>(r);
  auto xt = cast<RankedTensorType>(x.getType());
  int64_t dim = xt.getShape().back(), rank = xt.getRank();
  if (!reshape || r.getType() != xt || ShapedType::isDynamic(dim) || dim % 2)
    return false;
  auto concat = defining<dfg::ConcatOp>(reshape.getInput());
  if (!concat || concat.getInputs().size() != 2 ||
      !isLastAxis(static_cast<int64_t>(concat.getAxis()), rank + 1) ||
      concat.getType().getShape().take_back(2) != ArrayRef<int64_t>{dim / 2, 2})
    return false;
  Value odd = unsqueezedLast(concat.getInputs()[0]);
  Value even = unsqueezedLast(concat.getInputs()[1]);
  if (!odd || !even)
    return false;
  // The negated half; what is left of it is read as it is.
  auto negOf = [](Value &v) {
    auto neg = defining<dfg::NegOp>(v);
    if (neg)
      v = neg.getInput();
    return static_cast<bool>(neg);
  };
  bool oddNegated = negOf(odd);
  bool evenNegated = !oddNegated && negOf(even);
  flipped = evenNegated;
  if ((!oddNegated && !evenNegated) || !isEveryOtherOf(odd, x, dim, true) ||
      !isEveryOtherOf(even, x, dim, false))
    return false;
  ArrayRef<AffineExpr> rd = shapes.dims(r), xd = shapes.dims(x);
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!dfg::sameDim(rd[i], xd[i]))
      return false;
  return true;
}

/// How a rotation pairs the features it turns together: `x[i]` with
/// `x[i + d/2]` (Halves) or `x[2i]` with `x[2i + 1]` (Interleaved).
enum class Pairing { Halves, Interleaved };

/// The value repeated by `table = repeat_interleave(u, 2, -1)` as exporters
/// write it (`u[..., None]` expanded or concatenated to `[..., n, 2]`, then
/// flattened), reshaped to `[..., n]`; null if `table` is not that. With a
/// null `rewriter` it only checks, and returns `table` on success.
Value repeatedPairs(Value table, int64_t dim, PatternRewriter *rewriter) {
  auto reshape = defining<dfg::ReshapeOp>(table);
  if (!reshape)
    return {};
  auto pairs = cast<RankedTensorType>(reshape.getInput().getType());
  auto type = cast<RankedTensorType>(table.getType());
  int64_t rank = type.getRank();
  if (pairs.getRank() != rank + 1 ||
      pairs.getShape().take_back(2) != ArrayRef<int64_t>{dim / 2, 2})
    return {};
  // The value broadcast along the trailing 2: [..., n, 1].
  Value u;
  if (auto expand = defining<dfg::ExpandOp>(reshape.getInput())) {
    auto in = cast<RankedTensorType>(expand.getInput().getType());
    ArrayRef<int64_t> shape = expand.getShape();
    if (in.getRank() != rank + 1 || in.getShape().back() != 1 ||
        static_cast<int64_t>(shape.size()) != rank + 1)
      return {};
    // Only the trailing 1 grows: every other dimension is kept.
    for (int64_t i = 0; i < rank; ++i)
      if (shape[i] != 1 && shape[i] != in.getDimSize(i))
        return {};
    u = expand.getInput();
  } else if (auto concat = defining<dfg::ConcatOp>(reshape.getInput())) {
    if (concat.getInputs().size() != 2 ||
        concat.getInputs()[0] != concat.getInputs()[1] ||
        !isLastAxis(static_cast<int64_t>(concat.getAxis()), rank + 1))
      return {};
    u = concat.getInputs()[0];
  } else {
    return {};
  }
  // The flattening keeps the leading dimensions: they are copied (0) or
  // equal static sizes, and at most one is inferred (-1), which then is
  // the input's (every other size is kept, and the last is the pairs').
  ArrayRef<int64_t> spec = reshape.getShape();
  int inferred = 0;
  for (int64_t i = 0; i + 1 < rank; ++i) {
    if (spec[i] == -1 && ++inferred == 1)
      continue;
    if (spec[i] != 0 &&
        (pairs.isDynamicDim(i) || spec[i] != pairs.getDimSize(i)))
      return {};
  }
  if (inferred && spec.back() != dim)
    return {};
  if (!rewriter)
    return table;
  SmallVector<int64_t> halfShape(type.getShape()), halfSpec(rank, 0);
  halfShape.back() = halfSpec.back() = dim / 2;
  return dfg::ReshapeOp::create(
      *rewriter, table.getLoc(),
      RankedTensorType::get(halfShape, type.getElementType()), u,
      rewriter->getDenseI64ArrayAttr(halfSpec));
}

/// The values of `v`, computed from literals by dfg ops that need no size
/// known only at run time (no `symbols`, or none named: TorchScript's index
/// tuples of a repeat_interleave, built from constant ranges), at most 12
/// ops deep and 4096 elements; std::nullopt else.
std::optional<dfg::EvalTensor>
literalValue(Value v, const ConstantReader &reader, int depth = 0) {
  if (std::optional<dfg::EvalTensor> read = reader.read(v))
    return read;
  Operation *op = v.getDefiningOp();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!op || depth > 12 || !type || !type.hasStaticShape() ||
      type.getNumElements() > 4096 || op->getNumResults() != 1 ||
      !isa<dfg::DfgDialect>(op->getDialect()))
    return std::nullopt;
  if (auto names = op->getAttrOfType<ArrayAttr>("symbols");
      names && !names.empty())
    return std::nullopt;
  SmallVector<dfg::EvalTensor> operands;
  for (Value operand : op->getOperands()) {
    std::optional<dfg::EvalTensor> value =
        literalValue(operand, reader, depth + 1);
    if (!value)
      return std::nullopt;
    operands.push_back(std::move(*value));
  }
  ScopedDiagnosticHandler silence(op->getContext(),
                                  [](Diagnostic &) { return success(); });
  FailureOr<SmallVector<dfg::EvalTensor>> result =
      dfg::evaluateOp(op, operands, "");
  if (failed(result))
    return std::nullopt;
  return std::move(result->front());
}

/// The value repeated by `table = transpose(repeat_interleave(u, 2, 0), perm)`
/// as TorchScript writes the repeat: u unsqueezed after its first axis,
/// expanded to 2 there, and every coordinate of the first two axes gathered
/// in row-major order (gather_nd by literal tuples [n, 2]: (0, 0), (0, 1),
/// (1, 0), ...), the pairs then moved last by a transpose; the half table is
/// transpose(u, perm). Null if `table` is not that. With a null `rewriter`
/// it only checks, and returns `table` on success.
Value gatheredPairs(Value table, int64_t dim, PatternRewriter *rewriter,
                    const ConstantReader &reader) {
  auto transpose = defining<dfg::TransposeOp>(table);
  auto gather = transpose ? defining<dfg::GatherNDOp>(transpose.getInput())
                          : dfg::GatherNDOp();
  auto expand =
      gather ? defining<dfg::ExpandOp>(gather.getData()) : dfg::ExpandOp();
  auto unsqueeze =
      expand ? defining<dfg::UnsqueezeOp>(expand.getInput()) : nullptr;
  if (!unsqueeze || transpose.getPerm().back() != 0 ||
      gather.getBatchDims() != 0 || unsqueeze.getAxes().size() != 1 ||
      unsqueeze.getAxes()[0] != 1)
    return {};
  Value u = unsqueeze.getInput();
  auto uType = cast<RankedTensorType>(u.getType());
  auto gathered = cast<RankedTensorType>(gather.getType());
  auto tuples = cast<RankedTensorType>(gather.getIndices().getType());
  int64_t rank = uType.getRank();
  // u [n, rest...] -> [n, 1, rest...] -> [n, 2, rest...] -> [2n, rest...].
  ArrayRef<int64_t> grow = expand.getShape();
  if (uType.isDynamicDim(0) || 2 * uType.getDimSize(0) != dim ||
      gathered.getRank() != rank || gathered.getDimSize(0) != dim ||
      static_cast<int64_t>(grow.size()) != rank + 1 || grow[1] != 2 ||
      tuples.getShape() != ArrayRef<int64_t>{dim, 2})
    return {};
  for (int64_t d = 0; d < rank; ++d) {
    int64_t g = grow[d < 1 ? d : d + 1];
    if (g != 1 && g != uType.getDimSize(d))
      return {};
    if (d > 0 && gathered.getDimSize(d) != uType.getDimSize(d))
      return {};
  }
  std::optional<dfg::EvalTensor> index =
      literalValue(gather.getIndices(), reader);
  if (!index)
    return {};
  for (int64_t r = 0; r < dim; ++r)
    if (index->values[2 * r] != r / 2 || index->values[2 * r + 1] != r % 2)
      return {};
  if (!rewriter)
    return table;
  auto type = cast<RankedTensorType>(table.getType());
  SmallVector<int64_t> halfShape(type.getShape());
  halfShape.back() = dim / 2;
  return dfg::TransposeOp::create(
      *rewriter, table.getLoc(),
      RankedTensorType::get(halfShape, type.getElementType()), u,
      transpose.getPermAttr());
}

/// A value holding the angles' table `table` (last dimension `dim`) once:
/// its first half, provided both halves are equal (Halves), or its even
/// entries, provided each equals the next (Interleaved); null if that is not
/// proven. With a null `rewriter` it only checks, and returns `table` on
/// success.
///
/// The repetition is proven structurally, whatever computes the table from
/// the frequencies: concat(f, f) over the last axis (Halves) or
/// repeat_interleave(f, 2) (Interleaved; also as TorchScript gathers it,
/// gatheredPairs); any elementwise op
/// (cos, sin, a Cast, HF's `* attention_scaling`, ...) whose operands either
/// have equal halves themselves or are constant along the last axis (a
/// scalar, a size-1 last dimension); a gather of table rows; an unsqueeze
/// or a transpose that keeps the last axis; or, for a literal or weight, by
/// reading it.
/// The rewritten chain computes the same ops on the halved tables.
Value angleTable(Value table, int64_t dim, Pairing pairing,
                 PatternRewriter *rewriter, const ConstantReader &reader,
                 int depth = 0) {
  auto type = cast<RankedTensorType>(table.getType());
  if (depth > 16 || !type.getRank() || type.getShape().back() != dim)
    return {};
  int64_t half = dim / 2;
  SmallVector<int64_t> halfShape(type.getShape());
  halfShape.back() = half;
  auto halfType = RankedTensorType::get(halfShape, type.getElementType());
  Location loc = table.getLoc();
  int64_t last = type.getRank() - 1;
  // concat(f, f) -> f; repeat_interleave(f, 2) -> f
  if (pairing == Pairing::Interleaved) {
    if (Value h = repeatedPairs(table, dim, rewriter))
      return h;
    if (Value h = gatheredPairs(table, dim, rewriter, reader))
      return h;
  } else if (auto concat = defining<dfg::ConcatOp>(table)) {
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
      Value h = angleTable(operand, dim, pairing, rewriter, reader, depth + 1);
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
        angleTable(gather.getData(), dim, pairing, rewriter, reader, depth + 1);
    if (!h || !rewriter)
      return h ? table : Value();
    return dfg::GatherOp::create(*rewriter, loc, halfType, h,
                                 gather.getIndices(), 0);
  }
  // unsqueeze(t) -> unsqueeze(first half of t); transpose(t) ->
  // transpose(first half of t), the last axis kept last (onnxruntime's
  // transformer optimizer moves [B, 1, S, D] tables to [B, S, 1, D] to
  // rotate keys before their heads move).
  Operation *view = table.getDefiningOp();
  auto transpose = dyn_cast_or_null<dfg::TransposeOp>(view);
  if (isa_and_nonnull<dfg::UnsqueezeOp>(view) ||
      (transpose && transpose.getPerm().back() == last)) {
    Value h = angleTable(view->getOperand(0), dim, pairing, rewriter, reader,
                         depth + 1);
    if (!h || !rewriter)
      return h ? table : Value();
    if (transpose)
      return dfg::TransposeOp::create(*rewriter, loc, halfType, h,
                                      transpose.getPermAttr());
    return dfg::UnsqueezeOp::create(*rewriter, loc, halfType, h,
                                    cast<dfg::UnsqueezeOp>(view).getAxes());
  }
  // A literal or weight whose halves (or pairs) are read and compared.
  std::optional<dfg::EvalTensor> values = reader.read(table);
  if (!values)
    return {};
  bool interleaved = pairing == Pairing::Interleaved;
  for (int64_t row = 0, rows = values->numElements() / dim; row < rows; ++row)
    for (int64_t i = 0; i < half; ++i) {
      const auto *r = &values->values[row * dim];
      if (interleaved ? r[2 * i] != r[2 * i + 1] : r[i] != r[half + i])
        return {};
    }
  if (!rewriter)
    return table;
  // The first half, or every other entry.
  auto &b = *rewriter;
  return dfg::SliceOp::create(
      b, loc, halfType, table, b.getDenseI64ArrayAttr({0}),
      b.getDenseI64ArrayAttr({interleaved ? dim : half}),
      b.getDenseI64ArrayAttr({last}),
      b.getDenseI64ArrayAttr({interleaved ? 2 : 1}));
}

/// Replaces `op` by the rotary op of `x` once the tables are shown to be
/// [1 | B, 1, S, D] (or [S, D], [1, S, D]) against heads first (x: [B, H, S,
/// D]), or [1 | B, S, 1, D] against the sequence first (x: [B, S, H, D],
/// rotated as [B, H, S, D] between two transposes), with repeated angles;
/// or, `halved`, tables of the angles once (last dimension D / 2).
/// `materialize`, when given, creates the value rotated (of x's type and
/// dimensions) once every check has passed; x otherwise. The rotation
/// replaces `op`, or goes to `finish` when given.
LogicalResult buildRotary(Operation *op, Value x, Value cos, Value sin,
                          Pairing pairing, bool halved,
                          PatternRewriter &rewriter,
                          const ConstantReader &reader,
                          dfg::SymbolicShapes &shapes,
                          llvm::function_ref<Value()> materialize = nullptr,
                          llvm::function_ref<void(Value)> finish = nullptr,
                          bool negateSin = false) {
  auto xt = cast<RankedTensorType>(x.getType());
  auto ct = cast<RankedTensorType>(cos.getType());
  int64_t dim = xt.getDimSize(3), rank = ct.getRank();
  // Sizes compared as symbolic dimensions (static ones are constants).
  SmallVector<AffineExpr> xd(shapes.dims(x)), cd(shapes.dims(cos));
  auto one = getAffineConstantExpr(1, op->getContext());
  if (rank < 2 || rank > 4 || ct.isDynamicDim(rank - 1) ||
      ct.getShape().back() != (halved ? dim / 2 : dim))
    return failure();
  // Which dimension of x the table's rows follow: the sequence at 2
  // (heads first) or at 1 (sequence first, a [b, S, 1, D] table).
  bool headsFirst = dfg::sameDim(cd[rank - 2], xd[2]) &&
                    (rank < 4 || dfg::sameDim(cd[1], one));
  bool seqFirst = !headsFirst && rank == 4 && dfg::sameDim(cd[1], xd[1]) &&
                  dfg::sameDim(cd[2], one);
  // The number of heads is static.
  if ((!headsFirst || xt.isDynamicDim(1)) && (!seqFirst || xt.isDynamicDim(2)))
    return failure();
  // Per-row tables: b in {1, B}; a rank-3 table is [1, S, D].
  int64_t rows = 1;
  if (rank == 4) {
    if (!dfg::sameDim(cd[0], one) && !dfg::sameDim(cd[0], xd[0]))
      return failure();
    rows = ct.getDimSize(0);
  } else if (rank == 3 && !dfg::sameDim(cd[0], one)) {
    return failure();
  }
  // Check both tables before creating anything for either.
  if (!halved && (!angleTable(cos, dim, pairing, nullptr, reader) ||
                  !angleTable(sin, dim, pairing, nullptr, reader)))
    return failure();
  Value cosHalf =
      halved ? cos : angleTable(cos, dim, pairing, &rewriter, reader);
  Value sinHalf =
      halved ? sin : angleTable(sin, dim, pairing, &rewriter, reader);
  Location loc = op->getLoc();
  // The rotation reads [B, H, S, D].
  Value input = materialize ? materialize() : x;
  SmallVector<int64_t> swap{0, 2, 1, 3};
  if (seqFirst)
    input = dfg::TransposeOp::create(rewriter, loc, middleSwapped(xt), input,
                                     rewriter.getDenseI64ArrayAttr(swap));
  auto it = cast<RankedTensorType>(input.getType());
  int64_t seq = it.getDimSize(2);
  auto tableType =
      RankedTensorType::get({rows, seq, dim / 2}, ct.getElementType());
  auto flat = [&](Value half) -> Value {
    // [rows, S, D/2]; a symbolic S (or rows) is inferred or copied.
    SmallVector<int64_t> spec{rows, seq, dim / 2};
    if (ShapedType::isDynamic(seq))
      spec[1] = -1;
    if (ShapedType::isDynamic(rows))
      spec[0] = ShapedType::isDynamic(seq) ? 0 : -1;
    return dfg::ReshapeOp::create(rewriter, loc, tableType, half,
                                  rewriter.getDenseI64ArrayAttr(spec));
  };
  // A rotation the other way is the same one by the negated angles.
  Value sinTable = flat(sinHalf);
  if (negateSin)
    sinTable = dfg::NegOp::create(rewriter, loc, tableType, sinTable);
  Value rotary = dfg::RotaryOp::create(rewriter, loc, it, input, flat(cosHalf),
                                       sinTable, Value(),
                                       pairing == Pairing::Interleaved, dim);
  if (seqFirst)
    rotary = dfg::TransposeOp::create(rewriter, loc, xt, rotary,
                                      rewriter.getDenseI64ArrayAttr(swap));
  if (finish)
    finish(rotary);
  else
    rewriter.replaceOp(op, rotary);
  return success();
}

/// x * cos + rotate_half(x) * sin -> rotary(x, cos[..., :d/2], sin[..., :d/2])
/// x * cos + rotate_every_two(x) * sin
///   -> rotary(x, cos[..., ::2], sin[..., ::2], interleaved)
///   (RoPE over the whole head; the tables' repetition proven)
struct RotateToRotary : OpRewritePattern<dfg::AddOp> {
  RotateToRotary(MLIRContext *ctx, const ConstantReader &reader,
                 dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::AddOp op,
                                PatternRewriter &rewriter) const override {
    auto type = op.getType();
    // Batch and sequence may be symbolic; the head size is not.
    if (type.getRank() != 4 || type.isDynamicDim(3))
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
          if (cos.getType() != sin.getType())
            continue;
          std::optional<Pairing> pairing;
          bool flipped = false;
          if (isRotateHalf(r, x, flipped))
            pairing = Pairing::Halves;
          else if (isRotateEveryTwo(r, x, shapes, flipped))
            pairing = Pairing::Interleaved;
          if (pairing &&
              succeeded(buildRotary(op, x, cos, sin, *pairing,
                                    /*halved=*/false, rewriter, reader, shapes,
                                    /*materialize=*/nullptr, /*finish=*/nullptr,
                                    /*negateSin=*/flipped)))
            return success();
        }
      }
    }
    return failure();
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

/// concat(x1 c - x2 s, x2 c + x1 s) over the last axis, x1 and x2 the halves
/// of x's last dimension and c, s tables of the angles once (last dimension
/// d/2) -> rotary(x, c, s): the rotation written out on the halves, as
/// gpt-oss writes it (no rotate_half, no repeated tables). With x1 and x2
/// the even and odd features of x (DeepSeek-V3's rotary on the interleaved
/// view), the result is the same rotation of concat(x1, x2):
/// -> rotary(concat(x[..., ::2], x[..., 1::2]), c, s).
struct HalvesToRotary : OpRewritePattern<dfg::ConcatOp> {
  HalvesToRotary(MLIRContext *ctx, const ConstantReader &reader,
                 dfg::SymbolicShapes &shapes)
      : OpRewritePattern(ctx), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::ConcatOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getType().getRank() != 4 ||
        !isLastAxis(static_cast<int64_t>(op.getAxis()), 4))
      return failure();
    // The two halves may be a pair of a longer concat (a head's other
    // features before them, the concats flattened into one).
    for (unsigned i = 0; i + 1 < op.getInputs().size(); ++i)
      if (succeeded(matchPair(op, i, rewriter)))
        return success();
    return failure();
  }

  /// Inputs i and i + 1 of `op` as the two halves' rotations.
  LogicalResult matchPair(dfg::ConcatOp op, unsigned i,
                          PatternRewriter &rewriter) const {
    auto halfType = cast<RankedTensorType>(op.getInputs()[i].getType());
    if (halfType.isDynamicDim(3) || op.getInputs()[i + 1].getType() != halfType)
      return failure();
    SmallVector<int64_t> shape(halfType.getShape());
    shape[3] *= 2;
    auto type = RankedTensorType::get(shape, halfType.getElementType());
    int64_t dim = shape[3];
    auto low = defining<dfg::SubOp>(op.getInputs()[i]);
    auto high = defining<dfg::AddOp>(op.getInputs()[i + 1]);
    if (!low || !high)
      return failure();
    auto product = [](Value v) -> std::optional<std::pair<Value, Value>> {
      auto mul = defining<dfg::MulOp>(v);
      if (!mul)
        return std::nullopt;
      return std::make_pair(mul.getLhs(), mul.getRhs());
    };
    auto first = product(low.getLhs()), second = product(low.getRhs());
    if (!first || !second)
      return failure();
    // The whole head whose lower half (or even features) is `x1`.
    auto wholeOf = [&](Value x1) -> Value {
      Value x;
      if (auto slice = defining<dfg::SliceOp>(x1))
        x = slice.getInput();
      else if (auto split = defining<dfg::SplitOp>(x1))
        x = split.getInput();
      return x && x.getType() == type &&
                     (isHalfOf(x1, x, dim, false) ||
                      isEveryOtherOf(x1, x, dim, /*odd=*/false))
                 ? x
                 : Value();
    };
    // `v` is a * b in either order.
    auto isProduct = [&](Value v, Value a, Value b) {
      auto p = product(v);
      return p && ((p->first == a && p->second == b) ||
                   (p->first == b && p->second == a));
    };
    for (auto [x1, cos] : {*first, std::make_pair(first->second, first->first)})
      for (auto [x2, sin] :
           {*second, std::make_pair(second->second, second->first)}) {
        Value x = wholeOf(x1);
        if (!x || cos.getType() != sin.getType())
          continue;
        bool halves = isHalfOf(x1, x, dim, false) && isHalfOf(x2, x, dim, true);
        bool evenOdd = isEveryOtherOf(x1, x, dim, /*odd=*/false) &&
                       isEveryOtherOf(x2, x, dim, /*odd=*/true);
        if (!halves && !evenOdd)
          continue;
        bool rotatedHigh = (isProduct(high.getLhs(), x2, cos) &&
                            isProduct(high.getRhs(), x1, sin)) ||
                           (isProduct(high.getRhs(), x2, cos) &&
                            isProduct(high.getLhs(), x1, sin));
        if (!rotatedHigh)
          continue;
        // The interleaved view, its even features first: what the halves'
        // rotation turns.
        auto deinterleaved = [&]() -> Value {
          return dfg::ConcatOp::create(rewriter, op.getLoc(), type,
                                       ValueRange{x1, x2},
                                       rewriter.getI64IntegerAttr(3));
        };
        // The rotation in place of the pair (of the whole concat when it
        // is all of it).
        auto finish = [&](Value rotary) {
          if (op.getInputs().size() == 2) {
            rewriter.replaceOp(op, rotary);
            return;
          }
          SmallVector<Value> inputs(op.getInputs());
          inputs.erase(inputs.begin() + i, inputs.begin() + i + 2);
          inputs.insert(inputs.begin() + i, rotary);
          rewriter.replaceOpWithNewOp<dfg::ConcatOp>(op, op.getType(), inputs,
                                                     op.getAxisAttr());
        };
        if (succeeded(
                buildRotary(op, x, cos, sin, Pairing::Halves, /*halved=*/true,
                            rewriter, reader, shapes,
                            evenOdd ? llvm::function_ref<Value()>(deinterleaved)
                                    : llvm::function_ref<Value()>(),
                            finish)))
          return success();
      }
    return failure();
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

/// The transpose swapping dimensions 1 and 2 of a 4-D `v`, or null.
dfg::TransposeOp swapOfMiddle(Value v) {
  auto transpose = defining<dfg::TransposeOp>(v);
  return transpose && transpose.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3}
             ? transpose
             : dfg::TransposeOp();
}

/// concat(rotary(x[..., :r]), x[..., r:]) -> rotary(x, rotary_dim = r)
///   (partial rotary: only the first r features of each head turn; also
///   with the sequence first, concat(T(rotary(T(x[..., :r]))), x[..., r:])
///   -> T(rotary(T(x), r)) for T the swap of dimensions 1 and 2)
struct PartialRotary : OpRewritePattern<dfg::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(dfg::ConcatOp op,
                                PatternRewriter &rewriter) const override {
    auto type = op.getType();
    int64_t axis = static_cast<int64_t>(op.getAxis());
    if (op.getInputs().size() != 2 || type.getRank() != 4 ||
        !isLastAxis(axis, 4) || type.isDynamicDim(3))
      return failure();
    Value head = op.getInputs()[0];
    dfg::TransposeOp after = swapOfMiddle(head);
    auto rotary = defining<dfg::RotaryOp>(after ? after.getInput() : head);
    if (!rotary)
      return failure();
    Value rotatedInput = rotary.getInput();
    dfg::TransposeOp before;
    if (after) {
      before = swapOfMiddle(rotatedInput);
      if (!before)
        return failure();
      rotatedInput = before.getInput();
    }
    auto rotated = defining<dfg::SliceOp>(rotatedInput);
    auto pass = defining<dfg::SliceOp>(op.getInputs()[1]);
    if (!rotated || !pass || rotated.getInput() != pass.getInput() ||
        rotated.getInput().getType() != type)
      return failure();
    int64_t dim = type.getDimSize(3);
    int64_t r = static_cast<int64_t>(rotary.getRotaryDim());
    auto first = lastDimRange(rotated, dim), rest = lastDimRange(pass, dim);
    if (!first || !rest || *first != std::pair<int64_t, int64_t>(0, r) ||
        *rest != std::pair<int64_t, int64_t>(r, dim) ||
        rotary.getType().getDimSize(3) != r)
      return failure();
    Value x = rotated.getInput();
    Location loc = op.getLoc();
    auto swap = rewriter.getDenseI64ArrayAttr({0, 2, 1, 3});
    Type rotatedType = type;
    if (after) {
      rotatedType = middleSwapped(type);
      x = dfg::TransposeOp::create(rewriter, loc, rotatedType, x, swap);
    }
    Value result = dfg::RotaryOp::create(
        rewriter, loc, rotatedType, x, rotary.getCos(), rotary.getSin(),
        rotary.getPositions(), rotary.getInterleaved(), r);
    if (after)
      result = dfg::TransposeOp::create(rewriter, loc, type, result, swap);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateRaiseRotaryPatterns(RewritePatternSet &patterns,
                                 const ConstantReader &reader,
                                 dfg::SymbolicShapes &shapes) {
  patterns.add<RotateToRotary>(patterns.getContext(), reader, shapes);
  patterns.add<HalvesToRotary>(patterns.getContext(), reader, shapes);
  patterns.add<PartialRotary>(patterns.getContext());
}

} // namespace meshc::graph
