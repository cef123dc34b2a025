//===- DfgOps.cpp - Verifiers and shape inference of dfg ops --------------===//
//
// Part of meshc. Each check names the invariant number of the op's
// description in DfgOps.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"

#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/QuantizedWeights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace meshc::dfg {

bool areCompatibleTensorTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip_equal(lhs, rhs)) {
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt || lt.getElementType() != rt.getElementType() ||
        lt.getEncoding() != rt.getEncoding() ||
        failed(verifyCompatibleShape(lt.getShape(), rt.getShape())))
      return false;
  }
  return true;
}

LogicalResult verifyInferredTypes(InferTypeOpInterface op) {
  SmallVector<Type> inferred;
  if (failed(op.inferReturnTypes(op->getContext(), op->getLoc(),
                                 op->getOperands(), op->getRawDictionaryAttrs(),
                                 op->getPropertiesStorage(), op->getRegions(),
                                 inferred)))
    return failure();
  if (inferred.size() != op->getNumResults())
    return op->emitOpError("has ")
           << op->getNumResults() << " result(s), but its operands give "
           << inferred.size() << ": " << TypeRange(inferred);
  if (!areCompatibleTensorTypes(inferred, op->getResultTypes()))
    return op->emitOpError(op->getNumResults() == 1 ? "result type "
                                                    : "result types ")
           << op->getResultTypes()
           << (op->getNumResults() == 1 ? " contradicts" : " contradict")
           << " the inferred " << inferred;
  return success();
}

/// Reports an inference failure of `opName` as its verifier would.
template <typename... Args>
static LogicalResult inferError(std::optional<Location> loc, StringRef opName,
                                Args &&...args) {
  return emitOptionalError(loc, "'", opName, "' op ",
                           std::forward<Args>(args)...);
}

/// Pushes a tensor of `shape` with `like`'s element type, or reports `shape`'s
/// error at `loc`.
static LogicalResult pushInferred(std::optional<Location> loc, StringRef opName,
                                  llvm::Expected<Shape> shape,
                                  RankedTensorType like,
                                  SmallVectorImpl<Type> &types) {
  if (!shape)
    return inferError(loc, opName, llvm::toString(shape.takeError()));
  types.push_back(RankedTensorType::get(*shape, like.getElementType()));
  return success();
}

LogicalResult inferBroadcastBinary(std::optional<Location> loc,
                                   StringRef opName, Value lhs, Value rhs,
                                   SmallVectorImpl<Type> &types,
                                   Type resultElement) {
  auto lt = cast<RankedTensorType>(lhs.getType());
  auto rt = cast<RankedTensorType>(rhs.getType());
  // Invariant 1 (same element types) is checked first so that a type mismatch
  // is not reported as a shape problem.
  if (lt.getElementType() != rt.getElementType())
    return inferError(loc, opName, "operand element types differ: ", lt, " vs ",
                      rt);
  auto like = resultElement ? RankedTensorType::get({}, resultElement) : lt;
  return pushInferred(loc, opName,
                      broadcastShapes(lt.getShape(), rt.getShape()), like,
                      types); // invariants 2 and 3
}

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

/// The byte width of a dfg element type (which ODS has already restricted;
/// bool takes one byte).
static int64_t elementByteWidth(Type t) {
  return std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8);
}

