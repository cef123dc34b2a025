//===- PadHeads.cpp - Heads that tp does not divide, padded ---------------===//
//
// Part of meshc.
//
// An attention whose h heads tp does not divide (BERT's 5 on tp=2, 12 on
// tp=8) cannot be split by heads as it is. It is padded instead: its
// projections get h' = ceil(h / tp) * tp heads, the h' - h new ones with
// zero weights and biases, and the output projection zero rows for them.
// A padded head's queries, keys and values are zeros, its output is
// zeros (a softmax over equal scores of zero values), and zero rows add
// nothing to the output projection's sum, so the model computes what it
// did; tp then splits h' heads evenly (3 + 3 for 5 on tp=2: the real heads
// go 3 + 2, and the second rank also computes the zero head).
//
// Under GQA with fewer KV heads than tp (the planner replicates each KV
// head on tp / kv ranks), each rank's query heads must share one KV head:
// the query heads of each KV head are padded to a multiple of tp / kv
// (Qwen2.5-7B's 28 over 4 KV heads on tp=8: 7 per KV head padded to 8, so
// 32), the keys and values left as they are (so a KV cache keeps its
// shape); multi-query attention's one KV head, which every rank reads, so
// (Falcon's 4 query heads on tp=3: 6). KV heads that tp neither divides nor is a multiple of (SmolLM's 3
// on tp=2) are padded too, to the least count that tp divides or is a
// multiple of (paddedKvHeads: 4), with zero key and value weights, and the
// new KV heads get groups of zero query heads (9 over 3 become 12 over 4;
// on tp=8, 16 over 4, each group also padded to tp / 4).
//
// padUnevenHeads starts from each dfg.attention whose heads (or KV heads)
// tp does not divide (its key heads tell the grouping), then from each
// written-out repeat of KV heads for their query heads (an unraised GQA:
// transformers' repeat_kv, an expand of [..., kv, 1, ...] to g copies merged
// into kv * g heads, tells the grouping), then from each reshape of a
// projection's features [..., h * d] into heads [..., h, d] with h % tp != 0
// (an attention left unraised), and follows the heads through the dataflow
// in both directions:
//   - through views that keep the head axis (reshapes splitting and merging
//     [h, d] or [h, w] with the leading dimensions kept, a -1 among them
//     included, w the width of each head's packed q, k and v, as
//     GPT-NeoX packs them; no-op reshapes, unsqueezes, broadcasts,
//     transposes, and a repeat's merge of [kv, g] into the query heads),
//     slices, splits and concats of other axes, gathers by index tuples
//     that keep the heads among their trailing dimensions (a cache's
//     positions), elementwise ops, softmaxes
//     along another axis, norms of each head's features, an RMS norm over
//     all heads' features of a projection's output (OLMo-2's q/k norms: a
//     padded head's zeros add nothing to its sum of squares, so it is
//     written as that sum over the real count, its scale padded), rotary,
//     dfg.attention (keys and values of the same heads, or of one per
//     group; a mask without a heads axis or with one of h), and matmuls of
//     two activations whose batch dimensions hold the heads;
//   - ending at projections: a linear or a matmul by a weight matrix whose
//     output features are the heads (the sources: weight columns and bias
//     padded) or whose contraction is (the sinks: weight rows padded);
//   - with literals and weights that carry the head axis (a bias added on
//     its own, per-head slopes, a table of per-head biases looked up by an
//     embedding) padded with zeros;
//   - or at the function's arguments and results (a KV cache's past and
//     presents), where the padding comes after the real heads: the type
//     says the padded count, kPaddedAttr the model's, and the runtime pads
//     such an input with zeros and drops the padding of such an output.
// A group is padded when its heads end in such projections, or some go
// unused (a cached attention whose output nothing reads: its presents are
// still split); heads that only reach the function's results are not.
// Anything else the heads reach (a reduction over the heads, a slice of
// them, query heads padded within their groups at the boundary) leaves the
// group as it was: the planner reports its attention replicated, as
// before, and a note where the heads were found names the op that stopped
// the padding. A padded group is said in a note at its first projection.
// What a padded head computes only needs to be finite: it meets zero rows
// of the output projection, or nothing.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <memory>
#include <optional>

using namespace mlir;

