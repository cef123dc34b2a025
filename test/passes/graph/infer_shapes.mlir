// RUN: meshc-opt %s --split-input-file --meshc-graph-infer-shapes --verify-diagnostics | FileCheck %s

// Results and the function signature are refined in program order.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: -> tensor<2x4x8x16xf32>
func.func @chain(%x: tensor<2x8x64xf32>, %b: tensor<64xf32>) -> tensor<?x?x?x?xf32> {
  // CHECK: %[[W:.+]] = dfg.weight
  %w = dfg.weight "w" in "model.onnx.data" [offset = 0, length = 16384] : tensor<64x64xf32>
  // CHECK: %[[MM:.+]] = dfg.matmul %{{.+}}, %[[W]] : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<2x8x64xf32>
  %0 = dfg.matmul %x, %w : (tensor<2x8x64xf32>, tensor<64x64xf32>) -> tensor<?x?x?xf32>
  // CHECK: %[[ADD:.+]] = dfg.add %[[MM]], %{{.+}} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %1 = dfg.add %0, %b : (tensor<?x?x?xf32>, tensor<64xf32>) -> tensor<?x?x?xf32>
  // CHECK: %[[R:.+]] = dfg.reshape %[[ADD]] to [0, 0, 4, -1] : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %2 = dfg.reshape %1 to [0, 0, 4, -1] : (tensor<?x?x?xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: %[[T:.+]] = dfg.transpose %[[R]] perm = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %3 = dfg.transpose %2 perm = [0, 2, 1, 3] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: %[[S:.+]] = dfg.softmax %[[T]] axis = -1 : (tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %4 = dfg.softmax %3 axis = -1 : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: return %[[S]] : tensor<2x4x8x16xf32>
  return %4 : tensor<?x?x?x?xf32>
}

// -----

// Declared static dimensions are kept where inference knows less; dynamic
// input dimensions stay dynamic.
// CHECK-LABEL: func.func @keeps_declared
// CHECK-SAME: -> (tensor<?x8x4x16xf32>, tensor<3x?x?xf32>)
func.func @keeps_declared(%x: tensor<?x8x64xf32>, %y: tensor<?x?x?xf32>) -> (tensor<?x?x?x?xf32>, tensor<3x?x?xf32>) {
  // CHECK: dfg.reshape %{{.+}} to [0, 0, 4, -1] : (tensor<?x8x64xf32>) -> tensor<?x8x4x16xf32>
  %0 = dfg.reshape %x to [0, 0, 4, -1] : (tensor<?x8x64xf32>) -> tensor<?x?x?x?xf32>
  // CHECK: dfg.softmax %{{.+}} axis = 0 : (tensor<?x?x?xf32>) -> tensor<3x?x?xf32>
  %1 = dfg.softmax %y axis = 0 : (tensor<?x?x?xf32>) -> tensor<3x?x?xf32>
  return %0, %1 : tensor<?x?x?x?xf32>, tensor<3x?x?xf32>
}

// -----

// A user outside dfg keeps the type it was built against through a cast.
// CHECK-LABEL: func.func @foreign_user
func.func @foreign_user(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<?x?xf32> {
  // CHECK: %[[A:.+]] = dfg.add %{{.+}}, %{{.+}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: %[[C:.+]] = tensor.cast %[[A]] : tensor<2x3xf32> to tensor<?x?xf32>
  // CHECK: tensor.dim %[[C]]
  %0 = dfg.add %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<?x?xf32>
  %c0 = arith.constant 0 : index
  %d = tensor.dim %0, %c0 : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// A function with callers keeps its signature; the returned value is cast.
// CHECK-LABEL: func.func @callee
// CHECK-SAME: -> tensor<?xf32>
// CHECK: %[[A:.+]] = dfg.add {{.+}} -> tensor<4xf32>
// CHECK: %[[C:.+]] = tensor.cast %[[A]] : tensor<4xf32> to tensor<?xf32>
// CHECK: return %[[C]] : tensor<?xf32>
func.func @callee(%x: tensor<4xf32>) -> tensor<?xf32> {
  %0 = dfg.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
// CHECK-LABEL: func.func @caller
// CHECK: call @callee(%{{.+}}) : (tensor<4xf32>) -> tensor<?xf32>
func.func @caller(%x: tensor<4xf32>) -> tensor<?xf32> {
  %0 = func.call @callee(%x) : (tensor<4xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
