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
residual). Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_quant_norm_rows.py OUT_DIR  (prints a table last)
"""
from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import torch

from exp_norm_reload import ELEMENTS, both, copy_both, patched, print_both, record_both
from exp_resident_params import calls
from rooftop.ops import norm_sm90
from rooftop.ops import rms_norm as rn

W8 = (norm_sm90, dict(CONSUMER_WARPS=8))
# width -> variants: name -> [(module, switches), ..]; rms_norm_fp8 at every width, add_rms_norm_fp8 from 16384
WIDTHS = {N: {"library": [], "w8": [W8]} for N in (8192, 16384, 32768)} | {
    N: {"library": [], "w8": [W8], "w8_p64k": [W8, (rn, dict(QUANT_PART_MAX_N=65536))]} for N in (65536, 131072, 262144)}
OPS = {"rms_norm_fp8": tuple(WIDTHS), "add_rms_norm_fp8": (16384, 32768, 65536, 131072)}


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
        (out / "exp-quant-norm-rows.json").write_text(json.dumps(dict(copy_GBps=copy_gbps, rows=rows), indent=1))
    print_both(rows, copy_gbps, [(op, N) for op, widths in OPS.items() for N in widths])

if __name__ == "__main__":
    main()
