//===- QuantizedWeights.cpp - Weight-only quantized weight references ----===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/IR/QuantizedWeights.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "meshc/runtime/half.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <climits>

using namespace mlir;

namespace meshc::dfg {

namespace {

llvm::Error fail(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
}

bool isFloat(Type t) { return t && (t.isF32() || t.isF16() || t.isBF16()); }

int64_t widthOf(Type t) { return t.isF32() ? 4 : t.isUnsignedInteger(8) ? 1 : 2; }

DictionaryAttr partAttr(Builder &b, const QuantizedPart &part) {
  return b.getDictionaryAttr(
      {b.getNamedAttr("file", b.getStringAttr(part.file)),
       b.getNamedAttr("offset", b.getI64IntegerAttr(part.offset)),
       b.getNamedAttr("length", b.getI64IntegerAttr(part.length)),
       b.getNamedAttr("type", TypeAttr::get(part.type))});
}

llvm::Expected<QuantizedPart> parsePart(DictionaryAttr attr, StringRef what) {
  auto file = attr ? attr.getAs<StringAttr>("file") : nullptr;
  auto offset = attr ? attr.getAs<IntegerAttr>("offset") : nullptr;
  auto length = attr ? attr.getAs<IntegerAttr>("length") : nullptr;
  auto type = attr ? attr.getAs<TypeAttr>("type") : nullptr;
  if (!file || !offset || !length || !type)
    return fail(what + " must be {file, offset, length, type}");
  return QuantizedPart{file.getValue().str(), offset.getInt(), length.getInt(),
                       type.getValue()};
}

std::string checkPart(const QuantizedPart &part, StringRef what,
                      int64_t expected) {
  if (part.file.empty() || llvm::sys::path::is_absolute(part.file) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(part.file),
                                          llvm::sys::path::end(part.file)),
                         ".."))
    return ("has " + what + " in '" + part.file +
            "', which is not a relative path inside the model's folder")
        .str();
  if (part.offset < 0 || part.length != expected)
    return ("has " + what + " at offset " + llvm::Twine(part.offset) +
            " of length " + llvm::Twine(part.length) + " where " +
            llvm::Twine(expected) + " bytes are needed")
        .str();
  return "";
}

float floatAt(const uint8_t *bytes, Type type, int64_t i) {
  if (type.isF32()) {
    float v;
    std::memcpy(&v, bytes + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, bytes + 2 * i, 2);
  return type.isF16() ? rt::halfToFloat(h) : rt::bfloat16ToFloat(h);
}

/// The `bits`-bit integer at bit `bit` of packed bytes, sign-extended when
/// `isSigned`.
int64_t packedAtBit(const uint8_t *data, int64_t bit, int64_t bits,
                    bool isSigned) {
  int64_t v = (data[bit / 8] >> (bit % 8)) & ((1 << bits) - 1);
  return isSigned && v >= (1 << (bits - 1)) ? v - (1 << bits) : v;
}

} // namespace

DictionaryAttr quantizationAttr(MLIRContext *context,
                                const QuantizedLayout &layout) {
  Builder b(context);
  SmallVector<NamedAttribute> entries{
      b.getNamedAttr("bits", b.getI64IntegerAttr(layout.bits)),
      b.getNamedAttr("block_size", b.getI64IntegerAttr(layout.blockSize)),
      b.getNamedAttr("columns", b.getI64IntegerAttr(layout.columns)),
      b.getNamedAttr("row_bytes", b.getI64IntegerAttr(layout.rowBytes))};
  if (layout.hasScales())
    entries.push_back(b.getNamedAttr("scales", partAttr(b, layout.scales)));
  else if (layout.scale)
    entries.push_back(b.getNamedAttr("scale", b.getF64FloatAttr(*layout.scale)));
  if (!layout.zeroPointValues.empty())
    entries.push_back(b.getNamedAttr(
        "zero_point_values", b.getDenseI64ArrayAttr(layout.zeroPointValues)));
  if (layout.blockRows != 1)
    entries.push_back(
        b.getNamedAttr("block_rows", b.getI64IntegerAttr(layout.blockRows)));
  if (layout.isSigned)
    entries.push_back(b.getNamedAttr("signed", b.getBoolAttr(true)));
  if (layout.zeroPoint)
    entries.push_back(
        b.getNamedAttr("zero_point", b.getI64IntegerAttr(*layout.zeroPoint)));
  if (layout.zeroPointRowBits)
    entries.push_back(b.getNamedAttr(
        "zero_point_row_bits", b.getI64IntegerAttr(*layout.zeroPointRowBits)));
  if (layout.zeroPoints)
    entries.push_back(
        b.getNamedAttr("zero_points", partAttr(b, *layout.zeroPoints)));
  if (!layout.codebook.empty())
    entries.push_back(b.getNamedAttr(
        "codebook", b.getDenseF32ArrayAttr(layout.codebook)));
  if (layout.highBitsFirst)
    entries.push_back(b.getNamedAttr("high_bits_first", b.getBoolAttr(true)));
  return b.getDictionaryAttr(entries);
}

