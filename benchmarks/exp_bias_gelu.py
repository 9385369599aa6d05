"""Experiment: bias_gelu's launch shape (activations.rows_config) at the widths where it runs just under 90% of copy
(H200, bf16, M * N = 2^27, do_bench: 89.4% at N = 32768 and 65536, 90.2-90.3% at 16384 and 131072; GPU alone
91-93%). The kernel issues ~18.7 instructions an element (erf form, offline sm_90), so a launch shape that trims
the per-element overhead (addresses, the bias shared by more rows) or hides more latency may gain the last percent.

Variants: BIAS_ELEMS_PER_THREAD (values a thread: 16 / 32 (the library's) / 64) and ROWS_BLOCK_ELEMS (a tile's
elements: 8192 (the library's) / 16384), timed as the library runs (GPU time by graph replay, L2 flushed:
_autotune.time_ms) against a copy of as many bytes timed the same way.

Usage (H200): PYTHONPATH=src python benchmarks/exp_bias_gelu.py OUT_DIR   (prints a table last)
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import torch

import rooftop
from rooftop.ops import _autotune
from rooftop.ops import activations as act

WIDTHS = (16384, 32768, 65536)
PER_THREAD = (16, 32, 64)
TILE_ELEMS = (8192, 16384)


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for N in WIDTHS:
        x = torch.randn((1 << 27) // N, N, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        y = torch.empty_like(x)
        copy_us = _autotune.time_ms(lambda: y.copy_(x)) * 1e3
        ref = torch.nn.functional.gelu(x.float() + bias.float())
        for per_thread, tile in itertools.product(PER_THREAD, TILE_ELEMS):
            act.BIAS_ELEMS_PER_THREAD, act.ROWS_BLOCK_ELEMS = per_thread, tile
            act.rows_config.cache_clear()
            err = float((rooftop.bias_gelu(x, bias).float() - ref).norm() / ref.norm())
            us = _autotune.time_ms(lambda: rooftop.bias_gelu(x, bias)) * 1e3
            rows.append(dict(N=N, per_thread=per_thread, tile=tile, config=act.rows_config(x.shape[0], N, True),
                             us=us, pct_copy=100 * copy_us / us, err=err))
            print(json.dumps(rows[-1]), flush=True)
    (out / "exp-bias-gelu.json").write_text(json.dumps(rows, indent=1))
    print(f"\n% of a copy of as many bytes (GPU time); library: {PER_THREAD[1]} a thread, tiles of {TILE_ELEMS[0]}")
    print(f"{'a thread':>9}{'tile':>7}" + "".join(f"{N:>9}" for N in WIDTHS))
    for per_thread, tile in itertools.product(PER_THREAD, TILE_ELEMS):
        cells = {r["N"]: r["pct_copy"] for r in rows if r["per_thread"] == per_thread and r["tile"] == tile}
        print(f"{per_thread:>9}{tile:>7}" + "".join(f"{cells[N]:8.1f}%" for N in WIDTHS))


if __name__ == "__main__":
    main(sys.argv[1])
