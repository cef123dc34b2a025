#!/usr/bin/env python3
"""Writes a tiny BERT-style encoder in torch.onnx's idioms.

Usage: models/bert.py --out DIR [--layers 2] [--seq 8] [--seed 0] [--batch 1]
                      [--dynamic]

DIR/model.onnx                 the model (opset 17; d=32, 4 heads, FFN 64,
                               vocabulary 64; f32 weights embedded)
DIR/inputs/input_ids.npy       token ids
DIR/inputs/attention_mask.npy  1 for tokens, 0 for padding (the last two)
DIR/reference/last_hidden_state.npy  onnxruntime's output

The graph: word + position + token-type embeddings (Gather, Add),
LayerNormalization-17; per layer bidirectional attention whose padding mask
is built from the attention_mask input as torch exports it (Unsqueeze,
Cast, Sub from 1, Mul by -10000, Add to the scores), Softmax, output
projection with residual and LayerNormalization, exact GELU spelled with Erf
(x * 0.5 * (1 + erf(x / sqrt 2))), and the FFN residual. Shapes are static
(`batch`, default 1, by `seq` tokens), or with --dynamic the symbolic axes
batch_size and sequence_length.
"""
import argparse

import numpy as np
from common import dims, save_with_reference
from onnx import TensorProto, helper, numpy_helper

D, HEADS, FFN, VOCAB, MAX_POS = 32, 4, 64, 64, 16
HD = D // HEADS


def build(layers, seq, rng, batch=1, dynamic=False):
    nodes, inits = [], []

    def init(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def w(name, *shape):
        return init(name, (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32))

    def node(op, ins, **attrs):
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=f"/{op}_{len(nodes)}", **attrs))
        return out

    def scalar(name, value):
        return init(name, np.array(value, np.float32))

    def layer_norm(x, p):
        g = init(p + ".weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        b = init(p + ".bias", (0.1 * rng.standard_normal(D)).astype(np.float32))
        return node("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-12)

    def dense(x, p, n_in, n_out):
        return node("Add", [node("MatMul", [x, w(p + ".weight", n_in, n_out)]),
                            init(p + ".bias", (0.05 * rng.standard_normal(n_out)).astype(np.float32))])

    one, neg, sqrt2 = scalar("one", 1.0), scalar("neg_inf", -10000.0), scalar("sqrt2", np.sqrt(2))
    half, scale = scalar("half", 0.5), scalar("scale", np.sqrt(HD))
    heads = init("heads_shape", np.array([batch, seq, HEADS, HD], np.int64))
    merged = init("merged_shape", np.array([batch, seq, D], np.int64))
    axes12 = init("axes12", np.array([1, 2], np.int64))

    # Padding mask as torch exports it: (1 - mask[:, None, None, :]) * -10000
    m = node("Cast", [node("Unsqueeze", ["attention_mask", axes12])], to=TensorProto.FLOAT)
    additive = node("Mul", [node("Sub", [one, m]), neg])

    h = node("Add", [node("Gather", [w("word_embeddings", VOCAB, D), "input_ids"], axis=0),
                     node("Gather", [w("position_embeddings", MAX_POS, D),
                                     init("position_ids", np.arange(seq)[None].astype(np.int64))],
                          axis=0)])
    h = node("Add", [h, node("Gather", [w("token_type_embeddings", 2, D),
                                        init("token_type_ids", np.zeros((batch, seq), np.int64))],
                             axis=0)])
    h = layer_norm(h, "embeddings.LayerNorm")
    for i in range(layers):
        p = f"encoder.layer.{i}."
        q, k, v = (node("Transpose", [node("Reshape", [dense(h, p + n, D, D), heads])],
                        perm=[0, 2, 1, 3]) for n in ("query", "key", "value"))
        scores = node("Div", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]), scale])
        probs = node("Softmax", [node("Add", [scores, additive])], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]),
                               merged])
        h = layer_norm(node("Add", [dense(ctx, p + "attention.output", D, D), h]),
                       p + "attention.output.LayerNorm")
        x = dense(h, p + "intermediate", D, FFN)
        gelu = node("Mul", [node("Mul", [x, half]),
                            node("Add", [one, node("Erf", [node("Div", [x, sqrt2])])])])
        h = layer_norm(node("Add", [dense(gelu, p + "output", FFN, D), h]), p + "output.LayerNorm")
    nodes[-1].output[0] = "last_hidden_state"

    n = dims(dynamic, batch, seq)
    graph = helper.make_graph(
        nodes, "bert_tiny",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [n.batch, n.seq]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [n.batch, n.seq])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       [n.batch, n.seq, D])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="meshc models/bert.py", ir_version=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true",
                    help="symbolic batch and sequence axes (the inputs written are still "
                         "--batch by --seq)")
    args = ap.parse_args()
    if not 3 <= args.seq <= MAX_POS or args.batch < 1:
        ap.error(f"--seq must be in [3, {MAX_POS}] and --batch at least 1")
    rng = np.random.default_rng(args.seed)
    model = build(args.layers, args.seq, rng, args.batch, args.dynamic)
    # Row b pads its last 2 + b tokens (at least one token stays visible).
    mask = [[1] * max(1, args.seq - 2 - b) + [0] * min(args.seq - 1, 2 + b)
            for b in range(args.batch)]
    feeds = {"input_ids": rng.integers(0, VOCAB, (args.batch, args.seq)).astype(np.int64),
             "attention_mask": np.array(mask, np.int64)}
    save_with_reference(model, args.out, feeds, "models/bert.py")


if __name__ == "__main__":
    main()
