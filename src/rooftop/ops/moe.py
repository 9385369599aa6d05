r"""Mixture-of-experts MLP (decode steps and prefills): each token's top-k experts, gated, weighted by the router and
summed.

    out[t] = sum_j w[t, j] * D_e (act(G_e x_t) * (U_e x_t)),   e = idx[t, j],  j < k

x [T, H]; idx [T, k] integer, w [T, k] float (the router's top-k indices and weights); the experts' weights in
transformers' default layout: gate_up [E, 2I, H] (gate rows 0 .. I-1, up rows I .. 2I-1 of each expert), down
[E, H, I]; act silu, gelu (erf) or gelu_tanh. gpt-oss's experts: optional biases (gate_up_bias [E, 2I] added to G_e x
and U_e x, down_bias [E, H] to D_e h) and its clamped gate, "swiglu_oai": h = g' sigmoid(alpha g') (u' + 1) with
g' = min(g, limit), u' = clamp(u, -limit, limit). An index outside [0, E) contributes nothing (transformers' eager loop
skips the expert-parallel sentinel E the same way). fp32 accumulation; h = act(g) * u rounded to x's dtype between the
two projections (as the model's own F.linear outputs are), the sum over j in fp32, out in x's dtype.
Quantized experts (weight-only): gate_up and down as float8_e4m3fn or int8 codes with a scale per output row
(gate_up_scale [E, 2I], down_scale [E, H], fp32: W_e ~= codes_e * scale_e[:, None]; `quantize_experts`); each row's
dot product is scaled once at its end; x, h and out keep x's dtype. Half the weight bytes of bf16: decode's traffic
halved. int8 (symmetric, 127 levels a side) keeps ~0.4% of a random weight row, e4m3 ~2.5%. int4 experts (a quarter
of bf16's bytes, 4.25 bits a weight with group 128): gate_up [E, 2I, H / 8] and down [E, H, I / 8] int32 words, eight
codes c in [0, 15] a word (code i of word j: the row's element 8j + i, bits 4i .. 4i + 3), W = (c - 8) s with a
scale per group of 32, 64 or 128 consecutive elements of a row (gate_up_scale [E, 2I, H / group], down_scale [E, H,
I / group], any float dtype; symmetric, max |group| / 7: ~10% of a random row). Each kernel unpacks its weight tile
(words interleaved in registers, codes OR-ed into a float's mantissa). The dot kernels scale it by group (their
k-tiles lie in one group or hold whole ones): for bf16 x two codes an instruction in bf16x2 (_INT4_BF16_PAIRS), else
in fp32 rounded to x's dtype; the per-pair kernels sum each thread's 32 codes (one 16-byte load) against x before
their group's scale: one FMA a weight.

Two kernels, with no host synchronisation (the routing stays on the GPU: the step can be a CUDA graph), each launched
as a programmatic dependent on sm_90 where _support.ROW_PDL (the row ops' flag; session 62, not yet timed: the down
kernel's programs resident as gate / up's last ones end, as between a decoder layer's row kernels):
- `_moe_gate_up_kernel`, program (pair s = t k + j, BLOCK_N columns of I): reads x_t, the pair's expert's BLOCK_N
  gate rows and BLOCK_N up rows (2 BLOCK_N H elements, once) and writes h[s, cols] = act(g) * u.
- `_moe_down_kernel`, program (token t, BLOCK_N columns of H, a range of I): for j = 0 .. k-1 in order reads its
  range of h[t k + j] and of the pair's expert's BLOCK_N down rows (each element once over the ranges), and
  out[t, cols] = sum_j w[t, j] (D_e h)[cols] comes from the ranges' fp32 partials summed in order by the tile's last
  range (deterministic; one range: written directly). A decode step has few tokens: I is split to fill the GPU.
HBM: each (token, expert) pair reads its expert's 3 H I weights once: decode's traffic while T k <= E and the
tokens pick distinct experts; tokens sharing an expert read it again (from L2 when their programs run close). Both
kernels are CUDA-core GEMVs: each lane keeps its products over the k-tiles, reduced once at the end of the row; the
grids are pairs x column blocks (gate / up) and tokens x column blocks x ranges of I (down). int4 experts with bf16 x
(sm_80+, enough pairs to fill the SMs: INT4_PAIR_MMA_LAUNCH) take `_moe_gate_up_mma_kernel` and
`_moe_down_mma_kernel` instead, the same programs with 16 rows a warp summed by mma.sync from each lane's own code
pairs (`_int4_mma_sums`, the B operand's 8 columns all the pair's x), their word loads with an L2 prefetch-size hint.

The grouped path reads each routed expert once a step, however many of its tokens share it (still no host
synchronisation: every program scans the step's k T indices, at most PAIRS_MAX, and finds its group itself). The
first pair routed to an expert (its "owner") does the work of all its pairs, the others' programs return at once:
- `_moe_gate_up_grouped_kernel`, program (pair, BLOCK_N columns of I): an owner reads its expert's 2 BLOCK_N H
  weights once and its group's x rows (GROUP a pass: a tl.dot of [GROUP, BLOCK_K] x [BLOCK_K, BLOCK_N] a k-step;
  int4 with bf16 x: mma.sync on each lane's own code pairs, `_int4_mma_sums`), and writes each member's h[s, cols].
- `_moe_down_grouped_kernel`, program (pair, BLOCK_N columns of H, a range of I): an owner reads its expert's BLOCK_N
  down rows over its range once and its group's h ranges, and stores each member's w (D h) partial (fp32) to a
  workspace [splits, k T, H]; the last of a token tile's k x splits arrivals sums them in (split, j) order
  (deterministic) and writes out[t, cols].
It runs where the step's pairs can cover every expert (k T >= E: past it some must share one) or where an expert is
large enough that its fixed costs (the index scan, the partials) do not show (H I >= GROUPED_MIN_EXPERT; unquantized
experts only; int4 experts up to MOE_MAX_TOKENS tokens where the pairs are three an expert or more: _takes_grouped,
_path): on an H100 (session 62) 8-16 tokens of Mixtral-8x7B's experts at 100% of the once-an-expert floor against
51-82% a pair a program, one token 1.10x; at Qwen3-30B-A3B's (768-wide experts) 2-8 tokens 2-15% slower than a
pair a program where they share no expert.
The sorted path takes prefills (past MOE_MAX_TOKENS tokens where the grouped path does not): many tokens an expert, a
grouped GEMM. The k T pairs are sorted by expert on the GPU (`_sorted_slots`: three kernels, no host synchronisation),
each expert's run padded to whole blocks of BLOCK_M slots; then
- `_moe_gate_up_sorted_kernel`, program (block of one expert's slots, BLOCK_N columns of I): gathers its pairs' x rows
  and reads the expert's gate and up rows over H in k-tiles (tl.dot into two accumulators), the gate, biases and
  scales in the epilogue, and writes h rows in pair order (no gathered x or gate / up output in memory);
- `_moe_down_sorted_kernel`, program (block, BLOCK_N columns of H): h rows times the expert's down rows, the scale,
  bias and router weight in the epilogue, each pair's row stored in pair order (in x's dtype: bf16 / fp16 rows are
  half fp32's bytes);
and each token's k rows summed in order (`_sum_pairs_kernel`). The programs of a column block run over all blocks
together: each expert's weights come from HBM about once, x and h from L2. Six launches and no other torch op: a call
of contiguous arguments replays as a plan (_support.planned) from its second of a shape.
"""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace
from typing import Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from rooftop import registry
from rooftop.ops._support import (FLOAT_DTYPES, QUANT_FORMATS, arrival_counters, await_previous, capability, cdiv,
                                  check_float, check_fp8_device, check_same_device, float32_placeholder, interpreting,
                                  launch, num_sms, pdl_options, planned, provided, quantize_rows_reference, runs_kernel,
                                  store_split_output, torch_op)
from rooftop.ops.activations import _ACT_F64, _activate, _divide
from rooftop.ops.quant_matmul import (GROUP_SIZES, MAGIC15, _mma_m16n8k16, _pair_of, _pair_values, _take,
                                      quantize_weight)
from rooftop.roofline import Cost

