"""Providers: the ways to compute an op that are timed side by side.

rooftop (our kernel), eager (what a model writes in PyTorch), compile (torch.compile of the eager form,
dynamo reset per shape: otherwise the recompile limit silently falls back to eager past 8 shapes), and
each peer of the op that is importable (liger, ...).
"""
from __future__ import annotations

from typing import Callable

import torch

from rooftop.registry import OpSpec

BUILTIN = ("rooftop", "eager", "compile")


def available(spec: OpSpec) -> list[str]:
    return list(BUILTIN) + list(spec.peers)


def make(spec: OpSpec, provider: str) -> Callable | None:
    """A callable fn(*inputs) for `provider`, fresh for each shape; None when the peer is not importable."""
    if provider == "rooftop":
        return spec.run
    if provider == "eager":
        return spec.eager
    if provider == "compile":
        torch._dynamo.reset()
        return torch.compile(spec.eager, dynamic=False)
    if provider in spec.peers:
        return spec.peers[provider]()
    raise ValueError(f"unknown provider {provider!r} for {spec.name}; available: {', '.join(available(spec))}")
