#!/usr/bin/env bash
# meshc — scripts/fuzz.sh: runs the front end's fuzzer (`make fuzz`, docs/testing.md).
#
#   scripts/fuzz.sh BUILD_DIR SECONDS [libFuzzer flags...]
#
# BUILD_DIR is a build configured with -DMESHC_FUZZ=ON (clang, ASan + UBSan) in which
# meshc-fuzz-frontend is built. The seeds (scripts/fuzz_seeds.py) go to BUILD_DIR/fuzz/seeds
# once; what the run adds to the corpus stays in BUILD_DIR/fuzz/corpus for the next run;
# a crashing, leaking, slow or memory-hungry input is kept in BUILD_DIR/fuzz/artifacts/ and
# the run stops there, with status 1. The log is BUILD_DIR/fuzz/last.log; its last lines are
# libFuzzer's figures (executions, coverage, corpus). Reproduce a finding with
#   MESHC_FUZZ_VERBOSE=1 BUILD_DIR/bin/meshc-fuzz-frontend ARTIFACT
# or by `meshc compile ARTIFACT --mesh M --emit sharded` with the mesh the verbose run names.
set -euo pipefail

(($# >= 2)) || { echo "usage: scripts/fuzz.sh BUILD_DIR SECONDS [libFuzzer flags...]" >&2; exit 2; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$1
seconds=$2
shift 2
fuzzer=$build/bin/meshc-fuzz-frontend
[[ -x $fuzzer ]] || { echo "fuzz.sh: $fuzzer is not built (make fuzz builds it)" >&2; exit 2; }
python=${MESHC_VENV:-$repo/.venv}/bin/python

work=$build/fuzz
mkdir -p "$work/corpus" "$work/artifacts"
if [[ ! -f $work/seeds/.complete ]]; then
  rm -rf "$work/seeds"
  "$python" "$repo/scripts/fuzz_seeds.py" "$work/seeds"
  touch "$work/seeds/.complete"
fi

# Leaks are findings too. A model is at most 1 MB (the corpus' largest is 0.75 MB); an
# input may take 30 s and 4 GB before it counts as a hang or a runaway allocation.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
echo "fuzz.sh: $fuzzer for ${seconds}s; corpus $work/corpus, seeds $work/seeds"
# The run uses a copy, so that rebuilding meshc while it runs does not pull the binary from
# under the forked jobs.
cp "$fuzzer" "$work/meshc-fuzz-frontend"
fuzzer=$work/meshc-fuzz-frontend
before=$(ls "$work/artifacts" | wc -l)
status=0
"$fuzzer" -max_total_time="$seconds" -max_len=1048576 -timeout=30 -rss_limit_mb=4096 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 -reload=0 \
  "$@" "$work/corpus" "$work/seeds" >"$work/last.log" 2>&1 || status=$?
grep -E '^#[0-9]+.*(DONE|pulse|oom/timeout/crash)|stat::|ERROR|SUMMARY' "$work/last.log" | tail -12
# With -fork and -ignore_crashes libFuzzer goes on past a finding and exits 0: what it
# kept in artifacts/ tells.
found=$(($(ls "$work/artifacts" | wc -l) - before))
if ((status != 0 || found > 0)); then
  ls -t "$work/artifacts" | head -n "$((found > 0 ? found : 1))" | sed "s|^|fuzz.sh: finding: $work/artifacts/|" >&2
  echo "fuzz.sh: a finding (status $status); see $work/last.log and $work/artifacts/" >&2
  exit 1
fi
echo "fuzz.sh: no findings in ${seconds}s"
