"""Process pathologies on real recordings of this machine: the accuracy table, and the recorder.

The corpus (``tests/data/processes/``) is real: each recording is ``perfsleuth collect`` (the
project's own collector, 1 s samples) run on this 2-core machine while a scenario plays — real
processes that loop, hum, leak, grow and reset their memory or a log file, contend for the CPUs,
run a legitimate on/off job or churn out short-lived processes — under a co-tenant load
(``stress-ng --cpu``) and whatever else the shared machine was doing. Each recording has its
truth: which process must be found as what, and which must stay quiet (the on/off job, the
measurement tools, the churn).

    .venv/bin/python benchmarks/process_accuracy.py                 # the table (both halves)
    .venv/bin/python benchmarks/process_accuracy.py --ablate        # ... and without wait/identity
    .venv/bin/python benchmarks/process_accuracy.py record t1 --seed 1 --template loops

The table scans each recording with the paper's rules scaled to the recording (10 s periods,
a 30 min window; the ramp's minimum duration follows the period: 12 periods = 2 min) and with
5 s periods, and counts: pathologies found (by the right check), missed, findings on processes
that must stay quiet, and findings on other processes (co-tenants, other work on the machine:
listed, not scored). Recordings whose name starts with ``h`` are the held-out half: nothing was
tuned on them.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "processes"

# The scenario's processes. Each names itself (PR_SET_NAME: what /proc/PID/stat shows) first.
CHILD = r"""
import ctypes, os, subprocess, sys, time
mode, name, *args = sys.argv[1:]
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)
if mode == "loop":
    while True:
        pass
elif mode == "hum":  # polls: `duty * cycle` s of CPU work, then sleeps the rest of a cycle
    duty, cycle = float(args[0]), float(args[1])
    while True:
        t = time.process_time()
        while time.process_time() - t < duty * cycle:
            pass
        time.sleep(cycle * (1 - duty))
elif mode == "leak":  # touched pages, so RSS really grows
    rate = float(args[0])
    hoard = []
    while True:
        hoard.append(bytearray(b"\x01") * int(rate * 2**20 / 10))
        time.sleep(0.1)
elif mode == "sawmem":  # a cache that grows to `peak` MiB over `every` seconds, then is cleared
    peak, every = float(args[0]), float(args[1])
    hoard = []
    start = time.monotonic()
    while True:
        if time.monotonic() - start >= every:
            hoard.clear()  # big buffers go back to the OS: RSS falls
            start = time.monotonic()
        hoard.append(bytearray(b"\x01") * int(peak * 2**20 / every / 10))
        time.sleep(0.1)
elif mode == "sawfile":  # a log file growing, truncated every `every` seconds (copy-truncate)
    path, rate, every = args[0], float(args[1]), float(args[2])
    chunk = b"log line\n" * int(rate * 2**20 / 10 / 9)
    with open(path, "ab", buffering=0) as log:
        start = time.monotonic()
        while True:
            log.write(chunk)
            if time.monotonic() - start >= every:
                log.truncate(0)
                start = time.monotonic()
            time.sleep(0.1)
elif mode == "onoff":  # a legitimate job: works `on` seconds at a full CPU, idles `off`
    on, off = float(args[0]), float(args[1])
    while True:
        t = time.monotonic()
        while time.monotonic() - t < on:
            pass
        time.sleep(off)
elif mode == "churn":  # starts a short-lived worker every `every` s, each living `life` s
    every, life = float(args[0]), float(args[1])
    work = (
        "import ctypes, json, time, decimal; ctypes.CDLL(None).prctl(15, b'churnjob', 0, 0, 0);"
        f"x = bytearray(b'1') * (24 << 20); time.sleep({life})"
    )
    kids = []
    while True:
        kids.append(subprocess.Popen(["/usr/bin/python3", "-c", work]))
        kids = [k for k in kids if k.poll() is None]
        time.sleep(every)
