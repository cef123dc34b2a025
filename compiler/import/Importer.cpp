//===- Importer.cpp - ONNX model -> dfg IR --------------------------------===//
//
// Part of meshc.
//
// Algorithm:
//   1. Parse the model (OnnxModel) and check the opset of the default domain.
//   2. Graph inputs that are not initializers become function arguments; a
//      dim_param given a size (--dim) becomes that static dimension, any
//      other becomes a dynamic one; the names are kept in the argument's
//      `dfg.dim_names` attribute.
//   3. Initializers become dfg.weight references (contiguous little-endian
//      data: raw_data, packed float_data, external data) or, when stored as
//      varints or holding a single element (an epsilon, a scale), small
//      dfg.constant literals.
//   4. Nodes are ordered topologically (ONNX allows any order); an input that
//      nothing produces, or a cycle, is an error naming the node.
//   5. Each node is legalised by the LegalizationTable entry for its domain,
//      op type and opset version.
//   6. Graph outputs are returned; the module is verified.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Importer.h"

#include "compiler/import/Legalization.h"
#include "compiler/import/OnnxModel.h"
#include "compiler/import/OnnxTensors.h"
#include "compiler/import/RunTimeSplits.h"
#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/Eval/Folding.h"
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"

#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <limits>
#include <queue>

using namespace mlir;
using namespace llvm;

namespace meshc::onnximport {

/// Holds the state of one import; NodeContext calls back into it.
class Importer {
public:
  /// With `assumeOrders`, a Min or Max of sizes whose order flips at some
  /// size takes the order for small sizes (foldSymbolic's maximums).
  Importer(MLIRContext &context, const OnnxModel &model,
           const DimSizes &dimSizes, bool assumeOrders = false,
           const DimRenames &renames = {}, const DimSizes &minimums = {},
           const InputValues &inputValues = {})
      : context_(context), model_(model), dimSizes_(dimSizes),
        inputValues_(inputValues),
        assumeOrders_(assumeOrders), renames_(renames), dimTable_(&context),
        builder_(&context),
        fileLoc_(FileLineColLoc::get(&context, model.path(), 0, 0)),
        minimums_(minimums) {}

  OwningOpRef<ModuleOp> run();
  StringRef modelFolder() const { return model_.folder(); }
  const OnnxModel &model() const { return model_; }
  std::optional<int64_t> defaultOpsetVersion() const {
    return model_.opsetVersion("");
  }
  dfg::DimTable &dimTable() { return dimTable_; }
  /// Symbolic input dimensions that the graph fixes (NodeContext::pinDim).
  DimSizes &pinned() { return pinned_; }
  /// Input dimension names that are expressions of other names, which the
  /// graph contradicts: name -> the expression the graph gives it.
  const DimRenames &contradicted() const { return contradicted_; }
  /// Least sizes of symbolic input dimensions
  /// (NodeContext::requireDimAtLeast).
  DimSizes &minimums() { return minimums_; }
  bool assumesTraced() const { return assumeOrders_; }
  /// Expressions assumed negative (NodeContext::assumeNegative), each with
  /// the node that needs it.
  SmallVector<std::pair<AffineExpr, std::string>> &negatives() {
    return negatives_;
  }
  /// Pairs of expressions assumed equal (NodeContext::assumeSame).
  SmallVector<dfg::SizeAssumption> &sames() { return sames_; }
  dfg::SymbolicShapes &shapes() { return shapes_; }
  /// ONNX sequence values (SplitToSequence's, SequenceConstruct's) by name:
  /// their tensors, which sequence ops read at compile time.
  StringMap<SmallVector<Value>> &sequences() { return sequences_; }

  /// The integer values of a constant dfg value (dfg.constant, or a small
  /// dfg.weight whose bytes are read from its file).
  FailureOr<SmallVector<int64_t>> constantInts(Value value, Location loc,
                                               StringRef what);
  /// An initializer (or a Reshape of packed integers) as bytes, or null.
  const RawInitializer *rawInitializer(StringRef name) const {
    auto it = raw_.find(name);
    return it == raw_.end() ? nullptr : &it->second;
  }

private:
  LogicalResult error(const Twine &msg) { return emitError(fileLoc_) << msg; }
  Location nodeLoc(const onnx::NodeProto &node, int index);
  LogicalResult checkOpsets();
  FailureOr<RankedTensorType> valueType(const onnx::ValueInfoProto &info,
                                        SmallVectorImpl<Attribute> *dimNames);
  LogicalResult checkDimSizesUsed(const llvm::StringSet<> &symbolic);
  FailureOr<DenseElementsAttr> inputValueAttr(const onnx::ValueInfoProto &input,
                                              StringRef text);
  LogicalResult importInitializers();
  LogicalResult expandFunctions();
  LogicalResult expandNode(const onnx::NodeProto &node, int depth,
                           Location callLoc);
  FailureOr<SmallVector<int>> topologicalOrder();
  LogicalResult importNode(int index);
  LogicalResult importNode(const onnx::NodeProto &node, int index);

public:
  /// The nodes of `graph` (an If's branch) imported in place, reading the
  /// enclosing graph's values by name; its outputs' values. A branch with
  /// inputs or initializers of its own is refused, naming the If.
  FailureOr<SmallVector<Value>> inlineGraph(const onnx::GraphProto &graph,
                                            Location at);

private:
  LogicalResult foldConstants(ArrayRef<Operation *> ops,
                              SmallVectorImpl<Value> &results);
  /// Where elementwise `op` broadcasts an input dimension named by an
  /// expression (a claim) with a different expression of names alone, or a
  /// slice takes such a dimension from its start to one, the graph says
  /// what that dimension is: recorded in contradicted_ for the import to be
  /// redone with the name read so (still a derived dimension, checked
  /// against the other inputs at run time). Optimum's older exports name
  /// the attention mask's keys `past_sequence_length + 1`, true only for
  /// one new token; the graph slices the mask to, and adds it to scores
  /// over, `past_sequence_length + sequence_length` keys.
  void checkClaims(Operation *op);
  /// Records, for the executables to check, each symbolic dimension that
  /// the elementwise op `op` broadcasts against a static size other than 1:
  /// its result takes the static size, so a run where the expression has
  /// another value would read the operand past its end (ViT's patches plus
  /// the class token added to its position embeddings of a fixed count,
  /// with the image's height and width symbolic).
  void noteBroadcastSizes(Operation *op, const onnx::NodeProto &node);
  /// The dimensions of `op`'s operands, and (`rank`) the largest rank, to
  /// align them on the right as broadcasting does.
  SmallVector<SmallVector<AffineExpr>> operandDims(Operation *op,
                                                   size_t &rank);

