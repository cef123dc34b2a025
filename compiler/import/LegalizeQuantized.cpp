//===- LegalizeQuantized.cpp - Weight-only quantized matrices -------------===//
//
// Part of meshc. Weight-only quantized ops (onnxruntime's, in the int4
// models of onnxruntime-genai's builder, and ONNX's DequantizeLinear of a
// weight, their QDQ form) read a matrix of packed low-bit integers in blocks
// with scales and zero points. Each becomes a `dfg.weight` with
// `quantization` (a reference to those bytes, dequantized by code generation
// while it slices and by the reference evaluator), read by the standard ops
// the op computes:
//
//   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?)
//     -> matmul(A, transpose(W)) (+ bias)     W [N, K], rows of B
//   MatMulBnb4(A, B, absmax)                  FP4 or NF4 codes times
//     -> matmul(A, transpose(W))              their block's absmax
//   GatherBlockQuantized(data, indices, scales, zero_points?)
//     -> gather(W, indices, axis 0)           W [rows, K], rows of data
//   DequantizeLinear(x, scale, zero_point?)   x a 2-D integer initializer
//     -> W                                    per tensor, axis or block
//
// so that raising makes them linears and embeddings, and tensor parallelism
// splits them as any other weight. The products run in the activations'
// type, as onnxruntime's accuracy level 1 does (a higher level has it round
// the activations to 8 bits, which meshc does not).
//
//===----------------------------------------------------------------------===//
#include "compiler/import/Legalization.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/QuantizedWeights.h"

#include <onnx/onnx_pb.h>

#include <limits>

using namespace mlir;

