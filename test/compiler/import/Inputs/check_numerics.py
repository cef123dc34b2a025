#!/usr/bin/env python3
"""Compares imported dfg IR with onnxruntime on random inputs.

Usage: check_numerics.py --bin DIR [--dim-size N] CASE WORKDIR

Writes the make_onnx.py model CASE to WORKDIR, draws inputs (float: standard
normal; integers: 0..3, valid indices for the test models; bool: coin flips;
each dim_param becomes 3, or --dim-size), runs onnxruntime (CPU) and `meshc import` followed
by `meshc-eval` (the dfg reference evaluator), once as imported and once
after the graph pipeline (`--optimize`: folding and raising to
transformer-level ops), and compares every output:

  float32   |meshc - ort| <= 1e-5 + 1e-4 * |ort| elementwise (ort computes
            in f32, the evaluator in f64 rounded to f32 after each op)
  float16   |meshc - ort| <= 2e-3 + 1e-2 * |ort| elementwise
  int, bool equal

Prints one line per output and "numerics: N/N outputs match", then the same
after the graph pipeline; exits 1 on any mismatch or failure.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx  # noqa: E402

DIM_PARAM_SIZE = 3
TOLERANCE = {np.float32: (1e-5, 1e-4), np.float16: (2e-3, 1e-2)}


def draw(rng, value_info, dim_size):
    t = value_info.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else dim_size for d in t.shape.dim]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 4, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="folder with meshc and meshc-eval")
    ap.add_argument("--dim-size", type=int, default=DIM_PARAM_SIZE,
                    help="the size every dim_param takes (default %(default)s)")
    ap.add_argument("--no-ort-optimization", action="store_true",
                    help="run onnxruntime with its graph optimisations off (QDQ pairs "
                    "computed as ONNX defines them, not fused into integer kernels)")
    ap.add_argument("case")
    ap.add_argument("workdir")
    args = ap.parse_args()

    os.makedirs(args.workdir, exist_ok=True)
    path = os.path.join(args.workdir, "model.onnx")
    m = make_onnx.CASES[args.case](path)
    if m is not None:
        onnx.save_model(m, path)
    model = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(1)
    feeds = {i.name: draw(rng, i, args.dim_size) for i in model.graph.input if i.name not in initializers}

    options = ort.SessionOptions()
    if args.no_ort_optimization:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(names, feeds)))

    inputs = []
    for name, value in feeds.items():
        file = os.path.join(args.workdir, f"in_{name}.npy")
        np.save(file, value)
        inputs += ["--input", f"{name}={file}"]

    all_ok = True
    for optimize in (False, True):
        suffix = "-optimized" if optimize else ""
        ir = os.path.join(args.workdir, f"model{suffix}.mlir")
        out_dir = os.path.join(args.workdir, f"meshc_out{suffix}")
        subprocess.run([os.path.join(args.bin, "meshc"), "import", path, "-o", ir]
                       + (["--optimize"] if optimize else []), check=True)
        subprocess.run([os.path.join(args.bin, "meshc-eval"), ir, "--weights-dir",
                        args.workdir, "--output-dir", out_dir] + inputs, check=True)
        good = compare(expected, out_dir, " (after the graph pipeline)" if optimize else "")
        print(f"numerics{' after the graph pipeline' if optimize else ''}: "
              f"{good}/{len(expected)} outputs match")
        all_ok = all_ok and good == len(expected)
    sys.exit(0 if all_ok else 1)


def compare(expected, out_dir, label):
    """Prints one line per output; returns how many match."""
    good = 0
    for name, want in expected.items():
        got = np.load(os.path.join(out_dir, f"{name}.npy"))
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"{name}{label}: MISMATCH shape/dtype {got.shape} {got.dtype} vs "
                  f"{want.shape} {want.dtype}")
            continue
        if want.dtype.type in TOLERANCE:
            atol, rtol = TOLERANCE[want.dtype.type]
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            bound = atol + rtol * np.abs(want.astype(np.float64))
            ok = bool(np.all(diff <= bound))
            worst = float(np.max(diff / bound, initial=0.0))
            print(f"{name}{label}: {'match' if ok else 'MISMATCH'} (max |diff| "
                  f"{float(np.max(diff, initial=0.0)):.3g}, {worst:.2f} of the "
                  f"tolerance, {want.dtype})")
        else:
            ok = np.array_equal(got, want)
            print(f"{name}{label}: {'match' if ok else 'MISMATCH'} (exact, {want.dtype})")
        good += ok
    return good


if __name__ == "__main__":
    main()
