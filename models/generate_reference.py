#!/usr/bin/env python3
"""The reference token loop: greedy generation driven by onnxruntime on an
ONNX decoder, as `meshc generate` runs it, for checking its output.

Usage: generate_reference.py MODEL.onnx --prompt-ids P.npy [--attention-mask M.npy]
           --max-new-tokens N --output-ids OUT.npy [--logits OUT.npy]
           [--stop-token ID ...] [--input NAME=FILE ...] [--rows-alone]

The loop is the one Hugging Face's generate and Optimum's ORTModelForCausalLM
run: a prefill step over the prompts (an empty KV cache of length 0, or for a
cache of one of the sliding-window layers genai_config.json lists, zeros of
the window plus the slack it gives, as onnxruntime-genai allocates it), then
one step per token with the presents fed back as the pasts, the mask grown by
a 1 and the position ids derived from the mask (cumsum - 1, 1 on padding). A
model without past inputs reads the whole sequence at every step. A sequence
that produced a stop token repeats it. KV caches are paired by name: the
input `past_key_values.N.key` takes the output `present.N.key` (Optimum's and
onnxruntime-genai's names), or `present_key_values...` where the exporter
wrote that.

--rows-alone generates each row on its own, without its padding, and stacks
the rows: the reference for a padded batch of a model whose padded batch
onnxruntime does not compute as each row alone (GroupQueryAttention, as
onnxruntime-genai's builder writes it: a left-padded row's padding would
sit at negative positions of its cache).

--logits writes the logits of each step's last position [steps, batch,
vocabulary], from which a checker tells a real mismatch from a near tie.
"""
import argparse
import json
import os
import sys

import numpy as np
import onnxruntime as ort


def present_name(past):
    for old, new in (("past_key_values", "present"), ("past_key", "present_key"),
                     ("past_value", "present_value"), ("past", "present")):
        if past.startswith(old):
            return new + past[len(old):]
    return None


def run_loop(session, inputs, outputs, pasts, empty_cache, tokens, mask, max_new_tokens,
             stop_tokens, fixed=None):
    """Greedy generation of a batch: ids [batch, steps] and the logits of
    each step's last position [steps, batch, vocabulary]. `fixed` holds the
    inputs every step reads unchanged (an encoder-decoder's source); the
    tokens, mask and positions are the decoder's where the model has
    `decoder_input_ids`."""
    fixed = fixed or {}
    prefix = "decoder_" if "decoder_input_ids" in inputs else ""
    batch = tokens.shape[0]
    cache = {p: np.repeat(c, batch, 0) for p, c in empty_cache.items()}
    finished = np.zeros(batch, bool)
    generated, logits_seen = [], []
    for step in range(max_new_tokens):
        length = tokens.shape[1]
        news = length if (step == 0 or not pasts) else 1
        feeds = {}
        for name, info in inputs.items():
            dtype = np.int32 if "int32" in info.type else np.int64
            if name in fixed:
                feeds[name] = fixed[name]
            elif name == prefix + "input_ids":
                feeds[name] = tokens[:, length - news:].astype(dtype)
            elif name == prefix + "attention_mask":
                feeds[name] = mask.astype(dtype)
            elif name == prefix + "position_ids":
                positions = np.cumsum(mask, -1) - 1
                positions[mask == 0] = 1
                feeds[name] = positions[:, length - news:].astype(dtype)
            elif name in cache:
                feeds[name] = cache[name]
            else:
                sys.exit(f"cannot supply input {name}")
        results = dict(zip(outputs, session.run(None, feeds)))
        for p in pasts:
            cache[p] = results[present_name(p)]
        last = results["logits"][:, -1, :].astype(np.float32)
        logits_seen.append(last)
        chosen = np.argmax(last, -1)
        chosen = np.where(finished, tokens[:, -1], chosen)
        finished |= np.isin(chosen, stop_tokens)
        generated.append(chosen)
        tokens = np.concatenate([tokens, chosen[:, None]], 1)
        mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], 1)
        if finished.all():
            break
    return np.stack(generated, 1).astype(np.int64), np.stack(logits_seen, 0)


