r"""W4A16 GEMM on Hopper (sm_90) in Gluon, two warp-specialised persistent kernels, paths of rooftop.quant_matmul
(ops/quant_matmul.py times their variants as tuner candidates; this file holds the kernels, their launches and
variants):
- `_w4a16_ws_kernel` (Variant; path "gluon"): warp groups of their own dequantize the int4 (or, since session 43,
  int8) weight into shared memory while the tensor cores work (benchmarks/exp_gluon_quant_ws.py tells how it was
  arrived at, models its protocol and times it). Described first, below; int8 after it.
- `_w4a16_rs_kernel` (RSVariant; path "gluon_rs"; session 18, benchmarks/exp_gluon_quant_rs.py): swap AB, out^T =
  W x^T; its MMA warp groups dequantize 64 weight rows x 64 k straight into the wgmma's register A operand, x's TMA
  tile the B operand: no dequantized tile in shared memory. Described at the end.

Why: for prefill-sized batches (M = 17-256 and up) the library's other paths are the Triton swap-AB kernel, whose
warps dequantize the tile they then multiply (one instruction stream: the dequantization stalls the MMA), and
dequantize + cuBLAS, which writes the bf16 weight and reads it back (0.54x cuBLAS bf16 at M = 256). The GEMM is
compute-bound at M = 256 (28672 x 8192: cuBLAS 180 us) and the dequantization is ~235M codes x ~3 instructions,
~20 us of the H200's issue spread over all SMs: hidden under the MMA it costs nothing, and reading 4.2 bits a
weight instead of 16 beats cuBLAS where the weight's DRAM read decides (M = 64).

What: out[M, N] = x[M, K] @ W^T (+ bias) with W = dequantize(qw) of `quantize_weight` (int4, group 128, with zero
points or symmetric, scales in x's dtype; quant_matmul's packed format unchanged: int32 words [K / 8, N], K-major,
nibble i of word (j, n) the code of k = 8 j + i; scales [K / G, N]; zeros uint8 [K / G, N] or None); x bf16 or
fp16, fp32 accumulation, output in x's dtype (bias of any float dtype, added in fp32). x is the wgmma's A operand
([ROWS, 64] boxes by TMA, 128-byte swizzle); the B operand is W^T's tile [64 k, BLOCK_N n] in an N-major NVMMA
shared layout, written by the dequantizers. One program per SM (persistent) over the tiles (BLOCK_M x BLOCK_N;
tile t is (pid_m, pid_n) = (t % R, t // R), R = cdiv(M, BLOCK_M) row tiles, so that the row tiles of a column
panel are neighbours and its words come from L2 the second time):
  data-parallel: program p takes tiles p, p + P, .. whole (P = min(#SMs, tiles));
  stream-K (`_sk`): the U2 = tiles x K / 128 groups (a tile's pair of k-steps, one group of scales) are cut into
    P = min(#SMs, U2) contiguous runs, program p groups [p U2 / P, (p + 1) U2 / P); a tile cut between programs is
    summed deterministically (below). Runs of whole groups: a dequantizer iteration never straddles two.
Out-of-range rows and columns: TMA reads zeros (x's rows past M; words, scales and zero points past N, which
dequantize to 0), the output store is masked, so neither M nor N need be a multiple of the tile; K is a multiple of
the group (128), which is what the format guarantees.
Every partition walks the program's steps i = 0, 1, .. (a step: one k-step of 64 of one tile; `_step`, `_next`) in
the same order; step i uses ring slot i % STAGES (x and B); group g = i // 2 words slot g % W_STAGES.
gl.warp_specialize partitions (setmaxnreg each: Variant's consumer_regs, dequant_regs, loader_regs; consumer 0,
the default partition, gets what Triton leaves of the 65536):
  consumers (CONSUMERS warp groups, each ROWS = BLOCK_M / CONSUMERS rows of the tile, an fp32 accumulator [ROWS,
    BLOCK_N], wgmma n = 128 instructions): per step wait x_ready and b_ready, async wgmma (A = its x box of the
    slot, B = the slot's dequantized tile), wgmma wait(1), then release the previous step's slot (arrive on
    mma_done: its MMA has completed, so x and B of that slot may be rewritten). At a segment's last step wait(0),
    release, epilogue: a whole tile gets the bias and is stored in x's dtype by plain masked stores from the
    accumulator (no staging buffer: shared memory goes to the rings); a stream-K piece goes through `_fixup`.
  dequantizers (DEQUANTIZERS warp groups; d owns columns COLS d .. of the tile, COLS = BLOCK_N / DEQUANTIZERS =
    128 or 256): each has its own ring of W_STAGES slots of one group's words [16, COLS] (int32: a plain 2-D TMA
    box of the [K / 8, N] tensor, 8 KB at 128 columns), scale pairs [1, COLS / 2] (the 16-bit [K / G, N] viewed as
    int32 [K / G, N / 2]) and zero pairs [1, COLS / 2] (the uint8 [K / G, N] viewed as int16 [K / G, N / 2]), and
    fills it itself by TMA, W_STAGES groups ahead (no loader involved, so its lead does not depend on the x ring).
    Per group g (steps 2g, 2g + 1): wait w_ready; load the scale and zero pairs and both steps' words into registers
    (each thread one word row, 8 adjacent columns: 2 x LDS.128 a step) and dequantize step 2g's; wait mma_done of
    step 2g's B slot (its previous MMA done); publish step 2g - 1's B (below); refill the words slot with group g +
    W_STAGES (expect + 3 TMA, one elected thread: every thread's loads of the slot are complete, by the fence and
    the barrier of that publication); store the 16-bit tile [64, COLS] into its columns of the slot's B buffer
    (STS.128: 8 adjacent n of a k row a store); dequantize step 2g + 1's; wait its slot's mma_done; publish step 2g;
    store step 2g + 1's tile (published in the next group). Publishing step i: fence_async_shared (each thread: its
    generic-proxy stores ordered before the wgmma's async-proxy reads; it waits for them to complete), arrive on
    b_ready (Gluon's arrive is a bar.sync of the warp group, then one elected arrive). A step's stores are published
    one dequantization after they are issued, so that they complete under that arithmetic, not in the fence.
    `_dequantize`: inline PTX (`_dequant_asm`), per pair of adjacent columns (16 codes) 2 PRMT, 6 SHF, 8 LOP3
    ((t >> 4q) & 0x000F000F | magic pair: bf16 0x4300 = 128, fp16 0x6400 = 1024, the pair magic + c), 8 packed fma
    (- (magic + z): exact) and 8 packed multiplies by s (rounded once): bit for bit qw.dequantize(x.dtype) (a
    Python emulation of the bf16 PTX agreed bit for bit, with and without zero points).
  loader (1 warp): per step wait mma_done (the slot's previous use consumed), expect and TMA x's CONSUMERS boxes
    [ROWS, 64] of the step into the slot.
mbarrier protocol (use u of a slot = step i // STAGES, or group g // W_STAGES; wait(parity) passes once the phase
of that parity has completed, a fresh barrier passes wait(1)):
  x_ready[s]    count 1 (the loader's expect; the TMA bytes complete it).  Consumers wait parity u & 1.
  b_ready[s]    count DEQUANTIZERS (one elected arrive each).              Consumers wait parity u & 1.
  mma_done[s]   count CONSUMERS (one elected arrive per consumer once the MMA of use u completed). The loader (before
                x use u) and each dequantizer (before writing B use u) wait parity (u & 1) ^ 1: the release of use
                u - 1 (u = 0: passes at once).
  w_ready[d][s] count 1 (dequantizer d's own expect; the TMA bytes). Only dequantizer d waits, parity u & 1.
  No waiter can see a phase two behind: each barrier's waiters walk the steps in order, so a waiter of use u has
  seen use u - 1 complete, and use u + 1 cannot complete before this waiter's own part in use u (mma_done's two
  kinds of waiters: neither the loader's x nor a dequantizer's B of use u + 1 exists before mma_done of use u,
  which needs every consumer's release of use u, itself after their waits on x_ready / b_ready of use u).
  No deadlock: the loader waits only on mma_done and issues x in step order; a dequantizer waits only on its own
  words and on mma_done; consumers release in order. The experiment's `simulate_protocol` (its --compile-only)
  checks both on random interleavings of the partitions, TMA landings and wgmma reads, and that every read sees
  its own step.
  Words slot reuse (WAR): the refill is issued after the thread barrier that follows every thread's shared loads
  of the slot (their values are in registers; Gluon adds a bar.sync and a proxy fence before each TMA copy).
Stream-K fix-up (`_fixup`, deterministic): a tile cut between programs first .. last (the owners of its first and
last groups) is completed by its head piece (k from 0: program first's last segment, or its only one). Every other
piece is the first segment of a later program: stored as fp32 to the workspace slot (program, consumer), then,
after a thread barrier, counted in on the tile's counter by one thread (a release reduction, gpu scope; nothing
waited for). The head polls the counter (acquire) until all have, zeroes it for the next launch, adds their slots
to its own accumulator in k order, then the bias, and stores: the same bits whatever the arrival order. No cycle
of waits: a head waits only for later programs' first segments, which wait for nothing (and the persistent grid, at
most one program an SM, runs at once); those run early in their programs while the head's is late in its own, so
the poll seldom spins (the experiment's `check_stream_k`
checks the bookkeeping). Until session 20 every piece stored its partial and the last to arrive (acq_rel atomic)
reloaded them all: the 64 x 128 register-A variant at M = 64 spent 4-7 us a call in fix-ups (H200, L2 flushed,
exp_gluon_quant_rs.py --probe; 19.3 / 33.6 / 90.3 / 21.2 us at 14336 x 256 / 14336 x 4096 / 28672 x 8192 /
4096^2, without any fix-up 12.5 / 28.5 / 84.5 / 14.5), now 87.2 us at 28672 x 8192, 31.7 at 14336 x 4096, 19.7 at
4096^2 (logs/h200-2026-12-02-s20/exp-quant-fixup.log). Workspace: P x BLOCK_M x BLOCK_N fp32 per call (17.3 MB at
256 x 128 on 132 SMs) and tiles x CONSUMERS int32 counters of the stream (_support.arrival_counters), left at zero
by every launch.

Shared memory: STAGES x (x boxes + B tile) + DEQUANTIZERS x W_STAGES x (words, scales, zeros) <= 227 KB.
Registers: 128 x (the warp groups' setmaxnreg values) <= 65536 (the 1-warp loader takes a warp group's share).

Where it applies (`supports`; quant_matmul also asks for an sm_90 GPU, never the interpreter, and M > 16): int4,
group 128, x bf16 / fp16 with scales of x's dtype; TMA's rules: x's rows of unit column stride, its row stride and
every base 16-byte aligned; packed, scales (and zeros) contiguous, N a multiple of 8 (the scale pairs' rows are 2N
bytes), of 16 with zero points (the zero pairs' rows are N bytes). Elsewhere the other candidates run.

Measured (H200, int4 group 128 with zero points, bf16, GPU time of CUDA-graph replay with L2 cold, 2026-12-01,
benchmarks/exp_gluon_quant_ws.py; every variant correct, rel err 1.66e-3), against cuBLAS bf16 on the unquantized
weight (x cuBLAS, higher is better; "library" the quant_matmul of then, untimed: Triton swap-AB at M = 64,
dequantize + cuBLAS at M = 256):
  M = 256, N x K:  28672 x 8192  ws_m256n128_c2d1_s4w3(_sk) 0.89x (202 us; library 0.54x, cuBLAS 180 us)
                   14336 x 4096  ws_m256n128_c2d1_s4w3      0.82x (library 0.54x)
                   4096 x 14336  ws_m256n128_c2d1_s4w3_sk   0.69x (library 0.57x)
                   4096 x 4096   ws_m128n128_c2d1_s6w3_sk   0.65x (library 0.77x: not a candidate)
  M = 64:          ws_m64n128_c1d1_s8w3_sk 0.80 / 1.10 / 1.17 / 1.19x at 4096^2 / 14336 x 4096 / 4096 x 14336 /
                   28672 x 8192 (the library's Triton kernel 0.66 / 1.07 / 1.08 / 1.20x); ws_m64n256_c1d2_s4w3
                   1.34x at 28672 x 8192.
The candidates (`variants_for`, since session 18): the register-A kernel's two 64-row variants for M <= 64 (they
beat this kernel's 64-row ones on every shape measured), above the two 256 x 128 ones and the register-A 128 x 128;
the tuner times them beside the Triton and dequantize paths per shape and keeps whichever is fastest. fp16 x, a
bias, N not a multiple of the tile and other M are GPU-tested (test_quant_matmul), not timed.

Offline sm_90 compile (Triton 3.6, benchmarks/exp_gluon_quant_ws.py --compile-only --library --fp16 --bias:
specialised as a GPU launch on aligned tensors is; the same for bf16 and fp16, with or without bias and zero
points): no bare CTA barrier after the fork, no LDL / STL in a k-step or dequantizer loop. Registers a thread
(consumer 0 / consumer 1 / dequantizer(s) / loader), the launch's REG and STACK, shared memory (asym / sym):
  ws_m64n128_c1d1_s8w3_sk    256 / - / 96 / 24       REG 168, STACK 0            222768 / 222368 B
  ws_m64n256_c1d2_s4w3       256 / - / 96 x 2 / 24   REG 128, STACK 0            215748 / 214932 B
  ws_m256n128_c2d1_s4w3      200 / 200 / 88 / 24     REG 128, STACK 0            222692 / 222276 B
  ws_m256n128_c2d1_s4w3_sk   200 / 200 / 88 / 24     REG 128, STACK 16 (18 LDL / STL: values kept across
                             setmaxnreg at the partitions' entry and exit, one LDL per segment in a consumer's
                             segment loop; the measured experiment kernel: STACK 16, 17)   222708 / 222292 B
Consumer k-step loop 58 instructions at 64 x 128 (4 HGMMA), 66-68 at 64 x 256 and 128 x 128 (8); dequantizer loop
(a group: 2 k-steps, 128 codes a thread) 435-438 instructions with zero points (3.4 a code), 402-406 symmetric (3.15).
Barriers (session 18): Triton 3.6's Membar put 8 partition barriers in each dequantizer group and 2 in each consumer
k-step; 5 and 1 of them the protocol does not need (before an mbarrier wait each thread makes for itself; one before
each TMA copy of the refill, after the explicit one): marked with softmax_sm90.barrier_not_needed and dropped at
compile (LEAN_BARRIERS the switch), 3 and 1 left. H200, same run, GPU time against all kept
(logs/h200-2026-12-01-s18/exp-quant-lean.log): M = 64 +1.3-5.6% (ws_m64n128_c1d1_s8w3_sk 104.9 against 110.8 us at
28672 x 8192), M = 256 0-2.6%; outputs as correct (rel err 1.66e-3).
Publication deferred (session 18; Nsight Compute, M = 64, 64 x 256 at 28672 x 8192, ncu-quant-m64-*: with each
step's fence right after its stores, 31% of the dequantizers' stall samples sat in the fence and the barrier after
the second step's; the consumer's wait for b_ready held its warps' samples: dequantizer-bound). With the stores
published one dequantization later, and the words' refill behind the first publication (the explicit barrier and
fence it needed gone): fences 3 -> 2 and barriers 3 -> 2 a group, the fence and barrier samples 31% -> 11%, the
dequantizers' issue 15% -> 21% of their samples; now their most common stall is the shared-memory pipe
(short scoreboard, 34%: registers held by stores in flight; L1 throughput 75%). Same GPU, one call later
(exp-quant-deferred.log; cuBLAS 2-6% slower than in the call before): M = 64 ws_m64n256 47.1 / 48.3 / 140.8 / 87.7
us (was 50.3 / 51.2 / 153.0 / 94.5: 1.47x cuBLAS at 28672 x 8192), ws_m64n128_sk 22.7 / 37.0 / 37.0 / 98.6 (was
22.8 / 38.2 / 38.3 / 104.9); M = 256 ws_m256n128_sk 197.5 us at 28672 x 8192 (0.97x; was 203.4), the data-parallel
one within 2% but 211.7 there (was 202.1).

int8 (W8A16, session 43; Variant.bits = 8, the I8_* variants): the same kernel and protocol, the words [K / 4, N]
(byte i of word (j, n) the code of k = 4 j + i), so a k-step is 16 word rows and a group's slot [32, COLS] (16 KB at
128 columns: the rings are shallower to fit 227 KB). A dequantizer thread holds two adjacent word rows (the same 8 k
as int4's one row) and 8 adjacent columns (`_DQ_L8`), and B's stores are the same. A pair of 16-bit floats cannot
carry magic + c for 8-bit codes in bf16 (8 significant bits), so each code goes through float32 (`_dequant8_asm`):
a PRMT puts it into bits 8-15 of 32768.0, one fma with the column's s and -(32768 + z) s (both products exact:
16 x 8 significant bits; fp16's 11-bit scales: an add, then a multiply) gives s (c - z) exactly, one cvt rounds a
pair: bit for bit dequantize(x.dtype). The 32768.0 comes from a register ptxas cannot fold ((N >> 31) | 0x47000000):
given two constants it made the PRMT's selector the register and spent a move a code. Offline sm_90 SASS of a
dequantizer group (128 codes a thread): 516 instructions with zero points, 474 symmetric (4.0 / 3.7 a code; int4
3.4 / 3.2), no spills. H200 (2026-12-04, logs/h200-2026-12-04-s43/call-d, the tuner's choice among these and the
Triton paths, graph replay over input copies, x cuBLAS bf16 in the same run): M = 64 0.67 / 0.97 / 1.02 / 1.05x at
4096^2 / 14336 x 4096 / 4096 x 14336 / 28672 x 8192 (the Triton paths before: 0.69 / 0.87 / 0.95 / 0.84x), M = 256
0.61 / 0.85 / 0.72 / 0.88x (dequantize + cuBLAS before: 0.61 / 0.56 / 0.51 / 0.55x; 28672 x 8192 239.1 us against
370). At M = 16 the variants won only at 28672 x 8192
(101.0 against the Triton kernel's 110.5 us): not candidates there (GLUON_MIN_M). Every candidate alone
(exp_tuner_timing.py --bits 8): the dequantizers, not DRAM, hold it (M = 64, 28672 x 8192: 106 us, the words' read
~56 us).

The register-A kernel (`_w4a16_rs_kernel`, RSVariant). A tile is block_m rows of x by 64 x CONSUMERS weight rows;
MMA warp group c owns weight rows 64 c .. 64 c + 63 and an fp32 accumulator [64, block_m] (wgmma m64 n=block_m k16,
A from registers, B = x's [block_m, 64] TMA tile permuted). The A operand's layout (mma v3, k_width 2) gives a
thread rows r and r + 8 and k = 2t, 2t + 1 (+ 8) of each 16-wide k block (t = lane % 4): the codes of byte t of each
word. Row r of the tile is weight row PI(r) = 16 (r // 16) + 2 (r % 8) + (r // 8) % 2, so that a thread's two rows
are adjacent weight rows (its words by LDS.64, its scales as one pair; PI permutes index bits: a reshape and
permute in registers, no data moved; the epilogue stores row r to column PI(r)). `_rs_asm`: per word, SHF, PRMT,
LOP3, a packed fma and a packed multiply (2.5 instructions a code), bit for bit dequantize(x.dtype). Per group (two
k-steps) a warp group reads the scale (and zero) row once; per step it waits for the stage, dequantizes its A tile,
issues the wgmma and waits for it (wait(0): ptxas of Triton 3.6 serialises every register-A wgmma left in flight
past the next dequantization, C7512), then releases the stage (empty, count CONSUMERS). A 1-warp loader fills the
STAGES ring by TMA: x's tile, the words [8, BLOCK_N], the group's scale (zero) row [1, BLOCK_N]. Tiles, stream-K and
its deterministic fix-up as the other kernel's (`_schedule`, `_step`, `_next`, `_fixup`). Offline sm_90: no spills,
132 instructions a thread a k-step (32 codes). Measured (H200, bf16, zero points, graph replay, L2 flushed, x cuBLAS,
logs/h200-2026-12-01-s18/exp-quant-rs-v2.log, the other kernel's variants in the same run):
  M = 64   RS_M64_N128 20.9 / 33.6 / 34.8 / 91.2 us at 4096^2 / 14336 x 4096 / 4096 x 14336 / 28672 x 8192 (0.87 /
           1.28 / 1.31 / 1.41x; ws_m64n128_sk 22.6 / 36.7 / 37.0 / 98.2), RS_M64_N256 83.1 at 28672 x 8192 (1.54x;
           ws_m64n256 87.5)
  M = 256  RS_M128_N128 32.7 / 70.4 / 67.8 / 221.2 (0.74 / 0.69 / 0.79 / 0.82x; the 256 x 128 variants best at 14336
           x 4096 and 28672 x 8192: 58.4, 195.7)
Nsight Compute (its first form, before the adjacent rows): issue- and latency-bound (21% issuing, 22% in the wgmma
wait and the arrive's bar.sync); L1 44%, L2 32%, DRAM 23% at 64 x 28672 x 8192.
Session 19: the barrier Membar puts before each ready wait is dropped (LEAN, as the other kernel's: the arrive's
bar.sync keeps a warp group's warps in phase), 2 of a group's 12. Tiles of 8 to 32 rows of x (wgmma n = 8-32) run
correctly but lost at M = 1 and 16 to the GEMV and mma.sync paths (exp-quant-rs-small.log, L2 flushed: 1 x 28672 x 8192
67.8 us with 8-row tiles against 48.4, 16 x 28672 x 8192 68.6 with 16-row tiles against 59.4): a warp group's steps
run in series (wait, dequantize, MMA, wait(0), arrive), latency-bound at 4 warps a scheduler whatever the MMA's
size; RSVariant takes them for experiments, the library's variants keep 64 rows and more. Stream-K costs a call
~4-9 us beside data-parallel tiles (64 x 14336 x K, RS_M64_N128: K = 256 19.2 against 9.9 us, K = 4096 33.7
against 29.6 where data-parallel runs 112 tiles on 132 SMs; exp-quant-intercept.log): Nsight Compute at K = 256 has
the SMs active half the kernel's time (13.2 of 26.3 k cycles; data-parallel 61%), the fix-up's atomic (MEMBAR.GPU,
the result broadcast through a bar.sync) and the partials' sums among its stalls (ncu-source-rs_m64n128_k256.csv.gz);
a ring of 2 stages costs as much (not the loads in flight). So RS_M64_N128_DP, the data-parallel form, is a
candidate beside it: 29.8 against 33.8 us at 64 x 14336 x 4096 (112 tiles), slower where few tiles leave SMs idle.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from rooftop.ops import softmax_sm90
from rooftop.ops._support import GluonLaunch, arrival_counters, await_previous, cdiv
from rooftop.ops.softmax_sm90 import barrier_not_needed

BLOCK_K = 64  # k a step: 8 word rows (int4; int8 16), 128 bytes of 16-bit x (one 128-byte swizzled row)
WORDS = BLOCK_K // 8  # int4 word rows a step (the register-A kernel's, int4 only)
GROUP = 128  # the one group size: a dequantizer iteration is one group of two k-steps
BITS = (4, 8)  # the store-through-shared-memory kernel's formats; the register-A kernel's int4 only
SMALL_M = 64  # the regimes of M: up to here the 64-row variants, above the 256- and 128-row ones (variants_for)
SMEM_LIMIT = 232448  # 227 KB a block on sm_90
GL_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}
_BK, _WORDS, _GROUP = gl.constexpr(BLOCK_K), gl.constexpr(WORDS), gl.constexpr(GROUP)  # in kernels


@dataclass(frozen=True)
class Variant:
    block_m: int
    block_n: int
    consumers: int  # MMA warp groups, each block_m / consumers rows
    dequantizers: int  # warp groups, each dq_cols = block_n / dequantizers columns (128 or 256)
    stages: int  # x / B ring
    w_stages: int  # each dequantizer's words ring
    stream_k: bool = False
    consumer_regs: int = 0  # setmaxnreg of consumer 1 (consumer 0 is the default partition: Triton gives it the rest)
    dequant_regs: int = 0
    loader_regs: int = 24
    bits: int = 4  # the weight's codes: int4 or int8

    def __post_init__(self):
        if self.bits not in BITS:
            raise ValueError(f"bits: 4 or 8 ({self})")
        if self.dq_cols not in (128, 256) or self.block_n != self.dq_cols * self.dequantizers:
            raise ValueError(f"block_n: 128 or 256 columns a dequantizer ({self})")
        if self.rows not in (64, 128) or self.consumers not in (1, 2) or self.block_m != self.rows * self.consumers:
            raise ValueError(f"block_m: one or two consumers of 64 or 128 rows ({self})")

    @property
    def dq_cols(self) -> int:  # columns a dequantizer: 128 (8 words a thread a step) or 256 (16)
        return self.block_n // self.dequantizers

    @property
    def rows(self) -> int:  # rows of a consumer's accumulator (and of an x box)
        return self.block_m // self.consumers

    @property
    def name(self) -> str:
        return (f"ws_m{self.block_m}n{self.block_n}_c{self.consumers}d{self.dequantizers}"
                f"_s{self.stages}w{self.w_stages}" + ("_sk" if self.stream_k else "")
                + ("_i8" if self.bits == 8 else ""))

    @property
    def word_rows(self) -> int:  # word rows of a k-step: 64 codes of a column, 32 / bits a word
        return BLOCK_K * self.bits // 32

    def smem_bytes(self, has_zero: bool) -> int:
        """The x / B ring (16-bit) and the dequantizers' words rings."""
        words = (2 * self.word_rows * self.dq_cols * 4 + self.dq_cols // 2 * 4
                 + (self.dq_cols // 2 * 2 if has_zero else 0))
        return (self.stages * (self.block_m * BLOCK_K * 2 + BLOCK_K * self.block_n * 2)
                + self.dequantizers * self.w_stages * words)

    def tiles(self, M: int, N: int) -> int:
        return cdiv(M, self.block_m) * cdiv(N, self.block_n)

    def programs(self, M: int, N: int, K: int, num_sms: int) -> int:
        """The persistent grid: one program an SM, at most one a tile (data-parallel) or a group of a tile
        (stream-K), so that every program has work."""
        tiles = self.tiles(M, N)
        return min(num_sms, tiles * (K // GROUP)) if self.stream_k else min(num_sms, tiles)

    def config(self) -> dict:
        """quant_matmul's launch configuration (JSON-able, for its tuner) of this variant."""
        return dict(path="gluon", BLOCK_M=self.block_m, BLOCK_N=self.block_n, CONSUMERS=self.consumers,
                    DEQUANTIZERS=self.dequantizers, STAGES=self.stages, W_STAGES=self.w_stages,
                    STREAM_K=self.stream_k, CONSUMER_REGS=self.consumer_regs, DEQUANT_REGS=self.dequant_regs,
                    LOADER_REGS=self.loader_regs, **({"BITS": 8} if self.bits == 8 else {}))  # int4's as before

    @staticmethod
    def of(config: dict) -> "Variant":
        return Variant(config["BLOCK_M"], config["BLOCK_N"], config["CONSUMERS"], config["DEQUANTIZERS"],
                       config["STAGES"], config["W_STAGES"], config["STREAM_K"], config["CONSUMER_REGS"],
                       config["DEQUANT_REGS"], config["LOADER_REGS"], config.get("BITS", 4))


@dataclass(frozen=True)
class RSVariant:
    """A configuration of the register-A kernel (`_w4a16_rs_kernel`): tiles of block_m rows of x by 64 x consumers
    weight rows, stream-K or data-parallel over them."""
    block_m: int  # x rows a tile: the wgmma's N
    consumers: int  # MMA warp groups, 64 weight rows each
    stages: int
    stream_k: bool = True
    consumer_regs: int = 0  # setmaxnreg of the worker consumers (consumer 0 is the default partition: the rest)
    loader_regs: int = 24

    def __post_init__(self):
        if self.block_m not in (8, 16, 32, 64, 128, 256) or self.consumers not in (2, 4):
            raise ValueError(f"block_m: 8 to 256 rows, a power of two; consumers: 2 or 4 ({self})")

    @property
    def block_n(self) -> int:
        return 64 * self.consumers

    @property
    def bits(self) -> int:  # int4 only
        return 4

    @property
    def name(self) -> str:
        return f"rs_m{self.block_m}n{self.block_n}_s{self.stages}" + ("_sk" if self.stream_k else "")

    def smem_bytes(self, has_zero: bool) -> int:
        """A stage: x's tile, the words, the scale (and zero) row."""
        return self.stages * (self.block_m * BLOCK_K * 2 + WORDS * self.block_n * 4
                              + self.block_n * (3 if has_zero else 2))

    tiles = Variant.tiles
    programs = Variant.programs

    def boxes(self, dtype: torch.dtype) -> dict:
        """(TMA box, shared layout) of x (dtype), the words, the scales (dtype) and the zero points: x's tile
        128-byte swizzled (the wgmma's B operand), the others unswizzled (read by ordinary shared loads)."""
        unswizzled = lambda bits: gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=bits, rank=2)  # noqa
        return dict(x=([self.block_m, BLOCK_K],
                       gl.NVMMASharedLayout.get_default_for([self.block_m, BLOCK_K], GL_DTYPES[dtype])),
                    w=([WORDS, self.block_n], unswizzled(32)), s=([1, self.block_n], unswizzled(16)),
                    z=([1, self.block_n], unswizzled(8)))

    def constexprs(self, has_zero: bool, has_bias: bool, pdl: Optional[dict] = None) -> dict:
        """_w4a16_rs_kernel's constexprs; pdl as constexprs()'."""
        return dict(CONSUMERS=self.consumers, STAGES=self.stages, HAS_ZERO=has_zero, HAS_BIAS=has_bias,
                    STREAM_K=self.stream_k, CONSUMER_REGS=self.consumer_regs or 24, LOADER_REGS=self.loader_regs,
                    LEAN=softmax_sm90.LEAN_BARRIERS, **(pdl or {"PDL": False}))

    def config(self) -> dict:
        """quant_matmul's launch configuration (JSON-able, for its tuner) of this variant."""
        return dict(path="gluon_rs", BLOCK_M=self.block_m, CONSUMERS=self.consumers, STAGES=self.stages,
                    STREAM_K=self.stream_k, CONSUMER_REGS=self.consumer_regs, LOADER_REGS=self.loader_regs)

    @staticmethod
    def of(config: dict) -> "RSVariant":
        return RSVariant(config["BLOCK_M"], config["CONSUMERS"], config["STAGES"], config["STREAM_K"],
                         config["CONSUMER_REGS"], config["LOADER_REGS"])


# Register budgets: 128 threads x (sum over the warp groups) <= 65536, i.e. the setmaxnreg values sum to <= 512
# with the default partition (consumer 0) given the rest by Triton. An accumulator of 128 fp32 (128 x 128 or
# 64 x 256 a warp group) needs ~180-200 a thread with the epilogue; a dequantizer 88-96 at 128 columns.
# The winners of the H200 runs (module docstring), by regime of M:
M256_N128 = Variant(256, 128, 2, 1, 4, 3, False, 200, 88)  # one 256 x 128 tile dequantized once for all rows
M256_N128_SK = Variant(256, 128, 2, 1, 4, 3, True, 200, 88)
RS_M64_N128 = RSVariant(64, 2, 8, True, 208)
RS_M64_N256 = RSVariant(64, 4, 6, True, 120)  # 4 MMA warp groups of 120 registers
RS_M64_N128_DP = RSVariant(64, 2, 8, False, 208)  # data-parallel: no stream-K fix-up where the tiles fill a wave
RS_M128_N128 = RSVariant(128, 2, 6, True, 208)
# 256 rows of x: the widest shape's winner at M = 256 (H200, L2 flushed, exp-quant-fixup.log: 185 us at 28672 x
# 8192, cuBLAS 185, M256_N128_SK 195), though it spills a few registers around its fix-up
RS_M256_N128 = RSVariant(256, 2, 4, True, 232)
# int8 (the store-through-shared-memory kernel only): a group's words are twice int4's (16 KB at 128 columns), so
# the rings are shallower to stay under 227 KB
I8_M64_N128_SK = Variant(64, 128, 1, 1, 6, 3, True, 0, 112, bits=8)
I8_M64_N256 = Variant(64, 256, 1, 2, 3, 2, False, 0, 112, bits=8)
I8_M256_N128 = Variant(256, 128, 2, 1, 4, 2, False, 192, 104, bits=8)
I8_M256_N128_SK = Variant(256, 128, 2, 1, 4, 2, True, 192, 104, bits=8)
I8_M128_N128_SK = Variant(128, 128, 2, 1, 5, 3, True, 160, 104, bits=8)
VARIANTS = (RS_M64_N128, RS_M64_N256, RS_M64_N128_DP, M256_N128, M256_N128_SK, RS_M128_N128, RS_M256_N128,
            I8_M64_N128_SK, I8_M64_N256, I8_M256_N128, I8_M256_N128_SK, I8_M128_N128_SK)
REGIMES = {4: ((SMALL_M, (RS_M64_N128, RS_M64_N256, RS_M64_N128_DP)),
               (1 << 62, (M256_N128, M256_N128_SK, RS_M128_N128, RS_M256_N128))),
           8: ((SMALL_M, (I8_M64_N128_SK, I8_M64_N256)),
               (1 << 62, (I8_M256_N128, I8_M256_N128_SK, I8_M128_N128_SK)))}


def variants_for(M: int, bits: int = 4) -> tuple:
    """The variants (Variant, RSVariant) the tuner times for M rows of x and `bits`-bit codes (REGIMES: for int4
    the measured winners of M's regime)."""
    return next(table for top, table in REGIMES[bits] if M <= top)


PATHS = ("gluon", "gluon_rs")  # quant_matmul's launch paths of Variant and RSVariant configurations


def variant_of(config: dict):
    """The Variant or RSVariant of a launch configuration (its "path": "gluon" or "gluon_rs")."""
    return RSVariant.of(config) if config["path"] == "gluon_rs" else Variant.of(config)


def supports(rows: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
             bits: int, group_size: int) -> bool:
    """Whether the kernels can run this call's layout (the device aside): int4 or int8 (the register-A kernel int4
    only: `variants_for`), group 128, x [M, K] 16-bit with scales of its dtype, and what TMA needs: unit column
    strides, 16-byte aligned row strides and bases (module docstring). quant_matmul's format keeps packed, scales
    and zeros contiguous."""
    if bits not in BITS or group_size != GROUP or rows.dtype not in GL_DTYPES or scales.dtype != rows.dtype:
        return False
    M, K = rows.shape
    N = packed.shape[1]
    if (M == 0 or N == 0 or K % GROUP or rows.stride(1) != 1 or rows.stride(0) < K  # not a broadcast x
            or (rows.stride(0) * rows.element_size()) % 16):
        return False
    tensors = (rows, packed, scales) + (() if zeros is None else (zeros,))
    if any(t.data_ptr() % 16 for t in tensors) or not all(t.is_contiguous() for t in tensors[1:]):
        return False
    return N % (8 if zeros is None else 16) == 0


# ---------------------------------------------------------------------------------------------
# Dequantization (inline PTX)


def _dequant_asm(has_zero: bool, fp16: bool) -> tuple[str, str]:
    """PTX of one `inline_asm_elementwise` call with pack = 16: the 16 codes of a pair of adjacent columns
    (n even, n + 1) of one word row j, k = 8 j + q, as 8 registers of two 16-bit floats $q = (w(8j+q, n),
    w(8j+q, n+1)). Operands, 16 a input (one a packed element, element e = (q, h) = (e // 2, e % 2)): $8 / $9 the
    words of columns n and n + 1; zeros: $24 = the int16 pair (z_n | z_{n+1} << 8) sign-extended; scales: $24 or
    $40 = the 16-bit pair (s_n, s_{n+1}) as one int32.
    Two PRMT put nibbles 0-3 (4-7) of both words in one register, column n in bits 0-15, n + 1 in 16-31; a
    shift by 4 q' and one LOP3 ((t >> 4q') & 0x000F000F | magic pair) give the pair magic + c (bf16 0x4300 = 128,
    fp16 0x6400 = 1024: c lands in the mantissa's low bits); a packed fma (v * 1 - (magic + z); -(magic + z) is
    0xC300 | z in bf16, 0xE400 | z in fp16) gives c - z exactly, a packed multiply by s rounds once."""
    kind, magic, neg, one = ("f16x2", 0x6400, 0xE4, 0x3C00) if fp16 else ("bf16x2", 0x4300, 0xC3, 0x3F80)
    scale = "$40" if has_zero else "$24"
    lines = ["{ .reg .b32 tl, th, t, v, one, nz;", f"mov.b32 one, {one << 16 | one:#010x};"]
    # the pair's zero points into bytes 0 and 2, the sign and exponent byte of -(magic + z) into bytes 1, 3
    lines.append(f"prmt.b32 nz, $24, {neg << 24 | neg << 8:#010x}, 0x7150;" if has_zero
                 else f"mov.b32 nz, {(neg << 8 | 8) * 0x10001:#010x};")  # symmetric: z = 8
    lines += ["prmt.b32 tl, $8, $9, 0x5410;", "prmt.b32 th, $8, $9, 0x7632;"]
    for q in range(8):
        src, shift = ("tl" if q < 4 else "th"), 4 * (q % 4)
        if shift:
            lines += [f"shr.b32 t, {src}, {shift};", f"lop3.b32 v, t, 0x000F000F, {magic * 0x10001:#010x}, 0xEA;"]
        else:
            lines.append(f"lop3.b32 v, {src}, 0x000F000F, {magic * 0x10001:#010x}, 0xEA;")
        lines += [f"fma.rn.{kind} v, v, one, nz;", f"mul.rn.{kind} ${q}, v, {scale};"]
    lines.append("}")
    constraints = ",".join(["=r"] * 8 + ["r"] * (16 * (3 if has_zero else 2)))
    return "\n".join(lines), constraints


_ASM_Z_BF16, _CONS_Z = (gl.constexpr(v) for v in _dequant_asm(True, False))
_ASM_S_BF16, _CONS_S = (gl.constexpr(v) for v in _dequant_asm(False, False))
_ASM_Z_FP16 = gl.constexpr(_dequant_asm(True, True)[0])
_ASM_S_FP16 = gl.constexpr(_dequant_asm(False, True)[0])


def _dequant8_asm(fp16: bool) -> tuple[str, str]:
    """PTX of one int8 `inline_asm_elementwise` call with pack = 8: the 8 codes of a pair of adjacent columns (n
    even, n + 1) of one word row j, k = 4 j + q, as 4 registers of two 16-bit floats $q = (w(4j+q, n), w(4j+q, n+1)).
    Operands, 8 an input (element e = (q, h) = (e // 2, e % 2)): $4 / $5 the words of columns n and n + 1; $12 / $13
    and $20 / $21 the columns' float32 a and b (`_int8_operands`); $28 the bits of 32768.0, 0x47000000, from a
    register ptxas cannot fold (given two constants it makes the PRMT's selector the register, rewritten by each
    PRMT: one more move a code). A PRMT puts code q into bits 8-15 of 32768.0 (0x4700cc00 reads as 32768 + c); bf16:
    one fma, (32768 + c) a + b with a = s and b = -(32768 + z) s, both
    products exact in float32 (16 x 8 significant bits), so the fma gives s (c - z) exactly; fp16 (11-bit scales):
    an add of b = -(32768 + z), then a multiply by a = s, exact likewise; one cvt rounds a pair to 16 bits: bit for
    bit dequantize(x.dtype). bf16 2.5 instructions a code, fp16 3.5. (A pair of 16-bit floats cannot carry magic + c
    for 8-bit codes in bf16: 8 significant bits.)"""
    kind = "f16x2" if fp16 else "bf16x2"
    lines = ["{ .reg .b32 c0, c1;"]
    for q in range(4):
        for h in (0, 1):
            lines.append(f"prmt.b32 c{h}, ${4 + h}, $28, {0x7504 | q << 4:#06x};")  # bytes 0x47, 0, code q, 0
            if fp16:
                lines += [f"add.rn.f32 c{h}, c{h}, ${20 + h};", f"mul.rn.f32 c{h}, c{h}, ${12 + h};"]
            else:
                lines.append(f"fma.rn.f32 c{h}, c{h}, ${12 + h}, ${20 + h};")
        lines.append(f"cvt.rn.{kind}.f32 ${q}, c1, c0;")  # the upper half from its first source: column n + 1
    lines.append("}")
    return "\n".join(lines), ",".join(["=r"] * 4 + ["r"] * 32)


_ASM8_BF16, _CONS8 = (gl.constexpr(v) for v in _dequant8_asm(False))
_ASM8_FP16 = gl.constexpr(_dequant8_asm(True)[0])


# [8 j, 64 m, 8 q, 2 h] (code k = 8 j + q of column n = 2 m + h of a dequantizer's 128): each thread one word row
# j and 4 column pairs m (8 adjacent columns), all their 8 q x 2 h in registers, h fastest then q: pack = 16 hands
# one asm call the 16 codes of one column pair
_DQ_L4 = gl.constexpr(gl.BlockedLayout([1, 4, 8, 2], [2, 16, 1, 1], [4, 1, 1, 1], [3, 2, 1, 0]))
# int8: [16 j, 64 m, 4 q, 2 h] (k = 4 j + q): each thread two adjacent word rows (the same 8 k as int4's one row)
# and 8 adjacent columns; pack = 8 hands one asm call the 8 codes of one column pair of one word row
_DQ_L8 = gl.constexpr(gl.BlockedLayout([2, 4, 4, 2], [2, 16, 1, 1], [4, 1, 1, 1], [3, 2, 1, 0]))
# the words of a step, [8 j, COLS] (int8 [16 j, COLS]): the word rows and 8 adjacent columns a thread (the
# dequantizer's layout, 2-D)
_WORDS_2D = gl.constexpr(gl.BlockedLayout([1, 8], [2, 16], [4, 1], [1, 0]))
_WORDS8_2D = gl.constexpr(gl.BlockedLayout([2, 8], [2, 16], [4, 1], [1, 0]))


@gluon.jit
def _load_words(w_slot, STEP: gl.constexpr, BITS: gl.constexpr):
    """Word rows R STEP .. R STEP + R - 1 of w_slot [2 R, COLS] (shared, int32: a group's two k-steps; R = 8 for
    int4, 16 for int8) as [R j, COLS / 2 m, 2 h] in the dequantizer's layout (the reshape and conversion move no
    data: asserted trivial)."""
    COLS: gl.constexpr = w_slot.shape[1]
    ROWS: gl.constexpr = w_slot.shape[0] // 2
    if BITS == 4:
        words = w_slot.slice(STEP * ROWS, ROWS, dim=0).load(_WORDS_2D)
        return gl.convert_layout(gl.reshape(words, [ROWS, COLS // 2, 2]), gl.SliceLayout(2, _DQ_L4),
                                 assert_trivial=True)
    else:
        words = w_slot.slice(STEP * ROWS, ROWS, dim=0).load(_WORDS8_2D)
        return gl.convert_layout(gl.reshape(words, [ROWS, COLS // 2, 2]), gl.SliceLayout(2, _DQ_L8),
                                 assert_trivial=True)


@gluon.jit
def _load_pairs(slot, HAS_ZERO: gl.constexpr, BITS: gl.constexpr):
    """A group's scale pairs (int32: (s_2m, s_2m+1) as 16-bit floats) or zero pairs (int16: z_2m | z_2m+1 << 8,
    then sign-extended: only its two low bytes are read) of the slot [1, COLS / 2], as [1, COLS / 2, 1, 1]."""
    if BITS == 4:
        L_PAIR: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, gl.SliceLayout(3, _DQ_L4)))
    else:
        L_PAIR: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, gl.SliceLayout(3, _DQ_L8)))
    v = slot.reshape([slot.shape[1]]).load(L_PAIR)
    if HAS_ZERO:
        v = v.to(gl.int32)
    return gl.expand_dims(gl.expand_dims(gl.expand_dims(v, 0), 2), 3)


@gluon.jit
def _int8_operands(s, z, HAS_ZERO: gl.constexpr, DTYPE: gl.constexpr):
    """The float32 operands (a, b) [1, COLS / 2, 1, 2] of `_dequant8_asm` for column n = 2 m + h from a group's
    scale pairs s and zero pairs z (`_load_pairs`; symmetric: z = 128): bf16 a = s, b = -(32768 + z) s (exact: 16 x
    8 significant bits); fp16 a = s, b = -(32768 + z). Once a group, not a code."""
    L_H: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(2, _DQ_L8)))
    h = gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.arange(0, 2, layout=L_H), 0), 1), 2)  # [1, 1, 1, 2]
    half = (s >> (16 * h)) & 0xFFFF  # [1, COLS / 2, 1, 2]: column n's 16 bits
    if DTYPE == gl.float16:
        scale = half.to(gl.int16).to(gl.float16, bitcast=True).to(gl.float32)
    else:
        scale = (half << 16).to(gl.float32, bitcast=True)
    if HAS_ZERO:
        magic_z = 32768.0 + ((z >> (8 * h)) & 0xFF).to(gl.float32)
    else:
        magic_z = gl.full_like(scale, 32768.0 + 128.0)
    if DTYPE == gl.float16:
        return scale, -magic_z
    else:
        return scale, -(magic_z * scale)


