#!/usr/bin/env python3
"""Benchmark: GPT-2-small and Llama-3.2-1B-shaped steps on one GPU, meshc against PyTorch.

Usage: bench/gpu/bench.py --meshc build/bin/meshc [--out build/bench/gpu]
                          [--dtype f16] [--models gpt2,llama] [--steps prefill,decode]
                          [--repeat 50] [--warmup 10]
                          [--compile-modes default,reduce-overhead]
                          [--cuda-arch auto] [--layers N] [--dry-run]

For each model (bench/gpu/workloads.py: GPT-2 small; Llama-3.2-1B's sizes)
and step (prefill: 512 tokens, no cache; decode: 1 token over a 512-token
KV cache), batch 1: writes the ONNX model with the repository's generators
(models/gpt2_tiny.py, models/llama.py; random seeded f32 weights, the KV
cache and logits cast to DTYPE at the graph's edges; reused across runs),
compiles it with `meshc compile --mesh tp=1 --target cuda --dtype DTYPE`,
writes its inputs in the dtypes of its manifest, then on the GPU:

  peaks    the GPU's DTYPE matmul TFLOP/s (8192^3, torch.matmul) and its
           memory bandwidth (device-to-device copy of 1 GiB, bytes read and
           written), medians of 10 runs after warm-up;
  meshc    `meshc run --repeat N`: rank 0's median and fastest step;
  PyTorch  the same architecture in DTYPE (bench/gpu/torch_ref.py), eager
           and under torch.compile for each --compile-modes mode, timed
           with CUDA events, N runs after --warmup runs, median.

Prints a markdown table (also written to OUT/results.md) with the GPU's
name and peaks, and per step: the analytic work (GFLOP, MB moved), each
median time, meshc's TFLOP/s and GB/s and their share of the peaks, meshc's
speed-up over the faster torch.compile mode, and for decode the floor
(weight bytes / measured bandwidth) and meshc's time over it.

--dry-run does everything that needs no GPU (models, compilation, inputs)
and neither imports nor needs torch. --layers N cuts every model to N
layers (quick checks). Needs a meshc built with the CUDA toolkit; the run
needs a CUDA GPU and a Python with torch, onnx and numpy.
"""
import argparse
import dataclasses
import datetime
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
try:
    import numpy as np
    import workloads
except ImportError as e:
    sys.exit(f"bench: the Python module '{e.name}' is missing; the benchmark needs numpy and "
             f"onnx (and torch to run), e.g. those of .venv (scripts/bootstrap.sh)")

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
MESH = "tp=1"  # one GPU


@dataclasses.dataclass
class Case:
    """One model step, compiled and ready to run."""
    arch: workloads.Arch
    step: workloads.Step
    folder: str         # meshc's output folder
    inputs: list        # ['NAME=FILE.npy', ...]
    outputs: str        # where `meshc run` writes
    compile_s: float
    manifest: dict


# ---------------------------------------------------------------------------
# Preparation (no GPU)
# ---------------------------------------------------------------------------