namespace meshc::onnximport {
namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string dimsText(ArrayRef<int64_t> dims) { return dfg::formatShape(dims); }

/// The layout of a [rows, columns] matrix of 8-bit integers with one block
/// (scale 1, zero point 0 until given).
dfg::QuantizedLayout eightBitMatrix(int64_t rows, int64_t columns,
                                    bool isSigned) {
  dfg::QuantizedLayout layout;
  layout.bits = 8;
  layout.isSigned = isSigned;
  layout.columns = columns;
  layout.rowBytes = columns;
  layout.zeroPoint = 0;
  layout.blockSize = columns;
  layout.blockRows = rows;
  return layout;
}

/// Zero points the model holds as values (RawInitializer::values): one for
/// the whole weight, or one per block of its scales' grid.
void setHeldZeroPoints(dfg::QuantizedLayout &layout,
                       const RawInitializer &zp) {
  if (zp.values.size() == 1)
    layout.zeroPoint = zp.values.front();
  else
    layout.zeroPointValues.assign(zp.values.begin(), zp.values.end());
}

/// The one value of a float literal (a dfg.constant of one element).
std::optional<double> literalScalar(Value v) {
  auto constant = v ? v.getDefiningOp<dfg::ConstantOp>() : dfg::ConstantOp();
  auto attr = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue())
                       : DenseFPElementsAttr();
  if (!attr || attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

/// The one zero point (input `i`) the model holds: an 8-bit initializer's
/// value, or an integer literal of one element (an INT32 bias's zero point,
/// a 16-bit one).
std::optional<int64_t> heldZeroPoint(NodeContext &ctx, unsigned i) {
  if (const RawInitializer *raw = ctx.rawInput(i); raw && !raw->values.empty())
    return raw->values.size() == 1 ? std::optional<int64_t>(raw->values[0])
                                   : std::nullopt;
  auto constant = ctx.input(i) ? ctx.input(i).getDefiningOp<dfg::ConstantOp>()
                               : dfg::ConstantOp();
  auto attr = constant ? dyn_cast<DenseIntElementsAttr>(constant.getValue())
                       : DenseIntElementsAttr();
  if (!attr || attr.getNumElements() != 1)
    return std::nullopt;
  const APInt &v = *attr.getValues<APInt>().begin();
  return attr.getElementType().isUnsignedInteger() ? int64_t(v.getZExtValue())
                                                   : v.getSExtValue();
}

/// The zero point (input 2) of a quantization per tensor: 0 without one,
/// else the one value the model holds (heldZeroPoint); an error names
/// `what` otherwise.
FailureOr<double> tensorZeroPoint(NodeContext &ctx, StringRef what) {
  if (ctx.numInputs() <= 2 || ctx.node().input(2).empty())
    return 0.0;
  std::optional<int64_t> zp = heldZeroPoint(ctx, 2);
  if (!zp)
    return ctx.error(what + " is supported by one zero point held in the "
                            "model (per tensor), not a computed one");
  return static_cast<double>(*zp);
}

/// Input `i` as packed UINT8 integers of `bytes` bytes, or an error.
FailureOr<const RawInitializer *> packedInput(NodeContext &ctx, unsigned i,
                                              StringRef what) {
  const RawInitializer *raw = ctx.rawInput(i);
  if (!raw || !raw->inFile() || raw->onnxType != onnx::TensorProto::UINT8)
    return ctx.error(what + " must be an initializer of packed UINT8 "
                            "integers (or its Reshape)");
  return raw;
}

/// The scales (input `i`) as a reference to [rows, blocks] floats of the
/// activations' type.
FailureOr<dfg::QuantizedPart> scalesInput(NodeContext &ctx, unsigned i,
                                          int64_t count, Type element) {
  const RawInitializer *raw = ctx.rawInput(i);
  if (!raw || raw->onnxType == onnx::TensorProto::UINT8 || !ctx.input(i))
    return ctx.error("the scales must be an initializer of floats in raw data");
  Type type = ctx.inputType(i).getElementType();
  if (type != element)
    return ctx.error("the scales are of another type than the activations");
  if (product(raw->dims) != count)
    return ctx.error("the scales (" + dimsText(raw->dims) + ") are not " +
                     std::to_string(count) + " values (one per block)");
  return dfg::QuantizedPart{raw->file, raw->offset, raw->length, type};
}

/// The zero points (input `i`, optional) as packed integers of `rowBytes`
/// bytes per row.
FailureOr<std::optional<dfg::QuantizedPart>>
zeroPointsInput(NodeContext &ctx, unsigned i, int64_t rows, int64_t rowBytes) {
  if (i >= ctx.numInputs() || ctx.node().input(i).empty())
    return std::optional<dfg::QuantizedPart>();
  const RawInitializer *raw = ctx.rawInput(i);
  if (raw && raw->onnxType != onnx::TensorProto::UINT8)
    return ctx.error("zero points of the scales' type are not supported "
                     "(only packed UINT8 zero points, as onnxruntime-genai's "
                     "builder writes them)");
  if (!raw || !raw->inFile())
    return ctx.error("the zero points must be an initializer of packed UINT8 "
                     "integers in raw data");
  if (product(raw->dims) != rows * rowBytes)
    return ctx.error("the zero points (" + dimsText(raw->dims) + ") are not " +
                     std::to_string(rows) + " rows of " +
                     std::to_string(rowBytes) + " bytes");
  return std::optional<dfg::QuantizedPart>(dfg::QuantizedPart{
      raw->file, raw->offset, raw->length,
      IntegerType::get(ctx.builder().getContext(), 8, IntegerType::Unsigned)});
}

/// The dfg.weight of a quantized [rows, columns] matrix (or of `shape`, of
/// as many elements), checked by its verifier (invariant 6).
FailureOr<Value> quantizedWeight(NodeContext &ctx, const RawInitializer &data,
                                 const dfg::QuantizedLayout &layout,
                                 int64_t rows, Type element,
                                 ArrayRef<int64_t> shape = {}) {
  if (std::string why = dfg::checkQuantization(layout, rows * layout.columns,
                                               data.length);
      !why.empty())
    return ctx.error("the quantized weight '" + data.name + "' " + why);
  auto type = shape.empty()
                  ? RankedTensorType::get({rows, layout.columns}, element)
                  : RankedTensorType::get(shape, element);
  auto weight = dfg::WeightOp::create(
      ctx.builder(), ctx.loc(), type, data.name, data.file, data.offset,
      data.length, TypeAttr(),
      dfg::quantizationAttr(ctx.builder().getContext(), layout));
  return weight.getResult();
}

FailureOr<int64_t> bitsAttr(NodeContext &ctx, int64_t dflt) {
  int64_t bits = ctx.attrInt("bits", dflt);
  if (bits != 2 && bits != 4 && bits != 8)
    return ctx.error("bits=" + std::to_string(bits) +
                     " is not supported (2, 4 or 8)");
  return bits;
}

/// Checks MatMulNBits' and MatMulBnb4's sizes (positive) and their A (a
/// float tensor ending in K).
LogicalResult checkQuantizedProduct(NodeContext &ctx, int64_t k, int64_t n,
                                    int64_t blockSize) {
  if (k < 1 || n < 1 || blockSize < 1)
    return ctx.error("K=" + std::to_string(k) + ", N=" + std::to_string(n) +
                     " and block_size=" + std::to_string(blockSize) +
                     " must be positive");
  RankedTensorType a = ctx.inputType(0);
  if (!isa<FloatType>(a.getElementType()))
    return ctx.error("A must be floating-point");
  if (a.getRank() < 1 || (!a.isDynamicDim(a.getRank() - 1) &&
                          a.getDimSize(a.getRank() - 1) != k))
    return ctx.error("A " + dimsText(a.getShape()) + " must end in K=" +
                     std::to_string(k));
  return success();
}

/// A * W^T (+ bias) for the quantized [n, k] weight W that `data` holds in
/// `layout` (rows of k, or one row of n * k): MatMulNBits' and MatMulBnb4's
/// result.
LogicalResult matmulQuantizedRows(NodeContext &ctx, const RawInitializer &data,
                                  const dfg::QuantizedLayout &layout,
                                  int64_t n, int64_t k, Value bias) {
  RankedTensorType a = ctx.inputType(0);
  Type element = a.getElementType();
  int64_t rows = n * k / layout.columns;
  FailureOr<Value> w =
      quantizedWeight(ctx, data, layout, rows, element, {n, k});
  if (failed(w))
    return failure();
  SmallVector<int64_t> perm{1, 0};
  FailureOr<Value> wt = ctx.create<dfg::TransposeOp>(
      dfg::transposeShape(shapeOf(*w), perm), element, *w,
      ctx.builder().getDenseI64ArrayAttr(perm));
  if (failed(wt))
    return failure();
  FailureOr<Value> y = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(a.getShape(), shapeOf(*wt)), element, ctx.input(0),
      *wt);
  if (failed(y))
    return failure();
  if (bias) {
    if (shapeOf(bias) != ArrayRef<int64_t>{n} || elementOf(bias) != element)
      return ctx.error("the bias must be [N=" + std::to_string(n) +
                       "] of A's type");
    y = binary<dfg::AddOp>(ctx, *y, bias, element);
    if (failed(y))
      return failure();
  }
  return ctx.setResults(*y);
}

/// MatMulNBits (com.microsoft): Y = A * dequantize(B)^T (+ bias).
LogicalResult legalizeMatMulNBits(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  int64_t k = ctx.attrInt("K", 0), n = ctx.attrInt("N", 0);
  int64_t blockSize = ctx.attrInt("block_size", 0);
  FailureOr<int64_t> bits = bitsAttr(ctx, 4);
  if (failed(bits))
    return failure();
  if (failed(checkQuantizedProduct(ctx, k, n, blockSize)))
    return failure();
  if ((blockSize * *bits) % 8 != 0)
    return ctx.error("blocks of block_size=" + std::to_string(blockSize) +
                     " " + std::to_string(*bits) +
                     "-bit elements do not fill whole bytes (onnxruntime "
                     "takes powers of two from 16)");
  Type element = ctx.inputType(0).getElementType();
  if (ctx.numInputs() > 4 && !ctx.node().input(4).empty())
    return ctx.error("g_idx (a column order other than the blocks') is not "
                     "supported");
  FailureOr<const RawInitializer *> b = packedInput(ctx, 1, "B");
  if (failed(b))
    return failure();
  dfg::QuantizedLayout layout;
  layout.bits = *bits;
  layout.blockSize = blockSize;
  layout.columns = k;
  int64_t blocks = layout.blocksPerRow(), blob = blockSize * *bits / 8;
  layout.rowBytes = blocks * blob;
  if (product((*b)->dims) != n * layout.rowBytes)
    return ctx.error("B (" + dimsText((*b)->dims) + ") is not N=" +
                     std::to_string(n) + " rows of " + std::to_string(blocks) +
                     " blocks of " + std::to_string(blob) + " bytes (K=" +
                     std::to_string(k) + ", block_size=" +
                     std::to_string(blockSize) + ", bits=" +
                     std::to_string(*bits) + ")");
  FailureOr<dfg::QuantizedPart> scales =
      scalesInput(ctx, 2, n * blocks, element);
  if (failed(scales))
    return failure();
  layout.scales = *scales;
  FailureOr<std::optional<dfg::QuantizedPart>> zeroPoints =
      zeroPointsInput(ctx, 3, n, layout.zeroPointRowStride() / 8);
  if (failed(zeroPoints))
    return failure();
  layout.zeroPoints = *zeroPoints;
  return matmulQuantizedRows(ctx, **b, layout, n, k, ctx.input(5));
}

/// bitsandbytes' 4-bit codes (MatMulBnb4's quant_type 0, FP4, and 1, NF4):
/// the value of each code, as onnxruntime's kernels hold them in f32.
std::vector<float> bnb4Codebook(int64_t quantType) {
  if (quantType == 1)
    return {-1.0f, -0.6961928009986877f, -0.5250730514526367f,
            -0.39491748809814453f, -0.28444138169288635f,
            -0.18477343022823334f, -0.09105003625154495f, 0.0f,
            0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,
            0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
            0.7229568362236023f, 1.0f};
  // FP4: a sign bit, then 0, 1/192, 2/3, 1, 1/3, 1/2, 1/6, 1/4.
  std::vector<float> codes{0.0f, 1.0f / 192, 2.0f / 3, 1.0f, 1.0f / 3, 0.5f,
                           1.0f / 6, 0.25f};
  for (int i = 0; i < 8; ++i)
    codes.push_back(-codes[i]);
  return codes;
}

/// MatMulBnb4 (com.microsoft): Y = A * dequantize(B)^T, B the [N, K] weight
/// flattened and quantized in blocks of block_size consecutive elements
/// (which may run across its rows), each an FP4 or NF4 code (two to a byte,
/// the first in the high bits) times its block's absmax. The weight is one
/// quantized row of N * K elements, viewed as [N, K].
LogicalResult legalizeMatMulBnb4(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  if (ctx.numInputs() < 3 || ctx.node().input(2).empty())
    return ctx.error("absmax (input 2) is missing");
  int64_t k = ctx.attrInt("K", 0), n = ctx.attrInt("N", 0);
  int64_t blockSize = ctx.attrInt("block_size", 0);
  int64_t quantType = ctx.attrInt("quant_type", -1);
  if (quantType != 0 && quantType != 1)
    return ctx.error("quant_type=" + std::to_string(quantType) +
                     " is not supported (0, FP4, or 1, NF4)");
  if (failed(checkQuantizedProduct(ctx, k, n, blockSize)))
    return failure();
  Type element = ctx.inputType(0).getElementType();
  FailureOr<const RawInitializer *> b = packedInput(ctx, 1, "B");
  if (failed(b))
    return failure();
  dfg::QuantizedLayout layout;
  layout.bits = 4;
  layout.blockSize = blockSize;
  layout.columns = n * k;
  layout.rowBytes = (n * k + 1) / 2;
  layout.codebook = bnb4Codebook(quantType);
  layout.highBitsFirst = true;
  if (product((*b)->dims) != layout.rowBytes)
    return ctx.error("B (" + dimsText((*b)->dims) + ") is not the " +
                     std::to_string(layout.rowBytes) + " bytes of N=" +
                     std::to_string(n) + " x K=" + std::to_string(k) +
                     " 4-bit codes");
  FailureOr<dfg::QuantizedPart> absmax =
      scalesInput(ctx, 2, layout.blocksPerRow(), element);
  if (failed(absmax))
    return failure();
  layout.scales = *absmax;
  return matmulQuantizedRows(ctx, **b, layout, n, k, Value());
}

/// GatherBlockQuantized (com.microsoft) of packed UINT8 data quantized
/// along its last axis: rows of dequantize(data) gathered along axis 0.
LogicalResult legalizeGatherBlockQuantized(NodeContext &ctx) {
  if (!ctx.input(1))
    return ctx.error("the indices (input 1) are missing");
  FailureOr<const RawInitializer *> data = packedInput(ctx, 0, "data");
  if (failed(data))
    return failure();
  FailureOr<int64_t> bits = bitsAttr(ctx, 4);
  if (failed(bits))
    return failure();
  ArrayRef<int64_t> dims = (*data)->dims;
  int64_t rank = dims.size();
  int64_t gatherAxis = ctx.attrInt("gather_axis", 0);
  int64_t quantizeAxis = ctx.attrInt("quantize_axis", 1);
  int64_t blockSize = ctx.attrInt("block_size", 128);
  if (rank != 2 || (gatherAxis != 0 && gatherAxis != -2) ||
      (quantizeAxis != 1 && quantizeAxis != -1))
    return ctx.error("only 2-D data " + dimsText(dims) +
                     " gathered along axis 0 and quantized along axis 1 is "
                     "supported (gather_axis=" + std::to_string(gatherAxis) +
                     ", quantize_axis=" + std::to_string(quantizeAxis) + ")");
  if (blockSize < 1)
    return ctx.error("block_size must be positive");
  RankedTensorType indices = ctx.inputType(1);
  if (!indices.getElementType().isInteger(64) &&
      !indices.getElementType().isInteger(32))
    return ctx.error("indices must be int32 or int64");
  const RawInitializer *scalesRaw = ctx.rawInput(2);
  if (!ctx.input(2) || !scalesRaw)
    return ctx.error("the scales must be an initializer of floats in raw data");
  Type element = ctx.inputType(2).getElementType();
  if (!isa<FloatType>(element))
    return ctx.error("the scales must be floating-point");
  dfg::QuantizedLayout layout;
  layout.bits = *bits;
  layout.blockSize = blockSize;
  layout.rowBytes = dims[1];
  layout.columns = dims[1] * 8 / *bits;
  FailureOr<dfg::QuantizedPart> scales =
      scalesInput(ctx, 2, dims[0] * layout.blocksPerRow(), element);
  if (failed(scales))
    return failure();
  layout.scales = *scales;
  FailureOr<std::optional<dfg::QuantizedPart>> zeroPoints =
      zeroPointsInput(ctx, 3, dims[0], layout.zeroPointRowStride() / 8);
  if (failed(zeroPoints))
    return failure();
  layout.zeroPoints = *zeroPoints;
  FailureOr<Value> w = quantizedWeight(ctx, **data, layout, dims[0], element);
  if (failed(w))
    return failure();
  return ctx.emit<dfg::GatherOp>(
      dfg::gatherShape(shapeOf(*w), indices.getShape(), 0), element, *w,
      ctx.input(1), 0);
}

/// `v` as `element`, keeping its shape.
Value castTo(NodeContext &ctx, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return dfg::CastOp::create(ctx.builder(), ctx.loc(),
                             RankedTensorType::get(type.getShape(), element),
                             v, element);
}

/// DequantizeLinear (ONNX) of a computed tensor of integers (held as i32:
/// a Gather's rows of a quantized table, legalizePackedGather), by one scale
/// and one zero point: (x - zero point) * scale, in the scale's type.
LogicalResult dequantizeComputed(NodeContext &ctx) {
  if (!isa<IntegerType>(ctx.inputType(0).getElementType()))
    return ctx.error("DequantizeLinear of a tensor of " +
                     dfg::formatShape(ctx.inputType(0).getShape()) +
                     " floats: ONNX dequantizes integers");
  std::optional<double> scale = literalScalar(ctx.input(1));
  if (!scale)
    return ctx.error("DequantizeLinear of a computed tensor is supported by "
                     "one scale held as a literal (per tensor)");
  Type element = ctx.inputType(1).getElementType();
  FailureOr<double> zero =
      tensorZeroPoint(ctx, "DequantizeLinear of a computed tensor");
  if (failed(zero))
    return failure();
  if (ctx.attrInt("block_size", 0) > 0)
    return ctx.error("DequantizeLinear of a computed tensor in blocks is "
                     "not supported");
  FailureOr<Value> centred = binary<dfg::SubOp>(
      ctx, castTo(ctx, ctx.input(0), element), ctx.scalar(*zero, element),
      element);
  FailureOr<Value> y =
      failed(centred) ? centred
                      : binary<dfg::MulOp>(ctx, *centred,
                                           ctx.scalar(*scale, element),
                                           element);
  return failed(y) ? failure() : ctx.setResults(*y);
}

/// The integers an ONNX quantized type holds: [least, most].
std::optional<std::pair<double, double>> quantizedRange(int onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::UINT8:
    return std::pair(0.0, 255.0);
  case onnx::TensorProto::INT8:
    return std::pair(-128.0, 127.0);
  case onnx::TensorProto::UINT16:
    return std::pair(0.0, 65535.0);
  case onnx::TensorProto::INT16:
    return std::pair(-32768.0, 32767.0);
  case kOnnxUint4:
    return std::pair(0.0, 15.0);
  case kOnnxInt4:
    return std::pair(-8.0, 7.0);
  default:
    return std::nullopt;
  }
}

