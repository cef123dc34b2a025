//===- LegalizeContraction.cpp - MatMul and Gemm -> dfg -------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"
#include "compiler/import/OnnxTensors.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/IR/Matchers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/FormatVariadic.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// `v` reshaped as `spec` says (0 keeps a dimension, -1 infers one).
FailureOr<Value> reshapeTo(NodeContext &ctx, Value v, ArrayRef<int64_t> spec) {
  FailureOr<Value> r =
      ctx.create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(v), spec),
                                 cast<ShapedType>(v.getType()).getElementType(),
                                 v, ctx.builder().getDenseI64ArrayAttr(spec));
  return failed(r) ? r : FailureOr<Value>(ctx.refineType(*r));
}

/// `v` transposed by `perm`; `v` itself for the identity.
FailureOr<Value> transposeBy(NodeContext &ctx, Value v,
                             ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return v;
  return ctx.create<dfg::TransposeOp>(
      dfg::transposeShape(shapeOf(v), perm),
      cast<ShapedType>(v.getType()).getElementType(), v,
      ctx.builder().getDenseI64ArrayAttr(perm));
}

/// `v` (of rank 2 or more) with its last two axes swapped: a matrix
/// transposed, per batch.
FailureOr<Value> transposeLastTwo(NodeContext &ctx, Value v) {
  int64_t rank = cast<ShapedType>(v.getType()).getRank();
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 2], perm[rank - 1]);
  FailureOr<Value> t = transposeBy(ctx, v, perm);
  return failed(t) ? t : FailureOr<Value>(ctx.refineType(*t));
}

/// `v` combined into the running `acc` by OpTy (a sum, product or max over
/// taps or axes); `v` itself while `acc` is still null.
template <typename OpTy>
FailureOr<Value> accumulate(NodeContext &ctx, Value acc, Value v,
                            Type element) {
  return acc ? binary<OpTy>(ctx, acc, v, element) : FailureOr<Value>(v);
}

/// The windows a convolution or a pooling reads, for a kernel of `kernel`
/// positions per spatial axis of an input [batch, channels, spatial...]:
/// the input padded with `fill` (pads, or auto_pad's SAME/VALID), and per
/// spatial axis the slice of each kernel offset (starting at the offset
/// times the dilation, stepping by the stride).
struct SlidingWindows {
  Value padded;
  SmallVector<int64_t> strides;
  /// bounds[i][k]: the slice (start, end) of offset k along spatial axis i.
  SmallVector<SmallVector<std::pair<int64_t, int64_t>>> bounds;
  /// Every kernel position, one offset per spatial axis.
  SmallVector<SmallVector<int64_t>> taps;
  /// Whether any padding was added.
  bool hasPadding = false;
  /// Per spatial axis: the input's length (dynamic where the size is
  /// symbolic), the padding before and after it, the fill ceil_mode adds
  /// past the end, the kernel's taps, dilation and stride, and, over a
  /// static size, the number of windows.
  struct Axis {
    int64_t length = ShapedType::kDynamic, before = 0, after = 0, extra = 0,
            taps = 1, dilation = 1, stride = 1, windows = 0;
    bool symbolic() const { return ShapedType::isDynamic(length); }
    /// Whether ceil_mode's last window may run past the end.
    bool overruns() const { return extra > 0; }
  };
  SmallVector<Axis> axes;
  /// Whether ceil_mode added positions past the padded input.
  bool overruns() const {
    return llvm::any_of(axes, [](const Axis &a) { return a.overruns(); });
  }
};

/// `ceilMode` (pooling's ceil_mode = 1) counts a last window that starts
/// inside the input or its padding before it but runs past the padded end
/// (ONNX's rule, as onnxruntime and torch apply it); the input is padded
/// with `fill` up to its end.
FailureOr<SlidingWindows> slidingWindows(NodeContext &ctx, Value x,
                                         ArrayRef<int64_t> kernel, Value fill,
                                         bool ceilMode = false) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getRank() - 2;
  StringRef op = ctx.node().op_type();
  auto perAxis = [&](StringRef name, int64_t count,
                     int64_t dflt) -> FailureOr<SmallVector<int64_t>> {
    std::optional<SmallVector<int64_t>> v = ctx.attrInts(name);
    if (!v)
      return SmallVector<int64_t>(count, dflt);
    if (static_cast<int64_t>(v->size()) != count)
      return ctx.error(name + " has " + std::to_string(v->size()) +
                       " entries for " + std::to_string(n) +
                       " spatial axes (expected " + std::to_string(count) +
                       ")");
    return *v;
  };
  FailureOr<SmallVector<int64_t>> strides = perAxis("strides", n, 1),
                                  dilations = perAxis("dilations", n, 1),
                                  pads = perAxis("pads", 2 * n, 0);
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (autoPad != "NOTSET" && autoPad != "VALID" && !same)
    return ctx.error(op + " auto_pad '" + autoPad + "' is not supported");
  SlidingWindows w;
  w.padded = x;
  w.strides = *strides;
  w.bounds.resize(n);
  w.axes.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t stride = (*strides)[i], dilation = (*dilations)[i],
            taps = kernel[i], length = type.getDimSize(2 + i);
    if (stride < 1 || dilation < 1 || taps < 1)
      return ctx.error(op + " needs positive strides, dilations and kernel "
                            "sizes");
    int64_t span = dilation * (taps - 1);
    int64_t before = (*pads)[i], after = (*pads)[n + i];
    if (autoPad == "VALID") {
      before = after = 0;
    } else if (same) {
      if (stride != 1)
        return ctx.error(op + " auto_pad '" + autoPad + "' with stride " +
                         std::to_string(stride) + " is not supported");
      before = autoPad == "SAME_UPPER" ? span / 2 : span - span / 2;
      after = span - before;
    }
    if (before < 0 || after < 0)
      return ctx.error(op + " needs non-negative pads");
    w.hasPadding |= before > 0 || after > 0;
    bool symbolic = ShapedType::isDynamic(length);
    int64_t paddedLength = symbolic ? length : length + before + after;
    if (!symbolic && paddedLength <= span)
      return ctx.error(op + "'s kernel spans " + std::to_string(span + 1) +
                       " positions, more than the padded size " +
                       std::to_string(paddedLength));
    // Over a symbolic size, the kernel's span is the least padded size:
    // where the size grows with one name, that name's least size, which
    // the executables check and the shape arithmetic may assume.
    if (symbolic && span + 1 - before - after > 1)
      ctx.noteDimAtLeast(x, 2 + i, span + 1 - before - after);
    // ceil_mode: one more window where the last one only partly fits (a
    // stride of 1 always fits whole windows), as long as it starts inside
    // the input or the padding before it.
    int64_t extra = 0, windows = 0;
    if (!symbolic) {
      windows = (paddedLength - span - 1) / stride + 1;
      if (ceilMode && (paddedLength - span - 1) % stride != 0 &&
          windows * stride < length + before)
        ++windows;
      extra = std::max<int64_t>(0, (windows - 1) * stride + span + 1 -
                                       paddedLength);
    } else if (ceilMode && stride > 1) {
      // Over a symbolic size, stride - 1 more positions make the slices
      // below count ceil((padded - span - 1) / stride) + 1 windows; the
      // last one starts at most stride - 1 past the last whole window, so
      // inside the input or its padding before it where
      // after + stride <= span + 1, which torch's pooling (padding at most
      // half the kernel, the kernel at least the stride) meets.
      if (after + stride > span + 1)
        return ctx.error(op + " with ceil_mode 1 and stride " +
                         std::to_string(stride) + " over a symbolic size " +
                         "with " + std::to_string(after) + " padding after "
                         "a kernel spanning " + std::to_string(span + 1) +
                         " positions is not supported (whether the last "
                         "window counts depends on the size)");
      extra = stride - 1;
    }
    w.axes[i] = {length, before,   after,  extra,
                 taps,   dilation, stride, windows};
    FailureOr<Value> p =
        padAxis(ctx, w.padded, 2 + i, before, after + extra, fill);
    if (failed(p))
      return failure();
    w.padded = *p;
    paddedLength += extra;
    // Every tap's slice counts the same windows: over a static size up to
    // the last window's position, else up to the end less what the later
    // taps reach (stepping by the stride, ceil((padded - span) / stride)).
    for (int64_t k = 0; k < taps; ++k) {
      int64_t start = k * dilation, end;
      if (stride == 1 || symbolic)
        end = k == taps - 1 ? std::numeric_limits<int64_t>::max()
                            : -(dilation * (taps - 1 - k));
      else
        end = start + ((paddedLength - span - 1) / stride) * stride + 1;
      w.bounds[i].push_back({start, end});
    }
  }
  int64_t count = 1;
  for (int64_t k : kernel)
    count *= k;
  for (int64_t t = 0; t < count; ++t) {
    SmallVector<int64_t> tap(n);
    for (int64_t i = n - 1, rest = t; i >= 0; --i) {
      tap[i] = rest % kernel[i];
      rest /= kernel[i];
    }
    w.taps.push_back(std::move(tap));
  }
  return w;
}

/// The window of kernel position `tap`: a slice per spatial axis.
FailureOr<Value> tapWindow(NodeContext &ctx, const SlidingWindows &w,
                           ArrayRef<int64_t> tap) {
  Value window = w.padded;
  for (auto [i, k] : llvm::enumerate(tap)) {
    auto [start, end] = w.bounds[i][k];
    FailureOr<Value> s =
        sliceAxis(ctx, window, 2 + i, start, end, w.strides[i]);
    if (failed(s))
      return failure();
    window = *s;
  }
  return window;
}

