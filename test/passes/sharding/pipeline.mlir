// RUN: meshc-opt %s --split-input-file --verify-diagnostics --meshc-shard-plan --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-verify | FileCheck %s
// RUN: meshc-opt %s --split-input-file --verify-diagnostics --meshc-shard-plan=microbatches=2 --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-verify | FileCheck %s --check-prefix=MB
// RUN: meshc-opt %s --split-input-file --verify-diagnostics --meshc-shard-plan --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-specialize-rank=rank=1 --canonicalize | FileCheck %s --check-prefix=RANK1
// RUN: meshc-opt %s --split-input-file --verify-diagnostics --meshc-shard-plan --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-specialize-rank=rank=3 --canonicalize | FileCheck %s --check-prefix=RANK3

// Two layers on pp=2, tp=2: one stage each. Stage 0 runs the embedding and
// layer 0 and yields the residual stream; the schedule sends it to stage 1
// and receives it there. Inside each stage, tp as usual: one all_reduce per
// row-parallel projection. Results are held by the last stage.
module attributes {meshc.mesh = "pp=2,tp=2"} {
// CHECK: shard.grid @mesh(shape = 2x2) {meshc.axes = ["pp", "tp"]}
// CHECK-LABEL: func.func private @two_layers_stage0(
// CHECK-SAME: tensor<2x4xi64>) -> tensor<2x4x8xf32> attributes {meshc.stage = 0 : i64}
// CHECK: dfg.embedding
// CHECK: dfg.attention {{.*}} -> tensor<2x1x4x4xf32>
// CHECK: shard.all_reduce {{.*}} grid_axes = [1]
// CHECK-NOT: dfg.attention
// CHECK: return
// CHECK-LABEL: func.func private @two_layers_stage1(
// CHECK-SAME: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> attributes {meshc.stage = 1 : i64}
// CHECK-NOT: dfg.embedding
// CHECK: dfg.attention {{.*}} -> tensor<2x1x4x4xf32>
// CHECK: shard.all_reduce {{.*}} grid_axes = [1]
// CHECK: return
// CHECK-LABEL: func.func @two_layers(
// CHECK-SAME: -> (tensor<2x4x8xf32> {meshc.stage = 1 : i64})
// CHECK-NEXT: %[[A:.+]] = call @two_layers_stage0(%arg0) {meshc.stage = 0 : i64}
// CHECK-NEXT: %[[S:.+]] = shard.send %[[A]] on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64}
// CHECK-NEXT: %[[R:.+]] = shard.recv %[[S]] on @mesh grid_axes = [0] source = [0] {meshc.stage = 1 : i64}
// CHECK-NEXT: %[[B:.+]] = call @two_layers_stage1(%[[R]]) {meshc.stage = 1 : i64}
// CHECK-NEXT: return %[[B]]

// The program of rank 1 (pp=0, tp=1): stage 0 alone, its slices concrete
// (the second half of each column-parallel weight, the second block of the
// table's rows), a schedule that calls stage 0 and sends, and no result.
// RANK1: module attributes {{{.*}}meshc.rank = 1 : i64} {
// RANK1: func.func private @two_layers_stage0(
// RANK1-DAG: dfg.slice %{{.+}} starts = [8] ends = [16] axes = [0] steps = [1] : (tensor<16x8xf32>) -> tensor<8x8xf32>
// RANK1-DAG: dfg.slice %{{.+}} starts = [4] ends = [8] axes = [1] steps = [1] : (tensor<8x8xf32>) -> tensor<8x4xf32>
// RANK1-NOT: shard.all_slice
// RANK1-NOT: @two_layers_stage1(
// RANK1-LABEL: func.func @two_layers(%arg0: tensor<2x4xi64>) {
// RANK1-NEXT: %[[A:.+]] = call @two_layers_stage0(%arg0) {meshc.stage = 0 : i64}
// RANK1-NEXT: shard.send %[[A]] on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64}
// RANK1-NEXT: return{{$}}

// Rank 3 (pp=1, tp=1): stage 1 alone; the schedule receives into a fresh
// buffer, calls stage 1 and returns the result it holds.
// RANK3: module attributes {{{.*}}meshc.rank = 3 : i64} {
// RANK3-NOT: @two_layers_stage0(
// RANK3: func.func private @two_layers_stage1(
// RANK3: dfg.slice %{{.+}} starts = [4] ends = [8] axes = [1] steps = [1] : (tensor<8x8xf32>) -> tensor<8x4xf32>
// RANK3-LABEL: func.func @two_layers(
// RANK3-SAME: -> (tensor<2x4x8xf32> {meshc.stage = 1 : i64})
// RANK3-NEXT: %[[E:.+]] = tensor.empty() : tensor<2x4x8xf32>
// RANK3-NEXT: %[[R:.+]] = shard.recv %[[E]] on @mesh grid_axes = [0] source = [0] {meshc.stage = 1 : i64}
// RANK3-NEXT: %[[B:.+]] = call @two_layers_stage1(%[[R]]) {meshc.stage = 1 : i64}
// RANK3-NEXT: return %[[B]]

// With two microbatches the stages take one batch row each; the schedule
// slices the input, runs both microbatches through both stages in order and
// concatenates the results on stage 1. The planning axis mb is gone.
// MB: shard.grid @mesh(shape = 2x2) {meshc.axes = ["pp", "tp"]}
// MB-LABEL: func.func private @two_layers_stage0(
// MB-SAME: tensor<1x4xi64>) -> tensor<1x4x8xf32>
// MB-LABEL: func.func @two_layers(
// MB-SAME: %arg0: tensor<2x4xi64>) -> (tensor<2x4x8xf32> {meshc.stage = 1 : i64})
// MB: dfg.slice %arg0 starts = [0] ends = [1] axes = [0]
// MB: call @two_layers_stage0
// MB: shard.send
// MB: shard.recv
// MB: call @two_layers_stage1
// MB: dfg.slice %arg0 starts = [1] ends = [2] axes = [0]
// MB: call @two_layers_stage0
// MB: shard.send
// MB: shard.recv
// MB: call @two_layers_stage1
// MB: dfg.concat {{.*}} axis = 0 {meshc.stage = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
func.func @two_layers(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 8192, length = 512] : tensor<16x8xf32>
  %wq0 = dfg.weight "l0.q" in "w.bin" [offset = 0, length = 256] : tensor<8x8xf32>
  %wk0 = dfg.weight "l0.k" in "w.bin" [offset = 256, length = 256] : tensor<8x8xf32>
  %wv0 = dfg.weight "l0.v" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %wo0 = dfg.weight "l0.o" in "w.bin" [offset = 768, length = 256] : tensor<8x8xf32>
  %wq1 = dfg.weight "l1.q" in "w.bin" [offset = 1024, length = 256] : tensor<8x8xf32>
  %wk1 = dfg.weight "l1.k" in "w.bin" [offset = 1280, length = 256] : tensor<8x8xf32>
  %wv1 = dfg.weight "l1.v" in "w.bin" [offset = 1536, length = 256] : tensor<8x8xf32>
  %wo1 = dfg.weight "l1.o" in "w.bin" [offset = 1792, length = 256] : tensor<8x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %q0 = dfg.linear %e, %wq0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k0 = dfg.linear %e, %wk0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v0 = dfg.linear %e, %wv0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr0 = dfg.reshape %q0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr0 = dfg.reshape %k0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr0 = dfg.reshape %v0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt0 = dfg.transpose %qr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt0 = dfg.transpose %kr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt0 = dfg.transpose %vr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a0 = dfg.attention %qt0, %kt0, %vt0 scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at0 = dfg.transpose %a0 perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am0 = dfg.reshape %at0 to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o0 = dfg.linear %am0, %wo0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %o0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q1 = dfg.linear %h0, %wq1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k1 = dfg.linear %h0, %wk1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v1 = dfg.linear %h0, %wv1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr1 = dfg.reshape %q1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr1 = dfg.reshape %k1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr1 = dfg.reshape %v1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt1 = dfg.transpose %qr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt1 = dfg.transpose %kr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt1 = dfg.transpose %vr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a1 = dfg.attention %qt1, %kt1, %vt1 scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at1 = dfg.transpose %a1 perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am1 = dfg.reshape %at1 to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o1 = dfg.linear %am1, %wo1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %h1 : tensor<2x4x8xf32>
}
}

