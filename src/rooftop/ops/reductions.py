r"""Row reductions over the last dim: sum, max, mean, L2 norm and argmax.

For a row x of width N:

    row_sum(x)    = \sum_j x_j
    row_mean(x)   = (\sum_j x_j) / N
    row_norm(x)   = sqrt(\sum_j x_j^2)
    row_max(x)    = max_j x_j          (torch.amax: a NaN anywhere in the row gives NaN)
    row_argmax(x) = min { j : x_j = max_i x_i }   (torch.argmax: the first maximum; NaN counts above every
                                                   number, so a row with NaN gives its first NaN; int64)

Each is one of four fp32 reductions of the row (REDUCTION: "sum", "sumsq", "max", "argmax") followed by a
finishing step on the row's total (FINISH: "none", "mean", "sqrt", "index"); the kernels are written once for
all of them, with REDUCTION and FINISH as constexprs. Totals of pieces of a row combine with the same
reduction (partial sums add, partial maxima take the max; argmax carries each maximum's position, and equal
maxima keep the smaller one), which lets a row be split across programs. The result is stored in x's dtype,
or in `out_dtype` (e.g. float32) when given; argmax's in int64.
max's lanes reduce in one tl.reduce whose combine keeps NaN (max.NaN at every step), against fmax and a count of NaN
lanes (two reductions, "max_by_count"). H200, bf16, row_max, % of copy by do_bench (journal items 261, 263): on chip
at 512 / 1024 / 2048 columns 93.2 / 93.0 / 93.7 against 85.9 / 86.1 / 88.3; looped at 131072 and 262144 88.0
against 86.0 (graph replay 104 against 101). On-chip programs of one row (65536 columns: 87.9-89.5 against
88.5-90.7) and the interpreter (which runs such a combine element by element: 20 s against 0.2 s for 64 rows of
4096) take the two, which give the same result.
Why argmax: greedy decoding takes one over the vocabulary every token ([1, 128256] for Llama 3), where torch's
reduction runs one block for the row (~36 us on the H200, 4% of an int4 8-layer decode step: journal item 210).

Which path runs (M rows of N elements, S streaming multiprocessors; `reduce_path`):
- "onchip": BLOCK_M whole rows a program, loaded at once and reduced in registers, up to ONCHIP_MAX columns
  among few rows, ONCHIP_MANY_MAX among as many as give every SM PROGRAMS_PER_SM programs (argmax: ARGMAX_ONCHIP_MAX);
  rows past ONCHIP_ONE_PROGRAM_MIN_N one 32-warp program an SM (maxnreg=64).
- wider rows (past PIECES_MIN_N), M large enough, not argmax ("pieces"): each row cut into P = cdiv(N, width) even
  pieces of at most `width` (PIECE_CONFIGS, by reduction), a program each (row p // P, piece p % P), held on chip as
  the on-chip kernel's rows are, so that several programs an SM overlap their loads and their reductions. Each piece
  swaps its fp32 total into the row's word (relaxed) and counts itself in on the row's counter; the row's last piece
  in takes the P totals (polled until all are in: the others' words come before their counts in program order, not
  necessarily in visibility), combines them, writes the row's result and empties the row's words and counter
  (_support.exchange_words), in one launch. Nobody waits but that last piece, and only for words already on their
  way: no residency needed. That round trip ends every piece: pieces of 16384 over 32 warps (two programs an SM)
  ran 69-77% of a same-run copy, over 16 warps (four) 91-92.
- wider rows, and M large enough, argmax ("looped"): a persistent grid; each program takes whole rows (p, p + G,
  ...) and walks a row tile by tile, the next two tiles' loads in flight while the current one is folded into
  per-lane fp32 accumulators.
- wider rows, and fewer of them ("split"): each row is cut into chunks so that about
  PROGRAMS_PER_SM * S programs work. Kernel 1 writes each chunk's fp32 total to a workspace
  [M, chunks] (at most PROGRAMS_PER_SM * S floats); kernel 2 combines a row's totals and finishes.
argmax works a 16-byte vector at a time, which a thread holds whole: the vector's NaN-keeping max, the first of
its places holding that (one FMNMX, one FSETP, one SEL an element), then the vectors' (max, position) across the
row (on chip: by order keys) or into one running (max, position) slot a vector (looped, split). A vector whose max
is NaN leaves its position untaken, and a row (or piece) whose max is NaN takes a second pass for its first NaN:
over the registers on chip, a second read of the piece otherwise (rows with a NaN being rare).
Traffic on every path: x read once (M * N * itemsize), the result written once (M * out itemsize);
the split path adds its workspace, written and read once (a few KB; argmax: an int32 position a total too), the
pieces path an 8-byte word a piece and a counter a row (swapped, polled once, emptied).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (FLOAT_DTYPES, as_rows, await_previous, cdiv, check_float, exchange_words,
                                  interpreting, launch, num_sms, onchip_config, pair_values, pair_word, pdl_options,
                                  planned, runs_kernel, torch_op)
from rooftop.roofline import Cost

ONCHIP_MAX = 32768  # widest row reduced on chip among few rows (elements): wider ones are split over programs
# widest row reduced on chip among many rows: a row a 32-warp program, two programs an SM (32-44 registers, sm_90),
# against the looped path's 88% of copy at 65536 (journal item 222)
ONCHIP_MANY_MAX = 65536
# On-chip rows wider than this run one 32-warp program an SM (maxnreg=64: the register file), which issues every load
# of a thread before its folds, where two programs an SM at 32 registers issue half. H200, bf16, M * N = 2^27, % of a
# same-run copy by do_bench, two programs / one, two runs (logs/h200-2026-12-04-s44/call-a, call-b): row_sum 91.3 /
# 93.0 and 90.5 / 92.9 at 49152, 91.3 / 92.1 and 90.9 / 92.0 at 65536; row_norm 91.5 / 93.6, 90.2 / 92.5 and 91.6 /
# 92.6, 90.5 / 91.9; row_max 92.2 / 91.6, 91.9 / 91.4 and 91.3 / 91.8, 91.3 / 91.3; at 32768 level (91.7-93.4).
ONCHIP_ONE_PROGRAM_MIN_N = 40960
# Launch parameters, to be tuned on the H200 (benchmarks/tune_rowops.py). Registers from ptxas for
# sm_90: on-chip 19-32 (bf16; full occupancy); looped / split below.
ONCHIP_ELEMS_PER_THREAD = 16
ONCHIP_BLOCK_ELEMS = 4096  # no output tile to hold: larger programs than the normalising ops
# One tile of the looped and split paths (two in flight per program) over LOOPED_WARPS warps: 8 (fp16 / bf16) or 4
# (fp32) elements a thread. 16 KB over 16 warps (62 registers, sm_90: two programs resident an SM of the
# PROGRAMS_PER_SM launched, the others taking rows as they end) against 8 KB over 8 warps (64 registers, four
# resident), H200, bf16, % of copy by do_bench (journal items 262-263): row_sum 90.4 / 85.2 at 131072, 89.4 / 85.2 at
# 262144, row_max 90.1 / 84.8 and 89.4 / 85.2, row_norm 90.0 / 84.8 at 131072; torch.compile 90.4, 89.9, 89.4, 88.3,
# 90.7. argmax keeps 8 KB over 8 warps (ARGMAX_LOOPED_*): 83.8 against 72.0 at 131072, 7.04 against 7.46 us a
# [1, 128256] row (its split path).
LOOPED_TILE_BYTES, LOOPED_WARPS = 16384, 16
ARGMAX_LOOPED_TILE_BYTES, ARGMAX_LOOPED_WARPS = 8192, 8
PROGRAMS_PER_SM = 4  # looped and split paths: programs launched per SM
# argmax on chip: twice the elements a thread up to ARGMAX_WIDE_N columns (fewer warps a row, more rows a program to
# share the reductions across threads), the others' above. H200, bf16, graph replay, % of copy at N = 512 / 1K / 2K /
# 4K / 8K / 16K (journal item 218): 32 a thread 70.9 / 86.6 / 88.1 / 103.8 / 83.9 / 86.4, 16 59.6 / 80.2 / 81.1 / 82.9 /
# 74.2 / 99.3
ARGMAX_ELEMS_PER_THREAD = 32
ARGMAX_WIDE_N = 8192
# argmax rows up to ARGMAX_NARROW_N columns: programs of ARGMAX_NARROW_BLOCK_ELEMS (two warps; journal item 221, us at
# 262144 x 512 / 131072 x 1024 / 65536 x 2048, programs of 4096 / 2048 elements: 90.1 / 80.8, 74.4 / 80.9, 73.0 / 80.2)
ARGMAX_NARROW_N = 512
ARGMAX_NARROW_BLOCK_ELEMS = 2048
# argmax keeps rows wider than this on chip only where they are few (the split path's rows: on chip beats the split
# there), else they take the looped path (on chip, 32 elements a thread spill predicates). H200, bf16, graph replay
# (journal item 220), us, on chip / not: [4096, 32768] 80.9 / 74.7 (looped), [512, 32768] 13.4 / 12.2 (looped),
# [64, 32000] 3.01 / 4.25 (split), [1, 32000] 2.50 / 2.57 (split)
ARGMAX_ONCHIP_MAX = 16384
COMBINE_WARPS = 4
# Rows past PIECES_MIN_N among many (not argmax) in pieces, a program each: reduction -> (a piece's widest, warps).
# H200, bf16, M * N = 2^27, % of a same-run copy by do_bench, the kernels pieces replace (on chip one program an SM to
# 65536, looped past it) / pieces (logs/h200-2026-12-04-s48/call-e, call-f, benchmarks/exp_reduce_pieces.py): row_sum
# 88.6 / 91.4 and 90.5 / 92.2 at 131072 (16384 over 16 warps; 32768 over 32), 90.1 / 93.0 at 262144 (32768 / 32);
# row_norm 88.6 / 90.8 at 131072; row_max 87.8 / 90.1 at 131072 (32768 over 8: fmax and a NaN count; 16384 over 16
# 84.1). At 65536 within the runs' spread (90.7 / 91.7, 93.0 / 91.6 (32768 / 32)): the on-chip kernel keeps it.
PIECES_MIN_N = 65536
PIECE_CONFIGS = {"sum": (16384, 16), "sumsq": (16384, 16), "max": (32768, 8)}


# kind -> (REDUCTION over the row in fp32, FINISH applied to the row's total)
KINDS = {"sum": ("sum", "none"), "mean": ("sum", "mean"), "norm": ("sumsq", "sqrt"), "max": ("max", "none"),
         "argmax": ("argmax", "index")}
NO_INDEX = tl.constexpr(2**31 - 1)  # argmax: a lane (or piece) that has not taken a value above -inf
NAN_KEY = tl.constexpr(2**31 - 1)  # argmax: every NaN's order key, above every number's

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _identity(REDUCTION: tl.constexpr):
    """What masked-off lanes hold: leaves any total unchanged."""
    if REDUCTION == "sum" or REDUCTION == "sumsq":
        value = 0.0
    else:
        value = -float("inf")
    return value


@triton.jit
def _fold(acc, idx, x, at, REDUCTION: tl.constexpr):
    """(acc, idx) with x folded in, element by element (fp32; at: x's positions). argmax folds x [vectors, VEC]
    a 16-byte vector at a time (`_vector_tops`; at: the vectors' first positions): idx is the position of the
    slot's first value above all before it, NaN above every number (the first NaN stays); the others leave idx."""
    if REDUCTION == "argmax":
        top, first = _vector_tops(x, tl.arange(0, x.shape[1])[None, :])
        take = (top > acc) | ((top != top) & (acc == acc))
        acc = tl.where(take, top, acc)
        idx = tl.where(take, at + first, idx)
    elif REDUCTION == "max" or REDUCTION == "max_by_count":
        acc = tl.maximum(acc, x, propagate_nan=tl.PropagateNan.ALL)  # max.NaN: torch.amax keeps NaN
    elif REDUCTION == "sumsq":
        acc = acc + x * x
    else:
        acc = acc + x
    return acc, idx


@triton.jit
def _max_keep_nan(a, b):
    """tl.reduce's combine for "max": max.NaN (NaN wins), as torch.amax."""
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def lanes_total(v, idx, axis, start, REDUCTION: tl.constexpr):
    """Reduce the lanes of v (and their positions idx) along `axis`: partial sums (and sums of squares) add,
    maxima max; argmax: the smallest position among the lanes holding the maximum (among the NaN lanes if
    any), `start` (the span's first position) where no lane took a value (all -inf). Returns (total, index)."""
    if REDUCTION == "max":  # one reduction, NaN-keeping (max.NaN) at every step
        t = tl.reduce(v, axis, _max_keep_nan)
        index = 0
    elif REDUCTION == "max_by_count" or REDUCTION == "argmax":
        # tl.max is fmax, which drops NaN; a count of NaN lanes puts it back: two reductions ("max" takes
        # one, but the interpreter runs its combine element by element: 20 s against 0.2 s for 64 rows of 4096)
        has_nan = tl.sum((v != v).to(tl.int32), axis) > 0
        top = tl.max(v, axis)
        t = tl.where(has_nan, float("nan"), top)
        index = 0
        if REDUCTION == "argmax":
            at_top = tl.where(tl.expand_dims(has_nan, axis), v != v, v == tl.expand_dims(top, axis))
            first = tl.min(tl.where(at_top, idx, NO_INDEX), axis)
            index = tl.where(first == NO_INDEX, start, first)
    else:
        t = tl.sum(v, axis)
        index = 0
    return t, index


@triton.jit
def _max_nan_last(x):
    """The NaN-keeping max over x's last axis (2 <= its size, a power of two, held by one thread): halvings of it,
    no data moved (a tl.reduce with a NaN-keeping combine would run element by element in the interpreter)."""
    for _ in tl.static_range(3):  # enough halvings for a 16-byte vector of 16-bit values
        if x.shape[len(x.shape) - 1] > 1:
            if len(x.shape) == 2:
                lo, hi = tl.split(tl.reshape(x, [x.shape[0], x.shape[1] // 2, 2]))
            else:
                lo, hi = tl.split(tl.reshape(x, [x.shape[0], x.shape[1], x.shape[2] // 2, 2]))
            x = tl.maximum(lo, hi, propagate_nan=tl.PropagateNan.ALL)
    return tl.reshape(x, x.shape[:len(x.shape) - 1])


@triton.jit
def _order_key(x):
    """int32 keys of fp32 x in torch.argmax's order: a < b as numbers <=> key(a) < key(b), -0.0 and 0.0 one key,
    every NaN the top key NAN_KEY (the sign-magnitude bits made two's complement)."""
    bits = x.to(tl.int32, bitcast=True)
    key = bits ^ ((bits >> 31) & 0x7FFFFFFF)
    return tl.where(x != x, NAN_KEY, tl.where(x == 0, 0, key))


@triton.jit
def _vector_tops(x, lane):
    """Along x's last axis (fp32; a 16-byte vector a thread holds whole, `lane` its places broadcast to x's rank):
    the NaN-keeping max and the first place holding it (one FMNMX, one FSETP and one SEL an element on a GPU),
    or the axis' size where the max is NaN: the first NaN is found apart (`_first_nan`), rows with one being rare.
    Some place holds any other max (masked places hold -inf)."""
    AXIS: tl.constexpr = len(x.shape) - 1
    top = _max_nan_last(x)
    return top, tl.min(tl.where(x >= tl.expand_dims(top, AXIS), lane, x.shape[AXIS]), AXIS)


@triton.jit
def _argmax_onchip(x_ptr, rows, M, N, x_stride, BLOCK_N: tl.constexpr):
    """torch.argmax of each of `rows` (N <= BLOCK_N), read once into registers as one 16-byte vector a thread
    holds whole: each vector's max and its first column there (`_vector_tops`), then across the row the largest
    order key's first column (two reductions over the threads, of one int32 a vector). A block of rows holding a
    NaN takes a second pass over its registers for each row's first NaN."""
    VEC: tl.constexpr = 128 // x_ptr.dtype.element_ty.primitive_bitwidth
    lane = tl.arange(0, VEC)[None, None, :]  # an element's place in its vector: a constant of its register
    vectors = tl.arange(0, BLOCK_N // VEC)[None, :] * VEC  # [1, vectors]: their first columns
    cols = vectors[:, :, None] + lane
    x = tl.load(x_ptr + rows.to(tl.int64)[:, None, None] * x_stride + cols,
                mask=(rows[:, None, None] < M) & (cols < N), other=-float("inf"), eviction_policy="evict_first")
    x = x.to(tl.float32)
    top, first = _vector_tops(x, lane)  # [BLOCK_M, vectors]
    key = _order_key(top)
    best = tl.max(key, 1)
    index = tl.min(tl.where(key == best[:, None], vectors + first, NO_INDEX), 1)
    if tl.max(best) == NAN_KEY:
        first_nan = tl.min(tl.min(tl.where(x != x, cols, NO_INDEX), 2), 1)
        index = tl.where(best == NAN_KEY, first_nan, index)
    return index


@triton.jit
def _first_nan(x_row, start, end, TILE: tl.constexpr):
    """The first position of a NaN in x_row[start:end] (NO_INDEX if none): a second read of a span, for the rare
    spans whose maximum is NaN."""
    cols = tl.arange(0, TILE)
    first = tl.full([TILE], NO_INDEX, tl.int32)
    for off in range(start, end, TILE):
        x = tl.load(x_row + off + cols, mask=off + cols < end, other=0.0).to(tl.float32)
        first = tl.minimum(first, tl.where(x != x, off + cols, NO_INDEX))
    return tl.min(first, 0)


@triton.jit
def _finish(total, index, N, FINISH: tl.constexpr):
    if FINISH == "mean":
        total = total / N
    elif FINISH == "sqrt":
        total = tl.sqrt_rn(total)
    elif FINISH == "index":
        total = index
    return total


@triton.jit
def _reduce_span(x_row, start, end, REDUCTION: tl.constexpr, TILE: tl.constexpr):
    """The fp32 total of x_row[start:end] (and argmax's position in the row), read once, tile by tile into
    per-lane accumulators, with two tiles' loads always in flight: the loop is unrolled by two so that each
    buffer keeps its registers (a copy between buffers would wait for the load)."""
    if REDUCTION == "argmax":  # [vectors, VEC]: a (value, position) slot a 16-byte vector
        VEC: tl.constexpr = 128 // x_row.dtype.element_ty.primitive_bitwidth
        at = tl.arange(0, TILE // VEC) * VEC
        cols = at[:, None] + tl.arange(0, VEC)[None, :]
    else:
        cols = tl.arange(0, TILE)
        at = cols
    acc = tl.full(at.shape, _identity(REDUCTION), tl.float32)
    idx = tl.full(at.shape, NO_INDEX, tl.int32)
    buf_a = tl.load(x_row + start + cols, mask=start + cols < end, other=_identity(REDUCTION),
                    eviction_policy="evict_first")
    buf_b = tl.load(x_row + start + TILE + cols, mask=start + TILE + cols < end, other=_identity(REDUCTION),
                    eviction_policy="evict_first")
    for off in range(start, end, 2 * TILE):
        # loads past `end` (the last steps) are masked off: no traffic
        # the next tile's load is issued before the current tile is folded, into a new variable: ptxas then
        # issues the loop's loads at its top (ahead of the fold, not after it) and both stay in flight
        # (H200, bf16: row_max / mean / norm 87% -> 101% of copy at 131072-262144; session 36)
        nxt = off + 2 * TILE + cols
        new_a = tl.load(x_row + nxt, mask=nxt < end, other=_identity(REDUCTION), eviction_policy="evict_first")
        acc, idx = _fold(acc, idx, buf_a.to(tl.float32), off + at, REDUCTION)
        buf_a = new_a
        nxt = off + 3 * TILE + cols
        new_b = tl.load(x_row + nxt, mask=nxt < end, other=_identity(REDUCTION), eviction_policy="evict_first")
        acc, idx = _fold(acc, idx, buf_b.to(tl.float32), off + TILE + at, REDUCTION)
        buf_b = new_b
    total, index = lanes_total(acc, idx, 0, start, REDUCTION)
    if REDUCTION == "argmax":
        if total != total:  # the NaN vectors' positions were not taken (_vector_tops)
            index = _first_nan(x_row, start, end, TILE)
    return total, index


@triton.jit
def _row_reduce_onchip_kernel(x_ptr, out_ptr, M, N, x_stride,
                              REDUCTION: tl.constexpr, FINISH: tl.constexpr,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, PDL: tl.constexpr):
    # Reads BLOCK_M rows once (BLOCK_M * N * itemsize bytes), writes BLOCK_M results. PDL: the launch overlaps the
    # kernel before it (_support.pdl_options), as every kernel here.
    await_previous(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    if REDUCTION == "argmax":
        total, index = 0.0, _argmax_onchip(x_ptr, rows, M, N, x_stride, BLOCK_N)
    else:
        cols = tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * x_stride + cols[None, :],
                    mask=(rows[:, None] < M) & (cols[None, :] < N), other=_identity(REDUCTION),
                    eviction_policy="evict_first")
        acc, idx = _fold(_identity(REDUCTION), NO_INDEX, x.to(tl.float32), cols[None, :], REDUCTION)
        total, index = lanes_total(acc, idx, 1, 0, REDUCTION)
    tl.store(out_ptr + rows, _finish(total, index, N, FINISH).to(out_ptr.dtype.element_ty), mask=rows < M)


@triton.jit
def _row_reduce_pieces_kernel(x_ptr, out_ptr, words_ptr, cnt_ptr, N, x_stride, PIECES, SPAN,
                              REDUCTION: tl.constexpr, FINISH: tl.constexpr, PIECE: tl.constexpr,
                              PIECES_POW2: tl.constexpr, PDL: tl.constexpr):
    # Program (row, piece) = (p // PIECES, p % PIECES): reads its SPAN <= PIECE columns once, swaps their fp32
    # total into the row's word, counts itself in; the row's last piece in writes the row's result (module
    # docstring).
    await_previous(PDL)
    row = tl.program_id(0) // PIECES
    piece = tl.program_id(0) % PIECES
    cols = piece * SPAN + tl.arange(0, PIECE)
    x = tl.load(x_ptr + tl.cast(row, tl.int64) * x_stride + cols,
                mask=(cols < N) & (cols < piece * SPAN + SPAN), other=_identity(REDUCTION),
                eviction_policy="evict_first")
    acc, idx = _fold(_identity(REDUCTION), NO_INDEX, x.to(tl.float32), cols, REDUCTION)
    total, index = lanes_total(acc, idx, 0, 0, REDUCTION)  # (index: argmax's, not taken here)
    base = words_ptr + tl.cast(row, tl.int64) * PIECES
    tl.atomic_xchg(base + piece, pair_word(total, 0.0), sem="relaxed", scope="gpu")
    if tl.atomic_add(cnt_ptr + row, 1, sem="relaxed", scope="gpu") == PIECES - 1:
        g = tl.arange(0, PIECES_POW2)
        got = tl.zeros([PIECES_POW2], tl.int64)
        empty = PIECES
        while empty > 0:
            got = tl.atomic_add(base + g, tl.zeros([PIECES_POW2], tl.int64), mask=g < PIECES, sem="relaxed",
                                scope="gpu")
            empty = tl.sum(((g < PIECES) & (got == 0)).to(tl.int32), axis=0)
        totals, _ = pair_values(got, g < PIECES, _identity(REDUCTION), 0.0)
        total, index = lanes_total(totals, g, 0, 0, REDUCTION)
        tl.store(out_ptr + row, _finish(total, index, N, FINISH).to(out_ptr.dtype.element_ty))
        tl.store(base + g, tl.zeros([PIECES_POW2], tl.int64), mask=g < PIECES)
        tl.store(cnt_ptr + row, 0)


@triton.jit
def _row_reduce_looped_kernel(x_ptr, out_ptr, M, N, x_stride,
                              REDUCTION: tl.constexpr, FINISH: tl.constexpr, TILE: tl.constexpr, PDL: tl.constexpr):
    # Persistent: program p takes rows p, p + G, ...; reads each row once, writes one result a row.
    await_previous(PDL)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        total, index = _reduce_span(x_ptr + tl.cast(row, tl.int64) * x_stride, 0, N, REDUCTION, TILE)
        tl.store(out_ptr + row, _finish(total, index, N, FINISH).to(out_ptr.dtype.element_ty))


@triton.jit
def _row_reduce_chunk_kernel(x_ptr, partial_ptr, index_ptr, N, x_stride, CHUNK,
                             REDUCTION: tl.constexpr, TILE: tl.constexpr, PDL: tl.constexpr):
    # Reads one chunk of a row once; writes its fp32 total to partial[row, chunk] (argmax: its position in the
    # row to index[row, chunk]).
    await_previous(PDL)
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    start = chunk * CHUNK
    total, index = _reduce_span(x_ptr + tl.cast(row, tl.int64) * x_stride, start, tl.minimum(start + CHUNK, N),
                                REDUCTION, TILE)
    tl.store(partial_ptr + row * tl.num_programs(1) + chunk, total)
    if REDUCTION == "argmax":
        tl.store(index_ptr + row * tl.num_programs(1) + chunk, index)


@triton.jit
def _row_reduce_combine_kernel(partial_ptr, index_ptr, out_ptr, N, n_chunks,
                               REDUCTION: tl.constexpr, FINISH: tl.constexpr, CHUNKS_POW2: tl.constexpr,
                               PDL: tl.constexpr):
    # Reads a row's n_chunks fp32 totals (argmax: and their positions), writes its result.
    await_previous(PDL)
    row = tl.program_id(0)
    c = tl.arange(0, CHUNKS_POW2)
    partial = tl.load(partial_ptr + row * n_chunks + c, mask=c < n_chunks, other=_identity(REDUCTION))
    idx = NO_INDEX
    if REDUCTION == "argmax":
        idx = tl.load(index_ptr + row * n_chunks + c, mask=c < n_chunks, other=NO_INDEX)
    total, index = lanes_total(partial, idx, 0, 0, REDUCTION)
    tl.store(out_ptr + row, _finish(total, index, N, FINISH).to(out_ptr.dtype.element_ty))


# ---------------------------------------------------------------------------------------------
# Launch configuration


def reduce_path(M: int, N: int, sms: int, kind: str = "sum") -> str:
    """Which kernel path reduces M rows of N elements on a GPU of `sms` SMs: "onchip", "pieces" (rows cut into
    pieces a program each, one launch), "looped" (one program a row, persistent) or "split" (rows cut into chunks
    over programs, two launches)."""
    # split when the rows alone cannot give every SM its programs: at least 2 chunks a row are needed
    few_rows = PROGRAMS_PER_SM * sms // M >= 2
    if not few_rows and kind != "argmax" and N > PIECES_MIN_N:
        return "pieces"
    if N <= (ONCHIP_MAX if few_rows else ARGMAX_ONCHIP_MAX if kind == "argmax" else ONCHIP_MANY_MAX):
        return "onchip"
    return "split" if few_rows else "looped"


def reduce_rows(rows: torch.Tensor, out: torch.Tensor, kind: str) -> None:
    """Reduce each row of the [M, N] view `rows` (unit column stride, N > 0) into out[M] (contiguous)."""
    M, N = rows.shape
    if M == 0:
        return
    reduction, finish = KINDS[kind]
    sms = num_sms(rows.device.index if rows.is_cuda else -1)
    path = reduce_path(M, N, sms, kind)
    pdl = pdl_options(rows)
    if path == "onchip":
        wide = kind != "argmax" or N > ARGMAX_WIDE_N
        narrow = kind == "argmax" and N <= ARGMAX_NARROW_N
        block_m, block_n, warps = onchip_config(M, N, ONCHIP_ELEMS_PER_THREAD if wide else ARGMAX_ELEMS_PER_THREAD,
                                                ARGMAX_NARROW_BLOCK_ELEMS if narrow else ONCHIP_BLOCK_ELEMS)
        if kind == "argmax":  # whole 16-byte vectors (columns past N masked)
            block_n = max(block_n, 16 // rows.element_size())
        if reduction == "max" and (block_m == 1 or interpreting()):
            reduction = "max_by_count"  # (module docstring: where the one reduction pays)
        one_program = dict(maxnreg=64) if N > ONCHIP_ONE_PROGRAM_MIN_N else {}
        launch(_row_reduce_onchip_kernel, (cdiv(M, block_m),), rows, out, M, N, rows.stride(0),
               REDUCTION=reduction, FINISH=finish, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, **pdl,
               **one_program)
        return
    if reduction == "max" and interpreting():
        reduction = "max_by_count"  # (module docstring)
    if path == "pieces":
        width, warps = PIECE_CONFIGS[KINDS[kind][0]]
        if reduction == "max":
            reduction = "max_by_count"  # a program of one row (module docstring)
        pieces = cdiv(N, width)
        span = cdiv(cdiv(N, pieces), 16) * 16  # even pieces of whole 32-byte sectors (<= width)
        words, counters = exchange_words(rows.device, M, pieces)
        launch(_row_reduce_pieces_kernel, (M * pieces,), rows, out, words, counters, N, rows.stride(0), pieces, span,
               REDUCTION=reduction, FINISH=finish, PIECE=width, PIECES_POW2=triton.next_power_of_2(pieces),
               num_warps=warps, **pdl)
        return
    tile_bytes, warps = ((ARGMAX_LOOPED_TILE_BYTES, ARGMAX_LOOPED_WARPS) if kind == "argmax"
                         else (LOOPED_TILE_BYTES, LOOPED_WARPS))
    tile = tile_bytes // rows.element_size()
    if path == "looped":
        # as many programs as fit, trimmed so that every program gets the same number of rows
        programs = cdiv(M, cdiv(M, PROGRAMS_PER_SM * sms))
        launch(_row_reduce_looped_kernel, (programs,), rows, out, M, N, rows.stride(0),
               REDUCTION=reduction, FINISH=finish, TILE=tile, num_warps=warps, **pdl)
        return
    n_tiles = cdiv(N, tile)
    n_chunks = min(n_tiles, PROGRAMS_PER_SM * sms // M)  # >= 1: the split path has at most a half of that rows
    chunk = cdiv(n_tiles, n_chunks) * tile
    n_chunks = cdiv(N, chunk)
    partial = torch.empty((M, n_chunks), device=rows.device, dtype=torch.float32)  # the workspace
    # argmax: the totals' positions (int32: N < 2^31), else not read (partial stands in)
    index = torch.empty((M, n_chunks), device=rows.device, dtype=torch.int32) if kind == "argmax" else partial
    launch(_row_reduce_chunk_kernel, (M, n_chunks), rows, partial, index, N, rows.stride(0), chunk,
           REDUCTION=reduction, TILE=tile, num_warps=warps, **pdl)
    launch(_row_reduce_combine_kernel, (M,), partial, index, out, N, n_chunks, REDUCTION=reduction,
           FINISH=finish, CHUNKS_POW2=triton.next_power_of_2(n_chunks), num_warps=COMBINE_WARPS, **pdl)


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom op


def _row_reduce_fake(x: torch.Tensor, kind: str, out_dtype: torch.dtype) -> torch.Tensor:
    return x.new_empty(x.shape[:-1], dtype=out_dtype)


@torch_op("row_reduce", fake=_row_reduce_fake)
def _row_reduce_op(x: torch.Tensor, kind: str, out_dtype: torch.dtype) -> torch.Tensor:
    if not runs_kernel(x) or x.numel() == 0:  # empty rows: sum and norm 0, mean NaN, as torch
        return row_reduce_reference(x, kind).to(out_dtype)
    out = torch.empty(x.shape[:-1], device=x.device, dtype=out_dtype)
    reduce_rows(as_rows(x), out.view(-1), kind)
    return out


def _row_reduce(x: torch.Tensor, kind: str, out_dtype: Optional[torch.dtype]) -> torch.Tensor:
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if kind == "argmax":
        out_dtype = torch.int64
        if x.shape[-1] >= 2**31:  # the kernels' positions are int32
            raise ValueError(f"x's last dim must be under 2^31 for row_argmax, got {x.shape[-1]}")
    elif out_dtype is None:
        out_dtype = x.dtype
    elif out_dtype not in FLOAT_DTYPES:
        raise TypeError(f"out_dtype must be one of float16, bfloat16, float32, got {out_dtype}")
    if kind in ("max", "argmax") and x.shape[-1] == 0:
        raise ValueError(f"x has an empty last dim (shape {tuple(x.shape)}): the {kind} of an empty row is undefined")
    return _row_reduce_op(x, kind, out_dtype)


@planned
def row_sum(x: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """x.sum(-1): [..., N] -> [...], accumulated in fp32, stored in x's dtype (or `out_dtype`)."""
    return _row_reduce(x, "sum", out_dtype)


@planned
def row_max(x: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """x.amax(-1): [..., N] -> [...]; NaN in a row gives NaN, like torch.amax."""
    return _row_reduce(x, "max", out_dtype)


@planned
def row_argmax(x: torch.Tensor) -> torch.Tensor:
    """x.argmax(-1): [..., N] -> [...] int64, the position of each row's first maximum (of its first NaN if it
    holds one), as torch.argmax. Greedy decoding's next token over the vocabulary, in 2 launches of ~2 us."""
    return _row_reduce(x, "argmax", None)


@planned
def row_mean(x: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """x.mean(-1): [..., N] -> [...], accumulated in fp32, stored in x's dtype (or `out_dtype`)."""
    return _row_reduce(x, "mean", out_dtype)


@planned
def row_norm(x: torch.Tensor, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """torch.linalg.vector_norm(x, dim=-1), the L2 norm sqrt(sum x^2) of each row, accumulated in fp32."""
    return _row_reduce(x, "norm", out_dtype)


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def row_reduce_reference(x: torch.Tensor, kind: str) -> torch.Tensor:
    """The same maths in float64."""
    xd = x.double()
    if kind == "sum":
        return xd.sum(-1)
    if kind == "mean":
        return xd.mean(-1)
    if kind == "norm":
        return torch.linalg.vector_norm(xd, dim=-1)
    if kind == "argmax":
        return xd.argmax(-1)
    return xd.amax(-1)


EAGER = {
    "sum": lambda x: x.sum(-1),
    "max": lambda x: x.amax(-1),
    "mean": lambda x: x.mean(-1),
    "norm": lambda x: torch.linalg.vector_norm(x, dim=-1),
    "argmax": lambda x: x.argmax(-1),
}


def _cost(flops_per_element: int, out_itemsize: Optional[int] = None):
    def cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
        n, rows = math.prod(shape), math.prod(shape[:-1])
        # read x once, write one result a row (x's dtype, or argmax's int64)
        return Cost(flops=flops_per_element * n, bytes=n * dtype.itemsize + rows * (out_itemsize or dtype.itemsize))
    return cost


def _make_rows(shape, dtype, device):
    return (torch.randn(shape, device=device, dtype=dtype),)


for _kind, _fn, _flops, _out_size in (("sum", row_sum, 1, None), ("max", row_max, 1, None), ("mean", row_mean, 1, None),
                                      ("norm", row_norm, 2, None), ("argmax", row_argmax, 1, 8)):
    registry.register(registry.OpSpec(
        name=f"row_{_kind}", family="reductions", make_inputs=_make_rows, run=_fn,
        reference=lambda x, kind=_kind: row_reduce_reference(x, kind), eager=EAGER[_kind],
        cost=_cost(_flops, _out_size), cases=registry.row_sweep()))


VOCAB_ROWS = ((1, 128256), (8, 128256), (64, 128256), (1, 32000), (1, 151936))  # Llama 3, Llama 2, Qwen 2


def _greedy_table(ceilings) -> list[dict]:
    """row_argmax against torch's argmax and torch.compile's at greedy decoding's sizes (a batch of logits over a
    vocabulary): microseconds a call by graph replay, and launched from Python."""
    from rooftop.bench.sweep import decode_latency

    return decode_latency("row_argmax", VOCAB_ROWS, torch.bfloat16)


registry.register_table(registry.FamilyTable(
    family="reductions", title="Greedy decoding's argmax over a vocabulary ([batch, vocab] bf16 logits; us a call: "
    "graph_us by CUDA graph replay, python_us launched from Python)", make=_greedy_table))
