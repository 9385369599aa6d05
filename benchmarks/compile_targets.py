"""Offline compile of every Triton kernel launch the test suite makes, for GPUs other than the H200 (no GPU
needed): does each kernel compile for sm_80 (A100), sm_86 (A10, RTX 3090), sm_89 (L40S, RTX 4090), sm_90, sm_100
(B200) and sm_120 (RTX 5090), and does its shared memory fit the card's per-block limit? The interpreter cannot
say: it runs any dtype and any size.

Phase 1 runs pytest in the interpreter with a hook on InterpretedFunction.run that records each launch's kernel,
argument types (as Triton would specialise them on a GPU: dtypes, 16-byte alignment, ints divisible by 16, ints
equal to 1) and constexprs. Phase 2 (no interpreter) compiles each distinct launch with triton.compile for each
target and reads registers, spills and shared memory off the cubin (cuobjdump). Block sizes and stages are the
interpreter's choices, which can be smaller than a GPU's: this answers "compiles?" and bounds shared memory from
below; the Gluon kernels (sm_90 only, gated by _support.is_sm90) are not launched by the interpreter and not here.

Usage (from the repo root): .venv/bin/python benchmarks/compile_targets.py [--tests tests] [--targets 80,86,89,90]
  [--record F] [--jobs 2]; writes the records to F (default /tmp/launches.json) and prints one row a failure or
  over-limit launch, then a count a target."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

# what the wrappers set on a GPU only: quant_matmul._launch_path's inline-PTX paths, decode_attention's stages
GPU_VARIANTS = ("_qgemm_kernel:PAIRED_ASM=True", "_qgemv_kernel:X_ASM=True", "_decode_attention_kernel:num_stages=3")
# shared memory a block may opt into (cudaDevAttrMaxSharedMemoryPerBlockOptin), bytes
SMEM_LIMIT = {75: 65536, 80: 166912, 86: 101376, 89: 101376, 90: 232448, 100: 232448, 120: 101376}


def _describe(value, specialize: bool):
    """One argument as Triton specialises it: (type string, divisible by 16) or a constexpr's value."""
    import torch
    from triton.runtime import jit
    if isinstance(value, torch.Tensor):
        return {"type": jit.mangle_type(value), "aligned": value.data_ptr() % 16 == 0}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return {"value": value}
    if isinstance(value, int):
        return {"type": jit.mangle_type(value), "value": value, "aligned": specialize and value % 16 == 0,
                "one": specialize and value == 1}
    if isinstance(value, float):
        return {"type": "fp32", "value": value}
    if hasattr(value, "block_shape"):  # a host TMA descriptor
        return {"type": jit.mangle_type(value)}
    return {"value": repr(value)[:80]}


class Recorder:
    """pytest plugin: every interpreted launch's kernel, arguments and options, deduplicated."""

    def __init__(self):
        self.launches: dict[str, dict] = {}

    def pytest_configure(self, config):
        from triton.runtime.interpreter import InterpretedFunction
        original = InterpretedFunction.run
        recorder = self

        def run(fn_self, *args, grid, warmup, **kwargs):
            recorder.add(fn_self, args, kwargs)
            return original(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
        InterpretedFunction.run = run

    def add(self, fn_self, args, kwargs):
        fn = fn_self.fn
        if not fn.__module__.startswith("rooftop."):  # the tests' own kernels
            return
        options = {k: kwargs[k] for k in ("num_warps", "num_stages") if k in kwargs}
        named = dict(zip(fn_self.arg_names, args))
        named.update({k: v for k, v in kwargs.items() if k in fn_self.arg_names})
        skip = set(getattr(fn_self, "kwargs", {}).get("do_not_specialize", ()) or ())
        described = {name: _describe(v, name not in skip) for name, v in named.items()}
        record = {"module": fn.__module__, "name": fn.__qualname__, "args": described, "options": options}
        self.launches.setdefault(json.dumps(record, sort_keys=True, default=str), record)


def record(tests: str, path: str) -> None:
    os.environ["TRITON_INTERPRET"] = "1"
    import pytest
    recorder = Recorder()
    pytest.main(["-q", "-p", "no:logging", "-p", "no:cacheprovider", tests], plugins=[recorder])
    with open(path, "w") as f:
        json.dump(list(recorder.launches.values()), f)
    print(f"{len(recorder.launches)} distinct launches recorded in {path}")


def _compile(job):
    """Compile one launch for one target: (ok, message) with registers, spills and shared memory."""
    record, target = job
    import importlib
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    kernel = getattr(importlib.import_module(record["module"]), record["name"])
    constexpr_params = {p.name for p in kernel.params if p.is_constexpr}
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(kernel.arg_names):
        arg = record["args"].get(name)
        if arg is None:  # a parameter left at its default
            default = kernel.params[i].default
            signature[name], constexprs[name] = "constexpr", default
        elif name in constexpr_params or "type" not in arg or arg.get("one"):
            signature[name], constexprs[name] = "constexpr", arg["value"]
        else:
            signature[name] = arg["type"]
            if arg.get("aligned"):
                attrs[(i,)] = [["tt.divisibility", 16]]
    options = dict(record["options"])
    try:
        compiled = triton.compile(ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs),
                                  target=GPUTarget("cuda", target, 32), options=options)
    except Exception as err:  # what a user on this card would see at the first launch
        return False, f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:200]}"
    binary = os.path.dirname(triton.__file__) + "/backends/nvidia/bin/cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        usage = subprocess.run([binary, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", usage)
    stack = re.search(r"STACK:(\d+)", usage)
    shared = compiled.metadata.shared
    fits = shared <= SMEM_LIMIT[target]
    return fits, f"regs {regs.group(1) if regs else '?'} stack {stack.group(1) if stack else '?'} shared {shared}" + (
        "" if fits else f" > {SMEM_LIMIT[target]}")


