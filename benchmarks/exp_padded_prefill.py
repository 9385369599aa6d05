r"""Experiment: a left-padded batch's prefill (generate()'s batches) through patch_model's SDPA route, which now sends
it to rooftop.attention_varlen over each sequence's tokens past its padding (session 64, journal 463), against the
stock model (SDPA under a padding mask: its memory-efficient backend, flash takes no mask) and the patched model with
prefill_attention=False (SDPA's attention, everything else patched: the route alone).

A Llama-3-8B-shaped model (--layers of its layer shapes, bf16, random weights, SDPA), a batch of --batch prompts of
--prompt tokens, sequence b left-padded by a random count up to half the prompt; CUDA events, the median of --repeats
after 2 warm-ups, the models in turn (timing.alternating_ms). Logits compared past the padding.
Usage: PYTHONPATH=src:benchmarks python benchmarks/exp_padded_prefill.py OUT [--batch 8] [--prompt 2048]
"""
import argparse
import copy
import functools
import json
import statistics
from pathlib import Path

import torch
import transformers

from e2e_decode import SIZES
from rooftop.bench.timing import alternating_ms
from rooftop.integrations.hf import patch_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = transformers.LlamaConfig(num_hidden_layers=args.layers, max_position_embeddings=8192, **SIZES["8b"])
    config._attn_implementation = "sdpa"
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        stock = transformers.LlamaForCausalLM(config).eval()
    torch.set_default_dtype(default)
    patched, route_off = copy.deepcopy(stock), copy.deepcopy(stock)
    patch_model(patched, prefill_attention=True)
    patch_model(route_off, prefill_attention=False)
    ids = torch.randint(0, 1000, (args.batch, args.prompt), device="cuda")
    mask = torch.ones_like(ids)
    for b, pad in enumerate(torch.randint(0, args.prompt // 2, (args.batch,)).tolist()):
        mask[b, :pad] = 0
    models = {"stock": stock, "patched": patched, "patched, prefill_attention=False": route_off}
    with torch.no_grad():  # as generate() runs (transformers 5.24)
        logits = {name: m(ids, attention_mask=mask).logits[mask.bool()].float() for name, m in models.items()}
    with torch.no_grad():  # as generate() runs (transformers 5.24)
        times = alternating_ms({name: functools.partial(model, ids, attention_mask=mask, use_cache=False)
                                for name, model in models.items()}, rounds=args.repeats + 2)
    rows = []
    for name, ts in times.items():
        ts = ts[2:]  # the warm-ups
        err = float((logits[name] - logits["stock"]).norm() / logits["stock"].norm())
        rows.append(dict(model=name, layers=args.layers, batch=args.batch, prompt=args.prompt,
                         real_tokens=int(mask.sum()), ms=statistics.median(ts), runs=ts, logits_rel_err=err))
        print(f"{name:34s} {statistics.median(ts):8.2f} ms  (runs {', '.join(f'{t:.1f}' for t in ts)})"
              f"  logits err {err:.1e}", flush=True)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "exp-padded-prefill.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
