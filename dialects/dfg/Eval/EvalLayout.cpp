//===- EvalLayout.cpp - Reference evaluation of layout ops ----------------===//
//
// Part of meshc.
//
// Ops that move values without computing new ones: reshapes, transposes,
// concatenation, gathers, slices, splits, broadcasts, and the ops on
// symbolic dimensions, whose sizes come from the run's bindings.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/EvaluatorImpl.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include <algorithm>

using namespace mlir;

namespace meshc::dfg::detail {

/// The number of elements of a tensor of `shape`.
static int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

FailureOr<EvalTensor> Evaluator::slice(Operation *op, const EvalTensor &in,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> ends,
                                       ArrayRef<int64_t> axes,
                                       ArrayRef<int64_t> steps) {
  auto shape = sliceShape(in.shape, starts, ends, axes, steps);
  if (!shape)
    return op->emitOpError(llvm::toString(shape.takeError()));
  int64_t rank = in.shape.size();
  Shape first, step;
  sliceOrigin(in.shape, starts, axes, steps, first, step);
  SmallVector<int64_t> strides = stridesOf(in.shape);
  return gather(op, in, *shape, [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (int64_t i = 0; i < rank; ++i)
      offset += (first[i] + index[i] * step[i]) * strides[i];
    return offset;
  });
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalReshape(ReshapeOp op) {
  auto shape = reshapeShape(operand(op, 0).shape, op.getShape());
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  EvalTensor t = operand(op, 0);
  t.shape = *shape;
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalTranspose(TransposeOp op) {
  const EvalTensor &in = operand(op, 0);
  auto shape = transposeShape(in.shape, op.getPerm());
  SmallVector<int64_t> strides = stridesOf(in.shape);
  ArrayRef<int64_t> perm = op.getPerm();
  return one(gather(op, in, *shape, [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (size_t i = 0; i < perm.size(); ++i)
      offset += index[i] * strides[perm[i]];
    return offset;
  }));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalUnsqueeze(UnsqueezeOp op) {
  EvalTensor t = operand(op, 0);
  auto shape = unsqueezeShape(t.shape, op.getAxes());
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  t.shape = *shape;
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalSqueeze(SqueezeOp op) {
  EvalTensor t = operand(op, 0);
  auto shape = squeezeShape(t.shape, op.getAxes());
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  t.shape = *shape;
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalConcat(ConcatOp op) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : op.getInputs())
    shapes.push_back(get(v).shape);
  int64_t axis = static_cast<int64_t>(op.getAxis());
  auto shape = concatShape(shapes, axis);
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  if (axis < 0)
    axis += shape->size();
  EvalTensor result = like(resultElement(op), *shape);
  int64_t start = 0;
  SmallVector<int64_t> outStrides = stridesOf(*shape);
  for (Value v : op.getInputs()) {
    const EvalTensor &in = get(v);
    forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
      SmallVector<int64_t> at(index);
      at[axis] += start;
      result.values[dot(at, outStrides)] = in.values[linear];
    });
    start += in.shape[axis];
  }
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalGather(GatherOp op) {
  const EvalTensor &data = operand(op, 0), &indices = operand(op, 1);
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += data.shape.size();
  auto shape = gatherShape(data.shape, indices.shape, axis);
  SmallVector<int64_t> strides = stridesOf(data.shape);
  SmallVector<int64_t> indexStrides = stridesOf(indices.shape);
  int64_t q = indices.shape.size(), dim = data.shape[axis];
  if (dim == 0 && elementCount(*shape) > 0)
    return op.emitOpError("an index is out of range for dimension ")
           << axis << " of size 0";
  bool outOfRange = false;
  FailureOr<EvalTensor> result =
      gather(op, data, *shape, [&](ArrayRef<int64_t> index) {
        int64_t which = indices.values[dot(index.slice(axis, q), indexStrides)];
        if (which < 0)
          which += dim;
        if (which < 0 || which >= dim) {
          outOfRange = true;
          which = 0;
        }
        int64_t offset = which * strides[axis];
        for (int64_t i = 0; i < axis; ++i)
          offset += index[i] * strides[i];
        for (size_t i = axis + 1; i < data.shape.size(); ++i)
          offset += index[i - 1 + q] * strides[i];
        return offset;
      });
  if (outOfRange)
    return op.emitOpError("an index is out of range for dimension ")
           << axis << " of size " << dim;
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalGatherND(GatherNDOp op) {
  const EvalTensor &data = operand(op, 0), &indices = operand(op, 1);
  int64_t batch = op.getBatchDims();
  auto shape = gatherNDShape(data.shape, indices.shape, batch);
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  int64_t k = indices.shape.back(), q = indices.shape.size();
  SmallVector<int64_t> strides = stridesOf(data.shape);
  SmallVector<int64_t> indexStrides = stridesOf(indices.shape);
  for (int64_t j = 0; j < k; ++j)
    if (data.shape[batch + j] == 0 && elementCount(*shape) > 0)
      return op.emitOpError("an index is out of range for dimension ")
             << batch + j << " of size 0";
  std::optional<std::pair<int64_t, int64_t>> outOfRange; // (dimension, index)
  FailureOr<EvalTensor> result =
      gather(op, data, *shape, [&](ArrayRef<int64_t> index) {
        // index = indices[:-1] position, then data's trailing position.
        int64_t tuple = dot(index.take_front(q - 1),
                            ArrayRef<int64_t>(indexStrides).drop_back());
        int64_t offset = 0;
        for (int64_t i = 0; i < batch; ++i)
          offset += index[i] * strides[i];
        for (int64_t j = 0; j < k; ++j) {
          int64_t dim = data.shape[batch + j];
          int64_t which = indices.values[tuple + j];
          if (which < 0)
            which += dim;
          if (which < 0 || which >= dim) {
            if (!outOfRange)
              outOfRange = {batch + j, int64_t(indices.values[tuple + j])};
            which = 0;
          }
          offset += which * strides[batch + j];
        }
        for (size_t i = batch + k; i < data.shape.size(); ++i)
          offset += index[q - 1 + i - batch - k] * strides[i];
        return offset;
      });
  if (outOfRange)
    return op.emitOpError("index ")
           << outOfRange->second << " is out of range for dimension "
           << outOfRange->first << " of size " << data.shape[outOfRange->first];
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalSlice(SliceOp op) {
  return one(slice(op, operand(op, 0), op.getStarts(), op.getEnds(),
                   op.getAxes(), op.getSteps()));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalSizes(SizesOp op) {
  auto sizes = sizesOf(op, op.getMap(), op.getSymbols());
  if (failed(sizes))
    return failure();
  EvalTensor t = like(resultElement(op), op.getType().getShape());
  for (auto [i, v] : llvm::enumerate(*sizes))
    t.values[i] = static_cast<double>(v);
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>>
Evaluator::evalSymbolicReshape(SymbolicReshapeOp op) {
  auto sizes = sizesOf(op, op.getShape(), op.getSymbols());
  if (failed(sizes))
    return failure();
  EvalTensor t = operand(op, 0);
  int64_t n = 1;
  for (int64_t d : *sizes)
    n *= d;
  if (n != t.numElements())
    return op.emitOpError("cannot reshape ")
           << formatShape(t.shape) << " to " << formatShape(*sizes)
           << " (the symbolic dimensions' sizes disagree)";
  t.shape.assign(sizes->begin(), sizes->end());
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>>
Evaluator::evalSymbolicExpand(SymbolicExpandOp op) {
  auto sizes = sizesOf(op, op.getShape(), op.getSymbols());
  if (failed(sizes))
    return failure();
  const EvalTensor &in = operand(op, 0);
  auto shape = expandShape(in.shape, *sizes);
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  SmallVector<int64_t> strides = broadcastStrides(in.shape, *shape);
  return one(gather(op, in, *shape, [&](ArrayRef<int64_t> index) {
    return dot(index, strides);
  }));
}

FailureOr<SmallVector<EvalTensor>>
Evaluator::evalSymbolicSlice(SymbolicSliceOp op) {
  auto starts = sizesOf(op, op.getStarts(), op.getSymbols());
  auto ends = sizesOf(op, op.getEnds(), op.getSymbols());
  if (failed(starts) || failed(ends))
    return failure();
  return one(
      slice(op, operand(op, 0), *starts, *ends, op.getAxes(), op.getSteps()));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalRange(RangeOp op) {
  auto bounds = sizesOf(op, op.getBounds(), op.getSymbols());
  if (failed(bounds))
    return failure();
  int64_t start = (*bounds)[0], limit = (*bounds)[1], delta = op.getDelta();
  // ceil((limit - start) / delta), in 128 bits: the bounds may be anything.
  __int128 span = static_cast<__int128>(limit) - start;
  __int128 steps = (span + delta + (delta > 0 ? -1 : 1)) / delta;
  if (steps > Evaluator::kMaxElements)
    return op.emitOpError("would make ")
           << static_cast<double>(steps)
           << " values, too many for the reference evaluator (at most "
           << Evaluator::kMaxElements << ")";
  int64_t count = std::max<int64_t>(static_cast<int64_t>(steps), 0);
  EvalTensor t = like(resultElement(op), {count});
  for (int64_t i = 0; i < count; ++i)
    t.values[i] = static_cast<double>(start + i * delta);
  return one(std::move(t));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalSplit(SplitOp op) {
  const EvalTensor &in = operand(op, 0);
  int64_t axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += in.shape.size();
  SmallVector<EvalTensor> results;
  int64_t start = 0;
  SmallVector<int64_t> strides = stridesOf(in.shape);
  for (int64_t size : op.getSizes()) {
    Shape shape(in.shape);
    shape[axis] = size;
    FailureOr<EvalTensor> piece =
        gather(op, in, shape, [&](ArrayRef<int64_t> index) {
          SmallVector<int64_t> at(index);
          at[axis] += start;
          return dot(at, strides);
        });
    if (failed(piece))
      return failure();
    results.push_back(std::move(*piece));
    start += size;
  }
  return results;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalExpand(ExpandOp op) {
  const EvalTensor &in = operand(op, 0);
  auto shape = expandShape(in.shape, op.getShape());
  if (!shape)
    return op.emitOpError(llvm::toString(shape.takeError()));
  SmallVector<int64_t> strides = broadcastStrides(in.shape, *shape);
  return one(gather(op, in, *shape, [&](ArrayRef<int64_t> index) {
    return dot(index, strides);
  }));
}

} // namespace meshc::dfg::detail