  MLIRContext &context_;
  /// The graph node being imported (an If's branch is numbered as it).
  int currentIndex_ = 0;
  const OnnxModel &model_;
  const DimSizes &dimSizes_;
  InputValues inputValues_; // a copy: callers may pass a temporary
  bool assumeOrders_;
  /// Input dimension names read as other expressions (DimRenames).
  DimRenames renames_;
  /// An input dimension named by an expression of other names (Optimum's
  /// `past_sequence_length + 1`): the expression -> the name as written.
  llvm::DenseMap<AffineExpr, std::string> claims_;
  DimRenames contradicted_;
  dfg::DimTable dimTable_;
  /// The symbolic shapes of the values imported so far (remembered across
  /// nodes; foldConstants forgets the values it erases).
  dfg::SymbolicShapes shapes_{dimTable_};
  OpBuilder builder_;
  Location fileLoc_;
  /// ONNX value name -> dfg value.
  StringMap<Value> values_;
  /// ONNX sequence name -> its tensors.
  StringMap<SmallVector<Value>> sequences_;
  /// Initializers in raw data by name, packed UINT8 integers among them
  /// (which have no dfg value), and Reshapes of those.
  StringMap<RawInitializer> raw_;
  LogicalResult importPackedReader(const onnx::NodeProto &node, Location loc,
                                   bool &handled);
  /// Names some node or graph output reads.
  llvm::StringSet<> consumed_;
  /// The graph's nodes with model-local function calls inlined.
  std::vector<onnx::NodeProto> nodes_;
  /// Model-local functions by "domain/name".
  StringMap<const onnx::FunctionProto *> functions_;
  DimSizes pinned_;
  DimSizes minimums_;
  SmallVector<std::pair<AffineExpr, std::string>> negatives_;
  SmallVector<dfg::SizeAssumption> sames_;
  /// Symbolic expressions the ops need at a static size, each with that
  /// size and the node (noteBroadcastSizes); one entry per expression.
  llvm::MapVector<AffineExpr, std::pair<int64_t, std::string>> equalities_;
  /// Splits whose sizes the graph computes at run time, and their parts.
  RunTimeSplits runTimeSplits_;
  /// Largest sizes of symbolic input dimensions for which the shape
  /// arithmetic folded as it did (foldSymbolic's Min and Max).
  DimSizes maximums_;
};

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(Importer &importer, const onnx::NodeProto &node,
                         int64_t opsetVersion, OpBuilder &builder, Location loc,
                         SmallVector<Value> inputs)
    : importer_(importer), node_(node), opsetVersion_(opsetVersion),
      builder_(builder), loc_(loc), inputs_(std::move(inputs)) {}

unsigned NodeContext::numOutputs() const { return node_.output_size(); }

const RawInitializer *NodeContext::rawInput(unsigned i) const {
  if (i >= static_cast<unsigned>(node_.input_size()) || node_.input(i).empty())
    return nullptr;
  return importer_.rawInitializer(node_.input(i));
}

FailureOr<SmallVector<Value>>
NodeContext::inlineGraph(const onnx::GraphProto &graph) {
  return importer_.inlineGraph(graph, loc_);
}

StringRef NodeContext::modelFolder() const { return importer_.modelFolder(); }

std::optional<DataRef> NodeContext::constantData(int64_t bytes) const {
  if (node_.output_size() != 1)
    return std::nullopt;
  return importer_.model().constantData(node_.output(0), bytes);
}

FailureOr<DataRef> NodeContext::externalData(const onnx::TensorProto &tensor,
                                             int64_t bytes) {
  Expected<DataRef> ref = importer_.model().externalData(
      tensor, bytes, "tensor '" + tensor.name() + "'");
  if (!ref)
    return error(toString(ref.takeError()));
  return *ref;
}

std::optional<int64_t> NodeContext::defaultOpsetVersion() const {
  return importer_.defaultOpsetVersion();
}

dfg::DimTable &NodeContext::dimTable() { return importer_.dimTable(); }

bool NodeContext::isSymbolic(unsigned i) const {
  Value v = input(i);
  return v && isa_and_nonnull<dfg::SizesOp>(v.getDefiningOp());
}

FailureOr<SmallVector<AffineExpr>> NodeContext::symbolicInts(unsigned i,
                                                             StringRef what) {
  if (isSymbolic(i))
    return *importer_.shapes().values(input(i));
  FailureOr<SmallVector<int64_t>> ints = constantInts(i, what);
  if (failed(ints))
    return failure();
  SmallVector<AffineExpr> exprs;
  for (int64_t v : *ints)
    exprs.push_back(getAffineConstantExpr(v, builder_.getContext()));
  return exprs;
}

SmallVector<AffineExpr> NodeContext::inputDims(unsigned i) {
  return SmallVector<AffineExpr>(importer_.shapes().dims(input(i)));
}

SmallVector<AffineExpr> NodeContext::dimsOf(Value v) {
  return SmallVector<AffineExpr>(importer_.shapes().dims(v));
}

std::optional<SmallVector<AffineExpr>> NodeContext::valuesOf(Value v) {
  return importer_.shapes().values(v);
}

namespace {
/// Whether `e` never decreases as its symbols grow: sums, products by
/// constants of at least 0, and floor and ceil quotients by positive
/// constants of such expressions.
bool nonDecreasing(AffineExpr e) {
  if (isa<AffineConstantExpr, AffineSymbolExpr>(e))
    return true;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  if (!bin)
    return false;
  auto constant = [](AffineExpr x, int64_t least) {
    auto c = dyn_cast<AffineConstantExpr>(x);
    return c && c.getValue() >= least;
  };
  switch (bin.getKind()) {
  case AffineExprKind::Add:
    return nonDecreasing(bin.getLHS()) && nonDecreasing(bin.getRHS());
  case AffineExprKind::Mul:
    return (constant(bin.getRHS(), 0) && nonDecreasing(bin.getLHS())) ||
           (constant(bin.getLHS(), 0) && nonDecreasing(bin.getRHS()));
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    return constant(bin.getRHS(), 1) && nonDecreasing(bin.getLHS());
  default:
    return false;
  }
}
} // namespace

bool NodeContext::noteDimAtLeast(Value v, unsigned dim, int64_t least) {
  SmallVector<AffineExpr> dims = dimsOf(v);
  if (dim >= dims.size() || !dims[dim])
    return false;
  AffineExpr e = dims[dim];
  // The one name `e` stands on.
  std::optional<unsigned> symbol;
  bool several = false;
  e.walk([&](AffineExpr x) {
    if (auto s = dyn_cast<AffineSymbolExpr>(x)) {
      several |= symbol && *symbol != s.getPosition();
      symbol = s.getPosition();
    }
  });
  if (!symbol || several || !nonDecreasing(e))
    return false;
  std::string name = dimTable().name(*symbol).str();
  // The least size of the name at which `e` reaches `least`: by doubling,
  // then halving the interval (e never decreases).
  auto at = [&](int64_t n) -> std::optional<int64_t> {
    dfg::DimBindings bindings;
    bindings[name] = n;
    llvm::Expected<int64_t> value = dfg::evaluateDim(e, dimTable(), bindings);
    if (!value) {
      llvm::consumeError(value.takeError());
      return std::nullopt;
    }
    return *value;
  };
  int64_t lo = 1, hi = 1;
  for (;;) {
    std::optional<int64_t> value = at(hi);
    if (!value)
      return false;
    if (*value >= least)
      break;
    if (hi > (int64_t(1) << 40))
      return false;
    lo = hi + 1;
    hi *= 2;
  }
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    std::optional<int64_t> value = at(mid);
    if (!value)
      return false;
    if (*value >= least)
      hi = mid;
    else
      lo = mid + 1;
  }
  int64_t &known = importer_.minimums()[name];
  known = std::max(known, hi);
  return true;
}

LogicalResult NodeContext::requireDimAtLeast(Value v, unsigned dim,
                                             int64_t least, StringRef what) {
  auto type = cast<RankedTensorType>(v.getType());
  if (dim < type.getRank() && !type.isDynamicDim(dim)) {
    if (type.getDimSize(dim) >= least)
      return success();
    return error(what + " holds " + std::to_string(type.getDimSize(dim)) +
                 " positions; it must hold at least " + std::to_string(least));
  }
  if (noteDimAtLeast(v, dim, least))
    return success();
  return error(what +
               " must be a named (dim_param) or static dimension, "
               "so that its least size (" +
               std::to_string(least) + ") can be checked");
}

bool NodeContext::assumesTraced() const { return importer_.assumesTraced(); }

void NodeContext::assumeNegative(AffineExpr e) {
  importer_.negatives().push_back(
      {e, "node '" + node_.name() + "' (" + node_.op_type() + ")"});
}

void NodeContext::assumeSame(AffineExpr a, AffineExpr b, StringRef what) {
  if (!a || !b || dfg::sameDim(a, b))
    return;
  for (const dfg::SizeAssumption &s : importer_.sames())
    if (dfg::sameDim(s.expr, a) && dfg::sameDim(s.other, b))
      return;
  dfg::SizeAssumption s;
  s.expr = a;
  s.other = b;
  s.node = "node '" + node_.name() + "' (" + node_.op_type() + ")";
  s.what = what.str();
  importer_.sames().push_back(std::move(s));
}

bool NodeContext::pinDim(Value v, unsigned dim, int64_t size) {
  SmallVector<AffineExpr> dims = dimsOf(v);
  if (dim >= dims.size() || !dims[dim] || !isa<AffineSymbolExpr>(dims[dim]))
    return false;
  auto symbol = cast<AffineSymbolExpr>(dims[dim]);
  importer_.pinned()[dimTable().name(symbol.getPosition())] = size;
  return true;
}

Value NodeContext::refineType(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> refined(type.getShape());
  for (auto [i, d] : llvm::enumerate(importer_.shapes().dims(v)))
    if (auto c = dyn_cast_or_null<AffineConstantExpr>(d))
      refined[i] = c.getValue();
  v.setType(RankedTensorType::get(refined, type.getElementType()));
  return v;
}

FailureOr<DenseElementsAttr>
NodeContext::tensorAttr(const onnx::AttributeProto &attr) {
  FailureOr<RankedTensorType> type =
      tensorType(*builder_.getContext(), attr.t(), loc_);
  if (failed(type))
    return failure();
  return tensorToAttr(*builder_.getContext(), attr.t(), *type, loc_);
}

RankedTensorType NodeContext::inputType(unsigned i) const {
  return cast<RankedTensorType>(input(i).getType());
}

LogicalResult NodeContext::requireInputs(unsigned n) {
  for (unsigned i = 0; i < n; ++i)
    if (!input(i))
      return error(formatv("expects at least {0} input(s), input {1} is "
                           "missing",
                           n, i));
  return success();
}

LogicalResult NodeContext::requireAllInputs() {
  for (unsigned i = 0; i < inputs_.size(); ++i)
    if (!inputs_[i])
      return error(formatv("input {0} is empty; this op takes no optional "
                           "inputs there",
                           i));
  return requireInputs(1);
}

LogicalResult NodeContext::error(const Twine &msg) {
  hadError_ = true;
  return emitError(loc_) << msg;
}

