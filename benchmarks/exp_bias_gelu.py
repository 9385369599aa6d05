"""Experiment: bias_gelu's launch shape (activations.rows_config) at the widths where it runs just under 90% of copy
(H200, bf16, M * N = 2^27, do_bench: 89.9% at N = 32768 and 65536, 90.3-90.7% at 131072 / 262144, 94.6% at 1024).
The kernel issues ~18.7 instructions an element (erf form, offline sm_90), so a launch shape that trims the
per-element overhead (addresses, the bias shared by more rows) or the bias' reads may gain the last percent.
Session 10 (journal item 100): values a thread 16 / 32 / 64 and tiles of 8192 / 16384: nothing kept.
Session 47: narrower column blocks of more rows ("bn<BIAS_BLOCK_N>": tiles of 8192 values, 8192 / BIAS_BLOCK_N rows;
the library's 4096 x 2): a program reads BIAS_BLOCK_N bias values for 8192 of x (half as many at 4096, an eighth at
1024, where 1024-wide rows run 94.6%), and a thread's bias values serve 4 of its rows instead of 2.
Session 51: is 65536 odd for the DRAM (every row 128 KB apart, so the programs side by side, a column block of
consecutive rows, read addresses equal modulo 128 KB) or for the instructions? "diagonal": the column block turned by
the row block (programs side by side read different offsets of their rows); "nocap": v = (1 - t) / 0.27 with
t = 1 / (1 + 0.27 |x|), finite at |x| = inf without the cap on |x| (one FMNMX an element fewer; its precision near
x = 0 is worse: an experiment only); "tanh": the tanh form (11.6 instructions an element against 18.7).
Variants of the kernel's source are built by text substitution and imported from OUT_DIR (`source_variant`).
Timed as exp_resident_params.py times (do_bench and graph replay, % of a same-run copy, error beside).
Usage (H200): PYTHONPATH=src:benchmarks python benchmarks/exp_bias_gelu.py OUT_DIR   (prints a table last)
"""
from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

import rooftop
from exp_norm_reload import ELEMENTS, copy_both, print_both, save_both, time_variants
from rooftop.ops import activations as act

WIDTHS = (16384, 32768, 65536, 131072, 262144)
# name: [(old, new), ..] substitutions of activations.py's source
SOURCE_VARIANTS = {
    "diagonal": [("row_block, col_block = tl.program_id(0), tl.program_id(1)",
                  "row_block = tl.program_id(0)\n        col_block = (tl.program_id(1) + row_block) % tl.num_programs(1)")],
    "nocap": [("a = tl.minimum(tl.abs(x), 1e30)\n        v = a * _reciprocal(1.0 + 0.27 * a, APPROX)",
               "v = 3.7037037037037037 - 3.7037037037037037 * _reciprocal(1.0 + 0.27 * tl.abs(x), APPROX)")],
}


KERNEL_PARTS = ("_reciprocal", "to_fp32", "_activate", "_act_rows_kernel")


def source_variant(folder: Path, name: str):
    """The row kernel and the helpers it calls (KERNEL_PARTS) with SOURCE_VARIANTS[name]'s substitutions, as a module
    written to and imported from `folder` (Triton reads a kernel's source from its file)."""
    source = "import triton\nimport triton.language as tl\nfrom rooftop.ops._support import await_previous\n\n\n"
    source += "\n\n".join(inspect.getsource(getattr(act, part).fn) for part in KERNEL_PARTS)
    for old, new in SOURCE_VARIANTS[name]:
        if source.count(old) != 1:
            raise RuntimeError(f"activations.py changed: {old!r} found {source.count(old)} times")
        source = source.replace(old, new)
    path = folder / f"activations_{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"activations_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    copy_gbps = copy_both()
    variants = {"library": [], **{name: [(act, dict(_act_rows_kernel=source_variant(out, name)._act_rows_kernel))]
                                  for name in SOURCE_VARIANTS}}
    rows = []
    for N in WIDTHS:
        x = torch.randn(ELEMENTS // N, N, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(N, device="cuda", dtype=torch.bfloat16)
        ref = F.gelu(x.double() + bias.double())
        time_variants(rows, copy_gbps, 2 * x.nbytes + bias.nbytes, lambda: rooftop.bias_gelu(x, bias), ref,
                      variants, op="bias_gelu", N=N)
        time_variants(rows, copy_gbps, 2 * x.nbytes + bias.nbytes,
                      lambda: rooftop.bias_gelu(x, bias, approximate="tanh"),
                      F.gelu(x.double() + bias.double(), approximate="tanh"), {"tanh": []}, op="bias_gelu", N=N)
        save_both(out / "exp-bias-gelu.json", copy_gbps, rows)
    print_both(rows, copy_gbps, [("bias_gelu", N) for N in WIDTHS])


if __name__ == "__main__":
    main()
