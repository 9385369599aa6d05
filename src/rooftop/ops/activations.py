r"""Fused element-wise epilogues of the transformer MLP: SwiGLU, GeGLU, bias + GELU, per-token quantization.

    silu(g)      = g * sigmoid(g) = g / (1 + 2^(-g log2 e))
    gelu(x)      = x Phi(x) = x/2 * (1 + erf(x / sqrt 2))                            (approximate="none")
    gelu_tanh(x) = x/2 * (1 + tanh(u)) = x * sigmoid(2u),  u = sqrt(2/pi) (x + 0.044715 x^3)

    swiglu(gate, up)  = silu(gate) * up
    geglu(gate, up)   = gelu(gate) * up        (tanh approximation by default, as Gemma / Liger)
    bias_gelu(x, b)   = gelu(x + b)            (b broadcast over the rows; exact erf by default)

With `up` None, `gate` is the packed [..., 2I] output of a fused gate/up projection: the first
half of the last dim is the gate and the second the up (`gate, up = x.chunk(2, -1)`); the output
is [..., I]. Everything is computed in fp32 and rounded once to the input dtype.

With `quant="fp8"|"int8"` (swiglu, geglu) the fp32 output y is quantized per row instead, as
rms_norm(quant=...) does (dynamic per-token absmax; rooftop.ops._support.QUANT_FORMATS):

    s = max_i |y_i| / QMAX   (448 for float8_e4m3fn, 127 for int8);   q_i = y_i / s

and (q, s) is returned, s [..., 1] in fp32, so that the MLP's down projection reads one byte an
element (matmul_fp8(q, w, s, w_scale) takes them as they come). `quantize_rows(x, quant)` is the
same without an activation (y = x): the input of a projection that no fused op quantizes.

Phi without erf (Triton has none, and 1 + erf(x / sqrt 2) cancels for x < 0), with a = |x|:

    gelu(x) = relu(x) - a Phi(-a)                 (x >= 0: a Phi(-a) <= x / 2, no cancellation)
    a Phi(-a) = v 2^(P(v) - x^2 log2(e) / 2),     v = a / (1 + 0.27 a), in [0, 3.7)

P is the minimax polynomial (Remez) of log2(Phi(-a) (1 + 0.27 a)) + a^2 log2(e) / 2 over a in
[0, 13.3] (past it |gelu| < 2^-126, flushed to 0): its error is the relative error of Phi(-a). Degree
8 (4.1e-8) for fp16 and fp32 outputs; degree 6 (1.14e-6, 1/1700 of bf16's half ulp) for bf16 ones,
two FMAs an element fewer. Evaluated in fp32 (the interpreter on a dense grid, tests): relative error
of gelu at most 2.4e-7 (degree 8) / 1.4e-6 (degree 6) + x^2 2^-23, the last term fp32's rounding of
the exponent (rounding x itself to fp32 moves gelu by x^2 2^-24); div.approx and ex2.approx add about
3e-7 on a GPU. Every bf16 / fp16 input in [-14, 14] comes out as exact gelu correctly rounded (in
the interpreter). |x| is capped at 1e30 for v (one FMNMX an element), so gelu(+inf) = inf as torch's
CUDA kernel gives, gelu(-inf) = 0 (the limit; torch's gives NaN), gelu(NaN) = NaN.

Which kernel runs (all memory-bound: each input read once, the output written once):
- gate and up separate and both contiguous: a flat 1-D kernel over all elements, FLAT_BLOCK
  elements a program (16 a thread: two 16-byte vectors per input for 16-bit dtypes).
- packed input, or separate inputs with strided rows: a 2-D row kernel, tiles of
  BLOCK_M x BLOCK_N (BLOCK_N up to ROWS_BLOCK_ELEMS) with per-tensor row strides. Loads are full
  16-byte vectors when the row strides and I are multiples of 16 bytes (Triton specialises on it).
- quantized (swiglu / geglu with quant="fp8"|"int8", quantize_rows): a row a program (short rows BLOCK_M to a program),
  tiles of at most QUANT_TILE; a row of one tile stays in registers between its max and its store, a wider one (PARTS
  tiles of QUANT_LOOP_TILE) is read twice: pass 1 folds every tile's |y| into one vector (reduced once, so that no
  reduction sits between two tiles' loads), pass 2 reads the row again from L1 / L2 and computes y anew. HBM: gate and
  up read once, q (1 byte an element) and the scale (4 bytes a row) written once. On a GPU, rows wider than
  QUANT_SPLIT_MIN_N (quantize_rows: QUANT_ROWS_SPLIT_MIN_N) are chunks (quant_split_chunk) over adjacent programs that
  hold their chunk's y in registers and exchange its max |y| through L2 (the norms' split path:
  _support.swap_row_stats), at most one chunk per SM; the looped kernel takes rows of more chunks than SMs. H200
  (session 59), % of copy: one tile 98.0-99.3 (swiglu packed -> fp8) and 88.5-96.7 (quantize_rows); wider rows as
  the constants' comment says.
- bias_gelu: the row kernel, BIAS_ELEMS_PER_THREAD values a thread in tiles of two rows or more (M > 1),
  so that a thread's two rows share its bias values (loaded and converted once). It moves 4 bytes an
  element (bf16): at the H200's copy rate an SM must retire 4 elements a clock, 128 threads'
  instructions, so the instructions an element decide its speed. Offline sm_90 SASS, bf16, erf:
  18.7 an element (the erfcc form before: 25.3, at 80% of copy), tanh 11.6 (15.1).
"""
from __future__ import annotations

