//===- ShapePlanTest.cpp - Tests of the kernels' shape plans --------------===//
//
// Part of meshc. Every plan of runtime/ShapePlan.h (the loop bounds the cpu
// and the cuda kernels share) against a brute-force walk over every
// multi-index of small random shapes drawn with a fixed seed: size-0 and
// size-1 dimensions, negative axes, reductions with and without keep_dims.
// A plan passes when, for every element of the output, the element it names
// is the one the op's definition names (offsets in elements of dense
// row-major tensors); the plans never touch data, so the tensors here are
// shapes without storage.
//
//===----------------------------------------------------------------------===//
#include "runtime/ShapePlan.h"
#include "test/unit/runtime/HostTensor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

using namespace meshc::rt;
using meshc::test::broadcastShape;
using meshc::test::numElementsOf;
using meshc::test::Shape;

namespace {

constexpr int kTrials = 300;

/// A TensorRef of `shape` without data (the plans read shapes only).
TensorRef shapeRef(const Shape &shape) {
  TensorRef t;
  t.rank = static_cast<int>(shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d)
    t.shape[d] = shape[d];
  return t;
}

/// Every multi-index of `shape`, in row-major order.
std::vector<Shape> allIndices(const Shape &shape) {
  std::vector<Shape> all;
  if (numElementsOf(shape) == 0)
    return all;
  Shape index(shape.size(), 0);
  while (true) {
    all.push_back(index);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return all;
  }
}

/// The dense row-major offset of `index` in `shape`.
std::int64_t offsetOf(const Shape &shape, const Shape &index) {
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < shape.size(); ++d)
    offset = offset * shape[d] + index[d];
  return offset;
}

/// Where operand `k` of `plan` reads dense output element `i`: i decomposed
/// row-major over the plan's shape, times the operand's strides (what the
/// cuda kernels' planOffsets computes).
template <int K>
std::int64_t planOffset(const plans::StridePlan<K> &plan, int k,
                        std::int64_t i) {
  std::int64_t offset = 0;
  for (int d = plan.rank - 1; d >= 0; --d) {
    offset += (i % plan.shape[d]) * plan.strides[k][d];
    i /= plan.shape[d];
  }
  return offset;
}

/// `axis` of a rank-`rank` shape, counted from the end when negative (the
/// definition the plans must follow).
std::size_t normalized(std::int64_t axis, std::size_t rank) {
  return static_cast<std::size_t>(
      axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis);
}

/// Where a tensor of `in` shape broadcast (numpy) to `out` is read at
/// output index `index`.
std::int64_t broadcastOffset(const Shape &in, const Shape &out,
                             const Shape &index) {
  const std::size_t lead = out.size() - in.size();
  Shape inIndex(in.size());
  for (std::size_t d = 0; d < in.size(); ++d)
    inIndex[d] = in[d] == 1 ? 0 : index[lead + d];
  return offsetOf(in, inIndex);
}

class ShapePlanTest : public ::testing::Test {
protected:
  std::mt19937 rng{20240611};

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng); }

  /// A dimension: 0 now and then, 1 often (dropped and broadcast), else 2-4.
  std::int64_t dimension(bool allowZero = true) {
    if (allowZero && chance(0.06))
      return 0;
    if (chance(0.3))
      return 1;
    return uniform(2, 4);
  }
  Shape shape(int minRank, int maxRank, bool allowZero = true) {
    Shape s(static_cast<std::size_t>(uniform(minRank, maxRank)));
    for (std::int64_t &d : s)
      d = dimension(allowZero);
    return s;
  }
  /// An axis of a rank-`rank` tensor, negative half of the time.
  std::int64_t axis(int rank) {
    const std::int64_t a = uniform(0, rank - 1);
    return chance(0.5) ? a - rank : a;
  }
  /// A shape that broadcasts to `out`: a suffix of it with some dimensions
  /// set to 1.
  Shape broadcastable(const Shape &out) {
    const std::size_t rank =
        static_cast<std::size_t>(uniform(0, static_cast<int>(out.size())));
    Shape s(out.end() - rank, out.end());
    for (std::int64_t &d : s)
      if (chance(0.35))
        d = 1;
    return s;
  }
};

