#!/usr/bin/env python3
"""Runs meshc over the real-model corpus: every export compiled for every
mesh (no size flags), run on the cpu target, outputs compared with
onnxruntime's within 1e-4 + 1e-3 * |reference| (NaN in a reference marks a
value onnxruntime leaves unspecified, not compared).

Usage: check_corpus.py --meshc build/bin/meshc --corpus models/real/corpus
                       [--mesh tp=1,tp=2,pp=2,dp=2xtp=2] [--only NAME,...]
                       [--no-raise] [--static] [--microbatches N]
                       [--allow-failures] [--raising]

Prints one line per (export, mesh): `ok`, `mismatch: ...`, or the first line
of meshc's error, then a summary `corpus: N cases; ok: A, failed: B`. On a
mesh with tp, an `ok` line also says how many all_reduce the SPMD program
has and, when meshc warned that ops stay whole on every tp rank, `whole: N`.
--no-raise compiles without raising exporter idioms (meshc compile
--no-raise): the sharding must still follow from the graph. --static sizes
every symbolic input dimension as the inputs have it (--dim), as a user
compiling for one shape does. --microbatches N compiles the meshes that
have a pp axis with `meshc compile --microbatches N` (the batch of two split
into N microbatches per dp replica).
--raising compiles nothing to run: for each export it prints what raising
made of the graph on one rank (`attention A (causal C); rotary R; norms N;
softmax S`: dfg.attention ops and how many are causal, dfg.rotary,
dfg.layer_norm / dfg.rms_norm, and softmaxes left unraised).
An export whose export.json has `input_values` (Optimum's merged decoder:
use_cache_branch) is compiled with `--input-value` for them, and those
inputs are not given to meshc run. An export in f16 (onnxruntime-genai's
`-p fp16` build: f16 weights, caches and logits; or an export.json that
says `computes_in: f16`, f32 at the edges) is compiled with `--dtype
f32`, as the cpu target computes in f32, and compared within 2e-3 + 1e-2 *
|reference|: onnxruntime computes it in f16.
--image-sizes HxW,... runs the image encoders whose pixels' height and width
are symbolic in the model at those sizes instead of the committed inputs:
each export compiled once per mesh, then a batch of random images of each
size run by meshc and by onnxruntime, one line per size (`NAME [MESH]
48x40: ok ...`). An export whose image size is fixed prints nothing.
Exit status 0 when every case is ok (or with --allow-failures), 1 otherwise.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ATOL, RTOL = 1e-4, 1e-3
# An f16 export: onnxruntime rounds every intermediate to f16, meshc's cpu
# target computes in f32 (the tolerance of the f16 numerics tests).
HALF_ATOL, HALF_RTOL = 2e-3, 1e-2


def first_error(text):
    # meshc's own `error:` lines first: the launcher's MPI_ABORT notice
    # ("with errorcode 1") may come before them, as the ranks' output
    # interleaves.
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()
    for line in text.splitlines():
        if "error" in line:
            return line.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "failed without a message"


def compare(ref_dir, out_dir, atol=ATOL, rtol=RTOL):
    worst = None
    for ref_path in sorted(glob.glob(os.path.join(ref_dir, "*.npy"))):
        name = os.path.basename(ref_path)
        got_path = os.path.join(out_dir, name)
        if not os.path.exists(got_path):
            return f"mismatch: no output {name}"
        ref, got = np.load(ref_path), np.load(got_path)
        if ref.shape != got.shape:
            return f"mismatch: {name} has shape {got.shape}, onnxruntime {ref.shape}"
        ref64, got64 = ref.astype(np.float64), got.astype(np.float64)
        finite = np.isfinite(ref64)
        excess = np.abs(got64 - ref64) - (atol + rtol * np.abs(ref64))
        # NaN in a reference: a value onnxruntime leaves unspecified
        # (export_corpus.py's mark_unspecified), not compared.
        excess = np.where(finite, excess, np.where(got64 == ref64, -1, 1))
        excess = np.where(np.isnan(ref64), -1, excess)
        if (excess > 0).any():
            i = np.unravel_index(np.argmax(excess), ref.shape)
            return (f"mismatch: {name}{list(i)} is {got64[i]:.6g}, onnxruntime "
                    f"{ref64[i]:.6g}")
        diff = float(np.max(np.abs(got64 - ref64)[finite])) if finite.any() else 0.0
        worst = diff if worst is None else max(worst, diff)
    return f"ok (largest difference {worst:.2g})"


def split_summary(meshc, model, mesh, flags, work):
    """'; all_reduce N[; whole: M]' of the SPMD program on a tp mesh."""
    if "tp=" not in mesh or "tp=1" in mesh.split(","):
        return ""
    spmd = os.path.join(work, "spmd.mlir")
    cmd = [meshc, "compile", model, "--mesh", mesh, *flags, "--emit", "sharded", "-o", spmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "; --emit sharded: " + first_error(r.stderr + r.stdout)
    text = open(spmd).read()
    summary = f"; all_reduce {text.count('= shard.all_reduce')}"
    for line in r.stderr.splitlines():
        if "have nothing split over tp" in line:
            summary += "; whole: " + line.split("warning:")[-1].split(" op(s)")[0].split(":")[-1].strip()
    return summary


def raising_summary(meshc, export, work):
    """What raising made of the export on one rank, or meshc's error."""
    spmd = os.path.join(work, "raised.mlir")
    cmd = [meshc, "compile", os.path.join(export, "model.onnx"), "--mesh", "tp=1",
           *export_flags(export)[0], "--emit", "sharded", "-o", spmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "compile: " + first_error(r.stderr + r.stdout)
    ops = [l for l in open(spmd) if " = dfg." in l]
    attention = [l for l in ops if "= dfg.attention " in l]
    causal = sum("causal = true" in l for l in attention)
    count = lambda *names: sum(any(f"= dfg.{n} " in l for n in names) for l in ops)
    return (f"attention {len(attention)} (causal {causal}); rotary {count('rotary')}; "
            f"norms {count('layer_norm', 'rms_norm')}; softmax {count('softmax')}")


def static_dims(export):
    """['--dim', 'name=size,...'] for the model's symbolic input dimensions,
    sized as the export's inputs are (derived names are left to meshc)."""
    import onnx
    model = onnx.load(os.path.join(export, "model.onnx"), load_external_data=False)
    sizes = {}
    for value in model.graph.input:
        path = os.path.join(export, "inputs", value.name + ".npy")
        if not os.path.exists(path):
            continue
        shape = np.load(path, mmap_mode="r").shape
        for dim, size in zip(value.type.tensor_type.shape.dim, shape):
            name = dim.dim_param
            if name and name.isidentifier():
                sizes[name] = size
    return ["--dim", ",".join(f"{k}={v}" for k, v in sorted(sizes.items()))] if sizes else []


def is_half(export):
    """Whether the export computes in f16 (its inputs or outputs are f16, or
    its export.json says so: f16 within, f32 inputs and outputs)."""
    meta = json.load(open(os.path.join(export, "export.json")))
    if meta.get("computes_in") == "f16":
        return True
    files = glob.glob(os.path.join(export, "inputs", "*.npy")) + \
        glob.glob(os.path.join(export, "reference", "*.npy"))
    return any(np.load(f, mmap_mode="r").dtype == np.float16 for f in files)


def export_flags(export):
    """The meshc compile flags the export needs: `--input-value` for the
    inputs its index entry fixes at compile time (its input_values:
    Optimum's merged decoder's use_cache_branch), which are then not given to
    meshc run, and `--dtype f32` for an f16 export on the cpu target; and
    the names of those fixed inputs."""
    meta = json.load(open(os.path.join(export, "export.json")))
    values = meta.get("input_values", {})
    flags = ["--input-value", ",".join(f"{k}={v}" for k, v in sorted(values.items()))]
    flags = flags if values else []
    if is_half(export):
        flags += ["--dtype", "f32"]
    return flags, set(values)


def run_case(meshc, export, mesh, work, flags=()):
    out = os.path.join(work, "exe")
    shutil.rmtree(out, ignore_errors=True)
    model = os.path.join(export, "model.onnx")
    fixed_flags, fixed = export_flags(export)
    flags = [*flags, *fixed_flags]
    cmd = [meshc, "compile", model, "--mesh", mesh, *flags, "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "compile: " + first_error(r.stderr + r.stdout)
    inputs = []
    for f in sorted(glob.glob(os.path.join(export, "inputs", "*.npy"))):
        if os.path.basename(f)[:-4] not in fixed:
            inputs += ["--input", f"{os.path.basename(f)[:-4]}={f}"]
    res = os.path.join(work, "out")
    shutil.rmtree(res, ignore_errors=True)
    cmd = [meshc, "run", out, *inputs, "--output-dir", res, "--collective-timeout", "60"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        # All of it to stderr, where lit shows it: the line keeps only the
        # first error, and a launcher's failure may print none.
        sys.stderr.write(f"{export} [{mesh}]: meshc run failed:\n{r.stdout}{r.stderr}\n")
        return "run: " + first_error(r.stderr + r.stdout)
    status = compare(os.path.join(export, "reference"), res,
                     *((HALF_ATOL, HALF_RTOL) if is_half(export) else (ATOL, RTOL)))
    if status.startswith("ok"):
        status += split_summary(meshc, model, mesh, flags, work)
    return status


def image_input(export):
    """The name of the export's one 4-D float input whose height and width
    are symbolic (an image encoder's pixels), else None."""
    import onnx

    model = onnx.load(os.path.join(export, "model.onnx"), load_external_data=False)
    found = None
    for value in model.graph.input:
        t = value.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT and len(dims) == 4 and \
                dims[2] is None and dims[3] is None:
            if found:
                return None
            found = value.name
    return found


def run_image_sizes(meshc, export, mesh, work, sizes):
    """The export compiled for `mesh` and run on random images of each of
    `sizes` ((height, width)), compared with onnxruntime: {size: status}."""
    import onnxruntime as ort

    name = image_input(export)
    model = os.path.join(export, "model.onnx")
    out = os.path.join(work, "exe")
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([meshc, "compile", model, "--mesh", mesh, "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {size: "compile: " + first_error(r.stderr + r.stdout) for size in sizes}
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    # The batch and channels of the committed images.
    batch, channels = np.load(os.path.join(export, "inputs", name + ".npy")).shape[:2]
    rng = np.random.default_rng(0)
    statuses = {}
    for height, width in sizes:
        pixels = rng.standard_normal((batch, channels, height, width)).astype(np.float32)
        ref = os.path.join(work, "ref")
        res = os.path.join(work, "out")
        for folder in (ref, res):
            shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(ref)
        try:
            outputs = session.run(None, {name: pixels})
        except Exception as e:  # a size the model does not take (ViT's fixed positions)
            outputs = None
            refused = str(e).strip().splitlines()[0][:120]
        for o, v in zip(session.get_outputs(), outputs or []):
            np.save(os.path.join(ref, o.name + ".npy"), v)
        feed = os.path.join(work, "pixels.npy")
        np.save(feed, pixels)
        r = subprocess.run([meshc, "run", out, "--input", f"{name}={feed}", "--output-dir", res,
                            "--collective-timeout", "60"], capture_output=True, text=True)
        if outputs is None:
            # meshc must refuse it too, by name.
            statuses[(height, width)] = (
                "refused as by onnxruntime: " + first_error(r.stderr + r.stdout)
                if r.returncode else "mismatch: meshc ran a size onnxruntime refuses (" +
                refused + ")")
            continue
        statuses[(height, width)] = ("run: " + first_error(r.stderr + r.stdout)
                                     if r.returncode else compare(ref, res))
    return statuses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--mesh", default="tp=1,tp=2,pp=2,dp=2xtp=2")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-raise", action="store_true",
                    help="compile with meshc compile --no-raise")
    ap.add_argument("--static", action="store_true",
                    help="size the symbolic input dimensions as the inputs have them")
    ap.add_argument("--microbatches", type=int, default=1,
                    help="on meshes with pp, compile with meshc compile "
                         "--microbatches N (the inputs' batch of two: N <= 2)")
    ap.add_argument("--raising", action="store_true",
                    help="print what raising made of each export instead of running it")
    ap.add_argument("--image-sizes", default="",
                    help="HxW,...: run the image encoders whose image size is symbolic "
                         "at these sizes, against onnxruntime")
    ap.add_argument("--allow-failures", action="store_true",
                    help="exit 0 even when a case fails (the lit test pins the "
                         "statuses with FileCheck instead)")
    args = ap.parse_args()
    index = json.load(open(os.path.join(args.corpus, "index.json")))
    only = set(filter(None, args.only.split(",")))
    meshes = [m.replace("x", ",") for m in args.mesh.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for name in sorted(index):
            if only and name not in only:
                continue
            meta = index[name]
            if meta.get("status") != "ok":
                continue
            if args.raising:
                print(f"{name}: {raising_summary(args.meshc, os.path.join(args.corpus, name), work)}",
                      flush=True)
                continue
            if args.image_sizes:
                export = os.path.join(args.corpus, name)
                if not image_input(export):
                    continue
                sizes = [tuple(int(n) for n in hw.split("x"))
                         for hw in args.image_sizes.split(",")]
                for mesh in meshes:
                    for (h, w), status in run_image_sizes(args.meshc, export, mesh, work,
                                                          sizes).items():
                        results[(name, mesh, h, w)] = status
                        print(f"{name} [{mesh}] {h}x{w}: {status}", flush=True)
                continue
            for mesh in meshes:
                export = os.path.join(args.corpus, name)
                flags = (["--no-raise"] if args.no_raise else []) + \
                    (static_dims(export) if args.static else [])
                label = mesh
                if args.microbatches > 1 and "pp=" in mesh:
                    flags += ["--microbatches", str(args.microbatches)]
                    label += f" --microbatches {args.microbatches}"
                status = run_case(args.meshc, export, mesh, work, flags)
                results[(name, mesh)] = status
                print(f"{name} [{label}]: {status}", flush=True)
    if args.raising:
        return 0
    ok = sum(1 for s in results.values() if s.startswith(("ok", "refused as by onnxruntime")))
    print(f"corpus: {len(results)} cases; ok: {ok}, failed: {len(results) - ok}")
    return 0 if ok == len(results) or args.allow_failures else 1


if __name__ == "__main__":
    sys.exit(main())
