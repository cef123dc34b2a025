//===- LegalizeStructure.cpp - Structural ONNX ops -> dfg -----------------===//
//
// Part of meshc. Unsqueeze, Squeeze, Concat, Gather, Slice, Split, Expand,
// the reductions, CumSum and TopK. Operands that ONNX passes as tensors but
// that must be known at compile time (axes, starts, sizes, shapes) are read as
// constants.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/STLExtras.h"

#include <onnx/onnx_pb.h>

#include <limits>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Unsqueeze-13(x, axes) -> dfg.unsqueeze(x) axes
LogicalResult legalizeUnsqueeze(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  FailureOr<SmallVector<int64_t>> axes = ctx.constantInts(1, "axes");
  if (failed(axes))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  return ctx.emit<dfg::UnsqueezeOp>(dfg::unsqueezeShape(in.getShape(), *axes),
                                    in.getElementType(), ctx.input(0),
                                    ctx.builder().getDenseI64ArrayAttr(*axes));
}

/// Squeeze-13(x, axes?) -> dfg.squeeze(x) axes; no axes: every 1-dimension.
LogicalResult legalizeSqueeze(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  SmallVector<int64_t> axes;
  if (ctx.input(1)) {
    FailureOr<SmallVector<int64_t>> given = ctx.constantInts(1, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else {
    for (auto [i, d] : llvm::enumerate(in.getShape())) {
      if (ShapedType::isDynamic(d))
        return ctx.error("Squeeze without axes on " +
                         dfg::formatShape(in.getShape()) + ": dimension " +
                         std::to_string(i) +
                         " is dynamic, so whether it is 1 is unknown");
      if (d == 1)
        axes.push_back(i);
    }
  }
  return ctx.emit<dfg::SqueezeOp>(dfg::squeezeShape(in.getShape(), axes),
                                  in.getElementType(), ctx.input(0),
                                  ctx.builder().getDenseI64ArrayAttr(axes));
}

/// Concat(x0, ..., xn) axis -> dfg.concat
LogicalResult legalizeConcat(NodeContext &ctx) {
  if (failed(ctx.requireAllInputs()))
    return failure();
  if (!ctx.attr("axis"))
    return ctx.error("Concat without the required 'axis' attribute");
  SmallVector<Value> inputs;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.inputType(i).getElementType() != ctx.inputType(0).getElementType())
      return ctx.error("input " + std::to_string(i) +
                       " has a different element type from input 0");
    inputs.push_back(ctx.input(i));
    shapes.push_back(ctx.inputType(i).getShape());
  }
  int64_t axis = ctx.attrInt("axis", 0);
  return ctx.emit<dfg::ConcatOp>(dfg::concatShape(shapes, axis),
                                 ctx.inputType(0).getElementType(), inputs,
                                 axis);
}

/// Pad(x, pads, constant_value?, axes?) in mode "constant": along each
/// padded axis, blocks of the constant concatenated before and after x
/// (padAxis). MobileBERT pads its shifted trigram embeddings so. Pads may
/// be symbolic where they are at least 0 at every size (Mamba-2 pads the
/// sequence up to a multiple of its chunk); a negative pad crops first
/// (a slice). Other modes are refused by name.
LogicalResult legalizePad(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant")
    return ctx.error("Pad mode '" + mode +
                     "' is not supported (only 'constant')");
  RankedTensorType in = ctx.inputType(0);
  int64_t rank = in.getRank();
  FailureOr<SmallVector<AffineExpr>> pads = ctx.symbolicInts(1, "pads");
  if (failed(pads))
    return failure();
  SmallVector<int64_t> axes;
  if (ctx.input(3)) {
    FailureOr<SmallVector<int64_t>> given = ctx.constantInts(3, "axes");
    if (failed(given))
      return failure();
    for (int64_t a : *given) {
      if (a < -rank || a >= rank)
        return ctx.error("axis " + std::to_string(a) +
                         " is out of range for an input of rank " +
                         std::to_string(rank));
      axes.push_back(a < 0 ? a + rank : a);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads->size()) != 2 * n)
    return ctx.error("pads has " + std::to_string(pads->size()) +
                     " entries for " + std::to_string(n) + " padded axes");
  for (AffineExpr p : *pads)
    if (!isa<AffineConstantExpr>(p) && !isNonNegative(p))
      return ctx.error("pads of " + ctx.dimTable().format(p) +
                       ", which may be negative: meshc pads by symbolic "
                       "amounts that are at least 0 at every size");
  Value fill;
  if (Value given = ctx.input(2)) {
    RankedTensorType t = ctx.inputType(2);
    if (t.getElementType() != in.getElementType() ||
        !(t.getRank() == 0 || (t.getRank() == 1 && t.getDimSize(0) == 1)))
      return ctx.error("constant_value must be a scalar of the input's type");
    fill = given;
  } else {
    fill = ctx.scalar(0, in.getElementType());
  }
  Value x = ctx.input(0);
  for (auto [j, axis] : llvm::enumerate(axes)) {
    // A negative pad crops (RWKV's time shift, ZeroPad2d((0, 0, 1, -1))).
    AffineExpr zero = getAffineConstantExpr(0, ctx.builder().getContext());
    AffineExpr before = (*pads)[j], after = (*pads)[j + n];
    auto negative = [](AffineExpr e) -> int64_t {
      auto c = dyn_cast<AffineConstantExpr>(e);
      return c && c.getValue() < 0 ? -c.getValue() : 0;
    };
    if (int64_t cropBefore = negative(before), cropAfter = negative(after);
        cropBefore || cropAfter) {
      int64_t size = cast<RankedTensorType>(x.getType()).getDimSize(axis);
      if (!ShapedType::isDynamic(size) && cropBefore + cropAfter > size)
        return ctx.error("pads crop " + std::to_string(cropBefore + cropAfter) +
                         " elements of axis " + std::to_string(axis) +
                         ", which has " + std::to_string(size));
      int64_t end =
          cropAfter ? -cropAfter : std::numeric_limits<int64_t>::max();
      FailureOr<Value> cropped = sliceAxis(ctx, x, axis, cropBefore, end);
      if (failed(cropped))
        return failure();
      x = ctx.refineType(*cropped);
      if (cropBefore)
        before = zero;
      if (cropAfter)
        after = zero;
    }
    FailureOr<Value> padded = padAxis(ctx, x, axis, before, after, fill);
    if (failed(padded))
      return failure();
    x = *padded;
  }
  return ctx.setResults(x);
}

/// If(cond) then_branch else_branch, where the condition is known at
/// import (a constant, or a comparison of sizes the symbolic folding
/// decides: TorchScript's `x.squeeze(d)` of a dynamic dimension tests
/// Shape(x)[d] == 1) -> the chosen branch's nodes, in place. A condition
/// known only at run time is refused by name.
LogicalResult legalizeIf(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  auto literal = ctx.input(0).getDefiningOp<dfg::ConstantOp>();
  auto values =
      literal ? dyn_cast<DenseIntElementsAttr>(literal.getValue()) : nullptr;
  if (!values || values.getNumElements() != 1) {
    // A condition that is a graph input (Optimum's merged decoder's
    // use_cache_branch; its ONNX name is the node's input's) can be fixed
    // for the compile.
    if (isa<BlockArgument>(ctx.input(0))) {
      const std::string &name = ctx.node().input(0);
      return ctx.error(
          "If on graph input '" + name +
          "', known only at run time, is not supported: give it a value at "
          "compile time with --input-value " + name +
          "=VALUE (one executable per value)");
    }
    return ctx.error("If on a condition computed at run time is not "
                     "supported (meshc takes an If whose condition the "
                     "import decides: a constant, a comparison of sizes, or "
                     "a graph input given --input-value)");
  }
  bool taken = !(*values.getValues<APInt>().begin()).isZero();
  const onnx::AttributeProto *branch =
      ctx.attr(taken ? "then_branch" : "else_branch");
  if (!branch || !branch->has_g())
    return ctx.error(std::string("If without a '") +
                     (taken ? "then_branch" : "else_branch") + "' graph");
  FailureOr<SmallVector<Value>> outputs = ctx.inlineGraph(branch->g());
  if (failed(outputs))
    return failure();
  if (outputs->size() != ctx.numOutputs())
    return ctx.error("the If's branch has " + std::to_string(outputs->size()) +
                     " outputs for the node's " +
                     std::to_string(ctx.numOutputs()));
  return ctx.setResults(*outputs);
}

