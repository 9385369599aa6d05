"""gpt-oss's sliding-window attention (64 query heads over 8 k/v heads, D 64, 128 keys a query, sinks) by launch
configuration: every candidate the tuner times for it (attention_configs with pack = 4: tiles of one head's queries,
tiles of 2 or 4 heads' rows, and single-loop forms), each forced in turn, timed on the GPU alone (bench_ms: median,
L2 flushed).

A 128-query tile of one head spans ~255 keys with both edges masked (50% of the scores it computes are seen);
32 queries of 4 heads in the same 128 rows span ~160 (80%) and read each k/v tile once for the 4 heads.
Each forced output is checked against the float64 reference on the first 256 positions of each shape.

With --mask-ptx-ab, each candidate also with the masked tiles' select in tl.where form (attention.MASK_PTX_ENABLED
off: a compare more and a select more a score), rows marked "where".

Writes OUT_DIR/exp-attention-window.json; prints per shape the best one-head, packed and single-loop configuration.
With --configs, the configurations given instead (a JSON list of AttentionConfig fields), e.g. packed tiles in one
loop, which the tuner is not offered.
Usage: PYTHONPATH=src python benchmarks/exp_attention_window.py OUT_DIR [--seqs 512,4096,16384] [--occupancy]
       [--mask-ptx-ab] [--configs '[{"block_m": 64, "block_n": 32, "num_warps": 4, "num_stages": 2, ...}]']
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

import rooftop.ops.attention as attention_mod
from rooftop.bench.timing import bench_ms
from rooftop.ops._support import Plans
from rooftop.ops.attention import attention, attention_cost, attention_reference

HEADS, KV_HEADS, D, TOKENS, WINDOW = 64, 8, 64, 16384, 127


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seqs", default="512,4096,16384")
    parser.add_argument("--occupancy", action="store_true",
                        help="also the 64 x 64 tiles (one head or packed in three loops, one head in one) with 2 "
                             "stages and registers capped at 96 or 80 (more programs an SM: 3 stages and ~110-124 "
                             "registers hold them at 4)")
    parser.add_argument("--mask-ptx-ab", action="store_true",
                        help="each candidate also with MASK_PTX_ENABLED off (the mask's tl.where form)")
    parser.add_argument("--configs", help="a JSON list of AttentionConfig fields: these instead of the tuner's")
    args = parser.parse_args()
    configs = attention_mod.attention_configs(D, torch.bfloat16, 0, "masked", pack=4, single_loop=True)
    if args.configs:
        configs = tuple(attention_mod.AttentionConfig(**c) for c in json.loads(args.configs))
    if args.occupancy:
        configs = tuple(dict.fromkeys(configs + tuple(
            replace(c, num_stages=stages, maxnreg=regs) for c in configs if (c.block_m, c.block_n, c.num_warps) ==
            (64, 64, 4) for stages, regs in ((2, None), (2, 96), (3, 96), (2, 80)))))
    tuned_configs, tuned_mask_ptx = attention_mod.attention_configs, attention_mod.MASK_PTX_ENABLED
    rows = []
    for S in map(int, args.seqs.split(",")):
        B = TOKENS // S
        q = torch.randn(B, HEADS, S, D, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(B, KV_HEADS, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        sinks = torch.randn(HEADS, device="cuda") * 2
        cost = attention_cost((B, HEADS, S, D), torch.bfloat16, True, WINDOW, KV_HEADS)
        ref = attention_reference(q[:1, :, :256], k[:1, :, :256], v[:1, :, :256], True, window=WINDOW, sinks=sinks)
        for config, mask_ptx in ((c, m) for c in configs for m in ((True, False) if args.mask_ptx_ab else (True,))):
            attention_mod.attention_configs = lambda *a, c=config, **kw: (c,)
            attention_mod.MASK_PTX_ENABLED = mask_ptx
            attention_mod._plans = Plans()
            row = dict(S=S, B=B, heads=config.heads, single_loop=config.single_loop, mask_ptx=mask_ptx,
                       config=f"{config.block_m}x{config.block_n} w{config.num_warps} s{config.num_stages} "
                       f"r{config.maxnreg} heads {config.heads}{' single' if config.single_loop else ''}"
                       f"{'' if mask_ptx else ' where'}")
            try:
                small = attention(q[:1, :, :256], k[:1, :, :256], v[:1, :, :256], True, window=WINDOW, sinks=sinks)
                row["rel_err"] = float((small.double() - ref).norm() / ref.norm())
                row["us"] = 1e3 * bench_ms(lambda: attention(q, k, v, True, window=WINDOW, sinks=sinks))
                row["GBps"] = cost.bytes / row["us"] / 1e3
            except Exception as err:  # a config that does not fit: recorded, the sweep goes on
                row["error"] = f"{type(err).__name__}: {err}"[:200]
            rows.append(row)
            print(row, flush=True)
        attention_mod.attention_configs = tuned_configs
        attention_mod.MASK_PTX_ENABLED = tuned_mask_ptx
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-attention-window.json").write_text(json.dumps(
        dict(device=torch.cuda.get_device_name(), rows=rows), indent=1))
    groups = {"one head": lambda r: r["heads"] == 1 and not r["single_loop"],
              "packed": lambda r: r["heads"] > 1 and not r["single_loop"], "single loop": lambda r: r["single_loop"]}
    if args.mask_ptx_ab:
        groups = {f"{name}{label}": lambda r, g=group, m=mask: g(r) and r["mask_ptx"] == m
                  for name, group in groups.items() for label, mask in (("", True), (" where", False))}
    print(f"{'S':>6} " + " ".join(f"{'best ' + name:35s} {'us':>7}" for name in groups) + "  x one head")
    for S in sorted({r["S"] for r in rows}):
        timed = [r for r in rows if r["S"] == S and "us" in r and r["rel_err"] < 2e-2]
        best = [min(filter(group, timed), key=lambda r: r["us"], default=dict(config="none", us=float("nan")))
                for group in groups.values()]
        print(f"{S:6d} " + " ".join(f"{r['config']:35s} {r['us']:7.1f}" for r in best) +
              "  " + " / ".join(f"{best[0]['us'] / r['us']:.2f}" for r in best[1:]))


if __name__ == "__main__":
    main()
