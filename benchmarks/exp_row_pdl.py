"""Experiment: the row ops' decode kernels launched as programmatic dependents (_support.ROW_PDL) or not, in a chain
shaped like a decoder layer's MLP half at batch 1 (add + RMSNorm -> int4 gate / up GEMV -> SwiGLU -> int4 down GEMV,
8 layers over their own weights, Llama-3-8B's 4096 x 14336), replayed from one CUDA graph; A / B / A / B so that drift
shows. The GEMVs launch as programmatic dependents in both. End to end (e2e_decode.py) the two differ by less than
its run-to-run noise (+-8%, session 27), hence this.
Usage: PYTHONPATH=src python benchmarks/exp_row_pdl.py [--rounds 3]
"""
from __future__ import annotations

import argparse

import torch

import rooftop
from rooftop.bench.timing import graph_replay_us
from rooftop.ops import _support


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=8)
    args = parser.parse_args()
    hidden, inter = 4096, 14336
    x = torch.randn(1, hidden, device="cuda", dtype=torch.bfloat16)
    norm = torch.rand(hidden, device="cuda", dtype=torch.bfloat16) + 0.5
    layers = [(rooftop.quantize_weight(torch.randn(2 * inter, hidden, device="cuda") * hidden**-0.5, 4, 128),
               rooftop.quantize_weight(torch.randn(hidden, inter, device="cuda") * inter**-0.5, 4, 128))
              for _ in range(args.layers)]

    def model():
        h, r = x, torch.zeros_like(x)
        for gate_up, down in layers:
            normed, r = rooftop.rms_norm(h, norm, residual=r)
            h = rooftop.quant_matmul(rooftop.swiglu(rooftop.quant_matmul(normed, gate_up)), down)
        return h

    seen = {}
    for _ in range(args.rounds):
        for pdl in (False, True):
            _support.ROW_PDL = pdl
            _support.clear_plans()
            us = graph_replay_us([model], repeat=20) / args.layers
            seen.setdefault(pdl, []).append(us)
            print(f"row PDL {'on ' if pdl else 'off'}: {us:6.2f} us a layer", flush=True)
    _support.ROW_PDL = True
    for pdl, values in seen.items():
        print(f"row PDL {'on ' if pdl else 'off'}: " + " / ".join(f"{v:.2f}" for v in values) + " us a layer")


if __name__ == "__main__":
    main()
