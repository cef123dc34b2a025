func.func @main(%x: tensor<2x?xf32> {onnx.name = "x"}, %y: tensor<?xf32> {onnx.name = "y"}) -> (tensor<2x?xf32> {onnx.name = "sum"}) {
  %0 = dfg.add %x, %y : (tensor<2x?xf32>, tensor<?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}
