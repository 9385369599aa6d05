r"""Experiment: moe_experts' sorted path (ops/moe.py's docstring: pairs sorted by expert, a grouped GEMM with the gate,
biases and router weights fused) at prefill sizes, beside transformers' grouped_mm experts, the eager loop and the
grouped / per-pair paths where they take the call; then whole models' prefill, stock against patched.

Session 64 (journal 460): before it patch_model handed calls past 256 (token, expert) pairs back to the model's own
experts (grouped_mm) or, for gpt-oss's re-laid and for quantized experts, to the eager loop: a gpt-oss-shaped model (4
layers) prefilled 2048 tokens in 42.6 ms patched against stock's 37.4 (H100, session 63).

--ops: Mixtral-8x7B's experts (E 8, k 2, H 4096, I 14336), Qwen3-30B-A3B's (128, 8, 2048, 768) and gpt-oss-20b's (32,
4, 2880, 2880; biased, clamped gate) at --tokens, random routing; bf16 and, with --quant, fp8 / int8 / int4 codes
(int4: groups of 128, gpt-oss's 64; sorted against the dequantizing eager loop); the sorted path at several launches
(BLOCK_M, gate / up's and down's (BLOCK_N, BLOCK_K, warps, stages)). TFLOP/s: 6 k T H I flops. Errors against the
fp32 eager loop on fp32 copies.
--layout: the sorted path's layout (moe._sorted_slots) at --tokens, random routing, for each of --slots-chunks (pairs a
program sorts), beside the shipped bf16 call (to 32768 tokens): its share of the op. Session 75 (journal item 538): the
one-kernel layout before it (each program read all k T indices) took 106.6 us at 512 tokens of Qwen3-30B-A3B's, 18%
of the op.
--models: the prefill of a gpt-oss-shaped model (4 layers of gpt-oss-20b's shapes; eager attention, as transformers
5.24 runs it) and a Mixtral-shaped one (4 layers of Mixtral-8x7B's), stock and patched, bf16, random weights, batch 1:
CUDA events, the median of --repeats after 2 warm-ups, the models in turn (timing.alternating_ms); --names picks
models; --profile adds, per prompt, each model's ten costliest kernels and torch ops by host time (torch.profiler, one
call after the timing) and where its call synchronises the host (torch's sync debug mode: file and line of each
synchronising torch call).
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_moe_prefill.py OUT [--ops] [--layout] [--models] [--quant]
[--profile]
"""
import argparse
import collections
import copy
import functools
import json
import statistics
from pathlib import Path

import torch

from rooftop.bench.timing import alternating_ms, bench_ms
from rooftop.ops import _support, moe

MODELS = {"mixtral": (8, 2, 4096, 14336), "qwen3": (128, 8, 2048, 768), "gpt-oss": (32, 4, 2880, 2880)}
SHIPPED_LAUNCHES = moe.SORTED_LAUNCHES
# (BLOCK_M, gate / up launch, down launch), each forced alone (moe._sorted_launch: blocks no longer than the run)
LAUNCHES = ((64, (64, 64, 4, 3), (128, 64, 4, 3)),
            (128, (128, 64, 8, 3), (256, 64, 8, 3)),
            (128, (128, 64, 8, 4), (256, 64, 8, 4)),
            (128, (64, 64, 4, 3), (256, 64, 8, 3)),
            (128, (128, 64, 8, 3), (128, 64, 4, 3)),
            (64, (128, 64, 8, 3), (256, 64, 8, 3)))
SHIPPED_PATH = moe._path
SHIPPED_SLOTS_CHUNK = moe.SLOTS_CHUNK


def sorted_path(launch=None):
    """moe_experts with its sorted path forced at `launch` alone."""
    def run(*args, **kwargs):
        moe._path, moe.SORTED_LAUNCHES = (lambda *a: "sorted"), (launch,)
        return moe.moe_experts(*args, **kwargs)
    return run


def shipped_dispatch(*args, **kwargs):
    """moe_experts as shipped (its own choice of path)."""
    moe._path, moe.SORTED_LAUNCHES = SHIPPED_PATH, SHIPPED_LAUNCHES
    return moe.moe_experts(*args, **kwargs)



def experts_of(name, quant, device="cuda"):
    """The experts' tensors (bf16, or codes and scales) and moe_experts' keyword arguments for them."""
    E, k, H, I = MODELS[name]
    torch.manual_seed(0)
    gate_up = torch.randn(E, 2 * I, H, device=device, dtype=torch.bfloat16) * H ** -0.5
    down = torch.randn(E, H, I, device=device, dtype=torch.bfloat16) * I ** -0.5
    kwargs = {}
    if name == "gpt-oss":
        kwargs = dict(activation="swiglu_oai", gate_up_bias=torch.randn(E, 2 * I, device=device, dtype=torch.bfloat16),
                      down_bias=torch.randn(E, H, device=device, dtype=torch.bfloat16))
    if quant:
        gate_up, gate_up_scale, down, down_scale = moe.quantize_experts(gate_up, down, quant,
                                                                        64 if name == "gpt-oss" else 128)
        kwargs.update(gate_up_scale=gate_up_scale, down_scale=down_scale)
    return gate_up, down, kwargs