llvm::Expected<QuantizedLayout> parseQuantization(DictionaryAttr attr) {
  QuantizedLayout layout;
  for (auto [key, field] :
       {std::pair<StringRef, int64_t *>{"bits", &layout.bits},
        {"block_size", &layout.blockSize},
        {"columns", &layout.columns},
        {"row_bytes", &layout.rowBytes}}) {
    auto value = attr.getAs<IntegerAttr>(key);
    if (!value)
      return fail("quantization needs the integer '" + key + "'");
    *field = value.getInt();
  }
  if (attr.get("block_rows")) {
    auto rows = attr.getAs<IntegerAttr>("block_rows");
    if (!rows)
      return fail("quantization's 'block_rows' must be an integer");
    layout.blockRows = rows.getInt();
  }
  if (attr.get("signed")) {
    auto isSigned = attr.getAs<BoolAttr>("signed");
    if (!isSigned)
      return fail("quantization's 'signed' must be a bool");
    layout.isSigned = isSigned.getValue();
  }
  if (attr.get("high_bits_first")) {
    auto high = attr.getAs<BoolAttr>("high_bits_first");
    if (!high)
      return fail("quantization's 'high_bits_first' must be a bool");
    layout.highBitsFirst = high.getValue();
  }
  if (attr.get("codebook")) {
    auto codebook = attr.getAs<DenseF32ArrayAttr>("codebook");
    if (!codebook)
      return fail("quantization's 'codebook' must be f32 values");
    layout.codebook.assign(codebook.asArrayRef().begin(),
                           codebook.asArrayRef().end());
  }
  if (attr.get("zero_point")) {
    auto zero = attr.getAs<IntegerAttr>("zero_point");
    if (!zero)
      return fail("quantization's 'zero_point' must be an integer");
    layout.zeroPoint = zero.getInt();
  }
  if (attr.get("zero_point_row_bits")) {
    auto rowBits = attr.getAs<IntegerAttr>("zero_point_row_bits");
    if (!rowBits)
      return fail("quantization's 'zero_point_row_bits' must be an integer");
    layout.zeroPointRowBits = rowBits.getInt();
  }
  if (attr.get("zero_point_values")) {
    auto values = attr.getAs<DenseI64ArrayAttr>("zero_point_values");
    if (!values)
      return fail("quantization's 'zero_point_values' must be integers");
    layout.zeroPointValues.assign(values.asArrayRef().begin(),
                                  values.asArrayRef().end());
  }
  if (attr.get("scale")) {
    auto scale = attr.getAs<FloatAttr>("scale");
    if (!scale)
      return fail("quantization's 'scale' must be a float");
    layout.scale = scale.getValueAsDouble();
  }
  if (attr.get("scales")) {
    auto scales = parsePart(attr.getAs<DictionaryAttr>("scales"), "scales");
    if (!scales)
      return scales.takeError();
    layout.scales = *scales;
  }
  if (attr.get("zero_points")) {
    auto zeroPoints =
        parsePart(attr.getAs<DictionaryAttr>("zero_points"), "zero_points");
    if (!zeroPoints)
      return zeroPoints.takeError();
    layout.zeroPoints = *zeroPoints;
  }
  return layout;
}

