r"""Row reductions (sum, sum of squares, max) of rows streamed through shared memory, on Hopper (sm_90) in Gluon:
one of the paths of rooftop.row_sum / row_mean / row_norm / row_max (ops/reductions.py chooses it and holds the
maths; this file holds the kernel and its launch).

Why: the Triton paths keep at most a row (on chip) or two 16 KB tiles (looped) of loads in flight a program, and
between a program's rows its SM's loads stop: 87.5-89.4% of the copy by do_bench at N = 65536-262144 on the H200
(results, session 44), where 16384-wide rows on chip reach 95. A reduction holds nothing it has read: each chunk
can leave shared memory as soon as it is folded, so a ring of chunks filled by TMA keeps every SM's loads in flight
across rows, for rows of any width (no parts, no exchange).

The kernel: one persistent program per SM walks rows pid, pid + G, .. (G programs). gl.warp_specialize splits it
into softmax_sm90's 1-warp TMA loader (each row's CHUNK-element pieces, in the program's order, into a ring of
STAGES buffers; ready / empty mbarriers per buffer) and one consumer partition (the launch's warps), which waits
for each chunk as it lands, reads it into registers (softmax_sm90._read_chunk: thread t of warp w holds 8-element
groups w * 32 + t, + 32 * WARPS, ..), releases its buffer at once (softmax_sm90._release) and folds it into one fp32
accumulator per group (in-thread: a sum, a sum of squares or a NaN-keeping max). At the row's end the groups
reduce across the partition and the row's total, finished (mean: / N; norm: sqrt), is stored in out's dtype.
Protocol: the one consumer waits for every slot of the program in order, so use u - 1 of a buffer has landed
before it waits for use u (the parity waits hold, as for softmax_sm90's rows past the ring); no deadlock: a slot
waits only for the release of the slot STAGES before it, which the consumer gives without waiting on anything
later.
Columns past N: TMA reads 0, which sums leave unchanged; max masks those groups to -inf (N is a multiple of 8).
Traffic: x read once (M * N * itemsize), one result a row written.

Needs (softmax_sm90.supports with past_ring): fp16 or bf16 rows of unit column stride, N a multiple of 8, a
16-byte aligned base and row stride; out contiguous [M].
"""
from __future__ import annotations

import torch
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier

from rooftop.ops._support import GluonLaunch
from rooftop.ops.softmax_sm90 import (BOX_COLS, CHUNK, LOADER_REGS, RING_LAYOUT, STAGES, VEC, _loader, _read_chunk,
                                      _release, barrier_not_needed)

LEAN_BARRIERS = True  # softmax_sm90.barrier_not_needed: the partition barriers Membar adds that the ring does not need
BATCH = 1  # chunks waited for, read and released together (where they divide the row's chunks)
FENCE = True  # the consumer's fence.proxy.async before releasing buffers


@gluon.jit
def _max_keep_nan(a, b):
    """max.NaN: NaN wins, as torch.amax."""
    return gl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@gluon.jit
