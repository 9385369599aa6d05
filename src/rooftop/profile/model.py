"""Where a model's forward pass spends its time, kernel by kernel, and how close known ops are to their roofline.

torch.profiler records a few forward passes with input shapes. Every kernel (on a CPU: every op's own
CPU time) is attributed to the outermost op rooftop knows that launched it:
- a rooftop op called inside `annotate(op, shape, dtype)` (a record_function range named
  "rooftop::<op>[<shape>,<dtype>]"), as the built-in model does for its norms and MLP activation;
- an aten op whose maths is a registered rooftop op (ATEN_OPS: aten::_softmax is `softmax`,
  aten::mm / aten::addmm are `matmul` when that op is registered), the shape from its input shapes;
- any other rooftop op call (a public op's range "rooftop::<op>" while the profiler records, or its custom op under
  torch.compile): named, with no shape, so no roofline (a model patched by patch_model).
The op's time per call (the sum of its kernels) against its cost model's floor on the measured
ceilings gives its % of roofline. Kernels of anything else show "-": nothing is guessed.

Models: "llama" is a small Llama built from transformers' LlamaConfig with random weights (when
transformers is importable), "tiny" a built-in Llama-style decoder in plain PyTorch that calls rooftop's
RMSNorm (fused with the residual add) and SwiGLU; a directory with a config.json builds that
architecture with random weights (transformers, nothing downloaded); a .py file must define
`build_model(device, dtype) -> (model, inputs)`.
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

_RANGE = re.compile(r"^rooftop::(?P<op>[\w.]+)\[(?P<shape>[\dx]*),(?P<dtype>\w+)\]$")
_OP_RANGE = re.compile(r"^rooftop::(?P<op>\w+)$")  # a public op's call (ops/_support.planned) or its custom op
_ATEN_DTYPES = {"c10::BFloat16": torch.bfloat16, "c10::Half": torch.float16, "float": torch.float32}


def _rows_shape(shape) -> list[int]:
    return [math.prod(shape[:-1]), shape[-1]]


# aten op -> (registry op, its shape from the aten op's input shapes)
ATEN_OPS = {
    "aten::_softmax": ("softmax", lambda shapes: _rows_shape(shapes[0])),
    "aten::mm": ("matmul", lambda shapes: [shapes[0][0], shapes[1][1], shapes[0][1]]),
    "aten::addmm": ("matmul", lambda shapes: [shapes[1][0], shapes[2][1], shapes[1][1]]),
}


@contextlib.contextmanager
def annotate(op: str, shape, dtype: torch.dtype):
    """Mark a rooftop op call (registry name, its benchmark shape) for `profile_model`."""
    name = f"rooftop::{op}[{'x'.join(map(str, shape))},{str(dtype).replace('torch.', '')}]"
    with torch.profiler.record_function(name):
        yield


# ---------------------------------------------------------------------------------------------
# The built-in model


class TinyLlama(nn.Module):
    """A Llama-style decoder: pre-norm blocks of GQA attention (SDPA, causal; no rotary embedding) and
    a SwiGLU MLP, RMSNorm fused with the residual add. rooftop=True uses rooftop's ops for the norms
    and the activation (annotated for the profiler), else the PyTorch a model would write."""

    def __init__(self, vocab: int = 32000, dim: int = 1024, layers: int = 4, heads: int = 16, kv_heads: int = 4,
                 hidden: int = 2816, rooftop: bool = True):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.rooftop = heads, kv_heads, dim // heads, rooftop
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(
                qkv=nn.Linear(dim, (heads + 2 * kv_heads) * self.head_dim, bias=False),
                out=nn.Linear(dim, dim, bias=False),
                gate_up=nn.Linear(dim, 2 * hidden, bias=False),
                down=nn.Linear(hidden, dim, bias=False))))
        self.norm_weights = nn.ParameterList(nn.Parameter(torch.ones(dim)) for _ in range(2 * layers + 1))
        self.head = nn.Linear(dim, vocab, bias=False)

    def _add_norm(self, x, residual, weight):
        """(rms_norm(x + residual) * weight, x + residual); residual None: (rms_norm(x) * weight, x)."""
        if self.rooftop:
            from rooftop.ops.rms_norm import rms_norm

            rows = [math.prod(x.shape[:-1]), x.shape[-1]]
            if residual is None:
                with annotate("rms_norm", rows, x.dtype):
                    return rms_norm(x, weight, 1e-6), x
            with annotate("add_rms_norm", rows, x.dtype):
                return rms_norm(x, weight, 1e-6, residual=residual)
        r = x if residual is None else x + residual
        rf = r.float()
        return weight * (rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype), r

    def _swiglu(self, gate, up):
        if self.rooftop:
            try:
                from rooftop.ops.activations import swiglu
            except ImportError:
                swiglu = None
            if swiglu is not None:
                with annotate("swiglu", [math.prod(gate.shape[:-1]), gate.shape[-1]], gate.dtype):
                    return swiglu(gate, up)
        return nn.functional.silu(gate) * up

    def forward(self, tokens):
        x = self.embed(tokens)
        B, S, D = x.shape
        residual = None
        for i, block in enumerate(self.blocks):
            h, residual = self._add_norm(x, residual, self.norm_weights[2 * i])
            q, k, v = block["qkv"](h).split([self.heads * self.head_dim, self.kv_heads * self.head_dim,
                                              self.kv_heads * self.head_dim], dim=-1)
            q = q.view(B, S, self.heads, self.head_dim).transpose(1, 2)
            k = k.view(B, S, self.kv_heads, self.head_dim).transpose(1, 2)
            v = v.view(B, S, self.kv_heads, self.head_dim).transpose(1, 2)
            attn = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            x = block["out"](attn.transpose(1, 2).reshape(B, S, D))
            h, residual = self._add_norm(x, residual, self.norm_weights[2 * i + 1])
            gate, up = block["gate_up"](h).chunk(2, dim=-1)
            x = block["down"](self._swiglu(gate, up))
        h, _ = self._add_norm(x, residual, self.norm_weights[-1])
        return self.head(h)


@dataclass
class ModelCase:
    name: str
    model: nn.Module
    inputs: tuple | dict


def build_model(name: str | None, device: str, dtype: torch.dtype, batch: int, seq: int) -> ModelCase:
    """The model to profile (see the module docstring) with a batch of random token ids."""
    name = name or ("llama" if importlib.util.find_spec("transformers") else "tiny")
    tokens = lambda vocab: torch.randint(0, vocab, (batch, seq), device=device)  # noqa: E731
    path = Path(name)
    if path.suffix == ".py" and path.is_file():
        spec = importlib.util.spec_from_file_location("rooftop_user_model", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not hasattr(module, "build_model"):
            raise ValueError(f"--model {name}: the file must define build_model(device, dtype) -> (model, inputs)")
        model, inputs = module.build_model(device, dtype)
        return ModelCase(path.name, model.eval(), inputs)
    if name == "tiny":
        small = device == "cpu"
        model = TinyLlama(vocab=4096 if small else 32000, dim=256 if small else 2048, layers=2 if small else 8,
                          heads=8 if small else 16, kv_heads=2 if small else 8, hidden=704 if small else 5632)
        model = model.to(device=device, dtype=dtype).eval()
        return ModelCase("tiny (built-in Llama-style)", model, (tokens(model.embed.num_embeddings),))
    try:
        import transformers
    except ImportError as err:
        raise ValueError(f"--model {name}: needs transformers (pip install transformers), "
                         f"or use --model tiny") from err
    if name == "llama":
        config = transformers.LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                                          num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=8,
                                          max_position_embeddings=4096)
    elif (path / "config.json").is_file():
        config = transformers.AutoConfig.from_pretrained(path)
    else:
        raise ValueError(f"--model {name}: not 'llama', 'tiny', a directory with config.json or a .py file")
    config._attn_implementation = "sdpa"
    model = transformers.AutoModelForCausalLM.from_config(config).to(device=device, dtype=dtype).eval()
    return ModelCase(f"{name} ({type(model).__name__}, random weights)", model,
                     {"input_ids": tokens(config.vocab_size), "use_cache": False})


# ---------------------------------------------------------------------------------------------
# Attribution


@dataclass
class KernelRow:
    """One kernel (or CPU op) at one known op and shape: its calls and time, the op's % of roofline."""

    kernel: str
    op: str | None
    shape: tuple | None
    calls: int
    time_us: float
    roofline_pct: float | None


