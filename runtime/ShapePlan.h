//===- ShapePlan.h - Loop bounds shared by every target ---------*- C++ -*-===//
//
// Part of meshc. Internal to the runtime: the host-side arithmetic that turns
// an op's shapes and attributes into the extents, strides and offsets its
// kernel loops over, before any element is touched. The cpu kernels
// (runtime/cpu) and the cuda kernels (runtime/cuda) both plan here and keep
// only their element loops and launches, so the two targets cannot disagree
// about which element an op reads. Plain structs (trivially copyable: the
// cuda kernels take several by value) and header-only functions; C++17, no
// CUDA, LLVM or MLIR inside.
//
// Axes are normalised by the compiler before they reach a kernel
// (kernel_api.inc); a negative one counts from the end here as well, so a
// plan stands on its own. Shapes are trusted as the verifiers left them;
// the only errors raised here (through rt::fatal, with the messages the
// kernels have always given) are a slice that run-time sizes push out of its
// input and an attention given a past key/value without its present outputs.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_SHAPEPLAN_H
#define MESHC_RUNTIME_SHAPEPLAN_H

#include "meshc/runtime/error.h"
#include "meshc/runtime/tensor.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace meshc::rt::plans {

/// `axis` of a rank-`rank` tensor, counted from the end when negative.
inline int normalizeAxis(std::int64_t axis, int rank) {
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

/// Dense row-major strides of `t` in elements.
inline void denseStrides(const TensorRef &t, std::int64_t *strides) {
  std::int64_t s = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= t.shape[d];
  }
}

/// The element strides of `in` broadcast to `rank` dimensions by numpy rules
/// (aligned at the last dimension): 0 on a dimension `in` lacks or has as 1.
inline void broadcastStrides(const TensorRef &in, int rank,
                             std::int64_t *strides) {
  std::int64_t dense[kMaxRank];
  denseStrides(in, dense);
  const int offset = rank - in.rank;
  for (int d = 0; d < rank; ++d) {
    const int id = d - offset;
    strides[d] = (id < 0 || in.shape[id] == 1) ? 0 : dense[id];
  }
}

//===----------------------------------------------------------------------===//
// Strided plans (elementwise broadcasting, transpose, slice, expand)
//===----------------------------------------------------------------------===//

/// Up to K operands read through per-dimension element strides (0 on a
/// broadcast dimension) while the output is walked densely. The cpu kernels
/// walk it in runs (forEachRun), the cuda kernels take it by value and
/// decompose each element's index (planOffsets).
template <int K> struct StridePlan {
  int rank = 0;
  /// Operands in use, at most K (the cpu's binary and where kernels share
  /// one three-operand type).
  int numOperands = K;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[K][kMaxRank] = {};

  std::int64_t numElements() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= shape[i];
    return n;
  }
  /// The innermost stride of operand `k`.
  std::int64_t innerStride(int k) const { return strides[k][rank - 1]; }
};

/// Drops size-1 dimensions and merges each dimension into its outer
/// neighbour when every operand steps over its whole extent exactly once per
/// step of the neighbour, so that a same-shape operation is one dimension
/// and a suffix broadcast two. Leaves at least one dimension.
template <int K> void simplify(StridePlan<K> &plan) {
  const int ops = plan.numOperands;
  int rank = 0;
  for (int d = 0; d < plan.rank; ++d) {
    if (plan.shape[d] == 1)
      continue;
    plan.shape[rank] = plan.shape[d];
    for (int k = 0; k < ops; ++k)
      plan.strides[k][rank] = plan.strides[k][d];
    ++rank;
  }
  if (rank == 0) {
    plan.rank = 1;
    plan.shape[0] = 1;
    for (int k = 0; k < ops; ++k)
      plan.strides[k][0] = 0;
    return;
  }
  int merged = 0;
  for (int d = 1; d < rank; ++d) {
    bool mergeable = true;
    for (int k = 0; k < ops; ++k)
      if (plan.strides[k][merged] != plan.strides[k][d] * plan.shape[d])
        mergeable = false;
    if (mergeable) {
      plan.shape[merged] *= plan.shape[d];
      for (int k = 0; k < ops; ++k)
        plan.strides[k][merged] = plan.strides[k][d];
      continue;
    }
    ++merged;
    plan.shape[merged] = plan.shape[d];
    for (int k = 0; k < ops; ++k)
      plan.strides[k][merged] = plan.strides[k][d];
  }
  plan.rank = merged + 1;
}

