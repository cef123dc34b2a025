//===- LegalizeContraction.cpp - MatMul and Gemm -> dfg -------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace meshc::onnximport {
namespace {

/// Conv over one spatial axis (torch's Conv1d: LFM2's short convolutions,
/// depthwise and causal), written with meshc's own ops: x padded (padAxis),
/// then for each kernel tap k the window of x it reads (a slice along the
/// axis, starting at k * dilation, stepping by the stride) times the tap's
/// weights, summed over the taps: an elementwise product by the tap's
/// column where each output channel reads one input channel (depthwise),
/// else a product by the tap's [out, in] matrix per group. Exact; the work
/// is the convolution's own. Conv over two or more spatial axes, and
/// strides above 1 over a symbolic length, are refused by name.
LogicalResult legalizeConv(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType x = ctx.inputType(0), w = ctx.inputType(1);
  if (x.getElementType() != w.getElementType())
    return ctx.mismatchedTypes();
  if (x.getRank() != 3 || w.getRank() != 3)
    return ctx.error("Conv over " + std::to_string(x.getRank() - 2) +
                     " spatial axes is not supported (only one: [batch, "
                     "channels, length] by [out, in / group, kernel])");
  Type element = x.getElementType();
  int64_t channels = x.getDimSize(1), out = w.getDimSize(0),
          perGroup = w.getDimSize(1), taps = w.getDimSize(2);
  int64_t groups = ctx.attrInt("group", 1);
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
  auto one = [&](StringRef name, int64_t dflt) -> FailureOr<int64_t> {
    std::optional<SmallVector<int64_t>> v = ctx.attrInts(name);
    if (!v)
      return dflt;
    if (v->size() != 1)
      return ctx.error(name + " has " + std::to_string(v->size()) +
                       " entries for one spatial axis");
    return v->front();
  };
  FailureOr<int64_t> stride = one("strides", 1), dilation = one("dilations", 1);
  if (failed(stride) || failed(dilation))
    return failure();
  if (std::optional<SmallVector<int64_t>> k = ctx.attrInts("kernel_shape");
      k && (k->size() != 1 || k->front() != taps))
    return ctx.error("kernel_shape does not match the weight's " +
                     std::to_string(taps) + " taps");
  int64_t before = 0, after = 0;
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  int64_t span = *dilation * (taps - 1);
  if (autoPad == "NOTSET") {
    if (std::optional<SmallVector<int64_t>> pads = ctx.attrInts("pads")) {
      if (pads->size() != 2)
        return ctx.error("pads has " + std::to_string(pads->size()) +
                         " entries for one spatial axis");
      before = (*pads)[0];
      after = (*pads)[1];
    }
  } else if ((autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") &&
             *stride == 1) {
    before = autoPad == "SAME_UPPER" ? span / 2 : span - span / 2;
    after = span - before;
  } else if (autoPad != "VALID") {
    return ctx.error("Conv auto_pad '" + autoPad + "' with stride " +
                     std::to_string(*stride) + " is not supported");
  }
  if (*stride < 1 || *dilation < 1 || before < 0 || after < 0)
    return ctx.error("Conv needs positive strides and dilations and "
                     "non-negative pads");
  int64_t length = x.getDimSize(2);
  if (*stride > 1 && ShapedType::isDynamic(length))
    return ctx.error("Conv with stride " + std::to_string(*stride) +
                     " over a symbolic length is not supported");
  OpBuilder &b = ctx.builder();
  FailureOr<Value> padded =
      padAxis(ctx, ctx.input(0), 2, before, after, ctx.scalar(0, element));
  if (failed(padded))
    return failure();
  int64_t paddedLength =
      ShapedType::isDynamic(length) ? length : length + before + after;
  if (!ShapedType::isDynamic(paddedLength) && paddedLength <= span)
    return ctx.error("Conv's kernel spans " + std::to_string(span + 1) +
                     " positions, more than the padded length " +
                     std::to_string(paddedLength));
  auto slice = [&](Value v, int64_t axis, int64_t start, int64_t end,
                   int64_t step) -> FailureOr<Value> {
    SmallVector<int64_t> starts{start}, ends{end}, axes{axis}, steps{step};
    FailureOr<Value> s = ctx.create<dfg::SliceOp>(
        dfg::sliceShape(shapeOf(v), starts, ends, axes, steps), element, v,
        b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(ends),
        b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(steps));
    return failed(s) ? s : FailureOr<Value>(ctx.refineType(*s));
  };
  auto reshape = [&](Value v, ArrayRef<int64_t> spec) -> FailureOr<Value> {
    FailureOr<Value> r =
        ctx.create<dfg::ReshapeOp>(dfg::reshapeShape(shapeOf(v), spec), element,
                                   v, b.getDenseI64ArrayAttr(spec));
    return failed(r) ? r : FailureOr<Value>(ctx.refineType(*r));
  };
  bool depthwise = perGroup == 1 && out == channels;
  int64_t outGroup = out / groups;
  Value acc;
  for (int64_t k = 0; k < taps; ++k) {
    int64_t start = k * *dilation, end;
    if (*stride == 1)
      end = k == taps - 1 ? std::numeric_limits<int64_t>::max()
                          : -(*dilation * (taps - 1 - k));
    else
      end = start + ((paddedLength - span - 1) / *stride) * *stride + 1;
    FailureOr<Value> window = slice(*padded, 2, start, end, *stride);
    FailureOr<Value> tap =
        failed(window) ? window : slice(ctx.input(1), 2, k, k + 1, 1);
    if (failed(tap))
      return failure();
    FailureOr<Value> term;
    if (depthwise) {
      // [out, 1, 1] -> [out, 1]: one weight per channel, along the length.
      FailureOr<Value> column = reshape(*tap, {out, 1});
      term = failed(column)
                 ? column
                 : binary<dfg::MulOp>(ctx, *window, *column, element);
    } else if (groups == 1) {
      FailureOr<Value> matrix = reshape(*tap, {out, perGroup});
      term = failed(matrix)
                 ? matrix
                 : ctx.create<dfg::MatMulOp>(
                       dfg::matmulShape({out, perGroup}, shapeOf(*window)),
                       element, *matrix, *window);
    } else {
      FailureOr<Value> matrix = reshape(*tap, {groups, outGroup, perGroup});
      FailureOr<Value> grouped =
          failed(matrix) ? matrix : reshape(*window, {0, groups, perGroup, -1});
      FailureOr<Value> product =
          failed(grouped)
              ? grouped
              : ctx.create<dfg::MatMulOp>(
                    dfg::matmulShape(shapeOf(*matrix), shapeOf(*grouped)),
                    element, *matrix, *grouped);
      term = failed(product) ? product
                             : reshape(ctx.refineType(*product), {0, out, -1});
    }
    if (failed(term))
      return failure();
    Value t = ctx.refineType(*term);
    if (!acc) {
      acc = t;
      continue;
    }
    FailureOr<Value> sum = binary<dfg::AddOp>(ctx, acc, t, element);
    if (failed(sum))
      return failure();
    acc = *sum;
  }
  if (Value bias = ctx.input(2)) {
    FailureOr<Value> column = reshape(bias, {out, 1});
    FailureOr<Value> sum = failed(column)
                               ? column
                               : binary<dfg::AddOp>(ctx, acc, *column, element);
    if (failed(sum))
      return failure();
    acc = *sum;
  }
  return ctx.setResults(acc);
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
    if (!ctx.attrInt(attr, 0))
      return ctx.input(i);
    SmallVector<int64_t> perm{1, 0};
    return ctx.create<dfg::TransposeOp>(
        dfg::transposeShape(ctx.inputType(i).getShape(), perm), element,
        ctx.input(i), ctx.builder().getDenseI64ArrayAttr(perm));
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

/// Einsum(equation, a, b) in its matmul forms -> transposes, unsqueezes,
/// dfg.matmul, squeezes, transpose. Letters in both inputs and the output
/// are batch dimensions (B), in both inputs only contracted (K, at most one),
/// in one input and the output free. The last free letter of each operand is
/// its matrix dimension (M for a, N for b); earlier ones (Ma, Nb) broadcast
/// like batch dimensions against unit dimensions in the other operand:
///   a -> [B, Ma, 1.., M, K],  b -> [B, 1.., Nb, K, N],
///   matmul -> [B, Ma, Nb, M, N] -> output order,
/// with a unit dimension standing in for an absent M, N or K.
LogicalResult legalizeEinsum(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  std::string equation;
  for (char c : ctx.attrString("equation"))
    if (c != ' ')
      equation += c;
  auto [inputs, output] = StringRef(equation).split("->");
  auto [lhs, rhs] = inputs.split(',');
  auto unsupported = [&](const Twine &why) {
    return ctx.error("Einsum '" + equation +
                     "' is not a supported matmul form: " + why);
  };
  if (!StringRef(equation).contains("->") || rhs.empty() || rhs.contains(','))
    return unsupported("expected 'a,b->c' with two operands");
  if (equation.find('.') != std::string::npos)
    return unsupported("ellipsis is not supported");
  auto distinct = [](StringRef t) {
    return llvm::all_of(t, [&](char c) { return t.count(c) == 1; });
  };
  if (!distinct(lhs) || !distinct(rhs) || !distinct(output))
    return unsupported("a letter repeats within one term (diagonals)");
  RankedTensorType a = ctx.inputType(0), b = ctx.inputType(1);
  if (static_cast<int64_t>(lhs.size()) != a.getRank() ||
      static_cast<int64_t>(rhs.size()) != b.getRank())
    return unsupported("the terms' lengths do not match the operand ranks");

  std::string batch, freeA, freeB, k;
  for (char c : lhs) {
    bool inB = rhs.contains(c), inOut = output.contains(c);
    if (inB && inOut)
      batch += c;
    else if (inB)
      k += c;
    else if (inOut)
      freeA += c;
    else
      return unsupported(std::string("'") + c +
                         "' is summed out of one operand only");
  }
  for (char c : rhs) {
    if (lhs.contains(c))
      continue;
    if (!output.contains(c))
      return unsupported(std::string("'") + c +
                         "' is summed out of one operand only");
    freeB += c;
  }
  for (char c : output)
    if (!lhs.contains(c) && !rhs.contains(c))
      return unsupported(std::string("output letter '") + c +
                         "' is in neither operand");
  if (k.size() > 1)
    return unsupported("more than one contracted letter");
  std::string m = freeA.empty() ? "" : freeA.substr(freeA.size() - 1);
  std::string n = freeB.empty() ? "" : freeB.substr(freeB.size() - 1);
  std::string ma = freeA.substr(0, freeA.size() - m.size());
  std::string nb = freeB.substr(0, freeB.size() - n.size());

  Type element = a.getElementType();
  if (b.getElementType() != element)
    return ctx.mismatchedTypes();
  OpBuilder &builder = ctx.builder();
  auto transpose = [&](Value v, ArrayRef<int64_t> perm) -> FailureOr<Value> {
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return v;
    return ctx.create<dfg::TransposeOp>(dfg::transposeShape(shapeOf(v), perm),
                                        element, v,
                                        builder.getDenseI64ArrayAttr(perm));
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
  FailureOr<Value> lhsV = units(
      transpose(ctx.input(0), permutation(lhs, batch + ma + m + k)), lhsUnits);
  // b -> [B, 1 x |Ma|, Nb, K|1, N|1]
  SmallVector<int64_t> rhsUnits = range(nB, nMa);
  if (k.empty())
    rhsUnits.push_back(matrix);
  if (n.empty())
    rhsUnits.push_back(matrix + 1);
  FailureOr<Value> rhsV = units(
      transpose(ctx.input(1), permutation(rhs, batch + nb + k + n)), rhsUnits);
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
  table.add("", "Conv", 11, legalizeConv);
  table.add("", "Conv", 22, legalizeConv); // + bf16
  table.add("", "Gemm", 13, legalizeGemm);
  table.add("", "Einsum", 12, legalizeEinsum);
}

} // namespace meshc::onnximport
