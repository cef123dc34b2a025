//===- UnmergeLeading.cpp - Merged leading dimensions made separate again -===//
//
// Part of meshc.
//
// Exporters write attention over tensors whose batch and heads are merged
// into one leading dimension: the dynamo exporter's Kᵀ ([B, H, S, D] ->
// [B*H, S, D], swap, back), BLOOM's baddbmm of [B*H, S, D] by [B*H, D, S]
// plus an ALiBi bias [B*H, 1, S], a bmm of probabilities [B*H, S, S] and
// values. A tp split of the heads is not a block of [B*H] (each batch row
// holds all of its heads), so no sharding of the merged dimension states
// it, and the split stops there.
//
// unmergeLeadingDims follows every merge of leading dimensions (a reshape
// whose dimension 0 is the product of the input's first k >= 2 dimensions),
// and every merge after kept dimensions of a batch with a factor cut from
// the features (torch's multi-head attention views its projections
// [S, B, H*D] as [S, B*H, D], then moves B*H to the front), forward through
// the ops that treat the merged dimension as independent rows: elementwise
// ops, batched matmuls of two activations, products by a matrix
// (projections: TorchScript's and GPT-2's Gemm on [batch * seq, k]),
// transposes (which move it), softmaxes and reductions that keep it (an
// unraised norm's mean square of rows [B*S*H, D]), reshapes of the other
// dimensions. Each is rebuilt on the unmerged tensor, the group of merged
// dimensions in the merged one's place; a reshape that splits it back reads
// the unmerged result directly. Sizes are compared as symbolic expressions
// (SymbolicShapes), so a merge of a symbolic batch unmerges as a static one
// does. A use the rewrite does not follow reads a reshape of the unmerged
// value back (a view), so nothing is computed twice.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/Normalize.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

#include <optional>

using namespace mlir;

namespace meshc {
namespace {

using Dims = SmallVector<AffineExpr>;

/// A value whose dimension `pos` is the merge of a group of dimensions, and
/// the same value with the group as dimensions of their own.
struct Unmerged {
  Value value;
  Dims dims; // of `value`: the merged value's, with `pos` replaced by the group
  size_t pos;
  size_t groupSize;

  ArrayRef<AffineExpr> group() const {
    return ArrayRef(dims).slice(pos, groupSize);
  }
};

AffineExpr product(ArrayRef<AffineExpr> dims, MLIRContext *context) {
  AffineExpr p = getAffineConstantExpr(1, context);
  for (AffineExpr d : dims) {
    if (!d)
      return AffineExpr();
    p = p * d;
  }
  return p;
}

bool sameDims(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip_equal(a, b), [](auto pair) {
           auto [x, y] = pair;
           return x && y && dfg::sameDim(x, y);
         });
}

bool sameProduct(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b,
                 MLIRContext *context) {
  AffineExpr pa = product(a, context), pb = product(b, context);
  return pa && pb && dfg::sameDim(pa, pb);
}

/// The axes a dfg.reduce_* op reduces (non-negative, increasing).
ArrayRef<int64_t> reducedAxes(Operation *op) {
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
  return axes ? axes.asArrayRef() : ArrayRef<int64_t>();
}

bool isOne(AffineExpr d) {
  auto c = dyn_cast_or_null<AffineConstantExpr>(d);
  return c && c.getValue() == 1;
}

RankedTensorType typeOfDims(dfg::DimTable &table, ArrayRef<AffineExpr> dims,
                            Type element) {
  SmallVector<int64_t> shape;
  for (AffineExpr d : dims) {
    auto c =
        dyn_cast<AffineConstantExpr>(simplifyAffineExpr(d, 0, table.size()));
    shape.push_back(c ? c.getValue() : ShapedType::kDynamic);
  }
  return RankedTensorType::get(shape, element);
}

/// `x` (of dimensions `from`) reshaped to `to`: itself when they agree, a
/// dfg.reshape where its spec can state `to`, else a dfg.symbolic_reshape;
/// null where a dimension has no expression.
Value reshapeDims(OpBuilder &b, Location loc, dfg::DimTable &table, Value x,
                  ArrayRef<AffineExpr> from, ArrayRef<AffineExpr> to) {
  if (sameDims(from, to))
    return x;
  if (llvm::any_of(to, [](AffineExpr d) { return !d; }))
    return nullptr;
  RankedTensorType type = typeOfDims(
      table, to, cast<RankedTensorType>(x.getType()).getElementType());
  // A dfg.reshape where each dynamic dimension is copied (0) from the same
  // position or is the one inferred (-1): its sharding rule pairs dynamic
  // dimensions, a dfg.symbolic_reshape's does not.
  SmallVector<int64_t> spec(type.getShape());
  bool inferred = false, expressible = true;
  for (auto [i, size] : llvm::enumerate(spec)) {
    if (!ShapedType::isDynamic(size))
      continue;
    if (i < from.size() && from[i] && dfg::sameDim(from[i], to[i]))
      size = 0;
    else if (!inferred)
      size = -1, inferred = true;
    else
      expressible = false;
  }
  if (expressible)
    return dfg::ReshapeOp::create(b, loc, type, x,
                                  b.getDenseI64ArrayAttr(spec));
  auto [map, names] = table.write(to);
  return dfg::SymbolicReshapeOp::create(b, loc, type, x, map, names);
}

class Unmerger {
public:
  explicit Unmerger(func::FuncOp func)
      : func_(func), table_(func.getContext()), shapes_(table_) {}

