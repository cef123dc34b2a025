"""Takes onnxruntime's reference outputs of a model folder again, with the
onnxruntime of the Python that runs this script.

Usage: ort_reference.py DIR

DIR holds model.onnx and inputs/NAME.npy (as every generator of models/
writes them); the outputs are written to DIR/reference/NAME.npy, replacing
what is there, and one line says which onnxruntime took them.

Why: the test environment pins onnxruntime 1.23, but onnxruntime-genai's
builder writes for the newer onnxruntime it ships with (.venv-genai). Their
GroupQueryAttention differs: since 1.2x local_window_size W lets a query see
W keys ending at itself (Hugging Face's sliding_window), where 1.23 let it
see W + 1, and only the newer one knows sliding_window_cache. meshc follows
the newer one, so models with those attributes take their references from
it: `.venv-genai/bin/python models/ort_reference.py DIR`. Only numpy and
onnxruntime are needed (no onnx).
"""
import os
import sys

import numpy as np
import onnxruntime as ort


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2])
    folder = sys.argv[1]
    path = os.path.join(folder, "model.onnx")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in session.get_inputs():
        file = os.path.join(folder, "inputs", f"{i.name}.npy")
        if not os.path.exists(file):
            sys.exit(f"ort_reference.py: {file} is missing (input '{i.name}')")
        feeds[i.name] = np.load(file)
    names = [o.name for o in session.get_outputs()]
    os.makedirs(os.path.join(folder, "reference"), exist_ok=True)
    for name, value in zip(names, session.run(names, feeds)):
        np.save(os.path.join(folder, "reference", f"{name}.npy"), value)
    print(f"{path}: reference outputs from onnxruntime {ort.__version__}")


if __name__ == "__main__":
    main()
