"""The GPU benchmark's workloads: model shapes, their ONNX files, their work.

Two architectures (ARCHS), each at two steps (STEPS), batch 1:

  prefill  512 new tokens, no KV cache            (the model without past)
  decode   1 new token over a 512-token KV cache  (the cached model, past 512)

write_models() writes both steps of an architecture with the repository's
own generators, the graphs the tests check against onnxruntime:
models/gpt2_tiny.py (GPT-2 as torch.onnx exports it; weights embedded, f32)
and models/llama.py's build() (weights as external data in one weights.bin
that both steps share, f32, written once). Weights are random and seeded;
meshc's --dtype converts them at compile time. The float inputs and outputs
(KV cache, logits) are cast to the benchmark's dtype at the graph's edges
(cast_interface), as a half-precision export's are. Neither generator can
restrict the logits to the last token, so prefill computes (and writes)
512 x vocabulary logits; the PyTorch models do the same.

flops() and traffic() count a step's work analytically (see their
docstrings); nothing here imports torch.
"""
import dataclasses
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # bench/cpu_gpt2.py
sys.path.insert(0, os.path.join(HERE, "..", "..", "models"))
import gpt2_tiny  # noqa: E402
import llama  # noqa: E402
from half_weights import to_bf16_bits  # noqa: E402
from cpu_gpt2 import INIT_SCALE, ScaledRng  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Arch:
    """A decoder's sizes. kind 'gpt2': learned positions, pre-LayerNorm,
    fused QKV with biases, GELU(tanh), lm_head tied to the token embedding;
    kind 'llama': RMSNorm, RoPE, GQA, SwiGLU, untied lm_head (models/llama.py
    has no tying), no biases."""
    key: str
    title: str
    kind: str
    layers: int
    d: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    positions: int = 0  # learned position table (gpt2)

    @property
    def head_dim(self):
        return self.d // self.heads


ARCHS = {
    "gpt2": Arch("gpt2", "GPT-2 small", "gpt2", layers=12, d=768, heads=12, kv_heads=12,
                 ffn=3072, vocab=50257, positions=1024),
    # Llama-3.2-1B's sizes. Its rope theta is 500000 and its embeddings are
    # tied; models/llama.py uses theta 10000 and a separate lm_head (neither
    # changes the work of a step but the lm_head's extra 0.5 GB of weights,
    # which a decode step reads in either case).
    "llama": Arch("llama", "Llama-3.2-1B-shaped", "llama", layers=16, d=2048, heads=32,
                  kv_heads=8, ffn=8192, vocab=128256),
}


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    seq: int   # new tokens
    past: int  # tokens already in the KV cache


STEPS = {"prefill": Step("prefill", seq=512, past=0),
         "decode": Step("decode", seq=1, past=512)}


# ---------------------------------------------------------------------------
# The work of a step
# ---------------------------------------------------------------------------

def matmul_params(arch):
    """Elements of the weight matrices a token multiplies by (lm_head included)."""
    kv = arch.kv_heads * arch.head_dim
    if arch.kind == "gpt2":
        layer = arch.d * 3 * arch.d + arch.d * arch.d + 2 * arch.d * arch.ffn
    else:
        layer = 2 * arch.d * arch.d + 2 * arch.d * kv + 3 * arch.d * arch.ffn
    return arch.layers * layer + arch.d * arch.vocab


def weights_read(arch, step):
    """Elements of the weights one step reads: every matrix, bias and norm
    parameter, the lm_head, and of the embedding tables only the rows the
    step gathers (GPT-2's token table is the tied lm_head, read whole)."""
    if arch.kind == "gpt2":
        small = arch.layers * (3 * arch.d + arch.d + arch.ffn + arch.d + 4 * arch.d) + 2 * arch.d
        rows = step.seq * arch.d  # position rows
    else:
        small = arch.layers * 2 * arch.d + arch.d
        rows = step.seq * arch.d  # token rows of the untied embedding
    return matmul_params(arch) + small + rows


def model_weights(arch):
    """Elements of all the model's weights (what the GPU holds)."""
    if arch.kind == "gpt2":
        return weights_read(arch, Step("", 0, 0)) + arch.positions * arch.d
    return weights_read(arch, Step("", 0, 0)) + arch.vocab * arch.d