def known_op(event, model_dtype: torch.dtype | None = None) -> tuple[str, tuple, torch.dtype] | None:
    """(registry op, shape, dtype) of a profiler event rooftop can cost, (op, None, None) of a rooftop op's call it
    cannot (no shape recorded), else None. An aten op's dtype
    is its inputs' where the profiler recorded them (it did not on the H200 with torch 2.11: input_dtypes
    None), else `model_dtype`, the dtype the model runs in."""
    found = _RANGE.match(event.name)
    if found:
        shape = tuple(int(s) for s in found["shape"].split("x")) if found["shape"] else ()
        return found["op"], shape, getattr(torch, found["dtype"])
    found = _OP_RANGE.match(event.name)
    if found:  # named, with no shape to cost
        return found["op"], None, None
    if event.name in ATEN_OPS:
        op, shape_of = ATEN_OPS[event.name]
        dtypes = getattr(event, "input_dtypes", None) or []
        dtype = next((_ATEN_DTYPES[d] for d in dtypes if d in _ATEN_DTYPES), None if dtypes else model_dtype)
        try:
            shape = tuple(shape_of(event.input_shapes))
        except (IndexError, TypeError):
            return None
        return (op, shape, dtype) if dtype is not None else None
    return None


def _spec(op: str):
    from rooftop import registry

    try:
        return registry.get(op)
    except KeyError:
        return None


