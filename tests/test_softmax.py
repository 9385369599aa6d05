import subprocess
import sys

import pytest
import torch

import rooftop
from rooftop.ops import softmax as softmax_mod
from rooftop.ops import softmax_sm90
from rooftop.ops._support import BARRIER_MARK, arrival_counters, drop_marked_barriers
from rooftop.ops.softmax import softmax_reference
from conftest import TOL, compiler_env, rel_err, rows_in_parts, spy_launches

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# widths cover: 1, odd, prime, non-power-of-two, the widest on-chip row (65536), the reload kernel (16-bit rows of
# 40960; fp32 rows there take the looped path, M >= SMs) and the split path (few rows; the interpreter pretends to
# have 8 SMs), up to 1M
SHAPES = [(1, 1), (1, 7), (3, 33), (5, 1000), (17, 4097), (2, 65536), (8, 40960), (9, 65537), (3, 100003), (1, 1 << 20)]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_matches_reference(shape, dtype, log, device):
    x = torch.randn(shape, device=device, dtype=dtype) * 4
    out = (rooftop.log_softmax if log else rooftop.softmax)(x)
    assert out.shape == x.shape and out.dtype == dtype
    assert rel_err(out, softmax_reference(x, -1, log)) < TOL[dtype]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(3, 100003), (5, 70001)])  # the split path; 70001: its chunk count padded
def test_all_negative_rows(shape, log, device):
    """Rows whose maximum is far below 0: a padded chunk's (max, sum) must be (-inf, 0), not (0, 0)."""
    x = torch.randn(shape, device=device) * 4 - 1000  # exp(x) underflows: only the row max saves it
    assert rel_err((rooftop.log_softmax if log else rooftop.softmax)(x), softmax_reference(x, -1, log)) < 1e-5


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])  # -3: -ndim, the first
def test_any_dim_and_leading_shape(dim, device):
    x = torch.randn(4, 5, 129, device=device, dtype=torch.float32)
    assert rel_err(rooftop.softmax(x, dim), softmax_reference(x, dim)) < 1e-5


def test_non_contiguous_rows(device):
    wide = torch.randn(6, 3000, device=device, dtype=torch.bfloat16)
    x = wide[:, 7:2007]  # row stride 3000 != width 2000, unaligned start
    assert x.stride(0) != x.shape[1]
    assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[torch.bfloat16]
    xt = torch.randn(300, 8, device=device).t()  # column stride != 1
    assert rel_err(rooftop.log_softmax(xt), softmax_reference(xt, -1, True)) < 1e-5


@pytest.mark.parametrize("width", [5, 65536, 70001])  # on-chip, split with whole tiles, split
def test_special_values_follow_torch(width, device):
    inf, nan = float("inf"), float("nan")
    x = torch.randn(5, width, device=device)
    x[0, :] = -inf  # all -inf: nan
    x[1, 3] = nan  # a nan: the whole row nan
    x[2, 4] = inf  # +inf: the whole row nan
    x[3, : width // 2 + 1] = -inf  # a finite row with -inf entries: 0 there (-inf for log)
    for log in (False, True):
        out = (rooftop.log_softmax if log else rooftop.softmax)(x)
        ref = torch.log_softmax(x.double().cpu(), -1) if log else torch.softmax(x.double().cpu(), -1)
        assert torch.equal(torch.isnan(out.cpu()), torch.isnan(ref))
        finite = torch.isfinite(ref)
        assert torch.equal(torch.isfinite(out.cpu()), finite)
        assert torch.allclose(out.cpu().double()[finite], ref[finite], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0,)])
def test_empty(shape, device):
    x = torch.randn(shape, device=device)
    assert rooftop.softmax(x).shape == x.shape


