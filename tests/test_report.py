import dataclasses
import json
import re

import pytest

from rooftop.bench.plots import plot_curves, size_label
from rooftop.report import build_report, check_render, find_chromium, load_results, render_png

COPY_GBPS = 4249.1
NBYTES = 2 * 2 * 2**27  # bf16 softmax of 2^27 elements: read + write
ROWS = []
for n, ms_rooftop, ms_eager in [(512, 0.140, 0.198), (4096, 0.134, 0.418), (65536, 0.137, 0.500)]:
    for provider, ms in [("rooftop", ms_rooftop), ("eager", ms_eager)]:
        GBps = NBYTES / (ms * 1e-3) / 1e9
        ROWS.append({"op": "softmax", "dtype": "bfloat16", "shape": [2**27 // n, n], "provider": provider,
                     "ms": ms, "GBps": GBps, "TFLOPs": None, "roofline_pct": 100 * GBps / COPY_GBPS,
                     "flops": 5 * 2**27, "bytes": NBYTES})
RESULT = {
    "device": "NVIDIA H200", "date": "2026-11-29", "torch": "2.11.0+cu130", "triton": "3.6.0",
    "ceilings": {"copy_GBps": COPY_GBPS, "bf16_mm_TFLOPs": 694.1},
    "rows": ROWS,
    "ncu": [{"op": "softmax", "provider": "rooftop", "shape": [32768, 4096], "dram_throughput_pct": 87.3,
             "achieved_occupancy_pct": 61.0, "theoretical_occupancy_pct": 75.0,
             "registers_per_thread": 40, "dram_bytes": NBYTES * 1.3, "duration_us": 70.1}],
    "decode_us": [{"op": "softmax", "shape": [1, 4096], "provider": "rooftop", "graph_us": 1.9, "python_us": 6.2}],
    "notes": "Synthetic numbers for the test.",
    "tables": {"Peak memory (synthetic)": [{"shape": [1, 16, 16384, 128], "rooftop_MB": 67.1,
                                             "materialised_MB": 17246.0}]},
}


# A compute-bound family (curves in TFLOP/s) and a 4-D one whose x (S) repeats over B (one chart per B).
GEMM_ROWS = []
for n, ms_rooftop, ms_cublas in [(1024, 0.0061, 0.0058), (4096, 0.226, 0.214), (8192, 1.71, 1.62)]:
    flops, nbytes = 2 * n**3, 3 * 2 * n * n
    for provider, ms in [("rooftop", ms_rooftop), ("cublas", ms_cublas)]:
        GEMM_ROWS.append({"op": "gemm", "dtype": "bfloat16", "shape": [n, n, n], "provider": provider, "ms": ms,
                          "GBps": nbytes / ms / 1e6, "TFLOPs": flops / ms / 1e9,
                          "roofline_pct": 100 * max(flops / 694.1e12, nbytes / COPY_GBPS / 1e9) / (ms * 1e-3),
                          "flops": flops, "bytes": nbytes})
# the short call also timed on the GPU alone (graph replay): rooftop 4.0 us, cuBLAS 5.0 us
GEMM_ROWS[0].update(graph_ms=0.0040, graph_roofline_pct=50.0)
GEMM_ROWS[1].update(graph_ms=0.0050, graph_roofline_pct=40.0)
ATTN_ROWS = []
for b in (1, 8):
    for s, GBps in [(1024, 1500.0), (4096, 2900.0), (16384, 3600.0)]:
        nbytes = 2 * 2 * b * 8 * s * 128  # bf16 K and V of 8 KV heads
        ATTN_ROWS.append({"op": "decode_attn", "dtype": "bfloat16", "shape": [b, 32, s, 128], "provider": "rooftop",
                          "ms": nbytes / GBps / 1e6, "GBps": GBps, "TFLOPs": None,
                          "roofline_pct": 100 * GBps / COPY_GBPS, "flops": 4 * b * 32 * s * 128, "bytes": nbytes})


def _result(rows, date="2026-11-29", **extra):
    return {**RESULT, "date": date, "rows": rows, "ncu": [], "decode_us": [], "notes": None, **extra}


@pytest.fixture
def results_dir(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "nvidia-h200-2026-11-29-rowops.json").write_text(json.dumps(RESULT))
    (folder / "broken.json").write_text("{not json")
    return folder


@pytest.fixture
def many_results(results_dir):
    (results_dir / "nvidia-h200-2026-11-01-rowops.json").write_text(json.dumps(_result(ROWS[:2], "2026-11-01")))
    (results_dir / "nvidia-h200-2026-11-29-gemm.json").write_text(json.dumps(_result(GEMM_ROWS)))
    (results_dir / "nvidia-h200-2026-11-29-attn.json").write_text(json.dumps(_result(ATTN_ROWS)))
    return results_dir


def test_load_results_skips_broken(results_dir):
    with pytest.warns(UserWarning, match="broken.json"):
        results = load_results(results_dir)
    assert [r["_file"] for r in results] == ["nvidia-h200-2026-11-29-rowops.json"]


def test_build_report(results_dir, tmp_path):
    with pytest.warns(UserWarning):
        index = build_report(results_dir, tmp_path / "out", measured=False)
    page = index.read_text()
    assert re.search(r'<img src="data:image/png;base64,[A-Za-z0-9+/]{100}', page)
    assert "rooftop" in page and "eager" in page
    assert "94.3%" in page  # roofline_pct of rooftop at N=4096: 126.3 us floor / 134 us
    assert "3.12x" in page  # rooftop vs eager at N=4096: 0.418 / 0.134
    assert "No GPU measurement in this run: rendered from the committed results" in page and "2026-11-29" in page
    # the ncu reading diagnosed: 30% above the cost model's minimum, listed with its cause
    assert "(+30.0%): more than 10% above it" in page and "moves +30.0% against the cost model: re-reads" in page
    assert "Against eager: 1.41–3.65x." in page  # 0.198 / 0.140 and 0.500 / 0.137
    assert "87.3" in page and "Synthetic numbers" in page and "python_us" in page
    assert "Peak memory (synthetic)" in page and "17246.00" in page and "materialised_MB" in page  # a family table
    md = (tmp_path / "out" / "report.md").read_text()
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)
    assert len(pngs) == 2  # the softmax curves and the roofline chart
    assert all((tmp_path / "out" / p).stat().st_size > 0 for p in pngs)


