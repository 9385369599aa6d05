"""End-to-end decode speed of a Llama-style model (transformers, random weights, nothing downloaded):
stock (SDPA) against rooftop-patched (fused RMSNorm and SwiGLU), and patched + int4 weights
(quantize_model), each patched model also with its projections kept apart (gate / up, q / k / v). Greedy
generation of --new tokens after a --prompt-token prompt, batch --batch; tokens/s of the whole run (prefill
included) after a warm-up run; each model --repeats times, the models in order and then in reverse (a model's place
in the run moves its figure), the median. Writes a results file (no op rows; the table under "tables") into OUT,
prints a table.
With --graphs each model decodes greedily from a static cache, every step replayed from a CUDA graph
captured by hand, which takes the host's launch cost out of the step; the eager prefill is then timed apart from
the steps (decode tokens/s, ms a step), and a step is set against its floor: the model's weights (every parameter
and buffer but the input embedding's table) read once at the measured copy bandwidth. x_stock compares decode
tokens/s with --graphs, whole runs without.
Usage: PYTHONPATH=src python benchmarks/e2e_decode.py OUT [--layers 8] [--size 8b|tiny] [--graphs] [--no-plans]
[--repeats 2] [--row-pdl-ab] [--compile] [--cache-len N] [--sdpa-decode-ab] [--kv-append-ab]
[--lm-head-bits 8,4] [--argmax-ab] [--rope-append-ab] [--prefill-attention-ab] [--kv-fp8-ab] [--fp8] [--int8]
[--no-int4]
[--moe | --gpt-oss] [--group-size 128]
The patched models' steps take their greedy token by rooftop.row_argmax (stock's, and the --argmax-ab row's, by
torch's argmax).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

SIZES = {  # Llama-3-8B's layer shapes (fewer layers keep a session short), and a CPU smoke-test size
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
               vocab_size=128256),
    "tiny": dict(hidden_size=64, intermediate_size=160, num_attention_heads=4, num_key_value_heads=2, vocab_size=256),
}
# the experts of --moe (Mixtral's, on the --size's shapes) and --gpt-oss (gpt-oss-20b's own shapes: 24 layers of these;
# "tiny" for a CPU smoke test)
MIXTRAL_EXPERTS = dict(num_local_experts=8, num_experts_per_tok=2)
GPT_OSS = {"8b": dict(hidden_size=2880, intermediate_size=2880, num_attention_heads=64, num_key_value_heads=8,
                      head_dim=64, vocab_size=201088, num_local_experts=32, num_experts_per_tok=4),
           "tiny": dict(SIZES["tiny"], head_dim=16, num_local_experts=4, num_experts_per_tok=2)}


def agreement(reference, model, ids) -> str:
    """How far `model` runs from `reference` on the prompt: its last logits' relative error (L2) and the greedy tokens
    of 16 steps that agree (random weights make the logits nearly flat: a few flips are no fault, the logits' error
    says more)."""
    logits = [m(input_ids=ids).logits[:, -1].double() for m in (reference, model)]
    rel = float(torch.linalg.vector_norm(logits[1] - logits[0]) / torch.linalg.vector_norm(logits[0]))
    tokens = [m.generate(ids, max_new_tokens=16, do_sample=False)[:, ids.shape[1]:] for m in (reference, model)]
    agree = float((tokens[0] == tokens[1]).double().mean())
    return f"last-position logits rel err {rel:.2e}, greedy tokens agreeing over 16 steps {agree:.0%}"


class GraphedDecode:
    """Greedy decode from a static cache, each step replayed from one CUDA graph captured by hand (as
    gpt-fast does; on a CPU the same step runs eagerly): the host issues one graph launch a token, so
    the figure is the GPU's, not the Python launch path's. The cache keeps its length in a device
    tensor, so positions advance inside the graph. (transformers' own compiled decode failed on torch
    2.11 / transformers 5: journal item 26.) compiled: the step is torch.compile's (inductor, no graphs of its own:
    the step's graph is captured here), the prefill stays eager. Built once a model (one capture, one compile);
    each call times a run with _timed, the prefill apart from the steps. argmax: the greedy token of the last
    position's logits ([B, 1, V] -> [B, 1])."""

    def __init__(self, model, ids, new: int, compiled: bool = False, cache_len: int = 0,
                 argmax=lambda logits: logits.argmax(-1)):
        import inspect

        from transformers import StaticCache

        from rooftop.bench.timing import capture_graph

        batch, prompt = ids.shape
        self.ids, self.new = ids, new
        self.cache = StaticCache(config=model.config, max_cache_len=max(cache_len, prompt + new + 4))
        cache_arg = "cache" if "cache" in inspect.signature(model.model.forward).parameters else "past_key_values"
        token = torch.zeros(batch, 1, dtype=torch.long, device=ids.device)

        def forward(input_ids):  # the next token into `token`, in place
            logits = model(input_ids=input_ids, use_cache=True, **{cache_arg: self.cache}).logits
            token.copy_(argmax(logits[:, -1:]))

        step_forward = torch.compile(forward, dynamic=False) if compiled else forward

        def step():
            step_forward(token)

        def warm_up():  # allocates the cache, compiles kernels
            forward(ids)
            for _ in range(3):
                step()

        self.forward = forward
        self.replay = capture_graph(warm_up, step).replay if ids.is_cuda else step

    def __call__(self) -> dict:
        def decode(mark):
            self.cache.reset()  # zeroes the cache and its length in place: the graph's addresses stay valid
            self.forward(self.ids)  # prefill, eager
            mark()
            for _ in range(self.new - 1):
                self.replay()

        return _timed(decode, self.ids, self.new)