LogicalResult WeightOp::verify() {
  auto type = getType();
  if (!type.hasStaticShape()) // 1
    return emitOpError("weight '")
           << getName() << "' must have a static shape, got " << type;
  // ODS getters of I64Attr are unsigned; the attribute itself is signed.
  int64_t offset = static_cast<int64_t>(getOffset());
  int64_t length = static_cast<int64_t>(getLength());
  if (offset < 0) // 2
    return emitOpError("weight '")
           << getName() << "' has negative offset " << offset;
  Type element = type.getElementType();
  if (std::optional<Type> stored = getStored()) { // 5
    auto isFloat = [](Type t) { return t.isF32() || t.isF16() || t.isBF16(); };
    if (!isFloat(*stored) || !isFloat(element) || *stored == element)
      return emitOpError("weight '")
             << getName() << "' stored as " << *stored
             << " must be a conversion between two different floating-point "
                "types, not to "
             << element;
  }
  if (std::optional<DictionaryAttr> quantization = getQuantization()) { // 6
    auto layout = parseQuantization(*quantization);
    std::string why = !layout ? llvm::toString(layout.takeError())
                      : getStored()
                          ? std::string("is both quantized and stored as a "
                                        "floating-point type")
                      : !(element.isF32() || element.isF16() || element.isBF16())
                          ? std::string("is quantized but not floating-point")
                          : checkQuantization(*layout, type.getNumElements(),
                                              length); // 3
    if (!why.empty())
      return emitOpError("quantized weight '") << getName() << "' " << why;
  }
  int64_t expected =
      type.getNumElements() * elementByteWidth(getStoredElementType());
  if (!getQuantization() && length != expected) { // 3
    InFlightDiagnostic diag = emitOpError("weight '")
                              << getName() << "' has length " << length
                              << " bytes but " << type;
    if (getStored())
      diag << " stored as " << *getStored();
    return diag << " needs " << expected;
  }
  StringRef file = getFile();
  if (file.empty()) // 4
    return emitOpError("weight '") << getName() << "' has an empty file path";
  if (llvm::sys::path::is_absolute(file) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(file),
                                          llvm::sys::path::end(file)),
                         ".."))
    return emitOpError("weight '")
           << getName() << "' refers to '" << file
           << "', which leaves the model's folder (absolute path or '..')";
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  int64_t n = getType().getNumElements(); // 2 is ODS (static, same type)
  auto dense = dyn_cast<DenseElementsAttr>(getValue());
  if (n > kMaxConstantElements && !(dense && dense.isSplat())) // 1
    return emitOpError("holds ")
           << n << " elements; literal constants hold at most "
           << kMaxConstantElements << " (use dfg.weight for larger tensors)";
  return success();
}

//===----------------------------------------------------------------------===//
// MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lt = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rt = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lt.getElementType() != rt.getElementType()) // 1
    return inferError(loc, getOperationName(),
                      "operand element types differ: ", lt, " vs ", rt);
  return pushInferred(loc, getOperationName(),
                      matmulShape(lt.getShape(), rt.getShape()), lt,
                      types); // 1 (rank), 2, 3, 4
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      reshapeShape(in.getShape(), adaptor.getShape()), in,
                      types); // 1, 2, 3, 4
}

//===----------------------------------------------------------------------===//
// TransposeOp
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      transposeShape(in.getShape(), adaptor.getPerm()), in,
                      types); // 1, 2, 3
}

//===----------------------------------------------------------------------===//
// SoftmaxOp
//===----------------------------------------------------------------------===//

/// An op along one axis of its input whose result has the input's type
/// (softmax, cumsum): `axis` must lie in [-rank, rank) of a ranked input.
static LogicalResult inferAlongAxis(std::optional<Location> loc,
                                    StringRef opName, Value input,
                                    int64_t axis,
                                    SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(input.getType());
  int64_t rank = in.getRank();
  if (rank == 0 || axis < -rank || axis >= rank)
    return inferError(loc, opName, "axis ", axis,
                      " is out of range for an input of rank ", rank,
                      " (expected [", -rank, ", ", rank, "))");
  types.push_back(in);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  // 1 is ODS (Dfg_FloatTensor); 2 and 3 here.
  return inferAlongAxis(loc, getOperationName(), adaptor.getInput(),
                        adaptor.getAxis(), types);
}