/// a * b, or nullopt where it overflows.
std::optional<int64_t> times(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

std::string checkQuantization(const QuantizedLayout &q, int64_t elements,
                              int64_t length) {
  if (q.bits != 2 && q.bits != 4 && q.bits != 8)
    return "has " + std::to_string(q.bits) + "-bit elements (2, 4 or 8)";
  if (q.blockSize < 1 || q.columns < 1 || elements % q.columns != 0)
    return "has block size " + std::to_string(q.blockSize) + " and " +
           std::to_string(q.columns) + " columns, which must be positive and "
           "divide its " + std::to_string(elements) + " elements";
  // (columns <= elements, so columns * bits does not overflow.)
  if (q.rowBytes < (q.columns * q.bits + 7) / 8)
    return "has rows of " + std::to_string(q.rowBytes) +
           " bytes, too few for " + std::to_string(q.columns) + " " +
           std::to_string(q.bits) + "-bit elements";
  if (q.blockRows < 1)
    return "has " + std::to_string(q.blockRows) +
           " rows to a block, which must be positive";
  int64_t rows = elements / q.columns;
  std::optional<int64_t> bytes = times(rows, q.rowBytes);
  if (!bytes || length != *bytes)
    return "has length " + std::to_string(length) + " where its " +
           std::to_string(rows) + " rows of " + std::to_string(q.rowBytes) +
           " bytes need " + (bytes ? std::to_string(*bytes) : "more");
  // (At most one scale per element.)
  int64_t blocks = q.blockRowsOf(rows) * q.blocksPerRow();
  if (!q.zeroPointValues.empty() &&
      (q.zeroPoints ||
       static_cast<int64_t>(q.zeroPointValues.size()) != blocks))
    return "has " + std::to_string(q.zeroPointValues.size()) +
           " zero points held as values for " + std::to_string(blocks) +
           " blocks";
  if (!q.codebook.empty() &&
      static_cast<int64_t>(q.codebook.size()) != (int64_t(1) << q.bits))
    return "has a codebook of " + std::to_string(q.codebook.size()) +
           " values for " + std::to_string(q.bits) + "-bit codes";
  if (!q.codebook.empty() &&
      (q.zeroPoints || q.zeroPoint || !q.zeroPointValues.empty() ||
       q.isSigned))
    return "has both a codebook and zero points (or signed codes)";
  if (q.hasScales() && !isFloat(q.scales.type))
    return "has scales of a type other than f32, f16 or bf16";
  if (std::string why =
          q.hasScales()
              ? checkPart(q.scales, "scales", blocks * widthOf(q.scales.type))
              : std::string();
      !why.empty())
    return why;
  if (q.zeroPoints) {
    if (!q.packedZeroPoints())
      return "has zero points of a type other than ui8 (packed as its "
             "elements)";
    int64_t stride = q.zeroPointRowStride();
    if (stride < q.blocksPerRow() * q.bits || stride % q.bits != 0 ||
        !times(q.blockRowsOf(rows), stride) ||
        *times(q.blockRowsOf(rows), stride) > INT64_MAX - 7)
      return "has rows of " + std::to_string(stride) +
             " bits of zero points for " + std::to_string(q.blocksPerRow()) +
             " blocks of " + std::to_string(q.bits) +
             " bits (too few, too many, or not whole elements)";
    if (std::string why = checkPart(*q.zeroPoints, "zero points",
                                    q.zeroPointBytes(rows));
        !why.empty())
      return why;
  }
  return "";
}

void dequantizeRows(const QuantizedLayout &q, int64_t rows,
                    const uint8_t *packed, const uint8_t *scales,
                    const uint8_t *zeroPoints, float *out) {
  const int64_t blocks = q.blocksPerRow(), zpRow = q.zeroPointRowStride();
  const float fallback = static_cast<float>(
      q.zeroPoint ? *q.zeroPoint : int64_t(1) << (q.bits - 1));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t *row = packed + r * q.rowBytes;
    const int64_t grid = r / q.blockRows; // the scales' row
    for (int64_t j = 0; j < blocks; ++j) {
      float scale =
          scales ? floatAt(scales, q.scales.type, grid * blocks + j)
                 : static_cast<float>(q.scale.value_or(1.0));
      float zero =
          !q.zeroPointValues.empty()
              ? static_cast<float>(q.zeroPointValues[grid * blocks + j])
          : zeroPoints ? static_cast<float>(packedAtBit(
                                    zeroPoints, grid * zpRow + j * q.bits,
                                    q.bits, q.isSigned))
                              : fallback;
      int64_t end = std::min(q.columns, (j + 1) * q.blockSize);
      for (int64_t k = j * q.blockSize; k < end; ++k) {
        int64_t bit = k * q.bits;
        if (q.highBitsFirst)
          bit = bit / 8 * 8 + (8 - q.bits - bit % 8);
        int64_t code = packedAtBit(row, bit, q.bits, q.isSigned);
        out[r * q.columns + k] =
            q.codebook.empty()
                ? (static_cast<float>(code) - zero) * scale
                : q.codebook[static_cast<size_t>(code)] * scale;
      }
    }
  }
}

