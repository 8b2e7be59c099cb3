# SPDX-License-Identifier: MIT
"""Ground truth for one Llama decoder layer (issue 14, item 7): activation memory and time on a real GPU.

The layer is written the way torchtitan's Llama 3 writes it (torchtitan/models/llama3/model/model.py: nn.RMSNorm,
separate wq / wk / wv / wo, rotary embedding through complex multiplication on an fp32 upcast, repeat_kv before
F.scaled_dot_product_attention with is_causal, SwiGLU w2(silu(w1(x)) * w3(x))), in bf16, eager. For each width,
micro-batch, sequence length and checkpointing mode it records, with the layer's weights and gradients already
allocated (a training step's steady state):

- stash_bytes: torch.cuda.memory_allocated() after the forward minus before it. The layer's output stays
  referenced, as the next layer's saved input would be, so this is what one layer adds to the stash;
- forward_peak_bytes / backward_peak_bytes: torch.cuda.max_memory_allocated() during the forward / the backward,
  minus memory_allocated() before the forward (transients on top of the stash);
- forward_s / backward_s: median of CUDA-event times over --iters runs after --warmup runs (backward includes
  the recomputed forward under checkpointing).

Checkpointing modes, as the frameworks run them:
- none;
- selective: Megatron's selective recomputation (--recompute-granularity selective): the core attention only,
  i.e. torch.utils.checkpoint around the SDPA call (non-reentrant);
- full: the whole layer under torch.utils.checkpoint (non-reentrant, preserve_rng_state=False, early_stop=False),
  torchtitan's activation_checkpoint.mode = "full" (torchtitan/distributed/activation_checkpoint.py passes
  early_stop=False to ptd_checkpoint_wrapper), and Megatron's CheckpointFunction, which re-runs the whole forward;
- full-early-stop: the same with PyTorch's default early stop (torch.utils.checkpoint stops the recomputation once
  every tensor backward needs is back, so the layer's last GEMM is not re-run), as a plain use_reentrant=False
  checkpoint (Composer's checkpoint_wrapper, Hugging Face's gradient checkpointing) runs it;
- op-sac: torchtitan's per-op selective checkpointing (selective_ac_option = "op"): the block under
  create_selective_checkpoint_contexts with torchtitan's policy (save mm and SDPA outputs, recompute every second
  mm and everything else), early_stop=False.

--compile runs the block through torch.compile (as torchtitan's compile.enable does per block).
--gqa runs attention with SDPA's enable_gqa instead of repeat_kv (torchtitan since v0.2.2, pytorch/torchtitan#2259).
--attention also times F.scaled_dot_product_attention alone (forward, and forward + backward) over sequence lengths.

Writes JSON (--out) and prints a table. Exit code 3 without a CUDA device.
"""
import argparse
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from validate_torch import time_cuda  # CUDA-event median, warm-up first (same folder)

WIDTHS = {
    # name: (hidden, heads, kv_heads, ffn_hidden) -- Llama 3 8B / 70B (Meta's params.json)
    "llama3-8b": (4096, 32, 8, 14336),
    "llama3-70b": (8192, 64, 8, 28672),
}


