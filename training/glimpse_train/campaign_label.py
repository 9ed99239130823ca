"""The campaign's label phase (``campaign``, step 1): candidates (``campaign_positions``) labelled by
Stockfish as Ray tasks (``raylabel``), written to the label store in shards as they come (``shard_due``),
sized by the measured rate of an unstarved phase and cut off at ``label_wall_cap`` × ``label_minutes``, all
timed on the campaign's ``PauseClock`` (a ``kill -STOP`` pause does not count).
"""

from __future__ import annotations

import time

from tqdm import tqdm

from . import raylabel
from .campaign_config import BUSY_FOR_RATE, shard_due


class CampaignLabelling:
    """The labelling part of ``campaign.Campaign`` (a mixin: it uses the campaign's ``cfg``, ``state``,
    ``store``, ``stockfish``, ``stop``, ``clock``, ``log``, ``scheme()``, ``label_round`` and the
    ``campaign_positions.CampaignPositions`` methods)."""

    def label_with_ray(self) -> int:
        """``label_phase`` with Ray running: Ray runs only while labelling (its idle workers cost ~10 % of a
        core each while training). ``ray.init`` sets signal handlers of its own, and after ``ray.shutdown``
        a SIGTERM killed the process outright although Python still reported the campaign's handler (measured: exit
        143, no checkpoint), so the stop handler is installed again after each."""
        raylabel.ray_init(self.cfg.workers, self.log)
        self.stop.install()
        try:
            return self.label_phase()
        finally:
            raylabel.ray_shutdown()
            self.stop.install()

    def label_phase(self) -> int:
        c = self.cfg
        # Positions per second per worker, from the last unstarved phase; a fresh machine starts from 15, about
        # what the two-tier scheme and the candidate search together reached on 2 idle cores.
        rate = self.state.get("rate") or 15.0
        n = max(c.chunk * c.workers, int(rate * c.workers * c.label_minutes * 60))
        t0 = self.clock()  # leaves out SIGSTOP pauses (``PauseClock``)
        carried = self.load_pending()
        cands = carried + (self.candidates(n - len(carried)) if len(carried) < n else [])
        self.save_pending(cands)  # a kill from here on loses none of them
        self.log(f"label: {len(cands)} positions ({len(carried)} carried over from the last phase, the rest new; "
                 f"{self.clock() - t0:.0f} s to find), scheme {self.scheme()}")
        if not cands:
            return 0
        src_of = {f: s for s, f in cands}
        # The carried ones and the new ones are chunked apart, so that the new ones' runs (``shuffle_runs``: the
        # plies of a game in order) start at a chunk's start whatever the carry's length.
        parts = (cands[:len(carried)], cands[len(carried):])
        chunks = [[f for _, f in part[i:i + c.chunk]] for part in parts for i in range(0, len(part), c.chunk)]
        pending: list = []
        cost = [0.0]  # core-seconds of the labels not yet in a shard
        core = [0.0]  # core-seconds of the whole phase
        done = [0]
        last_write = [time.time()]
        sf_name = raylabel.stockfish_name(self.stockfish)
        bar = tqdm(total=len(cands), unit="pos", desc=f"cycle {self.state['cycle']} label", smoothing=0.1,
                   mininterval=5, dynamic_ncols=True)

        def flush():
            if pending:
                info = self.store.add([(src_of.get(f, "?"), f, m) for f, m in pending], self.scheme().settings(sf_name),
                                      cost[0])
                for s in info:
                    self.log(f"store: + {s.file} ({s.positions} positions, {s.moves} moves)")
                pending.clear()
                cost[0] = 0.0
            last_write[0] = time.time()

        done_fens: list[str] = []

        def on_result(r):
            pending.extend(r["records"])
            done_fens.extend(r.get("fens") or [f for f, _ in r["records"]])  # skipped ones are not retried
            cost[0] += r["core_seconds"]
            core[0] += r["core_seconds"]
            done[0] += len(r["records"])
            bar.update(len(r["records"]))
            if shard_due(len(pending), time.time() - last_write[0], c):
                flush()

        # At most two chunks per worker in flight; the phase is sized by the rate of an unstarved phase (n
        # above), and none starts after label_wall_cap × label_minutes: on a machine shared with builds and
        # matches the phase stretches to finish its positions, but not for ever, and training gets its turn.
        t_label = self.clock()
        raylabel.run_chunks(raylabel.label_chunk, chunks, (self.scheme(), self.stockfish, c.nice), on_result,
                            stop=self.stop, on_error=lambda e: self.log(f"label: a chunk was lost: {e!r}"[:500]),
                            max_in_flight=2 * c.workers, deadline=t0 + c.label_wall_cap * c.label_minutes * 60,
                            clock=self.clock)
        flush()
        bar.close()
        finished = set(done_fens)
        left = [(src, f) for src, f in cands if f not in finished]
        self.save_pending(left)
        if left:
            self.log(f"label: {len(left)} positions left unlabelled at the deadline, kept for the next phase")
        el = self.clock() - t0
        lab = self.clock() - t_label
        busy = core[0] / max(1e-9, lab * c.workers)  # share of the workers' cores spent labelling
        self.log(f"label: {done[0]} positions in {el:.0f} s ({lab:.0f} s labelling, "
                 f"{core[0]:.0f} core-s, {busy:.0%} of {c.workers} cores)")
        # A phase cut short by a stop spread its finding time over the few positions it labelled: its rate
        # would size the next phase small, so only a phase that ran its course, unstarved, measures it.
        if done[0] and el > 30 and busy >= BUSY_FOR_RATE and not self.stop():
            self.state["rate"] = round(done[0] / el / c.workers, 2)
        self.state["label_seconds"] = self.state.get("label_seconds", 0.0) + el
        self.state["label_round"] = self.label_round + 1
        return done[0]
