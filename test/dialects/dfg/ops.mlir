// RUN: meshc-opt %s --split-input-file | meshc-opt --split-input-file | FileCheck %s
// RUN: meshc-opt %s --split-input-file --mlir-print-op-generic | meshc-opt --split-input-file | FileCheck %s

// Round trip of every dfg op in its custom form and in the generic form.

// CHECK-LABEL: func.func @weight_and_constant
func.func @weight_and_constant() -> (tensor<64x192xf32>, tensor<4xbf16>, tensor<3xi1>, tensor<2xi64>) {
  // CHECK: dfg.weight "h.0.attn.c_attn.weight" in "model.onnx.data" [offset = 4096, length = 49152] : tensor<64x192xf32>
  %w = dfg.weight "h.0.attn.c_attn.weight" in "model.onnx.data" [offset = 4096, length = 49152] : tensor<64x192xf32>
  // CHECK: dfg.weight "ln.g" in "weights/part-1.bin" [offset = 0, length = 8] : tensor<4xbf16>
  %g = dfg.weight "ln.g" in "weights/part-1.bin" [offset = 0, length = 8] : tensor<4xbf16>
  // CHECK: dfg.weight "mask" in "m.bin" [offset = 16, length = 3] : tensor<3xi1>
  %m = dfg.weight "mask" in "m.bin" [offset = 16, length = 3] : tensor<3xi1>
  // CHECK: dfg.constant dense<[0, -1]> : tensor<2xi64>
  %c = dfg.constant dense<[0, -1]> : tensor<2xi64>
  // A splat stores one value, so its size is not limited.
  // CHECK: dfg.constant dense<-1.000000e+04> : tensor<1x1x2048x2048xf32>
  %s = dfg.constant dense<-1.0e4> : tensor<1x1x2048x2048xf32>
  return %w, %g, %m, %c : tensor<64x192xf32>, tensor<4xbf16>, tensor<3xi1>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>, %[[W:.+]]: tensor<64x192xf32>, %[[V:.+]]: tensor<64xf16>, %[[M:.+]]: tensor<3x64xf16>)
func.func @matmul(%x: tensor<2x16x64xf32>, %w: tensor<64x192xf32>, %v: tensor<64xf16>, %m: tensor<3x64xf16>) -> (tensor<2x16x192xf32>, tensor<3xf16>, tensor<f16>) {
  // CHECK: dfg.matmul %[[X]], %[[W]] : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  %0 = dfg.matmul %x, %w : (tensor<2x16x64xf32>, tensor<64x192xf32>) -> tensor<2x16x192xf32>
  // CHECK: dfg.matmul %[[M]], %[[V]] : (tensor<3x64xf16>, tensor<64xf16>) -> tensor<3xf16>
  %1 = dfg.matmul %m, %v : (tensor<3x64xf16>, tensor<64xf16>) -> tensor<3xf16>
  // CHECK: dfg.matmul %[[V]], %[[V]] : (tensor<64xf16>, tensor<64xf16>) -> tensor<f16>
  %2 = dfg.matmul %v, %v : (tensor<64xf16>, tensor<64xf16>) -> tensor<f16>
  return %0, %1, %2 : tensor<2x16x192xf32>, tensor<3xf16>, tensor<f16>
}

// -----

// CHECK-LABEL: func.func @matmul_batch_broadcast_dynamic
func.func @matmul_batch_broadcast_dynamic(%a: tensor<?x1x8x16xf32>, %b: tensor<4x16x?xf32>) -> tensor<?x4x8x?xf32> {
  // CHECK: dfg.matmul %{{.+}}, %{{.+}} : (tensor<?x1x8x16xf32>, tensor<4x16x?xf32>) -> tensor<?x4x8x?xf32>
  %0 = dfg.matmul %a, %b : (tensor<?x1x8x16xf32>, tensor<4x16x?xf32>) -> tensor<?x4x8x?xf32>
  return %0 : tensor<?x4x8x?xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.+]]: tensor<2x16x64xf32>, %[[B:.+]]: tensor<64xf32>, %[[S:.+]]: tensor<f32>, %[[I:.+]]: tensor<4x1xi64>, %[[J:.+]]: tensor<3xi64>)
