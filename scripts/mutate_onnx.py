#!/usr/bin/env python3
"""Meaning-level mutations of ONNX models against meshc's front end.

Usage: scripts/mutate_onnx.py --meshc build/bin/meshc [--seeds GLOB]
                              [--runs N] [--seed S] [--out DIR] [--timeout SEC]

Each run takes a seed model (by default every export of the real-model
corpus, models/real/corpus/*/model.onnx), applies 1 to 3 mutations that keep
the protobuf valid but change its meaning (an int or ints attribute set to an
edge value, a small int64 initializer's entry changed, a node input rewired
to another value, a node deleted, a graph input dimension changed), and runs
`meshc import` and, when that succeeds, `meshc compile --mesh tp=2 --emit
sharded`. meshc must end with status 0 or 1 (a diagnostic); anything else, a
crash or a run over --timeout seconds, is printed with the mutations and the
model kept in --out (default build/mutate_onnx). Exit status 1 if any run
crashed. Python's random with --seed makes the mutations reproducible.

This is a quick check with no coverage feedback; it found a Gather folded
from a size-0 dimension (SIGSEGV in the reference evaluator) and Split-18's
num_outputs 2^40 (minutes of looping) in its first 600 runs. Crashes become
tests in test/compiler/import/diagnostics.test.
"""
import argparse
import copy
import glob
import os
import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
EDGE_INTS = [-9, -3, -1, 0, 1, 2, 3, 7, 100, 2**40]


def mutate(m, rng):
    """Applies one mutation to model `m` in place; returns what it did."""
    g = m.graph
    nodes = list(g.node)
    kind = rng.randrange(6)
    if kind == 0:
        cands = [(n, a) for n in nodes for a in n.attribute if a.type == onnx.AttributeProto.INT]
        if cands:
            n, a = rng.choice(cands)
            a.i = rng.choice(EDGE_INTS)
            return f"{n.op_type}.{a.name} = {a.i}"
    elif kind == 1:
        cands = [(n, a) for n in nodes for a in n.attribute if a.type == onnx.AttributeProto.INTS]
        if cands:
            n, a = rng.choice(cands)
            vals = list(a.ints)
            if vals and rng.random() < 0.5:
                vals[rng.randrange(len(vals))] = rng.choice(EDGE_INTS[:6])
            else:
                rng.shuffle(vals)
                vals = vals[:rng.randint(0, len(vals))]
            del a.ints[:]
            a.ints.extend(vals)
            return f"{n.op_type}.{a.name} = {vals}"
    elif kind == 2:
        cands = [t for t in g.initializer
                 if t.data_type == onnx.TensorProto.INT64 and int(np.prod(t.dims)) <= 16]
        if cands:
            t = rng.choice(cands)
            arr = numpy_helper.to_array(t).copy()
            if arr.size:
                arr.flat[rng.randrange(arr.size)] = rng.choice(EDGE_INTS)
            t.CopyFrom(numpy_helper.from_array(arr, t.name))
            return f"initializer {t.name} = {arr.tolist()}"
    elif kind == 3:
        n = rng.choice(nodes)
        if n.input:
            values = ([o for x in nodes for o in x.output] + [i.name for i in g.input]
                      + [t.name for t in g.initializer])
            i = rng.randrange(len(n.input))
            n.input[i] = rng.choice(values)
            return f"{n.op_type} '{n.name}' input {i} = {n.input[i]}"
    elif kind == 4:
        n = rng.choice(nodes)
        g.node.remove(n)
        return f"deleted {n.op_type} '{n.name}'"
    else:
        inp = rng.choice(list(g.input))
        dims = list(inp.type.tensor_type.shape.dim)
        if dims:
            d = rng.choice(dims)
            v = rng.choice([0, 1, 3, 5, -1])
            if v < 0:
                d.dim_param = "mutated"
            else:
                d.dim_value = v
            return f"input {inp.name} dimension = {v if v >= 0 else 'mutated'}"
    return "no change"


def run(cmd, timeout):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stderr.strip().splitlines()[-1:] if r.stderr else []
    except subprocess.TimeoutExpired:
        return "timeout", []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--seeds", default=os.path.join(HERE, "..", "models", "real", "corpus",
                                                   "*", "model.onnx"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="build/mutate_onnx")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    seeds = sorted(glob.glob(args.seeds))
    if not seeds:
        sys.exit(f"no seed models match {args.seeds}")
    models = {s: onnx.load(s, load_external_data=False) for s in seeds}
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    crashes = 0
    for i in range(args.runs):
        seed = rng.choice(seeds)
        m = copy.deepcopy(models[seed])
        what = [mutate(m, rng) for _ in range(rng.randint(1, 3))]
        path = os.path.join(work, "model.onnx")
        onnx.save(m, path)
        for cmd in ([args.meshc, "import", path],
                    [args.meshc, "compile", path, "--mesh", "tp=2", "--emit", "sharded",
                     "-o", os.devnull]):
            status, last = run(cmd, args.timeout)
            if status not in (0, 1):
                crashes += 1
                kept = os.path.join(args.out, f"crash_{args.seed}_{i}.onnx")
                onnx.save(m, kept)
                print(f"run {i}: meshc {cmd[1]} ended with {status} on "
                      f"{os.path.basename(os.path.dirname(seed))} after {what}: {kept} "
                      f"{' '.join(last)}", flush=True)
            if status != 0:
                break
    print(f"mutate_onnx: {args.runs} runs, {crashes} crashed")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