//===----------------------------------------------------------------------===//
// WhereOp
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto ct = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto lt = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rt = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lt.getElementType() != rt.getElementType()) // 1
    return inferError(loc, getOperationName(),
                      "selected operands have different element types: ", lt,
                      " vs ", rt);
  auto values = broadcastShapes(lt.getShape(), rt.getShape()); // 2
  if (!values)
    return pushInferred(loc, getOperationName(), std::move(values), lt, types);
  return pushInferred(loc, getOperationName(),
                      broadcastShapes(ct.getShape(), *values), lt,
                      types); // 2, 3
}

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  Type to = adaptor.getTo();
  if (!to.isF32() && !to.isF16() && !to.isBF16() && !to.isInteger(64) &&
      !to.isInteger(32) && !to.isInteger(1)) // 1
    return inferError(loc, getOperationName(), "cannot cast to ", to,
                      "; dfg element types are f32, f16, bf16, i64, i32, i1");
  types.push_back(RankedTensorType::get(in.getShape(), to)); // 2
  return success();
}

//===----------------------------------------------------------------------===//
// Layout ops
//===----------------------------------------------------------------------===//

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      unsqueezeShape(in.getShape(), adaptor.getAxes()), in,
                      types); // 1, 2
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      squeezeShape(in.getShape(), adaptor.getAxes()), in,
                      types); // 1, 2, 3
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : adaptor.getInputs())
    shapes.push_back(cast<RankedTensorType>(v.getType()).getShape());
  if (shapes.empty()) // 1
    return inferError(loc, getOperationName(), "needs at least one input");
  auto first = cast<RankedTensorType>(adaptor.getInputs().front().getType());
  return pushInferred(
      loc, getOperationName(),
      concatShape(shapes, static_cast<int64_t>(adaptor.getAxis())), first,
      types); // 1 (rank), 2, 3
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  return pushInferred(loc, getOperationName(),
                      gatherShape(data.getShape(), indices.getShape(),
                                  static_cast<int64_t>(adaptor.getAxis())),
                      data, types); // 2, 3
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  return pushInferred(loc, getOperationName(),
                      gatherNDShape(data.getShape(), indices.getShape(),
                                    adaptor.getBatchDims()),
                      data, types); // 1-4
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto table = cast<RankedTensorType>(adaptor.getTable().getType());
  auto ids = cast<RankedTensorType>(adaptor.getIds().getType());
  if (table.getRank() != 2) // 1
    return inferError(loc, getOperationName(), "table ", table,
                      " must be [vocab, hidden]");
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getDimSize(1));
  types.push_back(RankedTensorType::get(shape, table.getElementType())); // 2
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  StringRef name = getOperationName();
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  auto w = cast<RankedTensorType>(adaptor.getWeight().getType());
  Value bias = adaptor.getBias();
  if (in.getRank() < 1 || w.getRank() != 2) // 1
    return inferError(loc, name,
                      "needs an input of rank at least 1 and a 2-D "
                      "weight, got ",
                      in, " and ", w);
  if (w.getElementType() != in.getElementType() ||
      (bias && getElementTypeOrSelf(bias.getType()) != in.getElementType()))
    return inferError(loc, name,
                      "operands must share the input's element "
                      "type ",
                      in.getElementType()); // 1
  bool transposed = adaptor.getTransposeWeight();
  int64_t inF = w.getDimSize(transposed ? 1 : 0);
  int64_t outF = w.getDimSize(transposed ? 0 : 1);
  int64_t k = in.getShape().back();
  if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(inF) && k != inF)
    return inferError(loc, name, "input ", in, " does not match the weight ", w,
                      transposed ? " stored [out, in]" : " stored [in, out]",
                      ": ", k, " vs ", inF); // 2
  if (bias) {
    auto bt = cast<RankedTensorType>(bias.getType());
    if (bt.getRank() != 1 ||
        failed(verifyCompatibleShape(bt.getShape(), ArrayRef<int64_t>{outF})))
      return inferError(loc, name, "bias ", bt, " must be [", outF,
                        "], the weight's out dimension"); // 3
  }
  SmallVector<int64_t> shape(in.getShape());
  shape.back() = outF;
  types.push_back(RankedTensorType::get(shape, in.getElementType())); // 4
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      sliceShape(in.getShape(), adaptor.getStarts(),
                                 adaptor.getEnds(), adaptor.getAxes(),
                                 adaptor.getSteps()),
                      in, types); // 1, 2, 3
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  auto axis =
      normalizeAxes({static_cast<int64_t>(adaptor.getAxis())}, in.getRank());
  if (!axis) // 1
    return inferError(loc, getOperationName(),
                      llvm::toString(axis.takeError()));
  int64_t a = axis->front(), total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0) // 1
      return inferError(loc, getOperationName(), "split size ", size,
                        " is negative");
    total += size;
  }
  int64_t dim = in.getDimSize(a);
  if (!ShapedType::isDynamic(dim) && total != dim) // 2
    return inferError(loc, getOperationName(), "split sizes add up to ", total,
                      " but dimension ", a, " of ", in, " is ", dim);
  for (int64_t size : adaptor.getSizes()) { // 3
    SmallVector<int64_t> shape(in.getShape());
    shape[a] = size;
    types.push_back(RankedTensorType::get(shape, in.getElementType()));
  }
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  return pushInferred(loc, getOperationName(),
                      expandShape(in.getShape(), adaptor.getShape()), in,
                      types); // 1, 2
}

