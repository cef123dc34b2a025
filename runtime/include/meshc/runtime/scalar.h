//===- scalar.h - Scalar functions shared by every target -------*- C++ -*-===//
//
// Part of meshc. Element functions that the cpu and cuda kernels (and
// generated fused kernels) must compute identically, written once. Each is
// MESHC_HD: a host function, and under nvcc a device function too.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_SCALAR_H
#define MESHC_RUNTIME_SCALAR_H

#include <cstdint>
#include <cstring>

#ifndef MESHC_HD
#if defined(__CUDACC__)
#define MESHC_HD __host__ __device__
#else
#define MESHC_HD
#endif
#endif

namespace meshc::rt::scalar {

/// Whether `x` is a NaN, read from its bits so that it holds under
/// -ffast-math too.
MESHC_HD inline bool isNaN(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return (bits & 0x7fffffffu) > 0x7f800000u;
}

/// x^y for i64 or i32, exact (square and multiply, no floating point) with
/// the rules of a double power truncated toward zero, which the reference
/// evaluator computes: a negative exponent gives 1 for x = 1, -1 or 1 for
/// x = -1 (odd or even y) and 0 otherwise (0^-y too); a power whose
/// magnitude is 9.2e18 or more gives 0; an i32 result wraps from its i64
/// value.
template <typename I> MESHC_HD inline I intPow(I x, I y) {
  if (y < 0) {
    if (x == 1)
      return 1;
    if (x == -1)
      return (y % 2 == 0) ? 1 : -1;
    return 0;
  }
  constexpr std::uint64_t kLimit = 9200000000000000000ull;
  const std::int64_t wide = x;
  std::uint64_t base = wide < 0 ? 0 - static_cast<std::uint64_t>(wide)
                                : static_cast<std::uint64_t>(wide);
  const bool negative = wide < 0 && (y % 2 != 0);
  std::uint64_t result = 1;
  for (std::int64_t e = y;;) {
    if (e % 2 != 0) {
      if (base != 0 && result > kLimit / base)
        return 0;
      result *= base;
      if (result >= kLimit)
        return 0;
    }
    e /= 2;
    if (e == 0)
      break;
    if (base > 1 && base > kLimit / base)
      return 0; // a later factor would overflow
    base *= base;
  }
  const std::int64_t signedResult = negative
                                        ? -static_cast<std::int64_t>(result)
                                        : static_cast<std::int64_t>(result);
  return static_cast<I>(signedResult);
}

} // namespace meshc::rt::scalar

#endif // MESHC_RUNTIME_SCALAR_H
