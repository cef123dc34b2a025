#!/usr/bin/env python3
"""The reference for `meshc compile --dtype bf16` on the cpu target.

Usage: models/bf16_reference.py --model DIR --out REFDIR

On the cpu target, --dtype bf16 stores the weights that products read (a
MatMul's or Gemm's B, a Gather's table: linear, matmul and embedding once
imported) in bf16 and computes in f32; widening bf16 to f32 is exact. So its
outputs are onnxruntime's in f32 on the same model with exactly those
initializers rounded to bf16 (to nearest even), up to the order of f32 sums.
This script writes that: REFDIR/<output>.npy for the inputs in DIR/inputs.

The rule is the ONNX-level image of meshc's: an initializer that a product
reads is rounded for all its uses, where meshc rounds only the products'
copy and keeps f32 for any other use (and also rounds weights a product
reaches through reshapes and slices). The two agree on models whose product
weights have no other use and reach their products directly, as in the
tests.
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from half_weights import to_bf16_bits  # noqa: E402

# (op, input index) pairs whose initializer a product multiplies by.
PRODUCT_OPERANDS = {("MatMul", 1), ("Gemm", 1), ("Gather", 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="folder with model.onnx and inputs/")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    model = onnx.load(os.path.join(args.model, "model.onnx"))
    graph = model.graph
    product = {node.input[i] for node in graph.node for (op, i) in PRODUCT_OPERANDS
               if node.op_type == op and len(node.input) > i}
    rounded = 0
    for init in graph.initializer:
        if init.name not in product or init.data_type != TensorProto.FLOAT:
            continue
        values = numpy_helper.to_array(init)
        bits = to_bf16_bits(values).astype(np.uint32) << 16
        init.CopyFrom(numpy_helper.from_array(bits.view(np.float32), init.name))
        rounded += 1
    feeds = {os.path.basename(p)[:-4]: np.load(p)
             for p in sorted(glob.glob(os.path.join(args.model, "inputs", "*.npy")))}
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    os.makedirs(args.out, exist_ok=True)
    names = [o.name for o in session.get_outputs()]
    for name, value in zip(names, session.run(names, feeds)):
        np.save(os.path.join(args.out, f"{name}.npy"), value)
    print(f"bf16 reference: {rounded} product weights rounded to bf16; "
          f"{len(names)} outputs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
