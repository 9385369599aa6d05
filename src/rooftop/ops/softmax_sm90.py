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
Ring slots are numbered it = 0, 1, .. in the program's order (a row's slots: its chunks, then for a row past
the ring the re-read chunks, below); slot it goes to buffer it % STAGES as that buffer's use u = it // STAGES:
the consumer waits ready with parity u & 1, the loader waits empty with parity (u & 1) ^ 1 (a fresh barrier
passes parity 1). A parity wait is right only when its barrier is at most one phase away. The loader side
holds: a buffer's uses are filled and released in order. The consumer side needs use u - 1 of a buffer to
have landed before a consumer waits for use u; with two consumers use u - 1 may be the other's chunk. A "turn"
mbarrier per consumer orders the pass 1s: a consumer starts pass 1 of a row once the other has finished pass 1
of the row before (arrive on its turn barrier; parity (k + w + 1) & 1 for consumer w's k-th row), so every
chunk of earlier rows has landed, and within the row the consumer has waited for the earlier chunks itself.
No deadlock while a row fits the ring (CHUNKS <= STAGES): the loads of row r wait only for releases of earlier
rows, and a pass 2 waits for nothing.
Barriers: the release's barrier is the only one the ring needs in a consumer's chunk loops. Triton 3.6's
shared-memory analysis (Membar) also puts one before every mbarrier wait that follows another on the ring's
barrier array (a warp could otherwise be two phases behind another) and one before every read of the ring that
follows an arrive; neither is needed here: a buffer is refilled only after all of the partition's warps have passed
its release's barrier, so no warp can be a phase behind on a buffer it waits for, and the buffer read after an
arrive is not the released one. barrier_not_needed marks those spots and the launch's PTX drops the barrier that
follows each mark (_support.drop_marked_barriers): 1-3 partition barriers a chunk fewer, LEAN_BARRIERS the switch.
H200, bf16, GPU time, % of copy gained (logs/h200-2026-12-01-s17/exp-lean-barriers.log, at 32768-262144):
layer_norm +2.4-2.7, quantizing add_rms_norm +1.3-2.7, rms_norm +0.3-1.0, softmax 0.

Rows past the ring (CHUNKS > STAGES; 16-bit rows over 208 KB, N > 106496): one consumer (8 warps), which keeps
the row's last KEEP chunks in the ring and has its first HEAD = CHUNKS - KEEP read twice. The loader streams a
row's CHUNKS chunks, then its head again, newest chunk first (HEAD more slots); pass 1 folds every chunk and
releases the head's at once; pass 2 writes the kept tail (releasing it), then each re-read as it lands. The
re-reads are issued as soon as buffers free, right behind the row's last chunk, while the head is still among
the newest data in L2; with one consumer a row is read at the SM's full pace, in about half the time two
consumers sharing the SM would take; the output stores ask L2 to evict them first. Model: L2 keeps the last
~50 MB read; 132 programs, each reading about half the time, read 132 x 16 KB / 2 ~ 1 MB while one of them
reads or writes a chunk. Head chunk c (re-read i = HEAD - 1 - c-th) waits for the CHUNKS - 1 - c chunks after
it and, past the 3 buffers free at the row's end, i - 3 chunk writes: at most ~18 MB at N = 131072 (16 chunks,
HEAD 6: every re-read hits), ~53 MB at 262144 (32, HEAD 22: the oldest chunk or two miss). Traffic:
2 * M * N * itemsize from DRAM plus the misses, against the Triton looped kernel's 3 * M * N * itemsize at
262144 (its second pass comes from DRAM there).
Protocol: one consumer waits for every slot of the program in order (pass 1 the chunks, pass 2 the re-reads;
the kept tail was waited for in pass 1), so use u - 1 of a buffer has always landed before it waits for use u,
and the parity waits hold without turns. No deadlock for 1 <= KEEP <= STAGES: slot j lands once slot
j - STAGES is released; a head chunk and a re-read are released once they and the slots before them have
landed, a kept chunk once its row's last chunk has; for j - STAGES kept, its row's last chunk comes at most
KEEP - 1 <= STAGES - 1 slots after it, before j. So every slot's landing waits only on landings of earlier
slots (benchmarks/exp_gluon_softmax.py --compile-only models it, and finds the deadlock at KEEP = STAGES + 1).
Two consumers would break the parity argument: the slot before a buffer's next chunk may be the other
consumer's re-read, which the turn (taken at the end of pass 1) does not cover (the model finds the stale
wait). KEEP = STAGES - WIDE_STREAM = 10 leaves 3 buffers (48 KB) to prefetch the next row while the tail is
written.

