r"""RMSNorm, optionally fused with the residual add of a pre-norm transformer block.

For a row x of width N, weight w and eps:

    rms_norm(x)_i = x_i / sqrt(mean_j(x_j^2) + eps) * w_i

With a residual (the pre-norm residual stream), r = x + residual is formed first, rounded to the
input dtype (it is the new residual stream, stored as such), and normalised:

    r = x + residual;   y = rms_norm(r)        -> returns (y, r)

`fused_add_rms_norm_(x, residual, w, eps)` does the same in place, with vLLM's semantics:
residual <- x + residual, x <- rms_norm(residual) * w. Statistics in fp32 for every dtype.

Variants: `offset` scales by (offset + w) (Gemma stores w - 1 and uses offset=1); `out_dtype` picks
y's dtype; `quant="fp8"|"int8"` quantizes y per row (dynamic per-token absmax) in the same pass:

    s = max_i |y_i| / QMAX   (QMAX = 448 for float8_e4m3fn, 127 for int8);   q_i = y_i / s

(int8 rounds half away from zero, fp8 to nearest even) and returns (q, s) so that the next GEMM
reads one byte per element. Since y_i = rstd * r_i * (offset + w_i), max|y| = rstd * max|r (offset + w)|
is known after pass 1 of the looped path too: quantizing costs no extra pass.

Which path runs (N = row width in elements):
- Gluon (sm_90 GPUs, GLUON_MIN_N < N <= GLUON_MAX_N but N != TRITON_RES_N with a residual; with quant
  QUANT_GLUON_MIN_N < N (without a residual 4096, with one 8192), past QUANT_PART_MAX_N in parts where they can be
  (without a residual past QUANT_WHOLE_MAX_N; whole rows past QUANT_PART_MAX_N on consumers of QUANT_WIDE_WARPS warps);
  at least 2 rows per SM, 16-bit x, y in x's dtype or quantized, the rows and weight as norm_sm90.supports takes
  them): ops/norm_sm90.py, a persistent program per SM whose TMA loader streams the rows (and the residual) into
  shared memory, where the row stays for pass 2: x (and residual) read from HBM once, y (and r) written once; w
  kept in shared memory where it fits beside two rows of x's ring (norm_sm90.RESIDENT_PARAMS), else re-read per
  row from L2.
  Rows past GLUON_MAX_N in parts (norm_sm90.row_parts: contiguous rows a multiple of 8 P wide, without a residual
  or with one past norm_sm90.PARTS_RESIDUAL_MIN_N or quantized, at least 2 rows of parts per SM,
  _support.SPLIT_ROWS_ENABLED):
  each row is P parts of at most PART_MAX_N (quantizing: QUANT_PART_MAX_N; P a power of two), each part a
  program's row of the same kernel, the parts' mean squares (and maxima) merged across programs between the passes
  (softmax_sm90.swap_pairs); ahead of the split-words kernels.
- Reload (RELOAD_MIN_N < N <= RELOAD_MAX_N, with a residual RELOAD_RESIDUAL_MIN_N < N <= RELOAD_RESIDUAL_MAX_N; no
  quant; ahead of Gluon but for rows whose loads do not vectorize, rooftop.ops._support.rows_vectorize): one row a
  program (grid M) of RELOAD_WARPS warps, the row in tiles of up to RELOAD_TILE_BYTES (two or four tiles of bf16 at
  these widths), and no value kept across the two passes. Pass 1 loads the row (evict_last) and sums x^2 into
  one vector, reduced once; pass 2 loads the row again (evict_first: from L1 or L2, the program's own bytes of a
  moment ago) with w and writes y. With a residual, pass 1 stores r = x + residual (evict_last) and
  pass 2 re-reads r: the thread's own stores (the same tile shape and pointers in both passes give the same
  layout), in program order, and the row's reduction puts a barrier of the whole program between the passes.
  HBM traffic is the on-chip kernel's (x and residual read once, y and r written once); what it saves is
  registers: the row need not live across its reduction, so two 32-warp programs share an SM
  (torch.compile's kernel of this structure ran at 95.5% of copy at N = 32768 on the H200, against 85.5% for
  the on-chip kernel and 87.8% for Gluon; ours 1.05x the Gluon path there, compile 1.05x ours). Rows wider than
  RELOAD_ONE_PROGRAM_MIN_N without a residual run one program an SM (maxnreg=64 over 32 warps fills the register
  file), so that the row (up to 128 KB) stays in the SM's L1 between the passes, where two programs' rows did not.
- N <= ONCHIP_MAX: whole rows in registers, BLOCK_M rows a program, ONCHIP_ELEMS_PER_THREAD values a thread
  (quantizing rows without a residual QUANT_ONCHIP_ELEMS_PER_THREAD). Traffic: read x (and residual) once, write y
  (and r) once, read w once per program (it stays in L2).
- Split (with a residual and quant, or rows the split-words kernel cannot take; on a GPU, N > SPLIT_MIN_N, at
  most one chunk per SM): a row is chunks
  (SPLIT_LAUNCH) over adjacent programs that each hold their chunk in registers and write its r,
  exchange (sum r^2, max |r (offset + w)|) through global memory (rooftop.ops._support,
  swap_row_stats) and write their chunk of y: the on-chip traffic, many programs per SM.
- Split-words (no quant, on a GPU, N > SPLIT_MIN_N, 16-bit x, y (residual, r) and weight of one dtype, N even,
  rows 4-byte aligned, at most one chunk per SM: _support.split_words_chunks; ahead of the split path): as the
  split path, but each program holds its chunk (of r) as the 32-bit words its loads filled (two values a
  register, _support.opaque_zero) in two halves, each finished before the next half's weight is loaded: 60
  registers (74 with a residual), four (three) 8-warp programs an SM. H200 (bf16, M * N = 2^27, GPU time, % of
  copy): 79.4 / 79.8 at N = 131072 / 262144, the looped kernel 69.0 / 63.7; with a residual 89.9 / 89.4, the split
  kernel 84.4 / 86.5.
- Looped (N > ONCHIP_MAX elsewhere): persistent, one row at a time per program. Pass 1 reads x (and
  residual), writes r, sums r^2; pass 2 walks the row back to front (the tiles last touched are
  still in L2), reads r (or x) again and writes y. The re-read comes from L2 while (programs in
  flight * row bytes) fits.
Split against looped on the H200 (bf16, M * N = 2^27, GPU time alone, benchmarks/exp_split_rows.py):
with a residual 3609 / 3701 GB/s at N = 65536, 3567 / 3512 at 131072, 3671 / 3317 at 262144, 3398 /
3110 at 1048576; without one the split path lost at 65536, 131072 and 1048576 (won 5% at 262144).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops import norm_sm90
from rooftop.ops._support import (as_rows, await_previous, cdiv, check_fp8_device, check_norm_inputs, check_number,
                                  exchange_words, gluon_runs, in_place_rows, interpreting, launch, leave_row,
                                  load_rows_add_residual, load_split_chunk, load_tile, load_tile_add_residual,
                                  load_tile_again, load_word_pairs, num_sms, onchip_config, opaque_zero, pack_words,
                                  pdl_options, planned, row_pointers, rows_vectorize, runs_kernel, split_chunks,
                                  split_words_chunks, store_tile, swap_row_stats, torch_op, unpack_words)
from rooftop.roofline import Cost

ONCHIP_MAX = 32768  # widest row kept in registers (elements)
# quant name -> (output dtype, QUANT constexpr, largest representable magnitude)
QUANT_FORMATS = {"fp8": (torch.float8_e4m3fn, 1, 448.0), "int8": (torch.int8, 2, 127.0)}
# Launch parameters, chosen by measurement on the H200 (benchmarks/tune_rowops.py, NOTES.md).
ONCHIP_ELEMS_PER_THREAD = 16
# Quantizing rows without a residual (rms_norm_fp8 / int8, a model's first norm): 32 values a thread, half the warps a
# program. H200, bf16, M * N = 2^27, % of a same-run copy by do_bench (logs/h200-2026-12-04-s49/call-a,
# benchmarks/exp_quant_onchip.py), 16 / 32 / 64 a thread: 90.1 / 98.4 / 98.1 at 1024; with Gluon off 85.5 / 90.7 / 90.4
# at 8192 (Gluon 89.3), 77.8 / 83.4 / 83.1 at 16384 (Gluon 90.7).
QUANT_ONCHIP_ELEMS_PER_THREAD = 32
ONCHIP_BLOCK_ELEMS = 2048
PROGRAMS_PER_SM = 4
SPLIT_LAUNCH = dict(CHUNK=8192, num_warps=8)  # the split path's chunk and warps (benchmarks/exp_split_rows.py)
SPLIT_MIN_N = 65536  # the split paths run above this width
# The split-words kernel (no quant): chunks held as 32-bit words of two values, in two halves. Without a residual,
# measured on the H200 (bf16, M * N = 2^27, GPU time, % of copy; benchmarks/exp_split_packed.py, then
# exp_norm_reload.py with this kernel, logs/h200-2026-12-01-s11): 16384-element chunks over 8 warps 79.4 / 79.8 at
# N = 131072 / 262144 (60 registers, 4 programs an SM), over 16 warps 77.9 / 78.1, 8192 over 8 warps 71.6 / 70.4,
# 32768 over 16 warps 62.8 / 60.7, the looped kernel 69.0 / 63.7; holding the chunk as fp32: 66-68.
SPLIT_WORDS_LAUNCH = dict(CHUNK=16384, num_warps=8)
# With a residual (and no quant) too, ahead of the split kernel: 89.9 / 89.4% of copy at 131072 / 262144 against its
# 84.4 / 86.5; at 65536 even with Gluon (exp_norm_reload.py, logs/h200-2026-12-01-s11/exp-split-words-residual.log).
SPLIT_WORDS_RESIDUAL = True
# The Gluon path's widths (exclusive, inclusive), but for TRITON_RES_N with a residual. Measured (H200, bf16, M * N =
# 2^27, % of copy, Gluon against Triton; benchmarks/exp_gluon_norms.py run 1, logs/h200-2026-12-01-s9): rms_norm 79.6
# / 37.0 at 16392, 79.6 / 4.9 at 32776, 89.4 / 74.7 at 65536 (8192-element chunks); add_rms_norm 87.3 / 46.9, 89.3 /
# 8.4, 90.8 / 87.5. Triton's kernels collapse where N is not a multiple of their tile. At 32768 (run 2, 8192-element
# chunks, the release fenced): rms_norm Gluon 89.7 / Triton 87.4, add_rms_norm 93.1 / 98.7: Triton keeps TRITON_RES_N
# with a residual. Rows wider than x's ring (norm_sm90) are not taken.
GLUON_MIN_N, GLUON_MAX_N = 16384, 65536
# Rows past GLUON_MAX_N in parts of at most PART_MAX_N (quantizing: QUANT_PART_MAX_N): H200, bf16, % of a same-run copy
# by do_bench (logs/h200-2026-12-04-s47/call-c, benchmarks/exp_norm_parts.py), parts of 65536 / 32768: rms_norm 89.3 /
# 90.1 at 131072, 87.6 / 90.4 at 262144; add_rms_norm 93.6 / 94.3 at 524288 (a 65536-wide part is 8 chunks: two
# consumers' parts overflow x's ring of 14 buffers; layer_norm.PART_MAX_N the same).
PART_MAX_N = 32768
# Quantizing rows take the Gluon path past QUANT_GLUON_MIN_N (exclusive; without a residual, with one), contiguous rows
# past QUANT_PART_MAX_N in parts
# of at most that (with a residual too): pass 1 also takes max |h (offset + w)| (13 instructions an element with a
# residual, 7.8 without quant), so a 64K row's next one, 2 chunks in x's ring of 10 behind it, waits on its pass 2.
# H200, bf16, M * N = 2^27, GPU time, % of copy (benchmarks/exp_row_parts.py, logs/h200-2026-12-01-s13):
# add_rms_norm_fp8 at 32768 / 65536 / 131072 whole rows (parts of 65536 at 131072) 89.1 / 78.0 / 76.1, parts of 32768
# 89.3 / 83.5 / 84.2, 8-warp consumers 86.8 / 85.1 / 77.9; the Triton kernels (do_bench) 81.7 / 71.6 / 73.8, 77.1 at
# 16384, 92.8 at 8192. Without a residual (logs/h200-2026-12-04-s44/call-e, the on-chip kernel's statistics in one
# phase, % of copy by do_bench, on chip / Gluon): 92.0 / 86.0 at 4096, 84.9 / 88.2 at 8192; with one 96.4 / 93.5.
QUANT_GLUON_MIN_N, QUANT_PART_MAX_N = (4096, 8192), 32768
# Without a residual, quantizing rows stay whole up to QUANT_WHOLE_MAX_N, on consumer partitions of QUANT_WIDE_WARPS
# warps past QUANT_PART_MAX_N: H200, % of a same-run copy by do_bench / graph replay (logs/h200-2026-12-04-s45/call-b,
# benchmarks/exp_quant_norm_rows.py) at 65536: parts of 32768 on 4 warps 77.2 / 77.4, whole rows on 8 warps 84.5 /
# 84.7 (on 4, session 44's call f: 78.6); at 131072 / 262144 parts of 65536 on 8 warps 70-73 against 77 (graph).
# Call c, by do_bench, this / whole rows on 4 warps / parts of 32768: 84.2 / 81.9 / 67.4 at 40960, 85.2 / 80.7 / 71.6 at
# 49152, 84.6 / 79.0 / 76.1 at 65536; with a residual 8 warps lost (85.7 against 91.0 at 65536). Since the parts swap
# their statistics in one round trip (softmax_sm90.swap_pairs; logs/h200-2026-12-04-s46/call-e,
# benchmarks/exp_part_exchange.py), parts of 32768 win at 65536: 87.0 / 86.1 against whole rows 84.5 / 84.2.
QUANT_WHOLE_MAX_N, QUANT_WIDE_WARPS = 57344, 8
TRITON_RES_N = 32768
GLUON_ENABLED = True  # tests and benchmarks switch the Gluon path off to reach the Triton kernels
# The reload kernel's widths (exclusive, inclusive), after torch.compile's kernel for this norm (95.5% of copy at
# N = 32768, bf16, M * N = 2^27, the whole row one tile over 32 warps). Measured on the H200 (2026-12-01,
# benchmarks/exp_norm_reload.py, GPU time): at 32768 1.05x the Gluon path it replaces (compile 1.05x it still); at
# 12288 / 16384 0.92x / 0.98x the on-chip kernel, which keeps those. Since pass 1 sums into one vector (session 36,
# logs/h200-2026-12-03-s36/call-b, % of copy): 98.7% at 32768 (was 93.2); at 65536 83.6% against Gluon's 89.0%.
# Rows with a residual take it at RELOAD_RESIDUAL widths: at 65536 92.5% against Gluon's 90.2%, at 32768 85.4%
# against the on-chip kernel's 98.1% (TRITON_RES_N). Quantizing rows keep the on-chip kernel (with quant this
# kernel failed a GPU test of the int8 codes, not understood).
RELOAD_MIN_N, RELOAD_MAX_N = 16384, 65536
RELOAD_RESIDUAL_MIN_N, RELOAD_RESIDUAL_MAX_N = 32768, 65536
RELOAD_WARPS = 32
# Rows without a residual past this width run one program an SM (maxnreg=64: 1024 threads x 64 registers, the
# register file). H200, bf16, M * N = 2^27, graph replay, % of copy, Gluon (the library then) / two programs an SM /
# one (logs/h200-2026-12-03-s37/call-f..h, benchmarks/exp_reload_one_program.py): 32768 99.1 (the reload kernel) /
# 99.2 / 88.1; 40960 90.4 / 95.7 / 94.5; 49152 90.5 / 93.5 / 98.2; 57344 90.2 / 87.4 / 96.4; 65536 89.2-89.6 /
# 83.7-84.1 / 96.8-96.9. With a residual at 65536: 94.2 / 94.2 / 93.0 (two programs kept). softmax's reload kernel
# lost with one program (70.5% at 65536).
RELOAD_ONE_PROGRAM_MIN_N = 40960
RELOAD_MAX_BYTES = 131072
# The reload kernel's widest tile in bytes of x: 32 KB (16 bf16 values a thread over 32 warps) keeps it at 32
# registers a thread (offline sm_90 compile, aligned rows, no spills: bf16 at N = 16384 and 32768, with and without a
# residual), so that two 32-warp programs share an SM. The whole bf16 row as one tile took 38 at N = 32768 (and ran
# 0.92x the two tiles).
RELOAD_TILE_BYTES = 32768


def looped_config(N: int, quant: bool = False) -> tuple[int, int]:
    """(TILE, num_warps) of the looped path. Quantizing, pass 1 also holds the weight's tile and the
    running |r w| max: half the tile keeps it in registers (16384 spilled 88 B a thread, offline
    sm_90 compile; 8192: 54 registers, no spill)."""
    return (8192, 32) if quant else (16384, 32)

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _quantize(y, scale, QUANT: tl.constexpr, QMAX: tl.constexpr):
    """y / scale as stored: int8 rounded half away from zero, fp8 clamped (the cast rounds to nearest)."""
    q = tl.clamp(y / scale, -QMAX, QMAX)
    if QUANT == 2:
        q = tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5))
    return q


@triton.jit
def _rms_norm_onchip_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, scale_ptr, M, N, x_stride, res_stride, y_stride,
                            r_stride, eps, w_offset, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                            QUANT: tl.constexpr, QMAX: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            PDL: tl.constexpr):
    # Reads x (+ residual) once and writes y (+ r) once: (2 or 4) * BLOCK_M * N * itemsize bytes
    # (y at 1 byte per element when quantized, + 4 bytes of scale per row). PDL: the launch overlaps the kernel
    # before it (_support.pdl_options).
    await_previous(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    # Small tiles (decode sizes) load the weight with the rows, not after their reduction: one memory latency less
    # (H200, graph replay, add_rms_norm [1, 4096] 1.55 -> 1.46 us; N = 8192 rms_norm 93.8 -> 95.3% of copy); bigger
    # ones after it: held across the reduction it took rms_norm at N = 16384 from 93.7 to 70.3%. Quantizing rows
    # always load it first (below).
    EARLY_WEIGHT: tl.constexpr = HAS_WEIGHT and (QUANT or BLOCK_M * BLOCK_N <= 8192)
    if EARLY_WEIGHT:
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
    x = load_rows_add_residual(x_ptr, res_ptr, r_ptr, rows, cols, mask, x_stride, res_stride, r_stride, HAS_RESIDUAL)
    if QUANT:
        # max|y| = rstd max|x (offset + w)|: both reductions at once, then one scale a row and y / scale = x (offset +
        # w) (rstd / scale), as the Gluon kernel does. Taking max|y| after y put a second reduction behind the first:
        # H200, bf16, M * N = 2^27, % of copy by do_bench, without a residual, after / at once (logs/h200-2026-12-04-
        # s44/call-e, benchmarks/exp_quant_norm_rows.py) 81.9 / 89.7 at 1024, 82.2 / 94.1 at 2048, 77.6 / 92.0 at
        # 4096, 70.5 / 84.9 at 8192; with one 94.7 / 96.4 at 8192, level at 1024-4096 (~100).
        xw = x * (w.to(tl.float32)[None, :] + w_offset) if HAS_WEIGHT else x
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
        scale = tl.maximum(tl.max(tl.abs(xw), axis=1) * rstd, 1e-30) / QMAX
        tl.store(scale_ptr + rows, scale, mask=rows < M)
        q = _quantize(xw * (rstd / scale)[:, None], 1.0, QUANT, QMAX)
        tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], q.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        y = x * tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)[:, None]
        if HAS_WEIGHT:
            if not EARLY_WEIGHT:
                w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)
            y = y * (w.to(tl.float32)[None, :] + w_offset)
        tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rms_norm_reload_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, M, N, x_stride, res_stride, y_stride, r_stride, eps,
                            w_offset, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr, TILE: tl.constexpr,
                            PARTS: tl.constexpr):
    # Row program_id(0), PARTS tiles of TILE (PARTS * TILE >= N). HBM: x (+ residual) read once, y (+ r)
    # written once, as the on-chip kernel; pass 2's loads of the row (and w) are the program's own bytes again,
    # from L1 or L2. Nothing of the row lives across the reduction: each tile is folded into the sum of squares
    # (pass 1) or stored (pass 2) before the next one's registers are needed.
    x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, tl.program_id(0), x_stride, y_stride,
                                                  res_stride, r_stride, HAS_RESIDUAL)
    cols = tl.arange(0, TILE)
    # pass 1 sums the tiles' squares into one vector, reduced across the program once: no barrier between the
    # tiles, so ptxas issues every tile's loads up front (a reduction a tile put one before each next load: N = 32768
    # 93.2% -> 98.7% of copy, H200, session 36)
    sum_sq = tl.zeros([TILE], tl.float32)
    for part in tl.static_range(PARTS):
        offs = part * TILE + cols
        r = load_tile_add_residual(x_row, res_row, src_row, offs, offs < N, HAS_RESIDUAL)
        sum_sq += r * r
    rstd = tl.rsqrt(tl.sum(sum_sq, axis=0) / N + eps)
    for part in tl.static_range(PARTS):  # pass 2: the row (r or x) again, y = r rstd (offset + w)
        offs = part * TILE + cols
        y = load_tile_again(src_row, offs, offs < N, "evict_first") * rstd
        if HAS_WEIGHT:
            y = y * (load_tile_again(w_ptr, offs, offs < N, "evict_last") + w_offset)
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=offs < N)


@triton.jit
def _rms_norm_split_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, scale_ptr, words_ptr, cnt_ptr, N, x_stride, res_stride,
                           y_stride, r_stride, eps, w_offset, G, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                           QUANT: tl.constexpr, QMAX: tl.constexpr, CHUNK: tl.constexpr, G_POW2: tl.constexpr):
    # Program (row, chunk) = (p // G, p % G): reads its chunk of x (+ residual) and of w once, writes
    # its chunk of y (+ r) once, exchanges 8 bytes of statistics with the row's other chunks.
    row = tl.program_id(0) // G
    chunk = tl.program_id(0) % G
    rows = tl.full([1], row, tl.int64)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols[None, :] < N
    r = load_rows_add_residual(x_ptr, res_ptr, r_ptr, rows, cols, mask, x_stride, res_stride, r_stride, HAS_RESIDUAL)
    abs_max = 0.0  # of r * (offset + w), for the quantization scale
    if QUANT:
        if HAS_WEIGHT:  # w is read again after the wait (from L1): not held across it
            abs_max = tl.max(tl.abs(r * (tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
                                         + w_offset)))
        else:
            abs_max = tl.max(tl.abs(r))
    sums_sq, abs_maxes = swap_row_stats(words_ptr, row, chunk, tl.sum(r * r), abs_max, 0.0, 0.0, G, G_POW2)
    rstd = tl.rsqrt(tl.sum(sums_sq, axis=0) / N + eps)
    y = r * rstd
    if HAS_WEIGHT:
        y = y * (tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :] + w_offset)
    if QUANT:
        scale = tl.maximum(tl.max(abs_maxes, axis=0) * rstd, 1e-30) / QMAX
        if chunk == 0:
            tl.store(scale_ptr + row, scale)
        y = _quantize(y, scale, QUANT, QMAX)
    tl.store(y_ptr + rows[:, None] * y_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    leave_row(words_ptr, cnt_ptr, row, G, G_POW2)


@triton.jit
def _rms_split_words_out(x_words, w_ptr, y_row, words, live, rstd, w_offset, HAS_WEIGHT: tl.constexpr,
                         DTYPE: tl.constexpr):
    """y = x rstd (offset + w) of one half chunk held as words (of DTYPE values), stored as words."""
    x_even, x_odd = unpack_words(x_words, DTYPE)
    y_even = x_even * rstd
    y_odd = x_odd * rstd
    if HAS_WEIGHT:
        w_even, w_odd = load_word_pairs(w_ptr, words, live, DTYPE)
        y_even = y_even * (w_even + w_offset)
        y_odd = y_odd * (w_odd + w_offset)
    tl.store(y_row + words, pack_words(y_even, y_odd, DTYPE), mask=live)


@triton.jit(do_not_specialize=["G"])
def _rms_norm_split_words_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, words_ptr, cnt_ptr, N, x_stride, res_stride,
                                 y_stride, r_stride, eps, w_offset, G, HAS_RESIDUAL: tl.constexpr,
                                 HAS_WEIGHT: tl.constexpr, CHUNK: tl.constexpr, G_POW2: tl.constexpr):
    # Program (row, chunk) = (p // G, p % G): reads its chunk of x (+ residual) once and writes its chunk of y (+ r)
    # once, all as 32-bit words of two values, exchanges 4 bytes of statistics with the row's other chunks. The
    # chunk (of r) lives across the wait as words (opaque_zero), and it is two halves, each finished (w loaded, y
    # stored) before the next: the registers a program holds decide how many share an SM.
    DTYPE: tl.constexpr = x_ptr.dtype.element_ty
    row, chunk, lo, hi, r_lo, r_hi, y_row = load_split_chunk(x_ptr, y_ptr, res_ptr, r_ptr, x_stride, y_stride,
                                                             res_stride, r_stride, N, G, HAS_RESIDUAL, CHUNK)
    even, odd = unpack_words(r_lo, DTYPE)
    sum_sq = tl.sum(even * even + odd * odd, axis=0)
    even, odd = unpack_words(r_hi, DTYPE)
    sum_sq += tl.sum(even * even + odd * odd, axis=0)
    sums_sq, _ = swap_row_stats(words_ptr, row, chunk, sum_sq, 0.0, 0.0, 0.0, G, G_POW2)
    rstd = tl.rsqrt(tl.sum(sums_sq, axis=0) / N + eps)
    hidden = opaque_zero(rstd)
    _rms_split_words_out(r_lo | hidden, w_ptr, y_row, lo, lo < N // 2, rstd, w_offset, HAS_WEIGHT, DTYPE)
    _rms_split_words_out(r_hi | hidden, w_ptr, y_row, hi, hi < N // 2, rstd, w_offset, HAS_WEIGHT, DTYPE)
    leave_row(words_ptr, cnt_ptr, row, G, G_POW2)


@triton.jit
def _rms_norm_looped_kernel(x_ptr, res_ptr, w_ptr, y_ptr, r_ptr, scale_ptr, M, N, x_stride, res_stride, y_stride,
                            r_stride, eps, w_offset, HAS_RESIDUAL: tl.constexpr, HAS_WEIGHT: tl.constexpr,
                            QUANT: tl.constexpr, QMAX: tl.constexpr, TILE: tl.constexpr, X_POLICY: tl.constexpr,
                            EVEN: tl.constexpr):
    # Per row: pass 1 reads x (+ residual), writes r; pass 2 re-reads r (or x), mostly from L2,
    # and writes y. Persistent: program p takes rows p, p + G, ...
    cols = tl.arange(0, TILE)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row, y_row, res_row, src_row = row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, row, x_stride, y_stride,
                                                      res_stride, r_stride, HAS_RESIDUAL)
        # pass 1, the next tile's loads in flight while the current one is summed
        sum_sq = tl.zeros([TILE], tl.float32)
        abs_max = tl.zeros([TILE], tl.float32)  # of r * (offset + w), for the quantization scale
        x_next = load_tile(x_row, 0, cols, N, EVEN, X_POLICY)
        if HAS_RESIDUAL:
            res_next = load_tile(res_row, 0, cols, N, EVEN, "evict_first")
        for off in range(0, N, TILE):
            r = x_next.to(tl.float32)
            x_next = load_tile(x_row, off + TILE, cols, N, EVEN, X_POLICY)
            if HAS_RESIDUAL:
                r = (r + res_next.to(tl.float32)).to(r_ptr.dtype.element_ty)  # the new residual, as stored
                res_next = load_tile(res_row, off + TILE, cols, N, EVEN, "evict_first")
                store_tile(src_row, off, cols, N, r, EVEN, "evict_last")
                r = r.to(tl.float32)
            sum_sq += r * r
            if QUANT:
                rw = r
                if HAS_WEIGHT:
                    rw = r * (load_tile(w_ptr, off, cols, N, EVEN, "evict_last").to(tl.float32) + w_offset)
                abs_max = tl.maximum(abs_max, tl.abs(rw))
        rstd = tl.rsqrt(tl.sum(sum_sq, axis=0) / N + eps)
        if QUANT:
            scale = tl.maximum(tl.max(abs_max, axis=0) * rstd, 1e-30) / QMAX
            tl.store(scale_ptr + row, scale)
        # pass 2, back to front: the tiles touched last in pass 1 are the likeliest still in L2
        off = (tl.cdiv(N, TILE) - 1) * TILE
        r_next = load_tile(src_row, off, cols, N, EVEN, "evict_first")
        while off >= 0:
            r = r_next.to(tl.float32)
            r_next = load_tile(src_row, off - TILE, cols, N, EVEN, "evict_first")
            y = r * rstd
            if HAS_WEIGHT:
                y = y * (load_tile(w_ptr, off, cols, N, EVEN, "evict_last").to(tl.float32) + w_offset)
            if QUANT:
                y = _quantize(y, scale, QUANT, QMAX)
            store_tile(y_row, off, cols, N, y.to(y_ptr.dtype.element_ty), EVEN, "")
            off -= TILE


def reload_width(N: int, has_residual: bool, quant: Optional[str] = None, itemsize: int = 2) -> bool:
    """Whether rows of N (with or without a residual, quantized or not, of `itemsize`-byte values) take the reload
    kernel: rows without a residual of at most RELOAD_MAX_BYTES (fp32 rows to 32768, as measured)."""
    low, high = (RELOAD_RESIDUAL_MIN_N, RELOAD_RESIDUAL_MAX_N) if has_residual else (RELOAD_MIN_N, RELOAD_MAX_N)
    return low < N <= high and quant is None and (has_residual or N * itemsize <= RELOAD_MAX_BYTES)


def reload_launch(N: int, has_residual: bool) -> dict:
    """The reload kernel's launch options for rows of N: RELOAD_WARPS warps, one program an SM past
    RELOAD_ONE_PROGRAM_MIN_N without a residual (maxnreg=64)."""
    one_program = N > RELOAD_ONE_PROGRAM_MIN_N and not has_residual
    return dict(num_warps=RELOAD_WARPS, **(dict(maxnreg=64) if one_program else {}))


def gluon_parts(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor], y: torch.Tensor,
                r: Optional[torch.Tensor], quant: Optional[str] = None) -> int:
    """How rms_norm_rows takes the Gluon path (norm_sm90) for these [M, N] views: 0 not at all, 1 whole rows (of the
    reload kernel's widths only rows whose Triton loads would not vectorize), P > 1 rows past GLUON_MAX_N (quantizing:
    QUANT_PART_MAX_N) in P parts of at most PART_MAX_N (quantizing: QUANT_PART_MAX_N; norm_sm90.row_parts)."""
    M, N = x.shape
    low = QUANT_GLUON_MIN_N[residual is not None] if quant else GLUON_MIN_N
    if not (GLUON_ENABLED and x.is_cuda and not interpreting() and N > low and gluon_runs(x.device.index)):
        return 0
    if N > GLUON_MAX_N or (quant and N > (QUANT_PART_MAX_N if residual is not None else QUANT_WHOLE_MAX_N)):
        parts = norm_sm90.row_parts(x, residual, weight, None, y, r, False, QUANT_PART_MAX_N if quant else PART_MAX_N)
        if parts or N > GLUON_MAX_N:
            return parts
    return int((quant is not None or not (residual is not None and N == TRITON_RES_N))
               and not (reload_width(N, residual is not None, quant, x.element_size())
                        and rows_vectorize(N, [t for t in (x, residual, y, r) if t is not None], [weight]))
               and M >= norm_sm90.CONSUMERS * num_sms(x.device.index)
               and norm_sm90.supports(x, residual, weight, None, y, r, False))


def uses_gluon(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor], y: torch.Tensor,
               r: Optional[torch.Tensor], quant: Optional[str] = None) -> bool:
    """Whether rms_norm_rows takes the Gluon path (norm_sm90) for these [M, N] views (gluon_parts)."""
    return gluon_parts(x, residual, weight, y, r, quant) > 0


def rms_norm_rows(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
                  y: torch.Tensor, r: Optional[torch.Tensor], eps: float, offset: float = 0.0,
                  scale: Optional[torch.Tensor] = None, quant: Optional[str] = None) -> None:
    """RMSNorm of the [M, N] row views; with `residual`, r <- x + residual first and y <- norm(r);
    with `quant`, y is quantized and `scale` [M] (fp32) receives each row's scale.
    Every view has unit column stride; y may alias x and r may alias residual (the in-place op)."""
    if quant == "fp8":
        check_fp8_device("quant='fp8' (use 'int8' on this GPU)", x.device)
    M, N = x.shape
    if M == 0 or N == 0:
        return
    parts = gluon_parts(x, residual, weight, y, r, quant)
    _, quant_id, qmax = QUANT_FORMATS[quant] if quant else (None, 0, 1.0)
    if parts:
        # (with a residual 8 warps spill: 24 bytes a thread, offline sm_90)
        wide = quant is not None and residual is None and parts == 1 and N > QUANT_PART_MAX_N
        norm_sm90.norm_rows(x, residual, weight, None, y, r, eps, offset, False, num_sms(x.device.index), parts=parts,
                            scale=scale, quant=(quant_id, qmax), warps=QUANT_WIDE_WARPS if wide else None)
        return
    has_res = residual is not None
    args = (x, residual if has_res else x, weight if weight is not None else x, y, r if has_res else y,
            scale if quant else x, M, N, x.stride(0), residual.stride(0) if has_res else 0, y.stride(0),
            r.stride(0) if has_res else 0, eps, offset)
    flags = dict(HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None, QUANT=quant_id, QMAX=qmax)
    if reload_width(N, has_res, quant, x.element_size()):
        tile = min(triton.next_power_of_2(N), RELOAD_TILE_BYTES // x.element_size())
        launch(_rms_norm_reload_kernel, (M,), *args[:5], *args[6:], HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None,
               TILE=tile, PARTS=cdiv(N, tile), **reload_launch(N, has_res))
        return
    if N <= ONCHIP_MAX:
        elems = QUANT_ONCHIP_ELEMS_PER_THREAD if quant and not has_res else ONCHIP_ELEMS_PER_THREAD
        block_m, block_n, warps = onchip_config(M, N, elems, ONCHIP_BLOCK_ELEMS)
        launch(_rms_norm_onchip_kernel, (cdiv(M, block_m),), *args, **flags, BLOCK_M=block_m, BLOCK_N=block_n,
               num_warps=warps, **pdl_options(x))
        return
    if quant is None and N > SPLIT_MIN_N and (SPLIT_WORDS_RESIDUAL or not has_res):
        chunks = split_words_chunks([x, y, residual, r], [weight], SPLIT_WORDS_LAUNCH["CHUNK"])
        if chunks:
            words, counters = exchange_words(x.device, M, chunks)
            launch(_rms_norm_split_words_kernel, (M * chunks,), *args[:5], words, counters, N, *args[8:14], chunks,
                   HAS_RESIDUAL=has_res, HAS_WEIGHT=weight is not None, G_POW2=triton.next_power_of_2(chunks),
                   **SPLIT_WORDS_LAUNCH)
            return
    chunks = split_chunks(x, N, SPLIT_LAUNCH["CHUNK"]) if has_res and N > SPLIT_MIN_N else 0
    if chunks:
        words, counters = exchange_words(x.device, M, chunks)
        launch(_rms_norm_split_kernel, (M * chunks,), *args[:6], words, counters, *args[7:], chunks, **flags,
               G_POW2=triton.next_power_of_2(chunks), **SPLIT_LAUNCH)
        return
    programs = min(M, PROGRAMS_PER_SM * num_sms(x.device.index if x.is_cuda else -1))
    tile, warps = looped_config(N, quant is not None)
    # without a residual pass 2 re-reads x: ask L2 to keep it; with one, x is not read again
    launch(_rms_norm_looped_kernel, (programs,), *args, **flags, TILE=tile,
           X_POLICY="evict_first" if has_res else "evict_last", EVEN=N % tile == 0, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _check(x, residual, weight, eps, offset=0.0, out_dtype=None, quant=None) -> None:
    check_norm_inputs(x, residual, eps, weight=weight)
    check_number("offset", offset)
    if not -math.inf < offset < math.inf:  # not math.isfinite: a symbolic float (torch.compile, dynamic) breaks it
        raise ValueError(f"offset must be a finite number, got {offset!r}")
    if offset != 0 and weight is None:
        raise ValueError("offset scales by (offset + weight): it needs a weight")
    if out_dtype is not None and out_dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"out_dtype must be float16, bfloat16 or float32, got {out_dtype}")
    if quant is not None:
        if quant not in QUANT_FORMATS:
            raise ValueError(f"quant must be None, 'fp8' or 'int8', got {quant!r}")
        if out_dtype is not None:
            raise ValueError("out_dtype and quant exclude each other: quant sets the output dtype")
        if x.dim() and x.shape[-1] == 0:
            raise ValueError(f"x has an empty last dim (shape {tuple(x.shape)}): the scale of an empty row (its "
                             "absmax over the row) is undefined")


def _rows_out(x, dtype):
    """A fresh contiguous output shaped like x."""
    return torch.empty(x.shape, device=x.device, dtype=dtype)


def _run(x, residual, weight, eps, offset, out_dtype, quant, in_place=False):
    """Allocate the outputs (unless in place) and run the kernel; returns (y, scale or None, r or None)."""
    y_dtype = QUANT_FORMATS[quant][0] if quant else (out_dtype or x.dtype)
    y = x if in_place else _rows_out(x, y_dtype)
    r = residual if in_place else (_rows_out(x, x.dtype) if residual is not None else None)
    scale = torch.empty((*x.shape[:-1], 1), device=x.device, dtype=torch.float32) if quant else None
    if x.numel():
        rms_norm_rows(as_rows(x), as_rows(residual) if residual is not None else None, weight, as_rows(y),
                      as_rows(r) if r is not None else None, eps, offset,
                      scale.view(-1) if quant else None, quant)
    return y, scale, r


def _reference_outputs(x, residual, weight, eps, offset, out_dtype, quant):
    """The op's outputs computed by the float64 reference (CPU without the interpreter)."""
    r = None if residual is None else (x.double() + residual.double()).to(x.dtype)  # stored, then normalised
    y = rms_norm_reference(x if r is None else r, weight, eps, offset)
    if quant:
        q, scale = quantize_rows_reference(y, quant)
        return q, scale.float(), r
    return y.to(out_dtype or x.dtype), None, r


