#!/usr/bin/env python3
"""Benchmark: `meshc compile` of real exporters' models, front end and whole.

Usage: bench/compile_corpus.py --meshc build/bin/meshc
           [--corpus models/real/corpus] [--models a,b,...] [--meshes tp=1,...]
           [--out DIR]

For each export of the committed corpus named in --models (default: six of
different families and exporters) and each mesh, times with /usr/bin/time:
  - the front end: `meshc compile --emit sharded` (import, the graph
    pipeline, sharding and pipeline stages; the dimensions kept symbolic);
  - the whole compile: `meshc compile` to executables (the front end, C++
    generation, g++ per role, weight shards and the manifest);
and prints a Markdown table of wall times and peak RSS, with the lines of
generated C++ (`--emit cpp`) per mesh. The difference between the two
columns is the C++ build, which `meshc compile` runs as many roles at once
as the machine has cores (MESHC_COMPILE_JOBS). Run it on an idle machine:
the figures are wall-clock.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from import_llama import measure  # noqa: E402

DEFAULT_MODELS = ["gpt2-torchscript", "llama-dynamo", "qwen3_moe-dynamo",
                  "deepseek_v3-dynamo", "bert-ortopt", "gemma2-genai"]
DEFAULT_MESHES = ["tp=1", "tp=2", "pp=2", "dp=2,tp=2"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--corpus", default="models/real/corpus")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--meshes", default=";".join(DEFAULT_MESHES),
                    help="meshes separated by ';' (default: %(default)s)")
    ap.add_argument("--out", default="build/bench/compile")
    args = ap.parse_args()
    if not shutil.which("/usr/bin/time"):
        sys.exit("bench: /usr/bin/time is needed (Debian package 'time')")
    print("| export | mesh | front end (s) | RSS (MB) | whole compile (s) | RSS (MB) "
          "| generated C++ (lines) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        model = os.path.join(args.corpus, name, "model.onnx")
        if not os.path.exists(model):
            sys.exit(f"bench: {model} does not exist (see models/real/README.md)")
        for mesh in args.meshes.split(";"):
            out = os.path.join(args.out, name, mesh.replace("=", "").replace(",", "_"))
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            base = [args.meshc, "compile", model, "--mesh", mesh]
            front, front_rss = measure(base + ["--emit", "sharded", "-o",
                                               os.path.join(out, "sharded.mlir")])
            cpp = os.path.join(out, "ranks.cpp")
            measure(base + ["--emit", "cpp", "-o", cpp])
            with open(cpp) as f:
                lines = sum(1 for _ in f)
            whole, whole_rss = measure(base + ["-o", os.path.join(out, "exe")])
            print(f"| {name} | {mesh} | {front:.2f} | {front_rss:.0f} | {whole:.1f} "
                  f"| {whole_rss:.0f} | {lines} |", flush=True)


if __name__ == "__main__":
    main()
