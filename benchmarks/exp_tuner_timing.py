r"""Experiment: does the tuner's timing pick what runs fastest in a model? And the stream-K mma GEMV's variants.

Why (NOTES.md session 14, item 105): quant_matmul's tuner timed each candidate as one call after do_bench's L2 flush,
which writes zeros; the dirty lines are written back during the timed call and add ~9 us, and by that timing the
mma.sync GEMV and the older kernels came out level where back-to-back replay over input copies (the results
harness, a model's layers) separates them by 20%. rooftop.ops._autotune.time_ms now flushes by reading.

For int4 group 128, bf16, each M in --ms and the benchmark shapes, every candidate of the library's list plus the
mma variants below is checked against the float64 reference and timed three ways: "zero" (the old time_ms: do_bench
of one captured call, zeroing flush), "read" (the new time_ms) and "truth" (graph replay over input copies that
together move twice the L2, as the results harness). Prints, per shape, the fastest by truth and each timing's pick
with its truth time; writes OUT/exp-tuner-timing.json.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_tuner_timing.py OUT [--ms 1,8,16] [--budget 400]"""
import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
import triton.testing

from rooftop.bench.sweep import rel_err
from rooftop.bench.timing import capture_graph, graph_replay_us
from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm

# (warps, warps an SM, PREFETCH) by BLOCK_M: a wave of resident programs (registers: MMA_PREFETCH_REGS), two, four
MMA_VARIANTS = {8: ((1, 16, 1), (1, 32, 1), (1, 64, 1), (2, 32, 1), (1, 12, 2), (1, 24, 2), (1, 48, 2), (1, 32, 0),
                    (1, 64, 0)),
                16: ((1, 12, 1), (1, 24, 1), (1, 48, 1), (2, 24, 1), (1, 8, 2), (1, 16, 2), (1, 32, 2), (1, 32, 0))}


def zero_flush_ms(fn) -> float:
    """The tuner's timing to session 14: one captured call, do_bench (L2 flushed by writing zeros)."""
    call = capture_graph(lambda: (fn(), fn()), fn).replay
    return float(triton.testing.do_bench(call, warmup=10, rep=40, return_mode="median"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ms", default="1,8,16")
    parser.add_argument("--budget", type=float, default=400.0)
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows, start, summary = [], time.time(), []
    for M in map(int, args.ms.split(",")):
        for N, K in qm.BENCH_SHAPES:
            if time.time() - start > args.budget:
                print(f"budget spent: M = {M} {N} x {K} left out")
                continue
            first = qm._make_inputs(4)((M, N, K), torch.bfloat16, "cuda")
            copies = max(1, -(-2 * l2 // (N * K // 2)))
            sets = [first] + [qm._make_inputs(4)((M, N, K), torch.bfloat16, "cuda") for _ in range(copies - 1)]
            x, qw, w = first
            ref = qm._reference(x, qw, w)
            configs = list(qm.candidates(M, N, K, 4, 128, x.dtype, sms, qm._use_gluon(x, qw.packed, qw.scales,
                                                                                       qw.zeros, 4, 128), True))
            configs += [c for c in (qm._mma(v, M) for v in MMA_VARIANTS[8 if M <= 8 else 16]) if c not in configs]
            configs.append("cublas")
            found = []
            for config in configs:
                def make(x, qw, w, config=config):
                    if config == "cublas":
                        return F.linear(x, w)
                    return qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, 4, 128)[0]
                try:
                    err = rel_err(make(x, qw, w), ref)
                    truth = graph_replay_us([lambda s=s: make(*s) for s in sets], repeat=max(1, 48 // len(sets)))
                    zero = zero_flush_ms(lambda: make(x, qw, w)) * 1e3
                    read = _autotune.time_ms(lambda: make(x, qw, w)) * 1e3
                except Exception as e:  # noqa: BLE001  a candidate that does not compile here is reported
                    print(f"  {config}: {type(e).__name__}: {str(e)[:120]}")
                    continue
                row = dict(M=M, N=N, K=K, config=config, rel_err=err, truth_us=truth, zero_us=zero, read_us=read)
                rows.append(row)
                found.append(row)
                print(f"{M:3d} {N:5d}x{K:<5d} truth {truth:7.1f}  zero {zero:7.1f}  read {read:7.1f}  err {err:.1e}  "
                      f"{config}", flush=True)
            cublas = next(r["truth_us"] for r in found if r["config"] == "cublas")
            ours = [r for r in found if r["config"] != "cublas"]
            best = min(ours, key=lambda r: r["truth_us"])
            picks = {m: min(ours, key=lambda r: r[f"{m}_us"]) for m in ("zero", "read")}
            summary.append(f"{M:3d} {N:5d}x{K:<5d} cublas {cublas:6.1f}  best {best['truth_us']:6.1f} "
                           f"({cublas / best['truth_us']:.2f}x {best['config']['path']})  zero-pick "
                           f"{picks['zero']['truth_us']:6.1f} ({picks['zero']['config']['path']})  read-pick "
                           f"{picks['read']['truth_us']:6.1f} ({picks['read']['config']['path']})  best config "
                           f"{best['config']}")
            torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "exp-tuner-timing.json").write_text(json.dumps(rows, indent=1))
    print("\n".join(summary))


if __name__ == "__main__":
    main()
