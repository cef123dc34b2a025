#!/bin/bash
# A decoding step's products on the cpu target: 1 and 4 rows by the weights
# of a 1B-class Llama, f32 and bf16, timed per product with the weight bytes
# read per second (bench/products/products.cpp).
# Usage: bash bench/cpu_products.sh [BUILD_DIR] [THREADS] [REPS] [--prefill]
# (--prefill: a GPT-2-small prefill step's products, each with and without
# the linear's epilogue or packed weight)
set -euo pipefail
build=${1:-build}
export OMP_NUM_THREADS=${2:-2}
exec "$build/bin/meshc-bench-products" --reps "${3:-20}" "${@:4}"
