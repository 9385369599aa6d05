r"""LayerNorm, optionally fused with the residual add of a pre-norm transformer block.

For a row x of width N, weight w, bias b and eps:

    mean = (1/N) \sum_j x_j,   var = (1/N) \sum_j (x_j - mean)^2
    layer_norm(x)_i = (x_i - mean) / sqrt(var + eps) * w_i + b_i        (w or b None: left out)

With a residual (the pre-norm residual stream), r = x + residual is formed first, rounded to the
input dtype (it is the new residual stream, stored as such), and normalised:

    r = x + residual;   y = layer_norm(r)        -> returns (y, r)

`fused_add_layer_norm_(x, residual, w, b, eps)` does the same in place, with vLLM's semantics:
residual <- x + residual, x <- layer_norm(residual).

Statistics in fp32 for every dtype, of the shifted values x - s, s a first fp32 estimate of the
mean: x - s is exact for x within a factor 2 of s (Sterbenz), so mean and variance keep fp32
precision relative to the spread of the row, not to its mean. (A row 1e4 + randn: an fp32 mean alone
is off by up to 5e-4, which every output inherits; E[x^2] - E[x]^2 loses everything.)
- whole row on chip: s = fp32(sum(x) / N); then, from registers, c = mean(x - s) (the part of the
  mean that s missed) and m2 = mean((x - s)^2); var = m2 - c^2 and y = ((x - s) - c) * rstd.
  The Gluon path takes s from the row's first chunk instead, so that sum(d) and sum(d^2) come in the pass
  that sees the chunks land, with no second pass over the row in shared memory.
- Welford (one row a program): s = the row's first value for 16-bit rows (a scalar load: no reduction across
  the program; |s - mean|^2 <= N var bounds what the shift leaves of the mean, and the error it brings stays
  under the output's rounding), the mean of its first tile for fp32 rows (a reduction more; |s - mean|^2 <=
  (N / RBLOCK) var: a first value 1e4 away in a row of randn cost 1.2e-5 relative, over fp32's 1e-5). Lane l
  (column l of an RBLOCK-wide tile) sees d_{l + t RBLOCK} = x - s, t = 0, 1, ..; over whole tiles every lane
  has the same count, so Welford's update takes one scalar reciprocal a tile and no division an element:
      delta = d - mean_l,   mean_l += delta / (t + 1),   m2_l += delta (d - mean_l)
  (t = 0 sets mean_l = d, m2_l = 0). A last partial tile updates its live lanes only (the others see
  d = mean_l: delta 0), whose counts n_l become one more. The lanes merge by Chan's formula (below) in one
  reduction of (n, mean, M2) triples (_chan_merge).
- looped: s = the mean of the row's first tile. A lane (one thread's GROUP contiguous values of a
  tile) keeps a running (n, mean, M2) of its values x - s; each tile's group, of n_b values with mean
  mean_b and M2_b (deviations taken about mean_b), is folded in by Chan's parallel merge:
      delta = mean_b - mean,   mean += delta n_b / (n + n_b),   M2 += M2_b + delta^2 n n_b / (n + n_b),
  and after the row the lanes merge the same way:
      mean = \sum_l n_l mean_l / N,   M2 = \sum_l [M2_l + n_l (mean_l - mean)^2],   var = M2 / N.

Which path runs (N = row width in elements):
- Gluon (sm_90 GPUs, GLUON_MIN_N < N <= GLUON_MAX_N but not N = TRITON_RES_N with a residual, at least 2
  rows per SM, 16-bit x, the rows, weight and bias as norm_sm90.supports takes them): ops/norm_sm90.py, a
  persistent program per SM whose TMA loader streams the rows (and the residual) into shared memory, where
  the row stays: sum(d) and sum(d^2) as the chunks land (d = x - s, s the first chunk's mean), then y. x (and
  residual) read from HBM once, y (and r) written once; w and b re-read per row from L2, or kept in shared memory
  where x's ring leaves room (both, or one of them: norm_sm90.resident_params; rows in parts of 32768 keep the
  weight). Whole rows without a residual past GLUON_WIDE_MIN_N on consumer partitions of GLUON_WIDE_WARPS warps.
  Rows past GLUON_MAX_N in parts (norm_sm90.row_parts: contiguous rows a multiple of 8 P wide, without a residual
  or with one past norm_sm90.PARTS_RESIDUAL_MIN_N, at least 2 rows of parts per SM, _support.SPLIT_ROWS_ENABLED):
  each row is P parts of at most PART_MAX_N (P a power of two), each part a program's row of the same kernel, the
  parts' (mean, variance) pairs merged across programs between the passes (Chan's merge, equal counts;
  softmax_sm90.swap_pairs); ahead of the split-words kernels.
- Welford (WELFORD_MIN_N < N <= WELFORD_MAX_N, without a residual unless WELFORD_RESIDUAL; 16-bit rows without a
  residual up to WELFORD_WIDE_MAX_N, ahead of Gluon): one row a program (grid M), WELFORD_RBLOCK-wide tiles over
  WELFORD_WARPS warps (the wide rows' WELFORD_WIDE_RBLOCK over WELFORD_WIDE_WARPS), N a constexpr: the loops' trip
  counts are constants and whole tiles need no mask. One compile per width, which a model has few of (its hidden sizes).
  Pass 1 loads x (evict_last) tile by tile into the lanes' Welford state; pass 2 loads x again (evict_first:
  the program's own bytes of a moment ago, from L1 or L2) with w and b (evict_last; in rows past
  WELFORD_PARAMS_PAST_L1_MIN_N from L2 only, leaving L1 to x) and writes y. With a
  residual pass 1 stores r = x + residual (evict_last) and pass 2 re-reads r (the thread's own stores, in
  program order). HBM traffic: x (and residual) read once, y (and r) written once. Registers: a tile of 4
  values a thread and the lanes' state, not the row (32 a thread for 16-bit rows, offline sm_90 compile, no
  spills): four 16-warp programs an SM. torch.compile's kernel of this structure ran
  at 94.1% of copy at N = 16384 on the H200 (bf16, M * N = 2^27), where the on-chip kernel ran at 85.9%.
- Split-words (on a GPU, N > SPLIT_MIN_N, 16-bit x, y (residual, r), weight and bias of one dtype, N even, rows
  4-byte aligned, at most one chunk per SM: _support.split_words_chunks): a row's chunks run as adjacent programs
  that each hold their chunk (of r, stored first) in registers as the 32-bit words its loads filled (two values a
  register), take the chunk's mean and sum of squared deviations from it, exchange them through global memory
  (_support.swap_row_stats), merge them by Chan's formula and write their chunk of y, in two halves. HBM
  traffic: x (and residual) read once, y (and r) written once. H200 (bf16, M * N = 2^27, GPU time, % of copy):
  69.2 / 67.8 at N = 131072 / 262144, the looped kernel 58.9 / 58.6; with a residual 84.3 / 83.7 against 75.4 /
  74.3.
- N <= ONCHIP_MAX: whole rows in registers, BLOCK_M rows a program. Traffic: read x (and residual)
  once, write y (and r) once, read w and b once per program (they stay in L2).
- N > ONCHIP_MAX: persistent, one 32-warp program per SM, one row at a time. Pass 1 reads x (and
  residual), writes r and folds each tile into the lanes' statistics, with the next tiles' loads in
  flight (two of x alone, one each of x and residual); pass 2 walks the row back to front (the tiles
  last touched are still in L2), reads r (or x) again and writes y, while the next row's first
  tiles load. DRAM traffic is the minimum while (rows in flight * row bytes) fits L2: one row per SM,
  17 MB for bf16 rows of 65536, 34 MB at 131072; at 262144 (67 MB) part of pass 2 reads DRAM.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops import norm_sm90
from rooftop.ops._support import (as_rows, cdiv, check_norm_inputs, exchange_words, gluon_runs, in_place_rows,
                                  interpreting, launch, leave_row, load_rows_add_residual, load_split_chunk, load_tile,
                                  load_tile_add_residual, load_tile_again, load_word_pairs, num_sms, onchip_config,
                                  opaque_zero, pack_words, planned, row_pointers, rows_vectorize, runs_kernel,
                                  split_words_chunks, store_tile, swap_row_stats, torch_op, unpack_words)
from rooftop.roofline import Cost

ONCHIP_MAX = 32768  # widest row kept in registers (elements)
# On-chip launch, by whether a residual is added (tune_rowops.py, H200, GPU time alone:
# logs/h200-2026-11-29-s6/tune-layer_norm.json): about 32 values a thread without one (GB/s against 16 a
# thread: 3947 / 3814 at N = 4096, 3895 / 3479 at 8192, 3589 / 2237 at 16384), 16 with one (the best or
# within 1% of it from 1024 to 32768 but for 16384: 3799 against 4006 at 64).
ONCHIP_ELEMS_PER_THREAD = {False: 32, True: 16}
ONCHIP_BLOCK_ELEMS = 2048
# Looped: one 32-warp program per SM (all the registers of one), which keeps loads in flight across
# its rows itself (the next row's first tiles during pass 2), so one program per SM is enough.
PROGRAMS_PER_SM = 1
# The Gluon path's widths (exclusive, inclusive), but for TRITON_RES_N with a residual. Measured (H200, bf16,
# M * N = 2^27, % of copy, Gluon against Triton; benchmarks/exp_gluon_norms.py run 1, logs/h200-2026-12-01-s9):
# layer_norm 71.4 / 22.0 at 16392, 84.2 / 71.6 at 32768, 73.2 / 27.1 at 32776, 79.3 / 65.4 at 65536 (8192-element
# chunks); add_layer_norm 87.7 / 20.6, 88.0 / 36.4 (32776), 86.0 / 77.1 (65536). Triton's kernels collapse where
# N is not a multiple of their tile; with a residual they win at TRITON_RES_N: 92.1 against 90.1. Rows wider
# than x's ring (norm_sm90) are not taken.
GLUON_MIN_N, GLUON_MAX_N = 16384, 65536
# Whole rows without a residual past GLUON_WIDE_MIN_N on consumer partitions of GLUON_WIDE_WARPS warps (offline sm_90:
# 96 registers, no spills; with a residual or in parts they spill 16-24 bytes). H200, bf16, % of a same-run copy by
# do_bench / graph replay, 4 / 8 warps (logs/h200-2026-12-04-s45/call-h, benchmarks/exp_ln_warps.py): 86.0 / 86.4
# against 87.8 / 88.1 at 49152, 86.1 / 85.9 against 87.3 / 87.3 at 57344, 85.3 / 85.1 against 86.2 / 86.7 at 65536.
GLUON_WIDE_MIN_N, GLUON_WIDE_WARPS = 40960, 8
# Rows past GLUON_MAX_N in parts of at most PART_MAX_N: H200, bf16, % of a same-run copy by do_bench / graph replay
# (logs/h200-2026-12-04-s47/call-a, benchmarks/exp_ln_warps.py --wide), parts of 65536 / 32768: 78.2 / 78.1 against
# 80.1 / 80.2 at 131072, 76.9 / 76.7 against 77.4 / 77.6 at 262144 (under the old exchange parts of 32768 lost: 77.2
# against 78.9; a 65536-wide part is 8 chunks, so two consumers' parts overflow x's ring of 14 buffers).
PART_MAX_N = 32768
TRITON_RES_N = 32768
GLUON_ENABLED = True  # tests and benchmarks switch the Gluon path off to reach the Triton kernels
# The Welford kernel's widths (exclusive, inclusive), tile and warps, after torch.compile's looped Welford for this
# norm (94.1% of copy at N = 16384, bf16, M * N = 2^27, 2048-wide tiles over 16 warps; the on-chip kernel 85.9%).
# Measured on the H200 (2026-12-01, benchmarks/exp_norm_reload.py, GPU time, against the on-chip kernel it replaces):
# layer_norm 1.15x at 12288, 1.02x at 16384 (compile there still 1.08x ours); with a residual (WELFORD_RESIDUAL) 1.17x
# at 12288, 1.01x at 16384. With one merge reduction instead of three (session 11, exp-welford-one-merge.log): 93.4% of
# copy at 16384 (compile 93.8), 94.4% at 12288 (on-chip 76.1). The tile is narrowed to the widest power of two <= N
# for rows narrower than it (tests).
WELFORD_MIN_N, WELFORD_MAX_N = 8192, 16384
WELFORD_RBLOCK, WELFORD_WARPS = 2048, 16
WELFORD_RESIDUAL = True
# 16-bit rows without a residual take it up to WELFORD_WIDE_MAX_N too, in 8192-wide tiles over 32 warps (8 values,
# one 16-byte load, a thread a tile). H200, bf16, M * N = 2^27, graph replay, % of a same-run copy
# (logs/h200-2026-12-03-s37/call-b/exp-ln.log): at 32768 89.0 against Gluon's 86.8 (16384-wide tiles 87.6; at 65536
# 71.9 against 84.9); with a residual Gluon stays ahead (92.8 against 92.0 / 79.4). Rows past
# WELFORD_PARAMS_PAST_L1_MIN_N load w and b in pass 2 past L1 (ld.cg: a row's x, w and b, two programs an SM, are
# more than the SM's L1, and each w / b line pushed out a line of x not yet re-read; NOTES item 244). Session 38
# (logs/h200-2026-12-03-s38/call-b/w/ln/log.txt), Gluon / through L1 / past it: 24576 92.1 / 92.2 / 90.4, 32768
# 89.5 / 89.5 / 91.9, 40960 86.6 / 88.6 / 93.6, 49152 85.9 / 80.5 / 86.3, 65536 85.1 / 71.4 / 71.1; one program an
# SM (maxnreg=64) lost at every width (72-81).
WELFORD_WIDE_MAX_N = 40960
WELFORD_WIDE_RBLOCK, WELFORD_WIDE_WARPS = 8192, 32
WELFORD_PARAMS_PAST_L1_MIN_N = 24576
# Rows wider than SPLIT_MIN_N take the split-words kernel (a row's chunks over adjacent programs
# that exchange statistics, each chunk held as 32-bit words of two values; as rms_norm's). Measured on the H200 (bf16,
# M * N = 2^27, GPU time, benchmarks/exp_split_packed.py): one kernel of this kind with the whole chunk's w and b
# loaded after the wait (108 registers, 2 programs an SM) ran 57% of copy at N = 131072 and 262144, the looped kernel
# 58.8 / 58.3%; this one finishes half a chunk before loading the next half's parameters: 94 registers, 80 capped
# without spills (offline sm_90), 3 programs an SM: 69.2 / 67.8% (uncapped 57.9 / 56.9; 8192-element chunks over 8
# warps 65.7 / 58.7; 16384 over 16 warps 56.7 / 56.1; exp_norm_reload.py, logs/h200-2026-12-01-s11).
SPLIT_MIN_N = 65536
SPLIT_WORDS_LAUNCH = dict(CHUNK=16384, num_warps=8, maxnreg=80)
# With a residual too: 84.3 / 83.7% of copy at 131072 / 262144 against the looped kernel's 75.4 / 74.3; at 65536 even
# with Gluon (exp_norm_reload.py, logs/h200-2026-12-01-s11/exp-split-words-residual.log).
SPLIT_WORDS_RESIDUAL = True


def looped_config(N: int, itemsize: int, vectorized: bool) -> tuple[int, int]:
    """(TILE, num_warps) of the looped path. Loads that vectorize (16-byte aligned rows, N a multiple
    of 16): 32 bytes a thread per tile (two 16-byte vectors), so that the Welford state, the tile
    folded in and the tiles in flight fit the 64 registers a thread that 32 warps allow. Scalar loads
    (each with its address and mask) fit 4 values a thread. Checked with ptxas for sm_90: no spills."""
    return (32768 // itemsize if vectorized else 4096), 32


def x_tiles_ahead(has_residual: bool) -> int:
    """Tiles of x in flight in pass 1: 2 alone, 1 beside the residual's: 64 bytes a thread either way
    (32 KB an SM with one tile, the likely limit of rms_norm's looped kernel without a residual:
    73% of copy at N = 65536, against 91% with one)."""
    return 1 if has_residual else 2


# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _layer_norm_onchip_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride,
                              r_stride, eps, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                              HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Reads x (+ residual) once and writes y (+ r) once: (2 or 4) * BLOCK_M * N * itemsize bytes.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    x = load_rows_add_residual(x_ptr, res_ptr, r_ptr, rows, cols, mask, x_stride, res_stride, r_stride, HAS_RESIDUAL)
    shift = tl.sum(x, axis=1) / N  # the fp32 mean, off by up to half an ulp of the mean
    d = tl.where(mask, x - shift[:, None], 0.0)  # exact where x is near the mean
    # sum(d) and sum(d^2) in one reduction (one pass through shared memory, not two)
    sum_d, sum_dd = tl.split(tl.sum(tl.join(d, d * d), axis=1))
    corr = sum_d / N  # what the shift missed of the mean
    var = tl.maximum(sum_dd / N - corr * corr, 0.0)
    y = (d - corr[:, None]) * tl.rsqrt(var + eps)[:, None]
    if HAS_WEIGHT:
        y = y * tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if HAS_BIAS:
        y = y + tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _chan_merge(n_a, mean_a, m2_a, n_b, mean_b, m2_b):
    """Chan's parallel merge of two (count, mean, M2) summaries (counts > 0): tl.reduce's combine function."""
    n = n_a + n_b
    share = n_b / n
    delta = mean_b - mean_a
    return n, mean_a + delta * share, m2_a + m2_b + delta * delta * n_a * share


@triton.jit
def _welford_tile_in(src_row, w_ptr, b_ptr, offs, mask, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
                     PARAM_POLICY: tl.constexpr):
    """Pass 2's loads of the Welford kernel on tile `offs` (`mask` None: a whole tile): (r, w, b) in fp32, w 1 and
    b 0 where absent."""
    w = load_tile_again(w_ptr, offs, mask, PARAM_POLICY) if HAS_WEIGHT else 1.0
    b = load_tile_again(b_ptr, offs, mask, PARAM_POLICY) if HAS_BIAS else 0.0
    return load_tile_again(src_row, offs, mask, "evict_first"), w, b


@triton.jit
def _welford_tile_out(y_row, offs, mask, tile, shift, rstd, centre, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Pass 2's store of the Welford kernel: y = ((r - s) rstd - centre) w + b of `tile` = (r, w, b)."""
    r, w, b = tile
    y = (r - shift) * rstd - centre
    if HAS_WEIGHT:
        y = y * w
    if HAS_BIAS:
        y = y + b
    tl.store(y_row + offs, y.to(y_row.dtype.element_ty), mask=mask)


