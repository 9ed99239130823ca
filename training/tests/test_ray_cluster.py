"""Labelling on a real multi-node Ray cluster on this machine (``make test-ray-cluster``): a head and a
two worker nodes (separate raylets on loopback, started by ``ray.cluster_utils.Cluster`` as ``ray start``
would), the campaign's labeller connected through ``RAY_ADDRESS``, a worker node killed while it holds tasks.
Every position must come back labelled exactly once, and the label store must match its manifest."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from glimpse_train import chessdata, labelstore, raylabel

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING = os.path.dirname(HERE)


def _positions(n: int) -> list[str]:
    import random

    import chess

    rng, board, out = random.Random(11), chess.Board(), []
    while len(out) < n:
        board.push(rng.choice(list(board.legal_moves)))
        if board.is_game_over() or board.ply() > 40:
            board = chess.Board()
        elif board.fen() not in out:
            out.append(board.fen())
    return out


PAUSE, FRESH = 2.0, 0.5
"""Seconds an attempt waits before it labels; an attempt whose mark is younger than ``FRESH`` is surely
still running (a mark with no result yet is not enough: the result may be on its way to the driver)."""


def _label_counting_attempts(chunk, scheme, stockfish, marks):
    """``raylabel.label_chunk`` on ``chunk = (index, fens)``, leaving one file per attempt in ``marks``
    named after the chunk and the node that runs it; the attempt then waits ``PAUSE`` seconds, so an
    attempt whose mark is younger than ``FRESH`` is still running when the test kills its node."""
    import uuid

    import ray

    index, fens = chunk
    node = ray.get_runtime_context().get_node_id()
    open(os.path.join(marks, f"chunk{index:03d}-{node}-{uuid.uuid4().hex}"), "w").close()
    time.sleep(PAUSE)
    return raylabel.label_chunk(fens, scheme, stockfish, 0)


@pytest.mark.skipif(not any(os.path.exists(p) for p in chessdata.SF_PATHS), reason="needs Stockfish (apt)")
def test_a_lost_node_costs_no_position_and_no_duplicate(tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    # The nodes' workers import glimpse_train from this checkout, as a cluster's would from its install.
    monkeypatch.setenv("PYTHONPATH", TRAINING + os.pathsep + os.environ.get("PYTHONPATH", ""))
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    # Two worker nodes: all raylets share one IP, so the driver may attach to any of them, and the node
    # killed below must be one the driver is not connected to (Ray refuses to remove that one).
    workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    fens = _positions(36)
    chunks = list(enumerate(fens[i:i + 2] for i in range(0, len(fens), 2)))
    marks = tmp_path / "attempts"
    marks.mkdir()
    scheme = raylabel.LabelScheme("two-tier", 6, 3, 1)
    results, errors, killed, finished = [], [], [], threading.Event()
    try:
        raylabel.ray_init(3, log=lambda *_: None)
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the test module is not importable there
        assert ray.cluster_resources().get("CPU") == 3, "head and two worker nodes, 1 CPU each"
        driver = ray._private.worker.global_worker.node._raylet_socket_name
        candidates = {n.node_id: n for n in workers if n._raylet_socket_name != driver}

        def kill_a_running_node():
            # Watch the marks (not only when results arrive: the nodes run in step, so at a result's arrival
            # another node's attempt may be neither fresh nor done) and, once 3 chunks are back, kill a
            # worker node (not the driver's) the moment it starts an attempt: raylet and workers, no warning.
            while not finished.wait(0.05):
                if len(results) < 3:
                    continue
                for mark in os.listdir(marks):
                    node = mark[9:].split("-")[0]  # chunkNNN-<node id>-<uuid>
                    if node in candidates and time.time() - os.path.getmtime(marks / mark) < FRESH:
                        cluster.remove_node(candidates[node], allow_graceful=False)
                        killed.append(time.time())
                        return

        killer = threading.Thread(target=kill_a_running_node, daemon=True)
        killer.start()
        raylabel.run_chunks(_label_counting_attempts, chunks, (scheme, chessdata.find_stockfish(), str(marks)),
                            results.append, on_error=errors.append, max_retries=3)
        finished.set()
        killer.join()
        # The GCS marks a node dead after its health checks fail, which can come after the last chunk on a
        # fast machine: wait for it (up to a minute) rather than read the list once.
        deadline, dead = time.time() + 60, []
        while killed and not dead and time.time() < deadline:
            dead = [n for n in ray.nodes() if not n["Alive"]]
            time.sleep(0.2)
    finally:
        finished.set()
        raylabel.ray_shutdown()
        cluster.shutdown()
    by_node = sorted(m[9:].split("-")[0][:8] for m in os.listdir(marks))
    assert killed, f"no worker node was killed while labelling: attempts by node {by_node}, candidates {list(candidates)}"
    assert len(dead) == 1, f"the killed node is marked dead: {dead}"
    attempts = len(os.listdir(marks))
    assert attempts > len(chunks), f"{attempts} attempts for {len(chunks)} chunks: the killed node's tasks ran again"
    assert errors == [], errors
    labelled = [f for r in results for f, _ in r["records"]]
    assert sorted(labelled) == sorted(fens), "every position labelled, none twice"
    store = labelstore.LabelStore(str(tmp_path / "store"))
    store.add([("selfplay", f, m) for r in results for f, m in r["records"]], scheme.settings("Stockfish"),
              sum(r["core_seconds"] for r in results))
    assert store.verify() == []
    reopened = labelstore.LabelStore(str(tmp_path / "store"))
    assert reopened.totals()["positions"] == len(fens)
    assert len(labelstore.known_keys(reopened.files())) == len(fens)



def test_local_labelling_starts_its_own_ray_beside_a_running_cluster(monkeypatch):
    """Without ``RAY_ADDRESS`` the labeller starts a Ray of its own even when another process's cluster is
    up (``ray.init()`` would join that one and refuse ``num_cpus``, stopping a running campaign)."""
    pytest.importorskip("ray")
    import ray
    from ray.cluster_utils import Cluster

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")
    other = Cluster(initialize_head=True, head_node_args={"num_cpus": 3, "include_dashboard": False})
    try:
        raylabel.ray_init(1, log=lambda *_: None)
        assert ray.cluster_resources().get("CPU") == 1, "its own 1-CPU Ray, not the 3-CPU cluster"
    finally:
        raylabel.ray_shutdown()
        other.shutdown()

if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
