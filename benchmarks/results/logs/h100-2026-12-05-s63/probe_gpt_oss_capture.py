"""Session 63: where a gpt-oss decode step (eager attention, StaticCache) copies CPU -> GPU under CUDA graph capture
(e2e_decode.py --gpt-oss --graphs failed so for stock and patched alike). Prints the traceback of the first failure."""
import copy
import traceback

import torch
import transformers

from rooftop.integrations.hf import patch_model

config = transformers.GptOssConfig(vocab_size=1024, hidden_size=256, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=8, num_key_value_heads=2, head_dim=64, sliding_window=16,
                                   num_local_experts=8, num_experts_per_tok=2)
config._attn_implementation = "eager"
torch.manual_seed(0)
stock = transformers.GptOssForCausalLM(config).cuda().to(torch.bfloat16).eval()
patched = copy.deepcopy(stock)
patch_model(patched)
for name, model in (("stock", stock), ("patched", patched)):
    cache = transformers.StaticCache(config=config, max_cache_len=64)
    ids = torch.randint(0, 1024, (1, 8), device="cuda")
    with torch.inference_mode():
        model(ids, cache=cache, use_cache=True)
        token = ids[:, -1:].clone()
        position = torch.tensor([[8]], device="cuda")
        for _ in range(2):
            model(token, cache=cache, use_cache=True, position_ids=position, cache_position=position[0])
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                model(token, cache=cache, use_cache=True, position_ids=position, cache_position=position[0])
            print(name, "captured")
        except Exception:
            print(name, "FAILED")
            traceback.print_exc(limit=-12)
