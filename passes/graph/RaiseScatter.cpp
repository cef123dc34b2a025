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
// The tuples are the concat along the last axis of one coordinate each,
// read as affine functions of their position by IndexForms (shared with
// the causal mask analysis and BatchGathers).
//
//===----------------------------------------------------------------------===//
#include "passes/graph/RaisePatterns.h"

#include "passes/graph/IndexForms.h"
#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/PatternMatch.h"

#include <optional>

using namespace mlir;

namespace meshc::graph {
namespace {

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
    if (rank == 0 || op.getBatchDims() != 0 ||
        indicesType.getShape().back() != rank ||
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
    IndexForms forms(shapes, reader);
    for (int64_t a = 0; a < rank; ++a) {
      Value piece = concat->getOperand(a);
      if (cast<RankedTensorType>(piece.getType()).getShape().back() != 1)
        return failure();
      std::optional<IndexForm> form = forms.of(piece);
      std::optional<int64_t> offset =
          form ? form->constantOffset() : std::nullopt;
      if (!offset)
        return failure();
      bool constant = true, positional = *offset == 0;
      for (int64_t b = 0; b < rank; ++b) {
        if (updates[b] == 1)
          continue;
        constant &= form->coef[b] == 0;
        positional &= form->coef[b] == (b == a ? 1 : 0);
      }
      if (data[a] == 1 && updates[a] == 1) {
        // Its one position, 0 (or -1).
        if (!constant || (*offset != 0 && *offset != -1))
          return failure();
        continue;
      }
      if (updates[a] == 1 && constant) {
        if (axis)
          return failure();
        axis = a;
        at = *offset;
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
