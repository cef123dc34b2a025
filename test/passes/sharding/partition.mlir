// RUN: meshc-opt %s --split-input-file --meshc-shard-plan --meshc-shard-partition --meshc-shard-verify | FileCheck %s
// RUN: meshc-opt %s --split-input-file --meshc-shard-plan=sequence-parallel=true --meshc-shard-partition --meshc-shard-verify | FileCheck %s --check-prefix=SP
// RUN: meshc-opt %s --split-input-file --meshc-shard-plan --meshc-shard-partition | FileCheck %s --check-prefix=PIECE

// Megatron MLP on dp=2 x tp=2 (grid axes 0 = dp, 1 = tp): each rank holds its
// batch half and its half of the features; the weights are sliced per use
// (the rank's weight shards); the down projection's partial sums meet in one
// all_reduce over tp, and its bias is added once, after it. dp needs no
// communication.
module attributes {meshc.mesh = "dp=2,tp=2"} {
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%{{.+}}: tensor<2x4x8xf32> {meshc.sharding = #shard<axisarray{{\[\[}}0], [], []]>})
// CHECK-SAME: -> (tensor<2x4x8xf32> {meshc.sharding = #shard<axisarray{{\[\[}}0], [], []]>})
// CHECK-DAG: %[[W1:.+]] = shard.all_slice %{{.+}} on @mesh grid_axes = [1] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK-DAG: %[[B1:.+]] = shard.all_slice %{{.+}} on @mesh grid_axes = [1] slice_axis = 0 : tensor<16xf32> -> tensor<8xf32>
// CHECK-DAG: %[[W2:.+]] = shard.all_slice %{{.+}} on @mesh grid_axes = [1] slice_axis = 0 : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK: %[[H:.+]] = dfg.linear %{{.+}}, %[[W1]], %[[B1]] transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[G:.+]] = dfg.gelu %[[H]]
// CHECK: %[[P:.+]] = dfg.linear %[[G]], %[[W2]] transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[S:.+]] = shard.all_reduce %[[P]] on @mesh grid_axes = [1] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[Y:.+]] = dfg.add %[[S]], %{{.+}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[Z:.+]], %{{.+}} = dfg.rms_norm %{{.+}} residual(%[[Y]])
// CHECK: return %[[Z]]
// CHECK-NOT: shard.all_gather

// With sequence parallelism the norm runs on a quarter of the tokens per
// rank (dp splits the batch, tp the sequence); the up projection starts with
// an all_gather of the sequence and the down projection ends in a
// reduce_scatter back to it.
// SP-LABEL: func.func @mlp
// SP: dfg.rms_norm {{.*}} -> tensor<2x2x8xf32>
// SP: shard.all_gather %{{.+}} on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// SP: dfg.linear
// SP: dfg.linear
// SP: shard.reduce_scatter %{{.+}} on @mesh grid_axes = [1] scatter_axis = 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP: dfg.add {{.*}} -> tensor<2x2x8xf32>
// SP: dfg.rms_norm {{.*}} -> (tensor<2x2x8xf32>, tensor<2x2x8xf32>)
// SP-NOT: shard.all_reduce
func.func @mlp(%x: tensor<4x4x8xf32>) -> tensor<4x4x8xf32> {
  %g0 = dfg.weight "ln.w" in "w.bin" [offset = 0, length = 32] : tensor<8xf32>
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %b1 = dfg.weight "b1" in "w.bin" [offset = 512, length = 64] : tensor<16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 576, length = 512] : tensor<16x8xf32>
  %b2 = dfg.weight "b2" in "w.bin" [offset = 1088, length = 32] : tensor<8xf32>
  %n = dfg.rms_norm %x, %g0 axis = -1 epsilon = 1.0e-05 : (tensor<4x4x8xf32>, tensor<8xf32>) -> tensor<4x4x8xf32>
  %h = dfg.linear %n, %w1, %b1 transpose_weight = false : (tensor<4x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x4x16xf32>
  %g = dfg.gelu %h exact = false : (tensor<4x4x16xf32>) -> tensor<4x4x16xf32>
  %y = dfg.linear %g, %w2, %b2 transpose_weight = false : (tensor<4x4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x4x8xf32>
  %z, %sum = dfg.rms_norm %x, %g0 residual(%y) axis = -1 epsilon = 1.0e-05 : (tensor<4x4x8xf32>, tensor<8xf32>, tensor<4x4x8xf32>) -> (tensor<4x4x8xf32>, tensor<4x4x8xf32>)
  return %z : tensor<4x4x8xf32>
}
}

// -----

// Attention block on tp=2: column-parallel Q/K/V, heads split, row-parallel
// output projection: one all_reduce. The reshape's target shape is made
// local (4 heads -> 2 per rank).
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @attention
// SP-LABEL: func.func @attention
// CHECK-COUNT-3: dfg.linear {{.*}} -> tensor<1x8x16xf32>
// CHECK-COUNT-3: dfg.reshape %{{.+}} to [1, 8, 2, 8] : (tensor<1x8x16xf32>) -> tensor<1x8x2x8xf32>
// CHECK: dfg.attention {{.*}} -> tensor<1x2x8x8xf32>
// CHECK: dfg.reshape %{{.+}} to [1, 8, 16]
// CHECK: dfg.linear {{.*}} : (tensor<1x8x16xf32>, tensor<16x32xf32>) -> tensor<1x8x32xf32>
// CHECK: shard.all_reduce
// CHECK-NOT: shard.all_reduce
// CHECK: return
func.func @attention(%x: tensor<1x8x32xf32>) -> tensor<1x8x32xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 4096] : tensor<32x32xf32>
  %wk = dfg.weight "wk" in "w.bin" [offset = 4096, length = 4096] : tensor<32x32xf32>
  %wv = dfg.weight "wv" in "w.bin" [offset = 8192, length = 4096] : tensor<32x32xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 12288, length = 4096] : tensor<32x32xf32>
  %q = dfg.linear %x, %wq transpose_weight = false : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %k = dfg.linear %x, %wk transpose_weight = false : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %v = dfg.linear %x, %wv transpose_weight = false : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  %qr = dfg.reshape %q to [1, 8, 4, 8] : (tensor<1x8x32xf32>) -> tensor<1x8x4x8xf32>
  %kr = dfg.reshape %k to [1, 8, 4, 8] : (tensor<1x8x32xf32>) -> tensor<1x8x4x8xf32>
  %vr = dfg.reshape %v to [1, 8, 4, 8] : (tensor<1x8x32xf32>) -> tensor<1x8x4x8xf32>
  %qt = dfg.transpose %qr perm = [0, 2, 1, 3] : (tensor<1x8x4x8xf32>) -> tensor<1x4x8x8xf32>
  %kt = dfg.transpose %kr perm = [0, 2, 1, 3] : (tensor<1x8x4x8xf32>) -> tensor<1x4x8x8xf32>
  %vt = dfg.transpose %vr perm = [0, 2, 1, 3] : (tensor<1x8x4x8xf32>) -> tensor<1x4x8x8xf32>
  %o = dfg.attention %qt, %kt, %vt scale = 0.353553385 causal = true : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %ot = dfg.transpose %o perm = [0, 2, 1, 3] : (tensor<1x4x8x8xf32>) -> tensor<1x8x4x8xf32>
  %om = dfg.reshape %ot to [1, 8, 32] : (tensor<1x8x4x8xf32>) -> tensor<1x8x32xf32>
  %y = dfg.linear %om, %wo transpose_weight = false : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x8x32xf32>
  return %y : tensor<1x8x32xf32>
}
}