func.func @elementwise(%x: tensor<2x16x64xf32>, %b: tensor<64xf32>, %s: tensor<f32>, %i: tensor<4x1xi64>, %j: tensor<3xi64>) -> (tensor<2x16x64xf32>, tensor<4x3xi64>) {
  // CHECK: dfg.add %[[X]], %[[B]] : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %0 = dfg.add %x, %b : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: dfg.sub %{{.+}}, %[[S]] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %1 = dfg.sub %0, %s : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  // CHECK: dfg.mul %[[B]], %{{.+}} : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  %2 = dfg.mul %b, %1 : (tensor<64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: dfg.div %{{.+}}, %[[S]] : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  %3 = dfg.div %2, %s : (tensor<2x16x64xf32>, tensor<f32>) -> tensor<2x16x64xf32>
  // Both operands broadcast: 4x1 against 3 gives 4x3.
  // CHECK: dfg.add %[[I]], %[[J]] : (tensor<4x1xi64>, tensor<3xi64>) -> tensor<4x3xi64>
  %4 = dfg.add %i, %j : (tensor<4x1xi64>, tensor<3xi64>) -> tensor<4x3xi64>
  return %3, %4 : tensor<2x16x64xf32>, tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @elementwise_dynamic
func.func @elementwise_dynamic(%x: tensor<?x16x64xf32>, %y: tensor<1x?x64xf32>) -> tensor<?x16x64xf32> {
  // A declared result may be less refined than the inferred 16.
  // CHECK: dfg.add %{{.+}}, %{{.+}} : (tensor<?x16x64xf32>, tensor<1x?x64xf32>) -> tensor<?x16x64xf32>
  %0 = dfg.add %x, %y : (tensor<?x16x64xf32>, tensor<1x?x64xf32>) -> tensor<?x16x64xf32>
  return %0 : tensor<?x16x64xf32>
}

// -----

// CHECK-LABEL: func.func @layout
func.func @layout(%x: tensor<2x8x64xf32>, %d: tensor<?x8x64xf32>) -> (tensor<2x4x8x16xf32>, tensor<?x8x4x16xf32>, tensor<16x64xf32>) {
  // CHECK: dfg.reshape %{{.+}} to [0, 0, 4, 16] : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %0 = dfg.reshape %x to [0, 0, 4, 16] : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  // CHECK: dfg.transpose %{{.+}} perm = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = dfg.transpose %0 perm = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  // A dynamic dimension copied through 0 keeps -1 static.
  // CHECK: dfg.reshape %{{.+}} to [0, 0, 4, -1] : (tensor<?x8x64xf32>) -> tensor<?x8x4x16xf32>
  %2 = dfg.reshape %d to [0, 0, 4, -1] : (tensor<?x8x64xf32>) -> tensor<?x8x4x16xf32>
  // CHECK: dfg.reshape %{{.+}} to [-1, 64] : (tensor<2x8x64xf32>) -> tensor<16x64xf32>
  %3 = dfg.reshape %x to [-1, 64] : (tensor<2x8x64xf32>) -> tensor<16x64xf32>
  return %1, %2, %3 : tensor<2x4x8x16xf32>, tensor<?x8x4x16xf32>, tensor<16x64xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
func.func @softmax(%s: tensor<2x4x8x8xf32>, %h: tensor<8xf16>) -> (tensor<2x4x8x8xf32>, tensor<8xf16>) {
  // CHECK: dfg.softmax %{{.+}} axis = -1 : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %0 = dfg.softmax %s axis = -1 : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: dfg.softmax %{{.+}} axis = 0 : (tensor<8xf16>) -> tensor<8xf16>
  %1 = dfg.softmax %h axis = 0 : (tensor<8xf16>) -> tensor<8xf16>
  return %0, %1 : tensor<2x4x8x8xf32>, tensor<8xf16>
}

// -----

// CHECK-LABEL: func.func @more_binary
func.func @more_binary(%x: tensor<2x8xf32>, %e: tensor<f32>, %a: tensor<8xi1>, %b: tensor<2x1xi1>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xi1>) {
  // CHECK: dfg.pow %{{.+}}, %{{.+}} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %0 = dfg.pow %x, %e : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  // CHECK: dfg.min %{{.+}}, %{{.+}} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = dfg.min %x, %e : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  // CHECK: dfg.max %{{.+}}, %{{.+}} : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %2 = dfg.max %x, %e : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  // CHECK: dfg.and %{{.+}}, %{{.+}} : (tensor<8xi1>, tensor<2x1xi1>) -> tensor<2x8xi1>
  %3 = dfg.and %a, %b : (tensor<8xi1>, tensor<2x1xi1>) -> tensor<2x8xi1>
  // CHECK: dfg.or %{{.+}}, %{{.+}} : (tensor<8xi1>, tensor<2x1xi1>) -> tensor<2x8xi1>
  %4 = dfg.or %a, %b : (tensor<8xi1>, tensor<2x1xi1>) -> tensor<2x8xi1>
  return %0, %1, %2, %3, %4 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi1>, tensor<2x8xi1>
}

// -----

// CHECK-LABEL: func.func @bitwise
func.func @bitwise(%x: tensor<2x8xi64>, %y: tensor<8xi64>, %a: tensor<4xi32>, %b: tensor<i32>) -> (tensor<2x8xi64>, tensor<2x8xi64>, tensor<4xi32>) {
  // CHECK: dfg.bitwise_and %{{.+}}, %{{.+}} : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  %0 = dfg.bitwise_and %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  // CHECK: dfg.bitwise_or %{{.+}}, %{{.+}} : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  %1 = dfg.bitwise_or %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  // CHECK: dfg.bitwise_xor %{{.+}}, %{{.+}} : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %2 = dfg.bitwise_xor %a, %b : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return %0, %1, %2 : tensor<2x8xi64>, tensor<2x8xi64>, tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @compare_where_cast
func.func @compare_where_cast(%i: tensor<8x1xi64>, %j: tensor<8xi64>, %s: tensor<2x4x8x8xf32>, %m: tensor<f32>) -> (tensor<8x8xi1>, tensor<8x8xi1>, tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf16>, tensor<8xi1>) {
  // CHECK: dfg.equal %{{.+}}, %{{.+}} : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %0 = dfg.equal %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: dfg.less %{{.+}}, %{{.+}} : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %1 = dfg.less %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: dfg.greater %{{.+}}, %{{.+}}
  %g = dfg.greater %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: %[[LE:.+]] = dfg.less_or_equal %{{.+}}, %{{.+}} : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %2 = dfg.less_or_equal %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: dfg.greater_or_equal %{{.+}}, %{{.+}} : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  %ge = dfg.greater_or_equal %i, %j : (tensor<8x1xi64>, tensor<8xi64>) -> tensor<8x8xi1>
  // CHECK: dfg.where %[[LE]], %{{.+}}, %{{.+}} : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %3 = dfg.where %2, %s, %m : (tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  // CHECK: dfg.cast %{{.+}} to f16 : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf16>
  %4 = dfg.cast %3 to f16 : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf16>
  // CHECK: dfg.cast %{{.+}} to i1 : (tensor<8xi64>) -> tensor<8xi1>
  %5 = dfg.cast %j to i1 : (tensor<8xi64>) -> tensor<8xi1>
  return %0, %1, %g, %3, %4, %5 : tensor<8x8xi1>, tensor<8x8xi1>, tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf16>, tensor<8xi1>
}

// -----

// CHECK-LABEL: func.func @is_nan
func.func @is_nan(%x: tensor<2x8xf32>, %h: tensor<?x4xbf16>) -> (tensor<2x8xi1>, tensor<?x4xi1>) {
  // CHECK: dfg.is_nan %{{.+}} : (tensor<2x8xf32>) -> tensor<2x8xi1>
  %0 = dfg.is_nan %x : (tensor<2x8xf32>) -> tensor<2x8xi1>
  // CHECK: dfg.is_nan %{{.+}} : (tensor<?x4xbf16>) -> tensor<?x4xi1>
  %1 = dfg.is_nan %h : (tensor<?x4xbf16>) -> tensor<?x4xi1>
  return %0, %1 : tensor<2x8xi1>, tensor<?x4xi1>
}

// -----

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x8xf32>, %h: tensor<4xbf16>, %i: tensor<3xi64>, %b: tensor<3xi1>) -> (tensor<2x8xf32>, tensor<4xbf16>, tensor<3xi64>, tensor<3xi1>) {
  // CHECK: dfg.sqrt %{{.+}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %0 = dfg.sqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.reciprocal
  %1 = dfg.reciprocal %0 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.erf
  %2 = dfg.erf %1 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.tanh
  %3 = dfg.tanh %2 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.sigmoid
  %4 = dfg.sigmoid %3 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.exp
  %5 = dfg.exp %4 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.cos
  %6 = dfg.cos %5 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.sin
  %7 = dfg.sin %6 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.tan
  %tan = dfg.tan %7 : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.asin
  %asin = dfg.asin %tan : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.acos
  %acos = dfg.acos %asin : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.atan
  %atan = dfg.atan %acos : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.sinh
  %sinh = dfg.sinh %atan : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.cosh
  %cosh = dfg.cosh %sinh : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.asinh
  %asinh = dfg.asinh %cosh : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.acosh
  %acosh = dfg.acosh %asinh : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.atanh
  %atanh = dfg.atanh %acosh : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.log
  %l = dfg.log %atanh : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.floor
  %fl = dfg.floor %l : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.ceil
  %ce = dfg.ceil %fl : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.round
  %ro = dfg.round %ce : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.neg %{{.+}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %8 = dfg.neg %ro : (tensor<2x8xf32>) -> tensor<2x8xf32>
  // CHECK: dfg.sqrt %{{.+}} : (tensor<4xbf16>) -> tensor<4xbf16>
  %9 = dfg.sqrt %h : (tensor<4xbf16>) -> tensor<4xbf16>
  // CHECK: dfg.neg %{{.+}} : (tensor<3xi64>) -> tensor<3xi64>
  %10 = dfg.neg %i : (tensor<3xi64>) -> tensor<3xi64>
  // CHECK: dfg.not %{{.+}} : (tensor<3xi1>) -> tensor<3xi1>
  %11 = dfg.not %b : (tensor<3xi1>) -> tensor<3xi1>
  return %8, %9, %10, %11 : tensor<2x8xf32>, tensor<4xbf16>, tensor<3xi64>, tensor<3xi1>
}

// -----

// CHECK-LABEL: func.func @structure
func.func @structure(%x: tensor<2x8xf32>, %ids: tensor<1x4xi64>, %w: tensor<16x8xf32>, %qkv: tensor<1x8x192xf32>, %d: tensor<?x8x64xf32>) -> (tensor<2x1x1x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<?x8x32xf32>, tensor<3x2x8xf32>) {
  // CHECK: dfg.unsqueeze %{{.+}} axes = [1, 2] : (tensor<2x8xf32>) -> tensor<2x1x1x8xf32>
  %0 = dfg.unsqueeze %x axes = [1, 2] : (tensor<2x8xf32>) -> tensor<2x1x1x8xf32>
  %row = dfg.slice %x starts = [0] ends = [1] axes = [0] steps = [1] : (tensor<2x8xf32>) -> tensor<1x8xf32>
  // CHECK: dfg.squeeze %{{.+}} axes = [0] : (tensor<1x8xf32>) -> tensor<8xf32>
  %1 = dfg.squeeze %row axes = [0] : (tensor<1x8xf32>) -> tensor<8xf32>
  // CHECK: dfg.concat %{{.+}}, %{{.+}} axis = 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  %2 = dfg.concat %x, %x axis = 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  // CHECK: dfg.gather %{{.+}}, %{{.+}} axis = 0 : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %3 = dfg.gather %w, %ids axis = 0 : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  // CHECK: %{{.+}}:3 = dfg.split %{{.+}} axis = 2 sizes = [64, 64, 64] : (tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  %q:3 = dfg.split %qkv axis = 2 sizes = [64, 64, 64] : (tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  // CHECK: dfg.slice %{{.+}} starts = [64] ends = [128] axes = [-1] steps = [1] : (tensor<1x8x192xf32>) -> tensor<1x8x64xf32>
  %5 = dfg.slice %qkv starts = [64] ends = [128] axes = [-1] steps = [1] : (tensor<1x8x192xf32>) -> tensor<1x8x64xf32>
  // Reversed, strided and clamped slices.
  // CHECK: dfg.slice %{{.+}} starts = [-1] ends = [-9223372036854775807] axes = [2] steps = [-2] : (tensor<?x8x64xf32>) -> tensor<?x8x32xf32>
  %6 = dfg.slice %d starts = [-1] ends = [-9223372036854775807] axes = [2] steps = [-2] : (tensor<?x8x64xf32>) -> tensor<?x8x32xf32>
  // CHECK: dfg.expand %{{.+}} shape = [3, 1, 1] : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
  %7 = dfg.expand %x shape = [3, 1, 1] : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
  return %0, %1, %2, %3, %q#0, %5, %6, %7 : tensor<2x1x1x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<1x4x8xf32>, tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<?x8x32xf32>, tensor<3x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<1x8x64xf32>, %i: tensor<4x5xi64>) -> (tensor<1x8x1xf32>, tensor<1xf32>, tensor<5xi64>) {
  // CHECK: dfg.reduce_mean %{{.+}} axes = [2] keep_dims = true : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
  %0 = dfg.reduce_mean %x axes = [2] keep_dims = true : (tensor<1x8x64xf32>) -> tensor<1x8x1xf32>
  // CHECK: dfg.reduce_sum %{{.+}} axes = [1, 2] keep_dims = false : (tensor<1x8x64xf32>) -> tensor<1xf32>
  %1 = dfg.reduce_sum %x axes = [1, 2] keep_dims = false : (tensor<1x8x64xf32>) -> tensor<1xf32>
  // CHECK: dfg.reduce_max %{{.+}} axes = [0] keep_dims = false : (tensor<4x5xi64>) -> tensor<5xi64>
  %2 = dfg.reduce_max %i axes = [0] keep_dims = false : (tensor<4x5xi64>) -> tensor<5xi64>
  return %0, %1, %2 : tensor<1x8x1xf32>, tensor<1xf32>, tensor<5xi64>
}

// -----

// CHECK-LABEL: func.func @cumsum
func.func @cumsum(%mask: tensor<2x8xi64>, %x: tensor<2x8x4xf32>) -> (tensor<2x8xi64>, tensor<2x8x4xf32>) {
  // CHECK: dfg.cumsum %{{.+}} axis = -1 exclusive = false reverse = false : (tensor<2x8xi64>) -> tensor<2x8xi64>
  %0 = dfg.cumsum %mask axis = -1 exclusive = false reverse = false : (tensor<2x8xi64>) -> tensor<2x8xi64>
  // CHECK: dfg.cumsum %{{.+}} axis = 1 exclusive = true reverse = true : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %1 = dfg.cumsum %x axis = 1 exclusive = true reverse = true : (tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  return %0, %1 : tensor<2x8xi64>, tensor<2x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @norms_and_masks
func.func @norms_and_masks(%x: tensor<2x8x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %ones: tensor<8x8xi1>, %past: tensor<1x4x16x8xf32>, %pos: tensor<1x4x1x3xi64>, %new: tensor<1x4x1x8xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<8x8xi1>, tensor<1x4x16x8xf32>) {
  // CHECK: dfg.layer_norm %{{.+}}, %{{.+}}, %{{.+}} axis = -1 epsilon = 9.99999974E-6 : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %0 = dfg.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: dfg.layer_norm %{{.+}}, %{{.+}} axis = 2 epsilon = 9.99999974E-6 : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %1 = dfg.layer_norm %x, %g axis = 2 epsilon = 1.0e-05 : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: dfg.rms_norm %{{.+}}, %{{.+}} axis = -1 epsilon = 9.99999997E-7 : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %2 = dfg.rms_norm %x, %g axis = -1 epsilon = 1.0e-06 : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: dfg.trilu %{{.+}} upper = false diagonal = 0 : (tensor<8x8xi1>) -> tensor<8x8xi1>
  %3 = dfg.trilu %ones upper = false diagonal = 0 : (tensor<8x8xi1>) -> tensor<8x8xi1>
  // CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x4x16x8xf32>, tensor<1x4x1x3xi64>, tensor<1x4x1x8xf32>) -> tensor<1x4x16x8xf32>
  %4 = dfg.scatter_nd %past, %pos, %new : (tensor<1x4x16x8xf32>, tensor<1x4x1x3xi64>, tensor<1x4x1x8xf32>) -> tensor<1x4x16x8xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<8x8xi1>, tensor<1x4x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @gelu
func.func @gelu(%x: tensor<1x8x256xf32>, %h: tensor<4xf16>) -> (tensor<1x8x256xf32>, tensor<4xf16>) {
  // CHECK: dfg.gelu %{{.+}} exact = false : (tensor<1x8x256xf32>) -> tensor<1x8x256xf32>
  %0 = dfg.gelu %x exact = false : (tensor<1x8x256xf32>) -> tensor<1x8x256xf32>
  // CHECK: dfg.gelu %{{.+}} exact = true : (tensor<4xf16>) -> tensor<4xf16>
  %1 = dfg.gelu %h exact = true : (tensor<4xf16>) -> tensor<4xf16>
  return %0, %1 : tensor<1x8x256xf32>, tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @rotary
func.func @rotary(%x: tensor<1x4x8x8xf32>, %cos: tensor<16x4xf32>, %sin: tensor<16x4xf32>, %pos: tensor<1x8xi64>, %cb: tensor<1x8x2xf16>, %h: tensor<1x4x8x8xf16>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf16>) {
  // CHECK: dfg.rotary %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  %0 = dfg.rotary %x, %cos, %sin, %pos interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  // Per-position caches, interleaved, partial.
  // CHECK: dfg.rotary %{{.+}}, %{{.+}}, %{{.+}} interleaved = true rotary_dim = 4 : (tensor<1x4x8x8xf16>, tensor<1x8x2xf16>, tensor<1x8x2xf16>) -> tensor<1x4x8x8xf16>
  %1 = dfg.rotary %h, %cb, %cb interleaved = true rotary_dim = 4 : (tensor<1x4x8x8xf16>, tensor<1x8x2xf16>, tensor<1x8x2xf16>) -> tensor<1x4x8x8xf16>
  return %0, %1 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf16>
}

// -----

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<8x8xi1>, %pk: tensor<1x2x?x8xf32>, %pv: tensor<1x2x?x16xf32>, %a: tensor<1x1x1x10xf32>, %pk2: tensor<1x2x2x8xf32>, %pv2: tensor<1x2x2x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x8x16xf32>) {
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 0.353553385 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<8x8xi1>) -> tensor<1x4x8x16xf32>
  %0 = dfg.attention %q, %k, %v mask(%m) scale = 0.353553385 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<8x8xi1>) -> tensor<1x4x8x16xf32>
  // A KV cache of dynamic length: the present tensors are dynamic too.
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} past(%{{.+}}, %{{.+}}) scale = 1.250000e-01 causal = true {softcap = 3.000000e+01 : f32} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x16xf32>)
  %1:3 = dfg.attention %q, %k, %v past(%pk, %pv) scale = 0.125 causal = true {softcap = 30.0 : f32} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x16xf32>)
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.250000e-01 causal = true {softcap = 5.000000e+01 : f32, softcap_first = true} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %capfirst = dfg.attention %q, %k, %v scale = 0.125 causal = true {softcap = 50.0 : f32, softcap_first = true} : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  // A mask over past and new keys (2 + 8 = 10).
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) past(%{{.+}}, %{{.+}}) scale = 1.250000e-01 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x1x1x10xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x2x10x8xf32>, tensor<1x2x10x16xf32>)
  %2:3 = dfg.attention %q, %k, %v mask(%a) past(%pk2, %pv2) scale = 0.125 causal = false : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x1x1x10xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x2x10x8xf32>, tensor<1x2x10x16xf32>)
  // Each row's history (GroupQueryAttention's seqlens_k).
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} past(%{{.+}}, %{{.+}}) past_lengths(%{{.+}}) scale = 1.250000e-01 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x16xf32>, tensor<1xi64>) -> (tensor<1x4x8x16xf32>, tensor<1x2x10x8xf32>, tensor<1x2x10x16xf32>)
  %lengths = dfg.constant dense<1> : tensor<1xi64>
  %rows:3 = dfg.attention %q, %k, %v past(%pk2, %pv2) past_lengths(%lengths) scale = 0.125 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<1x2x2x8xf32>, tensor<1x2x2x16xf32>, tensor<1xi64>) -> (tensor<1x4x8x16xf32>, tensor<1x2x10x8xf32>, tensor<1x2x10x16xf32>)
  // One sink score per query head (gpt-oss).
  // CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} sinks(%{{.+}}) scale = 1.250000e-01 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<4xf32>) -> tensor<1x4x8x16xf32>
  %sinks = dfg.constant dense<0.5> : tensor<4xf32>
  %sunk = dfg.attention %q, %k, %v sinks(%sinks) scale = 0.125 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<4xf32>) -> tensor<1x4x8x16xf32>
  return %0, %1#0, %1#1, %2#0 : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x2x?x8xf32>, tensor<1x4x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @transformer_layer_ops
