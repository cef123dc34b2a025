//===- Legalization.h - ONNX node -> dfg legalisation table -----*- C++ -*-===//
//
// Part of meshc. A legalisation turns one ONNX node into dfg ops. Entries are
// keyed by (domain, op type, since-version): a node is legalised by the entry
// with the highest since-version not above the model's opset for its domain,
// mirroring how ONNX versions its operator schemas. Each family of ops fills
// the table from its own file (populate*Legalizations).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_IMPORT_LEGALIZATION_H
#define MESHC_COMPILER_IMPORT_LEGALIZATION_H

#include "compiler/import/OnnxModel.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace onnx {
class NodeProto;
class GraphProto;
class AttributeProto;
} // namespace onnx

namespace meshc::onnximport {

class Importer;

/// ONNX's 4-bit integer types (ONNX 1.16), which Debian's compiled schema
/// (1.12) does not name.
constexpr int kOnnxUint4 = 21, kOnnxInt4 = 22;

/// An initializer's bytes in a file as ONNX stores them, for the ops that
/// read a weight-only quantized matrix (MatMulNBits, GatherBlockQuantized):
/// its packed integers are no dfg tensor, and its scales are referred to.
/// A Reshape of packed integers is the same bytes under other dimensions.
struct RawInitializer {
  std::string name, file;
  int64_t offset = 0, length = 0;
  /// onnx::TensorProto::DataType.
  int onnxType = 0;
  llvm::SmallVector<int64_t> dims;
  /// 8-bit integers held as values in the model (int32_data, as onnx.helper
  /// writes a quantized model's zero points; no file), here; and the values
  /// of a few in raw data (up to 64, beside their file: a static
  /// quantization's zero points).
  llvm::SmallVector<int64_t> values;
  bool inFile() const { return !file.empty(); }
};

/// What a legalisation sees of one node: its attributes, its inputs as dfg
/// values, and the means to report an error that names the node.
class NodeContext {
public:
  NodeContext(Importer &importer, const onnx::NodeProto &node,
              int64_t opsetVersion, mlir::OpBuilder &builder,
              mlir::Location loc, llvm::SmallVector<mlir::Value> inputs);

  const onnx::NodeProto &node() const { return node_; }
  int64_t opsetVersion() const { return opsetVersion_; }
  /// The opset the model imports of the default ONNX domain, if any.
  std::optional<int64_t> defaultOpsetVersion() const;
  mlir::OpBuilder &builder() { return builder_; }
  mlir::Location loc() const { return loc_; }

  /// The number of outputs the node declares.
  unsigned numOutputs() const;
  /// The nodes of `graph` (an If's branch) imported here, reading this
  /// graph's values by name; the values of its outputs.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  inlineGraph(const onnx::GraphProto &graph);

  /// Inputs as dfg values; an omitted optional input ("") is a null Value.
  unsigned numInputs() const { return inputs_.size(); }
  mlir::Value input(unsigned i) const {
    return i < inputs_.size() ? inputs_[i] : mlir::Value();
  }
  /// Input `i` as an initializer's bytes (RawInitializer), or null: packed
  /// integers (whose input(i) is null) and float initializers in raw data.
  const RawInitializer *rawInput(unsigned i) const;
  mlir::RankedTensorType inputType(unsigned i) const;
  /// Fails with a message unless inputs [0, n) are present.
  mlir::LogicalResult requireInputs(unsigned n);
  /// For variadic ops: at least one input and none of them omitted.
  mlir::LogicalResult requireAllInputs();

  /// Reports `msg` at the node ("node 'name' (OpType, #index)"); returns
  /// failure so a legalisation can `return ctx.error(...)`.
  mlir::LogicalResult error(const llvm::Twine &msg);
  bool hadError() const { return hadError_; }
  /// Reports that inputs 0 and 1 have different element types (ONNX's type
  /// constraint T for both), printing both types.
  mlir::LogicalResult mismatchedTypes();

