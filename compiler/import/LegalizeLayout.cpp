//===- LegalizeLayout.cpp - Layout and pass-through ONNX ops -> dfg -------===//
//
// Part of meshc. Reshape, Transpose, Flatten, Softmax, Identity, Dropout and
// Constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "compiler/import/OnnxTensors.h"
#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// The entries of a reshape's shape `spec` as expressions of the input's
/// dimensions `in`: 0 copies, the one -1 is the input's elements over the
/// other entries' (dfg::divideDims; a floor quotient where they do not
/// cancel). Null entries where an expression is unknown.
SmallVector<AffineExpr> reshapeExprs(ArrayRef<AffineExpr> in,
                                     ArrayRef<AffineExpr> spec) {
  SmallVector<AffineExpr> exprs(spec), known;
  int64_t inferred = -1;
  for (auto [i, e] : llvm::enumerate(exprs)) {
    if (auto c = dyn_cast_or_null<AffineConstantExpr>(e)) {
      if (c.getValue() == 0)
        e = i < in.size() ? in[i] : AffineExpr();
      else if (c.getValue() == -1) {
        inferred = i;
        continue;
      }
    }
    known.push_back(e);
  }
  if (inferred >= 0)
    exprs[inferred] = dfg::divideDims(in, known);
  return exprs;
}

/// ONNX's Reshape needs its shape to hold exactly its input's elements
/// (onnxruntime refuses a run where it does not). Where the input's
/// dimensions are symbolic and meshc's expressions do not show the two
/// counts equal (a window partition padded at run time but cropped only
/// where the export was traced; a -1 that the other entries need not
/// divide), the executables check them at their inputs' sizes and refuse
/// others by name rather than reading the tensor as another shape.
LogicalResult checkReshapeCount(NodeContext &ctx, ArrayRef<AffineExpr> in,
                                ArrayRef<AffineExpr> out) {
  auto [a, b] = dfg::withoutCommonFactors(in, out);
  if (!a || !b || dfg::sameDim(a, b))
    return success();
  auto ca = dyn_cast<AffineConstantExpr>(a),
       cb = dyn_cast<AffineConstantExpr>(b);
  if (ca && cb)
    return ctx.error("the shape holds " + std::to_string(cb.getValue()) +
                     " parts where the input has " +
                     std::to_string(ca.getValue()) +
                     " (after their common factors): a reshape keeps the "
                     "element count");
  ctx.assumeSame(a, b, "the input's elements and the shape's, after their "
                       "common factors: a reshape keeps the element count");
  return success();
}

LogicalResult reshapeTo(NodeContext &ctx, ArrayRef<int64_t> spec) {
  RankedTensorType in = ctx.inputType(0);
  if (!in.hasStaticShape()) {
    SmallVector<AffineExpr> specExprs;
    for (int64_t s : spec)
      specExprs.push_back(getAffineConstantExpr(s, ctx.builder().getContext()));
    SmallVector<AffineExpr> inDims = ctx.inputDims(0);
    if (failed(checkReshapeCount(ctx, inDims, reshapeExprs(inDims, specExprs))))
      return failure();
  }
  return ctx.emit<dfg::ReshapeOp>(dfg::reshapeShape(in.getShape(), spec),
                                  in.getElementType(), ctx.input(0),
                                  ctx.builder().getDenseI64ArrayAttr(spec));
}

/// Reshape to a shape computed from symbolic dimensions: an entry that
/// repeats the input's dimension at its index becomes 0 (copy) and a single
/// other symbolic entry -1 (inferred), so that dfg.reshape states it; else
/// dfg.symbolic_reshape with every entry's expression.
LogicalResult reshapeSymbolic(NodeContext &ctx) {
  auto spec = ctx.symbolicInts(1, "the shape");
  if (failed(spec))
    return failure();
  SmallVector<AffineExpr> in = ctx.inputDims(0);
  if (failed(checkReshapeCount(ctx, in, reshapeExprs(in, *spec))))
    return failure();
  SmallVector<int64_t> ints;
  SmallVector<size_t> open;
  bool infers = false;
  for (auto [i, e] : llvm::enumerate(*spec)) {
    if (auto c = dyn_cast<AffineConstantExpr>(e)) {
      ints.push_back(c.getValue());
      infers |= c.getValue() == -1;
    } else if (i < in.size() && dfg::sameDim(e, in[i])) {
      ints.push_back(0);
    } else {
      ints.push_back(-1);
      open.push_back(i);
    }
  }
  if (open.empty() || (open.size() == 1 && !infers))
    return reshapeTo(ctx, ints);

  // Every entry as an expression: 0 copies, -1 is the element count over
  // the other entries.
  SmallVector<AffineExpr> exprs = reshapeExprs(in, *spec);
  SmallVector<int64_t> shape;
  for (AffineExpr &e : exprs) {
    if (!e)
      return ctx.error("the shape copies or infers a dimension that follows "
                       "from no named input dimension");
    e = simplifyAffineExpr(e, 0, ctx.dimTable().size());
    auto c = dyn_cast<AffineConstantExpr>(e);
    shape.push_back(c ? c.getValue() : ShapedType::kDynamic);
  }
  auto [map, names] = ctx.dimTable().write(exprs);
  RankedTensorType in0 = ctx.inputType(0);
  return ctx.setResults(dfg::SymbolicReshapeOp::create(
                            ctx.builder(), ctx.loc(),
                            RankedTensorType::get(shape, in0.getElementType()),
                            ctx.input(0), map, names)
                            .getResult());
}