//===----------------------------------------------------------------------===//
// Strided plans
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, BroadcastPlanReadsEveryOperandAsNumpy) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape out = shape(0, 5);
    const int numInputs = static_cast<int>(uniform(1, 3));
    std::vector<Shape> ins;
    std::vector<TensorRef> refs;
    for (int k = 0; k < numInputs; ++k)
      ins.push_back(broadcastable(out));
    for (const Shape &s : ins)
      refs.push_back(shapeRef(s));
    const TensorRef *inputs[3] = {&refs[0], numInputs > 1 ? &refs[1] : nullptr,
                                  numInputs > 2 ? &refs[2] : nullptr};
    const plans::StridePlan<3> plan =
        plans::broadcastPlan<3>(shapeRef(out), inputs, numInputs);
    ASSERT_EQ(plan.numOperands, numInputs);
    ASSERT_EQ(plan.numElements(), numElementsOf(out));
    // Simplified: at least one dimension, no size-1 dimension left unless
    // it is the only one.
    ASSERT_GE(plan.rank, 1);
    for (int d = 0; d < plan.rank && plan.rank > 1; ++d)
      EXPECT_NE(plan.shape[d], 1);
    const std::vector<Shape> indices = allIndices(out);
    for (std::size_t i = 0; i < indices.size(); ++i)
      for (int k = 0; k < numInputs; ++k)
        ASSERT_EQ(planOffset(plan, k, static_cast<std::int64_t>(i)),
                  broadcastOffset(ins[k], out, indices[i]))
            << "trial " << trial << " operand " << k << " element " << i;
  }
}

TEST_F(ShapePlanTest, SameShapeOperationIsOneDimension) {
  const Shape s = {3, 1, 4, 2};
  const TensorRef ref = shapeRef(s);
  const TensorRef *inputs[] = {&ref, &ref};
  const plans::StridePlan<2> plan = plans::broadcastPlan<2>(ref, inputs);
  ASSERT_EQ(plan.rank, 1);
  EXPECT_EQ(plan.shape[0], 24);
  EXPECT_EQ(plan.strides[0][0], 1);
  EXPECT_EQ(plan.strides[1][0], 1);
  EXPECT_TRUE(plans::isContiguous(plan));
}

TEST_F(ShapePlanTest, TransposePlanReadsThePermutedElement) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape in = shape(1, 5);
    std::vector<std::int64_t> perm(in.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Shape out(in.size());
    for (std::size_t d = 0; d < in.size(); ++d)
      out[d] = in[static_cast<std::size_t>(perm[d])];
    if (numElementsOf(out) == 0)
      continue; // the kernels return before planning
    const plans::StridePlan<1> plan =
        plans::transposePlan(shapeRef(in), perm.data(), shapeRef(out));
    ASSERT_EQ(plan.numElements(), numElementsOf(out));
    const std::vector<Shape> indices = allIndices(out);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      Shape inIndex(in.size());
      for (std::size_t d = 0; d < in.size(); ++d)
        inIndex[static_cast<std::size_t>(perm[d])] = indices[i][d];
      ASSERT_EQ(planOffset(plan, 0, static_cast<std::int64_t>(i)),
                offsetOf(in, inIndex))
          << "trial " << trial << " element " << i;
    }
  }
}

TEST_F(ShapePlanTest, SlicePlanReadsStartPlusIndexTimesStep) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape in = shape(1, 4, /*allowZero=*/false);
    Shape out(in.size());
    std::vector<std::int64_t> starts(in.size()), steps(in.size());
    for (std::size_t d = 0; d < in.size(); ++d) {
      std::int64_t step = uniform(1, 3);
      if (chance(0.4))
        step = -step;
      const std::int64_t start = uniform(0, in[d] - 1);
      const std::int64_t most =
          step > 0 ? (in[d] - 1 - start) / step + 1 : start / -step + 1;
      starts[d] = start;
      steps[d] = step;
      out[d] = uniform(1, most);
    }
    const plans::SlicePlan p = plans::slicePlan(shapeRef(in), starts.data(),
                                                steps.data(), shapeRef(out));
    ASSERT_EQ(p.read.numElements(), numElementsOf(out));
    const std::vector<Shape> indices = allIndices(out);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      Shape inIndex(in.size());
      for (std::size_t d = 0; d < in.size(); ++d)
        inIndex[d] = starts[d] + indices[i][d] * steps[d];
      ASSERT_EQ(p.base + planOffset(p.read, 0, static_cast<std::int64_t>(i)),
                offsetOf(in, inIndex))
          << "trial " << trial << " element " << i;
    }
  }
}

