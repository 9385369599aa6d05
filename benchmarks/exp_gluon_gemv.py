r"""Experiment (issue 6; journal 159-161): the batch-1 int4 / int8 GEMV with its words staged through a ring of TMA
boxes in shared memory (Gluon, sm_90), so that an SM keeps ~100-190 KB of words in flight where the Triton GEMV
(quant_matmul `_qgemv_kernel`) keeps ~30-40 KB in registers: ptxas issues each word row's load ~3-4 rows ahead of its
FMAs and no further, whatever the source order (item 161). Predicted: near a streaming read of the words (~8.5 us at
int4 14336 x 4096 with the GEMV's grid, item 153) where the library's GEMV takes 12.2 us. Seen (session 24, journal item
162, logs/h200-2026-12-02-s24/exp-gluon-gemv.log): slower everywhere (18.0 us there at best), and even READ_ONLY
(13.4 us) slower than the library's whole GEMV: bytes in flight are not what holds it.

The kernel, per program (4 warps; int4: BLOCK_N = 512 columns as two 256-column halves, a TMA box being at most 256
wide, a thread holding 2 adjacent columns of each half; int8: one half, 256 columns): its split of K, GPS whole groups
of 128, one group a ring slot (int4: two [16, 256] int32 boxes of word rows, int8 one [32, 256]: 32 KB). The first
STAGES groups are requested at once; group g is waited for (its slot's mbarrier phase), summed (each word row read
from shared memory by one 8-byte load a half; x's values taken from the group's 64 pairs, which every thread loads
whole, 16 loads of 16 bytes; each code one LOP3 and half a shift (int8: one PRMT) and one FMA into the thread's fp32
sum, by quant_matmul's `_unpack` / `_byte_codes`: magic + c, the magic and zero point taken off once a group with
x's sums over the group, added across the CTA), then every thread fences its shared reads against the async proxy
(the TMA refill writes through it), the CTA barrier, and one thread requests group g + STAGES into the slot. The
program's fp32 partial of its columns goes to ws[split], and the tile's last program to arrive sums the splits in
order into the bf16 output (deterministic, as quant_matmul `_store_output`).
Memory traffic: the words once (N K bits / 8 bytes), scales and zeros once, x from L2, ws (SPLIT x N x 4 bytes)
written and read back once from L2, the output written. Shared memory: STAGES x 32 KB (2 programs an SM at 3
stages, 3 at 2).

Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gluon_gemv.py OUT  (a GPU: each shape, split and ring depth
       checked against the float64 reference and timed by graph replay over input copies beside the library's tuned
       quant_matmul and cuBLAS bf16, then at 3 slots with READ_ONLY, the words streamed through the ring with
       almost no arithmetic: whether a time is the memory's or the issue's; OUT/exp-gluon-gemv.json)
       ... exp_gluon_gemv.py --compile-only  (no GPU: registers, spills, shared memory, the SASS of the group loop)"""
from __future__ import annotations

import collections

import torch
import torch.nn.functional as F
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma

from gluon_sm90 import compile_sm90, main, read_cubin, results, sass_loops, wait_or_exit
from rooftop.ops.quant_matmul import MAGIC15, _byte_codes, _unpack  # @triton.jit: Gluon calls them

HALF = gl.constexpr(256)  # columns a TMA box (its largest extent)
ROW_LAYOUT = gl.constexpr(gl.BlockedLayout([1, 2], [1, 32], [1, 4], [1, 0]))  # a [1, 256] half row: 2 columns a thread
X_LAYOUT = gl.constexpr(gl.BlockedLayout([64], [32], [4], [0]))  # a group's 64 pairs of x, all in every thread
SUM_LAYOUT = gl.constexpr(gl.BlockedLayout([1], [32], [4], [0]))  # the same 64 pairs spread over 64 threads
# (N, K): the benchmark shapes, each with the splits of K to time (programs = N / 512 (int8: 256) x split)
SHAPES = {(4096, 4096): (16, 32), (14336, 4096): (4, 8, 16), (4096, 14336): (14, 28, 56), (28672, 8192): (4, 8, 16)}
STAGES = (2, 3, 4)
BITS = (4, 8)


