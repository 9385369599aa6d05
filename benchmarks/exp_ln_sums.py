"""Experiment: what holds LayerNorm's wide rows (no residual) below RMSNorm's reload kernel, on the H200, bf16,
M * N = 2^27, GPU time (graph replay, L2 flushed), % of a same-run copy.

At 65536 RMSNorm's reload kernel (one program an SM, the row kept in L1 between the passes) runs 94-96% of copy;
LayerNorm in the same shape 73-81% (session 39, call a: "lane-shifted sums" with Chan's merge across the program;
the library's Gluon ring 84.5). The two kernels differ in
(1) the reduction between the passes: RMSNorm one tl.sum; the lane-shifted sums one tl.reduce of (n, mean, M2)
    through Chan's merge (a division a step, three values through shared memory). With one program an SM nothing
    overlaps it: the SM's DRAM traffic stops for its whole latency, every row;
(2) the parameters: LayerNorm's pass 2 reads w and b (2 x 128 KB a row at 65536) from L2 or L1, RMSNorm's only w.
The variants (each with every tile's loads issued up front):
- "library": rooftop.layer_norm; "library_bare": without weight and bias (what the parameters cost the library);
- "chan": the lane-shifted sums merged by Chan's formula (call a's kernel), w and b past L1;
- "sums": the same lanes (each shifted by its own first value, sums of d and d^2: a lane's (mean, M2) exact to fp32
  whatever the row), merged by one tl.reduce of three plain sums instead: with s the mean of column 0's values
  (a scalar each thread loads), A = sum_l (m_l - s), B = sum_l (m_l - s)^2, C = sum_l M2_l over the TILE lanes of
  PARTS values each, mean = s + A / TILE and M2 = C + PARTS (B - A^2 / TILE). The cancellation in B - A^2 / TILE is
  bounded by (s - mean)^2 <= M2 / PARTS (s a mean of PARTS of the row's values): relative error <= eps * N / PARTS;
- "sums_bare": the same without w and b; "sums_xl2": x past L1 in both passes (ld.cg: pass 2 re-reads it from L2),
  w and b kept in L1 (evict_last): L2 reads 2 instead of 3 row-sizes a row;
- "welford49k" (at 49152 only): the library with its Welford kernel's wide rows to 65536 (two programs an SM, 192 KB
  of rows in L1).
Programs: two an SM (uncapped registers) to 40960, one (maxnreg=64) past it, as RMSNorm's reload kernel.
Predicted: if (1) holds, "sums" >= 90% at 49152-65536; if (2), "sums_bare" well above "sums" and "sums_xl2" between.
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
from rooftop.ops.layer_norm import _chan_merge

TILE, WARPS, ONE_PROGRAM_MIN_N = 8192, 32, 40960
REGISTERS = {}  # launch -> registers a thread (two 32-warp programs an SM at most 32)


@triton.jit
def _raw_params(w_ptr, b_ptr, offs, POLICY: tl.constexpr):
    """(w, b) of tile `offs` as loaded (16-bit: half the registers of fp32 while in flight; widened at their use)."""
    CACHE: tl.constexpr = ".cg" if POLICY == "l2" else ""
    EVICT: tl.constexpr = "" if POLICY == "l2" else POLICY
    return (tl.load(w_ptr + offs, cache_modifier=CACHE, eviction_policy=EVICT),
            tl.load(b_ptr + offs, cache_modifier=CACHE, eviction_policy=EVICT))


@triton.jit
def _add3(a0, b0, c0, a1, b1, c1):
    return a0 + a1, b0 + b1, c0 + c1


@triton.jit
def _ln_sums_reload_kernel(x_ptr, w_ptr, b_ptr, y_ptr, x_stride, y_stride, eps, N: tl.constexpr, TILE: tl.constexpr,
                           CHAN: tl.constexpr, HAS_PARAMS: tl.constexpr, X_POLICY: tl.constexpr,
                           PARAM_POLICY: tl.constexpr, AHEAD: tl.constexpr):
    # Row program_id(0), N a multiple of TILE. HBM: x read once, y written once; pass 2 re-reads x from L1 / L2.
    tl.static_assert(N % TILE == 0)
    PARTS: tl.constexpr = N // TILE
    tl.static_assert(AHEAD < PARTS)
    X_FIRST: tl.constexpr = "evict_last" if X_POLICY == "l1" else "l2"
    X_AGAIN: tl.constexpr = "evict_first" if X_POLICY == "l1" else "l2"
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_stride
    y_row = y_ptr + row * y_stride
    cols = tl.arange(0, TILE)
    first = load_tile_again(x_row, cols, None, X_FIRST)  # x0_l, the lane's shift
    s1 = tl.zeros([TILE], tl.float32)
    s2 = tl.zeros([TILE], tl.float32)
    for part in tl.static_range(1, PARTS):  # no reduction across the program: every tile's loads up front
        d = load_tile_again(x_row, part * TILE + cols, None, X_FIRST) - first
        s1 += d
        s2 += d * d
    lane_m2 = tl.maximum(s2 - s1 * s1 / PARTS, 0.0)
    # pass 2's w and b of the first AHEAD tiles, issued before the reduction (their L2 latency under it)
    if AHEAD > 0:
        p0 = _raw_params(w_ptr, b_ptr, cols, PARAM_POLICY)
    if AHEAD > 1:
        p1 = _raw_params(w_ptr, b_ptr, TILE + cols, PARAM_POLICY)
    if AHEAD > 2:
        p2 = _raw_params(w_ptr, b_ptr, 2 * TILE + cols, PARAM_POLICY)
    if CHAN:
        shift = tl.load(x_row).to(tl.float32)
        lane_mean = (first - shift) + s1 / PARTS  # of x - shift
        count = tl.full([TILE], PARTS, tl.float32)
        _, row_mean, row_m2 = tl.reduce((count, lane_mean, lane_m2), 0, _chan_merge)
        mean = shift + row_mean
    else:
        shift = 0.0  # column 0's mean: a mean of PARTS of the row's values, so (shift - mean)^2 <= M2 / PARTS
        for part in tl.static_range(PARTS):
            shift += tl.load(x_row + part * TILE).to(tl.float32)
        shift = shift / PARTS
        lane_dev = (first - shift) + s1 / PARTS  # m_l - shift
        a, b, c = tl.reduce((lane_dev, lane_dev * lane_dev, lane_m2), 0, _add3)
        mean = shift + a / TILE
        row_m2 = c + PARTS * tl.maximum(b - a * a / TILE, 0.0)
    rstd = tl.rsqrt(row_m2 / N + eps)
    for part in tl.static_range(PARTS):  # pass 2: y = (x - mean) rstd w + b
        offs = part * TILE + cols
        if AHEAD == 0:
            if HAS_PARAMS:
                params = _raw_params(w_ptr, b_ptr, offs, PARAM_POLICY)
        else:  # tile t's (w, b) loaded AHEAD tiles back; tile t + AHEAD's issued now, before tile t's store
            params = p0
            if AHEAD == 1:
                if part + 1 < PARTS:
                    p0 = _raw_params(w_ptr, b_ptr, offs + TILE, PARAM_POLICY)
            if AHEAD == 2:
                p0 = p1
                if part + 2 < PARTS:
                    p1 = _raw_params(w_ptr, b_ptr, offs + 2 * TILE, PARAM_POLICY)
            if AHEAD == 3:
                p0 = p1
                p1 = p2
                if part + 3 < PARTS:
                    p2 = _raw_params(w_ptr, b_ptr, offs + 3 * TILE, PARAM_POLICY)
        y = (load_tile_again(x_row, offs, None, X_AGAIN) - mean) * rstd
        if HAS_PARAMS:
            w, b = params
            y = y * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty))


def sums_layer_norm(x, w, b, chan: bool, x_policy: str = "l1", param_policy: str = "l2", ahead: int = 0,
                    maxnreg: int | None = None):
    """y = layer_norm(x, w, b) of the [M, N] rows x through the experiment's kernel (w, b None: both left out);
    maxnreg 64 past ONE_PROGRAM_MIN_N unless given."""
    y = torch.empty_like(x)
    N = x.shape[1]
    maxnreg = maxnreg or (64 if N > ONE_PROGRAM_MIN_N else None)
    one_program = dict(maxnreg=maxnreg) if maxnreg else {}
    entry = launch(_ln_sums_reload_kernel, (x.shape[0],), x, w if w is not None else x, b if b is not None else x, y,
           x.stride(0), y.stride(0), 1e-5, N=N, TILE=TILE, CHAN=chan, HAS_PARAMS=w is not None, X_POLICY=x_policy,
           PARAM_POLICY=param_policy, AHEAD=min(ahead, N // TILE - 1) if w is not None else 0, num_warps=WARPS, **one_program)
    REGISTERS[(N, chan, x_policy, param_policy, ahead, maxnreg)] = entry.compiled.n_regs
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

        def timed(name, run, reference):
            rows.append(measured("layer_norm", N, name, run, reference, 2 * x.nbytes, copy_gbps))

        timed("library", lambda: rooftop.layer_norm(x, w, b), ref)
        timed("sums", lambda: sums_layer_norm(x, w, b, False), ref)
        for ahead in (1, 2, 3):
            timed(f"sums_a{ahead}", lambda a=ahead: sums_layer_norm(x, w, b, False, ahead=a), ref)
        timed("sums_a2_l1", lambda: sums_layer_norm(x, w, b, False, param_policy="evict_last", ahead=2), ref)
        if N <= ONE_PROGRAM_MIN_N:  # one tile ahead in 32 registers (offline: no spill; two tiles spill)
            timed("sums_a1_r32", lambda: sums_layer_norm(x, w, b, False, ahead=1, maxnreg=32), ref)
        (out / "exp-ln-sums.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows, registers={
            str(k): v for k, v in REGISTERS.items()}), indent=1))
    print("registers (N, chan, x, params, ahead, maxnreg):", REGISTERS)
    print(f"\ncopy {copy_gbps:.0f} GB/s; % of copy (GPU time), bf16, M * N = 2^27 (err: relative, against eager)")
    for N in map(int, args.widths.split(",")):
        print(f"layer_norm {N:6d} " + "  ".join(f"{r['provider']} {r['pct']:5.1f} ({r['err']:.0e})" for r in rows
                                              if r["N"] == N))


if __name__ == "__main__":
    main()
