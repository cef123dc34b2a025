//===- DfgShardingRules.cpp - The factor rule of each dfg op --------------===//
//
// Part of meshc. ShardingRuleOpInterface of every op that is not
// elementwise, and the rules families of ops share (ShardingRule.h).
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace meshc::dfg {

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace

//===----------------------------------------------------------------------===//
// RuleBuilder and the rules of families of ops
//===----------------------------------------------------------------------===//

int RuleBuilder::factor(int64_t size, FactorKind kind, const Twine &name) {
  rule_.factors.push_back({size, kind, name.str()});
  return static_cast<int>(rule_.factors.size()) - 1;
}

TensorFactors RuleBuilder::fresh(ArrayRef<int64_t> shape, FactorKind kind) {
  TensorFactors t;
  for (auto [i, size] : llvm::enumerate(shape))
    t.push_back(size == 1 ? DimFactors{}
                          : DimFactors{factor(size, kind, "dim " + Twine(i))});
  return t;
}

TensorFactors RuleBuilder::broadcastTo(ArrayRef<int64_t> shape,
                                       ArrayRef<int64_t> targetShape,
                                       const TensorFactors &target) {
  TensorFactors t(shape.size());
  size_t offset = targetShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == targetShape[offset + i] || shape[i] != 1)
      t[i] = target[offset + i];
  return t;
}

DimFactors RuleBuilder::pinned(ArrayRef<int64_t> shape, int64_t d) {
  return shape[d] == 1 ? DimFactors{}
                       : DimFactors{factor(shape[d], FactorKind::Pinned,
                                           "dim " + Twine(d))};
}

DimFactors RuleBuilder::maybe(int64_t size, FactorKind kind,
                              const Twine &name) {
  return size == 1 ? DimFactors{} : DimFactors{factor(size, kind, name)};
}

ShardingRule elementwiseRule(Operation *op) {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  TensorFactors result = b.fresh(out, FactorKind::Parallel);
  for (Value v : op->getOperands())
    b.operand(RuleBuilder::broadcastTo(shapeOf(v), out, result));
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    b.result(result);
  return b.take();
}

ShardingRule replicatedRule(Operation *op) {
  RuleBuilder b;
  for (Value v : op->getOperands())
    b.operand(b.fresh(shapeOf(v), FactorKind::Pinned));
  for (Value v : op->getResults())
    b.result(b.fresh(shapeOf(v), FactorKind::Pinned));
  return b.take();
}

ShardingRule sameShapeRule(Operation *op, ArrayRef<int64_t> pinnedDims) {
  RuleBuilder b;
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  TensorFactors t = b.fresh(shape, FactorKind::Parallel);
  for (int64_t d : pinnedDims)
    for (int f : t[d])
      b.at(f).kind = FactorKind::Pinned;
  b.operand(t);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    b.result(t);
  return b.take();
}

ShardingRule unitDimsRule(Operation *op) {
  RuleBuilder b;
  TensorFactors in = b.fresh(shapeOf(op->getOperand(0)), FactorKind::Parallel);
  TensorFactors out;
  auto next = in.begin();
  for (int64_t size : shapeOf(op->getResult(0))) {
    while (next != in.end() && next->empty())
      ++next;
    if (size == 1 || next == in.end()) {
      out.emplace_back();
      continue;
    }
    out.push_back(*next++);
  }
  b.operand(in);
  b.result(out);
  return b.take();
}

ShardingRule alongAxisRule(Operation *op, int64_t axis) {
  RuleBuilder b;
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  TensorFactors shared = b.fresh(shape, FactorKind::Parallel);
  auto own = [&](Value v) {
    TensorFactors t = shared;
    t[axis] = b.pinned(shapeOf(v), axis);
    return t;
  };
  for (Value v : op->getOperands())
    b.operand(own(v));
  for (Value v : op->getResults())
    b.result(own(v));
  return b.take();
}