@triton.jit
def _layer_norm_welford_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, x_stride, res_stride, y_stride, r_stride,
                               eps, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
                               N: tl.constexpr, RBLOCK: tl.constexpr, PARAM_POLICY: tl.constexpr):
    # Row program_id(0). HBM: x (+ residual) read once, y (+ r) written once; pass 2's loads of the row
    # are the program's own bytes again (L1 or L2), w and b come from L2. N is a constexpr: TILES whole
    # tiles (a loop of constant trip count, unmasked) and a masked TAIL of N % RBLOCK columns. One reduction
    # across the program (the lanes' merge): each is a round trip through shared memory and a barrier.
    tl.static_assert(N >= RBLOCK)
    TILES: tl.constexpr = N // RBLOCK
    TAIL: tl.constexpr = N % RBLOCK
    x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, tl.program_id(0), x_stride, y_stride,
                                                  res_stride, r_stride, HAS_RESIDUAL)
    cols = tl.arange(0, RBLOCK)
    SCALAR_SHIFT: tl.constexpr = x_ptr.dtype.element_ty != tl.float32
    if SCALAR_SHIFT:  # 16-bit rows: the row's first value (of x + residual: exactness needs no rounding)
        shift = tl.load(x_row).to(tl.float32)
        if HAS_RESIDUAL:
            shift += tl.load(res_row).to(tl.float32)
            # In place the first tile's store of r overwrites residual[0]: every thread's load of it must be
            # performed before (bar.sync orders a thread's earlier accesses before the other threads' later ones).
            # Without the barrier a slow warp read r[0], lanes got different shifts: an H200 GPU test failed.
            tl.debug_barrier()
    # pass 1. The first tile gives each lane its first value: mean_l = d, m2_l = 0
    first = load_tile_add_residual(x_row, res_row, src_row, cols, None, HAS_RESIDUAL)
    if not SCALAR_SHIFT:  # fp32 rows: the first tile's mean (a reduction more), |s - mean|^2 <= (N / RBLOCK) var
        shift = tl.sum(first, axis=0) / RBLOCK
    mean = first - shift
    m2 = tl.zeros([RBLOCK], tl.float32)
    for t in tl.range(1, TILES):  # each lane's (t + 1)th value: one reciprocal a tile
        d = load_tile_add_residual(x_row, res_row, src_row, t * RBLOCK + cols, None, HAS_RESIDUAL) - shift
        delta = d - mean
        mean += delta * (1.0 / (t + 1))
        m2 += delta * (d - mean)
    count = tl.full([RBLOCK], TILES, tl.float32)  # values a lane has seen: the same for all, but past a tail
    if TAIL > 0:
        live = cols < TAIL
        d = load_tile_add_residual(x_row, res_row, src_row, TILES * RBLOCK + cols, live, HAS_RESIDUAL) - shift
        d = tl.where(live, d, mean)  # the lanes past the end: delta 0, unchanged
        delta = d - mean
        mean += delta * (1.0 / (TILES + 1))
        m2 += delta * (d - mean)
        count = count + live.to(tl.float32)
    _, row_mean, row_m2 = tl.reduce((count, mean, m2), 0, _chan_merge)  # of d
    rstd = tl.rsqrt(row_m2 / N + eps)
    centre = row_mean * rstd  # y = (r - s) rstd - centre: s + row_mean is not formed (it would round)
    # pass 2: the row again
    # (loading each tile before the previous tile's store did not pay: NOTES item 243)
    for t in tl.range(0, TILES):
        offs = t * RBLOCK + cols
        _welford_tile_out(y_row, offs, None, _welford_tile_in(src_row, w_ptr, b_ptr, offs, None, HAS_WEIGHT, HAS_BIAS,
                                                              PARAM_POLICY), shift, rstd, centre, HAS_WEIGHT, HAS_BIAS)
    if TAIL > 0:
        offs = TILES * RBLOCK + cols
        _welford_tile_out(y_row, offs, cols < TAIL, _welford_tile_in(src_row, w_ptr, b_ptr, offs, cols < TAIL,
                                                                     HAS_WEIGHT, HAS_BIAS, PARAM_POLICY),
                          shift, rstd, centre, HAS_WEIGHT, HAS_BIAS)


