//===- Folding.cpp - Constant folding with the reference evaluator --------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/Folding.h"

#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/IR/DfgOps.h"

using namespace mlir;

namespace meshc::dfg {
namespace {

/// An integer literal's elements.
DenseElementsAttr integerLiteral(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto attr =
      constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  return attr && isa<IntegerType>(attr.getElementType()) ? attr : nullptr;
}

/// `op`'s result where `op` only moves or converts the elements of integer
/// literals (a view, a concat, a cast between integer types), computed on
/// the literals' integers themselves: exact for every value, where the
/// evaluator's doubles are not beyond 2^53. Older torch.onnx exporters
/// write a slice's "to the end" as Reshape(Cast(INT64_MAX), [-1]).
DenseElementsAttr foldIntegerMoves(Operation *op) {
  if (op->getNumResults() != 1)
    return nullptr;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() ||
      !isa<IntegerType>(type.getElementType()))
    return nullptr;
  if (isa<ReshapeOp, UnsqueezeOp, SqueezeOp>(op)) {
    DenseElementsAttr in = integerLiteral(op->getOperand(0));
    return in && in.getElementType() == type.getElementType() ? in.reshape(type)
                                                              : nullptr;
  }
  if (auto castOp = dyn_cast<CastOp>(op)) {
    DenseElementsAttr in = integerLiteral(castOp.getInput());
    if (!in)
      return nullptr;
    unsigned width = type.getElementTypeBitWidth();
    auto from = cast<IntegerType>(in.getElementType());
    bool zeroExtend = from.getWidth() == 1 || from.isUnsigned();
    SmallVector<APInt> out;
    for (const APInt &v : in.getValues<APInt>())
      out.push_back(width == 1   ? APInt(1, v.isZero() ? 0 : 1)
                    : zeroExtend ? v.zextOrTrunc(width)
                                 : v.sextOrTrunc(width));
    return DenseElementsAttr::get(type, out);
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    int64_t rank = type.getRank();
    int64_t axis = static_cast<int64_t>(concat.getAxis());
    axis = axis < 0 ? axis + rank : axis;
    // Row-major: each operand contributes a block of its trailing
    // dimensions (from the axis on) to each of the leading positions.
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= type.getDimSize(d);
    SmallVector<SmallVector<APInt>> parts;
    SmallVector<int64_t> blocks;
    for (Value operand : op->getOperands()) {
      DenseElementsAttr in = integerLiteral(operand);
      if (!in || in.getElementType() != type.getElementType())
        return nullptr;
      parts.emplace_back(in.getValues<APInt>());
      blocks.push_back(in.getNumElements() / std::max<int64_t>(outer, 1));
    }
    SmallVector<APInt> out;
    for (int64_t o = 0; o < outer; ++o)
      for (auto [part, block] : llvm::zip_equal(parts, blocks))
        out.append(part.begin() + o * block, part.begin() + (o + 1) * block);
    return DenseElementsAttr::get(type, out);
  }
  return nullptr;
}

} // namespace

FailureOr<SmallVector<Value>>
foldWithEvaluator(Operation *op, StringRef weightsDir, OpBuilder &builder) {
  constexpr int64_t kMaxFolded = ConstantOp::kMaxConstantElements;
  auto foldable = [&](Value v) {
    Operation *def = v.getDefiningOp();
    auto type = cast<RankedTensorType>(v.getType());
    if (isa_and_nonnull<ConstantOp>(def))
      return true;
    return isa_and_nonnull<WeightOp>(def) && !weightsDir.empty() &&
           !isa<FloatType>(type.getElementType()) &&
           type.getNumElements() <= kMaxFolded;
  };
  SmallVector<Value> constants;
  // The maximum or mean of one value broadcast over any sizes (symbolic
  // sizes are at least 1): that value. torch's repeat_interleave by a
  // constant takes max(ConstantOfShape(n, r)) for its range of repeats.
  if (isa<ReduceMaxOp, ReduceMeanOp>(op)) {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value in = op->getOperand(0);
    while (isa_and_nonnull<SymbolicExpandOp, ExpandOp>(in.getDefiningOp()))
      in = in.getDefiningOp()->getOperand(0);
    auto literal = in.getDefiningOp<ConstantOp>();
    auto splat =
        literal ? dyn_cast<SplatElementsAttr>(literal.getValue()) : nullptr;
    if (splat && type.hasStaticShape() && type.getNumElements() <= kMaxFolded) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(op);
      constants.push_back(ConstantOp::create(
          builder, op->getLoc(),
          DenseElementsAttr::get(type, splat.getSplatValue<Attribute>())));
      return constants;
    }
  }
  // Ops on symbolic dimensions (DfgSymbolicOps.td) depend on sizes known
  // only at run time.
  if (isa<ConstantOp, WeightOp, SizesOp, SymbolicReshapeOp, SymbolicExpandOp,
          SymbolicSliceOp, RangeOp>(op) ||
      op->getNumOperands() == 0 || !isa<DfgDialect>(op->getDialect()) ||
      !llvm::all_of(op->getOperands(), foldable) ||
      !llvm::all_of(op->getResultTypes(), [&](Type t) {
        auto type = dyn_cast<RankedTensorType>(t);
        return type && type.hasStaticShape() &&
               type.getNumElements() <= kMaxFolded;
      }))
    return constants;
  if (DenseElementsAttr moved = foldIntegerMoves(op)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(op);
    constants.push_back(ConstantOp::create(builder, op->getLoc(), moved));
    return constants;
  }
  SmallVector<EvalTensor> operands;
  for (Value v : op->getOperands()) {
    auto value = evaluateOp(v.getDefiningOp(), {}, weightsDir);
    if (failed(value))
      return failure();
    operands.push_back(std::move(value->front()));
  }
  // The evaluator computes in doubles: integers beyond 2^53 would come back
  // wrong, so such ops are left to run time.
  auto exact = [](const EvalTensor &t) { return t.isExact(); };
  if (!llvm::all_of(operands, exact))
    return constants;
  auto folded = evaluateOp(op, operands, weightsDir);
  if (failed(folded))
    return failure();
  if (!llvm::all_of(*folded, exact))
    return constants;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(op);
  for (const EvalTensor &tensor : *folded)
    constants.push_back(
        ConstantOp::create(builder, op->getLoc(), toDenseAttr(tensor)));
  return constants;
}

} // namespace meshc::dfg