  /// Whether anything was rebuilt.
  bool run() {
    SmallVector<Operation *> ops;
    for (Operation &op : func_.getBody().front())
      ops.push_back(&op);
    // Every original dimension is read before the IR changes.
    for (Value a : func_.getArguments())
      if (isa<RankedTensorType>(a.getType()))
        dims_[a] = Dims(shapes_.dims(a));
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (isa<RankedTensorType>(r.getType()))
          dims_[r] = Dims(shapes_.dims(r));
    for (Operation *op : ops)
      visit(op);
    for (Operation *op : splitBacks_)
      op->erase();
    // Originals in reverse order, users before definitions: a use the
    // rewrite did not follow reads the unmerged value merged back.
    for (Operation *op : llvm::reverse(rebuilt_)) {
      Value r = op->getResult(0);
      if (!r.use_empty()) {
        const Unmerged &u = unmerged_.lookup(r);
        OpBuilder b(op);
        b.setInsertionPointAfterValue(u.value);
        Value merged = reshape(b, op->getLoc(), u.value, u.dims, dims_[r]);
        if (!merged)
          continue; // unreachable: the merged dims were read above
        r.replaceAllUsesWith(merged);
      }
      op->erase();
    }
    for (Operation *seed : seeds_) {
      Value u = unmerged_.lookup(seed->getResult(0)).value;
      if (seed->use_empty())
        seed->erase();
      if (u != seed->getOperand(0) && u.use_empty())
        u.getDefiningOp()->erase();
    }
    return !rebuilt_.empty() || !splitBacks_.empty();
  }

private:
  MLIRContext *context() { return func_.getContext(); }

  Value reshape(OpBuilder &b, Location loc, Value x, ArrayRef<AffineExpr> from,
                ArrayRef<AffineExpr> to) {
    return reshapeDims(b, loc, table_, x, from, to);
  }

  RankedTensorType typeOf(ArrayRef<AffineExpr> dims, Type element) {
    return typeOfDims(table_, dims, element);
  }

  /// `dims` with dimension `pos` replaced by `group`.
  static Dims liftDims(ArrayRef<AffineExpr> group, size_t pos,
                       ArrayRef<AffineExpr> dims) {
    Dims d(dims.take_front(pos));
    d.append(group.begin(), group.end());
    d.append(dims.begin() + pos + 1, dims.end());
    return d;
  }

  /// An axis of a value whose dimension `pos` became `extra` + 1 of its
  /// own, numbered anew (`pos` is the group's first).
  static int64_t liftAxis(int64_t axis, size_t pos, int64_t extra) {
    return axis > static_cast<int64_t>(pos) ? axis + extra : axis;
  }

  /// How an op's operand meets the merged dimension of its result.
  enum class Role {
    Keep, // broadcasts along it, or does not reach it: read as it is
    Rows, // holds it: read unmerged
    Ones  // a dimension 1 there, broadcast: read with a 1 per group member
  };