ACTIVATIONS = ("silu", "gelu", "gelu_tanh", "swiglu_oai")
INDEX_DTYPES = (torch.int32, torch.int64)
# Up to here (tokens a call) a program a (token, expert) pair where the grouped path does not take the call; past it the
# sorted path (a grouped GEMM's regime).
MOE_MAX_TOKENS = 16
# (BLOCK_N, BLOCK_K, num_warps) of the gate / up kernel, and of the down kernel with the programs an SM it aims at
# (I split into as many ranges as make them, at most DOWN_MAX_SPLITS: a decode step has few tokens, H / BLOCK_N
# tiles each): a k-tile of BLOCK_N weight rows x BLOCK_K, its products kept per lane until the end of the row (one
# reduction a program). Of 14 shapes timed on an H100 (session 61, exp_moe_launch.py: Mixtral-8x7B's and
# Qwen3-30B-A3B's experts, 1 and 4 tokens), (8, 256, 2) with 4 an SM was within 8% of each case's best (session 60's
# (16, 256, 4): up to 28% behind; 1 token of Mixtral's 270 against 325 us, 90% of copy). Quantized experts (one-byte
# codes) take the same: of six launches timed on an H100 (session 62, exp_moe_launch.py --quant fp8) it was within 4%
# of each case's best; session 61's untimed (8, 512, 4) up to 15% behind.
GATE_UP_LAUNCH = (8, 256, 2)
DOWN_LAUNCH = (8, 256, 2, 4)
# int4 experts' (half a byte a weight; a thread sums 32 codes before their scale: 64-72 registers at 8 x 256 on 2
# warps, offline sm_90): of 20 launches timed on an H100 (session 66, exp_moe_launch.py --quant int4 --per-sm, 1 and 4
# tokens of Mixtral-8x7B's and Qwen3-30B-A3B's experts) the best, but at 4 tokens of Qwen3's (52.2 us against 49.6 at
# (16, 512, 4) with 1 an SM); 32 down programs an SM (the splits of I fill the SMs' slots: 4 an SM left ~8 resident)
# took one token of Mixtral's from 124.3 to 94.0 us (66% of copy).
INT4_GATE_UP_LAUNCH = GATE_UP_LAUNCH
INT4_DOWN_LAUNCH = (*DOWN_LAUNCH[:3], 32)
# The per-pair kernels' pipelines by the experts' format (16-bit "float", one-byte "codes", "int4"): (gate / up's
# stages, down's stages) of the k loop (tl.range num_stages): with 2 or more the next k-tiles of the weights and x are
# copied into shared memory by cp.async while this one is summed (evict_first is lost: cp.async takes no eviction
# hint); with 1 the loop is plain, a thread's only load in flight the one it waits for (offline sm_90). H100, session
# 68 (exp_moe_launch.py --stages, 1 and 4 tokens of Mixtral-8x7B's and Qwen3-30B-A3B's experts): one-byte codes at 3
# stages up to 15-19% faster than 1 (one token of Mixtral's int8 156.0 -> 132.1 us, 88% of copy; fp8 141.9 -> 121.0,
# 97%; 2 stages 151.1), 16-bit (Qwen3's: small experts) at 2 stages 33.7-33.8 us at one token against 35.2-35.4 at 3
# and 37.5 at 1, level at 4 tokens; int4 at 2-4 stages 30-89% slower (4.7-7.4 instructions a weight against 3.7-4.8).
# Not kept (session 69): x's and the weights' next k-tile loaded into registers a step ahead at 1 stage: int8 16%
# slower at one token of Mixtral's, int4 21% slower at Qwen3's and +-5% at Mixtral's, 16-bit level.
PER_PAIR_STAGES = {"float": (2, 2), "codes": (3, 3), "int4": (1, 1)}
# the experts' weight-only formats: quant name -> their codes' dtype. fp8 / int8 (those of the per-token activations):
# one-byte codes with a scale per output row (CODE_DTYPES); int4: eight codes an int32 word with a scale per group of
# a row's elements (INT4_DTYPE; module docstring).
EXPERT_QUANTS = {**{quant: dtype for quant, (dtype, _, _) in QUANT_FORMATS.items()}, "int4": torch.int32}
CODE_DTYPES = tuple(QUANT_FORMATS[quant][0] for quant in QUANT_FORMATS)
INT4_DTYPE = torch.int32
INT4_GROUP_SIZES = GROUP_SIZES  # quantize_weight's, powers of two: a k-tile holds whole groups or lies in one
DOWN_MAX_SPLITS = 16
# The grouped path (module docstring): (BLOCK_N, BLOCK_K, num_warps) of both kernels, the down kernel aiming at
# GROUPED_DOWN_PER_SM programs an SM with at most GROUPED_MAX_SPLITS ranges of I (its last arrival sums k x splits
# partials, unrolled); the count includes the programs of pairs that are not their group's first and return at once,
# so shared experts get fewer ranges than they could (not yet tried otherwise). Of four launches timed on an H100
# (session 62, exp_moe_grouped.py) (32, 128, 4) was the best at Mixtral's experts (1-16 tokens) and at 16 tokens of
# Qwen3's; offline sm_90: no spills.
GROUPED_LAUNCH = (32, 128, 4)
# int4 with bf16 x (_int4_mma_sums): (BLOCK_N 16 a warp, BLOCK_K 128, warps, ptxas's register cap or None); ~212
# registers uncapped (two programs an SM), 168 at a cap of 168 (offline sm_90, three an SM; no spills but in the
# down kernel at 128 pairs a step, 16-40 bytes: 16 tokens of Qwen3's, there still 6% faster than uncapped). H100
# session 68 (exp_moe_grouped.py, round-robin): the cap 3-6% faster at 8 / 16 tokens of Mixtral's (450.6 / 462.0
# us), 11% / 6% at 8 / 16 of Qwen3's, 13% / 6% of gpt-oss-20b's; uncapped 2-warp programs (32, 128, 2) 15% faster
# at 8 tokens of Qwen3's and 10% at 16 of gpt-oss's but 23-27% slower at Mixtral's; 8-warp ones slower everywhere.
# Through tl.range's cp.async pipeline instead of the loads a step ahead (session 68 call g): 9-10x slower.
INT4_GROUPED_LAUNCH = (64, 128, 4, 168)
# int4 with bf16 x a pair a program (sm_80+): the per-pair kernels' sums by mma.sync from registers as the grouped
# path's (_moe_gate_up_mma_kernel, _moe_down_mma_kernel: _int4_mma_sums with its 8 x rows all the pair's; offline sm_90
# the gate / up loop ~2.8 instructions a code against the CUDA-core loop's 3.7-4.8, 96-105 / 64-80 registers); (gate /
# up's warps, down's warps, down's budget of warps an SM for its ranges of I (and at least its pair warps'), gate / up's
# warps an SM aimed at, down's warps a tile at most over the token's pairs), 16 rows a warp; None: the CUDA-core
# kernels. Where a step's pairs leave gate / up fewer warps an SM than its aim, up to 4 warps share a row tile, its
# k-steps dealt round-robin (K_WARPS: _pair_mma_split); down deals the token's k pairs to the warps of a tile and cuts I
# into ranges, the two chosen together within their budgets (PAIR_WARPS: _pair_mma_down). Taken where the gate / up
# kernel has INT4_PAIR_MMA_MIN_WARPS warps an SM or more.
# H100, session 69 (one warp a tile, a token's pairs one after another, 32 down programs an SM; exp_moe_launch.py --mma,
# with INT4_L2_256B): one / two / four tokens of Mixtral's 98.7 / 189.3 / 367.7 -> 88.3 / 163.3 / 303.2 us against the
# CUDA-core kernels, two / four of Qwen3's 32.6 / 54.6 -> 29.3 / 44.5, but one of Qwen3's 24.1 against 20.1 (384
# one-warp tiles, 2.9 an SM; its down programs walked 8 pairs of one k-step each); ncu at one token of Mixtral's: gate /
# up 57.4 us at 68.5% of DRAM (13.6 warps an SM of the 16 its registers allow), down 38.8 us at 50.1%. H100, session 70
# (calls a and c2, graph replay): with K_WARPS and PAIR_WARPS one token of Qwen3-30B-A3B's 25.1 -> 16.5 us (PAIR_WARPS 8
# against 1, K_WARPS 4 both; CUDA-core 20.0), two 32.6 -> 24.6, gpt-oss-20b's one 37.9 -> 35.3 (the L2 hint now 4-5 us
# ahead there, call a; session 69's 41.1 without it, 47.1 with), Mixtral's one / two 85.5 / 157.1 -> 84.8 / 155.9; a
# budget of 16 warps an SM 7-10% behind 24 at one and two tokens of Mixtral's and one of gpt-oss-20b's, 32 4-6% behind
# at Mixtral's one and two tokens and Qwen3's two, within 3% at gpt-oss's one and four and Qwen3's one and four, ahead
# at 16 of Qwen3's (135.3 against 145.6: its tiles' 2048 warps fit 2 pair warps in 32 an SM, in 24 one); aims of 16 / 32
# against 24: 32 lost at Mixtral's one token (k 2, 89.3 against 86.9), 16 left Qwen3's two tokens at k 2 (call a, the
# down ranges then by programs an SM: 28.7 against 26.4 at k 4). Four tokens of Mixtral's ran 313.5 us against 295.1
# without pair warps (its 112 k-steps a warp against two pairs of 38: ranges beat pair warps where I is long): session
# 71's rule takes the latter (INT4_DOWN_CLOSE_STEPS). 8 / 16 of Qwen3's ran 3-4% behind session 69's launch: session
# 71's pair budget (INT4_DOWN_PAIR_BUDGET) gives 16 two pair warps (135.6 us against 146.3). Not kept (session 74, H100,
# journal items 534-535; item 532 wrote the first): a row tile's k-steps in runs of consecutive ones a warp (each warp's
# four in one 256-byte block, predicted to save three DRAM round trips a chain) 17.9 us against round-robin's 16.1 at
# one token of Qwen3's, 35.4 against 34.3 at one of gpt-oss-20b's; gate / up's weights four k-steps ahead (166
# registers) 16.0 / 34.7: round-robin's warps already share each block at the same time.
INT4_PAIR_MMA_LAUNCH = (1, 1, 24, 24, 8)
INT4_PAIR_MMA_MIN_WARPS = 4  # gate / up's warps an SM at least, else the CUDA-core kernels (their programs 8 rows)
# _pair_mma_down's cost of cutting I, in k-steps of a warp's chain: the partials' store, the arrival and the last
# range's loads of them. H100, session 71 (call a, exp_moe_launch.py --down-rules): without it (the shortest chain
# alone) four tokens of Mixtral's took 1 pair warp and 3 ranges, 294.0 us against session 70's 2 pair warps and one
# range, 312.8 (its rule: pair warps first), but two tokens of Qwen3's 4 pair warps and 3 ranges of 2 k-steps, 26.0
# against 24.8; with 2, each of the 9 cases timed takes the faster of the two (four tokens of Qwen3's, 44.2 against
# 44.4, by a tie at a chain of 14: to more pair warps).
INT4_DOWN_CLOSE_STEPS = 2
# _pair_mma_down's budget for pair warps, in warps an SM (at least the launch's third entry, which still bounds the
# ranges): a tile's pairs over more warps shorten each warp's chain with no close to pay. H100, session 71 (call a, the
# launches a budget of 32 took): four tokens of Qwen3's 8 pair warps, 42.7 us against 4's 44.2, sixteen 2 against 1,
# 135.6 against 146.3; where 32 bought ranges instead it lost (one / two tokens of Mixtral's 88.0 / 164.2 against
# 85.8 / 156.9, two of Qwen3's 26.1 against 24.8) but for one token of gpt-oss-20b's, a fifth range 34.8 against 35.4
# (within the run's spread). Session 72 (H100, exp_moe_launch --pair-budgets 32,24): eight tokens of Qwen3's 4 pair
# warps and one range 76.6 us against 24's one pair warp and 3 ranges 78.5; four / sixteen 43.0 / 136.2 against 44.2 /
# 146.7 again.
INT4_DOWN_PAIR_BUDGET = 32
# The per-pair mma down kernel loads each warp's first pair's index and first k-step's weights before its PDL wait
# (_moe_down_mma_kernel's EARLY): the down programs that become resident while the gate / up kernel's last ones run
# have their first DRAM round trip behind them when h is ready. Session 72 (H100, exp_moe_launch --down-early, graph;
# predicted one token of Qwen3's 16.5 -> ~15 us, Mixtral's ~1 us less): one token of Qwen3's 17.1 / 17.0 -> 16.2 /
# 15.9 us (twice each, alternating), two 24.9 -> 24.5; one of Mixtral's 81.9 / 81.7 -> 79.9 / 80.2, four 294.4 ->
# 291.6; one of gpt-oss-20b's 34.1 -> 33.6.
INT4_DOWN_EARLY = True
# The per-pair mma down kernel's (k-steps of weights loaded ahead of the one it sums, ptxas's register cap or None, the
# fewest k-steps a range that takes them; shorter ranges: one step, no cap): _int4_mma_sums' AHEAD (the gate / up and
# grouped kernels': 1), with INT4_DOWN_EARLY all loaded before the PDL wait. Offline sm_90 (8 pair warps, 3 ranges): 74
# registers at 1, 99 at 2 uncapped (2 programs an SM, not 3), 80 capped at 80 without spills; 2 pair warps (Mixtral's
# launches that take it) 96 uncapped, 80 capped, no spills. H100, session 73
# (exp_moe_launch --down-ahead 1,2/80, graph, twice in alternation; predicted: where a range is 2 k-steps, one token of
# Qwen3-30B-A3B's, its resident programs' whole first pair loaded during gate / up's tail, 16.0 -> ~15.5 us): wrong
# there, 2 ahead 3% slower at ranges of 2-6 k-steps (one / two tokens of Qwen3's 16.0 -> 16.5, 24.5 -> 25.4 us, one of
# gpt-oss-20b's 33.5 -> 34.3), within 0.7% at 6 (8 / 16 tokens of Qwen3's, 2 / 4 pairs a warp) to 23 (one of
# Mixtral's: 19, four of gpt-oss's), 1-3% faster at 38-56 (two / three / four tokens of Mixtral's 151.9 -> 150.7,
# 221.0 -> 218.7, 293.2 -> 284.7 us); uncapped at one of Qwen3's 18.3. Gate / up's K_WARPS 2 there (an aim of 11:
# more room for down's programs during its tail) 21.6 us against 16.0.
INT4_DOWN_AHEAD = (2, 80, 32)
# _int4_mma_sums' word loads with PTX's L2 prefetch-size hint (_load_words): a lane's k-step reads 16 bytes of each of
# its rows, a warp's 64 of each (128 k), the next step's only once this one is done: without the hint DRAM serves
# scattered 64-byte pieces of many rows at once. H100, session 69 (exp_moe_launch.py --mma --l2-256b, call c): the
# per-pair mma kernels at one / four tokens of Mixtral's 103.4 -> 86.0 / 396.6 -> 290.8 us; the grouped path
# (exp_moe_grouped.py --no-l2-256b, call d) at 8 / 16 tokens of Mixtral's 453.4 -> 392.7 / 465.1 -> 413.6, gpt-oss-
# 20b's 2-16 tokens 10-20% faster; but one token of gpt-oss-20b's (four pairs) 41.1 -> 47.1 (calls d and g: not
# understood; its 1440-byte rows straddle the 256-byte blocks). Only where the word rows are 16-byte aligned (_hinted).
# Not kept (session 69 call h): sm_90's bulk L2 prefetch (cp.async.bulk.prefetch.L2, each row's 256 bytes one or two
# blocks ahead every fourth k-step) on top of the hint: 15-50% slower everywhere (its address is a uniform operand:
# ptxas loops over a warp's 32 distinct rows); two k-steps' loads in flight (session 69 call i: gate / up 105 -> 130
# registers) 18% slower at one token of Mixtral's (104.3 us against 88.1), 7% at four (the down kernel's at long ranges,
# capped, since session 73: INT4_DOWN_AHEAD); 8 down programs an SM instead of 32: 19% slower at one token.
INT4_L2_256B = True
GROUPED_DOWN_PER_SM = 4
GROUPED_MAX_SPLITS = 8
GROUP = 16  # pairs of one expert a pass (tl.dot's least M)
PAIRS_MAX = 256  # k T a step at most on the grouped path (the index vector each program scans)
GROUPED_MIN_EXPERT = 1 << 23  # H I elements from which an expert takes the grouped path even with no pair sharing it
# The sorted path (module docstring): (BLOCK_M, gate / up's (BLOCK_N, BLOCK_K, warps, stages), down's) by the experts'
# mean run of pairs: the first whose BLOCK_M the run fills, else the last with blocks of the run's next power of two
# (at least tl.dot's 16). fp32 x takes the last (the first's accumulators and fp32 tiles spill: offline sm_90). gate /
# up keeps two [BLOCK_M, BLOCK_N] accumulators (gate and up). Timed on an H100 (session 64, exp_moe_prefill.py, 32-4096
# tokens of Mixtral-8x7B's, Qwen3-30B-A3B's and gpt-oss-20b's bf16 experts): the first, best of seven launches from
# runs of 128 (4096 tokens: Mixtral's 5.55 ms, 520 TFLOP/s, 70% of the matmul peak; 3 stages 5.75, the second launch
# 8.2; Qwen3's 1.21 against 1.28 / 1.47; gpt-oss's 2.11 against 2.28 / 2.84); the second within 3% of the best below
# them. Codes (fp8 / int8) timed at 3 stages only: the first 8.2-8.5 ms at 4096 of Mixtral's, the second 9.4-10.1.
SORTED_LAUNCHES = ((128, (128, 64, 8, 4), (256, 64, 8, 4)), (64, (64, 64, 4, 3), (128, 64, 4, 3)))