FailureOr<int64_t> normalizedAxis(NodeContext &ctx, StringRef name,
                                  int64_t axis, int64_t rank, StringRef what) {
  if (rank > 0 && axis >= -rank && axis < rank)
    return axis < 0 ? axis + rank : axis;
  return ctx.error(name + " axis " + std::to_string(axis) +
                   " is out of range for " + what + " of rank " +
                   std::to_string(rank) + " (expected [" +
                   std::to_string(-rank) + ", " + std::to_string(rank) + "))");
}

/// The attribute `name` if present with type `type`; a present attribute of
/// another type is reported (ONNX's typed accessors would read it as 0).
static const onnx::AttributeProto *
typedAttr(NodeContext &ctx, StringRef name,
          onnx::AttributeProto::AttributeType type) {
  const onnx::AttributeProto *a = ctx.attr(name);
  if (a && a->type() != type) {
    (void)ctx.error("attribute '" + name + "' has type " +
                    onnx::AttributeProto::AttributeType_Name(a->type()) +
                    ", expected " +
                    onnx::AttributeProto::AttributeType_Name(type));
    return nullptr;
  }
  return a;
}

LogicalResult NodeContext::mismatchedTypes() {
  return emitError(loc_) << "operand element types differ: " << inputType(0)
                         << " vs " << inputType(1);
}

const onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::attrInt(StringRef name, int64_t dflt) {
  const onnx::AttributeProto *a =
      typedAttr(*this, name, onnx::AttributeProto::INT);
  return a ? a->i() : dflt;
}

float NodeContext::attrFloat(StringRef name, float dflt) {
  const onnx::AttributeProto *a =
      typedAttr(*this, name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : dflt;
}

std::string NodeContext::attrString(StringRef name, StringRef dflt) {
  const onnx::AttributeProto *a =
      typedAttr(*this, name, onnx::AttributeProto::STRING);
  return a ? a->s() : dflt.str();
}

std::optional<SmallVector<int64_t>> NodeContext::attrInts(StringRef name) {
  const onnx::AttributeProto *a =
      typedAttr(*this, name, onnx::AttributeProto::INTS);
  if (!a)
    return std::nullopt;
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<SmallVector<int64_t>> NodeContext::constantInts(unsigned i,
                                                          StringRef what) {
  if (!input(i))
    return error(formatv("input {0} ({1}) is missing", i, what));
  return importer_.constantInts(input(i), loc_, what);
}

Value NodeContext::scalar(double value, Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  // An integer from a float attribute converts as the evaluator converts
  // (NaN 0, saturating: the C++ conversion would be undefined there).
  Attribute element =
      isa<FloatType>(elementType)
          ? Attribute(builder_.getFloatAttr(elementType, value))
          : Attribute(builder_.getIntegerAttr(
                elementType, static_cast<int64_t>(
                                 dfg::roundToElementType(elementType, value))));
  return dfg::ConstantOp::create(builder_, loc_,
                                 DenseElementsAttr::get(type, element));
}

FailureOr<Value> NodeContext::iota(AffineExpr n, ArrayRef<int64_t> shape) {
  Type i64 = builder_.getI64Type();
  auto [map, names] =
      dimTable().write({getAffineConstantExpr(0, builder_.getContext()), n});
  Value range = refineType(dfg::RangeOp::create(
      builder_, loc_, RankedTensorType::get({ShapedType::kDynamic}, i64), map,
      1, names));
  return create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(range), shape), i64,
                                range, builder_.getDenseI64ArrayAttr(shape));
}

FailureOr<Value> NodeContext::positionTable(int64_t batch, int64_t seq,
                                            int64_t first, StringRef what) {
  constexpr int64_t kMaxPositions = int64_t(1) << 24;
  if (batch < 0 || seq < 0 || (batch > 0 && seq > kMaxPositions / batch))
    return error(what + " over a batch of " + Twine(batch) + " and " +
                 Twine(seq) +
                 " tokens needs a table of more than 2^24 positions; give "
                 "position_ids as [batch, seq]");
  if (first > std::numeric_limits<int64_t>::max() - seq)
    return error(what + " starts at position " + Twine(first) +
                 ", so its last position would overflow int64");
  SmallVector<int64_t> table;
  table.reserve(batch * seq);
  for (int64_t row = 0; row < batch; ++row)
    for (int64_t s = 0; s < seq; ++s)
      table.push_back(first + s);
  auto type = RankedTensorType::get({batch, seq}, builder_.getI64Type());
  return dfg::ConstantOp::create(
             builder_, loc_,
             DenseElementsAttr::get(type, ArrayRef<int64_t>(table)))
      .getResult();
}

FailureOr<Value> NodeContext::swapDims12(Value v) {
  SmallVector<int64_t> perm{0, 2, 1, 3};
  return create<dfg::TransposeOp>(dfg::transposeShape(shapeOf(v), perm),
                                  elementOf(v), v,
                                  builder_.getDenseI64ArrayAttr(perm));
}

FailureOr<Value> NodeContext::splitHeads(Value v, int64_t heads,
                                         StringRef attr) {
  if (heads <= 0)
    return error("a 3-D input needs the " + attr + " attribute");
  SmallVector<int64_t> spec{0, 0, heads, -1};
  FailureOr<Value> split =
      create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(v), spec), elementOf(v),
                             v, builder_.getDenseI64ArrayAttr(spec));
  return failed(split) ? split : swapDims12(*split);
}

FailureOr<Value> NodeContext::mergeHeads(Value v) {
  FailureOr<Value> back = swapDims12(v);
  if (failed(back))
    return failure();
  SmallVector<int64_t> spec{0, 0, -1};
  return create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(*back), spec),
                                elementOf(v), *back,
                                builder_.getDenseI64ArrayAttr(spec));
}

LogicalResult NodeContext::setResults(ArrayRef<Value> values) {
  results_.assign(values.begin(), values.end());
  return success();
}

FailureOr<SmallVector<Value>> NodeContext::sequenceInput(unsigned i) {
  if (i >= static_cast<unsigned>(node_.input_size()) || node_.input(i).empty())
    return error("input #" + std::to_string(i) + " (a sequence) is missing");
  auto found = importer_.sequences().find(node_.input(i));
  if (found == importer_.sequences().end())
    return error("input #" + std::to_string(i) + " ('" + node_.input(i) +
                 "') is not a sequence meshc knows the tensors of (a "
                 "SplitToSequence's or SequenceConstruct's output)");
  return found->second;
}

LogicalResult NodeContext::setSequenceResult(ArrayRef<Value> values) {
  if (node_.output_size() < 1 || node_.output(0).empty())
    return error("the node has no output for its sequence");
  importer_.sequences()[node_.output(0)].assign(values.begin(), values.end());
  return success();
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

/// Bits per element of the integer types meshc reads only as packed bytes
/// (quantized weights).
static std::optional<int> packedBits(int onnxType) {
  if (onnxType == onnx::TensorProto::UINT8 ||
      onnxType == onnx::TensorProto::INT8)
    return 8;
  if (onnxType == kOnnxUint4 || onnxType == kOnnxInt4)
    return 4;
  return std::nullopt;
}

/// 8-bit initializers in raw data of at most this many elements are read
/// as values too (RawInitializer::values).
constexpr int64_t kHeldRawValues = 64;

static std::string packedTypeName(int onnxType) {
  return onnxType == kOnnxUint4  ? "UINT4"
         : onnxType == kOnnxInt4 ? "INT4"
                                 : onnx::TensorProto::DataType_Name(
                                       static_cast<onnx::TensorProto::DataType>(
                                           onnxType));
}

/// Ops of quantized models meshc does not import: onnxruntime's integer
/// quantization, its quantized mixture of experts, and ONNX's integer
/// kernels of quantized operands (QLinearMatMul: the QOperator form).
/// (Imported, in LegalizeQuantized.cpp: weight-only quantization,
/// onnxruntime's MatMulNBits, GatherBlockQuantized and MatMulBnb4, and
/// ONNX's DequantizeLinear of an initializer; the dynamic quantization of
/// activations, DynamicQuantizeLinear and MatMulInteger as onnxruntime's
/// quantize_dynamic writes them, and its fusions DynamicQuantizeMatMul and
/// MatMulIntegerToFloat; static quantization's QDQ form, QuantizeLinear and
/// DequantizeLinear of activations per tensor.)
static bool isQuantizedOp(StringRef opType) {
  return llvm::is_contained(
      {"QMoE", "QAttention", "QLinearMatMul", "QOrderedMatMul"},
      opType);
}

/// "node 'NAME' (OP, #INDEX)", as diagnostics name a node.
static std::string describeNode(const onnx::NodeProto &node, int index) {
  std::string name = node.name().empty() ? "<unnamed>" : node.name();
  return formatv("node '{0}' ({1}, #{2})", name, node.op_type(), index);
}

FatalErrorAtNode::FatalErrorAtNode(MLIRContext &context, std::string where)
    : where_(std::move(where)), record_(&context, [this](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Error)
          lastError_ = diag.str();
        return failure(); // reported as usual too
      }) {
  llvm::install_fatal_error_handler(&FatalErrorAtNode::onFatal, this);
}

