r"""Softmax and log-softmax over one dimension.

For a row x of width N, with m = max_j x_j and s = \sum_j exp(x_j - m):

    softmax(x)_i     = exp(x_i - m) / s
    log_softmax(x)_i = x_i - m - log(s)

m and s can be built in one pass over the row (the online softmax): keep a running max m and a sum
s rescaled whenever m grows, s <- s * exp(m_old - m_new) + exp(x - m_new). Partial (m, s) pairs of
two pieces of a row merge the same way, which lets a row be split across programs.

Which path runs (N = row width, in elements):
- Gluon (ops/softmax_sm90.py; sm_90 GPUs only, never the interpreter): GLUON_MIN_N < N <= GLUON_MAX_N, fp16 or
  bf16, TMA-addressable rows (N and the row stride multiples of 8, a 16-byte aligned base) and at least
  2 rows per SM. A persistent program per SM: a TMA loader streams the rows into a shared-memory ring.
  A row that fits the ring (N <= 106496): two consumer warp groups take rows in turn (one's second pass
  overlaps the other's first), and the second pass reads the row from shared memory. Traffic:
  2 * M * N * itemsize. A wider row, contiguous and a multiple of 8 P wide (gluon_parts): split into P parts
  of at most PART_MAX_N (softmax on EXP_PART_WARPS-warp consumers; P a power of two; any N up to
  2^20 and past), each a program's as if it were a row, the parts' (max, sum) pairs merged across programs
  between the passes (softmax_sm90.swap_pairs: an 8-byte word, a poll of the row's words and an atomic a part).
  Traffic: 2 * M * N * itemsize. Other rows past the ring (N <= GLUON_MAX_N): one consumer; the ring keeps the
  row's tail, and the loader re-reads its head for the second pass right behind the first, from L2 while the
  programs' heads fit it. Traffic: 2 * M * N * itemsize from DRAM, plus what of the head L2 has lost.
- Reload (RELOAD_MIN_N < N, rows of at most RELOAD_MAX_BYTES, at least a row per SM, loads that vectorize:
  rooftop.ops._support.rows_vectorize; ahead of Gluon): one row a program (grid M) of RELOAD_WARPS warps, the row in
  tiles of RELOAD_TILE_BYTES (one 16-byte load a thread), nothing of the row kept across the passes. Pass 1 loads
  every tile (evict_last) and folds it into a (max, sum) per 16-byte group, merged across the program once after the
  last tile: no barrier between the tiles, so all their loads issue up front. Pass 2 loads the row again
  (evict_first: from L1 or L2, the program's own bytes of a moment ago) and writes y. Rows of whole tiles past
  RELOAD_ONE_PROGRAM_MIN_BYTES run one program an SM (maxnreg=64), so that the row (up to 128 KB) stays in the SM's
  L1 between the passes, where two programs' rows did not. Only the last tile is masked. HBM traffic:
  2 * M * N * itemsize.
- N <= ONCHIP_MAX: the row sits in registers. One program takes BLOCK_M whole rows, reads them once,
  writes them once. Traffic: 2 * M * N * itemsize.
- N > ONCHIP_MAX and enough rows to fill the GPU: one program per row (persistent: the grid is a
  few programs per SM looping over rows). Pass 1 reads the row tile by tile and keeps an online
  (max, sum) per lane; pass 2 walks the tiles in reverse, so that the tiles read last in pass 1,
  the ones most likely still in L2, are read first, and writes the output. The row is read at most
  twice, the second time mostly from L2 when (programs in flight * row bytes) fits L2 (60 MB on H200).
- N > ONCHIP_MAX and few rows (fewer than the SMs can share): each row is split into chunks over
  several programs. Kernel 1 writes each chunk's (max, sum) to a small fp32 workspace [M, chunks, 2];
  kernel 2 merges the row's pairs and writes its chunk. Two reads of the input, two launches.

Semantics follow torch: a row holding NaN or +inf gives NaN everywhere, a row of all -inf gives NaN,
-inf entries of a finite row give 0 (log_softmax: -inf). Statistics are fp32 for every input dtype.
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops import _support, softmax_sm90
from rooftop.ops._support import (as_rows, cdiv, check_float, gluon_runs, interpreting, launch, normalize_dim, num_sms,
                                  onchip_config, planned, rows_vectorize, runs_kernel, torch_op)
from rooftop.roofline import Cost

ONCHIP_MAX = 32768  # widest row kept in registers (elements)
# The Gluon path's widths (exclusive, inclusive). H200, bf16, M * N = 2^27, % of a same-run copy, rooftop
# with the Gluon path against rooftop with it off (benchmarks/results/logs/h200-2026-12-01-s8/
# exp-gluon-softmax-run2.log up to 65536; logs/h200-2026-12-01-s9/exp-gluon-softmax-run3.log past it):
#   N:             8192  16384  16392  32768  65536  131072  131080  262144
#   Gluon:         86.5   88.6   70.4   89.4   88.9   77.0    74.9    69.0
#   Triton paths:  98.5   94.8   42.1   78.2   81.4   72.4    33.7    66.0
# At 16384 and below the on-chip kernel wins. Rows past the ring (more than 13 x 8192 elements) re-read
# the head that the ring cannot keep: from L2 in part at 131072, mostly from DRAM at 262144.
GLUON_MIN_N, GLUON_MAX_N = 16384, 262144
GLUON_ENABLED = True  # tests and benchmarks switch the Gluon path off to reach the Triton kernels
# The reload kernel's widths: N > RELOAD_MIN_N, rows of at most RELOAD_MAX_BYTES. H200, bf16, M * N = 2^27, graph
# replay, % of a same-run copy (logs/h200-2026-12-03-s37/call-a/exp-softmax.log; the library then: Gluon),
# library / reload in 8192-value tiles over 32 warps / over 16 warps / 16384-value tiles over 32 warps:
#   24576 89.7 / 99.9 / 89.9 / 90.4; 32768 89.9 / 97.7 / 91.2 / 97.5; 49152 90.2 / 95.7 / 77.9 / 89.1;
#   65536 89.3 / 74.2 / 75.6 / 71.5 (two programs' rows, 256 KB, no longer stay in L1 between the passes).
# Call b, library / reload off: bf16 20480 93.6 / 84.9, 40960 98.4 / 90.4, 57344 (112 KB, not taken) 90.1 / 90.0
# (the kernel stretched 90.5); fp32 20480 100.9 / 90.3, 24576 99.6 / 96.3. One program an SM (maxnreg=64, the row
# kept in L1) lost: 70.5% at 65536 (call f): the masks (NOTES item 258). Session 39 (logs/h200-2026-12-03-s39/
# call-f..i; benchmarks/exp_softmax_mufu.py in git history: this kernel without masks), one program an SM / two / the
# library: 49152 85.4 / 96.0 / 95.6 (reload, two), 57344 89.3 / 91.9 / 89.2 (reload, one), 65536 92.2 / 89.0-89.4 /
# 88.9 (Gluon; 92.1 with the reload kernel, one). Rows of whole tiles past RELOAD_ONE_PROGRAM_MIN_BYTES run one
# program an SM (maxnreg=64 over 32 warps fills the register file): the row stays in L1 between the passes. fp32 at
# 32768 (128 KB rows, one program) 101.4% against 98.6 before (the persistent looped kernel). With a partial last
# tile two programs win (call i, one / two / Gluon): 57360 82.3 / 87.2 / 84.5, 61440 88.2 / 90.0 / 87.9.
RELOAD_MIN_N, RELOAD_MAX_BYTES = 16384, 131072
RELOAD_ONE_PROGRAM_MIN_BYTES = 114688
RELOAD_WARPS = 32
RELOAD_TILE_BYTES = 16384  # a 16-byte load a thread over 32 warps
# Contiguous rows past the ring are split into parts of at most this (the widest that leaves room in the ring for
# the next part). H200, bf16, GPU time, % of copy (logs/h200-2026-12-01-s12/exp-softmax-parts.log, x 2703 / 4220):
# at 131072 / 262144 / 1048576 parts of 65536 76.2 / 75.0 / 74.0, of 32768 75.8 / 75.2 / 74.3, of 16384 62.7 / 62.0 /
# 58.9 (16 or more parts leave 128 of 132 programs); whole rows (the head re-read; Triton past 262144) 74.6 / 66.5 /
# 56.1. Results file (do_bench): softmax 76.6 / 75.0% at 131072 / 262144 (was 75.0 / 66.8).
# Since the parts swap their statistics in one round trip (softmax_sm90.swap_pairs, session 46) parts of 32768 win for
# both ops: % of a same-run copy by do_bench (logs/h200-2026-12-04-s46/call-i, benchmarks/exp_softmax_part_warps.py),
# at 131072 / 262144, parts of 32768 / 65536: log_softmax on 4 warps 90.9 / 89.6 and 91.1 / 87.7; softmax on 8 warps
# 87.2 / 87.7 and 87.4 / 83.8.
PART_MAX_N = 32768
# softmax's parts (not log_softmax's) on consumer partitions of EXP_PART_WARPS warps (its pass 2 takes an exp2 a value).
# H200, bf16, % of a same-run copy by do_bench, 4 / 8 warps (call i above): softmax 85.4 / 87.2 at 131072, 86.1 / 87.4
# at 262144; log_softmax 90.9 / 90.3, 91.1 / 89.6.
EXP_PART_WARPS = 8

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _exp(x):
    """e^x as exp2(x log2 e): Triton lowers exp2 to one MUFU.EX2 (ex2.approx.ftz), exp to ex2.approx.f32,
    which ptxas wraps in 3 more instructions to keep subnormal results (offline sm_90: 3 an element)."""
    return tl.exp2(x * 1.4426950408889634)


@triton.jit
def _softmax_onchip_kernel(x_ptr, y_ptr, M, N, x_row_stride, y_row_stride,
                           LOG: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Reads BLOCK_M rows once, writes them once: 2 * BLOCK_M * N * itemsize bytes per program.
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)  # rows * stride can pass 2^31
    x = tl.load(x_ptr + rows[:, None] * x_row_stride + cols[None, :], mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    row_max = tl.max(x, axis=1)
    shifted = x - row_max[:, None]
    numer = _exp(shifted)
    denom = tl.sum(numer, axis=1)
    if LOG:
        y = shifted - tl.log(denom)[:, None]
    else:
        y = numer * (1.0 / denom)[:, None]
    tl.store(y_ptr + rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _online_max_sum(x_row, start, end, TILE: tl.constexpr, EVEN: tl.constexpr):
    """Online (max, sum of exp) of x_row[start:end]. Each group of VEC adjacent values (the 16 bytes a
    thread loads together) keeps its own running max and sum, updated once per tile (one exp per
    element, one per group and tile), so a tile needs no exchange between threads; the groups merge
    once at the end. Reads the span once, the next tile's load in flight while the current one is
    reduced; asks L2 to keep it. EVEN (span a multiple of TILE): no masks; the last prefetch re-reads
    the last tile (from L1)."""
    VEC: tl.constexpr = 128 // x_row.dtype.element_ty.primitive_bitwidth
    GROUPS: tl.constexpr = TILE // VEC
    cols = tl.arange(0, TILE)
    m = tl.full([GROUPS], -float("inf"), tl.float32)
    s = tl.zeros([GROUPS], tl.float32)
    if EVEN:
        x_next = tl.load(x_row + start + cols, eviction_policy="evict_last")
    else:
        x_next = tl.load(x_row + start + cols, mask=start + cols < end, other=-float("inf"),
                         eviction_policy="evict_last")
    for off in range(start, end, TILE):
        x = tl.reshape(x_next.to(tl.float32), (GROUPS, VEC))
        if EVEN:
            x_next = tl.load(x_row + tl.minimum(off + TILE, end - TILE) + cols, eviction_policy="evict_last")
        else:
            nxt = off + TILE + cols
            x_next = tl.load(x_row + nxt, mask=nxt < end, other=-float("inf"), eviction_policy="evict_last")
        m, s = _fold_groups(m, s, x)
    return _merge_max_sum(m, s)


@triton.jit
def _fold_groups(m, s, x):
    """Each group's running (max, sum of exp) [GROUPS] with the group's next VEC values x [GROUPS, VEC] folded in
    (fp32): one exp an element and one a group, no exchange between threads."""
    m_new = tl.maximum(m, tl.max(x, axis=1))
    # while a group's max is still -inf it has no mass yet: rescale against 0, not -inf (nan)
    ref = tl.where(m_new == -float("inf"), 0.0, m_new)
    return m_new, s * _exp(m - ref) + tl.sum(_exp(x - ref[:, None]), axis=1)


@triton.jit
def _merge_max_sum(m, s):
    """Merge per-chunk (max, sum) pairs into the row's."""
    m_all = tl.max(m, axis=0)
    ref = tl.where(m_all == -float("inf"), 0.0, m_all)
    return m_all, tl.sum(s * _exp(m - ref), axis=0)


