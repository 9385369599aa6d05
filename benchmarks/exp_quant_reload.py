"""Experiment (session 48): quantizing RMSNorm rows without a residual on the reload kernel (rms_norm.py's
_rms_norm_reload_kernel with QUANT: pass 1 sums the squares with every tile's loads up front, a rolled loop over the
row read again from L1 / L2 takes max |x (offset + w)|, the last pass stores y / s), against the Gluon path that
took them (norm_sm90: 83.5-86.5% of the 1 GiB copy by the results harness at 8192-65536; the issue asks 90).
Predicted: the reload kernel's plain RMSNorm reads 96-99% of a same-run copy at 16384-65536; with one more pass
from L1 and w read twice, ~93-95 (item 278 spilled by hoisting pass 1's w loads: those stay out of pass 1 here).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_quant_reload.py OUT_DIR   (GPU; a table last)
"""
from __future__ import annotations

import sys
from pathlib import Path

from exp_row_tail import time_cases
from rooftop.ops import rms_norm as rn

WIDTHS = (8192, 16384, 32768, 40960, 49152, 65536)
VARIANTS = {"library": [], "gluon": [(rn, dict(RELOAD_QUANT_MAX_N=0))]}

if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    time_cases(out / "exp-quant-reload.json", {("rms_norm_fp8", N): VARIANTS for N in WIDTHS})
