r"""Experiment: Inductor-style looped RMSNorm / LayerNorm (one row, or one slice of a row, a program; vector
accumulators; one reduction after the loop) against rooftop's norms and torch.compile, in one run.

Why: on the H200 (bf16, M * N = 2^27, GPU time by graph replay, % of a copy) torch.compile's rms_norm ran at ~98% at
N = 32768 where rooftop's Gluon ring path got 89.8%, and its LayerNorm at ~96% at 16384 where rooftop's on-chip kernel
got 87.4% (0.91x compile; issue 3 allows 3% slower at most). What Inductor runs there (torch 2.13's
runtime/triton_heuristics.py, _reduction_configs; the H200's torch may differ, so the run records Inductor's chosen
config, registers and source): for an inner reduction of 2048 < N <= 32768 it autotunes two configs on first launch,
its looped reduction (XBLOCK 1, R0_BLOCK 2048, num_warps N // 128 capped at 16: an RBLOCK-wide fp32 accumulator
updated elementwise in loop 1, one tl.sum after it, loop 2 re-reading the row from L2 to write y; LayerNorm with
Welford state per lane) and a whole-row "persistent R0_BLOCK" config (R0_BLOCK = N, 32 warps); past 32768 only the
looped one, where compile fell to 64% at 65536 (rows in flight overflow L2). This file writes the looped scheme as
rooftop would, times a small grid of its launch parameters, and a split variant for rows too wide for L2.

What the kernels compute, per row of N (statistics in fp32; y rounded to x's dtype):

    r = x + residual     (with a residual, rounded to x's dtype: the new residual stream, stored; else r = x)
    rms_norm:    y_i = r_i * rsqrt(sum_j r_j^2 / N + eps) * w_i
    layer_norm:  y_i = (r_i - mean) * rsqrt(var + eps) * w_i + b_i,   var = sum_j (r_j - mean)^2 / N

LayerNorm's statistics are those of d = r - s, s the mean of the row's first 256 values (one 512-byte load and one
reduction a row, the same s in every slice of a split row): d is exact for r within a factor 2 of s (Sterbenz), so
mean and variance keep fp32 precision relative to the row's spread, not to its mean (fp32 rows 1e4 + randn: 5e-8,
against 5.6e-4 with s = 0, fp32's tolerance 1e-5). Lane l (one of RBLOCK) sees d_{l + t RBLOCK}, t = 0, 1, ..: over
whole tiles every lane has the same count, so Welford's update takes one scalar reciprocal a tile, no division an
element:

    delta = d - mean_l;   mean_l += delta / (t + 1);   m2_l += delta (d - mean_l)

A last partial tile updates its live lanes only (the others see d = mean_l: delta 0); lane counts n_l differ by one
at most. The lanes merge by Chan's formula once a row:

    mean = sum_l n_l mean_l / N;   M2 = sum_l [m2_l + n_l (mean_l - mean)^2];   var = M2 / N

(the split kernel merges its lanes into one (mean_c, m2_c) per slice the same way, exchanges those, and merges the G
slices the same way again; a slice's count n_c follows from N, G and the slice width). RMSNorm's lanes keep sum r^2.
Pass 2: rms y = r rstd w; LayerNorm y = (d rstd - mean rstd) w + b.

The kernels (each for RMSNorm and LayerNorm: LAYER; with or without a residual):
- `_norm_rows_kernel`: program p takes rows p, p + P, .. (P = M: one row a program; P = k * SMs: persistent). Pass 1
  reads the row in RBLOCK tiles (x and the residual, storing r) into the lane accumulators; pass 2 walks the row back
  to front (the tiles pass 1 read last are the likeliest still in L2), re-reads r (or x) and writes y. Traffic: x
  (and the residual) read from DRAM once, y (and r) written once, while (rows in flight * row bytes) fits L2; w and b
  from L2 a row. No software pipelining (num_stages 1, as Inductor's reductions): ptxas unrolls RMSNorm's pass-1
  loop 4 tiles deep (loads of 4 tiles in flight) where the body is small, not LayerNorm's; an SM's other bytes in
  flight come from its other resident programs.
- `_norm_split_kernel` (N >= 65536: one row a program puts 132 * programs an SM * 2N bytes in flight, 34 MB a program
  an SM at 131072, against a 50 MB L2): a row is G slices of CHUNK columns (N / G rounded up to whole tiles) taken by
  G adjacent programs; each loops over its slice, publishes its slice's two statistics (_support.exchange_row_stats:
  8 bytes and three atomics a slice), waits for the row's other slices, merges, and re-reads its slice (from L2) back
  to front to write y: the row kernel's DRAM traffic with 1/G of its footprint a program. Grid M * G (deadlock-free:
  CUDA dispatches programs in order and the lowest unfinished row's G <= SMs programs are then all resident) or
  persistent (all programs resident at once: a multiple of G, at most the compiled kernel's programs an SM * SMs).
Eviction hints (HINTS): pass 1's loads of a row re-read later evict_last (with a residual: x and the residual
evict_first, r stored evict_last), pass 2's loads and y's stores evict_first; Triton lowers them to L1 priorities and
L2 cache policies (createpolicy.fractional.L2::evict_last / evict_first, ld/st ...L2::cache_hint); without HINTS
none. ptxas rebuilds the policy operands in every loop trip (a few uniform-datapath instructions a tile).

Offline sm_90 compile (--compile; Triton 3.6, aligned launch: bf16, N and strides multiples of 16): no spills in any
variant. Registers and programs an SM (by registers and warps), instructions an element of the main loops (pass 1 /
pass 2): rms R2048 w8 40 regs, 6 an SM, 3.1 / 7.5; rms R2048 w16 32, 4, 3.3 / 7.8; rms R4096 w8 63, 4, 2.9 / 7.7;
rms R8192 w16 64, 2, 2.9 / 8.4; ln R2048 w4 72, 7, 8.1 / 10.6; ln R2048 w8 58, 4, 9.9 / 12.6; ln R4096 w8 96, 2,
8.1 / 10.5; ln R8192 w16 93, 1, 8.5 / 11.6; split rms R4096 w8 48, 5, 3.3 / 7.7; split ln R4096 w8 101, 2, 8.3 /
10.3. At a copy's rate an H200 SM has ~32 thread-instructions an element (4 bytes an element, 4221 GB/s, 132 SMs at
1.98 GHz, 128 lanes a clock): RMSNorm uses a third, LayerNorm two thirds.

Candidates (GPU run): for each op and N in {16384, .., 262144} (M = 2^27 / N, bf16; weight bf16 [N], LayerNorm's bias
too): rooftop as it dispatches (and rooftop_triton, its Gluon path off, where it takes Gluon), torch.compile of the
registry's eager form (dynamo reset per shape; Inductor's chosen config recorded, its kernels written to
OUT_DIR/inductor-*.py), and
- phase A, rows_R{RBLOCK}_w{warps}: grid M, HINTS, RBLOCK in {2048, 4096, 8192} x warps in {4, 8, 16};
- phase B1 (N >= 65536), split_G{G}_R{RBLOCK}_w{warps}: G in {2, 4, 8}, RBLOCK x warps in {4096 x 8, 8192 x 16},
  grid M * G; the fastest of them also on a persistent grid (_p);
- phase B2, rows_R{RBLOCK}_w{warps}_p{k}: persistent grids of k programs an SM (k in {1, 2, 4}, at most what fits) for
  RBLOCK x warps in {8192 x 16, 8192 x 8, 4096 x 8} and the fastest grid-M config;
- phase B3, the fastest grid-M config without HINTS (_nohint).
Every candidate's outputs are checked against the float64 reference (bf16 tolerance 1.5e-2, DESIGN.md; with a
residual the new residual bit for bit) before it is timed: GPU time alone (rooftop.ops._autotune.time_ms: one call
captured in a CUDA graph and replayed, L2 flushed between runs), GB/s of the op's minimum bytes (registry cost) and %
of a 1 GiB device copy timed the same way in the same run. The first launch of every split candidate runs under a 10 s
watchdog (a deadlock saves what was measured and exits 124). The grid-M and split variants compile in spawned worker
processes (Triton's on-disk cache) while rooftop and torch.compile of the first case are measured. A time budget
(--budget-s, default 100) skips what is left, in the order above: phase A for every (op, N) first.

Predictions: grid M at N <= 32768 within 2% of compile for rms_norm (RBLOCK 2048-4096, 8-16 warps; 4-6 programs an
SM keep 16-64 KB of rows in flight) and 92-96% for layer_norm at 16384-32768 (fewer programs an SM, more
instructions); at 65536 grid M loses to L2 (as compile does), split G = 2-4 or persistent k = 2 wins (~90% rms, ~85%
layer_norm); at 131072-262144 split G = 4-8 (slices of 32-64 KB, like the narrow rows) ~88-92% rms, 82-88% layer_norm,
the row kernel at most ~70% there. Hints: a few % at N >= 32768, nothing below.

Usage:
  .venv/bin/python benchmarks/exp_norm_looped.py --check     # CPU: every kernel and flag in Triton's interpreter
  .venv/bin/python benchmarks/exp_norm_looped.py --compile   # CPU: offline sm_90 compile, registers / spills / SASS
  # H200, from the repo root (under 120 s; --ops add_rms_norm,add_layer_norm for the residual forms):
  PYTHONPATH=src python benchmarks/exp_norm_looped.py OUT_DIR
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

if "--check" in sys.argv:  # before triton is imported
    os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from rooftop.ops._support import cdiv, exchange_row_stats, launch, prepare, row_pointers  # noqa: E402

TOTAL_ELEMS = 1 << 27
WIDTHS = (16384, 32768, 65536, 131072, 262144)
SPLIT_MIN_N = 65536
RBLOCKS = (2048, 4096, 8192)
WARPS = (4, 8, 16)
PERSISTENT_K = (1, 2, 4)
PERSISTENT_CONFIGS = ((8192, 16), (8192, 8), (4096, 8))
GROUPS = (2, 4, 8)
G_POW2 = 8  # the exchange's vector width: G is a runtime argument up to 8, one compiled kernel for every G
SPLIT_CONFIGS = ((4096, 8), (8192, 16))
OPS = ("rms_norm", "layer_norm")
SHIFT_COLS = tl.constexpr(256)  # LayerNorm's shift: the mean of a row's first SHIFT_COLS values
TOL_BF16 = 1.5e-2

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _load(ptr, offs, end, MASKED: tl.constexpr, POLICY: tl.constexpr):
    if MASKED:
        v = tl.load(ptr + offs, mask=offs < end, other=0.0, eviction_policy=POLICY)
    else:
        v = tl.load(ptr + offs, eviction_policy=POLICY)
    return v


@triton.jit
def _store(ptr, offs, end, value, MASKED: tl.constexpr, POLICY: tl.constexpr):
    if MASKED:
        tl.store(ptr + offs, value, mask=offs < end, eviction_policy=POLICY)
    else:
        tl.store(ptr + offs, value, eviction_policy=POLICY)


@triton.jit
def _pass1_tile(x_row, res_row, r_row, offs, end, HAS_RESIDUAL: tl.constexpr, MASKED: tl.constexpr,
                X_POLICY: tl.constexpr, R_POLICY: tl.constexpr):
    """fp32 r of pass 1's tile `offs` (columns at or past `end` read 0 when MASKED). With a residual r = x + residual,
    rounded to r's dtype, is stored (the new residual stream, re-read by pass 2) and returned as stored."""
    r = _load(x_row, offs, end, MASKED, X_POLICY).to(tl.float32)
    if HAS_RESIDUAL:
        r = (r + _load(res_row, offs, end, MASKED, X_POLICY).to(tl.float32)).to(r_row.dtype.element_ty)
        _store(r_row, offs, end, r, MASKED, R_POLICY)
        r = r.to(tl.float32)
    return r


