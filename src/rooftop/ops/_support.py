"""What every op file shares: input checks, the row view, the one launch helper (`launch`, with
`prepare` to compile before launching, and `GluonLaunch` its twin for the Gluon kernels of the *_sm90
files), eager call plans (`planned`: a public op's repeated calls replay the launches of its first), the one
way to register a torch custom op.

Where an op runs: CUDA tensors run the Triton kernel; CPU tensors run the same kernel in Triton's
interpreter when TRITON_INTERPRET=1 (tests, CI), else the op's reference.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import threading
import weakref
from typing import Callable, Optional, Sequence

import torch
import triton
import triton.language as tl
from torch.autograd import profiler as _autograd_profiler  # its _is_profiler_enabled: a plain flag, read a call
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor
from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
from triton.runtime import _allocation  # Triton 3.6: the allocator ContextVar (ensure_scratch_allocator)

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def runs_kernel(x: torch.Tensor) -> bool:
    """True when `x`'s op should run the Triton kernel (GPU, or CPU under the interpreter). A ROCm build's GPU (AMD)
    is refused: the kernels are NVIDIA's (inline PTX; 32-warp programs, past the 1024 threads of an AMD workgroup;
    benchmarks/compile_targets.py --targets gfx942: 214 of 1524 launches fail)."""
    if x.is_cuda:
        if torch.version.hip is not None:
            raise RuntimeError(f"rooftop's kernels are written for NVIDIA GPUs, and {x.device} is an AMD GPU (torch "
                               f"{torch.__version__}, ROCm): run the model without rooftop's ops there")
        return True
    return x.device.type == "cpu" and interpreting()


def cdiv(a: int, b: int) -> int:
    """Ceiling division (triton.cdiv costs microseconds when called from Python)."""
    return -(-a // b)


@functools.lru_cache(maxsize=None)
def num_sms(device_index: int) -> int:
    """Streaming multiprocessors of CUDA device `device_index`; the interpreter (-1) pretends to have 8."""
    if device_index < 0:
        return 8
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=None)
def l2_bytes(device_index: int) -> int:
    """L2 cache bytes of CUDA device `device_index`; the interpreter (-1) pretends to have 1 MiB."""
    if device_index < 0:
        return 1 << 20
    return torch.cuda.get_device_properties(device_index).L2_cache_size


@functools.lru_cache(maxsize=None)
def shared_memory_limit(device_index: int) -> int:
    """Bytes of shared memory one program may use on CUDA device `device_index` (227 KB on sm_90 and A100's 163 KB,
    99 KB on sm_86 / sm_89: A10, L40S, RTX 4090); the interpreter (-1) has no limit."""
    if device_index < 0:
        return 1 << 30
    return torch.cuda.get_device_properties(device_index).shared_memory_per_block_optin


@functools.lru_cache(maxsize=None)
def capability(device_index: int) -> tuple[int, int]:
    """(major, minor) compute capability of CUDA device `device_index`."""
    return torch.cuda.get_device_capability(device_index)


def is_sm90(device_index: int) -> bool:
    """Whether CUDA device `device_index` is sm_90 (Hopper), the one target of the Gluon kernels (their
    wgmma, TMA and setmaxnreg code); Gluon has no interpreter either."""
    return capability(device_index) == (9, 0)


# Two things here reach past Triton's public API, both written against Triton 3.6, the version tested on the CPU and
# the H200: the C launcher's argument layout (Launch.direct; GluonLaunch's descriptors encoded once; 3.9's launcher
# takes its arguments in another order), and Gluon, an experimental API that changes with each release (3.9 removed
# tma.async_copy_global_to_shared and changed gl.warp_specialize's arguments). Under any other version they stand
# down: launches go through CompiledKernel.run, whose arguments 3.9 keeps, and the Triton kernels run where the Gluon
# ones would (`gluon_runs`). The specialisation `_spec_key` mirrors is 3.9's too (same types and keys).
INTERNALS_TESTED = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2]) == (3, 6)


def gluon_runs(device_index: int) -> bool:
    """Whether the Gluon kernels (ops/*_sm90.py) may run on CUDA device `device_index`: an sm_90 GPU, under the
    Triton they were written for (INTERNALS_TESTED)."""
    return INTERNALS_TESTED and is_sm90(device_index)


FP8_MIN_CAPABILITY = (8, 9)  # Ada and later: below, Triton has no e4m3 type and the GPU no fp8 tensor cores


def check_fp8_device(name: str, device: torch.device) -> None:
    """An fp8 e4m3 (float8_e4m3fn) kernel on `device` needs an sm_89 GPU or later (L40S, RTX 4090, H100, H200):
    on an A100, A10 or RTX 3090 its kernels would not compile (Triton: "type fp8e4nv not supported in this
    architecture"). Called where a call is planned, not on a plan's replay."""
    if device.type == "cuda" and not interpreting():
        major, minor = capability(device.index)
        if (major, minor) < FP8_MIN_CAPABILITY:
            raise RuntimeError(f"{name}: float8_e4m3fn kernels need a GPU of compute capability 8.9 or later (Ada, "
                               f"Hopper); {device} ({torch.cuda.get_device_name(device)}) is {major}.{minor}")


# Dynamic per-row (per-token) quantization of an op's output, so that the next GEMM reads one byte an element:
#     s = max_i |y_i| / QMAX,   q_i = y_i / s   (int8 rounded half away from zero, fp8 to nearest even)
# quant name -> (stored dtype, the kernels' QUANT constexpr, QMAX: the format's largest magnitude)
QUANT_FORMATS = {"fp8": (torch.float8_e4m3fn, 1, 448.0), "int8": (torch.int8, 2, 127.0)}


def check_quant(quant: object) -> None:
    if quant is not None and quant not in QUANT_FORMATS:
        raise ValueError(f"quant must be None, 'fp8' or 'int8', got {quant!r}")


@triton.jit
def quantize_values(y, scale, QUANT: tl.constexpr, QMAX: tl.constexpr):
    """y / scale as stored: int8 rounded half away from zero, fp8 clamped (the cast rounds to nearest)."""
    q = tl.clamp(y / scale, -QMAX, QMAX)
    if QUANT == 2:
        q = tl.where(q >= 0, tl.floor(q + 0.5), tl.ceil(q - 0.5))
    return q


@triton.jit
def row_scale(peak, QMAX: tl.constexpr):
    """A row's scale from its max |y|: peak / QMAX, at least 1e-30 / QMAX (a row of zeros), NaN where peak is NaN, as
    torch's clamp_min keeps it (tl.maximum's default is fmax, which drops NaN: a NaN row would get a finite scale)."""
    return tl.maximum(peak, 1e-30, propagate_nan=tl.PropagateNan.ALL) / QMAX


def quantize_rows_reference(y: torch.Tensor, quant: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-row quantization of float64 y: (q in the quant dtype, scale [..., 1] float64)."""
    dtype, _, qmax = QUANT_FORMATS[quant]
    scale = y.abs().amax(-1, keepdim=True).clamp_min(1e-30) / qmax
    q = (y / scale).clamp(-qmax, qmax)
    if quant == "int8":
        q = torch.where(q >= 0, torch.floor(q + 0.5), torch.ceil(q - 0.5))
    return q.to(dtype), scale


def apply_keeping_dtypes(module, apply, fn, recurse, names, dtype) -> torch.Tensor:
    """nn.Module._apply (`apply`, the parent's) for a module whose buffers `names` (quantized codes, their scales)
    keep their dtypes: model.half() / .to(dtype) cast every floating tensor, float8 too; those only follow the
    device. Returns `fn` applied to an empty tensor of `dtype` (what the cast makes of that dtype, and where)."""
    kept = {name: module._buffers[name] for name in names}
    for name in kept:
        module._buffers[name] = None
    apply(fn, recurse)
    probe = fn(torch.empty(0, device=kept[names[0]].device, dtype=dtype))
    for name, t in kept.items():
        module._buffers[name] = t.to(probe.device)
    return probe


def fp8_rows_eager(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row fp8 quantization of y by PyTorch ops, as a model's code writes it (the fused kernels' eager baseline;
    Fp8Linear's weights, a scale per output channel): (q, scale [..., 1] fp32)."""
    scale = y.float().abs().amax(-1, keepdim=True).clamp_min(1e-30) / 448.0
    return (y.float() / scale).clamp(-448.0, 448.0).to(torch.float8_e4m3fn), scale


# Programmatic dependent launch (PDL, sm_90): a kernel launched so may start before the kernel ahead of it in the
# stream has ended, once that one lets its dependents go; it must wait (`await_previous`) before it reads or writes
# anything. Between two such kernels the next one's programs are resident as this one's last ones end, not a launch
# later: 0.3-1.3 us a call in a chain of GEMVs (quant_matmul.PDL_PATHS, journal items 168 and 171). The row ops' decode
# kernels (rms_norm's on-chip kernel, the gated activations, RoPE) launch so too where ROW_PDL: a decoder layer's
# norm -> projection, projection -> RoPE, gate / up -> SwiGLU -> down boundaries. After a kernel that does not let its
# dependents go (torch's, cuBLAS's) a PDL launch starts when that one ends, as any launch.
ROW_PDL = True


def pdl_options(t: torch.Tensor, enabled: Optional[bool] = None) -> dict:
    """The keywords for `launch` of a kernel with a PDL constexpr (`await_previous`): launched as a programmatic
    dependent where `enabled` (None: ROW_PDL, read at the call), t is on an sm_90 GPU and no interpreter runs. A
    call plan keeps its first call's launch: change ROW_PDL before the op's first call with a shape."""
    pdl = (ROW_PDL if enabled is None else enabled) and t.is_cuda and not interpreting() and is_sm90(t.device.index)
    return {"PDL": True, "launch_pdl": True} if pdl else {"PDL": False}


@triton.jit
def await_previous(PDL: tl.constexpr):
    """The first statement of a kernel launched as a programmatic dependent (PDL, `pdl_options`): wait for the kernel
    before it to end (its writes visible: nothing that kernel writes may be read, and nothing written, before this;
    moe's INT4_DOWN_EARLY reads the weights and the router's indices first), then let the next launch go,
    whose programs then become resident as this one's end. Only then: let go earlier, a chain of kernels piles up
    waiting on the SMs (journal item 168)."""
    if PDL:
        gdc_wait()
        gdc_launch_dependents()


@functools.lru_cache(maxsize=4096)
def onchip_config(M: int, N: int, elems_per_thread: int = 16, block_elems: int = 4096) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, num_warps) for a kernel that holds whole rows in registers: several short
    rows per program so that each program moves a few KB, about `elems_per_thread` values per thread."""
    block_n = 1 << max(N - 1, 0).bit_length()
    block_m = max(1, min(block_elems // block_n, 1 << max(M - 1, 0).bit_length()))
    warps = max(1, min(32, (block_m * block_n) // (32 * elems_per_thread)))
    return block_m, block_n, 1 << (warps.bit_length() - 1)


def in_place_rows(op: str, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Row views of the x and residual a fused add + norm writes in place: views of the tensors themselves,
    whose rows do not overlap."""
    tensors = (x, residual)
    rows = tuple(as_rows(t) for t in tensors)
    if any(r.data_ptr() != t.data_ptr() or r.stride(-1) != 1 for r, t in zip(rows, tensors)):
        raise ValueError(f"{op} works in place: its tensors must be viewable as rows of unit column stride")
    for r, name in zip(rows, ("x", "residual")):
        if r.numel() and r.shape[0] > 1 and r.stride(0) < r.shape[1]:  # an expanded tensor, say
            raise ValueError(f"{op} works in place: {name}'s rows overlap in memory (row stride {r.stride(0)} for "
                             f"{r.shape[1]} columns), so their results would overwrite each other")
    return rows


# ---------------------------------------------------------------------------------------------
# Tiles of a row for the looped (wide-row) kernels


@triton.jit
def load_tile(ptr, off, cols, N, EVEN: tl.constexpr, POLICY: tl.constexpr):
    """Tile [off, off + TILE) of a row of N; EVEN (N a multiple of TILE): unmasked, and an `off`
    past either end is clamped to the nearest tile (a prefetch never used: it re-reads from L1)."""
    if EVEN:
        return tl.load(ptr + tl.minimum(tl.maximum(off, 0), N - cols.shape[0]) + cols, eviction_policy=POLICY)
    return tl.load(ptr + off + cols, mask=(off + cols >= 0) & (off + cols < N), other=0.0, eviction_policy=POLICY)


@triton.jit
def store_tile(ptr, off, cols, N, value, EVEN: tl.constexpr, POLICY: tl.constexpr):
    if EVEN:
        tl.store(ptr + off + cols, value, eviction_policy=POLICY)
    else:
        tl.store(ptr + off + cols, value, mask=off + cols < N, eviction_policy=POLICY)


@triton.jit
def row_pointers(x_ptr, y_ptr, res_ptr, r_ptr, row, x_stride, y_stride, res_stride, r_stride,
                 HAS_RESIDUAL: tl.constexpr):
    """Row `row` (64-bit offsets) of x, y, the residual, and the row pass 2 re-reads: the stored new
    residual r, or x itself without a residual (the residual's pointer is then x's, unused)."""
    row = tl.cast(row, tl.int64)
    x_row = x_ptr + row * x_stride
    if HAS_RESIDUAL:
        return x_row, y_ptr + row * y_stride, res_ptr + row * res_stride, r_ptr + row * r_stride
    return x_row, y_ptr + row * y_stride, x_row, x_row


@triton.jit
def load_rows_add_residual(x_ptr, res_ptr, r_ptr, rows, cols, mask, x_stride, res_stride, r_stride,
                           HAS_RESIDUAL: tl.constexpr):
    """The fp32 tile x[rows, cols] of an on-chip row kernel. With a residual: r = x + residual, rounded
    to r's dtype, is stored (the new residual stream, as stored) and returned in its place."""
    x = tl.load(x_ptr + rows[:, None] * x_stride + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    if HAS_RESIDUAL:
        res = tl.load(res_ptr + rows[:, None] * res_stride + cols[None, :], mask=mask, other=0.0)
        r = (x + res.to(tl.float32)).to(r_ptr.dtype.element_ty)
        tl.store(r_ptr + rows[:, None] * r_stride + cols[None, :], r, mask=mask)
        x = r.to(tl.float32)
    return x


def rows_vectorize(N: int, views: Sequence[torch.Tensor], vectors: Sequence[Optional[torch.Tensor]] = ()) -> bool:
    """Whether a Triton kernel's loads and stores of these [M, N] row `views` (and per-column `vectors`)
    vectorize to 16 bytes: what Triton specialises on, 16-byte aligned pointers, N and the row strides
    multiples of 16. Where they do not, its kernels issue a load per element (several times slower)."""
    vectors = [t for t in vectors if t is not None]
    return (N % 16 == 0 and all(t.stride(0) % 16 == 0 for t in views)
            and all(t.data_ptr() % 16 == 0 for t in (*views, *vectors)))


@triton.jit
def load_tile_again(ptr, offs, mask, POLICY: tl.constexpr):
    """Pass 2's fp32 tile `offs` of a reload kernel (r or x, read again: not kept, evict_first), or of a
    per-column vector (w, b: re-read by every row, evict_last; "l2": not cached in L1 (ld.cg, which takes no
    eviction priority), so that it leaves the row's own bytes there). `mask` None: a whole tile."""
    CACHE: tl.constexpr = ".cg" if POLICY == "l2" else ""
    EVICT: tl.constexpr = "" if POLICY == "l2" else POLICY
    if mask is None:
        v = tl.load(ptr + offs, cache_modifier=CACHE, eviction_policy=EVICT)
    else:
        v = tl.load(ptr + offs, mask=mask, other=0.0, cache_modifier=CACHE, eviction_policy=EVICT)
    return v.to(tl.float32)


@triton.jit
def load_tile_add_residual(x_row, res_row, r_row, offs, mask, HAS_RESIDUAL: tl.constexpr):
    """Pass 1's fp32 tile `offs` of r for a kernel whose pass 2 loads the row again ("reload" kernels:
    no values held across the passes). r = x without a residual, loaded evict_last (pass 2 re-reads x);
    with one r = x + residual, rounded to r's dtype, is stored evict_last (the new residual stream, as
    stored, which pass 2 re-reads: the same thread's own stores, in program order) and returned as
    stored; x and the residual are not read again (evict_first). `mask` None: a whole tile."""
    if HAS_RESIDUAL:
        x = load_tile_again(x_row, offs, mask, "evict_first")
        r = (x + load_tile_again(res_row, offs, mask, "evict_first")).to(r_row.dtype.element_ty)
        tl.store(r_row + offs, r, mask=mask, eviction_policy="evict_last")
        r = r.to(tl.float32)
    else:
        r = load_tile_again(x_row, offs, mask, "evict_last")
    return r


# ---------------------------------------------------------------------------------------------
# Wide rows split over programs that wait for each other (the "split" path of the row kernels)
#
# A row of G chunks runs as G adjacent programs (program row * G + chunk). Each holds its chunk in
# registers, publishes two fp32 partial statistics, waits until the row's G programs have, merges
# them and writes its chunk: the row is read from DRAM once and written once, with many programs
# per SM in flight. The wait needs the row's programs resident together. CUDA dispatches programs
# in increasing order, so with G at most the SM count (one program of any size fits each SM) the
# lowest unfinished row always has all its programs resident, and nothing deadlocks. Triton's
# interpreter runs programs one after another: off a GPU only rows of one chunk take a split path.


# ROOFTOP_SPLIT_ROWS=0 turns the split paths off (the looped kernels run): their wait assumes that every SM the
# device reports takes programs, which an MPS SM limit or a green context breaks (the spin would never end).
SPLIT_ROWS_ENABLED = os.environ.get("ROOFTOP_SPLIT_ROWS", "1") != "0"


def split_chunks(x: torch.Tensor, N: int, chunk: int) -> int:
    """Chunks of `chunk` elements a row of N is split into on the split path, or 0 where that path
    cannot run (more chunks than SMs, or more than one off a GPU, or ROOFTOP_SPLIT_ROWS=0)."""
    if not SPLIT_ROWS_ENABLED:
        return 0
    chunks = cdiv(N, chunk)
    if not x.is_cuda:  # the interpreter runs programs one after another: a row of one chunk waits for no other
        return chunks if chunks == 1 else 0
    return chunks if chunks <= num_sms(x.device.index) else 0


_counters: dict[tuple[int, int], torch.Tensor] = {}  # (device, stream) -> int32 arrival counters, kept at zero
_zeroing_streams: dict[int, int] = {}  # device -> a driver stream (non-blocking) where new counters are zeroed
_CU_STREAM_CAPTURE_MODE_RELAXED = 2
_CU_STREAM_NON_BLOCKING = 1


@functools.lru_cache(maxsize=None)
def _libcuda() -> ctypes.CDLL:
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cu.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
    cu.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
    cu.cuCtxPushCurrent_v2.argtypes = [ctypes.c_void_p]
    result = cu.cuInit(0)  # a no-op where PyTorch has initialised the driver
    if result:
        raise RuntimeError(f"cuInit failed with CUresult {result}")
    return cu


def _driver(name: str, *args) -> None:
    """Call CUDA driver function `name`; raise if it fails."""
    result = getattr(_libcuda(), name)(*args)
    if result:
        raise RuntimeError(f"{name} failed with CUresult {result}")


@functools.lru_cache(maxsize=None)
def _primary_context(device_index: int) -> int:
    """The device's primary context (PyTorch's), retained once and never released: the counters made in it are never
    freed, so it must outlive them (a release could otherwise destroy it, with them, where nothing else retains it)."""
    device, context = ctypes.c_int(), ctypes.c_void_p()
    _driver("cuDeviceGet", ctypes.byref(device), device_index)
    _driver("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
    return context.value


@contextlib.contextmanager
def _driver_context(device_index: int):
    """The device's primary context current on this thread (PyTorch's), and this thread's stream-capture mode relaxed:
    a CUDA-graph capture in the default (global) mode forbids the thread's allocations and host waits, even on
    streams that are not capturing. Both restored after."""
    mode = ctypes.c_int(_CU_STREAM_CAPTURE_MODE_RELAXED)
    _driver("cuThreadExchangeStreamCaptureMode", ctypes.byref(mode))
    try:
        _driver("cuCtxPushCurrent_v2", _primary_context(device_index))
        try:
            yield
        finally:
            _driver("cuCtxPopCurrent_v2", ctypes.byref(ctypes.c_void_p()))
    finally:
        _driver("cuThreadExchangeStreamCaptureMode", ctypes.byref(mode))  # mode holds the one before


class _DriverWords:
    """`count` int32 words of device memory at `address`, as torch.as_tensor takes them (__cuda_array_interface__)."""

    def __init__(self, address: int, count: int):
        self.__cuda_array_interface__ = dict(shape=(count,), typestr="<i4", data=(address, False), version=3,
                                             strides=None, stream=None)


def _zeroed_counters(device: torch.device, count: int) -> torch.Tensor:
    """`count` int32 counters that read zero when this returns, from the CUDA driver (cuMemAlloc), never freed.
    Outside PyTorch's caching allocator on purpose: inside a CUDA-graph capture (or torch.compile's CUDA-graph trees,
    which route even their eager warm-up's allocations to the graph's pool) torch.zeros would come from that graph's
    pool and be zeroed only when the graph replays, while the cache hands the counters to every later graph captured
    on the same stream (torch.cuda.graph() without a stream: one shared stream), which may replay first; and a pool
    may reuse freed counters that a graph still holds. So they are zeroed now on a stream of their own, waited for."""
    address = ctypes.c_uint64()  # a CUdeviceptr
    with _driver_context(device.index):
        stream = _zeroing_streams.get(device.index)
        if stream is None:
            handle = ctypes.c_void_p()
            _driver("cuStreamCreate", ctypes.byref(handle), _CU_STREAM_NON_BLOCKING)
            stream = _zeroing_streams[device.index] = handle.value
        _driver("cuMemAlloc_v2", ctypes.byref(address), 4 * count)
        _driver("cuMemsetD32Async", address.value, 0, count, stream)
        _driver("cuStreamSynchronize", stream)
        return torch.as_tensor(_DriverWords(address.value, count), device=device)


def arrival_counters(device: torch.device, count: int) -> torch.Tensor:
    """At least `count` zeroed int32 arrival counters for kernels whose programs count each other in
    (split-K tiles, split rows), on the current stream of `device`. Each launch leaves the counters
    it used at zero, so they are allocated (and zeroed) once per stream; one set per stream so that
    launches on concurrent streams never share a counter (graphs captured on one stream share its set: replay
    them one at a time). Never freed, outgrown ones too: a CUDA graph holds their address (_zeroed_counters). Off a
    GPU (the interpreter) fresh ones each call."""
    if device.type != "cuda":
        with _disable_current_modes():  # a recording call may replay this: it asks again (provided)
            counters = torch.zeros(max(count, 1), device=device, dtype=torch.int32)
        return provided(counters, functools.partial(arrival_counters, device, count))
    key = (device.index, triton.runtime.driver.active.get_current_stream(device.index))
    counters = _counters.get(key)
    if counters is None or counters.numel() < count:
        size = max(count, 1024, 0 if counters is None else 2 * counters.numel())
        with _disable_current_modes():
            counters = _counters[key] = _zeroed_counters(device, size)
    return provided(counters, functools.partial(arrival_counters, device, count))


@functools.lru_cache(maxsize=None)
def float32_placeholder(device: torch.device) -> torch.Tensor:
    """One float32 of device memory for a pointer argument that a launch never reads or writes but whose dtype Triton
    specialises on. On a GPU from the CUDA driver as the counters are (_zeroed_counters), never freed: made first
    inside a CUDA-graph tree's warm-up, torch.empty would leave a live tensor in that graph's pool ("tensor(s) in the
    cudagraph pool not tracked as outputs", tests/test_compile.py's reduce-overhead test run alone)."""
    with _disable_current_modes():
        if device.type != "cuda":
            return torch.empty(1, device=device, dtype=torch.float32)
        return _zeroed_counters(device, 1).view(torch.float32)


@triton.jit
def arrive_last(counters, index, count):
    """Count this program in on arrival counter `index` once every thread's writes are done (release), and return
    whether it is the last of `count` programs to arrive: that one sees the others' writes (acquire; read them with
    .cg, past this SM's L1) and zeroes the counter for the next launch."""
    tl.debug_barrier()  # every thread's writes before the arrival is published
    last = tl.atomic_add(counters + index, 1, sem="acq_rel", scope="gpu") == count - 1
    if last:
        tl.store(counters + index, 0)
    return last


@triton.jit
def store_split_output(acc, rows, cols, M, N, b_ptr, out_ptr, out_stride, ws_ptr, cnt_ptr, tile, piece, pieces,
                       HAS_BIAS: tl.constexpr, SUM_BATCH: tl.constexpr):
    """Write the [BLOCK_M, BLOCK_N] fp32 tile `acc` + bias to the output, where `acc` is piece `piece` of
    the `pieces` (split-K splits or stream-K pieces, in k order; constexpr or not) that sum to the tile.
    With more than one piece, each stores its partial to the workspace and the last to arrive sums them
    in piece order, so the result does not depend on the arrival order, and zeroes the tile's arrival
    counter. It loads SUM_BATCH partials at a time (masked past `pieces`): a loop of one load and its add
    waits an L2 round trip per piece, which ptxas unrolls away for up to ~64 constexpr pieces but not for
    112 (offline sm_90: 112 dependent round trips; H200, int4 1 x 4096 x 14336, 112 splits: 40 us
    against 21 with 56)."""
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows = rows.to(tl.int64)
    is_last = pieces == 1
    if pieces > 1:
        part_ptrs = ws_ptr + rows[:, None] * N + cols[None, :]  # workspace [pieces, M, N]
        plane = tl.cast(M, tl.int64) * N
        tl.store(part_ptrs + piece * plane, acc, mask=mask)
        is_last = arrive_last(cnt_ptr, tile, pieces)
        if is_last:
            acc = tl.zeros_like(acc)
            for first in range(0, pieces, SUM_BATCH):  # .cg: other SMs wrote these, skip this SM's L1
                for s in tl.static_range(SUM_BATCH):
                    acc += tl.load(part_ptrs + (first + s) * plane, mask=mask & (first + s < pieces), other=0.0,
                                   cache_modifier=".cg")
    if is_last:
        if HAS_BIAS:
            acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        tl.store(out_ptr + rows[:, None] * out_stride + cols[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)


def exchange_words(device: torch.device, rows: int, parts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(words, counters) of a launch whose `rows` rows exchange statistics between `parts` parts each (swap_row_stats,
    softmax_sm90.swap_pairs): a zeroed int64 word a part after a zeroed int32 counter a row (the words 16-byte
    aligned), both among the arrival counters, which each launch leaves zeroed (a recorded call's replay asks
    again: `provided`)."""
    start = cdiv(rows, 4) * 4
    counters = arrival_counters(device, start + 2 * rows * parts)
    words = counters[start:start + 2 * rows * parts].view(torch.int64)
    return provided(words, lambda: exchange_words(device, rows, parts)[0]), counters


SIGN_BIT = tl.constexpr(-2147483648)  # an fp32's sign bit, as an int32


@triton.jit
def swap_row_stats(words_ptr, row, chunk, a, b, fill_a: tl.constexpr, fill_b: tl.constexpr, G, G_POW2: tl.constexpr):
    """Publish chunk `chunk`'s pair (a, b) of row `row`, wait until the row's G chunks have, and return the G pairs as
    two [G_POW2] vectors (padded with fill_a, fill_b), in one round trip to L2 and no fence: the pair is one int64
    word (pair_word: never 0, and 0 marks an empty word), swapped into the chunk's word of words [M, G] (relaxed);
    the row's G words are polled (relaxed) until none is empty, and the values come with the poll. After its last use
    of them, each chunk calls leave_row."""
    base = words_ptr + tl.cast(row, tl.int64) * G
    tl.atomic_xchg(base + chunk, pair_word(a, b), sem="relaxed", scope="gpu")
    g = tl.arange(0, G_POW2)
    got = tl.zeros([G_POW2], tl.int64)
    empty = G
    while empty > 0:
        # relaxed atomic adds of 0: volatile loads of the words polled slower (H100, session 60: journal item 409)
        got = tl.atomic_add(base + g, tl.zeros([G_POW2], tl.int64), mask=g < G, sem="relaxed", scope="gpu")
        empty = tl.sum(((g < G) & (got == 0)).to(tl.int32), axis=0)
    return pair_values(got, g < G, fill_a, fill_b)


@triton.jit
def pair_word(a, b):
    """swap_row_stats' word of the pair (a, b): a's bits low, b's with the sign bit flipped high (a b of -0.0 as
    +0.0), never 0."""
    b = tl.where(b == 0.0, 0.0, b)
    return ((b.to(tl.int32, bitcast=True) ^ SIGN_BIT).to(tl.int64) << 32) | a.to(tl.uint32, bitcast=True).to(tl.int64)


@triton.jit
def pair_values(words, live, fill_a: tl.constexpr, fill_b: tl.constexpr):
    """The pairs (a, b) of pair_word's `words` where `live` (elsewhere fill_a, fill_b)."""
    a = tl.where(live, words.to(tl.int32).to(tl.float32, bitcast=True), fill_a)
    return a, tl.where(live, ((words >> 32).to(tl.int32) ^ SIGN_BIT).to(tl.float32, bitcast=True), fill_b)


@triton.jit
def leave_row(words_ptr, cnt_ptr, row, G, G_POW2: tl.constexpr):
    """swap_row_stats' cleanup, called once a chunk has stored its output (the count's round trip then overlaps the
    stores): the chunk counts itself out on the row's counter (relaxed), and the row's last to leave empties the
    row's words and counter for the next launch."""
    if tl.atomic_add(cnt_ptr + row, 1, sem="relaxed", scope="gpu") == G - 1:
        g = tl.arange(0, G_POW2)
        tl.store(words_ptr + tl.cast(row, tl.int64) * G + g, tl.zeros([G_POW2], tl.int64), mask=g < G)
        tl.store(cnt_ptr + row, 0)


def split_words_chunks(rows: Sequence[Optional[torch.Tensor]], vectors: Sequence[Optional[torch.Tensor]],
                       chunk: int) -> int:
    """Chunks of `chunk` elements the [M, N] row views `rows` (x first; y, and the residual and r where
    present) split into on a split path that moves 16-bit rows as 32-bit words of two values (the rows and
    the per-column `vectors`, w and b, all of x's dtype, N even, row strides even, bases 4-byte aligned), or
    0 where it cannot run (split_chunks' rule, or a layout it cannot take). None entries are absent tensors."""
    x = rows[0]
    N = x.shape[1]
    rows = [t for t in rows if t is not None]
    tensors = rows + [v for v in vectors if v is not None]
    if (x.element_size() != 2 or N % 2 or any(t.dtype != x.dtype or t.data_ptr() % 4 for t in tensors)
            or any(t.stride(0) % 2 for t in rows)):
        return 0
    return split_chunks(x, N, chunk)


@triton.jit
def load_chunk_words(x_row, res_row, r_row, words, live, HAS_RESIDUAL: tl.constexpr, DTYPE: tl.constexpr):
    """A split-words kernel's piece of row r at word offsets `words`, as words of two DTYPE values: x's; with
    a residual r = x + residual rounded to DTYPE (the new residual stream), also stored to r_row. Row
    pointers as 32-bit word pointers."""
    r = tl.load(x_row + words, mask=live, other=0)
    if HAS_RESIDUAL:
        x_even, x_odd = unpack_words(r, DTYPE)
        res_even, res_odd = unpack_words(tl.load(res_row + words, mask=live, other=0), DTYPE)
        r = pack_words(x_even + res_even, x_odd + res_odd, DTYPE)
        tl.store(r_row + words, r, mask=live)
    return r


@triton.jit
def load_split_chunk(x_ptr, y_ptr, res_ptr, r_ptr, x_stride, y_stride, res_stride, r_stride, N, G,
                     HAS_RESIDUAL: tl.constexpr, CHUNK: tl.constexpr):
    """The start of a split-words program: its (row, chunk) = (p // G, p % G), the word offsets of its chunk's
    two halves (lo, hi) in the row, their words of r (load_chunk_words: with a residual, r is stored) and y's
    row as a word pointer. Strides in elements."""
    DTYPE: tl.constexpr = x_ptr.dtype.element_ty
    HALF: tl.constexpr = CHUNK // 4  # words in half a chunk
    row = tl.program_id(0) // G
    chunk = tl.program_id(0) % G
    lo = chunk * (CHUNK // 2) + tl.arange(0, HALF)
    hi = lo + HALF
    row64 = tl.cast(row, tl.int64)
    words = tl.pointer_type(tl.uint32)
    x_row = (x_ptr + row64 * x_stride).to(words)
    res_row = (res_ptr + row64 * res_stride).to(words)
    r_row = (r_ptr + row64 * r_stride).to(words)
    r_lo = load_chunk_words(x_row, res_row, r_row, lo, lo < N // 2, HAS_RESIDUAL, DTYPE)
    r_hi = load_chunk_words(x_row, res_row, r_row, hi, hi < N // 2, HAS_RESIDUAL, DTYPE)
    return row, chunk, lo, hi, r_lo, r_hi, (y_ptr + row64 * y_stride).to(words)


@triton.jit
def unpack_words(words, DTYPE: tl.constexpr):
    """The fp32 values (even, odd) of 32-bit words that each hold two 16-bit floats of DTYPE, element 2i in
    the low half (as little-endian memory has them): one shift or mask a bf16 value, no data moves."""
    if DTYPE == tl.bfloat16:
        even = (words << 16).to(tl.float32, bitcast=True)
        odd = (words & 0xFFFF0000).to(tl.float32, bitcast=True)
    else:
        even = (words & 0xFFFF).to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
        odd = (words >> 16).to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
    return even, odd


@triton.jit
def pack_words(even, odd, DTYPE: tl.constexpr):
    """unpack_words' inverse: fp32 (even, odd) rounded to DTYPE, two to a 32-bit word."""
    low = even.to(DTYPE).to(tl.uint16, bitcast=True).to(tl.uint32)
    high = odd.to(DTYPE).to(tl.uint16, bitcast=True).to(tl.uint32)
    return low | (high << 16)


@triton.jit
def load_word_pairs(ptr, words, live, DTYPE: tl.constexpr):
    """The fp32 (even, odd) values of a 16-bit vector (a weight, a bias) at word offsets `words`."""
    return unpack_words(tl.load(ptr.to(tl.pointer_type(tl.uint32)) + words, mask=live, other=0), DTYPE)


@triton.jit
def opaque_zero(statistic):
    """A uint32 0 whose bits the compiler cannot know (all ones where `statistic` is nan: the row's output
    is nan then anyway). `unpack_words(words | opaque_zero(s))` gives the values of `unpack_words(words)`,
    but the compiler cannot merge the two, so a split kernel holds a chunk across its wait as the words its
    loads filled (one register a pair), not as the fp32 values of the first unpacking (two). Not a 0 / 1
    flag: with its high bits known, `(words | flag) & 0xFFFF0000` folds to `words & 0xFFFF0000`."""
    return (-(statistic != statistic).to(tl.int32)).to(tl.uint32, bitcast=True)


# ---------------------------------------------------------------------------------------------
# Input checks: every error names the argument.


def check_float(name: str, t: object, dtypes: Sequence[torch.dtype] = FLOAT_DTYPES) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        allowed = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} has dtype {str(t.dtype).replace('torch.', '')}; expected one of {allowed}")
    if t.requires_grad and torch.is_grad_enabled():
        raise RuntimeError(f"{name} requires grad: rooftop ops are forward-only (use torch.no_grad or inference_mode)")
    return t


def check_same_device(name: str, t: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if t.device != ref.device:
        raise ValueError(f"{name} is on {t.device} but {ref_name} is on {ref.device}")


def check_norm_inputs(x, residual, eps, **params) -> None:
    """The checks every row norm shares: x, a residual like x, per-column parameters (weight, bias:
    None or a contiguous float vector as wide as x's rows, on x's device), eps >= 0."""
    check_float("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension")
    if residual is not None:
        check_float("residual", residual)
        check_same_device("residual", residual, "x", x)
        if residual.shape != x.shape:
            raise ValueError(f"residual has shape {tuple(residual.shape)} but x has {tuple(x.shape)}")
        if residual.dtype != x.dtype:
            raise TypeError(f"residual has dtype {residual.dtype} but x has {x.dtype}")
    for name, t in params.items():
        if t is None:
            continue
        check_float(name, t)
        check_same_device(name, t, "x", x)
        if t.shape != (x.shape[-1],):
            raise ValueError(f"{name} must have shape ({x.shape[-1]},) to match x's last dim, got {tuple(t.shape)}")
        if t.stride(0) != 1 and t.numel() > 1:
            raise ValueError(f"{name} must be contiguous")
    check_number("eps", eps)
    if not eps >= 0:
        raise ValueError(f"eps must be a non-negative number, got {eps!r}")


def check_number(name: str, value) -> None:
    """A scalar argument the kernels take as a Python int or float (a numpy or torch scalar is not one)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a Python float or int, got {type(value).__module__}.{type(value).__name__} "
                        f"{value!r} (float({name}) converts it)")


def normalize_dim(dim: int, ndim: int, name: str = "dim") -> int:
    if not isinstance(dim, int):
        raise TypeError(f"{name} must be an int, got {type(dim).__name__}")
    if ndim == 0:
        raise ValueError("x must have at least one dimension")
    if not -ndim <= dim < ndim:
        raise IndexError(f"{name}={dim} is out of range for a tensor of {ndim} dimensions")
    return dim % ndim


def as_rows(x: torch.Tensor) -> torch.Tensor:
    """A 2-D [M, N] view of `x` over its last dim with unit column stride; copies only when the
    leading dims cannot be flattened into one row stride (rows with stride != N need no copy)."""
    if x.dim() == 2 and x.stride(1) == 1:  # the common case, free
        return x
    n = x.shape[-1]
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if x.stride(-1) != 1 and n > 1:
        x = x.contiguous()
    try:
        rows = x.view(-1, n)
    except RuntimeError:  # leading dims not flattenable into one stride
        rows = x.reshape(-1, n)
    if n > 1 and rows.stride(1) != 1:
        rows = rows.contiguous()
    return rows


# ---------------------------------------------------------------------------------------------
# The launch helper. Triton's `kernel[grid](...)` spends a few microseconds per call in Python
# working out which compiled variant to run; at decode sizes that is most of the op. We key the
# compiled kernel on everything Triton specialises on (dtypes, 16-byte alignment of pointers,
# ints equal to 1 / divisible by 16 / past 32 bits, constexpr values) and launch it directly.

_compiled: dict[tuple, "Launch"] = {}


_CUDA = torch.device("cuda")


def _torch_scratch(size: int, alignment: int, stream: Optional[int]) -> torch.Tensor:
    """Triton's runtime allocator, for the global scratch of a launch (the TMA descriptors a kernel builds on the
    device: 128 bytes a descriptor and program): a block of torch's caching allocator on the current stream (the
    launch's), free again once the launch is queued (a later user of the block on that stream runs after the
    kernel). torch's blocks are 512-byte aligned, past any alignment Triton asks."""
    return torch.empty(size, device=_CUDA, dtype=torch.int8)


def ensure_scratch_allocator() -> None:
    """Make _torch_scratch Triton's allocator unless one is set (the user's stays). Triton keeps it per context, and
    a thread starts with none, so every launch that may need scratch calls this first: one ContextVar read."""
    if isinstance(_allocation._allocator.get(), _allocation.NullAllocator):
        triton.set_allocator(_torch_scratch)


class Launch:
    """One compiled variant of a kernel with its constexpr values fixed: `run(grid, *args)` passes only
    the runtime arguments to the driver (no specialisation key, no Triton dispatch). An op may keep
    the Launch its first call returned, under a key that covers what Triton specialises on (`_spec_key`
    of the runtime arguments), and call it directly (see `Plans`)."""

    __slots__ = ("compiled", "params", "device", "_resident", "_direct")

    def __init__(self, compiled, params: tuple, device: int):
        self.compiled, self.params, self.device = compiled, params, device
        self._resident = self._direct = None

    @property
    def resident_per_sm(self) -> int:
        """Programs of this kernel an SM holds at once, by sm_90's limits (64K registers in four quarters
        allocated per warp in 256s, 228 KB of shared memory less 1 KB a program, 64 warps, 32 programs),
        for grids sized to one wave of resident programs. On a GPU with less shared memory or fewer warps
        an SM the grid is a little more than a wave: slower, never wrong (no program waits on another)."""
        if self._resident is None:
            c = self.compiled
            c._init_handles()  # loads the binary: n_regs
            warps = c.metadata.num_warps
            per_warp = -(-max(c.n_regs, 1) * 32 // 256) * 256
            by_regs = 4 * (16384 // per_warp) // warps
            by_smem = 233472 // (-(-c.metadata.shared // 128) * 128 + 1024)
            self._resident = max(1, min(by_regs, by_smem, 64 // warps, 32))
        return self._resident

    def run(self, grid: tuple[int, ...], *args) -> None:
        recorder = getattr(_recording, "recorder", None)
        if recorder is not None:
            recorder.launches.append((self, None, grid, args, None))
        self.start(grid, *args)

    def start(self, grid: tuple[int, ...], *args) -> None:
        """The launch itself (`run` without telling a recording call, for replays). Pointer arguments may be
        tensors or their addresses (ints: the launcher then skips a driver query each)."""
        hooks = triton.knobs.runtime
        direct = self.direct()
        gx, gy, gz = (*grid, 1, 1)[:3]
        if direct and not (_hooked(hooks.launch_enter_hook) or _hooked(hooks.launch_exit_hook)):
            launcher, stream, function, packed, cooperative, pdl = direct
            launcher(gx, gy, gz, stream(self.device), function, cooperative, pdl, None, None, packed, None, None, None,
                     *args, *self.params)
            return
        ensure_scratch_allocator()
        compiled = self.compiled
        stream = triton.runtime.driver.active.get_current_stream(self.device)
        metadata = compiled.launch_metadata((gx, gy, gz), stream, *args, *self.params)
        compiled.run(gx, gy, gz, stream, compiled.function, compiled.packed_metadata, metadata,
                     hooks.launch_enter_hook, hooks.launch_exit_hook, *args, *self.params)

    def direct(self) -> tuple:
        """Triton 3.6's C launcher and its fixed arguments, to call it without the Python wrapper that
        allocates scratch memory per call, where the kernel needs none; () where that does not apply."""
        if self._direct is None:
            self._direct = self._direct_launch()
        return self._direct

    def _direct_launch(self) -> tuple:
        run = self.compiled.run  # loads the binary
        if not (INTERNALS_TESTED and getattr(run, "global_scratch_size", 1) == 0
                and getattr(run, "profile_scratch_size", 1) == 0
                and hasattr(run, "launch") and hasattr(run, "launch_pdl")):
            return ()
        return (run.launch, triton.runtime.driver.active.get_current_stream, self.compiled.function,
                self.compiled.packed_metadata, run.launch_cooperative_grid, run.launch_pdl)


def _hooked(hook) -> bool:
    """Whether a Triton launch hook (a HookChain in 3.6, a callable or None elsewhere) has anything to call."""
    return hook is not None and bool(getattr(hook, "calls", True))


# Triton 3.6's shared-memory barrier analysis (Membar) puts a barrier of the partition's warps before every mbarrier
# wait that follows another on the same barrier array, and before every shared-memory read that follows an mbarrier
# arrive. In the ring kernels of the *_sm90 row files neither is needed (softmax_sm90's docstring says why): a Gluon
# kernel marks such a spot with `barrier_not_needed` (softmax_sm90), and its launch's PTX loses the one barrier
# Membar put right after the mark (the first barrier before any other memory, synchronisation or branch instruction).
BARRIER_MARK = "rooftop: the next barrier is not needed"
_PTX_ORDERING = {"ld", "st", "atom", "red", "mbarrier", "fence", "membar", "bar", "barrier", "bra", "ret", "exit", "cp",
                 "wgmma", "call"}  # opcodes by their first part


def _ptx_opcode(line: str) -> str:
    """The opcode of a PTX instruction line without its predicate ("bar.sync"), a label's name, or ""."""
    code = re.sub(r"^\{?\s*(@!?%\w+\s+)?", "", line.strip())
    return code.split()[0].rstrip(";") if code and not code.startswith("//") else ""


def drop_marked_barriers(ptx: str) -> str:
    """`ptx` without the barriers that follow BARRIER_MARK (see above); a mark followed by anything that orders
    memory or starts a block (a label other than the line-table's $L__tmp) before a barrier drops nothing."""
    out, armed = [], False
    for line in ptx.split("\n"):
        opcode = _ptx_opcode(line)
        if BARRIER_MARK in line:
            armed = True
        elif armed and opcode in ("bar.sync", "barrier.sync", "barrier.sync.aligned", "barrier.cta.sync"):
            armed = False
            continue
        elif armed and (opcode.split(".")[0] in _PTX_ORDERING or (opcode.endswith(":") and "__tmp" not in opcode)):
            armed = False
        out.append(line)
    return "\n".join(out)


@contextlib.contextmanager
def dropping_marked_barriers():
    """Compiles inside this context pass their PTX through drop_marked_barriers (Triton's stage hook, restored
    after; a hook already set still runs)."""
    runtime = triton.knobs.runtime
    previous = runtime.add_stages_inspection_hook

    def hook(backend, stages, options, language, capability):
        if previous is not None:
            previous(backend, stages, options, language, capability)
        make_ptx = stages["ptx"]
        stages["ptx"] = lambda src, metadata: drop_marked_barriers(make_ptx(src, metadata))

    runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        runtime.add_stages_inspection_hook = previous


class _UncheckedGluonDescriptor(GluonDescriptor):
    """A Gluon host descriptor without TensorDescriptor's checks (alignment, sizes), for a launch whose
    first, checked call already vetted the layout; the launcher reads only its fields."""

    def __post_init__(self) -> None:
        pass


# GluonLaunch keeps each TMA operand's encoded descriptor (the driver's 128-byte tensor map, filled by
# cuTensorMapEncodeTiled) per tensor address, at most this many an operand (a model's layers of one shape share a
# launch: their weights' addresses), where Triton 3.6's launcher can be reached under its wrapper, which encodes
# every descriptor anew per call (4 for quant_matmul's Gluon kernels; journal item 229). Off: every call encodes.
DESCRIPTOR_CACHE_ENABLED = True
DESCRIPTORS_PER_OPERAND = 256


def _unwrapped_launcher(launch: Callable) -> Optional[Callable]:
    """The C launcher under Triton 3.6's tensor-descriptor wrapper (backends/nvidia/driver.py's
    wrap_handle_tensordesc: `inner`, whose closure holds it as `launcher`), or None where it is not that."""
    code, closure = getattr(launch, "__code__", None), getattr(launch, "__closure__", None)
    if not INTERNALS_TESTED or code is None or not closure or code.co_name != "inner":
        return None
    cell = dict(zip(code.co_freevars, closure)).get("launcher")
    return None if cell is None else cell.cell_contents


class GluonLaunch:
    """A Gluon kernel's launch for one call's shapes and strides, as an op's plan keeps it: `descriptors`
    holds (shape, strides, block, layout) of each TMA operand; calling it with (tensors, *args) passes one
    host descriptor per tensor, then `args`, then the constexprs. The first call compiles through Gluon's
    dispatch with checked descriptors; later ones launch the compiled kernel directly (Launch), with each
    operand's descriptor encoded once per tensor address (DESCRIPTOR_CACHE_ENABLED: its shape, strides, box and
    layout are the launch's, so the address alone tells it)."""

    __slots__ = ("kernel", "grid", "descriptors", "constexprs", "num_warps", "device", "compiled", "encoded")

    def __init__(self, kernel, grid: tuple[int, ...], descriptors: list, constexprs: dict, device: int,
                 num_warps: int = 4):
        self.kernel, self.grid, self.descriptors, self.constexprs = kernel, grid, descriptors, constexprs
        self.num_warps, self.device, self.compiled, self.encoded = num_warps, device, None, None

    def __call__(self, tensors: Sequence[torch.Tensor], *args) -> None:
        not_replayable()  # its descriptors hold the tensors' addresses: no replay
        hooks = triton.knobs.runtime
        if (self.encoded and DESCRIPTOR_CACHE_ENABLED
                and not (_hooked(hooks.launch_enter_hook) or _hooked(hooks.launch_exit_hook))):
            self._launch_encoded(tensors, args)
            return
        descriptor = GluonDescriptor if self.compiled is None else _UncheckedGluonDescriptor
        args = (*(descriptor(t, *d) for t, d in zip(tensors, self.descriptors)), *args)
        if self.compiled is not None:
            self.compiled.run(self.grid, *args)
            return
        with dropping_marked_barriers():
            compiled = self.kernel[self.grid](*args, **self.constexprs, num_warps=self.num_warps)
        params = tuple(self.constexprs[name] for name in self.kernel.arg_names[len(args):])
        self.compiled = Launch(compiled, params, self.device)
        self.encoded = self._encoder(compiled)

    def _encoder(self, compiled) -> Optional[tuple]:
        """(C launcher, its fixed arguments, the descriptors' metadata, a cache per operand) of the compiled
        kernel, or None where its launcher is not Triton 3.6's wrapped one (or needs scratch memory)."""
        direct = self.compiled.direct()
        metas = getattr(compiled.metadata, "tensordesc_meta", None)
        launcher = _unwrapped_launcher(direct[0]) if direct else None
        if (launcher is None or not metas or len(metas) != len(self.descriptors)
                or any(m is None or m.get("fp4_padded") for m in metas)):
            return None
        return (launcher, *direct[1:], tuple(metas), tuple({} for _ in metas))

    def _launch_encoded(self, tensors: Sequence[torch.Tensor], args: tuple) -> None:
        from triton.backends.nvidia.driver import make_tensordesc_arg  # what the wrapper does per call

        launcher, stream, function, packed, cooperative, pdl, metas, caches = self.encoded
        encoded = []
        for t, described, meta, cache in zip(tensors, self.descriptors, metas, caches):
            address = t.data_ptr()
            words = cache.get(address)
            if words is None:
                if len(cache) >= DESCRIPTORS_PER_OPERAND:
                    cache.clear()
                words = cache[address] = make_tensordesc_arg(_UncheckedGluonDescriptor(t, *described), meta)
            encoded += words
        gx, gy, gz = (*self.grid, 1, 1)[:3]
        launcher(gx, gy, gz, stream(self.device), function, cooperative, pdl, None, None, packed, None, None, None,
                 *encoded, *args, *self.compiled.params)


def _spec_key(args: tuple) -> tuple:
    key = []
    for a in args:
        if isinstance(a, torch.Tensor):
            key += (a.dtype, a.data_ptr() & 15 == 0)
        elif type(a) is int:
            key += (a == 1, a & 15 == 0, -(2**31) <= a < 2**31)
        else:
            key.append(float if type(a) is float else a)
    return tuple(key)


def prepare(kernel, *args, **constexprs) -> Optional[Launch]:
    """The Launch of a @triton.jit `kernel` for these arguments (as `launch` takes them), compiled on
    its first use and not run; None in the interpreter."""
    if not args or not isinstance(args[0], torch.Tensor) or not args[0].is_cuda:
        return None
    device = args[0].device.index
    key = (id(kernel), device, _spec_key(args), *constexprs.values())
    entry = _compiled.get(key)
    if entry is None:  # first use of this variant: Triton compiles it (or finds it in its cache)
        compiled = kernel.warmup(*args, grid=(1,), **constexprs)
        entry = _compiled[key] = Launch(compiled, tuple(constexprs[n] for n in kernel.arg_names[len(args):]), device)
    return entry


def fitting_stages(kernel, *args, **constexprs) -> tuple[int, Optional[Launch]]:
    """(stages, its Launch): the most pipeline stages, from constexprs' num_stages down to 1, with which `kernel`
    compiled for these arguments (`prepare`'s) fits the shared memory a program may use on their device; the compile
    says it exactly, where a launch would raise OutOfResources. Off a GPU: (num_stages as given, None)."""
    stages = constexprs["num_stages"]
    while True:
        entry = prepare(kernel, *args, **{**constexprs, "num_stages": stages})
        if entry is None or stages == 1 or entry.compiled.metadata.shared <= shared_memory_limit(entry.device):
            return stages, entry
        stages -= 1


def launch(kernel, grid: tuple[int, ...], *args, **constexprs) -> Optional[Launch]:
    """Launch a @triton.jit `kernel` on `grid`: runtime `args` positionally, every remaining
    parameter by keyword, plus launch options (num_warps, num_stages). Returns the Launch used on
    CUDA (None in the interpreter)."""
    entry = prepare(kernel, *args, **constexprs)
    if entry is not None:
        entry.run(grid, *args)
        return entry
    recorder = getattr(_recording, "recorder", None)
    if recorder is not None:
        recorder.launches.append((None, kernel, grid, args, constexprs))
    with _disable_current_modes():  # the interpreter copies tensors by torch ops, which a recording must not see
        kernel[grid](*args, **constexprs)
    return None


def alignment_key(*tensors: Optional[torch.Tensor]) -> tuple:
    """The part of a plan key Triton specialises on that shapes and strides do not say: whether each
    tensor's address is 16-byte aligned (None for an absent tensor)."""
    return tuple(None if t is None else t.data_ptr() & 15 == 0 for t in tensors)


_all_plans: list[weakref.ref] = []  # every Plans made: clear_plans forgets them all


class Plans(dict):
    """An op's per-call launch plans: key (shapes, strides, dtypes, flags, alignment_key) -> a callable
    that launches the call's kernels with everything else decided. A plan is made by the op's slow
    path (checks, configuration choice, compilation) on the first call with a key; later calls with
    the key run it directly. Bounded: cleared when it grows past `limit` keys (shapes that vary
    without end, such as prefill lengths, then cost one slow call each)."""

    def __init__(self, limit: int = 4096):
        super().__init__()
        self.limit = limit
        self.misses: dict[tuple, int] = {}  # `planned`: the calls of a key that could not be recorded
        _all_plans.append(weakref.ref(self))

    def keep(self, key: tuple, plan: Callable) -> Callable:
        if len(self) >= self.limit:
            self.clear()
        self[key] = plan
        return plan

    def miss(self, key: tuple) -> None:
        if len(self.misses) >= self.limit:
            self.misses.clear()
        self.misses[key] = self.misses.get(key, 0) + 1

    def clear(self) -> None:
        super().clear()
        self.misses.clear()


# ---------------------------------------------------------------------------------------------
# Eager call plans. At decode sizes a row op runs 2-5 us on the GPU, and its Python path (checks, the
# choice of kernel and configuration, Triton's specialisation key) took 40-80 us on the H200's host.
# A public op decorated with `planned` records its first call for a given argument signature (each
# tensor's type, shape, strides, dtype, device and address mod 16; each other argument's type and value:
# all that its checks and choices read): the outputs it allocated and the kernels it launched through
# `launch` or `Launch.run`. A later call with that signature allocates the outputs and replays the
# launches with the new tensors, skipping the rest. A call is recorded only if all it did is that: every
# torch op it ran an allocation or a view (a TorchDispatchMode watches), no launch by other means, and
# every tensor a launch took, matched by its address without ambiguity, one of
#   - the call's tensor arguments;
#   - a fresh, dense output it returned (a replay allocates it anew);
#   - scratch: a whole tensor it allocated and did not return (a replay allocates it anew: the full path
#     hands the kernel uninitialised memory too);
#   - a tensor a helper marked `provided` (a replay asks the helper again: the current stream's arrival
#     counters).
# Anything else (copies, zeroed workspaces, the Gluon kernels' descriptors, tuning) leaves the call
# unrecorded; after RECORD_ATTEMPTS such calls (the first may have tuned) the op takes its full path for
# that signature without recording (a recorded call costs several times the full path's host time: with
# every call recorded, the Gluon norms' do_bench figures fell to 41-62% of copy at N >= 65536, session 17).
RECORD_ATTEMPTS = 2

# ROOFTOP_PLANS=0 (or PLANS_ENABLED = False): every call takes its op's full path (an A/B switch, a debugging aid)
PLANS_ENABLED = os.environ.get("ROOFTOP_PLANS", "1") != "0"
_aten = torch.ops.aten
_ALLOCATIONS = {_aten.empty, _aten.empty_like, _aten.empty_strided, _aten.new_empty, _aten.new_empty_strided}
_VIEWS = {_aten.view, _aten._unsafe_view, _aten._reshape_alias, _aten.alias, _aten.detach, _aten.as_strided,
          _aten.permute, _aten.transpose, _aten.t, _aten.unsqueeze, _aten.squeeze, _aten.expand, _aten.slice,
          _aten.select, _aten.split, _aten.split_with_sizes, _aten.unbind}
_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)
_VALUE_TYPES = (int, float, bool, str, type(None), torch.dtype)
_recording = threading.local()  # .recorder: the _Recorder of the call being recorded on this thread


def not_replayable() -> None:
    """Marks the call being recorded on this thread (if any) as one a replay cannot stand for: it launched a
    kernel by other means than `launch` and `Launch.run`, or made a choice that is not final (a tuner's
    deferred default)."""
    recorder = getattr(_recording, "recorder", None)
    if recorder is not None:
        recorder.plannable = False


def provided(t: torch.Tensor, again: Callable[[], torch.Tensor]) -> torch.Tensor:
    """`t`, which a replay of the call being recorded (if any) gets by calling `again()` (a helper's cached
    tensor that depends on more than the call's signature, such as the current stream)."""
    recorder = getattr(_recording, "recorder", None)
    if recorder is not None:
        recorder.provided[t.data_ptr()] = again
    return t


def call_signature(values: tuple) -> Optional[tuple]:
    """The plan key of a call's argument values (None: a value that no key can stand for, or a tensor that
    the checks refuse for what the key does not say: one that requires grad while grad mode is on)."""
    key = []
    try:
        for v in values:
            t = type(v)
            if t in _TENSOR_TYPES:
                if v.requires_grad and torch.is_grad_enabled():
                    return None
                key += (v.shape, v.stride(), v.dtype, v.get_device(), v.data_ptr() & 15)
            elif t in _VALUE_TYPES:
                key += (t, v)
            else:
                return None
    except RuntimeError:  # a tensor without strides or storage (sparse, ...): the op's checks say what is wrong
        return None
    return tuple(key)


class _Recorder(TorchDispatchMode):
    """Watches one call: the launches `launch` made, the storages the call allocated, and whether any
    other torch op ran."""

    def __init__(self):
        super().__init__()
        self.launches: list = []
        self.storages: set[int] = set()
        self.provided: dict[int, Callable[[], torch.Tensor]] = {}  # address -> how a replay gets the tensor
        self.plannable = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in _ALLOCATIONS:
            self.storages.add(out.untyped_storage().data_ptr())
        elif func.overloadpacket not in _VIEWS:
            self.plannable = False
        return out

    def __enter__(self):
        self.outer, _recording.recorder = getattr(_recording, "recorder", None), self
        return super().__enter__()

    def __exit__(self, *exc):
        _recording.recorder = self.outer
        return super().__exit__(*exc)

    def plan(self, values: tuple, result) -> Optional[Callable]:
        """The replay of the recorded call whose arguments were `values` and which returned `result`
        (None, a tensor or a tuple of tensors and Nones), or None if it cannot be replayed."""
        if not self.plannable:
            return None
        inputs = tuple(i for i, v in enumerate(values) if type(v) in _TENSOR_TYPES)
        pool = [values[i] for i in inputs]  # the tensors of a replay: the arguments', then the fresh ones
        fresh = []  # how a replay makes the rest of the pool: (shape, strides, dtype, device), or a `provided` call
        single = not isinstance(result, tuple)
        returned = []  # per returned item: its index in the pool, or None
        for out in (result,) if single else result:
            if out is None:
                returned.append(None)
                continue
            if not isinstance(out, torch.Tensor):
                return None
            index = next((i for i, t in enumerate(pool[:len(inputs)]) if t is out), None)
            if index is None:
                if not self._whole_allocation(out):
                    return None
                index = len(pool)
                pool.append(out)
                fresh.append((out.shape, out.stride(), out.dtype, out.device))
            returned.append(index)
        owners: dict[int, list[int]] = {}
        for i, t in enumerate(pool):
            owners.setdefault(t.data_ptr(), []).append(i)
        launches = []
        for entry, kernel, grid, args, constexprs in self.launches:
            slots = []  # (position in args, index in the pool)
            for pos, a in enumerate(args):
                if isinstance(a, torch.Tensor):
                    owner = owners.get(a.data_ptr())
                    if owner is None:  # scratch or provided: one more tensor a replay makes
                        again = self.provided.get(a.data_ptr())
                        if again is None and not self._whole_allocation(a):
                            return None
                        owner = owners[a.data_ptr()] = [len(pool)]
                        pool.append(a)
                        fresh.append(again or (a.shape, a.stride(), a.dtype, a.device))
                    if len(owner) != 1 or pool[owner[0]].dtype != a.dtype:
                        return None
                    slots.append((pos, owner[0]))
                elif type(a) not in _VALUE_TYPES:
                    return None
            start = functools.partial(entry.start, grid) if entry else functools.partial(kernel[grid], **constexprs)
            template = tuple(None if isinstance(a, torch.Tensor) else a for a in args)  # holds no tensor alive
            launches.append((start, template, tuple(slots), entry is not None))
        return functools.partial(_replay, inputs, tuple(fresh), tuple(launches), single, tuple(returned))

    def _whole_allocation(self, t: torch.Tensor) -> bool:
        """Whether `t` is all of a storage this call allocated (so that a replay can allocate its like)."""
        storage = t.untyped_storage()
        return (storage.data_ptr() in self.storages and not t.storage_offset()
                and storage.nbytes() == t.numel() * t.element_size())


def _replay(inputs, fresh, launches, single, returned, values):
    pool = [values[i] for i in inputs]
    for make in fresh:
        pool.append(make() if callable(make) else torch.empty_strided(make[0], make[1], dtype=make[2], device=make[3]))
    for start, template, slots, addresses in launches:
        args = list(template)
        for pos, i in slots:  # on a GPU the compiled kernel's launcher takes addresses
            args[pos] = pool[i].data_ptr() if addresses else pool[i]
        start(*args)
    if single:
        return None if returned[0] is None else pool[returned[0]]
    return tuple(None if i is None else pool[i] for i in returned)


def clear_plans() -> None:
    """Forget every recorded call (after changing a module's switches, as tests do): the public ops'
    (`planned`) and the ops' own per-call plans (matmul's, quant_matmul's, attention's)."""
    for ref in list(_all_plans):
        plans = ref()
        if plans is None:  # a Plans a test put in place for a while
            _all_plans.remove(ref)
        else:
            plans.clear()


_cuda_device = getattr(torch._C, "_cuda_getDevice", None)


def foreign_device(values) -> int:
    """The CUDA device of the first tensor among `values` where it is not the current device, else -1. Triton
    compiles, loads and launches a kernel on the current device, whatever its tensors' device: an op whose tensors
    live on another (a model spread over GPUs: Hugging Face's device_map, pipeline stages) runs under a guard of
    theirs (`torch_op`, `planned`)."""
    for v in values:
        if isinstance(v, torch.Tensor):
            device = v.get_device()
            # a CUDA tensor exists, so CUDA is initialised: torch's device query without torch.cuda's checks (absent
            # from a CPU build, whose "CUDA" tensors can only be fake)
            return device if device >= 0 and _cuda_device is not None and device != _cuda_device() else -1
    return -1


def planned(fn: Callable) -> Callable:
    """Decorator of a public op: eager calls replay the recorded first call of their argument signature
    (see above); under torch.compile, inside another op's recording, or with arguments no key stands
    for, `fn` runs as written. While torch.profiler records, a call is a range named rooftop::<op>."""
    plans = Plans()
    label = f"rooftop::{fn.__name__.lstrip('_')}"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if (_autograd_profiler._is_profiler_enabled and not torch.compiler.is_compiling()
                and getattr(_recording, "recorder", None) is None):
            # a range for torch.profiler: the kernels launched inside are this op's (rooftop.profile.model), as a
            # dispatched custom op's would be; not inside another op's recording, which it would spoil
            with torch.profiler.record_function(label):
                return run(*args, **kwargs)
        return run(*args, **kwargs)

    def run(*args, **kwargs):
        if (not PLANS_ENABLED or torch.compiler.is_compiling()
                or getattr(_recording, "recorder", None) is not None):
            return fn(*args, **kwargs)
        values = (*args, *kwargs.values())
        key = call_signature(values)
        if key is None:
            return fn(*args, **kwargs)
        key = (*key, *kwargs)
        plan = plans.get(key)
        if plan is not None:
            device = foreign_device(values)
            if device < 0:
                return plan(values)
            with torch.cuda.device(device):
                return plan(values)
        if plans.misses.get(key, 0) >= RECORD_ATTEMPTS:  # no plan stands for it: the full path, unrecorded
            return fn(*args, **kwargs)
        with _Recorder() as recorder:
            result = fn(*args, **kwargs)
        plan = recorder.plan(values, result)
        if plan is not None:
            plans.keep(key, plan)
        else:
            plans.miss(key)
        return result

    call.plans = plans
    return call


# ---------------------------------------------------------------------------------------------
# The one way to register an op with torch.library, so that torch.compile sees one opaque node
# (no graph break) and CUDA graphs capture the launch. Eager calls skip the dispatcher, whose
# overhead is several microseconds, and call the implementation directly.


def torch_op(name: str, *, mutates_args: tuple[str, ...] = (), fake: Callable | None = None):
    """Decorator: register `fn` as torch.ops.rooftop.<name>; return a callable that runs `fn`
    directly in eager mode and the registered op under torch.compile tracing."""

    def wrap(fn: Callable) -> Callable:
        op = torch.library.custom_op(f"rooftop::{name}", mutates_args=mutates_args)(fn)
        if fake is not None:
            op.register_fake(fake)

        def call(*args, **kwargs):
            if torch.compiler.is_compiling():
                return op(*args, **kwargs)
            device = foreign_device(args)
            if device < 0:
                return fn(*args, **kwargs)
            with torch.cuda.device(device):
                return fn(*args, **kwargs)

        call.op = op
        call.__name__ = fn.__name__
        call.__doc__ = fn.__doc__
        return call

    return wrap