/// Conv over any number of spatial axes (torch's Conv1d: LFM2's short
/// convolutions, depthwise and causal; Conv2d: Nystromformer's depthwise
/// convolution of the values, a vision model's patches), written with
/// meshc's own ops: for each kernel tap (one position of the kernel) the
/// window of the padded input it reads (slidingWindows) times the tap's
/// weights, summed over the taps: an elementwise product by the tap's column
/// where each output channel reads one input channel (depthwise), or a
/// product by the tap's [out, in] matrix per group over the flattened
/// spatial positions; with one group, instead, one projection of all the
/// taps' windows stacked channels-last ([batch, positions, in * taps] by
/// the weight viewed as [in * taps, out], so tensor parallelism splits it
/// as any projection), moved back to [batch, out, spatial...]. Exact; the
/// work is the convolution's own. Strides
/// above 1 step the windows over symbolic sizes too (wav2vec2's feature
/// encoder), and any number of spatial sizes may be symbolic (an image's
/// height and width: the flattened positions are their product).
LogicalResult legalizeConv(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType x = ctx.inputType(0), w = ctx.inputType(1);
  if (x.getElementType() != w.getElementType())
    return ctx.mismatchedTypes();
  if (x.getRank() < 3 || w.getRank() != x.getRank())
    return ctx.error("Conv needs an input [batch, channels, spatial...] and a "
                     "weight [out, in / group, kernel...] of the same rank, "
                     "got " +
                     dfg::formatShape(x.getShape()) + " by " +
                     dfg::formatShape(w.getShape()));
  Type element = x.getElementType();
  int64_t n = x.getRank() - 2;
  int64_t channels = x.getDimSize(1), out = w.getDimSize(0),
          perGroup = w.getDimSize(1);
  int64_t groups = ctx.attrInt("group", 1);
  // The weight says how many channels the input has: a graph input's
  // symbolic name for them (Optimum's vision exports name them
  // num_channels) is sized so, and the import redone.
  if (w.hasStaticShape() && ShapedType::isDynamic(channels) && groups >= 1 &&
      ctx.pinDim(ctx.input(0), 1, perGroup * groups))
    return ctx.error("the input's channels are symbolic (imported again with "
                     "them sized " +
                     std::to_string(perGroup * groups) + ")");
  if (!w.hasStaticShape() || ShapedType::isDynamic(channels))
    return ctx.error("Conv needs static channels and weight shape, got " +
                     dfg::formatShape(x.getShape()) + " by " +
                     dfg::formatShape(w.getShape()));
  if (groups < 1 || channels % groups || out % groups ||
      perGroup * groups != channels)
    return ctx.error("Conv of " + std::to_string(channels) + " channels in " +
                     std::to_string(groups) + " groups by a weight " +
                     dfg::formatShape(w.getShape()) +
                     " is not a valid grouping");
  ArrayRef<int64_t> kernel = w.getShape().drop_front(2);
  if (std::optional<SmallVector<int64_t>> k = ctx.attrInts("kernel_shape");
      k && ArrayRef<int64_t>(*k) != kernel)
    return ctx.error("kernel_shape " + dfg::formatShape(*k) +
                     " does not match the weight's kernel " +
                     dfg::formatShape(kernel));
  FailureOr<SlidingWindows> windows =
      slidingWindows(ctx, ctx.input(0), kernel, ctx.scalar(0, element));
  if (failed(windows))
    return failure();
  bool depthwise = perGroup == 1 && out == channels;
  int64_t outGroup = out / groups;
  // A product over the flattened positions, [batch, out, positions],
  // reshaped back to [batch, out, spatial...] with `window`'s spatial
  // sizes: a dfg.reshape where at most one of them is symbolic, else a
  // dfg.symbolic_reshape over their expressions (an image's height and
  // width, named by the graph's inputs).
  auto unflatten = [&](Value flat, Value window) -> FailureOr<Value> {
    SmallVector<int64_t> spec = {0, out};
    int64_t symbolic = 0;
    for (int64_t size : shapeOf(window).drop_front(2)) {
      symbolic += ShapedType::isDynamic(size);
      spec.push_back(ShapedType::isDynamic(size) ? -1 : size);
    }
    if (symbolic <= 1)
      return reshapeTo(ctx, flat, spec);
    SmallVector<AffineExpr> exprs = ctx.dimsOf(window);
    exprs[1] = getAffineConstantExpr(out, ctx.builder().getContext());
    SmallVector<int64_t> shape;
    for (auto [i, e] : llvm::enumerate(exprs)) {
      if (!e)
        return ctx.error("Conv's output dimension " + std::to_string(i) +
                         " follows from no named input dimension");
      shape.push_back(i == 1 ? out : shapeOf(window)[i]);
    }
    auto [map, names] = ctx.dimTable().write(exprs);
    return ctx.refineType(dfg::SymbolicReshapeOp::create(
        ctx.builder(), ctx.loc(), RankedTensorType::get(shape, element), flat,
        map, names));
  };
  SmallVector<int64_t> column(n + 1, 1); // [out, 1...]
  column[0] = out;
  Value acc;
  bool oneProjection = !depthwise && groups == 1;
  if (oneProjection) {
    // One projection: the taps' windows [batch, in, positions] stacked as
    // [batch, in, taps, positions], moved to [batch, positions, in * taps]
    // and multiplied by the weight viewed as [in * taps, out] (the taps
    // in the kernel's row-major order, as the weight holds them); the
    // result moved back to [batch, out, spatial...].
    SmallVector<Value> stacked;
    Value shapeSource; // a window: the output's spatial sizes
    for (ArrayRef<int64_t> tap : windows->taps) {
      FailureOr<Value> window = tapWindow(ctx, *windows, tap);
      if (failed(window))
        return failure();
      if (!shapeSource)
        shapeSource = *window;
      FailureOr<Value> one = reshapeTo(ctx, *window, {0, channels, 1, -1});
      if (failed(one))
        return failure();
      stacked.push_back(*one);
    }
    int64_t taps = static_cast<int64_t>(stacked.size());
    FailureOr<Value> windowsOf = stacked.front();
    if (taps > 1) {
      SmallVector<ArrayRef<int64_t>> shapes;
      for (Value v : stacked)
        shapes.push_back(shapeOf(v));
      windowsOf = ctx.create<dfg::ConcatOp>(dfg::concatShape(shapes, 2),
                                            element, stacked, 2);
    }
    FailureOr<Value> rows =
        failed(windowsOf)
            ? windowsOf
            : transposeBy(ctx, ctx.refineType(*windowsOf), {0, 3, 1, 2});
    if (succeeded(rows))
      rows = reshapeTo(ctx, ctx.refineType(*rows), {0, 0, channels * taps});
    FailureOr<Value> matrix = reshapeTo(ctx, ctx.input(1), {out, channels * taps});
    if (succeeded(matrix))
      matrix = transposeBy(ctx, *matrix, {1, 0});
    if (failed(rows) || failed(matrix))
      return failure();
    FailureOr<Value> product = ctx.create<dfg::MatMulOp>(
        dfg::matmulShape(shapeOf(*rows), {channels * taps, out}), element,
        *rows, ctx.refineType(*matrix));
    FailureOr<Value> moved =
        failed(product) ? product
                        : transposeBy(ctx, ctx.refineType(*product), {0, 2, 1});
    if (succeeded(moved) && n > 1)
      moved = unflatten(ctx.refineType(*moved), shapeSource);
    if (failed(moved))
      return failure();
    acc = ctx.refineType(*moved);
  } else {
    for (ArrayRef<int64_t> tap : windows->taps) {
      FailureOr<Value> window = tapWindow(ctx, *windows, tap);
      if (failed(window))
        return failure();
      Value weights = ctx.input(1);
      for (auto [i, k] : llvm::enumerate(tap)) {
        FailureOr<Value> ws = sliceAxis(ctx, weights, 2 + i, k, k + 1);
        if (failed(ws))
          return failure();
        weights = ctx.refineType(*ws);
      }
      FailureOr<Value> term;
      if (depthwise) {
        // One weight per channel.
        FailureOr<Value> c = reshapeTo(ctx, weights, column);
        term = failed(c) ? c : binary<dfg::MulOp>(ctx, *window, *c, element);
      } else {
        // Per group: [groups, out / groups, in / groups] by [batch, groups,
        // in / groups, positions].
        FailureOr<Value> matrix =
            reshapeTo(ctx, weights, {groups, outGroup, perGroup});
        FailureOr<Value> grouped =
            failed(matrix) ? matrix
                           : reshapeTo(ctx, *window, {0, groups, perGroup, -1});
        FailureOr<Value> p =
            failed(grouped)
                ? grouped
                : ctx.create<dfg::MatMulOp>(
                      dfg::matmulShape(shapeOf(*matrix), shapeOf(*grouped)),
                      element, *matrix, *grouped);
        FailureOr<Value> product =
            failed(p) ? p : reshapeTo(ctx, ctx.refineType(*p), {0, out, -1});
        if (failed(product))
          return failure();
        term = n == 1 ? FailureOr<Value>(ctx.refineType(*product))
                      : unflatten(ctx.refineType(*product), *window);
      }
      if (failed(term))
        return failure();
      FailureOr<Value> sum =
          accumulate<dfg::AddOp>(ctx, acc, ctx.refineType(*term), element);
      if (failed(sum))
        return failure();
      acc = *sum;
    }
  }
  if (Value bias = ctx.input(2)) {
    FailureOr<Value> c = reshapeTo(ctx, bias, column);
    FailureOr<Value> sum =
        failed(c) ? c : binary<dfg::AddOp>(ctx, acc, *c, element);
    if (failed(sum))
      return failure();
    acc = *sum;
  }
  return ctx.setResults(acc);
}