// -----

// Vocabulary-parallel embeddings on tp=2: each rank holds half the rows of
// each table, at the offset it slices from [0, rows/2]; its ids are moved
// into its block (negative ids first wrapped, as ONNX Gather counts them),
// ids outside the block look up row 0 and are zeroed after. The two lookups'
// partial sums are added before a single all_reduce (with sequence
// parallelism, a single reduce_scatter).
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @embeddings
// CHECK-DAG: %[[STARTS:.+]] = dfg.constant dense<[0, 8]> : tensor<2xi64>
// CHECK-DAG: %[[ZERO:.+]] = dfg.constant dense<0> : tensor<1xi64>
// CHECK-DAG: %[[ROWS:.+]] = dfg.constant dense<8> : tensor<1xi64>
// CHECK-DAG: %[[VOCAB:.+]] = dfg.constant dense<16> : tensor<1xi64>
// CHECK-DAG: %[[T:.+]] = shard.all_slice %{{.+}} on @mesh grid_axes = [0] slice_axis = 0 : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-DAG: %[[START:.+]] = shard.all_slice %[[STARTS]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<2xi64> -> tensor<1xi64>
// CHECK: %[[NEG:.+]] = dfg.less %[[IDS:.+]], %[[ZERO]]
// CHECK: %[[UP:.+]] = dfg.add %[[IDS]], %[[VOCAB]]
// CHECK: %[[WRAPPED:.+]] = dfg.where %[[NEG]], %[[UP]], %[[IDS]]
// CHECK: %[[ROW:.+]] = dfg.sub %[[WRAPPED]], %[[START]]
// CHECK: %[[LO:.+]] = dfg.less_or_equal %[[ZERO]], %[[ROW]]
// CHECK: %[[HI:.+]] = dfg.less %[[ROW]], %[[ROWS]]
// CHECK: %[[MINE:.+]] = dfg.and %[[LO]], %[[HI]]
// CHECK: %[[SAFE:.+]] = dfg.where %[[MINE]], %[[ROW]], %[[ZERO]]
// CHECK: %[[FOUND:.+]] = dfg.embedding %[[T]], %[[SAFE]] : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
// CHECK: %[[MASK:.+]] = dfg.unsqueeze %[[MINE]] axes = [-1]
// CHECK: %[[WORDS:.+]] = dfg.where %[[MASK]], %[[FOUND]], %{{.+}} : (tensor<2x4x1xi1>, tensor<2x4x8xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
// CHECK: dfg.embedding {{.*}} : (tensor<4x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
// CHECK: %[[SUM:.+]] = dfg.add %[[WORDS]], %{{.+}} : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %[[H:.+]] = shard.all_reduce %[[SUM]] on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: dfg.layer_norm %[[H]]
// SP-LABEL: func.func @embeddings
// SP: shard.reduce_scatter %{{.+}} on @mesh grid_axes = [0] scatter_axis = 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// SP-NOT: shard.reduce_scatter
// SP: dfg.layer_norm {{.*}} -> tensor<2x2x8xf32>
func.func @embeddings(%ids: tensor<2x4xi64>, %positions: tensor<1x4xi64>) -> tensor<2x4x8xf32> {
  %wte = dfg.weight "wte" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %wpe = dfg.weight "wpe" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %g = dfg.weight "g" in "w.bin" [offset = 768, length = 32] : tensor<8xf32>
  %b = dfg.weight "b" in "w.bin" [offset = 800, length = 32] : tensor<8xf32>
  %w = dfg.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %p = dfg.embedding %wpe, %positions : (tensor<8x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %h = dfg.add %w, %p : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
  %y = dfg.layer_norm %h, %g, %b axis = -1 epsilon = 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}
}

// -----

// A projection read only as column blocks (Phi-3's packed gate_up_proj)
// becomes one projection per block, each column-parallel; a reshape over
// symbolic sizes keeps the split of its static suffix ([b*s, 16] ->
// [b, s, 16]), so the down projection is row-parallel: one all_reduce.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @sliced_gate_up
func.func @sliced_gate_up(%x: tensor<?x8xf32>) -> tensor<?x?x8xf32> {
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 1024] : tensor<8x32xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 1024, length = 512] : tensor<16x8xf32>
  // CHECK-COUNT-2: dfg.matmul %{{.+}}, %{{.+}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  // CHECK: dfg.symbolic_reshape %{{.+}} to #{{.+}} symbols ["b", "s"] : (tensor<?x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: dfg.matmul %{{.+}}, %{{.+}} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  // CHECK-NEXT: shard.all_reduce
  // CHECK-NOT: shard.all_gather
  %gu = dfg.matmul %x, %w : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
  %g = dfg.slice %gu starts = [0] ends = [16] axes = [1] steps = [1] : (tensor<?x32xf32>) -> tensor<?x16xf32>
  %u = dfg.slice %gu starts = [16] ends = [32] axes = [-1] steps = [1] : (tensor<?x32xf32>) -> tensor<?x16xf32>
  %a = dfg.silu %g : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %h = dfg.mul %a, %u : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %r = dfg.symbolic_reshape %h to affine_map<()[s0, s1] -> (s0, s1, 16)> symbols ["b", "s"] : (tensor<?x16xf32>) -> tensor<?x?x16xf32>
  %y = dfg.matmul %r, %w2 : (tensor<?x?x16xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
}

// -----

