//===- Passes.td - meshc passes ----------------------------*- tablegen -*-===//
//
// Part of meshc. Every meshc pass, grouped by family under a banner. One pass
// per .cpp in the family's folder; flags are meshc-<area>-<verb>.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_PASSES_PASSES_TD
#define MESHC_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Graph passes (passes/graph/)
//===----------------------------------------------------------------------===//

def InferShapesPass : Pass<"meshc-graph-infer-shapes", "mlir::ModuleOp"> {
  let summary = "Refine dfg result types from the shapes of their operands";
  let description = [{
    Runs the shape inference of every dfg op in program order and replaces a
    result type by the inferred one wherever inference knows more (a static
    dimension where the IR says `?`). Declared dimensions are never
    discarded. Function result types follow the refined values.

    Before:

    ```mlir
    func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<?x?xf32> {
      %y = dfg.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<?x?xf32>
      return %y : tensor<?x?xf32>
    }
    ```

    After:

    ```mlir
    func.func @f(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
      %y = dfg.matmul %x, %w : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
    ```

    Users outside dfg keep seeing the old type through a `tensor.cast`, and a
    function that is called elsewhere in the module keeps its signature (its
    returned values are cast back), so the pass never invalidates other
    dialects' ops. An op whose operands contradict each other (shapes that
    do not broadcast, say) is reported and fails the pass.
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def FoldConstantsPass : Pass<"meshc-graph-fold-constants", "mlir::ModuleOp"> {
  let summary = "Evaluate dfg ops whose operands are constants";
  let description = [{
    Replaces every dfg op whose operands are literals (or integer weights,
    which hold shape data, under `weights-dir`) and whose results are small
    static tensors by `dfg.constant` literals computed with the reference
    evaluator. Float weights are never read, so weight data never enters the
    IR; integers beyond 2^53 (exporters' INT64_MAX "to the end") are left
    alone because the evaluator computes in doubles.

    Before:

    ```mlir
    %c = dfg.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
    %h = dfg.slice %c starts = [0] ends = [2] axes = [1] steps = [1]
           : (tensor<1x4xf32>) -> tensor<1x2xf32>
    ```

    After:

    ```mlir
    %h = dfg.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
    ```
  }];
  let options = [
    Option<"weightsDir", "weights-dir", "std::string", /*default=*/"\"\"",
           "Folder the weight references' files are relative to; without "
           "it only literals are folded">,
  ];
  let dependentDialects = ["meshc::dfg::DfgDialect"];
}

def RaisePass : Pass<"meshc-graph-raise", "mlir::ModuleOp"> {
  let summary = "Raise exporter idioms to transformer-level dfg ops";
  let description = [{
    Recognises the decomposed spellings that torch.onnx (TorchScript and
    dynamo) and Optimum write for the layers of a transformer and replaces
    each by one transformer-level op, so that sharding and code generation
    see the layers whole:

    - LayerNorm / RMSNorm statistics with their scale, bias and preceding
      residual add -> `dfg.layer_norm` / `dfg.rms_norm` (fused residual);
    - GELU (erf and tanh formulas) -> `dfg.gelu`; `x * sigmoid(x)` ->
      `dfg.silu`;
    - MatMul with a weight (plus bias, through GPT-2's flattening reshapes,
      or through a transposed weight) -> `dfg.linear`; row gathers of a
      weight -> `dfg.embedding`; reshapes of weights fold into the reference;
    - `x * cos + rotate_half(x) * sin` -> `dfg.rotary`;
    - `softmax(mask(scale * Q K^T)) V`, with KV-cache concats and GQA head
      repetition -> `dfg.attention` (causal when the mask is proven causal).

    Near misses never fire: a normalisation over a non-trailing axis, a
    softmax not over the keys, a cos table whose halves differ, a mask that is
    not causal (which stays an operand). Patterns that need data read
    literals, and weights under `weights-dir`.

    Before:

    ```mlir
    %s = dfg.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %y = dfg.mul %x, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    ```

    After:

    ```mlir
    %y = dfg.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let options = [
    Option<"weightsDir", "weights-dir", "std::string", /*default=*/"\"\"",
           "Folder the weight references' files are relative to (the "
           "model's folder); without it, patterns that must read a weight's "
           "values (a causal mask, a cos table) do not fire">,
  ];
  let dependentDialects = ["meshc::dfg::DfgDialect"];
}

#endif // MESHC_PASSES_PASSES_TD
