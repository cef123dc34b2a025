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

} // namespace meshc::rt

#endif // MESHC_RUNTIME_HALF_H
