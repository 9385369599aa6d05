r"""Attention forward for prefill (FlashAttention-2 style): softmax(Q K^T * scale + mask) V without the
[Sq, Sk] score matrix ever reaching memory.

For one (batch, query head h) with q [Sq, D], k and v [Sk, D] of key/value head h // (Hq / Hkv) (GQA;
MQA when Hkv = 1), query i is aligned to key position i' = i + Sk - Sq (bottom-right, as flash-attn:
the last query sees the last key; equals SDPA's is_causal when Sq == Sk) and sees the keys

    j in [i' - left, i' + right],   0 <= j < Sk

with window = (left, right) (None or -1: unbounded; an int w means (w, unbounded)) and causal forcing
right = 0. Then, with s_ij = scale * q_i . k_j (scale defaults to 1/sqrt(D)) over the keys i sees,

    lse_i = log sum_j exp(s_ij)          out_i = sum_j exp(s_ij - lse_i) v_j

A query that sees no key at all (a window, or causal with Sq > Sk) gets out_i = 0 and lse_i = -inf,
never NaN. lse is fp32, natural log.

Soft-capping (Gemma 2): softcap = c > 0 replaces each score by c tanh(s_ij / c) before the mask and the softmax.

Attention sinks (gpt-oss): sinks (float [Hq]) gives each query head h a logit its softmax takes in with no
value, lse_i = log(exp(sinks[h]) + sum_j exp(s_ij)), out_i as above with that lse (a query that sees no key:
out 0, lse sinks[h]). The kernel adds it once, where a row is stored: m' = max(m, sink),
l' = l exp(m - m') + exp(sink - m'), acc scaled as l (fold_sink, shared with decode_attention).

The kernel: one program per BLOCK_M queries of one (batch, head), the query tile held on chip while
BLOCK_N key/value tiles stream past (online softmax in fp32: running max m and sum l, rescaled when
m grows; exp2 with scale * log2(e) folded into one multiply-add). The key range of a program is cut
into three loops: masked tiles at the window's left edge, tiles every query of the block sees fully
(no mask arithmetic at all), masked tiles on the diagonal / window's right edge / the sequence end.
Tiles nobody in the block sees are never loaded. Programs are launched head by head (the query tiles
of a head side by side, so that its k/v come from L2 after the first read), each head's heaviest
(last) query tile first, so that causal's long tiles do not trail at the end.

Which path runs:
- Gluon ping-pong (ops/attention_sm90.py; sm_90 GPUs only, never the interpreter): 16-bit, D 64, 128 or
  256, dense or causal with no window, not varlen, sinks or none, no soft-capping, any Sq and Sk (causal:
  Sq <= Sk), q, k, v and out in any layout the TMA path below takes (contiguous, Hugging Face's transposed
  [B, S, H, D] views, heads sliced from a packed qkv row: 4-D descriptors with the real strides, which bound
  each head's rows), GQA/MQA, lse and scale as above. FA3's schedule: per program 128 queries in two
  consumer warp groups of 64 whose MMAs alternate (one's softmax runs under the other's MMAs, and under its
  own P V: wgmma wait(1)), k/v through a TMA ring filled by a 1-warp loader; causal programs stop at their
  diagonal and mask only the tiles that cross it (dense: the last key tile, past Sk). Traffic as below: q, out (and
  lse) once, each k/v tile of a program's range once per program, mostly from L2. Its configurations
  are candidates beside the Triton ones (below), 128 keys x 2 stages the default (D = 256: 64 x 2, the
  one that fits). H200, bf16, B * S = 16384, tuned, against SDPA's cuDNN backend in the same run
  (2026-12-01, benchmarks/results/h200-2026-12-01-attention.json): D = 128 at S = 2048 / 4096 / 16384
  0.95 / 0.95 / 1.01x dense, 0.93 / 0.97 / 1.07x causal (564-622 TFLOP/s dense; the Triton kernel alone:
  0.77-0.86x); D = 256 0.97 / 0.89 / 1.04x and 0.95 / 0.93 / 1.02x; D = 64 0.87-0.97x. Against SDPA's
  flash backend 1.3-2.2x at every S from 512.
- TMA (sm_90+, and the interpreter), when every base is 16-byte aligned and every stride a multiple
  of 16 bytes: tiles move through tensor descriptors, out-of-range rows and the head-dim padding read
  as 0 and stores are clipped. Dense calls pass descriptors made on the host over the 4-D views
  ([1, 1, rows, D] boxes); varlen calls and layouts whose strides do not shrink inward make 2-D
  descriptors per (sequence, head) in the kernel (exact sequence bounds; a 128-byte workspace per descriptor and
  program from triton's allocator).
- Pointer loads otherwise (older GPUs, unaligned views): masked loads on the masked tiles only.
D <= 256 runs in a tile padded to the next power of two (>= 16).

Launch configuration (tiles, warps, stages): 16-bit inputs on a GPU time a short candidate list per
(padded head dim, kind: one loop on TMA / masked loops on TMA / pointer loads), pruned from a small
space by shared memory and registers, preceded by the Gluon kernel's where that applies, on the first
call per shape bucket (rooftop.ops._autotune, remembered on disk); untuned (CUDA graph capture,
torch.compile tracing) the list's first entry. GQA calls with a window also time tiles whose rows are
several query heads (of one k/v head) at once, fewer queries each: a narrow window's key span is then
queries + window keys a tile, not 128 + window, and each k/v tile serves those heads (PACKED_HEADS;
PACK_WINDOWED_GQA); at D 64 such calls also time the default tile with its key range in one masked loop, as is and
with fewer stages and registers (SINGLE_LOOP_WINDOWED).
float32 and the interpreter have one configuration each. A call's slow path (layout, configuration,
compilation) leaves a plan under a key of everything but the data pointers; a repeated call checks
its inputs, allocates its outputs and launches the compiled kernel directly.

attention_varlen takes flash-attn's packed layout ([total_tokens, H, D], cu_seqlens int32 [batch+1]):
the same kernel, each program reading its sequence's bounds. Tokens past cu_seqlens_q[-1] are left
unwritten, and cu_seqlens are not validated on the device (that would need a host sync).

Traffic: each program reads its query tile once and each key/value tile of its range once (from L2
when programs of the same head run together); writes its out tile (and lse) once. The floor counted
by the cost model is q, k, v read once and out written once; FLOPs are 4 * D per (query, visible key).
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from typing import Callable, Optional, Union

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from rooftop import registry
from rooftop.ops import _autotune, attention_sm90
from rooftop.ops._support import (FLOAT_DTYPES, Launch, Plans, alignment_key, capability, cdiv, check_float,
                                  check_number, check_same_device, ensure_scratch_allocator, gluon_runs, interpreting,
                                  runs_kernel, shared_memory_limit, torch_op)
from rooftop.roofline import Cost

LOG2E = 1.4426950408889634
MAX_HEAD_DIM = 256
FP8_KV = torch.float8_e4m3fn  # decode_attention's and append_kv's fp8 caches (per-tensor scales)
MAX_PROGRAMS = 2**31 - 1  # CUDA's limit on a grid's x axis

Window = Union[None, int, tuple]


@dataclass(frozen=True)
class AttentionConfig:
    block_m: int  # query rows per program: block_m / heads queries of each of `heads` heads
    block_n: int  # keys per loop step
    num_warps: int
    num_stages: int  # key/value tiles in flight
    maxnreg: Optional[int] = None  # registers a thread at most (ptxas), None: ptxas's choice
    # "triton": _attention_fwd_kernel; "pingpong": attention_sm90's Gluon kernel (block_m 128 = two consumer
    # warp groups of 64 rows, num_warps 4 a warp group, num_stages the k/v ring's depth)
    kernel: str = "triton"
    heads: int = 1  # query heads of one k/v head a program takes (GQA; TMA paths only; PACKED_SINGLE_LOOP_MAX_BLOCK_N)
    # the key range in one masked loop, not three (left edge, inside, right edge): a narrow window's few tiles
    # pipelined as one loop, where each short loop waits for its own first loads
    single_loop: bool = False


# Launch configurations. 16-bit inputs on a GPU: a short candidate list per (padded head dim, kind of
# kernel), timed on first use per shape bucket (rooftop.ops._autotune, remembered on disk). The kinds:
# "one_loop" (TMA, nothing masked: dense, non-causal, no window), "masked" (TMA with masked loops:
# causal, windows, varlen) and "pointer" (pointer loads). Warp specialisation of the one loop (the
# Triton tutorial's Hopper choice) wrote NaN on the H200 (2026-11-29): not a candidate.
# The untuned default per kind, first in its list where it passes the pruning: the fastest measured on
# the H200 (benchmarks/exp_attention.py, 2026-11-29, S = 2048 and 8192, B * S = 16384; logs in
# benchmarks/results/logs/h200-2026-11-29-s4/), else the first choices made before any measurement
# (the tutorial's Hopper configs, cross-compiled for sm_90 without spills).
_UNMEASURED = {16: AttentionConfig(128, 64, 4, 3), 32: AttentionConfig(128, 64, 4, 3),
               64: AttentionConfig(128, 128, 8, 3), 128: AttentionConfig(128, 128, 8, 2),
               256: AttentionConfig(128, 64, 8, 2)}
DEFAULT_CONFIGS = {
    "one_loop": {**_UNMEASURED, 64: AttentionConfig(128, 128, 4, 3), 128: AttentionConfig(128, 128, 8, 3)},
    "masked": {**_UNMEASURED, 64: AttentionConfig(64, 64, 4, 3), 128: AttentionConfig(128, 128, 8, 3)},
    "pointer": _UNMEASURED,
}
# The space pruned, in order of preference: larger score tiles first (fewer softmax rescales, more reuse
# of each k/v tile); 3 stages first (two tiles in flight, k and v mostly come from L2), then 2 (less
# shared memory), then 4.
BLOCK_M_CHOICES = (128, 64)
BLOCK_N_CHOICES = (128, 64, 32)
WARP_CHOICES = (8, 4)
STAGE_CHOICES = (3, 2, 4)
# fp32 values per thread of the accumulator and the score tile, BLOCK_M * (BLOCK_D + BLOCK_N) / threads:
# past the budget ptxas spills (sm_90 compiles of the whole space: the masks, and far more the pointer
# loads, take registers of their own); under the minimum the warps split too small a tile.
REGISTER_BUDGET = {"one_loop": 192, "masked": 160, "pointer": 80}
MIN_VALUES_PER_THREAD = 64
MAX_CANDIDATES = 9  # each is timed once per shape bucket on first use
# Two programs an SM: 8-warp tiles with at most this many score and accumulator values a thread, capped
# at 128 registers (no spill in sm_90 compiles: 122-127 at D = 128, 128 x 64; 125 at D = 64, 128 x 128)
# and 2 stages, so that two fit an SM's registers and shared memory. One program's softmax then runs
# while the other's MMAs do: Triton 3.6 waits for each score MMA before its softmax (no FA3-style
# overlap inside a program on sm_90), so this is the overlap to be had.
PAIRED_MAX_VALUES = 96
PAIRED_MAXNREG = 128
SMEM_RESERVE = 1024  # barriers and reduction scratch beside the tiles (sm_90 compiles: 32 B to 1 KB)
# float32 runs exact fp32 dots (no tensor cores): a correctness path, tiles small enough to barely spill.
FP32_CONFIG = AttentionConfig(32, 16, 4, 2)
# The interpreter: small tiles so that tiny test sizes still cross several tiles and every loop.
INTERPRETER_CONFIG = AttentionConfig(16, 16, 4, 1)
# The Gluon ping-pong kernel's candidates (ops/attention_sm90.py) per head dim where it applies
# (_pingpong_applies), timed before the Triton ones. D 64 / 128: 128-key tiles, 2 stages (the untuned
# default) or 3, within about 2% of each other on the H200 (logs/h200-2026-12-01-s8/exp-gluon-attention-*);
# 64-key tiles in a 4-deep ring ran 0.80-0.88x of them and the tuner never chose them (autotune-run8.json).
# D 256: the one shape that fits (q 64 KB + 2 stages of 64-key k and v, 64 KB each, of 227 KB; sm_90
# compile without spills).
PINGPONG_CONFIGS = {
    D: tuple(AttentionConfig(128, block_n, 4, stages, kernel="pingpong") for block_n, stages in shapes)
    for D, shapes in ((64, ((128, 2), (128, 3))), (128, ((128, 2), (128, 3))), (256, ((64, 2),)))}
# GQA calls with a window (gpt-oss's sliding layers: 128 keys, 8 query heads a k/v head) also time tiles of
# several query heads' rows: a tile of Q queries spans Q + window - 1 keys, so 32 queries of 4 heads in 128 rows
# compute 160-192 keys a row (32- or 64-key tiles) where 128 queries of one head compute 256 (both edges masked),
# and each k/v tile is read once for the 4 heads. Such a call's first-call tuning times up to twice the candidates
# (and 3 more at D 64 with SINGLE_LOOP_WINDOWED).
PACKED_HEADS = (4, 2)
MIN_PACKED_QUERIES = 32
# Packed tiles in one loop (single_loop) of 64-key tiles went wrong on an H100 past their first key tile (session 78):
# their q tile is a register operand of the QK MMA (reshaped from the [heads, queries] box), and ptxas 12.8 writes the
# loop's p values into those registers, so the next key tile's MMA reads p for q (found in the sm_90 SASS by
# profile.kernels.clobbered_mma_operands, which flags every form seen wrong on the GPU and none seen right; every
# candidate of gpt-oss's shapes is clean, with descriptors made on the host or in the kernel: tests/test_attention.py).
PACKED_SINGLE_LOOP_MAX_BLOCK_N = 32
# Measured (H100, session 77): 32 queries of 2 heads (64 x 64 tiles) won, 1.13-1.16x the best one-head tile on
# gpt-oss's window rows (4 heads of 32 in 128 x 32 tiles: 1.08-1.12x). False times one-head tiles only.
PACK_WINDOWED_GQA = True
# Single-loop forms (AttentionConfig.single_loop: the key range in one masked loop, not three loops of 1-2 tiles each
# waiting on its own first loads) of the default one-head tile at D 64, timed after the others: at 2 stages (40 KB of
# shared memory) with registers capped at SINGLE_LOOP_MAXNREG, 5 programs an SM where 3 stages and ~110-124 registers
# hold 4; at 2 stages; as is. Measured (H100, session 78, gpt-oss's window rows): 64 x 64 tiles, 2 stages, 96
# registers 202.1 / 218.1 / 219.3 us at S 512 / 4096 / 16384 against session 77's choice (64 x 64 tiles of 2 heads,
# three loops) 232.9 / 245.5 / 243.0; uncapped 206.1-223.8, 3 stages 230.9-247.6; 80 registers spill. Other head dims:
# not measured, not offered.
SINGLE_LOOP_WINDOWED = True
# The masked tiles' two compares chained and one select a score by inline PTX (_keys_in_reach; a GPU only)
MASK_PTX_ENABLED = True
SINGLE_LOOP_HEAD_DIMS = (64,)
SINGLE_LOOP_MAXNREG = 96
# Set False to keep sm_90 on the Triton kernel (tests, comparisons).
GLUON_ENABLED = True
# Set False to force the pointer path where TMA would run (tests, tuning).
TMA_ENABLED = True
# Set False to make dense calls' descriptors on the device too, as varlen calls do (experiments).
HOST_DESCRIPTORS = True


def smem_bytes(config: AttentionConfig, block_d: int, itemsize: int) -> int:
    """Shared memory of the TMA kernel's tiles: the q tile and num_stages k and v tiles (exact against
    sm_90 compiles but for SMEM_RESERVE; the pointer path needs less)."""
    return (config.block_m + 2 * config.num_stages * config.block_n) * block_d * itemsize


@functools.lru_cache(maxsize=None)
def tuning_candidates(block_d: int, itemsize: int, kind: str, smem: int,
                      limit: Optional[int] = MAX_CANDIDATES) -> tuple[AttentionConfig, ...]:
    """The configurations tried for 16-bit inputs on a GPU with `smem` bytes of shared memory per
    program: those of the space whose tiles fit and whose registers neither spill nor go underused
    (REGISTER_BUDGET[kind]), the default first, then one per tile shape at its preferred stage count,
    then the shapes' other stage counts (not for pointer loads: sm_90 compiles at 2, 3 and 4 stages are
    the same kernel); `limit` of them (None: all)."""
    shapes = sorted(((m, n, w) for m in BLOCK_M_CHOICES for n in BLOCK_N_CHOICES for w in WARP_CHOICES),
                    key=lambda s: (-s[0] * s[1], -s[0], -s[2]))
    preferred, others = [], []
    for block_m, block_n, warps in shapes:
        if not MIN_VALUES_PER_THREAD <= block_m * (block_d + block_n) / (32 * warps) <= REGISTER_BUDGET[kind]:
            continue
        fitting = [c for c in (AttentionConfig(block_m, block_n, warps, s) for s in STAGE_CHOICES)
                   if smem_bytes(c, block_d, itemsize) + SMEM_RESERVE <= smem]
        preferred += fitting[:1]
        if kind != "pointer":  # Triton 3.6 does not pipeline the pointer loads: stages change nothing there
            others += fitting[1:]
    paired = [AttentionConfig(m, n, 8, 2, PAIRED_MAXNREG) for m, n, w in shapes
              if w == 8 and kind != "pointer"
              and MIN_VALUES_PER_THREAD <= m * (block_d + n) / (32 * w) <= PAIRED_MAX_VALUES
              and 2 * (smem_bytes(AttentionConfig(m, n, w, 2), block_d, itemsize) + SMEM_RESERVE) <= smem]
    found = preferred[:1] + paired[:1] + preferred[1:] + paired[1:] + others
    default = DEFAULT_CONFIGS[kind][block_d]
    if default in found:
        found.remove(default)
        found.insert(0, default)
    if not found:  # a GPU too small for the whole space: the least shared memory, spills or not
        return (AttentionConfig(min(BLOCK_M_CHOICES), min(BLOCK_N_CHOICES), min(WARP_CHOICES), min(STAGE_CHOICES)),)
    return tuple(found[:limit])


def attention_configs(block_d: int, dtype: torch.dtype, device_index: int, kind: str,
                      limit: Optional[int] = MAX_CANDIDATES, pingpong: bool = False,
                      pack: int = 1, single_loop: bool = False) -> tuple[AttentionConfig, ...]:
    """The launch configurations tried for a call, the untuned default first; device_index -1: the
    interpreter. pingpong: the call can take the Gluon kernel (_pingpong_applies), whose configurations
    come first, then `limit` Triton ones. pack > 1: up to `limit` more, the Triton ones taking PACKED_HEADS
    dividing `pack` query heads a program (at least MIN_PACKED_QUERIES queries of each), after the default;
    single_loop (with pack > 1, block_d in SINGLE_LOOP_HEAD_DIMS): the default tile's single-loop forms last, up to 3
    (2 stages with SINGLE_LOOP_MAXNREG registers, 2 stages, as is)."""
    if device_index < 0:
        return (INTERPRETER_CONFIG,)
    if dtype == torch.float32:
        return (FP32_CONFIG,)
    triton_configs = tuning_candidates(block_d, dtype.itemsize, kind, shared_memory_limit(device_index), limit)
    packed = tuple(replace(c, heads=h) for h in PACKED_HEADS if pack % h == 0 for c in triton_configs
                   if c.block_m // h >= MIN_PACKED_QUERIES)[:limit]
    single = ()
    if single_loop and pack > 1 and block_d in SINGLE_LOOP_HEAD_DIMS:
        base = replace(triton_configs[0], single_loop=True)
        single = tuple(dict.fromkeys((replace(base, num_stages=2, maxnreg=SINGLE_LOOP_MAXNREG),
                                      replace(base, num_stages=2), base)))
    triton_configs = triton_configs[:1] + packed + triton_configs[1:] + single
    return PINGPONG_CONFIGS[block_d] + triton_configs if pingpong else triton_configs


# ---------------------------------------------------------------------------------------------
# Kernel


@triton.jit
def _tile_source(t, tb, head, start, n_rows, stride_b, stride_h, stride_s, ROWS: tl.constexpr,
                 BLOCK_D: tl.constexpr, D: tl.constexpr, USE_TMA: tl.constexpr, HEADS: tl.constexpr = 1):
    """Where the tiles of heads head.. head + HEADS of `t` come from: a descriptor made on the host over t's
    [batch, head, seq, D] view ([1, HEADS, ROWS, D] boxes), used as is; else the heads' rows start.. start +
    n_rows, as a TMA descriptor made here (USE_TMA: bounds exact per sequence; 2-D, or 3-D [HEADS, ROWS, D]
    boxes) or a pointer (HEADS 1)."""
    if isinstance(t, tl.tensor_descriptor):
        return t
    else:
        base = t + tl.cast(tb, tl.int64) * stride_b + tl.cast(head, tl.int64) * stride_h + \
            tl.cast(start, tl.int64) * stride_s
        if USE_TMA and HEADS > 1:
            return tl.make_tensor_descriptor(base, [HEADS, tl.maximum(n_rows, 1), D], [stride_h, stride_s, 1],
                                             [HEADS, ROWS, BLOCK_D])
        elif USE_TMA:
            return tl.make_tensor_descriptor(base, [tl.maximum(n_rows, 1), D], [stride_s, 1], [ROWS, BLOCK_D])
        else:
            tl.static_assert(HEADS == 1, "several heads a tile need TMA")
            return base


@triton.jit
def _load_tile(src, tb, head, start, row0, n_rows, stride_s, ROWS: tl.constexpr, BLOCK_D: tl.constexpr,
               D: tl.constexpr, MASK_ROWS: tl.constexpr):
    """Rows row0.. of a head (from its row `start`) as [ROWS, BLOCK_D], or of several heads stacked (a
    descriptor over [HEADS, rows] boxes: ROWS = HEADS x its rows); columns >= D read as 0, and rows >= n_rows
    too (pointers: with MASK_ROWS; descriptors: rows past their bounds)."""
    if isinstance(src, tl.tensor_descriptor):
        if len(src.block_shape) == 4:
            return src.load([tb, head, start + row0, 0]).reshape([ROWS, BLOCK_D])
        elif len(src.block_shape) == 3:
            return src.load([0, row0, 0]).reshape([ROWS, BLOCK_D])
        else:
            return src.load([row0, 0])
    else:
        rows = row0 + tl.arange(0, ROWS)
        cols = tl.arange(0, BLOCK_D)
        ptrs = src + rows.to(tl.int64)[:, None] * stride_s + cols[None, :]
        if MASK_ROWS:
            return tl.load(ptrs, mask=(rows[:, None] < n_rows) & (cols[None, :] < D), other=0.0)
        elif BLOCK_D == D:
            return tl.load(ptrs)
        else:
            return tl.load(ptrs, mask=cols[None, :] < D, other=0.0)


@triton.jit
def fold_sink(acc, l_i, m_i, sink):
    """The softmax state (acc, l, m; m and sink in log2 units, as the scores) with a sink logit joined to its sum:
    m' = max(m, sink), l' = l 2^(m - m') + 2^(sink - m'), acc scaled as l. No key seen and a sink of -inf: 0 weights
    (l' = 0, m' = -inf), not NaN."""
    m_top = tl.maximum(m_i, sink)
    m_ref = tl.where(m_top == -float("inf"), 0.0, m_top)
    kept = tl.math.exp2(m_i - m_ref)  # no key seen: m = -inf, 0
    return acc * kept[:, None], l_i * kept + tl.math.exp2(sink - m_ref), m_top


@triton.jit
def soft_cap(s, cap):
    """cap tanh(s / cap), s and cap in one unit (cap within check_softcap's bounds), by one exp2: tanh(x) =
    1 - 2 / (e^(2 x) + 1) (+-1 at the ends, never NaN for finite s), and x (1 - x^2 / 3) where |x| < 2^-6, whose
    terms left out are under 2^-31 |x| (the exp2 form loses the small x's digits: an absolute error of ~2^-23)."""
    x = s / cap
    t = tl.where(tl.abs(x) < 0.015625, x * (1.0 - x * x * 0.3333333333333333),
                 1.0 - 2.0 / (tl.math.exp2(x * 2.8853900817779268) + 1.0))  # 2 log2(e)
    return cap * t


@triton.jit
def _keys_in_reach(qk, k_pos, k_first, k_last, MASK_PTX: tl.constexpr):
    """qk where k_first <= k_pos <= k_last, else -inf. MASK_PTX (inline PTX, a GPU only): two compares chained and
    one select a score, where the compiler makes one select a compare of the tl.where form (offline sm_90 SASS at
    D 64: one more a score in the tuned one-loop tile, ~7% of its loop; ~3 more in the three-loop masked loops)."""
    if MASK_PTX:
        return tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ge.s32 p, $2, $3; setp.le.and.s32 p, $2, $4, p; selp.f32 $0, $1, 0fFF800000, p; }",
            "=f,f,r,r,r", [qk, k_pos, k_first, k_last], dtype=tl.float32, is_pure=True, pack=1)
    else:
        return tl.where((k_pos >= k_first) & (k_pos <= k_last), qk, -float("inf"))