/// Gather(data, indices) axis -> dfg.gather
LogicalResult legalizeGather(NodeContext &ctx) {
  if (!ctx.input(0) && ctx.rawInput(0))
    return legalizePackedGather(ctx);
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType data = ctx.inputType(0), indices = ctx.inputType(1);
  int64_t axis = ctx.attrInt("axis", 0);
  return ctx.emit<dfg::GatherOp>(
      dfg::gatherShape(data.getShape(), indices.getShape(), axis),
      data.getElementType(), ctx.input(0), ctx.input(1), axis);
}

/// GatherND(data, indices) -> dfg.gather_nd (batch_dims from opset 12; 0
/// before)
LogicalResult legalizeGatherND(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType data = ctx.inputType(0), indices = ctx.inputType(1);
  int64_t batchDims = ctx.attrInt("batch_dims", 0);
  return ctx.emit<dfg::GatherNDOp>(
      dfg::gatherNDShape(data.getShape(), indices.getShape(), batchDims),
      data.getElementType(), ctx.input(0), ctx.input(1), batchDims);
}

/// The index tuples of an elements op (GatherElements, ScatterElements):
/// for every element i of the indices (input 1), data's coordinates with
/// coordinate `axis` replaced by indices[i] (negative counting from the end,
/// as gather_nd and scatter_nd take it): the indices and, for every other
/// axis, its position along that axis (a range broadcast to the indices'
/// shape), stacked last, i64 [indices..., rank].
FailureOr<Value> elementTuples(NodeContext &ctx, StringRef opName) {
  RankedTensorType data = ctx.inputType(0), indices = ctx.inputType(1);
  int64_t rank = data.getRank();
  if (indices.getRank() != rank || rank == 0)
    return ctx.error("indices " + dfg::formatShape(indices.getShape()) +
                     " must have the rank of data " +
                     dfg::formatShape(data.getShape()));
  if (!indices.getElementType().isInteger(64) &&
      !indices.getElementType().isInteger(32))
    return ctx.error("indices must be int32 or int64");
  FailureOr<int64_t> normalized =
      normalizedAxis(ctx, opName, ctx.attrInt("axis", 0), rank);
  if (failed(normalized))
    return failure();
  int64_t axis = *normalized;
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  Value index = ctx.input(1);
  if (!indices.getElementType().isInteger(64))
    index = dfg::CastOp::create(b, ctx.loc(),
                                RankedTensorType::get(indices.getShape(), i64),
                                index, i64);
  SmallVector<AffineExpr> dims = ctx.inputDims(1);
  SmallVector<int64_t> shape(indices.getShape());
  // indices * 0: zeros of the indices' shape, to broadcast each range to it.
  FailureOr<Value> zeros = ctx.create<dfg::MulOp>(
      dfg::broadcastShapes(shape, {}), i64, index, ctx.scalar(0, i64));
  if (failed(zeros))
    return failure();
  SmallVector<Value> parts;
  SmallVector<ArrayRef<int64_t>> partShapes;
  for (int64_t k = 0; k < rank; ++k) {
    FailureOr<Value> coordinate = index;
    if (k != axis) {
      if (!dims[k])
        return ctx.error("dimension " + std::to_string(k) +
                         " of the indices has no size meshc can name");
      SmallVector<int64_t> along(rank, 1);
      along[k] = -1;
      FailureOr<Value> range = ctx.iota(dims[k], along);
      coordinate = failed(range)
                       ? range
                       : ctx.create<dfg::AddOp>(
                             dfg::broadcastShapes(shape, shapeOf(*range)), i64,
                             *zeros, *range);
    }
    FailureOr<Value> last =
        failed(coordinate)
            ? coordinate
            : ctx.create<dfg::UnsqueezeOp>(
                  dfg::unsqueezeShape(shapeOf(*coordinate), {rank}), i64,
                  *coordinate, b.getDenseI64ArrayAttr({rank}));
    if (failed(last))
      return failure();
    parts.push_back(*last);
  }
  for (Value p : parts)
    partShapes.push_back(shapeOf(p));
  return ctx.create<dfg::ConcatOp>(dfg::concatShape(partShapes, rank), i64,
                                   ValueRange(parts), rank);
}

/// GatherElements(data, indices) axis -> dfg.gather_nd over the index
/// tuples (elementTuples).
LogicalResult legalizeGatherElements(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  FailureOr<Value> tuples = elementTuples(ctx, "GatherElements");
  if (failed(tuples))
    return failure();
  RankedTensorType data = ctx.inputType(0);
  return ctx.emit<dfg::GatherNDOp>(
      dfg::gatherNDShape(data.getShape(), shapeOf(*tuples), 0),
      data.getElementType(), ctx.input(0), *tuples, 0);
}

/// A scatter's `reduction`: "none" only, as dfg.scatter_nd writes.
/// The scatter's `reduction`: "none" (false) or "add" (true, accumulate).
FailureOr<bool> scatterAccumulates(NodeContext &ctx, StringRef opName) {
  std::string reduction = ctx.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return ctx.error(opName.str() + " reduction '" + reduction +
                     "' is not supported (only 'none' and 'add')");
  return reduction == "add";
}

/// ScatterElements(data, indices, updates) axis -> dfg.scatter_nd of the
/// updates at the index tuples (elementTuples): result = data, then
/// result[tuple(i)] = updates[i] (reduction "none": a later duplicate wins,
/// as scatter_nd writes them in order), or += with reduction "add".
LogicalResult legalizeScatterElements(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  FailureOr<bool> accumulate = scatterAccumulates(ctx, "ScatterElements");
  if (failed(accumulate))
    return failure();
  ArrayRef<int64_t> updates = ctx.inputType(2).getShape(),
                    indices = ctx.inputType(1).getShape();
  bool same = updates.size() == indices.size();
  for (size_t i = 0; same && i < updates.size(); ++i)
    same = updates[i] == indices[i] || ShapedType::isDynamic(updates[i]) ||
           ShapedType::isDynamic(indices[i]);
  if (!same)
    return ctx.error("updates " +
                     dfg::formatShape(ctx.inputType(2).getShape()) +
                     " must have the shape of the indices " +
                     dfg::formatShape(ctx.inputType(1).getShape()));
  FailureOr<Value> tuples = elementTuples(ctx, "ScatterElements");
  if (failed(tuples))
    return failure();
  Value result = dfg::ScatterNDOp::create(ctx.builder(), ctx.loc(),
                                          ctx.inputType(0), ctx.input(0),
                                          *tuples, ctx.input(2), *accumulate);
  return ctx.setResults(result);
}