TEST_F(ShapePlanTest, SliceLeavingItsInputIsFatal) {
  const Shape in = {4, 5}, out = {2, 3};
  const std::int64_t starts[] = {0, 3}, steps[] = {1, 1};
  EXPECT_EXIT(plans::slicePlan(shapeRef(in), starts, steps, shapeRef(out)),
              ::testing::ExitedWithCode(1),
              "slice: 3 elements from index 3 by step 1 leave dimension 1 of "
              "size 5");
}

//===----------------------------------------------------------------------===//
// One axis
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, SplitAtIsOuterAxisInner) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape s = shape(1, 5);
    const std::int64_t a = axis(static_cast<int>(s.size()));
    const plans::AxisSplit split = plans::splitAt(shapeRef(s), a);
    const std::size_t norm = normalized(a, s.size());
    ASSERT_EQ(split.axis, static_cast<int>(norm));
    ASSERT_EQ(split.size, s[norm]);
    ASSERT_EQ(split.outer * split.size * split.inner, numElementsOf(s));
    for (const Shape &index : allIndices(s)) {
      const Shape before(index.begin(), index.begin() + norm);
      const Shape after(index.begin() + norm + 1, index.end());
      const std::int64_t o =
          offsetOf(Shape(s.begin(), s.begin() + norm), before);
      const std::int64_t i =
          offsetOf(Shape(s.begin() + norm + 1, s.end()), after);
      ASSERT_EQ((o * split.size + index[norm]) * split.inner + i,
                offsetOf(s, index));
    }
  }
}

TEST_F(ShapePlanTest, ConcatPlanPlacesEveryInputElement) {
  for (int trial = 0; trial < kTrials; ++trial) {
    Shape out = shape(1, 4);
    const std::int64_t a = axis(static_cast<int>(out.size()));
    const std::size_t norm = normalized(a, out.size());
    // Two to four inputs, some empty along the axis.
    std::vector<Shape> ins(static_cast<std::size_t>(uniform(2, 4)), out);
    out[norm] = 0;
    for (Shape &in : ins) {
      in[norm] = chance(0.15) ? 0 : uniform(1, 3);
      out[norm] += in[norm];
    }
    const plans::ConcatPlan p = plans::concatPlan(shapeRef(out), a);
    ASSERT_EQ(p.outer * p.outRow, numElementsOf(out));
    std::int64_t start = 0, shift = 0;
    for (const Shape &in : ins) {
      const std::int64_t row = p.rowOf(shapeRef(in));
      ASSERT_EQ(p.outer * row, numElementsOf(in));
      const std::vector<Shape> indices = allIndices(in);
      for (std::size_t e = 0; e < indices.size(); ++e) {
        Shape outIndex = indices[e];
        outIndex[norm] += shift;
        const auto ei = static_cast<std::int64_t>(e);
        ASSERT_EQ((ei / row) * p.outRow + start + ei % row,
                  offsetOf(out, outIndex))
            << "trial " << trial << " element " << e;
      }
      start += row;
      shift += in[norm];
    }
    EXPECT_EQ(start, p.outRow);
  }
}

TEST_F(ShapePlanTest, GatherPlanNamesTheIndexedRow) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape data = shape(1, 4);
    const std::int64_t a = axis(static_cast<int>(data.size()));
    const std::size_t norm = normalized(a, data.size());
    const std::int64_t dim = data[norm];
    const Shape indices = shape(0, 2);
    if (dim == 0 && numElementsOf(indices) > 0)
      continue; // no valid index
    std::vector<std::int64_t> values(
        static_cast<std::size_t>(numElementsOf(indices)));
    for (std::int64_t &v : values)
      v = uniform(-dim, dim - 1);
    Shape out(data.begin(), data.begin() + norm);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + norm + 1, data.end());

    const plans::GatherPlan p =
        plans::gatherPlan(shapeRef(data), shapeRef(indices), a);
    ASSERT_EQ(p.axis, static_cast<int>(norm));
    ASSERT_EQ(p.dim, dim);
    ASSERT_EQ(p.count, numElementsOf(indices));
    ASSERT_EQ(p.rows() * p.inner, numElementsOf(out));
    for (const Shape &index : allIndices(out)) {
      // out[before, j..., after] = data[before, indices[j...], after]
      const Shape j(index.begin() + norm,
                    index.begin() + norm + indices.size());
      std::int64_t v = values[static_cast<std::size_t>(offsetOf(indices, j))];
      if (v < 0)
        v += dim;
      Shape dataIndex(index.begin(), index.begin() + norm);
      dataIndex.push_back(v);
      dataIndex.insert(dataIndex.end(), index.begin() + norm + indices.size(),
                       index.end());
      // The plan: output element e is element c of row r = (o, j).
      const std::int64_t e = offsetOf(out, index);
      const std::int64_t r = e / p.inner, c = e % p.inner;
      const std::int64_t o = r / p.count, jj = r % p.count;
      std::int64_t pv = values[static_cast<std::size_t>(jj)];
      if (pv < 0)
        pv += p.dim;
      ASSERT_EQ((o * p.dim + pv) * p.inner + c, offsetOf(data, dataIndex))
          << "trial " << trial;
    }
  }
}

