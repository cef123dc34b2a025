#!/usr/bin/env bash
# meshc — scripts/demo.sh BUILD_DIR
#
# meshc's main job, as far as it exists today: take the bundled model graph
# (models/tiny_attention.mlir, dfg as an importer emits it), verify it, infer
# every tensor's shape and clean the graph up, then print the result and a
# one-line summary. Run by `make demo` after the build.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
[[ $build == /* ]] || build=$repo/$build
bin=$build/bin
model=$repo/models/tiny_attention.mlir

for tool in meshc meshc-opt; do
  [[ -x $bin/$tool ]] || {
    echo "demo: $bin/$tool is missing; run 'make build' first" >&2
    exit 1
  }
done

echo "== $("$bin/meshc" --version)"
echo "== input: models/tiny_attention.mlir ($(grep -c ' = dfg\.' "$model") dfg ops," \
  "$(grep -o 'tensor<[^>]*?[^>]*>' "$model" | wc -l) tensor types with unknown dimensions)"
echo "== meshc-opt --meshc-graph-infer-shapes --canonicalize --cse"
out=$("$bin/meshc-opt" "$model" --meshc-graph-infer-shapes --canonicalize --cse)
echo "$out"

dynamic=$(grep -o 'tensor<[^>]*?[^>]*>' <<<"$out" | wc -l || true)
ops=$(grep -c ' = dfg\.' <<<"$out")
weights=$(grep -c 'dfg.weight' <<<"$out")
signature=$(grep -o 'func.func @attention_block.*{' <<<"$out")
echo "== result: $ops dfg ops ($weights weight references, no weight bytes read)," \
  "$dynamic tensor types with unknown dimensions"
echo "== signature: ${signature% \{}"
if ((dynamic != 0)); then
  echo "demo: shape inference left $dynamic unknown dimensions" >&2
  exit 1
fi
echo "== next stages (ONNX import, sharding over a mesh, per-rank executables) are"
echo "   not implemented yet; 'meshc --help' lists the commands they will fill."
