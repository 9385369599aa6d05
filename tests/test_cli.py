import dataclasses
from pathlib import Path

import pytest
import torch

from conftest import HAS_CUDA
from rooftop.cli import main

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def test_report_renders_committed_results_without_gpu(tmp_path):
    assert main(["report", "--results", str(RESULTS), "--out", str(tmp_path), "--render-only"]) == 0
    page = (tmp_path / "index.html").read_text()
    for needle in ("softmax", "add_rms_norm", "data:image/png;base64", "NVIDIA H200", "compile",
                   "No GPU measurement in this run", "At a glance"):
        assert needle in page
    # the committed Nsight Compute readings: the looped kernels' extra bytes at N = 262144, explained
    assert "DRAM bytes against the cost model" in page
    assert "softmax (rooftop, 512×262144) moves +23.5% against the cost model: L2 overflow of the second pass" in page


def test_info_prints_datasheet(capsys):
    """The datasheet of --device where there is no GPU (the H200's 4800 GB/s), of the card present where there is
    one (an H100 SXM's 3350: session 58's run on an H100 asked for 4800 there)."""
    import torch

    from rooftop.hardware import lookup_spec

    assert main(["info", "--device", "NVIDIA H200"]) == 0
    spec = lookup_spec(torch.cuda.get_device_name() if torch.cuda.is_available() else "NVIDIA H200")
    assert f"{spec.mem_GBps:.0f}" in capsys.readouterr().out


def test_unknown_op_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown op 'nope'"):
        main(["profile", "nope", "--shape", "1,2"])


def test_report_png_without_chromium(tmp_path, monkeypatch, capsys):
    import rooftop.report

    monkeypatch.setattr(rooftop.report, "find_chromium", lambda: None)
    assert main(["report", "--results", str(RESULTS), "--out", str(tmp_path), "--png", "--render-only"]) == 0
    assert "no Chromium found" in capsys.readouterr().out


def test_profile_needs_an_op_or_a_model(capsys):
    assert main(["profile"]) == 2
    assert "--model" in capsys.readouterr().out


def test_profile_op_without_gpu(monkeypatch, capsys):
    """On a CPU: the kernels an H200 would run (the offline compile, stubbed: tests/test_profile.py runs
    it for real), their occupancy and the diagnosis."""
    import torch

    from rooftop.profile import kernels

    if torch.cuda.is_available():
        pytest.skip("the CPU path")
    monkeypatch.setattr(kernels, "offline_kernels", lambda op, shape, dtype: [
        {"kernel": "_softmax_looped_kernel", "grid": [528], "grid_size": 528, "num_warps": 16, "n_regs": 64,
         "n_spills": 0, "shared": 64, "constexprs": {}, "source": "offline compile for sm_90 (ptxas)"}])
    assert main(["profile", "softmax", "--shape", "2048,65536"]) == 0
    out = capsys.readouterr().out
    assert "minimum 536.9 MB" in out and "_softmax_looped_kernel" in out
    assert "limited by registers: 64 per thread; at most 40 would fit 3 blocks" in out
    assert "No CUDA GPU here" in out


def test_profile_model_tiny(capsys):
    assert main(["profile", "--model", "tiny", "--batch", "1", "--seq", "8", "--steps", "1", "--top", "40"]) == 0
    out = capsys.readouterr().out
    assert "tiny (built-in Llama-style)" in out
    # a CPU lists ops (their own time); a GPU kernels, cuBLAS's under matmul, rooftop's (launched by Triton's
    # cuLaunchKernelEx, which the profiler does not link: journal item 195) under their ops
    assert "add_rms_norm" in out and (("_rms_norm_" in out and "matmul" in out) if HAS_CUDA else "aten::mm" in out)


def test_profile_patched_transformers_model(tmp_path, capsys):
    """`rooftop profile --model file.py --patch`: a transformers Llama with rooftop's ops swapped in, whose rooftop
    calls (ranges while the profiler records) own their kernels (a CPU: their ops' time) by name."""
    pytest.importorskip("transformers")
    path = tmp_path / "small_llama.py"
    path.write_text(
        "import torch, transformers\n"
        "def build_model(device, dtype):\n"
        "    config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=160,\n"
        "        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)\n"
        "    config._attn_implementation = 'sdpa'\n"
        "    model = transformers.LlamaForCausalLM(config).to(device=device, dtype=dtype)\n"
        "    return model, {'input_ids': torch.randint(0, 128, (1, 8), device=device), 'use_cache': False}\n")
    assert main(["profile", "--model", str(path), "--patch", "--steps", "1", "--top", "60"]) == 0
    out = capsys.readouterr().out
    assert "patched {" in out and "'rms_norm': 5" in out
    ops = {line.split("│")[2].strip() for line in out.splitlines() if line.count("│") > 3}
    assert {"rms_norm", "swiglu", "apply_rope"} <= ops


def test_check_runs_every_op(capsys):
    """`rooftop check`: every registered op on its small check shapes against its reference (here in the
    interpreter, with the test patches; on a GPU the real kernels)."""
    from rooftop import registry

    assert main(["check"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nok   ") + out.startswith("ok   ") == sum(len(s.check_cases) for s in registry.all_ops())
    assert "FAIL" not in out


def test_check_fails_on_a_wrong_op(monkeypatch, capsys):
    from rooftop import registry
    spec = registry.get("softmax")
    wrong = dataclasses.replace(spec, reference=lambda *a: 2 * spec.reference(*a), check_cases=((3, 1000),))
    monkeypatch.setattr(registry, "all_ops", lambda: [wrong])
    assert main(["check"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_info_shows_the_requested_datasheet(capsys):
    if torch.cuda.is_available():
        pytest.skip("the CPU path")
    assert main(["info", "--device", "NVIDIA H100 PCIe"]) == 0
    out = capsys.readouterr().out
    assert "H100 PCIe" in out and "2000" in out and "4800" not in out