func.func @transformer_layer_ops(%table: tensor<64x32xf32>, %ids: tensor<2x8xi64>, %w: tensor<32x96xf32>, %wt: tensor<96x32xf32>, %b: tensor<96xf32>, %g: tensor<32xf32>, %r: tensor<2x8x32xf32>, %cos: tensor<1x8x4xf32>, %q: tensor<2x4x8x8xf32>) -> (tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8x8xf32>) {
  // CHECK: %[[H:.+]] = dfg.embedding %{{.+}}, %{{.+}} : (tensor<64x32xf32>, tensor<2x8xi64>) -> tensor<2x8x32xf32>
  %h = dfg.embedding %table, %ids : (tensor<64x32xf32>, tensor<2x8xi64>) -> tensor<2x8x32xf32>
  // CHECK: %[[N:.+]], %[[S:.+]] = dfg.rms_norm %[[H]], %{{.+}} residual(%{{.+}}) axis = -1 epsilon = 9.99999997E-7 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  %n, %s = dfg.rms_norm %h, %g residual(%r) axis = -1 epsilon = 1.0e-06 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  // CHECK: dfg.layer_norm %[[H]], %{{.+}}, %{{.+}} residual(%{{.+}}) axis = -1
  %ln, %ls = dfg.layer_norm %h, %g, %g residual(%r) axis = -1 epsilon = 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>)
  // CHECK: dfg.linear %[[N]], %{{.+}}, %{{.+}} transpose_weight = false : (tensor<2x8x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
  %y = dfg.linear %n, %w, %b transpose_weight = false : (tensor<2x8x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
  // CHECK: dfg.linear %[[N]], %{{.+}} transpose_weight = true : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
  %yt = dfg.linear %n, %wt transpose_weight = true : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
  // CHECK: dfg.silu %[[S]] : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %a = dfg.silu %s : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // A cos/sin table shared by the batch rows.
  // CHECK: dfg.rotary %{{.+}}, %{{.+}}, %{{.+}} interleaved = false rotary_dim = 8 : (tensor<2x4x8x8xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<2x4x8x8xf32>
  %rq = dfg.rotary %q, %cos, %cos interleaved = false rotary_dim = 8 : (tensor<2x4x8x8xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<2x4x8x8xf32>
  return %y, %yt, %a, %ln, %rq : tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x4x8x8xf32>
}

// -----

// Ops on symbolic dimensions: affine maps whose symbols are the names listed.
// CHECK-LABEL: func.func @symbolic
func.func @symbolic(%x: tensor<?x96xf32>, %bias: tensor<1x1x16x16xi1>) -> (tensor<2xi64>, tensor<?x?x96xf32>, tensor<1x?xf32>, tensor<1x1x?x16xi1>, tensor<?xi64>) {
  // CHECK: dfg.sizes #{{.+}} symbols ["batch_size", "sequence_length"] : tensor<2xi64>
  %s = dfg.sizes affine_map<()[s0, s1] -> (s0 * s1, 96)> symbols ["batch_size", "sequence_length"] : tensor<2xi64>
  // CHECK: dfg.symbolic_reshape %{{.+}} to #{{.+}} symbols ["batch_size", "sequence_length"] : (tensor<?x96xf32>) -> tensor<?x?x96xf32>
  %r = dfg.symbolic_reshape %x to affine_map<()[s0, s1] -> (s0, s1, 96)> symbols ["batch_size", "sequence_length"] : (tensor<?x96xf32>) -> tensor<?x?x96xf32>
  %zero = dfg.constant dense<0.0> : tensor<f32>
  // CHECK: dfg.symbolic_expand %{{.+}} to #{{.+}} symbols ["sequence_length"] : (tensor<f32>) -> tensor<1x?xf32>
  %e = dfg.symbolic_expand %zero to affine_map<()[s0] -> (1, s0)> symbols ["sequence_length"] : (tensor<f32>) -> tensor<1x?xf32>
  // CHECK: dfg.symbolic_slice %{{.+}} starts = #{{.+}} ends = #{{.+}} axes = [2] steps = [1] symbols ["past_sequence_length", "sequence_length"] : (tensor<1x1x16x16xi1>) -> tensor<1x1x?x16xi1>
  %rows = dfg.symbolic_slice %bias starts = affine_map<()[s0, s1] -> (s0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [2] steps = [1] symbols ["past_sequence_length", "sequence_length"] : (tensor<1x1x16x16xi1>) -> tensor<1x1x?x16xi1>
  // CHECK: dfg.range #{{.+}} delta = 1 symbols ["past_sequence_length", "sequence_length"] : tensor<?xi64>
  %pos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["past_sequence_length", "sequence_length"] : tensor<?xi64>
  return %s, %r, %e, %rows, %pos : tensor<2xi64>, tensor<?x?x96xf32>, tensor<1x?xf32>, tensor<1x1x?x16xi1>, tensor<?xi64>
}

// -----

// CHECK-LABEL: func.func @gather_nd
func.func @gather_nd(%m: tensor<?x?xi1>, %idx: tensor<?x?x2xi64>, %d: tensor<2x3x4xf32>, %b: tensor<2x5x1xi32>) -> (tensor<?x?xi1>, tensor<2x5x4xf32>) {
  // CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 0 : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
  %0 = dfg.gather_nd %m, %idx batch_dims = 0 : (tensor<?x?xi1>, tensor<?x?x2xi64>) -> tensor<?x?xi1>
  // CHECK: dfg.gather_nd %{{.+}}, %{{.+}} batch_dims = 1 : (tensor<2x3x4xf32>, tensor<2x5x1xi32>) -> tensor<2x5x4xf32>
  %1 = dfg.gather_nd %d, %b batch_dims = 1 : (tensor<2x3x4xf32>, tensor<2x5x1xi32>) -> tensor<2x5x4xf32>
  return %0, %1 : tensor<?x?xi1>, tensor<2x5x4xf32>
}

// CHECK-LABEL: func.func @top_k
func.func @top_k(%x: tensor<6x8xf32>, %ids: tensor<?xi64>) -> (tensor<6x2xf32>, tensor<6x2xi64>, tensor<?xi64>, tensor<?xi64>) {
  // CHECK: dfg.top_k %{{.+}} axis = -1 k = 2 largest = true : (tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  %v, %i = dfg.top_k %x axis = -1 k = 2 largest = true : (tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  // CHECK: dfg.top_k %{{.+}} axis = 0 largest = false : (tensor<?xi64>) -> (tensor<?xi64>, tensor<?xi64>)
  %s, %p = dfg.top_k %ids axis = 0 largest = false : (tensor<?xi64>) -> (tensor<?xi64>, tensor<?xi64>)
  return %v, %i, %s, %p : tensor<6x2xf32>, tensor<6x2xi64>, tensor<?xi64>, tensor<?xi64>
}

// CHECK-LABEL: func.func @scatter_nd_accumulate
func.func @scatter_nd_accumulate(%z: tensor<6x8xf32>, %rows: tensor<12x1xi64>, %out: tensor<12x8xf32>) -> tensor<6x8xf32> {
  // CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} accumulate : (tensor<6x8xf32>, tensor<12x1xi64>, tensor<12x8xf32>) -> tensor<6x8xf32>
  %0 = dfg.scatter_nd %z, %rows, %out accumulate : (tensor<6x8xf32>, tensor<12x1xi64>, tensor<12x8xf32>) -> tensor<6x8xf32>
  return %0 : tensor<6x8xf32>
}

// Batch dimensions: each of the 2x4 matrices gets its own rows; the default
// 0 is not printed.
// CHECK-LABEL: func.func @scatter_nd_batch_dims
func.func @scatter_nd_batch_dims(%x: tensor<2x4x8x8xf32>, %at: tensor<2x4x3x1xi64>, %rows: tensor<2x4x3x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  // CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} batch_dims = 2 accumulate : (tensor<2x4x8x8xf32>, tensor<2x4x3x1xi64>, tensor<2x4x3x8xf32>) -> tensor<2x4x8x8xf32>
  %0 = dfg.scatter_nd %x, %at, %rows batch_dims = 2 accumulate : (tensor<2x4x8x8xf32>, tensor<2x4x3x1xi64>, tensor<2x4x3x8xf32>) -> tensor<2x4x8x8xf32>
  // CHECK: dfg.scatter_nd %{{.+}}, %{{.+}}, %{{.+}} : (tensor<2x4x8x8xf32>, tensor<2x4x3x1xi64>, tensor<2x4x3x4x8x8xf32>)
  %z = dfg.constant dense<0.0> : tensor<2x4x3x4x8x8xf32>
  %1 = dfg.scatter_nd %x, %at, %z batch_dims = 0 : (tensor<2x4x8x8xf32>, tensor<2x4x3x1xi64>, tensor<2x4x3x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %0, %1 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// A weight-only quantized matrix (MatMulNBits' 4-bit blocks with packed zero
// points) and its reshape, which keeps the elements' order.
// CHECK-LABEL: func.func @weight_quantized
func.func @weight_quantized() -> (tensor<64x64xf32>, tensor<4096xbf16>) {
  // CHECK: dfg.weight "q" in "model.onnx.data" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "model.onnx.data", length = 512 : i64, offset = 2048 : i64, type = f32}, zero_points = {file = "model.onnx.data", length = 64 : i64, offset = 2560 : i64, type = ui8}}} : tensor<64x64xf32>
  %q = dfg.weight "q" in "model.onnx.data" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "model.onnx.data", offset = 2048 : i64, length = 512 : i64, type = f32}, zero_points = {file = "model.onnx.data", offset = 2560 : i64, length = 64 : i64, type = ui8}}} : tensor<64x64xf32>
  // CHECK: dfg.weight "q" {{.*}} : tensor<4096xbf16>
  %flat = dfg.weight "q" in "model.onnx.data" [offset = 0, length = 2048] {quantization = {bits = 4 : i64, block_size = 32 : i64, columns = 64 : i64, row_bytes = 32 : i64, scales = {file = "model.onnx.data", offset = 2048 : i64, length = 512 : i64, type = f32}}} : tensor<4096xbf16>
  return %q, %flat : tensor<64x64xf32>, tensor<4096xbf16>
}
