//===- Evaluator.cpp - Reference evaluator for dfg ------------------------===//
//
// Part of meshc.
//
// Each op is evaluated from the concrete shapes of its operands with the same
// shape rules (DfgShapes.h) the verifiers use, so a function runs on any
// input sizes its types allow. Values are doubles; after every op they are
// rounded to the op's element type (f32, f16, bf16 through APFloat; integers
// truncated toward zero as ONNX does), so the evaluator follows the precision
// of the program it runs rather than computing in exact arithmetic.
//
// This file holds the shared helpers, the dispatch (Evaluator::evalOp) and
// the evaluator's own ops; the op families are evaluated in EvalLayout.cpp,
// EvalReductions.cpp and EvalTransformer.cpp (see EvaluatorImpl.h).
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/Evaluator.h"
#include "dialects/dfg/Eval/EvaluatorImpl.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
#include "dialects/dfg/IR/QuantizedWeights.h"
#include "dialects/dfg/IR/SymbolicDims.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

using namespace mlir;
using llvm::APFloat;

namespace meshc::dfg {

int64_t EvalTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool EvalTensor::isExact() const {
  constexpr double kLimit = 9007199254740992.0; // 2^53
  return !isa<IntegerType>(elementType) ||
         llvm::all_of(values, [](double v) { return std::abs(v) < kLimit; });
}

namespace {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

const llvm::fltSemantics *semanticsOf(Type t) {
  if (t.isF16())
    return &APFloat::IEEEhalf();
  if (t.isBF16())
    return &APFloat::BFloat();
  return nullptr;
}

/// `x` as the nearest value of element type `t`.
double roundTo(Type t, double x) {
  if (t.isF32())
    return static_cast<double>(static_cast<float>(x));
  if (const llvm::fltSemantics *sem = semanticsOf(t)) {
    APFloat f(x);
    bool losesInfo;
    f.convert(*sem, APFloat::rmNearestTiesToEven, &losesInfo);
    return f.convertToDouble();
  }
  if (t.isInteger(1))
    return x != 0 ? 1 : 0;
  if (std::isnan(x))
    return 0;
  // ONNX leaves a float beyond the integer's range undefined; converting
  // it in C++ is undefined behaviour. It saturates here.
  double truncated = std::trunc(x);
  if (t.isInteger(32))
    return std::clamp(truncated, double(INT32_MIN), double(INT32_MAX));
  // The largest double below 2^63 (INT64_MAX itself rounds up to 2^63,
  // which would not convert back).
  constexpr double kTwo63 = 9223372036854775808.0;
  if (truncated >= kTwo63)
    return 9223372036854774784.0;
  if (truncated < -kTwo63)
    return -kTwo63;
  return static_cast<double>(static_cast<int64_t>(truncated));
}

/// `x` as element type `t` the way `--dtype` converts weights and literals:
/// finite values beyond the type's range saturate to its largest finite
/// value (rt::convertFloatsSaturating), then round to nearest even.
double saturateTo(Type t, double x) {
  if (const llvm::fltSemantics *sem = semanticsOf(t)) {
    double largest = APFloat::getLargest(*sem).convertToDouble();
    if (std::isfinite(x))
      x = std::clamp(x, -largest, largest);
  }
  return roundTo(t, x);
}

/// Reads `n` little-endian elements of type `t` (as dfg stores them in weight
/// files and .npy files; bool one byte each) into doubles.
std::vector<double> decodeElements(Type t, const uint8_t *data, int64_t n) {
  namespace endian = llvm::support::endian;
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) {
    double &v = values[i];
    if (t.isF32()) {
      uint32_t bits = endian::read32le(data + 4 * i);
      float f;
      std::memcpy(&f, &bits, 4);
      v = f;
    } else if (const llvm::fltSemantics *sem = semanticsOf(t)) {
      v = APFloat(*sem, llvm::APInt(16, endian::read16le(data + 2 * i)))
              .convertToDouble();
    } else if (t.isInteger(64)) {
      v = static_cast<double>(
          static_cast<int64_t>(endian::read64le(data + 8 * i)));
    } else if (t.isInteger(32)) {
      v = static_cast<int32_t>(endian::read32le(data + 4 * i));
    } else {
      v = data[i] != 0;
    }
  }
  return values;
}

} // namespace

