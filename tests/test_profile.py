"""Profiling: occupancy maths, the diagnosis, the ncu parser, kernel recording and offline compile,
the model profiler's attribution. No GPU needed (but for the model profile): the figures are fed in."""
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import rooftop
from conftest import DEVICE, HAS_CUDA, TOL, rel_err
from rooftop.ops.activations import swiglu_reference
from rooftop.hardware import Ceilings
from rooftop.profile import ncu
from rooftop.profile.diagnose import diagnose
from rooftop.profile.occupancy import limits_for, max_regs_for, occupancy, occupancy_from_limits
from rooftop.roofline import Cost

H200 = Ceilings("NVIDIA H200", 4247.0, 690.0, "results", "2026-11-29", "2.11")
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


# ---------------------------------------------------------------------------------------------
# Occupancy


@pytest.mark.parametrize("regs, threads, smem, blocks, pct, limited_by", [
    (32, 256, 32, 8, 100.0, ()),  # softmax on-chip on the H200: registers and warps both allow 8
    (64, 512, 64, 2, 50.0, ("registers",)),  # looped softmax: 2 x 16 warps
    (64, 1024, 128, 1, 50.0, ("registers",)),
    (60, 512, 64, 2, 50.0, ("registers",)),  # 60 regs allocate like 64 (256 per warp)
    (40, 512, 0, 3, 75.0, ("registers",)),
    (32, 128, 48 * 1024, 4, 25.0, ("shared_mem",)),  # 228 KB / (48 KB + 1 KB reserved)
    (16, 32, 0, 32, 50.0, ("blocks",)),  # one-warp blocks: the 32-block cap
    (16, 1024, 0, 2, 100.0, ()),
])
def test_occupancy_h200(regs, threads, smem, blocks, pct, limited_by):
    occ = occupancy(regs, threads, smem, limits_for("NVIDIA H200"))
    assert (occ.blocks_per_sm, occ.theoretical_pct, occ.limited_by) == (blocks, pct, limited_by)


def test_occupancy_other_archs():
    # A100: 164 KB of shared memory per SM; L40S (sm_89): 1536 threads and 24 blocks per SM
    assert occupancy(32, 128, 48 * 1024, limits_for("NVIDIA A100-SXM4-80GB")).blocks_per_sm == 3
    l40s = occupancy(16, 1024, 0, limits_for("NVIDIA L40S"))
    assert (l40s.blocks_per_sm, l40s.theoretical_pct, l40s.limited_by) == (1, pytest.approx(200 / 3), ("warps",))
    assert limits_for((9, 0)) is limits_for("sm_90") is limits_for("NVIDIA H100 80GB HBM3")


def test_max_regs_for():
    assert max_regs_for(3, 512) == 40  # the looped softmax needs <= 40 regs for a third program
    assert max_regs_for(2, 1024) == 32
    assert max_regs_for(1, 32) == 255
    assert occupancy(max_regs_for(3, 512), 512).blocks_per_sm == 3
    assert occupancy(max_regs_for(3, 512) + 1, 512).blocks_per_sm == 2


def test_occupancy_bad_input():
    with pytest.raises(ValueError, match="threads_per_block=2048"):
        occupancy(32, 2048)
    with pytest.raises(ValueError, match="regs_per_thread=300"):
        occupancy(300, 256)
    with pytest.raises(ValueError, match="shared_per_block"):
        occupancy(32, 256, 300 * 1024)
    with pytest.raises(ValueError, match="device='TPU v5'"):
        limits_for("TPU v5")


def test_occupancy_agrees_with_nsight_compute():
    """The committed H200 readings: ncu's theoretical occupancy from its limits, and the register and
    warp limits and the occupancy recomputed from registers/thread, block size and shared memory a block."""
    entries = [e for path in RESULTS.glob("*.json") for e in json.loads(path.read_text()).get("ncu", [])]
    assert len(entries) >= 4
    for e in entries:
        limits = {n: e[f"occupancy_limit_{n}"] for n in ("registers", "shared_mem", "warps", "blocks")}
        from_limits = occupancy_from_limits(limits, int(e["block_size"]))
        assert from_limits.theoretical_pct == pytest.approx(e["theoretical_occupancy_pct"])
        ours = occupancy(int(e["registers_per_thread"]), int(e["block_size"]),
                         int(e["static_shared_mem_per_block"]) + int(e["dynamic_shared_mem_per_block"]))
        assert ours.limits["registers"] == e["occupancy_limit_registers"]
        assert ours.limits["warps"] == e["occupancy_limit_warps"]
        assert ours.theoretical_pct == pytest.approx(e["theoretical_occupancy_pct"])


