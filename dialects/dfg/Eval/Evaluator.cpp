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
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/Evaluator.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"
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
  double truncated = std::trunc(x);
  if (t.isInteger(32))
    return static_cast<double>(static_cast<int32_t>(truncated));
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

void roundAll(EvalTensor &t) {
  for (double &v : t.values)
    v = roundTo(t.elementType, v);
}

bool isInteger(Type t) { return isa<IntegerType>(t); }

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
EvalTensor gather(const EvalTensor &in, ArrayRef<int64_t> shape,
                  llvm::function_ref<int64_t(ArrayRef<int64_t>)> read) {
  EvalTensor result = like(in.elementType, shape);
  forEachIndex(shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    result.values[linear] = in.values[read(index)];
  });
  return result;
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

class Evaluator {
public:
  /// 2 GiB of doubles.
  static constexpr int64_t kMaxElements = int64_t(1) << 28;

  explicit Evaluator(StringRef weightsDir) : weightsDir_(weightsDir) {}

  FailureOr<SmallVector<EvalTensor>> run(func::FuncOp func,
                                         ArrayRef<EvalTensor> inputs);

  /// Evaluates one op whose operands have the given values.
  FailureOr<SmallVector<EvalTensor>>
  runOp(Operation *op, ArrayRef<EvalTensor> operands, const DimBindings *dims) {
    if (dims)
      dims_ = *dims;
    for (auto [value, tensor] : llvm::zip_equal(op->getOperands(), operands))
      values_[value] = tensor;
    return evalOp(op);
  }

private:
  const EvalTensor &get(Value v) { return values_.find(v)->second; }
  FailureOr<SmallVector<EvalTensor>> evalOp(Operation *op);
  FailureOr<EvalTensor> readWeight(WeightOp op);
  FailureOr<EvalTensor> readConstant(ConstantOp op);
  FailureOr<EvalTensor> matmul(Operation *op, const EvalTensor &a,
                               const EvalTensor &b);
  FailureOr<EvalTensor> reduce(Operation *op, const EvalTensor &in,
                               ArrayRef<int64_t> axes, bool keepDims,
                               StringRef kind);
  FailureOr<EvalTensor> normalize(Operation *op, const EvalTensor &in,
                                  const EvalTensor &scale,
                                  const EvalTensor *bias, int64_t axis,
                                  double epsilon, bool rms);
  /// A norm op: the fused residual sum first (rounded, as the unfused add
  /// would be), then the normalisation; results `(norm[, sum])`.
  template <typename NormOp>
  FailureOr<SmallVector<EvalTensor>> normOp(NormOp n, bool rms) {
    const EvalTensor *x = &get(n.getInput());
    EvalTensor sum;
    if (Value residual = n.getResidual()) {
      sum = *x;
      const EvalTensor &r = get(residual);
      for (size_t i = 0; i < sum.values.size(); ++i)
        sum.values[i] += r.values[i];
      roundAll(sum);
      x = &sum;
    }
    const EvalTensor *bias = n.getBias() ? &get(n.getBias()) : nullptr;
    FailureOr<EvalTensor> y = normalize(n, *x, get(n.getScale()), bias,
                                        static_cast<int64_t>(n.getAxis()),
                                        n.getEpsilon().convertToDouble(), rms);
    if (failed(y))
      return failure();
    SmallVector<EvalTensor> results;
    results.push_back(std::move(*y));
    if (n.getResidual())
      results.push_back(std::move(sum));
    return results;
  }

  /// The sizes of a symbolic op's map at this run's bindings.
  FailureOr<SmallVector<int64_t>> sizesOf(Operation *op, AffineMap map,
                                          ArrayAttr symbols) {
    auto v = evaluateDims(map, symbols, dims_);
    if (!v)
      return op->emitOpError(llvm::toString(v.takeError()));
    return *v;
  }
  /// A strided slice of `in` (bounds clamped as ONNX Slice clamps them).
  FailureOr<EvalTensor> slice(Operation *op, const EvalTensor &in,
                              ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                              ArrayRef<int64_t> axes, ArrayRef<int64_t> steps);

  std::string weightsDir_;
  llvm::DenseMap<Value, EvalTensor> values_;
  /// Sizes of the named dimensions of the function's arguments.
  DimBindings dims_;
};

