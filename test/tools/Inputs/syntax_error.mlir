func.func @f(%x: tensor<2x3xf32>) {
  %0 = dfg.add %x, %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}
