"""The strength and speed tables of README.md and weights/README.md, built from the results JSON
(``make docs`` writes them; ``make test-docs`` fails when a table differs from its results).

Every figure of these tables has one source, a JSON file in ``tools/results/`` written by the command that
measured it, and each table gives that command and the date:

* ``ladder/ladder.json``: ``make ladder`` (``glimpse_tools.ladder``): Elo on Stockfish 15.1's ``UCI_Elo`` scale,
  searchless and with MCTS;
* ``heldout/<net>.json``: ``make heldout`` (``glimpse_train.heldout``): held-out action accuracy, Kendall τ,
  policy-head and blend accuracy, Lichess puzzles;
* ``bench/<net>.json``: ``make bench-results`` (``glimpse_tools.bench_results``): ``glimpse bench``, searchless
  and MCTS;
* ``scaling/*.json``: ``make scaling`` (``glimpse_tools.scaling``) against one Stockfish ``UCI_Elo`` level:
  the shipped net searchless and with MCTS at N playouts a move;
* ``sprt/<net>.json``: ``make sprt-candidate OUT=tools/results/sprt/<net>`` (``tools/match.py``): the SPRT that
  made the net the default.

``<net>`` is the shipped net (the file named by ``weights/DEFAULT``) or its float32 source (the same name
without ``-int8``). A table sits in a Markdown file between two markers::

    <!-- BEGIN GENERATED NAME (make docs) -->
    ...
    <!-- END GENERATED NAME -->

with NAME one of :data:`BLOCKS`. Usage: ``python -m glimpse_tools.docs_tables --repo . --write FILE...``
(``--check`` instead of ``--write`` prints each differing block and exits 1).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

#: A generated block: its name (group 1) and its current body (group 2).
BLOCK = re.compile(r"<!-- BEGIN GENERATED ([a-z0-9_-]+) \(make docs\) -->\n(.*?)<!-- END GENERATED \1 -->",
                   re.DOTALL)


@dataclass
class Results:
    """The results folder of a repository and the names of the shipped net and its float32 source."""

    repo: Path

    @property
    def folder(self) -> Path:
        return self.repo / "tools" / "results"

    @property
    def default(self) -> str:
        """File name of the shipped net (``weights/DEFAULT``), without ``.onnx``."""
        return (self.repo / "weights" / "DEFAULT").read_text().strip().removesuffix(".onnx")

    @property
    def source(self) -> str:
        """File name of the shipped net's float32 source, without ``.onnx``."""
        return self.default.removesuffix("-int8")

    def load(self, *parts: str) -> dict:
        """The JSON at ``tools/results/<parts>``. Raises ``FileNotFoundError`` naming the command to run."""
        path = self.folder.joinpath(*parts)
        if not path.exists():
            raise FileNotFoundError(f"{path.relative_to(self.repo)} is missing: run the command that writes it "
                                    f"(tools/docs_tables.py names it)")
        return json.loads(path.read_text())


def pct(x: float | None, digits: int = 1) -> str:
    """``0.4176`` → ``41.8 %``; ``—`` for ``None``."""
    return "—" if x is None else f"{100 * x:.{digits}f} %"


def signed(x: float) -> str:
    """``177.4`` → ``+177``, ``-3.2`` → ``−3`` (a minus sign)."""
    return f"{x:+.0f}".replace("-", "−")


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


#: The ladder's flags that `make ladder` sets itself (`--out` from ``LADDER_OUT``, `--net` from ``NET``).
LADDER_MAKE_FLAGS = ("--games", "--out", "--book", "--net", "--engine")


