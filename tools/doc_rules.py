"""Two rules of the documentation (``make test-docs``): no words of the work's own organisation, and the
manual and the model card stay short.

1. **Process language.** The docs describe the project as it is, so these fail: a work session ("this
   session", "last session", "session 16"), a machine's loan ("lease", "lent"), an issue number ("issue 15"),
   a campaign cycle used as a date ("cycle 47", except in training/CAMPAIGN.md, which defines cycles, and in
   CHANGELOG.md, the history) and first person ("I", "we", "our", "my", ...). ONNX Runtime's and UCI's
   sessions are not matched: only the work-session phrasings above are. In code (Rust, Python, Makefiles) only
   comments and docstrings are read, and first person there is "I", "we", "my", "mine" ("our king", "us" and
   "them" are the usual engine idiom for the side to move).
2. **Length.** README.md ≤ 350 lines, weights/README.md ≤ 250, training/CAMPAIGN.md ≤ 150
   (:data:`LINE_LIMITS`).

Every finding is printed as ``file:line: ...``; the exit status is 1 when there is any. Usage::

    python -m glimpse_tools.doc_rules --repo .
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: Markdown files under the rules (relative to the repository root); missing files are skipped.
DOCS = ["README.md", "weights/README.md", "training/README.md", "training/CAMPAIGN.md", "tools/README.md",
        "uci-tests/README.md", "ARCHITECTURE.md", "CHANGELOG.md"]
#: Source files whose comments are under rule 1 (globs relative to the repository root).
CODE = ["src/**/*.rs", "tests/*.rs", "build.rs", "training/glimpse_train/**/*.py", "training/tests/*.py",
        "tools/*.py", "tools/tests/*.py", "uci-tests/*.py", "Makefile", "mk/*.mk", ".ci/run", "training/device/*.sh",
        "tools/device/*.sh"]
#: Files that quote the words to define the rule.
EXEMPT = {"tools/doc_rules.py", "tools/tests/test_doc_rules.py"}
#: Where "cycle N" is the campaign's own term rather than a date.
CYCLES_ALLOWED = {"training/CAMPAIGN.md", "CHANGELOG.md"}
#: Longest allowed files, in lines.
LINE_LIMITS = {"README.md": 350, "weights/README.md": 250, "training/CAMPAIGN.md": 150}

WORK = [
    (re.compile(r"\b(?:this|last|next|previous|earlier|later|that) session\b", re.I), "a work session"),
    (re.compile(r"\bsessions?[ -]\d+", re.I), "a work session"),
    (re.compile(r"\b(?:lease|leases|leased|lent)\b", re.I), "a machine's loan"),
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
]
CYCLE = (re.compile(r"\bcycles? \d+", re.I), "a campaign cycle as a date")
FIRST_PERSON_DOCS = (re.compile(r"\b(?:I(?![/-])|I'm|I've|I'd)\b|\b(?:[Ww]e|[Ww]e're|[Ww]e've|[Oo]ur|[Oo]urs|[Mm]y|[Mm]ine|[Uu]s)\b"),
                     "first person")
FIRST_PERSON_CODE = (re.compile(r"\b(?:I(?![/-])|I'm|I've|I'd)\b|\b(?:[Ww]e|[Ww]e're|[Ww]e've|[Mm]y|[Mm]ine)\b"), "first person")


def markdown_prose(text: str) -> list[tuple[int, str]]:
    """(line, text) of a Markdown file without its code (fenced blocks and inline spans)."""
    out, fenced = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append((i, re.sub(r"`[^`]*`", "", line)))
    return out


def code_comments(path: Path, text: str) -> list[tuple[int, str]]:
    """(line, comment text) of a source file: ``//`` comments in Rust; ``#`` comments and docstrings
    (triple-quoted blocks) in Python; ``#`` comments in Makefiles and shell scripts."""
    out: list[tuple[int, str]] = []
    rust = path.suffix == ".rs"
    in_doc = False
    for i, line in enumerate(text.splitlines(), 1):
        if rust:
            if "//" in line:
                out.append((i, line.split("//", 1)[1]))
            continue
        quotes = line.count('"""') + line.count("'''")
        if in_doc or quotes:
            out.append((i, line))
        elif "#" in line:
            out.append((i, line.split("#", 1)[1]))
        if quotes % 2 == 1:
            in_doc = not in_doc
    return out


def findings(rel: str, lines: list[tuple[int, str]], rules: list[tuple[re.Pattern, str]]) -> list[str]:
    out = []
    for line, text in lines:
        for pattern, what in rules:
            m = pattern.search(text)
            if m:
                out.append(f"{rel}:{line}: {what}: {m.group(0)!r} (state the fact, not the work's history)")
    return out


def check(repo: Path) -> list[str]:
    """Every finding of both rules under ``repo``."""
    out: list[str] = []
    for rel in DOCS:
        path = repo / rel
        if not path.exists():
            continue
        text = path.read_text()
        rules = [*WORK, FIRST_PERSON_DOCS] + ([] if rel in CYCLES_ALLOWED else [CYCLE])
        out += findings(rel, markdown_prose(text), rules)
        limit = LINE_LIMITS.get(rel)
        n = text.count("\n")
        if limit and n > limit:
            out.append(f"{rel}:{n}: {n} lines, more than the {limit} allowed")
    seen: set[Path] = set()
    for pattern in CODE:
        for path in sorted(repo.glob(pattern)):
            if path in seen or not path.is_file() or ".venv" in path.parts:
                continue
            seen.add(path)
            rel = path.relative_to(repo).as_posix()
            if rel in EXEMPT:
                continue
            comments = [(n, re.sub(r"`[^`]*`", "", t)) for n, t in code_comments(path, path.read_text(errors="replace"))]
            out += findings(rel, comments,
                            [*WORK, CYCLE, FIRST_PERSON_CODE])
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", default=".")
    a = ap.parse_args(argv)
    found = check(Path(a.repo))
    for f in found:
        print(f)
    if found:
        print(f"doc_rules: {len(found)} finding(s)", file=sys.stderr)
        return 1
    print("doc_rules: no process language; README, model card and CAMPAIGN.md within their line limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
