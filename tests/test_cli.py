from pathlib import Path

import pytest

from rooftop.cli import main

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def test_report_renders_committed_results_without_gpu(tmp_path):
    assert main(["report", "--results", str(RESULTS), "--out", str(tmp_path)]) == 0
    page = (tmp_path / "index.html").read_text()
    for needle in ("softmax", "add_rms_norm", "data:image/png;base64", "NVIDIA H200", "compile"):
        assert needle in page


def test_info_prints_datasheet(capsys):
    assert main(["info", "--device", "NVIDIA H200"]) == 0
    assert "4800" in capsys.readouterr().out


def test_unknown_op_is_a_clear_error():
    with pytest.raises(KeyError, match="unknown op 'nope'"):
        main(["profile", "nope", "--shape", "1,2"])
