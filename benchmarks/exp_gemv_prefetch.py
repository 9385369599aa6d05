r"""Experiment: the int4 / int8 weight-only GEMV (quant_matmul's `_qgemv_kernel`, M = 1) with the next k-step's
words kept in flight in registers while the current one is summed (software pipelining by hand).

Why: on the H200 (bf16 x, int4, group 128, M = 1, GPU time, L2 flushed) the library's best GEMV (BLOCK_N 128,
BLOCK_K 32 = 4 word rows a k-step, 1 warp, maxnreg 72) reads weights + scales at 2.63 TB/s at 28672 x 8192
(47.5 us, 62% of a copy), 41% at 14336 x 4096 (17.9 us), 35% at 4096 x 14336 (21.0 us); 3x cuBLAS bf16 would be
43.3 / 13.8 / 14.2 us. Its loop is latency-bound: a k-step issues its 4 word-row loads (16 B a thread each) and
its FMAs wait for them; nothing is in flight while a thread sums, and a program has only 4-8 k-steps (K / SPLIT_K
= 128-256 codes), so 4-8 dependent DRAM round trips. More word rows a k-step or Triton's pipeliner (STAGES = 2,
through shared memory) were not faster.

The variant (`_qgemv_prefetch_kernel`, M = 1): one flat loop over the split's k-steps t (the library nests groups
and k-steps). Iteration t first issues the loads of step t + PREFETCH (PREFETCH = 1 or 2): its WORDS word rows as
separate [1, BLOCK_N] tensors (a thread's contiguous columns of each row, one 16-byte load a row, as the library),
its slice of x and its group's scales and zero points, all kept raw: nothing converts them, so nothing waits on
them. Then it sums step t from what the iteration PREFETCH before loaded, with the library's maths (magic-number
unpack, one FMA a code into the group's sum: `_unpack`, `_take`), and where t ends a group (or the split) applies
the group's scale and zero point (a runtime `if`). `store_split_output` writes the output or the split-K partial, as in
the library. SPLIT_K is a run-time argument (not specialised): one compile serves every split of every shape.
Scales and zeros ride with every step's words (L1 hits after a group's first step), not loaded once a group at its
end: there ptxas gave them the scoreboard of x's loads, which the loop waits on at its end (one exposed round trip
a group). Also tried offline, not kept: issuing row j of the next step right after row j is summed (one step's
rows held, not two): ptxas sank those loads to the end of the step and waited on them at the loop's back edge.

Offline sm_90 (--sass; int4, group 128, bf16, M = 1; loop = SASS instructions of the k-loop's body, per code a
thread; "FFMA under loads": the FFMAs between a words LDG.E.128 and the first instruction waiting on its scoreboard):
    kernel    BLOCK_N warps WORDS PREF maxnreg REG  stack  LDL/STL in loop  prog/SM  loop/code  LDG.128  FFMA under loads
    library     128     1     4    -      72    72    0      0       0        28     3.75        4      0-56 of 137
    prefetch    128     1     4    1      72    72    8      3       0        28     3.80        4   137-137 of 137
    prefetch    128     1     4    1      80    80    0      0       0        24     3.81        4   137-137 of 137
    prefetch    128     1     4    1       -    94    0      0       0        20     3.74        4   137-137 of 137
    prefetch    128     1     4    2      96    96    0      0       0        20     3.95        4   137-137 of 137
    prefetch    256     2     4    1      72    72    0      0       0        14     3.82        4   137-137 of 137
    prefetch    128     1     4    1      64    64   32     17       9        32     3.88        4   137-137 of 137
(the whole table, library beside each: --sass). Every words load is issued at the top of the iteration and first
waited on after all of the iteration's FFMAs (at the loop-carried register moves before the back edge); the loads
stay LDG.E.128, the loop's shared-memory traffic is the library's (x's broadcast: 1 STSM + 8 LDS.128 a step), and
at maxnreg >= 72 (4 rows, 128 columns) nothing spills inside the loop (at 72: one 8-byte value across it).

Prediction: with a step always in flight a program waits for DRAM once a split, not once a k-step (28 one-warp
programs an SM at 72 registers keep ~56 KB an SM in flight, above the ~32 KB that 4.2 TB/s x ~1 us needs). The
loop is then near the issue ceiling: 3.8 instructions a code is ~4.6 TB/s of weights on 132 SMs x 4 schedulers
at 1.98 GHz, about the DRAM's. Expected: 28672 x 8192 ~35 us (1.35x the library, ~3.5 TB/s, 3.7x cuBLAS),
14336 x 4096 and 4096 x 14336 ~13-15 us (4 k-steps a program: the first step's round trip, the launch and the
split-K partials weigh more). Best: 4 rows, PREFETCH 1, maxnreg 72-80; 8 rows or PREFETCH 2 cost programs an SM
(16-20) for latency that is already hidden.

Modes (run from the repo root):
  PYTHONPATH=src .venv/bin/python benchmarks/exp_gemv_prefetch.py --check   # no GPU: Triton's interpreter
      (~8 min), the variant against the library's GEMV and the float64 reference at small shapes (check())
  PYTHONPATH=src .venv/bin/python benchmarks/exp_gemv_prefetch.py --sass [--show]   # no GPU: offline sm_90
      compile of every variant and of the library's kernel: registers, spills, LDG.E.128 in the main loop, and
      from the SASS control bits whether the FMAs of step t wait on the loads of step t + 1 (~2 min)
  PYTHONPATH=src python benchmarks/exp_gemv_prefetch.py OUT_DIR [--budget 150] [--library 3]   # the H200 run
The GPU run: for the 4 shapes (N, K) of quant_matmul.BENCH_SHAPES, M = 1, bf16 x, int4 group 128 asymmetric
(quantize_weight as the tests), every time rooftop.ops._autotune.time_ms (GPU time, graph replay, L2 flushed):
cuBLAS F.linear on the bf16 weight, the library's first --library GEMV candidates (quant_matmul._run_config, as
exp_quant_configs.py runs them) and the prefetch variants (VARIANTS, most promising first, each on every shape,
at the library's SPLIT_K rule, half and twice it). Each output is checked against the library's (rel err < 1e-3,
recorded as ok / wrong) and the float64 reference. Rows go to OUT_DIR/exp-gemv-prefetch.json after each one and as
a JSON line to stdout; a table per shape closes the run (cuBLAS, library best, prefetch best, x cuBLAS = cuBLAS
time / time). No new measurement starts past --budget seconds from the start; the kernels compile meanwhile in
spawned worker processes (Triton's on-disk cache). About 60-90 s on the H200 for the whole grid (~300 timings).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

if "--check" in sys.argv and not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from rooftop.ops import quant_matmul as qm  # noqa: E402
from rooftop.ops._support import arrival_counters, cdiv, launch  # noqa: E402
from rooftop.ops.quant_matmul import _take, _unpack, store_split_output  # noqa: E402

GROUP = 128
# (BLOCK_N, num_warps, WORDS, PREFETCH, maxnreg): word rows a k-step (int4: 8 k a row) and k-steps kept in flight.
# A thread holds BLOCK_N / (32 num_warps) contiguous columns: 4 (one 16-byte load a row) for all but
# (256, 1): 8 (two). (128, 2) is left out: 2 columns a thread, 8-byte loads. Most promising first (the budget
# cuts the tail): see the module docstring and the --sass table.
VARIANTS = (
    (128, 1, 4, 1, 72), (128, 1, 4, 1, 80), (128, 1, 4, 1, None), (256, 2, 4, 1, 72), (128, 1, 4, 2, 96),
    (256, 2, 4, 1, None), (128, 1, 4, 2, None), (256, 2, 4, 1, 80), (128, 1, 8, 1, 128), (256, 2, 4, 2, 96),
    (128, 1, 8, 1, None), (256, 1, 4, 1, 128), (256, 2, 8, 1, 128), (128, 1, 4, 1, 96), (256, 2, 4, 1, 96),
    # these spill inside the loop (--sass): 64 registers for 32 programs an SM, or the brief's caps
    (128, 1, 4, 1, 64), (128, 1, 4, 2, 72), (128, 1, 8, 1, 96), (256, 2, 4, 2, 72),
    # few programs an SM (120-247 registers)
    (128, 1, 8, 2, None), (256, 1, 4, 1, None), (256, 2, 4, 2, None), (256, 2, 8, 1, None), (256, 1, 8, 1, None),
)
PER_SM = 32  # programs per SM the library's best config splits K towards (GEMV_CONFIGS[0])

# ---------------------------------------------------------------------------------------------
# The kernel


@triton.jit
def _load_words(w_step, N, cols, mask, WORDS: tl.constexpr):
    """A k-step's WORDS word rows from w_step (row j at w_step + j N), each its own [1, BLOCK_N] tensor (a
    tuple): a thread keeps its contiguous columns of every row, one 16-byte load a row; raw int32, so that
    nothing waits on them until they are summed."""
    rows = ()
    for j in tl.static_range(WORDS):
        rows = rows + (tl.load(w_step + j * N + cols, mask=mask, other=0),)
    return rows


@triton.jit
def _load_x(x_step, mask, XN: tl.constexpr, PARTS: tl.constexpr):
    """A k-step's x as PARTS raw [1, XN] slices (x's dtype: widened where summed, not here)."""
    parts = ()
    for h in tl.static_range(PARTS):
        parts = parts + (tl.load(x_step + h * XN + tl.arange(0, XN)[None, :], mask=mask, other=0.0),)
    return parts


@triton.jit
def _load_scale_zero(s_ptr, z_ptr, g, N, col, mask, HAS_ZERO: tl.constexpr):
    """Group g's scales and zero points of the columns, raw (the library's `_scale_and_zero` widens them to
    float32 at once, which waits on the loads there). Without zero points, the scales stand in (unused)."""
    scales = tl.load(s_ptr + g * N + col, mask=mask, other=0.0)
    zeros = tl.load(z_ptr + g * N + col, mask=mask, other=0) if HAS_ZERO else scales
    return scales, zeros


@triton.jit
def _sum_step(words, x_parts, dot, sum15, sum19, magic15, BITS: tl.constexpr, WORDS: tl.constexpr,
              XW: tl.constexpr):
    """The library's inner k-step: every code of `words` one FMA with its x into the group's sum `dot`, and
    the x sums of the codes at bit 15 / 19 (the magic numbers' share, removed once a group)."""
    PACK: tl.constexpr = 32 // BITS
    for j in tl.static_range(WORDS):
        if j % XW == 0:
            x = x_parts[j // XW].to(tl.float32)
            # the library's identity reduction: x reaches every thread as float32 through shared memory
            x = tl.sum(x[:, :, None], axis=2)
        for i in tl.static_range(PACK):
            codes, _ = _unpack(words[j], i, magic15, BITS)
            xk = _take(x, (j % XW) * PACK + i)[:, None]
            if i % (8 // BITS) == 0:
                sum15 += xk
            else:
                sum19 += xk
            dot = tl.fma(xk, codes, dot)
    return dot, sum15, sum19


@triton.jit(do_not_specialize=["split_k"])  # one compile for every split (and shape with N, K multiples of 16)
def _qgemv_prefetch_kernel(x_ptr, w_ptr, s_ptr, z_ptr, b_ptr, out_ptr, ws_ptr, cnt_ptr, N, K, magic15, split_k,
                           BITS: tl.constexpr, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr, HAS_BIAS: tl.constexpr,
                           BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PREFETCH: tl.constexpr):
    # Grid (N / BLOCK_N, split_k); x is one row (M = 1). As _qgemv_kernel, but one flat loop over the split's
    # k-steps whose iteration t issues step t + PREFETCH's loads before summing step t (module docstring).
    PACK: tl.constexpr = 32 // BITS  # codes per word
    WORDS: tl.constexpr = BLOCK_K // PACK  # word rows per k-step
    STEPS: tl.constexpr = GROUP // BLOCK_K  # k-steps per group
    XW: tl.constexpr = min(WORDS, 32 // PACK)  # word rows per x slice (32 values, as the library at M = 1)
    XN: tl.constexpr = XW * PACK  # x values a slice
    X_PARTS: tl.constexpr = WORDS // XW
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = (cols < N)[None, :]
    col = cols[None, :]
    rows = tl.arange(0, 1)
    k_steps = K // BLOCK_K
    per_split = tl.cdiv(k_steps, split_k)
    t_start = split * per_split
    t_end = tl.minimum(t_start + per_split, k_steps)
    w_row = w_ptr + tl.cast(t_start * WORDS, tl.int64) * N  # step t's words, t = t_start now
    x_row = x_ptr + t_start * BLOCK_K
    # the pipeline's head: step t_start (and t_start + 1), and the first group's scales (and zeros)
    has_step = t_start < t_end
    words = _load_words(w_row, N, col, col_mask & has_step, WORDS)
    x_parts = _load_x(x_row, has_step, XN, X_PARTS)
    if PREFETCH == 2:
        next_words = _load_words(w_row + WORDS * N, N, col, col_mask & (t_start + 1 < t_end), WORDS)
        next_x = _load_x(x_row + BLOCK_K, t_start + 1 < t_end, XN, X_PARTS)
    # a step's group's scales (and zeros) travel with its words: loaded with them, raw, every step (L1 hits
    # after a group's first), used where the group ends. (Loaded there instead, ptxas gave them the
    # scoreboard of x's loads, which the loop waits on at its end: one exposed round trip a group.)
    scales, zeros = _load_scale_zero(s_ptr, z_ptr, t_start // STEPS, N, col, col_mask & has_step, HAS_ZERO)
    if PREFETCH == 2:
        next_scales, next_zeros = _load_scale_zero(s_ptr, z_ptr, (t_start + 1) // STEPS, N, col,
                                                   col_mask & (t_start + 1 < t_end), HAS_ZERO)
    acc = tl.zeros([1, BLOCK_N], tl.float32)
    dot = tl.zeros([1, BLOCK_N], tl.float32)
    sum15 = tl.zeros([1, 1], tl.float32)  # sum_k x over the codes at bit 15 (magic 256)
    sum19 = tl.zeros([1, 1], tl.float32)  # and at bit 19 (16: odd int4 codes)
    for t in tl.range(t_start, t_end, num_stages=1):  # num_stages 1: no Triton pipelining on top
        # step t + PREFETCH's loads go out first; their data is summed PREFETCH iterations later
        ahead = t + PREFETCH < t_end
        ahead_words = _load_words(w_row + PREFETCH * WORDS * N, N, col, col_mask & ahead, WORDS)
        ahead_x = _load_x(x_row + PREFETCH * BLOCK_K, ahead, XN, X_PARTS)
        ahead_scales, ahead_zeros = _load_scale_zero(s_ptr, z_ptr, (t + PREFETCH) // STEPS, N, col,
                                                     col_mask & ahead, HAS_ZERO)
        dot, sum15, sum19 = _sum_step(words, x_parts, dot, sum15, sum19, magic15, BITS, WORDS, XW)
        if ((t + 1) % STEPS == 0) | (t + 1 == t_end):  # the group ends here (or the split does)
            s = scales.to(tl.float32)
            if HAS_ZERO:
                z = zeros.to(tl.float32)
            else:
                z = tl.full(s.shape, 2 ** (BITS - 1), tl.float32)
            acc = tl.fma(s, dot - (sum15 * 256.0 + sum19 * 16.0 + z * (sum15 + sum19)), acc)
            dot = tl.zeros([1, BLOCK_N], tl.float32)
            sum15 = tl.zeros([1, 1], tl.float32)
            sum19 = tl.zeros([1, 1], tl.float32)
        if PREFETCH == 2:
            words, x_parts, scales, zeros = next_words, next_x, next_scales, next_zeros
            next_words, next_x, next_scales, next_zeros = ahead_words, ahead_x, ahead_scales, ahead_zeros
        else:
            words, x_parts, scales, zeros = ahead_words, ahead_x, ahead_scales, ahead_zeros
        w_row += WORDS * N
        x_row += BLOCK_K
    store_split_output(acc, rows, cols, 1, N, b_ptr, out_ptr, N, ws_ptr, cnt_ptr, pid_n, split, split_k, HAS_BIAS, 1)

# ---------------------------------------------------------------------------------------------
# Host side


def block_k_of(words: int, bits: int, group_size: int) -> int:
    return min(words * 32 // bits, group_size)  # one scale a column a k-step, as the library's _gemv


def library_split(N: int, K: int, block_n: int, block_k: int, sms: int, per_sm: int = PER_SM) -> int:
    """SPLIT_K by the library's rule (quant_matmul._split_k, at least GEMV_MIN_STEPS k-steps a split)."""
    return qm._split_k(per_sm * sms, cdiv(N, block_n), max(1, K // (block_k * qm.GEMV_MIN_STEPS)))


def run_prefetch(x: torch.Tensor, qw, variant: tuple, split: int, bias=None) -> torch.Tensor:
    """x [1, K] @ dequantize(qw).T (+ bias) by the prefetch kernel: variant (BLOCK_N, num_warps, WORDS, PREFETCH,
    maxnreg), `split` splits of K."""
    block_n, warps, words, prefetch, maxnreg = variant
    N, K = qw.shape
    assert x.shape == (1, K) and x.stride(1) == 1
    block_k = block_k_of(words, qw.bits, qw.group_size)
    tiles = cdiv(N, block_n)
    out = torch.empty((1, N), device=x.device, dtype=x.dtype)
    # float32 partials even for one split (one compile: Triton specialises on the pointer's dtype)
    ws = torch.empty((split if split > 1 else 1, 1, N), device=x.device, dtype=torch.float32)
    cnt = (arrival_counters(x.device, tiles) if x.is_cuda else torch.zeros(tiles, dtype=torch.int32))
    launch(_qgemv_prefetch_kernel, (tiles, split), x, qw.packed, qw.scales,
           qw.packed if qw.zeros is None else qw.zeros, out if bias is None else bias, out, ws, cnt, N, K,
           qm.MAGIC15, split, BITS=qw.bits, GROUP=qw.group_size, HAS_ZERO=qw.zeros is not None,
           HAS_BIAS=bias is not None, BLOCK_N=block_n, BLOCK_K=block_k, PREFETCH=prefetch, num_warps=warps,
           **({"maxnreg": maxnreg} if maxnreg else {}))
    return out


def run_library(x: torch.Tensor, qw, config: dict) -> torch.Tensor:
    """One library GEMV candidate, launched as quant_matmul's tuner (and exp_quant_configs.py) launch it."""
    N = qw.shape[0]
    return qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, qw.bits, qw.group_size)[0]


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-300))


def reference(x, qw, bias=None) -> torch.Tensor:
    return qm.quant_matmul_reference(x, qw.packed, qw.scales, qw.zeros, bias, qw.bits, qw.group_size)

# ---------------------------------------------------------------------------------------------
# Offline sm_90 compile (no GPU): registers, spills, the main loop's loads and whether its FMAs wait on them

BIN = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/"
POINTERS = dict(x_ptr="*bf16", w_ptr="*i32", s_ptr="*bf16", z_ptr="*u8", b_ptr="*bf16", out_ptr="*bf16",
                ws_ptr="*fp32", cnt_ptr="*i32")
ALIGNED = ("N", "K", "x_stride", "out_stride")  # multiples of 16 at the benchmark shapes, as a launch specialises
# one SASS instruction: address, optional predicate, opcode, operands, and the upper 64 bits of its encoding
# (the next line's comment), whose top 23 bits hold the control information
SASS_INST = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);[^\n]*\n\s*/\*\s*0x([0-9a-f]{16})")


def compile_sm90(fn, consts: dict, warps: int, maxnreg, runtime_ints: tuple = ()):
    """triton.compile of a @triton.jit kernel for sm_90 with `consts` fixed (M = 1 included, as a launch at
    M = 1 specialises it), pointers and ALIGNED integers 16-divisible."""
    sig = {a: "constexpr" if a in consts else POINTERS.get(a, "i32") for a in fn.arg_names}
    attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
             if sig[a].startswith("*") or (a in ALIGNED and a not in runtime_ints)}
    options = dict(num_warps=warps, num_stages=1, **({"maxnreg": maxnreg} if maxnreg else {}))
    return triton.compile(triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs),
                          target=triton.backends.compiler.GPUTarget("cuda", 90, 32), options=options)


def sass_of(cubin: bytes) -> tuple[list[dict], dict]:
    """The kernel's SASS as dicts (addr, op, args, and the control bits: stall, write scoreboard `wsb` (None: none),
    wait mask `wait`), and cuobjdump's resource usage {REG, STACK, SHARED, ...}."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass, usage = (subprocess.run([BIN + "cuobjdump", flag, f.name], capture_output=True, text=True,
                                      check=True).stdout for flag in ("-sass", "--dump-resource-usage"))
    insts = []
    for m in SASS_INST.finditer(sass):
        ctrl = int(m.group(5), 16) >> 41  # Volta+ control bits: stall 4, yield 1, write SB 3, read SB 3, wait 6
        wsb = (ctrl >> 5) & 7
        insts.append(dict(addr=int(m.group(1), 16), pred=(m.group(2) or "").strip(), op=m.group(3),
                          args=m.group(4).strip(), stall=ctrl & 15, wsb=None if wsb == 7 else wsb,
                          wait=(ctrl >> 11) & 63))
    res = {k: int(v) for k, v in re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", usage)}
    return insts, res


def main_loop(insts: list[dict]) -> list[dict]:
    """The body (branch target .. backward branch) of the loop with the most FFMAs: the k-loop."""
    best = []
    for i, inst in enumerate(insts):
        target = re.search(r"0x([0-9a-f]+)", inst["args"])
        if inst["op"].startswith("BRA") and target and int(target.group(1), 16) <= inst["addr"]:
            body = [x for x in insts[:i + 1] if x["addr"] >= int(target.group(1), 16)]
            if sum(x["op"] == "FFMA" for x in body) > sum(x["op"] == "FFMA" for x in best):
                best = body
    return best


def loop_report(body: list[dict]) -> dict:
    """What the k-loop's words loads (LDG.E.128: 4 columns a thread) overlap: for each, how many
    of the loop's FFMAs come after it in the body before the first instruction that waits on its scoreboard
    (its wait mask, or a DEPBAR on it) -- all of them when its data is used only in a later iteration."""
    ffma_at = [i for i, x in enumerate(body) if x["op"] == "FFMA"]
    words = [i for i, x in enumerate(body) if x["op"].startswith("LDG.E.128")]
    overlapped = []
    for i in words:
        sb = body[i]["wsb"]
        first_wait = next((j for j in range(i + 1, len(body))
                           if (sb is not None and body[j]["wait"] >> sb & 1)
                           or (body[j]["op"].startswith("DEPBAR") and f"SB{sb}" in body[j]["args"])), len(body))
        overlapped.append(sum(i < f < first_wait for f in ffma_at))
    return dict(loop_insts=len(body), ffma=len(ffma_at),
                ldg128=sum(x["op"].startswith("LDG.E.128") for x in body),
                ldg=sum(x["op"].startswith("LDG") for x in body),
                lds_sts=sum(x["op"].split(".")[0] in ("LDS", "STS") for x in body),
                ldl_stl=sum(x["op"].split(".")[0] in ("LDL", "STL") for x in body),
                ffma_before_first_ldg=sum(f < words[0] for f in ffma_at) if words else None,
                ffma_overlapping_words_min=min(overlapped) if overlapped else None,
                ffma_overlapping_words_max=max(overlapped) if overlapped else None)


def resident_per_sm(regs: int, shared: int, warps: int) -> int:
    """Programs an SM holds at once by sm_90's limits, as rooftop.ops._support.Launch.resident_per_sm counts."""
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    by_smem = 233472 // (-(-shared // 128) * 128 + 1024)
    return max(1, min(4 * (16384 // per_warp) // warps, by_smem, 64 // warps, 32))


def sass_table(show: bool) -> int:
    """Every VARIANT offline, each beside the library's kernel at the same BLOCK_N / warps / word rows / maxnreg
    (STAGES 1, SPLIT_K 32): one line each. Returns the count of prefetch variants that spill or whose loop waits
    on its own words loads before its FMAs (0: all as designed)."""
    consts = dict(BITS=4, GROUP=GROUP, HAS_ZERO=True, HAS_BIAS=False)
    print(f"{'kernel':9s} {'BLOCK_N':>7s} {'warps':>5s} {'WORDS':>5s} {'PREF':>4s} {'maxnreg':>7s} {'REG':>4s} "
          f"{'STACK':>5s} {'LDL/STL':>7s} {'in loop':>7s} {'prog/SM':>7s} {'KB ahead/SM':>11s} {'loop':>5s} "
          f"{'/code':>5s} {'LDG.128':>7s} {'LDG':>4s} {'LDS/STS':>7s} {'FFMA':>4s} {'FFMA under words loads':>22s}",
          flush=True)
    bad, libraries = 0, {}
    for variant in VARIANTS:
        block_n, warps, words, prefetch, maxnreg = variant
        block_k = block_k_of(words, 4, GROUP)
        lib_key = (block_n, warps, words, maxnreg)
        lines = []
        if lib_key not in libraries:
            libraries[lib_key] = True
            compiled = compile_sm90(qm._qgemv_kernel, dict(consts, M=1, BLOCK_M=1, BLOCK_N=block_n, BLOCK_K=block_k,
                                                           SPLIT_K=32, STAGES=1), warps, maxnreg)
            lines.append(("library", 0, compiled))
        compiled = compile_sm90(_qgemv_prefetch_kernel, dict(consts, BLOCK_N=block_n, BLOCK_K=block_k,
                                                             PREFETCH=prefetch), warps, maxnreg, ("split_k",))
        lines.append(("prefetch", prefetch, compiled))
        for name, pref, c in lines:
            insts, res = sass_of(c.asm["cubin"])
            body = main_loop(insts)
            loop = loop_report(body)
            codes = block_n * block_k / (32 * warps)
            per_sm = resident_per_sm(res["REG"], res["SHARED"], warps)
            # bytes of words an SM's programs keep in flight while they sum: PREFETCH steps ahead (library: none)
            ahead_kb = per_sm * block_n * block_k // 2 * pref // 1024
            local = sum(x["op"].split(".")[0] in ("LDL", "STL") for x in insts)
            overlap = (f"{loop['ffma_overlapping_words_min']}-{loop['ffma_overlapping_words_max']} of {loop['ffma']}"
                       if loop["ffma_overlapping_words_min"] is not None else "-")
            print(f"{name:9s} {block_n:7d} {warps:5d} {words:5d} {pref or '-':>4} {maxnreg or '-':>7} {res['REG']:4d} "
                  f"{res['STACK']:5d} {local:7d} {loop['ldl_stl']:7d} {per_sm:7d} {ahead_kb:11d} {loop['loop_insts']:5d} "
                  f"{loop['loop_insts'] / codes:5.2f} {loop['ldg128']:7d} {loop['ldg']:4d} {loop['lds_sts']:7d} "
                  f"{loop['ffma']:4d} {overlap:>22s}", flush=True)
            if name == "prefetch":
                # as designed: no spill inside the loop, and every words load has all the step's code FMAs
                # (BLOCK_N BLOCK_K / (32 warps) a thread) between it and the first wait on it
                bad += loop["ldl_stl"] > 0 or (loop["ffma_overlapping_words_min"] or 0) < codes
            if show:
                for x in body:
                    print(f"      {x['addr']:05x} {x['pred']:6s} {x['op']:18s} {x['args'][:48]:48s} "
                          f"stall {x['stall']:2d} sb {'-' if x['wsb'] is None else x['wsb']} "
                          f"wait {','.join(str(b) for b in range(6) if x['wait'] >> b & 1) or '-'}")
    print(f"{bad} prefetch variant(s) spill inside the loop or wait on their own words loads within the iteration")
    return 1 if bad else 0

# ---------------------------------------------------------------------------------------------
# --check: small shapes, Triton's interpreter without a GPU


def check() -> int:
    """The prefetch kernel against the library's GEMV (same launch, x in bf16: rel err < 1e-3) and the float64
    reference (x in float32: < 1e-4; bf16: < 1e-2) at small shapes: groups of 128 / 64 / 32, int4 and int8,
    symmetric and asymmetric, a bias, splits of 1..5 (5 splits of 384: splits that start and end inside
    groups, the last one empty, as tests/test_quant_matmul.py test_gemv_splits_that_cut_groups)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    cases = (  # (N, K, bits, group, symmetric, bias, variants, splits)
        (256, 512, 4, 128, False, False, ((128, 1, 4, 1, None), (128, 1, 4, 2, None), (128, 1, 8, 1, None),
                                          (128, 1, 8, 2, None)), (1, 2, 3, 4)),
        (200, 384, 4, 128, False, True, ((128, 1, 4, 1, None), (128, 1, 4, 2, None), (256, 2, 8, 1, None),
                                         (256, 2, 8, 2, None)), (1, 5)),
        (136, 384, 4, 64, True, False, ((128, 1, 4, 1, None), (128, 1, 8, 2, None)), (3, 5)),
        (128, 256, 4, 32, False, False, ((128, 1, 8, 1, None), (128, 1, 4, 2, None)), (3,)),
        (96, 384, 8, 128, False, False, ((128, 1, 4, 1, None), (128, 1, 8, 2, None)), (1, 5)),
    )
    failures = 0
    for N, K, bits, group, symmetric, with_bias, variants, splits in cases:
        torch.manual_seed(N + K)
        qw = qm.quantize_weight(torch.randn(N, K, device=device), bits, group, symmetric)
        bias = torch.randn(N, device=device, dtype=torch.bfloat16) if with_bias else None
        x16 = torch.randn(1, K, device=device, dtype=torch.bfloat16)
        x32 = torch.randn(1, K, device=device, dtype=torch.float32)
        for variant in variants:
            block_k = block_k_of(variant[2], bits, group)
            for split in splits:
                library = dict(qm._gemv((variant[0], 1, block_k * bits // 32, 1, 1), 1, N, K, bits, group, 1),
                               SPLIT_K=split)
                lib_out = qm._run_config(library, x16, qw.packed, qw.scales, qw.zeros, bias, N, bits, group)[0]
                errs = dict(vs_library=rel_err(run_prefetch(x16, qw, variant, split, bias), lib_out),
                            bf16_vs_ref=rel_err(run_prefetch(x16, qw, variant, split, bias), reference(x16, qw, bias)),
                            fp32_vs_ref=rel_err(run_prefetch(x32, qw, variant, split), reference(x32, qw)))
                ok = errs["vs_library"] < 1e-3 and errs["bf16_vs_ref"] < 1e-2 and errs["fp32_vs_ref"] < 1e-4
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} int{bits} g{group} {'sym ' if symmetric else 'asym'} "
                      f"{'bias ' if with_bias else ''}N={N} K={K} variant={variant[:4]} BLOCK_K={block_k} "
                      f"split={split}: " + "  ".join(f"{k} {v:.2e}" for k, v in errs.items()), flush=True)
    print(f"{failures} failure(s)")
    return 1 if failures else 0

# ---------------------------------------------------------------------------------------------
# The GPU run


def library_configs(N: int, K: int, sms: int, count: int) -> list[dict]:
    """The library's first `count` GEMV candidates at M = 1 (GEMV_CONFIGS order: the untimed default first)."""
    configs = []
    for c in qm.GEMV_CONFIGS[:count]:
        config = qm._gemv(c, 1, N, K, 4, GROUP, sms)
        if config not in configs:
            configs.append(config)
    return configs


def prefetch_splits(N: int, K: int, variant: tuple, sms: int) -> list[int]:
    """The library's SPLIT_K rule for the variant's tile, then twice and half that (at least one k-step a split)."""
    block_k = block_k_of(variant[2], 4, GROUP)
    rule = library_split(N, K, variant[0], block_k, sms)
    return list(dict.fromkeys(s for s in (rule, 2 * rule, rule // 2) if 1 <= s <= K // block_k))


def _compile_job(kind: str, what, N: int, K: int) -> tuple[str, str, float]:
    """A worker's job: compile (into Triton's on-disk cache) what the run will launch -- a prefetch variant, or a
    library GEMV config (its SPLIT_K is a constexpr: per shape) -- by launching it once at a small shape that
    Triton specialises the same way (N, K multiples of 16, M = 1, 16-byte aligned bf16 x)."""
    start = time.monotonic()
    torch.manual_seed(0)
    n, k = 256, 1024
    qw = qm.quantize_weight(torch.randn(n, k, device="cuda", dtype=torch.bfloat16), 4, GROUP)
    x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    if kind == "prefetch":
        run_prefetch(x, qw, what, 2)
    else:
        run_library(x, qw, what)
    torch.cuda.synchronize()
    return kind, str(what), time.monotonic() - start


def precompile(sms: int, n_library: int):
    """Start the compiles of every library config and prefetch variant of the run in spawned worker processes
    (Triton compiles under the GIL; on-disk cache): (the pool, their futures by (kind, key))."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=max(1, min(6, (os.cpu_count() or 2) // 2)),
                               mp_context=multiprocessing.get_context("spawn"))
    futures = {}
    for N, K in qm.BENCH_SHAPES:
        for config in library_configs(N, K, sms, n_library):
            key = ("library", json.dumps(config, sort_keys=True))
            if key not in futures:
                futures[key] = pool.submit(_compile_job, "library", config, N, K)
    for variant in VARIANTS:
        futures[("prefetch", str(variant))] = pool.submit(_compile_job, "prefetch", variant, 256, 1024)
    return pool, futures


def copy_TBps(time_ms, dev) -> float:
    """TB/s of a 1 GiB float32 device-to-device copy (read + write), timed as the candidates are."""
    src = torch.empty(1 << 28, device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    return 2 * src.nbytes / (time_ms(lambda: dst.copy_(src)) * 1e-3) / 1e12


def gpu_run(out_dir: str, budget_s: float, n_library: int, shapes=qm.BENCH_SHAPES, dev=None, time_ms=None,
            sms=None) -> int:
    """The H200 run (module docstring). dev / time_ms / sms / shapes stand in for a dry run of the flow without a
    GPU (the interpreter, a fake timer: no precompile, no copy)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    t0 = time.monotonic()
    on_gpu = dev is None
    if on_gpu:
        from rooftop.ops._autotune import time_ms
        dev = torch.device("cuda", torch.cuda.current_device())
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        pool, compiling = precompile(sms, n_library)
    else:
        pool, compiling = None, {}
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    path = Path(out_dir, "exp-gemv-prefetch.json")
    rows: list[dict] = []

    def emit(row: dict) -> dict:
        rows.append(row)
        print(json.dumps(row), flush=True)
        path.write_text(json.dumps(rows, indent=1))
        return row

    def wait_compiled(kind: str, key: str) -> None:
        future = compiling.get((kind, key))
        if future is not None:  # a failed or late worker: the first launch compiles it (or fails) here
            try:
                future.result(timeout=max(1.0, budget_s - (time.monotonic() - t0)))
            except (FutureTimeout, Exception):  # noqa: BLE001
                pass

    copy_tbps = copy_TBps(time_ms, dev) if on_gpu else float("nan")
    emit(dict(kind="meta", device=torch.cuda.get_device_name(dev) if on_gpu else str(dev), torch=torch.__version__,
              triton=triton.__version__, sms=sms, budget_s=budget_s, copy_TBps=round(copy_tbps, 3),
              variants=[list(v) for v in VARIANTS], variant_fields=["BLOCK_N", "num_warps", "WORDS", "PREFETCH",
                                                                    "maxnreg"]))

    class Case:
        def __init__(self, N: int, K: int):
            self.N, self.K = N, K
            torch.manual_seed(0)
            self.x, self.qw, self.w = qm._make_inputs(4)((1, N, K), torch.bfloat16, dev)
            self.ref = reference(self.x, self.qw)
            self.nbytes = sum(t.numel() * t.element_size() for t in (self.qw.packed, self.qw.scales, self.qw.zeros))
            self.lib_out = None  # the library's default GEMV's output: what every candidate is checked against
            self.cublas_us = None

    def measure(case: Case, kind: str, config: dict, fn) -> dict | None:
        if time.monotonic() - t0 > budget_s:
            return None
        row = dict(kind=kind, N=case.N, K=case.K, config=config)
        try:
            out = fn()
            if on_gpu:
                torch.cuda.synchronize()
            if case.lib_out is None and kind == "library":
                case.lib_out = out.clone()
            if case.lib_out is not None:
                row["rel_err_vs_library"] = rel_err(out, case.lib_out)
                row["ok"] = row["rel_err_vs_library"] < 1e-3
            row["rel_err_vs_ref"] = rel_err(out, case.ref)
            us = time_ms(fn) * 1e3
            row.update(us=round(us, 3), TBps=round(case.nbytes / us / 1e6, 3),
                       pct_copy=round(100 * case.nbytes / us / 1e6 / copy_tbps, 1))
            if case.cublas_us:
                row["x_cublas"] = round(case.cublas_us / us, 3)
        except Exception as e:  # noqa: BLE001 -- a variant that fails to compile or run is recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        row["t_s"] = round(time.monotonic() - t0, 1)
        return emit(row)

    cases = [Case(N, K) for N, K in shapes]
    for case in cases:
        row = measure(case, "cublas", {}, lambda case=case: F.linear(case.x, case.w))
        case.cublas_us = row.get("us") if row else None
    for index in range(n_library):  # the library's candidates, the default first on every shape
        for case in cases:
            configs = library_configs(case.N, case.K, sms, n_library)
            if index < len(configs):
                config = configs[index]
                wait_compiled("library", json.dumps(config, sort_keys=True))
                measure(case, "library", config, lambda case=case, config=config: run_library(case.x, case.qw, config))
    measured = set()
    for variant in VARIANTS:
        if time.monotonic() - t0 > budget_s:
            break
        wait_compiled("prefetch", str(variant))
        for case in cases:
            for split in prefetch_splits(case.N, case.K, variant, sms):
                config = dict(zip(("BLOCK_N", "num_warps", "WORDS", "PREFETCH", "maxnreg"), variant), SPLIT_K=split,
                              BLOCK_K=block_k_of(variant[2], 4, GROUP))
                if measure(case, "prefetch", config, lambda case=case, variant=variant, split=split:
                           run_prefetch(case.x, case.qw, variant, split)):
                    measured.add(variant)
    if len(measured) < len(VARIANTS):
        print(f"budget spent ({budget_s:.0f} s): {len(VARIANTS) - len(measured)} prefetch variant(s) not measured")
    summary(rows, cases)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)
    return 0


def summary(rows: list[dict], cases) -> None:
    """Per shape: cuBLAS, the library's best and the prefetch kernel's best (rows within 1e-3 of the library's
    output only), x cuBLAS = cuBLAS time / time (the target: 3), and the prefetch kernel at the library default's
    own tile and split (BLOCK_N 128, 4 word rows, 1 warp, maxnreg 72, PREFETCH 1): the same launch but the loop."""
    print(f"\n{'N x K':>13s} {'cuBLAS':>7s} | {'library':>7s} {'xcuBLAS':>7s} {'%copy':>5s} | {'prefetch':>8s} "
          f"{'xcuBLAS':>7s} {'%copy':>5s} {'lib/pre':>7s} | {'same cfg':>8s} | {'3x cuB':>6s}  (us)  prefetch best; "
          f"library best")
    for case in cases:
        mine = [r for r in rows if r.get("N") == case.N and r.get("K") == case.K and "us" in r]
        cublas = next((r["us"] for r in mine if r["kind"] == "cublas"), float("nan"))
        lib, pre = (min((r for r in mine if r["kind"] == kind and r.get("ok")), key=lambda r: r["us"], default=None)
                    for kind in ("library", "prefetch"))
        default = next((r for r in mine if r["kind"] == "library"), None)  # the default config, measured first
        same = next((r for r in mine if r["kind"] == "prefetch" and r.get("ok") and default
                     and r["config"]["SPLIT_K"] == default["config"]["SPLIT_K"]
                     and (r["config"]["BLOCK_N"], r["config"]["num_warps"], r["config"]["WORDS"],
                          r["config"]["maxnreg"], r["config"]["PREFETCH"]) == (128, 1, 4, 72, 1)), None)

        def cells(r, width):
            if r is None:
                return f"{'-':>{width}s} {'-':>7s} {'-':>5s}"
            return f"{r['us']:{width}.1f} {r.get('x_cublas', float('nan')):7.2f} {r['pct_copy']:5.0f}"
        ratio = f"{lib['us'] / pre['us']:7.2f}" if lib and pre else f"{'-':>7s}"
        same_us = f"{same['us']:8.1f}" if same else f"{'-':>8s}"
        pre_cfg = {k: v for k, v in pre["config"].items() if k != "BLOCK_K"} if pre else "-"
        lib_cfg = {k: v for k, v in lib["config"].items() if k not in ("path", "BLOCK_M", "STAGES")} if lib else "-"
        print(f"{case.N:>6d} x {case.K:<5d} {cublas:7.1f} | {cells(lib, 7)} | {cells(pre, 8)} {ratio} | {same_us} | "
              f"{cublas / 3:6.1f}  {pre_cfg}; {lib_cfg}")
    wrong = [r for r in rows if r.get("ok") is False]
    errors = [r for r in rows if "error" in r]
    print(f"{len(wrong)} measurement(s) off the library's output (rel err >= 1e-3), {len(errors)} error(s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?")
    parser.add_argument("--budget", type=float, default=150.0, help="seconds: no new measurement starts after")
    parser.add_argument("--library", type=int, default=3, help="how many of the library's GEMV_CONFIGS to time")
    parser.add_argument("--check", action="store_true", help="small shapes against the library (interpreter)")
    parser.add_argument("--sass", action="store_true", help="offline sm_90 compile of every variant")
    parser.add_argument("--show", action="store_true", help="with --sass: print each main loop")
    args = parser.parse_args()
    if args.check:
        return check()
    if args.sass:
        return sass_table(args.show)
    if not args.out_dir:
        parser.error("OUT_DIR is needed for the GPU run")
    return gpu_run(args.out_dir, args.budget, args.library)


if __name__ == "__main__":
    sys.exit(main())