/// QuantizeLinear (ONNX) of a computed float tensor by one scale and zero
/// point (per tensor, as onnxruntime's quantize_static writes them around
/// each quantized op of its QDQ form):
///   y = clip(round(x / scale) + zero point, least, most)
/// rounding half to even, [least, most] the range of the zero point's type
/// (uint8 without one, or opset 21's output_dtype). y is held as i32 (meshc
/// holds no 8-bit tensors); the DequantizeLinear that reads it gives back
/// (y - zero point) * scale.
LogicalResult legalizeQuantizeLinear(NodeContext &ctx) {
  if (failed(ctx.requireInputs(2)))
    return failure();
  RankedTensorType in = ctx.inputType(0);
  Type element = in.getElementType();
  if (!isa<FloatType>(element))
    return ctx.error("QuantizeLinear of " + dfg::formatShape(in.getShape()) +
                     " integers: ONNX quantizes floats");
  std::optional<double> scale = literalScalar(ctx.input(1));
  if (!scale)
    return ctx.error("QuantizeLinear is supported by one scale held as a "
                     "literal (per tensor), not per axis or in blocks");
  if (!(*scale > 0) || std::isinf(*scale))
    return ctx.error("the scale must be positive and finite");
  if (ctx.attrInt("block_size", 0) > 0)
    return ctx.error("QuantizeLinear in blocks is not supported");
  int onnxType = static_cast<int>(
      ctx.attrInt("output_dtype", onnx::TensorProto::UINT8));
  FailureOr<double> zero = tensorZeroPoint(ctx, "QuantizeLinear");
  if (failed(zero))
    return failure();
  if (ctx.numInputs() > 2 && !ctx.node().input(2).empty()) {
    // The zero point's type is the result's.
    const RawInitializer *zp = ctx.rawInput(2);
    if (!zp)
      return ctx.error("QuantizeLinear's zero point must be an 8-bit "
                       "initializer");
    onnxType = zp->onnxType;
  }
  std::optional<std::pair<double, double>> range = quantizedRange(onnxType);
  if (!range)
    return ctx.error("QuantizeLinear to " +
                     onnx::TensorProto::DataType_Name(
                         static_cast<onnx::TensorProto::DataType>(onnxType)) +
                     " is not supported (8-, 16- and 4-bit integers)");
  FailureOr<Value> ratio = binary<dfg::DivOp>(
      ctx, ctx.input(0), ctx.scalar(*scale, element), element);
  if (failed(ratio))
    return failure();
  Value rounded = dfg::RoundOp::create(ctx.builder(), ctx.loc(),
                                       ratio->getType(), *ratio);
  FailureOr<Value> shifted =
      binary<dfg::AddOp>(ctx, rounded, ctx.scalar(*zero, element), element);
  FailureOr<Value> low =
      failed(shifted) ? shifted
                      : binary<dfg::MaxOp>(ctx, *shifted,
                                           ctx.scalar(range->first, element),
                                           element);
  FailureOr<Value> y =
      failed(low) ? low
                  : binary<dfg::MinOp>(ctx, *low,
                                       ctx.scalar(range->second, element),
                                       element);
  if (failed(y))
    return failure();
  return ctx.setResults(castTo(ctx, *y, ctx.builder().getI32Type()));
}

