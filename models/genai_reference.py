#!/usr/bin/env python3
"""Greedy generation by onnxruntime-genai's own generator, for checking
`meshc generate` on a folder the onnxruntime-genai builder wrote.

Usage: genai_reference.py MODEL_DIR --prompt-ids P.npy [--attention-mask M.npy]
                          --max-new-tokens N --output-ids OUT.npy

Runs in the environment scripts/bootstrap.sh makes for it (.venv-genai:
onnxruntime-genai pins its own onnxruntime, newer than the test
environment's). Each prompt row (int64 [batch, length]) is generated on its
own, without the positions --attention-mask pads (onnxruntime-genai's own
padded batch is no reference: its GroupQueryAttention places a left-padded
row's padding at negative cache positions), with the search options of the
folder's genai_config.json except greedy and max_length = the row's length
+ N; generation stops at the folder's eos_token_id, as meshc generate's
does by default. OUT.npy is int64 [batch, N]: a sequence that stopped
repeats its stop token, as meshc writes it (and is cut to the longest
sequence, as meshc ends when every sequence stopped).
"""
import argparse

import numpy as np
import onnxruntime_genai as og


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--attention-mask")
    ap.add_argument("--max-new-tokens", type=int, required=True)
    ap.add_argument("--output-ids", required=True)
    args = ap.parse_args()

    prompts = np.load(args.prompt_ids)
    mask = np.load(args.attention_mask) if args.attention_mask else np.ones_like(prompts)
    model = og.Model(args.model_dir)
    rows = []
    for prompt, keep in zip(prompts, mask):
        prompt = prompt[keep != 0]
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt) + args.max_new_tokens,
                                  do_sample=False)
        generator = og.Generator(model, params)
        generator.append_tokens(prompt.astype(np.int32)[None, :])
        row = []
        while not generator.is_done():
            generator.generate_next_token()
            row.append(int(generator.get_next_tokens()[0]))
        rows.append(row)
    steps = max(len(r) for r in rows)
    out = np.array([r + [r[-1]] * (steps - len(r)) for r in rows], dtype=np.int64)
    np.save(args.output_ids, out)


if __name__ == "__main__":
    main()
