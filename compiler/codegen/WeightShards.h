//===- WeightShards.h - A rank program's weights, sliced and written -*- C++
//-*-===//
//
// Part of meshc. In a rank program, every weight and constant reaches the
// computation through a chain of `dfg.slice` (the rank's shard, cut by
// meshc-shard-specialize-rank) and reshape-like views. Such a chain is folded
// at compile time into one strided box of the root tensor: the rank's weight
// file holds exactly the boxes its kernels read, written by streaming rows
// from the memory-mapped source file, never the whole model in memory. A
// concat of such boxes (padding) is stored assembled.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_CODEGEN_WEIGHTSHARDS_H
#define MESHC_COMPILER_CODEGEN_WEIGHTSHARDS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace meshc::codegen {

/// A strided box of a weight or constant: element i of the box (over the
/// root's dimensions) is root[starts + i * steps]. A concat of such boxes
/// (a rank's shard of a padded weight beside its zeros) is a root too,
/// assembled from its parts when the file is written.
struct WeightBox {
  mlir::Operation *root = nullptr; ///< dfg.weight or dfg.constant
  llvm::SmallVector<int64_t> starts, steps, shape;
  bool operator==(const WeightBox &other) const {
    return root == other.root && starts == other.starts &&
           steps == other.steps && shape == other.shape;
  }
};

/// The weight tensors of one rank program.
class WeightShards {
public:
  /// The box a value folds to, when it is a weight or constant seen through
  /// slices and views (the value's own shape may differ from the box's by a
  /// reshape); std::nullopt for values computed at run time.
  std::optional<WeightBox> fold(mlir::Value value);

  /// The index of `value`'s box among the tensors of the weight file (added
  /// on first use); with `bf16`, the box stored as bf16 (an entry of its
  /// own, converted when the file is written).
  int entryFor(mlir::Value value, bool bf16 = false);

  /// --dtype bf16 on the cpu target: the weights that products read (a
  /// linear's weight, a matmul's right operand, an embedding's table) are
  /// stored in bf16 and widened to f32 by the kernels as they read them;
  /// activations and accumulation stay f32.
  void setProductWeightsInBf16(bool on) { productsInBf16_ = on; }
  /// Whether a product reading `value` reads it as bf16: the mode is on and
  /// `value` is an f32 weight seen through slices and views.
  bool productReadsBf16(mlir::Value value);

  struct Entry {
    std::string name;
    WeightBox box;
    mlir::RankedTensorType type; ///< the box's type
  };
  const std::vector<Entry> &entries() const { return entries_; }

  /// Writes the entries to `path` as safetensors, reading weight bytes from
  /// files under `weightsDir`. Reports progress on `progress` when non-null.
  /// Returns the file's size and xxh64, or an error naming the weight.
  llvm::Expected<std::pair<uint64_t, uint64_t>>
  write(const std::string &path, llvm::StringRef weightsDir,
        llvm::raw_ostream *progress);

private:
  class Roots;
  /// The name of a concat root: its parts' boxes.
  std::string concatName(mlir::Operation *concat);

  llvm::DenseMap<mlir::Value, std::optional<WeightBox>> folded_;
  std::vector<Entry> entries_;
  bool productsInBf16_ = false;
};

} // namespace meshc::codegen

#endif // MESHC_COMPILER_CODEGEN_WEIGHTSHARDS_H
