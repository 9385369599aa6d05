r"""Weight-only quantized matmul for decoding: W4A16 and W8A16 (int4 / int8 weights, fp16 / bf16 activations).

Quantization (per output column n, per group of G = group_size consecutive k; W is nn.Linear's [N, K]):

    asymmetric:  s = (max(w, 0) - min(w, 0)) / (2^bits - 1),   z = round(-min(w, 0) / s)
    symmetric:   s = max|w| / (2^(bits-1) - 1),                  z = 2^(bits-1)  (not stored)
    code c = clamp(round(w / s) + z, 0, 2^bits - 1);            dequantized w = s * (c - z)

s is rounded to the scale dtype (w's dtype, bfloat16 for float32 weights) before the codes are
taken, so that weights on the grid (w = s * (c - z) with codes 0 and 2^bits - 1 in every group)
quantize back to exactly (c, s, z). s * (c - z) is exact in float32; `dequantize()` returns it.

Storage (`QuantizedWeight`), K-major so that a program reading a block of columns streams 16-byte
words along N and every group's scales are one contiguous row:
    packed  int32 [K / P, N], P = 32 / bits codes a word: word (j, n) holds column n's codes for
            k = P*j .. P*j + P - 1; code i (k = P*j + i) sits in bits [bits*i, bits*(i+1)), the
            least significant first (int4: nibble 0 = k = 8j, nibble 7 = k = 8j + 7; int8: byte i).
            Codes are unsigned: 0..15 or 0..255 (symmetric: the signed value plus 2^(bits-1)).
    scales  [K / G, N] in the scale dtype;  zeros  uint8 [K / G, N] (asymmetric) or None (symmetric).
Bits per weight: bits + (16 + 8 * asymmetric) / G  (int4, G = 128, asymmetric: 4.1875).

quant_matmul(x, qw, bias) = x @ dequantize(qw).T + bias, fp32 accumulation, output in x's dtype.
Which path runs: the fastest, measured. The first call per (device, M bucket, N, K, format) times a
short candidate list of paths and launch parameters for its regime of M (`candidates`) and remembers
the choice on disk (rooftop.ops._autotune); untimed (interpreter, CUDA-graph capture, torch.compile
tracing, ROOFTOP_AUTOTUNE=0) the first candidate runs: the GEMV for M <= GEMV_MAX_M, the tensor-core
kernel up to DOT_MAX_M, dequantize + cuBLAS above (never the Gluon kernel below: it runs only where the tuner
timed it). The paths:
- "gemv", `_qgemv_kernel` on the CUDA cores (M <= GEMV_TRY_M). A program owns BLOCK_N columns and a
  range of k-steps (split-K; at M = 1 optionally cut again into SLICES runs of whole groups, one a row of the
  program's tiles, summed in shared memory; X_ASM: a slice a warp, x loaded by each thread of it with inline PTX
  where Triton would broadcast it through shared memory with a barrier of the whole program; UNROLL: a slice's group
  of k-steps unrolled, its loads issued ahead by ptxas); each thread holds every word row of its columns, so all sums
  over k stay in the thread. A code becomes a float without an int->float conversion: shifted to bit 15
  (int4: odd codes to bit 19, sharing the even neighbour's shift) and OR-ed into the mantissa of
  magic = 256 (or 16), it reads as magic + c. Per code: one LOP3 (mask | magic), one FMA with x into
  the thread's fp32 sum over the group, half a shift (int4; int8: one, or on a GPU at M = 1 one PRMT in
  all, the byte into bits 8-15 of 32768.0). Scale, zero point and magic
  are applied once per group and column: sum_k x s (c - z) = s * (sum_k x (magic + c) -
  sum_k x magic - z sum_k x), the x sums shared by all columns. (Offline sm_90a SASS of the main
  loop, M = 1, a slice a warp of 128 columns, a group unrolled: 2.96 instructions a code for int4, 2.52
  for int8; M = 4: 6.3 and 7.0.)
- "mma" (int4, M <= MMA_MAX_M = 16, a GPU: inline PTX; x rows 16-byte aligned: `_use_mma`), `_qgemv_mma_kernel`: the
  GEMV's work (32 columns a warp, groups of k) with the products on the tensor cores, one mma.sync m16n8k16
  per 16 weight columns x 16 k x 8 rows of x, its A operand the dequantized words in the lane's own registers. A
  lane holds 4 adjacent columns of word rows q, q + 4, .. (q = lane % 4); k inside each k16 step is permuted so that
  its A fragment is codes (2m, 2m + 4) and (2m + 1, 2m + 5) of its words (one LOP3 a pair: magic + c as two 16-bit
  floats, exact) and its B fragment the same codes' x, one 16-byte load of x row lane / 4 a word row (two PRMT a
  k16 step): no x broadcast, and x rows 1-8 cost the same. The zero point comes in once a group, as the CUDA-core
  GEMV's: sum_k x (c - z) = sum_k x (magic + c) - (magic + z) sum_k x, one FMA an accumulator, with sum_k x from one
  more MMA a k16 step whose A is all ones (the products and sums exact or fp32; the difference loses ~7 of fp32's 24
  bits, bf16 output keeps 8). Offline sm_90a SASS of the loop (M = 1, 104 registers): 1.95 instructions a code, 0.9
  of them integer (with a packed add of -(magic + z) to every pair until session 21: 2.69; the CUDA-core GEMV
  ~3.8); H200 times unchanged by the cut (session 21, journal item 151). The next group's words and x are loaded
  before this group's MMAs. Stream-K over one wave of resident programs, as the "dot" kernel. H200
  (2026-12-01, graph replay over input copies, x cuBLAS bf16 in the same run): M = 8 1.40 / 1.94 / 1.94 / 2.52x at
  4096^2 / 14336 x 4096 / 4096 x 14336 / 28672 x 8192, M = 16 1.16 / 1.67 / 1.60 / 2.08x (the dot kernel 0.98 /
  1.36 / 1.36 / 1.68x); at M = 1 level with the CUDA-core GEMV (41.5 against 40.1 us at 28672 x 8192). Nsight
  Compute (1 x 28672 x 8192): 16 warps an SM (104 registers), 61% of issue slots used, DRAM 47% busy at its locked
  1.34 GHz: latency- and issue-bound, not memory-bound. Tuner candidates only (never the untimed default: the
  interpreter cannot run it).
- "dot", `_qgemm_kernel` on the tensor cores (wgmma on Hopper): each k-tile of words becomes
  s * (c - z) rounded once to x's dtype (exactly dequantize(x.dtype)), fed to tl.dot as the A operand
  of W x^T (swap-AB: N is the MMA's M side, so BLOCK_M can be 16). int4: k and n are permuted inside
  the tile (x^T's rows and the output's columns alike) so that each thread of the wgmma register
  layout unpacks whole words of its own rows and no data moves between threads; a word's codes i and
  i + 4 form one register's pair of 16-bit floats: one LOP3 gives magic + c for both (bf16 128, fp16
  1024), a packed add subtracts magic + z (exact) and a packed multiply scales (one rounding), on a
  GPU by inline PTX when the scales are in x's dtype, else (and in the interpreter) the float32 FMA
  below, rounded: the same values. Offline sm_90a SASS of the main loop, bf16, BLOCK_M 16, 64 x 128
  (BLOCK_N x BLOCK_K) a program of 4 warps: 3.7 instructions a code (was 6.8), 128 x 128: 2.9.
  int8: the same register layout since session 43: one PRMT puts codes i and i + 2 of a word into the low bytes
  of a pair of 16-bit floats 32768 + c (the magic from a register, so that no pass folds it), then one packed FMA
  s * (32768 + c) - (32768 + z) * s = s * (c - z) (bf16 scales: exact before the one rounding; fp16: packed add,
  then multiply): 4.0-4.9 instructions a code offline (7.4 through shared memory before); H200, graph replay,
  batch 16: 0.99 / 1.09 / 1.13 / 1.25x cuBLAS bf16 (was 0.91-1.07x).
- "dequant" (and float32 x, always): dequantize to a [N, K] weight (documented workspace: N * K
  elements of x's dtype) and call F.linear (cuBLAS), compute-bound at prefill sizes anyway.
- "gluon", "gluon_rs" (sm_90 GPUs only, never the interpreter; `_use_gluon`): ops/quant_matmul_sm90.py's two
  warp-specialised persistent kernels. "gluon": a 1-warp TMA loader of x, dequantizer warp groups with their own TMA
  rings of words writing s * (c - z) into a ring of B tiles, and MMA warp groups with async wgmma; "gluon_rs" (swap
  AB): MMA warp groups that dequantize the weight straight into the wgmma's register A operand, x^T the B operand
  (stream-K variants of both sum a cut tile's pieces in k order, deterministic). They apply for M >= GLUON_MIN_M,
  int4 (int8: the first kernel only, since session 43), group 128, x bf16 / fp16 with scales of x's dtype, and layouts
  TMA takes (quant_matmul_sm90.supports: 16-byte aligned row strides and bases, N a multiple of 8, of 16 with zero
  points); elsewhere the other candidates run. Their variants are tuner candidates (quant_matmul_sm90.variants_for:
  for int4 the winners on the H200 of M = 64 for M <= 64, of M = 256 above), right after the untimed default, which
  stays a Triton / dequantize path. H200, bf16, group 128, graph replay, cold L2 (x cuBLAS bf16; session 18,
  logs/h200-2026-12-01-s18/exp-quant-rs-v2.log): M = 64 (register A) 0.87 / 1.28 / 1.31 / 1.54x at 4096^2 / 14336
  x 4096 / 4096 x 14336 / 28672 x 8192; M = 256 0.74x (register A, 128 x 128) / 0.82x (256 x 128) / 0.79x (register
  A) / 0.93x (256 x 128, stream-K) (dequantize + cuBLAS 0.54-0.77x). int8 (session 43, call d): M = 64 0.67-1.05x,
  M = 256 0.61-0.88x, where the Triton and dequantize paths ran 0.69-0.95x and 0.51-0.61x (quant_matmul_sm90's
  docstring).
The fused kernels cut K between programs when the output tiles alone cannot fill the SMs: the GEMV
into SPLIT_K equal splits (grid tiles x SPLIT_K), the tensor-core and mma kernels by stream-K (a grid of one wave
of as many programs as the SMs hold, sharing the tiles x k-steps evenly, so that no last wave runs
part-empty). Workspace: fp32 partials [pieces, M, N] per call (pieces: the most a tile is cut
into), and an int32 arrival counter per output tile kept per (device, stream) and left at zero by each
launch (the last program of a tile resets it), so a call launches one kernel and synchronises nothing.
The last program of a tile to arrive sums the partials in k order (deterministic), adds the bias and
writes the output.
On sm_90 the paths in PDL_PATHS (the GEMVs, the tensor-core kernel, the Gluon kernels) launch as programmatic
dependents: each program waits for the kernel before it to end before it reads or writes anything, then lets the next
launch go, so in a chain of calls (q / k / v, gate / up, a CUDA graph of them) the next kernel's programs take the SMs
as this one's last ones end (int4 on the H200: 0.7-1.3 us a call at batch 1, journal item 168; ~1 us at batch 64 below
28672 x 8192, item 337). The set is read when a call is planned: change it before the first call of a shape.
A repeated eager call (same shapes, strides, dtypes, alignment) replays the launch its first call recorded
(ops/_support.py `planned`: the output and partials allocated anew, the stream's arrival counters). Calls
that cannot be recorded (the Gluon kernel's descriptors, dequantize + cuBLAS) keep a plan of the op's own:
one lookup, the allocations, one launch.
"""
from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.language.extra.cuda import num_threads

from rooftop import registry
from rooftop.ops import _autotune, quant_matmul_sm90
from rooftop.ops.matmul import Fp8Linear
from rooftop.ops._support import (FLOAT_DTYPES, Launch, Plans, alignment_key, arrival_counters, as_rows,
                                  await_previous, capability, cdiv, check_float, check_same_device, float32_placeholder,
                                  gluon_runs, interpreting, l2_bytes, launch, num_sms, pdl_options, planned, prepare,
                                  provided, runs_kernel, store_split_output, torch_op)
from rooftop.roofline import Cost

BITS = (4, 8)
GROUP_SIZES = (32, 64, 128)
HALF_DTYPES = (torch.float16, torch.bfloat16)

# The untimed default's regimes of M (rows of x); the candidate lists below are timed per shape.
# The lists' first entries are the fastest of exp_quant_configs.py on the H200 (2026-11-29) at the
# benchmark shapes: narrow (64-column) MMA tiles from M = 16, dequantize + cuBLAS at M = 256.
GEMV_MAX_M = 1  # up to here: CUDA-core GEMV first
GEMV_TRY_M = 4  # up to here the GEMV is also a candidate (its FMAs grow with M; the MMA's do not)
DOT_MAX_M = 64  # up to here: fused tensor-core kernel first; above: dequantize + cuBLAS first
DEQUANT_BLOCK_K = 64
DEQUANT_BLOCK_N = 64
MAGIC15 = 0x43800000  # bits of the float 256.0 = 2^(23 - 15): see _unpack
GEMV_MIN_STEPS = 4  # k-steps a split keeps at least (the partials cost 8 bytes an output a split)
# The most splits of K: a tile's last program sums its splits' partials one after another. H200, int8, M = 1,
# 4096 x 14336 (graph replay, logs/h200-2026-12-01-s16/exp-tuner-int8.log): 224 splits 28.3 us, 56 22.7, 14 56.
GEMV_MAX_SPLIT = 64
# registers a thread of a tile's last piece fills with partials at once (store_split_output's SUM_BATCH): the
# tensor-core kernel's fewer (a stream-K tile has a few pieces; offline sm_90, 16 x 64 x 128 tiles: 96 registers, 128
# with 64)
SUM_REGS = {"gemv": 64, "mma": 64, "dot": 32}
# The paths (`_launch_path`'s and the Gluon kernels') launched as programmatic dependents on sm_90
# (`_support.await_previous`): in a chain of calls (a decoder's q / k / v or gate / up projections, the results
# harness's graph) the next kernel's programs are resident as this one's last ones end, not a launch later. The
# CUDA-core GEMV's: H200, int4, the kept M = 1 candidate, graph replay of a chain over input copies
# (logs/h200-2026-12-02-s25/call-e/exp-gemv-pdl-after-int4.log): 6.8 / 12.1 / 12.7 / 36.5 us -> 6.1 / 11.4 / 11.9 / 35.2
# at 4096^2 / 14336 x 4096 / 4096 x 14336 / 28672 x 8192, the same bits. Letting the next launch go before the wait (a
# chain of waiting kernels on the SMs) ran 4096^2 at 9.6 us; the program's words prefetched into L2 first
# (cp.async.bulk.prefetch, before the wait) ran 0.5-11 us slower everywhere (call-d). journal item 168. The mma GEMV and
# the tensor-core kernel (logs/h200-2026-12-02-s26/call-a, exp_gemv_pdl.py --m 16 / 64, each path's first candidate):
# 0.3-1.3 us off at 4096^2 to 4096 x 14336 (mma at 16: 11.8 / 17.9 / 19.9 -> 10.9 / 17.4 / 19.1 us), within +-2% at
# 28672 x 8192; the same bits (journal item 171). The Gluon kernels (batch 17 up; since session 50; each waits after
# setting up its shared memory and barriers): H200, int4, the tuned candidate, four A/B rounds
# (logs/h200-2026-12-04-s50/call-d, exp_gemm_pdl.py): batch 64 15.4 / 25.1 / 28.1 -> 14.3 / 23.9 / 27.3 us at 4096^2 /
# 14336 x 4096 / 4096 x 14336, level at 28672 x 8192; batch 256 25.6 -> 24.5 at 4096^2, level elsewhere; the same bits
# (journal item 337).
PDL_PATHS = frozenset({"gemv", "mma", "dot", "gluon", "gluon_rs"})

