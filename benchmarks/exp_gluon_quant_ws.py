r"""Experiment (issue 6): a W4A16 GEMM for prefill-sized batches (M = 64-256 rows of x) in Gluon on the H200 in
which warp groups of their own dequantize the int4 weight into shared memory while the tensor cores work.

Why: at M = 256, rooftop.quant_matmul runs dequantize + cuBLAS (0.55x cuBLAS bf16: the bf16 weight is written
and read back); at M = 64 its Triton swap-AB kernel reaches 0.9-1.2x. The GEMM is compute-bound at M = 256
(28672 x 8192: cuBLAS ~187 us, ~650 TFLOP/s) and the dequantization is ~235M codes x ~3 instructions, ~20 us
of the H200's issue if spread over all SMs: a kernel that hides it under the MMA can match cuBLAS at M = 256 and,
reading 4.2 bits a weight instead of 16, beat it at M = 64. benchmarks/exp_gluon_quant.py (consumers dequantizing
for their own MMA) ran slower than the Triton kernel at M = 16-64: here the MMA warp groups never dequantize.

The kernel (its design, mbarrier protocol and measured figures in its docstring) lives in the library:
src/rooftop/ops/quant_matmul_sm90.py (`_w4a16_ws_kernel`, `Variant`, `QuantWSPlan`), imported here; the library's
VARIANTS are the winners of the run below, tuner candidates of rooftop.quant_matmul on sm_90 GPUs. This file keeps
the experiment: its wider variant table (VARIANTS below, library Variant objects), the protocol model
(`simulate_protocol`: a Python mirror of the partitions' waits and arrivals) and the stream-K bookkeeping check
(`check_stream_k`), the offline compile report, and the GPU run.

Measured (H200, 2026-12-01, int4 group 128 with zero points, bf16 x, no bias, graph replay, L2 cold;
/tmp/b5/logs/exp-gluon-quant-ws.log of that session): every variant correct (rel err 1.66e-3); x cuBLAS bf16:
                    64x4096^2  64x14336x4096  64x4096x14336  64x28672x8192 | 256x4096^2  256x14336x4096  256x4096x14336  256x28672x8192
  library (untimed)   0.66x       1.07x          1.08x          1.20x      |   0.77x        0.54x           0.57x           0.54x
  m64n256_c1d2_s4w3   0.34x       0.82x          0.29x          1.34x      |
  m64n256 ..._sk      0.48x       1.08x          0.89x          1.28x      |
  m64n128_c1d1_s8w3_sk 0.80x      1.10x          1.17x          1.19x      |
  m256n128_c2d1_s4w3                                                       |   0.44x        0.82x           0.33x           0.89x
  m256n128 ..._sk                                                          |   0.51x        0.65x           0.69x           0.89x
  m128n256_c2d1_s3w4_sk                                                    |   0.44x        0.54x           0.57x           0.73x
  m128n128_c2d1_s6w3_sk                                                    |   0.65x        0.58x           0.65x           0.65x

Offline sm_90 compile (Triton 3.6, --compile-only; the asym / sym pairs agree within 1-2%): every variant compiles,
no LDL / STL in any loop, no bare CTA barrier after the fork; launch REG 128 (168 for the 13-warp m64n128);
shared memory 215-223 KB. Registers a thread (consumer 0 / consumer 1 / dequantizer(s) / loader):
  ws_m256n128_c2d1_s4w3(_sk)  200 / 200 / 88 / 24      ws_m128n256_c2d1_s3w4_sk  192 / 176 / 120 / 24
  ws_m128n128_c2d1_s6w3_sk    216 / 160 / 112 / 24     ws_m64n256_c1d2_s4w3(_sk) 256 / - / 96 x 2 / 24
  ws_m64n128_c1d1_s8w3_sk     256 / - / 96 / 24
The stream-K variants and m128n256 hold 8-16 bytes of stack: ptxas saves 2-3 values computed before the fork
across setmaxnreg (STL at the entry, 1 LDL each in the partitions' prologue / epilogue), none in a loop.
(Those figures compiled with no alignment attributes; --compile-only now specialises as a GPU launch on aligned
tensors does (pointers, N and K multiples of 16), as the measured kernels were: then the stream-K 256 x 128, 128 x
256 and 128 x 128 variants hold 16 bytes of stack (13-18 LDL / STL), one LDL per segment in a consumer's segment
loop, and ws_m128n128_c2d1_s6w3_sk 1 LDL in its dequantizer's loop (maybe on the tile-change path).)
Consumer k-step loop: 66-68 instructions (8 HGMMA 64xNx16, 2 waits, 1 arrive, 2 bar.sync) at 128 rows or 64 x 256,
52-57 at 64 x 128. Dequantizer loop (one group, 2 k-steps: 128 codes a thread at 128 columns, 256 at 256): 433-452
instructions at 128 columns (3.4-3.5 a code, with zero points; 3.1-3.3 symmetric), 720 at 256 (2.8); ~30 of them are
the cursor's division at a tile change, not executed per group: ~3.2 a code on the common path. At 128 columns:
74 LOP3 (64 decode, the rest swizzled store addresses), 49 SHF, 24 PRMT (8 of them the zero pairs), 128 packed
bf16 (HADD2 + HMUL2), 16 STS.128, 6 LDS, 6 SYNCS (waits, arrives, expect), 8 BAR.SYNC.

Prediction (before any GPU run; cuBLAS at M = 64 is the bf16 weight's DRAM read, ~10 / 30 / 30 / 115 us):
  M = 256 (compute-bound; 256 x 128 tiles dequantized once for all rows, ~1 dequantizer issue slot in 6): the
    mainloop at ~65-70% of the tensor peak as cuBLAS; 28672 x 8192 stream-K ~180 us (~1.0-1.05x; data-parallel
    0.9x: 224 tiles are 1.7 waves), 14336 x 4096 ~50 us (~1.0x), 4096 x 14336 stream-K ~52 us (~1.0x: 32 tiles cut
    4 ways), 4096^2 ~17-20 us (0.85-1.0x: 15 steps a program, the fix-up's 4 x 128 KB partials matter; m128n128
    the better there).
  M = 64 (m64n256 stream-K): per k-step 2 MFLOP of MMA (~300 cycles at the tensor peak) against ~400 issue cycles
    of two dequantizer warps a scheduler and ~90 KB of shared-memory traffic (B stores 32 KB, wgmma reads 48 KB,
    TMA 16 KB: ~700 cycles at 128 B a cycle): shared-memory bound, ~0.4 us a step: 28672 x 8192 ~45 us (~2.5x),
    14336 x 4096 and 4096 x 14336 ~15 us (~2x), 4096^2 ~7 us (~1.4x).

Usage:
  .venv/bin/python benchmarks/exp_gluon_quant_ws.py --compile-only   # no GPU: protocol model, then per variant
                                                                     # registers / spills / smem / SASS loops
  .venv/bin/python benchmarks/exp_gluon_quant_ws.py --compile-only --library --fp16 --bias  # the library's
                                                                     # variants, bf16 / fp16 x, with / without bias
  # H200 (from the repo root): per shape and M, cuBLAS and rooftop.quant_matmul (untimed default unless
  # --tune-library), then each variant checked against x @ qw.dequantize(bf16).T (rel err < 3e-3; symmetric
  # format checked once an M) and timed (time_ms: graph replay, L2 flushed); each variant's first launch on each
  # shape under a 10 s watchdog (exit 124 on a deadlock, results so far saved); nothing new launched after
  # --budget s (120); JSON to OUT_DIR/exp-gluon-quant-ws.json
  PYTHONPATH=src timeout 170 python benchmarks/exp_gluon_quant_ws.py OUT_DIR [--batches 16,64,256] [--variants m256]
"""
from __future__ import annotations