// OLMo-2's query norm: an RMS norm over all heads of the projection, then
// the heads view. Written as a sum of squares, it follows the split of the
// heads: each rank sums the squares of its 2 heads' features (divided by the
// width: the division keeps partial sums, so the all_reduce follows it), one
// all_reduce of [1, 4, 1] completes the statistic, the rest is elementwise on the local
// features; the output projection sums partials (one all_reduce).
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @norm_over_heads
// SP-LABEL: func.func @norm_over_heads
func.func @norm_over_heads(%x: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 1024] : tensor<16x16xf32>
  %g = dfg.weight "g" in "w.bin" [offset = 1024, length = 64] : tensor<16xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 1088, length = 1024] : tensor<16x16xf32>
  // CHECK: dfg.matmul %{{.+}}, %{{.+}} : (tensor<1x4x16xf32>, tensor<16x8xf32>) -> tensor<1x4x8xf32>
  // CHECK: dfg.reduce_sum %{{.+}} axes = [2] keep_dims = true : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  // CHECK: dfg.div %{{.+}}, %{{.+}} : (tensor<1x4x1xf32>, tensor<f32>) -> tensor<1x4x1xf32>
  // CHECK-NEXT: shard.all_reduce %{{.+}} on @mesh grid_axes = [0] : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
  // CHECK-NOT: dfg.rms_norm
  // CHECK-NOT: shard.all_gather
  // CHECK: dfg.attention {{.*}} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  // CHECK: dfg.matmul %{{.+}}, %{{.+}} : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
  // CHECK-NEXT: shard.all_reduce
  %q = dfg.matmul %x, %wq : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
  %n = dfg.rms_norm %q, %g axis = -1 epsilon = 1.0e-06 : (tensor<1x4x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32>
  %h = dfg.reshape %n to [1, 4, 4, 4] : (tensor<1x4x16xf32>) -> tensor<1x4x4x4xf32>
  %t = dfg.transpose %h perm = [0, 2, 1, 3] : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = dfg.attention %t, %t, %t scale = 0.5 causal = true : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %ot = dfg.transpose %o perm = [0, 2, 1, 3] : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = dfg.reshape %ot to [1, 4, 16] : (tensor<1x4x4x4xf32>) -> tensor<1x4x16xf32>
  %y = dfg.matmul %c, %wo : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}
}
// -----

// A mixture's shared expert, weighted by a per-token gate, beside a routed
// expert weighted by its routing probability and summed over its one choice
// (Qwen2-MoE's layer): both products are row parallel, and each partial sum
// goes through ops linear in it (a product by a value whole on every rank, a
// reshape, a sum over a dimension) to the add. The all_reduce moves past
// them (sinkReductions) and the two meet in one. A tanh between (not linear)
// keeps its all_reduce where it is.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @shared_and_routed
// CHECK: dfg.silu
// CHECK: %[[S:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[SG:.+]] = dfg.mul %{{.+}}, %[[S]] : (tensor<6x1xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
// CHECK: dfg.silu
// CHECK: %[[R:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK: %[[RW:.+]] = dfg.mul %[[R]], %{{.+}} : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
// CHECK: %[[RR:.+]] = dfg.reshape %[[RW]] to [6, 1, 8]
// CHECK: %[[RS:.+]] = dfg.reduce_sum %[[RR]] axes = [1] keep_dims = false
// CHECK: %[[SUM:.+]] = dfg.add %[[SG]], %[[RS]]
// CHECK: %[[ONE:.+]] = shard.all_reduce %[[SUM]] on @mesh grid_axes = [0] : tensor<6x8xf32> -> tensor<6x8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: return %[[ONE]]
// CHECK-LABEL: func.func @nonlinear_between
// CHECK: shard.all_reduce
// CHECK: dfg.tanh
// CHECK: shard.all_reduce
func.func @shared_and_routed(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %w3 = dfg.weight "w3" in "w.bin" [offset = 1024, length = 512] : tensor<8x16xf32>
  %w4 = dfg.weight "w4" in "w.bin" [offset = 1536, length = 512] : tensor<16x8xf32>
  %wg = dfg.weight "wg" in "w.bin" [offset = 2048, length = 32] : tensor<8x1xf32>
  %wr = dfg.weight "wr" in "w.bin" [offset = 2080, length = 32] : tensor<8x1xf32>
  %h = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a = dfg.silu %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %s = dfg.linear %a, %w2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %g = dfg.linear %x, %wg transpose_weight = false : (tensor<6x8xf32>, tensor<8x1xf32>) -> tensor<6x1xf32>
  %sg = dfg.sigmoid %g : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %shared = dfg.mul %sg, %s : (tensor<6x1xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %h2 = dfg.linear %x, %w3 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a2 = dfg.silu %h2 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %r = dfg.linear %a2, %w4 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %p = dfg.linear %x, %wr transpose_weight = false : (tensor<6x8xf32>, tensor<8x1xf32>) -> tensor<6x1xf32>
  %pw = dfg.sigmoid %p : (tensor<6x1xf32>) -> tensor<6x1xf32>
  %rw = dfg.mul %r, %pw : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32>
  %rr = dfg.reshape %rw to [6, 1, 8] : (tensor<6x8xf32>) -> tensor<6x1x8xf32>
  %rs = dfg.reduce_sum %rr axes = [1] keep_dims = false : (tensor<6x1x8xf32>) -> tensor<6x8xf32>
  %y = dfg.add %shared, %rs : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}
func.func @nonlinear_between(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %w3 = dfg.weight "w3" in "w.bin" [offset = 1024, length = 512] : tensor<8x16xf32>
  %w4 = dfg.weight "w4" in "w.bin" [offset = 1536, length = 512] : tensor<16x8xf32>
  %h = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a = dfg.silu %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %s = dfg.linear %a, %w2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %t = dfg.tanh %s : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %h2 = dfg.linear %x, %w3 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a2 = dfg.silu %h2 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %r = dfg.linear %a2, %w4 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %y = dfg.add %t, %r : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  return %y : tensor<6x8xf32>
}
}

// -----

// dp through the token rows of a mixture: [batch * seq, d] rows back to
// [batch, seq, d] by a symbolic reshape. The leading dimensions pair (a
// split of the first into contiguous blocks is one of the whole tensor), so
// each dp rank reshapes its own rows, its batch piece being batch floordiv
// 2: no all_gather over dp.
// PIECE: affine_map<()[s0, s1] -> (s0 floordiv 2, s1, 8)>
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @token_rows
// CHECK-NOT: shard.all_gather
// CHECK: dfg.reshape %{{.+}} to [-1, 8] : (tensor<?x?x8xf32>) -> tensor<?x8xf32>
// CHECK: dfg.symbolic_reshape %{{.+}} to #{{.+}} symbols ["b", "s"] : (tensor<?x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @token_rows(%x: tensor<?x?x8xf32> {dfg.dim_names = ["b", "s", ""]}) -> tensor<?x?x8xf32> {
  %rows = dfg.reshape %x to [-1, 8] : (tensor<?x?x8xf32>) -> tensor<?x8xf32>
  %t = dfg.tanh %rows : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = dfg.symbolic_reshape %t to affine_map<()[s0, s1] -> (s0, s1, 8)> symbols ["b", "s"] : (tensor<?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
}

// -----

// transformers' padding mask `mask[batch_idx, kv_idx]` as the dynamo exporter
// writes it: a GatherND at tuples (b, j) of two expanded ranges. The first
// component is each tuple's own batch position, so the gather reads its own
// row (batch_dims = 1 over the key component) and dp splits it: no
// all_gather of the mask.
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @padding_mask_nd
// CHECK-NOT: shard.all_gather
// CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<?x?xi1>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?xi1>
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @padding_mask_nd(%m: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> tensor<?x1x1x?xi1> {
  %mask = dfg.cast %m to i1 : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %bi = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %ki = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %b4 = dfg.unsqueeze %bi axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %k4 = dfg.unsqueeze %ki axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %be = dfg.symbolic_expand %b4 to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<?x1x1x1xi64>) -> tensor<?x1x1x?xi64>
  %ke = dfg.symbolic_expand %k4 to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<1x1x1x?xi64>) -> tensor<?x1x1x?xi64>
  %b5 = dfg.unsqueeze %be axes = [-1] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %k5 = dfg.unsqueeze %ke axes = [-1] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %idx = dfg.concat %b5, %k5 axis = -1 : (tensor<?x1x1x?x1xi64>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?x2xi64>
  %g = dfg.gather_nd %mask, %idx batch_dims = 0 : (tensor<?x?xi1>, tensor<?x1x1x?x2xi64>) -> tensor<?x1x1x?xi1>
  return %g : tensor<?x1x1x?xi1>
}
}