  void visit(Operation *op) {
    if (op->getNumResults() != 1 || !dims_.count(op->getResult(0)))
      return;
    if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op)) {
      Value in = op->getOperand(0);
      if (unmerged_.count(in))
        return visitReshapeOfUnmerged(op, unmerged_[in]);
      return visitMerge(op);
    }
    Value first;
    for (Value v : op->getOperands())
      if (unmerged_.count(v)) {
        first = v;
        break;
      }
    if (!first)
      return;
    const Dims out = dims_[op->getResult(0)];
    if (out.empty())
      return;
    // The group of the first unmerged operand; every other must agree.
    const Dims group(unmerged_[first].group());
    const size_t firstPos = unmerged_[first].pos;
    const size_t rank = out.size();
    const int64_t extra = static_cast<int64_t>(group.size()) - 1;
    auto rankOf = [&](Value v) { return dims_.lookup(v).size(); };
    // Where the merged dimension lies in the result, and how each operand
    // meets it.
    // Where the merged dimension lies in the result and in each operand,
    // and how each operand meets it.
    int64_t resultPos;
    SmallVector<Role> roles(op->getNumOperands(), Role::Keep);
    SmallVector<int64_t> at(op->getNumOperands(), firstPos);
    if (isa<dfg::ElementwiseOpInterface>(op)) {
      // Operands broadcast from the right.
      resultPos = firstPos + (rank - rankOf(first));
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (!dims_.count(v))
          return;
        at[i] = resultPos - static_cast<int64_t>(rank - rankOf(v));
        if (at[i] < 0)
          continue;
        roles[i] = !isOne(dims_[v][at[i]]) ? Role::Rows
                   : at[i] > 0             ? Role::Ones
                                           : Role::Keep;
      }
    } else if (auto matmul = dyn_cast<dfg::MatMulOp>(op);
               matmul && dims_.count(matmul.getRhs()) &&
               dims_[matmul.getRhs()].size() == 2) {
      // A product by a matrix (a projection): the merged dimension is one
      // of the left operand's rows, or of its batch.
      resultPos = firstPos;
      if (first != matmul.getLhs() || rankOf(first) != rank ||
          resultPos + 1 >= static_cast<int64_t>(rank))
        return;
      roles[0] = Role::Rows;
    } else if (auto matmul = dyn_cast<dfg::MatMulOp>(op)) {
      // A batched product of two activations: the merged dimension is a
      // batch dimension.
      resultPos = firstPos;
      if (rank < 3 || resultPos + 2 >= static_cast<int64_t>(rank))
        return;
      for (auto [i, v] : llvm::enumerate(op->getOperands())) {
        if (!dims_.count(v) || rankOf(v) != rank)
          return;
        roles[i] = !isOne(dims_[v][resultPos]) ? Role::Rows
                   : resultPos > 0             ? Role::Ones
                                               : Role::Keep;
      }
    } else if (auto linear = dyn_cast<dfg::LinearOp>(op)) {
      resultPos = firstPos;
      if (first != linear.getInput() || rankOf(first) != rank ||
          resultPos + 1 >= static_cast<int64_t>(rank))
        return;
      roles[0] = Role::Rows;
    } else if (auto t = dyn_cast<dfg::TransposeOp>(op)) {
      auto it = llvm::find(t.getPerm(), static_cast<int64_t>(firstPos));
      if (it == t.getPerm().end())
        return;
      resultPos = it - t.getPerm().begin();
      roles[0] = Role::Rows;
    } else if (auto s = dyn_cast<dfg::SoftmaxOp>(op)) {
      resultPos = firstPos;
      if (s.getNormalizedAxis() == resultPos)
        return;
      roles[0] = Role::Rows;
    } else if (isa<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>(op)) {
      // A statistic of each row (an unraised norm's mean square).
      ArrayRef<int64_t> axes = reducedAxes(op);
      if (llvm::is_contained(axes, static_cast<int64_t>(firstPos)))
        return;
      auto keep = op->getAttrOfType<BoolAttr>("keep_dims");
      resultPos = firstPos;
      if (!keep || !keep.getValue())
        resultPos -= llvm::count_if(
            axes, [&](int64_t a) { return a < static_cast<int64_t>(firstPos); });
      roles[0] = Role::Rows;
    } else {
      return;
    }
    if (!sameProduct(group, out[resultPos], context()))
      return;
    OpBuilder b(op);
    SmallVector<Value> operands;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto it = unmerged_.find(v);
      if (roles[i] == Role::Keep) {
        if (it != unmerged_.end())
          return; // an unmerged operand where the op broadcasts
        operands.push_back(v);
        continue;
      }
      const Dims &dims = dims_[v];
      if (roles[i] == Role::Ones) {
        if (it != unmerged_.end())
          return;
        Dims ones(group.size(), getAffineConstantExpr(1, context()));
        Value u = reshape(b, op->getLoc(), v, dims, liftDims(ones, at[i], dims));
        if (!u)
          return;
        operands.push_back(u);
        continue;
      }
      if (it != unmerged_.end()) {
        if (it->second.pos != static_cast<size_t>(at[i]) ||
            !sameDims(it->second.group(), group))
          return;
        operands.push_back(it->second.value);
        continue;
      }
      // Merged elsewhere: a view with the group.
      if (!sameProduct(group, dims[at[i]], context()))
        return;
      Value u =
          reshape(b, op->getLoc(), v, dims, liftDims(group, at[i], dims));
      if (!u)
        return;
      operands.push_back(u);
    }
    Dims liftedDims = liftDims(group, resultPos, out);
    if (static_cast<int64_t>(liftedDims.size()) > kMaxTensorRank)
      return;
    for (AffineExpr d : liftedDims)
      if (!d)
        return;
    std::optional<int64_t> softmaxAxis;
    if (auto s = dyn_cast<dfg::SoftmaxOp>(op))
      softmaxAxis = s.getNormalizedAxis();
    Operation *clone = b.clone(*op);
    clone->setOperands(operands);
    clone->removeAttr("dfg.dims");
    clone->getResult(0).setType(typeOf(
        liftedDims,
        cast<RankedTensorType>(op->getResult(0).getType()).getElementType()));
    if (auto t = dyn_cast<dfg::TransposeOp>(clone)) {
      SmallVector<int64_t> perm;
      for (int64_t p : t.getPerm()) {
        if (p != static_cast<int64_t>(firstPos)) {
          perm.push_back(liftAxis(p, firstPos, extra));
          continue;
        }
        for (int64_t g = 0; g <= extra; ++g)
          perm.push_back(p + g);
      }
      t.setPerm(perm);
    } else if (auto s = dyn_cast<dfg::SoftmaxOp>(clone)) {
      s.setAxis(liftAxis(*softmaxAxis, firstPos, extra));
    } else if (isa<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>(
                   clone)) {
      SmallVector<int64_t> axes;
      for (int64_t a : reducedAxes(op))
        axes.push_back(liftAxis(a, firstPos, extra));
      clone->setAttr("axes", b.getDenseI64ArrayAttr(axes));
    }
    record(op->getResult(0), {clone->getResult(0), liftedDims,
                              static_cast<size_t>(resultPos), group.size()});
    rebuilt_.push_back(op);
  }

  /// A merge of leading dimensions: the reshape's dimension 0 is the
  /// product of its input's first k >= 2 dimensions (the smallest such k,
  /// not all of them after the first ones) and its other dimensions hold
  /// the rest.
  std::optional<Dims> leadingMerge(ArrayRef<AffineExpr> x,
                                   ArrayRef<AffineExpr> y) {
    for (size_t k = 2; k <= x.size(); ++k) {
      ArrayRef<AffineExpr> lead = x.take_front(k);
      if (!sameProduct(lead, y[0], context()))
        continue;
      // Dimension 0 times ones is no merge ([2, 1, 24] viewed as
      // [2, 1, 6, 4]: a decoding step's single position).
      if (llvm::all_of(lead.drop_front(), isOne))
        continue;
      if (!sameProduct(x.drop_front(k), y.drop_front(), context()))
        return std::nullopt;
      return Dims(lead);
    }
    return std::nullopt;
  }

  /// A merge after dimensions the reshape keeps, not into the last: y =
  /// [x0 .. xp-1, m, ...] where m is the product of x's next dimensions and
  /// of a leading factor c > 1 of the one after them, of static size, whose
  /// other factor begins y's rest. torch's multi-head attention views its
  /// projections [S, B, H*D] as [S, B*H, D] so: the batch merged with the
  /// heads cut from the features, which a split of the heads leaves no
  /// block of. (A merge of whole dimensions there is not one: the KV heads
  /// and their repeats [B, KV, rep, S, D] viewed as [B, KV*rep, S, D] split
  /// by the KV heads as a block.) The position and the group.
  std::optional<std::pair<size_t, Dims>> innerMerge(ArrayRef<AffineExpr> x,
                                                    ArrayRef<AffineExpr> y) {
    auto constant = [&](ArrayRef<AffineExpr> dims) -> std::optional<int64_t> {
      AffineExpr p = product(dims, context());
      if (!p)
        return std::nullopt;
      auto c = dyn_cast<AffineConstantExpr>(
          simplifyAffineExpr(p, 0, table_.size()));
      if (!c)
        return std::nullopt;
      return c.getValue();
    };
    for (size_t p = 1; p + 1 < y.size() && p < x.size(); ++p) {
      if (!x[p - 1] || !y[p - 1] || !dfg::sameDim(x[p - 1], y[p - 1]))
        return std::nullopt;
      std::optional<int64_t> r = constant(y.drop_front(p + 1));
      for (size_t j = 1; p + j < x.size(); ++j) {
        std::optional<int64_t> n = constant(x[p + j]),
                               m = constant(x.drop_front(p + j + 1));
        if (!n || !m || !r || *r <= 0 || (*n * *m) % *r != 0)
          continue;
        int64_t c = *n * *m / *r;
        if (c <= 1 || c >= *n || *n % c != 0)
          continue;
        Dims group(x.slice(p, j));
        group.push_back(getAffineConstantExpr(c, context()));
        if (llvm::all_of(ArrayRef(group).drop_back(), isOne) ||
            !sameProduct(group, y[p], context()))
          continue;
        return std::make_pair(p, group);
      }
    }
    return std::nullopt;
  }

  /// A reshape that merges dimensions (leadingMerge, else innerMerge):
  /// a seed, the input viewed with the group apart.
  void visitMerge(Operation *op) {
    Value in = op->getOperand(0);
    if (!dims_.count(in))
      return;
    const Dims x = dims_[in], y = dims_[op->getResult(0)];
    if (y.empty() || x.size() < 2)
      return;
    std::optional<std::pair<size_t, Dims>> merge;
    if (std::optional<Dims> lead = leadingMerge(x, y))
      merge = std::make_pair(size_t(0), *lead);
    else
      merge = innerMerge(x, y);
    if (!merge)
      return;
    auto [pos, group] = *merge;
    OpBuilder b(op);
    Dims liftedDims = liftDims(group, pos, y);
    if (static_cast<int64_t>(liftedDims.size()) > kMaxTensorRank)
      return;
    Value u = reshape(b, op->getLoc(), in, x, liftedDims);
    if (!u)
      return;
    record(op->getResult(0), {u, liftedDims, pos, group.size()});
    seeds_.push_back(op);
  }

  /// A reshape of an unmerged value: one that keeps the merged dimension
  /// and the dimensions before it (those after it reshaped) stays unmerged;
  /// any other (one that splits the merged dimension back, or only into a
  /// part of it) reads the unmerged value.
  void visitReshapeOfUnmerged(Operation *op, Unmerged u) {
    const Dims out = dims_[op->getResult(0)];
    ArrayRef<AffineExpr> group = u.group();
    ArrayRef<AffineExpr> before = ArrayRef(u.dims).take_front(u.pos);
    ArrayRef<AffineExpr> after =
        ArrayRef(u.dims).drop_front(u.pos + u.groupSize);
    OpBuilder b(op);
    for (size_t q = 0; q < out.size(); ++q) {
      if (!sameDims(ArrayRef(out).take_front(q), before) ||
          !sameProduct(group, out[q], context()) ||
          !sameProduct(ArrayRef(out).drop_front(q + 1), after, context()))
        continue;
      Dims liftedDims = liftDims(group, q, out);
      if (static_cast<int64_t>(liftedDims.size()) > kMaxTensorRank)
        break; // read as any other reshape, below
      Value v = reshape(b, op->getLoc(), u.value, u.dims, liftedDims);
      if (!v)
        return;
      record(op->getResult(0), {v, liftedDims, q, group.size()});
      rebuilt_.push_back(op);
      return;
    }
    // Any other reshape (the group split back, or rows [B*S*H, D] back to
    // [B, S, H*D]) reads the unmerged value: a reshape keeps the elements'
    // order, so the merged view in between changes nothing.
    if (llvm::all_of(out, [](AffineExpr d) { return bool(d); })) {
      Value v = reshape(b, op->getLoc(), u.value, u.dims, out);
      if (!v)
        return;
      dims_[v] = out;
      op->getResult(0).replaceAllUsesWith(v);
      splitBacks_.push_back(op);
    }
  }

  /// `merged` is `u` with its group merged into dimension `u.pos`.
  void record(Value merged, Unmerged u) {
    dims_[u.value] = u.dims;
    unmerged_[merged] = std::move(u);
  }

  func::FuncOp func_;
  dfg::DimTable table_;
  dfg::SymbolicShapes shapes_;
  llvm::DenseMap<Value, Dims> dims_;
  llvm::DenseMap<Value, Unmerged> unmerged_;
  SmallVector<Operation *> rebuilt_; // originals replaced by unmerged ops
  SmallVector<Operation *> seeds_;   // merges, erased when nothing reads them
  SmallVector<Operation *> splitBacks_; // reshapes replaced by unmerged values
};

} // namespace

