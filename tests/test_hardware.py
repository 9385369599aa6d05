import json

import pytest

from rooftop import hardware
from rooftop.hardware import DATASHEET, Ceilings, ceilings_for, lookup_spec


@pytest.mark.parametrize("device_name, expected", [
    ("NVIDIA H200", "H200"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB"),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB"),
    ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("NVIDIA B200", "B200"),
])
def test_lookup_spec(device_name, expected):
    assert lookup_spec(device_name).name == expected


@pytest.mark.parametrize("device_name", ["NVIDIA GH200 480GB", "NVIDIA L40", "Tesla T4", ""])
def test_lookup_spec_unknown(device_name):
    assert lookup_spec(device_name) is None


def test_datasheet_h200():
    h200 = DATASHEET["H200"]
    assert (h200.memory_GB, h200.mem_GBps, h200.sms, h200.l2_MB) == (141, 4800, 132, 60)
    assert (h200.bf16_TFLOPs, h200.fp8_TFLOPs, h200.fp32_TFLOPs) == (989, 1979, 67)
    assert DATASHEET["H100 SXM"].l2_MB == 50
    assert DATASHEET["A100 80GB"].fp8_TFLOPs is None


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("ROOFTOP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hardware.cache_dir() == tmp_path / "xdg" / "rooftop"
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path / "own"))
    assert hardware.cache_dir() == tmp_path / "own"


def test_ceilings_json_round_trip():
    c = Ceilings("NVIDIA H200", 4249.1, 694.1, "measured", "2026-11-29", "2.11.0")
    assert Ceilings.from_json(json.loads(json.dumps(c.to_json()))) == c
    with pytest.raises(ValueError, match="copy_GBps"):
        Ceilings.from_json({"device": "x"})


def test_ceilings_for_reads_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path))
    measured = Ceilings("NVIDIA H200", 4249.1, 694.1, "measured", "2026-11-29", "2.11.0")
    # Written where measure_ceilings writes it.
    (tmp_path / "ceilings-nvidia-h200.json").write_text(json.dumps(measured.to_json()))
    got = ceilings_for("NVIDIA H200")
    assert got.source == "cache"
    assert (got.copy_GBps, got.bf16_mm_TFLOPs, got.date) == (4249.1, 694.1, "2026-11-29")


def test_ceilings_for_datasheet_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path))
    got = ceilings_for("NVIDIA H100 PCIe")
    assert got.source == "datasheet"
    assert (got.copy_GBps, got.bf16_mm_TFLOPs) == (2000, 756)


def test_ceilings_for_unknown_device(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path))
    with pytest.raises(ValueError, match="device_name='Tesla T4'"):
        ceilings_for("Tesla T4")


def test_no_gpu_errors(monkeypatch):
    monkeypatch.setattr(hardware.torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no CUDA device"):
        ceilings_for()
    with pytest.raises(RuntimeError, match="no CUDA device"):
        hardware.measure_ceilings()
    info = hardware.device_info()
    assert "torch" in info and "triton" in info and "name" not in info


@pytest.mark.parametrize("name, figures", [
    ("H100 SXM", (80, 3350, 132, 50, 989, 1979)), ("H100 PCIe", (80, 2000, 114, 50, 756, 1513)),
    ("H200", (141, 4800, 132, 60, 989, 1979)), ("A100 40GB", (40, 1555, 108, 40, 312, None)),
    ("A100 80GB", (80, 2039, 108, 40, 312, None)), ("A100 PCIe 80GB", (80, 1935, 108, 40, 312, None)),
    ("L40S", (48, 864, 142, 96, 362.05, 733)), ("RTX 4090", (24, 1008, 128, 72, 165.2, 330.3)),
    ("B200", (180, 8000, 148, 126, 2250, 4500)),
])
def test_datasheet_every_entry(name, figures):
    """Every datasheet entry's memory, bandwidth, SMs, L2, bf16 and fp8 rates as published (dense)."""
    s = DATASHEET[name]
    assert (s.memory_GB, s.mem_GBps, s.sms, s.l2_MB, s.bf16_TFLOPs, s.fp8_TFLOPs) == figures


def test_unreadable_cache_falls_back_to_datasheet(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFTOP_CACHE_DIR", str(tmp_path))
    (tmp_path / "ceilings-nvidia-h200.json").write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable ceilings cache"):
        got = ceilings_for("NVIDIA H200")
    assert got.source == "datasheet" and got.copy_GBps == 4800
