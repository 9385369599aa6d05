"""Eager call plans (ops/_support.py `planned`): a call whose argument signature was recorded replays the
recorded launches on the new tensors. Each test calls an op twice or more on fresh data, checks the later
calls against the reference, and checks that they were replays (the op's row function, patched to fail,
is not reached) or that they could not be (no plan)."""
import gc
import threading
import weakref

import pytest
import torch

import rooftop
from rooftop.ops import (_support, activations, attention, layer_norm, matmul, quant_matmul, reductions, rms_norm,
                         softmax)
from conftest import DEVICE, TOL, fp8_linear_expected, rel_err

DT = torch.bfloat16


@pytest.fixture(autouse=True)
def plans_on(monkeypatch):
    """These tests are about the plans: on even where ROOFTOP_PLANS=0 turns them off for the rest of the suite."""
    monkeypatch.setattr(_support, "PLANS_ENABLED", True)


def _rand(*shape, dtype=DT):
    return torch.randn(*shape, dtype=dtype, device=DEVICE)


def _no_full_path(monkeypatch, module, name):
    """From now on the op's full path fails: only a replay gets through."""
    def fail(*args, **kwargs):
        raise AssertionError(f"{module.__name__}.{name} reached: the call was not replayed")
    monkeypatch.setattr(module, name, fail)


def _weight(n):
    return torch.rand(n, dtype=DT, device=DEVICE) + 0.5


# op: (public function, call on fresh inputs -> (outputs, references), module and row function of the full path)
CASES = {
    "add_rms_norm": (rooftop.rms_norm, lambda x, r, w: (rooftop.rms_norm(x, w, 1e-6, residual=r),
                                                        rms_norm.add_rms_norm_reference(x, r, w)),
                     rms_norm, "rms_norm_rows"),
    "rms_norm_gemma": (rooftop.rms_norm, lambda x, r, w: (rooftop.rms_norm(x, w, offset=1.0),
                                                          rms_norm.rms_norm_reference(x, w, offset=1.0)),
                       rms_norm, "rms_norm_rows"),
    "rms_norm_fp32_out": (rooftop.rms_norm, lambda x, r, w: (rooftop.rms_norm(x, w, out_dtype=torch.float32),
                                                             rms_norm.rms_norm_reference(x, w)),
                          rms_norm, "rms_norm_rows"),
    "layer_norm_residual": (rooftop.layer_norm,
                            lambda x, r, w: (rooftop.layer_norm(x, w, w - 1, residual=r),
                                             layer_norm.add_layer_norm_reference(x, r, w, w - 1)),
                            layer_norm, "layer_norm_rows"),
    "softmax": (rooftop.softmax, lambda x, r, w: (rooftop.softmax(x), softmax.softmax_reference(x)),
                softmax, "softmax_rows"),
    "log_softmax_dim2": (rooftop.log_softmax, lambda x, r, w: (rooftop.log_softmax(x, 2),
                                                               softmax.softmax_reference(x, 2, log=True)),
                         softmax, "softmax_rows"),
    "swiglu": (rooftop.swiglu, lambda x, r, w: (rooftop.swiglu(x, r), activations.gated_reference(x, r, "silu")),
               activations, "launch"),
    "swiglu_int8": (rooftop.swiglu, lambda x, r, w: (rooftop.swiglu(x, r, quant="int8"),
                                                     activations.gated_quant_reference(x, r, "silu", "int8")),
                    activations, "launch"),
    "swiglu_packed_fp8": (rooftop.swiglu, lambda x, r, w: (rooftop.swiglu(x, quant="fp8"),
                                                           activations.gated_quant_reference(x, None, "silu", "fp8")),
                          activations, "launch"),
    "bias_gelu": (rooftop.bias_gelu, lambda x, r, w: (rooftop.bias_gelu(x, w), activations.bias_gelu_reference(x, w)),
                  activations, "act_rows"),
    "row_norm": (rooftop.row_norm, lambda x, r, w: (rooftop.row_norm(x), reductions.row_reduce_reference(x, "norm")),
                 reductions, "reduce_rows"),
}


