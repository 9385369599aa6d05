"""The benchmark harness on the GPU (CUDA graphs and events: no interpreter run): sweep.measure's rows and
timing.alternating_graph_us, which times the providers' graphs in alternating bursts."""
import pytest
import torch

from rooftop import registry
from rooftop.bench import sweep, timing
from rooftop.hardware import Ceilings

pytestmark = pytest.mark.gpu

CEILINGS = Ceilings("test", copy_GBps=4000.0, bf16_mm_TFLOPs=600.0, source="datasheet", date="2026-12-04",
                    torch=torch.__version__)


def test_alternating_graph_us_times_each_chain():
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1 << 20, device="cuda")
    chains = {"gemm": [lambda: a @ a], "scale": [lambda: x * 2], "gemm_again": [lambda: a @ a],
              "two_gemms": [lambda: a @ a, lambda: a @ a]}
    us = timing.alternating_graph_us({name: (timing.chain_graph(chain, 8), 8 * len(chain))
                                      for name, chain in chains.items()}, rounds=4)
    assert list(us) == ["gemm", "scale", "gemm_again", "two_gemms"]
    assert 10 * us["scale"] < us["gemm"]  # 137 GFLOP against 8 MB moved
    assert 0.8 < us["gemm"] / us["gemm_again"] < 1.25
    assert 0.8 < us["gemm"] / us["two_gemms"] < 1.25  # per call, not per replay


def test_measure_gives_each_provider_its_graph_time():
    said = []
    spec = registry.get("softmax")
    rows = sweep.measure(spec, (256, 4096), torch.bfloat16, ["rooftop", "eager", "no_such_provider"], CEILINGS,
                         say=said.append)
    assert [r["provider"] for r in rows] == ["rooftop", "eager"]
    assert len(said) == 1 and "no_such_provider" in said[0]
    for row in rows:
        assert row["rel_err"] < 1.5e-2
        assert 0 < row["graph_ms"] < 0.3 and 0 < row["ms"]
        assert row["graph_roofline_pct"] == pytest.approx(
            100 * spec.cost((256, 4096), torch.bfloat16).bytes / (row["graph_ms"] * 1e-3) / 4000e9, rel=1e-6)
