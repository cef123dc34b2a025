// RUN: meshc-opt %s --split-input-file --meshc-graph-raise --meshc-graph-fold-constants --canonicalize | FileCheck %s

// LayerNorm as torch.onnx writes it: mean, centre, pow 2, mean, eps, sqrt,
// div, scale, bias.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[B:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]] = dfg.layer_norm %[[X]], %[[G]], %[[B]] axis = 2 epsilon = 9.99999974E-6 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %two = dfg.constant dense<2.0> : tensor<f32>
  %eps = dfg.constant dense<1.0e-5> : tensor<f32>
  %m = dfg.reduce_mean %x axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %d = dfg.sub %x, %m : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %p = dfg.pow %d, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %p axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %ve = dfg.add %v, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = dfg.sqrt %ve : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = dfg.div %d, %s : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %ng = dfg.mul %n, %g : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %y = dfg.add %ng, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// Two norms of the same input with their own scales and biases, sharing one
// normalisation (a parallel residual's, GPT-NeoX's, as TorchScript writes
// it at opsets before LayerNormalization): each reader gets a norm of its
// own with its scale and bias. The raw
// normalisation read directly as well keeps its unit-scale norm.
// CHECK-LABEL: func.func @shared_normalisation
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x32xf32>, %[[G1:.+]]: tensor<32xf32>, %[[B1:.+]]: tensor<32xf32>, %[[G2:.+]]: tensor<32xf32>, %[[B2:.+]]: tensor<32xf32>)
// CHECK-DAG: %[[Y1:.+]] = dfg.layer_norm %[[X]], %[[G1]], %[[B1]] axis = 2
// CHECK-DAG: %[[Y2:.+]] = dfg.layer_norm %[[X]], %[[G2]], %[[B2]] axis = 2
// CHECK-DAG: %[[N:.+]] = dfg.layer_norm %[[X]], %{{.+}} axis = 2 epsilon = 9.99999974E-6 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
// CHECK: return %[[Y1]], %[[Y2]], %[[N]]
func.func @shared_normalisation(%x: tensor<2x8x32xf32>, %g1: tensor<32xf32>, %b1: tensor<32xf32>, %g2: tensor<32xf32>, %b2: tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %two = dfg.constant dense<2.0> : tensor<f32>
  %eps = dfg.constant dense<1.0e-5> : tensor<f32>
  %m = dfg.reduce_mean %x axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %d = dfg.sub %x, %m : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %p = dfg.pow %d, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %p axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %ve = dfg.add %v, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %s = dfg.sqrt %ve : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = dfg.div %d, %s : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %n1 = dfg.mul %n, %g1 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %y1 = dfg.add %n1, %b1 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %n2 = dfg.mul %n, %g2 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %y2 = dfg.add %n2, %b2 : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %y1, %y2, %n : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// RMSNorm as the dynamo exporter writes it (x * x, reciprocal of the root,
// scale on the left), after a residual add that is also used later: the
// add becomes the norm's fused residual and its `sum` result.
// CHECK-LABEL: func.func @rms_norm_residual
// CHECK-SAME: (%[[H:.+]]: tensor<2x8x32xf32>, %[[R:.+]]: tensor<2x8x32xf32>, %[[G:.+]]: tensor<32xf32>)
// CHECK-NEXT: %[[Y:.+]], %[[S:.+]] = dfg.rms_norm %[[H]], %[[G]] residual(%[[R]]) axis = 2 epsilon = 9.99999997E-7
// CHECK-NEXT: return %[[Y]], %[[S]]
func.func @rms_norm_residual(%h: tensor<2x8x32xf32>, %r: tensor<2x8x32xf32>, %g: tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %eps = dfg.constant dense<1.0e-6> : tensor<f32>
  %x = dfg.add %h, %r : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %sq = dfg.mul %x, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %sq axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %ve = dfg.add %eps, %v : (tensor<f32>, tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %s = dfg.sqrt %ve : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %inv = dfg.reciprocal %s : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = dfg.mul %x, %inv : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %y = dfg.mul %g, %n : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// RMSNorm whose epsilon the exporter dropped (Helium's 1e-8 in torch.onnx
// dynamo's f32 export: pow 2, mean, sqrt, reciprocal, no add): a norm with
// epsilon 0, which computes the same.
// CHECK-LABEL: func.func @rms_norm_without_epsilon
// CHECK-NEXT: %[[Y:.+]] = dfg.rms_norm %{{.+}}, %{{.+}} axis = 2 epsilon = 0.000000e+00
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_without_epsilon(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %two = dfg.constant dense<2.0> : tensor<f32>
  %sq = dfg.pow %x, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %sq axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %s = dfg.sqrt %v : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %inv = dfg.reciprocal %s : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = dfg.mul %x, %inv : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %y = dfg.mul %g, %n : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// RMSNorm with the root's reciprocal as one power (Gemma 4: x * pow(mean(x^2)
// + eps, -0.5) * g).
// CHECK-LABEL: func.func @rms_norm_by_power
// CHECK-NEXT: %[[Y:.+]] = dfg.rms_norm %{{.+}}, %{{.+}} axis = 2 epsilon = 9.99999997E-7
// CHECK-NEXT: return %[[Y]]
func.func @rms_norm_by_power(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %two = dfg.constant dense<2.0> : tensor<f32>
  %eps = dfg.constant dense<1.0e-6> : tensor<f32>
  %half = dfg.constant dense<-0.5> : tensor<f32>
  %sq = dfg.pow %x, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %sq axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %ve = dfg.add %v, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %inv = dfg.pow %ve, %half : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %n = dfg.mul %x, %inv : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  %y = dfg.mul %n, %g : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// Near miss: a power other than -0.5 of the mean square is no norm.
// CHECK-LABEL: func.func @mean_square_to_minus_one
// CHECK-NOT: dfg.rms_norm
// CHECK: dfg.pow
func.func @mean_square_to_minus_one(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %two = dfg.constant dense<2.0> : tensor<f32>
  %m1 = dfg.constant dense<-1.0> : tensor<f32>
  %sq = dfg.pow %x, %two : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %sq axes = [2] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %inv = dfg.pow %v, %m1 : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %n = dfg.mul %x, %inv : (tensor<2x8x32xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
  return %n : tensor<2x8x32xf32>
}

// -----

// Near miss: statistics over a non-trailing axis are not a layer norm.
// CHECK-LABEL: func.func @norm_over_middle_axis
// CHECK-NOT: dfg.rms_norm
// CHECK: dfg.reduce_mean %{{.+}} axes = [1]
func.func @norm_over_middle_axis(%x: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %eps = dfg.constant dense<1.0e-6> : tensor<f32>
  %sq = dfg.mul %x, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %v = dfg.reduce_mean %sq axes = [1] keep_dims = true : (tensor<2x8x32xf32>) -> tensor<2x1x32xf32>
  %ve = dfg.add %v, %eps : (tensor<2x1x32xf32>, tensor<f32>) -> tensor<2x1x32xf32>
  %s = dfg.sqrt %ve : (tensor<2x1x32xf32>) -> tensor<2x1x32xf32>
  %n = dfg.div %x, %s : (tensor<2x8x32xf32>, tensor<2x1x32xf32>) -> tensor<2x8x32xf32>
  return %n : tensor<2x8x32xf32>
}

// -----

// Near miss: the square is of another value than the numerator.
// CHECK-LABEL: func.func @norm_of_other_value
// CHECK-NOT: dfg.rms_norm
// CHECK: dfg.div
func.func @norm_of_other_value(%x: tensor<4x32xf32>, %z: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %eps = dfg.constant dense<1.0e-6> : tensor<f32>
  %sq = dfg.mul %z, %z : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %v = dfg.reduce_mean %sq axes = [1] keep_dims = true : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = dfg.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %s = dfg.sqrt %ve : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = dfg.div %x, %s : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  return %n : tensor<4x32xf32>
}

// -----

// GPT-2's gelu_new in the exporter's order, and exact GELU through erf with
// a division by sqrt(2).
// CHECK-LABEL: func.func @gelus
// CHECK-SAME: (%[[X:.+]]: tensor<2x16xf32>)
// CHECK-NEXT: %[[T:.+]] = dfg.gelu %[[X]] exact = false
// CHECK-NEXT: %[[E:.+]] = dfg.gelu %[[T]] exact = true
// CHECK-NEXT: return %[[E]]
func.func @gelus(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %half = dfg.constant dense<0.5> : tensor<f32>
  %one = dfg.constant dense<1.0> : tensor<f32>
  %three = dfg.constant dense<3.0> : tensor<f32>
  %k = dfg.constant dense<0.044715> : tensor<f32>
  %c = dfg.constant dense<0.797884583> : tensor<f32>
  %x3 = dfg.pow %x, %three : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %kx3 = dfg.mul %k, %x3 : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %in = dfg.add %x, %kx3 : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %arg = dfg.mul %c, %in : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %hx = dfg.mul %half, %x : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %t = dfg.tanh %arg : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %onet = dfg.add %one, %t : (tensor<f32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %y = dfg.mul %hx, %onet : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %sqrt2 = dfg.constant dense<1.41421354> : tensor<f32>
  %xs = dfg.div %y, %sqrt2 : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %e = dfg.erf %xs : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %ep = dfg.add %e, %one : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %ye = dfg.mul %y, %ep : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %z = dfg.mul %ye, %half : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  return %z : tensor<2x16xf32>
}

// -----

// Near miss: a cubic coefficient other than 0.044715 is not GELU.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: dfg.gelu
// CHECK: dfg.tanh
func.func @not_gelu(%x: tensor<16xf32>) -> tensor<16xf32> {
  %half = dfg.constant dense<0.5> : tensor<f32>
  %one = dfg.constant dense<1.0> : tensor<f32>
  %three = dfg.constant dense<3.0> : tensor<f32>
  %k = dfg.constant dense<0.05> : tensor<f32>
  %c = dfg.constant dense<0.797884583> : tensor<f32>
  %x3 = dfg.pow %x, %three : (tensor<16xf32>, tensor<f32>) -> tensor<16xf32>
  %kx3 = dfg.mul %k, %x3 : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %in = dfg.add %x, %kx3 : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %arg = dfg.mul %c, %in : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %hx = dfg.mul %half, %x : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %t = dfg.tanh %arg : (tensor<16xf32>) -> tensor<16xf32>
  %onet = dfg.add %one, %t : (tensor<f32>, tensor<16xf32>) -> tensor<16xf32>
  %y = dfg.mul %hx, %onet : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// SiLU, and its near miss x * sigmoid(z).
// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.+]]: tensor<8xf32>, %[[Z:.+]]: tensor<8xf32>)
// CHECK-NEXT: %[[S:.+]] = dfg.silu %[[X]]
// CHECK-NEXT: %[[SZ:.+]] = dfg.sigmoid %[[Z]]
// CHECK-NEXT: dfg.mul %[[S]], %[[SZ]]
func.func @silu(%x: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %s = dfg.sigmoid %x : (tensor<8xf32>) -> tensor<8xf32>
  %y = dfg.mul %s, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %sz = dfg.sigmoid %z : (tensor<8xf32>) -> tensor<8xf32>
  %w = dfg.mul %y, %sz : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// A stacked weight read one matrix at a time at a constant index (JetMoE's
// experts, `weight[i]`, then transposed): each matrix is a weight of its own
// at its offset (2 x 16 x 8 f32 = 512 bytes each; -1 counts from the end),
// and the product by it a linear. Near misses stay gathers: an index that
// is not a constant, a gather along axis 1.
// CHECK-LABEL: func.func @blocks_of_stacked_weight
// CHECK-SAME: (%[[X:.+]]: tensor<4x8xf32>, %[[I:.+]]: tensor<i64>)
// CHECK-DAG: %[[W1:.+]] = dfg.weight "experts[1]" in "m.bin" [offset = 1536, length = 512] : tensor<16x8xf32>
// CHECK-DAG: %[[W2:.+]] = dfg.weight "experts[2]" in "m.bin" [offset = 2048, length = 512] : tensor<16x8xf32>
// CHECK-DAG: dfg.linear %[[X]], %[[W1]] transpose_weight = true : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-DAG: dfg.linear %[[X]], %[[W2]] transpose_weight = true : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-DAG: dfg.gather %{{.+}}, %[[I]] axis = 0 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<16x8xf32>
// CHECK-DAG: dfg.gather %{{.+}}, %{{.+}} axis = 1 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<3x8xf32>
func.func @blocks_of_stacked_weight(%x: tensor<4x8xf32>, %i: tensor<i64>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x8xf32>, tensor<3x8xf32>) {
  %w = dfg.weight "experts" in "m.bin" [offset = 1024, length = 1536] : tensor<3x16x8xf32>
  %one = dfg.constant dense<1> : tensor<i64>
  %last = dfg.constant dense<-1> : tensor<i64>
  %g1 = dfg.gather %w, %one axis = 0 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<16x8xf32>
  %t1 = dfg.transpose %g1 perm = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y1 = dfg.matmul %x, %t1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %g2 = dfg.gather %w, %last axis = 0 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<16x8xf32>
  %t2 = dfg.transpose %g2 perm = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y2 = dfg.matmul %x, %t2 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %gi = dfg.gather %w, %i axis = 0 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<16x8xf32>
  %ga = dfg.gather %w, %one axis = 1 : (tensor<3x16x8xf32>, tensor<i64>) -> tensor<3x8xf32>
  return %y1, %y2, %gi, %ga : tensor<4x16xf32>, tensor<4x16xf32>, tensor<16x8xf32>, tensor<3x8xf32>
}

// -----

// GPT-2's Conv1D (flatten, matmul, bias, unflatten), Gemm's transposed
// weight, an embedding lookup; a reshaped weight folds into its reference.
// A matmul of two activations and a gather along axis 1 stay as they are.
// CHECK-LABEL: func.func @dense_layers
// CHECK-SAME: (%[[X:.+]]: tensor<2x8x32xf32>, %[[IDS:.+]]: tensor<2x8xi64>, %[[A:.+]]: tensor<32x4xf32>)
// CHECK-DAG: %[[W:.+]] = dfg.weight "w" in "m.bin" [offset = 0, length = 12288] : tensor<32x96xf32>
// CHECK-DAG: %[[B:.+]] = dfg.weight "b" in "m.bin" [offset = 12288, length = 384] : tensor<96xf32>
// CHECK-DAG: %[[WT:.+]] = dfg.weight "wt" in "m.bin" [offset = 12672, length = 12288] : tensor<96x32xf32>
// CHECK-DAG: %[[E:.+]] = dfg.weight "emb" in "m.bin" [offset = 24960, length = 8192] : tensor<64x32xf32>
// CHECK-DAG: %[[Y:.+]] = dfg.linear %[[X]], %[[W]], %[[B]] transpose_weight = false : (tensor<2x8x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x8x96xf32>
// CHECK-DAG: %[[YT:.+]] = dfg.linear %[[X]], %[[WT]] transpose_weight = true : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
// CHECK-DAG: %[[H:.+]] = dfg.embedding %[[E]], %[[IDS]]
// CHECK-DAG: dfg.gather %[[E]], %{{.+}} axis = 1
// CHECK-DAG: dfg.matmul %{{.+}}, %[[A]]
func.func @dense_layers(%x: tensor<2x8x32xf32>, %ids: tensor<2x8xi64>, %a: tensor<32x4xf32>) -> (tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<64x2x8xf32>, tensor<16x4xf32>) {
  %w = dfg.weight "w" in "m.bin" [offset = 0, length = 12288] : tensor<3072xf32>
  %w2 = dfg.reshape %w to [32, 96] : (tensor<3072xf32>) -> tensor<32x96xf32>
  %b = dfg.weight "b" in "m.bin" [offset = 12288, length = 384] : tensor<96xf32>
  %flat = dfg.reshape %x to [-1, 32] : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
  %mm = dfg.matmul %flat, %w2 : (tensor<16x32xf32>, tensor<32x96xf32>) -> tensor<16x96xf32>
  %mb = dfg.add %mm, %b : (tensor<16x96xf32>, tensor<96xf32>) -> tensor<16x96xf32>
  %y = dfg.reshape %mb to [2, 8, 96] : (tensor<16x96xf32>) -> tensor<2x8x96xf32>
  %wt = dfg.weight "wt" in "m.bin" [offset = 12672, length = 12288] : tensor<96x32xf32>
  %t = dfg.transpose %wt perm = [1, 0] : (tensor<96x32xf32>) -> tensor<32x96xf32>
  %yt = dfg.matmul %x, %t : (tensor<2x8x32xf32>, tensor<32x96xf32>) -> tensor<2x8x96xf32>
  %e = dfg.weight "emb" in "m.bin" [offset = 24960, length = 8192] : tensor<64x32xf32>
  %h = dfg.gather %e, %ids axis = 0 : (tensor<64x32xf32>, tensor<2x8xi64>) -> tensor<2x8x32xf32>
  %cols = dfg.gather %e, %ids axis = 1 : (tensor<64x32xf32>, tensor<2x8xi64>) -> tensor<64x2x8xf32>
  %act = dfg.matmul %flat, %a : (tensor<16x32xf32>, tensor<32x4xf32>) -> tensor<16x4xf32>
  return %y, %yt, %h, %cols, %act : tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x32xf32>, tensor<64x2x8xf32>, tensor<16x4xf32>
}

// -----

// An embedding tied to an lm_head stored [hidden, vocab] (onnxruntime-genai's
// builder writes Gather(Transpose(W))): the ids' columns of W are gathered
// and moved last; the weight itself is never transposed.
// CHECK-LABEL: func.func @tied_embedding_of_transposed_weight
// CHECK-SAME: (%[[IDS:.+]]: tensor<2x3xi64>)
// CHECK: %[[W:.+]] = dfg.weight "lm_head" in "m.bin" [offset = 0, length = 2048] : tensor<8x64xf32>
// CHECK: %[[C:.+]] = dfg.gather %[[W]], %[[IDS]] axis = 1 : (tensor<8x64xf32>, tensor<2x3xi64>) -> tensor<8x2x3xf32>
// CHECK: %[[E:.+]] = dfg.transpose %[[C]] perm = [1, 2, 0] : (tensor<8x2x3xf32>) -> tensor<2x3x8xf32>
// CHECK-NOT: perm = [1, 0]
// CHECK: return %[[E]]
func.func @tied_embedding_of_transposed_weight(%ids: tensor<2x3xi64>) -> tensor<2x3x8xf32> {
  %w = dfg.weight "lm_head" in "m.bin" [offset = 0, length = 2048] : tensor<8x64xf32>
  %t = dfg.transpose %w perm = [1, 0] : (tensor<8x64xf32>) -> tensor<64x8xf32>
  %e = dfg.gather %t, %ids axis = 0 : (tensor<64x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  return %e : tensor<2x3x8xf32>
}

// -----

// Rotate-half RoPE with literal cos/sin tables whose halves are equal; the
// same spelling with a table whose halves differ is left alone.
// CHECK-LABEL: func.func @rotary
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x2x4xf32>)
// CHECK-DAG: %[[C:.+]] = dfg.constant dense<{{\[\[\[}}1.000000e+00, 5.000000e-01], [2.500000e-01, 1.250000e-01]]]> : tensor<1x2x2xf32>
// CHECK-DAG: %[[S:.+]] = dfg.constant dense<{{\[\[\[}}0.000000e+00, 7.500000e-01], [5.000000e-01, 2.500000e-01]]]> : tensor<1x2x2xf32>
// CHECK-DAG: %[[R:.+]] = dfg.rotary %[[X]], %[[C]], %[[S]] interleaved = false rotary_dim = 4 : (tensor<1x2x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2x4xf32>
// CHECK-DAG: dfg.neg
// CHECK: return %[[R]]
func.func @rotary(%x: tensor<1x2x2x4xf32>) -> (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) {
  %cos = dfg.constant dense<[[[[1.0, 0.5, 1.0, 0.5], [0.25, 0.125, 0.25, 0.125]]]]> : tensor<1x1x2x4xf32>
  %sin = dfg.constant dense<[[[[0.0, 0.75, 0.0, 0.75], [0.5, 0.25, 0.5, 0.25]]]]> : tensor<1x1x2x4xf32>
  %bad = dfg.constant dense<[[[[0.0, 0.75, 0.1, 0.75], [0.5, 0.25, 0.5, 0.25]]]]> : tensor<1x1x2x4xf32>
  %x1 = dfg.slice %x starts = [0] ends = [2] axes = [3] steps = [1] : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %x2 = dfg.slice %x starts = [2] ends = [9223372036854775807] axes = [-1] steps = [1] : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %n = dfg.neg %x2 : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %rot = dfg.concat %n, %x1 axis = -1 : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %bb = dfg.mul %rot, %bad : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %z = dfg.add %a, %bb : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  return %y, %z : tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>
}

// -----

// The tables computed in the graph, as the TorchScript and Optimum exports
// of transformers' rotary write them: positions times inv_freq, concat(f, f),
// cos / sin, a Cast and the attention scaling (a scalar Mul), unsqueezed
// over the heads. The rotary takes the same chain on the first half. The
// near miss adds a [4]-wide bias whose halves differ: not raised.
// CHECK-LABEL: func.func @rotary_tables_in_graph
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x2x3x4xf32>, %[[P:[^:]+]]: tensor<1x3x1xi64>, %[[F:[^:]+]]: tensor<2xf32>)
// CHECK: %[[PF:.+]] = dfg.cast %[[P]] to f32
// CHECK: %[[FR:.+]] = dfg.mul %[[PF]], %[[F]] : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[C:.+]] = dfg.cos %[[FR]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[S:.+]] = dfg.sin %[[FR]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[CS:.+]] = dfg.mul %[[C]], %{{.+}} : (tensor<1x3x2xf32>, tensor<f32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[SS:.+]] = dfg.mul %[[S]], %{{.+}} : (tensor<1x3x2xf32>, tensor<f32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[CU:.+]] = dfg.unsqueeze %[[CS]] axes = [1] : (tensor<1x3x2xf32>) -> tensor<1x1x3x2xf32>
// CHECK-DAG: %[[SU:.+]] = dfg.unsqueeze %[[SS]] axes = [1] : (tensor<1x3x2xf32>) -> tensor<1x1x3x2xf32>
// CHECK-DAG: %[[CR:.+]] = dfg.reshape %[[CU]] to [1, 3, 2]
// CHECK-DAG: %[[SR:.+]] = dfg.reshape %[[SU]] to [1, 3, 2]
// CHECK: %[[R:.+]] = dfg.rotary %[[X]], %[[CR]], %[[SR]] interleaved = false rotary_dim = 4
// CHECK: %[[NEAR:.+]] = dfg.add %{{.+}}, %{{.+}} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK: return %[[R]], %[[NEAR]]
func.func @rotary_tables_in_graph(%x: tensor<1x2x3x4xf32>, %pos: tensor<1x3x1xi64>, %inv: tensor<2xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %scaling = dfg.constant dense<1.0> : tensor<f32>
  %bias = dfg.constant dense<[0.0, 0.0, 0.0, 0.5]> : tensor<4xf32>
  %pf = dfg.cast %pos to f32 : (tensor<1x3x1xi64>) -> tensor<1x3x1xf32>
  %f = dfg.mul %pf, %inv : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %emb = dfg.concat %f, %f axis = -1 : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x4xf32>
  %c0 = dfg.cos %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = dfg.sin %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c1 = dfg.mul %c0, %scaling : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %s1 = dfg.mul %s0, %scaling : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %cos = dfg.unsqueeze %c1 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %sin = dfg.unsqueeze %s1 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %x1 = dfg.slice %x starts = [0] ends = [2] axes = [3] steps = [1] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %x2 = dfg.slice %x starts = [2] ends = [9223372036854775807] axes = [3] steps = [1] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %n = dfg.neg %x2 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %rot = dfg.concat %n, %x1 axis = -1 : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sb = dfg.add %sin, %bias : (tensor<1x1x3x4xf32>, tensor<4xf32>) -> tensor<1x1x3x4xf32>
  %bb = dfg.mul %rot, %sb : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %z = dfg.add %a, %bb : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y, %z : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Keys rotated before their heads move, as onnxruntime's transformer
// optimizer leaves them: x is [B, S, H, D] and the [B, 1, S, D] tables are
// transposed to [B, S, 1, D]. The repetition of the tables' halves is proven
// through the transpose; the rotary runs between two transposes. Near miss:
// a table transposed so that its last axis moves is not proven.
// CHECK-LABEL: func.func @rotary_tables_transposed
// CHECK: %[[XT:.+]] = dfg.transpose %{{.+}} perm = [0, 2, 1, 3] : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK: %[[R:.+]] = dfg.rotary %[[XT]], %{{.+}}, %{{.+}} interleaved = false rotary_dim = 4
// CHECK: %[[Y:.+]] = dfg.transpose %[[R]] perm = [0, 2, 1, 3] : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
// CHECK: %[[NEAR:.+]] = dfg.add %{{.+}}, %{{.+}} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
// CHECK: return %[[Y]], %[[NEAR]]
func.func @rotary_tables_transposed(%x: tensor<1x3x2x4xf32>, %pos: tensor<1x3x1xi64>, %inv: tensor<2xf32>, %odd: tensor<1x1x4x3xf32>) -> (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) {
  %pf = dfg.cast %pos to f32 : (tensor<1x3x1xi64>) -> tensor<1x3x1xf32>
  %f = dfg.mul %pf, %inv : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %emb = dfg.concat %f, %f axis = -1 : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x4xf32>
  %c0 = dfg.cos %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = dfg.sin %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %cu = dfg.unsqueeze %c0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %su = dfg.unsqueeze %s0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %cos = dfg.transpose %cu perm = [0, 2, 1, 3] : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
  %sin = dfg.transpose %su perm = [0, 2, 1, 3] : (tensor<1x1x3x4xf32>) -> tensor<1x3x1x4xf32>
  %x1 = dfg.slice %x starts = [0] ends = [2] axes = [3] steps = [1] : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %x2 = dfg.slice %x starts = [2] ends = [9223372036854775807] axes = [3] steps = [1] : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %n = dfg.neg %x2 : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %rot = dfg.concat %n, %x1 axis = -1 : (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x2x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %y = dfg.add %a, %b : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %sodd = dfg.transpose %odd perm = [0, 3, 1, 2] : (tensor<1x1x4x3xf32>) -> tensor<1x3x1x4xf32>
  %bb = dfg.mul %rot, %sodd : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %z = dfg.add %a, %bb : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  return %y, %z : tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>
}

// -----

// NanoChat turns the other way: rotate_half(x) = concat(x2, -x1), the
// rotation by the negated angles, so the rotary takes the negated sine
// table. Its q/k norm reads the rotation: the norm is raised, and its input
// sum stays the rotary's (a residual is fused only once nothing else is
// raised from the sum).
// CHECK-LABEL: func.func @rotary_the_other_way
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x2x3x4xf32>, %[[P:[^:]+]]: tensor<1x3x1xi64>, %[[F:[^:]+]]: tensor<2xf32>)
// CHECK: %[[S:.+]] = dfg.sin
// CHECK: %[[SU:.+]] = dfg.unsqueeze %[[S]]
// CHECK: %[[SR:.+]] = dfg.reshape %[[SU]] to [1, 3, 2]
// CHECK-NEXT: %[[NS:.+]] = dfg.neg %[[SR]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT: %[[CR:.+]] = dfg.reshape %{{.+}} to [1, 3, 2]
// CHECK: %[[R:.+]] = dfg.rotary %[[X]], %[[CR]], %[[NS]] interleaved = false rotary_dim = 4
// CHECK: %[[N:.+]] = dfg.rms_norm %[[R]], %{{.+}} axis = 3
// CHECK-NOT: residual
// CHECK: return %[[N]]
func.func @rotary_the_other_way(%x: tensor<1x2x3x4xf32>, %pos: tensor<1x3x1xi64>, %inv: tensor<2xf32>) -> tensor<1x2x3x4xf32> {
  %pf = dfg.cast %pos to f32 : (tensor<1x3x1xi64>) -> tensor<1x3x1xf32>
  %f = dfg.mul %pf, %inv : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %emb = dfg.concat %f, %f axis = -1 : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x4xf32>
  %c0 = dfg.cos %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = dfg.sin %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %cos = dfg.unsqueeze %c0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %sin = dfg.unsqueeze %s0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %x1 = dfg.slice %x starts = [0] ends = [2] axes = [3] steps = [1] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %x2 = dfg.slice %x starts = [2] ends = [9223372036854775807] axes = [3] steps = [1] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %n = dfg.neg %x1 : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %rot = dfg.concat %x2, %n axis = -1 : (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ones = dfg.constant dense<1.0> : tensor<4xf32>
  %eps = dfg.constant dense<1.0e-06> : tensor<f32>
  %sq = dfg.mul %y, %y : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ms = dfg.reduce_mean %sq axes = [3] keep_dims = true : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x1xf32>
  %me = dfg.add %ms, %eps : (tensor<1x2x3x1xf32>, tensor<f32>) -> tensor<1x2x3x1xf32>
  %sr = dfg.sqrt %me : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
  %rs = dfg.reciprocal %sr : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x1xf32>
  %nn = dfg.mul %y, %rs : (tensor<1x2x3x4xf32>, tensor<1x2x3x1xf32>) -> tensor<1x2x3x4xf32>
  %out = dfg.mul %nn, %ones : (tensor<1x2x3x4xf32>, tensor<4xf32>) -> tensor<1x2x3x4xf32>
  return %out : tensor<1x2x3x4xf32>
}

// -----

// CodeGen scales after the mask: softmax((Q K^T + mask) / 4). The scale
// applies to the mask too: a Where of constants (HF's 0 / finfo.min) is
// rebuilt with its constants scaled; any other additive mask is multiplied.
// CHECK-LABEL: func.func @scale_after_mask
// CHECK-SAME: (%{{[^:]+}}: tensor<1x2x3x4xf32>, %{{[^:]+}}: tensor<1x2x3x4xf32>, %{{[^:]+}}: tensor<1x2x3x4xf32>, %[[KEEP:[^:]+]]: tensor<1x1x3x3xi1>, %[[M:[^:]+]]: tensor<1x1x3x3xf32>)
// CHECK-DAG: %[[ZERO:.+]] = dfg.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[FILL:.+]] = dfg.constant dense<-8.50705867E+37> : tensor<f32>
// CHECK-DAG: %[[QUARTER:.+]] = dfg.constant dense<2.500000e-01> : tensor<f32>
// CHECK-DAG: %[[W:.+]] = dfg.where %[[KEEP]], %[[ZERO]], %[[FILL]]
// CHECK-DAG: %[[MS:.+]] = dfg.mul %[[M]], %[[QUARTER]]
// CHECK-DAG: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[W]]) scale = 2.500000e-01 causal = false
// CHECK-DAG: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[MS]]) scale = 2.500000e-01 causal = false
// CHECK-NOT: dfg.softmax
func.func @scale_after_mask(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %keep: tensor<1x1x3x3xi1>, %m: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %four = dfg.constant dense<4.0> : tensor<f32>
  %mask = dfg.where %keep, %zero, %min : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x3x3xf32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %a = dfg.add %s, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %d = dfg.div %a, %four : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %d axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %b = dfg.add %m, %s : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %e = dfg.div %b, %four : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %pb = dfg.softmax %e axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %ob = dfg.matmul %pb, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o, %ob : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// GPT-2 attention: scores divided by sqrt(d), the causal bool buffer through
// Where with -1e4, softmax over the keys: one causal dfg.attention.
// CHECK-LABEL: func.func @causal_where
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x3x4xf32>, %[[K:.+]]: tensor<1x2x3x4xf32>, %[[V:.+]]: tensor<1x2x3x4xf32>)
// CHECK-NEXT: %[[O:.+]] = dfg.attention %[[Q]], %[[K]], %[[V]] scale = 5.000000e-01 causal = true : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal_where(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %mask = dfg.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %fill = dfg.constant dense<-1.0e4> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %ss = dfg.div %s, %two : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = dfg.where %mask, %ss, %fill : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Llama attention: GQA repeat_kv on K and V (2 KV heads for 4 query heads),
// the scale split over Q and K (the dynamo exporter's sqrt(scale) on each),
// an additive mask that is an argument: it stays an operand.
// CHECK-LABEL: func.func @gqa_additive_mask
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x3x4xf32>, %[[K:.+]]: tensor<1x2x3x4xf32>, %[[V:.+]]: tensor<1x2x3x4xf32>, %[[M:.+]]: tensor<1x1x3x3xf32>)
// CHECK-NEXT: %[[O:.+]] = dfg.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]]) scale = 2.500000e-01 causal = false : (tensor<1x4x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @gqa_additive_mask(%q: tensor<1x4x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x4x3x4xf32> {
  %half = dfg.constant dense<0.5> : tensor<f32>
  %ku = dfg.unsqueeze %k axes = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x1x3x4xf32>
  %ke = dfg.expand %ku shape = [1, 2, 2, 3, 4] : (tensor<1x2x1x3x4xf32>) -> tensor<1x2x2x3x4xf32>
  %kr = dfg.reshape %ke to [1, 4, 3, 4] : (tensor<1x2x2x3x4xf32>) -> tensor<1x4x3x4xf32>
  %vu = dfg.unsqueeze %v axes = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x1x3x4xf32>
  %ve = dfg.expand %vu shape = [1, 2, 2, 3, 4] : (tensor<1x2x1x3x4xf32>) -> tensor<1x2x2x3x4xf32>
  %vr = dfg.reshape %ve to [1, 4, 3, 4] : (tensor<1x2x2x3x4xf32>) -> tensor<1x4x3x4xf32>
  %qs = dfg.mul %q, %half : (tensor<1x4x3x4xf32>, tensor<f32>) -> tensor<1x4x3x4xf32>
  %kt = dfg.transpose %kr perm = [0, 1, 3, 2] : (tensor<1x4x3x4xf32>) -> tensor<1x4x4x3xf32>
  %kts = dfg.mul %kt, %half : (tensor<1x4x4x3xf32>, tensor<f32>) -> tensor<1x4x4x3xf32>
  %s = dfg.matmul %qs, %kts : (tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x3x3xf32>
  %sm = dfg.add %s, %mask : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = dfg.softmax %sm axis = 3 : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = dfg.matmul %p, %vr : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  return %o : tensor<1x4x3x4xf32>
}

// -----

// A literal additive mask with zeros on and below the diagonal and -inf
// above is causal; one that hides the diagonal is not, and stays an operand.
// CHECK-LABEL: func.func @additive_masks
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 1.000000e+00 causal = true
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 1.000000e+00 causal = false
func.func @additive_masks(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>) -> (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) {
  %causal = dfg.constant dense<[[0.0, 0xFF800000], [0.0, 0.0]]> : tensor<2x2xf32>
  %strict = dfg.constant dense<[[0xFF800000, 0xFF800000], [0.0, 0xFF800000]]> : tensor<2x2xf32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %a = dfg.add %s, %causal : (tensor<1x1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x1x2x2xf32>
  %pa = dfg.softmax %a axis = -1 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %oa = dfg.matmul %pa, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %b = dfg.add %strict, %s : (tensor<2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %pb = dfg.softmax %b axis = -1 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %ob = dfg.matmul %pb, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %oa, %ob : tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>
}

// -----

// A KV cache extended by Concat: the past tensors become operands and the
// concatenations the op's present results; the single new query sees every
// key (causal relative to the past length).
// CHECK-LABEL: func.func @kv_cache
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x1x4xf32>, %[[K:.+]]: tensor<1x2x1x4xf32>, %[[V:.+]]: tensor<1x2x1x4xf32>, %[[PK:.+]]: tensor<1x2x3x4xf32>, %[[PV:.+]]: tensor<1x2x3x4xf32>)
// CHECK-NEXT: %[[O:.+]], %[[P:.+]]:2 = dfg.attention %[[Q]], %[[K]], %[[V]] past(%[[PK]], %[[PV]]) scale = 5.000000e-01 causal = true
// CHECK-NEXT: return %[[O]], %[[P]]#0, %[[P]]#1
func.func @kv_cache(%q: tensor<1x2x1x4xf32>, %k: tensor<1x2x1x4xf32>, %v: tensor<1x2x1x4xf32>, %pk: tensor<1x2x3x4xf32>, %pv: tensor<1x2x3x4xf32>) -> (tensor<1x2x1x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %mask = dfg.constant dense<true> : tensor<1x1x1x4xi1>
  %fill = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %scale = dfg.constant dense<0.5> : tensor<f32>
  %kk = dfg.concat %pk, %k axis = -2 : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x4x4xf32>
  %vv = dfg.concat %pv, %v axis = 2 : (tensor<1x2x3x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x4x4xf32>
  %kt = dfg.transpose %kk perm = [0, 1, 3, 2] : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x1x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x1x4xf32>
  %ss = dfg.mul %s, %scale : (tensor<1x2x1x4xf32>, tensor<f32>) -> tensor<1x2x1x4xf32>
  %m = dfg.where %mask, %ss, %fill : (tensor<1x1x1x4xi1>, tensor<1x2x1x4xf32>, tensor<f32>) -> tensor<1x2x1x4xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<1x2x1x4xf32>) -> tensor<1x2x1x4xf32>
  %o = dfg.matmul %p, %vv : (tensor<1x2x1x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x1x4xf32>
  return %o, %kk, %vv : tensor<1x2x1x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// Near misses: a softmax over the queries (axis 2), and a Where whose fill
// (-1) is not a mask value, are not attention.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: dfg.attention
// CHECK: dfg.softmax %{{.+}} axis = 2
// CHECK-NOT: dfg.attention
// CHECK: dfg.where
// CHECK-NOT: dfg.attention
func.func @not_attention(%q: tensor<1x1x2x4xf32>, %k: tensor<1x1x2x4xf32>, %v: tensor<1x1x2x4xf32>, %mask: tensor<1x1x2x2xi1>) -> (tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>) {
  %fill = dfg.constant dense<-1.0> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %pq = dfg.softmax %s axis = 2 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %oq = dfg.matmul %pq, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  %m = dfg.where %mask, %s, %fill : (tensor<1x1x2x2xi1>, tensor<1x1x2x2xf32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  %pm = dfg.softmax %m axis = -1 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %om = dfg.matmul %pm, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %oq, %om : tensor<1x1x2x4xf32>, tensor<1x1x2x4xf32>
}

// -----

// Mixed precision (Optimum's fp16 Llama): the norm's statistics and the
// softmax are taken in f32 between casts; both raise to f16 ops.
// CHECK-LABEL: func.func @fp16_with_f32_statistics
// CHECK-SAME: (%[[X:.+]]: tensor<2x8xf16>, %[[G:.+]]: tensor<8xf16>, %[[Q:.+]]: tensor<1x1x2x4xf16>, %[[K:.+]]: tensor<1x1x2x4xf16>, %[[V:.+]]: tensor<1x1x2x4xf16>)
// CHECK-NEXT: %[[N:.+]] = dfg.rms_norm %[[X]], %[[G]] axis = 1 epsilon = 9.99999997E-7 : (tensor<2x8xf16>, tensor<8xf16>) -> tensor<2x8xf16>
// CHECK-NEXT: %[[O:.+]] = dfg.attention %[[Q]], %[[K]], %[[V]] scale = 1.000000e+00 causal = false : (tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16>, tensor<1x1x2x4xf16>) -> tensor<1x1x2x4xf16>
// CHECK-NEXT: return %[[N]], %[[O]]
func.func @fp16_with_f32_statistics(%x: tensor<2x8xf16>, %g: tensor<8xf16>, %q: tensor<1x1x2x4xf16>, %k: tensor<1x1x2x4xf16>, %v: tensor<1x1x2x4xf16>) -> (tensor<2x8xf16>, tensor<1x1x2x4xf16>) {
  %eps = dfg.constant dense<1.0e-6> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %xw = dfg.cast %x to f32 : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %sq = dfg.pow %xw, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %m = dfg.reduce_mean %sq axes = [1] keep_dims = true : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %me = dfg.add %m, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %r = dfg.sqrt %me : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %ir = dfg.reciprocal %r : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = dfg.mul %xw, %ir : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %nn = dfg.cast %n to f16 : (tensor<2x8xf32>) -> tensor<2x8xf16>
  %y = dfg.mul %g, %nn : (tensor<8xf16>, tensor<2x8xf16>) -> tensor<2x8xf16>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x1x2x4xf16>) -> tensor<1x1x4x2xf16>
  %s = dfg.matmul %q, %kt : (tensor<1x1x2x4xf16>, tensor<1x1x4x2xf16>) -> tensor<1x1x2x2xf16>
  %sw = dfg.cast %s to f32 : (tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf32>
  %p = dfg.softmax %sw axis = -1 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %pn = dfg.cast %p to f16 : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf16>
  %o = dfg.matmul %pn, %v : (tensor<1x1x2x2xf16>, tensor<1x1x2x4xf16>) -> tensor<1x1x2x4xf16>
  return %y, %o : tensor<2x8xf16>, tensor<1x1x2x4xf16>
}

// -----

// Partial rotary: RoPE on the first 4 of 8 features, the rest passed
// through, is one rotary op with rotary_dim = 4.
// CHECK-LABEL: func.func @partial_rotary
// CHECK-SAME: (%[[X:.+]]: tensor<1x2x2x8xf32>)
// CHECK: %[[R:.+]] = dfg.rotary %[[X]], %{{.+}}, %{{.+}} interleaved = false rotary_dim = 4 : (tensor<1x2x2x8xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>) -> tensor<1x2x2x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @partial_rotary(%in: tensor<1x2x2x8xf32>) -> tensor<1x2x2x8xf32> {
  %cos = dfg.constant dense<[[[[1.0, 0.5, 1.0, 0.5], [0.25, 0.125, 0.25, 0.125]]]]> : tensor<1x1x2x4xf32>
  %sin = dfg.constant dense<[[[[0.0, 0.75, 0.0, 0.75], [0.5, 0.25, 0.5, 0.25]]]]> : tensor<1x1x2x4xf32>
  %x = dfg.slice %in starts = [0] ends = [4] axes = [3] steps = [1] : (tensor<1x2x2x8xf32>) -> tensor<1x2x2x4xf32>
  %rest = dfg.slice %in starts = [4] ends = [8] axes = [3] steps = [1] : (tensor<1x2x2x8xf32>) -> tensor<1x2x2x4xf32>
  %x1 = dfg.slice %x starts = [0] ends = [2] axes = [3] steps = [1] : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %x2 = dfg.slice %x starts = [2] ends = [4] axes = [3] steps = [1] : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x2xf32>
  %n = dfg.neg %x2 : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %rot = dfg.concat %n, %x1 axis = 3 : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x2x4xf32>, tensor<1x1x2x4xf32>) -> tensor<1x2x2x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %out = dfg.concat %y, %rest axis = -1 : (tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>) -> tensor<1x2x2x8xf32>
  return %out : tensor<1x2x2x8xf32>
}

// -----

// Interleaved RoPE as Cohere and GLM write it: rotate_every_two(x) =
// stack(-x[..., 1::2], x[..., 0::2], -1) flattened, tables computed in the
// graph by repeat_interleave(f, 2) (unsqueeze, expand to [..., 2], flatten)
// before cos / sin. The rotary reads f once. Near misses, left alone: the
// stack in the other order (x[0::2] first: not a rotation by +angle), and
// tables concat(f, f), whose pairs are not equal.
// CHECK-LABEL: func.func @interleaved_rotary_tables_in_graph
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x2x3x4xf32>, %[[P:[^:]+]]: tensor<1x3x1xf32>, %[[F:[^:]+]]: tensor<2xf32>)
// CHECK: %[[FR:.+]] = dfg.mul %[[P]], %[[F]] : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
// CHECK: %[[F1:.+]] = dfg.unsqueeze %[[FR]] axes = [3] : (tensor<1x3x2xf32>) -> tensor<1x3x2x1xf32>
// CHECK-DAG: %[[FC:.+]] = dfg.reshape %[[F1]] to [0, 0, 2] : (tensor<1x3x2x1xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[C:.+]] = dfg.cos %[[FC]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[CU:.+]] = dfg.unsqueeze %[[C]] axes = [1]
// CHECK-DAG: %[[FS:.+]] = dfg.reshape %[[F1]] to [0, 0, 2] : (tensor<1x3x2x1xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[S:.+]] = dfg.sin %[[FS]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-DAG: %[[SU:.+]] = dfg.unsqueeze %[[S]] axes = [1]
// CHECK-DAG: %[[SR:.+]] = dfg.reshape %[[SU]] to [1, 3, 2]
// CHECK-DAG: %[[CR:.+]] = dfg.reshape %[[CU]] to [1, 3, 2]
// CHECK: %[[R:.+]] = dfg.rotary %[[X]], %[[CR]], %[[SR]] interleaved = true rotary_dim = 4 : (tensor<1x2x3x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NOT: dfg.rotary
// CHECK: return %[[R]], %{{.+}}, %{{.+}} :
func.func @interleaved_rotary_tables_in_graph(%x: tensor<1x2x3x4xf32>, %pos: tensor<1x3x1xf32>, %inv: tensor<2xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %f = dfg.mul %pos, %inv : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %f1 = dfg.unsqueeze %f axes = [3] : (tensor<1x3x2xf32>) -> tensor<1x3x2x1xf32>
  %f2 = dfg.expand %f1 shape = [1, 1, 2, 2] : (tensor<1x3x2x1xf32>) -> tensor<1x3x2x2xf32>
  %emb = dfg.reshape %f2 to [0, 0, 4] : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
  %c0 = dfg.cos %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = dfg.sin %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %cos = dfg.unsqueeze %c0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %sin = dfg.unsqueeze %s0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %even = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %odd = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %n = dfg.neg %odd : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %n1 = dfg.unsqueeze %n axes = [-1] : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2x1xf32>
  %e1 = dfg.unsqueeze %even axes = [-1] : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2x1xf32>
  %st = dfg.concat %n1, %e1 axis = -1 : (tensor<1x2x3x2x1xf32>, tensor<1x2x3x2x1xf32>) -> tensor<1x2x3x2x2xf32>
  %rot = dfg.reshape %st to [0, 2, 0, 4] : (tensor<1x2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  // Near miss 1: stack(x[0::2], -x[1::2]).
  %sw = dfg.concat %e1, %n1 axis = -1 : (tensor<1x2x3x2x1xf32>, tensor<1x2x3x2x1xf32>) -> tensor<1x2x3x2x2xf32>
  %rsw = dfg.reshape %sw to [0, 2, 0, 4] : (tensor<1x2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
  %bsw = dfg.mul %rsw, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %z = dfg.add %a, %bsw : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  // Near miss 2: tables concat(f, f) under the interleaved rotation.
  %h = dfg.concat %f, %f axis = -1 : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x4xf32>
  %hc0 = dfg.cos %h : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %hs0 = dfg.sin %h : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %hc = dfg.unsqueeze %hc0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %hs = dfg.unsqueeze %hs0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %ha = dfg.mul %x, %hc : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %hb = dfg.mul %rot, %hs : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %w = dfg.add %ha, %hb : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y, %z, %w : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// RoFormer's dynamo export: the sinusoidal table read at the positions and
// split into its sine and cosine halves, each repeated in pairs by a
// concat of the unsqueezed half with itself, flattened by a reshape that
// infers the symbolic sequence (-1) and keeps the rest: the interleaved
// rotary, on the halves as they are.
// CHECK-LABEL: func.func @interleaved_rotary_inferred_sequence
// CHECK: %[[T:.+]]:2 = dfg.split
// CHECK-DAG: %[[S1:.+]] = dfg.unsqueeze %[[T]]#0
// CHECK-DAG: %[[C1:.+]] = dfg.unsqueeze %[[T]]#1
// CHECK-DAG: %[[C2:.+]] = dfg.reshape %[[C1]] to [0, 0, 0, 2]
// CHECK-DAG: %[[S2:.+]] = dfg.reshape %[[S1]] to [0, 0, 0, 2]
// CHECK-DAG: %[[S3:.+]] = dfg.reshape %[[S2]] to [1, -1, 2]
// CHECK-DAG: %[[C3:.+]] = dfg.reshape %[[C2]] to [1, -1, 2]
// CHECK: dfg.rotary %{{.+}}, %[[C3]], %[[S3]] interleaved = true rotary_dim = 4
// CHECK-NOT: dfg.neg
func.func @interleaved_rotary_inferred_sequence(%x: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %table: tensor<1x1x?x4xf32> {dfg.dim_names = ["", "", "s", ""]}) -> tensor<?x2x?x4xf32> {
  %h:2 = dfg.split %table axis = 3 sizes = [2, 2] : (tensor<1x1x?x4xf32>) -> (tensor<1x1x?x2xf32>, tensor<1x1x?x2xf32>)
  %s1 = dfg.unsqueeze %h#0 axes = [-1] : (tensor<1x1x?x2xf32>) -> tensor<1x1x?x2x1xf32>
  %s2 = dfg.concat %s1, %s1 axis = -1 : (tensor<1x1x?x2x1xf32>, tensor<1x1x?x2x1xf32>) -> tensor<1x1x?x2x2xf32>
  %sin = dfg.reshape %s2 to [1, 1, -1, 4] : (tensor<1x1x?x2x2xf32>) -> tensor<1x1x?x4xf32>
  %c1 = dfg.unsqueeze %h#1 axes = [-1] : (tensor<1x1x?x2xf32>) -> tensor<1x1x?x2x1xf32>
  %c2 = dfg.concat %c1, %c1 axis = -1 : (tensor<1x1x?x2x1xf32>, tensor<1x1x?x2x1xf32>) -> tensor<1x1x?x2x2xf32>
  %cos = dfg.reshape %c2 to [1, 1, -1, 4] : (tensor<1x1x?x2x2xf32>) -> tensor<1x1x?x4xf32>
  %odd = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x?x2xf32>
  %even = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x?x2xf32>
  %n = dfg.neg %odd : (tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %n1 = dfg.unsqueeze %n axes = [-1] : (tensor<?x2x?x2xf32>) -> tensor<?x2x?x2x1xf32>
  %e1 = dfg.unsqueeze %even axes = [-1] : (tensor<?x2x?x2xf32>) -> tensor<?x2x?x2x1xf32>
  %st = dfg.concat %n1, %e1 axis = -1 : (tensor<?x2x?x2x1xf32>, tensor<?x2x?x2x1xf32>) -> tensor<?x2x?x2x2xf32>
  %rot = dfg.reshape %st to [0, 2, 0, 4] : (tensor<?x2x?x2x2xf32>) -> tensor<?x2x?x4xf32>
  %a = dfg.mul %x, %cos : (tensor<?x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<?x2x?x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<?x2x?x4xf32>, tensor<1x1x?x4xf32>) -> tensor<?x2x?x4xf32>
  %y = dfg.add %a, %b : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// GPT-J and CodeGen: partial interleaved RoPE on the [B, S, H, D] view
// (the first 4 of 8 features), tables [B, S, 1, 4] with literal repeated
// pairs, the heads transposed afterwards. The rotation runs on [B, H, S, D]
// between two transposes; the second cancels the exporter's.
// CHECK-LABEL: func.func @interleaved_partial_rotary_sequence_first
// CHECK-SAME: (%[[IN:.+]]: tensor<1x3x2x8xf32>)
// CHECK: %[[T:.+]] = dfg.transpose %[[IN]] perm = [0, 2, 1, 3] : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK: %[[R:.+]] = dfg.rotary %[[T]], %{{.+}}, %{{.+}} interleaved = true rotary_dim = 4 : (tensor<1x2x3x8xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @interleaved_partial_rotary_sequence_first(%in: tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32> {
  %cos = dfg.constant dense<[[[[1.0, 1.0, 0.5, 0.5]], [[0.25, 0.25, 0.125, 0.125]], [[0.75, 0.75, 0.5, 0.5]]]]> : tensor<1x3x1x4xf32>
  %sin = dfg.constant dense<[[[[0.0, 0.0, 0.75, 0.75]], [[0.5, 0.5, 0.25, 0.25]], [[0.125, 0.125, 1.0, 1.0]]]]> : tensor<1x3x1x4xf32>
  %x = dfg.slice %in starts = [0] ends = [4] axes = [3] steps = [1] : (tensor<1x3x2x8xf32>) -> tensor<1x3x2x4xf32>
  %rest = dfg.slice %in starts = [4] ends = [9223372036854775807] axes = [3] steps = [1] : (tensor<1x3x2x8xf32>) -> tensor<1x3x2x4xf32>
  %even = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %odd = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x2xf32>
  %n = dfg.neg %odd : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %n1 = dfg.unsqueeze %n axes = [-1] : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2x1xf32>
  %e1 = dfg.unsqueeze %even axes = [-1] : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2x1xf32>
  %st = dfg.concat %n1, %e1 axis = -1 : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x2xf32>
  %rot = dfg.reshape %st to [0, 0, 2, 4] : (tensor<1x3x2x2x2xf32>) -> tensor<1x3x2x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %y = dfg.add %a, %b : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %cat = dfg.concat %y, %rest axis = -1 : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x8xf32>
  %out = dfg.transpose %cat perm = [0, 2, 1, 3] : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  return %out : tensor<1x2x3x8xf32>
}

// -----

// Symbolic lengths (a dynamic-axes export): GPT-2's bool buffer sliced to
// rows [past, past + seq) and columns [0, past + seq) with a KV cache is
// causal; the same slice starting at row 0 is not, and stays an operand.
// CHECK-LABEL: func.func @symbolic_sliced_buffer
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = true
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = false
func.func @symbolic_sliced_buffer(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %bias = dfg.constant dense<[[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]]> : tensor<1x1x4x4xi1>
  %fill = dfg.constant dense<-1.0e4> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %kk = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vv = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kk perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %rows = dfg.symbolic_slice %bias starts = affine_map<()[s0, s1] -> (s0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [2] steps = [1] symbols ["p", "s"] : (tensor<1x1x4x4xi1>) -> tensor<1x1x?x4xi1>
  %mask = dfg.symbolic_slice %rows starts = affine_map<()[s0, s1] -> (0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [3] steps = [1] symbols ["p", "s"] : (tensor<1x1x?x4xi1>) -> tensor<1x1x?x?xi1>
  %m = dfg.where %mask, %ss, %fill : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %vv : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %rows0 = dfg.symbolic_slice %bias starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [2] steps = [1] symbols ["s"] : (tensor<1x1x4x4xi1>) -> tensor<1x1x?x4xi1>
  %mask0 = dfg.symbolic_slice %rows0 starts = affine_map<()[s0, s1] -> (0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [3] steps = [1] symbols ["p", "s"] : (tensor<1x1x?x4xi1>) -> tensor<1x1x?x?xi1>
  %m0 = dfg.where %mask0, %ss, %fill : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p0 = dfg.softmax %m0 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o0 = dfg.matmul %p0, %vv : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %o0 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// GPT-BigCode under transformers 4.x: the causal buffer and the padding
// joined on [b, queries, keys], the heads unsqueezed at axis 2 and moved to
// axis 1 by a transpose of the additive mask. The layout moves onto the
// condition (one unsqueeze at axis 1), so the attention is causal and the
// padding alone stays its mask, laid out as the mask was. Near miss: a
// transpose that swaps queries and keys is not causal.
// CHECK-LABEL: func.func @mask_laid_out_after_select
// CHECK: %[[PAD:.+]] = dfg.unsqueeze %{{.+}} axes = [1] : (tensor<?x1x?xi1>) -> tensor<?x1x1x?xi1>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %{{.+}}, %{{.+}} : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale = 5.000000e-01 causal = true
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = false
func.func @mask_laid_out_after_select(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pad: tensor<?x?xi1> {dfg.dim_names = ["b", "s"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %bias = dfg.constant dense<[[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]]> : tensor<1x4x4xi1>
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %fill = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %rows = dfg.symbolic_slice %bias starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [1] steps = [1] symbols ["s"] : (tensor<1x4x4xi1>) -> tensor<1x?x4xi1>
  %causal = dfg.symbolic_slice %rows starts = affine_map<()[s0] -> (0)> ends = affine_map<()[s0] -> (s0)> axes = [2] steps = [1] symbols ["s"] : (tensor<1x?x4xi1>) -> tensor<1x?x?xi1>
  %pad3 = dfg.unsqueeze %pad axes = [1] : (tensor<?x?xi1>) -> tensor<?x1x?xi1>
  %both = dfg.and %causal, %pad3 : (tensor<1x?x?xi1>, tensor<?x1x?xi1>) -> tensor<?x?x?xi1>
  %heads = dfg.unsqueeze %both axes = [2] : (tensor<?x?x?xi1>) -> tensor<?x?x1x?xi1>
  %add = dfg.where %heads, %zero, %fill : (tensor<?x?x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?x1x?xf32>
  %mask = dfg.transpose %add perm = [0, 2, 1, 3] : (tensor<?x?x1x?xf32>) -> tensor<?x1x?x?xf32>
  %m = dfg.add %ss, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %heads1 = dfg.unsqueeze %both axes = [1] : (tensor<?x?x?xi1>) -> tensor<?x1x?x?xi1>
  %add1 = dfg.where %heads1, %zero, %fill : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %swapped = dfg.transpose %add1 perm = [0, 1, 3, 2] : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %m1 = dfg.add %ss, %swapped : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p1 = dfg.softmax %m1 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o1 = dfg.matmul %p1, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %o1 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Symbolic lengths, Llama's spelling: where(range(0, s) as a row <=
// range(0, s) as a column, 0, -1e9) added to the scores, GQA repeat_kv with
// a symbolic sequence, no cache: causal. With `less` (the diagonal hidden)
// it is not.
// CHECK-LABEL: func.func @symbolic_range_mask
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 5.000000e-01 causal = true
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = false
func.func @symbolic_range_mask(%q: tensor<?x4x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}) -> (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %hidden = dfg.constant dense<-1.0e9> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %r = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %row = dfg.unsqueeze %r axes = [0] : (tensor<?xi64>) -> tensor<1x?xi64>
  %col = dfg.unsqueeze %r axes = [1] : (tensor<?xi64>) -> tensor<?x1xi64>
  %vis = dfg.less_or_equal %row, %col : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %add = dfg.where %vis, %zero, %hidden : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %mask = dfg.unsqueeze %add axes = [0, 1] : (tensor<?x?xf32>) -> tensor<1x1x?x?xf32>
  %ku = dfg.unsqueeze %k axes = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x1x?x4xf32>
  %ke = dfg.expand %ku shape = [1, 2, 2, 1, 4] : (tensor<?x2x1x?x4xf32>) -> tensor<?x2x2x?x4xf32>
  %kr = dfg.reshape %ke to [0, 4, -1, 4] : (tensor<?x2x2x?x4xf32>) -> tensor<?x4x?x4xf32>
  %vu = dfg.unsqueeze %v axes = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x1x?x4xf32>
  %ve = dfg.expand %vu shape = [1, 2, 2, 1, 4] : (tensor<?x2x1x?x4xf32>) -> tensor<?x2x2x?x4xf32>
  %vr = dfg.reshape %ve to [0, 4, -1, 4] : (tensor<?x2x2x?x4xf32>) -> tensor<?x4x?x4xf32>
  %kt = dfg.transpose %kr perm = [0, 1, 3, 2] : (tensor<?x4x?x4xf32>) -> tensor<?x4x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x4x?x4xf32>, tensor<?x4x4x?xf32>) -> tensor<?x4x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %m = dfg.add %ss, %mask : (tensor<?x4x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = dfg.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  %strict = dfg.less %row, %col : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %add1 = dfg.where %strict, %zero, %hidden : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %mask1 = dfg.unsqueeze %add1 axes = [0, 1] : (tensor<?x?xf32>) -> tensor<1x1x?x?xf32>
  %m1 = dfg.add %ss, %mask1 : (tensor<?x4x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p1 = dfg.softmax %m1 axis = -1 : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o1 = dfg.matmul %p1, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  return %o, %o1 : tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>
}

// -----

// PyTorch's SDPA as the exporters write it: the NaN guard after the softmax
// (where(isnan(p), 0, p): dfg.attention gives zeros on fully masked rows
// too), and K^T as the dynamo exporter spells it, reshape to 3-D, transpose,
// reshape back.
// CHECK-LABEL: func.func @sdpa_nan_guard_and_3d_transpose
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x3x4xf32>, %[[K:.+]]: tensor<1x2x3x4xf32>, %[[V:.+]]: tensor<1x2x3x4xf32>, %[[M:.+]]: tensor<1x1x3x3xf32>)
// CHECK-NEXT: %[[O:.+]] = dfg.attention %[[Q]], %[[K]], %[[V]] mask(%[[M]]) scale = 5.000000e-01 causal = false
// CHECK-NEXT: return %[[O]]
func.func @sdpa_nan_guard_and_3d_transpose(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<1x1x3x3xf32>) -> tensor<1x2x3x4xf32> {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %half = dfg.constant dense<0.5> : tensor<f32>
  %k3 = dfg.reshape %k to [2, 3, 4] : (tensor<1x2x3x4xf32>) -> tensor<2x3x4xf32>
  %kt3 = dfg.transpose %k3 perm = [0, 2, 1] : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %kt = dfg.reshape %kt3 to [1, 2, 4, 3] : (tensor<2x4x3xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %ss = dfg.mul %s, %half : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %sm = dfg.add %ss, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %sm axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %nan = dfg.is_nan %p : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xi1>
  %g = dfg.where %nan, %zero, %p : (tensor<1x2x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %g, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// GPT-2's TorchScript export: K^T as one transpose [0, 2, 3, 1] of the
// [B, S, H, D] view; K becomes transpose [0, 2, 1, 3] of it.
// CHECK-LABEL: func.func @key_transposed_from_bshd
// CHECK-SAME: (%[[Q:.+]]: tensor<1x2x3x4xf32>, %[[X:.+]]: tensor<1x3x2x4xf32>, %[[V:.+]]: tensor<1x2x3x4xf32>)
// CHECK-NEXT: %[[K:.+]] = dfg.transpose %[[X]] perm = [0, 2, 1, 3] : (tensor<1x3x2x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[O:.+]] = dfg.attention %[[Q]], %[[K]], %[[V]] scale = 1.000000e+00 causal = false
// CHECK-NEXT: return %[[O]]
func.func @key_transposed_from_bshd(%q: tensor<1x2x3x4xf32>, %x: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = dfg.transpose %x perm = [0, 2, 3, 1] : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %s axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Near misses that must not fire: a guard that fills NaN rows with 1 (not
// what attention computes), and a 3-D transpose whose reshape does not keep
// K's last two dimensions (a different permutation).
// CHECK-LABEL: func.func @sdpa_near_misses
// CHECK-NOT: dfg.attention
// CHECK: return
func.func @sdpa_near_misses(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %one = dfg.constant dense<1.0> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %s axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %nan = dfg.is_nan %p : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xi1>
  %g = dfg.where %nan, %one, %p : (tensor<1x2x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %g, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %k3 = dfg.reshape %k to [1, 6, 4] : (tensor<1x2x3x4xf32>) -> tensor<1x6x4xf32>
  %kt3 = dfg.transpose %k3 perm = [0, 2, 1] : (tensor<1x6x4xf32>) -> tensor<1x4x6xf32>
  %kt4 = dfg.reshape %kt3 to [1, 2, 4, 3] : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %s2 = dfg.matmul %q, %kt4 : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = dfg.softmax %s2 axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o2 = dfg.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o, %o2 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// A parallel residual (GPT-NeoX, GPT-J, Phi-2, Falcon): two norms read the
// same sum. Only one may take it as its fused residual; readers before that
// norm keep the add (this once moved the sum into the later norm, which the
// earlier one then read before it was defined).
// CHECK-LABEL: func.func @parallel_residual
// CHECK-COUNT-2: dfg.layer_norm
// CHECK: return
func.func @parallel_residual(%h: tensor<2x8x32xf32>, %r: tensor<2x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>) {
  %x = dfg.add %h, %r : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %a = dfg.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %m = dfg.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %y = dfg.add %a, %x : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %y, %m, %x : tensor<2x8x32xf32>, tensor<2x8x32xf32>, tensor<2x8x32xf32>
}

// -----

// HF's combined mask over a KV cache (past p, new s): query positions
// range(p, p + s) as a column >= key positions range(0, p + s) as a row, and
// a literal true, and the padding mask; expanded, sliced whole, where(.., 0,
// -inf). The comparison is the causal factor: `causal = true`, and the
// padding alone stays the mask. With a finite fill (finfo.min, as the
// dynamo exports write it) the causal limit carries the same fill
// (`causal_fill`), so that a row whose every key is masked still spreads
// over all keys. Near miss: a finite fill above -1e30 (-10000) might not
// absorb the scores, so that mask stays whole.
// CHECK-LABEL: func.func @causal_and_padding
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x?xi1>
// CHECK-DAG: %[[ZERO:.+]] = dfg.constant dense<0.000000e+00>
// CHECK-DAG: %[[INF:.+]] = dfg.constant dense<0xFF800000>
// CHECK-DAG: %[[MIN:.+]] = dfg.constant dense<-3.40282347E+38>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %[[ZERO]], %[[INF]] : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = true :
// CHECK: %[[MF:.+]] = dfg.where %[[PAD]], %[[ZERO]], %[[MIN]] : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[MF]]) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = false :
func.func @causal_and_padding(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "t"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %inf = dfg.constant dense<0xFF800000> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %true = dfg.constant dense<true> : tensor<i1>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %qpos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %kpos = dfg.range affine_map<()[s0, s1] -> (0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %col = dfg.unsqueeze %qpos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %kpos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %vt = dfg.and %vis, %true : (tensor<1x1x?x?xi1>, tensor<i1>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vt, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %ex = dfg.expand %both shape = [1, 1, 1, 1] : (tensor<?x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %sl = dfg.slice %ex starts = [0] ends = [9223372036854775807] axes = [3] steps = [1] : (tensor<?x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %mask = dfg.where %sl, %zero, %inf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kc = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vc = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kc perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = dfg.add %ss, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %maskf = dfg.where %sl, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %mf = dfg.add %ss, %maskf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pf = dfg.softmax %mf axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %of = dfg.matmul %pf, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %small = dfg.constant dense<-1.0e4> : tensor<f32>
  %masks = dfg.where %sl, %zero, %small : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %ms = dfg.add %ss, %masks : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ps = dfg.softmax %ms axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %os = dfg.matmul %ps, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %of, %os : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// At static lengths the causal factor of HF's mask is a literal (an export
// traced at one length, Falcon-H1's or Zamba's, or one compiled with --dim:
// the ranges fold): its values are the triangle, so the op is causal and the
// padding alone stays the mask. Near miss: a literal that also hides each
// query's own key stays in the mask.
// CHECK-LABEL: func.func @literal_causal_and_padding
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x3xi1>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %{{.+}}, %{{.+}} : (tensor<?x1x1x3xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x3xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale = 5.000000e-01 causal = true :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = false :
func.func @literal_causal_and_padding(%q: tensor<?x2x3x4xf32> {dfg.dim_names = ["b", "", "", ""]}, %k: tensor<?x2x3x4xf32> {dfg.dim_names = ["b", "", "", ""]}, %v: tensor<?x2x3x4xf32> {dfg.dim_names = ["b", "", "", ""]}, %pad: tensor<?x1x1x3xi1> {dfg.dim_names = ["b", "", "", ""]}) -> (tensor<?x2x3x4xf32>, tensor<?x2x3x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %inf = dfg.constant dense<0xFF800000> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %tril = dfg.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %strict = dfg.constant dense<[[[[false, false, false], [true, false, false], [true, true, false]]]]> : tensor<1x1x3x3xi1>
  %both = dfg.and %tril, %pad : (tensor<1x1x3x3xi1>, tensor<?x1x1x3xi1>) -> tensor<?x1x3x3xi1>
  %mask = dfg.where %both, %zero, %inf : (tensor<?x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x3x3xf32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x3x4xf32>) -> tensor<?x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x3x4xf32>, tensor<?x2x4x3xf32>) -> tensor<?x2x3x3xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x3x3xf32>, tensor<f32>) -> tensor<?x2x3x3xf32>
  %m = dfg.add %ss, %mask : (tensor<?x2x3x3xf32>, tensor<?x1x3x3xf32>) -> tensor<?x2x3x3xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x3x3xf32>) -> tensor<?x2x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<?x2x3x3xf32>, tensor<?x2x3x4xf32>) -> tensor<?x2x3x4xf32>
  %both2 = dfg.and %strict, %pad : (tensor<1x1x3x3xi1>, tensor<?x1x1x3xi1>) -> tensor<?x1x3x3xi1>
  %mask2 = dfg.where %both2, %zero, %inf : (tensor<?x1x3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x3x3xf32>
  %m2 = dfg.add %ss, %mask2 : (tensor<?x2x3x3xf32>, tensor<?x1x3x3xf32>) -> tensor<?x2x3x3xf32>
  %p2 = dfg.softmax %m2 axis = -1 : (tensor<?x2x3x3xf32>) -> tensor<?x2x3x3xf32>
  %o2 = dfg.matmul %p2, %v : (tensor<?x2x3x3xf32>, tensor<?x2x3x4xf32>) -> tensor<?x2x3x4xf32>
  return %o, %o2 : tensor<?x2x3x4xf32>, tensor<?x2x3x4xf32>
}

// -----

// transformers 4.x's causal and padding mask, additive all the way: C =
// triu(full(F), 1) * (key > query) holds F above the diagonal, and M =
// where(C + padding == 0, F, C) adds the padded keys. M holds F where C's
// term does or where `C + padding == 0`: C's term is causal, so the op is
// causal with finfo.min as causal_fill, and the padding term stays the
// mask, where(not(C + padding == 0), 0, F). Near miss: the triangle from
// the diagonal, triu(full(F), 0), alone masks each query's own key too: not
// causal. The mask times a positive constant (CodeGen's scale, moved onto
// it) is the same with the fill scaled. A causal where(j <= i, 0, F) added
// to it (GPT-Neo's bias beside the mask): F + F is -inf past the limit, so
// the op is causal without a fill and the padding term is the mask.
// CHECK-LABEL: func.func @additive_causal_and_padding
// CHECK-DAG: %[[ZERO:.+]] = dfg.constant dense<0.000000e+00>
// CHECK-DAG: %[[MIN:.+]] = dfg.constant dense<-3.40282347E+38>
// CHECK: %[[EQ:.+]] = dfg.equal
// CHECK: %[[NOT:.+]] = dfg.not %[[EQ]]
// CHECK: %[[M:.+]] = dfg.where %[[NOT]], %[[ZERO]], %[[MIN]]
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = false :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = true {causal_fill = -8.50705867E+37 : f32}
// CHECK: %[[M2:.+]] = dfg.where %{{.+}}, %[[ZERO]], %[[MIN]]
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M2]]) scale = 5.000000e-01 causal = true :
func.func @additive_causal_and_padding(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %am: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %full = dfg.symbolic_expand %min to affine_map<()[s0] -> (s0, s0)> symbols ["s"] : (tensor<f32>) -> tensor<?x?xf32>
  %pos = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %col = dfg.reshape %pos to [-1, 1] : (tensor<?xi64>) -> tensor<?x1xi64>
  %after = dfg.greater %pos, %col : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %afterf = dfg.cast %after to f32 : (tensor<?x?xi1>) -> tensor<?x?xf32>
  %pad = dfg.unsqueeze %am axes = [1, 2] : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  %padf = dfg.cast %pad to f32 : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xf32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>

  %tri = dfg.trilu %full upper = true diagonal = 1 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %c = dfg.mul %tri, %afterf : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %c4 = dfg.unsqueeze %c axes = [0, 1] : (tensor<?x?xf32>) -> tensor<1x1x?x?xf32>
  %sum = dfg.add %c4, %padf : (tensor<1x1x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x1x?x?xf32>
  %eq = dfg.equal %sum, %zero : (tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xi1>
  %mask = dfg.where %eq, %min, %c4 : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %m = dfg.add %ss, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %tri0 = dfg.trilu %full upper = true diagonal = 0 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %c04 = dfg.unsqueeze %tri0 axes = [0, 1] : (tensor<?x?xf32>) -> tensor<1x1x?x?xf32>
  %sum0 = dfg.add %c04, %padf : (tensor<1x1x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x1x?x?xf32>
  %eq0 = dfg.equal %sum0, %zero : (tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xi1>
  %mask0 = dfg.where %eq0, %min, %c04 : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %m0 = dfg.add %ss, %mask0 : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p0 = dfg.softmax %m0 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o0 = dfg.matmul %p0, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %quarter = dfg.constant dense<0.25> : tensor<f32>
  %maskq = dfg.mul %mask, %quarter : (tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %mq = dfg.add %ss, %maskq : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pq = dfg.softmax %mq axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %oq = dfg.matmul %pq, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %vis = dfg.less_or_equal %pos, %col : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %bias = dfg.where %vis, %zero, %min : (tensor<?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32>
  %both = dfg.add %bias, %mask : (tensor<?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %mb = dfg.add %ss, %both : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pb = dfg.softmax %mb axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ob = dfg.matmul %pb, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %o0, %oq, %ob : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Gemma-2's softcapped attention as transformers computes it: scores times
// the scaling, divided by the cap, tanh, times the cap, then the additive
// mask: one dfg.attention with `softcap_first` (the cap before the mask).
// The cap after the mask (ONNX's order) is the plain softcap. Near miss:
// tanh(x / 30) * 50 is no softcap.
// CHECK-LABEL: func.func @softcaps
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 2.500000e-01 causal = false {softcap = 5.000000e+01 : f32, softcap_first = true}
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 2.500000e-01 causal = false {softcap = 5.000000e+01 : f32}
// CHECK: dfg.tanh
// CHECK: dfg.softmax
func.func @softcaps(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<1x1x3x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %scaling = dfg.constant dense<0.25> : tensor<f32>
  %cap = dfg.constant dense<50.0> : tensor<f32>
  %inv = dfg.constant dense<0.02> : tensor<f32>
  %other = dfg.constant dense<30.0> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %ss = dfg.mul %s, %scaling : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %d = dfg.div %ss, %cap : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %t = dfg.tanh %d : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c = dfg.mul %t, %cap : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m = dfg.add %c, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %m2 = dfg.add %ss, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %d2 = dfg.mul %m2, %inv : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %t2 = dfg.tanh %d2 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c2 = dfg.mul %cap, %t2 : (tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p2 = dfg.softmax %c2 axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o2 = dfg.matmul %p2, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %d3 = dfg.div %ss, %other : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %t3 = dfg.tanh %d3 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c3 = dfg.mul %t3, %cap : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %m3 = dfg.add %c3, %mask : (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32>
  %p3 = dfg.softmax %m3 axis = -1 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o3 = dfg.matmul %p3, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o, %o2, %o3 : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// Multi-query attention as Falcon's exports write it: one key and value
// head that the two matmuls broadcast over the four query heads, no repeat
// of its own: one dfg.attention over one KV head.
// CHECK-LABEL: func.func @multi_query_by_broadcast
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 5.000000e-01 causal = false : (tensor<1x4x3x8xf32>, tensor<1x1x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x4x3x8xf32>
// CHECK-NOT: dfg.softmax
func.func @multi_query_by_broadcast(%q: tensor<1x4x3x8xf32>, %k: tensor<1x1x3x8xf32>, %v: tensor<1x1x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %half = dfg.constant dense<0.5> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x1x3x8xf32>) -> tensor<1x1x8x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x4x3x8xf32>, tensor<1x1x8x3xf32>) -> tensor<1x4x3x3xf32>
  %ss = dfg.mul %s, %half : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = dfg.softmax %ss axis = -1 : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = dfg.matmul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x1x3x8xf32>) -> tensor<1x4x3x8xf32>
  return %o : tensor<1x4x3x8xf32>
}

// -----

// Two masks, GPT-Neo's: where(causal bias, S, finfo.min) + HF's causal and
// padding mask (finfo.min too). A key past the limit scores finfo.min +
// finfo.min = -inf, so the op is causal (no causal_fill: a padding query
// spreads over its earlier keys only) and the padding factor is its mask.
// Beside a padding mask alone (no causal factor of its own) the two become
// one additive mask, where(c, 0, F) + mask, and the op is not causal. Near
// miss: an inner fill of -1e4 does not absorb the scores (where(c, S, F)
// differs from S + F), so that attention is not raised.
// CHECK-LABEL: func.func @two_masks
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x?xi1>
// CHECK-DAG: %[[ZERO:.+]] = dfg.constant dense<0.000000e+00>
// CHECK-DAG: %[[MIN:.+]] = dfg.constant dense<-3.40282347E+38>
// CHECK: dfg.matmul
// CHECK-NEXT: %[[M:.+]] = dfg.where %[[PAD]], %[[ZERO]], %[[MIN]] : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK-NEXT: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]]) past(%{{.+}}, %{{.+}}) scale = 1.000000e+00 causal = true :
// CHECK: %[[C:.+]] = dfg.where %{{.+}}, %[[ZERO]], %[[MIN]] : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
// CHECK: %[[SUM:.+]] = dfg.add %[[C]], %{{.+}} :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SUM]]) past(%{{.+}}, %{{.+}}) scale = 1.000000e+00 causal = false :
// CHECK: dfg.softmax
func.func @two_masks(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "t"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %small = dfg.constant dense<-1.0e4> : tensor<f32>
  %qpos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %kpos = dfg.range affine_map<()[s0, s1] -> (0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %col = dfg.unsqueeze %qpos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %kpos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vis, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %hf = dfg.where %both, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %padonly = dfg.where %pad, %zero, %min : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
  %kc = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vc = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kc perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %bias = dfg.where %vis, %s, %min : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m1 = dfg.add %bias, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p1 = dfg.softmax %m1 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o1 = dfg.matmul %p1, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %m2 = dfg.add %bias, %padonly : (tensor<?x2x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x?x?xf32>
  %p2 = dfg.softmax %m2 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o2 = dfg.matmul %p2, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %biass = dfg.where %vis, %s, %small : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m3 = dfg.add %biass, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p3 = dfg.softmax %m3 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o3 = dfg.matmul %p3, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o1, %o2, %o3 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Two additive masks, BLOOM's: the scaled scores plus its ALiBi bias (one
// row per head), plus HF's causal and padding mask. The causal factor
// becomes the flag (with finfo.min as causal_fill, as for HF's mask alone)
// and the op's mask is the sum of the padding factor and the bias. Near
// miss: a scale between the two masks is not raised.
// CHECK-LABEL: func.func @alibi_and_padding
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x?xi1>
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<?x2x1x?xf32>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %{{.+}}, %{{.+}} : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: %[[SUM:.+]] = dfg.add %[[M]], %[[BIAS]] : (tensor<?x1x1x?xf32>, tensor<?x2x1x?xf32>) -> tensor<?x2x1x?xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SUM]]) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK: dfg.softmax
func.func @alibi_and_padding(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "t"]}, %bias: tensor<?x2x1x?xf32> {dfg.dim_names = ["b", "", "", "t"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %half = dfg.constant dense<0.5> : tensor<f32>
  %qpos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %kpos = dfg.range affine_map<()[s0, s1] -> (0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %col = dfg.unsqueeze %qpos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %kpos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vis, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %hf = dfg.where %both, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kc = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vc = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kc perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.mul %s, %half : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %a = dfg.add %ss, %bias : (tensor<?x2x?x?xf32>, tensor<?x2x1x?xf32>) -> tensor<?x2x?x?xf32>
  %m = dfg.add %a, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %sb = dfg.add %s, %bias : (tensor<?x2x?x?xf32>, tensor<?x2x1x?xf32>) -> tensor<?x2x?x?xf32>
  %sbs = dfg.mul %sb, %half : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %mb = dfg.add %sbs, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pb = dfg.softmax %mb axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ob = dfg.matmul %pb, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %ob : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// MPT's masked_fill(S + ALiBi, mask, finfo.min), the fill first in the Where
// and the mask the bool of HF's additive causal and padding mask: the Where
// is read as where(not(mask), S, F), not(bool(where(v, 0, F))) as v; the
// causal factor of v becomes the flag, with finfo.min as causal_fill (a row
// whose every key is masked spreads over all keys, as masked_fill makes it),
// and the op's mask is the padding factor with that fill plus the bias.
// Near miss: a fill that does not absorb the scores (-1e4) is not raised.
// CHECK-LABEL: func.func @masked_fill_alibi
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x?xi1>
// CHECK-SAME: %[[BIAS:[^:]+]]: tensor<2x1x?xf32>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %{{.+}}, %{{.+}} : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: %[[SUM:.+]] = dfg.add %[[M]], %[[BIAS]]
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SUM]]) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK: dfg.softmax
// CHECK-NOT: dfg.attention
func.func @masked_fill_alibi(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "s"]}, %bias: tensor<2x1x?xf32> {dfg.dim_names = ["", "", "s"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %small = dfg.constant dense<-1.0e4> : tensor<f32>
  %half = dfg.constant dense<0.5> : tensor<f32>
  %pos = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %col = dfg.unsqueeze %pos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %pos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vis, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %hf = dfg.where %both, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %hidden = dfg.cast %hf to i1 : (tensor<?x1x?x?xf32>) -> tensor<?x1x?x?xi1>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.mul %s, %half : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %a = dfg.add %ss, %bias : (tensor<?x2x?x?xf32>, tensor<2x1x?xf32>) -> tensor<?x2x?x?xf32>
  %m = dfg.where %hidden, %min, %a : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %mb = dfg.where %hidden, %small, %a : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pb = dfg.softmax %mb axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ob = dfg.matmul %pb, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %ob : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// GPT-Neo's local layers: the bias is a band (each query sees its last 2
// keys), sliced from a constant buffer as GPT-2's, below HF's causal and
// padding mask. The band keeps no key past the causal limit, so the op is
// causal (keys past the limit sum to -inf, as in @two_masks) and its mask
// adds where(band, 0, finfo.min) to the padding. A buffer that keeps a key
// above its diagonal is not within the limit: the masks become one sum and
// the op is not causal.
// CHECK-LABEL: func.func @banded_bias
// CHECK-SAME: %[[PAD:[^:]+]]: tensor<?x1x1x?xi1>
// CHECK: %[[M:.+]] = dfg.where %[[PAD]], %{{.+}}, %{{.+}} : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
// CHECK: %[[BAND:.+]] = dfg.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x?x?xf32>
// CHECK: %[[SUM:.+]] = dfg.add %[[BAND]], %[[M]]
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SUM]]) past(%{{.+}}, %{{.+}}) scale = 1.000000e+00 causal = true :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) past(%{{.+}}, %{{.+}}) scale = 1.000000e+00 causal = false :
func.func @banded_bias(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "t"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %band = dfg.constant dense<[[[[true, false, false, false], [true, true, false, false], [false, true, true, false], [false, false, true, true]]]]> : tensor<1x1x4x4xi1>
  %upper = dfg.constant dense<[[[[true, true, false, false], [true, true, false, false], [false, true, true, false], [false, false, true, true]]]]> : tensor<1x1x4x4xi1>
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %qpos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %kpos = dfg.range affine_map<()[s0, s1] -> (0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %col = dfg.unsqueeze %qpos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %kpos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vis, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %hf = dfg.where %both, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kc = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vc = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kc perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %rows = dfg.symbolic_slice %band starts = affine_map<()[s0, s1] -> (s0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [2] steps = [1] symbols ["p", "s"] : (tensor<1x1x4x4xi1>) -> tensor<1x1x?x4xi1>
  %bias = dfg.symbolic_slice %rows starts = affine_map<()[s0, s1] -> (0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [3] steps = [1] symbols ["p", "s"] : (tensor<1x1x?x4xi1>) -> tensor<1x1x?x?xi1>
  %w = dfg.where %bias, %s, %min : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = dfg.add %w, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %rowsu = dfg.symbolic_slice %upper starts = affine_map<()[s0, s1] -> (s0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [2] steps = [1] symbols ["p", "s"] : (tensor<1x1x4x4xi1>) -> tensor<1x1x?x4xi1>
  %biasu = dfg.symbolic_slice %rowsu starts = affine_map<()[s0, s1] -> (0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [3] steps = [1] symbols ["p", "s"] : (tensor<1x1x?x4xi1>) -> tensor<1x1x?x?xi1>
  %wu = dfg.where %biasu, %s, %min : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %mu = dfg.add %wu, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %pu = dfg.softmax %mu axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ou = dfg.matmul %pu, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %ou : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// XGLM's eager attention clamps the masked scores at finfo.min before the
// softmax: max(S + where(causal and padding, 0, finfo.min), finfo.min). The
// clamp lifts only hidden keys' scores, so it is dropped: a causal op with
// the padding as its mask. Near misses, not raised: a clamp at -1e4 (it
// would change visible keys' weights), and a clamp above a mask filled with
// -inf (rows with every key hidden would differ).
// CHECK-LABEL: func.func @clamped_scores
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) past(%{{.+}}, %{{.+}}) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK-NOT: dfg.attention
// CHECK: dfg.max
// CHECK: dfg.softmax
// CHECK: dfg.max
// CHECK: dfg.softmax
func.func @clamped_scores(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %pk: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pv: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "p", ""]}, %pad: tensor<?x1x1x?xi1> {dfg.dim_names = ["b", "", "", "t"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %ninf = dfg.constant dense<0xFF800000> : tensor<f32>
  %low = dfg.constant dense<-1.0e4> : tensor<f32>
  %half = dfg.constant dense<0.5> : tensor<f32>
  %qpos = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %kpos = dfg.range affine_map<()[s0, s1] -> (0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  %col = dfg.unsqueeze %qpos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %row = dfg.unsqueeze %kpos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %vis = dfg.greater_or_equal %col, %row : (tensor<1x1x?x1xi64>, tensor<1x1x1x?xi64>) -> tensor<1x1x?x?xi1>
  %both = dfg.and %vis, %pad : (tensor<1x1x?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %hf = dfg.where %both, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %hfinf = dfg.where %both, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %kc = dfg.concat %pk, %k axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %vc = dfg.concat %pv, %v axis = 2 : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %kt = dfg.transpose %kc perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.mul %s, %half : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %m = dfg.add %ss, %hf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %c = dfg.max %m, %min : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %c axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %cl = dfg.max %m, %low : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %pl = dfg.softmax %cl axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ol = dfg.matmul %pl, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %mi = dfg.add %ss, %hfinf : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %ci = dfg.max %mi, %min : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %pi = dfg.softmax %ci axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %oi = dfg.matmul %pi, %vc : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %ol, %oi : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// gpt-oss writes the rotation out on the halves of the head, with tables of
// the angles once: concat(x1 cos - x2 sin, x2 cos + x1 sin). Near misses,
// left alone: the signs swapped (a rotation the other way), and the halves
// of the second product swapped (not a rotation).
// CHECK-LABEL: func.func @rotary_on_halves
// CHECK-SAME: (%[[X:arg[0-9]+]]: tensor<?x2x?x4xf32> {{.*}}, %[[C:arg[0-9]+]]: tensor<?x1x?x2xf32> {{.*}}, %[[S:arg[0-9]+]]: tensor<?x1x?x2xf32>
// CHECK-DAG: %[[CR:.+]] = dfg.reshape %[[C]] to [0, -1, 2]
// CHECK-DAG: %[[SR:.+]] = dfg.reshape %[[S]] to [0, -1, 2]
// CHECK: %[[R:.+]] = dfg.rotary %[[X]], %[[CR]], %[[SR]] interleaved = false rotary_dim = 4
// CHECK: %[[W1:.+]] = dfg.concat
// CHECK: %[[W2:.+]] = dfg.concat
// CHECK: return %[[R]], %[[W1]], %[[W2]]
func.func @rotary_on_halves(%x: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %cos: tensor<?x1x?x2xf32> {dfg.dim_names = ["b", "", "s", ""]}, %sin: tensor<?x1x?x2xf32> {dfg.dim_names = ["b", "", "s", ""]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %h:2 = dfg.split %x axis = 3 sizes = [2, 2] : (tensor<?x2x?x4xf32>) -> (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>)
  %a = dfg.mul %h#0, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %b = dfg.mul %h#1, %sin : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %lo = dfg.sub %a, %b : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %c = dfg.mul %h#1, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %d = dfg.mul %sin, %h#0 : (tensor<?x1x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %hi = dfg.add %c, %d : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %y = dfg.concat %lo, %hi axis = -1 : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x4xf32>
  %lo2 = dfg.sub %b, %a : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %w1 = dfg.concat %lo2, %hi axis = -1 : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x4xf32>
  %e = dfg.mul %h#0, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %f = dfg.mul %sin, %h#1 : (tensor<?x1x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %hi2 = dfg.add %e, %f : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %w2 = dfg.concat %lo, %hi2 axis = -1 : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x4xf32>
  return %y, %w1, %w2 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// DeepSeek-V3 rotates the even and odd features of the head's rotary part
// (x[..., ::2], x[..., 1::2]) as gpt-oss rotates the halves, after the
// head's other features in one flattened concat: the rotation of
// concat(even, odd), in place of the pair. Near miss, left alone: the
// "odd" features taken from 0 as well (not a rotation).
// CHECK-LABEL: func.func @rotary_on_even_odd
// CHECK-SAME: (%[[P:arg[0-9]+]]: tensor<?x2x?x3xf32> {{.*}}, %[[X:arg[0-9]+]]: tensor<?x2x?x4xf32>
// CHECK-DAG: %[[E:.+]] = dfg.slice %[[X]] starts = [0] ends = [9223372036854775807] axes = [3] steps = [2]
// CHECK-DAG: %[[O:.+]] = dfg.slice %[[X]] starts = [1] ends = [9223372036854775807] axes = [3] steps = [2]
// CHECK: %[[D:.+]] = dfg.concat %[[E]], %[[O]] axis = 3
// CHECK: %[[R:.+]] = dfg.rotary %[[D]], %{{.+}}, %{{.+}} interleaved = false rotary_dim = 4
// CHECK: %[[Y:.+]] = dfg.concat %[[P]], %[[R]] axis = -1
// CHECK-NOT: dfg.rotary
// CHECK: return %[[Y]]
func.func @rotary_on_even_odd(%p: tensor<?x2x?x3xf32> {dfg.dim_names = ["b", "", "s", ""]}, %x: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %cos: tensor<?x1x?x2xf32> {dfg.dim_names = ["b", "", "s", ""]}, %sin: tensor<?x1x?x2xf32> {dfg.dim_names = ["b", "", "s", ""]}) -> (tensor<?x2x?x7xf32>, tensor<?x2x?x4xf32>) {
  %x1 = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x?x2xf32>
  %x2 = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x?x2xf32>
  %a = dfg.mul %x1, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %b = dfg.mul %x2, %sin : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %lo = dfg.sub %a, %b : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %c = dfg.mul %x2, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %d = dfg.mul %x1, %sin : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %hi = dfg.add %c, %d : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %y = dfg.concat %p, %lo, %hi axis = -1 : (tensor<?x2x?x3xf32>, tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x7xf32>
  %z = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x?x2xf32>
  %e = dfg.mul %z, %sin : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %lo2 = dfg.sub %a, %e : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %f = dfg.mul %z, %cos : (tensor<?x2x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
  %hi2 = dfg.add %f, %d : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %w = dfg.concat %lo2, %hi2 axis = -1 : (tensor<?x2x?x2xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x4xf32>
  return %y, %w : tensor<?x2x?x7xf32>, tensor<?x2x?x4xf32>
}

// -----

// gpt-oss's attention sinks as transformers writes them: one learned score
// per head, reshaped to [1, heads, 1, 1] and expanded beside the masked
// scores, the rows' maxima subtracted, the softmax, and the sinks' column
// sliced off before the values. Raised with the per-head scores as the
// op's sinks. Near misses: the first column sliced off (the sinks' weight
// would reach the values); a column that differs per query (not a sink).
// CHECK-LABEL: func.func @attention_sinks
// CHECK: %[[S:.+]] = dfg.reshape %arg3 to [4] : (tensor<1x4x1x1xf32>) -> tensor<4xf32>
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} sinks(%[[S]]) scale = 5.000000e-01 causal = false
// CHECK-NOT: dfg.attention
// CHECK: dfg.softmax
// CHECK: dfg.softmax
func.func @attention_sinks(%q: tensor<1x4x3x4xf32>, %k: tensor<1x4x3x4xf32>, %v: tensor<1x4x3x4xf32>, %sink: tensor<1x4x1x1xf32>, %column: tensor<1x4x3x1xf32>) -> (tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>) {
  %half = dfg.constant dense<0.5> : tensor<f32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<1x4x3x4xf32>) -> tensor<1x4x4x3xf32>
  %s = dfg.matmul %q, %kt : (tensor<1x4x3x4xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x3x3xf32>
  %ss = dfg.mul %s, %half : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %col = dfg.expand %sink shape = [1, 4, 3, 1] : (tensor<1x4x1x1xf32>) -> tensor<1x4x3x1xf32>
  %joined = dfg.concat %ss, %col axis = -1 : (tensor<1x4x3x3xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %max = dfg.reduce_max %joined axes = [3] keep_dims = true : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x1xf32>
  %shifted = dfg.sub %joined, %max : (tensor<1x4x3x4xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %p = dfg.softmax %shifted axis = -1 : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %pk = dfg.slice %p starts = [0] ends = [-1] axes = [3] steps = [1] : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x3xf32>
  %o = dfg.matmul %pk, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %first = dfg.concat %col, %ss axis = -1 : (tensor<1x4x3x1xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x4xf32>
  %p1 = dfg.softmax %first axis = -1 : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %pk1 = dfg.slice %p1 starts = [1] ends = [4] axes = [3] steps = [1] : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x3xf32>
  %o1 = dfg.matmul %pk1, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %perquery = dfg.concat %ss, %column axis = -1 : (tensor<1x4x3x3xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %p2 = dfg.softmax %perquery axis = -1 : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %pk2 = dfg.slice %p2 starts = [0] ends = [-1] axes = [3] steps = [1] : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x3xf32>
  %o2 = dfg.matmul %pk2, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  return %o, %o1, %o2 : tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>
}

// -----

// Interleaved RoPE tables as TorchScript writes repeat_interleave(f, 2)
// (Cohere's and GLM's Optimum exports): f [n, ...] unsqueezed after its
// first axis, expanded to 2 there, every coordinate of those two axes
// gathered in row-major order by index tuples built from constant ranges,
// the pairs moved last by a transpose. The rotary reads transpose(f) once
// (here f itself: the two transposes cancel). Near miss: tuples that take (0, 1) before (0, 0) (the pairs' order does
// not matter for equal pairs, but the gather is not every coordinate in
// order), left alone.
// CHECK-LABEL: func.func @interleaved_rotary_tables_gathered
// CHECK: %[[F:.+]] = dfg.mul %{{.+}}, %{{.+}} : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
// CHECK: dfg.cos %[[F]] : (tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK: dfg.rotary %{{.+}}, %{{.+}}, %{{.+}} interleaved = true rotary_dim = 4
// CHECK-NOT: dfg.rotary
func.func @interleaved_rotary_tables_gathered(%x: tensor<1x2x3x4xf32>, %pos: tensor<1x3x1xf32>, %inv: tensor<2xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) {
  %f = dfg.mul %pos, %inv : (tensor<1x3x1xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %ft = dfg.transpose %f perm = [2, 1, 0] : (tensor<1x3x2xf32>) -> tensor<2x3x1xf32>
  %f1 = dfg.unsqueeze %ft axes = [1] : (tensor<2x3x1xf32>) -> tensor<2x1x3x1xf32>
  %f2 = dfg.expand %f1 shape = [1, 2, 1, 1] : (tensor<2x1x3x1xf32>) -> tensor<2x2x3x1xf32>
  %r0 = dfg.range affine_map<() -> (0, 2)> delta = 1 symbols [] : tensor<2xi64>
  %r0c = dfg.reshape %r0 to [-1, 1] : (tensor<2xi64>) -> tensor<2x1xi64>
  %r0e = dfg.expand %r0c shape = [2, 2] : (tensor<2x1xi64>) -> tensor<2x2xi64>
  %r0f = dfg.reshape %r0e to [1, -1] : (tensor<2x2xi64>) -> tensor<1x4xi64>
  %r1 = dfg.range affine_map<() -> (0, 2)> delta = 1 symbols [] : tensor<2xi64>
  %r1r = dfg.reshape %r1 to [1, -1] : (tensor<2xi64>) -> tensor<1x2xi64>
  %r1e = dfg.expand %r1r shape = [2, 2] : (tensor<1x2xi64>) -> tensor<2x2xi64>
  %r1f = dfg.reshape %r1e to [1, -1] : (tensor<2x2xi64>) -> tensor<1x4xi64>
  %rows = dfg.concat %r0f, %r1f axis = 0 : (tensor<1x4xi64>, tensor<1x4xi64>) -> tensor<2x4xi64>
  %tuples = dfg.transpose %rows perm = [1, 0] : (tensor<2x4xi64>) -> tensor<4x2xi64>
  %g = dfg.gather_nd %f2, %tuples batch_dims = 0 : (tensor<2x2x3x1xf32>, tensor<4x2xi64>) -> tensor<4x3x1xf32>
  %emb = dfg.transpose %g perm = [2, 1, 0] : (tensor<4x3x1xf32>) -> tensor<1x3x4xf32>
  %c0 = dfg.cos %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = dfg.sin %emb : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %cos = dfg.unsqueeze %c0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %sin = dfg.unsqueeze %s0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %even = dfg.slice %x starts = [0] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %odd = dfg.slice %x starts = [1] ends = [9223372036854775807] axes = [3] steps = [2] : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x2xf32>
  %n = dfg.neg %odd : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  %n1 = dfg.unsqueeze %n axes = [-1] : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2x1xf32>
  %e1 = dfg.unsqueeze %even axes = [-1] : (tensor<1x2x3x2xf32>) -> tensor<1x2x3x2x1xf32>
  %st = dfg.concat %n1, %e1 axis = -1 : (tensor<1x2x3x2x1xf32>, tensor<1x2x3x2x1xf32>) -> tensor<1x2x3x2x2xf32>
  %rot = dfg.reshape %st to [0, 2, 0, 4] : (tensor<1x2x3x2x2xf32>) -> tensor<1x2x3x4xf32>
  %a = dfg.mul %x, %cos : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %b = dfg.mul %rot, %sin : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = dfg.add %a, %b : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  // Near miss: the tuples (0, 1), (0, 0), (1, 1), (1, 0).
  %swap = dfg.constant dense<[[0, 1], [0, 0], [1, 1], [1, 0]]> : tensor<4x2xi64>
  %gs = dfg.gather_nd %f2, %swap batch_dims = 0 : (tensor<2x2x3x1xf32>, tensor<4x2xi64>) -> tensor<4x3x1xf32>
  %embs = dfg.transpose %gs perm = [2, 1, 0] : (tensor<4x3x1xf32>) -> tensor<1x3x4xf32>
  %cs0 = dfg.cos %embs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %ss0 = dfg.sin %embs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %cs = dfg.unsqueeze %cs0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %ss = dfg.unsqueeze %ss0 axes = [1] : (tensor<1x3x4xf32>) -> tensor<1x1x3x4xf32>
  %as = dfg.mul %x, %cs : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %bs = dfg.mul %rot, %ss : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %z = dfg.add %as, %bs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %y, %z : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// -----

// The decoders of encoder-decoders, each causal:
//  - BART's mask where(expand(j <= i), 0, F): the causal comparison
//    broadcast over the batch before the where;
//  - T5's where(j <= i, bias, F): its relative position bias kept where the
//    key is visible, F past the limit: the op is causal, the bias its mask,
//    F its fill;
//  - Whisper's j <= i read through the position ids: the positions
//    expand(range) gathered (GatherND, batch and position index tuples
//    concatenated) at the query's and at the key's index.
// Near miss: where(j < i, bias, F) masks each query's own key, not causal.
// CHECK-LABEL: func.func @encoder_decoder_masks
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 5.000000e-01 causal = true :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%arg3) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%{{.+}}) scale = 5.000000e-01 causal = false :
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} scale = 5.000000e-01 causal = true :
func.func @encoder_decoder_masks(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %bias: tensor<1x2x?x?xf32> {dfg.dim_names = ["", "", "s", "s"]}) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %pos = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %row = dfg.unsqueeze %pos axes = [0, 1, 2] : (tensor<?xi64>) -> tensor<1x1x1x?xi64>
  %col = dfg.unsqueeze %pos axes = [0, 1, 3] : (tensor<?xi64>) -> tensor<1x1x?x1xi64>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>

  %vis = dfg.less_or_equal %row, %col : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %visb = dfg.symbolic_expand %vis to affine_map<()[s0, s1] -> (s0, 1, s1, s1)> symbols ["b", "s"] : (tensor<1x1x?x?xi1>) -> tensor<?x1x?x?xi1>
  %bart = dfg.where %visb, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %m1 = dfg.add %ss, %bart : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p1 = dfg.softmax %m1 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o1 = dfg.matmul %p1, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %t5 = dfg.where %vis, %bias, %min : (tensor<1x1x?x?xi1>, tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %m2 = dfg.add %ss, %t5 : (tensor<?x2x?x?xf32>, tensor<1x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p2 = dfg.softmax %m2 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o2 = dfg.matmul %p2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %before = dfg.less %row, %col : (tensor<1x1x1x?xi64>, tensor<1x1x?x1xi64>) -> tensor<1x1x?x?xi1>
  %near = dfg.where %before, %bias, %min : (tensor<1x1x?x?xi1>, tensor<1x2x?x?xf32>, tensor<f32>) -> tensor<1x2x?x?xf32>
  %m3 = dfg.add %ss, %near : (tensor<?x2x?x?xf32>, tensor<1x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p3 = dfg.softmax %m3 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o3 = dfg.matmul %p3, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>

  %pos2 = dfg.unsqueeze %pos axes = [0] : (tensor<?xi64>) -> tensor<1x?xi64>
  %ids = dfg.symbolic_expand %pos2 to affine_map<()[s0, s1] -> (s0, s1)> symbols ["b", "s"] : (tensor<1x?xi64>) -> tensor<?x?xi64>
  %brange = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["b"] : tensor<?xi64>
  %bidx = dfg.unsqueeze %brange axes = [1, 2, 3] : (tensor<?xi64>) -> tensor<?x1x1x1xi64>
  %bq = dfg.symbolic_expand %bidx to affine_map<()[s0, s1] -> (s0, 1, s1, 1)> symbols ["b", "s"] : (tensor<?x1x1x1xi64>) -> tensor<?x1x?x1xi64>
  %bq5 = dfg.unsqueeze %bq axes = [4] : (tensor<?x1x?x1xi64>) -> tensor<?x1x?x1x1xi64>
  %qq = dfg.symbolic_expand %col to affine_map<()[s0, s1] -> (s0, 1, s1, 1)> symbols ["b", "s"] : (tensor<1x1x?x1xi64>) -> tensor<?x1x?x1xi64>
  %qq5 = dfg.unsqueeze %qq axes = [4] : (tensor<?x1x?x1xi64>) -> tensor<?x1x?x1x1xi64>
  %qt = dfg.concat %bq5, %qq5 axis = -1 : (tensor<?x1x?x1x1xi64>, tensor<?x1x?x1x1xi64>) -> tensor<?x1x?x1x2xi64>
  %bk = dfg.symbolic_expand %bidx to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<?x1x1x1xi64>) -> tensor<?x1x1x?xi64>
  %bk5 = dfg.unsqueeze %bk axes = [4] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %kk = dfg.symbolic_expand %row to affine_map<()[s0, s1] -> (s0, 1, 1, s1)> symbols ["b", "s"] : (tensor<1x1x1x?xi64>) -> tensor<?x1x1x?xi64>
  %kk5 = dfg.unsqueeze %kk axes = [4] : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?x1xi64>
  %kt2 = dfg.concat %bk5, %kk5 axis = -1 : (tensor<?x1x1x?x1xi64>, tensor<?x1x1x?x1xi64>) -> tensor<?x1x1x?x2xi64>
  %atq = dfg.gather_nd %ids, %qt batch_dims = 0 : (tensor<?x?xi64>, tensor<?x1x?x1x2xi64>) -> tensor<?x1x?x1xi64>
  %atk = dfg.gather_nd %ids, %kt2 batch_dims = 0 : (tensor<?x?xi64>, tensor<?x1x1x?x2xi64>) -> tensor<?x1x1x?xi64>
  %wvis = dfg.less_or_equal %atk, %atq : (tensor<?x1x1x?xi64>, tensor<?x1x?x1xi64>) -> tensor<?x1x?x?xi1>
  %whisper = dfg.where %wvis, %zero, %min : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %m4 = dfg.add %ss, %whisper : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p4 = dfg.softmax %m4 axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o4 = dfg.matmul %p4, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o1, %o2, %o3, %o4 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// T5's decoder under transformers 4.x (Optimum's exports): its relative
// position bias X plus the causal and padding mask M = where(C + padding
// == 0, F, C), C = triu(full(F), 1) * (j > i): a key past the limit scores
// X + F, which rounds to F, so the op is causal with F as its fill and
// X + (M's padding term) its mask.
// CHECK-LABEL: func.func @bias_beside_causal_mask
// CHECK: %[[M:.+]] = dfg.where %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x1x?x?xi1>
// CHECK: %[[SUM:.+]] = dfg.add %arg3, %[[M]]
// CHECK: dfg.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[SUM]]) scale = 5.000000e-01 causal = true {causal_fill = -3.40282347E+38 : f32}
func.func @bias_beside_causal_mask(%q: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %k: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %v: tensor<?x2x?x4xf32> {dfg.dim_names = ["b", "", "s", ""]}, %bias: tensor<1x2x?x?xf32> {dfg.dim_names = ["", "", "s", "s"]}, %am: tensor<?x?xi64> {dfg.dim_names = ["b", "s"]}) -> tensor<?x2x?x4xf32> {
  %zero = dfg.constant dense<0.0> : tensor<f32>
  %min = dfg.constant dense<-3.40282347E+38> : tensor<f32>
  %two = dfg.constant dense<2.0> : tensor<f32>
  %full = dfg.symbolic_expand %min to affine_map<()[s0] -> (s0, s0)> symbols ["s"] : (tensor<f32>) -> tensor<?x?xf32>
  %pos = dfg.range affine_map<()[s0] -> (0, s0)> delta = 1 symbols ["s"] : tensor<?xi64>
  %col = dfg.reshape %pos to [-1, 1] : (tensor<?xi64>) -> tensor<?x1xi64>
  %after = dfg.greater %pos, %col : (tensor<?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %afterf = dfg.cast %after to f32 : (tensor<?x?xi1>) -> tensor<?x?xf32>
  %pad = dfg.unsqueeze %am axes = [1, 2] : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
  %padf = dfg.cast %pad to f32 : (tensor<?x1x1x?xi64>) -> tensor<?x1x1x?xf32>
  %kt = dfg.transpose %k perm = [0, 1, 3, 2] : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %s = dfg.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = dfg.div %s, %two : (tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %tri = dfg.trilu %full upper = true diagonal = 1 : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %c = dfg.mul %tri, %afterf : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %c4 = dfg.unsqueeze %c axes = [0, 1] : (tensor<?x?xf32>) -> tensor<1x1x?x?xf32>
  %sum = dfg.add %c4, %padf : (tensor<1x1x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x1x?x?xf32>
  %eq = dfg.equal %sum, %zero : (tensor<?x1x?x?xf32>, tensor<f32>) -> tensor<?x1x?x?xi1>
  %mask = dfg.where %eq, %min, %c4 : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<1x1x?x?xf32>) -> tensor<?x1x?x?xf32>
  %biased = dfg.add %bias, %mask : (tensor<1x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %m = dfg.add %ss, %biased : (tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = dfg.softmax %m axis = -1 : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = dfg.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}