def _consumer(out_ptr, ring, ready, empty, M, N8, REDUCTION: gl.constexpr, FINISH: gl.constexpr,
              EVEN: gl.constexpr, CHUNKS: gl.constexpr, BATCH: gl.constexpr, FENCE: gl.constexpr,
              WARPS: gl.constexpr, LEAN: gl.constexpr):
    """The program's rows: BATCH chunks at a time waited for, read, released (one barrier), folded; the row's
    total finished and stored."""
    RING: gl.constexpr = ring.shape[0]
    CHUNK_N: gl.constexpr = ring.shape[1] * ring.shape[2]
    GROUPS: gl.constexpr = CHUNK_N // VEC
    chunk_layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [WARPS, 1], [1, 0])
    group_layout: gl.constexpr = gl.SliceLayout(1, chunk_layout)
    group_starts = gl.arange(0, GROUPS, layout=group_layout) * VEC
    N = N8 * VEC
    it = 0  # the program's slots so far
    for row in range(gl.program_id(0), M, gl.num_programs(0)):
        if REDUCTION == "max":
            acc = gl.full([GROUPS], -float("inf"), gl.float32, group_layout)
        else:
            acc = gl.zeros([GROUPS], gl.float32, group_layout)
        for c in range(0, CHUNKS, BATCH):
            xs = ()
            for j in gl.static_range(BATCH):
                barrier_not_needed(c, LEAN)
                mbarrier.wait(ready.index((it + j) % RING), ((it + j) // RING) & 1)
                xs = xs + (_read_chunk(ring, (it + j) % RING, chunk_layout),)
            if FENCE:
                fence_async_shared()
            gl.thread_barrier()
            for j in gl.static_range(BATCH):
                mbarrier.arrive(empty.index((it + j) % RING))
            for j in gl.static_range(BATCH):
                x = xs[j]
                if REDUCTION == "max":
                    top = gl.reduce(x, 1, _max_keep_nan)
                    if not EVEN:  # the groups past N read 0
                        top = gl.where(group_starts < N - (c + j) * CHUNK_N, top, -float("inf"))
                    acc = _max_keep_nan(acc, top)
                elif REDUCTION == "sumsq":
                    acc += gl.sum(x * x, axis=1)
                else:
                    acc += gl.sum(x, axis=1)
            it += BATCH
        if REDUCTION == "max":
            total = gl.reduce(acc, 0, _max_keep_nan)
        else:
            total = gl.sum(acc, axis=0)
        if FINISH == "mean":
            total = total / N
        elif FINISH == "sqrt":
            total = gl.sqrt(total)
        gl.store(out_ptr + row, total.to(out_ptr.dtype.element_ty))


@gluon.jit
def _reduce_kernel(x_desc, out_ptr, M, N8, REDUCTION: gl.constexpr, FINISH: gl.constexpr, EVEN: gl.constexpr,
                   FLAT: gl.constexpr, CHUNK_N: gl.constexpr, CHUNKS: gl.constexpr, RING: gl.constexpr,
                   BATCH: gl.constexpr, FENCE: gl.constexpr, LOADER_REGS: gl.constexpr, LEAN: gl.constexpr):
    """Persistent: the consumer is the default partition (num_warps warps), the 1-warp loader a worker. The ring's
    buffers are [CHUNK_N / 256, 256]; x_desc's box is one of their rows, or all of them (FLAT)."""
    WARPS: gl.constexpr = gl.num_warps()
    ring = gl.allocate_shared_memory(x_desc.dtype, [RING, CHUNK_N // x_desc.block_type.shape[1],
                                                    x_desc.block_type.shape[1]], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [RING, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [RING, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(RING):
        mbarrier.init(ready.index(i), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(empty.index(i), count=1)  # the consumer's one arrive
    fence_async_shared()
    gl.warp_specialize([
        (_consumer, (out_ptr, ring, ready, empty, M, N8, REDUCTION, FINISH, EVEN, CHUNKS, BATCH, FENCE, WARPS,
                       LEAN)),
        (_loader, (x_desc, ring, ready, empty, M, CHUNKS, RING, FLAT)),
    ], [1], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Launch

_plans: dict[tuple, GluonLaunch] = {}


def reduce_rows(x: torch.Tensor, out: torch.Tensor, reduction: str, finish: str, programs: int, warps: int) -> None:
    """out[r] = finish(reduction of row r) for the [M, N] view x (softmax_sm90.supports(x, x, past_ring=True)) into
    contiguous out [M], on min(M, programs) persistent programs of `warps` consumer warps."""
    M, N = x.shape
    chunks = -(-N // CHUNK)
    batch = BATCH if chunks % BATCH == 0 else 1
    key = (x.device.index, x.dtype, M, N, x.stride(0), out.dtype, reduction, finish, programs, warps, batch, FENCE,
           LEAN_BARRIERS)
    launch = _plans.get(key)
    if launch is None:
        if len(_plans) > 4096:  # shapes that vary without end
            _plans.clear()
        flat = N % CHUNK == 0 and x.stride(0) == N  # whole chunks of contiguous rows: one box a chunk
        box = [CHUNK // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
        view = ([M * N // BOX_COLS, BOX_COLS], [BOX_COLS, 1]) if flat else ([M, N], [x.stride(0), 1])
        constexprs = dict(REDUCTION=reduction, FINISH=finish, EVEN=N % CHUNK == 0, FLAT=flat, CHUNK_N=CHUNK,
                          CHUNKS=chunks, RING=STAGES, BATCH=batch, FENCE=FENCE, LOADER_REGS=LOADER_REGS, LEAN=LEAN_BARRIERS)
        launch = _plans[key] = GluonLaunch(_reduce_kernel, (min(programs, M),), [(*view, box, RING_LAYOUT)],
                                           constexprs, x.device.index, warps)
    launch((x,), out, M, N // 8)