/// A slice whose starts or ends are symbolic: an end equal to the sliced
/// dimension means "to the end" (INT64_MAX), a start equal to minus the
/// dimension (`x[:, -seq:]` of a [batch, seq] mask) the first element (0);
/// if every bound is then constant, dfg.slice, else dfg.symbolic_slice.
LogicalResult sliceSymbolic(NodeContext &ctx, ArrayRef<int64_t> axes,
                            ArrayRef<int64_t> steps) {
  auto starts = ctx.symbolicInts(1, "starts");
  auto ends = ctx.symbolicInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  int64_t rank = in.getRank();
  if (starts->size() != axes.size() || ends->size() != axes.size() ||
      steps.size() != axes.size())
    return ctx.error("starts, ends, axes and steps must have the same length");
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  MLIRContext *context = ctx.builder().getContext();
  for (auto [start, end, axis] : llvm::zip_equal(*starts, *ends, axes)) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank || !dims[a])
      continue;
    if (dfg::sameDim(end, dims[a]))
      end = getAffineConstantExpr(std::numeric_limits<int64_t>::max(), context);
    if (dfg::sameDim(simplifyAffineExpr(-start, 0, ctx.dimTable().size()),
                     dims[a]))
      start = getAffineConstantExpr(0, context);
  }
  auto constant = [](AffineExpr e) { return isa<AffineConstantExpr>(e); };
  // A symbolic bound never positive but possibly 0 (LED's `x[:, :-pad]`,
  // pad a remainder, which its export traced where pad > 0): ONNX slices
  // nothing at 0 and counts from the back below it, two lengths that no
  // one expression gives. Where the exact import failed, the second one
  // takes the side the export was traced on: the bound negative, counted
  // from the back of the axis, at sizes the executables check.
  for (SmallVector<AffineExpr> *bounds : {&*starts, &*ends})
    for (auto [bound, axis] : llvm::zip(*bounds, axes)) {
      std::optional<int64_t> most = dfg::boundsOf(bound).most;
      if (constant(bound) || !most || *most != 0)
        continue;
      int64_t a = axis < 0 ? axis + rank : axis;
      if (!ctx.assumesTraced() || a < 0 || a >= rank || !dims[a])
        return ctx.error("a slice bound " + ctx.dimTable().format(bound) +
                         " is 0 for some sizes (the slice then takes "
                         "nothing) and negative for others (it then counts "
                         "from the back); meshc cannot size the result for "
                         "both: give the dimensions it depends on with --dim");
      ctx.assumeNegative(bound);
      emitRemark(ctx.loc()) << "slice bound " << ctx.dimTable().format(bound)
                            << " is 0 for some sizes (the slice then takes "
                               "nothing) and negative for others: the model "
                               "is compiled for sizes where it is negative "
                               "(as its export was traced), which the "
                               "executables check";
      bound = simplifyAffineExpr(dims[a] + bound, 0, ctx.dimTable().size());
    }
  OpBuilder &b = ctx.builder();
  if (llvm::all_of(*starts, constant) && llvm::all_of(*ends, constant)) {
    SmallVector<int64_t> s, e;
    for (AffineExpr x : *starts)
      s.push_back(cast<AffineConstantExpr>(x).getValue());
    for (AffineExpr x : *ends)
      e.push_back(cast<AffineConstantExpr>(x).getValue());
    return ctx.emit<dfg::SliceOp>(
        dfg::sliceShape(in.getShape(), s, e, axes, steps), in.getElementType(),
        ctx.input(0), b.getDenseI64ArrayAttr(s), b.getDenseI64ArrayAttr(e),
        b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
  }
  auto normalized = dfg::normalizeAxes(axes, rank);
  if (!normalized)
    return ctx.error(llvm::toString(normalized.takeError()));
  if (llvm::is_contained(steps, 0))
    return ctx.error("a step is 0");
  // Both maps share one symbol list: write them together, then split.
  SmallVector<AffineExpr> all(*starts);
  all.append(ends->begin(), ends->end());
  auto [map, names] = ctx.dimTable().write(all);
  unsigned n = axes.size();
  AffineMap startMap = AffineMap::get(0, map.getNumSymbols(),
                                      map.getResults().take_front(n), context);
  AffineMap endMap = AffineMap::get(0, map.getNumSymbols(),
                                    map.getResults().drop_front(n), context);
  SmallVector<int64_t> shape(in.getShape());
  for (int64_t axis : axes)
    shape[axis < 0 ? axis + rank : axis] = ShapedType::kDynamic;
  Value sliced = dfg::SymbolicSliceOp::create(
      b, ctx.loc(), RankedTensorType::get(shape, in.getElementType()),
      ctx.input(0), startMap, endMap, b.getDenseI64ArrayAttr(axes),
      b.getDenseI64ArrayAttr(steps), names);
  return ctx.setResults(ctx.refineType(sliced));
}

/// Slice-13(x, starts, ends, axes?, steps?) -> dfg.slice with constants,
/// or dfg.symbolic_slice where the bounds depend on symbolic dimensions.
LogicalResult legalizeSlice(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  SmallVector<int64_t> axes, steps;
  int64_t count = ctx.inputType(1).getNumElements();
  if (ctx.input(3)) {
    auto given = ctx.constantInts(3, "axes");
    if (failed(given))
      return failure();
    axes = *given;
  } else {
    for (int64_t i = 0; i < count; ++i)
      axes.push_back(i);
  }
  steps.assign(axes.size(), 1);
  if (ctx.input(4)) {
    auto given = ctx.constantInts(4, "steps");
    if (failed(given))
      return failure();
    steps = *given;
  }
  if (ctx.isSymbolic(1) || ctx.isSymbolic(2))
    return sliceSymbolic(ctx, axes, steps);
  auto starts = ctx.constantInts(1, "starts");
  auto ends = ctx.constantInts(2, "ends");
  if (failed(starts) || failed(ends))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  OpBuilder &b = ctx.builder();
  return ctx.emit<dfg::SliceOp>(
      dfg::sliceShape(in.getShape(), *starts, *ends, axes, steps),
      in.getElementType(), ctx.input(0), b.getDenseI64ArrayAttr(*starts),
      b.getDenseI64ArrayAttr(*ends), b.getDenseI64ArrayAttr(axes),
      b.getDenseI64ArrayAttr(steps));
}

/// The split input 0's `axis` attribute names, normalised (reported at the
/// node when out of range).
FailureOr<int64_t> splitAxis(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  auto normalized =
      dfg::normalizeAxes({ctx.attrInt("axis", 0)}, ctx.inputType(0).getRank());
  if (!normalized)
    return ctx.error(llvm::toString(normalized.takeError()));
  return normalized->front();
}

/// The sizes of input 1 (`split`): none negative, and adding up to `dim`
/// (dimension `axis`) where it is static.
FailureOr<SmallVector<int64_t>> splitSizes(NodeContext &ctx, int64_t dim,
                                           int64_t axis) {
  auto sizes = ctx.constantInts(1, "split");
  if (failed(sizes))
    return failure();
  int64_t total = 0;
  for (int64_t size : *sizes) {
    if (size < 0)
      return ctx.error("split size " + std::to_string(size) + " is negative");
    total += size;
  }
  if (!ShapedType::isDynamic(dim) && total != dim)
    return ctx.error("split sizes add up to " + std::to_string(total) +
                     " but dimension " + std::to_string(axis) + " is " +
                     std::to_string(dim));
  return sizes;
}

/// Split(x, split?) -> dfg.split. Without `split`, Split-13 cuts into equal
/// pieces, one per output; Split-18 cuts into `num_outputs` pieces of
/// ceil(dim / n), the last one smaller.
LogicalResult legalizeSplit(NodeContext &ctx) {
  FailureOr<int64_t> normalized = splitAxis(ctx);
  if (failed(normalized))
    return failure();
  int64_t axis = ctx.attrInt("axis", 0);
  int64_t dim = ctx.inputType(0).getDimSize(*normalized);
  SmallVector<int64_t> sizes;
  if (ctx.input(1)) {
    auto given = splitSizes(ctx, dim, axis);
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    int64_t pieces = ctx.opsetVersion() >= 18
                         ? ctx.attrInt("num_outputs", 0)
                         : static_cast<int64_t>(ctx.numOutputs());
    if (pieces <= 0)
      return ctx.error("Split needs 'split' sizes or 'num_outputs'");
    if (pieces != static_cast<int64_t>(ctx.numOutputs()))
      return ctx.error("num_outputs " + std::to_string(pieces) +
                       " does not match the node's " +
                       std::to_string(ctx.numOutputs()) + " outputs");
    if (ShapedType::isDynamic(dim))
      return ctx.error("Split of dynamic dimension " + std::to_string(axis) +
                       " needs explicit 'split' sizes");
    if (ctx.opsetVersion() < 18 && dim % pieces != 0)
      return ctx.error("dimension of size " + std::to_string(dim) +
                       " does not split evenly into " + std::to_string(pieces) +
                       " outputs");
    // Opset 18: pieces of ceil(dim / pieces), the last one smaller; there
    // must be enough of the dimension for every piece to begin.
    int64_t piece = (dim + pieces - 1) / pieces;
    if ((pieces - 1) * piece > dim)
      return ctx.error("dimension of size " + std::to_string(dim) +
                       " cannot split into " + std::to_string(pieces) +
                       " outputs of at most " + std::to_string(piece) +
                       " (the last would have a negative size)");
    for (int64_t i = 0; i < pieces; ++i)
      sizes.push_back(std::min(piece, dim - i * piece));
  }
  if (sizes.size() != static_cast<size_t>(ctx.numOutputs()))
    return ctx.error(std::to_string(sizes.size()) + " split sizes for " +
                     std::to_string(ctx.numOutputs()) + " outputs");
  auto op = dfg::SplitOp::create(ctx.builder(), ctx.loc(), ctx.input(0), axis,
                                 ctx.builder().getDenseI64ArrayAttr(sizes));
  SmallVector<Value> results(op.getResults());
  return ctx.setResults(results);
}

