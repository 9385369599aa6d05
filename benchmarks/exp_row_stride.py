"""Experiment (session 49): do the row ops lose at N = 65536 to their rows' power-of-two stride? On the H200, bf16,
M * N = 2^27, % of a same-run copy, each op on contiguous [M, N] rows and on the same rows with a padded stride
(views of [M, N + PAD]: the same bytes read and written, the rows PAD elements further apart).

Why: the results dip at 65536 across kernels of different kinds (row reductions on chip 88.7-91.2, bias_gelu 89.9
where 16384 reads 90.8 and 131072 90.7 (its column blocks changed nothing, journal item 310), add_layer_norm 88.7,
LayerNorm 84). At 65536 bf16 rows are 128 KB apart; the SMs' programs each stream a row (or a column block of
rows) at about the same pace, so at any moment their addresses differ by multiples of 128 KB: if the H200's
address-to-channel hash maps those to few HBM channels, the rows camp on them. A padded stride spreads them.
Predicted, if it camps: padded rows >= 2 points faster at 65536 and level at 32768 (the control); else level.
Call e (logs/h200-2026-12-04-s49/call-e), by do_bench, pad 0 / 64 / 1024: row_sum 92.1 / 91.7 / 91.7 at 65536 (92.4 /
92.2 / 93.0 at 32768), row_max 92.1 / 91.2 / 91.8, softmax 91.7 / 91.6 / 91.6, rms_norm 96.5 / 96.5 / 96.4, bias_gelu
91.6 / 89.0 / 90.5 (graph 88.9 / 90.6 / 91.4): level. No camping; the stride is not what 65536 lacks.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_row_stride.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from rooftop.ops.reductions import row_reduce_reference

OPS = ("row_sum", "row_max", "softmax", "rms_norm", "bias_gelu")
WIDTHS = (32768, 65536)
PADS = (0, 64, 1024)


def case(op: str, x: torch.Tensor):
    """(the library call on the [M, N] view x, its float64 reference, the least bytes it moves)."""
    N = x.shape[1]
    xd = x.double()
    nbytes = x.numel() * x.element_size()
    if op.startswith("row_"):
        return lambda: getattr(rooftop, op)(x), row_reduce_reference(x, op[4:]), nbytes + 2 * x.shape[0]
    if op == "softmax":
        return lambda: rooftop.softmax(x), torch.softmax(xd, dim=-1), 2 * nbytes
    if op == "rms_norm":
        w = torch.rand(N, device="cuda", dtype=x.dtype) + 0.5
        ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        return lambda: rooftop.rms_norm(x, w, 1e-6), ref, 2 * nbytes
    bias = torch.randn(N, device="cuda", dtype=x.dtype)
    return lambda: rooftop.bias_gelu(x, bias), F.gelu(xd + bias.double()), 2 * nbytes


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for N in WIDTHS:
        for pad in PADS:
            full = torch.randn(ELEMENTS // N, N + pad, device="cuda", dtype=torch.bfloat16)
            x = full[:, :N]
            for op in OPS:
                call, ref, nbytes = case(op, x)
                time_variants(rows, copy_gbps, nbytes, call, ref, {f"pad{pad}": []}, op=op, N=N)
                del call, ref
            del full, x
            torch.cuda.empty_cache()
            save_both(out / "exp-row-stride.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [(op, N) for op in OPS for N in WIDTHS])


if __name__ == "__main__":
    main()
