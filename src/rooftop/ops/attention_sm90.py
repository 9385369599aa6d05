r"""Attention forward on Hopper (sm_90) in Gluon: FA3's ping-pong of two consumer warp groups, one of the
paths of rooftop.attention (ops/attention.py chooses it; this file holds the kernel and its launch).

Why Gluon: Triton 3.6 waits for each score MMA right after issuing it, so a program's softmax never
overlaps its own tensor-core work (rooftop's Triton kernel: 0.77-0.86x cuDNN at D = 128). Gluon exposes
the asynchronous wgmma, its wait, mbarriers and warp specialisation (benchmarks/exp_gluon_attention.py
tells how this kernel was arrived at).

The kernel: one program per (128 query rows, batch * head), the query tiles of a head adjacent, the
heaviest (last) first. gl.warp_specialize splits a program into a 1-warp TMA loader and two consumer
warp groups (setmaxnreg: 240 registers each, 24 for the loader), each with its own 64 query rows,
sharing a STAGES-deep ring of k/v tiles (BLOCK_N keys). No CTA-wide barrier after the fork: each ring
stage has "ready" mbarriers (TMA bytes) and "empty" ones counted by both consumers (one arrive each
once the MMA that read the stage has completed). A pair of "turn" mbarriers makes the consumers' MMA
issues alternate: on its turn t a consumer issues S_t = Q K_t^T and O += P_{t-1} V_{t-1}, passes the
turn and waits for S_t alone (wgmma wait(1)), so its softmax of S_t runs while its P V and the other
consumer's MMAs keep the tensor cores busy. A shared-memory store of the row sums and a warp-group
barrier keep ptxas from hoisting the full wait above the exponentials.

Supported: 16-bit q, k, v in any layout TMA can address (last dim contiguous, 16-byte aligned base, other
strides multiples of 16 bytes: contiguous [B, H, S, D], Hugging Face's transposed [B, S, H, D] views, heads
sliced from a packed qkv row; 4-D descriptors over [B, H, S, D] with the real strides, boxes [1, 1, rows, D],
so that each head's rows are bounded), out likewise (attention.py lays it out as q), D in {64, 128, 256},
any Sq and Sk (loads past a head's end read 0; the last key tile is masked past Sk; query rows past Sq are
computed on zeros and dropped: TMA clips the store, lse is masked), GQA/MQA (k/v head = q head // (Hq /
Hkv)), causal or not (causal aligned bottom-right, query i at key position i + Sk - Sq, and Sq <= Sk so that
every query sees key 0; each program's key loop stops at its diagonal; the tiles that cross a consumer's
diagonal are masked, the others not), lse on request (fp32, natural log), any scale > 0, gpt-oss's sinks (a
logit a head, folded into each row's softmax state before its store as ops/attention.py's fold_sink does). D = 256
takes 64-key tiles in 2 stages: q 64 KB and 2 x (k + v) 128 KB of 227 KB.

Traffic: q and out once; each k/v tile of a program's key range once per program (from L2 mostly: the
programs of a head, and the heads of a GQA group, run side by side); lse once.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from rooftop.ops._support import GluonLaunch

CONSUMER_ROWS = 64  # query rows per consumer warp group: S and O accumulators of 64 x BLOCK_N / 64 x D
PROGRAM_ROWS = 2 * CONSUMER_ROWS
HEAD_DIMS = (64, 128, 256)
# 2 consumer warp groups at 240 + the loader's warp group at 24: 128 * (2 * 240 + 24) = 64512 of 65536
CONSUMER_REGS, LOADER_REGS = 240, 24


@gluon.jit
def _pingpong_loader(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty, v_empty,
                     b, h, kv_h, m0, n_tiles, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """Rows past the sequence end read as 0 (the descriptors bound each head's rows), and the transaction
    counts the whole box all the same."""
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[2]
    for c in gl.static_range(2):
        mbarrier.expect(q_bars.index(c), q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [b, h, m0 + c * BLOCK_M, 0], q_bars.index(c), q_smem.index(c))
    for j in range(n_tiles):
        stage = j % STAGES
        # a stage is free once both consumers released its previous tile; on the first pass round the ring
        # the wait is for parity 1, which a fresh mbarrier reports as complete
        empty_phase = ((j // STAGES) & 1) ^ 1
        mbarrier.wait(k_empty.index(stage), empty_phase)
        mbarrier.expect(k_ready.index(stage), k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [b, kv_h, j * BLOCK_N, 0], k_ready.index(stage), k_smem.index(stage))
        mbarrier.wait(v_empty.index(stage), empty_phase)
        mbarrier.expect(v_ready.index(stage), v_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(v_desc, [b, kv_h, j * BLOCK_N, 0], v_ready.index(stage), v_smem.index(stage))


@gluon.jit
def _tile(ring, i):
    """Tile i of a ring of TMA boxes [n, 1, 1, rows, D], as the [rows, D] operand an MMA reads."""
    return ring.index(i).reshape([ring.shape[3], ring.shape[4]])


@gluon.jit
def _mask_scores(s, q_pos, j, seqlen_k, CAUSAL: gl.constexpr):
    """Scores of key tile j with the keys a query does not see set to -inf: causal, those past its
    aligned position q_pos (for a query of the sequence that covers the keys past the end); else those
    past the end (the zeros TMA read there)."""
    BLOCK_N: gl.constexpr = s.shape[1]
    k_pos = j * BLOCK_N + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s.type.layout))
    if CAUSAL:
        return gl.where(gl.expand_dims(k_pos, 0) <= gl.expand_dims(q_pos, 1), s, -float("inf"))
    else:
        return gl.where(gl.expand_dims(k_pos < seqlen_k, 0), s, -float("inf"))


@gluon.jit
def _pingpong_turn(q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn, other_turn, l_pin, zero_s, acc,
                   p_op, m_i, l_i, j, q_pos, seqlen_k, qk_scale, MASKED: gl.constexpr, CAUSAL: gl.constexpr,
                   STAGES: gl.constexpr):
    """Turn j (>= 1) of a consumer: S_j = Q K_j^T and O += P_{j-1} V_{j-1}, then the softmax of S_j.
    MASKED: tile j crosses this consumer's diagonal (causal) or the sequence end. Every query has seen
    key 0 in tile 0, so the running max is finite and a masked score's exp2 is 0, never NaN."""
    dtype: gl.constexpr = k_smem.dtype
    p_layout: gl.constexpr = p_op.type.layout
    o_rows: gl.constexpr = gl.SliceLayout(1, acc.type.layout)
    stage = j % STAGES
    prev = (j - 1) % STAGES
    mbarrier.wait(k_ready.index(stage), (j // STAGES) & 1)
    mbarrier.wait(v_ready.index(prev), ((j - 1) // STAGES) & 1)
    mbarrier.wait(my_turn, j & 1)  # data first, then the turn: once it has the turn it issues at once
    s = warpgroup_mma(q, _tile(k_smem, stage).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    acc = warpgroup_mma(p_op, _tile(v_smem, prev), acc, is_async=True)
    mbarrier.arrive(other_turn)
    # S_j is the older group: wait for it alone, P_{j-1} V_{j-1} keeps the tensor cores busy
    s = warpgroup_mma_wait(1, deps=(s, ))
    mbarrier.arrive(k_empty.index(stage))
    if MASKED:
        s = _mask_scores(s, q_pos, j, seqlen_k, CAUSAL)
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)  # scale > 0: max commutes with it
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, axis=1)
    # a store of the softmax's result, then a barrier (of this warp group: a partition's bar.sync): ptxas
    # cannot hoist the barrier above the store, nor the full wait below above the barrier
    l_pin.store(l_i)
    gl.thread_barrier()
    acc, p_op = warpgroup_mma_wait(0, deps=(acc, p_op))
    mbarrier.arrive(v_empty.index(prev))
    acc = acc * gl.expand_dims(gl.convert_layout(alpha, o_rows), 1)
    p_op = gl.convert_layout(p.to(dtype), p_layout)
    return acc, p_op, m_new, l_i


@gluon.jit
def _pingpong_consumer(o_desc, lse_ptr, sinks_ptr, q_smem, k_smem, v_smem, l_pin, q_bars, k_ready, v_ready, k_empty,
                       v_empty, turn_bars, b, h, bh, m0, seqlen_q, seqlen_k, n_tiles, qk_scale, CONSUMER: gl.constexpr,
                       CAUSAL: gl.constexpr, WRITE_LSE: gl.constexpr, SINKS: gl.constexpr, STAGES: gl.constexpr):
    """One warp group's 64 query rows (m0 + 64 * CONSUMER .., at key positions Sk - Sq further): turn 0
    scores tile 0, turns 1 .. n_tiles - 1 run _pingpong_turn, turn n_tiles the last P V; then (SINKS: the
    head's sink joined to each row's sum) out (and lse) are stored, rows past the end left out (their
    softmax ran on zeros: finite, and dropped)."""
    BLOCK_M: gl.constexpr = o_desc.block_type.shape[2]
    D: gl.constexpr = o_desc.block_type.shape[3]
    BLOCK_N: gl.constexpr = k_smem.shape[3]
    dtype: gl.constexpr = o_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    o_rows: gl.constexpr = gl.SliceLayout(1, o_layout)
    s_rows: gl.constexpr = gl.SliceLayout(1, s_layout)
    q = _tile(q_smem, CONSUMER)
    my_turn = turn_bars.index(CONSUMER)
    other_turn = turn_bars.index(1 - CONSUMER)
    first_q = m0 + CONSUMER * BLOCK_M
    q_pos = first_q + (seqlen_k - seqlen_q) + gl.arange(0, BLOCK_M, layout=s_rows)
    # tiles before n_full need no mask: causal, those that end before this consumer's first query's
    # position; else those before the end of the keys
    if CAUSAL:
        n_full = (first_q + seqlen_k - seqlen_q) // BLOCK_N
    else:
        n_full = seqlen_k // BLOCK_N

    zero_s = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    acc = gl.zeros([BLOCK_M, D], gl.float32, o_layout)
    mbarrier.wait(q_bars.index(CONSUMER), 0)

    # turn 0: S_0 and its softmax, always masked (it crosses the diagonal in a head's first programs, the
    # end in sequences shorter than a tile; one mask a program is cheap)
    mbarrier.wait(k_ready.index(0), 0)
    mbarrier.wait(my_turn, 0)
    s = warpgroup_mma(q, _tile(k_smem, 0).permute((1, 0)), zero_s, use_acc=False, is_async=True)
    mbarrier.arrive(other_turn)
    s = warpgroup_mma_wait(0, deps=(s, ))
    mbarrier.arrive(k_empty.index(0))
    s = _mask_scores(s, q_pos, 0, seqlen_k, CAUSAL)
    m_i = gl.max(s, axis=1) * qk_scale
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_i, 1))
    l_i = gl.sum(p, axis=1)
    p_op = gl.convert_layout(p.to(dtype), p_layout)

    for j in range(1, n_full):
        acc, p_op, m_i, l_i = _pingpong_turn(q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn,
                                             other_turn, l_pin, zero_s, acc, p_op, m_i, l_i, j, q_pos, seqlen_k,
                                             qk_scale, False, CAUSAL, STAGES)
    # the tiles that cross this consumer's diagonal (the program's key range ends at its own) or the end
    for j in range(gl.maximum(n_full, 1), n_tiles):
        acc, p_op, m_i, l_i = _pingpong_turn(q, k_smem, v_smem, k_ready, v_ready, k_empty, v_empty, my_turn,
                                             other_turn, l_pin, zero_s, acc, p_op, m_i, l_i, j, q_pos, seqlen_k,
                                             qk_scale, True, CAUSAL, STAGES)

    # turn n_tiles: the last P V (its stage needs no release: the loader is done)
    last = (n_tiles - 1) % STAGES
    mbarrier.wait(v_ready.index(last), ((n_tiles - 1) // STAGES) & 1)
    mbarrier.wait(my_turn, n_tiles & 1)
    acc = warpgroup_mma(p_op, _tile(v_smem, last), acc, is_async=True)
    mbarrier.arrive(other_turn)
    acc, p_op = warpgroup_mma_wait(0, deps=(acc, p_op))

    if SINKS:  # every row saw a key (m finite): m' = max(m, sink), l' = l 2^(m - m') + 2^(sink - m'), acc as l
        heads = h + gl.zeros([BLOCK_M], gl.int32, layout=s_rows)  # the row's head: one address for all
        sink = gl.load(sinks_ptr + heads).to(gl.float32) * 1.4426950408889634  # x log2(e), as the scores
        m_top = gl.maximum(m_i, sink)
        kept = gl.exp2(m_i - m_top)
        l_i = l_i * kept + gl.exp2(sink - m_top)
        acc = acc * gl.expand_dims(gl.convert_layout(kept, o_rows), 1)
        m_i = m_top
    out = acc / gl.expand_dims(gl.convert_layout(l_i, o_rows), 1)
    q.store(out.to(dtype))  # every MMA of this warp group that read q is done
    fence_async_shared()
    gl.thread_barrier()
    tma.async_copy_shared_to_global(o_desc, [b, h, first_q, 0], q_smem.index(CONSUMER))  # rows past the end: clipped
    if WRITE_LSE:  # lse is a contiguous [B, Hq, Sq]
        rows = first_q + gl.arange(0, BLOCK_M, layout=s_rows)
        gl.store(lse_ptr + bh * seqlen_q + rows, (m_i + gl.log2(l_i)) * 0.6931471805599453, mask=rows < seqlen_q)
    tma.store_wait(0)


@gluon.jit
def _attention_fwd_pingpong(q_desc, k_desc, v_desc, o_desc, lse_ptr, sinks_ptr, seqlen_q, seqlen_k, tiles_m, n_heads,
                            kv_group, qk_scale,
                            BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                            WRITE_LSE: gl.constexpr, SINKS: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                            LOADER_REGS: gl.constexpr):
    """Two consumer warp groups (the default partition and a worker, 4 warps each) with 64 query rows
    each, sharing a k/v ring that a 1-warp loader fills by TMA: per-stage ready (TMA) and empty (count 2:
    one arrive per consumer) mbarriers, and a pair of turn mbarriers (count 1) that make the warp groups'
    MMA issues alternate. Descriptors over the [B, H, S, D] tensors with their own strides, boxes
    [1, 1, rows, D]; qk_scale = scale * log2(e)."""
    BLOCK_M: gl.constexpr = q_desc.block_type.shape[2]
    D: gl.constexpr = q_desc.block_type.shape[3]
    dtype: gl.constexpr = q_desc.dtype
    pid = gl.program_id(0)
    bh = pid // tiles_m
    b = bh // n_heads
    h = bh % n_heads
    m0 = (tiles_m - 1 - pid % tiles_m) * (2 * BLOCK_M)  # heaviest (last) query tiles of a head first
    if CAUSAL:  # keys up to the program's last query's position (Sq <= Sk: at least key 0)
        n_tiles = gl.cdiv(gl.minimum(m0 + 2 * BLOCK_M, seqlen_q) + seqlen_k - seqlen_q, BLOCK_N)
    else:
        n_tiles = gl.cdiv(seqlen_k, BLOCK_N)

    q_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, BLOCK_M, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, D], v_desc.layout)
    l_pin = gl.allocate_shared_memory(gl.float32, [2, BLOCK_M], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    q_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    turn_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for c in gl.static_range(2):
        mbarrier.init(q_bars.index(c), count=1)
        mbarrier.init(turn_bars.index(c), count=1)  # one elected arrive per warp group (partition thread 0)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)  # both consumers release each tile
        mbarrier.init(v_empty.index(i), count=2)
    fence_async_shared()
    # consumer c's turn t waits for completion t of turn_bars[c] (parity t & 1): completion 0 of
    # turn_bars[0] is this arrive, every later one the other consumer's pass; the turns alternate,
    # so no barrier runs two phases ahead of its waiter
    mbarrier.arrive(turn_bars.index(0))

    gl.warp_specialize([
        (_pingpong_consumer, (o_desc, lse_ptr, sinks_ptr, q_smem, k_smem, v_smem, l_pin.index(0), q_bars, k_ready,
                              v_ready, k_empty, v_empty, turn_bars, b, h, bh, m0, seqlen_q, seqlen_k, n_tiles,
                              qk_scale, 0, CAUSAL, WRITE_LSE, SINKS, STAGES)),
        (_pingpong_consumer, (o_desc, lse_ptr, sinks_ptr, q_smem, k_smem, v_smem, l_pin.index(1), q_bars, k_ready,
                              v_ready, k_empty, v_empty, turn_bars, b, h, bh, m0, seqlen_q, seqlen_k, n_tiles,
                              qk_scale, 1, CAUSAL, WRITE_LSE, SINKS, STAGES)),
        (_pingpong_loader, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, q_bars, k_ready, v_ready, k_empty, v_empty,
                            b, h, h // kv_group, m0, n_tiles, BLOCK_N, STAGES)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Launch


def supports(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, causal: bool,
             tma_strides: Sequence[Optional[Sequence[int]]]) -> bool:
    """Whether the kernel can take these [B, H, S, D] tensors as they are (dtype, head dim, lengths); the
    caller checks the device and the masking (dense, or causal with no window), and gives each tensor's
    strides for a TMA descriptor (16-byte aligned base, strides multiples of 16 bytes, the last 1),
    None for one TMA cannot address. Causal needs Sq <= Sk: every query then sees key 0, so no row's
    softmax is empty."""
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    return (q.dtype in (torch.float16, torch.bfloat16) and D in HEAD_DIMS and 0 < Sq and 0 < Sk
            and (Sq <= Sk or not causal) and B * Hq * Sq < 2**31  # lse offsets are int32
            and all(s is not None for s in tma_strides))


class PingpongPlan:
    """The launch of _attention_fwd_pingpong for one call's shapes and strides with key tiles of
    `block_n` keys and a ring of `stages`, called as attention.py's plans are: (q, k, v, out, lse or None,
    _, _, qk_scale, sinks or None), the tensors [B, H, S, D] with `tma_strides` (supports()). The first call
    compiles through Gluon's dispatch with checked descriptors; later ones launch the compiled kernel directly."""

    __slots__ = ("sizes", "launch")

    def __init__(self, q: torch.Tensor, k: torch.Tensor, tma_strides: Sequence[Sequence[int]], causal: bool,
                 write_lse: bool, block_n: int, stages: int, with_sinks: bool):
        B, Hq, Sq, D = q.shape
        tiles_m = -(-Sq // PROGRAM_ROWS)
        self.sizes = (Sq, k.shape[2], tiles_m, Hq, Hq // k.shape[1])
        dtype = gl.bfloat16 if q.dtype == torch.bfloat16 else gl.float16
        # 4-D descriptors bound each head's rows: loads past the end read 0, stores there are dropped
        descriptors = [(list(t.shape), list(strides), [1, 1, rows, D],
                        gl.NVMMASharedLayout.get_default_for([1, 1, rows, D], dtype))
                       for t, strides, rows in zip((q, k, k, q), tma_strides,
                                                   (CONSUMER_ROWS, block_n, block_n, CONSUMER_ROWS))]
        constexprs = dict(BLOCK_N=block_n, STAGES=stages, CAUSAL=causal, WRITE_LSE=write_lse, SINKS=with_sinks,
                          CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS)
        self.launch = GluonLaunch(_attention_fwd_pingpong, (tiles_m * B * Hq,), descriptors, constexprs,
                                  q.device.index)

    def __call__(self, q, k, v, out, lse, cu_q, cu_k, qk_scale: float, sinks=None) -> None:
        self.launch((q, k, v, out), q if lse is None else lse, q if sinks is None else sinks, *self.sizes, qk_scale)