FatalErrorAtNode::~FatalErrorAtNode() { llvm::remove_fatal_error_handler(); }

void FatalErrorAtNode::onFatal(void *self, const char *reason, bool) {
  auto *guard = static_cast<FatalErrorAtNode *>(self);
  std::string message = guard->lastError_;
  if (message.empty()) // only LLVM's own text: its first line
    message = StringRef(reason).split('\n').first.rtrim(": ").str();
  llvm::WithColor::error(llvm::errs(), "meshc")
      << guard->where_ << ": " << message << "\n";
  llvm::errs().flush();
  std::exit(1);
}

Location Importer::nodeLoc(const onnx::NodeProto &node, int index) {
  return NameLoc::get(StringAttr::get(&context_, describeNode(node, index)),
                      fileLoc_);
}

LogicalResult Importer::checkOpsets() {
  std::optional<int64_t> version = model_.opsetVersion("");
  if (!version)
    return error("the model imports no opset of the default ONNX domain");
  if (*version < kMinOnnxOpset || *version > kMaxOnnxOpset)
    return error(formatv("unsupported opset {0} of domain ai.onnx (meshc "
                         "imports opsets {1} to {2}; convert older models "
                         "with onnx.version_converter)",
                         *version, kMinOnnxOpset, kMaxOnnxOpset));
  return success();
}

FailureOr<RankedTensorType>
Importer::valueType(const onnx::ValueInfoProto &info,
                    SmallVectorImpl<Attribute> *dimNames) {
  if (!info.type().has_tensor_type())
    return error("graph value '" + info.name() + "' is not a tensor");
  const auto &tensorType = info.type().tensor_type();
  FailureOr<Type> element =
      elementType(context_, tensorType.elem_type(),
                  "graph value '" + info.name() + "'", fileLoc_);
  if (failed(element))
    return failure();
  if (!tensorType.has_shape())
    return error("graph value '" + info.name() +
                 "' has no shape; meshc needs at least its rank");
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim()) {
    // MLIR (built without assertions) would accept a negative size silently.
    if (dim.has_dim_value() && dim.dim_value() < 0)
      return error("graph value '" + info.name() + "' has a negative " +
                   "dimension " + std::to_string(dim.dim_value()));
    // --dim sizes a name, and a derived name (`past_sequence_length +
    // sequence_length`) whose names it sizes.
    std::string param = dim.dim_param();
    if (auto renamed = renames_.find(param); renamed != renames_.end()) {
      if (dimNames) // a graph input
        emitWarning(fileLoc_)
            << "graph input '" << info.name() << "' names "
            << "dimension " << shape.size() << " '" << param
            << "', but the graph uses it as '" << renamed->second
            << "': meshc reads it as the graph does";
      param = renamed->second;
    }
    std::optional<int64_t> given;
    if (dim.has_dim_param())
      given = dfg::sizeOfDimName(&context_, param, dimSizes_);
    shape.push_back(dim.has_dim_value() ? dim.dim_value()
                    : given             ? *given
                                        : ShapedType::kDynamic);
    // A dynamic dimension without a dim_param is named after its input, so
    // that every symbolic dimension has a name.
    std::string name =
        dim.has_dim_param() ? param
        : dim.has_dim_value()
            ? ""
            : info.name() + "." + std::to_string(shape.size() - 1);
    if (dimNames)
      dimNames->push_back(StringAttr::get(&context_, name));
  }
  if (!tensorBytes(shape, *element))
    return error("graph value '" + info.name() +
                 "' has dimensions larger than meshc accepts (2^48 bytes)");
  return RankedTensorType::get(shape, *element);
}

LogicalResult Importer::importInitializers() {
  const auto &graph = model_.proto().graph();
  for (auto [index, tensor] : enumerate(graph.initializer())) {
    if (std::optional<int> bits = packedBits(tensor.data_type())) {
      // Packed integers of a quantized weight: kept as bytes for the op
      // that reads them (importPackedReader), no dfg value.
      int64_t count = 1;
      for (int64_t d : tensor.dims())
        if (d < 0 || (d > 0 && count > (int64_t(1) << 48) / d))
          return error("initializer '" + tensor.name() +
                       "' has a negative dimension or more elements than "
                       "meshc accepts (2^48)");
        else
          count *= d;
      auto ref = model_.initializerData(index, (count * *bits + 7) / 8);
      if (!ref)
        return error(toString(ref.takeError()));
      if (!*ref && *bits == 8 && count <= (int64_t(1) << 20) &&
          tensor.int32_data_size() == count) {
        // Values (zero points, one or one per column): kept as values.
        RawInitializer held{tensor.name(), "", 0, 0, tensor.data_type(),
                            SmallVector<int64_t>(tensor.dims().begin(),
                                                 tensor.dims().end())};
        for (int32_t v : tensor.int32_data())
          held.values.push_back(tensor.data_type() == onnx::TensorProto::INT8
                                    ? static_cast<int8_t>(v)
                                    : static_cast<uint8_t>(v));
        raw_[tensor.name()] = std::move(held);
        continue;
      }
      if (!*ref)
        return error("initializer '" + tensor.name() + "' holds " +
                     packedTypeName(tensor.data_type()) +
                     " elements outside raw data; meshc reads 8- and 4-bit "
                     "integers only as the raw bytes of quantized weights "
                     "(or, up to 2^20, as 8-bit values: zero points)");
      RawInitializer raw{tensor.name(), (*ref)->file, (*ref)->offset,
                         (*ref)->length, tensor.data_type(),
                         SmallVector<int64_t>(tensor.dims().begin(),
                                              tensor.dims().end())};
      if (*bits == 8 && count <= kHeldRawValues) {
        // A few 8-bit values in raw data (a static quantization's zero
        // points): their values too, beside the bytes' place.
        auto bytes = readFileSlice(model_.folder(), raw.file, raw.offset,
                                   raw.length,
                                   "initializer '" + tensor.name() + "'",
                                   fileLoc_);
        if (failed(bytes))
          return failure();
        for (char c : (*bytes)->getBuffer())
          raw.values.push_back(tensor.data_type() == onnx::TensorProto::INT8
                                   ? static_cast<int8_t>(c)
                                   : static_cast<uint8_t>(c));
      }
      raw_[tensor.name()] = std::move(raw);
      continue;
    }
    FailureOr<RankedTensorType> type = tensorType(context_, tensor, fileLoc_);
    if (failed(type))
      return failure();
    int64_t bytes = *tensorBytes(type->getShape(), type->getElementType());
    auto ref = model_.initializerData(index, bytes);
    if (!ref)
      return error(toString(ref.takeError()));
    Location loc = NameLoc::get(
        StringAttr::get(&context_, "initializer '" + tensor.name() + "'"),
        fileLoc_);
    Value value;
    if (*ref) {
      raw_[tensor.name()] = {tensor.name(), (*ref)->file, (*ref)->offset,
                             (*ref)->length, tensor.data_type(),
                             SmallVector<int64_t>(type->getShape())};
      auto weight =
          dfg::WeightOp::create(builder_, loc, *type, tensor.name(),
                                (*ref)->file, (*ref)->offset, (*ref)->length);
      value = weight;
      // A one-element initializer is a scalar of the computation (epsilon,
      // 1/sqrt(d), a mask fill value), not a weight: it becomes a literal,
      // so that passes can read it.
      // Integers are read as they are (the evaluator's doubles would round
      // INT64_MAX, exporters' "to the end").
      if (type->getNumElements() == 1) {
        Type element = type->getElementType();
        if (element.isInteger(64) || element.isInteger(32)) {
          FailureOr<SmallVector<int64_t>> ints =
              readWeightInts(weight, model_.folder(), loc);
          if (failed(ints))
            return failure();
          APInt v(element.getIntOrFloatBitWidth(), ints->front(),
                  /*isSigned=*/true, /*implicitTrunc=*/true);
          value = dfg::ConstantOp::create(builder_, loc,
                                          DenseElementsAttr::get(*type, v));
        } else {
          auto scalar = dfg::evaluateOp(weight, {}, model_.folder());
          if (failed(scalar))
            return failure();
          value = dfg::ConstantOp::create(builder_, loc,
                                          dfg::toDenseAttr(scalar->front()));
        }
        weight->erase();
      }
    } else {
      FailureOr<DenseElementsAttr> literal =
          tensorToAttr(context_, tensor, *type, loc);
      if (failed(literal))
        return failure();
      value = dfg::ConstantOp::create(builder_, loc, *literal);
    }
    values_[tensor.name()] = value;
  }
  return success();
}

