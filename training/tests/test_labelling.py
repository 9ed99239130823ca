"""Tests of the labelling the campaign runs on: label format, label store, dedup, the two-tier merge, Stockfish
labelling chunks and Ray retries. Run with ``make test-campaign`` (pytest, from training/)."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from glimpse_train import campaign, chessdata, labelstore, raylabel
from glimpse_train.data import MemDataset

START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
E4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"


def moves_of(fen):
    import chess

    return [(m.uci(), str(i)) for i, m in enumerate(chess.Board(fen).legal_moves)]


def test_format_and_parse_round_trip():
    moves = [("e2e4", "35"), ("d2d4", "M3"), ("a2a3", "M-2"), ("g1f3", "-12")]
    line = labelstore.format_line(START, moves)
    assert line.split("\t")[0] == START
    assert labelstore.parse_line(line + "\n") == (START, moves)


@pytest.mark.parametrize("line", ["no tab here", f"{START}\t", f"{START}\te2e4", f"{START}\te2e4=abc",
                                  f"{START}\te2e9=1", "8/8 w - -\te2e4=1", f"{START}\te2e4=M"])
def test_parse_rejects_malformed(line):
    with pytest.raises(labelstore.LabelFormatError):
        labelstore.parse_line(line)


def test_read_file_skips_malformed(tmp_path):
    p = tmp_path / "x.tsv.gz"
    good = labelstore.format_line(START, [("e2e4", "30")])
    with gzip.open(p, "wt") as f:
        f.write("garbage\n" + good + "\n\n" + f"{E4}\te7e5=oops\n")
    assert list(labelstore.read_file(str(p))) == [(START, [("e2e4", "30")])]


def test_store_add_manifest_and_verify(tmp_path):
    st = labelstore.LabelStore(str(tmp_path))
    sf = {"name": "Stockfish 15.1", "depth": 8}
    new = st.add([("popular", START, moves_of(START)), ("selfplay", E4, moves_of(E4)),
                  ("popular", "bad fen", [("e2e4", "1")])], sf, core_seconds=4.0)
    assert len(new) == 1 and new[0].positions == 2 and new[0].sources == {"popular": 1, "selfplay": 1}
    assert new[0].moves == 40 and new[0].core_seconds == 4.0
    assert st.verify() == []
    again = labelstore.LabelStore(str(tmp_path))  # reopened from the manifest
    assert again.totals() == {"shards": 1, "positions": 2, "moves": 40, "core_seconds": 4.0}
    assert [f for f, _ in labelstore.read_file(again.files()[0])] == [START, E4]
    man = json.load(open(tmp_path / labelstore.MANIFEST))
    assert man["totals"]["positions"] == 2 and man["shards"][0]["stockfish"] == sf
    # a corrupted shard is reported
    with open(again.files()[0], "ab") as f:
        f.write(b"x")
    assert "sha256 mismatch" in again.verify()[0]


def test_store_splits_large_batches(tmp_path, monkeypatch):
    monkeypatch.setattr(labelstore, "MAX_SHARD_BYTES", 600)
    st = labelstore.LabelStore(str(tmp_path))
    recs = [("popular", START.replace(" 0 1", f" 0 {i + 1}"), moves_of(START)) for i in range(12)]
    new = st.add(recs, {}, 12.0)
    assert len(new) > 1 and sum(s.positions for s in new) == 12
    assert all(os.path.getsize(p) <= 600 for p in st.files())
    assert abs(sum(s.core_seconds for s in new) - 12.0) < 0.5


def test_store_adopts_orphan_shard_and_removes_tmp(tmp_path):
    st = labelstore.LabelStore(str(tmp_path))
    st.add([("popular", START, moves_of(START))], {}, 1.0)
    # a kill between the shard write and the manifest write leaves an orphan (and maybe a .tmp)
    orphan = tmp_path / "glimpse-00001.tsv.gz"
    orphan.write_bytes(labelstore.gzip_bytes([labelstore.format_line(E4, moves_of(E4))]))
    (tmp_path / "glimpse-00002.tsv.gz.tmp").write_bytes(b"partial")
    st2 = labelstore.LabelStore(str(tmp_path))
    assert st2.totals()["positions"] == 2 and st2.shards[-1].core_seconds is None
    assert not (tmp_path / "glimpse-00002.tsv.gz.tmp").exists()
    assert st2.next_name() == "glimpse-00002.tsv.gz"


def test_take_new_and_known_keys(tmp_path):
    st = labelstore.LabelStore(str(tmp_path))
    st.add([("popular", START, moves_of(START))], {}, 1.0)
    known = labelstore.known_keys(st.files())
    assert known == {labelstore.position_key(START)}
    # same position with other clocks is a duplicate; E4 is new and then known
    fens = [START.replace(" 0 1", " 3 9"), E4, E4]
    new, cur = campaign.take_new(fens, 0, 5, known)
    assert new == [E4] and cur == 3 and labelstore.position_key(E4) in known


def test_file_sources_pool_books_and_every_position_of_the_games(tmp_path):
    """``books`` pools its EPD files, ``lichess`` every position of every PGN game (a finished game's last one
    left out), ``openings`` an EPD file with a PGN's positions, each in one fixed shuffled order; a file that is
    not there contributes nothing."""
    import chess

    from glimpse_train import campaign_positions as cp

    data = tmp_path / "data"
    (data / "openings").mkdir(parents=True)
    (data / "games").mkdir()
    (data / "openings" / "UHO_4060_v4.epd").write_text(f"{' '.join(E4.split()[:4])} c9 \"x\";\n")
    (data / "openings" / "2moves_v1.epd").write_text(f"{' '.join(START.split()[:4])}\nnot a fen\n")
    # a fool's mate (its final position is mate: no move to label) and an unfinished game
    (data / "games" / "g.pgn").write_text('[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n'
                                          '[Result "*"]\n\n1. d4 d5 *\n')
    books = cp.file_source(str(tmp_path), "books")
    assert sorted(books) == sorted([E4, START]) and books == cp.file_source(str(tmp_path), "books")
    games = cp.file_source(str(tmp_path), "lichess")
    assert len(games) == 5 and games == cp.file_source(str(tmp_path), "lichess")
    b = chess.Board()
    for mv in ("f2f3", "e7e5", "g2g4"):
        b.push_uci(mv)
        assert b.fen() in games
    b.push_uci("d8h4")
    assert b.is_checkmate() and b.fen() not in games
    assert cp.file_source(str(tmp_path), "endgames") == []
    assert cp.file_source(str(tmp_path), "openings") == [], "no match books here"
    (data / "openings" / "noob_3moves.epd").write_text(f"{' '.join(E4.split()[:4])}\n")
    (data / "openings" / "8moves_v3.pgn").write_text('[Result "*"]\n\n1. d4 d5 *\n')
    openings = cp.file_source(str(tmp_path), "openings")
    assert len(openings) == 3 and E4 in openings, "an EPD and every position of a PGN, pooled"
    assert campaign.parse_mix(campaign.CampaignConfig().mix).keys() == {"selfplay", "books", "lichess", "openings",
                                                                        "dagger"}


def test_memdataset_dedups_across_files_first_wins(tmp_path):
    a, b = tmp_path / "a.tsv.gz", tmp_path / "b.tsv.gz"
    a.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START, [("e2e4", "30"), ("d2d4", "20")])]))
    b.write_bytes(labelstore.gzip_bytes([labelstore.format_line(START.replace(" 0 1", " 5 7"), [("e2e4", "-500")]),
                                         labelstore.format_line(E4, [("e7e5", "10")])]))
    ds = MemDataset([str(a), str(b)], str(tmp_path / "cache"), log=lambda *_: None)
    assert len(ds.states) == 2 and list(ds.source) == [0, 1]
    assert len(ds.row_pos) == 3 and list(ds.row_pos) == [0, 0, 1]
    assert ds.row_key[0] == 30.0
    ds2 = MemDataset([str(a), str(b)], str(tmp_path / "cache"), log=lambda *_: None)  # from the cache
    assert np.array_equal(ds.states, ds2.states) and len(os.listdir(tmp_path / "cache")) == 2


def test_token_cache_built_on_a_process_pool_matches_one_built_in_process(tmp_path):
    """``warm_cache`` tokenizes only the files missing from the cache, on a pool of processes, and the
    dataset read from that cache equals one tokenized in this process."""
    from glimpse_train.data import warm_cache

    files = []
    for i, (fen, mv) in enumerate([(START, [("e2e4", "30"), ("g1f3", "M3")]), (E4, [("e7e5", "-12")]),
                                   (START.replace(" 0 1", " 2 3"), [("d2d4", "M-2")])]):
        f = tmp_path / f"{i}.tsv.gz"
        f.write_bytes(labelstore.gzip_bytes([labelstore.format_line(fen, mv)]))
        files.append(str(f))
    assert warm_cache(files[:1], str(tmp_path / "pool"), workers=1) == 1
    assert warm_cache(files, str(tmp_path / "pool"), workers=2) == 2
    assert warm_cache(files, str(tmp_path / "pool"), workers=2) == 0
    pooled = MemDataset(files, str(tmp_path / "pool"), log=lambda *_: None)
    alone = MemDataset(files, str(tmp_path / "alone"), log=lambda *_: None, workers=1)
    assert len(alone.states) == 2 and list(alone.row_key) == [30.0, 99997.0, -12.0]  # the repeated START: first wins
    for k in ("states", "source", "row_pos", "row_action", "row_p", "row_key", "val"):
        assert np.array_equal(getattr(pooled, k), getattr(alone, k)), k
    # A script without a ``__main__`` guard reads the files too (its workers never re-run it).
    script = tmp_path / "plain.py"
    script.write_text("import sys\nfrom glimpse_train.data import MemDataset\n"
                      f"ds = MemDataset({files!r}, {str(tmp_path / 'script')!r}, workers=2)\n"
                      "print(len(ds.states))\n")
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(labelstore.__file__))))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.split()[-1] == "2", r.stderr[-500:]
    # A file a worker cannot read fails the whole read, naming the error.
    bad = tmp_path / "bad.tsv.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(RuntimeError, match="Not a gzipped file"):
        warm_cache(files + [str(bad)], str(tmp_path / "bad"), workers=2)


def test_merge_tiers_keeps_deep_top():
    deep = {"e2e4": "40", "d2d4": "35"}
    shallow = {"e2e4": "10", "d2d4": "50", "g1f3": "90", "a2a3": "-20", "b2b4": "M2"}
    out = raylabel.merge_tiers(deep, shallow)
    assert out["e2e4"] == "40" and out["d2d4"] == "35"
    assert out["g1f3"] == "34" and out["b2b4"] == "34" and out["a2a3"] == "-20"
    assert raylabel.merge_tiers({"e2e4": "M3"}, {"d2d4": "M1", "a2a3": "5"}) == {"e2e4": "M3", "d2d4": "M3", "a2a3": "5"}


@pytest.mark.skipif(not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs Stockfish (apt)")
def test_label_chunk_two_tier_labels_every_legal_move():
    sf = chessdata.find_stockfish()
    mate_in_1 = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"
    res = raylabel.label_chunk([START, mate_in_1], raylabel.LabelScheme("two-tier", 4, 3, 1), sf, nice=0)
    (f1, m1), (f2, m2) = res["records"]
    assert {m for m, _ in m1} == {m for m, _ in moves_of(START)}
    keys = [chessdata.score_key(s) for _, s in m1]
    assert keys == sorted(keys, reverse=True)
    assert m2[0] == ("a1a8", "M1") and res["core_seconds"] > 0


#: positions with mates for either side, few legal moves (one search), promotions, castling, en passant.
LEAN_FENS = [START, E4, "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1", "8/8/8/8/8/5k2/4p3/4K3 w - - 0 1",
             "r3k2r/pppq1ppp/2np1n2/2b1p1B1/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 6 8",
             "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3", "8/1P4k1/8/8/8/8/6K1/8 w - - 0 1",
             "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"]


def _reference_labels(fens, scheme, sf):
    """``label_position``'s rule with python-chess's ``engine.analyse`` (the client ``label_chunk`` used
    before ``uci_pipe``), one fresh engine, in the same order."""
    import chess
    import chess.engine

    def multipv(eng, board, depth, k):
        out = {}
        for info in eng.analyse(board, chess.engine.Limit(depth=depth), multipv=k):
            if info.get("pv") and "score" in info:
                out.setdefault(info["pv"][0].uci(), chessdata.score_str(info["score"]))
        return out

    got = []
    with chess.engine.SimpleEngine.popen_uci(sf) as eng:
        eng.configure({"Threads": 1, "Hash": scheme.hash_mb})
        for fen in fens:
            board = chess.Board(fen)
            n = board.legal_moves.count()
            if n == 0:
                continue
            if n > scheme.top_k:
                sc = raylabel.merge_tiers(multipv(eng, board, scheme.depth, scheme.top_k),
                                          multipv(eng, board, scheme.shallow_depth, n))
            else:
                sc = multipv(eng, board, scheme.depth, n)
            got.append((fen, sorted(sc.items(), key=lambda kv: -chessdata.score_key(kv[1]))))
    return got


@pytest.mark.skipif(not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs Stockfish (apt)")
def test_label_chunk_matches_python_chess_and_keeps_one_stockfish():
    """The lean client gives python-chess's scores move for move, also after a self-play chunk in the same
    worker (whose ``Skill Level`` must not reach the labelling engine); a second chunk reuses the worker's
    Stockfish (same process) and, after ``ucinewgame``, labels as a fresh engine does; a Stockfish that died
    is replaced; an illegal position is skipped, never sent."""
    import chess

    from glimpse_train import uci_pipe

    sf = chessdata.find_stockfish()
    scheme = raylabel.LabelScheme("two-tier", 7, 4, 2, hash_mb=raylabel.SELFPLAY_HASH_MB)
    want = _reference_labels(LEAN_FENS, scheme, sf)
    played = raylabel.selfplay_chunk([1, 2], sf, nice=0)
    boards = [chess.Board(f) for f in played["fens"]]
    assert len(boards) >= 4 and played["core_seconds"] > 0
    assert all(b.is_valid() and not b.is_game_over() for b in boards) and len(set(played["fens"])) == len(boards)
    first = raylabel.label_chunk(LEAN_FENS, scheme, sf, nice=0)
    assert [(f, [tuple(x) for x in m]) for f, m in first["records"]] == want
    eng = uci_pipe.shared(sf, scheme.hash_mb)
    pid = eng.proc.pid
    again = raylabel.label_chunk(LEAN_FENS, scheme, sf, nice=0)
    assert uci_pipe.shared(sf, scheme.hash_mb) is eng and again["records"] == first["records"]
    os.kill(pid, 9)
    eng.proc.wait()
    illegal = "8/8/8/8/8/8/k7/K7 w - - 0 1"  # touching kings
    third = raylabel.label_chunk([illegal] + LEAN_FENS[:2], scheme, sf, nice=0)
    assert uci_pipe.shared(sf, scheme.hash_mb).proc.pid != pid
    assert third["records"] == first["records"][:2] and third["fens"][0] == illegal
    with pytest.raises(ValueError):
        raylabel.label_chunk(["not a fen"], scheme, sf, nice=0)
    uci_pipe.close_shared()


def _chunk_pid(sf, hash_mb):
    from glimpse_train import uci_pipe

    res = raylabel.label_chunk(LEAN_FENS[:2], raylabel.LabelScheme("two-tier", 5, 4, 2, hash_mb=hash_mb), sf, 0)
    return uci_pipe.shared(sf, hash_mb).proc.pid, res["records"]


@pytest.mark.skipif(not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs Stockfish (apt)")
def test_forked_worker_starts_its_own_stockfish():
    """``remote label`` forks its pool: a child of a process that holds an engine must start its own, never
    write to its parent's pipes, and leave the parent's engine running."""
    import multiprocessing as mp

    from glimpse_train import uci_pipe

    sf = chessdata.find_stockfish()
    pid, records = _chunk_pid(sf, 32)
    with mp.get_context("fork").Pool(1) as pool:
        child_pid, child_records = pool.apply(_chunk_pid, (sf, 32))
    assert child_pid != pid and child_records == records
    assert _chunk_pid(sf, 32) == (pid, records)
    uci_pipe.close_shared()


def test_uci_pipe_reports_an_engine_that_never_answers_or_quits(tmp_path):
    """A binary that is not a UCI engine: one that reads its input and never answers is killed after the
    start-up timeout, one that exits at once is reported; both as ``UciError``, neither hangs."""
    from glimpse_train import uci_pipe

    mute = tmp_path / "mute.sh"
    mute.write_text("#!/bin/sh\nexec cat > /dev/null\n")
    gone = tmp_path / "gone.sh"
    gone.write_text("#!/bin/sh\nexit 3\n")
    for p in (mute, gone):
        p.chmod(0o755)
    with pytest.raises(uci_pipe.UciError, match="no uciok/readyok within 0.5 s"):
        uci_pipe.UciPipe(str(mute), 16, startup_timeout=0.5)
    with pytest.raises(uci_pipe.UciError, match="did not start as a UCI engine"):
        uci_pipe.UciPipe(str(gone), 16, startup_timeout=30)
    with pytest.raises(OSError):
        uci_pipe.UciPipe(str(tmp_path / "absent"), 16)


_LABEL_ONE_CHUNK = """
import json, sys, time
sys.path.insert(0, {root!r})
from glimpse_train import raylabel
fens = {fens!r}
before = time.process_time()
res = raylabel.label_chunk(fens, raylabel.LabelScheme("two-tier", 9, 4, 2), {sf!r}, nice=0)
print(json.dumps({{"before": before, "core_seconds": res["core_seconds"], "n": len(res["records"])}}))
"""


@pytest.mark.skipif(not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs Stockfish (apt)")
def test_label_chunk_core_seconds_include_stockfish():
    """The cost a shard records is Stockfish's CPU time plus the worker's, read from the running engine
    (``/proc``): a worker keeps its Stockfish, so ``os.times()``'s children fields never see it, and the first
    chunk is charged the engine's start-up. Measured on its own: the chunk runs in a child process whose CPU
    time, with its Stockfish (quit and reaped at exit), ``os.wait4`` returns for that child alone (engines or
    Ray workers that other tests leave behind do not count)."""
    import subprocess
    import sys

    fens = [START, E4, "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"]
    code = _LABEL_ONE_CHUNK.format(root=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), fens=fens,
                                   sf=chessdata.find_stockfish())
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, out
    res = json.loads(out.strip().splitlines()[-1])
    total = usage.ru_utime + usage.ru_stime  # the child's and its reaped Stockfish's CPU seconds
    chunk = total - res["before"]  # less the interpreter start and imports before label_chunk
    assert res["n"] == 3 and chunk > 0.1, "depth 9 on three positions keeps Stockfish busy for a while"
    assert 0.9 * chunk - 0.05 <= res["core_seconds"] <= chunk + 0.05, (res, total)


def _die_once(chunk, marker):
    """A task that kills its own worker the first time it sees chunk 1 (a lost worker)."""
    if chunk == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return chunk * 10


def test_run_chunks_retries_a_lost_worker(tmp_path):
    ray = pytest.importorskip("ray")
    import sys

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test module is not importable there
    raylabel.ray_init(2, log=lambda *_: None)
    errors = []
    try:
        got = raylabel.run_chunks(_die_once, [0, 1, 2], (str(tmp_path / "marker"),), on_error=errors.append)
        assert errors == [] and sorted(got) == [0, 10, 20]
        assert os.path.exists(tmp_path / "marker")  # the worker really died once
    finally:
        ray.shutdown()


def _slow(chunk, seconds):
    import time

    time.sleep(seconds)
    return chunk


def test_run_chunks_deadline_keeps_the_running_chunks_and_starts_no_more():
    ray = pytest.importorskip("ray")
    import sys
    import time

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    raylabel.ray_init(2, log=lambda *_: None)
    try:
        got = raylabel.run_chunks(_slow, list(range(6)), (1.0,), max_in_flight=2, deadline=time.time() + 0.5)
        assert sorted(got) == [0, 1], "the two chunks in flight at the deadline finish; the other four never start"
        got = raylabel.run_chunks(_slow, list(range(5)), (0.0,), max_in_flight=2)
        assert sorted(got) == list(range(5)), "without a deadline every chunk runs, two at a time"
    finally:
        ray.shutdown()
