//===- EvaluatorImpl.h - Internals of the reference evaluator ---*- C++ -*-===//
//
// Part of meshc. The evaluator class and the indexing helpers that its op
// families share. Evaluator.cpp holds the helpers, the dispatch (evalOp) and
// the ops of the evaluator's own plumbing (weights, constants, waits, fused
// bodies); each family of ops has its file, one function per op, in the
// manner of StableHLO's reference interpreter:
//
//   EvalLayout.cpp       reshapes, transposes, slices, gathers, symbolic ops
//   EvalReductions.cpp   reductions, softmax, trilu, scatter_nd, cumsum, top_k
//   EvalTransformer.cpp  matmul, linear, attention, rotary, norms, embedding
//
// Internal to MeshcDfgEval: the public interface is Evaluator.h.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_EVAL_EVALUATORIMPL_H
#define MESHC_DIALECTS_DFG_EVAL_EVALUATORIMPL_H

#include "dialects/dfg/Eval/Evaluator.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace meshc::dfg::detail {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Rounds every value of `t` to its element type (roundToElementType).
void roundAll(EvalTensor &t);

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// Strides that read `in` broadcast to `out` (0 on broadcast dimensions;
/// shapes aligned at the last dimension).
llvm::SmallVector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> in,
                                            llvm::ArrayRef<int64_t> out);

/// Calls fn(linear index, multi-index) for every element of `shape`.
void forEachIndex(
    llvm::ArrayRef<int64_t> shape,
    llvm::function_ref<void(int64_t, llvm::ArrayRef<int64_t>)> fn);

/// The linear offset of `index` with `strides`.
int64_t dot(llvm::ArrayRef<int64_t> index, llvm::ArrayRef<int64_t> strides);

/// A tensor of `shape` and element type `element`, filled with zeros.
EvalTensor like(mlir::Type element, llvm::ArrayRef<int64_t> shape);

/// Checks that `op` may make a tensor of `shape`, one its operands do not
/// bound (a broadcast, an expand, a product, a range): no negative
/// dimension and at most Evaluator::kMaxElements elements; reports `op`
/// otherwise, rather than allocating without limit.
mlir::LogicalResult checkResultSize(mlir::Operation *op,
                                    llvm::ArrayRef<int64_t> shape);

/// Applies fn elementwise over operands broadcast to a common shape.
mlir::FailureOr<EvalTensor>
broadcastMap(mlir::Operation *op, llvm::ArrayRef<const EvalTensor *> operands,
             mlir::Type resultElement,
             llvm::function_ref<double(llvm::ArrayRef<double>)> fn);

/// Moves the values of `in` into `shape` with `read(out multi-index)` giving
/// the input linear index. A read outside `in` (an index or size out of
/// range that the op's checks let through) is reported at `op`, never made.
mlir::FailureOr<EvalTensor>
gather(mlir::Operation *op, const EvalTensor &in, llvm::ArrayRef<int64_t> shape,
       llvm::function_ref<int64_t(llvm::ArrayRef<int64_t>)> read);

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

/// The results of an op with the single result `t`.
mlir::FailureOr<llvm::SmallVector<EvalTensor>>
one(mlir::FailureOr<EvalTensor> t);

/// The element type of `op`'s first result.
mlir::Type resultElement(mlir::Operation *op);

class Evaluator {
public:
  /// 2 GiB of doubles.
  static constexpr int64_t kMaxElements = int64_t(1) << 28;

  explicit Evaluator(llvm::StringRef weightsDir) : weightsDir_(weightsDir) {}

  mlir::FailureOr<llvm::SmallVector<EvalTensor>>
  run(mlir::func::FuncOp func, llvm::ArrayRef<EvalTensor> inputs);

  /// Evaluates one op whose operands have the given values.
  mlir::FailureOr<llvm::SmallVector<EvalTensor>>
  runOp(mlir::Operation *op, llvm::ArrayRef<EvalTensor> operands,
        const DimBindings *dims) {
    if (dims)
      dims_ = *dims;
    for (auto [value, tensor] : llvm::zip_equal(op->getOperands(), operands))
      values_[value] = tensor;
    return evalOp(op);
  }

private:
  using Results = mlir::FailureOr<llvm::SmallVector<EvalTensor>>;

