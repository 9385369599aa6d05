"""Which transformers architectures rooftop.integrations.hf.patch_model patches, and whether their outputs stay the
stock model's: each architecture built from a tiny random config (nothing downloaded), patched in a copy, then
- prefill: the logits of a batch of 2 x 12 tokens, patched against stock (relative L2 error), and how many attention
  calls rooftop.attention answered (patch_model(prefill_attention=True): SDPA's causal prefills, gpt-oss's eager ones);
- decode: greedy generation of 4 tokens over a StaticCache (a left-padded batch) by stock, the patched model fed the
  same tokens; every step's logits patched against stock, and how many attention calls rooftop.decode_attention
  answered.
Both with SDPA attention, or eager where the model has no SDPA.
No timing: this is a correctness sweep (a model the patch leaves wrong is a bug: the script exits 1 where the logits
are off by more than TOLERANCE; one it leaves alone is a gap).
On the CPU run with TRITON_INTERPRET=1 (fp32); on a GPU with --dtype bfloat16 too.
--kv-fp8: patched with kv_cache_dtype="fp8"; the table also says how many of the patched model's cache layers held
fp8 codes after its generate, and what patch_model's warnings said of the others, and, where it held codes, how far
stock's decode goes with its cache rounded through e4m3 (scale 1.0) and nothing else: a row's decode fails past twice
that or FP8_TOLERANCE.
Writes OUT/architectures[-QUANT][-kv-fp8].md (a table) and prints it; on a GPU also a results file (family
patch_architectures[-QUANT][-kv-fp8]) whose table the report shows.
Usage: TRITON_INTERPRET=1 PYTHONPATH=src python benchmarks/check_architectures.py OUT [--dtype float32]
       [--arch Llama,Phi3] [--quant int4|int8|fp8] [--kv-fp8]"""
from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import os
import platform
import sys
import warnings

import torch