@triton.jit
def _attend_tiles(acc, l_i, m_i, q, k_src, v_src, tb, kv_head, k_start, stride_ks, stride_vs, seqlen_k, k_first,
                  k_last, lo, hi, full_lo, full_hi, qk_scale, softcap,
                  BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, D: tl.constexpr, MASKED: tl.constexpr,
                  SOFTCAP: tl.constexpr, PRECISION: tl.constexpr, MASK_PTX: tl.constexpr):
    """Online softmax over the key tiles starting at lo, lo + BLOCK_N, ... < hi. MASKED: apply the
    causal/window/sequence-end mask (scores -inf outside each row's keys k_first..k_last) to the tiles outside
    [full_lo, full_hi) (those every query sees whole; a branch the same for the whole program), guarding rows that
    have seen no key yet; otherwise every query of the block sees every key of every tile and no mask is computed.
    SOFTCAP: the scores soft-capped first (softcap in log2 units, as the scaled scores)."""
    offs_n = tl.arange(0, BLOCK_N)
    for n0 in tl.range(lo, hi, BLOCK_N):
        k = _load_tile(k_src, tb, kv_head, k_start, n0, seqlen_k, stride_ks, BLOCK_N, BLOCK_D, D, MASKED)
        qk = tl.dot(q, k.T, input_precision=PRECISION)
        if SOFTCAP:  # scaled and capped here: the scale below is 1
            qk = soft_cap(qk * qk_scale, softcap)
            scale = 1.0
        else:
            scale = qk_scale
        if MASKED:
            if (n0 < full_lo) | (n0 >= full_hi):
                qk = _keys_in_reach(qk, (n0 + offs_n)[None, :], k_first[:, None], k_last[:, None], MASK_PTX)
        m_new = tl.maximum(m_i, tl.max(qk, 1) * scale)  # scale > 0: max commutes with it
        if MASKED:
            m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)  # no key seen yet: exp2(-inf) = 0, not NaN
        else:
            m_ref = m_new
        p = tl.math.exp2(qk * scale - m_ref[:, None])  # one FFMA a score before the exp
        alpha = tl.math.exp2(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_tile(v_src, tb, kv_head, k_start, n0, seqlen_k, stride_vs, BLOCK_N, BLOCK_D, D, MASKED)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_fwd_kernel(q, k, v, o, lse, sinks, cu_seqlens_q, cu_seqlens_k,
                          stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                          stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os, stride_lb, stride_lh,
                          n_q_heads, seqlen_q, seqlen_k, kv_group, tiles_m, qk_scale, window_left, window_right,
                          softcap, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                          VARLEN: tl.constexpr, MASK_LEFT: tl.constexpr, MASK_RIGHT: tl.constexpr,
                          WRITE_LSE: tl.constexpr, USE_TMA: tl.constexpr, SINKS: tl.constexpr,
                          SOFTCAP: tl.constexpr, PRECISION: tl.constexpr, HEADS: tl.constexpr,
                          SINGLE_LOOP: tl.constexpr, MASK_PTX: tl.constexpr):
    # Reads the q tile once, each k/v tile of the key range once (BLOCK_N * D * 2 * itemsize bytes per
    # step, mostly from L2: the programs of one head run side by side), writes out (and lse) once; with
    # SINKS, each row's head's sink.
    # One program per (query tile, batch * head), the query tiles of one head adjacent in launch order:
    # the programs in flight share a few heads' k/v, read from HBM once and from L2 by the rest. (With
    # the heads adjacent instead, every program read its head's k/v from HBM: at BLOCK_M = 128 that is
    # 128 FLOP a byte, under the H200's ridge, so short sequences ran memory-bound.)
    # HEADS > 1: the tile's rows are BLOCK_Q queries of each of HEADS query heads of one k/v head (GQA), so a
    # narrow window's key span is BLOCK_Q + window keys, not BLOCK_M + window, and each k/v tile serves HEADS
    # heads (row r: head h + r // BLOCK_Q, query m0 + r % BLOCK_Q).
    BLOCK_Q: tl.constexpr = BLOCK_M // HEADS
    pid = tl.program_id(0)
    bh = pid // tiles_m
    b = bh // (n_q_heads // HEADS)
    h = bh % (n_q_heads // HEADS) * HEADS
    kv_head = h // kv_group
    m0 = (tiles_m - 1 - pid % tiles_m) * BLOCK_Q  # heaviest (last) query tiles of a head first
    if VARLEN:
        tb = 0
        q_start = tl.load(cu_seqlens_q + b)
        seqlen_q = tl.load(cu_seqlens_q + b + 1) - q_start
        k_start = tl.load(cu_seqlens_k + b)
        seqlen_k = tl.load(cu_seqlens_k + b + 1) - k_start
        if m0 >= seqlen_q:  # a tile past a sequence shorter than the longest
            return
    else:
        tb = b
        q_start = 0
        k_start = 0
    q_src = _tile_source(q, tb, h, q_start, seqlen_q, stride_qb, stride_qh, stride_qs, BLOCK_Q, BLOCK_D, D, USE_TMA,
                         HEADS)
    k_src = _tile_source(k, tb, kv_head, k_start, seqlen_k, stride_kb, stride_kh, stride_ks, BLOCK_N, BLOCK_D, D,
                         USE_TMA)
    v_src = _tile_source(v, tb, kv_head, k_start, seqlen_k, stride_vb, stride_vh, stride_vs, BLOCK_N, BLOCK_D, D,
                         USE_TMA)
    q_tile = _load_tile(q_src, tb, h, q_start, m0, seqlen_q, stride_qs, BLOCK_M, BLOCK_D, D, True)

    # The key range of the block, cut at tile boundaries into: masked tiles at the window's left edge
    # [lo, full_lo), tiles every query sees [full_lo, full_hi), masked tiles up to hi (diagonal, right
    # edge, sequence end). q_pos = i' = i + Sk - Sq, the key position query i is aligned to.
    offs_m = tl.arange(0, BLOCK_M)
    rows = m0 + offs_m % BLOCK_Q  # the query of each row
    q_pos = rows + (seqlen_k - seqlen_q)
    k_first = q_pos - window_left  # each row's keys, for the masked tiles
    k_last = tl.minimum(q_pos + window_right, seqlen_k - 1)
    first_q = m0 + seqlen_k - seqlen_q
    last_q = tl.minimum(m0 + BLOCK_Q, seqlen_q) - 1 + seqlen_k - seqlen_q
    lo = tl.maximum(first_q - window_left, 0) // BLOCK_N * BLOCK_N
    hi = tl.maximum(tl.minimum(last_q + window_right + 1, seqlen_k), lo)  # hi == lo: no key for the block
    full_lo = tl.minimum(tl.maximum(tl.cdiv(tl.maximum(last_q - window_left, 0), BLOCK_N) * BLOCK_N, lo), hi)
    full_hi = tl.maximum(tl.minimum(tl.maximum(tl.minimum(first_q + window_right + 1, seqlen_k), 0)
                                    // BLOCK_N * BLOCK_N, hi), full_lo)

    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    if SINGLE_LOOP:  # MASK_LEFT / MASK_RIGHT do not matter here (the launch sets both)
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                      stride_vs, seqlen_k, k_first, k_last, lo, hi, full_lo, full_hi, qk_scale,
                                      softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION, MASK_PTX)
    else:  # MASK_LEFT / MASK_RIGHT False: that loop is statically empty and left out; (0, 0): each tile masked
        if MASK_LEFT:
            acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                          stride_vs, seqlen_k, k_first, k_last, lo, full_lo, 0, 0,
                                          qk_scale, softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION, MASK_PTX)
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                      stride_vs, seqlen_k, k_first, k_last, full_lo, full_hi, 0, 0,
                                      qk_scale, softcap, BLOCK_N, BLOCK_D, D, False, SOFTCAP, PRECISION, MASK_PTX)
        if MASK_RIGHT:
            acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q_tile, k_src, v_src, tb, kv_head, k_start, stride_ks,
                                          stride_vs, seqlen_k, k_first, k_last, full_hi, hi, 0, 0,
                                          qk_scale, softcap, BLOCK_N, BLOCK_D, D, True, SOFTCAP, PRECISION, MASK_PTX)

    if SINKS:
        sink = tl.load(sinks + h) if HEADS == 1 else tl.load(sinks + h + offs_m // BLOCK_Q)
        acc, l_i, m_i = fold_sink(acc, l_i, m_i, sink.to(tl.float32) * 1.4426950408889634)  # x log2 e
    # a query that saw no key (and no sink): l = 0, acc = 0 -> out 0, lse -inf
    l_safe = tl.where(l_i > 0, l_i, 1.0)
    out = (acc * (1.0 / l_safe)[:, None]).to(q_tile.dtype)
    o_dst = _tile_source(o, tb, h, q_start, seqlen_q, stride_ob, stride_oh, stride_os, BLOCK_Q, BLOCK_D, D, USE_TMA,
                         HEADS)
    if isinstance(o_dst, tl.tensor_descriptor):  # clips rows past the sequence and columns past D
        if len(o_dst.block_shape) == 4:
            o_dst.store([tb, h, m0, 0], out.reshape([1, HEADS, BLOCK_Q, BLOCK_D]))
        elif len(o_dst.block_shape) == 3:
            o_dst.store([0, m0, 0], out.reshape([HEADS, BLOCK_Q, BLOCK_D]))
        else:
            o_dst.store([m0, 0], out)
    else:
        cols = tl.arange(0, BLOCK_D)
        tl.store(o_dst + rows.to(tl.int64)[:, None] * stride_os + cols[None, :], out,
                 mask=(rows < seqlen_q)[:, None] & (cols < D)[None, :])
    if WRITE_LSE:
        lse_head = lse + tl.cast(tb, tl.int64) * stride_lb + tl.cast(h, tl.int64) * stride_lh + q_start
        lse_val = tl.where(l_i > 0, (m_i + tl.math.log2(l_safe)) * 0.6931471805599453, -float("inf"))  # * ln 2
        tl.store(lse_head + (offs_m // BLOCK_Q) * stride_lh + rows, lse_val, mask=rows < seqlen_q)


# ---------------------------------------------------------------------------------------------
# Launch


def _block_d(D: int) -> int:
    return max(16, 1 << (D - 1).bit_length())


def _tma_strides(t: torch.Tensor) -> Optional[list[int]]:
    """Strides of a 4-D [batch, head, seq, D] view for a TMA descriptor, or None when TMA cannot address
    it. A size-1 dim's stride is never used; it is given the value that keeps the strides ordered."""
    if t.data_ptr() % 16:
        return None
    unit = 16 // t.element_size()
    strides, span = [1], t.shape[3]
    for size, stride in zip(reversed(t.shape[:3]), reversed(t.stride()[:3])):
        if size == 1:
            stride = cdiv(span, unit) * unit
        elif stride <= 0 or stride % unit:
            return None
        strides.insert(0, stride)
        span = max(span, stride * size)
    return strides


def _outer_to_inner(strides: list[int]) -> bool:
    """Strides that shrink from batch to head to seq: the layouts host-made 4-D descriptors are given
    (a [B, S, H, D] tensor seen as [B, H, S, D] is not; it gets 2-D descriptors made per head)."""
    return strides[0] >= strides[1] >= strides[2]


def _pingpong_applies(q4, k4, v4, o4, causal: bool, left: int, right: int, varlen: bool) -> bool:
    """Whether the Gluon kernel (attention_sm90) can run this call: an sm_90 GPU (Gluon has no
    interpreter), TMA on, dense (no window, not varlen) or causal, and tensors it takes
    (attention_sm90.supports: any strides TMA can address)."""
    return (GLUON_ENABLED and TMA_ENABLED and q4.is_cuda and not interpreting() and not varlen and left < 0
            and right == (0 if causal else -1) and gluon_runs(q4.device.index)
            and attention_sm90.supports(q4, k4, v4, o4, causal, [_tma_strides(t) for t in (q4, k4, v4, o4)]))


@functools.lru_cache(maxsize=None)
def _tma_capable(device_index: int) -> bool:
    """sm_90+; the interpreter (-1) emulates descriptors."""
    return device_index < 0 or capability(device_index)[0] >= 9


class _KeyedDescriptor(TensorDescriptor):
    """A host TMA descriptor made without TensorDescriptor's checks (16-byte aligned base and strides,
    sizes > 0, block shape), which cost ~20 us of Python per descriptor: a plan's key (alignment,
    strides, shapes) already holds them. Triton reads only its fields when it launches."""

    def __post_init__(self) -> None:
        pass


class _Plan:
    """One call's launch with everything its plan key fixes worked out: grid, constexprs, strides and
    sizes, the descriptors' shapes; after its first launch on CUDA, the compiled kernel, which later
    calls launch directly (no Triton dispatch). Called with the call's tensors (any views of them with
    the same data pointers: only descriptors read the 4-D shapes, and those come from the plan).

    Dense calls keep host-made descriptors: the per-call cost left is building 4 descriptor objects and
    the driver's encoding of them (the data pointer changes every call, so they cannot be cached), while
    descriptors made on the device would cost every program a global write and a fence before its first
    load, and every launch an allocation of their workspace (benchmarks/exp_attention.py measures both)."""

    __slots__ = ("grid", "constexprs", "descriptors", "sizes", "masking", "device", "compiled")

    def __init__(self, grid: tuple[int], constexprs: dict, descriptors: Optional[list[tuple]], sizes: tuple,
                 masking: tuple[int, int, float], device: int):
        self.grid, self.constexprs, self.descriptors = grid, constexprs, descriptors
        self.sizes, self.masking, self.device = sizes, masking, device  # masking: window bounds, soft cap
        self.compiled: Optional[Launch] = None

    def __call__(self, q, k, v, o, lse, cu_q, cu_k, qk_scale: float, sinks=None) -> None:
        tiles = (q, k, v, o)
        if self.descriptors is not None:
            tiles = [_KeyedDescriptor(t, *d) for t, d in zip(tiles, self.descriptors)]
        args = (*tiles, q if lse is None else lse, q if sinks is None else sinks, cu_q, cu_k, *self.sizes, qk_scale,
                *self.masking)
        if self.compiled is not None:
            self.compiled.run(self.grid, *args)
            return
        # first launch: Triton's dispatch compiles (or finds) the kernel; _support.launch is not used
        # because its cache keys on the arguments, and host descriptors are not hashable
        kernel = _attention_fwd_kernel[self.grid](*args, **self.constexprs)
        if self.device >= 0:
            params = tuple(self.constexprs[name] for name in _attention_fwd_kernel.arg_names[len(args):])
            self.compiled = Launch(kernel, params, self.device)


def _tuning_entry(config: AttentionConfig) -> dict:
    """A configuration as the tuner stores it: its fields, less heads = 1 and single_loop False, so that choices
    stored before those fields existed still match their candidates."""
    return {name: value for name, value in asdict(config).items()
            if (name, value) not in (("heads", 1), ("single_loop", False))}


def _kind(use_tma: bool, mask_left: bool, mask_right: bool) -> str:
    """The kernel kind whose candidate list a call takes (see REGISTER_BUDGET)."""
    return "pointer" if not use_tma else "masked" if mask_left or mask_right else "one_loop"


def _layout(q4, k4, v4, o4, varlen: bool) -> tuple[bool, bool, list]:
    """(TMA, host-made descriptors, the [batch, head, seq] strides of q, k, v, out) for 4-D views."""
    tma_strides = [_tma_strides(t) for t in (q4, k4, v4, o4)]
    use_tma = TMA_ENABLED and _tma_capable(q4.device.index if q4.is_cuda else -1) and None not in tma_strides
    host_descriptors = use_tma and HOST_DESCRIPTORS and not varlen and all(map(_outer_to_inner, tma_strides))
    strides = tma_strides if use_tma else [list(t.stride()) for t in (q4, k4, v4, o4)]
    return use_tma, host_descriptors, strides


def _plan_and_launch(q4, k4, v4, o4, lse3, cu_q, cu_k, n_batch, max_q, max_k, causal, left, right, varlen,
                     qk_scale, config: Optional[AttentionConfig] = None,
                     sinks: Optional[torch.Tensor] = None, softcap: float = 0.0) -> tuple[_Plan, bool]:
    """A call's slow path on 4-D [batch, head, seq, D] views (varlen: batch 1, seq = the packed tokens,
    max_q/max_k bound a sequence); lse3 [batch, Hq, seq] or None; left/right: window bounds, -1
    unbounded; sinks [Hq] or None; softcap > 0 or 0 (none). Works out the path (TMA or pointers) and the
    configuration (`config`, else the tuned choice, falling through to the next candidate when one does not
    fit the GPU), launches the call and returns its plan, and whether that plan may be kept: not when the
    choice was the untuned default (CUDA graph capture, torch.compile tracing), which a later call may tune."""
    D = q4.shape[-1]
    block_d = _block_d(D)
    device_index = q4.device.index if q4.is_cuda else -1
    use_tma, host_descriptors, (sq, sk, sv, so) = _layout(q4, k4, v4, o4, varlen)
    if use_tma and not host_descriptors and q4.is_cuda:
        ensure_scratch_allocator()  # device-made descriptors: Triton's dispatch of the first launch takes scratch
    mask_left, mask_right = left >= 0, causal or right >= 0 or varlen
    kind = _kind(use_tma, mask_left, mask_right)
    pingpong = not softcap and _pingpong_applies(q4, k4, v4, o4, causal, left, right, varlen)
    kv_group = q4.shape[1] // k4.shape[1]
    # wider than any query can reach (varlen's max_q / max_k are the caller's: capped within int32, past any sequence
    # a GPU holds)
    unbounded = min(max_q + max_k, 2**30)
    sizes = (sq[0], sq[1], sq[2], sk[0], sk[1], sk[2], sv[0], sv[1], sv[2], so[0], so[1], so[2],
             *(lse3.stride()[:2] if lse3 is not None else (0, 0)),
             q4.shape[1], q4.shape[2], k4.shape[2], kv_group)
    # bounds past every key clamped (an int32 key position plus a bound near 2^31 would wrap: all keys masked)
    masking = (unbounded if left < 0 else min(left, unbounded),
               0 if causal else (unbounded if right < 0 else min(right, unbounded)),
               softcap * LOG2E)  # the cap in the scaled scores' log2 units
    plans: dict[AttentionConfig, Union[_Plan, attention_sm90.PingpongPlan]] = {}

    def run(cfg: AttentionConfig) -> Union[_Plan, attention_sm90.PingpongPlan]:
        plan = plans.get(cfg)
        if plan is None and cfg.kernel == "pingpong":
            if not pingpong or cfg.heads != 1:
                raise ValueError(f"{cfg} needs an sm_90 GPU, a call the Gluon kernel supports and heads 1")
            # pingpong implies TMA: sq.. are the TMA strides
            plan = plans[cfg] = attention_sm90.PingpongPlan(q4, k4, (sq, sk, sv, so), causal, lse3 is not None,
                                                            cfg.block_n, cfg.num_stages, sinks is not None)
        elif plan is None:
            if cfg.heads > 1 and not (use_tma and kv_group % cfg.heads == 0 and cfg.block_m % cfg.heads == 0):
                raise ValueError(f"{cfg} packs {cfg.heads} query heads a program: that needs TMA and heads "
                                 f"dividing both the query heads a k/v head serves ({kv_group}) and block_m")
            if cfg.heads > 1 and cfg.single_loop and cfg.block_n > PACKED_SINGLE_LOOP_MAX_BLOCK_N:
                raise ValueError(f"{cfg} packs {cfg.heads} query heads a program in one loop: block_n must be <= "
                                 f"{PACKED_SINGLE_LOOP_MAX_BLOCK_N} there (PACKED_SINGLE_LOOP_MAX_BLOCK_N: sm_90 "
                                 f"compiles overwrite q)")
            tiles_m = cdiv(max_q, cfg.block_m // cfg.heads)
            programs = tiles_m * n_batch * q4.shape[1] // cfg.heads
            if programs > MAX_PROGRAMS:
                raise ValueError(f"batch * heads * query tiles = {programs} is past CUDA's grid limit "
                                 f"of {MAX_PROGRAMS}")
            descriptors = None
            if host_descriptors:
                descriptors = [(list(t.shape), s, [1, heads, rows, block_d]) for t, s, heads, rows in
                               ((q4, sq, cfg.heads, cfg.block_m // cfg.heads), (k4, sk, 1, cfg.block_n),
                                (v4, sv, 1, cfg.block_n), (o4, so, cfg.heads, cfg.block_m // cfg.heads))]
            constexprs = dict(D=D, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_D=block_d, VARLEN=varlen,
                              MASK_LEFT=mask_left or cfg.single_loop,
                              MASK_RIGHT=mask_right or k4.shape[2] % cfg.block_n != 0 or cfg.single_loop,
                              WRITE_LSE=lse3 is not None, USE_TMA=use_tma, SINKS=sinks is not None,
                              SOFTCAP=softcap > 0,
                              PRECISION="ieee" if q4.dtype == torch.float32 else "tf32", HEADS=cfg.heads,
                              SINGLE_LOOP=cfg.single_loop,
                              MASK_PTX=MASK_PTX_ENABLED and q4.is_cuda and not interpreting(),
                              num_warps=cfg.num_warps, num_stages=cfg.num_stages)
            if cfg.maxnreg:
                constexprs["maxnreg"] = cfg.maxnreg
            plan = plans[cfg] = _Plan((programs,), constexprs, descriptors, (*sizes, tiles_m), masking,
                                      device_index)
        plan(q4, k4, v4, o4, lse3, cu_q, cu_k, qk_scale, sinks)
        return plan

    if config is not None:
        return run(config), False
    pack = math.gcd(kv_group, max(PACKED_HEADS)) if PACK_WINDOWED_GQA and use_tma and left >= 0 else 1
    configs = attention_configs(block_d, q4.dtype, device_index, kind, pingpong=pingpong, pack=pack,
                                single_loop=SINGLE_LOOP_WINDOWED)
    chosen, final = configs[0], len(configs) == 1
    if not final:
        # ragged: some key tiles leave a masked tail loop (and its registers) to the one-loop kind;
        # pingpong: the candidates include the Gluon kernel's (a bucket holds lengths it takes and others)
        ragged = k4.shape[2] % max(BLOCK_N_CHOICES) != 0
        key = (_autotune.bucket(max_q), _autotune.bucket(max_k), _autotune.bucket(n_batch * q4.shape[1]),
               q4.dtype, D, kind, causal, left >= 0, right >= 0 and not causal, varlen, ragged, pingpong,
               sinks is not None, softcap > 0) + ((pack,) if pack > 1 else ())  # unpacked keys as before
        if pack > 1 and SINGLE_LOOP_WINDOWED:  # choices stored before the single-loop forms were offered: tune again
            key += ("single_loop",)
        device = _autotune.device_name(device_index)
        chosen = AttentionConfig(**_autotune.choose(
            "attention", key, [_tuning_entry(c) for c in configs], lambda c: run(AttentionConfig(**c)),
            device=device, tune=_autotune.may_tune(q4)))
        final = _autotune.is_settled("attention", key, device=device)
    for cfg in (chosen, *(c for c in configs if c != chosen)):
        try:
            return run(cfg), final
        except triton.runtime.errors.OutOfResources as err:  # the estimates let through one that does not fit
            last = err
    raise last


# ---------------------------------------------------------------------------------------------
# Checks, the custom ops, the public functions


def window_bounds(window: Window, causal: bool) -> tuple[int, int]:
    """(left, right) from `window`, -1 meaning unbounded; causal makes right 0."""
    if window is None:
        left, right = -1, -1
    elif isinstance(window, int) and not isinstance(window, bool):
        left, right = window, -1
    elif isinstance(window, (tuple, list)) and len(window) == 2:
        left, right = (-1 if w is None else w for w in window)
    else:
        raise TypeError(f"window must be None, an int or a (left, right) pair, got {window!r}")
    for name, w in (("left", left), ("right", right)):
        if not isinstance(w, int) or isinstance(w, bool) or w < -1:
            raise ValueError(f"window {name} must be an int >= 0 (or None / -1: unbounded), got {w!r}")
    if causal:
        if right > 0:
            raise ValueError(f"window right must be 0 or None with causal=True, got {right}")
        right = 0
    return left, right


SOFTCAP_BOUNDS = (1e-30, 1e30)  # the kernels take the cap in log2 units, in fp32, and divide by it


def check_softcap(softcap) -> float:
    """softcap as the ops take it: a positive number within SOFTCAP_BOUNDS (Gemma 2's: 50), or 0.0 for None (no
    soft-capping)."""
    if softcap is None:
        return 0.0
    check_number("softcap", softcap)
    if not SOFTCAP_BOUNDS[0] <= softcap <= SOFTCAP_BOUNDS[1]:
        raise ValueError(f"softcap must be a positive finite number in [{SOFTCAP_BOUNDS[0]:g}, "
                         f"{SOFTCAP_BOUNDS[1]:g}] (or None), got {softcap!r}")
    return float(softcap)


def check_scale(scale, D: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(D)
    check_number("scale", scale)
    if not 0 < scale < math.inf:
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    return float(scale)


def check_qkv(q, k, v, ndim: int, layout: str, names: tuple[str, str, str] = ("q", "k", "v"),
              fp8_kv: bool = False, max_head_dim: int = MAX_HEAD_DIM) -> None:
    """q, k and v (named `names` in errors): float, `ndim`-D with a unit last stride, k and v alike on q's device
    and dtype (fp8_kv: or both FP8_KV, caches of fp8 codes), one head_dim <= max_head_dim, q's
    heads (dim -3 of 4-D, -2 of 3-D) a multiple of k's."""
    nq, nk, nv = names
    for name, t in zip(names, (q, k, v)):
        check_float(name, t, FLOAT_DTYPES + (FP8_KV,) if fp8_kv and t is not q else FLOAT_DTYPES)
        if t.dim() != ndim:
            raise ValueError(f"{name} must be {ndim}-D {layout}, got shape {tuple(t.shape)}")
        if t.stride(-1) != 1 and t.shape[-1] > 1:
            raise ValueError(f"{name} must have unit stride along its last dim (head_dim), got {t.stride(-1)}")
    codes = k.dtype == FP8_KV
    for name, t in ((nk, k), (nv, v)):
        check_same_device(name, t, nq, q)
        if codes and t.dtype != FP8_KV:
            raise TypeError(f"{name} has dtype {t.dtype} but {nk} has {FP8_KV}: both or neither")
        if not codes and t.dtype != q.dtype:
            raise TypeError(f"{name} has dtype {t.dtype} but {nq} has {q.dtype}")
    if v.shape != k.shape:
        raise ValueError(f"{nv} has shape {tuple(v.shape)} but {nk} has {tuple(k.shape)}")
    D = q.shape[-1]
    if k.shape[-1] != D:
        raise ValueError(f"{nk} has head_dim {k.shape[-1]} but {nq} has {D}")
    if not 1 <= D <= max_head_dim:
        raise ValueError(f"{nq} has head_dim {D}; supported: 1..{max_head_dim}")
    hq, hkv = q.shape[-3 if ndim == 4 else -2], k.shape[-3 if ndim == 4 else -2]
    if hkv == 0 or hq % hkv:
        raise ValueError(f"{nq}'s {hq} heads must be a multiple of {nk}'s and {nv}'s {hkv} heads (GQA)")


def check_sinks(sinks, q: torch.Tensor, heads: int) -> None:
    """sinks (None, or float [heads] on q's device: a logit a query head)."""
    if sinks is None:
        return
    check_float("sinks", sinks)
    check_same_device("sinks", sinks, "q", q)
    if sinks.shape != (heads,):
        raise ValueError(f"sinks must have shape ({heads},) (a logit a query head), got {tuple(sinks.shape)}")


def _no_key(out: torch.Tensor, lse: torch.Tensor, sinks: Optional[torch.Tensor], heads_dim: int) -> None:
    """Every query sees no key: out 0, lse -inf (with sinks: each head's sink; lse's heads along heads_dim)."""
    out.zero_()
    if sinks is None or lse.numel() == 0:
        lse.fill_(-math.inf)
    else:
        lse.copy_(sinks.float().view([-1] + [1] * (lse.dim() - 1 - heads_dim)).expand(lse.shape))


def _sinks_key(sinks: Optional[torch.Tensor]) -> Optional[torch.dtype]:
    """What a plan's key holds of the sinks: their dtype (the compiled kernel is specialised on the pointer's), or
    None without."""
    return None if sinks is None else sinks.dtype


def _new_out(q: torch.Tensor) -> torch.Tensor:
    """Out [B, Hq, Sq, D] in q's layout: [B, S, H, D] memory when q is a transposed [B, S, H, D] (so that
    a model's transpose back is free), else contiguous."""
    B, H, S, D = q.shape
    if q.stride(1) < q.stride(2) and H > 1 and S > 1:
        return torch.empty(B, S, H, D, dtype=q.dtype, device=q.device).transpose(1, 2)
    return torch.empty(B, H, S, D, dtype=q.dtype, device=q.device)


def _lse_shape(shape, return_lse: bool):
    return tuple(shape) if return_lse else (0,)


def _attention_fake(q, k, v, causal, scale, left, right, return_lse, sinks, softcap):
    return _new_out(q), q.new_empty(_lse_shape(q.shape[:3], return_lse), dtype=torch.float32)


# Plans of calls made before, by key: a repeated call (same shapes, strides, dtypes, flags, alignment)
# checks its inputs, allocates its outputs and launches the compiled kernel directly.
_plans = Plans()


@torch_op("attention", fake=_attention_fake)
def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float, left: int,
                  right: int, return_lse: bool, sinks: Optional[torch.Tensor],
                  softcap: float) -> tuple[torch.Tensor, torch.Tensor]:
    if not runs_kernel(q):
        ref, lse = attention_reference(q, k, v, causal, scale, (left, right), return_lse=True, sinks=sinks,
                                       softcap=softcap or None)
        return _new_out(q).copy_(ref), lse.float() if return_lse else q.new_empty((0,), dtype=torch.float32)
    B, Hq, Sq, D = q.shape
    Sk = k.shape[2]
    out = _new_out(q)
    lse = torch.empty(_lse_shape((B, Hq, Sq), return_lse), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    if Sk == 0:  # no key anywhere
        _no_key(out, lse, sinks, 1)
        return out, lse
    lse3 = lse if return_lse else None
    # everything the launch depends on but the data pointers and the scale (out's layout follows q's)
    key = ("dense", q.shape, q.stride(), k.shape, k.stride(), v.stride(), q.dtype, q.device, causal, left, right,
           softcap, return_lse, _sinks_key(sinks), TMA_ENABLED, HOST_DESCRIPTORS, GLUON_ENABLED, MASK_PTX_ENABLED,
           alignment_key(q, k, v, sinks))
    plan = _plans.get(key)
    if plan is not None:
        plan(q, k, v, out, lse3, q, q, scale * LOG2E, sinks)
        return out, lse
    plan, final = _plan_and_launch(q, k, v, out, lse3, q, q, B, Sq, Sk, causal, left, right, False, scale * LOG2E,
                                   sinks=sinks, softcap=softcap)
    if final:
        _plans.keep(key, plan)
    return out, lse


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              scale: Optional[float] = None, window: Window = None, return_lse: bool = False,
              sinks: Optional[torch.Tensor] = None, softcap: Optional[float] = None):
    """softmax(q k^T * scale + mask) v for q [B, Hq, Sq, D], k and v [B, Hkv, Sk, D] (SDPA's layout; any
    strides with a unit last one); GQA/MQA when Hq is a multiple of Hkv. causal is aligned bottom-right
    (query i sees keys j <= i + Sk - Sq); window = (left, right) or left: query i sees keys
    [i' - left, i' + right], i' = i + Sk - Sq. scale defaults to 1/sqrt(D). sinks (float [Hq], gpt-oss's):
    a logit each query head's softmax takes in with no value. softcap (Gemma 2's): each score s becomes
    softcap tanh(s / softcap) first. Returns out [B, Hq, Sq, D], and with return_lse also lse [B, Hq, Sq]
    fp32 (natural log, the sink's term in it). A query that sees no key gets 0 and -inf (with sinks: its
    head's sink)."""
    check_qkv(q, k, v, 4, "[batch, heads, seq, head_dim]")
    if k.shape[0] != q.shape[0]:
        raise ValueError(f"k has batch {k.shape[0]} but q has {q.shape[0]}")
    check_sinks(sinks, q, q.shape[1])
    left, right = window_bounds(window, bool(causal))
    out, lse = _attention_op(q, k, v, bool(causal), check_scale(scale, q.shape[-1]), left, right, bool(return_lse),
                             None if sinks is None else sinks.contiguous(), check_softcap(softcap))
    return (out, lse) if return_lse else out


def attention_candidates(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                         limit: Optional[int] = MAX_CANDIDATES) -> tuple[AttentionConfig, ...]:
    """The launch configurations the tuner times for attention(q, k, v, causal) (no window), the untuned
    default first; limit None: the whole pruned space."""
    check_qkv(q, k, v, 4, "[batch, heads, seq, head_dim]")
    out = _new_out(q)
    use_tma = _layout(q, k, v, out, False)[0]
    return attention_configs(_block_d(q.shape[-1]), q.dtype, q.device.index if q.is_cuda else -1,
                             _kind(use_tma, False, bool(causal)), limit,
                             _pingpong_applies(q, k, v, out, bool(causal), -1, 0 if causal else -1, False))


def prepared_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
                       config: Optional[AttentionConfig] = None) -> Callable[[], torch.Tensor]:
    """attention(q, k, v, causal) (no window, q and k of one batch) made ready to repeat with launch
    configuration `config`, else the tuned choice: one call now chooses and compiles it; the callable
    allocates out and launches directly. For benchmarks that time each candidate."""
    check_qkv(q, k, v, 4, "[batch, heads, seq, head_dim]")
    B, _, Sq, D = q.shape
    if not runs_kernel(q) or q.numel() == 0 or k.shape[2] == 0 or k.shape[0] != B:
        raise ValueError("prepared_attention needs q, k and v of one batch, non-empty, where the kernel runs")
    left, right = window_bounds(None, bool(causal))
    qk_scale = LOG2E / math.sqrt(D)
    plan, _ = _plan_and_launch(q, k, v, _new_out(q), None, q, q, B, Sq, k.shape[2], bool(causal), left, right, False,
                               qk_scale, config)

    def call() -> torch.Tensor:
        out = _new_out(q)
        plan(q, k, v, out, None, q, q, qk_scale)
        return out

    return call


def _varlen_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, left, right,
                 return_lse, sinks, softcap):
    return (torch.empty_like(q, memory_format=torch.contiguous_format),
            q.new_empty(_lse_shape((q.shape[1], q.shape[0]), return_lse), dtype=torch.float32))


@torch_op("attention_varlen", fake=_varlen_fake)
def _attention_varlen_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                         cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool, scale: float,
                         left: int, right: int, return_lse: bool, sinks: Optional[torch.Tensor],
                         softcap: float) -> tuple[torch.Tensor, torch.Tensor]:
    if not runs_kernel(q):
        out, lse = attention_varlen_reference(q, k, v, cu_seqlens_q, cu_seqlens_k, causal, scale, (left, right),
                                              sinks, softcap or None)
        return out.to(q.dtype), lse.float() if return_lse else q.new_empty((0,), dtype=torch.float32)
    out = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty(_lse_shape((q.shape[1], q.shape[0]), return_lse), dtype=torch.float32, device=q.device)
    batch = cu_seqlens_q.shape[0] - 1
    if out.numel() == 0 or batch == 0 or max_seqlen_q == 0:
        return out, lse
    if k.shape[0] == 0 or max_seqlen_k == 0:  # no key anywhere
        _no_key(out, lse, sinks, 0)
        return out, lse
    lse2 = lse if return_lse else None
    key = ("varlen", q.shape, q.stride(), k.shape, k.stride(), v.stride(), q.dtype, q.device, batch, max_seqlen_q,
           max_seqlen_k, causal, left, right, softcap, return_lse, _sinks_key(sinks), TMA_ENABLED, MASK_PTX_ENABLED,
           alignment_key(q, k, v, cu_seqlens_q, cu_seqlens_k, sinks))
    plan = _plans.get(key)
    if plan is not None:  # the plan takes the tensors as they are: no descriptor reads the 4-D views' shapes
        plan(q, k, v, out, lse2, cu_seqlens_q, cu_seqlens_k, scale * LOG2E, sinks)
        return out, lse
    # [tokens, H, D] -> [1, H, tokens, D] views: one kernel for both layouts
    q4, k4, v4, o4 = (t.unsqueeze(0).transpose(1, 2) for t in (q, k, v, out))
    plan, final = _plan_and_launch(q4, k4, v4, o4, None if lse2 is None else lse2.unsqueeze(0), cu_seqlens_q,
                                   cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, causal, left, right, True,
                                   scale * LOG2E, sinks=sinks, softcap=softcap)
    if final:
        _plans.keep(key, plan)
    return out, lse


def attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                     cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, causal: bool = False,
                     scale: Optional[float] = None, window: Window = None, return_lse: bool = False,
                     sinks: Optional[torch.Tensor] = None, softcap: Optional[float] = None):
    """attention() over packed sequences (flash-attn's varlen API): q [total_q, Hq, D], k and v
    [total_k, Hkv, D]; sequence b is rows cu_seqlens_q[b]:cu_seqlens_q[b+1] of q (likewise k, v), the
    cu_seqlens int32 [batch + 1]; max_seqlen_q/k bound every sequence's length; sinks and softcap as
    attention's.
    Returns out [total_q, Hq, D], and with return_lse also lse [Hq, total_q] fp32."""
    check_qkv(q, k, v, 3, "[tokens, heads, head_dim]")
    check_sinks(sinks, q, q.shape[1])
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if not isinstance(cu, torch.Tensor) or cu.dtype != torch.int32 or cu.dim() != 1 or cu.shape[0] < 1:
            raise TypeError(f"{name} must be a 1-D int32 tensor [batch + 1]")
        check_same_device(name, cu, "q", q)
        if cu.stride(0) != 1 and cu.shape[0] > 1:
            raise ValueError(f"{name} must be contiguous")
    if cu_seqlens_k.shape[0] != cu_seqlens_q.shape[0]:
        raise ValueError(f"cu_seqlens_k has {cu_seqlens_k.shape[0]} entries but cu_seqlens_q has "
                         f"{cu_seqlens_q.shape[0]}")
    for name, n in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if not isinstance(n, (int, torch.SymInt)) or isinstance(n, bool) or n < 0:
            raise ValueError(f"{name} must be an int >= 0, got {n!r}")
    left, right = window_bounds(window, bool(causal))
    out, lse = _attention_varlen_op(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, bool(causal),
                                    check_scale(scale, q.shape[-1]), left, right, bool(return_lse),
                                    None if sinks is None else sinks.contiguous(), check_softcap(softcap))
    return (out, lse) if return_lse else out


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases


def _visible(Sq: int, Sk: int, left: int, right: int, device) -> torch.Tensor:
    """[Sq, Sk] bool: which keys each query sees (bottom-right aligned; -1 unbounded)."""
    i = torch.arange(Sq, device=device)[:, None] + (Sk - Sq)
    j = torch.arange(Sk, device=device)[None, :]
    seen = torch.ones(Sq, Sk, dtype=torch.bool, device=device)
    if left >= 0:
        seen &= j >= i - left
    if right >= 0:
        seen &= j <= i + right
    return seen


def attention_reference(q, k, v, causal=False, scale=None, window=None, return_lse=False, sinks=None, softcap=None):
    """The same maths in float64, the softmax materialised (query rows in chunks, so that it fits on a
    GPU at S = 16384); GQA by repeat_interleave; rows that see no key give 0 (lse -inf); sinks [Hq] join
    each head's sum (gpt-oss's eager form: a column of them, dropped after the softmax); softcap: scores
    softcap tanh(s / softcap) before the mask (Gemma 2's eager form)."""
    left, right = window_bounds(window, bool(causal))
    B, Hq, Sq, D = q.shape
    scale = check_scale(scale, D)
    group = Hq // max(k.shape[1], 1)
    kd = k.double().repeat_interleave(group, 1)
    vd = v.double().repeat_interleave(group, 1)
    seen = _visible(Sq, k.shape[2], left, right, q.device)
    out = torch.zeros(B, Hq, Sq, D, dtype=torch.float64, device=q.device)
    lse = torch.full((B, Hq, Sq), -math.inf, dtype=torch.float64, device=q.device)
    chunk = max(1, 2**27 // max(1, B * Hq * k.shape[2]))
    for s in range(0, Sq, chunk):
        scores = (q[:, :, s:s + chunk].double() @ kd.transpose(-1, -2)) * scale
        if softcap is not None:
            scores = torch.tanh(scores / softcap) * softcap
        scores = scores.masked_fill(~seen[s:s + chunk], -math.inf)
        rows_lse = torch.logsumexp(scores, -1)
        if sinks is not None:
            rows_lse = torch.logaddexp(rows_lse, sinks.double()[:, None])
        p = torch.exp(scores - torch.where(torch.isinf(rows_lse), 0.0, rows_lse)[..., None])
        out[:, :, s:s + chunk] = p @ vd
        lse[:, :, s:s + chunk] = rows_lse
    return (out, lse) if return_lse else out


def attention_varlen_reference(q, k, v, cu_seqlens_q, cu_seqlens_k, causal=False, scale=None, window=None,
                               sinks=None, softcap=None):
    """Per sequence, the dense reference (float64): (out [total_q, Hq, D], lse [Hq, total_q])."""
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), -math.inf, dtype=torch.float64, device=q.device)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        qs, ks = slice(cq[b], cq[b + 1]), slice(ck[b], ck[b + 1])
        o, l = attention_reference(q[qs].transpose(0, 1)[None], k[ks].transpose(0, 1)[None],
                                   v[ks].transpose(0, 1)[None], causal, scale, window, return_lse=True, sinks=sinks,
                                   softcap=softcap)
        out[qs] = o[0].transpose(0, 1)
        lse[:, qs] = l[0]
    return out, lse


def attention_eager(q, k, v, causal=False, scale=None, window=None, sinks=None, softcap=None):
    """Materialised attention as a model writes it (Hugging Face's eager path): scores in the input
    dtype, softmax in fp32, GQA by repeating k/v heads; sinks as gpt-oss writes them (a column of them
    beside the scores, dropped after the softmax; as there, a query with no key and a sink of -inf gets
    NaN, where attention() gives 0); softcap as Gemma 2 does (scores / cap, tanh, x cap, before the mask)."""
    left, right = window_bounds(window, bool(causal))
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = (q @ k.transpose(-1, -2)) * check_scale(scale, q.shape[-1])
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if left >= 0 or right >= 0:
        scores = scores.masked_fill(~_visible(q.shape[2], k.shape[2], left, right, q.device), -math.inf)
    if sinks is None:
        return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
    column = sinks.to(scores.dtype).view(1, -1, 1, 1).expand(*scores.shape[:3], 1)
    return torch.softmax(torch.cat([scores, column], -1).float(), dim=-1)[..., :-1].to(q.dtype) @ v


def visible_pairs(Sq: int, Sk: int, left: int = -1, right: int = -1) -> int:
    """Number of (query, key) pairs attended, per (batch, head)."""
    i = torch.arange(Sq, dtype=torch.int64) + (Sk - Sq)
    lo = (i - left).clamp_min(0) if left >= 0 else torch.zeros_like(i)
    hi = (i + right).clamp_max(Sk - 1) if right >= 0 else torch.full_like(i, Sk - 1)
    return int((hi - lo + 1).clamp_min(0).sum())


def attention_cost(shape: tuple[int, ...], dtype: torch.dtype, causal: bool = False, window: Window = None,
                   kv_heads: Optional[int] = None) -> Cost:
    """shape [B, Hq, S, D] (Sq = Sk = S; k and v of kv_heads heads, default Hq): q, k, v read once, out
    written once; QK^T and PV, 2 * D FLOPs each per visible (query, key) pair."""
    B, H, S, D = shape
    left, right = window_bounds(window, causal)
    heads_read = 2 * H + 2 * (H if kv_heads is None else kv_heads)
    return Cost(flops=4 * B * H * D * visible_pairs(S, S, left, right),
                bytes=heads_read * B * S * D * dtype.itemsize)


def _make_qkv(shape, dtype, device):
    return tuple(torch.randn(shape, device=device, dtype=dtype) for _ in range(3))


def _sdpa_peer(backend_name: str, causal: bool):
    """SDPA with one backend forced; None when that backend cannot run here."""
    def factory():
        if not torch.cuda.is_available():
            return None
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)

        def run(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=q.shape[1] != k.shape[1])

        try:
            probe = torch.randn(1, 2, 128, 64, device="cuda", dtype=torch.bfloat16)
            run(probe, probe, probe)
        except RuntimeError:
            return None
        return run
    return factory


def attention_peak_memory(S: int = 16384, B: int = 1, H: int = 16, D: int = 128, dtype: torch.dtype = torch.bfloat16,
                          causal: bool = False) -> dict[str, Optional[int]]:
    """Peak bytes allocated by one call beyond its inputs (torch.cuda.max_memory_allocated), for rooftop's
    attention and the materialised eager form (None where that ran out of memory). Needs a GPU."""
    q, k, v = _make_qkv((B, H, S, D), dtype, "cuda")
    peaks: dict[str, Optional[int]] = {}
    for name, fn in (("rooftop", lambda: attention(q, k, v, causal)),
                     ("eager", lambda: attention_eager(q, k, v, causal))):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        try:
            out = fn()
            torch.cuda.synchronize()
            peaks[name] = torch.cuda.max_memory_allocated() - base
            del out
        except torch.OutOfMemoryError:
            peaks[name] = None
        torch.cuda.empty_cache()
    return peaks


ATTENTION_SWEEP = (512, 1024, 2048, 4096, 8192, 16384)


def attention_cases(heads: int, head_dim: int, tokens: int = 16384) -> tuple[tuple[int, int, int, int], ...]:
    """[B, H, S, D] cases with B * S = tokens (the anchors' sweep)."""
    return tuple((tokens // s, heads, s, head_dim) for s in ATTENTION_SWEEP)


for _name, _heads, _dim in (("attention", 16, 128), ("attention_d64", 32, 64), ("attention_d256", 8, 256)):
    for _causal in (False, True):
        registry.register(registry.OpSpec(
            name=_name + ("_causal" if _causal else ""), family="attention", make_inputs=_make_qkv,
            run=lambda q, k, v, c=_causal: attention(q, k, v, c),
            reference=lambda q, k, v, c=_causal: attention_reference(q, k, v, c),
            eager=lambda q, k, v, c=_causal: attention_eager(q, k, v, c),
            cost=lambda shape, dtype, c=_causal: attention_cost(shape, dtype, c),
            cases=attention_cases(_heads, _dim), check_cases=((1, 2, 100, _dim), (2, 2, 37, _dim)),
            peers={p: _sdpa_peer(b, _causal) for p, b in (("sdpa_flash", "FLASH_ATTENTION"),
                                                          ("sdpa_cudnn", "CUDNN_ATTENTION"),
                                                          ("sdpa_efficient", "EFFICIENT_ATTENTION"))},
            x_key="S"))


# gpt-oss's attention (gpt-oss-20b / 120b: 64 query heads over 8 kv heads, D = 64, a logit of sinks a head):
# its full layers causal, its sliding-window ones 128 keys a query (transformers' sliding_window = 128: left = 127).
# No peer: SDPA has no sinks; eager is transformers' form, the scores materialised.
GPT_OSS_GROUP = 8


def _make_sinks_inputs(shape, dtype, device):
    B, H, S, D = shape
    q = torch.randn(shape, device=device, dtype=dtype)
    k, v = (torch.randn(B, H // GPT_OSS_GROUP, S, D, device=device, dtype=dtype) for _ in range(2))
    return q, k, v, torch.randn(H, device=device, dtype=dtype) * 2


for _name, _window in (("attention_sinks", None), ("attention_sinks_window128", 127)):
    registry.register(registry.OpSpec(
        name=_name, family="attention_sinks", make_inputs=_make_sinks_inputs,
        run=lambda q, k, v, s, w=_window: attention(q, k, v, True, window=w, sinks=s),
        reference=lambda q, k, v, s, w=_window: attention_reference(q, k, v, True, window=w, sinks=s),
        eager=lambda q, k, v, s, w=_window: attention_eager(q, k, v, True, window=w, sinks=s),
        cost=lambda shape, dtype, w=_window: attention_cost(shape, dtype, True, w, shape[1] // GPT_OSS_GROUP),
        cases=attention_cases(64, 64), check_cases=((1, 8, 100, 64), (2, 8, 37, 64)), x_key="S"))


def _peak_memory_table(ceilings) -> list[dict]:
    rows = []
    for causal in (False, True):
        peaks = attention_peak_memory(S=16384, causal=causal)
        rows.append({"shape": [1, 16, 16384, 128], "causal": causal,
                     "rooftop_MB": peaks["rooftop"] / 1e6,
                     "materialised_MB": None if peaks["eager"] is None else peaks["eager"] / 1e6})
    return rows


registry.register_table(registry.FamilyTable(
    family="attention", title="Peak memory of one call beyond its inputs, S = 16384, bf16 "
    "(rooftop against attention that materialises the scores)", make=_peak_memory_table))
