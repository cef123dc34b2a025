//===- DfgShapes.cpp - Shape rules of dfg ops -----------------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgShapes.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace llvm;

namespace meshc::dfg {

static_assert(kDynamic == mlir::ShapedType::kDynamic,
              "dfg's dynamic dimension must be MLIR's");

static Error shapeError(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

static std::string formatDim(int64_t d) {
  return d == kDynamic ? "?" : std::to_string(d);
}

std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (auto [i, d] : enumerate(shape))
    s += (i ? "x" : "") + formatDim(d);
  return s;
}

/// Broadcasts one pair of aligned dimensions; false if they conflict.
/// A dynamic dimension against a static one other than 1 must equal it (or
/// be 1, which broadcasts), so the static size wins.
static bool broadcastDim(int64_t a, int64_t b, int64_t &out) {
  if (a == 1 || a == b) {
    out = b;
  } else if (b == 1) {
    out = a;
  } else if (a == kDynamic) {
    out = b;
  } else if (b == kDynamic) {
    out = a;
  } else {
    return false;
  }
  return true;
}

Expected<Shape> broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Align at the last dimension; a missing leading dimension acts as 1.
    int64_t a = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t b = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (!broadcastDim(a, b, result[rank - 1 - i]))
      return shapeError(formatv("shapes {0} and {1} do not broadcast: "
                                "dimension {2} from the end is {3} vs {4}",
                                formatShape(lhs), formatShape(rhs), i + 1, a,
                                b));
  }
  return result;
}

Expected<Shape> matmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  if (lhs.empty() || rhs.empty())
    return shapeError("matmul operands must have rank at least 1, got " +
                      formatShape(lhs) + " and " + formatShape(rhs));
  // numpy promotion: 1-D lhs is 1xK, 1-D rhs is Kx1.
  Shape a(lhs), b(rhs);
  if (lhs.size() == 1)
    a.insert(a.begin(), 1);
  if (rhs.size() == 1)
    b.push_back(1);

  int64_t ka = a.back(), kb = b[b.size() - 2];
  if (ka != kDynamic && kb != kDynamic && ka != kb)
    return shapeError(formatv("contracting dimensions differ: lhs {0} has K = "
                              "{1}, rhs {2} has K = {3}",
                              formatShape(lhs), ka, formatShape(rhs), kb));

  auto batch =
      broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (!batch)
    return shapeError("matmul batch dimensions: " +
                      toString(batch.takeError()));
  Shape result = std::move(*batch);
  if (lhs.size() > 1)
    result.push_back(a[a.size() - 2]);
  if (rhs.size() > 1)
    result.push_back(b.back());
  return result;
}

Expected<Shape> reshapeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> spec) {
  Shape result;
  int inferIndex = -1;
  for (auto [i, d] : enumerate(spec)) {
    if (d < -1)
      return shapeError(formatv("reshape entry {0} is {1}; entries must be "
                                "at least -1",
                                i, d));
    if (d == -1) {
      if (inferIndex >= 0)
        return shapeError(formatv("reshape entries {0} and {1} are both -1; "
                                  "at most one dimension can be inferred",
                                  inferIndex, i));
      inferIndex = i;
      result.push_back(kDynamic);
    } else if (d == 0) {
      if (i >= input.size())
        return shapeError(formatv("reshape entry {0} is 0 (copy), but the "
                                  "input {1} has only {2} dimension(s)",
                                  i, formatShape(input), input.size()));
      result.push_back(input[i]);
    } else {
      result.push_back(d);
    }
  }

  // Element counts: static factors on both sides, and the dynamic input
  // dimensions not copied to the same index (which would cancel out).
  int64_t inStatic = 1, outStatic = 1;
  bool inUnknown = false, outUnknown = false;
  // A count past int64 (num_heads = 2^62 in a bad model) is an error, not
  // a wrapped product.
  bool overflow = false;
  for (auto [i, d] : enumerate(input)) {
    bool copied = i < spec.size() && spec[i] == 0;
    if (d != kDynamic)
      overflow |= __builtin_mul_overflow(inStatic, d, &inStatic);
    else if (!copied)
      inUnknown = true;
  }
  for (auto [i, d] : enumerate(result)) {
    if (static_cast<int>(i) == inferIndex)
      continue;
    bool copied = spec[i] == 0;
    if (d != kDynamic)
      overflow |= __builtin_mul_overflow(outStatic, d, &outStatic);
    else if (!copied)
      outUnknown = true;
  }
  if (overflow)
    return shapeError(formatv("cannot reshape {0} to {1}: the element count "
                              "overflows 64 bits",
                              formatShape(input), formatShape(result)));
  if (inUnknown || outUnknown)
    return result; // the -1 entry (if any) stays dynamic

  if (inferIndex >= 0) {
    if (outStatic == 0 || inStatic % outStatic != 0)
      return shapeError(formatv("cannot reshape {0} ({1} elements) to {2}: "
                                "the -1 entry does not divide evenly",
                                formatShape(input), inStatic,
                                formatShape(result)));
    result[inferIndex] = inStatic / outStatic;
  } else if (inStatic != outStatic) {
    return shapeError(formatv("cannot reshape {0} ({1} elements) to {2} ({3} "
                              "elements)",
                              formatShape(input), inStatic, formatShape(result),
                              outStatic));
  }
  return result;
}

