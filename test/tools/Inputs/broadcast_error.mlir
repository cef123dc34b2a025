func.func @f(%x: tensor<2x3xf32>, %y: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = dfg.add %x, %y : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
