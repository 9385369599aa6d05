r"""Softmax / log-softmax of rows staged in shared memory, on Hopper (sm_90) in Gluon: one of the paths of
rooftop.softmax (ops/softmax.py chooses it; this file holds the kernel and its launch).

Why: at N = 32768 / 65536 rooftop's Triton kernels load, reduce and store in sequence (on-chip path) or
re-read the row from L2 (looped path), 78-81 % of a copy on the H200. A 16-bit row of 32768 or 65536 fits in
shared memory with room for the next: a TMA loader keeps reading while the rows in hand are reduced and
written, and each element comes from DRAM once (benchmarks/exp_gluon_softmax.py tells how this kernel was
arrived at and measures its variants).

The kernel: one persistent program per SM walks rows pid, pid + G, .. (G programs). gl.warp_specialize splits
it into
- a 1-warp loader: TMA copies of each row's CHUNK-element pieces, in the program's row order, into a ring of
  STAGES chunk buffers; one "ready" mbarrier per buffer (expect-tx bytes) and one "empty" (the release);
- CONSUMERS consumer partitions of CONSUMER_WARPS warps taking the program's rows in turn (consumer w: the
  program's rows w, w + CONSUMERS, ..). Per row, pass 1 waits for each chunk and folds it into a running
  (max, sum of exp) per group of 8 adjacent elements (one thread's 16-byte vector: no shuffle inside a chunk);
  the groups merge once per row. Pass 2 reads the chunks again from shared memory, releases each one once
  its values are in registers (a barrier of the partition's warps, then one arrive) and stores the result with
  16-byte stores straight from registers. Two consumers overlap one's pass 2 with the other's pass 1: a single
  4-8 warp consumer running both passes in sequence is issue- and latency-bound (85-89 % of copy).
Chunks are numbered it = 0, 1, .. in the program's row order; chunk it goes to buffer it % STAGES as that
buffer's use u = it // STAGES: the consumer waits ready with parity u & 1, the loader waits empty with parity
(u & 1) ^ 1 (a fresh barrier passes parity 1). A parity wait is right only when its barrier is at most one
phase away. The loader side holds: a buffer's uses are filled and released in order. The consumer side needs
use u - 1 of a buffer to have landed before a consumer waits for use u; with two consumers use u - 1 may be the
other's chunk. A "turn" mbarrier per consumer orders the pass 1s: a consumer starts pass 1 of a row once the
other has finished pass 1 of the row before (arrive on its turn barrier; parity (k + w + 1) & 1 for consumer
w's k-th row), so every chunk of earlier rows has landed, and within the row the consumer has waited for the
earlier chunks itself. No deadlock while a row fits the ring (CHUNKS <= STAGES): the loads of row r wait only
for releases of earlier rows, and a pass 2 waits for nothing.

Rows: the descriptor views x as [M, N] with x's row stride and a [1, 256] box (TMA's widest side), CHUNK / 256
copies a chunk; columns past N read 0 and pass 1 masks them to -inf. Contiguous rows that are whole chunks
(N % CHUNK == 0) take one box a chunk from the flat [M * N / 256, 256] view instead. Needs (supports()): fp16 or
bf16, N a multiple of 8, a 16-byte aligned base and row stride, CHUNKS <= STAGES.

Semantics as softmax.py: a group's max is -inf while it has no mass, and its exponentials are then taken
against 0 (not -inf - -inf = nan); NaN or +inf in a row makes its sum NaN, an all -inf row has max -inf and
sum 0, so its outputs are NaN (log: -inf - (-inf + log 0)).
"""
from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from rooftop.ops._support import GluonLaunch, cdiv

CHUNK = 8192  # elements per ring buffer (16 KB)
STAGES = 13  # ring buffers: 208 KB of the 227 KB a program may use
CONSUMERS = 2
CONSUMER_WARPS = 4
LOADER_REGS = 24
BOX_COLS = 256  # TMA's widest box side
VEC = gl.constexpr(8)  # 16-bit elements in one thread's 16-byte vector: one (max, sum) group
LOG2E = gl.constexpr(1.4426950408889634)
LN2 = gl.constexpr(0.6931471805599453)
# chunk buffers unswizzled: the consumer reads a chunk as flat row-major groups of 8
RING_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2)


