"""A native build of the labelling oracle: Stockfish 15.1 from the same source as Debian's package, compiled
for this CPU, searching the same trees (``make stockfish-native``).

Debian's ``stockfish`` 15.1 package is compiled for any x86-64 (its ``compiler`` command reports SSE2 only).
``training/stockfish/stockfish-15.1-src.tar.xz`` is upstream's source at tag ``sf_15.1`` (commit
``758f9c9350abee36a5865ec701560db8ea62004d`` of github.com/official-stockfish/Stockfish: ``git archive
--prefix=stockfish-15.1/ sf_15.1 src Copying.txt AUTHORS | xz -9e``; GPL-3.0). ``build`` compiles it with the
CPU's instructions (``ARCH`` x86-64-vnni512, -bmi2, -avx2 or -sse41-popcnt) around the package's own network (its
``export_net`` command; the file's SHA-256 must begin with the name's 12 hex digits) and installs it only if its
``bench`` counts the same nodes as the package's: the same evaluation and search, so the same labels, for less
CPU (``CHANGELOG.md`` has the figures). ``chessdata.find_stockfish`` then prefers it for labelling; matches and
the ladder keep the package's binary, whose ``UCI_Elo`` depends on its speed.

Usage (from the repository root): ``PYTHONPATH=training .venv/bin/python -m glimpse_train.native_stockfish
[--reference /usr/games/stockfish] [--out .cache/stockfish] [--jobs N]``; ``--compare SHARD.tsv.gz [--positions
N]`` labels a label file's first N positions with both binaries (two-tier, as the campaign) and prints each one's
CPU a position and whether the labels are byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time

from . import raylabel, uci_pipe
from .labelstore import file_sha256
from .chessdata import NATIVE_STOCKFISH, SF_PATHS

HERE = os.path.dirname(os.path.abspath(__file__))
#: the vendored source and its SHA-256 (a changed file is refused).
SOURCE = os.path.join(HERE, "..", "stockfish", "stockfish-15.1-src.tar.xz")
SOURCE_SHA256 = "188a9ab906cb7dd73050df9b7069f16c5122ab2af2212aa81475c941861df39b"
#: ``id name`` the reference binary must report.
VERSION_NAME = "Stockfish 15.1"


class BuildError(RuntimeError):
    """The native build could not be made, or does not search as the reference does."""


class NothingToBuild(BuildError):
    """This machine cannot or need not build it (no reference Stockfish 15.1, no compiler, no faster ARCH)."""


def cpu_info(path: str = "/proc/cpuinfo") -> tuple[set[str], str, int]:
    """(flags, vendor id, family) of the first CPU in ``path``; empty values where it cannot be read."""
    flags: set[str] = set()
    vendor, family = "", 0
    try:
        with open(path) as f:
            for line in f:
                key, _, val = line.partition(":")
                key, val = key.strip(), val.strip()
                if key == "flags" and not flags:
                    flags = set(val.split())
                elif key == "vendor_id" and not vendor:
                    vendor = val
                elif key == "cpu family" and not family:
                    family = int(val)
    except (OSError, ValueError):
        pass
    return flags, vendor, family


def choose_arch(flags: set[str], vendor: str, family: int) -> str | None:
    """Stockfish 15.1's ``ARCH`` for a CPU: ``x86-64-vnni512`` on AMD Zen 5 (family 0x1A) with AVX-512 VNNI,
    ``x86-64-bmi2`` where BMI2's PEXT is fast (Intel, AMD from Zen 3, family 0x19), ``x86-64-avx2``,
    ``x86-64-sse41-popcnt``; ``None`` where nothing beats the package's SSE2 build. The AVX-512 build only on Zen 5:
    there ``x86-64-vnni512`` labelled faster than ``x86-64-bmi2`` with identical labels (``CHANGELOG.md``,
    "Changed", 2026-12-06), while on an Intel Xeon with AVX-512 VNNI (2 cores) it labelled slower (20.7 and 19.4
    against 18.2 and 16.3 ms of CPU a position, 720 positions in each order) and ``x86-64-vnni256`` no faster
    (``--arch``, then ``compare`` of the two builds, campaign paused, 2026-11-29). Zen 4 (AVX-512 on 256-bit
    units) is unmeasured and keeps ``x86-64-bmi2``."""
    if {"avx512f", "avx512bw", "avx512_vnni"} <= flags and vendor == "AuthenticAMD" and family >= 0x1A:
        return "x86-64-vnni512"
    if {"avx2", "bmi2"} <= flags and (vendor == "GenuineIntel" or family >= 0x19):
        return "x86-64-bmi2"
    if "avx2" in flags:
        return "x86-64-avx2"
    if {"sse4_1", "popcnt"} <= flags:
        return "x86-64-sse41-popcnt"
    return None


def bench_nodes(binary: str, depth: int = 13) -> int:
    """Nodes ``binary bench 16 1 <depth>`` searched (Stockfish's own signature of a build: the same source and
    network give the same count on every CPU). Raises ``BuildError`` when it prints none."""
    r = subprocess.run([binary, "bench", "16", "1", str(depth)], capture_output=True, text=True, timeout=600)
    m = re.search(r"Nodes searched\s*:\s*(\d+)", r.stdout + r.stderr)
    if not m:
        raise BuildError(f"{binary} bench printed no node count (exit status {r.returncode})")
    return int(m.group(1))


def build(reference: str, out: str, jobs: int | None = None, arch: str | None = None, log=print) -> dict:
    """Builds the vendored Stockfish 15.1 for this CPU into ``out/stockfish`` (module docstring) and writes
    ``out/build.json``: ``{"arch", "bench_nodes", "reference", "seconds", "date"}``. Raises ``BuildError``
    when the reference is not Stockfish 15.1, the source's or the network's hash is wrong, no C++ compiler is
    found, the CPU has nothing to gain (``choose_arch``), the compiler fails, or the build's bench differs;
    ``NothingToBuild`` for the reference, compiler and CPU cases."""
    t0 = time.time()
    if not os.path.exists(reference):
        raise NothingToBuild(f"no {reference} (apt-get install -y stockfish on Debian 12)")
    if raylabel.stockfish_name(reference) != VERSION_NAME:
        raise NothingToBuild(f"{reference} is not {VERSION_NAME} (apt-get install -y stockfish on Debian 12)")
    if file_sha256(SOURCE) != SOURCE_SHA256:
        raise BuildError(f"{SOURCE}: SHA-256 differs from the vendored source's")
    if shutil.which("g++") is None or shutil.which("make") is None:
        raise NothingToBuild("no g++/make (apt-get install -y g++ make)")
    arch = arch or choose_arch(*cpu_info())
    if arch is None:
        raise NothingToBuild("this CPU has no AVX2 or SSE4.1+POPCNT: the package's SSE2 build is as fast")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        with tarfile.open(SOURCE) as tar:
            try:
                tar.extractall(tmp, filter="data")
            except TypeError:  # Python before 3.11.4: no extraction filters (the archive is ours, hashed above)
                tar.extractall(tmp)
        src = os.path.join(tmp, "stockfish-15.1", "src")
        with open(os.path.join(src, "evaluate.h")) as f:
            net = re.search(r'EvalFileDefaultName\s+"(nn-([0-9a-f]{12})\.nnue)"', f.read())
        if not net:
            raise BuildError("no EvalFileDefaultName in evaluate.h")
        subprocess.run([reference], input=f"uci\nisready\nexport_net {os.path.join(src, net.group(1))}\nquit\n",
                       capture_output=True, text=True, timeout=300, check=True)
        path = os.path.join(src, net.group(1))
        if not os.path.exists(path) or not file_sha256(path).startswith(net.group(2)):
            raise BuildError(f"{reference} did not export {net.group(1)} (or its hash differs)")
        jobs = jobs or max(1, len(os.sched_getaffinity(0)))
        log(f"native stockfish: ARCH={arch}, {jobs} jobs")
        r = subprocess.run(["make", f"-j{jobs}", "build", f"ARCH={arch}", "COMP=gcc"], cwd=src,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"make failed (exit status {r.returncode}): {r.stderr.strip()[-800:]}")
        binary = os.path.join(src, "stockfish")
        want, got = bench_nodes(reference), bench_nodes(binary)
        if want != got:
            raise BuildError(f"bench: {got} nodes against the reference's {want}; not installed")
        dest = os.path.join(out, "stockfish")
        shutil.copy2(binary, dest + ".tmp")
        os.replace(dest + ".tmp", dest)
    info = {"arch": arch, "bench_nodes": got, "reference": os.path.abspath(reference), "source_sha256": SOURCE_SHA256,
            "seconds": round(time.time() - t0, 1), "date": time.strftime("%Y-%m-%d")}
    with open(os.path.join(out, "build.json"), "w") as f:
        json.dump(info, f, indent=1)
    log(f"native stockfish: {dest} (bench {got} nodes, as {reference}; {info['seconds']} s)")
    return info


def installed(out: str) -> dict | None:
    """``out/build.json`` when ``out/stockfish`` is there and was built from the vendored source as it is now;
    else ``None``."""
    try:
        with open(os.path.join(out, "build.json")) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    ok = os.path.exists(os.path.join(out, "stockfish")) and info.get("source_sha256") == SOURCE_SHA256
    return info if ok else None


def compare(reference: str, native: str, path: str, positions: int = 480, log=print) -> dict:
    """Labels the first ``positions`` FENs of the label file ``path`` with ``reference`` and with ``native``
    (``raylabel.label_chunk``, 24 a chunk, the campaign's scheme; one after the other in this process) and
    returns ``{"identical": bool, "<binary>": {"ms_cpu_per_position", "positions_per_s"}}``."""
    import gzip

    with gzip.open(path, "rt") as f:
        fens = [line.split("\t", 1)[0] for _, line in zip(range(positions), f)]
    out: dict = {}
    records = {}
    for sf in (reference, native):
        t0, core, recs = time.time(), 0.0, []
        for i in range(0, len(fens), 24):
            r = raylabel.label_chunk(fens[i:i + 24], raylabel.LabelScheme(), sf, nice=0)
            recs += r["records"]
            core += r["core_seconds"]
        uci_pipe.close_shared()
        wall = time.time() - t0
        records[sf] = recs
        out[sf] = {"ms_cpu_per_position": round(1000 * core / max(1, len(recs)), 2),
                   "positions_per_s": round(len(recs) / wall, 1)}
        log(f"{sf}: {len(recs)} positions, {out[sf]['ms_cpu_per_position']} ms of CPU each, "
            f"{out[sf]['positions_per_s']} a second")
    out["identical"] = records[reference] == records[native]
    log(f"labels byte-identical: {out['identical']}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", default=next((p for p in SF_PATHS if os.path.exists(p)), SF_PATHS[0]),
                    help="Debian's Stockfish 15.1 (the network and the bench to match)")
    ap.add_argument("--out", default=os.path.dirname(NATIVE_STOCKFISH))
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--arch", default=None, help="Stockfish ARCH (default: from /proc/cpuinfo)")
    ap.add_argument("--force", action="store_true",
                    help="build again even if a verified build of this source is there")
    ap.add_argument("--compare", metavar="LABELS.tsv.gz", help="time both binaries on this file's positions instead")
    ap.add_argument("--positions", type=int, default=480, help="with --compare: how many (default 480)")
    a = ap.parse_args(argv)
    if a.compare:
        native = os.path.join(a.out, "stockfish")
        if not installed(a.out):
            print(f"native stockfish: no verified build in {a.out} (make stockfish-native)")
            return 1
        return 0 if compare(a.reference, native, a.compare, a.positions)["identical"] else 1
    done = installed(a.out)
    if done and not a.force:
        print(f"native stockfish: {os.path.join(a.out, 'stockfish')} is up to date (ARCH={done['arch']})")
        return 0
    try:
        build(a.reference, a.out, a.jobs, a.arch)
    except NothingToBuild as e:
        print(f"native stockfish: not built, labelling uses the package's binary: {e}", flush=True)
        return 0
    except (BuildError, OSError, subprocess.SubprocessError) as e:
        print(f"native stockfish: build failed: {e}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
