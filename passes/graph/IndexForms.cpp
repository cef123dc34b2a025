//===- IndexForms.cpp - Index tensors as affine functions of position -----===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "passes/graph/IndexForms.h"

#include "dialects/dfg/IR/DfgOps.h"

#include <cmath>
#include <utility>

using namespace mlir;

namespace meshc::graph {

bool IndexForm::isPosition(int64_t axis) const {
  if (axis < 0 || axis >= static_cast<int64_t>(coef.size()) ||
      constantOffset() != 0)
    return false;
  for (auto [a, c] : llvm::enumerate(coef))
    if (c != (static_cast<int64_t>(a) == axis ? 1 : 0))
      return false;
  return true;
}

bool IndexForm::isUniform() const {
  return llvm::all_of(coef, [](int64_t c) { return c == 0; });
}

std::optional<int64_t> IndexForm::constantOffset() const {
  if (auto c = dyn_cast_or_null<AffineConstantExpr>(offset))
    return c.getValue();
  return std::nullopt;
}

namespace {

/// Bound on the ops followed back from a value.
constexpr int kMaxDepth = 16;

/// Element types whose values the analysis can state exactly.
bool holdsIntegers(Type element) {
  if (element.isSignlessInteger())
    return element.getIntOrFloatBitWidth() >= 32;
  return element.isF32() || element.isF64();
}

/// An integer-valued splat (or scalar literal) of moderate size.
std::optional<int64_t> integerSplat(Value v, const ConstantReader &reader) {
  std::optional<double> s = reader.splat(v);
  if (!s || *s != std::floor(*s) || std::fabs(*s) > 9.0e15)
    return std::nullopt;
  return static_cast<int64_t>(*s);
}

/// A literal whose values are affine in their position.
std::optional<SmallVector<int64_t>> affineLiteral(const dfg::EvalTensor &t) {
  int64_t rank = static_cast<int64_t>(t.shape.size());
  int64_t n = t.numElements();
  if (n == 0 || !t.isExact())
    return std::nullopt;
  for (double x : t.values)
    if (x != std::floor(x) || std::fabs(x) > 9.0e15)
      return std::nullopt;
  SmallVector<int64_t> strides(rank, 1), coef(rank, 0);
  for (int64_t a = rank - 2; a >= 0; --a)
    strides[a] = strides[a + 1] * t.shape[a + 1];
  auto value = [&](int64_t flat) {
    return static_cast<int64_t>(t.values[flat]);
  };
  for (int64_t a = 0; a < rank; ++a)
    if (t.shape[a] > 1)
      coef[a] = value(strides[a]) - value(0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t expected = value(0), rest = flat;
    for (int64_t a = 0; a < rank; ++a) {
      expected += coef[a] * (rest / strides[a]);
      rest %= strides[a];
    }
    if (value(flat) != expected)
      return std::nullopt;
  }
  return coef;
}

} // namespace

std::optional<IndexForm> IndexForms::of(Value v) { return at(v, 0); }

bool IndexForms::isPosition(Value v, int64_t axis) {
  std::optional<IndexForm> form = of(v);
  return form && form->isPosition(axis);
}

std::optional<IndexForm> IndexForms::at(Value v, int depth) {
  if (depth > kMaxDepth) {
    cutShort_ = true;
    return std::nullopt;
  }
  if (auto it = memo_.find(v); it != memo_.end())
    return it->second;
  // An answer cut short by the depth bound may differ when v is met
  // nearer the root: it is not remembered.
  bool outer = std::exchange(cutShort_, false);
  std::optional<IndexForm> form = compute(v, depth);
  if (!cutShort_)
    memo_[v] = form;
  cutShort_ |= outer;
  return form;
}

std::optional<IndexForm> IndexForms::keepNonUnit(const IndexForm &form,
                                                 Value from, Value to) {
  auto fromType = cast<RankedTensorType>(from.getType());
  auto toType = cast<RankedTensorType>(to.getType());
  SmallVector<int64_t> a, b;
  for (int64_t i = 0; i < fromType.getRank(); ++i)
    if (fromType.getDimSize(i) != 1)
      a.push_back(i);
  for (int64_t i = 0; i < toType.getRank(); ++i)
    if (toType.getDimSize(i) != 1)
      b.push_back(i);
  if (a.size() != b.size())
    return std::nullopt;
  SmallVector<AffineExpr> fromDims(shapes_.dims(from));
  SmallVector<AffineExpr> toDims(shapes_.dims(to));
  for (auto [x, y] : llvm::zip_equal(a, b)) {
    int64_t sx = fromType.getDimSize(x), sy = toType.getDimSize(y);
    if (!ShapedType::isDynamic(sx) || !ShapedType::isDynamic(sy)) {
      if (sx != sy)
        return std::nullopt;
    } else if (!fromDims[x] || !toDims[y] ||
               !dfg::sameDim(fromDims[x], toDims[y])) {
      return std::nullopt;
    }
  }
  IndexForm out{SmallVector<int64_t>(toType.getRank(), 0), form.offset};
  for (auto [x, y] : llvm::zip_equal(a, b))
    out.coef[y] = form.coef[x];
  return out;
}

std::optional<IndexForm> IndexForms::broadcastTo(const IndexForm &form,
                                                 Value from, Value to) {
  auto fromType = cast<RankedTensorType>(from.getType());
  auto toType = cast<RankedTensorType>(to.getType());
  if (fromType.getRank() > toType.getRank())
    return std::nullopt;
  int64_t lead = toType.getRank() - fromType.getRank();
  IndexForm out{SmallVector<int64_t>(toType.getRank(), 0), form.offset};
  for (int64_t a = 0; a < fromType.getRank(); ++a) {
    if (form.coef[a] == 0)
      continue;
    // A dimension that varies must be the result's, not broadcast over it.
    int64_t sf = fromType.getDimSize(a), st = toType.getDimSize(lead + a);
    if (!ShapedType::isDynamic(sf) || !ShapedType::isDynamic(st)) {
      if (sf != st)
        return std::nullopt;
    } else {
      AffineExpr df = shapes_.dims(from)[a];
      AffineExpr dt = shapes_.dims(to)[lead + a];
      if (!df || !dt || !dfg::sameDim(df, dt))
        return std::nullopt;
    }
    out.coef[lead + a] = form.coef[a];
  }
  return out;
}

/// True if every element of `form` is at least 0: no negative coefficient
/// and a constant offset of at least 0 (an index that counts from the
/// start).
static bool nonNegative(const IndexForm &form) {
  std::optional<int64_t> offset = form.constantOffset();
  return offset && *offset >= 0 &&
         llvm::all_of(form.coef, [](int64_t c) { return c >= 0; });
}

std::optional<IndexForm> IndexForms::gathered(Operation *def, Value v,
                                              int depth) {
  // An index form of the data read at positions that are index forms
  // themselves (HF's position ids read at the query and key positions):
  // each index shifts the data's coefficient along its axis onto the
  // result's axes the index varies along.
  std::optional<IndexForm> data = at(def->getOperand(0), depth + 1);
  if (!data)
    return std::nullopt;
  int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  int64_t indexRank =
      cast<RankedTensorType>(def->getOperand(1).getType()).getRank();
  int64_t dataRank = static_cast<int64_t>(data->coef.size());
  IndexForm out{SmallVector<int64_t>(rank, 0), data->offset};
  // The data's axis `axis` read at the index whose form is `index` (its
  // coefficients laid on the result's axes from `first`).
  auto readAt = [&](int64_t axis, const IndexForm &index, int64_t first) {
    int64_t c = data->coef[axis];
    for (auto [j, k] : llvm::enumerate(index.coef))
      out.coef[first + j] += c * k;
    out.offset = out.offset + index.offset * c;
  };
  if (auto gather = dyn_cast<dfg::GatherOp>(def)) {
    std::optional<IndexForm> indices = at(gather.getIndices(), depth + 1);
    if (!indices || !nonNegative(*indices))
      return std::nullopt;
    int64_t axis = static_cast<int64_t>(gather.getAxis());
    if (axis < 0)
      axis += dataRank;
    for (int64_t a = 0; a < dataRank; ++a) {
      if (a == axis)
        readAt(a, *indices, axis);
      else
        out.coef[a < axis ? a : a - 1 + indexRank] += data->coef[a];
    }
    return out;
  }
  auto nd = cast<dfg::GatherNDOp>(def);
  int64_t batch = nd.getBatchDims();
  std::optional<SmallVector<IndexForm>> tuple =
      tupleForms(nd.getIndices(), depth + 1);
  if (!tuple)
    return std::nullopt;
  int64_t k = static_cast<int64_t>(tuple->size());
  for (int64_t a = 0; a < batch; ++a)
    out.coef[a] += data->coef[a];
  for (int64_t c = 0; c < k; ++c)
    readAt(batch + c, (*tuple)[c], 0);
  for (int64_t a = batch + k; a < dataRank; ++a)
    out.coef[indexRank - 1 + a - batch - k] += data->coef[a];
  return out;
}

std::optional<SmallVector<IndexForm>>
IndexForms::tupleForms(Value indices, int depth) {
  // Each component of the index tuples along the last axis, as a form over
  // the other axes: from the indices' own form, or from the pieces of a
  // concat along the last axis (the exporter's stacked batch and position
  // indices).
  auto type = cast<RankedTensorType>(indices.getType());
  int64_t last = type.getRank() - 1;
  if (last < 0 || type.isDynamicDim(last))
    return std::nullopt;
  SmallVector<IndexForm> out;
  if (std::optional<IndexForm> form = at(indices, depth)) {
    for (int64_t c = 0; c < type.getDimSize(last); ++c)
      out.push_back({SmallVector<int64_t>(form->coef.begin(),
                                          form->coef.end() - 1),
                     form->offset + form->coef[last] * c});
  } else if (auto concat = indices.getDefiningOp<dfg::ConcatOp>();
             concat &&
             (static_cast<int64_t>(concat.getAxis()) == last ||
              static_cast<int64_t>(concat.getAxis()) == -1) &&
             depth < kMaxDepth) {
    for (Value piece : concat.getInputs()) {
      std::optional<SmallVector<IndexForm>> part =
          tupleForms(piece, depth + 1);
      if (!part)
        return std::nullopt;
      // A piece broadcasts to the concat's other axes only if it has them.
      SmallVector<AffineExpr> pieceDims(shapes_.dims(piece));
      SmallVector<AffineExpr> allDims(shapes_.dims(indices));
      if (!llvm::equal(ArrayRef(pieceDims).drop_back(),
                       ArrayRef(allDims).drop_back(),
                       [](AffineExpr a, AffineExpr b) {
                         return a && b && dfg::sameDim(a, b);
                       }))
        return std::nullopt;
      out.append(*part);
    }
  } else {
    return std::nullopt;
  }
  if (!llvm::all_of(out, nonNegative))
    return std::nullopt;
  return out;
}

std::optional<IndexForm> IndexForms::compute(Value v, int depth) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !holdsIntegers(type.getElementType()))
    return std::nullopt;
  MLIRContext *ctx = v.getContext();
  int64_t rank = type.getRank();
  auto uniform = [&](AffineExpr offset) {
    return IndexForm{SmallVector<int64_t>(rank, 0), offset};
  };
  if (std::optional<int64_t> c = integerSplat(v, reader_))
    return uniform(getAffineConstantExpr(*c, ctx));
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto operand = [&](unsigned i) { return at(def->getOperand(i), depth + 1); };

  if (auto sizes = dyn_cast<dfg::SizesOp>(def)) {
    SmallVector<AffineExpr> read =
        shapes_.table().read(sizes.getMap(), sizes.getSymbols());
    if (read.size() != 1 || !read[0])
      return std::nullopt;
    return uniform(read[0]);
  }
  if (auto range = dyn_cast<dfg::RangeOp>(def)) {
    double delta = range.getDelta();
    if (rank != 1 || delta != std::floor(delta) || std::fabs(delta) > 1e9)
      return std::nullopt;
    AffineExpr start =
        shapes_.table().read(range.getBounds(), range.getSymbols())[0];
    if (!start)
      return std::nullopt;
    int64_t step = type.getDimSize(0) == 1 ? 0 : static_cast<int64_t>(delta);
    return IndexForm{{step}, start};
  }
  if (isa<dfg::ConstantOp>(def)) {
    std::optional<dfg::EvalTensor> values = reader_.read(v);
    if (!values)
      return std::nullopt;
    std::optional<SmallVector<int64_t>> coef = affineLiteral(*values);
    if (!coef)
      return std::nullopt;
    return IndexForm{*coef, getAffineConstantExpr(
                                static_cast<int64_t>(values->values[0]), ctx)};
  }
  if (isa<dfg::ReshapeOp, dfg::UnsqueezeOp, dfg::SqueezeOp>(def)) {
    std::optional<IndexForm> in = operand(0);
    if (!in)
      return std::nullopt;
    return keepNonUnit(*in, def->getOperand(0), v);
  }
  if (auto transpose = dyn_cast<dfg::TransposeOp>(def)) {
    std::optional<IndexForm> in = operand(0);
    if (!in)
      return std::nullopt;
    IndexForm out{SmallVector<int64_t>(rank, 0), in->offset};
    for (auto [a, p] : llvm::enumerate(transpose.getPerm()))
      out.coef[a] = in->coef[p];
    return out;
  }
  if (isa<dfg::ExpandOp, dfg::SymbolicExpandOp, dfg::CastOp>(def)) {
    std::optional<IndexForm> in = operand(0);
    if (!in)
      return std::nullopt;
    return broadcastTo(*in, def->getOperand(0), v);
  }
  if (isa<dfg::NegOp>(def)) {
    std::optional<IndexForm> in = operand(0);
    if (!in)
      return std::nullopt;
    for (int64_t &c : in->coef)
      c = -c;
    in->offset = in->offset * -1;
    return in;
  }
  if (isa<dfg::MulOp>(def)) {
    // One factor an integer constant.
    for (unsigned k = 0; k < 2; ++k) {
      std::optional<int64_t> factor = integerSplat(def->getOperand(k), reader_);
      if (!factor)
        continue;
      std::optional<IndexForm> in = operand(1 - k);
      if (!in)
        return std::nullopt;
      in = broadcastTo(*in, def->getOperand(1 - k), v);
      if (!in)
        return std::nullopt;
      for (int64_t &c : in->coef)
        c *= *factor;
      in->offset = in->offset * *factor;
      return in;
    }
    return std::nullopt;
  }
  if (isa<dfg::GatherOp, dfg::GatherNDOp>(def))
    return gathered(def, v, depth);
  if (isa<dfg::AddOp, dfg::SubOp>(def)) {
    std::optional<IndexForm> a = operand(0), b = operand(1);
    if (!a || !b)
      return std::nullopt;
    a = broadcastTo(*a, def->getOperand(0), v);
    b = broadcastTo(*b, def->getOperand(1), v);
    if (!a || !b)
      return std::nullopt;
    int64_t sign = isa<dfg::SubOp>(def) ? -1 : 1;
    for (auto [x, y] : llvm::zip_equal(a->coef, b->coef))
      x += sign * y;
    a->offset = a->offset + b->offset * sign;
    return a;
  }
  return std::nullopt;
}

} // namespace meshc::graph
