//===- error.cpp - Fatal errors of rank executables -----------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/error.h"

#include <cstdio>
#include <cstdlib>

namespace meshc::rt {
namespace {
FatalHandler handler = nullptr;
std::string &context() {
  static std::string value;
  return value;
}
} // namespace

std::string formatShape(const std::vector<std::int64_t> &shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void setFatalHandler(FatalHandler h) { handler = h; }

void setErrorContext(const std::string &value) { context() = value; }

namespace {
void print(const char *kind, const std::string &message) {
  if (context().empty())
    std::fprintf(stderr, "meshc: %s: %s\n", kind, message.c_str());
  else
    std::fprintf(stderr, "meshc: %s: %s: %s\n", context().c_str(), kind,
                 message.c_str());
  std::fflush(stderr);
}
} // namespace

void warn(const std::string &message) { print("warning", message); }

void fatal(const std::string &message) {
  print("error", message);
  if (handler)
    handler();
  std::exit(1);
}

} // namespace meshc::rt
