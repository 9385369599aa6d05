"""decode_attention's launch parameters on the GPU, beside SDPA's backends, in one process.

Cases: Llama-3-8B's attention (32 query heads over 8 kv heads, D = 128), bf16, one new token a sequence over
full caches of L keys, (B, L) from a short single sequence to many. Per case: SDPA flash / efficient / cuDNN over
the contiguous cache, then rooftop.decode_attention (contiguous, and paged with 16-key pages) under each
launch-parameter setting (module constants BLOCK_N, NUM_WARPS, NUM_STAGES, MIN_SPLIT_KEYS patched; the split
count follows the kernel's residency; paged under every setting, and with 128- and 256-key pages under the default),
timed with triton.testing.do_bench (median, L2 flushed) and checked against SDPA (relative error). Bandwidth
is the cost model's bytes (the caches read once) over the time; % of the measured copy bandwidth.
Writes OUT_DIR/exp-decode-attention.json and prints a table last: per case the default's and the best
setting's GB/s and their ratio to the fastest SDPA backend.
Usage: PYTHONPATH=src python benchmarks/exp_decode_attention.py OUT_DIR [--quick] [--default-only]
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
SETTINGS = [dict(BLOCK_N=n, NUM_WARPS=w, NUM_STAGES=s)
            for n, w, s in itertools.product((32, 64, 128), (4, 8), (2, 3, 4))]
SETTINGS += [dict(MIN_SPLIT_KEYS=n) for n in (128, 256, 512)]
SMALL_PAGE = decode_mod.PAGE_SIZE  # the registry's paged cases' (16 keys)
LARGER_PAGES = (128, 256)
SDPA = {"sdpa_flash": SDPBackend.FLASH_ATTENTION, "sdpa_efficient": SDPBackend.EFFICIENT_ATTENTION,
        "sdpa_cudnn": SDPBackend.CUDNN_ATTENTION}


def rel(out, ref) -> float:
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--default-only", action="store_true", help="only the default setting (every page size)")
    args = parser.parse_args()
    copy = measure_ceilings().copy_GBps
    defaults = {k: getattr(decode_mod, k) for k in ("BLOCK_N", "NUM_WARPS", "NUM_STAGES", "MIN_SPLIT_KEYS")}
    rows = []
    warm = torch.ones(2**26, device="cuda")
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

        bench_ms(lambda: warm.mul_(1.0), warmup_ms=100, rep_ms=10)  # clocks up after the compiles
        for name, backend in SDPA.items():
            def sdpa(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            record(name, None, sdpa)
        for setting in [{}] + ([] if args.default_only else SETTINGS):
            for key, value in {**defaults, **setting}.items():
                setattr(decode_mod, key, value)
            clear_plans()
            record("rooftop", setting, lambda: decode_mod.decode_attention(q, k, v, seqlens))
            record("rooftop", setting, lambda: decode_mod.decode_attention(q, kp, vp, seqlens, table), paged=True)
        for key, value in defaults.items():
            setattr(decode_mod, key, value)
        clear_plans()
        for page_size in LARGER_PAGES:  # the default setting over larger pages (whole key tiles a page)
            decode_mod.PAGE_SIZE = page_size
            _, kp, vp, _, table = decode_mod._make_decode_inputs(shape, torch.bfloat16, "cuda", paged=True)
            record("rooftop", {"PAGE_SIZE": page_size}, lambda: decode_mod.decode_attention(q, kp, vp, seqlens, table),
                   paged=True)
        decode_mod.PAGE_SIZE = SMALL_PAGE
        print(f"B={B} L={L} done at {time.strftime('%H:%M:%S')}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "exp-decode-attention.json").write_text(json.dumps(dict(copy_GBps=copy, defaults=defaults, rows=rows),
                                                              indent=1))
    print(f"{'B':>4} {'L':>7} {'best sdpa':>16} {'us':>7} | {'default':>7} {'%copy':>6} {'best':>7} {'%copy':>6} "
          f"{'x sdpa':>6} | {'paged':>7} {'best':>7} | best setting; paged's")
    for B, L in QUICK_CASES if args.quick else CASES:
        case = [r for r in rows if r["B"] == B and r["L"] == L and "us" in r]
        sdpa = min((r for r in case if r["provider"] != "rooftop"), key=lambda r: r["us"], default=None)
        picks = []
        for paged in (False, True):
            ours = [r for r in case if r["provider"] == "rooftop" and r["paged"] == paged]
            picks += [next((r for r in ours if r["setting"] == {}), None),
                      min(ours, key=lambda r: r["us"], default=None)]
        if not (sdpa and all(picks)):
            print(B, L, "missing rows")
            continue
        default, best, paged, paged_best = picks
        print(f"{B:>4} {L:>7} {sdpa['provider']:>16} {sdpa['us']:7.1f} | {default['us']:7.1f} "
              f"{default['pct_copy']:6.1f} "
              f"{best['us']:7.1f} {best['pct_copy']:6.1f} {sdpa['us'] / best['us']:6.2f} | {paged['us']:7.1f} "
              f"{paged_best['us']:7.1f} | {best['setting']}; {paged_best['setting']}")
        by_page = {r["setting"].get("PAGE_SIZE", SMALL_PAGE): r["us"] for r in case
                   if r["provider"] == "rooftop" and r["paged"] and set(r["setting"]) <= {"PAGE_SIZE"}}
        print(f"{'':>12} paged, default setting, us by page size: {by_page}")
    errors = [r for r in rows if "error" in r or (r.get("rel_err") or 0) > 2e-2]
    print(f"{len(errors)} failed or mismatched runs", *(str(r) for r in errors[:5]), sep="\n")


if __name__ == "__main__":
    main()
