#!/usr/bin/env python3
"""Rewrites a generated model with its float weights stored as f16 or bf16.

Usage: models/half_weights.py --model DIR --out DIR [--dtype f16|bf16]

Every f32 initializer of DIR/model.onnx with more than one element becomes
an initializer of `dtype` followed by a Cast back to f32, the way exporters
write a half-precision checkpoint that computes in f32. The graph therefore
still computes in f32, and onnxruntime's outputs for DIR/inputs are the
reference: OUT/model.onnx, OUT/inputs (copied) and OUT/reference. meshc
imports the weights as `dtype`; `meshc compile --dtype f32` converts them
back while it shards them (exactly: every f16 and bf16 value is an f32).
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import save_with_reference  # noqa: E402


def to_bf16_bits(values):
    """f32 array -> bf16 bits (uint16), rounded to nearest even."""
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def halve(model, dtype):
    graph = model.graph
    casts = []
    for init in graph.initializer:
        if init.data_type != TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        if values.size <= 1:
            continue  # scalars of the computation stay literals
        name = init.name
        stored = name + "." + dtype
        if dtype == "f16":
            half = numpy_helper.from_array(values.astype(np.float16), stored)
        else:
            half = helper.make_tensor(stored, TensorProto.BFLOAT16, values.shape,
                                      to_bf16_bits(values).tobytes(), raw=True)
        init.CopyFrom(half)
        casts.append(helper.make_node("Cast", [stored], [name],
                                      to=TensorProto.FLOAT, name="cast_" + name))
    for node in reversed(casts):
        graph.node.insert(0, node)
    return model, len(casts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a folder models/*.py wrote")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16")
    args = ap.parse_args()
    model = onnx.load(os.path.join(args.model, "model.onnx"))
    model, count = halve(model, args.dtype)
    feeds = {os.path.basename(f)[:-4]: np.load(f)
             for f in sorted(glob.glob(os.path.join(args.model, "inputs", "*.npy")))}
    save_with_reference(model, args.out, feeds,
                        f"half_weights ({count} weights as {args.dtype})")


if __name__ == "__main__":
    main()