namespace meshc {
namespace {

/// Where a tensor holds the heads: an axis of h heads, or of h * d features
/// (head-major).
enum class Kind { Heads, Features };
/// `kv`: the key/value heads of a grouped attention whose KV heads are
/// padded too (they pad apart from the query heads).
struct Mark {
  int64_t axis;
  Kind kind;
  bool kv = false;
  /// Features: how many each head has along the axis, when not the head
  /// size (0): GPT-NeoX's packed QKV, each head's q, k and v side by side.
  int64_t unit = 0;
  /// The same heads at another axis (and kind).
  Mark at(int64_t a) const { return {a, kind, kv, unit}; }
  Mark at(int64_t a, Kind k) const { return {a, k, kv, unit}; }
  bool operator==(const Mark &o) const {
    return axis == o.axis && kind == o.kind && kv == o.kv && unit == o.unit;
  }
  bool operator!=(const Mark &o) const { return !(*this == o); }
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A 2-D weight or literal (the right operand of a projection).
bool isMatrix(Value v) { return isSource(v) && shapeOf(v).size() == 2; }

/// A written-out repeat of KV heads for their query heads (transformers'
/// repeat_kv): a reshape merging axes a and a + 1 of [..., kv, g, ...], an
/// expand of the g copies of each KV head (a broadcast 1 at a + 1), into
/// [..., kv * g, ...]. Returns a.
std::optional<int64_t> repeatMerge(dfg::ReshapeOp reshape) {
  ArrayRef<int64_t> in = shapeOf(reshape.getInput());
  ArrayRef<int64_t> out = shapeOf(reshape.getResult());
  ArrayRef<int64_t> spec = reshape.getShape();
  Operation *def = reshape.getInput().getDefiningOp();
  if (!isa_and_nonnull<dfg::ExpandOp, dfg::SymbolicExpandOp>(def) ||
      in.size() != out.size() + 1 || spec.size() != out.size())
    return std::nullopt;
  ArrayRef<int64_t> before = shapeOf(def->getOperand(0));
  int64_t shift = int64_t(in.size()) - int64_t(before.size());
  for (int64_t a = 0; a + 1 < int64_t(in.size()); ++a) {
    if (ShapedType::isDynamic(in[a]) || ShapedType::isDynamic(in[a + 1]) ||
        in[a] <= 1 || in[a + 1] <= 1 || out[a] != in[a] * in[a + 1] ||
        spec[a] != out[a])
      continue;
    // The repeat: a broadcast 1 (or an absent axis) before the expand.
    int64_t at = a + 1 - shift;
    if (at >= 0 && before[at] != 1)
      continue;
    bool same = true;
    for (int64_t i = 0; i < a && same; ++i)
      same = spec[i] == 0 || (!ShapedType::isDynamic(in[i]) && in[i] == out[i]);
    // After: equal static sizes, or the one -1 of the spec.
    for (int64_t i = a + 1; i < int64_t(out.size()) && same; ++i)
      same = ShapedType::isDynamic(in[i + 1])
                 ? spec[i] == -1
                 : in[i + 1] == out[i] && spec[i] != 0;
    if (same)
      return a;
  }
  return std::nullopt;
}

/// A projection's output (a linear, or a matmul by a weight matrix), or
/// (unraised) a projection plus its bias: where a padded head's features
/// are zeros (zero weight columns, zero bias entries).
bool projectionOutput(Value v) {
  auto isProjection = [](Operation *def) {
    auto matmul = dyn_cast_or_null<dfg::MatMulOp>(def);
    return isa_and_nonnull<dfg::LinearOp>(def) ||
           (matmul && isMatrix(matmul.getRhs()));
  };
  Operation *def = v.getDefiningOp();
  auto add = dyn_cast_or_null<dfg::AddOp>(def);
  return isProjection(def) ||
         (add && llvm::any_of(add->getOperands(),
                              [&](Value x) {
                                return isProjection(x.getDefiningOp());
                              }) &&
          llvm::any_of(add->getOperands(), isSource));
}

/// The static size an expand's target gives its result's axis `axis`
/// (aligned at the end), else -1.
int64_t expandTarget(Operation *op, int64_t axis) {
  int64_t rank = shapeOf(op->getResult(0)).size();
  if (auto expand = dyn_cast<dfg::ExpandOp>(op)) {
    ArrayRef<int64_t> target = expand.getShape();
    int64_t at = axis - (rank - int64_t(target.size()));
    return at >= 0 ? target[at] : -1;
  }
  AffineMap map = cast<dfg::SymbolicExpandOp>(op).getShape();
  int64_t at = axis - (rank - int64_t(map.getNumResults()));
  auto c = at >= 0 ? dyn_cast<AffineConstantExpr>(map.getResult(at))
                   : AffineConstantExpr();
  return c ? c.getValue() : -1;
}

class HeadGroup {
public:
  /// `groups` groups of `perGroup` heads of `headDim` features (the query
  /// heads of one KV head under GQA; one group otherwise), padded to
  /// `paddedGroups` groups of `paddedPerGroup` heads. With more groups than
  /// there are (a grouped attention whose KV heads tp neither divides nor
  /// is a multiple of), the KV heads are padded to `paddedGroups` as well,
  /// and the new groups' query heads are all padding.
  HeadGroup(int64_t groups, int64_t paddedGroups, int64_t perGroup,
            int64_t paddedPerGroup, int64_t headDim)
      : groups_(groups), groupsPadded_(paddedGroups), g_(perGroup),
        gp_(paddedPerGroup), d_(headDim), h_(groups * perGroup),
        padded_(paddedGroups * paddedPerGroup) {}

  /// Follows the heads from `seed`, which holds them at `m`; false if they
  /// reach an op this does not handle.
  bool grow(Value seed, Mark m) {
    if (!mark(seed, m))
      return false;
    while (!work_.empty()) {
      Value v = work_.pop_back_val();
      Mark m = marks_.lookup(v);
      if (Operation *def = v.getDefiningOp()) {
        if (!visit(def, v, m))
          return stop(def);
      } else if (!boundary(m)) {
        // A function argument the runtime cannot pad.
        return stop(cast<BlockArgument>(v).getOwner()->getParentOp());
      }
      if (v.use_empty())
        unused_ = true;
      for (OpOperand &use : v.getUses())
        if (!visit(use.getOwner(), v, m))
          return stop(use.getOwner());
    }
    // The heads end in projections (the row-parallel sum tp splits), or
    // some go unused (onnxruntime-genai's last attention of a model whose
    // logits come from an earlier layer: only its presents are read).
    // Heads that only reach the function's results gain nothing from
    // padding: the planner would gather them there.
    return !sources_.empty() && (!sinks_.empty() || unused_);
  }

  /// Where grow stopped: the op whose use of the heads it does not see
  /// through (null when it did not stop, or found no projection).
  Operation *stoppedAt() const { return stoppedAt_; }

  /// The tensors reached (also when grow failed: tried once).
  llvm::SmallVector<Value> values() const {
    llvm::SmallVector<Value> out;
    for (auto &[v, m] : marks_)
      out.push_back(v);
    return out;
  }