/// A constant of `shape` holding `values` (row-major) as `element`, a
/// floating-point type (rounded to nearest).
Value floatConstant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                    ArrayRef<double> values, Type element) {
  auto attr = DenseElementsAttr::get(
      RankedTensorType::get(shape, b.getF64Type()), values);
  if (!element.isF64())
    attr = attr.mapValues(element, [&](const APFloat &v) {
      APFloat f = v;
      bool lost;
      f.convert(cast<FloatType>(element).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      return f.bitcastToAPInt();
    });
  return dfg::ConstantOp::create(b, loc, RankedTensorType::get(shape, element),
                                 attr);
}

/// The divisor of each window of an AveragePool: the positions it covers
/// within the padded input (count_include_pad = 1) or within the input
/// itself (0), never those ceil_mode adds past the end; a product over the
/// spatial axes, [1, 1, windows...] of `element`. Along a static size the
/// counts are constants; along a symbolic one they are computed in the
/// graph as the windows' sums of ones over the input (and over the padding
/// where it counts), padded and sliced as the input is.
FailureOr<Value> poolDivisors(NodeContext &ctx, Value x,
                              const SlidingWindows &w, bool includePad,
                              Type element) {
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  int64_t rank = w.axes.size() + 2;
  Value product;
  for (auto [i, axis] : llvm::enumerate(w.axes)) {
    Value counts;
    if (!axis.symbolic()) {
      int64_t lo = includePad ? 0 : axis.before,
              hi = axis.before + axis.length + (includePad ? axis.after : 0);
      SmallVector<double> values;
      for (int64_t o = 0; o < axis.windows; ++o) {
        int64_t covered = 0;
        for (int64_t k = 0; k < axis.taps; ++k) {
          int64_t at = o * axis.stride + k * axis.dilation;
          covered += at >= lo && at < hi;
        }
        values.push_back(static_cast<double>(covered));
      }
      SmallVector<int64_t> shape(rank, 1);
      shape[2 + i] = axis.windows;
      counts = floatConstant(b, loc, shape, values, element);
    } else {
      AffineExpr length = ctx.dimsOf(x)[2 + i];
      if (!length)
        return ctx.error(ctx.node().op_type() +
                         " along an axis whose length follows from no named "
                         "input dimension; give it a size with --dim "
                         "NAME=SIZE");
      auto [map, names] = ctx.dimTable().write({length});
      Value ones = ctx.refineType(dfg::SymbolicExpandOp::create(
          b, loc, RankedTensorType::get({ShapedType::kDynamic}, element),
          ctx.scalar(1.0, element), map, names));
      FailureOr<Value> covered =
          padAxis(ctx, ones, 0, axis.before, axis.after,
                  ctx.scalar(includePad ? 1.0 : 0.0, element));
      if (succeeded(covered))
        covered = padAxis(ctx, *covered, 0, 0, axis.extra,
                          ctx.scalar(0.0, element));
      if (failed(covered))
        return failure();
      for (auto [start, end] : w.bounds[i]) {
        FailureOr<Value> tap =
            sliceAxis(ctx, *covered, 0, start, end, axis.stride);
        FailureOr<Value> sum =
            failed(tap) ? tap
                        : accumulate<dfg::AddOp>(ctx, counts, *tap, element);
        if (failed(sum))
          return failure();
        counts = *sum;
      }
      SmallVector<int64_t> unit;
      for (int64_t a = 0; a < rank; ++a)
        if (a != 2 + static_cast<int64_t>(i))
          unit.push_back(a);
      FailureOr<Value> placed = ctx.create<dfg::UnsqueezeOp>(
          dfg::unsqueezeShape(shapeOf(counts), unit), element, counts,
          b.getDenseI64ArrayAttr(unit));
      if (failed(placed))
        return failure();
      counts = *placed;
    }
    FailureOr<Value> next =
        accumulate<dfg::MulOp>(ctx, product, counts, element);
    if (failed(next))
      return failure();
    product = *next;
  }
  return product;
}

/// MaxPool and AveragePool over any number of spatial axes, from the same
/// sliding windows as Conv: the largest (MaxPool, padded with -inf) or the
/// mean (AveragePool, padded with 0) of the kernel positions' windows.
/// ceil_mode's last, partial windows (Funnel's pooling of an odd sequence)
/// read the fill past the end. An average divides by the kernel size, or,
/// where windows cover padding that does not count (count_include_pad = 0)
/// or run past the end (ceil_mode), by each window's own count
/// (poolDivisors), symbolic sizes included. MaxPool's Indices output is
/// refused.
LogicalResult legalizePool(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  StringRef op = ctx.node().op_type();
  bool max = op == "MaxPool";
  RankedTensorType x = ctx.inputType(0);
  Type element = x.getElementType();
  if (!isa<FloatType>(element))
    return ctx.error(op + " of a tensor that is not floating-point is not "
                          "supported");
  if (x.getRank() < 3)
    return ctx.error(op +
                     " needs an input [batch, channels, spatial...], "
                     "got " +
                     dfg::formatShape(x.getShape()));
  if (ctx.numOutputs() > 1 && !ctx.node().output(1).empty())
    return ctx.error("MaxPool's Indices output is not supported");
  std::optional<SmallVector<int64_t>> kernel = ctx.attrInts("kernel_shape");
  if (!kernel || static_cast<int64_t>(kernel->size()) != x.getRank() - 2)
    return ctx.error(op + " needs a kernel_shape with one size per spatial "
                          "axis");
  double fill = max ? -std::numeric_limits<double>::infinity() : 0.0;
  FailureOr<SlidingWindows> windows =
      slidingWindows(ctx, ctx.input(0), *kernel, ctx.scalar(fill, element),
                     ctx.attrInt("ceil_mode", 0) != 0);
  if (failed(windows))
    return failure();
  bool includePad = ctx.attrInt("count_include_pad", 0) != 0;
  bool varies = windows->overruns() || (windows->hasPadding && !includePad);
  // Where the padding counts and a last window runs past the end, the
  // padding after the input counts and the positions past it do not (torch's
  // rule, and onnxruntime's for pads equal at both ends); with other pads
  // onnxruntime's own kernels disagree among themselves.
  if (!max && includePad)
    for (auto [i, axis] : llvm::enumerate(windows->axes))
      if (axis.overruns() && axis.before != axis.after)
        return ctx.error(
            "AveragePool with ceil_mode 1 and count_include_pad 1 over pads "
            "that differ at the two ends of spatial axis " +
            std::to_string(i) + " (" + std::to_string(axis.before) + " and " +
            std::to_string(axis.after) +
            ") is not supported (the divisor of its last windows has no one "
            "convention)");
  Value divisors;
  if (!max && varies) {
    FailureOr<Value> d =
        poolDivisors(ctx, ctx.input(0), *windows, includePad, element);
    if (failed(d))
      return failure();
    divisors = *d;
  }
  Value acc;
  for (ArrayRef<int64_t> tap : windows->taps) {
    FailureOr<Value> window = tapWindow(ctx, *windows, tap);
    if (failed(window))
      return failure();
    FailureOr<Value> next =
        max ? accumulate<dfg::MaxOp>(ctx, acc, *window, element)
            : accumulate<dfg::AddOp>(ctx, acc, *window, element);
    if (failed(next))
      return failure();
    acc = *next;
  }
  if (!max && (divisors || windows->taps.size() > 1)) {
    FailureOr<Value> mean = binary<dfg::DivOp>(
        ctx, acc,
        divisors ? divisors
                 : ctx.scalar(double(windows->taps.size()), element),
        element);
    if (failed(mean))
      return failure();
    acc = *mean;
  }
  return ctx.setResults(acc);
}

/// The cosines and sines of 2*pi*k*n/N for k, n in [0, N), N the length
/// of axis `axis` of `like`, as two [N, N] tensors of `element` (both are
/// symmetric), and N as a scalar of `element` (the inverse's divisor).
struct DftTables {
  Value cos, sin, count;
};

/// A static N gives constants computed in double; a symbolic N builds them
/// in the graph from k*n mod N (exact integers), so the angles stay in
/// [0, 2*pi).
FailureOr<DftTables> dftTables(NodeContext &ctx, Value like,
                                             int64_t axis, Type element) {
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  int64_t n = cast<RankedTensorType>(like.getType()).getDimSize(axis);
  const double twoPi = 2.0 * M_PI;
  if (!ShapedType::isDynamic(n)) {
    if (n > 8192)
      return ctx.error("DFT of length " + std::to_string(n) +
                       ": meshc computes it as a product by an [N, N] table, "
                       "which it builds up to N = 8192");
    SmallVector<double> c(n * n), sn(n * n);
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < n; ++j) {
        double angle =
            twoPi * static_cast<double>((k * j) % n) / static_cast<double>(n);
        c[k * n + j] = std::cos(angle);
        sn[k * n + j] = std::sin(angle);
      }
    auto table = [&](ArrayRef<double> values) {
      return floatConstant(b, loc, {n, n}, values, element);
    };
    return DftTables{table(c), table(sn),
                     ctx.scalar(static_cast<double>(n), element)};
  }
  AffineExpr length = ctx.dimsOf(like)[axis];
  if (!length)
    return ctx.error("DFT along an axis whose length follows from no named "
                     "input dimension; give it a size with --dim NAME=SIZE");
  Type i64 = b.getI64Type();
  FailureOr<Value> col = ctx.iota(length, {-1, 1});
  FailureOr<Value> row = ctx.iota(length, {1, -1});
  if (failed(col) || failed(row))
    return failure();
  auto square = RankedTensorType::get({n, n}, i64);
  Value kn = ctx.refineType(dfg::MulOp::create(b, loc, square, *col, *row));
  auto [map, names] = ctx.dimTable().write({length});
  Value size =
      dfg::SizesOp::create(b, loc, RankedTensorType::get({}, i64), map, names);
  // k*n mod N, both non-negative: k*n - (k*n / N) * N.
  Value quotient = ctx.refineType(dfg::DivOp::create(b, loc, square, kn, size));
  Value wrapped = ctx.refineType(dfg::SubOp::create(
      b, loc, square, kn,
      ctx.refineType(dfg::MulOp::create(b, loc, square, quotient, size))));
  auto angles = RankedTensorType::get({n, n}, element);
  auto scalarType = RankedTensorType::get({}, element);
  Value count = dfg::CastOp::create(b, loc, scalarType, size, element);
  Value step = dfg::DivOp::create(b, loc, scalarType,
                                  ctx.scalar(twoPi, element), count);
  Value angle = ctx.refineType(dfg::MulOp::create(
      b, loc, angles,
      ctx.refineType(dfg::CastOp::create(b, loc, angles, wrapped, element)),
      step));
  return DftTables{ctx.refineType(dfg::CosOp::create(b, loc, angles, angle)),
                   ctx.refineType(dfg::SinOp::create(b, loc, angles, angle)),
                   count};
}