TEST_F(ShapePlanTest, EmbeddingPlanIsAGatherOfTableRows) {
  for (int trial = 0; trial < 50; ++trial) {
    const Shape table = {uniform(1, 6), dimension()};
    const Shape ids = shape(0, 3);
    const plans::GatherPlan p =
        plans::embeddingPlan(shapeRef(table), shapeRef(ids));
    EXPECT_EQ(p.outer, 1);
    EXPECT_EQ(p.dim, table[0]);
    EXPECT_EQ(p.inner, table[1]);
    EXPECT_EQ(p.count, numElementsOf(ids));
    EXPECT_EQ(p.rows() * p.inner, numElementsOf(ids) * table[1]);
  }
}

//===----------------------------------------------------------------------===//
// Index tuples
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, GatherNDPlanNamesTheIndexedSlice) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const int batchDims = static_cast<int>(uniform(0, 2));
    const Shape data = shape(batchDims + 1, batchDims + 4);
    const int k =
        static_cast<int>(uniform(0, static_cast<int>(data.size()) - batchDims));
    bool indexable = true;
    for (int j = 0; j < k; ++j)
      indexable &= data[static_cast<std::size_t>(batchDims + j)] > 0;
    Shape indices(data.begin(), data.begin() + batchDims);
    const Shape middle = shape(0, 2);
    indices.insert(indices.end(), middle.begin(), middle.end());
    indices.push_back(k);
    const Shape rowsShape(indices.begin(), indices.end() - 1);
    if (!indexable && numElementsOf(rowsShape) > 0)
      continue;
    std::vector<std::int64_t> values(
        static_cast<std::size_t>(numElementsOf(indices)));
    for (std::size_t v = 0; v < values.size(); ++v) {
      const std::int64_t dim =
          data[static_cast<std::size_t>(batchDims) + v % std::max(k, 1)];
      values[v] = uniform(-dim, dim - 1);
    }
    Shape out = rowsShape;
    out.insert(out.end(), data.begin() + batchDims + k, data.end());

    const plans::GatherNDPlan p =
        plans::gatherNDPlan(shapeRef(data), shapeRef(indices), batchDims);
    ASSERT_EQ(p.k, k);
    ASSERT_EQ(p.batchDims, batchDims);
    ASSERT_EQ(p.rows(), numElementsOf(rowsShape));
    ASSERT_EQ(p.rows() * p.inner, numElementsOf(out));
    for (int j = 0; j < k; ++j)
      ASSERT_EQ(p.size[j], data[static_cast<std::size_t>(batchDims + j)]);
    for (const Shape &index : allIndices(out)) {
      // out[b, m, r] = data[b, indices[b, m, :], r]
      const std::size_t q = rowsShape.size();
      const std::int64_t row =
          offsetOf(rowsShape, Shape(index.begin(), index.begin() + q));
      Shape dataIndex(index.begin(), index.begin() + batchDims);
      for (int j = 0; j < k; ++j) {
        std::int64_t v = values[static_cast<std::size_t>(row * k + j)];
        if (v < 0)
          v += data[static_cast<std::size_t>(batchDims + j)];
        dataIndex.push_back(v);
      }
      dataIndex.insert(dataIndex.end(), index.begin() + q, index.end());
      // The plan: element c of row r.
      const std::int64_t e = offsetOf(out, index);
      const std::int64_t r = e / p.inner, c = e % p.inner;
      std::int64_t offset = (r / p.perBatch) * p.batchStride + c;
      for (int j = 0; j < p.k; ++j) {
        std::int64_t v = values[static_cast<std::size_t>(r * p.k + j)];
        if (v < 0)
          v += p.size[j];
        offset += v * p.stride[j];
      }
      ASSERT_EQ(offset, offsetOf(data, dataIndex)) << "trial " << trial;
    }
  }
}