/// FunctionProto.attribute_proto (field 11, the attributes' default values)
/// arrived with ONNX 1.13; Debian's compiled schema (1.12) keeps it among the
/// unknown fields, where this reads it.
static std::vector<onnx::AttributeProto>
attributeDefaults(const onnx::FunctionProto &fn) {
  constexpr int kAttributeProtoField = 11;
  std::vector<onnx::AttributeProto> defaults;
  const auto &unknown = fn.GetReflection()->GetUnknownFields(fn);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &field = unknown.field(i);
    onnx::AttributeProto attr;
    if (field.number() == kAttributeProtoField &&
        field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED &&
        attr.ParseFromString(field.length_delimited()))
      defaults.push_back(std::move(attr));
  }
  return defaults;
}

/// Calls to model-local functions nest at most this deep (a recursive
/// function would otherwise never finish expanding).
static constexpr int kMaxFunctionDepth = 32;

LogicalResult Importer::expandFunctions() {
  for (const auto &fn : model_.proto().functions())
    functions_[(domainName(fn.domain()) + "/" + fn.name()).str()] = &fn;
  for (auto [i, node] : enumerate(model_.proto().graph().node()))
    if (failed(expandNode(node, 0, nodeLoc(node, i))))
      return failure();
  return success();
}

/// Appends `node` to nodes_, or, if it calls a model-local function, the
/// function's body (errors are reported at `callLoc`, the graph's own node)
/// with formal inputs/outputs renamed to the call's actual
/// ones, internal values made unique under the call's name, and attribute
/// references (ref_attr_name) replaced by the call's attributes or the
/// function's defaults.
LogicalResult Importer::expandNode(const onnx::NodeProto &node, int depth,
                                   Location callLoc) {
  auto it =
      functions_.find((domainName(node.domain()) + "/" + node.op_type()).str());
  if (it == functions_.end()) {
    nodes_.push_back(node);
    return success();
  }
  const onnx::FunctionProto &fn = *it->second;
  if (depth >= kMaxFunctionDepth)
    return emitError(callLoc)
           << "model-local function '" << fn.name() << "' nests deeper than "
           << kMaxFunctionDepth << " calls (is it recursive?)";

  std::string prefix =
      (node.name().empty() ? node.output(0) : node.name()) + "/";
  StringMap<std::string> rename;
  for (auto [i, formal] : enumerate(fn.input()))
    rename[formal] = i < static_cast<size_t>(node.input_size())
                         ? node.input(i)
                         : std::string(); // omitted optional input
  for (auto [i, formal] : enumerate(fn.output()))
    rename[formal] = i < static_cast<size_t>(node.output_size())
                         ? node.output(i)
                         : prefix + formal;
  auto renamed = [&](const std::string &name) {
    if (name.empty())
      return name;
    auto r = rename.find(name);
    return r != rename.end() ? r->second : prefix + name;
  };

  StringMap<const onnx::AttributeProto *> actual, defaults;
  for (const auto &a : node.attribute())
    actual[a.name()] = &a;
  std::vector<onnx::AttributeProto> defaultValues = attributeDefaults(fn);
  for (const auto &a : defaultValues)
    defaults[a.name()] = &a;

  for (const onnx::NodeProto &inner : fn.node()) {
    onnx::NodeProto copy = inner;
    copy.set_name(prefix +
                  (inner.name().empty() ? inner.op_type() : inner.name()));
    for (auto &in : *copy.mutable_input())
      in = renamed(in);
    for (auto &out : *copy.mutable_output())
      out = renamed(out);
    copy.clear_attribute();
    for (const auto &a : inner.attribute()) {
      if (a.ref_attr_name().empty()) {
        *copy.add_attribute() = a;
        continue;
      }
      const onnx::AttributeProto *value = actual.lookup(a.ref_attr_name());
      if (!value)
        value = defaults.lookup(a.ref_attr_name());
      if (!value)
        continue; // unset and without default: the attribute is absent
      onnx::AttributeProto *substituted = copy.add_attribute();
      *substituted = *value;
      substituted->set_name(a.name());
    }
    if (failed(expandNode(copy, depth + 1, callLoc)))
      return failure();
  }
  return success();
}

FailureOr<SmallVector<int>> Importer::topologicalOrder() {
  // Producer of each value name; graph inputs and initializers are -1.
  StringMap<int> producer;
  for (const auto &entry : values_)
    producer[entry.getKey()] = -1;
  for (const auto &entry : raw_)
    producer[entry.getKey()] = -1;
  for (auto [i, node] : enumerate(nodes_))
    for (const std::string &out : node.output())
      if (!out.empty() && !producer.try_emplace(out, i).second)
        return emitError(nodeLoc(node, i))
               << "output '" << out << "' is already produced elsewhere "
               << "(ONNX graphs are in SSA form)";

  // Kahn's algorithm; among ready nodes the lowest index goes first, so a
  // graph that is already sorted keeps the exporter's order exactly.
  SmallVector<int> pending(nodes_.size(), 0);
  SmallVector<SmallVector<int>> users(nodes_.size());
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  SmallVector<int> order;
  for (auto [i, node] : enumerate(nodes_)) {
    for (const std::string &in : node.input()) {
      if (in.empty())
        continue; // omitted optional input
      auto it = producer.find(in);
      if (it == producer.end())
        return emitError(nodeLoc(node, i))
               << "input '" << in << "' is not produced by any node, graph "
               << "input or initializer";
      if (it->second >= 0) {
        ++pending[i];
        users[it->second].push_back(i);
      }
    }
    if (pending[i] == 0)
      ready.push(i);
  }
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int user : users[n])
      if (--pending[user] == 0)
        ready.push(user);
  }
  if (order.size() != nodes_.size()) {
    for (auto [i, node] : enumerate(nodes_))
      if (pending[i] > 0)
        return emitError(nodeLoc(node, i))
               << "the graph has a cycle through this node";
  }
  return order;
}

LogicalResult Importer::importNode(int index) {
  currentIndex_ = index;
  return importNode(nodes_[index], index);
}

FailureOr<SmallVector<Value>>
Importer::inlineGraph(const onnx::GraphProto &graph, Location at) {
  if (graph.input_size() != 0 || graph.initializer_size() != 0 ||
      graph.sparse_initializer_size() != 0)
    return emitError(at) << "an If branch with inputs or initializers of its "
                            "own is not supported";
  // The branch's nodes are in order (ONNX requires it); each is reported
  // under its own name, numbered as the If.
  for (const onnx::NodeProto &node : graph.node())
    if (failed(importNode(node, currentIndex_)))
      return failure();
  SmallVector<Value> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    Value v = values_.lookup(output.name());
    if (!v)
      return emitError(at) << "the If branch's output '" << output.name()
                           << "' is not produced";
    outputs.push_back(v);
  }
  return outputs;
}