import functools
import math
from typing import Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra.cuda import libdevice

from rooftop import registry
from rooftop.ops._support import (QUANT_FORMATS, as_rows, await_previous, cdiv, check_float, check_fp8_device,
                                  check_quant, check_same_device, exchange_words, fp8_rows_eager, interpreting, launch,
                                  leave_row, pdl_options, planned, quantize_rows_reference, quantize_values, row_scale,
                                  rows_vectorize, runs_kernel, split_chunks, swap_row_stats, torch_op)
from rooftop.ops.reductions import lanes_total
from rooftop.roofline import Cost

# Launch parameters (to be tuned on the H200).
FLAT_BLOCK = 8192  # elements a program of the flat kernel
FLAT_WARPS = 16  # -> 16 elements a thread
ROWS_BLOCK_ELEMS = 8192  # elements a program of the row kernel
ROWS_ELEMS_PER_THREAD = 16
BIAS_ELEMS_PER_THREAD = 32  # bias_gelu: the prologue and the bias spread over more elements
# bias_gelu's widest column block (tiles of two rows or more). Narrower blocks of more rows share a thread's bias
# values among more rows and read fewer of them a tile, but gained nothing: H200, bf16, % of a same-run copy by
# do_bench, 4096 / 2048 / 1024 / 512 (logs/h200-2026-12-04-s47/call-e, benchmarks/exp_bias_gelu.py): 92.5 / 92.8 /
# 93.5 / 93.4 at 32768, 89.5 / 88.9 / 88.7 / 88.6 at 65536, 92.8 / 92.5 / 91.7 / 92.1 at 131072.
BIAS_BLOCK_N = ROWS_BLOCK_ELEMS // 2
# Quantized gated rows: the widest row kept in registers (one tile; 32 warps at QUANT_ELEMS_PER_THREAD), and the tile
# of wider rows, which are read twice. Chosen offline (no spills at 16 values a thread), not yet timed.
QUANT_ELEMS_PER_THREAD = 16
QUANT_TILE = 16384
QUANT_LOOP_TILE = 8192
QUANT_UNROLL = 8  # tiles a pass unrolls (rows to 65536 whole; wider ones in a loop)
# Rows wider than QUANT_SPLIT_MIN_N (quantize_rows: QUANT_ROWS_SPLIT_MIN_N) on a GPU: chunks over adjacent programs of
# QUANT_SPLIT_WARPS that exchange their chunk's max |y| (the norms' split path), so that no row is read twice. A chunk
# is QUANT_SPLIT_BYTES of input, widened so that a row has at most QUANT_SPLIT_MAX_CHUNKS (each waiting program polls
# every chunk's word), up to QUANT_SPLIT_MAX_CHUNK values (a 4-warp program holds its chunk in registers: 32768 spill,
# offline sm_90; wider rows take the looped kernel). The split kernel launches without PDL, as the norms' split kernels
# do (not timed with it). H200, % of copy at 32768 / 65536 / 131072 / 262144 (logs/h200-2026-12-05-s59/
# split-launch-sweep.txt): swiglu packed -> fp8 89.8 / 87.5 / 83.8 / 80.6 split, 81.7 / 59.7 / 55.8 / 55.0 looped (its
# second read from HBM once the rows in flight outgrow L2); quantize_rows 77.1 / 76.0 / 75.0 / 73.3 split, 95.2 / 83.1
# / 58.4 / 57.2 looped (one input: a row of 128 KB read twice still fits).
QUANT_SPLIT_MIN_N = QUANT_TILE
QUANT_ROWS_SPLIT_MIN_N = 65536
QUANT_SPLIT_BYTES = 16384
QUANT_SPLIT_MAX_CHUNKS = 32
QUANT_SPLIT_MAX_CHUNK = 8192
QUANT_SPLIT_WARPS = 4

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _divide(x, d, APPROX: tl.constexpr):
    """x / d; APPROX (on a GPU): div.approx (one MUFU.RCP and a multiply, 2 ulp; 0 where |d| > 2^126), where the
    IEEE division costs ~7 instructions more an element (its range checks). libdevice's rather than inline
    assembly, which ptxas cannot schedule with its neighbours (an rcp.approx in inline assembly made the GEMM's
    epilogue spill, NOTES item 354); x / d rather than x * (1 / d), which spilled there too. Triton's interpreter
    has no libdevice: there APPROX is off."""
    if APPROX:
        return libdevice.fast_dividef(x, d)
    else:
        return x / d