TEST_F(ShapePlanTest, ScatterNDPlanNamesTheUpdatedSlice) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape data = shape(1, 4, /*allowZero=*/false);
    // Batch dimensions (shared by data and indices), then q indexed ones.
    const int batch =
        static_cast<int>(uniform(0, static_cast<int>(data.size()) - 1));
    const int q = static_cast<int>(
        uniform(0, static_cast<int>(data.size()) - batch));
    Shape indices(data.begin(), data.begin() + batch);
    const Shape tuples = shape(0, 2);
    indices.insert(indices.end(), tuples.begin(), tuples.end());
    indices.push_back(q);
    const plans::ScatterNDPlan p =
        plans::scatterNDPlan(shapeRef(data), shapeRef(indices), batch);
    ASSERT_EQ(p.q, q);
    ASSERT_EQ(p.tuples, q == 0 ? 0 : numElementsOf(indices) / q);
    ASSERT_EQ(p.slice,
              numElementsOf(Shape(data.begin() + batch + q, data.end())));
    ASSERT_EQ(p.perBatch, numElementsOf(tuples));
    // Every tuple of every batch lands at its slice.
    const Shape head(data.begin(), data.begin() + batch + q);
    for (const Shape &at : allIndices(head)) {
      Shape dataIndex = at;
      dataIndex.resize(data.size(), 0);
      // The batch's flat position, and the first of its tuples.
      std::int64_t flatBatch = 0;
      for (int d = 0; d < batch; ++d)
        flatBatch = flatBatch * data[static_cast<std::size_t>(d)] + at[d];
      std::int64_t slices = p.batchStart(flatBatch * p.perBatch);
      for (int d = 0; d < q; ++d) {
        ASSERT_EQ(p.shape[d], data[static_cast<std::size_t>(batch + d)]);
        // A negative index counts from the end, as the kernels normalise it.
        const std::int64_t i = at[batch + d];
        const std::int64_t v = chance(0.5) ? i - p.shape[d] : i;
        slices += (v < 0 ? v + p.shape[d] : v) * p.stride[d];
      }
      if (p.perBatch > 0) {
        ASSERT_EQ(slices * p.slice, offsetOf(data, dataIndex))
            << "trial " << trial;
      }
    }
  }
}