"""


@dataclass(frozen=True)
class Role:
    """One scenario process: ``mode`` and its arguments, from ``start`` to ``stop`` seconds."""

    name: str
    mode: str
    args: tuple[str, ...]
    start: float
    stop: float
    find: tuple[str, ...] = ()
    """The checks that may report it (empty: it must stay quiet)."""


def scenario(template: str, seed: int, seconds: float) -> tuple[list[Role], int, int]:
    """The roles of one recording, the co-tenant's stress-ng workers and their load (%)."""
    rng = np.random.default_rng(seed)
    end = seconds
    roles: list[Role] = []
    hum = Role(
        "pollerd",
        "hum",
        (f"{rng.uniform(0.15, 0.35):.2f}", f"{rng.uniform(0.02, 0.06):.3f}"),
        0,
        end,
        ("hum",),
    )
    churn = Role(
        "spawner", "churn", (f"{rng.uniform(6, 14):.0f}", f"{rng.uniform(3, 12):.0f}"), 0, end
    )
    on = rng.uniform(15, 50)
    onoff = Role("nightly", "onoff", (f"{on:.0f}", f"{on * rng.uniform(0.8, 1.5):.0f}"), 0, end)
    loop = ("cpu_loop", "constrained_loop")
    if template == "loops":  # the issue's mix: a loop, a hum, a leak, then two contending loops
        cut = rng.uniform(0.4, 0.55) * end
        roles += [
            Role("spinloop", "loop", (), 0, cut, loop),
            hum,
            Role("leaker", "leak", (f"{rng.uniform(0.4, 1.5):.2f}",), 0, end, ("memory_ramp",)),
            Role("crunch_a", "loop", (), cut + 5, end, loop),
            Role("crunch_b", "loop", (), cut + 5, end, loop),
            onoff,
            churn,
        ]
        workers, load = 2, int(rng.integers(30, 60))
    elif template == "starved":  # one loop under a heavy co-tenant, a leak, a growing log
        roles += [
            Role("spinloop", "loop", (), 0, end, loop),
            hum,
            Role("leaker", "leak", (f"{rng.uniform(0.4, 1.5):.2f}",), 0, end, ("memory_ramp",)),
            Role(
                "logwriter",
                "sawfile",
                ("{tmp}/app.log", f"{rng.uniform(0.5, 2):.2f}", f"{rng.uniform(40, 70):.0f}"),
                0,
                end,
                ("saw_tooth",),
            ),
            onoff,
            churn,
        ]
        workers, load = 2, int(rng.integers(75, 95))
    elif template == "saw":  # saw-tooths in memory and in a file, a loop, contention late
        roles += [
            Role(
                "cachesrv",
                "sawmem",
                (f"{rng.uniform(60, 160):.0f}", f"{rng.uniform(40, 70):.0f}"),
                0,
                end,
                ("saw_tooth",),
            ),
            Role(
                "logwriter",
                "sawfile",
                ("{tmp}/app.log", f"{rng.uniform(0.5, 2):.2f}", f"{rng.uniform(40, 70):.0f}"),
                0,
                end,
                ("saw_tooth",),
            ),
            Role("spinloop", "loop", (), 0, end, loop),
            hum,
            onoff,
            churn,
        ]
        workers, load = 1, int(rng.integers(20, 60))
    else:
        raise SystemExit(f"unknown template {template!r}: loops, starved or saw")
    return roles, workers, load


TOOLS = ("perfsleuth", "vmstat", "pidstat")
"""Measurement tools running beside each scenario (they must stay quiet)."""

# The project's collector, recording open-file sizes too (perfsleuth collect without them);
# named as the command is, so the truth can tell it from the scenario's processes.
COLLECT = r"""
import ctypes, sys, threading
from pathlib import Path
ctypes.CDLL(None).prctl(15, b"perfsleuth", 0, 0, 0)
from perfsleuth.collect.collector import Collector
Collector(Path(sys.argv[1]), node="vm", with_files=True).run(
    1.0, threading.Event(), seconds=float(sys.argv[2])
)
"""