/// DFT(x [..., N, ..., 1 or 2], axis) -> the transform as products by the
/// cosine and sine tables (dftTables) along the axis moved last:
///   forward: re = xr C + xi S, im = xi C - xr S;
///   inverse: re = (xr C - xi S) / N, im = (xi C + xr S) / N;
/// onesided keeps the first N/2 + 1 frequencies of a real input's forward
/// transform (a static N). The axis is an attribute before opset 20 and an
/// optional input after (default -2). dft_length (padding or truncating
/// the signal) is taken only where it equals the axis's length.
LogicalResult legalizeDFT(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Type element = in.getElementType();
  int64_t rank = in.getRank();
  if (!isa<FloatType>(element))
    return ctx.error("DFT of a " + dfg::formatShape(in.getShape()) +
                     " integer tensor: ONNX transforms floats only");
  int64_t parts = in.getDimSize(rank - 1);
  if (rank < 2 || (parts != 1 && parts != 2))
    return ctx.error("DFT's input must end in a dimension of 1 (real) or 2 "
                     "(complex), got " +
                     dfg::formatShape(in.getShape()));
  int64_t axis;
  if (ctx.opsetVersion() >= 20) {
    axis = -2;
    if (ctx.input(2)) {
      FailureOr<SmallVector<int64_t>> a = ctx.constantInts(2, "axis");
      if (failed(a))
        return failure();
      if (a->size() != 1)
        return ctx.error("DFT's axis must hold one value");
      axis = a->front();
    }
  } else {
    axis = ctx.attrInt("axis", 1);
  }
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank - 1)
    return ctx.error("DFT's axis " + std::to_string(axis) +
                     " is not a signal axis of " +
                     dfg::formatShape(in.getShape()));
  int64_t n = in.getDimSize(axis);
  if (ctx.input(1)) {
    FailureOr<SmallVector<int64_t>> length = ctx.constantInts(1, "dft_length");
    if (failed(length))
      return failure();
    if (length->size() != 1 || ShapedType::isDynamic(n) || length->front() != n)
      return ctx.error("DFT with a dft_length other than its axis's length "
                       "(a padded or truncated signal) is not supported");
  }
  bool inverse = ctx.attrInt("inverse", 0) != 0;
  bool onesided = ctx.attrInt("onesided", 0) != 0;
  if (onesided && (inverse || parts != 1 || ShapedType::isDynamic(n)))
    return ctx.error("a onesided DFT is supported for the forward transform "
                     "of a real signal of static length only");
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  FailureOr<DftTables> tables =
      dftTables(ctx, ctx.input(0), axis, element);
  if (failed(tables))
    return failure();
  Value cosT = tables->cos, sinT = tables->sin;
  int64_t kept = onesided ? n / 2 + 1 : n;
  if (onesided) {
    auto cut = [&](Value t) -> Value {
      return dfg::SliceOp::create(b, loc, t, {0}, {kept}, {1}, {1});
    };
    cosT = cut(cosT);
    sinT = cut(sinT);
  }
  // The signal axis moved last, the complex pair dropped.
  SmallVector<int64_t> perm;
  for (int64_t a = 0; a < rank - 1; ++a)
    if (a != axis)
      perm.push_back(a);
  perm.push_back(axis);
  SmallVector<int64_t> back(rank - 1);
  for (auto [i, p] : llvm::enumerate(perm))
    back[p] = static_cast<int64_t>(i);
  auto part = [&](int64_t i) -> FailureOr<Value> {
    Value s = dfg::SliceOp::create(b, loc, ctx.input(0), {i}, {i + 1},
                                   {rank - 1}, {1});
    FailureOr<Value> squeezed = ctx.create<dfg::SqueezeOp>(
        dfg::squeezeShape(shapeOf(s), {rank - 1}), element, s,
        b.getDenseI64ArrayAttr({rank - 1}));
    if (failed(squeezed))
      return failure();
    return ctx.create<dfg::TransposeOp>(
        dfg::transposeShape(shapeOf(*squeezed), perm), element, *squeezed,
        b.getDenseI64ArrayAttr(perm));
  };
  auto product = [&](Value x, Value table) -> FailureOr<Value> {
    FailureOr<Value> r = ctx.create<dfg::MatMulOp>(
        dfg::matmulShape(shapeOf(x), shapeOf(table)), element, x, table);
    return failed(r) ? r : FailureOr<Value>(ctx.refineType(*r));
  };
  FailureOr<Value> xr = part(0);
  if (failed(xr))
    return failure();
  FailureOr<Value> re = product(*xr, cosT), im = product(*xr, sinT);
  if (failed(re) || failed(im))
    return failure();
  Type resultType = re->getType();
  // forward: im = -xr S; inverse: im = xr S.
  Value real = *re, imag = *im;
  if (!inverse)
    imag = dfg::NegOp::create(b, loc, resultType, imag);
  if (parts == 2) {
    FailureOr<Value> xi = part(1);
    if (failed(xi))
      return failure();
    FailureOr<Value> iC = product(*xi, cosT), iS = product(*xi, sinT);
    if (failed(iC) || failed(iS))
      return failure();
    real = inverse
               ? dfg::SubOp::create(b, loc, resultType, real, *iS).getResult()
               : dfg::AddOp::create(b, loc, resultType, real, *iS).getResult();
    imag = dfg::AddOp::create(b, loc, resultType, imag, *iC);
  }
  if (inverse) {
    // Divided by N.
    Value count = tables->count;
    real = dfg::DivOp::create(b, loc, resultType, real, count);
    imag = dfg::DivOp::create(b, loc, resultType, imag, count);
  }
  // Back in place, the pair last.
  SmallVector<Value> pair;
  for (Value v : {real, imag}) {
    FailureOr<Value> t =
        ctx.create<dfg::TransposeOp>(dfg::transposeShape(shapeOf(v), back),
                                     element, v, b.getDenseI64ArrayAttr(back));
    if (failed(t))
      return failure();
    FailureOr<Value> u = ctx.create<dfg::UnsqueezeOp>(
        dfg::unsqueezeShape(shapeOf(*t), {rank - 1}), element, *t,
        b.getDenseI64ArrayAttr({rank - 1}));
    if (failed(u))
      return failure();
    pair.push_back(ctx.refineType(*u));
  }
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = kept;
  shape[rank - 1] = 2;
  return ctx.setResults(
      dfg::ConcatOp::create(b, loc, RankedTensorType::get(shape, element), pair,
                            rank - 1)
          .getResult());
}

/// How Resize samples one axis (its attributes).
struct ResizeSampling {
  std::string mode, coordinates, nearest;
  double cubicA = -0.75;
  bool excludeOutside = false;
};

/// The [out, in] matrix Resize applies along an axis of `in` positions to
/// give `out`, `scale` being its scale (given, or out / in): for each
/// output position its source coordinate (the coordinate transformation
/// mode), then the input positions it reads and their weights (nearest:
/// one; linear: the two around it; cubic: the four around it, Keys'
/// kernel with cubic_coeff_a), positions past either end read the edge's
/// (or, with exclude_outside, count nothing, the rest renormalised), as
/// onnxruntime samples them. Computed in double. std::nullopt names a mode
/// that is not supported (in `why`).
std::optional<SmallVector<double>>
resizeMatrix(int64_t in, int64_t out, double scale, const ResizeSampling &s,
             std::string &why) {
  SmallVector<double> m(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o) {
    double x;
    const std::string &c = s.coordinates;
    if (c == "half_pixel")
      x = (o + 0.5) / scale - 0.5;
    else if (c == "pytorch_half_pixel")
      x = out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    else if (c == "align_corners")
      x = out == 1 ? 0.0
                   : static_cast<double>(o) * (in - 1) / static_cast<double>(out - 1);
    else if (c == "asymmetric")
      x = o / scale;
    else if (c == "half_pixel_symmetric") {
      double adjustment = out / (scale * in), center = in / 2.0;
      x = center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
    } else {
      why = "coordinate_transformation_mode '" + c + "'";
      return std::nullopt;
    }
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    double *row = &m[o * in];
    if (s.mode == "nearest") {
      double f = std::floor(x);
      int64_t i;
      if (s.nearest == "round_prefer_floor")
        i = static_cast<int64_t>(x == f + 0.5 ? f : std::round(x));
      else if (s.nearest == "round_prefer_ceil")
        i = static_cast<int64_t>(x == f + 0.5 ? f + 1 : std::round(x));
      else if (s.nearest == "floor")
        i = static_cast<int64_t>(f);
      else if (s.nearest == "ceil")
        i = static_cast<int64_t>(std::ceil(x));
      else {
        why = "nearest_mode '" + s.nearest + "'";
        return std::nullopt;
      }
      row[clamp(i)] = 1.0;
    } else if (s.mode == "linear") {
      x = std::clamp(x, 0.0, static_cast<double>(in - 1));
      double f = std::floor(x), t = x - f;
      row[clamp(static_cast<int64_t>(f))] += 1 - t;
      row[clamp(static_cast<int64_t>(f) + 1)] += t;
    } else if (s.mode == "cubic") {
      double f = std::floor(x), t = x - f, a = s.cubicA;
      auto kernel = [&](double d) {
        d = std::abs(d);
        if (d <= 1)
          return ((a + 2) * d - (a + 3)) * d * d + 1;
        if (d < 2)
          return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
        return 0.0;
      };
      double total = 0;
      SmallVector<std::pair<int64_t, double>> taps;
      for (int64_t k = -1; k <= 2; ++k) {
        int64_t i = static_cast<int64_t>(f) + k;
        double w = kernel(t - k);
        if (s.excludeOutside && (i < 0 || i >= in))
          w = 0;
        taps.push_back({clamp(i), w});
        total += w;
      }
      for (auto [i, w] : taps)
        row[i] += s.excludeOutside ? w / total : w;
    } else {
      why = "mode '" + s.mode + "'";
      return std::nullopt;
    }
  }
  return m;
}

/// An op type as a value (for generic lambdas).
template <typename OpTy> struct OpTag {
  using type = OpTy;
};

