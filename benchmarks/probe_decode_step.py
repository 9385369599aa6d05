"""Where a graphed decode step of e2e_decode.py's model spends its time, kernel by kernel (session 28: a step ran at
50% of its weights' floor for stock, 47% for patched + int4: ~0.5 ms a step that the weights do not explain).
Builds the 8-layer Llama-3-8B-shaped model (random weights) stock and patched + int4 (also with the step
torch.compile'd, as e2e_decode.py --compile), prefills a 128-token prompt into a static cache, captures one decode
step in a CUDA graph, and profiles 5 replays (CUPTI records the graph's kernels); prints the step's time (replays
timed alone), the kernels' sum, and each kernel's GPU time and calls a step.
Usage: PYTHONPATH=src:benchmarks python benchmarks/probe_decode_step.py [--layers 8] [--top 25]
"""
from __future__ import annotations

import argparse
import copy
import inspect

import torch

from e2e_decode import SIZES

STEPS = 5


def profile_step(model, ids, top: int, compiled: bool = False) -> None:
    from transformers import StaticCache

    from rooftop.bench.timing import capture_graph

    cache = StaticCache(config=model.config, max_cache_len=ids.shape[1] + 64)
    cache_arg = "cache" if "cache" in inspect.signature(model.model.forward).parameters else "past_key_values"
    token = torch.zeros(ids.shape[0], 1, dtype=torch.long, device=ids.device)

    def forward(input_ids):
        logits = model(input_ids=input_ids, use_cache=True, **{cache_arg: cache}).logits
        token.copy_(logits[:, -1:].argmax(-1))

    step_forward = torch.compile(forward, dynamic=False) if compiled else forward

    def warm_up():
        forward(ids)
        for _ in range(3):
            step_forward(token)

    graph = capture_graph(warm_up, lambda: step_forward(token))
    cache.reset()
    forward(ids)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(STEPS):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    step_us = start.elapsed_time(end) * 1e3 / STEPS
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            graph.replay()
        torch.cuda.synchronize()
    kernels: dict[str, list[float]] = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            kernels.setdefault(event.name, []).append(event.time_range.elapsed_us())
    total = sum(sum(times) for times in kernels.values()) / STEPS
    print(f"  step {step_us:8.1f} us (replays timed alone), kernels' sum {total:8.1f} us ({len(kernels)} kernels)")
    for name, times in sorted(kernels.items(), key=lambda kv: -sum(kv[1]))[:top]:
        print(f"  {sum(times) / STEPS:8.1f} us {len(times) / STEPS:5.1f} calls  {name[:110]}")


def main() -> None:
    import transformers

    import rooftop
    from rooftop.integrations.hf import patch_model

    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    config = transformers.LlamaConfig(num_hidden_layers=args.layers, max_position_embeddings=4096, **SIZES["8b"])
    config._attn_implementation = "sdpa"
    stock = transformers.LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    ids = torch.randint(0, config.vocab_size, (1, 128), device="cuda")
    with torch.inference_mode():
        patched = copy.deepcopy(stock)
        patch_model(patched)
        rooftop.quantize_model(patched, bits=4, group_size=128)
        for name, model, compiled in (("stock", stock, False), ("patched + int4", patched, False),
                                      ("patched + int4, step torch.compile'd", patched, True)):
            print(name)
            profile_step(model, ids, args.top, compiled)


if __name__ == "__main__":
    main()