  /// Attributes, with ONNX's defaults supplied by the caller. An attribute
  /// of the wrong type is reported (the node then fails) and the default is
  /// returned.
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt);
  float attrFloat(llvm::StringRef name, float dflt);
  std::optional<llvm::SmallVector<int64_t>> attrInts(llvm::StringRef name);
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt = "");

  /// The values of input `i`, which must be a constant integer or bool tensor
  /// (an initializer or a Constant node); reports an error otherwise.
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  constantInts(unsigned i, llvm::StringRef what);

  /// The folder the model's weight files are relative to.
  llvm::StringRef modelFolder() const;
  /// Where this Constant node's `value` of `bytes` bytes lies in the model
  /// file (OnnxModel::constantData), if it is stored in place.
  std::optional<DataRef> constantData(int64_t bytes) const;
  /// Where `tensor`'s external data (data_location EXTERNAL: an exporter
  /// saving a model over 2 GB moves Constant nodes' values out too) lies;
  /// an error at this node otherwise.
  mlir::FailureOr<DataRef> externalData(const onnx::TensorProto &tensor,
                                        int64_t bytes);

  /// Symbolic dimensions (the graph inputs' dim_params): the import's table
  /// of their names.
  dfg::DimTable &dimTable();
  /// Input `i` holds sizes computed from symbolic dimensions (a dfg.sizes).
  bool isSymbolic(unsigned i) const;
  /// The elements of input `i` as symbolic expressions: a dfg.sizes, or a
  /// constant integer tensor (each value a constant expression); reports an
  /// error otherwise.
  mlir::FailureOr<llvm::SmallVector<mlir::AffineExpr>>
  symbolicInts(unsigned i, llvm::StringRef what);
  /// The dimensions of input `i` as symbolic expressions (null where no
  /// shape rule derives one).
  llvm::SmallVector<mlir::AffineExpr> inputDims(unsigned i);
  /// The same for any value of the function being built.
  llvm::SmallVector<mlir::AffineExpr> dimsOf(mlir::Value v);
  /// The elements of the small integer vector `v` as expressions over the
  /// named dimensions (a dfg.sizes, a constant); std::nullopt otherwise.
  std::optional<llvm::SmallVector<mlir::AffineExpr>> valuesOf(mlir::Value v);
  /// Dimension `dim` of `v` must be `size` (the op's semantics fix it: the
  /// head size of GroupQueryAttention's past). Where that dimension is a
  /// graph input's symbolic name (onnxruntime-genai's `kv_cache_dim`), the
  /// import is redone with the name sized so (importOnnxModel), and true is
  /// returned; false for a static or derived dimension.
  bool pinDim(mlir::Value v, unsigned dim, int64_t size);
  /// Whether this import may assume what holds where the export was traced
  /// (the second attempt, after the exact import failed: importOnnxModel).
  bool assumesTraced() const;
  /// Records that symbolic expression `e` is negative at every size the
  /// executables take (the module's `dfg.dim_negative`, which they check
  /// against their inputs), for what this node computes to hold.
  void assumeNegative(mlir::AffineExpr e);
  /// Records that symbolic expressions `a` and `b` are equal at every size
  /// the executables take, where they are not written alike (the module's
  /// `dfg.dim_same`, which executables and the reference evaluator check
  /// against their inputs, refusing other sizes by name); `what` says what
  /// they count ("the elements of its input and of its shape").
  void assumeSame(mlir::AffineExpr a, mlir::AffineExpr b, llvm::StringRef what);
  /// Dimension `dim` of `v` must be at least `least` (the op's semantics
  /// need it: a sliding-window cache holds its window). A static size is
  /// checked now; a graph input's symbolic name, or an expression that grows
  /// with one (noteDimAtLeast), is recorded in the module's
  /// `dfg.dim_minimums`, which executables check against their inputs.
  /// Fails with an error naming the dimension otherwise.
  mlir::LogicalResult requireDimAtLeast(mlir::Value v, unsigned dim,
                                        int64_t least, llvm::StringRef what);
  /// The same where dimension `dim` of `v` grows with one named dimension
  /// (a convolution's output length, `(S - 10) / 5 + 1`): records the least
  /// size of that name which makes it at least `least`; false (nothing
  /// recorded) for any other dimension.
  bool noteDimAtLeast(mlir::Value v, unsigned dim, int64_t least);
  /// Gives `v` (a new op's single result) the static dimensions the symbolic
  /// shape rules find for it, and returns it.
  mlir::Value refineType(mlir::Value v);

  /// The value of a tensor attribute (a Constant-like `value`), reported at
  /// this node when meshc cannot hold it.
  mlir::FailureOr<mlir::DenseElementsAttr>
  tensorAttr(const onnx::AttributeProto &attr);

  /// A scalar dfg.constant of `elementType`.
  mlir::Value scalar(double value, mlir::Type elementType);
  /// 0 .. n-1 as an i64 tensor of `shape`, n along its one -1 entry (a
  /// dfg.range, so `n` may be symbolic).
  mlir::FailureOr<mlir::Value> iota(mlir::AffineExpr n,
                                    llvm::ArrayRef<int64_t> shape);
  /// The [batch, seq] i64 constant whose rows are first .. first + seq - 1:
  /// position ids where a node gives only an offset. Refused (naming `what`)
  /// past 2^24 entries, so that a large static shape is not allocated.
  mlir::FailureOr<mlir::Value> positionTable(int64_t batch, int64_t seq,
                                             int64_t first,
                                             llvm::StringRef what);

  /// Creates `OpTy` whose result has `shape` (computed by the dfg shape rule
  /// the op's verifier uses), or reports the rule's error at this node.
  template <typename OpTy, typename... Args>
  mlir::FailureOr<mlir::Value> create(llvm::Expected<dfg::Shape> shape,
                                      mlir::Type elementType, Args &&...args) {
    if (!shape)
      return error(llvm::toString(shape.takeError()));
    auto type = mlir::RankedTensorType::get(*shape, elementType);
    return OpTy::create(builder_, loc_, type, std::forward<Args>(args)...)
        .getResult();
  }

  /// [a, b, c, d] -> [a, c, b, d]: between [batch, seq, heads, dim] and
  /// [batch, heads, seq, dim].
  mlir::FailureOr<mlir::Value> swapDims12(mlir::Value v);

  /// [batch, seq, heads * d] -> [batch, heads, seq, d] (reshape, then
  /// swapDims12); `attr` names the heads attribute in the error for heads <= 0.
  mlir::FailureOr<mlir::Value> splitHeads(mlir::Value v, int64_t heads,
                                          llvm::StringRef attr);
  /// The inverse: [batch, heads, seq, d] -> [batch, seq, heads * d].
  mlir::FailureOr<mlir::Value> mergeHeads(mlir::Value v);

  /// create<OpTy>(...) bound as the node's single output.
  template <typename OpTy, typename... Args>
  mlir::LogicalResult emit(llvm::Expected<dfg::Shape> shape,
                           mlir::Type elementType, Args &&...args) {
    mlir::FailureOr<mlir::Value> result = create<OpTy>(
        std::move(shape), elementType, std::forward<Args>(args)...);
    return mlir::failed(result) ? mlir::failure() : setResults(*result);
  }

  /// Binds the node's outputs, in order; a null Value leaves that output
  /// unproduced. The importer rejects a node whose unproduced outputs are
  /// read by the graph.
  mlir::LogicalResult setResults(llvm::ArrayRef<mlir::Value> values);
  llvm::ArrayRef<mlir::Value> results() const { return results_; }

  /// Output 0 holds the coordinates of every element of a tensor whose
  /// nonzero ones only the data decides (NonZero), one column each; `mask`
  /// (i1, one per column) says which columns NonZero selects. The importer
  /// follows the columns to the scatter that adds them up (RunTimeSplits).
  void setSelection(mlir::Value mask) { selection_ = mask; }
  mlir::Value selection() const { return selection_; }

  /// ONNX sequences, held at compile time as their tensors: those of the
  /// sequence input `i` names (reports an error if it names none), and
  /// binding output 0 to a sequence of `values`.
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> sequenceInput(unsigned i);
  mlir::LogicalResult setSequenceResult(llvm::ArrayRef<mlir::Value> values);