def check_meshc(meshc, dtype):
    """Exits with a message unless `meshc` runs and can compile `dtype`."""
    if not os.access(meshc, os.X_OK):
        sys.exit(f"bench: {meshc} is not an executable; build meshc first (make build)")
    res = subprocess.run([meshc, "compile", "--help"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bench: {meshc} compile --help failed:\n{res.stdout}{res.stderr}")
    if dtype != "f32" and "--dtype" not in res.stdout:
        sys.exit(f"bench: {meshc} has no 'compile --dtype', so it cannot build {dtype} "
                 f"executables; use a newer meshc, or compare f32 on both sides with "
                 f"--dtype f32")


def compile_step(meshc, model, folder, cuda_arch, dtype):
    """`meshc compile` for one GPU; returns its wall time in seconds. A meshc
    built without the CUDA toolkit fails here with its own message."""
    cmd = [meshc, "compile", model, "--mesh", MESH, "--target", "cuda",
           "--cuda-arch", cuda_arch, "-o", folder]
    if dtype != "f32":
        cmd += [f"--dtype={dtype}"]
    print(f"bench: {' '.join(cmd)}", flush=True)
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bench: meshc compile failed:\n{res.stdout}{res.stderr}")
    return time.perf_counter() - start


def prepare(args, archs, steps, cuda_arch):
    """Models, compiled folders and inputs of every (model, step)."""
    cases = []
    for arch in archs:
        directory = os.path.join(args.out, arch.key)
        models = workloads.write_models(arch, steps, directory, args.dtype)
        for step in steps:
            folder = os.path.join(directory, f"{step.name}-{args.dtype}")
            secs = compile_step(args.meshc, models[step.name], folder, cuda_arch, args.dtype)
            with open(os.path.join(folder, "manifest.json")) as f:
                manifest = json.load(f)
            inputs = workloads.write_inputs(manifest, arch.vocab,
                                            os.path.join(directory, f"{step.name}-inputs"))
            cases.append(Case(arch, step, folder, inputs,
                              os.path.join(directory, f"{step.name}-outputs"), secs, manifest))
    return cases


def du(path):
    """Bytes on disk under `path` (sparse files count what they hold)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def print_prepared(args, cases):
    """The dry run's report: what a run would time."""
    print("\n| model | step | GFLOP | MB moved | weights read | meshc compile | executable "
          "| weight shard | arena | inputs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    elem = ELEMENT_BYTES[args.dtype]
    for c in cases:
        role = c.manifest["roles"][0]
        exe = os.path.getsize(os.path.join(c.folder, role["executable"]))
        inputs = ", ".join(f"{e['name']} {e['dtype']} {e['shape']}"
                           for e in c.manifest["inputs"][:2])
        if len(c.manifest["inputs"]) > 2:
            inputs += f", ... ({len(c.manifest['inputs'])} in all)"
        print(f"| {label(c.arch)} | {c.step.name} | "
              f"{workloads.flops(c.arch, c.step) / 1e9:.1f} | "
              f"{workloads.traffic(c.arch, c.step, elem) / 1e6:.0f} | "
              f"{workloads.weights_read(c.arch, c.step) * elem / 1e6:.0f} MB | "
              f"{c.compile_s:.1f} s | {exe / 2**20:.1f} MiB | "
              f"{role['weights_bytes'] / 2**20:.0f} MiB | {role['arena_bytes'] / 2**20:.1f} MiB | "
              f"{inputs} |")
    print(f"\nbench: dry run done; {args.out} holds {du(args.out) / 2**30:.1f} GiB. On a GPU "
          f"machine: python3 {' '.join(a for a in sys.argv if a != '--dry-run')}")


# ---------------------------------------------------------------------------
# Runs (GPU)
# ---------------------------------------------------------------------------

def open_gpu():
    """Imports torch and bench/gpu/torch_ref.py, or exits saying what is missing."""
    try:
        import torch
    except ImportError:
        sys.exit("bench: PyTorch is not installed in this Python; the benchmark compares "
                 "meshc with it (install torch with CUDA, or prepare without a GPU with "
                 "--dry-run)")
    if not torch.cuda.is_available():
        sys.exit(f"bench: PyTorch sees no CUDA GPU (torch {torch.__version__}, CUDA "
                 f"{torch.version.cuda or 'none'}); run on a GPU machine, or prepare with "
                 f"--dry-run")
    import torch_ref
    return torch_ref


def cuda_arch_of(sm):
    """The --cuda-arch meshc's runtime offers for a GPU of compute capability `sm`."""
    major = int(sm[3:-1])
    if major == 9:
        return "sm_90"
    if major == 8:
        return "sm_80"
    sys.exit(f"bench: this GPU is {sm}; meshc's runtime kernels are built for sm_90 and "
             f"sm_80 (give --cuda-arch to try one)")


def run_meshc(meshc, case, repeat):
    """(median ms, fastest ms) of `meshc run --repeat`, and whether every
    float output is finite."""
    cmd = [meshc, "run", case.folder, "--output-dir", case.outputs, "--repeat", str(repeat)]
    for i in case.inputs:
        cmd += ["--input", i]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"bench: meshc run {case.folder} failed:\n{res.stdout}{res.stderr}")
    m = re.search(r"median ([\d.]+) ms, fastest ([\d.]+) ms", res.stdout + res.stderr)
    if not m:
        sys.exit(f"bench: meshc run printed no timing:\n{res.stdout}{res.stderr}")
    finite = all(np.isfinite(workloads.from_npy(
        np.load(os.path.join(case.outputs, f"{e['name']}.npy")), e["dtype"])).all()
        for e in case.manifest["outputs"] if e["dtype"] in ("F32", "F16", "BF16"))
    return (float(m.group(1)), float(m.group(2))), finite


def measure(args, cases, ref, modes):
    """Times every case with meshc, then with PyTorch; returns one dict per case."""
    import torch

    dtype = ref.DTYPES[args.dtype]
    results = []
    for arch in dict.fromkeys(c.arch for c in cases):
        mine = [c for c in cases if c.arch == arch]
        # meshc first, while PyTorch holds none of the GPU's memory.
        for c in mine:
            (ms, fast), finite = run_meshc(args.meshc, c, args.repeat)
            print(f"bench: {label(arch)} {c.step.name}: meshc {ms:.3f} ms (fastest {fast:.3f})",
                  flush=True)
            results.append(dict(case=c, meshc=ms, finite=finite, torch={}))
        modules = ref.build(arch, [c.step for c in mine], dtype)
        for c, r in zip(mine, results[-len(mine):]):
            ids = torch.randint(0, arch.vocab, (1, c.step.seq), device="cuda")
            for mode in [None] + modes:
                ms, fast = ref.time_step(modules[c.step.name], ids, mode, args.repeat,
                                         args.warmup)
                r["torch"][mode] = ms
                print(f"bench: {label(arch)} {c.step.name}: "
                      f"{'eager' if mode is None else 'torch.compile ' + mode} {ms:.3f} ms "
                      f"(fastest {fast:.3f})", flush=True)
        del modules
        ref.free()
    return results


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

def label(arch):
    layers = workloads.ARCHS[arch.key].layers
    if arch.layers == layers:
        return arch.title
    return f"{arch.title} ({arch.layers} layer{'s' if arch.layers > 1 else ''})"


def git_commit():
    res = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=7"],
                         capture_output=True, text=True)
    return res.stdout.strip() or "unknown"


def render(args, gpu, peaks, results, modes):
    """The results as markdown, ready for bench/RESULTS.md."""
    name, sm, versions = gpu
    tflops_peak, gbps_peak = peaks
    elem = ELEMENT_BYTES[args.dtype]
    lines = [
        f"GPU: **{name}** ({sm}); {versions}; meshc {git_commit()}; "
        f"{datetime.date.today()}; {args.dtype}, batch 1, mesh {MESH}.",
        "",
        f"Measured peaks: {args.dtype} matmul 8192x8192x8192 (torch.matmul) "
        f"**{tflops_peak:.0f} TFLOP/s**; device-to-device copy of 1 GiB (read + written) "
        f"**{gbps_peak:.0f} GB/s**.",
        "",
    ]
    head = ["model", "step", "GFLOP", "MB moved", "meshc ms", "eager ms"]
    head += [f"torch.compile ({m}) ms" for m in modes]
    head += ["meshc TFLOP/s (% peak)", "meshc GB/s (% peak)", "meshc speed-up vs torch.compile",
             "floor ms", "meshc / floor"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        c, ms = r["case"], r["meshc"]
        flop = workloads.flops(c.arch, c.step)
        moved = workloads.traffic(c.arch, c.step, elem)
        tflops, gbps = flop / (ms * 1e-3) / 1e12, moved / (ms * 1e-3) / 1e9
        row = [label(c.arch), c.step.name, f"{flop / 1e9:.1f}", f"{moved / 1e6:.0f}",
               f"**{ms:.3f}**" + ("" if r["finite"] else " (non-finite outputs)"),
               f"{r['torch'][None]:.3f}"]
        row += [f"{r['torch'][m]:.3f}" for m in modes]
        row += [f"{tflops:.1f} ({100 * tflops / tflops_peak:.0f}%)",
                f"{gbps:.0f} ({100 * gbps / gbps_peak:.0f}%)"]
        row += [f"{min(r['torch'][m] for m in modes) / ms:.2f}x" if modes else "-"]
        if c.step.past:
            floor = workloads.weights_read(c.arch, c.step) * elem / (gbps_peak * 1e9) * 1e3
            row += [f"{floor:.3f}", f"{ms / floor:.2f}x"]
        else:
            row += ["-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "Notes:",
        "- Goals (issue 7): a speed-up of at least 1.00x on every step, and decode within "
        "1.30x of its floor.",
        f"- Steps: prefill is 512 tokens without a KV cache, decode 1 token over a 512-token "
        f"cache; batch 1. Both compute the logits of every token they are given (the "
        f"generators cannot keep only the last token's), so prefill writes 512 x vocabulary "
        f"logits, in meshc and in PyTorch alike. The KV cache and the logits are "
        f"{args.dtype} on both sides (the ONNX models' interface is cast to it). PyTorch's "
        f"decode writes the new keys and values into a preallocated cache; meshc's model "
        f"(the ONNX graph's) returns present = concat(past, new), a copy of the cache.",
        f"- Times are medians of {args.repeat} steps, in ms. meshc: `meshc run --repeat "
        f"{args.repeat}`, each step timed by rank 0 on the host up to a device "
        f"synchronisation. PyTorch: CUDA events around each call from an idle GPU, after "
        f"{args.warmup} warm-up calls; torch.compile(mode=..., dynamic=False) of the step "
        f"module, under torch.no_grad().",
        "- Speed-up: the faster torch.compile mode's time over meshc's (above 1: meshc is "
        "faster).",
        "- GFLOP: 2 per multiply-add of every weight matrix on every token (lm_head "
        "included) and of attention's QK^T and PV over the keys each query sees (the "
        "causal half of prefill only).",
        f"- MB moved: the weights a step reads ({elem}-byte elements; of the embedding tables "
        f"only the gathered rows, GPT-2's tied table whole), the KV cache read, the new keys "
        f"and values, the logits written; activations between kernels are not counted, so "
        f"GB/s is an effective bandwidth.",
        "- Floor (decode): the weight bytes a step reads over the measured copy bandwidth.",
        "- Models: GPT-2 small (12 layers, d=768, 12 heads, FFN 3072, vocabulary 50257, "
        "tied lm_head); Llama-3.2-1B-shaped (16 layers, d=2048, 32/8 heads of 64, FFN 8192, "
        "vocabulary 128256) with models/llama.py's untied lm_head (+0.5 GB read per step) "
        "and rope theta 10000. Random weights.",
    ]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--out", default="build/bench/gpu",
                    help="models, compiled folders, inputs, outputs and results.md")
    ap.add_argument("--dtype", choices=sorted(ELEMENT_BYTES), default="f16",
                    help="meshc compile --dtype and PyTorch's dtype (f32: no --dtype)")
    ap.add_argument("--models", default="gpt2,llama",
                    help=f"comma-separated, of {', '.join(workloads.ARCHS)}")
    ap.add_argument("--steps", default="prefill,decode",
                    help=f"comma-separated, of {', '.join(workloads.STEPS)}")
    ap.add_argument("--repeat", type=int, default=50, help="timed steps per measurement")
    ap.add_argument("--warmup", type=int, default=10, help="PyTorch's untimed calls first")
    ap.add_argument("--compile-modes", default="default,reduce-overhead",
                    help="torch.compile modes to time, comma-separated ('' for none)")
    ap.add_argument("--cuda-arch", default="auto",
                    help="meshc compile --cuda-arch (auto: the GPU's; sm_90 in a dry run)")
    ap.add_argument("--layers", type=int, help="cut every model to this many layers")
    ap.add_argument("--dry-run", action="store_true",
                    help="models, compilation and inputs only: no GPU, no torch")
    args = ap.parse_args()
    try:
        archs = [workloads.ARCHS[k] for k in args.models.split(",")]
        steps = [workloads.STEPS[k] for k in args.steps.split(",")]
    except KeyError as e:
        ap.error(f"unknown model or step {e}")
    if args.layers:
        archs = [dataclasses.replace(a, layers=args.layers) for a in archs]
    if args.repeat < 2:
        ap.error("--repeat must be at least 2 (meshc reports timings from 2 runs on)")
    modes = [m for m in args.compile_modes.split(",") if m]

    ref = gpu = None
    if not args.dry_run:
        ref = open_gpu()
        gpu = ref.device()
    check_meshc(args.meshc, args.dtype)
    cuda_arch = args.cuda_arch
    if cuda_arch == "auto":
        cuda_arch = cuda_arch_of(gpu[1]) if gpu else "sm_90"
    cases = prepare(args, archs, steps, cuda_arch)
    if args.dry_run:
        print_prepared(args, cases)
        return
    print(f"bench: {gpu[0]}: measuring peaks", flush=True)
    peaks = ref.measure_peaks(ref.DTYPES[args.dtype])
    results = measure(args, cases, ref, modes)
    table = render(args, gpu, peaks, results, modes)
    print("\n" + table)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table)
    print(f"bench: wrote {os.path.join(args.out, 'results.md')}")


if __name__ == "__main__":
    main()
