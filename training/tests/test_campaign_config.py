"""Tests of the campaign's settings and clocks (``campaign_config``) and its command line. Run with
``make test-campaign`` (pytest, from training/)."""

from __future__ import annotations

import time

import pytest

from glimpse_train import campaign


def test_parse_mix():
    assert campaign.parse_mix("selfplay:1,popular:3") == {"selfplay": 0.25, "popular": 0.75}
    with pytest.raises(ValueError):
        campaign.parse_mix("twic:1")


def test_decay_scale_is_stable_then_linear_to_the_floor():
    T = 1200.0
    assert campaign.decay_scale(0, T, 0.25, 0.05) == 1.0
    assert campaign.decay_scale(900, T, 0.25, 0.05) == 1.0  # the decay starts at 75 % of the phase
    assert campaign.decay_scale(1050, T, 0.25, 0.05) == pytest.approx(0.525)
    assert campaign.decay_scale(1200, T, 0.25, 0.05) == pytest.approx(0.05)
    assert campaign.decay_scale(5000, T, 0.25, 0.05) == pytest.approx(0.05)  # a late last step stays at the floor
    assert campaign.decay_scale(1199, T, 0.0, 0.05) == 1.0  # decay_frac 0: the old constant schedule
    xs = [campaign.decay_scale(t, T, 0.5, 0.0) for t in range(0, 1300, 50)]
    assert all(a >= b for a, b in zip(xs, xs[1:]))


def test_phase_clock_counts_cpu_time_not_paused_wall_time():
    now = {"cpu": 100.0, "wall": 5000.0}
    clock = campaign.PhaseClock(600, cores=2, wall_cap=2.0, cpu=lambda: now["cpu"], wall=lambda: now["wall"])
    now["wall"] += 900  # 15 minutes paused or starved: no CPU used
    assert clock.elapsed() == 0 and not clock.done()
    now["cpu"] += 2 * 599  # both cores busy for 599 s
    assert clock.elapsed() == pytest.approx(599) and not clock.done()
    now["cpu"] += 2
    assert clock.done()
    idle = campaign.PhaseClock(600, cores=2, wall_cap=2.0, cpu=lambda: now["cpu"], wall=lambda: now["wall"])
    now["wall"] += 1200  # a trainer that uses no CPU (GPU) still ends at the wall cap
    assert idle.done()


def test_pause_clock_leaves_out_a_stop_longer_than_its_gap():
    now = [100.0]
    clock = campaign.PauseClock(tick=1.0, gap=30.0, now=lambda: now[0])
    now[0] += 1.0
    clock.observe()
    now[0] += 20.0  # a slow wake-up under load, shorter than the gap: still running time
    clock.observe()
    assert clock.paused == 0.0
    now[0] += 600.0  # stopped for 600 s: all but one tick is left out
    clock.observe()
    assert clock.paused == 599.0
    assert clock() == now[0] - 599.0
    now[0] += 900.0  # not started: a reading does not observe, so nothing more is counted
    assert clock() == now[0] - 599.0
    fresh = campaign.PauseClock(tick=1.0, gap=30.0, now=lambda: now[0])
    now[0] += 120.0  # made long before it is started: that time ran
    assert fresh.start()() == now[0] and fresh.paused == 0.0


_STOPPED = """
import sys, time
sys.path.insert(0, {root!r})
from glimpse_train.campaign_config import PauseClock
clock = PauseClock(tick=0.05, gap=0.5).start()
t0 = clock()
print("ready", flush=True)
time.sleep(4.0)
print(round(clock.paused, 2), round(clock() - t0, 2), flush=True)
"""