/// Reshape-13(data, shape) -> dfg.reshape(data) to shape  (0 copies, -1 infers)
LogicalResult legalizeReshape13(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  if (ctx.isSymbolic(1))
    return reshapeSymbolic(ctx);
  FailureOr<SmallVector<int64_t>> spec = ctx.constantInts(1, "the shape");
  return failed(spec) ? failure() : reshapeTo(ctx, *spec);
}

/// Reshape-14 adds allowzero; with allowzero = 1 a 0 entry is a literal 0,
/// which dfg.reshape (copy semantics) cannot express.
LogicalResult legalizeReshape14(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  // Symbolic entries are sizes (at least 1), never a literal 0.
  if (ctx.isSymbolic(1))
    return reshapeSymbolic(ctx);
  FailureOr<SmallVector<int64_t>> spec = ctx.constantInts(1, "the shape");
  if (failed(spec))
    return failure();
  if (ctx.attrInt("allowzero", 0) && llvm::is_contained(*spec, 0))
    return ctx.error("allowzero = 1 with a 0 in the shape (an empty "
                     "dimension) is not supported");
  return reshapeTo(ctx, *spec);
}

/// Transpose(x, perm) -> dfg.transpose(x, perm); perm defaults to reversed.
LogicalResult legalizeTranspose(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  SmallVector<int64_t> perm;
  if (auto given = ctx.attrInts("perm"))
    perm = *given;
  else
    for (int64_t i = in.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  return ctx.emit<dfg::TransposeOp>(dfg::transposeShape(in.getShape(), perm),
                                    in.getElementType(), ctx.input(0),
                                    ctx.builder().getDenseI64ArrayAttr(perm));
}

/// Flatten(x, axis) -> reshape to [prod(dims[:axis]), prod(dims[axis:])].
LogicalResult legalizeFlatten(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  ArrayRef<int64_t> shape = ctx.inputType(0).getShape();
  int64_t rank = shape.size();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  auto product = [](ArrayRef<int64_t> dims) -> std::optional<int64_t> {
    int64_t p = 1;
    for (int64_t d : dims) {
      if (ShapedType::isDynamic(d))
        return std::nullopt;
      p *= d;
    }
    return p;
  };
  std::optional<int64_t> outer = product(shape.take_front(axis));
  std::optional<int64_t> inner = product(shape.drop_front(axis));
  // Copy a lone leading dimension; otherwise one side must be static.
  if (axis == 1)
    return reshapeTo(ctx, {0, -1});
  if (outer)
    return reshapeTo(ctx, {*outer, -1});
  if (inner)
    return reshapeTo(ctx, {-1, *inner});
  return ctx.error("cannot flatten " + dfg::formatShape(shape) + " at axis " +
                   std::to_string(axis) +
                   ": both sides have dynamic dimensions");
}

/// Softmax-13(x, axis) -> dfg.softmax(x, axis). (Before opset 13, Softmax
/// flattened to 2-D, which is why no earlier entry exists.)
LogicalResult legalizeSoftmax(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  int64_t axis = ctx.attrInt("axis", -1);
  if (!isa<FloatType>(in.getElementType()))
    return ctx.error("Softmax needs a floating-point input");
  if (in.getRank() == 0 || axis < -in.getRank() || axis >= in.getRank())
    return ctx.error("axis " + std::to_string(axis) +
                     " is out of range for rank " +
                     std::to_string(in.getRank()));
  Value result =
      dfg::SoftmaxOp::create(ctx.builder(), ctx.loc(), in, ctx.input(0), axis);
  return ctx.setResults(result);
}

/// Identity(x) -> x
LogicalResult legalizeIdentity(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  return ctx.setResults(ctx.input(0));
}

/// Dropout(x, ratio, training_mode = false) -> x  (inference)
LogicalResult legalizeDropout(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  if (ctx.input(2)) {
    FailureOr<SmallVector<int64_t>> training =
        ctx.constantInts(2, "training_mode");
    if (failed(training))
      return failure();
    if (!training->empty() && training->front() != 0)
      return ctx.error("training_mode is true; meshc compiles inference");
  }
  return ctx.setResults(ctx.input(0));
}

/// Constant(value = t) -> dfg.constant t; a tensor too large for a literal,
/// stored in place in the model file (raw_data, packed float_data), -> a
/// dfg.weight that refers to it there, as an initializer would (LED's
/// TorchScript export writes its 256 x 257 band masks so).
LogicalResult legalizeConstant(NodeContext &ctx) {
  OpBuilder &b = ctx.builder();
  DenseElementsAttr value;
  if (const onnx::AttributeProto *a = ctx.attr("value"); a && a->has_t()) {
    FailureOr<RankedTensorType> type =
        tensorType(*b.getContext(), a->t(), ctx.loc());
    if (failed(type))
      return failure();
    // (tensorType has checked that the byte count fits.)
    int64_t bytes = *tensorBytes(type->getShape(), type->getElementType());
    bool large =
        type->getNumElements() > dfg::ConstantOp::kMaxConstantElements &&
        !type->getElementType().isInteger(1);
    std::optional<DataRef> ref = large ? ctx.constantData(bytes) : std::nullopt;
    if (a->t().data_location() == onnx::TensorProto::EXTERNAL) {
      // In a file beside the model (as an exporter saves a model over
      // 2 GB): large, referred to there as a weight; else read now.
      FailureOr<DataRef> external = ctx.externalData(a->t(), bytes);
      if (failed(external))
        return failure();
      if (large) {
        ref = *external;
      } else {
        SmallString<256> path(ctx.modelFolder());
        llvm::sys::path::append(path, external->file);
        auto buffer = llvm::MemoryBuffer::getFileSlice(path, external->length,
                                                       external->offset);
        if (!buffer)
          return ctx.error("cannot read the external data of tensor '" +
                           a->t().name() + "' from '" + external->file +
                           "': " + buffer.getError().message());
        return ctx.setResults(
            dfg::ConstantOp::create(b, ctx.loc(),
                                    rawToAttr(*type, (*buffer)->getBuffer()))
                .getResult());
      }
    }
    if (ref)
      return ctx.setResults(
          dfg::WeightOp::create(b, ctx.loc(), *type, ctx.node().output(0),
                                ref->file, ref->offset, ref->length)
              .getResult());
  }
  if (const onnx::AttributeProto *a = ctx.attr("value")) {
    FailureOr<DenseElementsAttr> attr = ctx.tensorAttr(*a);
    if (failed(attr))
      return failure();
    value = *attr;
  } else if (const onnx::AttributeProto *a = ctx.attr("value_float")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getF32Type()),
                                   a->f());
  } else if (const onnx::AttributeProto *a = ctx.attr("value_int")) {
    value = DenseElementsAttr::get(RankedTensorType::get({}, b.getI64Type()),
                                   static_cast<int64_t>(a->i()));
  } else if (const onnx::AttributeProto *a = ctx.attr("value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getF32Type()),
        ArrayRef<float>(v));
  } else if (const onnx::AttributeProto *a = ctx.attr("value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return ctx.error("Constant without a supported value attribute (value, "
                     "value_float(s), value_int(s)); sparse and string "
                     "constants are not supported");
  }
  return ctx.setResults(
      dfg::ConstantOp::create(b, ctx.loc(), value).getResult());
}

} // namespace

void populateLayoutLegalizations(LegalizationTable &table) {
  table.add("", "Reshape", 13, legalizeReshape13);
  table.add("", "Reshape", 14, legalizeReshape14);
  table.add("", "Transpose", 13, legalizeTranspose);
  table.add("", "Flatten", 13, legalizeFlatten);
  table.add("", "Softmax", 13, legalizeSoftmax);
  table.add("", "Identity", 13, legalizeIdentity);
  table.add("", "Dropout", 13, legalizeDropout);
  table.add("", "Constant", 13, legalizeConstant);
}

} // namespace meshc::onnximport
