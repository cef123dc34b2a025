// RUN: meshc-opt %s --split-input-file --meshc-graph-convert-dtype=dtype=f16 --canonicalize | FileCheck %s
// RUN: meshc-opt %s --split-input-file --meshc-graph-convert-dtype=dtype=bf16 --canonicalize | FileCheck %s --check-prefix=BF16
// RUN: not meshc-opt %s --split-input-file --meshc-graph-convert-dtype=dtype=f64 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: unknown dtype 'f64' (expected f32, f16 or bf16)

// The signature stays; the body computes in f16. Weights become references
// stored as f32, literals are converted (saturating: finfo(f32).min becomes
// -65504, not -inf), integer tensors are untouched, and the model's own cast
// to f32 now casts to f16 and folds away.
// CHECK-LABEL: func.func @body
// CHECK-SAME: (%[[X:.+]]: tensor<2x4xf32>, %[[I:.+]]: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2xi64>)
// CHECK-DAG: %[[XH:.+]] = dfg.cast %[[X]] to f16 : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-DAG: %[[M:.+]] = dfg.constant dense<-6.550400e+04> : tensor<f16>
// CHECK-DAG: %[[W:.+]] = dfg.weight "w" in "m.bin" [offset = 0, length = 48] stored f32 : tensor<4x3xf16>
// CHECK: %[[Y:.+]] = dfg.linear %[[XH]], %[[W]] transpose_weight = false : (tensor<2x4xf16>, tensor<4x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[Z:.+]] = dfg.add %[[Y]], %[[M]] : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[R:.+]] = dfg.cast %[[Z]] to f32 : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[R]], %[[I]] : tensor<2x3xf32>, tensor<2xi64>

// BF16-LABEL: func.func @body
// BF16-DAG: dfg.constant dense<-3.389530e+38> : tensor<bf16>
// BF16-DAG: dfg.weight "w" in "m.bin" [offset = 0, length = 48] stored f32 : tensor<4x3xbf16>
// BF16: dfg.cast %{{.+}} to f32 : (tensor<2x3xbf16>) -> tensor<2x3xf32>
func.func @body(%x: tensor<2x4xf32>, %i: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2xi64>) {
  %w = dfg.weight "w" in "m.bin" [offset = 0, length = 48] : tensor<4x3xf32>
  %y = dfg.linear %x, %w transpose_weight = false : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %m = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %z = dfg.add %y, %m : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %f = dfg.cast %z to f32 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %f, %i : tensor<2x3xf32>, tensor<2xi64>
}

// -----

// A weight already stored as f16 that is converted to f16 reads its file as
// it is; an integer cast to a float now casts to the target.
// CHECK-LABEL: func.func @stored_and_int_cast
// CHECK-DAG: dfg.weight "h" in "m.bin" [offset = 0, length = 8] : tensor<4xf16>
// CHECK-DAG: dfg.cast %{{.+}} to f16 : (tensor<4xi64>) -> tensor<4xf16>
// CHECK: dfg.mul {{.*}} -> tensor<4xf16>
// CHECK: dfg.cast %{{.+}} to f32 : (tensor<4xf16>) -> tensor<4xf32>
// BF16-LABEL: func.func @stored_and_int_cast
// BF16: dfg.weight "h" in "m.bin" [offset = 0, length = 8] stored f16 : tensor<4xbf16>
func.func @stored_and_int_cast(%p: tensor<4xi64>) -> tensor<4xf32> {
  %h = dfg.weight "h" in "m.bin" [offset = 0, length = 8] stored f16 : tensor<4xf32>
  %c = dfg.cast %p to f32 : (tensor<4xi64>) -> tensor<4xf32>
  %y = dfg.mul %h, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Calls keep the callee's signature on both sides.
// CHECK-LABEL: func.func @callee
// CHECK-SAME: (%[[A:.+]]: tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[AH:.+]] = dfg.cast %[[A]] to f16
// CHECK: dfg.neg %[[AH]] : (tensor<2xf16>) -> tensor<2xf16>
// CHECK-LABEL: func.func @caller
// CHECK: %[[XH:.+]] = dfg.cast %{{.+}} to f16
// CHECK: %[[T:.+]] = dfg.sqrt %[[XH]] : (tensor<2xf16>) -> tensor<2xf16>
// CHECK: %[[T32:.+]] = dfg.cast %[[T]] to f32
// CHECK: %[[C:.+]] = call @callee(%[[T32]]) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[CH:.+]] = dfg.cast %[[C]] to f16
// CHECK: dfg.exp %[[CH]] : (tensor<2xf16>) -> tensor<2xf16>
func.func @callee(%a: tensor<2xf32>) -> tensor<2xf32> {
  %n = dfg.neg %a : (tensor<2xf32>) -> tensor<2xf32>
  return %n : tensor<2xf32>
}
func.func @caller(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = dfg.sqrt %x : (tensor<2xf32>) -> tensor<2xf32>
  %c = call @callee(%t) : (tensor<2xf32>) -> tensor<2xf32>
  %e = dfg.exp %c : (tensor<2xf32>) -> tensor<2xf32>
  return %e : tensor<2xf32>
}