# (name, config overrides): the model class is <name without "Text">ForCausalLM (or <name>LMHeadModel), the config
# <name>Config
ARCHITECTURES = (
    ("Llama", {}), ("Mistral", {"sliding_window": 4}), ("Qwen2", {}), ("Qwen3", {"head_dim": 16}),
    ("Qwen3_5Text", {"head_dim": 16, "layer_types": ["full_attention"] * 2}),
    ("Gemma", {"head_dim": 16}), ("Gemma2", {"head_dim": 16}), ("Gemma3Text", {"head_dim": 16, "sliding_window": 4}),
    ("VaultGemma", {"head_dim": 16}), ("Phi3", {"pad_token_id": 0}),
    ("Phi3", {"pad_token_id": 0, "partial_rotary_factor": 0.5}), ("Olmo", {}), ("Olmo2", {}), ("Olmo3", {}),
    ("Granite", {}), ("Cohere", {}), ("Cohere2", {}), ("Glm", {"head_dim": 16, "pad_token_id": 0}),
    ("Glm4", {"head_dim": 16, "pad_token_id": 0}), ("SmolLM3", {"pad_token_id": 0}), ("Exaone4", {}),
    ("Helium", {"head_dim": 16}), ("Ernie4_5", {"head_dim": 16}), ("HunYuanDenseV1", {"head_dim": 16}),
    ("Apertus", {}), ("Arcee", {}), ("Doge", {}), ("DiffLlama", {}), ("StableLm", {}), ("Starcoder2", {}),
    ("Nemotron", {}), ("Phi", {}), ("Lfm2", {}), ("Llama4Text", {}), ("Mixtral", {}),
    # older layouts: q, k and v in one projection by other names (query_key_value, c_attn), GPT-J's rotary
    ("GPTNeoX", {}), ("Persimmon", {}), ("GPTJ", {"rotary_dim": 8}), ("CodeGen", {"rotary_dim": 8}), ("OPT", {}),
    ("GPT2", {}), ("GPTBigCode", {}), ("Falcon", {}),
    ("Qwen3Moe", {"head_dim": 16}),
    # mixtures of experts (their experts: rooftop.moe_experts where they keep transformers' default layout)
    ("Qwen2Moe", {"num_experts": 4, "moe_intermediate_size": 48, "shared_expert_intermediate_size": 96}),
    ("Olmoe", {"num_experts": 4, "num_experts_per_tok": 2}), ("GraniteMoe", {"num_local_experts": 4}),
    ("Glm4Moe", {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 48, "head_dim": 16,
                 "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1}),
    ("Ernie4_5_Moe", {"moe_num_experts": 4, "moe_k": 2, "moe_intermediate_size": 48, "head_dim": 16}),
    ("HunYuanMoEV1", {"num_experts": 4, "head_dim": 16}), ("MiniMax", {"num_local_experts": 4, "head_dim": 16}),
    ("GptOss", {"num_local_experts": 4, "head_dim": 16}),
)
# the most a patched model's logits may be off (relative L2) and pass: fp32 rounding, or bf16's; with fp8 linears the
# patched model quantizes activations from fp32 where stock rounds them to the model's dtype first
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 1e-2}
FP8_TOLERANCE = 5e-2
# --quant: quantize_model's arguments (groups of 32: the tiny configs' widths are 64 and 160)
QUANT = {"int4": dict(bits=4, group_size=32), "int8": dict(bits=8, group_size=32), "fp8": dict(bits="fp8")}
BASE = dict(vocab_size=128, hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)


def build(transformers, name: str, overrides: dict, attn: str, dtype: torch.dtype, device: str):
    config_class = getattr(transformers, f"{name}Config", None)
    model_class = getattr(transformers, f"{name.removesuffix('Text')}ForCausalLM",
                          getattr(transformers, f"{name}LMHeadModel", None))  # (GPT-2's name)
    if config_class is None or model_class is None:
        return None
    config = config_class(**BASE, **overrides)
    config._attn_implementation = attn
    torch.manual_seed(0)
    model = model_class(config).to(device=device, dtype=dtype).eval()
    with torch.no_grad():  # trained-like norm weights: Llama's init of ones hides a scaling by 1 + weight
        for key, p in model.named_parameters():
            if "norm" in key and p.dim() == 1:
                p.uniform_(-0.5, 1.5)
    return model


class _Forced:
    """A logits processor that makes generate take `tokens` [B, steps] (after a prompt of `prompt` tokens), whatever
    the model's logits say (those are returned unchanged as output_logits)."""

    def __init__(self, tokens: torch.Tensor, prompt: int):
        self.tokens, self.prompt = tokens, prompt

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        forced = torch.full_like(scores, -float("inf"))
        return forced.scatter_(1, self.tokens[:, input_ids.shape[1] - self.prompt, None], 0.0)


def pair(transformers, name: str, overrides: dict, attn: str, dtype: torch.dtype, device: str, quant: str | None,
         kv_fp8: bool = False):
    """(stock, patched, patch_model's counts): the patched one a copy of stock (kv_fp8: its caches fp8 codes); with
    `quant` stock quantized before
    the copy is patched, the copy after (quantize_model either side of patch_model; it quantizes the patched
    model's experts, so stock's experts take the same codes' values); None where transformers has no such
    architecture."""
    from rooftop import quantize_model
    from rooftop.integrations.hf import MoEExperts, patch_model
    from rooftop.ops.moe import dequantize_experts, quantize_experts

    stock = build(transformers, name, overrides, attn, dtype, device)
    if stock is None:
        return None
    patched = copy.deepcopy(stock)
    if quant is not None:
        quantize_model(stock, **QUANT[quant])
    counts = patch_model(patched, prefill_attention=True, kv_cache_dtype="fp8" if kv_fp8 else None)
    group = QUANT[quant].get("group_size", 128) if quant else None
    if quant is not None:  # the experts patched quantizes: stock's own ones computed with the same codes
        for name, ours in [(name, m) for name, m in patched.named_modules() if isinstance(m, MoEExperts)]:
            if quant == "int4" and any(n % group for n in ours.down_proj.shape[1:]):
                continue  # quantize_model leaves them (not whole groups)
            codes = quantize_experts(ours.gate_up_proj, ours.down_proj, quant, group)
            gate_up, down = dequantize_experts(*codes[:2], dtype), dequantize_experts(*codes[2:], dtype)
            experts = stock.get_submodule(name)
            if experts.gate_up_proj.shape != gate_up.shape:  # gpt-oss's, which patch_model re-laid: back
                half = gate_up.shape[1] // 2
                gate_up = torch.stack([gate_up[:, :half], gate_up[:, half:]], dim=2).flatten(1, 2).transpose(1, 2)
                down = down.transpose(1, 2)
            experts.gate_up_proj.data, experts.down_proj.data = gate_up.contiguous(), down.contiguous()
    if quant is not None:
        quantize_model(patched, **QUANT[quant])
    return stock, patched, counts


@contextlib.contextmanager
def _cache_rounded_e4m3():
    """transformers' StaticLayer (not its subclasses: patch_model holds codes in StaticLayers only) storing its keys and
    values as fp8 codes at scale 1.0 (patch_model's default kv_scales) would, in their own dtype: stock's logits with
    an fp8 cache's rounding and nothing else of the patch. The update that initialises a layer returns its rows
    unrounded, as the patched model's first update does."""
    from transformers.cache_utils import StaticLayer

    from rooftop.ops.decode_attention import quantize_kv

    update = StaticLayer.update

    def rounded(x: torch.Tensor) -> torch.Tensor:
        return quantize_kv(x).to(x.dtype)

    def rounding_update(self, key, value, *args, **kwargs):
        if type(self) is not StaticLayer:
            return update(self, key, value, *args, **kwargs)
        if self.is_initialized:
            return update(self, rounded(key), rounded(value), *args, **kwargs)
        keys, values = (x.clone() for x in update(self, key, value, *args, **kwargs))
        self.keys.copy_(rounded(self.keys))
        self.values.copy_(rounded(self.values))
        return keys, values

    StaticLayer.update = rounding_update
    try:
        yield
    finally:
        StaticLayer.update = update


def check(transformers, name: str, overrides: dict, dtype: torch.dtype, device: str, quant: str | None,
          kv_fp8: bool = False) -> dict:
    import rooftop.integrations.hf as hf
    from rooftop.bench.sweep import rel_err

    row: dict = {"architecture": name + "".join(f" {k}={v}" for k, v in overrides.items()
                                                if k not in ("head_dim", "pad_token_id", "layer_types"))}
    ids = torch.randint(1, 128, (2, 12), device=device)
    with torch.no_grad(), warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            built = pair(transformers, name, overrides, "sdpa", dtype, device, quant, kv_fp8)
        except ValueError:  # no SDPA for this model
            built = pair(transformers, name, overrides, "eager", dtype, device, quant, kv_fp8)
        if built is None:
            return {**row, "note": "not in this transformers"}
        stock, patched, counts = built
        row["patched"] = ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "nothing"
        prefills = []
        real_prefill = hf.attention
        hf.attention = lambda *a, **k: prefills.append(1) or real_prefill(*a, **k)
        try:
            row["prefill"] = rel_err(patched(ids, use_cache=False).logits, stock(ids, use_cache=False).logits)
        finally:
            hf.attention = real_prefill
        row["attention calls"] = len(prefills)
        mask = torch.ones_like(ids)
        mask[1, :3] = 0  # the second sequence left-padded
        calls = []
        real = hf.decode_attention
        hf.decode_attention = lambda *a, **k: calls.append(1) or real(*a, **k)
        kwargs = dict(attention_mask=mask, max_new_tokens=4, do_sample=False, cache_implementation="static",
                      output_logits=True, pad_token_id=0, return_dict_in_generate=True)
        try:
            out = stock.generate(ids, **kwargs)
            # the patched model fed stock's tokens: a near tie that greedy decoding breaks the other way (bf16 in a
            # tiny random model) would compare logits of two different continuations
            forced = transformers.LogitsProcessorList([_Forced(out.sequences[:, ids.shape[1]:], ids.shape[1])])
            ours = patched.generate(ids, logits_processor=forced, **kwargs)
            logits = [torch.stack(out.logits), torch.stack(ours.logits)]
        finally:
            hf.decode_attention = real
        row["decode"] = rel_err(logits[1], logits[0])
        row["decode_attention calls"] = len(calls)
        if kv_fp8:
            layers = getattr(ours.past_key_values, "layers", [])
            codes = sum(getattr(layer, "keys", None) is not None and layer.keys.dtype == torch.float8_e4m3fn
                        for layer in layers)
            row["fp8 cache layers"] = f"{codes} / {len(layers)}"
            failed = []
            try:  # the error e4m3 itself makes where the patched model holds codes: stock's cache rounded through it
                if codes:
                    with _cache_rounded_e4m3():
                        rounded = stock.generate(ids, logits_processor=forced, **kwargs)
                    row["stock, e4m3 cache"] = rel_err(torch.stack(rounded.logits), logits[0])
            except Exception as e:  # noqa: BLE001 (said in the note; the row's bound stays FP8_TOLERANCE)
                failed.append(f"stock with its cache rounded: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
            kept = dict.fromkeys(str(w.message).split(": ", 1)[-1] for w in said if 'kv_cache_dtype="fp8"' in
                                 str(w.message))
            row["note"] = "; ".join([*kept, *failed])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    parser.add_argument("--arch", default=None, help="comma-separated names (default: all)")
    parser.add_argument("--quant", default=None, choices=tuple(QUANT),
                        help="quantize_model both models (stock before the copy is patched, the copy after)")
    parser.add_argument("--kv-fp8", action="store_true", help='the patched model with kv_cache_dtype="fp8"')
    args = parser.parse_args()
    import transformers
    from rich.progress import track

    from rooftop.bench.results import write_results

    dtype = getattr(torch, args.dtype)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    from rooftop.ops._support import interpreting
    if interpreting() and dtype != torch.float32:  # decode_attention's dots would come out wrong, not the patch
        sys.exit("with TRITON_INTERPRET=1 run --dtype float32: Triton 3.6's interpreter multiplies the bits of 16-bit "
                 "tl.dot operands (tests/conftest.py widens them for the tests)")
    chosen = [a for a in ARCHITECTURES if args.arch is None or a[0] in args.arch.split(",")]
    rows = []
    for name, overrides in track(chosen, description="architectures"):
        try:
            rows.append(check(transformers, name, overrides, dtype, device, args.quant, args.kv_fp8))
        except Exception as e:  # a failure is a row of the table, not the end of the sweep
            rows.append({"architecture": name, "note": f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"})
    where = torch.cuda.get_device_name() if device == "cuda" else f"CPU ({platform.machine()}, Triton interpreter)"
    setup = args.dtype + (f", linears {args.quant} (quantize_model {QUANT[args.quant]})" if args.quant else "") + (
        ', kv_cache_dtype="fp8"' if args.kv_fp8 else "")
    lines = [f"# patch_model over transformers {transformers.__version__} architectures",
             "", f"{datetime.date.today()}, {where}, {setup}, torch {torch.__version__}. Tiny random configs "
             "(2 layers, hidden 64), norm weights drawn from U(-0.5, 1.5); errors are relative L2 of the logits, "
             "patched against stock; decode: 4 greedy tokens over a StaticCache, a left-padded batch of 2.", "",
             "| architecture | patched | prefill | attention calls | decode | decode_attention calls |"
             + (" stock, e4m3 cache | fp8 cache layers |" if args.kv_fp8 else "") + " note |",
             "|---|---|---|---|---|---|" + ("---|---|" if args.kv_fp8 else "") + "---|"]
    for r in rows:
        cells = [r["architecture"], r.get("patched", ""), f"{r['prefill']:.1e}" if "prefill" in r else "",
                 str(r.get("attention calls", "")), f"{r['decode']:.1e}" if "decode" in r else "",
                 str(r.get("decode_attention calls", ""))] + (
            [f"{r['stock, e4m3 cache']:.1e}" if "stock, e4m3 cache" in r else "", r.get("fp8 cache layers", "")]
            if args.kv_fp8 else []) + [r.get("note", "")]
        lines.append("| " + " | ".join(cells) + " |")
    os.makedirs(args.out, exist_ok=True)
    name = f"architectures{'-' + args.quant if args.quant else ''}{'-kv-fp8' if args.kv_fp8 else ''}"
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if device == "cuda":  # a results file: the report shows its table under the card
        write_results(args.out, f"patch_{name}", [], {}, where,
                      tables={f"patch_model over transformers {transformers.__version__} architectures "
                              f"({setup}): logits' relative error against stock":
                              [{**r, **{k: f"{r[k]:.1e}" for k in ("prefill", "decode", "stock, e4m3 cache") if k in r}}
                               for r in rows]})
    print("\n".join(lines))
    tolerance = max(TOLERANCE[dtype], FP8_TOLERANCE if args.quant == "fp8" or args.kv_fp8 else 0.0)
    # an fp8 cache's decode may be off as far as e4m3's own rounding puts stock (twice that: the two round different
    # rows); the prefill (no cache) by the tolerance
    bad = [r["architecture"] for r in rows if r.get("prefill", 0.0) > tolerance
           or r.get("decode", 0.0) > max(tolerance, 2 * r.get("stock, e4m3 cache", 0.0))]
    if bad:
        sys.exit(f"logits off by more than {tolerance}" + (" or twice stock's with its cache rounded through e4m3"
                                                          if args.kv_fp8 else "") + f": {', '.join(bad)}")


if __name__ == "__main__":
    main()