// -----

// More stages than layers.
// expected-error @+2 {{pp=4 exceeds the 2 layers of the model (where tokens mix: its attentions, raised or not, and other ops that combine positions); use pp <= 2}}
module attributes {meshc.mesh = "pp=4"} {
func.func @too_deep(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 8192, length = 512] : tensor<16x8xf32>
  %wq0 = dfg.weight "l0.q" in "w.bin" [offset = 0, length = 256] : tensor<8x8xf32>
  %wk0 = dfg.weight "l0.k" in "w.bin" [offset = 256, length = 256] : tensor<8x8xf32>
  %wv0 = dfg.weight "l0.v" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %wo0 = dfg.weight "l0.o" in "w.bin" [offset = 768, length = 256] : tensor<8x8xf32>
  %wq1 = dfg.weight "l1.q" in "w.bin" [offset = 1024, length = 256] : tensor<8x8xf32>
  %wk1 = dfg.weight "l1.k" in "w.bin" [offset = 1280, length = 256] : tensor<8x8xf32>
  %wv1 = dfg.weight "l1.v" in "w.bin" [offset = 1536, length = 256] : tensor<8x8xf32>
  %wo1 = dfg.weight "l1.o" in "w.bin" [offset = 1792, length = 256] : tensor<8x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %q0 = dfg.linear %e, %wq0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k0 = dfg.linear %e, %wk0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v0 = dfg.linear %e, %wv0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr0 = dfg.reshape %q0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr0 = dfg.reshape %k0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr0 = dfg.reshape %v0 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt0 = dfg.transpose %qr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt0 = dfg.transpose %kr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt0 = dfg.transpose %vr0 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a0 = dfg.attention %qt0, %kt0, %vt0 scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at0 = dfg.transpose %a0 perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am0 = dfg.reshape %at0 to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o0 = dfg.linear %am0, %wo0 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %o0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q1 = dfg.linear %h0, %wq1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k1 = dfg.linear %h0, %wk1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v1 = dfg.linear %h0, %wv1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr1 = dfg.reshape %q1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr1 = dfg.reshape %k1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr1 = dfg.reshape %v1 to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt1 = dfg.transpose %qr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt1 = dfg.transpose %kr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt1 = dfg.transpose %vr1 perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a1 = dfg.attention %qt1, %kt1, %vt1 scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at1 = dfg.transpose %a1 perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am1 = dfg.reshape %at1 to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o1 = dfg.linear %am1, %wo1 transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %h1 : tensor<2x4x8xf32>
}
}

