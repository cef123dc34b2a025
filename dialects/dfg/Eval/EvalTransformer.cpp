//===- EvalTransformer.cpp - Reference evaluation of transformer ops ------===//
//
// Part of meshc.
//
// The ops of transformer blocks: matmul and linear, attention (with its KV
// cache), rotary embeddings, layer and RMS normalisation (with the fused
// residual sum), and embedding lookup.
//
//===----------------------------------------------------------------------===//
#include "dialects/dfg/Eval/EvaluatorImpl.h"

#include "dialects/dfg/IR/DfgOps.h"
#include "dialects/dfg/IR/DfgShapes.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace meshc::dfg::detail {

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
  if (failed(checkResultSize(op, full)))
    return failure();
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

template <typename NormOp>
FailureOr<SmallVector<EvalTensor>> Evaluator::normOp(NormOp n, bool rms) {
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

FailureOr<SmallVector<EvalTensor>> Evaluator::evalMatMul(MatMulOp op) {
  return one(matmul(op, operand(op, 0), operand(op, 1)));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalAttention(AttentionOp op) {
  const EvalTensor &q = get(op.getQuery());
  EvalTensor k = get(op.getKey()), v = get(op.getValue());
  int64_t past = 0;
  SmallVector<int64_t> rowPast; // each row's history, with a past
  SmallVector<EvalTensor> results;
  results.emplace_back();
  if (op.getPastKey()) {
    // Row b's keys: its first L_b past positions, the new ones, then zeros;
    // L_b = past_lengths[b], else the whole past (K = concat(past_key, key),
    // V likewise, along the sequence). A negative L_b drops the first -L_b
    // new ones.
    const EvalTensor &pk = get(op.getPastKey());
    past = pk.shape[2];
    rowPast.assign(pk.shape[0], past);
    if (op.getPastLengths()) {
      const EvalTensor &lengths = get(op.getPastLengths());
      for (int64_t b = 0; b < lengths.shape[0]; ++b) {
        double l = lengths.values[b];
        if (!(l >= -k.shape[2] && l <= past))
          return op.emitOpError("past_lengths[")
                 << b << "] = " << l << " is outside [" << -k.shape[2]
                 << ", " << past << "]";
        rowPast[b] = static_cast<int64_t>(l);
      }
    }
    auto place = [&](const EvalTensor &old, const EvalTensor &fresh) {
      Shape shape(fresh.shape);
      shape[2] = old.shape[2] + fresh.shape[2];
      EvalTensor placed = like(fresh.elementType, shape);
      SmallVector<int64_t> strides = stridesOf(shape);
      forEachIndex(old.shape, [&](int64_t linear, ArrayRef<int64_t> i) {
        if (i[2] < rowPast[i[0]])
          placed.values[dot(i, strides)] = old.values[linear];
      });
      forEachIndex(fresh.shape, [&](int64_t linear, ArrayRef<int64_t> i) {
        SmallVector<int64_t> at(i);
        at[2] += rowPast[i[0]];
        if (at[2] >= 0)
          placed.values[dot(at, strides)] = fresh.values[linear];
      });
      return placed;
    };
    k = place(pk, k);
    v = place(get(op.getPastValue()), v);
  }
  int64_t batch = q.shape[0], heads = q.shape[1], seq = q.shape[2],
          dim = q.shape[3], kvHeads = k.shape[1], total = k.shape[2],
          vDim = v.shape[3], group = heads / kvHeads;
  double scale = op.getScale().convertToDouble();
  double softcap = op.getSoftcap().convertToDouble();
  bool softcapFirst = op.getSoftcapFirst();
  double causalFill = op.getCausalFillAttr()
                          ? op.getCausalFillAttr().getValueAsDouble()
                          : -INFINITY;
  const EvalTensor *mask = op.getMask() ? &get(op.getMask()) : nullptr;
  SmallVector<int64_t> full{batch, heads, seq, total};
  SmallVector<int64_t> maskStrides =
      mask ? broadcastStrides(mask->shape, full) : SmallVector<int64_t>();
  bool boolMask = mask && mask->elementType.isInteger(1);
  const EvalTensor *sinks = op.getSinks() ? &get(op.getSinks()) : nullptr;
  EvalTensor out = like(q.elementType, {batch, heads, seq, vDim});
  std::vector<double> scores(total);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i) {
        const double *qi = q.values.data() + ((b * heads + h) * seq + i) * dim;
        int64_t kvh = h / group;
        // A query before its row's start (a negative past_lengths) sees no
        // key: zeros.
        if (op.getCausal() && !rowPast.empty() && i + rowPast[b] < 0)
          continue;
        double maxScore = -INFINITY;
        for (int64_t j = 0; j < total; ++j) {
          const double *kj =
              k.values.data() + ((b * kvHeads + kvh) * total + j) * dim;
          double sum = 0;
          for (int64_t d = 0; d < dim; ++d)
            sum += qi[d] * kj[d];
          double score = scale * sum;
          if (softcap > 0 && softcapFirst)
            score = softcap * std::tanh(score / softcap);
          // A finite additive value (a mask's fill, causal_fill) is added
          // as the unraised Add would: the sum rounded to the element type,
          // so that a fill like finfo.min absorbs the score.
          auto addMasking = [&](double m) {
            if (m != 0 && std::isfinite(m))
              score = roundToElementType(q.elementType, score + m);
            else
              score += m;
          };
          bool future =
              op.getCausal() && j > i + (rowPast.empty() ? past : rowPast[b]);
          if (future && std::isfinite(causalFill)) {
            addMasking(causalFill); // in place of the mask's value
          } else {
            if (mask) {
              double m = mask->values[dot({b, h, i, j}, maskStrides)];
              addMasking(boolMask ? (m != 0 ? 0.0 : -INFINITY) : m);
            }
            if (future)
              score = -INFINITY;
          }
          if (softcap > 0 && !softcapFirst)
            score = softcap * std::tanh(score / softcap);
          scores[j] = score;
          maxScore = std::max(maxScore, score);
        }
        // A row with every key masked attends to nothing: zeros.
        if (maxScore == -INFINITY)
          continue;
        // A sink is one more score in the softmax, followed by no value.
        double sink = sinks ? sinks->values[h] : -INFINITY;
        maxScore = std::max(maxScore, sink);
        double denom = std::exp(sink - maxScore);
        for (double &sc : scores)
          denom += (sc = std::exp(sc - maxScore));
        double *o = out.values.data() + ((b * heads + h) * seq + i) * vDim;
        for (int64_t j = 0; j < total; ++j) {
          const double *vj =
              v.values.data() + ((b * kvHeads + kvh) * total + j) * vDim;
          for (int64_t d = 0; d < vDim; ++d)
            o[d] += scores[j] / denom * vj[d];
        }
      }
  roundAll(out);
  results[0] = std::move(out);
  if (op.getPastKey()) {
    results.push_back(std::move(k));
    results.push_back(std::move(v));
  }
  return results;
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalRotary(RotaryOp op) {
  const EvalTensor &in = operand(op, 0), &cos = operand(op, 1),
                   &sin = operand(op, 2);
  const EvalTensor *positions =
      op.getPositions() ? &get(op.getPositions()) : nullptr;
  int64_t batch = in.shape[0], heads = in.shape[1], seq = in.shape[2],
          dim = in.shape[3], rd = op.getRotaryDim(), half = rd / 2;
  bool interleaved = op.getInterleaved();
  EvalTensor result = in;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      // Row of the cos/sin tables for this token (a [1, seq, rd/2]
      // table serves every batch row).
      int64_t row = (cos.shape[0] == 1 ? 0 : b) * seq + s;
      if (positions) {
        row = positions->values[b * seq + s];
        if (row < 0 || row >= cos.shape[0])
          return op.emitOpError("position ")
                 << row << " is outside the cos/sin cache of " << cos.shape[0]
                 << " positions";
      }
      const double *c = cos.values.data() + row * half;
      const double *sn = sin.values.data() + row * half;
      for (int64_t h = 0; h < heads; ++h) {
        const double *x = in.values.data() + ((b * heads + h) * seq + s) * dim;
        double *y = result.values.data() + ((b * heads + h) * seq + s) * dim;
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
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalLayerNorm(LayerNormOp op) {
  return normOp(op, /*rms=*/false);
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalRmsNorm(RmsNormOp op) {
  return normOp(op, /*rms=*/true);
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalEmbedding(EmbeddingOp op) {
  const EvalTensor &table = operand(op, 0), &ids = operand(op, 1);
  int64_t vocab = table.shape[0], hidden = table.shape[1];
  SmallVector<int64_t> shape(ids.shape);
  shape.push_back(hidden);
  EvalTensor result = like(table.elementType, shape);
  for (int64_t i = 0, n = ids.numElements(); i < n; ++i) {
    int64_t id = static_cast<int64_t>(ids.values[i]);
    if (id < -vocab || id >= vocab)
      return op.emitOpError("id ")
             << id << " is outside the table of " << vocab << " rows";
    if (id < 0)
      id += vocab;
    std::copy_n(table.values.begin() + id * hidden, hidden,
                result.values.begin() + i * hidden);
  }
  return one(std::move(result));
}

FailureOr<SmallVector<EvalTensor>> Evaluator::evalLinear(LinearOp op) {
  const EvalTensor &in = operand(op, 0), &w = operand(op, 1);
  bool t = op.getTransposeWeight();
  int64_t k = in.shape.back(), n = w.shape[t ? 0 : 1];
  int64_t rows = in.numElements() / std::max<int64_t>(k, 1);
  SmallVector<int64_t> shape(in.shape);
  shape.back() = n;
  EvalTensor result = like(in.elementType, shape);
  const EvalTensor *bias = op.getBias() ? &get(op.getBias()) : nullptr;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias->values[j] : 0.0;
      for (int64_t i = 0; i < k; ++i)
        acc += in.values[r * k + i] * w.values[t ? j * k + i : i * n + j];
      result.values[r * n + j] = acc;
    }
  roundAll(result);
  return one(std::move(result));
}

} // namespace meshc::dfg::detail
