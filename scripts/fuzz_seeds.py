#!/usr/bin/env python3
"""Writes the seed corpus of meshc-fuzz-frontend (`make fuzz`, docs/testing.md).

Usage: scripts/fuzz_seeds.py OUT_DIR

Seeds are the models the tests already have: every export of the real-model
corpus (models/real/corpus/*/model.onnx, with external data made inline, as
the fuzzer hands the harness one file), and every small model of the import
tests (test/compiler/import/Inputs/make_onnx.py, the bad ones included).
"""
import glob
import importlib.util
import os
import sys
import tempfile

import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: fuzz_seeds.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    count = 0
    for path in sorted(glob.glob(os.path.join(REPO, "models/real/corpus/*/model.onnx"))):
        name = os.path.basename(os.path.dirname(path))
        m = onnx.load(path)  # reads the external data
        onnx.save_model(m, os.path.join(out, name + ".onnx"))
        count += 1

    spec = importlib.util.spec_from_file_location(
        "make_onnx", os.path.join(REPO, "test/compiler/import/Inputs/make_onnx.py"))
    make_onnx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_onnx)
    with tempfile.TemporaryDirectory() as tmp:
        for case, fn in sorted(make_onnx.CASES.items()):
            path = os.path.join(tmp, case, "model.onnx")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            m = fn(path)
            if m is not None:
                onnx.save_model(m, path)
            if os.path.exists(path):
                with open(path, "rb") as src, open(os.path.join(out, "import-" + case + ".onnx"), "wb") as dst:
                    dst.write(src.read())
                count += 1
    print(f"fuzz_seeds: {count} seeds in {out}")


if __name__ == "__main__":
    main()
