//===- allreduce_latency.cpp - all_reduce latency of the cpu runtime ------===//
//
// Part of meshc. Times rt::Comm::allReduceSum, the call a tp rank program
// makes for each shard.all_reduce, next to a plain blocking MPI_Allreduce on
// the same communicator, for f32 tensors from 64 B to 4 MB. Run under mpirun
// (bench/comm_latency.sh); rank 0 prints one line per size: the median and
// 90th percentile of each, in microseconds, over the timed iterations (each
// iteration starts after a barrier, so that the ranks enter together).
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/comm.h"

#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace meshc::rt;

namespace {

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

template <typename F> std::vector<double> timeEach(int iterations, F &&f) {
  std::vector<double> us;
  for (int i = -iterations / 10; i < iterations; ++i) { // 10% warm-up
    MPI_Barrier(MPI_COMM_WORLD);
    auto start = std::chrono::steady_clock::now();
    f();
    double t = std::chrono::duration<double, std::micro>(
                   std::chrono::steady_clock::now() - start)
                   .count();
    if (i >= 0)
      us.push_back(t);
  }
  return us;
}

} // namespace

int main(int argc, char **argv) {
  Comm &comm = Comm::init(&argc, &argv);
  int iterations = argc > 1 ? std::atoi(argv[1]) : 500;
  comm.setGrid({comm.size()});
  int group = comm.openGroup({0});
  if (comm.rank() == 0)
    std::printf("ranks %d, %d timed iterations per size (median / p90, us)\n"
                "%10s %22s %22s\n",
                comm.size(), iterations, "bytes", "meshc all_reduce",
                "MPI_Allreduce");
  for (std::int64_t elements : {16, 768, 3072, 98304, 1048576}) {
    std::vector<float> in(static_cast<std::size_t>(elements), 1.0f),
        out(in.size());
    TensorRef a = view(in.data(), DType::F32, {elements});
    TensorRef b = view(out.data(), DType::F32, {elements});
    std::vector<double> rt = timeEach(iterations, [&] {
      comm.allReduceSum(group, a, b, "bench all_reduce");
    });
    std::vector<double> mpi = timeEach(iterations, [&] {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(elements),
                    MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    if (comm.rank() == 0)
      std::printf("%10lld %10.1f / %9.1f %10.1f / %9.1f\n",
                  static_cast<long long>(elements * 4), percentile(rt, 0.5),
                  percentile(rt, 0.9), percentile(mpi, 0.5),
                  percentile(mpi, 0.9));
  }
  Comm::finalize();
  return 0;
}