@gluon.jit
def _dequantize(words, s, z, magic, HAS_ZERO: gl.constexpr, DTYPE: gl.constexpr, BITS: gl.constexpr):
    """The DTYPE tile [64, COLS] = s * (c - z) (k rows, n columns) of `words` (`_load_words`) with the group's scale
    pairs s and zero pairs z (`_load_pairs`; z unused without zero points); int8: s, z the float32 operands of
    `_int8_operands`, magic the int32 0x47000000 that ptxas cannot fold (`_dequant8_asm`; int4: unused)."""
    COLS: gl.constexpr = words.shape[1] * 2
    if BITS == 4:
        L_Q: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(3, _DQ_L4)))  # [8 q]
        q = gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.arange(0, 8, layout=L_Q), 0), 1), 3)  # [1, 1, 8, 1]
        words, _ = gl.broadcast(gl.expand_dims(words, 2), q)  # [8, COLS / 2, 8, 2]: the word pair for every q
        if HAS_ZERO:
            if DTYPE == gl.float16:
                tile = gl.inline_asm_elementwise(_ASM_Z_FP16, _CONS_Z, [words, z, s], dtype=gl.float16,
                                                 is_pure=True, pack=16)
            else:
                tile = gl.inline_asm_elementwise(_ASM_Z_BF16, _CONS_Z, [words, z, s], dtype=gl.bfloat16,
                                                 is_pure=True, pack=16)
        else:
            if DTYPE == gl.float16:
                tile = gl.inline_asm_elementwise(_ASM_S_FP16, _CONS_S, [words, s], dtype=gl.float16, is_pure=True,
                                                 pack=16)
            else:
                tile = gl.inline_asm_elementwise(_ASM_S_BF16, _CONS_S, [words, s], dtype=gl.bfloat16, is_pure=True,
                                                 pack=16)
    else:
        L_Q8: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(1, gl.SliceLayout(3, _DQ_L8)))  # [4 q]
        q = gl.expand_dims(gl.expand_dims(gl.expand_dims(gl.arange(0, 4, layout=L_Q8), 0), 1), 3)  # [1, 1, 4, 1]
        words, _ = gl.broadcast(gl.expand_dims(words, 2), q)  # [16, COLS / 2, 4, 2]
        a, _ = gl.broadcast(s, words)
        b, _ = gl.broadcast(z, words)
        m = gl.full_like(words, 0) | magic
        if DTYPE == gl.float16:
            tile = gl.inline_asm_elementwise(_ASM8_FP16, _CONS8, [words, a, b, m], dtype=gl.float16, is_pure=True,
                                             pack=8)
        else:
            tile = gl.inline_asm_elementwise(_ASM8_BF16, _CONS8, [words, a, b, m], dtype=gl.bfloat16, is_pure=True,
                                             pack=8)
    return gl.reshape(gl.permute(tile, (0, 2, 1, 3)), [_BK, COLS])  # (j, q, m, h) -> [k, n]


