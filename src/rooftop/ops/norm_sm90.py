r"""RMSNorm and LayerNorm of wide rows staged in shared memory, optionally fused with the residual add, on
Hopper (sm_90) in Gluon: one of the paths of rooftop.rms_norm and rooftop.layer_norm (ops/rms_norm.py and
ops/layer_norm.py choose it; this file holds the kernel and its launch).

What it computes, per row of N (fp32 statistics; y, h rounded to x's dtype):

    h = x + residual   (rounded to x's dtype: the new residual stream, stored; without a residual h = x)
    rms_norm:    y_i = h_i * rsqrt(mean_j(h_j^2) + eps) * (offset + w_i)                (w None: no scale)
                 quantized (fp8 / int8 y): s = max_j |y_j| / QMAX stored per row, y_i / s stored (rms_norm.py's
                 formats); max|y| = rsqrt(..) * max|h (offset + w)|, taken in pass 1 (the weight's loads then run
                 in both passes), so y / s = h_i * (offset + w_i) * (rsqrt(..) / s): no division an element
    layer_norm:  s = the fp32 mean of the row's first chunk;  d_i = h_i - s;  c = mean_j(d_j);
                 var = mean_j(d_j^2) - c^2;  y_i = (d_i - c) * rsqrt(var + eps) * w_i + b_i  (w, b None: left out)

LayerNorm takes its statistics in one pass, as the chunks land, as RMSNorm does: the first chunk gives the shift
s, then every chunk adds sum(d) and sum(d^2). d = h - s is exact for h within a factor 2 of s (Sterbenz), and c,
the part of the mean that s missed, is removed from every d: mean and variance keep fp32 precision relative to
the row's spread, not its mean (rows 1e4 + randn pass; E[h^2] - E[h]^2 would lose everything). (Until session
11 s was the whole row's mean, which took a second pass over the row in shared memory between pass 1 and pass 2,
the row's buffers taken that much longer. H200, bf16, M * N = 2^27, GPU time, % of copy, before / after:
layer_norm 80.9 / 83.6 at N = 32768, 77.7 / 81.0 at 65536; add_layer_norm 82.2 / 86.5 at 65536.)

Why: at N = 32768-65536 rooftop's Triton kernels re-read the row from L2 for pass 2 (looped) or hold it in
registers with nothing overlapping the load (on-chip): 64-87 % of a copy on the H200. A 16-bit row of up to
65536 fits in shared memory with room for (part of) the next; this is ops/softmax_sm90.py's scheme (its docstring has
the ring's mbarrier protocol and the turn barriers that make the parity waits safe), whose loader and chunk
reader this kernel imports.

The kernel: one persistent program per SM walks rows pid, pid + G, .. (G programs). gl.warp_specialize splits
it into
- a 1-warp TMA loader of x's CHUNK-element pieces (8192 or 4096, config()) into a ring of X_STAGES buffers
  (softmax_sm90._loader), and with a residual a second one filling a ring of R_STAGES buffers with the
  residual's pieces;
- two 4-warp consumer partitions taking the program's rows in turn (turn mbarriers, as softmax's). Pass 1
  waits for each chunk as it lands (with a residual: for both pieces, forms h, rounds it, stores it to the
  new residual from registers, writes it back over x's piece in shared memory and releases the residual's
  buffer at once) and sums h^2 (rms), or d = h - s and d^2 (layer), per group of 8 adjacent elements,
  in-thread. Pass 2 reads each chunk again, releases its
  buffer, scales it by the weight (and bias) and stores y from registers. The weight and bias come from shared
  memory where they fit beside two rows of x's ring, or one of them where only one does (RESIDENT_PARAMS,
  RESIDENT_ONE, resident_params: 16-bit ones, read once a program by each consumer into the same buffers, each
  thread its own vectors), else from L2,
  each chunk's loads issued one chunk ahead (the next row's first chunk during the last: they are per column);
  bf16 ones as 32-bit words, widened as the chunks are (_load_params; exp_row_parts.py, session 17: quantizing
  add_rms_norm +3.4-4.0% at 32768-262144, add_layer_norm +2.3% at 65536, the others within 1%).
Only x's (or h's) pieces are held until pass 2; the residual's leave the ring during pass 1.

Protocol (why every value read is the one meant; benchmarks/exp_gluon_norms.py --compile-only models it). Slots
are numbered in the program's order in both rings (row q's chunk c: slot q * CHUNKS + c, buffer slot % STAGES
of its ring, use slot // STAGES); the loaders fill each ring's slots in order, each once the buffer's previous
use is released. (1) A ready wait for use u is right when use u - 1 of the buffer has landed: the turns make
the pass 1s of the program's rows run one after the other, so the only consumer waiting on either ring has
seen every earlier slot land (a residual ring smaller than a row, R_STAGES < CHUNKS, is no exception: use u - 1
of a residual buffer is the same row's chunk R_STAGES back, or a row before, both waited for). (2) No deadlock
while a row of x fits its ring (CHUNKS <= X_STAGES; the residual's ring needs no such bound: pass 1 releases
each residual chunk before waiting for the next): the loads of a row wait only for releases of earlier rows,
or of the same row's earlier residual chunks. (3) A buffer is not refilled while its values are still needed:
x's buffer holds x's chunk, then (with a residual) h, until pass 2 reads it for the last time and releases it;
the residual's buffer until pass 1 has read it. Release (softmax_sm90._release) orders the partition's
shared-memory accesses before the TMA write that refills the buffer: each thread's fence.proxy.async (the TMA
writes through the async proxy, which a barrier of the warps does not order), then the barrier, then one
arrive. Without the
fence, run 1 of the experiment (H200) found new residuals that were not x + residual bit for bit (add_layer_norm
at every width, add_rms_norm at 16392 and with 8192-element chunks), where every mbarrier wait and release is
right by (1)-(3): the PTX proxy rules allow a load of the buffer, still queued (behind the partition's global
stores of h and y) when the arrive went out, to read the refill (deepseek-ai/DeepEP#642 fixed a race between
LDS and TMA loads the same way). The fence also publishes pass 1's writes of h to the async proxy.
Rows in parts (PARTS > 1; row_parts, for rows wider than x's ring: rms_norm.py and layer_norm.py choose it past
their GLUON_MAX_N, quantizing rows past rms_norm.QUANT_PART_MAX_N): the launch views the rows as [M * PARTS, N /
PARTS] (softmax_sm90.part_views), each part a row of the kernel above, on a multiple of PARTS programs; program pid
always takes part pid % PARTS, so its weight and bias start (pid % PARTS) * N / PARTS columns in. Between pass 1 and
pass 2 the parts of a row exchange their statistics through softmax_sm90.swap_pairs (its protocol and why it
cannot deadlock: softmax_sm90's docstring): RMSNorm the parts' mean squares (averaged; quantizing, their max |h
(offset + w)| too), LayerNorm each part's mean s + c and variance, merged as Chan's parallel variance with equal
counts (mean = the parts' mean; var = the mean of their variances + the variance of their means), so that rows whose
parts sit far apart (halves centred 2e4 apart in the tests) keep their precision. H200, bf16, GPU time, % of copy
(logs/h200-2026-12-01-s12/exp-row-parts-norms.log, x 2703 / 4220), parts of 65536 / split-words at 131072 / 262144 /
1048576: rms_norm 83.6 / 78.3, 83.6 / 79.9, 81.5 / 77.9; layer_norm 73.6 / 68.7, 72.8 / 67.3, 69.0 / 63.7 (parts of
32768 in between); add_layer_norm 78.9 / 83.5, 77.9 / 83.3, 75.5 / 65.9 (hence PARTS_RESIDUAL_MIN_N).
Memory traffic: x (and the residual) read from HBM once, y (and h) written once: 2 (4) * M * N * itemsize;
the weight and bias read once per row from L2 (quantizing: twice), or once a program where kept. Shared memory:
X_STAGES + R_STAGES buffers of CHUNK elements, and CHUNKS each for a kept weight and bias.

Needs (supports()): fp16 or bf16 x, y (and h) of x's dtype (or a 1-byte quantized y), N a multiple of 8, 16-byte
aligned bases and row strides (the TMA rows; y's, h's vector stores; the weight and bias, of any float dtype), rows
that do not overlap, CHUNKS <= X_STAGES. Columns past N read 0 (TMA) and are masked where they would count; the weight
and bias are read there at the last vector's columns (unmasked loads, values never used).
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

from rooftop.ops import _support, softmax_sm90
from rooftop.ops._support import GluonLaunch, cdiv, num_sms
from rooftop.ops.softmax_sm90 import (BOX_COLS, LOADER_REGS, RING_LAYOUT, VEC, _loader, _read_chunk, _release, _widen,
                                      barrier_not_needed, consumer_regs, part_views)

# Ring buffers: 8192-element chunks (16 KB; 14 buffers, 4 of them the residual's) where they compile without spills,
# 16-bit weight and bias, whole chunks (N % 8192 == 0) and, for LayerNorm, contiguous rows; else 4096 (28 buffers, 4
# the residual's): with 8192, LayerNorm's pass 2 needs more than the consumers' 240 registers when the weight and bias
# are fp32 (a chunk ahead in flight) or N % 8192 != 0 (benchmarks/exp_gluon_norms.py --compile-only). Measured (H200,
# bf16, % of copy, exp_gluon_norms run 1): at N = 65536 8192-element chunks 89.4 / 79.3 / 90.8 (residual ring 4) /
# 86.0 (4096, ring 4) against 4096 with a ring of 8: 75.0 / 71.7 / 85.7 / 78.1 (rms_norm, layer_norm, add_rms_norm,
# add_layer_norm)
WIDE_CHUNK, WIDE_BUFFERS = 8192, 14  # 224 KB of the 227 KB a program may use (barriers, scratch: under 1 KB)
CHUNK, BUFFERS = 4096, 28
RES_STAGES = 4  # with a residual, the buffers of the residual's ring (the others are x's)
CONSUMERS = 2  # consumer partitions taking rows in turn
# Rows with a residual are split into parts only past this width (up to it whole rows on this kernel or the Triton
# ones). Since the parts swap their statistics in one round trip (softmax_sm90.swap_pairs) and take parts of 32768,
# parts win over the split-words kernels, which took rows with a residual up to 262144 before: H200, bf16, % of a
# same-run copy by do_bench (logs/h200-2026-12-04-s47/call-c, benchmarks/exp_norm_parts.py),
# split-words / parts: add_layer_norm 86.8 / 92.6 at 131072, 85.4 / 91.5 at 262144; add_rms_norm 93.8 / 93.3, 92.0 /
# 94.3 (under the old exchange, parts of 65536, add_layer_norm lost: 83.5 / 78.9 at 131072).
PARTS_RESIDUAL_MIN_N = 65536
CONSUMER_WARPS = 4  # a consumer partition's warps, unless norm_rows is asked for others
# The weight and bias (16-bit) kept in shared memory, a buffer a chunk taken from the ring, where x's ring still holds
# two rows (RESIDENT_ROWS): read from L2 once a program, not once (quantizing: twice) a row (resident_params). H200,
# bf16, M * N = 2^27, % of a same-run copy by do_bench, L2 / kept (logs/h200-2026-12-04-s44/call-c,
# benchmarks/exp_resident_params.py):
# rms_norm quantized to fp8 82.8 / 88.8 at 16384, 82.2 / 87.8 at 32768, 67.6 / 71.7 at 49152, 70.5 / 77.1 at 65536,
# 70.2 / 75.7 at 131072 (parts of 32768); with a residual, where x's ring kept only 6 buffers for rows of 4 chunks,
# 90.1 / 80.1 at 65536 and 90.8 / 78.1 at 131072, level at 16384-32768; LayerNorm in parts of 32768 (call b) 77.6 /
# 65.8 at 65536 (ring of 6): the ring's depth matters more than the parameters' L2 traffic, hence two rows. Those
# kept reads carried a partition barrier a chunk (Membar's; barrier_not_needed drops it since session 45): without it
# (logs/h200-2026-12-04-s45/call-a) level within 1.2 points in every case (LayerNorm in parts kept on a ring of 6
# 64.9-67.3 against 63.7-66.1).
RESIDENT_PARAMS = True
RESIDENT_ROWS = 2  # the rows x's ring must still hold beside kept parameters
# Where the weight and bias do not both fit beside RESIDENT_ROWS rows, one of them kept (the weight first): LayerNorm's
# rows in parts of 32768 then pull 4 bytes an element from L2 in pass 2, not 6 (x by TMA, w, b), which the L2's rate to
# the SMs (~5.6-6.5 TB/s) caps near 80% of a copy (journal 326-327). H200, bf16, M * N = 2^27, % of a same-run copy
# by do_bench, one kept / both from L2 (logs/h200-2026-12-04-s49/call-h, benchmarks/exp_ln_keep_one.py): 84.3 / 80.1
# at 131072, 82.1 / 76.9 at 262144; at 65536 in parts of 32768 84.5 / 80.6 against whole rows' 86.4 (kept whole).
RESIDENT_ONE = True


@gluon.jit
def _write_chunk(ring, buf, h, chunk_layout: gl.constexpr):
    """h ([GROUPS, 8] in chunk_layout, the ring's dtype) into ring buffer `buf`, each thread's groups where
    _read_chunk reads them back in the same thread (no barrier between the two)."""
    GROUPS: gl.constexpr = ring.shape[1] * ring.shape[2] // VEC
    flat_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    ring.index(buf)._reinterpret(ring.dtype, [GROUPS, VEC], flat_layout).store(h)


@gluon.jit
def _load_params(ptr, col, N, GROUPS: gl.constexpr, EVEN: gl.constexpr, chunk_layout: gl.constexpr):
    """The weight's (or bias's) values of the chunk at `col`, as _widen takes them: bf16 as [GROUPS, 4] 32-bit
    words (widened when used: one instruction a value, the conversion takes 1.5), other dtypes as [GROUPS, 8].
    Past N (a last chunk in part) the last vector again, so that the loads need no mask (those columns are
    neither counted nor stored)."""
    if ptr.dtype.element_ty == gl.bfloat16:
        layout: gl.constexpr = gl.BlockedLayout([1, VEC // 2], [32, 1], chunk_layout.warps_per_cta, [1, 0])
        ptr = ptr.to(gl.pointer_type(gl.int32), bitcast=True)
        width: gl.constexpr = VEC // 2
    else:
        layout: gl.constexpr = chunk_layout
        width: gl.constexpr = VEC
    # the chunk's start on the base pointer, the offsets in the tensor: the loads' addresses are then one base
    # and immediate offsets
    ptr += col // (VEC // width)
    starts = gl.expand_dims(gl.arange(0, GROUPS, layout=gl.SliceLayout(1, layout)) * width, 1)
    if not EVEN:
        starts = gl.minimum(starts, (N - VEC - col) // (VEC // width))
    return gl.load(ptr + (starts + gl.expand_dims(gl.arange(0, width, layout=gl.SliceLayout(0, layout)), 0)))


@gluon.jit
def _keep_params(ptr, ring, N, GROUPS: gl.constexpr, EVEN: gl.constexpr, CHUNKS: gl.constexpr,
                 chunk_layout: gl.constexpr):
    """The program's weight (or bias) columns into `ring`, chunk c into buffer c, each thread's vectors where
    _read_chunk reads them back in the same thread: both consumer partitions write the same values to the same
    places and read only what they wrote themselves (no barrier needed: the reads drop the one Membar puts there)."""
    flat_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    for c in gl.static_range(CHUNKS):
        v = _load_params(ptr, c * GROUPS * VEC, N, GROUPS, EVEN, chunk_layout)
        ring.index(c)._reinterpret(v.dtype, v.shape, flat_layout).store(v)


@gluon.jit
def _add_residual(x, it, x_ring, x_buf, r_ring, r_ready, r_empty, h_ptrs, live, EVEN: gl.constexpr,
                  chunk_layout: gl.constexpr, LEAN: gl.constexpr):
    """Chunk `it`'s h = x + residual, rounded to x's dtype: stored to the new residual (h_ptrs), written back
    over x's buffer; the residual's buffer released. Returns h in fp32."""
    R_STAGES: gl.constexpr = r_ring.shape[0]
    r_buf = it % R_STAGES
    barrier_not_needed(it, LEAN)
    mbarrier.wait(r_ready.index(r_buf), (it // R_STAGES) & 1)
    h = (x + _read_chunk(r_ring, r_buf, chunk_layout)).to(r_ring.dtype)
    _release(r_empty, r_buf)
    barrier_not_needed(it, LEAN)  # each thread writes where it read, into a buffer not released
    _write_chunk(x_ring, x_buf, h, chunk_layout)
    if EVEN:
        gl.store(h_ptrs, h)
    else:
        gl.store(h_ptrs, h, mask=live)
    return h.to(gl.float32)


@gluon.jit
def _consumer(y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, x_ring, x_ready, x_empty, r_ring, r_ready,
              r_empty, w_ring, b_ring, turns, M, N8, y_stride8, h_stride8, eps, w_offset, WHO: gl.constexpr,
              LAYER: gl.constexpr, HAS_RES: gl.constexpr, HAS_W: gl.constexpr, HAS_B: gl.constexpr,
              EVEN: gl.constexpr, CHUNKS: gl.constexpr, WARPS: gl.constexpr, PARTS: gl.constexpr,
              QUANT: gl.constexpr, QMAX: gl.constexpr, LEAN: gl.constexpr, KEEP_W: gl.constexpr,
              KEEP_B: gl.constexpr):
    """Consumer WHO's rows (the module docstring). N8, y_stride8, h_stride8: N and the row strides in
    8-element vectors (so that the compiler knows stores and masks come in whole vectors). PARTS > 1:
    the rows are parts of rows PARTS times wider, and this program's are always part pid % PARTS (the programs
    are a multiple of PARTS), whose weight and bias columns start N later each. QUANT (RMSNorm only; 1 fp8,
    2 int8): y is stored as y / s, s = max|y| / QMAX of the whole row, stored to scale_ptr. KEEP_W / KEEP_B: the
    weight / bias are read once into w_ring / b_ring (a buffer a chunk) and from there for every row."""
    X_STAGES: gl.constexpr = x_ring.shape[0]
    CHUNK: gl.constexpr = x_ring.shape[1] * x_ring.shape[2]
    GROUPS: gl.constexpr = CHUNK // VEC
    # thread t of warp w holds groups w * 32 + t, + 32 * WARPS, ..: a warp reads 512 contiguous bytes of
    # shared memory per vector load (conflict-free), and stores 512 contiguous bytes
    chunk_layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [WARPS, 1], [1, 0])
    group_layout: gl.constexpr = gl.SliceLayout(1, chunk_layout)
    # each group's first column (masks come per group: N is a multiple of 8)
    group_starts = gl.arange(0, GROUPS, layout=group_layout) * VEC
    starts = gl.expand_dims(group_starts, 1)
    lanes = gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, chunk_layout)), 0)
    offs = starts + lanes
    N = N8 * VEC
    programs = gl.num_programs(0)
    if PARTS > 1:
        w_ptr += (gl.program_id(0) % PARTS) * N
        b_ptr += (gl.program_id(0) % PARTS) * N
    # kept parameters into their buffers; else the first chunk's, pass 2 loading each next one a chunk ahead
    if HAS_W:
        if KEEP_W:
            _keep_params(w_ptr, w_ring, N, GROUPS, EVEN, CHUNKS, chunk_layout)
        else:
            w_next = _load_params(w_ptr, 0, N, GROUPS, EVEN, chunk_layout)
    if HAS_B:
        if KEEP_B:
            _keep_params(b_ptr, b_ring, N, GROUPS, EVEN, CHUNKS, chunk_layout)
        else:
            b_next = _load_params(b_ptr, 0, N, GROUPS, EVEN, chunk_layout)
    k = 0  # this consumer's rows so far
    # rows in parts: swap_pairs' cleanup, a row behind
    left, last_row = gl.zeros_like(softmax_sm90.partition_lanes(WARPS)) - 1, 0
    for row in range(gl.program_id(0) + WHO * programs, M, 2 * programs):
        it = (2 * k + WHO) * CHUNKS  # the program's number of this row's first chunk
        # the other consumer has finished pass 1 of the row before (softmax_sm90's docstring)
        mbarrier.wait(turns.index(1 - WHO), (k + WHO + 1) & 1)
        h_row = h_ptr + row.to(gl.int64) * h_stride8 * VEC
        # pass 1, as the chunks land: per group, sum of h^2 (rms), or of d = h - shift and of d^2 (layer)
        acc = gl.zeros([GROUPS], gl.float32, group_layout)
        acc_dd = gl.zeros([GROUPS], gl.float32, group_layout)  # LayerNorm: sum d^2; QUANT: max |h (offset + w)|
        shift = 0.0
        for c in range(CHUNKS):
            buf = (it + c) % X_STAGES
            barrier_not_needed(c, LEAN)
            mbarrier.wait(x_ready.index(buf), ((it + c) // X_STAGES) & 1)
            if HAS_RES:  # after the last chunk's h written into its buffer
                barrier_not_needed(c, LEAN)
            x = _read_chunk(x_ring, buf, chunk_layout)
            if HAS_RES:
                x = _add_residual(x, it + c, x_ring, buf, r_ring, r_ready, r_empty, h_row + c * CHUNK + offs,
                                  starts < N - c * CHUNK, EVEN, chunk_layout, LEAN)
            if LAYER:
                if c == 0:  # the first chunk's fp32 mean (columns past N read 0)
                    shift = gl.sum(gl.sum(x, axis=1), axis=0) / gl.minimum(N, CHUNK)
                d = x - shift
                chunk_d = gl.sum(d, axis=1)
                chunk_dd = gl.sum(d * d, axis=1)
                if not EVEN:  # the groups past N (read as 0) left out: 8 selects a thread, not 64
                    chunk_d = gl.where(group_starts < N - c * CHUNK, chunk_d, 0.0)
                    chunk_dd = gl.where(group_starts < N - c * CHUNK, chunk_dd, 0.0)
                acc += chunk_d
                acc_dd += chunk_dd
            else:
                acc += gl.sum(x * x, axis=1)
                if QUANT:  # y = rstd * h (offset + w): its largest magnitude is rstd * max|h (offset + w)|
                    if HAS_W:  # pass 1 takes the weight's loads a chunk ahead too, pass 2 goes on from chunk 0
                        if KEEP_W:
                            barrier_not_needed(c, LEAN)  # each thread reads back what it wrote (_keep_params)
                            w = _read_chunk(w_ring, c, chunk_layout)
                        else:
                            w = _widen(w_next, chunk_layout)
                            w_next = _load_params(w_ptr, ((c + 1) % CHUNKS) * CHUNK, N, GROUPS, EVEN, chunk_layout)
                        x = x * (w + w_offset)
                    acc_dd = gl.maximum(acc_dd, gl.max(gl.abs(x), axis=1))  # columns past N read 0
        mbarrier.arrive(turns.index(WHO))
        if LAYER:
            corr = gl.sum(acc, axis=0) / N  # the mean of d: what the shift missed of the row's mean
            var = gl.sum(acc_dd, axis=0) / N - corr * corr
            if PARTS > 1:  # merge the parts' (mean, variance) (Chan: equal counts)
                means, variances, mine, left = softmax_sm90.swap_pairs(ws_ptr, cnt_ptr, row, shift + corr, var, left,
                                                                       last_row, PARTS, WARPS)
                last_row = row
                mean = gl.sum(gl.where(mine, means, 0.0), axis=0) / PARTS
                spread = gl.where(mine, means - mean, 0.0)
                var = (gl.sum(variances, axis=0) + gl.sum(spread * spread, axis=0)) / PARTS
                corr = mean - shift
            rstd = gl.rsqrt(gl.maximum(var, 0.0) + eps)
            centre = corr * rstd  # y = (h - shift) * rstd - centre
        else:
            mean_square = gl.sum(acc, axis=0) / N
            peak = gl.max(acc_dd, axis=0)
            if PARTS > 1:
                squares, peaks, mine, left = softmax_sm90.swap_pairs(ws_ptr, cnt_ptr, row, mean_square, peak, left,
                                                                     last_row, PARTS, WARPS)
                last_row = row
                mean_square = gl.sum(gl.where(mine, squares, 0.0), axis=0) / PARTS
                peak = gl.max(peaks, axis=0)
            rstd = gl.rsqrt(mean_square + eps)
            if QUANT:  # y / s = h (offset + w) rstd / s: the row's gain takes the 1 / s
                scale = gl.maximum(peak * rstd, 1e-30, propagate_nan=tl.PropagateNan.ALL) / QMAX  # _support.row_scale
                if row % PARTS == 0:
                    gl.store(scale_ptr + row // PARTS, scale)
                rstd = rstd / scale
            offset_rstd = w_offset * rstd  # y = h * (w * rstd + offset * rstd)
        # pass 2: normalise, release, store
        y_row = y_ptr + row.to(gl.int64) * y_stride8 * VEC
        for c in range(CHUNKS):
            nxt = ((c + 1) % CHUNKS) * CHUNK  # the last chunk prefetches the next row's first
            if HAS_W:
                if KEEP_W:
                    barrier_not_needed(c, LEAN)  # (as pass 1's)
                    w = _read_chunk(w_ring, c, chunk_layout)
                else:
                    w = _widen(w_next, chunk_layout)
                    w_next = _load_params(w_ptr, nxt, N, GROUPS, EVEN, chunk_layout)
            if HAS_B:
                if KEEP_B:
                    barrier_not_needed(c, LEAN)
                    b = _read_chunk(b_ring, c, chunk_layout)
                else:
                    b = _widen(b_next, chunk_layout)
                    b_next = _load_params(b_ptr, nxt, N, GROUPS, EVEN, chunk_layout)
            buf = (it + c) % X_STAGES
            barrier_not_needed(c, LEAN)
            x = _read_chunk(x_ring, buf, chunk_layout)
            _release(x_empty, buf)  # also fences pass 1's writes of h into the buffer
            if LAYER:
                y = (x - shift) * rstd - centre
                if HAS_W:
                    y = y * w
                if HAS_B:
                    y = y + b
            elif HAS_W:
                y = x * (w * rstd + offset_rstd)
            else:
                y = x * rstd
            if QUANT == 2:  # int8: half away from zero (the conversion truncates); |y| <= 127 up to rounding
                y = gl.where(y >= 0, y + 0.5, y - 0.5)
            y = y.to(y_ptr.dtype.element_ty)  # fp8: to nearest
            if EVEN:
                gl.store(y_row + c * CHUNK + offs, y)
            else:
                gl.store(y_row + c * CHUNK + offs, y, mask=starts < N - c * CHUNK)
        k += 1
    if PARTS > 1:
        softmax_sm90.swap_pairs_done(ws_ptr, cnt_ptr, left, last_row, PARTS, WARPS)


@gluon.jit
def _norm_kernel(x_desc, r_desc, y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, M, N8, y_stride8, h_stride8,
                 eps, w_offset, LAYER: gl.constexpr, HAS_RES: gl.constexpr, HAS_W: gl.constexpr, HAS_B: gl.constexpr,
                 EVEN: gl.constexpr, FLAT: gl.constexpr, CHUNK: gl.constexpr, CHUNKS: gl.constexpr,
                 X_STAGES: gl.constexpr, R_STAGES: gl.constexpr, PARTS: gl.constexpr, QUANT: gl.constexpr,
                 QMAX: gl.constexpr, CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr, LEAN: gl.constexpr,
                 KEEP_W: gl.constexpr, KEEP_B: gl.constexpr):
    """Persistent: consumer 0 is the default partition (num_warps warps), consumer 1 and the 1-warp loaders
    workers. The rings' buffers are [CHUNK / 256, 256]; a descriptor's box is one of their rows, or all of
    them (FLAT). Without a residual r_desc, h_ptr are x's descriptor and y (unused). KEEP_W / KEEP_B: CHUNKS buffers
    each for the (16-bit) weight and bias, beside the rings."""
    WARPS: gl.constexpr = gl.num_warps()
    ROWS: gl.constexpr = CHUNK // x_desc.block_type.shape[1]
    BOX_COLS: gl.constexpr = x_desc.block_type.shape[1]
    x_ring = gl.allocate_shared_memory(x_desc.dtype, [X_STAGES, ROWS, BOX_COLS], x_desc.layout)
    x_ready = gl.allocate_shared_memory(gl.int64, [X_STAGES, 1], mbarrier.MBarrierLayout())
    x_empty = gl.allocate_shared_memory(gl.int64, [X_STAGES, 1], mbarrier.MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(X_STAGES):
        mbarrier.init(x_ready.index(i), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(x_empty.index(i), count=1)  # one elected arrive of a consumer partition
    for i in gl.static_range(2):
        mbarrier.init(turns.index(i), count=1)
    if HAS_RES:
        r_ring = gl.allocate_shared_memory(r_desc.dtype, [R_STAGES, ROWS, BOX_COLS], r_desc.layout)
        r_ready = gl.allocate_shared_memory(gl.int64, [R_STAGES, 1], mbarrier.MBarrierLayout())
        r_empty = gl.allocate_shared_memory(gl.int64, [R_STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(R_STAGES):
            mbarrier.init(r_ready.index(i), count=1)
            mbarrier.init(r_empty.index(i), count=1)
    else:  # placeholders, never touched
        r_ring, r_ready, r_empty = x_ring, x_ready, x_empty
    w_ring, b_ring = x_ring, x_ring  # placeholders unless kept
    if KEEP_W and HAS_W:
        w_ring = gl.allocate_shared_memory(w_ptr.dtype.element_ty, [CHUNKS, ROWS, BOX_COLS], RING_LAYOUT)
    if KEEP_B and HAS_B:
        b_ring = gl.allocate_shared_memory(b_ptr.dtype.element_ty, [CHUNKS, ROWS, BOX_COLS], RING_LAYOUT)
    fence_async_shared()
    if HAS_RES:
        gl.warp_specialize([
            (_consumer, (y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, x_ring, x_ready, x_empty, r_ring,
                         r_ready, r_empty, w_ring, b_ring, turns, M, N8, y_stride8, h_stride8, eps, w_offset, 0,
                         LAYER, HAS_RES, HAS_W, HAS_B, EVEN, CHUNKS, WARPS, PARTS, QUANT, QMAX, LEAN, KEEP_W,
                         KEEP_B)),
            (_consumer, (y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, x_ring, x_ready, x_empty, r_ring,
                         r_ready, r_empty, w_ring, b_ring, turns, M, N8, y_stride8, h_stride8, eps, w_offset, 1,
                         LAYER, HAS_RES, HAS_W, HAS_B, EVEN, CHUNKS, WARPS, PARTS, QUANT, QMAX, LEAN, KEEP_W,
                         KEEP_B)),
            (_loader, (x_desc, x_ring, x_ready, x_empty, M, CHUNKS, X_STAGES, FLAT)),
            (_loader, (r_desc, r_ring, r_ready, r_empty, M, CHUNKS, R_STAGES, FLAT)),
        ], [WARPS, 1, 1], [CONSUMER_REGS, LOADER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, x_ring, x_ready, x_empty, r_ring,
                         r_ready, r_empty, w_ring, b_ring, turns, M, N8, y_stride8, h_stride8, eps, w_offset, 0,
                         LAYER, HAS_RES, HAS_W, HAS_B, EVEN, CHUNKS, WARPS, PARTS, QUANT, QMAX, LEAN, KEEP_W,
                         KEEP_B)),
            (_consumer, (y_ptr, h_ptr, w_ptr, b_ptr, scale_ptr, ws_ptr, cnt_ptr, x_ring, x_ready, x_empty, r_ring,
                         r_ready, r_empty, w_ring, b_ring, turns, M, N8, y_stride8, h_stride8, eps, w_offset, 1,
                         LAYER, HAS_RES, HAS_W, HAS_B, EVEN, CHUNKS, WARPS, PARTS, QUANT, QMAX, LEAN, KEEP_W,
                         KEEP_B)),
            (_loader, (x_desc, x_ring, x_ready, x_empty, M, CHUNKS, X_STAGES, FLAT)),
        ], [WARPS, 1], [CONSUMER_REGS, LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Launch


def config(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
           bias: Optional[torch.Tensor], layer: bool) -> tuple[int, int, int]:
    """(chunk, buffers, residual's buffers) for these [M, N] row views: 8192-element chunks for whole chunks
    and 16-bit parameters, and for LayerNorm contiguous rows too (row boxes spill there), else 4096 (the
    constants' comment says why and what they measured)."""
    N = x.shape[1]
    contiguous = all(t is None or t.stride(0) == N for t in (x, residual))
    if (N % WIDE_CHUNK == 0 and all(t is None or t.element_size() == 2 for t in (weight, bias))
            and (contiguous or not layer)):
        return WIDE_CHUNK, WIDE_BUFFERS, RES_STAGES
    return CHUNK, BUFFERS, RES_STAGES


def supports(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
             bias: Optional[torch.Tensor], y: torch.Tensor, h: Optional[torch.Tensor], layer: bool,
             rings: Optional[tuple[int, int, int]] = None) -> bool:
    """Whether the kernel can take the [M, N] row views (unit column stride) as they are: x and y, and the
    residual and h, as softmax_sm90.supports takes a row view and its output (16-bit, TMA-addressable rows,
    16-byte aligned stores), or a quantized y (RMSNorm: 1-byte elements, 16-byte aligned, a row stride of whole
    8-byte vectors), a row of x that fits x's ring (the residual's streams through its own), and a 16-byte
    aligned weight and bias of any float dtype. rings: (chunk, buffers, residual's buffers), config()'s when
    None."""
    chunk, buffers, res_stages = rings or config(x, residual, weight, bias, layer)
    n_chunks = cdiv(x.shape[1], chunk)
    x_stages = buffers - (res_stages if residual is not None else 0)
    quantized = y.element_size() == 1
    if quantized and (layer or y.stride(0) % 8 or y.data_ptr() % 16):
        return False
    return (softmax_sm90.supports(x, x if quantized else y, chunk, x_stages)
            and (residual is None or softmax_sm90.supports(residual, h, chunk, n_chunks))
            and all(t is None or t.data_ptr() % 16 == 0 for t in (weight, bias)))


def row_parts(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
              bias: Optional[torch.Tensor], y: torch.Tensor, h: Optional[torch.Tensor], layer: bool, max_n: int) -> int:
    """The parts (a power of two, each at most max_n wide) that rows wider than max_n are split into on this path,
    or 0 where they cannot be: a residual up to PARTS_RESIDUAL_MIN_N (but for a quantized y: the kernels it would
    otherwise take hold no quantizing rows), rows that are not contiguous or not a multiple of 8 parts wide, fewer
    than 2 rows of parts an SM, more parts than SMs, or _support.SPLIT_ROWS_ENABLED off (a row's parts wait for
    each other: their programs must all be resident)."""
    M, N = x.shape
    sms = num_sms(x.device.index)
    parts = triton.next_power_of_2(cdiv(N, max_n))
    wide_residual = residual is not None and N <= PARTS_RESIDUAL_MIN_N and y.element_size() != 1
    if not _support.SPLIT_ROWS_ENABLED or wide_residual or parts > sms or M * parts < CONSUMERS * sms:
        return 0
    try:
        views = part_views(parts, x, residual, y, h)
    except ValueError:
        return 0
    return parts if supports(views[0], views[1], weight, bias, views[2], views[3], layer) else 0


def resident_params(weight: Optional[torch.Tensor], bias: Optional[torch.Tensor], chunks: int,
                    x_stages: int) -> tuple[bool, bool]:
    """Whether the weight and the bias are kept in shared memory (RESIDENT_PARAMS: 16-bit ones, CHUNKS buffers each
    taken from x's ring, whose x_stages left must still hold RESIDENT_ROWS rows of CHUNKS): both where they fit, else
    (RESIDENT_ONE) the weight alone, else the bias alone, else neither."""
    if not RESIDENT_PARAMS:
        return False, False
    can = [t is not None and t.element_size() == 2 for t in (weight, bias)]
    present = [t is not None for t in (weight, bias)]
    fits = [x_stages - n * chunks >= RESIDENT_ROWS * chunks for n in (0, 1, 2)]
    if any(can) and can == present and fits[sum(can)]:
        return can[0], can[1]
    if RESIDENT_ONE and fits[1] and any(can):
        return can[0], not can[0]
    return False, False


class _Plan:
    """The launch of _norm_kernel for one call's shapes, strides and dtypes: the first call compiles through
    Gluon's dispatch with checked descriptors; later ones launch the compiled kernel directly."""

    __slots__ = ("sizes", "launch", "rows")

    def __init__(self, x, residual, weight, bias, y, h, layer: bool, programs: int, chunk: int, buffers: int,
                 res_stages: int, parts: int, quant: tuple[int, float], warps: int):
        M, N = x.shape
        rows = [x, x if residual is None else residual]  # the kernel's two descriptors (x's twice without one)
        # whole chunks of contiguous rows: one box a chunk
        flat = N % chunk == 0 and all(t.stride(0) == N for t in rows)
        box = [chunk // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
        views = [([M * N // BOX_COLS, BOX_COLS], [BOX_COLS, 1]) if flat else ([M, N], [t.stride(0), 1]) for t in rows]
        r_stages = res_stages if residual is not None else 0
        keep_w, keep_b = resident_params(weight, bias, cdiv(N, chunk), buffers - r_stages)
        kept = (keep_w + keep_b) * cdiv(N, chunk)
        self.sizes = (M, N // 8, y.stride(0) // 8, (h if h is not None else y).stride(0) // 8)
        self.rows = M // parts if parts > 1 else 0  # the rows whose parts exchange statistics
        constexprs = dict(LAYER=layer, HAS_RES=residual is not None, HAS_W=weight is not None, HAS_B=bias is not None,
                          EVEN=N % chunk == 0, FLAT=flat, CHUNK=chunk, CHUNKS=cdiv(N, chunk),
                          X_STAGES=buffers - r_stages - kept, R_STAGES=r_stages, PARTS=parts, QUANT=quant[0],
                          QMAX=quant[1], CONSUMER_REGS=consumer_regs(CONSUMERS, warps),
                          LOADER_REGS=LOADER_REGS, LEAN=softmax_sm90.LEAN_BARRIERS, KEEP_W=keep_w,
                          KEEP_B=keep_b)
        self.launch = GluonLaunch(_norm_kernel, (min(programs, M),), [(*v, box, RING_LAYOUT) for v in views],
                                  constexprs, x.device.index, warps)

    def __call__(self, x, residual, weight, bias, y, h, scale, eps: float, offset: float) -> None:
        # absent tensors: x's descriptor twice, y for h, x for the weight, bias and scale, y for the exchange's
        # (never touched)
        exchange = softmax_sm90.exchange_buffers(x.device, self.rows, self.sizes[0], y)
        self.launch((x, residual if residual is not None else x), y, h if h is not None else y,
                    weight if weight is not None else x, bias if bias is not None else x,
                    scale if scale is not None else x, *exchange, *self.sizes, eps, offset)


_plans: dict[tuple, _Plan] = {}


def norm_rows(x: torch.Tensor, residual: Optional[torch.Tensor], weight: Optional[torch.Tensor],
              bias: Optional[torch.Tensor], y: torch.Tensor, h: Optional[torch.Tensor], eps: float, offset: float,
              layer: bool, programs: int, rings: Optional[tuple[int, int, int]] = None, parts: int = 1,
              scale: Optional[torch.Tensor] = None, quant: tuple[int, float] = (0, 1.0),
              warps: Optional[int] = None) -> None:
    """LayerNorm (layer) or RMSNorm (offset: rms_norm's) of each row of the [M, N] view x, or of
    h <- x + residual, into y; `programs` persistent programs (one per SM); supports(...) must hold. y may
    alias x and h the residual (the in-place ops). rings: (chunk, buffers, residual's buffers), config()'s when
    None (the experiment, benchmarks/exp_gluon_norms.py, varies them). parts > 1: contiguous rows (x, y, and the
    residual and h) split into `parts` parts, each a program's, that merge their statistics (part_views); programs
    is then rounded down to a multiple of parts. quant (RMSNorm: _support.QUANT_FORMATS' id and QMAX of y's
    1-byte dtype): each row's scale into scale [M] (fp32) and y / scale into y. warps: each consumer partition's
    (CONSUMER_WARPS when None)."""
    warps = warps or CONSUMER_WARPS
    if parts > 1:
        if programs < parts:
            raise ValueError(f"parts={parts}: at least as many programs, not {programs}")
        x, residual, y, h = part_views(parts, x, residual, y, h)
        programs -= programs % parts
    chunk, buffers, res_stages = rings or config(x, residual, weight, bias, layer)
    key = (x.device.index, x.dtype, *x.shape, x.stride(0), y.stride(0), layer, programs, chunk, buffers, parts,
           None if residual is None else (residual.stride(0), h.stride(0), res_stages),
           None if weight is None else weight.dtype, None if bias is None else bias.dtype, y.dtype, quant,
           softmax_sm90.LEAN_BARRIERS, RESIDENT_PARAMS, RESIDENT_ROWS, RESIDENT_ONE, warps)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 4096:  # shapes that vary without end
            _plans.clear()
        plan = _plans[key] = _Plan(x, residual, weight, bias, y, h, layer, programs, chunk, buffers, res_stages, parts,
                                   quant, warps)
    plan(x, residual, weight, bias, y, h, scale, eps, offset)
