"""Why a patched Mixtral-shaped model's logits stray from stock's on the GPU (session 61: rel err 0.57 at batch 1,
bf16, Llama-3-8B layer shapes, against ~1e-2 for a small model in the interpreter). For stock against patch_model
variants (all; without the experts swap; without the attention rewrites), in bf16 and fp32, on a 128-token prefill and
one decode step after it: the last logits' relative error, each layer's output error and the share of router choices
that differ. Usage: exp_moe_agreement.py OUT [--layers N]"""
import argparse
import copy
import json
import sys
from pathlib import Path

import torch
import transformers

import rooftop.integrations.hf as hf
from rooftop.integrations.hf import patch_model


def rel(a, b) -> float:
    a, b = a.double(), b.double()
    return float(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(a).clamp_min(1e-30))


def record(model) -> dict:
    """Forward hooks: each layer's output and each router's top-k indices, appended per call."""
    seen: dict[str, list] = {}
    for i, layer in enumerate(model.model.layers):
        layer.register_forward_hook(lambda m, a, out, i=i: seen.setdefault(f"layer{i}", []).append(
            (out[0] if isinstance(out, tuple) else out).detach().clone()))
        gate = getattr(layer.mlp, "gate", None)
        if gate is not None:
            gate.register_forward_hook(lambda m, a, out, i=i: seen.setdefault(f"router{i}", []).append(
                out[-1].detach().clone()))
    return seen


def compare(stock, model, ids) -> dict:
    seen = [record(m) for m in (stock, model)]
    with torch.inference_mode():
        outs = [m(input_ids=ids, use_cache=True) for m in (stock, model)]
        nxt = outs[0].logits[:, -1:].argmax(-1)
        steps = [m(input_ids=nxt, past_key_values=o.past_key_values, use_cache=True) for m, o in zip((stock, model),
                                                                                                    outs)]
    result = {"prefill_logits": rel(outs[0].logits[:, -1], outs[1].logits[:, -1]),
              "step_logits": rel(steps[0].logits[:, -1], steps[1].logits[:, -1])}
    for key in seen[0]:
        for call, (a, b) in enumerate(zip(seen[0][key], seen[1][key])):
            phase = "prefill" if call == 0 else "step"
            if key.startswith("router"):
                differ = (a.sort(-1).values != b.sort(-1).values).any(-1)
                result[f"{phase} {key} differ"] = float(differ.double().mean())
            else:
                result[f"{phase} {key}"] = rel(a, b)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--size", default="8b")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from e2e_decode import SIZES
    args.out.mkdir(parents=True, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results = {"transformers": transformers.__version__}
    own_moe = hf._moe_experts
    for arch, extra in (("Mixtral", dict(num_local_experts=8, num_experts_per_tok=2)), ("Llama", {})):
        for dtype in (torch.bfloat16, torch.float32):
            torch.manual_seed(0)
            config = getattr(transformers, f"{arch}Config")(num_hidden_layers=args.layers, max_position_embeddings=4096,
                                                              **SIZES[args.size], **extra)
            config._attn_implementation = "sdpa"
            if extra:
                config._experts_implementation = "grouped_mm"
            with torch.device(device):  # initialised there: minutes less on the host
                stock = getattr(transformers, f"{arch}ForCausalLM")(config).to(dtype=dtype).eval()
            ids = torch.randint(0, config.vocab_size, (1, 128), device=device)
            stds = {name: float(p.detach().float().std()) for name, p in stock.model.layers[0].named_parameters()}
            variants = {"all": {}, "attention apart": dict(merge_qkv=False, decode_attention=False, kv_append=False,
                                                           rope_append=False)}
            if extra:
                variants["experts kept"] = None
            for name, options in variants.items():
                model = copy.deepcopy(stock)
                hf._moe_experts = (lambda module: None) if options is None else own_moe
                with torch.inference_mode():
                    counts = patch_model(model, **(options or {}))
                hf._moe_experts = own_moe
                key = f"{arch} {str(dtype)[6:]} {name}"
                results[key] = {"counts": counts, **compare(stock, model, ids)}
                r = results[key]
                print(f"{key:34s} prefill {r['prefill_logits']:.2e} step {r['step_logits']:.2e}  " + " ".join(
                    f"{k.split()[1]}:{v:.1e}" for k, v in r.items() if "router" in k and "prefill" in k), flush=True)
                del model
            results[f"{arch} {str(dtype)[6:]} stds"] = stds
            print(arch, str(dtype)[6:], "layer 0 stds", {k: round(v, 4) for k, v in stds.items()}, flush=True)
            del stock
            torch.cuda.empty_cache() if device == "cuda" else None
    (args.out / "exp-moe-agreement.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
