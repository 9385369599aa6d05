r"""Experiment: does the tuner's timing pick what runs fastest in a model? And the mma GEMV's grids.

Why (journal, session 14, item 105): quant_matmul's tuner (rooftop.ops._autotune.time_ms) times each candidate as one
captured call after do_bench's L2 flush, which writes zeros; the dirty lines are written back during the timed call
(~9 us on a 40-60 us kernel), and by that timing the mma.sync GEMV and the older kernels came out level where
back-to-back replay over input copies (the results harness, a model's layers) separated them by 20%.

For int4 (or --bits 8) group 128, bf16, each M in --ms and the benchmark shapes, every candidate of the library's list
(--only-mma: its untimed default) plus the mma variants below is checked against the float64 reference and timed
three ways: "zero" (the tuner's time_ms), "read" (the same with a flush that reads 256 MB, leaving L2 clean) and
"truth" (graph replay over input copies that together move twice the L2, as the results harness). Prints, per shape, the
fastest by truth and each timing's pick with its truth time; writes OUT/exp-tuner-timing.json.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_tuner_timing.py OUT [--ms 1,8,16] [--budget 400] [--only-mma]
       [--bits 8] [--min-steps 16,64] [--max-split 1000]  (GEMV candidates with other splits of K too)
       [--shapes 28672x8192,14336x4096] [--gemv-variants] [--where X_ASM,SLICES] [--gluon-min-m 5]
       ... exp_tuner_timing.py --ncu-target M [--ncu-warps W]  (under ncu: the mma GEMV at M x 28672 x 8192)"""
import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.sweep import rel_err
from rooftop.bench.timing import capture_graph, graph_replay_us
from rooftop.ops import _autotune
from rooftop.ops import quant_matmul as qm

# (warps, maxnreg[, X_AHEAD]) by BLOCK_M (run 3, logs/h200-2026-12-01-s15/exp-tuner-timing-mma.log, had (warps, warps
# an SM to split K towards or 0: one wave, PREFETCH[, maxnreg]); session 21's run with an L2 prefetch L2_AHEAD groups
# ahead, logs/h200-2026-12-02-s21/exp-tuner-timing-l2.log, had a fourth entry: not kept, see journal item 152)
MMA_VARIANTS = {8: ((1, 104), (1, 88), (2, 88), (4, 104), (4, 88)),
                16: ((1, 120, False), (2, 120, False), (1, 128), (1, 112, False), (2, 128), (4, 120, False),
                     (8, 120, False), (4, 128))}
# --gemv-variants (M = 1): GEMV_CONFIGS tuples not in the library's list. Session 23's, the sliced X_ASM loop rolled and
# pipelined by Triton's cp.async (STAGES 3-6), ran 15.1-15.6 us at int4 4096 x 14336 against the unrolled 12.8
# (logs/h200-2026-12-02-s24/exp-tuner-timing-variants-int4.log); session 24's AHEAD ones (a group's word rows tied,
# all issued before the first FMA; 128 registers, per_sm 2-8) 14.5-16.5 us at the mid shapes against 12.1-12.7
# (exp-tuner-timing-ahead-int*.log): both gone. Session 24's ncu of the kept M = 1 candidate at 14336 x 4096 (journal
# item 164) put 54% of the warps' stall samples after the loop, ~31% of them waiting on the split-K close's fence and
# atomic;
# so K split over 8 or 16 warps of one program (slices summed in shared memory, no partials, no atomic) at one or
# two programs a tile (per_sm 0: no split; 1). Session 25 (logs/h200-2026-12-02-s25/call-b/variants-int*.log): slower
# than the split over programs but for int8 14336 x 4096 (16 warps, no split: 17.5 us against 18.1, kept in the
# library's list) and 28672 x 8192 (8 warps: 56.4 against 57.2); int4 13.3 / 33.1 / 37.6 us against 12.2 / 12.8 / 35.7.
GEMV_VARIANTS = ((128, 8, 4, 0, 1, 72, 8, True, True), (128, 16, 4, 1, 1, 64, 16, True, True),
                 (128, 8, 4, 2, 1, 72, 8, True, True))


