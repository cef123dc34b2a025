//===- products.cpp - decode-step products of the cpu kernels -------------===//
//
// Part of meshc. Times rt::cpu linear (y = x . W, W [k, n] as the exporters
// write MatMul weights) for the rows of a decoding step (1 and 4) at the
// shapes of a 1B-class Llama (d 2048, MLP 8192, vocabulary 128256), with f32
// and bf16 weights, on the threads OpenMP is given. Each shape cycles through
// enough copies of its weight (256 MB at least) that every call streams the
// weight from memory, as a step does. Prints one line per case: the median
// and best time per product and the weight bytes read per second at the
// median. bench/cpu_products.sh runs it.
//
// With --prefill it times instead the products of a GPT-2-small prefill
// step (128 rows, f32) two ways each, in alternating rounds: the up
// projection and its GELU, and the down projection and its residual add, as
// a linear and a separate elementwise kernel against the linear with that
// epilogue (LinearOptions); the tied lm_head (a transposed [50257, 768]
// weight) by sgemm against the copy repacked once for oneDNN's matmul
// primitive (LinearOptions::constantWeight).
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"
#include "test/unit/runtime/HostTensor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using meshc::rt::DType;
using meshc::test::HostTensor;

namespace {

HostTensor randomTensor(DType dtype, std::vector<std::int64_t> shape,
                        std::mt19937 &rng) {
  HostTensor t(dtype, std::move(shape));
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (std::int64_t i = 0; i < t.size(); ++i)
    t.set(i, dist(rng));
  return t;
}

struct Case {
  const char *name;
  std::int64_t k, n;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F> double timeMs(F f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

/// --prefill: each product of a GPT-2-small prefill step two ways, the
/// ways alternating within each of `reps` rounds.
int prefill(int reps) {
  namespace k = meshc::rt::cpu;
  using meshc::rt::TensorRef;
  using meshc::rt::cpu::BinaryOp;
  using meshc::rt::cpu::UnaryOp;
  std::mt19937 rng(7);
  const std::int64_t rows = 128, d = 768, ff = 3072, vocab = 50257;
  HostTensor x = randomTensor(DType::F32, {1, rows, d}, rng);
  HostTensor h = randomTensor(DType::F32, {1, rows, ff}, rng);
  HostTensor residual = randomTensor(DType::F32, {1, rows, d}, rng);
  HostTensor wUp = randomTensor(DType::F32, {d, ff}, rng),
             bUp = randomTensor(DType::F32, {ff}, rng);
  HostTensor wDown = randomTensor(DType::F32, {ff, d}, rng),
             bDown = randomTensor(DType::F32, {d}, rng);
  HostTensor table = randomTensor(DType::F32, {vocab, d}, rng);
  HostTensor up(DType::F32, {1, rows, ff}), act(DType::F32, {1, rows, ff});
  HostTensor down(DType::F32, {1, rows, d}), sum(DType::F32, {1, rows, d});
  HostTensor logits(DType::F32, {1, rows, vocab});
  const TensorRef bu = bUp.ref(), bd = bDown.ref(), res = residual.ref();
  k::LinearOptions gelu;
  gelu.constantWeight = true;
  gelu.hasUnary = true;
  gelu.unary = UnaryOp::GeluTanh;
  k::LinearOptions add;
  add.constantWeight = true;
  add.other = &res;
  add.binary = BinaryOp::Add;
  k::LinearOptions packed;
  packed.constantWeight = true;
  struct Way {
    const char *name;
    std::function<void()> run;
    std::vector<double> ms;
  };
  Way ways[] = {
      {"up 768x3072, then gelu",
       [&] {
         k::linear(x.ref(), wUp.ref(), &bu, false, up.ref());
         k::unary(UnaryOp::GeluTanh, up.ref(), act.ref());
       },
       {}},
      {"up 768x3072 with gelu",
       [&] { k::linear(x.ref(), wUp.ref(), &bu, false, gelu, act.ref()); },
       {}},
      {"down 3072x768, then add",
       [&] {
         k::linear(h.ref(), wDown.ref(), &bd, false, down.ref());
         k::binary(BinaryOp::Add, down.ref(), res, sum.ref());
       },
       {}},
      {"down 3072x768 with add",
       [&] { k::linear(h.ref(), wDown.ref(), &bd, false, add, sum.ref()); },
       {}},
      {"lm_head^T 50257x768 sgemm",
       [&] { k::linear(x.ref(), table.ref(), nullptr, true, logits.ref()); },
       {}},
      {"lm_head^T 50257x768 packed",
       [&] {
         k::linear(x.ref(), table.ref(), nullptr, true, packed, logits.ref());
       },
       {}},
  };
  for (int r = -2; r < reps; ++r)
    for (Way &w : ways) {
      const double t = timeMs(w.run);
      if (r >= 0)
        w.ms.push_back(t);
    }
  std::printf("threads %d, %lld rows\n", omp_get_max_threads(),
              static_cast<long long>(rows));
  std::printf("%-30s %10s %10s\n", "product", "median ms", "best ms");
  for (Way &w : ways)
    std::printf("%-30s %10.3f %10.3f\n", w.name, median(w.ms),
                *std::min_element(w.ms.begin(), w.ms.end()));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  int reps = 20;
  bool doPrefill = false;
  std::vector<std::int64_t> rowCounts{1, 4};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--prefill"))
      doPrefill = true;
    else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc) {
      rowCounts.clear();
      for (char *p = std::strtok(argv[++i], ","); p;
           p = std::strtok(nullptr, ","))
        rowCounts.push_back(std::max(1, std::atoi(p)));
    } else {
      std::fprintf(stderr,
                   "usage: meshc-bench-products [--reps N] [--rows 1,4] "
                   "[--prefill]\n");
      return 2;
    }
  }
  if (doPrefill)
    return prefill(reps);
  const Case cases[] = {{"qkv 2048x3072", 2048, 3072},
                        {"o 2048x2048", 2048, 2048},
                        {"up 2048x8192", 2048, 8192},
                        {"down 8192x2048", 8192, 2048},
                        {"lm_head 2048x128256", 2048, 128256}};
  std::mt19937 rng(7);
  std::printf("threads %d\n", omp_get_max_threads());
  std::printf("%-22s %-5s %4s %10s %10s %8s\n", "product", "dtype", "rows",
              "median ms", "best ms", "GB/s");
  for (const Case &c : cases)
    for (DType dtype : {DType::F32, DType::BF16}) {
      const std::int64_t bytes =
          c.k * c.n * static_cast<std::int64_t>(meshc::rt::byteWidth(dtype));
      const std::int64_t copies =
          std::max<std::int64_t>(1, ((std::int64_t(256) << 20) + bytes - 1) /
                                        bytes);
      std::vector<HostTensor> weights;
      for (std::int64_t i = 0; i < copies; ++i)
        weights.push_back(randomTensor(dtype, {c.k, c.n}, rng));
      for (std::int64_t rows : rowCounts) {
        HostTensor in = randomTensor(DType::F32, {1, rows, c.k}, rng);
        HostTensor out(DType::F32, {1, rows, c.n});
        std::vector<double> ms;
        for (int r = -2; r < reps; ++r) {
          const HostTensor &w = weights[static_cast<std::size_t>(
              (r + 2) % static_cast<int>(copies))];
          auto t0 = std::chrono::steady_clock::now();
          meshc::rt::cpu::linear(in.ref(), w.ref(), nullptr, false,
                                 out.ref());
          auto t1 = std::chrono::steady_clock::now();
          if (r >= 0)
            ms.push_back(
                std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        const double median = ms[ms.size() / 2];
        std::printf("%-22s %-5s %4lld %10.3f %10.3f %8.1f\n", c.name,
                    dtype == DType::F32 ? "f32" : "bf16",
                    static_cast<long long>(rows), median, ms.front(),
                    static_cast<double>(bytes) / (median * 1e6));
        std::fflush(stdout);
      }
    }
  return 0;
}
