#!/usr/bin/env python3
"""A GroupQueryAttention with do_rotary (cos/sin caches, no position_ids) and
symbolic batch and sequence, as the onnxruntime-genai builder writes its first
prompt: seqlens_k and total_sequence_length computed from attention_mask. The
batch is right-padded (the second row has 4 valid tokens of 6), so the rotary
positions of a first prompt (i, not seqlens_k + 1 - seq + i) matter. Writes
model.onnx, inputs/*.npy and onnxruntime's reference/*.npy under --out.
"""
import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "models"))
from common import save_with_reference  # noqa: E402

H, KV, D = 4, 2, 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    f32 = TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("q", f32, ["batch", "seq", H * D]),
              helper.make_tensor_value_info("k", f32, ["batch", "seq", KV * D]),
              helper.make_tensor_value_info("v", f32, ["batch", "seq", KV * D]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                            ["batch", "seq"])]
    inits = [numpy_helper.from_array(rng.standard_normal((32, D // 2)).astype(np.float32), n)
             for n in ("cos", "sin")]
    inits += [numpy_helper.from_array(np.array([1], np.int64), "axis1"),
              numpy_helper.from_array(np.array(1, np.int64), "one"),
              numpy_helper.from_array(np.array(1, np.int64), "dim1")]
    nodes = [
        helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["sum"], keepdims=0),
        helper.make_node("Sub", ["sum", "one"], ["lens64"]),
        helper.make_node("Cast", ["lens64"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["shape"]),
        helper.make_node("Gather", ["shape", "dim1"], ["total64"], axis=0),
        helper.make_node("Cast", ["total64"], ["total"], to=TensorProto.INT32),
        helper.make_node("GroupQueryAttention",
                         ["q", "k", "v", "", "", "seqlens_k", "total", "cos", "sin"],
                         ["logits", "present_k", "present_v"], domain="com.microsoft",
                         num_heads=H, kv_num_heads=KV, do_rotary=1, name="gqa"),
    ]
    # Named logits so that models/compare.py --valid skips the padded positions.
    outputs = [helper.make_tensor_value_info("logits", f32, ["batch", "seq", H * D])]
    model = helper.make_model(
        helper.make_graph(nodes, "gqa_rotary", inputs, outputs, inits),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        producer_name="meshc test/e2e/Inputs/gqa_rotary.py", ir_version=8)
    b, s = 2, 6
    mask = np.ones((b, s), np.int64)
    mask[1, 4:] = 0
    feeds = {"q": rng.standard_normal((b, s, H * D)).astype(np.float32),
             "k": rng.standard_normal((b, s, KV * D)).astype(np.float32),
             "v": rng.standard_normal((b, s, KV * D)).astype(np.float32),
             "attention_mask": mask}
    save_with_reference(model, args.out, feeds, "test/e2e/Inputs/gqa_rotary.py", check=False)


if __name__ == "__main__":
    main()
