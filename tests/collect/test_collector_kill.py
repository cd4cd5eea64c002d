"""The real collector process: SIGKILL mid-batch, restart, nothing committed lost or doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.store import Store

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc"),
]

_CLI = "from perfsleuth.cli import main; main()"


def _collector(store: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CLI, "collect", "--store", str(store), "--node", "n1",
         "--interval", "200ms", "--batch", "5", "--commits", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _commits(proc: subprocess.Popen[str], n: int, timeout: float) -> list[dict[str, object]]:
    got: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while len(got) < n:
        if time.monotonic() > deadline:
            raise AssertionError(f"only {len(got)} commits in {timeout} s")
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"collector exited: {proc.stderr.read() if proc.stderr else ''}")
        got.append(json.loads(line))
    return got


def test_sigkill_mid_batch_then_restart(tmp_path: Path) -> None:
    path = tmp_path / "collect.duckdb"
    first = _collector(path)
    try:
        before = _commits(first, 3, timeout=60)
        time.sleep(0.5)  # two or three samples into the next batch
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.kill()
        first.communicate()  # reaps it and closes its pipes
    second = _collector(path, "--samples", "12")
    try:
        out, err = second.communicate(timeout=60)
    finally:
        second.kill()
    assert second.returncode == 0, err
    after = [json.loads(line) for line in out.splitlines() if line.strip()]
    committed_before = sum(int(c["samples"]) for c in before)  # type: ignore[call-overload]
    committed_after = sum(int(c["samples"]) for c in after)  # type: ignore[call-overload]
    assert committed_after == 12

    with Store(path, read_only=True) as store:
        counters = store.read_frame("counter")
        processes = store.read_frame("process")
    intervals = counters[counters["counter"] == "collector.interval_s"].sort_values("time")
    times = pd.DatetimeIndex(intervals["time"])
    # every committed sample is there once, and nothing else
    assert len(intervals) == committed_before + committed_after
    assert len(set(times)) == len(times)
    last_before = pd.Timestamp(str(before[-1]["last"]))
    assert int((times <= last_before).sum()) == committed_before
    # no duplicate rows under any key
    assert not counters.duplicated(["entity", "counter", "time"]).any()
    assert not processes.duplicated(["node", "pid", "name", "time"]).any()
    # no gap: each sample's interval reaches back to the previous sample, across the restart
    gaps = np.diff(times.asi8) / 1e9
    assert intervals["value"].to_numpy()[1:] == pytest.approx(gaps, abs=1e-5)
    assert gaps.max() > 0.5  # the restart's sample spans the time the collector was down
    # the collector saw our own test process in every sample
    me = processes[processes["pid"] == os.getpid()]
    assert len(me) == len(times)