# ---------------------------------------------------------------------------------------------
# Diagnosis

MB = 1e6
ROWS_COST = Cost(flops=5 * 2**27, bytes=2 * 2 * 2**27)  # bf16 softmax of 2^27 elements: 536.9 MB


def _reading(**figures):
    base = dict(duration_us=180.0, dram_bytes_read=324.8 * MB, dram_bytes_write=242.3 * MB,
                dram_throughput_pct=66.2, sm_throughput_pct=64.7, achieved_occupancy_pct=47.9,
                theoretical_occupancy_pct=50.0, registers_per_thread=64.0, block_size=512.0, grid_size=528.0,
                occupancy_limit_registers=2.0, occupancy_limit_shared_mem=7.0, occupancy_limit_warps=4.0,
                occupancy_limit_blocks=32.0, kernels=1)
    return {**base, **figures}


def test_diagnose_latency_bound():
    found = diagnose(_reading(), ROWS_COST, (2048, 65536), 2, H200)
    assert found.verdict == "latency"
    assert found.figures["extra_bytes_pct"] == pytest.approx(100 * (567.1e6 / ROWS_COST.bytes - 1))
    assert "(+5.6%): within 10%" in found.text
    assert "limited by registers: 64 per thread; at most 40 would fit 3 blocks" in found.text
    assert "the measured copy reaches 88% of the 4800 GB/s" in found.text  # 4247 / 4800
    # the datasheet fallback is the peak itself: no claim of a measured fraction
    datasheet = dataclasses.replace(H200, copy_GBps=4800.0, source="datasheet")
    assert "measured copy" not in diagnose(_reading(), ROWS_COST, (2048, 65536), 2, datasheet).text


def test_diagnose_l2_overflow_of_the_second_pass():
    reading = _reading(dram_bytes_read=417.4 * MB, dram_bytes_write=245.6 * MB, grid_size=512.0,
                       block_size=1024.0, occupancy_limit_registers=1.0, occupancy_limit_warps=2.0)
    found = diagnose(reading, ROWS_COST, (512, 262144), 2, H200)
    assert found.verdict == "re-reads"
    # 132 SMs x 1 program x 512 KB rows = 69.2 MB > 60 MiB L2
    assert found.figures["resident_programs"] == 132 and found.figures["in_flight_bytes"] == 132 * 2**19
    assert found.figures["l2_overflow"] is True
    assert "(+23.5%)" in found.text and "L2 overflow of the second pass" in found.text
    assert "69.2 MB of rows in flight, more than the 60 MiB L2" in found.text


def test_diagnose_re_reads_that_fit_l2():
    reading = _reading(dram_bytes_read=450 * MB, grid_size=64.0)  # 64 rows of 128 KB = 8.4 MB in flight
    found = diagnose(reading, ROWS_COST, (2048, 65536), 2, H200)
    assert found.verdict == "re-reads" and found.figures["l2_overflow"] is False
    assert "fits the 60 MiB L2, so rows in flight do not explain" in found.text
    assert "fills 24% of the 264 resident slots" in found.text  # 64 programs, 132 SMs x 2


def test_diagnose_multi_kernel_re_reads():
    found = diagnose(_reading(dram_bytes_read=1500 * MB, kernels=4), ROWS_COST, (2048, 65536), 2, H200)
    assert found.verdict == "re-reads" and "The op ran 4 kernels" in found.text
    assert "fuse the kernels" in found.text


def test_diagnose_at_ceiling_and_write_back_deficit():
    reading = _reading(dram_bytes_read=268.4 * MB, dram_bytes_write=210.0 * MB, dram_throughput_pct=83.3,
                       achieved_occupancy_pct=94.7, theoretical_occupancy_pct=100.0, registers_per_thread=32.0,
                       block_size=256.0, occupancy_limit_registers=8.0, occupancy_limit_warps=8.0,
                       occupancy_limit_shared_mem=28.0)
    found = diagnose(reading, ROWS_COST, (32768, 4096), 2, H200)
    assert found.verdict == "at-ceiling"
    assert "(-10.9%)" in found.text and "58.5 MB short" in found.text and "write-back L2" in found.text
    assert "every warp slot can be filled" in found.text