/// Packed integers (RawInitializer) are read by the quantized ops that
/// take them, and reshaped; any other reader is refused by name. A Reshape
/// of them is `handled` here: the same bytes under the new dimensions.
LogicalResult Importer::importPackedReader(const onnx::NodeProto &node,
                                           Location loc, bool &handled) {
  const RawInitializer *packed = nullptr;
  for (const std::string &in : node.input())
    if (const RawInitializer *raw = rawInitializer(in);
        raw && packedBits(raw->onnxType) && !values_.count(in) &&
        raw->inFile())
      packed = raw;
  if (!packed)
    return success();
  bool standard = node.domain().empty() || node.domain() == "ai.onnx";
  if ((node.domain() == "com.microsoft" &&
       (node.op_type() == "MatMulNBits" ||
        node.op_type() == "MatMulBnb4" ||
        node.op_type() == "GatherBlockQuantized" ||
        node.op_type() == "DynamicQuantizeMatMul" ||
        node.op_type() == "MatMulIntegerToFloat")) ||
      (standard && (node.op_type() == "DequantizeLinear" ||
                    node.op_type() == "QuantizeLinear" ||
                    node.op_type() == "MatMulInteger" ||
                    (node.op_type() == "Gather" &&
                     node.input(0) == packed->name))))
    return success();
  if (!standard || node.op_type() != "Reshape" || node.input_size() < 2 ||
      node.input(0) != packed->name || node.output_size() != 1)
    return emitError(loc) << "input '" << packed->name << "' holds packed "
                          << packedTypeName(packed->onnxType)
                          << " integers, which meshc reads only as the "
                             "quantized weights of MatMulNBits, "
                             "MatMulBnb4, GatherBlockQuantized, "
                             "DequantizeLinear, QuantizeLinear, "
                             "MatMulInteger, DynamicQuantizeMatMul, "
                             "MatMulIntegerToFloat and Gather (and their "
                             "Reshapes)";
  Value shapeValue = values_.lookup(node.input(1));
  if (!shapeValue)
    return emitError(loc) << "the shape of the Reshape of packed integers '"
                          << packed->name << "' is not a constant";
  FailureOr<SmallVector<int64_t>> shape =
      constantInts(shapeValue, loc, "the shape of a Reshape of packed integers");
  if (failed(shape))
    return failure();
  int64_t count = 1, known = 1, inferred = -1;
  for (int64_t d : packed->dims)
    count *= d;
  SmallVector<int64_t> dims;
  for (auto [i, d] : llvm::enumerate(*shape)) {
    if (d == 0 && i < packed->dims.size())
      d = packed->dims[i];
    if (d == -1 && inferred < 0)
      inferred = static_cast<int64_t>(i);
    else if (d < 0)
      return emitError(loc) << "the Reshape of packed integers '"
                            << packed->name << "' has an invalid shape";
    else
      known *= d;
    dims.push_back(d);
  }
  if (inferred >= 0 && known > 0)
    dims[inferred] = count / known;
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  if (total != count)
    return emitError(loc) << "the Reshape of packed integers '" << packed->name
                          << "' to " << dfg::formatShape(dims) << " changes "
                          << "their count (" << count << ")";
  RawInitializer reshaped = *packed;
  reshaped.name = node.output(0);
  reshaped.dims = dims;
  raw_[node.output(0)] = reshaped;
  handled = true;
  return success();
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, int index) {
  Location loc = nodeLoc(node, index);
  StringRef domain = domainName(node.domain());
  std::optional<int64_t> version = model_.opsetVersion(node.domain());
  if (!version)
    return emitError(loc) << "domain '" << domain
                          << "' is not imported by the model (no opset_import "
                          << "entry), so op '" << node.op_type()
                          << "' cannot be resolved";

  int lowest = 0;
  LegalizeFn fn = LegalizationTable::get().lookup(domain, node.op_type(),
                                                  *version, &lowest);
  if (!fn) {
    if (lowest == 0)
      return emitError(loc) << "unsupported op '" << node.op_type()
                            << "' of domain '" << domain << "'";
    return emitError(loc) << "op '" << node.op_type() << "' at " << domain
                          << " opset " << *version
                          << " is not supported (meshc imports it from opset "
                          << lowest << ")";
  }

  bool handled = false;
  if (failed(importPackedReader(node, loc, handled)) || handled)
    return failure(!handled);

  SmallVector<Value> inputs;
  for (const std::string &in : node.input())
    inputs.push_back(in.empty() ? Value() : values_.lookup(in));
  Block *body = builder_.getInsertionBlock();
  Operation *last = body->empty() ? nullptr : &body->back();
  NodeContext ctx(*this, node, *version, builder_, loc, inputs);
  bool readsPart = runTimeSplits_.readsPart(node);
  // A Concat of run-time split parts joins them; any other reader of a part
  // is followed after it is legalised.
  bool joinsParts = runTimeSplits_.joinsSplitParts(node);
  // A legalisation may report a problem (a mistyped attribute) and carry
  // on with a default; the node still fails. Only its first error reaches
  // the user: later ones (the key after the query) say the same again.
  {
    bool reported = false;
    ScopedDiagnosticHandler firstOnly(&context_, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure(); // passed on
      bool again = reported;
      reported = true;
      return success(again); // handled: dropped
    });
    FatalErrorAtNode net(context_, model_.path().str() + ": " +
                                       describeNode(node, index));
    if (readsPart && failed(runTimeSplits_.checkSplitOfRows(ctx)))
      return failure();
    LogicalResult legalized = RunTimeSplits::isRunTimeSplit(ctx)
                                  ? runTimeSplits_.importSplit(ctx)
                              : joinsParts ? runTimeSplits_.importConcat(ctx)
                                           : fn(ctx);
    if (failed(legalized) || ctx.hadError())
      return failure();
  }
  SmallVector<Operation *> created;
  for (Operation &op : llvm::make_range(
           last ? std::next(last->getIterator()) : body->begin(), body->end()))
    created.push_back(&op);
  if (readsPart && !joinsParts &&
      failed(runTimeSplits_.follow(ctx, created, ctx.results())))
    return failure();
  for (Operation *op : created)
    if (isa<dfg::ElementwiseOpInterface, dfg::SymbolicSliceOp>(op))
      checkClaims(op);
  for (Operation *op : created)
    if (isa<dfg::ElementwiseOpInterface>(op))
      noteBroadcastSizes(op, node);
  SmallVector<Value> results(ctx.results());
  // A NonZero's selection mask, kept through folding beside the results.
  Value selection = ctx.selection();
  if (selection)
    results.push_back(selection);
  if (failed(foldConstants(created, results)))
    return failure();
  if (selection) {
    runTimeSplits_.addSelection(ctx, results.back());
    results.pop_back();
  }

  for (auto [i, name] : enumerate(node.output())) {
    if (name.empty())
      continue;
    if (i < results.size() && results[i]) {
      values_[name] = results[i];
    } else if (sequences_.contains(name)) {
      continue; // a sequence, read by the sequence ops
    } else if (consumed_.contains(name)) {
      return emitError(loc) << "output #" << i << " ('" << name
                            << "') is used, but meshc does not produce it";
    }
  }
  return success();
}

/// Folds, with the reference evaluator, each new op whose operands are all
/// literal constants or integer weights (shape data) and whose results are
/// small static tensors, as long as every integer involved is exact in a
/// double (below 2^53): the exporter's shape arithmetic (Shape -> Gather ->
/// Unsqueeze -> Concat, Range, ConstantOfShape, ...) collapses into
/// constants, which shape-consuming nodes read. Ops on float weights are never
/// folded, so weight data never enters the IR. `results` (the node's output
/// values) are updated to the folded constants.
LogicalResult Importer::foldConstants(ArrayRef<Operation *> ops,
                                      SmallVectorImpl<Value> &results) {
  // Replaces `op`'s results by `folded` (in the node's outputs too) and
  // erases it.
  auto replace = [&](Operation *op, ValueRange folded) {
    for (auto [result, value] : llvm::zip_equal(op->getResults(), folded)) {
      for (Value &r : results)
        if (r == result)
          r = value;
      result.replaceAllUsesWith(value);
      shapes_.forget(result);
    }
    op->erase();
  };
  for (Operation *op : ops) {
    // Shape arithmetic on symbolic dimensions first (SymbolicFolding.cpp).
    if (Value folded = foldSymbolic(op, dimTable_, model_.folder(),
                                    assumeOrders_ ? &maximums_ : nullptr,
                                    &minimums_)) {
      replace(op, folded);
      continue;
    }
    OpBuilder b(op);
    auto constants = dfg::foldWithEvaluator(op, model_.folder(), b);
    if (failed(constants))
      return failure(); // e.g. an index out of range, reported at the node
    if (!constants->empty())
      replace(op, *constants);
  }
  return success();
}

FailureOr<SmallVector<int64_t>>
Importer::constantInts(Value value, Location loc, StringRef what) {
  auto fail = [&](const Twine &why) {
    return emitError(loc) << what
                          << " must be a constant integer or bool tensor: "
                          << why;
  };
  auto type = cast<RankedTensorType>(value.getType());
  Type element = type.getElementType();
  if (!element.isInteger(64) && !element.isInteger(32) &&
      !element.isInteger(1)) {
    std::string typeText;
    llvm::raw_string_ostream(typeText) << type;
    return fail("its type is " + typeText);
  }
  Operation *def = value.getDefiningOp();
  if (auto constant = dyn_cast_or_null<dfg::ConstantOp>(def)) {
    SmallVector<int64_t> ints;
    // Bools read as 0/1 (getSExtValue would give -1 for true).
    for (const APInt &v :
         cast<DenseElementsAttr>(constant.getValue()).getValues<APInt>())
      ints.push_back(element.isInteger(1) ? v.getZExtValue()
                                          : v.getSExtValue());
    return ints;
  }
  // Not through the reference evaluator: it holds values as doubles, and
  // exporters write INT64_MAX ("to the end") into shape operands.
  if (auto weight = dyn_cast_or_null<dfg::WeightOp>(def))
    return readWeightInts(weight, model_.folder(), loc);
  if (isa<BlockArgument>(value))
    return fail("it is a graph input, known only at run time");
  if (auto sizes = dyn_cast_or_null<dfg::SizesOp>(def)) {
    SmallVector<std::string> names;
    for (Attribute name : sizes.getSymbols())
      names.push_back(cast<StringAttr>(name).getValue().str());
    return fail("it depends on the symbolic dimension(s) " + join(names, ", ") +
                ", which this op needs fixed: give them sizes with --dim "
                "NAME=SIZE");
  }
  // Computed by the graph from symbolic sizes in a way that is no affine
  // expression of them (MPT's ALiBi slice starts at max(0, L - seq)): name
  // the sizes it reads, which --dim can fix.
  llvm::SetVector<StringRef> symbols;
  llvm::SmallPtrSet<Operation *, 16> seen;
  SmallVector<Operation *> work{def};
  while (!work.empty() && seen.size() < 256) {
    Operation *op = work.pop_back_val();
    if (!op || !seen.insert(op).second)
      continue;
    if (auto sizes = dyn_cast<dfg::SizesOp>(op)) {
      for (Attribute name : sizes.getSymbols())
        symbols.insert(cast<StringAttr>(name).getValue());
      continue;
    }
    for (Value operand : op->getOperands())
      work.push_back(operand.getDefiningOp());
  }
  if (!symbols.empty())
    return fail("it is computed from the symbolic dimension(s) " +
                join(symbols.getArrayRef(), ", ") +
                " in a way meshc does not keep symbolic (not an affine "
                "expression of them): give them sizes with --dim NAME=SIZE");
  return fail("it is computed by the graph");
}

