"""Checks that the documentation says what the binary and the Makefiles do (``make test-docs``).

1. **UCI options**: the option table of ``README.md`` (the table whose header starts with
   ``| option | type | default |``) lists exactly the options the engine declares in its ``uci`` answer,
   with the same type, default and range (spin: ``min–max``; combo: every ``var``). The engine is asked,
   not the source, so options added on any branch are checked as soon as they are built.
2. **Make targets**: every ``make <target>`` written in code (backticks or fenced blocks) in the given
   Markdown files names a target that ``make -p`` knows.

Every difference is printed as ``file:line: ...`` naming the README row (or the missing one); the exit
status is 1 when there is any. Usage::

    python -m glimpse_tools.docs_check --engine target/release/glimpse README.md weights/README.md ...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789")


@dataclass
class UciOption:
    """One ``option name … type …`` line of the engine."""

    name: str
    type: str
    default: str | None = None
    min: int | None = None
    max: int | None = None
    vars: list[str] = field(default_factory=list)


def parse_uci_options(lines: list[str]) -> dict[str, UciOption]:
    """The options of a ``uci`` answer, by name (names may contain spaces)."""
    out: dict[str, UciOption] = {}
    for line in lines:
        m = re.match(r"option name (.+?) type (\w+)(.*)$", line.strip())
        if not m:
            continue
        opt = UciOption(m.group(1), m.group(2))
        # Tokens: default <value until the next keyword>, min N, max N, var V (values may hold spaces).
        for key, value in re.findall(r"\b(default|min|max|var)\b ?(.*?)(?= \b(?:default|min|max|var)\b|$)",
                                     m.group(3).strip()):
            if key == "default":
                opt.default = value
            elif key in ("min", "max"):
                setattr(opt, key, int(value))
            else:
                opt.vars.append(value)
        out[opt.name] = opt
    return out


def engine_options(engine: str) -> dict[str, UciOption]:
    """Runs ``engine``, sends ``uci`` and ``quit``, and parses the options it declares."""
    proc = subprocess.run([engine], input="uci\nquit\n", capture_output=True, text=True, timeout=120)
    lines = proc.stdout.splitlines()
    if "uciok" not in lines:
        raise SystemExit(f"docs_check: {engine} gave no uciok (exit {proc.returncode}): {proc.stderr[-500:]}")
    return parse_uci_options(lines[: lines.index("uciok")])


@dataclass
class Row:
    """One row of the README option table."""

    line: int
    name: str
    type: str
    default: str
    range: str


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def readme_rows(text: str) -> list[Row]:
    """The option table's rows (``| option | type | default | range / values | meaning |``)."""
    rows: list[Row] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = cells(line) if line.startswith("|") else []
        if head[:3] != ["option", "type", "default"]:
            continue
        for j in range(i + 2, len(lines)):
            if not lines[j].startswith("|"):
                break
            c = cells(lines[j])
            if len(c) < 4:
                continue
            rows.append(Row(j + 1, c[0].strip("`"), c[1], c[2], c[3]))
        break
    return rows


def number(text: str) -> int | None:
    """A README number: ``5000``, ``−100`` (Unicode minus), ``2³¹−1``, ``10⁹``; units after it are ignored."""
    t = text.strip().replace("−", "-").replace(",", "")
    m = re.fullmatch(r"(-?\d+)([⁰¹²³⁴⁵⁶⁷⁸⁹]*)(-\d+)?(?:\s*\w+)?", t)
    if not m:
        return None
    base = int(m.group(1))
    value = base ** int(m.group(2).translate(SUPERSCRIPT)) if m.group(2) else base
    return value + int(m.group(3)) if m.group(3) else value


def parse_range(text: str) -> tuple[int, int] | None:
    """``1–256``, ``0–5000 ms``, ``−100–100``, ``0–2³¹−1`` → (min, max)."""
    t = text.replace("`", "").strip()
    m = re.fullmatch(r"(−?[\d⁰¹²³⁴⁵⁶⁷⁸⁹,]+(?:−\d+)?)\s*–\s*(−?[\d⁰¹²³⁴⁵⁶⁷⁸⁹,]+(?:−\d+)?)(?:\s*\w+)?", t)
    if not m:
        return None
    lo, hi = number(m.group(1)), number(m.group(2))
    return None if lo is None or hi is None else (lo, hi)


def expected_default(cell: str) -> str:
    """What a README default cell promises: ``empty`` is ``<empty>``; ``cores, at most N`` is this machine's."""
    t = cell.replace("`", "").strip()
    if t == "empty":
        return "<empty>"
    m = re.fullmatch(r"cores, at most (\d+)", t)
    if m:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return str(min(cores, int(m.group(1))))
    return t


