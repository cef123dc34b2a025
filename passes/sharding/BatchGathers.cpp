//===- BatchGathers.cpp - Index tuples that name their own row
//-------------===//
//
// Part of meshc.
//
// transformers' padding mask is `attention_mask[batch_idx, kv_idx]`, which
// the dynamo exporter writes as a GatherND of the [batch, keys] mask at
// index tuples (b, j) built from two Ranges expanded over [batch, 1, 1,
// keys] and concatenated. The first component of each tuple is the tuple's
// own position along the batch, so the gather reads only its own row: it is
// GatherND with batch_dims = 1 over the remaining component. Written with
// batch_dims = 0, no sharding rule can know that, so dp gathered the whole
// mask onto every replica, and a microbatch, which needs its rows alone,
// was refused.
//
// batchPositionalGathers rewrites gather_nd(data, indices, batch_dims = b)
// whose first tuple component is, at every index, that index's position
// along dimension b of indices, where dimension b of indices and of data
// have one size, into gather_nd(data, other components, batch_dims = b + 1),
// while a component is left. The component is known from the values:
//   - a tensor whose IndexForm (passes/graph/IndexForms.h) is its own
//     position along that dimension (a unit-step Range from 0 as a column
//     or row, through views, broadcasts that keep its dimension,
//     transposes and casts), taken from a concat along the tuple axis;
//   - or a literal whose values are checked one by one.
// Sizes are compared as symbolic expressions (SymbolicShapes). The result
// is the same tensor; only what the gather reads is stated.
//
// A scatter_nd whose tuples start with the same positions is rewritten the
// same way (batch_dims + 1): each tuple then writes within its own batch,
// which the sharding rule can split. ScatterElements is imported as a
// scatter_nd at full index tuples, so a select_scatter over [b, heads, c, c]
// (Qwen3.5's delta rule) becomes a scatter whose batch dimensions include
// the heads, and tensor parallelism splits it by heads without raising.
//
//===----------------------------------------------------------------------===//
#include "passes/sharding/Normalize.h"

#include "passes/graph/IndexForms.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

using namespace mlir;

namespace meshc {
namespace {

class BatchGathers {
public:
  explicit BatchGathers(func::FuncOp func)
      : table_(func.getContext()), shapes_(table_) {}

  /// One gather_nd or scatter_nd, to a fixed point of its batch dimensions
  /// (a scatter's tuple that writes at its own position along the batch
  /// dimension writes within its own batch). Returns whether it was
  /// rewritten.
  template <typename IndexOp> bool rewrite(IndexOp op) {
    bool changed = false;
    while (std::optional<Value> rest =
               rest_(op, op.getData(), op.getIndices(), op.getBatchDims())) {
      OpBuilder b(op);
      auto next = cast<IndexOp>(b.clone(*op));
      next.getIndicesMutable().assign(*rest);
      next.setBatchDimsAttr(b.getI64IntegerAttr(op.getBatchDims() + 1));
      op.getResult().replaceAllUsesWith(next.getResult());
      // Erased at the end: the analysis may hold this value's dimensions.
      dead_.push_back(op);
      op = next;
      changed = true;
    }
    return changed;
  }

