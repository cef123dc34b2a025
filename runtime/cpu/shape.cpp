//===- shape.cpp - Data-movement kernels ----------------------------------===//
//
// Part of meshc. transpose, concat, gather, slice, expand, trilu, scatterND
// and embedding move elements without looking at them, so each works on any
// dtype by its byte width; iota and fillIntegers write integer tensors. Index
// tensors are checked before any parallel loop runs, so a bad index stops the
// process from the calling thread.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"

#include "meshc/runtime/error.h"
#include "runtime/cpu/KernelsInternal.h"

#include <cstring>
#include <string>
#include <vector>

namespace meshc::rt::cpu {
using namespace detail;

void transpose(const TensorRef &in, const std::int64_t *perm,
               const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  std::int64_t inStrides[kMaxRank];
  denseStrides(in, inStrides);
  Plan plan;
  plan.rank = out.rank;
  plan.numOperands = 1;
  for (int d = 0; d < out.rank; ++d) {
    plan.shape[d] = out.shape[d];
    plan.strides[0][d] = inStrides[perm[d]];
  }
  simplify(plan);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(plan, in.as<const T>(), 0, out.as<T>());
  });
}

void concat(const TensorRef *inputs, int count, std::int64_t axis,
            const TensorRef &out) {
  const std::size_t width = byteWidth(out.dtype);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= out.shape[d];
  for (int d = static_cast<int>(axis) + 1; d < out.rank; ++d)
    inner *= out.shape[d];
  const std::size_t outRow =
      static_cast<std::size_t>(out.shape[axis] * inner) * width;
  std::size_t start = 0;
  auto *dst = static_cast<unsigned char *>(out.data);
  for (int i = 0; i < count; ++i) {
    const TensorRef &in = inputs[i];
    const std::size_t row =
        static_cast<std::size_t>(in.shape[axis] * inner) * width;
    const auto *src = static_cast<const unsigned char *>(in.data);
    if (outer == 1) {
      parallelMemcpy(dst + start, src, row);
    } else {
      const std::int64_t total = outer * in.shape[axis] * inner;
#pragma omp parallel for schedule(static) if (total > kParallelThreshold)
      for (std::int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * outRow + start, src + o * row, row);
    }
    start += row;
  }
}

void gather(const TensorRef &data, const TensorRef &indices, std::int64_t axis,
            const TensorRef &out) {
  requireIndices(indices, "gather");
  const std::int64_t dim = data.shape[axis];
  const std::int64_t count = indices.numElements();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t index = readIndex(indices, i);
    if (index < -dim || index >= dim)
      fatal("gather: index " + std::to_string(index) + " is outside [-" +
            std::to_string(dim) + ", " + std::to_string(dim) + ") of axis " +
            std::to_string(axis));
  }
  if (out.numElements() == 0)
    return;
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d)
    outer *= data.shape[d];
  for (int d = static_cast<int>(axis) + 1; d < data.rank; ++d)
    inner *= data.shape[d];
  const std::size_t width = byteWidth(data.dtype);
  const std::size_t slice = static_cast<std::size_t>(inner) * width;
  const auto *src = static_cast<const unsigned char *>(data.data);
  auto *dst = static_cast<unsigned char *>(out.data);
  const std::int64_t rows = outer * count;
#pragma omp parallel for schedule(static) if (rows * inner > kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t o = r / count, j = r % count;
    std::int64_t index = readIndex(indices, j);
    if (index < 0)
      index += dim;
    std::memcpy(dst + r * slice, src + (o * dim + index) * slice, slice);
  }
}

