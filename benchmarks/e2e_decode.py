"""End-to-end decode speed of a Llama-style model (transformers, random weights, nothing downloaded):
stock (SDPA) against rooftop-patched (fused RMSNorm and SwiGLU), and patched + int4 weights
(quantize_model). Greedy generation of --new tokens after a --prompt-token prompt, batch --batch;
tokens/s from wall time after a warm-up run. Writes OUT.json, prints a table.
With --compile each model decodes from a static cache, which generate compiles (CUDA graphs on a GPU:
mode "reduce-overhead"), taking the host's launch cost out of the step.
Usage: PYTHONPATH=src python benchmarks/e2e_decode.py OUT.json [--layers 8] [--size 8b|tiny] [--compile]
"""
from __future__ import annotations

import argparse
import copy
import json
import time

import torch

SIZES = {  # Llama-3-8B's layer shapes (fewer layers keep a session short), and a CPU smoke-test size
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
               vocab_size=128256),
    "tiny": dict(hidden_size=64, intermediate_size=160, num_attention_heads=4, num_key_value_heads=2, vocab_size=256),
}


def compiled(model, ids):
    """The model decoding from a static cache, which transformers' generate compiles itself on a GPU
    (torch.compile, mode "reduce-overhead": CUDA graphs; its CompileConfig). Compiling model.forward
    by hand instead skipped CUDA graphs (the cache's in-place updates are mutated graph inputs) and
    crashed the process on the H200 (torch 2.11, transformers 5)."""
    model.generation_config.cache_implementation = "static"
    return model


def tokens_per_s(model, ids, new: int) -> float:
    def run():
        return model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False)

    run()  # warm-up: compiles kernels, allocates the cache
    if ids.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    run()
    if ids.is_cuda:
        torch.cuda.synchronize()
    return ids.shape[0] * new / (time.perf_counter() - start)


def main() -> None:
    import transformers

    import rooftop
    from rooftop.integrations.hf import patch_model

    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--size", default="8b", choices=sorted(SIZES))
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--compile", action="store_true", help="static cache + torch.compile (CUDA graphs)")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    config = transformers.LlamaConfig(num_hidden_layers=args.layers, max_position_embeddings=4096,
                                      **SIZES[args.size])
    config._attn_implementation = "sdpa"
    stock = transformers.LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt), device=device)
    prepare = compiled if args.compile else (lambda model, ids: model)
    rows = []
    with torch.inference_mode():
        patched = copy.deepcopy(stock)  # copies before any compile: a compiled forward does not deep-copy
        counts = patch_model(patched)
        quantized = copy.deepcopy(patched)
        report = rooftop.quantize_model(quantized, bits=4, group_size=128)
        same = torch.equal(stock.generate(ids, max_new_tokens=8, do_sample=False),
                           patched.generate(ids, max_new_tokens=8, do_sample=False))
        for name, model in (("stock (sdpa)", stock), (f"rooftop-patched {counts}", patched),
                            (f"patched + int4 g128 ({len(report['quantized'])} linears)", quantized)):
            rows.append({"model": name, "tokens_per_s": tokens_per_s(prepare(model, ids), ids, args.new)})
    result = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "size": args.size,
              "layers": args.layers, "batch": args.batch, "prompt": args.prompt, "new": args.new,
              "compiled": args.compile,
              "greedy_tokens_equal_first_8": same, "rows": rows}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for r in rows:
        print(f"{r['model']:60s} {r['tokens_per_s']:8.1f} tok/s")
    print("patched greedy tokens equal stock's (first 8):", same)


if __name__ == "__main__":
    main()