// -----

// The same mask as TorchScript writes it: the flattened mask [b * s, 1]
// gathered at b * s + j. The gather reads row b only: a gather_nd of the
// mask viewed as [b, s, 1] at j - no all_gather.
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @padding_mask_flat
// CHECK-NOT: shard.all_gather
// CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<?x?x1xi1>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?x1xi1>
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @padding_mask_flat(%m: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> tensor<?x1x1x?x1xi1> {
  %mask = dfg.cast %m to i1 : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %bi = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %ki = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %b4 = dfg.unsqueeze %bi axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %k4 = dfg.unsqueeze %ki axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %s = dfg.sizes affine_map<()[s0] -> (s0)> symbols ["s"] : tensor<1xi64>
  %rows = dfg.mul %b4, %s : (tensor<?x1x1x1xi64>, tensor<1xi64>) -> tensor<?x1x1x1xi64>
  %idx = dfg.add %k4, %rows : (tensor<1x1x1x?xi64>, tensor<?x1x1x1xi64>) -> tensor<?x1x1x?xi64>
  %flat = dfg.reshape %mask to [-1, 1] : (tensor<?x?xi1>) -> tensor<?x1xi1>
  %g = dfg.gather %flat, %idx axis = 0 : (tensor<?x1xi1>, tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi1>
  return %g : tensor<?x1x1x?x1xi1>
}
}

// -----

// Near misses keep the whole mask: a first component offset by one from the
// batch position (b + 1, j), and a flat index b * s + j + 1 whose last key
// reads the next row.
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @not_own_row
// CHECK: shard.all_gather
// CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 0
// CHECK: shard.all_gather
// CHECK: dfg.gather %{{.+}}, %{{.+}} axis = 0
func.func @not_own_row(%m: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> (tensor<?x1x1x?xi1>, tensor<?x1x1x?x1xi1>) {
  %mask = dfg.cast %m to i1 : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %bi = dfg.range affine_map<()[s0] -> (1, s0 + 1)> delta = 1 symbols ["b"] : tensor<?xi64>
  %ki = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %b4 = dfg.unsqueeze %bi axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %k4 = dfg.unsqueeze %ki axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %be = dfg.symbolic_expand %b4 to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<?x1x1x1xi64>) -> tensor<?x1x1x?xi64>
  %ke = dfg.symbolic_expand %k4 to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<1x1x1x?xi64>) -> tensor<?x1x1x?xi64>
  %b5 = dfg.unsqueeze %be axes = [-1] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %k5 = dfg.unsqueeze %ke axes = [-1] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %idx = dfg.concat %b5, %k5 axis = -1 : (tensor<?x1x1x?x1xi64>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?x2xi64>
  %g = dfg.gather_nd %mask, %idx batch_dims = 0 : (tensor<?x?xi1>, tensor<?x1x1x?x2xi64>) -> tensor<?x1x1x?xi1>
  %b0 = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %ki1 = dfg.range affine_map<()[s0] -> (1, s0 + 1)> delta = 1 symbols ["s"] : tensor<?xi64>
  %b04 = dfg.unsqueeze %b0 axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %k14 = dfg.unsqueeze %ki1 axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %s = dfg.sizes affine_map<()[s0] -> (s0)> symbols ["s"] : tensor<1xi64>
  %rows = dfg.mul %b04, %s : (tensor<?x1x1x1xi64>, tensor<1xi64>) -> tensor<?x1x1x1xi64>
  %fidx = dfg.add %k14, %rows : (tensor<1x1x1x?xi64>, tensor<?x1x1x1xi64>) -> tensor<?x1x1x?xi64>
  %flat = dfg.reshape %mask to [-1, 1] : (tensor<?x?xi1>) -> tensor<?x1xi1>
  %f = dfg.gather %flat, %fidx axis = 0 : (tensor<?x1xi1>, tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi1>
  return %g, %f : tensor<?x1x1x?xi1>, tensor<?x1x1x?x1xi1>
}
}

// -----

// torch's select_scatter `x[:, :, 1, :] = v` over [b, 2, 4, 4] as
// ScatterElements imports it: a scatter_nd at full index tuples (b, h, 1, j).
// The first two components are each tuple's own position, so every tuple
// writes within its own [4, 4] matrix: scatter_nd with batch_dims = 2 over
// (1, j), which dp splits - no all_gather. A head component that starts at
// 1 is no position: that scatter keeps the heads among its tuples
// (batch_dims = 1 over (h + 1, 1, j)).
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @select_scatter
// CHECK-NOT: shard.all_gather
// CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} batch_dims = 2 : (tensor<?x2x4x4xf32>, tensor<?x2x1x4x2xi64>, tensor<?x2x1x4xf32>) -> tensor<?x2x4x4xf32>
// CHECK-NOT: shard.all_gather
// CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<?x2x4x4xf32>, tensor<?x2x1x4x3xi64>, tensor<?x2x1x4xf32>) -> tensor<?x2x4x4xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @select_scatter(%x: tensor<?x2x4x4xf32> {dfg.dim_names = ["b", "", "", ""]}, %v: tensor<?x2x1x4xf32> {dfg.dim_names = ["b", "", "", ""]}) -> (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) {
  %bi = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %hi = dfg.range affine_map<() -> (0, 2)> delta = 1 symbols [] : tensor<2xi64>
  %h1 = dfg.range affine_map<() -> (1, 3)> delta = 1 symbols [] : tensor<2xi64>
  %ji = dfg.range affine_map<() -> (0, 4)> delta = 1 symbols [] : tensor<4xi64>
  %one = dfg.constant dense<1> : tensor<1x1x1x1xi64>
  %b4 = dfg.unsqueeze %bi axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %h4 = dfg.unsqueeze %hi axes = [0, 2, 3] : (tensor<2xi64>) -> tensor<1x2x1x1xi64>
  %h14 = dfg.unsqueeze %h1 axes = [0, 2, 3] : (tensor<2xi64>) -> tensor<1x2x1x1xi64>
  %j4 = dfg.unsqueeze %ji axes = [0, 1, 2] : (tensor<4xi64>) -> tensor<1x1x1x4xi64>
  %be = dfg.symbolic_expand %b4 to affine_map<()[s0] -> (s0, 2, 1, 4)> symbols ["b"] : (tensor<?x1x1x1xi64>) -> tensor<?x2x1x4xi64>
  %he = dfg.symbolic_expand %h4 to affine_map<()[s0] -> (s0, 2, 1, 4)> symbols ["b"] : (tensor<1x2x1x1xi64>) -> tensor<?x2x1x4xi64>
  %h1e = dfg.symbolic_expand %h14 to affine_map<()[s0] -> (s0, 2, 1, 4)> symbols ["b"] : (tensor<1x2x1x1xi64>) -> tensor<?x2x1x4xi64>
  %re = dfg.symbolic_expand %one to affine_map<()[s0] -> (s0, 2, 1, 4)> symbols ["b"] : (tensor<1x1x1x1xi64>) -> tensor<?x2x1x4xi64>
  %je = dfg.symbolic_expand %j4 to affine_map<()[s0] -> (s0, 2, 1, 4)> symbols ["b"] : (tensor<1x1x1x4xi64>) -> tensor<?x2x1x4xi64>
  %b5 = dfg.unsqueeze %be axes = [-1] : (tensor<?x2x1x4xi64>) -> tensor<?x2x1x4x1xi64>
  %h5 = dfg.unsqueeze %he axes = [-1] : (tensor<?x2x1x4xi64>) -> tensor<?x2x1x4x1xi64>
  %h15 = dfg.unsqueeze %h1e axes = [-1] : (tensor<?x2x1x4xi64>) -> tensor<?x2x1x4x1xi64>
  %r5 = dfg.unsqueeze %re axes = [-1] : (tensor<?x2x1x4xi64>) -> tensor<?x2x1x4x1xi64>
  %j5 = dfg.unsqueeze %je axes = [-1] : (tensor<?x2x1x4xi64>) -> tensor<?x2x1x4x1xi64>
  %idx = dfg.concat %b5, %h5, %r5, %j5 axis = -1 : (tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>) -> tensor<?x2x1x4x4xi64>
  %s = dfg.scatter_nd %x, %idx, %v : (tensor<?x2x4x4xf32>, tensor<?x2x1x4x4xi64>, tensor<?x2x1x4xf32>) -> tensor<?x2x4x4xf32>
  %idx1 = dfg.concat %b5, %h15, %r5, %j5 axis = -1 : (tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>, tensor<?x2x1x4x1xi64>) -> tensor<?x2x1x4x4xi64>
  %t = dfg.scatter_nd %x, %idx1, %v : (tensor<?x2x4x4xf32>, tensor<?x2x1x4x4xi64>, tensor<?x2x1x4xf32>) -> tensor<?x2x4x4xf32>
  return %s, %t : tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>
}
}