TEST_F(ShapePlanTest, TriluPlanIsMatricesOfRowsByCols) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape s = shape(2, 5);
    const plans::TriluPlan p = plans::triluPlan(shapeRef(s));
    ASSERT_EQ(p.rows, s[s.size() - 2]);
    ASSERT_EQ(p.cols, s[s.size() - 1]);
    ASSERT_EQ(p.matrices * p.rows * p.cols, numElementsOf(s));
    for (const Shape &index : allIndices(s)) {
      const std::size_t lead = s.size() - 2;
      const std::int64_t m =
          offsetOf(Shape(s.begin(), s.begin() + lead),
                   Shape(index.begin(), index.begin() + lead));
      ASSERT_EQ((m * p.rows + index[lead]) * p.cols + index[lead + 1],
                offsetOf(s, index));
    }
  }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, ReducePlanWalksExactlyEachOutputsElements) {
  for (int trial = 0; trial < 2 * kTrials; ++trial) {
    const Shape in = shape(0, 5);
    const int rank = static_cast<int>(in.size());
    // Some axes, each given as itself or counted from the end, in any order.
    std::vector<std::int64_t> axes;
    std::vector<bool> reduced(in.size(), false);
    for (int d = 0; d < rank; ++d)
      if (chance(0.5)) {
        axes.push_back(chance(0.5) ? d - rank : d);
        reduced[static_cast<std::size_t>(d)] = true;
      }
    std::shuffle(axes.begin(), axes.end(), rng);
    const plans::ReducePlan p = plans::reducePlan(
        shapeRef(in), axes.data(), static_cast<int>(axes.size()));

    // The output shape with keep_dims (reduced dimensions as 1) and
    // without; the kernels see only its element count, the same both ways.
    Shape kept, keptDims;
    std::int64_t count = 1;
    for (int d = 0; d < rank; ++d) {
      const std::size_t ud = static_cast<std::size_t>(d);
      keptDims.push_back(reduced[ud] ? 1 : in[ud]);
      if (reduced[ud])
        count *= in[ud];
      else
        kept.push_back(in[ud]);
    }
    ASSERT_EQ(p.count, count);
    const std::int64_t outputs = numElementsOf(kept);
    ASSERT_EQ(numElementsOf(keptDims), outputs);
    std::int64_t keptProduct = 1;
    for (int k = 0; k < p.layout.numKept; ++k)
      keptProduct *= p.layout.keptSize[k];
    ASSERT_EQ(keptProduct, outputs);

    // Brute force: each output's input offsets, in input order.
    std::vector<std::vector<std::int64_t>> want(
        static_cast<std::size_t>(outputs));
    for (const Shape &index : allIndices(in)) {
      Shape outIndex;
      Shape keepIndex;
      for (int d = 0; d < rank; ++d) {
        const std::size_t ud = static_cast<std::size_t>(d);
        keepIndex.push_back(reduced[ud] ? 0 : index[ud]);
        if (!reduced[ud])
          outIndex.push_back(index[ud]);
      }
      const std::int64_t o = offsetOf(kept, outIndex);
      ASSERT_EQ(o, offsetOf(keptDims, keepIndex)); // keep_dims or not
      want[static_cast<std::size_t>(o)].push_back(offsetOf(in, index));
    }
    if (count == 0)
      continue; // every output is the identity; nothing is read
    // The layout: the output index over the kept runs, an odometer over the
    // reduced runs (what both kernels' general paths do).
    const plans::ReduceLayout &l = p.layout;
    for (std::int64_t o = 0; o < outputs; ++o) {
      std::int64_t base = 0, rest = o;
      for (int k = l.numKept - 1; k >= 0; --k) {
        base += (rest % l.keptSize[k]) * l.keptStride[k];
        rest /= l.keptSize[k];
      }
      std::vector<std::int64_t> got;
      std::int64_t index[kMaxRank] = {};
      std::int64_t offset = base;
      for (std::int64_t e = 0; e < count; ++e) {
        got.push_back(offset);
        for (int k = l.numReduced - 1; k >= 0; --k) {
          offset += l.reducedStride[k];
          if (++index[k] < l.reducedSize[k])
            break;
          offset -= l.reducedSize[k] * l.reducedStride[k];
          index[k] = 0;
        }
      }
      ASSERT_EQ(got, want[static_cast<std::size_t>(o)])
          << "trial " << trial << " output " << o;
    }
    // Runs: alternating, no size-1 run, reducedRuns counted right.
    int runs = 0;
    for (int g = 0; g < p.groups; ++g) {
      EXPECT_NE(p.size[g], 1);
      if (g > 0) {
        EXPECT_NE(p.isReduced[g], p.isReduced[g - 1]);
      }
      runs += p.isReduced[g];
    }
    ASSERT_EQ(p.reducedRuns, runs);
    if (p.reducedRuns != 1)
      continue;
    // One reduced run: input element (o, k, i) of [outer, r, inner] feeds
    // output o * inner + i; inner == 1 exactly when the run is innermost
    // (the cuda kernel's row reduction).
    ASSERT_EQ(p.outer * p.r * p.inner, numElementsOf(in));
    ASSERT_EQ(p.outer * p.inner, outputs);
    EXPECT_EQ(p.inner == 1, p.isReduced[p.groups - 1]);
    for (std::int64_t o = 0; o < outputs; ++o) {
      const std::int64_t outer = o / p.inner, i = o % p.inner;
      std::vector<std::int64_t> got;
      for (std::int64_t k = 0; k < p.r; ++k)
        got.push_back((outer * p.r + k) * p.inner + i);
      ASSERT_EQ(got, want[static_cast<std::size_t>(o)])
          << "trial " << trial << " output " << o;
    }
  }
}