FailureOr<EvalTensor> Evaluator::slice(Operation *op, const EvalTensor &in,
                                       ArrayRef<int64_t> starts,
                                       ArrayRef<int64_t> ends,
                                       ArrayRef<int64_t> axes,
                                       ArrayRef<int64_t> steps) {
  auto shape = sliceShape(in.shape, starts, ends, axes, steps);
  if (!shape)
    return op->emitOpError(llvm::toString(shape.takeError()));
  int64_t rank = in.shape.size();
  Shape first, step;
  sliceOrigin(in.shape, starts, axes, steps, first, step);
  SmallVector<int64_t> strides = stridesOf(in.shape);
  return gather(in, *shape, [&](ArrayRef<int64_t> index) {
    int64_t offset = 0;
    for (int64_t i = 0; i < rank; ++i)
      offset += (first[i] + index[i] * step[i]) * strides[i];
    return offset;
  });
}

FailureOr<EvalTensor> Evaluator::readWeight(WeightOp op) {
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

FailureOr<EvalTensor> Evaluator::matmul(Operation *op, const EvalTensor &a,
                                        const EvalTensor &b) {
  auto shape = matmulShape(a.shape, b.shape);
  if (!shape)
    return op->emitOpError(llvm::toString(shape.takeError()));
  // Promote 1-D operands, as the shape rule does.
  Shape as(a.shape), bs(b.shape);
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  auto batch =
      broadcastShapes(ArrayRef(as).drop_back(2), ArrayRef(bs).drop_back(2));
  Shape full(*batch);
  full.push_back(m);
  full.push_back(n);
  Shape aBatch(ArrayRef<int64_t>(as).drop_back(2));
  Shape bBatch(ArrayRef<int64_t>(bs).drop_back(2));
  SmallVector<int64_t> aStrides = broadcastStrides(aBatch, *batch);
  SmallVector<int64_t> bStrides = broadcastStrides(bBatch, *batch);
  EvalTensor result = like(a.elementType, full);
  forEachIndex(*batch, [&](int64_t linear, ArrayRef<int64_t> index) {
    int64_t ao = dot(index, aStrides) * m * k,
            bo = dot(index, bStrides) * k * n;
    double *out = result.values.data() + linear * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += a.values[ao + i * k + l] * b.values[bo + l * n + j];
        out[i * n + j] = sum;
      }
  });
  result.shape.assign(shape->begin(), shape->end());
  roundAll(result);
  return result;
}

FailureOr<EvalTensor> Evaluator::reduce(Operation *op, const EvalTensor &in,
                                        ArrayRef<int64_t> axes, bool keepDims,
                                        StringRef kind) {
  Shape kept = reduceShape(in.shape, axes, /*keepDims=*/true);
  EvalTensor acc = like(in.elementType, kept);
  std::fill(acc.values.begin(), acc.values.end(),
            kind == "max" ? -INFINITY : 0.0);
  SmallVector<int64_t> accStrides = broadcastStrides(kept, in.shape);
  forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    double &slot = acc.values[dot(index, accStrides)];
    double v = in.values[linear];
    slot = kind == "max" ? std::max(slot, v) : slot + v;
  });
  if (kind == "mean") {
    int64_t count = 1;
    for (int64_t a : axes)
      count *= in.shape[a];
    for (double &v : acc.values)
      v /= count;
  }
  acc.shape = reduceShape(in.shape, axes, keepDims);
  roundAll(acc);
  return acc;
}