/// SplitToSequence(x, split?) axis keepdims: the parts as a sequence (held
/// at compile time as the dfg.split's results). `split` is a scalar (parts
/// of that size, the last one smaller) or the sizes; without it, parts of 1,
/// the axis dropped unless keepdims. torch.onnx 2.6's dynamo exporter
/// writes `torch.split` so, read by SequenceAt.
LogicalResult legalizeSplitToSequence(NodeContext &ctx) {
  FailureOr<int64_t> normalized = splitAxis(ctx);
  if (failed(normalized))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  int64_t axis = *normalized;
  int64_t dim = in.getDimSize(axis);
  SmallVector<int64_t> sizes;
  bool scalar = ctx.input(1) && ctx.inputType(1).getRank() == 0;
  if (ctx.input(1) && !scalar) {
    auto given = splitSizes(ctx, dim, axis);
    if (failed(given))
      return failure();
    sizes = *given;
  } else {
    int64_t piece = 1;
    if (scalar) {
      auto given = ctx.constantInts(1, "split");
      if (failed(given))
        return failure();
      piece = given->front();
    }
    if (ShapedType::isDynamic(dim))
      return ctx.error("SplitToSequence of dynamic dimension " +
                       std::to_string(axis) +
                       " into parts of one size: how many is known only at "
                       "run time");
    if (piece <= 0)
      return ctx.error("split size " + std::to_string(piece) +
                       " is not positive");
    for (int64_t at = 0; at < dim; at += piece)
      sizes.push_back(std::min(piece, dim - at));
  }
  if (sizes.empty())
    return ctx.error("SplitToSequence into no parts");
  OpBuilder &b = ctx.builder();
  auto split = dfg::SplitOp::create(b, ctx.loc(), ctx.input(0), axis,
                                    b.getDenseI64ArrayAttr(sizes));
  SmallVector<Value> parts(split.getResults());
  if (!ctx.input(1) && ctx.attrInt("keepdims", 1) == 0)
    for (Value &part : parts) {
      FailureOr<Value> squeezed = ctx.create<dfg::SqueezeOp>(
          dfg::squeezeShape(shapeOf(part), {axis}), in.getElementType(), part,
          b.getDenseI64ArrayAttr({axis}));
      if (failed(squeezed))
        return failure();
      part = *squeezed;
    }
  return ctx.setSequenceResult(parts);
}

/// SequenceConstruct(x0, ..., xn): the inputs as a sequence.
LogicalResult legalizeSequenceConstruct(NodeContext &ctx) {
  if (failed(ctx.requireAllInputs()))
    return failure();
  SmallVector<Value> values;
  for (unsigned i = 0; i < ctx.numInputs(); ++i)
    values.push_back(ctx.input(i));
  return ctx.setSequenceResult(values);
}

/// SequenceAt(seq, position): the tensor at a constant position (negative
/// counts from the end).
LogicalResult legalizeSequenceAt(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> seq = ctx.sequenceInput(0);
  if (failed(seq))
    return failure();
  auto position = ctx.constantInts(1, "position");
  if (failed(position))
    return failure();
  int64_t n = seq->size(), at = position->front();
  if (position->size() != 1 || at < -n || at >= n)
    return ctx.error("position " + std::to_string(at) +
                     " is outside the sequence of " + std::to_string(n) +
                     " tensors");
  return ctx.setResults((*seq)[at < 0 ? at + n : at]);
}

/// SequenceLength(seq): its length, an i64 scalar.
LogicalResult legalizeSequenceLength(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> seq = ctx.sequenceInput(0);
  if (failed(seq))
    return failure();
  auto type = RankedTensorType::get({}, ctx.builder().getI64Type());
  return ctx.setResults(
      dfg::ConstantOp::create(
          ctx.builder(), ctx.loc(),
          DenseElementsAttr::get(type, static_cast<int64_t>(seq->size())))
          .getResult());
}

/// ConcatFromSequence(seq) axis new_axis: the tensors joined along `axis`,
/// or stacked along a new one.
LogicalResult legalizeConcatFromSequence(NodeContext &ctx) {
  FailureOr<SmallVector<Value>> seq = ctx.sequenceInput(0);
  if (failed(seq))
    return failure();
  if (!ctx.attr("axis"))
    return ctx.error("ConcatFromSequence without the required 'axis' "
                     "attribute");
  int64_t axis = ctx.attrInt("axis", 0);
  bool stack = ctx.attrInt("new_axis", 0) != 0;
  Type element =
      cast<RankedTensorType>(seq->front().getType()).getElementType();
  SmallVector<Value> parts;
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : *seq) {
    if (cast<RankedTensorType>(v.getType()).getElementType() != element)
      return ctx.error("the sequence's tensors have different element types");
    if (stack) {
      int64_t rank = shapeOf(v).size() + 1;
      int64_t at = axis < 0 ? axis + rank : axis;
      if (at < 0 || at >= rank)
        return ctx.error("axis " + std::to_string(axis) +
                         " is outside a stacked rank of " +
                         std::to_string(rank));
      FailureOr<Value> unsqueezed = ctx.create<dfg::UnsqueezeOp>(
          dfg::unsqueezeShape(shapeOf(v), {at}), element, v,
          ctx.builder().getDenseI64ArrayAttr({at}));
      if (failed(unsqueezed))
        return failure();
      v = *unsqueezed;
    }
    parts.push_back(v);
  }
  for (Value v : parts)
    shapes.push_back(shapeOf(v));
  return ctx.emit<dfg::ConcatOp>(dfg::concatShape(shapes, axis), element, parts,
                                 axis);
}

/// Expand to a shape computed from symbolic dimensions: an entry equal to
/// the input's aligned dimension becomes 1 (which keeps it); if no symbolic
/// entry is left, dfg.expand, else dfg.symbolic_expand.
LogicalResult expandSymbolic(NodeContext &ctx) {
  auto spec = ctx.symbolicInts(1, "the shape");
  if (failed(spec))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  int64_t rank = std::max<int64_t>(in.getRank(), spec->size());
  SmallVector<int64_t> ints;
  bool open = false;
  for (auto [j, e] : llvm::enumerate(*spec)) {
    int64_t k = static_cast<int64_t>(j) - (rank - in.getRank()) +
                (rank - static_cast<int64_t>(spec->size()));
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      ints.push_back(c.getValue());
    else if (k >= 0 && dfg::sameDim(e, dims[k]))
      ints.push_back(1);
    else
      open = true;
  }
  if (!open)
    return ctx.emit<dfg::ExpandOp>(dfg::expandShape(in.getShape(), ints),
                                   in.getElementType(), ctx.input(0),
                                   ctx.builder().getDenseI64ArrayAttr(ints));
  auto [map, names] = ctx.dimTable().write(*spec);
  Value expanded = dfg::SymbolicExpandOp::create(
      ctx.builder(), ctx.loc(),
      RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                            in.getElementType()),
      ctx.input(0), map, names);
  return ctx.setResults(ctx.refineType(expanded));
}

/// Expand(x, shape) -> dfg.expand with a constant shape.
LogicalResult legalizeExpand(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  if (ctx.isSymbolic(1))
    return expandSymbolic(ctx);
  auto shape = ctx.constantInts(1, "the shape");
  if (failed(shape))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  return ctx.emit<dfg::ExpandOp>(dfg::expandShape(in.getShape(), *shape),
                                 in.getElementType(), ctx.input(0),
                                 ctx.builder().getDenseI64ArrayAttr(*shape));
}

