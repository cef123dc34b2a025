#!/usr/bin/env python3
"""Writes the small ONNX models the import lit tests read.

Usage: make_onnx.py CASE OUT.onnx

Each case is a function below, named after what it exercises; models are
deterministic (fixed seeds) and tiny. External-data files, where a case has
them, are written next to OUT.onnx.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def weight(name, *shape, dtype=np.float32):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(dtype), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + list(extra_opsets)
    # onnx 1.19 defaults to IR 12, which onnxruntime 1.23 cannot load; use
    # the IR version that goes with the opset (10 up to opset 21, 11 above).
    return helper.make_model(graph, opset_imports=opsets, producer_name="meshc-test",
                             ir_version=10 if opset <= 21 else 11)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def case_mlp(path):
    """MatMul + Add + Reshape + Transpose + Softmax, weights embedded."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="bias"),
        helper.make_node("Reshape", ["hb", "shape"], ["r"], name="split_heads"),
        helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1, 3], name="tr"),
        helper.make_node("Softmax", ["t"], ["y"], axis=-1, name="sm"),
    ]
    inits = [weight("w", 16, 32), weight("b", 32), ints("shape", [0, 0, 4, 8])]
    return model(nodes, [f32("x", ["batch", "seq", 16])], [f32("y", None)], inits)


def case_mlp2(path):
    """A residual two-layer MLP (x + W2 tanh(W1 x + b1) + b2): under tp=2 the
    first projection splits by columns, the second by rows, one all_reduce."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="up"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="up_bias"),
        helper.make_node("Tanh", ["hb"], ["a"], name="act"),
        helper.make_node("MatMul", ["a", "w2"], ["d"], name="down"),
        helper.make_node("Add", ["d", "b2"], ["db"], name="down_bias"),
        helper.make_node("Add", ["x", "db"], ["y"], name="residual"),
    ]
    inits = [weight("w1", 8, 16), weight("b1", 16), weight("w2", 16, 8), weight("b2", 8)]
    return model(nodes, [f32("x", [2, 4, 8])], [f32("y", [2, 4, 8])], inits)


def case_gemm(path):
    """Gemm (GPT-2 Conv1D style) with transB, alpha and beta, plus Flatten."""
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], axis=1, name="flat"),
        helper.make_node("Gemm", ["f", "w", "c"], ["y"], transB=1, alpha=0.5,
                         beta=2.0, name="gemm"),
    ]
    inits = [weight("w", 8, 12), weight("c", 8)]
    return model(nodes, [f32("x", [2, 3, 4])], [f32("y", None)], inits, opset=13)


def case_external(path):
    """Weights as external data in weights.bin next to the model."""
    m = case_mlp(path)
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    return None


def case_elementwise(path):
    """gelu_new-like chain, masked scores through Where, casts, comparisons."""
    nodes = [
        helper.make_node("Pow", ["x", "three"], ["x3"], name="cube"),
        helper.make_node("Mul", ["x3", "k"], ["kx3"], name="scale"),
        helper.make_node("Add", ["x", "kx3"], ["inner"], name="inner"),
        helper.make_node("Tanh", ["inner"], ["t"], name="tanh"),
        helper.make_node("Sigmoid", ["t"], ["s"], name="sigmoid"),
        helper.make_node("Min", ["s", "t", "x"], ["lo"], name="min3"),
        helper.make_node("Less", ["i", "j"], ["causal"], name="causal"),
        helper.make_node("Not", ["causal"], ["keep"], name="keep"),
        helper.make_node("Where", ["keep", "lo", "neg"], ["masked"], name="mask"),
        helper.make_node("Cast", ["masked"], ["y"], to=TensorProto.FLOAT16, name="to_half"),
        helper.make_node("Equal", ["i", "j"], ["eq"], name="eq"),
    ]
    # i and j are inputs, so that the comparisons are not folded at import.
    inits = [ints("three", 3), numpy_helper.from_array(np.array(0.044715, np.float32), "k"),
             numpy_helper.from_array(np.array(-1e4, np.float32), "neg")]
    ins = [f32("x", [4, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [4, 1]),
           helper.make_tensor_value_info("j", TensorProto.INT64, [4])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None),
            helper.make_tensor_value_info("eq", TensorProto.BOOL, None)]
    return model(nodes, ins, outs, inits)


def case_gather_tile_relu(path):
    """Relu; Tile of a unit axis (torch's repeat_interleave: Unsqueeze, Tile,
    Reshape) and of whole axes (repeats 2 x 2); GatherElements along axis 0
    with negative indices, and along axis 1 with int32 indices (GPT-J's
    rotary tables gathered at the positions)."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Tile", ["t", "unit_reps"], ["tiled_unit"], name="tile_unit"),
        helper.make_node("Tile", ["u", "reps"], ["tiled"], name="tile"),
        helper.make_node("GatherElements", ["d", "rows"], ["g0"], axis=0, name="gather_rows"),
        helper.make_node("GatherElements", ["d", "cols"], ["g1"], axis=-1, name="gather_cols"),
    ]
    rows = np.array([[0, -1, 2, 3, -4], [3, 2, 1, 0, -2], [1, 1, 1, -3, 0]], np.int64)
    cols = np.array([[4, 0], [-1, 2], [3, 3], [0, -5]], np.int32)
    inits = [ints("unit_reps", [1, 4, 1]), ints("reps", [2, 2]),
             numpy_helper.from_array(rows, "rows"), numpy_helper.from_array(cols, "cols")]
    ins = [f32("x", [3, 4]), f32("t", [2, 1, 3]), f32("u", [2, 3]), f32("d", [4, 5])]
    outs = [f32(n, None) for n in ("r", "tiled_unit", "tiled", "g0", "g1")]
    return model(nodes, ins, outs, inits)


def case_pad(path):
    """Pad in mode constant: one row of zeros before the sequence of a
    [batch, seq, d] input with symbolic sizes (MobileBERT's shifted trigram
    embeddings), and pads on both sides of both axes of a static input with
    a constant_value of 1.5."""
    nodes = [
        helper.make_node("Pad", ["x", "seq_pads"], ["shifted"], mode="constant", name="pad_seq"),
        helper.make_node("Pad", ["u", "both_pads", "c"], ["framed"], name="pad_both"),
    ]
    inits = [ints("seq_pads", [0, 1, 0, 0, 0, 0]), ints("both_pads", [1, 2, 0, 3]),
             numpy_helper.from_array(np.array(1.5, np.float32), "c")]
    ins = [f32("x", ["batch", "seq", 4]), f32("u", [2, 3])]
    outs = [f32(n, None) for n in ("shifted", "framed")]
    return model(nodes, ins, outs, inits)


def case_pad_axes(path):
    """Pad with opset 18's axes input: the last axis of a [batch, seq, d]
    input padded after by 2 (axis -1) and the sequence before by 1."""
    nodes = [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad_axes")]
    inits = [ints("pads", [0, 1, 2, 0]), ints("axes", [-1, 1])]
    return model(nodes, [f32("x", ["batch", "seq", 4])], [f32("y", None)], inits, opset=18)


def case_scatter_elements(path):
    """ScatterElements as DeepSeek-V3's router writes it (ones scattered into
    zeros at the TopK positions of each row, along the last axis), along
    axis 0 with negative indices, and with int32 indices whose updates are
    an input."""
    nodes = [
        helper.make_node("TopK", ["x", "k2"], ["v", "top"], axis=-1, name="top2"),
        helper.make_node("ScatterElements", ["zeros", "top", "ones"], ["groups"], axis=-1,
                         name="scatter_groups"),
        helper.make_node("ScatterElements", ["d", "rows", "rows_upd"], ["s0"], axis=0,
                         name="scatter_rows"),
        helper.make_node("ScatterElements", ["d", "cols", "u"], ["s1"], axis=1,
                         name="scatter_cols"),
    ]
    rows = np.array([[0, -1, 2], [3, -2, 1]], np.int64)
    cols = np.array([[4, 0], [-1, 2], [3, 1], [0, -4]], np.int32)
    inits = [ints("k2", [2]), numpy_helper.from_array(np.zeros((3, 6), np.float32), "zeros"),
             numpy_helper.from_array(np.ones((3, 2), np.float32), "ones"),
             numpy_helper.from_array(rows, "rows"), numpy_helper.from_array(cols, "cols"),
             numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3) + 10,
                                     "rows_upd")]
    ins = [f32("x", [3, 6]), f32("d", [4, 5]), f32("u", [4, 2])]
    outs = [f32(n, None) for n in ("groups", "s0", "s1")]
    return model(nodes, ins, outs, inits)


def case_activations(path):
    """The activations and small functions meshc writes with its own ops:
    Abs, Sign (of a Relu: zeros), LeakyRelu, Elu, HardSigmoid, HardSwish,
    Softsign, Sum and Mean of three broadcast inputs, Xor of bools, and
    ArgMax / ArgMin over ties (the Sign's ones, first and last; the Relu's
    zeros), keepdims or not: PhiMoE's router takes the ArgMax of its masked
    scores and Abs of their differences. Log, Floor, Ceil and Round (halves
    to even), as MPNet's relative position buckets and JetMoE use them; Sign
    of integers."""
    nodes = [
        helper.make_node("Abs", ["x"], ["abs"], name="abs"),
        helper.make_node("Relu", ["x"], ["xr"], name="relu"),
        helper.make_node("Sign", ["xr"], ["sign"], name="sign"),
        helper.make_node("LeakyRelu", ["x"], ["leaky"], alpha=0.1, name="leaky"),
        helper.make_node("Elu", ["x"], ["elu"], alpha=0.7, name="elu"),
        helper.make_node("HardSigmoid", ["x"], ["hsig"], alpha=0.3, beta=0.4, name="hsig"),
        helper.make_node("HardSwish", ["x"], ["hswish"], name="hswish"),
        helper.make_node("Softsign", ["x"], ["softsign"], name="softsign"),
        helper.make_node("Sum", ["x", "row", "col"], ["sum"], name="sum"),
        helper.make_node("Mean", ["x", "row", "col"], ["mean"], name="mean"),
        helper.make_node("Xor", ["p", "q"], ["xor"], name="xor"),
        helper.make_node("ArgMax", ["sign"], ["amax"], axis=-1, name="argmax"),
        helper.make_node("ArgMax", ["sign"], ["amax_last"], axis=1, keepdims=0,
                         select_last_index=1, name="argmax_last"),
        helper.make_node("ArgMin", ["xr"], ["amin"], axis=0, keepdims=0, name="argmin"),
        helper.make_node("Add", ["abs", "half"], ["pos"], name="positive"),
        helper.make_node("Log", ["pos"], ["log"], name="log"),
        helper.make_node("Mul", ["x", "five_halves"], ["wide"], name="widen"),
        helper.make_node("Floor", ["wide"], ["floor"], name="floor"),
        helper.make_node("Ceil", ["wide"], ["ceil"], name="ceil"),
        helper.make_node("Round", ["wide"], ["round"], name="round"),
        # Sign of integers (DeBERTa's relative position buckets).
        helper.make_node("Cast", ["wide"], ["wide_int"], to=TensorProto.INT64, name="to_int"),
        helper.make_node("Sign", ["wide_int"], ["isign"], name="int_sign"),
    ]
    ins = [f32("x", [4, 6]), f32("row", [1, 6]), f32("col", [4, 1]),
           helper.make_tensor_value_info("p", TensorProto.BOOL, [4, 6]),
           helper.make_tensor_value_info("q", TensorProto.BOOL, [6])]
    outs = [f32(n, None) for n in ("abs", "sign", "leaky", "elu", "hsig", "hswish",
                                    "softsign", "sum", "mean", "log", "floor", "ceil",
                                    "round")]
    outs.append(helper.make_tensor_value_info("xor", TensorProto.BOOL, None))
    outs += [helper.make_tensor_value_info(n, TensorProto.INT64, None)
             for n in ("amax", "amax_last", "amin", "isign")]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(2.5, np.float32), "five_halves")]
    return model(nodes, ins, outs, inits)


def case_activations_exp(path):
    """Activations written with exponentials and logarithms: Softplus (Doge's
    gates; large inputs must not overflow), Mish, Selu, Celu,
    ThresholdedRelu and PRelu with a per-channel slope."""
    nodes = [
        helper.make_node("Mul", ["x", "big"], ["wide"], name="widen"),
        helper.make_node("Softplus", ["wide"], ["softplus"], name="softplus"),
        helper.make_node("Mish", ["x"], ["mish"], name="mish"),
        helper.make_node("Selu", ["x"], ["selu"], name="selu"),
        helper.make_node("Selu", ["x"], ["selu2"], alpha=1.5, gamma=0.5, name="selu2"),
        helper.make_node("Celu", ["x"], ["celu"], alpha=0.6, name="celu"),
        helper.make_node("ThresholdedRelu", ["x"], ["trelu"], alpha=0.3, name="trelu"),
        helper.make_node("PRelu", ["x", "slope"], ["prelu"], name="prelu"),
    ]
    inits = [numpy_helper.from_array(np.array(60.0, np.float32), "big"),
             numpy_helper.from_array(np.array([0.1, -0.2, 0.3, 0.0, 1.5, 2.0], np.float32),
                                     "slope")]
    outs = [f32(n, None) for n in ("softplus", "mish", "selu", "selu2", "celu", "trelu",
                                    "prelu")]
    return model(nodes, [f32("x", [4, 6])], outs, inits, opset=18)


def case_topk_onehot(path):
    """TopK as a mixture of experts' router writes it (largest 3 of 6 along
    the last axis), the smallest 2 along axis 0, and the largest 4 of a Relu's
    output, whose zeros tie (ties go to the lower position); OneHot of the
    first TopK's positions made negative (they count from depth), as
    TorchScript writes the experts' mask. TopK of int64 ids, largest and
    smallest (ids drawn from 0..3: ties), as JetMoE sorts its chosen
    experts."""
    nodes = [
        helper.make_node("TopK", ["x", "k3"], ["v1", "i1"], axis=-1, name="top3"),
        helper.make_node("TopK", ["x", "k2"], ["v2", "i2"], axis=0, largest=0,
                         name="bottom2"),
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("TopK", ["r", "k4"], ["v3", "i3"], axis=1, name="top4_ties"),
        helper.make_node("Sub", ["i1", "six"], ["neg"], name="negative"),
        helper.make_node("OneHot", ["neg", "depth", "onoff"], ["oh"], axis=-1,
                         name="onehot"),
        helper.make_node("TopK", ["ids", "k2"], ["v4", "i4"], axis=-1, name="top2_ids"),
        helper.make_node("TopK", ["ids", "k3"], ["v5", "i5"], axis=-1, largest=0,
                         name="bottom3_ids"),
    ]
    inits = [ints("k3", [3]), ints("k2", [2]), ints("k4", [4]),
             numpy_helper.from_array(np.array(6, np.int64), "six"),
             numpy_helper.from_array(np.array(6, np.int64), "depth"),
             numpy_helper.from_array(np.array([0.5, 2.0], np.float32), "onoff")]
    ins = [f32("x", [3, 6]), helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 5])]
    i64 = lambda n: helper.make_tensor_value_info(n, TensorProto.INT64, None)
    outs = [f32("v1", None), i64("i1"), f32("v2", None), i64("i2"), f32("v3", None),
            i64("i3"), f32("oh", None), i64("v4"), i64("i4"), i64("v5"), i64("i5")]
    return model(nodes, ins, outs, inits)


def case_sort_split(path):
    """A mixture of experts as JetMoE's exporters write it: the tokens' expert
    ids sorted by TopK whose K is the symbolic token count (Shape), the
    tokens gathered in that order and split by a count per expert that the
    graph computes (Split sizes known only at run time; an expert may get
    none), each part through its expert (MatMul, Add, Relu), the parts
    joined by Concat and added back at their tokens (ScatterND and
    ScatterElements with reduction add, the ids repeating). Also TopK with
    K = 70 > 64 of 80 values."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["count"], name="count"),
        helper.make_node("TopK", ["ids", "count"], ["sorted", "order"], axis=0, largest=0,
                         name="sort"),
        helper.make_node("Gather", ["x", "order"], ["rows"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["ids", "one"], ["col"], name="col"),
        helper.make_node("Equal", ["col", "experts"], ["hit"], name="hit"),
        helper.make_node("Cast", ["hit"], ["hit64"], to=TensorProto.INT64, name="hit64"),
        helper.make_node("ReduceSum", ["hit64", "zero"], ["sizes"], keepdims=0, name="sizes"),
        helper.make_node("Split", ["rows", "sizes"], ["p0", "p1", "p2", "p3"], axis=0,
                         name="by_expert"),
    ]
    for e in range(4):
        nodes += [helper.make_node("MatMul", [f"p{e}", f"w{e}"], [f"m{e}"], name=f"mm{e}"),
                  helper.make_node("Add", [f"m{e}", f"b{e}"], [f"a{e}"], name=f"add{e}"),
                  helper.make_node("Relu", [f"a{e}"], [f"r{e}"], name=f"relu{e}")]
    nodes += [
        helper.make_node("Concat", ["r0", "r1", "r2", "r3"], ["joined"], axis=0, name="join"),
        helper.make_node("Shape", ["joined"], ["jshape"], name="jshape"),
        helper.make_node("ConstantOfShape", ["jshape"], ["zeros"], name="zeros"),
        helper.make_node("Unsqueeze", ["order", "one"], ["at"], name="at"),
        helper.make_node("ScatterND", ["zeros", "at", "joined"], ["back"], reduction="add",
                         name="index_add"),
        helper.make_node("ScatterND", ["zeros", "twice", "pairs"], ["summed"], reduction="add",
                         name="duplicates"),
        helper.make_node("ScatterElements", ["zeros2", "cols", "ones"], ["counted"], axis=1,
                         reduction="add", name="counts"),
        helper.make_node("TopK", ["y", "k70"], ["v70", "i70"], axis=-1, name="top70"),
    ]
    inits = [ints("one", [1]), ints("zero", [0]), ints("experts", [[0, 1, 2, 3]]),
             ints("k70", [70]), ints("twice", [[1], [0], [1]]), weight("pairs", 3, 5),
             numpy_helper.from_array(np.zeros((2, 4), np.float32), "zeros2"),
             ints("cols", [[0, 2, 2, 2], [3, 3, 1, 0]]),
             numpy_helper.from_array(np.ones((2, 4), np.float32), "ones")]
    for e in range(4):
        inits += [weight(f"w{e}", 4, 5), weight(f"b{e}", 5)]
    i64 = lambda n, shape=None: helper.make_tensor_value_info(n, TensorProto.INT64, shape)
    ins = [f32("x", ["N", 4]), i64("ids", ["N"]), f32("y", [2, 80])]
    outs = [i64("sorted"), i64("order"), f32("back", None), f32("summed", None),
            f32("counted", None), f32("v70", None), i64("i70")]
    return model(nodes, ins, outs, inits, opset=18)


def case_split_rows_reduced(path):
    """A part of a Split whose sizes the graph computes, summed over its rows
    (ReduceSum): meshc cannot follow it and says so."""
    nodes = [
        helper.make_node("Cast", ["counts"], ["sizes"], to=TensorProto.INT64, name="sizes"),
        helper.make_node("Split", ["x", "sizes"], ["p0", "p1"], axis=0, name="by_count"),
        helper.make_node("ReduceSum", ["p0", "zero"], ["s0"], keepdims=1, name="sum_rows"),
        helper.make_node("Concat", ["s0", "p1"], ["y"], axis=0, name="join"),
    ]
    inits = [ints("zero", [0])]
    ins = [f32("x", ["N", 4]), f32("counts", [2])]
    outs = [f32("y", None)]
    return model(nodes, ins, outs, inits, opset=18)


def case_conv(path):
    """Conv over one axis: LFM2's short convolution (depthwise, kernel 3,
    padded 2 on both sides, over a symbolic batch and length); a dense one
    with bias, dilation 2 and pads 1; a grouped one (2 groups) with
    stride 2; and a SAME_UPPER one of kernel 4. Over two spatial axes:
    Nystromformer's depthwise (3, 1) kernel over [batch, heads, seq, dim]
    with a symbolic batch and sequence; a dense one with bias, strides
    (2, 1) and dilations (1, 2); a grouped SAME_LOWER one; a vision
    model's patches (kernel = stride = 2). Over three: a dense VALID one."""
    rng = np.random.default_rng(7)
    def w(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "wd"], ["depthwise"], group=8, kernel_shape=[3],
                         pads=[2, 2], name="short_conv"),
        helper.make_node("Conv", ["u", "wf", "bf"], ["dense"], pads=[1, 1], dilations=[2],
                         name="dense_conv"),
        helper.make_node("Conv", ["u", "wg"], ["grouped"], group=2, strides=[2],
                         name="grouped_conv"),
        helper.make_node("Conv", ["u", "ws"], ["same"], auto_pad="SAME_UPPER", name="same_conv"),
        helper.make_node("Conv", ["v", "wv"], ["values"], group=4, kernel_shape=[3, 1],
                         pads=[1, 0, 1, 0], name="value_conv"),
        helper.make_node("Conv", ["img", "w2", "b2"], ["dense2d"], strides=[2, 1],
                         dilations=[1, 2], pads=[1, 2, 0, 1], name="dense_conv2d"),
        helper.make_node("Conv", ["img", "g2"], ["grouped2d"], group=2, auto_pad="SAME_LOWER",
                         name="grouped_conv2d"),
        helper.make_node("Conv", ["img", "p2"], ["patches"], strides=[2, 2], name="patches"),
        helper.make_node("Conv", ["vol", "w3"], ["dense3d"], auto_pad="VALID", name="conv3d"),
    ]
    inits = [w("wd", [8, 1, 3]), w("wf", [6, 4, 3]), w("bf", [6]), w("wg", [6, 2, 3]),
             w("ws", [5, 4, 4]), w("wv", [4, 1, 3, 1]), w("w2", [3, 4, 3, 2]), w("b2", [3]),
             w("g2", [6, 2, 2, 3]), w("p2", [5, 4, 2, 2]), w("w3", [2, 3, 2, 2, 2])]
    ins = [f32("x", ["batch", 8, "seq"]), f32("u", [2, 4, 9]), f32("v", ["batch", 4, "seq", 5]),
           f32("img", [2, 4, 6, 8]), f32("vol", [1, 3, 4, 3, 5])]
    outs = [f32(n, None) for n in ("depthwise", "dense", "grouped", "same", "values", "dense2d",
                                   "grouped2d", "patches", "dense3d")]
    return model(nodes, ins, outs, inits)


