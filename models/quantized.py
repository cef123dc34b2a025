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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--bits-last", type=int, default=8, choices=[2, 4, 8])
    ap.add_argument("--no-zero-points", action="store_true")
    args = ap.parse_args()
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

    graph = helper.make_graph(
        nodes, "quantized",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "seq", 32]),
         helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "seq", 24])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    path = os.path.join(args.out, "model.onnx")
    onnx.save(model, path, save_as_external_data=True, location="model.onnx.data",
              size_threshold=0)

    ids = RNG.integers(0, vocab, size=(batch, seq)).astype(np.int64)
    np.save(os.path.join(args.out, "inputs", "ids.npy"), ids)
    x = table[ids]
    h = np.maximum(x @ w1.T, 0) @ w2.T + bias
    os.makedirs(os.path.join(args.out, "float64"), exist_ok=True)
    for name, value in {"hidden": h, "out": h @ w3.T}.items():
        np.save(os.path.join(args.out, "float64", f"{name}.npy"), value)
    return 0


if __name__ == "__main__":
    sys.exit(main())
