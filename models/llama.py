#!/usr/bin/env python3
"""Writes a Llama-style ONNX model in the idioms exporters use.

Usage: models/llama.py --out DIR [--layers 2] [--seq 8] [--past 0] [--seed 0]
                       [--batch 1] [--dynamic]
                       [--opset23 | --fused [--pad N | --pad-past N]]

DIR/model.onnx            a tiny Llama (d=32, GQA 4/2 heads, FFN 64,
                          vocabulary 64; f32 weights embedded)
DIR/inputs/input_ids.npy  a prompt of `seq` token ids
DIR/reference/logits.npy  onnxruntime's output for it

The graph: Gather embedding; per layer a decomposed RMSNorm (Pow,
ReduceMean, Add, Sqrt, Div, Mul), q/k/v projections, heads by Reshape and
Transpose, RoPE through Slice/Neg/Concat with precomputed cos/sin, GQA
repeat_kv through Unsqueeze/Expand/Reshape, scores scaled by Div, an additive
causal mask, Softmax, output projection and residual; SwiGLU (Sigmoid, Mul)
MLP; final RMSNorm and lm_head. With --opset23 the norms, RoPE and attention
are the opset-23 operators instead (the same function); with --fused, the
onnxruntime-genai form (build_fused: GroupQueryAttention, com.microsoft
RotaryEmbedding, [Skip]SimplifiedLayerNormalization; attention_mask and
position_ids inputs). With --past P the
model is a cached step: past_key_values.N.key / .value ([1, kv_heads, P,
head_dim]) are concatenated in front of the new keys and values (after RoPE,
before the GQA repetition) and returned as present.N.key / .value; positions
and the causal mask start at P. Shapes are static (`batch`, default 1, by `seq` tokens),
or with --dynamic the graph's inputs and outputs carry Hugging Face's
symbolic axes (batch_size, sequence_length, past_sequence_length,
total_sequence_length) and takes every size from the inputs' shapes through
the exporters' shape arithmetic (build_dynamic: Shape -> Slice -> Concat ->
Reshape / Expand, Range for the positions and the causal mask, rotary tables
of 64 positions gathered at them), so one model serves every size; meshc
imports it with symbolic dimensions, or `meshc --dim` gives them sizes.

`build()` is also what bench/import_llama.py uses, with Llama-3-8B sizes and
bf16 weights as references into a sparse external-data file.
"""
import argparse
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from common import dims
from onnx import TensorProto, helper, numpy_helper


@dataclass
class Config:
    layers: int = 2
    d: int = 32
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 64
    vocab: int = 64
    seq: int = 8
    past: int = 0
    batch: int = 1
    dynamic: bool = False
    local_window: int = -1
    # > 0: GroupQueryAttention's sliding_window_cache, past and present of
    # this capacity (onnxruntime-genai's sliding-window layers).
    window_cache: int = 0


class EmbeddedWeights:
    """Random f32 weights stored in the model (deterministic)."""

    def __init__(self, rng):
        self.rng = rng
        self.tensors = []

    def add(self, name, shape, norm=False):
        values = (1 + 0.1 * self.rng.standard_normal(shape) if norm
                  else self.rng.standard_normal(shape) / np.sqrt(shape[0]))
        self.tensors.append(numpy_helper.from_array(values.astype(np.float32), name))
        return name


def axes(cfg):
    """The graph's batch / seq / past / total dimensions: sizes, or symbolic
    names with cfg.dynamic."""
    return dims(cfg.dynamic, cfg.batch, cfg.seq, cfg.past)


def signature(cfg, extra_inputs):
    """Graph inputs (input_ids, `extra_inputs`, then the past KV cache) and
    outputs (logits, then the present KV cache)."""
    hd, n = cfg.d // cfg.heads, axes(cfg)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                            [n.batch, n.seq])] + extra_inputs
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                             [n.batch, n.seq, cfg.vocab])]
    # A fixed-capacity cache keeps its length, named as the builder names it.
    capacity = ("past_sliding_length" if cfg.dynamic else cfg.window_cache) \
        if cfg.window_cache else None
    for i in range(cfg.layers if cfg.past else 0):
        for kind in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(
                f"past_key_values.{i}.{kind}", TensorProto.FLOAT,
                [n.batch, cfg.kv_heads, capacity or n.past, hd]))
            outputs.append(helper.make_tensor_value_info(
                f"present.{i}.{kind}", TensorProto.FLOAT,
                [n.batch, cfg.kv_heads, capacity or n.total, hd]))
    return inputs, outputs


