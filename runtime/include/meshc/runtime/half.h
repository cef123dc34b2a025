//===- half.h - float16 / bfloat16 <-> float conversions --------*- C++ -*-===//
//
// Part of meshc. Bit-exact conversions between IEEE binary32 and the two
// 16-bit float formats meshc tensors can hold. Narrowing rounds to nearest,
// ties to even (as numpy, onnxruntime and CUDA's __float2half_rn do); NaN
// stays a quiet NaN, and values past the largest finite half become
// infinity. Widening is exact.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_HALF_H
#define MESHC_RUNTIME_HALF_H

#include "meshc/runtime/dtype.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace meshc::rt {

namespace detail {
inline std::uint32_t floatBits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bitsFloat(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
} // namespace detail

/// IEEE binary16 bits -> float (exact).
inline float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) { // zero or subnormal: mant * 2^-24, exact in float
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return detail::bitsFloat(sign | detail::floatBits(v));
  }
  if (exp == 31) // infinity or NaN (payload kept)
    return detail::bitsFloat(sign | 0x7f800000u | (mant << 13));
  return detail::bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

/// float -> IEEE binary16 bits, rounded to nearest even.
inline std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = detail::floatBits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) // infinity, or NaN made quiet
    return static_cast<std::uint16_t>(sign |
                                      (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) // >= 65520: rounds past 65504
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (ax < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    // Adding 0.5 makes the float's unit in the last place 2^-24, the half
    // subnormal step, so the hardware addition rounds to nearest even.
    const float r = detail::bitsFloat(ax) + 0.5f;
    return static_cast<std::uint16_t>(sign |
                                      (detail::floatBits(r) - 0x3f000000u));
  }
  ax += 0xc8000fffu + ((ax >> 13) & 1u); // rebias exponent 127 -> 15, round
  return static_cast<std::uint16_t>(sign | (ax >> 13));
}

/// bfloat16 bits -> float (exact).
inline float bfloat16ToFloat(std::uint16_t b) {
  return detail::bitsFloat(static_cast<std::uint32_t>(b) << 16);
}

/// float -> bfloat16 bits, rounded to nearest even.
inline std::uint16_t floatToBfloat16(float f) {
  const std::uint32_t x = detail::floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) // NaN made quiet
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// Converts `n` elements of floating-point type `from` at `src` to `to` at
/// `dst` (each F32, F16 or BF16), rounding to nearest even. Finite values
/// beyond `to`'s range saturate to its largest finite value instead of
/// becoming infinities: `meshc compile --dtype` converts weights this way,
/// so that a finite mask constant such as -3.4e38 stays finite in f16.
inline void convertFloatsSaturating(DType from, DType to, const void *src,
                                    void *dst, std::size_t n) {
  const auto *in = static_cast<const std::uint8_t *>(src);
  auto *out = static_cast<std::uint8_t *>(dst);
  for (std::size_t i = 0; i < n; ++i) {
    float x;
    if (from == DType::F32) {
      std::memcpy(&x, in + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, in + 2 * i, 2);
      x = from == DType::F16 ? halfToFloat(h) : bfloat16ToFloat(h);
    }
    if (to == DType::F32) {
      std::memcpy(out + 4 * i, &x, 4);
      continue;
    }
    const float largest =
        to == DType::F16 ? 65504.0f : detail::bitsFloat(0x7f7f0000u); // 3.39e38
    if (x > largest && x != INFINITY)
      x = largest;
    else if (x < -largest && x != -INFINITY)
      x = -largest;
    const std::uint16_t h =
        to == DType::F16 ? floatToHalf(x) : floatToBfloat16(x);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

} // namespace meshc::rt

#endif // MESHC_RUNTIME_HALF_H
