"""The ops as torch custom ops: one opaque node under torch.compile (no graph break), capturable in a
CUDA graph, and the fast launch path equal to Triton's own."""
import types

import pytest
import torch
import triton

import rooftop
from conftest import DEVICE, HAS_CUDA, TOL, rel_err
from rooftop.ops.layer_norm import add_layer_norm_reference
from rooftop.ops.rms_norm import add_rms_norm_reference, rms_norm_quant_reference, rms_norm_reference
from rooftop.ops.softmax import softmax_reference


def block(x, residual, weight):
    """A pre-norm block's norm and a softmax, as a model calls them."""
    y, residual = rooftop.rms_norm(x, weight, 1e-6, residual=residual)
    return rooftop.softmax(y * 2.0, dim=-1), residual


def test_ops_are_registered():
    for name in ("softmax", "rms_norm", "add_rms_norm", "fused_add_rms_norm_"):
        assert hasattr(torch.ops.rooftop, name)


@pytest.mark.parametrize("shape", [(4, 96), (2, 3, 1000)])
def test_compiles_without_graph_break(shape):
    from torch._dynamo.testing import CompileCounterWithBackend

    x = torch.randn(shape, device=DEVICE, dtype=torch.float16)
    res = torch.randn(shape, device=DEVICE, dtype=torch.float16)
    w = torch.rand(shape[-1], device=DEVICE, dtype=torch.float16)
    torch._dynamo.reset()
    # on the CPU the custom ops' boundaries are what we test; inductor's C++ codegen is not ours
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    compiled = torch.compile(block, backend=counter, fullgraph=True)
    out, new_res = compiled(x, res, w)
    assert counter.frame_count == 1
    y_ref, r_ref = add_rms_norm_reference(x, res, w)
    assert rel_err(new_res, r_ref) < TOL[torch.float16]
    assert rel_err(out, softmax_reference(y_ref.half().double() * 2.0)) < 5e-3


@pytest.mark.parametrize("op", ["gemma_rms_norm", "rms_norm_int8", "layer_norm"])
def test_compiles_with_dynamic_shapes(op):
    """torch.compile(dynamic=True), as servers compile for many batch sizes, traces Python floats (eps, offset) as
    symbols: the checks in front of the custom op must trace without a graph break (math.isfinite of a symbol broke
    it), and a second batch size must run the same graph."""
    from torch._dynamo.testing import CompileCounterWithBackend

    w, b = (torch.rand(96, device=DEVICE, dtype=torch.float16) + 0.5 for _ in range(2))
    if op == "gemma_rms_norm":
        def fn(x, res):
            return rooftop.rms_norm(x, w, 1e-6, residual=res, offset=1.0)

        def ref(x, res):
            return add_rms_norm_reference(x, res, w, 1e-6, 1.0)
    elif op == "rms_norm_int8":
        def fn(x, res):
            return rooftop.rms_norm(x, w, 1e-5, quant="int8")

        def ref(x, res):
            return rms_norm_quant_reference(x, w, 1e-5, quant="int8")
    else:
        def fn(x, res):
            return rooftop.layer_norm(x, w, b, 1e-5, residual=res)

        def ref(x, res):
            return add_layer_norm_reference(x, res, w, b, 1e-5)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    compiled = torch.compile(fn, backend=counter, fullgraph=True, dynamic=True)
    for rows in (5, 11):
        x, res = (torch.randn(rows, 96, device=DEVICE, dtype=torch.float16) for _ in range(2))
        outs, refs = compiled(x, res), ref(x, res)
        if rows == 5:
            compiles = counter.frame_count
        for out, expected in zip(outs, refs):
            assert out.shape == expected.shape
            assert rel_err(out.double(), expected) < (0.02 if op == "rms_norm_int8" else TOL[torch.float16]), rows
    assert counter.frame_count == compiles  # the second size ran the first one's graph


