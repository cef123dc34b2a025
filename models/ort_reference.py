"""Takes onnxruntime's reference outputs of a model folder again, with the
onnxruntime of the Python that runs this script.

Usage: ort_reference.py DIR [--sliding-window W]

DIR holds model.onnx and inputs/NAME.npy (as every generator of models/
writes them); the outputs are written to DIR/reference/NAME.npy, replacing
what is there, and one line says which onnxruntime took them. With
--sliding-window W (GroupQueryAttention's sliding_window_cache, window W):
in each present output shaped as an input (a cache of fixed capacity), the
rows past those the cache keeps (kept_rows, for the tokens the attention
mask counts in each batch row) are unspecified by onnxruntime and written
as NaN, which models/compare.py does not compare.

Why: the test environment pins onnxruntime 1.23, but onnxruntime-genai's
builder writes for the newer onnxruntime it ships with (.venv-genai). Their
GroupQueryAttention differs: since 1.2x local_window_size W lets a query see
W keys ending at itself (Hugging Face's sliding_window), where 1.23 let it
see W + 1, and only the newer one knows sliding_window_cache. meshc follows
the newer one, so models with those attributes take their references from
it: `.venv-genai/bin/python models/ort_reference.py DIR`. Only numpy and
onnxruntime are needed (no onnx).
"""
import argparse
import os
import sys

import numpy as np
import onnxruntime as ort


def kept_rows(n, capacity, window):
    """Rows a sliding-window cache (sliding_window_cache) of `capacity`
    rows and window `window` holds after a batch row has seen n tokens: n up
    to the capacity; past it the cache drops capacity - window + 1 rows at
    once (onnxruntime 1.32's rule)."""
    if n <= capacity:
        return n
    drop = capacity - window + 1
    return n - drop * -(-(n - capacity) // drop)


def main():
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[2])
    ap.add_argument("folder")
    ap.add_argument("--sliding-window", type=int, default=0)
    args = ap.parse_args()
    folder = args.folder
    path = os.path.join(folder, "model.onnx")
    # A weight's DequantizeLinear before a MatMul in f32, as ONNX defines it
    # (onnxruntime would fuse the pair at accuracy level 4: 8-bit activations).
    options = ort.SessionOptions()
    options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "1")
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        file = os.path.join(folder, "inputs", f"{i.name}.npy")
        if not os.path.exists(file):
            sys.exit(f"ort_reference.py: {file} is missing (input '{i.name}')")
        feeds[i.name] = np.load(file)
    names = [o.name for o in session.get_outputs()]
    os.makedirs(os.path.join(folder, "reference"), exist_ok=True)
    shapes = {v.shape for v in feeds.values()}
    for name, value in zip(names, session.run(names, feeds)):
        if (args.sliding_window > 0 and name.startswith("present") and value.ndim == 4
                and value.shape in shapes):
            seen = feeds["attention_mask"].sum(axis=1)
            for b, n in enumerate(seen):
                value[b, :, kept_rows(int(n), value.shape[2], args.sliding_window):] = np.nan
        np.save(os.path.join(folder, "reference", f"{name}.npy"), value)
    print(f"{path}: reference outputs from onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
