#!/usr/bin/env python3
"""Benchmark: `meshc generate` against onnxruntime-genai on the same ONNX, a
1B-class Llama written by onnxruntime-genai's builder.

Usage: bench/cpu_generate_genai.py --meshc build/bin/meshc [--threads T]
           [--prompt 128] [--new-tokens 128] [--batches 1,4]
           [--meshes tp=1,tp=2] [--layers 16] [--dtype f32|bf16] [--out DIR]
           [--export-python .venv-export/bin/python]
           [--genai-python .venv-genai/bin/python]

The model (bench/genai_helper.py export, in the export environment of
models/real/setup_export_env.sh): Llama-3.2-1B's shapes (d=2048, 32 heads,
8 KV heads, MLP 8192, vocabulary 128256, tied embeddings, --layers layers)
with random weights, fp32, written once by the onnxruntime-genai builder
(model.onnx, its weights and genai_config.json) to DIR (default
build/bench/llama1b_genai/; about 5 GB at 16 layers).

For each batch size, random prompts of --prompt tokens (equal lengths: no
padding) are extended by exactly --new-tokens greedy tokens:

- by onnxruntime-genai's generator (bench/genai_helper.py generate, in
  .venv-genai: the whole batch at once, its decoder session given T
  intra-op threads);
- by `meshc generate` on the builder's folder compiled for each mesh
  (--ignore-eos, --jsonl; T threads in all, T / ranks per rank).

Reported per batch and mesh: time to first token, decode time per step
(median, and p99), decode tokens/s (the batch's tokens per second), and the
ratio of meshc's median step to onnxruntime-genai's; and whether the
generated ids are identical.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
HELPER = os.path.join(HERE, "genai_helper.py")
VOCAB = 128256


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout[-4000:]}{r.stderr[-4000:]}")
    return r.stdout


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--meshes", default="tp=1,tp=2")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"],
                    help="meshc's weights (onnxruntime-genai's model stays f32; with "
                         "bf16 the ids are not compared, the weights being rounded)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "llama1b_genai"))
    ap.add_argument("--export-python", default=os.path.join(ROOT, ".venv-export", "bin", "python"))
    ap.add_argument("--genai-python", default=os.path.join(ROOT, ".venv-genai", "bin", "python"))
    args = ap.parse_args()

    model_dir = os.path.join(args.out, "model")
    if not os.path.exists(os.path.join(model_dir, "genai_config.json")):
        print(f"writing the model to {model_dir} (the builder, once)", flush=True)
        run([args.export_python, HELPER, "export", model_dir, "--layers", str(args.layers)])

    rows = []
    for batch in [int(b) for b in args.batches.split(",")]:
        rng = np.random.default_rng(batch)
        ids = rng.integers(3, VOCAB, (batch, args.prompt)).astype(np.int64)
        ids_path = os.path.join(args.out, f"prompt_b{batch}.npy")
        np.save(ids_path, ids)
        ref_ids = os.path.join(args.out, f"genai_ids_b{batch}.npy")
        g = json.loads(run([args.genai_python, HELPER, "generate", model_dir,
                            "--prompt-ids", ids_path, "--new-tokens", str(args.new_tokens),
                            "--threads", str(args.threads), "--output-ids", ref_ids]
                           ).strip().splitlines()[-1])
        genai_step = statistics.median(g["step_ms"])
        rows.append((batch, "onnxruntime-genai", g["first_token_ms"], genai_step,
                     percentile(g["step_ms"], 0.99), batch * 1e3 / genai_step, 1.0, "-"))
        print(rows[-1], flush=True)
        want = np.load(ref_ids)
        for mesh in args.meshes.split(","):
            folder = os.path.join(args.out, "exe-" + mesh.replace("=", "").replace(",", "_")
                                  + ("-bf16" if args.dtype == "bf16" else ""))
            # Compiled again each run, so that the folder holds this meshc's runtime.
            if batch == int(args.batches.split(",")[0]):
                shutil.rmtree(folder, ignore_errors=True)
                run([args.meshc, "compile", model_dir, "--mesh", mesh, "--target", "cpu",
                     "-o", folder, "--max-seq", str(args.prompt),
                     "--max-cache", str(args.prompt + args.new_tokens),
                     "--dtype", args.dtype])
            ranks = json.load(open(os.path.join(folder, "manifest.json")))["world_size"]
            out_ids = os.path.join(folder, f"ids_b{batch}.npy")
            out = run([args.meshc, "generate", folder, "--prompt-ids", ids_path,
                       "--max-new-tokens", str(args.new_tokens), "--ignore-eos",
                       "--output-ids", out_ids, "--jsonl",
                       "--threads", str(max(1, args.threads // ranks))])
            lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
            summary = [l["summary"] for l in lines if "summary" in l][0]
            steps = [l["ms"] for l in lines if "summary" not in l and "ms" in l][1:]
            step = statistics.median(steps) if steps else summary["token_latency_p50_ms"]
            got = np.load(out_ids)
            if args.dtype == "bf16":
                same = "not compared (bf16)"
            elif got.shape != want.shape:
                same = f"no (shape {got.shape} vs {want.shape})"
            elif (got == want).all():
                same = "yes"
            else:
                same = f"no ({int((got != want).sum())} of {want.size} differ)"
            rows.append((batch, f"meshc {mesh} ({ranks} x {max(1, args.threads // ranks)})"
                         + (", bf16" if args.dtype == "bf16" else ""),
                         summary["time_to_first_token_ms"], step,
                         percentile(steps, 0.99) if steps else float("nan"),
                         batch * 1e3 / step, step / genai_step, same))
            print(rows[-1], flush=True)

    print()
    print(f"| batch | engine | time to first token | decode ms/step (median) | p99 | "
          f"decode tokens/s | / onnxruntime-genai | same ids |")
    print("|---|---|---|---|---|---|---|---|")
    for b, engine, first, step, p99, tps, ratio, same in rows:
        print(f"| {b} | {engine} | {first:.0f} ms | {step:.1f} | {p99:.1f} | {tps:.1f} | "
              f"{ratio:.2f}x | {same} |")


if __name__ == "__main__":
    main()