def case_pool(path):
    """MaxPool and AveragePool from the sliding windows Conv reads: Canine's
    downsampling (MaxPool1d, kernel = stride = 2, over a symbolic batch); a
    2-D MaxPool with pads, strides and dilations; a SAME_UPPER one; a 2-D
    AveragePool without padding; one over padding with count_include_pad 1;
    a 3-D MaxPool; with ceil_mode, Funnel's pooling of an odd sequence
    (kernel = stride = 2 along it, the last window half past the end) as
    AveragePool and MaxPool, and a padded one; count_include_pad 0 over
    padding, with and without ceil_mode (each window's own divisor)."""
    nodes = [
        helper.make_node("MaxPool", ["x"], ["down"], kernel_shape=[2], strides=[2],
                         name="downsample"),
        helper.make_node("MaxPool", ["img"], ["max2d"], kernel_shape=[3, 2], strides=[2, 1],
                         pads=[1, 0, 1, 1], dilations=[1, 2], name="max2d"),
        helper.make_node("MaxPool", ["img"], ["same"], kernel_shape=[3, 3],
                         auto_pad="SAME_UPPER", name="same_pool"),
        helper.make_node("AveragePool", ["img"], ["avg2d"], kernel_shape=[2, 3], strides=[2, 2],
                         name="avg2d"),
        helper.make_node("AveragePool", ["img"], ["avgpad"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         count_include_pad=1, name="avg_with_pads"),
        helper.make_node("MaxPool", ["vol"], ["max3d"], kernel_shape=[2, 2, 2], name="max3d"),
        helper.make_node("AveragePool", ["img"], ["funnel_avg"], kernel_shape=[2, 1],
                         strides=[2, 1], ceil_mode=1, count_include_pad=1, name="funnel_avg"),
        helper.make_node("MaxPool", ["img"], ["funnel_max"], kernel_shape=[2, 1],
                         strides=[2, 1], ceil_mode=1, name="funnel_max"),
        helper.make_node("MaxPool", ["img"], ["ceil_max"], kernel_shape=[3, 3], strides=[2, 3],
                         pads=[1, 0, 0, 1], ceil_mode=1, name="ceil_max"),
        helper.make_node("AveragePool", ["img"], ["avg_own"], kernel_shape=[3, 2],
                         pads=[1, 1, 1, 0], count_include_pad=0, name="avg_own_count"),
        helper.make_node("AveragePool", ["img"], ["avg_ceil"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1, count_include_pad=0,
                         name="avg_ceil_own_count"),
        helper.make_node("AveragePool", ["img"], ["avg_ceil_pad"], kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1,
                         name="avg_ceil_with_pads"),
    ]
    ins = [f32("x", ["batch", 6, 8]), f32("img", [2, 3, 7, 8]), f32("vol", [1, 2, 3, 4, 5])]
    outs = [f32(n, None) for n in ("down", "max2d", "same", "avg2d", "avgpad", "max3d",
                                   "funnel_avg", "funnel_max", "ceil_max", "avg_own",
                                   "avg_ceil", "avg_ceil_pad")]
    return model(nodes, ins, outs, [], opset=19)


def case_mod(path):
    """Mod: integers with fmod 0 (the divisor's sign, as Canine hashes its
    ids) and fmod 1 (the dividend's), over negative and positive values
    and divisors, broadcast; floats with fmod 1."""
    nodes = [
        helper.make_node("Mul", ["ids", "scale"], ["scaled"], name="scale"),
        helper.make_node("Sub", ["scaled", "shift"], ["values"], name="shift"),
        helper.make_node("Mod", ["values", "divisors"], ["python"], name="python_mod"),
        helper.make_node("Mod", ["values", "divisors"], ["c"], fmod=1, name="c_mod"),
        helper.make_node("Mod", ["x", "fdivisors"], ["fmod"], fmod=1, name="float_mod"),
    ]
    inits = [ints("scale", [[7], [11], [-13]]), ints("shift", 10),
             ints("divisors", [3, -3, 5, -7]),
             numpy_helper.from_array(np.array([0.75, -1.5, 2.0, -0.3], np.float32), "fdivisors")]
    ins = [helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 4]),
           f32("x", ["batch", 4])]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ("python", "c")]
    outs.append(f32("fmod", None))
    return model(nodes, ins, outs, inits, opset=18)


def case_bitwise(path):
    """BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot (opset 18) on int64
    values of both signs (from -10 to 2^40, and -2^40), broadcast; on int32
    as CPM-Ant builds its attention mask (the segments of the context OR
    not-context AND causal, cast to bool for a Where)."""
    nodes = [
        helper.make_node("Mul", ["ids", "scale"], ["scaled"], name="scale"),
        helper.make_node("Sub", ["scaled", "shift"], ["values"], name="shift"),
        helper.make_node("BitwiseAnd", ["values", "masks"], ["and"], name="and"),
        helper.make_node("BitwiseOr", ["values", "masks"], ["or"], name="or"),
        helper.make_node("BitwiseXor", ["masks", "values"], ["xor"], name="xor"),
        helper.make_node("BitwiseNot", ["values"], ["not"], name="not"),
        helper.make_node("Cast", ["ids"], ["ids32"], to=TensorProto.INT32, name="ids32"),
        helper.make_node("BitwiseOr", ["ids32", "one32"], ["or32"], name="or32"),
        helper.make_node("BitwiseAnd", ["or32", "two32"], ["and32"], name="and32"),
        helper.make_node("BitwiseNot", ["and32"], ["not32"], name="not32"),
        helper.make_node("Cast", ["and32"], ["keep"], to=TensorProto.BOOL, name="keep"),
        helper.make_node("Where", ["keep", "x", "low"], ["masked"], name="masked"),
    ]
    inits = [ints("scale", [[7], [1 << 40], [-13]]), ints("shift", 10),
             ints("masks", [3, -4, 0x5555, -(1 << 40)]),
             numpy_helper.from_array(np.array(1, np.int32), "one32"),
             numpy_helper.from_array(np.array([2, 3, 0, 1], np.int32), "two32"),
             numpy_helper.from_array(np.array(-1e9, np.float32), "low")]
    ins = [helper.make_tensor_value_info("ids", TensorProto.INT64, [3, 4]),
           f32("x", [3, 4])]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64, None)
            for n in ("and", "or", "xor", "not")]
    outs += [helper.make_tensor_value_info(n, TensorProto.INT32, None)
             for n in ("or32", "not32")]
    outs.append(f32("masked", None))
    return model(nodes, ins, outs, inits, opset=18)


def case_logsumexp(path):
    """ReduceLogSumExp (opset 18, axes as an input): of scores scaled by 100
    (exp of each would overflow f32), over the last axis without keepdims;
    of scores under a mask of -inf entries (none masks a whole row), over
    two axes with keepdims."""
    nodes = [
        helper.make_node("Mul", ["x", "hundred"], ["big"], name="scale"),
        helper.make_node("ReduceLogSumExp", ["big", "last"], ["lse_last"], keepdims=0,
                         name="lse_last"),
        helper.make_node("Add", ["x", "mask"], ["masked"], name="mask"),
        helper.make_node("ReduceLogSumExp", ["masked", "two"], ["lse_two"], keepdims=1,
                         name="lse_two"),
    ]
    mask = np.zeros((3, 5), np.float32)
    mask[0, 1] = mask[1, 3] = mask[2, 0] = mask[2, 4] = -np.inf
    inits = [numpy_helper.from_array(np.array(100.0, np.float32), "hundred"),
             ints("last", [-1]), ints("two", [1, 2]), numpy_helper.from_array(mask, "mask")]
    return model(nodes, [f32("x", ["batch", 3, 5])], [f32("lse_last", None), f32("lse_two", None)],
                 inits, opset=18)


def case_dft(path):
    """DFT (opset 20, the axis an input), as FNet's fftn over its hidden and
    sequence axes writes it: a real signal's transform along a static axis,
    then the complex result's along a symbolic one; the inverse of that
    (which gives the first back); a onesided transform of the real signal."""
    nodes = [
        helper.make_node("Unsqueeze", ["x", "last"], ["real"], name="as_real"),
        helper.make_node("DFT", ["real", "", "two"], ["hidden"], name="dft_hidden"),
        helper.make_node("DFT", ["hidden", "", "one"], ["both"], name="dft_seq"),
        helper.make_node("DFT", ["both", "", "one"], ["back"], inverse=1, name="idft_seq"),
        helper.make_node("DFT", ["real", "", "two"], ["half"], onesided=1, name="dft_half"),
    ]
    inits = [ints("last", [-1]), ints("two", 2), ints("one", 1)]
    return model(nodes, [f32("x", ["batch", "seq", 6])],
                 [f32("both", None), f32("back", None), f32("half", None)], inits, opset=20)


def case_resize(path):
    """Resize over static sizes, each as a product by its interpolation
    matrix: DINOv2's bicubic position embeddings ([1, 8, 5, 6] to 3 x 4,
    half_pixel, cubic_coeff_a -0.75, sizes from the image); nearest
    upsampling by 2 (asymmetric, floor, scales, a symbolic batch kept);
    linear shrinking and growing (pytorch_half_pixel, align_corners);
    cubic with exclude_outside and a = -0.5; opset 19's axes and
    half_pixel_symmetric; a size equal to the input's (the identity)."""
    nodes = [
        helper.make_node("Resize", ["pos", "", "", "bicubic_size"], ["bicubic"],
                         mode="cubic", coordinate_transformation_mode="half_pixel",
                         cubic_coeff_a=-0.75, nearest_mode="floor", name="bicubic"),
        helper.make_node("Resize", ["x", "", "twice"], ["nearest"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                         name="nearest"),
        helper.make_node("Resize", ["pos", "", "", "shrink_size"], ["linear"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel", name="linear"),
        helper.make_node("Resize", ["pos", "", "", "grow_size"], ["corners"], mode="linear",
                         coordinate_transformation_mode="align_corners", name="corners"),
        helper.make_node("Resize", ["pos", "", "", "grow_size"], ["outside"], mode="cubic",
                         cubic_coeff_a=-0.5, exclude_outside=1, name="outside"),
        helper.make_node("Resize", ["pos", "", "", "hw_size"], ["symmetric"], mode="linear",
                         coordinate_transformation_mode="half_pixel_symmetric", axes=[2, 3],
                         name="symmetric"),
        helper.make_node("Resize", ["pos", "", "", "same_size"], ["same"], mode="cubic",
                         name="same"),
    ]
    inits = [ints("bicubic_size", [1, 8, 3, 4]), ints("shrink_size", [1, 8, 4, 3]),
             ints("grow_size", [1, 8, 7, 9]), ints("hw_size", [7, 4]),
             ints("same_size", [1, 8, 5, 6]),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "twice")]
    return model(nodes, [f32("pos", [1, 8, 5, 6]), f32("x", ["batch", 2, 3, 4])],
                 [f32(n, None) for n in ("bicubic", "nearest", "linear", "corners",
                                        "outside", "symmetric", "same")], inits, opset=19)


def case_batchnorm(path):
    """BatchNormalization with running statistics (a CNN in eval mode) over a
    symbolic batch; in training mode (BiT's weight standardisation), with
    the running statistics it returns; GlobalAveragePool and GlobalMaxPool."""
    rng = np.random.default_rng(3)
    c = 3
    stats = {n: numpy_helper.from_array(v.astype(np.float32), n) for n, v in {
        "scale": rng.normal(size=c), "bias": rng.normal(size=c),
        "mean": rng.normal(size=c), "var": rng.uniform(0.5, 2.0, size=c)}.items()}
    nodes = [
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["eval"],
                         epsilon=1e-3, name="bn_eval"),
        helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                         ["train", "running_mean", "running_var"], training_mode=1,
                         momentum=0.8, name="bn_train"),
        helper.make_node("GlobalAveragePool", ["x"], ["gap"], name="gap"),
        helper.make_node("GlobalMaxPool", ["x"], ["gmp"], name="gmp"),
    ]
    return model(nodes, [f32("x", ["batch", c, 4, 5])],
                 [f32(n, None) for n in ("eval", "train", "running_mean", "running_var", "gap",
                                        "gmp")], list(stats.values()), opset=15)


