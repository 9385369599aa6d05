"""Launch-configuration autotuning, remembered on disk.

An op that has several launch configurations (tile sizes, pipeline stages, warps) asks `choose` for
one. The first call for a (device, op, key) times every candidate with `time_ms` on the real
arguments and keeps the fastest, in memory and in a JSON file under rooftop.hardware.cache_dir()
(one per device and Triton version), so that the next process does not tune again. The key is the
op's business: typically the shape bucket (`bucket`: each size rounded up to a power of two), dtypes
and the kernel variant. A candidate that fails to compile or run is skipped.

No timing happens when it cannot or must not: on the CPU / in Triton's interpreter, while torch.compile
traces, during CUDA graph capture, or with ROOFTOP_AUTOTUNE=0. Then the remembered choice is used,
else the op's default (the first candidate), which is not remembered so that a later call may tune.
"""
from __future__ import annotations

import functools
import json
import os
import re
import warnings
from pathlib import Path
from typing import Callable, Sequence

import torch

from rooftop.ops._support import interpreting, not_replayable

Config = dict  # JSON-able launch parameters, e.g. {"BLOCK_M": 128, "num_warps": 8}

_memory: dict[tuple[str, str], Config] = {}  # (device name, "op|key") -> chosen config
_disk: dict[str, dict[str, Config]] = {}  # device name -> the file's entries, read once


def bucket(n: int) -> int:
    """`n` rounded up to a power of two (0 stays 0): sizes in one bucket share a configuration."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def may_tune(t: torch.Tensor) -> bool:
    """Whether a call on `t` may time candidates now."""
    return (t.is_cuda and not interpreting() and os.environ.get("ROOFTOP_AUTOTUNE", "1") != "0"
            and not torch.compiler.is_compiling() and not torch.cuda.is_current_stream_capturing())


@functools.lru_cache(maxsize=None)
def device_name(device_index: int) -> str:
    """The name configurations are remembered under; the interpreter (-1) is "interpreter"."""
    return torch.cuda.get_device_name(device_index) if device_index >= 0 else "interpreter"


def cache_path(device: str) -> Path:
    import triton

    from rooftop.hardware import cache_dir

    slug = re.sub(r"[^a-z0-9.]+", "-", f"{device} triton {triton.__version__}".lower()).strip("-")
    return cache_dir() / f"autotune-{slug}.json"


def _read(path: Path) -> dict[str, Config]:
    if not path.exists():
        return {}
    try:
        entries = json.loads(path.read_text())
        if not isinstance(entries, dict):
            raise ValueError("not a JSON object")
        return entries
    except (ValueError, OSError) as err:
        warnings.warn(f"ignoring unreadable autotune cache {path}: {err}")
        return {}


def _remember(device: str, entry: str, config: Config) -> None:
    """Add one entry to the device's file: re-read it first (another process may have added some)
    and replace it atomically."""
    path = cache_path(device)
    entries = _read(path)
    entries[entry] = config
    _disk[device] = entries
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError as err:
        warnings.warn(f"could not write the autotune cache {path}: {err}")


def time_ms(fn: Callable[[], object]) -> float:
    """Median milliseconds of fn() on the GPU alone, L2 flushed between runs: one call captured in a
    CUDA graph and replayed, so that the host's launch cost (the same for every candidate, and on a
    slow host longer than a small kernel) does not decide; do_bench of fn itself if it cannot be
    captured."""
    import triton.testing

    from rooftop.bench.timing import capture_graph

    try:  # the candidates are rooftop's kernels, which do not synchronise the host
        call = capture_graph(lambda: (fn(), fn()), fn).replay
    except RuntimeError:  # not capturable (a resource limit, say): time it as it is
        torch.cuda.synchronize()
        call = fn
    return float(triton.testing.do_bench(call, warmup=10, rep=40, return_mode="median"))


def choose(op: str, key: tuple, configs: Sequence[Config], run: Callable[[Config], object], *,
           device: str, tune: bool) -> Config:
    """The configuration of `op` for `key`: remembered, else (tune=True) the fastest of `configs`
    timed with run(config), else configs[0]."""
    entry = f"{op}|{'|'.join(map(str, key))}"
    chosen = _memory.get((device, entry))
    if chosen is not None:
        return chosen
    if device not in _disk:
        _disk[device] = _read(cache_path(device))
    stored = _disk[device].get(entry)
    if stored is not None and stored in configs:  # a stale entry (candidates changed) is re-tuned
        _memory[(device, entry)] = stored
        return stored
    if not tune:
        if os.environ.get("ROOFTOP_AUTOTUNE", "1") != "0":
            not_replayable()  # a deferred default: a call recorded with it would keep it
        return configs[0]
    not_replayable()  # timing runs the candidates on this call's tensors
    best, best_ms = configs[0], float("inf")
    for config in configs:
        try:
            ms = time_ms(lambda: run(config))
        except Exception as err:  # does not compile (resources) or fails: not a candidate here
            warnings.warn(f"autotune {op} {config}: skipped ({type(err).__name__}: {str(err)[:120]})")
            continue
        if ms < best_ms:
            best, best_ms = config, ms
    if best_ms < float("inf"):  # when none ran, the caller's launch of the default raises the real error
        _memory[(device, entry)] = best
        _remember(device, entry, best)
    return best


def is_settled(op: str, key: tuple, *, device: str) -> bool:
    """Whether `choose` has a final choice for (op, key) on `device`, so that a caller may keep a launch
    plan made with it: remembered or tuned, or tuning is off (ROOFTOP_AUTOTUNE=0: the default is final).
    Not while tuning is only deferred (graph capture, torch.compile tracing)."""
    return os.environ.get("ROOFTOP_AUTOTUNE", "1") == "0" or (device, f"{op}|{'|'.join(map(str, key))}") in _memory


def forget() -> None:
    """Drop what this process remembers (the files stay): the next choice reads the disk again."""
    _memory.clear()
    _disk.clear()