/// The [in, out] matrix resizeMatrix gives (transposed), built in the graph
/// where the axis's input or output length is symbolic (`inE`, `outE`): the
/// source coordinate of each output position, and the weight each input
/// position takes, as comparisons of the positions with the taps' indices.
/// Computed in f32 (as onnxruntime samples), then cast to `element`.
/// `scale` is the given one (Resize's scales), else out / in at run time.
FailureOr<Value> resizeMatrixInGraph(NodeContext &ctx, AffineExpr inE,
                                     AffineExpr outE,
                                     std::optional<double> scale,
                                     const ResizeSampling &s, Type element) {
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  const std::string &c = s.coordinates;
  if (c != "half_pixel" && c != "pytorch_half_pixel" && c != "align_corners" &&
      c != "asymmetric")
    return ctx.error("Resize along an axis of symbolic length with "
                     "coordinate_transformation_mode '" +
                     c + "' is not supported");
  if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
    return ctx.error("Resize with mode '" + s.mode + "' is not supported");
  if (s.mode == "nearest" && s.nearest != "round_prefer_floor" &&
      s.nearest != "round_prefer_ceil" && s.nearest != "floor" &&
      s.nearest != "ceil")
    return ctx.error("Resize with nearest_mode '" + s.nearest +
                     "' is not supported");
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v) {
    auto type = cast<RankedTensorType>(v.getType());
    return ctx.refineType(
        dfg::CastOp::create(b, loc, type.clone(f32), v, f32).getResult());
  };
  auto lengthOf = [&](AffineExpr e) {
    auto [map, names] = ctx.dimTable().write({e});
    Value size = dfg::SizesOp::create(
        b, loc, RankedTensorType::get({}, b.getI64Type()), map, names);
    return toF32(size);
  };
  FailureOr<Value> outIota = ctx.iota(outE, {-1, 1});
  FailureOr<Value> inIota = ctx.iota(inE, {1, -1});
  if (failed(outIota) || failed(inIota))
    return failure();
  Value o = toF32(*outIota), positions = toF32(*inIota);
  Value inF = lengthOf(inE), outF = lengthOf(outE);
  // Each op's failure is reported at the node; the chain stops at the first.
  bool failedOp = false;
  auto op = [&](auto tag, Value l, Value r) -> Value {
    using OpTy = typename decltype(tag)::type;
    if (failedOp)
      return l;
    FailureOr<Value> v = binary<OpTy>(ctx, l, r, f32);
    if (failed(v)) {
      failedOp = true;
      return l;
    }
    return ctx.refineType(*v);
  };
  auto unary = [&](auto tag, Value v) -> Value {
    using OpTy = typename decltype(tag)::type;
    return ctx.refineType(OpTy::create(b, loc, v.getType(), v).getResult());
  };
  using Add = OpTag<dfg::AddOp>;
  using Sub = OpTag<dfg::SubOp>;
  using Mul = OpTag<dfg::MulOp>;
  using Div = OpTag<dfg::DivOp>;
  using Max = OpTag<dfg::MaxOp>;
  using Min = OpTag<dfg::MinOp>;
  auto k = [&](double v) { return ctx.scalar(v, f32); };
  Value ratio = scale ? k(*scale) : op(Div{}, outF, inF);
  // The source coordinate of each output position: [out, 1].
  Value x;
  if (c == "half_pixel" || c == "pytorch_half_pixel") {
    x = op(Sub{}, op(Div{}, op(Add{}, o, k(0.5)), ratio), k(0.5));
    if (c == "pytorch_half_pixel") // 0 where out is 1
      x = op(Mul{}, x, op(Min{}, op(Max{}, op(Sub{}, outF, k(1)), k(0)), k(1)));
  } else if (c == "align_corners") {
    // o * (in - 1) / (out - 1), and 0 where out is 1 (o is 0 there).
    x = op(Div{}, op(Mul{}, o, op(Sub{}, inF, k(1))),
           op(Max{}, op(Sub{}, outF, k(1)), k(1)));
  } else {
    x = op(Div{}, o, ratio);
  }
  Value last = op(Sub{}, inF, k(1));
  auto clampIndex = [&](Value i) {
    return op(Min{}, op(Max{}, i, k(0)), last);
  };
  // The weight `w` ([out, 1]) at input position `index` ([out, 1]): an
  // [out, in] tensor, w where the positions equal the index.
  auto tap = [&](Value index, Value w) -> Value {
    if (failedOp)
      return index;
    FailureOr<Value> hit =
        binary<dfg::EqualOp>(ctx, positions, index, b.getI1Type());
    if (failed(hit)) {
      failedOp = true;
      return index;
    }
    Value one = toF32(ctx.refineType(*hit));
    return op(Mul{}, one, w);
  };
  Value matrix;
  if (s.mode == "nearest") {
    Value i = s.nearest == "round_prefer_floor"
                  ? unary(OpTag<dfg::CeilOp>{}, op(Sub{}, x, k(0.5)))
              : s.nearest == "round_prefer_ceil"
                  ? unary(OpTag<dfg::FloorOp>{}, op(Add{}, x, k(0.5)))
              : s.nearest == "floor" ? unary(OpTag<dfg::FloorOp>{}, x)
                                     : unary(OpTag<dfg::CeilOp>{}, x);
    matrix = tap(clampIndex(i), k(1));
  } else if (s.mode == "linear") {
    Value clamped = op(Min{}, op(Max{}, x, k(0)), last);
    Value f = unary(OpTag<dfg::FloorOp>{}, clamped);
    Value t = op(Sub{}, clamped, f);
    matrix = op(Add{}, tap(f, op(Sub{}, k(1), t)),
                tap(clampIndex(op(Add{}, f, k(1))), t));
  } else {
    // Keys' kernel: taps -1 and 2 are 1 to 2 away, taps 0 and 1 within 1.
    double a = s.cubicA;
    Value f = unary(OpTag<dfg::FloorOp>{}, x);
    Value t = op(Sub{}, x, f);
    auto nearW = [&](Value d) { // ((a + 2) d - (a + 3)) d^2 + 1
      Value p = op(Sub{}, op(Mul{}, k(a + 2), d), k(a + 3));
      return op(Add{}, op(Mul{}, p, op(Mul{}, d, d)), k(1));
    };
    auto farW = [&](Value d) { // ((a d - 5 a) d + 8 a) d - 4 a
      Value p = op(Sub{}, op(Mul{}, k(a), d), k(5 * a));
      return op(Sub{}, op(Mul{}, op(Add{}, op(Mul{}, p, d), k(8 * a)), d),
                k(4 * a));
    };
    SmallVector<std::pair<Value, Value>> taps = {
        {op(Sub{}, f, k(1)), farW(op(Add{}, t, k(1)))},
        {f, nearW(t)},
        {op(Add{}, f, k(1)), nearW(op(Sub{}, k(1), t))},
        {op(Add{}, f, k(2)), farW(op(Sub{}, k(2), t))}};
    Value total;
    if (s.excludeOutside) {
      // A tap past either end counts nothing; the rest renormalised.
      for (auto &[index, w] : taps) {
        if (failedOp)
          break;
        FailureOr<Value> low = binary<dfg::GreaterOrEqualOp>(
            ctx, index, k(0), b.getI1Type());
        FailureOr<Value> high = binary<dfg::LessOrEqualOp>(
            ctx, index, last, b.getI1Type());
        if (failed(low) || failed(high)) {
          failedOp = true;
          break;
        }
        w = op(Mul{}, w,
               op(Mul{}, toF32(ctx.refineType(*low)),
                  toF32(ctx.refineType(*high))));
        total = total ? op(Add{}, total, w) : w;
      }
    }
    for (auto &[index, w] : taps) {
      Value weight = total ? op(Div{}, w, total) : w;
      Value part = tap(clampIndex(index), weight);
      matrix = matrix ? op(Add{}, matrix, part) : part;
    }
  }
  if (failedOp)
    return failure();
  // [out, in] -> [in, out], in the model's element type.
  FailureOr<Value> transposed = transposeBy(ctx, matrix, {1, 0});
  if (failed(transposed))
    return failure();
  Value result = ctx.refineType(*transposed);
  if (element != f32)
    result = ctx.refineType(
        dfg::CastOp::create(
            b, loc, cast<RankedTensorType>(result.getType()).clone(element),
            result, element)
            .getResult());
  return result;
}

/// `x` with its axis `axis` (of length in) multiplied by `matrix` [in, out]:
/// the axis moved last, the product, and the axis put back.
FailureOr<Value> productAlong(NodeContext &ctx, Value x, int64_t axis,
                              Value matrix) {
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  SmallVector<int64_t> perm;
  for (int64_t a = 0; a < rank; ++a)
    if (a != axis)
      perm.push_back(a);
  perm.push_back(axis);
  SmallVector<int64_t> back(rank);
  for (auto [i, p] : llvm::enumerate(perm))
    back[p] = static_cast<int64_t>(i);
  FailureOr<Value> moved = transposeBy(ctx, x, perm);
  if (failed(moved))
    return failure();
  Value last = ctx.refineType(*moved);
  FailureOr<Value> product = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(last), shapeOf(matrix)), elementOf(x), last,
      matrix);
  if (failed(product))
    return failure();
  FailureOr<Value> placed = transposeBy(ctx, ctx.refineType(*product), back);
  if (failed(placed))
    return failure();
  return ctx.refineType(*placed);
}

/// `scale` as p / q with q up to 64, if it is one (a Resize by a scale of a
/// symbolic length: its output length floor(in * p / q)).
std::optional<std::pair<int64_t, int64_t>> smallFraction(double scale) {
  for (int64_t q = 1; q <= 64; ++q) {
    double p = std::round(scale * static_cast<double>(q));
    if (p >= 1 && std::abs(scale * static_cast<double>(q) - p) < 1e-9 &&
        static_cast<double>(static_cast<float>(p / q)) ==
            static_cast<double>(static_cast<float>(scale)))
      return std::pair(static_cast<int64_t>(p), q);
  }
  return std::nullopt;
}

