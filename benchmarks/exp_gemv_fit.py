r"""Experiment: does the M = 1 GEMV gain where its column tiles leave SMs idle (journal session 80)?

Why: int8 at 14336 x 4096 runs its best candidate, K over the 16 warps of one program and no split (no partials, no
close), as 112 programs of 128 columns on 132 SMs: 20 SMs read nothing. If a program's read rate is what holds it
(bytes in flight an SM), 128 programs of 112 columns (quant_matmul's FIT: TILE_N) read the same bytes ~12% sooner;
if DRAM is what holds it, no faster. The same kernel at N = 12288 / 16384 (96 / 128 programs of 128 columns) tells
which: a program-bound kernel takes about the same time at all three, a DRAM-bound one time in proportion to N.
Each configuration is checked against the float64 reference and timed by graph replay over cold input copies in
alternating bursts (the results harness's way), cuBLAS bf16 beside it.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemv_fit.py OUT [--bits 8,4] [--shapes 14336x4096,...]"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.sweep import rel_err
from rooftop.bench.timing import alternating_graph_us, chain_graph
from rooftop.ops import quant_matmul as qm

# GEMV_CONFIGS tuples: (BLOCK_N, warps, word rows, per_sm, stages, maxnreg, SLICES, X_ASM, UNROLL, AHEAD, PREFETCH, FIT)
CONFIGS = {
    "split7_pf1": (128, 4, 4, 7, 1, 72, 4, True, True, 0, 1),  # int8's tuned pick at the mid shapes (session 33)
    "split7": (128, 4, 4, 7, 1, 72, 4, True, True),  # int4's
    "whole16": (128, 16, 4, 0, 1, 72, 16, True, True),  # K over 16 warps, no split (session 25)
    "whole16_fit": (128, 16, 4, 0, 1, 72, 16, True, True, 0, 0, True),
    "whole16_fit_pf1": (128, 16, 4, 0, 1, 72, 16, True, True, 0, 1, True),
    "whole8_fit": (128, 8, 4, 0, 1, 72, 8, True, True, 0, 0, True),
    "split7_pf1_fit": (128, 4, 4, 7, 1, 72, 4, True, True, 0, 1, True),
}
INT4_CONFIGS = ("split7", "whole16", "whole16_fit")  # int4 (issue-bound at the mid shapes): fewer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--bits", default="8,4")
    ap.add_argument("--shapes", default="12288x4096,14336x4096,16384x4096,4096x14336")
    a = ap.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows, table = [], []
    for bits in map(int, a.bits.split(",")):
        for N, K in (tuple(map(int, s.split("x"))) for s in a.shapes.split(",")):
            make = qm._make_inputs(bits)
            copies = max(2, -(-2 * l2 // (N * K * bits // 8)))
            sets = [make((1, N, K), torch.bfloat16, "cuda") for _ in range(copies)]
            ref = qm._reference(*sets[0])
            graphs, errors, params = {}, {}, {}
            for name, config in CONFIGS.items():
                if bits == 4 and name not in INT4_CONFIGS:
                    continue
                p = qm._gemv(config, 1, N, K, bits, 128, sms)
                params[name] = {k: v for k, v in p.items() if k in ("SPLIT_K", "TILE_N", "PREFETCH")}

                def run(x, qw, w, p=p):
                    return qm._run_config(p, x, qw.packed, qw.scales, qw.zeros, None, N, bits, 128)[0]
                errors[name] = rel_err(run(*sets[0]), ref)
                graphs[name] = (chain_graph([lambda s=s, run=run: run(*s) for s in sets], 8), 8 * len(sets))
            graphs["cublas"] = (chain_graph([lambda s=s: F.linear(s[0], s[2]) for s in sets], 8), 8 * len(sets))
            us = alternating_graph_us(graphs, rounds=10)
            weight = N * K * bits // 8
            for name, t in us.items():
                row = dict(bits=bits, N=N, K=K, config=name, us=t, weight_GBps=weight / t * 1e-3,
                           x_cublas=us["cublas"] / t, rel_err=errors.get(name), **params.get(name, {}))
                rows.append(row)
                line = (f"int{bits} {N:5d}x{K:<5d} {name:16s} {t:7.2f} us  {row['weight_GBps']:6.0f} GB/s  "
                        f"{row['x_cublas']:.3f}x cuBLAS  {params.get(name, '')}  err {errors.get(name, 0):.1e}")
                print(line, flush=True)
                table.append(line)
            torch.cuda.empty_cache()
    Path(a.out).mkdir(parents=True, exist_ok=True)
    (Path(a.out) / "exp-gemv-fit.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(table))


if __name__ == "__main__":
    main()
