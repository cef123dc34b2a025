#!/usr/bin/env python3
"""Benchmark: a GPT-2-small forward step on the cpu target against onnxruntime.

Usage: bench/cpu_gpt2.py --meshc build/bin/meshc [--threads T] [--repeat 20]
                         [--rounds 3] [--meshes tp=1,tp=2] [--past P]
                         [--dtype bf16] [--mpirun-args FLAGS ...] [--out DIR]

Builds the graph of models/gpt2_tiny.py (the torch.onnx exporter's idioms,
checked against onnxruntime in the tests) at GPT-2-small sizes: 12 layers,
d=768, 12 heads, vocabulary 50257, 1024 positions, f32 weights with
GPT-2's initialisation scale (0.02), batch 1, sequence 128. With --past P
the step is one decoding step instead: one new token over a KV cache of P
positions (the past_key_values.* inputs, random values of the cache's scale,
[1, 12, P, 64] per layer), as the Hugging Face export of a cached step is.
The model is written once to DIR (default build/bench/gpt2_small/, or
build/bench/gpt2_small_past<P>/) and reused.

For each mesh it runs `meshc compile --target cpu` (wall time and the arena
bytes of the manifest's roles), checks the outputs of `meshc run` against
onnxruntime's with models/compare.py, then times, in R alternating rounds,
`meshc run --repeat N` (the forward step, timed inside rank 0 between
barriers: no start-up or weight load) and N calls of onnxruntime's
InferenceSession.run on the same input (graph optimisations ORT_ENABLE_ALL,
warm-up runs first). Reported: the median of the rounds' medians and the
fastest run of all. Threads are matched: meshc uses T threads in all
(ranks x T/ranks each), onnxruntime intra_op_num_threads = T. Each mesh is
timed once per --mpirun-args value: by default as `meshc run` launches it,
then with `--bind-to none`, since OpenMPI binds each rank of a job of at
most 2 ranks to one core, where all of that rank's threads then run.
Prints one markdown row per mesh and mpirun flags.

With --dtype bf16, meshc compiles with `--dtype bf16` (the products'
weights stored in bf16, computed in f32) and its outputs are checked
against onnxruntime on the model with those weights rounded to bf16
(models/bf16_reference.py, written once to DIR/reference-bf16); onnxruntime
is still timed on the f32 model.
"""
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import gpt2_tiny  # noqa: E402
from common import save_with_reference  # noqa: E402

LAYERS, SEQ, BATCH = 12, 128, 1
# GPT-2-small: models/gpt2_tiny.py's module sizes replaced before build().
GPT2_SMALL = dict(D=768, HEADS=12, VOCAB=50257, MAX_POS=1024)
# gpt2_tiny draws weights as standard_normal * 0.2 (0.5 for the token
# embedding); scaled by 0.1 they get GPT-2's 0.02, which keeps 12 layers of
# d=768 activations in a realistic range.
INIT_SCALE = 0.1


class ScaledRng:
    """A numpy Generator whose standard_normal draws are scaled by `factor`."""

    def __init__(self, rng, factor):
        self.rng, self.factor = rng, factor

    def standard_normal(self, *args, **kwargs):
        return self.rng.standard_normal(*args, **kwargs) * self.factor

    def __getattr__(self, name):
        return getattr(self.rng, name)


def write_model(out, past):
    """Writes out/model.onnx, out/inputs and out/reference unless present:
    a prompt of SEQ tokens, or with `past` one token over a cache of `past`."""
    if all(os.path.exists(os.path.join(out, p))
           for p in ("model.onnx", "inputs/input_ids.npy", "reference/logits.npy")):
        print(f"reusing {out}/model.onnx")
        return
    for name, value in GPT2_SMALL.items():
        setattr(gpt2_tiny, name, value)
    gpt2_tiny.HD = gpt2_tiny.D // gpt2_tiny.HEADS
    rng = np.random.default_rng(0)
    seq = 1 if past else SEQ
    model = gpt2_tiny.build(LAYERS, seq, ScaledRng(rng, INIT_SCALE), past=past, batch=BATCH)
    feeds = {"input_ids": rng.integers(0, gpt2_tiny.VOCAB, (BATCH, seq)).astype(np.int64)}
    for i in range(LAYERS if past else 0):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = rng.standard_normal(
                (BATCH, gpt2_tiny.HEADS, past, gpt2_tiny.HD)).astype(np.float32)
    save_with_reference(model, out, feeds, "bench/cpu_gpt2.py (GPT-2 small)")