@triton.jit
def _row_shift(x_row, res_row, N, HAS_RESIDUAL: tl.constexpr):
    """LayerNorm's shift s: the mean of the row's first SHIFT_COLS values of r (unrounded: any fp32 value near the
    row's values does). One 512-byte load and one reduction a row; the same s in every slice of a split row. An
    outlier among them moves s by its value / SHIFT_COLS only (one value as s would cost the row's d their precision
    where that value is far from the rest)."""
    cols = tl.arange(0, SHIFT_COLS)
    s = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        s += tl.load(res_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    return tl.sum(s, axis=0) / tl.minimum(N, SHIFT_COLS)


@triton.jit
def _segment_stats(x_row, res_row, r_row, start, end, cols, shift, LAYER: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                   X_POLICY: tl.constexpr, R_POLICY: tl.constexpr):
    """Pass 1 over columns [start, end) of a row: per lane (column mod RBLOCK) its count n_l and, LayerNorm, the
    running (mean_l, m2_l) of d = r - shift; RMSNorm (0, sum r^2). Whole tiles unmasked, then the partial one."""
    RBLOCK: tl.constexpr = cols.shape[0]
    tiles = tl.maximum(end - start, 0) // RBLOCK
    mean = tl.zeros([RBLOCK], tl.float32)
    m2 = tl.zeros([RBLOCK], tl.float32)
    for t in range(0, tiles):
        r = _pass1_tile(x_row, res_row, r_row, start + t * RBLOCK + cols, end, HAS_RESIDUAL, False, X_POLICY, R_POLICY)
        if LAYER:
            d = r - shift
            delta = d - mean
            mean += delta * (1.0 / (t + 1))  # every lane's (t + 1)th value: one scalar reciprocal a tile
            m2 += delta * (d - mean)
        else:
            m2 += r * r
    count = tl.zeros([RBLOCK], tl.float32) + tiles
    offs = start + tiles * RBLOCK + cols
    if start + tiles * RBLOCK < end:
        r = _pass1_tile(x_row, res_row, r_row, offs, end, HAS_RESIDUAL, True, X_POLICY, R_POLICY)
        live = offs < end
        if LAYER:
            d = tl.where(live, r - shift, mean)  # a lane past the end: delta 0, its state unchanged
            delta = d - mean
            mean += delta * (1.0 / (tiles + 1))
            m2 += delta * (d - mean)
        else:
            m2 += r * r  # 0 past the end
        count += live.to(tl.float32)
    return count, mean, m2


@triton.jit
def _chan_merge(count, mean, m2, n):
    """Chan's merge of parts (count, mean, m2) of n values in all: their (mean, M2)."""
    total_mean = tl.sum(count * mean, axis=0) / tl.maximum(n, 1.0)
    dev = mean - total_mean
    return total_mean, tl.sum(m2 + count * dev * dev, axis=0)


@triton.jit
def _write_tile(src_row, w_ptr, b_ptr, y_row, offs, end, shift, rstd, centre, LAYER: tl.constexpr,
                MASKED: tl.constexpr, REREAD_POLICY: tl.constexpr, Y_POLICY: tl.constexpr):
    r = _load(src_row, offs, end, MASKED, REREAD_POLICY).to(tl.float32)
    w = _load(w_ptr, offs, end, MASKED, "evict_last").to(tl.float32)
    if LAYER:
        y = ((r - shift) * rstd - centre) * w + _load(b_ptr, offs, end, MASKED, "evict_last").to(tl.float32)
    else:
        y = r * rstd * w
    _store(y_row, offs, end, y.to(y_row.dtype.element_ty), MASKED, Y_POLICY)


@triton.jit
def _segment_write(src_row, w_ptr, b_ptr, y_row, start, end, cols, shift, rstd, centre, LAYER: tl.constexpr,
                   REREAD_POLICY: tl.constexpr, Y_POLICY: tl.constexpr):
    """Pass 2 over columns [start, end): y from r re-read (or x), back to front: the partial tile, then the whole
    ones from the last: the tiles pass 1 read last are the likeliest still in L2."""
    RBLOCK: tl.constexpr = cols.shape[0]
    tiles = tl.maximum(end - start, 0) // RBLOCK
    if start + tiles * RBLOCK < end:
        _write_tile(src_row, w_ptr, b_ptr, y_row, start + tiles * RBLOCK + cols, end, shift, rstd, centre, LAYER,
                    True, REREAD_POLICY, Y_POLICY)
    for i in range(0, tiles):
        _write_tile(src_row, w_ptr, b_ptr, y_row, start + (tiles - 1 - i) * RBLOCK + cols, end, shift, rstd, centre,
                    LAYER, False, REREAD_POLICY, Y_POLICY)


@triton.jit
def _norm_rows_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride, r_stride, eps,
                      LAYER: tl.constexpr, HAS_RESIDUAL: tl.constexpr, RBLOCK: tl.constexpr, X_POLICY: tl.constexpr,
                      R_POLICY: tl.constexpr, REREAD_POLICY: tl.constexpr, Y_POLICY: tl.constexpr):
    # Per row: pass 1 reads x (+ residual, writes r), pass 2 re-reads r (or x), from L2 while the rows in flight fit,
    # and writes y: 2 (4) * N * itemsize bytes a row from DRAM, w (and b) from L2. Program p takes rows p, p + P, ..
    cols = tl.arange(0, RBLOCK)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, row, x_stride, y_stride,
                                                      res_stride, r_stride, HAS_RESIDUAL)
        if LAYER:
            shift = _row_shift(x_row, res_row, N, HAS_RESIDUAL)
            count, mean, m2 = _segment_stats(x_row, res_row, src_row, 0, N, cols, shift, LAYER, HAS_RESIDUAL,
                                             X_POLICY, R_POLICY)
            row_mean, row_m2 = _chan_merge(count, mean, m2, N * 1.0)
            rstd = tl.rsqrt(row_m2 / N + eps)
            centre = row_mean * rstd
        else:
            shift = 0.0
            _, _, sum_sq = _segment_stats(x_row, res_row, src_row, 0, N, cols, shift, LAYER, HAS_RESIDUAL,
                                          X_POLICY, R_POLICY)
            rstd = tl.rsqrt(tl.sum(sum_sq, axis=0) / N + eps)
            centre = 0.0
        _segment_write(src_row, w_ptr, b_ptr, y_row, 0, N, cols, shift, rstd, centre, LAYER, REREAD_POLICY, Y_POLICY)


