"""The real collector process: SIGKILL mid-batch (and at any point), restart, nothing committed
lost or doubled; analyze, report and watch beside a live collector; what a collector that is
not root writes is analysed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.store import Store, list_segments
from tests.support.processes import die_with_parent

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
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
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
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


def _stored(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with Store(path, read_only=True) as store:
        return store.read_frame("counter"), store.read_frame("process")


def _check_chain(counters: pd.DataFrame, processes: pd.DataFrame) -> pd.DatetimeIndex:
    """Every sample once, each interval reaching back to the sample before: no loss, no gap,
    no duplicate (a lost or doubled batch would break the chain)."""
    intervals = counters[counters["counter"] == "collector.interval_s"].sort_values("time")
    times = pd.DatetimeIndex(intervals["time"])
    assert times.is_unique
    assert not counters.duplicated(["entity", "counter", "time"]).any()
    assert not processes.duplicated(["node", "pid", "name", "time"]).any()
    gaps = np.diff(times.asi8) / 1e9
    assert intervals["value"].to_numpy()[1:] == pytest.approx(gaps, abs=1e-5)
    return times


def test_sigkill_at_any_point_loses_and_doubles_nothing(tmp_path: Path) -> None:
    """Killed again and again at seeded random moments: in a batch, while a segment is being
    written, while segments are folded into the store (every commit, with --compact 100ms)."""
    path = tmp_path / "collect.duckdb"
    printed: list[dict[str, object]] = []
    moments = np.random.default_rng(16).uniform(0.0, 1.5, size=8)
    for moment in moments:
        proc = _collector(path, "--compact", "100ms")
        try:
            printed += _commits(proc, 1, timeout=120)
            time.sleep(float(moment))
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            out, _ = proc.communicate()
        # commits it printed before it died are committed too (it may have committed more)
        printed += [json.loads(line) for line in out.splitlines() if line.strip()]
    last = _collector(path, "--samples", "6", "--compact", "100ms")
    try:
        out, err = last.communicate(timeout=120)
    finally:
        last.kill()
    assert last.returncode == 0, err
    printed += [json.loads(line) for line in out.splitlines() if line.strip()]

    counters, processes = _stored(path)
    times = _check_chain(counters, processes)
    for commit in printed:  # each printed commit is in the store, whole
        first, end = pd.Timestamp(str(commit["first"])), pd.Timestamp(str(commit["last"]))
        assert int(((times >= first) & (times <= end)).sum()) == commit["samples"]
    assert len(times) >= sum(int(c["samples"]) for c in printed)  # type: ignore[call-overload]
    me = processes[processes["pid"] == os.getpid()]
    assert len(me) == len(times)  # our own process, in every sample
    # the clean stop folded everything in: one segment left, its collector's cursor
    assert len(list_segments(path)) == 1
    with Store(path, read_only=True) as store:
        assert store.stats()["processes"] == len(processes)


def _perfsleuth(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _CLI, *args], capture_output=True, text=True, timeout=timeout,
        check=False, preexec_fn=die_with_parent,
    )  # fmt: skip


def test_analyze_report_and_watch_run_beside_a_live_collector(tmp_path: Path) -> None:
    path = tmp_path / "live.duckdb"
    config = tmp_path / "live.toml"
    config.write_text(
        f'[store]\npath = "{path}"\n[output]\ndir = "{tmp_path / "out"}"\n'
        '[[sources]]\nkind = "store"\ncontract = "process"\n'
        '[[sources]]\nkind = "store"\ncontract = "counter"\n'
        '[analyze]\nfamilies = ["processes"]\n[watch]\nevery = "200ms"\n',
        encoding="utf-8",
    )
    collector = _collector(path, "--compact", "500ms")
    try:
        printed = _commits(collector, 2, timeout=120)
        runs = {
            "analyze": _perfsleuth("analyze", str(config)),
            "report": _perfsleuth("report", "--store", str(path), "-o", str(tmp_path / "r.html")),
            "watch": _perfsleuth("watch", str(config), "--checks", "2"),
            "infer": _perfsleuth("bottleneck", "infer", str(path)),
        }
        assert collector.poll() is None  # still collecting all along
    finally:
        collector.send_signal(signal.SIGTERM)
        out, err = collector.communicate(timeout=120)
    for name, done in runs.items():
        assert done.returncode in (0, 1), f"{name}: {done.stderr}"  # 1: findings, not errors
        assert "in use" not in done.stderr and "Traceback" not in done.stderr, name
    read = [line for line in runs["analyze"].stderr.splitlines() if line.startswith("read:")]
    assert len(read) == 2 and all(": 0 row(s)" not in line for line in read), read
    assert "source unavailable" not in runs["watch"].stderr
    assert collector.returncode == 0, err
    printed += [json.loads(line) for line in out.splitlines() if line.strip()]
    counters, processes = _stored(path)
    times = _check_chain(counters, processes)
    assert len(times) == sum(int(c["samples"]) for c in printed)  # type: ignore[call-overload]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_what_a_non_root_collector_writes_is_analysed(tmp_path: Path) -> None:
    """Not root, the collector cannot read other users' /proc/<pid>/io: those rows have no
    io_bytes. analyze and fleet scan take them (they refused them before)."""
    folder = Path(tempfile.mkdtemp(prefix="perfsleuth-nobody-"))
    try:
        folder.chmod(0o777)  # the collector runs as nobody: tmp_path is root's alone
        path = folder / "nobody.duckdb"
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        command = [*as_nobody] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*command, sys.executable, "-c", _CLI, "collect", "--store", str(path),
             "--interval", "200ms", "--samples", "4"],
            capture_output=True, text=True, timeout=120, check=False,
            preexec_fn=die_with_parent,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        _, processes = _stored(path)
        assert processes["io_bytes"].isna().any() and processes["io_bytes"].notna().any()
        config = tmp_path / "p.toml"
        config.write_text(
            f'[store]\npath = "{tmp_path / "mine.duckdb"}"\n[output]\ndir = "{tmp_path}"\n'
            f'[[sources]]\nkind = "store"\npath = "{path}"\ncontract = "process"\n'
            '[analyze]\nfamilies = ["processes"]\n',
            encoding="utf-8",
        )
        analyzed = _perfsleuth("analyze", str(config))
        assert analyzed.returncode in (0, 1), analyzed.stderr
        assert "io_bytes" not in analyzed.stderr
        scanned = _perfsleuth("fleet", "scan", str(path), "--workers", "1")
        assert scanned.returncode in (0, 1), scanned.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)