# GEMV candidates (BLOCK_N, num_warps, WORD_ROWS, programs per SM to split K towards, num_stages[,
# maxnreg]): word rows a k-step (int4: 8 k a row, int8: 4), all held by each thread; more programs per
# SM put more loads in flight at the cost of more partials. Nsight Compute on the H200 (int4,
# 1 x 28672 x 8192, the session-4 kernel): latency-bound, DRAM busy 54%, 20% occupancy limited by 128
# registers a thread (the per-group FMA chains since need 62-96, offline sm_90); maxnreg caps them
# (more resident programs, perhaps a spill) and lets the tuner weigh the two.
# First, the untimed default: the fastest measured at M = 1 on 5 of the 6 shapes where the GEMV wins
# (logs/h200-2026-11-29-s5/exp-quant-configs-m1-new-gemv.json; int4 14336 x 4096: 18.0 us against 27.8
# for 256 columns). Nsight Compute of it (session 6, logs/h200-2026-11-29-s6/ncu-quant-int4-1x28672x8192.txt):
# DRAM 66% busy, occupancy 36%, 72 registers. Offline sm_90 the same loop fits 64 registers (one-warp
# programs up to the SM's 32-program limit) and 56 (two-warp programs: 36 warps an SM) with no spill: the
# last two candidates, not yet timed on the GPU.
# Then (M = 1; maxnreg, SLICES) candidates whose programs cut their share of K again into SLICES runs of whole groups,
# summed in shared memory (`_qgemv_kernel`): the workspace's fix-up costs 1.6-6.6 us a call at the splits the GEMV
# needs (session 21, logs/h200-2026-12-02-s21/exp-gemv-tail*.log: int4 14336 x 4096 13.6 us, 12.0 without it). On
# the H200 (exp-tuner-timing-slices-int*.log) they win for int8 (14336 x 4096 18.8 us against 22.3, 4096 x 14336 20.0
# against 22.4, 28672 x 8192 62.0 against 63.9), not for int4 (the slices' x takes layout shuffles: +10% instructions);
# slices across 8 or 16 warps (barriers of the whole program every k-step for x) ran 1.3-2x slower and are not listed.
# Then 8 word rows a k-step (offline sm_90: 72 registers, no spill, 3.1 instructions a code as with 4): twice the
# bytes in flight a warp, half the splits.
# Last (M = 1; maxnreg, SLICES, X_ASM) a slice a warp with x loaded by each thread itself (inline PTX, `_load_x_pairs`:
# no shared memory, no barrier; offline sm_90 4.2 instructions a code at 128 columns, 3.5 at 256): splits of K 4x
# fewer at the same warps. H200 (session 22, logs/h200-2026-12-02-s22/exp-tuner-timing-xasm-int*.log, graph replay,
# each alone): int4 4096^2 7.7 us (one warp a program: 8.5), 4096 x 14336 14.2 (15.5), 14336 x 4096 13.6 (13.7);
# int8 4096^2 9.5 (10.4), 4096 x 14336 19.3 (20.0 in two slices a warp), 28672 x 8192 61.0 (61.6). Not kept, slower
# everywhere: 8 slices of 8 warps, 256 columns, the same at a quarter of the programs, one warp a program with X_ASM.
# The last two (UNROLL) take a slice's group of k-steps as one block (slices are whole groups): offline sm_90 3.6
# instructions a code (4.2 in the loop) and ptxas issues the words' loads 3-4 rows ahead. H200 (exp-tuner-timing-
# unroll-int*.log): int4 4096^2 7.0 us (7.7 rolled), 14336 x 4096 12.9 (13.6), 4096 x 14336 13.5 (14.2), 28672 x 8192
# 38.9 (40.5); int8 only at 4096^2 (8.9 against 9.5; 8 word rows spill: 38.6 us against 19.0).
# Session 23 cut the X_ASM loop's instructions (offline sm_90, an unrolled group: int4 3.58 -> 2.96 a code, int8 4.15 ->
# 2.52; `_gemv_extents`: no masks where even, N compiled in; x's group sums by shuffles; int8 codes by PRMT): H200
# (logs/h200-2026-12-02-s23/exp-tuner-timing-diet-int*.log, each alone) int4 6.7 / 12.2 / 12.8 / 36.4 us at 4096^2 /
# 14336 x 4096 / 4096 x 14336 / 28672 x 8192 (7.0 / 12.9 / 13.5 / 38.9 before), int8 8.3 / 18.7 / 18.5 / 60.5 (8.9 /
# 18.7 / 19.3 / 61.0). The unrolled loop then fits 56 registers without spills: the last two candidates hold 8 and 9
# programs an SM (not yet timed alone), the one before splits K for one wave at 28672 x 8192 (4 groups a warp).
# The last ties the words of AHEAD k-steps (the 10th entry) so that all are loaded before the first FMA
# (`_load_rows_tied`; offline sm_90: AHEAD 2, 8 word rows issued at once, 95 registers, int4 3.04 instructions a code,
# int8 2.68): a warp's bytes in flight 4 KB where ptxas's own schedule keeps ~2, at 2 groups a warp (per_sm 2). H200
# (logs/h200-2026-12-02-s24/exp-tuner-timing-ahead-int*.log, each alone): int8 18.2 us at 14336 x 4096 (18.6-18.8
# without), 18.4 at 4096 x 14336 (19.2-19.6), level elsewhere; int4 slower everywhere (14.1 against 12.1), as were all
# 16 word rows a group tied (AHEAD 4, 121 registers: int4 15.0-16.5, int8 level at best): the int4 GEMV at the mid
# shapes is not held by its loads' issue (journal item 163).
# The last splits K over 16 warps of one program (no split over programs: no partials, no atomic): session 25 (logs/
# h200-2026-12-02-s25/call-b/variants-int*.log, each alone) int8 14336 x 4096 17.5 us (18.1 the best before), slower
# elsewhere (int4 13.3 against 12.2 at 14336 x 4096); the close it avoids costs ~0.6-1.3 us there (exp_gemv_tail
# --probe: 11.6 / 16.4 us without one), and a close without the fence ran 1-15 us slower (journal item 166).
# The last two are the kept one (2.7x cuBLAS at the mid shapes) with the words of each slice's first 1 / 4 k-steps
# pulled into L2 before the PDL wait (the 11th entry, PREFETCH; off where the launch is not PDL or not EVEN). Session 32
# (logs/h200-2026-12-03-s32/call-b/exp-gemv-prefetch-int*.log, graph replay of a chain over cold copies, us, PREFETCH
# 0 / 1 / 4): int4 4096^2 6.1 / 5.9 / 5.5, 14336 x 4096 11.4 / 11.7 / 13.1, 4096 x 14336 11.9 / 12.1 / 13.6, 28672 x
# 8192 35.2 / 35.3 / 38.4; int8 4096^2 7.7 / 7.7 / 8.4, 14336 x 4096 18.0 / 17.5 / 18.5, 4096 x 14336 18.6 / 18.1 /
# 19.1, 28672 x 8192 58.7 / 58.5 / 60.6: the chain tuner takes them where they win (the results rows have not been
# re-tuned with them yet).
GEMV_CONFIGS = ((128, 1, 4, 32, 1, 72), (128, 1, 4, 32, 1), (256, 1, 4, 32, 1), (256, 1, 4, 16, 1),
                (256, 1, 4, 16, 1, 96), (256, 1, 4, 32, 1, 80), (256, 1, 4, 8, 1), (512, 4, 4, 8, 1, 96),
                (128, 1, 4, 32, 1, 64), (256, 2, 4, 32, 1, 56),
                (64, 1, 4, 32, 1, 72, 2), (128, 1, 8, 32, 1, 72), (128, 1, 8, 16, 1, 72),
                (128, 4, 4, 7, 1, 72, 4, True), (64, 4, 4, 7, 1, 72, 4, True), (128, 4, 4, 7, 1, 72, 4, True, True),
                (128, 4, 4, 4, 1, 72, 4, True, True), (128, 4, 4, 8, 1, 64, 4, True, True),
                (128, 4, 4, 9, 1, 56, 4, True, True), (128, 4, 4, 2, 1, 96, 4, True, True, 2),
                (128, 16, 4, 0, 1, 72, 16, True, True), (128, 4, 4, 7, 1, 72, 4, True, True, 0, 1),
                (128, 4, 4, 7, 1, 72, 4, True, True, 0, 4))
# Tensor-core candidates (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages[, SWAP_AB, default True[,
# maxnreg]]) by the largest M of the regime; BLOCK_K is capped at the group size (one scale per column a
# k-tile). The grid is stream-K over as many programs as the SMs hold (Launch.resident_per_sm), so the
# tile's registers decide how many loads are in flight. The dequantized tile and the accumulator both
# live in registers: int8's tile (and the session-5 int4 one) spilled for the larger tiles at 4 warps,
# hence 8 warps from BLOCK_M = 64. With split-K (to session 7) the first was the fastest at M = 16 on
# three of the four benchmark shapes (logs/h200-2026-11-29-s6/exp-quant-configs-run4.json); 32-column
# tiles, narrower than the wgmma's 64 rows, ran 3-4x slower. Nsight Compute of it at 16 x 28672 x 8192
# (logs/.../ncu-quant-int4-16x28672x8192.txt): DRAM 45% busy, occupancy 25% of a theoretical 31%: 896
# split-K programs were 1.4 waves of 5 an SM (what stream-K removes). Offline sm_90 with stream-K, int4:
# 16x128x64 / 4 warps / 5 stages 95 registers (5 an SM), 16x64x64 / 6 stages 64 (8), 16x64x128 96.
# Stream-K on the H200 (int4, one call, logs/h200-2026-12-01-s8/exp-quant-configs-q16/q64): the first of
# each list below is the fastest at M = 16 on all four benchmark shapes (28672 x 8192: 62.0 us, was 64.3
# with split-K) and at M = 64 on three (4096^2: the unswapped 64x64x128, 19.9 us against 22.1).
DOT_CONFIGS = (
    (16, ((16, 128, 128, 4, 3), (16, 128, 64, 4, 5), (16, 64, 64, 4, 6), (16, 64, 128, 4, 4), (16, 128, 128, 4, 4),
          (16, 128, 64, 8, 4))),
    (32, ((32, 64, 128, 4, 4), (32, 128, 64, 4, 4), (32, 128, 64, 8, 4), (16, 64, 128, 4, 4))),
    (64, ((64, 128, 64, 8, 3), (64, 64, 128, 4, 4, False), (64, 64, 64, 4, 4), (32, 128, 64, 8, 4),
          (64, 128, 64, 4, 4, False), (64, 128, 128, 8, 3), (64, 256, 64, 8, 3), (32, 128, 128, 4, 4))),
    (1 << 62, ((64, 64, 64, 4, 4), (128, 64, 64, 8, 3), (128, 128, 64, 8, 3), (64, 128, 64, 8, 3),
               (128, 128, 64, 8, 3, False), (64, 128, 64, 4, 4, False), (128, 256, 64, 8, 3, False),
               (128, 128, 128, 8, 3), (128, 256, 64, 8, 3), (64, 128, 128, 8, 3))),
)
# The Gluon kernel (ops/quant_matmul_sm90.py) is a tuner candidate from this M on (sm_90 GPUs, the layouts it
# takes): its tiles are 64 rows or more. Set GLUON_ENABLED False to keep sm_90 on the Triton paths.
GLUON_MIN_M = 17
GLUON_ENABLED = True
# The mma.sync GEMV (`_qgemv_mma_kernel`): tuner candidates up to MMA_MAX_M rows (two n8 blocks of the MMA), by
# BLOCK_M: (warps, maxnreg[, X_AHEAD, default True]), its grid one wave of resident programs (stream-K). On the H200
# (logs/h200-2026-12-01-s15/exp-tuner-timing-mma.log, graph replay over input copies, one run) one wave beat equal
# splits of K towards 16-32 warps an SM (1.3-2 waves) everywhere, by up to 25% (16 x 4096 x 14336: 20.3 against
# 25.6 us); 104 registers (no spill, 16 warps an SM) beat 96 (a few spills in the loop, 20) at M = 8 (15.5 against
# 17.8 us at 14336 x 4096), and 2-warp programs won at 28672 x 8192 (M = 8: 42.8 us, M = 16: 55.1). Prefetching the
# next group is always on; at M = 16 x is better left out of it (X_AHEAD False: loaded from L1 / L2 when needed; the
# loop then fits 120 registers without spills, offline sm_90): 52.8 against 54.1 us at 28672 x 8192, 18.4 against
# 19.1 at 14336 x 4096 (exp-tuner-timing-xahead.log); at M <= 8 not (88 registers, 20 warps an SM: 1-7% slower).
MMA_MAX_M = 16
MMA_CONFIGS = {8: ((1, 104), (2, 96)), 16: ((1, 120, False), (2, 120, False), (1, 128))}
# Up to here the tuner times each candidate in a chain of calls over copies of the weight that together exceed the
# L2 (`_cold_copies`): each reads its weight from memory and overlaps its neighbours' ramp and tail (PDL), as a
# decoder's back-to-back projections do. One isolated call's time chose 8.1 us at int4 4096^2 where the chain's best
# takes 6.1 (session 26).
CHAIN_MAX_M = 16
CHAIN_MAX_COPIES = 16
INTERPRETER_GEMV = (256, 1, 4, 8, 1)  # the interpreter pretends to have 8 SMs: split-K runs in tests
INTERPRETER_RESIDENT = 4  # tensor-core programs an SM in the interpreter: stream-K cuts tiles in tests


def _split_k(programs: int, tiles: int, most: int) -> int:
    """Splits of K (a power of two: few compiled variants) for `tiles` output tiles to make about
    `programs` programs, at most `most`."""
    return max(1, min(triton.next_power_of_2(cdiv(programs, tiles)), most))


