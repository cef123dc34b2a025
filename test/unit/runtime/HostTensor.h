//===- HostTensor.h - Dense host tensors for the kernel tests ---*- C++ -*-===//
//
// Part of meshc. Shared by KernelsTest.cpp (the CPU kernels against float64)
// and CudaKernelsTest.cpp (the CUDA kernels against the CPU kernels): an
// owning dense tensor of any dtype viewed as a TensorRef, with element
// access as doubles (16-bit floats through half.h; `set` rounds to the
// element type), and numpy's broadcast shape.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_TEST_UNIT_RUNTIME_HOSTTENSOR_H
#define MESHC_TEST_UNIT_RUNTIME_HOSTTENSOR_H

#include "meshc/runtime/dtype.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/tensor.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace meshc::test {

using Shape = std::vector<std::int64_t>;

inline std::int64_t numElementsOf(const Shape &shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape)
    n *= d;
  return n;
}

struct HostTensor {
  rt::DType dtype = rt::DType::F32;
  Shape shape;
  std::vector<unsigned char> bytes;

  HostTensor() = default;
  HostTensor(rt::DType t, Shape s)
      : dtype(t), shape(std::move(s)),
        bytes(static_cast<std::size_t>(numElementsOf(shape)) *
              rt::byteWidth(t)) {}

  std::int64_t size() const { return numElementsOf(shape); }

  rt::TensorRef ref() const {
    rt::TensorRef r;
    r.data = const_cast<unsigned char *>(bytes.data());
    r.dtype = dtype;
    r.rank = static_cast<int>(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i)
      r.shape[i] = shape[i];
    return r;
  }

  double at(std::int64_t i) const {
    const unsigned char *p = bytes.data() + i * rt::byteWidth(dtype);
    switch (dtype) {
    case rt::DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case rt::DType::F16:
    case rt::DType::BF16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return dtype == rt::DType::F16 ? rt::halfToFloat(h)
                                     : rt::bfloat16ToFloat(h);
    }
    case rt::DType::I64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    case rt::DType::I32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case rt::DType::Bool:
      return *p;
    }
    return 0;
  }

  void set(std::int64_t i, double v) {
    unsigned char *p = bytes.data() + i * rt::byteWidth(dtype);
    switch (dtype) {
    case rt::DType::F32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
      return;
    }
    case rt::DType::F16:
    case rt::DType::BF16: {
      const auto f = static_cast<float>(v);
      const std::uint16_t h =
          dtype == rt::DType::F16 ? rt::floatToHalf(f) : rt::floatToBfloat16(f);
      std::memcpy(p, &h, 2);
      return;
    }
    case rt::DType::I64: {
      const auto x = static_cast<std::int64_t>(v);
      std::memcpy(p, &x, 8);
      return;
    }
    case rt::DType::I32: {
      const auto x = static_cast<std::int32_t>(v);
      std::memcpy(p, &x, 4);
      return;
    }
    case rt::DType::Bool:
      *p = v != 0;
      return;
    }
  }

  std::vector<double> values() const {
    std::vector<double> v(static_cast<std::size_t>(size()));
    for (std::int64_t i = 0; i < size(); ++i)
      v[i] = at(i);
    return v;
  }
};

/// numpy's broadcast of two shapes (assumed compatible).
inline Shape broadcastShape(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da =
        i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const std::int64_t db =
        i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

} // namespace meshc::test

#endif // MESHC_TEST_UNIT_RUNTIME_HOSTTENSOR_H
