r"""Experiment: the weight-only GEMVs' ramp and tail in a chain of calls (issue 6: 3x cuBLAS at batch 1 wants ~10.2 us
at 14336 x 4096 where the kept M = 1 candidate ran 12.2 us, 11.6 with no split-K close at all and a read of its words
8.6; 2.5x at batch 16; journal items 164-168).

In a chain of GEMVs (a graph of back-to-back calls: the results harness, and a decoder's q / k / v and gate / up
projections) each kernel starts only when the one before has ended, so the SMs idle through every kernel's last
programs and the next one's first loads. quant_matmul.PDL_PATHS names the paths launched as programmatic dependents:
each program waits for the previous kernel to end (griddepcontrol.wait) before it reads or writes anything, then lets
the next kernel launch (griddepcontrol.launch_dependents). Timed with the path in PDL_PATHS and not; each checked bit
for bit against the plain launch's outputs after a graph replay of the chain (a race would show); int4 group 128,
bf16, graph replay over input copies that together move twice the L2, cuBLAS bf16 in the same run. M = 1: the CUDA-core
GEMV (--config); M > 1: the first mma GEMV candidate (M <= 16) and the first tensor-core (dot) one.
Prediction: ~0.5-1 us a call (the launch gap and the tail). Seen (session 25, logs/h200-2026-12-02-s25/call-e), M = 1:
6.8 / 12.1 / 12.7 / 36.5 -> 6.1 / 11.4 / 11.9 / 35.2 us at 4096^2 / 14336 x 4096 / 4096 x 14336 / 28672 x 8192 (2.09 /
2.73 / 2.71 / 3.11x cuBLAS), the same bits: kept, on by default. First tried (call-d): the next launch let go before
the wait (4096^2 9.6 us: a chain of kernels waiting on the SMs), and the program's words pulled into L2 before the
wait (cp.async.bulk.prefetch.L2, a uniform instruction the threads' rows serialise through: 0.5-11 us slower
everywhere); both gone. M = 16 / 64 (the mma and dot paths): not yet run.
--prefetch 1,4 (M = 1, session 32): also each slice's first 1 / 4 k-steps of words pulled into L2 before the wait
(`_qgemv_kernel` PREFETCH; call-d above pulled in all of a program's words, and let the next launch go before its wait,
which the library no longer does): a program made resident in the previous kernel's tail keeps DRAM busy there.
Prediction: ~0.5-1 us a call at the mid shapes (the tail of a 12 us call).
Writes OUT/exp-gemv-pdl-intB-mM.json. Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemv_pdl.py OUT
       [--bits 4] [--m 1] [--config '(128, 4, 4, 7, 1, 72, 4, True, True)' ...] [--prefetch 1,4]
"""
import argparse
import ast
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.timing import capture_graph, graph_replay_us
from rooftop.ops import quant_matmul as qm


def configs(M: int, N: int, K: int, bits: int, gemv: list, sms: int) -> list:
    """The launch dicts timed at M rows: the given GEMV candidates at M = 1, else the first mma and dot ones."""
    if M == 1:
        return [qm._gemv(c, 1, N, K, bits, 128, sms) for c in gemv]
    listed = qm.candidates(M, N, K, bits, 128, torch.bfloat16, sms, mma=bits == 4)
    return [next(c for c in listed if c["path"] == path) for path in ("mma", "dot")
            if any(c["path"] == path for c in listed)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bits", type=int, default=4, choices=(4, 8))
    parser.add_argument("--m", type=int, default=1)
    parser.add_argument("--config", action="append", help="a GEMV candidate at M = 1 (repeatable; default: "
                        "(128, 4, 4, 7, 1, 72, 4, True, True))")
    parser.add_argument("--prefetch", default="", help="M = 1: PREFETCH values also timed with PDL, e.g. 1,4")
    args = parser.parse_args()
    gemvs = [ast.literal_eval(c) for c in args.config or ["(128, 4, 4, 7, 1, 72, 4, True, True)"]]
    prefetches = [int(p) for p in args.prefetch.split(",") if p]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows, M = [], args.m
    for N, K in qm.BENCH_SHAPES:
        copies = max(2, -(-2 * l2 // (N * K * args.bits // 8)))
        sets = [qm._make_inputs(args.bits)((M, N, K), torch.bfloat16, "cuda") for _ in range(copies)]
        refs = [qm._reference(*s).float() for s in sets]
        cublas = graph_replay_us([lambda s=s: F.linear(s[0], s[2]) for s in sets], repeat=max(1, 48 // copies))
        for base in configs(M, N, K, args.bits, gemvs, sms):
            err = plain = None
            for pdl, prefetch in [(False, 0), (True, 0)] + [(True, p) for p in prefetches]:
                qm.PDL_PATHS = frozenset({base["path"]} if pdl else ())
                config = dict(base, **({"PREFETCH": prefetch} if prefetch else {}))
                fn = lambda x, qw, w, c=config: qm._run_config(c, x, qw.packed, qw.scales, qw.zeros, None, N,
                                                               args.bits, 128)[0]
                outs = []
                chain = capture_graph(lambda: [fn(*s) for s in sets], lambda: outs.extend(fn(*s) for s in sets))
                chain.replay()
                torch.cuda.synchronize()
                if plain is None:
                    plain = [o.clone() for o in outs]
                    err = max((o.float() - r).norm().item() / r.norm().item() for o, r in zip(outs, refs))
                same = all(torch.equal(o, p) for o, p in zip(outs, plain))
                us = graph_replay_us([lambda s=s: fn(*s) for s in sets], repeat=max(1, 48 // copies))
                row = dict(bits=args.bits, M=M, N=N, K=K, path=config["path"], pdl=pdl, prefetch=prefetch, us=us,
                           cublas_us=cublas, vs_cublas=cublas / us, same_bits=same, rel_err=err, config=config)
                rows.append(row)
                print(f"int{args.bits} {M:3d}x{N:5d}x{K:<5d} {config['path']:4s} pdl {pdl:d} pf {prefetch}  "
                      f"split {config.get('SPLIT_K')} {us:6.1f} us  "
                      f"{cublas / us:4.2f}x cuBLAS ({cublas:6.1f})  same bits {same}  err {err:.1e}", flush=True)
        torch.cuda.empty_cache()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"exp-gemv-pdl-int{args.bits}-m{M}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