def test_bad_input(device):
    with pytest.raises(TypeError, match="x has dtype int32"):
        rooftop.softmax(torch.ones(3, 4, dtype=torch.int32, device=device))
    with pytest.raises(IndexError, match="dim=2"):
        rooftop.softmax(torch.randn(3, 4, device=device), dim=2)
    with pytest.raises(IndexError, match="dim=-3 is out of range"):
        rooftop.softmax(torch.randn(3, 4, device=device), dim=-3)
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        rooftop.softmax([1.0, 2.0])
    with pytest.raises(ValueError, match="at least one dimension"):
        rooftop.softmax(torch.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="requires grad"):
        rooftop.softmax(torch.randn(3, 4, device=device, requires_grad=True))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(4096, 32768), (512, 262144), (64, 128256), (1, 1 << 20), (3, 1 << 20)])
def test_gpu_sizes(shape):
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 4
    assert rel_err(rooftop.softmax(x), softmax_reference(x)) < TOL[torch.bfloat16]


@pytest.mark.slow
def test_past_2_31_elements():
    x = torch.randn(2**31 // 4096 + 3, 4096, device="cuda", dtype=torch.bfloat16)
    out = rooftop.softmax(x)
    tail = slice(x.shape[0] - 4, None)  # the rows past 2^31 elements
    assert rel_err(out[tail], softmax_reference(x[tail])) < TOL[torch.bfloat16]
    assert rel_err(out[:4], softmax_reference(x[:4])) < TOL[torch.bfloat16]


# ---------------------------------------------------------------------------------------------
# The Gluon path (ops/softmax_sm90.py): sm_90 GPUs only


def _sm90():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Gluon path runs on sm_90 GPUs only")


def _gluon_rows() -> int:
    """Rows enough for the Gluon path, and a few more: the programs' row counts differ by one."""
    return softmax_sm90.CONSUMERS * torch.cuda.get_device_properties(0).multi_processor_count + 5


def _reload_off(monkeypatch):
    """The reload kernel switched off: its widths go to the Gluon path."""
    monkeypatch.setattr(softmax_mod, "RELOAD_MAX_BYTES", 0)


def _run_gluon(monkeypatch, x, log):
    """rooftop's (log_)softmax of x with the reload kernel off, asserting that the Gluon kernel ran."""
    _reload_off(monkeypatch)
    calls = []
    real = softmax_sm90.softmax_rows
    monkeypatch.setattr(softmax_sm90, "softmax_rows", lambda *a, **k: calls.append(1) or real(*a, **k))
    out = (rooftop.log_softmax if log else rooftop.softmax)(x)
    torch.cuda.synchronize()
    assert calls, f"the Gluon path did not run for {tuple(x.shape)} {x.dtype}, strides {x.stride()}"
    return out


def _small_reload(monkeypatch) -> list:
    """The reload kernel's bounds and tiles moved down to reach it at small widths (tiles of 256 values of a 16-bit
    x, 128 of fp32); the kernels launched from now on."""
    monkeypatch.setattr(softmax_mod, "RELOAD_MIN_N", 128)
    monkeypatch.setattr(softmax_mod, "RELOAD_TILE_BYTES", 512)
    monkeypatch.setattr(softmax_mod, "RELOAD_ONE_PROGRAM_MIN_BYTES", 512)  # rows of whole tiles past 512 B: maxnreg
    return spy_launches(monkeypatch, softmax_mod)


def test_reload_applies():
    """The reload kernel takes rows wider than RELOAD_MIN_N of at most RELOAD_MAX_BYTES, at least a row per SM (the
    interpreter's 8), whose loads vectorize; nothing else."""
    def takes(x):
        return softmax_mod.reload_applies(x, torch.empty_like(x))

    most = softmax_mod.RELOAD_MAX_BYTES // 2
    assert takes(torch.empty(8, most, dtype=torch.bfloat16)) and takes(torch.empty(8, 16384 + 16, dtype=torch.half))
    assert not takes(torch.empty(8, 16384, dtype=torch.bfloat16))  # the on-chip kernel's
    assert not takes(torch.empty(8, most + 16, dtype=torch.bfloat16))  # past RELOAD_MAX_BYTES
    assert not takes(torch.empty(8, most, dtype=torch.float32)) and takes(torch.empty(8, most // 2))
    assert not takes(torch.empty(7, most, dtype=torch.bfloat16))  # fewer rows than SMs
    assert not takes(torch.empty(8, 32768 + 8, dtype=torch.bfloat16))  # N not a multiple of 16
    assert not takes(torch.empty(8, 32768 + 16, dtype=torch.bfloat16)[:, 8:])  # base not 16-byte aligned
    one = softmax_mod.RELOAD_ONE_PROGRAM_MIN_BYTES  # one program an SM for rows of more bytes in whole tiles
    assert softmax_mod.reload_launch(one + 32, True) == dict(num_warps=softmax_mod.RELOAD_WARPS, maxnreg=64)
    assert "maxnreg" not in softmax_mod.reload_launch(one, True)
    assert "maxnreg" not in softmax_mod.reload_launch(one + 32, False)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
# 16-bit: two whole tiles; four, the last masked; two, the second masked (fp32 tiles are half as wide)
@pytest.mark.parametrize("N", [512, 1008, 304])
def test_reload_kernel_matches_reference(N, dtype, log, device, monkeypatch):
    """The reload kernel at small widths, on strided rows, with torch's special values: a row of -inf (nan), a nan,
    a +inf (the whole row nan), -inf entries of a finite row (0; -inf for log), a tile of -inf only."""
    launched = _small_reload(monkeypatch)
    inf, nan = float("inf"), float("nan")
    rows = softmax_mod.num_sms(0 if device == "cuda" else -1) + 4  # at least a row per SM
    wide = torch.randn(rows, N + 32, device=device, dtype=dtype) * 4
    x = wide[:, 16:16 + N]  # row stride N + 32
    x[0, :] = -inf
    x[1, 3] = nan
    x[2, N - 1] = inf
    x[3, : N // 2 + 1] = -inf
    x[4, :256] = -inf
    out = (rooftop.log_softmax if log else rooftop.softmax)(x)
    assert launched == ["_softmax_reload_kernel"]
    ref = torch.log_softmax(x.double().cpu(), -1) if log else torch.softmax(x.double().cpu(), -1)
    out = out.cpu().double()
    assert torch.equal(torch.isnan(out), torch.isnan(ref))
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(out), finite) and torch.equal(out[~finite & ~ref.isnan()],
                                                                    ref[~finite & ~ref.isnan()])
    assert rel_err(out[finite], ref[finite]) < TOL[dtype]


def test_gluon_path_never_on_the_cpu(device):
    x = torch.randn(20, 32768, dtype=torch.bfloat16)
    assert not softmax_mod.uses_gluon(x, torch.empty_like(x), False)


def test_gluon_rows_past_the_ring_are_opt_in_and_checked():
    """supports() keeps a row wider than the ring out unless past_ring=True (ops/norm_sm90.py relies on the
    default); a launch asking a row past the ring for more kept chunks than the ring holds, or for two
    consumers, is refused before anything runs (both would break the ring protocol)."""
    x = torch.empty(4, 131072, dtype=torch.bfloat16)
    out = torch.empty_like(x)
    assert not softmax_sm90.supports(x, out) and softmax_sm90.supports(x, out, past_ring=True)
    assert softmax_sm90.supports(x[:, :106496], out[:, :106496])  # 13 chunks: fits
    assert softmax_sm90.config(16) == (1, 8, softmax_sm90.STAGES - softmax_sm90.WIDE_STREAM)
    with pytest.raises(ValueError, match="keep=14"):
        softmax_sm90.softmax_rows(x, out, False, 8, keep=14)
    with pytest.raises(ValueError, match="keep=3"):
        softmax_sm90.softmax_rows(x[:, :32768], out[:, :32768], False, 8, keep=3)
    with pytest.raises(ValueError, match="consumers=2"):
        softmax_sm90.softmax_rows(x, out, False, 8, consumers=2)
    # parts of rows: contiguous rows of a multiple of 8 * parts elements only
    with pytest.raises(ValueError, match="parts=2"):
        softmax_sm90.softmax_rows(x[:, :131064], out[:, :131064], False, 8, parts=2)
    with pytest.raises(ValueError, match="parts=4"):
        softmax_sm90.softmax_rows(x[:, :32768], out[:, :32768], False, 8, parts=4)  # row stride 131072


def test_drop_marked_barriers_drops_only_the_barrier_a_mark_names():
    mark = f"\tmov.b32 %r1, %r2; // {BARRIER_MARK}"
    ptx = "\n".join(["\tbar.sync \t2, 128;",  # no mark: kept
                     mark, "$L__tmp3:", "\tadd.s32 %r3, %r4, 1;", "\tbar.sync \t2, 128;",  # dropped
                     "\tld.shared.v4.b32 {%r5, %r6, %r7, %r8}, [%r3];",
                     mark, "\tld.shared.b32 %r9, [%r3];", "\tbar.sync \t2, 128;",  # a shared read first: kept
                     mark, "$L__BB0_2:", "\tbarrier.sync \t1;",  # a new block first: kept
                     mark, "@!%p1 bra $L__BB0_2;", "\tbar.sync \t2, 128;",  # a branch first: kept
                     mark, "\tbarrier.sync.aligned \t2, 128;"])  # dropped
    out = drop_marked_barriers(ptx).split("\n")
    assert len(out) == len(ptx.split("\n")) - 2
    assert [line for line in out if "sync" in line] == ["\tbar.sync \t2, 128;", "\tbar.sync \t2, 128;",
                                                       "\tbarrier.sync \t1;", "\tbar.sync \t2, 128;"]


# The Gluon softmax's kernel for [*, 65536] bf16 rows compiled for sm_90 as its launch compiles it (GluonLaunch:
# dropping_marked_barriers), in a process of its own: no GPU needed, but not in Triton's interpreter, which the
# tests run under on a machine without one. Prints the PTX's named barriers with LEAN False, then True.
_BARRIERS_SCRIPT = """
import re
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
from rooftop.ops import softmax_sm90 as sm
from rooftop.ops._support import dropping_marked_barriers

for lean in (False, True):
    chunks = 65536 // sm.CHUNK
    consts = dict(LOG=False, EVEN=True, FLAT=True, CHUNK=sm.CHUNK, CHUNKS=chunks, STAGES=sm.STAGES, CONSUMERS=2,
                  KEEP=chunks, PARTS=1, CONSUMER_REGS=sm.consumer_regs(2, 4), LOADER_REGS=sm.LOADER_REGS, LEAN=lean)
    box = [sm.CHUNK // sm.BOX_COLS, sm.BOX_COLS]
    sig = dict(x_desc=f"tensordesc<bf16{box},{sm.RING_LAYOUT!r}>", y_ptr="*bf16", ws_ptr="*bf16", cnt_ptr="*bf16",
               M="i32", N8="i32", y_stride8="i32", **{name: "constexpr" for name in consts})
    with dropping_marked_barriers():
        source = GluonASTSource(sm._softmax_kernel, sig, consts, {(1,): [["tt.divisibility", 16]]})
        ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4)).asm["ptx"]
    print(len(re.findall(r"\\n\\s*(?:bar|barrier)\\.sync", ptx)))
"""


def test_gluon_ring_kernel_loses_the_barriers_its_protocol_does_not_need():
    """Each consumer's pass 1 loses the barrier before its mbarrier waits and pass 2 the one before its buffer
    reads (Triton 3.6's Membar; softmax_sm90.barrier_not_needed): 4 of the kernel's named barriers, the
    releases' barriers kept (pass 2 keeps one barrier a chunk)."""
    done = subprocess.run([sys.executable, "-c", _BARRIERS_SCRIPT], env=compiler_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    full, lean = map(int, done.stdout.split())
    assert lean == full - 4


@pytest.mark.gpu
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("N, dtype", [(N, dtype) for N in (16384 + 8, 24576 + 8, 32768, 65536 - 8, 65536)
                                      for dtype in (torch.float16, torch.bfloat16)]
                         + [(106496 + 8, torch.bfloat16), (131072, torch.float16), (131072, torch.bfloat16),
                            (131072 + 8, torch.bfloat16), (262144, torch.bfloat16)])
def test_gpu_gluon_matches_torch(N, dtype, log, monkeypatch):
    """Rows in the ring (a masked last chunk or whole chunks) and wider than it: just past it (14 chunks: one
    consumer, the head re-read), whole chunks (contiguous: in parts), a masked 17th chunk (the head re-read)."""
    _sm90()
    x = torch.randn(_gluon_rows(), N, device="cuda", dtype=dtype) * 4
    out = _run_gluon(monkeypatch, x, log)
    ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
    assert out.dtype == dtype and rel_err(out, ref) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("N", [16384 + 8, 65536, 131072 + 8, 262144])  # in the ring; past it (head re-read)
def test_gpu_gluon_special_values_follow_torch(N, dtype, monkeypatch):
    _sm90()
    inf, nan = float("inf"), float("nan")
    x = torch.randn(_gluon_rows(), N, device="cuda", dtype=dtype) * 4
    x[0, :] = -inf  # all -inf: nan
    x[1, 3] = nan  # a nan: the whole row nan
    x[2, N - 1] = inf  # +inf (in the last chunk): the whole row nan
    x[3, : N // 2 + 1] = -inf  # a finite row with -inf entries (whole chunks of them, past the ring: of the
    # re-read head): 0 there, -inf for log
    x[4, 1::3] = -inf  # -inf inside every 8-element group
    x[-1, -9:] = -inf  # the last row's tail
    for log in (False, True):
        out = _run_gluon(monkeypatch, x, log).float()
        ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
        assert torch.equal(torch.isnan(out), torch.isnan(ref))
        finite = torch.isfinite(ref)
        assert torch.equal(torch.isfinite(out), finite)
        assert torch.equal(out[~finite & ~torch.isnan(ref)], ref[~finite & ~torch.isnan(ref)])  # -inf for log
        assert rel_err(out[finite], ref[finite]) < TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("N", [131072, 262144])
def test_gpu_gluon_whole_rows_past_the_ring(N, monkeypatch):
    """Contiguous rows of whole chunks past the ring as whole rows (parts off: PART_MAX_N, or
    ROOFTOP_SPLIT_ROWS=0): one consumer, the head re-read."""
    _sm90()
    monkeypatch.setattr(softmax_mod, "PART_MAX_N", 1 << 40)
    x = torch.randn(_gluon_rows(), N, device="cuda", dtype=torch.bfloat16) * 4
    assert softmax_mod.gluon_parts(x, torch.empty_like(x), False) == softmax_mod.gluon_parts(x, x, True) == 1
    for log in (False, True):
        out = _run_gluon(monkeypatch, x, log)
        ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
        assert rel_err(out, ref) < TOL[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("N, parts", [(131072, 4), (262144, 8), (196608, 8), (1048576, 32)])
def test_gpu_gluon_rows_in_parts(N, parts, log, monkeypatch):
    """Contiguous rows past the ring are split into parts of at most PART_MAX_N (softmax's on EXP_PART_WARPS-warp
    consumers), each a program's, which merge their (max, sum) pairs through global memory: the result matches torch
    (a NaN in one part makes the whole row NaN), does not depend on which part arrives last (bit-equal on a second
    run), and the rows' counters and words are left at zero."""
    _sm90()
    M = rows_in_parts(parts)
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16) * 4
    x[1, N // parts:] = -float("inf")  # a row with all its mass in the first part
    x[2, N - 3] = float("nan")  # a NaN in the last part: the whole row NaN
    assert softmax_mod.gluon_parts(x, torch.empty_like(x), log) == parts
    warps = []
    real = softmax_sm90.softmax_rows
    monkeypatch.setattr(softmax_sm90, "softmax_rows", lambda *a, **k: warps.append(k.get("warps")) or real(*a, **k))
    out = _run_gluon(monkeypatch, x, log)
    assert warps == [None if log else softmax_mod.EXP_PART_WARPS]
    ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(out), finite) and rel_err(out[finite], ref[finite]) < TOL[torch.bfloat16]
    torch.testing.assert_close((rooftop.log_softmax if log else rooftop.softmax)(x), out, rtol=0, atol=0,
                               equal_nan=True)
    assert not arrival_counters(x.device, M + 2 * M * parts + 4).any()  # counters and swap_pairs' words


@pytest.mark.gpu
@pytest.mark.parametrize("N", [32768, 131072])  # in the ring; past it
def test_gpu_gluon_strided_rows(N, monkeypatch):
    """A row view with stride != N (TMA boxes of one row) takes the Gluon path; one whose start is not
    16-byte aligned falls back to the Triton kernels, with the same results."""
    _sm90()
    wide = torch.randn(_gluon_rows(), N + 64, device="cuda", dtype=torch.bfloat16) * 4
    x = wide[:, 8:8 + N]  # row stride N + 64, base 16 bytes in
    for log in (False, True):
        out = _run_gluon(monkeypatch, x, log)
        ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
        assert rel_err(out, ref) < TOL[torch.bfloat16]
    unaligned = wide[:, 4:4 + N]
    assert not softmax_mod.uses_gluon(unaligned, torch.empty_like(unaligned), False)
    assert rel_err(rooftop.softmax(unaligned), torch.softmax(unaligned.float(), -1)) < TOL[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_gluon_dispatch(monkeypatch):
    """The Gluon path takes 16-bit rows of GLUON_MIN_N < N <= GLUON_MAX_N (N a multiple of 8; in the ring or
    past it) with at least 2 rows per SM, and nothing else; GLUON_ENABLED switches it off."""
    _sm90()
    M = _gluon_rows()
    x = torch.empty(M, 32768, device="cuda", dtype=torch.bfloat16)
    assert softmax_mod.reload_applies(x, x) and not softmax_mod.uses_gluon(x, x, False)  # the reload kernel's
    _reload_off(monkeypatch)

    def takes(shape, dtype=torch.bfloat16):
        x = torch.empty(shape, device="cuda", dtype=dtype)
        return softmax_mod.uses_gluon(x, torch.empty_like(x), False)

    assert takes((M, 32768)) and takes((M, 16392), torch.float16) and takes((M, 65536))
    assert takes((M, 106496)) and takes((M, 106496 + 8)) and takes((M, 262144))  # the ring's last; past it
    assert not takes((M, 16384))  # the on-chip kernel's
    assert not takes((M, 262144 + 8))  # past GLUON_MAX_N, not in parts (not a multiple of 8 * 8)
    assert takes((M, 1048576))  # in 16 parts
    assert not takes((M, 32772))  # N not a multiple of 8: no TMA descriptor
    assert not takes((M, 32768), torch.float32)
    assert not takes((M - 10, 32768))  # fewer than 2 rows per SM
    monkeypatch.setattr(softmax_mod, "GLUON_ENABLED", False)
    assert not takes((M, 32768))


@pytest.mark.gpu
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("N, dtype", [(16384 + 16, torch.bfloat16), (24576, torch.float16), (32768, torch.bfloat16),
                                      (40960 + 16, torch.bfloat16), (49152, torch.bfloat16), (24576, torch.float32),
                                      (57344, torch.bfloat16), (57344 + 16, torch.bfloat16), (65536, torch.float16),
                                      (32768, torch.float32)])
def test_gpu_reload_matches_torch(N, dtype, log, monkeypatch):
    """The reload kernel at its widths (tiles whole, the last masked; one program an SM past 112 KB rows of whole
    tiles; fp32 at its widest), with torch's special values in a few rows."""
    launched = spy_launches(monkeypatch, softmax_mod)
    inf, nan = float("inf"), float("nan")
    x = torch.randn(_gluon_rows(), N, device="cuda", dtype=dtype) * 4
    x[0, :] = -inf
    x[1, 3] = nan
    x[2, N - 1] = inf
    x[3, : N // 2 + 1] = -inf
    x[4, 1::3] = -inf
    out = (rooftop.log_softmax if log else rooftop.softmax)(x).float()
    assert launched == ["_softmax_reload_kernel"]
    ref = torch.log_softmax(x.float(), -1) if log else torch.softmax(x.float(), -1)
    assert torch.equal(torch.isnan(out), torch.isnan(ref))
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(out), finite)
    assert torch.equal(out[~finite & ~torch.isnan(ref)], ref[~finite & ~torch.isnan(ref)])
    assert rel_err(out[finite], ref[finite]) < TOL[dtype]

