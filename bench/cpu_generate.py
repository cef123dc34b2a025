#!/usr/bin/env python3
"""Benchmark: `meshc generate` on GPT-2-small against onnxruntime's token loop.

Usage: bench/cpu_generate.py --meshc build/bin/meshc [--threads T] [--prompt 128]
                             [--new-tokens 64] [--meshes tp=1,tp=2] [--out DIR]

Builds the graph of models/gpt2_tiny.py at GPT-2-small sizes (12 layers,
d=768, 12 heads, vocabulary 50257; bench/cpu_gpt2.py's model) with dynamic
axes and a KV cache (past_key_values.* in, present.* out), written once to
DIR (default build/bench/gpt2_small_generate/). A prompt of P random tokens
(batch 1) is extended by N greedy tokens:

- by `meshc generate` (one launch; the figures of its --jsonl summary: time
  to first token, decode tokens/s, median time per token), with its KV cache
  written in place, and again with MESHC_KV_CACHE_COPY=1 (the step's present
  copied into the cache buffer each step, as before the in-place cache);
- by a loop over onnxruntime's InferenceSession.run (prefill with an empty
  cache, then one step per token with the presents fed back, as Optimum's
  ORTModelForCausalLM runs it; graph optimisations ORT_ENABLE_ALL, T
  intra-op threads), each step timed.

Threads are matched (meshc: T in all, T/ranks per rank). The generated ids of
meshc and onnxruntime are compared. Prints one markdown row per mesh and
mode, with the ratio of meshc's decode time per token to onnxruntime's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
sys.path.insert(0, HERE)
import gpt2_tiny  # noqa: E402
from cpu_gpt2 import GPT2_SMALL, INIT_SCALE, LAYERS, ScaledRng, ort_session  # noqa: E402
import onnx  # noqa: E402


def write_model(out):
    path = os.path.join(out, "model.onnx")
    if os.path.exists(path):
        print(f"reusing {path}")
        return path
    os.makedirs(out, exist_ok=True)
    for name, value in GPT2_SMALL.items():
        setattr(gpt2_tiny, name, value)
    gpt2_tiny.HD = gpt2_tiny.D // gpt2_tiny.HEADS
    rng = np.random.default_rng(0)
    model = gpt2_tiny.build(LAYERS, 4, ScaledRng(rng, INIT_SCALE), past=4, batch=1,
                            dynamic=True)
    onnx.save(model, path)
    return path


def ort_generate(path, ids, new_tokens, threads):
    """Greedy ids and per-step ms of onnxruntime's loop."""
    session = ort_session(path, threads)
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]
    heads, hd = gpt2_tiny.HEADS, gpt2_tiny.D // gpt2_tiny.HEADS
    cache = {n: np.zeros((1, heads, 0, hd), np.float32) for n in names if n.startswith("past")}
    tokens, times, generated = ids, [], []
    for step in range(new_tokens):
        feeds = {"input_ids": tokens if step == 0 else tokens[:, -1:]}
        feeds.update(cache)
        start = time.perf_counter()
        results = dict(zip(outputs, session.run(None, feeds)))
        token = int(np.argmax(results["logits"][0, -1]))
        times.append((time.perf_counter() - start) * 1e3)
        for n in cache:
            cache[n] = results[n.replace("past_key_values", "present")]
        generated.append(token)
        tokens = np.concatenate([tokens, [[token]]], 1)
    return np.array([generated]), times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--meshes", default="tp=1,tp=2")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "build", "bench",
                                                   "gpt2_small_generate"))
    args = ap.parse_args()

    path = write_model(args.out)
    rng = np.random.default_rng(1)
    ids = rng.integers(0, gpt2_tiny.VOCAB if gpt2_tiny.VOCAB > 1000 else 50257,
                       (1, args.prompt)).astype(np.int64)
    ids_path = os.path.join(args.out, "prompt.npy")
    np.save(ids_path, ids)

    ort_ids, ort_times = ort_generate(path, ids, args.new_tokens, args.threads)
    ort_decode = statistics.median(ort_times[1:])
    print(f"onnxruntime: first token {ort_times[0]:.1f} ms, decode median "
          f"{ort_decode:.2f} ms/token ({1e3 / ort_decode:.1f} tokens/s)")
    print()
    print("| mesh | kv cache | time to first token | decode ms/token (median) | "
          "decode tokens/s | onnxruntime ms/token | ratio | same ids |")
    print("|---|---|---|---|---|---|---|---|")
    for mesh in args.meshes.split(","):
        folder = os.path.join(args.out, "exe-" + mesh.replace("=", "").replace(",", "_"))
        c = subprocess.run([args.meshc, "compile", path, "--mesh", mesh, "-o", folder,
                            "--max-seq", str(args.prompt),
                            "--max-cache", str(args.prompt + args.new_tokens)],
                           capture_output=True, text=True)
        if c.returncode:
            sys.exit(c.stderr)
        ranks = json.load(open(os.path.join(folder, "manifest.json")))["world_size"]
        for mode in ("in_place", "copied"):
            env = dict(os.environ)
            if mode == "copied":
                env["MESHC_KV_CACHE_COPY"] = "1"
            out_ids = os.path.join(folder, "ids.npy")
            g = subprocess.run([args.meshc, "generate", folder, "--prompt-ids", ids_path,
                                "--max-new-tokens", str(args.new_tokens),
                                "--output-ids", out_ids, "--jsonl",
                                "--threads", str(max(1, args.threads // ranks))],
                               capture_output=True, text=True, env=env)
            if g.returncode:
                sys.exit(g.stdout + g.stderr)
            summary = [json.loads(l)["summary"] for l in g.stdout.splitlines()
                       if l.startswith('{"summary"')][0]
            per_token = summary["token_latency_p50_ms"]
            same = np.array_equal(np.load(out_ids), ort_ids)
            print(f"| {mesh} | {summary['kv_cache']} | "
                  f"{summary['time_to_first_token_ms']:.1f} ms | {per_token:.2f} | "
                  f"{summary['decode_tokens_per_s']:.1f} | {ort_decode:.2f} | "
                  f"{per_token / ort_decode:.2f}x | {'yes' if same else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