def stack_rows(rows):
    """Rows generated alone as one batch: a row that stopped early repeats
    its last token (and its last logits), as a batch's would."""
    steps = max(ids.shape[1] for ids, _ in rows)
    ids = [np.concatenate([i, np.repeat(i[:, -1:], steps - i.shape[1], 1)], 1) for i, _ in rows]
    logits = [np.concatenate([l, np.repeat(l[-1:], steps - l.shape[0], 0)], 0) for _, l in rows]
    return np.concatenate(ids, 0), np.concatenate(logits, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--attention-mask")
    ap.add_argument("--max-new-tokens", type=int, required=True)
    ap.add_argument("--output-ids", required=True)
    ap.add_argument("--logits")
    ap.add_argument("--stop-token", type=int, action="append", default=[])
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                    help="an input every step reads unchanged (an encoder-decoder's "
                    "source), as meshc generate --input")
    ap.add_argument("--rows-alone", action="store_true",
                    help="generate each row on its own, its padding removed")
    args = ap.parse_args()

    options = ort.SessionOptions()
    options.log_severity_level = 3
    # A weight's DequantizeLinear before a MatMul in f32, as ONNX defines it
    # (onnxruntime would fuse the pair at accuracy level 4: 8-bit activations).
    options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "1")
    session = ort.InferenceSession(args.model, options,
                                   providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    fixed = {}
    for given in args.input:
        name, _, path = given.partition("=")
        fixed[name] = np.load(path)
    # Optimum's cross-attention caches (past_key_values.N.encoder.*) are
    # given, not grown.
    pasts = [n for n in inputs if n.startswith("past") and n not in fixed]
    for p in pasts:
        if present_name(p) not in outputs:
            sys.exit(f"no present output for {p}")

    tokens = np.load(args.prompt_ids).astype(np.int64)
    batch, _ = tokens.shape
    mask = (np.load(args.attention_mask).astype(np.int64)
            if args.attention_mask else np.ones_like(tokens))
    # An empty cache [1, heads, 0, head size], repeated for each row of a
    # batch. onnxruntime-genai's
    # builder leaves the head size symbolic; its genai_config.json gives it.
    config = os.path.join(os.path.dirname(args.model), "genai_config.json")
    decoder = json.load(open(config))["model"]["decoder"] if os.path.exists(config) else {}
    head_size = decoder.get("head_size")
    window = decoder.get("sliding_window", {})
    cache = {}
    for p in pasts:
        shape = list(inputs[p].shape)
        # The layers genai_config.json lists as sliding-window ones.
        layer = p.split(".")[1] if p.count(".") >= 2 else ""
        windowed = layer.isdigit() and int(layer) in window.get("layers", [])
        shape[0] = 1
        shape[2] = window["window_size"] + window.get("cache_slack", 0) if windowed else 0
        for d, size in enumerate(shape):
            if not isinstance(size, int):
                if head_size is None:
                    sys.exit(f"{p}: dimension {d} ('{size}') has no size")
                shape[d] = head_size
        # In the model's own type (an f16 model's caches are f16).
        dtype = np.float16 if inputs[p].type == "tensor(float16)" else np.float32
        cache[p] = np.zeros(shape, dtype)
    if args.rows_alone:
        rows = []
        for b in range(batch):
            kept = mask[b] != 0
            rows.append(run_loop(session, inputs, outputs, pasts, cache, tokens[b:b + 1, kept],
                                 mask[b:b + 1, kept], args.max_new_tokens, args.stop_token))
        ids, logits = stack_rows(rows)
    else:
        ids, logits = run_loop(session, inputs, outputs, pasts, cache, tokens, mask,
                               args.max_new_tokens, args.stop_token, fixed)
    np.save(args.output_ids, ids)
    if args.logits:
        np.save(args.logits, logits)


if __name__ == "__main__":
    main()
