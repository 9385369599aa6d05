r"""Experiment: moe_experts' two paths, a program per (token, expert) pair and the grouped one (each routed expert read
once a step, however many of the step's tokens share it; ops/moe.py's docstring), side by side with transformers'
grouped_mm experts, at Mixtral-8x7B's and Qwen3-30B-A3B's experts, round-robin and random routing, the grouped path
at several launches; errors checked after the replays too (the arrival counters).

Session 61 (journal 424): 8 tokens of Mixtral (16 pairs on 8 experts) reached 66% of the once-an-expert floor on the
H200 a pair a program. Session 62 on an H100 (journal 434), the grouped kernels then in this file: 8-16 tokens of
Mixtral 100% against 51-82% a pair, one token 1.10x; Qwen3's 2-8 tokens 2-15% slower where they share no expert, 16
tokens with random routing 1.16x: they went into ops/moe.py with launch (32, 128, 4) and the dispatch `_takes_grouped`.
Open (journal 437): 1-16 tokens on the H200; gpt-oss-20b's experts (unbiased here); --tokens past 16 (session 64: past
the grouped path's calls the sorted path takes them, exp_moe_prefill.py); --quant fp8|int8 (codes on the grouped path:
at 1-2 tokens of Mixtral fp8 5-7% behind a pair a program with bf16's launch, whose k-tiles read half the bytes; wider
ones are the candidates).
Also each path with and without PDL between its kernels (session 62: launched so where ROW_PDL, not yet timed).
--quant int4 (session 66): words with group scales of 128 (gpt-oss's 2880: 64; session 65 took int4 off the grouped
path, session 66 gave it back from three pairs an expert, session 67 from two with bf16 x: mma.sync from registers).
--quick: round-robin routing, a pair a program against the shipped grouped launch only. --no-l2-256b (int4, session
69): both paths also without the mma loops' L2 prefetch-size hint (moe.INT4_L2_256B).
Usage: PYTHONPATH=src python benchmarks/exp_moe_grouped.py OUT [--tokens 1,2,4,8,16] [--quant fp8|int8|int4] [--quick]
[--no-l2-256b]
"""
import argparse
import json
from pathlib import Path

import torch

from rooftop.bench.timing import graph_replay_us
from rooftop.hardware import measure_ceilings
from rooftop.ops import moe
from rooftop.ops import _support
from rooftop.ops._support import clear_plans

# (BLOCK_N, BLOCK_K, warps) of both grouped kernels, the down one at GROUPED_DOWN_PER_SM programs an SM; for one-byte
# codes k-tiles up to twice as wide
LAUNCHES = ((16, 128, 4), (16, 256, 4), (32, 128, 4), (16, 64, 2))
QUANT_LAUNCHES = ((32, 128, 4), (32, 256, 4), (16, 256, 4), (16, 128, 2))
# int4 (bf16 x: mma.sync from registers, INT4_GROUPED_LAUNCH): (BLOCK_N, 128, warps, register cap); offline sm_90
# (session 67) ~212 registers uncapped (two 4-warp programs an SM), 168 at a cap of 168 without spills, spills at 128
INT4_LAUNCHES = ((64, 128, 4, None), (64, 128, 4, 168), (32, 128, 2, None), (32, 128, 2, 168), (128, 128, 8, 168))
SHIPPED, INT4_SHIPPED = moe.GROUPED_LAUNCH, moe.INT4_GROUPED_LAUNCH  # before path() sets others
# (E, k, H, I): Mixtral-8x7B's experts (H I = 58.7M), Qwen3-30B-A3B's (1.6M), gpt-oss-20b's (8.3M, just under
# GROUPED_MIN_EXPERT = 8.4M: where between the first two should the bound lie?)
MODELS = ((8, 2, 4096, 14336), (128, 8, 2048, 768), (32, 4, 2880, 2880))


def path(grouped, launch=None, pdl=True, hint=True):
    """moe_experts forced onto one path (the grouped one with `launch`), its kernels launched as programmatic
    dependents or not (_support.ROW_PDL; a plan keeps its first call's choice: clear_plans between providers), int4's
    mma loads with the L2 prefetch-size hint or not (moe.INT4_L2_256B)."""
    def run(*args):
        moe._path = lambda *a: "grouped" if grouped else "per-pair"
        _support.ROW_PDL = pdl
        moe.INT4_L2_256B = hint
        if launch and len(launch) == 4:
            moe.INT4_GROUPED_LAUNCH = launch
        elif launch:
            moe.GROUPED_LAUNCH = launch
        return moe.moe_experts(*args)
    return run