def build(cfg, weights, matmul_dtype=None, opset23=False):
    """The model as a ModelProto; `weights.add(name, shape, norm=)` supplies
    initializers. With matmul_dtype (e.g. BFLOAT16) activations are cast to
    it around each projection, as mixed-precision exports do. With opset23,
    the norms, rotary embeddings and attention are the opset-23 operators
    RMSNormalization, RotaryEmbedding (position ids into [seq, head_dim / 2]
    caches) and Attention (4-D, GQA, is_causal) instead of their
    decompositions."""
    hd = cfg.d // cfg.heads
    nodes, consts = [], []

    def const(name, array):
        consts.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, ins, **attrs):
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [out], name=f"/{op}_{len(nodes)}", **attrs))
        return out

    if cfg.dynamic:
        spell = dynamic_spelling(cfg, const, node, opset23)
    else:
        spell = static_spelling(cfg, const, node, opset23)
    return decoder(cfg, weights, nodes, consts, const, node, spell, opset23, matmul_dtype)


def rope_halves(const, node, cos, sin, hd):
    """x -> x * cos + rotate_half(x) * sin, rotate_half through
    Slice/Neg/Concat (the slice bounds are made once)."""
    h0, h1 = const("h0", np.array([0], np.int64)), const("h1", np.array([hd // 2], np.int64))
    h2, ax3 = const("h2", np.array([hd], np.int64)), const("ax3", np.array([3], np.int64))

    def rope(x):
        x1 = node("Slice", [x, h0, h1, ax3])
        x2 = node("Slice", [x, h1, h2, ax3])
        rotated = node("Concat", [node("Neg", [x2]), x1], axis=3)
        return node("Add", [node("Mul", [x, cos]), node("Mul", [rotated, sin])])
    return rope


def static_spelling(cfg, const, node, opset23):
    """Sizes as constants of the given batch, sequence and past: what a
    traced export with fixed shapes holds."""
    hd = cfg.d // cfg.heads
    total = cfg.past + cfg.seq
    inv_freq = 1.0 / (10000 ** (np.arange(0, hd, 2) / hd))
    angles = np.outer(np.arange(cfg.past, total), inv_freq)
    out_shape = const("out_shape", np.array([cfg.batch, cfg.seq, cfg.d], np.int64))
    shapes = {cfg.heads: const("q_shape", np.array([cfg.batch, cfg.seq, cfg.heads, hd], np.int64)),
              cfg.kv_heads: const("kv_shape",
                                  np.array([cfg.batch, cfg.seq, cfg.kv_heads, hd], np.int64))}
    spell = SimpleNamespace(
        heads_of=lambda x, heads: node("Transpose", [node("Reshape", [x, shapes[heads]])],
                                       perm=[0, 2, 1, 3]),
        merge=lambda t: node("Reshape", [t, out_shape]))
    if opset23:
        positions = const("positions", np.arange(cfg.past, total, dtype=np.int64)[None])
        all_angles = np.outer(np.arange(total), inv_freq)
        cos_cache = const("cos_cache", np.cos(all_angles).astype(np.float32))
        sin_cache = const("sin_cache", np.sin(all_angles).astype(np.float32))
        spell.rope = lambda x: node("RotaryEmbedding", [x, cos_cache, sin_cache, positions])
        return spell
    spell.scale = const("scale", np.array(np.sqrt(hd), np.float32))
    rep_shape = const("rep_shape", np.array(
        [cfg.batch, cfg.kv_heads, cfg.heads // cfg.kv_heads, total, hd], np.int64))
    merged_kv = const("merged_kv", np.array([cfg.batch, cfg.heads, total, hd], np.int64))
    axis2 = const("axis2", np.array([2], np.int64))
    full = np.concatenate([angles, angles], -1)[None, None].astype(np.float32)
    cos, sin = const("cos", np.cos(full)), const("sin", np.sin(full))
    spell.rope = rope_halves(const, node, cos, sin, hd)
    # Query i (at position past + i) sees keys 0 .. past + i.
    spell.mask = const("mask", np.triu(np.full((1, 1, cfg.seq, total), -1e9, np.float32),
                                       cfg.past + 1))
    spell.repeat_kv = lambda x: node(
        "Reshape", [node("Expand", [node("Unsqueeze", [x, axis2]), rep_shape]), merged_kv])
    return spell


MAX_POSITIONS = 64  # rotary tables of the dynamic export


def dynamic_spelling(cfg, const, node, opset23):
    """Every size taken from the inputs' shapes, as torch.onnx writes a
    dynamic-axes export: Shape -> Slice/Gather -> Concat -> Reshape / Expand,
    Range for the positions, rotary tables of MAX_POSITIONS rows gathered at
    them, and the causal mask built from two Ranges (key j is visible to
    query i iff j <= past + i). One model then serves every batch, sequence
    and past length."""
    hd, rep = cfg.d // cfg.heads, cfg.heads // cfg.kv_heads
    n = [0]  # names of the small shape constants

    def i64(name, v):
        n[0] += 1
        return const(f"{name}{n[0]}", np.array(v, np.int64))

    zero, one = i64("zero", 0), i64("one", 1)
    s0, s2, axis0 = i64("s", [0]), i64("s", [2]), i64("axis", [0])

    def dims(x, start, end):
        return node("Slice", [node("Shape", [x]), start, end])

    def size(x, dim):
        return node("Gather", [node("Shape", [x]), i64("dim", dim)], axis=0)

    seq = size("input_ids", 1)
    past = size("past_key_values.0.key", 2) if cfg.past else zero
    positions = node("Range", [past, node("Add", [past, seq]), one])
    inv_freq = 1.0 / (10000 ** (np.arange(0, hd, 2) / hd))
    angles = np.outer(np.arange(MAX_POSITIONS), inv_freq)

    def heads_of(x, heads):
        # x.view(batch, seq, heads, hd).transpose(1, 2)
        shape = node("Concat", [dims(x, s0, s2), i64("heads", [heads, hd])], axis=0)
        return node("Transpose", [node("Reshape", [x, shape])], perm=[0, 2, 1, 3])

    def merge(t):
        return node("Reshape", [t, node("Concat", [dims(t, s0, s2), i64("model", [cfg.d])],
                                        axis=0)])

    spell = SimpleNamespace(heads_of=heads_of, merge=merge)
    if opset23:
        cos_cache = const("cos_cache", np.cos(angles).astype(np.float32))
        sin_cache = const("sin_cache", np.sin(angles).astype(np.float32))
        # position_ids [batch, seq]: the positions for every row.
        rows = node("Expand", [node("Unsqueeze", [positions, axis0]),
                               node("Shape", ["input_ids"])])
        spell.rope = lambda x: node("RotaryEmbedding", [x, cos_cache, sin_cache, rows])
        return spell
    s1, s4, axis1 = i64("s", [1]), i64("s", [4]), i64("axis", [1])
    axes01 = i64("axes", [0, 1])
    full = np.concatenate([angles, angles], -1).astype(np.float32)
    cos = node("Unsqueeze", [node("Gather", [const("cos_table", np.cos(full)), positions],
                                  axis=0), axes01])
    sin = node("Unsqueeze", [node("Gather", [const("sin_table", np.sin(full)), positions],
                                  axis=0), axes01])
    spell.rope = rope_halves(const, node, cos, sin, hd)
    keys = node("Range", [zero, node("Add", [past, seq]), one])
    visible = node("LessOrEqual", [node("Unsqueeze", [keys, axis0]),
                                   node("Unsqueeze", [positions, axis1])])
    spell.mask = node("Unsqueeze", [node("Where", [visible,
                                                   const("open", np.array(0, np.float32)),
                                                   const("hidden", np.array(-1e9, np.float32))]),
                                    axes01])
    spell.scale = const("scale", np.array(np.sqrt(hd), np.float32))

    def repeat_kv(x):
        # x[:, :, None].expand(b, kv, rep, t, hd).reshape(b, heads, t, hd)
        wide = node("Concat", [dims(x, s0, s2), i64("rep", [rep]), dims(x, s2, s4)], axis=0)
        merged = node("Concat", [dims(x, s0, s1), i64("heads", [cfg.heads]), dims(x, s2, s4)],
                      axis=0)
        return node("Reshape", [node("Expand", [node("Unsqueeze", [x, s2]), wide]), merged])

    spell.repeat_kv = repeat_kv
    return spell


def decoder(cfg, weights, nodes, consts, const, node, spell, opset23, matmul_dtype):
    """The embedding, layers, final norm and lm_head, and the model, for
    either spelling of the sizes (static_spelling, dynamic_spelling)."""
    hd = cfg.d // cfg.heads
    if not opset23:
        two = const("two", np.array(2.0, np.float32))
        eps = const("eps", np.array(1e-5, np.float32))

    def rms(x, name):
        if opset23:
            return node("RMSNormalization", [x, weights.add(name, [cfg.d], norm=True)],
                        axis=-1, epsilon=1e-5)
        mean = node("ReduceMean", [node("Pow", [x, two])], axes=[-1], keepdims=1)
        std = node("Sqrt", [node("Add", [mean, eps])])
        return node("Mul", [node("Div", [x, std]), weights.add(name, [cfg.d], norm=True)])

    def linear(x, name, n_in, n_out):
        w = weights.add(name, [n_in, n_out])
        if matmul_dtype is None:
            return node("MatMul", [x, w])
        return node("Cast", [node("MatMul", [node("Cast", [x], to=matmul_dtype), w])],
                    to=TensorProto.FLOAT)

    embed = weights.add("embed", [cfg.vocab, cfg.d])
    h = node("Gather", [embed, "input_ids"], axis=0)
    if matmul_dtype is not None:
        h = node("Cast", [h], to=TensorProto.FLOAT)
    kv = cfg.kv_heads * hd
    for i in range(cfg.layers):
        p = f"layers.{i}."
        x = rms(h, p + "input_norm")
        q = spell.rope(spell.heads_of(linear(x, p + "q", cfg.d, cfg.d), cfg.heads))
        k = spell.rope(spell.heads_of(linear(x, p + "k", cfg.d, kv), cfg.kv_heads))
        v = spell.heads_of(linear(x, p + "v", cfg.d, kv), cfg.kv_heads)
        past = [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        present = [f"present.{i}.key", f"present.{i}.value"]
        if opset23:
            attn = node("Attention", [q, k, v] + (["", *past] if cfg.past else []),
                        is_causal=1)
            if cfg.past:
                nodes[-1].output.extend(present)
        else:
            if cfg.past:
                k = node("Concat", [past[0], k], axis=2)
                nodes[-1].output[0] = k = present[0]
                v = node("Concat", [past[1], v], axis=2)
                nodes[-1].output[0] = v = present[1]
            k, v = spell.repeat_kv(k), spell.repeat_kv(v)
            s = node("Div", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]),
                             spell.scale])
            attn = node("MatMul", [node("Softmax", [node("Add", [s, spell.mask])], axis=-1), v])
        attn = spell.merge(node("Transpose", [attn], perm=[0, 2, 1, 3]))
        h = node("Add", [h, linear(attn, p + "o", cfg.d, cfg.d)])
        x = rms(h, p + "post_norm")
        gate = linear(x, p + "gate", cfg.d, cfg.ffn)
        act = node("Mul", [gate, node("Sigmoid", [gate])])
        h = node("Add", [h, linear(node("Mul", [act, linear(x, p + "up", cfg.d, cfg.ffn)]),
                                   p + "down", cfg.ffn, cfg.d)])
    linear(rms(h, "final_norm"), "lm_head", cfg.d, cfg.vocab)
    nodes[-1].output[0] = "logits"

    inputs, outputs = signature(cfg, [])
    graph = helper.make_graph(nodes, "llama", inputs, outputs, consts + weights.tensors)
    # onnxruntime 1.23 reads IR version 11 at most (opset 23 needs 11).
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23 if opset23 else 17)],
                             producer_name="meshc models/llama.py",
                             ir_version=11 if opset23 else 8)


def build_fused(cfg, weights):
    """The same Llama as onnxruntime-genai's builder writes it, with
    onnxruntime's fused operators: SimplifiedLayerNormalization, then per
    layer com.microsoft RotaryEmbedding on the 3-D q and k (position_ids
    input, [max positions, head_dim / 2] caches), GroupQueryAttention (num_heads /
    kv_num_heads, seqlens_k and total_sequence_length computed from the
    attention_mask input as the builder does: ReduceSum - 1 and Shape) and
    SkipSimplifiedLayerNormalization, whose fourth output (input + skip)
    carries the residual stream. Same weights, same function."""
    hd = cfg.d // cfg.heads
    total = cfg.past + cfg.seq
    nodes, consts = [], []
    ms = "com.microsoft"

    def const(name, array):
        consts.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, ins, outputs=1, domain=None, **attrs):
        outs = [f"{op.lower()}_{len(nodes)}_{i}" for i in range(outputs)]
        nodes.append(helper.make_node(op, ins, outs, name=f"/{op}_{len(nodes)}",
                                      domain=domain, **attrs))
        return outs[0] if outputs == 1 else outs

    inv_freq = 1.0 / (10000 ** (np.arange(0, hd, 2) / hd))
    all_angles = np.outer(np.arange(MAX_POSITIONS if cfg.dynamic else total), inv_freq)
    cos_cache = const("cos_cache", np.cos(all_angles).astype(np.float32))
    sin_cache = const("sin_cache", np.sin(all_angles).astype(np.float32))
    one = const("one", np.array(1, np.int64))
    axis1 = const("axis1", np.array([1], np.int64))
    # The builder's attention-mask subgraph.
    seqlens_k = node("Cast", [node("Sub", [node("ReduceSum", ["attention_mask", axis1],
                                                keepdims=0), one])], to=TensorProto.INT32)
    total_len = node("Cast", [node("Gather", [node("Shape", ["attention_mask"]), one], axis=0)],
                     to=TensorProto.INT32)

    def linear(x, name, n_in, n_out):
        return node("MatMul", [x, weights.add(name, [n_in, n_out])])

    def skip_norm(x, skip, name):
        out = node("SkipSimplifiedLayerNormalization",
                   [x, skip, weights.add(name, [cfg.d], norm=True)], outputs=4,
                   domain=ms, epsilon=1e-5)
        return out[0], out[3]

    def rope(x):
        return node("RotaryEmbedding", [x, "position_ids", cos_cache, sin_cache], domain=ms)

    embed = weights.add("embed", [cfg.vocab, cfg.d])
    h = node("Gather", [embed, "input_ids"], axis=0)
    x = node("SimplifiedLayerNormalization", [h, weights.add("layers.0.input_norm", [cfg.d],
                                                             norm=True)],
             axis=-1, epsilon=1e-5)  # onnxruntime registers it in the ONNX domain
    kv = cfg.kv_heads * hd
    for i in range(cfg.layers):
        p = f"layers.{i}."
        if i > 0:
            x, h = skip_norm(down, h, p + "input_norm")
        q = rope(linear(x, p + "q", cfg.d, cfg.d))
        k = rope(linear(x, p + "k", cfg.d, kv))
        v = linear(x, p + "v", cfg.d, kv)
        past = [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        attn = node("GroupQueryAttention",
                    [q, k, v] + (past if cfg.past else ["", ""]) + [seqlens_k, total_len],
                    outputs=3, domain=ms, num_heads=cfg.heads, kv_num_heads=cfg.kv_heads,
                    **({"local_window_size": cfg.local_window} if cfg.local_window >= 0 else {}),
                    **({"sliding_window_cache": 1} if cfg.window_cache else {}))
        if cfg.past:
            nodes[-1].output[1:] = [f"present.{i}.key", f"present.{i}.value"]
        x, h = skip_norm(linear(attn[0], p + "o", cfg.d, cfg.d), h, p + "post_norm")
        gate = linear(x, p + "gate", cfg.d, cfg.ffn)
        act = node("Mul", [gate, node("Sigmoid", [gate])])
        down = linear(node("Mul", [act, linear(x, p + "up", cfg.d, cfg.ffn)]),
                      p + "down", cfg.ffn, cfg.d)
    x, _ = skip_norm(down, h, "final_norm")
    linear(x, "lm_head", cfg.d, cfg.vocab)
    nodes[-1].output[0] = "logits"

    inputs, outputs = signature(cfg, [
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                      [axes(cfg).batch, axes(cfg).total]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT64,
                                      [axes(cfg).batch, axes(cfg).seq])])
    graph = helper.make_graph(nodes, "llama", inputs, outputs, consts + weights.tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(ms, 1)],
                             producer_name="meshc models/llama.py", ir_version=8)


