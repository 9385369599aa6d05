"""decode_attention's launch parameters on the GPU, beside SDPA's backends, in one process.

Cases: Llama-3-8B's attention (32 query heads over 8 kv heads, D = 128), bf16, one new token a sequence over
full caches of L keys, (B, L) from a short single sequence to many. Per case: SDPA flash / efficient / cuDNN over
the contiguous cache, then rooftop.decode_attention (contiguous, and paged with 16-key pages) under each
launch-parameter setting (module constants BLOCK_N, NUM_WARPS, NUM_STAGES, SPLIT_WAVE_PROGRAMS, MIN_SPLIT_KEYS
patched; paged under the default and the split settings),
timed with triton.testing.do_bench (median, L2 flushed) and checked against SDPA (relative error). Bandwidth
is the cost model's bytes (the caches read once) over the time; % of the measured copy bandwidth.
Writes OUT_DIR/exp-decode-attention.json and prints a table last: per case the default's and the best
setting's GB/s and their ratio to the fastest SDPA backend.
Usage: PYTHONPATH=src python benchmarks/exp_decode_attention.py OUT_DIR [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import rooftop.ops.decode_attention as decode_mod
from rooftop.bench.timing import bench_ms
from rooftop.hardware import measure_ceilings
from rooftop.ops._support import clear_plans

CASES = ((1, 512), (1, 4096), (1, 32768), (1, 131072), (8, 8192), (32, 4096), (128, 1024))
QUICK_CASES = ((1, 4096), (1, 131072), (32, 4096))
HEADS = 32
HEAD_DIM = 128
SETTINGS = [dict(BLOCK_N=n, NUM_WARPS=w, NUM_STAGES=s, SPLIT_WAVE_PROGRAMS=4)
            for n, w, s in itertools.product((32, 64, 128), (4, 8), (2, 3, 4))]
SETTINGS += [dict(SPLIT_WAVE_PROGRAMS=p, MIN_SPLIT_KEYS=n) for p, n in itertools.product((1, 2, 4, 8), (64, 128, 256, 512))
             if (p, n) != (4, 256)]
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}


def rel(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    copy = measure_ceilings().copy_GBps
    defaults = {k: getattr(decode_mod, k) for k in ("BLOCK_N", "NUM_WARPS", "NUM_STAGES", "SPLIT_WAVE_PROGRAMS",
                                                   "MIN_SPLIT_KEYS")}
    rows = []
    for B, L in QUICK_CASES if args.quick else CASES:
        shape = (B, HEADS, L, HEAD_DIM)
        nbytes = decode_mod.decode_attention_cost(shape, torch.bfloat16).bytes
        q, k, v, seqlens = decode_mod._make_decode_inputs(shape, torch.bfloat16, "cuda")
        _, kp, vp, _, table = decode_mod._make_decode_inputs(shape, torch.bfloat16, "cuda", paged=True)
        ref = None

        def record(provider, setting, fn, paged=False):
            nonlocal ref
            try:
                out = fn()
                if ref is None:
                    ref = out
                err = rel(out, ref) if not paged else None
                ms = bench_ms(fn)
                rows.append(dict(B=B, L=L, provider=provider, setting=setting, paged=paged, us=ms * 1e3,
                                 GBps=nbytes / ms / 1e6, pct_copy=100 * nbytes / ms / 1e6 / copy, rel_err=err))
            except Exception as e:  # a failing provider or setting is recorded, the run goes on
                rows.append(dict(B=B, L=L, provider=provider, setting=setting, paged=paged,
                                 error=f"{type(e).__name__}: {str(e)[:200]}"))

        for name, backend in SDPA.items():
            def sdpa(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            record(name, None, sdpa)
        for setting in [{}] + SETTINGS:
            for key, value in {**defaults, **setting}.items():
                setattr(decode_mod, key, value)
            clear_plans()
            record("rooftop", setting, lambda: decode_mod.decode_attention(q, k, v, seqlens))
            if not setting or "MIN_SPLIT_KEYS" in setting:
                record("rooftop", setting, lambda: decode_mod.decode_attention(q, kp, vp, seqlens, table), paged=True)
        for key, value in defaults.items():
            setattr(decode_mod, key, value)
        clear_plans()
        print(f"B={B} L={L} done at {time.strftime('%H:%M:%S')}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "exp-decode-attention.json").write_text(json.dumps(dict(copy_GBps=copy, defaults=defaults, rows=rows),
                                                              indent=1))
    print(f"{'B':>4} {'L':>7} {'best sdpa':>16} {'us':>8} {'default us':>10} {'%copy':>6} {'best paged':>10} "
          f"{'best us':>8} {'%copy':>6} {'x sdpa':>6}  best setting")
    for B, L in QUICK_CASES if args.quick else CASES:
        case = [r for r in rows if r["B"] == B and r["L"] == L and "us" in r]
        sdpa = min((r for r in case if r["provider"] != "rooftop"), key=lambda r: r["us"], default=None)
        ours = [r for r in case if r["provider"] == "rooftop" and not r["paged"]]
        default = next((r for r in ours if r["setting"] == {}), None)
        paged = min((r for r in case if r["paged"]), key=lambda r: r["us"], default=None)
        best = min(ours, key=lambda r: r["us"], default=None)
        if not (sdpa and default and best):
            print(B, L, "missing rows")
            continue
        print(f"{B:>4} {L:>7} {sdpa['provider']:>16} {sdpa['us']:8.1f} {default['us']:10.1f} {default['pct_copy']:6.1f} "
              f"{paged['us'] if paged else float('nan'):10.1f} {best['us']:8.1f} {best['pct_copy']:6.1f} "
              f"{sdpa['us'] / best['us']:6.2f}  {best['setting']}")
    errors = [r for r in rows if "error" in r or (r.get("rel_err") or 0) > 2e-2]
    print(f"{len(errors)} failed or mismatched runs", *(str(r) for r in errors[:5]), sep="\n")


if __name__ == "__main__":
    main()
