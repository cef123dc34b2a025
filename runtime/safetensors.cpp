//===- safetensors.cpp - Per-rank weight files ----------------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/safetensors.h"

#include "meshc/runtime/error.h"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace meshc::rt {

namespace {
std::uint64_t alignUp(std::uint64_t n) {
  return (n + kSafetensorsAlignment - 1) / kSafetensorsAlignment *
         kSafetensorsAlignment;
}
} // namespace

std::uint64_t xxh64(const void *data, std::size_t bytes) {
  return XXH64(data, bytes, 0);
}

std::string hex64(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx",
                static_cast<unsigned long long>(value));
  return buffer;
}

//===----------------------------------------------------------------------===//
// SafetensorsWriter
//===----------------------------------------------------------------------===//

SafetensorsWriter::~SafetensorsWriter() {
  if (file_)
    std::fclose(file_);
  if (hashState_)
    XXH64_freeState(static_cast<XXH64_state_t *>(hashState_));
}

bool SafetensorsWriter::write(const void *data, std::size_t bytes,
                              std::string &error) {
  if (bytes && std::fwrite(data, 1, bytes, file_) != bytes) {
    error = "cannot write '" + path_ + "': " + std::strerror(errno);
    return false;
  }
  XXH64_update(static_cast<XXH64_state_t *>(hashState_), data, bytes);
  fileSize_ += bytes;
  return true;
}

bool SafetensorsWriter::open(const std::string &path,
                             std::vector<SafetensorsEntry> entries,
                             std::string &error) {
  path_ = path;
  entries_ = std::move(entries);
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::uint64_t offset = 0;
  for (SafetensorsEntry &e : entries_) {
    std::uint64_t bytes = byteWidth(e.dtype);
    for (std::int64_t d : e.shape)
      bytes *= static_cast<std::uint64_t>(d);
    e.begin = offset;
    e.end = offset + bytes;
    offset = alignUp(e.end);
    header[e.name] = {{"dtype", std::string(safetensorsName(e.dtype))},
                      {"shape", e.shape},
                      {"data_offsets", {e.begin, e.end}}};
  }
  header["__metadata__"] = {{"format", "pt"}, {"writer", "meshc"}};
  std::string text = header.dump();
  // Pad so that the data section starts aligned: 8 bytes of length + header.
  text.append(alignUp(8 + text.size()) - 8 - text.size(), ' ');

  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) {
    error = "cannot create '" + path + "': " + std::strerror(errno);
    return false;
  }
  hashState_ = XXH64_createState();
  XXH64_reset(static_cast<XXH64_state_t *>(hashState_), 0);
  unsigned char length[8];
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<unsigned char>(n >> (8 * i));
  return write(length, 8, error) && write(text.data(), text.size(), error);
}

bool SafetensorsWriter::append(const void *data, std::size_t bytes,
                               std::string &error) {
  const auto *p = static_cast<const unsigned char *>(data);
  while (bytes) {
    if (current_ >= entries_.size()) {
      error = "'" + path_ + "': more bytes written than its tensors hold";
      return false;
    }
    const SafetensorsEntry &e = entries_[current_];
    std::uint64_t room = e.end - written_;
    std::size_t now =
        static_cast<std::size_t>(std::min<std::uint64_t>(room, bytes));
    if (!write(p, now, error))
      return false;
    written_ += now;
    p += now;
    bytes -= now;
    if (written_ == e.end) {
      // Padding up to the next tensor.
      static const unsigned char zeros[kSafetensorsAlignment] = {};
      std::uint64_t next = alignUp(e.end);
      if (current_ + 1 < entries_.size() &&
          !write(zeros, static_cast<std::size_t>(next - e.end), error))
        return false;
      written_ = next;
      ++current_;
      // Empty tensors complete as soon as they start.
      while (current_ < entries_.size() &&
             entries_[current_].begin == entries_[current_].end) {
        ++current_;
      }
    }
  }
  return true;
}