def _pairs(outputs, references):
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    references = references if isinstance(references, tuple) else (references,)
    assert len(outputs) == len(references)
    return zip(outputs, references)


@pytest.mark.parametrize("op", CASES)
def test_replay_matches_reference(op, monkeypatch):
    """The second and third calls (fresh data, same signature) are replays and right; their outputs are
    new tensors each call."""
    fn, call, module, row_fn = CASES[op]
    shape = (3, 5, 96)
    before = len(fn.plans)
    call(_rand(*shape), _rand(*shape), _weight(shape[-1]))
    assert len(fn.plans) == before + 1, "the first call was not recorded"
    _no_full_path(monkeypatch, module, row_fn)
    kept = []
    for _ in range(2):
        x, r, w = _rand(*shape), _rand(*shape), _weight(shape[-1])
        outputs, references = call(x, r, w)
        for out, ref in _pairs(outputs, references):
            assert out.shape == ref.shape
            assert rel_err(out, ref) < TOL[DT if out.dtype != torch.float32 else torch.bfloat16]
        kept.append(outputs)
    first, second = (o if isinstance(o, tuple) else (o,) for o in kept)
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(first, second))


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("M", [1, 16])
def test_quant_matmul_replay(M, bits, monkeypatch):
    """quant_matmul's later calls replay the first one's launch with new partials and the stream's arrival
    counters (the interpreter's GEMV splits K at M = 1, its tensor-core kernel cuts tiles at M = 16), through
    QuantLinear too; on fresh x each time."""
    N, K = 96, 256
    qw = rooftop.quantize_weight(torch.randn(N, K, device=DEVICE, dtype=DT) * K**-0.5, bits=bits, group_size=64)
    layer = rooftop.QuantLinear(qw)
    layer(_rand(M, K))
    _no_full_path(monkeypatch, quant_matmul, "_quant_matmul_op")
    for call in (layer, lambda x: rooftop.quant_matmul(x, qw)):
        x = _rand(M, K)
        ref = quant_matmul.quant_matmul_reference(x, qw.packed, qw.scales, qw.zeros, None, bits, 64)
        assert rel_err(call(x), ref) < TOL[DT]


