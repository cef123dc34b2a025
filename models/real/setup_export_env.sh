#!/usr/bin/env bash
# meshc — models/real/setup_export_env.sh
#
# Sets up the Python environments that export the real-model corpus
# (models/real/export_corpus.py). Not part of `make test`: the exported
# models and their references are committed, so tests never need these.
# Several GB (PyTorch's wheels from PyPI carry CUDA libraries).
#
#   .venv-export   torch, transformers 5, onnx, onnxscript (torch.onnx's
#                  dynamo exporter), onnxruntime (references and the
#                  transformer optimizer), onnxruntime-genai (its builder)
#   .venv-optimum  optimum-onnx, which pins transformers < 4.58, so it needs
#                  an environment of its own (onnx-ir: onnxruntime's 4-bit
#                  quantizer imports it, for the optimum_hub_* variants)
#   .venv-export-old  an older exporter: torch 2.6 (whose dynamo exporter
#                  leaves slice bounds unfolded and writes torch.split as
#                  SplitToSequence) and transformers 4.48 (the attention and
#                  mask code before transformers 5), with optimum 1.24 (the
#                  Optimum before optimum-onnx) and onnxruntime-genai 0.6's
#                  builder; export_corpus.py --tag _torch26 (or _genai06)
#                  names its exports apart
#
# Usage: bash models/real/setup_export_env.sh [export|optimum|old|all]   (default all)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
which=${1:-all}
say() { printf 'setup_export_env: %s\n' "$*"; }

make_env() {
  local dir=$1
  shift
  if [[ ! -x $dir/bin/python ]]; then
    say "creating $dir"
    python3 -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install -q --upgrade pip
  say "installing into $dir: $*"
  "$dir/bin/python" -m pip install -q "$@"
}

if [[ $which == export || $which == all ]]; then
  make_env "$repo/.venv-export" "torch==2.15.*" "transformers==5.23.*" \
    "onnx" "onnxscript" "onnxruntime" "onnxruntime-genai==0.18.*" "numpy"
fi
if [[ $which == optimum || $which == all ]]; then
  make_env "$repo/.venv-optimum" "optimum-onnx==0.1.*" "onnxruntime" "onnx-ir" "numpy"
fi
if [[ $which == old || $which == all ]]; then
  make_env "$repo/.venv-export-old" "torch==2.6.0" "transformers==4.48.3" "onnx==1.17.0" \
    "onnxscript==0.2.5" "onnxruntime==1.20.1" "numpy==1.26.4" "optimum==1.24.0" \
    "onnxruntime-genai==0.6.0"
fi
say "ready"