bool SafetensorsWriter::close(std::string &error) {
  while (current_ < entries_.size() &&
         entries_[current_].begin == entries_[current_].end)
    ++current_;
  if (current_ != entries_.size()) {
    error = "'" + path_ + "': tensor '" + entries_[current_].name +
            "' was not written completely";
    return false;
  }
  checksum_ = XXH64_digest(static_cast<XXH64_state_t *>(hashState_));
  int status = std::fclose(file_);
  file_ = nullptr;
  if (status != 0) {
    error = "cannot write '" + path_ + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// MappedSafetensors
//===----------------------------------------------------------------------===//

MappedSafetensors::~MappedSafetensors() {
  if (base_)
    munmap(const_cast<std::uint8_t *>(base_), size_);
}

bool MappedSafetensors::open(const std::string &path,
                             std::uint64_t expectedSize, std::uint64_t checksum,
                             std::string &error) {
  path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    error = "cannot open weight file '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    error = "cannot stat weight file '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (expectedSize && size_ != expectedSize) {
    ::close(fd);
    error = "weight file '" + path + "' has " + std::to_string(size_) +
            " bytes, the manifest expects " + std::to_string(expectedSize) +
            " (truncated or replaced?)";
    return false;
  }
  if (size_ < 8) {
    ::close(fd);
    error = "weight file '" + path + "' is too short to be safetensors";
    return false;
  }
  void *map = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    error = "cannot map weight file '" + path + "': " + std::strerror(errno);
    return false;
  }
  base_ = static_cast<const std::uint8_t *>(map);
  if (checksum) {
    std::uint64_t actual = xxh64(base_, size_);
    if (actual != checksum) {
      error = "weight file '" + path + "' is corrupt: xxh64 " + hex64(actual) +
              ", the manifest records " + hex64(checksum);
      return false;
    }
  }
  std::uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= std::uint64_t(base_[i]) << (8 * i);
  if (headerSize > size_ - 8) {
    error = "weight file '" + path + "': header length " +
            std::to_string(headerSize) + " exceeds the file";
    return false;
  }
  data_ = base_ + 8 + headerSize;
  std::uint64_t dataSize = size_ - 8 - headerSize;
  nlohmann::json header = nlohmann::json::parse(
      base_ + 8, base_ + 8 + headerSize, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) {
    error = "weight file '" + path + "': the header is not a JSON object";
    return false;
  }
  for (auto &[name, value] : header.items()) {
    if (name == "__metadata__")
      continue;
    SafetensorsEntry e;
    e.name = name;
    auto dtype = value.is_object() && value.contains("dtype") &&
                         value["dtype"].is_string()
                     ? parseSafetensorsName(value["dtype"].get<std::string>())
                     : std::nullopt;
    bool ok = dtype && value.contains("shape") && value["shape"].is_array() &&
              value.contains("data_offsets") &&
              value["data_offsets"].is_array() &&
              value["data_offsets"].size() == 2;
    if (ok) {
      e.dtype = *dtype;
      for (auto &d : value["shape"])
        ok = ok && d.is_number_integer() && d.get<std::int64_t>() >= 0;
      ok = ok && value["data_offsets"][0].is_number_unsigned() &&
           value["data_offsets"][1].is_number_unsigned();
    }
    if (!ok) {
      error = "weight file '" + path + "': entry '" + name + "' is malformed";
      return false;
    }
    e.shape = value["shape"].get<std::vector<std::int64_t>>();
    e.begin = value["data_offsets"][0].get<std::uint64_t>();
    e.end = value["data_offsets"][1].get<std::uint64_t>();
    std::uint64_t bytes = byteWidth(e.dtype);
    for (std::int64_t d : e.shape)
      bytes *= static_cast<std::uint64_t>(d);
    if (e.begin > e.end || e.end > dataSize || e.end - e.begin != bytes) {
      error = "weight file '" + path + "': entry '" + name +
              "' has a byte range that does not match its shape or the file";
      return false;
    }
    entries_.emplace(name, std::move(e));
  }
  return true;
}

const void *MappedSafetensors::tensor(const std::string &name, DType dtype,
                                      const std::vector<std::int64_t> &shape,
                                      std::string &error) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    error = "weight file '" + path_ + "' has no tensor '" + name + "'";
    return nullptr;
  }
  const SafetensorsEntry &e = it->second;
  if (e.dtype != dtype || e.shape != shape) {
    error = "weight file '" + path_ + "': tensor '" + name + "' is " +
            std::string(safetensorsName(e.dtype)) + " " + formatShape(e.shape) +
            ", the program expects " + std::string(safetensorsName(dtype)) +
            " " + formatShape(shape);
    return nullptr;
  }
  return data_ + e.begin;
}

} // namespace meshc::rt