@triton.jit
def _write_softmax(x_row, y_row, start, end, row_max, row_sum, LOG: tl.constexpr, TILE: tl.constexpr,
                   EVEN: tl.constexpr):
    """Second pass over x_row[start:end]: tiles in reverse order (the last read are still in L2),
    the next tile's load in flight while the current one is written."""
    cols = tl.arange(0, TILE)
    n_tiles = tl.cdiv(end - start, TILE)
    inv_sum = 1.0 / row_sum
    log_sum = tl.log(row_sum)
    off = start + (n_tiles - 1) * TILE
    if EVEN:
        x_next = tl.load(x_row + off + cols, eviction_policy="evict_first")
    else:
        x_next = tl.load(x_row + off + cols, mask=off + cols < end, other=0.0, eviction_policy="evict_first")
    for t in range(0, n_tiles):
        x = x_next.to(tl.float32)
        prev = off - TILE  # the next tile to write; before `start` on the last step
        if EVEN:
            x_next = tl.load(x_row + tl.maximum(prev, start) + cols, eviction_policy="evict_first")
        else:
            x_next = tl.load(x_row + prev + cols, mask=(prev + cols >= start) & (prev + cols < end), other=0.0,
                             eviction_policy="evict_first")
        if LOG:
            y = x - row_max - log_sum
        else:
            y = _exp(x - row_max) * inv_sum
        if EVEN:
            tl.store(y_row + off + cols, y.to(y_row.dtype.element_ty))
        else:
            tl.store(y_row + off + cols, y.to(y_row.dtype.element_ty), mask=off + cols < end)
        off = prev


