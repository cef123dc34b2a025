//===- npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace meshc::rt {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "<f4";
  case DType::F16:
    return "<f2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::Bool:
    return "|b1";
  case DType::BF16:
    return "<u2"; // NumPy has no bfloat16; its bits travel as uint16
  }
  return "";
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// The value text after `'key':` in a .npy header dict, up to the next
/// top-level comma or closing brace.
bool headerField(const std::string &header, const std::string &key,
                 std::string &value) {
  size_t pos = header.find("'" + key + "'");
  if (pos == std::string::npos)
    return false;
  pos = header.find(':', pos);
  if (pos == std::string::npos)
    return false;
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  value = header.substr(pos, end - pos);
  // Trim blanks and quotes.
  size_t b = value.find_first_not_of(" '\""),
         e = value.find_last_not_of(" '\"");
  value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  return true;
}

bool fail(std::string &error, const std::string &path, const std::string &why) {
  error = "'" + path + "': " + why;
  return false;
}

} // namespace

bool readNpy(const std::string &path, HostTensor &out, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(error, path,
                "cannot open: " + std::string(std::strerror(errno)));
  char magic[kMagicLen + 2];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, kMagicLen))
    return fail(error, path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(magic[kMagicLen]);
  uint32_t headerLen = 0;
  unsigned char len[4] = {0, 0, 0, 0};
  if (major == 1) {
    if (!in.read(reinterpret_cast<char *>(len), 2))
      return fail(error, path, "truncated header");
    headerLen = len[0] | (len[1] << 8);
  } else if (major == 2 || major == 3) {
    if (!in.read(reinterpret_cast<char *>(len), 4))
      return fail(error, path, "truncated header");
    headerLen = len[0] | (len[1] << 8) | (len[2] << 16) |
                (static_cast<uint32_t>(len[3]) << 24);
  } else {
    return fail(error, path,
                "unsupported .npy version " + std::to_string(major));
  }
  std::string header(headerLen, '\0');
  if (!in.read(header.data(), headerLen))
    return fail(error, path, "truncated header");

  std::string descr, fortran, shape;
  if (!headerField(header, "descr", descr) ||
      !headerField(header, "fortran_order", fortran) ||
      !headerField(header, "shape", shape))
    return fail(error, path, "malformed header: " + header);
  if (fortran != "False")
    return fail(error, path, "Fortran-ordered arrays are not supported");
  bool found = false;
  for (DType t : kAllDTypes)
    if (!npyDescr(t).empty() && npyDescr(t) == descr) {
      out.dtype = t;
      found = true;
    }
  if (!found)
    return fail(
        error, path,
        "element type '" + descr +
            "' is not supported (float32, float16, int64, int32, bool, and "
            "uint16 holding bfloat16 bits)");

  out.shape.clear();
  std::string dims = shape.substr(shape.find('(') + 1);
  std::stringstream ss(dims);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_of("0123456789");
    if (b == std::string::npos)
      continue;
    out.shape.push_back(std::stoll(item.substr(b)));
  }
  size_t bytes = static_cast<size_t>(out.numElements()) * byteWidth(out.dtype);
  out.bytes.resize(bytes);
  if (bytes && !in.read(reinterpret_cast<char *>(out.bytes.data()), bytes))
    return fail(error, path,
                "truncated data: expected " + std::to_string(bytes) + " bytes");
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error) {
  std::string descr = npyDescr(tensor.dtype);
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.shape)
    header += std::to_string(d) + (tensor.shape.size() == 1 ? ",)" : ", ");
  if (tensor.shape.size() != 1) {
    if (!tensor.shape.empty())
      header.resize(header.size() - 2);
    header += ")";
  }
  header += ", }";
  // Pad with spaces so that the data starts on a 64-byte boundary.
  size_t total = kMagicLen + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary);
  if (!out)
    return fail(error, path,
                "cannot create: " + std::string(std::strerror(errno)));
  uint16_t len = static_cast<uint16_t>(header.size());
  out.write(kMagic, kMagicLen);
  out.put(1).put(0);
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out.write(header.data(), header.size());
  out.write(reinterpret_cast<const char *>(tensor.bytes.data()),
            tensor.bytes.size());
  if (!out)
    return fail(error, path, "write failed");
  return true;
}

} // namespace meshc::rt