//===----------------------------------------------------------------------===//
// Normalisation
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, NormPlanReadsScaleBroadcastToTheRow) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape in = shape(1, 4);
    const std::int64_t a = axis(static_cast<int>(in.size()));
    const std::size_t norm = normalized(a, in.size());
    const plans::NormPlan p = plans::normPlan(shapeRef(in), a);
    const Shape tail(in.begin() + norm, in.end());
    ASSERT_EQ(p.axis, static_cast<int>(norm));
    ASSERT_EQ(p.inner, numElementsOf(tail));
    ASSERT_EQ(p.empty(), numElementsOf(in) == 0);
    if (p.empty())
      continue; // the kernels return before reading scale
    ASSERT_EQ(p.rows * p.inner, numElementsOf(in));
    // A scale of the row's own shape, flattened, or broadcast to it.
    const Shape scale = chance(0.2) ? Shape{p.inner} : broadcastable(tail);
    const plans::StridePlan<1> read =
        plans::normOperandPlan(shapeRef(scale), shapeRef(in), p);
    ASSERT_EQ(read.numElements(), p.inner);
    EXPECT_EQ(plans::isContiguous(read), numElementsOf(scale) == p.inner);
    const std::vector<Shape> indices = allIndices(tail);
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const std::int64_t want = numElementsOf(scale) == p.inner
                                    ? static_cast<std::int64_t>(i)
                                    : broadcastOffset(scale, tail, indices[i]);
      ASSERT_EQ(planOffset(read, 0, static_cast<std::int64_t>(i)), want)
          << "trial " << trial << " element " << i;
    }
  }
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, MatmulPlanPairsTheBroadcastBatchMatrices) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::int64_t m = dimension(), k = dimension(), n = dimension();
    Shape batch = shape(0, 3);
    Shape lhs = broadcastable(batch), rhs = broadcastable(batch);
    const Shape lhsBatch = lhs, rhsBatch = rhs;
    const bool lhsVector = chance(0.15), rhsVector = chance(0.15);
    if (lhsVector)
      lhs = {k};
    else
      lhs.insert(lhs.end(), {m, k});
    if (rhsVector)
      rhs = {k};
    else
      rhs.insert(rhs.end(), {k, n});
    const Shape outBatch = broadcastShape(lhsVector ? Shape{} : lhsBatch,
                                          rhsVector ? Shape{} : rhsBatch);
    const plans::MatmulPlan p = plans::matmulPlan(shapeRef(lhs), shapeRef(rhs));
    ASSERT_EQ(p.m, lhsVector ? 1 : m);
    ASSERT_EQ(p.k, k);
    ASSERT_EQ(p.n, rhsVector ? 1 : n);
    ASSERT_EQ(p.batches(), numElementsOf(outBatch));
    // Brute force: batch b reads lhs matrix and rhs matrix of its index.
    bool sameRhs = true, consecutiveLhs = true;
    const std::vector<Shape> indices = allIndices(outBatch);
    for (std::size_t b = 0; b < indices.size(); ++b) {
      const std::int64_t lhsMatrix =
          lhsVector ? 0 : broadcastOffset(lhsBatch, outBatch, indices[b]);
      const std::int64_t rhsMatrix =
          rhsVector ? 0 : broadcastOffset(rhsBatch, outBatch, indices[b]);
      const auto bi = static_cast<std::int64_t>(b);
      ASSERT_EQ(planOffset(p.batch, 0, bi), lhsMatrix) << "trial " << trial;
      ASSERT_EQ(planOffset(p.batch, 1, bi), rhsMatrix) << "trial " << trial;
      sameRhs &= rhsMatrix == 0;
      consecutiveLhs &= lhsMatrix == bi;
    }
    if (p.batches() > 0) {
      EXPECT_EQ(p.foldable(), sameRhs && consecutiveLhs) << "trial " << trial;
    }
  }
}

TEST_F(ShapePlanTest, LinearPlanIsRowsOfKToN) {
  for (int trial = 0; trial < kTrials; ++trial) {
    Shape in = shape(0, 3);
    Shape out = in;
    const std::int64_t k = dimension(), n = dimension();
    in.push_back(k);
    out.push_back(n);
    const plans::LinearPlan p = plans::linearPlan(shapeRef(in), shapeRef(out));
    ASSERT_EQ(p.k, k);
    ASSERT_EQ(p.n, n);
    ASSERT_EQ(p.empty(), numElementsOf(out) == 0);
    if (n > 0) {
      ASSERT_EQ(p.rows * n, numElementsOf(out));
    }
  }
}

//===----------------------------------------------------------------------===//
// Attention and rotary
//===----------------------------------------------------------------------===//

