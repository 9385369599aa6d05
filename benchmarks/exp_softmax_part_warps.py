"""Experiment (sessions 45-46): softmax / log_softmax rows past the ring (131072, 262144: contiguous rows in parts) by
part width and consumer warps, bf16, M * N = 2^27, on the H200.
Session 45: the issue asks 2x torch.compile at every N from 2048; at 131072 / 262144 the library ran 1.73x / 1.86x
(77 / 75% of copy, parts of 65536 on two 4-warp consumers); quantizing RMSNorm had gained 7 points at 65536 from 8-warp
consumers. Seen (logs/h200-2026-12-04-s45/call-f): softmax gained 2.5-2.8 points in parts of 32768 on 8 warps,
log_softmax lost 1-2.5 (its pass 2 takes no exp2); wired for softmax only (EXP_PART_MAX_N then, EXP_PART_WARPS).
Session 46: the parts now swap their statistics in one round trip (softmax_sm90.swap_pairs; +6-11 points), which
leaves less for a consumer to hide while it waits: the choice again, every part width and warps for both ops.
Variants: "library", "p{32,64}k_w{4,8}" (parts of that width on consumers of that many warps, both ops). Seen (call i):
log_softmax in parts of 32768 on 4 warps 90.9 / 91.1 against 89.6 / 87.7; softmax's kept (the softmax.py constants).
"--chunks" (prepared in session 46, not yet run): the library's parts on rings of 26 4096-element chunks instead of 13
of 8192 (the same 208 KB; offline sm_90 no spills, 96 registers at 8 warps): a finer release lets the loader refill
sooner while a part's consumer waits, "c4k_w8" and "c4k_w4" (log_softmax's parts take the default warps).
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_softmax_part_warps.py OUT_DIR [--chunks]  (a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import softmax as sm
from rooftop.ops import softmax_sm90

# the plans' keys hold no default warps: a fresh table (log_softmax's parts take the default)
VARIANTS = {"library": []}
VARIANTS.update({f"p{part // 1024}k_w{warps}": [(sm, dict(PART_MAX_N=part, EXP_PART_WARPS=warps)),
                                                (softmax_sm90, dict(CONSUMER_WARPS=warps, _plans={}))]
                 for part in (32768, 65536) for warps in (4, 8)})
CHUNK_VARIANTS = {"library": [], **{f"c4k_w{warps}": [(softmax_sm90, dict(CHUNK=4096, STAGES=26, CONSUMER_WARPS=warps,
                                                                          _plans={})),
                                                      (sm, dict(EXP_PART_WARPS=warps))] for warps in (4, 8)}}
CASES = [(op, N) for op in ("softmax", "log_softmax") for N in (131072, 262144)]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    named = CHUNK_VARIANTS if "--chunks" in sys.argv else VARIANTS
    time_cases(out / "exp-softmax-part-warps.json", {case: named for case in CASES})


if __name__ == "__main__":
    main()
