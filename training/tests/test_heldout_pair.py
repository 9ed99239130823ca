"""``glimpse_train.heldout_pair`` (``make heldout-pair``): the paired statistics on answers with known results,
and two nets compared on the held-out split agree with ``heldout``'s figures of each."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from glimpse_train import heldout, heldout_pair
from glimpse_train.campaign_metrics import HeldOut
from glimpse_train.data import MemDataset
from glimpse_train.labelstore import label_files

SHARED = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "shared"))


def test_exact_binomial_p_matches_hand_computed_tails():
    assert heldout_pair.binomial_two_sided_p(0, 5) == pytest.approx(2 / 32)
    assert heldout_pair.binomial_two_sided_p(1, 10) == pytest.approx(2 * 11 / 1024)
    assert heldout_pair.binomial_two_sided_p(9, 10) == pytest.approx(2 * 11 / 1024)
    assert heldout_pair.binomial_two_sided_p(5, 10) == 1.0
    assert heldout_pair.binomial_two_sided_p(0, 0) == 1.0
    # far tail of a large n stays finite and tiny, and symmetric
    p = heldout_pair.binomial_two_sided_p(400, 1000)
    assert 0 < p < 1e-9 and p == pytest.approx(heldout_pair.binomial_two_sided_p(600, 1000))


def test_exact_binomial_p_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    for k, n in ((30, 90), (3, 17), (512, 1000), (1180, 2300)):
        assert heldout_pair.binomial_two_sided_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9)


def _answers(n: int, both: int, a_only: int, b_only: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.zeros(n, bool), np.zeros(n, bool)
    a[:both] = b[:both] = True
    a[both:both + a_only] = True
    b[both + a_only:both + a_only + b_only] = True
    order = np.random.default_rng(1).permutation(n)
    return a[order], b[order]


def test_paired_binary_counts_discordant_positions_and_their_interval():
    a, b = _answers(1000, 400, 60, 30)
    r = heldout_pair.paired_binary(a, b)
    assert (r["a"], r["b"], r["a_only"], r["b_only"]) == (0.46, 0.43, 60, 30)
    assert r["diff"] == pytest.approx(0.03)
    se = math.sqrt(90 - 30 ** 2 / 1000) / 1000
    assert r["ci95"] == pytest.approx([0.03 - 1.959964 * se, 0.03 + 1.959964 * se])
    assert r["ci95"][0] > 0
    assert r["p_mcnemar"] == pytest.approx(heldout_pair.binomial_two_sided_p(60, 90))
    swapped = heldout_pair.paired_binary(b, a)
    assert swapped["diff"] == pytest.approx(-0.03) and swapped["p_mcnemar"] == pytest.approx(r["p_mcnemar"])
    same = heldout_pair.paired_binary(a, a)
    assert same["diff"] == 0 and same["ci95"] == [0, 0] and same["p_mcnemar"] == 1.0
    with pytest.raises(ValueError):
        heldout_pair.paired_binary(a, b[:-1])
    with pytest.raises(ValueError):
        heldout_pair.paired_binary(a[:0], b[:0])


def test_paired_interval_is_tighter_than_the_unpaired_one_when_answers_agree():
    a, b = _answers(10_000, 4_000, 300, 250)
    r = heldout_pair.paired_binary(a, b)
    unpaired_se = math.sqrt(r["a"] * (1 - r["a"]) / 1e4 + r["b"] * (1 - r["b"]) / 1e4)
    assert (r["ci95"][1] - r["ci95"][0]) / 2 < 0.5 * 1.959964 * unpaired_se


def test_paired_mean_skips_positions_where_either_value_is_undefined():
    a = np.array([0.5, np.nan, 0.2, 0.9, 0.4])
    b = np.array([0.3, 0.1, np.nan, 0.6, 0.4])
    r = heldout_pair.paired_mean(a, b)
    d = np.array([0.2, 0.3, 0.0])
    assert r["positions"] == 3
    assert r["a"] == pytest.approx(0.6) and r["b"] == pytest.approx(1.3 / 3)
    assert r["diff"] == pytest.approx(d.mean())
    half = 1.959964 * d.std(ddof=1) / math.sqrt(3)
    assert r["ci95"] == pytest.approx([d.mean() - half, d.mean() + half])
    with pytest.raises(ValueError):
        heldout_pair.paired_mean(np.array([np.nan]), np.array([1.0]))


def test_paired_ratio_is_the_difference_of_means_a_row():
    rows = np.array([2, 3, 5])
    r = heldout_pair.paired_ratio(np.array([2.0, 6.0, 5.0]), np.array([1.0, 3.0, 5.0]), rows)
    assert (r["a"], r["b"]) == (pytest.approx(1.3), pytest.approx(0.9))
    assert r["diff"] == pytest.approx(0.4)
    d = np.array([1.0, 3.0, 0.0])
    half = 1.959964 * d.std(ddof=1) * math.sqrt(3) / 10
    assert r["ci95"] == pytest.approx([0.4 - half, 0.4 + half])


@pytest.fixture(scope="module")
def tiny_nets(tmp_path_factory) -> tuple[str, str]:
    from glimpse_train.test_models import run_mav, run_mavp

    d = str(tmp_path_factory.mktemp("tiny"))
    assert run_mavp("", d) and run_mav("", d)
    return os.path.join(d, "tiny_mavp.onnx"), os.path.join(d, "tiny_mav.onnx")


def test_two_nets_on_the_split_agree_with_heldout_figures_of_each(tiny_nets, tmp_path):
    mavp, mav = tiny_nets
    out = tmp_path / "pair.json"
    assert heldout_pair.main(["--a", mavp, "--b", mav, "--json", str(out), "--shared", SHARED,
                              "--cache-dir", str(tmp_path / "cache")]) == 0
    rep = json.loads(out.read_text())
    assert (rep["a"], rep["b"]) == ("tiny_mavp.onnx", "tiny_mav.onnx")
    held = HeldOut(MemDataset(label_files(SHARED, None), str(tmp_path / "cache"), lambda *_: None), SHARED)
    for side, net in (("a", mavp), ("b", mav)):
        fig = heldout.split_figures(net, held)
        assert rep["action_accuracy"][side] == pytest.approx(fig["action_accuracy"])
        assert rep["kendall_tau"][side] == pytest.approx(fig["kendall_tau"])
        assert rep["val_loss"][side] == pytest.approx(fig["val_loss"], rel=1e-5)
        assert rep["positions"] == fig["val_positions"] > 0
    # only the candidate has a policy head: no paired head accuracies
    assert rep["blend_accuracy"] is None and rep["policy_accuracy"] is None
    acc = rep["action_accuracy"]
    assert acc["diff"] == pytest.approx((acc["a_only"] - acc["b_only"]) / rep["positions"])
    # the loss split by label file: one entry per file of the split, whose means weighted by each file's held-out
    # rows give the pooled figures
    by_file = rep["val_loss_by_file"]
    names = [os.path.basename(f) for f in held.ds.files]
    assert sorted(by_file) == sorted(names) and len(by_file) == 2
    src = held.ds.source[held.row_pos[held.val_rows]]
    for side in ("a", "b", "diff"):
        pooled = sum(by_file[n][side] * np.sum(src == i) for i, n in enumerate(names)) / len(held.val_rows)
        assert pooled == pytest.approx(rep["val_loss"][side], rel=1e-6), side
        assert by_file[names[0]][side] != pytest.approx(by_file[names[1]][side]), side


def test_a_net_against_itself_differs_nowhere(tiny_nets, tmp_path):
    mavp, _ = tiny_nets
    out = tmp_path / "self.json"
    assert heldout_pair.main(["--a", mavp, "--b", mavp, "--json", str(out), "--shared", SHARED,
                              "--cache-dir", str(tmp_path / "cache"), "--positions-per-run", "7"]) == 0
    rep = json.loads(out.read_text())
    for k in ("action_accuracy", "blend_accuracy", "policy_accuracy"):
        assert rep[k]["a_only"] == rep[k]["b_only"] == 0 and rep[k]["p_mcnemar"] == 1.0, k
    assert rep["kendall_tau"]["diff"] == pytest.approx(0, abs=1e-12)
    assert rep["val_loss"]["diff"] == pytest.approx(0, abs=1e-12)
    assert all(m["diff"] == pytest.approx(0, abs=1e-12) for m in rep["val_loss_by_file"].values())
    assert rep["a_positions_per_run"] == rep["b_positions_per_run"] == 7


def test_missing_net_and_bad_positions_per_run_are_refused(tiny_nets, tmp_path):
    mavp, _ = tiny_nets
    for extra in (["--a", str(tmp_path / "none.onnx"), "--b", mavp], ["--a", mavp, "--b", mavp, "--positions-per-run", "0"]):
        with pytest.raises(SystemExit):
            heldout_pair.main([*extra, "--json", str(tmp_path / "x.json"), "--shared", SHARED])
    assert not (tmp_path / "x.json").exists()