@triton.jit
def _norm_split_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, part_ptr, cnt_ptr, M, N, x_stride, res_stride,
                       y_stride, r_stride, eps, G, CHUNK, LAYER: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                       RBLOCK: tl.constexpr, G_POW2: tl.constexpr, X_POLICY: tl.constexpr, R_POLICY: tl.constexpr,
                       REREAD_POLICY: tl.constexpr, Y_POLICY: tl.constexpr):
    # Program p takes slice c = p % G (columns [c CHUNK, min((c + 1) CHUNK, N))) of rows p // G, p // G + P / G, ..
    # (P programs, a multiple of G). Per row and slice: pass 1 over the slice, 8 bytes of statistics published and
    # the row's G pairs read back (exchange_row_stats), pass 2 re-reads the slice from L2 and writes y: the row
    # kernel's DRAM traffic with 1/G of its L2 footprint a program.
    chunk = tl.program_id(0) % G
    start = chunk * CHUNK
    end = tl.minimum(start + CHUNK, N)
    cols = tl.arange(0, RBLOCK)
    g = tl.arange(0, G_POW2)
    for row in range(tl.program_id(0) // G, M, tl.num_programs(0) // G):
        x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, row, x_stride, y_stride,
                                                      res_stride, r_stride, HAS_RESIDUAL)
        if LAYER:
            shift = _row_shift(x_row, res_row, N, HAS_RESIDUAL)  # the same s in every slice of the row
            count, mean, m2 = _segment_stats(x_row, res_row, src_row, start, end, cols, shift, LAYER, HAS_RESIDUAL,
                                             X_POLICY, R_POLICY)
            chunk_mean, chunk_m2 = _chan_merge(count, mean, m2, tl.maximum(end - start, 0) * 1.0)
            means, m2s = exchange_row_stats(part_ptr, cnt_ptr, row, chunk, chunk_mean, chunk_m2, 0.0, 0.0, G, G_POW2)
            counts = tl.where(g < G, tl.maximum(tl.minimum(g * CHUNK + CHUNK, N) - g * CHUNK, 0), 0).to(tl.float32)
            row_mean, row_m2 = _chan_merge(counts, means, m2s, N * 1.0)
            rstd = tl.rsqrt(row_m2 / N + eps)
            centre = row_mean * rstd
        else:
            shift = 0.0
            _, _, sum_sq = _segment_stats(x_row, res_row, src_row, start, end, cols, shift, LAYER, HAS_RESIDUAL,
                                          X_POLICY, R_POLICY)
            sums, _ = exchange_row_stats(part_ptr, cnt_ptr, row, chunk, tl.sum(sum_sq, axis=0), 0.0, 0.0, 0.0, G,
                                         G_POW2)
            rstd = tl.rsqrt(tl.sum(sums, axis=0) / N + eps)
            centre = 0.0
        _segment_write(src_row, w_ptr, b_ptr, y_row, start, end, cols, shift, rstd, centre, LAYER, REREAD_POLICY,
                       Y_POLICY)


