// RUN: meshc-opt %s --split-input-file --meshc-shard-plan --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-specialize-rank=rank=0 --canonicalize 2>/dev/null | FileCheck %s --check-prefix=RANK0
// RUN: meshc-opt %s --split-input-file --meshc-shard-plan --meshc-shard-partition --meshc-shard-pipeline-split --meshc-shard-specialize-rank=rank=1 --canonicalize 2>/dev/null | FileCheck %s --check-prefix=RANK1

// A rank reads its shard of a padded weight, never the whole weight: the
// slices of meshc-shard-specialize-rank move through the padding's concats
// and views onto the weights (passes/sharding/WeightSlices.cpp). The code
// generator stores what remains, a shard beside zeros, as one tensor.
//
// 6 query heads of 4 features over 3 KV heads on tp=2: padded to 8 over 4,
// 4 over 2 per rank. Rank 0 holds real heads only: plain slices of the
// weights. Rank 1 holds query heads 4 and 5 (columns 16-23 of wq) and the
// zero group, KV head 2 (columns 8-11 of wk and wv) and the zero KV head.
// RANK0-LABEL: func.func @uneven_kv_heads
// RANK0-NOT: dfg.concat
// RANK0-DAG: dfg.slice %{{.+}} starts = [0] ends = [16] axes = [1] steps = [1] : (tensor<24x24xf32>) -> tensor<24x16xf32>
// RANK0-DAG: dfg.slice %{{.+}} starts = [0] ends = [8] axes = [1] steps = [1] : (tensor<24x12xf32>) -> tensor<24x8xf32>
// RANK0-DAG: dfg.slice %{{.+}} starts = [0] ends = [16] axes = [0] steps = [1] : (tensor<24x24xf32>) -> tensor<16x24xf32>
// RANK0: return
// RANK1-LABEL: func.func @uneven_kv_heads
// RANK1-DAG: %[[WQ:.+]] = dfg.slice %{{.+}} starts = [16] ends = [24] axes = [1] steps = [1] : (tensor<24x24xf32>) -> tensor<24x8xf32>
// RANK1-DAG: %[[WQV:.+]] = dfg.reshape %[[WQ]] to [24, 1, 8]
// RANK1-DAG: dfg.concat %[[WQV]], %{{.+}} axis = 1 : (tensor<24x1x8xf32>, tensor<24x1x8xf32>) -> tensor<24x2x8xf32>
// RANK1-DAG: %[[WK:.+]] = dfg.slice %{{.+}} starts = [8] ends = [12] axes = [1] steps = [1] : (tensor<24x12xf32>) -> tensor<24x4xf32>
// RANK1-DAG: dfg.concat %[[WK]], %{{.+}} axis = 1 : (tensor<24x4xf32>, tensor<24x4xf32>) -> tensor<24x8xf32>
// RANK1-DAG: %[[WO:.+]] = dfg.slice %{{.+}} starts = [16] ends = [24] axes = [0] steps = [1] : (tensor<24x24xf32>) -> tensor<8x24xf32>
// RANK1-DAG: %[[WOV:.+]] = dfg.reshape %[[WO]] to [1, 8, 24]
// RANK1-DAG: dfg.concat %[[WOV]], %{{.+}} axis = 0 : (tensor<1x8x24xf32>, tensor<1x8x24xf32>) -> tensor<2x8x24xf32>
// RANK1-NOT: tensor<24x32xf32>
// RANK1: return
module attributes {meshc.mesh = "tp=2"} {
func.func @uneven_kv_heads(%x: tensor<1x4x24xf32>) -> tensor<1x4x24xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 2304] : tensor<24x24xf32>
  %wk = dfg.weight "wk" in "w.bin" [offset = 2304, length = 1152] : tensor<24x12xf32>
  %wv = dfg.weight "wv" in "w.bin" [offset = 3456, length = 1152] : tensor<24x12xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 4608, length = 2304] : tensor<24x24xf32>
  %q0 = dfg.linear %x, %wq transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x24xf32>) -> tensor<1x4x24xf32>
  %q1 = dfg.reshape %q0 to [1, 4, 6, 4] : (tensor<1x4x24xf32>) -> tensor<1x4x6x4xf32>
  %q = dfg.transpose %q1 perm = [0, 2, 1, 3] : (tensor<1x4x6x4xf32>) -> tensor<1x6x4x4xf32>
  %k0 = dfg.linear %x, %wk transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x12xf32>) -> tensor<1x4x12xf32>
  %k1 = dfg.reshape %k0 to [1, 4, 3, 4] : (tensor<1x4x12xf32>) -> tensor<1x4x3x4xf32>
  %k = dfg.transpose %k1 perm = [0, 2, 1, 3] : (tensor<1x4x3x4xf32>) -> tensor<1x3x4x4xf32>
  %v0 = dfg.linear %x, %wv transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x12xf32>) -> tensor<1x4x12xf32>
  %v1 = dfg.reshape %v0 to [1, 4, 3, 4] : (tensor<1x4x12xf32>) -> tensor<1x4x3x4xf32>
  %v = dfg.transpose %v1 perm = [0, 2, 1, 3] : (tensor<1x4x3x4xf32>) -> tensor<1x3x4x4xf32>
  %o = dfg.attention %q, %k, %v scale = 0.5 causal = true : (tensor<1x6x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) -> tensor<1x6x4x4xf32>
  %o1 = dfg.transpose %o perm = [0, 2, 1, 3] : (tensor<1x6x4x4xf32>) -> tensor<1x4x6x4xf32>
  %o2 = dfg.reshape %o1 to [1, 4, 24] : (tensor<1x4x6x4xf32>) -> tensor<1x4x24xf32>
  %y = dfg.linear %o2, %wo transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x24xf32>) -> tensor<1x4x24xf32>
  return %y : tensor<1x4x24xf32>
}
}