def random_routing(T, E, k, device, generator=None):
    """Each token's k distinct experts drawn at random (as a router's top-k are), softmax weights."""
    index = torch.rand(T, E, device=device, generator=generator).argsort(-1)[:, :k].contiguous()
    return index, torch.softmax(torch.randn(T, k, device=device, generator=generator), -1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--tokens", type=lambda v: [int(t) for t in v.split(",")], default=[1, 2, 4, 8, 16],
                        help="tokens a step (those over PAIRS_MAX pairs left out)")
    parser.add_argument("--quant", choices=list(moe.EXPERT_QUANTS), help="the experts as codes")
    parser.add_argument("--quick", action="store_true", help="round-robin; a pair a program and the shipped launch")
    parser.add_argument("--no-l2-256b", action="store_true",
                        help="int4: both paths without the L2 prefetch-size hint too (moe.INT4_L2_256B)")
    args = parser.parse_args()
    copy_gbps = measure_ceilings().copy_GBps
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    grouped_mm = None if args.quant else moe._grouped_mm_peer()
    launches = INT4_LAUNCHES if args.quant == "int4" else QUANT_LAUNCHES if args.quant else LAUNCHES
    rows = []
    for E, k, H, I in MODELS:
        for T in (t for t in args.tokens if t * k <= moe.PAIRS_MAX):
            for routing in ("round-robin",) if args.quick else ("round-robin", "random"):
                g = torch.Generator("cuda").manual_seed(T)
                gate_up = torch.randn(E, 2 * I, H, device="cuda", dtype=torch.bfloat16) * H ** -0.5
                down = torch.randn(E, H, I, device="cuda", dtype=torch.bfloat16) * I ** -0.5
                experts = (gate_up, down)
                if args.quant:  # codes; the scales ride along as moe_experts' positional arguments
                    group = 128 if H % 128 == I % 128 == 0 else 64  # int4's; the others' row scales ignore it
                    gate_up, gate_up_scale, down, down_scale = moe.quantize_experts(gate_up, down, args.quant, group)
                    experts = (gate_up, down, "silu", gate_up_scale, down_scale)
                experts_bytes = (gate_up[0].numel() + down[0].numel()) * gate_up.element_size()  # int4: 8 a word
                if args.quant:  # and the scales (moe._cost's floor)
                    experts_bytes += (gate_up_scale[0].numel() + down_scale[0].numel()) * gate_up_scale.element_size()
                x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
                if routing == "random":
                    index, weights = random_routing(T, E, k, "cuda", g)
                else:
                    index = (torch.arange(T * k, device="cuda") % E).reshape(T, k)
                    weights = torch.softmax(torch.randn(T, k, device="cuda"), -1)
                distinct = int(index.unique().numel())
                floor_bytes = distinct * experts_bytes
                copies = max(1, -(-2 * l2 // floor_bytes))
                sets = [(x, index, weights, experts[0].clone(), experts[1].clone(), *experts[2:])
                        for _ in range(copies)]
                ref = moe.moe_experts_reference(*sets[0]).float()
                providers = [("a pair a program", path(False)), ("a pair, no PDL", path(False, pdl=False)),
                             ("grouped_mm", grouped_mm)] + [
                    ("grouped n{}k{}w{}".format(*launch) + (f" r{launch[3]}" if launch[3:] and launch[3] else ""),
                     path(True, launch)) for launch in launches]
                shipped = INT4_SHIPPED if args.quant == "int4" else SHIPPED
                providers.append(("grouped, no PDL", path(True, shipped, pdl=False)))
                if args.quick:
                    providers = [("a pair a program", path(False)), ("grouped shipped", path(True, shipped))]
                if args.quant == "int4" and args.no_l2_256b:
                    providers += [("a pair, no L2 hint", path(False, hint=False)),
                                  ("grouped, no L2 hint", path(True, shipped, hint=False))]
                for name, fn in (p for p in providers if p[1] is not None):
                    clear_plans()
                    out = fn(*sets[0])
                    err = float((out.float() - ref).norm() / ref.norm())
                    us = graph_replay_us([lambda s=s: fn(*s) for s in sets], repeat=20)
                    again = fn(*sets[0])  # after replays: the arrival counters left as they must be
                    err = max(err, float((again.float() - ref).norm() / ref.norm()))
                    pct = floor_bytes / us / 1e3 / copy_gbps * 100
                    rows.append(dict(E=E, k=k, H=H, I=I, T=T, routing=routing, distinct=distinct, provider=name,
                                     quant=args.quant, us=us, pct_of_floor=pct, rel_err=err))
                    print(f"E {E:3d} k {k} T {T:2d} {routing:11s} ({distinct:3d} experts) {name:18s} {us:8.1f} us "
                          f"{pct:5.1f}% of floor  err {err:.1e}", flush=True)
                Path(args.out).mkdir(parents=True, exist_ok=True)
                name = f"exp-moe-grouped{'-' + args.quant if args.quant else ''}.json"
                Path(args.out, name).write_text(json.dumps(rows, indent=1))
                del sets


if __name__ == "__main__":
    main()
