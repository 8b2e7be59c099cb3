# SPDX-License-Identifier: MIT
"""Throughput of FP8 GEMMs with tensorwise and rowwise scales against bf16 (issue 14, error class 4).

torchao's Float8Linear (the float8 converter torchtitan turns on) runs its three GEMMs through torch._scaled_mm:
- tensorwise: one fp32 scale per operand. torch._scaled_mm calls cuBLASLt with two scalar scales;
- rowwise (Float8LinearConfig.from_recipe_name("rowwise")): one fp32 scale per row of the first operand along the
  reduction dimension, one per column of the second (scale_a of shape (M, 1), scale_b of shape (1, N)). On sm90,
  PyTorch routes these to its CUTLASS kernel (aten/src/ATen/native/cuda/RowwiseScaledMM.cu f8f8bf16_rowwise).
torchao runs the output GEMM with use_fast_accum=True and the two gradient GEMMs with use_fast_accum=False
(Float8LinearConfig's gemm_config_output / gemm_config_grad_input / gemm_config_grad_weight defaults). This probe
times all three GEMMs of each Llama linear (8B and 70B widths), tokens = micro-batch x sequence, in both recipes and
in bf16.

Writes JSON (--out) and prints a table. Exit code 3 without a CUDA device or without FP8 support.
"""
import argparse
import json
import statistics
import sys

import torch

from validate_torch import time_cuda

# (name, in_features, out_features) of Llama 3's linears, unsharded.
WIDTHS = {
    "8b": [("wq", 4096, 4096), ("wkv", 4096, 1024), ("w13", 4096, 14336), ("w2", 14336, 4096)],
    "70b": [("wq", 8192, 8192), ("wkv", 8192, 1024), ("w13", 8192, 28672), ("w2", 28672, 8192)],
}


def gemm_case(m, n, k, recipe, fast_accum, device):
    """Returns a callable computing (m x k) @ (k x n) in the recipe's dtype and scales."""
    if recipe == "bf16":
        a = torch.randn(m, k, device=device, dtype=torch.bfloat16)
        b = torch.randn(n, k, device=device, dtype=torch.bfloat16).t()
        return lambda: torch.mm(a, b)
    a = torch.randn(m, k, device=device).to(torch.float8_e4m3fn)
    # _scaled_mm wants the second operand column-major.
    b = torch.randn(n, k, device=device).to(torch.float8_e4m3fn).t()
    if recipe == "tensorwise":
        sa = torch.tensor(1.0, device=device)
        sb = torch.tensor(1.0, device=device)
    else:
        sa = torch.ones(m, 1, device=device)
        sb = torch.ones(1, n, device=device)
    return lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192, 16384])
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 3
    device = torch.device("cuda")
    if torch.cuda.get_device_capability(device) < (8, 9):
        print("this GPU has no FP8 tensor cores (needs sm89 or newer)", file=sys.stderr)
        return 3

    rows = []
    print(f"{'width':>5} {'linear':>6} {'tokens':>6} {'gemm':>11} {'bf16':>7} {'tensor':>7} {'row':>7}  row/tensor")
    for width, linears in WIDTHS.items():
        for name, fan_in, fan_out in linears:
            for tokens in args.tokens:
                # output = x W^T; grad_input = grad W; grad_weight = grad^T x (torchao's three _scaled_mm calls).
                gemms = {
                    "output": (tokens, fan_out, fan_in, True),
                    "grad_input": (tokens, fan_in, fan_out, False),
                    "grad_weight": (fan_out, fan_in, tokens, False),
                }
                for gemm, (m, n, k, fast) in gemms.items():
                    flops = 2.0 * m * n * k
                    rates = {}
                    for recipe in ("bf16", "tensorwise", "rowwise"):
                        fn = gemm_case(m, n, k, recipe, fast, device)
                        seconds = time_cuda(fn, args.warmup, args.iters)
                        rates[recipe] = flops / seconds / 1e12
                    rows.append({"width": width, "linear": name, "tokens": tokens, "gemm": gemm, "m": m, "n": n,
                                 "k": k, "use_fast_accum": fast, "tflops": rates})
                    print(f"{width:>5} {name:>6} {tokens:>6} {gemm:>11} {rates['bf16']:7.0f} "
                          f"{rates['tensorwise']:7.0f} {rates['rowwise']:7.0f}  "
                          f"{rates['rowwise'] / rates['tensorwise']:.3f}")
    ratios = [r["tflops"]["rowwise"] / r["tflops"]["tensorwise"] for r in rows]
    flop_weighted = sum(2.0 * r["m"] * r["n"] * r["k"] / r["tflops"]["tensorwise"] for r in rows) / sum(
        2.0 * r["m"] * r["n"] * r["k"] / r["tflops"]["rowwise"] for r in rows)
    summary = {"rowwise_over_tensorwise_median": statistics.median(ratios),
               "rowwise_over_tensorwise_time_weighted": flop_weighted,
               "tensorwise_over_bf16_median": statistics.median(
                   r["tflops"]["tensorwise"] / r["tflops"]["bf16"] for r in rows)}
    print(json.dumps(summary, indent=1))
    if args.out:
        meta = {"device": torch.cuda.get_device_name(device), "torch": torch.__version__,
                "cuda": torch.version.cuda, "capability": list(torch.cuda.get_device_capability(device))}
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
