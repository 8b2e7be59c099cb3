# SPDX-License-Identifier: MIT
"""PyTorch ground truth for shardscape-profile and the planner (needs a CUDA GPU and PyTorch).

1. A Llama-style decoder layer and a small full Llama (default 4 layers, hidden 2048), forward + backward in bf16:
   step time (CUDA events, warm-up, median) and torch.cuda.max_memory_allocated.
2. torch GEMMs on the shapes the profiler measured (rows of its profile.json, --profile) or on the profiler's
   default grid: the profiler's cuBLASLt rate must reach --min-ratio (default 0.9) of PyTorch's cuBLAS rate.

The profiler's GEMM is C[m x n] = A[m x k] @ B[k x n] with B stored n x k (the nn.Linear layout), which is
torch.nn.functional.linear(a, b) here (torch._scaled_mm for fp8).

Prints a summary and writes JSON (--out). Exit code 1 when a profiled GEMM is below --min-ratio of PyTorch.
"""

import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "tf32": torch.float32, "f32": torch.float32}


def time_cuda(fn, warmup, iters, flush=None):
    """Median seconds of fn() over `iters` runs after `warmup` runs, each timed with CUDA events.

    `flush` (if given) runs before each timed call, outside the events, to evict the L2."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        if flush is not None:
            flush()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(times)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rope(x, theta=10000.0):
    """Rotary position embedding over the last dimension of x [batch, heads, seq, head_dim]."""
    seq, dim = x.shape[-2], x.shape[-1]
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim))
    angles = torch.outer(torch.arange(seq, device=x.device, dtype=torch.float32), inv)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class DecoderLayer(torch.nn.Module):
    """Llama decoder layer: RMSNorm, GQA attention with RoPE (SDPA, causal), RMSNorm, SwiGLU MLP."""

    def __init__(self, hidden, heads, kv_heads, intermediate):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.attn_norm = RMSNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.out = torch.nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.mlp_norm = RMSNorm(hidden)
        self.gate = torch.nn.Linear(hidden, intermediate, bias=False)
        self.up = torch.nn.Linear(hidden, intermediate, bias=False)
        self.down = torch.nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], dim=-1)
        q = rope(q.view(b, s, self.heads, self.head_dim).transpose(1, 2))
        k = rope(k.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2))
        v = v.view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attn.transpose(1, 2).reshape(b, s, -1))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(torch.nn.Module):
    def __init__(self, layers, hidden, heads, kv_heads, intermediate, vocab):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, hidden)
        self.layers = torch.nn.ModuleList(DecoderLayer(hidden, heads, kv_heads, intermediate) for _ in range(layers))
        self.norm = RMSNorm(hidden)
        self.lm_head = torch.nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def measure_training(module, make_input, loss_fn, warmup, iters):
    """Median forward + backward seconds and peak allocated bytes (parameters, grads, activations)."""
    params = [p for p in module.parameters() if p.requires_grad]

    def step():
        for p in params:
            p.grad = None
        loss_fn(module(make_input())).backward()

    step()  # the first step allocates the gradients: peak memory counts them, as in training
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    seconds = time_cuda(step, warmup, iters)
    return seconds, torch.cuda.max_memory_allocated()


def default_grid(quick):
    """The profiler's default GEMM grid (app/profile/model_shapes.cpp defaultGemmGrid), as (m, n, k)."""
    squares = [1024, 4096, 8192] if quick else [256, 512, 1024, 2048, 4096, 8192, 16384]
    grid = [(s, s, s) for s in squares]
    linears = ([(12288, 4096), (4096, 11008), (3584, 8192)] if quick else
               [(12288, 4096), (4096, 4096), (11008, 4096), (4096, 11008), (32000, 4096), (1280, 8192),
                (8192, 1024), (3584, 8192), (8192, 3584)])
    for t in ([4096] if quick else [2048, 8192]):
        grid += [(t, n, k) for n, k in linears]
    if not quick:
        grid += [(4096, 4096, 8192), (11008, 4096, 8192), (16, 4096, 4096), (128, 4096, 4096)]
    return grid