def ort_session(path, threads):
    """onnxruntime's CPU session with `threads` intra-op threads, all graph optimisations."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def ort_run(session, feeds, repeat, warmup=3):
    """Median and fastest ms of `repeat` session.run after `warmup` untimed ones."""
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), min(times)


def meshc_run(meshc, compiled, inputs, outdir, threads, repeat, mpirun_args=""):
    """Runs the compiled model on `inputs` (name -> .npy path); returns
    (median ms, fastest ms) with --repeat."""
    cmd = [meshc, "run", compiled, "--output-dir", outdir, "--threads", str(threads)]
    for name, file in inputs.items():
        cmd += ["--input", f"{name}={file}"]
    if mpirun_args:
        cmd += [f"--mpirun-args={mpirun_args}"]
    if repeat > 1:
        cmd += ["--repeat", str(repeat)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"meshc run failed:\n{res.stdout}{res.stderr}")
    m = re.search(r"median ([\d.]+) ms, fastest ([\d.]+) ms", res.stdout + res.stderr)
    return (float(m.group(1)), float(m.group(2))) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads in all, for meshc (split over its ranks) and onnxruntime")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds of --repeat runs of meshc and of onnxruntime")
    ap.add_argument("--meshes", default="tp=1,tp=2",
                    help="comma-separated tp meshes to compile (default tp=1,tp=2)")
    ap.add_argument("--mpirun-args", action="append",
                    help="extra mpirun flags for `meshc run`, one timed row per value "
                         "(repeatable; default: none, then '--bind-to none')")
    ap.add_argument("--past", type=int, default=0,
                    help="time one decoding step over a KV cache of this many positions "
                         "instead of the 128-token prompt")
    ap.add_argument("--dtype", choices=["bf16"], default=None,
                    help="compile with --dtype bf16 (weights of products in bf16)")
    ap.add_argument("--out", default=None,
                    help="model folder (default build/bench/gpt2_small[_past<P>])")
    args = ap.parse_args()
    if args.out is None:
        args.out = "build/bench/gpt2_small" + (f"_past{args.past}" if args.past else "")
    # OpenMPI binds each rank to one core when there are at most 2 ranks, so
    # the threads of a 1-rank job share a core unless told otherwise.
    variants = args.mpirun_args or ["", "--bind-to none"]
    write_model(args.out, args.past)
    path = os.path.join(args.out, "model.onnx")
    inputs = {os.path.basename(f)[:-4]: f
              for f in sorted(glob.glob(os.path.join(args.out, "inputs", "*.npy")))}
    feeds = {name: np.load(file) for name, file in inputs.items()}
    session = ort_session(path, args.threads)
    reference = os.path.join(args.out, "reference")
    dtype_flags, suffix = [], ""
    if args.dtype:
        dtype_flags, suffix = ["--dtype", args.dtype], "-" + args.dtype
        reference = os.path.join(args.out, "reference-" + args.dtype)
        if not os.path.isdir(reference):
            # Written aside and renamed when complete, so that a failed run
            # leaves no half reference to compare with later.
            partial = reference + ".partial"
            subprocess.run([sys.executable, os.path.join(HERE, "..", "models",
                                                         "bf16_reference.py"),
                            "--model", args.out, "--out", partial], check=True)
            os.rename(partial, reference)
    rows = []
    for mesh in args.meshes.split(","):
        ranks = int(mesh.split("=")[1])
        compiled = os.path.join(args.out, mesh.replace("=", "") + suffix)
        start = time.perf_counter()
        res = subprocess.run([args.meshc, "compile", path, "--target", "cpu", "--mesh", mesh,
                              *dtype_flags, "-o", compiled], capture_output=True, text=True)
        compile_s = time.perf_counter() - start
        if res.returncode != 0:
            sys.exit(f"meshc compile --mesh {mesh} failed:\n{res.stdout}{res.stderr}")
        with open(os.path.join(compiled, "manifest.json")) as f:
            arena = max(role["arena_bytes"] for role in json.load(f)["roles"])
        per_rank = max(1, args.threads // ranks)
        outdir = os.path.join(compiled, "outputs")
        meshc_run(args.meshc, compiled, inputs, outdir, per_rank, 1)
        check = subprocess.run([sys.executable, os.path.join(HERE, "..", "models", "compare.py"),
                                "--reference", reference,
                                "--output", outdir], capture_output=True, text=True)
        print(f"{mesh}: {check.stdout.splitlines()[0] if check.stdout else check.stderr}")
        if check.returncode != 0:
            sys.exit(f"{mesh}: outputs differ from onnxruntime's:\n{check.stdout}")
        diff = re.search(r"largest difference from onnxruntime (\S+)", check.stdout).group(1)
        for variant in variants:
            # Alternating rounds, so that both see the same load on the machine;
            # the median of the rounds' medians, the fastest run of all.
            mine, theirs = [], []
            for _ in range(args.rounds):
                mine.append(meshc_run(args.meshc, compiled, inputs, outdir, per_rank,
                                      args.repeat, variant))
                theirs.append(ort_run(session, feeds, args.repeat))
            ms, fast = statistics.median(m for m, _ in mine), min(f for _, f in mine)
            ort_ms = statistics.median(m for m, _ in theirs)
            ort_fast = min(f for _, f in theirs)
            rows.append(f"| {mesh}{' ' + args.dtype if args.dtype else ''} | {ranks} x {per_rank} | {variant or '(none)'} | "
                        f"{compile_s:.1f} s | match ({diff}) | {arena / 2**20:.1f} MiB | "
                        f"{ms:.1f} ms ({fast:.1f}) | {ort_ms:.1f} ms ({ort_fast:.1f}) | "
                        f"{ms / ort_ms:.2f}x ({fast / ort_fast:.2f}x) |")
            print(rows[-1], flush=True)
    print("\n| mesh | ranks x threads | mpirun args | compile "
          "| logits vs onnxruntime (largest difference) | arena per rank | meshc median (fastest) "
          "| onnxruntime median (fastest) | meshc / onnxruntime, medians (fastest) |")
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