  const EvalTensor &get(mlir::Value v) { return values_.find(v)->second; }
  /// The value of `op`'s operand #i.
  const EvalTensor &operand(mlir::Operation *op, unsigned i) {
    return get(op->getOperand(i));
  }
  /// Evaluates `op`: elementwise ops through ElementwiseOpInterface, every
  /// other op by its function below.
  Results evalOp(mlir::Operation *op);
  mlir::FailureOr<EvalTensor> readWeight(WeightOp op);
  mlir::FailureOr<EvalTensor> readConstant(ConstantOp op);
  mlir::FailureOr<EvalTensor> matmul(mlir::Operation *op, const EvalTensor &a,
                                     const EvalTensor &b);
  mlir::FailureOr<EvalTensor> reduce(mlir::Operation *op, const EvalTensor &in,
                                     llvm::ArrayRef<int64_t> axes,
                                     bool keepDims, llvm::StringRef kind);
  mlir::FailureOr<EvalTensor>
  normalize(mlir::Operation *op, const EvalTensor &in, const EvalTensor &scale,
            const EvalTensor *bias, int64_t axis, double epsilon, bool rms);
  /// A norm op: the fused residual sum first (rounded, as the unfused add
  /// would be), then the normalisation; results `(norm[, sum])`.
  template <typename NormOp> Results normOp(NormOp n, bool rms);

  /// The sizes of a symbolic op's map at this run's bindings.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  sizesOf(mlir::Operation *op, mlir::AffineMap map, mlir::ArrayAttr symbols) {
    auto v = evaluateDims(map, symbols, dims_);
    if (!v)
      return op->emitOpError(llvm::toString(v.takeError()));
    return *v;
  }
  /// A strided slice of `in` (bounds clamped as ONNX Slice clamps them).
  mlir::FailureOr<EvalTensor> slice(mlir::Operation *op, const EvalTensor &in,
                                    llvm::ArrayRef<int64_t> starts,
                                    llvm::ArrayRef<int64_t> ends,
                                    llvm::ArrayRef<int64_t> axes,
                                    llvm::ArrayRef<int64_t> steps);

  // The evaluator's own ops (Evaluator.cpp).
  Results evalWeight(WeightOp op);
  Results evalWait(WaitOp op);
  Results evalFusedElementwise(FusedElementwiseOp op);
  Results evalConstant(ConstantOp op);

  // Layout (EvalLayout.cpp).
  Results evalReshape(ReshapeOp op);
  Results evalTranspose(TransposeOp op);
  Results evalUnsqueeze(UnsqueezeOp op);
  Results evalSqueeze(SqueezeOp op);
  Results evalConcat(ConcatOp op);
  Results evalGather(GatherOp op);
  Results evalGatherND(GatherNDOp op);
  Results evalSlice(SliceOp op);
  Results evalSizes(SizesOp op);
  Results evalSymbolicReshape(SymbolicReshapeOp op);
  Results evalSymbolicExpand(SymbolicExpandOp op);
  Results evalSymbolicSlice(SymbolicSliceOp op);
  Results evalRange(RangeOp op);
  Results evalSplit(SplitOp op);
  Results evalExpand(ExpandOp op);

  // Reductions (EvalReductions.cpp).
  Results evalReduceMean(ReduceMeanOp op);
  Results evalReduceSum(ReduceSumOp op);
  Results evalReduceMax(ReduceMaxOp op);
  Results evalSoftmax(SoftmaxOp op);
  Results evalTrilu(TriluOp op);
  Results evalCumSum(CumSumOp op);
  Results evalTopK(TopKOp op);
  Results evalScatterND(ScatterNDOp op);

  // Transformer blocks (EvalTransformer.cpp).
  Results evalMatMul(MatMulOp op);
  Results evalAttention(AttentionOp op);
  Results evalRotary(RotaryOp op);
  Results evalLayerNorm(LayerNormOp op);
  Results evalRmsNorm(RmsNormOp op);
  Results evalEmbedding(EmbeddingOp op);
  Results evalLinear(LinearOp op);

  std::string weightsDir_;
  llvm::DenseMap<mlir::Value, EvalTensor> values_;
  /// Sizes of the named dimensions of the function's arguments.
  DimBindings dims_;
};

} // namespace meshc::dfg::detail

#endif // MESHC_DIALECTS_DFG_EVAL_EVALUATORIMPL_H