import json
import os
import random
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gluon_sm90 import (MBarrier, compile_sm90, issues_wgmma, read_cubin, results, sass_loops, step,  # noqa: E402
                        wait_or_exit)
from rooftop.ops import quant_matmul_sm90 as qsm90, softmax_sm90  # noqa: E402
from rooftop.ops.quant_matmul_sm90 import BLOCK_K, GROUP, SMEM_LIMIT, Variant  # noqa: E402

SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))  # N, K
BATCHES = (64, 256)
WATCHDOG_S = 10.0
REL_TOL = 3e-3

# The variants of the run (the library's VARIANTS are the winners among them). Register budgets: 128 threads x
# (sum over the warp groups) <= 65536, i.e. the setmaxnreg values sum to <= 512 with the default partition
# (consumer 0) given the rest by Triton. An accumulator of 128 fp32 (128 x 128 or 64 x 256 a warp group) needs
# ~180-200 a thread with the epilogue; a dequantizer 88-96 at 128 columns, 120 at 256.
VARIANTS = (
    # M = 256: one 256 x 128 tile dequantized once for all rows; 2 x 128-row consumers
    qsm90.M256_N128,
    qsm90.M256_N128_SK,
    # M = 128-256: 128 x 256 tiles, 2 x 64-row consumers, one dequantizer of 256 columns (each weight tile
    # dequantized twice at M = 256)
    Variant(128, 256, 2, 1, 3, 4, True, 176, 120),
    # M = 128-256 where 256-row tiles are too few for the SMs (N = 4096: 32): 128 x 128 tiles, 2 x 64-row consumers
    Variant(128, 128, 2, 1, 6, 3, True, 160, 112),
    # M <= 64: one 64-row consumer; 256 columns (two dequantizers) or 128 (one, more tiles); the library's M <= 64
    # candidates until session 18 (since: the register-A kernel's, exp_gluon_quant_rs.py)
    Variant(64, 256, 1, 2, 4, 3, False, 0, 96),
    Variant(64, 256, 1, 2, 4, 3, True, 0, 96),
    Variant(64, 128, 1, 1, 8, 3, True, 0, 96),
)


