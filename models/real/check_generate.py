#!/usr/bin/env python3
"""Checks `meshc generate` on the decoders of the real-model corpus against
the reference token loop on onnxruntime (models/generate_reference.py):
greedy generation from a left-padded batch of two prompts, compiled without
size flags for each mesh. For onnxruntime-genai's exports the reference
generates each prompt alone, its padding removed (`--rows-alone`): their
GroupQueryAttention puts a left-padded row's padding at negative cache
positions, which onnxruntime reads unchecked (its padded batch, and
onnxruntime-genai's, differ from each row alone after the first token) and
meshc drops.

Usage: check_generate.py --meshc build/bin/meshc --corpus models/real/corpus
                         [--mesh tp=1,tp=2,pp=2,dp=2,dp=2xtp=2] [--only NAME,...]
                         [--new-tokens N] [--sampling] [--kind all|cache|no-cache|seq2seq]
                         [--allow-failures] [--genai-python PYTHON]

Prints one line per (export, mesh): `generate ok (B x N tokens, kv cache in
place)` (`kv cache copied` where an attention could not append to the cache
itself, `no kv cache` for exports without past inputs, where every step
reads the whole sequence), a mismatch naming the sequence and step, or the first
line of meshc's error. An export that holds only at the shapes it was traced
with (index.json's `traced_shapes_only`, where onnxruntime fails on a longer
prompt: TorchScript's JetMoE) is skipped with a line saying so. The ids must be identical to onnxruntime's, except
after a near tie: where meshc took another token than onnxruntime and the
two have the same logit in onnxruntime's step within 1e-4 + 1e-3 * |logit|
(the tolerance of every numerical check against onnxruntime), the line says
`tie at step T` and the sequence is not compared further, since the two
loops then continue from different tokens.

--genai-python PYTHON also runs onnxruntime-genai's own generator
(models/genai_reference.py, in the environment of that Python, which has
onnxruntime-genai) on each export the onnxruntime-genai builder wrote, and
requires meshc's greedy ids to be identical to it: the line adds
`onnxruntime-genai identical`. The reference loop of those exports then runs
in that Python too (the onnxruntime they are written for), as does that of an
export the pinned onnxruntime rejects as invalid (torch.onnx's opset-23
RMSNormalization with a scale of the input's whole shape, which the
exporters' newer onnxruntime runs and wrote the references with).

The decoders of encoder-decoders (`--kind seq2seq`: exports with
`decoder_input_ids`, or Optimum's decoder parts reading the encoder's
states) generate from the export's own decoder tokens, one sequence per
source, over the export's inputs that every step reads unchanged (the
source, Optimum's encoder states and cross-attention caches), given to
meshc generate and to the reference as `--input`. An export whose
export.json has `input_values` (Optimum's merged decoder:
use_cache_branch) is compiled with `--input-value` for them; the reference
loop reads those inputs from the export's. An f16 export is compiled with
`--dtype f32` (the cpu target computes in f32); its ids are compared with
onnxruntime's loop in f16 as any other's.

--sampling also runs each case with --temperature 0.8 --top-k 20 --top-p 0.9
--seed 7 twice and checks that both runs and every mesh draw the same ids.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ATOL, RTOL = 1e-4, 1e-3
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "generate_reference.py")
GENAI_REFERENCE = os.path.join(HERE, "..", "genai_reference.py")
sys.path.insert(0, HERE)
from check_corpus import export_flags, first_error  # noqa: E402



def genai_on_cpu(folder):
    """Whether onnxruntime-genai's config runs the model on the cpu (the
    builder's fp16 build names the cuda provider, which this machine lacks)."""
    config = json.load(open(os.path.join(folder, "genai_config.json")))
    options = config["model"]["decoder"]["session_options"].get("provider_options", [])
    return not any("cuda" in entry for entry in options)

def prompts(vocab, padded):
    rng = np.random.default_rng(1234)
    ids = rng.integers(3, vocab, size=(2, 6)).astype(np.int64)
    mask = np.ones_like(ids)
    if padded:
        mask[1, :2] = 0  # the second prompt is 4 tokens, left-padded
        ids[1, :2] = 0
    return ids, mask