llvm::Error dequantizeWeightInto(WeightOp op, StringRef folder, float *out) {
  auto layout = parseQuantization(*op.getQuantization());
  if (!layout)
    return layout.takeError();
  // Each reference checked against its file's size first: a slice past the
  // end would read zeros (or fault) instead of failing.
  auto read = [&](StringRef file, int64_t offset, int64_t length,
                  StringRef what)
      -> llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> {
    SmallString<256> path(folder);
    llvm::sys::path::append(path, file);
    uint64_t size = 0;
    if (std::error_code ec = llvm::sys::fs::file_size(path, size))
      return fail("cannot read the " + what + " of weight '" + op.getName() +
                  "' from '" + path + "': " + ec.message());
    if (offset < 0 || length < 0 || static_cast<uint64_t>(offset) > size ||
        static_cast<uint64_t>(length) > size - offset)
      return fail("the " + what + " of weight '" + op.getName() +
                  "' need bytes up to " + llvm::Twine(offset + length) +
                  " of '" + path + "', which has only " + llvm::Twine(size) +
                  " (truncated?)");
    auto buffer = llvm::MemoryBuffer::getFileSlice(path, length, offset,
                                                   /*IsVolatile=*/false);
    if (!buffer)
      return fail("cannot read the " + what + " of weight '" + op.getName() +
                  "' from '" + path + "': " + buffer.getError().message());
    return std::move(*buffer);
  };
  auto packed = read(op.getFile(), static_cast<int64_t>(op.getOffset()),
                     static_cast<int64_t>(op.getLength()), "packed elements");
  if (!packed)
    return packed.takeError();
  std::unique_ptr<llvm::MemoryBuffer> scaleBytes;
  if (layout->hasScales()) {
    auto scales = read(layout->scales.file, layout->scales.offset,
                       layout->scales.length, "scales");
    if (!scales)
      return scales.takeError();
    scaleBytes = std::move(*scales);
  }
  std::unique_ptr<llvm::MemoryBuffer> zeroPoints;
  if (layout->zeroPoints) {
    auto zp = read(layout->zeroPoints->file, layout->zeroPoints->offset,
                   layout->zeroPoints->length, "zero points");
    if (!zp)
      return zp.takeError();
    zeroPoints = std::move(*zp);
  }
  auto bytes = [](const std::unique_ptr<llvm::MemoryBuffer> &b) {
    return b ? reinterpret_cast<const uint8_t *>(b->getBufferStart()) : nullptr;
  };
  dequantizeRows(*layout, op.getType().getNumElements() / layout->columns,
                 bytes(*packed), bytes(scaleBytes), bytes(zeroPoints), out);
  return llvm::Error::success();
}

llvm::Expected<std::vector<float>> dequantizeWeight(WeightOp op,
                                                    StringRef folder) {
  std::vector<float> out(static_cast<size_t>(op.getType().getNumElements()));
  if (llvm::Error e = dequantizeWeightInto(op, folder, out.data()))
    return std::move(e);
  return out;
}

} // namespace meshc::dfg