void gatherND(const TensorRef &data, const TensorRef &indices,
              std::int64_t batchDims, const TensorRef &out) {
  requireIndices(indices, "gather_nd");
  const int k = static_cast<int>(indices.shape[indices.rank - 1]);
  // Element strides of data's dimensions; a row of the output is one slice
  // of data's trailing dimensions.
  std::int64_t strides[kMaxRank];
  denseStrides(data, strides);
  std::int64_t inner = 1;
  for (int d = static_cast<int>(batchDims) + k; d < data.rank; ++d)
    inner *= data.shape[d];
  std::int64_t batch = 1, perBatch = 1;
  for (int d = 0; d < batchDims; ++d)
    batch *= indices.shape[d];
  for (int d = static_cast<int>(batchDims); d < indices.rank - 1; ++d)
    perBatch *= indices.shape[d];
  const std::int64_t rows = batch * perBatch;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t offset =
        (r / perBatch) * (batchDims > 0 ? strides[batchDims - 1] : 0);
    for (int j = 0; j < k; ++j) {
      const int d = static_cast<int>(batchDims) + j;
      const std::int64_t dim = data.shape[d];
      std::int64_t index = readIndex(indices, r * k + j);
      if (index < -dim || index >= dim)
        fatal("gather_nd: index " + std::to_string(index) + " is outside [-" +
              std::to_string(dim) + ", " + std::to_string(dim) +
              ") of dimension " + std::to_string(d));
      if (index < 0)
        index += dim;
      offset += index * strides[d];
    }
    offsets[static_cast<std::size_t>(r)] = offset;
  }
  if (out.numElements() == 0)
    return;
  const std::size_t width = byteWidth(data.dtype);
  const std::size_t slice = static_cast<std::size_t>(inner) * width;
  const auto *src = static_cast<const unsigned char *>(data.data);
  auto *dst = static_cast<unsigned char *>(out.data);
#pragma omp parallel for schedule(static) if (rows * inner > kParallelThreshold)
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(dst + r * slice,
                src + offsets[static_cast<std::size_t>(r)] * width, slice);
}

void slice(const TensorRef &in, const std::int64_t *starts,
           const std::int64_t *steps, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  std::int64_t inStrides[kMaxRank];
  denseStrides(in, inStrides);
  Plan plan;
  plan.rank = in.rank;
  plan.numOperands = 1;
  std::int64_t base = 0;
  for (int d = 0; d < in.rank; ++d) {
    // Shapes computed at run time (symbolic dimensions) must still stay
    // inside the input: first and last element of each dimension.
    std::int64_t last = starts[d] + (out.shape[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= in.shape[d] || last < 0 ||
        last >= in.shape[d])
      fatal("slice: " + std::to_string(out.shape[d]) + " elements from index " +
            std::to_string(starts[d]) + " by step " + std::to_string(steps[d]) +
            " leave dimension " + std::to_string(d) + " of size " +
            std::to_string(in.shape[d]) +
            " (a size beyond what the model supports?)");
    plan.shape[d] = out.shape[d];
    plan.strides[0][d] = steps[d] * inStrides[d];
    base += starts[d] * inStrides[d];
  }
  simplify(plan);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(plan, in.as<const T>(), base, out.as<T>());
  });
}

void expand(const TensorRef &in, const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const TensorRef *inputs[] = {&in};
  const Plan plan = broadcastPlan(out, inputs, 1);
  dispatchWidth(byteWidth(in.dtype), [&](auto tag) {
    using T = decltype(tag);
    stridedCopy(plan, in.as<const T>(), 0, out.as<T>());
  });
}

void trilu(const TensorRef &in, bool upper, std::int64_t diagonal,
           const TensorRef &out) {
  if (out.numElements() == 0)
    return;
  const std::int64_t rows = in.shape[in.rank - 2], cols = in.shape[in.rank - 1];
  const std::int64_t matrices = in.numElements() / (rows * cols);
  const std::size_t width = byteWidth(in.dtype);
  const auto *src = static_cast<const unsigned char *>(in.data);
  auto *dst = static_cast<unsigned char *>(out.data);
  const std::int64_t total = matrices * rows;
#pragma omp parallel for schedule(static) if (total * cols > kParallelThreshold)
  for (std::int64_t r = 0; r < total; ++r) {
    const std::int64_t i = r % rows;
    // Kept columns: j - i >= diagonal (upper) or j - i <= diagonal (lower).
    std::int64_t keepBegin = 0, keepEnd = cols;
    if (upper)
      keepBegin = std::clamp<std::int64_t>(i + diagonal, 0, cols);
    else
      keepEnd = std::clamp<std::int64_t>(i + diagonal + 1, 0, cols);
    unsigned char *o = dst + r * cols * width;
    const unsigned char *x = src + r * cols * width;
    if (keepBegin >= keepEnd) {
      std::memset(o, 0, cols * width);
      continue;
    }
    std::memset(o, 0, keepBegin * width);
    std::memcpy(o + keepBegin * width, x + keepBegin * width,
                (keepEnd - keepBegin) * width);
    std::memset(o + keepEnd * width, 0, (cols - keepEnd) * width);
  }
}