def with_variants(records: list[dict], variants: list[str]) -> list[dict]:
    """records plus, for each variant "kernel:NAME=VALUE", a copy of that kernel's launches with the constexpr or
    launch option NAME set to VALUE (a Python literal): what only a GPU takes (inline PTX, pipeline stages), which the
    interpreter never records."""
    import ast
    extra = []
    for variant in variants:
        kernel, assignment = variant.split(":")
        name, value = assignment.split("=")
        for record in records:
            if record["name"] == kernel and (name in record["args"] or name in ("num_warps", "num_stages")):
                copy = json.loads(json.dumps(record))
                if name in record["args"]:
                    copy["args"][name] = {"value": ast.literal_eval(value)}
                else:
                    copy["options"][name] = ast.literal_eval(value)
                extra.append(copy)
    unique = {json.dumps(r, sort_keys=True): r for r in records + extra}
    return list(unique.values())


def compile_all(path: str, targets: list[int], jobs: int, variants: list[str], kernels: str = "") -> int:
    with open(path) as f:
        records = with_variants(json.load(f), variants)
    if kernels:
        records = [r for r in records if r["name"] in kernels.split(",")]
    work = [(r, t) for r in records for t in targets]
    failures = {t: 0 for t in targets}
    with ProcessPoolExecutor(jobs) as pool:
        for (record, target), (ok, message) in zip(work, pool.map(_compile, work)):
            if not ok:
                failures[target] += 1
                consts = {k: v.get("value") for k, v in record["args"].items() if "type" not in v or k.isupper()}
                print(f"sm_{target} {record['name']} {record['options']} {consts}: {message}")
    for t in targets:
        print(f"sm_{t}: {failures[t]} of {len(records)} launches fail to compile or exceed the shared memory")
    return sum(failures.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", default="tests")
    parser.add_argument("--targets", default="80,86,89,90")
    parser.add_argument("--record", default="/tmp/launches.json")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--compile-only", action="store_true", help="phase 2 on an existing record file")
    parser.add_argument("--kernels", default="", help="compile only these kernels (comma-separated names)")
    parser.add_argument("--variant", action="append", default=list(GPU_VARIANTS),
                        help="kernel:NAME=VALUE, a constexpr set as a GPU sets it (default: %(default)s)")
    args = parser.parse_args()
    if not args.compile_only:  # phase 1 in its own process: the interpreter is chosen when triton is imported
        subprocess.run([sys.executable, __file__, "--record-phase", args.tests, args.record], check=True)
    targets = [int(t) for t in args.targets.split(",")]
    return 1 if compile_all(args.record, targets, args.jobs, args.variant, args.kernels) else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--record-phase":
        sys.path.insert(0, "src")
        record(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