def test_diagnose_instruction_bound():
    found = diagnose(_reading(sm_throughput_pct=88.0, dram_throughput_pct=50.0, achieved_occupancy_pct=90.0),
                     ROWS_COST, (2048, 65536), 2, H200)
    assert found.verdict == "instructions" and "SMs are 88% busy while DRAM is 50%" in found.text


def test_diagnose_launch_and_compute_bound():
    assert diagnose(_reading(duration_us=3.0), ROWS_COST, (8, 4096), 2, H200).verdict == "launch"
    gemm = Cost(flops=2 * 8192**3, bytes=3 * 2 * 8192**2)
    found = diagnose(_reading(dram_bytes_read=400 * MB, dram_bytes_write=134 * MB, sm_throughput_pct=91.0),
                     gemm, (8192, 8192, 8192), 2, H200)
    assert found.verdict == "compute" and "SMs 91% busy" in found.text


def test_diagnose_compiled_resources_only():
    kernel = {"kernel": "_k", "n_regs": 96, "n_spills": 3, "shared": 0, "num_warps": 8, "grid_size": 100}
    found = diagnose(kernel, ROWS_COST, (100, 8192), 2, H200)
    assert found.verdict == "resources"
    assert found.figures["blocks_per_sm"] == 2  # 96 regs x 256 threads: 24576 regs a block
    assert "Theoretical occupancy 25%" in found.text and "3 registers per thread spill" in found.text
    assert "fills 38% of the 264 resident slots" in found.text


# ---------------------------------------------------------------------------------------------
# Nsight Compute's CSV


def test_parse_ncu_csv():
    metrics = list(ncu.METRICS)
    header = ",".join(f'"{h}"' for h in ["ID", "Kernel Name", *metrics])
    units = ",".join(f'"{u}"' for u in ["", "", *["" for _ in metrics]])
    values = {"gpu__time_duration.sum": "178,080", "dram__bytes_read.sum": "324840704",
              "dram__bytes_write.sum": "242309120", "launch__block_size": "512",
              "launch__occupancy_limit_registers": "2", "launch__occupancy_limit_shared_mem": "7",
              "launch__occupancy_limit_warps": "4", "launch__occupancy_limit_blocks": "32"}
    row = ",".join(f'"{v}"' for v in ["0", "_softmax_looped_kernel", *[values.get(m, "n/a") for m in metrics]])
    text = "==PROF== Connected to process\n" + "\n".join([header, units, row, row.replace('"0"', '"1"', 1)])
    kernels = ncu.parse_csv(text)
    assert len(kernels) == 2
    k = kernels[0]
    assert k["kernel"] == "_softmax_looped_kernel" and k["duration_us"] == pytest.approx(178.08)
    assert k["dram_bytes"] == 324840704 + 242309120 and k["occupancy_limited_by"] == "registers"
    assert "dram_throughput_pct" not in k  # "n/a" is left out, not a number
    total = ncu.summarize(kernels)
    assert total["kernels"] == 2 and total["dram_bytes"] == 2 * k["dram_bytes"]
    assert total["kernel_names"] == ["_softmax_looped_kernel"]
    assert ncu.parse_csv("no table here") == []


# ---------------------------------------------------------------------------------------------
# Kernel recording, offline compile


def test_recorded_launches_run_the_op(device):
    from rooftop.ops.softmax import softmax
    from rooftop.profile.kernels import recorded_launches

    x = torch.randn(3, 1000, device=device)
    with recorded_launches(execute=True) as launches:
        y = softmax(x)
    assert [launch.name for launch in launches] == ["_softmax_onchip_kernel"]
    assert launches[0].constexprs["BLOCK_N"] == 1024 and "num_warps" in launches[0].constexprs
    torch.testing.assert_close(y, torch.softmax(x, -1))


