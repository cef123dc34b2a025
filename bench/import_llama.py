#!/usr/bin/env python3
"""Benchmark: `meshc import` of a Llama-3-8B-shaped ONNX model.

Usage: bench/import_llama.py --meshc build/bin/meshc [--layers 32] [--out DIR]
                             [--dynamic]

Builds the Llama graph of models/llama.py with Llama-3-8B sizes (32 layers,
d=4096, GQA 32/8 heads, FFN 14336, vocabulary 128256, bf16 weights, batch 1,
sequence 128) and writes DIR/model.onnx, whose weights are external-data
references into DIR/weights.bin: a sparse file of the full size (~16 GB
apparent, no disk blocks), since meshc refers to weights and never reads them.
Then runs `meshc import` and `meshc import --optimize` under /usr/bin/time and
prints wall time and peak RSS, for the model and for one with a quarter of the
layers, to show how both scale. With --dynamic the model is the dynamic-axes
export (models/llama.py --dynamic: batch, sequence and past as dim_params,
every size through shape arithmetic), imported with symbolic dimensions.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import llama  # noqa: E402

LLAMA3_8B = dict(d=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, seq=128)


class SparseWeights:
    """bf16 (norm weights f32) initializers as external-data references into
    one file, laid out one after another; the bytes are never written."""

    def __init__(self):
        self.offset = 0
        self.tensors = []

    def add(self, name, shape, norm=False):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT if norm else TensorProto.BFLOAT16
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        length = int(np.prod(shape)) * (4 if norm else 2)
        for key, value in (("location", "weights.bin"), ("offset", str(self.offset)),
                           ("length", str(length))):
            t.external_data.add(key=key, value=value)
        self.offset += length
        self.tensors.append(t)
        return name


def measure(cmd):
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{r.stderr}")
    secs, kb = re.search(r"TIME ([\d.]+) (\d+)", r.stderr).groups()
    return float(secs), int(kb) / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--out", default="build/bench/llama")
    ap.add_argument("--dynamic", action="store_true",
                    help="the dynamic-axes export, imported with symbolic dimensions")
    args = ap.parse_args()
    print(f"{'layers':>6} {'nodes':>6} {'weights (GB)':>12} {'model.onnx (KB)':>15} "
          f"{'import (s)':>10} {'RSS (MB)':>8} {'--optimize (s)':>14} {'RSS (MB)':>8}")
    for layers in (max(1, args.layers // 4), args.layers):
        out = os.path.join(args.out, f"{layers}")
        os.makedirs(out, exist_ok=True)
        weights = SparseWeights()
        model = llama.build(llama.Config(layers=layers, dynamic=args.dynamic, **LLAMA3_8B),
                            weights, matmul_dtype=TensorProto.BFLOAT16)
        path = os.path.join(out, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        with open(os.path.join(out, "weights.bin"), "wb") as f:
            f.truncate(weights.offset)  # sparse: meshc never reads the bytes
        t, rss = measure([args.meshc, "import", path, "-o", os.devnull])
        to, rsso = measure([args.meshc, "import", "--optimize", path, "-o", os.devnull])
        print(f"{layers:>6} {len(model.graph.node):>6} {weights.offset / 1e9:>12.1f} "
              f"{os.path.getsize(path) / 1024:>15.0f} {t:>10.2f} {rss:>8.0f} {to:>14.2f} {rsso:>8.0f}")


if __name__ == "__main__":
    main()
