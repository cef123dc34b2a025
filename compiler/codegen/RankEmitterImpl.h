//===- RankEmitterImpl.h - Internals of the rank emitter --------*- C++ -*-===//
//
// Part of meshc. Not a public header: what RankEmitter.cpp and the per-family
// emission files (Emit*.cpp) share. FunctionEmitter emits one function of a
// rank program; emitOp (RankEmitter.cpp) dispatches each op to its emission
// function, defined in the file of its family:
//   EmitElementwise.cpp   unary and binary kernels, where, cast, fused chains
//   EmitLayout.cpp        views, transpose, concat, gather, slices, expand,
//                         split, range, sizes
//   EmitTransformer.cpp   matmul, linear, attention, rotary, norms, embedding,
//                         softmax, reductions, cumsum, top_k, trilu, scatter_nd
//   EmitCommunication.cpp collectives, sends, receives and their waits
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_RANKEMITTERIMPL_H
#define MESHC_COMPILER_CODEGEN_RANKEMITTERIMPL_H

#include "compiler/codegen/RankEmitter.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace meshc::codegen {

//===----------------------------------------------------------------------===//
// Shared helpers (RankEmitter.cpp)
//===----------------------------------------------------------------------===//

/// `s` as a C++ string literal.
std::string cppString(llvm::StringRef s);
/// `v` as a C++ float literal.
std::string cppFloat(double v);
/// "{2, 8, 64}"; a dynamic dimension prints as -1 (signature specs).
std::string list(llvm::ArrayRef<int64_t> values);
/// The key of a communication group: its grid axes.
std::string groupKey(llvm::ArrayRef<int16_t> axes);
/// The dfg.wait that completes collective `op`
/// (meshc-lower-schedule-collectives), or null when `op` blocks where it
/// stands.
dfg::WaitOp waitOf(mlir::Operation *op);

inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

inline int64_t rankOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

/// A symbolic dimension @main binds, and how (a C++ expression).
struct BoundSymbol {
  std::string name, init, comment;
};

/// `s` as a C++ identifier: every character but letters and digits becomes
/// an underscore.
std::string identifier(llvm::StringRef s);

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

class FunctionEmitter {
public:
  FunctionEmitter(mlir::func::FuncOp fn, WeightShards &weights,
                  const llvm::StringMap<int> &groups, uint64_t frameOffset,
                  int &collectiveCount, const dfg::DimBindings *bounds,
                  llvm::ArrayRef<BoundSymbol> symbols, bool hasStages,
                  Target target)
      : fn_(fn), weights_(weights), groups_(groups), frameOffset_(frameOffset),
        collectiveCount_(collectiveCount), bounds_(bounds), symbols_(symbols),
        hasStages_(hasStages), target_(target), table_(fn.getContext()),
        shapes_(table_) {}

  /// Plans the frame; returns its peak.
  uint64_t plan();
  mlir::LogicalResult emit(llvm::raw_ostream &os);
  /// @main's inputs (argument numbers) that are the past key or value of an
  /// attention whose cache `meshc generate` may hold in place.
  llvm::ArrayRef<unsigned> inPlaceInputs() const { return inPlaceInputs_; }
  /// The fused elementwise kernels `emit` wrote, each a function of its own
  /// (defined before the functions that call them: see emitRank).
  llvm::StringRef fusedKernels() const { return fusedKernels_; }

private:
  /// The C++ name of `v`, declaring it where it is a weight first read.
  /// `product`: the operand a product multiplies by (a linear's weight, a
  /// matmul's right operand, an embedding's table), which may be a bf16
  /// weight (WeightShards::productReadsBf16).
  std::string operand(mlir::Value v, llvm::raw_ostream &os,
                      bool product = false);
  /// The @main argument `v` is (directly, or through the one call of this
  /// stage function), if any.
  std::optional<unsigned> mainInput(mlir::Value v);
  /// Whether `v` is read by nothing but @main's return (through the one call
  /// of this stage function).
  bool onlyReturned(mlir::Value v);
  std::string optionalOperand(mlir::Value v, llvm::raw_ostream &os) {
    return v ? "&" + operand(v, os) : "nullptr";
  }
  std::string declare(mlir::Value v, llvm::raw_ostream &os);