ShardingRule reductionRule(Operation *op, ArrayRef<int64_t> axes, bool keepDims,
                           Combine combine) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  TensorFactors tin = b.fresh(in, FactorKind::Parallel);
  SmallVector<bool> reduced(in.size(), axes.empty());
  for (int64_t a : axes)
    reduced[normalizeAxis(a, in.size())] = true;
  TensorFactors tout;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      tout.push_back(tin[d]);
      continue;
    }
    for (int f : tin[d]) {
      b.at(f).kind = combine == Combine::Other ? FactorKind::Pinned
                                               : FactorKind::Reduction;
      b.at(f).byMax = combine == Combine::Max;
    }
    if (keepDims)
      tout.emplace_back();
  }
  b.operand(tin);
  b.result(tout);
  return b.take();
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

/// Each dimension its own factor; partition slices them.
ShardingRule WeightOp::getShardingRule() {
  RuleBuilder b;
  b.result(b.fresh(shapeOf(getResult()), FactorKind::Parallel));
  return b.take();
}

ShardingRule ConstantOp::getShardingRule() {
  RuleBuilder b;
  b.result(b.fresh(shapeOf(getResult()), FactorKind::Parallel));
  return b.take();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Batch dimensions broadcast; M and N parallel; K summed.
ShardingRule MatMulOp::getShardingRule() {
  ArrayRef<int64_t> a = shapeOf(getLhs()), c = shapeOf(getRhs());
  ArrayRef<int64_t> out = shapeOf(getResult());
  if (a.size() < 2 || c.size() < 2)
    return replicatedRule(*this);
  RuleBuilder b;
  TensorFactors result = b.fresh(out, FactorKind::Parallel);
  int k = b.factor(a.back(), FactorKind::Reduction, "contraction");
  auto side = [&](ArrayRef<int64_t> shape, bool isLhs) {
    TensorFactors batch = RuleBuilder::broadcastTo(
        shape.drop_back(2), out.drop_back(2),
        TensorFactors(result.begin(), result.end() - 2));
    DimFactors rows = isLhs ? result[out.size() - 2] : DimFactors{k};
    DimFactors cols = isLhs ? DimFactors{k} : result.back();
    if (shape[shape.size() - 2] == 1)
      rows.clear();
    if (shape.back() == 1)
      cols.clear();
    batch.push_back(rows);
    batch.push_back(cols);
    return batch;
  };
  b.operand(side(a, true));
  b.operand(side(c, false));
  b.result(result);
  return b.take();
}

/// result[..., out] = input[..., in] W + bias: `in` summed.
ShardingRule LinearOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  TensorFactors x = b.fresh(in, FactorKind::Parallel);
  for (int f : x.back()) {
    b.at(f).kind = FactorKind::Reduction;
    b.at(f).name = "in_features";
  }
  int64_t outFeatures = getOutFeatures();
  DimFactors o = outFeatures == 1
                     ? DimFactors{}
                     : DimFactors{b.factor(outFeatures, FactorKind::Parallel,
                                           "out_features")};
  TensorFactors result = x;
  result.back() = o;
  b.operand(x);
  b.operand(getTransposeWeight() ? TensorFactors{o, x.back()}
                                 : TensorFactors{x.back(), o});
  if (getBias())
    b.operand({o});
  b.result(result);
  return b.take();
}

/// result[ids..., h] = table[ids..., h]. The vocabulary is a reduction: a
/// rank holding a block of the table's rows looks up the ids it owns, zero
/// rows for the others, and the partial rows sum to the result
/// (vocabulary-parallel, as Megatron's embedding).
ShardingRule EmbeddingOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> table = shapeOf(getTable());
  TensorFactors ids = b.fresh(shapeOf(getIds()), FactorKind::Parallel);
  int vocab = b.factor(table[0], FactorKind::Reduction, "vocabulary");
  int hidden = b.factor(table[1], FactorKind::Parallel, "hidden");
  b.operand({{vocab}, {hidden}});
  b.operand(ids);
  TensorFactors result = ids;
  result.push_back({hidden});
  b.result(result);
  return b.take();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

