"""The generated tables (``make docs``, checked by ``make test-docs``) and the bench recorder's parser."""

from __future__ import annotations

import json
from pathlib import Path

from glimpse_tools import bench_results as br
from glimpse_tools import docs_tables as dt

BENCH_REPORT = """Glimpse bench: 30 positions
Positions            : 30
Repetitions          : 3
Median ms per move   : 47.10
Positions/s          : 21.2
Evaluations/s        : 570
Bench signature      : 806-00ff00ff00ff00ff

Total time (ms) : 4200
Nodes/second    : 570
"""
MCTS_REPORT = "Playouts (nodes)     : 12000\nNodes/s              : 569.4\nBench signature      : mcts400-0123456789abcdef\n"


def heldout(net: str, acc: float) -> dict:
    return {"net": net + ".onnx", "date": "2026-11-27", "command": f"make heldout NET=weights/{net}.onnx",
            "action_accuracy": acc, "kendall_tau": 0.56, "val_loss": 1.9, "policy_accuracy": 0.41,
            "blend_accuracy": None, "puzzles": 300, "puzzle_accuracy": 0.413, "val_positions": 5761}


def make_repo(tmp_path: Path) -> Path:
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "DEFAULT").write_text("net-int8.onnx\n")
    res = tmp_path / "tools" / "results"
    for sub in ("heldout", "bench", "ladder", "sprt", "scaling"):
        (res / sub).mkdir(parents=True)
    (res / "heldout" / "net-int8.json").write_text(json.dumps(heldout("net-int8", 0.4176)))
    (res / "heldout" / "net.json").write_text(json.dumps(heldout("net", 0.4197)))
    for name, ms in (("net-int8", "47.10"), ("net", "81.00")):
        b = {"net": name + ".onnx", "bytes": 3_900_000, "date": "2026-11-27", "cpu": "Test CPU", "cores": 2,
             "command": "make bench-results", "mcts_nodes": 400,
             "searchless": br.parse_report(BENCH_REPORT.replace("47.10", ms)), "mcts": br.parse_report(MCTS_REPORT)}
        (res / "bench" / f"{name}.json").write_text(json.dumps(b))
    rows = [{"label": "skill 0", "games": 4, "wins": 3, "draws": 1, "losses": 0, "score": 0.875},
            {"label": "UCI_Elo 1500", "games": 4, "wins": 1, "draws": 0, "losses": 3, "score": 0.25}]
    mode = {"estimate": {"elo": 1365.4, "low": 1089.7, "high": 1640.1, "se": 140.0}, "rows": rows}
    (res / "ladder" / "ladder.json").write_text(json.dumps({
        "date": "2026-11-27", "time_control": "10+0.1", "games_per_opponent": 4, "net": "<embedded>",
        "modes": {"searchless": mode, "mcts": mode},
        "mcts_minus_searchless": {"elo": 177.4, "low": -176.1, "high": 530.9, "se": 180.0}}))
    (res / "sprt" / "net-int8.json").write_text(json.dumps({
        "candidate": "net-int8.onnx", "baseline": "old-int8.onnx", "started": "2026-11-26T20:00:00",
        "command": "make sprt-candidate", "time_control": {"text": "10+0.1"}, "games": 645, "wins": 365,
        "draws": 23, "losses": 257, "score": 0.5837, "elo": 58.7, "elo_low": 32.3, "elo_high": 85.8,
        "sprt": {"elo0": 0, "elo1": 10, "alpha": 0.05, "beta": 0.05, "llr": 2.95, "state": "H1 accepted"}}))
    for name, opts, points in (("mcts", {"SearchMode": "mcts"}, [(64, 12, 2, 6), (1, 9, 1, 10)]),
                               ("searchless", {"SearchMode": "searchless"}, [(1, 10, 2, 8)])):
        rows = [{"playouts": n, "games": w + d + l, "wins": w, "draws": d, "losses": l,
                 "score": (w + d / 2) / (w + d + l), "elo": 10.0 * (w - l), "elo_low": 10.0 * (w - l) - 150,
                 "elo_high": None, "a_ms_per_move": 3.0 * n} for n, w, d, l in points]
        rows.append({"playouts": 256, "games": 0})  # an interrupted run's empty point
        (res / "scaling" / f"{name}-n1.json").write_text(json.dumps({"games": 1, "wins": 1}))  # a match file
        (res / "scaling" / f"{name}.json").write_text(json.dumps({
            "engine_a_spec": {"options": opts}, "engine_b_spec": {"options": {"UCI_Elo": "1500"}},
            "engines": {"B": {"label": "Stockfish 15.1"}}, "started": "20261128-023000",
            "command": f"python -m glimpse_tools.scaling --x {name}", "rows": rows}))
    return tmp_path


