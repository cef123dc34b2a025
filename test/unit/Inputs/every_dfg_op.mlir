// One sample of every dfg op, read by OpCoverageTest.cpp. Each function holds
// its op of interest right before its `return` (after any ops that make its
// operands); the test checks that the op has a sharding rule, a symbolic
// shape rule, a reference evaluator and an emission for every target. A
// registered dfg op without a sample here fails the test: add one.
// (dfg.yield, a terminator, is covered by dfg.fused_elementwise's sample.)

shard.grid @mesh(shape = 1)

func.func @weight() -> tensor<4x8xf32> {
  %w = dfg.weight "w" in "w.bin" [offset = 0, length = 128] : tensor<4x8xf32>
  return %w : tensor<4x8xf32>
}

func.func @constant() -> tensor<2xi64> {
  %c = dfg.constant dense<[0, -1]> : tensor<2xi64>
  return %c : tensor<2xi64>
}

func.func @matmul(%x: tensor<2x3x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x3x4xf32> {
  %0 = dfg.matmul %x, %w : (tensor<2x3x8xf32>, tensor<8x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

func.func @add(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.add %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @sub(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.sub %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @mul(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.mul %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @div(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.div %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @pow(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.pow %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @min(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.min %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @max(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.max %x, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @and(%x: tensor<2x8xi1>, %y: tensor<8xi1>) -> tensor<2x8xi1> {
  %0 = dfg.and %x, %y : (tensor<2x8xi1>, tensor<8xi1>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @or(%x: tensor<2x8xi1>, %y: tensor<8xi1>) -> tensor<2x8xi1> {
  %0 = dfg.or %x, %y : (tensor<2x8xi1>, tensor<8xi1>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @bitwise_and(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi64> {
  %0 = dfg.bitwise_and %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @bitwise_or(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi64> {
  %0 = dfg.bitwise_or %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @bitwise_xor(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi64> {
  %0 = dfg.bitwise_xor %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @equal(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi1> {
  %0 = dfg.equal %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @less(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi1> {
  %0 = dfg.less %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @greater(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xi1> {
  %0 = dfg.greater %x, %y : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @less_or_equal(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi1> {
  %0 = dfg.less_or_equal %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @greater_or_equal(%x: tensor<2x8xi64>, %y: tensor<8xi64>) -> tensor<2x8xi1> {
  %0 = dfg.greater_or_equal %x, %y : (tensor<2x8xi64>, tensor<8xi64>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @where(%c: tensor<8x8xi1>, %s: tensor<2x8x8xf32>, %m: tensor<f32>) -> tensor<2x8x8xf32> {
  %0 = dfg.where %c, %s, %m : (tensor<8x8xi1>, tensor<2x8x8xf32>, tensor<f32>) -> tensor<2x8x8xf32>
  return %0 : tensor<2x8x8xf32>
}

func.func @cast(%x: tensor<2x8xf32>) -> tensor<2x8xi64> {
  %0 = dfg.cast %x to i64 : (tensor<2x8xf32>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @sqrt(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.sqrt %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @reciprocal(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.reciprocal %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @neg(%x: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %0 = dfg.neg %x : (tensor<2x8xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @silu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @erf(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.erf %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @tanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.tanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @sigmoid(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.sigmoid %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @exp(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @cos(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.cos %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @sin(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.sin %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @tan(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.tan %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @asin(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.asin %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @acos(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.acos %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @atan(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.atan %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @sinh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.sinh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @cosh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.cosh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @asinh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.asinh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @acosh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.acosh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @atanh(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.atanh %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @log(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.log %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @floor(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.floor %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @ceil(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.ceil %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @round(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.round %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @not(%x: tensor<2x8xi1>) -> tensor<2x8xi1> {
  %0 = dfg.not %x : (tensor<2x8xi1>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @is_nan(%x: tensor<2x8xf32>) -> tensor<2x8xi1> {
  %0 = dfg.is_nan %x : (tensor<2x8xf32>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @gelu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.gelu %x exact = false : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

func.func @reshape(%x: tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32> {
  %0 = dfg.reshape %x to [0, 0, 4, 4] : (tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

func.func @transpose(%x: tensor<2x8x4x4xf32>) -> tensor<2x4x8x4xf32> {
  %0 = dfg.transpose %x perm = [0, 2, 1, 3] : (tensor<2x8x4x4xf32>) -> tensor<2x4x8x4xf32>
  return %0 : tensor<2x4x8x4xf32>
}

func.func @unsqueeze(%x: tensor<2x8xf32>) -> tensor<2x1x1x8xf32> {
  %0 = dfg.unsqueeze %x axes = [1, 2] : (tensor<2x8xf32>) -> tensor<2x1x1x8xf32>
  return %0 : tensor<2x1x1x8xf32>
}

func.func @squeeze(%x: tensor<1x8xf32>) -> tensor<8xf32> {
  %0 = dfg.squeeze %x axes = [0] : (tensor<1x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

func.func @concat(%x: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %0 = dfg.concat %x, %x axis = 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

func.func @gather(%w: tensor<16x8xf32>, %ids: tensor<1x4xi64>) -> tensor<1x4x8xf32> {
  %0 = dfg.gather %w, %ids axis = 0 : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  return %0 : tensor<1x4x8xf32>
}

func.func @gather_nd(%m: tensor<2x8xi1>, %idx: tensor<2x8x2xi64>) -> tensor<2x8xi1> {
  %0 = dfg.gather_nd %m, %idx batch_dims = 0 : (tensor<2x8xi1>, tensor<2x8x2xi64>) -> tensor<2x8xi1>
  return %0 : tensor<2x8xi1>
}

func.func @slice(%x: tensor<2x8xf32>) -> tensor<1x8xf32> {
  %0 = dfg.slice %x starts = [0] ends = [1] axes = [0] steps = [1] : (tensor<2x8xf32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}

func.func @split(%x: tensor<1x4x12xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x8xf32>) {
  %0:2 = dfg.split %x axis = 2 sizes = [4, 8] : (tensor<1x4x12xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x8xf32>)
  return %0#0, %0#1 : tensor<1x4x4xf32>, tensor<1x4x8xf32>
}

func.func @expand(%x: tensor<2x8xf32>) -> tensor<3x2x8xf32> {
  %0 = dfg.expand %x shape = [3, 1, 1] : (tensor<2x8xf32>) -> tensor<3x2x8xf32>
  return %0 : tensor<3x2x8xf32>
}

func.func @reduce_mean(%x: tensor<2x4x8xf32>) -> tensor<2x4x1xf32> {
  %0 = dfg.reduce_mean %x axes = [2] keep_dims = true : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  return %0 : tensor<2x4x1xf32>
}

func.func @reduce_sum(%x: tensor<2x4x8xf32>) -> tensor<2xf32> {
  %0 = dfg.reduce_sum %x axes = [1, 2] keep_dims = false : (tensor<2x4x8xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

func.func @reduce_max(%x: tensor<2x4x8xf32>) -> tensor<2x4x1xf32> {
  %0 = dfg.reduce_max %x axes = [2] keep_dims = true : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  return %0 : tensor<2x4x1xf32>
}

func.func @cumsum(%mask: tensor<2x8xi64>) -> tensor<2x8xi64> {
  %0 = dfg.cumsum %mask axis = 1 exclusive = false reverse = false : (tensor<2x8xi64>) -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

func.func @top_k(%x: tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>) {
  %0, %1 = dfg.top_k %x axis = -1 k = 2 largest = true : (tensor<6x8xf32>) -> (tensor<6x2xf32>, tensor<6x2xi64>)
  return %0, %1 : tensor<6x2xf32>, tensor<6x2xi64>
}

func.func @trilu(%x: tensor<8x8xi1>) -> tensor<8x8xi1> {
  %0 = dfg.trilu %x upper = false diagonal = 0 : (tensor<8x8xi1>) -> tensor<8x8xi1>
  return %0 : tensor<8x8xi1>
}

func.func @scatter_nd(%past: tensor<1x2x8x4xf32>, %pos: tensor<1x2x1x3xi64>, %new: tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32> {
  %0 = dfg.scatter_nd %past, %pos, %new : (tensor<1x2x8x4xf32>, tensor<1x2x1x3xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  return %0 : tensor<1x2x8x4xf32>
}

func.func @embedding(%table: tensor<16x8xf32>, %ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %0 = dfg.embedding %table, %ids : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

func.func @linear(%x: tensor<2x4x8xf32>, %w: tensor<8x12xf32>, %b: tensor<12xf32>) -> tensor<2x4x12xf32> {
  %0 = dfg.linear %x, %w, %b transpose_weight = false : (tensor<2x4x8xf32>, tensor<8x12xf32>, tensor<12xf32>) -> tensor<2x4x12xf32>
  return %0 : tensor<2x4x12xf32>
}

func.func @attention(%q: tensor<1x4x8x8xf32>, %k: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<8x8xi1>) -> tensor<1x4x8x16xf32> {
  %0 = dfg.attention %q, %k, %v mask(%m) scale = 0.353553385 causal = true : (tensor<1x4x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>, tensor<8x8xi1>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

func.func @rotary(%x: tensor<1x4x8x8xf32>, %cos: tensor<16x4xf32>, %sin: tensor<16x4xf32>, %pos: tensor<1x8xi64>) -> tensor<1x4x8x8xf32> {
  %0 = dfg.rotary %x, %cos, %sin, %pos interleaved = false rotary_dim = 8 : (tensor<1x4x8x8xf32>, tensor<16x4xf32>, tensor<16x4xf32>, tensor<1x8xi64>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = dfg.layer_norm %x, %g, %b axis = -1 epsilon = 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

func.func @rms_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %r: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0, %1 = dfg.rms_norm %x, %g residual(%r) axis = -1 epsilon = 1.0e-06 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return %0, %1 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

func.func @softmax(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = dfg.softmax %x axis = -1 : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

func.func @fused_elementwise(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = dfg.fused_elementwise(%x, %b) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32> {
  ^bb0(%a: tensor<2x8xf32>, %c: tensor<8xf32>):
    %s = dfg.add %a, %c : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    %t = dfg.gelu %s exact = true : (tensor<2x8xf32>) -> tensor<2x8xf32>
    dfg.yield %t : tensor<2x8xf32>
  }
  return %0 : tensor<2x8xf32>
}

func.func @wait(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = shard.all_reduce %x on @mesh grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
  %0 = dfg.wait %r : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

func.func @sizes(%x: tensor<?x?xf32> {dfg.dim_names = ["b", "s"]}) -> tensor<2xi64> {
  %0 = dfg.sizes affine_map<()[s0, s1] -> (s0 * s1, 8)> symbols ["b", "s"] : tensor<2xi64>
  return %0 : tensor<2xi64>
}

func.func @symbolic_reshape(%x: tensor<?x8xf32> {dfg.dim_names = ["n", ""]}, %y: tensor<?x?xf32> {dfg.dim_names = ["b", "s"]}) -> tensor<?x?x8xf32> {
  %0 = dfg.symbolic_reshape %x to affine_map<()[s0, s1] -> (s0, s1, 8)> symbols ["b", "s"] : (tensor<?x8xf32>) -> tensor<?x?x8xf32>
  return %0 : tensor<?x?x8xf32>
}

func.func @symbolic_expand(%zero: tensor<f32>, %y: tensor<?xf32> {dfg.dim_names = ["s"]}) -> tensor<1x?xf32> {
  %0 = dfg.symbolic_expand %zero to affine_map<()[s0] -> (1, s0)> symbols ["s"] : (tensor<f32>) -> tensor<1x?xf32>
  return %0 : tensor<1x?xf32>
}

func.func @symbolic_slice(%bias: tensor<1x1x16x16xi1>, %y: tensor<?x?xf32> {dfg.dim_names = ["p", "s"]}) -> tensor<1x1x?x16xi1> {
  %0 = dfg.symbolic_slice %bias starts = affine_map<()[s0, s1] -> (s0)> ends = affine_map<()[s0, s1] -> (s0 + s1)> axes = [2] steps = [1] symbols ["p", "s"] : (tensor<1x1x16x16xi1>) -> tensor<1x1x?x16xi1>
  return %0 : tensor<1x1x?x16xi1>
}

func.func @range(%y: tensor<?x?xf32> {dfg.dim_names = ["p", "s"]}) -> tensor<?xi64> {
  %0 = dfg.range affine_map<()[s0, s1] -> (s0, s0 + s1)> delta = 1 symbols ["p", "s"] : tensor<?xi64>
  return %0 : tensor<?xi64>
}