bool unmergeLeadingDims(func::FuncOp func) { return Unmerger(func).run(); }

namespace {

/// `rows` with its last axis reduced to 1 ([R, k] -> [R, 1]): a statistic
/// of each row, as an unraised norm computes its mean square.
RankedTensorType reducedRows(RankedTensorType rows) {
  SmallVector<int64_t> shape(rows.getShape());
  shape.back() = 1;
  return RankedTensorType::get(shape, rows.getElementType());
}

/// Whether `op`, of one result of type `rows` or `reducedRows(rows)`, treats
/// each row of the last axis alike: a norm or a softmax over that axis
/// alone (a norm without a fused residual), a reduction of that axis alone
/// keeping it as 1, or an elementwise op whose operands are of those types
/// or vary along the last axis at most (rank 1 or 0). So a norm the
/// exporter wrote out (pow, mean, add, sqrt, reciprocal, mul) is row-wise
/// as the raised one is.
bool rowWise(Operation *op, RankedTensorType rows) {
  RankedTensorType reduced = reducedRows(rows);
  if (op->getNumResults() != 1)
    return false;
  Type result = op->getResult(0).getType();
  if (result != rows && result != reduced)
    return false;
  int64_t rank = rows.getRank();
  auto isLast = [&](int64_t axis) { return axis == -1 || axis == rank - 1; };
  auto lastAxisNorm = [&](auto norm) {
    return !norm.getResidual() && isLast(norm.getAxis());
  };
  bool kind;
  if (auto norm = dyn_cast<dfg::RmsNormOp>(op))
    kind = result == rows && lastAxisNorm(norm) &&
           norm.getInput().getType() == rows;
  else if (auto norm = dyn_cast<dfg::LayerNormOp>(op))
    kind = result == rows && lastAxisNorm(norm) &&
           norm.getInput().getType() == rows;
  else if (auto softmax = dyn_cast<dfg::SoftmaxOp>(op))
    kind = result == rows && isLast(softmax.getAxis());
  else if (isa<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>(op)) {
    auto keep = op->getAttrOfType<BoolAttr>("keep_dims");
    kind = result == reduced && op->getOperand(0).getType() == rows &&
           reducedAxes(op) == ArrayRef<int64_t>{rank - 1} && keep &&
           keep.getValue();
  } else {
    kind = isa<dfg::ElementwiseOpInterface>(op);
  }
  return kind && llvm::all_of(op->getOperands(), [&](Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && (type == rows || type == reduced || type.getRank() <= 1);
  });
}

} // namespace