def precompute_freqs_cis(head_dim, seq, theta=500000.0, device="cuda"):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2, device=device)[: head_dim // 2].float() / head_dim))
    t = torch.arange(seq, device=device, dtype=torch.float32)
    return torch.polar(torch.ones(seq, head_dim // 2, device=device), torch.outer(t, freqs))


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis.view(1, xq_.shape[1], 1, xq_.shape[-1])
    xq_out = torch.view_as_real(xq_ * f).flatten(3)
    xk_out = torch.view_as_real(xk_ * f).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, :, None, :].expand(bs, slen, n_kv_heads, n_rep, head_dim).reshape(
        bs, slen, n_kv_heads * n_rep, head_dim)


def core_attention(xq, xk, xv):
    return F.scaled_dot_product_attention(xq, xk, xv, is_causal=True)


class Attention(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, selective, gqa):
        super().__init__()
        self.gqa = gqa
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.wq = torch.nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.wk = torch.nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wv = torch.nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.wo = torch.nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.selective = selective

    def forward(self, x, freqs_cis):
        bs, seq, _ = x.shape
        xq = self.wq(x).view(bs, seq, -1, self.head_dim)
        xk = self.wk(x).view(bs, seq, -1, self.head_dim)
        xv = self.wv(x).view(bs, seq, -1, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        rep = 1 if self.gqa else self.heads // self.kv_heads
        keys, values = repeat_kv(xk, rep), repeat_kv(xv, rep)
        xq, xk, xv = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        attend = (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)) \
            if self.gqa else core_attention
        if self.selective:
            out = checkpoint(attend, xq, xk, xv, use_reentrant=False)
        else:
            out = attend(xq, xk, xv)
        return self.wo(out.transpose(1, 2).contiguous().view(bs, seq, -1))


class FeedForward(torch.nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.w1 = torch.nn.Linear(hidden, ffn, bias=False)
        self.w2 = torch.nn.Linear(ffn, hidden, bias=False)
        self.w3 = torch.nn.Linear(hidden, ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


SAVE_OPS = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
            torch.ops.aten._scaled_dot_product_flash_attention.default,
            torch.ops.aten._scaled_dot_product_cudnn_attention.default}


def op_sac_policy():
    """torchtitan's per-op policy (distributed/activation_checkpoint.py _get_custom_policy)."""
    meta = {"forward_mm_count": 0, "recompute_mm_count": 0}

    def policy(ctx, func, *args, **kwargs):
        key = "recompute_mm_count" if ctx.is_recompute else "forward_mm_count"
        if func == torch.ops.aten.mm.default:
            meta[key] += 1
        if func in SAVE_OPS and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0):
            return CheckpointPolicy.MUST_SAVE
        return CheckpointPolicy.PREFER_RECOMPUTE

    return policy


class TransformerBlock(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, recompute, gqa=False):
        super().__init__()
        self.attention = Attention(hidden, heads, kv_heads, recompute == "selective", gqa)
        self.feed_forward = FeedForward(hidden, ffn)
        self.attention_norm = torch.nn.RMSNorm(hidden, eps=1e-5)
        self.ffn_norm = torch.nn.RMSNorm(hidden, eps=1e-5)
        self.recompute = recompute

    def _forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))

    def forward(self, x, freqs_cis):
        if self.recompute == "full":
            return checkpoint(self._forward, x, freqs_cis, use_reentrant=False, preserve_rng_state=False,
                              early_stop=False)
        if self.recompute == "full-early-stop":
            return checkpoint(self._forward, x, freqs_cis, use_reentrant=False, preserve_rng_state=False)
        if self.recompute == "op-sac":
            return checkpoint(self._forward, x, freqs_cis, use_reentrant=False, preserve_rng_state=False,
                              early_stop=False,
                              context_fn=lambda: create_selective_checkpoint_contexts(op_sac_policy()))
        return self._forward(x, freqs_cis)