@triton.jit
def _squared_deviations(x_words, live, centre, DTYPE: tl.constexpr):
    """sum (x - centre)^2 over the live values of a half chunk held as words (of DTYPE values)."""
    even, odd = unpack_words(x_words, DTYPE)
    dev_even = tl.where(live, even - centre, 0.0)
    dev_odd = tl.where(live, odd - centre, 0.0)
    return tl.sum(dev_even * dev_even + dev_odd * dev_odd, axis=0)


@triton.jit
def _ln_split_words_out(x_words, w_ptr, b_ptr, y_row, words, live, mean, rstd, HAS_WEIGHT: tl.constexpr,
                        HAS_BIAS: tl.constexpr, DTYPE: tl.constexpr):
    """y = (x - mean) rstd w + b of one half chunk held as words (of DTYPE values), stored as words."""
    x_even, x_odd = unpack_words(x_words, DTYPE)
    y_even = (x_even - mean) * rstd
    y_odd = (x_odd - mean) * rstd
    if HAS_WEIGHT:
        w_even, w_odd = load_word_pairs(w_ptr, words, live, DTYPE)
        y_even = y_even * w_even
        y_odd = y_odd * w_odd
    if HAS_BIAS:
        b_even, b_odd = load_word_pairs(b_ptr, words, live, DTYPE)
        y_even = y_even + b_even
        y_odd = y_odd + b_odd
    tl.store(y_row + words, pack_words(y_even, y_odd, DTYPE), mask=live)


