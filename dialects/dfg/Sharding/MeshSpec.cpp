//===- MeshSpec.cpp - Device-mesh specifications --------------------------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Sharding/MeshSpec.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace meshc {

static Error meshError(StringRef text, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           "invalid mesh '" + text + "': " + why);
}

ArrayRef<StringRef> MeshSpec::knownAxes() {
  static const StringRef axes[] = {"dp", "pp", "tp"};
  return axes;
}

Expected<MeshSpec> MeshSpec::parse(StringRef text) {
  MeshSpec mesh;
  if (text.trim().empty())
    return meshError(text, "no axes given (expected e.g. 'dp=2,tp=4')");

  SmallVector<StringRef> items;
  text.split(items, ',');
  int64_t world = 1;
  for (StringRef item : items) {
    item = item.trim();
    auto [name, size] = item.split('=');
    name = name.trim();
    size = size.trim();
    if (item.empty() || !item.contains('=') || name.empty())
      return meshError(text, "expected 'name=size', got '" + item + "'");
    if (!is_contained(knownAxes(), name))
      return meshError(text, "unknown axis '" + name + "' (known axes: " +
                                 join(knownAxes(), ", ") + ")");
    if (mesh.axisSize(name))
      return meshError(text, "axis '" + name + "' is given more than once");
    int64_t n = 0;
    if (size.getAsInteger(10, n) || n <= 0)
      return meshError(text, "axis '" + name + "' has size '" + size +
                                 "'; sizes must be positive integers");
    if (n > kMaxWorldSize || world * n > kMaxWorldSize)
      return meshError(text, "the world size exceeds " + Twine(kMaxWorldSize) +
                                 " ranks");
    world *= n;
    mesh.axes_.push_back({name.str(), n});
  }
  return mesh;
}

int64_t MeshSpec::worldSize() const {
  int64_t world = 1;
  for (const MeshAxis &axis : axes_)
    world *= axis.size;
  return world;
}

std::optional<int64_t> MeshSpec::axisSize(StringRef name) const {
  for (const MeshAxis &axis : axes_)
    if (axis.name == name)
      return axis.size;
  return std::nullopt;
}

std::string MeshSpec::str() const {
  std::string s;
  for (auto [i, axis] : enumerate(axes_))
    s += (i ? "," : "") + axis.name + "=" + std::to_string(axis.size);
  return s;
}

} // namespace meshc