  /// gather(reshape(x), b * R + f, axis 0), where the reshape merges x's
  /// first two dimensions [B, R] into its rows (and keeps the other
  /// elements of each row), b is the index's position along its first
  /// dimension (of size B) and 0 <= f < R: the gather reads row b of x only,
  /// as gather_nd(x viewed as [B, R, rows' other dims], f, batch_dims = 1).
  /// Returns whether it was rewritten.
  bool rewriteFlat(dfg::GatherOp gather) {
    auto reshape = gather.getData().getDefiningOp<dfg::ReshapeOp>();
    Value idx = gather.getIndices();
    auto idxType = cast<RankedTensorType>(idx.getType());
    if (!reshape || gather.getAxis() != 0 || idxType.getRank() < 1)
      return false;
    Value x = reshape.getInput();
    auto xType = cast<RankedTensorType>(x.getType());
    auto rowsType = cast<RankedTensorType>(reshape.getType());
    if (xType.getRank() < 2 || rowsType.getRank() < 1 ||
        !sameSize(x, 0, idx, 0))
      return false;
    // The rows are x's [B, R] merged: their count B * R, the rest static.
    ArrayRef<AffineExpr> xDims = shapes_.dims(x);
    AffineExpr rows = shapes_.dims(reshape.getResult())[0];
    if (!xDims[0] || !xDims[1] || !rows ||
        !dfg::sameDim(rows, xDims[0] * xDims[1]) ||
        !llvm::all_of(rowsType.getShape().drop_front(),
                      [](int64_t d) { return !ShapedType::isDynamic(d); }))
      return false;
    AffineExpr width = xDims[1];
    OpBuilder b(gather);
    Location loc = gather.getLoc();
    Value within; // f, in the index's shape
    if (auto literal = idx.getDefiningOp<dfg::ConstantOp>()) {
      auto values = dyn_cast<DenseIntElementsAttr>(literal.getValue());
      auto r = dyn_cast<AffineConstantExpr>(width);
      if (!values || !r || r.getValue() <= 0 || !idxType.hasStaticShape() ||
          idxType.getNumElements() > (int64_t(1) << 22))
        return false;
      int64_t inner = idxType.getNumElements() / idxType.getDimSize(0);
      SmallVector<APInt> rest;
      int64_t i = 0;
      for (const APInt &v : values.getValues<APInt>()) {
        int64_t value = v.getSExtValue(), row = i++ / inner;
        if (value < row * r.getValue() || value >= (row + 1) * r.getValue())
          return false;
        rest.push_back(APInt(v.getBitWidth(), value - row * r.getValue(),
                             /*isSigned=*/true));
      }
      within = dfg::ConstantOp::create(b, loc, idxType,
                                       DenseElementsAttr::get(idxType, rest));
    } else {
      auto add = idx.getDefiningOp<dfg::AddOp>();
      if (!add)
        return false;
      for (int t = 0; t < 2 && !within; ++t) {
        Value term = add->getOperand(t), f = add->getOperand(1 - t);
        if (isRowStart(term, width, idxType.getRank()) && below(f, width))
          within = dfg::SubOp::create(b, loc, idx, term);
      }
      if (!within)
        return false;
    }
    // x viewed as [B, R, rows' other dims].
    SmallVector<int64_t> spec{0, 0};
    llvm::append_range(spec, rowsType.getShape().drop_front());
    if (xType.getRank() != 2)
      spec[1] = -1;
    llvm::Expected<dfg::Shape> shape = dfg::reshapeShape(xType.getShape(), spec);
    if (!shape) {
      llvm::consumeError(shape.takeError());
      return false;
    }
    Value view = x;
    if (ArrayRef<int64_t>(*shape) != xType.getShape())
      view = dfg::ReshapeOp::create(
          b, loc, RankedTensorType::get(*shape, xType.getElementType()), x,
          b.getDenseI64ArrayAttr(spec));
    Value tuples = dfg::UnsqueezeOp::create(b, loc, within, ArrayRef<int64_t>{-1});
    auto next = dfg::GatherNDOp::create(b, loc, gather.getType(), view, tuples,
                                        b.getI64IntegerAttr(1));
    gather.getResult().replaceAllUsesWith(next.getResult());
    dead_.push_back(gather);
    return true;
  }

private:
  /// `term` is b * R with b the position along dimension 0 of a tensor of
  /// rank `rank` (as the index has it) and R `width` (a symbolic size or a
  /// literal).
  bool isRowStart(Value term, AffineExpr width, int64_t rank) {
    auto mul = term.getDefiningOp<dfg::MulOp>();
    if (!mul)
      return false;
    for (int t = 0; t < 2; ++t) {
      Value pos = mul->getOperand(t), r = mul->getOperand(1 - t);
      if (cast<RankedTensorType>(pos.getType()).getRank() == rank &&
          isPosition(pos, 0) && isScalarSize(r, width))
        return true;
    }
    return false;
  }

  /// `v` holds one value, `size`: a dfg.sizes of it or a literal.
  bool isScalarSize(Value v, AffineExpr size) {
    auto type = cast<RankedTensorType>(v.getType());
    if (!type.hasStaticShape() || type.getNumElements() != 1)
      return false;
    if (auto sizes = v.getDefiningOp<dfg::SizesOp>()) {
      SmallVector<AffineExpr> read =
          table_.read(sizes.getMap(), sizes.getSymbols());
      return read.size() == 1 && dfg::sameDim(read[0], size);
    }
    auto literal = v.getDefiningOp<dfg::ConstantOp>();
    auto values =
        literal ? dyn_cast<DenseIntElementsAttr>(literal.getValue()) : nullptr;
    auto c = dyn_cast<AffineConstantExpr>(size);
    return values && c &&
           (*values.getValues<APInt>().begin()).getSExtValue() == c.getValue();
  }

  /// Every value of `v` lies in [0, size): a position along a dimension of
  /// that size (broadcast as it may be).
  bool below(Value v, AffineExpr size) {
    auto type = cast<RankedTensorType>(v.getType());
    ArrayRef<AffineExpr> dims = shapes_.dims(v);
    for (int64_t a = 0; a < type.getRank(); ++a)
      if (dims[a] && dfg::sameDim(dims[a], size) && isPosition(v, a))
        return true;
    return false;
  }

  bool sameSize(Value a, int64_t da, Value b, int64_t db) {
    int64_t sa = cast<RankedTensorType>(a.getType()).getDimSize(da);
    int64_t sb = cast<RankedTensorType>(b.getType()).getDimSize(db);
    if (!ShapedType::isDynamic(sa) || !ShapedType::isDynamic(sb))
      return sa == sb;
    AffineExpr ea = shapes_.dims(a)[da], eb = shapes_.dims(b)[db];
    return ea && eb && dfg::sameDim(ea, eb);
  }

