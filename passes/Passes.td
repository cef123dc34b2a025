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

#endif // MESHC_PASSES_PASSES_TD
