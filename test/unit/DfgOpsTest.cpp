//===- DfgOpsTest.cpp - Building and verifying dfg ops from C++ -----------===//
//
// Part of meshc. The builders that later passes use: result types inferred
// from operands, and the verifier's diagnostics for broken invariants.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/QuantizedWeights.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace meshc::dfg;

namespace {

class DfgOpsTest : public ::testing::Test {
protected:
  DfgOpsTest() : builder(&ctx) {
    ctx.loadDialect<DfgDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, builder.getF32Type());
  }

  /// A weight of `type` (f32, so 4 bytes an element).
  Value weight(RankedTensorType type, StringRef name = "w") {
    return WeightOp::create(builder, loc(), type, name, "model.onnx.data", 0,
                            type.getNumElements() * 4);
  }

  /// The diagnostics of verifying `op`, "" when it verifies.
  std::string verifyErrors(Operation *op) {
    std::string text;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      text += diag.str();
      return success();
    });
    (void)verify(op);
    return text;
  }

  Location loc() { return builder.getUnknownLoc(); }

  MLIRContext ctx;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(DfgOpsTest, BuildersInferResultTypes) {
  Value x = weight(f32({2, 16, 64}), "x");
  Value w = weight(f32({64, 192}));
  Value b = weight(f32({192}), "b");
  auto mm = MatMulOp::create(builder, loc(), x, w);
  EXPECT_EQ(mm.getType(), f32({2, 16, 192}));
  auto add = AddOp::create(builder, loc(), mm, b);
  EXPECT_EQ(add.getType(), f32({2, 16, 192}));
  auto r = ReshapeOp::create(builder, loc(), add,
                             builder.getDenseI64ArrayAttr({0, 0, 12, -1}));
  EXPECT_EQ(r.getType(), f32({2, 16, 12, 16}));
  auto t = TransposeOp::create(builder, loc(), r,
                               builder.getDenseI64ArrayAttr({0, 2, 1, 3}));
  EXPECT_EQ(t.getType(), f32({2, 12, 16, 16}));
  auto s = SoftmaxOp::create(builder, loc(), t, /*axis=*/-1);
  EXPECT_EQ(s.getType(), t.getType());
  EXPECT_EQ(s.getNormalizedAxis(), 3);
  EXPECT_EQ(verifyErrors(*module), "");
}

TEST_F(DfgOpsTest, WeightInvariants) {
  auto type = f32({4, 4});
  auto good = WeightOp::create(builder, loc(), type, "w", "d/w.bin", 8, 64);
  EXPECT_EQ(verifyErrors(good), "");
  auto shortLength =
      WeightOp::create(builder, loc(), type, "w", "w.bin", 0, 60);
  EXPECT_EQ(verifyErrors(shortLength),
            "'dfg.weight' op weight 'w' has length 60 bytes but "
            "'tensor<4x4xf32>' needs 64");
  auto escapes =
      WeightOp::create(builder, loc(), type, "w", "a/../../w.bin", 0, 64);
  EXPECT_EQ(verifyErrors(escapes),
            "'dfg.weight' op weight 'w' refers to 'a/../../w.bin', which "
            "leaves the model's folder (absolute path or '..')");
  auto absolute = WeightOp::create(builder, loc(), type, "w", "/w.bin", 0, 64);
  EXPECT_NE(verifyErrors(absolute), "");
  auto bf16 = WeightOp::create(
      builder, loc(), RankedTensorType::get({3}, builder.getBF16Type()), "h",
      "w.bin", 0, 6);
  EXPECT_EQ(verifyErrors(bf16), "");
  // A converted reference (--dtype): the length counts the stored type.
  auto f16 = RankedTensorType::get({4, 4}, builder.getF16Type());
  auto converted = WeightOp::create(builder, loc(), f16, "w", "w.bin", 0, 64,
                                    TypeAttr::get(builder.getF32Type()));
  EXPECT_EQ(verifyErrors(converted), "");
  auto halfLength = WeightOp::create(builder, loc(), f16, "w", "w.bin", 0, 32,
                                     TypeAttr::get(builder.getF32Type()));
  EXPECT_EQ(verifyErrors(halfLength),
            "'dfg.weight' op weight 'w' has length 32 bytes but "
            "'tensor<4x4xf16>' stored as 'f32' needs 64");
  auto toInteger = WeightOp::create(
      builder, loc(), RankedTensorType::get({4}, builder.getI64Type()), "w",
      "w.bin", 0, 16, TypeAttr::get(builder.getF32Type()));
  EXPECT_EQ(verifyErrors(toInteger),
            "'dfg.weight' op weight 'w' stored as 'f32' must be a conversion "
            "between two different floating-point types, not to 'i64'");
}

TEST_F(DfgOpsTest, DeclaredResultMustAgreeWithInference) {
  Value x = weight(f32({2, 8}), "x");
  Value w = weight(f32({8, 4}));
  // Less refined than inferred: accepted.
  auto loose =
      MatMulOp::create(builder, loc(), f32({ShapedType::kDynamic, 4}), x, w);
  EXPECT_EQ(verifyErrors(loose), "");
  // Contradicting inference: rejected.
  auto wrong = MatMulOp::create(builder, loc(), f32({2, 5}), x, w);
  EXPECT_EQ(verifyErrors(wrong),
            "'dfg.matmul' op result type 'tensor<2x5xf32>' contradicts the "
            "inferred 'tensor<2x4xf32>'");
  // An inference failure is one diagnostic, named after the op.
  Value y = weight(f32({3, 4}), "y");
  auto mismatch = AddOp::create(builder, loc(), f32({2, 8}), x, y);
  EXPECT_EQ(verifyErrors(mismatch),
            "'dfg.add' op shapes 2x8 and 3x4 do not broadcast: dimension 1 "
            "from the end is 8 vs 4");
}

