//===- DfgSymbolicOps.td - dfg ops on symbolic dimensions --*- tablegen -*-===//
//
// Part of meshc. Ops whose shapes or values depend on symbolic dimensions:
// the named dynamic dimensions of the function's arguments (ONNX dim_params,
// such as batch_size or sequence_length, listed in each argument's
// `dfg.dim_names`). Each op states its symbolic quantities as an affine map
// without dimensions, `()[s0, s1, ...] -> (e0, e1, ...)`, whose symbol `sK`
// is the K-th name of the op's `symbols`. The exporters' shape arithmetic
// (Shape -> Gather -> Concat -> Reshape, Range, ConstantOfShape, Slice bounds)
// folds into these maps at import, so no shape-computing op remains.
//
// Shared invariants of every op here:
//   S1. The map has no dimensions and as many symbols as `symbols` names.
//   S2. `symbols` names are distinct and non-empty.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_DFGSYMBOLICOPS_TD
#define MESHC_DIALECTS_DFG_IR_DFGSYMBOLICOPS_TD

def Dfg_SizesOp : Dfg_Op<"sizes", !listconcat([Pure], Dfg_ShapeAndShardingRules)> {
  let summary = "Integers computed from symbolic dimensions (a shape vector)";
  let description = [{
    A 0-D or 1-D integer tensor whose elements are the results of `map`
    evaluated at the sizes of the named dimensions. It is what ONNX Shape,
    Size and their arithmetic leave when dimensions are symbolic; it remains
    in the IR only where a model computes with sizes as data.

    Invariants (besides S1 and S2):
    1. The result is a static 0-D or 1-D tensor of i64 or i32 with one
       element per map result.

    Example:

    ```mlir
    %s = dfg.sizes affine_map<()[s0, s1] -> (s0 * s1, 96)>
           symbols ["batch_size", "sequence_length"] : tensor<2xi64>
    ```
  }];
  let arguments = (ins AffineMapAttr:$map, StrArrayAttr:$symbols);
  let results = (outs Dfg_StaticTensor:$result);
  let assemblyFormat = "$map `symbols` $symbols attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Dfg_SymbolicReshapeOp : Dfg_Op<"symbolic_reshape",
    !listconcat([Pure, SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Reshape to a shape given by symbolic dimensions";
  let description = [{
    Reinterprets `input` (row-major) with the shape `map` gives: one result
    per dimension, each at least 1. Used where dfg.reshape's `0` (copy) and
    `-1` (infer one) cannot state the target, such as [batch * seq, d] ->
    [batch, seq, d].

    Invariants (besides S1 and S2):
    1. The result rank is the number of map results; a constant map result
       equals the result type's static dimension, and a static dimension of
       the result has a constant map result.
    2. When input and result are static, they hold the same number of
       elements.

    Example:

    ```mlir
    %y = dfg.symbolic_reshape %x to affine_map<()[s0, s1] -> (s0, s1, 96)>
           symbols ["batch_size", "sequence_length"]
           : (tensor<?x96xf32>) -> tensor<?x?x96xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, AffineMapAttr:$shape,
                       StrArrayAttr:$symbols);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $shape `symbols` $symbols attr-dict `:`
    functional-type($input, $result)
  }];
  let hasVerifier = 1;
}

def Dfg_SymbolicExpandOp : Dfg_Op<"symbolic_expand",
    !listconcat([Pure, SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "Broadcast to a shape given by symbolic dimensions";
  let description = [{
    ONNX Expand where the target shape depends on symbolic dimensions: the
    result is the numpy broadcast of the input's shape and `shape` (a 1 in
    `shape` keeps the input's dimension). ConstantOfShape becomes this op on
    a scalar constant.

    Invariants (besides S1 and S2):
    1. The result rank is the larger of the input rank and the number of map
       results; a static result dimension is consistent with the broadcast
       of the input's static dimension and a constant map result.

    Example:

    ```mlir
    %m = dfg.symbolic_expand %zero to affine_map<()[s0] -> (1, s0)>
           symbols ["sequence_length"] : (tensor<f32>) -> tensor<1x?xf32>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, AffineMapAttr:$shape,
                       StrArrayAttr:$symbols);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $shape `symbols` $symbols attr-dict `:`
    functional-type($input, $result)
  }];
  let hasVerifier = 1;
}

def Dfg_SymbolicSliceOp : Dfg_Op<"symbolic_slice",
    !listconcat([Pure, SameOperandsAndResultElementType], Dfg_ShapeAndShardingRules)> {
  let summary = "A strided slice whose bounds depend on symbolic dimensions";
  let description = [{
    ONNX Slice with `starts` and `ends` given by maps (one result per entry
    of `axes`), evaluated at run time and then clamped exactly as dfg.slice
    clamps constant bounds. The causal mask of a KV-cache step,
    `bias[:, :, past : past + seq]`, is one.

    Invariants (besides S1 and S2):
    1. `starts` and `ends` have one result per axis; `axes` and `steps` have
       the same length; each axis lies in [-rank, rank) once; no step is 0.
    2. The result has the input's rank, and its dimensions off the sliced
       axes are the input's.

    Example:

    ```mlir
    %rows = dfg.symbolic_slice %bias
              starts = affine_map<()[s0, s1] -> (s0)>
              ends = affine_map<()[s0, s1] -> (s0 + s1)>
              axes = [2] steps = [1]
              symbols ["past_sequence_length", "sequence_length"]
              : (tensor<1x1x16x16xi1>) -> tensor<1x1x?x16xi1>
    ```
  }];
  let arguments = (ins Dfg_Tensor:$input, AffineMapAttr:$starts,
                       AffineMapAttr:$ends, DenseI64ArrayAttr:$axes,
                       DenseI64ArrayAttr:$steps, StrArrayAttr:$symbols);
  let results = (outs Dfg_Tensor:$result);
  let assemblyFormat = [{
    $input `starts` `=` $starts `ends` `=` $ends `axes` `=` $axes
    `steps` `=` $steps `symbols` $symbols attr-dict `:`
    functional-type($input, $result)
  }];
  let hasVerifier = 1;
}

def Dfg_RangeOp : Dfg_Op<"range", !listconcat([Pure], Dfg_ShapeAndShardingRules)> {
  let summary = "start, start + delta, ... below limit (ONNX Range)";
  let description = [{
    A 1-D integer tensor of max(ceil((limit - start) / delta), 0) elements
    `start + i * delta`, where `bounds` gives (start, limit) from symbolic
    dimensions: the position ids `past .. past + seq` of a cached step.

    Invariants (besides S1 and S2):
    1. `bounds` has two results; `delta` is not 0.
    2. The result is a 1-D i64 or i32 tensor.

    Example:

    ```mlir
    %pos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1
             symbols ["past_sequence_length", "sequence_length"]
             : tensor<?xi64>
    ```
  }];
  let arguments = (ins AffineMapAttr:$bounds, I64Attr:$delta,
                       StrArrayAttr:$symbols);
  let results = (outs RankedTensorOf<[I64, I32]>:$result);
  let assemblyFormat = [{
    $bounds `delta` `=` $delta `symbols` $symbols attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // MESHC_DIALECTS_DFG_IR_DFGSYMBOLICOPS_TD
