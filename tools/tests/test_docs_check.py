"""The README/binary consistency check (``make test-docs``): parsing and the differences it reports."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

from glimpse_tools import docs_check as dc

UCI = """id name Glimpse 9.9.9
option name WeightsFile type string default <embedded>
option name Backend type combo default cpu var cpu var cuda var tensorrt
option name Move Overhead type spin default 30 min 0 max 5000
option name Seed type spin default 0 min 0 max 2147483647
option name DrawScore type spin default 0 min -100 max 100
option name MopUp type check default true
option name LogFile type string default <empty>
uciok""".splitlines()

README = """# x

| option | type | default | range / values | meaning |
|---|---|---|---|---|
| `WeightsFile` | string | `<embedded>` | path | the net |
| `Backend` | combo | `cpu` | `cpu`, `cuda`, `tensorrt` | provider |
| `Move Overhead` | spin | 30 | 0–5000 ms | lag |
| `Seed` | spin | 0 | 0–2³¹−1 | seed |
| `DrawScore` | spin | 0 | −100–100 | contempt |
| `MopUp` | check | true | | rule |
| `LogFile` | string | empty | path | log |

Text that says make sure, and `make test` and `make match OPPONENT=sf GAMES=2` in code.
```
make -C . gauntlet LEVELS=1
```
"""


class DocsCheckTest(unittest.TestCase):
    def setUp(self) -> None:
        self.declared = dc.parse_uci_options(UCI)

    def test_uci_options_are_parsed_with_spaces_and_vars(self) -> None:
        mo = self.declared["Move Overhead"]
        self.assertEqual((mo.type, mo.default, mo.min, mo.max), ("spin", "30", 0, 5000))
        self.assertEqual(self.declared["Backend"].vars, ["cpu", "cuda", "tensorrt"])
        self.assertEqual(self.declared["DrawScore"].min, -100)
        self.assertEqual(len(self.declared), 7)

    def test_readme_numbers(self) -> None:
        self.assertEqual(dc.parse_range("0–2³¹−1"), (0, 2**31 - 1))
        self.assertEqual(dc.parse_range("−100–100"), (-100, 100))
        self.assertEqual(dc.parse_range("1–65536 MB"), (1, 65536))
        self.assertEqual(dc.parse_range("1–10⁹"), (1, 10**9))
        self.assertIsNone(dc.parse_range("path"))

    def test_matching_table_has_no_problems(self) -> None:
        self.assertEqual(dc.check_options(Path("R.md"), README, self.declared), [])

    def test_each_difference_names_the_row(self) -> None:
        bad = (README.replace("| `Move Overhead` | spin | 30 |", "| `Move Overhead` | spin | 40 |")
               .replace("0–2³¹−1", "0–100")
               .replace("`cpu`, `cuda`, `tensorrt`", "`cpu`, `cuda`")
               .replace("| `MopUp` | check |", "| `MopUp` | spin |"))
        problems = dc.check_options(Path("R.md"), bad, self.declared)
        self.assertEqual(len(problems), 4, problems)
        joined = "\n".join(problems)
        self.assertIn("R.md:7: option row `Move Overhead`: default `40` but the binary says `30`", joined)
        self.assertIn("R.md:8: option row `Seed`: range `0–100`", joined)
        self.assertIn("option row `Backend`: values", joined)
        self.assertIn("option row `MopUp`: type `spin` but the binary says `check`", joined)

    def test_missing_and_unknown_rows(self) -> None:
        declared = dc.parse_uci_options(UCI + ["option name SyzygyPath type string default <empty>"])
        text = README.replace("| `LogFile` | string | empty | path | log |", "| `LogFiles` | string | empty | path | log |")
        problems = dc.check_options(Path("R.md"), text, declared)
        joined = "\n".join(problems)
        self.assertIn("option `SyzygyPath` is declared by the binary but has no row", joined)
        self.assertIn("option `LogFile` is declared by the binary but has no row", joined)
        self.assertIn("R.md:11: option row `LogFiles`: the binary declares no such option", joined)

    def test_make_targets_in_code_only(self) -> None:
        found = [t for _, t in dc.named_targets(Path("R.md"), README)]
        self.assertEqual(found, ["test", "match", "gauntlet"])
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / "R.md"
            f.write_text(README)
            problems = dc.check_targets([f], {"test", "match"})
        self.assertEqual(len(problems), 1)
        self.assertIn("`make gauntlet`: the Makefiles have no target `gauntlet`", problems[0])

    def test_this_repositorys_makefile_targets_are_read(self) -> None:
        targets = dc.make_targets(Path(__file__).resolve().parents[2])
        self.assertTrue({"test", "build", "test-docs", "match", "test-rust"} <= targets, sorted(targets)[:50])


if __name__ == "__main__":
    unittest.main()
