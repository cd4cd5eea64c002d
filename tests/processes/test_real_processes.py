"""Real processes on this machine, sampled from /proc, with hours compressed to seconds.

The rules say a period is 1 s and a review window ("day") 24 s; the sampler stamps samples on
a clock that starts at a window boundary. Timeline (in periods):

* 0–11: ``spinloop``, a Python busy loop, alone          → cpu_loop
* 12–23: ``statpkg``, a legitimate busy job on the exception list (+8 periods): 12 of 24 is
  not enough, so nothing — but the same data without the exception is a loop
* 24–47: three ``cloop`` busy loops contending for the 2 cores → constrained_loop
* 0–47: ``leaker`` (RSS grows steadily) → memory_ramp; ``logwriter`` (a file it writes grows
  and is truncated every 6 s) → saw_tooth on ``file_bytes``

The loop band is 1.00 ± .15 (not the paper's ± .05): the machine is shared with other work.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.findings import Finding, Kind
from perfsleuth.processes.detector import ProcessDetector
from perfsleuth.processes.rules import ProcessRules
from tests.support.procsampler import ProcSampler

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc"),
]

CHILD = r"""
import ctypes, sys, time
mode, name = sys.argv[1], sys.argv[2]
ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: what /proc/PID/stat shows
if mode == "loop":
    while True:
        pass
elif mode == "leak":
    hoard = []
    while True:
        hoard.append(bytearray(b"\x01") * (512 * 1024))  # touched pages: RSS really grows
        time.sleep(0.1)
elif mode == "writer":
    chunk = b"log line\n" * (512 * 1024 // 9)
    with open(sys.argv[3], "ab", buffering=0) as log:
        start = time.monotonic()
        while True:
            log.write(chunk)
            if time.monotonic() - start >= 6:
                log.truncate(0)  # rotation by copy-truncate
                start = time.monotonic()
            time.sleep(0.1)
"""

RULES = ProcessRules.model_validate(
    {
        "settings": {"period": "1s", "window": "24s", "saturation": 0.97},
        "os": {"linux": {"mean": 1.0, "deviation": 0.15, "hours": 8}},
        "exceptions": [{"process": "statpkg", "extra_hours": 8}],
        "ramp": {"min_duration": "12s", "min_growth_bytes": "4 MiB"},
    }
)
ORIGIN = pd.Timestamp("2024-01-01", tz="UTC")  # a multiple of 24 s since the epoch


class _Children:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, key: str, mode: str, name: str, *args: str) -> None:
        self.procs[key] = subprocess.Popen(
            [sys.executable, "-c", CHILD, mode, name, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self, key: str) -> None:
        proc = self.procs[key]
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def stop_all(self) -> None:
        for key in self.procs:
            self.stop(key)


@pytest.fixture
def children(tmp_path: Path) -> Iterator[_Children]:
    kids = _Children(tmp_path)
    try:
        yield kids
    finally:
        kids.stop_all()


def _collect(kids: _Children, tmp: Path) -> pd.DataFrame:
    kids.start("leaker", "leak", "leaker")
    kids.start("writer", "writer", "logwriter", str(tmp / "app.log"))
    kids.start("spin", "loop", "spinloop")
    sampler = ProcSampler(node="localhost")
    time.sleep(0.3)  # let the children start before the clock does
    t0 = time.monotonic()
    schedule = [
        (12.0, lambda: (kids.stop("spin"), kids.start("job", "loop", "statpkg"))),
        (24.0, lambda: (kids.stop("job"), *(kids.start(f"c{i}", "loop", "cloop") for i in "abc"))),
    ]
    while (elapsed := time.monotonic() - t0) < 48.0:
        while schedule and elapsed >= schedule[0][0]:
            schedule.pop(0)[1]()
        sampler.pids = kids.pids()
        sampler.sample(when=(ORIGIN + timedelta(seconds=elapsed)).to_pydatetime())
        time.sleep(0.25 - (time.monotonic() - t0 - elapsed) % 0.25)
    kids.stop_all()
    return pd.DataFrame(sampler.rows)


def _about(findings: list[Finding], kind: Kind, name: str) -> list[Finding]:
    return [f for f in findings if f.kind is kind and f.evidence_dict().get("process") == name]


def test_real_processes(children: _Children, tmp_path: Path) -> None:
    started = time.monotonic()
    frame = _collect(children, tmp_path)
    findings = ProcessDetector(rules=RULES).detect(frame)
    per_period = (
        frame.assign(period=(frame["time"] - ORIGIN).dt.total_seconds() // 1)
        .pivot_table(index="period", columns="name", values="cpu", aggfunc="sum")
        .round(2)
    )
    context = f"\n{per_period.to_string()}\n" + "\n".join(f.explanation for f in findings)

    # The simple-loop rule only counts periods in which the machine was not saturated. This
    # machine is shared: when other work saturates it, the paper's rule rightly finds no simple
    # loop, so those checks are judged only when the data shows enough unsaturated periods.
    machine = frame.groupby(frame["time"].dt.floor("1s"))["machine_cpu"].mean()
    period = ((machine.index - ORIGIN).total_seconds() // 1).astype(int)
    free = machine.to_numpy() < RULES.settings.saturation * 2
    free_spin = int(free[(period >= 1) & (period < 12)].sum())
    free_job = int(free[(period >= 13) & (period < 24)].sum())
    assert len(_about(findings, Kind.CONSTRAINED_LOOP, "cloop")) >= 2, context
    ramp = _about(findings, Kind.MEMORY_RAMP, "leaker")
    assert ramp and ramp[0].metric == "rss_bytes", context
    tooth = _about(findings, Kind.SAW_TOOTH, "logwriter")
    assert tooth and tooth[0].metric == "file_bytes", context
    assert 5 <= float(tooth[0].evidence_dict()["period"]) <= 7, context
    # the legitimate job on the exception list is never reported ...
    assert not [f for f in findings if f.evidence_dict().get("process") == "statpkg"], context
    assert time.monotonic() - started < 120
    plain = RULES.model_copy(update={"exceptions": ()})
    unjudged = []
    if free_spin >= 9:
        assert _about(findings, Kind.CPU_LOOP, "spinloop"), context
    else:
        unjudged.append(f"spinloop ({free_spin} of 11 full periods unsaturated)")
    if free_job >= 9:  # ... although without the exception the legitimate job is a loop
        looped = ProcessDetector(rules=plain, checks=("cpu_loop",)).detect(frame)
        assert _about(looped, Kind.CPU_LOOP, "statpkg"), context
    else:
        unjudged.append(f"statpkg without its exception ({free_job} of 11 unsaturated)")
    if unjudged:
        pytest.skip("other work saturated this machine; not judged: " + "; ".join(unjudged))
