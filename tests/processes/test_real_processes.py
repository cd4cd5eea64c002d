"""The project's collector on real processes of this machine: what it records about one.

Plumbing, not accuracy: a process this test starts is seen with its pid, name, user and
start time, its CPU in cores, its memory and the file it writes in bytes, its run-queue wait
and the machine's CPU — exactly, whatever else the machine is doing (the accuracy of the
checks on real, busy recordings is tests/processes/test_corpus.py's).
"""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.collect.collector import Collector
from perfsleuth.sources.procfs import TICKS, boot_time
from perfsleuth.store import Store
from tests.support.processes import die_with_parent

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
]

# spins, holds 64 MiB of touched memory and a 1 MiB file open for writing, under a name
CHILD = r"""
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, b"plumbcheck", 0, 0, 0)
hoard = bytearray(b"\x01") * (64 << 20)
log = open(sys.argv[1], "wb", buffering=0)
log.write(b"x" * (1 << 20))
print("ready", flush=True)
while True:
    pass
"""


@pytest.fixture
def child(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path / "child.log")],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def _start_ticks(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def test_the_collector_sees_a_process_as_it_is(
    child: subprocess.Popen[str], tmp_path: Path
) -> None:
    store = tmp_path / "host.duckdb"
    started = boot_time() + _start_ticks(child.pid) / TICKS
    collector = Collector(store, node="here", with_files=True)
    collector.run(0.5, threading.Event(), samples=5)
    with Store(store, read_only=True) as db:
        frame = db.read_frame("process", node="here")
    mine = frame[frame["pid"] == child.pid]
    assert len(mine) == 4  # 5 samples: the first one sets the baseline
    assert set(mine["name"]) == {"plumbcheck"}
    assert set(mine["user"]) == {pwd.getpwuid(os.getuid()).pw_name}
    assert mine["start_time"].tolist() == pytest.approx([started] * 4, abs=1e-6)
    # CPU in cores: it spins, so it used some however busy the machine is, and at most one
    assert mine["cpu"].sum() > 0 and (mine["cpu"] <= 1.05).all()
    # what it ran and waited for a CPU add up to the time it wanted one: all of it (each
    # sample reads the process a moment before its time stamp, so one sample's share may be
    # off by that moment's jitter; a unit mistake would be off by 100× or 1e9×)
    wanted = float((mine["cpu"] + mine["cpu_wait"]).mean())
    assert 0.5 < wanted < 1.5, mine[["cpu", "cpu_wait"]]
    assert (mine["cpu_wait"] >= 0).all()
    assert (mine["rss_bytes"] >= 64 * 2**20).all()
    assert set(mine["file_bytes"]) == {float(2**20)}
    assert set(mine["ncpu"]) == {float(os.cpu_count() or 1)}
    assert set(mine["os"]) == {"Linux"}
    # the machine's busy cores (in cores too: at most the CPU count, up to the same jitter)
    machine = mine["machine_cpu"]
    assert (machine > 0).all() and 0 < machine.mean() <= 1.25 * (os.cpu_count() or 1)
    times = pd.DatetimeIndex(mine["time"])
    assert times.is_monotonic_increasing and str(times.tz) == "UTC"


def test_a_process_that_exits_keeps_its_identity(tmp_path: Path) -> None:
    store = tmp_path / "host.duckdb"
    collector = Collector(store, node="here")
    collector.sample()
    # it lives until its stdin closes: alive at the second sample however slow sampling is
    short = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    started = boot_time() + _start_ticks(short.pid) / TICKS
    time.sleep(0.3)
    collector.sample()
    assert short.stdin is not None
    short.stdin.close()
    short.wait(timeout=30)
    collector.sample()
    collector.flush()
    with Store(store, read_only=True) as db:
        frame = db.read_frame("process", node="here")
    rows = frame[frame["pid"] == short.pid]
    # seen once, alive, born in that interval (its CPU counted from its start); gone after
    assert len(rows) == 1
    assert rows["start_time"].iat[0] == pytest.approx(started, abs=1e-6)
