"""Test setup: on a machine without CUDA the kernels run in Triton's interpreter (set before any
import of triton); the same tests run on a GPU with real CUDA tensors, plus the ones marked slow."""
import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

DEVICE = "cuda" if HAS_CUDA else "cpu"
# Tests check correctness: no launch-parameter tuning (seconds of compiling per shape) unless a test asks
os.environ.setdefault("ROOFTOP_AUTOTUNE", "0")


def compiler_env() -> dict:
    """The environment of a subprocess that compiles kernels for a GPU target: this one's without the interpreter, the
    rooftop this process imported first on its path (an editable install's .pth was once not seen there in CI)."""
    import rooftop

    src = os.path.dirname(os.path.dirname(os.path.abspath(rooftop.__file__)))
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    return env


def _interpreter_rounds_like_the_gpu() -> None:
    """Test-only patch: Triton 3.6's interpreter casts float32 -> bfloat16 by truncation, where the
    GPU rounds to nearest even, and rounds float32 -> fp8 wrongly. Round like the GPU, through torch
    (bf16 and fp8 are kept as raw uint bits)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    cast = interpreter.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            bits = torch.from_numpy(np.ascontiguousarray(src.data, dtype=np.float32)).to(torch.bfloat16)
            return interpreter.TensorHandle(bits.view(torch.int16).numpy().view(np.uint16), tl.bfloat16)
        return cast(self, src, dst_type)

    interpreter.InterpreterBuilder.cast_impl = cast_impl

    # its fp32 -> fp8 rounding drops the carry into the exponent (125.2 -> 64, not 128): cast via torch
    to_fp8 = interpreter.InterpreterBuilder.create_fp_to_fp
    fp8 = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        if src.dtype.scalar == tl.float32 and dst_type.scalar in fp8:
            vals = torch.from_numpy(np.ascontiguousarray(src.data, dtype=np.float32)).to(fp8[dst_type.scalar])
            return interpreter.TensorHandle(vals.view(torch.uint8).numpy(), dst_type.scalar)
        return to_fp8(self, src, dst_type, rounding_mode)

    interpreter.InterpreterBuilder.create_fp_to_fp = create_fp_to_fp


def _interpreter_dots_bf16_as_fp32() -> None:
    """Test-only patch: the interpreter keeps bf16 as raw uint16 bits and its tl.dot multiplies the
    bits. Widen bf16 operands to fp32 (bits << 16) first; the product is then exact, as on the GPU."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    dot = interpreter.InterpreterBuilder.create_dot

    def widen(t):
        if t.dtype.scalar != tl.bfloat16:
            return t
        bits = np.ascontiguousarray(t.data).view(np.uint16).astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), tl.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return dot(self, widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    interpreter.InterpreterBuilder.create_dot = create_dot


def _interpreter_drops_nan_like_the_gpu() -> None:
    """Test-only patch: tl.maximum, tl.minimum and tl.clamp without propagate_nan are the GPU's max.f32 / min.f32,
    where a number beside a NaN wins (fmax, fmin), but the interpreter's np.maximum / np.clip keep the NaN: a kernel
    that passed here could drop a NaN on the GPU. A kernel that needs the NaN asks for it (tl.PropagateNan.ALL)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    builder.create_maxnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmax)
    builder.create_minnumf = lambda self, lhs, rhs: self.binary_op(lhs, rhs, np.fmin)
    clamp = builder.create_clampf

    def create_clampf(self, arg, lo, hi, propagate_nans):
        if propagate_nans == tl.PropagateNan.ALL:
            return clamp(self, arg, lo, hi, propagate_nans)
        return self.ternary_op(arg, lo, hi, lambda x, low, high: np.fmin(np.fmax(x, low), high))

    builder.create_clampf = create_clampf


if not HAS_CUDA:
    _interpreter_rounds_like_the_gpu()
    _interpreter_dots_bf16_as_fp32()
    _interpreter_drops_nan_like_the_gpu()

# ||out - ref|| / ||ref|| against a float64 reference (DESIGN.md)
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.5e-2}


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative Frobenius error; NaN or inf anywhere where the reference is finite never passes."""
    out = out.double()
    ref = ref.double()
    finite = torch.isfinite(ref)
    if not torch.equal(torch.isfinite(out), finite):
        return float("inf")
    diff = torch.linalg.vector_norm((out - ref)[finite])
    return float(diff / torch.linalg.vector_norm(ref[finite]).clamp_min(1e-30))


def assert_quantized(q, scale, y_ref, quant) -> None:
    """q, scale: y_ref (float64) quantized per row as quantize_rows_reference does, up to rounding."""
    from rooftop.ops._support import QUANT_FORMATS, quantize_rows_reference

    dtype = QUANT_FORMATS[quant][0]
    qmax = float(torch.finfo(dtype).max if dtype.is_floating_point else torch.iinfo(dtype).max)  # not the table's
    assert q.dtype == dtype and q.shape == y_ref.shape
    assert scale.dtype == torch.float32 and scale.shape == (*y_ref.shape[:-1], 1)
    q_ref, scale_ref = quantize_rows_reference(y_ref, quant)
    assert rel_err(scale, scale_ref) < 1e-5
    # every row uses its full range, and dequantizing gives y back to the format's precision
    assert torch.allclose(q.float().abs().amax(-1), torch.full(y_ref.shape[:-1], qmax, device=q.device))
    # dequantized, each element is within the format's rounding of y: half a step for int8; half an
    # ulp of a 3-bit mantissa (1/16 of |y|) for fp8, with e4m3's subnormal step (2^-9) near zero
    err = (q.double() * scale.double() - y_ref).abs()
    if quant == "int8":
        assert (err <= 0.5 * scale.double() * (1 + 1e-4) + 1e-6 * y_ref.abs()).all()
    else:
        assert (err <= y_ref.abs() / 16 * (1 + 1e-4) + scale.double() * 2.0**-10).all()
    if quant == "int8":  # the same integers as the reference but where y / s sits within fp32's error of a tie
        # (y / s = 127 x / max|x| without a weight: bf16 rows tie exactly at ~0.5% of their elements)
        exact = (y_ref / scale_ref).abs()
        near_tie = (exact - exact.floor() - 0.5).abs() < 1e-3
        assert (q.int() - q_ref.int()).abs().max() <= 1
        assert (q.int() == q_ref.int())[~near_tie].all()
    else:
        assert (q.float() - q_ref.float()).abs().div(q_ref.float().abs().clamp_min(1)).max() <= 0.125


def fp8_linear_expected(x, codes, scale, bias=None) -> torch.Tensor:
    """fp8_linear(x, codes, scale, bias) in float64, [rows of x, N], from x's rows as rooftop.quantize_rows quantizes
    them (checked against the reference up to fp8's rounding: assert_quantized), not as quantize_rows_reference does:
    float32 maths and the float64 reference round some near-tie elements to neighbouring e4m3 codes, at about 5% of
    bf16 rows (a few codes each, journal item 408), which moves a row's product by up to ~3%, past bf16's
    tolerance."""
    import rooftop
    rows = x.reshape(-1, x.shape[-1])
    q, q_scale = rooftop.quantize_rows(rows, "fp8")
    assert_quantized(q, q_scale, rows.double(), "fp8")
    out = (q.double() * q_scale.double()) @ (codes.double() * scale.double()[:, None]).t()
    return out if bias is None else out + bias.double()


def assert_attention_result(out, lse, ref, ref_lse, q, tol=None) -> None:
    """An attention op's out (q's shape and dtype) and lse ([B, H, Sq] fp32) against the float64 reference: no NaN,
    out within the dtype's tolerance (or `tol`), lse within 1e-5 and -inf exactly where the reference has it."""
    assert out.shape == q.shape and out.dtype == q.dtype
    assert lse.shape == q.shape[:3] and lse.dtype == torch.float32
    assert not out.isnan().any() and not lse.isnan().any()
    assert rel_err(out, ref) < (tol or TOL[q.dtype])
    assert rel_err(lse, ref_lse) < 1e-5


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (runs on the H200)")
    for item in items:
        if "slow" in item.keywords or "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture(autouse=True)
def poisoned_empty(monkeypatch):
    """torch.empty, empty_like and empty_strided return NaN-filled float tensors, so an element a kernel
    forgot to write shows up. The fill is hidden from a call's recording (ops/_support.py's plans), as the
    allocation alone would be."""
    from torch.utils._python_dispatch import _disable_current_modes

    def poisoned(real):
        def alloc(*args, **kwargs):
            t = real(*args, **kwargs)
            if t.is_floating_point() and not t.requires_grad:  # leave torch.compile's own tensors alone
                with torch.no_grad(), _disable_current_modes():
                    t.fill_(float("nan"))
            return t
        return alloc

    for name in ("empty", "empty_like", "empty_strided"):
        monkeypatch.setattr(torch, name, poisoned(getattr(torch, name)))
    yield


@pytest.fixture(autouse=True)
def cuda_cache_returned():
    """On a GPU, a test's cached blocks go back to the driver after it once they pass 4 GiB: under pytest-xdist a
    dozen workers share the card, and the blocks one kept from a large test ran others out of memory (session 37's
    whole-suite run: 26 tests, every one out of memory)."""
    yield
    if HAS_CUDA and torch.cuda.memory_reserved() > (4 << 30):
        torch.cuda.empty_cache()


@pytest.fixture(autouse=True)
def fresh_plans():
    """Each test starts without recorded calls: a test's switches (monkeypatched module constants) apply
    to its first call of each signature."""
    from rooftop.ops import _support
    _support.clear_plans()
    yield


def spy_launches(monkeypatch, module) -> list:
    """The names of the kernels `module` launches (through its `launch`), from now on; every call takes its
    full path (a replayed call, ops/_support.py's plans, launches without `launch`)."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "PLANS_ENABLED", False)
    names = []
    real = module.launch
    monkeypatch.setattr(module, "launch", lambda kernel, *a, **k: names.append(kernel.fn.__name__)
                        or real(kernel, *a, **k))
    return names


def skip_unless_sm90() -> None:
    """Skips the calling test where there is no sm_90 GPU: the Gluon kernels run there only."""
    if not HAS_CUDA or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon path runs on sm_90 GPUs only")


def replayed_by_switch(chain, switch) -> dict[bool, list]:
    """For a switch off, then on (`switch(value)`): `chain(outs)` (which fills the list outs) captured in a CUDA graph
    and replayed three times; the outputs (copies) of each, by the switch's value."""
    from rooftop.bench.timing import capture_graph
    results = {}
    for on in (False, True):
        switch(on)
        outs = []
        graph = capture_graph(lambda: chain([]), lambda: chain(outs))
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
        results[on] = [o.clone() for o in outs]
    return results


def norm_gluon_rows() -> int:
    """Rows for the norms' Gluon path (ops/norm_sm90.py): several laps of the rings per program, and row
    counts that differ by one."""
    from rooftop.ops import norm_sm90
    return 4 * norm_sm90.CONSUMERS * torch.cuda.get_device_properties(0).multi_processor_count + 5


def rows_in_parts(parts: int) -> int:
    """Rows for a Gluon path whose rows are split into `parts` parts (2 rows of parts an SM), and a few more."""
    return 2 * torch.cuda.get_device_properties(0).multi_processor_count // parts + 3


def run_norm_gluon(monkeypatch, fn):
    """fn()'s result, asserting that it ran the norms' Gluon kernel."""
    from rooftop.ops import norm_sm90
    calls = []
    real = norm_sm90.norm_rows
    monkeypatch.setattr(norm_sm90, "norm_rows", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = fn()
    torch.cuda.synchronize()
    assert calls, "the Gluon path did not run"
    return out
