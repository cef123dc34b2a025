#!/usr/bin/env python3
"""Writes a tiny GPT-2 in the idioms torch.onnx's TorchScript exporter uses.

Usage: models/gpt2_tiny.py --out DIR [--layers 2] [--seq 8] [--past 0] [--seed 0]
                           [--batch 1] [--dynamic]

DIR/model.onnx          the model (opset 17; weights embedded)
DIR/inputs/*.npy        a prompt of `seq` token ids (and the KV cache, with --past)
DIR/reference/*.npy     onnxruntime's outputs for them (the numerical reference)

With --past P the model is a cached step as Hugging Face exports it: inputs
past_key_values.N.key / .value ([1, heads, P, head_dim]) are concatenated in
front of the new keys and values, which leave as present.N.key / .value
([1, heads, P + seq, head_dim]); position ids start at P.

The graph: token and position embeddings (Gather); per layer a decomposed
LayerNorm (ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add), Conv1D as
Reshape -> Gemm -> Reshape, Split of the fused qkv, heads by Reshape and
Transpose, scores scaled by Div, the causal mask as a Slice of the boolean
`bias` buffer feeding Where with -1e4, Softmax, gelu_new spelled out with
Pow/Mul/Add/Tanh; final LayerNorm and an lm_head tied to the token embedding
(Transpose + MatMul). Sizes: d=32, 4 heads, vocabulary 64.

The exporter's shape arithmetic is kept as it writes it: x.view(...) through
Shape -> Slice -> Concat -> Reshape, Conv1D's x.view(-1, x.size(-1)) through
Shape -> Gather -> Unsqueeze -> Concat, position ids through Range on the
sequence length, and the causal mask's bounds key_len - query_len : key_len
through Shape -> Gather -> Sub -> Unsqueeze. Shapes are static (`batch`, default 1, by `seq`
tokens), so meshc folds all of it to constants at import; symbolic shapes are
not supported yet.
"""
import argparse

import numpy as np
from common import dims, save_with_reference
from onnx import TensorProto, helper, numpy_helper

D, HEADS, VOCAB, MAX_POS = 32, 4, 64, 16
HD = D // HEADS


