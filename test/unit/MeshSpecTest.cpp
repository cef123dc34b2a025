//===- MeshSpecTest.cpp - Device-mesh specifications ----------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/MeshSpec.h"

#include "gtest/gtest.h"

using meshc::MeshSpec;

namespace {

/// The parse error text, or "" when `text` parses.
std::string parseError(llvm::StringRef text) {
  auto mesh = MeshSpec::parse(text);
  return mesh ? "" : llvm::toString(mesh.takeError());
}

TEST(MeshSpec, ParsesAxesInUserOrder) {
  auto mesh = MeshSpec::parse("tp=4, dp=2 ,pp=2");
  ASSERT_TRUE(static_cast<bool>(mesh)) << llvm::toString(mesh.takeError());
  ASSERT_EQ(mesh->axes().size(), 3u);
  EXPECT_EQ(mesh->axes()[0].name, "tp");
  EXPECT_EQ(mesh->axes()[1].name, "dp");
  EXPECT_EQ(mesh->axes()[2].size, 2);
  EXPECT_EQ(mesh->worldSize(), 16);
  EXPECT_EQ(mesh->axisSize("tp"), 4);
  EXPECT_EQ(mesh->axisSize("sp"), std::nullopt);
  EXPECT_EQ(mesh->str(), "tp=4,dp=2,pp=2");
}

TEST(MeshSpec, SingleAxisAndSizeOne) {
  auto mesh = MeshSpec::parse("tp=1");
  ASSERT_TRUE(static_cast<bool>(mesh)) << llvm::toString(mesh.takeError());
  EXPECT_EQ(mesh->worldSize(), 1);
  EXPECT_EQ(mesh->str(), "tp=1");
}

TEST(MeshSpec, Errors) {
  EXPECT_EQ(parseError(""),
            "invalid mesh '': no axes given (expected e.g. 'dp=2,tp=4')");
  EXPECT_EQ(parseError("tp"),
            "invalid mesh 'tp': expected 'name=size', got 'tp'");
  EXPECT_EQ(parseError("tp=2,"),
            "invalid mesh 'tp=2,': expected 'name=size', got ''");
  EXPECT_EQ(parseError("=2"),
            "invalid mesh '=2': expected 'name=size', got '=2'");
  EXPECT_EQ(parseError("xp=2"),
            "invalid mesh 'xp=2': unknown axis 'xp' (known axes: dp, pp, tp)");
  EXPECT_EQ(parseError("tp=2,tp=2"),
            "invalid mesh 'tp=2,tp=2': axis 'tp' is given more than once");
  EXPECT_EQ(parseError("tp=0"), "invalid mesh 'tp=0': axis 'tp' has size "
                                "'0'; sizes must be positive integers");
  EXPECT_EQ(parseError("tp=-2"), "invalid mesh 'tp=-2': axis 'tp' has size "
                                 "'-2'; sizes must be positive integers");
  EXPECT_EQ(parseError("tp=two"), "invalid mesh 'tp=two': axis 'tp' has size "
                                  "'two'; sizes must be positive integers");
  EXPECT_EQ(parseError("tp="), "invalid mesh 'tp=': axis 'tp' has size ''; "
                               "sizes must be positive integers");
  EXPECT_EQ(parseError("dp=1024,tp=2048"),
            "invalid mesh 'dp=1024,tp=2048': the world size exceeds 1048576 "
            "ranks");
  EXPECT_EQ(parseError("tp=99999999999999999999"),
            "invalid mesh 'tp=99999999999999999999': axis 'tp' has size "
            "'99999999999999999999'; sizes must be positive integers");
}

} // namespace