def ladder_command(lad: dict) -> str:
    """The `make ladder` line that repeats a ladder: its games, net, output folder (when not the default) and
    the other flags of the recorded command (seed, modes, levels) as ``LADDER_ARGS``."""
    net = lad.get("net") or "<embedded>"
    argv = shlex.split(lad.get("command") or "")[3:]  # after `python -m glimpse_tools.ladder`
    extra, out, i = [], None, 0
    while i < len(argv):
        if argv[i] in LADDER_MAKE_FLAGS and i + 1 < len(argv):
            out = argv[i + 1] if argv[i] == "--out" else out
            i += 2
            continue
        extra.append(argv[i])
        i += 1
    return (f"`make ladder LADDER_GAMES={lad['games_per_opponent']}" + ("" if net == "<embedded>" else f" NET={net}")
            + (f" LADDER_ARGS='{' '.join(extra)}'" if extra else "")
            + (f" LADDER_OUT={out}" if out and out.rstrip("/") != "tools/results/ladder" else "") + "`")


def heldout_command(rep: dict) -> str:
    return f"`{rep.get('command') or 'make heldout'}`"


def ladder_elo(mode: dict) -> str:
    e = mode["estimate"]
    return f"**{e['elo']:.0f}** (95 % {e['low']:.0f}–{e['high']:.0f})"


def games(mode: dict) -> int:
    return sum(r["games"] for r in mode["rows"])


def strength(r: Results) -> str:
    """README's summary: the ladder's Elo both modes, puzzles and held-out accuracy of the shipped net."""
    lad, held = r.load("ladder", "ladder.json"), r.load("heldout", r.default + ".json")
    d = lad["mcts_minus_searchless"]
    rows = [[f"Elo on Stockfish 15.1's `UCI_Elo` scale, searchless ({lad['time_control']})",
             f"{ladder_elo(lad['modes']['searchless'])}, {games(lad['modes']['searchless'])} games", lad["date"],
             ladder_command(lad)],
            [f"Elo on the same scale, MCTS ({lad['time_control']})",
             f"{ladder_elo(lad['modes']['mcts'])}, {games(lad['modes']['mcts'])} games", lad["date"],
             ladder_command(lad)],
            ["MCTS − searchless", f"{signed(d['elo'])} Elo (95 % {signed(d['low'])} … {signed(d['high'])})",
             lad["date"], ladder_command(lad)],
            [f"Lichess puzzles solved, whole line, first {held['puzzles']} (searchless Q)",
             pct(held["puzzle_accuracy"]), held["date"], heldout_command(held)],
            [f"held-out action accuracy ({held['val_positions']:,} positions)", pct(held["action_accuracy"], 2),
             held["date"], heldout_command(held)]]
    return f"Shipped net: `{r.default}.onnx`.\n\n" + table(["measure", "value", "date", "command"], rows)


def bench_figures(b: dict) -> tuple[str, str, str, str, str]:
    """Signature, ms per move, evaluations/s, MCTS nodes/s and MCTS signature of one bench record."""
    s, m = b["searchless"], b["mcts"]
    ms = s.get("Median ms per move", "—")
    return (s.get("Bench signature", "—"), ms if ms == "—" else f"{ms} ms", s.get("Evaluations/s", "—"),
            m.get("Nodes/s", "—"), m.get("Bench signature", "—"))


def vnni_word(vnni: bool | None) -> str:
    """``VNNI``, ``no VNNI`` or nothing (not recorded), for a results file's ``vnni`` flag."""
    return {True: "VNNI", False: "no VNNI"}.get(vnni, "")


def bench(r: Results) -> str:
    """README's speed table: ``glimpse bench`` and ``glimpse bench --mcts`` on the shipped net."""
    b = r.load("bench", r.default + ".json")
    sig, ms, evals, nps, msig = bench_figures(b)
    rows = [["`glimpse bench` signature", f"`{sig}`"], ["median per move (searchless)", ms],
            ["evaluations/s (searchless)", evals], [f"MCTS nodes/s ({b['mcts_nodes']} playouts a position)", nps],
            [f"`glimpse bench --mcts --nodes {b['mcts_nodes']}` signature", f"`{msig}`"]]
    vnni = f" ({vnni_word(b.get('vnni'))})" if vnni_word(b.get("vnni")) else ""
    return (f"`{b['net']}`, {b['date']}, {b['cpu']}{vnni}, {b['cores']} cores, idle; `{b['command']}`.\n\n"
            + table(["bench", "value"], rows))