def check_options(readme: Path, text: str, declared: dict[str, UciOption]) -> list[str]:
    """Differences between the README option table and the declared options."""
    rows = readme_rows(text)
    if not rows:
        return [f"{readme}: no option table (a table whose header starts with | option | type | default |)"]
    problems: list[str] = []
    seen: set[str] = set()
    for r in rows:
        where = f"{readme}:{r.line}: option row `{r.name}`"
        if r.name in seen:
            problems.append(f"{where}: listed twice")
        seen.add(r.name)
        opt = declared.get(r.name)
        if opt is None:
            problems.append(f"{where}: the binary declares no such option (remove or rename the row)")
            continue
        rtype = r.type.split()[0] if r.type else ""
        if rtype != opt.type:
            problems.append(f"{where}: type `{r.type}` but the binary says `{opt.type}`")
        want = expected_default(r.default)
        if want != (opt.default or ""):
            problems.append(f"{where}: default `{r.default}` but the binary says `{opt.default}`")
        if opt.type == "spin":
            rng = parse_range(r.range)
            if rng != (opt.min, opt.max):
                problems.append(f"{where}: range `{r.range}` but the binary says {opt.min}–{opt.max}")
        elif opt.type == "combo":
            values = [v.strip().strip("`") for v in r.range.split(",") if v.strip()]
            if values != opt.vars:
                problems.append(f"{where}: values `{r.range}` but the binary says "
                                + ", ".join(f"`{v}`" for v in opt.vars))
    last = rows[-1].line if rows else 0
    for name, opt in declared.items():
        if name not in seen:
            rng = f"{opt.min}–{opt.max}" if opt.type == "spin" else ", ".join(f"`{v}`" for v in opt.vars)
            problems.append(f"{readme}:{last}: option `{name}` is declared by the binary but has no row in the "
                            f"option table: add `| `{name}` | {opt.type} | {opt.default} | {rng} | … |`")
    return problems


def code_spans(text: str) -> list[tuple[int, str]]:
    """(line number, code) for every fenced code line and every inline code span."""
    out: list[tuple[int, str]] = []
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append((i, line))
        else:
            out.extend((i, m) for m in re.findall(r"`([^`]+)`", line))
    return out


MAKE_RE = re.compile(r"(?:^|[\s;&|(])make\s+((?:-C\s+\S+\s+|-\S+\s+)*)((?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)([a-z][a-z0-9_.-]*)(?=\s|$|[`;)&|])")


def named_targets(path: Path, text: str) -> list[tuple[int, str]]:
    """(line, target) for each ``make <target>`` in code in ``text``."""
    found = []
    for line, code in code_spans(text):
        for m in MAKE_RE.finditer(code):
            found.append((line, m.group(3)))
    return found


def make_targets(repo: Path) -> set[str]:
    """Every target of the Makefile (and its includes) from ``make -p``'s database."""
    proc = subprocess.run(["make", "-pRrq", "-C", str(repo), "__docs_check_no_target__"], capture_output=True,
                          text=True)
    targets = set()
    for line in proc.stdout.splitlines():
        m = re.match(r"^([A-Za-z0-9_.-][^\s:=#%]*):(?!=)", line)
        if m:
            targets.add(m.group(1))
    return targets


def check_targets(files: list[Path], targets: set[str]) -> list[str]:
    problems = []
    for f in files:
        for line, t in named_targets(f, f.read_text()):
            if t not in targets:
                problems.append(f"{f}:{line}: `make {t}`: the Makefiles have no target `{t}`")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", required=True, help="the built binary (asked with `uci`)")
    ap.add_argument("--repo", default=".", help="repository root (for `make -p`)")
    ap.add_argument("readme", help="the README with the option table")
    ap.add_argument("docs", nargs="*", help="more Markdown files whose `make` targets are checked")
    a = ap.parse_args(argv)
    readme = Path(a.readme)
    problems = check_options(readme, readme.read_text(), engine_options(a.engine))
    problems += check_targets([readme, *map(Path, a.docs)], make_targets(Path(a.repo)))
    for p in problems:
        print(p)
    n_opts = len(readme_rows(readme.read_text()))
    if problems:
        print(f"docs_check: {len(problems)} difference(s) between the docs and the binary/Makefiles", file=sys.stderr)
        return 1
    print(f"docs_check: {n_opts} README option rows match the binary; every `make` target named in "
          f"{1 + len(a.docs)} files exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