@gluon.jit
def _loader(x_desc, ring, ready, empty, M, CHUNKS: gl.constexpr, STAGES: gl.constexpr, FLAT: gl.constexpr):
    """Fills the ring in the program's (row, chunk) order: chunk `it` into buffer it % STAGES."""
    BOX_ROWS: gl.constexpr = x_desc.block_type.shape[0]
    BOX_COLS: gl.constexpr = x_desc.block_type.shape[1]
    BOXES: gl.constexpr = ring.shape[1] // BOX_ROWS  # TMA copies a chunk
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    it = 0
    for row in range(gl.program_id(0), M, gl.num_programs(0)):
        for c in range(CHUNKS):
            buf = it % STAGES
            mbarrier.wait(empty.index(buf), ((it // STAGES) & 1) ^ 1)
            # out-of-bounds columns are filled (with 0) and counted all the same
            mbarrier.expect(ready.index(buf), BOXES * x_desc.block_type.nbytes)
            if FLAT:
                tma.async_copy_global_to_shared(x_desc, [(row * CHUNKS + c) * BOX_ROWS, 0], ready.index(buf),
                                                ring.index(buf))
            else:
                for j in gl.static_range(BOXES):
                    tma.async_copy_global_to_shared(x_desc, [row, c * CHUNK + j * BOX_COLS],
                                                    ready.index(buf), ring.index(buf).slice(j, 1))
            it += 1


@gluon.jit
def _read_chunk(ring, buf, chunk_layout: gl.constexpr):
    """Ring buffer `buf` as fp32 [GROUPS, 8]: the unswizzled [rows, 256] buffer is plain row-major, the same
    bytes as [GROUPS, 8]. bf16 is read as 32-bit words of two values, widened by a shift and a mask (one
    instruction a value; the plain conversion takes 1.5)."""
    GROUPS: gl.constexpr = ring.shape[1] * ring.shape[2] // VEC
    flat_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    if ring.dtype == gl.bfloat16:
        word_layout: gl.constexpr = gl.BlockedLayout([1, VEC // 2], [32, 1], chunk_layout.warps_per_cta, [1, 0])
        w = ring.index(buf)._reinterpret(gl.int32, [GROUPS, VEC // 2], flat_layout).load(word_layout)
        lo = (w << 16).to(gl.float32, bitcast=True)  # the word's first value (little-endian)
        hi = (w & -65536).to(gl.float32, bitcast=True)
        return gl.convert_layout(gl.join(lo, hi).reshape([GROUPS, VEC]), chunk_layout)
    x = ring.index(buf)._reinterpret(ring.dtype, [GROUPS, VEC], flat_layout).load(chunk_layout)
    return x.to(gl.float32)


@gluon.jit
def _fold_chunk(x, m, s):
    """Online (max, sum of exp) per 8-element group, updated by one chunk (all in-thread). While a group's
    max is still -inf it has no mass yet: rescale against 0, not -inf (nan)."""
    m_new = gl.maximum(m, gl.max(x, axis=1))
    ref = gl.where(m_new == -float("inf"), 0.0, m_new) * LOG2E
    p = gl.exp2(x * LOG2E - gl.expand_dims(ref, 1))  # one FFMA + one MUFU.EX2 an element
    return m_new, s * gl.exp2(m * LOG2E - ref) + gl.sum(p, axis=1)


@gluon.jit
def _consumer(y_ptr, ring, ready, empty, turns, M, N8, y_stride8, WHO: gl.constexpr, LOG: gl.constexpr,
              EVEN: gl.constexpr, CHUNKS: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
              WARPS: gl.constexpr):
    """Consumer WHO's rows: pass 1 (online max / sum) over the chunks as they land, pass 2 (normalise,
    release, store) over the same chunks in shared memory. N8, y_stride8: N and y's row stride in 8-element
    vectors (so that the compiler knows stores and masks come in whole 16-byte vectors)."""
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    GROUPS: gl.constexpr = CHUNK // VEC
    # thread t of warp w holds groups w * 32 + t, + 32 * WARPS, ..: a warp reads 512 contiguous bytes of
    # shared memory per vector load (conflict-free), and stores 512 contiguous bytes
    chunk_layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [WARPS, 1], [1, 0])
    group_layout: gl.constexpr = gl.SliceLayout(1, chunk_layout)
    offs = (gl.expand_dims(gl.arange(0, GROUPS, layout=group_layout), 1) * VEC
            + gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, chunk_layout)), 0))
    N = N8 * VEC
    programs = gl.num_programs(0)
    k = 0  # this consumer's rows so far
    for row in range(gl.program_id(0) + WHO * programs, M, CONSUMERS * programs):
        it = (k * CONSUMERS + WHO) * CHUNKS  # the program's number of this row's first chunk
        if CONSUMERS > 1:  # the other consumer has finished pass 1 of the row before (see the docstring)
            mbarrier.wait(turns.index(1 - WHO), (k + WHO + 1) & 1)
        m = gl.full([GROUPS], -float("inf"), gl.float32, group_layout)
        s = gl.zeros([GROUPS], gl.float32, group_layout)
        for c in range(CHUNKS):
            buf = (it + c) % STAGES
            mbarrier.wait(ready.index(buf), ((it + c) // STAGES) & 1)
            x = _read_chunk(ring, buf, chunk_layout)
            if not EVEN:  # TMA filled the columns past N with 0
                x = gl.where(offs < N - c * CHUNK, x, -float("inf"))
            m, s = _fold_chunk(x, m, s)
        if CONSUMERS > 1:
            mbarrier.arrive(turns.index(WHO))
        row_max = gl.max(m, axis=0)
        ref = gl.where(row_max == -float("inf"), 0.0, row_max)
        row_sum = gl.sum(s * gl.exp2((m - ref) * LOG2E), axis=0)
        # softmax: y = exp2(x log2e - (max log2e + log2 sum)), one FFMA + one MUFU.EX2 an element
        # log_softmax: y = x - (max + ln sum)
        if LOG:
            shift = row_max + gl.log2(row_sum) * LN2
        else:
            shift = row_max * LOG2E + gl.log2(row_sum)
        y_row = y_ptr + row.to(gl.int64) * y_stride8 * VEC
        for c in range(CHUNKS):
            buf = (it + c) % STAGES
            x = _read_chunk(ring, buf, chunk_layout)
            gl.thread_barrier()  # every warp of the partition has read the buffer before the one arrive
            mbarrier.arrive(empty.index(buf))
            if LOG:
                y = (x - shift).to(y_ptr.dtype.element_ty)
            else:
                y = gl.exp2(x * LOG2E - shift).to(y_ptr.dtype.element_ty)
            if EVEN:
                gl.store(y_row + c * CHUNK + offs, y)
            else:
                gl.store(y_row + c * CHUNK + offs, y, mask=offs < N - c * CHUNK)
        k += 1


@gluon.jit
def _softmax_kernel(x_desc, y_ptr, M, N8, y_stride8, LOG: gl.constexpr, EVEN: gl.constexpr, FLAT: gl.constexpr,
                    CHUNK: gl.constexpr, CHUNKS: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr,
                    CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr):
    """Persistent: consumer 0 is the default partition (num_warps warps), the others and the 1-warp loader
    workers. The ring's buffers are [CHUNK / 256, 256]; x_desc's box is one of their rows, or all of them
    (FLAT)."""
    WARPS: gl.constexpr = gl.num_warps()
    BOX_COLS: gl.constexpr = x_desc.block_type.shape[1]
    ring = gl.allocate_shared_memory(x_desc.dtype, [STAGES, CHUNK // BOX_COLS, BOX_COLS], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turns = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(empty.index(i), count=1)  # one elected arrive of a consumer partition
    for i in gl.static_range(CONSUMERS):
        mbarrier.init(turns.index(i), count=1)
    fence_async_shared()
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer, (y_ptr, ring, ready, empty, turns, M, N8, y_stride8, 0, LOG, EVEN, CHUNKS, STAGES, 2, WARPS)),
            (_consumer, (y_ptr, ring, ready, empty, turns, M, N8, y_stride8, 1, LOG, EVEN, CHUNKS, STAGES, 2, WARPS)),
            (_loader, (x_desc, ring, ready, empty, M, CHUNKS, STAGES, FLAT)),
        ], [WARPS, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (y_ptr, ring, ready, empty, turns, M, N8, y_stride8, 0, LOG, EVEN, CHUNKS, STAGES, 1, WARPS)),
            (_loader, (x_desc, ring, ready, empty, M, CHUNKS, STAGES, FLAT)),
        ], [1], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Launch


def consumer_regs(consumers: int, warps: int) -> int:
    """setmaxnreg asked for the worker consumer: the 64K registers less the loader's warp group, shared evenly
    (at most 240). Triton gives the default partition (consumer 0) what is left: 240 / 240 for 2 x 4 warps,
    104 / 120 for 2 x 8 (benchmarks/exp_gluon_softmax.py --compile-only)."""
    return min(240, (65536 - 128 * LOADER_REGS) // (consumers * warps * 32) // 8 * 8)


def supports(x: torch.Tensor, out: torch.Tensor, chunk: int = CHUNK, stages: int = STAGES) -> bool:
    """Whether the kernel can take the [M, N] row views x (unit column stride) and out as they are: 16-bit,
    TMA-addressable rows (16-byte aligned base and row stride, N a multiple of 8, rows that do not overlap),
    out's rows 16-byte aligned too, and a row that fits the ring."""
    M, N = x.shape
    return (x.dtype in (torch.float16, torch.bfloat16) and out.dtype == x.dtype and M > 0 and N % 8 == 0
            and x.stride(0) % 8 == 0 and x.stride(0) >= N and x.data_ptr() % 16 == 0 and out.stride(0) % 8 == 0
            and out.data_ptr() % 16 == 0 and cdiv(N, chunk) <= stages)


class _Plan:
    """The launch of _softmax_kernel for one call's shapes and strides: the first call compiles through
    Gluon's dispatch with a checked descriptor; later ones launch the compiled kernel directly."""

    __slots__ = ("sizes", "launch")

    def __init__(self, x: torch.Tensor, out: torch.Tensor, log: bool, chunk: int, stages: int, consumers: int,
                 warps: int, programs: int, flat: bool):
        M, N = x.shape
        flat = flat and N % chunk == 0 and x.stride(0) == N  # whole chunks of contiguous rows: one box a chunk
        box = [chunk // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
        view = ([M * N // BOX_COLS, BOX_COLS], [BOX_COLS, 1]) if flat else ([M, N], [x.stride(0), 1])
        self.sizes = (M, N // 8, out.stride(0) // 8)
        constexprs = dict(LOG=log, EVEN=N % chunk == 0, FLAT=flat, CHUNK=chunk, CHUNKS=cdiv(N, chunk), STAGES=stages,
                          CONSUMERS=consumers, CONSUMER_REGS=consumer_regs(consumers, warps), LOADER_REGS=LOADER_REGS)
        self.launch = GluonLaunch(_softmax_kernel, (min(programs, M),), [(*view, box, RING_LAYOUT)], constexprs,
                                  x.device.index, warps)

    def __call__(self, x: torch.Tensor, out: torch.Tensor) -> None:
        self.launch((x,), out, *self.sizes)


_plans: dict[tuple, _Plan] = {}


def softmax_rows(x: torch.Tensor, out: torch.Tensor, log: bool, programs: int, chunk: int = CHUNK, stages: int = STAGES,
                 consumers: int = CONSUMERS, warps: int = CONSUMER_WARPS, flat: bool = True) -> None:
    """Softmax (log: log_softmax) of each row of the [M, N] view x into out, `programs` persistent programs
    (one per SM); supports(x, out) must hold. flat=False keeps the [1, 256] boxes where the flat view would
    apply (benchmarks/exp_gluon_softmax.py measures both)."""
    key = (x.device.index, x.dtype, *x.shape, x.stride(0), out.stride(0), log, programs, chunk, stages, consumers,
           warps, flat)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 4096:  # shapes that vary without end
            _plans.clear()
        plan = _plans[key] = _Plan(x, out, log, chunk, stages, consumers, warps, programs, flat)
    plan(x, out)