/// Whether operand 0 of `plan` is read contiguously from its start (one
/// memcpy, or the data used in place).
template <int K> bool isContiguous(const StridePlan<K> &plan) {
  return plan.rank == 1 && plan.strides[0][0] == 1;
}

/// Sets operand `k` of `plan` (whose shape is the output's) to read `in`
/// broadcast by numpy rules.
template <int K>
void setBroadcastOperand(StridePlan<K> &plan, int k, const TensorRef &in) {
  broadcastStrides(in, plan.rank, plan.strides[k]);
}

/// A simplified plan reading `numInputs` tensors broadcast to `out`'s shape.
template <int K>
StridePlan<K> broadcastPlan(const TensorRef &out,
                            const TensorRef *const *inputs, int numInputs = K) {
  StridePlan<K> plan;
  plan.rank = out.rank;
  plan.numOperands = numInputs;
  for (int d = 0; d < out.rank; ++d)
    plan.shape[d] = out.shape[d];
  for (int k = 0; k < numInputs; ++k)
    setBroadcastOperand(plan, k, *inputs[k]);
  simplify(plan);
  return plan;
}

/// transpose: output element i... reads in[i[perm^-1]...]; operand 0 walks
/// the input with the strides of the permuted dimensions.
inline StridePlan<1> transposePlan(const TensorRef &in,
                                   const std::int64_t *perm,
                                   const TensorRef &out) {
  std::int64_t inStrides[kMaxRank];
  denseStrides(in, inStrides);
  StridePlan<1> plan;
  plan.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) {
    plan.shape[d] = out.shape[d];
    plan.strides[0][d] = inStrides[perm[d]];
  }
  simplify(plan);
  return plan;
}

/// slice: operand 0 reads `in` from element `base` with the stepped strides.
struct SlicePlan {
  StridePlan<1> read;
  std::int64_t base = 0;
};