  /// Rewrites the group with the padded head count.
  void pad() {
    // RMS norms over the heads' features, written as sums of squares over
    // the real count (buildRmsNormSum, before the types grow): the sum
    // and the products by the input hold the heads, the scale is padded.
    for (auto [norm, m] : spanNorms_) {
      if (maskedNorms_.contains(norm)) {
        // The merged output times ones at the real heads' features, zeros
        // at the padded ones (the literal padded as the heads are), so
        // that a padded query head, which averages its group's values,
        // adds nothing to the sum of squares.
        OpBuilder b(norm);
        Value x = norm->getOperand(0);
        auto type = cast<RankedTensorType>(x.getType());
        auto onesType = RankedTensorType::get({size(m)}, type.getElementType());
        Value ones = dfg::ConstantOp::create(
            b, norm->getLoc(), onesType,
            DenseElementsAttr::get(onesType,
                                   b.getFloatAttr(type.getElementType(), 1.0)));
        auto masked =
            dfg::MulOp::create(b, norm->getLoc(), type, x, ones);
        norm->setOperand(0, masked.getResult());
        marks_.try_emplace(masked.getResult(), m);
        pads_.push_back({masked, 1, m.at(0)});
      }
      Operation *before = norm->getPrevNode();
      Value scaled = buildRmsNormSum(norm);
      Value old = norm->getResult(0);
      old.replaceAllUsesWith(scaled);
      marks_.erase(old);
      Block::iterator first = before ? std::next(before->getIterator())
                                     : norm->getBlock()->begin();
      for (Operation &built : llvm::make_range(first, norm->getIterator()))
        for (Value r : built.getResults())
          if (shapeOf(r).size() == shapeOf(scaled).size() &&
              shapeOf(r).back() == size(m))
            marks_.try_emplace(r, m);
      Operation *scaling = scaled.getDefiningOp();
      pads_.push_back({scaling, 1, m.at(0)});
      norm->erase();
    }
    for (auto &[v, m] : marks_) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[m.axis] = paddedSize(m);
      bool repeat = repeats_.contains(v);
      if (repeat)
        shape[m.axis + 1] = gp_;
      v.setType(RankedTensorType::get(shape, type.getElementType()));
      // The function's arguments and results: their types, and what the
      // runtime pads or drops (kPaddedAttr: the axis and the model's size).
      for (OpOperand &use : v.getUses())
        if (auto ret = dyn_cast<func::ReturnOp>(use.getOwner()))
          padBoundary(ret->getParentOfType<func::FuncOp>(), /*result=*/true,
                      use.getOperandNumber(), m);
      if (auto arg = dyn_cast<BlockArgument>(v))
        padBoundary(cast<func::FuncOp>(arg.getOwner()->getParentOp()),
                    /*result=*/false, arg.getArgNumber(), m);
      if (auto reshape = v.getDefiningOp<dfg::ReshapeOp>()) {
        SmallVector<int64_t> spec(reshape.getShape());
        if (spec[m.axis] == size(m))
          spec[m.axis] = paddedSize(m);
        reshape.setShapeAttr(
            DenseI64ArrayAttr::get(reshape.getContext(), spec));
      }
      if (auto reshape = v.getDefiningOp<dfg::SymbolicReshapeOp>()) {
        AffineMap map = reshape.getShape();
        SmallVector<AffineExpr> results(map.getResults());
        auto c = dyn_cast<AffineConstantExpr>(results[m.axis]);
        if (c && c.getValue() == size(m))
          results[m.axis] =
              getAffineConstantExpr(paddedSize(m), reshape.getContext());
        reshape.setShapeAttr(AffineMapAttr::get(
            AffineMap::get(0, map.getNumSymbols(), results,
                           reshape.getContext())));
      }
      // An expand's target at the heads: the count (a 1 keeps them).
      int64_t rank = shape.size();
      if (auto expand = v.getDefiningOp<dfg::ExpandOp>()) {
        SmallVector<int64_t> target(expand.getShape());
        int64_t at = m.axis - (rank - int64_t(target.size()));
        if (at >= 0 && target[at] == size(m))
          target[at] = paddedSize(m);
        if (repeat && at + 1 >= 0 && target[at + 1] == g_)
          target[at + 1] = gp_;
        expand.setShapeAttr(DenseI64ArrayAttr::get(expand.getContext(), target));
      }
      if (auto expand = v.getDefiningOp<dfg::SymbolicExpandOp>()) {
        AffineMap map = expand.getShape();
        SmallVector<AffineExpr> exprs(map.getResults());
        int64_t at = m.axis - (rank - int64_t(exprs.size()));
        auto c = at >= 0 ? dyn_cast<AffineConstantExpr>(exprs[at])
                         : AffineConstantExpr();
        if (c && c.getValue() == size(m))
          exprs[at] = getAffineConstantExpr(paddedSize(m), expand.getContext());
        auto r = repeat && at + 1 >= 0
                     ? dyn_cast<AffineConstantExpr>(exprs[at + 1])
                     : AffineConstantExpr();
        if (r && r.getValue() == g_)
          exprs[at + 1] = getAffineConstantExpr(gp_, expand.getContext());
        expand.setShapeAttr(AffineMapAttr::get(
            AffineMap::get(0, map.getNumSymbols(), exprs, expand.getContext())));
      }
    }
    llvm::DenseMap<std::pair<Value, int64_t>, Value> paddedLiterals;
    llvm::DenseSet<std::pair<Operation *, unsigned>> done;
    // In program order: a literal several ops read (zero biases of q, k and
    // v are one constant) is padded once, before its first reader.
    llvm::stable_sort(pads_, [](const Pad &x, const Pad &y) {
      return x.user != y.user && x.user->getBlock() == y.user->getBlock() &&
             x.user->isBeforeInBlock(y.user);
    });
    for (const Pad &p : pads_) {
      // An op visited from two of its tensors asked for its literal twice.
      if (!done.insert({p.user, p.operand}).second)
        continue;
      Value v = p.user->getOperand(p.operand);
      Value &padded =
          paddedLiterals[{v, p.mark.axis * 2 + (p.mark.kv ? 1 : 0)}];
      if (!padded)
        padded = padLiteral(p.user, v, p.mark);
      p.user->setOperand(p.operand, padded);
    }
    // At the first projection in program order.
    Operation *first = *llvm::min_element(
        sources_, [](Operation *a, Operation *b) {
          return a->getBlock() == b->getBlock() && a->isBeforeInBlock(b);
        });
    InFlightDiagnostic note = first->emitRemark();
    note << h_ << " heads of " << d_ << " features";
    if (groupsPadded_ != groups_)
      note << " over " << groups_
           << " KV heads, which tp neither divides nor is a multiple of, "
              "padded to "
           << padded_ << " over " << groupsPadded_ << " (" << gp_
           << " per KV head)";
    else {
      if (groups_ > 1)
        note << " (" << g_ << " per KV head)";
      note << ", which tp does not divide, padded to " << padded_;
      if (groups_ > 1)
        note << " (" << gp_ << " per KV head)";
    }
    note << " with zero weights so that tp splits them evenly ("
         << sources_.size() << " projection(s) in, " << sinks_.size()
         << " out; a padded head computes zeros)";
  }

  /// Says at `origin` that the group is not padded: its heads reach `at`,
  /// which grow does not see through.
  void explain(Operation *origin, Operation *at, int64_t tp) const {
    origin->emitRemark() << h_ << " heads of " << d_
                         << " features not padded for tp=" << tp
                         << ": they reach '" << at->getName() << "' at "
                         << describeLocation(at->getLoc())
                         << ", which padding heads does not see through";
  }

private:
  /// Argument or result `i` of `func`, whose heads at `m` were padded: its
  /// type in the signature and kPaddedAttr.
  void padBoundary(func::FuncOp func, bool result, unsigned i, Mark m) {
    FunctionType type = func.getFunctionType();
    SmallVector<Type> inputs(type.getInputs()), results(type.getResults());
    auto *types = result ? &results : &inputs;
    auto old = cast<RankedTensorType>((*types)[i]);
    SmallVector<int64_t> shape(old.getShape());
    shape[m.axis] = paddedSize(m);
    (*types)[i] = RankedTensorType::get(shape, old.getElementType());
    func.setFunctionType(FunctionType::get(func.getContext(), inputs, results));
    auto attr = DenseI64ArrayAttr::get(func.getContext(), {m.axis, size(m)});
    if (result)
      func.setResultAttr(i, kPaddedAttr, attr);
    else
      func.setArgAttr(i, kPaddedAttr, attr);
  }

