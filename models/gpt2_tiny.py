#!/usr/bin/env python3
"""Writes a tiny GPT-2 in the idioms torch.onnx's TorchScript exporter uses.

Usage: models/gpt2_tiny.py --out DIR [--layers 2] [--seq 8] [--seed 0]

DIR/model.onnx          the model (opset 17; weights embedded)
DIR/inputs/input_ids.npy  a prompt of `seq` token ids
DIR/reference/logits.npy  onnxruntime's output for it (the numerical reference)

The graph: token and position embeddings (Gather); per layer a decomposed
LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add), Conv1D as
Reshape -> Gemm -> Reshape, Split of the fused qkv, heads by Reshape and
Transpose, scores scaled by Div, the causal mask as a Slice of the boolean
`bias` buffer feeding Where with -1e4, Softmax, gelu_new spelled out with
Pow/Mul/Add/Tanh; final LayerNorm and an lm_head tied to the token embedding
(Transpose + MatMul). Sizes: d=32, 4 heads, vocabulary 64.

Shapes are static (batch 1, `seq` tokens): meshc does not fold symbolic shape
chains yet, so the exporter's Shape/Gather/Concat arithmetic is written as
the constants it evaluates to.
"""
import argparse

import numpy as np
from common import save_with_reference
from onnx import TensorProto, helper, numpy_helper

D, HEADS, VOCAB, MAX_POS = 32, 4, 64, 16
HD = D // HEADS


def build(layers, seq, rng):
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def w(name, *shape, scale=0.2):
        return init(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def node(op, ins, **attrs):
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=f"/{op}_{len(nodes)}", **attrs))
        return out

    def ints(name, values):
        return init(name, np.array(values, np.int64))

    eps = init("eps", np.array(1e-5, np.float32))
    two = init("two", np.array(2.0, np.float32))

    def layer_norm(x, p):
        mean = node("ReduceMean", [x], axes=[-1], keepdims=1)
        centered = node("Sub", [x, mean])
        var = node("ReduceMean", [node("Pow", [centered, two])], axes=[-1], keepdims=1)
        normed = node("Div", [centered, node("Sqrt", [node("Add", [var, eps])])])
        gamma = init(p + ".weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        beta = init(p + ".bias", (0.1 * rng.standard_normal(D)).astype(np.float32))
        return node("Add", [node("Mul", [normed, gamma]), beta])

    def conv1d(x, p, n_in, n_out):
        flat = ints(p + ".in_shape", [-1, n_in])
        out_shape = ints(p + ".out_shape", [1, seq, n_out])
        y = node("Gemm", [node("Reshape", [x, flat]), w(p + ".weight", n_in, n_out),
                          w(p + ".bias", n_out, scale=0.05)])
        return node("Reshape", [y, out_shape])

    heads = ints("heads_shape", [1, seq, HEADS, HD])
    merged = ints("merged_shape", [1, seq, D])
    bias = init("bias", np.tril(np.ones((1, 1, MAX_POS, MAX_POS), dtype=bool)))
    starts, ends = ints("mask_starts", [0, 0]), ints("mask_ends", [seq, seq])
    mask_axes = ints("mask_axes", [2, 3])
    masked = init("masked_bias", np.array(-1e4, np.float32))
    scale = init("scale", np.array(np.sqrt(HD), np.float32))
    c1, c2, c3 = (init(n, np.array(v, np.float32)) for n, v in
                  (("half", 0.5), ("gelu_k", 0.044715), ("sqrt_2_over_pi", np.sqrt(2 / np.pi))))
    one, three = init("one", np.array(1.0, np.float32)), init("three", np.array(3.0, np.float32))

    wte = w("wte", VOCAB, D, scale=0.5)
    h = node("Add", [node("Gather", [wte, "input_ids"], axis=0),
                     node("Gather", [w("wpe", MAX_POS, D, scale=0.1), ints("position_ids", [list(range(seq))])],
                          axis=0)])
    for i in range(layers):
        p = f"h.{i}."
        qkv = conv1d(layer_norm(h, p + "ln_1"), p + "attn.c_attn", D, 3 * D)
        split = f"qkv_{i}"
        nodes.append(helper.make_node("Split", [qkv, ints(p + "split", [D, D, D])],
                                      [split + "_q", split + "_k", split + "_v"], axis=2,
                                      name=f"/{p}Split"))
        q, k, v = (node("Reshape", [split + s, heads]) for s in ("_q", "_k", "_v"))
        q = node("Transpose", [q], perm=[0, 2, 1, 3])
        k = node("Transpose", [k], perm=[0, 2, 3, 1])
        v = node("Transpose", [v], perm=[0, 2, 1, 3])
        scores = node("Div", [node("MatMul", [q, k]), scale])
        causal = node("Slice", [bias, starts, ends, mask_axes])
        probs = node("Softmax", [node("Where", [causal, scores, masked])], axis=-1)
        attn = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]),
                                merged])
        h = node("Add", [h, conv1d(attn, p + "attn.c_proj", D, D)])
        x = conv1d(layer_norm(h, p + "ln_2"), p + "mlp.c_fc", D, 4 * D)
        inner = node("Mul", [c3, node("Add", [x, node("Mul", [c2, node("Pow", [x, three])])])])
        gelu = node("Mul", [node("Mul", [c1, x]), node("Add", [one, node("Tanh", [inner])])])
        h = node("Add", [h, conv1d(gelu, p + "mlp.c_proj", 4 * D, D)])
    logits = node("MatMul", [layer_norm(h, "ln_f"), node("Transpose", [wte], perm=[1, 0])])
    nodes[-1].output[0] = "logits"

    graph = helper.make_graph(
        nodes, "gpt2_tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, VOCAB])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="meshc models/gpt2_tiny.py", ir_version=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not 1 <= args.seq <= MAX_POS:
        ap.error(f"--seq must be in [1, {MAX_POS}]")
    rng = np.random.default_rng(args.seed)
    model = build(args.layers, args.seq, rng)
    ids = rng.integers(0, VOCAB, (1, args.seq)).astype(np.int64)
    save_with_reference(model, args.out, {"input_ids": ids}, "models/gpt2_tiny.py")


if __name__ == "__main__":
    main()
