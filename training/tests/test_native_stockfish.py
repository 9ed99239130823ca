"""Tests of the native Stockfish build (``glimpse_train.native_stockfish``, ``make stockfish-native``): the ARCH
choice, the checks that refuse a build, the preference of ``find_stockfish``, and, where the build is there,
that it searches as the package's binary does (same bench nodes, same labels)."""

from __future__ import annotations

import os

import pytest

from glimpse_train import chessdata, native_stockfish, raylabel

INTEL = ("GenuineIntel", 6)
ZEN2, ZEN4, ZEN5 = ("AuthenticAMD", 0x17), ("AuthenticAMD", 0x19), ("AuthenticAMD", 0x1A)
AVX512 = {"avx2", "bmi2", "popcnt", "sse4_1", "avx512f", "avx512bw", "avx512_vnni"}
HAVE_SF = any(os.path.exists(p) for p in chessdata.SF_PATHS)
BUILT = os.path.exists(os.path.join(os.path.dirname(chessdata.NATIVE_STOCKFISH), "build.json"))


@pytest.mark.parametrize("flags,cpu,arch", [
    ({"avx2", "bmi2", "popcnt", "sse4_1"}, INTEL, "x86-64-bmi2"),
    (AVX512, ZEN5, "x86-64-vnni512"),
    (AVX512 - {"avx512_vnni"}, ZEN5, "x86-64-bmi2"),
    (AVX512, ZEN4, "x86-64-bmi2"),  # AVX-512 on 256-bit units: unmeasured
    (AVX512, INTEL, "x86-64-bmi2"),  # slower than bmi2 on a 2-core Xeon (choose_arch)
    ({"avx2", "bmi2", "popcnt", "sse4_1"}, ZEN4, "x86-64-bmi2"),
    ({"avx2", "bmi2", "popcnt", "sse4_1"}, ZEN2, "x86-64-avx2"),  # PEXT is microcoded before Zen 3
    ({"avx2", "popcnt", "sse4_1"}, INTEL, "x86-64-avx2"),
    ({"popcnt", "sse4_1", "ssse3"}, INTEL, "x86-64-sse41-popcnt"),
    ({"sse2", "ssse3"}, INTEL, None),
])
def test_choose_arch(flags, cpu, arch):
    assert native_stockfish.choose_arch(flags, *cpu) == arch


def test_cpu_info_reads_the_first_cpu(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nflags\t\t: fpu avx2 bmi2\n\n"
                 "processor\t: 1\nvendor_id\t: Other\ncpu family\t: 1\nflags\t\t: fpu\n")
    assert native_stockfish.cpu_info(str(p)) == ({"fpu", "avx2", "bmi2"}, "AuthenticAMD", 25)
    assert native_stockfish.cpu_info(str(tmp_path / "absent")) == (set(), "", 0)


def test_build_refuses_a_reference_that_is_not_stockfish_15_1(tmp_path):
    fake = tmp_path / "fake"
    fake.write_text("#!/bin/sh\necho 'id name Stockfish 16'\necho uciok\n")
    fake.chmod(0o755)
    with pytest.raises(native_stockfish.NothingToBuild, match="is not Stockfish 15.1"):
        native_stockfish.build(str(fake), str(tmp_path / "out"), log=lambda *_: None)
    with pytest.raises(native_stockfish.NothingToBuild, match="no .*absent"):
        native_stockfish.build(str(tmp_path / "absent"), str(tmp_path / "out"), log=lambda *_: None)
    assert not (tmp_path / "out" / "stockfish").exists()
    assert native_stockfish.main(["--reference", str(fake), "--out", str(tmp_path / "out")]) == 0


def test_find_stockfish_prefers_a_verified_native_build_that_runs_here(tmp_path, monkeypatch):
    native = tmp_path / "stockfish"
    native.write_text("#!/bin/sh\nexit 0\n")
    native.chmod(0o755)
    apt = tmp_path / "apt"
    apt.write_text("")
    monkeypatch.setattr(chessdata, "NATIVE_STOCKFISH", str(native))
    monkeypatch.setattr(chessdata, "SF_PATHS", [str(apt)])
    chessdata._runs_here.cache_clear()
    assert chessdata.find_stockfish() == str(apt)  # no build.json: not verified
    (tmp_path / "build.json").write_text("{}")
    assert chessdata.find_stockfish() == str(native)
    assert chessdata.find_stockfish(native=False) == str(apt)
    assert chessdata.find_stockfish(str(apt)) == str(apt)  # explicit first
    native.write_text("#!/bin/sh\nexit 132\n")  # as a binary for instructions this CPU lacks
    chessdata._runs_here.cache_clear()
    assert chessdata.find_stockfish() == str(apt)
    chessdata._runs_here.cache_clear()


def _buildable() -> bool:
    import shutil

    return (HAVE_SF and shutil.which("g++") is not None
            and native_stockfish.choose_arch(*native_stockfish.cpu_info()) is not None
            and raylabel.stockfish_name(chessdata.find_stockfish(native=False)) == native_stockfish.VERSION_NAME)


def test_native_build_is_there_where_it_can_be_built():
    """``make test-campaign`` runs ``make stockfish-native`` first: where a compiler, the package and a faster
    ARCH exist, the build must have passed its bench check (a silent skip would hide a mismatch)."""
    if not _buildable():
        pytest.skip("no Stockfish 15.1 (apt), g++ or faster ARCH here")
    assert BUILT, "make stockfish-native left no verified build"


@pytest.mark.skipif(not (HAVE_SF and BUILT), reason="needs Stockfish (apt) and make stockfish-native")
def test_native_build_searches_as_the_package_does(tmp_path):
    """Same bench nodes at a shallow depth, and byte-identical two-tier labels (``compare``, what ``--compare``
    prints), as Debian's binary."""
    import gzip

    apt = chessdata.find_stockfish(native=False)
    native = chessdata.NATIVE_STOCKFISH
    assert native_stockfish.bench_nodes(native, 7) == native_stockfish.bench_nodes(apt, 7)
    fens = ["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4",
            "r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 6 8",
            "8/1P4k1/8/8/8/8/6K1/8 w - - 0 1"]
    path = tmp_path / "labels.tsv.gz"
    path.write_bytes(gzip.compress("".join(f"{f}\te2e4=0\n" for f in fens).encode()))
    got = native_stockfish.compare(apt, native, str(path), positions=3, log=lambda *_: None)
    assert got["identical"] is True
    assert all(got[sf]["ms_cpu_per_position"] > 0 and got[sf]["positions_per_s"] > 0 for sf in (apt, native))


def test_a_verified_build_of_this_source_is_not_built_again(tmp_path, capsys):
    import json

    (tmp_path / "stockfish").write_text("")
    (tmp_path / "build.json").write_text(json.dumps({"arch": "x86-64-avx2", "source_sha256": "0" * 64}))
    assert native_stockfish.installed(str(tmp_path)) is None  # another source: build again
    (tmp_path / "build.json").write_text(json.dumps({"arch": "x86-64-avx2",
                                                     "source_sha256": native_stockfish.SOURCE_SHA256}))
    assert native_stockfish.installed(str(tmp_path))["arch"] == "x86-64-avx2"
    assert native_stockfish.main(["--out", str(tmp_path)]) == 0 and "up to date" in capsys.readouterr().out