def test_pause_clock_leaves_out_a_real_sigstop():
    """A process stopped for 2 s by SIGSTOP during a 4 s sleep and resumed by SIGCONT: its clock counts the
    2 s as paused and the rest of the sleep as running."""
    import os
    import signal
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.Popen([sys.executable, "-c", _STOPPED.format(root=root)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(2.0)
        os.kill(p.pid, signal.SIGCONT)
        paused, ran = map(float, p.stdout.readline().split())
    finally:
        p.kill()
        p.wait()
    assert 1.5 < paused < 2.5, paused
    assert 3.9 < ran + paused < 4.8, (ran, paused)  # the 4 s sleep, the stop inside it


def test_a_shard_waits_for_enough_positions_but_not_for_ever():
    c = campaign.CampaignConfig(shard_minutes=3.0, shard_min_positions=500, shard_max_minutes=15.0)
    assert not campaign.shard_due(0, 10_000.0, c)  # nothing to write
    assert not campaign.shard_due(499, 181.0, c)  # due by the clock, too few positions
    assert campaign.shard_due(500, 181.0, c)
    assert not campaign.shard_due(5_000, 179.0, c)  # enough positions, too soon
    assert not campaign.shard_due(20, 899.0, c)
    assert campaign.shard_due(20, 901.0, c)  # a slow phase still writes every 15 minutes


def test_dagger_opponents_are_skill_levels_or_uci_elo():
    assert campaign.dagger_opponent(0) == ("stockfish:Skill Level=0", "Skill Level 0")
    assert campaign.dagger_opponent(1700) == ("stockfish:UCI_LimitStrength=true,UCI_Elo=1700", "UCI_Elo 1700")
    for bad in (-1, 21, 1349, 2851):
        with pytest.raises(ValueError):
            campaign.dagger_opponent(bad)
    for level in campaign.CampaignConfig().dagger_levels.split(","):
        assert "UCI_Elo" in campaign.dagger_opponent(int(level))[0], "the default ladder is UCI_Elo, not Skill"
    with pytest.raises(SystemExit):
        campaign.parse_args(["--dagger-levels", "0,3000"])


def test_a_cpu_only_machine_labels_and_does_not_train():
    cfg = campaign.CampaignConfig()
    assert not campaign.train_wanted(cfg, None), "no GPU, no --train-cpu: labels only"
    assert campaign.train_wanted(cfg, "gpu")
    assert campaign.train_wanted(dataclasses_replace(cfg, train_cpu=True), None)
    assert not campaign.train_wanted(dataclasses_replace(cfg, train_cpu=True, train_minutes=0), None)
    assert campaign.gpu_backend() is None, "these tests run on the CPU build of JAX"


def dataclasses_replace(cfg, **kw):
    import dataclasses

    return dataclasses.replace(cfg, **kw)


def test_train_cpu_is_a_flag():
    assert campaign.parse_args(["--train-cpu"])[1].train_cpu is True
    assert campaign.parse_args([])[1].train_cpu is False
    assert campaign.parse_args(["--dagger-levels", "0,1500"])[1].dagger_levels == "0,1500"


def test_the_train_backend_is_torch_only_on_a_bf16_cpu_with_pytorch(monkeypatch):
    from glimpse_train import campaign_config, torch_step

    pick = campaign_config.train_backend
    assert campaign.parse_args(["--train-backend", "torch"])[1].train_backend == "torch"
    assert campaign.parse_args([])[1].train_backend == "auto"
    for bf16 in (True, False):
        for have in (True, False):
            monkeypatch.setattr(torch_step, "cpu_bf16", lambda: bf16)
            monkeypatch.setattr(torch_step, "torch_available", lambda: have)
            assert pick("auto", None) == ("torch" if bf16 and have else "jax"), (bf16, have)
            assert pick("auto", "gpu") == "jax", "an accelerator trains with JAX"
            assert pick("jax", None) == "jax"
            if have:
                assert pick("torch", None) == "torch"
            else:
                with pytest.raises(ImportError, match="torch-setup"):
                    pick("torch", None)
    with pytest.raises(ValueError, match="auto, jax or torch"):
        pick("tpu", None)


def test_cpu_bf16_reads_the_amx_and_avx512_bf16_flags(tmp_path):
    from glimpse_train.torch_step import cpu_bf16

    def info(flags: str) -> str:
        p = tmp_path / f"cpuinfo-{len(list(tmp_path.iterdir()))}"
        p.write_text(f"processor\t: 0\nflags\t\t: fpu sse2 avx2 {flags}\n")
        return str(p)

    assert cpu_bf16(info("avx512f amx_bf16 amx_tile"))  # Xeon (Sapphire Rapids)
    assert cpu_bf16(info("avx512f avx512_vnni avx512_bf16"))  # AMD Zen 4/5
    assert not cpu_bf16(info("avx512f avx512_vnni"))  # AVX-512 without BF16
    assert not cpu_bf16(info("avx512_bf16x"))  # whole words only
    assert not cpu_bf16(str(tmp_path / "missing"))


def test_dagger_games_cover_the_wanted_positions_in_pairs():
    from glimpse_train.campaign_config import DAGGER_PLIES_PER_GAME, dagger_games

    assert dagger_games(0, 1) == 2 and dagger_games(10, 1) == 2, "at least one opening with both colours"
    for want in (500, 7_000, 12_345):
        for every in (1, 3):
            g = dagger_games(want, every)
            assert g % 2 == 0
            # about want positions: within one pair of games of want × every / plies a game
            assert abs(g * DAGGER_PLIES_PER_GAME / every - want) <= 2 * DAGGER_PLIES_PER_GAME / every
    ten = 10 * DAGGER_PLIES_PER_GAME
    assert dagger_games(ten, 1) == 10 and dagger_games(ten, 3) == 30, "one ply in three needs three times the games"
    assert campaign.parse_args([])[1].dagger_every == 1, "every ply by default"
    assert campaign.parse_args(["--dagger-every", "3"])[1].dagger_every == 3
    with pytest.raises(SystemExit):
        campaign.parse_args(["--dagger-every", "0"])
