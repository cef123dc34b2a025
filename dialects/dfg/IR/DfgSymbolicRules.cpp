//===- DfgSymbolicRules.cpp - The symbolic shape rule of each dfg op -------===//
//
// Part of meshc. SymbolicShapeOpInterface of every op that is not
// elementwise and whose results are not simply shaped as its first operand
// (those take the interface's default, dimsOfFirstOperand).
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace meshc::dfg {

using Dims = SmallVector<AffineExpr>;

namespace {

Dims operandDims(Operation *op, unsigned i, SymbolicShapes &shapes) {
  return Dims(shapes.dims(op->getOperand(i)));
}

/// The dimensions of a result whose type is static by definition.
Dims staticDims(Value result) {
  Dims d;
  for (int64_t size : cast<RankedTensorType>(result.getType()).getShape())
    d.push_back(getAffineConstantExpr(size, result.getContext()));
  return d;
}

int64_t normalizeAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

} // namespace

Dims dimsOfFirstOperand(Operation *op, SymbolicShapes &shapes) {
  return operandDims(op, 0, shapes);
}

//===----------------------------------------------------------------------===//
// Sources
//===----------------------------------------------------------------------===//

// Their result types are static by definition.
Dims WeightOp::getSymbolicDims(unsigned, SymbolicShapes &) {
  return staticDims(getResult());
}
Dims ConstantOp::getSymbolicDims(unsigned, SymbolicShapes &) {
  return staticDims(getResult());
}
Dims SizesOp::getSymbolicDims(unsigned, SymbolicShapes &) {
  return staticDims(getResult());
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

Dims MatMulOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  AffineExpr one = getAffineConstantExpr(1, getContext());
  Dims l = operandDims(*this, 0, shapes), r = operandDims(*this, 1, shapes);
  bool lVec = l.size() == 1, rVec = r.size() == 1;
  if (lVec)
    l.insert(l.begin(), one);
  if (rVec)
    r.push_back(one);
  ArrayRef<AffineExpr> lb = ArrayRef(l).drop_back(2),
                       rb = ArrayRef(r).drop_back(2);
  Dims d = broadcastDims({lb, rb}, getContext());
  if (!lVec)
    d.push_back(l[l.size() - 2]);
  if (!rVec)
    d.push_back(r.back());
  return d;
}

Dims LinearOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  d.back() = AffineExpr(); // the type's static out-features
  return d;
}

Dims EmbeddingOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d(shapes.dims(getIds()));
  d.push_back(AffineExpr()); // the type's static hidden size
  return d;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

Dims ReshapeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes), d;
  int64_t inferred = -1;
  for (auto [i, s] : llvm::enumerate(getShape())) {
    if (s == 0) {
      d.push_back(i < input.size() ? input[i] : AffineExpr());
    } else if (s == -1) {
      inferred = i;
      d.push_back(AffineExpr());
    } else {
      d.push_back(getAffineConstantExpr(s, getContext()));
    }
  }
  if (inferred >= 0) {
    Dims others(d);
    others.erase(others.begin() + inferred);
    d[inferred] = divideDims(input, others);
  }
  return d;
}

Dims TransposeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes), d;
  for (int64_t p : getPerm())
    d.push_back(input[p]);
  return d;
}

Dims UnsqueezeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes);
  size_t rank = input.size() + getAxes().size();
  Dims d(rank);
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : getAxes())
    inserted[normalizeAxis(a, rank)] = true;
  size_t next = 0;
  for (size_t i = 0; i < rank; ++i)
    d[i] = inserted[i] ? getAffineConstantExpr(1, getContext())
                       : input[next++];
  return d;
}

Dims SqueezeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes), d;
  SmallVector<bool> dropped(input.size(), false);
  for (int64_t a : getAxes())
    dropped[normalizeAxis(a, input.size())] = true;
  for (size_t i = 0; i < input.size(); ++i)
    if (!dropped[i])
      d.push_back(input[i]);
  return d;
}

Dims ConcatOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  int64_t axis = normalizeAxis(getAxis(), d.size());
  for (unsigned i = 1; i < getNumOperands(); ++i) {
    Dims next = operandDims(*this, i, shapes);
    d[axis] = d[axis] && next[axis] ? d[axis] + next[axis] : AffineExpr();
  }
  return d;
}

Dims SplitOp::getSymbolicDims(unsigned resultNo, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  d[normalizeAxis(getAxis(), d.size())] =
      getAffineConstantExpr(getSizes()[resultNo], getContext());
  return d;
}