def case_tile_symbolic(path):
    """Tile by counts computed from a symbolic dimension on axes not of size
    1, as DeBERTa-style relative attention tiles its position keys by the
    batch: [batch, 3, 4] by [1, batch, 1] and by [batch, 1, 2]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["batch"], start=0, end=1, name="batch"),
        helper.make_node("Concat", ["one", "batch", "one"], ["middle"], axis=0, name="middle"),
        helper.make_node("Tile", ["x", "middle"], ["by_middle"], name="tile_middle"),
        helper.make_node("Concat", ["batch", "one", "two"], ["front"], axis=0, name="front"),
        helper.make_node("Tile", ["x", "front"], ["by_front"], name="tile_front"),
    ]
    inits = [ints("one", [1]), ints("two", [2])]
    return model(nodes, [f32("x", ["batch", 3, 4])], [f32("by_middle", None), f32("by_front", None)],
                 inits)


def case_pad_chunks(path):
    """Pad up to a multiple of a chunk, as Mamba-2's chunked scan writes it:
    the amount (4 - seq mod 4) mod 4 computed from the sequence's Shape, the
    padded sequence cut into chunks of 4 by a Reshape; and a negative pad
    (RWKV's time shift, ZeroPad2d((0, 0, 1, -1))): one step later, the last
    step cropped; the padded sequence cut back at min(seq, 4 * ceil(seq /
    4)), which is seq, and reshaped to a width of 5 * seq / seq."""
    nodes = [
        helper.make_node("Shape", ["x"], ["seq"], start=1, end=2, name="seq"),
        helper.make_node("Mod", ["seq", "four"], ["rest"], name="rest"),
        helper.make_node("Sub", ["four", "rest"], ["short"], name="short"),
        helper.make_node("Mod", ["short", "four"], ["amount"], name="amount"),
        helper.make_node("Concat", ["zero", "amount"], ["pads"], axis=0, name="pads"),
        helper.make_node("Pad", ["x", "pads", "", "seq_axis"], ["padded"], name="pad_up"),
        helper.make_node("Reshape", ["padded", "chunked"], ["chunks"], name="chunks"),
        helper.make_node("Pad", ["x", "shift", "", "seq_axis"], ["shifted"], name="time_shift"),
        # min(seq, 4 * ceil(seq / 4)) is seq: the padded sequence cut back.
        helper.make_node("Add", ["seq", "amount"], ["padded_len"], name="padded_len"),
        helper.make_node("Div", ["padded_len", "four"], ["n_chunks"], name="n_chunks"),
        helper.make_node("Mul", ["n_chunks", "four"], ["round_up"], name="round_up"),
        helper.make_node("Min", ["seq", "round_up"], ["kept"], name="kept"),
        helper.make_node("Slice", ["padded", "zero", "kept", "seq_axis"], ["unpadded"],
                         name="unpad"),
        # 5 * seq / seq is 5: a Reshape to [batch, -1, 5].
        helper.make_node("Mul", ["seq", "five"], ["five_seq"], name="five_seq"),
        helper.make_node("Div", ["five_seq", "seq"], ["width"], name="width"),
        helper.make_node("Concat", ["zero", "minus_one", "width"], ["spec"], axis=0, name="spec"),
        helper.make_node("Reshape", ["unpadded", "spec"], ["same"], name="same"),
    ]
    inits = [ints("four", [4]), ints("zero", [0]), ints("seq_axis", [1]),
             ints("chunked", [0, -1, 4, 5]), ints("shift", [1, -1]), ints("five", [5]),
             ints("minus_one", [-1])]
    return model(nodes, [f32("x", ["batch", "seq", 5])],
                 [f32("chunks", None), f32("shifted", None), f32("same", None)],
                 inits, opset=18)


def case_reduce_forms(path):
    """ReduceMin, ReduceSumSquare, ReduceL1, ReduceL2 (F.normalize's norm)
    and ReduceLogSum, opset 18 (axes an input), over one axis and two, with
    and without keepdims, of values of both signs (ReduceLogSum of their
    squares plus one)."""
    nodes = [
        helper.make_node("ReduceMin", ["x", "last"], ["rmin"], keepdims=0, name="rmin"),
        helper.make_node("ReduceSumSquare", ["x", "two"], ["rss"], name="rss"),
        helper.make_node("ReduceL1", ["x", "last"], ["rl1"], name="rl1"),
        helper.make_node("ReduceL2", ["x", "last"], ["rl2"], keepdims=0, name="rl2"),
        helper.make_node("Mul", ["x", "x"], ["sq"], name="sq"),
        helper.make_node("Add", ["sq", "one"], ["pos"], name="pos"),
        helper.make_node("ReduceLogSum", ["pos", "two"], ["rls"], name="rls"),
    ]
    inits = [ints("last", [-1]), ints("two", [1, 2]),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return model(nodes, [f32("x", ["batch", 3, 5])],
                 [f32(n, None) for n in ["rmin", "rss", "rl1", "rl2", "rls"]], inits, opset=18)


def case_trig(path):
    """Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh and Atanh (YOSO's
    attention takes the acos of its normalised scores). The arguments of
    Tan, Asin, Acos and Atanh are tanh(x), inside their domains; Acosh's is
    1 + x^2."""
    nodes = [
        helper.make_node("Tanh", ["x"], ["t"], name="t"),
        helper.make_node("Mul", ["x", "x"], ["sq"], name="sq"),
        helper.make_node("Add", ["sq", "one"], ["above_one"], name="above_one"),
        helper.make_node("Tan", ["t"], ["tan"], name="tan"),
        helper.make_node("Asin", ["t"], ["asin"], name="asin"),
        helper.make_node("Acos", ["t"], ["acos"], name="acos"),
        helper.make_node("Atan", ["x"], ["atan"], name="atan"),
        helper.make_node("Sinh", ["x"], ["sinh"], name="sinh"),
        helper.make_node("Cosh", ["x"], ["cosh"], name="cosh"),
        helper.make_node("Asinh", ["x"], ["asinh"], name="asinh"),
        helper.make_node("Acosh", ["above_one"], ["acosh"], name="acosh"),
        helper.make_node("Atanh", ["t"], ["atanh"], name="atanh"),
    ]
    outs = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh"]
    inits = [numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return model(nodes, [f32("x", ["batch", 3, 5])], [f32(n, None) for n in outs], inits,
                 opset=17)


def case_eye_einsum(path):
    """EyeLike of a [seq, seq] tensor (symbolic) with k = 1, and of a static
    [3, 5] one as int64; Einsum of one operand: a transpose ('ijbn->bnij',
    XLNet's) and a sum over one letter ('bij->bj')."""
    nodes = [
        helper.make_node("MatMul", ["x", "xt"], ["square"], name="square"),
        helper.make_node("EyeLike", ["square"], ["eye"], k=1, name="eye"),
        helper.make_node("EyeLike", ["w"], ["eye_int"], dtype=TensorProto.INT64, name="eye_int"),
        helper.make_node("Cast", ["eye_int"], ["eye_f"], to=TensorProto.FLOAT, name="eye_f"),
        helper.make_node("Einsum", ["y"], ["perm"], equation="ijbn->bnij", name="perm"),
        helper.make_node("Einsum", ["z"], ["summed"], equation="bij->bj", name="summed"),
    ]
    inits = [numpy_helper.from_array(np.ones((3, 5), np.float32), "w")]
    return model(nodes, [f32("x", ["seq", 4]), f32("xt", [4, "seq"]), f32("y", [2, 3, "batch", 4]),
                         f32("z", ["batch", 3, 4])],
                 [f32("eye", None), f32("eye_f", None), f32("perm", None), f32("summed", None)],
                 inits, opset=17)


def case_einsum_forms(path):
    """Einsum with two contracted letters (XLNet's output projection
    'ibnd,hnd->ibh', sequence and batch symbolic), with a letter summed out
    of one operand only ('ij,jk->i'), and a Range counting down over a
    symbolic length (XLNet's positions seq .. -seq)."""
    nodes = [
        helper.make_node("Einsum", ["v", "o"], ["proj"], equation="ibnd,hnd->ibh", name="proj"),
        helper.make_node("Einsum", ["p", "q"], ["alone"], equation="ij,jk->i", name="alone"),
        helper.make_node("Shape", ["v"], ["vshape"], name="vshape"),
        helper.make_node("Gather", ["vshape", "zero"], ["seq"], axis=0, name="seq"),
        helper.make_node("Neg", ["seq"], ["negseq"], name="negseq"),
        helper.make_node("Range", ["seq", "negseq", "minus_one"], ["down"], name="down"),
        helper.make_node("Cast", ["down"], ["down_f"], to=TensorProto.FLOAT, name="down_f"),
    ]
    inits = [numpy_helper.from_array(np.random.default_rng(3).standard_normal((6, 2, 4)).astype(np.float32), "o"),
             ints("zero", 0), ints("minus_one", -1)]
    return model(nodes, [f32("v", ["seq", "batch", 2, 4]), f32("p", ["rows", 3]), f32("q", [3, 5])],
                 [f32("proj", None), f32("alone", None), f32("down_f", None)], inits, opset=17)


def case_int_max_bounds(path):
    """Slice bounds as torch.onnx 2.6's dynamo exporter writes them, not
    folded: Reshape(Cast(Constant), [-1]), "to the end" as INT64_MAX; and a
    Concat of integer constants holding INT64_MAX and an int32 one cast up.
    meshc folds them on their integers, exactly."""
    big = np.iinfo(np.int64).max

    def const(name, value, dtype=np.int64):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(np.array(value, dtype), name))

    nodes = [
        const("zero", 0), const("end", big), const("one", 1), const("flat", [-1]),
        helper.make_node("Cast", ["zero"], ["zero_c"], to=TensorProto.INT64, name="zero_c"),
        helper.make_node("Reshape", ["zero_c", "flat"], ["starts"], name="starts"),
        helper.make_node("Cast", ["end"], ["end_c"], to=TensorProto.INT64, name="end_c"),
        helper.make_node("Reshape", ["end_c", "flat"], ["ends"], name="ends"),
        helper.make_node("Reshape", ["one", "flat"], ["axes"], name="axes"),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["to_end"], name="to_end"),
        const("from2", [2]), const("end32", [5], np.int32),
        helper.make_node("Cast", ["end32"], ["end64"], to=TensorProto.INT64, name="end64"),
        helper.make_node("Concat", ["starts", "from2"], ["starts2"], axis=0, name="starts2"),
        helper.make_node("Unsqueeze", ["end_c", "zero_axes"], ["end_1"], name="end_1"),
        helper.make_node("Concat", ["end_1", "end64"], ["ends2"], axis=0, name="ends2"),
        helper.make_node("Slice", ["x", "starts2", "ends2", "axes2"], ["window"], name="window"),
    ]
    inits = [ints("zero_axes", [0]), ints("axes2", [1, 0])]
    return model(nodes, [f32("x", [6, "seq"])], [f32("to_end", None), f32("window", None)],
                 inits, opset=18)


def case_sequences(path):
    """Sequences held at compile time: torch.split as torch.onnx 2.6's
    dynamo exporter writes it (SplitToSequence by a scalar size, read by
    SequenceAt, one position negative), a split into parts of one with the
    axis dropped (keepdims=0), SequenceLength, and SequenceConstruct joined
    by ConcatFromSequence along an axis and stacked along a new one."""
    nodes = [
        helper.make_node("SplitToSequence", ["x", "four"], ["parts"], axis=2, name="split"),
        helper.make_node("SequenceAt", ["parts", "zero"], ["q"], name="q"),
        helper.make_node("SequenceAt", ["parts", "minus_one"], ["v"], name="v"),
        helper.make_node("SplitToSequence", ["y"], ["rows"], axis=0, keepdims=0, name="rows"),
        helper.make_node("SequenceAt", ["rows", "one"], ["row1"], name="row1"),
        helper.make_node("SequenceLength", ["parts"], ["count"], name="count"),
        helper.make_node("SequenceConstruct", ["q", "v"], ["pair"], name="pair"),
        helper.make_node("ConcatFromSequence", ["pair"], ["joined"], axis=-1, name="joined"),
        helper.make_node("SequenceAt", ["parts", "one"], ["k"], name="k"),
        helper.make_node("SequenceConstruct", ["q", "k"], ["same"], name="same"),
        helper.make_node("ConcatFromSequence", ["same"], ["stacked"], axis=1, new_axis=1,
                         name="stacked"),
    ]
    inits = [numpy_helper.from_array(np.array(4, np.int64), "four"), ints("zero", 0),
             ints("minus_one", -1), ints("one", 1)]
    return model(nodes, [f32("x", ["batch", "seq", 10]), f32("y", [3, "seq"])],
                 [f32("q", None), f32("v", None), f32("row1", None),
                  helper.make_tensor_value_info("count", TensorProto.INT64, None),
                  f32("joined", None), f32("stacked", None)], inits, opset=17)


def case_sequence_dynamic_split(path):
    """SplitToSequence of a symbolic dimension into parts of one size: how
    many parts there are is known only at run time."""
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["parts"], axis=1, name="split"),
             helper.make_node("SequenceAt", ["parts", "zero"], ["y"], name="first")]
    inits = [numpy_helper.from_array(np.array(2, np.int64), "two"), ints("zero", 0)]
    return model(nodes, [f32("x", [2, "seq"])], [f32("y", None)], inits, opset=17)


def case_repeat_interleave(path):
    """torch.repeat_interleave(x, 2, dim=0) over a symbolic sequence, as
    TorchScript writes it (Cohere's and GLM's rotary tables, by Optimum):
    repeats = ConstantOfShape([n], 2), the positions inside each repeat
    Range(0, ReduceMax(repeats)), NonZero of Less(positions, repeats[:, None])
    (true everywhere: the coordinates of every element), and GatherND of x
    broadcast over the repeats."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0, name="n"),
        helper.make_node("Unsqueeze", ["n", "axis0"], ["n1"], name="n1"),
        helper.make_node("ConstantOfShape", ["n1"], ["repeats"],
                         value=numpy_helper.from_array(np.array([2], np.int64)),
                         name="repeats"),
        helper.make_node("ReduceMax", ["repeats"], ["most"], keepdims=0, name="most"),
        helper.make_node("Cast", ["most"], ["most64"], to=TensorProto.INT64, name="most64"),
        helper.make_node("Range", ["zero", "most64", "one"], ["inside"], name="inside"),
        helper.make_node("Unsqueeze", ["repeats", "axis1"], ["column"], name="column"),
        helper.make_node("Less", ["inside", "column"], ["keep"], name="keep"),
        helper.make_node("NonZero", ["keep"], ["where"], name="nonzero"),
        helper.make_node("Transpose", ["where"], ["tuples"], perm=[1, 0], name="tuples"),
        helper.make_node("Unsqueeze", ["x", "axis1"], ["x1"], name="x1"),
        helper.make_node("Expand", ["x1", "spread"], ["wide"], name="wide"),
        helper.make_node("GatherND", ["wide", "tuples"], ["y"], name="gather"),
    ]
    inits = [ints("zero", 0), ints("one", 1), ints("axis0", [0]), ints("axis1", [1]),
             ints("spread", [1, 2, 1])]
    outs = [f32("y", None), helper.make_tensor_value_info("tuples", TensorProto.INT64, None)]
    return model(nodes, [f32("x", ["seq", 4])], outs, inits, opset=17)


def case_nonzero_data(path):
    """NonZero of a comparison of the data: how many elements it has is
    known only at run time (a mixture of experts routes tokens so)."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["positive"], name="positive"),
             helper.make_node("NonZero", ["positive"], ["y"], name="route")]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    return model(nodes, [f32("x", [2, 3])],
                 [helper.make_tensor_value_info("y", TensorProto.INT64, None)], inits, opset=17)


def case_nonzero_unrolled(path):
    """The experts a router hit, as TorchScript traces DBRX's loop over
    them: NonZero of the hit mask, transposed to [count, 1], then Split
    into the 3 rows the trace saw: the count is the data's, the sizes the
    trace's."""
    nodes = [helper.make_node("Greater", ["x", "zero"], ["hit"], name="hit"),
             helper.make_node("NonZero", ["hit"], ["where"], name="route"),
             helper.make_node("Transpose", ["where"], ["rows"], perm=[1, 0], name="rows"),
             helper.make_node("Split", ["rows", "ones"], ["e0", "e1", "e2"], axis=0,
                              name="experts")]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             ints("ones", [1, 1, 1])]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64, None)
            for n in ("e0", "e1", "e2")]
    return model(nodes, [f32("x", [4])], outs, inits, opset=17)


def expert_routing(variant="ok"):
    """A mixture of 4 experts, top 2, routed as transformers 4.x writes it
    and TorchScript exports it: per expert e, NonZero of the transposed
    one-hot of the chosen experts gives (choice, token) pairs whose count
    the data decides; the expert runs on the tokens' rows (Gather), scaled
    by their routing weights, and its rows are added back at their tokens:
    even experts by a ScatterElements into zeros then an Add (index_add_),
    odd ones by a ScatterND with reduction add. Variants that meshc refuses:
    "overwrite" scatters expert 0's rows into the tokens themselves instead
    of zeros; "count" sums expert 0's token indices (a reduction over the
    pairs)."""
    experts, top, d = 4, 2, 4
    rng = np.random.default_rng(7)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Reshape", ["x", "rows_shape"], ["flat"], name="flat"),
        helper.make_node("MatMul", ["flat", "router"], ["logits"], name="router"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="probs"),
        helper.make_node("TopK", ["probs", "k"], ["top", "chosen"], axis=1, name="topk"),
        helper.make_node("ReduceSum", ["top", "axis1"], ["total"], keepdims=1, name="total"),
        helper.make_node("Div", ["top", "total"], ["weights"], name="weights"),
        helper.make_node("Reshape", ["weights", "minus1"], ["weights_flat"], name="weights_flat"),
        helper.make_node("OneHot", ["chosen", "depth", "onoff"], ["onehot"], axis=-1,
                         name="onehot"),
        helper.make_node("Transpose", ["onehot"], ["expert_mask"], perm=[2, 1, 0],
                         name="expert_mask"),
        helper.make_node("Shape", ["flat"], ["flat_shape"], name="flat_shape"),
        helper.make_node("ConstantOfShape", ["flat_shape"], ["acc0"], name="acc0"),
    ]
    inits = [ints("rows_shape", [-1, d]), ints("k", [top]), ints("axis1", [1]),
             ints("minus1", [-1]), ints("depth", experts), ints("onoff", [0, 1]),
             ints("split11", [1, 1]), ints("top_k", top),
             numpy_helper.from_array(rng.standard_normal((d, experts)).astype(np.float32),
                                     "router")]
    acc = "acc0"
    for e in range(experts):
        p = f"e{e}_"
        inits += [ints(p + "index", e),
                  numpy_helper.from_array(rng.standard_normal((d, d)).astype(np.float32),
                                          p + "w")]
        nodes += [
            helper.make_node("Gather", ["expert_mask", p + "index"], [p + "mask_i"], axis=0,
                             name=p + "mask_i"),
            helper.make_node("Cast", [p + "mask_i"], [p + "mask"], to=TensorProto.BOOL,
                             name=p + "mask"),
            helper.make_node("NonZero", [p + "mask"], [p + "pairs"], name=p + "route"),
            helper.make_node("Transpose", [p + "pairs"], [p + "pairs_t"], perm=[1, 0],
                             name=p + "pairs_t"),
            helper.make_node("Split", [p + "pairs_t", "split11"], [p + "k2", p + "t2"], axis=1,
                             name=p + "split"),
            helper.make_node("Squeeze", [p + "k2", "axis1"], [p + "choice"], name=p + "choice"),
            helper.make_node("Squeeze", [p + "t2", "axis1"], [p + "token"], name=p + "token"),
            helper.make_node("Gather", ["flat", p + "token"], [p + "rows"], axis=0,
                             name=p + "rows"),
            helper.make_node("MatMul", [p + "rows", p + "w"], [p + "h"], name=p + "proj"),
            helper.make_node("Sigmoid", [p + "h"], [p + "gate"], name=p + "gate"),
            helper.make_node("Mul", [p + "h", p + "gate"], [p + "act"], name=p + "act"),
            helper.make_node("Mul", [p + "token", "top_k"], [p + "base"], name=p + "base"),
            helper.make_node("Add", [p + "base", p + "choice"], [p + "at"], name=p + "at"),
            helper.make_node("Gather", ["weights_flat", p + "at"], [p + "wt"], axis=0,
                             name=p + "wt"),
            helper.make_node("Unsqueeze", [p + "wt", "axis1"], [p + "wt1"], name=p + "wt1"),
            helper.make_node("Mul", [p + "act", p + "wt1"], [p + "upd"], name=p + "upd"),
            helper.make_node("Unsqueeze", [p + "token", "axis1"], [p + "tok1"], name=p + "tok1"),
        ]
        if variant == "count" and e == 0:
            nodes.append(helper.make_node("ReduceSum", [p + "token"], ["count"], keepdims=0,
                                          name="count"))
        if e % 2 == 0:
            into = "flat" if variant == "overwrite" and e == 0 else p + "zeros"
            nodes += [
                helper.make_node("Shape", [p + "upd"], [p + "upd_shape"], name=p + "upd_shape"),
                helper.make_node("Expand", [p + "tok1", p + "upd_shape"], [p + "idx"],
                                 name=p + "idx"),
                helper.make_node("ConstantOfShape", ["flat_shape"], [p + "zeros"],
                                 name=p + "zeros"),
                helper.make_node("ScatterElements", [into, p + "idx", p + "upd"],
                                 [p + "added"], axis=0, name=p + "index_add"),
                helper.make_node("Add", [acc, p + "added"], [p + "acc"], name=p + "acc"),
            ]
        else:
            nodes.append(helper.make_node("ScatterND", [acc, p + "tok1", p + "upd"], [p + "acc"],
                                          reduction="add", name=p + "scatter_add"))
        acc = p + "acc"
    nodes.append(helper.make_node("Reshape", [acc, "shape"], ["y"], name="y"))
    outs = [f32("y", ["batch", "seq", d])]
    if variant == "count":
        outs.append(helper.make_tensor_value_info("count", TensorProto.INT64, []))
    return model(nodes, [f32("x", ["batch", "seq", d])], outs, inits, opset=17)


def case_expert_routing(path):
    return expert_routing()


def case_expert_routing_overwrite(path):
    return expert_routing("overwrite")


def case_expert_routing_count(path):
    return expert_routing("count")


