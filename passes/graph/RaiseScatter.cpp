//===- RaiseScatter.cpp - Scatters that write one slice, as concats -------===//
//
// Part of meshc. torch writes `x[..., i, :] = v` with a constant i
// (select_scatter, index_put; the chunked delta rule of Qwen3-Next and
// Qwen3.5 does it once per row of each chunk) as ScatterElements, which
// meshc imports as a dfg.scatter_nd over index tuples that name every
// coordinate. Where every coordinate of a tuple but one is its own position
// and that one is a constant c, the scatter writes the slice at c of one
// axis and nothing else:
//
//   scatter_nd(x, tuples, v)  ==>  concat(x[.., :c, ..], v, x[.., c+1:, ..])
//
// (with `accumulate`, the middle piece is x[.., c, ..] + v; where the
// updates cover every element, they are the result). So written it
// needs no index tuples, and its other axes may be split: a scatter_nd's
// sharding rule keeps every axis its tuples index whole.
//
// The tuples are read as affine functions of their position (IndexForm)
// through what exporters write for them: dfg.range and constant
// progressions, reshapes and unsqueezes that insert or drop unit
// dimensions, broadcasts (expand, symbolic_expand), add, sub, neg, a
// product by a constant, integer casts, and the concat of the coordinates
// along the last axis.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>

using namespace mlir;