/// Tile(x, repeats): axis i repeated repeats[i] times. Where every repeated
/// axis has size 1 (what the exporters write: torch's repeat_interleave as
/// Unsqueeze + Tile + Reshape, a position table tiled over the batch) it is
/// Expand(x, repeats), symbolic counts included. Otherwise each repeated
/// axis goes through a unit axis in front of it: reshape to [.., 1, d, ..],
/// expand to [.., r, d, ..], reshape to [.., r * d, ..] (with a count
/// computed from symbolic dimensions, the symbolic forms of the three; with
/// a constant count over symbolic sizes, copies joined).
LogicalResult legalizeTile(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  SmallVector<AffineExpr> repeats;
  if (ctx.isSymbolic(1)) {
    auto given = ctx.symbolicInts(1, "repeats");
    if (failed(given))
      return failure();
    repeats = *given;
  } else {
    auto given = ctx.constantInts(1, "repeats");
    if (failed(given))
      return failure();
    for (int64_t r : *given)
      repeats.push_back(getAffineConstantExpr(r, ctx.builder().getContext()));
  }
  if (static_cast<int64_t>(repeats.size()) != in.getRank())
    return ctx.error("repeats has " + std::to_string(repeats.size()) +
                     " entries for an input of rank " +
                     std::to_string(in.getRank()));
  auto constant = [](AffineExpr e) -> std::optional<int64_t> {
    if (auto c = dyn_cast_or_null<AffineConstantExpr>(e))
      return c.getValue();
    return std::nullopt;
  };
  bool unitsOnly = true;
  for (auto [i, r] : llvm::enumerate(repeats)) {
    std::optional<int64_t> count = constant(r);
    if (count && *count < 0)
      return ctx.error("repeats must not be negative, got " +
                       std::to_string(*count) + " for axis " +
                       std::to_string(i));
    if ((!count || *count != 1) && in.getDimSize(i) != 1)
      unitsOnly = false;
  }
  if (unitsOnly)
    return legalizeExpand(ctx);
  Value x = ctx.input(0);
  OpBuilder &b = ctx.builder();
  for (auto [i, r] : llvm::enumerate(repeats)) {
    std::optional<int64_t> count = constant(r);
    if (!count) {
      // A count computed from symbolic dimensions: through a unit axis in
      // front of axis i, expanded to the count and merged with the axis
      // ([.., d, ..] -> [.., 1, d, ..] -> [.., r, d, ..] -> [.., r * d, ..]),
      // at symbolic sizes (DeBERTa-style relative attention tiles its
      // position keys by the batch times the heads).
      SmallVector<AffineExpr> dims = ctx.dimsOf(x);
      if (!r || llvm::any_of(dims, [](AffineExpr d) { return !d; }))
        return ctx.error("repeats of axis " + std::to_string(i) +
                         " follow from no named input dimension, where the "
                         "axis is not of size 1; give them sizes with "
                         "--dim NAME=SIZE");
      int64_t rank = static_cast<int64_t>(dims.size());
      SmallVector<AffineExpr> grown(dims), merged(dims);
      grown.insert(grown.begin() + i, r);
      merged[i] = r * dims[i];
      FailureOr<Value> unit = ctx.create<dfg::UnsqueezeOp>(
          dfg::unsqueezeShape(shapeOf(x), {static_cast<int64_t>(i)}),
          in.getElementType(), x,
          b.getDenseI64ArrayAttr({static_cast<int64_t>(i)}));
      if (failed(unit))
        return failure();
      auto [growMap, growNames] = ctx.dimTable().write(grown);
      Value expanded = ctx.refineType(dfg::SymbolicExpandOp::create(
          b, ctx.loc(),
          RankedTensorType::get(
              SmallVector<int64_t>(rank + 1, ShapedType::kDynamic),
              in.getElementType()),
          ctx.refineType(*unit), growMap, growNames));
      auto [mergeMap, mergeNames] = ctx.dimTable().write(merged);
      x = ctx.refineType(dfg::SymbolicReshapeOp::create(
          b, ctx.loc(),
          RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                                in.getElementType()),
          expanded, mergeMap, mergeNames));
      continue;
    }
    if (*count == 1)
      continue;
    if (!cast<RankedTensorType>(x.getType()).hasStaticShape()) {
      // Symbolic sizes: `count` copies joined along the axis (JetMoE
      // repeats its key heads, k.repeat(1, top_k, 1, 1)).
      constexpr int64_t kMaxCopies = 64;
      if (*count > kMaxCopies)
        return ctx.error(
            "Tile repeats axis " + std::to_string(i) + " of " +
            dfg::formatShape(in.getShape()) + " " + std::to_string(*count) +
            " times; meshc joins at most " + std::to_string(kMaxCopies) +
            " copies of an input with symbolic dimensions");
      if (*count == 0)
        return ctx.error("Tile repeats axis " + std::to_string(i) +
                         " of an input with symbolic dimensions 0 times");
      SmallVector<Value> copies(*count, x);
      SmallVector<ArrayRef<int64_t>> shapes(*count, shapeOf(x));
      FailureOr<Value> joined = ctx.create<dfg::ConcatOp>(
          dfg::concatShape(shapes, i), in.getElementType(), ValueRange(copies),
          static_cast<int64_t>(i));
      if (failed(joined))
        return failure();
      x = *joined;
      continue;
    }
    SmallVector<int64_t> shape(cast<RankedTensorType>(x.getType()).getShape());
    SmallVector<int64_t> unit(shape), wide(shape.size() + 1, 1), merged(shape);
    unit.insert(unit.begin() + i, 1);
    wide[i] = *count;
    SmallVector<int64_t> grown(unit);
    grown[i] = *count;
    merged[i] *= *count;
    FailureOr<Value> split = ctx.create<dfg::ReshapeOp>(
        dfg::reshapeShape(shape, unit), in.getElementType(), x,
        b.getDenseI64ArrayAttr(unit));
    FailureOr<Value> expanded =
        failed(split) ? split
                      : ctx.create<dfg::ExpandOp>(dfg::expandShape(unit, wide),
                                                  in.getElementType(), *split,
                                                  b.getDenseI64ArrayAttr(wide));
    FailureOr<Value> joined =
        failed(expanded)
            ? expanded
            : ctx.create<dfg::ReshapeOp>(dfg::reshapeShape(grown, merged),
                                         in.getElementType(), *expanded,
                                         b.getDenseI64ArrayAttr(merged));
    if (failed(joined))
      return failure();
    x = *joined;
  }
  return ctx.setResults(x);
}

/// ScatterND(data, indices, updates) reduction -> dfg.scatter_nd
/// (reduction "none", or "add" as accumulate).
LogicalResult legalizeScatterND(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  FailureOr<bool> accumulate = scatterAccumulates(ctx, "ScatterND");
  if (failed(accumulate))
    return failure();
  if (!ctx.inputType(1).getElementType().isInteger(64))
    return ctx.error("ScatterND indices must be int64");
  Value result = dfg::ScatterNDOp::create(
      ctx.builder(), ctx.loc(), ctx.inputType(0), ctx.input(0), ctx.input(1),
      ctx.input(2), *accumulate);
  return ctx.setResults(result);
}