def test_fp8_linear_compiles_without_graph_break():
    """An fp8 MLP as patch_model runs it (Fp8Linear gate / up, swiglu quantizing for the Fp8Linear down projection)
    compiles as one graph: quantize_rows, matmul_fp8 and the quantizing swiglu are custom ops."""
    from torch._dynamo.testing import CompileCounterWithBackend
    gate_up, down = (rooftop.Fp8Linear.from_linear(torch.nn.Linear(i, o, device=DEVICE, dtype=torch.bfloat16))
                     for i, o in ((64, 192), (96, 64)))

    def mlp(x):
        return down(rooftop.swiglu(gate_up(x), quant="fp8"))

    x = torch.randn(2, 5, 64, device=DEVICE, dtype=torch.bfloat16)
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor" if HAS_CUDA else "aot_eager")
    with torch.no_grad():
        out = torch.compile(mlp, backend=counter, fullgraph=True)(x)
        assert counter.frame_count == 1 and out.shape == (2, 5, 64)
        assert rel_err(out, mlp(x)) < TOL[torch.bfloat16]


def test_in_place_op_compiles():
    x = torch.randn(3, 256, device=DEVICE, dtype=torch.bfloat16)
    res = torch.randn(3, 256, device=DEVICE, dtype=torch.bfloat16)
    w = torch.rand(256, device=DEVICE, dtype=torch.bfloat16)
    y_ref, r_ref = add_rms_norm_reference(x, res, w)

    def step(x, res, w):
        rooftop.fused_add_rms_norm_(x, res, w, 1e-6)
        return x * 1.0

    torch._dynamo.reset()
    out = torch.compile(step, backend="inductor" if HAS_CUDA else "aot_eager", fullgraph=True)(x, res, w)
    assert rel_err(out, y_ref) < TOL[torch.bfloat16] and rel_err(res, r_ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 4096), (64, 8192), (8, 100000)])