def chosen(args):
    """MODELS' entries that --names keeps: (name, (E, k, H, I))."""
    return [(name, shape) for name, shape in MODELS.items() if not args.names or name in args.names]


def routed_inputs(T, E, k, H):
    """T tokens' x (bf16), random top-k routing over E experts and its softmax weights, drawn from a generator seeded
    by T."""
    g = torch.Generator("cuda").manual_seed(T)
    x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16, generator=g)
    index = torch.rand(T, E, device="cuda", generator=g).argsort(-1)[:, :k].contiguous()
    return x, index, torch.softmax(torch.randn(T, k, device="cuda", generator=g), -1)


def fp32_reference(x, index, weights, gate_up, down, kwargs):
    """The eager loop on fp32 copies (the codes dequantized)."""
    kw = {key: (v.float() if isinstance(v, torch.Tensor) else v) for key, v in kwargs.items()
          if key not in ("gate_up_scale", "down_scale")}
    if "gate_up_scale" in kwargs:
        gate_up = moe.dequantize_experts(gate_up, kwargs["gate_up_scale"])
        down = moe.dequantize_experts(down, kwargs["down_scale"])
    return moe.moe_experts_eager(x.float(), index, weights, gate_up.float(), down.float(), **kw)


def ops(args, rows):
    peak = None
    try:
        from rooftop.hardware import measure_ceilings
        peak = measure_ceilings().bf16_mm_TFLOPs
    except Exception as err:  # noqa: BLE001 - a figure to print beside, not needed
        print("no ceilings:", err)
    grouped_mm = moe._grouped_mm_peer()
    for quant in [None] + args.quant:
        for name, (E, k, H, I) in chosen(args):
            gate_up, down, kwargs = experts_of(name, quant)
            for T in args.tokens:
                x, index, weights = routed_inputs(T, E, k, H)
                ref = fp32_reference(x, index, weights, gate_up, down, kwargs)
                providers = [("shipped", shipped_dispatch)] + [
                    ("sorted m{} gu{}-{}-{}-{} d{}-{}-{}-{}".format(m, *gu, *dn), sorted_path((m, gu, dn)))
                    for m, gu, dn in (LAUNCHES if quant is None or args.all_launches else LAUNCHES[:2])]
                providers.append(("eager loop", moe.moe_experts_eager))
                if grouped_mm is not None and quant is None and name != "gpt-oss":
                    providers.append(("grouped_mm", lambda *a, **kw: grouped_mm(*a)))
                flops = 6 * T * k * H * I
                for provider, fn in providers:
                    _support.clear_plans()
                    try:
                        out = fn(x, index, weights, gate_up, down, **kwargs)
                        err = float((out.float() - ref).norm() / ref.norm())
                        ms = bench_ms(lambda: fn(x, index, weights, gate_up, down, **kwargs))
                    except Exception as exc:  # noqa: BLE001 - a launch that does not fit: recorded, not fatal
                        print(f"{name} T {T} {provider}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                        continue
                    tflops = flops / ms / 1e9
                    rows.append(dict(model=name, quant=quant, T=T, E=E, k=k, H=H, I=I, provider=provider, ms=ms,
                                     tflops=tflops, pct_of_peak=tflops / peak * 100 if peak else None, rel_err=err))
                    print(f"{name:8s} {quant or 'bf16':4s} T {T:5d} {provider:34s} {ms:8.3f} ms {tflops:6.1f} TFLOP/s"
                          f"  err {err:.1e}", flush=True)
                    moe._path, moe.SORTED_LAUNCHES = SHIPPED_PATH, SHIPPED_LAUNCHES
                del ref
            torch.cuda.empty_cache()


def layout(args, rows):
    for name, (E, k, H, _) in chosen(args):
        gate_up, down, kwargs = experts_of(name, None)
        for T in args.tokens:
            x, index, weights = routed_inputs(T, E, k, H)
            block_m = moe._sorted_launch(T * k, E, torch.bfloat16)[0]
            slots_ms = {}
            for chunk in args.slots_chunks:
                moe.SLOTS_CHUNK = chunk
                slots_ms[chunk] = bench_ms(lambda: moe._sorted_slots(index, E, block_m))
            moe.SLOTS_CHUNK = SHIPPED_SLOTS_CHUNK
            op_ms = None
            if T <= 32768:
                op_ms = bench_ms(lambda: shipped_dispatch(x, index, weights, gate_up, down, **kwargs))
            for chunk, ms in slots_ms.items():
                rows.append(dict(model=name, T=T, pairs=T * k, block_m=block_m, provider=f"layout chunk {chunk}",
                                 ms=ms, op_ms=op_ms))
                share = f"  op {op_ms:8.3f} ms ({ms / op_ms * 100:5.1f}%)" if op_ms else ""
                print(f"{name:8s} T {T:6d} pairs {T * k:7d} chunk {chunk:5d} layout {ms * 1e3:9.1f} us{share}",
                      flush=True)
        torch.cuda.empty_cache()


def models(args, rows):
    import transformers

    from e2e_decode import GPT_OSS, MIXTRAL_EXPERTS, SIZES
    from rooftop.integrations.hf import patch_model

    moe._path, moe.SORTED_LAUNCHES = SHIPPED_PATH, SHIPPED_LAUNCHES
    builds = {
        "gpt-oss": lambda: transformers.GptOssForCausalLM(transformers.GptOssConfig(
            num_hidden_layers=4, max_position_embeddings=8192, **GPT_OSS["8b"])),
        "mixtral": lambda: transformers.MixtralForCausalLM(transformers.MixtralConfig(
            num_hidden_layers=4, max_position_embeddings=8192, **SIZES["8b"], **MIXTRAL_EXPERTS)),
    }
    for name, build in builds.items():
        if args.names and name not in args.names:
            continue
        torch.manual_seed(0)
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        with torch.device("cuda"):  # made where it runs: no 20 GB of fp32 weights drawn on the host
            stock = build().eval()
        torch.set_default_dtype(default)
        stock.config._attn_implementation = "eager" if name == "gpt-oss" else "sdpa"
        patched = copy.deepcopy(stock)
        patch_model(patched)
        for S in args.prompts:
            ids = torch.randint(0, 1000, (1, S), device="cuda")
            with torch.inference_mode():
                logits = [m(ids, use_cache=False).logits[0, -1].float() for m in (stock, patched)]
            err = float((logits[1] - logits[0]).norm() / logits[0].norm())
            with torch.inference_mode():
                times = alternating_ms({label: functools.partial(model, ids, use_cache=False)
                                        for label, model in (("stock", stock), ("patched", patched))},
                                       rounds=args.repeats + 2)
            for label, ts in times.items():
                ts = ts[2:]  # the warm-ups
                rows.append(dict(model=f"{name} model (4 layers)", T=S, provider=label, ms=statistics.median(ts),
                                 runs=ts, logits_rel_err=err))
                print(f"{name:8s} model S {S:5d} {label:8s} {statistics.median(ts):8.2f} ms  "
                      f"(runs {', '.join(f'{t:.1f}' for t in ts)})  logits err {err:.1e}", flush=True)
            if args.profile:
                for label, model in (("stock", stock), ("patched", patched)):
                    print(f"{name} model S {S} {label}: costliest kernels", flush=True)
                    print(costliest_kernels(functools.partial(model, ids, use_cache=False)), flush=True)
                    print(f"{name} model S {S} {label}: host synchronisations", flush=True)
                    for site, count in host_syncs(functools.partial(model, ids, use_cache=False)).most_common():
                        print(f"  {count:4d}  {site}", flush=True)
        del stock, patched
        torch.cuda.empty_cache()


def costliest_kernels(fn, count=10):
    """fn's ten costliest CUDA kernels over one call and its ten costliest torch ops by host time (torch.profiler),
    two tables."""
    from torch.profiler import ProfilerActivity, profile

    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    table = prof.key_averages()
    return "\n".join(table.table(sort_by=key, row_limit=count, max_name_column_width=70)
                     for key in ("self_cuda_time_total", "self_cpu_time_total"))


def host_syncs(fn) -> collections.Counter:
    """Where one call of fn synchronises the host: torch's sync debug mode warns at each synchronising torch call
    (nonzero, .item(), a copy to the host); "file:line" of the Python line that made it -> count."""
    import warnings

    previous = torch.cuda.get_sync_debug_mode()
    with torch.inference_mode(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    return collections.Counter(f"{w.filename}:{w.lineno}" for w in caught if "synchroniz" in str(w.message))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--ops", action="store_true")
    parser.add_argument("--layout", action="store_true")
    parser.add_argument("--slots-chunks", type=lambda v: [int(c) for c in v.split(",")], default=[moe.SLOTS_CHUNK],
                        help="--layout: pairs a program sorts, powers of two")
    parser.add_argument("--models", action="store_true")
    parser.add_argument("--quant", nargs="?", const=list(moe.EXPERT_QUANTS), default=[],
                        type=lambda v: [q for q in v.split(",") if q],
                        help="--ops with quantized experts too: these formats (alone: all of EXPERT_QUANTS)")
    parser.add_argument("--all-launches", action="store_true", help="every launch for quantized experts too")
    parser.add_argument("--tokens", type=lambda v: [int(t) for t in v.split(",")], default=[32, 128, 512, 2048, 4096])
    parser.add_argument("--prompts", type=lambda v: [int(t) for t in v.split(",")], default=[64, 256, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--names", type=lambda v: v.split(","), default=None, help="these models only")
    parser.add_argument("--profile", action="store_true", help="--models: each model's costliest kernels too")
    args = parser.parse_args()
    rows = []
    Path(args.out).mkdir(parents=True, exist_ok=True)
    try:
        if args.ops:
            ops(args, rows)
        if args.layout:
            layout(args, rows)
        if args.models:
            models(args, rows)
    finally:
        Path(args.out, "exp-moe-prefill.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
