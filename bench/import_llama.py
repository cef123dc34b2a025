#!/usr/bin/env python3
"""Benchmark: `meshc import` of a Llama-3-8B-shaped ONNX model.

Usage: bench/import_llama.py --meshc build/bin/meshc [--layers 32] [--out DIR]

Writes DIR/model.onnx (the graph: 32 layers, d=4096, GQA 32/8 heads, FFN 14336,
vocabulary 128256, bf16 weights) whose weights live in DIR/weights.bin as
external data. weights.bin is a sparse file of the full size (~16 GB
apparent, no disk blocks): meshc refers to weights and never reads them, so the
bytes need not exist. Then runs `meshc import` (and `--optimize`) under
/usr/bin/time and prints wall time and peak RSS, plus the same for a model with
a quarter of the layers, to show how both scale with the graph.

The graph uses the exporters' idioms meshc imports today: Gather embedding,
decomposed RMSNorm (Pow, ReduceMean, Add, Sqrt, Div, Mul), RoPE through
Slice/Neg/Concat with precomputed cos/sin, GQA repeat_kv through
Unsqueeze/Expand/Reshape, additive causal mask, SwiGLU. Shapes are static
(batch 1, sequence 128): folding of symbolic shape chains is not in meshc yet.
"""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

D, HEADS, KV_HEADS, FFN, VOCAB, SEQ = 4096, 32, 8, 14336, 128256, 128
HD = D // HEADS
BF16 = TensorProto.BFLOAT16


class Weights:
    """Initializers as external-data references into one sparse file."""

    def __init__(self):
        self.offset = 0
        self.tensors = []

    def add(self, name, shape, dtype=BF16):
        t = TensorProto()
        t.name, t.data_type = name, dtype
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        length = int(np.prod(shape)) * (2 if dtype == BF16 else 4)
        for k, v in (("location", "weights.bin"), ("offset", str(self.offset)),
                     ("length", str(length))):
            t.external_data.add(key=k, value=v)
        self.offset += length
        self.tensors.append(t)
        return name


def build(layers):
    w = Weights()
    nodes, consts = [], []

    def const(name, array):
        consts.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, ins, outs=None, **attrs):
        outs = outs or [f"{op.lower()}_{len(nodes)}"]
        nodes.append(helper.make_node(op, ins, outs, name=f"n{len(nodes)}_{op}", **attrs))
        return outs[0] if len(outs) == 1 else outs

    two = const("two", np.array(2.0, np.float32).astype(np.float32))
    eps = const("eps", np.array(1e-5, np.float32))
    scale = const("scale", np.array(1.0 / np.sqrt(HD), np.float32))
    last = const("last", np.array([-1], np.int64))
    q_shape = const("q_shape", np.array([1, SEQ, HEADS, HD], np.int64))
    kv_shape = const("kv_shape", np.array([1, SEQ, KV_HEADS, HD], np.int64))
    rep_shape = const("rep_shape", np.array([1, KV_HEADS, HEADS // KV_HEADS, SEQ, HD], np.int64))
    merged_kv = const("merged_kv", np.array([1, HEADS, SEQ, HD], np.int64))
    out_shape = const("out_shape", np.array([1, SEQ, D], np.int64))
    two_ax = const("axis2", np.array([2], np.int64))
    half = [const("h0", np.array([0], np.int64)), const("h1", np.array([HD // 2], np.int64)),
            const("h2", np.array([HD], np.int64)), const("ax3", np.array([3], np.int64))]
    cos = const("cos", np.ones((1, 1, SEQ, HD), np.float32))
    sin = const("sin", np.zeros((1, 1, SEQ, HD), np.float32))
    mask = const("mask", np.triu(np.full((1, 1, SEQ, SEQ), -1e9, np.float32), 1))

    def rms(x, name):
        sq = node("Pow", [x, two])
        mean = node("ReduceMean", [sq], axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [mean, eps])])
        return node("Mul", [node("Div", [x, std]), w.add(name, [D], TensorProto.FLOAT)])

    def linear(x, name, n_in, n_out):
        return node("Cast", [node("MatMul", [node("Cast", [x], to=BF16), w.add(name, [n_in, n_out])])],
                    to=TensorProto.FLOAT)

    def rope(x):
        x1 = node("Slice", [x, half[0], half[1], half[3]])
        x2 = node("Slice", [x, half[1], half[2], half[3]])
        rot = node("Concat", [node("Neg", [x2]), x1], axis=3)
        return node("Add", [node("Mul", [x, cos]), node("Mul", [rot, sin])])

    h = node("Gather", [w.add("embed", [VOCAB, D]), "input_ids"], axis=0)
    h = node("Cast", [h], to=TensorProto.FLOAT)
    for i in range(layers):
        p = f"layers.{i}."
        x = rms(h, p + "input_norm")
        q = node("Transpose", [node("Reshape", [linear(x, p + "q", D, D), q_shape])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "k", D, KV_HEADS * HD), kv_shape])],
                 perm=[0, 2, 1, 3])
        v = node("Transpose", [node("Reshape", [linear(x, p + "v", D, KV_HEADS * HD), kv_shape])],
                 perm=[0, 2, 1, 3])
        q, k = rope(q), rope(k)
        k = node("Reshape", [node("Expand", [node("Unsqueeze", [k, two_ax]), rep_shape]), merged_kv])
        v = node("Reshape", [node("Expand", [node("Unsqueeze", [v, two_ax]), rep_shape]), merged_kv])
        s = node("Div", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]), node("Reciprocal", [scale])])
        attn = node("MatMul", [node("Softmax", [node("Add", [s, mask])], axis=-1), v])
        attn = node("Reshape", [node("Transpose", [attn], perm=[0, 2, 1, 3]), out_shape])
        h = node("Add", [h, linear(attn, p + "o", D, D)])
        x = rms(h, p + "post_norm")
        gate = linear(x, p + "gate", D, FFN)
        act = node("Mul", [gate, node("Sigmoid", [gate])])
        h = node("Add", [h, linear(node("Mul", [act, linear(x, p + "up", D, FFN)]), p + "down", FFN, D)])
    logits = linear(rms(h, "final_norm"), "lm_head", D, VOCAB)
    nodes[-1].output[0] = "logits"

    graph = helper.make_graph(
        nodes, "llama", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], consts + w.tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), w.offset


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
    args = ap.parse_args()
    print(f"{'layers':>6} {'nodes':>6} {'weights (GB)':>12} {'model.onnx (KB)':>15} "
          f"{'import (s)':>10} {'RSS (MB)':>8} {'--optimize (s)':>14} {'RSS (MB)':>8}")
    for layers in (max(1, args.layers // 4), args.layers):
        out = os.path.join(args.out, f"{layers}")
        os.makedirs(out, exist_ok=True)
        model, total = build(layers)
        path = os.path.join(out, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        with open(os.path.join(out, "weights.bin"), "wb") as f:
            f.truncate(total)  # sparse: meshc never reads the bytes
        t, rss = measure([args.meshc, "import", path, "-o", os.devnull])
        to, rsso = measure([args.meshc, "import", "--optimize", path, "-o", os.devnull])
        print(f"{layers:>6} {len(model.graph.node):>6} {total / 1e9:>12.1f} "
              f"{os.path.getsize(path) / 1024:>15.0f} {t:>10.2f} {rss:>8.0f} {to:>14.2f} {rsso:>8.0f}")


if __name__ == "__main__":
    main()