def test_offline_compile_for_the_h200():
    """The kernels an H200 would run, compiled here by Triton for sm_90 (a child process)."""
    from rooftop.profile.kernels import offline_kernels

    kernels = offline_kernels("softmax", (64, 1000), "bf16")
    assert [k["kernel"] for k in kernels] == ["_softmax_onchip_kernel"]
    k = kernels[0]
    assert 8 <= k["n_regs"] <= 255 and k["n_spills"] == 0 and k["num_warps"] >= 1
    assert k["grid_size"] == 64 // k["constexprs"]["BLOCK_M"] and "sm_90" in k["source"]
    assert k["clobbered_mma_operands"] == []  # checked in every offline compile (a row kernel has no MMA)
    with pytest.raises(RuntimeError, match="unknown op 'nope'"):
        offline_kernels("nope", (1, 2))


def test_profile_op_without_gpu(monkeypatch):
    """The orchestration on a CPU: offline resources (stubbed here), their occupancy, a diagnosis."""
    from rooftop.profile import kernels as kern
    from rooftop.profile.op import profile

    if torch.cuda.is_available():
        pytest.skip("the CPU path")
    stub = [{"kernel": "_softmax_looped_kernel", "grid": [528], "grid_size": 528, "num_warps": 16, "n_regs": 64,
             "n_spills": 0, "shared": 64, "constexprs": {}, "source": "offline compile for sm_90 (ptxas)"}]
    monkeypatch.setattr(kern, "offline_kernels", lambda op, shape, dtype: [dict(k) for k in stub])
    result = profile("softmax", (2048, 65536), "bf16")
    assert result.cost.bytes == 2 * 2 * 2048 * 65536 and result.seconds is None
    assert result.kernels[0]["blocks_per_sm"] == 2 and result.kernels[0]["limited_by"] == "registers"
    assert result.diagnoses[0][1].verdict == "resources"
    assert "floor" in result.roofline_text() and any("No CUDA GPU" in n for n in result.notes)
    assert not any("overwritten" in n for n in result.notes)
    stub[0]["clobbered_mma_operands"] = ["HGMMA.64x64x16.F32.BF16 R24, R100, gdesc[UR16], RZ <- FADD R100, R29, R47"]
    assert any(n.startswith("_softmax_looped_kernel: an MMA's register operand is overwritten") and "FADD R100" in n
               for n in profile("softmax", (2048, 65536), "bf16").notes)


# ---------------------------------------------------------------------------------------------
# Model profiler


def _event(name, children=(), kernels=(), self_cpu=0.0, shapes=(), dtypes=(), start=0.0, end=1.0, device="CPU"):
    event = SimpleNamespace(name=name, cpu_children=list(children), cpu_parent=None,
                            kernels=[SimpleNamespace(name=k, duration=us) for k, us in kernels],
                            self_cpu_time_total=self_cpu, input_shapes=list(shapes), input_dtypes=list(dtypes),
                            device_type=getattr(torch.autograd.DeviceType, device),
                            time_range=SimpleNamespace(start=start, end=end))
    for child in event.cpu_children:
        child.cpu_parent = event
    return event


