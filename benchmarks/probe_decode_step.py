"""Where a graphed decode step of e2e_decode.py's model spends its time, kernel by kernel (session 28: a step ran at
50% of its weights' floor for stock, 47% for patched + int4: ~0.5 ms a step that the weights do not explain).
Builds the 8-layer Llama-3-8B-shaped model (random weights) stock and patched + int4 (also with the step
torch.compile'd, as e2e_decode.py --compile; the patched steps' greedy token by rooftop.row_argmax), prefills a
128-token prompt into a static cache, captures one decode step in a CUDA graph, and profiles 5 replays (CUPTI records
the graph's kernels); prints the step's time (replays timed alone), the kernels' sum, and each kernel's GPU time and
calls a step.
Usage: PYTHONPATH=src:benchmarks python benchmarks/probe_decode_step.py [--layers 8] [--top 25] [--cache-len N]
[--merge-into RESULTS]
"""
from __future__ import annotations

import argparse
import copy
import json
import re

import torch

from e2e_decode import SIZES, GraphedDecode

STEPS = 5
# a kernel's part of the step, by its name (the first pattern that matches; inductor's fused kernels first, as their
# names carry the aten ops they fused)
GROUPS = (
    ("inductor's fused kernels (compiled step)", r"^triton_"),
    ("rooftop int4 GEMVs", r"_qgemv|_quant|_dequant"),
    ("cuBLAS (bf16 projections, lm_head)", r"nvjet|cublas|gemm|splitKreduce|cutlass"),
    ("rooftop row kernels (RMSNorm, RoPE, SwiGLU; PDL waits included)",
     r"_rms_norm|_rope|_act_rows|_gated|_layer_norm"),
    ("attention (SDPA; rooftop's decode_attention)", r"sdpa|flash|attention"),
    ("copies: static-cache writes (index_copy), .contiguous()", r"index_copy|direct_copy"),
    ("greedy argmax (torch's; rooftop.row_argmax's two kernels)", r"ArgMax|argmax|_row_reduce"),
)
# the models main() profiles, as print_step names them
MODELS = r"^(stock|patched \+ int4(, step torch.compile'd|, fp8 KV cache)?)$"
OTHER = "torch's other small kernels (RMSNorm / RoPE pieces, masks, positions, fills)"


def kernel_group(name: str) -> str:
    return next((group for group, pattern in GROUPS if re.search(pattern, name)), OTHER)


def profile_step(model, ids, compiled: bool = False, cache_len: int = 0, argmax=None) -> dict:
    """The step's time (replays timed alone), the kernels' sum and each kernel's (us, calls) a step. argmax: the
    greedy token's (GraphedDecode's; None: torch's)."""
    decoder = GraphedDecode(model, ids, 64, compiled, cache_len, **({"argmax": argmax} if argmax else {}))
    decoder.cache.reset()
    decoder.forward(ids)  # the prefill: the steps replay from its cache
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(STEPS):
        decoder.replay()
    end.record()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            decoder.replay()
        torch.cuda.synchronize()
    times: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(event.name, []).append(event.time_range.elapsed_us())
    kernels = sorted(((sum(t) / STEPS, len(t) / STEPS, name) for name, t in times.items()), reverse=True)
    return {"step_us": start.elapsed_time(end) * 1e3 / STEPS, "sum_us": sum(k[0] for k in kernels), "kernels": kernels}


def print_step(name: str, step: dict, top: int) -> None:
    print(name)
    print(f"  step {step['step_us']:8.1f} us (replays timed alone), kernels' sum {step['sum_us']:8.1f} us "
          f"({len(step['kernels'])} kernels)")
    for us, calls, kernel in step["kernels"][:top]:
        print(f"  {us:8.1f} us {calls:5.1f} calls  {kernel[:110]}")


def read_log(path: str) -> dict[str, dict]:
    """print_step's output back: {model: step} (the kernels printed, the top ones only)."""
    steps: dict[str, dict] = {}
    name = None
    for line in open(path):
        head = re.match(r"  step\s+([\d.]+) us .* sum\s+([\d.]+) us", line)
        kernel = re.match(r"\s+([\d.]+) us\s+([\d.]+) calls  (.+)$", line)
        if head:
            steps[name] = {"step_us": float(head[1]), "sum_us": float(head[2]), "kernels": []}
        elif kernel:
            steps[name]["kernels"].append((float(kernel[1]), float(kernel[2]), kernel[3]))
        elif re.match(MODELS, line):  # not the warnings a log may hold between the lines
            name = line.strip()
    return steps


