"""Experiment (session 47): how much of the row ops' gap to the issues' targets at the widest rows is the last round
of rows, on the H200, bf16.

At M * N = 2^27 the row counts are powers of two and the H200 has 132 SMs: 2048 rows of 65536 one program an SM is
15.5 rounds (16 for the SMs that take the most), 4096 parts of 32768 (softmax / LayerNorm at 131072) on two consumers
an SM 15.5 again. If an SM cannot pull more than its share of HBM while half the others idle, the last half-round
costs ~3% (the gap of reductions at 65536: 88.7-89.4% of the 90; softmax at 131072 ~4 points short of 2x compile).
Per case the library at M0 = 2^27 / N rows and at the multiples of 2 x SMs around it (M0 rounded down and up:
whole rounds), as % of a same-run copy (do_bench / graph replay; each M's own bytes): if the rounded M's run ~3%
higher, the tail is the loss and a balanced split (stream-K over elements, or parts sized to the SMs) the fix.
Also LayerNorm's part width (layer_norm.PART_MAX_N, 32768 since this session) against 65536 where a residual takes
parts (past norm_sm90.PARTS_RESIDUAL_MIN_N: add_layer_norm at 524288) and at 131072 / 262144 again.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_row_tail.py OUT_DIR  (a table last, exp-row-tail.json)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from exp_resident_params import calls as norm_calls
from rooftop.ops import layer_norm as ln
from rooftop.ops.reductions import row_reduce_reference

TAIL_CASES = [("row_sum", 65536), ("softmax", 65536), ("softmax", 131072), ("softmax", 262144),
              ("log_softmax", 131072), ("layer_norm", 65536), ("layer_norm", 131072), ("add_layer_norm", 65536),
              ("rms_norm_fp8", 32768), ("rms_norm_fp8", 65536), ("add_rms_norm_fp8", 32768), ("bias_gelu", 65536)]
PART_CASES = [("layer_norm", 131072), ("layer_norm", 262144), ("add_layer_norm", 524288)]
PARTS_OF_64K = {"library": [], "p64k": [(ln, dict(PART_MAX_N=65536))]}


def op_call(op: str, M: int, N: int):
    """(the library call on fresh [M, N] bf16 inputs, its float64 reference, the least bytes it moves)."""
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    if op.startswith("row_"):  # row_sum, row_max, row_mean, row_norm
        return lambda: getattr(rooftop, op)(x), row_reduce_reference(x, op[4:]), x.nbytes + 2 * M
    if op in ("softmax", "log_softmax"):
        fn = getattr(rooftop, op)
        return lambda: fn(x), getattr(torch, op)(x.double(), dim=-1), 2 * x.nbytes
    if op == "bias_gelu":
        bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        return lambda: rooftop.bias_gelu(x, bias), F.gelu(x.double() + bias.double()), 2 * x.nbytes + 2 * N
    res = torch.randn_like(x)
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    call, reference, nbytes = norm_calls(op, x, w, b, res)
    return call, reference(), nbytes


def time_cases(path: Path, cases: dict) -> None:
    """Each (op, N) of `cases` at M = ELEMENTS / N rows (`op_call`'s inputs), its named variants timed
    (`time_variants`) against a same-run copy; the rows saved to `path` after each case, the table printed last."""
    copy_gbps = copy_both()
    rows = []
    for (op, N), named in cases.items():
        call, ref, nbytes = op_call(op, ELEMENTS // N, N)
        time_variants(rows, copy_gbps, nbytes, call, ref, named, op=op, N=N)
        del call, ref
        torch.cuda.empty_cache()
        save_both(path, copy_gbps, rows)
    print_both(rows, copy_gbps, cases)


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    whole_round = 2 * torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for op, N in TAIL_CASES:
        M0 = ELEMENTS // N
        for M in sorted({M0, M0 // whole_round * whole_round, -(-M0 // whole_round) * whole_round}):
            call, ref, nbytes = op_call(op, M, N)
            time_variants(rows, copy_gbps, nbytes, call, ref, {f"M{M}": []}, op=op, N=N)
            del call, ref
            torch.cuda.empty_cache()
        save_both(out / "exp-row-tail.json", copy_gbps, rows)
    for op, N in PART_CASES:
        call, ref, nbytes = op_call(op, ELEMENTS // N, N)
        time_variants(rows, copy_gbps, nbytes, call, ref, PARTS_OF_64K, op=op, N=N)
        del call, ref
        torch.cuda.empty_cache()
        save_both(out / "exp-row-tail.json", copy_gbps, rows)
    print_both(rows, copy_gbps, TAIL_CASES + PART_CASES)


if __name__ == "__main__":
    main()
