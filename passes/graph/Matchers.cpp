//===- Matchers.cpp - Helpers of the raising patterns ---------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/Matchers.h"

#include "dialects/dfg/IR/DfgOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;

namespace meshc::graph {

std::optional<dfg::EvalTensor> ConstantReader::read(Value value) const {
  Operation *op = value ? value.getDefiningOp() : nullptr;
  auto type =
      value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
  if (!op || !type || !type.hasStaticShape() ||
      type.getNumElements() > kMaxElements)
    return std::nullopt;
  if (auto weight = dyn_cast<dfg::WeightOp>(op)) {
    if (weightsDir_.empty())
      return std::nullopt;
    llvm::SmallString<256> path(weightsDir_);
    llvm::sys::path::append(path, weight.getFile());
    if (!llvm::sys::fs::exists(path))
      return std::nullopt;
  } else if (!isa<dfg::ConstantOp>(op)) {
    return std::nullopt;
  }
  // A pattern that cannot read its data simply does not fire: silence the
  // evaluator's diagnostics (a truncated file is reported by later stages).
  ScopedDiagnosticHandler silence(op->getContext(),
                                  [](Diagnostic &) { return success(); });
  auto values = dfg::evaluateOp(op, {}, weightsDir_);
  if (failed(values))
    return std::nullopt;
  return std::move(values->front());
}

std::optional<double> ConstantReader::splat(Value value) const {
  auto constant =
      value ? value.getDefiningOp<dfg::ConstantOp>() : dfg::ConstantOp();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || dense.empty())
    return std::nullopt;
  // A splat is read from its one stored element: the patterns ask this of
  // every operand they look at, and a splat may stand for millions.
  if (dense.isSplat()) {
    Type element = dense.getElementType();
    if (isa<FloatType>(element))
      return dense.getSplatValue<APFloat>().convertToDouble();
    // (Each branch converted on its own: a conditional of uint64_t and
    // int64_t would read a negative value as unsigned.)
    APInt v = dense.getSplatValue<APInt>();
    if (element.isInteger(1))
      return static_cast<double>(v.getZExtValue());
    return static_cast<double>(v.getSExtValue());
  }
  if (dense.getNumElements() > 64)
    return std::nullopt;
  auto values = read(value);
  if (!values || values->values.empty())
    return std::nullopt;
  double first = values->values.front();
  for (double v : values->values)
    if (v != first && !(std::isnan(v) && std::isnan(first)))
      return std::nullopt;
  return first;
}

bool isNear(double actual, double expected, Type element) {
  double ulp = 1.2e-7; // f32 and wider
  if (element.isF16())
    ulp = 9.8e-4;
  else if (element.isBF16())
    ulp = 7.9e-3;
  return std::abs(actual - expected) <=
         4 * ulp * std::max(std::abs(expected), 1e-30);
}

namespace {

using Poly = llvm::SmallVector<double, 5>;
constexpr size_t kMaxDegree = 4;
constexpr int kMaxDepth = 24;

std::optional<Poly> polyMul(const Poly &a, const Poly &b) {
  Poly r(a.size() + b.size() - 1, 0.0);
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < b.size(); ++j)
      r[i + j] += a[i] * b[j];
  while (r.size() > 1 && r.back() == 0.0)
    r.pop_back();
  if (r.size() > kMaxDegree + 1)
    return std::nullopt;
  return r;
}

Poly polyAdd(Poly a, const Poly &b, double sign) {
  if (a.size() < b.size())
    a.resize(b.size(), 0.0);
  for (size_t i = 0; i < b.size(); ++i)
    a[i] += sign * b[i];
  return a;
}