def _impl(x, residual, weight, eps, offset, out_dtype, quant):
    if not runs_kernel(x):
        return _reference_outputs(x, residual, weight, eps, offset, out_dtype, quant)
    return _run(x, residual, weight, eps, offset, out_dtype, quant)


def _fake(x, residual, weight, eps, offset, out_dtype, quant):
    y_dtype = QUANT_FORMATS[quant][0] if quant else (out_dtype or x.dtype)
    scale = torch.empty((*x.shape[:-1], 1), device=x.device, dtype=torch.float32) if quant else None
    return (_rows_out(x, y_dtype), scale, _rows_out(x, x.dtype) if residual is not None else None)


@torch_op("rms_norm", fake=lambda x, w, eps, offset, out_dtype: _fake(x, None, w, eps, offset, out_dtype, None)[0])
def _rms_norm_op(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, offset: float,
                 out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    return _impl(x, None, weight, eps, offset, out_dtype, None)[0]


def _add_fake(x, res, w, eps, offset, out_dtype):
    y, _, r = _fake(x, res, w, eps, offset, out_dtype, None)
    return y, r


@torch_op("add_rms_norm", fake=_add_fake)
def _add_rms_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                     offset: float, out_dtype: Optional[torch.dtype]) -> tuple[torch.Tensor, torch.Tensor]:
    y, _, r = _impl(x, residual, weight, eps, offset, out_dtype, None)
    return y, r