// -----

// 6 query heads over 2 KV heads on tp=4: each group of 3 query heads padded
// to 4: two query heads and one KV head per rank (the KV heads split over
// tp.kv, repeated over tp.rep). Rank 1 holds the last real query head of
// group 0 (columns 8-11 of wq; rows 8-11 of wo) beside a zero head.
// RANK1-LABEL: func.func @uneven_grouped_heads
// RANK1-DAG: %[[Q:.+]] = dfg.slice %{{.+}} starts = [8] ends = [12] axes = [1] steps = [1] : (tensor<24x24xf32>) -> tensor<24x4xf32>
// RANK1-DAG: %[[QV:.+]] = dfg.reshape %[[Q]] to [24, 1, 4]
// RANK1-DAG: dfg.concat %[[QV]], %{{.+}} axis = 2 : (tensor<24x1x4xf32>, tensor<24x1x4xf32>) -> tensor<24x1x8xf32>
// RANK1-DAG: %[[O:.+]] = dfg.slice %{{.+}} starts = [8] ends = [12] axes = [0] steps = [1] : (tensor<24x24xf32>) -> tensor<4x24xf32>
// RANK1-DAG: %[[OV:.+]] = dfg.reshape %[[O]] to [1, 4, 24]
// RANK1-DAG: dfg.concat %[[OV]], %{{.+}} axis = 1 : (tensor<1x4x24xf32>, tensor<1x4x24xf32>) -> tensor<1x8x24xf32>
// RANK1: return
module attributes {meshc.mesh = "tp=4"} {
func.func @uneven_grouped_heads(%x: tensor<1x4x24xf32>) -> tensor<1x4x24xf32> {
  %wq = dfg.weight "wq" in "w.bin" [offset = 0, length = 2304] : tensor<24x24xf32>
  %wk = dfg.weight "wk" in "w.bin" [offset = 2304, length = 768] : tensor<24x8xf32>
  %wv = dfg.weight "wv" in "w.bin" [offset = 3456, length = 768] : tensor<24x8xf32>
  %wo = dfg.weight "wo" in "w.bin" [offset = 4608, length = 2304] : tensor<24x24xf32>
  %q0 = dfg.linear %x, %wq transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x24xf32>) -> tensor<1x4x24xf32>
  %q1 = dfg.reshape %q0 to [1, 4, 6, 4] : (tensor<1x4x24xf32>) -> tensor<1x4x6x4xf32>
  %q = dfg.transpose %q1 perm = [0, 2, 1, 3] : (tensor<1x4x6x4xf32>) -> tensor<1x6x4x4xf32>
  %k0 = dfg.linear %x, %wk transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x8xf32>) -> tensor<1x4x8xf32>
  %k1 = dfg.reshape %k0 to [1, 4, 2, 4] : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %k = dfg.transpose %k1 perm = [0, 2, 1, 3] : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %v0 = dfg.linear %x, %wv transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x8xf32>) -> tensor<1x4x8xf32>
  %v1 = dfg.reshape %v0 to [1, 4, 2, 4] : (tensor<1x4x8xf32>) -> tensor<1x4x2x4xf32>
  %v = dfg.transpose %v1 perm = [0, 2, 1, 3] : (tensor<1x4x2x4xf32>) -> tensor<1x2x4x4xf32>
  %o = dfg.attention %q, %k, %v scale = 0.5 causal = true : (tensor<1x6x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x6x4x4xf32>
  %o1 = dfg.transpose %o perm = [0, 2, 1, 3] : (tensor<1x6x4x4xf32>) -> tensor<1x4x6x4xf32>
  %o2 = dfg.reshape %o1 to [1, 4, 24] : (tensor<1x4x6x4xf32>) -> tensor<1x4x24xf32>
  %y = dfg.linear %o2, %wo transpose_weight = false : (tensor<1x4x24xf32>, tensor<24x24xf32>) -> tensor<1x4x24xf32>
  return %y : tensor<1x4x24xf32>
}
}