/// The plan of a non-empty slice. Sizes computed at run time (symbolic
/// dimensions) must still keep the first and the last element of every
/// dimension inside the input; a slice that leaves it is fatal.
inline SlicePlan slicePlan(const TensorRef &in, const std::int64_t *starts,
                           const std::int64_t *steps, const TensorRef &out) {
  std::int64_t inStrides[kMaxRank];
  denseStrides(in, inStrides);
  SlicePlan p;
  p.read.rank = in.rank;
  for (int d = 0; d < in.rank; ++d) {
    const std::int64_t last = starts[d] + (out.shape[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= in.shape[d] || last < 0 ||
        last >= in.shape[d])
      fatal("slice: " + std::to_string(out.shape[d]) + " elements from index " +
            std::to_string(starts[d]) + " by step " + std::to_string(steps[d]) +
            " leave dimension " + std::to_string(d) + " of size " +
            std::to_string(in.shape[d]) +
            " (a size beyond what the model supports?)");
    p.read.shape[d] = out.shape[d];
    p.read.strides[0][d] = steps[d] * inStrides[d];
    p.base += starts[d] * inStrides[d];
  }
  simplify(p.read);
  return p;
}

//===----------------------------------------------------------------------===//
// One axis (softmax, concat, gather, embedding)
//===----------------------------------------------------------------------===//

/// A tensor seen as [outer, size, inner] around one axis.
struct AxisSplit {
  int axis = 0;
  std::int64_t outer = 1, size = 1, inner = 1;
};

inline AxisSplit splitAt(const TensorRef &t, std::int64_t axis) {
  AxisSplit s;
  s.axis = normalizeAxis(axis, t.rank);
  for (int d = 0; d < s.axis; ++d)
    s.outer *= t.shape[d];
  s.size = t.shape[s.axis];
  for (int d = s.axis + 1; d < t.rank; ++d)
    s.inner *= t.shape[d];
  return s;
}

/// concat: `outer` rows of the output, each `outRow` elements long, each
/// input contributing rowOf(input) consecutive elements of every row.
struct ConcatPlan {
  int axis = 0;
  std::int64_t outer = 1, inner = 1, outRow = 0;
  std::int64_t rowOf(const TensorRef &input) const {
    return input.shape[axis] * inner;
  }
};

inline ConcatPlan concatPlan(const TensorRef &out, std::int64_t axis) {
  const AxisSplit s = splitAt(out, axis);
  ConcatPlan p;
  p.axis = s.axis;
  p.outer = s.outer;
  p.inner = s.inner;
  p.outRow = s.size * s.inner;
  return p;
}

/// gather and embedding: output row (o, j) of [outer, count] rows of
/// `inner` elements is data row o * dim + indices[j].
struct GatherPlan {
  int axis = 0;
  std::int64_t outer = 1, dim = 1, inner = 1, count = 0;
  std::int64_t rows() const { return outer * count; }
};

inline GatherPlan gatherPlan(const TensorRef &data, const TensorRef &indices,
                             std::int64_t axis) {
  const AxisSplit s = splitAt(data, axis);
  GatherPlan p;
  p.axis = s.axis;
  p.outer = s.outer;
  p.dim = s.size;
  p.inner = s.inner;
  p.count = indices.numElements();
  return p;
}

/// embedding is a gather of the rows of a [vocab, hidden] table.
inline GatherPlan embeddingPlan(const TensorRef &table, const TensorRef &ids) {
  return gatherPlan(table, ids, 0);
}

//===----------------------------------------------------------------------===//
// Index tuples (gatherND, scatterND)
//===----------------------------------------------------------------------===//

/// gatherND: output row r (of batches * perBatch rows, `inner` elements
/// each) starts at data element (r / perBatch) * batchStride + sum over
/// j < k of index_j * stride[j], index_j (in [-size[j], size[j])) read from
/// indices[r * k + j] for data dimension batchDims + j.
struct GatherNDPlan {
  int batchDims = 0, k = 0;
  std::int64_t size[kMaxRank] = {}, stride[kMaxRank] = {};
  std::int64_t batchStride = 0, batches = 1, perBatch = 1, inner = 1;
  std::int64_t rows() const { return batches * perBatch; }
};

inline GatherNDPlan gatherNDPlan(const TensorRef &data,
                                 const TensorRef &indices,
                                 std::int64_t batchDims) {
  GatherNDPlan p;
  p.batchDims = static_cast<int>(batchDims);
  p.k = static_cast<int>(indices.shape[indices.rank - 1]);
  std::int64_t strides[kMaxRank];
  denseStrides(data, strides);
  for (int j = 0; j < p.k; ++j) {
    p.size[j] = data.shape[p.batchDims + j];
    p.stride[j] = strides[p.batchDims + j];
  }
  p.batchStride = p.batchDims > 0 ? strides[p.batchDims - 1] : 0;
  for (int d = p.batchDims + p.k; d < data.rank; ++d)
    p.inner *= data.shape[d];
  for (int d = 0; d < p.batchDims; ++d)
    p.batches *= indices.shape[d];
  for (int d = p.batchDims; d < indices.rank - 1; ++d)
    p.perBatch *= indices.shape[d];
  return p;
}

/// scatterND: update t (of `tuples`, each a slice of `slice` elements)
/// lands at slice (t / perBatch) * batchSlices + sum over d < q of
/// index_d * stride[d] of the output, the index of data dimension
/// batchDims + d (in [-shape[d], shape[d])) read from indices[t * q + d].
/// With batchDims = 0 every tuple is in the one batch.
struct ScatterNDPlan {
  int q = 0;
  std::int64_t tuples = 0, slice = 1, perBatch = 1, batchSlices = 0;
  std::int64_t shape[kMaxRank] = {}, stride[kMaxRank] = {};
  /// The first slice of tuple t's batch (constexpr: the cuda kernels call it).
  constexpr std::int64_t batchStart(std::int64_t t) const {
    return perBatch > 0 ? t / perBatch * batchSlices : 0;
  }
};

inline ScatterNDPlan scatterNDPlan(const TensorRef &data,
                                   const TensorRef &indices,
                                   std::int64_t batchDims = 0) {
  ScatterNDPlan p;
  const int batch = static_cast<int>(batchDims);
  p.q = static_cast<int>(indices.shape[indices.rank - 1]);
  p.tuples = p.q == 0 ? 0 : indices.numElements() / p.q;
  for (int d = batch + p.q; d < data.rank; ++d)
    p.slice *= data.shape[d];
  for (int d = batch; d < indices.rank - 1; ++d)
    p.perBatch *= indices.shape[d];
  std::int64_t stride = 1;
  for (int d = p.q - 1; d >= 0; --d) {
    p.shape[d] = data.shape[batch + d];
    p.stride[d] = stride;
    stride *= data.shape[batch + d];
  }
  p.batchSlices = stride;
  return p;
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

/// trilu: `matrices` matrices of rows x cols (the last two dimensions).
struct TriluPlan {
  std::int64_t matrices = 1, rows = 0, cols = 0;
};

inline TriluPlan triluPlan(const TensorRef &in) {
  TriluPlan p;
  p.rows = in.shape[in.rank - 2];
  p.cols = in.shape[in.rank - 1];
  for (int d = 0; d < in.rank - 2; ++d)
    p.matrices *= in.shape[d];
  return p;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Where each output of a reduction reads: its index decomposes over the
/// kept runs (outermost first, sizes and element strides of the input) into
/// a base offset, from which an odometer walks the reduced runs.
struct ReduceLayout {
  int numKept = 0, numReduced = 0;
  std::int64_t keptSize[kMaxRank] = {}, keptStride[kMaxRank] = {};
  std::int64_t reducedSize[kMaxRank] = {}, reducedStride[kMaxRank] = {};
};

/// reduce: the input's dimensions grouped into alternating runs of kept and
/// reduced dimensions, size-1 dimensions dropped. The output's element
/// count (with or without keep_dims) is the product of the kept runs.
struct ReducePlan {
  int groups = 0;
  std::int64_t size[kMaxRank] = {};
  bool isReduced[kMaxRank] = {};
  /// Input elements per output (0: every output is the identity).
  std::int64_t count = 1;
  int reducedRuns = 0;
  /// With exactly one reduced run: the input as [outer, r, inner], r the
  /// reduced extent (inner == 1: each output reduces a contiguous row).
  std::int64_t outer = 1, r = 1, inner = 1;
  ReduceLayout layout;
};

inline ReducePlan reducePlan(const TensorRef &in, const std::int64_t *axes,
                             int numAxes) {
  ReducePlan p;
  bool reduced[kMaxRank] = {};
  for (int i = 0; i < numAxes; ++i)
    reduced[normalizeAxis(axes[i], in.rank)] = true;
  for (int d = 0; d < in.rank; ++d) {
    if (reduced[d])
      p.count *= in.shape[d];
    if (in.shape[d] == 1)
      continue;
    if (p.groups > 0 && p.isReduced[p.groups - 1] == reduced[d]) {
      p.size[p.groups - 1] *= in.shape[d];
      continue;
    }
    p.size[p.groups] = in.shape[d];
    p.isReduced[p.groups] = reduced[d];
    ++p.groups;
  }
  for (int g = 0, seen = 0; g < p.groups; ++g) {
    if (p.isReduced[g]) {
      ++p.reducedRuns;
      p.r = p.size[g];
      seen = 1;
    } else {
      (seen ? p.inner : p.outer) *= p.size[g];
    }
  }
  // Runs are listed outermost first; their strides grow from the innermost.
  std::int64_t strides[kMaxRank];
  std::int64_t stride = 1;
  for (int g = p.groups - 1; g >= 0; --g) {
    strides[g] = stride;
    stride *= p.size[g];
  }
  ReduceLayout &l = p.layout;
  for (int g = 0; g < p.groups; ++g) {
    if (p.isReduced[g]) {
      l.reducedSize[l.numReduced] = p.size[g];
      l.reducedStride[l.numReduced++] = strides[g];
    } else {
      l.keptSize[l.numKept] = p.size[g];
      l.keptStride[l.numKept++] = strides[g];
    }
  }
  return p;
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

/// layer_norm / rms_norm: `rows` rows of `inner` elements, inner the
/// product of the normalised dimensions [axis, rank).
struct NormPlan {
  int axis = 0;
  std::int64_t rows = 0, inner = 1;
  bool empty() const { return rows == 0 || inner == 0; }
};

inline NormPlan normPlan(const TensorRef &in, std::int64_t axis) {
  NormPlan p;
  p.axis = normalizeAxis(axis, in.rank);
  for (int d = p.axis; d < in.rank; ++d)
    p.inner *= in.shape[d];
  p.rows = p.inner == 0 ? 0 : in.numElements() / p.inner;
  return p;
}

/// How a norm reads `t` (its scale or bias) for element i of a row: t's
/// own elements when it has `inner` of them (isContiguous), else `t`
/// broadcast to the normalised dimensions.
inline StridePlan<1> normOperandPlan(const TensorRef &t, const TensorRef &in,
                                     const NormPlan &norm) {
  StridePlan<1> plan;
  plan.rank = 1;
  plan.shape[0] = norm.inner;
  plan.strides[0][0] = 1;
  if (t.numElements() == norm.inner)
    return plan;
  plan.rank = in.rank - norm.axis;
  for (int d = 0; d < plan.rank; ++d)
    plan.shape[d] = in.shape[norm.axis + d];
  setBroadcastOperand(plan, 0, t);
  simplify(plan);
  return plan;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// matmul (numpy rules): `batch` walks the broadcast batch dimensions with
/// each operand's stride counted in matrices (operand 0 the lhs's m x k,
/// operand 1 the rhs's k x n); a 1-D operand has no batch.
struct MatmulPlan {
  std::int64_t m = 1, k = 1, n = 1;
  StridePlan<2> batch;
  std::int64_t batches() const { return batch.numElements(); }
  /// Every batch reads the same rhs and consecutive lhs matrices: the batch
  /// folds into M (x @ W).
  bool foldable() const {
    return batches() == 1 || (batch.rank == 1 && batch.strides[0][0] == 1 &&
                              batch.strides[1][0] == 0);
  }
};

inline MatmulPlan matmulPlan(const TensorRef &lhs, const TensorRef &rhs) {
  MatmulPlan p;
  const bool lhsVector = lhs.rank == 1, rhsVector = rhs.rank == 1;
  p.k = lhs.shape[lhs.rank - 1];
  p.m = lhsVector ? 1 : lhs.shape[lhs.rank - 2];
  p.n = rhsVector ? 1 : rhs.shape[rhs.rank - 1];
  const int batchRanks[2] = {lhsVector ? 0 : lhs.rank - 2,
                             rhsVector ? 0 : rhs.rank - 2};
  const int rank = std::max(batchRanks[0], batchRanks[1]);
  const TensorRef *operands[2] = {&lhs, &rhs};
  StridePlan<2> &plan = p.batch;
  plan.rank = rank;
  for (int d = 0; d < rank; ++d)
    plan.shape[d] = 1;
  for (int op = 0; op < 2; ++op) {
    const int lead = rank - batchRanks[op];
    std::int64_t stride = 1;
    for (int d = rank - 1; d >= lead; --d) {
      const std::int64_t dim = operands[op]->shape[d - lead];
      plan.strides[op][d] = dim == 1 ? 0 : stride;
      stride *= dim;
      if (dim != 1)
        plan.shape[d] = dim;
    }
    for (int d = 0; d < lead; ++d)
      plan.strides[op][d] = 0;
  }
  simplify(plan);
  return p;
}

/// linear: `rows` rows of k inputs to n outputs.
struct LinearPlan {
  std::int64_t rows = 0, k = 0, n = 0;
  bool empty() const { return rows == 0 || n == 0; }
};

inline LinearPlan linearPlan(const TensorRef &in, const TensorRef &out) {
  LinearPlan p;
  p.k = in.shape[in.rank - 1];
  p.n = out.shape[out.rank - 1];
  p.rows = out.numElements() / std::max<std::int64_t>(p.n, 1);
  return p;
}

//===----------------------------------------------------------------------===//
// Attention and rotary
//===----------------------------------------------------------------------===//

/// attention: query [batch, heads, seq, dim], keys and values [batch,
/// kvHeads, total = past + new, dim | vDim]; query head h reads KV head
/// h / group. The mask is read through broadcast strides over [batch,
/// heads, seq, total].
struct AttentionPlan {
  std::int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  std::int64_t kvHeads = 0, vDim = 0, past = 0, total = 0, group = 1;
  std::int64_t maskStrides[4] = {};
  /// Score rows, one per (batch, head, query).
  std::int64_t rows() const { return batch * heads * seq; }
};

/// Past key/value need both present outputs (the concatenation is written
/// there); anything else is fatal.
inline AttentionPlan
attentionPlan(const TensorRef &query, const TensorRef &key,
              const TensorRef &value, const TensorRef *mask,
              const TensorRef *pastKey, const TensorRef *pastValue,
              const TensorRef *presentKey, const TensorRef *presentValue) {
  if ((pastKey || pastValue) &&
      !(pastKey && pastValue && presentKey && presentValue))
    fatal("attention: past key/value need both present outputs");
  AttentionPlan p;
  p.batch = query.shape[0];
  p.heads = query.shape[1];
  p.seq = query.shape[2];
  p.dim = query.shape[3];
  p.kvHeads = key.shape[1];
  p.vDim = value.shape[3];
  p.past = pastKey ? pastKey->shape[2] : 0;
  p.total = p.past + key.shape[2];
  p.group = p.heads / p.kvHeads;
  if (mask)
    broadcastStrides(*mask, 4, p.maskStrides);
  return p;
}

/// dfg.attention's past_lengths: an i64 [batch] beside a past.
inline void checkPastLengthsShape(const TensorRef &lengths,
                                  const AttentionPlan &p, bool hasPast) {
  if (!hasPast || lengths.dtype != DType::I64 || lengths.rank != 1 ||
      lengths.shape[0] != p.batch)
    fatal("attention: past_lengths must be an i64 [" +
          std::to_string(p.batch) + "] beside the past key and value");
}

/// Each row's history (`rows`, host memory) within the past's positions;
/// a negative one (at least -seq: a left-padded row whose first new tokens
/// come before its start) drops that many new tokens.
inline void checkPastLengthValues(const std::int64_t *rows,
                                  const AttentionPlan &p) {
  for (std::int64_t b = 0; b < p.batch; ++b)
    if (rows[b] < -p.seq || rows[b] > p.past)
      fatal("attention: past_lengths[" + std::to_string(b) + "] = " +
            std::to_string(rows[b]) + " is outside [" +
            std::to_string(-p.seq) + ", " + std::to_string(p.past) +
            "] (minus the new tokens, up to the past's positions)");
}

/// The [batch, kvHeads, past + new, d] present key or value as the
/// concatenation of past and new along the sequence.
inline ConcatPlan presentPlan(const TensorRef &present) {
  return concatPlan(present, 2);
}

/// rotary: `in` [batch, heads, seq, dim]; the first rotaryDim features are
/// rotated in `half` pairs by the angles of one cos/sin table row per (batch,
/// position): positions[b, s] of a [cacheRows, half] cache, else row
/// (sharedTable ? 0 : b) * seq + s of [batch or 1, seq, half] tables.
struct RotaryPlan {
  std::int64_t batch = 0, heads = 0, seq = 0, dim = 0;
  std::int64_t rotaryDim = 0, half = 0, cacheRows = 0;
  bool sharedTable = false;
  /// Rotated rows, one per (batch, head, position).
  std::int64_t rows() const { return batch * heads * seq; }
};

inline RotaryPlan rotaryPlan(const TensorRef &in, const TensorRef &cos,
                             bool positions, std::int64_t rotaryDim) {
  RotaryPlan p;
  p.batch = in.shape[0];
  p.heads = in.shape[1];
  p.seq = in.shape[2];
  p.dim = in.shape[3];
  p.rotaryDim = rotaryDim;
  p.half = rotaryDim / 2;
  p.cacheRows = cos.shape[0];
  p.sharedTable = !positions && cos.shape[0] == 1;
  return p;
}

} // namespace meshc::rt::plans

#endif // MESHC_RUNTIME_SHAPEPLAN_H