LogicalResult inferReduction(std::optional<Location> loc, StringRef opName,
                             Value input, ArrayRef<int64_t> axes, bool keepDims,
                             SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(input.getType());
  for (auto [i, axis] : llvm::enumerate(axes)) // 1
    if (axis < 0 || axis >= in.getRank() || (i > 0 && axes[i - 1] >= axis))
      return inferError(
          loc, opName, "axes [",
          llvm::join(llvm::map_range(
                         axes, [](int64_t a) { return std::to_string(a); }),
                     ", "),
          "] must be distinct, increasing and in [0, ", in.getRank(), ")");
  types.push_back(
      RankedTensorType::get(reduceShape(in.getShape(), axes, keepDims),
                            in.getElementType())); // 2
  return success();
}

LogicalResult GeluOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType()); // 2
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  StringRef name = getOperationName();
  auto q = cast<RankedTensorType>(adaptor.getQuery().getType());
  auto k = cast<RankedTensorType>(adaptor.getKey().getType());
  auto v = cast<RankedTensorType>(adaptor.getValue().getType());
  Value pastK = adaptor.getPastKey(), pastV = adaptor.getPastValue();
  SmallVector<RankedTensorType> all{q, k, v};
  if (pastK)
    all.push_back(cast<RankedTensorType>(pastK.getType()));
  if (pastV)
    all.push_back(cast<RankedTensorType>(pastV.getType()));
  for (RankedTensorType t : all) // 1
    if (t.getRank() != 4 || t.getElementType() != q.getElementType())
      return inferError(loc, name,
                        "query, key, value and past tensors must be "
                        "4-D of one element type, got ",
                        t, " with query ", q);
  auto agree = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  auto dims = [](RankedTensorType t, int i) { return t.getDimSize(i); };
  if (!agree(dims(q, 0), dims(k, 0)) || !agree(dims(k, 0), dims(v, 0)) ||
      !agree(dims(q, 3), dims(k, 3)) || !agree(dims(k, 1), dims(v, 1)) ||
      !agree(dims(k, 2), dims(v, 2))) // 2
    return inferError(loc, name, "query ", q, ", key ", k, " and value ", v,
                      " disagree in batch, head_dim, kv_heads or kv_seq");
  int64_t heads = dims(q, 1), kvHeads = dims(k, 1);
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || heads % kvHeads)) // 3
    return inferError(loc, name, kvHeads, " kv heads do not divide ", heads,
                      " query heads");
  double scale = adaptor.getScale().convertToDouble();
  double softcap = adaptor.getSoftcap().convertToDouble();
  if (!(scale > 0) || softcap < 0) // 4
    return inferError(loc, name,
                      "scale must be positive and softcap not "
                      "negative, got ",
                      scale, " and ", softcap);
  if (bool(pastK) != bool(pastV)) // 4
    return inferError(loc, name, "past_key and past_value come together");
  if (FloatAttr fill = adaptor.getCausalFillAttr()) { // 7
    double f = fill.getValueAsDouble();
    if (!adaptor.getCausal() || !std::isfinite(f) || f > -1e30)
      return inferError(loc, name,
                        "causal_fill needs causal = true and a finite value "
                        "at most -1e30, got ",
                        f, adaptor.getCausal() ? "" : " without causal");
  }
  if (Value lengths = adaptor.getPastLengths()) { // 8
    auto lt = cast<RankedTensorType>(lengths.getType());
    if (!pastK || lt.getRank() != 1 || !lt.getElementType().isInteger(64) ||
        !agree(lt.getDimSize(0), dims(q, 0)))
      return inferError(loc, name, "past_lengths ", lt,
                        " must be a 1-D i64 tensor of the batch's size ",
                        dims(q, 0), pastK ? "" : ", given with a past");
  }
  if (Value sinks = adaptor.getSinks()) { // 9
    auto st = cast<RankedTensorType>(sinks.getType());
    if (st.getRank() != 1 || st.getElementType() != q.getElementType() ||
        !agree(st.getDimSize(0), heads))
      return inferError(loc, name, "sinks ", st,
                        " must be a 1-D tensor of the query's element type "
                        "and its ",
                        heads, " heads");
  }
  int64_t total = dims(k, 2);
  SmallVector<Type> present;
  if (pastK) {
    auto pk = cast<RankedTensorType>(pastK.getType());
    auto pv = cast<RankedTensorType>(pastV.getType());
    for (int i : {0, 1, 3}) // 2
      if (!agree(dims(pk, i), dims(k, i)) || !agree(dims(pv, i), dims(v, i)))
        return inferError(loc, name, "past ", pk, " / ", pv, " must match key ",
                          k, " / value ", v, " except in length");
    total = ShapedType::isDynamic(total) || pk.isDynamicDim(2)
                ? ShapedType::kDynamic
                : total + dims(pk, 2);
    auto extend = [&](RankedTensorType t) { // 6
      SmallVector<int64_t> shape(t.getShape());
      shape[2] = total;
      return RankedTensorType::get(shape, t.getElementType());
    };
    present = {extend(k), extend(v)};
  }
  if (Value mask = adaptor.getMask()) { // 1, 5
    auto mt = cast<RankedTensorType>(mask.getType());
    SmallVector<int64_t> full{dims(q, 0), heads, dims(q, 2), total};
    auto joined = broadcastShapes(mt.getShape(), full);
    if (!mt.getElementType().isInteger(1) &&
        mt.getElementType() != q.getElementType())
      return inferError(loc, name, "mask ", mt,
                        " must be bool or of the query's element type");
    if (!joined || failed(verifyCompatibleShape(*joined, full))) {
      if (!joined)
        llvm::consumeError(joined.takeError());
      return inferError(loc, name, "mask ", mt, " does not broadcast to ",
                        formatShape(full));
    }
  }
  types.push_back(RankedTensorType::get(
      {dims(q, 0), heads, dims(q, 2), dims(v, 3)}, q.getElementType())); // 6
  llvm::append_range(types, present);
  return success();
}