def flops(arch, step):
    """2 per multiply-add: every token through every weight matrix (the
    lm_head on all `seq` tokens, as the models compute it), plus attention's
    QK^T and PV over the keys each query sees (causal: query i of the step
    sees past + i + 1 keys; the masked half of a prefill is not counted)."""
    visible = step.seq * step.past + step.seq * (step.seq + 1) // 2
    attention = arch.layers * 2 * 2 * arch.heads * arch.head_dim * visible
    return 2 * step.seq * matmul_params(arch) + attention


def traffic(arch, step, elem):
    """Bytes a step must move at least, at `elem` bytes per element: the
    weights it reads (weights_read), the KV cache it reads, the keys and
    values it appends, and the logits it writes. Activations between kernels
    are not counted, so GB/s figures are effective bandwidths."""
    kv_token = arch.layers * 2 * arch.kv_heads * arch.head_dim
    return elem * (weights_read(arch, step) + kv_token * (step.past + step.seq)
                   + step.seq * arch.vocab)


# ---------------------------------------------------------------------------
# ONNX models
# ---------------------------------------------------------------------------

class ExternalWeights:
    """models/llama.py's weight supplier: seeded random f32 initializers as
    external-data references into `directory`/weights.bin, with
    models/llama.py's scales (norms 1 + 0.1 N, matrices N / sqrt(rows)).
    Written as they are added when `write`; otherwise only laid out, for a
    weights.bin an earlier build of the same architecture wrote (every build
    adds the same names in the same order, whatever the step)."""

    FILE = "weights.bin"

    def __init__(self, directory, write, seed=0):
        self.path = os.path.join(directory, self.FILE)
        self.rng = np.random.default_rng(seed)
        self.file = open(self.path, "wb") if write else None
        self.layout = {}  # name -> (offset, length)
        self.offset = 0
        self.tensors = []

    def model(self, build):
        """build(self) with a fresh list of initializers."""
        self.tensors = []
        return build(self)

    def add(self, name, shape, norm=False):
        if name not in self.layout:
            length = 4 * int(np.prod(shape))
            if self.file:
                values = self.rng.standard_normal(shape, dtype=np.float32)
                if norm:
                    values = 1 + np.float32(0.1) * values
                else:
                    values *= np.float32(1 / np.sqrt(shape[0]))
                self.file.write(values.tobytes())
            self.layout[name] = (self.offset, length)
            self.offset += length
        offset, length = self.layout[name]
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.FILE), ("offset", str(offset)),
                           ("length", str(length))):
            t.external_data.add(key=key, value=value)
        self.tensors.append(t)
        return name

    def close(self):
        if self.file:
            self.file.close()
        elif os.path.getsize(self.path) != self.offset:
            sys.exit(f"bench: {self.path} does not hold the weights of this architecture; "
                     f"remove it")


ONNX_TYPES = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16,
              "bf16": TensorProto.BFLOAT16}


def cast_interface(model, dtype):
    """The model with its float inputs and outputs (KV cache, logits) of
    `dtype`, cast to and from the f32 graph at its edges, as a half-precision
    export's interface is. `meshc compile --dtype` keeps a model's interface
    types, so an f32 KV cache would cost a decode step casts and twice the
    cache bytes that PyTorch's f16 step moves; with the interface in the
    compute dtype, the casts cancel."""
    if dtype == "f32":
        return model
    graph, to = model.graph, ONNX_TYPES[dtype]

    def rename(old, new, outputs):
        for n in graph.node:
            fields = (n.input, n.output) if outputs else (n.input,)
            for field in fields:
                for i, x in enumerate(field):
                    if x == old:
                        field[i] = new

    head, tail = [], []
    for value in graph.input:
        t = value.type.tensor_type
        if t.elem_type == TensorProto.FLOAT:
            t.elem_type = to
            rename(value.name, value.name + ".f32", outputs=False)
            head.append(helper.make_node("Cast", [value.name], [value.name + ".f32"],
                                         name=f"/interface/{value.name}", to=TensorProto.FLOAT))
    for value in graph.output:
        t = value.type.tensor_type
        if t.elem_type == TensorProto.FLOAT:
            t.elem_type = to
            rename(value.name, value.name + ".f32", outputs=True)
            tail.append(helper.make_node("Cast", [value.name + ".f32"], [value.name],
                                         name=f"/interface/{value.name}", to=to))
    nodes = head + list(graph.node) + tail
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def _gpt2(arch, step, seed):
    """models/gpt2_tiny.py's graph at `arch`'s sizes, with GPT-2's 0.02
    initialisation scale (as bench/cpu_gpt2.py builds GPT-2 small)."""
    assert arch.ffn == 4 * arch.d, "models/gpt2_tiny.py's MLP is 4 x d wide"
    gpt2_tiny.D, gpt2_tiny.HEADS, gpt2_tiny.HD = arch.d, arch.heads, arch.head_dim
    gpt2_tiny.VOCAB, gpt2_tiny.MAX_POS = arch.vocab, arch.positions
    rng = ScaledRng(np.random.default_rng(seed), INIT_SCALE)
    return gpt2_tiny.build(arch.layers, step.seq, rng, past=step.past, batch=1)