private:
  Importer &importer_;
  const onnx::NodeProto &node_;
  int64_t opsetVersion_;
  bool hadError_ = false;
  mlir::OpBuilder &builder_;
  mlir::Location loc_;
  llvm::SmallVector<mlir::Value> inputs_;
  llvm::SmallVector<mlir::Value> results_;
  mlir::Value selection_;
};

/// While it lives, a fatal error (an op built through a type-inferring
/// `create` whose inference fails: LLVM's "Failed to infer result type(s)",
/// which aborts) ends meshc with status 1 and one line naming `where` (the
/// node) and the last error reported meanwhile (the inference's own
/// message), instead of an abort. The importer holds one around each node's
/// legalisation; legalisations still check before they build
/// (NodeContext::create), and this guard is the net for what they miss.
class FatalErrorAtNode {
public:
  FatalErrorAtNode(mlir::MLIRContext &context, std::string where);
  ~FatalErrorAtNode();
  FatalErrorAtNode(const FatalErrorAtNode &) = delete;
  FatalErrorAtNode &operator=(const FatalErrorAtNode &) = delete;

private:
  static void onFatal(void *self, const char *reason, bool genCrashDiag);

  std::string where_, lastError_;
  mlir::ScopedDiagnosticHandler record_;
};

/// The shape and element type of a ranked tensor value.
inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape();
}
inline mlir::Type elementOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType();
}