// -----

// RWKV's time shift (the sequence cut by a slice, a zero step joined in
// front) mixes tokens: each shift, with the projection after it, is a layer,
// though no attention or product of activations is there. Two layers, so
// pp=3 is refused (before slices kept the positions, 0 were found).
// expected-error @+2 {{pp=3 exceeds the 2 layers of the model (where tokens mix: its attentions, raised or not, and other ops that combine positions); use pp <= 2}}
module attributes {meshc.mesh = "pp=3"} {
func.func @time_shift_layers(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %w = dfg.weight "w" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %zero = dfg.constant dense<0.0> : tensor<2x1x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %c0 = dfg.slice %e starts = [0] ends = [-1] axes = [1] steps = [1] : (tensor<2x4x8xf32>) -> tensor<2x3x8xf32>
  %s0 = dfg.concat %zero, %c0 axis = 1 : (tensor<2x1x8xf32>, tensor<2x3x8xf32>) -> tensor<2x4x8xf32>
  %m0 = dfg.sub %s0, %e : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o0 = dfg.linear %m0, %w transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %o0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %c1 = dfg.slice %h0 starts = [0] ends = [-1] axes = [1] steps = [1] : (tensor<2x4x8xf32>) -> tensor<2x3x8xf32>
  %s1 = dfg.concat %zero, %c1 axis = 1 : (tensor<2x1x8xf32>, tensor<2x3x8xf32>) -> tensor<2x4x8xf32>
  %m1 = dfg.sub %s1, %h0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %o1 = dfg.linear %m1, %w transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %h1 : tensor<2x4x8xf32>
}
}

// -----

// Attention left as MatMul/Softmax/MatMul: its two products of activations
// are one layer, since the residual stream is not alone live between them;
// two layers, so pp=3 is refused.
// expected-error @+2 {{pp=3 exceeds the 2 layers of the model (where tokens mix: its attentions, raised or not, and other ops that combine positions); use pp <= 2}}
module attributes {meshc.mesh = "pp=3"} {
func.func @unraised_layers(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %w = dfg.weight "w" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %q0 = dfg.matmul %e, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k0 = dfg.matmul %e, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %kt0 = dfg.transpose %k0 perm = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s0 = dfg.matmul %q0, %kt0 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p0 = dfg.softmax %s0 axis = -1 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o0 = dfg.matmul %p0, %e : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %o0 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q1 = dfg.matmul %h0, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k1 = dfg.matmul %h0, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %kt1 = dfg.transpose %k1 perm = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s1 = dfg.matmul %q1, %kt1 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %p1 = dfg.softmax %s1 axis = -1 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %o1 = dfg.matmul %p1, %h0 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %h1 : tensor<2x4x8xf32>
}
}