namespace meshc::graph {
namespace {

/// An integer tensor whose element at position i is sum_a coef[a] * i[a] +
/// offset. The coefficient of a dimension of size 1 is 0.
struct IndexForm {
  SmallVector<int64_t> coef;
  int64_t offset = 0;
};

/// Bound on the ops followed back from a tuple's coordinate.
constexpr int kMaxDepth = 16;

/// The positions of the dimensions of `shape` other than 1.
SmallVector<int64_t> nonUnitAxes(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> axes;
  for (auto [a, size] : llvm::enumerate(shape))
    if (size != 1)
      axes.push_back(static_cast<int64_t>(a));
  return axes;
}

/// `form` of a tensor of shape `from` as that of a tensor of shape `to`
/// with the same dimensions other than 1 in the same order (static sizes
/// equal, or one dynamic size in each, which then agree), else null.
std::optional<IndexForm> keepNonUnit(const IndexForm &form,
                                     ArrayRef<int64_t> from,
                                     ArrayRef<int64_t> to) {
  SmallVector<int64_t> a = nonUnitAxes(from), b = nonUnitAxes(to);
  if (a.size() != b.size())
    return std::nullopt;
  int dynamic = 0;
  for (auto [x, y] : llvm::zip_equal(a, b)) {
    if (ShapedType::isDynamic(from[x]) != ShapedType::isDynamic(to[y]))
      return std::nullopt;
    if (ShapedType::isDynamic(from[x]))
      ++dynamic;
    else if (from[x] != to[y])
      return std::nullopt;
  }
  if (dynamic > 1)
    return std::nullopt;
  IndexForm out{SmallVector<int64_t>(to.size(), 0), form.offset};
  for (auto [x, y] : llvm::zip_equal(a, b))
    out.coef[y] = form.coef[x];
  return out;
}

/// `form` of an operand of shape `from` broadcast to `to` (trailing
/// alignment): a dimension it broadcasts reads position 0 of it.
std::optional<IndexForm> broadcastTo(const IndexForm &form,
                                     ArrayRef<int64_t> from,
                                     ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return std::nullopt;
  size_t lead = to.size() - from.size();
  IndexForm out{SmallVector<int64_t>(to.size(), 0), form.offset};
  for (auto [a, size] : llvm::enumerate(from))
    if (size != 1)
      out.coef[lead + a] = form.coef[a];
  return out;
}

/// An integer scalar literal, or a splat.
std::optional<int64_t> integerSplat(Value v, const ConstantReader &reader) {
  std::optional<double> s = reader.splat(v);
  if (!s || *s != std::floor(*s) || std::fabs(*s) > 9.0e15)
    return std::nullopt;
  return static_cast<int64_t>(*s);
}

std::optional<IndexForm> formOf(Value v, const ConstantReader &reader,
                                int depth) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  // Integers of 32 bits or more: a narrower cast (to bool) would not keep
  // the values the form states.
  if (!type || !type.getElementType().isSignlessInteger() ||
      type.getElementType().getIntOrFloatBitWidth() < 32 || depth > kMaxDepth)
    return std::nullopt;
  ArrayRef<int64_t> shape = type.getShape();
  IndexForm zero{SmallVector<int64_t>(shape.size(), 0), 0};
  if (std::optional<int64_t> c = integerSplat(v, reader)) {
    zero.offset = *c;
    return zero;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto operandForm = [&](Value operand) {
    return formOf(operand, reader, depth + 1);
  };
  auto shapeOf = [](Value x) {
    return cast<RankedTensorType>(x.getType()).getShape();
  };
  if (auto range = dyn_cast<dfg::RangeOp>(def)) {
    auto start = dyn_cast<AffineConstantExpr>(range.getBounds().getResult(0));
    if (!start || shape.size() != 1)
      return std::nullopt;
    int64_t delta = static_cast<int64_t>(range.getDelta());
    return IndexForm{{shape[0] == 1 ? 0 : delta}, start.getValue()};
  }
  if (auto constant = dyn_cast<dfg::ConstantOp>(def)) {
    // A progression start, start + d, ... along a 1-D literal.
    std::optional<dfg::EvalTensor> values = reader.read(v);
    if (!values || !values->isExact() || shape.size() != 1 ||
        values->values.size() < 2)
      return std::nullopt;
    auto at = [&](size_t i) { return static_cast<int64_t>(values->values[i]); };
    int64_t step = at(1) - at(0);
    for (size_t i = 0; i < values->values.size(); ++i)
      if (values->values[i] != static_cast<double>(at(0) + step * int64_t(i)))
        return std::nullopt;
    return IndexForm{{step}, at(0)};
  }
  if (isa<dfg::ReshapeOp, dfg::UnsqueezeOp, dfg::SqueezeOp>(def)) {
    std::optional<IndexForm> in = operandForm(def->getOperand(0));
    if (!in)
      return std::nullopt;
    return keepNonUnit(*in, shapeOf(def->getOperand(0)), shape);
  }
  if (isa<dfg::ExpandOp, dfg::SymbolicExpandOp, dfg::CastOp>(def)) {
    std::optional<IndexForm> in = operandForm(def->getOperand(0));
    if (!in)
      return std::nullopt;
    return broadcastTo(*in, shapeOf(def->getOperand(0)), shape);
  }
  if (isa<dfg::NegOp>(def)) {
    std::optional<IndexForm> in = operandForm(def->getOperand(0));
    if (!in)
      return std::nullopt;
    for (int64_t &c : in->coef)
      c = -c;
    in->offset = -in->offset;
    return in;
  }
  if (isa<dfg::AddOp, dfg::SubOp, dfg::MulOp>(def)) {
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    if (isa<dfg::MulOp>(def)) {
      // One factor a constant.
      std::optional<int64_t> k = integerSplat(rhs, reader);
      Value other = lhs;
      if (!k) {
        k = integerSplat(lhs, reader);
        other = rhs;
      }
      if (!k)
        return std::nullopt;
      std::optional<IndexForm> in = operandForm(other);
      if (!in)
        return std::nullopt;
      in = broadcastTo(*in, shapeOf(other), shape);
      if (!in)
        return std::nullopt;
      for (int64_t &c : in->coef)
        c *= *k;
      in->offset *= *k;
      return in;
    }
    std::optional<IndexForm> a = operandForm(lhs), b = operandForm(rhs);
    if (!a || !b)
      return std::nullopt;
    a = broadcastTo(*a, shapeOf(lhs), shape);
    b = broadcastTo(*b, shapeOf(rhs), shape);
    if (!a || !b)
      return std::nullopt;
    int64_t sign = isa<dfg::SubOp>(def) ? -1 : 1;
    for (auto [x, y] : llvm::zip_equal(a->coef, b->coef))
      x += sign * y;
    a->offset += sign * b->offset;
    return a;
  }
  return std::nullopt;
}

/// scatter_nd(x, tuples, v) writing the slice at a constant c of one axis
/// ==> concat(x[.., :c], v, x[.., c+1:]) along it (see the file comment).
struct ScatterOfOneSlice : OpRewritePattern<dfg::ScatterNDOp> {
  ScatterOfOneSlice(MLIRContext *context, const ConstantReader &reader,
                    dfg::SymbolicShapes &shapes)
      : OpRewritePattern(context), reader(reader), shapes(shapes) {}