  struct Pad {
    Operation *user;
    unsigned operand;
    Mark mark;
  };

  /// What each head has along the axis of `m`.
  int64_t unitOf(Mark m) const {
    return m.kind == Kind::Heads ? 1 : m.unit ? m.unit : d_;
  }

  /// The extent of the heads at `m`, before and after padding.
  int64_t size(Mark m) const { return (m.kv ? groups_ : h_) * unitOf(m); }
  int64_t paddedSize(Mark m) const {
    return (m.kv ? groupsPadded_ : padded_) * unitOf(m);
  }

  /// `v` (a literal) with zeros after each group's heads along `m.axis`,
  /// then zero groups after the groups: concats, between reshapes that give
  /// the groups an axis of their own when there are several. The KV heads
  /// (m.kv) are one group of `groups_` heads padded to `groupsPadded_`.
  Value padLiteral(Operation *user, Value v, Mark m) {
    OpBuilder b(user);
    Location loc = user->getLoc();
    auto type = cast<RankedTensorType>(v.getType());
    Type element = type.getElementType();
    int64_t axis = m.axis, unit = unitOf(m);
    int64_t groups = m.kv ? 1 : groups_, padGroups = m.kv ? 1 : groupsPadded_;
    int64_t g = m.kv ? groups_ : g_, gp = m.kv ? groupsPadded_ : gp_;
    auto zerosAlong = [&](Value x, int64_t at, int64_t count) {
      SmallVector<int64_t> shape(
          cast<RankedTensorType>(x.getType()).getShape());
      SmallVector<int64_t> zerosShape(shape);
      zerosShape[at] = count;
      auto zerosType = RankedTensorType::get(zerosShape, element);
      Value zeros = dfg::ConstantOp::create(
          b, loc, zerosType,
          DenseElementsAttr::get(zerosType, b.getZeroAttr(element)));
      shape[at] += count;
      return dfg::ConcatOp::create(
                 b, loc, RankedTensorType::get(shape, element),
                 ValueRange{x, zeros}, b.getI64IntegerAttr(at))
          .getResult();
    };
    bool grouped = groups > 1 || padGroups > groups;
    int64_t at = axis;
    if (grouped) {
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = g * unit;
      shape.insert(shape.begin() + axis, groups);
      at = axis + 1;
      v = dfg::ReshapeOp::create(b, loc, RankedTensorType::get(shape, element),
                                 v, b.getDenseI64ArrayAttr(shape));
    }
    if (gp > g)
      v = zerosAlong(v, at, (gp - g) * unit);
    if (padGroups > groups)
      v = zerosAlong(v, axis, padGroups - groups);
    if (!grouped)
      return v;
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = paddedSize(m);
    return dfg::ReshapeOp::create(b, loc, RankedTensorType::get(shape, element),
                                  v, b.getDenseI64ArrayAttr(shape));
  }

  bool mark(Value v, Mark m) {
    ArrayRef<int64_t> shape = shapeOf(v);
    if (m.axis < 0 || m.axis >= int64_t(shape.size()) ||
        shape[m.axis] != size(m))
      return false;
    auto [it, inserted] = marks_.try_emplace(v, m);
    if (!inserted)
      return it->second == m;
    work_.push_back(v);
    return true;
  }

  /// Operand `i` of `user` holds the heads at `m`: a literal is padded, a
  /// computed value joins the group.
  bool require(Operation *user, unsigned i, Mark m) {
    Value v = user->getOperand(i);
    if (isSource(v)) {
      ArrayRef<int64_t> shape = shapeOf(v);
      if (m.axis < 0 || m.axis >= int64_t(shape.size()) ||
          shape[m.axis] != size(m))
        return false;
      pads_.push_back({user, i, m});
      return true;
    }
    return mark(v, m);
  }

  /// An operand broadcast against a result of rank `rank` whose axis
  /// `axis` holds the heads: its aligned dimension is absent or 1, or holds
  /// the heads too.
  bool broadcastOperand(Operation *op, unsigned i, int64_t rank, Mark m) {
    ArrayRef<int64_t> shape = shapeOf(op->getOperand(i));
    int64_t a = m.axis - (rank - int64_t(shape.size()));
    if (a < 0 || shape[a] == 1)
      return true;
    return require(op, i, m.at(a));
  }

