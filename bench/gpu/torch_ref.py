"""The PyTorch side of the GPU benchmark: the same models in eager PyTorch
and under torch.compile, the GPU's measured peaks, and CUDA-event timing.

The modules mirror the ONNX graphs of models/gpt2_tiny.py and
models/llama.py op for op (what the graphs compute, not their exporter
spelling): GPT-2 with learned positions, pre-LayerNorm, one fused QKV linear
with bias, GELU(tanh), causal attention and an lm_head tied to the token
embedding; Llama with RMSNorm (computed in f32, as Hugging Face's), rotate-half
RoPE (theta 10000, as models/llama.py), GQA, SwiGLU and an untied lm_head.
Attention is torch.nn.functional.scaled_dot_product_attention (GQA through
enable_gqa where this torch has it, else Hugging Face's repeat_kv). Like the
ONNX models, a step returns the logits of every token it is given.

A decode step writes its token's keys and values into a preallocated cache
(a module buffer of past + 1 positions, random like meshc's cache input)
and attends over all past + 1 positions; meshc's graph instead receives the
past as an input and returns the concatenation (present.*). Weights are
random (the comparison is of speed); nothing reads the ONNX files.

Importing this module imports torch: bench.py does so only when it runs.
"""
import statistics

import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
_GQA = tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 5)


def attention(q, k, v, causal):
    """SDPA over [batch, heads, tokens, head_dim]; k and v may have fewer
    (kv) heads than q."""
    if k.shape[1] != q.shape[1]:
        if _GQA:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        rep = q.shape[1] // k.shape[1]
        k, v = (t.repeat_interleave(rep, dim=1) for t in (k, v))
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class KVCache(nn.Module):
    """Per layer keys and values [layers, 2, batch, kv_heads, past + seq,
    head_dim]; a step writes positions past .. past + seq and reads 0 ..
    past + seq."""

    def __init__(self, layers, kv_heads, head_dim, past, seq):
        super().__init__()
        self.past, self.seq = past, seq
        self.register_buffer("kv", torch.randn(layers, 2, 1, kv_heads, past + seq, head_dim))

    def update(self, layer, k, v):
        end = self.past + self.seq
        self.kv[layer, 0, :, :, self.past:end] = k
        self.kv[layer, 1, :, :, self.past:end] = v
        return self.kv[layer, 0, :, :, :end], self.kv[layer, 1, :, :, :end]


class GPT2Block(nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.heads, self.hd = arch.heads, arch.head_dim
        self.ln_1, self.ln_2 = nn.LayerNorm(arch.d), nn.LayerNorm(arch.d)
        self.c_attn = nn.Linear(arch.d, 3 * arch.d)
        self.attn_proj = nn.Linear(arch.d, arch.d)
        self.c_fc = nn.Linear(arch.d, arch.ffn)
        self.mlp_proj = nn.Linear(arch.ffn, arch.d)

    def forward(self, h, layer, cache):
        b, s, d = h.shape
        q, k, v = self.c_attn(self.ln_1(h)).view(b, s, 3, self.heads, self.hd).permute(
            2, 0, 3, 1, 4)
        if cache is not None:
            k, v = cache.update(layer, k, v)
        y = attention(q, k, v, causal=cache is None)
        h = h + self.attn_proj(y.transpose(1, 2).reshape(b, s, d))
        return h + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(h)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.wte = nn.Embedding(arch.vocab, arch.d)
        self.wpe = nn.Embedding(arch.positions, arch.d)
        self.blocks = nn.ModuleList(GPT2Block(arch) for _ in range(arch.layers))
        self.ln_f = nn.LayerNorm(arch.d)

    def forward(self, ids, past, cache):
        h = self.wte(ids) + self.wpe.weight[past:past + ids.shape[1]]
        for i, block in enumerate(self.blocks):
            h = block(h, i, cache)
        return F.linear(self.ln_f(h), self.wte.weight)  # tied lm_head


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.heads, self.kv_heads, self.hd = arch.heads, arch.kv_heads, arch.head_dim
        kv = arch.kv_heads * arch.head_dim
        self.input_norm, self.post_norm = RMSNorm(arch.d), RMSNorm(arch.d)
        self.q = nn.Linear(arch.d, arch.d, bias=False)
        self.k = nn.Linear(arch.d, kv, bias=False)
        self.v = nn.Linear(arch.d, kv, bias=False)
        self.o = nn.Linear(arch.d, arch.d, bias=False)
        self.gate = nn.Linear(arch.d, arch.ffn, bias=False)
        self.up = nn.Linear(arch.d, arch.ffn, bias=False)
        self.down = nn.Linear(arch.ffn, arch.d, bias=False)

    def forward(self, h, layer, cos, sin, cache):
        b, s, d = h.shape
        x = self.input_norm(h)
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(layer, k, v)
        y = attention(q, k, v, causal=cache is None)
        h = h + self.o(y.transpose(1, 2).reshape(b, s, d))
        x = self.post_norm(h)
        return h + self.down(F.silu(self.gate(x)) * self.up(x))


class Llama(nn.Module):
    def __init__(self, arch, positions, theta=10000.0):
        super().__init__()
        self.embed = nn.Embedding(arch.vocab, arch.d)
        self.blocks = nn.ModuleList(LlamaBlock(arch) for _ in range(arch.layers))
        self.final_norm = RMSNorm(arch.d)
        self.lm_head = nn.Linear(arch.d, arch.vocab, bias=False)
        hd = arch.head_dim
        inv_freq = 1.0 / theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd)
        angles = torch.outer(torch.arange(positions, dtype=torch.float64), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos().float())
        self.register_buffer("sin", angles.sin().float())

    def forward(self, ids, past, cache):
        end = past + ids.shape[1]
        cos, sin = self.cos[past:end], self.sin[past:end]  # in the model's dtype
        h = self.embed(ids)
        for i, block in enumerate(self.blocks):
            h = block(h, i, cos, sin, cache)
        return self.lm_head(self.final_norm(h))


