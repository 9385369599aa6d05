"""Experiment (session 46): rows in parts (softmax, log_softmax, LayerNorm, quantizing RMSNorm) with the parts'
statistics swapped in one round trip (softmax_sm90.swap_pairs) against the exchange before it (exchange_pairs), bf16,
M * N = 2^27, on the H200.
Why: Nsight Compute of softmax in parts at 131072 (logs/h200-2026-12-04-s46/call-a): ~20% of the warp samples wait on
the exchange, where the polls find the other parts arrived at the first try: what the consumer waits for is
exchange_pairs' chain, a GPU-scope fence (the thread's outstanding stores of the last part), the arrival atomic and
its L1 invalidation, the poll and its invalidation, the pairs' loads, the leaving atomic (its count decides the
reset). swap_pairs: one relaxed 64-bit swap of the pair (the word is its own flag), one relaxed poll of the row's
words, the leaving count read a row later. Predicted: the parts within 2-3 points of whole rows (86-88%), and parts
of 16384 no longer far behind.
Variants: "library" (swap_pairs) and, until commit 7638789, "exchange" (exchange_pairs, the switch QUICK_EXCHANGE
off; removed once swap_pairs won or tied everywhere) and softmax "p16k" / "p16k_exchange" (parts of 16384; call d);
at 65536, where whole rows run, "p32k": parts of 32768 (LayerNorm, rms_norm_fp8). Each checked against float64 before
and after its timing (a word left behind would make the next launch's statistics stale); timed as
exp_resident_params.py times. A deadlock would hang: run it under `timeout`. Calls d (softmax alone, as
exp_softmax_exchange.py) and e (all) are logs/h200-2026-12-04-s46/call-d, call-e.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_part_exchange.py OUT_DIR [--wide-quant]  (prints a table last;
--wide-quant, call f: rms_norm_fp8 at 40960-65536, whole rows against parts of 32768)
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from exp_resident_params import calls
from rooftop.ops import layer_norm as ln
from rooftop.ops import rms_norm as rn

P32K = [(ln, dict(GLUON_MAX_N=32768)), (rn, dict(QUANT_WHOLE_MAX_N=32768))]
VARIANTS = {"library": [], "p32k": P32K}
# (op, N): the variants timed
CASES = {**{(op, N): ("library",) for op in ("softmax", "log_softmax") for N in (131072, 262144, 1 << 20)},
         **{(op, 65536): ("library", "p32k") for op in ("layer_norm", "rms_norm_fp8")},
         **{(op, N): ("library",) for op in ("layer_norm", "rms_norm_fp8") for N in (131072, 262144)},
         **{("add_rms_norm_fp8", N): ("library",) for N in (65536, 131072)}}
# call f: quantizing rows without a residual between the part width and 65536, whole (library) or in parts of 32768
WIDE_QUANT_CASES = {("rms_norm_fp8", N): ("library", "p32k") for N in (40960, 49152, 57344, 65536)}


def op_call(op: str, x: torch.Tensor):
    """(the call, its float64 reference, bytes moved at the least) of `op` on x (norms: exp_resident_params.calls)."""
    if op.endswith("softmax"):
        fn = getattr(rooftop, op)
        return lambda: fn(x), lambda: getattr(torch, op)(x.double(), dim=-1), 2 * x.nbytes
    N = x.shape[1]
    w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
    return calls(op, x, w, torch.randn_like(w), torch.randn_like(x))


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for (op, N), names in (WIDE_QUANT_CASES if "--wide-quant" in sys.argv else CASES).items():
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        call, reference, nbytes = op_call(op, x)
        ref = reference()
        time_variants(rows, copy_gbps, nbytes, call, ref, {name: VARIANTS[name] for name in names}, op=op, N=N)
        del x, ref, call
        torch.cuda.empty_cache()
        save_both(out / "exp-part-exchange.json", copy_gbps, rows)
    print_both(rows, copy_gbps, WIDE_QUANT_CASES if "--wide-quant" in sys.argv else CASES)


if __name__ == "__main__":
    main()