void scatterND(const TensorRef &data, const TensorRef &indices,
               const TensorRef &updates, const TensorRef &out) {
  requireIndices(indices, "scatter_nd");
  copy(data, out);
  const int q = static_cast<int>(indices.shape[indices.rank - 1]);
  std::int64_t strides[kMaxRank];
  denseStrides(data, strides);
  std::int64_t slice = 1;
  for (int d = q; d < data.rank; ++d)
    slice *= data.shape[d];
  const std::int64_t tuples = q == 0 ? 0 : indices.numElements() / q;
  const std::size_t width = byteWidth(data.dtype);
  const std::size_t bytes = static_cast<std::size_t>(slice) * width;
  // Check every tuple first; then the writes, in order (a later duplicate
  // wins, deterministically).
  for (std::int64_t t = 0; t < tuples; ++t)
    for (int d = 0; d < q; ++d) {
      const std::int64_t i = readIndex(indices, t * q + d);
      if (i < -data.shape[d] || i >= data.shape[d])
        fatal("scatter_nd: index " + std::to_string(i) +
              " is outside dimension " + std::to_string(d) + " of size " +
              std::to_string(data.shape[d]));
    }
  auto *dst = static_cast<unsigned char *>(out.data);
  const auto *src = static_cast<const unsigned char *>(updates.data);
  for (std::int64_t t = 0; t < tuples; ++t) {
    std::int64_t offset = 0;
    for (int d = 0; d < q; ++d) {
      std::int64_t i = readIndex(indices, t * q + d);
      if (i < 0)
        i += data.shape[d];
      offset += i * strides[d];
    }
    std::memcpy(dst + offset * width, src + t * bytes, bytes);
  }
}

void embedding(const TensorRef &table, const TensorRef &ids,
               const TensorRef &out) {
  requireIndices(ids, "embedding");
  const std::int64_t vocab = table.shape[0], hidden = table.shape[1];
  const std::int64_t count = ids.numElements();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t id = readIndex(ids, i);
    if (id < -vocab || id >= vocab)
      fatal("embedding: token id " + std::to_string(id) +
            " is outside the table's " + std::to_string(vocab) + " rows");
  }
  const std::size_t row =
      static_cast<std::size_t>(hidden) * byteWidth(table.dtype);
  const auto *src = static_cast<const unsigned char *>(table.data);
  auto *dst = static_cast<unsigned char *>(out.data);
#pragma omp parallel for schedule(static) if (count * hidden >                 \
                                              kParallelThreshold)
  for (std::int64_t i = 0; i < count; ++i) {
    std::int64_t id = readIndex(ids, i);
    if (id < 0)
      id += vocab;
    std::memcpy(dst + i * row, src + id * row, row);
  }
}

void iota(const TensorRef &out, std::int64_t start, std::int64_t delta) {
  const std::int64_t n = out.numElements();
  for (std::int64_t i = 0; i < n; ++i) {
    if (out.dtype == DType::I32)
      out.as<std::int32_t>()[i] = static_cast<std::int32_t>(start + i * delta);
    else
      out.as<std::int64_t>()[i] = start + i * delta;
  }
}

void fillIntegers(const TensorRef &out, const std::int64_t *values, int count) {
  for (int i = 0; i < count; ++i) {
    if (out.dtype == DType::I32)
      out.as<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    else
      out.as<std::int64_t>()[i] = values[i];
  }
}

} // namespace meshc::rt::cpu