# ---------------------------------------------------------------------------------------------
# Schedule


@gluon.jit
def _schedule(M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STREAM_K: gl.constexpr):
    """(rows, k_tiles, start, n_steps): the program's steps (always an even number of whole groups: K % 128 == 0).
    Stream-K: units [start, start + n_steps) of the U = tiles x k_tiles (unit v: k-step v % k_tiles of tile v //
    k_tiles), program p the groups [p U2 / P, (p + 1) U2 / P) of the U2 = U / 2 (products in 64 bits).
    Data-parallel: tiles pid, pid + P, .. (start = 0), k_tiles steps each."""
    rows = gl.cdiv(M, BLOCK_M)
    k_tiles = K // _BK
    tiles = rows * gl.cdiv(N, BLOCK_N)
    programs = gl.num_programs(0)
    pid = gl.program_id(0)
    if STREAM_K:  # in whole groups (pairs of steps), so that a dequantizer iteration never straddles two runs
        total2 = tiles.to(gl.int64) * (k_tiles // 2)
        start = (2 * (pid * total2 // programs)).to(gl.int32)
        n_steps = (2 * ((pid + 1) * total2 // programs)).to(gl.int32) - start
    else:
        start = pid * 0
        n_steps = gl.cdiv(tiles - pid, programs) * k_tiles
    return rows, k_tiles, start, n_steps


@gluon.jit
def _step(i, rows, k_tiles, start, STREAM_K: gl.constexpr):
    """(tile, kk) of the program's step i."""
    if STREAM_K:
        unit = start + i
        tile = unit // k_tiles
        kk = unit - tile * k_tiles
    else:
        local = i // k_tiles
        tile = gl.program_id(0) + local * gl.num_programs(0)
        kk = i - local * k_tiles
    return tile, kk


@gluon.jit
def _first(rows, k_tiles, start, STREAM_K: gl.constexpr):
    """The cursor (tile, kk, pid_m, pid_n) of the program's step 0."""
    tile, kk = _step(0, rows, k_tiles, start, STREAM_K)
    pid_n = tile // rows
    return tile, kk, tile - pid_n * rows, pid_n


@gluon.jit
def _next(tile, kk, pid_m, pid_n, rows, k_tiles, STREAM_K: gl.constexpr):
    """The cursor of the step after (tile, kk): no division but at a tile change (a step's divisions by the
    run-time k_tiles and rows would cost the dequantizer ~1.5 instructions a code)."""
    kk += 1
    if kk == k_tiles:
        kk = 0
        if STREAM_K:
            tile += 1
        else:
            tile += gl.num_programs(0)
        pid_n = tile // rows
        pid_m = tile - pid_n * rows
    return tile, kk, pid_m, pid_n


# ---------------------------------------------------------------------------------------------
# Partitions


@gluon.jit
def _loader(x_desc, x_smem, x_ready, mma_done, M, N, K, BLOCK_N: gl.constexpr, CONSUMERS: gl.constexpr,
            STAGES: gl.constexpr, STREAM_K: gl.constexpr):
    """x's boxes of step i into slot i % STAGES, once the slot's previous MMA has completed."""
    ROWS: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_M: gl.constexpr = ROWS * CONSUMERS
    rows, k_tiles, start, n_steps = _schedule(M, N, K, BLOCK_M, BLOCK_N, STREAM_K)
    tile, kk, pid_m, pid_n = _first(rows, k_tiles, start, STREAM_K)
    for i in range(n_steps):
        slot = i % STAGES
        mbarrier.wait(mma_done.index(slot), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(x_ready.index(slot), CONSUMERS * x_desc.block_type.nbytes)
        for c in gl.static_range(CONSUMERS):
            tma.async_copy_global_to_shared(x_desc, [pid_m * BLOCK_M + c * ROWS, kk * _BK], x_ready.index(slot),
                                            x_smem.index(slot * CONSUMERS + c))
        tile, kk, pid_m, pid_n = _next(tile, kk, pid_m, pid_n, rows, k_tiles, STREAM_K)


@gluon.jit
def _b_wait(mma_done, i, STAGES: gl.constexpr, LEAN: gl.constexpr):
    """Until B slot i % STAGES (use i // STAGES) is free: its previous MMA has completed."""
    barrier_not_needed(i, LEAN)  # each thread waits for itself; its stores follow its own wait
    mbarrier.wait(mma_done.index(i % STAGES), ((i // STAGES) & 1) ^ 1)


@gluon.jit
def _b_write(tile_b, b_smem, i, DQ: gl.constexpr, STAGES: gl.constexpr, LEAN: gl.constexpr):
    """Step i's dequantized columns into B slot i % STAGES (after _b_wait; _b_publish hands them over)."""
    COLS: gl.constexpr = tile_b.shape[1]
    barrier_not_needed(i, LEAN)  # Membar's after the last arrive: each thread writes its own part of a free slot
    if COLS == b_smem.shape[2]:
        b_smem.index(i % STAGES).store(tile_b)
    else:
        b_smem.index(i % STAGES).slice(DQ * COLS, COLS, dim=1).store(tile_b)


@gluon.jit
def _b_publish(b_ready, i, STAGES: gl.constexpr):
    """Step i's B columns (_b_write) made the consumers': each thread's proxy fence (its generic-proxy stores before
    the wgmma's async-proxy reads; it waits for them to complete), then the arrive (a bar.sync of the warp group,
    then one elected arrive)."""
    fence_async_shared()
    mbarrier.arrive(b_ready.index(i % STAGES))


@gluon.jit
def _dequantizer(w_desc, s_desc, z_desc, w_smem, s_smem, z_smem, b_smem, w_ready, b_ready, mma_done, M, N, K,
                 DQ: gl.constexpr, BLOCK_M: gl.constexpr, STAGES: gl.constexpr, W_STAGES: gl.constexpr,
                 HAS_ZERO: gl.constexpr, STREAM_K: gl.constexpr, LEAN: gl.constexpr, BITS: gl.constexpr):
    """Dequantizer DQ: columns DQ * COLS .. of every step's B tile, from its own words ring (module docstring),
    one group (two steps: 2 R word rows, R = 8 for int4 and 16 for int8, one row of scales and zeros) an iteration;
    w_smem [W_STAGES, 2 R, COLS], s_smem / z_smem [W_STAGES, 1, COLS / 2] are its own. The cursor (tile, kk, pid_m,
    pid_n) walks the groups whose words are loaded, W_STAGES ahead of group g."""
    BLOCK_N: gl.constexpr = b_smem.shape[2]
    DTYPE: gl.constexpr = b_smem.dtype
    COLS: gl.constexpr = w_desc.block_type.shape[1]
    R: gl.constexpr = w_desc.block_type.shape[0] // 2  # word rows a k-step
    magic = (N >> 31) | 0x47000000  # int8's 32768.0 (N >= 0): a register, not a constant (`_dequant8_asm`)
    rows, k_tiles, start, n_steps = _schedule(M, N, K, BLOCK_M, BLOCK_N, STREAM_K)
    n_groups = n_steps // 2
    W_BYTES: gl.constexpr = w_desc.block_type.nbytes + s_desc.block_type.nbytes + (z_desc.block_type.nbytes
                                                                                   if HAS_ZERO else 0)
    tile, kk, pid_m, pid_n = _first(rows, k_tiles, start, STREAM_K)
    for g in range(gl.minimum(n_groups, W_STAGES)):  # prologue: the first W_STAGES groups' words
        col = pid_n * BLOCK_N + DQ * COLS
        bar = w_ready.index(g)
        mbarrier.expect(bar, W_BYTES)
        tma.async_copy_global_to_shared(w_desc, [kk * R, col], bar, w_smem.index(g))
        tma.async_copy_global_to_shared(s_desc, [kk * _BK // _GROUP, col // 2], bar, s_smem.index(g))
        if HAS_ZERO:
            tma.async_copy_global_to_shared(z_desc, [kk * _BK // _GROUP, col // 2], bar, z_smem.index(g))
        tile, kk, pid_m, pid_n = _next(tile, kk + 1, pid_m, pid_n, rows, k_tiles, STREAM_K)
    for g in range(n_groups):
        ws = g % W_STAGES
        barrier_not_needed(g, LEAN)  # each thread waits for the words itself
        mbarrier.wait(w_ready.index(ws), (g // W_STAGES) & 1)
        w_slot = w_smem.index(ws)
        s = _load_pairs(s_smem.index(ws), False, BITS)
        z = _load_pairs(z_smem.index(ws), True, BITS) if HAS_ZERO else s
        if BITS == 8:
            s, z = _int8_operands(s, z, HAS_ZERO, DTYPE)
        words_a = _load_words(w_slot, 0, BITS)
        words_b = _load_words(w_slot, 1, BITS)
        # Each step's B is published (fence, arrive) one dequantization after its stores, past the wait for the
        # next step's slot, so that the stores complete under that arithmetic instead of in the fence (Nsight
        # Compute, M = 64: a third of the dequantizers' stall samples sat in the fence and barrier right after the
        # second step's stores). Step 2g - 1's fence also waits for this thread's loads of the words slot, and the
        # arrive's barrier of the warp group makes them every thread's: then one thread may refill the slot.
        tile_a = _dequantize(words_a, s, z, magic, HAS_ZERO, DTYPE, BITS)
        _b_wait(mma_done, 2 * g, STAGES, LEAN)
        fence_async_shared()
        mbarrier.arrive(b_ready.index((2 * g + STAGES - 1) % STAGES), pred=g > 0)  # step 2g - 1's B
        if g + W_STAGES < n_groups:
            col = pid_n * BLOCK_N + DQ * COLS
            bar = w_ready.index(ws)
            # Membar's barriers before the expect and each TMA copy (for the slot's loads; each copy "writes" the
            # mbarrier the expect wrote): not needed after the fence and the arrive's barrier (Gluon 3.6 lowers
            # an arrive of several warps to a bar.sync of them, then one elected arrive, the pred on the arrive)
            barrier_not_needed(g, LEAN)
            mbarrier.expect(bar, W_BYTES)
            barrier_not_needed(g, LEAN)
            tma.async_copy_global_to_shared(w_desc, [kk * R, col], bar, w_slot)
            barrier_not_needed(g, LEAN)
            tma.async_copy_global_to_shared(s_desc, [kk * _BK // _GROUP, col // 2], bar, s_smem.index(ws))
            if HAS_ZERO:
                barrier_not_needed(g, LEAN)
                tma.async_copy_global_to_shared(z_desc, [kk * _BK // _GROUP, col // 2], bar, z_smem.index(ws))
            tile, kk, pid_m, pid_n = _next(tile, kk + 1, pid_m, pid_n, rows, k_tiles, STREAM_K)
        _b_write(tile_a, b_smem, 2 * g, DQ, STAGES, LEAN)
        tile_b = _dequantize(words_b, s, z, magic, HAS_ZERO, DTYPE, BITS)
        _b_wait(mma_done, 2 * g + 1, STAGES, LEAN)
        _b_publish(b_ready, 2 * g, STAGES)
        _b_write(tile_b, b_smem, 2 * g + 1, DQ, STAGES, LEAN)
    if n_groups > 0:
        _b_publish(b_ready, 2 * n_groups - 1, STAGES)


@gluon.jit
def _fixup(acc, ws_ptr, cnt_ptr, offs, tile, start, k_tiles, total2, CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr):
    """(acc, final) for a stream-K piece of `tile` (module docstring): the tile's head piece (k from 0: the last
    segment of program `first`, or its only one) waits for the others, sums them after its own in k order and
    returns (the tile's sum, True); any other piece (the first segment of a later program) is stored for the head
    and counted in, (acc, False). offs: a workspace slot's offsets in acc's layout; total2: the groups (pairs of
    steps) shared by the programs (64-bit), program p owning groups [p U2 / P, (p + 1) U2 / P)."""
    SLOT: gl.constexpr = acc.shape[0] * acc.shape[1]
    programs = gl.num_programs(0)
    first_unit = tile * k_tiles
    first_group = (first_unit // 2).to(gl.int64)
    # the owners of the tile's first and last groups: group v belongs to program ((v + 1) P - 1) // U2
    first = (((first_group + 1) * programs - 1) // total2).to(gl.int32)
    last = (((first_group + k_tiles // 2) * programs - 1) // total2).to(gl.int32)
    counter = cnt_ptr + tile * CONSUMERS + CONSUMER
    head = start <= first_unit
    if head:
        seen = 0
        while seen < last - first:  # later programs' first segments, which wait for nothing
            seen = gl.atomic_add(counter, 0, sem="acquire", scope="gpu")
        gl.store(counter, 0)  # every piece has arrived: zero for the next launch
        for g in range(first + 1, last + 1):  # k order; .cg: other SMs wrote these, skip this SM's L1
            acc += gl.load(ws_ptr + (g * CONSUMERS + CONSUMER).to(gl.int64) * SLOT + offs, cache_modifier=".cg")
    else:  # a program's first segment: its slot (program, consumer) is this piece's alone
        gl.store(ws_ptr + (gl.program_id(0) * CONSUMERS + CONSUMER).to(gl.int64) * SLOT + offs, acc)
        gl.thread_barrier()  # the warp group's partial is written before the arrival is published
        gl.atomic_add(counter, 1, sem="release", scope="gpu")
    return acc, head


@gluon.jit
def _consumer(x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N, K,
              CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr, STAGES: gl.constexpr, STREAM_K: gl.constexpr,
              HAS_BIAS: gl.constexpr, LEAN: gl.constexpr):
    """Consumer warp group CONSUMER: rows CONSUMER * ROWS .. of each tile; one fp32 accumulator per segment (a
    whole tile, or a stream-K piece of one)."""
    ROWS: gl.constexpr = x_smem.shape[1]
    BLOCK_N: gl.constexpr = b_smem.shape[2]
    BLOCK_M: gl.constexpr = ROWS * CONSUMERS
    # wgmma n <= 128: one m64n256k16 instruction needs ~154 registers, over the kernel-wide cap of 65536 / (32 x
    # the launch's warps) that ptxas applies to a single instruction (128 at 13-16 warps)
    MMA_N: gl.constexpr = min(BLOCK_N, 128)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, MMA_N, 16])
    rows, k_tiles, start, n_steps = _schedule(M, N, K, BLOCK_M, BLOCK_N, STREAM_K)
    total2 = (rows * gl.cdiv(N, BLOCK_N)).to(gl.int64) * (k_tiles // 2)
    r_idx = gl.arange(0, ROWS, layout=gl.SliceLayout(1, acc_layout))
    c_idx = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, acc_layout))
    offs = gl.expand_dims(r_idx, 1) * BLOCK_N + gl.expand_dims(c_idx, 0)  # a workspace slot [ROWS, BLOCK_N]
    i = 0
    while i < n_steps:
        tile, k0 = _step(i, rows, k_tiles, start, STREAM_K)
        seg = gl.minimum(k_tiles - k0, n_steps - i)  # steps of this segment
        acc = gl.zeros([ROWS, BLOCK_N], gl.float32, acc_layout)
        for j in range(seg):
            slot = i % STAGES
            phase = (i // STAGES) & 1
            barrier_not_needed(i, LEAN)  # each warp waits for itself; the wgmma reads what the waits published
            mbarrier.wait(x_ready.index(slot), phase)
            mbarrier.wait(b_ready.index(slot), phase)
            acc = warpgroup_mma(x_smem.index(slot * CONSUMERS + CONSUMER), b_smem.index(slot), acc, is_async=True)
            # the MMA of the previous step has completed: its slot (x and B) is free (none before a segment's first)
            acc = warpgroup_mma_wait(1, deps=(acc, ))
            mbarrier.arrive(mma_done.index((i + STAGES - 1) % STAGES), pred=j > 0)
            i += 1
        acc = warpgroup_mma_wait(0, deps=(acc, ))
        mbarrier.arrive(mma_done.index((i + STAGES - 1) % STAGES))
        pid_m = tile % rows
        pid_n = tile // rows
        final = True
        if STREAM_K:
            if (k0 > 0) | (k0 + seg < k_tiles):  # a piece of a cut tile
                acc, final = _fixup(acc, ws_ptr, cnt_ptr, offs, tile, start, k_tiles, total2, CONSUMER, CONSUMERS)
        if final:
            out_rows = pid_m * BLOCK_M + CONSUMER * ROWS + r_idx
            out_cols = pid_n * BLOCK_N + c_idx
            if HAS_BIAS:
                bias = gl.load(bias_ptr + out_cols, mask=out_cols < N, other=0.0).to(gl.float32)
                acc += gl.expand_dims(bias, 0)
            ptrs = out_ptr + gl.expand_dims(out_rows.to(gl.int64) * N, 1) + gl.expand_dims(out_cols, 0)
            mask = gl.expand_dims(out_rows < M, 1) & gl.expand_dims(out_cols < N, 0)
            gl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)


@gluon.jit(do_not_specialize=["M"])  # M only bounds loops and masks: one compiled kernel for every M
def _w4a16_ws_kernel(x_desc, w_desc, s_desc, z_desc, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N, K,
                     BLOCK_N: gl.constexpr, CONSUMERS: gl.constexpr, DEQUANTIZERS: gl.constexpr,
                     STAGES: gl.constexpr, W_STAGES: gl.constexpr, HAS_ZERO: gl.constexpr, HAS_BIAS: gl.constexpr,
                     STREAM_K: gl.constexpr, CONSUMER_REGS: gl.constexpr, DEQUANT_REGS: gl.constexpr,
                     LOADER_REGS: gl.constexpr, LEAN: gl.constexpr, BITS: gl.constexpr = 4,
                     PDL: gl.constexpr = False):
    """Persistent warp-specialised W4A16 / W8A16 GEMM (module docstring): consumer 0 is the default partition
    (num_warps = 4); consumer 1, the dequantizers and the loader are workers. z_desc: a placeholder (the scales')
    without zero points; bias_ptr: the output's without a bias. ws_ptr / cnt_ptr: stream-K's workspace and
    counters (placeholders otherwise). out [M, N] contiguous, of x's dtype. PDL: launched as a programmatic
    dependent (_support.pdl_options): shared memory and barriers set up before the wait for the kernel ahead."""
    ROWS: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_M: gl.constexpr = ROWS * CONSUMERS
    dtype: gl.constexpr = x_desc.dtype
    x_smem = gl.allocate_shared_memory(dtype, [STAGES * CONSUMERS, ROWS, _BK], x_desc.layout)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([_BK, BLOCK_N], dtype)
    b_smem = gl.allocate_shared_memory(dtype, [STAGES, _BK, BLOCK_N], b_layout)
    # each dequantizer's own words ring (separate allocations: one a partition)
    w_smem0 = gl.allocate_shared_memory(gl.int32, [W_STAGES] + w_desc.block_type.shape, w_desc.layout)
    s_smem0 = gl.allocate_shared_memory(gl.int32, [W_STAGES] + s_desc.block_type.shape, s_desc.layout)
    if HAS_ZERO:
        z_smem0 = gl.allocate_shared_memory(gl.int16, [W_STAGES] + z_desc.block_type.shape, z_desc.layout)
    else:
        z_smem0 = s_smem0  # not read
    x_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    b_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mma_done = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    w_ready0 = gl.allocate_shared_memory(gl.int64, [W_STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(x_ready.index(s), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(b_ready.index(s), count=DEQUANTIZERS)  # one elected arrive per dequantizer
        mbarrier.init(mma_done.index(s), count=CONSUMERS)  # one elected arrive per consumer
    for s in gl.static_range(W_STAGES):
        mbarrier.init(w_ready0.index(s), count=1)  # the dequantizer's expect; the TMA bytes
    if DEQUANTIZERS == 2:
        w_smem1 = gl.allocate_shared_memory(gl.int32, [W_STAGES] + w_desc.block_type.shape, w_desc.layout)
        s_smem1 = gl.allocate_shared_memory(gl.int32, [W_STAGES] + s_desc.block_type.shape, s_desc.layout)
        if HAS_ZERO:
            z_smem1 = gl.allocate_shared_memory(gl.int16, [W_STAGES] + z_desc.block_type.shape, z_desc.layout)
        else:
            z_smem1 = s_smem1
        w_ready1 = gl.allocate_shared_memory(gl.int64, [W_STAGES, 1], mbarrier.MBarrierLayout())
        for s in gl.static_range(W_STAGES):
            mbarrier.init(w_ready1.index(s), count=1)
    fence_async_shared()
    await_previous(PDL)

    # the partitions' arguments inline: a tuple bound to a name would turn its constexprs into tensors
    if CONSUMERS == 2:
        if DEQUANTIZERS == 2:
            gl.warp_specialize([
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 0, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 1, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem0, s_smem0, z_smem0, b_smem, w_ready0, b_ready, mma_done,
                                M, N, K, 0, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem1, s_smem1, z_smem1, b_smem, w_ready1, b_ready, mma_done,
                                M, N, K, 1, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_loader, (x_desc, x_smem, x_ready, mma_done, M, N, K, BLOCK_N, CONSUMERS, STAGES, STREAM_K)),
            ], [4, 4, 4, 1], [CONSUMER_REGS, DEQUANT_REGS, DEQUANT_REGS, LOADER_REGS])
        else:
            gl.warp_specialize([
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 0, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 1, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem0, s_smem0, z_smem0, b_smem, w_ready0, b_ready, mma_done,
                                M, N, K, 0, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_loader, (x_desc, x_smem, x_ready, mma_done, M, N, K, BLOCK_N, CONSUMERS, STAGES, STREAM_K)),
            ], [4, 4, 1], [CONSUMER_REGS, DEQUANT_REGS, LOADER_REGS])
    else:
        if DEQUANTIZERS == 2:
            gl.warp_specialize([
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 0, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem0, s_smem0, z_smem0, b_smem, w_ready0, b_ready, mma_done,
                                M, N, K, 0, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem1, s_smem1, z_smem1, b_smem, w_ready1, b_ready, mma_done,
                                M, N, K, 1, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_loader, (x_desc, x_smem, x_ready, mma_done, M, N, K, BLOCK_N, CONSUMERS, STAGES, STREAM_K)),
            ], [4, 4, 1], [DEQUANT_REGS, DEQUANT_REGS, LOADER_REGS])
        else:
            gl.warp_specialize([
                (_consumer, (x_smem, b_smem, x_ready, b_ready, mma_done, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                             K, 0, CONSUMERS, STAGES, STREAM_K, HAS_BIAS, LEAN)),
                (_dequantizer, (w_desc, s_desc, z_desc, w_smem0, s_smem0, z_smem0, b_smem, w_ready0, b_ready, mma_done,
                                M, N, K, 0, BLOCK_M, STAGES, W_STAGES, HAS_ZERO, STREAM_K,
                                LEAN, BITS)),
                (_loader, (x_desc, x_smem, x_ready, mma_done, M, N, K, BLOCK_N, CONSUMERS, STAGES, STREAM_K)),
            ], [4, 1], [DEQUANT_REGS, LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# The register-A kernel (swap AB): MMA warp groups dequantize into the wgmma's A operand


# [64 r, 8 j, 8 q] (k = 8 j + q) of a warp group's A tile for one k-step, as the wgmma A operand holds it (mma v3,
# k_width 2): registers q bit 0, r + 8, j (k + 8, then the 16-wide k blocks); lanes q = 2 t (t = l % 4), r = l / 4;
# warps r = 16 w
_RS_A3 = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 0, 1], [8, 0, 0], [0, 1, 0], [0, 2, 0], [0, 4, 0]],
    lane_bases=[[0, 0, 2], [0, 0, 4], [1, 0, 0], [2, 0, 0], [4, 0, 0]],
    warp_bases=[[16, 0, 0], [32, 0, 0]], block_bases=[], shape=[64, 8, 8]))
_RS_WORDS = gl.constexpr(gl.SliceLayout(2, _RS_A3))  # [64 r, 8 j]: a quad's 4 lanes the same words
_RS_ROWS = gl.constexpr(gl.SliceLayout(1, _RS_WORDS))  # [64 r]
_RS_Q = gl.constexpr(gl.SliceLayout(0, gl.SliceLayout(0, _RS_A3)))  # [8 q]
# The A tile's row r holds weight row n = PI(r) = 16 (r // 16) + 2 (r % 8) + (r // 8) % 2, so that a thread's two rows
# (r, r + 8) are adjacent weight rows. The stage's words [8 j, 64 n] and its scale (zero) row [1, 64 n] are loaded in
# that physical order (each thread n and n + 1: the words as LDS.64, the scales as one pair), then permuted in
# registers (`_rs_rows`; no data moves). (A permuted view of the words tile in shared memory is not read as TMA wrote
# it: memdesc_trans of an unswizzled NVMMA layout, found in session 18.)
_RS_WORDS_PHYS = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1], [1, 0], [2, 0], [4, 0]], lane_bases=[[0, 0], [0, 0], [0, 2], [0, 4], [0, 8]],
    warp_bases=[[0, 16], [0, 32]], block_bases=[], shape=[8, 64]))
_RS_ROW_PHYS = gl.constexpr(gl.DistributedLinearLayout(
    reg_bases=[[0, 1]], lane_bases=[[0, 0], [0, 0], [0, 2], [0, 4], [0, 8]], warp_bases=[[0, 16], [0, 32]],
    block_bases=[], shape=[1, 64]))


def _rs_asm(fp16: bool) -> str:
    """PTX of one `inline_asm_elementwise` call with pack = 2 (the codes 2t, 2t + 1 of one word, i.e. byte t): $1 (=
    $2) the word, $3 the PRMT selector of byte t, $5 the scale pair (s, s) as int32, $7 the pair -(magic + z); $0 the
    two 16-bit floats. z = w >> 4; one PRMT puts byte t of w in byte 0 and byte t of z in byte 2; one LOP3 keeps the
    low nibbles and sets the magic exponent (the pair magic + c); a packed fma subtracts magic + z exactly, a packed
    multiply scales (one rounding): bit for bit dequantize(x.dtype), as `_dequant_asm`."""
    kind, magic, one = ("f16x2", 0x6400, 0x3C00) if fp16 else ("bf16x2", 0x4300, 0x3F80)
    return "\n".join(["{ .reg .b32 z, v, one;", f"mov.b32 one, {one << 16 | one:#010x};", "shr.b32 z, $1, 4;",
                      "prmt.b32 v, $1, z, $3;", f"lop3.b32 v, v, 0x000F000F, {magic * 0x10001:#010x}, 0xEA;",
                      f"fma.rn.{kind} v, v, one, $7;", f"mul.rn.{kind} $0, v, $5;", "}"])


_RS_ASM_BF16, _RS_ASM_FP16 = gl.constexpr(_rs_asm(False)), gl.constexpr(_rs_asm(True))
_RS_CONS = gl.constexpr("=r," + ",".join(["r"] * 8))


@gluon.jit
def _rs_rows(t):
    """t [64] or [64, 8] from the physical row order (n) to the A tile's (r = PI^-1(n)): n's bits (n5 .. n0) become
    (n5, n4, n0, n3, n2, n1)."""
    if len(t.shape) == 1:
        return gl.reshape(gl.permute(gl.reshape(t, [2, 2, 2, 2, 2, 2]), (0, 1, 5, 2, 3, 4)), [64])
    else:
        return gl.reshape(gl.permute(gl.reshape(t, [2, 2, 2, 2, 2, 2, 8]), (0, 1, 5, 2, 3, 4, 6)), [64, 8])


@gluon.jit
def _rs_row_values(slot, col0: gl.constexpr):
    """The stage's scale (zero) row at columns col0 .. col0 + 63 as [64 r] in the A tile's row order."""
    row = gl.reshape(slot.slice(col0, 64, dim=1).load(_RS_ROW_PHYS), [64])
    return gl.convert_layout(_rs_rows(row), _RS_ROWS, assert_trivial=True)


@gluon.jit
def _rs_pairs(s_slot, z_slot, col0: gl.constexpr, HAS_ZERO: gl.constexpr, FP16: gl.constexpr):
    """(scale pairs (s, s), pairs -(magic + z)) as int32 [64 r] of a group (symmetric: z = 8)."""
    s_bits = _rs_row_values(s_slot, col0).to(gl.int16, bitcast=True).to(gl.int32) & 0xFFFF
    NEG: gl.constexpr = 0xE400 if FP16 else 0xC300  # the sign and exponent of -magic
    if HAS_ZERO:
        nz = NEG | _rs_row_values(z_slot, col0).to(gl.int32)
    else:
        nz = gl.full([64], NEG | 8, gl.int32, _RS_ROWS)
    return s_bits * 0x10001, nz * 0x10001


@gluon.jit
def _rs_step(acc, x_smem, w_smem, empty, i, s2, nz2, sel, col0: gl.constexpr, a_layout: gl.constexpr,
             STAGES: gl.constexpr, FP16: gl.constexpr):
    """Step i (its stage waited for by the caller): this warp group's A tile [64 r, 64 k] dequantized from the stage's
    words with the group's pairs, times x's tile; the stage released once the MMA completed."""
    slot = i % STAGES
    words = w_smem.index(slot).slice(col0, 64, dim=1).load(_RS_WORDS_PHYS)
    words = gl.convert_layout(_rs_rows(gl.permute(words, (1, 0))), _RS_WORDS, assert_trivial=True)
    w3, q3 = gl.broadcast(gl.expand_dims(words, 2), gl.expand_dims(gl.expand_dims(sel, 0), 0))
    s3, _ = gl.broadcast(gl.expand_dims(gl.expand_dims(s2, 1), 2), w3)
    z3, _ = gl.broadcast(gl.expand_dims(gl.expand_dims(nz2, 1), 2), w3)
    if FP16:
        a3 = gl.inline_asm_elementwise(_RS_ASM_FP16, _RS_CONS, [w3, q3, s3, z3], dtype=gl.float16, is_pure=True,
                                       pack=2)
    else:
        a3 = gl.inline_asm_elementwise(_RS_ASM_BF16, _RS_CONS, [w3, q3, s3, z3], dtype=gl.bfloat16, is_pure=True,
                                       pack=2)
    a = gl.convert_layout(gl.reshape(a3, [64, _BK]), a_layout, assert_trivial=True)
    acc = warpgroup_mma(a, x_smem.index(slot).permute((1, 0)), acc, is_async=True)
    # wait(0): with an MMA of register A in flight past the next step's dequantization (wait(1), also with two steps
    # an iteration), ptxas of Triton 3.6 serialises every wgmma ("insufficient register resources", C7512, at any
    # .maxnreg); the other warp groups overlap this one's wait
    acc = warpgroup_mma_wait(0, deps=(acc, ))
    mbarrier.arrive(empty.index(slot))
    return acc


@gluon.jit
def _rs_loader(x_desc, w_desc, s_desc, z_desc, x_smem, w_smem, s_smem, z_smem, ready, empty, M, N, K,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr, HAS_ZERO: gl.constexpr, STREAM_K: gl.constexpr):
    """Per step, once its stage is released: x's [BM, 64] tile, the words [8, BLOCK_N], the group's scale (and zero)
    row [1, BLOCK_N] into the stage, by TMA."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BYTES: gl.constexpr = (x_desc.block_type.nbytes + w_desc.block_type.nbytes + s_desc.block_type.nbytes
                           + (z_desc.block_type.nbytes if HAS_ZERO else 0))
    rows, k_tiles, start, n_steps = _schedule(M, N, K, BM, BLOCK_N, STREAM_K)
    tile, kk, pid_m, pid_n = _first(rows, k_tiles, start, STREAM_K)
    for i in range(n_steps):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)
        bar = ready.index(slot)
        mbarrier.expect(bar, BYTES)
        tma.async_copy_global_to_shared(x_desc, [pid_m * BM, kk * _BK], bar, x_smem.index(slot))
        tma.async_copy_global_to_shared(w_desc, [kk * _WORDS, pid_n * BLOCK_N], bar, w_smem.index(slot))
        tma.async_copy_global_to_shared(s_desc, [kk * _BK // _GROUP, pid_n * BLOCK_N], bar, s_smem.index(slot))
        if HAS_ZERO:
            tma.async_copy_global_to_shared(z_desc, [kk * _BK // _GROUP, pid_n * BLOCK_N], bar, z_smem.index(slot))
        tile, kk, pid_m, pid_n = _next(tile, kk, pid_m, pid_n, rows, k_tiles, STREAM_K)


@gluon.jit
def _rs_consumer(x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N, K,
                 CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr, STAGES: gl.constexpr, HAS_ZERO: gl.constexpr,
                 STREAM_K: gl.constexpr, HAS_BIAS: gl.constexpr, LEAN: gl.constexpr):
    """Warp group CONSUMER: weight rows 64 CONSUMER .. of each tile, its fp32 accumulator [64 r, BM] (out^T)."""
    BM: gl.constexpr = x_smem.shape[1]
    BLOCK_N: gl.constexpr = 64 * CONSUMERS
    FP16: gl.constexpr = x_smem.dtype == gl.float16
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BM, 16])
    a_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    rows, k_tiles, start, n_steps = _schedule(M, N, K, BM, BLOCK_N, STREAM_K)
    total2 = (rows * gl.cdiv(N, BLOCK_N)).to(gl.int64) * (k_tiles // 2)
    r_idx = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    m_idx = gl.arange(0, BM, layout=gl.SliceLayout(0, acc_layout))
    offs = gl.expand_dims(r_idx, 1) * BM + gl.expand_dims(m_idx, 0)  # a workspace slot [64, BM]
    t = gl.arange(0, 8, layout=_RS_Q) // 2
    sel = t | (t << 4) | ((t + 4) << 8) | ((t + 4) << 12)  # PRMT: byte t of the word, byte t of the word >> 4
    col0: gl.constexpr = 64 * CONSUMER
    i = 0
    while i < n_steps:
        tile, k0 = _step(i, rows, k_tiles, start, STREAM_K)
        seg = gl.minimum(k_tiles - k0, n_steps - i)
        acc = gl.zeros([64, BM], gl.float32, acc_layout)
        for g in range(seg // 2):  # a group (two steps: segments are whole groups) an iteration: its scales once
            barrier_not_needed(i, LEAN)  # Membar's after the last arrive (whose bar.sync keeps every warp in phase)
            mbarrier.wait(ready.index(i % STAGES), (i // STAGES) & 1)
            s2, nz2 = _rs_pairs(s_smem.index(i % STAGES), z_smem.index(i % STAGES), col0, HAS_ZERO, FP16)
            acc = _rs_step(acc, x_smem, w_smem, empty, i, s2, nz2, sel, col0, a_layout, STAGES, FP16)
            barrier_not_needed(i, LEAN)
            mbarrier.wait(ready.index((i + 1) % STAGES), ((i + 1) // STAGES) & 1)
            acc = _rs_step(acc, x_smem, w_smem, empty, i + 1, s2, nz2, sel, col0, a_layout, STAGES, FP16)
            i += 2
        pid_n = tile // rows
        pid_m = tile - pid_n * rows
        final = True
        if STREAM_K:
            if (k0 > 0) | (k0 + seg < k_tiles):
                acc, final = _fixup(acc, ws_ptr, cnt_ptr, offs, tile, start, k_tiles, total2, CONSUMER, CONSUMERS)
        if final:
            out_n = pid_n * BLOCK_N + col0 + (r_idx // 16) * 16 + (r_idx % 8) * 2 + (r_idx // 8) % 2  # PI(r)
            out_m = pid_m * BM + m_idx
            if HAS_BIAS:
                bias = gl.load(bias_ptr + out_n, mask=out_n < N, other=0.0).to(gl.float32)
                acc += gl.expand_dims(bias, 1)
            ptrs = out_ptr + gl.expand_dims(out_m.to(gl.int64) * N, 0) + gl.expand_dims(out_n, 1)
            mask = gl.expand_dims(out_n < N, 1) & gl.expand_dims(out_m < M, 0)
            gl.store(ptrs, acc.to(out_ptr.dtype.element_ty), mask=mask)


@gluon.jit(do_not_specialize=["M"])  # M only bounds loops and masks: one compiled kernel for every M
def _w4a16_rs_kernel(x_desc, w_desc, s_desc, z_desc, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N, K,
                     CONSUMERS: gl.constexpr, STAGES: gl.constexpr, HAS_ZERO: gl.constexpr, HAS_BIAS: gl.constexpr,
                     STREAM_K: gl.constexpr, CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr,
                     LEAN: gl.constexpr, PDL: gl.constexpr = False):
    """The register-A kernel (module docstring): consumer 0 is the default partition (num_warps = 4); the other
    consumers and the loader are workers. z_desc: the scales' without zero points; bias_ptr: the output's without a
    bias; ws_ptr / cnt_ptr: stream-K's workspace and counters (placeholders otherwise). out [M, N] contiguous. PDL:
    as _w4a16_ws_kernel's."""
    BM: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = 64 * CONSUMERS
    x_smem = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BM, _BK], x_desc.layout)
    w_smem = gl.allocate_shared_memory(gl.int32, [STAGES] + w_desc.block_type.shape, w_desc.layout)
    s_smem = gl.allocate_shared_memory(s_desc.dtype, [STAGES] + s_desc.block_type.shape, s_desc.layout)
    if HAS_ZERO:
        z_smem = gl.allocate_shared_memory(z_desc.dtype, [STAGES] + z_desc.block_type.shape, z_desc.layout)
    else:
        z_smem = s_smem  # not read
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)  # the loader's expect; the TMA bytes complete the phase
        mbarrier.init(empty.index(s), count=CONSUMERS)  # one elected arrive per consumer
    fence_async_shared()
    await_previous(PDL)
    # the partitions' arguments inline: a tuple bound to a name would turn its constexprs into tensors
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 0, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 1, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_loader, (x_desc, w_desc, s_desc, z_desc, x_smem, w_smem, s_smem, z_smem, ready, empty, M, N, K,
                          BLOCK_N, STAGES, HAS_ZERO, STREAM_K)),
        ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 0, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 1, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 2, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_consumer, (x_smem, w_smem, s_smem, z_smem, ready, empty, out_ptr, bias_ptr, ws_ptr, cnt_ptr, M, N,
                            K, 3, CONSUMERS, STAGES, HAS_ZERO, STREAM_K, HAS_BIAS, LEAN)),
            (_rs_loader, (x_desc, w_desc, s_desc, z_desc, x_smem, w_smem, s_smem, z_smem, ready, empty, M, N, K,
                          BLOCK_N, STAGES, HAS_ZERO, STREAM_K)),
        ], [4, 4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, CONSUMER_REGS, LOADER_REGS])


# ---------------------------------------------------------------------------------------------
# Host side


def layouts(v: Variant, dtype: torch.dtype) -> dict:
    """Shared layouts of the TMA boxes: x's [ROWS, 64] 16-bit tile 128-byte swizzled (the wgmma's A operand);
    words, scale pairs, zero pairs unswizzled (read by ordinary shared loads)."""
    return dict(x=gl.NVMMASharedLayout.get_default_for([v.rows, BLOCK_K], GL_DTYPES[dtype]),
                w=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2),
                s=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=2),
                z=gl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=16, rank=2))


def boxes(v: Variant) -> dict:
    # TMA writes shared memory at 128-byte aligned addresses: every box here is a multiple of 128 bytes
    return dict(x=[v.rows, BLOCK_K], w=[2 * v.word_rows, v.dq_cols], s=[1, v.dq_cols // 2], z=[1, v.dq_cols // 2])


def constexprs(v: Variant, has_zero: bool, has_bias: bool, pdl: Optional[dict] = None) -> dict:
    """_w4a16_ws_kernel's constexprs; pdl: _support.pdl_options' keywords (PDL and the launch's flag; None: off)."""
    return dict(BLOCK_N=v.block_n, CONSUMERS=v.consumers, DEQUANTIZERS=v.dequantizers, STAGES=v.stages,
                W_STAGES=v.w_stages, HAS_ZERO=has_zero, HAS_BIAS=has_bias, STREAM_K=v.stream_k,
                CONSUMER_REGS=v.consumer_regs or 24, DEQUANT_REGS=v.dequant_regs, LOADER_REGS=v.loader_regs,
                LEAN=softmax_sm90.LEAN_BARRIERS, BITS=v.bits, **(pdl or {"PDL": False}))


def pair_views(scales: torch.Tensor, zeros: Optional[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The scales as int32 [K / G, N / 2] (a word: the 16-bit pair (s_2m, s_2m+1)) and the zeros as int16 [K / G,
    N / 2] (z_2m | z_2m+1 << 8), which TMA moves; without zeros the scale pairs again (a placeholder, never read)."""
    s = scales.view(torch.int32)
    return s, (s if zeros is None else zeros.view(torch.int16))


class QuantWSPlan:
    """The launch of _w4a16_ws_kernel with variant v for one call's shapes, strides and dtypes (what quant_matmul's
    plan key fixes), called as quant_matmul runs a path: (rows, packed, scales, zeros, bias, out). rows [M, K] and
    the weight must suit the kernel (`supports`); out [M, N] contiguous, of rows' dtype. The first call compiles
    through Gluon's dispatch with checked descriptors; later ones launch the compiled kernel directly. Stream-K's
    workspace: fp32 partials (programs x the tile: 17.3 MB at 256 x 128 on 132 SMs) allocated per call, and the
    stream's arrival counters (_support.arrival_counters)."""

    __slots__ = ("sizes", "launch", "partials", "counters", "device")

    def __init__(self, v: Variant, rows: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor,
                 zeros: Optional[torch.Tensor], bias: Optional[torch.Tensor], num_sms: int,
                 pdl: Optional[dict] = None):
        M, K = rows.shape
        N = packed.shape[1]
        lay, box = layouts(v, rows.dtype), boxes(v)
        z_key = "s" if zeros is None else "z"  # without zeros the scale pairs' descriptor stands in
        if packed.shape[0] * 32 // v.bits != K:
            raise ValueError(f"packed: {packed.shape[0]} word rows are not K = {K} codes of {v.bits} bits ({v.name})")
        views = {"x": ([M, K], [rows.stride(0), 1]), "w": ([packed.shape[0], N], [N, 1]),
                 "s": ([K // GROUP, N // 2], [N // 2, 1]),
                 "z": ([K // GROUP, N // 2], [N // 2, 1])}
        self.launch = GluonLaunch(_w4a16_ws_kernel, (v.programs(M, N, K, num_sms),),
                                  [(*views[k], box[k], lay[k]) for k in ("x", "w", "s", z_key)],
                                  constexprs(v, zeros is not None, bias is not None, pdl), rows.device.index)
        self.sizes = (M, N, K)
        self.device = rows.device
        # stream-K's (elements of the partials, counters); without, float32 / int32 placeholders
        self.partials = self.launch.grid[0] * v.block_m * v.block_n if v.stream_k else 1
        self.counters = v.tiles(M, N) * v.consumers if v.stream_k else 1

    def __call__(self, rows, packed, scales, zeros, bias, out) -> None:
        s, z = pair_views(scales, zeros)
        partials = torch.empty(self.partials, device=self.device, dtype=torch.float32)
        self.launch((rows, packed, s, z), out, out if bias is None else bias, partials,
                    arrival_counters(self.device, self.counters), *self.sizes)


class QuantRSPlan:
    """The launch of _w4a16_rs_kernel with variant v for one call's shapes, strides and dtypes, as QuantWSPlan (its
    calls, workspace and counters alike): x [M, K], the words [K / 8, N], the scales [K / G, N] (and zeros) by TMA."""

    __slots__ = ("sizes", "launch", "partials", "counters", "device")

    def __init__(self, v: RSVariant, rows: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor,
                 zeros: Optional[torch.Tensor], bias: Optional[torch.Tensor], num_sms: int,
                 pdl: Optional[dict] = None):
        M, K = rows.shape
        N = packed.shape[1]
        box = v.boxes(rows.dtype)
        views = dict(x=([M, K], [rows.stride(0), 1]), w=([K // 8, N], [N, 1]), s=([K // GROUP, N], [N, 1]),
                     z=([K // GROUP, N], [N, 1]))
        z_key = "s" if zeros is None else "z"  # without zeros the scales' descriptor stands in
        self.launch = GluonLaunch(_w4a16_rs_kernel, (v.programs(M, N, K, num_sms),),
                                  [(*views[k], *box[k]) for k in ("x", "w", "s", z_key)],
                                  v.constexprs(zeros is not None, bias is not None, pdl), rows.device.index)
        self.sizes = (M, N, K)
        self.device = rows.device
        self.partials = self.launch.grid[0] * v.block_m * v.block_n if v.stream_k else 1
        self.counters = v.tiles(M, N) * v.consumers if v.stream_k else 1

    def __call__(self, rows, packed, scales, zeros, bias, out) -> None:
        partials = torch.empty(self.partials, device=self.device, dtype=torch.float32)
        self.launch((rows, packed, scales, scales if zeros is None else zeros), out, out if bias is None else bias,
                    partials, arrival_counters(self.device, self.counters), *self.sizes)


def plan(config: dict, rows: torch.Tensor, packed: torch.Tensor, scales: torch.Tensor, zeros: Optional[torch.Tensor],
         bias: Optional[torch.Tensor], num_sms: int, pdl: Optional[dict] = None):
    """The plan (QuantWSPlan or QuantRSPlan) of a Gluon launch configuration for this call; pdl: _support.pdl_options'
    keywords (None: a plain launch)."""
    v = variant_of(config)
    return (QuantRSPlan if isinstance(v, RSVariant) else QuantWSPlan)(v, rows, packed, scales, zeros, bias, num_sms,
                                                                      pdl)