Rows in parts (PARTS > 1; softmax.py chooses them for contiguous rows past the ring): the launch views x and y as
[M * PARTS, N / PARTS] (part_views), so that each part is a row of the kernel above, in the ring with two consumers,
and rounds the programs G down to a multiple of PARTS. Part p of row r is the kernel's row q = r PARTS + p, taken
by program q % G at its step q // G: G % PARTS == 0 puts a row's parts at the same step of PARTS programs (and
always part pid % PARTS in a program). Between pass 1 and pass 2 each part's consumer calls swap_pairs: its first
thread swaps the part's (max, sum) into the part's int64 word (relaxed; the max's bits low, the sum's with the sign
bit flipped high, so that no pair is the word 0, which marks an empty word) and the partition's first PARTS threads
poll the row's PARTS words (relaxed) until none is empty; the values come with the poll, merged as the groups of a
row merge. No fence is needed: the word is its own flag and nothing else is published. The first thread then adds 1
to the row's counter (relaxed) and, a row later (once the count has long come back), the row's last part to leave
(PARTS - 1 before it) empties the row's words and counter, so the arrival counters that hold them stay zeroed
between launches (a row's words are polled only before its parts leave). The turn is handed on before the exchange,
so the other consumer's pass 1 runs while this one waits. It replaced a store of the pair, an arrival atomic
(acq_rel: a GPU-scope fence behind the thread's pending stores, then an L1 invalidation), acquire polls, loads of the
pairs and a leaving atomic whose count was waited for at once: H200, bf16, % of a same-run copy by do_bench, swap_pairs
/ that (logs/h200-2026-12-04-s46/call-e, benchmarks/exp_part_exchange.py): softmax 87.1 / 81.2, 87.1 / 80.0, 86.1 /
78.4 at 131072 / 262144 / 1048576, log_softmax 89.7 / 83.6, 88.0 / 82.0, 89.3 / 77.9; quantizing add + RMSNorm 93.3 /
90.6 at 65536; LayerNorm level (79.0 / 78.5 at 131072). No deadlock while every program is resident (one an SM: the
ring's shared memory; G <= the SMs; _support.SPLIT_ROWS_ENABLED turns the parts off where an MPS limit or a green
context would break that): by induction on the step k, the exchanges of step k wait only for the pass 1s of step k
of other programs, which wait for their ring's releases by earlier steps. Traffic: 2 * M * N * itemsize, plus an
8-byte word, PARTS 8-byte polls and an atomic a part.

Rows: the descriptor views x as [M, N] with x's row stride and a [1, 256] box (TMA's widest side), CHUNK / 256
copies a chunk; columns past N read 0 and pass 1 masks them to -inf. Contiguous rows that are whole chunks
(N % CHUNK == 0) take one box a chunk from the flat [M * N / 256, 256] view instead. Needs (supports()): fp16 or
bf16, N a multiple of 8, a 16-byte aligned base and row stride, CHUNKS <= STAGES (past_ring=True: any width).

Semantics as softmax.py: a group's max is -inf while it has no mass, and its exponentials are then taken
against 0 (not -inf - -inf = nan); NaN or +inf in a row makes its sum NaN, an all -inf row has max -inf and
sum 0, so its outputs are NaN (log: -inf - (-inf + log 0)).
"""
from __future__ import annotations

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from rooftop.ops._support import BARRIER_MARK, GluonLaunch, cdiv, exchange_words, pair_values, pair_word

CHUNK = 8192  # elements per ring buffer (16 KB)
STAGES = 13  # ring buffers: 208 KB of the 227 KB a program may use
CONSUMERS = 2
CONSUMER_WARPS = 4
# rows past the ring: one consumer partition (the protocol allows no more) of WIDE_WARPS warps, keeping all but
# WIDE_STREAM buffers' worth of the row's tail (the docstring says why). Measured (H200, 2026-12-01, exp_gluon_
# softmax.py run 3): keeping 10 / 12 / 6 of the 13 buffers 77.3 / 77.3 / 76.2% of copy at 131072, 69.0 / 68.9
# / 68.2% at 262144
WIDE_WARPS, WIDE_STREAM = 8, 3
LOADER_REGS = 24
BOX_COLS = 256  # TMA's widest box side
VEC = gl.constexpr(8)  # 16-bit elements in one thread's 16-byte vector: one (max, sum) group
LOG2E = gl.constexpr(1.4426950408889634)
LN2 = gl.constexpr(0.6931471805599453)
# barrier_not_needed's mark; LEAN_BARRIERS False keeps Membar's barriers (an A/B switch for the ring kernels)
MARK_ASM = gl.constexpr("mov.b32 $0, $1; // " + BARRIER_MARK)
LEAN_BARRIERS = True
# chunk buffers unswizzled: the consumer reads a chunk as flat row-major groups of 8
RING_LAYOUT = gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2)


@gluon.jit
def _load_slot(x_desc, ring, ready, empty, row, c, it, CHUNKS: gl.constexpr, STAGES: gl.constexpr,
               FLAT: gl.constexpr):
    """Chunk c of `row` into ring slot `it` (buffer it % STAGES) once the slot's last use is released."""
    BOX_ROWS: gl.constexpr = x_desc.block_type.shape[0]
    BOX_COLS: gl.constexpr = x_desc.block_type.shape[1]
    BOXES: gl.constexpr = ring.shape[1] // BOX_ROWS  # TMA copies a chunk
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    buf = it % STAGES
    mbarrier.wait(empty.index(buf), ((it // STAGES) & 1) ^ 1)
    # out-of-bounds columns are filled (with 0) and counted all the same
    mbarrier.expect(ready.index(buf), BOXES * x_desc.block_type.nbytes)
    if FLAT:
        tma.async_copy_global_to_shared(x_desc, [(row * CHUNKS + c) * BOX_ROWS, 0], ready.index(buf),
                                        ring.index(buf))
    else:
        for j in gl.static_range(BOXES):
            tma.async_copy_global_to_shared(x_desc, [row, c * CHUNK + j * BOX_COLS], ready.index(buf),
                                            ring.index(buf).slice(j, 1))


@gluon.jit
def _loader(x_desc, ring, ready, empty, M, CHUNKS: gl.constexpr, STAGES: gl.constexpr, FLAT: gl.constexpr,
            HEAD: gl.constexpr = 0):
    """Fills the ring in the program's (row, slot) order: slot `it` into buffer it % STAGES. A row's slots are
    its CHUNKS chunks, then (HEAD > 0) its first HEAD chunks again, newest first."""
    it = 0
    for row in range(gl.program_id(0), M, gl.num_programs(0)):
        for c in range(CHUNKS):
            _load_slot(x_desc, ring, ready, empty, row, c, it, CHUNKS, STAGES, FLAT)
            it += 1
        for q in range(HEAD):
            _load_slot(x_desc, ring, ready, empty, row, HEAD - 1 - q, it, CHUNKS, STAGES, FLAT)
            it += 1


@gluon.jit
def _widen(v, chunk_layout: gl.constexpr):
    """16-byte vectors of a chunk as fp32 [GROUPS, 8]: bf16 comes as [GROUPS, 4] 32-bit words of two values,
    widened by a shift and a mask (one instruction a value; the plain conversion takes 1.5), fp16 as itself."""
    if v.dtype == gl.int32:
        lo = (v << 16).to(gl.float32, bitcast=True)  # the word's first value (little-endian)
        hi = (v & -65536).to(gl.float32, bitcast=True)
        x = gl.convert_layout(gl.join(lo, hi).reshape([v.shape[0], VEC]), chunk_layout)
    else:
        x = v.to(gl.float32)
    return x


@gluon.jit
def _read_chunk(ring, buf, chunk_layout: gl.constexpr):
    """Ring buffer `buf` as fp32 [GROUPS, 8]: the unswizzled [rows, 256] buffer is plain row-major, the same
    bytes as [GROUPS, 8] (bf16: read as 32-bit words, see _widen)."""
    GROUPS: gl.constexpr = ring.shape[1] * ring.shape[2] // VEC
    flat_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    if ring.dtype == gl.bfloat16:
        word_layout: gl.constexpr = gl.BlockedLayout([1, VEC // 2], [32, 1], chunk_layout.warps_per_cta, [1, 0])
        v = ring.index(buf)._reinterpret(gl.int32, [GROUPS, VEC // 2], flat_layout).load(word_layout)
    else:
        v = ring.index(buf)._reinterpret(ring.dtype, [GROUPS, VEC], flat_layout).load(chunk_layout)
    return _widen(v, chunk_layout)


@gluon.jit
def _fold_chunk(x, m, s):
    """Online (max, sum of exp) per 8-element group, updated by one chunk (all in-thread). While a group's
    max is still -inf it has no mass yet: rescale against 0, not -inf (nan)."""
    m_new = gl.maximum(m, gl.max(x, axis=1))
    ref = gl.where(m_new == -float("inf"), 0.0, m_new) * LOG2E
    p = gl.exp2(x * LOG2E - gl.expand_dims(ref, 1))  # one FFMA + one MUFU.EX2 an element
    return m_new, s * gl.exp2(m * LOG2E - ref) + gl.sum(p, axis=1)


@gluon.jit
def _release(empty, buf):
    """Hands ring buffer `buf` back to its loader once the partition's reads (and writes) of it are done: each
    thread's fence.proxy.async orders its generic-proxy accesses to the buffer before the TMA (async-proxy)
    write that will refill it, then a barrier of the partition's warps, then one arrive. Without the fence a
    shared-memory load still queued behind the partition's global stores may read the refill (seen in
    ops/norm_sm90.py with a residual: its docstring)."""
    fence_async_shared()
    gl.thread_barrier()
    mbarrier.arrive(empty.index(buf))


@gluon.jit
def barrier_not_needed(anchor, LEAN: gl.constexpr):
    """LEAN: marks the spot (before an mbarrier wait or a ring buffer's read) where Triton 3.6's Membar puts a
    barrier of the partition's warps that the ring's protocol does not need; the launch drops it from the PTX
    (_support.drop_marked_barriers). Not needed: a consumer's warps wait for a buffer's fill and read it each for
    itself, and no warp can fall a fill behind, as a buffer is refilled only after the partition's barrier in
    _release; a read after an arrive reads a buffer not yet released. `anchor`: any scalar (the asm needs an
    operand)."""
    if LEAN:
        gl.inline_asm_elementwise(MARK_ASM, "=r,r", [anchor], dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _fold_ring(ring, ready, empty, it, m, s, offs, N, FIRST: gl.constexpr, END: gl.constexpr,
               RELEASE: gl.constexpr, EVEN: gl.constexpr, chunk_layout: gl.constexpr, LEAN: gl.constexpr):
    """Pass 1 over the row's chunks FIRST .. END - 1 (its chunk 0 is the program's chunk `it`): wait for each
    to land and fold it into (m, s); RELEASE: hand the buffer back at once (the head of a row past the ring)."""
    STAGES: gl.constexpr = ring.shape[0]
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    for c in range(FIRST, END):
        buf = (it + c) % STAGES
        barrier_not_needed(c, LEAN)
        mbarrier.wait(ready.index(buf), ((it + c) // STAGES) & 1)
        x = _read_chunk(ring, buf, chunk_layout)
        if RELEASE:
            _release(empty, buf)
        if not EVEN:  # TMA filled the columns past N with 0
            x = gl.where(offs < N - c * CHUNK, x, -float("inf"))
        m, s = _fold_chunk(x, m, s)
    return m, s


@gluon.jit
def _write_ring(ring, ready, empty, it, y_row, shift, offs, N, FIRST: gl.constexpr, END: gl.constexpr,
                SLOTS: gl.constexpr, REREAD: gl.constexpr, LOG: gl.constexpr, EVEN: gl.constexpr,
                POLICY: gl.constexpr, chunk_layout: gl.constexpr, LEAN: gl.constexpr):
    """Pass 2 over the row's slots FIRST .. END - 1, all in the ring: read the chunk, release its buffer,
    normalise (softmax y = exp2(x log2e - shift), shift = max log2e + log2 sum: one FFMA + one MUFU.EX2 an
    element; log_softmax y = x - shift, shift = max + ln sum) and store with 16-byte stores straight from
    registers. REREAD: slots of the head re-read (slot q holds chunk SLOTS - 1 - q), waited for first;
    else slot q is chunk q, waited for in pass 1."""
    STAGES: gl.constexpr = ring.shape[0]
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    for q in range(FIRST, END):
        buf = (it + q) % STAGES
        barrier_not_needed(q, LEAN)
        if REREAD:
            mbarrier.wait(ready.index(buf), ((it + q) // STAGES) & 1)
            c = SLOTS - 1 - q
        else:
            c = q
        x = _read_chunk(ring, buf, chunk_layout)
        _release(empty, buf)
        if LOG:
            y = (x - shift).to(y_row.dtype.element_ty)
        else:
            y = gl.exp2(x * LOG2E - shift).to(y_row.dtype.element_ty)
        if EVEN:
            gl.store(y_row + c * CHUNK + offs, y, eviction_policy=POLICY)
        else:
            gl.store(y_row + c * CHUNK + offs, y, mask=offs < N - c * CHUNK, eviction_policy=POLICY)


@gluon.jit
def partition_lanes(WARPS: gl.constexpr):
    """The partition's thread indices, one a thread."""
    return gl.arange(0, 32 * WARPS, layout=gl.BlockedLayout([1], [32], [WARPS], [0]))


@gluon.jit
def swap_pairs(words_ptr, cnt_ptr, part_row, a, b, left, last_row, PARTS: gl.constexpr, WARPS: gl.constexpr):
    """The pairs (a, b) of a row's PARTS parts, one a thread of the partition for its first PARTS threads (`mine`;
    the others (-inf, 0)), with no fence and one round trip to L2: the first thread swaps its part's pair into the
    part's word, words [M * PARTS] int64 (_support.pair_word: never 0, and 0 is an empty word), relaxed; the first
    PARTS threads poll the row's PARTS words until none is empty (relaxed: the values come with the flag, and nothing
    else is published, so no fence). Then the first thread counts itself out on the row's counter (relaxed, `left`:
    its count before) and, a row later (left, last_row: the previous row's; and once after the last,
    swap_pairs_done), the row's last part to leave empties its words and counter for the next launch: the wait for
    that count falls where it has long arrived (the Triton split kernels' _support.swap_row_stats and leave_row, a
    chunk a program, count out after their stores instead). A b of -0.0 comes back +0.0. Returns (a, b, mine,
    left)."""
    gl.static_assert(PARTS <= 32 * WARPS, "a thread a part")
    t = partition_lanes(WARPS)
    first = t == 0
    mine = t < PARTS
    swap_pairs_done(words_ptr, cnt_ptr, left, last_row, PARTS, WARPS)
    word = pair_word(a, b)
    gl.atomic_xchg(words_ptr + part_row + t * 0, word + t.to(gl.int64) * 0, mask=first, sem="relaxed", scope="gpu")
    words = words_ptr + (part_row - part_row % PARTS) + t
    got = gl.zeros_like(t).to(gl.int64)
    empty = PARTS
    while empty > 0:
        got = gl.atomic_add(words, gl.zeros_like(got), mask=mine, sem="relaxed", scope="gpu")
        empty = gl.sum((mine & (got == 0)).to(gl.int32), axis=0)
    a_all, b_all = pair_values(got, mine, -float("inf"), 0.0)
    left = gl.atomic_add(cnt_ptr + part_row // PARTS + t * 0, gl.zeros_like(t) + 1, mask=first, sem="relaxed",
                         scope="gpu")
    return a_all, b_all, mine, left


@gluon.jit
def swap_pairs_done(words_ptr, cnt_ptr, left, row, PARTS: gl.constexpr, WARPS: gl.constexpr):
    """swap_pairs' cleanup of part `row`'s row (`left`: its first thread's count before it left, -1 for none): the
    row's last part to leave empties the row's words and counter."""
    t = partition_lanes(WARPS)
    last = (t == 0) & (left == PARTS - 1)
    base = words_ptr + (row - row % PARTS)
    for p in gl.static_range(PARTS):
        gl.store(base + p + t * 0, gl.zeros_like(t).to(gl.int64), mask=last)
    gl.store(cnt_ptr + row // PARTS + t * 0, gl.zeros_like(t), mask=last)


@gluon.jit
def _consumer(y_ptr, ws_ptr, cnt_ptr, ring, ready, empty, turns, M, N8, y_stride8, WHO: gl.constexpr, LOG: gl.constexpr,
              EVEN: gl.constexpr, CHUNKS: gl.constexpr, KEEP: gl.constexpr, CONSUMERS: gl.constexpr,
              WARPS: gl.constexpr, PARTS: gl.constexpr, LEAN: gl.constexpr):
    """Consumer WHO's rows: pass 1 (online max / sum) over the chunks as they land, pass 2 (normalise,
    release, store) over the KEEP chunks of the row's tail still in the ring, then (a row past the ring,
    one consumer) over the HEAD = CHUNKS - KEEP chunks of its head as their re-reads land. N8, y_stride8: N
    and y's row stride in 8-element vectors (so that the compiler knows stores and masks come in whole
    16-byte vectors)."""
    CHUNK: gl.constexpr = ring.shape[1] * ring.shape[2]
    GROUPS: gl.constexpr = CHUNK // VEC
    HEAD: gl.constexpr = CHUNKS - KEEP
    SLOTS: gl.constexpr = CHUNKS + HEAD  # ring slots a row takes (the loader's order)
    # a row past the ring: the stores ask L2 to evict them first, so that it keeps the head for its re-read
    POLICY: gl.constexpr = "evict_first" if HEAD > 0 else ""
    # thread t of warp w holds groups w * 32 + t, + 32 * WARPS, ..: a warp reads 512 contiguous bytes of
    # shared memory per vector load (conflict-free), and stores 512 contiguous bytes
    chunk_layout: gl.constexpr = gl.BlockedLayout([1, VEC], [32, 1], [WARPS, 1], [1, 0])
    group_layout: gl.constexpr = gl.SliceLayout(1, chunk_layout)
    offs = (gl.expand_dims(gl.arange(0, GROUPS, layout=group_layout), 1) * VEC
            + gl.expand_dims(gl.arange(0, VEC, layout=gl.SliceLayout(0, chunk_layout)), 0))
    N = N8 * VEC
    programs = gl.num_programs(0)
    k = 0  # this consumer's rows so far
    left, last_row = gl.zeros_like(partition_lanes(WARPS)) - 1, 0  # parts: swap_pairs' cleanup, a row behind
    for row in range(gl.program_id(0) + WHO * programs, M, CONSUMERS * programs):
        it = (k * CONSUMERS + WHO) * SLOTS  # the program's number of this row's first slot
        if CONSUMERS > 1:  # the other consumer has finished pass 1 of the row before (see the docstring)
            mbarrier.wait(turns.index(1 - WHO), (k + WHO + 1) & 1)
        m = gl.full([GROUPS], -float("inf"), gl.float32, group_layout)
        s = gl.zeros([GROUPS], gl.float32, group_layout)
        if HEAD > 0:
            m, s = _fold_ring(ring, ready, empty, it, m, s, offs, N, 0, HEAD, True, EVEN, chunk_layout, LEAN)
        m, s = _fold_ring(ring, ready, empty, it, m, s, offs, N, HEAD, CHUNKS, False, EVEN, chunk_layout, LEAN)
        if CONSUMERS > 1:
            mbarrier.arrive(turns.index(WHO))
        row_max = gl.max(m, axis=0)
        ref = gl.where(row_max == -float("inf"), 0.0, row_max)
        row_sum = gl.sum(s * gl.exp2((m - ref) * LOG2E), axis=0)
        if PARTS > 1:  # `row` is a part of a row: merge with the others
            maxes, sums, _, left = swap_pairs(ws_ptr, cnt_ptr, row, row_max, row_sum, left, last_row, PARTS, WARPS)
            last_row = row
            row_max = gl.max(maxes, axis=0)
            ref = gl.where(row_max == -float("inf"), 0.0, row_max)
            row_sum = gl.sum(sums * gl.exp2((maxes - ref) * LOG2E), axis=0)
        if LOG:
            shift = row_max + gl.log2(row_sum) * LN2
        else:
            shift = row_max * LOG2E + gl.log2(row_sum)
        y_row = y_ptr + row.to(gl.int64) * y_stride8 * VEC
        _write_ring(ring, ready, empty, it, y_row, shift, offs, N, HEAD, CHUNKS, SLOTS, False, LOG, EVEN, POLICY,
                    chunk_layout, LEAN)
        if HEAD > 0:
            _write_ring(ring, ready, empty, it, y_row, shift, offs, N, CHUNKS, SLOTS, SLOTS, True, LOG, EVEN, POLICY,
                        chunk_layout, LEAN)
        k += 1
    if PARTS > 1:
        swap_pairs_done(ws_ptr, cnt_ptr, left, last_row, PARTS, WARPS)


@gluon.jit
def _softmax_kernel(x_desc, y_ptr, ws_ptr, cnt_ptr, M, N8, y_stride8, LOG: gl.constexpr, EVEN: gl.constexpr,
                    FLAT: gl.constexpr, CHUNK: gl.constexpr, CHUNKS: gl.constexpr, STAGES: gl.constexpr,
                    CONSUMERS: gl.constexpr, KEEP: gl.constexpr, PARTS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                    LOADER_REGS: gl.constexpr, LEAN: gl.constexpr):
    """Persistent: consumer 0 is the default partition (num_warps warps), the other and the 1-warp loader
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
            (_consumer, (y_ptr, ws_ptr, cnt_ptr, ring, ready, empty, turns, M, N8, y_stride8, 0, LOG, EVEN, CHUNKS,
                         KEEP, 2, WARPS, PARTS, LEAN)),
            (_consumer, (y_ptr, ws_ptr, cnt_ptr, ring, ready, empty, turns, M, N8, y_stride8, 1, LOG, EVEN, CHUNKS,
                         KEEP, 2, WARPS, PARTS, LEAN)),
            (_loader, (x_desc, ring, ready, empty, M, CHUNKS, STAGES, FLAT, CHUNKS - KEEP)),
        ], [WARPS, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (y_ptr, ws_ptr, cnt_ptr, ring, ready, empty, turns, M, N8, y_stride8, 0, LOG, EVEN, CHUNKS,
                         KEEP, 1, WARPS, PARTS, LEAN)),
            (_loader, (x_desc, ring, ready, empty, M, CHUNKS, STAGES, FLAT, CHUNKS - KEEP)),
        ], [1], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Launch


def consumer_regs(consumers: int, warps: int) -> int:
    """setmaxnreg asked for the worker consumer: the 64K registers less the loader's warp group, shared evenly
    (at most 240). Triton gives the default partition (consumer 0) what is left: 240 / 240 for 2 x 4 warps,
    104 / 120 for 2 x 8 (benchmarks/exp_gluon_softmax.py --compile-only)."""
    return min(240, (65536 - 128 * LOADER_REGS) // (consumers * warps * 32) // 8 * 8)


def supports(x: torch.Tensor, out: torch.Tensor, chunk: int = CHUNK, stages: int = STAGES,
             past_ring: bool = False) -> bool:
    """Whether the kernel can take the [M, N] row views x (unit column stride) and out as they are: 16-bit,
    TMA-addressable rows (16-byte aligned base and row stride, N a multiple of 8, rows that do not overlap),
    out's rows 16-byte aligned too, and a row that fits the ring (past_ring: or one that does not, whose
    head pass 2 re-reads)."""
    M, N = x.shape
    return (x.dtype in (torch.float16, torch.bfloat16) and out.dtype == x.dtype and M > 0 and N % 8 == 0
            and x.stride(0) % 8 == 0 and x.stride(0) >= N and x.data_ptr() % 16 == 0 and out.stride(0) % 8 == 0
            and out.data_ptr() % 16 == 0 and (past_ring or cdiv(N, chunk) <= stages))


def config(chunks: int) -> tuple[int, int, int]:
    """(consumers, warps a consumer, chunks kept in the ring) for rows of `chunks` chunks: two 4-warp consumers
    for a row that fits the ring, one 8-warp consumer keeping all but WIDE_STREAM buffers' worth of the tail
    of a row past it (both measured: the docstring)."""
    if chunks <= STAGES:
        return CONSUMERS, CONSUMER_WARPS, chunks
    return 1, WIDE_WARPS, STAGES - WIDE_STREAM


def part_views(parts: int, *rows: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
    """The [M * parts, N / parts] views of contiguous [M, N] rows (None stays None): a ValueError for rows that are
    not contiguous or not a multiple of 8 * parts wide (each part's 16-byte vectors and TMA rows)."""
    views = []
    for t in rows:
        if t is not None:
            M, N = t.shape
            if t.stride(0) != N or N % (8 * parts):
                raise ValueError(f"parts={parts}: contiguous rows of a multiple of {8 * parts} elements, not {N} "
                                 f"with row stride {t.stride(0)}")
            t = t.view(M * parts, N // parts)
        views.append(t)
    return tuple(views)


class _Plan:
    """The launch of _softmax_kernel for one call's shapes and strides: the first call compiles through
    Gluon's dispatch with a checked descriptor; later ones launch the compiled kernel directly. x and out are
    the kernel's [M * parts, N / parts] views (parts > 1: contiguous rows split into parts)."""

    __slots__ = ("sizes", "launch", "rows")

    def __init__(self, x: torch.Tensor, out: torch.Tensor, log: bool, programs: int, consumers: int, warps: int,
                 keep: int, parts: int):
        M, N = x.shape
        chunks = cdiv(N, CHUNK)
        if chunks <= STAGES and keep != chunks or not 1 <= keep <= min(chunks, STAGES):
            raise ValueError(f"keep={keep}: a row of {chunks} chunks keeps all of them in a ring of {STAGES} "
                             f"buffers when it fits, else 1 to {STAGES}")
        if keep < chunks and consumers != 1:
            raise ValueError(f"consumers={consumers}: a row past the ring ({chunks} chunks, {STAGES} buffers) "
                             "takes one consumer")
        if parts > 1 and (keep < chunks or programs % parts):
            raise ValueError(f"parts={parts}: parts of a row fit the ring, on a multiple of {parts} programs")
        flat = N % CHUNK == 0 and x.stride(0) == N  # whole chunks of contiguous rows: one box a chunk
        box = [CHUNK // BOX_COLS, BOX_COLS] if flat else [1, BOX_COLS]
        view = ([M * N // BOX_COLS, BOX_COLS], [BOX_COLS, 1]) if flat else ([M, N], [x.stride(0), 1])
        self.sizes = (M, N // 8, out.stride(0) // 8)
        self.rows = M // parts if parts > 1 else 0  # the rows whose parts exchange statistics
        constexprs = dict(LOG=log, EVEN=N % CHUNK == 0, FLAT=flat, CHUNK=CHUNK, CHUNKS=chunks, STAGES=STAGES,
                          CONSUMERS=consumers, KEEP=keep, PARTS=parts, CONSUMER_REGS=consumer_regs(consumers, warps),
                          LOADER_REGS=LOADER_REGS, LEAN=LEAN_BARRIERS)
        self.launch = GluonLaunch(_softmax_kernel, (min(programs, M),), [(*view, box, RING_LAYOUT)], constexprs,
                                  x.device.index, warps)

    def __call__(self, x: torch.Tensor, out: torch.Tensor) -> None:
        exchange = exchange_buffers(x.device, self.rows, self.sizes[0], out)
        self.launch((x,), out, *exchange, *self.sizes)


_plans: dict[tuple, _Plan] = {}


def exchange_buffers(device: torch.device, rows: int, parts: int, unused: torch.Tensor):
    """(words, counters) of a launch whose `rows` rows are in `parts` parts in all, for swap_pairs
    (_support.exchange_words); (unused, unused) for rows not in parts."""
    return exchange_words(device, rows, parts // rows) if rows else (unused, unused)


def softmax_rows(x: torch.Tensor, out: torch.Tensor, log: bool, programs: int, consumers: int | None = None,
                 warps: int | None = None, keep: int | None = None, parts: int = 1) -> None:
    """Softmax (log: log_softmax) of each row of the [M, N] view x into out, `programs` persistent programs
    (one per SM); supports(x, out, past_ring=True) must hold. parts > 1: contiguous x and out whose rows are
    split into `parts` parts that fit the ring, each a program's, merging their statistics (the module
    docstring); programs is then rounded down to a multiple of parts. consumers, warps, keep: config()'s when
    None (benchmarks/exp_gluon_softmax.py measures others)."""
    if parts > 1:
        if programs < parts:
            raise ValueError(f"parts={parts}: at least as many programs, not {programs}")
        x, out = part_views(parts, x, out)
        programs -= programs % parts
    key = (x.device.index, x.dtype, *x.shape, x.stride(0), out.stride(0), log, programs, consumers, warps, keep, parts,
           LEAN_BARRIERS)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) > 4096:  # shapes that vary without end
            _plans.clear()
        default = config(cdiv(x.shape[1], CHUNK))
        consumers, warps, keep = (d if v is None else v for v, d in zip((consumers, warps, keep), default))
        plan = _plans[key] = _Plan(x, out, log, programs, consumers, warps, keep, parts)
    plan(x, out)