def grouped(steps: dict[str, dict]) -> list[dict]:
    """Rows of a table: each group's us and calls a step for every model, then the kernels not listed and the step."""
    order = [g for g, _ in GROUPS] + [OTHER]
    rows = {g: {"part of the step": g, **{f"{m}: {k}": None for m in steps for k in ("us", "calls")}} for g in order}
    for model, step in steps.items():
        for us, calls, kernel in step["kernels"]:
            row = rows[kernel_group(kernel)]
            row[f"{model}: us"] = (row[f"{model}: us"] or 0.0) + us
            row[f"{model}: calls"] = (row[f"{model}: calls"] or 0.0) + calls
    def total(label: str, us: dict[str, float]) -> dict:
        return {"part of the step": label, **{f"{m}: us": v for m, v in us.items()}}

    tail = [total("kernels not listed (the smallest)",
                  {m: s["sum_us"] - sum(k[0] for k in s["kernels"]) for m, s in steps.items()}),
            total("kernels' sum (PDL overlap counted twice)", {m: s["sum_us"] for m, s in steps.items()}),
            total("the step (replays timed alone)", {m: s["step_us"] for m, s in steps.items()})]
    return [r for r in rows.values() if any(v is not None for v in list(r.values())[1:])] + tail


def main() -> None:
    import transformers

    import rooftop
    from rooftop.integrations.hf import patch_model

    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cache-len", type=int, default=0, help="the static cache's length (default: prompt + 68)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=128, help="the prompt's tokens, the steps' keys past them")
    parser.add_argument("--no-pdl", action="store_true", help="rooftop's kernels launched without PDL (each kernel's "
                        "span then its own, not a wait on its predecessor's end)")
    parser.add_argument("--kv-fp8", action="store_true", help="patched + int4 with 16-bit and with fp8 KV caches "
                        "(patch_model's kv_cache_dtype), not stock and the compiled step")
    parser.add_argument("--fp8-first", action="store_true", help="with --kv-fp8: the fp8-cache model profiled first")
    parser.add_argument("--from-log", nargs="+", help="no GPU: read these logs of earlier runs instead (later ones "
                        "win for a model they share)")
    parser.add_argument("--merge-into", help="a results file (e2e_decode's) to add the grouped table to")
    args = parser.parse_args()
    if args.no_pdl:
        import rooftop.ops._support
        rooftop.ops._support.ROW_PDL = False
    if args.from_log:
        steps = {m: s for path in args.from_log for m, s in read_log(path).items()}
    else:
        config = transformers.LlamaConfig(num_hidden_layers=args.layers, max_position_embeddings=4096,
                                          **SIZES["8b"])
        config._attn_implementation = "sdpa"
        stock = transformers.LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
        ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt), device="cuda")
        steps = {}
        with torch.inference_mode():
            patched = copy.deepcopy(stock)
            patch_model(patched)
            rooftop.quantize_model(patched, bits=4, group_size=128)
            models = (("stock", stock, False), ("patched + int4", patched, False),
                      ("patched + int4, step torch.compile'd", patched, True))
            if args.kv_fp8:
                fp8_cache = copy.deepcopy(stock)
                patch_model(fp8_cache, kv_cache_dtype="fp8")
                rooftop.quantize_model(fp8_cache, bits=4, group_size=128)
                models = (("patched + int4", patched, False), ("patched + int4, fp8 KV cache", fp8_cache, False))
                models = models[::-1] if args.fp8_first else models
            for name, model, compiled in models:
                argmax = None if name == "stock" else rooftop.row_argmax  # as e2e_decode.py
                steps[name] = profile_step(model, ids, compiled, args.cache_len, argmax)
                print_step(name, steps[name], args.top)
    table = grouped(steps)
    columns = list(dict.fromkeys(k for row in table for k in row))
    print("  ".join(f"{c[-22:]:>22s}" for c in columns))
    for row in table:
        print("  ".join(f"{row[c]:22.1f}" if isinstance(row.get(c), float) else f"{str(row.get(c, '-'))[-22:]:>22s}"
                        for c in columns))
    if args.merge_into:
        with open(args.merge_into) as f:
            doc = json.load(f)
        cache = f", a static cache of {args.cache_len}" if args.cache_len else ""
        runs = f"{args.layers} layers, batch {args.batch} x {args.prompt}-token prompts{cache}" + (
            ", PDL off" if args.no_pdl else "")
        doc.setdefault("tables", {})[f"A decode step by part, GPU us a step (probe_decode_step.py; {runs}, CUPTI's "
                                     "kernels of 5 graph replays)"] = table
        with open(args.merge_into, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