/// DequantizeLinear (ONNX) of a few 8-bit values the model holds (a static
/// quantization's scalars: the attention's scale, a norm's epsilon) by one
/// scale held as a literal: the literal (x - zero point) * scale, of the
/// scale's type.
LogicalResult dequantizeHeld(NodeContext &ctx, const RawInitializer &x,
                             double scale) {
  FailureOr<double> zero =
      tensorZeroPoint(ctx, "the dequantization of '" + x.name + "'");
  if (failed(zero))
    return failure();
  auto floatType = dyn_cast<FloatType>(ctx.inputType(1).getElementType());
  if (!floatType)
    return ctx.error("the scale must be floating-point");
  SmallVector<APFloat> values;
  for (int64_t v : x.values) {
    // As onnxruntime computes it: the difference in f32, times the scale.
    APFloat f(static_cast<float>(static_cast<float>(v - *zero) *
                                 static_cast<float>(scale)));
    bool lost = false;
    f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &lost);
    values.push_back(f);
  }
  auto type = RankedTensorType::get(x.dims, floatType);
  return ctx.setResults(Value(dfg::ConstantOp::create(
      ctx.builder(), ctx.loc(), DenseElementsAttr::get(type, values))));
}

/// DequantizeLinear (ONNX) of a 2-D initializer of 8- or 4-bit integers:
/// per tensor (one scale), per axis (a scale per row or per column) or in
/// blocks along an axis (block_size, opset 21): (x - zero point) * scale,
/// the zero point 0 without zero points.
LogicalResult legalizeDequantizeLinear(NodeContext &ctx) {
  if (ctx.input(0))
    return dequantizeComputed(ctx);
  const RawInitializer *x = ctx.rawInput(0);
  int onnxType = x ? x->onnxType : 0;
  bool isSigned = onnxType == onnx::TensorProto::INT8 || onnxType == kOnnxInt4;
  int64_t bits = onnxType == onnx::TensorProto::INT8 ||
                         onnxType == onnx::TensorProto::UINT8
                     ? 8
                 : onnxType == kOnnxInt4 || onnxType == kOnnxUint4 ? 4
                                                          : 0;
  std::optional<double> heldScale = literalScalar(ctx.input(1));
  bool heldZero = ctx.numInputs() <= 2 || ctx.node().input(2).empty() ||
                  heldZeroPoint(ctx, 2).has_value();
  if (x && bits == 8 && !x->values.empty() &&
      static_cast<int64_t>(x->values.size()) == product(x->dims) &&
      heldScale && heldZero)
    return dequantizeHeld(ctx, *x, *heldScale);
  if (!x || !x->inFile() || !bits || ctx.input(0))
    return ctx.error("only the dequantization of an initializer of 8- or "
                     "4-bit integers (a quantized weight) is supported, not "
                     "of a computed tensor (quantized activations) or of "
                     "other types");
  if (x->dims.size() != 2 && x->dims.size() != 1)
    return ctx.error("only a 1-D or 2-D quantized weight is supported, not " +
                     dimsText(x->dims));
  // A 1-D weight (a static quantization's norm weights) as one row.
  bool vector = x->dims.size() == 1;
  int64_t rows = vector ? 1 : x->dims[0], columns = x->dims.back();
  if ((columns * bits) % 8 != 0)
    return ctx.error("rows of " + std::to_string(columns) + " " +
                     std::to_string(bits) +
                     "-bit elements do not fill whole bytes");
  if (!ctx.input(1))
    return ctx.error("the scale (input 1) is missing");
  Type element = ctx.inputType(1).getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return ctx.error("the scale must be f32, f16 or bf16");
  if (int64_t to = ctx.attrInt("output_dtype", 0);
      to != 0 && to != (element.isF32()   ? onnx::TensorProto::FLOAT
                        : element.isF16() ? onnx::TensorProto::FLOAT16
                                          : onnx::TensorProto::BFLOAT16))
    return ctx.error("an output_dtype other than the scale's is not "
                     "supported");
  const RawInitializer *scaleRaw = ctx.rawInput(1);
  // One scale held as a literal (onnx.helper's float_data, as
  // quantize_dynamic writes a per-tensor scale).
  std::optional<double> scaleValue = literalScalar(ctx.input(1));
  if (!scaleRaw && !scaleValue)
    return ctx.error("the scale must be an initializer in raw data, or one "
                     "value");
  int64_t axis = ctx.attrInt("axis", 1), blockSize = ctx.attrInt("block_size", 0);
  if (axis < 0)
    axis += static_cast<int64_t>(x->dims.size());
  if (vector) {
    // Per tensor (the axis then unused), or along the one row.
    bool perTensor = blockSize == 0 && (!scaleRaw || product(scaleRaw->dims) == 1);
    if (!perTensor && axis != 0)
      return ctx.error("axis " + std::to_string(ctx.attrInt("axis", 1)) +
                       " is outside the 1-D weight");
    axis = 1;
  }
  if (axis != 0 && axis != 1)
    return ctx.error("axis " + std::to_string(ctx.attrInt("axis", 1)) +
                     " is outside the 2-D weight");
  dfg::QuantizedLayout layout;
  layout.bits = bits;
  layout.isSigned = isSigned;
  layout.zeroPoint = 0;
  layout.columns = columns;
  layout.rowBytes = columns * bits / 8;
  int64_t scaleCount = scaleRaw ? product(scaleRaw->dims) : 1;
  SmallVector<int64_t> scaleDims =
      scaleRaw ? scaleRaw->dims : SmallVector<int64_t>{};
  if (blockSize > 0) {
    // Blocks along `axis`.
    layout.blockSize = axis == 1 ? blockSize : 1;
    layout.blockRows = axis == 0 ? blockSize : 1;
  } else if (scaleCount == 1 && scaleDims.size() <= 1) {
    layout.blockSize = columns; // per tensor
    layout.blockRows = rows;
  } else if (scaleDims.size() == 1) {
    layout.blockSize = axis == 0 ? columns : 1; // per axis
    layout.blockRows = axis == 0 ? 1 : rows;
  } else {
    return ctx.error("the scale " + dimsText(scaleDims) +
                     " is neither one value, one per index of axis " +
                     std::to_string(axis) + ", nor blocks (block_size)");
  }
  if (layout.blockSize < 1 || layout.blockRows < 1)
    return ctx.error("the weight " + dimsText(x->dims) + " is empty");
  int64_t gridRows = layout.blockRowsOf(rows), blocks = layout.blocksPerRow();
  if (scaleCount != gridRows * blocks)
    return ctx.error("the scale " + dimsText(scaleDims) + " is not [" +
                     std::to_string(gridRows) + ", " + std::to_string(blocks) +
                     "] values for the weight " + dimsText(x->dims));
  if (scaleRaw)
    layout.scales = dfg::QuantizedPart{scaleRaw->file, scaleRaw->offset,
                                       scaleRaw->length, element};
  else
    layout.scale = *scaleValue;
  if (ctx.numInputs() > 2 && !ctx.node().input(2).empty()) {
    const RawInitializer *zp = ctx.rawInput(2);
    if (!zp || zp->onnxType != onnxType)
      return ctx.error("the zero point must be an initializer of the "
                       "weight's type");
    if (product(zp->dims) != gridRows * blocks)
      return ctx.error("the zero point " + dimsText(zp->dims) +
                       " is not shaped as the scale");
    if (!zp->inFile()) {
      setHeldZeroPoints(layout, *zp);
    } else {
      // ONNX packs 4-bit tensors on across rows.
      layout.zeroPointRowBits = blocks * bits;
      layout.zeroPoints = dfg::QuantizedPart{
          zp->file, zp->offset, zp->length,
          IntegerType::get(ctx.builder().getContext(), 8,
                           IntegerType::Unsigned)};
    }
  }
  FailureOr<Value> w =
      quantizedWeight(ctx, *x, layout, rows, element,
                      vector ? ArrayRef<int64_t>(x->dims) : ArrayRef<int64_t>());
  if (failed(w))
    return failure();
  return ctx.setResults(*w);
}