def record(name: str, template: str, seed: int, seconds: float) -> None:
    """Play one scenario under ``perfsleuth collect`` and keep the recording and its truth."""
    roles, workers, load = scenario(template, seed, seconds)
    tmp = Path(tempfile.mkdtemp(prefix="perfsleuth-rec-"))
    store = tmp / "rec.duckdb"
    children: list[subprocess.Popen[bytes]] = []
    quiet = subprocess.DEVNULL

    def spawn(argv: list[str]) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(argv, stdout=quiet, stderr=quiet, start_new_session=True)
        children.append(child)
        return child

    load_before = os.getloadavg()
    collector = spawn([sys.executable, "-c", COLLECT, str(store), str(seconds + 8)])
    pids: dict[str, list[int]] = {"perfsleuth": [collector.pid]}
    try:
        time.sleep(3.0)
        origin = time.monotonic()
        pids["vmstat"] = [spawn(["vmstat", "1"]).pid]
        pids["pidstat"] = [spawn(["pidstat", "-h", "-u", "1"]).pid]
        cotenant = spawn(["stress-ng", "--cpu", str(workers), "--cpu-load", str(load), "--quiet"])
        pending = sorted(roles, key=lambda r: r.start)
        running: dict[str, subprocess.Popen[bytes]] = {}
        while (elapsed := time.monotonic() - origin) < seconds:
            while pending and pending[0].start <= elapsed:
                role = pending.pop(0)
                args = [a.format(tmp=tmp) for a in role.args]
                argv = [sys.executable, "-c", CHILD, role.mode, role.name, *args]
                running[role.name] = spawn(argv)
                pids.setdefault(role.name, []).append(running[role.name].pid)
            for role in roles:
                child = running.get(role.name)
                if child is not None and child.poll() is None and elapsed >= role.stop:
                    os.killpg(child.pid, signal.SIGKILL)
            time.sleep(0.2)
        pids["stress-ng"] = [cotenant.pid]
    finally:
        for child in children[1:]:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        collector.wait(timeout=60)
    _export(store, name, roles, pids, workers, load, seed, template, seconds, load_before)
    shutil.rmtree(tmp, ignore_errors=True)


def _export(
    store: Path,
    name: str,
    roles: list[Role],
    pids: dict[str, list[int]],
    workers: int,
    load: int,
    seed: int,
    template: str,
    seconds: float,
    load_before: tuple[float, float, float],
) -> None:
    from perfsleuth.store import Store

    with Store(store, read_only=True) as db:
        frame = db.read_frame("process").drop(columns=["io_bytes"])
    CORPUS.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(CORPUS / f"{name}.parquet", index=False, compression="zstd")
    truth = {
        "template": template,
        "seed": seed,
        "seconds": seconds,
        "recorded": pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
        "load_before": [round(x, 2) for x in load_before],
        "cotenant": f"stress-ng --cpu {workers} --cpu-load {load}",
        "roles": [
            {
                "name": r.name,
                "mode": r.mode,
                "args": list(r.args),
                "start": r.start,
                "stop": min(r.stop, seconds),
                "find": list(r.find),
            }
            for r in roles
        ],
        "find": {r.name: list(r.find) for r in roles if r.find},
        "quiet": sorted({r.name for r in roles if not r.find} | {"churnjob"}),
        "pids": pids,
        "tools": list(TOOLS),
        "cotenants": ["stress-ng*"],
    }
    (CORPUS / f"{name}.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{name}: {len(frame):,} rows, {frame['pid'].nunique()} processes -> {CORPUS}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command")
    rec = sub.add_parser("record", help="record one scenario into the corpus")
    rec.add_argument("name")
    rec.add_argument("--template", required=True, choices=("loops", "starved", "saw"))
    rec.add_argument("--seed", type=int, required=True)
    rec.add_argument("--seconds", type=float, default=280.0)
    parser.add_argument("--ablate", action="store_true")
    args = parser.parse_args()
    if args.command == "record":
        record(args.name, args.template, args.seed, args.seconds)
        return 0
    return table(ablate=args.ablate)


RULES = {
    "10s": {"settings": {"period": "10s", "window": "30m"}},
    "5s": {"settings": {"period": "5s", "window": "30m"}},
}
"""The paper's rules scaled to minutes of data: only the period and the window change (the
ramp's minimum duration follows the period: 12 periods)."""

VARIANTS = {
    "as recorded": (),
    "no run-queue wait": ("cpu_wait",),
    "no wait, no start time": ("cpu_wait", "start_time"),
    "no wait, no machine CPU": ("cpu_wait", "machine_cpu"),
}