/// Resize: along each axis whose sampling is not the identity, a product by
/// its [out, in] matrix with the axis moved last. A vision model's position
/// embeddings interpolated to the image's patches (DINOv2's bicubic), an
/// upsampling by an integer factor. Over static lengths the matrix is a
/// constant (resizeMatrix); where the input's or the output's length is
/// symbolic (sizes computed from the input's dimensions, MobileViT's
/// ceil(h / p) * p; a scale p / q of a symbolic length; DINOv2's grid
/// resized to an image's patches) it is built in the graph
/// (resizeMatrixInGraph).
/// Refused by name: tf_crop_and_resize, antialias when shrinking, a
/// keep_aspect_ratio_policy other than stretch, integer tensors that are
/// not left as they are.
LogicalResult legalizeResize(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  RankedTensorType x = ctx.inputType(0);
  int64_t rank = x.getRank();
  Type element = x.getElementType();
  SmallVector<int64_t> axes;
  if (std::optional<SmallVector<int64_t>> a = ctx.attrInts("axes")) {
    for (int64_t axis : *a) {
      if (axis < -rank || axis >= rank)
        return ctx.error("Resize's axis " + std::to_string(axis) +
                         " is out of range for rank " + std::to_string(rank));
      axes.push_back(axis < 0 ? axis + rank : axis);
    }
  } else {
    axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  if (ctx.attrString("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.error("Resize with keep_aspect_ratio_policy '" +
                     ctx.attrString("keep_aspect_ratio_policy") +
                     "' is not supported (only stretch)");
  // Each axis's output size and scale; `outExprs` the output lengths that
  // are symbolic (computed from the input's dimensions, or a scale of a
  // symbolic length), null where an axis keeps its length or is static.
  SmallVector<int64_t> outSizes(x.getShape());
  SmallVector<double> scales(rank, 1.0);
  SmallVector<AffineExpr> outExprs(rank);
  SmallVector<AffineExpr> inDims = ctx.inputDims(0);
  if (Value sizes = ctx.input(3)) {
    FailureOr<SmallVector<AffineExpr>> given = ctx.symbolicInts(3, "sizes");
    if (failed(given))
      return failure();
    if (given->size() != axes.size())
      return ctx.error("Resize's sizes hold " + std::to_string(given->size()) +
                       " values for " + std::to_string(axes.size()) + " axes");
    for (auto [axis, size] : llvm::zip_equal(axes, *given)) {
      if (auto c = dyn_cast<AffineConstantExpr>(size)) {
        outSizes[axis] = c.getValue();
        continue;
      }
      // A symbolic size kept (the batch, read from the input's Shape).
      if (size && inDims[axis] && dfg::sameDim(size, inDims[axis]))
        continue;
      // A length computed from the input's dimensions (MobileViT's feature
      // map resized to a multiple of its patch, and back).
      if (!size)
        return ctx.error("Resize to a size that follows from no named input "
                         "dimension is not supported; give it with --dim "
                         "NAME=SIZE");
      outSizes[axis] = ShapedType::kDynamic;
      outExprs[axis] = size;
    }
  } else if (Value scaleInput = ctx.input(2)) {
    DenseElementsAttr values;
    SmallVector<double> given;
    if (matchPattern(scaleInput, m_Constant(&values)) &&
        isa<FloatType>(values.getElementType())) {
      for (const APFloat &v : values.getValues<APFloat>())
        given.push_back(v.convertToDouble());
    } else if (auto weight = scaleInput.getDefiningOp<dfg::WeightOp>()) {
      FailureOr<SmallVector<double>> read =
          readWeightFloats(weight, ctx.modelFolder(), ctx.loc());
      if (failed(read))
        return failure();
      given = *read;
    } else {
      return ctx.error("Resize's scales must be a constant float tensor");
    }
    if (given.size() != axes.size())
      return ctx.error("Resize's scales hold " + std::to_string(given.size()) +
                       " values for " + std::to_string(axes.size()) + " axes");
    for (auto [axis, scale] : llvm::zip_equal(axes, given)) {
      if (!(scale > 0))
        return ctx.error("Resize's scale " + std::to_string(scale) +
                         " is not positive");
      scales[axis] = scale;
      if (!x.isDynamicDim(axis)) {
        outSizes[axis] = static_cast<int64_t>(
            std::floor(static_cast<double>(x.getDimSize(axis)) * scale));
      } else if (scale != 1.0) {
        // floor(in * p / q): an upsampling by 2, a downsampling by 2.
        std::optional<std::pair<int64_t, int64_t>> pq = smallFraction(scale);
        if (!pq || !inDims[axis])
          return ctx.error("Resize by a scale of " + std::to_string(scale) +
                           " of a symbolic length is supported where the "
                           "scale is a fraction p / q with q up to 64 and the "
                           "length follows from named input dimensions");
        outExprs[axis] = (inDims[axis] * pq->first).floorDiv(pq->second);
      }
    }
  } else {
    return ctx.error("Resize needs its scales or its sizes");
  }
  ResizeSampling sampling{
      ctx.attrString("mode", "nearest"),
      ctx.attrString("coordinate_transformation_mode", "half_pixel"),
      ctx.attrString("nearest_mode", "round_prefer_floor"),
      ctx.attrFloat("cubic_coeff_a", -0.75f),
      ctx.attrInt("exclude_outside", 0) != 0};
  bool antialias = ctx.attrInt("antialias", 0) != 0;
  Value result = ctx.input(0);
  for (int64_t axis : axes) {
    int64_t in = x.getDimSize(axis), out = outSizes[axis];
    if (outExprs[axis] || (ShapedType::isDynamic(in) && !outExprs[axis] &&
                           !ShapedType::isDynamic(out))) {
      // A symbolic length on either side: the matrix built in the graph.
      AffineExpr inE = ShapedType::isDynamic(in)
                           ? inDims[axis]
                           : getAffineConstantExpr(in, ctx.builder().getContext());
      AffineExpr outE =
          outExprs[axis]
              ? outExprs[axis]
              : getAffineConstantExpr(out, ctx.builder().getContext());
      if (!inE)
        return ctx.error("Resize along axis " + std::to_string(axis) +
                         ", whose length follows from no named input "
                         "dimension, is not supported; give it with --dim "
                         "NAME=SIZE");
      if (!isa<FloatType>(element))
        return ctx.error("Resize of an integer tensor that changes it is not "
                         "supported");
      // Antialiasing only changes a shrinking, which a length computed at
      // run time may be.
      bool growing = !ctx.input(3) && scales[axis] >= 1;
      if (antialias && sampling.mode != "nearest" && !growing)
        return ctx.error("Resize with antialias along an axis of symbolic "
                         "length is not supported");
      std::optional<double> givenScale;
      if (!ctx.input(3))
        givenScale = scales[axis];
      FailureOr<Value> matrix =
          resizeMatrixInGraph(ctx, inE, outE, givenScale, sampling, element);
      if (failed(matrix))
        return failure();
      FailureOr<Value> placed = productAlong(ctx, result, axis, *matrix);
      if (failed(placed))
        return failure();
      result = *placed;
      continue;
    }
    if (ShapedType::isDynamic(in)) {
      if (out == in)
        continue; // kept (a scale of 1, or its size given as itself)
      return ctx.error("Resize of symbolic axis " + std::to_string(axis) +
                       " is not supported");
    }
    if (out < 1)
      return ctx.error("Resize to " + std::to_string(out) +
                       " positions along axis " + std::to_string(axis));
    double scale = ctx.input(3) ? static_cast<double>(out) / in : scales[axis];
    if (antialias && scale < 1 && sampling.mode != "nearest")
      return ctx.error("Resize with antialias when shrinking is not supported");
    if (out * in > (int64_t(1) << 24))
      return ctx.error("Resize from " + std::to_string(in) + " to " +
                       std::to_string(out) +
                       " positions: meshc computes it as a product by an "
                       "[out, in] matrix, which it builds up to 2^24 entries");
    std::string why;
    std::optional<SmallVector<double>> m =
        resizeMatrix(in, out, scale, sampling, why);
    if (!m)
      return ctx.error("Resize with " + why + " is not supported");
    bool identity = out == in;
    for (int64_t o = 0; identity && o < out; ++o)
      for (int64_t i = 0; identity && i < in; ++i)
        identity = (*m)[o * in + i] == (o == i ? 1.0 : 0.0);
    if (identity)
      continue;
    if (!isa<FloatType>(element))
      return ctx.error("Resize of an integer tensor that changes it is not "
                       "supported");
    // [out, in] transposed: [in, out].
    SmallVector<double> t(in * out);
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        t[i * out + o] = (*m)[o * in + i];
    Value matrix =
        floatConstant(ctx.builder(), ctx.loc(), {in, out}, t, element);
    FailureOr<Value> placed = productAlong(ctx, result, axis, matrix);
    if (failed(placed))
      return failure();
    result = *placed;
  }
  return ctx.setResults(result);
}

/// MatMul(a, b) -> dfg.matmul(a, b)
LogicalResult legalizeMatMul(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType a = ctx.inputType(0), b = ctx.inputType(1);
  if (a.getElementType() != b.getElementType())
    return ctx.mismatchedTypes();
  return ctx.emit<dfg::MatMulOp>(dfg::matmulShape(a.getShape(), b.getShape()),
                                 a.getElementType(), ctx.input(0),
                                 ctx.input(1));
}

/// FusedMatMul (com.microsoft: onnxruntime's fusion of a MatMul with a
/// transpose of an operand's last two axes and a scale, as its optimizer
/// saves a model at level 2) = alpha * A' x B', A' and B' transposed where
/// transA and transB say. transBatchA and transBatchB (a transpose that
/// moves the batch axes) are refused by name.
LogicalResult legalizeFusedMatMul(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType a = ctx.inputType(0), b = ctx.inputType(1);
  if (a.getElementType() != b.getElementType())
    return ctx.mismatchedTypes();
  for (StringRef attr : {"transBatchA", "transBatchB"})
    if (ctx.attrInt(attr, 0))
      return ctx.error("FusedMatMul with " + attr +
                       " (a transpose of the batch axes) is not supported");
  Type element = a.getElementType();
  auto transposed = [&](unsigned i, StringRef attr) -> FailureOr<Value> {
    if (!ctx.attrInt(attr, 0))
      return ctx.input(i);
    if (ctx.inputType(i).getRank() < 2)
      return ctx.error("FusedMatMul's " + attr + " of a vector");
    return transposeLastTwo(ctx, ctx.input(i));
  };
  FailureOr<Value> lhs = transposed(0, "transA");
  FailureOr<Value> rhs = transposed(1, "transB");
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<Value> product = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(*lhs), shapeOf(*rhs)), element, *lhs, *rhs);
  if (failed(product))
    return failure();
  double alpha = ctx.attrFloat("alpha", 1.0);
  if (alpha == 1.0)
    return ctx.setResults(ctx.refineType(*product));
  FailureOr<Value> scaled = binary<dfg::MulOp>(
      ctx, ctx.refineType(*product), ctx.scalar(alpha, element), element);
  return failed(scaled) ? failure() : ctx.setResults(*scaled);
}

