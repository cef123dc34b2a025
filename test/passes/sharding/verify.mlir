// RUN: meshc-opt %s --split-input-file --verify-diagnostics --meshc-shard-verify | FileCheck %s

// A consistent program passes unchanged.
shard.grid @mesh(shape = 2x2) {meshc.axes = ["dp", "tp"]}
// CHECK-LABEL: func.func @ok
func.func @ok(%x: tensor<2x4xf32> {meshc.sharding = #shard<axisarray[[0], [1]]>}) -> tensor<2x8xf32> {
  // CHECK: shard.all_gather
  %g = shard.all_gather %x on @mesh grid_axes = [1] gather_axis = 1 : tensor<2x4xf32> -> tensor<2x8xf32>
  %r = shard.all_reduce %g on @mesh grid_axes = [0] : tensor<2x8xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

shard.grid @mesh(shape = 2) {meshc.axes = ["tp"]}
func.func @gather_shape(%x: tensor<2x4xf32>) -> tensor<2x6xf32> {
  // (The shard dialect's own symbol verification reports collective shapes;
  // meshc-shard-verify repeats the check as a backstop.)
  // expected-error @+1 {{Dimension size mismatch for result axis 1. Expected 8, but got 6.}}
  %g = shard.all_gather %x on @mesh grid_axes = [0] gather_axis = 1 : tensor<2x4xf32> -> tensor<2x6xf32>
  return %g : tensor<2x6xf32>
}

// -----

shard.grid @mesh(shape = 2) {meshc.axes = ["tp"]}
func.func @slice_does_not_divide(%x: tensor<2x5xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{Operand dimension size 5 is not divisible by collective device group size 2 for tensor axis 1.}}
  %s = shard.all_slice %x on @mesh grid_axes = [0] slice_axis = 1 : tensor<2x5xf32> -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// -----

shard.grid @mesh(shape = 1x2) {meshc.axes = ["dp", "tp"]}
func.func @trivial_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'shard.all_reduce' op grid_axes names grid axis 0 (dp), whose size is 1}}
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

shard.grid @mesh(shape = 2) {meshc.axes = ["tp"]}
func.func @not_partitioned(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dfg.gelu' op still carries a planned sharding: run meshc-shard-partition first}}
  %g = dfg.gelu %x exact = true {meshc.sharding = [#shard<axisarray[[], [0]]>]} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %g : tensor<2x4xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {meshc.axes = ["dp", "tp"]}
// expected-error @+1 {{'func.func' op sharding names grid axis 1 twice}}
func.func @axis_twice(%x: tensor<2x2xf32> {meshc.sharding = #shard<axisarray[[1], [1]]>}) -> tensor<2x2xf32> {
  return %x : tensor<2x2xf32>
}

// -----

// expected-error @+1 {{no device mesh}}
module {
func.func @no_grid(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
}

// -----

// Pipeline stages: a receive must take the send addressed to its stage.
shard.grid @mesh(shape = 2) {meshc.axes = ["pp"]}
func.func private @f_stage0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {meshc.stage = 0 : i64} {
  return %x : tensor<2xf32>
}
func.func @wrong_source(%x: tensor<2xf32>) -> (tensor<2xf32> {meshc.stage = 1 : i64}) {
  %a = call @f_stage0(%x) {meshc.stage = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  %s = shard.send %a on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'shard.recv' op must receive the shard.send of stage 1 addressed to stage 1}}
  %r = shard.recv %s on @mesh grid_axes = [0] source = [1] {meshc.stage = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// A stage cannot read what another stage holds without a receive.
shard.grid @mesh(shape = 2) {meshc.axes = ["pp"]}
func.func private @g_stage0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {meshc.stage = 0 : i64} {
  return %x : tensor<2xf32>
}
func.func private @g_stage1(%x: tensor<2xf32>) -> tensor<2xf32> attributes {meshc.stage = 1 : i64} {
  return %x : tensor<2xf32>
}
func.func @no_transfer(%x: tensor<2xf32>) -> (tensor<2xf32> {meshc.stage = 1 : i64}) {
  %a = call @g_stage0(%x) {meshc.stage = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'func.call' op runs on stage 1 but reads a value held by stage 0}}
  %b = call @g_stage1(%a) {meshc.stage = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// A result is held where its meshc.stage says.
shard.grid @mesh(shape = 2) {meshc.axes = ["pp"]}
func.func private @h_stage0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {meshc.stage = 0 : i64} {
  return %x : tensor<2xf32>
}
func.func @wrong_owner(%x: tensor<2xf32>) -> (tensor<2xf32> {meshc.stage = 1 : i64}) {
  %a = call @h_stage0(%x) {meshc.stage = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{'func.return' op returns as result #0 a value held by stage 0, but the result says stage 1}}
  return %a : tensor<2xf32>
}

// -----

// Stage functions neither call nor send.
shard.grid @mesh(shape = 2) {meshc.axes = ["pp"]}
func.func private @k_stage0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {meshc.stage = 0 : i64} {
  // expected-error @+1 {{'shard.send' op sits in pipeline stage function @k_stage0; stages neither call nor send}}
  %s = shard.send %x on @mesh grid_axes = [0] destination = [1] {meshc.stage = 0 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return %s : tensor<2xf32>
}
