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

using namespace mlir;

namespace meshc::onnximport {
namespace {

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
  table.add("", "Gemm", 13, legalizeGemm);
  table.add("", "Einsum", 12, legalizeEinsum);
}

} // namespace meshc::onnximport
