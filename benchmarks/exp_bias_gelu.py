"""Experiment: bias_gelu's launch shape (activations.rows_config) at the widths where it runs just under 90% of copy
(H200, bf16, M * N = 2^27, do_bench: 89.9% at N = 32768 and 65536, 90.3-90.7% at 131072 / 262144, 94.6% at 1024).
The kernel issues ~18.7 instructions an element (erf form, offline sm_90), so a launch shape that trims the
per-element overhead (addresses, the bias shared by more rows) or the bias' reads may gain the last percent.
Session 10 (NOTES item 100): values a thread 16 / 32 / 64 and tiles of 8192 / 16384: nothing kept.
Session 47: narrower column blocks of more rows ("bn<BIAS_BLOCK_N>": tiles of 8192 values, 8192 / BIAS_BLOCK_N rows;
the library's 4096 x 2): a program reads BIAS_BLOCK_N bias values for 8192 of x (half as many at 4096, an eighth at
1024, where 1024-wide rows run 94.6%), and a thread's bias values serve 4 of its rows instead of 2.
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage (H200): PYTHONPATH=src:benchmarks python benchmarks/exp_bias_gelu.py OUT_DIR   (prints a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from rooftop.ops import activations as act

WIDTHS = (16384, 32768, 65536, 131072, 262144)
VARIANTS = {"library": [], **{f"bn{n}": [(act, dict(BIAS_BLOCK_N=n))] for n in (2048, 1024, 512)}}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for N in WIDTHS:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        ref = F.gelu(x.double() + bias.double())
        for name, switches in VARIANTS.items():
            act.rows_config.cache_clear()  # its cache holds the last variant's shapes
            time_variants(rows, copy_gbps, 2 * x.nbytes + bias.nbytes, lambda: rooftop.bias_gelu(x, bias), ref,
                          {name: switches}, op="bias_gelu", N=N)
        act.rows_config.cache_clear()
        save_both(out / "exp-bias-gelu.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [("bias_gelu", N) for N in WIDTHS])


if __name__ == "__main__":
    main()