  /// The indices of `op` (a gather_nd or scatter_nd of `data`) without
  /// their first component, if that component is the position along
  /// dimension `batch` (batch_dims) and data's dimension there has the same
  /// size.
  std::optional<Value> rest_(Operation *op, Value data, Value indices,
                             int64_t batch) {
    auto dataType = cast<RankedTensorType>(data.getType());
    auto type = cast<RankedTensorType>(indices.getType());
    int64_t rank = type.getRank();
    int64_t k = type.getDimSize(rank - 1);
    // A component must remain, and batch + 1 must stay a batch dimension of
    // both operands.
    if (k < 2 || batch + 1 >= rank || batch + 1 >= dataType.getRank() ||
        !sameSize(data, batch, indices, batch))
      return std::nullopt;
    OpBuilder b(op);
    if (auto concat = indices.getDefiningOp<dfg::ConcatOp>()) {
      int64_t axis = concat.getAxis();
      axis = axis < 0 ? axis + rank : axis;
      auto inputs = concat.getInputs();
      if (axis != rank - 1 || inputs.size() < 2 ||
          cast<RankedTensorType>(inputs[0].getType()).getDimSize(axis) != 1 ||
          !isPosition(inputs[0], batch))
        return std::nullopt;
      if (inputs.size() == 2)
        return inputs[1];
      SmallVector<int64_t> shape(type.getShape());
      shape.back() = k - 1;
      return dfg::ConcatOp::create(
                 b, concat.getLoc(),
                 RankedTensorType::get(shape, type.getElementType()),
                 inputs.drop_front(), concat.getAxisAttr())
          .getResult();
    }
    // A literal: every tuple's first value is its position along `batch`.
    auto literal = indices.getDefiningOp<dfg::ConstantOp>();
    auto values =
        literal ? dyn_cast<DenseIntElementsAttr>(literal.getValue()) : nullptr;
    if (!values || !type.hasStaticShape() ||
        type.getNumElements() > (int64_t(1) << 22))
      return std::nullopt;
    SmallVector<APInt> all(values.getValues<APInt>());
    int64_t stride = k;
    for (int64_t d = rank - 2; d > batch; --d)
      stride *= type.getDimSize(d);
    SmallVector<APInt> kept;
    for (int64_t i = 0, n = all.size(); i < n; i += k) {
      if (all[i].getSExtValue() != (i / stride) % type.getDimSize(batch))
        return std::nullopt;
      kept.append(all.begin() + i + 1, all.begin() + i + k);
    }
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = k - 1;
    auto restType = RankedTensorType::get(shape, type.getElementType());
    return dfg::ConstantOp::create(b, literal.getLoc(), restType,
                                   DenseElementsAttr::get(restType, kept))
        .getResult();
  }

  /// True if v[i...] == i[axis] at every index (IndexForms).
  bool isPosition(Value v, int64_t axis) {
    graph::IndexForms forms(shapes_, reader_);
    return forms.isPosition(v, axis);
  }

  dfg::DimTable table_;
  dfg::SymbolicShapes shapes_;
  /// Literals only.
  graph::ConstantReader reader_{""};

public:
  /// The replaced gathers, and what computed only their indices.
  void eraseDead() {
    SmallVector<Operation *> work(dead_.begin(), dead_.end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!op->use_empty() || !isMemoryEffectFree(op))
        continue;
      SmallVector<Operation *> inputs;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          inputs.push_back(def);
      op->erase();
      for (Operation *def : inputs)
        if (!llvm::is_contained(work, def))
          work.push_back(def);
    }
    dead_.clear();
  }

private:
  SmallVector<Operation *> dead_;
};

} // namespace

bool batchPositionalGathers(func::FuncOp func) {
  SmallVector<dfg::GatherNDOp> gathers;
  SmallVector<dfg::GatherOp> flat;
  SmallVector<dfg::ScatterNDOp> scatters;
  func.walk([&](Operation *op) {
    if (auto g = dyn_cast<dfg::GatherNDOp>(op))
      gathers.push_back(g);
    else if (auto g = dyn_cast<dfg::GatherOp>(op))
      flat.push_back(g);
    else if (auto s = dyn_cast<dfg::ScatterNDOp>(op))
      scatters.push_back(s);
  });
  if (gathers.empty() && flat.empty() && scatters.empty())
    return false;
  BatchGathers rewriter(func);
  bool changed = false;
  for (dfg::GatherOp g : flat)
    changed |= rewriter.rewriteFlat(g);
  for (dfg::GatherNDOp g : gathers)
    changed |= rewriter.rewrite(g);
  for (dfg::ScatterNDOp s : scatters)
    changed |= rewriter.rewrite(s);
  rewriter.eraseDead();
  return changed;
}

} // namespace meshc