namespace {
/// Pairs runs of input and result dimensions with equal products, from
/// input dimension `i` and result dimension `o` on, until a run does not
/// pair; returns where it stopped. A run of one input dimension split into
/// several result dimensions shares their factors (the input's dimension is
/// their product, outermost first), and the reverse for merges; any other
/// run is pinned. A dynamic dimension pairs only with a dynamic one: the
/// runs before them hold the same elements, so each is the outermost
/// dimension of the same block of elements, which a block split of either
/// splits alike (where both sizes divide by the pieces). Where
/// `sameDynamic(i, o)` does not say they are equal (null: every pair is
/// taken as equal, as where only static dimensions follow), the dimensions
/// after them need not line up, and the pairing stops after them.
std::pair<size_t, size_t>
pairReshapeDims(RuleBuilder &b, ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                TensorFactors &inF, TensorFactors &outF, size_t i, size_t o,
                function_ref<bool(size_t, size_t)> sameDynamic = nullptr) {
  auto skipUnit = [](ArrayRef<int64_t> s, size_t &k) {
    while (k < s.size() && s[k] == 1)
      ++k;
  };
  while (true) {
    skipUnit(in, i);
    skipUnit(out, o);
    if (i == in.size() || o == out.size())
      break;
    // A dynamic dimension pairs only with a dynamic one, alone.
    if (ShapedType::isDynamic(in[i]) || ShapedType::isDynamic(out[o])) {
      if (ShapedType::isDynamic(in[i]) && ShapedType::isDynamic(out[o])) {
        int f = b.factor(ShapedType::kDynamic, FactorKind::Parallel,
                         "dim " + Twine(o));
        bool equal = !sameDynamic || sameDynamic(i, o);
        inF[i++] = {f};
        outF[o++] = {f};
        if (!equal)
          break;
        continue;
      }
      break;
    }
    size_t i1 = i + 1, o1 = o + 1;
    int64_t pin = in[i], pout = out[o];
    while (pin != pout) {
      if (pin < pout) {
        if (i1 == in.size() || ShapedType::isDynamic(in[i1]))
          break;
        pin *= in[i1++];
      } else {
        if (o1 == out.size() || ShapedType::isDynamic(out[o1]))
          break;
        pout *= out[o1++];
      }
    }
    if (pin != pout)
      break;
    bool split = i1 - i == 1, merge = o1 - o == 1;
    if (split || merge) {
      // The side with several dimensions names the factors.
      ArrayRef<int64_t> many = split ? out : in;
      size_t from = split ? o : i, to = split ? o1 : i1;
      DimFactors whole;
      for (size_t k = from; k < to; ++k) {
        if (many[k] == 1)
          continue;
        int f = b.factor(many[k], FactorKind::Parallel, "dim " + Twine(k));
        whole.push_back(f);
        (split ? outF : inF)[k] = {f};
      }
      (split ? inF[i] : outF[o]) = whole;
    } else {
      for (size_t k = i; k < i1; ++k)
        inF[k] = b.pinned(in, k);
      for (size_t k = o; k < o1; ++k)
        outF[k] = b.pinned(out, k);
    }
    i = i1;
    o = o1;
  }
  return {i, o};
}

/// From input dimension `i` and result dimension `o` on: the longest static
/// suffixes of input and result with equal products hold the same elements
/// in the same order, whatever comes before them (a [batch, seq, heads, d]
/// -> [batch * seq, heads * d] keeps heads * d), so they pair; the
/// dimensions in front of them are pinned.
void pairStaticSuffix(RuleBuilder &b, ArrayRef<int64_t> in,
                      ArrayRef<int64_t> out, TensorFactors &inF,
                      TensorFactors &outF, size_t i, size_t o) {
  auto staticFrom = [](ArrayRef<int64_t> shape, size_t from) {
    size_t k = shape.size();
    while (k > from && !ShapedType::isDynamic(shape[k - 1]))
      --k;
    return k;
  };
  auto product = [](ArrayRef<int64_t> shape, size_t from) {
    int64_t p = 1;
    for (int64_t d : shape.drop_front(from))
      p *= d;
    return p;
  };
  size_t i0 = in.size(), o0 = out.size();
  for (size_t a = staticFrom(in, i); a <= in.size(); ++a)
    for (size_t c = staticFrom(out, o); c <= out.size(); ++c)
      if (product(in, a) == product(out, c) && a + c < i0 + o0)
        i0 = a, o0 = c;
  for (; i < i0; ++i)
    inF[i] = b.pinned(in, i);
  for (; o < o0; ++o)
    outF[o] = b.pinned(out, o);
  std::tie(i, o) = pairReshapeDims(b, in, out, inF, outF, i0, o0);
  for (; i < in.size(); ++i)
    inF[i] = b.pinned(in, i);
  for (; o < out.size(); ++o)
    outF[o] = b.pinned(out, o);
}
} // namespace

