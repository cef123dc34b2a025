"""A left-padded prefill of an onnxruntime-genai export: the first step of a
generation over prompts of different lengths, as onnxruntime-genai's runtime
feeds it (past_present_share_buffer): each past a buffer of 8 positions,
zeros, and the attention mask over the prompts alone.

Usage: genai_padded.py make --export DIR --out OUT
       genai_padded.py check --reference OUT/reference --output DIR

make: OUT gets links to the export's model files, inputs/ with a batch of
two prompts (6 tokens, and 4 after 2 of padding), its attention mask and
the pasts, and reference/ with what onnxruntime computes for each prompt
alone, its padding removed and its pasts empty (onnxruntime's own padded
batch reads the padding at negative cache positions, so it is no
reference): the logits and presents of the padded batch as they should be,
each row's logits right-aligned as the prompt is, each present (meshc's:
the buffer's positions and the new tokens') holding the prompt's keys and
values from position 0 and zeros after them.

check: compares meshc's outputs with that reference (1e-4 + 1e-3 |ref|):
every present whole, the logits at the prompts' own positions (those of the
padding are not defined). Prints one line per output and exits 1 on a
mismatch.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

ATOL, RTOL = 1e-4, 1e-3
IDS = np.array([[5, 6, 7, 8, 9, 10], [0, 0, 11, 12, 13, 14]], np.int64)
MASK = np.array([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]], np.int64)
BUFFER = 8


def make(args):
    import onnxruntime as ort

    export = os.path.abspath(args.export)
    for sub in ("inputs", "reference"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    for name in ("model.onnx", "model.onnx.data", "genai_config.json"):
        src = os.path.join(export, name)
        if os.path.exists(src) and not os.path.exists(os.path.join(args.out, name)):
            os.symlink(src, os.path.join(args.out, name))
    decoder = json.load(open(os.path.join(export, "genai_config.json")))["model"]["decoder"]
    kv_heads, head_size = decoder["num_key_value_heads"], decoder["head_size"]
    session = ort.InferenceSession(os.path.join(export, "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    pasts = [i.name for i in session.get_inputs() if i.name.startswith("past")]
    outputs = [o.name for o in session.get_outputs()]

    def feeds(ids, mask, buffer):
        f = {"input_ids": ids, "attention_mask": mask}
        for p in pasts:
            f[p] = np.zeros((ids.shape[0], kv_heads, buffer, head_size), np.float32)
        return f

    for name, value in feeds(IDS, MASK, BUFFER).items():
        np.save(os.path.join(args.out, "inputs", name + ".npy"), value)
    want = {}
    for b in range(IDS.shape[0]):
        kept = MASK[b] != 0
        alone = dict(zip(outputs, session.run(None, feeds(IDS[b:b + 1, kept],
                                                          MASK[b:b + 1, kept], 0))))
        for name, value in alone.items():
            if name not in want:
                batch, length = IDS.shape
                shape = ((batch, length) + value.shape[2:] if name == "logits" else
                         (batch, value.shape[1], BUFFER + length) + value.shape[3:])
                want[name] = np.zeros(shape, np.float32)
            if name == "logits":
                want[name][b, IDS.shape[1] - value.shape[1]:] = value[0]
            else:
                want[name][b, :, :value.shape[2]] = value[0]
    for name, value in want.items():
        np.save(os.path.join(args.out, "reference", name + ".npy"), value)


def check(args):
    ok = True
    for path in sorted(glob.glob(os.path.join(args.reference, "*.npy"))):
        name = os.path.basename(path)[:-4]
        ref = np.load(path).astype(np.float64)
        got = np.load(os.path.join(args.output, name + ".npy")).astype(np.float64)
        if got.shape != ref.shape:
            print(f"{name}: MISMATCH shape {got.shape}, reference {ref.shape}")
            ok = False
            continue
        if name == "logits":
            keep = MASK != 0
            ref, got = ref[keep], got[keep]
        err = np.abs(got - ref)
        bad = err > ATOL + RTOL * np.abs(ref)
        if bad.any() or not np.isfinite(got).all():
            print(f"{name}: MISMATCH largest difference {err.max():.3g}")
            ok = False
        else:
            print(f"{name}: match")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("--export", required=True)
    m.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--reference", required=True)
    c.add_argument("--output", required=True)
    args = ap.parse_args()
    if args.command == "make":
        make(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
