"""What the Triton kernels of one op call use: registers, spills, shared memory, warps, grid.

Every rooftop kernel is launched through ops._support.launch; while an op runs here, that helper is
wrapped in each op module so that each launch (kernel, grid, arguments, constexprs, num_warps) is
recorded. Then:
- on a GPU (`gpu_kernels`) the op really runs, and each kernel's CompiledKernel (the one Triton's
  cache and the launch cache hold; JITFunction.warmup finds it without launching) gives n_regs and
  n_spills as the driver reports them, shared memory and num_warps;
- without a GPU (`offline_kernels`) the launches are recorded but not run: each kernel is compiled by
  Triton's own compiler for the target architecture (sm_90: the H200) with the specialisation a real
  launch would get, and registers and local memory (spills) are read from the cubin with the
  cuobjdump that ships with Triton. This runs in a child process (`python -m rooftop.profile.kernels`)
  because the kernels must be imported as JIT functions, not in the interpreter; the op's grid is
  computed for the target's SM count. An op that autotunes shows its default configuration here.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass

OFFLINE_ARCH = 90  # compute capability the offline compile targets (H100/H200)
OFFLINE_SMS = 132


@dataclass
class Launch:
    kernel: object  # triton JITFunction
    grid: tuple
    args: tuple
    constexprs: dict

    @property
    def name(self) -> str:
        return getattr(self.kernel, "__name__", None) or getattr(getattr(self.kernel, "fn", None), "__name__", "?")


def _op_modules() -> list:
    import rooftop.ops  # noqa: F401  (imports every op module)

    return [m for name, m in list(sys.modules.items()) if name.startswith("rooftop.ops.") and m is not None]


@contextlib.contextmanager
def recorded_launches(execute: bool = True):
    """Record every launch the op modules make through _support.launch; run them too when execute."""
    from rooftop.ops import _support

    real = _support.launch
    launches: list[Launch] = []

    def recording(kernel, grid, *args, **constexprs):
        launches.append(Launch(kernel, tuple(grid), args, dict(constexprs)))
        if execute:
            real(kernel, grid, *args, **constexprs)

    modules = [m for m in _op_modules() if getattr(m, "launch", None) is real]
    for m in modules:
        m.launch = recording
    try:
        yield launches
    finally:
        for m in modules:
            m.launch = real


def _summary(launch: Launch, **figures) -> dict:
    return {"kernel": launch.name, "grid": list(launch.grid), "grid_size": math.prod(launch.grid),
            "num_warps": launch.constexprs.get("num_warps", 4), "num_stages": launch.constexprs.get("num_stages"),
            "constexprs": {k: v for k, v in launch.constexprs.items() if k not in ("num_warps", "num_stages")
                           and isinstance(v, (int, float, str, bool))}, **figures}


def gpu_kernels(op: str, shape, dtype: str = "bf16") -> list[dict]:
    """Run `op` once on the GPU; the compiled resources of each kernel it launched (driver figures)."""
    import torch

    from rooftop import registry
    from rooftop.bench.sweep import parse_dtype

    spec = registry.get(op)
    inputs = spec.make_inputs(tuple(shape), parse_dtype(dtype), "cuda")
    spec.run(*inputs)  # compiles, and autotunes where an op does, so that the recorded call is the real one
    torch.cuda.synchronize()
    with recorded_launches(execute=True) as launches:
        spec.run(*inputs)
    torch.cuda.synchronize()
    out = []
    for launch in launches:
        compiled = launch.kernel.warmup(*launch.args, grid=launch.grid, **launch.constexprs)
        compiled._init_handles()
        out.append(_summary(launch, n_regs=compiled.n_regs, n_spills=compiled.n_spills,
                            shared=compiled.metadata.shared, num_warps=compiled.metadata.num_warps,
                            source=f"driver ({torch.cuda.get_device_name()})"))
    return out


def _cuobjdump(cubin: bytes, option: str) -> str:
    """cuobjdump's text for a cubin (Triton's own cuobjdump: ptxas may be torch's, which ships none)."""
    import tempfile

    from triton import knobs

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        return subprocess.run([knobs.nvidia.cuobjdump.path, option, path], capture_output=True, text=True,
                              check=True).stdout


def _written_registers(instruction: str) -> set[int]:
    """The general registers an SASS instruction writes: its destination, the first operand (SHFL's second, after its
    predicate), 4 registers for a 4-matrix LDSM, 2 for 64-bit results; none for stores, branches, barriers and the
    MMAs (whose accumulators are left out)."""
    found = re.match(r"(?:@!?U?P\w+\s+)?([A-Z][\w.]*)\s+(PT, )?R(\d+)\b", instruction)
    if found is None or (found.group(2) and not found.group(1).startswith("SHFL")) or found.group(1).startswith(
            ("ST", "RED", "BRA", "BAR", "WARPGROUP", "SYNCS", "EXIT", "RET", "HGMMA", "QGMMA", "IGMMA", "BGMMA")):
        return set()
    opcode, first = found.group(1), int(found.group(3))
    width = 4 if opcode.startswith("LDSM") and opcode.endswith(".4") else 2 if ".64" in opcode else 1
    return set(range(first, first + width))