@gluon.jit
def _element(v, J: gl.constexpr):
    """Element J of v [2^n] held whole by every thread, as a scalar: halvings of the in-thread axis, no data moved."""
    for level in gl.static_range(6):
        if v.shape[0] > 1:
            lo, hi = gl.split(gl.reshape(v, [v.shape[0] // 2, 2]))
            v = hi if (J >> level) & 1 else lo
    return gl.sum(v, axis=0)


@gluon.jit
def _row_dot(words, pairs, R: gl.constexpr, dot, magic15, BITS: gl.constexpr, READ_ONLY: gl.constexpr):
    """dot + word row R's codes times their x (the group's pairs of x, held whole by every thread); READ_ONLY: + the
    words as floats (the ring's streaming rate, nearly no arithmetic; the result is wrong)."""
    if READ_ONLY:
        return dot + words.to(gl.float32)
    PAIRS: gl.constexpr = 16 // BITS  # pairs of x a word row
    if BITS == 8:
        codes = _byte_codes(words)
    for p in gl.static_range(PAIRS):
        pair = _element(pairs, PAIRS * R + p)
        x_even = (pair << 16).to(gl.float32, bitcast=True)
        x_odd = (pair & -65536).to(gl.float32, bitcast=True)
        if BITS == 4:
            even, _ = _unpack(words, 2 * p, magic15, 4)  # 256 + c (quant_matmul's: the pair's shift shared)
            odd, _ = _unpack(words, 2 * p + 1, magic15, 4)  # 16 + c
        else:
            even = codes[2 * p]
            odd = codes[2 * p + 1]
        dot = gl.fma(even, x_even, gl.fma(odd, x_odd, dot))
    return dot


@gluon.jit
def _scale_zero(s_ptr, z_ptr, offs):
    return gl.load(s_ptr + offs).to(gl.float32), gl.load(z_ptr + offs).to(gl.float32)


@gluon.jit
def _partial_sum(ws_ptr, offs, N, SPLITS, BATCH: gl.constexpr):
    """The sum of the SPLITS partials ws[s, offs] ([1, HALF] columns) in split order, BATCH loads in flight (.cg: other
    SMs wrote them)."""
    total = gl.zeros([1, HALF], gl.float32, ROW_LAYOUT)
    for first in range(0, SPLITS, BATCH):
        for j in gl.static_range(BATCH):
            total += gl.load(ws_ptr + (first + j) * N + offs, mask=(first + j < SPLITS) & (offs >= 0), other=0.0,
                             cache_modifier=".cg")
    return total


@gluon.jit
def _gemv_ring_kernel(x32_ptr, w_desc, s_ptr, z_ptr, ws_ptr, cnt_ptr, out_ptr, N, GPS, magic15,
                      BITS: gl.constexpr, STAGES: gl.constexpr, READ_ONLY: gl.constexpr = False):
    ROWS: gl.constexpr = 4 * BITS  # word rows a group of 128
    HALVES: gl.constexpr = 2 if BITS == 4 else 1  # boxes a slot (32 KB)
    pid_n = gl.program_id(0)
    split = gl.program_id(1)
    col0 = pid_n * (HALVES * HALF)
    g0 = split * GPS  # the program's first group
    SLOT_BYTES: gl.constexpr = HALVES * w_desc.block_type.nbytes
    w_smem = gl.allocate_shared_memory(gl.int32, [HALVES * STAGES, ROWS, HALF], w_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)  # the expect; the TMA bytes complete the phase
    for g in gl.static_range(STAGES):  # every slot's first group at once
        if g < GPS:
            mbarrier.expect(ready.index(g), SLOT_BYTES)
            for h in gl.static_range(HALVES):
                tma.async_copy_global_to_shared(w_desc, [(g0 + g) * ROWS, col0 + h * HALF], ready.index(g),
                                                w_smem.index(HALVES * g + h))
    cols = col0 + gl.arange(0, HALF, layout=gl.SliceLayout(0, ROW_LAYOUT))[None, :]
    acc0 = gl.zeros([1, HALF], gl.float32, ROW_LAYOUT)
    acc1 = gl.zeros([1, HALF], gl.float32, ROW_LAYOUT)  # int4's second half
    for g in range(GPS):
        slot = g % STAGES
        mbarrier.wait(ready.index(slot), (g // STAGES) & 1)
        x_group = x32_ptr + (g0 + g) * 64  # the group's 128 values of x as 64 bf16 pairs
        pairs = gl.load(x_group + gl.arange(0, 64, layout=X_LAYOUT))  # every thread: 16 loads of 16 bytes
        spread = gl.load(x_group + gl.arange(0, 64, layout=SUM_LAYOUT))  # a pair a thread, for the sums
        # sum of x over the codes read as 256 + c (even k), and 16 + c (odd k): across the CTA (shared memory)
        sum15 = gl.sum((spread << 16).to(gl.float32, bitcast=True), axis=0)
        sum19 = gl.sum((spread & -65536).to(gl.float32, bitcast=True), axis=0)
        dot0 = gl.zeros([1, HALF], gl.float32, ROW_LAYOUT)
        dot1 = gl.zeros([1, HALF], gl.float32, ROW_LAYOUT)
        for r in gl.static_range(ROWS):
            dot0 = _row_dot(w_smem.index(HALVES * slot).slice(r, 1, dim=0).load(ROW_LAYOUT), pairs, r, dot0, magic15,
                            BITS, READ_ONLY)
            if HALVES == 2:
                dot1 = _row_dot(w_smem.index(2 * slot + 1).slice(r, 1, dim=0).load(ROW_LAYOUT), pairs, r, dot1,
                                magic15, BITS, READ_ONLY)
        fence_async_shared()  # this thread's reads of the slot ordered before the refill's async-proxy writes
        gl.thread_barrier()  # every thread's
        if g + STAGES < GPS:
            mbarrier.expect(ready.index(slot), SLOT_BYTES)
            for h in gl.static_range(HALVES):
                tma.async_copy_global_to_shared(w_desc, [(g0 + g + STAGES) * ROWS, col0 + h * HALF], ready.index(slot),
                                                w_smem.index(HALVES * slot + h))
        if BITS == 4:
            magic = sum15 * 256.0 + sum19 * 16.0
        else:
            magic = (sum15 + sum19) * 32768.0
        s0, z0 = _scale_zero(s_ptr, z_ptr, (g0 + g) * N + cols)
        acc0 = gl.fma(s0, dot0 - (magic + z0 * (sum15 + sum19)), acc0)
        if HALVES == 2:
            s1, z1 = _scale_zero(s_ptr, z_ptr, (g0 + g) * N + cols + HALF)
            acc1 = gl.fma(s1, dot1 - (magic + z1 * (sum15 + sum19)), acc1)
    # split-K: each program stores its partial; the tile's last to arrive sums them in split order (deterministic,
    # as quant_matmul `_store_output`), writes the output and zeroes the tile's counter for the next launch
    splits = gl.num_programs(1)
    gl.store(ws_ptr + split * N + cols, acc0)
    if HALVES == 2:
        gl.store(ws_ptr + split * N + cols + HALF, acc1)
    gl.thread_barrier()  # every thread's partial is written before the arrival is published
    arrived = gl.atomic_add(cnt_ptr + pid_n, 1, sem="acq_rel", scope="gpu")
    if arrived == splits - 1:
        gl.store(cnt_ptr + pid_n, 0)
        gl.store(out_ptr + cols, _partial_sum(ws_ptr, cols, N, splits, 8).to(gl.bfloat16))
        if HALVES == 2:
            gl.store(out_ptr + cols + HALF, _partial_sum(ws_ptr, cols + HALF, N, splits, 8).to(gl.bfloat16))


def _word_layout():
    return gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2)  # rows read by ordinary loads


def _signature(bits: int) -> dict:
    return dict(x32_ptr="*i32", w_desc=f"tensordesc<i32[{4 * bits}, {HALF.value}],{_word_layout()!r}>",
                s_ptr="*bf16", z_ptr="*u8", ws_ptr="*fp32", cnt_ptr="*i32", out_ptr="*bf16", N="i32", GPS="i32",
                magic15="i32",
                BITS="constexpr", STAGES="constexpr")


def compile_only() -> None:
    for bits in BITS:
        for stages in STAGES:
            compiled = compile_sm90(_gemv_ring_kernel, _signature(bits), dict(BITS=bits, STAGES=stages),
                                    attrs={(i,): [["tt.divisibility", 16]] for i in (0, 2, 3, 4, 5, 6, 7)})
            cubin = read_cubin(compiled)
            print(f"int{bits} STAGES {stages}: {cubin.resources} smem {compiled.metadata.shared} spills "
                  f"{cubin.local_memory_ops}", flush=True)
            for start, end, body in sass_loops(cubin.sass, lambda b: any(t.startswith("FFMA") for t in b)):
                ops = collections.Counter((t.split()[1] if t.startswith("@") else t.split()[0]).split(".")[0]
                                          for t in body)
                codes = 512 if bits == 4 else 256  # a thread's codes a group: 4 (int8: 2) columns x 128
                print(f"    loop {start:05x}-{end:05x}: {len(body)} instructions / {codes} codes a thread = "
                      f"{len(body) / codes:.2f} a code; " + ", ".join(f"{k} {n}" for k, n in ops.most_common(12)))


def measure(out_dir: str) -> None:
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from rooftop.bench.timing import graph_replay_us
    from rooftop.ops import quant_matmul as qm

    rows, save = results(out_dir, "exp-gluon-gemv.json")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for bits in BITS:
        columns = (2 if bits == 4 else 1) * HALF.value  # a program's
        for (N, K), splits in SHAPES.items():
            copies = max(1, -(-2 * l2 // (N * K * bits // 8)))
            sets = [qm._make_inputs(bits)((1, N, K), torch.bfloat16, "cuda") for _ in range(copies)]
            x, qw, w = sets[0]
            ref = qm._reference(x, qw, w).double()
            qm.quant_matmul(x, qw)  # tuned here, not under the graph's capture (which runs the untimed default)
            base = {name: graph_replay_us([lambda s=s, f=f: f(*s) for s in sets], repeat=max(1, 48 // copies))
                    for name, f in (("library", lambda x, qw, w: qm.quant_matmul(x, qw)),
                                    ("cublas", lambda x, qw, w: F.linear(x, w)))}
            print(f"int{bits} {N:5d} x {K:<5d} library {base['library']:6.1f} us  cublas {base['cublas']:6.1f} us",
                  flush=True)
            descs = [TensorDescriptor.from_tensor(s[1].packed, [4 * bits, HALF.value], _word_layout()) for s in sets]
            for split in splits:
                ws = torch.empty(split, N, device="cuda", dtype=torch.float32)
                counters = torch.zeros(N // columns, device="cuda", dtype=torch.int32)
                out = torch.empty(1, N, device="cuda", dtype=torch.bfloat16)
                # each ring depth, then at 3 slots the words' streaming alone (READ_ONLY: wrong results, not checked)
                for stages, read_only in [(st, False) for st in STAGES] + [(3, True)]:
                    def kernel(i, split=split, stages=stages, read_only=read_only, ws=ws, counters=counters, out=out):
                        x, qw, _ = sets[i]
                        _gemv_ring_kernel[(N // columns, split)](
                            x.view(torch.int32), descs[i], qw.scales, qw.zeros, ws, counters, out, N,
                            K // 128 // split, MAGIC15, BITS=bits, STAGES=stages, READ_ONLY=read_only, num_warps=4)
                        return out

                    kernel(0)
                    wait_or_exit(20, f"int{bits} {N} x {K} split {split} stages {stages}", save)
                    err = float((out.double() - ref).norm() / ref.norm())
                    us = graph_replay_us([lambda i=i: kernel(i) for i in range(copies)], repeat=max(1, 48 // copies))
                    rows.append(dict(bits=bits, N=N, K=K, split=split, stages=stages, read_only=read_only,
                                     rel_err=err, us=us, **{f"{k}_us": v for k, v in base.items()}))
                    save()
                    what = "read only" if read_only else f"{base['cublas'] / us:.2f}x cublas (library "\
                        f"{base['cublas'] / base['library']:.2f}x), err {err:.1e}"
                    print(f"    split {split:3d} stages {stages}: {us:6.1f} us  {what}", flush=True)


if __name__ == "__main__":
    main("benchmarks/results/logs/exp-gluon-gemv", compile_only, measure)