/// Every size given with --dim must name a symbolic dimension of an input:
/// a misspelt name would otherwise be ignored silently.
LogicalResult Importer::checkDimSizesUsed(const llvm::StringSet<> &symbolic) {
  for (const auto &entry : dimSizes_) {
    if (symbolic.contains(entry.getKey()))
      continue;
    SmallVector<std::string> names;
    for (const auto &s : symbolic)
      names.push_back("'" + s.getKey().str() + "'");
    llvm::sort(names);
    return error(
        "--dim " + entry.getKey() + "=" + std::to_string(entry.getValue()) +
        ": no graph input has a dimension named '" + entry.getKey() + "' (" +
        (names.empty() ? std::string("the inputs have no symbolic "
                                     "dimensions")
                       : "symbolic dimensions: " + join(names, ", ")) +
        ")");
  }
  return success();
}

/// The constant a graph input given `--input-value NAME=TEXT` becomes: its
/// static shape filled with TEXT read as its element type.
FailureOr<DenseElementsAttr>
Importer::inputValueAttr(const onnx::ValueInfoProto &input, StringRef text) {
  std::string flag = "--input-value " + input.name() + "=" + text.str();
  FailureOr<RankedTensorType> type = valueType(input, nullptr);
  if (failed(type))
    return failure();
  if (!type->hasStaticShape())
    return error(flag + ": the input's shape " +
                 dfg::formatShape(type->getShape()) +
                 " has symbolic dimensions; only an input of a fixed shape "
                 "can be given a value");
  Type element = type->getElementType();
  if (element.isInteger(1)) {
    StringRef t = text.trim();
    if (t == "true" || t == "1")
      return DenseElementsAttr::get(*type, true);
    if (t == "false" || t == "0")
      return DenseElementsAttr::get(*type, false);
    return error(flag + ": the input is bool; give true, false, 1 or 0");
  }
  if (auto integer = dyn_cast<IntegerType>(element)) {
    int64_t v = 0;
    if (text.trim().getAsInteger(10, v) ||
        !APInt(64, v, /*isSigned=*/true).isSignedIntN(integer.getWidth()))
      return error(flag + ": the input is an integer of " +
                   std::to_string(integer.getWidth()) +
                   " bits; the value is not one");
    return DenseElementsAttr::get(
        *type, APInt(integer.getWidth(), v, /*isSigned=*/true,
                     /*implicitTrunc=*/true));
  }
  if (auto floating = dyn_cast<FloatType>(element)) {
    double v = 0;
    if (text.trim().getAsDouble(v))
      return error(flag + ": the value is not a number");
    return DenseElementsAttr::get(*type, FloatAttr::get(floating, v));
  }
  return error(flag + ": inputs of this element type cannot be given a value");
}

/// Whether `e` is built from names and constants by sums and products
/// only (no quotient, remainder or bound).
static bool namesAlone(AffineExpr e) {
  if (isa<AffineSymbolExpr, AffineConstantExpr>(e))
    return true;
  auto bin = dyn_cast<AffineBinaryOpExpr>(e);
  return bin &&
         (e.getKind() == AffineExprKind::Add ||
          e.getKind() == AffineExprKind::Mul) &&
         namesAlone(bin.getLHS()) && namesAlone(bin.getRHS());
}

void Importer::checkClaims(Operation *op) {
  if (claims_.empty())
    return;
  // The claim `claimed` is contradicted by `other`, a different expression
  // of names alone that is no claim itself.
  auto contradict = [&](AffineExpr claimed, AffineExpr other) {
    auto claim = claims_.find(claimed);
    if (claim != claims_.end() && !dfg::sameDim(claimed, other) &&
        !claims_.count(other) && namesAlone(other) &&
        !isa<AffineConstantExpr>(other))
      contradicted_.try_emplace(claim->second, dimTable_.format(other));
  };
  // A slice from the start to a different expression of names: the graph
  // takes that many (transformers' `mask[..., :key_length]`).
  if (auto slice = dyn_cast<dfg::SymbolicSliceOp>(op)) {
    SmallVector<AffineExpr> in(shapes_.dims(slice.getInput()));
    SmallVector<AffineExpr> starts =
        dimTable_.read(slice.getStarts(), slice.getSymbols());
    SmallVector<AffineExpr> ends =
        dimTable_.read(slice.getEnds(), slice.getSymbols());
    for (auto [i, axis] : llvm::enumerate(slice.getAxes())) {
      int64_t a = axis < 0 ? axis + static_cast<int64_t>(in.size()) : axis;
      if (a < 0 || a >= static_cast<int64_t>(in.size()) || !in[a] ||
          i >= starts.size() || i >= ends.size() || !starts[i] || !ends[i] ||
          slice.getSteps()[i] != 1)
        continue;
      if (auto start = dyn_cast<AffineConstantExpr>(starts[i]);
          start && start.getValue() == 0)
        contradict(in[a], ends[i]);
    }
    return;
  }
  size_t rank = 0;
  SmallVector<SmallVector<AffineExpr>> all = operandDims(op, rank);
  for (size_t i = 0; i < rank; ++i) {
    SmallVector<AffineExpr> exprs;
    for (const auto &d : all)
      if (i + d.size() >= rank)
        if (AffineExpr e = d[i + d.size() - rank];
            e && !isa<AffineConstantExpr>(e))
          exprs.push_back(e);
    for (AffineExpr claimed : exprs)
      for (AffineExpr other : exprs)
        contradict(claimed, other);
  }
}

SmallVector<SmallVector<AffineExpr>> Importer::operandDims(Operation *op,
                                                          size_t &rank) {
  SmallVector<SmallVector<AffineExpr>> all;
  rank = 0;
  for (Value v : op->getOperands()) {
    all.emplace_back(shapes_.dims(v));
    rank = std::max(rank, all.back().size());
  }
  return all;
}

void Importer::noteBroadcastSizes(Operation *op, const onnx::NodeProto &node) {
  size_t rank = 0;
  SmallVector<SmallVector<AffineExpr>> all = operandDims(op, rank);
  for (size_t i = 0; i < rank; ++i) {
    std::optional<int64_t> size;
    SmallVector<AffineExpr> symbolic;
    for (const auto &d : all) {
      if (i + d.size() < rank)
        continue;
      AffineExpr e = d[i + d.size() - rank];
      if (auto c = dyn_cast_or_null<AffineConstantExpr>(e)) {
        if (c.getValue() != 1)
          size = c.getValue();
      } else if (e) {
        symbolic.push_back(e);
      }
    }
    if (!size)
      continue;
    for (AffineExpr e : symbolic)
      if (equalities_
              .try_emplace(e, *size,
                           "node '" + node.name() + "' (" + node.op_type() +
                               ")")
              .second)
        emitRemark(op->getLoc())
            << dimTable_.format(e) << " meets a dimension of size " << *size
            << ": the executables take only the sizes where it is " << *size
            << " (as onnxruntime does), and refuse others by name";
  }
}