  /// Dispatches `op` to its emission function (RankEmitter.cpp).
  mlir::LogicalResult emitOp(mlir::Operation *op, llvm::raw_ostream &os);
  /// Whether the target can hold `op`'s results (static shapes, or symbolic
  /// ones with bounds; element types it computes in).
  mlir::LogicalResult checkResults(mlir::Operation *op);
  mlir::LogicalResult emitReturn(mlir::func::ReturnOp ret,
                                 llvm::raw_ostream &os);
  mlir::LogicalResult emitCall(mlir::func::CallOp call, llvm::raw_ostream &os);

  // Elementwise (EmitElementwise.cpp).
  mlir::LogicalResult emitUnary(mlir::Operation *op, llvm::StringRef kind,
                                llvm::raw_ostream &os);
  mlir::LogicalResult emitBinary(mlir::Operation *op, llvm::StringRef kind,
                                 llvm::raw_ostream &os);
  mlir::LogicalResult emitWhere(dfg::WhereOp w, llvm::raw_ostream &os);
  mlir::LogicalResult emitCast(dfg::CastOp c, llvm::raw_ostream &os);
  mlir::LogicalResult emitFused(dfg::FusedElementwiseOp op,
                                llvm::raw_ostream &os);

  // Layout (EmitLayout.cpp).
  /// reshape, squeeze, unsqueeze, symbolic_reshape: a view of the operand.
  mlir::LogicalResult emitView(mlir::Operation *op, llvm::raw_ostream &os);
  mlir::LogicalResult emitTranspose(dfg::TransposeOp t, llvm::raw_ostream &os);
  mlir::LogicalResult emitConcat(dfg::ConcatOp c, llvm::raw_ostream &os);
  mlir::LogicalResult emitGather(dfg::GatherOp g, llvm::raw_ostream &os);
  mlir::LogicalResult emitGatherND(dfg::GatherNDOp g, llvm::raw_ostream &os);
  mlir::LogicalResult emitSlice(dfg::SliceOp s, llvm::raw_ostream &os);
  mlir::LogicalResult emitSymbolicSlice(dfg::SymbolicSliceOp s,
                                        llvm::raw_ostream &os);
  /// A slice whose starts are computed when the program runs: `first[k]` is
  /// the C++ start of axis k, clamped against the input's size there.
  mlir::LogicalResult emitRuntimeSlice(mlir::Value input, mlir::Value result,
                                       llvm::ArrayRef<std::string> first,
                                       llvm::ArrayRef<int64_t> axes,
                                       llvm::ArrayRef<int64_t> axisSteps,
                                       llvm::raw_ostream &os);
  mlir::LogicalResult emitSymbolicExpand(dfg::SymbolicExpandOp e,
                                         llvm::raw_ostream &os);
  mlir::LogicalResult emitRange(dfg::RangeOp r, llvm::raw_ostream &os);
  mlir::LogicalResult emitSizes(dfg::SizesOp z, llvm::raw_ostream &os);
  mlir::LogicalResult emitSplit(dfg::SplitOp s, llvm::raw_ostream &os);
  mlir::LogicalResult emitExpand(dfg::ExpandOp e, llvm::raw_ostream &os);

  // Transformer (EmitTransformer.cpp).
  /// reduce_mean, reduce_sum, reduce_max.
  template <typename ReduceOp>
  mlir::LogicalResult emitReduce(ReduceOp r, llvm::raw_ostream &os);
  mlir::LogicalResult emitTrilu(dfg::TriluOp t, llvm::raw_ostream &os);
  mlir::LogicalResult emitCumSum(dfg::CumSumOp c, llvm::raw_ostream &os);
  mlir::LogicalResult emitTopK(dfg::TopKOp t, llvm::raw_ostream &os);
  mlir::LogicalResult emitScatterND(dfg::ScatterNDOp s, llvm::raw_ostream &os);
  mlir::LogicalResult emitEmbedding(dfg::EmbeddingOp e, llvm::raw_ostream &os);
  mlir::LogicalResult emitMatMul(dfg::MatMulOp m, llvm::raw_ostream &os);
  mlir::LogicalResult emitLinear(dfg::LinearOp l, llvm::raw_ostream &os);

