r"""Experiment: the split-K fp8 kernel's (matmul._fp8_gemv_kernel) tile and split at Llama-3-8B's decode shapes.

Session 60 (H100, graph replay): fp8_linear at M = 1 reached 92% of its roofline at 28672 x 4096 but 77% at
4096 x 14336 (the down projection: 32-64 column tiles, K cut into many splits) and 81% at 10240 x 8192. Here every
candidate of FP8_GEMV_CONFIGS at 1, 2, 4 and 8 programs an SM (the splits follow: _fp8_gemv_split) runs
matmul_fp8 at M = 1 and 16 on each shape, timed by graph replay over input copies larger than L2, beside cuBLAS bf16
(F.linear), and the tuner's pick among the shipped candidates (2 and 4 an SM). Prediction: at 4096 x 14336 fewer programs an SM (1-2, longer
splits, fewer partials) gain 5-10%; the wide shapes keep the tuner's choice.
Writes OUT/exp-fp8-gemv-split.json. Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_fp8_gemv_split.py OUT
"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _autotune, matmul as mm
from rooftop.ops._support import clear_plans

SHAPES = ((4096, 14336), (6144, 4096), (28672, 4096))  # down, qkv, gate / up
PER_SM = (1, 2, 4, 8)  # SPLIT_K is a constexpr: each split count a compile


def fp8_inputs(M, N, K):
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    w = (torch.randn(N, K, device="cuda") * 8).to(torch.float8_e4m3fn)
    return a, w.t(), torch.rand(M, device="cuda") + 0.5, torch.rand(N, device="cuda") + 0.5


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    shipped_per_sm = mm.FP8_GEMV_PROGRAMS_PER_SM
    real_choose = _autotune.choose
    rows = []
    for N, K in SHAPES:
        for M in (1, 16):
            copies = max(1, -(-2 * props.L2_cache_size // (N * K)))
            sets = [fp8_inputs(M, N, K) for _ in range(copies)]
            ref = mm.matmul_fp8_reference(*sets[0])
            dense = [(s[0].to(torch.bfloat16), s[1].t().to(torch.bfloat16)) for s in sets[:max(1, copies // 2)]]
            cublas = graph_replay_us([lambda x=x, w=w: F.linear(x, w) for x, w in dense])
            mm.FP8_GEMV_PROGRAMS_PER_SM = PER_SM
            forced = mm._fp8_gemv_configs(0)
            mm.FP8_GEMV_PROGRAMS_PER_SM = shipped_per_sm  # "tuned": the library's own candidates
            for config in (*forced, None):
                _autotune.choose = (real_choose if config is None else
                                    lambda *a, config=config, **kw: config)
                clear_plans()
                err = float((mm.matmul_fp8(*sets[0]).double() - ref).norm() / ref.norm())
                us = graph_replay_us([lambda s=s: mm.matmul_fp8(*s) for s in sets])
                name = "tuned" if config is None else "n{BLOCK_N}k{BLOCK_K}s{num_stages}p{PROGRAMS_PER_SM}".format(
                    **config)
                splits = mm._fp8_gemv_split(config, N, K, props.multi_processor_count)[0] if config else None
                rows.append(dict(M=M, N=N, K=K, config=name, splits=splits, us=us, cublas_us=cublas,
                                 x_cublas=cublas / us, rel_err=err))
            _autotune.choose = real_choose
            best = min((r for r in rows if r["N"] == N and r["K"] == K and r["M"] == M and r["splits"]),
                       key=lambda r: r["us"])
            tuned = next(r for r in rows if r["N"] == N and r["K"] == K and r["M"] == M and r["config"] == "tuned")
            print(f"M {M:2d} {N:5d} x {K:5d}: best {best['config']:14s} ({best['splits']} splits) {best['us']:6.1f} us "
                  f"x{best['x_cublas']:.2f}, tuned {tuned['us']:6.1f} us x{tuned['x_cublas']:.2f}, cublas "
                  f"{cublas:6.1f} us, the weight's bytes {N * K / 1e6:.1f} MB", flush=True)
            Path(args.out).mkdir(parents=True, exist_ok=True)  # after each case: a timeout keeps what ran
            Path(args.out, "exp-fp8-gemv-split.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        assert r["rel_err"] < 2e-2, r


if __name__ == "__main__":
    main()