def main():
    from common import save_with_reference

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--past", type=int, default=0,
                    help="length of the KV cache given as input (0: none)")
    ap.add_argument("--dynamic", action="store_true",
                    help="symbolic batch and sequence axes (the inputs written keep the "
                         "sizes given)")
    ap.add_argument("--opset23", action="store_true",
                    help="use the opset-23 RMSNormalization, RotaryEmbedding and Attention")
    ap.add_argument("--fused", action="store_true",
                    help="use onnxruntime's fused operators, as onnxruntime-genai's builder "
                         "writes them (GroupQueryAttention, com.microsoft RotaryEmbedding, "
                         "[Skip]SimplifiedLayerNormalization)")
    ap.add_argument("--pad", type=int, default=0,
                    help="with --fused: the last batch row's attention_mask ends in this "
                         "many zeros (a right-padded prompt)")
    ap.add_argument("--local-window", type=int, default=-1,
                    help="with --fused: GroupQueryAttention's local_window_size (sliding-window "
                         "attention over the last N positions; default -1, none)")
    ap.add_argument("--sliding-window-cache", type=int, default=0, metavar="C",
                    help="with --fused, --past and --local-window: GroupQueryAttention's "
                         "sliding_window_cache, past and present caches of capacity C (the "
                         "first rows of each past are its latest tokens); onnxruntime 1.23 "
                         "does not know it, so no reference is written: take it with "
                         "models/ort_reference.py in .venv-genai")
    ap.add_argument("--pad-past", type=int, default=0,
                    help="with --fused and --past: the last batch row has this many fewer "
                         "cached tokens (the end of its past is padding; its new tokens "
                         "follow its shorter history, as onnxruntime lays them out)")
    args = ap.parse_args()
    if args.pad and (not args.fused or args.pad >= args.seq):
        ap.error("--pad needs --fused and must be below --seq")
    if args.pad_past and (not args.fused or args.pad_past >= args.past or args.pad):
        ap.error("--pad-past needs --fused, must be below --past, and excludes --pad")
    if args.fused and args.opset23:
        ap.error("--fused and --opset23 are different exports; give one")
    rng = np.random.default_rng(args.seed)
    if args.seq < 1 or args.past < 0 or args.batch < 1:
        ap.error("--seq and --batch must be at least 1 and --past at least 0")
    if args.local_window >= 0 and not args.fused:
        ap.error("--local-window needs --fused")
    if args.sliding_window_cache and (args.local_window < 1 or not args.past
                                      or args.sliding_window_cache < args.local_window):
        ap.error("--sliding-window-cache needs --past, and --local-window from 1 to its capacity")
    cfg = Config(layers=args.layers, seq=args.seq, past=args.past, batch=args.batch,
                 dynamic=args.dynamic, local_window=args.local_window,
                 window_cache=args.sliding_window_cache)
    if args.fused:
        model = build_fused(cfg, EmbeddedWeights(rng))
    else:
        model = build(cfg, EmbeddedWeights(rng), opset23=args.opset23)
    feeds = {"input_ids": rng.integers(0, cfg.vocab, (cfg.batch, cfg.seq)).astype(np.int64)}
    if args.fused:
        feeds["attention_mask"] = np.ones((cfg.batch, cfg.past + cfg.seq), np.int64)
        if args.pad:
            feeds["attention_mask"][-1, -args.pad:] = 0
        feeds["position_ids"] = np.tile(np.arange(cfg.past, cfg.past + cfg.seq),
                                        (cfg.batch, 1)).astype(np.int64)
        if args.pad_past:
            feeds["attention_mask"][-1, cfg.past - args.pad_past:cfg.past] = 0
            feeds["position_ids"][-1] -= args.pad_past
    hd = cfg.d // cfg.heads
    for i in range(cfg.layers if cfg.past else 0):
        for kind in ("key", "value"):
            feeds[f"past_key_values.{i}.{kind}"] = rng.standard_normal(
                (cfg.batch, cfg.kv_heads, cfg.window_cache or cfg.past, hd)).astype(np.float32)
    # The checker does not know the ONNX-domain SimplifiedLayerNormalization
    # of onnxruntime (nor does it know genai's models); onnxruntime checks them.
    save_with_reference(model, args.out, feeds, "models/llama.py", check=not args.fused,
                        reference=not cfg.window_cache)


if __name__ == "__main__":
    main()
