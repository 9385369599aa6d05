"""Experiment: a warp-specialised W4A16 (int4 weight, bf16 x) kernel in Gluon against rooftop's Triton one at
decoding batch sizes (M = 16, 64) on the H200.

Why: rooftop.quant_matmul's tensor-core path (ops/quant_matmul.py, `_qgemm_kernel`) reaches 1.07-2.05x cuBLAS
bf16 at M = 16 and 0.91-1.19x at M = 64; Nsight Compute at 16 x 28672 x 8192 shows DRAM 45% busy and a
latency-bound loop: Triton waits for each wgmma whose A operand comes from registers (wait(0)), so one
program's loads, dequantization and MMA never overlap. A kernel that streams the weights at DRAM speed
would take 28672 x 8192 / 2 bytes / ~4.3 TB/s = ~28 us (2.5x fewer bytes than cuBLAS's bf16 weight:
targets >= 2.5x cuBLAS at M = 16, >= 1.5x at M = 64).

What: out = x @ dequantize(qw).T for qw from rooftop's `quantize_weight` (int4, group 128, symmetric or
with zero points; the packed format of quant_matmul.py, unchanged: int32 words [K / 8, N], K-major, nibble
i of word (j, n) the code of k = 8 j + i; scales [K / G, N] bf16; zeros uint8 [K / G, N] or None).
Swap-AB as in rooftop: out^T tile [COLS, BLOCK_M] = W tile [COLS, 64] @ x^T [64, BLOCK_M], so the MMA's
N is the batch (BLOCK_M = 16 or 64) and the weight's columns (COLS = 64 or 128 a warp group) fill the
wgmma's rows.
One program per SM (persistent), stream-K: the (N / BLOCK_N) x (K / 64) units (an output tile's k-step)
are cut evenly into contiguous ranges, one a program, so every program streams the same number of words
and no wave runs part-empty; a range covers the tail of one tile, whole tiles, the head of another.
gl.warp_specialize splits a program into:
  loader (1 warp, LOADER_REGS): per k-step, by TMA into a STAGES-deep ring, x's [BLOCK_M, 64] tile and per
    consumer its [8, COLS] words (2 or 4 KB) and the group's row of COLS scales (and zeros). Per stage a "ready"
    mbarrier (count 1: the loader's expect-tx; the TMA bytes complete the phase) and an "empty" one
    (count CONSUMERS: one elected arrive per consumer warp group once the MMA that read the stage has
    completed). Use u of a stage (k-step it = u * STAGES + stage) waits for ready parity u & 1; the loader's
    use u waits for empty parity (u & 1) ^ 1, i.e. the release of use u - 1 (u = 0: parity 1, which a fresh
    mbarrier reports complete).
  consumers (CONSUMERS warp groups of 4 warps, CONSUMER_REGS; each owns COLS of the tile's BLOCK_N = COLS *
    CONSUMERS columns): per k-step, wait ready; load the stage's 8 x COLS words into registers, each thread
    whole words (4 or 8, one LDSM), dequantize them with the LOP3 trick of `_dequant_pairs` (inline PTX: shift, one LOP3
    gives the two bf16 128 + c of codes i and i + 4, a packed fma subtracts 128 + z exactly, a packed
    multiply scales: exactly dequantize(bf16)); store the bf16 [COLS, 64] tile to one of two shared-memory
    A buffers (k in natural order: 16 contiguous bytes a word, no permutation of x), fence, warp-group
    barrier, issue an async wgmma (A = that buffer, B = x's stage permuted to [64, BLOCK_M]), then wait(1):
    the previous k-step's MMA has completed, so its stage is released and its A buffer may be rewritten
    next step, while this step's MMA runs under the next step's dequantization.
Why A from shared memory and not registers: the wgmma A register layout gives a thread k = 2q, 2q + 1
(+ 8) of a 16-wide k block; rooftop's Triton kernel makes that hold whole words by permuting k inside the
tile, x^T's rows alike (free in registers, where its x is). Here x^T is the wgmma's B operand read from
shared memory by TMA, which cannot permute 2-byte elements, and decoding adjacent nibbles 2q, 2q + 1 into
one bf16x2 register takes two more shifts a pair and loads each word four times. Through shared memory a
pair costs one extra PRMT (pairs i, i + 4 repacked to k order for the 16-byte store) and the stores.
Output, two epilogues (Variant.deterministic):
  red.add (the first variants): fp32 red.add (atomic_add, relaxed) of each (piece of a) tile into a zeroed
    fp32 [M, N] workspace, then a cast to bf16: three launches (zero, kernel, cast); the summation order
    of a cut tile's pieces is not fixed (not bit-reproducible). Timed as the whole call ("us") and as the
    kernel alone on a reused workspace ("kernel_us": accumulating, wrong values, the same work).
  deterministic ("_det", timed last): quant_matmul's `_store_output` in Gluon: a whole tile is stored as
    bf16; a cut tile's pieces go to fp32 planes, and the last piece to arrive (an acq_rel counter per
    column block, reset by it) sums them in k order and stores the tile: one launch, bit-reproducible.

Prediction: the loader keeps STAGES x CONSUMERS x (2 or 4 KB) of words in flight per SM (32-64 KB; ~1 us
of DRAM latency at the ~36 GB/s an SM's share needs ~36 KB), so the consumers' instruction issue decides.
Offline SASS of a consumer's k-step loop: 156 instructions a thread at COLS = 64 (32 codes: 85 of them
dequantization, 2.7 a code, the rest loop, barriers, MMA issue), 257 at COLS = 128 (64 codes). With two
warp groups (two warps a scheduler) that is ~13 (COLS 64) or ~16 (COLS 128) bytes of words a cycle an SM
against a DRAM share of ~18-21: the 2 x 128-column variant should stream at ~75-85% of DRAM bandwidth,
M = 16, 28672 x 8192 in ~35 us (rooftop 62.0: 1.8x faster; ~3.6x cuBLAS), the 2 x 64 ones at ~65% (~40 us),
one warp group at half that rate (slower than rooftop on the big shapes). Small shapes pay the zero and
cast launches (~2-3 us: 4096^2's kernel ~8 us, total ~11 against rooftop's 17.8). M = 64 quadruples the
MMA and x (L2) traffic but not the dequantization: near the M = 16 times, ~2.5-3x cuBLAS on the big shapes
if the MMA (64 x 64 x 64 a step, async) hides under the next step's dequantization.

Offline sm_90 compile (Triton 3.6, 2026-12-01), all 28 kernels (7 variants x BLOCK_M 16 / 64 x zeros or
not): no spills (STACK 0, no LDL/STL); setmaxnreg 232 per consumer and 40 for the loader (one consumer:
256 / 40); shared memory 68-203 KB (2 x 64 columns, 8 stages: 86 / 135 KB at BLOCK_M 16 / 64; 2 x 128: 154 /
203 KB); no CTA-wide bar.sync after the fork. A consumer's k-step loop: the words by one LDSM (LDSM.16.M88.4,
two at 128 columns), 12 (24) SHF, 16 (32) LOP3, 32 (64) packed bf16 ops (HADD2 + HMUL2 with zeros, HFMA2 +
HMUL2 symmetric), 16 (32) PRMT, 4 (8) STS.128, then FENCE.VIEW.ASYNC.S, 4 (8) HGMMA.64xBLOCK_Mx16 from
shared-memory descriptors, `WARPGROUP.DEPBAR.LE gsb0, 0x1`, one SYNCS wait and one arrive, three bar.syncs of
its own warp group (named barrier, 128 threads): 149-159 instructions (COLS 64), 246-266 (COLS 128).

Usage:
  .venv/bin/python benchmarks/exp_gluon_quant.py --compile-only   # no GPU: sm_90 registers / spills / smem, SASS
  # H200: checks each variant against x @ qw.dequantize(bf16).T, then times the variants, rooftop.quant_matmul
  # and cuBLAS (rooftop.ops._autotune.time_ms: one call, graph replay, L2 flushed); each variant's first
  # launch on every shape runs under a 10 s watchdog (exit 124 on a deadlock, results so far saved)
  PYTHONPATH=src timeout 300 python benchmarks/exp_gluon_quant.py OUT_DIR
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from gluon_sm90 import compile_sm90, issues_wgmma, main, read_cubin, results, sass_loops, wait_or_exit

BLOCK_K = 64  # k a step: 8 word rows, 128 bytes of bf16 x (one 128-byte swizzled row); divides the group
WORDS = BLOCK_K // 8
GROUP = 128
# 128 * (2 * 232 + 40) = 64512 of the SM's 65536 registers (the 1-warp loader sits in a warp group of its own)
CONSUMER_REGS, LOADER_REGS = 232, 40
SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))  # N, K
BATCHES = (16, 64)
WATCHDOG_S = 10.0


@dataclass(frozen=True)
class Variant:
    consumers: int  # warp groups, each owning `cols` columns of the tile
    cols: int  # 64: one wgmma row block; 128: two, half the loop overhead per code
    stages: int
    deterministic: bool = False  # epilogue: in-kernel sum of a tile's pieces, else red.add + zero / cast launches

    @property
    def name(self) -> str:
        return f"ws_{self.consumers}wg_{self.block_n}x{BLOCK_K}_s{self.stages}" + ("_det" if self.deterministic else "")

    @property
    def block_n(self) -> int:
        return self.cols * self.consumers

    def smem_bytes(self, block_m: int, has_zero: bool) -> int:
        """The ring (x, then per consumer words, scales, zeros) and two bf16 A buffers per consumer."""
        per_consumer = self.cols * (WORDS * 4 + 2) + max(self.cols, 128) * has_zero
        return (self.stages * (block_m * BLOCK_K * 2 + self.consumers * per_consumer)
                + self.consumers * 2 * self.cols * BLOCK_K * 2)


# Offline sm_90 SASS (see --compile-only): a consumer's k-step loop issues ~150 instructions a thread at 64
# columns (85 of them the dequantization of 32 codes, the rest loop, barriers, MMA issue), so two warp groups
# issue ~13 bytes of words a cycle an SM, under the ~18-21 of its DRAM share: 128 columns a warp group
# halve the per-code overhead.
VARIANTS = (
    Variant(2, 64, 8),    # 2 x 2 KB of words a stage: 32 KB in flight
    Variant(2, 64, 12),   # deeper: 48 KB in flight
    Variant(2, 128, 8),   # 2 x 4 KB a stage: 64 KB in flight, 256-column tiles
    Variant(1, 128, 12),  # one warp group of 128 columns: 48 KB in flight
    Variant(1, 64, 12),   # one warp group of 64 columns: dequantization-bound?
    # the in-kernel epilogue (one launch a call): timed after all the others, since a fault in it (an illegal
    # address) would end the process's CUDA context
    Variant(2, 64, 8, True),
    Variant(2, 128, 8, True),
)


# ---------------------------------------------------------------------------------------------
# Kernel


@gluon.jit
def _loader(w_desc, s_desc, z_desc, x_desc, w_smem, s_smem, z_smem, x_smem, ready, empty, u_begin, u_end, k_tiles,
            CONSUMERS: gl.constexpr, STAGES: gl.constexpr, HAS_ZERO: gl.constexpr, GROUP: gl.constexpr):
    """Fills the ring with the program's units u_begin .. u_end - 1 in order: unit (tile, t) to stage
    it % STAGES, its use it // STAGES."""
    WORDS: gl.constexpr = w_desc.block_type.shape[0]
    COLS: gl.constexpr = w_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    BOX_BYTES: gl.constexpr = w_desc.block_type.nbytes + s_desc.block_type.nbytes + (z_desc.block_type.nbytes
                                                                                      if HAS_ZERO else 0)
    STAGE_BYTES: gl.constexpr = x_desc.block_type.nbytes + CONSUMERS * BOX_BYTES
    for it in range(u_end - u_begin):
        u = u_begin + it
        tile = u // k_tiles
        t = u - tile * k_tiles
        stage = it % STAGES
        mbarrier.wait(empty.index(stage), ((it // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(stage), STAGE_BYTES)
        tma.async_copy_global_to_shared(x_desc, [0, t * BLOCK_K], ready.index(stage), x_smem.index(stage))
        group = t * BLOCK_K // GROUP
        for c in gl.static_range(CONSUMERS):
            col = (tile * CONSUMERS + c) * COLS
            box = stage * CONSUMERS + c
            tma.async_copy_global_to_shared(w_desc, [t * WORDS, col], ready.index(stage), w_smem.index(box))
            tma.async_copy_global_to_shared(s_desc, [group, col], ready.index(stage), s_smem.index(box))
            if HAS_ZERO:
                tma.async_copy_global_to_shared(z_desc, [group, col], ready.index(stage), z_smem.index(box))


@gluon.jit
def _dequantize(words, s, z, HAS_ZERO: gl.constexpr, L3: gl.constexpr):
    """The bf16 tile [COLS, 8 * WORDS] = s * (c - z) (k in natural order) of `words` [WORDS, COLS] with the
    group's scales s and zero points z [1, COLS] (all in SliceLayout(2, L3)), exactly dequantize(bf16).
    Codes i and i + 4 of a word, 16 bits apart after one shift, become one bf16x2 register: LOP3 gives
    (128 + c_i, 128 + c_{i+4}), a packed fma subtracts 128 + z (exact), a packed fma scales (rounded once)."""
    if HAS_ZERO:
        z = z.to(gl.int32)
    else:
        z = gl.full(s.shape, 8, gl.int32, s.type.layout)
    s_pair = gl.expand_dims((s.to(gl.int16, bitcast=True).to(gl.int32) & 0xFFFF) * 0x10001, 2)  # (s, s)
    neg_zero_pair = gl.expand_dims((z + 0xC300) * 0x10001, 2)  # bf16 (-(128 + z), -(128 + z)), exact
    shifts = gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(0, L3))) * 4
    shifted = gl.expand_dims(words, 2) >> gl.expand_dims(gl.expand_dims(shifts, 0), 0)  # [WORDS, COLS, 4]
    pairs = gl.inline_asm_elementwise(
        "{ .reg .b32 v, one, neg0; lop3.b32 v, $1, 0x000F000F, 0x43004300, 0xEA; mov.b32 one, 0x3F803F80; "
        "mov.b32 neg0, 0x80008000; fma.rn.bf16x2 v, v, one, $2; fma.rn.bf16x2 $0, v, $3, neg0; }",
        "=r,r,r,r", [shifted, neg_zero_pair, s_pair], dtype=gl.int32, is_pure=True, pack=1)
    lo = pairs.to(gl.int16).to(gl.bfloat16, bitcast=True)  # code i
    hi = (pairs >> 16).to(gl.int16).to(gl.bfloat16, bitcast=True)  # code i + 4
    codes = gl.permute(gl.join(lo, hi), (1, 0, 3, 2))  # (j, n, i, h) -> (n, j, h, i): k = 8 j + 4 h + i
    return gl.reshape(codes, (words.shape[1], 8 * words.shape[0]))


@gluon.jit
def _consumer(w_smem, s_smem, z_smem, x_smem, a_smem, ready, empty, out_ptr, part_ptr, cnt_ptr, M, N, pid, programs,
              u_begin, u_end, k_tiles, total, CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr, STAGES: gl.constexpr,
              HAS_ZERO: gl.constexpr, DETERMINISTIC: gl.constexpr):
    """Consumer warp group CONSUMER: columns CONSUMER * COLS .. of each tile the program's units meet; per
    tile piece an fp32 accumulator [COLS, BLOCK_M] (out^T), written by `_store_piece`."""
    COLS: gl.constexpr = w_smem.shape[2]
    BLOCK_M: gl.constexpr = x_smem.shape[1]
    # each thread holds whole words (word rows w, w + 4 of warp w, columns lane + 32 r: 4 or 8 a k-step)
    # and their 4 code pairs each in registers; a warp's word loads are 128 contiguous bytes and its 16-byte
    # stores of a word's 8 k hit the 8 distinct 16-byte slots of the swizzled A rows (no bank conflict)
    L3: gl.constexpr = gl.BlockedLayout([1, 1, 4], [1, 32, 1], [4, 1, 1], [2, 1, 0])
    word_layout: gl.constexpr = gl.SliceLayout(2, L3)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BLOCK_M, 16])
    it = 0
    for tile in range(u_begin // k_tiles, (u_end - 1) // k_tiles + 1):
        t_start = gl.maximum(u_begin - tile * k_tiles, 0)
        t_end = gl.minimum(u_end - tile * k_tiles, k_tiles)
        acc = gl.zeros([COLS, BLOCK_M], gl.float32, acc_layout)
        for t in range(t_start, t_end):
            stage = it % STAGES
            box = stage * CONSUMERS + CONSUMER
            mbarrier.wait(ready.index(stage), (it // STAGES) & 1)
            words = w_smem.index(box).load(word_layout)
            s = s_smem.index(box).load(word_layout)
            z = z_smem.index(box).slice(0, COLS, dim=1).load(word_layout) if HAS_ZERO else s
            w_tile = _dequantize(words, s, z, HAS_ZERO, L3)
            # buffer it % 2 was last read by the MMA of step it - 2, complete since the wait(1) of step it - 1
            # (or the wait(0) ending the previous piece)
            a = a_smem.index(it % 2)
            a.store(w_tile)
            fence_async_shared()  # the generic-proxy stores before the wgmma's async-proxy reads
            gl.thread_barrier()  # every warp of the group has stored its rows
            acc = warpgroup_mma(a, x_smem.index(stage).permute((1, 0)), acc, is_async=True)
            # the MMA of the previous step has completed: its stage (x and words) is free
            acc = warpgroup_mma_wait(1, deps=(acc, ))
            mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=t > t_start)
            it += 1
        acc = warpgroup_mma_wait(0, deps=(acc, ))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES))
        _store_piece(acc, out_ptr, part_ptr, cnt_ptr, M, N, tile, tile * CONSUMERS + CONSUMER, pid, programs,
                     k_tiles, total, t_start, t_end, DETERMINISTIC)