/// The common refinement of two factorisations of the same rows (unit
/// dimensions dropped): [B, S, 32] and [B, S, 16, 2] give [B, S, 16, 2].
/// Symbolic dimensions must be the same at the same place; null where the
/// two do not refine each other.
std::optional<Dims> refineDims(ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b,
                               MLIRContext *context) {
  auto constant = [](AffineExpr d) -> std::optional<int64_t> {
    if (auto c = dyn_cast<AffineConstantExpr>(d))
      return c.getValue();
    return std::nullopt;
  };
  Dims out;
  size_t i = 0, j = 0;
  AffineExpr x = i < a.size() ? a[i] : AffineExpr(),
             y = j < b.size() ? b[j] : AffineExpr();
  auto nextA = [&] { x = ++i < a.size() ? a[i] : AffineExpr(); };
  auto nextB = [&] { y = ++j < b.size() ? b[j] : AffineExpr(); };
  while (x || y) {
    if (x && isOne(x)) {
      nextA();
      continue;
    }
    if (y && isOne(y)) {
      nextB();
      continue;
    }
    if (!x || !y)
      return std::nullopt;
    std::optional<int64_t> cx = constant(x), cy = constant(y);
    if (cx && cy && *cx > 0 && *cy > 0) {
      int64_t common = std::min(*cx, *cy);
      if (std::max(*cx, *cy) % common != 0)
        return std::nullopt;
      out.push_back(getAffineConstantExpr(common, context));
      if (*cx == common)
        nextA();
      else
        x = getAffineConstantExpr(*cx / common, context);
      if (*cy == common)
        nextB();
      else
        y = getAffineConstantExpr(*cy / common, context);
      continue;
    }
    if (cx || cy || !dfg::sameDim(x, y))
      return std::nullopt;
    out.push_back(x);
    nextA();
    nextB();
  }
  return out;
}