LogicalResult RotaryOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  auto cos = cast<RankedTensorType>(adaptor.getCos().getType());
  auto sin = cast<RankedTensorType>(adaptor.getSin().getType());
  StringRef name = getOperationName();
  if (in.getRank() != 4) // 1
    return inferError(loc, name, "input ", in,
                      " must be [batch, heads, seq, head_dim]");
  if (cos.getElementType() != in.getElementType() || cos != sin) // 1
    return inferError(loc, name, "cos ", cos, " and sin ", sin,
                      " must share one type with the input's element type");
  int64_t rd = static_cast<int64_t>(adaptor.getRotaryDim());
  int64_t headDim = in.getDimSize(3);
  if (rd <= 0 || rd % 2 ||
      (!ShapedType::isDynamic(headDim) && rd > headDim)) // 2
    return inferError(loc, name, "rotary_dim ", rd,
                      " must be even, positive and at most head_dim ", headDim);
  int64_t half = cos.getRank() ? cos.getShape().back() : 0;
  if (cos.getRank() == 0 ||
      (!ShapedType::isDynamic(half) && half != rd / 2)) // 2
    return inferError(loc, name, "cos ", cos,
                      " must end in rotary_dim / 2 = ", rd / 2);
  Value positions = adaptor.getPositions();
  SmallVector<int64_t> batchSeq{in.getDimSize(0), in.getDimSize(2)};
  if (positions) { // 3
    auto pt = cast<RankedTensorType>(positions.getType());
    if (cos.getRank() != 2 ||
        failed(verifyCompatibleShape(pt.getShape(), batchSeq)))
      return inferError(loc, name, "with positions ", pt,
                        ", cos must be [max_position, rotary_dim / 2] and "
                        "positions [batch, seq] = ",
                        formatShape(batchSeq));
  } else {
    // A table shared by every batch row ([1, seq, rd/2]) is accepted too.
    SmallVector<int64_t> expected{batchSeq[0], batchSeq[1], rd / 2};
    if (cos.getRank() == 3 && cos.getDimSize(0) == 1)
      expected[0] = 1;
    if (failed(verifyCompatibleShape(cos.getShape(), expected)))
      return inferError(
          loc, name, "without positions, cos ", cos,
          " must be [batch, seq, rotary_dim / 2] = ", formatShape(expected));
  }
  types.push_back(in); // 4
  return success();
}

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  // 1 is ODS (Dfg_NumericTensor); 2 and 3 here.
  return inferAlongAxis(loc, getOperationName(), adaptor.getInput(),
                        adaptor.getAxis(), types);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  // 1 is ODS (Dfg_NumericTensor, i64 indices); 2, 3 and 4 here.
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t rank = in.getRank(), axis = adaptor.getAxis();
  if (rank == 0 || axis < -rank || axis >= rank) // 2
    return inferError(loc, getOperationName(), "axis ", axis,
                      " is out of range for an input of rank ", rank,
                      " (expected [", -rank, ", ", rank, "))");
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(in.getShape());
  if (std::optional<uint64_t> k = adaptor.getK()) { // 3
    int64_t kk = static_cast<int64_t>(*k), n = shape[axis];
    if (kk < 1 || (!ShapedType::isDynamic(n) && kk > n))
      return inferError(loc, getOperationName(), "k = ", kk,
                        " must lie in [1, ", n, "], the size of axis ", axis);
    shape[axis] = kk;
  }
  types.push_back(RankedTensorType::get(shape, in.getElementType())); // 4
  types.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(adaptor.getInput().getType());
  if (in.getRank() < 2) // 1
    return inferError(loc, getOperationName(), "needs rank at least 2, got ",
                      in);
  types.push_back(in); // 2
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = cast<RankedTensorType>(adaptor.getUpdates().getType());
  int64_t q = indices.getRank() ? indices.getShape().back() : -1;
  int64_t batch = adaptor.getBatchDims();
  if (batch < 0 || batch > std::max<int64_t>(indices.getRank() - 1, 0)) // 1
    return inferError(loc, getOperationName(), "batch_dims ", batch,
                      " must lie in [0, rank(indices) - 1] for indices ",
                      indices);
  if (indices.getRank() == 0 || ShapedType::isDynamic(q) ||
      batch + q > data.getRank()) // 1
    return inferError(loc, getOperationName(), "indices ", indices,
                      " must end in a static index length of at most the "
                      "data rank ",
                      data.getRank(), " less batch_dims ", batch);
  if (failed(verifyCompatibleShape(data.getShape().take_front(batch),
                                   indices.getShape().take_front(batch)))) // 1
    return inferError(loc, getOperationName(), "the ", batch,
                      " batch dimensions of data ", data, " and indices ",
                      indices, " differ");
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(batch + q));
  if (failed(verifyCompatibleShape(expected, updates.getShape()))) // 2
    return inferError(loc, getOperationName(), "updates ", updates,
                      " should have shape ", formatShape(expected));
  types.push_back(data); // 3
  return success();
}