OwningOpRef<ModuleOp> Importer::run() {
  if (failed(checkOpsets()))
    return nullptr;
  const auto &graph = model_.proto().graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc_);
  (*module)->setAttr("dfg.source",
                     StringAttr::get(&context_, model_.fileName()));
  builder_.setInsertionPointToEnd(module->getBody());

  // Step 2: arguments (skipping inputs that are initializers, as IR < 4
  // models list them).
  llvm::StringSet<> initializerNames;
  for (const auto &t : graph.initializer())
    initializerNames.insert(t.name());
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<const onnx::ValueInfoProto *> args;
  llvm::StringSet<> symbolic;
  // Inputs given values (--input-value): constants, made in the body.
  SmallVector<std::pair<std::string, DenseElementsAttr>> givenInputs;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    if (auto given = inputValues_.find(input.name());
        given != inputValues_.end()) {
      FailureOr<DenseElementsAttr> value =
          inputValueAttr(input, given->getValue());
      if (failed(value))
        return nullptr;
      givenInputs.emplace_back(input.name(), *value);
      continue;
    }
    if (input.type().has_tensor_type())
      for (const auto &dim : input.type().tensor_type().shape().dim())
        if (dim.has_dim_param() && !dim.has_dim_value())
          for (const std::string &name :
               dfg::namesInDimName(&context_, dim.dim_param()))
            symbolic.insert(name);
    SmallVector<Attribute> dimNames;
    FailureOr<RankedTensorType> type = valueType(input, &dimNames);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    SmallVector<NamedAttribute> attrs{builder_.getNamedAttr(
        "onnx.name", builder_.getStringAttr(input.name()))};
    if (any_of(dimNames, [](Attribute a) {
          return !cast<StringAttr>(a).getValue().empty();
        }))
      attrs.push_back(builder_.getNamedAttr("dfg.dim_names",
                                            builder_.getArrayAttr(dimNames)));
    argAttrs.push_back(builder_.getDictionaryAttr(attrs));
    args.push_back(&input);
  }
  if (failed(checkDimSizesUsed(symbolic)))
    return nullptr;
  for (const auto &entry : inputValues_)
    if (!llvm::any_of(givenInputs,
                      [&](const auto &g) { return g.first == entry.getKey(); })) {
      SmallVector<std::string> names;
      for (const auto &input : graph.input())
        if (!initializerNames.contains(input.name()))
          names.push_back("'" + input.name() + "'");
      (void)error("--input-value " + entry.getKey() + "=" +
                  entry.getValue() + ": the model has no input named '" +
                  entry.getKey() + "' (its inputs: " + join(names, ", ") + ")");
      return nullptr;
    }

  // Input dimensions named by expressions of other names: claims the graph
  // may contradict (checkClaims).
  for (DictionaryAttr attrs : argAttrs)
    if (auto names = attrs.getAs<ArrayAttr>("dfg.dim_names"))
      for (Attribute name : names) {
        StringRef text = cast<StringAttr>(name).getValue();
        AffineExpr e = text.empty() ? AffineExpr() : dimTable_.parseName(text);
        if (e && !isa<AffineSymbolExpr, AffineConstantExpr>(e))
          claims_.try_emplace(e, text.str());
      }

  auto func = func::FuncOp::create(builder_, fileLoc_, "main",
                                   builder_.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *body = func.addEntryBlock();
  builder_.setInsertionPointToEnd(body);
  for (auto [arg, info] : zip_equal(body->getArguments(), args))
    values_[info->name()] = arg;
  for (auto &[name, value] : givenInputs)
    values_[name] = dfg::ConstantOp::create(builder_, fileLoc_, value);

  if (failed(expandFunctions()))
    return nullptr;
  for (const auto &node : nodes_)
    for (const std::string &in : node.input())
      consumed_.insert(in);
  for (const auto &output : graph.output())
    consumed_.insert(output.name());

  // A quantized model stops at its first quantized op, before its integer
  // weights (an element type meshc does not hold) stop the initializers.
  for (auto [index, node] : llvm::enumerate(nodes_))
    if (isQuantizedOp(node.op_type())) {
      emitError(nodeLoc(node, index))
          << "a quantized model (" << node.op_type()
          << ": integer kernels of quantized operands) is not "
             "supported: meshc computes in f32, f16 or bf16 and reads only "
             "weight-only quantized matrices (MatMulNBits, MatMulBnb4, "
             "GatherBlockQuantized, DequantizeLinear of an initializer), "
             "the dynamic quantization of activations (DynamicQuantizeLinear, "
             "MatMulInteger, DynamicQuantizeMatMul, MatMulIntegerToFloat) "
             "and the QDQ form of static quantization (QuantizeLinear and "
             "DequantizeLinear per tensor); export the model unquantized "
             "(onnxruntime-genai's builder: -p fp32, fp16 or bf16), with "
             "weight-only quantization (-p int4), quantize it dynamically "
             "(onnxruntime's quantize_dynamic) or statically in the QDQ "
             "format (quantize_static's default)";
      return nullptr;
    }

  // Steps 3-5.
  if (failed(importInitializers()))
    return nullptr;
  FailureOr<SmallVector<int>> order = topologicalOrder();
  if (failed(order))
    return nullptr;
  for (int index : *order)
    if (failed(importNode(index)))
      return nullptr;

  // Step 6.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &output : graph.output()) {
    Value v = values_.lookup(output.name());
    if (!v) {
      (void)error("graph output '" + output.name() +
                  "' is not produced by any node");
      return nullptr;
    }
    if (std::string why = runTimeSplits_.outputError(output.name());
        !why.empty()) {
      (void)error(why);
      return nullptr;
    }
    results.push_back(v);
    resultAttrs.push_back(builder_.getDictionaryAttr(builder_.getNamedAttr(
        "onnx.name", builder_.getStringAttr(output.name()))));
  }
  func::ReturnOp::create(builder_, fileLoc_, results);
  // Shape arithmetic that only fed shapes is gone once folded: drop the
  // symbolic sizes nothing reads.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
    if (isa<dfg::SizesOp>(op) && op.use_empty())
      op.erase();
  func.setFunctionType(
      builder_.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  // Least sizes the ops need of symbolic input dimensions, for the
  // executables to check (NodeContext::requireDimAtLeast), and the largest
  // sizes the shape arithmetic assumed, for the bounds to respect.
  for (auto [name, sizes] :
       {std::pair<StringRef, const DimSizes *>{"dfg.dim_minimums", &minimums_},
        {"dfg.dim_maximums", &maximums_}}) {
    if (sizes->empty())
      continue;
    SmallVector<NamedAttribute> entries;
    for (auto &entry : *sizes)
      entries.push_back(builder_.getNamedAttr(
          entry.getKey(), builder_.getI64IntegerAttr(entry.getValue())));
    (*module)->setAttr(name, builder_.getDictionaryAttr(entries));
  }
  // Expressions the import assumed negative, and those the ops need at a
  // static size, for the executables to check (dfg::sizeAssumptions).
  auto record = [&](StringRef name, ArrayRef<dfg::SizeAssumption> assumed) {
    if (assumed.empty())
      return;
    SmallVector<Attribute> entries;
    for (const dfg::SizeAssumption &a : assumed)
      entries.push_back(a.toAttr(dimTable_));
    (*module)->setAttr(name, builder_.getArrayAttr(entries));
  };
  SmallVector<dfg::SizeAssumption> negative, equal;
  for (auto &[e, node] : negatives_)
    negative.push_back({e, std::nullopt, AffineExpr(), node, ""});
  for (auto &[e, need] : equalities_)
    equal.push_back({e, need.first, AffineExpr(), need.second, ""});
  record("dfg.dim_negative", negative);
  record("dfg.dim_equal", equal);
  record("dfg.dim_same", sames_);

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, StringRef path,
                                      const DimSizes &dimSizes,
                                      const InputValues &values) {
  context.loadDialect<dfg::DfgDialect, func::FuncDialect>();
  auto model = OnnxModel::load(path);
  if (!model) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << toString(model.takeError());
    return nullptr;
  }
  // One import, its diagnostics held back. A symbolic dimension the graph
  // fixes (NodeContext::pinDim) is only found while importing: with new
  // pins the import is redone with those dimensions sized.
  struct Attempt {
    OwningOpRef<ModuleOp> module;
    SmallVector<Diagnostic> held;
  };
  // So is a name the graph contradicts (Importer::checkClaims): the import
  // is redone with the name read as the graph uses it.
  auto attempt = [&](bool assumeOrders) {
    Attempt result;
    ScopedDiagnosticHandler hold(&context, [&](Diagnostic &diag) {
      result.held.push_back(std::move(diag));
      return success();
    });
    DimSizes pinned, minimums;
    DimRenames renames;
    {
      Importer first(context, **model, dimSizes, assumeOrders, {}, {},
                     values);
      result.module = first.run();
      for (auto &entry : first.pinned())
        if (!dimSizes.contains(entry.getKey()))
          pinned[entry.getKey()] = entry.getValue();
      for (auto &entry : first.contradicted())
        renames[entry.getKey()] = entry.getValue();
      minimums = first.minimums();
    }
    // So are least sizes the ops need (a convolution's span), found after
    // shape arithmetic that only folds knowing them: where the import
    // failed, it is redone with them known from the start.
    bool retryWithMinimums = !result.module && !minimums.empty();
    if (pinned.empty() && renames.empty() && !retryWithMinimums)
      return result;
    result.held.clear();
    for (auto &entry : dimSizes)
      pinned[entry.getKey()] = entry.getValue();
    result.module = Importer(context, **model, pinned, assumeOrders, renames,
                             minimums, values)
                        .run();
    return result;
  };
  auto emit = [&](Attempt &a) {
    for (Diagnostic &diag : a.held)
      context.getDiagEngine().emit(std::move(diag));
    return std::move(a.module);
  };
  Attempt exact = attempt(/*assumeOrders=*/false);
  if (exact.module)
    return emit(exact);
  // Shape arithmetic that keeps no symbolic form as it is (MPT's
  // max(0, max_seq_len - sequence_length)) may with the order of its Min
  // and Max taken for small sizes, and those sizes made the model's bound
  // (dfg.dim_maximums). Only where the exact import fails: a Min that is a
  // sliding window's clamp must not bound the cache.
  Attempt assumed = attempt(/*assumeOrders=*/true);
  if (assumed.module)
    return emit(assumed);
  return emit(exact);
}

} // namespace meshc::onnximport