@torch_op("rms_norm_quant",
          fake=lambda x, w, eps, offset, quant: _fake(x, None, w, eps, offset, None, quant)[:2])
def _rms_norm_quant_op(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float, offset: float,
                       quant: str) -> tuple[torch.Tensor, torch.Tensor]:
    return _impl(x, None, weight, eps, offset, None, quant)[:2]


@torch_op("add_rms_norm_quant",
          fake=lambda x, res, w, eps, offset, quant: _fake(x, res, w, eps, offset, None, quant))
def _add_rms_norm_quant_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor], eps: float,
                           offset: float, quant: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _impl(x, residual, weight, eps, offset, None, quant)


@torch_op("fused_add_rms_norm_", mutates_args=("x", "residual"))
def _fused_add_rms_norm_op(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                           eps: float, offset: float) -> None:
    if not runs_kernel(x):
        y, _, r = _reference_outputs(x, residual, weight, eps, offset, None, None)
        residual.copy_(r)
        x.copy_(y)
        return
    if x.numel():
        x_rows, res_rows = in_place_rows("fused_add_rms_norm_", x, residual)
        rms_norm_rows(x_rows, res_rows, weight, x_rows, res_rows, eps, offset)


@planned
def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float = 1e-6,
             residual: Optional[torch.Tensor] = None, *, offset: float = 0.0,
             out_dtype: Optional[torch.dtype] = None, quant: Optional[str] = None):
    """RMSNorm over the last dim: y = x / sqrt(mean(x^2) + eps) * (offset + weight) (weight None: no
    scale; offset=1.0 is Gemma's (1 + weight)). y has dtype `out_dtype` (default x's).

    With `residual`, returns (y, x + residual) from one read of each input.
    With `quant="fp8"|"int8"`, y is quantized per row and returned with its scales [..., 1] (fp32,
    y ~= q * scale): (q, scale), or (q, scale, x + residual) with a residual."""
    _check(x, residual, weight, eps, offset, out_dtype, quant)
    eps, offset = float(eps), float(offset)
    if quant is not None:
        if residual is None:
            return _rms_norm_quant_op(x, weight, eps, offset, quant)
        return _add_rms_norm_quant_op(x, residual, weight, eps, offset, quant)
    if residual is None:
        return _rms_norm_op(x, weight, eps, offset, out_dtype)
    return _add_rms_norm_op(x, residual, weight, eps, offset, out_dtype)


