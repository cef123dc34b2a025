//===- QuantizedWeights.h - Weight-only quantized weight references -----*- C++ -*-===//
//
// Part of meshc. The layout of a `dfg.weight` with `quantization` (packed
// low-bit integers in blocks with scales and zero points, as onnxruntime's
// MatMulNBits and GatherBlockQuantized store them), and its dequantization,
// shared by the verifier, the reference evaluator and code generation.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_DIALECTS_DFG_IR_QUANTIZEDWEIGHTS_H
#define MESHC_DIALECTS_DFG_IR_QUANTIZEDWEIGHTS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace meshc::dfg {

class WeightOp;

/// Bytes of a file that a quantized weight reads beside its elements.
struct QuantizedPart {
  std::string file;
  int64_t offset = 0, length = 0;
  /// f32, f16 or bf16; for packed zero points, ui8.
  mlir::Type type;
};

struct QuantizedLayout {
  int64_t bits = 4, blockSize = 32, columns = 0, rowBytes = 0;
  /// Rows that share a block's scale (ONNX DequantizeLinear along axis 0,
  /// per channel or per tensor): 1 for MatMulNBits' blocks along a row.
  int64_t blockRows = 1;
  /// Elements (and zero points) in two's complement.
  bool isSigned = false;
  /// The zero point without zero points: 2^(bits - 1) unless given.
  std::optional<int64_t> zeroPoint;
  /// No file: every scale is `scale` (one for the weight, as a model's
  /// per-tensor scale held as a literal), or 1 (onnxruntime's MatMulInteger
  /// reads the weight's integers less its zero points, and scales the
  /// product).
  QuantizedPart scales;
  std::optional<double> scale;
  /// Zero points held as values (one per block of the scales' grid, row by
  /// row), where the model holds them so rather than as bytes (onnx.helper's
  /// int32_data, as quantize_dynamic writes per-column zero points).
  std::vector<int64_t> zeroPointValues;
  bool hasScales() const { return !scales.file.empty(); }
  std::optional<QuantizedPart> zeroPoints;
  /// An element's value is codebook[q] * scale where given (2^bits values,
  /// no zero points: bitsandbytes' NF4 and FP4 codes, as onnxruntime's
  /// MatMulBnb4 holds them), else (q - zero point) * scale.
  std::vector<float> codebook;
  /// Elements packed from each byte's high bits down (MatMulBnb4's first
  /// element in the high nibble), rather than from its low bits up.
  bool highBitsFirst = false;

  int64_t blocksPerRow() const {
    return columns / blockSize + (columns % blockSize != 0);
  }
  /// Rows of the scales' grid for a matrix of `rows` rows.
  int64_t blockRowsOf(int64_t rows) const {
    return rows / blockRows + (rows % blockRows != 0);
  }
  /// Bits from one row of packed zero points (a row of the scales' grid)
  /// to the next: whole bytes (MatMulNBits) unless given (ONNX's packed
  /// 4-bit tensors run on across rows).
  std::optional<int64_t> zeroPointRowBits;
  int64_t zeroPointRowStride() const {
    return zeroPointRowBits ? *zeroPointRowBits
                            : (blocksPerRow() * bits + 7) / 8 * 8;
  }
  /// Bytes of the packed zero points of a matrix of `rows` rows.
  int64_t zeroPointBytes(int64_t rows) const {
    return (blockRowsOf(rows) * zeroPointRowStride() + 7) / 8;
  }
  bool packedZeroPoints() const {
    return zeroPoints && zeroPoints->type.isUnsignedInteger(8);
  }
};

/// The attribute `quantization` of a dfg.weight.
mlir::DictionaryAttr quantizationAttr(mlir::MLIRContext *context,
                                      const QuantizedLayout &layout);
/// The layout an attribute describes, or why it describes none.
llvm::Expected<QuantizedLayout> parseQuantization(mlir::DictionaryAttr attr);
/// Why a weight of `elements` elements and `length` bytes cannot have the
/// layout (invariant 6 of dfg.weight), or "".
std::string checkQuantization(const QuantizedLayout &layout, int64_t elements,
                              int64_t length);

/// Row r's (q - zero point) * scale (codebook[q] * scale), for `rows` rows from their bytes.
void dequantizeRows(const QuantizedLayout &layout, int64_t rows,
                    const uint8_t *packed, const uint8_t *scales,
                    const uint8_t *zeroPoints, float *out);
/// The weight's elements, dequantized in f32, read from `folder`'s files
/// (an error names a file too short for its references).
llvm::Expected<std::vector<float>> dequantizeWeight(WeightOp op,
                                                    llvm::StringRef folder);
/// The same into `out`, which holds the weight's element count.
llvm::Error dequantizeWeightInto(WeightOp op, llvm::StringRef folder,
                                 float *out);

} // namespace meshc::dfg

#endif // MESHC_DIALECTS_DFG_IR_QUANTIZEDWEIGHTS_H