def _rooftop_kernel_names() -> set[str]:
    """The names of rooftop's Triton and Gluon kernels (every @jit function of its op modules, interpreted or not)."""
    from triton.runtime.jit import KernelInterface

    from rooftop.profile.kernels import _op_modules

    return {obj.__name__ for module in _op_modules() for obj in vars(module).values()
            if isinstance(obj, KernelInterface)}


def _unlinked_kernels(events) -> tuple[dict[int, list[tuple[str, float]]], list[tuple[str, float]]]:
    """The kernels of rooftop's own launches, where this torch's profiler did not link them (Triton's C launcher calls
    cuLaunchKernelEx, whose kernels it leaves as bare device events, and at times links another library's kernel to
    that call instead; cuBLAS's launches by the same call are linked: journal items 195, 200). Returns ({id of a launch
    call: the kernels it made, (name, µs)}, [kernels no call is known to have made]). The launch calls are the
    cuLaunchKernelEx calls made straight from a rooftop op (the event above them named rooftop::...; a library's
    launch sits under an aten op), paired in order (one stream runs them in launch order) with rooftop's unlinked
    kernels when they are as many (otherwise none is paired); a kernel of another library linked to such a call is
    listed with no op, as are the other unlinked kernels."""
    cpu = torch.autograd.DeviceType.CPU
    linked: dict[str, int] = {}
    for event in events:
        for k in event.kernels:
            linked[k.name] = linked.get(k.name, 0) + 1
    cpu_names = {e.name for e in events if e.device_type == cpu}
    ours, others = [], []
    names = _rooftop_kernel_names()
    for event in sorted((e for e in events if e.device_type == torch.autograd.DeviceType.CUDA),
                        key=lambda e: e.time_range.start):
        if event.name in cpu_names:  # a record_function range's GPU side, not a kernel
            continue
        if linked.get(event.name, 0) > 0:  # the device side of a kernel a CPU call lists
            linked[event.name] -= 1
            continue
        (ours if event.name in names else others).append((event.name, event.time_range.end - event.time_range.start))
    launches = sorted((e for e in events if e.device_type == cpu and e.name == "cuLaunchKernelEx"
                       and e.cpu_parent is not None and e.cpu_parent.name.startswith("rooftop::")),
                      key=lambda e: e.time_range.start)
    if len(launches) != len(ours):
        return {}, ours + others
    made = {}
    for launch, kernel in zip(launches, ours):
        made[id(launch)] = [(k.name, k.duration) for k in launch.kernels if k.name in names] + [kernel]
        others += [(k.name, k.duration) for k in launch.kernels if k.name not in names]
    return made, others