@gluon.jit
def _store_piece(acc, out_ptr, part_ptr, cnt_ptr, M, N, tile, block, pid, programs, k_tiles, total, t_start, t_end,
                 DETERMINISTIC: gl.constexpr):
    """The fp32 out^T piece `acc` [COLS, BLOCK_M] of column block `block` (k-steps t_start .. t_end - 1 of
    tile `tile`, whose units are tile * k_tiles ..; `total` units over `programs` programs).
    Not DETERMINISTIC: red.add into the zeroed fp32 workspace part_ptr [M, N] (cast later).
    DETERMINISTIC (quant_matmul's `_store_output`): a whole tile goes to out_ptr (bf16 [M, N]) at once; a
    piece is stored to plane `piece` of part_ptr [planes, M, N], and the last of the tile's pieces to
    arrive (an acq_rel counter per column block, cnt_ptr, left at zero for the next launch) sums the
    planes in k order (bit-reproducible) and writes out_ptr."""
    COLS: gl.constexpr = acc.shape[0]
    BLOCK_M: gl.constexpr = acc.shape[1]
    acc_layout: gl.constexpr = acc.type.layout
    cols = block * COLS + gl.arange(0, COLS, layout=gl.SliceLayout(1, acc_layout))
    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(0, acc_layout))
    offsets = gl.expand_dims(rows, 0) * N + gl.expand_dims(cols, 1)
    mask = gl.expand_dims(rows < M, 0)
    if not DETERMINISTIC:
        gl.atomic_add(part_ptr + offsets, acc, mask=mask, sem="relaxed")
    elif t_end - t_start == k_tiles:
        gl.store(out_ptr + offsets, acc.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        # the tile's pieces belong to the programs from the owner of its first unit to the owner of its
        # last (unit v belongs to program ((v + 1) P - 1) // U), in k order
        first = ((tile * k_tiles + 1) * programs - 1) // total
        last = ((tile + 1) * k_tiles * programs - 1) // total
        plane = M * N
        gl.store(part_ptr + (pid - first) * plane + offsets, acc, mask=mask)
        gl.thread_barrier()  # every thread's partial is stored before the arrival is published
        arrived = gl.atomic_add(cnt_ptr + block, 1, sem="acq_rel", scope="gpu")
        if arrived == last - first:
            gl.store(cnt_ptr + block, 0)  # every piece has arrived: zero for the next launch
            acc = gl.zeros_like(acc)
            for piece in range(last - first + 1):  # .cg: other SMs wrote these, skip this SM's L1
                acc += gl.load(part_ptr + piece * plane + offsets, mask=mask, other=0.0, cache_modifier=".cg")
            gl.store(out_ptr + offsets, acc.to(out_ptr.dtype.element_ty), mask=mask)


@gluon.jit
def _w4a16_ws_kernel(w_desc, s_desc, z_desc, x_desc, out_ptr, part_ptr, cnt_ptr, M, N, K, programs,
                     GROUP: gl.constexpr, HAS_ZERO: gl.constexpr, CONSUMERS: gl.constexpr, STAGES: gl.constexpr,
                     DETERMINISTIC: gl.constexpr, CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr):
    """Persistent stream-K W4A16: program p takes units [p U / P, (p + 1) U / P) of the U = tiles x k-steps;
    consumer 0 is the default partition (num_warps = 4), consumer 1 (if any) and the loader are workers."""
    COLS: gl.constexpr = w_desc.block_type.shape[1]
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    k_tiles = K // BLOCK_K
    total = N // (COLS * CONSUMERS) * k_tiles
    pid = gl.program_id(0)
    u_begin = pid * total // programs
    u_end = (pid + 1) * total // programs
    x_smem = gl.allocate_shared_memory(x_desc.dtype, [STAGES] + x_desc.block_type.shape, x_desc.layout)
    w_smem = gl.allocate_shared_memory(w_desc.dtype, [STAGES * CONSUMERS] + w_desc.block_type.shape, w_desc.layout)
    s_smem = gl.allocate_shared_memory(s_desc.dtype, [STAGES * CONSUMERS] + s_desc.block_type.shape, s_desc.layout)
    if HAS_ZERO:
        z_smem = gl.allocate_shared_memory(z_desc.dtype, [STAGES * CONSUMERS] + z_desc.block_type.shape,
                                           z_desc.layout)
    else:
        z_smem = s_smem  # not read
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([COLS, BLOCK_K], gl.bfloat16)
    # two A buffers per consumer, one allocation each (a subslice of one [4, ..] buffer fails to compile)
    a_smem = gl.allocate_shared_memory(gl.bfloat16, [2, COLS, BLOCK_K], a_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(empty.index(i), count=CONSUMERS)  # one elected arrive per consumer warp group
    fence_async_shared()

    if CONSUMERS == 2:
        a_smem1 = gl.allocate_shared_memory(gl.bfloat16, [2, COLS, BLOCK_K], a_layout)
        gl.warp_specialize([
            (_consumer, (w_smem, s_smem, z_smem, x_smem, a_smem, ready, empty, out_ptr, part_ptr, cnt_ptr, M, N, pid,
                         programs, u_begin, u_end, k_tiles, total, 0, CONSUMERS, STAGES, HAS_ZERO, DETERMINISTIC)),
            (_consumer, (w_smem, s_smem, z_smem, x_smem, a_smem1, ready, empty, out_ptr, part_ptr, cnt_ptr, M, N, pid,
                         programs, u_begin, u_end, k_tiles, total, 1, CONSUMERS, STAGES, HAS_ZERO, DETERMINISTIC)),
            (_loader, (w_desc, s_desc, z_desc, x_desc, w_smem, s_smem, z_smem, x_smem, ready, empty, u_begin, u_end,
                       k_tiles, CONSUMERS, STAGES, HAS_ZERO, GROUP)),
        ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_consumer, (w_smem, s_smem, z_smem, x_smem, a_smem, ready, empty, out_ptr, part_ptr, cnt_ptr, M, N, pid,
                         programs, u_begin, u_end, k_tiles, total, 0, CONSUMERS, STAGES, HAS_ZERO, DETERMINISTIC)),
            (_loader, (w_desc, s_desc, z_desc, x_desc, w_smem, s_smem, z_smem, x_smem, ready, empty, u_begin, u_end,
                       k_tiles, CONSUMERS, STAGES, HAS_ZERO, GROUP)),
        ], [1], [LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Host


def _block_m(M: int) -> int:
    return max(16, triton.next_power_of_2(M))


def _layouts(block_m: int) -> dict:
    """Shared layouts of the TMA boxes: words, scales, zeros unswizzled (read by ordinary loads), x's
    [block_m, 64] bf16 tile 128-byte swizzled (the wgmma's B operand)."""
    return dict(w=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2),
                s=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2),
                z=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=2),
                x=gl.NVMMASharedLayout.get_default_for([block_m, BLOCK_K], gl.bfloat16))