def test_build_report_empty(tmp_path):
    with pytest.raises(ValueError, match="results_dir"):
        build_report(tmp_path, tmp_path / "out", measured=True)


def test_plot_curves(tmp_path):
    path = plot_curves(ROWS, tmp_path / "c.png", ceiling=4249.1, ceiling_label="copy 4249 GB/s")
    assert path.stat().st_size > 5000
    with pytest.raises(ValueError, match="x_key='K'"):
        plot_curves(ROWS, tmp_path / "d.png", x_key="K")
    assert [size_label(x) for x in (512, 1024, 65536, 2**20, 3000)] == ["512", "1K", "64K", "1M", "3000"]


def test_report_every_family(many_results, tmp_path):
    with pytest.warns(UserWarning):
        index = build_report(many_results, tmp_path / "out", measured=True)
    page = index.read_text()
    assert "Measured just now" in page
    assert "superseded by nvidia-h200-2026-11-29-rowops.json" in page  # the older rowops file is not drawn
    assert page.count("<h2>rowops") == 1
    # gemm is compute-bound: TFLOP/s curves against M with the matmul ceiling; cublas is a provider column
    assert 'alt="gemm bfloat16: TFLOP/s by M"' in page and "cublas TFLOP/s (% roofline)" in page
    assert "rooftop vs cublas" in page and "is compute-bound" in page
    # the GPU time alone of the short call: its own table and ratio (5.0 / 4.0 us)
    assert "GPU time alone" in page and "4.0 (50.0%)" in page and "1.25x cublas" in page
    assert "(GPU alone: 1.25x)" in page  # and at a glance
    # decode_attn's S repeats over B: one chart per B
    for b in (1, 8):
        assert f'alt="decode_attn bfloat16 (B={b}): GB/s by S"' in page
    md = (tmp_path / "out" / "report.md").read_text()
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", md)
    assert len(pngs) == 5  # softmax, gemm, 2 x decode_attn, the roofline
    assert "| gemm | gemm | bfloat16 | 3 |" in md  # the at-a-glance line