/// DynamicQuantizeLinear (ONNX, opset 11): x to uint8 by a scale and zero
/// point of the whole tensor, computed from its range (widened to hold 0):
///   scale = (max(0, max x) - min(0, min x)) / 255
///   zero point = clip(round(-min(0, min x) / scale), 0, 255)
///   y = clip(round(x / scale) + zero point, 0, 255)
/// rounding half to even, as onnxruntime does. y and the zero point are
/// held as i32 (meshc holds no 8-bit tensors). The range is a reduction
/// over every element, the batch too, so that a data-parallel or
/// tensor-parallel split of x reduces it across the ranks. (Where x is all
/// zeros, ONNX's scale is 1 / 255 and meshc's the least normal float: y is
/// the zero point either way, so the products that read it are 0.)
/// quantizeDynamically computes it (the quantized values and the zero point
/// as f32, integers in [0, 255], and the scale), for DynamicQuantizeLinear
/// and DynamicQuantizeMatMul.
struct Quantized {
  Value values, scale, zeroPoint;
};
FailureOr<Quantized> quantizeDynamically(NodeContext &ctx, Value x) {
  auto in = cast<RankedTensorType>(x.getType());
  Type element = in.getElementType();
  if (!element.isF32())
    return ctx.error("dynamic quantization of " +
                     dfg::formatShape(in.getShape()) +
                     " elements of a type other than f32 (ONNX defines it "
                     "for float only)");
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  auto scalarType = RankedTensorType::get({}, element);
  SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, in.getRank()));
  auto reduceMax = [&](Value v) -> Value {
    if (all.empty())
      return v;
    return dfg::ReduceMaxOp::create(b, loc, scalarType, v,
                                    b.getDenseI64ArrayAttr(all), false);
  };
  auto neg = [&](Value v) -> Value {
    return dfg::NegOp::create(b, loc, v.getType(), v);
  };
  auto on = [&](auto tag, Value l, Value r) -> Value {
    using OpTy = decltype(tag);
    return OpTy::create(b, loc, scalarType, l, r);
  };
  Value zero = ctx.scalar(0.0, element);
  Value most = on(dfg::MaxOp(), reduceMax(x), zero);
  Value least = on(dfg::MinOp(), neg(reduceMax(neg(x))), zero);
  Value scale = on(dfg::MaxOp(),
                   on(dfg::DivOp(), on(dfg::SubOp(), most, least),
                      ctx.scalar(255.0, element)),
                   ctx.scalar(std::numeric_limits<float>::min(), element));
  auto clip = [&](Value v) -> FailureOr<Value> {
    FailureOr<Value> low = binary<dfg::MaxOp>(ctx, v, zero, element);
    return failed(low) ? low
                       : binary<dfg::MinOp>(ctx, *low,
                                            ctx.scalar(255.0, element),
                                            element);
  };
  Value rounded = dfg::RoundOp::create(
      b, loc, scalarType, on(dfg::DivOp(), neg(least), scale));
  FailureOr<Value> zeroPoint = clip(rounded);
  FailureOr<Value> ratio = binary<dfg::DivOp>(ctx, x, scale, element);
  if (failed(zeroPoint) || failed(ratio))
    return failure();
  Value q = dfg::RoundOp::create(b, loc, in, *ratio);
  FailureOr<Value> shifted = binary<dfg::AddOp>(ctx, q, *zeroPoint, element);
  FailureOr<Value> y = failed(shifted) ? shifted : clip(*shifted);
  if (failed(y))
    return failure();
  return Quantized{*y, scale, *zeroPoint};
}

