//===- DfgFusedOps.td - Ops that code generation forms -----*- tablegen -*-===//
//
// Part of meshc. Ops that only rank programs hold, made by the lowering
// passes just before code generation: they come after partitioning, so they
// have no sharding rule.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGFUSEDOPS_TD
#define MESHC_DIALECTS_DFG_IR_DFGFUSEDOPS_TD

def Dfg_YieldOp : Dfg_Op<"yield", [Pure, Terminator,
    HasParent<"FusedElementwiseOp">]> {
  let summary = "The results of a dfg.fused_elementwise body";
  let arguments = (ins Variadic<Dfg_FloatTensor>:$values);
  let assemblyFormat = [{ $values attr-dict `:` type($values) }];
}

def Dfg_FusedElementwiseOp : Dfg_Op<"fused_elementwise",
    [Pure, IsolatedFromAbove]> {
  let summary = "A chain of elementwise ops computed in one kernel";
  let description = [{
    Computes the ops of its body (float elementwise ops: the arithmetic and
    unary functions, `dfg.gelu`, casts between float types) for each element
    of the result shape in one pass: the inputs are read once, with numpy
    broadcasting, intermediates stay in registers (in f32 whatever their
    element type) and only the yielded values are written. meshc-fuse-
    elementwise forms it from chains in a rank program; code generation
    emits one generated kernel per op (a CUDA kernel on the cuda target, a
    loop on the cpu target).

    Invariants:
    1. The body is one block whose arguments have the inputs' types, ending
       in `dfg.yield` of values with the results' types.
    2. Every op of the body is a fusible elementwise op.
    3. Every result has the same static shape, to which every input
       broadcasts; the body's intermediates have that shape too.
    4. At most 8 inputs and 4 results.

    Example:

    ```mlir
    %y = dfg.fused_elementwise(%gate, %up)
           : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
    ^bb0(%g: tensor<1x8x64xf32>, %u: tensor<1x8x64xf32>):
      %s = dfg.silu %g : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
      %m = dfg.mul %s, %u
             : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
      dfg.yield %m : tensor<1x8x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Dfg_FloatTensor>:$inputs);
  let results = (outs Variadic<Dfg_FloatTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    static constexpr unsigned kMaxInputs = 8, kMaxResults = 4;
    /// Whether `op` may be part of a fused body.
    static bool isFusible(::mlir::Operation *op);
  }];
}

#endif // MESHC_DIALECTS_DFG_IR_DFGFUSEDOPS_TD
