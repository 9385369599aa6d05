import math

import pytest
import torch

from rooftop.hardware import Ceilings
from rooftop.roofline import Cost, attainable_TFLOPs, explain, plot_roofline, ridge_point

# Round ceilings so the expected numbers can be worked out by hand: ridge = 500e12 / 4000e9 = 125.
C = Ceilings("NVIDIA H200", copy_GBps=4000.0, bf16_mm_TFLOPs=500.0, source="measured",
             date="2026-11-29", torch="2.11.0")
# A bf16 row op moving 1 GB with 1 FLOP per byte; a 8192^3 bf16 GEMM.
COPY_LIKE = Cost(flops=1e9, bytes=1e9)
GEMM = Cost(flops=2 * 8192**3, bytes=3 * 8192 * 8192 * 2)


def test_arithmetic():
    assert ridge_point(C) == 125.0
    assert COPY_LIKE.intensity == 1.0
    assert COPY_LIKE.memory_time_s(C) == pytest.approx(0.25e-3)
    assert COPY_LIKE.compute_time_s(C) == pytest.approx(2e-6)
    assert COPY_LIKE.floor_s(C) == pytest.approx(0.25e-3)
    assert COPY_LIKE.bound(C) == "memory"
    assert GEMM.intensity == pytest.approx(8192 / 3)
    assert GEMM.bound(C) == "compute"
    assert GEMM.floor_s(C) == pytest.approx(2 * 8192**3 / 500e12)
    assert COPY_LIKE.roofline_pct(0.5e-3, C) == pytest.approx(50.0)
    assert COPY_LIKE.achieved_GBps(0.5e-3) == pytest.approx(2000.0)
    assert COPY_LIKE.achieved_TFLOPs(0.5e-3) == pytest.approx(2.0)
    assert attainable_TFLOPs(1.0, C) == pytest.approx(4.0)
    assert attainable_TFLOPs(1000.0, C) == 500.0
    assert COPY_LIKE + GEMM == Cost(COPY_LIKE.flops + GEMM.flops, COPY_LIKE.bytes + GEMM.bytes)
    assert Cost(0, 0).intensity == math.inf


def test_bad_arguments():
    with pytest.raises(ValueError, match="bytes=-1"):
        Cost(1, -1)
    with pytest.raises(ValueError, match="seconds=0"):
        COPY_LIKE.roofline_pct(0, C)


def test_explain_memory_bound_at_ceiling():
    # 0.26 ms against a 0.25 ms floor: 96.2% of roofline, 3846 GB/s.
    text = explain("softmax", COPY_LIKE, 0.26e-3, C, baseline={"eager": 0.52e-3})
    assert "memory-bound" in text
    assert "96.2%" in text and "3846 GB/s" in text and "4000 GB/s" in text
    assert "fewer bytes" in text
    assert "2.00x over eager" in text


def test_explain_memory_bound_low():
    text = explain("softmax", COPY_LIKE, 1e-3, C)
    assert "25.0%" in text and "re-reads" in text


def test_explain_launch_bound():
    tiny = Cost(flops=4096, bytes=4 * 4096)
    text = explain("rms_norm", tiny, 5e-6, C)
    assert "launch" in text and "CUDA graph" in text


def test_explain_compute_bound():
    seconds = GEMM.floor_s(C) / 0.5
    text = explain("matmul", GEMM, seconds, C)
    assert "compute-bound" in text and "50.0%" in text and "TFLOP/s" in text
    assert "re-tile" in text


def test_explain_ncu():
    ncu = {"dram_bytes": 1.3e9, "dram_throughput_pct": 71.5, "achieved_occupancy_pct": 45.2,
           "theoretical_occupancy_pct": 50.0, "registers_per_thread": 64}
    text = explain("softmax", COPY_LIKE, 0.4e-3, C, ncu=ncu)
    assert "30% more bytes than the minimum" in text and "re-reads" in text
    assert "71.5%" in text and "45.2%" in text and "64 registers/thread" in text
    exact = explain("softmax", COPY_LIKE, 0.4e-3, C, ncu={"dram_bytes": 1.02e9})
    assert "moves the minimum bytes" in exact