/// Pairs runs of input and result dimensions with equal products
/// (pairReshapeDims). A dynamic result dimension is a copy of the input's at
/// its index (a 0 in `shape`) or the one inferred (-1). A copy equals what
/// it copies; the inferred one equals the input's one dynamic dimension no
/// entry copies where the static sizes on both sides have equal products.
/// Other dynamic pairs are the outermost dimensions of the same elements
/// (pairReshapeDims), after which the static suffixes pair: [b, l, h, d] ->
/// [0, -1, c, h, d], a sequence cut into chunks of c, pairs b, l with the
/// chunks (its outer factor), h and d, and pins c (not h with c, where
/// h = c).
ShardingRule ReshapeOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  ArrayRef<int64_t> spec = getShape();
  TensorFactors inF(in.size()), outF(out.size());
  auto isDynamic = [](int64_t d) { return ShapedType::isDynamic(d); };
  auto staticProduct = [&](ArrayRef<int64_t> shape) {
    int64_t p = 1;
    for (int64_t d : shape)
      if (!isDynamic(d))
        p *= d;
    return p;
  };
  bool equalStatics = staticProduct(in) == staticProduct(out);
  size_t dynamicInputs = llvm::count_if(in, isDynamic);
  auto copies = [&](size_t o, size_t i) {
    return o < spec.size() && spec[o] == 0 && o == i;
  };
  auto sameDynamic = [&](size_t i, size_t o) {
    if (copies(o, i))
      return true;
    if (o >= spec.size() || spec[o] != -1 || !equalStatics)
      return false;
    // The inferred dimension: every other dynamic result dimension copies
    // an input one, and `i` is the one left.
    size_t copied = 0;
    for (size_t k = 0; k < out.size(); ++k)
      if (k != o && isDynamic(out[k])) {
        if (!copies(k, k) || k == i)
          return false;
        ++copied;
      }
    return dynamicInputs == copied + 1;
  };
  auto [i, o] = pairReshapeDims(b, in, out, inF, outF, 0, 0, sameDynamic);
  pairStaticSuffix(b, in, out, inF, outF, i, o);
  b.operand(inF);
  b.result(outF);
  return b.take();
}

ShardingRule TransposeOp::getShardingRule() {
  RuleBuilder b;
  TensorFactors in = b.fresh(shapeOf(getInput()), FactorKind::Parallel);
  TensorFactors out;
  for (int64_t p : getPerm())
    out.push_back(in[p]);
  b.operand(in);
  b.result(out);
  return b.take();
}

ShardingRule UnsqueezeOp::getShardingRule() { return unitDimsRule(*this); }
ShardingRule SqueezeOp::getShardingRule() { return unitDimsRule(*this); }

ShardingRule ConcatOp::getShardingRule() {
  return alongAxisRule(*this,
                       normalizeAxis(getAxis(), shapeOf(getResult()).size()));
}