// A region: the row-wise ops (rowWise) between the reshapes that merge
// tensors into rows of k (the leaves: [..., n] -> [R, k], n a multiple of
// k) and the reshapes that read the result (the exits). A reshape keeps
// the order of the elements, so each leaf is the reshape of its input
// viewed as U = [..., n/k, k] (its dimensions, the last cut in two), and
// the region computes the same rows on U as on [R, k]. Where the leaves
// have the same U (compared as symbolic expressions), the region is
// rebuilt on U and each exit reshapes U instead. Reshapes are dfg.reshape
// or dfg.symbolic_reshape; a statistic of each row ([R, 1], the mean square
// of an unraised norm) is rebuilt as [..., n/k, 1].
void unmergeRowGroups(func::FuncOp func) {
  dfg::DimTable table(func.getContext());
  dfg::SymbolicShapes shapes(table);
  SmallVector<Operation *> candidates;
  func.walk([&](Operation *op) {
    if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op))
      candidates.push_back(op);
  });
  llvm::SmallPtrSet<Operation *, 16> erased;
  MLIRContext *context = func.getContext();
  for (Operation *candidate : candidates) {
    if (erased.contains(candidate))
      continue;
    Operation *last = candidate->getOperand(0).getDefiningOp();
    auto rows = cast<RankedTensorType>(candidate->getOperand(0).getType());
    if (!last || rows.getRank() == 0 || !rowWise(last, rows))
      continue;
    int64_t k = rows.getShape().back();
    if (ShapedType::isDynamic(k))
      continue;
    // The region, up from `last`, and its leaves.
    llvm::SetVector<Operation *> region;
    llvm::SetVector<Operation *> leaves;
    SmallVector<Operation *> stack{last};
    bool closed = true;
    while (!stack.empty() && closed) {
      Operation *op = stack.pop_back_val();
      if (region.contains(op) || leaves.contains(op))
        continue;
      if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(op)) {
        int64_t n =
            cast<RankedTensorType>(op->getOperand(0).getType()).getShape().back();
        closed = op->getResult(0).getType() == rows &&
                 !ShapedType::isDynamic(n) && n % k == 0;
        leaves.insert(op);
        continue;
      }
      if (!rowWise(op, rows)) {
        closed = false;
        break;
      }
      region.insert(op);
      for (Value v : op->getOperands()) {
        if (v.getType() != rows && v.getType() != reducedRows(rows))
          continue;
        Operation *def = v.getDefiningOp();
        closed &= def != nullptr;
        if (def)
          stack.push_back(def);
      }
    }
    if (!closed || leaves.empty())
      continue;
    // Every use of the region is in it or an exit.
    llvm::SetVector<Operation *> exits;
    for (Operation *op : region)
      for (Operation *user : op->getUsers()) {
        if (region.contains(user))
          continue;
        if (isa<dfg::ReshapeOp, dfg::SymbolicReshapeOp>(user) &&
            op->getResult(0).getType() == rows)
          exits.insert(user);
        else
          closed = false;
      }
    if (!closed)
      continue;
    // The rows of every leaf, [..., n/k], refined into one list (Qwen3-Next's
    // [B, S, 32] query rows and [B, S, 16, 2] gate rows: [B, S, 16, 2]).
    std::optional<Dims> rowDims;
    for (Operation *leaf : leaves) {
      Value in = leaf->getOperand(0);
      Dims dims(shapes.dims(in));
      int64_t n = cast<RankedTensorType>(in.getType()).getShape().back();
      dims.pop_back();
      if (n != k)
        dims.push_back(getAffineConstantExpr(n / k, context));
      if (!llvm::all_of(dims, [](AffineExpr d) { return bool(d); }))
        rowDims.reset(), closed = false;
      else
        rowDims = rowDims ? refineDims(*rowDims, dims, context) : dims;
      closed &= rowDims.has_value();
      if (!closed)
        break;
    }
    Dims u;
    if (closed) {
      u = *rowDims;
      u.push_back(getAffineConstantExpr(k, context));
    }
    SmallVector<Dims> exitDims;
    for (Operation *exit : exits) {
      exitDims.push_back(Dims(shapes.dims(exit->getResult(0))));
      closed &=
          llvm::all_of(exitDims.back(), [](AffineExpr d) { return bool(d); });
    }
    if (!closed || u.size() <= static_cast<size_t>(rows.getRank()) ||
        static_cast<int64_t>(u.size()) > kMaxTensorRank)
      continue;
    // Rebuilt on U, in the block's order.
    SmallVector<Operation *> ordered(region.begin(), region.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    if (llvm::any_of(ordered, [&](Operation *op) {
          return op->getBlock() != last->getBlock();
        }))
      continue;
    IRMapping map;
    for (Operation *leaf : leaves) {
      OpBuilder b(leaf);
      Value in = leaf->getOperand(0);
      map.map(leaf->getResult(0), reshapeDims(b, leaf->getLoc(), table, in,
                                              Dims(shapes.dims(in)), u));
    }
    RankedTensorType unmerged = typeOfDims(table, u, rows.getElementType());
    RankedTensorType unmergedReduced = reducedRows(unmerged);
    for (Operation *op : ordered) {
      OpBuilder b(op);
      Operation *clone = b.clone(*op, map);
      bool isReduced = op->getResult(0).getType() != rows;
      clone->getResult(0).setType(isReduced ? unmergedReduced : unmerged);
      if (isa<dfg::RmsNormOp, dfg::LayerNormOp, dfg::SoftmaxOp>(clone))
        clone->setAttr("axis", b.getI64IntegerAttr(-1));
      if (isa<dfg::ReduceMeanOp, dfg::ReduceSumOp, dfg::ReduceMaxOp>(clone))
        clone->setAttr("axes", b.getDenseI64ArrayAttr(
                                   {static_cast<int64_t>(u.size()) - 1}));
    }
    for (auto [exit, dims] : llvm::zip_equal(exits, exitDims)) {
      OpBuilder b(exit);
      Value read = map.lookup(exit->getOperand(0));
      exit->getResult(0).replaceAllUsesWith(
          reshapeDims(b, exit->getLoc(), table, read, u, dims));
      erased.insert(exit);
      exit->erase();
    }
    for (Operation *op : llvm::reverse(ordered))
      op->erase();
    for (Operation *leaf : leaves)
      if (leaf->use_empty()) {
        erased.insert(leaf);
        leaf->erase();
      }
    shapes.clear();
  }
}

} // namespace meshc