LogicalResult legalizeDynamicQuantizeLinear(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  FailureOr<Quantized> q = quantizeDynamically(ctx, ctx.input(0));
  if (failed(q))
    return failure();
  Type i32 = ctx.builder().getI32Type();
  return ctx.setResults({castTo(ctx, q->values, i32), q->scale,
                         castTo(ctx, q->zeroPoint, i32)});
}

/// A zero point (input `i`) of MatMulInteger's activations as f32: a
/// computed scalar (DynamicQuantizeLinear's), or 0 without one.
FailureOr<Value> activationZeroPoint(NodeContext &ctx, unsigned i,
                                     Type element) {
  if (ctx.numInputs() <= i || ctx.node().input(i).empty())
    return ctx.scalar(0.0, element);
  if (!ctx.input(i))
    return ctx.error("the activations' zero point (input " +
                     std::to_string(i) + ") must be a scalar");
  RankedTensorType type = ctx.inputType(i);
  if (type.getNumElements() != 1 || type.getRank() > 1)
    return ctx.error("the activations' zero point (input " +
                     std::to_string(i) + ") must be one value (per tensor), "
                     "not " +
                     dimsText(type.getShape()));
  return castTo(ctx, ctx.input(i), element);
}

/// (x - zeroPoint) x weight in f32, x an integer (held as i32) or f32 tensor
/// of integers.
FailureOr<Value> centredProduct(NodeContext &ctx, Value x, Value zeroPoint,
                                Value weight) {
  Type f32 = ctx.builder().getF32Type();
  FailureOr<Value> lhs =
      binary<dfg::SubOp>(ctx, castTo(ctx, x, f32), zeroPoint, f32);
  if (failed(lhs))
    return failure();
  FailureOr<Value> product = ctx.create<dfg::MatMulOp>(
      dfg::matmulShape(shapeOf(*lhs), shapeOf(weight)), f32, *lhs, weight);
  return failed(product) ? product
                         : FailureOr<Value>(ctx.refineType(*product));
}