def clobbered_mma_operands(cubin: bytes) -> list[str]:
    """Warpgroup MMAs (HGMMA / QGMMA / IGMMA / BGMMA) in a loop whose register A operand comes from before the loop
    (not made earlier in the same iteration) and is written later in it: the next iteration's MMA reads what
    overwrote it. ptxas 12.8 does this to packed attention tiles in one key loop
    (attention.PACKED_SINGLE_LOOP_MAX_BLOCK_N). A loop: a backward branch and its target, with no EXIT between them
    (which leaves out the out-of-line retries of barrier waits after the exit, branching back into a loop). Each
    finding once: "MMA <- the instruction that overwrites its operand"; none: []."""
    lines = [(int(address, 16), text.strip()) for address, text in
             re.findall(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", _cuobjdump(cubin, "-sass"))]
    found: dict[str, None] = {}
    for end, (address, text) in enumerate(lines):
        branch = re.fullmatch(r"(?:@!?U?P\w+\s+)?BRA(?:\.U)?(?: !?U?P\w+,)? (0x[0-9a-f]+)", text)
        if branch is None or int(branch.group(1), 16) >= address:
            continue
        start = next(i for i, (a, _) in enumerate(lines) if a >= int(branch.group(1), 16))
        body = [t for _, t in lines[start:end + 1]]
        if any(t == "EXIT" for t in body):
            continue
        for i, instruction in enumerate(body):
            mma = re.match(r"(?:@!?U?P\w+\s+)?[HQIB]GMMA\.\S+ R\d+, R(\d+), gdesc", instruction)
            if mma is None:
                continue
            operand = set(range(int(mma.group(1)), int(mma.group(1)) + 4))
            if any(_written_registers(t) & operand for t in body[:i]):
                continue
            later = next((t for t in body[i + 1:] if _written_registers(t) & operand), None)
            if later is not None:
                found[f"{instruction} <- {later}"] = None
    return list(found)


def _cubin_resources(cubin: bytes, name: str) -> dict:
    """Registers and local memory of kernel `name` in a cubin (cuobjdump -res-usage)."""
    text = _cuobjdump(cubin, "-res-usage")
    found = re.search(rf"Function {re.escape(name)}:\s*\n\s*REG:(\d+).*?LOCAL:(\d+)", text)
    if found is None:
        raise RuntimeError(f"cuobjdump -res-usage did not list kernel {name!r}: {text[-300:]}")
    return {"n_regs": int(found.group(1)), "n_spills": int(found.group(2)) // 4}


def compile_offline(launch: Launch, arch: int = OFFLINE_ARCH) -> dict:
    """Compile a recorded launch for sm_<arch> without a GPU, as JITFunction.run would specialise it."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile, make_backend
    from triton.runtime.jit import create_function_from_signature

    kernel = launch.kernel
    target = GPUTarget("cuda", arch, 32)
    backend = make_backend(target)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    kwargs = dict(launch.constexprs, debug=False)
    bound_args, specialization, options = binder(*launch.args, **kwargs)
    options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound_args, specialization, options)
    compiled = compile(ASTSource(kernel, signature, constexprs, attrs), target=target, options=options.__dict__)
    cubin = compiled.asm["cubin"]
    return _summary(launch, **_cubin_resources(cubin, compiled.name),
                    shared=compiled.metadata.shared, num_warps=compiled.metadata.num_warps,
                    clobbered_mma_operands=clobbered_mma_operands(cubin) if arch == 90 else None,
                    source=f"offline compile for sm_{arch} (ptxas)")


def _offline_in_this_process(op: str, shape, dtype: str, arch: int, sms: int) -> list[dict]:
    """Child process body: record the launches of one CPU call (not run), compile each for sm_<arch>."""
    from rooftop import registry
    from rooftop.bench.sweep import parse_dtype
    from rooftop.ops import _support

    real_num_sms = _support.num_sms
    for m in _op_modules():  # grids as on a GPU of `sms` SMs (the op modules', not _support's own)
        if m is not _support and getattr(m, "num_sms", None) is real_num_sms:
            m.num_sms = lambda index: sms
    os.environ["TRITON_INTERPRET"] = "1"  # CPU tensors take the kernel path (runs_kernel); nothing runs
    spec = registry.get(op)
    inputs = spec.make_inputs(tuple(shape), parse_dtype(dtype), "cpu")
    with recorded_launches(execute=False) as launches:
        spec.run(*inputs)
    return [compile_offline(launch, arch) for launch in launches]


def offline_kernels(op: str, shape, dtype: str = "bf16", arch: int = OFFLINE_ARCH, sms: int = OFFLINE_SMS,
                    timeout: float = 300) -> list[dict]:
    """The kernels `op` would launch at `shape` on an sm_<arch> GPU of `sms` SMs, compiled here without
    one; raises RuntimeError when that fails (e.g. no ptxas)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "rooftop.profile.kernels", op, ",".join(map(str, shape)), dtype, str(arch), str(sms)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"offline compile of {op} {list(shape)} failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    op_name, shape_text, dtype_name, arch_text, sms_text = sys.argv[1:6]
    result = _offline_in_this_process(op_name, [int(s) for s in shape_text.split(",")], dtype_name,
                                      int(arch_text), int(sms_text))
    print(json.dumps(result))
