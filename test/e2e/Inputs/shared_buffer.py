"""onnxruntime-genai's shared past/present buffer, as its runtime feeds an
export of its builder: every past is a buffer of `--buffer` positions whose
first positions hold each row's history and the rest zeros, while the
attention mask counts only the history and the new tokens.

Usage: shared_buffer.py make --export DIR --buffer N --out OUT
       shared_buffer.py check --reference OUT/reference --output DIR

make: OUT gets links to the export's model files and inputs/ with the pasts
widened to N positions (the other inputs as they are).

check: compares meshc's outputs with onnxruntime's (1e-4 + 1e-3 |ref|).
onnxruntime returns each present at the buffer's length (the buffer it
writes in place); meshc's present has the past's length plus the new
tokens, so its positions past the buffer must be zeros, and the rest must
match. Prints one line per output and exits 1 on a mismatch.
"""
import argparse
import glob
import os
import sys

import numpy as np

ATOL, RTOL = 1e-4, 1e-3


def make(args):
    os.makedirs(os.path.join(args.out, "inputs"), exist_ok=True)
    for name in ("model.onnx", "model.onnx.data", "genai_config.json"):
        src = os.path.join(os.path.abspath(args.export), name)
        if os.path.exists(src) and not os.path.exists(os.path.join(args.out, name)):
            os.symlink(src, os.path.join(args.out, name))
    for path in glob.glob(os.path.join(args.export, "inputs", "*.npy")):
        name = os.path.basename(path)
        value = np.load(path)
        if name.startswith("past"):
            if value.shape[2] > args.buffer:
                sys.exit(f"{name}: {value.shape[2]} cached positions do not fit a buffer of "
                         f"{args.buffer}")
            wide = np.zeros(value.shape[:2] + (args.buffer,) + value.shape[3:], value.dtype)
            wide[:, :, :value.shape[2]] = value
            value = wide
        np.save(os.path.join(args.out, "inputs", name), value)


def check(args):
    ok = True
    for path in sorted(glob.glob(os.path.join(args.reference, "*.npy"))):
        name = os.path.basename(path)[:-4]
        ref = np.load(path).astype(np.float64)
        got = np.load(os.path.join(args.output, name + ".npy")).astype(np.float64)
        extra = 0.0
        if name.startswith("present") and got.shape[2] > ref.shape[2]:
            extra = float(np.abs(got[:, :, ref.shape[2]:]).max())
            got = got[:, :, :ref.shape[2]]
        if got.shape != ref.shape:
            print(f"{name}: MISMATCH shape {got.shape}, onnxruntime {ref.shape}")
            ok = False
            continue
        good = bool(np.all(np.abs(got - ref) <= ATOL + RTOL * np.abs(ref))) and extra == 0.0
        ok &= good
        print(f"{name}: {'match' if good else 'MISMATCH'}: largest difference "
              f"{np.abs(got - ref).max():.3g}"
              + (f"; positions past the buffer: largest {extra:.3g}"
                 if name.startswith("present") else ""))
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("--export", required=True)
    m.add_argument("--buffer", type=int, required=True)
    m.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--reference", required=True)
    c.add_argument("--output", required=True)
    args = ap.parse_args()
    make(args) if args.command == "make" else check(args)


if __name__ == "__main__":
    main()
