#!/usr/bin/env bash
# meshc — scripts/demo.sh BUILD_DIR
#
# meshc's main job, as far as it exists today, on the bundled tiny GPT-2:
#   1. models/gpt2_tiny.py writes the ONNX model (TorchScript-export idioms)
#      and onnxruntime's reference outputs for a prompt;
#   2. `meshc import --optimize` turns it into verified dfg IR, weights as
#      references into the model file, the exporter's idioms raised to
#      transformer-level ops (one dfg.attention per layer, ...);
#   3. `meshc-eval` runs the IR with meshc's reference evaluator;
#   4. the logits are compared with onnxruntime's, and the next-token
#      predictions of both printed.
#   5. `meshc compile --emit sharded` shards it for tp=2 and meshc-eval runs
#      both ranks in one process;
#   6. `meshc compile --mesh tp=2` builds the per-rank executables, weight
#      shards and manifest;
#   7. `meshc run` launches them under mpirun; their next-token predictions
#      and largest difference from onnxruntime are printed.
# Run by `make demo` after the build.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}
[[ $build == /* ]] || build=$repo/$build
bin=$build/bin
python=${MESHC_VENV:-$repo/.venv}/bin/python
work=$build/demo/gpt2_tiny

for tool in meshc meshc-eval; do
  [[ -x $bin/$tool ]] || {
    echo "demo: $bin/$tool is missing; run 'make build' first" >&2
    exit 1
  }
done
[[ -x $python ]] || {
  echo "demo: $python is missing; run scripts/bootstrap.sh first" >&2
  exit 1
}

echo "== $("$bin/meshc" --version)"
echo "== 1. models/gpt2_tiny.py: a 2-layer GPT-2 (d=32, 4 heads, vocabulary 64) as torch.onnx exports it,"
echo "   shape arithmetic (Shape, Gather, Concat, Range, Slice) included"
"$python" "$repo/models/gpt2_tiny.py" --out "$work"

echo "== 2. meshc import --optimize"
"$bin/meshc" import --optimize "$work/model.onnx" -o "$work/model.mlir"
ops=$(grep -c ' = dfg\.' "$work/model.mlir")
weights=$(grep -c 'dfg.weight' "$work/model.mlir")
echo "   $work/model.mlir: $ops dfg ops, $weights weight references into model.onnx (no weight bytes copied);"
echo "   the shape arithmetic folded to constants at import; transformer-level ops:"
for op in embedding layer_norm attention linear gelu; do
  echo "     dfg.$op: $(grep -c " = dfg\.$op " "$work/model.mlir")"
done
grep -m1 'func.func @main' "$work/model.mlir" | sed 's/^ */   /'

echo "== 3. meshc-eval (reference evaluator) on the prompt"
"$bin/meshc-eval" "$work/model.mlir" --weights-dir "$work" \
  --input "input_ids=$work/inputs/input_ids.npy" --output-dir "$work/meshc_out"
echo "   prompt: $("$python" -c "import numpy as np; print(np.load('$work/inputs/input_ids.npy').ravel().tolist())")"

echo "== 4. compared with onnxruntime"
"$python" "$repo/models/compare.py" --reference "$work/reference" --output "$work/meshc_out" |
  sed 's/^/   /'

echo "== 5. meshc compile --mesh tp=2 --emit sharded: the SPMD program of two ranks"
"$bin/meshc" compile "$work/model.onnx" --mesh tp=2 --emit sharded -o "$work/tp2.mlir"
echo "   $work/tp2.mlir: per layer two shard.all_reduce, one more for the vocabulary-parallel embeddings:"
grep -oE '= shard\.[a-z_]+' "$work/tp2.mlir" | sort | uniq -c | sed 's/^ */     /'
"$bin/meshc-eval" "$work/tp2.mlir" --weights-dir "$work" \
  --input "input_ids=$work/inputs/input_ids.npy" --output-dir "$work/tp2_out"
echo "   both ranks run in one process (meshc-eval), with in-memory collectives; compared with onnxruntime:"
"$python" "$repo/models/compare.py" --reference "$work/reference" --output "$work/tp2_out" |
  sed 's/^/   /'

echo "== 6. meshc compile --mesh tp=2: per-rank executables, weight shards, manifest"
rm -rf "$work/tp2-exe"
"$bin/meshc" compile "$work/model.onnx" --mesh tp=2 -o "$work/tp2-exe" | sed 's/^/   /'
for role in "$work"/tp2-exe/role*; do
  echo "   $(basename "$role"): $(du -h "$role" | cut -f1) executable," \
    "weights $(du -h "$work/tp2-exe/weights/$(basename "$role").safetensors" | cut -f1)"
done
echo "== 7. meshc run: both ranks under mpirun, collectives over MPI; compared with onnxruntime"
"$bin/meshc" run "$work/tp2-exe" --input "input_ids=$work/inputs/input_ids.npy" \
  --output-dir "$work/tp2-exe-out"
"$python" "$repo/models/compare.py" --reference "$work/reference" --output "$work/tp2-exe-out" |
  sed 's/^/   /'

echo "== 8. the same GPT-2 exported with dynamic axes: one set of executables for every size"
dyn="$work/dynamic"
rm -rf "$dyn"
"$python" "$repo/models/gpt2_tiny.py" --out "$dyn/a" --dynamic --batch 2 --seq 5 >/dev/null
"$python" "$repo/models/gpt2_tiny.py" --out "$dyn/b" --dynamic --batch 1 --seq 11 >/dev/null
"$bin/meshc" compile "$dyn/a/model.onnx" --mesh tp=2 -o "$dyn/exe" >/dev/null
echo "   meshc compile, no sizes given; the manifest's bounds (the --max-batch, --max-seq defaults):" \
  "$("$python" -c "import json; m = json.load(open('$dyn/exe/manifest.json')); print(', '.join(k + ' <= ' + str(v['max']) for k, v in m['symbols'].items()))")"
for size in a b; do
  "$bin/meshc" run "$dyn/exe" --input "input_ids=$dyn/$size/inputs/input_ids.npy" \
    --output-dir "$dyn/$size/out"
  echo "   input_ids $("$python" -c "import numpy as np; print(list(np.load('$dyn/$size/inputs/input_ids.npy').shape))"):" \
    "$("$python" "$repo/models/compare.py" --reference "$dyn/$size/reference" --output "$dyn/$size/out" | sed -n 1p)"
done

echo "== 9. meshc generate: prefill and every decoding step in one launch, the KV cache kept on both ranks"
"$python" "$repo/models/gpt2_tiny.py" --out "$dyn/kv" --dynamic --past 2 >/dev/null
"$bin/meshc" compile "$dyn/kv/model.onnx" --mesh tp=2 -o "$dyn/kv-exe" >/dev/null
"$python" -c "import numpy as np; np.save('$dyn/prompt.npy', np.array([[5, 17, 33, 2, 9], [8, 1, 44, 12, 7]]))"
"$bin/meshc" generate "$dyn/kv-exe" --prompt-ids "$dyn/prompt.npy" --max-new-tokens 8 \
  --output-ids "$dyn/new.npy" | sed 's/^/   /'
"$python" "$repo/models/generate_reference.py" "$dyn/kv/model.onnx" --prompt-ids "$dyn/prompt.npy" \
  --max-new-tokens 8 --output-ids "$dyn/reference.npy"
echo "   the same ids as onnxruntime's token loop: $("$python" -c "import numpy as np; print(np.array_equal(np.load('$dyn/new.npy'), np.load('$dyn/reference.npy')))")"