def _llama_config(arch, step):
    return llama.Config(layers=arch.layers, d=arch.d, heads=arch.heads, kv_heads=arch.kv_heads,
                        ffn=arch.ffn, vocab=arch.vocab, seq=step.seq, past=step.past, batch=1)


def write_models(arch, steps, directory, interface, seed=0):
    """Writes directory/<step>.<interface>.onnx for each step (the interface
    dtype: cast_interface), and for llama the weights.bin they share, unless
    there from an earlier run for the same sizes and seed (stamp.json).
    Returns {step name: model path}."""
    os.makedirs(directory, exist_ok=True)
    paths = {s.name: os.path.join(directory, f"{s.name}.{interface}.onnx") for s in steps}
    stamp_path = os.path.join(directory, "stamp.json")
    stamp = {"arch": dataclasses.asdict(arch), "seed": seed, "format": 2}
    fresh = True
    if os.path.exists(stamp_path):
        with open(stamp_path) as f:
            fresh = json.load(f) != stamp
    if arch.kind == "llama" and not os.path.exists(os.path.join(directory, ExternalWeights.FILE)):
        fresh = True
    if fresh:  # other sizes: nothing there is of use
        for name in os.listdir(directory):
            if name.endswith(".onnx") or name == ExternalWeights.FILE:
                os.remove(os.path.join(directory, name))
        if os.path.exists(stamp_path):
            os.remove(stamp_path)
    missing = [s for s in steps if not os.path.exists(paths[s.name])]
    if not missing:
        print(f"bench: reusing the {arch.title} models in {directory}", flush=True)
    weights = None
    if missing and arch.kind == "llama":
        weights = ExternalWeights(directory, write=fresh, seed=seed)
    for s in missing:
        if weights is None:
            model = _gpt2(arch, s, seed)
        else:
            model = weights.model(lambda w, s=s: llama.build(_llama_config(arch, s), w))
        model = cast_interface(model, interface)
        with open(paths[s.name] + ".part", "wb") as f:
            f.write(model.SerializeToString())
        os.replace(paths[s.name] + ".part", paths[s.name])
        print(f"bench: wrote {paths[s.name]} ({len(model.graph.node)} nodes)", flush=True)
    if weights is not None:
        weights.close()
    with open(stamp_path, "w") as f:
        json.dump(stamp, f, indent=1)
    return paths


# The manifest's dtype names (runtime/include/meshc/runtime/dtype.h); BF16
# travels in .npy files as its uint16 bits, as the runtime reads and writes it.
NUMPY_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64,
                "I32": np.int32, "BOOL": np.bool_}


def from_npy(value, dtype):
    """A .npy array of manifest dtype `dtype` as numbers (BF16 bits widened)."""
    if dtype == "BF16":
        return (value.astype(np.uint32) << 16).view(np.float32)
    return value


def write_inputs(manifest, vocab, directory, seed=0):
    """One .npy per input of a compiled model's manifest, in the dtype and
    shape it declares: token ids uniform over the vocabulary, anything else
    (the KV cache) standard normal. Returns ['NAME=FILE', ...]."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    args = []
    for entry in manifest["inputs"]:
        name, shape, dtype = entry["name"], entry["shape"], entry["dtype"]
        if dtype not in NUMPY_DTYPES:
            sys.exit(f"bench: input {name} has dtype {dtype}, which this script cannot write")
        if any(n < 0 for n in shape):
            sys.exit(f"bench: input {name} has a symbolic shape {shape}; the benchmark's "
                     f"models are static")
        if dtype.startswith("I"):
            value = rng.integers(0, vocab, shape).astype(NUMPY_DTYPES[dtype])
        elif dtype == "BF16":
            value = to_bf16_bits(rng.standard_normal(shape, dtype=np.float32))
        else:
            value = rng.standard_normal(shape, dtype=np.float32).astype(NUMPY_DTYPES[dtype])
        path = os.path.join(directory, f"{name}.npy")
        np.save(path, value)
        args.append(f"{name}={path}")
    return args
