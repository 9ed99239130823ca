"""The registry of model kinds (``glimpse_train/kinds``) and the kind-agnostic command lines: every kind's
record is complete, look-ups by ONNX kind / preset / run agree, and ``train.py`` reaches each kind's trainer
(``export.py``/``evaluate.py`` dispatch is exercised by each kind's smoke test)."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from glimpse_train import kinds
from glimpse_train.kinds.base import Kind


@pytest.mark.parametrize("name", list(kinds.KINDS))
def test_record_is_complete(name):
    k = kinds.KINDS[name]
    assert isinstance(k, Kind) and k.name in k.onnx_kinds
    for f in dataclasses.fields(Kind):
        assert getattr(k, f.name) is not None, f.name
    assert k.default_preset in k.presets
    fields = {f.name for f in dataclasses.fields(k.train_config)}
    assert set(k.arch_fields) <= fields
    for preset in k.presets.values():
        k.train_config(**preset).model()  # every preset builds a model config


def test_lookups(tmp_path):
    av, mav = kinds.KINDS["action_value"], kinds.KINDS["multi_action_value"]
    assert kinds.get("state_value") is av and kinds.get("behavioral_cloning") is av
    assert kinds.get("multi_action_value") is mav
    with pytest.raises(KeyError):
        kinds.get("nonsense")
    assert kinds.for_preset("small") is av and kinds.for_preset("mav-small") is mav
    assert kinds.for_preset("mav-custom") is mav and kinds.for_preset("nonsense") is None
    run = tmp_path / "r"
    run.mkdir()
    assert kinds.for_run(str(run)) is None
    (run / "config.json").write_text(json.dumps({"layers": 2}))
    assert kinds.for_run(str(run)) is av  # old AV runs have no kind field
    (run / "config.json").write_text(json.dumps({"kind": "multi_action_value"}))
    assert kinds.for_run(str(run)) is mav
    argv = ["--run", "r", "--runs-dir", str(tmp_path)]
    assert kinds.for_argv(argv) is mav
    assert kinds.for_argv(["--config", "mav-smoke"]) is mav and kinds.for_argv(["--config=small"]) is av
    assert kinds.for_argv([]) is av


@pytest.mark.parametrize("preset", ["smoke", "mav-smoke"])
def test_train_command_dispatch(preset, shared, in_run_folder, capsys):
    """``make train CONFIG=<preset>`` reaches the preset's kind; a resumed run keeps its kind and refuses
    another architecture. (0 steps: builds the trainer, writes config.json and a checkpoint.)"""
    from glimpse_train import train

    argv = ["--config", preset, "--run", "r", "--steps", "0", "--shared", shared, "--extra-labels", ""]
    train.main(argv)
    kind = kinds.for_preset(preset)
    assert kinds.for_run(os.path.join("runs", "r")) is kind
    assert os.path.exists(os.path.join("runs", "r", "ckpt.pkl"))
    out = capsys.readouterr().out
    assert "fresh model" in out and type(kind.train_config().model()).__name__ in out
    with pytest.raises(SystemExit):
        train.main(["--run", "r", "--layers", "7", "--shared", shared, "--extra-labels", ""])
