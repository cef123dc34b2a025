//===- DfgFusedOps.td - Ops that code generation forms -----*- tablegen -*-===//
//
// Part of meshc. Ops that only rank programs hold, made by the lowering
// passes just before code generation: they come after partitioning, so they
// have no sharding rule. dfg.fused_elementwise is one generated kernel;
// dfg.wait marks where an asynchronous collective's result is first needed.
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
    !listconcat([Pure, IsolatedFromAbove], Dfg_ShapeAndShardingRules)> {
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

def Dfg_WaitOp : Dfg_Op<"wait", !listconcat([SameOperandsAndResultType], Dfg_InputShapedRules)> {
  let summary = "Where the result of an asynchronous collective is needed";
  let description = [{
    Its result is its operand, the result of a collective: the collective is
    issued where it stands and runs alongside the ops between it and this
    wait, which is where its result is first read (or, for a send, where its
    operand may next be overwritten). Code generation issues the collective
    without blocking (an MPI request on the cpu target; NCCL on the
    communication stream of the cuda target) and completes it here, and the
    buffer plan keeps the collective's operand and result live from the one
    to the other. meshc-lower-schedule-collectives forms it in rank programs.

    Not pure: a wait whose result is unused (a send's) still completes the
    collective, so no pass may erase it.

    Invariants:
    1. The operand is the result of a `shard.all_reduce`, `all_gather`,
       `reduce_scatter`, `all_to_all`, `send` or `recv` in the same block.
    2. That result has no other use: every reader reads the wait's result.

    Example:

    ```mlir
    %r = shard.all_reduce %p on @mesh grid_axes = [1]
           : tensor<1x8x32xf32> -> tensor<1x8x32xf32>
    %k = dfg.concat %past, %new axis = 2 : ...   // runs during the all-reduce
    %w = dfg.wait %r : tensor<1x8x32xf32>
    %n = dfg.add %x, %w : ...
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{ $input attr-dict `:` type($input) }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether `op` is a collective that a dfg.wait may complete.
    static bool isWaitable(::mlir::Operation *op);
  }];
}

#endif // MESHC_DIALECTS_DFG_IR_DFGFUSEDOPS_TD