ShardingRule SplitOp::getShardingRule() {
  return alongAxisRule(*this,
                       normalizeAxis(getAxis(), shapeOf(getInput()).size()));
}

ShardingRule GatherOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> data = shapeOf(getData());
  int64_t axis = normalizeAxis(getAxis(), data.size());
  TensorFactors d = b.fresh(data, FactorKind::Parallel);
  for (int f : d[axis])
    b.at(f).kind = FactorKind::Pinned;
  TensorFactors idx = b.fresh(shapeOf(getIndices()), FactorKind::Parallel);
  TensorFactors result(d.begin(), d.begin() + axis);
  result.append(idx.begin(), idx.end());
  result.append(d.begin() + axis + 1, d.end());
  b.operand(d);
  b.operand(idx);
  b.result(result);
  return b.take();
}

/// GatherND: the batch dimensions shared by data, indices and result; the
/// indexed dimensions of data whole (any rank may read any row); the index
/// tuples' leading dimensions and data's trailing ones parallel into the
/// result; the tuple dimension of indices whole.
ShardingRule GatherNDOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  int64_t batch = getBatchDims(), k = indices.back();
  TensorFactors d = b.fresh(data, FactorKind::Parallel);
  for (int64_t i = batch; i < batch + k; ++i)
    for (int f : d[i])
      b.at(f).kind = FactorKind::Pinned;
  TensorFactors idx = b.fresh(indices, FactorKind::Parallel);
  for (int f : idx.back())
    b.at(f).kind = FactorKind::Pinned;
  for (int64_t i = 0; i < batch; ++i)
    idx[i] = d[i];
  TensorFactors result(idx.begin(), idx.end() - 1);
  result.append(d.begin() + batch + k, d.end());
  b.operand(d);
  b.operand(idx);
  b.result(result);
  return b.take();
}

/// A dimension the slice keeps whole stays shardable.
ShardingRule SliceOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  RuleBuilder b;
  TensorFactors tin = b.fresh(in, FactorKind::Parallel);
  TensorFactors tout = tin;
  for (auto [axis, start, end, step] :
       llvm::zip_equal(getAxes(), getStarts(), getEnds(), getSteps())) {
    int64_t a = normalizeAxis(axis, in.size());
    if (ShapedType::isDynamic(in[a])) {
      tin[a] = b.pinned(in, a);
      tout[a] = b.pinned(out, a);
      continue;
    }
    // A dimension the slice keeps whole stays shardable.
    if (start == 0 && step == 1 && in[a] == out[a])
      continue;
    // Every step-th element from one of the first `step`, to the end: the
    // dimension is [in / step, step], and the slice keeps one of the inner
    // positions. The outer factor stays shardable (a block of whole groups
    // of `step` on each rank): gpt-oss's interleaved gate and up features.
    if (step > 1 && start >= 0 && start < step && in[a] % step == 0 &&
        out[a] > 1 && out[a] == in[a] / step) {
      int outer = b.factor(out[a], FactorKind::Parallel, "strided");
      int inner = b.factor(step, FactorKind::Pinned, "stride");
      tin[a] = {outer, inner};
      tout[a] = {outer};
      continue;
    }
    tin[a] = b.pinned(in, a);
    tout[a] = b.pinned(out, a);
  }
  b.operand(tin);
  b.result(tout);
  return b.take();
}

/// A broadcast of `input` to `result`: every result dimension parallel, the
/// input's own dimensions (not a broadcast 1) sharing its factors.
static ShardingRule broadcastRule(Value input, Value result) {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(result);
  TensorFactors factors = b.fresh(out, FactorKind::Parallel);
  b.operand(RuleBuilder::broadcastTo(shapeOf(input), out, factors));
  b.result(factors);
  return b.take();
}

ShardingRule ExpandOp::getShardingRule() {
  return broadcastRule(getInput(), getResult());
}

