//===- DTypeTest.cpp - Element types shared by compiler and runtime -------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/dtype.h"

#include "gtest/gtest.h"

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

} // namespace