def heldout(r: Results) -> str:
    """The model card's held-out table: the shipped net and its float32 source."""
    reps = [r.load("heldout", n + ".json") for n in (r.default, r.source)]
    rows = [["action accuracy, argmax Q", *[pct(x["action_accuracy"], 2) for x in reps]],
            ["policy head's argmax", *[pct(x.get("policy_accuracy"), 2) for x in reps]],
            ["`MoveChoice blend` (Q + 0.05 · ln P)", *[pct(x.get("blend_accuracy"), 2) for x in reps]],
            ["Kendall τ-b", *[f"{x['kendall_tau']:.3f}" for x in reps]],
            ["bucket cross-entropy (nats)", *[f"{x['val_loss']:.3f}" for x in reps]],
            [f"Lichess puzzles, whole line, first {reps[0]['puzzles']}", *[pct(x["puzzle_accuracy"]) for x in reps]],
            ["held-out positions", *[f"{x['val_positions']:,}" for x in reps]]]
    return (", ".join(f"{heldout_command(x)} ({x['date']})" for x in reps) + ".\n\n"
            + table(["metric", *[f"`{x['net']}`" for x in reps]], rows))


def ladder_machine(lad: dict) -> str:
    """``, on a machine at N evaluations/s (`glimpse bench`, VNNI …)`` from a ladder's ``bench`` record, or
    nothing for a ladder that has none: the fit depends on the machine's speed."""
    b = lad.get("bench") or {}
    if not b.get("evaluations_per_s"):
        return ""
    vnni = f", {vnni_word(b.get('vnni'))}" if vnni_word(b.get("vnni")) else ""
    return f", on a machine at {b['evaluations_per_s']:.0f} evaluations/s (searchless `glimpse bench`{vnni})"


def ladder_record(row: dict) -> str:
    """One ladder rung's games as ``+W =D −L (score %)``."""
    return f"+{row['wins']} ={row['draws']} −{row['losses']} ({pct(row['score'], 0)})"


def ladder(r: Results) -> str:
    """The model card's ladder: per opponent W/D/L and score, both modes, and the fitted Elo."""
    lad = r.load("ladder", "ladder.json")
    modes = lad["modes"]
    labels = [row["label"] for row in modes["searchless"]["rows"]]
    rows = []
    for label in labels:
        cells = [label]
        for m in ("searchless", "mcts"):
            row = next((x for x in modes[m]["rows"] if x["label"] == label), None)
            cells.append("—" if row is None else ladder_record(row))
        rows.append(cells)
    rows.append(["**fitted Elo**", ladder_elo(modes["searchless"]), ladder_elo(modes["mcts"])])
    return (f"{lad['date']}, {lad['time_control']}, {lad['games_per_opponent']} games an opponent, paired openings, "
            f"Stockfish 15.1 `Threads 1`{ladder_machine(lad)}; {ladder_command(lad)} (`tools/results/ladder/`).\n\n"
            + table(["opponent (Stockfish 15.1)", "searchless", "MCTS"], rows) + ladder_runs(r))


def ladder_runs(r: Results) -> str:
    """One line per further ladder run (``tools/results/ladder-*/ladder.json``: a longer run of some modes and
    rungs, e.g. the games a done-when asks for): each mode's rows and fitted Elo, the date and the command."""
    lines = []
    for path in sorted(r.folder.glob("ladder-*/ladder.json")):
        lad = json.loads(path.read_text())
        parts = []
        for name, mode in lad["modes"].items():
            rows = ", ".join(f"{ladder_record(x)} against {x['label'].replace('UCI_Elo', '`UCI_Elo`')}"
                             for x in mode["rows"])
            parts.append(f"{'MCTS' if name == 'mcts' else name} {rows}, fitted Elo {ladder_elo(mode)}")
        lines.append(f"- {lad['date']}, {lad['time_control']}, {lad['games_per_opponent']} games an opponent"
                     f"{ladder_machine(lad)}: "
                     f"{'; '.join(parts)}; {ladder_command(lad)} (`{path.parent.relative_to(r.repo)}/`).")
    return ("\n" + "\n".join(lines) + "\n") if lines else ""