TEST_F(ShapePlanTest, AttentionPlanReadsTheMaskBroadcast) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::int64_t batch = dimension(), kvHeads = uniform(1, 3),
                       group = uniform(1, 3), seq = dimension(),
                       dim = dimension(), vDim = dimension(),
                       fresh = dimension();
    const bool withPast = chance(0.5);
    const std::int64_t past = withPast ? dimension() : 0;
    const std::int64_t heads = kvHeads * group, total = past + fresh;
    const Shape query = {batch, heads, seq, dim};
    const Shape key = {batch, kvHeads, fresh, dim};
    const Shape value = {batch, kvHeads, fresh, vDim};
    const Shape scores = {batch, heads, seq, total};
    const Shape mask = broadcastable(scores);
    const TensorRef maskRef = shapeRef(mask);
    const TensorRef pastKey = shapeRef({batch, kvHeads, past, dim});
    const TensorRef pastValue = shapeRef({batch, kvHeads, past, vDim});
    const TensorRef presentKey = shapeRef({batch, kvHeads, total, dim});
    const TensorRef presentValue = shapeRef({batch, kvHeads, total, vDim});
    const plans::AttentionPlan p = plans::attentionPlan(
        shapeRef(query), shapeRef(key), shapeRef(value), &maskRef,
        withPast ? &pastKey : nullptr, withPast ? &pastValue : nullptr,
        withPast ? &presentKey : nullptr, withPast ? &presentValue : nullptr);
    ASSERT_EQ(p.batch, batch);
    ASSERT_EQ(p.heads, heads);
    ASSERT_EQ(p.seq, seq);
    ASSERT_EQ(p.dim, dim);
    ASSERT_EQ(p.kvHeads, kvHeads);
    ASSERT_EQ(p.vDim, vDim);
    ASSERT_EQ(p.past, past);
    ASSERT_EQ(p.total, total);
    ASSERT_EQ(p.group, group);
    ASSERT_EQ(p.rows(), batch * heads * seq);
    for (const Shape &index : allIndices(scores)) {
      std::int64_t offset = 0;
      for (int d = 0; d < 4; ++d)
        offset += index[static_cast<std::size_t>(d)] * p.maskStrides[d];
      ASSERT_EQ(offset, broadcastOffset(mask, scores, index))
          << "trial " << trial;
    }
    // The present key: past then the new keys along the sequence.
    const plans::ConcatPlan c = plans::presentPlan(presentKey);
    const TensorRef keyRef = shapeRef(key);
    ASSERT_EQ(c.outer, batch * kvHeads);
    ASSERT_EQ(c.outRow, total * dim);
    ASSERT_EQ(c.rowOf(pastKey), past * dim);
    ASSERT_EQ(c.rowOf(keyRef), fresh * dim);
  }
}

TEST_F(ShapePlanTest, AttentionPastWithoutPresentIsFatal) {
  const TensorRef q = shapeRef({1, 2, 3, 4}), kv = shapeRef({1, 2, 3, 4});
  const TensorRef past = shapeRef({1, 2, 5, 4});
  EXPECT_EXIT(
      plans::attentionPlan(q, kv, kv, nullptr, &past, &past, nullptr, nullptr),
      ::testing::ExitedWithCode(1),
      "attention: past key/value need both present outputs");
}

TEST_F(ShapePlanTest, RotaryPlanPicksTheTableLayout) {
  for (int trial = 0; trial < kTrials; ++trial) {
    const Shape in = {dimension(), dimension(), dimension(), 2 * uniform(1, 4)};
    const std::int64_t rotaryDim = 2 * uniform(1, in[3] / 2);
    const bool positions = chance(0.5);
    const std::int64_t tableRows =
        positions ? uniform(1, 8) : (chance(0.5) ? 1 : in[0]);
    const Shape cos = positions ? Shape{tableRows, rotaryDim / 2}
                                : Shape{tableRows, in[2], rotaryDim / 2};
    const plans::RotaryPlan p =
        plans::rotaryPlan(shapeRef(in), shapeRef(cos), positions, rotaryDim);
    ASSERT_EQ(p.batch, in[0]);
    ASSERT_EQ(p.heads, in[1]);
    ASSERT_EQ(p.seq, in[2]);
    ASSERT_EQ(p.dim, in[3]);
    ASSERT_EQ(p.rotaryDim, rotaryDim);
    ASSERT_EQ(2 * p.half, rotaryDim);
    ASSERT_EQ(p.cacheRows, tableRows);
    ASSERT_EQ(p.rows() * p.dim, numElementsOf(in));
    // Without positions a single table row set is shared by every batch.
    ASSERT_EQ(p.sharedTable, !positions && tableRows == 1);
  }
}

} // namespace
