"""Shared fixtures of training/'s pytest suite (``make test-training``, run from training/).

``shared``: the shared data folder, ``$GLIMPSE_SHARED`` (the Makefile passes ``$(TEST_SHARED)``) or the
in-repo slice ``tests/data/shared/`` (golden vectors, a few labels and puzzles), so a clone tests on its own.
"""

from __future__ import annotations

import os

import pytest

TINY_POSITIONS = 150
REPO_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared")
SHARED = os.environ.get("GLIMPSE_SHARED", REPO_FIXTURE)


@pytest.fixture(scope="session")
def shared() -> str:
    if not os.path.isdir(os.path.join(SHARED, "golden")):
        pytest.fail(f"shared data folder {SHARED} not found (set GLIMPSE_SHARED, or restore tests/data/shared/)")
    return SHARED


@pytest.fixture(scope="session")
def tiny_ds(shared, tmp_path_factory):
    """A dataset of 150 positions from the shared labels (built once per test session)."""
    from glimpse_train.data import Dataset, build_dataset, label_files

    d = str(tmp_path_factory.mktemp("data"))
    build_dataset(label_files(shared), d, max_positions=TINY_POSITIONS, log=lambda *_: None)
    ds = Dataset(d)
    ds.dir = d
    return ds


@pytest.fixture
def in_run_folder(tiny_ds, tmp_path, monkeypatch):
    """cwd = a fresh folder laid out as training/ is: ``runs/``, and ``data/first150`` = ``tiny_ds``
    (what the command lines read for a run with ``max_positions`` = 150). Returns the folder."""
    monkeypatch.chdir(tmp_path)
    os.makedirs("runs")
    os.makedirs("data")
    os.symlink(tiny_ds.dir, os.path.join("data", f"first{TINY_POSITIONS}"))
    return tmp_path
