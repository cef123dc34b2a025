#!/usr/bin/env python3
"""Imports the ONNX backend node tests of the ops meshc claims.

Usage: run_conformance.py --meshc PATH/TO/meshc [--data DIR] [--all]
                          [--execute [--target eval|cpu]] [-v]

The node tests come from Debian's libonnx-testdata (DIR defaults to
/usr/share/libonnx-testdata/data/node). A test is selected when every op its
graph uses is one that `meshc --supported-ops` lists (with --all: every test).
Each selected model goes through `meshc import`, and is counted as

  imported   exit status 0 and IR on stdout;
  rejected   exit status 1 with one or more `error:` lines (a clear
             diagnostic, e.g. an opset older than meshc supports);
  crashed    anything else: a signal, another exit status, exit 1 without a
             diagnostic, or no answer within the timeout.

With --execute, every imported test also runs: its test_data_set_* inputs go
through `meshc-eval` (the dfg reference evaluator, next to meshc), or with
--target cpu through the cpu target (`meshc compile --mesh tp=1 --target cpu`
once, then `meshc run` per data set), and each output is compared with the
expected one the suite ships, with the ONNX backend tests' tolerance
(|got - want| <= 1e-6 + 1e-3 |want|; integers and bools exactly). An imported
test then counts as passed, failed, a known disagreement (KNOWN below, each
with its reason), or, on the cpu target, rejected when `meshc compile` refuses
it with a diagnostic (e.g. an element type the cpu kernels do not handle).
A `meshc run` that fails is launched once more before the test counts as
failed (an MPI job can fail to start on a loaded machine); a test that passes
the second time is noted on stderr with the first launch's messages.

Prints the counts per op and in total; with -v, the diagnostic of every
rejected or failed test. Exits 1 if anything crashed or failed.
"""
import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys

import shutil
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

TIMEOUT_S = 180  # per command; generous for loaded machines (a hang still ends)

# Tests whose expected outputs meshc knowingly does not reproduce, with why.
# They are run and reported as "known" (an unexpected pass is reported too,
# so that this list cannot go stale).
KNOWN = {
    "test_cast_FLOAT_to_BFLOAT16":
        "the 1.12 test data truncates float to bfloat16; meshc rounds to "
        "nearest even, as onnxruntime and later ONNX versions do",
    "test_castlike_BFLOAT16_to_FLOAT":
        "the test data feeds 'like' with shape [1] where the model declares "
        "[3, 4]; meshc-eval and the rank executables reject inputs that "
        "contradict the signature",
    "test_castlike_BFLOAT16_to_FLOAT_expanded": "as test_castlike_BFLOAT16_to_FLOAT",
    "test_castlike_FLOAT_to_BFLOAT16": "as test_castlike_BFLOAT16_to_FLOAT",
    "test_castlike_FLOAT_to_BFLOAT16_expanded": "as test_castlike_BFLOAT16_to_FLOAT",
}


def supported_ops(meshc):
    out = subprocess.run([meshc, "--supported-ops"], check=True, capture_output=True,
                         text=True).stdout
    return {(d, op) for d, op, _ in (line.split() for line in out.splitlines())}


def ops_of(model_path):
    model = onnx.load(model_path, load_external_data=False)
    return {("ai.onnx" if n.domain in ("", "ai.onnx") else n.domain, n.op_type)
            for n in model.graph.node}