def test_plot_roofline(tmp_path):
    points = [dict(label="softmax", intensity=1.0, TFLOPs=3.8, provider="rooftop"),
              dict(label="softmax", intensity=1.0, TFLOPs=2.5, provider="eager"),
              dict(label="matmul", intensity=2730.0, TFLOPs=450.0, provider="rooftop")]
    path = plot_roofline(points, C, tmp_path / "roofline.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    with pytest.raises(ValueError, match="'zero'"):
        plot_roofline([dict(label="zero", intensity=0.0, TFLOPs=1.0, provider="x")], C, tmp_path / "z.png")


def test_compute_scale_raises_the_compute_roof():
    from rooftop.hardware import Ceilings

    c = Ceilings(device="X", copy_GBps=4000.0, bf16_mm_TFLOPs=700.0, source="test", date="2026-11-29", torch="x")
    bf16 = Cost(flops=2 * 8192**3, bytes=3 * 8192**2 * 2)
    fp8 = Cost(flops=2 * 8192**3, bytes=3 * 8192**2, compute_scale=2.0)
    assert fp8.compute_time_s(c) == pytest.approx(bf16.compute_time_s(c) / 2)
    # 1300 TFLOP/s of fp8 is 93% of its 1400 TFLOP/s roof, not 186% of the bf16 one
    assert fp8.roofline_pct(fp8.flops / 1300e12, c) == pytest.approx(100 * 1300 / 1400)
    with pytest.raises(ValueError, match="different compute roofs"):
        bf16 + fp8


def test_explain_states_side_ridge_and_floor():
    text = explain("softmax", COPY_LIKE, 0.26e-3, C)
    assert "is below the ridge point of 125 FLOP/byte on NVIDIA H200" in text
    assert "(floor 250.0 µs)" in text
    gemm = explain("matmul", GEMM, GEMM.floor_s(C) / 0.5, C)
    assert "is above the ridge point of 125 FLOP/byte" in gemm


def test_explain_compute_bound_at_ceiling():
    text = explain("matmul", GEMM, GEMM.floor_s(C) / 0.9, C)
    assert "90.0%" in text and "at the matmul ceiling" in text


def test_explain_occupancy_threshold():
    text = explain("softmax", COPY_LIKE, 1e-3, C, ncu={"achieved_occupancy_pct": 45.0})
    assert "low occupancy" not in text
    assert "low occupancy" in explain("softmax", COPY_LIKE, 1e-3, C, ncu={"achieved_occupancy_pct": 35.0})


def test_row_op_costs():
    from rooftop import registry
    bf16, M, N = torch.bfloat16, 8, 1024
    n = M * N
    assert registry.get("swiglu").cost((M, N), bf16).bytes == 3 * n * 2
    assert registry.get("bias_gelu").cost((M, N), bf16).bytes == (2 * n + N) * 2
    assert registry.get("rms_norm").cost((M, N), bf16).bytes == (2 * n + N) * 2
    assert registry.get("add_rms_norm").cost((M, N), bf16).bytes == (4 * n + N) * 2
    assert registry.get("layer_norm").cost((M, N), torch.float32).bytes == (2 * n + 2 * N) * 4
    assert registry.get("softmax").cost((M, N), bf16).bytes == 2 * n * 2
    # q [1, 32, 512, 128] and k (8 heads) read and written, cos/sin [512, 64] each
    assert registry.get("apply_rope").cost((1, 32, 512, 128), bf16).bytes == (2 * 40 * 512 * 128 + 512 * 128) * 2


def test_fp8_gemm_cost_has_the_fp8_roof():
    from rooftop import registry
    from rooftop.ops.matmul import gemm_cost
    assert registry.get("matmul_fp8").cost((4, 8, 16), torch.bfloat16).compute_scale == 2.0
    assert gemm_cost((4, 8, 16), torch.bfloat16).compute_scale == 1.0