@triton.jit
def _softmax_looped_kernel(x_ptr, y_ptr, M, N, x_row_stride, y_row_stride,
                           LOG: tl.constexpr, TILE: tl.constexpr, EVEN: tl.constexpr):
    # Persistent: program p takes rows p, p + G, ... Per row: one read (pass 1), one read that
    # mostly hits L2 plus one write (pass 2).
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * x_row_stride
        y_row = y_ptr + tl.cast(row, tl.int64) * y_row_stride
        row_max, row_sum = _online_max_sum(x_row, 0, N, TILE, EVEN)
        _write_softmax(x_row, y_row, 0, N, row_max, row_sum, LOG, TILE, EVEN)


@triton.jit
def _softmax_reload_kernel(x_ptr, y_ptr, N, x_row_stride, y_row_stride, LOG: tl.constexpr, TILE: tl.constexpr,
                           PARTS: tl.constexpr, EVEN: tl.constexpr):
    # Row program_id(0) in PARTS tiles of TILE, all whole but the last unless EVEN (N = PARTS * TILE): masks on the
    # last tile only (with one program an SM masks on every tile ran 70.4% of copy at 65536 against 91.7 without,
    # H200, session 39, NOTES item 258). Pass 1 reads the row from HBM (evict_last); pass 2 reads it again from L1 /
    # L2 (evict_first) and writes it: 2 * N * itemsize bytes of HBM traffic a row. Loading each pass-2 tile before
    # the previous tile's store (y may alias x, so the compiler keeps them in order) did not pay (NOTES item 243:
    # 73.8% against 83.9 at 65536, level to 49152).
    VEC: tl.constexpr = 128 // x_ptr.dtype.element_ty.primitive_bitwidth
    GROUPS: tl.constexpr = TILE // VEC
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    cols = tl.arange(0, TILE)
    m = tl.full([GROUPS], -float("inf"), tl.float32)
    s = tl.zeros([GROUPS], tl.float32)
    for part in tl.static_range(PARTS):  # no reduction across the program here: every tile's loads issue up front
        offs = part * TILE + cols
        if EVEN or part < PARTS - 1:
            x = tl.load(x_row + offs, eviction_policy="evict_last")
        else:
            x = tl.load(x_row + offs, mask=offs < N, other=-float("inf"), eviction_policy="evict_last")
        m, s = _fold_groups(m, s, tl.reshape(x.to(tl.float32), (GROUPS, VEC)))
    row_max, row_sum = _merge_max_sum(m, s)
    inv_sum = 1.0 / row_sum
    log_sum = tl.log(row_sum)
    for part in tl.static_range(PARTS):
        offs = part * TILE + cols
        if EVEN or part < PARTS - 1:
            x = tl.load(x_row + offs, eviction_policy="evict_first").to(tl.float32)
        else:
            x = tl.load(x_row + offs, mask=offs < N, other=0.0, eviction_policy="evict_first").to(tl.float32)
        y = x - row_max - log_sum if LOG else _exp(x - row_max) * inv_sum
        if EVEN or part < PARTS - 1:
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty))
        else:
            tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=offs < N)