def generate_decode(model, ids, new: int) -> dict:
    """HF generate, eager: _timed's figures, the prefill not told apart."""
    return _timed(lambda mark: model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False), ids,
                  new)


def _timed(run, ids, new: int) -> dict:
    """The second of two runs of `run(mark)`, which generates `new` tokens for each of ids' rows and may call
    mark() once its prefill is done: tokens_per_s over the whole run (prefill included), and where mark() was
    called the prefill's ms and the steps after it (ms a step, decode tokens/s). CUDA events on a GPU."""
    cuda = ids.is_cuda

    def clock():
        if not cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(a, b):
        return a.elapsed_time(b) / 1e3 if cuda else b - a

    run(lambda: None)
    marks = [clock()]
    run(lambda: marks.append(clock()))
    marks.append(clock())
    if cuda:
        torch.cuda.synchronize()
    figures = {"tokens_per_s": ids.shape[0] * new / seconds(marks[0], marks[-1])}
    if len(marks) == 3:
        steps = seconds(marks[1], marks[2])
        figures.update(decode_tokens_per_s=ids.shape[0] * (new - 1) / steps, step_ms=steps * 1e3 / (new - 1),
                       prefill_ms=seconds(marks[0], marks[1]) * 1e3)
    return figures


def weight_bytes(model, batch: int = 1) -> int:
    """Bytes a decode step reads at least: every parameter and buffer once, but the input embedding's table (a
    row a token) unless the output layer shares it, and of a mixture of experts' [E, ...] expert weights (a module's
    3-D gate_up_proj and down_proj) the share a step's tokens route to: E (1 - (1 - k / E)^batch) experts, k a
    token's, routed at random (one token: k)."""
    embedding = model.get_input_embeddings().weight
    tied = getattr(model.get_output_embeddings(), "weight", None) is embedding  # a quantized lm_head has none
    tensors = {t.data_ptr(): t for t in (*model.parameters(), *model.buffers()) if tied or t is not embedding}
    share = {}
    top_k = getattr(model.config, "num_experts_per_tok", None)
    for module in model.modules():
        for name in ("gate_up_proj", "down_proj"):
            t = getattr(module, name, None)
            if top_k and isinstance(t, torch.Tensor) and t.dim() == 3:
                share[t.data_ptr()] = 1 - (1 - top_k / t.shape[0]) ** batch
    return int(sum(t.numel() * t.element_size() * share.get(p, 1.0) for p, t in tensors.items()))


