"""Experiment (session 44): quantizing RMSNorm (fp8) without and with a residual, bf16, M * N = 2^27, on the H200.
Session 44's call d results rows: without a residual 79.7-86.3% of copy at 1024-16384 by do_bench (68.9 at 8192) where
with one the same kernels run 90.5-98.7.
Call e (logs/h200-2026-12-04-s44/call-e) timed the on-chip kernel taking max |x (offset + w)| beside the sum of squares
(the weight loaded before either, one scale a row after, as the Gluon kernel does; it took max |y| after y): without a
residual 81.9 / 89.7 at 1024, 82.2 / 94.1 at 2048, 77.6 / 92.0 at 4096, 70.5 / 84.9 at 8192; with 8 values a thread
67-74; the Gluon kernel from 1024 20.7 / 40.5 / 86.0 / 88.2 at 1024-8192; on chip to 32768 77.8 / 64.4 at 16384 /
32768 (Gluon 88). The library is now the first of those, the Gluon kernel past 4096 without a residual.
Call f: "gluon_all" (the Gluon kernel from 512) and "onchip_wide" (on chip to 32768) lost at 1024-32768; whole rows
("p64k") and parts of 16384 past 32768 too.
Session 45: the Gluon kernel's consumer partitions of 8 warps ("w8", norm_sm90.CONSUMER_WARPS; 4 in the library):
quantizing rows without a residual run 85-87% of copy at 8192-32768 on 8 consumer warps an SM (~12 instructions an
element); past 32768 also whole parts of 65536 on 8 warps ("w8_p64k"; session 12's item 96: 85.1 at 64K with a
residual). Call b (logs/h200-2026-12-04-s45/call-b): "w8" level or lower everywhere (rms_norm_fp8 88.5-90.3 / 87.7-89.1
at 8192-32768), "w8_p64k" 84.5 against 77.2 at 65536, 70-73 against 77 (graph) past. Wired: rows without a residual
whole to rms_norm.QUANT_WHOLE_MAX_N, on QUANT_WIDE_WARPS warps past QUANT_PART_MAX_N. Now at 40960-65536 the library
against whole rows on 4 warps ("w4_whole") and parts of 32768 on 4 ("parts32k", session 44's library). Call c: library
/ w4_whole / parts32k 84.2 / 81.9 / 67.4 at 40960, 85.2 / 80.7 / 71.6 at 49152, 85.4 / 81.3 / 72.4 at 57344, 84.6 /
79.0 / 76.1 at 65536 (do_bench). Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run
copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_quant_norm_rows.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both, save_both
from exp_resident_params import calls
from rooftop.ops import rms_norm as rn

# width -> variants: name -> [(module, switches), ..]; rms_norm_fp8 at every width, add_rms_norm_fp8 at 65536
WHOLE = {"library": [], "w4_whole": [(rn, dict(QUANT_WIDE_WARPS=4))], "parts32k": [(rn, dict(QUANT_WHOLE_MAX_N=32768))]}
WIDTHS = {N: WHOLE for N in (40960, 49152, 57344, 65536)} | {N: {"library": []} for N in (131072, 262144)}
OPS = {"rms_norm_fp8": tuple(WIDTHS), "add_rms_norm_fp8": (65536,)}


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    rows = []
    for op, widths in OPS.items():
        for N in widths:
            x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
            res = torch.randn_like(x)
            w = torch.rand(N, device="cuda", dtype=torch.bfloat16) + 0.5
            call, reference, nbytes = calls(op, x, w, w, res)
            ref = reference()
            for name, switches in WIDTHS[N].items():
                with contextlib.ExitStack() as stack:
                    for module, values in switches:
                        stack.enter_context(patched(module, **values))
                    q, scale = call()[:2]
                    err = float((q.double() * scale.double() - ref).abs().max() / ref.abs().max())
                    record_both(rows, copy_gbps, nbytes, both(call), op=op, N=N, provider=name, err=err)
            del x, res, ref
            torch.cuda.empty_cache()
        save_both(out / "exp-quant-norm-rows.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [(op, N) for op, widths in OPS.items() for N in widths])

if __name__ == "__main__":
    main()