  LogicalResult matchAndRewrite(dfg::ScatterNDOp op,
                                PatternRewriter &rewriter) const override {
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto updatesType = cast<RankedTensorType>(op.getUpdates().getType());
    ArrayRef<int64_t> data = dataType.getShape(),
                      updates = updatesType.getShape();
    int64_t rank = dataType.getRank();
    // Full tuples, one per element of the updates.
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    if (rank == 0 || indicesType.getShape().back() != rank ||
        static_cast<int64_t>(updates.size()) != rank)
      return failure();
    auto concat = op.getIndices().getDefiningOp<dfg::ConcatOp>();
    if (!concat || concat->getNumOperands() != static_cast<unsigned>(rank))
      return failure();
    int64_t concatAxis = static_cast<int64_t>(concat.getAxis());
    if (concatAxis != -1 && concatAxis != rank)
      return failure();
    // The axis written at a constant; every other coordinate its position.
    std::optional<int64_t> axis, at;
    for (int64_t a = 0; a < rank; ++a) {
      Value piece = concat->getOperand(a);
      if (cast<RankedTensorType>(piece.getType()).getShape().back() != 1)
        return failure();
      std::optional<IndexForm> form = formOf(piece, reader, 0);
      if (!form)
        return failure();
      bool constant = true, positional = form->offset == 0;
      for (int64_t b = 0; b < rank; ++b) {
        if (updates[b] == 1)
          continue;
        constant &= form->coef[b] == 0;
        positional &= form->coef[b] == (b == a ? 1 : 0);
      }
      if (data[a] == 1 && updates[a] == 1) {
        // Its one position, 0 (or -1).
        if (!constant || (form->offset != 0 && form->offset != -1))
          return failure();
        continue;
      }
      if (updates[a] == 1 && constant) {
        if (axis)
          return failure();
        axis = a;
        at = form->offset;
        continue;
      }
      // The updates cover the whole axis.
      Value dims[] = {op.getData(), op.getUpdates()};
      bool whole =
          data[a] == updates[a] &&
          (!ShapedType::isDynamic(data[a]) ||
           dfg::sameDim(shapes.dims(dims[0])[a], shapes.dims(dims[1])[a]));
      if (!positional || !whole)
        return failure();
    }
    if (!axis) {
      // Every element written: the updates (added to the data with
      // `accumulate`).
      Value whole = op.getUpdates();
      if (op.getAccumulate())
        whole = dfg::AddOp::create(rewriter, op.getLoc(), dataType,
                                   op.getData(), whole);
      rewriter.replaceOp(op, whole);
      return success();
    }
    if (ShapedType::isDynamic(data[*axis]))
      return failure();
    int64_t size = data[*axis], c = *at < 0 ? *at + size : *at;
    if (c < 0 || c >= size)
      return failure();
    Location loc = op.getLoc();
    auto slice = [&](int64_t start, int64_t end) {
      return dfg::SliceOp::create(rewriter, loc, op.getData(), {start}, {end},
                                  {*axis}, {1})
          .getResult();
    };
    SmallVector<Value> pieces;
    if (c > 0)
      pieces.push_back(slice(0, c));
    Value middle = op.getUpdates();
    if (op.getAccumulate())
      middle = dfg::AddOp::create(rewriter, loc, updatesType, slice(c, c + 1),
                                  middle);
    pieces.push_back(middle);
    if (c + 1 < size)
      pieces.push_back(slice(c + 1, size));
    rewriter.replaceOpWithNewOp<dfg::ConcatOp>(op, dataType, pieces, *axis);
    return success();
  }

  const ConstantReader &reader;
  dfg::SymbolicShapes &shapes;
};

} // namespace

void populateRaiseScatterPatterns(RewritePatternSet &patterns,
                                  const ConstantReader &reader,
                                  dfg::SymbolicShapes &shapes) {
  patterns.add<ScatterOfOneSlice>(patterns.getContext(), reader, shapes);
}

} // namespace meshc::graph
