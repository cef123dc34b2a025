//===- dtype.h - Element types shared by compiler and runtime ---*- C++ -*-===//
//
// Part of meshc. The element types a meshc tensor can hold, their byte widths
// and their safetensors names. The compiler uses this header when it checks a
// weight reference's byte length and when it writes weight shards; the runtime
// uses it when it maps them back. Keeping one table guarantees both agree.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_DTYPE_H
#define MESHC_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace meshc::rt {

/// Element types of meshc tensors (ONNX: FLOAT, FLOAT16, BFLOAT16, INT64,
/// INT32, BOOL). Bool occupies one byte, as in ONNX and safetensors.
enum class DType : std::uint8_t { F32, F16, BF16, I64, I32, Bool };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16,
                                       DType::I64, DType::I32, DType::Bool};

/// Bytes one element occupies in memory and in a weight file.
constexpr std::size_t byteWidth(DType t) {
  switch (t) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::Bool:
    return 1;
  }
  return 0;
}

/// The name of an element type in messages ("f32", "i64", ...), as dfg
/// types print.
constexpr const char *dtypeName(DType t) {
  switch (t) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

/// The dtype string of the safetensors header format.
constexpr std::string_view safetensorsName(DType t) {
  switch (t) {
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::Bool:
    return "BOOL";
  }
  return "";
}

/// Inverse of safetensorsName; std::nullopt for a dtype meshc does not handle.
constexpr std::optional<DType> parseSafetensorsName(std::string_view name) {
  for (DType t : kAllDTypes)
    if (safetensorsName(t) == name)
      return t;
  return std::nullopt;
}

} // namespace meshc::rt

#endif // MESHC_RUNTIME_DTYPE_H
