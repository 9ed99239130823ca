"""The process-language and length rules of the docs (``make test-docs``): what they flag and what they let pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from glimpse_tools import doc_rules as dr


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


@pytest.mark.parametrize("line", [
    "Measured in session 16 on the lent GPU.", "This was fixed last session.", "See issue 15 for the plan.",
    "The lease ran out.", "I left the file there.", "We measured +58 Elo.", "Our net beats Skill 0.",
    "The net of cycle 47 is the default.", "Trained on the session-19 twin."])
def test_process_language_in_a_doc_fails(tmp_path, line):
    repo = repo_with(tmp_path, {"README.md": f"# Glimpse\n\n{line}\n"})
    found = dr.check(repo)
    assert len(found) >= 1 and found[0].startswith("README.md:3: "), found


@pytest.mark.parametrize("line", [
    "Each ONNX Runtime session holds one net.", "A UCI session starts with `uci`.", "The release build.",
    "Silent on I/O errors.", "Run `make campaign` to resume; cycle counters live in its state.",
    "```\nwe would be flagged in prose, not in a code block\n```", "`issue 12` in code is code."])
def test_engine_and_code_words_pass(tmp_path, line):
    repo = repo_with(tmp_path, {"README.md": f"# Glimpse\n\n{line}\n"})
    assert dr.check(repo) == []


def test_cycles_are_allowed_where_the_campaign_defines_them(tmp_path):
    repo = repo_with(tmp_path, {"training/CAMPAIGN.md": "A cycle is one label and train phase; cycle 3 follows 2.\n",
                                "CHANGELOG.md": "- c47 (cycle 47): +58.7 Elo.\n",
                                "ARCHITECTURE.md": "Since cycle 12 the gate ...\n"})
    assert [f.split(":")[0] for f in dr.check(repo)] == ["ARCHITECTURE.md"]


def test_code_comments_are_read_not_code(tmp_path):
    rust = "fn f<I: Iterator>(i: I) {}\n// we wait here\nlet s = \"we\";\n/// `multipv I` format\n"
    py = 'x = "session 3"\n# measured in session 3\ndef f():\n    """Docstring.\n\n    We do this.\n    """\n'
    repo = repo_with(tmp_path, {"src/a.rs": rust, "tools/b.py": py})
    found = sorted(dr.check(repo))
    assert found[0].startswith("src/a.rs:2: first person") and len(found) == 3, found
    assert {f.split(":")[1] for f in found[1:]} == {"2", "6"}


def test_engine_idiom_in_code_passes(tmp_path):
    repo = repo_with(tmp_path, {"src/a.rs": "// our king is in check; us and them are colours\n"})
    assert dr.check(repo) == []


def test_line_limits(tmp_path):
    repo = repo_with(tmp_path, {"README.md": "x\n" * 351, "weights/README.md": "x\n" * 250})
    found = dr.check(repo)
    assert found == ["README.md:351: 351 lines, more than the 350 allowed"]


def test_main_exit_status(tmp_path, capsys):
    assert dr.main(["--repo", str(repo_with(tmp_path, {"README.md": "fine\n"}))]) == 0
    assert dr.main(["--repo", str(repo_with(tmp_path, {"README.md": "I did it\n"}))]) == 1
    assert "README.md:1: first person" in capsys.readouterr().out