@triton.jit
def _group_scales(scale_ptr, rows, K, GROUP_SIZE: tl.constexpr):
    """int4 weights (GROUP_SIZE > 0): pointers [BLOCK_N, 1] to the group scales of weight rows `rows` (flat row
    indices over the experts; scales [E, rows, K / GROUP_SIZE]). Other formats: scale_ptr, unused."""
    if GROUP_SIZE > 0:
        return scale_ptr + rows.to(tl.int64)[:, None] * (K // GROUP_SIZE)
    else:
        return scale_ptr


@triton.jit
def _magic_codes(packed, magic15):
    """int4 words [..., W] (code i in bits 4i .. 4i + 3) as floats m + c: (even, odd) [..., 4 W], the codes of
    elements 2j (m = 256) and 2j + 1 (m = 16) of the words' 8 W. Halves, then bytes interleaved (in registers), least
    significant first; one shift puts a byte's even code at bit 15 and its odd one at bit 19, each OR-ed (one LOP3
    with its mask) into the mantissa of a float m whose bit there is worth 1: no int-to-float conversion (quarter
    rate). The masks clear what the shifts before them left above. magic15: the bits of 256.0 (MAGIC15) as a kernel
    argument, a register: with two constants ptxas spends two LOP3 a code."""
    halves = tl.interleave(packed, packed >> 16)
    moved = tl.interleave(halves, halves >> 8) << 15
    return (((moved & 0x78000) | magic15).to(tl.float32, bitcast=True),
            ((moved & 0x780000) | (magic15 - 0x02000000)).to(tl.float32, bitcast=True))  # 16.0


@triton.jit
def _before(k, k_end, EVEN_K: tl.constexpr):
    """k < k_end; with EVEN_K (k_end a multiple of the k-tile, k in a tile before it) known true: no compare."""
    if EVEN_K:
        return tl.full(k.shape, 1, tl.int1)
    else:
        return k < k_end


# PTX of _weight_tile's PAIRED tiles: from an int4 word $4 (code i at bits 4i) and a bf16 scale pair $5 = (s, s), the
# four bf16 pairs $0 .. $3 = s (c - 8) of codes (2p, 2p + 1): one PRMT puts byte p of the word and of the word >> 4
# at bytes 0 and 2 (the codes at bits 0 and 16), one LOP3 masks them into the mantissas of 128.0 (0x4300: 128 + c,
# exact), a packed fma subtracts 136 (exact), another multiplies by s (rounded once): 17 instructions a word.
_INT4_BF16_PAIRS = tl.constexpr(" ".join(
    ["{ .reg .b32 q4, v, one, neg136, neg0;", "shr.u32 q4, $4, 4;", "mov.b32 one, 0x3F803F80;",
     "mov.b32 neg136, 0xC308C308;", "mov.b32 neg0, 0x80008000;"]
    + [f"prmt.b32 v, $4, q4, {0x4400 + 0x1111 * p:#x}; lop3.b32 v, v, 0x000F000F, 0x43004300, 0xEA; "
       f"fma.rn.bf16x2 v, v, one, neg136; fma.rn.bf16x2 ${p}, v, $5, neg0;" for p in range(4)]
    + ["}"]))


@triton.jit
def _weight_tile(rows, scales, k0, k_end, row_ok, like, magic15, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP_SIZE: tl.constexpr, EVICT: tl.constexpr, FOLD: tl.constexpr, PAIRED: tl.constexpr,
                 EVEN_K: tl.constexpr):
    """Columns k0 .. k0 + BLOCK_K - 1 of BLOCK_N weight rows (rows: [BLOCK_N, 1] pointers to their first elements),
    zeros at k >= k_end and in rows not row_ok. GROUP_SIZE 0: as stored (x's dtype, or one-byte codes). int4
    (GROUP_SIZE > 0; k0 a multiple of BLOCK_K, k_end of 8 and of min(BLOCK_K, GROUP_SIZE)): BLOCK_K / 8 words a row
    unpacked, (c - 8) s with the group's scale s (scales: _group_scales), in `like`'s dtype. PAIRED (bf16 x, a GPU):
    two codes an instruction in bf16x2 (_INT4_BF16_PAIRS: the scale rounded to bf16, then the product, so ~2^-8 of
    it where fp32 arithmetic rounds ~2^-9). Else in fp32, rounded once: with FOLD (x 16-bit) one FMA a weight,
    (m + c) s - (m + 8) s, its second product rounded (~2^-16 s: under a 16-bit rounding); without, an exact
    subtraction. EVEN_K: k_end a multiple of BLOCK_K, no k masks."""
    if GROUP_SIZE == 0:
        ks = k0 + tl.arange(0, BLOCK_K)
        return tl.load(rows + ks[None, :], mask=row_ok[:, None] & _before(ks[None, :], k_end, EVEN_K), other=0.0,
                       eviction_policy=EVICT)
    else:
        words = k0 // 8 + tl.arange(0, BLOCK_K // 8)
        packed = tl.load(rows + words[None, :], mask=row_ok[:, None] & _before(words[None, :] * 8, k_end, EVEN_K),
                         other=0, eviction_policy=EVICT)
        if BLOCK_K >= GROUP_SIZE:  # a scale a group: [BLOCK_N, groups, 1]
            groups = k0 // GROUP_SIZE + tl.arange(0, BLOCK_K // GROUP_SIZE)
            scale = tl.load(scales + groups[None, :],
                            mask=row_ok[:, None] & _before(groups[None, :] * GROUP_SIZE, k_end, EVEN_K),
                            other=0.0)[:, :, None]
        else:
            scale = tl.load(scales + k0 // GROUP_SIZE, mask=row_ok[:, None] & (k0 < k_end), other=0.0)[:, :, None]
        G: tl.constexpr = scale.shape[1]
        if PAIRED:
            p0, p1, p2, p3 = tl.inline_asm_elementwise(_INT4_BF16_PAIRS, "=r,=r,=r,=r,r,r",
                                                       [packed.reshape(BLOCK_N, G, BLOCK_K // 8 // G),
                                                        _pair_of(scale.to(tl.bfloat16))],
                                                       dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True,
                                                       pack=1)
            pairs = tl.interleave(tl.interleave(p0, p2), tl.interleave(p1, p3))  # each word's pairs in k order
            return _pair_values(pairs, tl.bfloat16).reshape(BLOCK_N, BLOCK_K)
        else:
            even, odd = _magic_codes(packed, magic15)
            even = even.reshape(BLOCK_N, G, BLOCK_K // 2 // G)
            odd = odd.reshape(BLOCK_N, G, BLOCK_K // 2 // G)
            scale = scale.to(tl.float32)
            if FOLD:
                even = even * scale - 264.0 * scale
                odd = odd * scale - 24.0 * scale
            else:
                even = (even - 264.0) * scale
                odd = (odd - 24.0) * scale
            HALF: tl.constexpr = BLOCK_K // 2
            return tl.interleave(even.reshape(BLOCK_N, HALF), odd.reshape(BLOCK_N, HALF)).to(like.dtype)


@triton.jit
def _x_chunks(xk, BLOCK_K: tl.constexpr, GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr):
    """x's k-tile xk [BLOCK_K] (fp32) as `_row_products` takes it: ([1, BLOCK_K], 0); int4 (GROUP_SIZE > 0): x as
    [1, BLOCK_K / 32, 32] and, with FOLD (x 16-bit), the magics' offsets summed over each chunk of 32, sum (m + 8) x
    with m of _magic_codes ([1, BLOCK_K / 32]), shared by every row the tile multiplies."""
    if GROUP_SIZE == 0:
        return xk[None, :], 0.0
    else:
        x = xk.reshape(1, BLOCK_K // 32, 32)
        if FOLD:
            offsets = tl.where(tl.arange(0, 32) % 2 == 0, 264.0, 24.0)
            return x, tl.sum(x * offsets[None, None, :], axis=2)
        else:
            return x, 0.0


# ld.global.nc of four int32 words (16 bytes) with PTX's prefetch-size hint L2::256B: the L2 fetches the 256-byte block
# around them from DRAM whole
_LD_WORDS_256B = tl.constexpr("ld.global.nc.L2::256B.v4.b32 {$0, $1, $2, $3}, [$4];")


@triton.jit
def _load_words(addr, L2_256B: tl.constexpr):
    """The four int32 words at each of addr's [LANES] pointers (16-byte aligned) as [LANES, 4]; L2_256B (inline PTX,
    a GPU only) with the prefetch-size hint _LD_WORDS_256B."""
    if L2_256B:
        w0, w1, w2, w3 = tl.inline_asm_elementwise(_LD_WORDS_256B, "=r,=r,=r,=r,l", [addr],
                                                   dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True,
                                                   pack=1)
        return tl.reshape(tl.join(tl.join(w0, w2), tl.join(w1, w3)), (addr.shape[0], 4))  # [i, j]: word 2 i + j
    else:
        return tl.load(addr[:, None] + tl.arange(0, 4)[None, :])


@triton.jit
def _row_loads(rows, scales, k0, k_end, row_ok, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
               GROUP_SIZE: tl.constexpr, EVICT: tl.constexpr):
    """The loads of the per-pair kernels' k-tile of BLOCK_N weight rows (_weight_tile's arguments; nothing read at k >=
    k_end: a tile past the end reads nothing; EVICT, unless the loop's pipeline makes them cp.async), for
    `_row_products`: the tile [BLOCK_N, BLOCK_K] as stored, a 1-tuple; int4 (k0 a multiple of BLOCK_K, k_end of 32):
    (words [BLOCK_N, BLOCK_K / 32, 4], group scales [BLOCK_N, BLOCK_K / 32]) of its chunks of 32 codes (four words:
    one 16-byte load, in one group)."""
    if GROUP_SIZE == 0:
        ks = k0 + tl.arange(0, BLOCK_K)
        return (tl.load(rows + ks[None, :], mask=row_ok[:, None] & (ks[None, :] < k_end), other=0.0,
                        eviction_policy=EVICT),)
    else:
        chunks = k0 // 32 + tl.arange(0, BLOCK_K // 32)
        live = row_ok[:, None] & (chunks[None, :] * 32 < k_end)
        words = chunks[None, :, None] * 4 + tl.arange(0, 4)[None, None, :]
        return (tl.load(rows[:, :, None] + words, mask=live[:, :, None], other=0, eviction_policy=EVICT),
                tl.load(scales + chunks[None, :] * 32 // GROUP_SIZE, mask=live, other=0.0))


@triton.jit
def _row_products(loaded, x, x_offsets, magic15, GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr):
    """The per-pair kernels' products of a k-tile of weight rows (`_row_loads`) with x's (`_x_chunks`), in fp32,
    summed over their last axis at the end of the row: [BLOCK_N, BLOCK_K] products (one-byte codes unscaled); int4:
    [BLOCK_N, BLOCK_K / 32] sums of (c - 8) s x over chunks of 32 codes, times the group's scale once a chunk. With
    FOLD (x 16-bit) the codes read as m + c times x, one FMA a weight, less the offsets' sum (x_offsets: its rounding,
    ~2^-24 of 264 |x| a term, stays under a 16-bit output's); without, m + 8 is subtracted from each (exact)."""
    if GROUP_SIZE == 0:
        return loaded[0].to(tl.float32) * x
    else:
        even, odd = _magic_codes(loaded[0], magic15)
        scale = loaded[1].to(tl.float32)
        if FOLD:
            return scale * (tl.sum(tl.interleave(even, odd) * x, axis=2) - x_offsets)
        else:
            return scale * tl.sum(tl.interleave(even - 264.0, odd - 24.0) * x, axis=2)


@triton.jit
def _gated(g, u, expert, cols, col_ok, scale_ptr, bias_ptr, I, ACT: tl.constexpr, APPROX: tl.constexpr,
           SCALED: tl.constexpr, HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr, LIMIT: tl.constexpr):
    """h = act(g) * u from the fp32 dot products g, u of BLOCK_N columns ([BLOCK_N], or [GROUP, BLOCK_N] for a
    group of pairs): the row scales (SCALED: scale [E, 2I], the gate rows', then the up rows') and biases ([E, 2I],
    as the weights' rows) first."""
    if SCALED:
        scale_row = scale_ptr + expert * 2 * I + cols
        g = g * tl.load(scale_row, mask=col_ok, other=0.0)
        u = u * tl.load(scale_row + I, mask=col_ok, other=0.0)
    if HAS_BIAS:
        bias_row = bias_ptr + expert * 2 * I + cols
        g = g + tl.load(bias_row, mask=col_ok, other=0.0).to(tl.float32)
        u = u + tl.load(bias_row + I, mask=col_ok, other=0.0).to(tl.float32)
    if ACT == "swiglu_oai":  # min / clamp keep NaN, as torch's clamp does
        g = tl.minimum(g, LIMIT, propagate_nan=tl.PropagateNan.ALL)
        u = tl.clamp(u, -LIMIT, LIMIT, propagate_nan=tl.PropagateNan.ALL)
        return _divide(g, 1.0 + tl.exp2(-1.4426950408889634 * ALPHA * g), APPROX) * (u + 1.0)
    return _activate(g, ACT, APPROX, False) * u


@triton.jit
def _down_output(row, expert, cols, col_ok, first_range, scale_ptr, bias_ptr, H, SCALED: tl.constexpr,
                 HAS_BIAS: tl.constexpr):
    """D h of BLOCK_N columns from its fp32 dot products (over one range of I): the row scales (scale [E, H]), and
    the bias ([E, H]) added by the first range only."""
    if SCALED:
        row = row * tl.load(scale_ptr + expert * H + cols, mask=col_ok, other=0.0)
    if HAS_BIAS:
        row = row + tl.load(bias_ptr + expert * H + cols, mask=col_ok & first_range, other=0.0).to(tl.float32)
    return row


@triton.jit
def _gate_up_program(idx_ptr, E, BLOCK_N: tl.constexpr):
    """A per-pair gate / up program's (pair, column block) from its ids: (pair, its BLOCK_N columns of I, the pair's
    expert (0 where not live), live: the index in [0, E); a sentinel, or any index outside the experts, reads
    nothing)."""
    pair = tl.program_id(0)
    expert = tl.load(idx_ptr + pair).to(tl.int64)
    live = (expert >= 0) & (expert < E)
    return pair, tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N), tl.where(live, expert, 0), live


@triton.jit
def _moe_gate_up_kernel(x_ptr, idx_ptr, w_ptr, scale_ptr, bias_ptr, h_ptr, H, I, E, TOP_K, x_stride, we_stride,
                        wn_stride, magic15, ACT: tl.constexpr, APPROX: tl.constexpr, SCALED: tl.constexpr,
                        GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr, HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr,
                        LIMIT: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr,
                        PDL: tl.constexpr):
    # Program (pair, column block): reads x_t (H elements, L2 after the first pair of the token), 2 BLOCK_N rows of
    # the pair's expert (2 BLOCK_N H elements: each once; SCALED: one-byte codes and 2 BLOCK_N row scales; int4:
    # half a byte an element and 2 BLOCK_N H / GROUP_SIZE group scales), writes BLOCK_N elements of h. PDL: the launch
    # overlaps the kernel before it (_support.pdl_options).
    await_previous(PDL)
    pair, cols, expert, live = _gate_up_program(idx_ptr, E, BLOCK_N)
    col_ok = (cols < I) & live
    gate_rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
    up_rows = gate_rows + tl.cast(I, tl.int64) * wn_stride
    gate_scales = _group_scales(scale_ptr, expert * 2 * I + cols, H, GROUP_SIZE)
    up_scales = _group_scales(scale_ptr, expert * 2 * I + I + cols, H, GROUP_SIZE)
    x_row = x_ptr + (pair // TOP_K).to(tl.int64) * x_stride
    LANES: tl.constexpr = BLOCK_K // 32 if GROUP_SIZE > 0 else BLOCK_K  # _row_products' sums a row
    g = tl.zeros([BLOCK_N, LANES], tl.float32)
    u = tl.zeros([BLOCK_N, LANES], tl.float32)
    for k0 in tl.range(0, H, BLOCK_K, num_stages=STAGES):
        ks = k0 + tl.arange(0, BLOCK_K)
        x_tile = tl.load(x_row + ks, mask=ks < H, other=0.0)
        xk, x_offsets = _x_chunks(x_tile.to(tl.float32), BLOCK_K, GROUP_SIZE, FOLD)  # first: Triton's layouts
        gate_tile = _row_loads(gate_rows, gate_scales, k0, H, col_ok, BLOCK_N, BLOCK_K, GROUP_SIZE, "evict_first")
        up_tile = _row_loads(up_rows, up_scales, k0, H, col_ok, BLOCK_N, BLOCK_K, GROUP_SIZE, "evict_first")
        g += _row_products(gate_tile, xk, x_offsets, magic15, GROUP_SIZE, FOLD)
        u += _row_products(up_tile, xk, x_offsets, magic15, GROUP_SIZE, FOLD)
    y = _gated(tl.sum(g, axis=1), tl.sum(u, axis=1), expert, cols, col_ok, scale_ptr, bias_ptr, I, ACT, APPROX,
               SCALED, HAS_BIAS, ALPHA, LIMIT)
    tl.store(h_ptr + pair.to(tl.int64) * I + cols, y.to(h_ptr.dtype.element_ty), mask=cols < I)


@triton.jit
def _down_program(k_split, I, BLOCK_N: tl.constexpr):
    """A per-pair down program's (token, column block, range of I) from its ids: (token, pid_n, split, its BLOCK_N
    columns of H, the range's k_start and k_end)."""
    token = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    k_start = split * k_split
    return token, pid_n, split, pid_n * BLOCK_N + tl.arange(0, BLOCK_N), k_start, tl.minimum(k_start + k_split, I)


@triton.jit
def _moe_down_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, scale_ptr, bias_ptr, out_ptr, ws_ptr, cnt_ptr, T, H, I, E, TOP_K,
                     k_split, rw_stride, we_stride, wn_stride, out_stride, magic15, SCALED: tl.constexpr,
                     GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr, HAS_BIAS: tl.constexpr, SPLITS: tl.constexpr,
                     SUM_BATCH: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr,
                     PDL: tl.constexpr):
    # Program (token, column block, split of I): for each of the token's k pairs in order, its k-range of h (from L2)
    # and of BLOCK_N down rows of its expert (each element once over the splits; SCALED: one-byte codes and BLOCK_N row
    # scales; int4: half a byte an element and the range's group scales); with SPLITS > 1 the fp32 partials (4 BLOCK_N
    # bytes a split) summed in split order by the tile's last split (store_split_output), which writes BLOCK_N elements
    # of out. PDL: as the gate / up kernel's.
    await_previous(PDL)
    token, pid_n, split, cols, k_start, k_end = _down_program(k_split, I, BLOCK_N)
    LANES: tl.constexpr = BLOCK_K // 32 if GROUP_SIZE > 0 else BLOCK_K  # _row_products' sums a row
    acc = tl.zeros([BLOCK_N], tl.float32)
    for j in range(0, TOP_K):
        pair = token * TOP_K + j
        expert = tl.load(idx_ptr + pair).to(tl.int64)
        live = (expert >= 0) & (expert < E)
        weight = tl.where(live, tl.load(rw_ptr + token.to(tl.int64) * rw_stride + j).to(tl.float32), 0.0)
        expert = tl.where(live, expert, 0)
        col_ok = (cols < H) & live
        rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        scales = _group_scales(scale_ptr, expert * H + cols, I, GROUP_SIZE)
        h_row = h_ptr + pair.to(tl.int64) * I
        part = tl.zeros([BLOCK_N, LANES], tl.float32)
        for k0 in tl.range(k_start, k_end, BLOCK_K, num_stages=STAGES):
            ks = k0 + tl.arange(0, BLOCK_K)
            h_tile = tl.load(h_row + ks, mask=ks < k_end, other=0.0)
            hk, h_offsets = _x_chunks(h_tile.to(tl.float32), BLOCK_K, GROUP_SIZE, FOLD)
            tile = _row_loads(rows, scales, k0, k_end, col_ok, BLOCK_N, BLOCK_K, GROUP_SIZE, "evict_first")
            part += _row_products(tile, hk, h_offsets, magic15, GROUP_SIZE, FOLD)
        acc += weight * _down_output(tl.sum(part, axis=1), expert, cols, col_ok, split == 0, scale_ptr, bias_ptr, H,
                                     SCALED, HAS_BIAS)
    store_split_output(acc[None, :], token + tl.arange(0, 1), cols, T, H, out_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr,
                       token * tl.num_programs(1) + pid_n, split, SPLITS, False, SUM_BATCH)


@triton.jit
def _moe_gate_up_mma_kernel(x_ptr, idx_ptr, w_ptr, scale_ptr, bias_ptr, h_ptr, H, I, E, TOP_K, x_stride, we_stride,
                            wn_stride, ACT: tl.constexpr, APPROX: tl.constexpr, GROUP_SIZE: tl.constexpr,
                            HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr, LIMIT: tl.constexpr, BLOCK_N: tl.constexpr,
                            K_WARPS: tl.constexpr, L2_256B: tl.constexpr, PDL: tl.constexpr):
    # Program (pair, BLOCK_N columns, 16 a warp, each row's k-steps dealt round-robin to K_WARPS warps), int4 experts
    # with bf16 x: _moe_gate_up_kernel's sums by mma.sync from registers (_int4_mma_sums, its 8 x rows all x_t; the
    # K_WARPS warps' sums added through shared memory). Reads x_t (H elements, L2 after the first pair of the token)
    # and 2 BLOCK_N rows of the pair's expert (half a byte an element, each once, and 2 BLOCK_N H / GROUP_SIZE group
    # scales), writes BLOCK_N elements of h. PDL: as _moe_gate_up_kernel's.
    await_previous(PDL)
    pair, cols, expert, live = _gate_up_program(idx_ptr, E, BLOCK_N)
    g = tl.zeros([BLOCK_N], tl.float32)
    u = tl.zeros([BLOCK_N], tl.float32)
    if live:
        q, k_rank, _, row_a, row_b = _mma_rows(tl.program_id(1), I, BLOCK_N, K_WARPS)
        rows = w_ptr + expert * we_stride
        scales = scale_ptr + expert * 2 * I * (H // GROUP_SIZE)
        x_row = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True) + (pair // TOP_K).to(tl.int64) * (x_stride // 2)
        w_rows = (rows + row_a * wn_stride, rows + row_b * wn_stride, rows + (row_a + I) * wn_stride,
                  rows + (row_b + I) * wn_stride)
        s_rows = (scales + row_a * (H // GROUP_SIZE), scales + row_b * (H // GROUP_SIZE),
                  scales + (row_a + I) * (H // GROUP_SIZE), scales + (row_b + I) * (H // GROUP_SIZE))
        lane_k = 32 * q + 128 * k_rank
        acc = _int4_mma_sums(w_rows, s_rows, (x_row + tl.zeros_like(row_a),), 0, H, lane_k,
                             _int4_mma_first(w_rows, s_rows, 0, H, lane_k, 2, GROUP_SIZE, L2_256B), 2, GROUP_SIZE, 1,
                             K_WARPS, L2_256B)
        g = _mma_columns(acc[0], acc[2], BLOCK_N, K_WARPS)
        u = _mma_columns(acc[4], acc[6], BLOCK_N, K_WARPS)
    y = _gated(g, u, expert, cols, (cols < I) & live, scale_ptr, bias_ptr, I, ACT, APPROX, False, HAS_BIAS, ALPHA,
               LIMIT)
    tl.store(h_ptr + pair.to(tl.int64) * I + cols, y.to(h_ptr.dtype.element_ty), mask=cols < I)


@triton.jit
def _down_pair_rows(idx_ptr, w_ptr, scale_ptr, pair, E, H, I, we_stride, wn_stride, row_a, row_b,
                    GROUP_SIZE: tl.constexpr):
    """The per-pair mma down kernel's pair `pair` (a lane's): (live, its expert's rows g and g + 8 and their first
    scales, _int4_mma_sums' w_rows and s_rows); a dead pair's lanes read expert 0's. The index by .cg (L2): the
    kernel may read it before its PDL wait (INT4_DOWN_EARLY; written before the gate / up kernel began)."""
    expert = tl.load(idx_ptr + pair, cache_modifier=".cg").to(tl.int64)
    live = (expert >= 0) & (expert < E)
    rows = w_ptr + tl.where(live, expert, 0) * we_stride
    scales = scale_ptr + tl.where(live, expert, 0) * H * (I // GROUP_SIZE)
    return (live, (rows + row_a * wn_stride, rows + row_b * wn_stride),
            (scales + row_a * (I // GROUP_SIZE), scales + row_b * (I // GROUP_SIZE)))


@triton.jit
def _moe_down_mma_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, scale_ptr, bias_ptr, out_ptr, ws_ptr, cnt_ptr, T, H, I, E,
                         TOP_K, k_split, rw_stride, we_stride, wn_stride, out_stride, GROUP_SIZE: tl.constexpr,
                         HAS_BIAS: tl.constexpr, SPLITS: tl.constexpr, SUM_BATCH: tl.constexpr, BLOCK_N: tl.constexpr,
                         PAIR_WARPS: tl.constexpr, L2_256B: tl.constexpr, EARLY: tl.constexpr, AHEAD: tl.constexpr,
                         PDL: tl.constexpr):
    # Program (token, BLOCK_N columns, 16 a warp, range of I), int4 experts with bf16 h: _moe_down_kernel's sums by
    # mma.sync from registers (_int4_mma_sums, its 8 x rows all the pair's h), the token's k pairs dealt to PAIR_WARPS
    # warps of each row tile (PAIR_WARPS divides k; warp r: pairs r, r + PAIR_WARPS, ...; their router-weighted sums
    # added through shared memory). For each pair, its range of h (L2) and of BLOCK_N down rows of its expert (half a
    # byte an element, each once over the ranges, and the range's group scales; a dead pair's lanes read expert 0's,
    # their sums dropped: no branch is a warp's alone); the partials as _moe_down_kernel's. PDL: as the gate / up
    # kernel's; EARLY (INT4_DOWN_EARLY): the warp's first pair's index and first AHEAD k-steps' weights (its loop's
    # loads ahead, INT4_DOWN_AHEAD) are loaded before the wait (neither is written by the gate / up kernel), in flight
    # while its last programs end.
    if not EARLY:
        await_previous(PDL)
    token, pid_n, split, cols, k_start, k_end = _down_program(k_split, I, BLOCK_N)
    q, rank, _, row_a, row_b = _mma_rows(pid_n, H, BLOCK_N, PAIR_WARPS)
    live, w_rows, s_rows = _down_pair_rows(idx_ptr, w_ptr, scale_ptr, token * TOP_K + rank, E, H, I, we_stride,
                                           wn_stride, row_a, row_b, GROUP_SIZE)
    first = _int4_mma_first(w_rows, s_rows, k_start, k_end, 32 * q, 1, GROUP_SIZE, L2_256B, AHEAD)
    if EARLY:
        await_previous(PDL)
    h32 = h_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    c_a = tl.zeros(q.shape, tl.float32)  # the lane's C fragments c0 and c2 (_mma_columns), weighted, over its pairs
    c_b = tl.zeros(q.shape, tl.float32)
    for j0 in range(0, TOP_K, PAIR_WARPS):
        j = j0 + rank
        pair = token * TOP_K + j
        weight = tl.load(rw_ptr + token.to(tl.int64) * rw_stride + j).to(tl.float32)
        sums = _int4_mma_sums(w_rows, s_rows, (h32 + pair.to(tl.int64) * (I // 2),), k_start, k_end, 32 * q, first,
                              1, GROUP_SIZE, 1, 1, L2_256B, AHEAD)
        c_a += tl.where(live, weight * sums[0], 0.0)  # a dead pair adds nothing
        c_b += tl.where(live, weight * sums[2], 0.0)
        # the warp's next pair (past the last: its own again, the words just read)
        live, w_rows, s_rows = _down_pair_rows(idx_ptr, w_ptr, scale_ptr,
                                               token * TOP_K + tl.where(j + PAIR_WARPS < TOP_K, j + PAIR_WARPS, j), E,
                                               H, I, we_stride, wn_stride, row_a, row_b, GROUP_SIZE)
        first = _int4_mma_first(w_rows, s_rows, k_start, k_end, 32 * q, 1, GROUP_SIZE, L2_256B, AHEAD)
    acc = _mma_columns(c_a, c_b, BLOCK_N, PAIR_WARPS)
    if HAS_BIAS:
        if split == 0:  # the first range adds the pairs' weighted biases
            for j in range(0, TOP_K):
                expert = tl.load(idx_ptr + token * TOP_K + j).to(tl.int64)
                expert_ok = (expert >= 0) & (expert < E)
                weight = tl.where(expert_ok, tl.load(rw_ptr + token.to(tl.int64) * rw_stride + j).to(tl.float32), 0.0)
                acc += weight * _down_output(tl.zeros_like(acc), tl.where(expert_ok, expert, 0), cols,
                                             (cols < H) & expert_ok, True, scale_ptr, bias_ptr, H, False, True)
    store_split_output(acc[None, :], token + tl.arange(0, 1), cols, T, H, out_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr,
                       token * tl.num_programs(1) + pid_n, split, SPLITS, False, SUM_BATCH)


@triton.jit
def _group_of(idx_ptr, pair, P, E, PAIRS: tl.constexpr):
    """Pair `pair`'s group: the pairs routed to its expert (a pair with an index outside [0, E): itself alone).
    Returns (whether it is the group's first pair, live, expert, match [PAIRS], rank [PAIRS] within the group, the
    group's size)."""
    p = tl.arange(0, PAIRS)
    ids = tl.load(idx_ptr + p, mask=p < P, other=-1).to(tl.int64)
    expert = tl.load(idx_ptr + pair).to(tl.int64)
    live = (expert >= 0) & (expert < E)
    match = tl.where(live, (ids == expert) & (p < P), p == pair)
    first = tl.min(tl.where(match, p, P), axis=0)
    rank = tl.cumsum(match.to(tl.int32), axis=0) - 1
    return first == pair, live, tl.where(live, expert, 0), match, rank, tl.sum(match.to(tl.int32), axis=0)


@triton.jit
def _members(match, rank, r, count, PAIRS: tl.constexpr):
    """The group's pairs of ranks r (a vector; 0 where none), and which of those exist."""
    p = tl.arange(0, PAIRS)
    member = tl.sum(tl.where(match[None, :] & (rank[None, :] == r[:, None]), p[None, :], 0), axis=1)
    return member.to(tl.int64), r < count


@triton.jit
def _operand(w, like, SCALED: tl.constexpr):
    """A weight tile as the dot's operand, `like`'s dtype; one-byte codes (exact in any float dtype) through fp32 (the
    interpreter casts int8 to bf16 by its bits)."""
    if SCALED:
        w = w.to(tl.float32)
    return w.to(like.dtype)


@triton.jit
def _int4_mma_weights(w_rows, s_rows, kq, TILES: tl.constexpr, GROUP_SIZE: tl.constexpr, L2_256B: tl.constexpr):
    """A k-step's weight loads for _int4_mma_sums at the lane's first k `kq` (a multiple of 32, in bounds: unmasked, a
    masked load zeroes its registers first): each weight row's four words (L2_256B: one 16-byte inline PTX load with
    the hint, _load_words; else tl.load's: one 16-byte load where Triton knows the row stride a multiple of 16 words,
    gpt-oss's 360 four 4-byte loads) and its scale as a bf16 pair (s, s)."""
    words = ()
    scales = ()
    for j in tl.static_range(2 * TILES):
        words = words + (_load_words(w_rows[j] + tl.multiple_of(kq // 8, 4), L2_256B),)
        scales = scales + (_pair_of(tl.load(s_rows[j] + kq // GROUP_SIZE).to(tl.bfloat16)),)
    return words, scales


@triton.jit
def _int4_mma_first(w_rows, s_rows, k_start, k_end, lane_k, TILES: tl.constexpr, GROUP_SIZE: tl.constexpr,
                    L2_256B: tl.constexpr, AHEAD: tl.constexpr = 1, K_WARPS: tl.constexpr = 1):
    """_int4_mma_sums' first AHEAD k-steps' weight loads (its `first`, a tuple of AHEAD), separate so that a kernel
    may issue them before its x rows can be read (the down kernel's INT4_DOWN_EARLY); AHEAD and K_WARPS the sums'."""
    steps = ()
    for i in tl.static_range(AHEAD):
        steps = steps + (_int4_mma_weights(w_rows, s_rows, tl.minimum(k_start + 128 * K_WARPS * i + lane_k, k_end - 32),
                                           TILES, GROUP_SIZE, L2_256B),)
    return steps


@triton.jit
def _int4_mma_xs(x32_rows, kq, NB: tl.constexpr):
    """A k-step's x loads for _int4_mma_sums at the lane's first k `kq`: each of its NB x rows' 16 pairs as four
    16-byte loads ([LANES, 4] each: a [LANES, 16] load would spread a row over 4 lanes, exchanged through shared
    memory), x row 8 nb + g's pairs 4 i .. 4 i + 3 at 4 nb + i."""
    xs = ()
    for nb in tl.static_range(NB):
        for i in tl.static_range(4):
            xs = xs + (tl.load(x32_rows[nb][:, None] + tl.multiple_of(kq // 2 + 4 * i, 4)[:, None]
                               + tl.arange(0, 4)[None, :]),)
    return xs


@triton.jit
def _int4_mma_sums(w_rows, s_rows, x32_rows, k_start, k_end, lane_k, first, TILES: tl.constexpr,
                   GROUP_SIZE: tl.constexpr, NB: tl.constexpr, K_WARPS: tl.constexpr, L2_256B: tl.constexpr,
                   AHEAD: tl.constexpr = 1):
    """The grouped (PAIRED) and per-pair mma kernels' int4 sums for bf16 x (inline PTX, a GPU only): mma.sync m16n8k16
    (fp32 sums) of TILES weight-row tiles against 8 NB x rows over k_start .. k_end - 1 (k_start a multiple of 128,
    k_end of 32), straight from each lane's own registers (no shared memory). Lane L = 32 w + 4 g + q: w_rows the
    [LANES] int32 pointers to the first words of its weight rows, (tile t's MMA row g, its row g + 8) for each tile;
    s_rows those rows' first scales; x32_rows its x rows 8 nb + g (nb < NB) as int32 pairs. The 128-wide k-steps are
    dealt round-robin to the K_WARPS warps of the same rows (each warp's sums partial): lane_k, 32 q + 128 r for the
    warp's rank r among them (_mma_rows). A k-step k0: lane q holds k0 + lane_k .. k0 + lane_k + 31 of its rows (four
    words: one 16-byte load a row, in one group: one scale) and of its x rows (64 bytes each), the weights loaded AHEAD
    steps ahead and x one (in flight while this one computes; past k_end the lane's last 32 again; the first AHEAD
    steps' weights are `first`, the caller's _int4_mma_first). k inside a k16 step is permuted so that the A fragment
    ((2q, 2q + 1), (2q + 8, 2q + 9) of rows g, g + 8) comes from the lane's own words: step 2i + h takes pairs 2h,
    2h + 1 of word i (_INT4_BF16_PAIRS, 17 instructions a word), the B fragment the matching x pairs 4i + 2h,
    4i + 2h + 1. Past k_end (a lane's whole 32: k_end a multiple of 32) the scale is 0. Returns the C fragments (rows
    g, g + 8 x x rows 2q, 2q + 1), a flat tuple in (tile, nb, c0 .. c3) order."""
    tl.static_assert(len(first) == AHEAD, "first: _int4_mma_first's AHEAD steps")
    acc = ()
    for _ in tl.static_range(4 * NB * TILES):
        acc = acc + (tl.zeros(lane_k.shape, tl.float32),)
    last = k_end - 32  # a lane's last k-chunk
    ahead = first
    ahead_xs = _int4_mma_xs(x32_rows, tl.minimum(k_start + lane_k, last), NB)
    for k0 in range(k_start, k_end, 128 * K_WARPS):
        words, scales = ahead[0]
        xs = ahead_xs
        live = k0 + lane_k < k_end
        ahead = ahead[1:] + (_int4_mma_weights(w_rows, s_rows, tl.minimum(k0 + 128 * K_WARPS * AHEAD + lane_k, last),
                                               TILES, GROUP_SIZE, L2_256B),)
        ahead_xs = _int4_mma_xs(x32_rows, tl.minimum(k0 + 128 * K_WARPS + lane_k, last), NB)
        pairs = ()  # per row: its four words' pairs 0 .. 3, [LANES, 4] each (word i at i)
        for j in tl.static_range(2 * TILES):
            p0, p1, p2, p3 = tl.inline_asm_elementwise(_INT4_BF16_PAIRS, "=r,=r,=r,=r,r,r",
                                                       [words[j], tl.where(live, scales[j], 0)[:, None]],
                                                       dtype=(tl.int32, tl.int32, tl.int32, tl.int32), is_pure=True,
                                                       pack=1)
            pairs = pairs + (p0, p1, p2, p3)
        for i in tl.static_range(4):
            for h in tl.static_range(2):
                out = ()
                for t in tl.static_range(TILES):
                    ga, gb = pairs[8 * t: 8 * t + 4], pairs[8 * t + 4: 8 * t + 8]
                    a0, a2 = _take(ga[2 * h], i), _take(ga[2 * h + 1], i)
                    a1, a3 = _take(gb[2 * h], i), _take(gb[2 * h + 1], i)
                    for nb in tl.static_range(NB):
                        c0, c1, c2, c3 = acc[4 * NB * t + 4 * nb: 4 * NB * t + 4 * nb + 4]
                        c0, c1, c2, c3 = _mma_m16n8k16(a0, a1, a2, a3, _take(xs[4 * nb + i], 2 * h),
                                                       _take(xs[4 * nb + i], 2 * h + 1), c0, c1, c2, c3, True)
                        out = out + (c0, c1, c2, c3)
                acc = out
    return acc


@triton.jit
def _mma_tile(acc, t: tl.constexpr, BLOCK_N: tl.constexpr):
    """Tile t's C fragments (_int4_mma_sums; warp w's rows 16 w .. 16 w + 15) as [16 x rows, BLOCK_N weight rows]."""
    blocks = ()
    for nb in tl.static_range(2):
        c = acc[8 * t + 4 * nb: 8 * t + 4 * nb + 4]
        blocks = blocks + (tl.join(tl.join(c[0], c[1]), tl.join(c[2], c[3])),)  # [LANES, x row 2q + e, row g + 8 h]
    out = tl.reshape(tl.join(blocks[0], blocks[1]), (BLOCK_N // 16, 8, 4, 2, 2, 2))  # w, g, q, e, h, nb
    return tl.reshape(tl.permute(out, (5, 2, 3, 0, 4, 1)), (16, BLOCK_N))  # x row 8 nb + 2 q + e, 16 w + 8 h + g


@triton.jit
def _mma_rows(pid_n, N, BLOCK_N: tl.constexpr, WARPS_A_ROW: tl.constexpr):
    """For _int4_mma_sums (a warp 16 of the program's BLOCK_N weight rows, WARPS_A_ROW warps each row, 2 BLOCK_N
    WARPS_A_ROW lanes; warp r (BLOCK_N / 16) + w holds rows 16 w .. 16 w + 15 as rank r, rank-major as _mma_columns
    reads them): each lane's q, its warp's rank among its rows' WARPS_A_ROW, g and MMA rows g and g + 8 (clamped into
    the N rows: the rows past them are not stored)."""
    lane = tl.arange(0, 2 * BLOCK_N * WARPS_A_ROW)
    g = (lane % 32) // 4
    warp = lane // 32
    row = pid_n * BLOCK_N + 16 * (warp % (BLOCK_N // 16)) + g
    return (lane % 4, warp // (BLOCK_N // 16), g, tl.minimum(row, N - 1).to(tl.int64),
            tl.minimum(row + 8, N - 1).to(tl.int64))


@triton.jit
def _mma_lanes(pid_n, match, rank, base, count, N, PAIRS: tl.constexpr, BLOCK_N: tl.constexpr):
    """_int4_mma_sums' lane_k (32 q) and _mma_rows' rows (one warp a row tile), and the group's members of ranks base
    + g and base + 8 + g (the lane's x rows)."""
    q, _, g, row_a, row_b = _mma_rows(pid_n, N, BLOCK_N, 1)
    members = (_members(match, rank, base + g, count, PAIRS)[0], _members(match, rank, base + 8 + g, count, PAIRS)[0])
    return 32 * q, row_a, row_b, members


@triton.jit
def _mma_columns(c_a, c_b, BLOCK_N: tl.constexpr, WARPS_A_ROW: tl.constexpr):
    """A tile's sums against one x (_int4_mma_sums with NB 1, its 8 x rows the same: lanes q = 0 .. 3 alike) as
    [BLOCK_N] in row order, from its C fragments c0 (rows g: c_a) and c2 (rows g + 8: c_b); lane q = 0's taken, the
    WARPS_A_ROW warps' of each row added (_mma_rows)."""
    sums = tl.reshape(tl.join(c_a, c_b), (WARPS_A_ROW, BLOCK_N // 16, 8, 4, 2))  # warp's rank, w, g, q, h
    first = tl.arange(0, 4)[None, None, None, :, None] == 0
    sums = tl.sum(tl.sum(tl.where(first, sums, 0.0), axis=3), axis=0)  # [w, g, h]
    return tl.reshape(tl.permute(sums, (0, 2, 1)), (BLOCK_N,))  # row 16 w + 8 h + g


@triton.jit
def _moe_gate_up_grouped_kernel(x_ptr, idx_ptr, w_ptr, scale_ptr, bias_ptr, h_ptr, P, H, I, E, TOP_K, x_stride,
                                we_stride, wn_stride, magic15, ACT: tl.constexpr, APPROX: tl.constexpr,
                                SCALED: tl.constexpr, GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr,
                                PAIRED: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr,
                                LIMIT: tl.constexpr, PRECISION: tl.constexpr, PAIRS: tl.constexpr, GROUP: tl.constexpr,
                                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, L2_256B: tl.constexpr,
                                PDL: tl.constexpr):
    # Program (pair, column block); an owner reads 2 BLOCK_N rows of its expert once (2 BLOCK_N H elements; SCALED:
    # one-byte codes, widened exactly to x's dtype for the dot, and 2 BLOCK_N row scales; int4: half a byte an element
    # and its group scales; PAIRED, bf16 x: _int4_mma_sums, BLOCK_N 16 a warp) and its group's x rows (L2 after the
    # first), and writes BLOCK_N elements of h per member. Other programs read the k T indices only. PDL: as the
    # per-pair kernels'.
    await_previous(PDL)
    pair = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < I
    owner, live, expert, match, rank, count = _group_of(idx_ptr, pair, P, E, PAIRS)
    if owner & live:
        gate_rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        up_rows = gate_rows + tl.cast(I, tl.int64) * wn_stride
        gate_scales = _group_scales(scale_ptr, expert * 2 * I + cols, H, GROUP_SIZE)
        up_scales = _group_scales(scale_ptr, expert * 2 * I + I + cols, H, GROUP_SIZE)
        for base in range(0, count, GROUP):
            member, valid = _members(match, rank, base + tl.arange(0, GROUP), count, PAIRS)
            if PAIRED:  # int4, bf16 x: mma.sync from the lanes' own words (GROUP = 16, BLOCK_N = 16 warps)
                lane_k, row_a, row_b, lane_members = _mma_lanes(tl.program_id(1), match, rank, base, count, I,
                                                                PAIRS, BLOCK_N)
                expert_rows = w_ptr + expert * we_stride
                expert_scales = scale_ptr + expert * 2 * I * (H // GROUP_SIZE)
                x32 = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
                w_rows = (expert_rows + row_a * wn_stride, expert_rows + row_b * wn_stride,
                          expert_rows + (row_a + I) * wn_stride, expert_rows + (row_b + I) * wn_stride)
                s_rows = (expert_scales + row_a * (H // GROUP_SIZE), expert_scales + row_b * (H // GROUP_SIZE),
                          expert_scales + (row_a + I) * (H // GROUP_SIZE),
                          expert_scales + (row_b + I) * (H // GROUP_SIZE))
                acc = _int4_mma_sums(w_rows, s_rows, (x32 + (lane_members[0] // TOP_K) * (x_stride // 2),
                                                      x32 + (lane_members[1] // TOP_K) * (x_stride // 2)), 0, H, lane_k,
                                     _int4_mma_first(w_rows, s_rows, 0, H, lane_k, 2, GROUP_SIZE, L2_256B), 2,
                                     GROUP_SIZE, 2, 1, L2_256B)
                g, u = _mma_tile(acc, 0, BLOCK_N), _mma_tile(acc, 1, BLOCK_N)
            else:
                x_rows = x_ptr + (member // TOP_K)[:, None] * x_stride
                g = tl.zeros([GROUP, BLOCK_N], tl.float32)
                u = tl.zeros([GROUP, BLOCK_N], tl.float32)
                for k0 in range(0, H, BLOCK_K):
                    ks = k0 + tl.arange(0, BLOCK_K)
                    xk = tl.load(x_rows + ks[None, :], mask=valid[:, None] & _before(ks[None, :], H, EVEN_K),
                                 other=0.0)
                    wg = _weight_tile(gate_rows, gate_scales, k0, H, col_ok, xk, magic15, BLOCK_N, BLOCK_K,
                                      GROUP_SIZE, "evict_first", FOLD, False, EVEN_K)
                    wu = _weight_tile(up_rows, up_scales, k0, H, col_ok, xk, magic15, BLOCK_N, BLOCK_K, GROUP_SIZE,
                                      "evict_first", FOLD, False, EVEN_K)
                    g = tl.dot(xk, tl.trans(_operand(wg, xk, SCALED)), g, input_precision=PRECISION)
                    u = tl.dot(xk, tl.trans(_operand(wu, xk, SCALED)), u, input_precision=PRECISION)
            y = _gated(g, u, expert, cols, col_ok, scale_ptr, bias_ptr, I, ACT, APPROX, SCALED, HAS_BIAS, ALPHA,
                       LIMIT)
            tl.store(h_ptr + member[:, None] * I + cols[None, :], y.to(h_ptr.dtype.element_ty),
                     mask=valid[:, None] & col_ok[None, :])


@triton.jit
def _moe_down_grouped_kernel(h_ptr, idx_ptr, rw_ptr, w_ptr, scale_ptr, bias_ptr, out_ptr, ws_ptr, cnt_ptr, P, H, I, E,
                             k_split, rw_stride, we_stride, wn_stride, out_stride, magic15, TOP_K: tl.constexpr,
                             SCALED: tl.constexpr, GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr, PAIRED: tl.constexpr,
                             EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr, SPLITS: tl.constexpr,
                             PRECISION: tl.constexpr, PAIRS: tl.constexpr, GROUP: tl.constexpr, BLOCK_N: tl.constexpr,
                             BLOCK_K: tl.constexpr, L2_256B: tl.constexpr, PDL: tl.constexpr):
    # Program (pair, column block, range of I); an owner reads its expert's BLOCK_N rows over its range once (SCALED:
    # codes and BLOCK_N row scales; int4: half a byte an element and the range's group scales) and its group's h ranges
    # (L2), and stores a [GROUP, BLOCK_N] fp32 partial (4 BLOCK_N bytes a member); the last arrival of a token tile
    # reads its TOP_K x SPLITS partials (L2) and writes BLOCK_N elements of out. PDL: as the per-pair kernels'.
    await_previous(PDL)
    pair = tl.program_id(0)
    pid_n = tl.program_id(1)
    split = tl.program_id(2)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < H
    k_start = split * k_split
    k_end = tl.minimum(k_start + k_split, I)
    owner, live, expert, match, rank, count = _group_of(idx_ptr, pair, P, E, PAIRS)
    if owner:
        rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        scales = _group_scales(scale_ptr, expert * H + cols, I, GROUP_SIZE)
        for base in range(0, count, GROUP):
            member, valid = _members(match, rank, base + tl.arange(0, GROUP), count, PAIRS)
            token = member // TOP_K
            acc = tl.zeros([GROUP, BLOCK_N], tl.float32)
            if live:  # a dead pair's partial is zero (h unread: the gate / up kernel left it unwritten)
                if PAIRED:  # as gate / up's
                    lane_k, row_a, row_b, lane_members = _mma_lanes(pid_n, match, rank, base, count, H, PAIRS,
                                                                    BLOCK_N)
                    expert_rows = w_ptr + expert * we_stride
                    expert_scales = scale_ptr + expert * H * (I // GROUP_SIZE)
                    h32 = h_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
                    w_rows = (expert_rows + row_a * wn_stride, expert_rows + row_b * wn_stride)
                    s_rows = (expert_scales + row_a * (I // GROUP_SIZE), expert_scales + row_b * (I // GROUP_SIZE))
                    acc = _mma_tile(_int4_mma_sums(
                        w_rows, s_rows, (h32 + lane_members[0] * (I // 2), h32 + lane_members[1] * (I // 2)),
                        k_start, k_end, lane_k, _int4_mma_first(w_rows, s_rows, k_start, k_end, lane_k, 1, GROUP_SIZE,
                                                                L2_256B), 1, GROUP_SIZE, 2, 1, L2_256B), 0, BLOCK_N)
                else:
                    for k0 in range(k_start, k_end, BLOCK_K):
                        ks = k0 + tl.arange(0, BLOCK_K)
                        hk = tl.load(h_ptr + member[:, None] * I + ks[None, :],
                                     mask=valid[:, None] & _before(ks[None, :], k_end, EVEN_K), other=0.0)
                        wd = _weight_tile(rows, scales, k0, k_end, col_ok, hk, magic15, BLOCK_N, BLOCK_K, GROUP_SIZE,
                                          "evict_first", FOLD, False, EVEN_K)
                        acc = tl.dot(hk, tl.trans(_operand(wd, hk, SCALED)), acc, input_precision=PRECISION)
            acc = _down_output(acc, expert, cols, col_ok & live, split == 0, scale_ptr, bias_ptr, H, SCALED, HAS_BIAS)
            weight = tl.load(rw_ptr + token * rw_stride + member % TOP_K, mask=valid & live, other=0.0)
            acc = acc * weight.to(tl.float32)[:, None]
            tl.store(ws_ptr + (split * P + member)[:, None] * H + cols[None, :], acc,
                     mask=valid[:, None] & col_ok[None, :])
            tl.debug_barrier()  # every thread's partials before the arrivals are published
            tile = token * tl.num_programs(1) + pid_n
            # a masked vector atomic's old values reach the threads that read them only since Triton 3.4 (issue
            # 7402, fixed by PR 7460); pyproject asks for 3.6
            arrived = tl.atomic_add(cnt_ptr + tile, 1, mask=valid, sem="acq_rel", scope="gpu")
            last = valid & (arrived == TOP_K * SPLITS - 1)
            tl.debug_barrier()  # the acquiring threads before the others read the partials
            total = tl.zeros([GROUP, BLOCK_N], tl.float32)
            for s in tl.static_range(SPLITS):  # in (split, j) order: the sum does not depend on arrival order
                for j in tl.static_range(TOP_K):
                    total += tl.load(ws_ptr + (s * P + token * TOP_K + j)[:, None] * H + cols[None, :],
                                     mask=last[:, None] & col_ok[None, :], other=0.0, cache_modifier=".cg")
            tl.store(out_ptr + token[:, None] * out_stride + cols[None, :], total.to(out_ptr.dtype.element_ty),
                     mask=last[:, None] & col_ok[None, :])
            tl.store(cnt_ptr + tile, 0, mask=last)  # left at zero for the next launch


@triton.jit
def _moe_gate_up_sorted_kernel(x_ptr, slot_pair_ptr, block_expert_ptr, w_ptr, scale_ptr, bias_ptr, h_ptr, H, I, E,
                               TOP_K, x_stride, we_stride, wn_stride, magic15, ACT: tl.constexpr, APPROX: tl.constexpr,
                               SCALED: tl.constexpr, GROUP_SIZE: tl.constexpr, FOLD: tl.constexpr, PAIRED: tl.constexpr,
                               EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr, ALPHA: tl.constexpr, LIMIT: tl.constexpr,
                               PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_K: tl.constexpr):
    # Program (block of BLOCK_M slots of one expert, BLOCK_N columns of I): reads its pairs' x rows (BLOCK_M H elements:
    # L2 after the first column block) and 2 BLOCK_N H weights of the expert (from HBM once a column block while the
    # expert's blocks run together; SCALED: one-byte codes, widened exactly to x's dtype, and 2 BLOCK_N row scales;
    # int4: half a byte an element and its group scales, rounded to x's dtype once dequantized), writes BLOCK_M x
    # BLOCK_N elements of h in pair order. A block past the last, or of the pairs routed outside [0, E) (expert E), does
    # nothing.
    block = tl.program_id(0)
    expert = tl.load(block_expert_ptr + block).to(tl.int64)
    if expert < E:
        pairs = tl.load(slot_pair_ptr + block * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
        valid = pairs >= 0  # padding slots: -1
        x_rows = x_ptr + tl.where(valid, pairs // TOP_K, 0)[:, None] * x_stride
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        col_ok = cols < I
        gate_rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
        up_rows = gate_rows + tl.cast(I, tl.int64) * wn_stride
        gate_scales = _group_scales(scale_ptr, expert * 2 * I + cols, H, GROUP_SIZE)
        up_scales = _group_scales(scale_ptr, expert * 2 * I + I + cols, H, GROUP_SIZE)
        g = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        u = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for k0 in range(0, H, BLOCK_K):
            ks = k0 + tl.arange(0, BLOCK_K)
            xk = tl.load(x_rows + ks[None, :], mask=valid[:, None] & _before(ks[None, :], H, EVEN_K), other=0.0)
            wg = _weight_tile(gate_rows, gate_scales, k0, H, col_ok, xk, magic15, BLOCK_N, BLOCK_K, GROUP_SIZE, "",
                              FOLD, PAIRED, EVEN_K)
            wu = _weight_tile(up_rows, up_scales, k0, H, col_ok, xk, magic15, BLOCK_N, BLOCK_K, GROUP_SIZE, "", FOLD,
                              PAIRED, EVEN_K)
            g = tl.dot(xk, tl.trans(_operand(wg, xk, SCALED)), g, input_precision=PRECISION)
            u = tl.dot(xk, tl.trans(_operand(wu, xk, SCALED)), u, input_precision=PRECISION)
        y = _gated(g, u, expert, cols, col_ok, scale_ptr, bias_ptr, I, ACT, APPROX, SCALED, HAS_BIAS, ALPHA, LIMIT)
        tl.store(h_ptr + pairs[:, None] * I + cols[None, :], y.to(h_ptr.dtype.element_ty),
                 mask=valid[:, None] & col_ok[None, :])


@triton.jit
def _moe_down_sorted_kernel(h_ptr, slot_pair_ptr, block_expert_ptr, rw_ptr, w_ptr, scale_ptr, bias_ptr, y_ptr, H, I,
                            E, we_stride, wn_stride, magic15, SCALED: tl.constexpr, GROUP_SIZE: tl.constexpr,
                            FOLD: tl.constexpr, PAIRED: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
                            PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr):
    # Program (block of BLOCK_M slots of one expert, BLOCK_N columns of H): reads its pairs' h rows (BLOCK_M I elements,
    # L2 after the first column block) and BLOCK_N I weights of the expert (SCALED: codes and BLOCK_N row scales; int4:
    # half a byte an element and its group scales), writes the pairs' w (D h) rows (y's dtype, x's: BLOCK_M BLOCK_N
    # elements) in pair order. A block of the pairs routed outside [0, E) writes their rows as zeros (h unread); one
    # past the last does nothing.
    block = tl.program_id(0)
    expert = tl.load(block_expert_ptr + block).to(tl.int64)
    if expert <= E:
        pairs = tl.load(slot_pair_ptr + block * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
        valid = pairs >= 0
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        col_ok = cols < H
        acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        if expert < E:
            h_rows = h_ptr + tl.where(valid, pairs, 0)[:, None] * I
            rows = w_ptr + expert * we_stride + cols.to(tl.int64)[:, None] * wn_stride
            scales = _group_scales(scale_ptr, expert * H + cols, I, GROUP_SIZE)
            for k0 in range(0, I, BLOCK_K):
                ks = k0 + tl.arange(0, BLOCK_K)
                hk = tl.load(h_rows + ks[None, :], mask=valid[:, None] & _before(ks[None, :], I, EVEN_K), other=0.0)
                wd = _weight_tile(rows, scales, k0, I, col_ok, hk, magic15, BLOCK_N, BLOCK_K, GROUP_SIZE, "", FOLD,
                                  PAIRED, EVEN_K)
                acc = tl.dot(hk, tl.trans(_operand(wd, hk, SCALED)), acc, input_precision=PRECISION)
            acc = _down_output(acc, expert, cols, col_ok, True, scale_ptr, bias_ptr, H, SCALED, HAS_BIAS)
            acc = acc * tl.load(rw_ptr + pairs, mask=valid, other=0.0).to(tl.float32)[:, None]
        tl.store(y_ptr + pairs[:, None] * H + cols[None, :], acc.to(y_ptr.dtype.element_ty),
                 mask=valid[:, None] & col_ok[None, :])


def _path(tokens: int, pairs: int, E: int, H: int, I: int, quantized: bool, int4: bool = False,
          paired: bool = False) -> str:
    """The path that takes a call (module docstring): "grouped" where _takes_grouped, else "per-pair" up to
    MOE_MAX_TOKENS tokens and "sorted" past them. int4 experts take the grouped path only up to MOE_MAX_TOKENS (past
    them grouped against sorted is untimed); paired: int4 with bf16 x on sm_80+ (the grouped kernels' mma.sync)."""
    if _takes_grouped(pairs, E, H, I, quantized, int4, paired) and (tokens <= MOE_MAX_TOKENS or not int4):
        return "grouped"
    return "per-pair" if tokens <= MOE_MAX_TOKENS else "sorted"


def _takes_grouped(pairs: int, E: int, H: int, I: int, quantized: bool, int4: bool = False,
                   paired: bool = False) -> bool:
    """Whether a call of `pairs` (token, expert) pairs takes the grouped path (module docstring). Quantized experts only
    where the pairs can cover every expert: at one and two tokens of Mixtral's fp8 experts the grouped kernels ran 5-7%
    behind a pair a program (H100, session 62; their launch is bf16's, its k-tiles half the bytes). Not where the
    experts' mean run passes a GROUP (an owner's passes run one after another): 128 tokens of Mixtral's (runs of 32)
    took 2.34 ms there against the sorted path's 1.15, 32 tokens (runs of 8) 0.98 against 1.06 (H100, session 64).
    int4 experts (and, by _path, up to MOE_MAX_TOKENS tokens) where each expert has two pairs or more on average if
    `paired` (bf16 x: their grouped kernels run mma.sync from registers, _int4_mma_sums; ~0.46 ms flat at 4-16 tokens
    of Mixtral's on an H200, session 67, round-robin routing, against a pair a program's 0.34 / 0.68 / 1.00 / 1.32 ms
    at 4 / 8 / 12 / 16; gpt-oss-20b's 12-16 tokens 0.33 ms against 0.43-0.56 (12 tokens, 1.5 pairs an expert, left a
    pair a program: not timed at 6 tokens of Mixtral's), 4-8 tokens even; Qwen3's 1-16 tokens 1.4-1.9x a pair a
    program's: never two pairs an expert there), else three or more (fp16 / fp32 x, or before sm_80: a tl.dot tile
    dequantized in fp32; H100, session 66: 0.88 ms flat at 4-16 tokens of Mixtral's)."""
    if int4:
        return (2 if paired else 3) * E <= pairs <= min(PAIRS_MAX, GROUP * E)
    return pairs <= min(PAIRS_MAX, GROUP * E) and (pairs >= E or (H * I >= GROUPED_MIN_EXPERT and not quantized))


def _check(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale=None, down_scale=None,
           gate_up_bias=None, down_bias=None, swiglu_alpha=1.702, swiglu_limit=7.0) -> None:
    check_float("x", x)
    if x.dim() != 2:
        raise ValueError(f"x must be 2-D [tokens, hidden], got shape {tuple(x.shape)}")
    if not isinstance(top_k_index, torch.Tensor) or top_k_index.dtype not in INDEX_DTYPES:
        raise TypeError(f"top_k_index must be an int32 or int64 tensor, got "
                        f"{getattr(top_k_index, 'dtype', type(top_k_index).__name__)}")
    check_float("top_k_weights", top_k_weights)
    int4 = isinstance(gate_up, torch.Tensor) and gate_up.dtype == INT4_DTYPE
    quantized = int4 or (isinstance(gate_up, torch.Tensor) and gate_up.dtype in CODE_DTYPES)
    check_float("gate_up", gate_up, (*FLOAT_DTYPES, *CODE_DTYPES, INT4_DTYPE))
    check_float("down", down, (*FLOAT_DTYPES, *CODE_DTYPES, INT4_DTYPE))
    for name, t in (("top_k_index", top_k_index), ("top_k_weights", top_k_weights), ("gate_up", gate_up),
                    ("down", down)):
        check_same_device(name, t, "x", x)
    T, H = x.shape
    if top_k_index.dim() != 2 or top_k_index.shape[0] != T:
        raise ValueError(f"top_k_index must be [tokens, k] = [{T}, k], got shape {tuple(top_k_index.shape)}")
    if top_k_weights.shape != top_k_index.shape:
        raise ValueError(f"top_k_weights must have top_k_index's shape {tuple(top_k_index.shape)}, got "
                         f"{tuple(top_k_weights.shape)}")
    per_word = 8 if int4 else 1  # int4: 8 codes an int32 word along a row
    if gate_up.dim() != 3 or gate_up.shape[2] * per_word != H or gate_up.shape[1] % 2:
        raise ValueError(f"gate_up must be [experts, 2 * intermediate, hidden{' / 8' if int4 else ''}] with hidden "
                         f"{H}, got shape {tuple(gate_up.shape)}")
    E, I = gate_up.shape[0], gate_up.shape[1] // 2
    if int4 and I % 8:
        raise ValueError(f"int4 experts need an intermediate size (gate_up.shape[1] / 2) that is a multiple of 8, "
                         f"got {I}")
    if down.shape != (E, H, I // per_word):
        raise ValueError(f"down must be [experts, hidden, intermediate{' / 8' if int4 else ''}] = "
                         f"[{E}, {H}, {I // per_word}], got shape {tuple(down.shape)}")
    for name, t in (("gate_up", gate_up), ("down", down)):
        if t.dtype != (gate_up.dtype if quantized else x.dtype):
            raise TypeError(f"{name} has dtype {str(t.dtype).replace('torch.', '')} but "
                            + (f"gate_up has {str(gate_up.dtype).replace('torch.', '')} (quantized experts: both "
                               f"the same codes)" if quantized else f"x has {str(x.dtype).replace('torch.', '')}"))
        if t.stride(2) != 1:
            raise ValueError(f"{name} must have unit stride in its last dim, got strides {t.stride()}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {activation!r}")
    for name, scale, rows, row_len in (("gate_up_scale", gate_up_scale, 2 * I, H), ("down_scale", down_scale, H, I)):
        if not quantized:
            if scale is not None:
                raise ValueError(f"{name} is only for quantized (float8_e4m3fn, int8 or int4) experts; gate_up and "
                                 f"down are {str(gate_up.dtype).replace('torch.', '')}")
            continue
        if int4:
            if scale is None:
                raise ValueError(f"{name} is required with int4 experts: scales [{E}, {rows}, {row_len} / group size]")
            check_float(name, scale)
            groups = scale.shape[-1] if scale.dim() == 3 else -1
            whole = (groups > 0 and row_len % groups == 0 and row_len // groups in INT4_GROUP_SIZES) if row_len else (
                groups == 0)  # rows of no elements: no groups
            if scale.shape[:2] != (E, rows) or not whole:
                raise ValueError(f"{name} must be [{E}, {rows}, {row_len} / group size] with a group size of "
                                 f"{', '.join(map(str, INT4_GROUP_SIZES))} (int4 experts), got shape "
                                 f"{tuple(scale.shape)}")
        else:
            if scale is None:
                raise ValueError(f"{name} is required with quantized experts: a float32 scale per output row "
                                 f"[{E}, {rows}]")
            check_float(name, scale, (torch.float32,))
            if scale.shape != (E, rows):
                raise ValueError(f"{name} must be [{E}, {rows}] (a scale per output row), got shape "
                                 f"{tuple(scale.shape)}")
        check_same_device(name, scale, "x", x)
    for name, bias, rows in (("gate_up_bias", gate_up_bias, 2 * I), ("down_bias", down_bias, H)):
        if bias is not None:
            check_float(name, bias)
            if bias.shape != (E, rows):
                raise ValueError(f"{name} must be [{E}, {rows}] (a bias per output row), got shape {tuple(bias.shape)}")
            check_same_device(name, bias, "x", x)
    if activation == "swiglu_oai":
        for name, value in (("swiglu_alpha", swiglu_alpha), ("swiglu_limit", swiglu_limit)):
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    if gate_up.dtype == torch.float8_e4m3fn:
        check_fp8_device("moe_experts", x.device)


def _gate_f64(gu, I, activation, alpha, limit) -> torch.Tensor:
    """h from float64 gate / up outputs [..., 2I] (biases added)."""
    if activation == "swiglu_oai":
        g, u = gu[..., :I].clamp(max=limit), gu[..., I:].clamp(-limit, limit)
        return g * torch.sigmoid(alpha * g) * (u + 1)
    return _ACT_F64[activation](gu[..., :I]) * gu[..., I:]


def dequantize_experts(codes: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32,
                       via: torch.dtype = torch.float64) -> torch.Tensor:
    """Quantized experts' weights (or one expert's) as `dtype`: codes [..., out, in] times their row scales
    [..., out], or int4 words [..., out, in / 8] (c - 8) times their group scales [..., out, in / group size];
    computed in `via` (float64: exact), rounded once."""
    if codes.dtype == INT4_DTYPE:
        shifts = torch.arange(0, 32, 4, device=codes.device, dtype=torch.int32)
        values = (((codes[..., None] >> shifts) & 15) - 8).flatten(-2).to(via)
        if not scale.shape[-1]:  # rows of no elements
            return values.to(dtype)
        return (values * scale.to(via).repeat_interleave(values.shape[-1] // scale.shape[-1], -1)).to(dtype)
    return (codes.to(via) * scale.to(via)[..., None]).to(dtype)


def _expert(w, scale, e) -> torch.Tensor:
    """Expert e's weights in float64 (quantized: dequantize_experts')."""
    return w[e].double() if scale is None else dequantize_experts(w[e], scale[e], torch.float64)


def moe_experts_reference(x, top_k_index, top_k_weights, gate_up, down, activation="silu", gate_up_scale=None,
                          down_scale=None, gate_up_bias=None, down_bias=None, swiglu_alpha=1.702,
                          swiglu_limit=7.0) -> torch.Tensor:
    """The same sum in float64, expert by expert over the pairs routed to it; indices outside [0, E) skipped."""
    E, I = gate_up.shape[0], gate_up.shape[1] // 2
    out = torch.zeros(x.shape, dtype=torch.float64, device=x.device)
    for e in range(E):
        tokens, j = torch.nonzero(top_k_index == e, as_tuple=True)
        if not tokens.numel():
            continue
        gu = x[tokens].double() @ _expert(gate_up, gate_up_scale, e).T
        gu = gu if gate_up_bias is None else gu + gate_up_bias[e].double()
        y = _gate_f64(gu, I, activation, swiglu_alpha, swiglu_limit) @ _expert(down, down_scale, e).T
        y = y if down_bias is None else y + down_bias[e].double()
        out.index_add_(0, tokens, top_k_weights[tokens, j].double()[:, None] * y)
    return out


def _moe_fake(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale, gate_up_bias,
              down_bias, swiglu_alpha, swiglu_limit):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch_op("moe_experts", fake=_moe_fake)
def _moe_experts_op(x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor, gate_up: torch.Tensor,
                    down: torch.Tensor, activation: str, gate_up_scale: Optional[torch.Tensor],
                    down_scale: Optional[torch.Tensor], gate_up_bias: Optional[torch.Tensor],
                    down_bias: Optional[torch.Tensor], swiglu_alpha: float, swiglu_limit: float) -> torch.Tensor:
    if not runs_kernel(x):
        return moe_experts_reference(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale,
                                     down_scale, gate_up_bias, down_bias, swiglu_alpha, swiglu_limit).to(x.dtype)
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, top_k_index.shape[1]
    out = torch.empty((T, H), device=x.device, dtype=x.dtype)
    if out.numel() == 0:
        return out
    if top_k == 0 or E == 0 or I == 0:
        return out.zero_()
    idx, router = top_k_index.contiguous(), top_k_weights.contiguous()  # [T, k]: a copy only of a strided view
    x = x if x.stride(1) == 1 else x.contiguous()
    h = torch.empty((T * top_k, I), device=x.device, dtype=x.dtype)  # workspace: act(g) * u of every pair
    quantized, int4 = gate_up_scale is not None, gate_up.dtype == INT4_DTYPE
    # int4: each projection's group size (its scales' last dim: K / group size); one-byte codes: row scales
    groups = (H // gate_up_scale.shape[-1], I // down_scale.shape[-1]) if int4 else (0, 0)
    placeholder = provided(float32_placeholder(x.device), functools.partial(float32_placeholder, x.device))
    gate_up_scale, down_scale, gate_up_bias, down_bias = (placeholder if t is None else t.contiguous() for t in (
        gate_up_scale, down_scale, gate_up_bias, down_bias))
    swiglu = (float(swiglu_alpha), float(swiglu_limit)) if activation == "swiglu_oai" else (0.0, 0.0)
    fold = x.dtype != torch.float32  # int4: one FMA a weight (_weight_tile), offsets once a chunk (_row_products)
    epilogue = dict(magic15=MAGIC15, SCALED=quantized and not int4, GROUP_SIZE=groups[0], FOLD=fold, ACT=activation,
                    APPROX=x.is_cuda, HAS_BIAS=gate_up_bias is not placeholder, ALPHA=swiglu[0], LIMIT=swiglu[1])
    down_format = dict(magic15=MAGIC15, SCALED=epilogue["SCALED"], GROUP_SIZE=groups[1], FOLD=fold,
                       HAS_BIAS=down_bias is not placeholder)
    pdl = pdl_options(x)
    # the dot kernels' int4 with bf16 x on a GPU: bf16x2 tiles (_weight_tile), mma.sync from registers (_int4_mma_sums)
    paired = (int4 and x.dtype == torch.bfloat16 and x.is_cuda and not interpreting()
              and capability(x.device.index) >= (8, 0))  # bf16x2 and mma.sync's bf16: sm_80
    path = _path(T, T * top_k, E, H, I, quantized, int4, paired)
    if path != "per-pair":
        epilogue, down_format = dict(epilogue, PAIRED=paired), dict(down_format, PAIRED=paired)
    if path == "sorted":
        return _moe_experts_sorted(x, idx, router, gate_up, down, gate_up_scale, down_scale, gate_up_bias, down_bias,
                                   h, out, epilogue, down_format)
    if path == "grouped":
        return _moe_experts_grouped(x, idx, router, gate_up, down, gate_up_scale, down_scale, gate_up_bias,
                                    down_bias, h, out, epilogue, down_format, pdl)
    if paired and INT4_PAIR_MMA_LAUNCH and _pair_mma_split(T * top_k, H, I, x.device)[1] >= INT4_PAIR_MMA_MIN_WARPS:
        return _moe_experts_pair_mma(_aligned_rows(x), idx, router, gate_up, down, gate_up_scale, down_scale,
                                     gate_up_bias, down_bias, h, out, epilogue, down_format, pdl)
    block_n, block_k, warps = INT4_GATE_UP_LAUNCH if int4 else GATE_UP_LAUNCH
    stages = PER_PAIR_STAGES["int4" if int4 else "codes" if quantized else "float"]
    launch(_moe_gate_up_kernel, (T * top_k, cdiv(I, block_n)), x, idx, gate_up, gate_up_scale, gate_up_bias, h, H, I,
           E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1), **epilogue, BLOCK_N=block_n,
           BLOCK_K=min(block_k, triton.next_power_of_2(H)), STAGES=stages[0], num_warps=warps,
           **pdl)
    block_n, block_k, warps, per_sm = INT4_DOWN_LAUNCH if int4 else DOWN_LAUNCH
    block_k = min(block_k, triton.next_power_of_2(I))
    tiles = T * cdiv(H, block_n)
    splits, k_split = _ranges_of_i(x.device, tiles, per_sm, DOWN_MAX_SPLITS, I, block_k)
    partials = (torch.empty((splits, T, H), device=x.device, dtype=torch.float32) if splits > 1 else placeholder)
    launch(_moe_down_kernel, (T, cdiv(H, block_n), splits), h, idx, router, down, down_scale, down_bias, out,
           partials, arrival_counters(x.device, tiles), T, H, I, E, top_k, k_split, router.stride(0), down.stride(0),
           down.stride(1), out.stride(0), **down_format, SPLITS=splits, SUM_BATCH=min(splits, 8), BLOCK_N=block_n,
           BLOCK_K=block_k, STAGES=stages[1], num_warps=warps, **pdl)
    return out


def _hinted(gate_up: torch.Tensor, down: torch.Tensor) -> bool:
    """Whether _int4_mma_sums' word loads take the L2 prefetch-size hint (INT4_L2_256B): its inline PTX loads 16 bytes
    at a time, so gate_up's and down's word rows must be 16-byte aligned (else tl.load's, vectorised as their
    alignment allows)."""
    return INT4_L2_256B and all(w.data_ptr() % 16 == 0 and w.stride(0) % 4 == 0 and w.stride(1) % 4 == 0
                                for w in (gate_up, down))


def _aligned_rows(x: torch.Tensor) -> torch.Tensor:
    """x, or a contiguous copy where its rows are not 16-byte aligned (_int4_mma_xs' 16-byte loads of x pairs)."""
    return x.clone(memory_format=torch.contiguous_format) if x.stride(0) % 8 or x.data_ptr() % 16 else x


def _pair_mma_split(pairs: int, H: int, I: int, device: torch.device) -> tuple[int, float]:
    """The per-pair mma gate / up kernel's K_WARPS (warps a row tile, dealt its k-steps round-robin) and its warps an
    SM with them: doubled, up to 4, while the warps an SM stay within INT4_PAIR_MMA_LAUNCH's aim and each warp keeps a
    k-step of 128."""
    warps, _, _, aim, _ = INT4_PAIR_MMA_LAUNCH
    per_sm = pairs * cdiv(I, 16 * warps) * warps / num_sms(device.index if device.type == "cuda" else -1)
    k_warps = 1
    while k_warps < 4 and 2 * k_warps * per_sm <= aim and cdiv(H, 128) >= 2 * k_warps:
        k_warps *= 2
    return k_warps, k_warps * per_sm


def _pair_mma_down(T: int, top_k: int, H: int, I: int, device: torch.device) -> tuple[int, int, int]:
    """The per-pair mma down kernel's PAIR_WARPS (warps a tile, dealt the token's k pairs), ranges of I and elements a
    range: of the powers of two dividing k and the fifth entry of INT4_PAIR_MMA_LAUNCH whose T x column tiles x
    PAIR_WARPS warps fit max(INT4_DOWN_PAIR_BUDGET, the launch's third entry) warps an SM (1 always), each with as many
    ranges of whole 128-wide k-steps as the rest of the launch's third entry (warps an SM) holds (at least one, at most
    DOWN_MAX_SPLITS), the one whose warps' chain of dependent k-steps is shortest: pairs a warp x (k-steps a range +
    1), plus INT4_DOWN_CLOSE_STEPS where I is cut (ties: more pair warps)."""
    _, warps, per_sm, _, most_pair_warps = INT4_PAIR_MMA_LAUNCH
    sms = num_sms(device.index if device.type == "cuda" else -1)
    budget, pair_budget = per_sm * sms, max(per_sm, INT4_DOWN_PAIR_BUDGET) * sms
    tile_warps = T * cdiv(H, 16 * warps) * warps
    steps = cdiv(I, 128)
    choices = []
    pair_warps = math.gcd(top_k, most_pair_warps)
    pair_warps &= -pair_warps  # the largest power of two dividing both: no warp idle for a round
    while pair_warps >= 1:
        if pair_warps == 1 or tile_warps * pair_warps <= pair_budget:
            k_split = cdiv(steps, max(1, min(budget // (tile_warps * pair_warps), steps, DOWN_MAX_SPLITS)))
            ranges = cdiv(steps, k_split)
            chain = top_k // pair_warps * (k_split + 1) + (INT4_DOWN_CLOSE_STEPS if ranges > 1 else 0)
            choices.append((chain, -pair_warps, ranges, k_split * 128))
        pair_warps //= 2
    _, minus_pair_warps, ranges, k_split = min(choices)
    return -minus_pair_warps, ranges, k_split


def _down_ahead(k_split: int) -> tuple[int, Optional[int]]:
    """The per-pair mma down kernel's (AHEAD, register cap or None) for ranges of k_split elements of I
    (INT4_DOWN_AHEAD)."""
    ahead, maxnreg, fewest_steps = INT4_DOWN_AHEAD
    return (ahead, maxnreg) if k_split // 128 >= fewest_steps else (1, None)


def _moe_experts_pair_mma(x, idx, router, gate_up, down, gate_up_scale, down_scale, gate_up_bias, down_bias, h, out,
                          epilogue, down_format, pdl):
    """The per-pair path's two launches for int4 experts with bf16 x on sm_80+ (INT4_PAIR_MMA_LAUNCH; arguments as
    _moe_experts_grouped's, x's rows 16-byte aligned)."""
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, idx.shape[1]
    gate_up_warps, down_warps = INT4_PAIR_MMA_LAUNCH[:2]
    k_warps = _pair_mma_split(T * top_k, H, I, x.device)[0]
    pair_warps, splits, k_split = _pair_mma_down(T, top_k, H, I, x.device)
    hinted = _hinted(gate_up, down)
    ahead, maxnreg = _down_ahead(k_split)
    launch(_moe_gate_up_mma_kernel, (T * top_k, cdiv(I, 16 * gate_up_warps)), x, idx, gate_up, gate_up_scale,
           gate_up_bias, h, H, I, E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1),
           **{key: epilogue[key] for key in ("ACT", "APPROX", "GROUP_SIZE", "HAS_BIAS", "ALPHA", "LIMIT")},
           BLOCK_N=16 * gate_up_warps, K_WARPS=k_warps, L2_256B=hinted, num_warps=gate_up_warps * k_warps, **pdl)
    tiles = T * cdiv(H, 16 * down_warps)
    partials = (torch.empty((splits, T, H), device=x.device, dtype=torch.float32) if splits > 1
                else float32_placeholder(x.device))
    launch(_moe_down_mma_kernel, (T, cdiv(H, 16 * down_warps), splits), h, idx, router, down, down_scale, down_bias,
           out, partials, arrival_counters(x.device, tiles), T, H, I, E, top_k, k_split, router.stride(0),
           down.stride(0), down.stride(1), out.stride(0), GROUP_SIZE=down_format["GROUP_SIZE"],
           HAS_BIAS=down_format["HAS_BIAS"], SPLITS=splits, SUM_BATCH=min(splits, 8), BLOCK_N=16 * down_warps,
           PAIR_WARPS=pair_warps, L2_256B=hinted, EARLY=INT4_DOWN_EARLY, AHEAD=ahead,
           num_warps=down_warps * pair_warps, **({"maxnreg": maxnreg} if maxnreg else {}), **pdl)
    return out


def _ranges_of_i(device, tiles, per_sm, max_splits, I, block_k) -> tuple[int, int]:
    """(ranges, elements a range) of I for a down kernel of `tiles` column tiles to make about per_sm programs an SM,
    at most max_splits ranges, each a whole number of k-tiles."""
    steps = cdiv(I, block_k)
    splits = max(1, min(cdiv(per_sm * num_sms(device.index if device.type == "cuda" else -1), tiles), steps,
                        max_splits))
    k_split = cdiv(steps, splits) * block_k
    return cdiv(I, k_split), k_split


def _moe_experts_grouped(x, idx, router, gate_up, down, gate_up_scale, down_scale, gate_up_bias, down_bias, h, out,
                         epilogue, down_format, pdl):
    """The grouped path's two launches (idx, router contiguous [T, k]; h the [T k, I] workspace; epilogue and
    down_format: the kernels' format and epilogue arguments)."""
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, idx.shape[1]
    P = T * top_k
    pairs = max(16, triton.next_power_of_2(P))
    precision = "ieee" if x.dtype == torch.float32 else "tf32"  # fp32 x: its own precision; 16-bit: not used
    hinted = _hinted(gate_up, down) and epilogue["PAIRED"]  # the hint is _int4_mma_sums' only
    options = dict(pdl)  # launch options
    if epilogue["PAIRED"]:  # _int4_mma_sums: 128-wide k-steps, a warp 16 rows; x rows as 16-byte aligned int32 pairs
        block_n, block_k, warps, maxnreg = INT4_GROUPED_LAUNCH
        gu_k = block_k
        if maxnreg:
            options["maxnreg"] = maxnreg
        x = _aligned_rows(x)
    else:
        block_n, block_k, warps = GROUPED_LAUNCH
        gu_k = min(block_k, max(16, triton.next_power_of_2(H)))
        block_k = min(block_k, max(16, triton.next_power_of_2(I)))
    launch(_moe_gate_up_grouped_kernel, (P, cdiv(I, block_n)), x, idx, gate_up, gate_up_scale, gate_up_bias, h, P, H,
           I, E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1), **epilogue, PRECISION=precision,
           PAIRS=pairs, GROUP=GROUP, BLOCK_N=block_n, BLOCK_K=gu_k, EVEN_K=H % gu_k == 0, L2_256B=hinted,
           num_warps=warps, **options)
    splits, k_split = _ranges_of_i(x.device, P * cdiv(H, block_n), GROUPED_DOWN_PER_SM, GROUPED_MAX_SPLITS, I, block_k)
    partials = torch.empty((splits, P, H), device=x.device, dtype=torch.float32)
    launch(_moe_down_grouped_kernel, (P, cdiv(H, block_n), splits), h, idx, router, down, down_scale, down_bias, out,
           partials, arrival_counters(x.device, T * cdiv(H, block_n)), P, H, I, E, k_split, router.stride(0),
           down.stride(0), down.stride(1), out.stride(0), TOP_K=top_k, **down_format, SPLITS=splits,
           PRECISION=precision, PAIRS=pairs, GROUP=GROUP, BLOCK_N=block_n, BLOCK_K=block_k, EVEN_K=I % block_k == 0,
           L2_256B=hinted, num_warps=warps, **options)
    return out


@triton.jit
def _sum_pairs_kernel(rows_ptr, out_ptr, H, TOP_K, out_stride, BLOCK: tl.constexpr):
    # Program (token t, BLOCK columns): out[t] = sum_j rows[t k + j] in order j, in fp32 (rows [k T, H] in x's dtype:
    # k BLOCK reads, BLOCK writes in out's dtype).
    t = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for j in range(0, TOP_K):
        acc += tl.load(rows_ptr + (t * TOP_K + j) * H + cols, mask=cols < H, other=0.0).to(tl.float32)
    tl.store(out_ptr + t * out_stride + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < H)


@triton.jit
def _slot_bin(idx_ptr, pairs, P, E, BINS: tl.constexpr):
    """The bins of `pairs` (a [CHUNK] vector): experts 0 .. E - 1, E for a pair routed outside them, BINS for pairs
    past P (they sort last)."""
    expert = tl.load(idx_ptr + pairs, mask=pairs < P, other=0)
    return tl.where(pairs < P, tl.where((expert >= 0) & (expert < E), expert, E), BINS).to(tl.int32)


@triton.jit
def _chunk_counts_kernel(idx_ptr, counts_ptr, P, E, BINS: tl.constexpr, CHUNK: tl.constexpr):
    # Program c: its CHUNK pairs' bins counted into counts[c] ([C + 1, BINS] int32): reads 4-8 bytes a pair, writes
    # 4 bytes a bin.
    c = tl.program_id(0)
    key = _slot_bin(idx_ptr, c * CHUNK + tl.arange(0, CHUNK), P, E, BINS)
    tl.store(counts_ptr + c * BINS + tl.arange(0, BINS), tl.histogram(key, BINS, mask=key < BINS))


@triton.jit
def _chunk_offsets_kernel(counts_ptr, C, BINS: tl.constexpr, BINS_A_PROGRAM: tl.constexpr,
                          CHUNKS_A_STEP: tl.constexpr):
    # Program (BINS_A_PROGRAM bins: up to 32 bytes of each row): each bin's counts over the C chunks replaced by their
    # exclusive running sum (the bin's pairs in the chunks before each), the bin's total in row C ([C + 1, BINS]
    # int32: reads and writes 4 bytes a count).
    bins = tl.program_id(0) * BINS_A_PROGRAM + tl.arange(0, BINS_A_PROGRAM)
    running = tl.zeros([BINS_A_PROGRAM], tl.int32)
    for c0 in range(0, C, CHUNKS_A_STEP):
        chunks = c0 + tl.arange(0, CHUNKS_A_STEP)
        at = counts_ptr + chunks[:, None] * BINS + bins[None, :]
        count = tl.load(at, mask=chunks[:, None] < C, other=0)
        tl.store(at, running[None, :] + tl.cumsum(count, 0) - count, mask=chunks[:, None] < C)
        running += tl.sum(count, 0)
    tl.store(counts_ptr + C * BINS + bins, running)


@triton.jit
def _sorted_slots_kernel(idx_ptr, offsets_ptr, slot_pair_ptr, block_expert_ptr, P, E, blocks, BLOCK_M: tl.constexpr,
                         BINS: tl.constexpr, CHUNK: tl.constexpr, PADS: tl.constexpr, BLOCKS_A_PASS: tl.constexpr):
    # Program c (of C = cdiv(P, CHUNK)): reads its chunk's CHUNK indices and, from _chunk_offsets_kernel's [C + 1,
    # BINS], the bins' totals and their pairs before its chunk and before the next (12 bytes a bin), sorts the chunk
    # by (bin, pair) on chip and writes each pair's slot (4 bytes a pair, scattered); program 0 also writes the
    # padding slots' -1, and the programs in turn a block's expert (4 bytes a block).
    c = tl.program_id(0)
    C = tl.num_programs(0)
    bins = tl.arange(0, BINS)
    total = tl.load(offsets_ptr + C * BINS + bins)
    before = tl.load(offsets_ptr + c * BINS + bins)  # pairs of each bin in the chunks before c
    count = tl.load(offsets_ptr + (c + 1) * BINS + bins) - before  # and in chunk c (row C: the totals)
    padded = (total + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    ends = tl.cumsum(padded, 0)  # each bin's run of slots ends here
    first = ends - padded
    # this chunk's pairs sorted by (bin, pair): sorted position s of a bin b's pair is its rank in the chunk past the
    # chunk's pairs of bins before b (`ahead`)
    key = _slot_bin(idx_ptr, c * CHUNK + tl.arange(0, CHUNK), P, E, BINS)
    ahead = tl.cumsum(count, 0) - count
    order = tl.sort(key * CHUNK + tl.arange(0, CHUNK))
    key, pair = order // CHUNK, c * CHUNK + order % CHUNK
    slot = tl.gather(first + before - ahead, tl.minimum(key, BINS - 1), 0) + tl.arange(0, CHUNK)
    tl.store(slot_pair_ptr + slot, pair, mask=key < BINS)
    if c == 0:  # each bin's padding slots, then those past the last run
        for p0 in tl.static_range(0, BLOCK_M, PADS):
            pad = p0 + tl.arange(0, PADS)
            tl.store(slot_pair_ptr + (first + total)[:, None] + pad[None, :], -1,
                     mask=pad[None, :] < (padded - total)[:, None])
        last = tl.max(ends, 0)
        for s0 in range(last, blocks * BLOCK_M, CHUNK):
            slots = s0 + tl.arange(0, CHUNK)
            tl.store(slot_pair_ptr + slots, -1, mask=slots < blocks * BLOCK_M)
    # a block's expert: the bins whose runs end at or before its first slot (E + 1 past them all)
    for b0 in range(c * BLOCKS_A_PASS, blocks, C * BLOCKS_A_PASS):
        block = b0 + tl.arange(0, BLOCKS_A_PASS)
        done = (ends[None, :] <= block[:, None] * BLOCK_M) & (bins[None, :] <= E)
        tl.store(block_expert_ptr + block, tl.sum(done.to(tl.int32), 1), mask=block < blocks)


SLOTS_CHUNK = 256  # pairs a program of _sorted_slots_kernel sorts (the tests shrink it: several programs)
SLOTS_SCAN_STEP = 256  # chunks a step of _chunk_offsets_kernel's scan (the tests shrink it: several steps)


def _sorted_slots(idx: torch.Tensor, E: int, block_m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The sorted path's layout of the k T pairs of idx [T, k] contiguous (three kernels, no host synchronisation):
    the pairs sorted by expert (stable: in pair order within one), each expert's run padded to whole blocks of block_m
    slots, the pairs routed outside [0, E) last as expert E. Returns slot_pair (int32, a slot's pair or -1 for
    padding; blocks x block_m slots) and block_expert (int32 [blocks]: a block's expert, E for the unrouted, E + 1
    past the last block), blocks an upper bound on those used: cdiv(k T, block_m) + E + 1
    (`_sorted_slots_reference`)."""
    blocks = cdiv(idx.numel(), block_m) + E + 1
    return _sorted_slots_into(idx, E, block_m, torch.empty(blocks * block_m, dtype=torch.int32, device=idx.device),
                              torch.empty(blocks, dtype=torch.int32, device=idx.device))


def _sorted_slots_into(idx, E, block_m, slot_pair, block_expert) -> tuple[torch.Tensor, torch.Tensor]:
    """_sorted_slots written into slot_pair and block_expert (int32, as _sorted_slots makes them): every element. Each
    chunk's pairs are counted by bin, the counts turned into each chunk's pairs of each bin before it, then each
    chunk sorted into its slots: every index read twice, (k T)^2 never."""
    pairs = idx.numel()
    chunk = min(SLOTS_CHUNK, max(16, triton.next_power_of_2(pairs)))
    chunks, bins = cdiv(pairs, chunk), triton.next_power_of_2(E + 1)
    offsets = torch.empty((chunks + 1, bins), dtype=torch.int32, device=idx.device)
    launch(_chunk_counts_kernel, (chunks,), idx, offsets, pairs, E, BINS=bins, CHUNK=chunk, num_warps=4)
    bins_a_program = min(bins, 8)  # powers of two: programs of whole bins
    launch(_chunk_offsets_kernel, (bins // bins_a_program,), offsets, chunks, BINS=bins, BINS_A_PROGRAM=bins_a_program,
           CHUNKS_A_STEP=SLOTS_SCAN_STEP, num_warps=4)
    launch(_sorted_slots_kernel, (chunks,), idx, offsets, slot_pair, block_expert, pairs, E, block_expert.numel(),
           BLOCK_M=block_m, BINS=bins, CHUNK=chunk, PADS=min(block_m, 16), BLOCKS_A_PASS=32, num_warps=4)
    return slot_pair, block_expert


def _sorted_slots_reference(idx: torch.Tensor, E: int, block_m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """_sorted_slots by torch's argsort and scans (the same layout)."""
    flat = idx.reshape(-1).long()
    pairs = flat.numel()
    key = torch.where((flat >= 0) & (flat < E), flat, E)
    counts = torch.zeros(E + 1, dtype=torch.int64, device=idx.device).scatter_add_(0, key, torch.ones_like(key))
    padded = (counts + block_m - 1) // block_m * block_m
    ends = padded.cumsum(0)
    order = torch.argsort(key, stable=True)
    expert = key[order]
    slot = (ends - padded)[expert] + torch.arange(pairs, device=idx.device) - (counts.cumsum(0) - counts)[expert]
    blocks = cdiv(pairs, block_m) + E + 1
    slot_pair = torch.full((blocks * block_m,), -1, dtype=torch.int32, device=idx.device)
    slot_pair[slot] = order.to(torch.int32)
    starts = torch.arange(blocks, device=idx.device) * block_m
    return slot_pair, torch.searchsorted(ends, starts, right=True).to(torch.int32)


def _sorted_launch(pairs: int, E: int, dtype: torch.dtype) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(BLOCK_M, the gate / up kernel's (BLOCK_N, BLOCK_K, warps, stages), the down kernel's) of the sorted path for
    `pairs` pairs over E experts, x of `dtype` (SORTED_LAUNCHES)."""
    run = pairs // max(E, 1)
    launches = SORTED_LAUNCHES[-1:] if dtype == torch.float32 else SORTED_LAUNCHES
    for block_m, gate_up, down in launches:
        if run >= block_m:
            return block_m, gate_up, down
    block_m, gate_up, down = launches[-1]
    return min(block_m, max(16, triton.next_power_of_2(run))), gate_up, down


def _moe_experts_sorted(x, idx, router, gate_up, down, gate_up_scale, down_scale, gate_up_bias, down_bias, h, out,
                        epilogue, down_format):
    """The sorted path (module docstring): the layout, its two launches (idx, router contiguous [T, k]; h the
    [T k, I] workspace; epilogue and down_format as the grouped path's) and each token's k rows summed in order in
    fp32."""
    T, H = x.shape
    E, I, top_k = gate_up.shape[0], gate_up.shape[1] // 2, idx.shape[1]
    precision = "ieee" if x.dtype == torch.float32 else "tf32"  # fp32 x: its own precision; 16-bit: not used
    block_m, (gu_n, gu_k, gu_warps, gu_stages), (down_n, down_k, down_warps, down_stages) = _sorted_launch(
        T * top_k, E, x.dtype)
    gu_k, down_k = min(gu_k, max(16, triton.next_power_of_2(H))), min(down_k, max(16, triton.next_power_of_2(I)))
    slot_pair, block_expert = _sorted_slots(idx, E, block_m)
    blocks = block_expert.numel()
    launch(_moe_gate_up_sorted_kernel, (blocks, cdiv(I, gu_n)), x, slot_pair, block_expert, gate_up, gate_up_scale,
           gate_up_bias, h, H, I, E, top_k, x.stride(0), gate_up.stride(0), gate_up.stride(1), **epilogue,
           PRECISION=precision, BLOCK_M=block_m, BLOCK_N=gu_n, BLOCK_K=gu_k, EVEN_K=H % gu_k == 0, num_warps=gu_warps,
           num_stages=gu_stages)
    rows = torch.empty((T * top_k, H), device=x.device, dtype=x.dtype)  # each pair's w (D h), pair order
    launch(_moe_down_sorted_kernel, (blocks, cdiv(H, down_n)), h, slot_pair, block_expert, router, down, down_scale,
           down_bias, rows, H, I, E, down.stride(0), down.stride(1), **down_format, PRECISION=precision,
           BLOCK_M=block_m, BLOCK_N=down_n, BLOCK_K=down_k, EVEN_K=I % down_k == 0, num_warps=down_warps,
           num_stages=down_stages)
    launch(_sum_pairs_kernel, (T, cdiv(H, 1024)), rows, out, H, top_k, out.stride(0), BLOCK=1024, num_warps=4)
    return out


@planned
def moe_experts(x: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor, gate_up: torch.Tensor,
                down: torch.Tensor, activation: str = "silu", gate_up_scale: Optional[torch.Tensor] = None,
                down_scale: Optional[torch.Tensor] = None, gate_up_bias: Optional[torch.Tensor] = None,
                down_bias: Optional[torch.Tensor] = None, swiglu_alpha: float = 1.702,
                swiglu_limit: float = 7.0) -> torch.Tensor:
    """sum_j top_k_weights[t, j] * down[e] @ (act(gate[e] @ x[t]) * (up[e] @ x[t])), e = top_k_index[t, j]: an MoE
    layer's experts for its routed tokens (the module docstring). x [T, H]; top_k_index [T, k] int32 / int64 and
    top_k_weights [T, k] float; gate_up [E, 2I, H] (each expert's gate rows, then its up rows), down [E, H, I], both
    x's dtype; activation "silu", "gelu", "gelu_tanh" or "swiglu_oai" (gpt-oss's gate: swiglu_alpha, swiglu_limit);
    optional biases gate_up_bias [E, 2I] and down_bias [E, H]. Indices outside [0, E) contribute nothing. Returns
    [T, H] in x's dtype. Quantized experts: gate_up and down as float8_e4m3fn or int8 codes with gate_up_scale
    [E, 2I] and down_scale [E, H] (fp32, a scale per output row), or int4 words [E, 2I, H / 8] and [E, H, I / 8]
    with group scales [E, 2I, H / group] and [E, H, I / group] (the module docstring; `quantize_experts`). A decode step
    (few tokens): every (token, expert) pair reads its expert's weights, or, where tokens share experts or experts
    are large (the grouped path), each routed expert is read once; a prefill (the sorted path): the pairs sorted by
    expert into a grouped GEMM."""
    _check(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale, gate_up_bias,
           down_bias, swiglu_alpha, swiglu_limit)
    return _moe_experts_op(x, top_k_index, top_k_weights, gate_up, down, activation, gate_up_scale, down_scale,
                           gate_up_bias, down_bias, float(swiglu_alpha), float(swiglu_limit))


def quantize_experts(gate_up: torch.Tensor, down: torch.Tensor, quant: str = "fp8",
                     group_size: int = 128) -> tuple[torch.Tensor, ...]:
    """gate_up [E, 2I, H] and down [E, H, I] as codes, one expert at a time. "fp8" (float8_e4m3fn) and "int8"
    (rounded half away from zero): a scale per output row (quantize_rows_reference's: scale = max |row| / the format's
    largest code; gate_up_scale [E, 2I], down_scale [E, H], fp32). "int4": symmetric, a scale per group_size elements
    of a row (quantize_weight's with symmetric=True: scale = max |group| / 7, codes c = round(w / scale) + 8 in
    [0, 15], eight an int32 word, code i of word j the row's element 8j + i in bits 4i .. 4i + 3; words [E, rows, K /
    8], scales [E, rows, K / group_size] fp32; H and I multiples of group_size). Returns (gate_up codes,
    gate_up_scale, down codes, down_scale), ready for moe_experts."""
    if quant not in EXPERT_QUANTS:
        raise ValueError(f"quant must be one of {', '.join(EXPERT_QUANTS)}, got {quant!r}")
    if quant == "int4" and group_size not in INT4_GROUP_SIZES:
        raise ValueError(f"group_size must be one of {', '.join(map(str, INT4_GROUP_SIZES))}, got {group_size!r}")
    for name, w in (("gate_up", gate_up), ("down", down)):
        check_float(name, w.detach() if isinstance(w, torch.Tensor) else w)
        if w.dim() != 3:
            raise ValueError(f"{name} must be 3-D [experts, out, in], got shape {tuple(w.shape)}")
        if quant == "int4" and w.shape[2] % group_size:
            raise ValueError(f"{name}'s rows ({w.shape[2]} elements) must be a multiple of group_size={group_size} "
                             f"for int4")
    out = []
    for w in (gate_up, down):
        w = w.detach()
        if quant == "int4":
            codes = torch.zeros((*w.shape[:2], w.shape[2] // 8), dtype=INT4_DTYPE, device=w.device)
            scale = torch.ones((*w.shape[:2], w.shape[2] // group_size), dtype=torch.float32, device=w.device)
        else:
            codes = torch.zeros(w.shape, dtype=EXPERT_QUANTS[quant], device=w.device)
            scale = torch.ones(w.shape[:2], dtype=torch.float32, device=w.device)  # rows of no columns: none to scale
        for e in range(w.shape[0] if w.shape[1] and w.shape[2] else 0):
            if quant == "int4":
                packed = quantize_weight(w[e], 4, group_size, symmetric=True, scale_dtype=torch.float32)
                codes[e], scale[e] = packed.packed.t(), packed.scales.t()
            else:
                codes[e], row_scale = quantize_rows_reference(w[e].double(), quant)
                scale[e] = row_scale[:, 0]
        out += [codes, scale]
    return tuple(out)


def moe_experts_eager(x, top_k_index, top_k_weights, gate_up, down, activation="silu", gate_up_scale=None,
                      down_scale=None, gate_up_bias=None, down_bias=None, swiglu_alpha=1.702, swiglu_limit=7.0):
    """What transformers' eager experts loop does: per expert hit, its tokens' F.linear, the activation, F.linear,
    the router weight, index_add_ (a host synchronisation for the experts hit). Quantized experts: each expert hit
    dequantized to x's dtype first."""
    act = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
           "swiglu_oai": None}[activation]

    def weight(w, scale, e):  # codes times scales in fp32, rounded once (an fp16 scale may be subnormal)
        return w[e] if scale is None else dequantize_experts(w[e], scale[e], x.dtype, torch.float32)

    out = torch.zeros_like(x)
    mask = F.one_hot(top_k_index.long(), num_classes=gate_up.shape[0] + 1).permute(2, 1, 0)  # + 1: the sentinel E
    for e in torch.greater(mask[:-1].sum(dim=(-1, -2)), 0).nonzero():
        pos, tokens = torch.where(mask[e[0]])
        bias = [None if b is None else b[e[0]] for b in (gate_up_bias, down_bias)]
        gate, up = F.linear(x[tokens], weight(gate_up, gate_up_scale, e[0]), bias[0]).chunk(2, dim=-1)
        if act is None:  # gpt-oss's clamped gate
            gate, up = gate.clamp(max=swiglu_limit), up.clamp(-swiglu_limit, swiglu_limit)
            h = gate * torch.sigmoid(swiglu_alpha * gate) * (up + 1)
        else:
            h = act(gate) * up
        y = F.linear(h, weight(down, down_scale, e[0]), bias[1]) * top_k_weights[tokens, pos, None]
        out.index_add_(0, tokens, y.to(out.dtype))
    return out


def _grouped_mm_peer():
    """transformers' "grouped_mm" experts (tokens sorted by expert, torch._grouped_mm for both projections), on a
    stand-in module of the default layout; None where this transformers has none."""
    try:
        from transformers.integrations.moe import grouped_mm_experts_forward
    except ImportError:
        return None

    def run(x, top_k_index, top_k_weights, gate_up, down):
        inner = gate_up.shape[1] // 2
        experts = SimpleNamespace(num_experts=gate_up.shape[0], _is_expert_parallel=False, has_gate=True,
                                  has_bias=False, is_transposed=False, has_post_expert_norm=False,
                                  gate_up_proj=gate_up, down_proj=down,
                                  _apply_gate=lambda p: F.silu(p[..., :inner]) * p[..., inner:])
        return grouped_mm_experts_forward(experts, x, top_k_index, top_k_weights)
    return run


def _make_inputs(shape, dtype, device):
    """Tokens routed round-robin (token t's j-th expert: (t k + j) mod E, weights from a softmax): while T k <= E every
    pair has its own expert, as a decode step's tokens mostly do."""
    T, E, k, H, I = shape
    x = torch.randn(T, H, device=device, dtype=dtype)
    idx = (torch.arange(T * k, device=device) % E).reshape(T, k)
    weights = torch.softmax(torch.randn(T, k, device=device), dim=-1)
    gate_up = torch.randn(E, 2 * I, H, device=device, dtype=dtype) * H**-0.5
    down = torch.randn(E, H, I, device=device, dtype=dtype) * I**-0.5
    return x, idx, weights, gate_up, down


def _cost(shape, dtype, quant: Optional[str] = None) -> Cost:
    """Each expert routed to read once (3 H I elements: x's dtype; fp8 / int8 one byte each and 2I + H fp32 row
    scales; int4 half a byte and an fp32 scale a group of 128; min(T k, E) of them, as _make_inputs routes), x and out
    once; the h round trip between the kernels (2 T k I elements) is not the floor's."""
    T, E, k, H, I = shape
    pairs, experts = T * k, min(T * k, E)
    expert_bytes = {None: 3 * H * I * dtype.itemsize, "int4": 3 * H * I // 2 + 4 * 3 * H * I // 128}.get(
        quant, 3 * H * I + 4 * (2 * I + H))
    return Cost(flops=6 * pairs * H * I, bytes=experts * expert_bytes + 2 * T * H * dtype.itemsize + 12 * pairs)


def _make_quantized_inputs(shape, dtype, device, quant):
    """_make_inputs' with the experts quantized (quantize_experts): x, idx, weights, gate_up, down, their scales."""
    x, idx, weights, gate_up, down = _make_inputs(shape, dtype, device)
    gate_up, gate_up_scale, down, down_scale = quantize_experts(gate_up, down, quant)
    return x, idx, weights, gate_up, down, gate_up_scale, down_scale


def _moe_experts_quantized(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    return moe_experts(x, idx, weights, gate_up, down, gate_up_scale=gate_up_scale, down_scale=down_scale)


def _moe_experts_quantized_reference(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    return moe_experts_reference(x, idx, weights, gate_up, down, "silu", gate_up_scale, down_scale)


def _moe_experts_quantized_eager(x, idx, weights, gate_up, down, gate_up_scale, down_scale):
    """Without a kernel for the codes: the eager loop, each expert hit dequantized to x's dtype."""
    return moe_experts_eager(x, idx, weights, gate_up, down, gate_up_scale=gate_up_scale, down_scale=down_scale)


# Mixtral-8x7B (E 8, k 2, H 4096, I 14336) and Qwen3-30B-A3B (E 128, k 8, H 2048, I 768) at decode batch sizes
BENCH_CASES = tuple((T, E, k, H, I) for E, k, H, I in ((8, 2, 4096, 14336), (128, 8, 2048, 768))
                    for T in (1, 2, 4, 8, 16) if T * k <= 2 * E)

registry.register(registry.OpSpec(
    name="moe_experts", family="moe", make_inputs=_make_inputs, run=moe_experts, reference=moe_experts_reference,
    eager=moe_experts_eager, cost=_cost, cases=BENCH_CASES, peers={"grouped_mm": _grouped_mm_peer}, x_key="M",
    check_cases=((1, 4, 2, 64, 48), (3, 4, 2, 96, 40))))
# prefills of the same experts (the sorted path), against transformers' grouped_mm
PREFILL_CASES = tuple((T, E, k, H, I) for E, k, H, I in ((8, 2, 4096, 14336), (128, 8, 2048, 768))
                      for T in (512, 2048, 4096))
registry.register(registry.OpSpec(
    name="moe_experts_prefill", family="moe_prefill", make_inputs=_make_inputs, run=moe_experts,
    reference=moe_experts_reference, eager=moe_experts_eager, cost=_cost, cases=PREFILL_CASES,
    peers={"grouped_mm": _grouped_mm_peer}, x_key="M", check_cases=((40, 4, 2, 64, 48),)))
for _quant in EXPERT_QUANTS:  # moe_experts_fp8, moe_experts_int8, moe_experts_int4 (groups of 128)
    registry.register(registry.OpSpec(
        name=f"moe_experts_{_quant}", family="moe",
        make_inputs=functools.partial(_make_quantized_inputs, quant=_quant), run=_moe_experts_quantized,
        reference=_moe_experts_quantized_reference, eager=_moe_experts_quantized_eager,
        cost=functools.partial(_cost, quant=_quant), cases=BENCH_CASES, x_key="M",
        check_cases=((1, 4, 2, 128, 256), (3, 4, 2, 384, 128)) if _quant == "int4"  # whole groups of 128
        else ((1, 4, 2, 64, 48), (3, 4, 2, 96, 40))))
