//===- ConvertDType.cpp - Compute in f16 / bf16 (meshc compile --dtype) ---===//
//
// Part of meshc.
//
// Algorithm, for each function with a body:
//   1. Retype every float result inside the body to the target type:
//      weights become references `stored` as their file's type, literals
//      are converted (saturating, as the weight writer converts weights),
//      casts to a float type cast to the target instead.
//   2. Keep the boundaries as declared: a float argument of another type is
//      cast to the target where the body starts (before step 1, so that
//      every operand has its final type when its user is retyped); operands
//      of `return` and `func.call`, and the results of calls, are cast
//      between the target and the types the signatures declare.
//   3. Casts that convert nothing (the model's own casts between the target
//      and itself) fold away in the canonicalisation that follows.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

namespace meshc {
#define GEN_PASS_DEF_CONVERTDTYPEPASS
#include "passes/Passes.h.inc"
} // namespace meshc

using namespace mlir;

namespace meshc {
namespace {

bool isFloat(Type t) { return t.isF32() || t.isF16() || t.isBF16(); }

/// `t` with the target element type when it is a float tensor.
Type retype(Type t, FloatType target) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !isFloat(tensor.getElementType()))
    return t;
  return tensor.clone(target);
}

/// `value` converted to `target`, saturating finite values beyond its range
/// (the conversion rt::convertFloatsSaturating applies to weights).
APInt saturate(const APFloat &value, FloatType target) {
  const llvm::fltSemantics &sem = target.getFloatSemantics();
  APFloat v = value;
  bool losesInfo;
  v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
  double x = v.convertToDouble();
  double largest = APFloat::getLargest(sem).convertToDouble();
  if (std::isfinite(x) && std::abs(x) > largest)
    x = std::copysign(largest, x);
  APFloat result(x);
  result.convert(sem, APFloat::rmNearestTiesToEven, &losesInfo);
  return result.bitcastToAPInt();
}

struct ConvertDTypePass : impl::ConvertDTypePassBase<ConvertDTypePass> {
  using ConvertDTypePassBase::ConvertDTypePassBase;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    FloatType target;
    if (dtype == "f32")
      target = Float32Type::get(ctx);
    else if (dtype == "f16")
      target = Float16Type::get(ctx);
    else if (dtype == "bf16")
      target = BFloat16Type::get(ctx);
    else {
      getOperation().emitError("unknown dtype '")
          << dtype << "' (expected f32, f16 or bf16)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isDeclaration())
        convert(func, target);
  }

  /// `value` as `type`: itself, or a dfg.cast inserted at `b`.
  static Value castTo(OpBuilder &b, Value value, Type type) {
    if (value.getType() == type)
      return value;
    auto element = cast<RankedTensorType>(type).getElementType();
    return dfg::CastOp::create(b, value.getLoc(), type, value,
                               TypeAttr::get(element));
  }

  void convert(func::FuncOp func, FloatType target) {
    OpBuilder b(func.getContext());
    Block &entry = func.front();

    // The arguments keep their declared types: the body starts with casts.
    b.setInsertionPointToStart(&entry);
    for (BlockArgument arg : entry.getArguments()) {
      Type inner = retype(arg.getType(), target);
      if (inner == arg.getType())
        continue;
      Value converted = castTo(b, arg, inner);
      arg.replaceAllUsesExcept(converted, converted.getDefiningOp());
    }

    // Retype the body in program order, so that every operand has its final
    // type when its user is visited. Collect first: calls insert casts.
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        convertCall(b, call, target);
        continue;
      }
      if (auto weight = dyn_cast<dfg::WeightOp>(op)) {
        Type element = weight.getType().getElementType();
        // A quantized weight is dequantized to its result type, whatever it is.
        if (isFloat(element) && element != target && !weight.getQuantization()) {
          if (!weight.getStored())
            weight.setStoredAttr(TypeAttr::get(element));
          else if (*weight.getStored() == target)
            weight.removeStoredAttr();
        }
      } else if (auto constant = dyn_cast<dfg::ConstantOp>(op)) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (dense && isFloat(dense.getElementType()) &&
            dense.getElementType() != target)
          constant.setValueAttr(dense.mapValues(
              target, [&](const APFloat &v) { return saturate(v, target); }));
      } else if (auto castOp = dyn_cast<dfg::CastOp>(op)) {
        if (isFloat(castOp.getTo()))
          castOp.setToAttr(TypeAttr::get(target));
      }
      for (Value result : op->getResults())
        result.setType(retype(result.getType(), target));
    }

    // The results keep their declared types too.
    func.walk([&](func::ReturnOp ret) {
      b.setInsertionPoint(ret);
      for (auto [i, type] :
           llvm::enumerate(func.getFunctionType().getResults()))
        ret->setOperand(i, castTo(b, ret->getOperand(i), type));
    });
  }

  /// A call keeps its callee's signature: operands are cast to the types it
  /// declares, its results to the target for their users.
  static void convertCall(OpBuilder &b, func::CallOp call, FloatType target) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    b.setInsertionPoint(call);
    for (OpOperand &operand : call->getOpOperands())
      operand.set(castTo(
          b, operand.get(),
          callee.getFunctionType().getInput(operand.getOperandNumber())));
    b.setInsertionPointAfter(call);
    for (Value result : call->getResults()) {
      Type inner = retype(result.getType(), target);
      if (inner == result.getType())
        continue;
      Value converted = castTo(b, result, inner);
      result.replaceAllUsesExcept(converted, converted.getDefiningOp());
    }
  }
};

} // namespace
} // namespace meshc