Dims GatherOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims data = operandDims(*this, 0, shapes),
       indices = operandDims(*this, 1, shapes), d;
  int64_t axis = normalizeAxis(getAxis(), data.size());
  d.append(data.begin(), data.begin() + axis);
  d.append(indices.begin(), indices.end());
  d.append(data.begin() + axis + 1, data.end());
  return d;
}

Dims GatherNDOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims data = operandDims(*this, 0, shapes),
       indices = operandDims(*this, 1, shapes);
  int64_t skip = getBatchDims() +
                 cast<RankedTensorType>(getIndices().getType()).getShape().back();
  Dims d(indices.begin(), indices.end() - 1);
  if (skip <= static_cast<int64_t>(data.size()))
    d.append(data.begin() + skip, data.end());
  return d;
}

Dims SliceOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  auto c = [&](int64_t v) { return getAffineConstantExpr(v, getContext()); };
  for (auto [start, end, axis, step] :
       llvm::zip_equal(getStarts(), getEnds(), getAxes(), getSteps())) {
    int64_t a = normalizeAxis(axis, d.size());
    d[a] = sliceLength(d[a], c(start), c(end), step);
  }
  return d;
}

Dims ExpandOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes), shape;
  for (int64_t v : getShape())
    shape.push_back(getAffineConstantExpr(v, getContext()));
  return broadcastDims({input, shape}, getContext());
}

Dims TopKOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  if (std::optional<uint64_t> k = getK())
    d[getNormalizedAxis()] =
        getAffineConstantExpr(static_cast<int64_t>(*k), getContext());
  return d;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
template <typename ReduceOp>
Dims reducedDims(ReduceOp op, SymbolicShapes &shapes) {
  Dims input = operandDims(op, 0, shapes), d;
  SmallVector<bool> reduced(input.size(), op.getAxes().empty());
  for (int64_t a : op.getAxes())
    reduced[normalizeAxis(a, input.size())] = true;
  for (size_t i = 0; i < input.size(); ++i) {
    if (!reduced[i])
      d.push_back(input[i]);
    else if (op.getKeepDims())
      d.push_back(getAffineConstantExpr(1, op.getContext()));
  }
  return d;
}
} // namespace

Dims ReduceSumOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  return reducedDims(*this, shapes);
}
Dims ReduceMeanOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  return reducedDims(*this, shapes);
}
Dims ReduceMaxOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  return reducedDims(*this, shapes);
}

//===----------------------------------------------------------------------===//
// Transformer ops
//===----------------------------------------------------------------------===//

Dims AttentionOp::getSymbolicDims(unsigned resultNo, SymbolicShapes &shapes) {
  if (resultNo == 0) {
    Dims d(shapes.dims(getQuery()));
    d[3] = shapes.dims(getValue())[3];
    return d;
  }
  // present: the past extended by the new keys or values.
  Dims past(shapes.dims(resultNo == 1 ? getPastKey() : getPastValue()));
  Dims fresh(shapes.dims(resultNo == 1 ? getKey() : getValue()));
  past[2] = past[2] && fresh[2] ? past[2] + fresh[2] : AffineExpr();
  return past;
}

//===----------------------------------------------------------------------===//
// Ops of symbolic shapes and rank programs
//===----------------------------------------------------------------------===//

Dims SymbolicReshapeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  return shapes.table().read(getShape(), getSymbols());
}

Dims SymbolicExpandOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims input = operandDims(*this, 0, shapes);
  Dims shape = shapes.table().read(getShape(), getSymbols());
  return broadcastDims({input, shape}, getContext());
}

Dims SymbolicSliceOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims d = operandDims(*this, 0, shapes);
  Dims starts = shapes.table().read(getStarts(), getSymbols());
  Dims ends = shapes.table().read(getEnds(), getSymbols());
  for (auto [i, axis] : llvm::enumerate(getAxes())) {
    int64_t a = normalizeAxis(axis, d.size());
    d[a] = sliceLength(d[a], starts[i], ends[i], getSteps()[i]);
  }
  return d;
}

Dims RangeOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  Dims bounds = shapes.table().read(getBounds(), getSymbols());
  int64_t delta = getDelta();
  // Counting down (XLNet's positions klen .. -qlen): the span the other way.
  AffineExpr span = delta > 0 ? bounds[1] - bounds[0] : bounds[0] - bounds[1];
  int64_t step = delta > 0 ? delta : -delta;
  return Dims{step == 1 ? span : ceilDivide(span, step)};
}

/// A fused chain broadcasts its operands as its body's ops do.
Dims FusedElementwiseOp::getSymbolicDims(unsigned, SymbolicShapes &shapes) {
  return shapes.broadcastOperands(*this);
}

} // namespace meshc::dfg