def main() -> None:
    import transformers

    import rooftop
    from rooftop.bench.results import write_results
    from rooftop.hardware import measure_ceilings
    from rooftop.ops import _support
    from rooftop.integrations.hf import patch_model
    from rooftop.ops.reductions import row_argmax

    parser = argparse.ArgumentParser()
    parser.add_argument("out", help="results folder (benchmarks/results)")
    parser.add_argument("--size", default="8b", choices=sorted(SIZES))
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--graphs", action="store_true", help="static cache, each decode step a CUDA graph replay")
    parser.add_argument("--no-plans", action="store_true", help="every op call takes its full Python path")
    parser.add_argument("--repeats", type=int, default=2, help="rounds over the models, in turn forwards and back")
    parser.add_argument("--compile", action="store_true",
                        help="also stock, patched and patched + int4 with the step torch.compile'd (needs --graphs)")
    parser.add_argument("--row-pdl-ab", action="store_true",
                        help="also the int4 model with the row ops' kernels not launched as programmatic dependents")
    parser.add_argument("--cache-len", type=int, default=0,
                        help="the static cache's length (--graphs; default: prompt + new + 4), as a server allocates")
    parser.add_argument("--sdpa-decode-ab", action="store_true",
                        help="also the int4 model with its decode steps' attention left to SDPA "
                             "(patch_model's decode_attention=False)")
    parser.add_argument("--kv-append-ab", action="store_true",
                        help="also the int4 model with its static cache updated by transformers "
                             "(patch_model's kv_append=False)")
    parser.add_argument("--prefill-attention-ab", action="store_true",
                        help="also the patched model with its prefill's attention left to the model's own (SDPA; "
                             "gpt-oss: eager) (patch_model(prefill_attention=False)): with --graphs its prefill_ms "
                             "against the patched one's")
    parser.add_argument("--kv-fp8-ab", action="store_true",
                        help="also the int4 model with a static cache of fp8 codes (patch_model's kv_cache_dtype)")
    parser.add_argument("--rope-append-ab", action="store_true",
                        help="also the int4 model with its RoPE and static-cache update as two kernels "
                             "(patch_model's rope_append=False)")
    parser.add_argument("--argmax-ab", action="store_true",
                        help="also the int4 model with its greedy token by torch's argmax (not rooftop.row_argmax)")
    parser.add_argument("--fp8", action="store_true",
                        help="also the patched model with fp8 weights and per-token fp8 activations (W8A8: "
                             "quantize_model(model, 'fp8'), lm_head kept bf16; with --moe / --gpt-oss the experts fp8 "
                             "too, weight-only)")
    parser.add_argument("--int8", action="store_true",
                        help="also the patched model with int8 weights (W8A16: quantize_model(model, 8), --group-size, "
                             "lm_head kept bf16; with --moe / --gpt-oss the experts int8 too, a scale per output row)")
    parser.add_argument("--moe", action="store_true",
                        help="a Mixtral-shaped model (8 experts, top 2, the --size's shapes), stock's experts "
                             "transformers' grouped_mm (its eager loop synchronises the host: no CUDA graph holds it); "
                             "the int4 / int8 / fp8 models' experts quantized too (weight-only)")
    parser.add_argument("--gpt-oss", action="store_true",
                        help="a gpt-oss-shaped model (gpt-oss-20b's layer shapes with --size 8b: 32 experts with "
                             "biases and the clamped gate, top 4; attention with sinks: stock's eager, the patched "
                             "decode steps' by decode_attention), stock's experts transformers' grouped_mm; int4's "
                             "groups of 128 do not divide its 2880-wide rows (quantize_model skips those): "
                             "--group-size 64, or --no-int4")
    parser.add_argument("--no-int4", action="store_true",
                        help="without the int4 models (their tuning from an empty cache takes ~9 minutes on a GPU)")
    parser.add_argument("--lm-head-bits", type=lambda s: [int(b) for b in s.split(",")], default=[],
                        help="e.g. 8,4: also the int4 model with lm_head (kept bf16 by quantize_model's default skip) "
                             "quantized to each of these bits in --group-size groups; their logits' error against the "
                             "int4 model's")
    parser.add_argument("--group-size", type=int, default=128, choices=(32, 64, 128),
                        help="the int4 / int8 models' groups (quantize_model's group_size)")
    args = parser.parse_args()
    if args.compile and not args.graphs:
        parser.error("--compile: the compiled step is timed in a graph of its own, with --graphs")
    int4_rows = ("row_pdl_ab", "sdpa_decode_ab", "kv_append_ab", "rope_append_ab", "argmax_ab", "lm_head_bits",
                 "kv_fp8_ab")
    if args.no_int4 and any(getattr(args, name) for name in int4_rows):
        parser.error("--no-int4: the --*-ab rows and --lm-head-bits are int4 models")
    if args.moe and args.gpt_oss:
        parser.error("--moe or --gpt-oss, not both")
    moe = args.moe or args.gpt_oss
    group = args.group_size
    int4 = f"patched + int4 g{group}"  # the int4 rows' name
    if args.no_plans:
        _support.PLANS_ENABLED = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    arch, shapes = (("GptOss", GPT_OSS[args.size]) if args.gpt_oss else
                    ("Mixtral", dict(SIZES[args.size], **MIXTRAL_EXPERTS)) if args.moe else ("Llama", SIZES[args.size]))
    config = getattr(transformers, f"{arch}Config")(num_hidden_layers=args.layers, max_position_embeddings=4096,
                                                      **shapes)
    config._attn_implementation = "eager" if args.gpt_oss else "sdpa"  # gpt-oss's sinks: no SDPA in transformers
    if moe:
        config._experts_implementation = "grouped_mm"
    stock = getattr(transformers, f"{arch}ForCausalLM")(config).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, config.vocab_size, (args.batch, args.prompt), device=device)
    rows = []
    with torch.inference_mode():
        patched = copy.deepcopy(stock)
        counts = patch_model(patched)
        apart = copy.deepcopy(stock)
        patch_model(apart, merge_gate_up=False, merge_qkv=False)
        if not args.no_int4:
            quantized, quantized_apart = copy.deepcopy(patched), copy.deepcopy(apart)
            report = rooftop.quantize_model(quantized, bits=4, group_size=group)
            rooftop.quantize_model(quantized_apart, bits=4, group_size=group)
        if args.sdpa_decode_ab:
            quantized_sdpa = copy.deepcopy(stock)
            patch_model(quantized_sdpa, decode_attention=False)
            rooftop.quantize_model(quantized_sdpa, bits=4, group_size=group)
        if args.kv_append_ab:
            quantized_hf_cache = copy.deepcopy(stock)
            patch_model(quantized_hf_cache, kv_append=False)
            rooftop.quantize_model(quantized_hf_cache, bits=4, group_size=group)
        if args.prefill_attention_ab:
            sdpa_prefill = copy.deepcopy(stock)
            patch_model(sdpa_prefill, prefill_attention=False)
        if args.kv_fp8_ab:
            quantized_fp8_cache = copy.deepcopy(stock)
            patch_model(quantized_fp8_cache, kv_cache_dtype="fp8")
            rooftop.quantize_model(quantized_fp8_cache, bits=4, group_size=group)
        if args.rope_append_ab:
            quantized_rope_apart = copy.deepcopy(stock)
            patch_model(quantized_rope_apart, rope_append=False)
            rooftop.quantize_model(quantized_rope_apart, bits=4, group_size=group)
        byte_models = {}  # bits ("fp8" or 8) -> (the model, quantize_model's report)
        for bits in [b for b, asked in (("fp8", args.fp8), (8, args.int8)) if asked]:
            model = copy.deepcopy(patched)
            byte_models[bits] = model, rooftop.quantize_model(model, bits=bits, group_size=group)
        quantized_heads, head_errs = {}, {}
        for bits in args.lm_head_bits:
            quantized_heads[bits] = copy.deepcopy(quantized)  # lm_head is the one nn.Linear left in it
            rooftop.quantize_model(quantized_heads[bits], bits=bits, group_size=group, skip=())
            head_errs[bits] = agreement(quantized, quantized_heads[bits], ids)
        against_stock = {"patched": agreement(stock, patched, ids)}  # the numbers behind the speeds
        if not args.no_int4:
            against_stock[int4] = agreement(stock, quantized, ids)
        for bits, (model, _) in byte_models.items():
            against_stock[f"patched + {'fp8' if bits == 'fp8' else 'int8'}"] = agreement(stock, model, ids)
        torch_argmax = {"argmax": lambda logits: logits.argmax(-1)}
        plain, no_pdl, compiled = {"argmax": row_argmax}, {"row_pdl": False, "argmax": row_argmax}, {"compiled": True}
        stock_name = f"stock ({config._attn_implementation}" + (", grouped_mm experts)" if moe else ")")
        models = [(stock_name, stock, torch_argmax), (f"rooftop-patched {counts}", patched, plain),
                  ("rooftop-patched, projections apart (gate / up, q / k / v)", apart, plain)]
        if not args.no_int4:
            experts = [name for name in report["quantized"] if name.endswith("experts")]
            models += [(f"{int4} ({len(report['quantized']) - len(experts)} linears"
                        + (f", {len(experts)} experts" if experts else "") + ")", quantized, plain),
                       (f"{int4}, projections apart", quantized_apart, plain)]
        for bits, (model, byte_report) in byte_models.items():
            experts = [name for name in byte_report["quantized"] if name.endswith("experts")]
            models.append((f"patched + {'fp8 W8A8' if bits == 'fp8' else f'int8 W8A16 g{group}'} "
                           f"({len(byte_report['quantized']) - len(experts)} linears"
                           + (f", {len(experts)} experts weight-only" if experts else "") + ")", model, plain))
        if args.prefill_attention_ab:
            models.append(("rooftop-patched, prefill attention the model's own", sdpa_prefill, plain))
        if args.row_pdl_ab:
            models.append((f"{int4}, row kernels without PDL", quantized, no_pdl))
        if args.sdpa_decode_ab:
            models.append((f"{int4}, decode steps' attention by SDPA", quantized_sdpa, plain))
        if args.kv_append_ab:
            models.append((f"{int4}, static cache updated by transformers", quantized_hf_cache, plain))
        if args.rope_append_ab:
            models.append((f"{int4}, RoPE and cache update apart", quantized_rope_apart, plain))
        if args.kv_fp8_ab:
            models.append((f"{int4}, fp8 KV cache", quantized_fp8_cache, plain))
        if args.argmax_ab:
            models.append((f"{int4}, greedy token by torch's argmax", quantized, torch_argmax))
        models += [(f"{int4}, lm_head int{bits} g{group}", quantized_heads[bits], plain)
                   for bits in args.lm_head_bits]
        if args.compile:
            models += [("stock, step torch.compile'd", stock, {**compiled, **torch_argmax}),
                       ("rooftop-patched, step torch.compile'd", patched, {**compiled, **plain})]
            if not args.no_int4:
                models.append((f"{int4}, step torch.compile'd", quantized, {**compiled, **plain}))
        # Each model's place in the run moves its figure by up to ~14% (journal item 180): the models run in order,
        # then in reverse, --repeats rounds in all; a row gives each run and their median.
        runs: dict[str, list] = {name: [] for name, _, _ in models}
        decoders: dict[str, object] = {}
        for round_ in range(args.repeats):
            for name, model, options in (models if round_ % 2 == 0 else models[::-1]):
                _support.ROW_PDL = options.get("row_pdl", True)
                try:
                    if not args.graphs:
                        runs[name].append(generate_decode(model, ids, args.new))
                        continue
                    if name not in decoders:
                        _support.clear_plans()  # a plan keeps its first call's launch (its PDL flag)
                        decoders[name] = GraphedDecode(model, ids, args.new, options.get("compiled", False),
                                                       args.cache_len, options["argmax"])
                    runs[name].append(decoders[name]())
                except RuntimeError as err:  # e.g. an op that cannot be captured: recorded, the others still run
                    print(f"{name}: {type(err).__name__}: {str(err)[:300]}")
        _support.ROW_PDL = True
        copy_gbps = measure_ceilings().copy_GBps if device == "cuda" else None
        for name, model, _ in models:
            row = {"model": name}
            for key in ("tokens_per_s", "decode_tokens_per_s", "step_ms", "prefill_ms"):
                measured = [r[key] for r in runs[name] if key in r]
                row[key] = statistics.median(measured) if measured else None
            row["weight_GB"] = weight_bytes(model, args.batch) / 1e9
            # the step's floor: its weights read once at the measured copy bandwidth
            floor_ms = row["weight_GB"] / copy_gbps * 1e3 if copy_gbps else None
            row["floor_ms"] = floor_ms
            row["pct_of_floor"] = 100 * floor_ms / row["step_ms"] if floor_ms and row["step_ms"] else None
            row["runs"] = ", ".join(f"{r['decode_tokens_per_s' if 'step_ms' in r else 'tokens_per_s']:.1f}"
                                    for r in runs[name]) or "-"
            rows.append(row)
    speed = "decode_tokens_per_s" if args.graphs else "tokens_per_s"
    stock_speed = rows[0][speed]
    for r in rows:
        r["x_stock"] = r[speed] / stock_speed if r[speed] and stock_speed else None
    device_name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    setup = (("gpt-oss-20b's layer shapes (32 experts, top 4)" if args.gpt_oss and args.size == "8b" else
              f"gpt-oss's layers at {args.size} shapes" if args.gpt_oss else f"Llama-3-{args.size} layer shapes")
             + (" with 8 experts of them, top 2 (Mixtral's)" if args.moe else "")
             + f", {args.layers} layers, random weights, batch {args.batch}, "
             f"{args.prompt}-token prompt, {args.new} new tokens (greedy), "
             + (f"each decode step one CUDA graph replay, a static cache of "
                f"{max(args.cache_len, args.prompt + args.new + 4)}" if args.graphs else "HF generate, eager")
             + ("; the patched models' greedy tokens by rooftop.row_argmax" if args.graphs else "")
             + ("; no call plans" if args.no_plans else "")
             + (f"; quantized models in groups of {group}" if group != 128 else ""))
    family = "e2e_decode" + ("_moe" if args.moe else "_gpt_oss" if args.gpt_oss else "") + (
        f"_cache{args.cache_len}" if args.graphs and args.cache_len else "") + (
        f"_b{args.batch}" if args.batch > 1 else "") + (f"_g{group}" if group != 128 else "")
    path = write_results(args.out, family, [], {}, device_name,
                         tables={f"End-to-end decode, tokens/s ({setup})": rows},
                         notes=f"{setup}." + "".join(f" {m} against stock: {e}." for m, e in against_stock.items()) + (
                             "".join(f" lm_head int{b}: {e}." for b, e in head_errs.items())) + (
                             " tokens_per_s: the whole run; decode_tokens_per_s, step_ms: the graphed steps alone "
                             "(CUDA events), prefill_ms the eager prefill; floor_ms: weight_GB (every parameter and "
                             "buffer but the input embedding; of the experts, the share routed to) read once at the "
                             "measured copy bandwidth; x_stock by "
                             "decode tokens/s; runs: each round's." if args.graphs else ""))
    for r in rows:
        print(f"{r['model'][:60]:60s} {r[speed] or float('nan'):8.1f} tok/s"
              + (f" {r['step_ms']:6.3f} ms a step, {r['pct_of_floor'] or float('nan'):5.1f}% of its floor, prefill "
                 f"{r['prefill_ms']:6.2f} ms" if r.get("step_ms") else ""))
    for bits, err in head_errs.items():
        print(f"lm_head int{bits} against bf16 (both int4 models): {err}")
    for name, err in against_stock.items():
        print(f"{name} against stock: {err}")
    print("->", path)


if __name__ == "__main__":
    main()
