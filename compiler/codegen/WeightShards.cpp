//===- WeightShards.cpp - A rank program's weights, sliced and written ----===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/WeightShards.h"
#include "compiler/codegen/DTypes.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "meshc/runtime/half.h"
#include "meshc/runtime/safetensors.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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
  }
  folded_[value] = box;
  return box;
}

bool WeightShards::productReadsBf16(Value value) {
  if (!productsInBf16_)
    return false;
  std::optional<WeightBox> box = fold(value);
  return box && isa<dfg::WeightOp>(box->root) &&
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
  else
    base = "constant." + std::to_string(entries_.size());
  std::string name = boxName(*box, rootType.getShape(), base);
  // The same box in f32 and in bf16 (read by a product and by another op)
  // are two tensors of the file.
  if (element != rootType.getElementType())
    name += ".bf16";
  entries_.push_back(
      {name, *box, RankedTensorType::get(box->shape, element)});
  return static_cast<int>(entries_.size() - 1);
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

  std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> files;
  std::vector<uint8_t> chunk, converted;
  uint64_t done = 0;
  int shown = -1;
  for (const Entry &e : entries_) {
    const WeightBox &box = e.box;
    auto rootType = cast<RankedTensorType>(box.root->getResult(0).getType());
    // A weight converted by --dtype is read as its stored type and written
    // as its own.
    Type stored = rootType.getElementType();
    if (auto w = dyn_cast<dfg::WeightOp>(box.root))
      stored = w.getStoredElementType();
    rt::DType from = *elementDType(stored),
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
    const uint8_t *root;
    std::vector<uint8_t> constant;
    if (auto w = dyn_cast<dfg::WeightOp>(box.root)) {
      SmallString<256> file(weightsDir);
      llvm::sys::path::append(file, w.getFile());
      auto &buffer = files[file.str().str()];
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
      root = reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) +
             w.getOffset();
    } else {
      auto attr =
          cast<DenseElementsAttr>(cast<dfg::ConstantOp>(box.root).getValue());
      constant = constantBytes(attr);
      if (attr.isSplat()) {
        std::vector<uint8_t> full;
        full.reserve(rootType.getNumElements() * width);
        for (int64_t i = 0; i < rootType.getNumElements(); ++i)
          full.insert(full.end(), constant.begin(), constant.begin() + width);
        constant = std::move(full);
      }
      root = constant.data();
    }
    // Row-major walk of the box; the innermost dimension is one run when
    // its step is 1.
    int64_t rank = box.shape.size();
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * rootType.getDimSize(d + 1);
    int64_t inner = rank ? box.shape[rank - 1] : 1;
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < rank; ++d)
      rows *= box.shape[d];
    if (inner == 0)
      rows = 0;
    SmallVector<int64_t> index(rank, 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t at = 0;
      for (int64_t d = 0; d + 1 < rank; ++d)
        at += (box.starts[d] + index[d] * box.steps[d]) * strides[d];
      if (rank) {
        int64_t s0 = box.starts[rank - 1], st = box.steps[rank - 1];
        if (st == 1) {
          const uint8_t *p = root + (at + s0) * width;
          chunk.insert(chunk.end(), p, p + inner * width);
        } else {
          for (int64_t i = 0; i < inner; ++i) {
            const uint8_t *p = root + (at + s0 + i * st) * width;
            chunk.insert(chunk.end(), p, p + width);
          }
        }
      } else {
        chunk.insert(chunk.end(), root, root + width);
      }
      for (int64_t d = rank - 2; d >= 0; --d) {
        if (++index[d] < box.shape[d])
          break;
        index[d] = 0;
      }
      if (chunk.size() >= (4u << 20)) {
        if (!flush())
          return error(message);
        if (progress && totalBytes) {
          int percent = static_cast<int>(100 * done / totalBytes);
          if (percent != shown) {
            *progress << "\r  writing " << path << ": " << percent << "%";
            progress->flush();
            shown = percent;
          }
        }
      }
    }
    if (!flush())
      return error(message);
  }
  if (progress && shown >= 0)
    *progress << "\r  writing " << path << ": 100%\n";
  if (!writer.close(message))
    return error(message);
  return std::make_pair(writer.fileSize(), writer.checksum());
}

} // namespace meshc::codegen