def _gemv(config: tuple, M: int, N: int, K: int, bits: int, group_size: int, sms: int) -> dict:
    block_n, warps, word_rows, per_sm, stages, *rest = config
    maxnreg = rest[0] if rest else None
    slices = rest[1] if len(rest) > 1 and M == 1 else 1
    x_asm = len(rest) > 2 and rest[2] and M == 1
    unroll = len(rest) > 3 and rest[3] and slices > 1
    ahead = rest[4] if len(rest) > 4 and unroll else 0
    prefetch = rest[5] if len(rest) > 5 and slices > 1 else 0
    block_k = min(word_rows * 32 // bits, group_size)
    if slices == 1:
        most = max(1, min(GEMV_MAX_SPLIT, K // (block_k * GEMV_MIN_STEPS)))
        split = _split_k(per_sm * sms, cdiv(N, block_n), most)
    else:  # slices of whole groups; no program left without one
        groups = K // group_size
        split = _split_k(per_sm * sms, cdiv(N, block_n), max(1, groups // slices))
        split = cdiv(groups, slices * cdiv(groups, split * slices))
    return dict(path="gemv", BLOCK_M=triton.next_power_of_2(M), BLOCK_N=block_n, BLOCK_K=block_k, SPLIT_K=split,
                num_warps=warps, STAGES=stages, SLICES=slices, X_ASM=x_asm, UNROLL=unroll, AHEAD=ahead,
                **({"maxnreg": maxnreg} if maxnreg else {}), **({"PREFETCH": prefetch} if prefetch else {}))


def _mma(config: tuple, M: int) -> dict:
    warps, maxnreg, *x_ahead = config
    return dict(path="mma", BLOCK_M=8 if M <= 8 else 16, BLOCK_N=32 * warps, num_warps=warps, maxnreg=maxnreg,
                X_AHEAD=x_ahead[0] if x_ahead else True)


def _dot(config: tuple, group_size: int) -> dict:
    block_m, block_n, block_k, warps, stages, *rest = config
    swap = rest[0] if rest else True
    maxnreg = rest[1] if len(rest) > 1 else None
    return dict(path="dot", BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=min(block_k, group_size), num_warps=warps,
                num_stages=stages, SWAP_AB=swap, **({"maxnreg": maxnreg} if maxnreg else {}))


DEQUANT = dict(path="dequant")


def candidates(M: int, N: int, K: int, bits: int, group_size: int, dtype: torch.dtype, sms: int,
               gluon: bool = False, mma: bool = False) -> tuple[dict, ...]:
    """The launch candidates for M rows of x, the untimed default first: dicts with "path" ("gemv", "mma",
    "dot", "dequant", "gluon", "gluon_rs") and the kernel's tile sizes, SPLIT_K (GEMV), num_warps, num_stages (the
    Gluon kernels': quant_matmul_sm90.Variant.config, RSVariant.config). gluon: whether they apply to the call
    (`_use_gluon`); its variants for M's regime then come right after the default (never first: untimed
    calls run the first). mma: whether the mma.sync GEMV applies (`_use_mma`): its candidates for M <= MMA_MAX_M
    likewise."""
    if dtype not in HALF_DTYPES:
        return (DEQUANT,)
    gluon_configs = (tuple(v.config() for v in quant_matmul_sm90.variants_for(M, bits)) if gluon and M >= GLUON_MIN_M
                     else ())
    mma_configs = tuple(_mma(c, M) for c in MMA_CONFIGS[8 if M <= 8 else 16]) if mma and M <= MMA_MAX_M else ()
    if sms == num_sms(-1):  # the interpreter: one small configuration per path
        gemv = (_gemv(INTERPRETER_GEMV, M, N, K, bits, group_size, sms),)
    else:
        gemv = tuple(_gemv(c, M, N, K, bits, group_size, sms) for c in GEMV_CONFIGS)
    dots = next(table for top, table in DOT_CONFIGS if M <= top)
    dot = tuple(_dot(c, group_size) for c in dots)
    dot = tuple(c for i, c in enumerate(dot) if c not in dot[:i])
    if M <= GEMV_MAX_M:
        return gemv[:1] + mma_configs + gemv[1:] + dot[:2]
    if M <= GEMV_TRY_M:
        return dot[:1] + mma_configs + dot[1:] + gemv[:3]
    if M <= DOT_MAX_M:
        return dot[:1] + mma_configs + gluon_configs + dot[1:] + (DEQUANT,)
    return (DEQUANT,) + gluon_configs + dot[:2]


def kernel_path(M: int, dtype: torch.dtype = torch.bfloat16) -> str:
    """The path quant_matmul runs untimed for M rows of x of `dtype`: "gemv", "dot" or "dequant"."""
    return candidates(M, 256, 256, 4, 128, dtype, num_sms(-1))[0]["path"]


def _use_mma(rows: torch.Tensor, bits: int) -> bool:
    """Whether the mma.sync GEMV (`_qgemv_mma_kernel`) is a candidate: int4, M <= MMA_MAX_M, a GPU of sm_80 or later
    (inline PTX, m16n8k16 in 16 bits: not the interpreter, not a T4), x's rows 16-byte aligned (it reads x as 16-byte
    pieces of int32 pairs)."""
    return (bits == 4 and rows.is_cuda and not interpreting() and rows.shape[0] <= MMA_MAX_M
            and rows.stride(0) % 8 == 0 and rows.data_ptr() % 16 == 0 and capability(rows.device.index) >= (8, 0))


def _use_gluon(rows: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
               bits: int, group_size: int) -> bool:
    """Whether the Gluon kernel (quant_matmul_sm90) is a candidate for this call: an sm_90 GPU (its wgmma, TMA
    and setmaxnreg; Gluon has no interpreter), M >= GLUON_MIN_M, and a format and layout it takes
    (quant_matmul_sm90.supports: int4, group 128, x bf16 / fp16 with scales of its dtype, TMA's alignments)."""
    return (GLUON_ENABLED and rows.is_cuda and not interpreting() and rows.shape[0] >= GLUON_MIN_M
            and quant_matmul_sm90.supports(rows, packed, scales, zeros, bits, group_size)
            and gluon_runs(rows.device.index))

# ---------------------------------------------------------------------------------------------
# Kernels


@triton.jit
def _unpack(words, idx, magic15, BITS: tl.constexpr):
    """(magic + c, magic) in float32 for code `idx` of `words`, with no int->float conversion: the code
    is shifted to bit 15 (int4: odd codes to bit 19, sharing their even neighbour's shift: one shift per
    two codes) and OR-ed into the mantissa of the float magic = 2^(23 - bit) (256 or 16). `magic15` is
    the bit pattern of 256.0 passed at run time: in a register, mask and OR fuse into one LOP3."""
    bit = 15 + BITS * (idx % (8 // BITS))
    shift = bit - BITS * idx
    moved = (words << tl.maximum(shift, 0)) >> tl.maximum(-shift, 0)  # arithmetic >>: bits < 20 are exact
    magic = magic15 - ((bit - 15) << 23)  # the float 2^(23 - bit)
    codes = ((moved & (((1 << BITS) - 1) << bit)) | magic).to(tl.float32, bitcast=True)
    return codes, magic.to(tl.float32, bitcast=True)


@triton.jit
def _load_masked(ptrs, mask):
    """tl.load with 0 where not mask; mask None: every element (no predicates)."""
    if mask is None:
        v = tl.load(ptrs)
    else:
        v = tl.load(ptrs, mask=mask, other=0)
    return v


@triton.jit
def _scale_and_zero(s_ptr, z_ptr, g, cols, col_mask, N, HAS_ZERO: tl.constexpr, BITS: tl.constexpr):
    """Group g's scale s and zero point z for `cols`, as float32."""
    s = _load_masked(s_ptr + g * N + cols, col_mask).to(tl.float32)
    if HAS_ZERO:
        z = _load_masked(z_ptr + g * N + cols, col_mask).to(tl.float32)
    else:
        z = tl.full(s.shape, 2 ** (BITS - 1), tl.float32)
    return s, z


@triton.jit
def _take(x, k: tl.constexpr):
    """x[:, k] of x [BLOCK_M, WIDTH] (WIDTH a power of two, at most 32) by halving its in-thread last
    axis: no data moves."""
    for level in tl.static_range(5):
        if x.shape[1] > 1:
            lo, hi = tl.split(tl.reshape(x, (x.shape[0], x.shape[1] // 2, 2)))
            x = hi if (k >> level) & 1 else lo
    return tl.reshape(x, (x.shape[0],))


@triton.jit
def _load_x_pairs(addr, valid, PAIRS: tl.constexpr):
    """PAIRS (4, 2 or 1) int32 words (two 16-bit values of x each) at addr (4 * PAIRS-byte aligned), 0 where not
    valid (None: all valid, no predicate): one 16-, 8- or 4-byte load by every thread that holds an element of addr,
    in addr's layout (a load in the accumulator's layout where tl.load would go through shared memory); a tuple of
    PAIRS tensors, or one tensor for PAIRS 1. Inline PTX: on a GPU only."""
    if valid is None:
        if PAIRS == 4:
            return tl.inline_asm_elementwise("ld.global.nc.v4.b32 {$0, $1, $2, $3}, [$4];", "=r,=r,=r,=r,l", [addr],
                                             dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
        elif PAIRS == 2:
            return tl.inline_asm_elementwise("ld.global.nc.v2.b32 {$0, $1}, [$2];", "=r,=r,l", [addr],
                                             dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
        else:
            return tl.inline_asm_elementwise("ld.global.nc.b32 $0, [$1];", "=r,l", [addr], dtype=tl.int32,
                                             is_pure=True, pack=1)
    elif PAIRS == 4:
        return tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $5, 0; mov.b32 $0, 0; mov.b32 $1, 0; mov.b32 $2, 0; mov.b32 $3, 0; "
            "@p ld.global.nc.v4.b32 {$0, $1, $2, $3}, [$4]; }", "=r,=r,=r,=r,l,r", [addr, valid.to(tl.int32)],
            dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True, pack=1)
    elif PAIRS == 2:
        return tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $3, 0; mov.b32 $0, 0; mov.b32 $1, 0; "
            "@p ld.global.nc.v2.b32 {$0, $1}, [$2]; }", "=r,=r,l,r", [addr, valid.to(tl.int32)],
            dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    else:
        return tl.inline_asm_elementwise(
            "{ .reg .pred p; setp.ne.b32 p, $2, 0; mov.b32 $0, 0; @p ld.global.nc.b32 $0, [$1]; }", "=r,l,r",
            [addr, valid.to(tl.int32)], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _half_to_float(pair, HIGH: tl.constexpr, BF16: tl.constexpr):
    """The high or low 16-bit float of an int32 pair, as float32 (bf16: the bits moved up, one integer op)."""
    if BF16:
        bits = pair & -65536 if HIGH else pair << 16
        return bits.to(tl.float32, bitcast=True)
    half = (pair >> 16 if HIGH else pair).to(tl.int16)
    return half.to(tl.float16, bitcast=True).to(tl.float32)


@triton.jit
def _spread(v, BLOCK_N: tl.constexpr):
    """A lane's values [LANES, LW] as [LANES, BLOCK_N]: LW = 1 broadcast; LW = 32 (a copy a thread of a warp's 32)
    each thread's own copy for its BLOCK_N / 32 columns, the layouts matching (no data moves)."""
    if v.shape[1] > 1:
        v = tl.reshape(tl.broadcast_to(v[:, :, None], (v.shape[0], 32, BLOCK_N // 32)), (v.shape[0], BLOCK_N))
    return v


@triton.jit
def _byte_codes(words):
    """The 4 bytes c of int8 words as floats 32768 + c, one PRMT each: the byte into bits 8-15 under the exponent
    byte of 32768.0 (0x47000000) where a shift and a LOP3 put it at bit 15 of 256.0. sum_k x (32768 + c) over a group
    then keeps ~16 of fp32's 24 bits against sum_k x (c - z) (bf16 output keeps 8; H200 error 1.7e-3 as with 256).
    Inline PTX: on a GPU only."""
    return tl.inline_asm_elementwise(
        "prmt.b32 $0, $4, 0x47000000, 0x7404; prmt.b32 $1, $4, 0x47000000, 0x7414; "
        "prmt.b32 $2, $4, 0x47000000, 0x7424; prmt.b32 $3, $4, 0x47000000, 0x7434;", "=r,=r,=r,=r,r", [words],
        dtype=(tl.float32, tl.float32, tl.float32, tl.float32), is_pure=True, pack=1)


@triton.jit
def _group_x_sums(x_group, valid, GROUP: tl.constexpr, BF16: tl.constexpr):
    """(sum of x over a group's even k, over its odd k) from x_group, the group's first x of each lane as [LANES, 32]
    (a copy a thread), returned in that layout: each thread of the warp loads and adds GROUP / 32 of the values and
    the warp's shuffles add those up (every thread gets the sums): ~20 instructions a thread, where adding the
    group's x it widens anyway took GROUP."""
    PAIRS: tl.constexpr = max(1, GROUP // 64)
    part = tl.arange(0, 32)[None, :]
    ok = valid
    if GROUP < 64:  # half the warp
        ok = part * 2 < GROUP if valid is None else (part * 2 < GROUP) & valid
    addr = x_group + part * (2 * PAIRS)
    if PAIRS == 2:
        p0, p1 = _load_x_pairs(addr, ok, 2)
        even = _half_to_float(p0, False, BF16) + _half_to_float(p1, False, BF16)
        odd = _half_to_float(p0, True, BF16) + _half_to_float(p1, True, BF16)
    else:
        p0 = _load_x_pairs(addr, ok, 1)
        even = _half_to_float(p0, False, BF16)
        odd = _half_to_float(p0, True, BF16)
    return _warp_sum(even), _warp_sum(odd)


@triton.jit
def _warp_sum(v):
    """v [LANES, 32] (dim 1 the threads of a warp) summed along dim 1 into every thread, by 5 butterfly shuffles in
    place: tl.sum's result [LANES, 1] would take a layout of its own (shared memory and barriers to come back)."""
    for level in tl.static_range(5):
        v += tl.inline_asm_elementwise(f"shfl.sync.bfly.b32 $0, $1, {16 >> level}, 31, -1;", "=r,r", [v],
                                       dtype=tl.float32, is_pure=True, pack=1)
    return v


@triton.jit
def _load_rows_tied(w_step, w_lane, group_mask, n_row, opaque_zero, ROWS: tl.constexpr):
    """ROWS word rows (from w_step + w_lane, n_row words apart) as a tuple, the first made to depend on every one (its
    words xor-ed with (all rows xor-ed) & opaque_zero, a 0 that ptxas cannot fold): the first FMA then waits for
    every load, so all are issued before it. Otherwise ptxas sinks each load to ~3-4 rows ahead of its use whatever
    the source order (journal item 161), and a warp keeps only ~2 KB in flight."""
    loaded = ()
    for j in tl.static_range(ROWS):
        loaded = loaded + (_load_masked(w_step + j * n_row + w_lane, group_mask),)
    every = loaded[0]
    for j in tl.static_range(1, ROWS):
        every = every ^ loaded[j]
    rows = (loaded[0] ^ (every & opaque_zero),)
    for j in tl.static_range(1, ROWS):
        rows = rows + (loaded[j],)
    return rows


@triton.jit
def _gemv_step(w_step, w_lane, group_mask, x_row, x_ptrs, x_valid, dot, sum15, sum19, magic15, n_row, loaded,
               BITS: tl.constexpr, WORDS: tl.constexpr, BLOCK_K: tl.constexpr, XW: tl.constexpr, X_ASM: tl.constexpr,
               SUM_X: tl.constexpr, BLOCK_N: tl.constexpr, LOADED_AT: tl.constexpr):
    """One k-step of `_qgemv_kernel`: its WORDS word rows (from w_step + w_lane, n_row words apart, or loaded[LOADED_AT
    + j] when loaded is a tuple) times x, into the lanes' sums over the group (dot) and, SUM_X, of x (sum15, sum19);
    returns them and the pointers moved to the next k-step."""
    PACK: tl.constexpr = 32 // BITS
    BF16: tl.constexpr = x_row.dtype.element_ty == tl.bfloat16
    for j in tl.static_range(WORDS):
        if X_ASM:  # the word row's PACK values of x straight into every thread of the lane
            x_pairs = _load_x_pairs(x_row + j * PACK, x_valid, PACK // 2)
        elif j % XW == 0:
            x = _load_masked(x_ptrs + j * PACK, x_valid).to(tl.float32)
            # an identity reduction: x then reaches every thread as float32 through shared
            # memory, where otherwise every thread would widen it
            x = tl.sum(x[:, :, None], axis=2)
        if loaded is None:
            words = _load_masked(w_step + j * n_row + w_lane, group_mask)
        else:
            words = loaded[LOADED_AT + j]
        if BITS == 8 and X_ASM:
            bytes4 = _byte_codes(words)
        for i in tl.static_range(PACK):
            if BITS == 8 and X_ASM:
                codes = bytes4[i]
            else:
                codes, _ = _unpack(words, i, magic15, BITS)
            if X_ASM:
                xk = _half_to_float(x_pairs[i // 2], i % 2, BF16)
            else:
                xk = _take(x, (j % XW) * PACK + i)[:, None]
            if SUM_X:
                if i % (8 // BITS) == 0:
                    sum15 += xk
                else:
                    sum19 += xk
            dot = tl.fma(_spread(xk, BLOCK_N), codes, dot)
    return dot, sum15, sum19, w_step + WORDS * n_row, x_row + BLOCK_K, x_ptrs + BLOCK_K


@triton.jit
def _prefetch_rows(w_col, first_row, slice_rows, n_row, SLICES: tl.constexpr, ROWS: tl.constexpr, ROW_BYTES):
    """Word rows first_row + s * slice_rows + r (s < SLICES, r < ROWS; ROWS at most the slice's) of the int32 words
    from w_col on, ROW_BYTES of each, pulled into L2: one bulk prefetch a row (cp.async.bulk.prefetch: no registers
    held, nothing waited for), a thread a row (past the last row, threads prefetch it again)."""
    THREADS: tl.constexpr = num_threads()
    for r0 in tl.static_range(0, SLICES * ROWS, THREADS):
        r = tl.minimum(r0 + tl.arange(0, THREADS), SLICES * ROWS - 1)
        row = first_row + (r // ROWS) * slice_rows + r % ROWS
        tl.inline_asm_elementwise("cp.async.bulk.prefetch.L2.global [$1], $2; mov.u32 $0, 0;", "=r,l,r",
                                  [w_col + row.to(tl.int64) * n_row, ROW_BYTES + r * 0], dtype=tl.int32, is_pure=False,
                                  pack=1)


@triton.jit
def _qgemv_kernel(x_ptr, w_ptr, s_ptr, z_ptr, b_ptr, out_ptr, ws_ptr, cnt_ptr, M, N, K, x_stride, out_stride,
                  magic15, SPLIT_K: tl.constexpr, BITS: tl.constexpr, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr,
                  HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  STAGES: tl.constexpr, SUM_BATCH: tl.constexpr, SLICES: tl.constexpr, X_ASM: tl.constexpr,
                  UNROLL: tl.constexpr, EVEN: tl.constexpr, W_STRIDE: tl.constexpr, GROUP_SUMS: tl.constexpr,
                  AHEAD: tl.constexpr, PDL: tl.constexpr, PREFETCH: tl.constexpr):
    # Grid (N / BLOCK_N, SPLIT_K). STAGES > 1: the group's next k-steps' words are copied into shared
    # memory while this one is summed (more bytes in flight per program). Reads its [K / SPLIT_K,
    # BLOCK_N] slab of packed words once (the grid reads every word once), one row of scales (and
    # zeros) per group, and x's rows (from L2). Writes BLOCK_M x BLOCK_N outputs (or fp32 partials,
    # re-read once by the tile's last program). A thread holds its columns' words of every k: each
    # code is one FMA into the thread's fp32 sum over its group, sum_k x (magic + c), scaled once a
    # group (module docstring). SLICES > 1 (M = 1): the program's k-steps are cut again into SLICES runs of
    # whole groups, one a row ("lane") of its [SLICES, BLOCK_N] tiles (a warp's, or part of one), summed
    # through shared memory at the end: SPLIT_K * SLICES parts of K, only SPLIT_K of them through the workspace.
    # X_ASM (M = 1, x 16-byte aligned, a GPU): x by `_load_x_pairs`, no shared memory; int8 codes by PRMT
    # (`_byte_codes`). GROUP_SUMS (X_ASM, slices): a group's x sums by the warp's shuffles (`_group_x_sums`). UNROLL
    # (SLICES > 1): a group's k-steps unrolled, its scales loaded first. EVEN: every column, row of x and slice in range
    # (no masks, no predicated loads). W_STRIDE: N as a constexpr (0: at run time), the word rows' offsets immediates.
    # AHEAD (UNROLL): the words of AHEAD k-steps loaded at once, tied so that ptxas issues them all before the first
    # FMA (`_load_rows_tied`): a warp's bytes in flight AHEAD k-steps' words, not ~3-4 rows'.
    # PDL: launched as a programmatic dependent (`_support.await_previous`). PREFETCH (PDL, EVEN): the word rows of each
    # slice's first PREFETCH k-steps pulled into L2 before the wait (`_prefetch_rows`), so that a program made resident
    # in the previous kernel's tail keeps DRAM busy there; the words are constant (no kernel writes a packed weight it
    # is then multiplied by without a stream order between them), x and everything else are read after the wait.
    tl.static_assert(not GROUP_SUMS or (X_ASM and SLICES > 1))
    tl.static_assert(AHEAD == 0 or (UNROLL and (GROUP // BLOCK_K) % AHEAD == 0))
    tl.static_assert(SLICES == 1 or BLOCK_M == 1)
    tl.static_assert(not UNROLL or SLICES > 1)  # a split of K may cut a group; slices never do
    PACK: tl.constexpr = 32 // BITS  # codes per word
    WORDS: tl.constexpr = BLOCK_K // PACK  # word rows per k-step
    STEPS: tl.constexpr = GROUP // BLOCK_K  # k-steps per group
    LANES: tl.constexpr = BLOCK_M * SLICES  # rows of the tiles: x's rows, or the slices of K
    # x is loaded XW word rows (up to 32 values) at a time: a whole k-step of it at BLOCK_M = 4 spills
    XW: tl.constexpr = min(WORDS, max(1, 32 // (BLOCK_M * PACK)))
    # A lane's values: [LANES, 1] broadcast; with X_ASM (Triton gives [LANES, 1] tensors a layout of their own, which
    # costs a trip through shared memory at each use) those the tile uses (pointers, masks) as [LANES, BLOCK_N], and x
    # and its sums as [LANES, 32]: one copy a thread, which _spread hands to the thread's columns, no data moved.
    TW: tl.constexpr = BLOCK_N if X_ASM else 1
    LW: tl.constexpr = 32 if X_ASM else 1
    # the float a code reads as is magic + c: int8 by PRMT 32768 + c, else the code at bit 15 (256) or 19 (16)
    MAGIC15: tl.constexpr = 32768.0 if BITS == 8 and X_ASM else 256.0
    if W_STRIDE > 0:
        n_row = W_STRIDE
    else:
        n_row = N
    pid_n = tl.program_id(0)
    split = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = None if EVEN else (cols < N)[None, :]
    lanes = tl.arange(0, LANES)[:, None]
    k_steps = K // BLOCK_K
    if SLICES == 1:
        per_part = tl.cdiv(k_steps, SPLIT_K)
        t_start = split * per_part
        t_end = tl.minimum(t_start + per_part, k_steps)
    else:
        per_part = tl.cdiv(K // GROUP, SPLIT_K * SLICES) * STEPS  # whole groups a slice
        t_start = split * SLICES * per_part  # slice s: s * per_part steps further
        t_end = t_start + per_part
    # groups past slice 0's, in the tile's and in x's layout
    lane_groups = (lanes // BLOCK_M) * (per_part // STEPS) * (SLICES > 1) + tl.zeros([LANES, TW], tl.int32)
    x_lane_groups = (lanes // BLOCK_M) * (per_part // STEPS) * (SLICES > 1) + tl.zeros([LANES, LW], tl.int32)
    x_rows = lanes % BLOCK_M + tl.zeros([LANES, LW], tl.int32)
    w_step = w_ptr + tl.cast(t_start * WORDS, tl.int64) * n_row  # the k-step's first word row (of slice 0)
    w_lane = ((lane_groups * STEPS) * WORDS).to(tl.int64) * n_row + cols[None, :]  # the lane's words past w_step
    x_row = x_ptr + x_rows.to(tl.int64) * x_stride + (t_start + x_lane_groups * STEPS) * BLOCK_K
    x_ptrs = x_row if X_ASM else x_row + tl.arange(0, XW * PACK)[None, :]  # the tl.load of x's
    if PREFETCH > 0:  # slices are whole groups, EVEN none past K: every row prefetched is the program's
        tl.static_assert(PDL and EVEN and SLICES > 1 and PREFETCH <= STEPS)
        _prefetch_rows(w_ptr + pid_n * BLOCK_N, t_start * WORDS, per_part * WORDS, n_row, SLICES, PREFETCH * WORDS,
                       BLOCK_N * 4)
    await_previous(PDL)
    acc = tl.zeros([LANES, BLOCK_N], tl.float32)
    for g in range(t_start // STEPS, tl.cdiv(t_end, STEPS)):  # the groups this split's k-steps touch
        if EVEN:
            x_valid = None
        else:  # a slice past K reads nothing (adds 0)
            x_valid = (x_rows < M) & (g + x_lane_groups < K // GROUP)
        if SLICES == 1:  # the words and scales of [1, BLOCK_N]: every row of x shares them
            group_rows = g
            group_mask = col_mask  # (None when EVEN: not in a tuple, which takes tensors only)
        else:
            group_rows = g + lane_groups
            group_mask = col_mask if EVEN else col_mask & (group_rows < K // GROUP)
        dot = tl.zeros([LANES, BLOCK_N], tl.float32)
        # sum_k x over the codes at bit 15 (magic MAGIC15) and at bit 19 (16: odd int4 codes) in x's layout
        if GROUP_SUMS:
            sum15, sum19 = _group_x_sums(x_row, x_valid, GROUP, x_ptr.dtype.element_ty == tl.bfloat16)
            if BITS == 8:  # every int8 code at bit 15
                sum15 += sum19
                sum19 = tl.zeros([LANES, LW], tl.float32)
        else:
            sum15 = tl.zeros([LANES, LW], tl.float32)
            sum19 = tl.zeros([LANES, LW], tl.float32)
        if UNROLL:  # the group's k-steps in one block (slices: whole groups), for ptxas to issue loads early
            s, z = _scale_and_zero(s_ptr, z_ptr, group_rows, cols[None, :], group_mask, n_row, HAS_ZERO, BITS)
            loaded = None
            for step in tl.static_range(STEPS):
                if AHEAD > 0 and step % AHEAD == 0:  # magic15 > 0: its sign bit is an opaque 0
                    loaded = _load_rows_tied(w_step, w_lane, group_mask, n_row, magic15 >> 31, AHEAD * WORDS)
                dot, sum15, sum19, w_step, x_row, x_ptrs = _gemv_step(
                    w_step, w_lane, group_mask, x_row, x_ptrs, x_valid, dot, sum15, sum19, magic15, n_row, loaded,
                    BITS, WORDS, BLOCK_K, XW, X_ASM, not GROUP_SUMS, BLOCK_N, (step % max(AHEAD, 1)) * WORDS)
        else:
            for t in tl.range(tl.maximum(t_start, g * STEPS), tl.minimum(t_end, g * STEPS + STEPS),
                              num_stages=STAGES):
                dot, sum15, sum19, w_step, x_row, x_ptrs = _gemv_step(
                    w_step, w_lane, group_mask, x_row, x_ptrs, x_valid, dot, sum15, sum19, magic15, n_row, None,
                    BITS, WORDS, BLOCK_K, XW, X_ASM, not GROUP_SUMS, BLOCK_N, 0)
            s, z = _scale_and_zero(s_ptr, z_ptr, group_rows, cols[None, :], group_mask, n_row, HAS_ZERO, BITS)
        sum15 = _spread(sum15, BLOCK_N)
        sum19 = _spread(sum19, BLOCK_N)
        acc = tl.fma(s, dot - (sum15 * MAGIC15 + sum19 * 16.0 + z * (sum15 + sum19)), acc)
    if SLICES > 1:
        acc = tl.sum(acc, axis=0, keep_dims=True)  # the slices' sums, across warps through shared memory
    store_split_output(acc, tl.arange(0, BLOCK_M), cols, M, N, b_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr, pid_n,
                       split, SPLIT_K, HAS_BIAS, SUM_BATCH)


@triton.jit
def _mma_m16n8k16(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3, BF16: tl.constexpr):
    """One warp-wide mma.sync m16n8k16 (fp32 accumulators) from [LANES] tensors whose element e sits in lane e % 32
    of warp e // 32 (1-D blocked tensors): a0..a3 the lane's A fragment (16-bit pairs as int32), b0, b1 its B
    fragment, c0..c3 its accumulators. Inline PTX: on a GPU only."""
    if BF16:
        return tl.inline_asm_elementwise(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
            "{$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", [a0, a1, a2, a3, b0, b1, c0, c1, c2, c3],
            dtype=(tl.float32, tl.float32, tl.float32, tl.float32), is_pure=True, pack=1)
    else:
        return tl.inline_asm_elementwise(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
            "{$10, $11, $12, $13};", "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", [a0, a1, a2, a3, b0, b1, c0, c1, c2, c3],
            dtype=(tl.float32, tl.float32, tl.float32, tl.float32), is_pure=True, pack=1)


@triton.jit
def _code_pair(words, shift: tl.constexpr, BF16: tl.constexpr):
    """(magic + c_i, magic + c_{i+4}) as a pair of 16-bit floats, i = shift / 4, from int4 words: one LOP3 (mask |
    magic: bf16 0x4300 = 128, fp16 0x6400 = 1024; c lands in the mantissa's low bits, exact)."""
    if BF16:
        return tl.inline_asm_elementwise("lop3.b32 $0, $1, 0x000F000F, 0x43004300, 0xEA;", "=r,r", [words >> shift],
                                         dtype=tl.int32, is_pure=True, pack=1)
    else:
        return tl.inline_asm_elementwise("lop3.b32 $0, $1, 0x000F000F, 0x64006400, 0xEA;", "=r,r", [words >> shift],
                                         dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def _pair_halves(lo, hi, SELECT: tl.constexpr):
    """prmt: (lo.h0, hi.h0) for SELECT 0x5410, (lo.h1, hi.h1) for 0x7632."""
    if SELECT == 0x5410:
        return tl.inline_asm_elementwise("prmt.b32 $0, $1, $2, 0x5410;", "=r,r,r", [lo, hi], dtype=tl.int32,
                                         is_pure=True, pack=1)
    else:
        return tl.inline_asm_elementwise("prmt.b32 $0, $1, $2, 0x7632;", "=r,r,r", [lo, hi], dtype=tl.int32,
                                         is_pure=True, pack=1)


@triton.jit
def _mma_load(w_ptrs, s_ptrs, z_ptrs, row_step, col_mask4, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr,
              BF16: tl.constexpr):
    """A group's weights for the lane from its pointers (`_mma_tile_sum`): U = GROUP / 32 word rows (q, q + 4, ..:
    w_ptrs + u * row_step) of its 4 columns, the columns' scales and -(magic + z) (fp32). Columns past N are not
    loaded (their values, never stored, are whatever the registers held)."""
    words = ()
    for u in tl.static_range(GROUP // 32):
        words = words + (tl.load(w_ptrs + u * row_step, mask=col_mask4),)  # 16 B a lane
    s = tl.load(s_ptrs, mask=col_mask4).to(tl.float32)
    if HAS_ZERO:
        z = tl.load(z_ptrs, mask=col_mask4).to(tl.float32)
    else:
        z = tl.full(s.shape, 8.0, tl.float32)
    return words, s, -(128.0 if BF16 else 1024.0) - z


@triton.jit
def _mma_load_x(x_ptrs, NB: tl.constexpr, GROUP: tl.constexpr):
    """A group's x for the lane: for each of its word rows (q, q + 4, ..) the matching 8 values (4 int32 pairs) of
    each of its x rows (x_ptrs[nb], at word row q; entry u * NB + nb)."""
    xs = ()
    for u in tl.static_range(GROUP // 32):
        for nb in tl.static_range(NB):
            xs = xs + (tl.load(x_ptrs[nb] + 16 * u),)
    return xs


@triton.jit
def _mma_group(words, xs, NB: tl.constexpr, BF16: tl.constexpr):
    """One group's sums in fp32: the lane's 8 NB accumulators of sum_k x[n, k] (magic + c)[col, k] ((x rows block nb,
    m16 tile t, c0..c3) in that order) and its 2 NB of sum_k x[n, k] (block nb: x rows 2q, 2q + 1), the latter by an
    MMA with an A of ones (one a k16 step for every column, where a packed add of -(magic + z) to every code pair
    took 16 a k16 step)."""
    zero = tl.zeros([words[0].shape[0]], tl.float32)
    one = tl.full([words[0].shape[0]], 0x3F803F80 if BF16 else 0x3C003C00, tl.int32)
    acc = ()
    for i in tl.static_range(12 * NB):  # 8 NB sums, then 4 NB sums of x
        acc = acc + (zero,)
    for u in tl.static_range(len(words)):
        w0, w1, w2, w3 = _take(words[u], 0), _take(words[u], 1), _take(words[u], 2), _take(words[u], 3)
        for m in tl.static_range(2):  # codes 2m, 2m + 1, 2m + 4, 2m + 5 of the word: one k16 step
            a0 = (_code_pair(w0, 8 * m, BF16), _code_pair(w1, 8 * m, BF16), _code_pair(w0, 8 * m + 4, BF16),
                  _code_pair(w1, 8 * m + 4, BF16))  # tile 0: rows r, r + 8 = columns 4 r, 4 r + 1
            a1 = (_code_pair(w2, 8 * m, BF16), _code_pair(w3, 8 * m, BF16), _code_pair(w2, 8 * m + 4, BF16),
                  _code_pair(w3, 8 * m + 4, BF16))  # tile 1: columns 4 r + 2, 4 r + 3
            out = ()
            sums = ()
            for nb in tl.static_range(NB):
                xa = _take(xs[u * NB + nb], m)
                xb = _take(xs[u * NB + nb], m + 2)
                b0 = _pair_halves(xa, xb, 0x5410)  # (x[2m], x[2m + 4])
                b1 = _pair_halves(xa, xb, 0x7632)  # (x[2m + 1], x[2m + 5])
                out = out + _mma_m16n8k16(a0[0], a0[1], a0[2], a0[3], b0, b1, acc[8 * nb], acc[8 * nb + 1],
                                          acc[8 * nb + 2], acc[8 * nb + 3], BF16)
                out = out + _mma_m16n8k16(a1[0], a1[1], a1[2], a1[3], b0, b1, acc[8 * nb + 4], acc[8 * nb + 5],
                                          acc[8 * nb + 6], acc[8 * nb + 7], BF16)
                sums = sums + _mma_m16n8k16(one, one, one, one, b0, b1, acc[8 * NB + 4 * nb], acc[8 * NB + 4 * nb + 1],
                                            acc[8 * NB + 4 * nb + 2], acc[8 * NB + 4 * nb + 3], BF16)
            acc = out + sums
    sx = ()
    for nb in tl.static_range(NB):
        sx = sx + (acc[8 * NB + 4 * nb], acc[8 * NB + 4 * nb + 1])
    return acc[:8 * NB], sx


@triton.jit
def _mma_tile_sum(w_ptr, x32_ptr, s_ptr, z_ptr, N, x_stride32, g_start, g_end, q, cols4, col_mask4, x_rows,
                  GROUP: tl.constexpr, HAS_ZERO: tl.constexpr, BF16: tl.constexpr, NB: tl.constexpr,
                  X_AHEAD: tl.constexpr):
    """The lane's 8 NB fp32 accumulators (`_mma_group`'s order) of sum_k x (s (c - z)) over groups g_start ..
    g_end - 1 (g_start < g_end) of its columns `cols4`: per group s ((sum x (magic + c)) - (magic + z) sum x), the
    difference taken in one FMA. The next group's weights are loaded before this one's MMAs (in flight while they
    run; without, 30-50% slower on the H200), and its x too if X_AHEAD (else this group's x is loaded from L1 / L2
    when needed: 16 NB registers fewer, more programs an SM). Every load is in bounds: the group after the last
    loads the last again (an L1 / L2 hit) rather than masking (a masked load first zeroes its registers)."""
    acc = ()
    for i in tl.static_range(8 * NB):
        acc = acc + (tl.zeros(q.shape, tl.float32),)
    row_step = 4 * N  # word rows q + 4 u
    group_step = (GROUP // 8) * N
    w_ptrs = w_ptr + (g_start * (GROUP // 8) + q).to(tl.int64)[:, None] * N + cols4
    s_ptrs = s_ptr + g_start.to(tl.int64) * N + cols4
    z_ptrs = z_ptr + g_start.to(tl.int64) * N + cols4
    x_ptrs = ()
    for nb in tl.static_range(NB):
        x_ptrs = x_ptrs + (x32_ptr + x_rows[nb][:, None] * x_stride32 + 4 * (g_start * (GROUP // 8) + q)[:, None]
                           + tl.arange(0, 4)[None, :],)
    ahead = _mma_load(w_ptrs, s_ptrs, z_ptrs, row_step, col_mask4, GROUP, HAS_ZERO, BF16)
    if X_AHEAD:
        x_ahead = _mma_load_x(x_ptrs, NB, GROUP)
    for g in range(g_start, g_end):
        words, s, neg_magic_zero = ahead
        if X_AHEAD:
            xs = x_ahead
        else:
            xs = _mma_load_x(x_ptrs, NB, GROUP)
        more = (g + 1 < g_end).to(tl.int32)  # 0 at the last group: it loads itself again
        w_ptrs += more * group_step
        s_ptrs += more * N
        z_ptrs += more * N
        for nb in tl.static_range(NB):
            x_ptrs = x_ptrs[:nb] + (x_ptrs[nb] + more * (4 * (GROUP // 8)),) + x_ptrs[nb + 1:]
        ahead = _mma_load(w_ptrs, s_ptrs, z_ptrs, row_step, col_mask4, GROUP, HAS_ZERO, BF16)
        if X_AHEAD:
            x_ahead = _mma_load_x(x_ptrs, NB, GROUP)
        part, sx = _mma_group(words, xs, NB, BF16)
        scaled = ()
        for i in tl.static_range(8 * NB):  # c0, c1: column 4 r + 2 t; c2, c3: 4 r + 2 t + 1 (tile t = i // 4 % 2)
            col = (i % 8) // 2  # and c0, c2: x row 2 q of block nb = i // 8; c1, c3: 2 q + 1
            exact = tl.fma(_take(neg_magic_zero, col), sx[2 * (i // 8) + i % 2], part[i])
            scaled = scaled + (tl.fma(_take(s, col), exact, acc[i]),)
        acc = scaled
    return acc


@triton.jit(do_not_specialize=["programs"])  # compiled (prepare) before `programs` is known
def _qgemv_mma_kernel(x_ptr, w_ptr, s_ptr, z_ptr, b_ptr, out_ptr, ws_ptr, cnt_ptr, M, N, K, x_stride, out_stride,
                      programs, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr, HAS_BIAS: tl.constexpr,
                      BF16: tl.constexpr, SUM_BATCH: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      X_AHEAD: tl.constexpr, PDL: tl.constexpr):
    # int4, M <= BLOCK_M (8 or 16: the MMA's n, once or twice), x 16-bit with rows 16-byte aligned. A warp owns 32
    # columns (lane L = 4 r + q: columns 4 r .. 4 r + 3 of the warp's, word rows q, q + 4, ..) as two m16 tiles of
    # mma.sync (tile t: MMA row r = column 4 r + 2 t, row r + 8 = column 4 r + 2 t + 1); k inside a k16 step is
    # permuted so that a lane's A fragment comes from its own words (codes 2m, 2m+1, 2m+4, 2m+5 of word rows 4u +
    # 0..3) and its B fragment (x row r, and r + 8) from one 16-byte load of x. Stream-K as _qgemm_kernel's: the
    # tiles (BLOCK_N columns) x groups units of work shared evenly by `programs` >= tiles programs (one wave of
    # as many as the SMs hold, or one a tile), a program's range meeting at most two tiles. Reads its
    # [groups, BLOCK_N] slab of words once (16 B a lane a word row), a row of scales and zeros a group, x from L2.
    # Writes BLOCK_M x BLOCK_N outputs or fp32 partials (store_split_output).
    LANES: tl.constexpr = BLOCK_N  # a lane a column: 4 columns x 4 word rows for 4 lanes
    NB: tl.constexpr = BLOCK_M // 8
    WARPS: tl.constexpr = LANES // 32
    lane = tl.arange(0, LANES)
    r = (lane % 32) // 4
    q = lane % 4
    # B column n of block nb = x row 8 nb + r; rows past M repeat the last (their outputs are not stored)
    x_rows = ()
    for nb in tl.static_range(NB):
        x_rows = x_rows + (tl.minimum(8 * nb + r, M - 1).to(tl.int64),)
    x32_ptr = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    x_stride32 = x_stride // 2
    groups = K // GROUP
    total = tl.cast(tl.cdiv(N, BLOCK_N), tl.int64) * groups
    await_previous(PDL)
    pid = tl.program_id(0)
    u = (pid * total // programs).to(tl.int32)  # int32 (fewer registers live across the loop): total < 2^31
    u_end = ((pid + 1) * total // programs).to(tl.int32)
    for _ in tl.static_range(2):  # programs >= tiles: a program's range meets at most two tiles
        if u < u_end:
            tile = u // groups
            g_start = u - tile * groups
            g_end = tl.minimum(groups, g_start + (u_end - u))
            col0 = tile * LANES + (lane // 32) * 32 + 4 * r  # the lane's first column
            cols4 = col0[:, None] + tl.arange(0, 4)[None, :]
            acc = _mma_tile_sum(w_ptr, x32_ptr, s_ptr, z_ptr, N, x_stride32, g_start, g_end, q, cols4, cols4 < N,
                                x_rows, GROUP, HAS_ZERO, BF16, NB, X_AHEAD)
            # lane (r, q), block nb, tile t: c0 / c1 = column 4 r + 2 t, x rows 8 nb + 2q / + 1; c2 / c3 = column
            # 4 r + 2 t + 1
            blocks = ()
            for nb in tl.static_range(NB):
                a = acc[8 * nb: 8 * nb + 8]
                blocks = blocks + (tl.join(tl.join(tl.join(a[0], a[1]), tl.join(a[2], a[3])),
                                           tl.join(tl.join(a[4], a[5]), tl.join(a[6], a[7]))),)  # [LANES, nl, e, t]
            if NB == 1:
                out = tl.reshape(blocks[0], (WARPS, 8, 4, 2, 2, 2))  # warp, r, q, nl, e, t
                out = tl.reshape(tl.permute(out, (2, 3, 0, 1, 5, 4)), (8, LANES))  # [x row, col 32 w + 4 r + 2 t + e]
            else:
                out = tl.reshape(tl.join(blocks[0], blocks[1]), (WARPS, 8, 4, 2, 2, 2, 2))  # .., t, nb
                out = tl.reshape(tl.permute(out, (6, 2, 3, 0, 1, 5, 4)), (16, LANES))
            # the tile's pieces: programs from the owner of its first unit to the owner of its last one
            first = ((tile.to(tl.int64) * groups + 1) * programs - 1) // total
            last = ((tile.to(tl.int64) + 1) * groups * programs - 1) // total
            store_split_output(out, tl.arange(0, BLOCK_M), tile * LANES + tl.arange(0, LANES), M, N, b_ptr, out_ptr,
                               out_stride, ws_ptr, cnt_ptr, tile, pid - first, last - first + 1, HAS_BIAS, SUM_BATCH)
            u += g_end - g_start


@triton.jit
def _dequant_tile(w_ptr, s_ptr, z_ptr, k0, cols, col_mask, N, magic15, BITS: tl.constexpr, GROUP: tl.constexpr,
                  HAS_ZERO: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """W^T[k0 : k0 + BLOCK_K, cols] as fp32 s * (c - z) = (magic + c) * s - (z + magic) * s: one FMA a
    code, exact for bf16 and fp16 scales (every product fits 24 bits). BLOCK_K divides GROUP."""
    PACK: tl.constexpr = 32 // BITS
    word_rows = k0 // PACK + tl.arange(0, BLOCK_K // PACK)
    idx = tl.arange(0, PACK)[None, :, None]
    words = tl.load(w_ptr + word_rows[:, None, None].to(tl.int64) * N + cols[None, None, :],
                    mask=col_mask[None, None, :], other=0)  # [WORDS, 1, BLOCK_N]
    codes, magic = _unpack(words, idx, magic15, BITS)
    s, z = _scale_and_zero(s_ptr, z_ptr, k0 // GROUP, cols, col_mask, N, HAS_ZERO, BITS)
    offset = -(z[None, None, :] + magic) * s[None, None, :]
    return tl.reshape(codes * s[None, None, :] + offset, (BLOCK_K, BLOCK_N))


@triton.jit
def _neg_magic_zero_pair(z, BF16: tl.constexpr):
    """The int32 bits of the 16-bit float pair (-(magic + z), -(magic + z)) for int32 zero points z < 128 (bf16
    magic 128 = 0x4300, fp16 1024 = 0x6400; exact): what a packed add takes to turn magic + c into c - z."""
    MAGIC: tl.constexpr = 0x4300 if BF16 else 0x6400
    return (z + (MAGIC | 0x8000)) * 0x10001


@triton.jit
def _pair_of(s):
    """(s, s): a 16-bit float twice, as the int32 bits a packed (x2) instruction takes."""
    return (s.to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF) * 0x10001


@triton.jit
def _pair_values(pairs, DTYPE: tl.constexpr):
    """int32 pairs of 16-bit floats of DTYPE as [..., 2] (low half first)."""
    return tl.join(pairs.to(tl.int16).to(DTYPE, bitcast=True), (pairs >> 16).to(tl.int16).to(DTYPE, bitcast=True))


def _int8_pair_asm(fma: bool, dtype: str) -> tl.constexpr:
    """PTX of `_dequant_pairs`' int8 pair: $1 a word shifted so that the pair's codes are bytes 0 and 2, $2 the
    column's float32 scale s, $3 -(32768 + z) s (fma) or -(32768 + z), $4 0x47000000; $0 the two 16-bit floats."""
    math = ["fma.rn.f32 {r}, {r}, $2, $3;"] if fma else ["add.rn.f32 {r}, {r}, $3;", "mul.rn.f32 {r}, {r}, $2;"]
    lines = ["{ .reg .b32 lo, hi;", "prmt.b32 lo, $1, $4, 0x7504;", "prmt.b32 hi, $1, $4, 0x7524;"]
    lines += [m.format(r=r) for r in ("lo", "hi") for m in math] + [f"cvt.rn.{dtype}.f32 $0, hi, lo; }}"]
    return tl.constexpr(" ".join(lines))


_I8_FMA_BF16, _I8_FMA_F16 = _int8_pair_asm(True, "bf16x2"), _int8_pair_asm(True, "f16x2")
_I8_ADD_MUL_BF16, _I8_ADD_MUL_F16 = _int8_pair_asm(False, "bf16x2"), _int8_pair_asm(False, "f16x2")


@triton.jit
def _dequant_pairs(words, s, z, magic15, BITS: tl.constexpr, HAS_ZERO: tl.constexpr, DTYPE: tl.constexpr,
                   PAIRED_ASM: tl.constexpr):
    """s * (c - z) rounded once to DTYPE for the codes of `words` [WORDS, BLOCK_N], with the group's
    scales s (16-bit floats for PAIRED_ASM) and zero points z (uint8) of the columns [BLOCK_N], as
    [WORDS, BLOCK_N, P / 2, 2] (P codes a word): element (j, n, i, h) is code i + h P / 2 of word j,
    so that a 32-bit register holds two codes one mask extracts together.
    PAIRED_ASM (s in DTYPE, on a GPU; inline PTX): int4: one LOP3 turns a shifted word into the two
    16-bit floats magic + c (bf16 0x4300 = 128, fp16 0x6400 = 1024: c lands in the mantissa's low
    bits), a packed add subtracts magic + z (exact) and a packed multiply scales (rounded once); int8
    (8-bit codes do not fit a bf16 magic): each of the pair's codes by one PRMT into bits 8-15 of 32768.0
    (from magic15 + 0x03800000: a register, not a constant ptxas would fold, which made it spend a move a
    code), one float32 fma with s and -(32768 + z) s (bf16: both products exact; fp16: an add, then a
    multiply), one cvt rounding the pair. Else (the interpreter, scales of another dtype): the float32 FMA
    of `_dequant_tile`, rounded: the same values."""
    PACK: tl.constexpr = 32 // BITS
    HALF: tl.constexpr = PACK // 2
    if HAS_ZERO:
        z = z.to(tl.int32)
    else:
        z = tl.full(s.shape, 2 ** (BITS - 1), tl.int32)
    if PAIRED_ASM and BITS == 8:
        shifted = words[:, :, None] >> (8 * tl.arange(0, HALF))[None, None, :]  # codes i, i + 2 at bits 0, 16
        s32 = s.to(tl.float32)
        magic_z = 32768.0 + z.to(tl.float32)
        FMA: tl.constexpr = s.dtype == tl.bfloat16  # both products exact: one fma; else an add, then a multiply
        args = [shifted, s32[None, :, None], (-magic_z * s32 if FMA else -magic_z)[None, :, None],
                tl.full(shifted.shape, 0, tl.int32) + (magic15 + 0x03800000)]  # 0x47000000: 32768.0
        if FMA:
            if DTYPE == tl.bfloat16:
                pairs = tl.inline_asm_elementwise(_I8_FMA_BF16, "=r,r,r,r,r", args, dtype=tl.int32, is_pure=True,
                                                  pack=1)
            else:
                pairs = tl.inline_asm_elementwise(_I8_FMA_F16, "=r,r,r,r,r", args, dtype=tl.int32, is_pure=True,
                                                  pack=1)
        else:
            if DTYPE == tl.bfloat16:
                pairs = tl.inline_asm_elementwise(_I8_ADD_MUL_BF16, "=r,r,r,r,r", args, dtype=tl.int32,
                                                  is_pure=True, pack=1)
            else:
                pairs = tl.inline_asm_elementwise(_I8_ADD_MUL_F16, "=r,r,r,r,r", args, dtype=tl.int32,
                                                  is_pure=True, pack=1)
        return _pair_values(pairs, DTYPE)
    elif PAIRED_ASM:
        s_pair = _pair_of(s)
        neg_zero_pair = _neg_magic_zero_pair(z, DTYPE == tl.bfloat16)
        shifted = words[:, :, None] >> (4 * tl.arange(0, HALF))[None, None, :]  # codes i, i + 4 at bits 0, 16
        args = [shifted, neg_zero_pair[None, :, None], s_pair[None, :, None]]
        if DTYPE == tl.bfloat16:
            pairs = tl.inline_asm_elementwise(
                "{ .reg .b32 v, one, neg0; lop3.b32 v, $1, 0x000F000F, 0x43004300, 0xEA; mov.b32 one, 0x3F803F80; "
                "mov.b32 neg0, 0x80008000; fma.rn.bf16x2 v, v, one, $2; fma.rn.bf16x2 $0, v, $3, neg0; }",
                "=r,r,r,r", args, dtype=tl.int32, is_pure=True, pack=1)
        else:
            pairs = tl.inline_asm_elementwise(
                "{ .reg .b32 v, one, neg0; lop3.b32 v, $1, 0x000F000F, 0x64006400, 0xEA; mov.b32 one, 0x3C003C00; "
                "mov.b32 neg0, 0x80008000; fma.rn.f16x2 v, v, one, $2; fma.rn.f16x2 $0, v, $3, neg0; }",
                "=r,r,r,r", args, dtype=tl.int32, is_pure=True, pack=1)
        return _pair_values(pairs, DTYPE)
    else:
        idx = tl.arange(0, HALF)[:, None] + HALF * tl.arange(0, 2)[None, :]
        codes, magic = _unpack(words[:, :, None, None], idx[None, None, :, :], magic15, BITS)
        s = s.to(tl.float32)[None, :, None, None]
        offset = -(z.to(tl.float32)[None, :, None, None] + magic) * s
        return (codes * s + offset).to(DTYPE)


@triton.jit
def _qgemm_tile(x_ptr, w_ptr, s_ptr, z_ptr, M, N, K, x_stride, magic15, rows, cols, t_start, t_end,
                BITS: tl.constexpr, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SWAP_AB: tl.constexpr, PAIRED_ASM: tl.constexpr):
    """The fp32 [BLOCK_M, BLOCK_N] sum of x[rows, k] W[cols, k] over the k-steps t_start .. t_end - 1.
    Reads that [K-range, BLOCK_N] slab of packed words once and the [BLOCK_M, K-range] slab of x.
    SWAP_AB: W x^T, the dequantized tile the MMA's A operand (from registers; BLOCK_M may be 16);
    else x W^T, the tile its B operand (stored once to shared memory; BLOCK_M >= 64 on Hopper)."""
    PACK: tl.constexpr = 32 // BITS
    HALF: tl.constexpr = PACK // 2
    WORDS: tl.constexpr = BLOCK_K // PACK
    col_mask = cols < N
    ks = tl.arange(0, BLOCK_K)
    k_steps = K // BLOCK_K
    if SWAP_AB:
        # The MMA's A operand is W's tile with k and n permuted (x^T's rows permuted alike, the
        # output's columns back): a thread of the wgmma A layout holds k' = 2 q + {0, 1} (+ 8 r) for
        # its lane's q = lane % 4, and rows n' = a, a + 8 (+ 16 r) for a = lane / 4. With word row
        # j = jq + 4 jr, code k = P j + i + h P / 2 goes to k' = h + 2 jq + 8 i + 4 P jr: a thread
        # holds whole words and (h) the pair of codes one LOP3 (int8: two PRMT) extracts; column 16 b + 2 a + r
        # goes to n' = 16 b + 8 r + a: a thread's two rows are adjacent columns (one 8-byte load).
        JR: tl.constexpr = WORDS // 4
        # x^T [BLOCK_K, BLOCK_M]
        x_ptrs = x_ptr + rows[None, :].to(tl.int64) * x_stride + (t_start * BLOCK_K + ks)[:, None]
        x_mask = rows[None, :] < M
        w_ptrs = w_ptr + (t_start * WORDS + tl.arange(0, WORDS))[:, None].to(tl.int64) * N + cols[None, :]
        g = t_start * BLOCK_K // GROUP
        s = tl.load(s_ptr + g * N + cols, mask=col_mask, other=0.0)
        z = tl.load(z_ptr + g * N + cols, mask=col_mask, other=0) if HAS_ZERO else s
        acc = tl.zeros([BLOCK_N, BLOCK_M], tl.float32)
        for t in range(t_start, t_end):
            # the next k-tile's scales and zeros (in flight while this one is dequantized; the last
            # k-tile's are loaded again)
            g_next = tl.minimum(t + 1, k_steps - 1) * BLOCK_K // GROUP
            s_next = tl.load(s_ptr + g_next * N + cols, mask=col_mask, other=0.0)
            z_next = tl.load(z_ptr + g_next * N + cols, mask=col_mask, other=0) if HAS_ZERO else s_next
            words = tl.load(w_ptrs, mask=col_mask[None, :], other=0)
            xt = tl.load(x_ptrs, mask=x_mask, other=0.0)
            pairs = _dequant_pairs(words, s, z, magic15, BITS, HAS_ZERO, xt.dtype, PAIRED_ASM)
            w = tl.reshape(pairs, (JR, 4, BLOCK_N // 16, 8, 2, HALF, 2))  # jr, jq, b, a, r, i, h
            # n' = (b, r, a), k' = (jr, i, jq, h)
            w = tl.reshape(tl.permute(w, (2, 4, 3, 0, 5, 1, 6)), (BLOCK_N, BLOCK_K))
            xt = tl.reshape(xt, (JR, 4, 2, HALF, BLOCK_M))  # jr, jq, h, i
            xt = tl.reshape(tl.permute(xt, (0, 3, 1, 2, 4)), (BLOCK_K, BLOCK_M))
            acc = tl.dot(w, xt, acc)  # [BLOCK_N, BLOCK_M] += W x^T
            s, z = s_next, z_next
            w_ptrs += WORDS * N
            x_ptrs += BLOCK_K
        acc = tl.reshape(tl.trans(acc), (BLOCK_M, BLOCK_N // 16, 2, 8))  # columns n' = (b, r, a)
        acc = tl.reshape(tl.permute(acc, (0, 1, 3, 2)), (BLOCK_M, BLOCK_N))
    else:
        x_ptrs = x_ptr + rows[:, None].to(tl.int64) * x_stride + ks[None, :]  # x tile [BLOCK_M, BLOCK_K]
        x_mask = rows[:, None] < M
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for t in range(t_start, t_end):
            k0 = t * BLOCK_K
            w = _dequant_tile(w_ptr, s_ptr, z_ptr, k0, cols, col_mask, N, magic15, BITS, GROUP, HAS_ZERO, BLOCK_K,
                              BLOCK_N)
            xt = tl.load(x_ptrs + k0, mask=x_mask, other=0.0)
            acc = tl.dot(xt, w.to(xt.dtype), acc)  # [BLOCK_M, BLOCK_N] += x W^T
    return acc


@triton.jit(do_not_specialize=["programs"])  # compiled (prepare) before `programs` is known
def _qgemm_kernel(x_ptr, w_ptr, s_ptr, z_ptr, b_ptr, out_ptr, ws_ptr, cnt_ptr, M, N, K, x_stride, out_stride,
                  magic15, programs, BITS: tl.constexpr, GROUP: tl.constexpr, HAS_ZERO: tl.constexpr,
                  HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  SWAP_AB: tl.constexpr, PAIRED_ASM: tl.constexpr, SUM_BATCH: tl.constexpr, PDL: tl.constexpr):
    # Stream-K over a grid of P = `programs` >= tiles programs (one wave of as many as the SMs hold at
    # once, or one a tile where the tiles are more). The T = tiles * k-steps units of work, tile-major
    # (the M tiles of one N tile adjacent, sharing its weights through L2), are shared evenly: program p
    # takes units [p T / P, (p + 1) T / P), at most one tile's worth, so at most two tiles' pieces. So
    # every program ends together, where a grid of whole tiles (or of equal splits of K) leaves its last
    # wave part-empty: at M = 16, 28672 x 8192, 896 split-K programs are 1.4 waves of 5 programs an SM.
    # Each piece of a tile is summed by store_split_output (a tile's pieces are those of consecutive
    # programs). (Unrolled twice, not a loop over pieces: in a loop ptxas took 128 registers, not 95.)
    # Reads the packed words once and x's slabs once per N tile; writes each output once, plus fp32
    # partials for the tiles cut between programs. PDL: `_support.await_previous`.
    await_previous(PDL)
    pid = tl.program_id(0)
    m_tiles = tl.cdiv(M, BLOCK_M)
    k_steps = K // BLOCK_K
    total = tl.cast(m_tiles * tl.cdiv(N, BLOCK_N), tl.int64) * k_steps
    u = pid * total // programs
    u_end = (pid + 1) * total // programs
    for _ in tl.static_range(2):  # programs >= tiles: a program's range meets at most two tiles
        if u < u_end:
            tile = (u // k_steps).to(tl.int32)
            t_start = (u - tile * k_steps).to(tl.int32)
            t_end = tl.minimum(k_steps, t_start + (u_end - u)).to(tl.int32)
            rows = (tile % m_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = (tile // m_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)
            acc = _qgemm_tile(x_ptr, w_ptr, s_ptr, z_ptr, M, N, K, x_stride, magic15, rows, cols, t_start, t_end, BITS,
                              GROUP, HAS_ZERO, BLOCK_M, BLOCK_N, BLOCK_K, SWAP_AB, PAIRED_ASM)
            # the tile's pieces: programs from the owner of its first unit to the owner of its last one
            # (unit v belongs to program ((v + 1) P - 1) // T)
            first = ((tile.to(tl.int64) * k_steps + 1) * programs - 1) // total
            last = ((tile.to(tl.int64) + 1) * k_steps * programs - 1) // total
            store_split_output(acc, rows, cols, M, N, b_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr, tile, pid - first,
                               last - first + 1, HAS_BIAS, SUM_BATCH)
            u += t_end - t_start


@triton.jit
def _dequantize_kernel(w_ptr, s_ptr, z_ptr, out_ptr, N, K, magic15, BITS: tl.constexpr, GROUP: tl.constexpr,
                       HAS_ZERO: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    # Reads each packed word and each group's scales (and zeros) once; writes W [N, K] once.
    k0 = tl.program_id(0) * BLOCK_K
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    wt = _dequant_tile(w_ptr, s_ptr, z_ptr, k0, cols, col_mask, N, magic15, BITS, GROUP, HAS_ZERO, BLOCK_K, BLOCK_N)
    ks = k0 + tl.arange(0, BLOCK_K)
    tl.store(out_ptr + cols[None, :].to(tl.int64) * K + ks[:, None], wt.to(out_ptr.dtype.element_ty),
             mask=col_mask[None, :])

# ---------------------------------------------------------------------------------------------
# The quantized weight


@dataclass(frozen=True)
class QuantizedWeight:
    """A weight quantized by `quantize_weight` (layout in the module docstring)."""

    packed: torch.Tensor  # int32 [K * bits / 32, N]
    scales: torch.Tensor  # [K / group_size, N]
    zeros: Optional[torch.Tensor]  # uint8 [K / group_size, N], None when symmetric
    bits: int
    group_size: int
    shape: tuple[int, int]  # (N, K) = (out_features, in_features)
    dtype: torch.dtype  # the original weight's

    @property
    def symmetric(self) -> bool:
        return self.zeros is None

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.packed, self.scales, self.zeros) if t is not None)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The [N, K] weight s * (c - z): exact in float32 (the default), rounded once otherwise."""
        return dequantize(self.packed, self.scales, self.zeros, self.bits, self.group_size, dtype)

    def to(self, device) -> "QuantizedWeight":
        move = lambda t: t if t is None else t.to(device)  # noqa: E731
        return QuantizedWeight(move(self.packed), move(self.scales), move(self.zeros), self.bits, self.group_size,
                               self.shape, self.dtype)


def _check_format(bits, group_size) -> None:
    if bits not in BITS:
        raise ValueError(f"bits must be 4 or 8, got {bits!r}")
    if group_size not in GROUP_SIZES:
        raise ValueError(f"group_size must be one of {', '.join(map(str, GROUP_SIZES))}, got {group_size!r}")


def _round_up(s: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Non-negative fp32 scales rounded up to `dtype`: the grid then spans the whole group (rounded to
    nearest, a scale can shrink the range and clip the group's extremes by up to 2^bits * 2^-9 steps)."""
    rounded = s.to(dtype)
    if dtype == torch.float32:
        return rounded
    next_up = (rounded.view(torch.int16) + 1).view(dtype)  # the next 16-bit float up, for s >= 0
    return torch.where(rounded.float() < s, next_up, rounded)


def quantize_weight(w: torch.Tensor, bits: int = 4, group_size: int = 128, symmetric: bool = False,
                    scale_dtype: Optional[torch.dtype] = None) -> QuantizedWeight:
    """Quantize an nn.Linear weight w [N, K] group-wise along K (see the module docstring). Scales are
    kept in `scale_dtype` (default: w's dtype, bfloat16 for float32 w). Runs once, off the hot path."""
    w = w.detach()
    check_float("w", w)
    _check_format(bits, group_size)
    if w.dim() != 2:
        raise ValueError(f"w must be 2-D [out_features, in_features], got shape {tuple(w.shape)}")
    N, K = w.shape
    if K == 0 or K % group_size:
        raise ValueError(f"w's in_features (K={K}) must be a positive multiple of group_size={group_size}")
    scale_dtype = scale_dtype or (w.dtype if w.dtype in HALF_DTYPES else torch.bfloat16)
    if scale_dtype not in FLOAT_DTYPES:
        raise TypeError(f"scale_dtype must be float16, bfloat16 or float32, got {scale_dtype}")
    if not bool(torch.isfinite(w).all()):
        raise ValueError("w has non-finite values (inf or NaN)")
    top = 2**bits - 1
    # float64: the scale before rounding is exact enough that rounding it up is never a float32 ulp of
    # division error (GPU fp32 division is not correctly rounded)
    wg = w.double().reshape(N, K // group_size, group_size)
    if symmetric:
        s = wg.abs().amax(-1) / (2 ** (bits - 1) - 1)
    else:
        lo = wg.amin(-1).clamp(max=0)
        s = (wg.amax(-1).clamp(min=0) - lo) / top
    s = _round_up(s, scale_dtype)
    s = torch.where(s == 0, torch.ones_like(s), s).float()  # an all-zero (or underflowing) group
    z = torch.full_like(s, 2 ** (bits - 1)) if symmetric else torch.round(-lo / s).clamp(0, top)
    codes = (torch.round(wg / s[..., None]) + z[..., None]).clamp(0, top).to(torch.int64)
    pack = 32 // bits
    shifts = torch.arange(pack, device=w.device) * bits
    words = (codes.reshape(N, K // pack, pack) << shifts).sum(-1)  # < 2^32, as int64
    words = torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)
    return QuantizedWeight(packed=words.t().contiguous(), scales=s.t().to(scale_dtype).contiguous(),
                           zeros=None if symmetric else z.t().to(torch.uint8).contiguous(),
                           bits=bits, group_size=group_size, shape=(N, K), dtype=w.dtype)


def unpack_codes(packed: torch.Tensor, bits: int) -> torch.Tensor:
    """The codes c as int32 [K, N] (plain PyTorch)."""
    pack = 32 // bits
    shifts = torch.arange(pack, device=packed.device, dtype=torch.int32) * bits
    codes = (packed[:, None, :] >> shifts[None, :, None]) & (2**bits - 1)
    return codes.reshape(-1, packed.shape[1])


def dequantize_reference(packed, scales, zeros, bits, group_size, dtype=torch.float32) -> torch.Tensor:
    """dequantize in plain PyTorch: W [N, K] = s * (c - z), computed exactly in float32."""
    codes = unpack_codes(packed, bits).float()
    s = scales.float().repeat_interleave(group_size, dim=0)
    z = 2.0 ** (bits - 1) if zeros is None else zeros.float().repeat_interleave(group_size, dim=0)
    return (s * (codes - z)).t().to(dtype)


def dequantize(packed, scales, zeros, bits, group_size, dtype=torch.float32) -> torch.Tensor:
    """W [N, K] = s * (c - z) in `dtype` (exact in float32), by `_dequantize_kernel` where kernels run."""
    _check_weight(packed, scales, zeros, bits, group_size)
    return _dequantize(packed, scales, zeros, bits, group_size, dtype)


def _dequantize(packed, scales, zeros, bits, group_size, dtype) -> torch.Tensor:
    """dequantize on tensors already checked (quant_matmul's dequantize + cuBLAS path)."""
    if not runs_kernel(packed):
        return dequantize_reference(packed, scales, zeros, bits, group_size, dtype)
    K, N = packed.shape[0] * 32 // bits, packed.shape[1]
    out = torch.empty((N, K), device=packed.device, dtype=dtype)
    block_k = min(DEQUANT_BLOCK_K, group_size)
    if out.numel():
        launch(_dequantize_kernel, (K // block_k, cdiv(N, DEQUANT_BLOCK_N)), packed, scales,
               packed if zeros is None else zeros, out, N, K, MAGIC15, BITS=bits, GROUP=group_size,
               HAS_ZERO=zeros is not None, BLOCK_K=block_k, BLOCK_N=DEQUANT_BLOCK_N, num_warps=4)
    return out

# ---------------------------------------------------------------------------------------------
# quant_matmul: checks, the custom op


def _quant_matmul_fake(x, packed, scales, zeros, bias, bits, group_size):
    return x.new_empty((*x.shape[:-1], packed.shape[1]))


def _gemv_extents(params: dict, split: int, M: int, N: int, K: int, group_size: int) -> dict:
    """`_qgemv_kernel`'s EVEN (every column, row of x and slice in range: no masks; no slice past K when the groups
    split evenly over SPLIT_K * SLICES), W_STRIDE (N compiled in where the word rows' offsets are static: a compile
    per N, for the M = 1 candidates) and GROUP_SUMS (x's sums by `_group_x_sums`: its shuffles take a slice to be
    one warp's, its 32 threads along the columns, as Triton lays out a slice a warp of 128 columns or more)."""
    even = (N % params["BLOCK_N"] == 0 and M == params["BLOCK_M"]
            and (params["SLICES"] == 1 or (K // group_size) % (split * params["SLICES"]) == 0))
    group_sums = (params["X_ASM"] and params["SLICES"] > 1 and params["SLICES"] == params["num_warps"]
                  and params["BLOCK_N"] >= 128)
    return dict(EVEN=even, W_STRIDE=N if params["X_ASM"] or params["UNROLL"] else 0, GROUP_SUMS=group_sums)


def _launch_path(config: dict, rows, packed, scales, zeros, bias, out, bits: int, group_size: int,
                 prepared: Optional[Launch] = None) -> Optional[Launch]:
    """Run one candidate, the GEMV (split-K) or a tensor-core kernel (stream-K), writing out; through
    `prepared` when a plan kept the Launch of an earlier call. Returns the Launch used."""
    params = dict(config)
    path = params.pop("path")
    M, K = rows.shape
    N = out.shape[1]
    tiles = cdiv(N, params["BLOCK_N"])
    args = [rows, packed, scales, packed if zeros is None else zeros, out if bias is None else bias, out, out,
            packed, M, N, K, rows.stride(0), out.stride(0), MAGIC15]
    consts = dict(BITS=bits, GROUP=group_size, HAS_ZERO=zeros is not None, HAS_BIAS=bias is not None)
    # fp32 of a partial a thread holds (a sum over slices is in every warp)
    per_thread = max(1, params["BLOCK_M"] * params["BLOCK_N"] // (32 * (1 if params.get("SLICES", 1) > 1 else
                                                                        params["num_warps"])))
    consts["SUM_BATCH"] = max(1, SUM_REGS[path] // per_thread)
    consts.update(pdl_options(rows, path in PDL_PATHS))
    if path == "gemv":
        params.setdefault("SLICES", 1)  # a choice cached before slices
        params.setdefault("UNROLL", False)
        params.setdefault("AHEAD", 0)
        params.setdefault("PREFETCH", 0)
        # x by inline PTX: on a GPU, one row of x 16-byte aligned (as the plans' alignment_key tells)
        params["X_ASM"] = (params.get("X_ASM", False) and rows.is_cuda and not interpreting() and M == 1
                           and rows.data_ptr() % 16 == 0)
        kernel, pieces = _qgemv_kernel, params.pop("SPLIT_K")
        grid = (tiles, pieces)
        consts["SPLIT_K"] = pieces
        consts.update(_gemv_extents(params, pieces, M, N, K, group_size))
        if not (consts["PDL"] and consts["EVEN"] and params["SLICES"] > 1):
            params["PREFETCH"] = 0  # (the interpreter, another GPU, ragged shapes)
    else:
        sms = num_sms(rows.device.index if rows.is_cuda else -1)
        if path == "mma":
            kernel, units = _qgemv_mma_kernel, tiles * (K // group_size)
            del args[-1], consts["BITS"]  # int4 only, no magic argument
            consts["BF16"] = rows.dtype == torch.bfloat16
        else:
            kernel = _qgemm_kernel
            # inline PTX (bf16x2 / f16x2: sm_80 or later) on a GPU only; int4's rounds once with scales in x's dtype,
            # int8's with any
            params["PAIRED_ASM"] = (rows.is_cuda and (bits == 8 or scales.dtype == rows.dtype)
                                    and capability(rows.device.index) >= (8, 0))
            tiles *= cdiv(M, params["BLOCK_M"])
            units = tiles * (K // params["BLOCK_K"])
        # the kernel is compiled before the partials' size is known: its workspace argument must already be
        # float32 (Triton specialises on the pointer's dtype; a placeholder of x's dtype rounded every partial)
        args[6] = provided(float32_placeholder(rows.device), functools.partial(float32_placeholder, rows.device))
        args.append(1)  # programs, below
        prepared = prepared or prepare(kernel, *args, **consts, **params)
        resident = INTERPRETER_RESIDENT if prepared is None else prepared.resident_per_sm
        programs = args[-1] = max(tiles, min(units, sms * resident))  # one wave of resident programs
        grid = (programs,)
        pieces = 1 if tiles % programs == 0 else cdiv(programs, tiles) + 1  # the most a tile is cut into
    if pieces > 1:
        args[6] = torch.empty((pieces, M, N), device=rows.device, dtype=torch.float32)
        args[7] = arrival_counters(rows.device, tiles)
    if prepared is not None:
        prepared.run(grid, *args)
        return prepared
    return launch(kernel, grid, *args, **consts, **params)


def _run_config(config: dict, rows, packed, scales, zeros, bias, N: int, bits: int, group_size: int,
                prepared=None) -> tuple[torch.Tensor, object]:
    """rows @ W^T (+ bias) by one candidate configuration, and the Launch of its kernel (None for
    dequantize + cuBLAS, and in the interpreter; the Gluon kernels': their quant_matmul_sm90 plan, which
    holds its descriptors, made for this call's shapes and strides)."""
    if config["path"] == "dequant":
        return F.linear(rows, _dequantize(packed, scales, zeros, bits, group_size, rows.dtype), bias), None
    out = torch.empty((rows.shape[0], N), device=rows.device, dtype=rows.dtype)
    if config["path"] in quant_matmul_sm90.PATHS:
        plan = prepared or quant_matmul_sm90.plan(config, rows, packed, scales, zeros, bias, num_sms(rows.device.index),
                                                  pdl_options(rows, config["path"] in PDL_PATHS))
        plan(rows, packed, scales, zeros, bias, out)
        return out, plan
    return out, _launch_path(config, rows, packed, scales, zeros, bias, out, bits, group_size, prepared)


_plans = Plans()


def _cold_copies(packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
                 l2: int) -> list[tuple]:
    """(packed, scales, zeros), the originals first, then copies, so many that together they hold twice the L2's
    `l2` bytes (at most CHAIN_MAX_COPIES, at least two): a chain of calls over them reads every weight from memory.
    Fewer where the memory runs out (a model that nearly fills it): the tuning goes on with a shorter chain."""
    tensors = (packed, scales, zeros)
    size = sum(t.numel() * t.element_size() for t in tensors if t is not None)
    copies = [tensors]
    for _ in range(min(CHAIN_MAX_COPIES, max(2, -(-2 * l2 // size))) - 1):
        try:
            copies.append(tuple(None if t is None else t.clone() for t in tensors))
        except torch.OutOfMemoryError:
            break
    return copies


def _plan_key(rows, packed, scales, zeros, bias, bits, group_size) -> tuple:
    return (rows.shape, rows.stride(0), packed.shape, rows.dtype, scales.dtype, bits, group_size, rows.device.index,
            None if bias is None else bias.dtype, alignment_key(rows, packed, scales, zeros, bias))


@torch_op("quant_matmul", fake=_quant_matmul_fake)
def _quant_matmul_op(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
                     bias: Optional[torch.Tensor], bits: int, group_size: int) -> torch.Tensor:
    N = packed.shape[1]
    if not runs_kernel(x):
        return quant_matmul_reference(x, packed, scales, zeros, bias, bits, group_size).to(x.dtype)
    rows = as_rows(x)
    plan_key = _plan_key(rows, packed, scales, zeros, bias, bits, group_size) if x.is_cuda else None
    plan = _plans.get(plan_key)
    if plan is not None:
        return plan(rows=rows, packed=packed, scales=scales, zeros=zeros, bias=bias)[0].reshape(*x.shape[:-1], N)
    M, K = rows.shape
    if M == 0 or N == 0:
        return torch.empty((*x.shape[:-1], N), device=x.device, dtype=x.dtype)
    device_index = x.device.index if x.is_cuda else -1
    gluon = _use_gluon(rows, packed, scales, zeros, bits, group_size)
    mma = _use_mma(rows, bits)
    configs = candidates(M, N, K, bits, group_size, x.dtype, num_sms(device_index), gluon, mma)
    cold = functools.cache(lambda: _cold_copies(packed, scales, zeros, l2_bytes(device_index)))
    gluon_plans: dict = {}  # per Gluon variant: the tuner runs each candidate many times, its descriptors once

    def chain(config: dict):
        for copy in cold():
            _run_config(config, rows, *copy, bias, N, bits, group_size)

    def run(config: dict):
        is_gluon = config["path"] in quant_matmul_sm90.PATHS
        prepared = gluon_plans.get(quant_matmul_sm90.variant_of(config)) if is_gluon else None
        out, used = _run_config(config, rows, packed, scales, zeros, bias, N, bits, group_size, prepared)
        if is_gluon:
            gluon_plans[quant_matmul_sm90.variant_of(config)] = used
        return out, used

    key = (_autotune.bucket(M), N, K, bits, group_size, zeros is not None, bias is not None, x.dtype, scales.dtype)
    if gluon:  # its candidates join the list: a choice of its own (other calls' keys stay as they were)
        key += ("gluon-rs3",)  # since session 20 the 256-row register-A variant among them
    if mma:
        key += ("mma",)
    if M == 1:
        key += ("slices",)  # since session 21 the GEMV's sliced candidates among them
    if M <= CHAIN_MAX_M:  # no Gluon candidate here (GLUON_MIN_M): every one runs through _run_config unprepared
        key += ("chain",)  # since session 26 timed in a chain over cold copies
    device = _autotune.device_name(device_index)
    chosen = _autotune.choose("quant_matmul", key, configs, chain if M <= CHAIN_MAX_M else run, device=device,
                              tune=_autotune.may_tune(x))
    out, prepared = run(chosen)
    if x.is_cuda and _autotune.is_settled("quant_matmul", key, device=device):
        # the choice is final: later calls with this plan key only allocate and launch (the same
        # compiled kernel: the plan key fixes everything Triton specialises on)
        _plans.keep(plan_key, functools.partial(_run_config, chosen, N=N, bits=bits, group_size=group_size,
                                                prepared=prepared))
    return out.reshape(*x.shape[:-1], N)


def _check_weight(packed, scales, zeros, bits, group_size) -> None:
    """The packed format of the module docstring: the kernels take every tensor of it contiguous, with
    these dtypes and shapes (a QuantizedWeight whose tensors were replaced or viewed may not be)."""
    _check_format(bits, group_size)
    if packed.dtype != torch.int32 or packed.dim() != 2:
        raise TypeError(f"qweight.packed must be a 2-D int32 tensor, got {packed.dtype} of shape {tuple(packed.shape)}")
    K, N = packed.shape[0] * 32 // bits, packed.shape[1]
    groups = (K // group_size, N)
    if scales.dtype not in FLOAT_DTYPES:
        raise TypeError(f"qweight.scales must be float16, bfloat16 or float32, got {scales.dtype}")
    if tuple(scales.shape) != groups:
        raise ValueError(f"qweight.scales must have shape {groups} ([K / group_size, N]), got {tuple(scales.shape)}")
    if zeros is not None:
        if zeros.dtype != torch.uint8:
            raise TypeError(f"qweight.zeros must be uint8, got {zeros.dtype}")
        if tuple(zeros.shape) != groups:
            raise ValueError(f"qweight.zeros must have shape {groups} ([K / group_size, N]), got {tuple(zeros.shape)}")
    for name, t in (("packed", packed), ("scales", scales), ("zeros", zeros)):
        if t is not None:
            check_same_device(f"qweight.{name}", t, "qweight.packed", packed)
            if not t.is_contiguous():
                raise ValueError(f"qweight.{name} must be contiguous (strides {t.stride()})")


def _check(x, packed, scales, zeros, bias, bits, group_size) -> None:
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    _check_weight(packed, scales, zeros, bits, group_size)
    check_same_device("qweight", packed, "x", x)
    N, K = packed.shape[1], packed.shape[0] * 32 // bits
    if x.shape[-1] != K:
        raise ValueError(f"x has last dim {x.shape[-1]} but qweight has in_features K={K}")
    if bias is not None:
        check_float("bias", bias)
        check_same_device("bias", bias, "x", x)
        if bias.shape != (N,):
            raise ValueError(f"bias must have shape ({N},) to match qweight's out_features, got {tuple(bias.shape)}")
        if bias.stride(0) != 1 and N > 1:
            raise ValueError("bias must be contiguous")


def quant_matmul(x: torch.Tensor, qweight: QuantizedWeight, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """x [..., K] @ dequantize(qweight).T (+ bias) -> [..., N] in x's dtype, accumulated in fp32."""
    if not isinstance(qweight, QuantizedWeight):
        raise TypeError(f"qweight must be a QuantizedWeight (from quantize_weight), got {type(qweight).__name__}")
    return _quant_matmul(x, qweight.packed, qweight.scales, qweight.zeros, bias, qweight.bits, qweight.group_size)


@planned
def _quant_matmul(x: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
                  bias: Optional[torch.Tensor], bits: int, group_size: int) -> torch.Tensor:
    """quant_matmul on the weight's tensors: the checks, then the custom op (a repeated eager call replays)."""
    _check(x, packed, scales, zeros, bias, bits, group_size)
    return _quant_matmul_op(x, packed, scales, zeros, bias, bits, group_size)

# ---------------------------------------------------------------------------------------------
# Modules


class QuantLinear(torch.nn.Module):
    """Drop-in for nn.Linear holding a quantized weight (buffers packed, scales, zeros, bias)."""

    def __init__(self, qweight: QuantizedWeight, bias: Optional[torch.Tensor] = None):
        super().__init__()
        self.out_features, self.in_features = qweight.shape
        self.bits, self.group_size, self.weight_dtype = qweight.bits, qweight.group_size, qweight.dtype
        self.register_buffer("packed", qweight.packed)
        self.register_buffer("scales", qweight.scales)
        self.register_buffer("zeros", qweight.zeros)
        self.register_buffer("bias", None if bias is None else bias.detach())

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, bits: int = 4, group_size: int = 128,
                    symmetric: bool = False) -> "QuantLinear":
        return cls(quantize_weight(linear.weight, bits, group_size, symmetric), linear.bias)

    @classmethod
    def stacked(cls, *parts: "QuantLinear") -> "QuantLinear":
        """One QuantLinear whose output is the parts' outputs side by side (as one projection for a fused gate and
        up, q, k and v): their codes, scales, zero points and biases concatenated along out_features. Exact: the
        groups run along in_features. The parts must share in_features, the format and the dtypes."""
        if not parts or not all(isinstance(p, QuantLinear) for p in parts):
            raise TypeError("parts must be one or more QuantLinear modules")
        first = parts[0]
        for name in ("in_features", "bits", "group_size", "weight_dtype"):
            values = {getattr(p, name) for p in parts}
            if len(values) > 1:
                raise ValueError(f"parts must share {name}, got {sorted(map(str, values))}")
        for name in ("scales", "zeros", "bias"):
            kinds = {None if getattr(p, name) is None else getattr(p, name).dtype for p in parts}
            if len(kinds) > 1:
                raise ValueError(f"parts must all have {name} of one dtype or all none, got {kinds}")

        def stack(name: str) -> Optional[torch.Tensor]:  # the parts' tensors side by side along out_features
            return None if getattr(first, name) is None else torch.cat([getattr(p, name) for p in parts], dim=-1)

        out_features = sum(p.out_features for p in parts)
        qweight = QuantizedWeight(stack("packed"), stack("scales"), stack("zeros"), first.bits, first.group_size,
                                  (out_features, first.in_features), first.weight_dtype)
        return cls(qweight, stack("bias"))

    @property
    def qweight(self) -> QuantizedWeight:
        return QuantizedWeight(self.packed, self.scales, self.zeros, self.bits, self.group_size,
                               (self.out_features, self.in_features), self.weight_dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _quant_matmul(x, self.packed, self.scales, self.zeros, self.bias, self.bits, self.group_size)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"bits={self.bits}, group_size={self.group_size}, symmetric={self.zeros is None}")


def quantize_model(model: torch.nn.Module, bits: int | str = 4, group_size: int = 128, symmetric: bool = False,
                   skip: Sequence[str] = ("lm_head",)) -> dict:
    """Replace `model`'s nn.Linear modules in place: by QuantLinear (bits 4 or 8: weight-only, groups of
    group_size), or with bits="fp8" by matmul.Fp8Linear (W8A8: fp8 weights with a scale per output channel,
    activations quantized per token; group_size and symmetric do not apply). A module is skipped when its name
    or its last name component matches a pattern of `skip` (fnmatch), when it is a subclass of nn.Linear with a forward
    of its own (Llama 4's router), when it is a mixture of experts' router or gate (`_moe_router`), or (weight-only)
    when its in_features is not a multiple of group_size. A mixture of experts' experts that patch_model made
    MoEExperts become QuantMoEExperts (weight-only, moe.quantize_experts): fp8 codes with bits="fp8", int8 with bits=8
    (a scale per output row; group_size does not apply), int4 with bits=4 (symmetric whatever `symmetric` says, a
    scale per group_size elements; skipped where the hidden or intermediate size is not a multiple of it). Returns
    {"quantized": [names], "skipped": {name: reason}}."""
    fp8 = bits == "fp8"
    if not fp8:
        if bits not in BITS:
            raise ValueError(f"bits must be 4, 8 or 'fp8', got {bits!r}")
        _check_format(bits, group_size)
    report: dict = {"quantized": [], "skipped": {}}
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    for name, linear in linears:
        if _matches(name, skip):
            report["skipped"][name] = "matches skip"
            continue
        if type(linear).forward is not torch.nn.Linear.forward:  # e.g. Llama 4's router: (scores, logits)
            report["skipped"][name] = f"{type(linear).__name__} computes more than x @ W.T + b (a forward of its own)"
            continue
        if _moe_router(model, name):
            report["skipped"][name] = "a mixture of experts' router or gate (kept in its precision)"
            continue
        if not fp8 and linear.in_features % group_size:
            report["skipped"][name] = f"in_features={linear.in_features} is not a multiple of group_size={group_size}"
            continue
        _replace(model, name,
                 Fp8Linear.from_linear(linear) if fp8 else QuantLinear.from_linear(linear, bits, group_size, symmetric))
        report["quantized"].append(name)
    from rooftop.integrations.hf import MoEExperts, QuantMoEExperts  # hf imports this module
    for name, experts in [(name, m) for name, m in model.named_modules() if isinstance(m, MoEExperts)]:
        if _matches(name, skip):
            report["skipped"][name] = "matches skip"
        elif bits == 4 and any(n % group_size for n in experts.down_proj.shape[1:]):
            report["skipped"][name] = (f"hidden x intermediate {tuple(experts.down_proj.shape[1:])} is not a "
                                       f"multiple of group_size={group_size}")
        else:
            quant = {"fp8": "fp8", 8: "int8", 4: "int4"}[bits]
            _replace(model, name, QuantMoEExperts.from_experts(experts, quant, group_size))
            report["quantized"].append(name)
    return report


def _replace(model: torch.nn.Module, name: str, new: torch.nn.Module) -> None:
    parent, _, attr = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, attr, new)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether module `name` or its last name component matches a pattern (fnmatch)."""
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(name.rsplit(".", 1)[-1], p) for p in patterns)


def _moe_router(model: torch.nn.Module, name: str) -> bool:
    """Whether the nn.Linear `name` routes tokens in a mixture-of-experts block: under a module with an `experts`
    child, at a path through a name with "gate" or "router" in it that is not an MLP's projection (HunYuan-MoE's
    mlp.gate.wg, Qwen2-MoE's mlp.shared_expert_gate; not a shared expert's gate_proj). Its logits pick the experts: a
    model reads its weight's dtype (HunYuan: to run it in fp32), and the choice is what quantizing it would change."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, -1, -1):  # the nearest ancestor first
        if isinstance(getattr(model.get_submodule(".".join(parts[:cut])), "experts", None), torch.nn.Module):
            return any(("gate" in part or "router" in part) and part not in ("gate_proj", "gate_up_proj")
                       for part in parts[cut:])
    return False


# ---------------------------------------------------------------------------------------------
# Reference, quantization error, cost, cases


def quant_matmul_reference(x, packed, scales, zeros, bias, bits, group_size) -> torch.Tensor:
    """The same maths in float64: x @ dequantize(w).T + bias."""
    out = x.double() @ dequantize_reference(packed, scales, zeros, bits, group_size).double().t()
    return out if bias is None else out + bias.double()


def quantization_error(w: torch.Tensor, qweight: QuantizedWeight, x: Optional[torch.Tensor] = None) -> dict:
    """||dequantize(qweight) - w|| / ||w||, and with x, ||quant_matmul(x, qweight) - x w^T|| / ||x w^T||
    (float64 on the true weight): what the quantization costs in accuracy, for the benchmark to record."""
    def rel(a, b):
        b = b.double()
        return float(torch.linalg.vector_norm(a.double() - b) / torch.linalg.vector_norm(b).clamp_min(1e-300))

    err = {"weight_rel_err": rel(qweight.dequantize(), w)}
    if x is not None:
        err["matmul_rel_err"] = rel(quant_matmul(x, qweight), x.double() @ w.double().t())
    return err


BENCH_GROUP = 128


def _make_inputs(bits):
    def make(shape, dtype, device):
        M, N, K = shape
        w = torch.randn(N, K, device=device, dtype=dtype) * K**-0.5
        return torch.randn(M, K, device=device, dtype=dtype), quantize_weight(w, bits, BENCH_GROUP), w
    return make


def _cost(bits):
    def cost(shape, dtype) -> Cost:
        M, N, K = shape
        groups = N * K // BENCH_GROUP
        # packed codes + scales (x's dtype) + uint8 zeros, x, out: each once
        weight = N * K * bits // 8 + groups * (dtype.itemsize + 1)
        return Cost(flops=2 * M * N * K, bytes=weight + (M * K + M * N) * dtype.itemsize)
    return cost


def _eager(x, qw, w):
    """What a model writes in PyTorch for a quantized linear: unpack and scale, then F.linear."""
    return F.linear(x, dequantize_reference(qw.packed, qw.scales, qw.zeros, qw.bits, qw.group_size, x.dtype))


def _reference(x, qw, w):
    return quant_matmul_reference(x, qw.packed, qw.scales, qw.zeros, None, qw.bits, qw.group_size)


def _cublas():
    return lambda x, qw, w: F.linear(x, w)  # the bf16 weight before quantization


def _tinygemm_layout(qw: QuantizedWeight) -> tuple[torch.Tensor, torch.Tensor]:
    """The same int4 weight as torch's tinygemm takes it: codes as uint8 [N, K/2] (even k in the high
    nibble) and scales_and_zeros bf16 [K/G, N, 2], where w = (c - 8) * s + zero, so zero = s * (8 - z)."""
    codes = unpack_codes(qw.packed, 4).t()
    pairs = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8).contiguous()
    s = qw.scales.float()
    z = 8.0 if qw.zeros is None else qw.zeros.float()
    return pairs, torch.stack([s, s * (8.0 - z)], dim=-1).to(torch.bfloat16).contiguous()


def _tinygemm():
    if not torch.cuda.is_available() or not hasattr(torch.ops.aten, "_weight_int4pack_mm"):
        return None
    # each weight converted on its first (warm-up) call, outside the timing; every input copy of a graph replay has
    # its own (keyed by identity, the weight held so that its id stays its own)
    converted: dict[int, tuple] = {}

    def run(x, qw, w):
        if x.dtype != torch.bfloat16:
            raise TypeError("tinygemm takes bfloat16 activations only")
        if id(qw) not in converted:
            pairs, scales_and_zeros = _tinygemm_layout(qw)
            K = qw.shape[1]
            inner_k_tiles = 8 if K % 1024 == 0 else 4 if K % 512 == 0 else 2
            converted[id(qw)] = (qw, torch.ops.aten._convert_weight_to_int4pack(pairs, inner_k_tiles),
                                 scales_and_zeros)
        _, packed, scales_and_zeros = converted[id(qw)]
        return torch.ops.aten._weight_int4pack_mm(x, packed, qw.group_size, scales_and_zeros)
    return run


BENCH_SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))
BENCH_CASES = tuple((M, N, K) for M in (1, 16, 64, 256) for N, K in BENCH_SHAPES)

for _bits, _peers in ((4, {"cublas": _cublas, "tinygemm": _tinygemm}), (8, {"cublas": _cublas})):
    registry.register(registry.OpSpec(
        name=f"quant_matmul_int{_bits}", family="quant_matmul", make_inputs=_make_inputs(_bits),
        run=lambda x, qw, w: quant_matmul(x, qw), reference=_reference, eager=_eager, cost=_cost(_bits),
        cases=BENCH_CASES, peers=_peers, x_key="M", check_cases=((1, 96, 256), (17, 64, 384))))


def quantization_error_table(ceilings=None, N: int = 4096, K: int = 4096, M: int = 16, seed: int = 0) -> list[dict]:
    """Quantization error of a random normal [N, K] weight (and of x @ w.T for random x [M, K]) for each
    format: what 4 or 8 bits cost in accuracy."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator(device=device).manual_seed(seed)
    w = torch.randn(N, K, device=device, generator=g).bfloat16() * K**-0.5
    x = torch.randn(M, K, device=device, generator=g).bfloat16()
    rows = []
    for bits in (4, 8):
        for group in (32, 64, 128):
            for symmetric in (False, True):
                err = quantization_error(w, quantize_weight(w, bits, group, symmetric), x)
                rows.append({"bits": bits, "group_size": group, "symmetric": symmetric, **err})
    return rows


registry.register_table(registry.FamilyTable(
    family="quant_matmul", title="Quantization error (random normal weight 4096 x 4096, x 16 x 4096, bf16)",
    make=quantization_error_table, needs_gpu=False))