class StepModule(nn.Module):
    """One step of a model at fixed sizes: forward(ids) -> logits, with the
    step's KV cache (decode) as a buffer, so that torch.compile sees the
    cache write as a buffer mutation and `past` as a constant."""

    def __init__(self, model, arch, step):
        super().__init__()
        self.model, self.past = model, step.past
        self.cache = (KVCache(arch.layers, arch.kv_heads, arch.head_dim, step.past, step.seq)
                      if step.past else None)

    def forward(self, ids):
        return self.model(ids, self.past, self.cache)


def build(arch, steps, dtype, seed=0, device="cuda"):
    """{step name: StepModule} on `device` in `dtype`, the steps sharing one
    model's weights (GPT-2's 0.02 initialisation scale; norms 1)."""
    torch.manual_seed(seed)
    positions = max(s.past + s.seq for s in steps)
    with torch.device(device):
        model = GPT2(arch) if arch.kind == "gpt2" else Llama(arch, positions)
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name:
                continue
            nn.init.normal_(p, std=0.02)
        model = model.to(dtype).eval()
        return {s.name: StepModule(model, arch, s).to(dtype).eval() for s in steps}


def time_cuda(fn, repeat, warmup):
    """Median and fastest ms of `repeat` calls of fn after `warmup` untimed
    ones. Each call is timed alone between CUDA events on the current stream,
    the GPU idle before it (as meshc's harness times a step: host launch
    gaps count)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times)


def time_step(module, ids, mode, repeat, warmup):
    """(median ms, fastest ms) of module(ids) in eager PyTorch (mode None) or
    under torch.compile(mode=mode)."""
    torch._dynamo.reset()
    fn = module if mode is None else torch.compile(module, mode=mode, dynamic=False)
    graphs = mode is not None and "reduce-overhead" in mode

    def call():
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        fn(ids)

    with torch.no_grad():
        return time_cuda(call, repeat, warmup)


def measure_peaks(dtype, repeat=10):
    """The GPU's achievable peaks: (matmul TFLOP/s in `dtype` on
    8192 x 8192 x 8192, copy GB/s: bytes read + written by a device-to-device
    copy of 1 GiB), each from the median of `repeat` runs after warm-up."""
    peaks = _matmul_peak(dtype, repeat), _copy_peak(repeat)
    torch.cuda.empty_cache()
    return peaks


def _matmul_peak(dtype, repeat, n=8192):
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    ms, _ = time_cuda(lambda: torch.matmul(a, b), repeat, warmup=3)
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def _copy_peak(repeat, size=2 ** 30):
    src = torch.empty(size, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms, _ = time_cuda(lambda: dst.copy_(src), repeat, warmup=3)
    return 2 * size / (ms * 1e-3) / 1e9


def device():
    """(name, 'sm_XY', versions line) of the current GPU."""
    major, minor = torch.cuda.get_device_capability()
    versions = f"PyTorch {torch.__version__}, CUDA {torch.version.cuda}"
    return torch.cuda.get_device_name(), f"sm_{major}{minor}", versions


def free():
    """Returns the GPU memory of dropped models to the device, for meshc."""
    torch._dynamo.reset()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