# ---------------------------------------------------------------------------------------------
# Offline check (no GPU)


def _loop_report(sass: str, dq_cols: int) -> list[str]:
    """One line per innermost loop of the SASS that issues wgmma (a consumer's k-step loop) or dequantizes (a
    loop with packed bf16 math: the dequantizer's): instruction count and the instructions of interest."""
    def dequantizes(body):
        return any(t.split()[0].startswith(("HMUL2", "HADD2", "F2FP")) for t in body if t.split())

    loops = sass_loops(sass, lambda body: issues_wgmma(body) or dequantizes(body))
    spans = [(s, e) for s, e, _ in loops]
    reports = []
    for start, end, body in loops:
        if any(start <= s0 and e0 <= end and (s0, e0) != (start, end) for s0, e0 in spans):
            continue  # an outer loop
        ops = [t.split()[1] if t.startswith("@") else t.split()[0] for t in body if t.split()]
        count = lambda prefix: sum(op.startswith(prefix) for op in ops)  # noqa: E731
        kind = "consumer k-step loop" if issues_wgmma(body) else "dequantizer loop (a group: 2 k-steps)"
        names = ("HGMMA", "SYNCS", "BAR", "SHF", "LOP3", "PRMT", "HADD2", "HMUL2", "HFMA2", "FFMA", "F2FP", "LDS",
                 "STS", "LDL", "STL")
        line = f"{kind} {start:#x}-{end:#x}: {len(body)} instr, " + ", ".join(f"{n} {count(n)}" for n in names)
        if kind.startswith("dequantizer"):
            codes = GROUP * dq_cols // 128  # a thread an iteration
            line += f"; {len(body) / codes:.2f} instr a code ({codes} codes a thread an iteration)"
        reports.append(line)
    return reports