FailureOr<EvalTensor> Evaluator::normalize(Operation *op, const EvalTensor &in,
                                           const EvalTensor &scale,
                                           const EvalTensor *bias, int64_t axis,
                                           double epsilon, bool rms) {
  int64_t rank = in.shape.size();
  if (axis < 0)
    axis += rank;
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d)
    inner *= in.shape[d];
  int64_t outer = in.numElements() / std::max<int64_t>(inner, 1);
  ArrayRef<int64_t> tail = ArrayRef<int64_t>(in.shape).drop_front(axis);
  SmallVector<int64_t> sStrides = broadcastStrides(scale.shape, tail);
  SmallVector<int64_t> bStrides =
      bias ? broadcastStrides(bias->shape, tail) : SmallVector<int64_t>();
  EvalTensor result = like(in.elementType, in.shape);
  for (int64_t o = 0; o < outer; ++o) {
    const double *x = in.values.data() + o * inner;
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < inner; ++i) {
      mean += x[i];
      sq += x[i] * x[i];
    }
    mean /= inner;
    double var = rms ? sq / inner : sq / inner - mean * mean;
    double inv = 1.0 / std::sqrt(var + epsilon);
    forEachIndex(tail, [&](int64_t i, ArrayRef<int64_t> index) {
      double y =
          (rms ? x[i] : x[i] - mean) * inv * scale.values[dot(index, sStrides)];
      if (bias)
        y += bias->values[dot(index, bStrides)];
      result.values[o * inner + i] = y;
    });
  }
  roundAll(result);
  return result;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalOp(Operation *op) {
  auto one = [](FailureOr<EvalTensor> t) -> FailureOr<SmallVector<EvalTensor>> {
    if (failed(t))
      return failure();
    SmallVector<EvalTensor> results;
    results.push_back(std::move(*t));
    return results;
  };
  auto operand = [&](unsigned i) -> const EvalTensor & {
    return get(op->getOperand(i));
  };
  auto binary = [&](Type element, auto fn) {
    return one(
        broadcastMap(op, {&operand(0), &operand(1)}, element,
                     [&](ArrayRef<double> v) { return fn(v[0], v[1]); }));
  };
  auto unary = [&](auto fn) {
    return one(broadcastMap(op, {&operand(0)}, operand(0).elementType,
                            [&](ArrayRef<double> v) { return fn(v[0]); }));
  };
  auto resultElement = [&] {
    return cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  };
  Type bit = IntegerType::get(op->getContext(), 1);

  return llvm::TypeSwitch<Operation *, FailureOr<SmallVector<EvalTensor>>>(op)
      .Case([&](WeightOp w) { return one(readWeight(w)); })
      .Case([&](WaitOp w) { return one(get(w.getInput())); })
      .Case([&](FusedElementwiseOp f) -> FailureOr<SmallVector<EvalTensor>> {
        // The body's ops one after another, as they were before fusion.
        Block &body = f.getBody().front();
        for (auto [arg, input] :
             llvm::zip_equal(body.getArguments(), f.getInputs()))
          values_[arg] = get(input);
        for (Operation &inner : body.without_terminator()) {
          FailureOr<SmallVector<EvalTensor>> results = evalOp(&inner);
          if (failed(results))
            return failure();
          for (auto [value, tensor] :
               llvm::zip_equal(inner.getResults(), *results))
            values_[value] = std::move(tensor);
        }
        SmallVector<EvalTensor> results;
        for (Value v : body.getTerminator()->getOperands())
          results.push_back(get(v));
        return results;
      })
      .Case([&](ConstantOp c) { return one(readConstant(c)); })
      .Case([&](MatMulOp) { return one(matmul(op, operand(0), operand(1))); })
      .Case([&](AddOp) {
        return binary(resultElement(),
                      [](double a, double b) { return a + b; });
      })
      .Case([&](SubOp) {
        return binary(resultElement(),
                      [](double a, double b) { return a - b; });
      })
      .Case([&](MulOp) {
        return binary(resultElement(),
                      [](double a, double b) { return a * b; });
      })
      .Case([&](DivOp) {
        bool integer = isInteger(resultElement());
        return binary(resultElement(), [integer](double a, double b) {
          return integer ? std::trunc(a / b) : a / b;
        });
      })
      .Case([&](PowOp) {
        return binary(resultElement(),
                      [](double a, double b) { return std::pow(a, b); });
      })
      .Case([&](MinOp) {
        return binary(resultElement(),
                      [](double a, double b) { return std::min(a, b); });
      })
      .Case([&](MaxOp) {
        return binary(resultElement(),
                      [](double a, double b) { return std::max(a, b); });
      })
      .Case([&](AndOp) {
        return binary(bit, [](double a, double b) { return a != 0 && b != 0; });
      })
      .Case([&](OrOp) {
        return binary(bit, [](double a, double b) { return a != 0 || b != 0; });
      })
      .Case([&](EqualOp) {
        return binary(bit, [](double a, double b) { return a == b; });
      })
      .Case([&](LessOp) {
        return binary(bit, [](double a, double b) { return a < b; });
      })
      .Case([&](GreaterOp) {
        return binary(bit, [](double a, double b) { return a > b; });
      })
      .Case([&](LessOrEqualOp) {
        return binary(bit, [](double a, double b) { return a <= b; });
      })
      .Case([&](WhereOp) {
        return one(broadcastMap(
            op, {&operand(0), &operand(1), &operand(2)}, resultElement(),
            [](ArrayRef<double> v) { return v[0] != 0 ? v[1] : v[2]; }));
      })
      .Case([&](CastOp c) {
        EvalTensor t = operand(0);
        t.elementType = c.getTo();
        roundAll(t);
        return one(std::move(t));
      })
      .Case(
          [&](SqrtOp) { return unary([](double x) { return std::sqrt(x); }); })
      .Case([&](ReciprocalOp) { return unary([](double x) { return 1 / x; }); })
      .Case([&](NegOp) { return unary([](double x) { return -x; }); })
      .Case([&](ErfOp) { return unary([](double x) { return std::erf(x); }); })
      .Case(
          [&](TanhOp) { return unary([](double x) { return std::tanh(x); }); })
      .Case([&](SigmoidOp) {
        return unary([](double x) { return 1 / (1 + std::exp(-x)); });
      })
      .Case([&](ExpOp) { return unary([](double x) { return std::exp(x); }); })
      .Case([&](CosOp) { return unary([](double x) { return std::cos(x); }); })
      .Case([&](SinOp) { return unary([](double x) { return std::sin(x); }); })
      .Case([&](NotOp) { return unary([](double x) { return x == 0; }); })
      .Case([&](GeluOp g) {
        bool exact = g.getExact();
        return unary([exact](double x) {
          if (exact)
            return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
          double c = std::sqrt(2 / M_PI);
          return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
        });
      })
      .Case([&](ReshapeOp r) -> FailureOr<SmallVector<EvalTensor>> {
        auto shape = reshapeShape(operand(0).shape, r.getShape());
        if (!shape)
          return r.emitOpError(llvm::toString(shape.takeError()));
        EvalTensor t = operand(0);
        t.shape = *shape;
        return one(std::move(t));
      })
      .Case([&](TransposeOp t) {
        const EvalTensor &in = operand(0);
        auto shape = transposeShape(in.shape, t.getPerm());
        SmallVector<int64_t> strides = stridesOf(in.shape);
        ArrayRef<int64_t> perm = t.getPerm();
        return one(gather(in, *shape, [&](ArrayRef<int64_t> index) {
          int64_t offset = 0;
          for (size_t i = 0; i < perm.size(); ++i)
            offset += index[i] * strides[perm[i]];
          return offset;
        }));
      })
      .Case([&](UnsqueezeOp u) -> FailureOr<SmallVector<EvalTensor>> {
        EvalTensor t = operand(0);
        auto shape = unsqueezeShape(t.shape, u.getAxes());
        if (!shape)
          return u.emitOpError(llvm::toString(shape.takeError()));
        t.shape = *shape;
        return one(std::move(t));
      })
      .Case([&](SqueezeOp s) -> FailureOr<SmallVector<EvalTensor>> {
        EvalTensor t = operand(0);
        auto shape = squeezeShape(t.shape, s.getAxes());
        if (!shape)
          return s.emitOpError(llvm::toString(shape.takeError()));
        t.shape = *shape;
        return one(std::move(t));
      })
      .Case([&](ConcatOp c) -> FailureOr<SmallVector<EvalTensor>> {
        SmallVector<ArrayRef<int64_t>> shapes;
        for (Value v : c.getInputs())
          shapes.push_back(get(v).shape);
        int64_t axis = static_cast<int64_t>(c.getAxis());
        auto shape = concatShape(shapes, axis);
        if (!shape)
          return c.emitOpError(llvm::toString(shape.takeError()));
        if (axis < 0)
          axis += shape->size();
        EvalTensor result = like(resultElement(), *shape);
        int64_t start = 0;
        SmallVector<int64_t> outStrides = stridesOf(*shape);
        for (Value v : c.getInputs()) {
          const EvalTensor &in = get(v);
          forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
            SmallVector<int64_t> at(index);
            at[axis] += start;
            result.values[dot(at, outStrides)] = in.values[linear];
          });
          start += in.shape[axis];
        }
        return one(std::move(result));
      })
      .Case([&](GatherOp g) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &data = operand(0), &indices = operand(1);
        int64_t axis = static_cast<int64_t>(g.getAxis());
        if (axis < 0)
          axis += data.shape.size();
        auto shape = gatherShape(data.shape, indices.shape, axis);
        SmallVector<int64_t> strides = stridesOf(data.shape);
        SmallVector<int64_t> indexStrides = stridesOf(indices.shape);
        int64_t q = indices.shape.size(), dim = data.shape[axis];
        bool outOfRange = false;
        EvalTensor result = gather(data, *shape, [&](ArrayRef<int64_t> index) {
          int64_t which =
              indices.values[dot(index.slice(axis, q), indexStrides)];
          if (which < 0)
            which += dim;
          if (which < 0 || which >= dim) {
            outOfRange = true;
            which = 0;
          }
          int64_t offset = which * strides[axis];
          for (int64_t i = 0; i < axis; ++i)
            offset += index[i] * strides[i];
          for (size_t i = axis + 1; i < data.shape.size(); ++i)
            offset += index[i - 1 + q] * strides[i];
          return offset;
        });
        if (outOfRange)
          return g.emitOpError("an index is out of range for dimension ")
                 << axis << " of size " << dim;
        return one(std::move(result));
      })
      .Case([&](SliceOp s) {
        return one(slice(op, operand(0), s.getStarts(), s.getEnds(),
                         s.getAxes(), s.getSteps()));
      })
      .Case([&](SizesOp s) -> FailureOr<SmallVector<EvalTensor>> {
        auto sizes = sizesOf(op, s.getMap(), s.getSymbols());
        if (failed(sizes))
          return failure();
        EvalTensor t = like(resultElement(), s.getType().getShape());
        for (auto [i, v] : llvm::enumerate(*sizes))
          t.values[i] = static_cast<double>(v);
        return one(std::move(t));
      })
      .Case([&](SymbolicReshapeOp r) -> FailureOr<SmallVector<EvalTensor>> {
        auto sizes = sizesOf(op, r.getShape(), r.getSymbols());
        if (failed(sizes))
          return failure();
        EvalTensor t = operand(0);
        int64_t n = 1;
        for (int64_t d : *sizes)
          n *= d;
        if (n != t.numElements())
          return r.emitOpError("cannot reshape ")
                 << formatShape(t.shape) << " to " << formatShape(*sizes)
                 << " (the symbolic dimensions' sizes disagree)";
        t.shape.assign(sizes->begin(), sizes->end());
        return one(std::move(t));
      })
      .Case([&](SymbolicExpandOp e) -> FailureOr<SmallVector<EvalTensor>> {
        auto sizes = sizesOf(op, e.getShape(), e.getSymbols());
        if (failed(sizes))
          return failure();
        const EvalTensor &in = operand(0);
        auto shape = expandShape(in.shape, *sizes);
        if (!shape)
          return e.emitOpError(llvm::toString(shape.takeError()));
        SmallVector<int64_t> strides = broadcastStrides(in.shape, *shape);
        return one(gather(in, *shape, [&](ArrayRef<int64_t> index) {
          return dot(index, strides);
        }));
      })
      .Case([&](SymbolicSliceOp s) -> FailureOr<SmallVector<EvalTensor>> {
        auto starts = sizesOf(op, s.getStarts(), s.getSymbols());
        auto ends = sizesOf(op, s.getEnds(), s.getSymbols());
        if (failed(starts) || failed(ends))
          return failure();
        return one(
            slice(op, operand(0), *starts, *ends, s.getAxes(), s.getSteps()));
      })
      .Case([&](RangeOp r) -> FailureOr<SmallVector<EvalTensor>> {
        auto bounds = sizesOf(op, r.getBounds(), r.getSymbols());
        if (failed(bounds))
          return failure();
        int64_t start = (*bounds)[0], limit = (*bounds)[1],
                delta = r.getDelta();
        int64_t count = std::max<int64_t>(
            (limit - start + delta + (delta > 0 ? -1 : 1)) / delta, 0);
        EvalTensor t = like(resultElement(), {count});
        for (int64_t i = 0; i < count; ++i)
          t.values[i] = static_cast<double>(start + i * delta);
        return one(std::move(t));
      })
      .Case([&](SplitOp s) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &in = operand(0);
        int64_t axis = static_cast<int64_t>(s.getAxis());
        if (axis < 0)
          axis += in.shape.size();
        SmallVector<EvalTensor> results;
        int64_t start = 0;
        SmallVector<int64_t> strides = stridesOf(in.shape);
        for (int64_t size : s.getSizes()) {
          Shape shape(in.shape);
          shape[axis] = size;
          results.push_back(gather(in, shape, [&](ArrayRef<int64_t> index) {
            SmallVector<int64_t> at(index);
            at[axis] += start;
            return dot(at, strides);
          }));
          start += size;
        }
        return results;
      })
      .Case([&](ExpandOp e) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &in = operand(0);
        auto shape = expandShape(in.shape, e.getShape());
        if (!shape)
          return e.emitOpError(llvm::toString(shape.takeError()));
        SmallVector<int64_t> strides = broadcastStrides(in.shape, *shape);
        return one(gather(in, *shape, [&](ArrayRef<int64_t> index) {
          return dot(index, strides);
        }));
      })
      .Case([&](ReduceMeanOp r) {
        return one(
            reduce(op, operand(0), r.getAxes(), r.getKeepDims(), "mean"));
      })
      .Case([&](ReduceSumOp r) {
        return one(reduce(op, operand(0), r.getAxes(), r.getKeepDims(), "sum"));
      })
      .Case([&](ReduceMaxOp r) {
        return one(reduce(op, operand(0), r.getAxes(), r.getKeepDims(), "max"));
      })
      .Case([&](SoftmaxOp s) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &in = operand(0);
        int64_t axis = s.getNormalizedAxis();
        auto maxed = reduce(op, in, {axis}, true, "max");
        if (failed(maxed))
          return failure();
        SmallVector<int64_t> strides = broadcastStrides(maxed->shape, in.shape);
        EvalTensor e = like(in.elementType, in.shape);
        forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          e.values[linear] =
              std::exp(in.values[linear] - maxed->values[dot(index, strides)]);
        });
        EvalTensor sums = like(in.elementType, maxed->shape);
        forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          sums.values[dot(index, strides)] += e.values[linear];
        });
        forEachIndex(in.shape, [&](int64_t linear, ArrayRef<int64_t> index) {
          e.values[linear] /= sums.values[dot(index, strides)];
        });
        roundAll(e);
        return one(std::move(e));
      })
      .Case([&](TriluOp t) {
        EvalTensor result = operand(0);
        int64_t rank = result.shape.size(), k = t.getDiagonal();
        bool upper = t.getUpper();
        forEachIndex(result.shape,
                     [&](int64_t linear, ArrayRef<int64_t> index) {
                       int64_t diff = index[rank - 1] - index[rank - 2];
                       if (upper ? diff < k : diff > k)
                         result.values[linear] = 0;
                     });
        return one(std::move(result));
      })
      .Case([&](ScatterNDOp s) -> FailureOr<SmallVector<EvalTensor>> {
        EvalTensor result = operand(0);
        const EvalTensor &indices = operand(1), &updates = operand(2);
        int64_t q = indices.shape.back();
        int64_t slice = 1;
        for (size_t d = q; d < result.shape.size(); ++d)
          slice *= result.shape[d];
        SmallVector<int64_t> strides = stridesOf(result.shape);
        int64_t tuples = indices.numElements() / std::max<int64_t>(q, 1);
        for (int64_t t = 0; t < tuples; ++t) {
          int64_t offset = 0;
          for (int64_t d = 0; d < q; ++d) {
            int64_t i = indices.values[t * q + d];
            if (i < 0)
              i += result.shape[d];
            if (i < 0 || i >= result.shape[d])
              return s.emitOpError("index ") << i << " is out of range for "
                                             << "dimension " << d;
            offset += i * strides[d];
          }
          for (int64_t e = 0; e < slice; ++e)
            result.values[offset + e] = updates.values[t * slice + e];
        }
        return one(std::move(result));
      })
      .Case([&](AttentionOp a) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &q = get(a.getQuery());
        EvalTensor k = get(a.getKey()), v = get(a.getValue());
        int64_t past = 0;
        SmallVector<EvalTensor> results;
        results.emplace_back();
        if (a.getPastKey()) {
          // K = concat(past_key, key), V likewise, along the sequence.
          auto extend = [&](const EvalTensor &old, const EvalTensor &fresh) {
            Shape shape(fresh.shape);
            shape[2] = old.shape[2] + fresh.shape[2];
            EvalTensor joined = like(fresh.elementType, shape);
            SmallVector<int64_t> strides = stridesOf(shape);
            forEachIndex(old.shape, [&](int64_t linear, ArrayRef<int64_t> i) {
              joined.values[dot(i, strides)] = old.values[linear];
            });
            forEachIndex(fresh.shape, [&](int64_t linear, ArrayRef<int64_t> i) {
              SmallVector<int64_t> at(i);
              at[2] += old.shape[2];
              joined.values[dot(at, strides)] = fresh.values[linear];
            });
            return joined;
          };
          const EvalTensor &pk = get(a.getPastKey());
          past = pk.shape[2];
          k = extend(pk, k);
          v = extend(get(a.getPastValue()), v);
        }
        int64_t batch = q.shape[0], heads = q.shape[1], seq = q.shape[2],
                dim = q.shape[3], kvHeads = k.shape[1], total = k.shape[2],
                vDim = v.shape[3], group = heads / kvHeads;
        double scale = a.getScale().convertToDouble();
        double softcap = a.getSoftcap().convertToDouble();
        const EvalTensor *mask = a.getMask() ? &get(a.getMask()) : nullptr;
        SmallVector<int64_t> full{batch, heads, seq, total};
        SmallVector<int64_t> maskStrides =
            mask ? broadcastStrides(mask->shape, full) : SmallVector<int64_t>();
        bool boolMask = mask && mask->elementType.isInteger(1);
        EvalTensor out = like(q.elementType, {batch, heads, seq, vDim});
        std::vector<double> scores(total);
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < seq; ++i) {
              const double *qi =
                  q.values.data() + ((b * heads + h) * seq + i) * dim;
              int64_t kvh = h / group;
              double maxScore = -INFINITY;
              for (int64_t j = 0; j < total; ++j) {
                const double *kj =
                    k.values.data() + ((b * kvHeads + kvh) * total + j) * dim;
                double sum = 0;
                for (int64_t d = 0; d < dim; ++d)
                  sum += qi[d] * kj[d];
                double score = scale * sum;
                if (mask) {
                  double m = mask->values[dot({b, h, i, j}, maskStrides)];
                  score += boolMask ? (m != 0 ? 0.0 : -INFINITY) : m;
                }
                if (a.getCausal() && j > i + past)
                  score = -INFINITY;
                if (softcap > 0)
                  score = softcap * std::tanh(score / softcap);
                scores[j] = score;
                maxScore = std::max(maxScore, score);
              }
              // A row with every key masked attends to nothing: zeros.
              if (maxScore == -INFINITY)
                continue;
              double denom = 0;
              for (double &sc : scores)
                denom += (sc = std::exp(sc - maxScore));
              double *o =
                  out.values.data() + ((b * heads + h) * seq + i) * vDim;
              for (int64_t j = 0; j < total; ++j) {
                const double *vj =
                    v.values.data() + ((b * kvHeads + kvh) * total + j) * vDim;
                for (int64_t d = 0; d < vDim; ++d)
                  o[d] += scores[j] / denom * vj[d];
              }
            }
        roundAll(out);
        results[0] = std::move(out);
        if (a.getPastKey()) {
          results.push_back(std::move(k));
          results.push_back(std::move(v));
        }
        return results;
      })
      .Case([&](RotaryOp r) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &in = operand(0), &cos = operand(1), &sin = operand(2);
        const EvalTensor *positions =
            r.getPositions() ? &get(r.getPositions()) : nullptr;
        int64_t batch = in.shape[0], heads = in.shape[1], seq = in.shape[2],
                dim = in.shape[3], rd = r.getRotaryDim(), half = rd / 2;
        bool interleaved = r.getInterleaved();
        EvalTensor result = in;
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t s = 0; s < seq; ++s) {
            // Row of the cos/sin tables for this token (a [1, seq, rd/2]
            // table serves every batch row).
            int64_t row = (cos.shape[0] == 1 ? 0 : b) * seq + s;
            if (positions) {
              row = positions->values[b * seq + s];
              if (row < 0 || row >= cos.shape[0])
                return r.emitOpError("position ")
                       << row << " is outside the cos/sin cache of "
                       << cos.shape[0] << " positions";
            }
            const double *c = cos.values.data() + row * half;
            const double *sn = sin.values.data() + row * half;
            for (int64_t h = 0; h < heads; ++h) {
              const double *x =
                  in.values.data() + ((b * heads + h) * seq + s) * dim;
              double *y =
                  result.values.data() + ((b * heads + h) * seq + s) * dim;
              for (int64_t i = 0; i < half; ++i) {
                int64_t a = interleaved ? 2 * i : i;
                int64_t bIdx = interleaved ? 2 * i + 1 : i + half;
                y[a] = x[a] * c[i] - x[bIdx] * sn[i];
                y[bIdx] = x[bIdx] * c[i] + x[a] * sn[i];
              }
            }
          }
        roundAll(result);
        return one(std::move(result));
      })
      .Case([&](LayerNormOp n) { return normOp(n, /*rms=*/false); })
      .Case([&](RmsNormOp n) { return normOp(n, /*rms=*/true); })
      .Case([&](SiluOp) {
        return unary([](double x) { return x / (1 + std::exp(-x)); });
      })
      .Case([&](EmbeddingOp e) -> FailureOr<SmallVector<EvalTensor>> {
        const EvalTensor &table = operand(0), &ids = operand(1);
        int64_t vocab = table.shape[0], hidden = table.shape[1];
        SmallVector<int64_t> shape(ids.shape);
        shape.push_back(hidden);
        EvalTensor result = like(table.elementType, shape);
        for (int64_t i = 0, n = ids.numElements(); i < n; ++i) {
          int64_t id = static_cast<int64_t>(ids.values[i]);
          if (id < -vocab || id >= vocab)
            return e.emitOpError("id ")
                   << id << " is outside the table of " << vocab << " rows";
          if (id < 0)
            id += vocab;
          std::copy_n(table.values.begin() + id * hidden, hidden,
                      result.values.begin() + i * hidden);
        }
        return one(std::move(result));
      })
      .Case([&](LinearOp l) {
        const EvalTensor &in = operand(0), &w = operand(1);
        bool t = l.getTransposeWeight();
        int64_t k = in.shape.back(), n = w.shape[t ? 0 : 1];
        int64_t rows = in.numElements() / std::max<int64_t>(k, 1);
        SmallVector<int64_t> shape(in.shape);
        shape.back() = n;
        EvalTensor result = like(in.elementType, shape);
        const EvalTensor *bias = l.getBias() ? &get(l.getBias()) : nullptr;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double acc = bias ? bias->values[j] : 0.0;
            for (int64_t i = 0; i < k; ++i)
              acc += in.values[r * k + i] * w.values[t ? j * k + i : i * n + j];
            result.values[r * n + j] = acc;
          }
        roundAll(result);
        return one(std::move(result));
      })
      .Default([&](Operation *) -> FailureOr<SmallVector<EvalTensor>> {
        return op->emitOpError("is not supported by the reference evaluator");
      });
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

} // namespace

