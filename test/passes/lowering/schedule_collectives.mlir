// RUN: meshc-opt %s --split-input-file --meshc-lower-schedule-collectives | FileCheck %s
// RUN: meshc-opt %s --split-input-file --meshc-lower-schedule-collectives --meshc-lower-schedule-collectives | FileCheck %s
// RUN: meshc-opt %s --split-input-file --meshc-lower-schedule-collectives --verify-roundtrip > /dev/null

// An all-reduce moves up to its operand's producer, past an op it does not
// depend on (the concat runs while it is in flight); its readers read the
// wait placed before the first of them. Running the pass twice changes
// nothing (second RUN line).
// CHECK-LABEL: func.func @issue_early_wait_late
// CHECK: %[[P:.+]] = dfg.linear
// CHECK-NEXT: %[[R:.+]] = shard.all_reduce %[[P]]
// CHECK-NEXT: %[[C:.+]] = dfg.concat
// CHECK-NEXT: %[[W:.+]] = dfg.wait %[[R]] : tensor<2x8xf32>
// CHECK-NEXT: %[[A:.+]] = dfg.add %[[W]], %[[W]]
// CHECK-NEXT: %[[M:.+]] = dfg.mul %[[W]], %[[A]]
// CHECK-NEXT: return %[[M]], %[[C]]
shard.grid @mesh(shape = 2)
func.func @issue_early_wait_late(%x: tensor<2x4xf32>, %w: tensor<4x8xf32>, %k: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<4x8xf32>) {
  %p = dfg.linear %x, %w transpose_weight = false : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %c = dfg.concat %k, %k axis = 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %r = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<2x8xf32> -> tensor<2x8xf32>
  %a = dfg.add %r, %r : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %m = dfg.mul %r, %a : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %m, %c : tensor<2x8xf32>, tensor<4x8xf32>
}

// -----

// Collectives keep their order: the second all-gather, whose operand is
// ready first, stays after the first one; a result the function returns is
// waited for before the return.
// CHECK-LABEL: func.func @collectives_keep_their_order
// CHECK: %[[N:.+]] = dfg.neg
// CHECK-NEXT: %[[E:.+]] = dfg.exp
// CHECK-NEXT: %[[A:.+]] = shard.all_gather %[[E]] on
// CHECK-NEXT: %[[B:.+]] = shard.all_gather %[[N]] on
// CHECK-NEXT: %[[WA:.+]] = dfg.wait %[[A]]
// CHECK-NEXT: %[[WB:.+]] = dfg.wait %[[B]]
// CHECK-NEXT: return %[[WA]], %[[WB]]
shard.grid @mesh(shape = 2)
func.func @collectives_keep_their_order(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %n = dfg.neg %y : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %e = dfg.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = shard.all_gather %e on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %b = shard.all_gather %n on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  return %a, %b : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A rank program's pipeline under tp: the first microbatch's send stays
// after the call that produces it and is waited for at the end, so it is in
// flight during the second call; the receive does not overtake the calls,
// whose stage holds an all-reduce; it is waited for before the call that
// reads it.
// CHECK-LABEL: func.func @sends_overlap_the_next_call
// CHECK: %[[C1:.+]] = call @stage(%{{.+}})
// CHECK-NEXT: %[[S1:.+]] = shard.send %[[C1]]
// CHECK-NEXT: %[[C2:.+]] = call @stage(%{{.+}})
// CHECK-NEXT: %[[S2:.+]] = shard.send %[[C2]]
// CHECK-NEXT: %[[E:.+]] = tensor.empty
// CHECK-NEXT: %[[R:.+]] = shard.recv %[[E]]
// CHECK-NEXT: %[[WR:.+]] = dfg.wait %[[R]]
// CHECK-NEXT: %[[C3:.+]] = call @stage(%[[WR]])
// CHECK-NEXT: dfg.wait %[[S1]]
// CHECK-NEXT: dfg.wait %[[S2]]
// CHECK-NEXT: return %[[C3]]
shard.grid @mesh(shape = 2)
func.func private @stage(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %n = dfg.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = shard.all_reduce %n on @mesh grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
func.func @sends_overlap_the_next_call(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c1 = call @stage(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s1 = shard.send %c1 on @mesh grid_axes = [0] destination = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c2 = call @stage(%y) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s2 = shard.send %c2 on @mesh grid_axes = [0] destination = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %r = shard.recv %e on @mesh grid_axes = [0] source = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c3 = call @stage(%r) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c3 : tensor<2x4xf32>
}

// -----

// The last stage of a pipeline without tp: its stage holds no collective, so
// the second microbatch's receive (with its buffer) moves ahead of the first
// microbatch's call and arrives while it runs.
// CHECK-LABEL: func.func @receives_overtake_calls_without_collectives
// CHECK: %[[E0:.+]] = tensor.empty
// CHECK-NEXT: %[[R0:.+]] = shard.recv %[[E0]]
// CHECK-NEXT: %[[E1:.+]] = tensor.empty
// CHECK-NEXT: %[[R1:.+]] = shard.recv %[[E1]]
// CHECK-NEXT: %[[W0:.+]] = dfg.wait %[[R0]]
// CHECK-NEXT: %[[C0:.+]] = call @free(%[[W0]])
// CHECK-NEXT: %[[W1:.+]] = dfg.wait %[[R1]]
// CHECK-NEXT: %[[C1:.+]] = call @free(%[[W1]])
// CHECK-NEXT: dfg.concat %[[C0]], %[[C1]]
shard.grid @mesh(shape = 2)
func.func private @free(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %n = dfg.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %n : tensor<2x4xf32>
}
func.func @receives_overtake_calls_without_collectives() -> tensor<4x4xf32> {
  %e0 = tensor.empty() : tensor<2x4xf32>
  %r0 = shard.recv %e0 on @mesh grid_axes = [0] source = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c0 = call @free(%r0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %e1 = tensor.empty() : tensor<2x4xf32>
  %r1 = shard.recv %e1 on @mesh grid_axes = [0] source = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c1 = call @free(%r1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %cat = dfg.concat %c0, %c1 axis = 0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  return %cat : tensor<4x4xf32>
}

// -----

// An SPMD program's send -> recv pair (before meshc-shard-specialize-rank) is left
// as it is: the receive reads the send's result.
// CHECK-LABEL: func.func @spmd_pairs_stay
// CHECK: %[[S:.+]] = shard.send
// CHECK-NEXT: %[[R:.+]] = shard.recv %[[S]]
// CHECK-NEXT: return %[[R]]
// CHECK-NOT: dfg.wait
shard.grid @mesh(shape = 2)
func.func @spmd_pairs_stay(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = shard.send %x on @mesh grid_axes = [0] destination = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = shard.recv %s on @mesh grid_axes = [0] source = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
