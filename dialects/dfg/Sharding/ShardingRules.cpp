//===- ShardingRules.cpp - How each dfg op may be sharded -----------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/ShardingRules.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace meshc::dfg {
namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Builds a rule operand by operand, result by result.
class RuleBuilder {
public:
  int factor(int64_t size, FactorKind kind, const Twine &name) {
    rule_.factors.push_back({size, kind, name.str()});
    return static_cast<int>(rule_.factors.size()) - 1;
  }

  /// One factor per dimension of `shape` (none for a size-1 dimension).
  TensorFactors fresh(ArrayRef<int64_t> shape, FactorKind kind) {
    TensorFactors t;
    for (auto [i, size] : llvm::enumerate(shape))
      t.push_back(size == 1
                      ? DimFactors{}
                      : DimFactors{factor(size, kind, "dim " + Twine(i))});
    return t;
  }

  /// The factors of `shape` broadcast to `target` (aligned at the right):
  /// a dimension of size 1 where the target's is not carries no factor.
  static TensorFactors broadcastTo(ArrayRef<int64_t> shape,
                                   ArrayRef<int64_t> targetShape,
                                   const TensorFactors &target) {
    TensorFactors t(shape.size());
    size_t offset = targetShape.size() - shape.size();
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == targetShape[offset + i] || shape[i] != 1)
        t[i] = target[offset + i];
    return t;
  }

  /// A pinned factor of its own for dimension `d` of `shape` (none when the
  /// dimension has size 1).
  DimFactors pinned(ArrayRef<int64_t> shape, int64_t d) {
    return shape[d] == 1 ? DimFactors{}
                         : DimFactors{factor(shape[d], FactorKind::Pinned,
                                             "dim " + Twine(d))};
  }

  void operand(TensorFactors t) { rule_.operands.push_back(std::move(t)); }
  void result(TensorFactors t) { rule_.results.push_back(std::move(t)); }
  Factor &at(int f) { return rule_.factors[f]; }
  ShardingRule take() { return std::move(rule_); }

private:
  ShardingRule rule_;
};

/// Elementwise with broadcasting: the result's dimensions are parallel;
/// every operand reuses the factors of the dimensions it does not broadcast.
ShardingRule elementwise(Operation *op) {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  TensorFactors result = b.fresh(out, FactorKind::Parallel);
  for (Value v : op->getOperands())
    b.operand(RuleBuilder::broadcastTo(shapeOf(v), out, result));
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    b.result(result);
  return b.take();
}

/// Every dimension whole on every rank: operands and results replicated.
ShardingRule replicated(Operation *op) {
  RuleBuilder b;
  for (Value v : op->getOperands())
    b.operand(b.fresh(shapeOf(v), FactorKind::Pinned));
  for (Value v : op->getResults())
    b.result(b.fresh(shapeOf(v), FactorKind::Pinned));
  return b.take();
}