Expected<Shape> transposeShape(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> perm) {
  if (perm.size() != input.size())
    return shapeError(formatv("permutation has {0} entries but the input {1} "
                              "has rank {2}",
                              perm.size(), formatShape(input), input.size()));
  Shape result;
  SmallVector<bool> seen(input.size(), false);
  for (auto [i, p] : enumerate(perm)) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return shapeError(formatv("perm entry {0} is {1}; perm must be a "
                                "permutation of [0, {2})",
                                i, p, input.size()));
    seen[p] = true;
    result.push_back(input[p]);
  }
  return result;
}

Expected<Shape> normalizeAxes(ArrayRef<int64_t> axes, int64_t rank) {
  Shape result;
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      return shapeError(formatv("axis {0} is out of range for rank {1} "
                                "(expected [{2}, {1}))",
                                axis, rank, -rank));
    int64_t a = axis < 0 ? axis + rank : axis;
    if (is_contained(result, a))
      return shapeError(formatv("axis {0} is given more than once", a));
    result.push_back(a);
  }
  llvm::sort(result);
  return result;
}

Expected<Shape> unsqueezeShape(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> axes) {
  int64_t rank = input.size() + axes.size();
  auto normalized = normalizeAxes(axes, rank);
  if (!normalized)
    return normalized.takeError();
  Shape result;
  auto in = input.begin();
  for (int64_t i = 0; i < rank; ++i)
    result.push_back(is_contained(*normalized, i) ? 1 : *in++);
  return result;
}

Expected<Shape> squeezeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes) {
  auto normalized = normalizeAxes(axes, input.size());
  if (!normalized)
    return normalized.takeError();
  Shape result;
  for (auto [i, d] : enumerate(input)) {
    if (!is_contained(*normalized, static_cast<int64_t>(i))) {
      result.push_back(d);
      continue;
    }
    if (d != 1 && d != kDynamic)
      return shapeError(formatv("cannot squeeze dimension {0} of {1}: its "
                                "size is {2}, not 1",
                                i, formatShape(input), d));
  }
  return result;
}

Expected<Shape> concatShape(ArrayRef<ArrayRef<int64_t>> inputs, int64_t axis) {
  if (inputs.empty())
    return shapeError("concat needs at least one input");
  int64_t rank = inputs.front().size();
  auto normalized = normalizeAxes({axis}, rank);
  if (!normalized)
    return normalized.takeError();
  int64_t a = normalized->front();
  Shape result(inputs.front());
  for (auto [n, shape] : enumerate(inputs.drop_front())) {
    if (static_cast<int64_t>(shape.size()) != rank)
      return shapeError(formatv("concat input {0} has rank {1}, input 0 has "
                                "rank {2}",
                                n + 1, shape.size(), rank));
    for (int64_t i = 0; i < rank; ++i) {
      int64_t &r = result[i];
      int64_t d = shape[i];
      if (i == a) {
        r = (r == kDynamic || d == kDynamic) ? kDynamic : r + d;
      } else if (r == kDynamic) {
        r = d;
      } else if (d != kDynamic && d != r) {
        return shapeError(formatv("concat input {0} ({1}) differs from the "
                                  "others in dimension {2}, which is not the "
                                  "concatenation axis {3}",
                                  n + 1, formatShape(shape), i, a));
      }
    }
  }
  return result;
}

