#!/usr/bin/env python3
"""Checks the weight references of imported IR against the model's bytes.

Usage: check_weights.py MODEL.onnx IMPORTED.mlir

For every `dfg.weight "NAME" in "FILE" [offset = O, length = L]` in the IR,
reads L bytes at O of FILE (relative to the model's folder) and compares them
with the initializer NAME as onnx loads it (external data resolved). Prints
one line per weight and "weights: N/N match"; exits 1 on any mismatch.
"""
import os
import re
import sys

import onnx
from onnx import numpy_helper

REF = re.compile(r'dfg\.weight "([^"]*)" in "([^"]*)" \[offset = (\d+), length = (\d+)\]')


def main():
    model_path, ir_path = sys.argv[1], sys.argv[2]
    folder = os.path.dirname(os.path.abspath(model_path))
    model = onnx.load(model_path, load_external_data=True)
    expected = {t.name: numpy_helper.to_array(t).tobytes() for t in model.graph.initializer}
    refs = REF.findall(open(ir_path).read())
    good = 0
    for name, file, offset, length in refs:
        with open(os.path.join(folder, file), "rb") as f:
            f.seek(int(offset))
            data = f.read(int(length))
        ok = data == expected.get(name)
        good += ok
        print(f"{name}: {'match' if ok else 'MISMATCH'} ({file} @ {offset}, {length} bytes)")
    print(f"weights: {good}/{len(refs)} match")
    sys.exit(0 if refs and good == len(refs) else 1)


if __name__ == "__main__":
    main()
