#!/usr/bin/env python3
"""Compares a run's .npy outputs with a model's reference outputs.

Usage: models/compare.py --reference DIR --output DIR [--rtol R] [--atol A]
                         [--valid MASK.npy] [--any-predictions]

For every NAME.npy in the reference folder, loads the same file from the
output folder and checks |out - ref| <= atol + rtol * |ref| elementwise
(defaults: atol 1e-5, rtol 1e-4: the reference is onnxruntime in f32, the
output meshc's). For outputs named `logits`, also prints the predicted
next token at each position for both, which must be the same unless
--any-predictions. Exits 1 on a mismatch or a missing file.
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
    ap.add_argument("--valid", metavar="MASK.npy",
                    help="an attention mask [batch, total]: logits at padded positions "
                         "(mask 0 over the last seq columns) and present.* positions past "
                         "a row's valid length (sum of its mask) are not compared, as "
                         "their values are unspecified")
    ap.add_argument("--any-predictions", action="store_true",
                    help="print the next-token predictions but do not require them to be "
                         "the same (a lower precision, within its tolerance, may flip a "
                         "near tie)")
    args = ap.parse_args()
    valid = np.load(args.valid).astype(bool) if args.valid else None
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
        keep = None
        if np.issubdtype(ref.dtype, np.floating) and np.isnan(ref).any():
            # NaN in a reference: a value onnxruntime leaves unspecified
            # (ort_reference.py --sliding-window), not compared.
            keep = ~np.isnan(ref)
        if valid is not None and name == "logits":
            keep = valid[:, -out.shape[1]:]
        elif valid is not None and name.startswith("present.") and out.ndim == 4:
            # [batch, heads, total, d]: row b holds its sum(mask[b]) valid
            # tokens first (the layout of onnxruntime's GroupQueryAttention).
            lengths = valid.sum(axis=1)
            rows = np.arange(out.shape[2])[None, :] < lengths[:, None]
            rows = np.broadcast_to(rows[:, None, :, None], out.shape)
            keep = rows if keep is None else keep & rows
        if keep is not None:
            print(f"{name}: comparing the {int(keep.sum())} of {keep.size} values "
                  "the mask marks valid")
            diff, out, ref = diff[keep], out[keep], ref[keep]
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
            ok &= mine == theirs or args.any_predictions
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
