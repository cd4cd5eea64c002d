"""The local collector on this machine's /proc: rates, vanishing processes, resume, roll-up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfsleuth.collect import Collector
from perfsleuth.sources.procfs import TICKS, read_os, read_processes
from perfsleuth.store import Store, list_segments
from tests.support.processes import die_with_parent

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def test_readers_see_this_process() -> None:
    import os

    readings = {r.pid: r for r in read_processes()}
    me = readings[os.getpid()]
    assert me.name.startswith("python") or me.name == "pytest"
    assert me.rss_bytes > 0 and me.cpu_ticks > 0
    cumulative, gauges = read_os()
    assert cumulative["cpu.user"] > 0
    assert gauges["mem.MemTotal"] > 0 and gauges["cpu.count"] >= 1


def _stopped(process: subprocess.Popen[bytes]) -> None:
    """SIGSTOP ``process`` and wait until the kernel has stopped it: the signal is delivered
    asynchronously, and a spinner read at once could still run a tick after the read (the
    CPU the collector accounted was then 1.00 s against 1.01 s between the reads)."""
    process.send_signal(signal.SIGSTOP)
    stat = Path(f"/proc/{process.pid}/stat")
    deadline = time.monotonic() + 5.0
    while stat.read_text().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
        assert time.monotonic() < deadline, "the spinner did not stop"
        time.sleep(0.001)


def test_spinner_cpu_and_vanishing_process(tmp_path: Path) -> None:
    spin = subprocess.Popen(
        [sys.executable, "-c", "while True: pass"],
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    short = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(0.3)"],
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    try:
        with Store(tmp_path / "s.duckdb") as store:
            collector = Collector(store, node="n1", batch=100)
            # the spinner is stopped around the first and last samples, so the CPU it used
            # between them is known exactly, however busy the machine is
            _stopped(spin)
            (first,) = read_processes(pids=[spin.pid], with_io=False)
            collector.sample()
            spin.send_signal(signal.SIGCONT)
            for k in range(4):
                time.sleep(0.25)
                if k == 3:
                    _stopped(spin)
                collector.sample()  # the short process exits between samples
            (last,) = read_processes(pids=[spin.pid], with_io=False)
            commit = collector.flush()
            assert commit is not None and commit.samples == 4
            frame = store.read_frame("process")
            counters = store.read_frame("counter")
    finally:
        spin.kill()
        spin.wait()
        short.wait()
    mine = frame[frame["pid"] == spin.pid]
    assert len(mine) == 4
    # a spinning process uses up to a core (less when other work shares the machine: it was
    # "more than 0.2 cores", not so on a busy machine); the collector accounts for every tick
    # it used between the samples
    assert 0 < mine["cpu"].max() <= 1.1
    spent = counters[counters["counter"] == "collector.interval_s"].set_index("time")["value"]
    used = float((mine.set_index("time")["cpu"] * spent).sum())
    assert used == pytest.approx((last.cpu_ticks - first.cpu_ticks) / TICKS, abs=1e-6)
    assert used > 0
    assert (frame.groupby(["pid", "name", "time"]).size() == 1).all()
    intervals = counters[counters["counter"] == "collector.interval_s"]["value"]
    assert len(intervals) == 4 and (intervals > 0.2).all()


def test_resume_covers_the_gap_and_replay_adds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    t0 = time.time()
    with Store(path) as store:
        collector = Collector(store, node="n1", batch=2)
        collector.sample(t0)
        collector.sample(t0 + 1)
        collector.sample(t0 + 2)  # commits two samples
        collector.sample(t0 + 3)  # pending: lost, as in a crash
    with Store(path) as store:
        collector = Collector(store, node="n1", batch=1)
        commit = collector.sample(t0 + 10)
        assert commit is not None and commit.samples == 1
        counters = store.read_frame("counter", name="collector.interval_s")
        stamps = [t.timestamp() for t in counters["time"]]
        assert stamps == pytest.approx([t0 + 1, t0 + 2, t0 + 10], abs=1e-5)
        # the first sample after the restart covers all the time since the last commit
        assert counters["value"].tolist() == pytest.approx([1.0, 1.0, 8.0], abs=1e-5)
        # the same sample time again (a replayed batch) inserts nothing
        before = store.stats()
        collector._last_time = t0 + 9  # pretend the clock allows it
        collector.sample(t0 + 10)
        assert store.stats()["processes"] == before["processes"]
        assert store.stats()["samples"] == before["samples"]


def test_rollup_to_hourly(tmp_path: Path) -> None:
    base = datetime(2024, 5, 1, 9, 0, tzinfo=UTC).timestamp()
    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(store, node="n1", batch=1000)
        for k in range(7):
            collector.sample(base + 600 * k)  # 09:00 ... 10:00 every 10 min
        collector.flush()
        n_raw = store.stats()["processes"]
        done = collector.rollup(timedelta(0), now=datetime(2024, 5, 1, 10, 30, tzinfo=UTC))
        assert done.cutoff == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
        left = store.read_frame("process")
        assert set(left["time"]) == {datetime(2024, 5, 1, 10, 0, tzinfo=UTC)}
        assert done.process_rows == n_raw - len(left)
        with store.transaction("read") as con:
            hours = con.execute("SELECT DISTINCT epoch(hour) FROM processes_hourly").fetchall()
            n = con.execute("SELECT sum(n) FROM processes_hourly").fetchone()
        assert [h[0] for h in hours] == [datetime(2024, 5, 1, 9, 0, tzinfo=UTC).timestamp()]
        assert n is not None and n[0] == done.process_rows
        again = collector.rollup(timedelta(0), now=datetime(2024, 5, 1, 10, 30, tzinfo=UTC))
        assert again.process_rows == 0


# -- the readers (perfsleuth.sources.procfs) on odd input ---------------------------------------


def test_vanished_or_unreadable_processes_are_skipped(tmp_path: Path) -> None:
    from perfsleuth.sources.procfs import read_process_io

    proc = tmp_path / "proc"
    (proc / "77").mkdir(parents=True)  # no stat: vanished between listing and reading
    (proc / "78").mkdir()
    (proc / "78" / "stat").write_text("78 (torn")  # a torn read of a dying process
    assert read_processes(proc) == []
    gone = 2**22 + 1  # above pid_max's default: no such process
    assert read_processes(pids=[gone]) == []
    assert read_process_io(gone) is None


def test_unreadable_machine_files_name_the_file(tmp_path: Path) -> None:
    from perfsleuth.errors import SourceError

    with pytest.raises(SourceError, match=r"stat: cannot read it"):
        read_os(tmp_path)


def test_stat_parsing_and_files_open_for_writing(tmp_path: Path) -> None:
    import os

    from perfsleuth.sources.procfs import parse_stat

    stat = parse_stat(
        "cpu  150 10 150 900 40 0 0 0 0 0\ncpu0 1\ncpu1 1\nbtime 7\nprocs_running 3\n"
    )
    assert stat.ncpu == 2
    assert stat.busy_and_total() == (310.0, 1250.0)  # idle and iowait are not busy
    assert stat.counts == {"btime": 7.0, "procs_running": 3.0}
    with open(tmp_path / "log", "wb") as log:
        log.write(b"x" * 10_000)
        log.flush()
        (me,) = read_processes(pids=[os.getpid()], with_io=False, with_files=True)
    assert me.file_bytes is not None and me.file_bytes >= 10_000


# -- storage: segments beside the store -------------------------------------------------------


def test_a_data_file_as_store_is_refused_untouched(tmp_path: Path) -> None:
    from perfsleuth.errors import StoreError

    data = tmp_path / "data.csv"
    data.write_text("time,entity,metric,value\n2024-05-01T09:00:00Z,a,m,1\n")
    before = data.read_bytes()
    with pytest.raises(StoreError, match=r"data\.csv: not a DuckDB database file"):
        Collector(data, node="n1")
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_the_collector_commits_while_another_process_holds_the_store(tmp_path: Path) -> None:
    import textwrap

    path = tmp_path / "s.duckdb"
    Store(path).close()
    holder = textwrap.dedent(
        f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r})
        print("ready", flush=True)
        sys.stdin.readline()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        t0 = time.time()
        collector = Collector(path, node="n1", batch=2)  # the store is busy: it starts anyway
        for k in range(4):
            collector.sample(t0 + k)  # the first one sets the cursor: a segment of its own
        assert collector.flush() is not None
        assert not collector.compact()  # still busy: the segments wait
        assert len(list_segments(path)) == 3
    finally:
        proc.kill()
        proc.communicate()
    with Store(path, read_only=True) as reader:  # ... and are read with the store
        counters = reader.read_frame("counter", name="collector.interval_s")
        assert counters["value"].tolist() == pytest.approx([1.0] * 3)
    assert Collector(path, node="n1").compact()  # free again: folded in
    with Store(path, read_only=True) as reader:
        assert len(reader.read_frame("counter", name="collector.interval_s")) == 3


def test_rows_without_io_bytes_are_valid_process_rows(tmp_path: Path) -> None:
    """A collector that is not root reads no /proc/<pid>/io of other users' processes."""
    from perfsleuth.frames import normalise

    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(store, node="n1", batch=100)
        t0 = time.time()
        for k in range(3):
            collector.sample(t0 + k)
        collector.flush()
        frame = store.read_frame("process")
    frame.loc[frame.index[::2], "io_bytes"] = float("nan")  # as unreadable files leave them
    checked = normalise(frame, "process")
    assert len(checked) == len(frame) and checked["io_bytes"].isna().sum() >= len(frame) // 2