LogicalResult inferNormalization(std::optional<Location> loc, StringRef opName,
                                 Value input, Value scale, Value bias,
                                 Value residual, int64_t axis, double epsilon,
                                 SmallVectorImpl<Type> &types) {
  auto in = cast<RankedTensorType>(input.getType());
  auto normalized = normalizeAxes({axis}, in.getRank());
  if (!normalized) // 1 (rank), 2
    return inferError(loc, opName, llvm::toString(normalized.takeError()));
  if (!(epsilon >= 0)) // 2
    return inferError(loc, opName, "epsilon must be non-negative, got ",
                      epsilon);
  ArrayRef<int64_t> tail = in.getShape().drop_front(normalized->front());
  for (Value param : {scale, bias}) {
    if (!param)
      continue;
    auto pt = cast<RankedTensorType>(param.getType());
    if (pt.getElementType() != in.getElementType()) // 1
      return inferError(loc, opName, "parameter ", pt,
                        " does not match the input's element type");
    auto joined = broadcastShapes(pt.getShape(), tail);
    if (!joined || ArrayRef<int64_t>(*joined) != tail) { // 3
      if (!joined)
        llvm::consumeError(joined.takeError());
      return inferError(loc, opName, "parameter ", pt,
                        " does not broadcast to the normalised dimensions ",
                        formatShape(tail));
    }
  }
  types.push_back(in); // 4
  if (residual) {
    auto rt = cast<RankedTensorType>(residual.getType());
    if (rt.getElementType() != in.getElementType() ||
        failed(verifyCompatibleShape(rt.getShape(), in.getShape()))) // 1, 5
      return inferError(loc, opName, "residual ", residual.getType(),
                        " must have the input's type ", in);
    types.push_back(in); // 5
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise ops whose definitions depend on an attribute
//===----------------------------------------------------------------------===//

std::string fusedExpression(StringRef pattern, ArrayRef<std::string> operands) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '@' && i + 1 < pattern.size() &&
        llvm::isDigit(pattern[i + 1]) &&
        size_t(pattern[i + 1] - '0') < operands.size()) {
      out += operands[pattern[i + 1] - '0'];
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

double GeluOp::evaluateElement(ArrayRef<double> operands) {
  double x = operands[0];
  if (getExact())
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  double c = std::sqrt(2 / M_PI);
  return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

StringRef GeluOp::getKernelName() { return getExact() ? "Gelu" : "GeluTanh"; }

std::string GeluOp::getFusedExpression(ArrayRef<std::string> operands) {
  return fusedExpression(
      getExact() ? "rt::fused::gelu(@0)" : "rt::fused::geluTanh(@0)", operands);
}

/// The value itself: the evaluator rounds it to the result's element type.
double CastOp::evaluateElement(ArrayRef<double> operands) {
  return operands[0];
}

StringRef CastOp::getKernelName() { return ""; } // k::cast

/// Between float types only (f16 and bf16 live as rounded f32 in a fused
/// kernel).
std::string CastOp::getFusedExpression(ArrayRef<std::string> operands) {
  Type to = getTo();
  if (to.isF16())
    return fusedExpression("rt::fused::roundToHalf(@0)", operands);
  if (to.isBF16())
    return fusedExpression("rt::fused::roundToBfloat16(@0)", operands);
  return to.isF32() ? operands[0] : std::string();
}

} // namespace meshc::dfg

#include "dialects/dfg/IR/DfgInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/dfg/IR/DfgOps.cpp.inc"
