//===- NpyTest.cpp - NumPy .npy files -------------------------------------===//
//
// Part of meshc. Interoperability with NumPy itself is checked by the
// numerical lit tests, which exchange .npy files with onnxruntime.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/npy.h"

#include "gtest/gtest.h"

#include <cstdio>
#include <cstring>
#include <fstream>

using namespace meshc::rt;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "meshc_npy_" + name;
}

HostTensor makeTensor(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.resize(t.numElements() * byteWidth(dtype));
  for (size_t i = 0; i < t.bytes.size(); ++i)
    t.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  if (dtype == DType::Bool)
    for (auto &b : t.bytes)
      b &= 1;
  return t;
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  for (DType dtype :
       {DType::F32, DType::F16, DType::I64, DType::I32, DType::Bool}) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{}, {5}, {2, 3}, {1, 2, 0, 4}}) {
      HostTensor t = makeTensor(dtype, shape);
      std::string path = tempPath("rt.npy"), error;
      ASSERT_TRUE(writeNpy(path, t, error)) << error;
      HostTensor back;
      ASSERT_TRUE(readNpy(path, back, error)) << error;
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.bytes, t.bytes);
    }
  }
}

TEST(Npy, HeaderIsAlignedAndReadableAsVersion1) {
  std::string path = tempPath("align.npy"), error;
  ASSERT_TRUE(writeNpy(path, makeTensor(DType::F32, {3}), error)) << error;
  std::ifstream in(path, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(all.size(), 10u);
  EXPECT_EQ(all.substr(1, 5), "NUMPY");
  EXPECT_EQ(all[6], 1);
  size_t headerLen = static_cast<unsigned char>(all[8]) |
                     (static_cast<unsigned char>(all[9]) << 8);
  EXPECT_EQ((10 + headerLen) % 64, 0u);
  EXPECT_NE(all.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(all.find("'shape': (3,)"), std::string::npos);
}

TEST(Npy, ReadsVersion2Headers) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, "
                       "'shape': (2,), }";
  header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string path = tempPath("v2.npy");
  {
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x02\x00", 8);
    uint32_t len = header.size();
    out.write(reinterpret_cast<const char *>(&len), 4);
    out << header;
    int64_t values[2] = {-3, 40000000000};
    out.write(reinterpret_cast<const char *>(values), sizeof values);
  }
  HostTensor t;
  std::string error;
  ASSERT_TRUE(readNpy(path, t, error)) << error;
  ASSERT_EQ(t.bytes.size(), 16u);
  int64_t second;
  std::memcpy(&second, t.bytes.data() + 8, 8);
  EXPECT_EQ(second, 40000000000);
}

TEST(Npy, ErrorsNameTheFileAndTheProblem) {
  HostTensor t;
  std::string error;
  EXPECT_FALSE(readNpy(tempPath("missing.npy"), t, error));
  EXPECT_NE(error.find("missing.npy': cannot open"), std::string::npos)
      << error;

  std::string bad = tempPath("bad.npy");
  std::ofstream(bad) << "not numpy at all";
  EXPECT_FALSE(readNpy(bad, t, error));
  EXPECT_NE(error.find("not a .npy file"), std::string::npos) << error;

  std::string path = tempPath("f64.npy");
  {
    std::string header = "{'descr': '<f8', 'fortran_order': False, "
                         "'shape': (1,), }\n";
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    uint16_t len = header.size();
    out.write(reinterpret_cast<const char *>(&len), 2);
    out << header << std::string(8, '\0');
  }
  EXPECT_FALSE(readNpy(path, t, error));
  EXPECT_NE(error.find("element type '<f8' is not supported"),
            std::string::npos)
      << error;

  std::string trunc = tempPath("trunc.npy");
  ASSERT_TRUE(writeNpy(trunc, makeTensor(DType::F32, {4}), error));
  std::ifstream in(trunc, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(trunc, std::ios::binary) << all.substr(0, all.size() - 3);
  EXPECT_FALSE(readNpy(trunc, t, error));
  EXPECT_NE(error.find("truncated data: expected 16 bytes"), std::string::npos)
      << error;
}

} // namespace