def _signature(v: Variant, has_zero: bool, dtype: torch.dtype = torch.bfloat16,
               has_bias: bool = False) -> tuple[dict, dict, dict]:
    """(signature, constexprs, attrs) of the library kernel for an offline compile, specialised as a GPU launch on
    aligned tensors is (pointers, N and K multiples of 16; M is not specialised)."""
    layouts, boxes = qsm90.layouts(v, dtype), qsm90.boxes(v)
    x_type = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    dtypes = dict(x=x_type, w="i32", s="i32", z="i16")
    sig = {}
    for k in "xwsz":
        kk = k if (k != "z" or has_zero) else "s"
        sig[f"{k}_desc"] = f"tensordesc<{dtypes[kk]}{boxes[kk]},{layouts[kk]!r}>"
    sig.update(out_ptr=f"*{x_type}", bias_ptr=f"*{x_type}", ws_ptr="*fp32", cnt_ptr="*i32", M="i32", N="i32",
               K="i32")
    consts = qsm90.constexprs(v, has_zero, has_bias)
    sig.update({name: "constexpr" for name in consts})
    names = list(sig)
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in ("out_ptr", "bias_ptr", "ws_ptr", "cnt_ptr", "N", "K")}
    return sig, consts, attrs


def simulate_protocol(segments: list[int], stages: int, w_stages: int, consumers: int, dequantizers: int,
                      seed: int) -> None:
    """The kernel's mbarrier protocol for one program whose steps form `segments` (steps of each tile piece, even)
    under a random interleaving of the partitions, the TMA landings (in any order) and the wgmma's shared-memory
    reads (performed any time between the issue and the wait that retires them): raises on a deadlock or when a
    buffer read or overwritten holds another step's data. Buffers hold the step (x, B per dequantizer) or group
    (words) they were last filled with; an MMA's reads are checked when performed, so a refill or a dequantizer
    store that lands on a slot before its previous MMA read it is caught. Mirrors _loader, _dequantizer and
    _consumer; actors yield True on progress, False while spinning on a barrier."""
    rng = random.Random(seed)
    n_steps = sum(segments)
    n_groups = n_steps // 2
    x_ready = [MBarrier(1) for _ in range(stages)]
    b_ready = [MBarrier(dequantizers) for _ in range(stages)]
    mma_done = [MBarrier(consumers) for _ in range(stages)]
    w_ready = [[MBarrier(1) for _ in range(w_stages)] for _ in range(dequantizers)]
    x_held = [None] * stages
    b_held = [[None] * dequantizers for _ in range(stages)]
    w_held = [[None] * w_stages for _ in range(dequantizers)]
    in_flight: list = []  # TMA copies issued, not landed: (kind, owner, slot, tag)
    mma_reads: list[list] = [[] for _ in range(consumers)]  # per consumer: [(slot, step)] per wgmma group issued

    def perform(c, group):
        for slot, i in group:
            if x_held[slot] != i or any(b != i for b in b_held[slot]):
                raise AssertionError(f"consumer {c}, step {i}: slot {slot} holds x {x_held[slot]}, B {b_held[slot]}")

    def wait(bar, parity):
        while not bar.passes(parity):
            yield False

    def loader():
        for i in range(n_steps):
            yield from wait(mma_done[i % stages], ((i // stages) & 1) ^ 1)
            in_flight.append(("x", 0, i % stages, i))
            yield True

    def dequantizer(d):
        for g in range(min(n_groups, w_stages)):
            in_flight.append(("w", d, g, g))
        yield True
        for g in range(n_groups):
            ws = g % w_stages
            yield from wait(w_ready[d][ws], (g // w_stages) & 1)
            if w_held[d][ws] != g:
                raise AssertionError(f"dequantizer {d}: group {g} found words of {w_held[d][ws]}")
            if g + w_stages < n_groups:  # after the thread barrier: every thread's words are in registers
                in_flight.append(("w", d, ws, g + w_stages))
            yield True
            for i in (2 * g, 2 * g + 1):  # step i - 1's publication deferred past step i's dequantization
                if i > 0:
                    b_ready[(i - 1) % stages].arrive()  # fence, bar.sync, arrive
                yield from wait(mma_done[i % stages], ((i // stages) & 1) ^ 1)
                b_held[i % stages][d] = i  # stores
                yield True
        if n_groups:
            b_ready[(2 * n_groups - 1) % stages].arrive()
            yield True

    def consumer(c):
        i = 0
        for seg in segments:
            for j in range(seg):
                slot = i % stages
                yield from wait(x_ready[slot], (i // stages) & 1)
                yield from wait(b_ready[slot], (i // stages) & 1)
                mma_reads[c].append([(slot, i)])
                while len(mma_reads[c]) > 1:  # wait(1): all but the last group have read their operands
                    perform(c, mma_reads[c].pop(0))
                if j > 0:
                    mma_done[(i - 1) % stages].arrive()
                i += 1
                yield True
            while mma_reads[c]:  # wait(0)
                perform(c, mma_reads[c].pop(0))
            mma_done[(i - 1) % stages].arrive()
            yield True

    actors = [loader()] + [dequantizer(d) for d in range(dequantizers)] + [consumer(c) for c in range(consumers)]
    spinning: set = set()
    while actors or in_flight:
        late = [c for c in range(consumers) if mma_reads[c]]
        pick = rng.randrange(len(actors) + (1 if in_flight else 0) + len(late))
        if pick >= len(actors) + (1 if in_flight else 0):  # a wgmma group performs its reads early
            c = late[pick - len(actors) - (1 if in_flight else 0)]
            perform(c, mma_reads[c].pop(0))
            continue
        if pick == len(actors):
            kind, owner, slot, tag = in_flight.pop(rng.randrange(len(in_flight)))
            if kind == "x":
                x_held[slot] = tag
                x_ready[slot].arrive()
            else:
                w_held[owner][slot] = tag
                w_ready[owner][slot].arrive()
            spinning.clear()
            continue
        step(actors[pick], actors, spinning)
        if actors and not in_flight and len(spinning) == len(actors):
            raise AssertionError(f"deadlock: segments {segments}, stages {stages}, w_stages {w_stages}")


def _stream_k_pieces(tiles: int, k_tiles: int, programs: int) -> list[list[tuple[int, int, int, bool]]]:
    """Per program, its segments (tile, k0, k1, head) as _schedule / _consumer / _fixup cut them (head: _fixup's
    `start <= first_unit`)."""
    total2 = tiles * (k_tiles // 2)
    out = []
    for p in range(programs):
        start = 2 * (p * total2 // programs)
        end = 2 * ((p + 1) * total2 // programs)
        segs, i = [], start
        while i < end:
            tile, k0 = divmod(i, k_tiles)
            k1 = min(k_tiles, k0 + end - i)
            segs.append((tile, k0, k1, start <= tile * k_tiles))
            i += k1 - k0
        out.append(segs)
    return out


def check_stream_k(tiles: int, k_tiles: int, programs: int) -> None:
    """_fixup's bookkeeping: for every cut tile, programs first .. last (its formulas) are exactly those holding
    a piece of it, in k order, covering it; the head piece (k0 = 0) is program first's and the only one `head`
    marks; every other piece is its program's first segment (so the slot (program, consumer) is written once, and
    it is stored before the program waits for anything: a head waits only for later programs' first segments,
    so the waits cannot form a cycle)."""
    total2 = tiles * (k_tiles // 2)
    pieces = _stream_k_pieces(tiles, k_tiles, programs)
    for p, segs in enumerate(pieces):
        assert sum(k1 - k0 for _, k0, k1, _ in segs) % 2 == 0
    for tile in range(tiles):
        first_unit = tile * k_tiles
        first = ((first_unit // 2 + 1) * programs - 1) // total2
        last = ((first_unit // 2 + k_tiles // 2) * programs - 1) // total2
        holders = [(p, k0, k1, head) for p, segs in enumerate(pieces) for t, k0, k1, head in segs if t == tile]
        assert [h[0] for h in holders] == list(range(first, last + 1)), (tile, holders, first, last)
        assert holders[0][1] == 0 and holders[-1][2] == k_tiles and all(
            a[2] == b[1] for a, b in zip(holders, holders[1:])), holders
        if len(holders) > 1:
            assert [h[3] for h in holders] == [True] + [False] * (len(holders) - 1), (tile, holders)
            for g, k0, k1, _ in holders[1:]:
                assert pieces[g][0][:3] == (tile, k0, k1), (tile, g, pieces[g])


def check_protocol(runs: int = 300) -> None:
    """Random interleavings of simulate_protocol for each variant's ring depths and a few segment patterns,
    and check_stream_k on the benchmark shapes' schedules."""
    patterns = ([64], [128, 128], [2, 128, 6], [10], [2], [64, 64, 64])
    shapes = SHAPES + ((4096 + 64, 4096), (200, 1024))  # N not a multiple of the tile (the library's tests)
    n = 0
    for v in VARIANTS:
        for segments in patterns:
            for seed in range(runs // len(patterns)):
                simulate_protocol(segments, v.stages, v.w_stages, v.consumers, v.dequantizers, seed)
                n += 1
    for v in VARIANTS:
        for M in (16, 17, 64, 100, 256):
            for N, K in shapes:
                tiles = v.tiles(M, N)
                check_stream_k(tiles, K // BLOCK_K, min(132, tiles * (K // GROUP)))
    print(f"protocol model: {n} random interleavings, no deadlock, every read saw its own step; stream-K "
          f"bookkeeping checked for every variant x M in (16, 17, 64, 100, 256) x shape on 132 SMs", flush=True)


def _partition_regs(ptx: str, v: Variant) -> str:
    """Registers a thread of each partition (setmaxnreg): the default partition (consumer 0) gets what Triton
    leaves, read from its first setmaxnreg after the prologue's `inc 256`."""
    values = re.findall(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)
    default = values[1][1] if len(values) > 1 and values[0] == ("inc", "256") else "?"
    text = f"consumer 0: {default}"
    if v.consumers == 2:
        text += f", consumer 1: {v.consumer_regs}"
    return text + f", dequantizer x {v.dequantizers}: {v.dequant_regs}, loader: {v.loader_regs}"


def compile_only(variants=None, formats=(True, False), dtypes=(torch.bfloat16,), biases=(False,)) -> None:
    """sm_90 compile of each variant (with and without zero points, per x dtype and with or without a bias):
    registers a thread per partition, spills (local memory: the launch's STACK, and LDL / STL inside the loops),
    shared memory, and the dequantizer's / consumers' loops of the SASS."""
    for v in variants or VARIANTS:
        for dtype in dtypes:
            for has_bias in biases:
                for has_zero in formats:
                    t0 = time.time()
                    sig, consts, attrs = _signature(v, has_zero, dtype, has_bias)
                    compiled = compile_sm90(qsm90._w4a16_ws_kernel, sig, consts, attrs=attrs)
                    cubin = read_cubin(compiled)
                    loops = _loop_report(cubin.sass, v.dq_cols)
                    in_loops = sum(int(n) for line in loops for n in re.findall(r"(?:LDL|STL) (\d+)", line))
                    what = f"{'asym' if has_zero else 'sym'} {str(dtype)[6:]}{' bias' if has_bias else ''}"
                    print(f"{v.name} {what}: {cubin.resources} (launch), registers a thread "
                          f"{_partition_regs(compiled.asm['ptx'], v)}; LDL/STL {cubin.local_memory_ops} ({in_loops} "
                          f"in the loops); smem {compiled.metadata.shared} B (rings {v.smem_bytes(has_zero)}); bare "
                          f"BAR.SYNC 0x0 {cubin.bare_cta_barriers} [{time.time() - t0:.0f} s]"
                          + (" OVER THE 227 KB LIMIT" if compiled.metadata.shared > SMEM_LIMIT else ""), flush=True)
                    for line in loops:
                        print("   ", line)


# ---------------------------------------------------------------------------------------------
# GPU run


class W4A16Call:
    """x @ dequantize(qw).T by the library's kernel with variant v on `num_sms` SMs (qsm90.QuantWSPlan, made once
    per (x, qw) pair: descriptors, grid); a call allocates the output (and stream-K's partials) and launches once."""

    def __init__(self, x: torch.Tensor, qw, v: Variant, num_sms: int, lean: bool = True):
        assert qsm90.supports(x, qw.packed, qw.scales, qw.zeros, qw.bits, qw.group_size), "a layout the kernel takes"
        self.args = (x, qw.packed, qw.scales, qw.zeros, None)
        kept, softmax_sm90.LEAN_BARRIERS = softmax_sm90.LEAN_BARRIERS, lean  # read by the plan's constexprs
        try:
            self.plan = qsm90.QuantWSPlan(v, x, qw.packed, qw.scales, qw.zeros, None, num_sms)
        finally:
            softmax_sm90.LEAN_BARRIERS = kept

    def __call__(self) -> torch.Tensor:
        M, N, _ = self.plan.sizes
        out = torch.empty(M, N, device=self.args[0].device, dtype=self.args[0].dtype)
        self.plan(*self.args, out)
        return out


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref).norm() / ref.norm())


def _pick(v: Variant, M: int) -> bool:
    """Which variants run at M rows: 256-row tiles at M > 128, 128-row at M > 64, 64-row at M <= 128."""
    return (v.block_m == 256 and M > 128) or (v.block_m == 128 and M > 64) or (v.block_m == 64 and M <= 128)


def measure(out_dir: str, batches=BATCHES, budget_s: float = 120.0, tune_library: bool = False,
            variants=VARIANTS, full_barriers: bool = False) -> None:
    """Per shape (N, K) and M: cuBLAS F.linear on the dequantized bf16 weight, rooftop.quant_matmul (its untimed
    default unless tune_library: dequantize + cuBLAS at M > 64, the Triton swap-AB kernel at M <= 64; tuning
    compiles ~10 Triton kernels), then each variant picked for M (int4 group 128 with zero points, the library's
    default format) checked against x @ qw.dequantize(bf16).T and timed (time_ms: graph replay, L2 flushed);
    the symmetric format is checked (not timed) on the first shape with the first variant of each M. The
    variants run after the baselines, so that a fault in one (which ends the process's CUDA context) loses no
    baseline of its shape. Past budget_s nothing more is launched. full_barriers: each variant also as "NAME_full",
    compiled with every barrier Membar puts (softmax_sm90.LEAN_BARRIERS False: the A/B of the marks).
    """
    import torch.nn.functional as F

    if not tune_library:
        os.environ["ROOFTOP_AUTOTUNE"] = "0"
    import rooftop
    from rooftop.ops._autotune import time_ms
    from rooftop.ops.quant_matmul import quantize_weight

    t_start = time.monotonic()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, save = results(out_dir, "exp-gluon-quant-ws.json")
    launched: set[str] = set()
    cublas_us: dict[tuple, float] = {}
    print(f"{torch.cuda.get_device_name(0)}, {num_sms} SMs, torch {torch.__version__}, batches {batches}", flush=True)

    def record(shape, provider, fn, ref=None, watchdog=False, timed=True):
        row = dict(shape=list(shape), provider=provider)
        rows.append(row)
        try:
            t0 = time.monotonic()
            out = fn()
            if watchdog:  # every shape: its programs' step ranges (and so their phases) differ
                wait_or_exit(WATCHDOG_S, f"{provider} at {shape}", save)
            torch.cuda.synchronize()
            if provider not in launched:
                row["first_call_s"] = round(time.monotonic() - t0, 2)  # compile included
                launched.add(provider)
            if ref is not None:
                row["rel_err"] = _rel_err(out, ref)
                if not row["rel_err"] < REL_TOL:  # NaN fails too
                    row["error"] = "wrong result"
            if timed and "error" not in row:
                row["us"] = time_ms(fn) * 1e3
                if provider == "cublas":
                    cublas_us[tuple(shape)] = row["us"]
                elif tuple(shape) in cublas_us:
                    row["vs_cublas"] = round(cublas_us[tuple(shape)] / row["us"], 3)  # > 1: faster than cuBLAS
        except Exception as e:  # a variant that fails is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(row), flush=True)
        save()

    for n_shape, (N, K) in enumerate(SHAPES):
        if time.monotonic() - t_start > budget_s:
            print(f"budget of {budget_s:.0f} s spent: shapes from {N}x{K} on not run", flush=True)
            break
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5
        qw = quantize_weight(w, 4, GROUP)
        w_dq = qw.dequantize(torch.bfloat16)
        qs = quantize_weight(w, 4, GROUP, symmetric=True) if n_shape == 0 else None
        for M in batches:
            shape = (M, N, K)
            x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
            ref = x.float() @ w_dq.float().t()
            record(shape, "cublas", lambda: F.linear(x, w_dq))
            record(shape, "rooftop", lambda: rooftop.quant_matmul(x, qw), ref)
            for v in variants:
                if not _pick(v, M):
                    continue
                if time.monotonic() - t_start > budget_s:
                    print(f"budget spent: {v.name} at {shape} not run", flush=True)
                    continue
                record(shape, v.name, W4A16Call(x, qw, v, num_sms), ref, watchdog=True)
                if full_barriers:
                    record(shape, v.name + "_full", W4A16Call(x, qw, v, num_sms, lean=False), ref, watchdog=True)
                if qs is not None and v is next(u for u in variants if _pick(u, M)):  # one symmetric check an M
                    ref_s = x.float() @ qs.dequantize(torch.bfloat16).float().t()
                    record(shape, v.name + "_sym", W4A16Call(x, qs, v, num_sms), ref_s, watchdog=True, timed=False)
    _print_table(rows, batches)
    print(f"total {time.monotonic() - t_start:.0f} s", flush=True)


def _print_table(rows: list[dict], batches) -> None:
    """us per shape and provider and the ratio cuBLAS time / its time (> 1: faster than cuBLAS)."""
    providers = [p for p in dict.fromkeys(r["provider"] for r in rows) if not p.endswith("_sym")]
    print(f"\n{'provider':>34} " + " ".join(f"{f'{M}x{N}x{K}':>17}" for M in batches for N, K in SHAPES))
    for p in providers:
        line = f"{p:>34} "
        for M in batches:
            for N, K in SHAPES:
                cells = {r["provider"]: r for r in rows if r["shape"] == [M, N, K]}
                cell, cublas = cells.get(p, {}), cells.get("cublas", {}).get("us")
                us = cell.get("us")
                text = ("err" if "error" in cell else "-") if us is None else f"{us:6.1f}" + (
                    f" {cublas / us:4.2f}x" if cublas else "")
                line += f"{text:>17} "
        print(line)


def main() -> None:
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?", default="gluon-quant-ws")
    parser.add_argument("--compile-only", action="store_true")
    parser.add_argument("--variants", default="", help="comma-separated substrings of variant names")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)))
    parser.add_argument("--budget", type=float, default=120.0, help="seconds after which nothing more is launched")
    parser.add_argument("--tune-library", action="store_true", help="let rooftop.quant_matmul tune (compiles)")
    parser.add_argument("--library", action="store_true", help="the library's variants only (qsm90.VARIANTS)")
    parser.add_argument("--fp16", action="store_true", help="--compile-only: also fp16 x")
    parser.add_argument("--bias", action="store_true", help="--compile-only: also with a bias")
    parser.add_argument("--full-barriers", action="store_true", help="each variant also with Membar's barriers all "
                        "kept (_full)")
    args = parser.parse_args()
    table = tuple(v for v in qsm90.VARIANTS if isinstance(v, Variant)) if args.library else VARIANTS
    variants = [v for v in table if not args.variants or any(s in v.name for s in args.variants.split(","))]
    if args.compile_only:
        check_protocol()
        compile_only(variants, dtypes=(torch.bfloat16, torch.float16) if args.fp16 else (torch.bfloat16,),
                     biases=(False, True) if args.bias else (False,))
    else:
        measure(args.out, tuple(int(b) for b in args.batches.split(",")), args.budget, args.tune_library, variants,
                args.full_barriers)


if __name__ == "__main__":
    main()