def sprt(r: Results) -> str:
    """The model card's record of the SPRT that made the shipped net the default (one paragraph; the JSON's
    ``note`` says which file played, for the card's prose to explain). The record is one ``glimpse-match``
    result, or the ``glimpse-sprt-pool --json`` pool of several runs (``runs``: each with its seed), to which
    the shipper adds ``candidate``, ``baseline``, ``mode``, ``time_control``, ``command`` (the pooling), each run's
    ``command`` and, where the pool was checked now and then, ``first_crossing_games``."""
    s = r.load("sprt", r.default + ".json")
    sp = s["sprt"]
    runs = s.get("runs")
    command = f"Command: `{s['command']}`"
    if runs:
        seeds = ", ".join(str(x.get("seed", "—")) for x in runs)
        played = f"pooled over {len(runs)} runs (seeds {seeds})"
        started = min(x.get("started") or s["started"] for x in runs)
        if all(x.get("command") for x in runs):
            each = ", then ".join("`" + x["command"] + "`" for x in runs)
            command = f"Commands: {each}; pooled: `{s['command']}`"
    else:
        played, started = f"seed {s.get('seed', '—')}", s["started"]
    state, llr = sp.get("state") or s.get("verdict"), sp.get("llr", s.get("llr"))
    crossing = s.get("first_crossing_games")  # where a pool checked now and then first passed the bound
    crossed = f" (the LLR first passed the bound at game {crossing})" if crossing else ""
    return (f"`{s['candidate']}` against `{s['baseline']}`, {s.get('mode', 'searchless')}, SPRT({sp['elo0']:g}, "
            f"{sp['elo1']:g}) with α = β = {sp['alpha']:g} at {s['time_control']['text']}, concurrency "
            f"{s.get('concurrency', 2)}, {played}, {started[:10]}: **{state}** after "
            f"{s['games']} games{crossed}, LLR {llr:.2f}; +{s['wins']} ={s['draws']} −{s['losses']} "
            f"({pct(s['score'])}), Elo **{signed(s['elo'])}** "
            f"(95 % {signed(s['elo_low'])} … {signed(s['elo_high'])}). {command}.\n")


def int8(r: Results) -> str:
    """The model card's int8 table: the shipped twin against its float32 source (size, accuracy, speed)."""
    names = (r.source, r.default)
    held = [r.load("heldout", n + ".json") for n in names]
    ben = [r.load("bench", n + ".json") for n in names]
    figs = [bench_figures(b) for b in ben]
    rows = [["file size", *[f"{b['bytes'] / 1e6:.1f} MB" for b in ben]],
            ["held-out action accuracy", *[pct(h["action_accuracy"], 2) for h in held]],
            ["median per move (searchless bench)", *[f[1] for f in figs]],
            [f"MCTS nodes/s ({ben[0]['mcts_nodes']} playouts)", *[f[3] for f in figs]],
            ["date", *[b["date"] for b in ben]]]
    return (table(["", *[f"`{n}.onnx`" for n in names]], rows)
            + "\nCommands: `make heldout NET=weights/<file>`, `make bench-results NET=weights/<file>`.\n")