/// The axes a Reduce* node reduces, normalized: its `axes` (the opset-18
/// input when `axesFromInput`, else the attribute), all of them when none
/// are given; std::nullopt when it reduces nothing (noop_with_empty_axes).
template <bool axesFromInput>
FailureOr<std::optional<SmallVector<int64_t>>> reduceAxes(NodeContext &ctx) {
  int64_t rank = ctx.inputType(0).getRank();
  SmallVector<int64_t> axes;
  if (axesFromInput) {
    if (ctx.input(1)) {
      auto given = ctx.constantInts(1, "axes");
      if (failed(given))
        return failure();
      axes = *given;
    }
  } else if (auto given = ctx.attrInts("axes")) {
    axes = *given;
  }
  if (axes.empty()) {
    // noop_with_empty_axes (an attribute of the input-axes forms).
    if (axesFromInput && ctx.attrInt("noop_with_empty_axes", 0))
      return std::optional<SmallVector<int64_t>>();
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  auto normalized = dfg::normalizeAxes(axes, rank);
  if (!normalized)
    return ctx.error(llvm::toString(normalized.takeError()));
  return std::optional<SmallVector<int64_t>>(*normalized);
}

/// Reduce(x, axes) keepdims -> dfg.reduce_*; `axesFromInput` selects the
/// opset-18 form (axes as the second input) over the attribute form.
template <typename OpTy, bool axesFromInput>
LogicalResult legalizeReduce(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  auto axes = reduceAxes<axesFromInput>(ctx);
  if (failed(axes))
    return failure();
  if (!*axes)
    return ctx.setResults(ctx.input(0));
  bool keepDims = ctx.attrInt("keepdims", 1) != 0;
  Value result = OpTy::create(
      ctx.builder(), ctx.loc(),
      RankedTensorType::get(dfg::reduceShape(in.getShape(), **axes, keepDims),
                            in.getElementType()),
      ctx.input(0), ctx.builder().getDenseI64ArrayAttr(**axes), keepDims);
  return ctx.setResults(result);
}

/// GlobalAveragePool / GlobalMaxPool(x [batch, channels, spatial...]) ->
/// the mean or the largest over the spatial axes, kept as 1s (a
/// squeeze-and-excitation block's pooling, a CNN's head).
template <typename OpTy>
LogicalResult legalizeGlobalPool(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (in.getRank() < 3)
    return ctx.error("a global pool needs an input [batch, channels, "
                     "spatial...], got " +
                     dfg::formatShape(in.getShape()));
  SmallVector<int64_t> axes;
  for (int64_t a = 2; a < in.getRank(); ++a)
    axes.push_back(a);
  return ctx.setResults(
      OpTy::create(ctx.builder(), ctx.loc(),
                   RankedTensorType::get(
                       dfg::reduceShape(in.getShape(), axes, true),
                       in.getElementType()),
                   ctx.input(0), ctx.builder().getDenseI64ArrayAttr(axes),
                   true)
          .getResult());
}

/// The reductions written with another: ReduceMin as -max(-x), and the
/// sums of a transform of x, then a transform of the sum.
enum class ReduceForm { Min, SumSquare, L1, L2, LogSum };

/// ReduceMin -> neg(reduce_max(neg x)); ReduceSumSquare -> reduce_sum(x x);
/// ReduceL1 -> reduce_sum(|x|); ReduceL2 -> sqrt(reduce_sum(x x));
/// ReduceLogSum -> log(reduce_sum(x)). With noop_with_empty_axes and no
/// axes, the transforms alone (a reduction over nothing).
template <ReduceForm form, bool axesFromInput>
LogicalResult legalizeReduceWith(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Type element = in.getElementType();
  if ((form == ReduceForm::L2 || form == ReduceForm::LogSum) &&
      !isa<FloatType>(element))
    return ctx.error("a reduction of " + dfg::formatShape(in.getShape()) +
                     " integers through a square root or a logarithm: "
                     "meshc takes it of floats only");
  if (element.isInteger(1))
    return ctx.error("a reduction of a bool tensor: ONNX reduces numbers "
                     "only");
  auto axes = reduceAxes<axesFromInput>(ctx);
  if (failed(axes))
    return failure();
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Value x = ctx.input(0);
  auto unary = [&](auto tag, Value v) -> Value {
    using OpTy = decltype(tag);
    return OpTy::create(b, loc, v.getType(), v);
  };
  switch (form) {
  case ReduceForm::Min:
    x = unary(dfg::NegOp(), x);
    break;
  case ReduceForm::SumSquare:
  case ReduceForm::L2:
    x = dfg::MulOp::create(b, loc, in, x, x);
    break;
  case ReduceForm::L1:
    x = dfg::MaxOp::create(b, loc, in, x, unary(dfg::NegOp(), x));
    break;
  case ReduceForm::LogSum:
    break;
  }
  if (*axes) {
    bool keepDims = ctx.attrInt("keepdims", 1) != 0;
    auto type = RankedTensorType::get(
        dfg::reduceShape(in.getShape(), **axes, keepDims), element);
    DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(**axes);
    x = form == ReduceForm::Min
            ? dfg::ReduceMaxOp::create(b, loc, type, x, axesAttr, keepDims)
                  .getResult()
            : dfg::ReduceSumOp::create(b, loc, type, x, axesAttr, keepDims)
                  .getResult();
  }
  switch (form) {
  case ReduceForm::Min:
    x = unary(dfg::NegOp(), x);
    break;
  case ReduceForm::L2:
    x = unary(dfg::SqrtOp(), x);
    break;
  case ReduceForm::LogSum:
    x = unary(dfg::LogOp(), x);
    break;
  default:
    break;
  }
  return ctx.setResults(x);
}

/// ReduceLogSumExp(x, axes) keepdims -> m + log(reduce_sum(exp(x - m))),
/// m = max(reduce_max(x), lowest finite): the largest term is exp(0), so
/// nothing overflows, and a slice of -inf alone gives log(0) = -inf.
template <bool axesFromInput>
LogicalResult legalizeReduceLogSumExp(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Type element = in.getElementType();
  if (!isa<FloatType>(element))
    return ctx.error("ReduceLogSumExp of " + dfg::formatShape(in.getShape()) +
                     " integers: meshc takes it of floats only");
  auto axes = reduceAxes<axesFromInput>(ctx);
  if (failed(axes))
    return failure();
  if (!*axes)
    return ctx.setResults(ctx.input(0));
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  auto kept = RankedTensorType::get(
      dfg::reduceShape(in.getShape(), **axes, true), element);
  DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(**axes);
  Value m = dfg::ReduceMaxOp::create(b, loc, kept, ctx.input(0), axesAttr,
                                     /*keepDims=*/true);
  m = dfg::MaxOp::create(
      b, loc, kept, m, ctx.scalar(-std::numeric_limits<float>::max(), element));
  Value shifted = dfg::SubOp::create(b, loc, in, ctx.input(0), m);
  Value sum = dfg::ReduceSumOp::create(
      b, loc, kept, dfg::ExpOp::create(b, loc, in, shifted), axesAttr,
      /*keepDims=*/true);
  Value result = dfg::AddOp::create(b, loc, kept,
                                    dfg::LogOp::create(b, loc, kept, sum), m);
  if (ctx.attrInt("keepdims", 1) == 0)
    result = dfg::SqueezeOp::create(
        b, loc,
        RankedTensorType::get(dfg::reduceShape(in.getShape(), **axes, false),
                              element),
        result, axesAttr);
  return ctx.setResults(result);
}

/// CumSum(x, axis) exclusive reverse -> dfg.cumsum; the axis (a scalar or
/// one-element tensor) must be a constant.
LogicalResult legalizeCumSum(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  if (in.getElementType().isInteger(1))
    return ctx.error("CumSum of a bool tensor " +
                     dfg::formatShape(in.getShape()) +
                     ": ONNX sums numbers only");
  FailureOr<SmallVector<int64_t>> axis = ctx.constantInts(1, "axis");
  if (failed(axis))
    return failure();
  if (axis->size() != 1)
    return ctx.error("CumSum's axis must hold one value, got " +
                     std::to_string(axis->size()));
  FailureOr<int64_t> a =
      normalizedAxis(ctx, "CumSum", axis->front(), in.getRank());
  if (failed(a))
    return failure();
  OpBuilder &b = ctx.builder();
  Value result = dfg::CumSumOp::create(
      b, ctx.loc(), in, ctx.input(0), b.getI64IntegerAttr(*a),
      b.getBoolAttr(ctx.attrInt("exclusive", 0) != 0),
      b.getBoolAttr(ctx.attrInt("reverse", 0) != 0));
  return ctx.setResults(result);
}

/// A constant of `shape` (1 everywhere but `axis`, of size n) holding
/// f(0), ..., f(n - 1) along `axis`.
template <typename T, typename F>
Value alongAxis(NodeContext &ctx, int64_t rank, int64_t axis, int64_t n,
                Type element, F f) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = n;
  SmallVector<T> values;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(f(i));
  return dfg::ConstantOp::create(
      ctx.builder(), ctx.loc(),
      DenseElementsAttr::get(RankedTensorType::get(shape, element),
                             ArrayRef<T>(values)));
}

/// One round of selection along `axis` (ArgMax's, ArgMin's): the largest value
/// of `work` (kept dimension), and the highest `rank` (f32 along the axis)
/// among the positions that hold it and are not `taken`; `none` (below every
/// rank) elsewhere.
std::pair<Value, Value> selectRound(OpBuilder &b, Location loc, Value work,
                                    int64_t axis, Value rank, Value none,
                                    Value taken) {
  auto workType = cast<RankedTensorType>(work.getType());
  SmallVector<int64_t> keptShape =
      dfg::reduceShape(workType.getShape(), {axis}, /*keepDims=*/true);
  auto boolType = workType.clone(b.getI1Type());
  DenseI64ArrayAttr axes = b.getDenseI64ArrayAttr({axis});
  Value best = dfg::ReduceMaxOp::create(
      b, loc, RankedTensorType::get(keptShape, workType.getElementType()), work,
      axes, true);
  Value hit = dfg::EqualOp::create(b, loc, boolType, work, best);
  if (taken)
    hit = dfg::AndOp::create(b, loc, boolType, hit,
                             dfg::NotOp::create(b, loc, boolType, taken));
  Value ranked = dfg::WhereOp::create(b, loc, workType.clone(b.getF32Type()),
                                      hit, rank, none);
  Value top = dfg::ReduceMaxOp::create(
      b, loc, RankedTensorType::get(keptShape, b.getF32Type()), ranked, axes,
      true);
  return {best, top};
}