def moe_model(variant="ok"):
    """com.microsoft MoE (onnxruntime's layout: weights [experts, out, in]) over
    4 experts of hidden 8, each configuration a node of its own on the same
    tokens: gpt-oss's (swiglu, gate and linear interleaved, clamped at 7,
    alpha 1.702, beta 1, top 2 renormalised, biases), relu with top 1 and
    no renormalising, silu without biases (the forms onnxruntime's CPU
    kernel computes); the input [batch, seq, hidden] with the router's rows
    [batch * seq, experts]. variant "gelu": an activation meshc refuses."""
    rng = np.random.default_rng(7)
    e, h, inner = 4, 8, 6

    def w(name, *shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.5).astype(np.float32), name)

    inits, nodes, outs = [], [], []

    def moe(name, activation, f1, fc3=False, bias=True, **attrs):
        inits.extend([w(name + "_w1", e, f1, h), w(name + "_w2", e, h, inner)])
        ins = ["x", "r", name + "_w1", "", name + "_w2", ""]
        if bias:
            inits.extend([w(name + "_b1", e, f1), w(name + "_b2", e, h)])
            ins[3], ins[5] = name + "_b1", name + "_b2"
        if fc3:
            inits.extend([w(name + "_w3", e, inner, h)])
            ins.append(name + "_w3")
        nodes.append(helper.make_node("MoE", ins, [name], domain="com.microsoft",
                                      name=name, activation_type=activation, **attrs))
        outs.append(f32(name, ["b", "s", h]))

    if variant == "gelu":
        moe("gelu", "gelu", inner, k=2)
    else:
        moe("interleaved", "swiglu", 2 * inner, k=2, normalize_routing_weights=1,
            swiglu_fusion=1, swiglu_limit=7.0, activation_alpha=1.702, activation_beta=1.0)
        moe("relu", "relu", inner, k=1)
        moe("silu", "silu", inner, bias=False, k=2)
    nodes.insert(0, helper.make_node("Reshape", ["router", "rows"], ["r"], name="rows"))
    inits.append(numpy_helper.from_array(np.array([-1, e], np.int64), "rows"))
    ins = [f32("x", ["b", "s", h]), f32("router", ["b", "s", e])]
    return model(nodes, ins, outs, inits, opset=17,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_moe(path):
    return moe_model()


def case_moe_gelu(path):
    return moe_model("gelu")


def case_float_range_of_size(path):
    """torch.arange(seq_len) of floats where seq_len = cache_position[-1] + 1
    (PhiMoE's rotary table under transformers 4.48): Range(0, seq) in int64,
    its last element plus one, cast to float, then a float Range to it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0, name="n"),
        helper.make_node("Range", ["zero", "n", "one"], ["positions"], name="positions"),
        helper.make_node("Gather", ["positions", "minus1"], ["last"], axis=0, name="last"),
        helper.make_node("Add", ["last", "one"], ["length"], name="length"),
        helper.make_node("Cast", ["length"], ["length_f"], to=TensorProto.FLOAT, name="length_f"),
        helper.make_node("Range", ["zero_f", "length_f", "one_f"], ["r"], name="range"),
        helper.make_node("Unsqueeze", ["r", "axis1"], ["column"], name="column"),
        helper.make_node("Mul", ["x", "column"], ["y"], name="y"),
    ]
    inits = [ints("zero", 0), ints("one", 1), ints("minus1", -1), ints("axis1", [1]),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one_f")]
    return model(nodes, [f32("x", ["seq", 2])], [f32("y", ["seq", 2]), f32("r", None)],
                 inits, opset=17)


def claimed_mask(slice_to_keys=True, named="past_sequence_length + 1"):
    """Scores over the past and new keys plus an attention mask whose key
    dimension is named `past_sequence_length + 1`, as Optimum's older
    exports name it (true only for one new token): sliced to the keys'
    length, as transformers writes `mask[..., :key_length]`, or added as
    it is; the graph says the mask has past + new keys."""
    nodes = [
        helper.make_node("Concat", ["past", "new"], ["keys"], axis=1, name="keys"),
        helper.make_node("Transpose", ["keys"], ["keys_t"], perm=[0, 2, 1], name="keys_t"),
        helper.make_node("MatMul", ["new", "keys_t"], ["scores"], name="scores"),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT,
                         name="mask_f"),
        helper.make_node("Unsqueeze", ["mask_f", "axis1"], ["mask3"], name="mask3"),
    ]
    inits = [ints("axis1", [1]), ints("zero", [0]), ints("two", [2]), ints("one", [1])]
    if slice_to_keys:
        nodes += [
            helper.make_node("Shape", ["keys"], ["keys_shape"], name="keys_shape"),
            helper.make_node("Slice", ["keys_shape", "one", "two"], ["key_length"],
                             name="key_length"),
            helper.make_node("Slice", ["mask3", "zero", "key_length", "two"], ["mask"],
                             name="mask"),
        ]
    else:
        nodes.append(helper.make_node("Identity", ["mask3"], ["mask"], name="mask"))
    nodes.append(helper.make_node("Add", ["scores", "mask"], ["y"], name="masked"))
    inputs = [f32("past", ["batch_size", "past_sequence_length", 4]),
              f32("new", ["batch_size", "sequence_length", 4]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch_size", named])]
    return model(nodes, inputs, [f32("y", None)], inits, opset=17)


def case_claimed_mask_sliced(path):
    return claimed_mask()


def case_claimed_mask_added(path):
    return claimed_mask(slice_to_keys=False)


def case_claimed_mask_true(path):
    return claimed_mask(named="past_sequence_length + sequence_length")


def case_if_shape(path):
    """If on a comparison of sizes, as TorchScript writes `x.squeeze(2)` of
    a dimension it does not know: Shape(x)[2] == 1 then Squeeze, else x
    (taken: the then branch reads the enclosing graph's x and a value
    computed before the If); and an If on sequence length == 0, which the
    sizes decide the other way."""
    then_g = helper.make_graph(
        [helper.make_node("Squeeze", ["scaled", "two"], ["squeezed"], name="squeeze")],
        "then", [], [helper.make_tensor_value_info("squeezed", TensorProto.FLOAT, None)])
    else_g = helper.make_graph(
        [helper.make_node("Identity", ["scaled"], ["same"], name="same")],
        "else", [], [helper.make_tensor_value_info("same", TensorProto.FLOAT, None)])
    empty_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"], name="negated")],
        "empty", [], [helper.make_tensor_value_info("negated", TensorProto.FLOAT, None)])
    full_g = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["exped"], name="exped")],
        "full", [], [helper.make_tensor_value_info("exped", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("Mul", ["x", "x"], ["scaled"], name="scaled"),
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "two_s"], ["d2"], axis=0, name="d2"),
        helper.make_node("Equal", ["d2", "one"], ["is_one"], name="is_one"),
        helper.make_node("If", ["is_one"], ["y"], then_branch=then_g, else_branch=else_g,
                         name="squeeze_if"),
        helper.make_node("Gather", ["shape", "one_s"], ["d1"], axis=0, name="d1"),
        helper.make_node("Equal", ["d1", "zero"], ["is_empty"], name="is_empty"),
        helper.make_node("If", ["is_empty"], ["z"], then_branch=empty_g, else_branch=full_g,
                         name="empty_if"),
    ]
    inits = [ints("two", [2]), ints("two_s", 2), ints("one_s", 1), ints("one", 1),
             ints("zero", 0)]
    return model(nodes, [f32("x", ["batch", "seq", 1, 4])], [f32("y", None), f32("z", None)],
                 inits, opset=17)


def case_slice_to_constant(path):
    """A slice of a symbolic dimension to a constant end (MiniMax's first
    block of 4 tokens, x[:, :4]): min(seq, 4) elements, which meshc does not
    keep symbolic."""
    nodes = [helper.make_node("Slice", ["x", "zero", "four", "one"], ["y"], name="first_block")]
    inits = [ints("zero", [0]), ints("four", [4]), ints("one", [1])]
    return model(nodes, [f32("x", [2, "seq"])], [f32("y", None)], inits)


def case_if_runtime(path):
    """An If on a condition computed from the data (any(x > 0)), which the
    import cannot decide: refused by name."""
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["a"], name="a")], "then", [],
                               [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Exp", ["x"], ["b"], name="b")], "else", [],
                               [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0, name="m"),
        helper.make_node("Greater", ["m", "zero"], ["pos"], name="pos"),
        helper.make_node("If", ["pos"], ["y"], then_branch=then_g, else_branch=else_g,
                         name="data_if"),
    ]
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero")]
    return model(nodes, [f32("x", [2, 3])], [f32("y", None)], inits, opset=17)


def case_scatter_rows(path):
    """ScatterElements writing one slice at a constant index, as torch writes
    `x[:, i, :] = v` in unrolled loops (Qwen3.5's delta rule): row 1 of
    axis 1 replaced; row -1 (the last) added to (reduction "add"); and a near
    miss, indices that differ along the row, which stays a scatter."""
    nodes = [
        helper.make_node("ScatterElements", ["x", "row1", "v"], ["set_row"], axis=1,
                         name="set_row"),
        helper.make_node("ScatterElements", ["x", "last", "v"], ["add_row"], axis=1,
                         reduction="add", name="add_row"),
        helper.make_node("ScatterElements", ["x", "mixed", "v"], ["mixed_rows"], axis=1,
                         name="mixed_rows"),
    ]
    inits = [ints("row1", np.ones((2, 1, 4), np.int64)),
             ints("last", np.full((2, 1, 4), -1, np.int64)),
             ints("mixed", np.array([[[0, 1, 2, 0]], [[1, 1, 0, 2]]], np.int64))]
    return model(nodes, [f32("x", [2, 3, 4]), f32("v", [2, 1, 4])],
                 [f32("set_row", None), f32("add_row", None), f32("mixed_rows", None)],
                 inits, opset=18)


def case_pool_conv_strided(path):
    """Windows stepping by a stride over a symbolic length (run at odd and
    even lengths): Funnel's pooling as TorchScript writes it (kernel =
    stride = 2 along the sequence, ceil_mode, as AveragePool and MaxPool);
    an AveragePool with ceil_mode over padding that does not count, and one
    stepping by 2 over padding that counts; one with stride 1 over padding
    that does not count; a dilated MaxPool stepping by 2; wav2vec2's feature
    encoder (Conv1d, kernel 10 stride 5, then kernel 3 stride 2), a grouped
    Conv1d stepping by 2 over padding, and a Conv2d stepping by 2 along a
    symbolic height. Each average divides by its windows' own counts,
    computed in the graph."""
    rng = np.random.default_rng(11)
    def w(name, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
    nodes = [
        helper.make_node("AveragePool", ["h"], ["funnel_avg"], kernel_shape=[2, 1],
                         strides=[2, 1], ceil_mode=1, count_include_pad=1, name="funnel_avg"),
        helper.make_node("MaxPool", ["h"], ["funnel_max"], kernel_shape=[2, 1],
                         strides=[2, 1], ceil_mode=1, name="funnel_max"),
        helper.make_node("AveragePool", ["x"], ["ceil_own"], kernel_shape=[3], strides=[2],
                         pads=[1, 1], ceil_mode=1, count_include_pad=0, name="ceil_own_count"),
        helper.make_node("AveragePool", ["x"], ["step_pads"], kernel_shape=[3], strides=[2],
                         pads=[1, 1], count_include_pad=1, name="step_with_pads"),
        helper.make_node("AveragePool", ["x"], ["own"], kernel_shape=[3], pads=[1, 1],
                         count_include_pad=0, name="own_count"),
        helper.make_node("MaxPool", ["x"], ["dilated"], kernel_shape=[2], strides=[2],
                         pads=[1, 0], dilations=[2], name="dilated_max"),
        helper.make_node("Conv", ["x", "w0"], ["feat0"], kernel_shape=[10], strides=[5],
                         name="feature_conv0"),
        helper.make_node("Conv", ["feat0", "w1"], ["feat1"], kernel_shape=[3], strides=[2],
                         name="feature_conv1"),
        helper.make_node("Conv", ["x", "wg", "bg"], ["grouped"], group=2, kernel_shape=[3],
                         strides=[2], pads=[1, 1], name="grouped_strided"),
        helper.make_node("Conv", ["h", "w2"], ["conv2d"], kernel_shape=[3, 2], strides=[2, 1],
                         pads=[1, 0, 0, 0], name="strided_conv2d"),
    ]
    inits = [w("w0", [6, 4, 10]), w("w1", [5, 6, 3]), w("wg", [6, 2, 3]), w("bg", [6]),
             w("w2", [3, 2, 3, 2])]
    ins = [f32("x", ["batch", 4, "len"]), f32("h", [2, 2, "len", 4])]
    outs = [f32(n, None) for n in ("funnel_avg", "funnel_max", "ceil_own", "step_pads", "own",
                                   "dilated", "feat1", "grouped", "conv2d")]
    return model(nodes, ins, outs, inits, opset=19)


def case_pad_torchscript(path):
    """F.pad by a symbolic amount as TorchScript writes it (SEW pads its
    frames to an even count): torch's (left, right) pairs, last axis first,
    joined with zeros for the other axes, reshaped to [axes, 2], reversed,
    transposed and flattened into ONNX's begins-then-ends order; the amount
    is (len + 1) // 2 * 2 - len, in [0, 1] at every length."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "two"], ["len"], axis=0, name="len"),
        helper.make_node("Add", ["len", "one"], ["len1"], name="plus_one"),
        helper.make_node("Div", ["len1", "two"], ["half"], name="half"),
        helper.make_node("Mul", ["half", "two"], ["even"], name="even"),
        helper.make_node("Sub", ["even", "len"], ["amount"], name="amount"),
        helper.make_node("Unsqueeze", ["amount", "zero1"], ["amount1"], name="amount1"),
        helper.make_node("Concat", ["zero1", "amount1"], ["pair"], axis=0, name="pair"),
        helper.make_node("ConstantOfShape", ["four"], ["rest"], name="rest",
                         value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Concat", ["pair", "rest"], ["torch_pads"], axis=0, name="torch_pads"),
        helper.make_node("Reshape", ["torch_pads", "pairs"], ["matrix"], name="matrix"),
        helper.make_node("Slice", ["matrix", "minus1", "very_negative", "zero1", "minus1"],
                         ["reversed"], name="reversed"),
        helper.make_node("Transpose", ["reversed"], ["onnx_order"], perm=[1, 0], name="onnx_order"),
        helper.make_node("Reshape", ["onnx_order", "minus1"], ["pads"], name="flat"),
        helper.make_node("Pad", ["x", "pads"], ["y"], name="pad_to_even"),
    ]
    inits = [ints("two", 2), ints("one", 1), ints("zero1", [0]), ints("four", [4]),
             ints("pairs", [-1, 2]), ints("minus1", [-1]),
             ints("very_negative", [-(2**63) + 1])]
    return model(nodes, [f32("x", [1, 4, "len"])], [f32("y", None)], inits)


def case_pool_ceil_symbolic(path):
    """AveragePool with ceil_mode over a symbolic length whose stride (3)
    exceeds its kernel (2): whether the last window starts before the end
    depends on the length, so meshc refuses it by name."""
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2], strides=[3],
                              ceil_mode=1, name="sparse_pool")]
    return model(nodes, [f32("x", [1, 2, "len"])], [f32("y", None)], [], opset=19)


def case_resize_crop(path):
    """Resize with tf_crop_and_resize (its region of interest and
    extrapolation value): refused by name."""
    nodes = [helper.make_node("Resize", ["x", "roi", "", "size"], ["y"], mode="linear",
                              coordinate_transformation_mode="tf_crop_and_resize",
                              name="crop_resize")]
    inits = [numpy_helper.from_array(np.array([0, 0, 0.1, 0.1, 1, 1, 0.9, 0.9], np.float32),
                                     "roi"), ints("size", [1, 2, 3, 3])]
    return model(nodes, [f32("x", [1, 2, 4, 4])], [f32("y", None)], inits, opset=19)


def case_resize_symbolic(path):
    """Resize of a symbolic axis with half_pixel_symmetric (its matrix is
    built in the graph, which takes the other modes): refused by name."""
    nodes = [helper.make_node("Resize", ["x", "", "twice"], ["y"], mode="linear",
                              coordinate_transformation_mode="half_pixel_symmetric",
                              name="grow_seq")]
    inits = [numpy_helper.from_array(np.array([1, 1, 2], np.float32), "twice")]
    return model(nodes, [f32("x", [1, 2, "len"])], [f32("y", None)], inits, opset=19)


def case_resize_runtime(path):
    """Resize along axes of symbolic length, its [in, out] matrix built in
    the graph: nearest upsampling by a scale of 2 (asymmetric, floor);
    linear shrinking by 0.5 (pytorch_half_pixel); linear to the next
    multiple of 4, ceil(h / 4) * 4 computed from the Shape in floats
    (MobileViT's feature map before it unfolds it into patches); a static
    4 x 4 grid resized bicubically to (h // 2, w // 2) (DINOv2's position
    embeddings interpolated to the image's patches); linear with
    align_corners to h + 3; cubic with exclude_outside and a = -0.5 to 2h;
    nearest round_prefer_ceil (half_pixel) to w + 2."""
    def dim(name, axis):
        return [helper.make_node("Shape", ["x"], [name + "_all"]),
                helper.make_node("Gather", [name + "_all", "ax%d" % axis], [name], axis=0)]
    nodes = dim("h", 2) + dim("w", 3) + dim("b", 0) + [
        helper.make_node("Resize", ["x", "", "twice"], ["up2"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                         name="up2"),
        helper.make_node("Resize", ["x", "", "halve"], ["half"], mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel", name="half"),
        # ceil(h / 4) * 4 in floats, as torch traces math.ceil.
        helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["hf", "four_f"], ["hq"]),
        helper.make_node("Ceil", ["hq"], ["hc"]),
        helper.make_node("Mul", ["hc", "four_f"], ["hm"]),
        helper.make_node("Cast", ["hm"], ["h4"], to=TensorProto.INT64),
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["wf", "four_f"], ["wq"]),
        helper.make_node("Ceil", ["wq"], ["wc"]),
        helper.make_node("Mul", ["wc", "four_f"], ["wm"]),
        helper.make_node("Cast", ["wm"], ["w4"], to=TensorProto.INT64),
        helper.make_node("Concat", ["b", "two", "h4", "w4"], ["mult4_size"], axis=0),
        helper.make_node("Resize", ["x", "", "", "mult4_size"], ["mult4"], mode="linear",
                         name="mult4"),
        helper.make_node("Div", ["h", "two"], ["h2"]),
        helper.make_node("Div", ["w", "two"], ["w2"]),
        helper.make_node("Concat", ["one", "four", "h2", "w2"], ["grid_size"], axis=0),
        helper.make_node("Resize", ["pos", "", "", "grid_size"], ["grid"], mode="cubic",
                         cubic_coeff_a=-0.75, name="grid"),
        helper.make_node("Add", ["h", "three"], ["h3"]),
        helper.make_node("Concat", ["b", "two", "h3", "w"], ["corners_size"], axis=0),
        helper.make_node("Resize", ["x", "", "", "corners_size"], ["corners"], mode="linear",
                         coordinate_transformation_mode="align_corners", name="corners"),
        helper.make_node("Mul", ["h", "two"], ["hh"]),
        helper.make_node("Concat", ["b", "two", "hh", "w"], ["outside_size"], axis=0),
        helper.make_node("Resize", ["x", "", "", "outside_size"], ["outside"], mode="cubic",
                         cubic_coeff_a=-0.5, exclude_outside=1, name="outside"),
        helper.make_node("Add", ["w", "two"], ["wp"]),
        helper.make_node("Concat", ["b", "two", "h", "wp"], ["round_size"], axis=0),
        helper.make_node("Resize", ["x", "", "", "round_size"], ["round"], mode="nearest",
                         nearest_mode="round_prefer_ceil", name="round"),
    ]
    inits = [ints("ax0", [0]), ints("ax2", [2]), ints("ax3", [3]), ints("one", [1]),
             ints("two", [2]), ints("three", [3]), ints("four", [4]),
             numpy_helper.from_array(np.array([4.0], np.float32), "four_f"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "twice"),
             numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "halve")]
    outs = ["up2", "half", "mult4", "grid", "corners", "outside", "round"]
    return model(nodes, [f32("x", ["batch", 2, "h", "w"]), f32("pos", [1, 4, 4, 4])],
                 [f32(o, None) for o in outs], inits, opset=13)


def case_rank_nine(path):
    """A tensor of rank 9 (a Relu between two Reshapes): it imports, and the
    executables, which hold rank 8 at most, refuse it by name."""
    nodes = [helper.make_node("Reshape", ["x", "nine"], ["deep"], name="deepen"),
             helper.make_node("Relu", ["deep"], ["relu"], name="relu_nine"),
             helper.make_node("Reshape", ["relu", "flat"], ["y"], name="flatten")]
    inits = [ints("nine", [2] * 9), ints("flat", [2, 256])]
    return model(nodes, [f32("x", [2, 256])], [f32("y", None)], inits)


