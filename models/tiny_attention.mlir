// meshc's bundled demo graph: one self-attention block with a residual
// connection (batch 1, sequence 8, model width 32, 4 heads of 8), written in
// dfg as an importer emits it: result shapes not yet known (`?`), weights as
// references into tiny_attention.bin (never read at this stage).
//
// `make demo` runs shape inference and clean-up on it; test/models/ checks
// the result. ONNX generator scripts join this folder with the importer.

func.func @attention_block(%x: tensor<1x8x32xf32>) -> tensor<?x?x?xf32> {
  %wq = dfg.weight "attn.q.weight" in "tiny_attention.bin" [offset = 0, length = 4096] : tensor<32x32xf32>
  %wk = dfg.weight "attn.k.weight" in "tiny_attention.bin" [offset = 4096, length = 4096] : tensor<32x32xf32>
  %wv = dfg.weight "attn.v.weight" in "tiny_attention.bin" [offset = 8192, length = 4096] : tensor<32x32xf32>
  %wo = dfg.weight "attn.o.weight" in "tiny_attention.bin" [offset = 12288, length = 4096] : tensor<32x32xf32>
  // 1/sqrt(head_dim)
  %scale = dfg.constant dense<0.353553385> : tensor<f32>

  %q = dfg.matmul %x, %wq : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<?x?x?xf32>
  %k = dfg.matmul %x, %wk : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<?x?x?xf32>
  %v = dfg.matmul %x, %wv : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<?x?x?xf32>

  // [b, s, d] -> [b, heads, s, head_dim]; keys as [b, heads, head_dim, s].
  %qh = dfg.reshape %q to [0, 0, 4, 8] : (tensor<?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %qt = dfg.transpose %qh perm = [0, 2, 1, 3] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %kh = dfg.reshape %k to [0, 0, 4, 8] : (tensor<?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %kt = dfg.transpose %kh perm = [0, 2, 3, 1] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %vh = dfg.reshape %v to [0, 0, 4, 8] : (tensor<?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %vt = dfg.transpose %vh perm = [0, 2, 1, 3] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>

  %scores = dfg.matmul %qt, %kt : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %scaled = dfg.mul %scores, %scale : (tensor<?x?x?x?xf32>, tensor<f32>) -> tensor<?x?x?x?xf32>
  %probs = dfg.softmax %scaled axis = -1 : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %ctx = dfg.matmul %probs, %vt : (tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>

  // [b, heads, s, head_dim] -> [b, s, d], output projection, residual.
  %ctxt = dfg.transpose %ctx perm = [0, 2, 1, 3] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %merged = dfg.reshape %ctxt to [0, 0, -1] : (tensor<?x?x?x?xf32>) -> tensor<?x?x?xf32>
  %out = dfg.matmul %merged, %wo : (tensor<?x?x?xf32>, tensor<32x32xf32>) -> tensor<?x?x?xf32>
  %res = dfg.add %out, %x : (tensor<?x?x?xf32>, tensor<1x8x32xf32>) -> tensor<?x?x?xf32>
  return %res : tensor<?x?x?xf32>
}