def torch_gemm_seconds(m, n, k, dtype, warmup, iters, flush):
    """Median seconds of torch's C = A @ B^T (B stored n x k, as the profiler's layout)."""
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    if dtype == "fp8":
        a = torch.rand(m, k, device="cuda").mul_(2).sub_(1).to(torch.float8_e4m3fn)
        b = torch.rand(n, k, device="cuda").mul_(2).sub_(1).to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        a = torch.rand(m, k, device="cuda", dtype=DTYPES[dtype]).mul_(2).sub_(1)
        b = torch.rand(n, k, device="cuda", dtype=DTYPES[dtype]).mul_(2).sub_(1)
        fn = lambda: F.linear(a, b)
    # Small problems: flush the L2 between runs, as the profiler rotates buffers past it.
    small = (m * k + n * k) * a.element_size() < 2 * flush.numel()
    return time_cuda(fn, warmup, iters, flush=(lambda: flush.zero_()) if small else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", help="profile.json written by shardscape-profile: compare its matmul rows")
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="the profiler's quick grid when there is no --profile")
    parser.add_argument("--dtypes", default="bf16", help="GEMM dtypes when there is no --profile (bf16,f16,tf32,f32,fp8)")
    parser.add_argument("--min-ratio", type=float, default=0.9, help="profiler rate / PyTorch rate must reach this")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=4)
    parser.add_argument("--intermediate", type=int, default=5632)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("validate_torch.py: no CUDA device", file=sys.stderr)
        return 3

    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
              "config": {k: getattr(args, k) for k in
                         ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab", "seq", "batch")}}
    tokens = args.batch * args.seq

    # 1a. One decoder layer, forward + backward, bf16 weights and activations.
    layer = DecoderLayer(args.hidden, args.heads, args.kv_heads, args.intermediate).cuda().to(torch.bfloat16)
    x = torch.randn(args.batch, args.seq, args.hidden, device="cuda", dtype=torch.bfloat16)
    seconds, peak = measure_training(layer, lambda: x.detach().requires_grad_(), lambda y: y.float().square().mean(),
                                     args.warmup, args.iters)
    layer_params = sum(p.numel() for p in layer.parameters())
    result["layer"] = {"step_time_s": seconds, "max_memory_allocated_bytes": peak, "params": layer_params}
    print(f"layer  fwd+bwd {seconds * 1e3:9.3f} ms  peak {peak / 2**30:7.3f} GiB  params {layer_params / 1e6:.1f} M")
    del layer, x
    torch.cuda.empty_cache()

    # 1b. The full small Llama with a cross-entropy loss.
    model = Llama(args.layers, args.hidden, args.heads, args.kv_heads, args.intermediate, args.vocab)
    model = model.cuda().to(torch.bfloat16)
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
    labels = torch.randint(0, args.vocab, (args.batch, args.seq), device="cuda")
    seconds, peak = measure_training(model, lambda: ids,
                                     lambda logits: F.cross_entropy(logits.float().view(-1, args.vocab),
                                                                    labels.view(-1)),
                                     args.warmup, args.iters)
    params = sum(p.numel() for p in model.parameters())
    # 6 * params * tokens (the matmul FLOPs of forward + backward, no attention scores): a rough rate check.
    flops = 6.0 * params * tokens
    result["model"] = {"step_time_s": seconds, "max_memory_allocated_bytes": peak, "params": params,
                       "tokens": tokens, "approx_tflops": flops / seconds / 1e12}
    print(f"model  fwd+bwd {seconds * 1e3:9.3f} ms  peak {peak / 2**30:7.3f} GiB  params {params / 1e6:.1f} M  "
          f"~{flops / seconds / 1e12:.0f} TFLOP/s (6*N*T)")
    del model
    torch.cuda.empty_cache()

    # 2. GEMMs: the profiler's rows against torch on the same shapes.
    if args.profile:
        with open(args.profile) as f:
            profile = json.load(f)
        rows = [(r["m"], r["n"], r["k"], r["dtype"], r["time_s"]) for r in profile["matmul"]]
    else:
        rows = [(m, n, k, d, None) for d in args.dtypes.split(",") for (m, n, k) in default_grid(args.quick)]
    flush = torch.empty(256 * 2**20 // 4, device="cuda", dtype=torch.float32)  # 256 MiB > 2 x any L2 today
    gemms = []
    worst = math.inf
    for m, n, k, dtype, profiled in rows:
        if dtype == "fp8" and torch.cuda.get_device_capability() < (8, 9):
            continue
        seconds = torch_gemm_seconds(m, n, k, dtype, args.warmup, args.iters, flush)
        row = {"m": m, "n": n, "k": k, "dtype": dtype, "torch_time_s": seconds,
               "torch_tflops": 2.0 * m * n * k / seconds / 1e12}
        line = f"gemm {dtype:4} m={m:<6} n={n:<6} k={k:<6} torch {row['torch_tflops']:8.1f} TFLOP/s"
        if profiled:
            row["profile_time_s"] = profiled
            row["ratio"] = seconds / profiled  # profiler rate / torch rate
            worst = min(worst, row["ratio"])
            line += f"  profiler {2.0 * m * n * k / profiled / 1e12:8.1f} TFLOP/s  ratio {row['ratio']:.3f}"
        print(line)
        gemms.append(row)
    result["matmul"] = gemms
    if math.isfinite(worst):
        result["matmul_min_ratio"] = worst
        print(f"lowest profiler/torch GEMM rate ratio: {worst:.3f} (required >= {args.min_ratio})")

    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return 1 if math.isfinite(worst) and worst < args.min_ratio else 0


if __name__ == "__main__":
    sys.exit(main())
