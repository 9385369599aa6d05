"""Experiment: the split path of add + RMSNorm for wide rows (rows split over programs that exchange
partial statistics, rooftop.ops._support.exchange_row_stats) under several launch configurations
(chunk, warps), against the looped path, same run; GPU time alone (graph replay, L2 flushed:
rooftop.ops._autotune.time_ms) and from Python (do_bench).

History: a first standalone version (logs/h200-2026-11-29-s5/exp-coop-rows.json) found the split rows
at ~2950 GB/s for read-then-write kernels and ~3800 GB/s with a residual at every N >= 65536, against
the looped kernels' 2600-3100 / 3300-3700. Run 2 of this script (logs/h200-2026-11-29-s5/
exp-split-rows-run1.json, do_bench only) saw the production kernels 10% slower than those, with the
same SASS (offline sm_90 compile): do_bench counts the host's gap when the Python path (workspace
allocation, launch) outlasts the L2 flush before each call. A layer_norm split kernel was 25-30%
slower than its looped one without a residual and was dropped. Run 3 (exp-split-rows-run3.json,
GPU alone) measured softmax and rms_norm without a residual too: the split path won only at N =
262144 (+2.6%, +4.8%) and lost elsewhere, so only add + RMSNorm keeps it (this script's cases now).
Usage: PYTHONPATH=src python benchmarks/exp_split_rows.py OUT.json
"""
from __future__ import annotations

import json
import sys

import torch

import rooftop
from rooftop.bench.timing import bench_ms
from rooftop.ops import _autotune
from rooftop.ops import rms_norm as rn

M_TIMES_N = 2**27
CONFIGS = (dict(CHUNK=8192, num_warps=8), dict(CHUNK=8192, num_warps=16), dict(CHUNK=16384, num_warps=32),
           dict(CHUNK=4096, num_warps=8))


def _dequantized(q, scale):
    return q.float() * scale.reshape(q.shape[0], 1)


def main(out_path: str) -> None:
    rows = []
    for N in (65536, 131072, 262144, 1048576):
        M = M_TIMES_N // N
        x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        res = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
        w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
        cases = {  # op -> (module, bytes moved per element / 2, call, reference)
            "add_rms_norm": (rn, 4, lambda: rooftop.rms_norm(x, w, residual=res)[0],
                             lambda: rn.add_rms_norm_reference(x, res, w)[0]),
            "add_rms_norm_fp8": (rn, 3.5, lambda: _dequantized(*rooftop.rms_norm(x, w, residual=res, quant="fp8")[:2]),
                                 lambda: rn.add_rms_norm_reference(x, res, w)[0]),
        }
        for op, (module, tensors, fn, ref) in cases.items():
            expected = ref().float()
            variants = [("looped", None)] + [("split", c) for c in CONFIGS]
            for name, config in variants:
                saved = module.SPLIT_LAUNCH, module.split_chunks
                if config is None:
                    module.split_chunks = lambda *a: 0
                else:
                    module.SPLIT_LAUNCH = config
                try:
                    err = (fn().float() - expected).abs().max().item()
                    ms = bench_ms(fn, warmup_ms=10, rep_ms=40)
                    alone_ms = _autotune.time_ms(fn)
                except Exception as e:
                    print("skip", op, N, name, config, type(e).__name__, str(e)[:100], flush=True)
                    continue
                finally:
                    module.SPLIT_LAUNCH, module.split_chunks = saved
                rows.append(dict(op=op, N=N, path=name, config=config, max_err=err,
                                 GBps=tensors * M * N * 2 / ms / 1e6, GBps_alone=tensors * M * N * 2 / alone_ms / 1e6))
            mine = [r for r in rows if r["op"] == op and r["N"] == N]
            looped = next((r for r in mine if r["path"] == "looped"), {"GBps": 0, "GBps_alone": 0})
            best = max((r for r in mine if r["path"] == "split"), key=lambda r: r["GBps_alone"],
                       default={"GBps": 0, "GBps_alone": 0})
            print(f"{op:13s} N={N:7d} alone: looped {looped['GBps_alone']:5.0f} best split {best['GBps_alone']:5.0f}"
                  f"  python: {looped['GBps']:5.0f} {best['GBps']:5.0f}  {best.get('config')} "
                  f"err {best.get('max_err', 0):.3g}", flush=True)
        del x, res, w
        torch.cuda.empty_cache()
        with open(out_path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "exp_split_rows.json")