  /// `op` uses or defines `v`, which holds the heads at `m`: marks the
  /// other operands and results that hold them too.
  bool visit(Operation *op, Value v, Mark m) {
    if (!visited_.insert({op, v}).second)
      return true;
    bool isResult = v.getDefiningOp() == op;
    if (auto linear = dyn_cast<dfg::LinearOp>(op)) {
      bool t = linear.getTransposeWeight();
      int64_t last = int64_t(shapeOf(v).size()) - 1;
      if (m != m.at(last, Kind::Features))
        return false;
      if (isResult) {
        sources_.insert(op);
        if (!require(op, 1, m.at(t ? 0 : 1)))
          return false;
        return !linear.getBias() || require(op, 2, m.at(0));
      }
      if (v != linear.getInput() || v == linear.getWeight() ||
          (linear.getBias() && v == linear.getBias()))
        return false;
      sinks_.insert(op);
      return require(op, 1, m.at(t ? 1 : 0));
    }
    if (auto matmul = dyn_cast<dfg::MatMulOp>(op)) {
      if (isMatrix(matmul.getRhs())) {
        int64_t last = int64_t(shapeOf(v).size()) - 1;
        if (m != m.at(last, Kind::Features) || v == matmul.getRhs())
          return false;
        (isResult ? sources_ : sinks_).insert(op);
        return require(op, 1, m.at(isResult ? 1 : 0));
      }
      // Two activations: the heads in their batch dimensions.
      int64_t rank = shapeOf(matmul.getResult()).size();
      int64_t axis = isResult ? m.axis
                              : m.axis + rank - int64_t(shapeOf(v).size());
      if (m.kind != Kind::Heads || axis >= rank - 2 || axis < 0)
        return false;
      for (unsigned i = 0; i < 2; ++i) {
        ArrayRef<int64_t> shape = shapeOf(op->getOperand(i));
        int64_t a = axis - (rank - int64_t(shape.size()));
        if (a >= int64_t(shape.size()) - 2)
          return false;
        if (a >= 0 && shape[a] != 1 && !require(op, i, m.at(a)))
          return false;
      }
      return mark(matmul.getResult(), m.at(axis));
    }
    if (auto attention = dyn_cast<dfg::AttentionOp>(op)) {
      // The heads are axis 1 of query, key, value, past, presents and
      // result, and of the mask broadcast to 4-D (a per-head bias); axis 0
      // of the sinks.
      Value mask = attention.getMask();
      int64_t axis = v == mask ? m.axis + 4 - int64_t(shapeOf(mask).size())
                     : v == attention.getSinks() ? m.axis + 1
                                                 : m.axis;
      if (axis != 1 || m.kind != Kind::Heads)
        return false;
      // Keys and values hold the same heads (padded with the queries), or
      // (GQA) one per group: left as they are, or padded apart when there
      // are more groups (m.kv).
      int64_t kvHeads = shapeOf(attention.getKey())[1];
      bool grouped = kvHeads != h_;
      if (grouped && kvHeads != groups_)
        return false;
      bool kvSide = v == attention.getKey() || v == attention.getValue() ||
                    v == attention.getPastKey() ||
                    v == attention.getPastValue() ||
                    llvm::is_contained(attention.getPresent(), v);
      bool padKv = !grouped || groupsPadded_ != groups_;
      if (kvSide && (!padKv || m.kv != grouped))
        return false;
      if (!kvSide && m.kv)
        return false;
      Mark q{1, Kind::Heads}, kv{1, Kind::Heads, grouped};
      if (!require(op, 0, q))
        return false;
      if (padKv) {
        // Keys and values, the past and the presents (a KV cache's: the
        // function's arguments and results, padded at its boundary).
        for (unsigned i : {1u, 2u})
          if (!require(op, i, kv))
            return false;
        if (attention.getPastKey() && (!mark(attention.getPastKey(), kv) ||
                                       !mark(attention.getPastValue(), kv)))
          return false;
        for (Value present : attention.getPresent())
          if (!mark(present, kv))
            return false;
      }
      // The mask broadcasts over the (query) heads or holds them.
      if (mask) {
        unsigned at = attention.getODSOperandIndexAndLength(3).first;
        if (!broadcastOperand(op, at, 4, q))
          return false;
      }
      // A padded head's sink is zero (its values are).
      if (attention.getSinks() &&
          !require(op, attention.getODSOperandIndexAndLength(7).first, q.at(0)))
        return false;
      return mark(attention.getResult(), q);
    }
    if (auto rotary = dyn_cast<dfg::RotaryOp>(op)) {
      // The tables and positions have no heads axis.
      if (m != m.at(1, Kind::Heads) || (!isResult && v != rotary.getInput()))
        return false;
      return require(op, 0, m) && mark(rotary.getResult(), m);
    }
    if (auto transpose = dyn_cast<dfg::TransposeOp>(op)) {
      ArrayRef<int64_t> perm = transpose.getPerm();
      if (isResult)
        return require(op, 0, m.at(perm[m.axis]));
      auto at = llvm::find(perm, m.axis);
      return mark(transpose.getResult(), m.at(at - perm.begin()));
    }
    if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op)) {
      std::optional<Mark> other = reshaped(op, isResult, m);
      if (!other)
        return false;
      return isResult ? require(op, 0, *other)
                      : mark(op->getResult(0), *other);
    }
    if (auto unsqueeze = dyn_cast<dfg::UnsqueezeOp>(op)) {
      // The result's axes the input did not have are the inserted ones.
      int64_t rank = shapeOf(unsqueeze.getResult()).size();
      SmallVector<bool> inserted(rank, false);
      for (int64_t a : unsqueeze.getAxes())
        inserted[a < 0 ? a + rank : a] = true;
      SmallVector<int64_t> kept; // result axis of each input axis
      for (int64_t a = 0; a < rank; ++a)
        if (!inserted[a])
          kept.push_back(a);
      if (isResult) {
        auto at = llvm::find(kept, m.axis);
        return at != kept.end() && require(op, 0, m.at(at - kept.begin()));
      }
      return m.axis < int64_t(kept.size()) &&
             mark(unsqueeze.getResult(), m.at(kept[m.axis]));
    }
    if (isa<dfg::ExpandOp, dfg::SymbolicExpandOp>(op)) {
      // The heads are the input's: the same axis, aligned at the end. Or a
      // 1 (or an absent axis) broadcast to the heads (XLM's mask expanded
      // to the scores' [B, h, S, S]), where the target's count, which pad
      // rewrites, must say them.
      int64_t shift = int64_t(shapeOf(op->getResult(0)).size()) -
                      int64_t(shapeOf(op->getOperand(0)).size());
      Mark in = isResult ? m.at(m.axis - shift) : m;
      if (isResult && (in.axis < 0 || shapeOf(op->getOperand(0))[in.axis] == 1))
        return expandTarget(op, m.axis) == size(m);
      return in.axis >= 0 && require(op, 0, in) &&
             mark(op->getResult(0), m.at(in.axis + shift));
    }
    if (auto embedding = dyn_cast<dfg::EmbeddingOp>(op)) {
      // Rows of a table whose columns are the heads (MPNet's relative
      // position bias per head).
      int64_t last = int64_t(shapeOf(embedding.getResult()).size()) - 1;
      if (!isResult || m != m.at(last, Kind::Heads))
        return false;
      return require(op, 0, m.at(1));
    }
    if (isa<dfg::LayerNormOp, dfg::RmsNormOp>(op)) {
      // A norm of each head's features (Qwen3's q/k norms): the heads lie
      // before the normalised trailing dimensions. (A padded head's norm
      // is finite, and its output meets only zero rows.)
      Value input = op->getOperand(0);
      int64_t rank = shapeOf(input).size();
      int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
      axis = axis < 0 ? axis + rank : axis;
      // An RMS norm over every head's features (OLMo-2's q/k norms over the
      // whole projection), of a projection's output, or of the attention's
      // merged output where a padded head's values are zeros (BitNet's
      // attention sub-norm): a padded head's features are zeros there,
      // which add nothing to the sum of squares. pad() writes it as that
      // sum over the count of the real features.
      if (m.kind == Kind::Features && !m.unit && m.axis == rank - 1 &&
          axis == m.axis && isDecomposableNorm(op) &&
          (projectionOutput(input) || attentionOutput(input)) &&
          (v == input || v == op->getResult(0))) {
        if (llvm::none_of(spanNorms_, [&](auto &n) { return n.first == op; }))
          spanNorms_.push_back({op, m});
        // Query heads padded into a real KV head's group average its
        // values: pad() zeros them before the norm.
        if (!projectionOutput(input) && !zeroHeadsOf(input))
          maskedNorms_.insert(op);
        return require(op, 0, m) && mark(op->getResult(0), m);
      }
      if (op->getNumResults() != 1 || m.axis >= axis ||
          (v != input && v != op->getResult(0)))
        return false;
      for (unsigned i = 1; i < op->getNumOperands(); ++i)
        if (!broadcastOperand(op, i, rank, m))
          return false;
      return require(op, 0, m) && mark(op->getResult(0), m);
    }
    if (auto split = dyn_cast<dfg::SplitOp>(op)) {
      // A split of another axis (GPT-NeoX's packed q, k and v of each
      // head): the input and every part hold the heads.
      int64_t rank = shapeOf(split.getInput()).size();
      int64_t axis = split.getAxis();
      if ((axis < 0 ? axis + rank : axis) == m.axis)
        return false;
      if (!require(op, 0, m))
        return false;
      for (Value part : split.getResults())
        if (!mark(part, m))
          return false;
      return true;
    }
    if (isa<dfg::SliceOp, dfg::SymbolicSliceOp>(op)) {
      // A slice of other axes (a partial rotary's part of each head; MPT's
      // ALiBi table cut to the keys).
      int64_t rank = shapeOf(op->getOperand(0)).size();
      ArrayRef<int64_t> axes = isa<dfg::SliceOp>(op)
                                   ? cast<dfg::SliceOp>(op).getAxes()
                                   : cast<dfg::SymbolicSliceOp>(op).getAxes();
      for (int64_t a : axes)
        if ((a < 0 ? a + rank : a) == m.axis)
          return false;
      return require(op, 0, m) && mark(op->getResult(0), m);
    }
    if (auto gather = dyn_cast<dfg::GatherNDOp>(op)) {
      // Rows gathered by index tuples (a cache's positions), the heads among
      // the data's trailing dimensions, which the result keeps after the
      // tuples' leading ones.
      if (v == gather.getIndices())
        return false;
      ArrayRef<int64_t> tuples = shapeOf(gather.getIndices());
      int64_t indexed = gather.getBatchDims() + tuples.back();
      int64_t lead = static_cast<int64_t>(tuples.size()) - 1;
      if (isResult)
        return m.axis >= lead &&
               require(op, 0, m.at(m.axis - lead + indexed));
      return m.axis >= indexed &&
             mark(gather.getResult(), m.at(m.axis - indexed + lead));
    }
    if (auto concat = dyn_cast<dfg::ConcatOp>(op)) {
      // Parts of each head put back together along another axis.
      int64_t rank = shapeOf(concat.getResult()).size();
      int64_t axis = concat.getAxis();
      if ((axis < 0 ? axis + rank : axis) == m.axis)
        return false;
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (!require(op, i, m))
          return false;
      return mark(concat.getResult(), m);
    }
    if (auto reduce = dyn_cast<dfg::ReduceMaxOp>(op)) {
      // The largest element over the heads' axis, read only where it is
      // then taken with a constant of at least 0 (a dynamic quantization's
      // range widened to hold 0: max(max x, 0), and min(-max(-x), 0)): a
      // padded head's zeros do not change it.
      int64_t rank = shapeOf(reduce.getInput()).size();
      bool overHeads = llvm::any_of(reduce.getAxes(), [&](int64_t a) {
        return (a < 0 ? a + rank : a) == m.axis;
      });
      if (isResult || !overHeads)
        return false;
      return llvm::all_of(reduce->getUsers(), [&](Operation *user) {
        if (auto max = dyn_cast<dfg::MaxOp>(user))
          return constantBound(max, reduce.getResult(), /*least=*/true);
        auto neg = dyn_cast<dfg::NegOp>(user);
        return neg && llvm::all_of(neg->getUsers(), [&](Operation *u) {
                 auto min = dyn_cast<dfg::MinOp>(u);
                 return min &&
                        constantBound(min, neg.getResult(), /*least=*/false);
               });
      });
    }
    if (auto softmax = dyn_cast<dfg::SoftmaxOp>(op)) {
      int64_t rank = shapeOf(v).size();
      int64_t axis = softmax.getAxis();
      axis = axis < 0 ? axis + rank : axis;
      if (axis == m.axis)
        return false;
      return require(op, 0, m) && mark(softmax.getResult(), m);
    }
    if (isa<dfg::ElementwiseOpInterface>(op) && op->getNumResults() == 1) {
      Value result = op->getResult(0);
      int64_t rank = shapeOf(result).size();
      Mark out =
          isResult ? m : m.at(m.axis + rank - int64_t(shapeOf(v).size()));
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (!broadcastOperand(op, i, rank, out))
          return false;
      return mark(result, out);
    }
    // A result of the function (a KV cache's present): the runtime drops
    // the padding from what it returns.
    if (isa<func::ReturnOp>(op))
      return boundary(m);
    return false;
  }