/// An elementwise binary `OpTy` of `l` and `r` on their broadcast shape, with
/// `element` as the result's element type (a comparison's i1), or the shape
/// rule's error at the node.
template <typename OpTy>
mlir::FailureOr<mlir::Value> binary(NodeContext &ctx, mlir::Value l,
                                    mlir::Value r, mlir::Type element) {
  return ctx.create<OpTy>(dfg::broadcastShapes(shapeOf(l), shapeOf(r)), element,
                          l, r);
}

using LegalizeFn = mlir::LogicalResult (*)(NodeContext &);

/// (domain, op type, since-version) -> legalisation.
class LegalizationTable {
public:
  /// The default table: every family meshc imports.
  static const LegalizationTable &get();

  void add(llvm::StringRef domain, llvm::StringRef opType, int sinceVersion,
           LegalizeFn fn);

  /// Every (domain, op type, since-version) in the table, sorted.
  std::vector<std::tuple<std::string, std::string, int>> entries() const;

  /// The entry for `opType` at opset `version`, or nullptr; `lowest` is set
  /// to the lowest since-version the op has (0 if meshc does not know it).
  LegalizeFn lookup(llvm::StringRef domain, llvm::StringRef opType,
                    int64_t version, int *lowest = nullptr) const;

private:
  struct Entry {
    int sinceVersion;
    LegalizeFn fn;
  };
  /// "domain/OpType" -> entries sorted by since-version.
  llvm::StringMap<std::vector<Entry>> entries_;
};

/// `x` sliced along `axis` from `start` to `end` by `step` (dfg.slice).
mlir::FailureOr<mlir::Value> sliceAxis(NodeContext &ctx, mlir::Value x,
                                       int64_t axis, int64_t start, int64_t end,
                                       int64_t step = 1);

/// `x` with `before` and `after` copies of the scalar `fill` (rank 0, or
/// one element) concatenated along `axis` (ONNX Pad in mode constant),
/// symbolic dimensions included.
mlir::FailureOr<mlir::Value> padAxis(NodeContext &ctx, mlir::Value x,
                                     int64_t axis, int64_t before,
                                     int64_t after, mlir::Value fill);
/// The same with symbolic amounts (each at least 0 at every size: a pad up
/// to a multiple of a chunk, `(c - S mod c) mod c`).
mlir::FailureOr<mlir::Value> padAxis(NodeContext &ctx, mlir::Value x,
                                     int64_t axis, mlir::AffineExpr before,
                                     mlir::AffineExpr after, mlir::Value fill);