def test_quick_session_plan():
    from rooftop import registry
    from rooftop.bench import session

    spec = registry.get("softmax")
    assert [n for _, n in session.quick_shapes(spec)] == list(session.QUICK_WIDTHS)
    ten = dataclasses.replace(spec, cases=tuple((i + 1, 64) for i in range(10)))
    assert session.quick_shapes(ten) == ((1, 64), (4, 64), (7, 64), (10, 64))
    quick = session.ncu_plan(quick=True)
    families = [registry.get(op).family for op, _, _ in quick]
    assert sorted(families) == sorted(session.families()) and len(set(families)) == len(families)
    assert ("softmax", (512, 262144), "rooftop") in quick  # the widest of the equal-traffic quick sizes
    assert len(session.ncu_plan(quick=False)) >= len(quick)


def test_sweep_hands_each_case_rows_to_after_case(monkeypatch, tmp_path):
    """A session writes its family's rows after each case (run_sweep's after_case): a run cut by its time limit keeps
    the cases it measured, in a file the report reads."""
    from rooftop.bench import results, session, sweep

    def fake_measure(spec, shape, dtype, names, ceilings, check, say):
        return [{**ROWS[0], "shape": list(shape), "provider": name} for name in names]

    monkeypatch.setattr(sweep, "measure", fake_measure)
    cases = ((2048, 1024), (1024, 2048), (512, 4096))
    written = []

    def write(rows):
        written.append([tuple(r["shape"]) for r in rows])
        results.write_results(tmp_path, "softmax", rows, RESULT["ceilings"], "NVIDIA H200", notes=session.PARTIAL_NOTE)

    providers = ["rooftop", "eager"]
    rows = sweep.run_sweep(["softmax"], None, None, cases, providers, after_case=write)
    assert written == [[c for c in cases[:n] for _ in providers] for n in (1, 2, 3)]
    assert rows == [r for c in cases for r in fake_measure(None, c, None, providers, None, None, None)]
    (kept,) = load_results(tmp_path)
    assert len(kept["rows"]) == 6 and kept["notes"] == session.PARTIAL_NOTE


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium (apt-get install chromium) to look at the page")
def test_report_renders_in_chromium(many_results, tmp_path):
    """The page as a person sees it: every chart decoded and not blank, the numbers on the page."""
    with pytest.warns(UserWarning):
        index = build_report(many_results, tmp_path / "out", measured=False)
    png = tmp_path / "out" / "page.png"
    seen = render_png(index, png)
    assert len(seen["images"]) == 5 and png.stat().st_size > 50_000
    assert check_render(seen, png, expected_text=("94.3%", "3.12x", "4249")) == []
    assert check_render(seen, png, expected_text=("no such number 12345",)) == \
        ["the page does not show 'no such number 12345'"]


def _report(tmp_path, results_dir, measured=True):
    with pytest.warns(UserWarning):
        index = build_report(results_dir, tmp_path / "out", measured=measured)
    return index.read_text(), (tmp_path / "out" / "report.md").read_text()


def test_report_names_slower_sizes_and_explains_the_worst(many_results, tmp_path):
    page, md = _report(tmp_path, many_results)
    assert "slower at 1024×1024×1024" in page  # 0.0058 / 0.0061 = 0.95x cublas
    # the diagnosis explains the worst size (1024: 50.7% of roofline), with its speed-up over the peer
    assert "gemm (bfloat16, 1024×1024×1024) is compute-bound" in page
    assert "0.95x over cublas" in page
    # the datasheet comparison: copy 4249 / 4800, bf16 694 / 989, ridge 163 / 206 FLOP/byte
    assert "88.5%" in page and "70.2%" in page and "79.3%" in page
    assert "| 697.9 | 536.9 | +30.0% |" in md  # DRAM MB, then the cost model's minimum


