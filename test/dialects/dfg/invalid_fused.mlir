// RUN: meshc-opt %s --split-input-file --verify-diagnostics

// One negative test per numbered invariant of dfg.fused_elementwise
// (DfgFusedOps.td), and a round trip of a valid one.

// A valid op parses and verifies.
func.func @fused_valid(%x: tensor<2x8xf16>, %b: tensor<8xf16>) -> tensor<2x8xf16> {
  %y = dfg.fused_elementwise(%x, %b) : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16> {
  ^bb0(%a: tensor<2x8xf16>, %c: tensor<8xf16>):
    %s = dfg.add %a, %c : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
    %g = dfg.gelu %s exact = false : (tensor<2x8xf16>) -> tensor<2x8xf16>
    dfg.yield %g : tensor<2x8xf16>
  }
  return %y : tensor<2x8xf16>
}

// -----

func.func @fused_invariant_1(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{body argument #0 is 'tensor<2x8xf16>', input is 'tensor<2x8xf32>'}}
  %y = dfg.fused_elementwise(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<2x8xf16>):
    %c = dfg.cast %a to f32 : (tensor<2x8xf16>) -> tensor<2x8xf32>
    dfg.yield %c : tensor<2x8xf32>
  }
  return %y : tensor<2x8xf32>
}

// -----

func.func @fused_invariant_2(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{body holds dfg.softmax, which is not a fusible elementwise op}}
  %y = dfg.fused_elementwise(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<2x8xf32>):
    %s = dfg.softmax %a axis = -1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
    dfg.yield %s : tensor<2x8xf32>
  }
  return %y : tensor<2x8xf32>
}

// -----

func.func @fused_invariant_3(%x: tensor<2x8xf32>, %z: tensor<3xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{input 'tensor<3xf32>' does not broadcast to the result shape}}
  %y = dfg.fused_elementwise(%x, %z) : (tensor<2x8xf32>, tensor<3xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<2x8xf32>, %c: tensor<3xf32>):
    %n = dfg.neg %a : (tensor<2x8xf32>) -> tensor<2x8xf32>
    dfg.yield %n : tensor<2x8xf32>
  }
  return %y : tensor<2x8xf32>
}

// -----

func.func @fused_invariant_4(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{has 9 inputs and 1 results; at most 8 and 4}}
  %y = dfg.fused_elementwise(%x, %x, %x, %x, %x, %x, %x, %x, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>, %c: tensor<2xf32>, %d: tensor<2xf32>, %e: tensor<2xf32>, %f: tensor<2xf32>, %g: tensor<2xf32>, %h: tensor<2xf32>, %i: tensor<2xf32>):
    %n = dfg.neg %a : (tensor<2xf32>) -> tensor<2xf32>
    dfg.yield %n : tensor<2xf32>
  }
  return %y : tensor<2xf32>
}

// -----

func.func @weight_invariant_5() -> tensor<4xi64> {
  // expected-error @+1 {{weight 'w' stored as 'f32' must be a conversion between two different floating-point types, not to 'i64'}}
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 16] stored f32 : tensor<4xi64>
  return %w : tensor<4xi64>
}

// -----

// dfg.wait (DfgFusedOps.td): a valid one, then one negative test per
// numbered invariant.
shard.grid @mesh(shape = 2)
func.func @wait_valid(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
  %w = dfg.wait %r : tensor<2x4xf32>
  return %w : tensor<2x4xf32>
}

// -----

func.func @wait_invariant_1(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %n = dfg.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{waits for a value that no collective produces}}
  %w = dfg.wait %n : tensor<2x4xf32>
  return %w : tensor<2x4xf32>
}

// -----

shard.grid @mesh(shape = 2)
func.func @wait_invariant_2(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
  // expected-error @+1 {{waits for a collective whose result has other uses}}
  %w = dfg.wait %r : tensor<2x4xf32>
  %a = dfg.add %r, %w : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %a : tensor<2x4xf32>
}
