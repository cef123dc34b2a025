#!/usr/bin/env python3
"""Writes a small model of onnxruntime's weight-only quantized ops, its
inputs and float64 outputs, for meshc's tests.

Usage: models/quantized.py --out DIR [--bits-last 2|4|8] [--no-zero-points]

The graph: ids [batch, seq] -> GatherBlockQuantized (a 4-bit embedding table
[16, 40] in blocks of 16 along its rows: 40 is no multiple of the block)
-> MatMulNBits 4-bit (N 48, K 40, blocks of 16, packed zero points) -> Relu
-> MatMulNBits 8-bit (N 32, K 48, blocks of 32, a bias) -> MatMulNBits of
--bits-last bits (N 24, K 32, blocks of 16); outputs `hidden` (after the
second product) and `out`. Every product at accuracy level 1 (onnxruntime
computes in f32, as meshc does).

DIR gets model.onnx with its weights in model.onnx.data, inputs/ids.npy and
float64/*.npy: the outputs computed in float64 from the script's own
dequantization of every weight, as the ops' documentation says (element k of
a row at bit k * bits, low bits first; (q - zero point) * scale; zero point
2^(bits-1) without zero points). onnxruntime's outputs are then taken by
models/ort_reference.py DIR with onnxruntime 1.32 (onnxruntime-genai's;
1.23 reads GatherBlockQuantized's packed zero points otherwise), and the
test first compares them with float64/: meshc is then checked against a
reading of the format that two implementations share.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)


def pack(values, bits):
    """Unsigned `bits`-bit integers [rows, n] -> bytes, low bits first."""
    rows, n = values.shape
    per = 8 // bits
    padded = np.zeros((rows, -(-n // per) * per), np.uint8)
    padded[:, :n] = values
    out = np.zeros((rows, padded.shape[1] // per), np.uint8)
    for i in range(per):
        out |= (padded[:, i::per] << (i * bits)).astype(np.uint8)
    return out


def quantized(rows, k, bits, block, zero_points):
    """Random integers, scales and zero points of a [rows, k] matrix, and
    its float64 dequantization."""
    blocks = -(-k // block)
    q = RNG.integers(0, 1 << bits, size=(rows, k)).astype(np.uint8)
    scales = (RNG.random((rows, blocks)) * 0.02 + 0.01).astype(np.float32)
    zp = RNG.integers(0, 1 << bits, size=(rows, blocks)).astype(np.uint8) if zero_points else None
    zero = zp.astype(np.float64) if zero_points else np.full((rows, blocks), 1 << (bits - 1), np.float64)
    cols = np.arange(k) // block
    w = (q.astype(np.float64) - zero[:, cols]) * scales.astype(np.float64)[:, cols]
    return q, scales, zp, w


def matmul_nbits(name, x, n, k, bits, block, zero_points, inits, nodes, bias=None):
    q, scales, zp, w = quantized(n, k, bits, block, zero_points)
    blocks = -(-k // block)
    blob = block * bits // 8
    # B [N, blocks, blob]: each row's blocks padded to whole blocks.
    rows = np.zeros((n, blocks * block), np.uint8)
    rows[:, :k] = q
    packed = pack(rows, bits).reshape(n, blocks, blob)
    inputs = [x, f"{name}.q", f"{name}.scales"]
    inits += [numpy_helper.from_array(packed, f"{name}.q"),
              numpy_helper.from_array(scales, f"{name}.scales")]
    if zero_points:
        inits.append(numpy_helper.from_array(pack(zp, bits), f"{name}.zp"))
        inputs.append(f"{name}.zp")
    if bias is not None:
        inputs += [""] * (5 - len(inputs)) + [f"{name}.bias"]
        inits.append(numpy_helper.from_array(bias, f"{name}.bias"))
    nodes.append(helper.make_node("MatMulNBits", inputs, [name], name=name, domain="com.microsoft",
                                  K=k, N=n, bits=bits, block_size=block, accuracy_level=1))
    return w


def int_tensor(name, values, onnx_type, bits):
    """An ONNX integer initializer in raw data: 8-bit as bytes, 4-bit two to
    a byte, low nibble first, running on across rows."""
    flat = (values.astype(np.int64).reshape(-1) & ((1 << bits) - 1)).astype(np.uint8)
    if bits == 4:
        flat = np.concatenate([flat, np.zeros(len(flat) % 2, np.uint8)])
        flat = flat[0::2] | (flat[1::2] << 4)
    t = onnx.TensorProto()
    t.name, t.data_type, t.raw_data = name, onnx_type, flat.tobytes()
    t.dims.extend(values.shape)
    return t


def dequantize_linear(name, shape, onnx_type, bits, signed, axis, block, zero_points, inits,
                      nodes):
    """DequantizeLinear of an integer initializer `name` [rows, cols]: per
    tensor (axis None), per axis (block 0) or in blocks along `axis`; its
    float64 value."""
    rows, cols = shape
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
    q = RNG.integers(low, high, size=shape)
    if axis is None:
        grid = (1, 1)
    elif block == 0:
        grid = (rows, 1) if axis == 0 else (1, cols)
    else:
        grid = (-(-rows // block), cols) if axis == 0 else (rows, -(-cols // block))
    scales = (RNG.random(grid) * 0.02 + 0.01).astype(np.float32)
    zp = RNG.integers(low, high, size=grid) if zero_points else np.zeros(grid, np.int64)
    # Each element's scale and zero point.
    r = np.arange(rows)[:, None] * grid[0] // rows if axis != 0 or block == 0 else \
        np.arange(rows)[:, None] // block
    c = np.arange(cols)[None, :] * grid[1] // cols if axis != 1 or block == 0 else \
        np.arange(cols)[None, :] // block
    if axis == 0 and block:
        r = np.arange(rows)[:, None] // block
    w = (q - zp[r, c]) * scales.astype(np.float64)[r, c]
    if axis is None:
        scale_init = numpy_helper.from_array(scales.reshape(()), f"{name}.scale")
    elif block == 0:
        scale_init = numpy_helper.from_array(scales.reshape(-1), f"{name}.scale")
    else:
        scale_init = numpy_helper.from_array(scales, f"{name}.scale")
    inits += [int_tensor(f"{name}.q", q, onnx_type, bits), scale_init]
    inputs = [f"{name}.q", f"{name}.scale"]
    if zero_points:
        zshape = scale_init.dims
        inits.append(int_tensor(f"{name}.zp", zp.reshape(tuple(zshape)), onnx_type, bits))
        inputs.append(f"{name}.zp")
    attrs = {} if axis is None else dict(axis=axis)
    if block:
        attrs["block_size"] = block
    nodes.append(helper.make_node("DequantizeLinear", inputs, [f"{name}.w"], name=f"{name}.dq",
                                  **attrs))
    return w


def main_qdq(args):
    """The same graph in ONNX's QDQ form: DequantizeLinear of each weight,
    then Gather and MatMul."""
    zps = not args.no_zero_points
    batch, seq, vocab, hidden = 2, 5, 16, 40
    nodes, inits = [], []
    U4, I4 = 21, 22  # ONNX's UINT4 and INT4
    table = dequantize_linear("embed", (vocab, hidden), U4, 4, False, 0, 0, zps, inits, nodes)
    nodes.append(helper.make_node("Gather", ["embed.w", "ids"], ["x"], name="embed"))
    w1 = dequantize_linear("fc1", (hidden, 48), I4, 4, True, 0, 16, zps, inits, nodes)
    nodes.append(helper.make_node("MatMul", ["x", "fc1.w"], ["fc1"], name="fc1"))
    nodes.append(helper.make_node("Relu", ["fc1"], ["act"], name="relu"))
    w2 = dequantize_linear("hidden", (48, 32), TensorProto.UINT8, 8, False, 1, 0, zps, inits,
                           nodes)
    bias = (RNG.standard_normal(32) * 0.1).astype(np.float32)
    inits.append(numpy_helper.from_array(bias, "hidden.bias"))
    nodes.append(helper.make_node("MatMul", ["act", "hidden.w"], ["hidden.mm"], name="hidden"))
    nodes.append(helper.make_node("Add", ["hidden.mm", "hidden.bias"], ["hidden"], name="bias"))
    w3 = dequantize_linear("out", (32, 24), TensorProto.INT8, 8, True, None, 0, zps, inits, nodes)
    nodes.append(helper.make_node("MatMul", ["hidden", "out.w"], ["out"], name="out"))
    ids = RNG.integers(0, vocab, size=(batch, seq)).astype(np.int64)
    h = np.maximum(table[ids] @ w1, 0) @ w2 + bias
    return nodes, inits, ids, {"hidden": h, "out": h @ w3}, 21


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--bits-last", type=int, default=8, choices=[2, 4, 8])
    ap.add_argument("--no-zero-points", action="store_true")
    ap.add_argument("--qdq", action="store_true",
                    help="ONNX's QDQ form instead: DequantizeLinear of the table (UINT4 per "
                    "row), of fc1 (INT4 in blocks of 16 down its 40 rows), of the second "
                    "(UINT8 per column) and of the third weight (INT8 per tensor), opset 21")
    args = ap.parse_args()
    if args.qdq:
        nodes, inits, ids, want, opset = main_qdq(args)
        return save(args, nodes, inits, ids, want, opset, [])
    zps = not args.no_zero_points
    batch, seq, vocab, hidden = 2, 5, 16, 40
    nodes, inits = [], []

    # The embedding: GatherBlockQuantized of [vocab, hidden] packed along
    # its rows (hidden / 2 bytes each), 4-bit in blocks of 16.
    q, scales, zp, table = quantized(vocab, hidden, 4, 16, zps)
    inits += [numpy_helper.from_array(pack(q, 4), "embed.q"),
              numpy_helper.from_array(scales, "embed.scales")]
    gbq_inputs = ["ids", "embed.scales"]
    if zps:
        inits.append(numpy_helper.from_array(pack(zp, 4), "embed.zp"))
        gbq_inputs.append("embed.zp")
    nodes.append(helper.make_node("GatherBlockQuantized", ["embed.q"] + gbq_inputs, ["x"],
                                  name="embed", domain="com.microsoft", bits=4, block_size=16,
                                  gather_axis=0, quantize_axis=1))
    w1 = matmul_nbits("fc1", "x", 48, hidden, 4, 16, zps, inits, nodes)
    nodes.append(helper.make_node("Relu", ["fc1"], ["act"], name="relu"))
    bias = (RNG.standard_normal(32) * 0.1).astype(np.float32)
    w2 = matmul_nbits("hidden", "act", 32, 48, 8, 32, zps, inits, nodes, bias=bias)
    w3 = matmul_nbits("out", "hidden", 24, 32, args.bits_last, 16, zps, inits, nodes)

    ids = RNG.integers(0, vocab, size=(batch, seq)).astype(np.int64)
    h = np.maximum(table[ids] @ w1.T, 0) @ w2.T + bias
    return save(args, nodes, inits, ids, {"hidden": h, "out": h @ w3.T}, 17,
                [helper.make_opsetid("com.microsoft", 1)])


def save(args, nodes, inits, ids, want, opset, extra_opsets):
    graph = helper.make_graph(
        nodes, "quantized",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", 32]),
         helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 24])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)] + extra_opsets)
    model.ir_version = 10
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    onnx.save(model, os.path.join(args.out, "model.onnx"), save_as_external_data=True,
              location="model.onnx.data", size_threshold=0)
    np.save(os.path.join(args.out, "inputs", "ids.npy"), ids)
    os.makedirs(os.path.join(args.out, "float64"), exist_ok=True)
    for name, value in want.items():
        np.save(os.path.join(args.out, "float64", f"{name}.npy"), value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
