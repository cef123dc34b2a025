//===- EmitLayout.cpp - C++ for layout ops --------------------------------===//
//
// Part of meshc. Ops that move elements without computing on them: views
// (reshape, squeeze, unsqueeze, symbolic_reshape), transpose, concat, gather,
// slices (static and symbolic), expand, split, and the integer tensors of
// range and sizes.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitterImpl.h"

#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/Sharding/Sharding.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace meshc::codegen {

LogicalResult FunctionEmitter::emitView(Operation *op, llvm::raw_ostream &os) {
  declare(op->getResult(0), os);
  return success();
}

LogicalResult FunctionEmitter::emitTranspose(dfg::TransposeOp t,
                                             llvm::raw_ostream &os) {
  std::string i = operand(t.getInput(), os), o = declare(t.getResult(), os);
  os << "  {\n    const std::int64_t perm[] = " << list(t.getPerm())
     << ";\n    k::transpose(" << i << ", perm, " << o << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitConcat(dfg::ConcatOp c,
                                          llvm::raw_ostream &os) {
  SmallVector<std::string> ins;
  for (Value v : c.getInputs())
    ins.push_back(operand(v, os));
  std::string o = declare(c.getResult(), os);
  os << "  {\n    const rt::TensorRef in[] = {" << llvm::join(ins, ", ")
     << "};\n    k::concat(in, " << ins.size() << ", "
     << normalizeAxis(c.getAxis(), rankOf(c.getResult())) << ", " << o
     << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitGather(dfg::GatherOp g,
                                          llvm::raw_ostream &os) {
  std::string d = operand(g.getData(), os), i = operand(g.getIndices(), os),
              o = declare(g.getResult(), os);
  os << "  k::gather(" << d << ", " << i << ", "
     << normalizeAxis(g.getAxis(), rankOf(g.getData())) << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitGatherND(dfg::GatherNDOp g,
                                            llvm::raw_ostream &os) {
  std::string d = operand(g.getData(), os), i = operand(g.getIndices(), os),
              o = declare(g.getResult(), os);
  os << "  k::gatherND(" << d << ", " << i << ", " << g.getBatchDims() << ", "
     << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitRuntimeSlice(Value input, Value result,
                                                ArrayRef<std::string> first,
                                                ArrayRef<int64_t> axes,
                                                ArrayRef<int64_t> axisSteps,
                                                llvm::raw_ostream &os) {
  int64_t rank = rankOf(input);
  std::string i = operand(input, os), o = declare(result, os);
  SmallVector<std::string> starts(rank, "0");
  SmallVector<int64_t> steps(rank, 1);
  for (auto [k, axis, step] : llvm::enumerate(axes, axisSteps)) {
    int64_t a = normalizeAxis(axis, rank);
    steps[a] = step;
    starts[a] = "rt::sliceStart(" + first[k] + ", " + i + ".shape[" +
                std::to_string(a) + "], " + std::to_string(step) + ")";
  }
  os << "  {\n    const std::int64_t starts[] = {" << llvm::join(starts, ", ")
     << "}, steps[] = " << list(steps) << ";\n    k::slice(" << i
     << ", starts, steps, " << o << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitSlice(dfg::SliceOp s,
                                         llvm::raw_ostream &os) {
  auto inType = cast<RankedTensorType>(s.getInput().getType());
  if (!inType.hasStaticShape()) {
    SmallVector<std::string> first;
    for (int64_t start : s.getStarts())
      first.push_back(std::to_string(start));
    return emitRuntimeSlice(s.getInput(), s.getResult(), first, s.getAxes(),
                            s.getSteps(), os);
  }
  dfg::Shape starts, steps;
  dfg::sliceOrigin(inType.getShape(), s.getStarts(), s.getAxes(), s.getSteps(),
                   starts, steps);
  std::string i = operand(s.getInput(), os), o = declare(s.getResult(), os);
  os << "  {\n    const std::int64_t starts[] = " << list(starts)
     << ", steps[] = " << list(steps) << ";\n    k::slice(" << i
     << ", starts, steps, " << o << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitSymbolicSlice(dfg::SymbolicSliceOp s,
                                                 llvm::raw_ostream &os) {
  if (auto pieces = s->getAttrOfType<IntegerAttr>(kSplitOverAttr)) {
    AffineExpr whole = shapes_.dims(
        s.getInput())[normalizeAxis(s.getAxes()[0], rankOf(s.getInput()))];
    os << "  rt::requireSplit(" << dimExpr(whole) << ", " << pieces.getInt()
       << ", " << cppString(table_.format(whole)) << ");\n";
  }
  return emitRuntimeSlice(s.getInput(), s.getResult(),
                          mapExprs(s.getStarts(), s.getSymbols()), s.getAxes(),
                          s.getSteps(), os);
}

LogicalResult FunctionEmitter::emitSymbolicExpand(dfg::SymbolicExpandOp e,
                                                  llvm::raw_ostream &os) {
  std::string i = operand(e.getInput(), os), o = declare(e.getResult(), os);
  os << "  k::expand(" << i << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitRange(dfg::RangeOp r,
                                         llvm::raw_ostream &os) {
  SmallVector<std::string> b = mapExprs(r.getBounds(), r.getSymbols());
  std::string o = declare(r.getResult(), os);
  os << "  k::iota(" << o << ", " << b[0] << ", " << r.getDelta() << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitSizes(dfg::SizesOp z,
                                         llvm::raw_ostream &os) {
  SmallVector<std::string> v = mapExprs(z.getMap(), z.getSymbols());
  std::string o = declare(z.getResult(), os);
  os << "  {\n    const std::int64_t values[] = {" << llvm::join(v, ", ")
     << "};\n    k::fillIntegers(" << o << ", values, " << v.size()
     << ");\n  }\n";
  return success();
}

LogicalResult FunctionEmitter::emitSplit(dfg::SplitOp s,
                                         llvm::raw_ostream &os) {
  std::string i = operand(s.getInput(), os);
  int64_t rank = rankOf(s.getInput());
  int64_t axis = normalizeAxis(s.getAxis(), rank);
  int64_t start = 0;
  for (unsigned r = 0; r < s.getNumResults(); ++r) {
    SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
    starts[axis] = start;
    start += s.getSizes()[r];
    std::string o = declare(s->getResult(r), os);
    os << "  {\n    const std::int64_t starts[] = " << list(starts)
       << ", steps[] = " << list(steps) << ";\n    k::slice(" << i
       << ", starts, steps, " << o << ");\n  }\n";
  }
  return success();
}

LogicalResult FunctionEmitter::emitExpand(dfg::ExpandOp e,
                                          llvm::raw_ostream &os) {
  std::string i = operand(e.getInput(), os), o = declare(e.getResult(), os);
  os << "  k::expand(" << i << ", " << o << ");\n";
  return success();
}

} // namespace meshc::codegen
