"""Experiment (session 47): the norms' rows in parts by part width, and rows with a residual in parts below
norm_sm90.PARTS_RESIDUAL_MIN_N, on the H200, bf16, M * N = 2^27.

Session 47's call b: LayerNorm in parts of 32768 won against 65536 (80.1 / 77.4 against 78.2 / 76.9 at 131072 /
262144, same-run copy; a 65536-wide part is 8 chunks, two consumers' parts overflow x's ring of 14), and add_layer_norm
at 524288 (a residual: parts past PARTS_RESIDUAL_MIN_N) 88.5 against 84.4. So: rms_norm's parts of 32768 too
("p32k": rms_norm.PART_MAX_N; the library's 65536), and rows with a residual at 131072 / 262144 in parts ("gparts":
PARTS_RESIDUAL_MIN_N 65536) against the split-words kernels that take them now (add_rms_norm 91.0 / 88.1%,
add_layer_norm 84.4 / 82.9% of copy in the results; PARTS_RESIDUAL_MIN_N was chosen under the old exchange and parts of
65536: add_layer_norm 78.9 / 77.9 against 83.5 / 83.3).
Seen (call c): p32k +0.8 / +2.8 points, gparts +5.8 / +6.1 for add_layer_norm, level / +2.3 for add_rms_norm. Wired:
the library is now p32k / gparts, so these cases time the choices it left ("p64k": PART_MAX_N 65536, "split":
PARTS_RESIDUAL_MIN_N 262144, the split-words kernels' widths again).
"--65536": rows with a residual at 65536 in parts of 32768 ("parts": GLUON_MAX_N 32768, PARTS_RESIDUAL_MIN_N 32768)
against whole rows (a 65536 row with a residual is 8 chunks of x's ring of 10: two consumers' rows overflow it;
add_layer_norm 88.7%, add_rms_norm 92.0% of copy in the results).
Seen (call d): add_layer_norm 92.2 against 91.0, add_rms_norm 93.0 against 94.1: not wired.
"--chunks": the ring in 4096-element chunks (28 buffers; the library's 8192 x 14, norm_sm90.WIDE_CHUNK / WIDE_BUFFERS)
where rows or parts overflow it or nearly (softmax's parts gained 0.4-0.9 points from 4096-element chunks, call a):
a finer release lets the loader refill sooner while a consumer waits.
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_norm_parts.py OUT_DIR [--65536 | --chunks]  (a table last,
exp-norm-parts.json)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import layer_norm as ln
from rooftop.ops import norm_sm90
from rooftop.ops import rms_norm as rn

P64K = (rn, dict(PART_MAX_N=65536))
SPLIT = (norm_sm90, dict(PARTS_RESIDUAL_MIN_N=262144))
CASES = {**{("rms_norm", N): {"library": [], "p64k": [P64K]} for N in (131072, 262144)},
         **{("add_rms_norm", N): {"library": [], "split": [SPLIT], "p64k": [P64K]} for N in (131072, 262144)},
         ("add_rms_norm", 524288): {"library": [], "p64k": [P64K]},
         **{("add_layer_norm", N): {"library": [], "split": [SPLIT]} for N in (131072, 262144)}}
PARTS_AT_65536 = (norm_sm90, dict(PARTS_RESIDUAL_MIN_N=32768))
CASES_65536 = {(op, 65536): {"library": [], "parts": [PARTS_AT_65536, (module, dict(GLUON_MAX_N=32768))]}
               for op, module in (("add_layer_norm", ln), ("add_rms_norm", rn))}
C4K = (norm_sm90, dict(WIDE_CHUNK=4096, WIDE_BUFFERS=28))
CHUNK_CASES = {case: {"library": [], "c4k": [C4K]}
               for case in (("layer_norm", 65536), ("layer_norm", 131072), ("add_layer_norm", 65536),
                            ("add_layer_norm", 131072), ("rms_norm", 131072), ("rms_norm_fp8", 65536))}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    cases = CASES_65536 if "--65536" in sys.argv else CHUNK_CASES if "--chunks" in sys.argv else CASES
    time_cases(out / "exp-norm-parts.json", cases)


if __name__ == "__main__":
    main()