  /// Whether `op` (a binary max or min) takes `v` with a constant scalar of
  /// at least 0 (`least`) or at most 0.
  static bool constantBound(Operation *op, Value v, bool least) {
    Value other = op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0);
    auto constant = other.getDefiningOp<dfg::ConstantOp>();
    auto attr = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue())
                         : DenseFPElementsAttr();
    if (!attr || attr.getNumElements() != 1)
      return false;
    double c = (*attr.getValues<APFloat>().begin()).convertToDouble();
    return least ? c >= 0 : c <= 0;
  }

  /// Whether the heads at `m` may cross the function's boundary (an
  /// argument or a result): the runtime pads an input with zeros and drops
  /// the padding of an output along one axis, so the real heads must come
  /// first (a prefix): the KV heads padded apart, the heads of one group,
  /// or groups that are only added. What a padded head holds never reaches
  /// a real one's result, so zeros serve for the past of a padded KV head.
  bool boundary(Mark m) const {
    return m.kv || groupsPadded_ == 1 || gp_ == g_;
  }

  /// Whether `v` is the output of a dfg.attention (through views and
  /// transposes that merge its heads) whose padded heads compute zeros:
  /// their values are zeros (zero columns of the value projection) where
  /// every query head has its own (MHA) or only whole groups are padded
  /// (their KV heads padded too); a query head padded within a group of a
  /// real KV head averages that head's values, which are not zeros.
  bool zeroHeadsOf(Value v) {
    dfg::AttentionOp attention = attentionBehind(v);
    if (!attention)
      return false;
    ArrayRef<int64_t> q = shapeOf(attention.getQuery());
    ArrayRef<int64_t> k = shapeOf(attention.getKey());
    return q.size() == 4 && k.size() == 4 && (q[1] == k[1] || gp_ == g_);
  }
  /// Whether `v` is the output of a dfg.attention, through views and
  /// transposes that merge its heads.
  bool attentionOutput(Value v) { return bool(attentionBehind(v)); }
  dfg::AttentionOp attentionBehind(Value v) {
    for (int steps = 0; steps < 8; ++steps) {
      Operation *def = v.getDefiningOp();
      if (auto attention = dyn_cast_or_null<dfg::AttentionOp>(def))
        return attention;
      if (!isa_and_nonnull<dfg::ReshapeOp, dfg::SymbolicReshapeOp,
                           dfg::TransposeOp>(def))
        return {};
      v = def->getOperand(0);
    }
    return {};
  }

  /// The symbolic dimensions of `v` (a copy), derived lazily.
  SmallVector<AffineExpr> exprsOf(Value v) {
    if (!symbolic_) {
      table_ = std::make_unique<dfg::DimTable>(v.getContext());
      symbolic_ = std::make_unique<dfg::SymbolicShapes>(*table_);
    }
    return SmallVector<AffineExpr>(symbolic_->dims(v));
  }

  /// The reshape's (a dfg.reshape or dfg.symbolic_reshape) mark on its
  /// other side: a split of [h * d] into [h, d] as the last dimensions (or
  /// the merge back), or a reshape that keeps every dimension.
  std::optional<Mark> reshaped(Operation *op, bool fromResult, Mark m) {
    Value input = op->getOperand(0), result = op->getResult(0);
    ArrayRef<int64_t> in = shapeOf(input);
    ArrayRef<int64_t> out = shapeOf(result);
    auto reshape = dyn_cast<dfg::ReshapeOp>(op);
    // The first n dimensions kept: copied (0), of equal static sizes, or
    // one -1, which the others and the trailing dimensions (equal in
    // count) then fix to the input's size ([0, -1, 5, 8] of [B, S, 40]).
    auto sameLeading = [&](size_t n) {
      if (!reshape)
        return false;
      ArrayRef<int64_t> spec = reshape.getShape();
      int inferred = 0;
      for (size_t i = 0; i < n; ++i) {
        if (spec[i] == -1 && in[i] == out[i] && ++inferred == 1)
          continue;
        if (spec[i] != 0 && (in[i] != out[i] || ShapedType::isDynamic(in[i])))
          return false;
      }
      return true;
    };
    // The leading dimensions of the two sides, `nIn` of the input's and
    // `nOut` of the result's, equal but for axes of size 1 that one side
    // has and the other not (GPT-BigCode's [B, 1, S, h * d] split into
    // [B, S, h, d]): as their symbolic expressions, which a
    // dfg.symbolic_reshape states for its result.
    auto sameBesideUnits = [&](size_t nIn, size_t nOut) {
      SmallVector<AffineExpr> a = exprsOf(input), b = exprsOf(result);
      auto kept = [](ArrayRef<AffineExpr> dims, size_t n) {
        SmallVector<AffineExpr> k;
        for (AffineExpr e : dims.take_front(n)) {
          auto c = dyn_cast_or_null<AffineConstantExpr>(e);
          if (!c || c.getValue() != 1)
            k.push_back(e);
        }
        return k;
      };
      SmallVector<AffineExpr> ka = kept(a, nIn), kb = kept(b, nOut);
      return a.size() == in.size() && b.size() == out.size() &&
             ka.size() == kb.size() &&
             llvm::all_of(llvm::zip(ka, kb), [](auto pair) {
               return dfg::sameDim(std::get<0>(pair), std::get<1>(pair));
             });
    };
    int64_t ri = in.size(), ro = out.size();
    // [..., h * w] on one side, [..., h, w] on the other: w the head size,
    // or the width of each head's packed q, k and v (GPT-NeoX).
    int64_t h = size(m.at(0, Kind::Heads));
    auto splits = [&](bool inFlat) {
      ArrayRef<int64_t> flat = inFlat ? in : out, heads = inFlat ? out : in;
      size_t rf = flat.size(), rh = heads.size();
      if (rf < 1 || rh < 2 || heads[rh - 2] != h ||
          ShapedType::isDynamic(heads[rh - 1]) || heads[rh - 1] <= 0 ||
          flat[rf - 1] != h * heads[rh - 1])
        return false;
      if (rh == rf + 1 && sameLeading(rf - 1))
        return true;
      return inFlat ? sameBesideUnits(rf - 1, rh - 2)
                    : sameBesideUnits(rh - 2, rf - 1);
    };
    bool inFlat = splits(true);
    if (inFlat || splits(false)) {
      int64_t width = (inFlat ? out : in).back();
      Mark flat{(inFlat ? ri : ro) - 1, Kind::Features, m.kv,
                width == d_ ? 0 : width};
      Mark heads{(inFlat ? ro : ri) - 2, Kind::Heads, m.kv};
      Mark inMark = inFlat ? flat : heads, outMark = inFlat ? heads : flat;
      if (!fromResult && m == inMark)
        return outMark;
      if (fromResult && m == outMark)
        return inMark;
      return std::nullopt;
    }
    // A reshape that keeps the shape ([0, 5, 0, 8] after an attention).
    if (ri == ro && sameLeading(ri) && in == out)
      return m;
    // The repeat of the KV heads for their query heads, written out
    // (repeat_kv): [..., kv, g, ...] merged into [..., kv * g, ...]; the KV
    // heads on one side, the query heads on the other.
    if (!reshape)
      return std::nullopt;
    if (std::optional<int64_t> a = repeatMerge(reshape)) {
      Mark kv{*a, Kind::Heads, true}, q{*a, Kind::Heads};
      if (groups_ > 1 && in[*a] == groups_ && in[*a + 1] == g_) {
        if (!fromResult && m == kv) {
          repeats_.insert(reshape.getInput());
          return q;
        }
        if (fromResult && m == q) {
          repeats_.insert(reshape.getInput());
          return kv;
        }
      }
    }
    return std::nullopt;
  }

  bool stop(Operation *op) {
    stoppedAt_ = op;
    return false;
  }


  int64_t groups_, groupsPadded_, g_, gp_, d_, h_, padded_;
  std::unique_ptr<dfg::DimTable> table_;
  std::unique_ptr<dfg::SymbolicShapes> symbolic_;
  Operation *stoppedAt_ = nullptr;
  bool unused_ = false;
  llvm::DenseMap<Value, Mark> marks_;
  SmallVector<Value> work_;
  llvm::DenseSet<std::pair<Operation *, Value>> visited_;
  llvm::SetVector<Operation *> sources_, sinks_;
  SmallVector<Pad> pads_;
  /// RMS norms over all the heads' features, and the heads' mark there.
  llvm::SmallVector<std::pair<Operation *, Mark>> spanNorms_;
  /// Those over an attention's output whose padded heads are not zeros.
  llvm::SmallPtrSet<Operation *, 4> maskedNorms_;
  /// Tensors [..., kv, g, ...] of a written-out repeat of the KV heads
  /// (marked at kv): their next axis, the repeat, pads from g_ to gp_.
  llvm::SetVector<Value> repeats_;
};

