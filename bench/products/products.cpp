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
//===----------------------------------------------------------------------===//
#include "meshc/runtime/kernels.h"
#include "test/unit/runtime/HostTensor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

} // namespace

int main(int argc, char **argv) {
  int reps = 20;
  std::vector<std::int64_t> rowCounts{1, 4};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc) {
      rowCounts.clear();
      for (char *p = std::strtok(argv[++i], ","); p;
           p = std::strtok(nullptr, ","))
        rowCounts.push_back(std::max(1, std::atoi(p)));
    } else {
      std::fprintf(stderr,
                   "usage: meshc-bench-products [--reps N] [--rows 1,4]\n");
      return 2;
    }
  }
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