Expected<Shape> gatherShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                            int64_t axis) {
  auto normalized = normalizeAxes({axis}, data.size());
  if (!normalized)
    return normalized.takeError();
  int64_t a = normalized->front();
  Shape result(data.take_front(a));
  result.append(indices.begin(), indices.end());
  result.append(data.begin() + a + 1, data.end());
  return result;
}

Expected<Shape> gatherNDShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                              int64_t batchDims) {
  int64_t r = data.size(), q = indices.size();
  if (q < 1)
    return shapeError("indices must have rank at least 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return shapeError(formatv("batch_dims {0} must lie in [0, {1})", batchDims,
                              std::min(r, q)));
  int64_t k = indices.back();
  if (k == kDynamic)
    return shapeError("the last dimension of indices must be static");
  if (k < 1 || k > r - batchDims)
    return shapeError(formatv("index tuples of length {0} do not fit data of "
                              "rank {1} with batch_dims {2}",
                              k, r, batchDims));
  for (int64_t i = 0; i < batchDims; ++i)
    if (data[i] != kDynamic && indices[i] != kDynamic && data[i] != indices[i])
      return shapeError(formatv("batch dimension {0} differs: {1} in data, {2} "
                                "in indices",
                                i, formatDim(data[i]), formatDim(indices[i])));
  Shape result(indices.drop_back());
  result.append(data.begin() + batchDims + k, data.end());
  return result;
}

Shape reduceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                  bool keepDims) {
  Shape result;
  for (auto [i, d] : enumerate(input)) {
    if (!is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(d);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

/// The number of elements ONNX Slice takes from a dimension of size `dim`.
static int64_t sliceLength(int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) {
    return std::max(lo, std::min(v, hi));
  };
  if (dim == 0)
    return 0; // nothing to take, whichever way
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  // ceil(span / |step|) written so that no step, INT64_MAX or INT64_MIN
  // included, overflows.
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  start = clamp(start, 0, dim - 1);
  end = clamp(end, -1, dim - 1);
  if (start <= end)
    return 0;
  return step == std::numeric_limits<int64_t>::min()
             ? 1
             : (start - end - 1) / -step + 1;
}

Expected<Shape> sliceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> starts,
                           ArrayRef<int64_t> ends, ArrayRef<int64_t> axes,
                           ArrayRef<int64_t> steps) {
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return shapeError(formatv("slice has {0} starts, {1} ends, {2} axes and "
                              "{3} steps; all must have the same length",
                              starts.size(), ends.size(), axes.size(),
                              steps.size()));
  int64_t rank = input.size();
  Shape seen;
  Shape result(input);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto normalized = normalizeAxes({axes[i]}, rank);
    if (!normalized)
      return normalized.takeError();
    int64_t a = normalized->front();
    if (is_contained(seen, a))
      return shapeError(formatv("axis {0} is sliced more than once", a));
    seen.push_back(a);
    if (steps[i] == 0)
      return shapeError(formatv("slice step for axis {0} is 0", a));
    if (input[a] != kDynamic)
      result[a] = sliceLength(input[a], starts[i], ends[i], steps[i]);
  }
  return result;
}

void sliceOrigin(ArrayRef<int64_t> input, ArrayRef<int64_t> starts,
                 ArrayRef<int64_t> axes, ArrayRef<int64_t> steps, Shape &first,
                 Shape &step) {
  int64_t rank = input.size();
  first.assign(rank, 0);
  step.assign(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    int64_t d = input[a], st = starts[i];
    step[a] = steps[i];
    if (st < 0)
      st += d;
    // An empty dimension starts at 0 (clamping to [0, d - 1] would ask
    // for an empty range).
    first[a] = step[a] > 0 || d == 0 ? std::clamp<int64_t>(st, 0, d)
                                     : std::clamp<int64_t>(st, 0, d - 1);
  }
}

Expected<Shape> expandShape(ArrayRef<int64_t> input, ArrayRef<int64_t> shape) {
  for (int64_t d : shape)
    if (d < 0 && d != kDynamic)
      return shapeError(formatv("expand target {0} has a negative dimension",
                                formatShape(shape)));
  return broadcastShapes(input, shape);
}

} // namespace meshc::dfg