FailureOr<SmallVector<EvalTensor>>
evaluate(func::FuncOp func, ArrayRef<EvalTensor> inputs, StringRef weightsDir) {
  return Evaluator(weightsDir).run(func, inputs);
}

FailureOr<SmallVector<EvalTensor>> evaluateOp(Operation *op,
                                              ArrayRef<EvalTensor> operands,
                                              StringRef weightsDir,
                                              const DimBindings *dims) {
  return Evaluator(weightsDir).runOp(op, operands, dims);
}

FailureOr<DimBindings> bindDims(func::FuncOp func,
                                ArrayRef<EvalTensor> inputs) {
  DimBindings dims;
  for (auto [k, input] : llvm::enumerate(inputs)) {
    auto names = func.getArgAttrOfType<ArrayAttr>(k, "dfg.dim_names");
    if (!names)
      continue;
    for (auto [i, name] : llvm::enumerate(names.getValue())) {
      StringRef dim = cast<StringAttr>(name).getValue();
      if (dim.empty() || i >= input.shape.size())
        continue;
      auto [it, added] = dims.try_emplace(dim, input.shape[i]);
      if (!added && it->second != input.shape[i])
        return func.emitError("input #")
               << k << " has " << input.shape[i] << " along dimension " << i
               << " ('" << dim << "'), but an earlier input has " << it->second;
    }
  }
  return dims;
}