// -----

// With static sizes the exporter's index tuples are literals; their values
// are checked one by one (row b of a [2, 3] mask: tuples (b, j), and the
// flat b * 3 + j).
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @padding_mask_literal
// CHECK-NOT: shard.all_gather
// CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<1x3xi1>, tensor<1x3x1xi64>) -> tensor<1x3xi1>
// CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<1x3x1xi1>, tensor<1x3x1xi64>) -> tensor<1x3x1xi1>
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @padding_mask_literal(%m: tensor<2x3xi1>) -> (tensor<2x3xi1>, tensor<2x3x1xi1>) {
  %idx = dfg.constant dense<[[[0, 0], [0, 1], [0, 2]], [[1, 0], [1, 1], [1, 2]]]> : tensor<2x3x2xi64>
  %g = dfg.gather_nd %m, %idx batch_dims = 0 : (tensor<2x3xi1>, tensor<2x3x2xi64>) -> tensor<2x3xi1>
  %flat = dfg.reshape %m to [6, 1] : (tensor<2x3xi1>) -> tensor<6x1xi1>
  %fidx = dfg.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi64>
  %f = dfg.gather %flat, %fidx axis = 0 : (tensor<6x1xi1>, tensor<2x3xi64>) -> tensor<2x3x1xi1>
  return %g, %f : tensor<2x3xi1>, tensor<2x3x1xi1>
}
}

// -----

// A mask broadcast over symbolic sizes (Optimum's BERT: [b, 1, 1, s] to
// [b, 1, s, s]) and sliced at symbolic bounds keeps dp's split of the
// batch: the expand's batch entry becomes a 1 (keep the input's piece), the
// sliced axis stays whole.
// PIECE: affine_map<()[s0, s1] -> (1, 1, s1, s1)>
// PIECE: func.func @mask_expand
module attributes {meshc.mesh = "dp=2"} {
// CHECK-LABEL: func.func @mask_expand
// CHECK-NOT: shard.all_gather
// CHECK: dfg.symbolic_expand
// CHECK-NOT: shard.all_gather
// CHECK: dfg.symbolic_slice
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @mask_expand(%m: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> tensor<?x1x?x?xi64> {
  %u = dfg.unsqueeze %m axes = [1, 2] : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  %e = dfg.symbolic_expand %u to affine_map<()[s0, s1] -> (s0, 1, s1, s1)> symbols ["b", "s"] : (tensor<?x1x1x?xi64>) -> tensor<?x1x?x?xi64>
  %l = dfg.symbolic_slice %e starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [3] steps = [1] symbols ["s"] : (tensor<?x1x?x?xi64>) -> tensor<?x1x?x?xi64>
  return %l : tensor<?x1x?x?xi64>
}
}

// -----

// BitNet's sub-norms, over features tp splits: the attention's merged heads
// before the output projection, and the MLP's hidden features before the
// down projection. Each becomes a sum of squares (one all_reduce of
// [1, 4, 1]), so the heads, the gate and up projections and the products
// after the norms stay split: no all_gather, and the two row-parallel
// projections sum partials.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @sub_norms
// CHECK-NOT: shard.all_gather
// CHECK-NOT: dfg.rms_norm
// CHECK: dfg.attention {{.*}} -> tensor<1x2x4x4xf32>
// CHECK: dfg.reduce_sum %{{.+}} axes = [2] keep_dims = true : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
// CHECK: shard.all_reduce %{{.+}} : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<1x4x8xf32>, tensor<8x16xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT: shard.all_reduce
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
// CHECK: dfg.reduce_sum %{{.+}} axes = [2] keep_dims = true : (tensor<1x4x16xf32>) -> tensor<1x4x1xf32>
// CHECK: shard.all_reduce %{{.+}} : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT: shard.all_reduce
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @sub_norms(%x: tensor<1x4x16xf32>) -> tensor<1x4x16xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 1024] : tensor<16x16xf32>
  %ga = dfg.weight "ga" in "w.bin" [offset = 1024, length = 64] : tensor<16xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 1088, length = 1024] : tensor<16x16xf32>
  %wg = dfg.weight "wg" in "w.bin" [offset = 2112, length = 2048] : tensor<16x32xf32>
  %wu = dfg.weight "wu" in "w.bin" [offset = 4160, length = 2048] : tensor<16x32xf32>
  %gm = dfg.weight "gm" in "w.bin" [offset = 6208, length = 128] : tensor<32xf32>
  %wd = dfg.weight "wd" in "w.bin" [offset = 6336, length = 2048] : tensor<32x16xf32>
  %q = dfg.linear %x, %wq transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
  %h = dfg.reshape %q to [1, 4, 4, 4] : (tensor<1x4x16xf32>) -> tensor<1x4x4x4xf32>
  %t = dfg.transpose %h perm = [0, 2, 1, 3] : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %o = dfg.attention %t, %t, %t scale = 0.5 causal = true : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %ot = dfg.transpose %o perm = [0, 2, 1, 3] : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = dfg.reshape %ot to [1, 4, 16] : (tensor<1x4x4x4xf32>) -> tensor<1x4x16xf32>
  %cn = dfg.rms_norm %c, %ga axis = -1 epsilon = 1.0e-06 : (tensor<1x4x16xf32>, tensor<16xf32>) -> tensor<1x4x16xf32>
  %a = dfg.linear %cn, %wo transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x16xf32>) -> tensor<1x4x16xf32>
  %r = dfg.add %x, %a : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %g = dfg.linear %r, %wg transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x32xf32>) -> tensor<1x4x32xf32>
  %s = dfg.silu %g : (tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %u = dfg.linear %r, %wu transpose_weight = false : (tensor<1x4x16xf32>, tensor<16x32xf32>) -> tensor<1x4x32xf32>
  %m = dfg.mul %s, %u : (tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %mn = dfg.rms_norm %m, %gm axis = -1 epsilon = 1.0e-06 : (tensor<1x4x32xf32>, tensor<32xf32>) -> tensor<1x4x32xf32>
  %d = dfg.linear %mn, %wd transpose_weight = false : (tensor<1x4x32xf32>, tensor<32x16xf32>) -> tensor<1x4x16xf32>
  %y = dfg.add %r, %d : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  return %y : tensor<1x4x16xf32>
}
}