# TMA writes shared memory at 128-byte aligned addresses only (a misaligned box faults): a 64-column consumer's
# row of zeros (64 bytes) is fetched as 128 columns (the next 64 unused, zero-filled past N)
BOXES = dict(w=lambda bm, cols: [WORDS, cols], s=lambda bm, cols: [1, cols], z=lambda bm, cols: [1, max(cols, 128)],
             x=lambda bm, cols: [bm, BLOCK_K])


def _constexprs(v: Variant, has_zero: bool) -> dict:
    return dict(GROUP=GROUP, HAS_ZERO=has_zero, CONSUMERS=v.consumers, STAGES=v.stages,
                DETERMINISTIC=v.deterministic, CONSUMER_REGS=CONSUMER_REGS, LOADER_REGS=LOADER_REGS)


class W4A16Call:
    """x @ dequantize(qw).T by `_w4a16_ws_kernel` with variant v on `num_sms` SMs: one plan per (x, qw) pair
    (descriptors and arrival counters made once). A call: red.add epilogue, zero an fp32 workspace, launch,
    cast (three launches); deterministic, allocate the output and the partials' planes, launch."""

    def __init__(self, x: torch.Tensor, qw, v: Variant, num_sms: int):
        N, K = qw.shape
        M = x.shape[0]
        assert qw.bits == 4 and qw.group_size == GROUP and x.dtype == qw.scales.dtype == torch.bfloat16
        assert x.is_contiguous() and M <= 128, "x: contiguous bf16 [M <= 128, K]"
        assert N % v.block_n == 0 and K % GROUP == 0, f"N must be a multiple of {v.block_n}, K of {GROUP}"
        block_m = _block_m(M)
        layouts = _layouts(block_m)
        tensors = dict(w=qw.packed, s=qw.scales, z=qw.packed if qw.zeros is None else qw.zeros, x=x)
        self.descs = [TensorDescriptor.from_tensor(tensors[k], BOXES[k](block_m, v.cols), layouts[k]) for k in "wszx"]
        if qw.zeros is None:  # a placeholder of the right type, never read
            self.descs[2] = TensorDescriptor.from_tensor(qw.scales, BOXES["s"](block_m, v.cols), layouts["s"])
        tiles = N // v.block_n
        self.programs = min(num_sms, tiles * (K // BLOCK_K))
        self.sizes = (M, N, K)
        self.consts = _constexprs(v, qw.zeros is not None)
        self.deterministic = v.deterministic
        planes = -(-self.programs // tiles) + 1 if v.deterministic else 1  # the most pieces a tile is cut into
        self.parts = torch.zeros(planes, M, N, device=x.device, dtype=torch.float32)
        self.out = torch.empty(M, N, device=x.device, dtype=torch.bfloat16) if v.deterministic else self.parts
        # one per consumer column block, left at zero by every launch (the last piece resets it)
        self.counters = torch.zeros(N // v.cols, device=x.device, dtype=torch.int32)

    def launch(self, out: torch.Tensor, parts: torch.Tensor) -> None:
        _w4a16_ws_kernel[(self.programs, )](*self.descs, out, parts, self.counters, *self.sizes, self.programs,
                                            **self.consts, num_warps=4)

    def kernel(self) -> None:
        """The kernel alone on the plan's buffers (red.add: accumulates into them, the same work)."""
        self.launch(self.out, self.parts)

    def __call__(self) -> torch.Tensor:
        if self.deterministic:
            out = torch.empty_like(self.out)
            self.launch(out, torch.empty_like(self.parts))
            return out
        parts = torch.zeros_like(self.parts)
        self.launch(parts, parts)
        return parts[0].to(torch.bfloat16)


# ---------------------------------------------------------------------------------------------
# Offline check (no GPU)


def _loop_report(sass: str) -> list[str]:
    """One line per loop that issues wgmma (a predicated backward branch around HGMMA): its instruction
    count, HGMMA, wgmma waits, mbarrier (SYNCS) ops, bar.syncs and the dequantization's SHF / LOP3 / packed
    bf16 math (ptxas turns fma(v, 1, -(128 + z)) into HADD2 and fma(v, s, -0) into HMUL2) / PRMT, shared
    loads (LDSM: the words) and stores, local memory (spills)."""
    loops = [(start, end) for start, end, _ in sass_loops(sass, issues_wgmma)]
    code = [(int(addr, 16), text.strip()) for addr, text in re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    reports = []
    for start, end in loops:
        body = [t for a, t in code if start <= a <= end]
        # a loop around another: a consumer's loop over its tile pieces (k-step loop and epilogue)
        inner = any(start <= s0 and e0 <= end and (s0, e0) != (start, end) for s0, e0 in loops)
        kind = "tile loop" if inner else "k-step loop"
        count = lambda prefix: sum(t.split()[0].startswith(prefix) for t in body if t.split())  # noqa: E731
        ops = {op: count(op) for op in ("HGMMA", "SYNCS", "BAR.SYNC", "SHF", "LOP3", "HADD2", "HMUL2", "HFMA2", "PRMT",
                                        "LDS", "STS", "LDL", "STL")}
        reports.append(f"{kind} {start:#x}-{end:#x} ({len(body)} instr): "
                       + ", ".join(f"{op} {n}" for op, n in ops.items())
                       + f", DEPBAR {[t.split()[-1] for t in body if t.startswith('WARPGROUP.DEPBAR')]}")
    return reports


def _signature(v: Variant, block_m: int, has_zero: bool) -> tuple[dict, dict]:
    layouts = _layouts(block_m)
    dtypes = dict(w="i32", s="bf16", z="u8" if has_zero else "bf16", x="bf16")
    sig = {f"{k}_desc": f"tensordesc<{dtypes[k]}{BOXES['s' if k == 'z' and not has_zero else k](block_m, v.cols)},"
           f"{layouts['s' if k == 'z' and not has_zero else k]!r}>" for k in "wszx"}
    sig.update(out_ptr="*bf16" if v.deterministic else "*fp32", part_ptr="*fp32", cnt_ptr="*i32", M="i32", N="i32",
               K="i32", programs="i32")
    consts = _constexprs(v, has_zero)
    sig.update({name: "constexpr" for name in consts})
    return sig, consts


def compile_only() -> None:
    """sm_90 compile of each variant at BLOCK_M 16 and 64, with and without zero points: registers,
    spills (stack), shared memory, setmaxnreg values, and the wgmma loops of the SASS."""
    for v in VARIANTS:
        for block_m in BATCHES:
            for has_zero in (True, False):
                sig, consts = _signature(v, block_m, has_zero)
                compiled = compile_sm90(_w4a16_ws_kernel, sig, consts)
                cubin = read_cubin(compiled)
                print(f"{v.name} BLOCK_M {block_m} {'asym' if has_zero else 'sym'}: {cubin.resources} smem "
                      f"{compiled.metadata.shared} (ring + A {v.smem_bytes(block_m, has_zero)}) setmaxnreg "
                      f"{cubin.maxnreg} bare BAR.SYNC 0x0: {cubin.bare_cta_barriers}", flush=True)
                for line in _loop_report(cubin.sass):
                    print("   ", line)


# ---------------------------------------------------------------------------------------------
# GPU run


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref).norm() / ref.norm())


def measure(out_dir: str) -> None:
    """Per (M, N, K): each variant (asymmetric and symmetric int4) against x @ qw.dequantize(bf16).T, then
    the GPU time (time_ms) of each variant's call (and kernel alone), rooftop.quant_matmul (asymmetric, the
    format of today's figures; tuned on its first call) and cuBLAS F.linear with the bf16 weight. The
    deterministic-epilogue variants run last (module docstring)."""
    import torch.nn.functional as F

    import rooftop
    from rooftop.ops._autotune import time_ms
    from rooftop.ops.quant_matmul import quantize_weight

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-gluon-quant.json")

    def record(shape, provider, fn, ref=None, kernel=None, watchdog=False):
        row = dict(shape=list(shape), provider=provider)
        rows.append(row)
        try:
            out = fn()
            if watchdog:  # every shape: its programs' unit ranges (and so their phases) differ
                wait_or_exit(WATCHDOG_S, f"{provider} at {shape}", save)
            torch.cuda.synchronize()
            if ref is not None:
                row["rel_err"] = _rel_err(out, ref)
            if ref is None or row["rel_err"] < 1.5e-2:
                row["us"] = time_ms(fn) * 1e3
                if kernel is not None:
                    row["kernel_us"] = time_ms(kernel) * 1e3
            else:
                row["error"] = "wrong result"
        except Exception as e:  # a variant that fails is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(row), flush=True)
        save()

    cases = []  # (shape, x, w, {format: (qw, reference)}) for every (M, N, K)
    for M in BATCHES:
        for N, K in SHAPES:
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5
            formats = {}
            for fmt in ("asym", "sym"):
                qw = quantize_weight(w, 4, GROUP, symmetric=fmt == "sym")
                formats[fmt] = qw, x.float() @ qw.dequantize(torch.bfloat16).float().t()
            cases.append(((M, N, K), x, w, formats))

    def run_variants(variants):
        for shape, x, w, formats in cases:
            for fmt, (qw, ref) in formats.items():
                for v in variants:
                    call = W4A16Call(x, qw, v, num_sms)
                    # the kernel alone for the format of today's figures (asymmetric) only: time is short
                    record(shape, f"{v.name}_{fmt}", call, ref, call.kernel if fmt == "asym" else None, watchdog=True)

    run_variants([v for v in VARIANTS if not v.deterministic])
    for shape, x, w, formats in cases:
        qw, ref = formats["asym"]
        record(shape, "rooftop_asym", lambda: rooftop.quant_matmul(x, qw), ref)
        record(shape, "cublas", lambda: F.linear(x, w))
    run_variants([v for v in VARIANTS if v.deterministic])
    _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    """us per shape and provider (kernel alone in brackets) and cuBLAS's time over it."""
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    print(f"\n{'provider':>26} " + " ".join(f"{f'{M}x{N}x{K}':>20}" for M in BATCHES for N, K in SHAPES))
    for p in providers:
        line = f"{p:>26} "
        for M in BATCHES:
            for N, K in SHAPES:
                cells = {r["provider"]: r for r in rows if r["shape"] == [M, N, K]}
                cell, cublas = cells.get(p, {}), cells.get("cublas", {}).get("us")
                us = cell.get("us")
                text = "-" if us is None else f"{us:5.1f}" + (f" [{cell['kernel_us']:4.1f}]" if "kernel_us" in cell
                                                               else "") + (f" {cublas / us:4.2f}x" if cublas else "")
                line += f"{text:>20} "
        print(line)


if __name__ == "__main__":
    main("gluon-quant", compile_only, measure)