def test_attribute_kernels_to_known_ops():
    from rooftop.profile.model import attribute

    # rooftop softmax at 4096 x 32768 bf16 (536.9 MB: floor 126.4 µs at 4247 GB/s) in 2 kernels of 100 µs,
    # an aten softmax of the same size in one kernel of 200 µs, an unknown kernel.
    ours = _event("rooftop::softmax[4096x32768,bfloat16]",
                  [_event("cuLaunchKernel", kernels=[("_stats", 100.0)]),
                   _event("cuLaunchKernel", kernels=[("_apply", 100.0)])])
    theirs = _event("aten::_softmax", kernels=[("softmax_warp_forward", 200.0)], shapes=[[4096, 32768], [], []],
                    dtypes=["c10::BFloat16", "Scalar", "Scalar"])
    other = _event("aten::index", kernels=[("indexing_kernel", 50.0)])
    rows = {r.kernel: r for r in attribute([ours, theirs, other], H200)}
    floor = 2 * 2 * 4096 * 32768 / (H200.copy_GBps * 1e9)
    assert rows["_stats"].op == "softmax" and rows["_stats"].shape == (4096, 32768)
    assert rows["_stats"].roofline_pct == pytest.approx(100 * floor / 200e-6)  # the op's two kernels
    assert rows["softmax_warp_forward"].op == "softmax"
    assert rows["softmax_warp_forward"].roofline_pct == pytest.approx(100 * floor / 200e-6)
    assert rows["indexing_kernel"].op is None and rows["indexing_kernel"].roofline_pct is None
    # no ceilings (a CPU run): the op is still named, the roofline is not guessed
    assert attribute([ours], None)[0].roofline_pct is None
    # input dtypes not recorded (the H200's torch 2.11): the model's dtype, and only when it is given
    unrecorded = _event("aten::mm", kernels=[("nvjet_gemm", 10.0)], shapes=[[256, 2048], [2048, 1024]])
    unrecorded.input_dtypes = None
    assert attribute([unrecorded], H200)[0].op is None
    [row] = attribute([unrecorded], H200, model_dtype=torch.bfloat16)
    assert row.op == "matmul" and row.shape == (256, 1024, 2048) and row.roofline_pct is not None
    # Triton's launches (cuLaunchKernelEx) the profiler did not link: rooftop's kernels are device events only,
    # paired in order with the cuLaunchKernelEx calls made straight from rooftop ops (not cuBLAS's, under aten::mm,
    # whose kernels are linked); a linked kernel's device event is not counted again, nor a record_function range's
    # GPU side; a library's kernel the profiler linked to our launch, and an unknown unlinked kernel: no op
    norm = _event("rooftop::rms_norm[8x4096,bfloat16]",
                  [_event("cuLaunchKernelEx", kernels=[("cudnn_sdpa", 3.0)], start=1.0)], start=0.0, end=2.0)
    softmax = _event("rooftop::softmax[4096x32768,bfloat16]", [_event("cuLaunchKernelEx", start=3.0)], start=3.0)
    gemm = _event("aten::mm", [_event("cuLaunchKernelEx", start=2.5)], kernels=[("nvjet_gemm", 10.0)],
                  shapes=[[256, 2048], [2048, 1024]], start=2.5)
    gemm.input_dtypes = None
    device = [_event("_softmax_onchip_kernel", start=30.0, end=230.0, device="CUDA"),
              _event("_rms_norm_onchip_kernel", start=10.0, end=14.0, device="CUDA"),
              _event("nvjet_gemm", start=5.0, end=15.0, device="CUDA"),
              _event("user_triton_kernel", start=231.0, end=232.0, device="CUDA"),
              _event("rooftop::softmax[4096x32768,bfloat16]", start=30.0, end=230.0, device="CUDA")]
    flat = [gemm, *gemm.cpu_children, norm, *norm.cpu_children, softmax, *softmax.cpu_children, *device]
    rows = {r.kernel: r for r in attribute(flat, H200, model_dtype=torch.bfloat16)}  # flat: as prof.events()
    assert rows["_rms_norm_onchip_kernel"].op == "rms_norm" and rows["_rms_norm_onchip_kernel"].time_us == 4.0
    assert rows["_softmax_onchip_kernel"].op == "softmax" and rows["_softmax_onchip_kernel"].roofline_pct is not None
    assert rows["nvjet_gemm"].calls == 1 and rows["nvjet_gemm"].op == "matmul"
    assert rows["cudnn_sdpa"].op is None and rows["user_triton_kernel"].op is None
    assert len(rows) == 5
    # a public op's call with no shape recorded (a patched model's): named, no roofline
    call = _event("rooftop::decode_attention", [_event("cuLaunchKernelEx", start=1.0)], start=0.0, end=2.0)
    kernel = _event("_decode_attention_kernel", start=3.0, end=9.0, device="CUDA")
    [row] = attribute([call, *call.cpu_children, kernel], H200)
    assert (row.kernel, row.op, row.shape, row.time_us, row.roofline_pct) == \
        ("_decode_attention_kernel", "decode_attention", None, 6.0, None)
    # launches and unlinked kernels not as many (a graph replay: one launch, many kernels): listed without an op
    rows = {r.kernel: r for r in attribute([norm, *norm.cpu_children, *device[:2]], H200)}
    assert rows["_rms_norm_onchip_kernel"].op is None and rows["_softmax_onchip_kernel"].op is None


