//===- EmitElementwise.cpp - C++ for elementwise ops ----------------------===//
//
// Part of meshc. Elementwise ops with a kernel of their own (through
// dfg::ElementwiseOpInterface: k::unary, k::binary), where, cast, and fused
// elementwise chains (one k::fusedElementwise call each).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/RankEmitterImpl.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace meshc::codegen {

LogicalResult FunctionEmitter::emitUnary(Operation *op, StringRef kind,
                                         llvm::raw_ostream &os) {
  std::string i = operand(op->getOperand(0), os);
  std::string o = declare(op->getResult(0), os);
  os << "  k::unary(k::UnaryOp::" << kind << ", " << i << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitBinary(Operation *op, StringRef kind,
                                          llvm::raw_ostream &os) {
  std::string l = operand(op->getOperand(0), os),
              r = operand(op->getOperand(1), os);
  std::string o = declare(op->getResult(0), os);
  os << "  k::binary(k::BinaryOp::" << kind << ", " << l << ", " << r << ", "
     << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitWhere(dfg::WhereOp w,
                                         llvm::raw_ostream &os) {
  std::string c = operand(w.getCondition(), os), l = operand(w.getLhs(), os),
              r = operand(w.getRhs(), os), o = declare(w.getResult(), os);
  os << "  k::where(" << c << ", " << l << ", " << r << ", " << o << ");\n";
  return success();
}

LogicalResult FunctionEmitter::emitCast(dfg::CastOp c, llvm::raw_ostream &os) {
  std::string i = operand(c.getInput(), os), o = declare(c.getResult(), os);
  os << "  k::cast(" << i << ", " << o << ");\n";
  return success();
}

/// One k::fusedElementwise call whose lambda computes the body for one
/// element (runtime/include/meshc/runtime/fused.h): x[k] is input k, y[k]
/// result k, every intermediate a float. The call is a function of its own,
/// `<function>_fused<n>` (fusedKernels), which the body calls.
LogicalResult FunctionEmitter::emitFused(dfg::FusedElementwiseOp op,
                                         llvm::raw_ostream &os) {
  SmallVector<std::string> ins, outs;
  for (Value v : op.getInputs())
    ins.push_back(operand(v, os));
  for (Value r : op.getResults())
    outs.push_back(declare(r, os));
  Block &body = op.getBody().front();
  llvm::DenseMap<Value, std::string> name;
  for (BlockArgument arg : body.getArguments())
    name[arg] = "x[" + std::to_string(arg.getArgNumber()) + "]";
  std::string lambda;
  llvm::raw_string_ostream fn(lambda);
  int temp = 0;
  for (Operation &inner : body.without_terminator()) {
    SmallVector<std::string> operands;
    for (Value v : inner.getOperands())
      operands.push_back(name.lookup(v));
    auto elementwise = dyn_cast<dfg::ElementwiseOpInterface>(&inner);
    std::string expr =
        elementwise ? elementwise.getFusedExpression(operands) : std::string();
    if (expr.empty())
      return inner.emitOpError("has no fused form in ") << theTarget();
    std::string t = "t" + std::to_string(temp++);
    fn << "        const float " << t << " = " << expr << "; // "
       << inner.getName().stripDialect() << "\n";
    name[inner.getResult(0)] = t;
  }
  for (auto [k, v] : llvm::enumerate(body.getTerminator()->getOperands()))
    fn << "        y[" << k << "] = " << name.lookup(v) << ";\n";
  std::string kernel =
      (fn_.getSymName() == "main" ? std::string("run")
                                  : identifier(fn_.getSymName())) +
      "_fused" + std::to_string(fusedCount_++);
  llvm::raw_string_ostream defs(fusedKernels_);
  defs << "void " << kernel
       << "(const rt::TensorRef *ins, const rt::TensorRef *outs) {\n"
       << "  k::fusedElementwise(ins, " << ins.size() << ", outs, "
       << outs.size()
       << ",\n      [] MESHC_FUSED_FN(const float *x, float *y) {\n"
       << lambda << "      });\n}\n";
  os << "  {\n    const rt::TensorRef ins[] = {" << llvm::join(ins, ", ")
     << "};\n    const rt::TensorRef outs[] = {" << llvm::join(outs, ", ")
     << "};\n    " << kernel << "(ins, outs);\n  }\n";
  return success();
}

} // namespace meshc::codegen