def block(name: str, body: str = "") -> str:
    return f"<!-- BEGIN GENERATED {name} (make docs) -->\n{body}<!-- END GENERATED {name} -->"


def test_bench_report_lines_are_parsed():
    rep = br.parse_report(BENCH_REPORT)
    assert rep["Median ms per move"] == "47.10" and rep["Bench signature"] == "806-00ff00ff00ff00ff"
    assert rep["Nodes/second"] == "570" and "Glimpse bench" not in " ".join(rep)
    assert br.number("119.6 ms") == 119.6 and br.number("none") is None


def test_every_block_renders_its_results(tmp_path):
    r = dt.Results(make_repo(tmp_path))
    text = "intro\n" + "\n".join(block(n) for n in dt.BLOCKS) + "\noutro\n"
    new, problems = dt.fill(text, r)
    assert problems == []
    assert new.startswith("intro\n") and new.endswith("\noutro\n")
    assert "**1365** (95 % 1090–1640), 8 games" in new  # the ladder's fit and its games
    assert "+177 Elo (95 % −176 … +531)" in new
    assert "41.76 %" in new and "41.97 %" in new and "41.3 %" in new  # held-out int8, float, puzzles
    assert "`806-00ff00ff00ff00ff`" in new and "47.10 ms" in new and "81.00 ms" in new and "569.4" in new
    assert "**H1 accepted** after 645 games, LLR 2.95" in new and "Elo **+59** (95 % +32 … +86)" in new
    assert "+3 =1 −0 (88 %)" in new  # a ladder row
    # Scaling: searchless first, then MCTS by playouts; Elo on the opponent's UCI_Elo scale; no empty point.
    lines = [ln for ln in new.splitlines() if ln.startswith(("| searchless |", "| MCTS, "))]
    assert [ln.split(" | ")[0] for ln in lines] == ["| searchless", "| MCTS, 1 playout a move",
                                                    "| MCTS, 64 playouts a move"]
    assert "| +12 =2 −6 (65 %) | +60 | 1560 | 192 |" in lines[2]  # an open interval end gives no interval
    assert "−10 (95 % −160 … +0)" not in new and "| −10 | 1490 | 3 |" in lines[1]
    assert "`python -m glimpse_tools.scaling --x mcts` (2026-11-28)" in new
    # Writing twice changes nothing.
    assert dt.fill(new, r) == (new, [])


def test_a_pooled_sprt_names_its_runs_seeds_and_the_pooled_verdict(tmp_path):
    repo = make_repo(tmp_path)
    runs = [{"file": "a.json", "seed": 7, "started": "2026-11-27T09:00:00", "games": 400, "wins": 210, "draws": 20,
             "losses": 170, "llr": 1.2, "command": "make sprt-candidate SEED=7"},
            {"file": "b.json", "seed": 8, "started": "2026-11-26T21:00:00", "games": 600, "wins": 320, "draws": 30,
             "losses": 250, "llr": 1.8, "command": "make sprt-candidate SEED=8"}]
    (repo / "tools" / "results" / "sprt" / "net-int8.json").write_text(json.dumps({
        "runs": runs, "sprt": {"elo0": 0, "elo1": 10, "alpha": 0.05, "beta": 0.05}, "games": 1000, "wins": 530,
        "draws": 50, "losses": 420, "score": 0.555, "elo": 38.4, "elo_low": 16.0, "elo_high": 61.0, "llr": 3.01,
        "verdict": "H1 accepted", "candidate": "net-int8.onnx", "baseline": "old-int8.onnx",
        "time_control": {"text": "clock 10+0.1 s"}, "command": "glimpse-sprt-pool a.json b.json",
        "first_crossing_games": 960}))
    body = dt.sprt(dt.Results(repo))
    assert "pooled over 2 runs (seeds 7, 8), 2026-11-26" in body  # the earlier run's date
    assert "**H1 accepted** after 1000 games (the LLR first passed the bound at game 960), LLR 3.01" in body
    assert "Elo **+38** (95 % +16 … +61)" in body
    assert ("Commands: `make sprt-candidate SEED=7`, then `make sprt-candidate SEED=8`; pooled: "
            "`glimpse-sprt-pool a.json b.json`.") in body


