r"""Experiment: the int4 GEMV on the tensor cores by mma.sync (quant_matmul's `_qgemv_mma_kernel`, path "mma").

Why (exp_gemv_pipeline.py, H200, 2026-12-01, graph replay as the results harness times): the library's CUDA-core
GEMV reads 28672 x 8192's int4 weight at 3.0 TB/s (40.5 us) where a plain read of the same words runs 4.2 TB/s
(27.8 us); Nsight Compute: 72% of issue slots used, stalls on the integer and FMA pipes as much as on memory. Its
loop costs ~4 instructions a code, 1.5 of them on the half-rate integer pipe (shift, mask | magic) and one FMA.
The mma.sync kernel turns a word into its codes as 16-bit pairs (one LOP3 a pair, a packed add of -(magic + z))
and lets the tensor cores do the products: offline sm_90, one group (128 codes a lane) is ~300 instructions, 2.3 a
code, 1.1 of them integer. x's 16-byte slice of a word row is the B fragment (no broadcast through shared memory),
and up to 8 rows of x cost the same (the MMA's n = 8).

Times (graph replay over 3 input copies, as the results harness; and time_ms, as the tuner) the mma kernel's
candidates against the library's untimed GEMV (M = 1) and its tuned choice, and cuBLAS bf16, at M = 1, 4, 8 and the
benchmark shapes; each output checked against the float64 reference. Writes OUT/exp-gemv-mma.json.
Runs against commit 30908a2, where the mma kernel still took a split-K grid and these configs (session 15 gave it a
one-wave stream-K grid; benchmarks/exp_tuner_timing.py times its variants now).
Usage: PYTHONPATH=src python benchmarks/exp_gemv_mma.py OUT"""
import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm

# warps, warps an SM to split K towards, PREFETCH[, maxnreg] (run 1: tl.range's num_stages 2-3 instead of the
# prefetch ran 2-3x slower than 1)
MMA = {8: ((1, 32, False), (1, 32, True, 96), (1, 32, True), (2, 32, True, 96), (4, 32, True, 96), (1, 16, True, 96),
           (1, 64, True, 96)),
       16: ((1, 32, False), (1, 32, True, 128), (1, 32, True), (2, 32, True, 128), (4, 32, True, 128),
            (1, 16, True, 128))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ms", default="1,8")
    parser.add_argument("--budget", type=float, default=400.0)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows, start = [], time.time()
    for M in map(int, args.ms.split(",")):
        for N, K in qm.BENCH_SHAPES:
            if time.time() - start > args.budget:
                break
            sets = [qm._make_inputs(4)((M, N, K), torch.bfloat16, "cuda") for _ in range(3)]
            x, qw, w = sets[0]
            ref = qm._reference(x, qw, w)

            def timed(config) -> tuple[float, float]:
                def make(x, qw, w):
                    if config == "cublas":
                        return F.linear(x, w)
                    return qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, 4, 128)[0]
                graph = graph_replay_us([lambda s=s: make(*s) for s in sets], repeat=16)
                return graph, _autotune.time_ms(lambda: make(*sets[0])) * 1e3

            configs = {"cublas": "cublas", "library_default": qm.candidates(M, N, K, 4, 128, x.dtype, sms)[0]}
            configs.update({"mma_" + "_".join(map(str, c)): qm._mma(c, M, N, K, 128, sms)
                            for c in MMA[8 if M <= 8 else 16]})
            figures = {}
            for name, config in configs.items():
                try:
                    err = None
                    if config != "cublas":
                        out = qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, 4, 128)[0]
                        err = float(torch.linalg.vector_norm(out.double() - ref) / torch.linalg.vector_norm(ref))
                    graph_us, tuner_us = timed(config)
                except Exception as e:  # noqa: BLE001  (a candidate that fails is recorded)
                    rows.append(dict(M=M, N=N, K=K, name=name, config=config, error=str(e)[:300]))
                    print(f"  {name}: failed {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                figures[name] = graph_us
                rows.append(dict(M=M, N=N, K=K, name=name, config=config, graph_us=graph_us, time_ms_us=tuner_us,
                                 rel_err=err))
                cub = figures.get("cublas", graph_us)
                print(f"{M}x{N}x{K} {name:22s} graph {graph_us:6.1f} us x{cub / graph_us:.2f} cuBLAS  time_ms "
                      f"{tuner_us:6.1f} us  err {err if err is None else f'{err:.1e}'}  "
                      f"{config.get('SPLIT_K', '') if isinstance(config, dict) else ''}", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-gemv-mma.json").write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
