r"""Experiment: wide rows without a residual (rms_norm, layer_norm, softmax at N = 65536..262144) split over
co-resident programs (journal item 22), with the chunk held across the exchange as packed 16-bit words, register
caps, a nanosleep backoff in the wait, and a grid of chunk sizes and warps.

Why: on the H200 (bf16, M * N = 2^27, % of a copy) the library reads rms_norm 86.6 / 69.0 / 63.4%, layer_norm
76.4 / 59.0 / 58.4%, softmax 86.3 / 75.0 / 66.8% at N = 65536 / 131072 / 262144 (target >= 90% at 65536, >= 80%
above). A row of 131072 bf16 is 256 KB: it does not fit one SM, and the rows in flight of a two-pass kernel
overflow L2 (50 MB), which then reads HBM 3 times. The split design (rooftop.ops.rms_norm `_rms_norm_split_kernel`,
used only with a residual) reads a row once and writes it once: program (row, chunk) loads its CHUNK elements,
publishes two fp32 partials, waits on the row's arrival counter until the row's G chunks have published, merges
the G pairs and writes its chunk of y. Without a residual it plateaued at ~70% of copy (item 22): the wait is an
L2 round trip, and an SM holds ~40K values in flight at most (registers).

The kernel (`_split_row_kernel`, one for the three ops): every tensor is 32-bit words of two 16-bit values (N
even; element 2i in the low half), loaded and stored as words and split into (even, odd) fp32 halves where
arithmetic needs them, so that the held words are the registers the loads filled and no reshape / join moves data
between layouts. Its own copy of _support.exchange_row_stats (`_exchange`) adds the backoff.

Hypotheses (the variants, per op and N):
1. hold (`fp32` / `packed`): the chunk crosses the wait as fp32 values (as the library's split kernel) or as the
   loaded words: half the registers held across the wait, so more programs (bytes in flight) an SM. Each use of
   the packed values unpacks the words anew from `words | z`, z a zero whose bits the compiler cannot know
   (`_unknown_zero`; after the wait the sign bits of the counter value the exchange's last atomic returned):
   otherwise MLIR / LLVM merge the identical unpackings and keep the fp32 values alive, across the wait too.
2. register cap (`_r{maxnreg}`, phase A2): ptxas allocates for the kernel's peak, not for what crosses the wait.
   For each base variant the run compiles caps one step of programs an SM at a time (cap_search) and times the
   one of most programs without a spill (fp32 holds too: a control for "more programs" without packing).
3. backoff (`_ns64`, phase B): a `nanosleep.u32 64` (inline PTX: GPU only, a constexpr switch; SASS NANOSLEEP
   0x40 before each poll) so that waiting programs do not hammer L2 with polls.
4. chunk x warps: CHUNK in {4096, 8192, 16384} x num_warps in {4, 8, 16}, without the combinations of more than
   64 values a thread (16384 x 4).
Variant names: c{CHUNK}_w{warps}_{hold}[_r{maxnreg}][_ns64].

The ops (bf16 in and out, statistics in fp32; n_c = the chunk's live count, the last chunk may be partial):
    rms_norm:    a_c = sum x^2;  y = x rsqrt(sum_c a_c / N + eps) w
    layer_norm:  a_c = m_c = sum x / n_c,  b_c = M2_c = sum (x - m_c)^2 (two reductions from registers);  Chan:
                 mean = sum_c n_c m_c / N,  M2 = sum_c [M2_c + n_c (m_c - mean)^2],
                 y = (x - mean) rsqrt(M2 / N + eps) w + b
    softmax:     a_c = m_c = max x,  b_c = s_c = sum exp(x - m_c);  M = max_c m_c,  S = sum_c s_c exp(m_c - M),
                 y = exp(x - M) / S   (exp as exp2, log2 e folded into one multiply-add)
Grid M * G, program (row, chunk) = (p // G, p % G); G <= the SM count (deadlock-free: CUDA dispatches programs in
increasing order, so the lowest unfinished row's programs are all resident; see _support.split_chunks).

Offline sm_90 (--compile; Triton 3.6, bf16, aligned launch; nvdisasm -lrm for live registers). Packing does cut
what crosses the wait, fp32 -> packed: 31-33 -> 23-25 live registers at 16 values a thread, 47-51 -> 31-35 at 32,
81-83 -> 49-51 at 64. But ptxas allocates for the kernel's peak, which is elsewhere: after the wait (the values
unpacked while every load of w (and b) is in flight: ptxas issues all loads first), and for fp32 layer_norm /
softmax before it (fp32 x with its deviations / exponentials). Registers (programs an SM), fp32 -> packed, uncapped:
    c4096_w8:   rms 39 -> 32 (6 -> 8), layer_norm 44 -> 39 (5 -> 6), softmax 40 -> 32 (6 -> 8)
    c8192_w8:   rms 58 -> 51 (4 -> 4), layer_norm 79 -> 80 (3 -> 3), softmax 59 -> 48 (4 -> 5)
    c8192_w16:  rms 40 -> 32 (3 -> 4), layer_norm 48 -> 50 (2 -> 2), softmax 40 -> 32 (3 -> 4)
    c16384_w8:  rms 103 -> 80 (2 -> 3), layer_norm 134 -> 108 (1 -> 2), softmax 119 -> 80 (2 -> 3)
and a cap brings fp32 to the same programs without a spill in several of these (rms and softmax c4096_w8 at 32,
c8192_w8 at 48), where the packed kernels at the next step spill (rms c8192_w8 r48: 2 spill instructions). No
variant spills uncapped. So a packed win on the GPU would come from the lower live count, not from occupancy alone.

The GPU run (bf16, M = 2^27 / N): a float32 1 GiB device copy, then per op and N the library call
(rooftop.rms_norm(x, w), rooftop.layer_norm(x, w, b), rooftop.softmax(x)) and every variant, all timed by
rooftop.ops._autotune.time_ms (GPU time by graph replay, L2 flushed), GB/s of the registry's bytes and % of the
copy. Every output's relative error ||y - ref|| / ||ref|| against the registry's float64 reference is recorded and
flagged (`wrong`) past 1e-2; flagged variants are timed but never "best". The first launch of every variant runs
under a 10 s watchdog (a deadlock saves what was measured and exits 124). Each launched variant's n_regs, n_spills
and programs an SM are in its row; each cap search ("kind": "compile") too. Order: the library for every (op, N)
while spawned workers compile every variant and search its caps (Triton's on-disk cache); phase A1 the base
variants, A2 their best caps, B the backoff twins of each case's BACKOFF_TOP fastest. --budget: no measurement
starts past it (seconds from the start). Output: OUT_DIR/exp-split-packed.json (written after every row), one JSON
line a measurement, a table last (per op and N: library, best fp32 / packed uncapped and capped, best with the
backoff, best overall, % of copy).

Usage:
  .venv/bin/python benchmarks/exp_split_packed.py --check          # CPU, Triton's interpreter: every op and hold, G = 1
  .venv/bin/python benchmarks/exp_split_packed.py --check-split    # CPU, interpreter, programs in threads: G = 4, 5
  .venv/bin/python benchmarks/exp_split_packed.py --compile        # CPU: offline sm_90 compile (~3 min)
  # H200, from the repo root (under 240 s in all):
  PYTHONPATH=src python benchmarks/exp_split_packed.py OUT_DIR --budget 200
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Callable, Optional

if "--check" in sys.argv or "--check-split" in sys.argv:  # before triton is imported
    os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from rooftop.ops._support import cdiv, launch, prepare  # noqa: E402
# the library's split-words helpers (ops/rms_norm.py and ops/layer_norm.py took this experiment's kernels in)
from rooftop.ops._support import load_word_pairs as _load_pairs  # noqa: E402
from rooftop.ops._support import opaque_zero as _unknown_zero  # noqa: E402
from rooftop.ops._support import pack_words as _pack  # noqa: E402
from rooftop.ops._support import unpack_words as _unpack  # noqa: E402

TOTAL_ELEMS = 1 << 27
WIDTHS = (65536, 131072, 262144)
OPS = ("rms_norm", "layer_norm", "softmax")
OP_IDS = {"rms_norm": 0, "layer_norm": 1, "softmax": 2}
EPS = {"rms_norm": 1e-6, "layer_norm": 1e-5, "softmax": 0.0}  # the registry's run and reference use these
CHUNKS = (4096, 8192, 16384)
WARPS = (4, 8, 16)
MAX_VALUES_PER_THREAD = 64
HOLDS = ("fp32", "packed")
BACKOFF_NS = 64
MIN_MAXNREG = 24  # the lowest register cap cap_search tries
MIN_G_POW2 = 64  # the exchange's vector width at least this: one compiled kernel for every G of the default widths
TOL = 1e-2
BACKOFF_TOP = 6  # phase B: the backoff twins of each case's fastest phase-A variants
WATCHDOG_S = 10.0
LOG2E = tl.constexpr(1.4426950408889634)

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _pause(BACKOFF_NS: tl.constexpr):
    """Sleep about BACKOFF_NS ns (PTX nanosleep; GPU only). Not pure: kept, and kept between the polls."""
    tl.inline_asm_elementwise("nanosleep.u32 $1; mov.b32 $0, $1;", "=r,r", [tl.full([], BACKOFF_NS, tl.int32)],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _exchange(part_ptr, cnt_ptr, row, chunk, a, b, G, G_POW2: tl.constexpr, BACKOFF_NS: tl.constexpr):
    """_support.exchange_row_stats with an optional backoff: publish chunk `chunk`'s pair (a, b) of row `row`,
    wait until the row's G chunks have, and return the G pairs as two [G_POW2] vectors (0 past G) and the counter
    value the last atomic returned (in [G, 2G): never negative, which the compiler cannot know)."""
    base = part_ptr + tl.cast(row, tl.int64) * (2 * G)
    tl.store(base + 2 * chunk, a)
    tl.store(base + 2 * chunk + 1, b)
    tl.debug_barrier()  # the pair is written before the arrival is published (release)
    seen = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel", scope="gpu") + 1
    while seen < G:
        if BACKOFF_NS > 0:
            _pause(BACKOFF_NS)
        seen = tl.atomic_add(cnt_ptr + row, 0, sem="acquire", scope="gpu")
    g = tl.arange(0, G_POW2)
    # .cg: other SMs wrote these; skip this SM's L1
    pa = tl.load(base + 2 * g, mask=g < G, other=0.0, cache_modifier=".cg")
    pb = tl.load(base + 2 * g + 1, mask=g < G, other=0.0, cache_modifier=".cg")
    readers = tl.atomic_add(cnt_ptr + row, 1, sem="relaxed", scope="gpu")
    if readers == 2 * G - 1:
        tl.atomic_xchg(cnt_ptr + row, 0, sem="relaxed", scope="gpu")  # every chunk has read: reset
    return pa, pb, readers


@triton.jit(do_not_specialize=["G"])
def _split_row_kernel(x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, cnt_ptr, N, x_stride, y_stride, eps, G,
                      OP: tl.constexpr, PACKED: tl.constexpr, BACKOFF_NS: tl.constexpr, CHUNK: tl.constexpr,
                      G_POW2: tl.constexpr):
    # Program (row, chunk) = (p // G, p % G): reads its chunk of x once (w, b after the wait), exchanges 8 bytes of
    # statistics with the row's other chunks, writes its chunk of y once. OP: 0 rms_norm, 1 layer_norm, 2 softmax.
    # Every tensor is in 32-bit words of two 16-bit values (N even), as (even, odd) halves once in fp32: the held
    # words are the registers the loads filled, and no reshape or join changes a layout.
    DTYPE: tl.constexpr = x_ptr.dtype.element_ty
    row = tl.program_id(0) // G
    chunk = tl.program_id(0) % G
    words = chunk * (CHUNK // 2) + tl.arange(0, CHUNK // 2)  # word offsets in the row
    live = words < N // 2  # not 2 * words < N: a mask of a non-contiguous tensor would not let loads vectorise
    x_row = (x_ptr + tl.cast(row, tl.int64) * x_stride).to(tl.pointer_type(tl.uint32))
    x_words = tl.load(x_row + words, mask=live, other=0)
    x_even, x_odd = _unpack(x_words, DTYPE)
    # the chunk's pair (a, b)
    if OP == 0:
        a = tl.sum(x_even * x_even + x_odd * x_odd, axis=0)
        b = 0.0
    elif OP == 1:
        a = tl.sum(x_even + x_odd, axis=0) / tl.minimum(N - chunk * CHUNK, CHUNK).to(tl.float32)
        if PACKED:  # the second pass unpacks anew, so that no fp32 copy lives across the first reduction
            x_even, x_odd = _unpack(x_words | _unknown_zero(a), DTYPE)
        dev_even = tl.where(live, x_even - a, 0.0)
        dev_odd = tl.where(live, x_odd - a, 0.0)
        b = tl.sum(dev_even * dev_even + dev_odd * dev_odd, axis=0)
    else:
        a = tl.max(tl.where(live, tl.maximum(x_even, x_odd), -float("inf")), axis=0)
        shift = tl.where(a == -float("inf"), 0.0, a) * LOG2E  # a chunk of -inf only: no mass, not nan
        if PACKED:  # as layer_norm's
            x_even, x_odd = _unpack(x_words | _unknown_zero(a), DTYPE)
        b = tl.sum(tl.where(live, tl.exp2(x_even * LOG2E - shift) + tl.exp2(x_odd * LOG2E - shift), 0.0), axis=0)
    pa, pb, readers = _exchange(part_ptr, cnt_ptr, row, chunk, a, b, G, G_POW2, BACKOFF_NS)
    if PACKED:  # unpacked anew after the wait, none kept from before it (readers >= 0: its sign bits are 0)
        x_even, x_odd = _unpack(x_words | (readers >> 31).to(tl.uint32, bitcast=True), DTYPE)
    g = tl.arange(0, G_POW2)
    if OP == 0:
        rstd = tl.rsqrt(tl.sum(pa, axis=0) / N + eps)
        w_even, w_odd = _load_pairs(w_ptr, words, live, DTYPE)
        y_even = x_even * rstd * w_even
        y_odd = x_odd * rstd * w_odd
    elif OP == 1:
        counts = tl.where(g < G, tl.minimum(N - g * CHUNK, CHUNK), 0).to(tl.float32)
        mean = tl.sum(counts * pa, axis=0) / N
        spread = pa - mean
        rstd = tl.rsqrt(tl.sum(pb + counts * spread * spread, axis=0) / N + eps)
        w_even, w_odd = _load_pairs(w_ptr, words, live, DTYPE)
        b_even, b_odd = _load_pairs(b_ptr, words, live, DTYPE)
        y_even = (x_even - mean) * rstd * w_even + b_even
        y_odd = (x_odd - mean) * rstd * w_odd + b_odd
    else:
        row_max = tl.max(tl.where(g < G, pa, -float("inf")), axis=0)
        shift = tl.where(row_max == -float("inf"), 0.0, row_max) * LOG2E
        total = tl.sum(tl.where(g < G, pb * tl.exp2(pa * LOG2E - shift), 0.0), axis=0)
        y_even = tl.exp2(x_even * LOG2E - shift) * (1.0 / total)
        y_odd = tl.exp2(x_odd * LOG2E - shift) * (1.0 / total)
    y_row = (y_ptr + tl.cast(row, tl.int64) * y_stride).to(tl.pointer_type(tl.uint32))
    tl.store(y_row + words, _pack(y_even, y_odd, DTYPE), mask=live)


# ---------------------------------------------------------------------------------------------
# Variants and launches


def variant(chunk: int, warps: int, hold: str, backoff_ns: int = 0, maxnreg: Optional[int] = None) -> dict:
    name = f"c{chunk}_w{warps}_{hold}" + (f"_r{maxnreg}" if maxnreg else "")
    name += f"_ns{backoff_ns}" if backoff_ns else ""
    return dict(name=name, chunk=chunk, warps=warps, hold=hold, backoff_ns=backoff_ns, maxnreg=maxnreg)


def base_variants() -> list[dict]:
    """chunk x warps (at most MAX_VALUES_PER_THREAD values a thread) x hold; no backoff, no register cap."""
    return [variant(chunk, warps, hold) for chunk in CHUNKS for warps in WARPS
            if chunk // (32 * warps) <= MAX_VALUES_PER_THREAD for hold in HOLDS]


def twin(v: dict, backoff_ns: Optional[int] = None, maxnreg: Optional[int] = -1) -> dict:
    """v with another backoff and / or register cap (-1: v's cap)."""
    return variant(v["chunk"], v["warps"], v["hold"], v["backoff_ns"] if backoff_ns is None else backoff_ns,
                   v["maxnreg"] if maxnreg == -1 else maxnreg)


def programs_per_sm(regs: int, warps: int) -> int:
    """Programs an SM holds by registers and warps (sm_90: 64K registers allocated per warp in 256s, 64 warps,
    32 programs): _support.Launch.resident_per_sm without shared memory (these kernels use a few hundred bytes)."""
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    return max(1, min(4 * (16384 // per_warp) // warps, 64 // warps, 32))


def occupancy_caps(regs: int, warps: int) -> list[int]:
    """The register caps (maxnreg) that would fit more programs an SM than `regs` does, one a step of programs
    (the largest cap of each), fewest programs first."""
    caps, seen = [], {programs_per_sm(regs, warps)}
    for cap in range(8 * ((regs - 1) // 8), MIN_MAXNREG - 1, -8):
        programs = programs_per_sm(cap, warps)
        if programs not in seen:
            seen.add(programs)
            caps.append(cap)
    return caps


def cap_search(usage: Callable[[dict], tuple[int, int]], v: dict) -> tuple[list[dict], Optional[int]]:
    """Variant v (uncapped) and its register caps fewest programs an SM first, until one spills: usage(variant)
    compiles it and gives (registers, spilled bytes or spill count). Returns what was tried, and the cap of the
    most programs an SM without a spill (None if none)."""
    regs, spills = usage(v)
    tried = [dict(maxnreg=None, regs=regs, spills=spills, programs=programs_per_sm(regs, v["warps"]))]
    for cap in occupancy_caps(regs, v["warps"]):
        regs, spills = usage(twin(v, maxnreg=cap))
        tried.append(dict(maxnreg=cap, regs=regs, spills=spills, programs=programs_per_sm(regs, v["warps"])))
        if spills:
            break
    best = max((t for t in tried[1:] if not t["spills"]), key=lambda t: t["programs"], default=None)
    return tried, best["maxnreg"] if best else None


def g_pow2(G: int) -> int:
    return max(MIN_G_POW2, triton.next_power_of_2(G))


def constexprs(op: str, v: dict, G_POW2: int) -> dict:
    """_split_row_kernel's constexprs and launch options for variant v."""
    consts = dict(OP=OP_IDS[op], PACKED=v["hold"] == "packed", BACKOFF_NS=v["backoff_ns"], CHUNK=v["chunk"],
                  G_POW2=G_POW2, num_warps=v["warps"])
    if v["maxnreg"]:
        consts["maxnreg"] = v["maxnreg"]
    return consts


def split_args(op: str, x, w, b, y, part, counters, G: int) -> tuple:
    """_split_row_kernel's runtime arguments (pointers an op does not use: x's)."""
    M, N = x.shape
    assert x.element_size() == 2 and N % 2 == 0 and x.stride(0) % 2 == 0 and y.stride(0) % 2 == 0, \
        "the kernel reads and writes 16-bit rows of even width and stride as 32-bit words"
    return (x, w if w is not None else x, b if b is not None else x, y, part, counters, N, x.stride(0), y.stride(0),
            EPS[op], G)


def run_split(op: str, v: dict, x, w, b, y, part, counters):
    """Launch variant `v` of `op` on the [M, N] rows x (y its output); returns the Launch (None in the interpreter)."""
    M, N = x.shape
    G = cdiv(N, v["chunk"])
    return launch(_split_row_kernel, (M * G,), *split_args(op, x, w, b, y, part, counters, G),
                  **constexprs(op, v, g_pow2(G)))


# ---------------------------------------------------------------------------------------------
# Interpreter checks (CPU)


def reference(op: str, x, w, b) -> torch.Tensor:
    """The op in float64 (the registry's references)."""
    from rooftop import registry
    return registry.get(op).reference(*(t for t in (x, w, b) if t is not None)).double()


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref||; inf where out is not finite."""
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


def check(split: bool) -> int:
    """Every op and hold in the interpreter against the float64 reference, backoff off. split False: G = 1 (the
    interpreter runs programs one after another: G > 1 would wait for ever), a whole chunk and a partial one.
    split True: G > 1 with each program in its own thread (exp_norm_looped's threaded interpreter), partial last
    chunks included. The arrival counters must be left at zero."""
    if split:
        from exp_norm_looped import _threaded_interpreter
        _threaded_interpreter()
        shapes = ((3, 1000, 256), (2, 1024, 256), (2, 4100, 1024))  # (M, N, CHUNK): G = 4, 4, 5
    else:
        shapes = ((3, 4096, 4096), (3, 3000, 4096))
    torch.manual_seed(0)
    failures = 0
    for op in OPS:
        for dtype in (torch.bfloat16, torch.float16):
            for M, N, chunk in shapes:
                # layer_norm, softmax: a ramp along the row, so that the chunks' means and maxima differ (the
                # merges' cross terms matter) and the mean is well off zero
                ramp = torch.linspace(0, 8, N) if op != "rms_norm" else torch.zeros(N)
                x = (torch.randn(M, N) * (3 if op == "softmax" else 1) + ramp).to(dtype)
                w = (torch.rand(N) + 0.5).to(dtype) if op != "softmax" else None
                b = torch.randn(N).to(dtype) if op == "layer_norm" else None
                expected = reference(op, x, w, b)
                for hold in HOLDS:
                    G = cdiv(N, chunk)
                    v = variant(chunk, 4, hold)
                    y = torch.full_like(x, float("nan"))
                    part = torch.full((M * g_pow2(G) * 2,), float("nan"))
                    counters = torch.zeros(M, dtype=torch.int32)
                    run_split(op, v, x, w, b, y, part, counters)
                    err = rel_err(y, expected)
                    ok = err < TOL and not counters.any()
                    failures += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} {op:10s} {str(dtype)[6:]:8s} M={M} N={N:5d} CHUNK={chunk:5d} "
                          f"G={G} {hold:6s} rel err {err:.2e} counters {counters.tolist()}", flush=True)
    print(f"{failures} failures")
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# Offline sm_90 compile (CPU)


def compile_sm90(op: str, v: dict, G_POW2: int = MIN_G_POW2):
    """The variant compiled for sm_90 as the GPU run launches it: bf16 rows, fp32 workspace, int32 counters,
    pointers 16-byte aligned, N and the row strides multiples of 16 (journal item 38), G not specialised."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    consts = constexprs(op, v, G_POW2)
    options = {k: consts.pop(k) for k in ("num_warps", "maxnreg") if k in consts}
    kernel = _split_row_kernel
    sig = {a: "constexpr" if a in consts else
           {"part_ptr": "*fp32", "cnt_ptr": "*i32"}.get(a, "*bf16") if a.endswith("_ptr") else
           "fp32" if a == "eps" else "i32" for a in kernel.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(kernel.arg_names)
             if sig[a].startswith("*") or a in ("N", "x_stride", "y_stride")}
    return triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=consts, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=options)


def compile_report(ops: tuple[str, ...]) -> int:
    """Per op and variant: registers, spills (STACK bytes, LDL/STL), programs and KB of x in flight an SM (by
    registers), SASS instructions, for the uncapped kernel and each register cap of cap_search (until one
    spills), and the uncapped kernel with the backoff (its NANOSLEEP present)."""
    import re

    from gluon_sm90 import read_cubin

    cubins = {}

    def usage(v: dict) -> tuple[int, int]:
        cubin = cubins[v["name"]] = read_cubin(compile_sm90(op, v))
        return (int(re.search(r"REG:(\d+)", cubin.resources).group(1)),
                int(re.search(r"STACK:(\d+)", cubin.resources).group(1)))

    print(f"{'op':10s} {'variant':26s} {'regs':>4s} {'stack':>5s} {'LDL/STL':>7s} {'val/thr':>7s} {'prog/SM':>7s} "
          f"{'KB/SM':>5s} {'SASS':>5s} {'NANOSLEEP':>9s}")
    failures = 0
    for op in ops:
        for base in base_variants():
            try:
                tried, best = cap_search(usage, base)
                usage(twin(base, backoff_ns=BACKOFF_NS))
            except Exception as e:  # noqa: BLE001 (reported, and counted)
                failures += 1
                print(f"{op:10s} {base['name']:26s} does not compile: {type(e).__name__}: {str(e)[:300]}")
                continue
            shown = [twin(base, maxnreg=t["maxnreg"]) for t in tried] + [twin(base, backoff_ns=BACKOFF_NS)]
            for v in shown:
                cubin = cubins[v["name"]]
                regs = int(re.search(r"REG:(\d+)", cubin.resources).group(1))
                stack = int(re.search(r"STACK:(\d+)", cubin.resources).group(1))
                per_sm = programs_per_sm(regs, v["warps"])
                sass = len(re.findall(r"/\*[0-9a-f]{4,}\*/\s+[^;]*;", cubin.sass))
                sleeps = len(re.findall(r"\bNANOSLEEP\b", cubin.sass))
                mark = " <- best cap" if v["maxnreg"] and v["maxnreg"] == best and not v["backoff_ns"] else ""
                print(f"{op:10s} {v['name']:26s} {regs:4d} {stack:5d} {cubin.local_memory_ops:7d} "
                      f"{v['chunk'] // (32 * v['warps']):7d} {per_sm:7d} {per_sm * v['chunk'] * 2 // 1024:5d} "
                      f"{sass:5d} {sleeps:9d}{mark}", flush=True)
                # a spill is expected only of the last cap tried; a nanosleep only with the backoff
                failures += (stack > 0 and not v["maxnreg"]) or (sleeps == 0) == bool(v["backoff_ns"])
    print(f"{failures} failures (no compile, an uncapped spill, or a nanosleep missing / unwanted)")
    return 1 if failures else 0


# ---------------------------------------------------------------------------------------------
# The GPU run


def _copy_gbps(time_ms, dev) -> float:
    """GB/s of a 1 GiB float32 device-to-device copy (read + write), timed as the candidates are."""
    src = torch.empty(1 << 28, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    return 2 * 4 * src.numel() / time_ms(lambda: dst.copy_(src)) / 1e6


def gpu_usage(op: str, G_POW2: int) -> Callable[[dict], tuple[int, int]]:
    """usage(variant) for cap_search on the GPU: compile (or find in Triton's cache) as the run launches it (bf16,
    16-byte aligned, N and strides multiples of 16; G not specialised); (n_regs, n_spills) as the driver reads them."""
    x = torch.empty(16, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.empty(256, device="cuda", dtype=torch.bfloat16)
    part = torch.empty(16 * G_POW2 * 2, device="cuda", dtype=torch.float32)
    counters = torch.zeros(16, device="cuda", dtype=torch.int32)

    def usage(v: dict) -> tuple[int, int]:
        compiled = prepare(_split_row_kernel, *split_args(op, x, w, w, torch.empty_like(x), part, counters, 2),
                           **constexprs(op, v, G_POW2)).compiled
        compiled._init_handles()
        return compiled.n_regs, compiled.n_spills
    return usage


def compile_and_search(op: str, v: dict, G_POW2: int) -> dict:
    """Compile variant v, its register caps (cap_search) and the backoff twins of the uncapped and best-capped
    kernels into Triton's on-disk cache: a worker's job of the GPU run (or the main process's, when late)."""
    usage = gpu_usage(op, G_POW2)
    tried, best = cap_search(usage, v)
    for cap in dict.fromkeys((None, best)):
        usage(twin(v, backoff_ns=BACKOFF_NS, maxnreg=cap))
    return dict(kind="compile", op=op, variant=v["name"], G_POW2=G_POW2, tried=tried, best_maxnreg=best)


def precompile(ops: tuple[str, ...], G_POW2s: list[int]) -> dict:
    """Start compile_and_search of every (op, base variant, G_POW2) in spawned worker processes (Triton compiles
    under the GIL); their futures by (op, variant name, G_POW2)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) // 2)),
                               mp_context=multiprocessing.get_context("spawn"))
    futures = {(op, v["name"], G_POW2): pool.submit(compile_and_search, op, v, G_POW2)
               for G_POW2 in G_POW2s for op in ops for v in base_variants()}
    pool.shutdown(wait=False)
    return futures


def measure(out_dir: str, ops: tuple[str, ...], widths: tuple[int, ...], budget_s: float, device: str = "cuda") -> int:
    from concurrent.futures import wait

    from gluon_sm90 import results, wait_or_exit

    from rooftop import registry
    from rooftop.ops._autotune import time_ms
    from rooftop.ops._support import arrival_counters, num_sms

    t0 = time.monotonic()
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    sms = num_sms(dev.index if dev.type == "cuda" else -1)
    G_POW2s = sorted({g_pow2(cdiv(N, v["chunk"])) for N in widths for v in base_variants()
                      if cdiv(N, v["chunk"]) <= sms})
    compiling = precompile(ops, G_POW2s)
    rows, save = results(out_dir, "exp-split-packed.json")
    copy_gbps = _copy_gbps(time_ms, dev)
    rows.append(dict(kind="meta", device=torch.cuda.get_device_name(dev), torch=torch.__version__,
                     triton=triton.__version__, copy_GBps=round(copy_gbps, 1), num_sms=sms, budget_s=budget_s,
                     backoff_ns=BACKOFF_NS))
    print(json.dumps(rows[-1]), flush=True)
    save()

    class Case:
        """One (op, N): inputs, the output, the float64 reference kept as fp32, the registry's bytes, workspace."""

        def __init__(self, op: str, N: int):
            self.op, self.N, self.M = op, N, TOTAL_ELEMS // N
            self.spec = registry.get(op)
            torch.manual_seed(N)
            self.inputs = self.spec.make_inputs((self.M, N), torch.bfloat16, dev)
            self.x = self.inputs[0]
            self.w = self.inputs[1] if op != "softmax" else None
            self.b = self.inputs[2] if op == "layer_norm" else None
            ref = self.spec.reference(*self.inputs)
            self.ref, self.ref_norm = ref.float(), float(ref.double().norm())
            del ref
            torch.cuda.empty_cache()
            self.y = torch.empty_like(self.x)
            self.part = torch.empty(self.M * max(G_POW2s) * 2, device=dev, dtype=torch.float32)
            # one zeroed set for every launch of the case: each launch leaves it at zero, and the launches (the
            # graph warm-up's side stream, the capture, the replays) run one after another
            self.counters = arrival_counters(dev, self.M)
            self.nbytes = self.spec.cost((self.M, N), torch.bfloat16).bytes

    def record(case: Case, provider: str, fn, extra: dict, phase: str) -> dict:
        """First call under the watchdog, error against the reference, then GPU time: a row with the result or the
        reason it has none."""
        row = dict(kind="measure", op=case.op, N=case.N, M=case.M, provider=provider, phase=phase, **extra)
        rows.append(row)
        if time.monotonic() - t0 > budget_s:
            row["error"] = "skipped: time budget"
            return row
        try:
            case.y.fill_(float("nan"))
            out, entry = fn()  # compiles (host) or finds the worker's kernel, then launches
            wait_or_exit(WATCHDOG_S, f"{provider} {case.op} at N={case.N}", save)
            if entry is not None:
                compiled = entry.compiled
                compiled._init_handles()
                row.update(n_regs=compiled.n_regs, n_spills=compiled.n_spills, shared=compiled.metadata.shared,
                           programs_per_sm=entry.resident_per_sm)
            finite = bool(torch.isfinite(out).all())
            row["rel_err"] = float((out.float() - case.ref).norm()) / case.ref_norm if finite else float("inf")
            row["wrong"] = not row["rel_err"] <= TOL
            del out
            row["us"] = round(1e3 * time_ms(lambda: fn()), 2)
            row["GBps"] = round(case.nbytes / row["us"] / 1e3, 1)
            row["pct_copy"] = round(100 * row["GBps"] / copy_gbps, 1)
        except Exception as e:  # a candidate that fails is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        row["t_s"] = round(time.monotonic() - t0, 1)  # when it finished, from the start
        print(json.dumps(row), flush=True)
        save()
        return row

    def library_fn(case: Case):
        def fn():
            return case.spec.run(*case.inputs), None
        return fn

    def measure_variant(case: Case, v: dict, phase: str) -> None:
        G = cdiv(case.N, v["chunk"])
        if G > sms:
            return  # co-residency needs G <= SMs

        def fn():
            return case.y, run_split(case.op, v, case.x, case.w, case.b, case.y, case.part, case.counters)
        record(case, v["name"], fn, dict(chunk=v["chunk"], warps=v["warps"], hold=v["hold"],
                                         backoff_ns=v["backoff_ns"], maxnreg=v["maxnreg"], G=G, G_POW2=g_pow2(G)),
               phase)

    cases = {}
    for op in ops:  # the library first (its kernels compile here while the workers compile the variants)
        for N in widths:
            case = cases[op, N] = Case(op, N)
            record(case, "library", library_fn(case), {}, "A1")
    done, _ = wait(compiling.values(), timeout=max(1.0, budget_s / 2 - (time.monotonic() - t0)))
    print(f"# {time.monotonic() - t0:.1f} s: precompiled {len(done)} of {len(compiling)} variants", flush=True)
    best_cap = {}  # (op, base variant name, G_POW2) -> the register cap of most programs an SM without spills
    for key, future in compiling.items():
        op, name, G_POW2 = key
        try:
            found = future.result(timeout=0)
        except Exception as e:  # noqa: BLE001 (a late or failed worker: the search here, in this process)
            found = dict(kind="compile", op=op, variant=name, G_POW2=G_POW2, error=f"{type(e).__name__}: {e}"[:300])
            if time.monotonic() - t0 < 0.6 * budget_s:  # serial compiles: not past the point phase A needs
                try:
                    found = compile_and_search(op, next(v for v in base_variants() if v["name"] == name), G_POW2)
                except Exception as e:  # noqa: BLE001 (recorded; its variants fail again, recorded, when measured)
                    found["error"] += f"; here: {type(e).__name__}: {e}"[:300]
        best_cap[key] = found.get("best_maxnreg")
        rows.append(found)
        print(json.dumps(found), flush=True)
    save()
    # phase A1: every base variant (no cap, no backoff); A2: each at its best register cap
    for (op, N), case in cases.items():
        for v in base_variants():
            measure_variant(case, v, "A1")
    for (op, N), case in cases.items():
        for v in base_variants():
            cap = best_cap.get((op, v["name"], g_pow2(cdiv(N, v["chunk"]))))
            if cap:
                measure_variant(case, twin(v, maxnreg=cap), "A2")
    # phase B: the backoff twins of each case's fastest phase-A variants, fastest first
    for (op, N), case in cases.items():
        timed = [r for r in rows if r.get("op") == op and r.get("N") == N and "us" in r and not r.get("wrong")
                 and r["provider"] != "library"]
        for r in sorted(timed, key=lambda r: r["us"])[:BACKOFF_TOP]:
            measure_variant(case, variant(r["chunk"], r["warps"], r["hold"], BACKOFF_NS, r["maxnreg"]), "B")
    save()
    print(f"\ntotal {time.monotonic() - t0:.1f} s; copy {copy_gbps:.0f} GB/s")
    print_table(rows, ops, widths)
    return 0


def print_table(rows: list[dict], ops, widths) -> None:
    """Per op and N, % of copy: the library; the best variant holding fp32 / packed words, uncapped and capped; the
    best with the backoff; the best overall, its name and programs an SM. Variants flagged wrong are left out."""
    print(f"\n{'op':>10} {'N':>6} {'library':>7} {'fp32':>6} {'packed':>6} {'fp32 r':>6} {'pack r':>6} {'+ns':>6} "
          f"{'best':>6}  best variant (registers, programs an SM)")
    for op in ops:
        for N in widths:
            mine = [r for r in rows if r.get("op") == op and r.get("N") == N and "us" in r and not r.get("wrong")]
            library = next((r for r in mine if r["provider"] == "library"), None)
            split = [r for r in mine if r["provider"] != "library"]

            def best(keep):
                return max((r for r in split if keep(r)), key=lambda r: r["pct_copy"], default=None)

            def pct(r):
                return f"{r['pct_copy']:.1f}" if r else "-"
            cells = [best(lambda r, h=hold, c=capped: r["hold"] == h and bool(r["maxnreg"]) == c
                          and not r["backoff_ns"]) for capped in (False, True) for hold in HOLDS]
            top = best(lambda r: True)
            name = f"{top['provider']} ({top.get('n_regs')}, {top.get('programs_per_sm')})" if top else "-"
            print(f"{op:>10} {N:>6} {pct(library):>7} " + " ".join(f"{pct(c):>6}" for c in cells)
                  + f" {pct(best(lambda r: r['backoff_ns'] > 0)):>6} {pct(top):>6}  {name}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", default="split-packed")
    parser.add_argument("--check", action="store_true", help="interpreter check, G = 1 (CPU)")
    parser.add_argument("--check-split", action="store_true", help="interpreter check, G > 1, threads (CPU)")
    parser.add_argument("--compile", action="store_true", help="offline sm_90 compile report (CPU)")
    parser.add_argument("--ops", default=",".join(OPS))
    parser.add_argument("--widths", default=",".join(map(str, WIDTHS)))
    parser.add_argument("--budget", type=float, default=200.0, help="seconds after which no measurement starts")
    args = parser.parse_args()
    if args.check or args.check_split:
        return check(args.check_split)
    ops = tuple(args.ops.split(","))
    if args.compile:
        return compile_report(ops)
    return measure(args.out, ops, tuple(int(n) for n in args.widths.split(",")), args.budget)


if __name__ == "__main__":
    sys.exit(main())
