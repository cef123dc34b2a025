#!/usr/bin/env bash
# meshc — scripts/bootstrap.sh
#
# Installs everything meshc needs to build and test on Debian 12, and nothing it does not.
# Idempotent: a package that is present is skipped; a second run installs nothing.
# Run by `make demo` and `make test` before they build; safe to run by hand.
#
#   system packages (apt):  LLVM/MLIR 22, protobuf + libonnx, OpenMPI, OpenBLAS, GoogleTest,
#                           nlohmann-json, cmake, ninja, ccache, python3-venv, iproute2, nftables,
#                           slurmctld, slurmd, slurm-client, munge
#   Python packages (pip):  onnx, onnxruntime, numpy into .venv/ (git-ignored);
#                           onnxruntime-genai into .venv-genai/ (git-ignored)
#
# Options:
#   --fuzz             also the sanitizer and fuzzing toolchain of `make fuzz` / `make sanitize`
#                      (clang-22, libFuzzer, clang's OpenMP runtime); not needed by `make test`
#
# Environment:
#   MESHC_SKIP_APT=1   do not touch system packages (e.g. no root, packages provided otherwise)
#   MESHC_VENV=DIR     where the Python environment lives (default: <repo>/.venv)
#   MESHC_GENAI_VENV=DIR  where onnxruntime-genai's lives (default: <repo>/.venv-genai)
set -euo pipefail

say() { printf 'bootstrap: %s\n' "$*"; }
die() {
  printf 'bootstrap: error: %s\n' "$*" >&2
  exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${MESHC_VENV:-$repo/.venv}

# --- system packages ---------------------------------------------------------------------------
# Each line: package — why meshc needs it. Keep in sync with docs/dependencies.md.
apt_packages=(
  cmake                # build system
  ninja-build          # fast incremental builds
  g++                  # compiles meshc and, at `meshc compile`, the generated per-rank C++
  ccache               # speeds up rebuilds on small machines
  make                 # the two README entry points
  pkg-config           # locates OpenBLAS / OpenMPI flags
  llvm-22-dev          # LLVM 22 libraries and CMake config
  llvm-22-tools        # FileCheck, not, count (lit tests)
  libmlir-22-dev       # MLIR 22 libraries, headers, CMake config, mlir-tblgen
  mlir-22-tools        # mlir-tblgen and mlir-opt/mlir-translate
  libprotobuf-dev      # ONNX protobuf parsing
  protobuf-compiler    # protoc (ONNX .proto handling)
  libonnx-dev          # libonnx_proto: the ONNX protobuf schema, compiled
  libonnx-testdata     # ONNX backend node tests (conformance runner)
  libopenmpi-dev       # MPI collectives for the cpu target
  openmpi-bin          # mpirun, to launch per-rank executables
  libopenblas-dev      # GEMV (decoding steps) for the cpu target
  libdnnl-dev          # oneDNN: GEMM for the cpu target, kernels for the CPU it runs on
  libgtest-dev         # GoogleTest (unit tests)
  nlohmann-json3-dev   # manifest.json reading and writing
  libxxhash-dev        # xxh64 checksums of weight shards (compiler writes, runtime verifies)
  python3-venv         # the .venv for the Python test packages
  python3-pip          # pip inside the .venv
  iproute2             # `ip netns`: the hosts of the multi-host test (scripts/netns_hosts.sh)
  nftables             # `nft`: packet loss on a host's link in the multi-host test
  slurmctld            # Slurm's controller, slurmd its node daemon, slurm-client srun and
  slurmd               #   sinfo, munge its authentication: the one-machine cluster of the
  slurm-client         #   Slurm test (scripts/slurm_local.sh, `meshc run --launcher srun`)
  munge
)

# `make fuzz` and `make sanitize` only (docs/testing.md):
fuzz_packages=(
  clang-22             # builds the fuzz target (libFuzzer needs clang)
  libfuzzer-22-dev     # libFuzzer, the coverage-guided engine of meshc-fuzz-frontend
  libclang-rt-22-dev   # clang's AddressSanitizer / UBSan runtimes
  libomp-22-dev        # OpenMP for clang (the fuzz build configures the whole project)
)
for arg in "$@"; do
  case $arg in
  --fuzz) apt_packages+=("${fuzz_packages[@]}") ;;
  *) die "unknown option '$arg' (known: --fuzz)" ;;
  esac
done

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  say "system packages: all ${#apt_packages[@]} present"
elif [[ ${MESHC_SKIP_APT:-0} == 1 ]]; then
  die "missing system packages and MESHC_SKIP_APT=1: ${missing[*]}"
else
  say "installing system packages: ${missing[*]}"
  sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || die "need root or sudo to install: ${missing[*]}"
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable?)"
  for p in "${missing[@]}"; do
    apt-cache show "$p" >/dev/null 2>&1 ||
      die "package '$p' is not available from the configured apt sources (meshc needs Debian 12 with LLVM 22 packages)"
  done
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    die "apt-get install failed for: ${missing[*]}"
  say "installed ${#missing[@]} system package(s)"
fi

# --- Python test environment -------------------------------------------------------------------
# Pinned so that reference outputs are reproducible. onnxruntime is the numerical reference for
# whole models; onnx + numpy write the test models in models/. (lit and FileCheck come from llvm-22-tools.)
py_packages=(numpy==2.2.6 onnx==1.19.1 onnxruntime==1.23.2)

sys_python=/usr/bin/python3
[[ -x $sys_python ]] || sys_python=$(command -v python3) || die "python3 not found"

# python_env DIR PACKAGE...: a venv at DIR holding exactly these pinned packages (a stamp file
# records what was installed, so a second run installs nothing).
python_env() {
  local dir=$1
  shift
  if [[ ! -x $dir/bin/python ]]; then
    say "creating Python environment $dir"
    "$sys_python" -m venv "$dir" || die "could not create $dir (is python3-venv installed?)"
  fi
  local stamp=$dir/.meshc-packages want
  want=$(printf '%s\n' "$@")
  if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
    say "python packages: all $# present in $dir"
  else
    say "installing python packages into $dir: $*"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@" ||
      die "pip install failed for: $* (is PyPI reachable?)"
    printf '%s\n' "$want" >"$stamp"
  fi
}

python_env "$venv" "${py_packages[@]}"

# --- onnxruntime-genai's environment -----------------------------------------------------------
# The generator meshc generate is checked against on the onnxruntime-genai builder's exports
# (test/e2e/real_models_genai.test, models/genai_reference.py). onnxruntime-genai pins its own,
# newer onnxruntime, so it lives apart from the test environment's pinned one.
python_env "${MESHC_GENAI_VENV:-$repo/.venv-genai}" numpy==2.2.6 onnxruntime-genai==0.18.0

say "ready"