def case_pool_ceil_uneven_pads(path):
    """AveragePool with ceil_mode whose last window runs past the end, over
    pads that differ at the two ends and count (count_include_pad 1): the
    divisor has no one convention, so meshc refuses it by name."""
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 0, 0], ceil_mode=1, count_include_pad=1,
                              name="ceil_pool")]
    return model(nodes, [f32("x", [1, 2, 7, 8])], [f32("y", None)], [], opset=19)


def case_slice_last_length(path):
    """x[:, -seq:] with seq read from another input's shape and negated
    (Neg of a Gather of a Shape), as TorchScript writes LFM2's mask slice:
    the start folds to minus the dimension, the first element."""
    nodes = [
        helper.make_node("Shape", ["ids"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["seq"], axis=0, name="seq"),
        helper.make_node("Neg", ["seq"], ["minus_seq"], name="neg"),
        helper.make_node("Unsqueeze", ["minus_seq", "zero"], ["starts"], name="starts"),
        helper.make_node("Slice", ["x", "starts", "big", "one1"], ["y"], name="last_seq"),
    ]
    inits = [ints("one", 1), ints("zero", [0]), ints("big", [2**62]), ints("one1", [1])]
    ins = [f32("x", ["batch", "seq", 4]),
           helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])]
    return model(nodes, ins, [f32("y", None)], inits)


def case_conv2d(path):
    """A dense Conv over two spatial axes of symbolic sizes (an image's
    height and width, as Optimum's vision exports name them), its patches
    flattened and added to position embeddings of a fixed count (ViT's): 4
    patches, so the executables take the images of 2 x 2 patches of 4 x 4
    pixels, 8 x 8, 4 x 16 or 16 x 4, and refuse the others by name."""
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[4, 4], strides=[4, 4],
                         name="image_conv"),
        helper.make_node("Reshape", ["y", "flat"], ["rows"], name="flatten"),
        helper.make_node("Transpose", ["rows"], ["patches"], perm=[0, 2, 1], name="to_rows"),
        helper.make_node("Add", ["patches", "pos"], ["out"], name="add_positions"),
    ]
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 4, 4)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((1, 4, 8)).astype(np.float32), "pos"),
             ints("flat", [0, 8, -1])]
    return model(nodes, [f32("x", ["batch", 3, "height", "width"])], [f32("out", None)], inits)


def case_window_unpadded(path):
    """Windows of 4 rows, padded at run time to a multiple of 4 but reshaped
    back to the unpadded shape without a crop (a Swin export traced where
    its windows divide the image): Reshape needs as many elements as it
    meets, so onnxruntime runs only lengths that 4 divides, and so do the
    executables, refusing the others by name."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["n"], axis=0, name="length"),
        helper.make_node("Mod", ["n", "four"], ["rem"], name="rem"),
        helper.make_node("Sub", ["four", "rem"], ["short"], name="short"),
        helper.make_node("Mod", ["short", "four"], ["pad"], name="pad_rows"),
        helper.make_node("Concat", ["zeros4", "pad", "zero1"], ["pads"], axis=0, name="pads"),
        helper.make_node("Pad", ["x", "pads"], ["padded"], name="pad"),
        helper.make_node("Reshape", ["padded", "windows"], ["w"], name="to_windows"),
        helper.make_node("Relu", ["w"], ["r"], name="relu"),
        helper.make_node("Gather", ["shape", "lead"], ["lead_sizes"], axis=0, name="lead_sizes"),
        helper.make_node("Concat", ["lead_sizes", "eight"], ["back"], axis=0, name="back_shape"),
        helper.make_node("Reshape", ["r", "back"], ["out"], name="from_windows"),
    ]
    inits = [ints("one", [1]), ints("four", [4]), ints("zeros4", [0, 0, 0, 0]),
             ints("zero1", [0]), ints("windows", [-1, 4, 8]), ints("lead", [0, 1]),
             ints("eight", [8])]
    return model(nodes, [f32("x", ["batch", "n", 8])], [f32("out", None)], inits)


def case_pad_reflect(path):
    """Pad in mode reflect, which meshc does not import: refused by name."""
    nodes = [helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect", name="mirror")]
    return model(nodes, [f32("x", [2, 4])], [f32("y", None)], [ints("pads", [0, 1, 0, 1])])


def case_nan_guard(path):
    """PyTorch SDPA's guard after the softmax, where(isnan(p), 0, p), a
    bidirectional mask built with GreaterOrEqual (BERT), and the dynamo
    exporter's padding mask mask[batch_idx, kv_idx] as GatherND."""
    nodes = [
        helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
        helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
        helper.make_node("Where", ["nan", "zero", "p"], ["guarded"], name="guard"),
        helper.make_node("GreaterOrEqual", ["i", "j"], ["ge"], name="ge"),
        helper.make_node("GatherND", ["m", "grid"], ["picked"], name="pick"),
    ]
    grid = np.stack(np.meshgrid(np.arange(2), np.arange(3), indexing="ij"), -1)
    inits = [numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(grid.astype(np.int64), "grid")]
    ins = [f32("s", [2, 4, 4]), helper.make_tensor_value_info("i", TensorProto.INT64, [4, 1]),
           helper.make_tensor_value_info("j", TensorProto.INT64, [4]),
           helper.make_tensor_value_info("m", TensorProto.BOOL, [2, 3])]
    outs = [helper.make_tensor_value_info("guarded", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("ge", TensorProto.BOOL, None),
            helper.make_tensor_value_info("picked", TensorProto.BOOL, None)]
    return model(nodes, ins, outs, inits)


def case_cumsum(path):
    """CumSum: position ids from an attention mask (cumsum(mask, -1) - 1, as
    transformers computes them when only the mask is given), and float running
    sums exclusive and reversed, the axis a scalar or a one-element tensor."""
    nodes = [
        helper.make_node("CumSum", ["mask", "last"], ["run"], name="positions"),
        helper.make_node("Sub", ["run", "one"], ["pos"], name="minus_one"),
        helper.make_node("CumSum", ["x", "first"], ["excl"], exclusive=1, name="excl"),
        helper.make_node("CumSum", ["x", "middle"], ["rev"], reverse=1, exclusive=1,
                         name="rev"),
    ]
    inits = [numpy_helper.from_array(np.array(-1, np.int64), "last"),
             numpy_helper.from_array(np.array([0], np.int32), "first"),
             numpy_helper.from_array(np.array(1, np.int64), "middle"),
             numpy_helper.from_array(np.array(1, np.int64), "one")]
    ins = [helper.make_tensor_value_info("mask", TensorProto.INT64, [2, 6]),
           f32("x", [3, 4, 5])]
    outs = [helper.make_tensor_value_info("pos", TensorProto.INT64, None),
            helper.make_tensor_value_info("excl", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("rev", TensorProto.FLOAT, None)]
    return model(nodes, ins, outs, inits)


def case_unsorted(path):
    """The mlp model with its nodes listed in reverse (ONNX allows any order)."""
    m = case_mlp(path)
    nodes = list(m.graph.node)[::-1]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def structure_model(opset):
    """GPT-2-like plumbing: qkv Split, head Unsqueeze/Concat, embedding Gather,
    a mean over the last axis, a Slice of a causal-mask buffer, Expand."""
    reduce_axes = dict(axes=[-1]) if opset < 18 else {}
    reduce_inputs = ["h"] if opset < 18 else ["h", "last"]
    split_kw = dict(num_outputs=3) if opset >= 18 else {}
    nodes = [
        helper.make_node("Gather", ["wte", "ids"], ["h"], axis=0, name="embed"),
        helper.make_node("ReduceMean", reduce_inputs, ["mu"], keepdims=1, name="mean",
                         **reduce_axes),
        helper.make_node("Split", ["h"], ["q", "k", "v"], axis=2, name="qkv", **split_kw),
        helper.make_node("Unsqueeze", ["q", "zero"], ["q4"], name="q4"),
        helper.make_node("Concat", ["q4", "q4"], ["qq"], axis=0, name="cat"),
        helper.make_node("Slice", ["bias", "start", "end", "axes23"], ["mask"], name="mask"),
        helper.make_node("Squeeze", ["mask", "zero"], ["mask3"], name="sq"),
        helper.make_node("Expand", ["mask3", "target"], ["maskx"], name="ex"),
        helper.make_node("ReduceSum", ["k", "last"], ["ks"], keepdims=0, name="ksum"),
        helper.make_node("ReduceMax", ["v"] if opset < 18 else ["v", "last"], ["vm"],
                         keepdims=0, name="vmax", **reduce_axes),
    ]
    # The mask buffer is an input so that slicing it is not folded away.
    inits = [weight("wte", 50, 12), ints("zero", [0]), ints("last", [-1]),
             ints("start", [0, 0]), ints("end", [4, 4]), ints("axes23", [2, 3]),
             ints("target", [2, 4, 4])]
    ids = helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 4])
    bias = helper.make_tensor_value_info("bias", TensorProto.BOOL, [1, 1, 8, 8])
    outs = [f32("mu", None), f32("qq", None),
            helper.make_tensor_value_info("maskx", TensorProto.BOOL, None),
            f32("ks", None), f32("vm", None)]
    return model(nodes, [ids, bias], outs, inits, opset=opset)


def case_structure13(path):
    return structure_model(13)


def case_structure18(path):
    return structure_model(18)


def case_large_offset(path):
    """A weight 5 GiB into a sparse external-data file: offsets are 64-bit."""
    t = helper.make_tensor("w", TensorProto.FLOAT, [4], vals=[])
    t.data_location = TensorProto.EXTERNAL
    offset = 5 << 30
    for k, v in (("location", "big.bin"), ("offset", str(offset)), ("length", "16")):
        t.external_data.add(key=k, value=v)
    with open(os.path.join(os.path.dirname(path), "big.bin"), "wb") as f:
        f.truncate(offset + 16)
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return model([node], [f32("x", [4])], [f32("y", [4])], [t])


def case_norms(path):
    """LayerNormalization-17 and RMSNormalization-23, Trilu, Clip, CastLike,
    ScatterND (a KV-cache write), at opset 23."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["ln"], epsilon=1e-5, name="ln"),
        helper.make_node("RMSNormalization", ["ln", "g"], ["rms"], epsilon=1e-6, name="rms"),
        helper.make_node("Clip", ["rms", "lo", ""], ["clipped"], name="clip"),
        helper.make_node("CastLike", ["clipped", "half"], ["h"], name="castlike"),
        helper.make_node("Trilu", ["ones", "k"], ["causal"], upper=0, name="tril"),
        helper.make_node("ScatterND", ["past", "pos", "new"], ["cache"], name="kv_write"),
    ]
    inits = [weight("g", 8), weight("b", 8),
             numpy_helper.from_array(np.array(-1.0, np.float32), "lo"),
             numpy_helper.from_array(np.zeros((1,), np.float16), "half"),
             numpy_helper.from_array(np.ones((4, 4), dtype=bool), "ones"), ints("k", 0),
             ints("pos", [[[0, 0, 3]]])]
    ins = [f32("x", [2, 8]), f32("past", [1, 2, 4, 8]), f32("new", [1, 1, 8])]
    outs = [helper.make_tensor_value_info("h", TensorProto.FLOAT16, None),
            helper.make_tensor_value_info("causal", TensorProto.BOOL, None),
            f32("cache", None)]
    return model(nodes, ins, outs, inits, opset=23)


def ref_attr(name, ref, attr_type):
    a = onnx.AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, attr_type
    return a


def scaled_tanh():
    """custom.ScaledTanh(x) = Tanh(x) * alpha, alpha an attribute (default 2)."""
    const = helper.make_node("Constant", [], ["a"], name="alpha")
    const.attribute.append(ref_attr("value_float", "alpha", onnx.AttributeProto.FLOAT))
    nodes = [const, helper.make_node("Tanh", ["x"], ["t"], name="tanh"),
             helper.make_node("Mul", ["t", "a"], ["y"], name="scale")]
    return helper.make_function("custom", "ScaledTanh", ["x"], ["y"], nodes,
                                [helper.make_opsetid("", 17)], attributes=[],
                                attribute_protos=[helper.make_attribute("alpha", 2.0)])


def case_functions(path):
    """Model-local functions: a call with alpha, a nested call using the default."""
    twice = helper.make_function(
        "custom", "Twice", ["x"], ["y"],
        [helper.make_node("ScaledTanh", ["x"], ["y"], domain="custom", name="inner")],
        [helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)])
    nodes = [helper.make_node("ScaledTanh", ["x"], ["h"], domain="custom", alpha=0.5,
                              name="call1"),
             helper.make_node("Twice", ["h"], ["y"], domain="custom", name="call2")]
    m = model(nodes, [f32("x", [4])], [f32("y", None)],
              extra_opsets=[helper.make_opsetid("custom", 1)])
    m.functions.extend([scaled_tanh(), twice])
    return m


def case_recursive_function(path):
    loop = helper.make_function(
        "custom", "Loop", ["x"], ["y"],
        [helper.make_node("Loop", ["x"], ["y"], domain="custom", name="again")],
        [helper.make_opsetid("custom", 1)])
    node = helper.make_node("Loop", ["x"], ["y"], domain="custom", name="start")
    m = model([node], [f32("x", [4])], [f32("y", None)],
              extra_opsets=[helper.make_opsetid("custom", 1)])
    m.functions.append(loop)
    return m


def case_contrib(path):
    """onnxruntime-genai style fused norms and activations (com.microsoft);
    QuickGelu as onnxruntime's transformer optimizer fuses CLIP's."""
    ms = "com.microsoft"
    nodes = [
        helper.make_node("SimplifiedLayerNormalization", ["x", "g"], ["n0"], epsilon=1e-6,
                         axis=-1, name="input_norm"),
        helper.make_node("MatMul", ["n0", "w"], ["h"], name="proj"),
        helper.make_node("SkipSimplifiedLayerNormalization", ["h", "x", "g"],
                         ["n1", "", "", "resid"], epsilon=1e-6, domain=ms, name="post_norm"),
        helper.make_node("FastGelu", ["n1", "b"], ["a"], domain=ms, name="act"),
        helper.make_node("Gelu", ["a"], ["a2"], approximate="tanh", name="gelu20"),
        helper.make_node("QuickGelu", ["a2"], ["a3"], domain=ms, name="quick"),
        helper.make_node("SkipLayerNormalization", ["a3", "resid", "g", "beta"], ["y"],
                         epsilon=1e-5, domain=ms, name="final_norm"),
    ]
    inits = [weight("g", 8), weight("w", 8, 8), weight("b", 8), weight("beta", 8)]
    return model(nodes, [f32("x", [2, 8])], [f32("y", None)], inits, opset=20,
                 extra_opsets=[helper.make_opsetid(ms, 1)])


def case_embed_layer_norm(path):
    """com.microsoft EmbedLayerNormalization as onnxruntime's transformer
    optimizer fuses BERT's embeddings: word + position + segment lookups, a
    layer norm, the mask counted into mask_index, the sum before the norm;
    and a second node without segments or mask, with position ids."""
    ms = "com.microsoft"
    i32 = TensorProto.INT32
    nodes = [
        helper.make_node("EmbedLayerNormalization",
                         ["ids", "seg", "word", "pos", "segw", "g", "beta", "mask"],
                         ["out", "mask_index", "sum"], epsilon=1e-12, domain=ms,
                         name="embed"),
        helper.make_node("EmbedLayerNormalization",
                         ["ids", "", "word", "pos", "", "g", "beta", "", "pids"],
                         ["out2", "mask_index2"], epsilon=1e-5, domain=ms, name="embed2"),
    ]
    inits = [weight("word", 10, 8), weight("pos", 16, 8), weight("segw", 4, 8),
             weight("g", 8), weight("beta", 8)]
    ins = [helper.make_tensor_value_info(n, i32, [2, 5]) for n in ("ids", "seg", "mask")]
    ins.append(helper.make_tensor_value_info("pids", i32, [1, 5]))
    outs = [f32("out", None), helper.make_tensor_value_info("mask_index", i32, None),
            f32("sum", None), f32("out2", None),
            helper.make_tensor_value_info("mask_index2", i32, None)]
    return model(nodes, ins, outs, inits, extra_opsets=[helper.make_opsetid(ms, 1)])


def case_contrib_stats_used(path):
    nodes = [helper.make_node("SkipLayerNormalization", ["x", "x", "g"], ["y", "mean"],
                              domain="com.microsoft", name="sln")]
    inits = [weight("g", 8)]
    return model(nodes, [f32("x", [2, 8])], [f32("y", None), f32("mean", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_einsum(path):
    """The matmul forms exporters write with Einsum."""
    nodes = [
        helper.make_node("Einsum", ["q", "k"], ["s"], equation="bhqd,bhkd->bhqk", name="scores"),
        helper.make_node("Einsum", ["s", "v"], ["o"], equation="bhqk,bhkd->bhqd", name="mix"),
        helper.make_node("Einsum", ["x", "w"], ["y"], equation="bsd, dh -> bsh", name="linear"),
        helper.make_node("Einsum", ["t", "f"], ["freqs"], equation="i,j->ij", name="outer"),
        helper.make_node("Einsum", ["x", "w"], ["yt"], equation="bsd,dh->hbs", name="permuted"),
    ]
    ins = [f32("q", [1, 2, 4, 8]), f32("k", [1, 2, 6, 8]), f32("v", [1, 2, 6, 8]),
           f32("x", [2, 4, 8]), f32("t", [4]), f32("f", [3])]
    outs = [f32("o", None), f32("y", None), f32("freqs", None), f32("yt", None)]
    return model(nodes, ins, outs, [weight("w", 8, 16)])


def case_einsum_ellipsis(path):
    """Einsum with ellipses: LongT5's blocked scores '...qhd,...khd->...hqk'
    (two leading dimensions behind the ellipsis), a product whose ellipsis
    broadcasts a unit dimension, and one operand transposed."""
    nodes = [
        helper.make_node("Einsum", ["q", "k"], ["scores"], equation="...qhd,...khd->...hqk",
                         name="blocked"),
        helper.make_node("Einsum", ["a", "b"], ["ab"], equation="...ij,...jk->...ik",
                         name="uneven"),
        helper.make_node("Einsum", ["a"], ["at"], equation="...ij->...ji", name="transposed"),
    ]
    ins = [f32("q", [2, 3, 4, 2, 8]), f32("k", [2, 3, 5, 2, 8]), f32("a", [2, 3, 4, 5]),
           f32("b", [1, 3, 5, 6])]
    outs = [f32(n, None) for n in ("scores", "ab", "at")]
    return model(nodes, ins, outs)


def case_big_constant(path):
    """A Constant node whose tensor (300 x 300, more than a literal holds)
    is stored in raw data, as TorchScript writes LED's band masks: the
    import refers to its bytes in the model file, as to an initializer's."""
    rng = np.random.default_rng(5)
    value = numpy_helper.from_array(rng.standard_normal((300, 300)).astype(np.float32), "band")
    nodes = [helper.make_node("Constant", [], ["band"], value=value, name="band"),
             helper.make_node("MatMul", ["x", "band"], ["y"], name="product")]
    return model(nodes, [f32("x", ["batch", 300])], [f32("y", None)])