@dataclass
class Outcome:
    """One recording scanned with one set of rules."""

    found: list[str]
    missed: list[str]
    noisy: list[str]
    """Findings on processes that must stay quiet (kind: process)."""
    other: list[str]
    """Findings on processes the truth says nothing about (co-tenants, other work)."""


def load(name: str) -> tuple[pd.DataFrame, dict[str, object]]:
    """A recording of the corpus (normalised process frame) and its truth."""
    from perfsleuth.frames import normalise

    frame = pd.read_parquet(CORPUS / f"{name}.parquet")
    truth = json.loads((CORPUS / f"{name}.json").read_text())
    return normalise(frame, "process", source=f"{name}.parquet"), truth


def judge(frame: pd.DataFrame, truth: dict[str, Any], rules: dict[str, Any]) -> Outcome:
    """Scan ``frame`` with ``rules`` and compare with ``truth``.

    A finding is about a scenario process when its pid is one the scenario started (or, for
    a name followed by name, its name is), about a measurement tool when its pid is the
    tool's, about the churn when its name is ``churnjob``; anything else is "other".
    """
    from perfsleuth.processes.detector import ProcessDetector
    from perfsleuth.processes.rules import ProcessRules

    findings = ProcessDetector(rules=ProcessRules.model_validate(rules)).detect(frame)
    find: dict[str, list[str]] = truth["find"]
    pids: dict[str, list[int]] = truth["pids"]
    roles = {r["name"] for r in truth["roles"]}
    role_of = {pid: name for name in roles for pid in pids.get(name, [])}
    tools = {pid for tool in truth["tools"] for pid in pids.get(tool, [])}
    hit: set[str] = set()
    noisy, other = [], []
    for f in findings:
        evidence = f.evidence_dict()
        name, pid = str(evidence.get("process", f.entity)), evidence.get("pid")
        role = role_of.get(int(pid)) if isinstance(pid, int) else (name if name in roles else None)
        what = f"{f.kind.value}: {f.entity.split('/', 1)[-1]}"
        if role in find and f.kind.value in find[role]:
            hit.add(role)
        elif role is not None or pid in tools or _matches(name, truth["quiet"]):
            noisy.append(what)
        else:
            other.append(what)
    return Outcome(sorted(hit), sorted(set(find) - hit), noisy, other)


def table(*, ablate: bool) -> int:
    names = sorted(p.stem for p in CORPUS.glob("*.parquet"))
    if not names:
        raise SystemExit(f"no recordings in {CORPUS}: record some first (see --help)")
    variants = VARIANTS if ablate else {"as recorded": ()}
    print(
        f"{'recording':<10}{'half':<9}{'rules':<6}{'variant':<25}{'found':>6}{'missed':>7}"
        f"{'noisy':>6}{'other':>6}  details"
    )
    totals: dict[tuple[str, str, str], list[int]] = {}
    for name in names:
        frame, truth = load(name)
        half = "held-out" if name.startswith("h") else "tuning"
        for label, rules in RULES.items():
            for variant, dropped in variants.items():
                got = judge(frame.drop(columns=list(dropped)), truth, rules)
                t = totals.setdefault((half, label, variant), [0, 0, 0, 0])
                for i, part in enumerate((got.found, got.missed, got.noisy, got.other)):
                    t[i] += len(part)
                details = "; ".join(
                    [f"missed {', '.join(got.missed)}"] * bool(got.missed)
                    + [f"noisy {', '.join(got.noisy)}"] * bool(got.noisy)
                    + [f"other {', '.join(got.other)}"] * bool(got.other)
                )
                print(
                    f"{name:<10}{half:<9}{label:<6}{variant:<25}{len(got.found):>6}"
                    f"{len(got.missed):>7}{len(got.noisy):>6}{len(got.other):>6}  {details}"
                )
    print()
    print(f"{'half':<9}{'rules':<6}{'variant':<25}{'found':>8}{'noisy':>7}{'other':>7}")
    for (half, label, variant), (found, missed, noisy, other) in sorted(totals.items()):
        print(f"{half:<9}{label:<6}{variant:<25}{found:>4}/{found + missed:<3}{noisy:>7}{other:>7}")
    return 0


def _matches(name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


if __name__ == "__main__":
    sys.exit(main())