/// A reshape of a projection's features (with its bias added, unraised)
/// [..., h * d] into [..., h, d] with h % tp != 0: the head count and size,
/// else std::nullopt.
std::optional<std::pair<int64_t, int64_t>> headSplit(dfg::ReshapeOp reshape,
                                                     int64_t tp) {
  ArrayRef<int64_t> in = shapeOf(reshape.getInput());
  ArrayRef<int64_t> out = shapeOf(reshape.getResult());
  if (!projectionOutput(reshape.getInput()))
    return std::nullopt;
  if (in.empty() || out.size() != in.size() + 1)
    return std::nullopt;
  int64_t h = out[out.size() - 2], d = out.back();
  if (ShapedType::isDynamic(h) || ShapedType::isDynamic(d) || h <= 1 ||
      h % tp == 0 || in.back() != h * d)
    return std::nullopt;
  return std::make_pair(h, d);
}

/// The padding of `heads` query heads over `kvHeads` KV heads for tp: the
/// KV heads to paddedKvHeads, and each group of query heads to a multiple
/// of the ranks that share a KV head. std::nullopt when nothing needs it.
std::optional<std::pair<int64_t, int64_t>>
paddedGroups(int64_t heads, int64_t kvHeads, int64_t tp) {
  int64_t paddedKv = paddedKvHeads(kvHeads, tp);
  int64_t perGroup = heads / kvHeads;
  int64_t ranks = paddedKv >= tp ? 1 : tp / paddedKv;
  int64_t paddedPerGroup = (perGroup + ranks - 1) / ranks * ranks;
  if (paddedKv == kvHeads && paddedPerGroup == perGroup)
    return std::nullopt;
  return std::make_pair(paddedKv, paddedPerGroup);
}

} // namespace

