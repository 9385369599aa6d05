"""Experiment (session 49): what LayerNorm's wide rows lose to RMSNorm's, on the H200, bf16, M * N = 2^27, % of a
same-run copy: the library's layer_norm with weight and bias ("wb"), with the weight alone ("w"), with neither
("none"), beside rms_norm with its weight ("rms"); the same bytes of x and y (w and b are 1/M of them).

The results file: LayerNorm 90.0 / 84.0 / 78.2 / 75.2% at 32768 / 65536 / 131072 / 262144 (Welford kernel, Gluon
whole rows on 8-warp consumers, Gluon parts of 32768), RMSNorm 96.9 / 94.0 / 87.6 / 88.4 (reload kernels, parts).
Session 39 found the Triton Welford kernel at 96-100% of copy without weight and bias (item 252). If "none" reaches
"rms" at 65536-262144, the parameters' loads and their pass-2 arithmetic are what the Gluon LayerNorm lacks; if not,
pass 1 (the first chunk's reduction for the shift, two sums an element) is.
Call c (logs/h200-2026-12-04-s49/call-c), wb / w / none / rms: 93.2 / 94.6 / 99.6 / 99.8 at 32768, 86.6 / 88.6 / 90.9 /
97.6 at 65536, 80.3 / 88.2 / 89.2 / 90.2 at 131072, 76.8 / 87.9 / 90.5 / 90.9 at 262144: in parts the bias alone costs
8-11 points (per element 6 bytes from L2 to the SM against 4 with the weight alone). Two rows a consumer's turn, each
chunk's w and b loaded once for both (call d, norm_sm90 at commit 7cb5c37): 55.2 / 53.1 at 131072 / 262144 (the
library 80.3 / 76.8), 58.7 at 49152: a consumer holding two rows in pass 2 leaves the other's pass 1 no buffers
(2 x 8 chunks against a ring of 14), and the pair path spilled (168 bytes of stack).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_params.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants

WIDTHS = (32768, 65536, 131072, 262144)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for N in WIDTHS:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        xd = x.double()
        for name, weight, bias in (("wb", w, b), ("w", w, None), ("none", None, None)):
            ref = F.layer_norm(xd, (N,), None if weight is None else weight.double(),
                               None if bias is None else bias.double(), 1e-5)
            time_variants(rows, copy_gbps, 2 * x.nbytes, lambda: rooftop.layer_norm(x, weight, bias, 1e-5), ref,
                          {name: []}, op="layer_norm", N=N)
        ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        time_variants(rows, copy_gbps, 2 * x.nbytes, lambda: rooftop.rms_norm(x, w, 1e-6), ref, {"rms": []},
                      op="layer_norm", N=N)
        torch.cuda.empty_cache()
        save_both(out / "exp-ln-params.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [("layer_norm", N) for N in WIDTHS])


if __name__ == "__main__":
    main()