ShardingRule CumSumOp::getShardingRule() {
  int64_t rank = shapeOf(getInput()).size();
  return sameShapeRule(*this, {normalizeAxis(getAxis(), rank)});
}

/// Every dimension but the axis is parallel; the axis is pinned (each slice
/// is ordered whole), and the results' axis, of size k, is a factor of its
/// own (a sort's is the input's).
ShardingRule TopKOp::getShardingRule() {
  RuleBuilder b;
  int64_t axis = getNormalizedAxis();
  TensorFactors in = b.fresh(shapeOf(getInput()), FactorKind::Parallel);
  if (!in[axis].empty())
    b.at(in[axis].front()).kind = FactorKind::Pinned;
  TensorFactors out = in;
  if (getK())
    out[axis] = b.pinned(shapeOf(getValues()), axis);
  b.operand(in);
  b.result(out);
  b.result(out);
  return b.take();
}

ShardingRule TriluOp::getShardingRule() {
  int64_t rank = shapeOf(getInput()).size();
  return sameShapeRule(*this, {rank - 2, rank - 1});
}

/// ScatterND: the dimensions of data that the index tuples address whole
/// (any update may land in any row), and the index tuples themselves whole
/// (every rank applies every update, in order); data's trailing
/// dimensions, which each update carries whole, parallel in data, updates
/// and result (an expert's output features added back at its tokens). The
/// batch dimensions are parallel in all four: a batch's tuples write only
/// into that batch.
ShardingRule ScatterNDOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  int64_t q = indices.back(), batch = getBatchDims();
  TensorFactors d = b.fresh(data, FactorKind::Parallel);
  for (int64_t i = batch; i < batch + q; ++i)
    for (int f : d[i])
      b.at(f).kind = FactorKind::Pinned;
  TensorFactors idx = b.fresh(indices.drop_front(batch), FactorKind::Pinned);
  idx.insert(idx.begin(), d.begin(), d.begin() + batch);
  TensorFactors updates(idx.begin(), idx.end() - 1);
  updates.append(d.begin() + batch + q, d.end());
  b.operand(d);
  b.operand(idx);
  b.operand(updates);
  b.result(d);
  return b.take();
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

ShardingRule ReduceSumOp::getShardingRule() {
  return reductionRule(*this, getAxes(), getKeepDims(), Combine::Sum);
}
ShardingRule ReduceMeanOp::getShardingRule() {
  return reductionRule(*this, getAxes(), getKeepDims(), Combine::Other);
}
ShardingRule ReduceMaxOp::getShardingRule() {
  return reductionRule(*this, getAxes(), getKeepDims(), Combine::Max);
}

ShardingRule SoftmaxOp::getShardingRule() {
  int64_t rank = shapeOf(getInput()).size();
  return sameShapeRule(*this, {normalizeAxis(getAxis(), rank)});
}

namespace {
/// Normalised dimensions [axis, rank) whole; leading ones parallel.
template <typename NormOp> ShardingRule normRule(NormOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  int64_t axis = normalizeAxis(static_cast<int64_t>(op.getAxis()), in.size());
  TensorFactors x = b.fresh(in, FactorKind::Parallel);
  for (size_t d = axis; d < in.size(); ++d)
    for (int f : x[d])
      b.at(f).kind = FactorKind::Pinned;
  auto trailing = [&](Value v) {
    return RuleBuilder::broadcastTo(shapeOf(v), in.drop_front(axis),
                                    TensorFactors(x.begin() + axis, x.end()));
  };
  b.operand(x);
  b.operand(trailing(op.getScale()));
  if (op.getBias())
    b.operand(trailing(op.getBias()));
  if (op.getResidual())
    b.operand(x);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    b.result(x);
  return b.take();
}

} // namespace

ShardingRule LayerNormOp::getShardingRule() { return normRule(*this); }
ShardingRule RmsNormOp::getShardingRule() { return normRule(*this); }

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