void roundToElementType(EvalTensor &tensor) { roundAll(tensor); }

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

FailureOr<EvalTensor> fromHostTensor(const rt::HostTensor &host,
                                     MLIRContext *context) {
  Builder b(context);
  EvalTensor t;
  t.shape.assign(host.shape.begin(), host.shape.end());
  switch (host.dtype) {
  case rt::DType::F32:
    t.elementType = b.getF32Type();
    break;
  case rt::DType::F16:
    t.elementType = b.getF16Type();
    break;
  case rt::DType::BF16:
    t.elementType = b.getBF16Type();
    break;
  case rt::DType::I64:
    t.elementType = b.getI64Type();
    break;
  case rt::DType::I32:
    t.elementType = b.getI32Type();
    break;
  case rt::DType::Bool:
    t.elementType = b.getI1Type();
    break;
  }
  t.values =
      decodeElements(t.elementType, host.bytes.data(), host.numElements());
  return t;
}

FailureOr<rt::HostTensor> toHostTensor(const EvalTensor &t) {
  rt::HostTensor host;
  host.shape.assign(t.shape.begin(), t.shape.end());
  host.dtype = elementDType(t.elementType).value_or(rt::DType::Bool);
  size_t width = rt::byteWidth(host.dtype);
  host.bytes.resize(t.values.size() * width);
  uint8_t *out = host.bytes.data();
  namespace endian = llvm::support::endian;
  for (size_t i = 0; i < t.values.size(); ++i) {
    double v = t.values[i];
    switch (host.dtype) {
    case rt::DType::F32: {
      float f = static_cast<float>(v);
      std::memcpy(out + 4 * i, &f, 4);
      break;
    }
    case rt::DType::F16:
    case rt::DType::BF16: {
      APFloat f(v);
      bool losesInfo;
      f.convert(*semanticsOf(t.elementType), APFloat::rmNearestTiesToEven,
                &losesInfo);
      endian::write16le(out + 2 * i, static_cast<uint16_t>(
                                         f.bitcastToAPInt().getZExtValue()));
      break;
    }
    case rt::DType::I64:
      endian::write64le(out + 8 * i,
                        static_cast<uint64_t>(static_cast<int64_t>(v)));
      break;
    case rt::DType::I32:
      endian::write32le(out + 4 * i,
                        static_cast<uint32_t>(static_cast<int32_t>(v)));
      break;
    case rt::DType::Bool:
      out[i] = v != 0;
      break;
    }
  }
  return host;
}

} // namespace meshc::dfg
