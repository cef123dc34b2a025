// RUN: meshc-opt %s --split-input-file --meshc-graph-fold-constants | FileCheck %s

// Chains on literals fold in one sweep; ops reading a float weight or a
// function argument stay.
// CHECK-LABEL: func.func @fold_chain
// CHECK-SAME: (%[[X:.+]]: tensor<2xf32>)
// CHECK-NOT: dfg.slice
// CHECK-DAG: %[[C:.+]] = dfg.constant dense<[3.000000e+00, 8.000000e+00]> : tensor<2xf32>
// CHECK-DAG: %[[W:.+]] = dfg.weight "w"
// CHECK-NEXT: %[[Y:.+]] = dfg.mul %[[W]], %[[C]]
// CHECK-NEXT: %[[Z:.+]] = dfg.add %[[X]], %[[Y]]
// CHECK-NEXT: return %[[Z]]
func.func @fold_chain(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = dfg.constant dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>
  %s = dfg.slice %a starts = [1] ends = [3] axes = [1] steps = [1] : (tensor<1x4xf32>) -> tensor<1x2xf32>
  %r = dfg.reshape %s to [2] : (tensor<1x2xf32>) -> tensor<2xf32>
  %one = dfg.constant dense<1.0> : tensor<f32>
  %t = dfg.mul %r, %r : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %c = dfg.sub %t, %one : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %w = dfg.weight "w" in "m.bin" [offset = 0, length = 8] : tensor<2xf32>
  %y = dfg.mul %w, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %z = dfg.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %z : tensor<2xf32>
}

// -----

// INT64_MAX ("to the end") is beyond what a double holds exactly: a view
// (or concat, or integer cast) of it folds on the integers themselves, exact;
// an op that computes with it is left to run time.
// CHECK-LABEL: func.func @inexact_integers
// CHECK: dfg.constant dense<9223372036854775807> : tensor<1xi64>
// CHECK-NOT: dfg.unsqueeze
// CHECK: dfg.add
func.func @inexact_integers() -> (tensor<1xi64>, tensor<1xi64>) {
  %e = dfg.constant dense<9223372036854775807> : tensor<i64>
  %u = dfg.unsqueeze %e axes = [0] : (tensor<i64>) -> tensor<1xi64>
  %m = dfg.constant dense<-1> : tensor<1xi64>
  %s = dfg.add %u, %m : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %u, %s : tensor<1xi64>, tensor<1xi64>
}