/// Query heads are (kv_heads, group), outermost first, so sharding the
/// heads shards the KV heads and each rank keeps its queries' KV heads.
/// Keys and the query sequence are whole; v_dim is parallel.
ShardingRule AttentionOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> q = shapeOf(getQuery()), k = shapeOf(getKey()),
                    v = shapeOf(getValue());
  DimFactors batch = b.maybe(q[0], FactorKind::Parallel, "batch");
  DimFactors kvHeads = b.maybe(k[1], FactorKind::Parallel, "kv_heads");
  int64_t group = ShapedType::isDynamic(q[1]) || ShapedType::isDynamic(k[1])
                      ? ShapedType::kDynamic
                      : q[1] / k[1];
  DimFactors heads = kvHeads;
  heads.append(b.maybe(group, FactorKind::Parallel, "heads"));
  DimFactors seq = b.maybe(q[2], FactorKind::Pinned, "query sequence");
  DimFactors headDim = b.maybe(q[3], FactorKind::Pinned, "head_dim");
  DimFactors vDim = b.maybe(v[3], FactorKind::Parallel, "v_dim");
  DimFactors keys = b.maybe(k[2], FactorKind::Pinned, "key sequence");
  b.operand({batch, heads, seq, headDim});
  b.operand({batch, kvHeads, keys, headDim});
  b.operand({batch, kvHeads, keys, vDim});
  if (Value mask = getMask()) {
    ArrayRef<int64_t> m = shapeOf(mask);
    int64_t total = m.back();
    TensorFactors full = {batch, heads, seq,
                          b.maybe(total, FactorKind::Pinned, "mask keys")};
    SmallVector<int64_t> fullShape = {q[0], q[1], q[2], total};
    b.operand(RuleBuilder::broadcastTo(m, fullShape, full));
  }
  if (getPastKey()) {
    ArrayRef<int64_t> pk = shapeOf(getPastKey());
    DimFactors past = b.maybe(pk[2], FactorKind::Pinned, "past sequence");
    b.operand({batch, kvHeads, past, headDim});
    b.operand({batch, kvHeads, past, vDim});
  }
  if (getPastLengths())
    b.operand({batch});
  if (getSinks()) // one per query head: split with them
    b.operand({heads});
  b.result({batch, heads, seq, vDim});
  for (auto [i, present] : llvm::enumerate(getPresent())) {
    ArrayRef<int64_t> p = shapeOf(present);
    b.result({batch, kvHeads, b.maybe(p[2], FactorKind::Pinned, "present"),
              i == 0 ? headDim : vDim});
  }
  return b.take();
}

/// Batch and heads parallel; positions and features whole (per-row tables
/// split with the batch).
ShardingRule RotaryOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  TensorFactors x = b.fresh(in, FactorKind::Parallel);
  for (int d : {2, 3})
    for (int f : x[d])
      b.at(f).kind = FactorKind::Pinned;
  b.operand(x);
  // Per-row tables ([batch, seq, d/2], no positions) follow the input's
  // batch split: each rank rotates its rows by its rows' angles. Shared
  // tables ([1, seq, d/2], or caches indexed by positions) stay whole.
  auto table = [&](Value t) {
    ArrayRef<int64_t> shape = shapeOf(t);
    if (getPositions() || shape.size() != 3 || shape[0] == 1)
      return b.fresh(shape, FactorKind::Pinned);
    TensorFactors last = b.fresh(shape.drop_front(2), FactorKind::Pinned);
    return TensorFactors{x[0], x[2], last[0]};
  };
  b.operand(table(getCos()));
  b.operand(table(getSin()));
  if (Value positions = getPositions())
    b.operand({x[0], x[2]});
  b.result(x);
  return b.take();
}

//===----------------------------------------------------------------------===//
// Ops of symbolic shapes and rank programs
//===----------------------------------------------------------------------===//

