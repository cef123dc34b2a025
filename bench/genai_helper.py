#!/usr/bin/env python3
"""The onnxruntime-genai side of bench/cpu_generate_genai.py, run in the
environments that have it.

  genai_helper.py export OUT [--layers N]
      (in .venv-export: torch, transformers and the builder) builds a
      1B-class decoder of transformers' config class with random weights
      (never downloaded) and writes it with onnxruntime-genai's builder
      (fp32, cpu) to OUT, with a word-level tokenizer of made-up tokens
      (the builder copies one into its output).
  genai_helper.py generate DIR --prompt-ids P.npy --new-tokens N
                  --threads T --output-ids OUT.npy
      (in .venv-genai) times onnxruntime-genai's own generator: greedy, the
      whole batch of prompts at once, exactly N new tokens (the folder's
      stop token is not honoured: max_length = min_length = length + N).
      Prints one JSON line: the time to first token (the prefill and its
      token) and every later step's time in ms.

The 1B-class shapes are Llama-3.2-1B's (d=2048, 32 heads, 8 KV heads, MLP
8192, vocabulary 128256, tied embeddings) with --layers layers (16 in the
original).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def export(args):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, LlamaConfig, PreTrainedTokenizerFast

    torch.manual_seed(0)
    vocab = 128256
    config = LlamaConfig(vocab_size=vocab, hidden_size=2048, intermediate_size=8192,
                         num_hidden_layers=args.layers, num_attention_heads=32,
                         num_key_value_heads=8, max_position_embeddings=4096,
                         rope_theta=500000.0, tie_word_embeddings=True,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32).eval()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(os.path.abspath(args.out))) as src, \
            tempfile.TemporaryDirectory() as cache:
        model.save_pretrained(src)
        del model
        tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", pad_token="t0",
                                bos_token="t1", eos_token="t2").save_pretrained(src)
        subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", src,
                        "-o", args.out, "-p", "fp32", "-e", "cpu", "-c", cache], check=True)


def generate(args):
    import numpy as np
    import onnxruntime_genai as og

    # Threads matched: the decoder session's intra-op threads.
    config_path = os.path.join(args.dir, "genai_config.json")
    config = json.load(open(config_path))
    options = config["model"]["decoder"].setdefault("session_options", {})
    if options.get("intra_op_num_threads") != args.threads:
        options["intra_op_num_threads"] = args.threads
        json.dump(config, open(config_path, "w"), indent=4)

    prompts = np.load(args.prompt_ids).astype(np.int32)
    model = og.Model(args.dir)
    total = prompts.shape[1] + args.new_tokens
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=total, min_length=total, do_sample=False,
                              batch_size=prompts.shape[0])
    generator = og.Generator(model, params)
    start = time.perf_counter()
    generator.append_tokens(prompts)
    generator.generate_next_token()
    first = (time.perf_counter() - start) * 1e3
    rows = [[int(t)] for t in generator.get_next_tokens()]
    steps = []
    while not generator.is_done():
        t0 = time.perf_counter()
        generator.generate_next_token()
        steps.append((time.perf_counter() - t0) * 1e3)
        for row, t in zip(rows, generator.get_next_tokens()):
            row.append(int(t))
    np.save(args.output_ids, np.array(rows, dtype=np.int64))
    print(json.dumps({"first_token_ms": first, "step_ms": steps}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export")
    e.add_argument("out")
    e.add_argument("--layers", type=int, default=16)
    g = sub.add_parser("generate")
    g.add_argument("dir")
    g.add_argument("--prompt-ids", required=True)
    g.add_argument("--new-tokens", type=int, required=True)
    g.add_argument("--threads", type=int, required=True)
    g.add_argument("--output-ids", required=True)
    args = ap.parse_args()
    export(args) if args.command == "export" else generate(args)


if __name__ == "__main__":
    main()