# ---------------------------------------------------------------------------------------------
# Launches


def policies(hints: bool, has_residual: bool) -> dict:
    """The eviction policies of the kernels' loads and stores (see the docstring)."""
    if not hints:
        return dict(X_POLICY="", R_POLICY="", REREAD_POLICY="", Y_POLICY="")
    return dict(X_POLICY="evict_first" if has_residual else "evict_last", R_POLICY="evict_last",
                REREAD_POLICY="evict_first", Y_POLICY="evict_first")


def rows_args(x, res, w, b, y, r, eps) -> tuple:
    """_norm_rows_kernel's runtime arguments for the [M, N] views (pointers not used: x's, or w's for b)."""
    M, N = x.shape
    has_res = res is not None
    return (x, res if has_res else x, w, b if b is not None else w, y, r if has_res else y, M, N, x.stride(0),
            res.stride(0) if has_res else 0, y.stride(0), r.stride(0) if has_res else 0, eps)


def split_chunk(N: int, G: int, rblock: int) -> int:
    """A slice's columns: N / G rounded up to whole tiles (the last slice takes the rest, perhaps less)."""
    return cdiv(cdiv(N, G), rblock) * rblock


def split_args(x, res, w, b, y, r, eps, G, rblock, part, counters) -> tuple:
    """_norm_split_kernel's runtime arguments: part, fp32 [M * G_POW2 * 2] workspace; counters, M zeroed int32
    (each launch leaves them at zero)."""
    args = rows_args(x, res, w, b, y, r, eps)
    return (*args[:6], part, counters, *args[6:], G, split_chunk(x.shape[1], G, rblock))


def rows_constexprs(layer: bool, has_residual: bool, rblock: int, warps: int, hints: bool) -> dict:
    return dict(LAYER=layer, HAS_RESIDUAL=has_residual, RBLOCK=rblock, **policies(hints, has_residual),
                num_warps=warps, num_stages=1)


def split_constexprs(layer: bool, has_residual: bool, rblock: int, warps: int, hints: bool) -> dict:
    return dict(rows_constexprs(layer, has_residual, rblock, warps, hints), G_POW2=G_POW2)


def norm_rows(x, res, w, b, y, r, eps, layer, rblock, warps, hints, programs) -> None:
    """y (and r) of the [M, N] rows by _norm_rows_kernel on `programs` programs."""
    launch(_norm_rows_kernel, (programs,), *rows_args(x, res, w, b, y, r, eps),
           **rows_constexprs(layer, res is not None, rblock, warps, hints))


def norm_split(x, res, w, b, y, r, eps, layer, rblock, warps, hints, G, programs, part, counters) -> None:
    """y (and r) of the [M, N] rows by _norm_split_kernel, rows in G slices, on `programs` programs: M * G, or a
    multiple of G that are all resident at once (they wait for each other)."""
    launch(_norm_split_kernel, (programs,), *split_args(x, res, w, b, y, r, eps, G, rblock, part, counters),
           **split_constexprs(layer, res is not None, rblock, warps, hints))


def resident_per_sm(kernel, args: tuple, constexprs: dict) -> int:
    """Programs of the compiled kernel an SM holds at once (registers, shared memory, warps: Launch.resident_per_sm)."""
    return prepare(kernel, *args, **constexprs).resident_per_sm


# ---------------------------------------------------------------------------------------------
# Reference (float64) and the interpreter check