TEST_F(DfgOpsTest, ConstantFoldsToItsValue) {
  auto type = RankedTensorType::get({2}, builder.getI64Type());
  auto value = DenseElementsAttr::get(type, ArrayRef<int64_t>{4, -1});
  auto c = ConstantOp::create(builder, loc(), value);
  SmallVector<OpFoldResult> folded;
  ASSERT_TRUE(succeeded(c->fold(folded)));
  ASSERT_EQ(folded.size(), 1u);
  EXPECT_EQ(dyn_cast<Attribute>(folded[0]), value);
}

} // namespace

// Quantized rows against the format's definition, written out per element:
// element k of a row at bit k * bits (low bits first, two's complement when
// signed), (q - zero point) * scale of its block (block_rows rows by
// block_size columns), the zero point 2^(bits-1) without zero points; a
// block that does not divide the row, and packed zero points.
TEST(QuantizedWeights, DequantizeRowsFollowsTheFormat) {
  MLIRContext context;
  for (int64_t bits : {2, 4, 8})
    for (bool withZeroPoints : {false, true})
      for (bool isSigned : {false, true})
        for (int64_t blockRows : {1, 2}) {
          QuantizedLayout q;
          q.bits = bits;
          q.isSigned = isSigned;
          q.blockRows = blockRows;
          q.blockSize = 4;
          q.columns = 10; // 3 blocks, the last of 2 columns
          q.rowBytes = (q.columns * bits + 7) / 8 + 1; // a byte of padding
          q.scales.type = Float32Type::get(&context);
          const int64_t rows = 3, blocks = q.blocksPerRow(),
                        grid = q.blockRowsOf(rows);
          const int64_t half = int64_t(1) << (bits - 1);
          auto asStored = [&](int64_t i) { // a value of the range, stored
            int64_t v = isSigned ? i % (2 * half) - half : i % (2 * half);
            return std::pair<int64_t, int>{v, static_cast<int>(v & (2 * half - 1))};
          };
          std::vector<uint8_t> packed(rows * q.rowBytes), zeros;
          std::vector<float> scales(grid * blocks);
          std::vector<int64_t> value(rows * q.columns), zero(grid * blocks);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < q.columns; ++k) {
              auto [v, bitsOf] = asStored(r * 7 + k * 5);
              value[r * q.columns + k] = v;
              packed[r * q.rowBytes + k * bits / 8] |= bitsOf << (k * bits % 8);
            }
          for (int64_t i = 0; i < grid * blocks; ++i)
            scales[i] = 0.25f + 0.125f * static_cast<float>(i);
          if (withZeroPoints) {
            q.zeroPoints = QuantizedPart{
                "z", 0, 0, IntegerType::get(&context, 8, IntegerType::Unsigned)};
            int64_t rowBytes = q.zeroPointRowStride() / 8;
            zeros.assign(grid * rowBytes, 0);
            for (int64_t g = 0; g < grid; ++g)
              for (int64_t j = 0; j < blocks; ++j) {
                auto [z, bitsOf] = asStored(g + 3 * j);
                zero[g * blocks + j] = z;
                zeros[g * rowBytes + j * bits / 8] |= bitsOf << (j * bits % 8);
              }
          }
          std::vector<float> out(rows * q.columns);
          dequantizeRows(q, rows, packed.data(),
                         reinterpret_cast<const uint8_t *>(scales.data()),
                         withZeroPoints ? zeros.data() : nullptr, out.data());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < q.columns; ++k) {
              int64_t at = (r / blockRows) * blocks + k / q.blockSize;
              double z = withZeroPoints ? zero[at] : half;
              double want = (value[r * q.columns + k] - z) * scales[at];
              EXPECT_EQ(out[r * q.columns + k], static_cast<float>(want))
                  << bits << " bits, signed " << isSigned << ", block rows "
                  << blockRows << ", row " << r << ", column " << k;
            }
        }
}

// With a codebook (MatMulBnb4's FP4 and NF4), element k is codebook[q] *
// scale, its code in byte k / 2's high nibble when k is even (high bits
// first); blocks run on along the one row, the last one short.
TEST(QuantizedWeights, DequantizeRowsReadsACodebook) {
  MLIRContext context;
  QuantizedLayout q;
  q.bits = 4;
  q.blockSize = 4;
  q.columns = 9; // 3 blocks, the last of 1 element
  q.rowBytes = 5;
  q.highBitsFirst = true;
  for (int i = 0; i < 16; ++i)
    q.codebook.push_back(static_cast<float>(i * i) - 7.5f);
  q.scales.type = Float32Type::get(&context);
  ASSERT_EQ(checkQuantization(q, 9, 5), "");
  const int codes[9] = {3, 12, 0, 15, 7, 8, 1, 14, 9};
  std::vector<uint8_t> packed(5, 0);
  for (int k = 0; k < 9; ++k)
    packed[k / 2] |= codes[k] << (k % 2 == 0 ? 4 : 0);
  const float scales[3] = {0.5f, 2.0f, -1.25f};
  std::vector<float> out(9);
  dequantizeRows(q, 1, packed.data(), reinterpret_cast<const uint8_t *>(scales),
                 nullptr, out.data());
  for (int k = 0; k < 9; ++k)
    EXPECT_EQ(out[k], q.codebook[codes[k]] * scales[k / 4]) << "element " << k;
  // A codebook of the wrong size, or beside zero points, is refused.
  q.codebook.pop_back();
  EXPECT_NE(checkQuantization(q, 9, 5), "");
  q.codebook.push_back(0.0f);
  q.zeroPoint = 8;
  EXPECT_NE(checkQuantization(q, 9, 5), "");
}