def probe(width, batch, seq, recompute, warmup, iters, gqa, compile_block=False):
    hidden, heads, kv_heads, ffn = WIDTHS[width]
    torch.manual_seed(0)
    layer = TransformerBlock(hidden, heads, kv_heads, ffn, recompute, gqa).cuda().to(torch.bfloat16)
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.02) if p.dim() > 1 else torch.nn.init.ones_(p)
    if compile_block:
        layer = torch.compile(layer)
    freqs_cis = precompute_freqs_cis(hidden // heads, seq)
    x = torch.randn(batch, seq, hidden, device="cuda", dtype=torch.bfloat16).requires_grad_()
    dy = torch.randn_like(x)

    def step():
        x.grad = None
        layer(x, freqs_cis).backward(dy)

    step()  # allocates the weight gradients: the measurements below see them, as a training step would
    torch.cuda.synchronize()
    x.grad = None
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y = layer(x, freqs_cis)
    torch.cuda.synchronize()
    after = torch.cuda.memory_allocated()
    forward_peak = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y.backward(dy)
    torch.cuda.synchronize()
    backward_peak = torch.cuda.max_memory_allocated()
    del y
    x.grad = None

    with torch.no_grad():
        forward_s = time_cuda(lambda: layer(x, freqs_cis), warmup, iters)
    step_s = time_cuda(step, warmup, iters)
    params = sum(p.numel() for p in layer.parameters())
    return {"width": width, "hidden": hidden, "heads": heads, "kv_heads": kv_heads, "ffn_hidden": ffn,
            "micro_batch": batch, "seq_len": seq, "recompute": recompute, "gqa": gqa, "compiled": compile_block,
            "params": params,
            "allocated_before_forward_bytes": before,
            "stash_bytes": after - before, "forward_peak_bytes": forward_peak - before,
            "backward_peak_bytes": backward_peak - before, "forward_s": forward_s,
            "backward_s": step_s - forward_s, "step_s": step_s}


def time_attention(seq, heads, kv_heads, warmup, iters, head_dim=128, tokens=16384):
    """F.scaled_dot_product_attention alone, causal, bf16, batch = tokens / seq (at least 1), GQA via enable_gqa.

    causal_flops_fwd counts the unmasked half: 2 * 2 * b * heads * s^2 * d / 2; backward does 2.5x that."""
    batch = max(1, tokens // seq)
    q = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(batch, kv_heads, seq, head_dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn_like(k, requires_grad=True)
    dout = torch.randn_like(q)
    run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    with torch.no_grad():
        forward_s = time_cuda(run, warmup, iters)
    step_s = time_cuda(lambda: run().backward(dout), warmup, iters)
    return {"seq_len": seq, "batch": batch, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
            "causal_flops_fwd": 2.0 * batch * heads * seq * seq * head_dim, "forward_s": forward_s, "step_s": step_s}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the rows as JSON here")
    parser.add_argument("--widths", default="llama3-8b,llama3-70b")
    parser.add_argument("--batches", default="1,2,4")
    parser.add_argument("--seqs", default="2048,4096,8192")
    parser.add_argument("--recompute", default="none,selective,full")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--iters", type=int, default=7)
    parser.add_argument("--gqa", action="store_true", help="SDPA enable_gqa instead of repeat_kv")
    parser.add_argument("--compile", action="store_true", help="torch.compile the block")
    parser.add_argument("--attention", default="", help="sequence lengths to time SDPA alone at (e.g. 1024,4096)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("layer_probe.py: no CUDA device", file=sys.stderr)
        return 3
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "memory_bytes": props.total_memory, "torch": torch.__version__,
              "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
              "date": time.strftime("%Y-%m-%d"), "rows": [], "attention": []}
    print(f"{props.name}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"{'width':>10} {'mb':>2} {'seq':>5} {'recompute':>9} {'stash GiB':>9} {'fwd pk':>7} {'bwd pk':>7} "
          f"{'fwd ms':>8} {'bwd ms':>8}")
    for width in args.widths.split(","):
        for batch in map(int, args.batches.split(",")):
            for seq in map(int, args.seqs.split(",")):
                for recompute in args.recompute.split(","):
                    try:
                        row = probe(width, batch, seq, recompute, args.warmup, args.iters, args.gqa, args.compile)
                    except torch.cuda.OutOfMemoryError:
                        row = {"width": width, "micro_batch": batch, "seq_len": seq, "recompute": recompute,
                               "oom": True}
                    torch.cuda.empty_cache()
                    result["rows"].append(row)
                    if row.get("oom"):
                        print(f"{width:>10} {batch:>2} {seq:>5} {recompute:>9} OOM")
                        continue
                    g = 2**30
                    print(f"{width:>10} {batch:>2} {seq:>5} {recompute:>9} {row['stash_bytes'] / g:9.3f} "
                          f"{row['forward_peak_bytes'] / g:7.3f} {row['backward_peak_bytes'] / g:7.3f} "
                          f"{row['forward_s'] * 1e3:8.2f} {row['backward_s'] * 1e3:8.2f}", flush=True)
    for seq in [int(v) for v in args.attention.split(",") if v]:
        for heads, kv_heads in ((32, 8), (64, 8)):
            result["attention"].append(time_attention(seq, heads, kv_heads, args.warmup, args.iters))
            a = result["attention"][-1]
            print(f"sdpa causal s={seq:6} heads {heads}/{kv_heads}: fwd {a['forward_s'] * 1e3:8.3f} ms "
                  f"({a['causal_flops_fwd'] / a['forward_s'] / 1e12:5.0f} TFLOP/s), fwd+bwd "
                  f"{a['step_s'] * 1e3:8.3f} ms ({3.5 * a['causal_flops_fwd'] / a['step_s'] / 1e12:5.0f} TFLOP/s)",
                  flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
