r"""Experiment: the batch-1 GEMV's ramp and tail (issue 6: 3x cuBLAS wants ~10.2 us at 14336 x 4096 where the kept M = 1
candidate runs 12.2 us, 11.6 with no split-K close at all and a read of its words 8.6; NOTES items 164-167).

In a chain of GEMVs (a graph of back-to-back calls: the results harness, and a decoder's q / k / v and gate / up
projections) each kernel starts only when the one before has ended, so the SMs idle through every kernel's last
programs and the next one's first loads. quant_matmul.GEMV_PDL launches the GEMV as a programmatic dependent: each
program lets the next kernel launch at once (griddepcontrol.launch_dependents) and waits for the previous one to end
(griddepcontrol.wait) before it reads x or writes; GEMV_PREFETCH pulls the program's words into L2 first
(cp.async.bulk.prefetch.L2: under PDL before that wait, so the words' reads overlap the previous kernel's tail).
Prediction: PDL alone ~0.5-1 us a call (the launch gap); with the prefetch, the tail's idle bandwidth used: 12.2 ->
~10.5 us at the mid shapes. Each variant is checked bit for bit against the plain launch's outputs after a graph
replay of the chain (a race of the prefetch or the wait would show), int4 group 128, bf16, graph replay over input
copies that together move twice the L2, cuBLAS bf16 in the same run.
Writes OUT/exp-gemv-pdl.json. Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_gemv_pdl.py OUT
       [--bits 4] [--config '(128, 4, 4, 7, 1, 72, 4, True, True)']
"""
import argparse
import ast
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.timing import capture_graph, graph_replay_us
from rooftop.ops import quant_matmul as qm

VARIANTS = ((False, False), (False, True), (True, False), (True, True))  # (GEMV_PDL, GEMV_PREFETCH)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--bits", type=int, default=4, choices=(4, 8))
    parser.add_argument("--config", default="(128, 4, 4, 7, 1, 72, 4, True, True)")
    args = parser.parse_args()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    rows = []
    for N, K in qm.BENCH_SHAPES:
        copies = max(2, -(-2 * l2 // (N * K * args.bits // 8)))
        sets = [qm._make_inputs(args.bits)((1, N, K), torch.bfloat16, "cuda") for _ in range(copies)]
        config = qm._gemv(ast.literal_eval(args.config), 1, N, K, args.bits, 128, sms)
        cublas = graph_replay_us([lambda s=s: F.linear(s[0], s[2]) for s in sets], repeat=max(1, 48 // copies))
        refs = [qm._reference(*s).float() for s in sets]
        err = plain = None
        for pdl, prefetch in VARIANTS:
            qm.GEMV_PDL, qm.GEMV_PREFETCH = pdl, prefetch
            fn = lambda x, qw, w: qm._run_config(config, x, qw.packed, qw.scales, qw.zeros, None, N, args.bits,
                                                 128)[0]
            outs = []
            chain = capture_graph(lambda: [fn(*s) for s in sets], lambda: outs.extend(fn(*s) for s in sets))
            chain.replay()
            torch.cuda.synchronize()
            if plain is None:
                plain = [o.clone() for o in outs]
                err = max((o.float() - r).norm().item() / r.norm().item() for o, r in zip(outs, refs))
            same = all(torch.equal(o, p) for o, p in zip(outs, plain))
            us = graph_replay_us([lambda s=s: fn(*s) for s in sets], repeat=max(1, 48 // copies))
            row = dict(bits=args.bits, N=N, K=K, split=config["SPLIT_K"], pdl=pdl, prefetch=prefetch, us=us,
                       cublas_us=cublas, vs_cublas=cublas / us, same_bits=same, rel_err=err)
            rows.append(row)
            print(f"int{args.bits} {N:5d}x{K:<5d} pdl {pdl:d} prefetch {prefetch:d}  {us:6.1f} us  "
                  f"{cublas / us:4.2f}x cuBLAS ({cublas:6.1f})  same bits {same}  err {err:.1e}", flush=True)
        torch.cuda.empty_cache()
    qm.GEMV_PDL = qm.GEMV_PREFETCH = False
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"exp-gemv-pdl-int{args.bits}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