/// Dimensions matched one to one, except that `pinned` positions of the
/// input get factors of their own (the result's matching dimension too).
ShardingRule sameShape(Operation *op, ArrayRef<int64_t> pinnedDims) {
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

/// The input's factors with the non-unit dimensions matched in order
/// (squeeze and unsqueeze only add or drop dimensions of size 1).
ShardingRule unitDims(Operation *op) {
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

/// Pairs runs of input and result dimensions with equal products. A run of
/// one input dimension split into several result dimensions shares their
/// factors (the input's dimension is their product, outermost first), and
/// the reverse for merges; any other run is pinned.
ShardingRule reshape(ReshapeOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  TensorFactors inF(in.size()), outF(out.size());
  size_t i = 0, o = 0;
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
        inF[i++] = {f};
        outF[o++] = {f};
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
  // Whatever did not pair is pinned.
  for (; i < in.size(); ++i)
    inF[i] = b.pinned(in, i);
  for (; o < out.size(); ++o)
    outF[o] = b.pinned(out, o);
  b.operand(inF);
  b.result(outF);
  return b.take();
}

ShardingRule transpose(TransposeOp op) {
  RuleBuilder b;
  TensorFactors in = b.fresh(shapeOf(op.getInput()), FactorKind::Parallel);
  TensorFactors out;
  for (int64_t p : op.getPerm())
    out.push_back(in[p]);
  b.operand(in);
  b.result(out);
  return b.take();
}

/// Operands and result share every dimension but `axis`, which each of them
/// holds whole (concat's inputs, split's results).
ShardingRule alongAxis(Operation *op, int64_t axis) {
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

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

ShardingRule slice(SliceOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  // A dimension the slice keeps whole stays shardable.
  SmallVector<int64_t> sliced;
  for (auto [axis, start, end, step] : llvm::zip_equal(
           op.getAxes(), op.getStarts(), op.getEnds(), op.getSteps())) {
    int64_t a = normalizeAxis(axis, in.size());
    bool whole = start == 0 && step == 1 && in[a] == out[a] &&
                 !ShapedType::isDynamic(in[a]);
    if (!whole)
      sliced.push_back(a);
  }
  RuleBuilder b;
  TensorFactors tin = b.fresh(in, FactorKind::Parallel);
  TensorFactors tout = tin;
  for (int64_t a : sliced) {
    tin[a] = b.pinned(in, a);
    tout[a] = b.pinned(out, a);
  }
  b.operand(tin);
  b.result(tout);
  return b.take();
}

ShardingRule expand(ExpandOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  TensorFactors result = b.fresh(out, FactorKind::Parallel);
  b.operand(RuleBuilder::broadcastTo(shapeOf(op.getInput()), out, result));
  b.result(result);
  return b.take();
}

/// result = input with `axes` reduced; summing over a sharded axis leaves
/// partial sums, any other reduction needs the axis whole.
ShardingRule reduction(Operation *op, ArrayRef<int64_t> axes, bool keepDims,
                       bool isSum) {
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
    for (int f : tin[d])
      b.at(f).kind = isSum ? FactorKind::Reduction : FactorKind::Pinned;
    if (keepDims)
      tout.emplace_back();
  }
  b.operand(tin);
  b.result(tout);
  return b.take();
}

/// Batch dimensions broadcast; M and N parallel; K summed.
ShardingRule matmul(MatMulOp op) {
  ArrayRef<int64_t> a = shapeOf(op.getLhs()), c = shapeOf(op.getRhs());
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  if (a.size() < 2 || c.size() < 2)
    return replicated(op);
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
ShardingRule linear(LinearOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  TensorFactors x = b.fresh(in, FactorKind::Parallel);
  for (int f : x.back()) {
    b.at(f).kind = FactorKind::Reduction;
    b.at(f).name = "in_features";
  }
  int64_t outFeatures = op.getOutFeatures();
  DimFactors o = outFeatures == 1
                     ? DimFactors{}
                     : DimFactors{b.factor(outFeatures, FactorKind::Parallel,
                                           "out_features")};
  TensorFactors result = x;
  result.back() = o;
  b.operand(x);
  b.operand(op.getTransposeWeight() ? TensorFactors{o, x.back()}
                                    : TensorFactors{x.back(), o});
  if (op.getBias())
    b.operand({o});
  b.result(result);
  return b.take();
}

/// result[ids..., h] = table[ids..., h]. The vocabulary is a reduction: a
/// rank holding a block of the table's rows looks up the ids it owns, zero
/// rows for the others, and the partial rows sum to the result
/// (vocabulary-parallel, as Megatron's embedding).
ShardingRule embedding(EmbeddingOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> table = shapeOf(op.getTable());
  TensorFactors ids = b.fresh(shapeOf(op.getIds()), FactorKind::Parallel);
  int vocab = b.factor(table[0], FactorKind::Reduction, "vocabulary");
  int hidden = b.factor(table[1], FactorKind::Parallel, "hidden");
  b.operand({{vocab}, {hidden}});
  b.operand(ids);
  TensorFactors result = ids;
  result.push_back({hidden});
  b.result(result);
  return b.take();
}

ShardingRule gather(GatherOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> data = shapeOf(op.getData());
  int64_t axis = normalizeAxis(op.getAxis(), data.size());
  TensorFactors d = b.fresh(data, FactorKind::Parallel);
  for (int f : d[axis])
    b.at(f).kind = FactorKind::Pinned;
  TensorFactors idx = b.fresh(shapeOf(op.getIndices()), FactorKind::Parallel);
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
ShardingRule gatherND(GatherNDOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> data = shapeOf(op.getData()),
                    indices = shapeOf(op.getIndices());
  int64_t batch = op.getBatchDims(), k = indices.back();
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

/// Normalised dimensions [axis, rank) whole; leading ones parallel.
template <typename NormOp> ShardingRule norm(NormOp op) {
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

/// Query heads are (kv_heads, group), outermost first, so sharding the
/// heads shards the KV heads and each rank keeps its queries' KV heads.
/// Keys and the query sequence are whole; v_dim is parallel.
ShardingRule attention(AttentionOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), k = shapeOf(op.getKey()),
                    v = shapeOf(op.getValue());
  auto maybe = [&](int64_t size, FactorKind kind, StringRef name) {
    return size == 1 ? DimFactors{} : DimFactors{b.factor(size, kind, name)};
  };
  DimFactors batch = maybe(q[0], FactorKind::Parallel, "batch");
  DimFactors kvHeads = maybe(k[1], FactorKind::Parallel, "kv_heads");
  int64_t group = ShapedType::isDynamic(q[1]) || ShapedType::isDynamic(k[1])
                      ? ShapedType::kDynamic
                      : q[1] / k[1];
  DimFactors heads = kvHeads;
  heads.append(maybe(group, FactorKind::Parallel, "heads"));
  DimFactors seq = maybe(q[2], FactorKind::Pinned, "query sequence");
  DimFactors headDim = maybe(q[3], FactorKind::Pinned, "head_dim");
  DimFactors vDim = maybe(v[3], FactorKind::Parallel, "v_dim");
  DimFactors keys = maybe(k[2], FactorKind::Pinned, "key sequence");
  b.operand({batch, heads, seq, headDim});
  b.operand({batch, kvHeads, keys, headDim});
  b.operand({batch, kvHeads, keys, vDim});
  if (Value mask = op.getMask()) {
    ArrayRef<int64_t> m = shapeOf(mask);
    int64_t total = m.back();
    TensorFactors full = {batch, heads, seq,
                          maybe(total, FactorKind::Pinned, "mask keys")};
    SmallVector<int64_t> fullShape = {q[0], q[1], q[2], total};
    b.operand(RuleBuilder::broadcastTo(m, fullShape, full));
  }
  if (op.getPastKey()) {
    ArrayRef<int64_t> pk = shapeOf(op.getPastKey());
    DimFactors past = maybe(pk[2], FactorKind::Pinned, "past sequence");
    b.operand({batch, kvHeads, past, headDim});
    b.operand({batch, kvHeads, past, vDim});
  }
  b.result({batch, heads, seq, vDim});
  for (auto [i, present] : llvm::enumerate(op.getPresent())) {
    ArrayRef<int64_t> p = shapeOf(present);
    b.result({batch, kvHeads, maybe(p[2], FactorKind::Pinned, "present"),
              i == 0 ? headDim : vDim});
  }
  return b.take();
}

/// Batch and heads parallel; positions and features whole.
ShardingRule rotary(RotaryOp op) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op.getInput());
  TensorFactors x = b.fresh(in, FactorKind::Parallel);
  for (int d : {2, 3})
    for (int f : x[d])
      b.at(f).kind = FactorKind::Pinned;
  b.operand(x);
  b.operand(b.fresh(shapeOf(op.getCos()), FactorKind::Pinned));
  b.operand(b.fresh(shapeOf(op.getSin()), FactorKind::Pinned));
  if (Value positions = op.getPositions())
    b.operand({x[0], x[2]});
  b.result(x);
  return b.take();
}

bool hasRankedOperands(Operation *op) {
  auto ranked = [](Type t) { return isa<RankedTensorType>(t); };
  return llvm::all_of(op->getOperandTypes(), ranked) &&
         llvm::all_of(op->getResultTypes(), ranked);
}

} // namespace

FailureOr<ShardingRule> getShardingRule(Operation *op) {
  if (!isa<DfgDialect>(op->getDialect()))
    return op->emitOpError("has no sharding rule (not a dfg op)");
  if (!hasRankedOperands(op))
    return op->emitOpError(
        "has no sharding rule: its operands and results must be ranked "
        "tensors");
  if (isa<ElementwiseOpInterface>(op))
    return elementwise(op);
  std::optional<ShardingRule> rule =
      llvm::TypeSwitch<Operation *, std::optional<ShardingRule>>(op)
          // Sources: each dimension its own factor; partition slices them.
          .Case<WeightOp, ConstantOp>([](Operation *o) {
            RuleBuilder b;
            b.result(b.fresh(shapeOf(o->getResult(0)), FactorKind::Parallel));
            return b.take();
          })
          .Case<MatMulOp>([](MatMulOp o) { return matmul(o); })
          .Case<ReshapeOp>([](ReshapeOp o) { return reshape(o); })
          .Case<TransposeOp>([](TransposeOp o) { return transpose(o); })
          .Case<UnsqueezeOp, SqueezeOp>(
              [](Operation *o) { return unitDims(o); })
          .Case<ConcatOp>([](ConcatOp o) {
            return alongAxis(
                o, normalizeAxis(o.getAxis(), shapeOf(o.getResult()).size()));
          })
          .Case<SplitOp>([](SplitOp o) {
            return alongAxis(
                o, normalizeAxis(o.getAxis(), shapeOf(o.getInput()).size()));
          })
          .Case<GatherOp>([](GatherOp o) { return gather(o); })
          .Case<GatherNDOp>([](GatherNDOp o) { return gatherND(o); })
          .Case<SliceOp>([](SliceOp o) { return slice(o); })
          .Case<ExpandOp>([](ExpandOp o) { return expand(o); })
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>([](auto o) {
            return reduction(o, o.getAxes(), o.getKeepDims(),
                             /*isSum=*/isa<ReduceSumOp>(o.getOperation()));
          })
          .Case<TriluOp>([](TriluOp o) {
            int64_t rank = shapeOf(o.getInput()).size();
            return sameShape(o, {rank - 2, rank - 1});
          })
          .Case<SoftmaxOp>([](SoftmaxOp o) {
            int64_t rank = shapeOf(o.getInput()).size();
            return sameShape(o, {normalizeAxis(o.getAxis(), rank)});
          })
          .Case<ScatterNDOp>([](ScatterNDOp o) { return replicated(o); })
          // Rank programs' own ops: a fused chain is elementwise as its body;
          // a wait is its operand.
          .Case<FusedElementwiseOp>([](Operation *o) { return elementwise(o); })
          .Case<WaitOp>([](Operation *o) { return sameShape(o, {}); })
          // Ops on symbolic dimensions compute their shapes at run time:
          // every dimension stays whole on every rank.
          .Case<SizesOp, RangeOp, SymbolicReshapeOp, SymbolicExpandOp,
                SymbolicSliceOp>([](Operation *o) { return replicated(o); })
          .Case<EmbeddingOp>([](EmbeddingOp o) { return embedding(o); })
          .Case<LinearOp>([](LinearOp o) { return linear(o); })
          .Case<AttentionOp>([](AttentionOp o) { return attention(o); })
          .Case<RotaryOp>([](RotaryOp o) { return rotary(o); })
          .Case<LayerNormOp>([](LayerNormOp o) { return norm(o); })
          .Case<RmsNormOp>([](RmsNormOp o) { return norm(o); })
          .Default([](Operation *) { return std::nullopt; });
  if (!rule)
    return op->emitOpError("has no sharding rule");
  return std::move(*rule);
}

namespace {
int64_t groupOf(ArrayRef<int16_t> axes, ArrayRef<int64_t> gridShape) {
  int64_t n = 1;
  for (int16_t a : axes)
    n *= gridShape[a];
  return n;
}
} // namespace

FailureOr<SmallVector<GridAxes>> distributeAxes(const ShardingRule &rule,
                                                const DimFactors &dims,
                                                ArrayRef<int16_t> axes,
                                                ArrayRef<int64_t> gridShape) {
  SmallVector<GridAxes> out(dims.size());
  size_t next = 0;
  for (auto [k, f] : llvm::enumerate(dims)) {
    if (next == axes.size())
      break;
    int64_t size = rule.factors[f].size;
    if (ShapedType::isDynamic(size)) {
      out[k].assign(axes.begin() + next, axes.end());
      next = axes.size();
      break;
    }
    int64_t group = 1;
    while (next < axes.size() && size % (group * gridShape[axes[next]]) == 0)
      group *= gridShape[axes[next]], out[k].push_back(axes[next++]);
    if (next < axes.size() && group != size)
      return failure();
  }
  if (next != axes.size())
    return failure();
  return out;
}

GridAxes dimensionAxes(const ShardingRule &rule, const DimFactors &dims,
                       ArrayRef<GridAxes> factorAxes,
                       ArrayRef<int64_t> gridShape) {
  GridAxes axes;
  for (int f : dims) {
    const GridAxes &mine = factorAxes[f];
    axes.append(mine.begin(), mine.end());
    if (mine.empty() || groupOf(mine, gridShape) != rule.factors[f].size)
      break;
  }
  return axes;
}

} // namespace meshc::dfg