def test_public_ops_are_ranges_while_profiling():
    """While torch.profiler records, a public op's call is a range rooftop::<op> (its kernels' owner in a model
    that calls it plainly); its plan is still recorded and replayed, and with the profiler off there is no range."""
    from rooftop.profile.model import attribute

    gate, up = torch.randn(4, 64, device=DEVICE), torch.randn(4, 64, device=DEVICE)  # apart: a call with one
    rooftop.swiglu.plans.clear()  # address twice is never recorded (ops/_support.py)
    rooftop.swiglu(gate, up)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        rooftop.swiglu(gate, up)
        rooftop.swiglu(gate, up)
    names = [e.name for e in prof.events()]
    assert names.count("rooftop::swiglu") == 2
    assert "swiglu" in {r.op for r in attribute(prof.events(), None, on_gpu=False)}
    assert len(rooftop.swiglu.plans) == 1  # the range did not spoil the recording
    assert rel_err(rooftop.swiglu(gate, up), swiglu_reference(gate, up)) < TOL[torch.float32]


def test_profile_tiny_model():
    """A CPU lists ops' own time, with no roofline; a GPU kernels, rooftop's (launched by Triton's cuLaunchKernelEx,
    which the profiler does not link) under their ops with their % of roofline."""
    from rooftop.profile.model import profile_model

    case, rows, total_us = profile_model("tiny", batch=1, seq=16, steps=1, top=50)
    assert "tiny" in case.name and total_us > 0
    ops = {r.op for r in rows}
    assert {"add_rms_norm", "rms_norm"} <= ops and None in ops
    if HAS_CUDA:  # each op's RMSNorm kernel under it, with a roofline; none of them left without an op
        norms = [r for r in rows if r.kernel.startswith("_rms_norm")]
        assert {r.op for r in norms if r.roofline_pct} == {"add_rms_norm", "rms_norm"}, rows
        assert all(r.op is not None for r in norms), rows
    else:
        assert all(r.roofline_pct is None for r in rows)  # no GPU ceilings on a CPU


def test_parse_ncu_csv_reads_each_metric_into_its_own_field():
    metrics = list(ncu.METRICS)
    header = ",".join(f'"{h}"' for h in ["ID", "Kernel Name", *metrics])
    units = ",".join('""' for _ in ["", "", *metrics])
    values = {"gpu__time_duration.sum": "1000", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "66.2",
              "sm__throughput.avg.pct_of_peak_sustained_elapsed": "12.5",
              "sm__warps_active.avg.pct_of_peak_sustained_active": "47.9",
              "sm__maximum_warps_per_active_cycle_pct": "50"}
    row = ",".join(f'"{v}"' for v in ["0", "k", *[values.get(m, "n/a") for m in metrics]])
    (k,) = ncu.parse_csv("\n".join([header, units, row]))
    assert (k["dram_throughput_pct"], k["sm_throughput_pct"]) == (66.2, 12.5)
    assert (k["achieved_occupancy_pct"], k["theoretical_occupancy_pct"]) == (47.9, 50.0)


def test_summarize_takes_the_longest_kernels_figures():
    kernels = [{"kernel": "a", "duration_us": 1.0, "dram_bytes": 1.0, "registers_per_thread": 32.0},
               {"kernel": "b", "duration_us": 9.0, "dram_bytes": 2.0, "registers_per_thread": 128.0}]
    out = ncu.summarize(kernels)
    assert out["kernel"] == "b" and out["registers_per_thread"] == 128.0 and out["duration_us"] == 10.0


def test_diagnose_counts_only_the_grid_when_it_is_smaller():
    found = diagnose(_reading(dram_bytes_read=450 * MB, grid_size=64.0), ROWS_COST, (2048, 65536), 2, H200)
    assert found.figures["resident_programs"] == 64 and found.figures["in_flight_bytes"] == 64 * 65536 * 2


def test_diagnose_l2_is_in_mib():
    # 264 resident programs x 231060-byte rows = 61.0 MB: fits 60 MiB (62.9 MB), not 60 MB
    found = diagnose(_reading(dram_bytes_read=450 * MB), ROWS_COST, (2048, 115530), 2, H200)
    assert found.figures["in_flight_bytes"] == 264 * 231060 and found.figures["l2_overflow"] is False