/// Gemm(A, B, C) = alpha * A' * B' + beta * C
///   -> add(mul(matmul(transpose?(A), transpose?(B)), alpha), mul(C, beta)),
/// with the multiplications by 1 left out.
LogicalResult legalizeGemm(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  Type element = ctx.inputType(0).getElementType();
  if (ctx.inputType(0).getRank() != 2 || ctx.inputType(1).getRank() != 2)
    return ctx.error("Gemm operands A and B must be 2-D, got " +
                     dfg::formatShape(ctx.inputType(0).getShape()) + " and " +
                     dfg::formatShape(ctx.inputType(1).getShape()));

  auto transposed = [&](unsigned i, StringRef attr) -> FailureOr<Value> {
    return ctx.attrInt(attr, 0) ? transposeLastTwo(ctx, ctx.input(i))
                                : FailureOr<Value>(ctx.input(i));
  };
  FailureOr<Value> a = transposed(0, "transA");
  FailureOr<Value> b = transposed(1, "transB");
  if (failed(a) || failed(b))
    return failure();
  FailureOr<Value> y = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(*a), shapeOf(*b)), element, *a, *b);
  if (failed(y))
    return failure();

  auto scaled = [&](Value v, float factor) -> FailureOr<Value> {
    if (factor == 1.0f)
      return v;
    if (!isa<FloatType>(element) && factor != std::trunc(factor))
      return ctx.error("alpha and beta of an integer Gemm must be whole "
                       "numbers, not " +
                       std::to_string(factor));
    return ctx.create<dfg::MulOp>(dfg::broadcastShapes(shapeOf(v), {}), element,
                                  v, ctx.scalar(factor, element));
  };
  y = scaled(*y, ctx.attrFloat("alpha", 1.0f));
  if (failed(y) || !ctx.input(2))
    return failed(y) ? failure() : ctx.setResults(*y);

  FailureOr<Value> c = scaled(ctx.input(2), ctx.attrFloat("beta", 1.0f));
  if (failed(c))
    return failure();
  // C broadcasts unidirectionally to M x N.
  auto sum = dfg::broadcastShapes(shapeOf(*y), shapeOf(*c));
  if (sum && *sum != dfg::Shape(shapeOf(*y)))
    return ctx.error("Gemm bias C " + dfg::formatShape(shapeOf(*c)) +
                     " does not broadcast to the product " +
                     dfg::formatShape(shapeOf(*y)));
  return ctx.emit<dfg::AddOp>(std::move(sum), element, *y, *c);
}

/// The index letters of one Einsum operand or result.
using Term = std::string;

/// Permutation taking `from` (letters) to `to` (letters, a permutation).
SmallVector<int64_t> permutation(StringRef from, StringRef to) {
  SmallVector<int64_t> perm;
  for (char c : to)
    perm.push_back(from.find(c));
  return perm;
}

/// `equation` with each '...' spelled out as letters of its own, given the
/// operands' ranks: the dimensions an ellipsis stands for align on the
/// right across the operands (numpy's broadcasting), so an operand whose
/// ellipsis covers fewer takes the last of the letters; the output's
/// ellipsis is all of them, and must be there. LongT5's
/// '...qhd,...khd->...hqk'. A message on failure.
FailureOr<std::string> spellOutEllipsis(StringRef equation,
                                        ArrayRef<int64_t> ranks,
                                        std::string &why) {
  if (!equation.contains("..."))
    return equation.str();
  auto [inputs, output] = equation.split("->");
  SmallVector<StringRef> terms;
  inputs.split(terms, ',');
  if (terms.size() != ranks.size()) {
    why = "the equation's operands do not match the node's inputs";
    return failure();
  }
  std::string fresh;
  for (char c = 'A'; c <= 'Z'; ++c)
    if (!equation.contains(c))
      fresh += c;
  SmallVector<int64_t> covered;
  int64_t most = 0;
  for (auto [term, rank] : llvm::zip_equal(terms, ranks)) {
    size_t at = term.find("...");
    if (at == StringRef::npos) {
      covered.push_back(0);
      continue;
    }
    if (term.substr(at + 3).contains('.')) {
      why = "a term has more than one ellipsis";
      return failure();
    }
    int64_t letters = static_cast<int64_t>(term.size()) - 3;
    if (rank < letters) {
      why = "a term has more letters than its operand has dimensions";
      return failure();
    }
    covered.push_back(rank - letters);
    most = std::max(most, rank - letters);
  }
  if (most > static_cast<int64_t>(fresh.size())) {
    why = "the ellipsis covers more dimensions than there are free letters";
    return failure();
  }
  auto spell = [&](StringRef term, int64_t n) {
    size_t at = term.find("...");
    if (at == StringRef::npos)
      return term.str();
    return (term.substr(0, at) + StringRef(fresh).substr(most - n, n) +
            term.substr(at + 3))
        .str();
  };
  std::string out;
  for (auto [i, term] : llvm::enumerate(terms))
    out += (i ? "," : "") + spell(term, covered[i]);
  if (equation.contains("->")) {
    if (output.count("...") != 1 || output.count('.') != 3) {
      // (onnxruntime refuses an output without the ellipsis too.)
      why = "the inputs have an ellipsis and the output has none (or more "
            "than one)";
      return failure();
    }
    out += "->" + spell(output, most);
  }
  return out;
}

/// Einsum(equation, a, b) in its matmul forms -> transposes, unsqueezes,
/// dfg.matmul, squeezes, transpose. Letters in both inputs and the output
/// are batch dimensions (B), in both inputs only contracted (K, at most one),
/// in one input and the output free. The last free letter of each operand is
/// its matrix dimension (M for a, N for b); earlier ones (Ma, Nb) broadcast
/// like batch dimensions against unit dimensions in the other operand:
///   a -> [B, Ma, 1.., M, K],  b -> [B, 1.., Nb, K, N],
///   matmul -> [B, Ma, Nb, M, N] -> output order,
/// with a unit dimension standing in for an absent M, N or K.
/// Einsum of one operand: the letters missing from the output summed
/// (dfg.reduce_sum), the rest transposed into the output's order (XLNet's
/// 'ijbn->bnij'). A repeated letter (a diagonal) is refused by name.
LogicalResult legalizeEinsumOfOne(NodeContext &ctx, StringRef equation) {
  auto [input, output] = equation.split("->");
  auto unsupported = [&](const Twine &why) {
    return ctx.error("Einsum '" + equation + "' of one operand: " + why);
  };
  if (!equation.contains("->"))
    return unsupported("expected 'a->b' (an implicit output is not "
                       "supported)");
  RankedTensorType in = ctx.inputType(0);
  if (static_cast<int64_t>(input.size()) != in.getRank())
    return unsupported("the term's length does not match the operand's rank");
  for (StringRef t : {input, output})
    for (char c : t)
      if (t.count(c) != 1)
        return unsupported("a letter repeats within one term (diagonals)");
  SmallVector<int64_t> summed;
  std::string kept;
  for (auto [i, c] : llvm::enumerate(input)) {
    if (output.contains(c))
      kept += c;
    else
      summed.push_back(static_cast<int64_t>(i));
  }
  for (char c : output)
    if (!input.contains(c))
      return unsupported(std::string("output letter '") + c +
                         "' is not in the operand");
  OpBuilder &b = ctx.builder();
  Type element = in.getElementType();
  Value x = ctx.input(0);
  if (!summed.empty())
    x = ctx.refineType(dfg::ReduceSumOp::create(
        b, ctx.loc(),
        RankedTensorType::get(dfg::reduceShape(in.getShape(), summed, false),
                              element),
        x, b.getDenseI64ArrayAttr(summed), false));
  SmallVector<int64_t> perm;
  for (char c : output)
    perm.push_back(static_cast<int64_t>(kept.find(c)));
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return ctx.setResults(x);
  return ctx.emit<dfg::TransposeOp>(dfg::transposeShape(shapeOf(x), perm),
                                    element, x, b.getDenseI64ArrayAttr(perm));
}

/// An Einsum with no batch letters where one operand's letters (contracted
/// and free) all have static sizes: that operand is a weight [K, N] of
/// their products and the Einsum a product by it, between reshapes that
/// merge and unmerge the letters. XLNet's projections 'ibh,hnd->ibnd' and
/// 'ibnd,hnd->ibh' become projections as any exporter's Linear and view
/// are, split by heads the same way. Nothing (nullopt) where neither
/// operand has static sizes.
std::optional<LogicalResult> einsumAsProjection(NodeContext &ctx, StringRef lhs,
                                                StringRef rhs, StringRef output,
                                                Value a, Value b) {
  auto allStatic = [](StringRef term, Value v) {
    return llvm::all_of(shapeOf(v),
                        [](int64_t d) { return !ShapedType::isDynamic(d); }) &&
           term.size() == shapeOf(v).size();
  };
  // The weight on the right.
  if (!allStatic(rhs, b)) {
    if (!allStatic(lhs, a))
      return std::nullopt;
    std::swap(lhs, rhs);
    std::swap(a, b);
  }
  std::string k, freeX, freeW;
  for (char c : lhs)
    (rhs.contains(c) ? k : freeX) += c;
  for (char c : rhs)
    if (!lhs.contains(c))
      freeW += c;
  Type element = cast<ShapedType>(a.getType()).getElementType();
  auto transpose = [&](Value v, StringRef from, StringRef to) {
    return transposeBy(ctx, v, permutation(from, to));
  };
  auto size = [&](StringRef letters) {
    int64_t product = 1;
    for (char c : letters)
      product *= shapeOf(b)[rhs.find(c)];
    return product;
  };
  int64_t lead = static_cast<int64_t>(freeX.size());
  // x -> [freeX..., K]
  FailureOr<Value> x = transpose(a, lhs, freeX + k);
  if (succeeded(x) && k.size() > 1) {
    SmallVector<int64_t> spec(lead, 0);
    spec.push_back(size(k));
    x = reshapeTo(ctx, *x, spec);
  }
  // w -> [K, N]
  FailureOr<Value> w = transpose(b, rhs, k + freeW);
  if (succeeded(w) && (k.size() != 1 || freeW.size() != 1))
    w = reshapeTo(ctx, *w, {size(k), size(freeW)});
  if (failed(x) || failed(w))
    return LogicalResult(failure());
  SmallVector<int64_t> productShape(shapeOf(*x).drop_back());
  productShape.push_back(size(freeW));
  FailureOr<Value> y = ctx.create<dfg::MatMulOp>(productShape, element, *x, *w);
  if (succeeded(y))
    y = ctx.refineType(*y);
  // [freeX..., N] -> [freeX..., freeW...] -> the output's order.
  if (succeeded(y) && freeW.size() != 1) {
    SmallVector<int64_t> spec(lead, 0);
    for (char c : freeW)
      spec.push_back(shapeOf(b)[rhs.find(c)]);
    y = reshapeTo(ctx, *y, spec);
  }
  if (succeeded(y))
    y = transpose(*y, freeX + freeW, output);
  return failed(y) ? LogicalResult(failure()) : ctx.setResults(*y);
}

