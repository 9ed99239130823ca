"""The GPU machine's bench log (``tools/device/gpu-bench.sh`` → ``gpu-bench.txt``) as JSON and a Markdown table.

The log holds a header (GPU name, driver and memory from ``nvidia-smi``; the CPU count; where TensorRT 10's
``libnvinfer`` was found, if anywhere), the engine's ``uci check:`` line (PASS or FAIL), then one section per ``glimpse bench`` run: a ``### glimpse bench ARGS``
line, the bench report, and ``(exit RC, S s wall)``. Each run becomes a record with its arguments, the backend the
engine really used (a provider that failed to load falls back, and the report's first line says so), the net's
file name, every ``Key : value`` line of the report (``glimpse_tools.bench_results.parse_report``), the batch
table (rows per run → ms, positions/s) and the exit status and wall time.

Usage::

    python -m glimpse_tools.gpu_summary gpu-bench.txt --json tools/device/results/h200-DATE.json --markdown
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from .bench_results import parse_report

HEADER = re.compile(r"^Glimpse bench: (\S+) \((\w+), (\w+) backend")
EXIT = re.compile(r"^\(exit (\d+), ([\d.]+) s wall\)")
BATCH_ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)%")


def parse_log(text: str) -> dict:
    """``gpu-bench.txt`` → ``{"gpu", "cpus", "tensorrt", "uci_check", "runs": [...]}`` (see the module doc)."""
    lines = text.splitlines()
    head: list[str] = []
    sections: list[list[str]] = []
    for line in lines:
        if line.startswith("### glimpse bench"):
            sections.append([line])
        elif sections:
            sections[-1].append(line)
        else:
            head.append(line)
    gpu = head[0].strip() if head else ""
    cpus = next((int(h) for h in head[1:] if h.strip().isdigit()), None)
    trt = next((h.split(":", 1)[1].strip() for h in head if h.startswith("libnvinfer:")), "")
    runs = []
    for sec in sections:
        # Nets by file name: the folder is the machine's scratch space.
        args = re.sub(r"\S*/(\S+\.onnx)", r"\1", sec[0][len("### glimpse bench"):].strip())
        body = "\n".join(sec[1:])
        run: dict = {"args": args, "net": None, "kind": None, "backend": None, "exit": None, "wall_s": None,
                     "report": parse_report(body), "batch_table": []}
        for line in sec[1:]:
            m = HEADER.match(line)
            if m and run["net"] is None:
                run["net"] = m.group(1).rsplit("/", 1)[-1]
                run["kind"], run["backend"] = m.group(2), m.group(3).lower()
            m = EXIT.match(line)
            if m:
                run["exit"], run["wall_s"] = int(m.group(1)), float(m.group(2))
            m = BATCH_ROW.match(line)
            if m:
                run["batch_table"].append({"rows": int(m.group(1)), "ms": float(m.group(2)),
                                           "positions_per_s": float(m.group(3))})
        runs.append(run)
    uci = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("uci check:")), None)
    return {"gpu": gpu, "cpus": cpus, "tensorrt": trt or None, "uci_check": uci, "runs": runs}


def _number(report: dict, key: str) -> str:
    v = report.get(key, "")
    return v.split()[0] if v else "—"


def markdown(summary: dict) -> str:
    """One table row per run: arguments, backend used, ms per searchless move, positions/s at the largest batch,
    MCTS nodes/s and positions per network run."""
    out = ["| `glimpse bench` arguments | backend used | ms a move | pos/s, largest batch | MCTS nodes/s | "
           "positions a run |", "|---|---|---|---|---|---|"]
    for r in summary["runs"]:
        rep = r["report"]
        big = max(r["batch_table"], key=lambda b: b["rows"], default=None)
        batch = f"{big['positions_per_s']:.0f} ({big['rows']} rows)" if big else "—"
        mcts = "--mcts" in r["args"].split()
        out.append(f"| `{r['args']}` | {r['backend'] or 'failed'} | "
                   f"{'—' if mcts else _number(rep, 'Median ms per move')} | {batch} | "
                   f"{_number(rep, 'Nodes/s') if mcts else '—'} | "
                   f"{_number(rep, 'Positions per run') if mcts else '—'} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", help="gpu-bench.txt from tools/device/gpu-bench.sh")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--markdown", action="store_true", help="print the Markdown table")
    a = ap.parse_args(argv)
    with open(a.log) as f:
        summary = parse_log(f.read())
    if not summary["runs"]:
        print(f"gpu_summary: no '### glimpse bench' sections in {a.log}", file=sys.stderr)
        return 1
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)
    if a.markdown or not a.json:
        print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
