r"""Experiment: rooftop.moe_experts' launch shapes at decode sizes, beside transformers' experts loops.

moe_experts (ops/moe.py, session 60, not yet timed on a GPU) runs two CUDA-core GEMV kernels: gate / up with the
activation (a program a pair and BLOCK_N columns of I) and down with the router's weighted sum (a program a token and
BLOCK_N columns of H, I split over programs to fill the GPU). Offline sm_90 at (BLOCK_N, BLOCK_K, warps) = (16, 256,
4): 126 / 94 registers, no spills, 16-byte loads. Each (BLOCK_N, BLOCK_K, warps) below is set for both kernels
(GATE_UP_LAUNCH, DOWN_LAUNCH with 1 or 4 programs an SM) and timed by graph replay over input copies larger than
L2 at Mixtral-8x7B's (E 8, k 2, H 4096, I 14336) and Qwen3-30B-A3B's (E 128, k 8, H 2048, I 768) experts, 1 and 4
tokens; beside them transformers' grouped_mm experts (graph replay) and its eager loop (do_bench: it synchronises
the host). Prediction: 80-90% of the copy rate at Mixtral's shape, 60-75% at Qwen3's (768-wide rows: short k
loops); the split down kernel (4 an SM) ahead of 1 at one token; several x the loops. (Session 61's "pairs inside"
down kernel, the token's pairs inside the k loop, won nowhere: removed in session 62.)
--quant fp8|int8 (session 61): launches for the quantized experts (k-tiles of 256-1024 one-byte codes a row; session
62 on an H100: the bf16 experts' launch within 4% of the best, so one launch serves both) beside the eager loop (each
expert hit dequantized), no other peer. --quant int4 (session 65): k-tiles of 256-1024 codes a row (half a byte each:
the shipped 256 moves a quarter of bf16's bytes a k-step; set as INT4_GATE_UP_LAUNCH / INT4_DOWN_LAUNCH), group scales
of 128; since session 66 a thread sums 32 codes a chunk before their scale (offline sm_90: 72 registers at 8 x 256 on
2 warps, 126 with two chunks or two rows a thread).
--launches (gate / up's "NxKxW", or "NxKxW/NxKxW" with down's after the slash) and --per-sm (down's programs an SM)
replace the lists; --stages (session 68: moe.PER_PAIR_STAGES, gate / up's and down's k loops software-pipelined,
"G/D" tl.range stages; the format's entry) times each launch at each (session 69 took out "1/1a": x and the weights a
k-tile ahead in registers, lost). --mma (int4, session 69: moe.INT4_PAIR_MMA_LAUNCH, the per-pair kernels' sums by
mma.sync from registers for bf16 x, "GxDxPxAxW": gate / up's warps, down's, down's warps an SM (since session 71 its
ranges' budget), and since session 70 gate / up's warps an SM aimed at by sharing a row tile's k-steps among up to 4
warps, down's warps a tile at most over the token's pairs) times those launches after the CUDA-core ones (the launches
run with INT4_PAIR_MMA_LAUNCH None but with --quick), --l2-256b 0,1 each without and with moe.INT4_L2_256B (their word
loads' L2 prefetch-size hint), --down-rules shipped,first each with the shipped down launch rule and with session 70's
(pair_warps_first_down), --pair-budgets each with moe.INT4_DOWN_PAIR_BUDGET (the down kernel's pair warps' budget, warps
an SM) at these, --down-early 0,1 each without and with moe.INT4_DOWN_EARLY (session 72: the down kernel's first
weights loaded before its PDL wait), --down-ahead 1,2/80 each with moe.INT4_DOWN_AHEAD at these (session 73: k-steps
of weights ahead in the down kernel's loop, "/cap" ptxas's register cap, "/fewest" k-steps a range taking them);
--cases replaces the cases.
Writes OUT/exp-moe-launch[-QUANT].json.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_moe_launch.py OUT [--quick] [--quant fp8|int8|int4]
[--launches 8x256x2,8x512x2/8x256x2] [--per-sm 4,16] [--stages 1/1,3/3] [--mma 1x1x32x16x8,2x1x16x1x1]
"""
import argparse
import json
import math
from pathlib import Path