def read_flush_ms(fn, warmup: int = 5, reps: int = 50) -> float:
    """Median ms of one captured call of fn, CUDA events around each replay, 256 MB read before each."""
    call = capture_graph(lambda: (fn(), fn()), fn).replay
    flush = torch.ones(64 << 20, dtype=torch.int32, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(warmup + reps):
        flush.amax()  # reads every byte, writes one int32
        if i >= warmup:
            starts[i - warmup].record()
        call()
        if i >= warmup:
            ends[i - warmup].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def ncu_target(M: int, warps: int = 0) -> None:
    """Three launches of the mma GEMV's first candidate (or, warps > 0, the MMA_VARIANTS one of that many warps) at
    M x 28672 x 8192, for Nsight Compute."""
    x, qw, w = qm._make_inputs(4)((M, 28672, 8192), torch.bfloat16, "cuda")
    table = qm.MMA_CONFIGS if not warps else MMA_VARIANTS
    config = qm._mma(next(v for v in table[8 if M <= 8 else 16] if not warps or v[0] == warps), M)
    for _ in range(3):
        qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, 28672, 4, 128)
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", nargs="?")
    parser.add_argument("--ncu-target", type=int, metavar="M", help="only launch the mma GEMV at M x 28672 x 8192")
    parser.add_argument("--ncu-warps", type=int, default=0, help="with --ncu-target: MMA_VARIANTS' variant of this "
                        "many warps")
    parser.add_argument("--ms", default="1,8,16")
    parser.add_argument("--budget", type=float, default=400.0)
    parser.add_argument("--only-mma", action="store_true", help="the library's default and the mma variants only")
    parser.add_argument("--bits", type=int, default=4, choices=(4, 8))
    parser.add_argument("--min-steps", default="", help="GEMV_MIN_STEPS values to time the GEMV candidates at too "
                        "(comma-separated; fewer, longer splits of K)")
    parser.add_argument("--max-split", default="", help="GEMV_MAX_SPLIT values likewise")
    parser.add_argument("--shapes", default="", help="N x K shapes to time (comma-separated NxK; default: the "
                        "benchmark's)")
    parser.add_argument("--gemv-variants", action="store_true", help="time GEMV_VARIANTS too (M = 1)")
    parser.add_argument("--gluon-min-m", type=int, default=0, help="quant_matmul.GLUON_MIN_M for this run (the Gluon "
                        "candidates from this M on)")
    parser.add_argument("--where", default="", help="keep only the default and the candidates with any of these "
                        "launch parameters set past its plain value (comma-separated, e.g. X_ASM,SLICES)")
    args = parser.parse_args()
    if args.gluon_min_m:
        qm.GLUON_MIN_M = args.gluon_min_m
    if args.ncu_target:
        return ncu_target(args.ncu_target, args.ncu_warps)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows, start, summary = [], time.time(), []
    for M in map(int, args.ms.split(",")):
        shapes = [tuple(map(int, s.split("x"))) for s in args.shapes.split(",") if s] or qm.BENCH_SHAPES
        for N, K in shapes:
            if time.time() - start > args.budget:
                print(f"budget spent: M = {M} {N} x {K} left out")
                continue
            bits = args.bits
            first = qm._make_inputs(bits)((M, N, K), torch.bfloat16, "cuda")
            copies = max(1, -(-2 * l2 // (N * K * bits // 8)))
            sets = [first] + [qm._make_inputs(bits)((M, N, K), torch.bfloat16, "cuda") for _ in range(copies - 1)]
            x, qw, w = first
            ref = qm._reference(x, qw, w)
            configs = list(qm.candidates(M, N, K, bits, 128, x.dtype, sms, qm._use_gluon(x, qw.packed, qw.scales,
                                                                                          qw.zeros, bits, 128),
                                         qm._use_mma(x, bits)))
            for name, values in (("GEMV_MIN_STEPS", args.min_steps), ("GEMV_MAX_SPLIT", args.max_split)):
                default = getattr(qm, name)
                for value in (int(v) for v in values.split(",") if v):
                    setattr(qm, name, value)
                    configs += [c for c in (qm._gemv(g, M, N, K, bits, 128, sms) for g in qm.GEMV_CONFIGS)
                                if c not in configs]
                setattr(qm, name, default)
            if args.only_mma:
                configs = configs[:1]
            if args.where:
                keys = args.where.split(",")
                past_plain = lambda v: v is True or type(v) is int and v > 1  # noqa: E731
                configs = configs[:1] + [c for c in configs[1:] if any(past_plain(c.get(k)) for k in keys)]
            if qm._use_mma(x, bits):
                configs += [c for c in (qm._mma(v, M) for v in MMA_VARIANTS[8 if M <= 8 else 16]) if c not in configs]
            if args.gemv_variants and M == 1:
                variants = (qm._gemv(v, M, N, K, bits, 128, sms) for v in GEMV_VARIANTS)
                configs += [c for c in variants if c not in configs]
            configs.append("cublas")
            found = []
            for config in configs:
                def make(x, qw, w, config=config):
                    if config == "cublas":
                        return F.linear(x, w)
                    return qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, bits, 128)[0]
                try:
                    err = rel_err(make(x, qw, w), ref)
                    truth = graph_replay_us([lambda s=s: make(*s) for s in sets], repeat=max(1, 48 // len(sets)))
                    zero = _autotune.time_ms(lambda: make(x, qw, w)) * 1e3
                    read = read_flush_ms(lambda: make(x, qw, w)) * 1e3
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