def test_cuda_graph_capture_and_replay(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    res = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(shape[-1], device="cuda", dtype=torch.bfloat16)
    block(x, res, w)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, new_res = block(x, res, w)
    for _ in range(2):  # fresh data through the same graph
        x.copy_(torch.randn_like(x))
        res.copy_(torch.randn_like(res))
        graph.replay()
        y_ref, r_ref = add_rms_norm_reference(x, res, w)
        assert rel_err(new_res, r_ref) < TOL[torch.bfloat16]
        # the softmax input is y rounded to bf16 and doubled in bf16: take that y from an eager call
        y = rooftop.rms_norm(x, w, 1e-6, residual=res)[0]
        assert rel_err(y, y_ref) < TOL[torch.bfloat16]
        assert rel_err(out, softmax_reference((y * 2.0).double())) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_fast_launch_path_matches_triton():
    """The second call of a kernel goes through the cached launch; alignment changes must not reuse a
    variant compiled for aligned pointers."""
    base = torch.randn(5, 4104, device="cuda", dtype=torch.bfloat16)
    for offset in (0, 8, 1, 0, 3):  # 16-byte aligned, then not, then back
        x = base[:, offset:offset + 4096]
        for _ in range(2):
            assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_reduce_overhead_graphs_for_several_batch_sizes(monkeypatch):
    """torch.compile(mode="reduce-overhead"), as a server or HF's static-cache generate uses it: CUDA-graph trees
    record each batch size's graph on their own stream and pool, the split-K GEMV's arrival counters first asked
    for in their warm-up (whose allocations go to that pool too). Each size warmed up, recorded, then all replayed,
    the last recorded first, on fresh inputs: right against the reference every time."""
    from rooftop.ops import _support
    from rooftop.ops.quant_matmul import quant_matmul_reference
    monkeypatch.setattr(_support, "_counters", {})
    qw = rooftop.quantize_weight(torch.randn(2048, 4096, device="cuda", dtype=torch.bfloat16), 4, 128)
    w = torch.rand(2048, device="cuda", dtype=torch.bfloat16)

    def step(x):
        return rooftop.rms_norm(rooftop.quant_matmul(x, qw), w, 1e-6)

    def reference(x):
        y = quant_matmul_reference(x, qw.packed, qw.scales, qw.zeros, None, qw.bits, qw.group_size)
        return rms_norm_reference(y.bfloat16(), w)  # the GEMM's output rounded to bf16, as the op hands it on

    torch._dynamo.reset()
    compiled = torch.compile(step, mode="reduce-overhead", fullgraph=True, dynamic=False)
    sizes = (1, 2, 4)
    for M in sizes + sizes[::-1] + sizes[::-1]:  # warm-up and recording runs, then replays, last size first
        x = torch.randn(M, 4096, device="cuda", dtype=torch.bfloat16)
        out = compiled(x).clone()
        assert rel_err(out, reference(x)) < TOL[torch.bfloat16], M


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_ops_on_a_device_that_is_not_the_current_one():
    """Triton compiles, loads and launches a kernel on the current device whatever its tensors' device. With device 0
    current, ops on cuda:1 tensors (a model spread over GPUs) run there, by their full path and then by their plans'
    replays (_support.foreign_device's guard), right against the references."""
    from rooftop.ops.attention import attention_reference
    from rooftop.ops.matmul import matmul_reference
    from rooftop.ops.quant_matmul import quant_matmul_reference

    dev, bf16 = torch.device("cuda", 1), torch.bfloat16
    torch.cuda.set_device(0)
    for _ in range(2):  # the second round replays the first one's plans
        x, res = (torch.randn(8, 4096, device=dev, dtype=bf16) for _ in range(2))
        w = torch.rand(4096, device=dev, dtype=bf16) + 0.5
        y, r = rooftop.rms_norm(x, w, 1e-6, residual=res)
        for out, ref in zip((y, r), add_rms_norm_reference(x, res, w)):
            assert rel_err(out, ref) < TOL[bf16]
        assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[bf16]
        b = torch.randn(4096, 512, device=dev, dtype=bf16)
        assert rel_err(rooftop.matmul(x, b), matmul_reference(x, b)) < TOL[bf16]
        qw = rooftop.quantize_weight(torch.randn(512, 4096, device=dev, dtype=bf16), 4, 128)
        ref = quant_matmul_reference(x, qw.packed, qw.scales, qw.zeros, None, qw.bits, qw.group_size)
        assert rel_err(rooftop.quant_matmul(x, qw), ref) < TOL[bf16]
        q, k, v = (torch.randn(1, 8, 256, 128, device=dev, dtype=bf16) for _ in range(3))
        assert rel_err(rooftop.attention(q, k, v, causal=True), attention_reference(q, k, v, True)) < TOL[bf16]
    assert torch.cuda.current_device() == 0


# GPUs below the H200: offline compiles of every launch the suite makes for sm_80, sm_86 and sm_89
# (benchmarks/compile_targets.py) fail only where Triton has no e4m3 type (below 8.9). Tritons other than 3.6:
# the Gluon kernels and the direct C launches stand down (_support.INTERNALS_TESTED).

class _FakeLauncher:
    global_scratch_size = profile_scratch_size = 0
    launch_cooperative_grid = launch_pdl = False

    def launch(self, *args):
        raise AssertionError("not called here")


class _FakeCompiled:
    run, function, packed_metadata = _FakeLauncher(), object(), object()


def test_amd_gpus_are_refused(monkeypatch):
    """A ROCm build's GPU tensors (an AMD GPU also reads is_cuda) get an error that says why, where the kernels
    would otherwise fail to compile or launch (inline PTX; 32-warp programs past AMD's 1024 threads a workgroup);
    NVIDIA GPUs and the interpreter's CPU tensors run the kernels, other CPU tensors the references."""
    from rooftop.ops import _support
    gpu = types.SimpleNamespace(is_cuda=True, device=torch.device("cuda", 0))
    assert _support.runs_kernel(gpu)
    assert _support.runs_kernel(torch.ones(1)) is _support.interpreting()
    # CUDA initialised before the pose: torch's lazy init under a hip version asks amdsmi (the test run alone)
    x = torch.randn(4, 256, device="cuda") if HAS_CUDA else None
    monkeypatch.setattr(torch.version, "hip", "6.4.0")
    with pytest.raises(RuntimeError, match=r"written for NVIDIA GPUs, and cuda:0 is an AMD GPU .*ROCm"):
        _support.runs_kernel(gpu)
    if HAS_CUDA:  # the H200 posing as an AMD GPU: an op says so at its first call
        with pytest.raises(RuntimeError, match="AMD GPU"):
            rooftop.softmax(x)


@pytest.mark.parametrize("tested", [True, False])
def test_untested_triton_keeps_to_the_public_api(tested, monkeypatch):
    """Under a Triton other than 3.6 (whose launcher takes its arguments in another order in 3.9, and whose Gluon
    renamed the TMA copies) no Launch calls the C launcher directly and no Gluon kernel is chosen, on an sm_90 GPU
    too; under 3.6 both are."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "INTERNALS_TESTED", tested)
    monkeypatch.setattr(_support, "capability", lambda index: (9, 0))
    monkeypatch.setattr(type(triton.runtime.driver), "active", types.SimpleNamespace(get_current_stream=None))
    assert _support.gluon_runs(0) is tested
    assert bool(_support.Launch(_FakeCompiled(), (), 0).direct()) is tested

    def wrap(launcher):  # the shape of 3.6's tensor-descriptor wrapper
        def inner(*args):
            return launcher(*args)
        return inner
    launcher = object()
    assert (_support._unwrapped_launcher(wrap(launcher)) is launcher) is tested


@pytest.mark.gpu
def test_ops_run_through_the_public_launch_path(monkeypatch):
    """With the direct launches and the Gluon kernels off, as under a Triton other than 3.6, the ops that would take
    Gluon kernels on the H200 run right through CompiledKernel.run."""
    from rooftop.ops import _support
    from rooftop.ops.attention import attention_reference
    from rooftop.ops.matmul import matmul_reference
    from rooftop.ops.quant_matmul import quant_matmul_reference
    monkeypatch.setattr(_support, "INTERNALS_TESTED", False)
    monkeypatch.setattr(_support, "_compiled", {})  # Launches made before hold their direct launcher
    monkeypatch.setenv("ROOFTOP_AUTOTUNE", "0")  # the defaults: no choice made without Gluon kept for later runs
    bf16 = torch.bfloat16
    x, res = (torch.randn(64, 65536, device="cuda", dtype=bf16) for _ in range(2))
    w = torch.rand(65536, device="cuda", dtype=bf16) + 0.5
    for out, ref in zip(rooftop.rms_norm(x, w, 1e-6, residual=res), add_rms_norm_reference(x, res, w)):
        assert rel_err(out, ref) < TOL[bf16]
    assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[bf16]
    a, b = torch.randn(512, 4096, device="cuda", dtype=bf16), torch.randn(4096, 4096, device="cuda", dtype=bf16)
    assert rel_err(rooftop.matmul(a, b), matmul_reference(a, b)) < TOL[bf16]
    qw = rooftop.quantize_weight(torch.randn(4096, 4096, device="cuda", dtype=bf16), 4, 128)
    ref = quant_matmul_reference(a[:64], qw.packed, qw.scales, qw.zeros, None, qw.bits, qw.group_size)
    assert rel_err(rooftop.quant_matmul(a[:64], qw), ref) < TOL[bf16]
    q, k, v = (torch.randn(1, 8, 1024, 128, device="cuda", dtype=bf16) for _ in range(3))
    assert rel_err(rooftop.attention(q, k, v, causal=True), attention_reference(q, k, v, True)) < TOL[bf16]
    assert _support._compiled and not any(entry.direct() for entry in _support._compiled.values())


@pytest.mark.parametrize("capability, refused", [((8, 0), True), ((8, 6), True), ((8, 9), False), ((9, 0), False),
                                                 ((12, 0), False)])
def test_fp8_device_check(capability, refused, monkeypatch):
    """check_fp8_device refuses a card below compute capability 8.9 (A100, A10, RTX 3090, where the fp8 kernels
    would fail to compile at their first launch) with the argument, the device, its name and its capability in the
    message; it passes 8.9 and later, and never looks at a CPU."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "capability", lambda index: capability)
    monkeypatch.setattr(_support, "interpreting", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    cuda = torch.device("cuda", 0)
    if refused:
        message = rf"quant='fp8': .* 8\.9 or later .*cuda:0 \(NVIDIA A100.*\) is {capability[0]}\.{capability[1]}"
        with pytest.raises(RuntimeError, match=message):
            _support.check_fp8_device("quant='fp8'", cuda)
    else:
        _support.check_fp8_device("quant='fp8'", cuda)
    _support.check_fp8_device("quant='fp8'", torch.device("cpu"))


def test_fp8_ops_check_their_device(device, monkeypatch):
    """rms_norm(quant="fp8") (with and without a residual), swiglu / geglu(quant="fp8") and matmul_fp8 check their
    device before any kernel, naming the argument; quant="int8" and the 16-bit matmul do not."""
    from rooftop.ops import activations as activations_mod, matmul as matmul_mod, rms_norm as rms_norm_mod
    checked = []

    def refuse(name, dev):
        checked.append((name, dev))
        raise RuntimeError(f"refused: {name}")
    for module in (rms_norm_mod, matmul_mod, activations_mod):
        monkeypatch.setattr(module, "check_fp8_device", refuse)
    x, res = (torch.randn(3, 256, device=device, dtype=torch.bfloat16) for _ in range(2))
    w = torch.rand(256, device=device, dtype=torch.bfloat16) + 0.5
    for residual in (None, res):
        with pytest.raises(RuntimeError, match=r"refused: quant='fp8' \(use 'int8' on this GPU\)"):
            rooftop.rms_norm(x, w, residual=residual, quant="fp8")
        rooftop.rms_norm(x, w, residual=residual, quant="int8")
    for gated in (rooftop.swiglu, rooftop.geglu):
        with pytest.raises(RuntimeError, match=r"refused: quant='fp8' \(use 'int8' on this GPU\)"):
            gated(x, res, quant="fp8")
        gated(x, quant="int8")
    a8 = x.to(torch.float8_e4m3fn)
    b8 = torch.randn(64, 256, device=device).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=device)
    with pytest.raises(RuntimeError, match=r"refused: a and b \(matmul_fp8\)"):
        rooftop.matmul_fp8(a8, b8, one, one)
    rooftop.matmul(x, b8.to(torch.bfloat16))
    assert [dev for _, dev in checked] == [x.device] * 5


@pytest.mark.gpu
def test_fp8_ops_refused_below_capability_8_9(monkeypatch):
    """On the H200 posing as an A100 (capability 8.0), the fp8 ops raise check_fp8_device's error, not Triton's."""
    from rooftop.ops import _support
    monkeypatch.setattr(_support, "capability", lambda index: (8, 0))
    x = torch.randn(4, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"quant='fp8' .* is 8\.0"):
        rooftop.rms_norm(x, w, quant="fp8")
    with pytest.raises(RuntimeError, match=r"quant='fp8' .* is 8\.0"):
        rooftop.swiglu(x, quant="fp8")
    one = torch.ones((), device="cuda")
    with pytest.raises(RuntimeError, match=r"a and b \(matmul_fp8\): .* is 8\.0"):
        rooftop.matmul_fp8(x.to(torch.float8_e4m3fn), x.to(torch.float8_e4m3fn).t(), one, one)