  /// A dfg.linear (cpu target) whose result feeds nothing but an epilogue
  /// the kernel applies in the pass that adds the bias: an activation, then
  /// an add or a multiply by `other`, a value of the result's shape. The
  /// linear is emitted at the place of the epilogue's last op (`final`),
  /// which the liveness plan keeps the linear's operands alive to.
  struct LinearEpilogue {
    dfg::LinearOp linear;
    std::string unary;  // a k::UnaryOp enumerator, or empty
    std::string binary; // a k::BinaryOp enumerator (with `other`), or empty
    mlir::Value other;
  };
  /// Fills epilogues_ and absorbed_ (EmitTransformer.cpp).
  void findLinearEpilogues();
  mlir::LogicalResult emitLinearEpilogue(const LinearEpilogue &e,
                                         mlir::Operation *final,
                                         llvm::raw_ostream &os);
  /// The k::LinearOptions argument of a cpu linear.
  std::string linearOptions(dfg::LinearOp l, const LinearEpilogue *e,
                            llvm::raw_ostream &os);
  mlir::LogicalResult emitAttention(dfg::AttentionOp a, llvm::raw_ostream &os);
  mlir::LogicalResult emitRotary(dfg::RotaryOp r, llvm::raw_ostream &os);
  /// layer_norm, rms_norm.
  template <typename NormOp>
  mlir::LogicalResult emitNorm(NormOp n, llvm::raw_ostream &os);
  mlir::LogicalResult emitSoftmax(dfg::SoftmaxOp s, llvm::raw_ostream &os);

  // Communication (EmitCommunication.cpp).
  mlir::LogicalResult emitCollective(mlir::Operation *op,
                                     llvm::raw_ostream &os);
  mlir::LogicalResult emitWait(dfg::WaitOp wait, llvm::raw_ostream &os);

  /// Symbolic dimensions (executables for a range of sizes): `e` as a C++
  /// expression over the symbols bound at the top of run().
  std::string dimExpr(mlir::AffineExpr e);
  /// The shape of `v`: its static dimensions, or expressions of symbols.
  std::string shapeOf(mlir::Value v);
  /// The bytes `v` takes at the compiled bounds (its size when static);
  /// std::nullopt when a dimension's size there cannot be derived.
  std::optional<uint64_t> boundBytes(mlir::Value v);
  /// `map`'s results (symbols named by `names`) as C++ expressions.
  llvm::SmallVector<std::string> mapExprs(mlir::AffineMap map,
                                          mlir::ArrayAttr names);

  mlir::func::FuncOp fn_;
  WeightShards &weights_;
  const llvm::StringMap<int> &groups_;
  uint64_t frameOffset_;
  int &collectiveCount_;
  llvm::DenseMap<mlir::Value, uint64_t> offsets_;  // buffers, frame-relative
  llvm::DenseMap<mlir::Value, uint64_t> capacity_; // their planned bytes
  llvm::DenseMap<mlir::Value, std::string> names_;
  llvm::DenseMap<mlir::Value, std::string> bf16Names_; // weights read as bf16
  /// The ticket variable of each dfg.wait's collective, once it is issued.
  llvm::DenseMap<mlir::Operation *, std::string> tickets_;
  /// Sizes of the symbolic dimensions at the compiled bounds; null when the
  /// program has static shapes.
  const dfg::DimBindings *bounds_;
  /// The symbolic dimensions @main binds (none when shapes are static).
  llvm::ArrayRef<BoundSymbol> symbols_;
  bool hasStages_;
  Target target_;
  std::vector<unsigned> inPlaceInputs_;
  /// Definitions of the fused kernels (emitFused), and how many.
  std::string fusedKernels_;
  int fusedCount_ = 0;
  /// Fused linears, by their epilogue's last op; and the ops emitted there
  /// instead of at their own place (the linears and their activations).
  llvm::DenseMap<mlir::Operation *, LinearEpilogue> epilogues_;
  llvm::DenseSet<mlir::Operation *> absorbed_;
  /// "the cpu target", for messages.
  std::string theTarget() const {
    return "the " + targetName(target_).str() + " target";
  }
  dfg::DimTable table_;
  dfg::SymbolicShapes shapes_;
  int next_ = 0;
};

// The reductions and norms are instantiated in EmitTransformer.cpp.
extern template mlir::LogicalResult
FunctionEmitter::emitReduce(dfg::ReduceMeanOp, llvm::raw_ostream &);
extern template mlir::LogicalResult
FunctionEmitter::emitReduce(dfg::ReduceSumOp, llvm::raw_ostream &);
extern template mlir::LogicalResult
FunctionEmitter::emitReduce(dfg::ReduceMaxOp, llvm::raw_ostream &);
extern template mlir::LogicalResult
FunctionEmitter::emitNorm(dfg::LayerNormOp, llvm::raw_ostream &);
extern template mlir::LogicalResult
FunctionEmitter::emitNorm(dfg::RmsNormOp, llvm::raw_ostream &);

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_RANKEMITTERIMPL_H
