#!/usr/bin/env python3
"""Checks that bench/gpu/torch_ref.py's PyTorch models compute the ONNX models' function.

Usage: bench/gpu/check_reference.py [--out DIR]

For both architectures at small sizes (2 layers, d=64) and both steps (8
tokens; 1 token over an 8-token cache), writes the ONNX models as the
benchmark does (workloads.write_models, f32 interface), loads their weights
into torch_ref's modules (on the CPU, in f32), and compares the logits with
onnxruntime's for the same tokens and cache. Prints the largest difference
per step; exits 1 if one exceeds 1e-4. Needs torch (a CPU build will do),
onnx, onnxruntime and numpy.
"""
import argparse
import dataclasses
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_ref  # noqa: E402
import workloads  # noqa: E402

SMALL = dict(layers=2, d=64, heads=4, ffn=256, vocab=100)
STEPS = [workloads.Step("prefill", seq=8, past=0), workloads.Step("decode", seq=1, past=8)]
# torch_ref parameter name -> ONNX initializer name; matrices are stored
# [in, out] in ONNX and [out, in] in nn.Linear.
GPT2_LAYER = {"ln_1": "ln_1", "ln_2": "ln_2", "c_attn": "attn.c_attn",
              "attn_proj": "attn.c_proj", "c_fc": "mlp.c_fc", "mlp_proj": "mlp.c_proj"}
LLAMA_LAYER = ("q", "k", "v", "o", "gate", "up", "down")


def initializers(path):
    model = onnx.load(path)
    return {t.name: torch.from_numpy(numpy_helper.to_array(t, os.path.dirname(path)).copy())
            for t in model.graph.initializer}


def state_dict(arch, w):
    """torch_ref's parameters from the ONNX initializers `w`."""
    if arch.kind == "gpt2":
        sd = {"wte.weight": w["wte"], "wpe.weight": w["wpe"],
              "ln_f.weight": w["ln_f.weight"], "ln_f.bias": w["ln_f.bias"]}
        for i in range(arch.layers):
            for mine, theirs in GPT2_LAYER.items():
                weight = w[f"h.{i}.{theirs}.weight"]
                sd[f"blocks.{i}.{mine}.weight"] = weight if mine.startswith("ln") else weight.T
                sd[f"blocks.{i}.{mine}.bias"] = w[f"h.{i}.{theirs}.bias"]
        return sd
    sd = {"embed.weight": w["embed"], "final_norm.weight": w["final_norm"],
          "lm_head.weight": w["lm_head"].T}
    for i in range(arch.layers):
        for norm in ("input_norm", "post_norm"):
            sd[f"blocks.{i}.{norm}.weight"] = w[f"layers.{i}.{norm}"]
        for name in LLAMA_LAYER:
            sd[f"blocks.{i}.{name}.weight"] = w[f"layers.{i}.{name}"].T
    return sd


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench/gpu-check")
    args = ap.parse_args()
    worst = 0.0
    for key, kv_heads in (("gpt2", 4), ("llama", 2)):
        arch = dataclasses.replace(workloads.ARCHS[key], kv_heads=kv_heads, **SMALL,
                                   positions=64 if key == "gpt2" else 0)
        paths = workloads.write_models(arch, STEPS, os.path.join(args.out, key), "f32")
        modules = torch_ref.build(arch, STEPS, torch.float32, device="cpu")
        model = modules[STEPS[0].name].model  # the steps share it
        model.load_state_dict({k: v.contiguous() for k, v in
                               state_dict(arch, initializers(paths[STEPS[0].name])).items()},
                              strict=False)
        rng = np.random.default_rng(1)
        for step in STEPS:
            session = ort.InferenceSession(paths[step.name], providers=["CPUExecutionProvider"])
            feeds = {"input_ids": rng.integers(0, arch.vocab, (1, step.seq)).astype(np.int64)}
            for value in session.get_inputs()[1:]:
                feeds[value.name] = rng.standard_normal(value.shape).astype(np.float32)
            expected = session.run(["logits"], feeds)[0]
            module = modules[step.name]
            if module.cache is not None:  # the same past in the cache's first positions
                for i in range(arch.layers):
                    for j, kind in enumerate(("key", "value")):
                        module.cache.kv[i, j, :, :, :step.past] = torch.from_numpy(
                            feeds[f"past_key_values.{i}.{kind}"])
            with torch.no_grad():
                got = module(torch.from_numpy(feeds["input_ids"])).numpy()
            diff = float(np.abs(got - expected).max())
            worst = max(worst, diff)
            print(f"{arch.title} {step.name}: largest difference from onnxruntime {diff:.2e} "
                  f"(logits up to {np.abs(expected).max():.2f})")
    if worst > 1e-4:
        sys.exit("check_reference: the PyTorch models differ from the ONNX models")


if __name__ == "__main__":
    main()