// -----

// A mixture's expert rows added back at their tokens (scatter_nd
// accumulate, index_add): the features each update carries whole split with
// the expert's hidden features, so the expert is column- then row-parallel
// and the scatter adds each rank's columns.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @scatter_expert_rows
// CHECK-NOT: shard.all_gather
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} accumulate : (tensor<4x8xf32>, tensor<6x1xi64>, tensor<6x8xf32>) -> tensor<4x8xf32>
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: shard.all_reduce
// CHECK-NOT: shard.all_gather
// CHECK: return
func.func @scatter_expert_rows(%x: tensor<6x8xf32>, %rows: tensor<6x1xi64>) -> tensor<4x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %zeros = dfg.constant dense<0.0> : tensor<4x16xf32>
  %h = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a = dfg.tanh %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %s = dfg.scatter_nd %zeros, %rows, %a accumulate : (tensor<4x16xf32>, tensor<6x1xi64>, tensor<6x16xf32>) -> tensor<4x16xf32>
  %y = dfg.linear %s, %w2 transpose_weight = false : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
}

// -----

// Experts' packed gate_up projections joined by rows before gate and up are
// cut (JetMoE: by a where per row, as the dynamo exporter writes it; by a
// concat of each expert's rows, as TorchScript does). The cut moves through
// the join to each projection, which becomes one projection per part, so
// every expert is column-parallel into its down projection: no all_gather.
// The experts' partial sums are joined as the exporter joins them (a select
// by a condition the same on every rank, a concat), then reduced once. Where
// the rows joined by a concat are sliced back into the same blocks before
// the down projections, each block is read from its expert's part, so the
// rows are never joined before the down projections.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @experts_joined_by_where
// CHECK-NOT: shard.all_gather
// CHECK-NOT: dfg.split
// CHECK-COUNT-2: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK-NEXT: dfg.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<6x1xi1>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
// CHECK-NOT: dfg.split
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK: dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x8xf32>) -> tensor<6x8xf32>
// CHECK-NEXT: dfg.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<6x1xi1>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[D1:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[D2:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[J:.+]] = dfg.where %{{.+}}, %[[D1]], %[[D2]]
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[J]]
// CHECK-NOT: shard.all_gather
// CHECK: return %[[R]]
func.func @experts_joined_by_where(%x: tensor<6x8xf32>, %m: tensor<6x1xi1>) -> tensor<6x4xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 1024] : tensor<8x32xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 1024, length = 1024] : tensor<8x32xf32>
  %d1 = dfg.weight "d1" in "w.bin" [offset = 2048, length = 256] : tensor<16x4xf32>
  %d2 = dfg.weight "d2" in "w.bin" [offset = 2304, length = 256] : tensor<16x4xf32>
  %a = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x32xf32>) -> tensor<6x32xf32>
  %b = dfg.linear %x, %w2 transpose_weight = false : (tensor<6x8xf32>, tensor<8x32xf32>) -> tensor<6x32xf32>
  %j = dfg.where %m, %a, %b : (tensor<6x1xi1>, tensor<6x32xf32>, tensor<6x32xf32>) -> tensor<6x32xf32>
  %p:2 = dfg.split %j axis = 1 sizes = [16, 16] : (tensor<6x32xf32>) -> (tensor<6x16xf32>, tensor<6x16xf32>)
  %s = dfg.silu %p#0 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %h = dfg.mul %s, %p#1 : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %o1 = dfg.linear %h, %d1 transpose_weight = false : (tensor<6x16xf32>, tensor<16x4xf32>) -> tensor<6x4xf32>
  %o2 = dfg.linear %h, %d2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x4xf32>) -> tensor<6x4xf32>
  %y = dfg.where %m, %o1, %o2 : (tensor<6x1xi1>, tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}
