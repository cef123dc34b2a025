//===- EvalReductions.cpp - Reference evaluation of reductions ------------===//
//
// Part of meshc.
//
// Reductions along axes (mean, sum, max), softmax, and the ops that keep or
// overwrite parts of a tensor in place (trilu, scatter_nd), running sums
// (cumsum), and the K largest along an axis (top_k).
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/EvaluatorImpl.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace meshc::dfg::detail {

FailureOr<EvalTensor> Evaluator::reduce(Operation *op, const EvalTensor &in,
                                        ArrayRef<int64_t> axes, bool keepDims,
                                        StringRef kind) {
  Shape kept = reduceShape(in.shape, axes, /*keepDims=*/true);
  EvalTensor acc = like(in.elementType, kept);
  std::fill(acc.values.begin(), acc.values.end(),
            kind == "max" ? -INFINITY : 0.0);
  SmallVector<int64_t> accStrides = broadcastStrides(kept, in.shape);
  forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    double &slot = acc.values[dot(index, accStrides)];
    double v = in.values[linear];
    slot = kind == "max" ? std::max(slot, v) : slot + v;
  });
  if (kind == "mean") {
    int64_t count = 1;
    for (int64_t a : axes)
      count *= in.shape[a];
    for (double &v : acc.values)
      v /= count;
  }
  acc.shape = reduceShape(in.shape, axes, keepDims);
  roundAll(acc);
  return acc;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalReduceMean(ReduceMeanOp op) {
  return one(
      reduce(op, operand(op, 0), op.getAxes(), op.getKeepDims(), "mean"));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalReduceSum(ReduceSumOp op) {
  return one(reduce(op, operand(op, 0), op.getAxes(), op.getKeepDims(), "sum"));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalReduceMax(ReduceMaxOp op) {
  return one(reduce(op, operand(op, 0), op.getAxes(), op.getKeepDims(), "max"));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalSoftmax(SoftmaxOp op) {
  const EvalTensor &in = operand(op, 0);
  int64_t axis = op.getNormalizedAxis();
  auto maxed = reduce(op, in, {axis}, true, "max");
  if (failed(maxed))
    return failure();
  SmallVector<int64_t> strides = broadcastStrides(maxed->shape, in.shape);
  EvalTensor e = like(in.elementType, in.shape);
  forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    e.values[linear] =
        std::exp(in.values[linear] - maxed->values[dot(index, strides)]);
  });
  EvalTensor sums = like(in.elementType, maxed->shape);
  forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    sums.values[dot(index, strides)] += e.values[linear];
  });
  forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    e.values[linear] /= sums.values[dot(index, strides)];
  });
  roundAll(e);
  return one(std::move(e));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalCumSum(CumSumOp op) {
  const EvalTensor &in = operand(op, 0);
  EvalTensor result = like(in.elementType, in.shape);
  int64_t axis = op.getNormalizedAxis();
  int64_t n = in.shape[axis], inner = 1;
  for (size_t d = axis + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  int64_t outer = n * inner == 0 ? 0 : in.numElements() / (n * inner);
  bool exclusive = op.getExclusive(), reverse = op.getReverse();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t e = 0; e < inner; ++e) {
      double sum = 0;
      for (int64_t step = 0; step < n; ++step) {
        int64_t i = reverse ? n - 1 - step : step;
        int64_t at = (o * n + i) * inner + e;
        if (exclusive) {
          result.values[at] = sum;
          sum += in.values[at];
        } else {
          sum += in.values[at];
          result.values[at] = sum;
        }
      }
    }
  roundAll(result);
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalTopK(TopKOp op) {
  const EvalTensor &in = operand(op, 0);
  int64_t axis = op.getNormalizedAxis();
  int64_t n = in.shape[axis], inner = 1;
  for (size_t d = axis + 1; d < in.shape.size(); ++d)
    inner *= in.shape[d];
  int64_t outer = n * inner == 0 ? 0 : in.numElements() / (n * inner);
  int64_t k = op.getK() ? static_cast<int64_t>(*op.getK()) : n;
  if (k > n)
    return op.emitOpError("k = " + std::to_string(k) + " exceeds the " +
                          std::to_string(n) + " positions of axis " +
                          std::to_string(axis));
  Shape shape(in.shape);
  shape[axis] = k;
  EvalTensor values = like(in.elementType, shape),
             indices = like(op.getIndices().getType().getElementType(), shape);
  bool largest = op.getLargest();
  SmallVector<int64_t> order(n);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t e = 0; e < inner; ++e) {
      auto at = [&](int64_t i) { return in.values[(o * n + i) * inner + e]; };
      for (int64_t i = 0; i < n; ++i)
        order[i] = i;
      // By value (NaN above every number), then by position: ONNX's order.
      auto above = [](double a, double b) {
        if (std::isnan(a))
          return !std::isnan(b);
        return !std::isnan(b) && a > b;
      };
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? above(at(a), at(b)) : above(at(b), at(a));
      });
      for (int64_t j = 0; j < k; ++j) {
        int64_t out = (o * k + j) * inner + e;
        values.values[out] = at(order[j]);
        indices.values[out] = static_cast<double>(order[j]);
      }
    }
  SmallVector<EvalTensor> results;
  results.push_back(std::move(values));
  results.push_back(std::move(indices));
  return results;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalTrilu(TriluOp op) {
  EvalTensor result = operand(op, 0);
  int64_t rank = result.shape.size(), k = op.getDiagonal();
  bool upper = op.getUpper();
  forEachIndex(result.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    int64_t diff = index[rank - 1] - index[rank - 2];
    if (upper ? diff < k : diff > k)
      result.values[linear] = 0;
  });
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalScatterND(ScatterNDOp op) {
  EvalTensor result = operand(op, 0);
  const EvalTensor &indices = operand(op, 1), &updates = operand(op, 2);
  int64_t q = indices.shape.back(), batch = op.getBatchDims();
  int64_t slice = 1;
  for (size_t d = batch + q; d < result.shape.size(); ++d)
    slice *= result.shape[d];
  SmallVector<int64_t> strides = stridesOf(result.shape);
  int64_t tuples = indices.numElements() / std::max<int64_t>(q, 1);
  // The tuples of one batch, and the data elements of one batch.
  int64_t perBatch = 1, batchElements = 1;
  for (int64_t d = batch; d + 1 < int64_t(indices.shape.size()); ++d)
    perBatch *= indices.shape[d];
  for (size_t d = batch; d < result.shape.size(); ++d)
    batchElements *= result.shape[d];
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = perBatch ? t / perBatch * batchElements : 0;
    for (int64_t d = batch; d < batch + q; ++d) {
      int64_t i = indices.values[t * q + d - batch];
      if (i < 0)
        i += result.shape[d];
      if (i < 0 || i >= result.shape[d])
        return op.emitOpError("index ") << i << " is out of range for "
                                        << "dimension " << d;
      offset += i * strides[d];
    }
    for (int64_t e = 0; e < slice; ++e)
      result.values[offset + e] =
          op.getAccumulate()
              ? result.values[offset + e] + updates.values[t * slice + e]
              : updates.values[t * slice + e];
  }
  roundAll(result);
  return one(std::move(result));
}

} // namespace meshc::dfg::detail