def case_big_constant_varint(path):
    """A Constant node of 70000 int64 values in int64_data (varints, not
    bytes meshc can refer to), too large for a literal."""
    value = helper.make_tensor("ids", TensorProto.INT64, [70000], list(range(70000)))
    nodes = [helper.make_node("Constant", [], ["ids"], value=value, name="ids"),
             helper.make_node("Add", ["x", "ids"], ["y"], name="add")]
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [70000])],
                 [helper.make_tensor_value_info("y", TensorProto.INT64, None)])


def case_argmax_integers(path):
    """ArgMax of integers along a symbolic axis (CLIP pools its text at the
    argmax of the token ids), ArgMin of floats along one, keeping it: the
    first position of the extreme, ties included (the inputs draw 0..3)."""
    nodes = [helper.make_node("ArgMax", ["ids"], ["eos"], axis=-1, keepdims=0, name="eos"),
             helper.make_node("ArgMin", ["x"], ["low"], axis=1, keepdims=1, name="low")]
    ins = [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
           f32("x", ["batch", "seq"])]
    outs = [helper.make_tensor_value_info(n, TensorProto.INT64, None) for n in ("eos", "low")]
    return model(nodes, ins, outs)


def case_flip_symbolic(path):
    """Slices that step backwards over a symbolic axis (torch.flip: start
    -1, end INT64_MIN, step -1; every other element from the last; down to
    a constant end) and Equal of bools (torch's floor division
    compares the signs), as Speech2Text computes its subsampled mask."""
    big = np.iinfo(np.int64)
    nodes = [
        helper.make_node("Slice", ["x", "minus_one", "far", "axes", "minus_one"], ["flipped"],
                         name="flip"),
        helper.make_node("Slice", ["x", "minus_one", "far", "axes", "minus_two"], ["odd"],
                         name="every_other"),
        helper.make_node("Slice", ["x", "minus_one", "zero", "axes", "minus_one"], ["tail"],
                         name="down_to_one"),
        helper.make_node("Less", ["x", "zero_f"], ["neg_x"], name="neg_x"),
        helper.make_node("Less", ["flipped", "zero_f"], ["neg_f"], name="neg_f"),
        helper.make_node("Equal", ["neg_x", "neg_f"], ["same_sign"], name="same_sign"),
    ]
    inits = [ints("minus_one", [-1]), ints("minus_two", [-2]), ints("far", [int(big.min)]),
             ints("axes", [1]), ints("zero", [0]),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero_f")]
    outs = [f32("flipped", None), f32("odd", None), f32("tail", None),
            helper.make_tensor_value_info("same_sign", TensorProto.BOOL, None)]
    return model(nodes, [f32("x", ["batch", "n"])], outs, inits)


def case_expand_minus_one(path):
    """TorchScript's expand with -1 entries: Where(shape == -1, 1, shape) of
    a shape read after a convolution, n - 2 for a kernel of 3, which is -1
    at n = 1 were it not for the convolution's least input of 3 (SEW-D's
    attention expands so after its feature encoder)."""
    w = numpy_helper.from_array(RNG.standard_normal((1, 1, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["y"], name="conv"),
        helper.make_node("Shape", ["y"], ["shape"], name="shape"),
        helper.make_node("Equal", ["shape", "minus_one"], ["infer"], name="infer"),
        helper.make_node("Where", ["infer", "ones", "shape"], ["sizes"], name="sizes"),
        helper.make_node("Expand", ["two", "sizes"], ["twos"], name="expand"),
        helper.make_node("Add", ["y", "twos"], ["out"], name="add"),
    ]
    inits = [w, ints("minus_one", [-1, -1, -1]), ints("ones", [1, 1, 1]),
             numpy_helper.from_array(np.array(2.0, np.float32), "two")]
    return model(nodes, [f32("x", [1, 1, "n"])], [f32("out", None)], inits)


def case_div_from_size(path):
    """x[:, :(n / 10 - 3) / 2 + 1] with ONNX's truncating Div, as SEW-D's
    dynamo export sizes its squeezed frames: the dividend n / 10 - 3 is at
    least 0 only from n = 30, where the truncation is a floor division."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], start=1, end=2, name="shape"),
        helper.make_node("Div", ["shape", "ten"], ["tenths"], name="tenths"),
        helper.make_node("Sub", ["tenths", "three"], ["less"], name="less"),
        helper.make_node("Div", ["less", "two"], ["half"], name="half"),
        helper.make_node("Add", ["half", "one"], ["end"], name="end"),
        helper.make_node("Slice", ["x", "zero", "end", "axis"], ["y"], name="take"),
    ]
    inits = [ints("ten", [10]), ints("three", [3]), ints("two", [2]), ints("one", [1]),
             ints("zero", [0]), ints("axis", [1])]
    return model(nodes, [f32("x", [2, "n"])], [f32("y", None)], inits)


def case_splat_weight(path):
    """A product by a splat of a million elements (ConstantOfShape, folded
    to a splat literal): the executables' weight files hold its elements."""
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["half"], name="half",
                              value=numpy_helper.from_array(np.array([0.5], np.float32))),
             helper.make_node("MatMul", ["x", "half"], ["y"], name="product")]
    return model(nodes, [f32("x", ["batch", 2048])], [f32("y", None)],
                 [ints("shape", [2048, 512])])


def case_slice_maybe_empty(path):
    """`x[:, :-pad]` with pad = (4 - n % 4) % 4, as LED's TorchScript export
    unpads its sequence: pad is 0 for some lengths, where the slice takes
    nothing, and counts from the back otherwise."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["n"], axis=0, name="n"),
        helper.make_node("Mod", ["n", "four"], ["r"], name="r"),
        helper.make_node("Sub", ["four", "r"], ["p"], name="p"),
        helper.make_node("Mod", ["p", "four"], ["pad"], name="pad"),
        helper.make_node("Neg", ["pad"], ["end"], name="end"),
        helper.make_node("Unsqueeze", ["end", "zero"], ["ends"], name="ends"),
        helper.make_node("Slice", ["x", "zero", "ends", "axes"], ["y"], name="unpad"),
    ]
    scalar = lambda n, v: numpy_helper.from_array(np.array(v, np.int64), n)
    inits = [scalar("one", 1), scalar("four", 4), ints("zero", [0]), ints("axes", [1])]
    return model(nodes, [f32("x", ["batch", "n"])], [f32("y", None)], inits)


def case_einsum_trace(path):
    node = helper.make_node("Einsum", ["x", "x"], ["y"], equation="ii,ij->j", name="diag")
    return model([node], [f32("x", [4, 4])], [f32("y", None)])


def case_einsum_drop_ellipsis(path):
    node = helper.make_node("Einsum", ["x", "y"], ["z"], equation="...ij,...jk->ik",
                            name="drop")
    return model([node], [f32("x", [2, 4, 4]), f32("y", [2, 4, 3])], [f32("z", None)])


def rope_cache(name, positions, half):
    return numpy_helper.from_array(RNG.standard_normal((positions, half)).astype(np.float32), name)


def case_rotary23(path):
    """RotaryEmbedding-23: 4-D with position ids; 3-D, interleaved and partial
    (rotary_embedding_dim 4 of head_dim 8); 4-D with per-position caches."""
    nodes = [
        helper.make_node("RotaryEmbedding", ["x4", "cos", "sin", "pos"], ["y4"], name="rope4"),
        helper.make_node("RotaryEmbedding", ["x3", "cos2", "sin2", "pos"], ["y3"], num_heads=2,
                         interleaved=1, rotary_embedding_dim=4, name="rope3"),
        helper.make_node("RotaryEmbedding", ["x4", "cos_bs", "sin_bs"], ["yc"], name="rope_cached"),
    ]
    inits = [rope_cache("cos", 16, 4), rope_cache("sin", 16, 4), rope_cache("cos2", 16, 2),
             rope_cache("sin2", 16, 2),
             numpy_helper.from_array(RNG.standard_normal((1, 4, 4)).astype(np.float32), "cos_bs"),
             numpy_helper.from_array(RNG.standard_normal((1, 4, 4)).astype(np.float32), "sin_bs")]
    ins = [f32("x4", [1, 2, 4, 8]), f32("x3", [1, 4, 16]),
           helper.make_tensor_value_info("pos", TensorProto.INT64, [1, 4])]
    return model(nodes, ins, [f32("y4", None), f32("y3", None), f32("yc", None)], inits,
                 opset=23)


def case_rotary_ms(path):
    """com.microsoft RotaryEmbedding (input, position_ids, cos, sin): 3-D with
    position ids, and with a constant offset."""
    ms = "com.microsoft"
    nodes = [
        helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], num_heads=2,
                         domain=ms, name="rope"),
        helper.make_node("RotaryEmbedding", ["x", "offset", "cos", "sin"], ["yo"], num_heads=2,
                         domain=ms, name="rope_offset"),
    ]
    inits = [rope_cache("cos", 16, 4), rope_cache("sin", 16, 4), ints("offset", [3])]
    ins = [f32("x", [1, 4, 16]), helper.make_tensor_value_info("pos", TensorProto.INT64, [1, 4])]
    return model(nodes, ins, [f32("y", None), f32("yo", None)], inits,
                 extra_opsets=[helper.make_opsetid(ms, 1)])


def case_attention23(path):
    """Attention-23: GQA 4/2 heads, causal with S != T (upper-left), additive
    and boolean masks, a KV cache with causal, 3-D inputs, scale + softcap."""
    B, HQ, HK, S, T, D = 1, 4, 2, 3, 5, 8
    nodes = [
        helper.make_node("Attention", ["q", "k", "v"], ["causal"], is_causal=1, name="causal"),
        helper.make_node("Attention", ["q", "k", "v", "add"], ["added"], name="additive"),
        helper.make_node("Attention", ["q", "k", "v", "keep"], ["kept"], name="boolean"),
        helper.make_node("Attention", ["q", "kn", "vn", "", "pk", "pv"],
                         ["cached", "present_k", "present_v"], is_causal=1, name="cached"),
        helper.make_node("Attention", ["q3", "k3", "v3"], ["flat"], q_num_heads=HQ,
                         kv_num_heads=HK, name="three_d"),
        helper.make_node("Attention", ["q", "k", "v"], ["capped"], scale=0.5, softcap=2.0,
                         is_causal=1, name="softcap"),
    ]
    keep = RNG.random((S, T)) < 0.7
    keep[:, 0] = True
    inits = [numpy_helper.from_array(RNG.standard_normal((S, T)).astype(np.float32), "add"),
             numpy_helper.from_array(keep, "keep")]
    ins = [f32("q", [B, HQ, S, D]), f32("k", [B, HK, T, D]), f32("v", [B, HK, T, D]),
           f32("kn", [B, HK, S, D]), f32("vn", [B, HK, S, D]), f32("pk", [B, HK, 2, D]),
           f32("pv", [B, HK, 2, D]), f32("q3", [B, S, HQ * D]), f32("k3", [B, T, HK * D]),
           f32("v3", [B, T, HK * D])]
    outs = [f32(n, None) for n in ("causal", "added", "kept", "cached", "present_k",
                                   "present_v", "flat", "capped")]
    return model(nodes, ins, outs, inits, opset=23)


def case_mha(path):
    """com.microsoft MultiHeadAttention: plain, causal, key padding mask with
    attention bias, packed q/k/v bias, and a KV cache with causal."""
    ms = "com.microsoft"
    B, H, S, D = 1, 2, 3, 4

    def mha(ins, outs, name, **attrs):
        return helper.make_node("MultiHeadAttention", ins, outs, domain=ms, num_heads=H,
                                name=name, **attrs)

    nodes = [
        mha(["q", "k", "v"], ["plain", "plain_k", "plain_v"], "plain"),
        mha(["q", "k", "v"], ["causal"], "causal", unidirectional=1),
        mha(["q", "k", "v", "", "kpm", "abias"], ["masked"], "masked"),
        mha(["q", "k", "v", "qkv_bias"], ["biased"], "biased", scale=0.3),
        mha(["q", "k", "v", "", "", "", "pk", "pv"], ["cached", "present_k", "present_v"],
            "cached", unidirectional=1),
    ]
    inits = [numpy_helper.from_array(np.array([[1, 1, 0]], np.int32), "kpm"),
             numpy_helper.from_array(RNG.standard_normal((1, H, S, S)).astype(np.float32),
                                     "abias"),
             numpy_helper.from_array(RNG.standard_normal(3 * H * D).astype(np.float32),
                                     "qkv_bias")]
    ins = [f32("q", [B, S, H * D]), f32("k", [B, S, H * D]), f32("v", [B, S, H * D]),
           f32("pk", [B, H, 2, D]), f32("pv", [B, H, 2, D])]
    outs = [f32(n, None) for n in ("plain", "causal", "masked", "biased", "cached",
                                   "present_k", "present_v")]
    return model(nodes, ins, outs, inits, extra_opsets=[helper.make_opsetid(ms, 1)])


def case_ms_attention(path):
    """com.microsoft Attention (the fused op of onnxruntime's transformer
    optimizer): packed q | k | v weights and bias, each mask_index format
    ([batch, total] and [batch, seq, total] raw masks, [batch] end positions,
    [2 * batch] end and start positions), unidirectional after a stacked
    past with its present, and qkv_hidden_sizes with a wider v, a scale and
    an attention bias."""
    ms = "com.microsoft"
    B, H, S, P, HID = 2, 2, 3, 2, 8

    def attn(ins, outs, name, **attrs):
        return helper.make_node("Attention", ins, outs, domain=ms, num_heads=H, name=name,
                                **attrs)

    nodes = [
        attn(["x", "w", "b", "raw2"], ["raw"], "raw"),
        attn(["x", "w", "b", "raw3"], ["per_query"], "per_query", mask_filter_value=-1e4),
        attn(["x", "w", "b", "ends"], ["ended"], "ended"),
        attn(["x", "w", "b", "ends_starts"], ["windowed"], "windowed"),
        attn(["x", "w", "b", "", "past"], ["cached", "present"], "cached", unidirectional=1),
        attn(["x", "w_wide", "b_wide", "", "", "abias"], ["wide"], "wide",
             qkv_hidden_sizes=[HID, HID, 12], scale=0.3),
    ]
    inits = [weight("w", HID, 3 * HID), weight("b", 3 * HID),
             weight("w_wide", HID, 2 * HID + 12), weight("b_wide", 2 * HID + 12),
             numpy_helper.from_array(np.array([[1, 1, 1], [1, 1, 0]], np.int32), "raw2"),
             numpy_helper.from_array(
                 np.array([[[1, 0, 0], [1, 1, 0], [1, 1, 1]],
                           [[1, 1, 0], [0, 1, 0], [1, 0, 1]]], np.int32), "raw3"),
             numpy_helper.from_array(np.array([3, 2], np.int32), "ends"),
             numpy_helper.from_array(np.array([3, 2, 1, 0], np.int32), "ends_starts"),
             numpy_helper.from_array(RNG.standard_normal((1, H, S, S)).astype(np.float32),
                                     "abias")]
    ins = [f32("x", [B, S, HID]), f32("past", [2, B, H, P, HID // H])]
    outs = [f32(n, None) for n in ("raw", "per_query", "ended", "windowed", "cached",
                                   "present", "wide")]
    return model(nodes, ins, outs, inits, extra_opsets=[helper.make_opsetid(ms, 1)])


def i32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int32), name)


def gqa(ins, outs, name, heads=4, kv_heads=2, **attrs):
    return helper.make_node("GroupQueryAttention", ins, outs, domain="com.microsoft",
                            num_heads=heads, kv_num_heads=kv_heads, name=name, **attrs)


def case_gqa(path):
    """com.microsoft GroupQueryAttention (4 query heads over 2 KV heads,
    head_dim 16, batch 2): a prompt, packed q | k | v, a decode step after a
    KV cache with presents (onnxruntime takes several new tokens after a past
    only at batch 1), the same with do_rotary (at position past), softcap and
    scale, and a prompt whose second row is right-padded (seqlens_k 1 of 3:
    only its first two keys are attended; its padded query row is not an
    output here, the first query rows of both rows are). Then rows with
    different amounts of history, as onnxruntime lays them out: a decode step
    whose second row has one valid past token fewer (its new token goes to
    position seqlens_k = past - 1), and a 3-token chunk at batch 1 after a
    past with one invalid slot at its end. Their presents beyond seqlens_k
    are unspecified, so only the outputs are compared."""
    B, S, P, D = 2, 3, 2, 16  # onnxruntime's rotary needs head_dim % 16 == 0
    nodes = [
        gqa(["q", "k", "v", "", "", "lens", "total"], ["plain", "plain_k", "plain_v"], "plain"),
        gqa(["qkv", "", "", "", "", "lens", "total"], ["packed", "packed_k", "packed_v"], "packed"),
        gqa(["q1", "k1", "v1", "pk", "pv", "lens_1", "total_1"], ["cached", "present_k",
                                                              "present_v"], "cached"),
        gqa(["q1", "k1", "v1", "pk", "pv", "lens_1", "total_1", "cos", "sin"],
            ["rotated", "rotated_k", "rotated_v"],
            "rotated", do_rotary=1, softcap=2.0, scale=0.4),
        gqa(["q", "k", "v", "", "", "lens_pad", "total"], ["padded_full", "padded_full_k", "padded_full_v"], "padded"),
        helper.make_node("Slice", ["padded_full", "zero", "one", "one"], ["padded"],
                         name="first_query"),
        gqa(["q1", "k1", "v1", "pk", "pv", "lens_ragged", "total_1"],
            ["ragged", "ragged_k", "ragged_v"], "ragged"),
        gqa(["qc", "kc", "vc", "pkc", "pvc", "lens_chunk", "total_c"],
            ["chunk", "chunk_k", "chunk_v"], "chunk"),
    ]
    inits = [i32("lens", [S - 1] * B), i32("total", S), i32("lens_1", [P] * B),
             i32("total_1", P + 1),
             i32("lens_pad", [S - 1, 1]), i32("lens_ragged", [P, P - 1]),
             i32("lens_chunk", [P + S - 2]), i32("total_c", P + S), rope_cache("cos", 8, D // 2),
             rope_cache("sin", 8, D // 2), ints("zero", [0]), ints("one", [1])]
    ins = [f32("q", [B, S, 4 * D]), f32("k", [B, S, 2 * D]), f32("v", [B, S, 2 * D]),
           f32("qkv", [B, S, 8 * D]), f32("pk", [B, 2, P, D]), f32("pv", [B, 2, P, D]),
           f32("q1", [B, 1, 4 * D]), f32("k1", [B, 1, 2 * D]), f32("v1", [B, 1, 2 * D]),
           f32("qc", [1, S, 4 * D]), f32("kc", [1, S, 2 * D]), f32("vc", [1, S, 2 * D]),
           f32("pkc", [1, 2, P, D]), f32("pvc", [1, 2, P, D])]
    outs = [f32(n, None) for n in ("plain", "packed", "cached", "present_k", "present_v",
                                   "rotated", "padded", "ragged", "chunk")]
    return model(nodes, ins, outs, inits, extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_gqa_sinks(path):
    """GroupQueryAttention with head_sink (onnxruntime-genai's gpt-oss: one
    score per head in each softmax's denominator): a prompt, a decode step
    after a KV cache, and a rotated, soft-capped step whose rows hold
    different amounts of history."""
    B, S, P, D = 2, 3, 2, 16
    nodes = [
        gqa(["q", "k", "v", "", "", "lens", "total", "", "", "", "", "sinks"],
            ["plain", "plain_k", "plain_v"], "plain"),
        gqa(["q1", "k1", "v1", "pk", "pv", "lens_1", "total_1", "", "", "", "", "sinks"],
            ["cached", "present_k", "present_v"], "cached"),
        gqa(["q1", "k1", "v1", "pk", "pv", "lens_ragged", "total_1", "cos", "sin", "", "",
             "sinks"], ["rotated", "rotated_k", "rotated_v"], "rotated", do_rotary=1,
            softcap=2.0),
    ]
    inits = [i32("lens", [S - 1] * B), i32("total", S), i32("lens_1", [P] * B),
             i32("total_1", P + 1), i32("lens_ragged", [P, P - 1]), rope_cache("cos", 8, D // 2),
             rope_cache("sin", 8, D // 2),
             numpy_helper.from_array(np.array([0.5, -1.0, 2.0, 0.0], np.float32), "sinks")]
    ins = [f32("q", [B, S, 4 * D]), f32("k", [B, S, 2 * D]), f32("v", [B, S, 2 * D]),
           f32("pk", [B, 2, P, D]), f32("pv", [B, 2, P, D]),
           f32("q1", [B, 1, 4 * D]), f32("k1", [B, 1, 2 * D]), f32("v1", [B, 1, 2 * D])]
    outs = [f32(n, None) for n in ("plain", "cached", "present_k", "rotated")]
    return model(nodes, ins, outs, inits, extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_quantized(path):
    """Static quantization's QOperator form, which meshc does not import: a
    QLinearMatMul of two quantized operands (integer kernels)."""
    inits = [numpy_helper.from_array(np.ones((), np.float32), "s"),
             numpy_helper.from_array(np.zeros((), np.uint8), "z"),
             numpy_helper.from_array(np.ones((16, 4), np.uint8), "w")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="quantize"),
             helper.make_node("QLinearMatMul", ["xq", "s", "z", "w", "s", "z", "s", "z"], ["yq"],
                              name="proj_q8"),
             helper.make_node("DequantizeLinear", ["yq", "s", "z"], ["y"], name="dequantize")]
    return model(nodes, [f32("x", [1, 16])], [f32("y", None)], inits)


def case_static_quantized(path):
    """Static quantization's QDQ form, as onnxruntime's quantize_static
    writes it: activations quantized by a fixed scale and zero point
    (QuantizeLinear to UINT8 and to INT8, both held in raw data) and
    dequantized; an 8-bit weight and an INT32 bias (its zero point an INT32
    literal) dequantized per tensor; a 1-D weight (a norm's) and a scalar (a
    constant of the graph) dequantized."""
    rng = np.random.default_rng(14)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quantize_u8"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dequantize_u8"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="weight"),
        helper.make_node("MatMul", ["xd", "wd"], ["p"], name="product"),
        helper.make_node("DequantizeLinear", ["b", "bs", "bz"], ["bd"], name="bias"),
        helper.make_node("Add", ["p", "bd"], ["y"], name="biased"),
        helper.make_node("QuantizeLinear", ["x", "xs", "sz"], ["sq"], name="quantize_s8"),
        helper.make_node("DequantizeLinear", ["sq", "xs", "sz"], ["y2"], name="dequantize_s8"),
        helper.make_node("DequantizeLinear", ["g", "gs"], ["gd"], name="norm_weight"),
        helper.make_node("DequantizeLinear", ["c", "cs", "cz"], ["cd"], name="constant"),
        helper.make_node("Mul", ["x", "gd"], ["xg"], name="scaled"),
        helper.make_node("Add", ["xg", "cd"], ["y3"], name="shifted"),
    ]
    inits = [
        numpy_helper.from_array(np.array(0.03, np.float32), "xs"),
        numpy_helper.from_array(np.array(131, np.uint8), "xz"),
        numpy_helper.from_array(np.array(-3, np.int8), "sz"),
        numpy_helper.from_array(rng.integers(-127, 128, (8, 6)).astype(np.int8), "w"),
        numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
        numpy_helper.from_array(np.array(0, np.int8), "wz"),
        numpy_helper.from_array(rng.integers(-500, 500, 6).astype(np.int32), "b"),
        numpy_helper.from_array(np.array(0.0006, np.float32), "bs"),
        numpy_helper.from_array(np.array(0, np.int32), "bz"),
        numpy_helper.from_array(rng.integers(-127, 128, 8).astype(np.int8), "g"),
        numpy_helper.from_array(np.array(0.01, np.float32), "gs"),
        numpy_helper.from_array(np.array(200, np.uint8), "c"),
        numpy_helper.from_array(np.array(0.005, np.float32), "cs"),
        numpy_helper.from_array(np.array(100, np.uint8), "cz"),
    ]
    outs = [f32("y", None), f32("y2", None), f32("y3", None)]
    return model(nodes, [f32("x", ["batch", "seq", 8])], outs, inits)


def nbits(inputs, inits, **attrs):
    """A MatMulNBits 'proj_q4' (K 32, N 8, 4-bit blocks of 16 unless given)
    of x [1, 32] by the initializers."""
    attrs = dict(dict(K=32, N=8, bits=4, block_size=16), **attrs)
    nodes = [helper.make_node("MatMulNBits", ["x"] + inputs, ["y"], name="proj_q4",
                              domain="com.microsoft", **attrs)]
    return model(nodes, [f32("x", [1, 32])], [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_nbits_shape(path):
    """MatMulNBits whose packed B holds one block per row where K=32 needs two."""
    return nbits(["w_q4", "w_scales"],
                 [numpy_helper.from_array(np.zeros((8, 1, 8), np.uint8), "w_q4"),
                  numpy_helper.from_array(np.ones((8, 2), np.float32), "w_scales")])


def case_nbits_gidx(path):
    """MatMulNBits with g_idx (a column order of its own)."""
    return nbits(["w_q4", "w_scales", "", "g_idx"],
                 [numpy_helper.from_array(np.zeros((8, 2, 8), np.uint8), "w_q4"),
                  numpy_helper.from_array(np.ones((8, 2), np.float32), "w_scales"),
                  numpy_helper.from_array(np.zeros(32, np.int32), "g_idx")])


def case_nbits_float_zero_points(path):
    """MatMulNBits with zero points of the scales' type (not packed integers)."""
    return nbits(["w_q4", "w_scales", "w_zp"],
                 [numpy_helper.from_array(np.zeros((8, 2, 8), np.uint8), "w_q4"),
                  numpy_helper.from_array(np.ones((8, 2), np.float32), "w_scales"),
                  numpy_helper.from_array(np.full((8, 2), 8, np.float32), "w_zp")])


def case_dequantize_activations(path):
    """DequantizeLinear of a computed tensor (int32 activations cast) by a
    scale per element of its axis, which meshc does not import (one scale
    per tensor it does)."""
    nodes = [helper.make_node("Cast", ["x"], ["xi"], name="to_int", to=TensorProto.INT32),
             helper.make_node("DequantizeLinear", ["xi", "s"], ["y"], name="dq", axis=0)]
    return model(nodes, [f32("x", [4])], [f32("y", None)],
                 [numpy_helper.from_array(np.ones((4,), np.float32), "s")])


def case_packed_reader(path):
    """Packed UINT8 integers read by an op other than the quantized ones."""
    q = numpy_helper.from_array(np.zeros((4, 8), np.uint8), "w_q4")
    nodes = [helper.make_node("Cast", ["w_q4"], ["y"], name="widen", to=TensorProto.FLOAT)]
    return model(nodes, [], [f32("y", None)], [q])


def case_gqa_sink_shape(path):
    """GroupQueryAttention with a head_sink that is not one per head."""
    nodes = [gqa(["q", "k", "v", "", "", "lens", "total", "", "", "", "", "sinks"],
                 ["y", "y_k", "y_v"], "sunk")]
    inits = [i32("lens", [2]), i32("total", 3),
             numpy_helper.from_array(np.zeros(3, np.float32), "sinks")]
    ins = [f32("q", [1, 3, 64]), f32("k", [1, 3, 32]), f32("v", [1, 3, 32])]
    return model(nodes, ins, [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_symbolic_idioms(path):
    """Shape arithmetic on symbolic dimensions (dim_params B, S, T), imported
    without sizes: Optimum's expanded attention mask (Unsqueeze, then Expand
    to a Concat of Shape entries passed through Where(Equal(shape, -1), 1,
    shape)), ConstantOfShape of [B, S], the last position x[:, -1:] and Size
    used as data (which stays a dfg.sizes)."""
    nodes = []

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    s = node("Shape", ["x"], "s")
    b = node("Gather", [s, "zero"], "b", axis=0)
    sq = node("Gather", [s, "one"], "sq", axis=0)
    t = node("Gather", [node("Shape", ["mask"], "ms"), "one"], "t", axis=0)
    tgt = node("Concat", [node("Unsqueeze", [b, "ax0"], "bu"), "one1",
                          node("Unsqueeze", [sq, "ax0"], "squ"),
                          node("Unsqueeze", [t, "ax0"], "tu")], "tgt", axis=0)
    ones = node("ConstantOfShape", [node("Shape", [tgt], "ts")], "ones",
                value=numpy_helper.from_array(np.array([1], np.int64)))
    fixed = node("Where", [node("Equal", [tgt, "neg1"], "eq"), ones, tgt], "fixed")
    em = node("Expand", [node("Unsqueeze", ["mask", "ax12"], "m4"), fixed], "em")
    bs = node("Concat", [node("Unsqueeze", [b, "ax0"], "bu2"),
                         node("Unsqueeze", [sq, "ax0"], "squ2")], "bs", axis=0)
    cs = node("ConstantOfShape", [bs], "cs",
              value=numpy_helper.from_array(np.array([2.0], np.float32)))
    y1 = node("Mul", ["x", node("Unsqueeze", [cs, "axm1"], "csu")], "y1")
    red = node("ReduceSum", [node("Cast", [em], "emf", to=TensorProto.FLOAT), "axm1"], "red",
               keepdims=0)
    node("Add", [y1, node("Transpose", [red], "red2", perm=[0, 2, 1])], "y")
    last = node("Slice", ["x", "m1", "big", "one1"], "last")
    node("Mul", [last, node("Cast", [node("Size", ["x"], "size")], "szf",
                                    to=TensorProto.FLOAT)], "z")
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(1, np.int64), "one"),
             ints("ax12", [1, 2]), ints("ax0", [0]), ints("one1", [1]), ints("neg1", [-1]),
             ints("axm1", [-1]), ints("m1", [-1]), ints("big", [2**62])]
    ins = [f32("x", ["B", "S", 8]),
           helper.make_tensor_value_info("mask", TensorProto.INT64, ["B", "T"])]
    return model(nodes, ins, [f32("y", None), f32("z", None)], inits)


# --- Invalid inputs: each must give one diagnostic naming the culprit. ---


def raw(path, data):
    with open(path, "wb") as f:
        f.write(data)


def case_empty(path):
    raw(path, b"")


def case_truncated(path):
    data = case_mlp(path).SerializeToString()
    raw(path, data[: len(data) * 3 // 5])


def case_split_bad_axis(path):
    """Split with explicit sizes along axis 7 of a rank-3 input."""
    return model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=7, name="cut")],
                 [f32("x", [2, 4, 6])], [f32("a", None), f32("b", None)],
                 [ints("sizes", [1, 1])])