// CHECK-LABEL: func.func @experts_joined_by_concat
// CHECK-NOT: shard.all_gather
// CHECK-NOT: dfg.concat
// CHECK-COUNT-2: dfg.silu
// CHECK-NOT: shard.all_reduce
// CHECK: %[[D1:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[D2:.+]] = dfg.linear %{{.+}}, %{{.+}} transpose_weight = false : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: %[[J:.+]] = dfg.concat %[[D1]], %[[D2]] axis = 0
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[J]]
// CHECK-NOT: shard.all_gather
// CHECK: return %[[R]]
func.func @experts_joined_by_concat(%x: tensor<6x8xf32>) -> tensor<6x4xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 1024] : tensor<8x32xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 1024, length = 1024] : tensor<8x32xf32>
  %d1 = dfg.weight "d1" in "w.bin" [offset = 2048, length = 256] : tensor<16x4xf32>
  %d2 = dfg.weight "d2" in "w.bin" [offset = 2304, length = 256] : tensor<16x4xf32>
  %xa = dfg.slice %x starts = [0] ends = [2] axes = [0] steps = [1] : (tensor<6x8xf32>) -> tensor<2x8xf32>
  %xb = dfg.slice %x starts = [2] ends = [6] axes = [0] steps = [1] : (tensor<6x8xf32>) -> tensor<4x8xf32>
  %a = dfg.linear %xa, %w1 transpose_weight = false : (tensor<2x8xf32>, tensor<8x32xf32>) -> tensor<2x32xf32>
  %b = dfg.linear %xb, %w2 transpose_weight = false : (tensor<4x8xf32>, tensor<8x32xf32>) -> tensor<4x32xf32>
  %c = dfg.concat %a, %b axis = 0 : (tensor<2x32xf32>, tensor<4x32xf32>) -> tensor<6x32xf32>
  %g = dfg.slice %c starts = [0] ends = [16] axes = [-1] steps = [1] : (tensor<6x32xf32>) -> tensor<6x16xf32>
  %u = dfg.slice %c starts = [16] ends = [32] axes = [-1] steps = [1] : (tensor<6x32xf32>) -> tensor<6x16xf32>
  %s = dfg.silu %g : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %h = dfg.mul %s, %u : (tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<6x16xf32>
  %h1 = dfg.slice %h starts = [0] ends = [2] axes = [0] steps = [1] : (tensor<6x16xf32>) -> tensor<2x16xf32>
  %h2 = dfg.slice %h starts = [2] ends = [6] axes = [0] steps = [1] : (tensor<6x16xf32>) -> tensor<4x16xf32>
  %o1 = dfg.linear %h1, %d1 transpose_weight = false : (tensor<2x16xf32>, tensor<16x4xf32>) -> tensor<2x4xf32>
  %o2 = dfg.linear %h2, %d2 transpose_weight = false : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %y = dfg.concat %o1, %o2 axis = 0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<6x4xf32>
  return %y : tensor<6x4xf32>
}
}

// -----

// A row-parallel product's partial sums scattered into zeros (index_add into
// a fresh tensor) are reduced after the scatter: each element of its result
// is one update's or zero. Into a tensor that is not zeros, the reduction
// stays before the scatter (reducing after would add the tensor tp times).
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @partial_scatter_into_zeros
// CHECK: dfg.tanh
// CHECK-NEXT: %[[D:.+]] = dfg.linear
// CHECK-NEXT: %[[S:.+]] = dfg.scatter_nd %{{.+}}, %{{.+}}, %[[D]] accumulate
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[S]]
// CHECK: return %[[R]]
func.func @partial_scatter_into_zeros(%x: tensor<6x8xf32>, %rows: tensor<6x1xi64>) -> tensor<4x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %zeros = dfg.constant dense<0.0> : tensor<4x8xf32>
  %h = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a = dfg.tanh %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %d = dfg.linear %a, %w2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %s = dfg.scatter_nd %zeros, %rows, %d accumulate : (tensor<4x8xf32>, tensor<6x1xi64>, tensor<6x8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @partial_scatter_into_data
// CHECK: dfg.tanh
// CHECK-NEXT: %[[D:.+]] = dfg.linear
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[D]]
// CHECK-NEXT: dfg.scatter_nd %{{.+}}, %{{.+}}, %[[R]] accumulate
func.func @partial_scatter_into_data(%x: tensor<6x8xf32>, %rows: tensor<6x1xi64>, %base: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %h = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a = dfg.tanh %h : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %d = dfg.linear %a, %w2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %s = dfg.scatter_nd %base, %rows, %d accumulate : (tensor<4x8xf32>, tensor<6x1xi64>, tensor<6x8xf32>) -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
}

// -----

// The rows a NonZero selected for an expert (transformers 4.x's routing, as
// meshc imports it): every row computed, the unselected ones zeroed by a
// where on a mask the same on every rank, scattered into zeros broadcast
// from a scalar, added to the sum so far (zeros for the first expert). The
// down projection's partial sums pass the where, the scatter and the adds:
// one all_reduce for both experts, after the last add.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @selected_rows_into_zeros
// CHECK-NOT: shard.all_reduce
// CHECK: dfg.add
// CHECK-NOT: shard.all_reduce
// CHECK: %[[SUM:.+]] = dfg.add %{{.+}}, %{{.+}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[SUM]]
// CHECK-NOT: shard.all_reduce
// CHECK: return %[[R]]
func.func @selected_rows_into_zeros(%x: tensor<6x8xf32>, %rows: tensor<6x1xi64>, %keep0: tensor<6x1xi1>, %keep1: tensor<6x1xi1>) -> tensor<4x8xf32> {
  %w1 = dfg.weight "w1" in "w.bin" [offset = 0, length = 512] : tensor<8x16xf32>
  %w2 = dfg.weight "w2" in "w.bin" [offset = 512, length = 512] : tensor<16x8xf32>
  %w3 = dfg.weight "w3" in "w.bin" [offset = 1024, length = 512] : tensor<8x16xf32>
  %w4 = dfg.weight "w4" in "w.bin" [offset = 1536, length = 512] : tensor<16x8xf32>
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %zeros = dfg.expand %zero shape = [4, 8] : (tensor<f32>) -> tensor<4x8xf32>
  %h0 = dfg.linear %x, %w1 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a0 = dfg.tanh %h0 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %d0 = dfg.linear %a0, %w2 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %k0 = dfg.where %keep0, %d0, %zero : (tensor<6x1xi1>, tensor<6x8xf32>, tensor<f32>) -> tensor<6x8xf32>
  %s0 = dfg.scatter_nd %zeros, %rows, %k0 accumulate : (tensor<4x8xf32>, tensor<6x1xi64>, tensor<6x8xf32>) -> tensor<4x8xf32>
  %acc0 = dfg.add %zeros, %s0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = dfg.linear %x, %w3 transpose_weight = false : (tensor<6x8xf32>, tensor<8x16xf32>) -> tensor<6x16xf32>
  %a1 = dfg.tanh %h1 : (tensor<6x16xf32>) -> tensor<6x16xf32>
  %d1 = dfg.linear %a1, %w4 transpose_weight = false : (tensor<6x16xf32>, tensor<16x8xf32>) -> tensor<6x8xf32>
  %k1 = dfg.where %keep1, %d1, %zero : (tensor<6x1xi1>, tensor<6x8xf32>, tensor<f32>) -> tensor<6x8xf32>
  %s1 = dfg.scatter_nd %zeros, %rows, %k1 accumulate : (tensor<4x8xf32>, tensor<6x1xi64>, tensor<6x8xf32>) -> tensor<4x8xf32>
  %acc1 = dfg.add %acc0, %s1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %acc1 : tensor<4x8xf32>
}
}

// -----