def test_report_flags_fewer_bytes_too(tmp_path):
    folder = tmp_path / "res"
    folder.mkdir()
    low = {**RESULT, "ncu": [{**RESULT["ncu"][0], "dram_bytes": NBYTES * 0.8}]}
    (folder / "nvidia-h200-2026-11-29-rowops.json").write_text(json.dumps(low))
    page = build_report(folder, tmp_path / "out", measured=False).read_text()
    assert "moves -20.0% against the cost model" in page


def test_report_recovers_bytes_from_gbps(tmp_path):
    folder = tmp_path / "res"
    folder.mkdir()
    rows = [{"op": "myop", "dtype": "bfloat16", "shape": [1024, n], "provider": "rooftop", "ms": 0.5,
             "GBps": 2000.0, "TFLOPs": None, "roofline_pct": 50.0} for n in (1024, 2048)]
    doc = {"device": "NVIDIA H200", "date": "2026-11-29", "ceilings": {"copy_GBps": 4000.0, "bf16_mm_TFLOPs": 500.0},
           "rows": rows}
    (folder / "nvidia-h200-2026-11-29-misc.json").write_text(json.dumps(doc))
    page = build_report(folder, tmp_path / "out", measured=False).read_text()
    assert "2000 GB/s of the 4000 GB/s copy ceiling" in page


def test_session_writes_every_row_of_a_family(monkeypatch, tmp_path):
    """run_session (faked off a GPU): each family's file, partial and final, holds the rows of all its ops measured so
    far, the last case's included; the quick preset asks no op for torch.compile; `leading` keeps the cases whose
    first size is listed."""
    from types import SimpleNamespace

    import torch

    from rooftop import hardware, registry
    from rooftop.bench import session

    ceilings = SimpleNamespace(copy_GBps=1.0, bf16_mm_TFLOPs=1.0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: "FAKE")
    monkeypatch.setattr(hardware, "measure_ceilings", lambda refresh=False: ceilings)
    monkeypatch.setattr(session, "host_calibration", lambda: {})
    monkeypatch.setattr(session, "print_summary", lambda *args, **kwargs: None)
    monkeypatch.setattr(registry, "family_tables", lambda family: [])

    def fake_sweep(op_names, dtype, ceil, shapes, providers, after_case=None):
        assert providers and "compile" not in providers
        rows = []
        for shape in shapes:
            rows += [{"op": op_names[0], "shape": list(shape), "provider": p} for p in providers]
            after_case(list(rows))
        return rows

    written: dict[str, list] = {}

    def fake_write(out, family, rows, *args, **kwargs):
        written.setdefault(family, []).append([(r["op"], tuple(r["shape"]), r["provider"]) for r in rows])
        return tmp_path / family

    monkeypatch.setattr(session, "run_sweep", fake_sweep)
    monkeypatch.setattr(session, "write_results", fake_write)
    session.run_session(tmp_path, quick=True, with_ncu=False, say=lambda s: None)
    for family, specs in session.families().items():
        expected = [(s.name, tuple(shape), p) for s in specs for shape in session.quick_shapes(s)
                    for p in session.prov.available(s) if p != "compile"]
        *partial, final = written[family]
        assert final == expected and partial[-1] == expected, family

    written.clear()
    spec = registry.get("softmax")
    first = spec.cases[0][0]
    session.run_session(tmp_path, with_ncu=False, say=lambda s: None, only={spec.family}, ops={spec.name},
                        providers=["rooftop"], leading=(first,))
    assert {shape for _, shape, _ in written[spec.family][-1]} == {c for c in spec.cases if c[0] == first}