// Ops on symbolic dimensions compute their shapes at run time: every
// dimension stays whole on every rank.
ShardingRule SizesOp::getShardingRule() { return replicatedRule(*this); }
ShardingRule RangeOp::getShardingRule() { return replicatedRule(*this); }
/// The static suffixes of input and result pair as in dfg.reshape
/// (pairStaticSuffix: a [batch * seq, d] -> [batch, seq, d] keeps d's
/// split). Leading dimensions sized by symbols pair with each other: a split
/// of the first into n contiguous blocks is a split of the whole tensor's
/// elements into n contiguous blocks, so of the other's first dimension too
/// (dp's batch through a [batch * seq, d] -> [batch, seq, d]; partition
/// divides that dimension's expression by n). The other dimensions in front
/// of the suffixes are held whole.
ShardingRule SymbolicReshapeOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  TensorFactors inF(in.size()), outF(out.size());
  // Leading dimensions the reshape keeps, where a static one follows
  // dynamic ones (XLNet's relative shift [b, heads, i, j] -> [b, heads, j,
  // i] keeps b and the heads): asked of the symbolic shapes, which know
  // whether the dynamic ones agree. Each pairs with itself.
  size_t common = std::min(in.size(), out.size()), kept = 0;
  bool staticAfterDynamic = false;
  for (size_t i = 1; i < common && in[i] == out[i]; ++i)
    staticAfterDynamic |= !ShapedType::isDynamic(in[i]);
  if (staticAfterDynamic) {
    DimTable table(getContext());
    SymbolicShapes shapes(table);
    SmallVector<AffineExpr> inDims(shapes.dims(getInput()));
    SmallVector<AffineExpr> outDims = table.read(getShape(), getSymbols());
    while (kept < common && kept < inDims.size() && kept < outDims.size() &&
           inDims[kept] && inDims[kept] == outDims[kept])
      ++kept;
  }
  if (kept >= 2) {
    for (size_t i = 0; i < kept; ++i) {
      int f = b.factor(in[i], FactorKind::Parallel, "kept");
      inF[i] = {f};
      outF[i] = {f};
    }
    pairStaticSuffix(b, in, out, inF, outF, kept, kept);
    b.operand(inF);
    b.result(outF);
    return b.take();
  }
  size_t first = 0;
  if (!in.empty() && !out.empty() && ShapedType::isDynamic(in[0]) &&
      ShapedType::isDynamic(out[0])) {
    int f = b.factor(ShapedType::kDynamic, FactorKind::Parallel, "leading");
    inF[0] = {f};
    outF[0] = {f};
    first = 1;
  }
  pairStaticSuffix(b, in, out, inF, outF, first, first);
  b.operand(inF);
  b.result(outF);
  return b.take();
}
/// As Expand: a dimension the input has (not a 1 broadcast) pairs with the
/// result's (a symbolic one too: numpy broadcasting makes them equal; the
/// partition keeps the input's piece by a 1 in the map), the others are
/// the result's alone.
ShardingRule SymbolicExpandOp::getShardingRule() {
  return broadcastRule(getInput(), getResult());
}

/// The sliced axes whole (their bounds are the rank's whole tensor's), the
/// others shardable.
ShardingRule SymbolicSliceOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  ArrayRef<int64_t> out = shapeOf(getResult());
  RuleBuilder b;
  TensorFactors tin = b.fresh(in, FactorKind::Parallel);
  TensorFactors tout = tin;
  for (int64_t axis : getAxes()) {
    int64_t a = normalizeAxis(axis, in.size());
    tin[a] = b.pinned(in, a);
    tout[a] = b.pinned(out, a);
  }
  b.operand(tin);
  b.result(tout);
  return b.take();
}

/// A fused chain is elementwise as its body.
ShardingRule FusedElementwiseOp::getShardingRule() {
  return elementwiseRule(*this);
}

/// A wait is its operand.
ShardingRule WaitOp::getShardingRule() { return sameShapeRule(*this, {}); }

} // namespace meshc::dfg
