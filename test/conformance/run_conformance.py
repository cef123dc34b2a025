#!/usr/bin/env python3
"""Imports the ONNX backend node tests of the ops meshc claims.

Usage: run_conformance.py --meshc PATH/TO/meshc [--data DIR] [--all] [-v]

The node tests come from Debian's libonnx-testdata (DIR defaults to
/usr/share/libonnx-testdata/data/node). A test is selected when every op its
graph uses is one that `meshc --supported-ops` lists (with --all: every test).
Each selected model goes through `meshc import`, and is counted as

  imported   exit status 0 and IR on stdout;
  rejected   exit status 1 with one or more `error:` lines (a clear
             diagnostic, e.g. an opset older than meshc supports);
  crashed    anything else: a signal, another exit status, exit 1 without a
             diagnostic, or no answer within the timeout.

Prints the counts per op and in total; with -v, the diagnostic of every
rejected test. Exits 1 if anything crashed. (Running the tests and comparing
outputs comes with the CPU target.)
"""
import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys

import onnx

TIMEOUT_S = 60


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--all", action="store_true", help="every test, not only claimed ops")
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

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda t: classify(args.meshc, t[1]), tests))

    per_op = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    for (name, _, ops), (kind, detail) in zip(tests, results):
        totals[kind] += 1
        for op in ops:
            per_op[op][kind] += 1
        if kind == "crashed" or (kind == "rejected" and args.verbose):
            print(f"{kind}: {name}: {detail}")

    print(f"{'op':<12} {'imported':>8} {'rejected':>8} {'crashed':>7}")
    for op in sorted(per_op):
        c = per_op[op]
        print(f"{op:<12} {c['imported']:>8} {c['rejected']:>8} {c['crashed']:>7}")
    print(f"conformance: {len(tests)} tests; imported: {totals['imported']}, "
          f"rejected with a diagnostic: {totals['rejected']}, crashed: {totals['crashed']}")
    sys.exit(1 if totals["crashed"] else 0)


if __name__ == "__main__":
    main()