std::optional<int64_t> repeatMergeAxis(Operation *op) {
  auto reshape = dyn_cast_or_null<dfg::ReshapeOp>(op);
  return reshape ? repeatMerge(reshape) : std::nullopt;
}

int64_t paddedKvHeads(int64_t kvHeads, int64_t tp) {
  int64_t padded = kvHeads;
  while (padded % tp != 0 && tp % padded != 0)
    ++padded;
  return padded;
}

void padUnevenHeads(func::FuncOp func, int64_t tp) {
  if (tp <= 1)
    return;
  llvm::DenseSet<Value> tried;
  // `origin`: the op the heads were found at, where a group that cannot be
  // padded is said (once for each op that stops groups). Heads found at a
  // projection that stop at a dfg.attention are not: the attention's own
  // group says why, or its heads need no padding (KV heads that divide tp,
  // which the planner replicates).
  llvm::DenseSet<Operation *> explained;
  auto attempt = [&](HeadGroup &group, Value seed, Mark m, Operation *origin) {
    bool ok = group.grow(seed, m);
    for (Value v : group.values())
      tried.insert(v);
    if (ok) {
      group.pad();
      return;
    }
    Operation *at = group.stoppedAt();
    if (at && !(isa<dfg::ReshapeOp>(origin) && isa<dfg::AttentionOp>(at)) &&
        explained.insert(at).second)
      group.explain(origin, at, tp);
  };
  // Query heads grouped over KV heads, from `seed` holding them at `m`,
  // where tp needs them padded.
  auto attemptGrouped = [&](int64_t heads, int64_t kvHeads, int64_t d,
                            Value seed, Mark m, Operation *origin) {
    auto padded = paddedGroups(heads, kvHeads, tp);
    if (!padded)
      return;
    HeadGroup group(kvHeads, padded->first, heads / kvHeads, padded->second, d);
    attempt(group, seed, m, origin);
  };
  // Raised attention first: its key heads say how the query heads group.
  SmallVector<dfg::AttentionOp> attentions;
  func.walk([&](dfg::AttentionOp a) { attentions.push_back(a); });
  for (dfg::AttentionOp a : attentions) {
    ArrayRef<int64_t> q = shapeOf(a.getQuery());
    int64_t heads = q[1], kvHeads = shapeOf(a.getKey())[1], d = q[3];
    if (tried.contains(a.getQuery()) || ShapedType::isDynamic(heads) ||
        ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(d) ||
        kvHeads <= 0 || heads % kvHeads != 0)
      continue;
    if (kvHeads == heads) {
      if (heads % tp == 0)
        continue;
      HeadGroup group(1, 1, heads, (heads + tp - 1) / tp * tp, d);
      attempt(group, a.getQuery(), {1, Kind::Heads}, a);
      continue;
    }
    // GQA: each rank's query heads must belong to one KV head. KV heads
    // that tp neither divides nor is a multiple of are padded to the next
    // count that it does (3 on tp=2 to 4); with fewer than tp (each then
    // replicated on tp / kv ranks), each group pads to a multiple of
    // tp / kv.
    attemptGrouped(heads, kvHeads, d, a.getQuery(), {1, Kind::Heads}, a);
  }
  // Unraised GQA: the written-out repeats of the KV heads say how the query
  // heads group.
  SmallVector<std::pair<dfg::ReshapeOp, int64_t>> repeats;
  func.walk([&](dfg::ReshapeOp r) {
    if (std::optional<int64_t> a = repeatMerge(r))
      repeats.push_back({r, *a});
  });
  for (auto [r, a] : repeats) {
    ArrayRef<int64_t> in = shapeOf(r.getInput());
    ArrayRef<int64_t> out = shapeOf(r.getResult());
    int64_t kvHeads = in[a], heads = out[a], d = out.back();
    if (tried.contains(r.getResult()) || ShapedType::isDynamic(d))
      continue;
    attemptGrouped(heads, kvHeads, d, r.getResult(), {a, Kind::Heads}, r);
  }
  // Then heads the exporter wrote out: reshapes of projections.
  SmallVector<dfg::ReshapeOp> seeds;
  func.walk([&](dfg::ReshapeOp r) {
    if (headSplit(r, tp))
      seeds.push_back(r);
  });
  for (dfg::ReshapeOp seed : seeds) {
    Value features = seed.getInput();
    if (tried.contains(features))
      continue;
    std::optional<std::pair<int64_t, int64_t>> split = headSplit(seed, tp);
    if (!split)
      continue; // padded with an earlier group
    auto [heads, d] = *split;
    HeadGroup group(1, 1, heads, (heads + tp - 1) / tp * tp, d);
    attempt(group, features,
            {int64_t(shapeOf(features).size()) - 1, Kind::Features}, seed);
  }
}

} // namespace meshc