// -----

// A bias every layer reads (CPM-Ant's relative position bias: looked up once
// from a table by buckets, added to each layer's scores) stays live from
// before the first layer to the last, so the residual stream is never alone
// live; the fewest producers live between the layers (the stream and the
// bias) mark where a layer ends. Two layers: one stage each (the batch
// split over dp).
module attributes {meshc.mesh = "dp=2,pp=2"} {
// CHECK-LABEL: func.func private @shared_bias_layers_stage0(
// CHECK: dfg.softmax
// CHECK-NOT: dfg.softmax
// CHECK: return
// CHECK-LABEL: func.func private @shared_bias_layers_stage1(
// CHECK: dfg.softmax
// CHECK-NOT: dfg.softmax
// CHECK: return
func.func @shared_bias_layers(%ids: tensor<4x4xi64>, %buckets: tensor<4x4x4xi64>) -> tensor<4x4x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %w = dfg.weight "w" in "w.bin" [offset = 512, length = 256] : tensor<8x8xf32>
  %bt = dfg.weight "bias" in "w.bin" [offset = 768, length = 32] : tensor<8x1xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<4x4xi64>) -> tensor<4x4x8xf32>
  %b = dfg.embedding %bt, %buckets : (tensor<8x1xf32>, tensor<4x4x4xi64>) -> tensor<4x4x4x1xf32>
  %bias = dfg.reshape %b to [4, 4, 4] : (tensor<4x4x4x1xf32>) -> tensor<4x4x4xf32>
  %q0 = dfg.matmul %e, %w : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> tensor<4x4x8xf32>
  %k0 = dfg.matmul %e, %w : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> tensor<4x4x8xf32>
  %kt0 = dfg.transpose %k0 perm = [0, 2, 1] : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %s0 = dfg.matmul %q0, %kt0 : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %sb0 = dfg.add %s0, %bias : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %p0 = dfg.softmax %sb0 axis = -1 : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o0 = dfg.matmul %p0, %e : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %h0 = dfg.add %e, %o0 : (tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %q1 = dfg.matmul %h0, %w : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> tensor<4x4x8xf32>
  %k1 = dfg.matmul %h0, %w : (tensor<4x4x8xf32>, tensor<8x8xf32>) -> tensor<4x4x8xf32>
  %kt1 = dfg.transpose %k1 perm = [0, 2, 1] : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %s1 = dfg.matmul %q1, %kt1 : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %sb1 = dfg.add %s1, %bias : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %p1 = dfg.softmax %sb1 axis = -1 : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o1 = dfg.matmul %p1, %h0 : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  %h1 = dfg.add %h0, %o1 : (tensor<4x4x8xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  return %h1 : tensor<4x4x8xf32>
}
}

// -----