/// Rotary position embedding of `x` ([batch, heads, seq, head_dim], or 3-D
/// [batch, seq, heads * head_dim] with `numHeads`) by the [positions,
/// rotary_dim / 2] caches at `positions` ([batch, seq]); rotaryDim 0 means the
/// whole head. The result has the input's layout. Shared by the rotary
/// operators and attention operators that rotate q and k themselves.
mlir::FailureOr<mlir::Value> rotate(NodeContext &ctx, mlir::Value x,
                                    mlir::Value cos, mlir::Value sin,
                                    mlir::Value positions, int64_t numHeads,
                                    int64_t rotaryDim, bool interleaved);

/// `x` cut along its last axis into consecutive pieces of `sizes` (packed
/// q | k | v projections and biases).
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
splitLast(NodeContext &ctx, mlir::Value x, llvm::ArrayRef<int64_t> sizes);

/// `axis` (negative counts from the end) as an index into `rank`
/// dimensions; else the node's error "<name> axis A is out of range for
/// <what> of rank R" (`what`: "an input", "a result").
mlir::FailureOr<int64_t> normalizedAxis(NodeContext &ctx, llvm::StringRef name,
                                        int64_t axis, int64_t rank,
                                        llvm::StringRef what = "an input");

/// The attention scale: the node's `scale` attribute, else 1/sqrt(head_dim)
/// of `q` ([batch, heads, seq, head_dim]).
mlir::FailureOr<double> attentionScale(NodeContext &ctx, mlir::Value q);

/// Whether `e` is at least 0 at every size (dfg::boundsOf): `(-S) mod 4`,
/// and the round-up `((-S) floordiv 4) * -4` into which
/// `S + (4 - S mod 4) mod 4` simplifies.
bool isNonNegative(mlir::AffineExpr e);

/// Symbolic folding of the exporters' shape arithmetic: if `op` computes on
/// integer vectors of which at least one is a dfg.sizes and the others
/// small integer constants or initializers under `weightsDir` (Gather, Slice,
/// Concat, Unsqueeze, Squeeze, Reshape, integer Cast, Add, Sub, Mul, Div by a
/// positive constant (of sizes at least 0), Equal, Where, Min and Max when
/// decidable), returns one dfg.sizes or dfg.constant holding its result,
/// created before `op`; otherwise a null Value. With `maximums`, a Min or Max
/// of two sizes whose order flips at some size of one dimension (MPT's max(0,
/// max_seq_len - sequence_length)) takes the order that holds for small sizes,
/// and `maximums` records the largest size of that dimension for which it holds
/// (said in a note); without, it does not fold. `minimums` holds least sizes
/// of named dimensions (the model's ops need them: a convolution's kernel
/// spans that many positions), which the bounds of the arithmetic may
/// assume: wav2vec2's `(S / 5 - 1) / 2` divides a dividend of at least 0.
/// With `maximums` too, a Div whose dividend of one dimension is at least 0
/// only from some size of it on (SEW-D's `(S / 10 - 3) / 2 - 1`, halved
/// again) is a floor division from that size, which `minimums` then
/// records (said in a note).
mlir::Value foldSymbolic(mlir::Operation *op, dfg::DimTable &table,
                         llvm::StringRef weightsDir,
                         llvm::StringMap<int64_t> *maximums,
                         llvm::StringMap<int64_t> *minimums = nullptr);

void populateElementwiseLegalizations(LegalizationTable &table);
void populateContractionLegalizations(LegalizationTable &table);
void populateLayoutLegalizations(LegalizationTable &table);
void populateStructureLegalizations(LegalizationTable &table);
void populateExpertLegalizations(LegalizationTable &table);
void populateQuantizedLegalizations(LegalizationTable &table);
/// Gather of rows of an initializer of 8-bit integers (onnxruntime's
/// quantize_dynamic quantizes an embedding table so, a DequantizeLinear
/// after the Gather): the rows' integers, as i32.
mlir::LogicalResult legalizePackedGather(NodeContext &ctx);
void populateNormalizationLegalizations(LegalizationTable &table);
void populateRotaryLegalizations(LegalizationTable &table);
void populateAttentionLegalizations(LegalizationTable &table);
void populatePackedAttentionLegalizations(LegalizationTable &table);
void populateShapeLegalizations(LegalizationTable &table);

} // namespace meshc::onnximport

#endif // MESHC_COMPILER_IMPORT_LEGALIZATION_H
