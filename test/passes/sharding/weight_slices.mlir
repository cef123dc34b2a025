// RUN: meshc-opt %s --meshc-shard-specialize-rank=rank=0 | FileCheck %s

// Slices of values made from a weight by views and concats move onto the
// weight (meshc-shard-specialize-rank, passes/sharding/WeightSlices.cpp).
// CHECK-LABEL: func.func @direct
// CHECK: %[[W:.+]] = dfg.weight "w"
// CHECK: %[[Z:.+]] = dfg.constant dense<0.000000e+00> : tensor<8x4xf32>
// A slice across a concat: the part of the weight it reaches, then the
// zeros (taken whole).
// CHECK: %[[A:.+]] = dfg.slice %[[W]] starts = [10] ends = [12] axes = [1] steps = [1] : (tensor<8x12xf32>) -> tensor<8x2xf32>
// CHECK: dfg.concat %[[A]], %[[Z]] axis = 1 : (tensor<8x2xf32>, tensor<8x4xf32>) -> tensor<8x6xf32>
// One index of the outer dimension of a split, all of the inner: a run of
// columns.
// CHECK: dfg.slice %[[W]] starts = [4] ends = [8] axes = [1] steps = [1] : (tensor<8x12xf32>) -> tensor<8x4xf32>
// One element of each block of a split: a strided run.
// CHECK: dfg.slice %[[W]] starts = [1] ends = [10] axes = [1] steps = [4] : (tensor<8x12xf32>) -> tensor<8x3xf32>
// Two slices of a merge, composed: whole rows of the weight.
// CHECK: dfg.slice %[[W]] starts = [3] ends = [4] axes = [0] steps = [1] : (tensor<8x12xf32>) -> tensor<1x12xf32>
// Part of one row of a merge.
// CHECK: dfg.slice %[[W]] starts = [0, 5] ends = [1, 8] axes = [0, 1] steps = [1, 1] : (tensor<8x12xf32>) -> tensor<1x3xf32>
// A slice of a merge that crosses rows without covering them stays.
// CHECK: dfg.slice %{{.+}} starts = [10] ends = [14] axes = [0] steps = [1] : (tensor<96xf32>) -> tensor<4xf32>
module {
shard.grid @mesh(shape = 2) {meshc.axes = ["tp"]}
func.func @direct(%x: tensor<2x8xf32>) -> (tensor<2x6xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<4xf32>) {
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 384] : tensor<8x12xf32>
  %z = dfg.constant dense<0.0> : tensor<8x4xf32>
  %p = dfg.concat %w, %z axis = 1 : (tensor<8x12xf32>, tensor<8x4xf32>) -> tensor<8x16xf32>
  %a = dfg.slice %p starts = [10] ends = [16] axes = [1] steps = [1] : (tensor<8x16xf32>) -> tensor<8x6xf32>
  %ya = dfg.linear %x, %a transpose_weight = false : (tensor<2x8xf32>, tensor<8x6xf32>) -> tensor<2x6xf32>
  %v = dfg.reshape %w to [8, 3, 4] : (tensor<8x12xf32>) -> tensor<8x3x4xf32>
  %b = dfg.slice %v starts = [1, 0] ends = [2, 4] axes = [1, 2] steps = [1, 1] : (tensor<8x3x4xf32>) -> tensor<8x1x4xf32>
  %b2 = dfg.reshape %b to [8, 4] : (tensor<8x1x4xf32>) -> tensor<8x4xf32>
  %yb = dfg.linear %x, %b2 transpose_weight = false : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  %c = dfg.slice %v starts = [0, 1] ends = [3, 2] axes = [1, 2] steps = [1, 1] : (tensor<8x3x4xf32>) -> tensor<8x3x1xf32>
  %c2 = dfg.reshape %c to [8, 3] : (tensor<8x3x1xf32>) -> tensor<8x3xf32>
  %yc = dfg.linear %x, %c2 transpose_weight = false : (tensor<2x8xf32>, tensor<8x3xf32>) -> tensor<2x3xf32>
  %m = dfg.reshape %w to [96] : (tensor<8x12xf32>) -> tensor<96xf32>
  %d = dfg.slice %m starts = [24] ends = [48] axes = [0] steps = [1] : (tensor<96xf32>) -> tensor<24xf32>
  %d2 = dfg.slice %d starts = [12] ends = [24] axes = [0] steps = [1] : (tensor<24xf32>) -> tensor<12xf32>
  %d3 = dfg.reshape %d2 to [4, 3] : (tensor<12xf32>) -> tensor<4x3xf32>
  %e = dfg.slice %m starts = [5] ends = [8] axes = [0] steps = [1] : (tensor<96xf32>) -> tensor<3xf32>
  %ye = dfg.add %yc, %e : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %f = dfg.slice %m starts = [10] ends = [14] axes = [0] steps = [1] : (tensor<96xf32>) -> tensor<4xf32>
  return %ya, %yb, %yc, %d3, %ye, %f : tensor<2x6xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<4xf32>
}
}