@planned
def fused_add_rms_norm_(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor],
                        eps: float = 1e-6, *, offset: float = 0.0) -> None:
    """In place, vLLM's semantics: residual <- x + residual; x <- rms_norm(residual) * (offset + weight)."""
    if residual is None:
        raise ValueError("residual is required for fused_add_rms_norm_")
    _check(x, residual, weight, eps, offset)
    _fused_add_rms_norm_op(x, residual, weight, float(eps), float(offset))


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def rms_norm_reference(x, weight, eps=1e-6, offset=0.0):
    """The same maths in float64."""
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps)
    return y * (weight.double() + offset) if weight is not None else y


def add_rms_norm_reference(x, residual, weight, eps=1e-6, offset=0.0):
    r = x.double() + residual.double()
    return rms_norm_reference(r, weight, eps, offset), r


def add_rms_norm_quant_reference(x, residual, weight, eps=1e-6, offset=0.0, quant="fp8"):
    """(q, scale, r) of the fused form, q's values in float64: y of the stored (rounded) residual,
    quantized as the op does."""
    _, r = add_rms_norm_reference(x, residual, weight, eps, offset)
    y = rms_norm_reference(r.to(x.dtype), weight, eps, offset)
    q, scale = quantize_rows_reference(y, quant)
    return q.double(), scale, r


