r"""Experiment (issue 6, batch 1): the CUDA-core GEMV's split-K fix-up, the last piece to arrive completing a tile
(before session 20) against the last split completing it (quant_matmul.GEMV_LAST_COMPLETES, _store_output).

Why (NOTES item 141): in the W4A16 Gluon kernels the old fix-up, every piece storing its partial, an acq_rel atomic
whose result each waits for, the last re-reading every slot, cost 4-9 us a call; letting one designated piece
complete the tile while the others only store and count in (a release, nothing waited for) took most of it back.
The GEMV's splits are whole programs, piece p launched after pieces 0 .. p - 1: the last split can wait for the
others without any risk of waiting for a program not yet launched.

What: int4 and int8, group 128, bf16, M = 1, the benchmark shapes; the GEMV's untimed default configuration (the
tuner's first candidate) under both fix-ups, each checked against x @ dequantize(w).T, then timed as the results
harness does (graph replay over weight copies that together exceed L2), A / B / A / B.
Usage: PYTHONPATH=src python benchmarks/exp_gemv_fixup.py OUT_DIR   (prints a table last; OUT_DIR/exp-gemv-fixup.json)
"""
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from rooftop.bench.timing import graph_replay_us
from rooftop.ops import quant_matmul as qm

SHAPES = ((4096, 4096), (14336, 4096), (4096, 14336), (28672, 8192))
L2_BYTES = 50 << 20


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    rows = []
    for bits in (4, 8):
        for N, K in SHAPES:
            copies = max(2, -(-2 * L2_BYTES // (N * K * bits // 8)))
            weights = [qm.quantize_weight(torch.randn(N, K, device="cuda", dtype=torch.bfloat16) * K**-0.5, bits, 128)
                       for _ in range(copies)]
            x = torch.randn(1, K, device="cuda", dtype=torch.bfloat16)
            config = qm.candidates(1, N, K, bits, 128, torch.bfloat16, torch.cuda.get_device_properties(0)
                                   .multi_processor_count)[0]
            ref = F.linear(x.float(), weights[0].dequantize(torch.float32))
            calls = [lambda w=w: qm._run_config(config, x, w.packed, w.scales, w.zeros, None, N, bits, 128)
                     for w in weights]
            times = {False: [], True: []}
            for flag in (False, True, False, True):
                qm.GEMV_LAST_COMPLETES = flag
                got = calls[0]()[0]
                err = float((got.float() - ref).norm() / ref.norm())
                assert err < 1e-2, (bits, N, K, flag, err)
                times[flag].append(graph_replay_us(calls))
            row = dict(bits=bits, N=N, K=K, config=config, copies=copies, last_arrival_us=min(times[False]),
                       last_split_us=min(times[True]))
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "exp-gemv-fixup.json").write_text(json.dumps(rows, indent=1))
    print(f"\n{'int':>4} {'N x K':>12} {'SPLIT_K':>8} {'last arrival':>13} {'last split':>11}")
    for r in rows:
        print(f"{r['bits']:>4} {r['N']:>6}x{r['K']:<6}{r['config'].get('SPLIT_K', '-'):>8} "
              f"{r['last_arrival_us']:>10.1f} us {r['last_split_us']:>8.1f} us")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "exp-gemv-fixup")
