// RUN: meshc-opt %s --split-input-file --meshc-lower-fuse-elementwise | FileCheck %s
// RUN: meshc-opt %s --split-input-file --meshc-lower-fuse-elementwise --verify-roundtrip > /dev/null

// SwiGLU with its up projection between the silu and the product: the
// fused op takes the place of the mul, after both linears.
// CHECK-LABEL: func.func @swiglu
// CHECK: %[[G:.+]] = dfg.linear
// CHECK: %[[U:.+]] = dfg.linear
// CHECK-NEXT: %[[F:.+]] = dfg.fused_elementwise(%[[G]], %[[U]]) : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16> {
// CHECK-NEXT: ^bb0(%[[A:.+]]: tensor<2x8xf16>, %[[B:.+]]: tensor<2x8xf16>):
// CHECK-NEXT: %[[S:.+]] = dfg.silu %[[A]]
// CHECK-NEXT: %[[M:.+]] = dfg.mul %[[S]], %[[B]]
// CHECK-NEXT: dfg.yield %[[M]] : tensor<2x8xf16>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @swiglu(%x: tensor<2x4xf16>, %wg: tensor<4x8xf16>, %wu: tensor<4x8xf16>) -> tensor<2x8xf16> {
  %g = dfg.linear %x, %wg transpose_weight = false : (tensor<2x4xf16>, tensor<4x8xf16>) -> tensor<2x8xf16>
  %s = dfg.silu %g : (tensor<2x8xf16>) -> tensor<2x8xf16>
  %u = dfg.linear %x, %wu transpose_weight = false : (tensor<2x4xf16>, tensor<4x8xf16>) -> tensor<2x8xf16>
  %m = dfg.mul %s, %u : (tensor<2x8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  return %m : tensor<2x8xf16>
}

// -----

// Broadcast inputs (a bias row, a scalar) join; an intermediate used outside
// the chain becomes a second result; a cast between float types is part of
// the chain.
// CHECK-LABEL: func.func @broadcast_and_two_results
// CHECK: %[[F:.+]]:2 = dfg.fused_elementwise(%{{.+}}, %{{.+}}, %{{.+}}) : (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf16>)
// CHECK: dfg.add
// CHECK-NEXT: dfg.mul
// CHECK-NEXT: dfg.tanh
// CHECK-NEXT: dfg.cast
// CHECK-NEXT: dfg.yield
// CHECK: dfg.reduce_sum %[[F]]#0
// CHECK: return %[[F]]#1
func.func @broadcast_and_two_results(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<f32>) -> (tensor<4x8xf16>, tensor<4x1xf32>) {
  %a = dfg.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %m = dfg.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = dfg.tanh %m : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = dfg.cast %t to f16 : (tensor<4x8xf32>) -> tensor<4x8xf16>
  %r = dfg.reduce_sum %m axes = [1] keep_dims = true : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %h, %r : tensor<4x8xf16>, tensor<4x1xf32>
}

// -----

// An outside op between two links of a chain reads the first link: fusing
// the second would move the first after its reader, so the chain stops.
// Integer ops and single ops stay unfused.
// CHECK-LABEL: func.func @reader_in_between
// CHECK-NOT: dfg.fused_elementwise
// CHECK: dfg.exp
// CHECK-NEXT: dfg.reduce_max
// CHECK-NEXT: dfg.sub
// CHECK-NEXT: dfg.add
func.func @reader_in_between(%x: tensor<4x8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xi64>) {
  %e = dfg.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = dfg.reduce_max %e axes = [1] keep_dims = true : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %s = dfg.sub %e, %r : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %j = dfg.add %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %s, %j : tensor<4x8xf32>, tensor<4xi64>
}