def rms_norm_quant_reference(x, weight, eps=1e-6, offset=0.0, quant="fp8"):
    """(q, scale) of the quantized norm without a residual, q's values in float64."""
    q, scale = quantize_rows_reference(rms_norm_reference(x, weight, eps, offset), quant)
    return q.double(), scale


def quantize_rows_reference(y, quant):
    """Dynamic per-row quantization of float64 y: (q in the quant dtype, scale [..., 1] float64)."""
    dtype, _, qmax = QUANT_FORMATS[quant]
    scale = y.abs().amax(-1, keepdim=True).clamp_min(1e-30) / qmax
    q = (y / scale).clamp(-qmax, qmax)
    if quant == "int8":
        q = torch.where(q >= 0, torch.floor(q + 0.5), torch.ceil(q - 0.5))
    return q.to(dtype), scale


def add_rms_norm_eager(x, residual, weight, eps=1e-6):
    """As Hugging Face's Llama writes it (residual add, then LlamaRMSNorm)."""
    r = x + residual
    rf = r.float()
    y = rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * y.to(x.dtype), r


def rms_norm_eager(x, weight, eps=1e-6):
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _fp8_rows_eager(y):
    """Dynamic per-token fp8 quantization of y, as PyTorch code writes it: (q, scale)."""
    scale = y.float().abs().amax(-1, keepdim=True).clamp_min(1e-30) / 448.0
    return (y.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


def add_rms_norm_fp8_eager(x, residual, weight, eps=1e-6):
    """The residual add, RMSNorm and dynamic per-token fp8 quantization, as PyTorch code writes them."""
    y, r = add_rms_norm_eager(x, residual, weight, eps)
    return (*_fp8_rows_eager(y), r)


def rms_norm_fp8_eager(x, weight, eps=1e-6):
    """RMSNorm and dynamic per-token fp8 quantization (a model's first norm: no residual yet)."""
    return _fp8_rows_eager(rms_norm_eager(x, weight, eps))


def _cost(tensors_per_element: int, quantized_out: bool = False):
    def cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
        n = math.prod(shape)
        rows = n // shape[-1]
        # square, sum, scale, weight: ~4 FLOPs per element; weight read once; a quantized y is 1 byte
        # per element plus a 4-byte scale per row
        out_bytes = n + 4 * rows if quantized_out else n * dtype.itemsize
        return Cost(flops=4 * n, bytes=(tensors_per_element - 1) * n * dtype.itemsize + out_bytes
                    + shape[-1] * dtype.itemsize)
    return cost


def _make_rms(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=dtype), torch.rand(shape[-1], device=device, dtype=dtype) + 0.5


def _make_add_rms(shape, dtype, device):
    x, w = _make_rms(shape, dtype, device)
    return x, torch.randn(shape, device=device, dtype=dtype), w


def _liger_add_rms():
    try:
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    except ImportError:
        return None
    return lambda x, res, w: LigerFusedAddRMSNormFunction.apply(x, res, w, 1e-6, 0.0, "llama", False)


def _liger_rms():
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except ImportError:
        return None
    return lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6)


