"""Session 63: a gpt-oss-shaped model's prefill (gpt-oss-20b's layer shapes, 4 layers, bf16, random weights; 2048
tokens, batch 1, no cache): stock (eager attention: [1, 64, S, S + 1] scores a layer), patched, and patched with
prefill_attention=False (the route alone). e2e_decode.py --gpt-oss --graphs cannot run on transformers 5.24: its eager
mask makes a CUDA scalar from a Python float (torch.tensor(0.0, device=...)), a host copy CUDA graph capture refuses.
CUDA events, the median of 5 after 2 warm-ups."""
import copy
import statistics

import torch
import transformers

from e2e_decode import GPT_OSS
from rooftop.integrations.hf import patch_model

config = transformers.GptOssConfig(num_hidden_layers=4, max_position_embeddings=4096, **GPT_OSS["8b"])
config._attn_implementation = "eager"
torch.manual_seed(0)
stock = transformers.GptOssForCausalLM(config).to(torch.bfloat16).cuda().eval()
patched, eager_prefill = copy.deepcopy(stock), copy.deepcopy(stock)
patch_model(patched)
patch_model(eager_prefill, prefill_attention=False)
for S in (2048, 4096):
    ids = torch.randint(0, 1000, (1, S), device="cuda")
    for name, model in (("stock", stock), ("patched", patched), ("patched, prefill_attention=False", eager_prefill)):
        times = []
        with torch.inference_mode():
            for i in range(7):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                model(ids, use_cache=False)
                end.record()
                torch.cuda.synchronize()
                if i >= 2:
                    times.append(start.elapsed_time(end))
        peak = torch.cuda.max_memory_allocated() / 1e9
        torch.cuda.reset_peak_memory_stats()
        print(f"S {S:5d} {name:34s} {statistics.median(times):8.2f} ms  (runs {', '.join(f'{t:.1f}' for t in times)})"
              f"  peak {peak:.1f} GB", flush=True)
