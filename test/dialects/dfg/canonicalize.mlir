// RUN: meshc-opt %s --split-input-file --canonicalize | FileCheck %s

// transpose(x, identity) -> x
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NOT: dfg.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = dfg.transpose %x perm = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// slice(x) taking every axis whole -> x: from 0 to an end at or past a
// static dimension, or of 2^40 or more on a symbolic one (exporters write
// INT64_MAX), step 1. Near misses stay: a start past 0, a step of 2, a
// smaller constant end on a symbolic dimension (clamped at run time).
// CHECK-LABEL: func.func @slice_whole
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32>)
// CHECK-COUNT-3: dfg.slice
// CHECK-NOT: dfg.slice
// CHECK: return %[[X]],
func.func @slice_whole(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x2xf32>, tensor<?x4xf32>) {
  %0 = dfg.slice %x starts = [0, 0] ends = [9223372036854775807, 4] axes = [0, 1] steps = [1, 1] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [1] steps = [1] : (tensor<?x4xf32>) -> tensor<?x3xf32>
  %2 = dfg.slice %x starts = [0] ends = [4] axes = [1] steps = [2] : (tensor<?x4xf32>) -> tensor<?x2xf32>
  %3 = dfg.slice %x starts = [0] ends = [8] axes = [0] steps = [1] : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0, %1, %2, %3 : tensor<?x4xf32>, tensor<?x3xf32>, tensor<?x2xf32>, tensor<?x4xf32>
}

// -----

// A real permutation stays.
// CHECK-LABEL: func.func @transpose_kept
// CHECK: dfg.transpose
func.func @transpose_kept(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = dfg.transpose %x perm = [1, 0] : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// reshape(x : T) -> x : T
// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf32>)
// CHECK-NOT: dfg.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.reshape %x to [0, -1] : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reshape of a dynamic shape is not known to be the identity.
// CHECK-LABEL: func.func @reshape_dynamic_kept
// CHECK: dfg.reshape
func.func @reshape_dynamic_kept(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = dfg.reshape %x to [-1, 4] : (tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Unused pure ops disappear; weights are references, never materialised.
// CHECK-LABEL: func.func @dead_and_live
// CHECK-NEXT: %[[W:.+]] = dfg.weight "w" in "w.bin" [offset = 0, length = 16] : tensor<4xf32>
// CHECK-NEXT: return %[[W]]
func.func @dead_and_live() -> tensor<4xf32> {
  %c = dfg.constant dense<[1, 2]> : tensor<2xi64>
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 16] : tensor<4xf32>
  %dead = dfg.weight "d" in "w.bin" [offset = 16, length = 16] : tensor<4xf32>
  return %w : tensor<4xf32>
}