def case_split_bad_sizes(path):
    """Split sizes 1 + 5 of a dimension of 2."""
    return model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=0, name="cut")],
                 [f32("x", [2, 4, 6])], [f32("a", None), f32("b", None)],
                 [ints("sizes", [1, 5])])


def case_split_num_outputs(path):
    """Split-18 asking for 2^40 pieces with 2 outputs."""
    return model([helper.make_node("Split", ["x"], ["a", "b"], axis=0, num_outputs=2**40,
                                   name="cut")],
                 [f32("x", [2, 4, 6])], [f32("a", None), f32("b", None)], opset=18)


def case_gather_empty_shape(path):
    """Shape-15 with start 100 (clamped: no dimensions), then Gather of its
    first entry, folded at import."""
    return model([helper.make_node("Shape", ["x"], ["s"], start=100, name="dims"),
                  helper.make_node("Gather", ["s", "zero"], ["d"], axis=0, name="pick"),
                  helper.make_node("Reshape", ["x", "d"], ["y"], name="use")],
                 [f32("x", [2, 4, 6])], [f32("y", None)], [ints("zero", [0])])


# Found by meshc-fuzz-frontend (docs/testing.md), rebuilt small: each was a
# sanitizer report or a crash before its fix.


def case_fuzz_initializer_huge(path):
    """An initializer of dims [2^62, 8] (no data): its byte size overflowed
    int64 before the data was looked at."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2**62, 8], [])
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="use")],
                 [f32("x", [8])], [f32("y", None)], [w])


def case_fuzz_input_huge(path):
    """A graph input of dims [2^40, 2^40]."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="act")],
                 [f32("x", [2**40, 2**40])], [f32("y", None)])


def case_fuzz_gqa_past_rank(path):
    """GroupQueryAttention with a rank-3 past_key: its past length was read
    as dimension 2 before the rank was checked."""
    nodes = [gqa(["q", "k", "v", "pk", "pv", "lens", "total"], ["y", "pk_out", "pv_out"], "gqa")]
    ins = [f32("q", [1, 1, 64]), f32("k", [1, 1, 32]), f32("v", [1, 1, 32]),
           f32("pk", [1, 2, 16]), f32("pv", [1, 2, 16])]
    return model(nodes, ins, [f32("y", None)], [i32("lens", [2]), i32("total", 3)],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_fuzz_mha_heads_overflow(path):
    """MultiHeadAttention with num_heads 2^63 - 1: the head split's element
    count overflowed."""
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain="com.microsoft",
                            num_heads=2**63 - 1, name="mha")
    ins = [f32("q", [1, 3, 8]), f32("k", [1, 3, 8]), f32("v", [1, 3, 8])]
    return model([node], ins, [f32("y", None)],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_fuzz_trilu_bool_k(path):
    """Trilu whose k is a bool initializer: read as int32, past its bytes."""
    k = numpy_helper.from_array(np.ones((4, 4), dtype=bool), "k")
    return model([helper.make_node("Trilu", ["x", "k"], ["y"], name="tri")],
                 [f32("x", [4, 4])], [f32("y", None)], [k])


def case_fuzz_external_offset(path):
    """External data at offset 2^63 - 1 of a 64-byte file: offset + length
    overflowed int64 and the bounds check passed."""
    m = external_at("w.bin")
    m.graph.initializer[0].external_data.add(key="offset", value=str(2**63 - 1))
    with open(os.path.join(os.path.dirname(path), "w.bin"), "wb") as f:
        f.write(bytes(64))
    return m


def case_fuzz_external_folder(path):
    """External data whose location is the model's folder itself."""
    return external_at(".")


def case_fuzz_cast_inf(path):
    """y = x + int64(c) for c = [inf, -inf, 1e30, -2.5]: C++'s conversion of
    the first three is undefined (ONNX leaves their value undefined); meshc's
    reference evaluator saturates, and truncates the last."""
    c = helper.make_tensor("c", TensorProto.FLOAT, [4], [np.inf, -np.inf, 1e30, -2.5])
    nodes = [helper.make_node("Constant", [], ["cf"], value=c, name="big"),
             helper.make_node("Cast", ["cf"], ["ci"], to=TensorProto.INT64, name="to_int"),
             helper.make_node("Add", ["x", "ci"], ["y"], name="use")]
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.INT64, [4])],
                 [helper.make_tensor_value_info("y", TensorProto.INT64, [4])])


def case_fuzz_gemm_int_nan_alpha(path):
    """An int64 Gemm with alpha NaN: the scale was converted to int64 (undefined
    in C++)."""
    i64 = lambda n, s: helper.make_tensor_value_info(n, TensorProto.INT64, s)
    return model([helper.make_node("Gemm", ["a", "b"], ["y"], alpha=float("nan"), name="gemm")],
                 [i64("a", [2, 3]), i64("b", [3, 4])], [i64("y", None)])


def case_fuzz_mask_index_symbolic_batch(path):
    """com.microsoft Attention over a symbolic batch with a 1-D mask_index of
    64: 2 * batch overflowed (a symbolic batch is INT64_MIN inside)."""
    node = helper.make_node("Attention", ["x", "w", "b", "mask"], ["y"], domain="com.microsoft",
                            num_heads=2, name="attn")
    inits = [weight("w", 8, 24), weight("b", 24),
             numpy_helper.from_array(np.ones(64, np.int32), "mask")]
    return model([node], [f32("x", ["batch", 3, 8])], [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_fuzz_split18_too_many(path):
    """Split-18 of a dimension of 2 into 4 outputs: pieces of ceil(2 / 4) = 1
    left -1 for the last, which reached SplitOp's result-type inference
    (a fatal error)."""
    outs = ["a", "b", "c", "d"]
    return model([helper.make_node("Split", ["x"], outs, axis=0, num_outputs=4, name="qkv")],
                 [f32("x", [2, 4, 6])], [f32(o, None) for o in outs], opset=18)


def case_fuzz_rotary_offset_huge(path):
    """com.microsoft RotaryEmbedding with an offset position_ids over an input
    of 2^20 x 2^20 tokens: the table of positions it built took 7.5 GB."""
    half = 2
    node = helper.make_node("RotaryEmbedding", ["x", "offset", "cos", "sin"], ["y"],
                            domain="com.microsoft", name="rope")
    inits = [numpy_helper.from_array(np.array([0], np.int64), "offset"),
             weight("cos", 16, half), weight("sin", 16, half)]
    return model([node], [f32("x", [2**20, 2**20, 8])], [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_fuzz_gqa_static_huge(path):
    """A static GroupQueryAttention over 2^13 new of 2^13 + 2^13 tokens: its
    masks' constant position tables (seq x total) would hold 2^27 entries."""
    n = 2**13
    nodes = [gqa(["q", "k", "v", "pk", "pv", "lens", "total"], ["y", "pk_out", "pv_out"], "gqa")]
    ins = [f32("q", [1, n, 64]), f32("k", [1, n, 32]), f32("v", [1, n, 32]),
           f32("pk", [1, 2, n, 16]), f32("pv", [1, 2, n, 16])]
    return model(nodes, ins, [f32("y", None)], [i32("lens", [2 * n - 1]), i32("total", 2 * n)],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_fuzz_slice_extreme_steps(path):
    """Slices of an [8] input with step 2^63 - 1 (from 0) and -2^63 (from the
    last element): one element each. ceil(8 / step) overflowed."""
    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "a0", "up"], ["y"], name="up"),
             helper.make_node("Slice", ["x", "s1", "e1", "a0", "down"], ["z"], name="down")]
    inits = [ints("s0", [0]), ints("e0", [8]), ints("a0", [0]), ints("up", [2**63 - 1]),
             ints("s1", [-1]), ints("e1", [-2**63]), ints("down", [-2**63])]
    return model(nodes, [f32("x", [8])], [f32("y", None), f32("z", None)], inits)


def case_fuzz_slice_empty_reverse(path):
    """A reversed Slice of an empty dimension: it took one element."""
    node = helper.make_node("Slice", ["x", "s", "e", "a", "down"], ["y"], name="down")
    inits = [ints("s", [-1]), ints("e", [-2**63]), ints("a", [0]), ints("down", [-1])]
    return model([node], [f32("x", [0, 3])], [f32("y", None)], inits)


def case_fuzz_rotary_offset_overflow(path):
    """com.microsoft RotaryEmbedding whose offset position_ids is 2^63 - 1024
    over 2048 tokens: its table's positions overflowed int64."""
    node = helper.make_node("RotaryEmbedding", ["x", "offset", "cos", "sin"], ["y"],
                            domain="com.microsoft", name="rope")
    inits = [numpy_helper.from_array(np.array([2**63 - 1024], np.int64), "offset"),
             weight("cos", 16, 2), weight("sin", 16, 2)]
    return model([node], [f32("x", [1, 2048, 8])], [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def float_range(limit):
    """A Range of f32 scalars from 0 to `limit` by 1, as a literal."""
    scalar = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)  # noqa: E731
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="span")
    return model([node], [], [f32("y", None)],
                 [scalar("start", 0.0), scalar("limit", limit), scalar("delta", 1.0)])


def case_fuzz_range_past_int64(path):
    """A float Range of 1e19 elements: its count was converted to int64 for
    the message, past int64's range."""
    return float_range(1e19)


def case_fuzz_range_nan(path):
    """A float Range up to NaN: its count was NaN, converted to int64."""
    return float_range(float("nan"))


def case_garbage(path):
    raw(path, b"\xff" * 64)


def case_external_constants(path):
    """Constant nodes whose values are external data, as exporters save a
    model over 2 GB (onnx's convert_attribute): a table too large for a
    literal (a weight in the file) and a small one (read at import); the
    Reshape's shape stays in the model, as onnxruntime's shape inference
    cannot read it from the file."""
    def constant(name, array):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(array, name))
    nodes = [
        constant("big", RNG.standard_normal((280, 256)).astype(np.float32)),
        constant("small", RNG.standard_normal((1, 256)).astype(np.float32)),
        constant("shape", np.array([2, -1], np.int64)),
        helper.make_node("Add", ["x", "big"], ["h"], name="add"),
        helper.make_node("Mul", ["h", "small"], ["hs"], name="mul"),
        helper.make_node("Reshape", ["hs", "shape"], ["y"], name="flatten"),
    ]
    m = model(nodes, [f32("x", [2, 280, 256])], [f32("y", None)])
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx_data", size_threshold=100, convert_attribute=True)
    return None


def case_missing_external(path):
    case_external(path)
    os.remove(os.path.join(os.path.dirname(path), "weights.bin"))


def case_missing_external_constant(path):
    case_external_constants(path)
    os.remove(os.path.join(os.path.dirname(path), "model.onnx_data"))


def case_external_short(path):
    case_external(path)
    with open(os.path.join(os.path.dirname(path), "weights.bin"), "r+b") as f:
        f.truncate(1000)


def external_at(location):
    t = helper.make_tensor("w", TensorProto.FLOAT, [4], vals=[])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=location)
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return model([node], [f32("x", [4])], [f32("y", [4])], [t])