def scaling(r: Results) -> str:
    """The model card's scaling table: every point of the ``make scaling`` runs in ``scaling/`` (the searchless
    engine first, then MCTS by playouts), each against its opponent, with the Elo difference and, against a
    Stockfish ``UCI_Elo`` level, the Elo on that scale (the level plus the difference)."""
    docs = [json.loads(p.read_text()) for p in sorted((r.folder / "scaling").glob("*.json"))]
    docs = [d for d in docs if "engine_a_spec" in d]  # not the per-N match files beside them
    if not docs:
        raise FileNotFoundError("tools/results/scaling/*.json is missing: run make scaling (tools/README.md)")
    points, commands = [], []
    for doc in docs:
        mcts = doc["engine_a_spec"]["options"].get("SearchMode", "").lower() == "mcts"
        opp = doc["engine_b_spec"]["options"]
        level = float(opp["UCI_Elo"]) if "UCI_Elo" in opp else None
        against = f"`UCI_Elo {opp['UCI_Elo']}`" if level is not None else doc["engines"]["B"]["label"]
        commands.append(f"`{doc['command']}` ({doc['started'][:4]}-{doc['started'][4:6]}-{doc['started'][6:8]})")
        for x in doc["rows"]:
            if not x["games"]:
                continue
            elo = x["elo"]
            diff = "—" if elo is None else (
                signed(elo) + ("" if x["elo_low"] is None or x["elo_high"] is None else
                               f" (95 % {signed(x['elo_low'])} … {signed(x['elo_high'])})"))
            points.append(((mcts, x["playouts"]), [
                f"MCTS, {x['playouts']} playout{'s' * (x['playouts'] != 1)} a move" if mcts else "searchless", against,
                f"+{x['wins']} ={x['draws']} −{x['losses']} ({pct(x['score'], 0)})", diff,
                "—" if level is None or elo is None else f"{level + elo:.0f}",
                "—" if x["a_ms_per_move"] is None else f"{x['a_ms_per_move']:.0f}"]))
    rows = [cells for _, cells in sorted(points, key=lambda p: p[0])]
    return ("Commands: " + "; ".join(commands) + ".\n\n"
            + table(["Glimpse", "opponent", "games", "Elo difference", "Elo on the scale", "ms a move"], rows))


#: Every block name and the function that renders it.
BLOCKS: dict[str, Callable[[Results], str]] = {
    "strength": strength, "bench": bench, "heldout": heldout, "ladder": ladder, "sprt": sprt, "int8": int8,
    "scaling": scaling}


def fill(text: str, r: Results) -> tuple[str, list[str]]:
    """``text`` with every generated block rendered afresh, and the problems (unknown names, missing results)."""
    problems: list[str] = []

    def one(m: re.Match) -> str:
        name = m.group(1)
        if name not in BLOCKS:
            problems.append(f"unknown generated block {name!r} (known: {', '.join(BLOCKS)})")
            return m.group(0)
        try:
            body = BLOCKS[name](r)
        except (FileNotFoundError, KeyError, ValueError) as e:
            problems.append(f"block {name!r}: {e!r}")
            return m.group(0)
        return f"<!-- BEGIN GENERATED {name} (make docs) -->\n{body}<!-- END GENERATED {name} -->"

    return BLOCK.sub(one, text), problems


def check(path: Path, r: Results) -> list[str]:
    """``file:line: ...`` for each block of ``path`` that differs from its results (or cannot be built)."""
    text = path.read_text()
    new, problems = fill(text, r)
    out = [f"{path}: {p}" for p in problems]
    if new != text:
        for m in BLOCK.finditer(text):
            fresh, _ = fill(m.group(0), r)
            if fresh != m.group(0):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{path}:{line}: generated block {m.group(1)!r} differs from tools/results "
                           f"(run `make docs`)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=".")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the blocks in place (make docs)")
    mode.add_argument("--check", action="store_true", help="exit 1 when a block differs (make test-docs)")
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args(argv)
    r = Results(Path(a.repo).resolve())
    bad: list[str] = []
    for path in a.files:
        if a.write:
            new, problems = fill(path.read_text(), r)
            bad += [f"{path}: {p}" for p in problems]
            path.write_text(new)
        else:
            bad += check(path, r)
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
