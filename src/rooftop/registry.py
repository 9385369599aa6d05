"""The op registry: each op file declares here its function, reference, eager form, cost and cases.

No heavy imports: an op file imports this, never the benchmark harness. The harness (rooftop.bench)
reads the registry to know what to run and how to count its bytes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from rooftop.roofline import Cost


@dataclass(frozen=True)
class OpSpec:
    """One benchmarkable op.

    name:        registry name (the public function's name, or a fused variant's own name)
    family:      results file it belongs to (benchmarks/results/<device>-<date>-<family>.json)
    make_inputs: (shape, dtype, device) -> tuple of fresh random inputs
    run:         rooftop's implementation, called as run(*inputs)
    reference:   the same maths in plain PyTorch, computed in float64 on the inputs
    eager:       what a model writes in PyTorch (also the body that torch.compile compiles)
    cost:        (shape, dtype) -> minimum traffic and FLOPs (each input read once, each output written once)
    cases:       default sweep shapes
    peers:       provider name -> factory returning a callable like `run`, or None when not importable
    x_key:       which shape entry the curves are drawn against ("N" = last dim)
    check_cases: small shapes for `rooftop check` (quick correctness, also in the interpreter)
    """

    name: str
    family: str
    make_inputs: Callable[[tuple[int, ...], torch.dtype, str], tuple]
    run: Callable
    reference: Callable
    eager: Callable
    cost: Callable[[tuple[int, ...], torch.dtype], Cost]
    cases: tuple[tuple[int, ...], ...]
    peers: dict[str, Callable[[], Callable | None]] = field(default_factory=dict)
    x_key: str = "N"
    check_cases: tuple[tuple[int, ...], ...] = ((3, 1000), (2, 70000))  # on-chip and looped row paths


_OPS: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.name in _OPS:
        raise ValueError(f"op {spec.name!r} is registered twice")
    _OPS[spec.name] = spec
    return spec


def get(name: str) -> OpSpec:
    import rooftop.ops  # noqa: F401  (importing the op files fills the registry)

    if name not in _OPS:
        raise KeyError(f"unknown op {name!r}; registered: {', '.join(sorted(_OPS))}")
    return _OPS[name]


def all_ops() -> list[OpSpec]:
    import rooftop.ops  # noqa: F401

    return list(_OPS.values())


@dataclass(frozen=True)
class FamilyTable:
    """A table a family adds to its results and the report beside the sweep: make(ceilings) -> rows
    (dicts). needs_gpu: it measures on the GPU (run by the session), else it is a model that can be
    computed anywhere."""

    family: str
    title: str
    make: Callable
    needs_gpu: bool = True


_TABLES: list[FamilyTable] = []


def register_table(table: FamilyTable) -> FamilyTable:
    _TABLES.append(table)
    return table


def family_tables(family: str) -> list[FamilyTable]:
    import rooftop.ops  # noqa: F401

    return [t for t in _TABLES if t.family == family]


def row_sweep(total_elements: int = 2**27, widths=(512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
                                                   131072, 262144)) -> tuple[tuple[int, int], ...]:
    """[M, N] row-op cases with M * N = total_elements (the anchors' sweep)."""
    return tuple((total_elements // n, n) for n in widths)
