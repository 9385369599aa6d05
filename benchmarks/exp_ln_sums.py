"""Experiment: LayerNorm's wide rows (no residual) in programs of two rows that share pass 2's weight and bias loads,
on the H200, bf16, M * N = 2^27, GPU time (graph replay, L2 flushed), % of a same-run copy.

What led here (session 39; logs/h200-2026-12-03-s39/call-a..d, NOTES items 251-254), with the single-row kernel
below ("sums": RMSNorm's reload kernel with LayerNorm's statistics, every tile's loads up front):
- its statistics by Chan's merge of the lanes' (n, mean, M2) or by one reduction of three plain sums ran within 1-2%;
- without w and b it ran 100 / 97.5 / 98.4 / 96.3% of copy at 32768 / 40960 / 49152 / 65536, with them 93.2 / 90.5 /
  82.3 / 81.3 (the library 92.4 / 93.9 / 85.9 / 84.6): the parameters, not the reduction, hold it;
- w and b loaded 1-3 tiles ahead in pass 2 moved 65536 from 81 to 85% and lost at 16384-40960: not their latency;
- Nsight Compute: L2 throughput 82-90% of peak in every variant (DRAM 73-84%): the kernels are L2-bound, and each
  row's w and b are two more row-sizes of L2 reads (L2 sectors read at 65536: 8.4 M without them, 20.4 M with).
So this kernel reads w and b once for two rows: a program takes rows 2p and 2p + 1 (one program an SM: 32 warps,
maxnreg=64; both rows stay in L1 between the passes up to 2 x 96 KB), each thread the same columns of both, and
pass 2 applies each tile's (w, b) to both rows: L2 reads of the parameters halved.
The statistics, per row: lane l shifts its PARTS values by its own first one, x0_l, and sums d = x - x0_l and d^2 (a
lane's (mean, M2) exact to fp32 whatever the row); then with s the mean of column 0's values, A = sum_l (m_l - s),
B = sum_l (m_l - s)^2, C = sum_l M2_l over the TILE lanes (one reduction of the two rows' six sums): mean = s + A /
TILE, M2 = C + PARTS (B - A^2 / TILE). The cancellation in B - A^2 / TILE is bounded by (s - mean)^2 <= M2 / PARTS
(s is a mean of PARTS of the row's values): relative error <= eps * N / PARTS.
Predicted: ~half of the parameters' cost back where two rows fit L1: >= 96% at 24576-32768, >= 93% at 40960-49152.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_ln_sums.py OUT_DIR [--widths 32768,65536]
(prints a table last, writes exp-ln-sums.json)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import triton
import triton.language as tl

import rooftop
from exp_norm_reload import ELEMENTS, copy_bandwidth, measured
from rooftop.ops import layer_norm as ln
from rooftop.ops._support import launch, load_tile_again

WARPS, ONE_PROGRAM_MIN_N = 32, 40960
REGISTERS = {}  # (kernel, N, tile) -> registers a thread (two 32-warp programs an SM at most 32)


@triton.jit
def _add3(a0, b0, c0, a1, b1, c1):
    return a0 + a1, b0 + b1, c0 + c1


@triton.jit
def _add6(a0, b0, c0, d0, e0, f0, a1, b1, c1, d1, e1, f1):
    return a0 + a1, b0 + b1, c0 + c1, d0 + d1, e0 + e1, f0 + f1


@triton.jit
def _lane_sums(x_row, cols, TILE: tl.constexpr, PARTS: tl.constexpr):
    """Pass 1 of a row: (s, m_l - s, M2_l) per lane l of TILE (PARTS values each), s the mean of column 0's values."""
    first = load_tile_again(x_row, cols, None, "evict_last")  # x0_l, the lane's shift
    s1 = tl.zeros([TILE], tl.float32)
    s2 = tl.zeros([TILE], tl.float32)
    for part in tl.static_range(1, PARTS):  # no reduction across the program: every tile's loads up front
        d = load_tile_again(x_row, part * TILE + cols, None, "evict_last") - first
        s1 += d
        s2 += d * d
    shift = 0.0
    for part in tl.static_range(PARTS):  # (shift - mean)^2 <= M2 / PARTS
        shift += tl.load(x_row + part * TILE).to(tl.float32)
    shift = shift / PARTS
    return shift, (first - shift) + s1 / PARTS, tl.maximum(s2 - s1 * s1 / PARTS, 0.0)


@triton.jit
def _rstd_mean(shift, a, b, c, eps, N: tl.constexpr, TILE: tl.constexpr, PARTS: tl.constexpr):
    """(rstd, mean) of a row from its lanes' sums A, B, C (the docstring's)."""
    m2 = c + PARTS * tl.maximum(b - a * a / TILE, 0.0)
    return tl.rsqrt(m2 / N + eps), shift + a / TILE


@triton.jit
def _normed_tile(x_row, y_row, offs, mean, rstd, w, b):
    """Pass 2 of a tile: y = (x - mean) rstd w + b, x again from L1 (or L2)."""
    y = (load_tile_again(x_row, offs, None, "evict_first") - mean) * rstd * w + b
    tl.store(y_row + offs, y.to(y_row.dtype.element_ty))