/// TopK(X, K) axis largest sorted -> dfg.top_k, in ONNX's order (by value,
/// ties by position) whether `sorted` asks for it or not. K is a constant,
/// or a symbolic size equal to the axis' own, which makes it a sort of the
/// whole axis: JetMoE sorts its chosen experts, a count that grows with the
/// sequence, by `TopK(ids, Shape(ids)[0])`.
LogicalResult legalizeTopK(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  bool integers = isa<IntegerType>(in.getElementType()) &&
                  !in.getElementType().isInteger(1);
  if (!isa<FloatType>(in.getElementType()) && !integers)
    return ctx.error("TopK of " + dfg::formatShape(in.getShape()) +
                     ": meshc selects among numbers, not bools");
  int64_t rank = in.getRank();
  FailureOr<int64_t> normalized =
      normalizedAxis(ctx, "TopK", ctx.attrInt("axis", -1), rank);
  if (failed(normalized))
    return failure();
  int64_t axis = *normalized, n = in.getDimSize(axis);
  FailureOr<SmallVector<AffineExpr>> kv = ctx.symbolicInts(1, "K");
  if (failed(kv))
    return failure();
  if (kv->size() != 1)
    return ctx.error("K must hold one value, got " +
                     std::to_string(kv->size()));
  AffineExpr kExpr = kv->front();
  SmallVector<AffineExpr> dims = ctx.inputDims(0);
  std::optional<int64_t> k;
  if (auto c = dyn_cast<AffineConstantExpr>(kExpr)) {
    if (c.getValue() < 1 || (!ShapedType::isDynamic(n) && c.getValue() > n))
      return ctx.error("K=" + std::to_string(c.getValue()) +
                       " must lie in [1, " +
                       (ShapedType::isDynamic(n) ? std::string("the size")
                                                 : std::to_string(n)) +
                       "], the size of axis " + std::to_string(axis));
    if (c.getValue() != n)
      k = c.getValue();
  } else if (!dims[axis] || dims[axis] != kExpr) {
    std::string axisSize =
        dims[axis] ? ctx.dimTable().format(dims[axis]) : std::string("?");
    return ctx.error("K=" + ctx.dimTable().format(kExpr) +
                     " is neither a constant nor the size of axis " +
                     std::to_string(axis) + " (" + axisSize +
                     "): meshc takes a constant K or sorts the whole axis");
  }
  SmallVector<int64_t> shape(in.getShape());
  if (k)
    shape[axis] = *k;
  OpBuilder &b = ctx.builder();
  auto topK = dfg::TopKOp::create(
      b, ctx.loc(), RankedTensorType::get(shape, in.getElementType()),
      RankedTensorType::get(shape, b.getI64Type()), ctx.input(0),
      b.getI64IntegerAttr(axis), k ? b.getI64IntegerAttr(*k) : IntegerAttr(),
      b.getBoolAttr(ctx.attrInt("largest", 1) != 0));
  return ctx.setResults({topK.getValues(), topK.getIndices()});
}

/// ArgMax / ArgMin(X) axis keepdims select_last_index -> TopK's first round:
/// the largest value along `axis` (of -X for ArgMin), then the first (or
/// last) position that holds it, as int64. Positions run in f32 (exact
/// below 2^24) over a static axis: a router's choice among experts, a
/// greedy token. Integers, or a symbolic axis, take dfg.top_k's first
/// index instead (the first position of the extreme; the last refused by
/// name).
LogicalResult legalizeArgExtreme(NodeContext &ctx, bool isMax) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  StringRef name = isMax ? "ArgMax" : "ArgMin";
  RankedTensorType in = ctx.inputType(0);
  bool integers = isa<IntegerType>(in.getElementType()) &&
                  !in.getElementType().isInteger(1);
  if (!isa<FloatType>(in.getElementType()) && !integers)
    return ctx.error(name.str() + " of " + dfg::formatShape(in.getShape()) +
                     ": meshc selects among numbers, not bools");
  int64_t rank = in.getRank();
  FailureOr<int64_t> normalized =
      normalizedAxis(ctx, name, ctx.attrInt("axis", 0), rank);
  if (failed(normalized))
    return failure();
  int64_t axis = *normalized, n = in.getDimSize(axis);
  bool keepDims = ctx.attrInt("keepdims", 1) != 0;
  bool last = ctx.attrInt("select_last_index", 0) != 0;
  OpBuilder &b = ctx.builder();
  // The [.., 1, ..] positions without the axis unless keepdims.
  auto kept = [&](Value positions) -> Value {
    if (keepDims)
      return positions;
    return dfg::SqueezeOp::create(
        b, ctx.loc(),
        RankedTensorType::get(dfg::reduceShape(in.getShape(), {axis}, false),
                              b.getI64Type()),
        positions, b.getDenseI64ArrayAttr({axis}));
  };
  if (integers || ShapedType::isDynamic(n)) {
    // Integers (CLIP's text pooling takes the argmax of the token ids) or
    // a symbolic axis: TopK's first element, which breaks ties by the
    // lower position as ArgMax does, exactly for any value.
    if (last)
      return ctx.error(name.str() + " with select_last_index of " +
                       dfg::formatShape(in.getShape()) +
                       ": meshc takes the last of equal values over static "
                       "float axes only");
    SmallVector<int64_t> first(in.getShape());
    first[axis] = 1;
    auto topK = dfg::TopKOp::create(
        b, ctx.loc(), RankedTensorType::get(first, in.getElementType()),
        RankedTensorType::get(first, b.getI64Type()), ctx.input(0),
        b.getI64IntegerAttr(axis), b.getI64IntegerAttr(1),
        b.getBoolAttr(isMax));
    return ctx.setResults(ctx.refineType(kept(topK.getIndices())));
  }
  if (n > (int64_t(1) << 24))
    return ctx.error(name.str() + " along an axis of " + std::to_string(n) +
                     " positions: meshc counts positions in f32, exact up "
                     "to 2^24");
  Location loc = ctx.loc();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  SmallVector<int64_t> shape(in.getShape());
  auto wideType = RankedTensorType::get(shape, f32);
  SmallVector<int64_t> keptShape =
      dfg::reduceShape(shape, {axis}, /*keepDims=*/true);
  auto bestType = RankedTensorType::get(keptShape, f32);
  Value work = ctx.input(0);
  if (in.getElementType() != f32)
    work = dfg::CastOp::create(b, loc, wideType, work, f32);
  if (!isMax)
    work = dfg::NegOp::create(b, loc, wideType, work);
  // The wanted position ranks highest: itself for the last, n - 1 - it for
  // the first.
  Value ranks = alongAxis<float>(ctx, rank, axis, n, f32, [&](int64_t i) {
    return float(last ? i : n - 1 - i);
  });
  Value index =
      selectRound(b, loc, work, axis, ranks, ctx.scalar(-1.0, f32), Value())
          .second;
  if (!last)
    index = dfg::SubOp::create(b, loc, bestType, ctx.scalar(n - 1, f32), index);
  return ctx.setResults(
      kept(dfg::CastOp::create(b, loc, bestType.clone(i64), index, i64)));
}

/// OneHot(indices, depth, values) axis -> where(unsqueeze(indices, axis) ==
/// [0, depth) along axis, values[1], values[0]), negative indices counting
/// from depth. The depth must be a constant.
LogicalResult legalizeOneHot(NodeContext &ctx) {
  if (failed(ctx.requireInputs(3)))
    return failure();
  RankedTensorType in = ctx.inputType(0), values = ctx.inputType(2);
  if (!isa<IntegerType>(in.getElementType()))
    return ctx.error("OneHot takes integer indices here, got " +
                     dfg::formatShape(in.getShape()) + " of floats");
  if (values.getRank() != 1 || values.getDimSize(0) != 2)
    return ctx.error("values must be [off, on], got " +
                     dfg::formatShape(values.getShape()));
  FailureOr<SmallVector<int64_t>> depthValues = ctx.constantInts(1, "depth");
  if (failed(depthValues))
    return failure();
  if (depthValues->size() != 1 || depthValues->front() < 1)
    return ctx.error("depth must be one positive integer");
  int64_t depth = depthValues->front(), rank = in.getRank() + 1;
  FailureOr<int64_t> normalized =
      normalizedAxis(ctx, "OneHot", ctx.attrInt("axis", -1), rank, "a result");
  if (failed(normalized))
    return failure();
  int64_t axis = *normalized;
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Type i64 = b.getI64Type(), i1 = b.getI1Type();
  Value index = ctx.input(0);
  SmallVector<int64_t> shape(in.getShape());
  if (!in.getElementType().isInteger(64))
    index = dfg::CastOp::create(b, loc, RankedTensorType::get(shape, i64),
                                index, i64);
  auto indexType = RankedTensorType::get(shape, i64);
  Value negative = dfg::LessOp::create(b, loc, RankedTensorType::get(shape, i1),
                                       index, ctx.scalar(0, i64));
  Value wrapped =
      dfg::AddOp::create(b, loc, indexType, index, ctx.scalar(depth, i64));
  index = dfg::WhereOp::create(b, loc, indexType, negative, wrapped, index);
  FailureOr<Value> lifted =
      ctx.create<dfg::UnsqueezeOp>(dfg::unsqueezeShape(shape, {axis}), i64,
                                   index, b.getDenseI64ArrayAttr({axis}));
  if (failed(lifted))
    return failure();
  Value classes = alongAxis<int64_t>(ctx, rank, axis, depth, i64,
                                     [](int64_t i) { return i; });
  FailureOr<Value> hit = binary<dfg::EqualOp>(ctx, *lifted, classes, i1);
  if (failed(hit))
    return failure();
  Value off = dfg::SliceOp::create(b, loc, ctx.input(2), {0}, {1}, {0}, {1});
  Value on = dfg::SliceOp::create(b, loc, ctx.input(2), {1}, {2}, {0}, {1});
  return ctx.emit<dfg::WhereOp>(dfg::broadcastShapes(shapeOf(*hit), {1}),
                                values.getElementType(), *hit, on, off);
}

} // namespace