@triton.jit
def _softmax_chunk_stats_kernel(x_ptr, stats_ptr, N, x_row_stride, CHUNK, TILE: tl.constexpr, EVEN: tl.constexpr):
    # Reads one chunk of a row once; writes 2 floats.
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    start = chunk * CHUNK
    x_row = x_ptr + tl.cast(row, tl.int64) * x_row_stride
    chunk_max, chunk_sum = _online_max_sum(x_row, start, tl.minimum(start + CHUNK, N), TILE, EVEN)
    out = stats_ptr + (row * tl.num_programs(1) + chunk) * 2
    tl.store(out, chunk_max)
    tl.store(out + 1, chunk_sum)


@triton.jit
def _softmax_chunk_apply_kernel(x_ptr, y_ptr, stats_ptr, N, x_row_stride, y_row_stride, CHUNK,
                                LOG: tl.constexpr, TILE: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                                EVEN: tl.constexpr):
    # Reads the row's chunk statistics, merges them, then reads its chunk again and writes it.
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    n_chunks = tl.num_programs(1)
    c = tl.arange(0, CHUNKS_POW2)
    stats = stats_ptr + row * n_chunks * 2 + c * 2
    chunk_max = tl.load(stats, mask=c < n_chunks, other=-float("inf"))
    chunk_sum = tl.load(stats + 1, mask=c < n_chunks, other=0.0)
    row_max, row_sum = _merge_max_sum(chunk_max, chunk_sum)
    start = chunk * CHUNK
    _write_softmax(x_ptr + tl.cast(row, tl.int64) * x_row_stride, y_ptr + tl.cast(row, tl.int64) * y_row_stride,
                   start, tl.minimum(start + CHUNK, N), row_max, row_sum, LOG, TILE, EVEN)


