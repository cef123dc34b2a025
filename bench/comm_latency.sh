#!/bin/bash
# all_reduce latency on 2 ranks of one node: meshc's runtime call (what a tp
# rank program makes per shard.all_reduce) next to a blocking MPI_Allreduce.
# Usage: bash bench/comm_latency.sh [BUILD_DIR] [ITERATIONS]
set -euo pipefail
build=${1:-build}
iterations=${2:-500}
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
exec mpirun "${root[@]}" --oversubscribe --bind-to none -np 2 \
  "$build/bin/meshc-bench-comm" "$iterations"