LogicalResult legalizeEinsum(NodeContext &ctx) {
  std::string written;
  for (char c : ctx.attrString("equation"))
    if (c != ' ')
      written += c;
  bool ofOne = ctx.numInputs() == 1 && ctx.input(0);
  if (!ofOne && failed(ctx.requireInputs(2)))
    return failure();
  SmallVector<int64_t> ranks;
  for (unsigned i = 0; i < (ofOne ? 1u : 2u); ++i)
    ranks.push_back(ctx.inputType(i).getRank());
  std::string why;
  FailureOr<std::string> spelt = spellOutEllipsis(written, ranks, why);
  if (ofOne)
    return failed(spelt) ? ctx.error("Einsum '" + written +
                                     "' of one operand: " + why)
                         : legalizeEinsumOfOne(ctx, *spelt);
  auto unsupported = [&](const Twine &why) {
    return ctx.error("Einsum '" + written +
                     "' is not a supported matmul form: " + why);
  };
  if (failed(spelt))
    return unsupported(why);
  std::string equation = *spelt;
  auto [inputs, output] = StringRef(equation).split("->");
  auto [lhs, rhs] = inputs.split(',');
  if (!StringRef(equation).contains("->") || rhs.empty() || rhs.contains(','))
    return unsupported("expected 'a,b->c' with two operands");
  auto distinct = [](StringRef t) {
    return llvm::all_of(t, [&](char c) { return t.count(c) == 1; });
  };
  if (!distinct(lhs) || !distinct(rhs) || !distinct(output))
    return unsupported("a letter repeats within one term (diagonals)");
  RankedTensorType a = ctx.inputType(0), b = ctx.inputType(1);
  if (static_cast<int64_t>(lhs.size()) != a.getRank() ||
      static_cast<int64_t>(rhs.size()) != b.getRank())
    return unsupported("the terms' lengths do not match the operand ranks");

  for (char c : output)
    if (!lhs.contains(c) && !rhs.contains(c))
      return unsupported(std::string("output letter '") + c +
                         "' is in neither operand");
  Type element = a.getElementType();
  if (b.getElementType() != element)
    return ctx.mismatchedTypes();
  OpBuilder &builder = ctx.builder();
  // Letters summed out of one operand only are summed there first.
  auto sumAlone = [&](Value v, std::string &term,
                      StringRef other) -> FailureOr<Value> {
    SmallVector<int64_t> axes;
    std::string kept;
    for (auto [i, c] : llvm::enumerate(term)) {
      if (other.contains(c) || output.contains(c))
        kept += c;
      else
        axes.push_back(static_cast<int64_t>(i));
    }
    if (axes.empty())
      return v;
    term = kept;
    FailureOr<Value> r = ctx.create<dfg::ReduceSumOp>(
        dfg::reduceShape(shapeOf(v), axes, false), element, v,
        builder.getDenseI64ArrayAttr(axes), false);
    return failed(r) ? r : FailureOr<Value>(ctx.refineType(*r));
  };
  std::string lhsTerm = lhs.str(), rhsTerm = rhs.str();
  FailureOr<Value> aIn = sumAlone(ctx.input(0), lhsTerm, rhs);
  FailureOr<Value> bIn = sumAlone(ctx.input(1), rhsTerm, lhs);
  if (failed(aIn) || failed(bIn))
    return failure();
  lhs = lhsTerm;
  rhs = rhsTerm;

  std::string batch, freeA, freeB, k;
  for (char c : lhs) {
    bool inB = rhs.contains(c), inOut = output.contains(c);
    if (inB && inOut)
      batch += c;
    else if (inB)
      k += c;
    else
      freeA += c;
  }
  for (char c : rhs)
    if (!lhs.contains(c))
      freeB += c;
  if (batch.empty() && !k.empty())
    if (std::optional<LogicalResult> done =
            einsumAsProjection(ctx, lhs, rhs, output, *aIn, *bIn))
      return *done;
  std::string m = freeA.empty() ? "" : freeA.substr(freeA.size() - 1);
  std::string n = freeB.empty() ? "" : freeB.substr(freeB.size() - 1);
  std::string ma = freeA.substr(0, freeA.size() - m.size());
  std::string nb = freeB.substr(0, freeB.size() - n.size());
  // Several contracted letters (XLNet's output projection 'ibnd,hnd->ibh'
  // sums heads and head dimensions) become one, of their product, each
  // operand's letters made adjacent and merged by a reshape.
  int64_t contracted = 1;
  auto aSizes = shapeOf(*aIn), bSizes = shapeOf(*bIn);
  for (char c : k) {
    int64_t size = aSizes[lhs.find(c)];
    if (k.size() > 1 &&
        (ShapedType::isDynamic(size) || size != bSizes[rhs.find(c)]))
      return unsupported(std::string("contracted letter '") + c +
                         "' has a dynamic or mismatched size, and more "
                         "than one letter is contracted");
    contracted *= size;
  }
  auto transpose = [&](Value v, ArrayRef<int64_t> perm) {
    return transposeBy(ctx, v, perm);
  };
  // Inserts unit dimensions at `axes` (result positions, increasing).
  auto units = [&](FailureOr<Value> v,
                   ArrayRef<int64_t> axes) -> FailureOr<Value> {
    if (failed(v) || axes.empty())
      return v;
    return ctx.create<dfg::UnsqueezeOp>(dfg::unsqueezeShape(shapeOf(*v), axes),
                                        element, *v,
                                        builder.getDenseI64ArrayAttr(axes));
  };
  auto range = [](int64_t from, int64_t count) {
    return llvm::to_vector(llvm::seq<int64_t>(from, from + count));
  };
  int64_t nB = batch.size(), nMa = ma.size(), nNb = nb.size();
  int64_t matrix = nB + nMa + nNb; // first matrix dimension of the product

  // a -> [B, Ma, 1 x |Nb|, M|1, K|1]
  SmallVector<int64_t> lhsUnits = range(nB + nMa, nNb);
  if (m.empty())
    lhsUnits.push_back(matrix);
  if (k.empty())
    lhsUnits.push_back(matrix + 1);
  // [lead..., K...] -> [lead..., prod K] (0 keeps a dimension).
  auto mergeK = [&](FailureOr<Value> v, int64_t lead) -> FailureOr<Value> {
    if (failed(v) || k.size() < 2)
      return v;
    SmallVector<int64_t> spec(lead, 0);
    spec.push_back(contracted);
    return reshapeTo(ctx, *v, spec);
  };
  FailureOr<Value> lhsV =
      units(mergeK(transpose(*aIn, permutation(lhs, batch + ma + m + k)),
                   nB + nMa + static_cast<int64_t>(m.size())),
            lhsUnits);
  // b -> [B, 1 x |Ma|, Nb, K|1, N|1]
  SmallVector<int64_t> rhsUnits = range(nB, nMa);
  if (k.empty())
    rhsUnits.push_back(matrix);
  if (n.empty())
    rhsUnits.push_back(matrix + 1);
  // b's contracted letters merged after its N, then moved before it.
  FailureOr<Value> rhsV;
  if (k.size() < 2) {
    rhsV =
        units(transpose(*bIn, permutation(rhs, batch + nb + k + n)), rhsUnits);
  } else {
    int64_t lead = nB + nNb + static_cast<int64_t>(n.size());
    rhsV = mergeK(transpose(*bIn, permutation(rhs, batch + nb + n + k)), lead);
    if (succeeded(rhsV) && !n.empty()) {
      SmallVector<int64_t> swap = range(0, lead + 1);
      std::swap(swap[lead - 1], swap[lead]);
      rhsV = transpose(*rhsV, swap);
    }
    rhsV = units(rhsV, rhsUnits);
  }
  if (failed(lhsV) || failed(rhsV))
    return failure();
  FailureOr<Value> product = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(*lhsV), shapeOf(*rhsV)), element, *lhsV, *rhsV);

  // [B, Ma, Nb, M|1, N|1] -> drop the stand-ins -> output order.
  SmallVector<int64_t> standIns;
  if (m.empty())
    standIns.push_back(matrix);
  if (n.empty())
    standIns.push_back(matrix + 1);
  if (succeeded(product) && !standIns.empty())
    product = ctx.create<dfg::SqueezeOp>(
        dfg::squeezeShape(shapeOf(*product), standIns), element, *product,
        builder.getDenseI64ArrayAttr(standIns));
  if (failed(product))
    return failure();
  FailureOr<Value> result =
      transpose(*product, permutation(batch + ma + nb + m + n, output));
  return failed(result) ? failure() : ctx.setResults(*result);
}

} // namespace

void populateContractionLegalizations(LegalizationTable &table) {
  table.add("", "MatMul", 13, legalizeMatMul);
  table.add("com.microsoft", "FusedMatMul", 1, legalizeFusedMatMul);
  table.add("", "Conv", 11, legalizeConv);
  table.add("", "Conv", 22, legalizeConv); // + bf16
  table.add("", "MaxPool", 12, legalizePool);
  table.add("", "MaxPool", 22, legalizePool);     // + bf16
  table.add("", "AveragePool", 11, legalizePool); // TorchScript's at opset 17
  table.add("", "AveragePool", 19, legalizePool); // + dilations
  table.add("", "AveragePool", 22, legalizePool); // + bf16
  table.add("", "Gemm", 13, legalizeGemm);
  table.add("", "Einsum", 12, legalizeEinsum);
  table.add("", "DFT", 17, legalizeDFT);
  table.add("", "DFT", 20, legalizeDFT); // the axis an input
  table.add("", "Resize", 11, legalizeResize);
  table.add("", "Resize", 13, legalizeResize);
  table.add("", "Resize", 18, legalizeResize); // + antialias, axes, policy
  table.add("", "Resize", 19, legalizeResize); // + half_pixel_symmetric
}

} // namespace meshc::onnximport