def reference(x, res, w, b, eps, layer):
    """(y, r) in float64 (r: the new residual, rounded to x's dtype, or None)."""
    r = None if res is None else (x.float() + res.float()).to(x.dtype)
    h = (x if r is None else r).double()
    if layer:
        c = h - h.mean(-1, keepdim=True)
        y = c * torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + eps) * w.double() + b.double()
    else:
        y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * w.double()
    return y, r


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| (DESIGN.md); inf where out is not finite."""
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def _threaded_interpreter() -> None:
    """The interpreter runs a grid's programs one after another: a split row's programs would wait for each other
    for ever. For --check, run each program in its own thread, program ids thread-local (the rest of the
    interpreter's state is per launch)."""
    import inspect
    import threading

    import numpy as np
    from triton.runtime import interpreter as interp

    local = threading.local()
    interp.interpreter_builder.create_get_program_id = lambda axis: interp.TensorHandle(
        np.array([local.idx[axis]], dtype=np.int32), tl.int32)

    def call(self, *args_dev, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if k in inspect.getfullargspec(self.fn).args}  # not num_warps, ..
        args_hst, kwargs_hst = self._init_args_hst(args_dev, kwargs)
        patch_scope = interp._patch_lang(self.fn)
        try:
            args = inspect.getcallargs(self.fn, *args_hst, **kwargs_hst)
            args = {k: v if k in self.constexprs else interp._implicit_cvt(v) for k, v in args.items()}
            grid = tuple(self.grid) + (1,) * (3 - len(self.grid))
            interp.interpreter_builder.set_grid_dim(*grid)
            errors = []

            def program(idx):
                local.idx = idx
                try:
                    self.fn(**args)
                except Exception as e:  # noqa: BLE001 (re-raised below)
                    errors.append(e)

            threads = [threading.Thread(target=program, args=((i, 0, 0),)) for i in range(grid[0])]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
        finally:
            patch_scope.restore()
        self._restore_args_dev(args_dev, args_hst, kwargs, kwargs_hst)

    interp.GridExecutor.__call__ = call


def check() -> int:
    """Every kernel and flag in the interpreter on small rows (several tiles, a partial last tile, rows shorter than
    a tile), against the float64 reference: DESIGN.md's tolerances; the new residual bit for bit (fp32, fp16; bf16:
    the interpreter truncates where the GPU rounds). LayerNorm on fp32 rows 1e4 + randn at fp32's tolerance."""
    _threaded_interpreter()
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: TOL_BF16}
    failures = 0
    torch.manual_seed(0)

    def run_case(name, x, res, w, b, layer, rblock, split=None, hints=True):
        nonlocal failures
        M, N = x.shape
        y = torch.full_like(x, float("nan"))
        r = torch.full_like(x, float("nan")) if res is not None else None
        if split is None:
            norm_rows(x, res, w, b, y, r, 1e-5, layer, rblock, 4, hints, min(M, 3))
        else:
            G, programs = split
            part = torch.full((M * G * 2,), float("nan"))
            counters = torch.zeros(M, dtype=torch.int32)
            norm_split(x, res, w, b, y, r, 1e-5, layer, rblock, 4, hints, G, programs, part, counters)
            assert not counters.any(), "split counters not left at zero"
        y_ref, r_ref = reference(x, res, w, b, 1e-5, layer)
        err = rel_err(y, y_ref)
        ok = err < tol[x.dtype]
        if res is not None:
            ok &= (torch.equal(r, r_ref) if x.dtype != torch.bfloat16 else rel_err(r, r_ref.double()) < tol[x.dtype])
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name:58s} rel err {err:.2e}", flush=True)

    for layer in (False, True):
        op = "layer_norm" if layer else "rms_norm"
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for N, rblock in ((256, 64), (320, 64), (1000, 128), (1024, 256), (40, 64)):
                for has_res in (False, True):
                    x = torch.randn(5, N, dtype=dtype)
                    res = torch.randn(5, N, dtype=dtype) if has_res else None
                    w = (torch.rand(N) + 0.5).to(dtype)
                    b = torch.randn(N).to(dtype)
                    tag = f"{op} {str(dtype)[6:]} N={N} R={rblock} res={int(has_res)}"
                    run_case(f"rows  {tag}", x, res, w, b, layer, rblock)
                    if dtype != torch.float16:
                        continue
                    for G, programs in ((2, 10), (3, 6), (4, 4)):  # every row's slices, or persistent
                        run_case(f"split {tag} G={G} P={programs}", x, res, w, b, layer, rblock, (G, programs))
        run_case(f"rows  {op} bfloat16 N=1000 R=128 no hints", torch.randn(5, 1000, dtype=torch.bfloat16), None,
                 torch.rand(1000, dtype=torch.bfloat16) + 0.5, torch.randn(1000, dtype=torch.bfloat16), layer, 128,
                 hints=False)
    big = 1e4 + torch.randn(4, 1000)
    w, b = torch.rand(1000) + 0.5, torch.randn(1000)
    run_case("rows  layer_norm float32 1e4 + randn N=1000 R=128", big, None, w, b, True, 128)
    run_case("split layer_norm float32 1e4 + randn N=1000 R=128 G=4", big, None, w, b, True, 128, (4, 16))
    print(f"{failures} failures")
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# Offline sm_90 compile