registry.register(registry.OpSpec(
    name="add_rms_norm", family="rms_norm", make_inputs=_make_add_rms,
    run=lambda x, res, w: rms_norm(x, w, 1e-6, residual=res),
    reference=lambda x, res, w: add_rms_norm_reference(x, res, w, 1e-6), eager=add_rms_norm_eager,
    cost=_cost(4), cases=registry.row_sweep(), peers={"liger": _liger_add_rms}))
registry.register(registry.OpSpec(
    name="rms_norm", family="rms_norm", make_inputs=_make_rms, run=lambda x, w: rms_norm(x, w, 1e-6),
    reference=lambda x, w: rms_norm_reference(x, w, 1e-6), eager=rms_norm_eager,
    cost=_cost(2), cases=registry.row_sweep(), peers={"liger": _liger_rms}))
registry.register(registry.OpSpec(
    name="add_rms_norm_fp8", family="rms_norm", make_inputs=_make_add_rms,
    run=lambda x, res, w: rms_norm(x, w, 1e-6, residual=res, quant="fp8"),
    reference=lambda x, res, w: add_rms_norm_quant_reference(x, res, w, 1e-6, quant="fp8"),
    eager=add_rms_norm_fp8_eager, cost=_cost(4, quantized_out=True), cases=registry.row_sweep()))
registry.register(registry.OpSpec(
    name="rms_norm_fp8", family="rms_norm", make_inputs=_make_rms, run=lambda x, w: rms_norm(x, w, 1e-6, quant="fp8"),
    reference=lambda x, w: rms_norm_quant_reference(x, w, 1e-6, quant="fp8"), eager=rms_norm_fp8_eager,
    cost=_cost(2, quantized_out=True), cases=registry.row_sweep()))