# ---------------------------------------------------------------------------------------------
# Launch configuration


# Launch parameters, chosen by measurement on the H200 (benchmarks/tune_rowops.py, NOTES.md).
ONCHIP_ELEMS_PER_THREAD = 16
ONCHIP_BLOCK_ELEMS = 2048
PROGRAMS_PER_SM = 4


def looped_config(N: int) -> tuple[int, int]:
    """(TILE, num_warps) of the looped paths: 16384-element tiles, 32 elements a thread at N <= 65536
    and 16 above (tune_rowops.py, H200 2026-12-01: 65536 3319 GB/s against 3167 with 8192-tiles)."""
    return 16384, 16 if N <= 65536 else 32


def reload_applies(rows: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether softmax_rows takes the reload kernel for these [M, N] views (the module docstring)."""
    M, N = rows.shape
    return (RELOAD_MIN_N < N and N * rows.element_size() <= RELOAD_MAX_BYTES
            and M >= num_sms(rows.device.index if rows.is_cuda else -1) and rows_vectorize(N, [rows, out]))


def reload_launch(row_bytes: int, even: bool) -> dict:
    """The reload kernel's launch options for rows of `row_bytes` (`even`: whole tiles): RELOAD_WARPS warps, one
    program an SM (maxnreg=64) for rows of whole tiles past RELOAD_ONE_PROGRAM_MIN_BYTES."""
    one_program = even and row_bytes > RELOAD_ONE_PROGRAM_MIN_BYTES
    return dict(num_warps=RELOAD_WARPS, **(dict(maxnreg=64) if one_program else {}))


def gluon_parts(rows: torch.Tensor, out: torch.Tensor, log: bool) -> int:
    """How the Gluon path (softmax_sm90) takes these [M, N] views: 0 not at all, 1 whole rows, P > 1 each row
    split into P parts of at most PART_MAX_N (rows past the ring, contiguous, N a multiple
    of 8 P; the parts exchange their statistics, so their programs must all be resident:
    _support.SPLIT_ROWS_ENABLED); 0 where the reload kernel takes them."""
    M, N = rows.shape
    if not (GLUON_ENABLED and rows.is_cuda and not interpreting() and N > GLUON_MIN_N and gluon_runs(rows.device.index)
            and softmax_sm90.supports(rows, out, past_ring=True)) or reload_applies(rows, out):
        return 0
    sms = num_sms(rows.device.index)
    parts = triton.next_power_of_2(cdiv(N, PART_MAX_N))
    if not (N > softmax_sm90.STAGES * softmax_sm90.CHUNK and _support.SPLIT_ROWS_ENABLED and rows.stride(0) == N
            and out.stride(0) == N and N % (8 * parts) == 0 and parts <= sms):
        parts = 1  # whole rows, in the ring or past it (the head re-read)
    if parts == 1 and N > GLUON_MAX_N or M * parts < softmax_sm90.CONSUMERS * sms:
        return 0
    return parts


def uses_gluon(rows: torch.Tensor, out: torch.Tensor, log: bool) -> bool:
    """Whether softmax_rows takes the Gluon path (softmax_sm90) for these [M, N] views."""
    return gluon_parts(rows, out, log) > 0


def softmax_rows(rows: torch.Tensor, out: torch.Tensor, log: bool) -> None:
    """Softmax of each row of the [M, N] view `rows` (unit column stride) into `out` [M, N]."""
    M, N = rows.shape
    if M == 0 or N == 0:
        return
    if reload_applies(rows, out):
        tile = RELOAD_TILE_BYTES // rows.element_size()
        even = N % tile == 0
        launch(_softmax_reload_kernel, (M,), rows, out, N, rows.stride(0), out.stride(0), LOG=log, TILE=tile,
               PARTS=cdiv(N, tile), EVEN=even, **reload_launch(N * rows.element_size(), even))
        return
    parts = gluon_parts(rows, out, log)
    if parts:
        softmax_sm90.softmax_rows(rows, out, log, num_sms(rows.device.index), parts=parts,
                                  warps=EXP_PART_WARPS if parts > 1 and not log else None)
        return
    if N <= ONCHIP_MAX:
        block_m, block_n, warps = onchip_config(M, N, ONCHIP_ELEMS_PER_THREAD, ONCHIP_BLOCK_ELEMS)
        launch(_softmax_onchip_kernel, (cdiv(M, block_m),), rows, out, M, N, rows.stride(0),
               out.stride(0), LOG=log, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps)
        return
    sms = num_sms(rows.device.index if rows.is_cuda else -1)
    tile, warps = looped_config(N)
    if M >= sms:
        launch(_softmax_looped_kernel, (min(M, PROGRAMS_PER_SM * sms),), rows, out, M, N, rows.stride(0),
               out.stride(0), LOG=log, TILE=tile, EVEN=N % tile == 0, num_warps=warps)
        return
    # Few wide rows: split each row over chunks so that about 2 programs per SM work.
    n_tiles = cdiv(N, tile)
    n_chunks = min(n_tiles, cdiv(2 * sms, M))
    chunk = cdiv(n_tiles, n_chunks) * tile
    n_chunks = cdiv(N, chunk)
    stats = torch.empty((M, n_chunks, 2), device=rows.device, dtype=torch.float32)  # workspace
    even = N % tile == 0  # then every chunk (a multiple of the tile) is whole tiles
    launch(_softmax_chunk_stats_kernel, (M, n_chunks), rows, stats, N, rows.stride(0), chunk,
           TILE=tile, EVEN=even, num_warps=warps)
    launch(_softmax_chunk_apply_kernel, (M, n_chunks), rows, out, stats, N, rows.stride(0), out.stride(0),
           chunk, LOG=log, TILE=tile, CHUNKS_POW2=triton.next_power_of_2(n_chunks), EVEN=even, num_warps=warps)


# ---------------------------------------------------------------------------------------------
# Wrapper: checks, layout, the custom op


def _softmax_fake(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("softmax", fake=_softmax_fake)
def _softmax_op(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    if not runs_kernel(x):
        return softmax_reference(x, dim, log).to(x.dtype)
    if x.numel() == 0:
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    moved = x.movedim(dim, -1)
    out = torch.empty_like(moved, memory_format=torch.contiguous_format)
    softmax_rows(as_rows(moved), as_rows(out), log)
    # a dim other than the last comes back in x's own dim order, contiguous (as the fake says)
    return out if dim == x.dim() - 1 else out.movedim(-1, dim).contiguous()


@planned
def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(x) along `dim`, like torch.softmax; fp16/bf16/fp32, statistics in fp32."""
    check_float("x", x)
    return _softmax_op(x, normalize_dim(dim, x.dim()), False)


@planned
def log_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log_softmax(x) along `dim`, like torch.log_softmax; fp16/bf16/fp32, statistics in fp32."""
    check_float("x", x)
    return _softmax_op(x, normalize_dim(dim, x.dim()), True)


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def softmax_reference(x: torch.Tensor, dim: int = -1, log: bool = False) -> torch.Tensor:
    """The same maths in float64."""
    return torch.log_softmax(x.double(), dim) if log else torch.softmax(x.double(), dim)


def softmax_cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
    n = math.prod(shape)
    # max, subtract, exp, sum, scale: about 5 FLOPs per element; read x once, write y once
    return Cost(flops=5 * n, bytes=2 * n * dtype.itemsize)


def _make_rows(shape, dtype, device):
    return (torch.randn(shape, device=device, dtype=dtype) * 3,)


def _liger_softmax():
    try:
        from liger_kernel.ops.softmax import LigerSoftmaxFunction
    except ImportError:
        return None
    return lambda x: LigerSoftmaxFunction.apply(x)


registry.register(registry.OpSpec(
    name="softmax", family="softmax", make_inputs=_make_rows, run=softmax,
    reference=lambda x: softmax_reference(x, -1), eager=lambda x: torch.softmax(x, -1),
    cost=softmax_cost, cases=registry.row_sweep(), peers={"liger": _liger_softmax}))
registry.register(registry.OpSpec(
    name="log_softmax", family="softmax", make_inputs=_make_rows, run=log_softmax,
    reference=lambda x: softmax_reference(x, -1, log=True), eager=lambda x: torch.log_softmax(x, -1),
    cost=softmax_cost, cases=registry.row_sweep()))