import torch

from rooftop import registry
from rooftop.bench.timing import bench_ms, graph_replay_us
from rooftop.hardware import measure_ceilings
from rooftop.ops import moe
from rooftop.ops._support import cdiv, clear_plans, num_sms

LAUNCHES = ((16, 256, 4), (32, 128, 4), (8, 512, 2), (16, 512, 4), (32, 256, 8), (8, 256, 2), (16, 128, 2))
QUANT_LAUNCHES = ((8, 512, 4), (8, 512, 2), (16, 512, 4), (8, 256, 2), (8, 1024, 4), (16, 256, 4))
INT4_LAUNCHES = ((8, 256, 2), (8, 512, 2), (16, 256, 2), (16, 512, 4), (8, 1024, 8), (8, 1024, 4), (32, 256, 4))
PER_SM = (1, 4)  # the down kernel's programs an SM: I split to make them (1: few splits, or none)
CASES = ((1, 8, 2, 4096, 14336), (4, 8, 2, 4096, 14336), (1, 128, 8, 2048, 768), (4, 128, 8, 2048, 768))


def _down_ahead(item):
    """--down-ahead's "steps[/cap[/fewest]]" as moe.INT4_DOWN_AHEAD (no cap, every range where not given)."""
    steps, cap, fewest = (item.split("/") + [None, None])[:3]
    return int(steps), int(cap) if cap else None, int(fewest) if fewest else 0


