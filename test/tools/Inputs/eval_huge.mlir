func.func @main(%x: tensor<f32> {onnx.name = "x"}) -> (tensor<65536x65536xf32> {onnx.name = "y"}) {
  %0 = dfg.expand %x shape = [65536, 65536] : (tensor<f32>) -> tensor<65536x65536xf32>
  return %0 : tensor<65536x65536xf32>
}