def classify(meshc, model_path):
    try:
        r = subprocess.run([meshc, "import", model_path], capture_output=True, text=True,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "crashed", f"no answer within {TIMEOUT_S} s"
    errors = [l for l in r.stderr.splitlines() if "error:" in l]
    if r.returncode == 0 and "func.func @main" in r.stdout:
        return "imported", ""
    if r.returncode == 1 and errors:
        return "rejected", errors[0]
    return "crashed", f"exit status {r.returncode}: {r.stderr.strip()[:300]}"


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def execute(meshc, test_dir, model_path, target):
    """Runs the imported test's data sets on `target`; (kind, detail), kind one of
    passed, failed or rejected (the cpu target refused the model with a
    diagnostic, e.g. an element type it has no kernels for)."""
    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    outputs = [o.name for o in model.graph.output]
    bindir = os.path.dirname(meshc)
    work = tempfile.mkdtemp(prefix="meshc-conf-")
    try:
        if target == "eval":
            ir = os.path.join(work, "model.mlir")
            subprocess.run([meshc, "import", model_path, "-o", ir], check=True,
                           capture_output=True, timeout=TIMEOUT_S)
            runner = [os.path.join(bindir, "meshc-eval"), ir,
                      "--weights-dir", os.path.dirname(model_path)]
            tool = "meshc-eval"
        else:
            out = os.path.join(work, "out")
            r = subprocess.run([meshc, "compile", model_path, "--mesh", "tp=1", "--target",
                                "cpu", "-o", out], capture_output=True, text=True,
                               timeout=TIMEOUT_S)
            errors = [l for l in r.stderr.splitlines() if "error:" in l]
            if r.returncode == 1 and errors:
                return "rejected", errors[0]
            if r.returncode != 0:
                return "failed", (f"meshc compile: exit status {r.returncode}: "
                                  f"{r.stderr.strip()[-300:]}")
            # One thread per rank: the runner already runs a test per core.
            runner = [meshc, "run", out, "--threads", "1"]
            tool = "meshc run"
        data_sets = sorted(d for d in os.listdir(test_dir) if d.startswith("test_data_set"))
        for data_set in data_sets:
            folder = os.path.join(test_dir, data_set)
            cmd = runner + ["--output-dir", os.path.join(work, data_set)]
            for i, name in enumerate(inputs):
                array = load_pb(os.path.join(folder, f"input_{i}.pb"))
                file = os.path.join(work, f"{data_set}_in{i}.npy")
                np.save(file, array)
                cmd += ["--input", f"{name}={file}"]
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
            if r.returncode != 0 and target == "cpu":
                # An MPI job can fail to start on a loaded machine; one more
                # launch tells that apart from a wrong program (a second
                # failure counts, with every message of the first).
                first = " | ".join(l for l in r.stderr.strip().splitlines() if "error" in l)
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
                if r.returncode == 0:
                    print(f"note: {os.path.basename(test_dir)}: passed when launched again; "
                          f"the first launch failed: {first}", file=sys.stderr)
            if r.returncode != 0:
                lines = r.stderr.strip().splitlines() or [f"exit status {r.returncode}"]
                errors = [l for l in lines if "error" in l]
                return "failed", f"{tool}: " + (" | ".join(errors) if errors else lines[-1])
            for i, name in enumerate(outputs):
                want = load_pb(os.path.join(folder, f"output_{i}.pb"))
                got = np.load(os.path.join(work, data_set, f"{name}.npy"))
                if got.shape != want.shape or got.dtype != want.dtype:
                    return "failed", (f"{data_set} output {name}: {got.dtype}{list(got.shape)} "
                                      f"vs expected {want.dtype}{list(want.shape)}")
                if np.issubdtype(want.dtype, np.floating):
                    ok = np.allclose(got, want, rtol=1e-3, atol=1e-6, equal_nan=True)
                else:
                    ok = np.array_equal(got, want)
                if not ok:
                    diff = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
                    return "failed", f"{data_set} output {name}: max |diff| {diff:.3g}"
        return "passed", ""
    except subprocess.TimeoutExpired as e:
        return "failed", f"no answer within {TIMEOUT_S} s: {' '.join(e.cmd[:2])}"
    except subprocess.SubprocessError as e:
        return "failed", str(e)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--all", action="store_true", help="every test, not only claimed ops")
    ap.add_argument("--execute", action="store_true",
                    help="run imported tests and compare their outputs with the expected ones")
    ap.add_argument("--target", choices=("eval", "cpu"), default="eval",
                    help="with --execute: run on meshc-eval (default), or compile each test "
                         "for one rank of the cpu target and run it with 'meshc run'")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    if not os.path.isdir(args.data):
        sys.exit(f"conformance: {args.data} not found (install libonnx-testdata; "
                 "scripts/bootstrap.sh does)")
    claimed = supported_ops(args.meshc)
    tests = []
    for name in sorted(os.listdir(args.data)):
        path = os.path.join(args.data, name, "model.onnx")
        if not os.path.isfile(path):
            continue
        ops = ops_of(path)
        if args.all or (ops and ops <= claimed):
            tests.append((name, path, sorted(op for _, op in ops)))

    def run(test):
        name, path, _ = test
        kind, detail = classify(args.meshc, path)
        if kind == "imported" and args.execute:
            kind, detail = execute(args.meshc, os.path.dirname(path), path, args.target)
            if name in KNOWN and kind == "failed":
                kind, detail = "known", KNOWN[name]
            elif name in KNOWN and kind == "passed":
                kind, detail = "failed", "passes now: remove it from KNOWN in run_conformance.py"
        return kind, detail

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(run, tests))

    per_op = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    for (name, _, ops), (kind, detail) in zip(tests, results):
        totals[kind] += 1
        for op in ops:
            per_op[op][kind] += 1
        if kind in ("crashed", "failed", "known") or (kind == "rejected" and args.verbose):
            print(f"{kind}: {name}: {detail}")

    if args.execute:
        print(f"{'op':<28} {'passed':>6} {'known':>5} {'failed':>6} {'rejected':>8} "
              f"{'crashed':>7}")
        for op in sorted(per_op):
            c = per_op[op]
            print(f"{op:<28} {c['passed']:>6} {c['known']:>5} {c['failed']:>6} "
                  f"{c['rejected']:>8} {c['crashed']:>7}")
        print(f"conformance ({args.target}): {len(tests)} tests; passed: {totals['passed']}, "
              f"known disagreements: {totals['known']}, failed: {totals['failed']}, "
              f"rejected with a diagnostic: {totals['rejected']}, "
              f"crashed: {totals['crashed']}")
    else:
        print(f"{'op':<28} {'imported':>8} {'rejected':>8} {'crashed':>7}")
        for op in sorted(per_op):
            c = per_op[op]
            print(f"{op:<28} {c['imported']:>8} {c['rejected']:>8} {c['crashed']:>7}")
        print(f"conformance: {len(tests)} tests; imported: {totals['imported']}, "
              f"rejected with a diagnostic: {totals['rejected']}, crashed: {totals['crashed']}")
    sys.exit(1 if totals["crashed"] or totals["failed"] else 0)


if __name__ == "__main__":
    main()