@pytest.mark.parametrize("M", [1, 24])
def test_fp8_linear_replay(M, monkeypatch):
    """fp8_linear's calls after the second (the first chooses matmul_fp8's configuration: not recorded) replay
    quantize_rows' launch and matmul_fp8's (at M = 1 the split-K kernel with new partials and the stream's counters),
    through Fp8Linear too, on fresh x each time; a 3-D x comes back 3-D."""
    from rooftop.ops.matmul import Fp8Linear
    layer = Fp8Linear.from_linear(torch.nn.Linear(256, 96, bias=True, device=DEVICE, dtype=DT))
    shape = (M, 256) if M == 1 else (2, M // 2, 256)
    for _ in range(2):
        layer(_rand(*shape))
    _no_full_path(monkeypatch, matmul, "matmul_fp8")
    _no_full_path(monkeypatch, matmul, "quantize_rows")
    for call in (layer, lambda x: rooftop.fp8_linear(x, layer.weight, layer.weight_scale, layer.bias, layer.out_dtype)):
        x = _rand(*shape)
        out = call(x)
        ref = fp8_linear_expected(x, layer.weight, layer.weight_scale, layer.bias)
        assert out.shape == (*shape[:-1], 96) and rel_err(out.reshape(-1, 96), ref) < TOL[DT]


def test_in_place_replay(monkeypatch):
    """fused_add_rms_norm_ replayed: x and residual written in place, nothing returned."""
    shape = (4, 64)
    rooftop.fused_add_rms_norm_(_rand(*shape), _rand(*shape), _weight(64))
    _no_full_path(monkeypatch, rms_norm, "rms_norm_rows")
    x, res, w = _rand(*shape), _rand(*shape), _weight(64)
    y_ref, r_ref = rms_norm.add_rms_norm_reference(x, res, w)
    assert rooftop.fused_add_rms_norm_(x, res, w) is None
    assert rel_err(res, r_ref) < TOL[DT] and rel_err(x, y_ref) < TOL[DT]


def test_quantized_replay(monkeypatch):
    """rms_norm(quant="fp8") replayed returns codes and scales equal to the full path's on the same data."""
    x, w = _rand(6, 128), _weight(128)
    rooftop.rms_norm(_rand(6, 128), w, quant="fp8")
    q_full, s_full = rms_norm._impl(x, None, w, 1e-6, 0.0, None, "fp8")[:2]
    _no_full_path(monkeypatch, rms_norm, "rms_norm_rows")
    q, s = rooftop.rms_norm(x, w, quant="fp8")
    assert torch.equal(q.view(torch.uint8), q_full.view(torch.uint8)) and torch.equal(s, s_full)


def test_aliased_arguments():
    """A call whose kernel arguments' addresses are ambiguous (x passed as the residual too) is not
    recorded; a replay of the unaliased signature takes aliased arguments by position, correctly."""
    shape = (2, 256)
    x = _rand(*shape)
    y, r = rooftop.rms_norm(x, _weight(256), residual=x)
    assert len(rooftop.rms_norm.plans) == 0
    rooftop.rms_norm(_rand(*shape), _weight(256), residual=_rand(*shape))
    assert len(rooftop.rms_norm.plans) == 1
    x, w = _rand(*shape), _weight(256)
    y, r = rooftop.rms_norm(x, w, residual=x)
    y_ref, r_ref = rms_norm.add_rms_norm_reference(x, x, w)
    assert rel_err(y, y_ref) < TOL[DT] and rel_err(r, r_ref) < TOL[DT]


@pytest.mark.parametrize("case", ["copied rows", "packed halves"])
def test_not_recorded(case):
    """Calls that copy their input (rows with a stride in the last dim) or pass a kernel a view inside an
    argument (swiglu's packed halves) make no plan, and stay right call after call; after RECORD_ATTEMPTS
    tries their signature is no longer recorded (a recording costs more host time than the full path)."""
    for _ in range(_support.RECORD_ATTEMPTS + 2):
        if case == "copied rows":
            x = _rand(96, 8).t()
            out, ref, fn = rooftop.softmax(x), softmax.softmax_reference(x), rooftop.softmax
        else:
            x = _rand(4, 192)
            out, ref, fn = rooftop.swiglu(x), activations.gated_reference(x, None, "silu"), rooftop.swiglu
        assert len(fn.plans) == 0
        assert rel_err(out, ref) < TOL[DT]
    assert list(fn.plans.misses.values()) == [_support.RECORD_ATTEMPTS]


def test_new_signature_is_checked():
    """A plan stands for its signature only: another dtype, shape or eps goes through the checks."""
    x, w = _rand(2, 64), _weight(64)
    rooftop.rms_norm(x, w)
    with pytest.raises(TypeError, match="x"):
        rooftop.rms_norm(x.to(torch.int32), w)
    with pytest.raises(ValueError, match="weight"):
        rooftop.rms_norm(x, _weight(32))
    with pytest.raises(ValueError, match="eps"):
        rooftop.rms_norm(x, w, -1.0)


def test_plan_key_holds_strides_values_and_keywords():
    """Calls that differ from a recorded one only in strides, a scalar's value, or which keyword a value is given as
    get their own plans and are right."""
    w = _weight(64)
    rooftop.rms_norm(_rand(4, 64), w, 1e-6)
    strided = _rand(4, 128)[:, :64]
    assert rel_err(rooftop.rms_norm(strided, w, 1e-6), rms_norm.rms_norm_reference(strided, w, 1e-6)) < TOL[DT]
    small = _rand(4, 64) * 1e-2  # mean square 1e-4: eps = 0.5 dominates
    assert rel_err(rooftop.rms_norm(small, w, 0.5), rms_norm.rms_norm_reference(small, w, 0.5)) < TOL[DT]
    with pytest.raises(ValueError, match="eps"):
        rooftop.rms_norm(small, w, -1.0)
    rooftop.rms_norm(small, w, offset=1.0)
    assert rel_err(rooftop.rms_norm(small, w, eps=1.0), rms_norm.rms_norm_reference(small, w, 1.0)) < TOL[DT]
    flat = _rand(4 * 64 + 1)  # the same shape and strides 2 bytes apart: Triton's 16-byte specialisation differs
    for rows in (flat[:256].view(4, 64), flat[1:].view(4, 64)):
        assert rel_err(rooftop.rms_norm(rows, w), rms_norm.rms_norm_reference(rows, w)) < TOL[DT]


def test_grad_mode_is_checked():
    """A weight that requires grad is refused while grad mode is on, also after a plan of its signature was
    recorded under no_grad (as a model's Parameters are used)."""
    x, w = _rand(2, 64), _weight(64).requires_grad_()
    with torch.no_grad():
        for _ in range(2):
            assert rel_err(rooftop.rms_norm(x, w), rms_norm.rms_norm_reference(x, w.detach())) < TOL[DT]
    assert len(rooftop.rms_norm.plans) == 1
    with pytest.raises(RuntimeError, match="weight requires grad"):
        rooftop.rms_norm(x, w)


def test_plan_holds_no_tensor():
    """A recorded call's tensors are freed once the caller drops them."""
    x, w = _rand(2, 64), _weight(64)
    y = rooftop.rms_norm(x, w)
    assert len(rooftop.rms_norm.plans) == 1
    refs = [weakref.ref(t) for t in (x, w, y)]
    del x, w, y
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.mark.gpu
def test_replay_runs_on_the_current_stream():
    """A replay launches on the stream current at the call: on a side stream, after that stream's pending
    work (a long sleep, then the copy of the input), not on the stream of the recorded call."""
    x = _rand(8, 1024)
    rooftop.softmax(x)
    assert len(rooftop.softmax.plans) == 1
    fresh = _rand(8, 1024)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ~50 ms of spinning on the side stream
        x.copy_(fresh)
        y = rooftop.softmax(x)
    torch.cuda.synchronize()
    assert rel_err(y, softmax.softmax_reference(fresh)) < TOL[DT]


@pytest.mark.parametrize("op", ["matmul", "attention_varlen"])
def test_replay_in_a_new_thread(op):
    """The TMA kernels that make their descriptors on the device take scratch memory from Triton's allocator at every
    launch, and Triton keeps the allocator per context, where a new thread has none: a call recorded in this thread
    replays in a new one (_support.ensure_scratch_allocator; the attention replay raised "no allocator was set").
    The interpreter takes no scratch: there only the replay's values are checked."""
    if op == "matmul":
        a, b = _rand(64, 96), _rand(96, 48)  # fewer rows than the Gluon kernel takes: the Triton TMA kernel (sm_90)

        def call():
            return rooftop.matmul(a, b)
        ref = matmul.matmul_reference(a, b)
    else:
        q, k, v = _rand(40, 4, 64), _rand(40, 2, 64), _rand(40, 2, 64)  # varlen: descriptors made on the device
        cu = torch.tensor([0, 7, 40], dtype=torch.int32, device=DEVICE)

        def call():
            return rooftop.attention_varlen(q, k, v, cu, cu, 33, 33, True)
        ref = attention.attention_varlen_reference(q, k, v, cu, cu, True)[0]
    call()
    outcome = {}

    def in_thread():
        try:
            outcome["out"] = call()
        except Exception as err:  # reported by the assertion below
            outcome["err"] = err
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert "err" not in outcome, repr(outcome.get("err"))
    assert rel_err(outcome["out"], ref) < TOL[DT]


@pytest.mark.gpu
def test_counters_asked_for_in_a_capture(monkeypatch):
    """Arrival counters first asked for inside a CUDA-graph capture are zero before that graph ever replays: a
    second graph captured on the same stream takes them and may replay first. Their memory held other values: a
    pool shared with an earlier graph whose tensors of 7s (a whole 2 MB segment) were freed."""
    monkeypatch.setattr(_support, "_counters", {})
    device = torch.device("cuda", torch.cuda.current_device())
    pool = torch.cuda.graph_pool_handle()
    sevens = torch.cuda.CUDAGraph()
    with torch.cuda.graph(sevens, pool=pool):
        filled = [torch.full((1 << 18,), 7, device=device, dtype=torch.int32) for _ in range(2)]  # 1 MB each
    sevens.replay()
    torch.cuda.synchronize()
    del filled
    first, again = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(first, pool=pool):
        counters = _support.arrival_counters(device, 100)
    with torch.cuda.graph(again, pool=pool):
        assert _support.arrival_counters(device, 100).data_ptr() == counters.data_ptr()  # the same stream's
    torch.cuda.synchronize()
    assert not counters.any()  # though `first` never replayed


@pytest.mark.gpu
def test_outgrown_counters_are_kept(monkeypatch):
    """Counters outgrown by a larger ask stay allocated (a graph captured with them may still replay them): no
    tensor allocated afterwards takes their address."""
    monkeypatch.setattr(_support, "_counters", {})
    device = torch.device("cuda", torch.cuda.current_device())
    small = _support.arrival_counters(device, 100).data_ptr()
    assert _support.arrival_counters(device, 4096).numel() >= 4096
    fresh = [torch.empty(1024, device=device, dtype=torch.int32) for _ in range(64)]  # the small set's size
    assert small not in {t.data_ptr() for t in fresh}


# Counters asked for before PyTorch has touched the GPU: the driver initialised and the primary context retained by
# _support itself. The context used to be released after each set, destroying it (and the first set, and the zeroing
# stream: CUresult 400 on the second set) where nothing else retained it.
_COUNTERS_FIRST_SCRIPT = """
import torch
from rooftop.ops import _support
device = torch.device("cuda", 0)
sets = [_support._zeroed_counters(device, n) for n in (1024, 1 << 20, 1024)]
print(sum(int(s.count_nonzero()) for s in sets), len({s.data_ptr() for s in sets}))
"""


@pytest.mark.gpu
def test_counters_before_pytorch_touches_the_gpu():
    """Sets of counters made in a fresh process before any CUDA tensor: every one zeroed and kept, at its own
    address."""
    import subprocess
    import sys

    from conftest import compiler_env
    done = subprocess.run([sys.executable, "-c", _COUNTERS_FIRST_SCRIPT], env=compiler_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["0", "3"]


@pytest.mark.gpu
def test_row_ops_pdl_chain(monkeypatch):
    """The row ops' decode kernels launched as programmatic dependents (_support.ROW_PDL), in a chain where each call
    reads what the one before wrote (norm -> SwiGLU -> RoPE -> add + norm -> SwiGLU -> norm, as a decoder layer
    runs them, then the quantizing SwiGLU and quantize_rows of an fp8 model), captured in a CUDA graph and replayed:
    the plain launches' bits (a read before the kernel ahead ended would show), and each step right against its
    reference."""
    from conftest import assert_quantized, replayed_by_switch, skip_unless_sm90
    from rooftop.ops.rope import rope_reference
    skip_unless_sm90()
    x, cos, sin = _rand(1, 8192), _rand(1, 64).repeat(1, 2), _rand(1, 64).repeat(1, 2)  # halves repeated, as HF's
    w8192, w4096, w2048 = _weight(8192), _weight(4096), _weight(2048)

    def heads(g):  # q [1, 32, 1, 128] and k [1, 8, 1, 128], views of g
        return g.view(1, 1, 32, 128).transpose(1, 2), g[:, :1024].view(1, 1, 8, 128).transpose(1, 2)

    def chain(outs):
        y = rooftop.rms_norm(x, w8192)
        g = rooftop.swiglu(y)  # packed halves: the row kernel
        q, k = rooftop.apply_rope(*heads(g), cos, sin)
        h, r = rooftop.rms_norm(q.reshape(1, 4096), w4096, residual=g)
        s = rooftop.swiglu(h.view(2, 2048)[0], h.view(2, 2048)[1])  # two contiguous tensors: the flat kernel
        z = rooftop.rms_norm(s.view(1, 2048), w2048)
        outs[:] = [y, g, q, k, h, r, s, z, *rooftop.swiglu(h, quant="fp8"), *rooftop.quantize_rows(z, "int8")]

    def switch(on):
        monkeypatch.setattr(_support, "ROW_PDL", on)
        _support.clear_plans()  # a plan keeps its first call's launch

    results = replayed_by_switch(chain, switch)
    for i, (plain, dependent) in enumerate(zip(results[False], results[True])):
        assert torch.equal(plain.view(torch.uint8) if plain.dtype == torch.float8_e4m3fn else plain,
                           dependent.view(torch.uint8) if dependent.dtype == torch.float8_e4m3fn else dependent), i
    y, g, q, k, h, r, s, z, h8, h_scale, z8, z_scale = results[True]
    assert_quantized(h8, h_scale, activations.swiglu_reference(h), "fp8")
    assert_quantized(z8, z_scale, z.double(), "int8")
    ref_q, ref_k = rope_reference(*heads(g), cos, sin)
    checks = [(y, rms_norm.rms_norm_reference(x, w8192)), (g, activations.swiglu_reference(y)), (q, ref_q),
              (k, ref_k), (r, q.reshape(1, 4096) + g), (h, rms_norm.rms_norm_reference(r, w4096)),
              (s, activations.swiglu_reference(h.view(2, 2048)[0], h.view(2, 2048)[1])),
              (z, rms_norm.rms_norm_reference(s.view(1, 2048), w2048))]
    for i, (out, ref) in enumerate(checks):
        assert rel_err(out, ref) < TOL[DT], i


def test_gluon_launch_reaches_tritons_launcher():
    """GluonLaunch's descriptor cache calls the C launcher under Triton's tensor-descriptor wrapper: the wrapper
    this Triton makes still holds it where _unwrapped_launcher looks; anything else is left alone (None)."""
    from triton.backends.nvidia.driver import wrap_handle_tensordesc

    def launcher(*args):
        return args

    wrapped = wrap_handle_tensordesc(launcher, {0: "tensordesc<bf16[64,64]>", 1: "i32"}, None)
    assert wrapped is not launcher and _support._unwrapped_launcher(wrapped) is launcher
    assert _support._unwrapped_launcher(launcher) is None
    assert _support._unwrapped_launcher(wrap_handle_tensordesc(launcher, {0: "i32"}, None)) is None  # no wrapper


def test_clear_plans_forgets_every_plans_table():
    """clear_plans empties the ops' own per-call plans (matmul's), whose kept launch a switch would not reach
    otherwise, and drops the tables nobody holds any more (a test's stand-in)."""
    from rooftop.ops import matmul as mm
    a, b = _rand(8, 32, dtype=torch.float32), _rand(32, 16, dtype=torch.float32)
    rooftop.matmul(a, b)
    assert len(mm._plans) >= 1
    stand_in = _support.Plans()
    stand_in[("key",)] = print
    entry = _support._all_plans[-1]
    assert entry() is stand_in
    _support.clear_plans()
    assert not mm._plans and not stand_in
    del stand_in
    gc.collect()
    _support.clear_plans()
    assert entry not in _support._all_plans


def test_recording_refuses_other_torch_ops():
    """A call that runs a torch op other than an allocation or a view (here an in-place mul_) is never replayed."""
    @_support.planned
    def double_(x):
        x.mul_(2)
        return x

    x = torch.ones(4, device=DEVICE)
    for _ in range(3):
        assert double_(x) is x
    assert torch.equal(x, torch.full((4,), 8.0, device=DEVICE)) and len(double_.plans) == 0


def test_returned_argument_is_recorded_and_returned():
    """A call that returns one of its tensor arguments is recorded, and its replay returns the new call's argument."""
    @_support.planned
    def same(x):
        return x

    same(torch.ones(3, device=DEVICE))
    assert len(same.plans) == 1
    y = torch.zeros(3, device=DEVICE)
    assert same(y) is y


def test_returned_view_of_an_argument_is_not_recorded():
    """A call that returns a view of an argument (not a whole allocation of its own) is not recorded: a replay would
    hand back a fresh, unwritten tensor instead of the view."""
    @_support.planned
    def head(x):
        return x[:2]

    for i in range(3):
        x = torch.arange(4.0, device=DEVICE) + i
        y = head(x)
        assert torch.equal(y, x[:2]) and y.data_ptr() == x.data_ptr()
    assert len(head.plans) == 0


def test_whole_allocation_is_all_of_a_storage_the_call_made():
    """_whole_allocation: true only for all of a storage the recorded call allocated (no offset, no part of it)."""
    with _support._Recorder() as recorder:
        buf = torch.empty(2, device=DEVICE)
    assert recorder._whole_allocation(buf)
    assert not recorder._whole_allocation(buf[:1])  # part of the storage
    assert not recorder._whole_allocation(buf[1:].expand(2))  # as many bytes as the storage, at an offset
    assert not recorder._whole_allocation(torch.empty(2, device=DEVICE))  # not allocated by the call


def test_kernel_argument_of_another_dtype_is_not_recorded():
    """A launch argument at an argument's address but of another dtype (a reinterpreting view) makes no plan;
    the same launch with the argument itself does."""
    kernel = {(1,): lambda *args, **kwargs: None}  # what plan() indexes with the grid
    x = torch.zeros(4, dtype=torch.bfloat16, device=DEVICE)
    for arg, plannable in ((x, True), (x.view(torch.int16), False)):
        with _support._Recorder() as recorder:
            pass
        recorder.launches.append((None, kernel, (1,), (arg,), {}))
        assert (recorder.plan((x,), None) is not None) == plannable


def test_plans_are_bounded():
    """Plans.keep clears the table and its misses once it holds `limit` keys; miss() bounds the misses alike;
    clear() forgets both."""
    plans = _support.Plans(limit=2)
    plans.keep(("a",), print)
    plans.keep(("b",), print)
    plans.miss(("m",))
    plans.keep(("c",), print)
    assert dict(plans) == {("c",): print} and plans.misses == {}
    for key in ("x", "y", "z"):
        plans.miss((key,))
    assert plans.misses == {("z",): 1}
    plans.clear()
    assert not plans and plans.misses == {}


def test_call_signature_holds_alignment_and_value_types():
    """call_signature tells apart tensors that differ only in address mod 16, and values equal across types."""
    flat = torch.zeros(65, device=DEVICE)
    assert _support.call_signature((flat[:64],)) != _support.call_signature((flat[1:],))
    keys = [_support.call_signature((v,)) for v in (1, 1.0, True)]
    assert len(set(keys)) == 3


def test_op_inside_another_recording_is_part_of_it():
    """A public op called inside another planned call's recording runs as written (no plan of its own), so the outer
    call's plan holds its launches and replays them right."""
    @_support.planned
    def outer(x):
        return rooftop.softmax(x)

    for _ in range(3):
        x = _rand(4, 64)
        assert rel_err(outer(x), softmax.softmax_reference(x)) < TOL[DT]
    assert len(outer.plans) == 1 and len(rooftop.softmax.plans) == 0


def test_onchip_config_warps_are_a_power_of_two():
    """onchip_config's num_warps is a power of two (Triton's requirement) even for an elems_per_thread that is not."""
    for M, N, elems in ((64, 1024, 12), (7, 3000, 24), (1, 96, 16)):
        warps = _support.onchip_config(M, N, elems)[2]
        assert warps >= 1 and warps & (warps - 1) == 0, (M, N, elems, warps)
