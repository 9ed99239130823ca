"""``glimpse bench`` as JSON for the results folder (``make bench-results``).

Runs the engine's own benchmark twice on one net — searchless (``glimpse bench``) and with MCTS
(``glimpse bench --mcts --nodes N``) — and keeps every ``Key : value`` line of each report (median ms per
move, evaluations/s, nodes/s, the bench signature, ...) with the net's name, size and SHA-256, the
date, the machine (CPU model, whether it has VNNI, cores) and the command. ``make docs`` builds README's
speed table and the model card's int8 table from these files (``glimpse_tools.docs_tables``).

Timings depend on the machine and its load: run it on an idle machine (stop background work first).

Usage::

    python -m glimpse_tools.bench_results --engine target/release/glimpse \\
        --weights weights/glimpse-l10d128-c58-int8.onnx --json tools/results/bench/glimpse-l10d128-c58-int8.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

#: A report line ``Key : value`` of ``glimpse bench`` (keys are padded with spaces before the colon).
LINE = re.compile(r"^([A-Za-z][A-Za-z0-9 /()%.,'-]*?)\s+:\s+(.+?)\s*$")


def parse_report(text: str) -> dict[str, str]:
    """The ``Key : value`` lines of a ``glimpse bench`` report, in order; other lines are skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out[m.group(1).strip()] = m.group(2)
    return out


def number(text: str) -> float | None:
    """The first number in ``text`` (``"119.6 ms"`` → 119.6), or ``None``."""
    m = re.search(r"-?\d+(?:\.\d+)?", text.replace(",", ""))
    return float(m.group()) if m else None


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``"unknown"`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def cpu_has_vnni(cpuinfo: str | None = None) -> bool | None:
    """Whether the CPU has an int8 dot-product instruction (``avx512_vnni`` or ``avx_vnni`` among the
    ``/proc/cpuinfo`` flags, or ``cpuinfo``'s text); ``None`` where the flags cannot be read."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), None)
    return None if flags is None else bool({"avx512_vnni", "avx_vnni"} & set(flags))


def run_bench(engine: str, args: list[str]) -> dict[str, str]:
    """Runs ``engine bench <args>`` and parses its report. Raises ``RuntimeError`` when it fails."""
    p = subprocess.run([engine, "bench", *args], capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"{engine} bench {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return parse_report(p.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", required=True)
    ap.add_argument("--weights", required=True, help="the ONNX file to bench")
    ap.add_argument("--nodes", type=int, default=400, help="MCTS playouts a position")
    ap.add_argument("--json", required=True)
    ap.add_argument("--command", default=None, help="the command to record (default: this one)")
    a = ap.parse_args(argv)
    weights = ["--weights", a.weights]
    try:
        searchless = run_bench(a.engine, weights)
        mcts = run_bench(a.engine, [*weights, "--mcts", "--nodes", str(a.nodes)])
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"bench_results: {e}", file=sys.stderr)
        return 1
    data = Path(a.weights).read_bytes()
    rep = {"net": os.path.basename(a.weights), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
           "date": time.strftime("%Y-%m-%d"), "cpu": cpu_model(), "vnni": cpu_has_vnni(), "cores": os.cpu_count(),
           "command": a.command or "python -m glimpse_tools.bench_results " + " ".join(argv or sys.argv[1:]),
           "mcts_nodes": a.nodes, "searchless": searchless, "mcts": mcts}
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(rep, indent=1) + "\n")
    print(f"JSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