std::optional<Poly> poly(Value expr, Value x, const ConstantReader &reader,
                         int depth) {
  if (expr == x)
    return Poly{0.0, 1.0};
  if (std::optional<double> c = reader.splat(expr))
    return Poly{*c};
  Operation *op = expr.getDefiningOp();
  if (!op || depth > kMaxDepth)
    return std::nullopt;
  auto sub = [&](Value v) { return poly(v, x, reader, depth + 1); };
  if (isa<dfg::AddOp, dfg::SubOp, dfg::MulOp>(op)) {
    auto l = sub(op->getOperand(0)), r = sub(op->getOperand(1));
    if (!l || !r)
      return std::nullopt;
    if (isa<dfg::MulOp>(op))
      return polyMul(*l, *r);
    return polyAdd(*l, *r, isa<dfg::AddOp>(op) ? 1.0 : -1.0);
  }
  if (auto neg = dyn_cast<dfg::NegOp>(op)) {
    auto l = sub(neg.getInput());
    if (!l)
      return std::nullopt;
    return polyAdd(Poly{0.0}, *l, -1.0);
  }
  if (auto div = dyn_cast<dfg::DivOp>(op)) {
    std::optional<double> c = reader.splat(div.getRhs());
    auto l = sub(div.getLhs());
    if (!c || *c == 0.0 || !l)
      return std::nullopt;
    return polyMul(*l, Poly{1.0 / *c});
  }
  if (auto pow = dyn_cast<dfg::PowOp>(op)) {
    std::optional<double> n = reader.splat(pow.getRhs());
    auto base = sub(pow.getLhs());
    if (!n || !base || *n < 0 || *n > kMaxDegree || *n != std::floor(*n))
      return std::nullopt;
    Poly r{1.0};
    for (int i = 0; i < static_cast<int>(*n); ++i) {
      auto next = polyMul(r, *base);
      if (!next)
        return std::nullopt;
      r = *next;
    }
    return r;
  }
  return std::nullopt;
}

void collectProduct(Value value, const ConstantReader &reader, Product &p,
                    int depth) {
  if (std::optional<double> c = reader.splat(value)) {
    p.coefficient *= *c;
    return;
  }
  Operation *op = value.getDefiningOp();
  if (op && depth < kMaxDepth) {
    if (auto mul = dyn_cast<dfg::MulOp>(op)) {
      collectProduct(mul.getLhs(), reader, p, depth + 1);
      collectProduct(mul.getRhs(), reader, p, depth + 1);
      return;
    }
    if (auto neg = dyn_cast<dfg::NegOp>(op)) {
      p.coefficient = -p.coefficient;
      collectProduct(neg.getInput(), reader, p, depth + 1);
      return;
    }
    if (auto div = dyn_cast<dfg::DivOp>(op)) {
      std::optional<double> c = reader.splat(div.getRhs());
      if (c && *c != 0.0) {
        p.coefficient /= *c;
        collectProduct(div.getLhs(), reader, p, depth + 1);
        return;
      }
    }
  }
  p.terms.push_back(value);
}

void collectSum(Value value, const ConstantReader &reader, Sum &s, double sign,
                int depth) {
  if (std::optional<double> c = reader.splat(value)) {
    s.constant += sign * *c;
    return;
  }
  Operation *op = value.getDefiningOp();
  if (op && depth < kMaxDepth && isa<dfg::AddOp, dfg::SubOp>(op)) {
    collectSum(op->getOperand(0), reader, s, sign, depth + 1);
    collectSum(op->getOperand(1), reader, s, isa<dfg::AddOp>(op) ? sign : -sign,
               depth + 1);
    return;
  }
  s.terms.push_back({value, sign});
}

} // namespace

std::optional<llvm::SmallVector<double, 5>>
polynomialIn(Value expr, Value x, const ConstantReader &reader) {
  return poly(expr, x, reader, 0);
}

Product productOf(Value value, const ConstantReader &reader) {
  Product p;
  collectProduct(value, reader, p, 0);
  return p;
}

Sum sumOf(Value value, const ConstantReader &reader) {
  Sum s;
  collectSum(value, reader, s, 1.0, 0);
  return s;
}

std::optional<int64_t> trailingAxesStart(ArrayRef<int64_t> axes, int64_t rank) {
  if (axes.empty())
    return std::nullopt;
  int64_t first = rank - static_cast<int64_t>(axes.size());
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != first + static_cast<int64_t>(i))
      return std::nullopt;
  return first;
}

} // namespace meshc::graph
