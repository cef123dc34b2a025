//===- DfgShapesTest.cpp - Shape rules of dfg ops -------------------------===//
//
// Part of meshc. Expected shapes are those numpy / onnxruntime produce for the
// same operands.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgShapes.h"

#include "gtest/gtest.h"

using namespace meshc::dfg;

namespace {

constexpr int64_t D = kDynamic;

/// The shape, or the error text prefixed with "error: ".
std::string result(llvm::Expected<Shape> shape) {
  if (!shape)
    return "error: " + llvm::toString(shape.takeError());
  return formatShape(*shape);
}

TEST(DfgShapes, FormatShape) {
  EXPECT_EQ(formatShape({}), "scalar");
  EXPECT_EQ(formatShape({2, D, 64}), "2x?x64");
}

TEST(DfgShapes, BroadcastStatic) {
  EXPECT_EQ(result(broadcastShapes({2, 16, 64}, {64})), "2x16x64");
  EXPECT_EQ(result(broadcastShapes({4, 1}, {3})), "4x3");
  EXPECT_EQ(result(broadcastShapes({}, {5, 1})), "5x1");
  EXPECT_EQ(result(broadcastShapes({1, 1}, {1})), "1x1");
  EXPECT_EQ(result(broadcastShapes({0, 3}, {1, 3})), "0x3");
}

TEST(DfgShapes, BroadcastDynamic) {
  // ? against n > 1 must be n (or 1): the static size wins.
  EXPECT_EQ(result(broadcastShapes({D, 16}, {8, 16})), "8x16");
  // ? against 1 stays unknown; ? against ? too.
  EXPECT_EQ(result(broadcastShapes({D, 16}, {1, 16})), "?x16");
  EXPECT_EQ(result(broadcastShapes({D}, {D})), "?");
}

TEST(DfgShapes, BroadcastMismatchNamesDimension) {
  EXPECT_EQ(result(broadcastShapes({2, 3}, {4, 3})),
            "error: shapes 2x3 and 4x3 do not broadcast: dimension 2 from the "
            "end is 2 vs 4");
}

TEST(DfgShapes, MatMul) {
  EXPECT_EQ(result(matmulShape({2, 16, 64}, {64, 192})), "2x16x192");
  EXPECT_EQ(result(matmulShape({3, 64}, {64})), "3");
  EXPECT_EQ(result(matmulShape({64}, {64, 5})), "5");
  EXPECT_EQ(result(matmulShape({64}, {64})), "scalar");
  EXPECT_EQ(result(matmulShape({D, 1, 8, 16}, {4, 16, D})), "?x4x8x?");
  EXPECT_EQ(result(matmulShape({8, D}, {16, 4})), "8x4");
}

TEST(DfgShapes, MatMulErrors) {
  EXPECT_EQ(result(matmulShape({2, 3}, {4, 5})),
            "error: contracting dimensions differ: lhs 2x3 has K = 3, rhs 4x5 "
            "has K = 4");
  EXPECT_EQ(result(matmulShape({}, {4})),
            "error: matmul operands must have rank at least 1, got scalar and "
            "4");
  EXPECT_EQ(result(matmulShape({2, 3, 4}, {5, 4, 6})),
            "error: matmul batch dimensions: shapes 2 and 5 do not broadcast: "
            "dimension 1 from the end is 2 vs 5");
}

TEST(DfgShapes, Reshape) {
  EXPECT_EQ(result(reshapeShape({2, 8, 64}, {0, 0, 4, 16})), "2x8x4x16");
  EXPECT_EQ(result(reshapeShape({2, 8, 64}, {-1, 64})), "16x64");
  EXPECT_EQ(result(reshapeShape({2, 8, 64}, {2, -1})), "2x512");
  EXPECT_EQ(result(reshapeShape({6}, {})), "error: cannot reshape 6 (6 "
                                           "elements) to scalar (1 elements)");
  EXPECT_EQ(result(reshapeShape({1}, {})), "scalar");
}

TEST(DfgShapes, ReshapeDynamic) {
  // Dynamic dimensions copied by 0 cancel out, so -1 stays computable.
  EXPECT_EQ(result(reshapeShape({D, 8, 64}, {0, 0, 4, -1})), "?x8x4x16");
  EXPECT_EQ(result(reshapeShape({D, D, 768}, {0, 0, 12, 64})), "?x?x12x64");
  // A dynamic dimension that is folded into -1 makes it unknown.
  EXPECT_EQ(result(reshapeShape({D, 8, 64}, {-1, 64})), "?x64");
}

TEST(DfgShapes, ReshapeErrors) {
  EXPECT_EQ(result(reshapeShape({4}, {-2, 2})),
            "error: reshape entry 0 is -2; entries must be at least -1");
  EXPECT_EQ(result(reshapeShape({4}, {-1, -1})),
            "error: reshape entries 0 and 1 are both -1; at most one "
            "dimension can be inferred");
  EXPECT_EQ(result(reshapeShape({4}, {2, 0})),
            "error: reshape entry 1 is 0 (copy), but the input 4 has only 1 "
            "dimension(s)");
  EXPECT_EQ(result(reshapeShape({2, 3}, {4, -1})),
            "error: cannot reshape 2x3 (6 elements) to 4x?: the -1 entry does "
            "not divide evenly");
  EXPECT_EQ(result(reshapeShape({2, 3}, {5})),
            "error: cannot reshape 2x3 (6 elements) to 5 (5 elements)");
}

TEST(DfgShapes, Transpose) {
  EXPECT_EQ(result(transposeShape({2, 8, 4, 16}, {0, 2, 1, 3})), "2x4x8x16");
  EXPECT_EQ(result(transposeShape({}, {})), "scalar");
  EXPECT_EQ(result(transposeShape({2, D}, {1, 0})), "?x2");
  EXPECT_EQ(result(transposeShape({2, 3}, {0})),
            "error: permutation has 1 entries but the input 2x3 has rank 2");
  EXPECT_EQ(result(transposeShape({2, 3}, {0, 0})),
            "error: perm entry 1 is 0; perm must be a permutation of [0, 2)");
  EXPECT_EQ(result(transposeShape({2, 3}, {0, 2})),
            "error: perm entry 1 is 2; perm must be a permutation of [0, 2)");
}

TEST(DfgShapes, NormalizeAxes) {
  EXPECT_EQ(result(normalizeAxes({-1, 0}, 3)), "0x2");
  EXPECT_EQ(result(normalizeAxes({3}, 3)),
            "error: axis 3 is out of range for rank 3 (expected [-3, 3))");
  EXPECT_EQ(result(normalizeAxes({1, -2}, 3)),
            "error: axis 1 is given more than once");
}

TEST(DfgShapes, UnsqueezeSqueeze) {
  EXPECT_EQ(result(unsqueezeShape({2, 8}, {1, 2})), "2x1x1x8");
  EXPECT_EQ(result(unsqueezeShape({8}, {-1})), "8x1");
  EXPECT_EQ(result(squeezeShape({1, D, 1}, {0, 2})), "?");
  EXPECT_EQ(result(squeezeShape({2, 1}, {0})),
            "error: cannot squeeze dimension 0 of 2x1: its size is 2, not 1");
}

TEST(DfgShapes, ConcatGather) {
  EXPECT_EQ(result(concatShape({{1, 4, 7, 8}, {1, 4, 1, 8}}, 2)), "1x4x8x8");
  EXPECT_EQ(result(concatShape({{D, 4}, {2, 4}}, 0)), "?x4");
  EXPECT_EQ(result(concatShape({{D, 4}, {2, 4}}, 1)), "2x8");
  EXPECT_EQ(result(gatherShape({50, 12}, {1, 4}, 0)), "1x4x12");
  EXPECT_EQ(result(gatherShape({3, 5}, {}, 1)), "3");
}

TEST(DfgShapes, SliceMatchesNumpy) {
  // numpy: np.zeros(8)[5:100].shape == (3,), [-3:] == (3,), [::-2] == (4,),
  // [6:1:-2] == (3,), [10:] == (0,).
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min() + 1;
  EXPECT_EQ(result(sliceShape({8}, {5}, {100}, {0}, {1})), "3");
  EXPECT_EQ(result(sliceShape({8}, {-3}, {8}, {0}, {1})), "3");
  EXPECT_EQ(result(sliceShape({8}, {-1}, {kMin}, {0}, {-2})), "4");
  EXPECT_EQ(result(sliceShape({8}, {6}, {1}, {0}, {-2})), "3");
  EXPECT_EQ(result(sliceShape({8}, {10}, {20}, {0}, {1})), "0");
  EXPECT_EQ(result(sliceShape({D, 8}, {0}, {2}, {0}, {1})), "?x8");
}

TEST(DfgShapes, ReduceAndExpand) {
  EXPECT_EQ(formatShape(reduceShape({1, 8, 64}, {2}, true)), "1x8x1");
  EXPECT_EQ(formatShape(reduceShape({1, 8, 64}, {0, 2}, false)), "8");
  EXPECT_EQ(result(expandShape({1, 4, 1}, {2, 1, 1, 6})), "2x1x4x6");
  EXPECT_EQ(result(expandShape({3}, {2, 4})),
            "error: shapes 3 and 2x4 do not broadcast: dimension 1 from the "
            "end is 3 vs 4");
}

} // namespace