def pair_warps_first_down(T, top_k, H, I, device):
    """--down-rules first (session 70's shipped rule, replaced in session 71): moe._pair_mma_down's (PAIR_WARPS,
    ranges, elements a range) with the pair warps first, the largest power of two dividing k and the fifth entry whose
    warps fit the budget (else 1), then as many ranges as the budget's rest holds."""
    _, warps, per_sm, _, most_pair_warps = moe.INT4_PAIR_MMA_LAUNCH
    budget = per_sm * num_sms(device.index)
    tile_warps = T * cdiv(H, 16 * warps) * warps
    pair_warps = math.gcd(top_k, most_pair_warps)
    pair_warps &= -pair_warps
    while pair_warps > 1 and tile_warps * pair_warps > budget:
        pair_warps //= 2
    steps = cdiv(I, 128)
    k_split = cdiv(steps, max(1, min(budget // (tile_warps * pair_warps), steps, moe.DOWN_MAX_SPLITS))) * 128
    return pair_warps, cdiv(I, k_split), k_split


def make_inputs(spec, shape, quant):
    """The registry's inputs of `shape`; int4 experts whose rows are no multiple of 128 (gpt-oss-20b's 2880) in groups
    of 64 (exp_moe_grouped.py's; "% of copy" counts the registry's groups of 128: ~6% low there)."""
    H, I = shape[3:]
    if quant != "int4" or H % 128 == I % 128 == 0:
        return spec.make_inputs(shape, torch.bfloat16, "cuda")
    x, idx, weights, gate_up, down = moe._make_inputs(shape, torch.bfloat16, "cuda")
    gate_up, gate_up_scale, down, down_scale = moe.quantize_experts(gate_up, down, "int4", 64)
    return x, idx, weights, gate_up, down, gate_up_scale, down_scale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true", help="the shipped launch, one token of each model")
    parser.add_argument("--quant", choices=list(moe.EXPERT_QUANTS), help="the quantized experts' launches")
    parser.add_argument("--launches", help="these launches only",
                        type=lambda v: [tuple(tuple(map(int, half.split("x"))) for half in item.split("/"))
                                        for item in v.split(",")])
    parser.add_argument("--per-sm", type=lambda v: tuple(map(int, v.split(","))), help="these down programs an SM")
    parser.add_argument("--stages", type=lambda v: [tuple(map(int, item.split("/"))) for item in v.split(",")],
                        help="the per-pair kernels' pipelines, gate / up's stages / down's: 1/1,3/3")
    parser.add_argument("--cases", type=lambda v: [tuple(map(int, item.split("x"))) for item in v.split(",")],
                        help="these (tokens x E x k x H x I) only")
    parser.add_argument("--l2-256b", type=lambda v: [bool(int(item)) for item in v.split(",")],
                        help="int4: each --mma launch with moe.INT4_L2_256B at these (0,1: without and with the hint)")
    parser.add_argument("--down-rules", type=lambda v: v.split(","), default=["shipped"],
                        help="int4 --mma: the down launch by these rules: shipped (moe._pair_mma_down), first "
                             "(pair_warps_first_down)")
    parser.add_argument("--pair-budgets", type=lambda v: [int(item) for item in v.split(",")],
                        help="int4 --mma: each launch with moe.INT4_DOWN_PAIR_BUDGET at these (warps an SM)")
    parser.add_argument("--down-early", type=lambda v: [bool(int(item)) for item in v.split(",")],
                        help="int4 --mma: each launch with moe.INT4_DOWN_EARLY at these (0,1: without and with)")
    parser.add_argument("--down-ahead", type=lambda v: [_down_ahead(item) for item in v.split(",")],
                        help="int4 --mma: each launch with moe.INT4_DOWN_AHEAD at these (steps[/register cap[/fewest "
                             "k-steps a range]]: no cap, every range where not given)")
    parser.add_argument("--mma", type=lambda v: [tuple(map(int, item.split("x"))) for item in v.split(",")],
                        help="int4: these INT4_PAIR_MMA_LAUNCH too, gate / up's warps x down's x down's warps an SM "
                             "x gate / up's warps an SM aimed at (K_WARPS) x down's warps a tile over the pairs")
    args = parser.parse_args()
    if args.mma and args.quant != "int4":
        parser.error("--mma: int4 experts only")
    if set(args.down_rules) - {"shipped", "first"}:
        parser.error("--down-rules: shipped, first")
    shipped_mma, shipped_hint, shipped_down = moe.INT4_PAIR_MMA_LAUNCH, moe.INT4_L2_256B, moe._pair_mma_down
    hints = args.l2_256b or [shipped_hint]
    shipped_pair_budget = moe.INT4_DOWN_PAIR_BUDGET
    pair_budgets = args.pair_budgets or [shipped_pair_budget]
    shipped_early = moe.INT4_DOWN_EARLY
    earlies = args.down_early or [shipped_early]
    shipped_ahead = moe.INT4_DOWN_AHEAD
    aheads = args.down_ahead or [shipped_ahead]
    moe.INT4_PAIR_MMA_LAUNCH = shipped_mma if args.quick else None  # the launches below: CUDA-core kernels
    shipped_min_warps = moe.INT4_PAIR_MMA_MIN_WARPS
    names = ("INT4_GATE_UP_LAUNCH", "INT4_DOWN_LAUNCH") if args.quant == "int4" else ("GATE_UP_LAUNCH", "DOWN_LAUNCH")
    fmt = {"int4": "int4", None: "float"}.get(args.quant, "codes")  # moe.PER_PAIR_STAGES' key
    shipped_stages = dict(moe.PER_PAIR_STAGES)
    stage_pairs = args.stages or [shipped_stages[fmt]]
    shipped = tuple(getattr(moe, name) for name in names)
    launches, per_sms, cases = (([(shipped[0], shipped[1][:3])], (shipped[1][3],), CASES[::2]) if args.quick
                                else ({None: LAUNCHES, "int4": INT4_LAUNCHES}.get(args.quant, QUANT_LAUNCHES),
                                      PER_SM, CASES))
    launches = [(launch, launch) if isinstance(launch[0], int) else (launch[0], launch[-1])
                for launch in args.launches or launches]  # (gate / up's, down's)
    per_sms, cases = args.per_sm or per_sms, args.cases or cases
    spec = registry.get(f"moe_experts_{args.quant}" if args.quant else "moe_experts")
    copy_gbps = measure_ceilings().copy_GBps
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    grouped = spec.peers.get("grouped_mm", lambda: None)()  # the quantized experts have none
    rows = []
    for shape in cases:
        cost = spec.cost(shape, torch.bfloat16)
        copies = max(1, -(-2 * l2 // cost.bytes))
        sets = [make_inputs(spec, shape, args.quant) for _ in range(copies)]
        ref = spec.reference(*sets[0])

        def record(provider, us, out):
            err = float((out.double() - ref).norm() / ref.norm())
            pct = cost.bytes / us / 1e3 / copy_gbps * 100
            rows.append(dict(shape=shape, provider=provider, us=us, pct_of_copy=pct, rel_err=err))
            print(f"{'x'.join(map(str, shape)):22s} {provider:22s} {us:8.1f} us {pct:5.1f}% of copy  err {err:.1e}",
                  flush=True)

        for gate_up, down in launches:
            for per_sm in per_sms:
                for stages in stage_pairs:
                    setattr(moe, names[0], gate_up)
                    setattr(moe, names[1], (*down, per_sm))
                    moe.PER_PAIR_STAGES = {**shipped_stages, fmt: stages}
                    clear_plans()
                    out = spec.run(*sets[0])
                    record(("rooftop shipped dispatch " if args.quick else "rooftop ") + "n{}k{}w{}".format(*gate_up)
                           + ("" if down == gate_up else "/n{}k{}w{}".format(*down)) + f"p{per_sm}"
                           + ("" if args.stages is None else "s{}/{}".format(*stages)),
                           graph_replay_us([lambda s=s: spec.run(*s) for s in sets], repeat=20), out)
        for mma, hint, rule, pair_budget, early, ahead in (
                (mma, hint, rule, pair_budget, early, ahead) for mma in args.mma or () for hint in hints
                for rule in args.down_rules for pair_budget in pair_budgets for early in earlies for ahead in aheads):
            moe.INT4_PAIR_MMA_LAUNCH, moe.INT4_L2_256B, moe.INT4_DOWN_PAIR_BUDGET = mma, hint, pair_budget
            moe.INT4_DOWN_EARLY, moe.INT4_DOWN_AHEAD = early, ahead
            moe.INT4_PAIR_MMA_MIN_WARPS = 0  # at every case
            moe._pair_mma_down = pair_warps_first_down if rule == "first" else shipped_down
            clear_plans()
            out = spec.run(*sets[0])
            device = sets[0][0].device
            k_warps = moe._pair_mma_split(shape[0] * shape[2], *shape[3:], device)[0]
            pair_warps, ranges, _ = moe._pair_mma_down(shape[0], *shape[2:], device)
            record("rooftop mma g{}d{}p{}a{}w{}".format(*mma) + f" k{k_warps} pw{pair_warps} r{ranges}"
                   + ("" if args.l2_256b is None else f" L2 {int(hint)}") + ("" if rule == "shipped" else f" {rule}")
                   + ("" if args.pair_budgets is None else f" pb{pair_budget}")
                   + ("" if args.down_early is None else f" e{int(early)}")
                   + ("" if args.down_ahead is None else " a{}/{}/{}".format(*ahead)),
                   graph_replay_us([lambda s=s: spec.run(*s) for s in sets], repeat=20), out)
        moe._pair_mma_down = shipped_down
        moe.INT4_PAIR_MMA_MIN_WARPS = shipped_min_warps
        moe.INT4_PAIR_MMA_LAUNCH, moe.INT4_L2_256B = shipped_mma if args.quick else None, shipped_hint
        moe.INT4_DOWN_PAIR_BUDGET, moe.INT4_DOWN_EARLY = shipped_pair_budget, shipped_early
        moe.INT4_DOWN_AHEAD = shipped_ahead
        if args.quant:
            record("eager loop", bench_ms(lambda: spec.eager(*sets[0])) * 1e3, spec.eager(*sets[0]))
            Path(args.out).mkdir(parents=True, exist_ok=True)
            Path(args.out, f"exp-moe-launch-{args.quant}.json").write_text(json.dumps(rows, indent=1))
            continue
        if grouped is not None:
            record("grouped_mm", graph_replay_us([lambda s=s: grouped(*s) for s in sets], repeat=20), grouped(*sets[0]))
        record("eager loop", bench_ms(lambda: spec.eager(*sets[0])) * 1e3, spec.eager(*sets[0]))
        Path(args.out).mkdir(parents=True, exist_ok=True)  # after each case: a timeout keeps what ran
        Path(args.out, "exp-moe-launch.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
