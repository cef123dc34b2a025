//===- safetensors.h - Per-rank weight files --------------------*- C++ -*-===//
//
// Part of meshc. Weight shards are safetensors files (an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the bytes). The compiler writes them by streaming one tensor
// after another, never holding the model; a rank maps its file read-only and
// verifies the xxh64 checksum the manifest records before using a byte.
// No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_SAFETENSORS_H
#define MESHC_RUNTIME_SAFETENSORS_H

#include "meshc/runtime/dtype.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace meshc::rt {

/// One tensor of a safetensors file; `begin`/`end` are byte offsets into the
/// data section (after the header).
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

/// The data section starts at a multiple of this (the header is padded with
/// spaces), so that every tensor of f32/i64 data is aligned when mapped.
inline constexpr std::size_t kSafetensorsAlignment = 64;

/// Writes a file in one pass: the entries are declared up front (so the
/// header can be written first), then their bytes are appended in the same
/// order, in as many pieces as the caller likes.
class SafetensorsWriter {
public:
  SafetensorsWriter() = default;
  SafetensorsWriter(const SafetensorsWriter &) = delete;
  SafetensorsWriter &operator=(const SafetensorsWriter &) = delete;
  ~SafetensorsWriter();

  /// Creates `path` and writes the header. Entries get consecutive byte
  /// ranges, each padded to kSafetensorsAlignment.
  bool open(const std::string &path, std::vector<SafetensorsEntry> entries,
            std::string &error);
  /// Appends bytes of the current tensor (moving to the next one when it is
  /// complete).
  bool append(const void *data, std::size_t bytes, std::string &error);
  /// Checks every tensor was written completely and closes the file.
  bool close(std::string &error);

  /// The xxh64 of the whole file (valid after close) and its size.
  std::uint64_t checksum() const { return checksum_; }
  std::uint64_t fileSize() const { return fileSize_; }
  const std::vector<SafetensorsEntry> &entries() const { return entries_; }

private:
  bool write(const void *data, std::size_t bytes, std::string &error);
  std::FILE *file_ = nullptr;
  std::string path_;
  std::vector<SafetensorsEntry> entries_;
  std::size_t current_ = 0;
  std::uint64_t written_ = 0; // bytes of the data section written so far
  void *hashState_ = nullptr;
  std::uint64_t checksum_ = 0;
  std::uint64_t fileSize_ = 0;
};

/// A safetensors file mapped read-only.
class MappedSafetensors {
public:
  MappedSafetensors() = default;
  MappedSafetensors(const MappedSafetensors &) = delete;
  MappedSafetensors &operator=(const MappedSafetensors &) = delete;
  ~MappedSafetensors();

  /// Maps `path`, checks its size and (when `checksum` is non-zero) its
  /// xxh64, and parses the header. On failure returns false with one line in
  /// `error` naming the file and the problem.
  bool open(const std::string &path, std::uint64_t expectedSize,
            std::uint64_t checksum, std::string &error);

  /// The tensor `name`, checked against the dtype and shape the program
  /// expects; nullptr with `error` set when absent or different.
  const void *tensor(const std::string &name, DType dtype,
                     const std::vector<std::int64_t> &shape,
                     std::string &error) const;

  const std::map<std::string, SafetensorsEntry> &entries() const {
    return entries_;
  }
  /// The data section (every tensor lies inside it) and its length.
  const void *data() const { return data_; }
  std::size_t dataBytes() const {
    return data_ ? size_ - static_cast<std::size_t>(data_ - base_) : 0;
  }

private:
  std::string path_;
  const std::uint8_t *base_ = nullptr;
  std::size_t size_ = 0;
  const std::uint8_t *data_ = nullptr; // start of the data section
  std::map<std::string, SafetensorsEntry> entries_;
};

/// The xxh64 (seed 0) of `bytes` bytes, as the manifest records checksums.
std::uint64_t xxh64(const void *data, std::size_t bytes);

/// "0123456789abcdef": 16 lowercase hex digits, as the manifest writes them.
std::string hex64(std::uint64_t value);

} // namespace meshc::rt

#endif // MESHC_RUNTIME_SAFETENSORS_H
