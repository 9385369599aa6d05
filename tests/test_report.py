import json
import re

import pytest

from rooftop.bench.plots import plot_curves, size_label
from rooftop.report import build_report, load_results

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
}


@pytest.fixture
def results_dir(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "nvidia-h200-2026-11-29-rowops.json").write_text(json.dumps(RESULT))
    (folder / "broken.json").write_text("{not json")
    return folder


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
    assert "Rendered from committed results" in page and "2026-11-29" in page
    assert "30% more bytes than the minimum" in page  # explain fed with the ncu entry
    assert "87.3" in page and "Synthetic numbers" in page and "python_us" in page
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