def _compile_sm90(kernel, constexprs: dict):
    """kernel compiled for sm_90 as the GPU run launches it: bf16 tensors, fp32 workspace, int32 counters, pointers
    16-byte aligned and N, CHUNK and the row strides multiples of 16 (journal item 38)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    consts = dict(constexprs)
    options = {k: consts.pop(k) for k in ("num_warps", "num_stages")}
    sig = {}
    for a in kernel.arg_names:
        if a in consts:
            sig[a] = "constexpr"
        elif a.endswith("_ptr"):
            sig[a] = {"part_ptr": "*fp32", "cnt_ptr": "*i32"}.get(a, "*bf16")
        else:
            sig[a] = "fp32" if a == "eps" else "i32"
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(kernel.arg_names)
             if sig[a].startswith("*") or (sig[a] == "i32" and (a in ("N", "CHUNK") or "stride" in a))}
    return triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=options)


def compile_report() -> int:
    """Registers, spills (STACK, LDL/STL), resident programs an SM by registers and warps, and the SASS of each pass's
    main tile loop: ptxas unrolls them (a main loop of several tiles and a remainder loop), so a pass's loops are the
    innermost loops with global loads and float arithmetic before (pass 1) or after (pass 2) the rsqrt (MUFU.RSQ), its
    main loop the one with most loads; elements a trip = its loads / loads a vector (pass 1: x (and the residual);
    pass 2: r, w (and b)) * the vector's elements. Printed: instructions a trip, tiles a trip, instructions an
    element."""
    import re

    from gluon_sm90 import read_cubin, sass_loops

    def is_math_loop(body):
        return (any(t.startswith("LDG") for t in body)
                and any(t.split()[0].split(".")[0] in ("FFMA", "FMUL", "FADD") for t in body))

    print(f"{'kernel':26s} {'regs':>4s} {'stack':>5s} {'LDL/STL':>7s} {'res/SM':>6s} {'el/thr':>6s}   "
          f"{'pass 1: instr tiles /el':>23s}   {'pass 2: instr tiles /el':>23s}")
    for layer in (False, True):
        for has_res in (False, True):
            for split in (False, True):
                for rblock in RBLOCKS:
                    for warps in WARPS:
                        if split and (rblock, warps) not in SPLIT_CONFIGS:
                            continue
                        kernel = _norm_split_kernel if split else _norm_rows_kernel
                        consts = (split_constexprs if split else rows_constexprs)(layer, has_res, rblock, warps, True)
                        cubin = read_cubin(_compile_sm90(kernel, consts))
                        regs = int(re.search(r"REG:(\d+)", cubin.resources).group(1))
                        per_warp = -(-regs * 32 // 256) * 256
                        resident = max(1, min(4 * (16384 // per_warp) // warps, 64 // warps, 32))
                        per_thread = rblock // (32 * warps)
                        vector = min(8, per_thread)  # bf16 elements a load: 16 bytes at most
                        rsq = min(int(a, 16) for a, t in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(MUFU\.RSQ[^;]*);",
                                                                     cubin.sass))
                        loops = sass_loops(cubin.sass, is_math_loop)
                        inner = [(a, b, body) for a, b, body in loops
                                 if not any(a <= a2 and b2 <= b and (a2, b2) != (a, b) for a2, b2, _ in loops)]
                        cells = []
                        for second, loads_a_vector in ((False, 1 + has_res), (True, 2 + layer)):
                            mine = [body for a, _, body in inner if (a > rsq) == second]
                            body = max(mine, key=lambda b: sum(t.startswith("LDG") for t in b))
                            elements = sum(t.startswith("LDG") for t in body) // loads_a_vector * vector
                            cells.append(f"{len(body):5d} {elements / per_thread:5.0f} {len(body) / elements:6.2f}")
                        name = (f"{'split' if split else 'rows'} {'ln' if layer else 'rms'}{'+res' if has_res else ''}"
                                f" R{rblock} w{warps}")
                        print(f"{name:26s} {regs:4d} {cubin.resources.split('STACK:')[1]:>5s} "
                              f"{cubin.local_memory_ops:7d} {resident:6d} {per_thread:6d}   "
                              + "   ".join(f"{c:>23s}" for c in cells), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# The GPU run


def _copy_gbps(time_ms, dev) -> float:
    """GB/s of a 1 GiB device-to-device copy (read + write), timed as the candidates are. In float32: torch's
    uint8 copy read 2759 GB/s on the H200 (2026-12-01), where the session's ceiling read 4220."""
    src = torch.empty(1 << 28, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    return 2 * 4 * src.numel() / time_ms(lambda: dst.copy_(src)) / 1e6


def _inductor_modules() -> int:
    """How many generated modules torch.compile has loaded so far."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:
        return 0
    return len(PyCodeCache.modules)


def inductor_kernels(first_module: int) -> list[dict]:
    """The Triton kernels of the torch.compile'd code loaded since PyCodeCache.modules[first_module]: Inductor's
    chosen launch config (after its own autotuning), registers, spills, the number of configs it considered, and
    the source (empty if this torch keeps them elsewhere)."""
    try:
        from torch._inductor.codecache import PyCodeCache
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:
        return []
    found = []
    for module in PyCodeCache.modules[first_module:]:
        for name, obj in vars(module).items():
            if isinstance(obj, CachingAutotuner):
                for launcher in obj.launchers:
                    found.append(dict(kernel=name, config=str(getattr(launcher, "config", "?")),
                                      n_regs=getattr(launcher, "n_regs", None),
                                      n_spills=getattr(launcher, "n_spills", None),
                                      configs=len(getattr(obj, "configs", []) or []),
                                      source=getattr(getattr(obj, "fn", None), "src", "")))
    return found


def _precompile_one(layer: bool, residual: bool, split: bool, rblock: int, warps: int) -> None:
    """Compile one variant into Triton's on-disk cache, specialised as the GPU run's launches are (bf16, 16-byte
    aligned, M, N, strides and CHUNK multiples of 16, G neither 1 nor a multiple of 16): a worker of the GPU run."""
    x = torch.empty(16, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(256, device="cuda", dtype=torch.bfloat16)
    res = torch.empty_like(x) if residual else None
    views = (x, res, w, w if layer else None, torch.empty_like(x), torch.empty_like(x) if residual else None, 1e-5)
    if split:
        part = torch.empty(16 * G_POW2 * 2, device="cuda", dtype=torch.float32)
        counters = torch.zeros(16, device="cuda", dtype=torch.int32)
        prepare(_norm_split_kernel, *split_args(*views, 2, rblock, part, counters),
                **split_constexprs(layer, residual, rblock, warps, True))
    else:
        prepare(_norm_rows_kernel, *rows_args(*views), **rows_constexprs(layer, residual, rblock, warps, True))


def precompile(ops: tuple[str, ...], widths: tuple[int, ...]) -> list:
    """Start compiling the grid-M and split variants (hints on) in spawned worker processes; returns their futures.
    Triton compiles in Python, under the GIL: processes, not threads, and the main process times meanwhile."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    jobs = []
    for op in ops:
        layer, residual = op.endswith("layer_norm"), op.startswith("add_")
        jobs += [(layer, residual, False, rb, w) for rb in RBLOCKS for w in WARPS]
        if max(widths) >= SPLIT_MIN_N:
            jobs += [(layer, residual, True, rb, w) for rb, w in SPLIT_CONFIGS]
    pool = ProcessPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) // 2)),
                               mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(_precompile_one, *job) for job in jobs]
    pool.shutdown(wait=False)
    return futures