@triton.jit
def to_fp32(v):
    """v widened to fp32; bf16 through its bits, one shift or one mask an element (a cast takes a
    PRMT and a shift for every other element: 1.5)."""
    if v.dtype == tl.bfloat16:
        return (v.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    return v.to(tl.float32)


@triton.jit
def _activate(x, ACT: tl.constexpr, APPROX: tl.constexpr, TO_BF16: tl.constexpr):
    """act(x) for fp32 x, ACT one of "silu", "gelu" (erf), "gelu_tanh": one exp2 and one reciprocal
    each (APPROX: see _divide). gelu's Phi to fp32's precision, or to bf16's where the result is
    rounded to bf16 (TO_BF16): the module docstring."""
    if ACT == "silu":
        return _divide(x, 1.0 + tl.exp2(-1.4426950408889634 * x), APPROX)
    elif ACT == "gelu_tanh":
        # x * sigmoid(2u): -2u log2(e) = x (-2.3022082 - 0.1029432 x^2); inf/-inf saturate to x / -0
        return _divide(x, 1.0 + tl.exp2(x * (-2.302208198144325 - 0.1029432395800235 * x * x)), APPROX)
    else:
        # relu(x) - v 2^(P(v) - x^2 log2(e) / 2), v = |x| / (1 + 0.27 |x|): the module docstring; |x| capped
        # so that v stays finite at +-inf (inf * 0 would make gelu(+inf) NaN)
        a = tl.minimum(tl.abs(x), 1e30)
        v = _divide(a, 1.0 + 0.27 * a, APPROX)
        if TO_BF16:
            p = 0.00257302097 + v * (-0.00145501876 + v * 0.000153262541)
            p = -0.999998361 + v * (-0.761645988 + v * (0.00439358005 + v * (0.0134218282 + v * p)))
        else:
            p = -0.000399308247 + v * (0.000116259542 + v * -9.93860558e-06)
            p = 0.00388080452 + v * (0.0148210232 + v * (0.00069628025 + v * (-8.71147627e-05 + v * p)))
            p = -0.999999985 + v * (-0.761574349 + v * p)
        return tl.maximum(x, 0.0) - v * tl.exp2(p - 0.7213475204444817 * x * x)


@triton.jit
def _gated_flat_kernel(gate_ptr, up_ptr, out_ptr, n, ACT: tl.constexpr, APPROX: tl.constexpr, BLOCK: tl.constexpr,
                       PDL: tl.constexpr):
    # Reads BLOCK elements of gate and of up once, writes BLOCK of out once: 3 * n * itemsize in all.
    # PDL: the launch overlaps the kernel before it (_support.pdl_options).
    await_previous(PDL)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    gate = to_fp32(tl.load(gate_ptr + offs, mask=mask))
    up = to_fp32(tl.load(up_ptr + offs, mask=mask))
    y = _activate(gate, ACT, APPROX, out_ptr.dtype.element_ty == tl.bfloat16) * up
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _act_rows_kernel(a_ptr, b_ptr, out_ptr, M, N, a_stride, b_stride, out_stride, ACT: tl.constexpr,
                     APPROX: tl.constexpr, BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     EVEN: tl.constexpr, PDL: tl.constexpr):
    # out = act(a) * b (b: rows like a), or with BIAS out = act(a + b) (b: one row of N, read once
    # per program, from L2). Reads a (and b) once, writes out once: 3 (BIAS: 2) * M * N * itemsize.
    # PDL: the launch overlaps the kernel before it (_support.pdl_options).
    await_previous(PDL)
    # EVEN (the tiles divide M and N): no masks, whose compares cost instructions the erf needs.
    # Which blocks run side by side, measured on the H200 (bf16, N >= 16384): gated, a row's column blocks
    # (a 1-D grid: swiglu_packed 100% of copy, 96% with the row blocks adjacent); bias, the row blocks (the
    # 2-D grid (row blocks, column blocks): bias_gelu 90-92%, 79-83% on a 1-D grid, either order).
    if BIAS:
        row_block, col_block = tl.program_id(0), tl.program_id(1)
    else:
        col_blocks = tl.cdiv(N, BLOCK_N)
        row_block, col_block = tl.program_id(0) // col_blocks, tl.program_id(0) % col_blocks
    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = None if EVEN else (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    a = to_fp32(tl.load(a_ptr + rows[:, None] * a_stride + cols[None, :], mask=mask))
    if BIAS:
        bias = to_fp32(tl.load(b_ptr + cols, mask=None if EVEN else cols < N))
        y = _activate(a + bias[None, :], ACT, APPROX, out_ptr.dtype.element_ty == tl.bfloat16)
    else:
        b = to_fp32(tl.load(b_ptr + rows[:, None] * b_stride + cols[None, :], mask=mask))
        y = _activate(a, ACT, APPROX, out_ptr.dtype.element_ty == tl.bfloat16) * b
    tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gated_tile(a_ptr, b_ptr, rows, cols, mask, a_stride, b_stride, b_col, ACT: tl.constexpr, APPROX: tl.constexpr,
                EVICT: tl.constexpr):
    """act(a) * b in fp32 over a [rows, cols] tile (0 where masked), b's columns from b_col on; ACT "none": a alone (b
    is not read). The result is quantized, so gelu's Phi to bf16's precision is more than enough (TO_BF16)."""
    a = tl.load(a_ptr + rows[:, None] * a_stride + cols[None, :], mask=mask, other=0.0, eviction_policy=EVICT)
    if ACT == "none":
        return to_fp32(a)
    b = tl.load(b_ptr + rows[:, None] * b_stride + b_col + cols[None, :], mask=mask, other=0.0, eviction_policy=EVICT)
    return _activate(to_fp32(a), ACT, APPROX, True) * to_fp32(b)


@triton.jit
def _scale(abs_y, QMAX: tl.constexpr, MAX: tl.constexpr):
    """Each row's scale, max |y| / QMAX (at least 1e-30 / QMAX), NaN where the row holds one (as torch.amax): the
    NaN-keeping reduction of the row reductions (MAX: "max", one tl.reduce, or "max_by_count", fmax and a count of
    NaN lanes, for programs of one row and the interpreter: reductions.py's docstring)."""
    top, _ = lanes_total(abs_y, 0, 1, 0, MAX)
    return row_scale(top, QMAX)


@triton.jit
def _gated_quant_kernel(a_ptr, b_ptr, q_ptr, scale_ptr, M, N, a_stride, b_stride, b_col, q_stride, ACT: tl.constexpr,
                        APPROX: tl.constexpr, QUANT: tl.constexpr, QMAX: tl.constexpr, BLOCK_M: tl.constexpr,
                        TILE: tl.constexpr, PARTS: tl.constexpr, UNROLL: tl.constexpr, MAX: tl.constexpr,
                        PDL: tl.constexpr):
    # q = y / s per row, y = act(a) * b (ACT "none": y = a), s = max|y| / QMAX (NaN for a row holding NaN). HBM: a (and
    # b) read once, q (1 byte an element) and s (4 bytes a row) written once: (2 (1) itemsize + 1) * M * N + 4 M bytes.
    # PARTS == 1: the tile of rows stays in registers between the max and the store. PARTS > 1 (BLOCK_M 1): pass 1 folds
    # each tile's |y| into one vector, pass 2 reads the row again (L1 / L2: the program's own bytes) and computes y
    # anew; each pass unrolled by UNROLL tiles (all of a model's rows: their tiles' loads issue ahead of the folds).
    # PDL: _support.pdl_options.
    await_previous(PDL)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    rows = rows.to(tl.int64)
    cols = tl.arange(0, TILE)
    if PARTS == 1:
        mask = row_ok[:, None] & (cols[None, :] < N)
        y = _gated_tile(a_ptr, b_ptr, rows, cols, mask, a_stride, b_stride, b_col, ACT, APPROX, "")
        scale = _scale(tl.abs(y), QMAX, MAX)
        tl.store(scale_ptr + rows, scale, mask=row_ok)
        q = quantize_values(y * (1.0 / scale)[:, None], 1.0, QUANT, QMAX)
        tl.store(q_ptr + rows[:, None] * q_stride + cols[None, :], q.to(q_ptr.dtype.element_ty), mask=mask)
    else:
        abs_max = tl.zeros([BLOCK_M, TILE], tl.float32)
        for part in tl.range(0, PARTS, loop_unroll_factor=UNROLL):
            offs = part * TILE + cols
            mask = row_ok[:, None] & (offs[None, :] < N)
            y = _gated_tile(a_ptr, b_ptr, rows, offs, mask, a_stride, b_stride, b_col, ACT, APPROX, "evict_last")
            abs_max = tl.maximum(abs_max, tl.abs(y), propagate_nan=tl.PropagateNan.ALL)
        scale = _scale(abs_max, QMAX, MAX)
        tl.store(scale_ptr + rows, scale, mask=row_ok)
        for part in tl.range(0, PARTS, loop_unroll_factor=UNROLL):
            offs = part * TILE + cols
            mask = row_ok[:, None] & (offs[None, :] < N)
            y = _gated_tile(a_ptr, b_ptr, rows, offs, mask, a_stride, b_stride, b_col, ACT, APPROX, "evict_first")
            q = quantize_values(y * (1.0 / scale)[:, None], 1.0, QUANT, QMAX)
            tl.store(q_ptr + rows[:, None] * q_stride + offs[None, :], q.to(q_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gated_quant_split_kernel(a_ptr, b_ptr, q_ptr, scale_ptr, words_ptr, cnt_ptr, N, a_stride, b_stride, b_col,
                              q_stride, G, ACT: tl.constexpr, APPROX: tl.constexpr, QUANT: tl.constexpr,
                              QMAX: tl.constexpr, CHUNK: tl.constexpr, G_POW2: tl.constexpr):
    # Program (row, chunk) = (p // G, p % G): reads its chunk of a (and b) once and holds y in registers, exchanges
    # its max |y| with the row's other chunks (swap_row_stats: 8 bytes through L2), writes its chunk of q once; chunk 0
    # writes the row's scale. HBM as the one-tile kernel: (2 (1) itemsize + 1) * M * N + 4 M bytes.
    row = tl.program_id(0) // G
    chunk = tl.program_id(0) % G
    rows = tl.full([1], row, tl.int64)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols[None, :] < N
    y = _gated_tile(a_ptr, b_ptr, rows, cols, mask, a_stride, b_stride, b_col, ACT, APPROX, "")
    top, _ = lanes_total(tl.abs(y), 0, None, 0, "max_by_count")  # NaN where the chunk holds one
    tops, _ = swap_row_stats(words_ptr, row, chunk, top, 0.0, 0.0, 0.0, G, G_POW2)
    row_top, _ = lanes_total(tops, 0, 0, 0, "max_by_count")
    scale = row_scale(row_top, QMAX)
    if chunk == 0:
        tl.store(scale_ptr + row, scale)
    q = quantize_values(y * (1.0 / scale), 1.0, QUANT, QMAX)
    tl.store(q_ptr + rows[:, None] * q_stride + cols[None, :], q.to(q_ptr.dtype.element_ty), mask=mask)
    leave_row(words_ptr, cnt_ptr, row, G, G_POW2)


# ---------------------------------------------------------------------------------------------
# Launch configuration


@functools.lru_cache(maxsize=4096)
def rows_config(M: int, N: int, bias: bool = False) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) of the row kernel: tiles of ROWS_BLOCK_ELEMS elements (short rows
    stacked BLOCK_M to a tile), ROWS_ELEMS_PER_THREAD a thread. With a bias, BIAS_ELEMS_PER_THREAD in
    tiles of at least two rows and at most BIAS_BLOCK_N columns: each thread holds two rows' (or more)
    elements of the same columns, which share its bias values (converted once for all)."""
    block_n = min(triton.next_power_of_2(N), BIAS_BLOCK_N if bias else ROWS_BLOCK_ELEMS)
    block_m = max(1, min(ROWS_BLOCK_ELEMS // block_n, triton.next_power_of_2(M)))
    per_thread = BIAS_ELEMS_PER_THREAD if bias else ROWS_ELEMS_PER_THREAD
    warps = max(1, min(16, block_m * block_n // (32 * per_thread)))
    return block_m, block_n, warps


def act_rows(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, activation: str, bias: bool) -> None:
    """out = act(a) * b over [M, N] row views (unit column stride), or act(a + b) with `bias`
    (b then a vector [N])."""
    M, N = a.shape
    block_m, block_n, warps = rows_config(M, N, bias)
    grid = (cdiv(M, block_m), cdiv(N, block_n)) if bias else (cdiv(M, block_m) * cdiv(N, block_n),)
    launch(_act_rows_kernel, grid, a, b, out, M, N, a.stride(0),
           0 if bias else b.stride(0), out.stride(0), ACT=activation, APPROX=a.is_cuda, BIAS=bias, BLOCK_M=block_m,
           BLOCK_N=block_n, EVEN=M % block_m == 0 and N % block_n == 0, num_warps=warps, **pdl_options(a))


def quant_rows_config(M: int, N: int) -> tuple[int, int, int, int]:
    """(BLOCK_M, TILE, PARTS, num_warps) of the quantized gated kernel: rows of up to QUANT_TILE in one tile (short
    rows stacked to ROWS_BLOCK_ELEMS), wider rows in PARTS tiles of QUANT_LOOP_TILE; QUANT_ELEMS_PER_THREAD a
    thread."""
    if N <= QUANT_TILE:
        tile = triton.next_power_of_2(N)
        block_m = max(1, min(ROWS_BLOCK_ELEMS // tile, triton.next_power_of_2(M)))
        parts = 1
    else:
        tile, block_m, parts = QUANT_LOOP_TILE, 1, cdiv(N, QUANT_LOOP_TILE)
    warps = max(1, min(32, block_m * tile // (32 * QUANT_ELEMS_PER_THREAD)))
    return block_m, tile, parts, warps


def quant_split_chunk(N: int, input_bytes: int) -> int:
    """Columns a program of the quantized split kernel takes: QUANT_SPLIT_BYTES of input (`input_bytes` an output
    column: a and b), at least N / QUANT_SPLIT_MAX_CHUNKS, a power of two."""
    return max(triton.next_power_of_2(max(1, QUANT_SPLIT_BYTES // input_bytes)),
               triton.next_power_of_2(cdiv(N, QUANT_SPLIT_MAX_CHUNKS)))


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _gated_shape(gate: torch.Tensor, up: Optional[torch.Tensor]) -> tuple[int, ...]:
    return tuple(gate.shape) if up is not None else (*gate.shape[:-1], gate.shape[-1] // 2)


def _gated_fake(gate, up, activation):
    return gate.new_empty(_gated_shape(gate, up))


@torch_op("gated_activation", fake=_gated_fake)
def _gated_op(gate: torch.Tensor, up: Optional[torch.Tensor], activation: str) -> torch.Tensor:
    if not runs_kernel(gate):
        return gated_reference(gate, up, activation).to(gate.dtype)
    out = torch.empty(_gated_shape(gate, up), device=gate.device, dtype=gate.dtype)
    if out.numel() == 0:
        return out
    if up is not None and gate.is_contiguous() and up.is_contiguous():
        n = gate.numel()
        launch(_gated_flat_kernel, (cdiv(n, FLAT_BLOCK),), gate, up, out, n, ACT=activation, APPROX=gate.is_cuda,
               BLOCK=FLAT_BLOCK, num_warps=FLAT_WARPS, **pdl_options(gate))
        return out
    if up is None:
        gate, up = gate.chunk(2, -1)
    act_rows(as_rows(gate), as_rows(up), as_rows(out), activation, bias=False)
    return out


def _gated_quant_fake(gate, up, activation, quant):
    shape = _gated_shape(gate, up) if activation != "none" else tuple(gate.shape)
    return (gate.new_empty(shape, dtype=QUANT_FORMATS[quant][0]),
            gate.new_empty((*shape[:-1], 1), dtype=torch.float32))


@torch_op("gated_activation_quant", fake=_gated_quant_fake)
def _gated_quant_op(gate: torch.Tensor, up: Optional[torch.Tensor], activation: str,
                    quant: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, scale) of act(gate) * up quantized per row; activation "none": of gate itself (up None)."""
    if not runs_kernel(gate):
        q, scale = quantize_rows_reference(_gated_values(gate, up, activation), quant)
        return q, scale.float()
    if quant == "fp8":
        check_fp8_device("quant='fp8' (use 'int8' on this GPU)", gate.device)
    q_dtype, quant_id, qmax = QUANT_FORMATS[quant]
    shape = _gated_shape(gate, up) if activation != "none" else tuple(gate.shape)
    q = torch.empty(shape, device=gate.device, dtype=q_dtype)
    scale = torch.empty((*shape[:-1], 1), device=gate.device, dtype=torch.float32)
    if q.numel() == 0:
        return q, scale
    a = as_rows(gate)
    if up is not None:
        b, b_col = as_rows(up), 0
    else:  # quantize_rows (b not read), or packed [..., 2I]: up is each row's second half, read from the same rows at
        # column b_col (the call's own tensor, which a plan can record; a view at an offset is not one)
        b, b_col = a, (0 if activation == "none" else shape[-1])
    M, N = a.shape[0], shape[-1]
    chunk = quant_split_chunk(N, a.element_size() * (1 if activation == "none" else 2))
    split_min_n = QUANT_ROWS_SPLIT_MIN_N if activation == "none" else QUANT_SPLIT_MIN_N
    chunks = split_chunks(a, N, chunk) if split_min_n < N and chunk <= QUANT_SPLIT_MAX_CHUNK else 0
    if chunks:
        words, counters = exchange_words(a.device, M, chunks)
        launch(_gated_quant_split_kernel, (M * chunks,), a, b, q, scale, words, counters, N, a.stride(0), b.stride(0),
               b_col, N, chunks, ACT=activation, APPROX=a.is_cuda, QUANT=quant_id, QMAX=qmax, CHUNK=chunk,
               G_POW2=triton.next_power_of_2(chunks), num_warps=QUANT_SPLIT_WARPS)
        return q, scale
    block_m, tile, parts, warps = quant_rows_config(M, N)
    # rows whose loads do not vectorize (or of fp32) spill at full unroll (offline sm_90: 8-850 bytes)
    unroll = QUANT_UNROLL if a.element_size() == 2 and rows_vectorize(N, (a, b)) else 2
    launch(_gated_quant_kernel, (cdiv(M, block_m),), a, b, q, scale, M, N, a.stride(0), b.stride(0), b_col, N,
           ACT=activation, APPROX=a.is_cuda, QUANT=quant_id, QMAX=qmax, BLOCK_M=block_m, TILE=tile, PARTS=parts,
           UNROLL=min(parts, unroll), MAX="max_by_count" if block_m == 1 or interpreting() else "max",
           num_warps=warps, **pdl_options(a))
    return q, scale


def _bias_gelu_fake(x, bias, activation):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("bias_gelu", fake=_bias_gelu_fake)
def _bias_gelu_op(x: torch.Tensor, bias: torch.Tensor, activation: str) -> torch.Tensor:
    if not runs_kernel(x):
        return _ACT_F64[activation](x.double() + bias.double()).to(x.dtype)
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.numel():
        act_rows(as_rows(x), bias, as_rows(out), activation, bias=True)
    return out


def _check_gated(gate, up, quant=None) -> None:
    check_float("gate", gate)
    if gate.dim() == 0:
        raise ValueError("gate must have at least one dimension")
    check_quant(quant)
    if quant is not None and gate.shape[-1] == 0:
        raise ValueError("quant needs rows to scale: gate's last dim is 0")
    if up is None:
        if gate.shape[-1] % 2:
            raise ValueError(f"gate's last dim ({gate.shape[-1]}) must be even when up is None "
                             "(gate is then the packed [..., 2*I] input: gate half, then up half)")
        return
    check_float("up", up)
    check_same_device("up", up, "gate", gate)
    if up.dtype != gate.dtype:
        raise TypeError(f"up has dtype {str(up.dtype).replace('torch.', '')} but gate has "
                        f"{str(gate.dtype).replace('torch.', '')}")
    if up.shape != gate.shape:
        raise ValueError(f"up has shape {tuple(up.shape)} but gate has {tuple(gate.shape)}")


def _gelu_activation(approximate: object) -> str:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return "gelu" if approximate == "none" else "gelu_tanh"


def _gated(gate, up, activation, quant):
    _check_gated(gate, up, quant)
    return _gated_op(gate, up, activation) if quant is None else _gated_quant_op(gate, up, activation, quant)


@planned
def swiglu(gate: torch.Tensor, up: Optional[torch.Tensor] = None, *, quant: Optional[str] = None):
    """silu(gate) * up. With up None, gate is the packed [..., 2*I] input (gate half, up half) and
    the output is [..., I]. fp16/bf16/fp32, computed in fp32. With quant="fp8"|"int8" the output is
    quantized per row and returned with its scales [..., 1] (fp32, y ~= q * scale): (q, scale)."""
    return _gated(gate, up, "silu", quant)


@planned
def geglu(gate: torch.Tensor, up: Optional[torch.Tensor] = None, approximate: str = "tanh", *,
          quant: Optional[str] = None):
    """gelu(gate, approximate) * up, approximate "tanh" (default) or "none" (erf). With up None,
    gate is the packed [..., 2*I] input and the output is [..., I]. quant as swiglu's."""
    return _gated(gate, up, _gelu_activation(approximate), quant)


@planned
def quantize_rows(x: torch.Tensor, quant: str = "fp8") -> tuple[torch.Tensor, torch.Tensor]:
    """x quantized per row (dynamic per-token absmax, as swiglu(quant=...)): (q, scale) with q in float8_e4m3fn
    ("fp8") or int8 ("int8") and scale [..., 1] fp32, x ~= q * scale."""
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if quant not in QUANT_FORMATS:
        raise ValueError(f"quant must be 'fp8' or 'int8', got {quant!r}")
    if x.shape[-1] == 0:
        raise ValueError("quant needs rows to scale: x's last dim is 0")
    return _gated_quant_op(x, None, "none", quant)


@planned
def bias_gelu(x: torch.Tensor, bias: torch.Tensor, approximate: str = "none") -> torch.Tensor:
    """gelu(x + bias) with bias of shape [x.shape[-1]]; approximate "none" (erf, default) or "tanh"."""
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    check_float("bias", bias)
    check_same_device("bias", bias, "x", x)
    if bias.shape != (x.shape[-1],):
        raise ValueError(f"bias must have shape ({x.shape[-1]},) to match x's last dim, got {tuple(bias.shape)}")
    if bias.numel() > 1 and bias.stride(0) != 1:
        raise ValueError("bias must be contiguous")
    return _bias_gelu_op(x, bias, _gelu_activation(approximate))


# ---------------------------------------------------------------------------------------------
# Reference, eager forms, cost, cases

_ACT_F64 = {
    "silu": F.silu,
    # from erfc: F.gelu's 1 + erf(x / sqrt 2) cancels even in float64 past x = -6
    "gelu": lambda x: 0.5 * x * torch.special.erfc(-x * 0.5**0.5),
    # x * sigmoid(2u): F.gelu's x/2 (1 + tanh(u)) cancels in float64 too (15% off at x = -7, 0 at -9)
    "gelu_tanh": lambda x: x * torch.sigmoid(1.5957691216057308 * (x + 0.044715 * x**3)),
}


def gated_reference(gate: torch.Tensor, up: Optional[torch.Tensor], activation: str) -> torch.Tensor:
    """act(gate) * up in float64 (up None: gate is the packed [..., 2*I] input)."""
    if up is None:
        gate, up = gate.chunk(2, -1)
    return _ACT_F64[activation](gate.double()) * up.double()


def _gated_values(gate, up, activation):
    """act(gate) * up in float64, or gate itself for activation "none" (quantize_rows)."""
    return gate.double() if activation == "none" else gated_reference(gate, up, activation)


def gated_quant_reference(gate, up, activation, quant):
    """(q, scale) of the quantized form (activation "none": quantize_rows'), q's values in float64."""
    q, scale = quantize_rows_reference(_gated_values(gate, up, activation), quant)
    return q.double(), scale


def swiglu_reference(gate, up=None):
    return gated_reference(gate, up, "silu")


def geglu_reference(gate, up=None, approximate="tanh"):
    return gated_reference(gate, up, _gelu_activation(approximate))


def bias_gelu_reference(x, bias, approximate="none"):
    return _ACT_F64[_gelu_activation(approximate)](x.double() + bias.double())


def swiglu_packed_eager(x):
    gate, up = x.chunk(2, -1)
    return F.silu(gate) * up


def swiglu_packed_fp8_eager(x):
    """SwiGLU, then dynamic per-token fp8 quantization, as PyTorch code writes them."""
    return fp8_rows_eager(swiglu_packed_eager(x))


def _cost(tensors: int, flops_per_element: int, bias: bool = False, quantized_out: bool = False):
    """`tensors` [M, N] tensors moved (inputs read once + the output written once), plus a bias row; a quantized
    output is 1 byte an element and a 4-byte scale a row."""
    def cost(shape: tuple[int, ...], dtype: torch.dtype) -> Cost:
        n = math.prod(shape)
        out_bytes = n + 4 * (n // shape[-1]) if quantized_out else n * dtype.itemsize
        return Cost(flops=flops_per_element * n,
                    bytes=((tensors - 1) * n + (shape[-1] if bias else 0)) * dtype.itemsize + out_bytes)
    return cost


def _make_gated(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=dtype), torch.randn(shape, device=device, dtype=dtype)


def _make_rows(shape, dtype, device):
    return (torch.randn(shape, device=device, dtype=dtype),)


def _make_packed(shape, dtype, device):
    return (torch.randn((*shape[:-1], 2 * shape[-1]), device=device, dtype=dtype),)


def _make_bias(shape, dtype, device):
    return torch.randn(shape, device=device, dtype=dtype), torch.randn(shape[-1], device=device, dtype=dtype)


def _liger_swiglu():
    try:
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    except ImportError:
        return None
    return LigerSiLUMulFunction.apply


def _liger_geglu():
    try:
        from liger_kernel.ops.geglu import LigerGELUMulFunction
    except ImportError:
        return None
    return LigerGELUMulFunction.apply


# FLOPs per output element: silu 4 (mul, exp2, add, div) + 1 (mul by up); gelu_tanh 7 + 1;
# bias + gelu (erf): 1 + about 6 (erf counted as a few FLOPs)
registry.register(registry.OpSpec(
    name="swiglu", family="activations", make_inputs=_make_gated, run=swiglu, reference=swiglu_reference,
    eager=lambda gate, up: F.silu(gate) * up, cost=_cost(3, 5), cases=registry.row_sweep(),
    peers={"liger": _liger_swiglu}))
registry.register(registry.OpSpec(
    name="swiglu_packed", family="activations", make_inputs=_make_packed, run=swiglu,
    reference=swiglu_reference, eager=swiglu_packed_eager, cost=_cost(3, 5), cases=registry.row_sweep()))
registry.register(registry.OpSpec(
    name="swiglu_packed_fp8", family="activations", make_inputs=_make_packed, run=lambda x: swiglu(x, quant="fp8"),
    reference=lambda x: gated_quant_reference(x, None, "silu", "fp8"), eager=swiglu_packed_fp8_eager,
    cost=_cost(3, 7, quantized_out=True), cases=registry.row_sweep()))
registry.register(registry.OpSpec(
    name="quantize_rows_fp8", family="activations", make_inputs=_make_rows, run=lambda x: quantize_rows(x, "fp8"),
    reference=lambda x: gated_quant_reference(x, None, "none", "fp8"), eager=fp8_rows_eager,
    cost=_cost(2, 2, quantized_out=True), cases=registry.row_sweep()))
registry.register(registry.OpSpec(
    name="geglu", family="activations", make_inputs=_make_gated, run=geglu, reference=geglu_reference,
    eager=lambda gate, up: F.gelu(gate, approximate="tanh") * up, cost=_cost(3, 8), cases=registry.row_sweep(),
    peers={"liger": _liger_geglu}))
registry.register(registry.OpSpec(
    name="bias_gelu", family="activations", make_inputs=_make_bias, run=bias_gelu,
    reference=bias_gelu_reference, eager=lambda x, bias: F.gelu(x + bias), cost=_cost(2, 7, bias=True),
    cases=registry.row_sweep()))
