"""decode_attention's split count against a sequence's length, at the lengths a decode step over a static cache
sees (most of the cache empty): graph-replayed microseconds a call for num_splits in SPLITS and the default (chosen
from the capacity), B sequences of L keys each in a cache of CAPACITY, Llama-3-8B's heads (32 over 8, D = 128),
bf16. With an explicit split count k a split holds ceil(L / k) keys rounded up to whole 128-key tiles, so the
table says how many keys a split should hold at least before the splits (and the merge) pay. Then, at B = 1, the
default split count under each MERGE_ELEMENTS (partials the merging split loads at once), also over a full cache of
LONG keys.
Writes OUT_DIR/probe-decode-splits.json and prints the tables (us; the best starred).
Usage: PYTHONPATH=src python benchmarks/probe_decode_splits.py OUT_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import rooftop
import rooftop.ops.decode_attention as decode_mod
from rooftop.bench.timing import graph_replay_us
from rooftop.ops._support import clear_plans

CAPACITY = 4096
LENGTHS = (64, 128, 256, 384, 512, 1024, 2048, 4096)
BATCHES = (1, 8, 32)
SPLITS = (1, 2, 3, 4, 8, 16, 32)
MERGE_ELEMENTS = (2048, 4096, 8192, 16384)
LONG = 65536


def starred(times: dict) -> str:
    best = min(times, key=times.get)
    return " ".join(f"{s}:{t:6.2f}{'*' if s == best else ' '}" for s, t in times.items())


def main() -> None:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for B in BATCHES:
        q = torch.randn(B, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(B, 8, CAPACITY, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        seqlens = torch.empty(B, dtype=torch.int32, device="cuda")
        for L in LENGTHS:
            seqlens.fill_(L)
            ref = rooftop.decode_attention(q, k, v, seqlens, num_splits=1).float()
            times = {}
            for splits in SPLITS + (None,):
                out = rooftop.decode_attention(q, k, v, seqlens, num_splits=splits)
                assert (out.float() - ref).abs().max() < 2e-2, (B, L, splits)
                times[str(splits)] = graph_replay_us([lambda s=splits: rooftop.decode_attention(q, k, v, seqlens,
                                                                                                 num_splits=s)])
            rows.append({"B": B, "L": L, "us": times})
            print(f"B={B:3d} L={L:5d} {starred(times)}", flush=True)
    merge_rows = []
    default = decode_mod.MERGE_ELEMENTS
    for capacity, L in ((CAPACITY, 256), (CAPACITY, 1024), (CAPACITY, 4096), (LONG, LONG)):
        q = torch.randn(1, 32, 1, 128, device="cuda", dtype=torch.bfloat16)
        k, v = (torch.randn(1, 8, capacity, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        seqlens = torch.full((1,), L, dtype=torch.int32, device="cuda")
        times = {}
        for elements in MERGE_ELEMENTS:
            decode_mod.MERGE_ELEMENTS = elements
            clear_plans()
            rooftop.decode_attention(q, k, v, seqlens)
            times[str(elements)] = graph_replay_us([lambda: rooftop.decode_attention(q, k, v, seqlens)])
        merge_rows.append({"capacity": capacity, "L": L, "us": times})
        print(f"merge elements, B=1 capacity {capacity} L={L:5d} {starred(times)}", flush=True)
    decode_mod.MERGE_ELEMENTS = default
    (out_dir / "probe-decode-splits.json").write_text(json.dumps({"splits": rows, "merge_elements": merge_rows},
                                                                 indent=1))


if __name__ == "__main__":
    main()
