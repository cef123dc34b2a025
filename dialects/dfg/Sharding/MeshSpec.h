//===- MeshSpec.h - Device-mesh specifications ------------------*- C++ -*-===//
//
// Part of meshc. A device mesh as the user writes it ("dp=2,pp=2,tp=4"):
// named axes in the user's order, each with a positive size; the world size is
// their product. The sharding passes turn it into a shard.grid.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_SHARDING_MESHSPEC_H
#define MESHC_DIALECTS_DFG_SHARDING_MESHSPEC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace meshc {

/// One named mesh axis.
struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

/// A device mesh: axes in the order given, sizes positive, names distinct.
class MeshSpec {
public:
  /// Parses "name=size[,name=size...]". Names must be known axes
  /// (knownAxes()), each used once; sizes are positive integers; the product
  /// must fit the largest world size meshc supports.
  static llvm::Expected<MeshSpec> parse(llvm::StringRef text);

  /// The axis names meshc assigns a parallelism to: data (dp), pipeline (pp)
  /// and tensor (tp) parallelism.
  static llvm::ArrayRef<llvm::StringRef> knownAxes();

  /// Upper bound on the number of ranks, far beyond any real cluster; it
  /// keeps rank arithmetic in 32 bits.
  static constexpr int64_t kMaxWorldSize = 1 << 20;

  llvm::ArrayRef<MeshAxis> axes() const { return axes_; }
  int64_t worldSize() const;
  /// The size of `name`, or std::nullopt if the mesh has no such axis.
  std::optional<int64_t> axisSize(llvm::StringRef name) const;
  /// The canonical text form, "dp=2,pp=2,tp=4" (the user's axis order).
  std::string str() const;

private:
  llvm::SmallVector<MeshAxis, 4> axes_;
};

} // namespace meshc

#endif // MESHC_DIALECTS_DFG_SHARDING_MESHSPEC_H
