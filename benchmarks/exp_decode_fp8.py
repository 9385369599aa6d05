r"""Experiment: decode_attention over fp8 caches at other tiles (journal item 560).

Why: with the 16-bit kernel's launch (128 keys a step, 4 warps, 3 stages) fp8 caches ran at ~71% of their own
roofline on an H100 where 16-bit ones run at ~101%: half the bytes a stage, so half the bytes in flight, for the same
dots and softmax a tile. More stages or wider key tiles put the bytes back in flight. Times each (BLOCK_N, warps,
stages) by graph replay over input copies (cold L2), the 16-bit default beside it.
Usage: PYTHONPATH=src python benchmarks/exp_decode_fp8.py [--shapes 1x32x131072x128,16x32x8192x128]"""
import argparse

import torch

from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _support
from rooftop.ops import decode_attention as dm

CONFIGS = ((128, 4, 3), (128, 4, 5), (128, 4, 7), (256, 4, 3), (256, 8, 3), (256, 8, 4), (64, 4, 8))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1x32x131072x128,16x32x8192x128")
    a = ap.parse_args()
    copy_gbps = 3000 if "H100" in torch.cuda.get_device_name() else 4200
    for shape in (tuple(map(int, s.split("x"))) for s in a.shapes.split(",")):
        sets16 = [dm._make_decode_inputs(shape, torch.bfloat16, "cuda") for _ in range(3)]
        sets8 = [(q, dm.quantize_kv(k, 1 / 64), dm.quantize_kv(v, 1 / 64), s) for q, k, v, s in sets16]
        rows = []
        for name, sets, configs in (("bf16", sets16, CONFIGS[:1]), ("fp8", sets8, CONFIGS)):
            for block_n, warps, stages in configs:
                dm.BLOCK_N, dm.NUM_WARPS, dm.NUM_STAGES = block_n, warps, stages
                _support.clear_plans()
                scales = {} if name == "bf16" else dict(k_scale=1 / 64, v_scale=1 / 64)
                us = graph_replay_us([lambda s=s: dm.decode_attention(*s, **scales) for s in sets], repeat=20)
                cost = dm.decode_attention_cost(shape, torch.bfloat16, cache_itemsize=2 if name == "bf16" else 1)
                rows.append(f"{'x'.join(map(str, shape)):18s} {name} BLOCK_N {block_n:3d} warps {warps} stages "
                            f"{stages}: {us:7.1f} us  {cost.bytes / us * 1e-3:6.0f} GB/s "
                            f"({cost.bytes / us * 1e-1 / copy_gbps:5.1f}% of copy)")
                print(rows[-1], flush=True)
        dm.BLOCK_N, dm.NUM_WARPS, dm.NUM_STAGES = 128, 4, 3


if __name__ == "__main__":
    main()