def measure(out_dir: str, ops: tuple[str, ...], widths: tuple[int, ...], budget_s: float,
            device: str = "cuda") -> int:
    from pathlib import Path

    from gluon_sm90 import results, wait_or_exit

    from rooftop import registry
    from rooftop.ops import layer_norm as layer_norm_mod
    from rooftop.ops import rms_norm as rms_norm_mod
    from rooftop.ops._autotune import time_ms

    t0 = time.monotonic()
    compiling = precompile(ops, widths)
    dev = torch.device(device)
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-norm-looped.json")
    copy_gbps = _copy_gbps(time_ms, dev)
    rows.append(dict(kind="meta", device=torch.cuda.get_device_name(0), torch=torch.__version__,
                     triton=triton.__version__, copy_GBps=round(copy_gbps, 1), num_sms=num_sms))
    print(json.dumps(rows[-1]), flush=True)

    class Case:
        """One (op, N): inputs, preallocated outputs, the float64 reference (y kept as fp32), the op's bytes."""

        def __init__(self, op: str, N: int):
            self.op, self.N, self.M = op, N, TOTAL_ELEMS // N
            self.layer, self.residual = op.endswith("layer_norm"), op.startswith("add_")
            self.spec = registry.get(op)
            torch.manual_seed(N)
            self.inputs = self.spec.make_inputs((self.M, N), torch.bfloat16, dev)
            rest = list(self.inputs)
            self.x = rest.pop(0)
            self.res = rest.pop(0) if self.residual else None
            self.w = rest.pop(0)
            self.b = rest.pop(0) if self.layer else None
            self.eps = 1e-5 if self.layer else 1e-6  # the registry's run and eager forms use these
            y_ref, self.r_ref = reference(self.x, self.res, self.w, self.b, self.eps, self.layer)
            self.y_ref, self.y_ref_norm = y_ref.float(), float(y_ref.norm())
            del y_ref
            self.y = torch.empty_like(self.x)
            self.r = torch.empty_like(self.x) if self.residual else None
            self.part = torch.empty(self.M * G_POW2 * 2, device=dev, dtype=torch.float32)
            self.counters = torch.zeros(self.M, device=dev, dtype=torch.int32)
            self.nbytes = self.spec.cost((self.M, N), torch.bfloat16).bytes

        def views(self):
            return self.x, self.res, self.w, self.b, self.y, self.r, self.eps

        def outputs(self):
            return (self.y, self.r) if self.residual else self.y

    def record(case: Case, provider: str, fn, config=None, watchdog_s=None, phase="A") -> dict:
        """Check fn's outputs (fn() returns y, or (y, r)) against the reference, then time it: a row with the
        result or the reason it has none."""
        row = dict(op=case.op, N=case.N, M=case.M, provider=provider, phase=phase, **(config or {}))
        rows.append(row)
        if time.monotonic() - t0 > budget_s:
            row["error"] = "skipped: time budget"
            return row
        try:
            case.y.fill_(float("nan"))
            if case.r is not None:
                case.r.fill_(float("nan"))
            out = fn()  # compiles (host), then launches
            if watchdog_s:
                wait_or_exit(watchdog_s, f"{provider} {case.op} at N={case.N}", save)
            y, r = out if isinstance(out, tuple) else (out, None)
            finite = bool(torch.isfinite(y).all())
            row["rel_err"] = float((y.float() - case.y_ref).norm()) / case.y_ref_norm if finite else float("inf")
            if case.residual:
                row["r_mismatches"] = int((r != case.r_ref).sum())
            del out, y, r
            if not row["rel_err"] < TOL_BF16 or row.get("r_mismatches", 0):
                row["error"] = "wrong result"
            else:
                row["us"] = round(1e3 * time_ms(fn), 2)
                row["GBps"] = round(case.nbytes / row["us"] / 1e3, 1)
                row["pct_copy"] = round(100 * row["GBps"] / copy_gbps, 1)
        except Exception as e:  # a candidate that fails is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(f"[{time.monotonic() - t0:5.1f} s] " + json.dumps({k: v for k, v in row.items() if k != "inductor"}),
              flush=True)
        save()
        return row

    def rows_fn(case, rblock, warps, hints, programs):
        def fn():
            norm_rows(*case.views(), case.layer, rblock, warps, hints, programs)
            return case.outputs()
        return fn

    def split_fn(case, rblock, warps, G, programs):
        def fn():
            norm_split(*case.views(), case.layer, rblock, warps, True, G, programs, case.part, case.counters)
            return case.outputs()
        return fn

    def without_gluon(case):
        module = layer_norm_mod if case.layer else rms_norm_mod

        def fn():
            module.GLUON_ENABLED = False
            try:
                return case.spec.run(*case.inputs)
            finally:
                module.GLUON_ENABLED = True
        return fn

    def takes_gluon(case) -> bool:
        if case.layer:
            return layer_norm_mod.uses_gluon(case.x, case.res, case.w, case.b, case.y, case.r)
        return rms_norm_mod.uses_gluon(case.x, case.res, case.w, case.y, case.r)

    def fastest(op, N, prefix, n=1):
        done = [r for r in rows if r.get("op") == op and r.get("N") == N and "us" in r
                and r["provider"].startswith(prefix)]
        return sorted(done, key=lambda r: r["us"])[:n]

    def fits(kernel, args, constexprs) -> int:
        """Resident programs an SM of the compiled kernel, 0 where it does not compile."""
        try:
            return resident_per_sm(kernel, args, constexprs)
        except Exception as e:  # noqa: BLE001
            print(f"no compile: {constexprs} ({type(e).__name__}: {str(e)[:200]})", flush=True)
            return 0

    cases = {}  # (op, N) -> Case, kept for phase B (~1 GB each, 2 with a residual)
    # Phase A, every (op, N): rooftop (and its Triton kernels where it takes Gluon), torch.compile, grid-M candidates
    for op in ops:
        for N in widths:
            case = cases[op, N] = Case(op, N)
            record(case, "rooftop", lambda: case.spec.run(*case.inputs))
            if takes_gluon(case):
                record(case, "rooftop_triton", without_gluon(case))
            torch._dynamo.reset()
            compiled = torch.compile(case.spec.eager, dynamic=False)
            first_module = _inductor_modules()
            row = record(case, "compile", lambda: compiled(*case.inputs))
            kernels = inductor_kernels(first_module)
            for i, k in enumerate(kernels):
                source = k.pop("source")
                if source:
                    Path(out_dir, f"inductor-{op}-{N}-{i}.py").write_text(source)
            row["inductor"] = kernels
            print(f"    inductor: {kernels}", flush=True)
            if compiling:  # the workers' kernels in the cache before the first candidate
                from concurrent.futures import wait
                done, late = wait(compiling, timeout=max(1.0, budget_s / 2 - (time.monotonic() - t0)))
                failed = [str(f.exception())[:200] for f in done if f.exception()]
                print(f"[{time.monotonic() - t0:5.1f} s] precompiled {len(done) - len(failed)} kernels, "
                      f"{len(late)} late, {len(failed)} failed {failed[:2]}", flush=True)
                compiling = []
            for rblock in RBLOCKS:
                for warps in WARPS:
                    record(case, f"rows_R{rblock}_w{warps}", rows_fn(case, rblock, warps, True, case.M),
                           dict(rblock=rblock, warps=warps, hints=True, programs=case.M))
            compiled = None
            torch.cuda.empty_cache()
    save()
    # Phase B1: the split kernel, grid M * G, then the fastest of those on a persistent grid
    for (op, N), case in cases.items():
        if N < SPLIT_MIN_N:
            continue
        for rblock, warps in SPLIT_CONFIGS:
            for G in GROUPS:
                record(case, f"split_G{G}_R{rblock}_w{warps}", split_fn(case, rblock, warps, G, case.M * G),
                       dict(rblock=rblock, warps=warps, hints=True, G=G, programs=case.M * G), watchdog_s=10.0,
                       phase="B")
        for top in fastest(op, N, "split_"):
            rblock, warps, G = top["rblock"], top["warps"], top["G"]
            per_sm = fits(_norm_split_kernel, split_args(*case.views(), G, rblock, case.part, case.counters),
                          split_constexprs(case.layer, case.residual, rblock, warps, True))
            programs = min(case.M * G, per_sm * num_sms // G * G)
            if programs >= G:
                record(case, f"split_G{G}_R{rblock}_w{warps}_p", split_fn(case, rblock, warps, G, programs),
                       dict(rblock=rblock, warps=warps, hints=True, G=G, programs=programs), watchdog_s=10.0,
                       phase="B")
    # Phase B2: the row kernel on persistent grids of k programs an SM
    for (op, N), case in cases.items():
        top = fastest(op, N, "rows_R")
        for rblock, warps in dict.fromkeys(list(PERSISTENT_CONFIGS) + [(r["rblock"], r["warps"]) for r in top]):
            per_sm = fits(_norm_rows_kernel, rows_args(*case.views()),
                          rows_constexprs(case.layer, case.residual, rblock, warps, True))
            for k in PERSISTENT_K:
                if k <= per_sm and k * num_sms < case.M:
                    record(case, f"rows_R{rblock}_w{warps}_p{k}", rows_fn(case, rblock, warps, True, k * num_sms),
                           dict(rblock=rblock, warps=warps, hints=True, programs=k * num_sms), phase="B")
    # Phase B3: the fastest grid-M config without eviction hints
    for (op, N), case in cases.items():
        for r in fastest(op, N, "rows_R"):
            record(case, f"rows_R{r['rblock']}_w{r['warps']}_nohint",
                   rows_fn(case, r["rblock"], r["warps"], False, case.M),
                   dict(rblock=r["rblock"], warps=r["warps"], hints=False, programs=case.M), phase="B")
    save()
    print(f"\ntotal {time.monotonic() - t0:.1f} s; copy {copy_gbps:.0f} GB/s")
    _print_table(rows, ops, widths)
    return 0


def _print_table(rows: list[dict], ops, widths) -> None:
    """Per op and N, % of copy: rooftop as it dispatches, compile, the Inductor-like candidate (grid M, RBLOCK
    2048, 16 warps: torch 2.13's looped config), the best new candidate; its speed against compile."""
    print(f"\n{'op':>14} {'N':>6} {'rooftop':>7} {'compile':>7} {'R2048w16':>8} {'best new':>8} {'/compile':>8}  "
          f"best candidate; Inductor's config")
    for op in ops:
        for N in widths:
            cell = {r["provider"]: r for r in rows if r.get("op") == op and r.get("N") == N and "us" in r}
            new = [r for p, r in cell.items() if p.startswith(("rows_", "split_"))]
            top = min(new, key=lambda r: r["us"], default=None)

            def pct(r):
                return f"{r['pct_copy']:.1f}%" if r else "-"
            ratio = f"{cell['compile']['us'] / top['us']:.2f}x" if top and "compile" in cell else "-"
            ind = next((r.get("inductor") for r in rows if r.get("op") == op and r.get("N") == N
                        and r.get("provider") == "compile"), None) or []
            print(f"{op:>14} {N:>6} {pct(cell.get('rooftop')):>7} {pct(cell.get('compile')):>7} "
                  f"{pct(cell.get('rows_R2048_w16')):>8} {pct(top):>8} {ratio:>8}  "
                  f"{top['provider'] if top else '-'}; {' '.join(k['config'] for k in ind)[:60]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default="norm-looped")
    parser.add_argument("--check", action="store_true", help="interpreter check of the kernels (CPU)")
    parser.add_argument("--compile", action="store_true", help="offline sm_90 compile report (CPU)")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    parser.add_argument("--budget-s", type=float, default=100.0)
    args = parser.parse_args()
    if args.check:
        return check()
    if args.compile:
        return compile_report()
    return measure(args.out, tuple(args.ops.split(",")), tuple(int(n) for n in args.widths.split(",")),
                   args.budget_s)


if __name__ == "__main__":
    sys.exit(main())
