r"""GEMM on the tensor cores with the epilogue fused, so that the output is written once.

For a [M, K] (or [batch, M, K]) and b [K, N] (or [batch, K, N]), optional bias [N] and residual
(the output's shape):

    acc = a @ b                                     fp32 accumulation
    out = cast(act(acc + bias) + residual, out_dtype)

act is one of relu, gelu (erf), gelu_tanh, silu; out_dtype defaults to a's dtype. The epilogue runs
in fp32 on the accumulator. Inputs are float16 / bfloat16 / float32; float32 follows
torch.get_float32_matmul_precision(): "highest" (torch's default) multiplies in IEEE fp32, "high" or
"medium" in TF32 on the tensor cores.

`matmul_fp8` takes float8_e4m3fn a [M, K], b [K, N] with per-row scales of a ([M], [M, 1] or one
value) and per-column scales of b ([N], [1, N] or one value), fp32:

    out = cast((a @ b) * a_scale[:, None] * b_scale[None, :] + bias, out_dtype)

Which kernel runs:
- Gluon warp-specialised (ops/matmul_sm90.py; sm_90 GPUs only, never the interpreter): a candidate of
  the tuner beside the TMA kernel's where that one runs, a is 16-bit and K-major (row-major [M, K], or a
  [B, S, K] folded into M), M >= GLUON_MIN_M, the activation is not the erf GELU (it spills there) and a
  residual, if any, is row-major and of the output's dtype; b may be [K, N] row-major or w.t() of a
  row-major [N, K] w. One persistent program per SM: a 1-warp TMA loader fills a ring of A and B tiles
  (3-5 stages, "ready"/"empty" mbarriers) that one or two consumer warp groups (setmaxnreg 232, the
  loader 40) read with async wgmma, one MMA group in flight. A consumer's epilogue runs this file's
  `_epilogue` (bias, activation, fp32), adds the residual tile that TMA brought into the output's staging
  buffer during the mainloop, and stores by TMA while its next tile's mainloop runs. Variants:
  cooperative 128 x 256 (two warp groups of 64 rows), 128 x 128 with one warp group and 4 or 5 stages,
  ping-pong 128 x 128 (two warp groups take whole tiles in turn, one's epilogue under the other's
  mainloop). Traffic as the TMA kernel's below; its descriptors are made on the host (no workspace).
  H200, bf16, no epilogue, CUDA-graph replay, cold L2 (2026-12-01, benchmarks/exp_gluon_matmul.py, log
  in benchmarks/results/logs/h200-2026-12-01-s8/), TFLOP/s of the best variant against the TMA kernel
  (x cuBLAS): 512 x 4096 x 4096 702 (0.98x; 1 warp group, 5 stages) vs 607 (0.85x); 512 x 10240 x 8192
  596 (0.86x; the same) vs 570 (0.82x); 512 x 6144 x 4096 570 (0.86x; 128 x 256) vs 547 (0.83x); 2048^3
  679 (1.02x; 1 warp group, 4 stages) vs 632 (0.95x); 4096^3 695 (1.07x; 128 x 256) vs 653 (1.00x);
  8192^3 685 (1.06x; 128 x 256) vs 661 (1.03x). The tuner weighs its variants per shape bucket; the
  untuned default stays the TMA kernel's. Tuned rooftop.matmul with the Gluon candidates, same run as
  cuBLAS (exp-gluon-matmul-library.log): 512 x 4096 x 4096 0.99x, 512 x 10240 x 8192 0.82x, 512 x 6144 x
  4096 0.86x, 2048^3 1.00x, 4096^3 1.01x, 8192^3 1.00x; 4096^3 + bias + SiLU 1.42x cuBLAS + eager (session
  8). Session 9 added stream-K variants (matmul_sm90.timed: where the last wave is under 90% full); its
  results file (h200-2026-12-01-matmul.json, graph replay): 512 x 10240 x 8192 0.93x, 512 x 6144 x 4096
  0.89x, 512 x 4096 x 4096 0.97x, 2048^3 0.97x, 4096^3 1.00x. Cooperative 128 x 192 and 128 x 160 variants
  (where their tiles fill the waves and 128 / 256 do not: matmul_sm90.timed) came after. Session 41 (2026-12-03,
  three runs of the M = 512 rows, graph replay x cuBLAS): 512 x 6144 x 4096 0.98 / 1.01 / 1.02x, 512 x 10240 x 8192
  0.90 / 0.97 / 0.92x, 512 x 28672 x 4096 0.92-0.95x, the others 0.96-1.04x; M = 512 ratios move by several percent
  between runs (cuBLAS's own time at 512 x 6144 x 4096: 35.4 us in session 9, 37.9-41.6 in session 41): the GEMMs
  run at the card's 700 W cap, and a provider timed after another inherits the clock that one left. Session 51
  (2026-12-04), the providers' graphs replayed in alternating bursts (sweep.measure; two runs agreed within 0.013):
  512 x 10240 x 8192 0.91x, 512 x 28672 x 4096 0.95x, the other M = 512 shapes 0.97-1.03x; the fastest of the
  tuner's candidates, each forced, ran 1-2% faster than its choice there (benchmarks/exp_gemm_bursts.py).
  The fused epilogues in the same bursts (session 52, x "cuBLAS followed by the eager epilogue", issue 4's baseline):
  bias + SiLU 1.27 / 1.14 / 1.25 / 1.42x at 4096^3 / 8192^3 / 2048 x 14336 x 4096 / 2048^3; residual 1.11 / 1.12 /
  1.15 / 1.11x at 4096^3 / 2048 x 4096 x 4096 / 2048^3 / 8192 x 4096 x 4096 once the Gluon kernel asked for its
  residual tile late in the mainloop (matmul_sm90.RESIDUAL_LEAD; 1.09 / 1.09 / 1.12 / 1.05x before), 1.06x at 8192^3
  (before). A residual add costs eager 6 bytes an output element against 2 K flops: a fused kernel at cuBLAS's own
  speed gains ~1 + 3 F / (B K) (F the matmul rate, B the copy bandwidth), 1.12x at K = 4096 and 1.06x at K = 8192
  (measured 1.13 / 1.05x), so 1.1x at K = 8192 asks for a GEMM faster than cuBLAS.
- TMA persistent (sm_90+; the interpreter runs it too): when the problem is one 2-D GEMM after folding the batch of a
  3-D a into M (a's rows evenly strided, as a contiguous [B, S, K] is) and a, b and the output suit TMA: one unit
  stride, the other a multiple of 16 bytes, a 16-byte aligned base, K > 0. a and b may each be either way round (a.t(),
  b.t() views need no copy). One program per SM loops over the output tiles in GROUP_M order; the tensor descriptors are
  built on the device, in a workspace of 128 bytes per descriptor per program that Triton takes from its allocator
  (_support.ensure_scratch_allocator: torch's caching allocator, unless the user set one). A row-major residual that
  suits TMA is read by TMA too, any other through pointers. fp8 needs a and b K-major here (b = w.t() of a row-major
  [N, K] w): Hopper's fp8 wgmma reads both operands K-major from shared memory; an fp8 b that is N-major takes the
  grouped kernel (Triton transposes it through registers).
- fp8 split-K (matmul_fp8 at decode sizes, M <= FP8_GEMV_MAX_M, a row-major and b = w.t() of a row-major [N, K] w, no
  residual or activation; `_fp8_gemv_kernel`): a decode step's GEMM tile kernels leave most SMs idle (N / BLOCK_N
  programs: 64 for N = 4096), so K is split too, into as many splits as make about FP8_GEMV_PROGRAMS_PER_SM programs
  an SM. A program multiplies its BLOCK_N weight rows by a's rows over its k-range swap-AB (the weight the MMA's M
  side, wgmma from 64; a's <= 16 rows its N side, both K-major as Hopper's fp8 MMA wants them), scales its partial,
  and the tile's last split to arrive sums the fp32 partials in k order (`_support.store_split_output`, as
  quant_matmul's GEMV: deterministic) and adds the bias. Its candidates come first (the untuned default); the tuner
  times them beside the GEMM kernels'. Session 59 (H200, before it): a Llama-3-8B-shaped model with fp8 W8A8 linears
  decoded 816 tok/s at batch 1 (int4's GEMV 1282), 54% of its weights' floor.
- grouped (everything else: any strides, batched b, unaligned views, and fp32 in IEEE precision, which
  runs on the CUDA cores and wants its operands in registers): one program per output tile, GROUP_M
  row-tiles walking the columns together so that they share B panels in L2, masked pointer loads
  pipelined over num_stages.
All fuse the same epilogue. The launch configuration comes from a pruned candidate list for the
regime of M (M <= 64: narrow tiles, the weight streams once; M > 128: 128 x 256 tiles), plus
GROUPED_EXTRA grouped candidates where TMA can run and the Gluon variants where they apply, timed on
the first call per (device, shape bucket, dtypes, layout, whether Gluon applies, epilogue) and
remembered on disk (rooftop.ops._autotune). Untuned (interpreter, graph capture, torch.compile tracing,
ROOFTOP_AUTOTUNE=0) it is the first Triton candidate whose tiles fill the SMs.
Host path: once the configuration is final (tuned or remembered; always in the interpreter), a call's
launch is kept as a plan under its shapes, strides, dtypes, flags and 16-byte alignments; a later call
with the same key runs the checks, allocates the output and launches the compiled kernel directly.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop import registry
# matmul_sm90's kernel calls this file's _epilogue: it imports this module (a cycle resolved by the time
# either compiles a kernel)
from rooftop.ops import _autotune, _support, matmul_sm90
from rooftop.ops.activations import _activate as _activate_fp32, quantize_rows
from rooftop.ops._support import (Launch, Plans, alignment_key, apply_keeping_dtypes, arrival_counters, await_previous,
                                  capability, cdiv, check_float, check_fp8_device, check_same_device,
                                  ensure_scratch_allocator, float32_placeholder, fp8_rows_eager, gluon_runs,
                                  interpreting, launch, num_sms, pdl_options, planned, provided,
                                  quantize_rows_reference, runs_kernel, shared_memory_limit, store_split_output,
                                  torch_op)
from rooftop.roofline import Cost

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
FP8_DTYPES = (torch.float8_e4m3fn,)
OUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)

# Launch parameters, to be tuned on the H200.
GROUP_M = 8  # row-tiles that walk the columns together (L2 reuse of B)
# Candidates (BLOCK_M, BLOCK_N, bytes of K per stage and operand row, num_stages, num_warps,
# EPILOGUE_SUBTILE), likeliest first. BLOCK_K = k_bytes // itemsize: 128 bytes is one 128-byte
# swizzled row (BLOCK_K 64 for 16-bit inputs, 128 for fp8, 32 for fp32). EPILOGUE_SUBTILE stores the
# output tile in two halves (TMA kernel only): half the shared memory for staging, one more stage.
LARGE_M_CONFIGS = (  # M > 128: compute-bound
    (128, 256, 128, 3, 8, True), (128, 256, 128, 4, 8, True), (128, 256, 128, 3, 8, False),
    (128, 128, 128, 4, 8, False), (128, 128, 128, 4, 4, False), (128, 128, 256, 3, 8, False),
    (256, 128, 128, 3, 8, True), (64, 256, 128, 4, 4, True), (64, 128, 128, 4, 4, False),
)
MEDIUM_M_CONFIGS = (  # 64 < M <= 128
    (128, 128, 128, 4, 8, False), (64, 256, 128, 4, 4, True), (64, 128, 128, 4, 4, False),
    (128, 256, 128, 3, 8, True), (64, 64, 256, 4, 4, False),
)
SMALL_M_CONFIGS = (  # M <= 64: memory-bound, the weight streams once; narrow tiles fill the SMs
    (64, 64, 256, 4, 4, False), (64, 128, 256, 3, 4, False), (64, 32, 256, 5, 4, False),
    (64, 64, 128, 6, 4, False),
)
TINY_M_CONFIGS = (  # M <= 32, grouped kernel (mma.sync; the TMA kernel's wgmma tiles are 64 rows)
    (16, 64, 256, 4, 4, False), (32, 64, 256, 4, 4, False), (16, 128, 256, 3, 4, False),
)
FMA_CONFIGS = (  # fp32 in IEEE precision: CUDA-core FMA, the accumulator and operands in registers
    (128, 128, 128, 3, 8, False), (64, 128, 128, 3, 4, False), (128, 64, 128, 3, 4, False),
    (64, 64, 128, 3, 4, False),
)
GROUPED_EXTRA = 2  # grouped candidates also timed where the TMA kernel can run
# matmul_fp8 at decode sizes (M <= FP8_GEMV_MAX_M, b = w.t() of a row-major [N, K] w, a row-major, no residual or
# activation): the split-K kernel `_fp8_gemv_kernel`. Candidates (BLOCK_N, bytes of K a step, num_stages, num_warps),
# each with K split so that the programs make about FP8_GEMV_PROGRAMS_PER_SM a wave (a split keeps at least
# FP8_GEMV_MIN_STEPS k-steps, at most FP8_GEMV_MAX_SPLIT splits). Chosen offline; not yet timed on a GPU.
FP8_GEMV_MAX_M = 16
FP8_GEMV_CONFIGS = ((64, 256, 4, 4), (128, 256, 3, 4), (64, 128, 6, 4), (128, 128, 4, 4))
FP8_GEMV_PROGRAMS_PER_SM = (2, 4)
FP8_GEMV_MIN_STEPS = 2
FP8_GEMV_MAX_SPLIT = 32
FP8_GEMV_SUM_REGS = 32  # fp32 a thread of a tile's last split holds while it sums the partials
MIN_WAVE_EFFICIENCY = 0.8  # untuned default: the first candidate whose tiles fill the SMs this well
SMEM_RESERVE = 2048  # bytes of shared memory kept for barriers and small layout changes
# Tiles whose accumulator takes this many fp32 registers a thread (half of what a thread may hold) are
# no candidates for the epilogues with which they spill in the sm_90 compile check (integers specialised
# as Triton does) or sit at 255 registers, a change away from spilling: an erf GELU or a residual over
# the whole tile (the grouped kernel; the TMA kernel without EPILOGUE_SUBTILE), and a residual read
# through per-element pointers (not TMA) even over half a tile.
SPILL_ACC_REGS = 128
# The interpreter: small tiles so that tests cross tile edges; the TMA kernel stores in halves.
INTERPRETER_CONFIG = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_M=2, num_stages=2, num_warps=4)
INTERPRETER_SUBTILE = True
INTERPRETER_GEMV = dict(BLOCK_N=32, BLOCK_K=32, num_stages=2, num_warps=4)  # K in two splits
# The Gluon kernel (ops/matmul_sm90.py) takes part from this M on: its tiles are 128 rows, and it was
# measured at M >= 512 (the module docstring); below, the Triton tables' narrower tiles fill the SMs.
GLUON_MIN_M = 129
# Set False to keep sm_90 on the Triton kernels (tests, comparisons).
GLUON_ENABLED = True
# The kernels (a configuration's KERNEL: "grouped", "tma", "gluon", "gemv") launched as programmatic dependents on
# sm_90 (_support.pdl_options; read when a call is planned): in a chain of GEMMs the next kernel's programs would take
# the SMs as this one's end, its launch hidden. Not the GEMM kernels: H200, bf16, M = 512 x the Llama-3 shapes, graph
# replay of a chain over input copies, four A/B rounds (logs/h200-2026-12-04-s50/call-d, exp_gemm_pdl.py): medians
# level or 1-4% slower with it (512 x 8192 x 28672 362.9-450.9 against 347.7-366.3 us), where W4A16's Gluon kernels
# gained 1 us a call (quant_matmul.PDL_PATHS). Why (call g, nvidia-smi over 4 s of the chain): the GEMMs draw the
# card's 700 W either way, and without the idle gaps between kernels the SM clock drops ~4.5% (512 x 28672 x 4096: 1310
# against 1370 MHz, 204.5 against 199.1 us a call; journal items 337, 339). The fp8 split-K kernel of decode sizes
# does: as quant_matmul's GEMVs (memory-bound, 0.7-1.3 us a call gained in a chain; not yet timed for this one).
PDL_KERNELS = frozenset({"gemv"})

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of output tile `tile_id`: GROUP_M row-tiles walk the columns together, so the
    B tiles they share are still in L2."""
    tiles_per_group = GROUP_M * num_pid_n
    first_m = (tile_id // tiles_per_group) * GROUP_M
    group_rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + tile_id % group_rows, (tile_id % tiles_per_group) // group_rows


@triton.jit
def _epilogue(acc, rows, cols, M, N, bias_ptr, bias_stride, res_ptr, res_stride_m, res_stride_n,
              a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES: tl.constexpr,
              HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
              APPROX: tl.constexpr):
    """The fp32 accumulator tile (rows x cols) -> scales, + bias, activation, + residual, in fp32. The activations
    are activations.py's (its `_activate`: one exp2 and one reciprocal an element, the reciprocal rcp.approx where
    APPROX (on a GPU); the erf GELU by its minimax polynomial): tl.sigmoid's exact division had made SiLU ~26 SASS
    instructions an element."""
    row_ok = rows < M
    col_ok = cols < N
    rows = rows.to(tl.int64)
    cols = cols.to(tl.int64)
    if HAS_SCALES:
        a_scale = tl.load(a_scale_ptr + rows * a_scale_stride, mask=row_ok, other=0.0)
        b_scale = tl.load(b_scale_ptr + cols * b_scale_stride, mask=col_ok, other=0.0)
        acc = acc * a_scale[:, None] * b_scale[None, :]
    if HAS_BIAS:
        acc += tl.load(bias_ptr + cols * bias_stride, mask=col_ok, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif ACTIVATION is not None:
        acc = _activate_fp32(acc, ACTIVATION, APPROX, False)
    if HAS_RESIDUAL:
        res = tl.load(res_ptr + rows[:, None] * res_stride_m + cols[None, :] * res_stride_n,
                      mask=row_ok[:, None] & col_ok[None, :], other=0.0)
        acc += res.to(tl.float32)
    return acc


@triton.jit
def _matmul_grouped_kernel(a_ptr, b_ptr, out_ptr, bias_ptr, res_ptr, a_scale_ptr, b_scale_ptr, M, N, K,
                           stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                           stride_rb, stride_rm, stride_rn, bias_stride, a_scale_stride, b_scale_stride,
                           HAS_SCALES: tl.constexpr, HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr,
                           HAS_RESIDUAL: tl.constexpr, APPROX: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                           PDL: tl.constexpr):
    # One program per output tile (batch-major). Reads a row-panel of A and a column-panel of B
    # (other programs of the group hit the same panels in L2: DRAM sees A and B about once), the
    # bias/residual tile once, writes the output tile once. PDL: see PDL_KERNELS.
    await_previous(PDL)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    tiles = num_pid_m * num_pid_n
    batch = (tl.program_id(0) // tiles).to(tl.int64)
    pid_m, pid_n = _tile_coords(tl.program_id(0) % tiles, num_pid_m, num_pid_n, GROUP_M)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = (a_ptr + batch * stride_ab + rows.to(tl.int64)[:, None] * stride_am
              + ks.to(tl.int64)[None, :] * stride_ak)
    b_ptrs = (b_ptr + batch * stride_bb + ks.to(tl.int64)[:, None] * stride_bk
              + cols.to(tl.int64)[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < K - k) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = _epilogue(acc, rows, cols, M, N, bias_ptr, bias_stride, res_ptr + batch * stride_rb, stride_rm,
                    stride_rn, a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES, HAS_BIAS,
                    ACTIVATION, HAS_RESIDUAL, APPROX)
    out_ptrs = out_ptr + (batch * M + rows.to(tl.int64))[:, None] * N + cols[None, :]
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def _fp8_gemv_kernel(a_ptr, w_ptr, out_ptr, bias_ptr, a_scale_ptr, b_scale_ptr, ws_ptr, cnt_ptr, M, N, K, k_split,
                     stride_am, stride_wn, a_scale_stride, b_scale_stride, HAS_BIAS: tl.constexpr,
                     SPLIT_K: tl.constexpr, EVEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, SUM_BATCH: tl.constexpr, PDL: tl.constexpr):
    # Program (n-tile, split): out[m, n] = a_scale[m] b_scale[n] sum_k a[m, k] w[n, k] (+ bias[n]) over the split's
    # k-range, M <= BLOCK_M. Swap-AB: the weight's rows are the MMA's M side (wgmma from 64), a's rows its N side, both
    # operands K-major as Hopper's fp8 MMA reads them. Reads its BLOCK_N x k_split bytes of w once (the whole weight
    # once over the grid: the decode step's traffic) and a's rows (from L2); writes the output tile once, or with
    # SPLIT_K > 1 fp32 partials (8 bytes an output a split) that the tile's last split sums in k order.
    await_previous(PDL)
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    rows = tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    k_start = split * k_split
    k_end = tl.minimum(k_start + k_split, K)
    w_ptrs = w_ptr + cols.to(tl.int64)[:, None] * stride_wn + (k_start + ks)[None, :]
    a_ptrs = a_ptr + rows[:, None] * stride_am + (k_start + ks)[None, :]
    acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    for k in tl.range(k_start, k_end, BLOCK_K):
        if EVEN:  # N and K whole tiles, k_split whole steps: the weight's loads unmasked
            w = tl.load(w_ptrs, eviction_policy="evict_first")
            a = tl.load(a_ptrs, mask=rows[:, None] < M, other=0.0)
        else:
            w = tl.load(w_ptrs, mask=(cols[:, None] < N) & (ks[None, :] < k_end - k), other=0.0,
                        eviction_policy="evict_first")
            a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_end - k), other=0.0)
        acc = tl.dot(w, tl.trans(a), acc)
        w_ptrs += BLOCK_K
        a_ptrs += BLOCK_K
    # the scales are linear: each split's partial is scaled (bias added once, by the tile's last split)
    acc = _epilogue(tl.trans(acc), rows, cols, M, N, bias_ptr, 0, bias_ptr, 0, 0, a_scale_ptr, a_scale_stride,
                    b_scale_ptr, b_scale_stride, True, False, None, False, False)
    store_split_output(acc, rows, cols, M, N, bias_ptr, out_ptr, N, ws_ptr, cnt_ptr, pid_n, split, SPLIT_K, HAS_BIAS,
                       SUM_BATCH)


@triton.jit
def _operand_descriptor(ptr, rows, K, stride, K_MAJOR: tl.constexpr, BLOCK_ROWS: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    """TMA descriptor of an operand with `rows` rows (M of a, N of b) and K columns: [rows, K] when K is
    the unit-stride dim (K-major), else [K, rows]."""
    # one return: the two branches' descriptors differ in type, which a return in each branch may not
    if K_MAJOR:
        desc = tl.make_tensor_descriptor(ptr, shape=[rows, K], strides=[stride, 1], block_shape=[BLOCK_ROWS, BLOCK_K])
    else:
        desc = tl.make_tensor_descriptor(ptr, shape=[K, rows], strides=[stride, 1], block_shape=[BLOCK_K, BLOCK_ROWS])
    return desc


@triton.jit
def _finish_tile(acc, off_m, off_n, M, N, out_desc, res_desc, bias_ptr, bias_stride, res_ptr, stride_rm, stride_rn,
                 a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES: tl.constexpr,
                 HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                 RESIDUAL_TMA: tl.constexpr, APPROX: tl.constexpr):
    """The TMA kernel's epilogue of the accumulator (sub)tile at (off_m, off_n), stored by TMA. With
    RESIDUAL_TMA the residual tile comes in by TMA too (no per-element 64-bit pointers in registers)."""
    rows = off_m + tl.arange(0, acc.shape[0])
    cols = off_n + tl.arange(0, acc.shape[1])
    out = _epilogue(acc, rows, cols, M, N, bias_ptr, bias_stride, res_ptr, stride_rm, stride_rn, a_scale_ptr,
                    a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES, HAS_BIAS, ACTIVATION,
                    HAS_RESIDUAL and not RESIDUAL_TMA, APPROX)
    if RESIDUAL_TMA:
        out += res_desc.load([off_m, off_n]).to(tl.float32)
    out_desc.store([off_m, off_n], out.to(out_desc.dtype))


@triton.jit
def _matmul_tma_kernel(a_ptr, b_ptr, out_ptr, bias_ptr, res_ptr, a_scale_ptr, b_scale_ptr, M, N, K,
                       stride_a, stride_b, stride_rm, stride_rn, bias_stride, a_scale_stride, b_scale_stride,
                       A_K_MAJOR: tl.constexpr, B_K_MAJOR: tl.constexpr, HAS_SCALES: tl.constexpr,
                       HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                       APPROX: tl.constexpr, INPUT_PRECISION: tl.constexpr, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                       EPILOGUE_SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr, RESIDUAL_TMA: tl.constexpr,
                       PDL: tl.constexpr):
    # Persistent: program p computes tiles p, p + NUM_SMS, ... TMA brings A and B tiles into shared
    # memory (num_stages deep, zero-filled past the edges); A and B are read about once from DRAM
    # (GROUP_M order keeps the shared panels in L2), the output tile is written once by TMA after the
    # fused epilogue (bias and residual tiles read once). PDL: see PDL_KERNELS.
    await_previous(PDL)
    a_desc = _operand_descriptor(a_ptr, M, K, stride_a, A_K_MAJOR, BLOCK_M, BLOCK_K)
    b_desc = _operand_descriptor(b_ptr, N, K, stride_b, B_K_MAJOR, BLOCK_N, BLOCK_K)
    EPILOGUE_N: tl.constexpr = BLOCK_N // 2 if EPILOGUE_SUBTILE else BLOCK_N
    out_desc = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, EPILOGUE_N])
    res_desc = out_desc  # unused without RESIDUAL_TMA
    if RESIDUAL_TMA:
        res_desc = tl.make_tensor_descriptor(res_ptr, shape=[M, N], strides=[stride_rm, 1],
                                             block_shape=[BLOCK_M, EPILOGUE_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # the epilogue keeps its own tile counter so that the flattened loop's prologue and epilogue
    # do not share a value (as Triton's persistent-matmul tutorial does). Not warp-specialised: Triton
    # 3.6 builds no warp-specialized partitions for this loop on sm_90 (checked in its TTGIR).
    tile_id_c = tl.program_id(0) - NUM_SMS
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            if A_K_MAJOR:
                a = a_desc.load([off_m, off_k])
            else:
                a = a_desc.load([off_k, off_m]).T
            if B_K_MAJOR:
                b = b_desc.load([off_n, off_k]).T
            else:
                b = b_desc.load([off_k, off_n])
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)

        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            _finish_tile(acc0, off_m, off_n, M, N, out_desc, res_desc, bias_ptr, bias_stride, res_ptr, stride_rm,
                         stride_rn, a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES, HAS_BIAS,
                         ACTIVATION, HAS_RESIDUAL, RESIDUAL_TMA, APPROX)
            _finish_tile(acc1, off_m, off_n + BLOCK_N // 2, M, N, out_desc, res_desc, bias_ptr, bias_stride,
                         res_ptr, stride_rm, stride_rn, a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride,
                         HAS_SCALES, HAS_BIAS, ACTIVATION, HAS_RESIDUAL, RESIDUAL_TMA, APPROX)
        else:
            _finish_tile(acc, off_m, off_n, M, N, out_desc, res_desc, bias_ptr, bias_stride, res_ptr, stride_rm,
                         stride_rn, a_scale_ptr, a_scale_stride, b_scale_ptr, b_scale_stride, HAS_SCALES, HAS_BIAS,
                         ACTIVATION, HAS_RESIDUAL, RESIDUAL_TMA, APPROX)


# ---------------------------------------------------------------------------------------------
# Launch: which kernel, which configuration


@functools.lru_cache(maxsize=None)
def _device_limits(device_index: int) -> tuple[int, int, int]:
    """(SMs, shared memory a program may use in bytes, compute capability major); the interpreter is -1."""
    if device_index < 0:
        return num_sms(-1), 1 << 30, 9
    return num_sms(device_index), shared_memory_limit(device_index), capability(device_index)[0]


def _tma_layout(t: torch.Tensor) -> Optional[tuple[bool, int]]:
    """For a 2-D view TMA can address: (its last dim is the contiguous one, the other dim's stride);
    None when it cannot (no unit stride, a stride not a multiple of 16 bytes, unaligned base)."""
    if t.data_ptr() % 16:
        return None
    rows, cols = t.shape
    (s0, s1), align = t.stride(), 16 // t.element_size()
    if s1 == 1 and s0 % align == 0 and s0 >= cols:
        return True, s0
    if s0 == 1 and s1 % align == 0 and s1 >= rows:
        return False, s1
    return None


def _input_precision(dtype: torch.dtype) -> str:
    """fp32 follows torch: IEEE under "highest" precision (the default), TF32 otherwise."""
    if dtype == torch.float32 and torch.get_float32_matmul_precision() == "highest":
        return "ieee"
    return "tf32"  # the tensor-core default; 16-bit and fp8 inputs ignore it


def _use_tma(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> Optional[tuple[bool, bool, int, int]]:
    """(A_K_MAJOR, B_K_MAJOR, stride_a, stride_b) when the TMA kernel can run this 2-D problem, else None."""
    if not interpreting() and _device_limits(a.device.index)[2] < 9:
        return None
    if a.shape[1] == 0 or (out.shape[1] * out.element_size()) % 16 or out.data_ptr() % 16:
        return None
    if _input_precision(a.dtype) == "ieee":  # FMA, not tensor cores: the grouped kernel's registers suit it
        return None
    a_layout, b_layout = _tma_layout(a), _tma_layout(b)
    if a_layout is None or b_layout is None:
        return None
    (a_k_major, stride_a), (b_n_major, stride_b) = a_layout, b_layout
    if a.dtype in FP8_DTYPES and not (a_k_major and not b_n_major):
        return None  # fp8 wgmma reads both operands K-major
    return a_k_major, not b_n_major, stride_a, stride_b


def _use_gluon(a: torch.Tensor, out: torch.Tensor, residual: Optional[torch.Tensor], activation: Optional[str],
               tma: Optional[tuple[bool, bool, int, int]], residual_tma: bool) -> bool:
    """Whether the Gluon kernel (matmul_sm90) is a candidate for this 2-D problem that the TMA kernel
    can run (`tma`): an sm_90 GPU (Gluon has no interpreter), 16-bit a K-major (b either way round),
    M from GLUON_MIN_M, a residual, if any, that TMA reads into the output's staging buffer (row-major,
    `residual_tma`, and of the output's dtype), and no erf GELU: with it every variant spills in the
    sm_90 compile check (56-408 bytes; its whole-tile accumulators take 128 registers a thread)."""
    return (GLUON_ENABLED and tma is not None and tma[0] and a.is_cuda and not interpreting()
            and a.dtype in (torch.float16, torch.bfloat16) and a.shape[0] >= GLUON_MIN_M and activation != "gelu"
            and (residual is None or (residual_tma and residual.dtype == out.dtype)) and gluon_runs(a.device.index))


def _wave_efficiency(tiles: int, sms: int) -> float:
    return tiles / (cdiv(tiles, sms) * sms)


@functools.lru_cache(maxsize=4096)
def _configs(tma: bool, gluon: bool, fma: bool, M: int, N: int, batch: int, itemsize: int, out_itemsize: int,
             res_itemsize: int, residual_tma: bool, activation: Optional[str],
             device_index: int) -> tuple[dict, ...]:
    """The pruned launch configurations (KERNEL "gluon", "tma" or "grouped"), the untuned default first.
    With `tma` the TMA kernel's candidates come first, then GROUPED_EXTRA grouped ones for the tuner;
    with `gluon` the Gluon kernel's variants that fit the shared memory come right after the default (a
    Triton one: the Gluon kernel runs only where the tuner timed it). res_itemsize: 0 without a residual;
    residual_tma: the TMA kernel reads it by TMA."""
    if device_index < 0:
        if tma:
            return (dict(KERNEL="tma", **INTERPRETER_CONFIG, EPILOGUE_SUBTILE=INTERPRETER_SUBTILE),)
        return (dict(KERNEL="grouped", **INTERPRETER_CONFIG),)
    sms, smem, _ = _device_limits(device_index)
    table = FMA_CONFIGS if fma else LARGE_M_CONFIGS if M > 128 else MEDIUM_M_CONFIGS if M > 64 else SMALL_M_CONFIGS
    candidates = []
    for kernel in ("tma", "grouped") if tma else ("grouped",):
        rows = (TINY_M_CONFIGS + table) if kernel == "grouped" and M <= 32 else table
        found = []
        for block_m, block_n, k_bytes, stages, warps, subtile in rows:
            block_n = min(block_n, max(32, _autotune.bucket(N)))  # no tile much wider than N
            block_k = k_bytes // itemsize
            if block_m * block_n >= SPILL_ACC_REGS * 32 * warps:
                whole_tile = kernel == "grouped" or not subtile
                pointer_residual = res_itemsize and not (kernel == "tma" and residual_tma)
                if pointer_residual or (whole_tile and (res_itemsize or activation == "gelu")):
                    continue
            need = stages * (block_m + block_n) * block_k * itemsize
            if kernel == "tma":  # the output tile staged for the TMA store, the residual tile's layout change
                need += block_m * block_n // (2 if subtile else 1) * (out_itemsize + res_itemsize)
            if need > smem - SMEM_RESERVE:
                continue
            config = dict(KERNEL=kernel, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=GROUP_M,
                          num_stages=stages, num_warps=warps)
            if kernel == "tma":
                config.update(EPILOGUE_SUBTILE=subtile)
            if config not in found:
                found.append(config)
        candidates += found if kernel == "tma" or not tma else found[:GROUPED_EXTRA]
    efficiency = [_wave_efficiency(batch * cdiv(M, c["BLOCK_M"]) * cdiv(N, c["BLOCK_N"]), sms) for c in candidates]
    first = next((i for i, e in enumerate(efficiency) if e >= MIN_WAVE_EFFICIENCY and
                  candidates[i]["KERNEL"] == candidates[0]["KERNEL"]), 0)
    gluon_candidates = [v.config() for v in matmul_sm90.VARIANTS
                        if gluon and v.smem_bytes(itemsize, out_itemsize) <= smem - SMEM_RESERVE
                        and matmul_sm90.timed(v, batch * M, N, sms)]
    return (candidates[first], *gluon_candidates, *candidates[:first], *candidates[first + 1:])


def _fp8_gemv_applies(a, b, bias, residual, activation, a_scale) -> bool:
    """Whether the split-K fp8 kernel can take the call: matmul_fp8 at M <= FP8_GEMV_MAX_M, K > 0, a row-major, b =
    w.t() of a row-major w (both K-major; K, the row strides and addresses multiples of 16 bytes), no residual or
    activation, a bias (if any) contiguous. Else the loads go byte by byte: offline sm_90, every candidate at 255
    registers, three of four spilling 768-3008 bytes (journal item 411); such calls (no model's K) take the GEMM
    kernels."""
    return (a_scale is not None and a.dim() == 2 == b.dim() and a.shape[0] <= FP8_GEMV_MAX_M and a.shape[1] > 0
            and a.stride(1) == 1 and b.stride(0) == 1 and residual is None and activation is None
            and (bias is None or bias.stride(0) == 1)
            and all(v % 16 == 0 for v in (a.shape[1], a.stride(0), b.stride(1), a.data_ptr(), b.data_ptr())))


def _fp8_gemv_configs(device_index: int) -> tuple[dict, ...]:
    """The split-K fp8 kernel's candidates that fit the shared memory (the interpreter: one, K in two splits)."""
    if device_index < 0:
        return (dict(KERNEL="gemv", **INTERPRETER_GEMV, PROGRAMS_PER_SM=0),)
    smem = _device_limits(device_index)[1]
    return tuple(dict(KERNEL="gemv", BLOCK_N=block_n, BLOCK_K=block_k, PROGRAMS_PER_SM=per_sm, num_stages=stages,
                      num_warps=warps)
                 for block_n, block_k, stages, warps in FP8_GEMV_CONFIGS
                 if stages * (block_n + 16) * block_k <= smem - SMEM_RESERVE for per_sm in FP8_GEMV_PROGRAMS_PER_SM)


def _fp8_gemv_split(config: dict, N: int, K: int, sms: int) -> tuple[int, int]:
    """(splits, k_split) of K for a candidate: enough programs for PROGRAMS_PER_SM a wave, each split at least
    FP8_GEMV_MIN_STEPS k-steps (0 a wave: two splits, the interpreter's), k_split whole steps."""
    steps = cdiv(K, config["BLOCK_K"])
    if config["PROGRAMS_PER_SM"]:
        wanted = cdiv(config["PROGRAMS_PER_SM"] * sms, cdiv(N, config["BLOCK_N"]))
        splits = max(1, min(wanted, steps // FP8_GEMV_MIN_STEPS, FP8_GEMV_MAX_SPLIT))
    else:
        splits = min(2, steps)
    k_split = cdiv(steps, splits) * config["BLOCK_K"]
    return cdiv(K, k_split), k_split


def _fold(t: torch.Tensor) -> Optional[torch.Tensor]:
    """[batch, rows, cols] -> [batch * rows, cols] without a copy, or None when the strides forbid it."""
    try:
        return t.view(-1, t.shape[-1])
    except RuntimeError:
        return None


# A call's plan (rooftop.ops._support.Plans) launches the kernel, configuration and grid that the first
# call with its key chose, with the same integer arguments; only the tensors' addresses are new.
_plans = Plans()


def _plan_key(a, b, out, bias, residual, activation, a_scale, b_scale) -> tuple:
    """What a call's launch depends on besides the tensors' addresses: shapes, strides and dtypes (they
    fix every integer argument, the kernel and its configuration), the fp32 precision, the device,
    GLUON_ENABLED, and each tensor's 16-byte alignment. out is fresh and contiguous: its shape and
    strides follow from a's and b's shapes."""
    return (a.shape, a.stride(), b.shape, b.stride(), a.dtype, out.dtype, activation, a.get_device(), GLUON_ENABLED,
            torch.get_float32_matmul_precision() if a.dtype == torch.float32 else None,
            None if bias is None else (bias.dtype, bias.stride()),
            None if residual is None else (residual.dtype, residual.stride()),
            None if a_scale is None else (a_scale.shape, a_scale.stride(), b_scale.shape, b_scale.stride()),
            alignment_key(a, b, out, bias, residual, a_scale, b_scale))


def _gemm_tensors(a, b, out, bias, residual, a_scale, b_scale) -> tuple:
    """The GEMM kernels' tensor arguments: absent epilogue tensors are passed as out, never read; a 3-D a, residual
    or out has the address of the 2-D view the first call folded it into."""
    return (a, b, out, out if bias is None else bias, out if residual is None else residual,
            out if a_scale is None else a_scale, out if b_scale is None else b_scale)


def _plan(launched: Optional[Launch], kernel, grid: tuple[int, ...], scalars: tuple, constexprs: dict,
          tensors: Callable = _gemm_tensors) -> Callable:
    """plan(a, b, out, bias, residual, a_scale, b_scale) launches `kernel` on `grid` with `tensors`' arguments of the
    call and the integer arguments `scalars`: the compiled kernel directly on CUDA (`launched`, the first call's
    Launch), _support.launch in the interpreter (which a recording call sees, as it sees Launch.run). A launch that
    needs scratch memory (the TMA kernel's descriptors) gets it from _support.ensure_scratch_allocator, in
    Launch.start."""
    start = (functools.partial(launched.run, grid) if launched
             else functools.partial(_support.launch, kernel, grid, **constexprs))

    def plan(a, b, out, bias, residual, a_scale, b_scale) -> None:
        start(*tensors(a, b, out, bias, residual, a_scale, b_scale), *scalars)

    return plan


def _gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor],
          residual: Optional[torch.Tensor], activation: Optional[str], a_scale: Optional[torch.Tensor] = None,
          b_scale: Optional[torch.Tensor] = None) -> None:
    """out <- epilogue(a @ b): out a fresh contiguous [.., M, N], a/b/residual of any strides. A call
    with a known plan key only launches; the first one chooses, compiles and makes the plan."""
    key = _plan_key(a, b, out, bias, residual, activation, a_scale, b_scale)
    plan = _plans.get(key)
    if plan is not None:
        plan(a, b, out, bias, residual, a_scale, b_scale)
        return
    plan = _first_gemm(a, b, out, bias, residual, activation, a_scale, b_scale)
    if plan is not None:
        _plans.keep(key, plan)


def _fp8_gemv_run(config: dict, a, b, out, bias, a_scale, b_scale, scale_strides: tuple[int, int], sms: int,
                  pdl: dict) -> Callable:
    """Launches the split-K fp8 kernel with `config`; returns the plan that launches calls like it (the fp32
    partials allocated anew each call, the stream's arrival counters)."""
    M, K = a.shape
    N = b.shape[1]
    splits, k_split = _fp8_gemv_split(config, N, K, sms)
    grid = (cdiv(N, config["BLOCK_N"]), splits)
    params = {key: value for key, value in config.items() if key not in ("KERNEL", "PROGRAMS_PER_SM")}
    per_thread = FP8_GEMV_MAX_M * config["BLOCK_N"] // (32 * config["num_warps"])  # fp32 of the tile a thread holds
    constexprs = dict(params, HAS_BIAS=bias is not None, SPLIT_K=splits, BLOCK_M=FP8_GEMV_MAX_M, **pdl,
                      EVEN=N % config["BLOCK_N"] == 0 and K % config["BLOCK_K"] == 0,
                      SUM_BATCH=max(1, FP8_GEMV_SUM_REGS // per_thread))
    scalars = (M, N, K, k_split, a.stride(0), b.stride(1), *scale_strides)

    def tensors(a, b, out, bias, residual, a_scale, b_scale) -> tuple:
        partials = (torch.empty((splits, M, N), device=a.device, dtype=torch.float32) if splits > 1  # fp32: Triton
                    else provided(float32_placeholder(a.device),  # specialises on the pointer's dtype
                                  functools.partial(float32_placeholder, a.device)))
        return (a, b, out, out if bias is None else bias, a_scale, b_scale, partials,
                arrival_counters(a.device, grid[0]))

    launched = launch(_fp8_gemv_kernel, grid, *tensors(a, b, out, bias, None, a_scale, b_scale), *scalars,
                      **constexprs)
    return _plan(launched, _fp8_gemv_kernel, grid, scalars, constexprs, tensors)


def _first_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor],
                residual: Optional[torch.Tensor], activation: Optional[str], a_scale: Optional[torch.Tensor],
                b_scale: Optional[torch.Tensor]) -> Optional[Callable]:
    """_gemm's slow path: which kernel and configuration (tuned on CUDA), then the launch. Returns the
    call's plan, or None while the configuration is only the untuned default that a later call may tune."""
    if a.dim() == 3 and b.dim() == 2:  # fold the batch into M when the strides allow it
        a2, res2 = _fold(a), _fold(residual) if residual is not None else None
        if a2 is not None and (residual is None or res2 is not None):
            a, residual, out = a2, res2, out.view(-1, out.shape[-1])
    M, K = a.shape[-2:]
    N = b.shape[-1]
    batch = out.shape[0] if out.dim() == 3 else 1
    device_index = a.device.index if a.is_cuda else -1
    sms = _device_limits(device_index)[0]
    precision = _input_precision(a.dtype)
    tma = _use_tma(a, b, out) if out.dim() == 2 else None
    a_k_major, b_k_major, stride_a, stride_b = tma or (True, True, 0, 0)
    # the TMA kernel reads a row-major residual by TMA too (2-D here: the batch was folded)
    res_layout = _tma_layout(residual) if tma is not None and residual is not None else None
    residual_tma = res_layout is not None and res_layout[0]
    scale_strides = (0, 0)
    if a_scale is not None:  # one value: stride 0
        scale_strides = (a_scale.stride(0) if a_scale.numel() > 1 else 0,
                         b_scale.stride(-1) if b_scale.numel() > 1 else 0)
    res_strides = (residual.stride(-2), residual.stride(-1)) if residual is not None else (0, 0)
    epilogue_args = (*res_strides, bias.stride(0) if bias is not None else 0, *scale_strides)
    grouped_args = (a.stride(0) if a.dim() == 3 else 0, a.stride(-2), a.stride(-1),
                    b.stride(0) if b.dim() == 3 else 0, b.stride(-2), b.stride(-1),
                    residual.stride(0) if residual is not None and residual.dim() == 3 else 0)
    flags = dict(HAS_SCALES=a_scale is not None, HAS_BIAS=bias is not None, ACTIVATION=activation,
                 HAS_RESIDUAL=residual is not None, APPROX=a.is_cuda, INPUT_PRECISION=precision)
    if tma is not None and a.is_cuda:
        ensure_scratch_allocator()  # its descriptors are made on the device: the first launch's dispatch takes scratch
    gluon = _use_gluon(a, out, residual, activation, tma, residual_tma)
    gluon_plans: dict[matmul_sm90.Variant, matmul_sm90.WarpSpecializedPlan] = {}  # per variant: timing reruns it

    def run(config: dict) -> Callable:
        """Launches the call with `config`; returns the plan that launches calls like it."""
        pdl = pdl_options(a, config["KERNEL"] in PDL_KERNELS)
        if config["KERNEL"] == "gluon":
            variant = matmul_sm90.Variant.of(config)
            plan = gluon_plans.get(variant)
            if plan is None:
                plan = gluon_plans[variant] = matmul_sm90.WarpSpecializedPlan(variant, a, b, b_k_major, out, bias,
                                                                              residual, activation, sms, pdl)
            plan(a, b, out, bias, residual)
            return plan
        if config["KERNEL"] == "gemv":
            return _fp8_gemv_run(config, a, b, out, bias, a_scale, b_scale, scale_strides, sms, pdl)
        params = dict(config, **flags, **pdl)
        tiles = cdiv(M, params["BLOCK_M"]) * cdiv(N, params["BLOCK_N"])
        if params.pop("KERNEL") == "tma":
            kernel, grid = _matmul_tma_kernel, (min(sms, tiles),)
            scalars = (M, N, K, stride_a, stride_b, *epilogue_args)
            params.update(A_K_MAJOR=a_k_major, B_K_MAJOR=b_k_major, NUM_SMS=sms, RESIDUAL_TMA=residual_tma)
        else:
            kernel, grid = _matmul_grouped_kernel, (batch * tiles,)
            scalars = (M, N, K, *grouped_args, *epilogue_args)
        launched = launch(kernel, grid, *_gemm_tensors(a, b, out, bias, residual, a_scale, b_scale), *scalars,
                          **params)
        return _plan(launched, kernel, grid, scalars, params)

    configs = _configs(tma is not None, gluon, precision == "ieee", M, N, batch, a.element_size(), out.element_size(),
                       residual.element_size() if residual is not None else 0, residual_tma, activation, device_index)
    layout = ("tma", *tma[:2], residual_tma) if tma else ("grouped", a.stride(-1) == 1, b.stride(-2) == 1)
    if _fp8_gemv_applies(a, b, bias, residual, activation, a_scale):  # its candidates first: the default
        configs = (*_fp8_gemv_configs(device_index), *configs)
        layout += ("gemv",)
    if gluon:  # its candidates join the list: a choice of its own (other calls' keys stay as they were)
        layout += ("gluon",)
        # stream-K and the wave-fitting widths are timed for some shapes of a bucket only (matmul_sm90.timed):
        # those get a choice of their own
        if any(c.get("STREAM_K") for c in configs):
            layout += ("streamk",)
        layout += tuple(f"n{c['BLOCK_N']}" for c in configs
                        if c["KERNEL"] == "gluon" and matmul_sm90.Variant.of(c).wave_fit)
    key = (_autotune.bucket(M), _autotune.bucket(N), _autotune.bucket(K), _autotune.bucket(batch), a.dtype,
           out.dtype, *layout, *flags.values())
    device_name = _autotune.device_name(device_index)
    chosen = _autotune.choose("matmul", key, configs, run, device=device_name, tune=_autotune.may_tune(a))
    # the shared-memory estimate leaves out the epilogue's layout changes: an untuned choice that does
    # not fit falls through to the next candidate rather than failing the call
    for config in (chosen, *(c for c in configs if c is not chosen)):
        try:
            plan = run(config)
            break
        except triton.runtime.errors.OutOfResources as err:
            last = err
    else:
        raise last
    # the interpreter never tunes; on CUDA the untuned default (graph capture, ROOFTOP_AUTOTUNE=0) is
    # not final: a later call may tune
    if not a.is_cuda or _autotune.is_settled("matmul", key, device=device_name):
        return plan
    return None


# ---------------------------------------------------------------------------------------------
# Wrappers: checks, the custom ops


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _out_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    a_shape, b_shape = a.shape, b.shape
    if len(a_shape) == 3:
        return a_shape[0], a_shape[1], b_shape[-1]
    if len(b_shape) == 3:
        return b_shape[0], a_shape[0], b_shape[2]
    return a_shape[0], b_shape[1]


def _check_operands(a, b, dtypes) -> None:
    check_float("a", a, dtypes)
    check_float("b", b, dtypes)
    check_same_device("b", b, "a", a)
    if b.dtype != a.dtype:
        raise TypeError(f"b has dtype {_dtype_name(b.dtype)} but a has {_dtype_name(a.dtype)}")
    a_shape, b_shape = a.shape, b.shape
    if len(a_shape) not in (2, 3):
        raise ValueError(f"a must be [M, K] or [batch, M, K], got shape {tuple(a_shape)}")
    if len(b_shape) not in (2, 3):
        raise ValueError(f"b must be [K, N] or [batch, K, N], got shape {tuple(b_shape)}")
    if b_shape[-2] != a_shape[-1]:
        raise ValueError(f"b has {b_shape[-2]} rows but a has K = {a_shape[-1]} columns "
                         f"(a {tuple(a_shape)}, b {tuple(b_shape)})")
    if len(a_shape) == 3 == len(b_shape) and a_shape[0] != b_shape[0]:
        raise ValueError(f"b has batch {b_shape[0]} but a has batch {a_shape[0]}")


def _check_epilogue(a, b, bias, residual, out_dtype) -> None:
    N = b.shape[-1]
    if bias is not None:
        check_float("bias", bias)
        check_same_device("bias", bias, "a", a)
        if bias.shape != (N,):
            raise ValueError(f"bias must have shape ({N},) to match b's last dim, got {tuple(bias.shape)}")
    if residual is not None:
        check_float("residual", residual)
        check_same_device("residual", residual, "a", a)
        if residual.shape != _out_shape(a, b):
            raise ValueError(f"residual has shape {tuple(residual.shape)} but the output has {_out_shape(a, b)}")
    if out_dtype not in OUT_DTYPES:
        raise TypeError(f"out_dtype must be one of float16, bfloat16, float32, got {out_dtype!r}")


def _fake(a, b, *rest):
    """Both ops' meta implementation: the output's shape, out_dtype (the last argument)."""
    return a.new_empty(_out_shape(a, b), dtype=rest[-1])


@torch_op("matmul", fake=_fake)
def _matmul_op(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor], residual: Optional[torch.Tensor],
               activation: Optional[str], out_dtype: torch.dtype) -> torch.Tensor:
    if not runs_kernel(a):
        return matmul_reference(a, b, bias, activation, residual).to(out_dtype)
    out = a.new_empty(_out_shape(a, b), dtype=out_dtype)
    if out.numel():
        _gemm(a, b, out, bias, residual, activation)
    return out


@torch_op("matmul_fp8", fake=_fake)
def _matmul_fp8_op(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
                   bias: Optional[torch.Tensor], out_dtype: torch.dtype) -> torch.Tensor:
    if not runs_kernel(a):
        return matmul_fp8_reference(a, b, a_scale, b_scale, bias).to(out_dtype)
    check_fp8_device("a and b (matmul_fp8)", a.device)
    out = a.new_empty(_out_shape(a, b), dtype=out_dtype)
    if out.numel():
        _gemm(a, b, out, bias, None, None, a_scale, b_scale)
    return out


def matmul(a: torch.Tensor, b: torch.Tensor, bias: Optional[torch.Tensor] = None, activation: Optional[str] = None,
           residual: Optional[torch.Tensor] = None, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """a @ b (b is [K, N], as torch.matmul; a [M, K] or [batch, M, K], b [K, N] or [batch, K, N]), then
    in fp32: + bias [N], activation (None, "relu", "gelu", "gelu_tanh", "silu"), + residual (the
    output's shape), cast to out_dtype (default a's dtype). Any strides; one write of the output.
    float32 inputs multiply in IEEE fp32 or TF32 as torch.get_float32_matmul_precision() says."""
    _check_operands(a, b, (torch.float16, torch.bfloat16, torch.float32))
    if activation is not None and activation not in ACTIVATIONS:
        if not isinstance(activation, str):
            raise TypeError(f"activation must be None or a str, got {type(activation).__name__}")
        raise ValueError(f"activation must be None or one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    out_dtype = a.dtype if out_dtype is None else out_dtype
    _check_epilogue(a, b, bias, residual, out_dtype)
    return _matmul_op(a, b, bias, residual, activation, out_dtype)


def _check_scale(name: str, scale, shapes: tuple) -> None:
    check_float(name, scale, (torch.float32,))
    if scale.shape not in shapes:
        raise ValueError(f"{name} must have shape {' or '.join(map(str, shapes))} (or be one value), "
                         f"got {tuple(scale.shape)}")


def matmul_fp8(a: torch.Tensor, b: torch.Tensor, a_scale: torch.Tensor, b_scale: torch.Tensor,
               bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """(a @ b) * a_scale[:, None] * b_scale[None, :] (+ bias) for float8_e4m3fn a [M, K] and b [K, N];
    a_scale per row ([M] or [M, 1]), b_scale per column ([N] or [1, N]), or one value each, float32.
    Fastest with b = w.t() of a row-major [N, K] w (as torch._scaled_mm wants it)."""
    _check_operands(a, b, FP8_DTYPES)
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"matmul_fp8 takes 2-D a and b, got a {tuple(a.shape)} and b {tuple(b.shape)}")
    M, N = a.shape[0], b.shape[1]
    _check_scale("a_scale", a_scale, ((), (1,), (1, 1), (M,), (M, 1)))
    _check_scale("b_scale", b_scale, ((), (1,), (1, 1), (N,), (1, N)))
    check_same_device("a_scale", a_scale, "a", a)
    check_same_device("b_scale", b_scale, "a", a)
    _check_epilogue(a, b, bias, None, out_dtype)
    return _matmul_fp8_op(a, b, a_scale, b_scale, bias, out_dtype)


def quantize_fp8_weight(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """An nn.Linear weight [out, in] in float8_e4m3fn with a scale per output channel: scale = max|w_row| / 448,
    codes rounded to nearest (e4m3: 3 mantissa bits, a relative step of 2^-3 at most). (codes, scale fp32)."""
    codes, scale = fp8_rows_eager(w.detach())
    return codes, scale.reshape(-1)


@planned
def fp8_linear(x, weight: torch.Tensor, weight_scale: torch.Tensor, bias: Optional[torch.Tensor] = None,
               out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """x @ (weight * weight_scale[:, None]).T (+ bias), W8A8: x's rows quantized to fp8 per token (quantize_rows),
    then matmul_fp8 with both scales in its epilogue; x may be the (q, scale) pair a fused op quantized already
    (swiglu(..., quant="fp8"); rms_norm(..., quant="fp8")'s first two outputs). weight [N, K] float8_e4m3fn,
    weight_scale [N] fp32. Eager calls after the second of a signature replay the second's launches (`planned`:
    quantize_rows' and matmul_fp8's; the first chooses matmul_fp8's configuration, unrecorded)."""
    if isinstance(x, tuple) and len(x) != 2:
        raise TypeError(f"x must be a tensor or a (q, scale) pair, got a tuple of {len(x)}")
    q, scale = x if isinstance(x, tuple) else quantize_rows(x, "fp8")
    out = matmul_fp8(q.reshape(-1, q.shape[-1]), weight.t(), scale.reshape(-1, 1), weight_scale, bias, out_dtype)
    return out.reshape(*q.shape[:-1], weight.shape[0])


class Fp8Linear(torch.nn.Module):
    """Drop-in for nn.Linear with an fp8 weight (W8A8): float8_e4m3fn weight [out, in] with a scale per output
    channel (weight ~= weight_fp8 * weight_scale[:, None]), activations quantized per token: forward is fp8_linear
    (x's rows quantized by rooftop.quantize_rows, or a (q, scale) pair a fused op quantized taken as it comes, then
    matmul_fp8 with both scales and the bias in its epilogue). The output has out_dtype (the original weight's for
    from_linear)."""

    def __init__(self, weight: torch.Tensor, weight_scale: torch.Tensor, bias: Optional[torch.Tensor] = None,
                 out_dtype: torch.dtype = torch.bfloat16):
        super().__init__()
        if weight.dtype != torch.float8_e4m3fn or weight.dim() != 2:
            raise TypeError(f"weight must be a 2-D float8_e4m3fn tensor [out, in], got {weight.dtype} "
                            f"{tuple(weight.shape)}")
        if weight_scale.dtype != torch.float32 or weight_scale.shape != weight.shape[:1]:
            raise ValueError(f"weight_scale must be float32 of shape ({weight.shape[0]},), got {weight_scale.dtype} "
                             f"{tuple(weight_scale.shape)}")
        check_same_device("weight_scale", weight_scale, "weight", weight)
        if bias is not None:
            bias = bias.detach()  # a buffer, as the weight: the module is for inference
            check_float("bias", bias)
            check_same_device("bias", bias, "weight", weight)
            if bias.shape != weight.shape[:1]:
                raise ValueError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
        if out_dtype not in OUT_DTYPES:
            raise TypeError(f"out_dtype must be one of float16, bfloat16, float32, got {out_dtype!r}")
        self.out_features, self.in_features = weight.shape
        self.out_dtype = out_dtype
        self.register_buffer("weight", weight)
        self.register_buffer("weight_scale", weight_scale)
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear) -> "Fp8Linear":
        """The nn.Linear's weight quantized per output channel (quantize_fp8_weight)."""
        check_fp8_device("quantize_model(bits='fp8')", linear.weight.device)
        dtype = linear.weight.dtype
        return cls(*quantize_fp8_weight(linear.weight), linear.bias, dtype if dtype in OUT_DTYPES else torch.bfloat16)

    @classmethod
    def stacked(cls, *parts: "Fp8Linear") -> "Fp8Linear":
        """One Fp8Linear whose output is the parts' side by side (a fused gate and up; q, k and v): weights, scales
        and biases concatenated along out_features. Exact: the scales are per output channel."""
        if not parts or not all(isinstance(p, Fp8Linear) for p in parts):
            raise TypeError("parts must be one or more Fp8Linear modules")
        for name in ("in_features", "out_dtype"):
            if len({getattr(p, name) for p in parts}) > 1:
                raise ValueError(f"parts must share {name}")
        if len({None if p.bias is None else p.bias.dtype for p in parts}) > 1:
            raise ValueError("parts must all have a bias of one dtype or none")
        bias = None if parts[0].bias is None else torch.cat([p.bias for p in parts])
        return cls(torch.cat([p.weight for p in parts]), torch.cat([p.weight_scale for p in parts]), bias,
                   parts[0].out_dtype)

    def forward(self, x) -> torch.Tensor:
        return fp8_linear(x, self.weight, self.weight_scale, self.bias, self.out_dtype)

    def _apply(self, fn, recurse=True):
        """The codes and their scales keep their dtypes (apply_keeping_dtypes); the output dtype follows the cast."""
        probe = apply_keeping_dtypes(self, super()._apply, fn, recurse, ("weight", "weight_scale"), self.out_dtype)
        if probe.dtype in OUT_DTYPES:
            self.out_dtype = probe.dtype
        return self

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, fp8"


# ---------------------------------------------------------------------------------------------
# Reference, eager form, cost, cases, the roofline of LLM GEMMs


def _activate(x: torch.Tensor, activation: Optional[str]) -> torch.Tensor:
    if activation is None:
        return x
    if activation == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    return {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}[activation](x)


def matmul_reference(a, b, bias=None, activation=None, residual=None):
    """The same maths in float64."""
    out = torch.matmul(a.double(), b.double())
    if bias is not None:
        out = out + bias.double()
    out = _activate(out, activation)
    return out + residual.double() if residual is not None else out


def matmul_fp8_reference(a, b, a_scale, b_scale, bias=None):
    out = torch.matmul(a.double(), b.double()) * a_scale.double().reshape(-1, 1) * b_scale.double().reshape(1, -1)
    return out + bias.double() if bias is not None else out


def matmul_eager(a, b, bias=None, activation=None, residual=None):
    """As a model writes it: the matmul (cuBLAS), then each epilogue step as its own kernel."""
    out = torch.matmul(a, b)
    if bias is not None:
        out = out + bias
    out = _activate(out, activation)
    return out + residual if residual is not None else out


def matmul_fp8_eager(a, b, a_scale, b_scale, bias=None, out_dtype=torch.bfloat16):
    """Without fp8 kernels: dequantize to out_dtype, multiply, scale."""
    out = torch.matmul(a.to(out_dtype), b.to(out_dtype)) * (a_scale.reshape(-1, 1) * b_scale.reshape(1, -1))
    return out + bias if bias is not None else out


def gemm_cost(shape: tuple[int, ...], dtype: torch.dtype, *, in_itemsize: Optional[int] = None, bias: bool = False,
              residual: bool = False, scales: bool = False) -> Cost:
    """[M, N, K]: 2 M N K FLOPs; a, b, the output (and bias, residual, scales) moved once each."""
    M, N, K = shape
    size = dtype.itemsize
    moved = ((M * K + K * N) * (in_itemsize or size) + M * N * size + (N * size if bias else 0)
             + (M * N * size if residual else 0) + (4 * (M + N) if scales else 0))
    # fp8 operands (in_itemsize 1) run on the fp8 tensor cores: twice the bf16 roof
    return Cost(flops=2 * M * N * K, bytes=moved, compute_scale=2.0 if in_itemsize == 1 else 1.0)


# Weight shapes (N, K) of the GEMMs of one decoder layer (q/k/v fused, gate/up fused).
LLAMA_WEIGHTS = {
    "llama3-8b": {"qkv": (6144, 4096), "o": (4096, 4096), "gate_up": (28672, 4096), "down": (4096, 14336)},
    "llama3-70b": {"qkv": (10240, 8192), "o": (8192, 8192), "gate_up": (57344, 8192), "down": (8192, 28672)},
}
SQUARE_CASES = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192))
PREFILL_M = (512, 2048, 8192)


def _prefill(layers: tuple[tuple[str, str], ...], ms=PREFILL_M) -> tuple[tuple[int, int, int], ...]:
    return tuple((m, *LLAMA_WEIGHTS[model][layer]) for model, layer in layers for m in ms)


ALL_LAYERS = tuple((model, layer) for model in LLAMA_WEIGHTS for layer in LLAMA_WEIGHTS[model])


def gemm_roofline(ceilings, dtype: torch.dtype = torch.bfloat16,
                  ms: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)) -> list[dict]:
    """The roofline of the Llama-3 8B/70B GEMMs, token count M against each weight [K, N]: intensity,
    the ridge point of `ceilings` (hardware.Ceilings), which bound, the floor time and the attainable
    TFLOP/s. Decode (small M) streams the weights and is memory-bound; prefill is compute-bound past
    M of about the ridge point (intensity ~ M for M << N, K at 2 bytes an element)."""
    from rooftop.roofline import attainable_TFLOPs, ridge_point

    ridge = ridge_point(ceilings)
    rows = []
    for model, layer in ALL_LAYERS:
        N, K = LLAMA_WEIGHTS[model][layer]
        for M in ms:
            cost = gemm_cost((M, N, K), dtype)
            rows.append({"model": model, "layer": layer, "M": M, "N": N, "K": K, "flops": cost.flops,
                         "bytes": cost.bytes, "intensity": cost.intensity, "ridge": ridge,
                         "bound": cost.bound(ceilings), "floor_us": cost.floor_s(ceilings) * 1e6,
                         "attainable_TFLOPs": attainable_TFLOPs(cost.intensity, ceilings)})
    return rows


def _roofline_table(ceilings) -> list[dict]:
    """gemm_roofline's rows, trimmed for the report: the turn from memory- to compute-bound per layer."""
    keep = ("model", "layer", "M", "N", "K", "intensity", "bound", "attainable_TFLOPs")
    return [{k: r[k] for k in keep} for r in gemm_roofline(ceilings, ms=(1, 16, 64, 128, 256, 512, 2048, 8192))]


def _make_gemm(shape, dtype, device):
    """a [M, K] and b = w.t() of an nn.Linear weight w [N, K] (K-major, as models hold it)."""
    M, N, K = shape
    a = torch.randn(M, K, device=device, dtype=dtype)
    w = torch.randn(N, K, device=device, dtype=dtype) / math.sqrt(K)
    return a, w.t()


def _make_bias(shape, dtype, device):
    return (*_make_gemm(shape, dtype, device), torch.randn(shape[1], device=device, dtype=dtype))


def _make_residual(shape, dtype, device):
    return (*_make_gemm(shape, dtype, device), torch.randn(shape[0], shape[1], device=device, dtype=dtype))


def _make_fp8(shape, dtype, device):
    """fp8 a and b (K-major), per-row / per-column scales as a dynamic quantizer produces them."""
    M, N, K = shape
    a8, a_scale = quantize_fp8_weight(torch.randn(M, K, device=device))
    w8, b_scale = quantize_fp8_weight(torch.randn(N, K, device=device) / math.sqrt(K))
    return a8, w8.t(), a_scale, b_scale


def _scaled_mm():
    if not hasattr(torch, "_scaled_mm"):
        return None
    return lambda a, b, sa, sb: torch._scaled_mm(a, b, scale_a=sa.reshape(-1, 1), scale_b=sb.reshape(1, -1),
                                                 out_dtype=torch.bfloat16)


GEMM_CHECK_CASES = ((33, 65, 70), (1, 48, 64))  # odd sizes, a single row
registry.register(registry.OpSpec(
    name="matmul", family="matmul", make_inputs=_make_gemm, run=lambda a, b: matmul(a, b),
    reference=matmul_reference, eager=matmul_eager, cost=gemm_cost,
    cases=SQUARE_CASES + _prefill(ALL_LAYERS), peers={"cublas": lambda: torch.matmul}, x_key="M",
    check_cases=GEMM_CHECK_CASES))
registry.register(registry.OpSpec(
    name="matmul_bias_silu", family="matmul", make_inputs=_make_bias,
    run=lambda a, b, bias: matmul(a, b, bias, "silu"),
    reference=lambda a, b, bias: matmul_reference(a, b, bias, "silu"),
    eager=lambda a, b, bias: matmul_eager(a, b, bias, "silu"),
    cost=functools.partial(gemm_cost, bias=True),
    cases=SQUARE_CASES + _prefill((("llama3-8b", "gate_up"), ("llama3-70b", "gate_up"))),
    # cuBLASLt adds the bias in its epilogue (addmm); the SiLU is one more pass
    peers={"cublas": lambda: lambda a, b, bias: F.silu(torch.addmm(bias, a, b))}, x_key="M",
    check_cases=GEMM_CHECK_CASES))
registry.register(registry.OpSpec(
    name="matmul_residual", family="matmul", make_inputs=_make_residual,
    run=lambda a, b, res: matmul(a, b, residual=res),
    reference=lambda a, b, res: matmul_reference(a, b, residual=res),
    eager=lambda a, b, res: matmul_eager(a, b, residual=res),
    cost=functools.partial(gemm_cost, residual=True),
    cases=SQUARE_CASES + _prefill((("llama3-8b", "o"), ("llama3-8b", "down"), ("llama3-70b", "o"),
                                   ("llama3-70b", "down"))),
    # cuBLAS accumulates into C (addmm with beta = 1): the residual add fused on its side too
    peers={"cublas": lambda: lambda a, b, res: torch.addmm(res, a, b)}, x_key="M", check_cases=GEMM_CHECK_CASES))
registry.register(registry.OpSpec(
    name="matmul_fp8", family="matmul", make_inputs=_make_fp8,
    run=lambda a, b, sa, sb: matmul_fp8(a, b, sa, sb),
    reference=matmul_fp8_reference, eager=matmul_fp8_eager,
    cost=lambda shape, dtype: gemm_cost(shape, torch.bfloat16, in_itemsize=1, scales=True),  # bf16 out
    cases=SQUARE_CASES + _prefill((("llama3-8b", "gate_up"), ("llama3-8b", "down"), ("llama3-70b", "qkv"),
                                   ("llama3-70b", "down")), ms=(2048, 8192)),
    peers={"scaled_mm": _scaled_mm}, x_key="M", check_cases=GEMM_CHECK_CASES))
def _make_fp8_linear(shape, dtype, device):
    """x [M, K] in dtype, an nn.Linear weight [N, K] as quantize_fp8_weight keeps it, and the same weight in dtype
    (dequantized: what cuBLAS multiplies without fp8)."""
    M, N, K = shape
    codes, scale = quantize_fp8_weight(torch.randn(N, K, device=device) / math.sqrt(K))
    return torch.randn(M, K, device=device, dtype=dtype), codes, scale, (codes.float() * scale[:, None]).to(dtype)


def fp8_linear_reference(x, codes, scale, weight):
    """x quantized per token as the op does, times the fp8 weight, in float64."""
    q, x_scale = quantize_rows_reference(x.double(), "fp8")
    return (q.double() * x_scale) @ (codes.double() * scale.double()[:, None]).t()


def fp8_linear_eager(x, codes, scale, weight):
    """W8A8 without fp8 kernels: x quantized per token by PyTorch ops, both operands dequantized, multiplied."""
    q, x_scale = fp8_rows_eager(x)
    return matmul_fp8_eager(q, codes.t(), x_scale, scale, out_dtype=x.dtype)


def _scaled_mm_linear():
    if not hasattr(torch, "_scaled_mm"):
        return None

    def linear(x, codes, scale, weight):
        q, x_scale = fp8_rows_eager(x)
        return torch._scaled_mm(q, codes.t(), scale_a=x_scale, scale_b=scale.reshape(1, -1), out_dtype=x.dtype)
    return linear


registry.register(registry.OpSpec(
    name="fp8_linear", family="matmul", make_inputs=_make_fp8_linear,
    run=lambda x, codes, scale, weight: fp8_linear(x, codes, scale, out_dtype=x.dtype),
    reference=fp8_linear_reference, eager=fp8_linear_eager,
    # the minimum: x read in its dtype, the weight in fp8, the output written once; the quantized rows' round trip
    # (written and read again, 2 bytes an element of x) is this path's own cost above it
    cost=lambda shape, dtype: Cost(flops=2 * shape[0] * shape[1] * shape[2],
                                   bytes=shape[0] * shape[2] * dtype.itemsize + shape[1] * shape[2]
                                   + shape[0] * shape[1] * dtype.itemsize + 4 * shape[1], compute_scale=2.0),
    # decode (M 1, 16: the split-K kernel) and prefill
    cases=_prefill((("llama3-8b", "gate_up"), ("llama3-8b", "down"), ("llama3-70b", "qkv")), ms=(1, 16, *PREFILL_M)),
    peers={"cublas": lambda: lambda x, codes, scale, weight: F.linear(x, weight), "scaled_mm": _scaled_mm_linear},
    x_key="M", check_cases=GEMM_CHECK_CASES))
registry.register_table(registry.FamilyTable(
    family="matmul", title="GEMM on the roofline: Llama-3 8B/70B weight shapes against the token count M "
    "(a model: intensity, bound and attainable TFLOP/s on the measured ceilings)", make=_roofline_table,
    needs_gpu=False))
