#!/usr/bin/env python3
"""Compares a run's .npy outputs with a model's reference outputs.

Usage: models/compare.py --reference DIR --output DIR [--rtol R] [--atol A]

For every NAME.npy in the reference folder, loads the same file from the
output folder and checks |out - ref| <= atol + rtol * |ref| elementwise
(defaults: atol 1e-5, rtol 1e-4: the reference is onnxruntime in f32, the
output meshc's). For outputs named `logits`, also prints the predicted
next token at each position for both. Exits 1 on a mismatch or a missing
file.
"""
import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    ok = True
    for file in sorted(os.listdir(args.reference)):
        if not file.endswith(".npy"):
            continue
        name = file[:-4]
        ref = np.load(os.path.join(args.reference, file))
        path = os.path.join(args.output, file)
        if not os.path.exists(path):
            print(f"{name}: MISSING ({path})")
            ok = False
            continue
        out = np.load(path)
        if out.shape != ref.shape:
            print(f"{name}: MISMATCH shape {out.shape} vs reference {ref.shape}")
            ok = False
            continue
        diff = np.abs(out.astype(np.float64) - ref.astype(np.float64))
        good = bool(np.all(diff <= args.atol + args.rtol * np.abs(ref)))
        ok &= good
        print(f"{name}: {'match' if good else 'MISMATCH'}: largest difference from "
              f"onnxruntime {diff.max(initial=0.0):.3g} (largest value {np.abs(ref).max():.3g}; "
              f"tolerance {args.atol:g} + {args.rtol:g}*|x|)")
        if name == "logits":
            mine, theirs = out.argmax(-1).ravel().tolist(), ref.argmax(-1).ravel().tolist()
            print(f"next-token predictions, meshc:       {mine}")
            print(f"next-token predictions, onnxruntime: {theirs}"
                  f"  ({'same' if mine == theirs else 'DIFFERENT'})")
            ok &= mine == theirs
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