namespace detail {

void roundAll(EvalTensor &t) {
  for (double &v : t.values)
    v = roundTo(t.elementType, v);
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Strides that read `in` broadcast to `out` (0 on broadcast dimensions;
/// shapes aligned at the last dimension).
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> out) {
  SmallVector<int64_t> inStrides = stridesOf(in);
  SmallVector<int64_t> result(out.size(), 0);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    result[offset + i] = in[i] == 1 ? 0 : inStrides[i];
  return result;
}

/// Calls fn(linear index, multi-index) for every element of `shape`.
void forEachIndex(ArrayRef<int64_t> shape,
                  llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> fn) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    fn(linear, index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

int64_t dot(ArrayRef<int64_t> index, ArrayRef<int64_t> strides) {
  int64_t offset = 0;
  for (size_t i = 0; i < index.size(); ++i)
    offset += index[i] * strides[i];
  return offset;
}

EvalTensor like(Type element, ArrayRef<int64_t> shape) {
  EvalTensor t;
  t.elementType = element;
  t.shape.assign(shape.begin(), shape.end());
  t.values.assign(t.numElements(), 0.0);
  return t;
}

LogicalResult checkResultSize(Operation *op, ArrayRef<int64_t> shape) {
  int64_t count = 1;
  bool tooLarge = false;
  for (int64_t d : shape) {
    if (d < 0)
      return op->emitOpError("would make a tensor of shape ")
             << formatShape(shape) << " (a negative dimension)";
    tooLarge = tooLarge || __builtin_mul_overflow(count, d, &count) ||
               count > Evaluator::kMaxElements;
  }
  if (tooLarge && count != 0)
    return op->emitOpError("would make a tensor of shape ")
           << formatShape(shape)
           << ", too large for the reference evaluator (at most "
           << Evaluator::kMaxElements << " elements)";
  return success();
}

/// Applies fn elementwise over operands broadcast to a common shape.
FailureOr<EvalTensor>
broadcastMap(Operation *op, ArrayRef<const EvalTensor *> operands,
             Type resultElement,
             llvm::function_ref<double(ArrayRef<double>)> fn) {
  Shape shape(operands.front()->shape);
  for (const EvalTensor *t : operands.drop_front()) {
    auto joined = broadcastShapes(shape, t->shape);
    if (!joined)
      return op->emitOpError(llvm::toString(joined.takeError()));
    shape = *joined;
  }
  if (failed(checkResultSize(op, shape)))
    return failure();
  EvalTensor result = like(resultElement, shape);
  SmallVector<SmallVector<int64_t>> strides;
  for (const EvalTensor *t : operands)
    strides.push_back(broadcastStrides(t->shape, shape));
  SmallVector<double> args(operands.size());
  forEachIndex(shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    for (size_t i = 0; i < operands.size(); ++i)
      args[i] = operands[i]->values[dot(index, strides[i])];
    result.values[linear] = fn(args);
  });
  roundAll(result);
  return result;
}

/// Moves the values of `in` into `shape` with `read(out multi-index)` giving
/// the input linear index.
FailureOr<EvalTensor>
gather(Operation *op, const EvalTensor &in, ArrayRef<int64_t> shape,
       llvm::function_ref<int64_t(ArrayRef<int64_t>)> read) {
  if (failed(checkResultSize(op, shape)))
    return failure();
  EvalTensor result = like(in.elementType, shape);
  const auto size = static_cast<int64_t>(in.values.size());
  bool outside = false;
  forEachIndex(shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    int64_t at = read(index);
    if (at < 0 || at >= size)
      outside = true;
    else
      result.values[linear] = in.values[at];
  });
  if (outside)
    return op->emitOpError("reads outside its input of shape ")
           << formatShape(in.shape) << " (an index or size is out of range)";
  return result;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<EvalTensor>> one(FailureOr<EvalTensor> t) {
  if (failed(t))
    return failure();
  SmallVector<EvalTensor> results;
  results.push_back(std::move(*t));
  return results;
}

Type resultElement(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
}

FailureOr<EvalTensor> Evaluator::readWeight(WeightOp op) {
  if (op.getQuantization()) {
    auto values = dequantizeWeight(op, weightsDir_);
    if (!values)
      return op.emitOpError(llvm::toString(values.takeError()));
    EvalTensor t = like(op.getType().getElementType(), op.getType().getShape());
    t.values.assign(values->begin(), values->end());
    for (double &v : t.values)
      v = saturateTo(t.elementType, v);
    return t;
  }
  llvm::SmallString<256> path(weightsDir_);
  llvm::sys::path::append(path, op.getFile());
  auto buffer = llvm::MemoryBuffer::getFileSlice(
      path, op.getLength(), op.getOffset(), /*IsVolatile=*/false);
  if (!buffer || (*buffer)->getBufferSize() != op.getLength())
    return op.emitOpError("cannot read weight '")
           << op.getName() << "' from '" << path << "'";
  EvalTensor t = like(op.getType().getElementType(), op.getType().getShape());
  t.values = decodeElements(
      op.getStoredElementType(),
      reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart()),
      t.numElements());
  if (op.getStored())
    for (double &v : t.values)
      v = saturateTo(t.elementType, v);
  return t;
}

FailureOr<EvalTensor> Evaluator::readConstant(ConstantOp op) {
  auto attr = cast<DenseElementsAttr>(op.getValue());
  EvalTensor t = like(op.getType().getElementType(), op.getType().getShape());
  int64_t i = 0;
  if (isa<FloatType>(t.elementType)) {
    for (const APFloat &f : attr.getValues<APFloat>())
      t.values[i++] = f.convertToDouble();
  } else if (t.elementType.isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      t.values[i++] = b;
  } else {
    for (const llvm::APInt &v : attr.getValues<llvm::APInt>())
      t.values[i++] = static_cast<double>(v.getSExtValue());
  }
  return t;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalOp(Operation *op) {
  if (auto e = dyn_cast<ElementwiseOpInterface>(op)) {
    SmallVector<const EvalTensor *> operands;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      operands.push_back(&operand(op, i));
    return one(
        broadcastMap(op, operands, resultElement(op),
                     [&](ArrayRef<double> v) { return e.evaluateElement(v); }));
  }

  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<EvalTensor>>>(op)
      .Case([&](WeightOp o) { return evalWeight(o); })
      .Case([&](WaitOp o) { return evalWait(o); })
      .Case([&](FusedElementwiseOp o) { return evalFusedElementwise(o); })
      .Case([&](ConstantOp o) { return evalConstant(o); })
      .Case([&](MatMulOp o) { return evalMatMul(o); })
      .Case([&](ReshapeOp o) { return evalReshape(o); })
      .Case([&](TransposeOp o) { return evalTranspose(o); })
      .Case([&](UnsqueezeOp o) { return evalUnsqueeze(o); })
      .Case([&](SqueezeOp o) { return evalSqueeze(o); })
      .Case([&](ConcatOp o) { return evalConcat(o); })
      .Case([&](GatherOp o) { return evalGather(o); })
      .Case([&](GatherNDOp o) { return evalGatherND(o); })
      .Case([&](SliceOp o) { return evalSlice(o); })
      .Case([&](SizesOp o) { return evalSizes(o); })
      .Case([&](SymbolicReshapeOp o) { return evalSymbolicReshape(o); })
      .Case([&](SymbolicExpandOp o) { return evalSymbolicExpand(o); })
      .Case([&](SymbolicSliceOp o) { return evalSymbolicSlice(o); })
      .Case([&](RangeOp o) { return evalRange(o); })
      .Case([&](SplitOp o) { return evalSplit(o); })
      .Case([&](ExpandOp o) { return evalExpand(o); })
      .Case([&](ReduceMeanOp o) { return evalReduceMean(o); })
      .Case([&](ReduceSumOp o) { return evalReduceSum(o); })
      .Case([&](ReduceMaxOp o) { return evalReduceMax(o); })
      .Case([&](SoftmaxOp o) { return evalSoftmax(o); })
      .Case([&](TriluOp o) { return evalTrilu(o); })
      .Case([&](CumSumOp o) { return evalCumSum(o); })
      .Case([&](TopKOp o) { return evalTopK(o); })
      .Case([&](ScatterNDOp o) { return evalScatterND(o); })
      .Case([&](AttentionOp o) { return evalAttention(o); })
      .Case([&](RotaryOp o) { return evalRotary(o); })
      .Case([&](LayerNormOp o) { return evalLayerNorm(o); })
      .Case([&](RmsNormOp o) { return evalRmsNorm(o); })
      .Case([&](EmbeddingOp o) { return evalEmbedding(o); })
      .Case([&](LinearOp o) { return evalLinear(o); })
      .Default([&](Operation *) -> FailureOr<SmallVector<EvalTensor>> {
        return op->emitOpError("is not supported by the reference evaluator");
      });
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalWeight(WeightOp op) {
  return one(readWeight(op));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalWait(WaitOp op) {
  return one(get(op.getInput()));
}

FailureOr<SmallVector<EvalTensor>>
Evaluator::evalFusedElementwise(FusedElementwiseOp op) {
  // The body's ops one after another, as they were before fusion.
  Block &body = op.getBody().front();
  for (auto [arg, input] : llvm::zip_equal(body.getArguments(), op.getInputs()))
    values_[arg] = get(input);
  for (Operation &inner : body.without_terminator()) {
    FailureOr<SmallVector<EvalTensor>> results = evalOp(&inner);
    if (failed(results))
      return failure();
    for (auto [value, tensor] : llvm::zip_equal(inner.getResults(), *results))
      values_[value] = std::move(tensor);
  }
  SmallVector<EvalTensor> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(get(v));
  return results;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalConstant(ConstantOp op) {
  return one(readConstant(op));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::run(func::FuncOp func,
                                                  ArrayRef<EvalTensor> inputs) {
  Block &body = func.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return func.emitError("expects ")
           << body.getNumArguments() << " inputs, got " << inputs.size();
  for (auto [arg, input] : llvm::zip_equal(body.getArguments(), inputs)) {
    auto type = cast<RankedTensorType>(arg.getType());
    if (input.elementType != type.getElementType() ||
        failed(verifyCompatibleShape(type.getShape(), input.shape)))
      return func.emitError("input #")
             << arg.getArgNumber() << " has shape " << formatShape(input.shape)
             << " of " << input.elementType << ", but the function takes "
             << type;
    values_[arg] = input;
  }
  FailureOr<DimBindings> dims = bindDims(func, inputs);
  if (failed(dims))
    return failure();
  dims_ = std::move(*dims);
  for (Operation &op : body.without_terminator()) {
    // The evaluator is for small tensors; refuse rather than exhaust memory.
    for (Type t : op.getResultTypes()) {
      auto type = cast<RankedTensorType>(t);
      if (type.hasStaticShape() && type.getNumElements() > kMaxElements)
        return op.emitOpError("result ")
               << type << " is too large for the reference evaluator (at "
               << "most " << kMaxElements << " elements)";
    }
    FailureOr<SmallVector<EvalTensor>> results = evalOp(&op);
    if (failed(results))
      return failure();
    for (auto [value, tensor] : llvm::zip_equal(op.getResults(), *results))
      values_[value] = std::move(tensor);
  }
  SmallVector<EvalTensor> outputs;
  for (Value v : body.getTerminator()->getOperands())
    outputs.push_back(get(v));
  return outputs;
}

} // namespace detail

FailureOr<SmallVector<EvalTensor>>
evaluate(func::FuncOp func, ArrayRef<EvalTensor> inputs, StringRef weightsDir) {
  return detail::Evaluator(weightsDir).run(func, inputs);
}

FailureOr<SmallVector<EvalTensor>> evaluateOp(Operation *op,
                                              ArrayRef<EvalTensor> operands,
                                              StringRef weightsDir,
                                              const DimBindings *dims) {
  return detail::Evaluator(weightsDir).runOp(op, operands, dims);
}

FailureOr<DimBindings> bindDims(func::FuncOp func,
                                ArrayRef<EvalTensor> inputs) {
  DimBindings dims;
  // Plain names take their sizes from the inputs; a derived name
  // (`past_sequence_length + sequence_length`) is then checked against its
  // expression.
  SmallVector<std::tuple<unsigned, unsigned, StringRef>> derived;
  for (auto [k, input] : llvm::enumerate(inputs)) {
    auto names = func.getArgAttrOfType<ArrayAttr>(k, "dfg.dim_names");
    if (!names)
      continue;
    for (auto [i, name] : llvm::enumerate(names.getValue())) {
      StringRef dim = cast<StringAttr>(name).getValue();
      if (dim.empty() || i >= input.shape.size())
        continue;
      if (isDerivedDimName(dim)) {
        derived.emplace_back(k, i, dim);
        continue;
      }
      auto [it, added] = dims.try_emplace(dim, input.shape[i]);
      if (!added && it->second != input.shape[i])
        return func.emitError("input #")
               << k << " has " << input.shape[i] << " along dimension " << i
               << " ('" << dim << "'), but an earlier input has " << it->second;
    }
  }
  DimTable table(func.getContext());
  for (auto [k, i, dim] : derived) {
    AffineExpr expr = table.parseName(dim);
    if (!expr)
      continue; // not affine: nothing derives from it
    llvm::Expected<int64_t> size = evaluateDim(expr, table, dims);
    if (!size)
      return func.emitError("input #")
             << k << " dimension " << i << " ('" << dim
             << "'): " << llvm::toString(size.takeError());
    if (*size != inputs[k].shape[i])
      return func.emitError("input #")
             << k << " has " << inputs[k].shape[i] << " along dimension " << i
             << " ('" << dim << "'), which the other inputs make " << *size;
  }
  return dims;
}

void roundToElementType(EvalTensor &tensor) { detail::roundAll(tensor); }

double roundToElementType(Type element, double x) {
  return roundTo(element, x);
}

DenseElementsAttr toDenseAttr(const EvalTensor &t) {
  auto type = RankedTensorType::get(t.shape, t.elementType);
  if (auto floatType = dyn_cast<FloatType>(t.elementType)) {
    SmallVector<APFloat> values;
    for (double v : t.values) {
      APFloat f(v);
      bool losesInfo;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = t.elementType.getIntOrFloatBitWidth();
  SmallVector<llvm::APInt> values;
  for (double v : t.values) {
    // Saturate: converting a double beyond int64's range is undefined.
    double clamped =
        std::clamp(v, -9223372036854775808.0, 9223372036854774784.0);
    values.emplace_back(width,
                        static_cast<uint64_t>(static_cast<int64_t>(clamped)),
                        /*isSigned=*/width > 1);
  }
  return DenseElementsAttr::get(type, values);
}

EvalTensor decodeTensor(Type elementType, ArrayRef<int64_t> shape,
                        const uint8_t *bytes) {
  EvalTensor t = detail::like(elementType, shape);
  t.values = decodeElements(elementType, bytes, t.numElements());
  return t;
}

std::vector<uint8_t> encodeTensor(const EvalTensor &t) {
  Type type = t.elementType;
  size_t width = std::max<size_t>(1, type.getIntOrFloatBitWidth() / 8);
  std::vector<uint8_t> bytes(t.values.size() * width);
  uint8_t *out = bytes.data();
  namespace endian = llvm::support::endian;
  for (size_t i = 0; i < t.values.size(); ++i) {
    double v = t.values[i];
    if (type.isF32()) {
      float f = static_cast<float>(v);
      std::memcpy(out + 4 * i, &f, 4);
    } else if (const llvm::fltSemantics *sem = semanticsOf(type)) {
      APFloat f(v);
      bool losesInfo;
      f.convert(*sem, APFloat::rmNearestTiesToEven, &losesInfo);
      endian::write16le(out + 2 * i, static_cast<uint16_t>(
                                         f.bitcastToAPInt().getZExtValue()));
    } else if (type.isInteger(64)) {
      endian::write64le(out + 8 * i,
                        static_cast<uint64_t>(static_cast<int64_t>(v)));
    } else if (type.isInteger(32)) {
      endian::write32le(out + 4 * i,
                        static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {
      out[i] = v != 0;
    }
  }
  return bytes;
}

} // namespace meshc::dfg
