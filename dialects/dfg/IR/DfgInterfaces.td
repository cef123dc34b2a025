//===- DfgInterfaces.td - What a dfg op says about itself --*- tablegen -*-===//
//
// Part of meshc. Interfaces through which the passes, the reference
// evaluator and code generation ask an op what it is, instead of keeping
// lists of op classes of their own. docs/adding-an-op.md says which of them a
// new op implements.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGINTERFACES_TD
#define MESHC_DIALECTS_DFG_IR_DFGINTERFACES_TD

include "mlir/IR/OpBase.td"

def Dfg_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::meshc::dfg";
  let description = [{
    An op whose result element at each index is a function of its operands'
    elements at that index, after ONNX (numpy) broadcasting of the operands
    to the result's shape. Knowing this much is enough for:

    - the symbolic shape rule (the broadcast of the operands' dimensions),
    - the sharding rule (every dimension of the result parallel; an operand
      reuses the factors of the dimensions it does not broadcast),
    - the reference evaluator (`evaluateElement`, then rounding to the
      result's element type),
    - code generation: `getKernelName` names the runtime's `UnaryOp` (one
      operand) or `BinaryOp` (two operands) enumerator that computes the op
      (runtime/include/meshc/runtime/elementwise_ops.def), and
      `getFusedExpression` its body in a generated fused kernel.

    Ops with a kernel of their own (`dfg.where`, `dfg.cast`) return an empty
    kernel name and are emitted by their own case.
  }];
  let methods = [
    InterfaceMethod<[{
        The value of one result element from the operands' elements (in
        double; the caller rounds it to the result's element type).
      }], "double", "evaluateElement",
      (ins "::llvm::ArrayRef<double>":$operands)>,
    InterfaceMethod<[{
        The enumerator of the runtime's `UnaryOp` / `BinaryOp` (by operand
        count) that computes this op; empty when the op has a kernel of its
        own.
      }], "::llvm::StringRef", "getKernelName", (ins)>,
    InterfaceMethod<[{
        A C++ expression of type float computing one element from the
        operands' expressions, for generated fused elementwise kernels (f32
        arithmetic; f16/bf16 values arrive widened); empty when the op cannot
        be fused.
      }], "std::string", "getFusedExpression",
      (ins "::llvm::ArrayRef<std::string>":$operands), "",
      [{ return std::string(); }]>,
  ];
}

def Dfg_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::meshc::dfg";
  let description = [{
    How the op may be sharded, as a factor rule (dialects/dfg/IR/
    ShardingRule.h): the op's iteration space as a list of factors, each
    dimension of each operand and result a product of factors, and each
    factor parallel, a reduction or pinned whole. The partition pass, the
    planner and the cost model read every op through this rule. Elementwise
    ops (ElementwiseOpInterface) do not implement it: their rule follows
    from broadcasting alone. Operands and results are ranked tensors when it
    is called.
  }];
  let methods = [
    InterfaceMethod<"The op's factor rule.",
      "::meshc::dfg::ShardingRule", "getShardingRule", (ins)>,
  ];
}

def Dfg_SymbolicShapeOpInterface : OpInterface<"SymbolicShapeOpInterface"> {
  let cppNamespace = "::meshc::dfg";
  let description = [{
    The symbolic shape rule: the dimensions of a result as expressions over
    the named dimensions of the function's arguments (SymbolicDims.h), from
    those of the operands. `shapes.dims(operand)` gives an operand's
    (already derived when the rule runs). A null expression is a dimension
    the rule cannot derive; static dimensions of the result type win over
    what the rule says. An op whose results have the dimensions of its
    first operand lists the interface as it is (the default); any other op
    declares the method. Elementwise ops (ElementwiseOpInterface) do not
    implement it: their rule is the broadcast of their operands.
  }];
  let methods = [
    InterfaceMethod<"The dimensions of result `resultNo`.",
      "::llvm::SmallVector<::mlir::AffineExpr>", "getSymbolicDims",
      (ins "unsigned":$resultNo, "::meshc::dfg::SymbolicShapes &":$shapes),
      "", [{
        return ::meshc::dfg::dimsOfFirstOperand($_op, shapes);
      }]>,
  ];
}

/// The two rules every non-elementwise dfg op declares.
defvar Dfg_ShapeAndShardingRules = [
  DeclareOpInterfaceMethods<Dfg_SymbolicShapeOpInterface, ["getSymbolicDims"]>,
  DeclareOpInterfaceMethods<Dfg_ShardingRuleOpInterface>];
/// The same for an op whose results have its first operand's dimensions.
defvar Dfg_InputShapedRules = [
  Dfg_SymbolicShapeOpInterface,
  DeclareOpInterfaceMethods<Dfg_ShardingRuleOpInterface>];

#endif // MESHC_DIALECTS_DFG_IR_DFGINTERFACES_TD