/// y * scale (+ bias, input `biasIndex` where given), in f32.
FailureOr<Value> scaledOutput(NodeContext &ctx, Value y, Value scale,
                              unsigned biasIndex) {
  Type f32 = ctx.builder().getF32Type();
  FailureOr<Value> scaled = binary<dfg::MulOp>(ctx, y, scale, f32);
  if (failed(scaled) || ctx.numInputs() <= biasIndex ||
      ctx.node().input(biasIndex).empty())
    return scaled;
  if (!ctx.input(biasIndex))
    return ctx.error("the bias (input " + std::to_string(biasIndex) +
                     ") must be a float tensor");
  return binary<dfg::AddOp>(ctx, *scaled, ctx.input(biasIndex), f32);
}

/// B (input `bIndex`), a 2-D initializer of 8-bit integers [K, N], less its
/// zero points (input `zpIndex`: one, or one per column; in raw data or
/// held as values) times its scales (input `scaleIndex`, or 1 for -1: one,
/// or one per column; in raw data or a literal), as a dfg.weight with
/// `quantization`.
FailureOr<Value> eightBitWeight(NodeContext &ctx, StringRef op,
                                unsigned bIndex, int scaleIndex,
                                unsigned zpIndex) {
  const RawInitializer *w = ctx.rawInput(bIndex);
  bool isSigned = w && w->onnxType == onnx::TensorProto::INT8;
  if (!w || !w->inFile() ||
      (!isSigned && w->onnxType != onnx::TensorProto::UINT8) ||
      ctx.input(bIndex))
    return ctx.error(op + " is supported where B (input " +
                     std::to_string(bIndex) +
                     ") is an initializer of 8-bit integers (a quantized "
                     "weight)" +
                     (op == "MatMulInteger"
                          ? " or a computed tensor, not an initializer of "
                            "another type"
                          : ""));
  if (w->dims.size() != 2)
    return ctx.error(op + "'s B must be a 2-D weight, not " +
                     dimsText(w->dims));
  int64_t k = w->dims[0], n = w->dims[1];
  RankedTensorType a = ctx.inputType(0);
  if (a.getRank() < 1 || a.getShape().back() != k)
    return ctx.error(op + " of " + dimsText(a.getShape()) + " by " +
                     dimsText(w->dims) + ": the contracted sizes differ");
  // One scale and zero point for the weight, or one per column.
  dfg::QuantizedLayout layout = eightBitMatrix(k, n, isSigned);
  auto perColumn = [&](int64_t count, StringRef what,
                       ArrayRef<int64_t> dims) -> LogicalResult {
    if (count == n && n != 1)
      layout.blockSize = 1;
    else if (count != 1)
      return ctx.error(op + "'s " + what + " " + dimsText(dims) +
                       " is neither one value nor one per column of " +
                       dimsText(w->dims));
    return success();
  };
  if (scaleIndex >= 0) {
    const RawInitializer *scaleRaw = ctx.rawInput(scaleIndex);
    std::optional<double> value = literalScalar(ctx.input(scaleIndex));
    if (scaleRaw && scaleRaw->inFile()) {
      Type element = ctx.inputType(scaleIndex).getElementType();
      if (!element.isF32())
        return ctx.error(op + "'s B scale must be f32");
      if (failed(perColumn(product(scaleRaw->dims), "scale", scaleRaw->dims)))
        return failure();
      layout.scales = dfg::QuantizedPart{scaleRaw->file, scaleRaw->offset,
                                         scaleRaw->length, element};
    } else if (value) {
      layout.scale = *value;
    } else {
      return ctx.error(op + "'s B scale (input " +
                       std::to_string(scaleIndex) +
                       ") must be an initializer in raw data, or one value");
    }
  }
  if (ctx.numInputs() > zpIndex && !ctx.node().input(zpIndex).empty()) {
    const RawInitializer *zp = ctx.rawInput(zpIndex);
    if (!zp || zp->onnxType != w->onnxType)
      return ctx.error(op + "'s B zero point (input " +
                       std::to_string(zpIndex) +
                       ") must be an initializer of B's type");
    int64_t count = product(zp->dims);
    if (scaleIndex < 0) {
      // No scales: the zero points decide.
      if (failed(perColumn(count, "zero point", zp->dims)))
        return failure();
    } else if (count != (layout.blockSize == 1 ? n : 1)) {
      return ctx.error(op + "'s B zero point " + dimsText(zp->dims) +
                       " is not shaped as its scale");
    }
    if (!zp->inFile()) {
      setHeldZeroPoints(layout, *zp);
    } else {
      layout.zeroPoints = dfg::QuantizedPart{
          zp->file, zp->offset, zp->length,
          IntegerType::get(ctx.builder().getContext(), 8,
                           IntegerType::Unsigned)};
    }
  }
  return quantizedWeight(ctx, *w, layout, k, ctx.builder().getF32Type());
}

