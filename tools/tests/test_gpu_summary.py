"""``glimpse_tools.gpu_summary`` on the committed H200 log of 2026-11-26: the header, every run's backend
(TensorRT fell back to CUDA there), the batch table and the MCTS figures come out as the log states them."""

from __future__ import annotations

import json
from pathlib import Path

from glimpse_tools import gpu_summary

LOG = Path(__file__).resolve().parents[1] / "device" / "results" / "h200-2026-11-26-c30.txt"


def test_parses_the_h200_log():
    s = gpu_summary.parse_log(LOG.read_text())
    assert s["gpu"].startswith("NVIDIA H200") and s["cpus"] == 16 and s["tensorrt"] is None
    assert len(s["runs"]) == 9 and s["uci_check"] is None  # that log predates the check
    first = s["runs"][0]
    assert first["args"] == "--backend cuda --weights fp32.onnx --reps 3"
    assert (first["net"], first["kind"], first["backend"]) == ("fp32.onnx", "MultiActionValuePolicy", "cuda")
    assert first["report"]["Median ms per move"] == "1.22"
    assert [b["rows"] for b in first["batch_table"]] == [1, 8, 32, 128]
    assert first["batch_table"][-1] == {"rows": 128, "ms": 7.37, "positions_per_s": 17372.6}
    assert (first["exit"], first["wall_s"]) == (0, 1.5)
    # A tensorrt request without libnvinfer ran on CUDA: the backend used is the report's, not the argument.
    assert s["runs"][2]["args"].startswith("--backend tensorrt") and s["runs"][2]["backend"] == "cuda"
    mcts = s["runs"][6]
    assert mcts["report"]["Nodes/s"] == "4568.2" and mcts["report"]["Positions per run"] == "13.15"
    assert s["runs"][-1]["backend"] == "cpu"


def test_markdown_and_json(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert gpu_summary.main([str(LOG), "--json", str(out), "--markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 2 + 9
    assert "| 17373 (128 rows) |" in table[2] and table[2].startswith("| `--backend cuda --weights fp32.onnx")
    assert "| 4568.2 | 13.15 |" in table[8]
    assert json.loads(out.read_text())["runs"][5]["report"]["Median ms per move"] == "3.38"


def test_reads_the_uci_check():
    log = "NVIDIA H100\n16\nlibnvinfer: \n### uci check: Backend cuda, no WeightsFile\nuci check: PASS (x)\n"
    log += LOG.read_text().split("\n", 3)[3]
    s = gpu_summary.parse_log(log)
    assert s["uci_check"] == "PASS (x)" and len(s["runs"]) == 9


def test_refuses_a_log_without_runs(tmp_path):
    log = tmp_path / "empty.txt"
    log.write_text("NVIDIA H100\n16\nlibnvinfer: \n")
    assert gpu_summary.main([str(log)]) == 1