void populateStructureLegalizations(LegalizationTable &table) {
  table.add("", "Unsqueeze", 13, legalizeUnsqueeze);
  table.add("", "Squeeze", 13, legalizeSqueeze);
  table.add("", "Concat", 13, legalizeConcat);
  table.add("", "If", 13, legalizeIf);
  table.add("", "Pad", 11, legalizePad);
  table.add("", "Pad", 18, legalizePad); // + axes
  table.add("", "Gather", 13, legalizeGather);
  table.add("", "GatherND", 11, legalizeGatherND);
  table.add("", "GatherElements", 13, legalizeGatherElements);
  table.add("", "Slice", 13, legalizeSlice);
  table.add("", "Split", 13, legalizeSplit);
  table.add("", "Split", 18, legalizeSplit); // + num_outputs
  table.add("", "SplitToSequence", 11, legalizeSplitToSequence);
  table.add("", "SequenceConstruct", 11, legalizeSequenceConstruct);
  table.add("", "SequenceAt", 11, legalizeSequenceAt);
  table.add("", "SequenceLength", 11, legalizeSequenceLength);
  table.add("", "ConcatFromSequence", 11, legalizeConcatFromSequence);
  table.add("", "Expand", 13, legalizeExpand);
  table.add("", "Tile", 13, legalizeTile);
  table.add("", "ScatterND", 13, legalizeScatterND);
  table.add("", "ScatterND", 16, legalizeScatterND); // + reduction
  table.add("", "ScatterElements", 11, legalizeScatterElements);
  table.add("", "ScatterElements", 13, legalizeScatterElements); // + bf16
  table.add("", "ScatterElements", 16, legalizeScatterElements); // + reduction
  table.add("", "ScatterElements", 18, legalizeScatterElements); // + max, min
  // Axes moved from attribute to input: ReduceSum at 13, the others at 18.
  table.add("", "GlobalAveragePool", 1, legalizeGlobalPool<dfg::ReduceMeanOp>);
  table.add("", "GlobalAveragePool", 22,
            legalizeGlobalPool<dfg::ReduceMeanOp>); // + bf16
  table.add("", "GlobalMaxPool", 1, legalizeGlobalPool<dfg::ReduceMaxOp>);
  table.add("", "GlobalMaxPool", 22,
            legalizeGlobalPool<dfg::ReduceMaxOp>); // + bf16
  table.add("", "ReduceMean", 13, legalizeReduce<dfg::ReduceMeanOp, false>);
  table.add("", "ReduceMean", 18, legalizeReduce<dfg::ReduceMeanOp, true>);
  table.add("", "ReduceMax", 13, legalizeReduce<dfg::ReduceMaxOp, false>);
  table.add("", "ReduceMax", 18, legalizeReduce<dfg::ReduceMaxOp, true>);
  table.add("", "ReduceSum", 13, legalizeReduce<dfg::ReduceSumOp, true>);
  table.add("", "ReduceMin", 13, legalizeReduceWith<ReduceForm::Min, false>);
  table.add("", "ReduceMin", 18, legalizeReduceWith<ReduceForm::Min, true>);
  table.add("", "ReduceSumSquare", 13,
            legalizeReduceWith<ReduceForm::SumSquare, false>);
  table.add("", "ReduceSumSquare", 18,
            legalizeReduceWith<ReduceForm::SumSquare, true>);
  table.add("", "ReduceL1", 13, legalizeReduceWith<ReduceForm::L1, false>);
  table.add("", "ReduceL1", 18, legalizeReduceWith<ReduceForm::L1, true>);
  table.add("", "ReduceL2", 13, legalizeReduceWith<ReduceForm::L2, false>);
  table.add("", "ReduceL2", 18, legalizeReduceWith<ReduceForm::L2, true>);
  table.add("", "ReduceLogSum", 13,
            legalizeReduceWith<ReduceForm::LogSum, false>);
  table.add("", "ReduceLogSum", 18,
            legalizeReduceWith<ReduceForm::LogSum, true>);
  table.add("", "ReduceLogSumExp", 13, legalizeReduceLogSumExp<false>);
  table.add("", "ReduceLogSumExp", 18, legalizeReduceLogSumExp<true>);
  table.add("", "CumSum", 11, legalizeCumSum);
  table.add("", "CumSum", 14, legalizeCumSum); // + f16, bf16
  table.add("", "TopK", 11, legalizeTopK);
  table.add("", "OneHot", 11, legalizeOneHot);
  for (int64_t version : {11, 12, 13}) { // + select_last_index, + bf16
    table.add("", "ArgMax", version, [](NodeContext &ctx) {
      return legalizeArgExtreme(ctx, /*isMax=*/true);
    });
    table.add("", "ArgMin", version, [](NodeContext &ctx) {
      return legalizeArgExtreme(ctx, /*isMax=*/false);
    });
  }
}

FailureOr<Value> sliceAxis(NodeContext &ctx, Value x, int64_t axis,
                           int64_t start, int64_t end, int64_t step) {
  OpBuilder &b = ctx.builder();
  SmallVector<int64_t> starts{start}, ends{end}, axes{axis}, steps{step};
  return ctx.create<dfg::SliceOp>(
      dfg::sliceShape(shapeOf(x), starts, ends, axes, steps), elementOf(x), x,
      b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
      b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
}

FailureOr<Value> padAxis(NodeContext &ctx, Value x, int64_t axis,
                         int64_t before, int64_t after, Value fill) {
  MLIRContext *context = ctx.builder().getContext();
  return padAxis(ctx, x, axis, getAffineConstantExpr(before, context),
                 getAffineConstantExpr(after, context), fill);
}

FailureOr<Value> padAxis(NodeContext &ctx, Value x, int64_t axis,
                         AffineExpr before, AffineExpr after, Value fill) {
  auto isZero = [](AffineExpr e) {
    auto c = dyn_cast<AffineConstantExpr>(e);
    return c && c.getValue() == 0;
  };
  if (isZero(before) && isZero(after))
    return x;
  OpBuilder &b = ctx.builder();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<AffineExpr> dims = ctx.dimsOf(x);
  auto block = [&](AffineExpr size) -> FailureOr<Value> {
    SmallVector<AffineExpr> shape(dims);
    shape[axis] = size;
    SmallVector<int64_t> ints;
    for (AffineExpr e : shape)
      if (auto c = dyn_cast_or_null<AffineConstantExpr>(e))
        ints.push_back(c.getValue());
    auto fillType = cast<RankedTensorType>(fill.getType());
    if (static_cast<int64_t>(ints.size()) == rank)
      return ctx.create<dfg::ExpandOp>(
          dfg::expandShape(fillType.getShape(), ints), type.getElementType(),
          fill, b.getDenseI64ArrayAttr(ints));
    if (llvm::any_of(shape, [](AffineExpr e) { return !e; }))
      return ctx.error("padding axis " + std::to_string(axis) + " of " +
                       dfg::formatShape(type.getShape()) +
                       " beside a dimension meshc cannot size symbolically");
    auto [map, names] = ctx.dimTable().write(shape);
    Value filled = dfg::SymbolicExpandOp::create(
        b, ctx.loc(),
        RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                              type.getElementType()),
        fill, map, names);
    return ctx.refineType(filled);
  };
  SmallVector<Value> parts;
  for (auto [size, first] :
       {std::pair(before, true), std::pair(after, false)}) {
    if (!first)
      parts.push_back(x);
    if (isZero(size))
      continue;
    FailureOr<Value> part = block(size);
    if (failed(part))
      return failure();
    parts.push_back(*part);
  }
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value v : parts)
    shapes.push_back(cast<RankedTensorType>(v.getType()).getShape());
  FailureOr<Value> joined =
      ctx.create<dfg::ConcatOp>(dfg::concatShape(shapes, axis),
                                type.getElementType(), ValueRange(parts), axis);
  if (failed(joined))
    return failure();
  return ctx.refineType(*joined);
}

} // namespace meshc::onnximport