def case_external_dotdot(path):
    return external_at("../w.bin")


def case_external_absolute(path):
    return external_at("/etc/passwd")


def case_unknown_op(path):
    node = helper.make_node("FancyOp", ["x"], ["y"], name="fancy")
    return model([node], [f32("x", [4])], [f32("y", [4])])


def case_unknown_domain(path):
    node = helper.make_node("Gelu", ["x"], ["y"], name="g", domain="com.example")
    return model([node], [f32("x", [4])], [f32("y", [4])])


def case_old_opset(path):
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    return model([node], [f32("x", [4])], [f32("y", [4])], opset=11)


def case_type_mismatch(path):
    node = helper.make_node("Add", ["x", "h"], ["y"], name="mixed_add")
    h = helper.make_tensor_value_info("h", TensorProto.FLOAT16, [4])
    return model([node], [f32("x", [4]), h], [f32("y", [4])])


def case_shape_mismatch(path):
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="proj")
    return model([node], [f32("x", [2, 3])], [f32("y", None)], [weight("w", 4, 5)])


def case_cycle(path):
    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="first"),
        helper.make_node("Add", ["a", "x"], ["b"], name="second"),
    ]
    return model(nodes, [f32("x", [4])], [f32("a", [4])])


def case_missing_input(path):
    node = helper.make_node("Add", ["x", "nothere"], ["y"], name="add")
    return model([node], [f32("x", [4])], [f32("y", [4])])


def case_double_input(path):
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [4])
    return model([node], [x], [x])


def case_no_shape(path):
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, None)
    return model([node], [x], [f32("y", None)])


def case_gqa_shared_buffer(path):
    """GroupQueryAttention with a past buffer as long as the total sequence
    (onnxruntime's shared past / present buffer)."""
    nodes = [gqa(["q", "k", "v", "pk", "pv", "lens", "total"], ["y", "y_k", "y_v"], "shared")]
    inits = [i32("lens", [4]), i32("total", 5)]
    ins = [f32("q", [1, 1, 32]), f32("k", [1, 1, 16]), f32("v", [1, 1, 16]),
           f32("pk", [1, 2, 5, 8]), f32("pv", [1, 2, 5, 8])]
    return model(nodes, ins, [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_gqa_window(path):
    """GroupQueryAttention with a sliding window of a size that means nothing
    (-1 is no window, 0 and above a window)."""
    nodes = [gqa(["q", "k", "v", "", "", "lens", "total"], ["y", "y_k", "y_v"], "window",
                 local_window_size=-2)]
    ins = [f32("q", [1, 3, 32]), f32("k", [1, 3, 16]), f32("v", [1, 3, 16])]
    return model(nodes, ins, [f32("y", None)], [i32("lens", [2]), i32("total", 3)],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_ms_attention_shared(path):
    """com.microsoft Attention with onnxruntime's shared past/present
    buffer, which meshc refuses."""
    node = helper.make_node("Attention", ["x", "w", "", "", "past", "", "len"], ["y", "p"],
                            domain="com.microsoft", num_heads=2, name="shared",
                            past_present_share_buffer=1)
    return model([node], [f32("x", [1, 1, 8]), f32("past", [2, 1, 2, 4, 4])],
                 [f32("y", None), f32("p", None)],
                 [weight("w", 8, 24), numpy_helper.from_array(np.array(2, np.int32), "len")],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_ms_attention_mask4d(path):
    """com.microsoft Attention with a 4-D (Megatron) mask_index."""
    node = helper.make_node("Attention", ["x", "w", "", "m"], ["y"], domain="com.microsoft",
                            num_heads=2, name="megatron")
    mask = numpy_helper.from_array(np.ones((1, 1, 4, 4), np.int32), "m")
    return model([node], [f32("x", [1, 3, 8])], [f32("y", None)], [weight("w", 8, 24), mask],
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_dropout_mask_used(path):
    nodes = [
        helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop"),
        helper.make_node("Identity", ["mask"], ["m"], name="id"),
    ]
    m = helper.make_tensor_value_info("m", TensorProto.BOOL, [4])
    return model(nodes, [f32("x", [4])], [f32("y", [4]), m])


def case_computed_shape(path):
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    return model([node], [f32("x", [4]), s], [f32("y", None)])


def case_reshape_allowzero(path):
    node = helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1, name="rz")
    return model([node], [f32("x", [4])], [f32("y", None)], [ints("s", [0, 4])], opset=14)


def case_empty_variadic_input(path):
    node = helper.make_node("Concat", ["x", ""], ["y"], axis=0, name="cat")
    return model([node], [f32("x", [4])], [f32("y", None)])


def case_mistyped_attribute(path):
    node = helper.make_node("Concat", ["x", "x"], ["y"], name="cat")
    node.attribute.append(helper.make_attribute("axis", 1.0))
    return model([node], [f32("x", [2, 4])], [f32("y", None)])


def case_negative_dim(path):
    node = helper.make_node("Identity", ["x"], ["y"], name="id")
    return model([node], [f32("x", [2, -3])], [f32("y", None)])


INT64_MAX = np.iinfo(np.int64).max


def case_int64_max_ends(path):
    """Slice ends of INT64_MAX ("to the end"), as exporters write them."""
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"], name="tail")
    inits = [ints("starts", [1]), ints("ends", [INT64_MAX]), ints("axes", [0])]
    return model([node], [f32("x", [4, 3])], [f32("y", None)], inits)


def case_int64_max_chain(path):
    """INT64_MAX passing through Unsqueeze before it reaches Slice."""
    nodes = [helper.make_node("Unsqueeze", ["end", "axes"], ["ends"], name="unsq"),
             helper.make_node("Slice", ["x", "axes", "ends", "axes"], ["y"], name="tail")]
    inits = [ints("end", INT64_MAX), ints("axes", [0])]
    return model(nodes, [f32("x", [4, 3])], [f32("y", None)], inits)


def case_max_of_sizes(path):
    """MPT's ALiBi slice: the bias' last max(0, 8 - seq) .. end columns, seq
    read from the mask's shape: a start computed from a symbolic size, but
    not as an affine expression of it."""
    nodes = [
        helper.make_node("Shape", ["mask"], ["dims"], start=1, end=2, name="seq"),
        helper.make_node("Sub", ["eight", "dims"], ["rest"], name="rest"),
        helper.make_node("Max", ["rest", "zero"], ["start"], name="clamp"),
        helper.make_node("Slice", ["bias", "start", "end", "axes"], ["y"], name="alibi"),
    ]
    inits = [ints("eight", [8]), ints("zero", [0]), ints("end", [INT64_MAX]),
             ints("axes", [3]),
             numpy_helper.from_array(np.zeros((1, 2, 1, 8), np.float32), "bias")]
    ins = [helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"])]
    return model(nodes, ins, [f32("y", None)], inits)


def case_conv_channels(path):
    """Optimum's vision exports name the pixels' channels (num_channels): the
    patch embedding's weight says there are 3. Height and width are static
    here; conv_image_size leaves them symbolic."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[4, 4], strides=[4, 4],
                            name="patches")
    ins = [f32("x", ["batch_size", "num_channels", 8, 8])]
    return model([node], ins, [f32("y", None)], [weight("w", 4, 3, 4, 4)])


def case_max_of_two_sizes(path):
    """A slice start max(0, past - seq): its order flips along a line of two
    sizes, which no bound of one decides."""
    nodes = [
        helper.make_node("Shape", ["mask"], ["seq"], start=1, end=2, name="seq"),
        helper.make_node("Shape", ["past"], ["plen"], start=1, end=2, name="plen"),
        helper.make_node("Sub", ["plen", "seq"], ["rest"], name="rest"),
        helper.make_node("Max", ["rest", "zero"], ["start"], name="clamp"),
        helper.make_node("Slice", ["bias", "start", "end", "axes"], ["y"], name="alibi"),
    ]
    inits = [ints("zero", [0]), ints("end", [INT64_MAX]), ints("axes", [3]),
             numpy_helper.from_array(np.zeros((1, 2, 1, 8), np.float32), "bias")]
    ins = [helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", "seq"]),
           helper.make_tensor_value_info("past", TensorProto.INT64, ["batch", "past"])]
    return model(nodes, ins, [f32("y", None)], inits)


def case_dynamic_quantized(path):
    """onnxruntime's quantize_dynamic forms: activations quantized at run time
    (DynamicQuantizeLinear) read by MatMulInteger over an 8-bit weight, signed
    with one zero point held as a value (int32_data, as onnx.helper writes a
    scalar) and unsigned with one per column in raw data; the integer product
    cast to float and scaled. An embedding table of 8-bit rows gathered, then
    DequantizeLinear by one scale and zero point held as values."""
    rng = np.random.default_rng(11)
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="quantize"),
        helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["p"], name="int_matmul"),
        helper.make_node("Cast", ["p"], ["pf"], to=TensorProto.FLOAT, name="to_float"),
        helper.make_node("Mul", ["xs", "ws"], ["s"], name="scales"),
        helper.make_node("Mul", ["pf", "s"], ["y"], name="scaled"),
        helper.make_node("MatMulInteger", ["xq", "w2", "xz", "w2z"], ["p2"], name="int_matmul_columns"),
        helper.make_node("Cast", ["p2"], ["p2f"], to=TensorProto.FLOAT, name="to_float2"),
        helper.make_node("Mul", ["p2f", "xs"], ["y2"], name="scaled2"),
        helper.make_node("Gather", ["table", "ids"], ["rows"], name="lookup"),
        helper.make_node("DequantizeLinear", ["rows", "ts", "tz"], ["emb"], name="dequantize_rows"),
    ]
    inits = [
        numpy_helper.from_array(rng.integers(-127, 128, (8, 6)).astype(np.int8), "w"),
        helper.make_tensor("wz", TensorProto.INT8, [], [3]),
        helper.make_tensor("ws", TensorProto.FLOAT, [], [0.02]),
        numpy_helper.from_array(rng.integers(0, 256, (8, 3)).astype(np.uint8), "w2"),
        numpy_helper.from_array(np.array([120, 128, 131], np.uint8), "w2z"),
        numpy_helper.from_array(rng.integers(0, 256, (4, 5)).astype(np.uint8), "table"),
        helper.make_tensor("ts", TensorProto.FLOAT, [], [0.05]),
        helper.make_tensor("tz", TensorProto.UINT8, [], [127]),
    ]
    ins = [f32("x", ["batch", "seq", 8]),
           helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])]
    outs = [f32("y", None), f32("y2", None), f32("emb", None)]
    return model(nodes, ins, outs, inits)


def case_bnb4(path):
    """onnxruntime's MatMulBnb4 (as its MatMulBnb4Quantizer writes it):
    FP4 codes of a [N=6, K=10] weight in blocks of 16 that run across its
    rows (N * K = 60: a last block of 12), and NF4 codes of a [4, 8] weight
    in blocks of 32 (onnxruntime's least but 16); each code, two to a byte with the first in the high
    bits, times its block's absmax."""
    rng = np.random.default_rng(13)
    ms = helper.make_opsetid("com.microsoft", 1)
    nodes = [
        helper.make_node("MatMulBnb4", ["x", "fp4", "fp4_absmax"], ["y"], K=10, N=6,
                         block_size=16, quant_type=0, name="fp4_proj", domain="com.microsoft"),
        helper.make_node("MatMulBnb4", ["x2", "nf4", "nf4_absmax"], ["y2"], K=8, N=4,
                         block_size=32, quant_type=1, name="nf4_proj", domain="com.microsoft"),
    ]
    inits = [
        numpy_helper.from_array(rng.integers(0, 256, 30).astype(np.uint8), "fp4"),
        numpy_helper.from_array((rng.random(4) + 0.5).astype(np.float32), "fp4_absmax"),
        numpy_helper.from_array(rng.integers(0, 256, 16).astype(np.uint8), "nf4"),
        numpy_helper.from_array((rng.random(1) + 0.5).astype(np.float32), "nf4_absmax"),
    ]
    ins = [f32("x", ["batch", "seq", 10]), f32("x2", ["batch", 8])]
    return model(nodes, ins, [f32("y", None), f32("y2", None)], inits, extra_opsets=[ms])


def bnb4_node(codes, quant_type):
    """MatMulBnb4 'proj_bnb4' of x [2, 8] (K 8, N 4, blocks of 16) by `codes`
    bytes and two absmax values."""
    nodes = [helper.make_node("MatMulBnb4", ["x", "codes", "absmax"], ["y"], K=8, N=4,
                              block_size=16, quant_type=quant_type, name="proj_bnb4",
                              domain="com.microsoft")]
    inits = [numpy_helper.from_array(np.zeros(codes, np.uint8), "codes"),
             numpy_helper.from_array(np.ones(2, np.float32), "absmax")]
    return model(nodes, [f32("x", [2, 8])], [f32("y", None)], inits,
                 extra_opsets=[helper.make_opsetid("com.microsoft", 1)])


def case_bnb4_quant_type(path):
    """MatMulBnb4 with a quant_type onnxruntime does not define (2)."""
    return bnb4_node(16, 2)


def case_bnb4_short(path):
    """MatMulBnb4 whose B is a byte short of its N * K codes."""
    return bnb4_node(15, 1)


def case_ort_fused_quantized(path):
    """onnxruntime's fused forms, as its extended optimisation saves a
    quantize_dynamic model: DynamicQuantizeMatMul over a signed weight with a
    scale per column and a bias; MatMulIntegerToFloat over the activations
    DynamicQuantizeLinear gives, an unsigned weight with one scale and zero
    point held as values; FusedMatMul with transB and alpha."""
    rng = np.random.default_rng(12)
    ms = helper.make_opsetid("com.microsoft", 1)
    nodes = [
        helper.make_node("DynamicQuantizeMatMul", ["x", "w", "ws", "", "bias"], ["y"],
                         name="dqmm", domain="com.microsoft"),
        helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="quantize"),
        helper.make_node("MatMulIntegerToFloat", ["xq", "w2", "xs", "w2s", "xz", "w2z"], ["y2"],
                         name="mitf", domain="com.microsoft"),
        helper.make_node("FusedMatMul", ["x", "x"], ["y3"], transB=1, alpha=0.25,
                         name="fused", domain="com.microsoft"),
    ]
    inits = [
        numpy_helper.from_array(rng.integers(-127, 128, (8, 6)).astype(np.int8), "w"),
        numpy_helper.from_array((rng.random(6) * 0.05).astype(np.float32), "ws"),
        numpy_helper.from_array(rng.standard_normal(6).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.integers(0, 256, (8, 3)).astype(np.uint8), "w2"),
        helper.make_tensor("w2s", TensorProto.FLOAT, [], [0.03]),
        helper.make_tensor("w2z", TensorProto.UINT8, [], [125]),
    ]
    outs = [f32("y", None), f32("y2", None), f32("y3", None)]
    return model(nodes, [f32("x", ["batch", "seq", 8])], outs, inits, extra_opsets=[ms])


def case_float_size_arithmetic(path):
    """A size computed in floats, as MobileViT writes
    int(math.ceil(width / patch) * patch): Cast to float, Div, Ceil (and a
    Floor), Mul, Cast back; its rows of x padded up to that many (Pad) and
    folded into patches of 4 (Reshape)."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["width"], axis=0, name="width"),
        helper.make_node("Cast", ["width"], ["wf"], to=TensorProto.FLOAT, name="to_float"),
        helper.make_node("Div", ["wf", "four"], ["q"], name="div"),
        helper.make_node("Ceil", ["q"], ["c"], name="ceil"),
        helper.make_node("Mul", ["c", "four"], ["padded_f"], name="mul"),
        helper.make_node("Cast", ["padded_f"], ["padded"], to=TensorProto.INT64, name="to_int"),
        helper.make_node("Sub", ["padded", "width"], ["extra"], name="extra"),
        helper.make_node("Concat", ["zeros3", "extra"], ["pads"], axis=0, name="pads"),
        helper.make_node("Pad", ["x", "pads"], ["xp"], name="pad"),
        helper.make_node("Floor", ["q"], ["f"], name="floor"),
        helper.make_node("Cast", ["f"], ["whole"], to=TensorProto.INT64, name="whole"),
        helper.make_node("Concat", ["batch_and_minus1", "four_i"], ["fold"], axis=0, name="fold_shape"),
        helper.make_node("Reshape", ["xp", "fold"], ["patches"], name="fold"),
        helper.make_node("ConstantOfShape", ["whole"], ["ones"],
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]), name="ones"),
    ]
    inits = [ints("one", [1]), numpy_helper.from_array(np.array(4.0, np.float32), "four"),
             ints("zeros3", [0, 0, 0]), ints("batch_and_minus1", [0, -1]), ints("four_i", [4])]
    return model(nodes, [f32("x", ["batch", "width"])], [f32("patches", None), f32("ones", None)],
                 inits)


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit("usage: make_onnx.py {%s} OUT.onnx" % "|".join(sorted(CASES)))
    path = sys.argv[2]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    m = CASES[sys.argv[1]](path)
    if m is not None:
        onnx.save_model(m, path)


if __name__ == "__main__":
    main()