/// MatMulInteger (ONNX, opset 10): (A - a_zero_point) x (B - b_zero_point)
/// in int32, where B is an initializer of 8-bit integers [K, N] (a weight,
/// as onnxruntime's quantize_dynamic writes it) and its zero point one value
/// or one per column, or B is computed too (a DynamicQuantizeLinear's). B
/// less its zero points becomes a `dfg.weight` with `quantization` (scales
/// 1), read by a dfg.matmul in f32, so that raising
/// makes it a linear and tensor parallelism splits it as any other weight;
/// the products and sums of integers are exact in f32 up to 2^24, and
/// rounded beyond (relative 6e-8, where onnxruntime's int32 is exact). The
/// result is cast to i32, as ONNX types it.
LogicalResult legalizeMatMulInteger(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Type f32 = ctx.builder().getF32Type();
  if (ctx.input(1)) {
    // Two computed tensors (Optimum's quantizer quantizes the rotary's
    // product of positions by frequencies so): each less its zero point,
    // multiplied in f32.
    if (!isa<IntegerType>(ctx.inputType(0).getElementType()) ||
        !isa<IntegerType>(ctx.inputType(1).getElementType()))
      return ctx.error("MatMulInteger's A and B must be integers");
    FailureOr<Value> za = activationZeroPoint(ctx, 2, f32);
    FailureOr<Value> zb = activationZeroPoint(ctx, 3, f32);
    FailureOr<Value> rhs =
        failed(zb) ? zb
                   : binary<dfg::SubOp>(ctx, castTo(ctx, ctx.input(1), f32),
                                        *zb, f32);
    FailureOr<Value> product =
        failed(za) || failed(rhs)
            ? FailureOr<Value>(failure())
            : centredProduct(ctx, ctx.input(0), *za, ctx.refineType(*rhs));
    if (failed(product))
      return failure();
    return ctx.setResults(castTo(ctx, *product, ctx.builder().getI32Type()));
  }
  FailureOr<Value> weight = eightBitWeight(ctx, "MatMulInteger", 1, -1, 3);
  FailureOr<Value> zeroPoint = activationZeroPoint(ctx, 2, f32);
  if (failed(weight) || failed(zeroPoint))
    return failure();
  FailureOr<Value> product =
      centredProduct(ctx, ctx.input(0), *zeroPoint, *weight);
  if (failed(product))
    return failure();
  return ctx.setResults(castTo(ctx, *product, ctx.builder().getI32Type()));
}

/// DynamicQuantizeMatMul (com.microsoft, onnxruntime's fusion of
/// DynamicQuantizeLinear and MatMulInteger, as its optimizer saves a
/// quantize_dynamic model): A quantized as DynamicQuantizeLinear does, its
/// product by B less its zero points times B's scales (a dfg.weight with
/// `quantization`), times A's scale, plus the bias.
LogicalResult legalizeDynamicQuantizeMatMul(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  FailureOr<Quantized> a = quantizeDynamically(ctx, ctx.input(0));
  FailureOr<Value> weight =
      eightBitWeight(ctx, "DynamicQuantizeMatMul", 1, 2, 3);
  if (failed(a) || failed(weight))
    return failure();
  FailureOr<Value> product =
      centredProduct(ctx, a->values, a->zeroPoint, *weight);
  FailureOr<Value> y =
      failed(product) ? product : scaledOutput(ctx, *product, a->scale, 4);
  return failed(y) ? failure() : ctx.setResults(*y);
}

/// MatMulIntegerToFloat (com.microsoft, the same fusion where the quantized
/// A has several readers): (A - a_zero_point) x (B - b_zero_point) * b_scale,
/// times a_scale, plus the bias.
LogicalResult legalizeMatMulIntegerToFloat(NodeContext &ctx) {
  if (failed(ctx.requireInputs(1)))
    return failure();
  Type f32 = ctx.builder().getF32Type();
  if (!ctx.input(2))
    return ctx.error("MatMulIntegerToFloat needs A's scale (input 2)");
  if (!isa<IntegerType>(ctx.inputType(0).getElementType()) ||
      ctx.inputType(2).getNumElements() != 1)
    return ctx.error("MatMulIntegerToFloat is supported for integer "
                     "activations A with one scale (input 2)");
  FailureOr<Value> weight =
      eightBitWeight(ctx, "MatMulIntegerToFloat", 1, 3, 5);
  FailureOr<Value> zeroPoint = activationZeroPoint(ctx, 4, f32);
  if (failed(weight) || failed(zeroPoint))
    return failure();
  FailureOr<Value> product =
      centredProduct(ctx, ctx.input(0), *zeroPoint, *weight);
  Value scale = castTo(ctx, ctx.input(2), f32);
  FailureOr<Value> y =
      failed(product) ? product : scaledOutput(ctx, *product, scale, 6);
  return failed(y) ? failure() : ctx.setResults(*y);
}

} // namespace

LogicalResult legalizePackedGather(NodeContext &ctx) {
  const RawInitializer *data = ctx.rawInput(0);
  bool isSigned = data->onnxType == onnx::TensorProto::INT8;
  if (!data->inFile() ||
      (!isSigned && data->onnxType != onnx::TensorProto::UINT8) ||
      data->dims.size() != 2 || ctx.attrInt("axis", 0) != 0 || !ctx.input(1))
    return ctx.error("a Gather of packed integers is supported as rows "
                     "(axis 0) of a 2-D initializer of 8-bit integers, by "
                     "computed indices");
  int64_t rows = data->dims[0], columns = data->dims[1];
  dfg::QuantizedLayout layout = eightBitMatrix(rows, columns, isSigned);
  Type f32 = ctx.builder().getF32Type();
  FailureOr<Value> table = quantizedWeight(ctx, *data, layout, rows, f32);
  if (failed(table))
    return failure();
  FailureOr<Value> picked = ctx.create<dfg::GatherOp>(
      dfg::gatherShape({rows, columns}, ctx.inputType(1).getShape(), 0), f32,
      *table, ctx.input(1), 0);
  if (failed(picked))
    return failure();
  return ctx.setResults(
      castTo(ctx, ctx.refineType(*picked), ctx.builder().getI32Type()));
}

void populateQuantizedLegalizations(LegalizationTable &table) {
  table.add("", "DynamicQuantizeLinear", 11, legalizeDynamicQuantizeLinear);
  table.add("", "MatMulInteger", 10, legalizeMatMulInteger);
  table.add("com.microsoft", "DynamicQuantizeMatMul", 1,
            legalizeDynamicQuantizeMatMul);
  table.add("com.microsoft", "MatMulIntegerToFloat", 1,
            legalizeMatMulIntegerToFloat);
  table.add("", "QuantizeLinear", 13, legalizeQuantizeLinear);
  table.add("", "QuantizeLinear", 21, legalizeQuantizeLinear); // output_dtype
  table.add("", "DequantizeLinear", 13, legalizeDequantizeLinear);
  table.add("", "DequantizeLinear", 21, legalizeDequantizeLinear); // blocks
  table.add("com.microsoft", "MatMulNBits", 1, legalizeMatMulNBits);
  table.add("com.microsoft", "MatMulBnb4", 1, legalizeMatMulBnb4);
  table.add("com.microsoft", "GatherBlockQuantized", 1,
            legalizeGatherBlockQuantized);
}

} // namespace meshc::onnximport