def attribute(events, ceilings=None, on_gpu: bool = True, model_dtype: torch.dtype | None = None) -> list[KernelRow]:
    """Kernels (on_gpu) or ops' own CPU time, each attributed to the outermost known op above it.

    events: torch.profiler's function events; ceilings: for the % of roofline (None: no roofline);
    model_dtype: the dtype of aten ops whose input dtypes were not recorded. rooftop's kernels whose launch the
    profiler did not link are given to their launch calls by order (_unlinked_kernels), or listed with no op.
    """
    rows: dict[tuple, dict] = {}
    instances: dict[int, dict] = {}  # id of a known op's event -> its floor and total time
    made, orphans = _unlinked_kernels(events) if on_gpu else ({}, [])

    def add(name, us, owner):
        op, shape = (owner[1][0], owner[1][1]) if owner else (None, None)
        row = rows.setdefault((name, op, shape), {"calls": 0, "time_us": 0.0, "owners": set()})
        row["calls"] += 1
        row["time_us"] += us
        if owner:
            row["owners"].add(owner[0])
            instances[owner[0]]["time_us"] += us

    def visit(event, owner):
        if owner is None and (found := known_op(event, model_dtype)) is not None and \
                (found[1] is None or _spec(found[0]) is not None):
            owner = (id(event), found)
            instances[id(event)] = {"floor_s": _floor(found, ceilings), "time_us": 0.0}
        if on_gpu:
            items = made.get(id(event)) or [(k.name, k.duration) for k in event.kernels]
        else:
            items = [(event.name, event.self_cpu_time_total)] if event.self_cpu_time_total > 0 else []
        for name, us in items:
            add(name, us, owner)
        for child in event.cpu_children:
            visit(child, owner)

    for event in events:
        if event.cpu_parent is None and event.device_type == torch.autograd.DeviceType.CPU:
            visit(event, None)
    for name, us in orphans:
        add(name, us, None)
    out = []
    for (name, op, shape), r in rows.items():
        mine = [instances[i] for i in r["owners"]]
        pct = None
        if mine and all(m["floor_s"] is not None for m in mine) and sum(m["time_us"] for m in mine) > 0:
            pct = 100 * sum(m["floor_s"] for m in mine) / (sum(m["time_us"] for m in mine) * 1e-6)
        out.append(KernelRow(name, op, shape, r["calls"], r["time_us"], pct))
    return sorted(out, key=lambda r: -r.time_us)


def _floor(found, ceilings) -> float | None:
    if ceilings is None:
        return None
    op, shape, dtype = found
    try:
        return _spec(op).cost(shape, dtype).floor_s(ceilings)
    except Exception:  # a shape the cost model cannot take: no roofline rather than a guess
        return None


def profile_model(name: str | None = None, batch: int | None = None, seq: int | None = None, steps: int = 3,
                  dtype: torch.dtype = torch.bfloat16, top: int = 15,
                  patch: bool = False) -> tuple[ModelCase, list[KernelRow], float]:
    """Profile `steps` forward passes; (the model, its top kernel rows, total time in µs). patch: the model with
    rooftop's fused ops swapped in first (rooftop.integrations.hf.patch_model)."""
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    if not on_gpu and dtype == torch.bfloat16:
        dtype = torch.float32  # CPU matmuls in bf16 are slow and not what is being studied
    case = build_model(name, device, dtype, batch or (8 if on_gpu else 1), seq or (512 if on_gpu else 64))
    if patch:
        from rooftop.integrations.hf import patch_model

        changed = {k: n for k, n in patch_model(case.model).items() if n}
        case = ModelCase(f"{case.name}, patched {changed}", case.model, case.inputs)
    ceilings = None
    if on_gpu:
        from rooftop.hardware import ceilings_for

        ceilings = ceilings_for()
    run = (lambda: case.model(**case.inputs)) if isinstance(case.inputs, dict) else \
        (lambda: case.model(*case.inputs))
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if on_gpu else [])
    with torch.inference_mode():
        for _ in range(2):  # compile the kernels, warm the allocator
            run()
        if on_gpu:
            torch.cuda.synchronize()
        with torch.profiler.profile(activities=activities, record_shapes=True) as prof:
            for _ in range(steps):
                run()
            if on_gpu:
                torch.cuda.synchronize()
    rows = attribute(prof.events(), ceilings, on_gpu, dtype)
    return case, rows[:top], sum(r.time_us for r in rows)