// A short-convolution layer (LFM2's: the sequence padded by a concat, three
// taps sliced from it) before an attention layer: the concat combines
// positions, so the convolution is a layer, and pp=2 gives one stage each.
// The closing slice of the first token (a pooler's) only picks positions:
// no third layer.
module attributes {meshc.mesh = "pp=2,tp=2"} {
// CHECK-LABEL: func.func private @conv_then_attention_stage0(
// CHECK: dfg.concat
// CHECK-NOT: dfg.attention
// CHECK: return
// CHECK-LABEL: func.func private @conv_then_attention_stage1(
// CHECK-NOT: dfg.concat
// CHECK: dfg.attention
// CHECK: return
func.func @conv_then_attention(%ids: tensor<2x4xi64>) -> tensor<2x1x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %c0 = dfg.weight "conv.0" in "w.bin" [offset = 512, length = 32] : tensor<8xf32>
  %c1 = dfg.weight "conv.1" in "w.bin" [offset = 544, length = 32] : tensor<8xf32>
  %c2 = dfg.weight "conv.2" in "w.bin" [offset = 576, length = 32] : tensor<8xf32>
  %wq = dfg.weight "q" in "w.bin" [offset = 608, length = 256] : tensor<8x8xf32>
  %wk = dfg.weight "k" in "w.bin" [offset = 864, length = 256] : tensor<8x8xf32>
  %wv = dfg.weight "v" in "w.bin" [offset = 1120, length = 256] : tensor<8x8xf32>
  %wo = dfg.weight "o" in "w.bin" [offset = 1376, length = 256] : tensor<8x8xf32>
  %zero = dfg.constant dense<0.0> : tensor<2x2x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %pad = dfg.concat %zero, %e axis = 1 : (tensor<2x2x8xf32>, tensor<2x4x8xf32>) -> tensor<2x6x8xf32>
  %t0 = dfg.slice %pad starts = [0] ends = [4] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %t1 = dfg.slice %pad starts = [1] ends = [5] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %t2 = dfg.slice %pad starts = [2] ends = [6] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %m0 = dfg.mul %t0, %c0 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m1 = dfg.mul %t1, %c1 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m2 = dfg.mul %t2, %c2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %s01 = dfg.add %m0, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %conv = dfg.add %s01, %m2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %conv : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q = dfg.linear %h0, %wq transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = dfg.linear %h0, %wk transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v = dfg.linear %h0, %wv transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr = dfg.reshape %q to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr = dfg.reshape %k to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr = dfg.reshape %v to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt = dfg.transpose %qr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = dfg.transpose %kr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt = dfg.transpose %vr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a = dfg.attention %qt, %kt, %vt scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at = dfg.transpose %a perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am = dfg.reshape %at to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o = dfg.linear %am, %wo transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %first = dfg.slice %h1 starts = [0] ends = [1] axes = [1] steps = [1] : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  return %first : tensor<2x1x8xf32>
}
}

// -----

// The same two layers on pp=3: refused.
// expected-error @+2 {{pp=3 exceeds the 2 layers of the model}}
module attributes {meshc.mesh = "pp=3"} {
func.func @conv_then_attention(%ids: tensor<2x4xi64>) -> tensor<2x1x8xf32> {
  %table = dfg.weight "table" in "w.bin" [offset = 0, length = 512] : tensor<16x8xf32>
  %c0 = dfg.weight "conv.0" in "w.bin" [offset = 512, length = 32] : tensor<8xf32>
  %c1 = dfg.weight "conv.1" in "w.bin" [offset = 544, length = 32] : tensor<8xf32>
  %c2 = dfg.weight "conv.2" in "w.bin" [offset = 576, length = 32] : tensor<8xf32>
  %wq = dfg.weight "q" in "w.bin" [offset = 608, length = 256] : tensor<8x8xf32>
  %wk = dfg.weight "k" in "w.bin" [offset = 864, length = 256] : tensor<8x8xf32>
  %wv = dfg.weight "v" in "w.bin" [offset = 1120, length = 256] : tensor<8x8xf32>
  %wo = dfg.weight "o" in "w.bin" [offset = 1376, length = 256] : tensor<8x8xf32>
  %zero = dfg.constant dense<0.0> : tensor<2x2x8xf32>
  %e = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %pad = dfg.concat %zero, %e axis = 1 : (tensor<2x2x8xf32>, tensor<2x4x8xf32>) -> tensor<2x6x8xf32>
  %t0 = dfg.slice %pad starts = [0] ends = [4] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %t1 = dfg.slice %pad starts = [1] ends = [5] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %t2 = dfg.slice %pad starts = [2] ends = [6] axes = [1] steps = [1] : (tensor<2x6x8xf32>) -> tensor<2x4x8xf32>
  %m0 = dfg.mul %t0, %c0 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m1 = dfg.mul %t1, %c1 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %m2 = dfg.mul %t2, %c2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %s01 = dfg.add %m0, %m1 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %conv = dfg.add %s01, %m2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %h0 = dfg.add %e, %conv : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %q = dfg.linear %h0, %wq transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = dfg.linear %h0, %wk transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v = dfg.linear %h0, %wv transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %qr = dfg.reshape %q to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kr = dfg.reshape %k to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vr = dfg.reshape %v to [2, 4, 2, 4] : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qt = dfg.transpose %qr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = dfg.transpose %kr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %vt = dfg.transpose %vr perm = [0, 2, 1, 3] : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %a = dfg.attention %qt, %kt, %vt scale = 0.5 causal = true : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %at = dfg.transpose %a perm = [0, 2, 1, 3] : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %am = dfg.reshape %at to [2, 4, 8] : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  %o = dfg.linear %am, %wo transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %h1 = dfg.add %h0, %o : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %first = dfg.slice %h1 starts = [0] ends = [1] axes = [1] steps = [1] : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  return %first : tensor<2x1x8xf32>
}
}
