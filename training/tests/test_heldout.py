"""``glimpse_train.heldout`` (``make heldout``): the JSON report, and positions a run chosen by precision."""

from __future__ import annotations

import json
import os

import pytest

from glimpse_train import heldout

SHARED = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    from glimpse_train.test_models import run_mavp

    d = str(tmp_path_factory.mktemp("tiny"))
    assert run_mavp("", d)
    return os.path.join(d, "tiny_mavp.onnx")


def test_report_records_positions_per_run_and_a_float_net_does_not_depend_on_it(tiny, tmp_path):
    reports = {}
    for per_run in (None, 3):
        out = tmp_path / f"{per_run}.json"
        args = ["--net", tiny, "--json", str(out), "--shared", SHARED, "--cache-dir", str(tmp_path / "cache"),
                "--puzzles", "0"] + ([] if per_run is None else ["--positions-per-run", str(per_run)])
        assert heldout.main(args) == 0
        reports[per_run] = json.loads(out.read_text())
    assert reports[None]["positions_per_run"] == heldout.FLOAT_POSITIONS_PER_RUN
    assert reports[3]["positions_per_run"] == 3
    assert reports[None]["val_positions"] == reports[3]["val_positions"] > 0
    for k in ("action_accuracy", "policy_accuracy", "blend_accuracy"):
        assert reports[3][k] == pytest.approx(reports[None][k]), k
    assert reports[3]["kendall_tau"] == pytest.approx(reports[None]["kendall_tau"], abs=1e-6)


def test_positions_per_run_below_one_is_refused(tiny, tmp_path):
    with pytest.raises(SystemExit):
        heldout.main(["--net", tiny, "--json", str(tmp_path / "x.json"), "--positions-per-run", "0"])
    assert not (tmp_path / "x.json").exists()
