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

def AnnotateDimsPass : Pass<"meshc-graph-annotate-dims", "mlir::ModuleOp"> {
  let summary = "Name every symbolic dimension of every value";
  let description = [{
    Derives, with the symbolic shape rules of each op (SymbolicDims.h), the
    expression of every dynamic dimension in terms of the named dimensions
    of the function's arguments (`dfg.dim_names`: ONNX dim_params), and
    attaches it to each op with a dynamic result as `dfg.dims`, one string
    per result. A dimension that no rule derives prints as `?`. The IR is
    otherwise unchanged: the pass shows what import and the graph pipeline
    know about a model's shapes.

    Before:

    ```mlir
    func.func @f(%x: tensor<?x?x32xf32> {dfg.dim_names = ["batch", "seq", ""]})
        -> tensor<?x32xf32> {
      %y = dfg.reshape %x to [-1, 32] : (tensor<?x?x32xf32>) -> tensor<?x32xf32>
      return %y : tensor<?x32xf32>
    }
    ```

    After:

    ```mlir
      %y = dfg.reshape %x to [-1, 32] {dfg.dims = ["batch * seq x 32"]}
             : (tensor<?x?x32xf32>) -> tensor<?x32xf32>
    ```
  }];
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

def ConvertDTypePass : Pass<"meshc-graph-convert-dtype", "mlir::ModuleOp"> {
  let summary = "Compute in another floating-point type (meshc compile --dtype)";
  let description = [{
    Makes every floating-point tensor of each function's body `dtype` (f32,
    f16 or bf16), so that the program computes and keeps its weights in that
    type, while the functions' signatures stay as the model declares them:

    - a float argument of another type is cast to `dtype` where the body
      starts, and a float result is cast back where the body returns, so
      callers feed and read the model's own types;
    - a float weight reference becomes a reference to `dtype` `stored` as
      its file's type (code generation converts while it slices);
    - a float literal is converted; so is a `dfg.cast` to a float type;
    - every other float result takes `dtype`; integer and bool tensors are
      left alone.

    Conversions round to nearest even, and finite values beyond `dtype`'s
    range saturate to its largest finite value, so the large negative
    constants exporters use for masking stay finite. Ops keep their
    attributes (epsilons, scales stay f32 numbers); the kernels accumulate
    in f32 whatever the storage type.

    Before (`dtype=f16`):

    ```mlir
    func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
      %w = dfg.weight "w" in "model.onnx.data" [offset = 0, length = 128]
             : tensor<8x4xf32>
      %y = dfg.linear %x, %w transpose_weight = false
             : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
      return %y : tensor<2x4xf32>
    }
    ```

    After:

    ```mlir
    func.func @main(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
      %h = dfg.cast %x to f16 : (tensor<2x8xf32>) -> tensor<2x8xf16>
      %w = dfg.weight "w" in "model.onnx.data" [offset = 0, length = 128]
             stored f32 : tensor<8x4xf16>
      %y = dfg.linear %h, %w transpose_weight = false
             : (tensor<2x8xf16>, tensor<8x4xf16>) -> tensor<2x4xf16>
      %r = dfg.cast %y to f32 : (tensor<2x4xf16>) -> tensor<2x4xf32>
      return %r : tensor<2x4xf32>
    }
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "std::string", /*default=*/"\"f32\"",
           "The floating-point type to compute in: f32, f16 or bf16">,
  ];
  let dependentDialects = ["meshc::dfg::DfgDialect"];
}

//===----------------------------------------------------------------------===//
// Sharding passes (passes/sharding/)
//===----------------------------------------------------------------------===//

def ShardPlanPass : Pass<"meshc-shard-plan", "mlir::ModuleOp"> {
  let summary = "Choose a sharding for every tensor of a transformer graph";
  let description = [{
    Creates the module's `shard.grid @mesh` from `mesh` (or the module's
    `meshc.mesh` attribute; axes dp, pp, tp, named in `meshc.axes`) and plans
    Megatron-style parallelism on the transformer-level graph:

    - dp splits the batch (dimension 0 of every argument);
    - tp splits the heads of every attention (the KV heads with them), the
      hidden features of every MLP (column-parallel up/gate projections,
      row-parallel down projection) and, when tp divides it, the lm_head's
      vocabulary. Q/K/V and output projections follow from the heads:
      column-parallel before the attention, row-parallel after it.
      A packed QKV projection (a linear split into parts) is first split
      into one linear per part, on slices of its weight.
    - with `sequence-parallel`, the residual stream (every norm's input,
      residual and results, and the elementwise ops between them) is split
      along the sequence over tp as well.

    The seeds propagate through every op's factor rule. The plan is written
    as `meshc.sharding` (a `#shard.axisarray` per result: the grid axes each
    dimension is split over) on ops, arguments and results;
    `meshc-shard-partition` turns it into the SPMD program.

    With `microbatches` N > 1 (which needs a pp axis) the batch of each dp
    block is split N ways as well, over a planning axis `mb` appended to
    the grid; `meshc-shard-pipeline-split` turns that axis into a loop over
    microbatches. The pp axis itself is not planned here: every pipeline
    stage holds whole (dp/tp-sharded) tensors, and `meshc-shard-pipeline-split`
    assigns the layers to stages after partitioning.

    Refused with a message naming the op and the numbers: heads or KV heads
    that tp does not divide, MLP features that tp does not divide, a batch
    that dp (times the microbatches) does not divide.

    Before (mesh = "tp=2"):

    ```mlir
    %h = dfg.linear %x, %w1 transpose_weight = false
           : (tensor<2x8xf32>, tensor<8x16xf32>) -> tensor<2x16xf32>
    %g = dfg.gelu %h exact = true : (tensor<2x16xf32>) -> tensor<2x16xf32>
    %y = dfg.linear %g, %w2 transpose_weight = false
           : (tensor<2x16xf32>, tensor<16x8xf32>) -> tensor<2x8xf32>
    ```

    After:

    ```mlir
    shard.grid @mesh(shape = 2) {meshc.axes = ["tp"]}
    %h = dfg.linear %x, %w1 transpose_weight = false
           {meshc.sharding = [#shard<axisarray[[], [0]]>]} : ...
    %g = dfg.gelu %h exact = true {meshc.sharding = [#shard<axisarray[[], [0]]>]} : ...
    %y = dfg.linear %g, %w2 transpose_weight = false : ...
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "Device mesh, e.g. dp=2,tp=2 (default: the module's meshc.mesh "
           "attribute or shard.grid)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "Split the residual stream (norms and the elementwise ops around "
           "them) along the sequence over tp: reduce_scatter / all_gather "
           "around the norms instead of all_reduce">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Split each dp block of the batch into this many microbatches "
           "that flow through the pipeline stages one after another (needs "
           "a pp axis)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def ShardPartitionPass : Pass<"meshc-shard-partition", "mlir::ModuleOp"> {
  let summary = "Turn a planned graph into its SPMD program with collectives";
  let description = [{
    Rewrites every function planned by `meshc-shard-plan` into the program
    each rank runs: tensors take their local (per-rank) types, weights are
    sliced per use (`shard.all_slice` of a `dfg.weight`: the rank's weight
    shard), operands a factor needs whole are gathered (`shard.all_gather`),
    and sharded contractions are completed by `shard.all_reduce` (a linear's
    bias is added after it, once). Arguments and results keep their
    `meshc.sharding`, which says how the global tensors split across ranks.

    Before (tp=2; the plan splits `in_features`):

    ```mlir
    %y = dfg.linear %g, %w2, %b2 transpose_weight = false
           : (tensor<2x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```

    After:

    ```mlir
    %ws = shard.all_slice %w2 on @mesh grid_axes = [0] slice_axis = 0
            : tensor<16x8xf32> -> tensor<8x8xf32>
    %p = dfg.linear %g, %ws transpose_weight = false
           : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %s = shard.all_reduce %p on @mesh grid_axes = [0]
           : tensor<2x8xf32> -> tensor<2x8xf32>
    %y = dfg.add %s, %b2 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "meshc::dfg::DfgDialect"];
}

def PipelineSplitPass : Pass<"meshc-shard-pipeline-split", "mlir::ModuleOp"> {
  let summary = "Split a partitioned program into pipeline stages joined by "
                "send/recv";
  let description = [{
    Runs after `meshc-shard-partition` when the grid has a pp axis. The
    layers are cut into pp stages: between consecutive attentions the cut
    carries the fewest bytes (the residual stream), and the cuts are chosen
    to balance the stages' time under meshc's cost model. Light ops that
    depend only on the inputs, weights and constants (masks, rotary tables,
    weight slices) are computed by every stage that needs them.

    Each stage becomes a private function `@<name>_stage<k>`
    (`meshc.stage = k`); the function itself becomes the schedule that
    calls them, each call run by the ranks whose pp coordinate is its
    `meshc.stage`. A value a later stage needs goes by `shard.send` (on the
    sender's stage) and `shard.recv` of that send (on the receiver's
    stage). Results carry `meshc.stage`: the stage whose ranks hold them.

    With microbatches (planned by `meshc-shard-plan`, on its planning axis
    `mb`), the stages take one microbatch each: the schedule slices the
    arguments, calls the stages once per microbatch and concatenates the
    results; `mb` then leaves the grid. A weight or constant with a batch
    dimension (BERT's token_type_ids) is sliced per microbatch in the
    schedule too, and handed to the stages that read it like an argument.

    Refused: pp larger than the number of layers (dfg.attention ops), and
    microbatches when some op needs the whole batch.

    After (pp=2, two layers):

    ```mlir
    func.func private @main_stage0(%ids: tensor<1x8xi64>) -> tensor<1x8x32xf32>
        attributes {meshc.stage = 0 : i64} { ... }
    func.func private @main_stage1(%h: tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
        attributes {meshc.stage = 1 : i64} { ... }
    func.func @main(%ids: tensor<1x8xi64>)
        -> (tensor<1x8x64xf32> {meshc.stage = 1 : i64}) {
      %0 = call @main_stage0(%ids) {meshc.stage = 0 : i64} : ...
      %1 = shard.send %0 on @mesh grid_axes = [0] destination = [1]
             {meshc.stage = 0 : i64} : ...
      %2 = shard.recv %1 on @mesh grid_axes = [0] source = [0]
             {meshc.stage = 1 : i64} : ...
      %3 = call @main_stage1(%2) {meshc.stage = 1 : i64} : ...
      return %3 : tensor<1x8x64xf32>
    }
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "meshc::dfg::DfgDialect",
                           "mlir::func::FuncDialect"];
}

def SpecializeRankPass : Pass<"meshc-shard-specialize-rank", "mlir::ModuleOp"> {
  let summary = "The program one rank runs, from a verified SPMD program";
  let description = [{
    Runs on the output of `meshc-shard-pipeline`. Keeps what rank `rank`
    runs and makes its slices concrete:

    - `shard.all_slice` becomes a `dfg.slice` of the rank's block (its
      index in the group over the slice's axes). A slice of a `dfg.weight`
      is thereby the rank's weight shard, as a reference: the weight's
      file, offset and shape, and the box of it the rank reads.
    - With pipeline stages, the stage functions of other stages go, and the
      schedule keeps the calls, sends and receives of the rank's stage and
      the ops whose operands it holds. A receive takes a fresh buffer
      (`tensor.empty`) instead of the sender's value, which lives on
      another rank.
    - The function returns the results the rank holds (its stage's); the
      others leave its signature.
    - A slice of a value made from weights by data movement alone (views,
      and the concats of zeros that pad heads) moves onto the weights: a
      rank reads its shard of a padded weight, with the zeros it needs,
      never the whole weight.

    Collectives stay as they are: the rank's coordinates (from its number
    and the grid) say which group each one runs over. The module records
    the rank as `meshc.rank`.

    Example (tp=2, rank 1):

    ```mlir
    %s = shard.all_slice %w on @mesh grid_axes = [0] slice_axis = 1
           : tensor<8x16xf32> -> tensor<8x8xf32>
    // becomes
    %s = dfg.slice %w starts = [8] ends = [16] axes = [1] steps = [1]
           : (tensor<8x16xf32>) -> tensor<8x8xf32>
    ```
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "0", "The rank (row-major over the grid)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect",
                           "meshc::dfg::DfgDialect",
                           "mlir::tensor::TensorDialect"];
}

def ShardVerifyPass : Pass<"meshc-shard-verify", "mlir::ModuleOp"> {
  let summary = "Check that a partitioned program is consistent on every rank";
  let description = [{
    Runs after `meshc-shard-partition`. Every rank runs the same SPMD
    program, so the ranks agree on shapes and on the order of collectives
    when the program is consistent: collectives at the top level of the
    function, on the module's grid, over distinct axes of size > 1, with
    shapes that match their groups; every dfg op's local result types as its
    operands infer them; no planning annotation left. Any violation is a
    compile error naming the op, never a program that hangs or computes the
    wrong thing.

    Example of a rejected program (tp=2):

    ```mlir
    %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 1
           : tensor<2x4xf32> -> tensor<2x4xf32>
    // error: 'shard.all_gather' op maps 'tensor<2x4xf32>' to
    // 'tensor<2x4xf32>', but its group of 2 ranks gives dimension 1 = 4 * 2 / 1
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Lowering passes (passes/lowering/)
//===----------------------------------------------------------------------===//

def FuseElementwisePass : Pass<"meshc-lower-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise ops into generated kernels";
  let description = [{
    Groups chains of float elementwise ops of a rank program (arithmetic,
    unary functions, GELU, casts between float types) that share a static
    result shape into `dfg.fused_elementwise` ops, each of which code
    generation emits as one kernel: inputs read once (broadcast as numpy
    does), intermediates in registers, only the values used outside the chain
    written. An op joins its producer's group when the shapes agree, the
    group stays within 8 inputs and 4 results, and no value of the group is
    used by an outside op placed before it; the fused op takes the place of
    the group's last op. Single ops stay as they are.

    Before:

    ```mlir
    %s = dfg.silu %g : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %m = dfg.mul %s, %u : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    ```

    After:

    ```mlir
    %m = dfg.fused_elementwise(%g, %u)
           : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
    ^bb0(%a: tensor<1x8x64xf32>, %b: tensor<1x8x64xf32>):
      %0 = dfg.silu %a : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
      %1 = dfg.mul %0, %b : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
      dfg.yield %1 : tensor<1x8x64xf32>
    }
    ```
  }];
  let dependentDialects = ["meshc::dfg::DfgDialect"];
}

def ScheduleCollectivesPass
    : Pass<"meshc-lower-schedule-collectives", "mlir::ModuleOp"> {
  let summary = "Issue collectives early and wait for them late, so that "
                "communication overlaps independent compute";
  let description = [{
    In each function of a rank program, moves every collective (all_reduce,
    all_gather, reduce_scatter, all_to_all, send, recv) up to just after its
    operands' producers (a receive with its buffer), never past another
    collective or a call of a function that holds collectives, so that
    every rank still starts the collectives in the SPMD program's order; and
    puts a `dfg.wait` right before the first op that reads its result (a
    send's before the terminator). Code generation issues the collective
    without blocking and completes it at the wait; the ops in between run
    meanwhile (on the cuda target the collective runs on the communication
    stream, the ops on the compute stream). The buffer plan keeps the
    collective's operand and result live across that window.

    In a microbatched pipeline, the sends of one microbatch overlap the
    next microbatch's compute; without tp (stages free of collectives) the
    last stage also receives the next microbatch while it computes this
    one. Within a tensor-parallel layer the next op reads the all-reduce's
    result, so there the wait follows at once.

    Before:

    ```mlir
    %1:2 = call @main_stage0(%0) : (tensor<1x8xi64>) -> (tensor<1x8x16xf32>, ...)
    %s = shard.send %1#0 on @mesh grid_axes = [0] destination = [1]
           : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %3:2 = call @main_stage0(%2) : (tensor<1x8xi64>) -> (tensor<1x8x16xf32>, ...)
    return
    ```

    After:

    ```mlir
    %1:2 = call @main_stage0(%0) : (tensor<1x8xi64>) -> (tensor<1x8x16xf32>, ...)
    %s = shard.send %1#0 on @mesh grid_axes = [0] destination = [1]
           : (tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %3:2 = call @main_stage0(%2) : (tensor<1x8xi64>) -> (tensor<1x8x16xf32>, ...)
    %w = dfg.wait %s : tensor<1x8x16xf32>
    return
    ```
  }];
  let dependentDialects = ["meshc::dfg::DfgDialect"];
}

#endif // MESHC_PASSES_PASSES_TD