def compare(got, ref, logits):
    """None when equal (or equal up to a tie), else the mismatch."""
    notes = []
    for b in range(ref.shape[0]):
        for t in range(ref.shape[1]):
            if t >= got.shape[1]:
                return f"sequence {b}: meshc stopped after {got.shape[1]} steps, onnxruntime ran {ref.shape[1]}"
            if got[b, t] == ref[b, t]:
                continue
            if not np.isfinite(logits[t, b]).all():
                # onnxruntime's own logits are NaN: nothing to compare with.
                notes.append(f"onnxruntime's logits not finite from sequence {b} step {t}, not compared")
                break
            top = float(logits[t, b, ref[b, t]])
            other = float(logits[t, b, got[b, t]])
            if top - other <= ATOL + RTOL * abs(top):
                notes.append(f"tie at step {t}")
                break
            return (f"sequence {b} step {t}: meshc took {got[b, t]}, onnxruntime {ref[b, t]} "
                    f"(logits {other:.6g} and {top:.6g})")
    if not notes and got.shape[1] != ref.shape[1]:
        return f"sequence 0: meshc ran {got.shape[1]} steps, onnxruntime {ref.shape[1]}"
    return ", ".join(notes) if notes else ""


def input_flags(folder, names):
    """`--input NAME=FILE` for each of `names`, from the export's inputs."""
    return [a for n in names
            for a in ("--input", f"{n}={os.path.join(folder, 'inputs', n + '.npy')}")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshc", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--mesh", default="tp=1,tp=2,pp=2,dp=2,dp=2xtp=2")
    ap.add_argument("--only", default="")
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--sampling", action="store_true")
    ap.add_argument("--kind", choices=["all", "cache", "no-cache", "seq2seq"], default="all",
                    help="only the decoders with a KV cache (Optimum, onnxruntime-genai), "
                         "only those without, or only the decoders of encoder-decoders")
    ap.add_argument("--allow-failures", action="store_true")
    ap.add_argument("--genai-python", default="",
                    help="a Python with onnxruntime-genai: compare its generator's "
                         "greedy ids too, on the onnxruntime-genai exports")
    args = ap.parse_args()

    index = json.load(open(os.path.join(args.corpus, "index.json")))
    only = set(filter(None, args.only.split(",")))
    meshes = [m.replace("x", ",") for m in args.mesh.split(",")]
    work = tempfile.mkdtemp(prefix="meshc-generate-")
    failed = total = 0
    try:
        for name in sorted(os.listdir(args.corpus)):
            folder = os.path.join(args.corpus, name)
            model = os.path.join(folder, "model.onnx")
            if (only and name not in only) or not os.path.isfile(model):
                continue
            if not os.path.isdir(os.path.join(folder, "reference")) or \
                    not os.path.exists(os.path.join(folder, "reference", "logits.npy")) or \
                    index.get(name, {}).get("status") != "ok":
                continue  # not a decoder (BERT), or an export that failed
            # An encoder-decoder (exported whole, or Optimum's decoder of
            # one): the decoder generates from the export's own decoder
            # tokens, over the export's source (and Optimum's encoder
            # states and cross-attention caches), which every step reads
            # unchanged (meshc generate --input).
            given = [f[:-4] for f in os.listdir(os.path.join(folder, "inputs"))]
            seq2seq = any(n in given for n in ("decoder_input_ids", "encoder_hidden_states",
                                                "encoder_attention_mask")) or \
                any(".encoder." in n for n in given)
            has_cache = any(n.startswith("past") for n in given)
            if (args.kind == "seq2seq") != seq2seq and args.kind != "all":
                continue
            if (args.kind == "cache" and not has_cache) or (args.kind == "no-cache" and has_cache):
                continue
            if index.get(name, {}).get("traced_shapes_only"):
                # The exporter baked the trace's shapes into the graph
                # (onnxruntime fails on other prompt lengths too).
                print(f"{name}: skipped (the export holds only at its traced shapes: "
                      f"{index[name]['traced_shapes_only'][:120]})", flush=True)
                continue
            vocab = np.load(os.path.join(folder, "reference", "logits.npy")).shape[-1]
            # onnxruntime-genai's GroupQueryAttention places a prompt's
            # tokens from the left of its row (seqlens_k), so a left-padded
            # row's padding falls at negative positions: meshc drops it,
            # onnxruntime reads there unchecked. The reference for these
            # exports generates each row alone, its padding removed.
            genai = os.path.exists(os.path.join(folder, "genai_config.json"))
            if seq2seq:
                # The export's own decoder tokens, one sequence per source.
                tokens = "decoder_input_ids" if "decoder_input_ids" in given else "input_ids"
                ids = np.load(os.path.join(folder, "inputs", f"{tokens}.npy")).astype(np.int64)
                mask = np.ones_like(ids)
            else:
                # A model that takes no attention mask (RWKV) cannot be
                # given padded prompts: two of one length.
                ids, mask = prompts(vocab, padded="attention_mask" in given)
            case = os.path.join(work, name)
            os.makedirs(case)
            np.save(os.path.join(case, "ids.npy"), ids)
            np.save(os.path.join(case, "mask.npy"), mask)
            ref_ids, ref_logits = os.path.join(case, "ref.npy"), os.path.join(case, "ref_logits.npy")
            reference = None
            genai_ids = None
            sampled = {}
            # Inputs fixed at compile time (Optimum's merged decoder's
            # use_cache_branch): meshc compile --input-value; the reference
            # loop reads them from the export's inputs. An f16 export is
            # compiled with --dtype f32.
            value_flags, values = export_flags(folder)
            # onnxruntime's loop runs the export, or the same build in a form
            # its cpu provider takes (reference_model/: GroupQueryAttention's
            # fused Q/K norms as nodes).
            reference_model = os.path.join(folder, "reference_model", "model.onnx")
            if not os.path.exists(reference_model):
                reference_model = model
            value_inputs = input_flags(folder, sorted(values))
            for mesh in meshes:
                total += 1
                label = f"{name} [{mesh.replace(',', 'x')}]"
                out = os.path.join(case, mesh.replace(",", "_").replace("=", ""))
                c = subprocess.run([args.meshc, "compile", model, "--mesh", mesh, "-o", out]
                                   + value_flags, capture_output=True, text=True)
                if c.returncode:
                    print(f"{label}: {first_error(c.stderr)}")
                    failed += 1
                    continue
                section = json.load(open(os.path.join(out, "manifest.json")))["generate"]
                cached = bool(section.get("cache"))
                fixed = input_flags(folder, section.get("fixed_inputs", []))
                # meshc generate stops at the ids the model's folder declares;
                # so does the reference.
                stops = [str(t) for t in section.get("stop_tokens", [])]
                got_path = os.path.join(out, "ids.npy")
                g = subprocess.run([args.meshc, "generate", out, "--prompt-ids",
                                    os.path.join(case, "ids.npy"), "--attention-mask",
                                    os.path.join(case, "mask.npy"), "--max-new-tokens",
                                    str(args.new_tokens), "--output-ids", got_path,
                                    "--threads", "1", "--jsonl"] + fixed,
                                   capture_output=True, text=True)
                if g.returncode:
                    print(f"{label}: {first_error(g.stderr + g.stdout)}")
                    failed += 1
                    continue
                if reference is None:
                    # onnxruntime-genai's exports are written for the
                    # onnxruntime it ships (sliding_window_cache is unknown
                    # to the pinned one): their loop runs there when given.
                    # So do exports the pinned onnxruntime rejects (torch.onnx's
                    # RMSNormalization-23 with a scale of the input's shape):
                    # their reference came from the exporters' newer one.
                    python = args.genai_python if genai and args.genai_python else sys.executable
                    def reference_loop(python):
                        return subprocess.run(
                            [python, REFERENCE, reference_model, "--prompt-ids",
                             os.path.join(case, "ids.npy"), "--attention-mask",
                             os.path.join(case, "mask.npy"), "--max-new-tokens",
                             str(args.new_tokens), "--output-ids", ref_ids,
                             "--logits", ref_logits] + fixed + value_inputs +
                            [a for t in stops for a in ("--stop-token", t)] +
                            (["--rows-alone"] if genai else []),
                            capture_output=True, text=True)
                    r = reference_loop(python)
                    if r.returncode and args.genai_python and python != args.genai_python \
                            and "INVALID_ARGUMENT" in r.stderr:
                        r = reference_loop(args.genai_python)
                    if r.returncode:
                        print(f"{label}: reference loop failed: {first_error(r.stderr)}")
                        failed += 1
                        continue
                    reference = (np.load(ref_ids), np.load(ref_logits))
                ref, logits = reference
                got = np.load(got_path)
                verdict = compare(got, ref, logits)
                summary = [json.loads(l)["summary"] for l in g.stdout.splitlines()
                           if l.startswith('{"summary"')]
                mode = summary[0]["kv_cache"] if summary else "?"
                kind = {"in_place": "kv cache in place", "copied": "kv cache copied",
                        "none": "no kv cache"}.get(mode, mode)
                if verdict is not None and not verdict.startswith("sequence"):
                    line = f"{label}: generate ok ({got.shape[0]} x {got.shape[1]} tokens, {kind}" + \
                        (f"; {verdict})" if verdict else ")")
                else:
                    line = f"{label}: generate mismatch: {verdict}"
                    failed += 1
                if genai and args.genai_python and not genai_on_cpu(folder):
                    line += "; onnxruntime-genai not run (its config asks for the cuda provider)"
                elif genai and args.genai_python and \
                        not line.startswith(f"{label}: generate mismatch"):
                    if genai_ids is None:
                        path = os.path.join(case, "genai.npy")
                        r = subprocess.run([args.genai_python, GENAI_REFERENCE, folder,
                                            "--prompt-ids", os.path.join(case, "ids.npy"),
                                            "--attention-mask", os.path.join(case, "mask.npy"),
                                            "--max-new-tokens", str(args.new_tokens),
                                            "--output-ids", path],
                                           capture_output=True, text=True)
                        genai_ids = np.load(path) if r.returncode == 0 else first_error(r.stderr)
                    if isinstance(genai_ids, str):
                        line += f"; onnxruntime-genai failed: {genai_ids}"
                        failed += 1
                    elif np.array_equal(got, genai_ids):
                        line += "; onnxruntime-genai identical"
                    else:
                        line += (f"; onnxruntime-genai mismatch: meshc {got.tolist()}, "
                                 f"onnxruntime-genai {genai_ids.tolist()}")
                        failed += 1
                if args.sampling:
                    draws = []
                    for _ in range(2):
                        path = os.path.join(out, f"sampled{len(draws)}.npy")
                        s = subprocess.run([args.meshc, "generate", out, "--prompt-ids",
                                            os.path.join(case, "ids.npy"), "--attention-mask",
                                            os.path.join(case, "mask.npy"), "--max-new-tokens",
                                            str(args.new_tokens), "--output-ids", path,
                                            "--temperature", "0.8", "--top-k", "20",
                                            "--top-p", "0.9", "--seed", "7", "--threads", "1"]
                                           + fixed,
                                           capture_output=True, text=True)
                        draws.append(np.load(path) if s.returncode == 0 else None)
                    if draws[0] is None or draws[1] is None or not np.array_equal(draws[0], draws[1]):
                        line += "; sampling not reproducible across runs"
                        failed += 1
                    else:
                        sampled[mesh] = draws[0]
                        first = next(iter(sampled.values()))
                        if not np.array_equal(first, draws[0]):
                            line += "; sampling differs from the first mesh's"
                            failed += 1
                        else:
                            line += "; sampling reproducible"
                print(line, flush=True)
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"generate: {total} cases; ok: {total - failed}, failed: {failed}")
    return 0 if failed == 0 or args.allow_failures else 1


if __name__ == "__main__":
    sys.exit(main())
