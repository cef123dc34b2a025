//===- WeightShards.cpp - A rank program's weights, sliced and written ----===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/WeightShards.h"
#include "compiler/codegen/DTypes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/QuantizedWeights.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/safetensors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <functional>
#include <map>

using namespace mlir;

namespace meshc::codegen {

namespace {

/// A constant's elements as little-endian bytes, dense.
std::vector<uint8_t> constantBytes(DenseElementsAttr attr) {
  Type t = attr.getElementType();
  std::vector<uint8_t> bytes;
  auto put = [&](uint64_t bits, unsigned width) {
    for (unsigned i = 0; i < width; ++i)
      bytes.push_back(static_cast<uint8_t>(bits >> (8 * i)));
  };
  if (t.isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
  } else if (isa<IntegerType>(t)) {
    unsigned width = t.getIntOrFloatBitWidth() / 8;
    for (const llvm::APInt &v : attr.getValues<llvm::APInt>())
      put(v.getZExtValue(), width);
  } else {
    unsigned width = t.getIntOrFloatBitWidth() / 8;
    for (const llvm::APFloat &v : attr.getValues<llvm::APFloat>())
      put(v.bitcastToAPInt().getZExtValue(), width);
  }
  return bytes;
}

std::string boxName(const WeightBox &box, ArrayRef<int64_t> rootShape,
                    StringRef base) {
  std::string name = base.str();
  bool whole = true;
  std::string dims;
  for (size_t d = 0; d < box.shape.size(); ++d) {
    if (d)
      dims += ",";
    if (box.starts[d] == 0 && box.steps[d] == 1 &&
        box.shape[d] == rootShape[d]) {
      dims += ":";
      continue;
    }
    whole = false;
    int64_t end = box.starts[d] + box.shape[d] * box.steps[d];
    dims += std::to_string(box.starts[d]) + ":" + std::to_string(end);
    if (box.steps[d] != 1)
      dims += ":" + std::to_string(box.steps[d]);
  }
  return whole ? name : name + "[" + dims + "]";
}

} // namespace

std::optional<WeightBox> WeightShards::fold(Value value) {
  auto it = folded_.find(value);
  if (it != folded_.end())
    return it->second;
  std::optional<WeightBox> box;
  Operation *op = value.getDefiningOp();
  if (op && isa<dfg::WeightOp, dfg::ConstantOp>(op)) {
    auto type = cast<RankedTensorType>(value.getType());
    box = WeightBox{op, SmallVector<int64_t>(type.getRank(), 0),
                    SmallVector<int64_t>(type.getRank(), 1),
                    SmallVector<int64_t>(type.getShape())};
  } else if (auto slice = dyn_cast_or_null<dfg::SliceOp>(op)) {
    std::optional<WeightBox> in = fold(slice.getInput());
    auto inType = cast<RankedTensorType>(slice.getInput().getType());
    // Composable only while the input is the box itself (no reshape).
    if (in && ArrayRef<int64_t>(in->shape) == inType.getShape()) {
      box = in;
      dfg::Shape first, step;
      dfg::sliceOrigin(inType.getShape(), slice.getStarts(), slice.getAxes(),
                       slice.getSteps(), first, step);
      for (int64_t a = 0, e = inType.getRank(); a < e; ++a) {
        box->starts[a] = in->starts[a] + first[a] * in->steps[a];
        box->steps[a] = in->steps[a] * step[a];
      }
      box->shape.assign(slice.getType().getShape().begin(),
                        slice.getType().getShape().end());
    }
  } else if (op && isa<dfg::ReshapeOp, dfg::SqueezeOp, dfg::UnsqueezeOp>(op)) {
    box = fold(op->getOperand(0));
  } else if (auto concat = dyn_cast_or_null<dfg::ConcatOp>(op)) {
    // A concat of weights' boxes (a rank's shard of a padded weight and its
    // zeros) is a root of its own, assembled when the file is written.
    auto type = cast<RankedTensorType>(value.getType());
    if (type.hasStaticShape() &&
        llvm::all_of(concat.getInputs(), [&](Value part) {
          return cast<RankedTensorType>(part.getType()).hasStaticShape() &&
                 fold(part).has_value();
        }))
      box = WeightBox{op, SmallVector<int64_t>(type.getRank(), 0),
                      SmallVector<int64_t>(type.getRank(), 1),
                      SmallVector<int64_t>(type.getShape())};
  }
  folded_[value] = box;
  return box;
}

bool WeightShards::productReadsBf16(Value value) {
  if (!productsInBf16_)
    return false;
  std::optional<WeightBox> box = fold(value);
  return box && isa<dfg::WeightOp, dfg::ConcatOp>(box->root) &&
         cast<RankedTensorType>(box->root->getResult(0).getType())
             .getElementType()
             .isF32();
}

int WeightShards::entryFor(Value value, bool bf16) {
  std::optional<WeightBox> box = fold(value);
  auto rootType = cast<RankedTensorType>(box->root->getResult(0).getType());
  Type element = bf16 ? Type(BFloat16Type::get(value.getContext()))
                      : rootType.getElementType();
  for (auto [i, e] : llvm::enumerate(entries_))
    if (e.box == *box && e.type.getElementType() == element)
      return static_cast<int>(i);
  std::string base;
  if (auto w = dyn_cast<dfg::WeightOp>(box->root))
    base = w.getName().str();
  else if (auto concat = dyn_cast<dfg::ConcatOp>(box->root))
    base = concatName(concat) + "." + std::to_string(entries_.size());
  else
    base = "constant." + std::to_string(entries_.size());
  std::string name = boxName(*box, rootType.getShape(), base);
  // The same box in f32 and in bf16 (read by a product and by another op)
  // are two tensors of the file.
  if (element != rootType.getElementType())
    name += ".bf16";
  // One initializer read in two shapes (an exporter's shared ones, a
  // norm's [C] scale and an instance norm's [C, 1]) is two weights of one
  // name: the later ones are named by their shape too.
  auto taken = [&](StringRef n) {
    return llvm::any_of(entries_, [&](const Entry &e) { return e.name == n; });
  };
  if (taken(name)) {
    std::string shaped =
        name + "<" +
        llvm::join(llvm::map_range(box->shape,
                                   [](int64_t d) { return std::to_string(d); }),
                   "x") +
        ">";
    for (int k = 2; taken(shaped); ++k)
      shaped = name + "#" + std::to_string(k);
    name = shaped;
  }
  entries_.push_back(
      {name, *box, RankedTensorType::get(box->shape, element)});
  return static_cast<int>(entries_.size() - 1);
}

namespace {

/// Calls `run(bytes, count)` for each run of the box's elements in
/// row-major order, `root` being the root's dense bytes (`width` each).
template <typename Run>
void walkBox(const WeightBox &box, ArrayRef<int64_t> rootShape,
             const uint8_t *root, size_t width, Run run) {
  int64_t rank = box.shape.size();
  if (!rank) {
    run(root, 1);
    return;
  }
  SmallVector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * rootShape[d + 1];
  int64_t inner = box.shape[rank - 1];
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d)
    rows *= box.shape[d];
  if (inner == 0)
    rows = 0;
  SmallVector<int64_t> index(rank, 0);
  int64_t s0 = box.starts[rank - 1], st = box.steps[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (int64_t d = 0; d + 1 < rank; ++d)
      at += (box.starts[d] + index[d] * box.steps[d]) * strides[d];
    if (st == 1) {
      run(root + (at + s0) * width, inner);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        run(root + (at + s0 + i * st) * width, 1);
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < box.shape[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

/// The bytes of the roots of a rank's boxes: weights mapped from their
/// files (in their stored type), constants made dense, concats assembled
/// from their parts (in their own type).
class WeightShards::Roots {
public:
  Roots(WeightShards &shards, StringRef weightsDir)
      : shards_(shards), weightsDir_(weightsDir) {}

  /// The root's bytes, and the element type they hold.
  llvm::Expected<std::pair<const uint8_t *, Type>> bytes(Operation *root) {
    auto rootType = cast<RankedTensorType>(root->getResult(0).getType());
    auto w = dyn_cast<dfg::WeightOp>(root);
    if (w && w.getQuantization()) {
      // Dequantized whole, in f32 (the boxes convert to the result type).
      std::vector<uint8_t> &owned = owned_[root];
      if (owned.empty() && rootType.getNumElements() != 0) {
        owned.resize(rootType.getNumElements() * sizeof(float));
        if (llvm::Error e = dfg::dequantizeWeightInto(
                w, weightsDir_, reinterpret_cast<float *>(owned.data()))) {
          owned_.erase(root);
          return std::move(e);
        }
      }
      return std::make_pair(owned.data(),
                            Type(Float32Type::get(root->getContext())));
    }
    if (w) {
      SmallString<256> file(weightsDir_);
      llvm::sys::path::append(file, w.getFile());
      auto &buffer = files_[file.str().str()];
      if (!buffer) {
        auto mapped = llvm::MemoryBuffer::getFile(
            file, /*IsText=*/false, /*RequiresNullTerminator=*/false);
        if (!mapped)
          return error("cannot read weight file '" + file + "' (weight '" +
                       w.getName() + "'): " + mapped.getError().message());
        buffer = std::move(*mapped);
      }
      uint64_t end = w.getOffset() + w.getLength();
      if (end > buffer->getBufferSize())
        return error("weight '" + w.getName() + "' needs bytes up to " +
                     Twine(end) + " of '" + file + "', which has only " +
                     Twine(buffer->getBufferSize()) + " (truncated?)");
      return std::make_pair(
          reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) +
              w.getOffset(),
          w.getStoredElementType());
    }
    Type element = rootType.getElementType();
    std::vector<uint8_t> &owned = owned_[root];
    if (!owned.empty() || rootType.getNumElements() == 0)
      return std::make_pair(owned.data(), element);
    if (auto constant = dyn_cast<dfg::ConstantOp>(root)) {
      // (A splat's values are every element's: constantBytes writes them
      // all.)
      owned = constantBytes(cast<DenseElementsAttr>(constant.getValue()));
      return std::make_pair(owned.data(), element);
    }
    // A concat: each part's box in the concat's type, interleaved along
    // the axis (one block of each part per index of the outer dimensions).
    auto concat = cast<dfg::ConcatOp>(root);
    rt::DType to = *elementDType(element);
    size_t width = rt::byteWidth(to);
    int64_t axis = concat.getAxis();
    if (axis < 0)
      axis += rootType.getRank();
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= rootType.getDimSize(d);
    std::vector<std::vector<uint8_t>> parts;
    std::vector<size_t> blocks;
    for (Value part : concat.getInputs()) {
      WeightBox box = *shards_.fold(part);
      auto bytes = boxBytes(box, to);
      if (!bytes)
        return bytes.takeError();
      parts.push_back(std::move(*bytes));
      blocks.push_back(parts.back().size() / outer);
      // A part's root made here (a dequantized weight padded by the
      // concat) is not kept past it unless a later entry reads it.
      if (!stillNeeded_ || !stillNeeded_(box.root))
        owned_.erase(box.root);
    }
    std::vector<uint8_t> assembled;
    assembled.reserve(rootType.getNumElements() * width);
    for (int64_t o = 0; o < outer; ++o)
      for (size_t p = 0; p < parts.size(); ++p)
        assembled.insert(assembled.end(), parts[p].begin() + o * blocks[p],
                         parts[p].begin() + (o + 1) * blocks[p]);
    owned = std::move(assembled);
    return std::make_pair(owned.data(), element);
  }

  /// Forgets the bytes made for `root` (a dequantized weight, an assembled
  /// concat) once no later entry reads it: a rank's file is written one
  /// root at a time, not with every dequantized weight in memory at once.
  void release(Operation *root) { owned_.erase(root); }
  /// Whether a later entry reads `root` (its bytes are then kept).
  void setStillNeeded(std::function<bool(Operation *)> stillNeeded) {
    stillNeeded_ = std::move(stillNeeded);
  }

private:
  static llvm::Error error(const Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  }

  /// A box's elements, dense, converted to `to`.
  llvm::Expected<std::vector<uint8_t>> boxBytes(const WeightBox &box,
                                                rt::DType to) {
    auto root = bytes(box.root);
    if (!root)
      return root.takeError();
    rt::DType from = *elementDType(root->second);
    size_t width = rt::byteWidth(from);
    std::vector<uint8_t> dense;
    auto rootShape =
        cast<RankedTensorType>(box.root->getResult(0).getType()).getShape();
    walkBox(box, rootShape, root->first, width,
            [&](const uint8_t *p, int64_t n) {
              dense.insert(dense.end(), p, p + n * width);
            });
    if (from == to)
      return dense;
    std::vector<uint8_t> converted(dense.size() / width * rt::byteWidth(to));
    rt::convertFloatsSaturating(from, to, dense.data(), converted.data(),
                                dense.size() / width);
    return converted;
  }

  WeightShards &shards_;
  std::string weightsDir_;
  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files_;
  // A std::map: bytes() holds a reference to one root's bytes while it
  // makes its parts' (a concat's), which insert others.
  std::map<Operation *, std::vector<uint8_t>> owned_;
  std::function<bool(Operation *)> stillNeeded_;
};

std::string WeightShards::concatName(Operation *op) {
  auto concat = cast<dfg::ConcatOp>(op);
  std::string name = "concat(";
  for (auto [i, part] : llvm::enumerate(concat.getInputs())) {
    if (i)
      name += ",";
    std::optional<WeightBox> box = fold(part);
    auto rootType = cast<RankedTensorType>(box->root->getResult(0).getType());
    if (auto w = dyn_cast<dfg::WeightOp>(box->root))
      name += boxName(*box, rootType.getShape(), w.getName());
    else if (auto inner = dyn_cast<dfg::ConcatOp>(box->root))
      name += concatName(inner);
    else if (auto c = dyn_cast<dfg::ConstantOp>(box->root);
             c && isa<SplatElementsAttr>(c.getValue()))
      name += "splat" + llvm::join(llvm::map_range(box->shape,
                                                   [](int64_t d) {
                                                     return std::to_string(d);
                                                   }),
                                   "x");
    else
      name += "constant";
  }
  return name + ")";
}

llvm::Expected<std::pair<uint64_t, uint64_t>>
WeightShards::write(const std::string &path, StringRef weightsDir,
                    llvm::raw_ostream *progress) {
  auto error = [&](const Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  std::vector<rt::SafetensorsEntry> header;
  uint64_t totalBytes = 0;
  for (const Entry &e : entries_) {
    std::optional<rt::DType> dtype = elementDType(e.type.getElementType());
    if (!dtype)
      return error("weight '" + e.name +
                   "' has an element type meshc cannot "
                   "store");
    header.push_back({e.name, *dtype,
                      std::vector<int64_t>(e.type.getShape().begin(),
                                           e.type.getShape().end()),
                      0, 0});
    totalBytes += e.type.getNumElements() * rt::byteWidth(*dtype);
  }
  rt::SafetensorsWriter writer;
  std::string message;
  if (!writer.open(path, header, message))
    return error(message);

  Roots roots(*this, weightsDir);
  llvm::DenseMap<Operation *, size_t> lastUse;
  for (auto [i, e] : llvm::enumerate(entries_))
    lastUse[e.box.root] = i;
  size_t current = 0;
  roots.setStillNeeded([&](Operation *root) {
    auto it = lastUse.find(root);
    return it != lastUse.end() && it->second > current;
  });
  std::vector<uint8_t> chunk, converted;
  uint64_t done = 0;
  int shown = -1;
  for (auto [index, e] : llvm::enumerate(entries_)) {
    current = index;
    const WeightBox &box = e.box;
    auto rootType = cast<RankedTensorType>(box.root->getResult(0).getType());
    // A weight converted by --dtype is read as its stored type and written
    // as its own.
    auto root = roots.bytes(box.root);
    if (!root)
      return root.takeError();
    rt::DType from = *elementDType(root->second),
              to = *elementDType(e.type.getElementType());
    size_t width = rt::byteWidth(from);
    auto flush = [&]() -> bool {
      if (from != to) {
        size_t n = chunk.size() / width;
        converted.resize(n * rt::byteWidth(to));
        rt::convertFloatsSaturating(from, to, chunk.data(), converted.data(),
                                    n);
        chunk.swap(converted);
      }
      bool ok = writer.append(chunk.data(), chunk.size(), message);
      done += chunk.size();
      chunk.clear();
      return ok;
    };
    bool failed = false;
    walkBox(box, rootType.getShape(), root->first, width,
            [&](const uint8_t *p, int64_t n) {
              if (failed)
                return;
              chunk.insert(chunk.end(), p, p + n * width);
              if (chunk.size() < (4u << 20))
                return;
              if (!flush()) {
                failed = true;
                return;
              }
              if (progress && totalBytes) {
                int percent = static_cast<int>(100 * done / totalBytes);
                if (percent != shown) {
                  *progress << "\r  writing " << path << ": " << percent << "%";
                  progress->flush();
                  shown = percent;
                }
              }
            });
    if (failed || !flush())
      return error(message);
    if (lastUse[box.root] == index)
      roots.release(box.root);
  }
  if (progress && shown >= 0)
    *progress << "\r  writing " << path << ": 100%\n";
  if (!writer.close(message))
    return error(message);
  return std::make_pair(writer.fileSize(), writer.checksum());
}

} // namespace meshc::codegen
