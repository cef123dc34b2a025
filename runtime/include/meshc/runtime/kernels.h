//===- kernels.h - CPU kernels of the cpu target ----------------*- C++ -*-===//
//
// Part of meshc. One function per dfg op (or op family) that generated cpu
// code calls. Semantics are those of the dfg op of the same name (see
// dialects/dfg/IR/DfgOps.td): ONNX broadcasting, negative axes already
// normalised by the compiler, shapes checked by the compiler's verifiers, so a
// kernel trusts the shapes of its TensorRefs and never re-validates them. The
// only errors left for run time are data-dependent (an index out of range),
// reported through rt::fatal.
//
// Element types: floating-point kernels take f32; integer and bool tensors
// (i64, i32, bool) flow through the shape, compare, select, cast and
// gather-style kernels. GEMMs (matmul, linear, attention's products) go
// through OpenBLAS; the rest is meshc's own code, parallel with OpenMP.
// An output never aliases an input: the buffer planner guarantees it.
// No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_KERNELS_H
#define MESHC_RUNTIME_KERNELS_H

#include "meshc/runtime/tensor.h"

#include <cstdint>

namespace meshc::rt::cpu {

/// Elementwise binary ops with numpy broadcasting (shapes aligned at the last
/// dimension). Arithmetic ops take and give f32, i64 or i32; And/Or bool;
/// comparisons take any numeric type and give bool.
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div, // integer division truncates toward zero, as ONNX Div
  Pow,
  Min,
  Max,
  And,
  Or,
  Equal,
  Less,
  Greater,
  LessOrEqual
};
void binary(BinaryOp op, const TensorRef &lhs, const TensorRef &rhs,
            const TensorRef &out);

/// Elementwise unary ops on f32 (Neg also i64/i32; Not bool). Gelu is the
/// exact erf form, GeluTanh the tanh approximation.
enum class UnaryOp {
  Sqrt,
  Reciprocal,
  Neg,
  Silu,
  Erf,
  Tanh,
  Sigmoid,
  Exp,
  Cos,
  Sin,
  Not,
  Gelu,
  GeluTanh
};
void unary(UnaryOp op, const TensorRef &in, const TensorRef &out);

/// out = cond ? lhs : rhs, all three broadcast to `out`'s shape.
void where(const TensorRef &cond, const TensorRef &lhs, const TensorRef &rhs,
           const TensorRef &out);

/// ONNX Cast between f32, i64, i32 and bool (float to int truncates toward
/// zero, to bool is x != 0).
void cast(const TensorRef &in, const TensorRef &out);

/// Copies `in`'s bytes to `out` (equal byte sizes).
void copy(const TensorRef &in, const TensorRef &out);

/// out = in with dimensions permuted: out.shape[i] = in.shape[perm[i]].
void transpose(const TensorRef &in, const std::int64_t *perm,
               const TensorRef &out);

/// Concatenates `count` tensors along `axis`.
void concat(const TensorRef *inputs, int count, std::int64_t axis,
            const TensorRef &out);

/// ONNX Gather: out = data indexed along `axis` by `indices` (i64 or i32;
/// negative indices count from the end; outside [-n, n) is fatal).
void gather(const TensorRef &data, const TensorRef &indices, std::int64_t axis,
            const TensorRef &out);

/// A strided slice: for every dimension d of `in` (starts/steps have in.rank
/// entries, already clamped, steps non-zero), out[i...] = in[starts + i *
/// steps]; the number of elements taken along d is out.shape[d].
void slice(const TensorRef &in, const std::int64_t *starts,
           const std::int64_t *steps, const TensorRef &out);

/// Broadcasts `in` to `out`'s shape (ONNX Expand).
void expand(const TensorRef &in, const TensorRef &out);

/// Reduces `in` over `axes` (numAxes entries, non-negative). `out` has either
/// the kept dimensions as 1 or none; only its element count matters.
enum class ReduceOp { Sum, Mean, Max };
void reduce(ReduceOp op, const TensorRef &in, const std::int64_t *axes,
            int numAxes, const TensorRef &out);

/// ONNX Trilu on the last two dimensions.
void trilu(const TensorRef &in, bool upper, std::int64_t diagonal,
           const TensorRef &out);

/// ONNX ScatterND, reduction none: out = data; out[indices[i]] = updates[i].
/// An index outside its dimension is fatal.
void scatterND(const TensorRef &data, const TensorRef &indices,
               const TensorRef &updates, const TensorRef &out);

/// out[i..., :] = table[ids[i...], :] (negative ids count from the end; an id
/// outside [-vocab, vocab) is fatal).
void embedding(const TensorRef &table, const TensorRef &ids,
               const TensorRef &out);

/// numpy.matmul (batch dimensions broadcast; 1-D operands as in numpy) on
/// f32 (OpenBLAS) or i64/i32.
void matmul(const TensorRef &lhs, const TensorRef &rhs, const TensorRef &out);

/// out[..., n] = sum_k in[..., k] * W[k, n] + bias[n]; `weight` is W (shape
/// [K, N]) or, with transposeWeight, W^T ([N, K]). `bias` may be null.
void linear(const TensorRef &in, const TensorRef &weight, const TensorRef *bias,
            bool transposeWeight, const TensorRef &out);

/// Scaled dot-product attention as dfg.attention: query [B, H, S, D], key and
/// value [B, Hkv, S_new, D|Dv], optional past key/value [B, Hkv, P, D|Dv]
/// (then presentKey/presentValue [B, Hkv, P + S_new, ...] receive the
/// concatenation and must be given), optional mask (bool: keep where true;
/// f32: added) broadcast to [B, H, S, P + S_new], causal masking key j > query
/// i + P, softcap (0: none). Query head h reads KV head h / (H / Hkv). A row
/// whose keys are all masked gives zeros.
void attention(const TensorRef &query, const TensorRef &key,
               const TensorRef &value, const TensorRef *mask,
               const TensorRef *pastKey, const TensorRef *pastValue,
               float scale, bool causal, float softcap, const TensorRef &out,
               const TensorRef *presentKey, const TensorRef *presentValue);

/// Rotary embedding as dfg.rotary: `in` [B, H, S, D]; with `positions`
/// ([B, S], i64) cos/sin are [max_pos, rotaryDim / 2] caches, otherwise
/// [B or 1, S, rotaryDim / 2]. Half-split or interleaved pairs; features past
/// rotaryDim pass through.
void rotary(const TensorRef &in, const TensorRef &cos, const TensorRef &sin,
            const TensorRef *positions, bool interleaved,
            std::int64_t rotaryDim, const TensorRef &out);

/// Layer / RMS normalisation over dimensions [axis, rank), statistics
/// accumulated in double. `scale` and `bias` broadcast to
/// the normalised dimensions; `bias` may be null. With `residual`, x = in +
/// residual is normalised and written to `sum` too (both given or neither).
void layerNorm(const TensorRef &in, const TensorRef &scale,
               const TensorRef *bias, const TensorRef *residual,
               std::int64_t axis, float epsilon, const TensorRef &out,
               const TensorRef *sum);
void rmsNorm(const TensorRef &in, const TensorRef &scale, const TensorRef *bias,
             const TensorRef *residual, std::int64_t axis, float epsilon,
             const TensorRef &out, const TensorRef *sum);

/// Softmax along `axis` (max-subtracted).
void softmax(const TensorRef &in, std::int64_t axis, const TensorRef &out);

} // namespace meshc::rt::cpu

#endif // MESHC_RUNTIME_KERNELS_H
