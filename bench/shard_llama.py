#!/usr/bin/env python3
"""Benchmark: `meshc compile --emit sharded` of a Llama-3-70B-shaped model.

Usage: bench/shard_llama.py --meshc build/bin/meshc [--layers 80] [--out DIR]

Builds the Llama graph of models/llama.py with Llama-3-70B sizes (80 layers,
d=8192, GQA 64/8 heads, FFN 28672, vocabulary 128256, bf16 weights as a
sparse external-data file, batch 2, sequence 128) and times import, the graph
pipeline and the sharding pipeline (plan, partition, pipeline stages,
verify) for each mesh, printing wall time, peak RSS, the collectives of the
SPMD program (each stage function's counted once) and, with pp, the layers
(attentions) of each pipeline stage; then `--emit ranks` (every rank's
program, grouped into roles) for the meshes of RANK_MESHES.
"""
import argparse
import collections
import os
import re
import subprocess
import sys

from onnx import TensorProto

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import llama  # noqa: E402
from import_llama import SparseWeights, measure  # noqa: E402

LLAMA3_70B = dict(d=8192, heads=64, kv_heads=8, ffn=28672, vocab=128256, seq=128, batch=2)
MESHES = ["tp=8", "dp=2,tp=8", "tp=8 --sequence-parallel", "pp=2,tp=8",
          "pp=2,tp=8 --microbatches 2", "dp=2,pp=4,tp=8"]
# Also timed with --emit ranks (every rank's program, grouped into roles).
RANK_MESHES = ["pp=2,tp=8", "dp=2,pp=4,tp=8"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--layers", type=int, default=80)
    ap.add_argument("--out", default="build/bench/llama70b")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    weights = SparseWeights()
    model = llama.build(llama.Config(layers=args.layers, **LLAMA3_70B), weights,
                        matmul_dtype=TensorProto.BFLOAT16)
    path = os.path.join(args.out, "model.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(args.out, "weights.bin"), "wb") as f:
        f.truncate(weights.offset)  # sparse: meshc never reads the bytes
    print(f"{args.layers} layers, {len(model.graph.node)} nodes, "
          f"{weights.offset / 1e9:.0f} GB of weights")
    print(f"{'mesh':<26} {'time (s)':>8} {'RSS (MB)':>8}  collectives")

    def compile_(mesh, emit):
        """Times one `meshc compile --emit EMIT`; returns (s, MB, the IR)."""
        out = os.path.join(args.out, emit + ".mlir")
        secs, rss = measure([args.meshc, "compile", path, "--emit", emit,
                             "-o", out, "--mesh"] + mesh.split())
        with open(out) as f:
            return secs, rss, f.read()

    for mesh in MESHES:
        secs, rss, text = compile_(mesh, "sharded")
        counts = collections.Counter(re.findall(r"= shard\.([a-z_]+)", text))
        # Layers (attentions) per pipeline stage function.
        stages = [part.count("dfg.attention ")
                  for part in re.split(r"func\.func private @main_stage\d+", text)[1:]]
        print(f"{mesh:<26} {secs:>8.2f} {rss:>8.0f}  "
              + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
              + (f"; layers per stage {'/'.join(map(str, stages))}" if stages else ""))
    for mesh in RANK_MESHES:
        secs, rss, text = compile_(mesh, "ranks")
        roles = len(re.findall(r"module @role\d+", text))
        print(f"{mesh + ' --emit ranks':<26} {secs:>8.2f} {rss:>8.0f}  "
              f"{roles} roles")


if __name__ == "__main__":
    main()