@triton.jit(do_not_specialize=["G"])
def _layer_norm_split_words_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, words_ptr, cnt_ptr, N, x_stride,
                                   res_stride, y_stride, r_stride, eps, G, HAS_RESIDUAL: tl.constexpr,
                                   HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr, CHUNK: tl.constexpr,
                                   G_POW2: tl.constexpr):
    # Program (row, chunk) = (p // G, p % G): reads its chunk of x (+ residual) once and writes its chunk of y (+ r)
    # once, all as 32-bit words of two values, exchanges 8 bytes of statistics (the chunk's mean and sum of squared
    # deviations from it, from registers) with the row's other chunks, merged by Chan's formula. As rms_norm's
    # split-words kernel, the chunk lives across the wait as words (opaque_zero), in two halves.
    DTYPE: tl.constexpr = x_ptr.dtype.element_ty
    row, chunk, lo, hi, r_lo, r_hi, y_row = load_split_chunk(x_ptr, y_ptr, res_ptr, r_ptr, x_stride, y_stride,
                                                             res_stride, r_stride, N, G, HAS_RESIDUAL, CHUNK)
    even, odd = unpack_words(r_lo, DTYPE)
    total = tl.sum(even + odd, axis=0)
    even, odd = unpack_words(r_hi, DTYPE)
    total += tl.sum(even + odd, axis=0)
    chunk_mean = total / tl.minimum(N - chunk * CHUNK, CHUNK).to(tl.float32)
    hidden = opaque_zero(chunk_mean)  # the deviations unpack anew: no fp32 copy of the chunk lives past the sum
    m2 = (_squared_deviations(r_lo | hidden, lo < N // 2, chunk_mean, DTYPE)
          + _squared_deviations(r_hi | hidden, hi < N // 2, chunk_mean, DTYPE))
    means, m2s = swap_row_stats(words_ptr, row, chunk, chunk_mean, m2, 0.0, 0.0, G, G_POW2)
    g = tl.arange(0, G_POW2)
    counts = tl.where(g < G, tl.minimum(N - g * CHUNK, CHUNK), 0).to(tl.float32)
    mean = tl.sum(counts * means, axis=0) / N
    spread = means - mean
    rstd = tl.rsqrt(tl.sum(m2s + counts * spread * spread, axis=0) / N + eps)
    hidden = opaque_zero(rstd)
    _ln_split_words_out(r_lo | hidden, w_ptr, b_ptr, y_row, lo, lo < N // 2, mean, rstd, HAS_WEIGHT, HAS_BIAS, DTYPE)
    _ln_split_words_out(r_hi | hidden, w_ptr, b_ptr, y_row, hi, hi < N // 2, mean, rstd, HAS_WEIGHT, HAS_BIAS, DTYPE)
    leave_row(words_ptr, cnt_ptr, row, G, G_POW2)


@triton.jit
def _as_words(tile):
    """A tile of 16-bit floats as 32-bit words, two values each (fp32 tiles as they are). Prefetched
    tiles cross the loop in this form: ptxas then leaves them in the registers their loads fill. As
    16-bit values it repacked them at the end of each trip (sm_90, Triton 3.6), which waits for the
    load just issued: no load stayed in flight across trips."""
    words = tile
    if tile.dtype.primitive_bitwidth == 16:
        even, odd = tl.split(tl.reshape(tile, [tile.shape[0] // 2, 2]))
        words = even.to(tl.uint16, bitcast=True).to(tl.uint32) | (odd.to(tl.uint16, bitcast=True).to(tl.uint32) << 16)
    return words


@triton.jit
def _from_words(words, DTYPE: tl.constexpr):
    """The fp32 values of a tile of DTYPE held as `_as_words` made it, in their order."""
    if DTYPE == tl.bfloat16:
        even = (words << 16).to(tl.float32, bitcast=True)
        odd = (words & 0xFFFF0000).to(tl.float32, bitcast=True)
        values = tl.reshape(tl.join(even, odd), [words.shape[0] * 2])
    elif DTYPE == tl.float16:
        even = (words & 0xFFFF).to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
        odd = (words >> 16).to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
        values = tl.reshape(tl.join(even, odd), [words.shape[0] * 2])
    else:
        values = words.to(tl.float32)
    return values


@triton.jit
def _row_head(x_ptr, res_ptr, row, M, N, x_stride, res_stride, cols, HAS_RESIDUAL: tl.constexpr,
              X_AHEAD: tl.constexpr, X_POLICY: tl.constexpr):
    """The loads that start `row`, as words: x's first X_AHEAD tiles and the residual's first (masked
    off for a row past the last); unused ones are returned as x's first."""
    live = row < M
    x_row = x_ptr + tl.cast(row, tl.int64) * x_stride
    x_first = _as_words(tl.load(x_row + cols, mask=live & (cols < N), other=0.0, eviction_policy=X_POLICY))
    x_second = x_first
    if X_AHEAD == 2:
        x_second = _as_words(tl.load(x_row + cols.shape[0] + cols, mask=live & (cols.shape[0] + cols < N), other=0.0,
                                     eviction_policy=X_POLICY))
    res_first = x_first
    if HAS_RESIDUAL:
        res_first = _as_words(tl.load(res_ptr + tl.cast(row, tl.int64) * res_stride + cols, mask=live & (cols < N),
                                      other=0.0, eviction_policy="evict_first"))
    return x_first, x_second, res_first


@triton.jit
def _layer_norm_looped_kernel(x_ptr, res_ptr, w_ptr, b_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride,
                              r_stride, eps, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                              HAS_BIAS: tl.constexpr, TILE: tl.constexpr, GROUP: tl.constexpr,
                              X_AHEAD: tl.constexpr, X_POLICY: tl.constexpr, EVEN: tl.constexpr):
    # Per row: pass 1 reads x (+ residual), writes r; pass 2 re-reads r (or x), mostly from L2,
    # and writes y. Persistent: program p takes rows p, p + G, ... Loads in flight all the time:
    # X_AHEAD tiles of x (+ one of the residual) ahead in pass 1, and the next row's first tiles
    # during pass 2.
    cols = tl.arange(0, TILE)
    DTYPE: tl.constexpr = x_ptr.dtype.element_ty
    x_next, x_after, res_next = _row_head(x_ptr, res_ptr, tl.program_id(0), M, N, x_stride, res_stride, cols,
                                          HAS_RESIDUAL, X_AHEAD, X_POLICY)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, row, x_stride, y_stride,
                                                      res_stride, r_stride, HAS_RESIDUAL)
        # the shift: the mean of the first tile (already loaded), from registers so that the in-place
        # op cannot race its own stores
        r = _from_words(x_next, DTYPE)
        if HAS_RESIDUAL:
            r = (r + _from_words(res_next, DTYPE)).to(DTYPE).to(tl.float32)
        shift = tl.sum(r, axis=0) / tl.minimum(N, TILE)
        # pass 1: fold each tile into the lanes' running (count, mean, M2) of r - shift. The next
        # loads are issued after the residual's store, so that ptxas can land them in place.
        count = tl.zeros([TILE // GROUP], tl.float32)
        mean = tl.zeros([TILE // GROUP], tl.float32)
        m2 = tl.zeros([TILE // GROUP], tl.float32)
        for off in range(0, N, TILE):
            r = _from_words(x_next, DTYPE)
            if HAS_RESIDUAL:
                r = (r + _from_words(res_next, DTYPE)).to(DTYPE)  # the new residual, as stored
                store_tile(src_row, off, cols, N, r, EVEN, "evict_last")
                r = r.to(tl.float32)
                res_next = _as_words(load_tile(res_row, off + TILE, cols, N, EVEN, "evict_first"))
            if X_AHEAD == 2:
                x_next = x_after
                x_after = _as_words(load_tile(x_row, off + 2 * TILE, cols, N, EVEN, X_POLICY))
            else:
                x_next = _as_words(load_tile(x_row, off + TILE, cols, N, EVEN, X_POLICY))
            # each lane's GROUP values of this tile (one thread's, contiguous): count, mean, deviations
            group = tl.reshape(r - shift, [TILE // GROUP, GROUP])
            if EVEN:
                g_count = GROUP * 1.0
                g_mean = tl.sum(group, axis=1) / GROUP
                g_dev = group - g_mean[:, None]
            else:
                live = tl.reshape(off + cols < N, [TILE // GROUP, GROUP])
                g_count = tl.sum(live.to(tl.float32), axis=1)
                g_mean = tl.sum(tl.where(live, group, 0.0), axis=1) / tl.maximum(g_count, 1.0)
                g_dev = tl.where(live, group - g_mean[:, None], 0.0)
            # Chan's merge of the group into the lane
            total = count + g_count
            delta = g_mean - mean
            share = g_count / tl.maximum(total, 1.0)
            mean += delta * share
            m2 += tl.sum(g_dev * g_dev, axis=1) + delta * delta * count * share
            count = total
        # Chan's merge of the lanes: the row's mean (of r - shift) and variance
        row_mean = tl.sum(count * mean, axis=0) / N
        lane_dev = mean - row_mean
        rstd = tl.rsqrt(tl.sum(m2 + count * lane_dev * lane_dev, axis=0) / N + eps)
        centre = row_mean * rstd  # y = (r - shift) * rstd - centre: one multiply-add an element
        x_next, x_after, res_next = _row_head(x_ptr, res_ptr, row + tl.num_programs(0), M, N, x_stride, res_stride,
                                              cols, HAS_RESIDUAL, X_AHEAD, X_POLICY)
        # pass 2, back to front: the tiles touched last in pass 1 are the likeliest still in L2
        off = (tl.cdiv(N, TILE) - 1) * TILE
        r_next = load_tile(src_row, off, cols, N, EVEN, "evict_first")
        while off >= 0:
            r = r_next.to(tl.float32)
            r_next = load_tile(src_row, off - TILE, cols, N, EVEN, "evict_first")
            y = (r - shift) * rstd - centre
            if HAS_WEIGHT:
                y = y * load_tile(w_ptr, off, cols, N, EVEN, "evict_last").to(tl.float32)
            if HAS_BIAS:
                y = y + load_tile(b_ptr, off, cols, N, EVEN, "evict_last").to(tl.float32)
            # y is not read again: its lines leave L2 first, the rows still to be re-read stay
            store_tile(y_row, off, cols, N, y.to(y_ptr.dtype.element_ty), EVEN, "evict_first")
            off -= TILE


def welford_width(N: int, has_residual: bool, itemsize: int = 2) -> bool:
    """Whether rows of N (with or without a residual, of `itemsize`-byte values) are the Welford kernel's width."""
    if WELFORD_MIN_N < N <= WELFORD_MAX_N:
        return WELFORD_RESIDUAL or not has_residual
    return N <= WELFORD_WIDE_MAX_N and N > WELFORD_MAX_N and not has_residual and itemsize == 2


def welford_config(N: int) -> tuple[int, int]:
    """(tile, warps) of the Welford kernel for rows of N: WELFORD_RBLOCK over WELFORD_WARPS (the tile narrowed to
    the widest power of two <= N), past WELFORD_MAX_N the wide rows' WELFORD_WIDE_RBLOCK over WELFORD_WIDE_WARPS."""
    if N > WELFORD_MAX_N:
        return WELFORD_WIDE_RBLOCK, WELFORD_WIDE_WARPS
    return min(WELFORD_RBLOCK, 1 << (N.bit_length() - 1)), WELFORD_WARPS


def _launch_welford(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
                    bias: Optional[torch.Tensor], y: torch.Tensor, r: Optional[torch.Tensor], eps: float) -> None:
    """The Welford kernel on the [M, N] row views, one program a row (a compile per N)."""
    M, N = x.shape
    has_res = residual is not None
    rblock, warps = welford_config(N)
    launch(_layer_norm_welford_kernel, (M,), x, residual if has_res else x, weight if weight is not None else x,
           bias if bias is not None else x, y, r if has_res else y, x.stride(0), residual.stride(0) if has_res else 0,
           y.stride(0), r.stride(0) if has_res else 0, eps, HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None,
           HAS_BIAS=bias is not None, N=N, RBLOCK=rblock,
           PARAM_POLICY="l2" if N > WELFORD_PARAMS_PAST_L1_MIN_N else "evict_last", num_warps=warps)


def gluon_parts(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
                bias: Optional[torch.Tensor], y: torch.Tensor, r: Optional[torch.Tensor]) -> int:
    """How layer_norm_rows takes the Gluon path (norm_sm90) for these [M, N] views: 0 not at all, 1 whole rows (its
    widths start where the Welford kernel's end, but for its wide rows), P > 1 rows past GLUON_MAX_N in P parts
    of at most PART_MAX_N (norm_sm90.row_parts)."""
    M, N = x.shape
    if not (GLUON_ENABLED and x.is_cuda and not interpreting() and N > GLUON_MIN_N and gluon_runs(x.device.index)):
        return 0
    if N > GLUON_MAX_N:
        return norm_sm90.row_parts(x, residual, weight, bias, y, r, True, PART_MAX_N)
    return int(not (residual is not None and N == TRITON_RES_N) and not welford_width(N, residual is not None,
                                                                                      x.element_size())
               and M >= norm_sm90.CONSUMERS * num_sms(x.device.index)
               and norm_sm90.supports(x, residual, weight, bias, y, r, True))


def uses_gluon(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
               bias: Optional[torch.Tensor], y: torch.Tensor, r: Optional[torch.Tensor]) -> bool:
    """Whether layer_norm_rows takes the Gluon path (norm_sm90) for these [M, N] views (gluon_parts)."""
    return gluon_parts(x, residual, weight, bias, y, r) > 0


def layer_norm_rows(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
                    bias: Optional[torch.Tensor], y: torch.Tensor, r: Optional[torch.Tensor], eps: float) -> None:
    """LayerNorm of the [M, N] row views; with `residual`, r <- x + residual first and y <- norm(r).
    Every view has unit column stride; y may alias x and r may alias residual (the in-place op)."""
    M, N = x.shape
    if M == 0 or N == 0:
        return
    parts = gluon_parts(x, residual, weight, bias, y, r)
    if parts:
        wide = parts == 1 and residual is None and N > GLUON_WIDE_MIN_N
        norm_sm90.norm_rows(x, residual, weight, bias, y, r, eps, 0.0, True, num_sms(x.device.index), parts=parts,
                            warps=GLUON_WIDE_WARPS if wide else None)
        return
    has_res = residual is not None
    if welford_width(N, has_res, x.element_size()):
        _launch_welford(x, residual, weight, bias, y, r, eps)
        return
    args = (x, residual if has_res else x, weight if weight is not None else x, bias if bias is not None else x, y,
            r if has_res else y, M, N, x.stride(0), residual.stride(0) if has_res else 0, y.stride(0),
            r.stride(0) if has_res else 0, eps)
    flags = dict(HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None)
    if N <= ONCHIP_MAX:
        block_m, block_n, warps = onchip_config(M, N, ONCHIP_ELEMS_PER_THREAD[has_res], ONCHIP_BLOCK_ELEMS)
        launch(_layer_norm_onchip_kernel, (cdiv(M, block_m),), *args, **flags, BLOCK_M=block_m, BLOCK_N=block_n,
               num_warps=warps)
        return
    if N > SPLIT_MIN_N and (SPLIT_WORDS_RESIDUAL or not has_res):
        chunks = split_words_chunks([x, y, residual, r], [weight, bias], SPLIT_WORDS_LAUNCH["CHUNK"])
        if chunks:
            words, counters = exchange_words(x.device, M, chunks)
            launch(_layer_norm_split_words_kernel, (M * chunks,), *args[:6], words, counters, N, *args[8:13],
                   chunks, **flags, G_POW2=triton.next_power_of_2(chunks), **SPLIT_WORDS_LAUNCH)
            return
    programs = min(M, PROGRAMS_PER_SM * num_sms(x.device.index if x.is_cuda else -1))
    vectorized = rows_vectorize(N, [t for t in (x, residual, y, r) if t is not None], [weight, bias])
    tile, warps = looped_config(N, x.element_size(), vectorized)
    # without a residual pass 2 re-reads x: ask L2 to keep it; with one, x is not read again.
    # A lane's group is (with vectorized loads) one thread's 16-byte vector: no other thread is needed.
    launch(_layer_norm_looped_kernel, (programs,), *args, **flags, TILE=tile, GROUP=16 // x.element_size(),
           X_AHEAD=x_tiles_ahead(has_res), X_POLICY="evict_first" if has_res else "evict_last",
           EVEN=N % tile == 0, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _reference_outputs(x, residual, weight, bias, eps):
    """(y, r) as the op returns them, from the float64 reference (CPU without the interpreter)."""
    r = x if residual is None else (x + residual).contiguous()  # the new residual, rounded to x's dtype
    return layer_norm_reference(r, weight, bias, eps).to(x.dtype).contiguous(), r


def _ln_fake(x, weight, bias, eps):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("layer_norm", fake=_ln_fake)
def _layer_norm_op(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                   eps: float) -> torch.Tensor:
    if not runs_kernel(x):
        return _reference_outputs(x, None, weight, bias, eps)[0]
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if x.numel():
        layer_norm_rows(as_rows(x), None, weight, bias, as_rows(y), None, eps)
    return y


def _add_ln_fake(x, residual, weight, bias, eps):
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format))


@torch_op("add_layer_norm", fake=_add_ln_fake)
def _add_layer_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                       bias: Optional[torch.Tensor], eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    if not runs_kernel(x):
        return _reference_outputs(x, residual, weight, bias, eps)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    r = torch.empty_like(x, memory_format=torch.contiguous_format)
    if x.numel():
        layer_norm_rows(as_rows(x), as_rows(residual), weight, bias, as_rows(y), as_rows(r), eps)
    return y, r


@torch_op("fused_add_layer_norm_", mutates_args=("x", "residual"))
def _fused_add_layer_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                             bias: Optional[torch.Tensor], eps: float) -> None:
    if not runs_kernel(x):
        y, r = _reference_outputs(x, residual, weight, bias, eps)
        residual.copy_(r)
        x.copy_(y)
        return
    if x.numel():
        x_rows, res_rows = in_place_rows("fused_add_layer_norm_", x, residual)
        layer_norm_rows(x_rows, res_rows, weight, bias, x_rows, res_rows, eps)


@planned
def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor], eps: float = 1e-5,
               residual: Optional[torch.Tensor] = None):
    """LayerNorm over the last dim: y = (x - mean) / sqrt(var + eps) * weight + bias (None: left out).
    With `residual`, returns (layer_norm(x + residual), x + residual) from one read of each input."""
    check_norm_inputs(x, residual, eps, weight=weight, bias=bias)
    if residual is None:
        return _layer_norm_op(x, weight, bias, float(eps))
    return _add_layer_norm_op(x, residual, weight, bias, float(eps))


@planned
def fused_add_layer_norm_(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                          bias: Optional[torch.Tensor], eps: float = 1e-5) -> None:
    """In place, vLLM's semantics: residual <- x + residual; x <- layer_norm(residual, weight, bias)."""
    if residual is None:
        raise ValueError("residual is required for fused_add_layer_norm_")
    check_norm_inputs(x, residual, eps, weight=weight, bias=bias)
    _fused_add_layer_norm_op(x, residual, weight, bias, float(eps))


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def layer_norm_reference(x, weight, bias, eps=1e-5):
    """The same maths in float64."""
    xd = x.double()
    centred = xd - xd.mean(-1, keepdim=True)
    y = centred * torch.rsqrt(centred.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y + bias.double() if bias is not None else y


def add_layer_norm_reference(x, residual, weight, bias, eps=1e-5):
    r = x.double() + residual.double()
    return layer_norm_reference(r, weight, bias, eps), r


def layer_norm_eager(x, weight, bias, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, eps)


def add_layer_norm_eager(x, residual, weight, bias, eps=1e-5):
    """As a pre-norm block writes it: the residual add, then nn.LayerNorm."""
    r = x + residual
    return F.layer_norm(r, (r.shape[-1],), weight, bias, eps), r


def _cost(tensors_per_element: int, flops_per_element: int):
    def cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
        n = math.prod(shape)
        # weight and bias read once
        return Cost(flops=flops_per_element * n,
                    bytes=tensors_per_element * n * dtype.itemsize + 2 * shape[-1] * dtype.itemsize)
    return cost


def _make_ln(shape, dtype, device):
    n = shape[-1]
    return (torch.randn(shape, device=device, dtype=dtype), torch.rand(n, device=device, dtype=dtype) + 0.5,
            torch.randn(n, device=device, dtype=dtype))


def _make_add_ln(shape, dtype, device):
    x, w, b = _make_ln(shape, dtype, device)
    return x, torch.randn(shape, device=device, dtype=dtype), w, b


def _liger_ln():
    try:
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction
    except ImportError:
        return None
    return lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, 1e-5)


# FLOPs per element: centre, square, two sums, normalise, scale, shift (+ the residual add)
registry.register(registry.OpSpec(
    name="add_layer_norm", family="layer_norm", make_inputs=_make_add_ln,
    run=lambda x, res, w, b: layer_norm(x, w, b, 1e-5, residual=res),
    reference=lambda x, res, w, b: add_layer_norm_reference(x, res, w, b, 1e-5), eager=add_layer_norm_eager,
    cost=_cost(4, 8), cases=registry.row_sweep()))
registry.register(registry.OpSpec(
    name="layer_norm", family="layer_norm", make_inputs=_make_ln, run=lambda x, w, b: layer_norm(x, w, b, 1e-5),
    reference=lambda x, w, b: layer_norm_reference(x, w, b, 1e-5), eager=layer_norm_eager,
    cost=_cost(2, 7), cases=registry.row_sweep(), peers={"liger": _liger_ln}))
