"""The benchmark harness: on the GPU (CUDA graphs and events) sweep.measure's rows and timing.alternating_graph_us,
which times the providers' graphs in alternating bursts; on any machine the bursts' order and median with fake events,
the results files' format, the dtype names."""
import csv
import datetime
import json

import pytest
import torch

from rooftop import registry
from rooftop.bench import sweep, timing
from rooftop.hardware import Ceilings


CEILINGS = Ceilings("test", copy_GBps=4000.0, bf16_mm_TFLOPs=600.0, source="datasheet", date="2026-12-04",
                    torch=torch.__version__)


@pytest.mark.gpu
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


@pytest.mark.gpu
def test_synchronises_host_tells_a_host_sync_before_any_capture():
    """nonzero waits for the GPU from the host, an add does not; another error is raised, not taken for a sync; the
    sync debug mode is restored and the CUDA generator left usable (a failed capture would not leave it so)."""
    x = torch.randn(1024, device="cuda")
    assert timing.synchronises_host(lambda: x.nonzero())
    assert not timing.synchronises_host(lambda: x + 1)
    with pytest.raises(RuntimeError, match="shape"):
        timing.synchronises_host(lambda: x.view(7, -1))
    assert torch.cuda.get_sync_debug_mode() == 0
    assert torch.randn(8, device="cuda").shape == (8,)


@pytest.mark.gpu
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


def test_write_results_json_and_csv(tmp_path):
    from rooftop.bench.results import write_results
    row = {"op": "softmax", "dtype": "bfloat16", "shape": [2048, 1024], "provider": "rooftop", "ms": 0.5,
           "GBps": 2000.0, "TFLOPs": None, "roofline_pct": 50.0, "rel_err": 1e-3, "flops": 5.0, "bytes": 1e9,
           "graph_ms": 0.4}
    ceilings = {"copy_GBps": 4000.0, "bf16_mm_TFLOPs": 500.0}
    path = write_results(tmp_path, "rowops", [row], ceilings, "NVIDIA H200", notes="n")
    assert path.name == f"h200-{datetime.date.today().isoformat()}-rowops.json"
    doc = json.loads(path.read_text())
    assert {"device", "date", "torch", "triton", "ceilings", "rows", "notes"} <= set(doc)
    assert doc["ceilings"] == ceilings and doc["device"] == "NVIDIA H200" and doc["rows"] == [row]
    lines = path.with_suffix(".csv").read_text().splitlines()
    assert lines[0] == "op,dtype,shape,provider,ms,GBps,TFLOPs,roofline_pct,rel_err,flops,bytes"
    (got,) = list(csv.DictReader(lines))
    assert got["shape"] == "2048x1024" and got["ms"] == "0.5" and got["GBps"] == "2000.0"


def test_alternating_graph_us_order_and_median(monkeypatch):
    """CPU fake of CUDA events and graphs: bursts alternate A B C, C B A, ..., and each graph gets its median burst."""
    clock, order = [0.0], []

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock[0]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t

    class Graph:
        def __init__(self, name, ms):
            self.name, self.ms, self.n = name, ms, 0

        def replay(self):
            order.append(self.name)
            clock[0] += self.ms[min(self.n, len(self.ms) - 1)]
            self.n += 1

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    # the first replay is the warm-up; then 4 bursts each, one an outlier
    graphs = {"a": (Graph("a", [0, 1.0, 2.0, 50.0, 2.0]), 10), "b": (Graph("b", [0, 2.0, 2.0, 2.0, 90.0]), 10),
              "c": (Graph("c", [0, 3.0]), 10)}
    us = timing.alternating_graph_us(graphs, rounds=4)
    assert order[3:] == list("abccbaabccba")
    assert us == pytest.approx({"a": 200.0, "b": 200.0, "c": 300.0})  # ms per burst * 1e3 / 10 calls


def test_parse_dtype():
    assert [sweep.parse_dtype(n) for n in ("bf16", "fp16", "fp32")] == [torch.bfloat16, torch.float16, torch.float32]


def test_providers_are_what_they_say(monkeypatch):
    """providers.make: rooftop is spec.run, eager is spec.eager (not the reference), compile resets dynamo before it
    compiles the eager form (static shapes); available lists the three built-ins first."""
    from rooftop.bench import providers as prov

    spec = registry.get("softmax")
    assert prov.make(spec, "rooftop") is spec.run and prov.make(spec, "eager") is spec.eager
    calls = []
    monkeypatch.setattr(torch._dynamo, "reset", lambda: calls.append("reset"))
    monkeypatch.setattr(torch, "compile", lambda fn, **kwargs: calls.append(("compile", fn, kwargs)) or fn)
    assert prov.make(spec, "compile") is spec.eager
    assert calls == ["reset", ("compile", spec.eager, {"dynamic": False})]
    assert prov.available(spec)[:3] == ["rooftop", "eager", "compile"]
    with pytest.raises(ValueError, match="unknown provider"):
        prov.make(spec, "no_such_provider")


def test_measure_rows_off_a_gpu(monkeypatch):
    """sweep.measure's rows (timing faked, inputs on the CPU) carry every field of the results format, the dtype
    without "torch.", and each provider's rel_err against the reference."""
    import dataclasses

    real = registry.get("softmax")
    spec = dataclasses.replace(real, make_inputs=lambda shape, dtype, device: real.make_inputs(shape, dtype, "cpu"))
    monkeypatch.setattr(sweep, "bench_ms", lambda fn: 1.0)  # past GRAPH_BELOW_MS: no graph timing
    rows = sweep.measure(spec, (4, 64), torch.float32, ["rooftop", "eager"], CEILINGS, say=lambda s: None)
    assert [r["provider"] for r in rows] == ["rooftop", "eager"]
    for r in rows:
        assert set(r) == {"op", "dtype", "shape", "provider", "ms", "GBps", "TFLOPs", "roofline_pct", "rel_err",
                          "flops", "bytes"}
        assert r["op"] == "softmax" and r["dtype"] == "float32" and r["shape"] == [4, 64] and r["ms"] == 1.0
        assert r["rel_err"] < 1e-5


def test_speedups_are_the_other_providers_time_over_rooftops():
    """speedups: the other provider's time divided by rooftop's, per (op, shape)."""
    rows = [{"op": "softmax", "shape": [4, 64], "provider": "rooftop", "ms": 1.0},
            {"op": "softmax", "shape": [4, 64], "provider": "eager", "ms": 3.0}]
    assert sweep.speedups(rows, "eager") == {("softmax", (4, 64)): 3.0}