// A Mamba mixer: in_proj cut into x and z, x_proj read whole by every
// channel and cut into dt, B and C, dt_proj back to the channels, out_proj.
// (dt_proj multiplies from the left, as the model writes it.) Split by
// channels, x_proj's three parts leave partial sums on one input:
// they cross the wire as one all_reduce of their joined outputs, cut again
// after it, so a layer has two (x_proj's and out_proj's), and the split is
// kept.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @packed_row_parallel
// CHECK: %[[DT:.+]] = dfg.linear %{{.+}} : (tensor<2x4x8xf32>, tensor<8x2xf32>) -> tensor<2x4x2xf32>
// CHECK: %[[B:.+]] = dfg.linear %{{.+}} : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
// CHECK: %[[C:.+]] = dfg.linear %{{.+}} : (tensor<2x4x8xf32>, tensor<8x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[J:.+]] = dfg.concat %[[DT]], %[[B]], %[[C]] axis = 2 : (tensor<2x4x2xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x10xf32>
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[J]]
// CHECK-NEXT: dfg.slice %[[R]] starts = [0] ends = [2]
// CHECK-NEXT: dfg.slice %[[R]] starts = [2] ends = [6]
// CHECK-NEXT: dfg.slice %[[R]] starts = [6] ends = [10]
// CHECK: shard.all_reduce
// CHECK-NOT: shard.all_reduce
// CHECK: return
func.func @packed_row_parallel(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %w_in = dfg.weight "in_proj" in "w.bin" [offset = 0, length = 1024] : tensor<8x32xf32>
  %w_x = dfg.weight "x_proj" in "w.bin" [offset = 1024, length = 640] : tensor<16x10xf32>
  %w_dt = dfg.weight "dt_proj" in "w.bin" [offset = 1664, length = 128] : tensor<16x2xf32>
  %w_out = dfg.weight "out_proj" in "w.bin" [offset = 1792, length = 512] : tensor<16x8xf32>
  %p = dfg.linear %x, %w_in transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %xs = dfg.slice %p starts = [0] ends = [16] axes = [2] steps = [1] : (tensor<2x4x32xf32>) -> tensor<2x4x16xf32>
  %z = dfg.slice %p starts = [16] ends = [32] axes = [2] steps = [1] : (tensor<2x4x32xf32>) -> tensor<2x4x16xf32>
  %a = dfg.silu %xs : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %dbc = dfg.linear %a, %w_x transpose_weight = false : (tensor<2x4x16xf32>, tensor<16x10xf32>) -> tensor<2x4x10xf32>
  %dt = dfg.slice %dbc starts = [0] ends = [2] axes = [2] steps = [1] : (tensor<2x4x10xf32>) -> tensor<2x4x2xf32>
  %b = dfg.slice %dbc starts = [2] ends = [6] axes = [2] steps = [1] : (tensor<2x4x10xf32>) -> tensor<2x4x4xf32>
  %c = dfg.slice %dbc starts = [6] ends = [10] axes = [2] steps = [1] : (tensor<2x4x10xf32>) -> tensor<2x4x4xf32>
  %dtt = dfg.transpose %dt perm = [0, 2, 1] : (tensor<2x4x2xf32>) -> tensor<2x2x4xf32>
  %delta = dfg.matmul %w_dt, %dtt : (tensor<16x2xf32>, tensor<2x2x4xf32>) -> tensor<2x16x4xf32>
  %et = dfg.exp %delta : (tensor<2x16x4xf32>) -> tensor<2x16x4xf32>
  %e = dfg.transpose %et perm = [0, 2, 1] : (tensor<2x16x4xf32>) -> tensor<2x4x16xf32>
  %bc = dfg.mul %b, %c : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = dfg.reduce_sum %bc axes = [2] keep_dims = true : (tensor<2x4x4xf32>) -> tensor<2x4x1xf32>
  %h = dfg.mul %a, %e : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %hs = dfg.mul %h, %s : (tensor<2x4x16xf32>, tensor<2x4x1xf32>) -> tensor<2x4x16xf32>
  %g = dfg.silu %z : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %y = dfg.mul %hs, %g : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %o = dfg.linear %y, %w_out transpose_weight = false : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}
}

// -----

// A reshape over symbolic sizes that keeps its leading dimensions, the
// batch and a static one after it (XLNet's relative shift views its scores
// [b, heads, i, j] anew, keeping b and the heads): the symbolic shapes show
// both kept, so the heads stay split through it and nothing is gathered.
module attributes {meshc.mesh = "tp=2"} {
// CHECK-LABEL: func.func @reshape_keeps_heads
// CHECK: dfg.symbolic_reshape %{{.+}} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?xf32>
// CHECK: dfg.symbolic_reshape %{{.+}} : (tensor<?x2x?xf32>) -> tensor<?x2x?x?xf32>
// CHECK-NOT: shard.all_gather
// CHECK: shard.all_reduce
// CHECK-NOT: shard.all_reduce
// CHECK: return
func.func @reshape_keeps_heads(%x: tensor<?x?x16xf32> {dfg.dim_names = ["b", "s", ""]}) -> tensor<?x?x16xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 1024] : tensor<16x16xf32>
  %wk = dfg.weight "wk" in "w.bin" [offset = 1024, length = 1024] : tensor<16x16xf32>
  %wv = dfg.weight "wv" in "w.bin" [offset = 2048, length = 1024] : tensor<16x16xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 3072, length = 1024] : tensor<16x16xf32>
  %q = dfg.linear %x, %wq transpose_weight = false : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %k = dfg.linear %x, %wk transpose_weight = false : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %v = dfg.linear %x, %wv transpose_weight = false : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %q4 = dfg.reshape %q to [0, 0, 4, 4] : (tensor<?x?x16xf32>) -> tensor<?x?x4x4xf32>
  %k4 = dfg.reshape %k to [0, 0, 4, 4] : (tensor<?x?x16xf32>) -> tensor<?x?x4x4xf32>
  %v4 = dfg.reshape %v to [0, 0, 4, 4] : (tensor<?x?x16xf32>) -> tensor<?x?x4x4xf32>
  %qt = dfg.transpose %q4 perm = [0, 2, 1, 3] : (tensor<?x?x4x4xf32>) -> tensor<?x4x?x4xf32>
  %kt = dfg.transpose %k4 perm = [0, 2, 3, 1] : (tensor<?x?x4x4xf32>) -> tensor<?x4x4x?xf32>
  %vt = dfg.transpose %v4 perm = [0, 2, 1, 3] : (tensor<?x?x4x4xf32>) -> tensor<?x4x?x4xf32>
  %s = dfg.matmul %qt, %kt : (tensor<?x4x?x4xf32>, tensor<?x4x4x?xf32>) -> tensor<?x4x?x?xf32>
  %flat = dfg.symbolic_reshape %s to affine_map<()[s0, s1] -> (s0, 4, s1 * s1)> symbols ["b", "s"] : (tensor<?x4x?x?xf32>) -> tensor<?x4x?xf32>
  %e = dfg.exp %flat : (tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %p = dfg.symbolic_reshape %e to affine_map<()[s0, s1] -> (s0, 4, s1, s1)> symbols ["b", "s"] : (tensor<?x4x?xf32>) -> tensor<?x4x?x?xf32>
  %a = dfg.matmul %p, %vt : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  %at = dfg.transpose %a perm = [0, 2, 1, 3] : (tensor<?x4x?x4xf32>) -> tensor<?x?x4x4xf32>
  %m = dfg.reshape %at to [0, 0, 16] : (tensor<?x?x4x4xf32>) -> tensor<?x?x16xf32>
  %o = dfg.linear %m, %wo transpose_weight = false : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}
}