def build(layers, seq, rng, past=0, batch=1, dynamic=False):
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

    minus1, zero1, axis0 = ints("minus1", [-1]), ints("zero1", [0]), ints("axis0", [0])
    minus2 = ints("minus2", [-2])

    def size(x, dim):
        """x.size(dim) as a 1-element tensor: Shape -> Gather -> Unsqueeze."""
        g = node("Gather", [node("Shape", [x]), init(f"dim{dim}_{len(nodes)}",
                                                     np.array(dim, np.int64))], axis=0)
        return node("Unsqueeze", [g, axis0])

    def view_last(x, tail):
        """x.view(x.size()[:-1] + tail): Shape -> Slice -> Concat -> Reshape."""
        head = node("Slice", [node("Shape", [x]), zero1, minus1])
        return node("Reshape", [x, node("Concat", [head, tail], axis=0)])

    def conv1d(x, p, n_in, n_out):
        # x.view(-1, x.size(-1)) @ W + b, then view(size_out)
        flat = node("Reshape", [x, node("Concat", [minus1, size(x, -1)], axis=0)])
        y = node("Gemm", [flat, w(p + ".weight", n_in, n_out), w(p + ".bias", n_out, scale=0.05)])
        size_out = node("Concat", [node("Slice", [node("Shape", [x]), zero1, minus1]),
                                   ints(p + ".nf", [n_out])], axis=0)
        return node("Reshape", [y, size_out])

    heads_tail = ints("heads_tail", [HEADS, HD])
    bias = init("bias", np.tril(np.ones((1, 1, MAX_POS, MAX_POS), dtype=bool)))
    zero_start = ints("zero_start", [0])
    axis2, axis3 = ints("axis2", [2]), ints("axis3", [3])
    masked = init("masked_bias", np.array(-1e4, np.float32))
    scale = init("scale", np.array(np.sqrt(HD), np.float32))
    c1, c2, c3 = (init(n, np.array(v, np.float32)) for n, v in
                  (("half", 0.5), ("gelu_k", 0.044715), ("sqrt_2_over_pi", np.sqrt(2 / np.pi))))
    one, three = init("one", np.array(1.0, np.float32)), init("three", np.array(3.0, np.float32))

    wte = w("wte", VOCAB, D, scale=0.5)
    # position_ids = arange(past_length, past_length + input_ids.size(-1))
    last_dim = init("last_dim", np.array(-1, np.int64))
    seq_len = node("Gather", [node("Shape", ["input_ids"]), last_dim], axis=0)
    if past:
        past_len = node("Gather", [node("Shape", ["past_key_values.0.key"]),
                                   init("dim_m2", np.array(-2, np.int64))], axis=0)
    else:
        past_len = init("range_start", np.array(0, np.int64))
    positions = node("Unsqueeze", [node("Range", [past_len, node("Add", [past_len, seq_len]),
                                                  init("range_step", np.array(1, np.int64))]),
                                   axis0])
    h = node("Add", [node("Gather", [wte, "input_ids"], axis=0),
                     node("Gather", [w("wpe", MAX_POS, D, scale=0.1), positions], axis=0)])
    for i in range(layers):
        p = f"h.{i}."
        qkv = conv1d(layer_norm(h, p + "ln_1"), p + "attn.c_attn", D, 3 * D)
        split = f"qkv_{i}"
        nodes.append(helper.make_node("Split", [qkv, ints(p + "split", [D, D, D])],
                                      [split + "_q", split + "_k", split + "_v"], axis=2,
                                      name=f"/{p}Split"))
        q, k, v = (view_last(split + s, heads_tail) for s in ("_q", "_k", "_v"))
        q = node("Transpose", [q], perm=[0, 2, 1, 3])
        k = node("Transpose", [k], perm=[0, 2, 1, 3])
        v = node("Transpose", [v], perm=[0, 2, 1, 3])
        if past:
            k = node("Concat", [f"past_key_values.{i}.key", k], axis=-2)
            v = node("Concat", [f"past_key_values.{i}.value", v], axis=-2)
            for name, value in ((f"present.{i}.key", k), (f"present.{i}.value", v)):
                nodes.append(helper.make_node("Identity", [value], [name], name=f"/{name}"))
        k = node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, k]), scale])
        # bias[:, :, key_len - query_len : key_len, :key_len]
        query_len, key_len = size(q, -2), size(k, -1)
        rows = node("Slice", [bias, node("Sub", [key_len, query_len]), key_len, axis2])
        causal = node("Slice", [rows, zero_start, key_len, axis3])
        probs = node("Softmax", [node("Where", [causal, scores, masked])], axis=-1)
        # merge heads: x.view(x.size()[:-2] + (x.size(-2) * x.size(-1),))
        t = node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        merged = node("Concat", [node("Slice", [node("Shape", [t]), zero1, minus2]),
                                 node("Mul", [size(t, -2), size(t, -1)])], axis=0)
        attn = node("Reshape", [t, merged])
        h = node("Add", [h, conv1d(attn, p + "attn.c_proj", D, D)])
        x = conv1d(layer_norm(h, p + "ln_2"), p + "mlp.c_fc", D, 4 * D)
        inner = node("Mul", [c3, node("Add", [x, node("Mul", [c2, node("Pow", [x, three])])])])
        gelu = node("Mul", [node("Mul", [c1, x]), node("Add", [one, node("Tanh", [inner])])])
        h = node("Add", [h, conv1d(gelu, p + "mlp.c_proj", 4 * D, D)])
    logits = node("MatMul", [layer_norm(h, "ln_f"), node("Transpose", [wte], perm=[1, 0])])
    nodes[-1].output[0] = "logits"

    n = dims(dynamic, batch, seq, past)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [n.batch, n.seq])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [n.batch, n.seq, VOCAB])]
    for i in range(layers if past else 0):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kind}",
                                                        TensorProto.FLOAT,
                                                        [n.batch, HEADS, n.past, HD]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kind}", TensorProto.FLOAT,
                                                         [n.batch, HEADS, n.total, HD]))
    graph = helper.make_graph(nodes, "gpt2_tiny", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="meshc models/gpt2_tiny.py", ir_version=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--past", type=int, default=0,
                    help="length of the KV cache given as input (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true",
                    help="symbolic batch and sequence axes (the inputs written are still "
                         "--batch by --seq)")
    args = ap.parse_args()
    if not 1 <= args.seq or args.past < 0 or args.past + args.seq > MAX_POS:
        ap.error(f"--seq must be at least 1 and --past + --seq at most {MAX_POS}")
    rng = np.random.default_rng(args.seed)
    model = build(args.layers, args.seq, rng, args.past, args.batch, args.dynamic)
    feeds = {"input_ids": rng.integers(0, VOCAB, (args.batch, args.seq)).astype(np.int64)}
    for i in range(args.layers if args.past else 0):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = rng.standard_normal(
                (args.batch, HEADS, args.past, HD)).astype(np.float32)
    save_with_reference(model, args.out, feeds, "models/gpt2_tiny.py")


if __name__ == "__main__":
    main()
