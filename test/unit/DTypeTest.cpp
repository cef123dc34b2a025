//===- DTypeTest.cpp - Element types shared by compiler and runtime -------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/dtype.h"
#include "meshc/runtime/half.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <vector>

using namespace meshc::rt;

namespace {

TEST(DType, ByteWidthsMatchOnnxAndSafetensors) {
  EXPECT_EQ(byteWidth(DType::F32), 4u);
  EXPECT_EQ(byteWidth(DType::F16), 2u);
  EXPECT_EQ(byteWidth(DType::BF16), 2u);
  EXPECT_EQ(byteWidth(DType::I64), 8u);
  EXPECT_EQ(byteWidth(DType::I32), 4u);
  EXPECT_EQ(byteWidth(DType::Bool), 1u);
}

TEST(DType, SafetensorsNamesRoundTrip) {
  for (DType t : kAllDTypes) {
    auto parsed = parseSafetensorsName(safetensorsName(t));
    ASSERT_TRUE(parsed.has_value()) << safetensorsName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(safetensorsName(DType::Bool), "BOOL");
  EXPECT_EQ(parseSafetensorsName("F64"), std::nullopt);
  EXPECT_EQ(parseSafetensorsName("f32"), std::nullopt);
}

// --dtype converts weights with convertFloatsSaturating: round to nearest
// even like the cast kernels, but finite values past the target's range
// saturate instead of becoming infinities.
TEST(DType, SaturatingConversionToHalf) {
  const std::vector<float> in = {1.0f,     -2.5f,         65504.0f, 65519.0f,
                                 70000.0f, -3.4e38f,      INFINITY, -INFINITY,
                                 NAN,      1.00048828125f};
  std::vector<std::uint16_t> out(in.size());
  convertFloatsSaturating(DType::F32, DType::F16, in.data(), out.data(),
                          in.size());
  EXPECT_EQ(out[0], 0x3c00);
  EXPECT_EQ(out[1], 0xc100);
  EXPECT_EQ(out[2], 0x7bff); // 65504, the largest half
  EXPECT_EQ(out[3], 0x7bff); // rounds down to it
  EXPECT_EQ(out[4], 0x7bff); // saturates (the cast kernel gives infinity)
  EXPECT_EQ(out[5], 0xfbff); // finfo(f32).min: -65504, not -infinity
  EXPECT_EQ(out[6], 0x7c00); // infinities stay
  EXPECT_EQ(out[7], 0xfc00);
  EXPECT_TRUE(std::isnan(halfToFloat(out[8])));
  EXPECT_EQ(out[9], 0x3c00); // a tie rounds to even
  EXPECT_EQ(floatToHalf(70000.0f), 0x7c00);
}

TEST(DType, SaturatingConversionToBfloat16AndBack) {
  const std::vector<float> in = {3.0e38f, 3.4e38f, -3.4e38f, 1.00390625f};
  std::vector<std::uint16_t> bf(in.size());
  convertFloatsSaturating(DType::F32, DType::BF16, in.data(), bf.data(),
                          in.size());
  EXPECT_EQ(bf[0], floatToBfloat16(3.0e38f));
  EXPECT_EQ(bf[1], 0x7f7f); // the largest bfloat16, not infinity
  EXPECT_EQ(bf[2], 0xff7f);
  EXPECT_EQ(bf[3], 0x3f80); // a tie rounds to even
  // Widening is exact; bf16 -> f16 goes through f32 and saturates.
  std::vector<float> back(in.size());
  convertFloatsSaturating(DType::BF16, DType::F32, bf.data(), back.data(),
                          bf.size());
  EXPECT_EQ(back[1], bfloat16ToFloat(0x7f7f));
  std::vector<std::uint16_t> half(in.size());
  convertFloatsSaturating(DType::BF16, DType::F16, bf.data(), half.data(),
                          bf.size());
  EXPECT_EQ(half[0], 0x7bff);
  EXPECT_EQ(half[2], 0xfbff);
  EXPECT_EQ(half[3], 0x3c00);
}

} // namespace