def test_check_reports_a_stale_table_and_write_fixes_it(tmp_path, capsys):
    repo = make_repo(tmp_path)
    doc = repo / "README.md"
    doc.write_text("# x\n\n" + block("strength", "| stale |\n") + "\n")
    assert dt.main(["--repo", str(repo), "--check", str(doc)]) == 1
    assert "README.md:3: generated block 'strength' differs" in capsys.readouterr().err
    assert dt.main(["--repo", str(repo), "--write", str(doc)]) == 0
    assert dt.main(["--repo", str(repo), "--check", str(doc)]) == 0
    # A new result makes the table stale again.
    p = repo / "tools" / "results" / "heldout" / "net-int8.json"
    p.write_text(json.dumps(heldout("net-int8", 0.43)))
    assert dt.main(["--repo", str(repo), "--check", str(doc)]) == 1


def test_unknown_blocks_and_missing_results_are_reported(tmp_path):
    repo = make_repo(tmp_path)
    (repo / "tools" / "results" / "sprt" / "net-int8.json").unlink()
    text = block("nonsense") + "\n" + block("sprt") + "\n"
    new, problems = dt.fill(text, dt.Results(repo))
    assert new == text
    assert any("unknown generated block 'nonsense'" in p for p in problems)
    assert any("sprt/net-int8.json is missing" in p for p in problems)


def test_the_ladder_command_repeats_its_games_net_and_seed():
    cmd = "python -m glimpse_tools.ladder --games 16 --out tools/results/ladder --book b.epd --seed 97"
    assert dt.ladder_command({"games_per_opponent": 16, "net": "<embedded>", "command": cmd}) == \
        "`make ladder LADDER_GAMES=16 LADDER_ARGS='--seed 97'`"
    assert dt.ladder_command({"games_per_opponent": 4, "net": "x.onnx"}) == "`make ladder LADDER_GAMES=4 NET=x.onnx`"


def test_the_ladder_command_keeps_modes_rungs_and_a_further_output_folder():
    cmd = ("python -m glimpse_tools.ladder --games 100 --out tools/results/ladder-mcts-1900 --book /x/b.epd "
           "--modes mcts --elos 1900 --levels --seed 99")
    assert dt.ladder_command({"games_per_opponent": 100, "net": "<embedded>", "command": cmd}) == \
        ("`make ladder LADDER_GAMES=100 LADDER_ARGS='--modes mcts --elos 1900 --levels --seed 99' "
         "LADDER_OUT=tools/results/ladder-mcts-1900`")


def test_a_further_ladder_run_gets_one_line_under_the_ladder_table(tmp_path):
    repo = make_repo(tmp_path)
    r = dt.Results(repo)
    assert dt.ladder(r).endswith("|\n")  # no further run: the table alone
    extra = repo / "tools" / "results" / "ladder-mcts-1900"
    extra.mkdir()
    row = {"label": "UCI_Elo 1900", "games": 100, "wins": 40, "draws": 20, "losses": 40, "score": 0.5}
    (extra / "ladder.json").write_text(json.dumps({
        "date": "2026-11-28", "time_control": "10+0.1", "games_per_opponent": 100, "net": "<embedded>",
        "command": "python -m glimpse_tools.ladder --games 100 --out tools/results/ladder-mcts-1900 --modes mcts",
        "modes": {"mcts": {"estimate": {"elo": 1900.0, "low": 1830.4, "high": 1969.6, "se": 35.5}, "rows": [row]}}}))
    last = dt.ladder(r).splitlines()[-1]
    assert last.startswith("- 2026-11-28, 10+0.1, 100 games an opponent: MCTS +40 =20 −40 (50 %) against "
                           "`UCI_Elo` 1900, fitted Elo **1900** (95 % 1830–1970); `make ladder LADDER_GAMES=100 "
                           "LADDER_ARGS='--modes mcts' LADDER_OUT=tools/results/ladder-mcts-1900`")
    assert last.endswith("(`tools/results/ladder-mcts-1900/`).")


def test_a_ladder_names_the_speed_of_its_machine_when_it_recorded_one():
    assert dt.ladder_machine({}) == ""
    assert dt.ladder_machine({"bench": None}) == ""
    got = dt.ladder_machine({"bench": {"evaluations_per_s": 281.6, "vnni": False}})
    assert got == ", on a machine at 282 evaluations/s (searchless `glimpse bench`, no VNNI)"
    assert dt.ladder_machine({"bench": {"evaluations_per_s": 607.0, "vnni": None}}).endswith("`glimpse bench`)")