@triton.jit
def _ln_sums_kernel(x_ptr, w_ptr, b_ptr, y_ptr, x_stride, y_stride, eps, N: tl.constexpr, TILE: tl.constexpr):
    # Row program_id(0), N a multiple of TILE. HBM: x read once, y written once; pass 2 re-reads x from L1 / L2, w
    # and b from L2 (ld.cg).
    tl.static_assert(N % TILE == 0)
    PARTS: tl.constexpr = N // TILE
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * x_stride, y_ptr + row * y_stride
    cols = tl.arange(0, TILE)
    shift, dev, m2 = _lane_sums(x_row, cols, TILE, PARTS)
    a, b, c = tl.reduce((dev, dev * dev, m2), 0, _add3)
    rstd, mean = _rstd_mean(shift, a, b, c, eps, N, TILE, PARTS)
    for part in tl.static_range(PARTS):
        offs = part * TILE + cols
        w = load_tile_again(w_ptr, offs, None, "l2")
        _normed_tile(x_row, y_row, offs, mean, rstd, w, load_tile_again(b_ptr, offs, None, "l2"))


@triton.jit
def _ln_two_rows_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, x_stride, y_stride, eps, N: tl.constexpr, TILE: tl.constexpr):
    # Rows 2p and 2p + 1 (the last program of an odd M takes row M - 1 twice: the same values stored twice).
    # HBM: x read once, y written once; pass 2 re-reads both rows from L1 / L2 and each (w, b) tile once for both.
    tl.static_assert(N % TILE == 0)
    PARTS: tl.constexpr = N // TILE
    row0 = 2 * tl.program_id(0).to(tl.int64)
    row1 = tl.minimum(row0 + 1, M - 1)
    x0, y0 = x_ptr + row0 * x_stride, y_ptr + row0 * y_stride
    x1, y1 = x_ptr + row1 * x_stride, y_ptr + row1 * y_stride
    cols = tl.arange(0, TILE)
    shift0, dev0, m2_0 = _lane_sums(x0, cols, TILE, PARTS)
    shift1, dev1, m2_1 = _lane_sums(x1, cols, TILE, PARTS)
    a0, b0, c0, a1, b1, c1 = tl.reduce((dev0, dev0 * dev0, m2_0, dev1, dev1 * dev1, m2_1), 0, _add6)
    rstd0, mean0 = _rstd_mean(shift0, a0, b0, c0, eps, N, TILE, PARTS)
    rstd1, mean1 = _rstd_mean(shift1, a1, b1, c1, eps, N, TILE, PARTS)
    for part in tl.static_range(PARTS):
        offs = part * TILE + cols
        w = load_tile_again(w_ptr, offs, None, "l2")
        b = load_tile_again(b_ptr, offs, None, "l2")
        _normed_tile(x0, y0, offs, mean0, rstd0, w, b)
        _normed_tile(x1, y1, offs, mean1, rstd1, w, b)


def sums_layer_norm(x, w, b, two_rows: bool, tile: int = 8192, maxnreg: int | None = None):
    """y = layer_norm(x, w, b) of the [M, N] rows x (N a multiple of `tile`) through one of the experiment's kernels.
    One program an SM (maxnreg=64) for two rows, or one row past ONE_PROGRAM_MIN_N, unless maxnreg is given."""
    M, N = x.shape
    y = torch.empty_like(x)
    maxnreg = maxnreg or (64 if two_rows or N > ONE_PROGRAM_MIN_N else None)
    options = dict(num_warps=WARPS, **(dict(maxnreg=maxnreg) if maxnreg else {}))
    if two_rows:
        entry = launch(_ln_two_rows_kernel, (-(-M // 2),), x, w, b, y, M, x.stride(0), y.stride(0), 1e-5, N=N, TILE=tile,
                       **options)
    else:
        entry = launch(_ln_sums_kernel, (M,), x, w, b, y, x.stride(0), y.stride(0), 1e-5, N=N, TILE=tile, **options)
    if entry is not None:
        REGISTERS[("two_rows" if two_rows else "sums", N, tile)] = entry.compiled.n_regs
    return y


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--widths", default="16384,24576,32768,40960,49152,65536")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_bandwidth()
    rows = []
    for N in map(int, args.widths.split(",")):
        # rows centred on 1e4 (bf16 values 64 apart there): the statistics must keep the spread
        x = (1e4 + 64 * torch.randn(ELEMENTS // N, N, device="cuda")).to(torch.bfloat16)
        w, b = torch.randn(N, device="cuda", dtype=x.dtype), torch.randn(N, device="cuda", dtype=x.dtype)
        ref = ln.layer_norm_eager(x, w, b)

        def timed(name, run):
            rows.append(measured("layer_norm", N, name, run, ref, 2 * x.nbytes, copy_gbps))

        timed("library", lambda: rooftop.layer_norm(x, w, b))
        timed("sums", lambda: sums_layer_norm(x, w, b, False))
        for tile in (4096, 8192):
            timed(f"two_rows_t{tile}", lambda t=tile: sums_layer_norm(x, w, b, True, t))
        (out / "exp-ln-sums.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows, registers={
            str(k): v for k, v in REGISTERS.items()}), indent=1))
    print("registers (kernel, N, tile):", REGISTERS)
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27 (err: relative, against eager)")
    for N in map(int, args.widths.split(",")):
        print(f"layer_norm {N:6d} " + "  ".join(f"{r['provider']} {r['pct']:5.1f} ({r['err']:.0e})" for r in rows
                                              if r["N"] == N))


if __name__ == "__main__":
    main()