def test_attribute_to_the_outermost_known_op_and_addmm_shape():
    """A kernel under two known ops is the outer one's; aten::addmm's shape is (M, N, K) from its two matrices,
    not its bias."""
    from rooftop.profile.model import attribute

    bf16 = ["c10::BFloat16"] * 3
    inner = _event("aten::mm", kernels=[("gemm_in_norm", 1.0)], shapes=[[8, 4096], [4096, 16]], dtypes=bf16)
    outer = _event("rooftop::rms_norm[8x4096,bfloat16]", [inner])
    [row] = attribute([outer], H200)
    assert (row.kernel, row.op, row.shape) == ("gemm_in_norm", "rms_norm", (8, 4096))
    addmm = _event("aten::addmm", kernels=[("gemm", 1.0)], shapes=[[1024], [256, 2048], [2048, 1024]], dtypes=bf16)
    [row] = attribute([addmm], H200)
    assert (row.op, row.shape) == ("matmul", (256, 1024, 2048))


def test_attribute_needs_recorded_float_dtypes_and_as_many_launches_as_kernels():
    """An aten op whose recorded input dtypes hold no float dtype is not costed (the model's dtype stands in only where
    none were recorded); more rooftop launches than unlinked rooftop kernels: none is paired, the kernel has no op."""
    from rooftop.profile.model import attribute

    ints = _event("aten::mm", kernels=[("int_gemm", 1.0)], shapes=[[8, 16], [16, 4]], dtypes=["long", "long"])
    [row] = attribute([ints], H200, model_dtype=torch.bfloat16)
    assert row.op is None
    norm = _event("rooftop::rms_norm[8x4096,bfloat16]", [_event("cuLaunchKernelEx", start=1.0)], start=0.0, end=2.0)
    soft = _event("rooftop::softmax[64x4096,bfloat16]", [_event("cuLaunchKernelEx", start=3.0)], start=3.0, end=4.0)
    kernel = _event("_rms_norm_onchip_kernel", start=10.0, end=14.0, device="CUDA")
    [row] = attribute([norm, *norm.cpu_children, soft, *soft.cpu_children, kernel], H200)
    assert (row.kernel, row.op, row.time_us) == ("_rms_norm_onchip_kernel", None, 4.0)
    twice = _event("rooftop::softmax[64x4096,bfloat16]", kernels=[("_softmax_onchip_kernel", 1.0),
                                                                   ("_softmax_onchip_kernel", 2.0)])
    [row] = attribute([twice], H200)
    assert (row.calls, row.time_us) == (2, 3.0)


def test_clobbered_mma_operands_reads_loops_only(monkeypatch):
    """The SASS check on a made-up listing: an MMA whose A operand (R100-R103, loaded before the loop) is overwritten
    later in its loop (by a SHFL, whose destination is its second operand) is reported once; writes after the loop,
    operands made earlier in the same iteration, and a barrier retry after EXIT branching back into the loop are not."""
    from rooftop.profile import kernels

    listing = """
        /*0100*/                   LDSM.16.M88.4 R100, [R6+UR24] ;
        /*0110*/                   HGMMA.64x64x16.F32.BF16 R24, R100, gdesc[UR16], RZ, !UPT ;
        /*0120*/                   FADD R40, R41, R42 ;
        /*0130*/                   HGMMA.64x64x16.F32.BF16 R56, R40, gdesc[UR12].tnspB, R56 ;
        /*0140*/                   SHFL.BFLY PT, R102, R53, 0x1, 0x1f ;
        /*0150*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR14+0x8000], R13 ;
        /*0160*/              @!P0 BRA 0x300 ;
        /*0170*/               @P1 BRA 0x110 ;
        /*0180*/                   FMUL R100, R55, R10 ;
        /*0190*/                   EXIT ;
        /*0300*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR14+0x8000], R13 ;
        /*0310*/                   BRA 0x150 ;
    """
    monkeypatch.setattr(kernels, "_cuobjdump", lambda cubin, option: listing)
    assert kernels.clobbered_mma_operands(b"") == [
        "HGMMA.64x64x16.F32.BF16 R24, R100, gdesc[UR16], RZ, !UPT <- SHFL.BFLY PT, R102, R53, 0x1, 0x1f"]
    elsewhere = listing.replace("SHFL.BFLY PT, R102", "SHFL.BFLY PT, R90")
    monkeypatch.setattr(kernels, "_cuobjdump", lambda cubin, option: elsewhere)
    assert kernels.clobbered_mma_operands(b"") == []
