"""``perfsleuth collect`` with a workload's cgroup, one device, a time limit or a counter file.

What ``perfsleuth bottleneck collect`` used to do (sample /proc and a workload's cgroup into a
counter frame the bottleneck model reads) is now ``perfsleuth collect --cgroup … --device …
--seconds …`` into the store, or ``--out FILE`` into a counter file: these tests check that
the counters the model gets are the same as :class:`~perfsleuth.bottleneck.linux.LinuxCounters`
reads on the same inputs, and that ``bottleneck infer`` takes the store or the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.bottleneck.importers import from_collector
from perfsleuth.bottleneck.linux import Cgroup, LinuxCounters, Reading
from perfsleuth.cli import main
from perfsleuth.collect import Collector
from perfsleuth.collect.collector import _unit
from perfsleuth.store import Store
from perfsleuth.units import to_base
from tests.bottleneck.test_linux import TICKS, hybrid_cgroups, proc_tree
from tests.support.processes import die_with_parent

LINUX = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
_CLI = "from perfsleuth.cli import main; main()"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0 if code is None else 2), out, err


def collect(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``perfsleuth collect`` in its own process (it installs signal handlers)."""
    return subprocess.run(
        [sys.executable, "-c", _CLI, "collect", *args],
        capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


# -- the counters the model gets: the same as LinuxCounters on the same fixture trees ---------


def pure_v2(root: Path, step: int) -> tuple[Path, Path]:
    """A pure cgroup v2 tree (cgroup ``work``, io controller) and a /sys naming vda 254:0."""
    cg = root / "cg2"
    work = cg / "work"
    work.mkdir(parents=True, exist_ok=True)
    (cg / "cgroup.controllers").write_text("cpu io memory\n")
    (work / "cgroup.procs").write_text("41\n")
    (work / "cpu.stat").write_text(f"user_usec {2_000_000 * step}\nsystem_usec {1000 * step}\n")
    (work / "memory.stat").write_text(
        f"anon {1000 + step}\nfile 0\nworkingset_refault_file {50 * step}\n"
    )
    (work / "memory.max").write_text("max\n")
    (work / "io.stat").write_text(
        f"254:0 rbytes={4096000 * step} wbytes={8192 * step} rios={1000 * step} "
        f"wios={2 * step} dbytes=0 dios=0\n"
    )
    sys_root = root / "sys"
    (sys_root / "block" / "vda").mkdir(parents=True, exist_ok=True)
    (sys_root / "block" / "vda" / "dev").write_text("254:0\n")
    return cg, sys_root


def _model_counters(
    tmp_path: Path, layout: str
) -> tuple[dict[str, float], dict[str, float], set[str]]:
    """(collector → importer, LinuxCounters) counters over one 2 s interval of fixture trees."""
    proc = proc_tree(tmp_path, 0)
    if layout == "hybrid":
        cg, sys_root = hybrid_cgroups(tmp_path, 0), tmp_path / "no-sys"
    else:
        cg, sys_root = pure_v2(tmp_path, 0)
    reader = LinuxCounters(
        device="vda", cgroup="work", proc=proc, sys_root=sys_root, cgroup_root=cg
    )
    before = reader.read()
    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(
            store,
            node="host",
            device="vda",
            cgroup="work",
            proc=proc,
            sys_root=sys_root,
            cgroup_root=cg,
        )
        collector.sample(1000.0)
        proc_tree(tmp_path, 2)
        if layout == "hybrid":
            hybrid_cgroups(tmp_path, 2)
        else:
            pure_v2(tmp_path, 2)
        collector.sample(1002.0)
        collector.flush()
        frame = store.read_frame("counter")
    after = reader.read()
    expected = reader.rates(
        Reading(0.0, before.wall, before.values, before.pids),
        Reading(2.0, after.wall, after.values, after.pids),
    )
    mapped = from_collector(frame)
    got = {str(k): float(v) for k, v in mapped.groupby("counter")["value"].mean().items()}
    assert set(mapped["entity"]) == {"host"}
    return got, expected, set(frame["counter"])


@pytest.mark.parametrize("layout", ["hybrid", "pure_v2"])
def test_collect_gives_the_model_what_linux_counters_read(tmp_path: Path, layout: str) -> None:
    got, expected, stored = _model_counters(tmp_path, layout)
    # every model counter LinuxCounters reads, with the same value (the importer now maps
    # vmstat.pgmajfault to mem.majfault too); cpu.iowait and mem.available stay in the
    # collector's own names (cpu.iowait, mem.MemAvailable)
    model = {k: v for k, v in expected.items() if k != "cpu.iowait"}
    model.pop("mem.available")
    assert set(got) == set(model)
    assert got == pytest.approx(model, rel=1e-9)
    assert {"cpu.iowait", "vmstat.pgmajfault", "mem.MemAvailable"} <= stored
    if layout == "hybrid":  # the same numbers test_linux pins for LinuxCounters
        assert got["cpu.user"] == pytest.approx(1.0)
        assert got["cpu.system"] == pytest.approx(0.5, abs=1 / TICKS)
        assert got["disk.reads"] == pytest.approx(1000.0)
        assert got["disk.busy"] == pytest.approx(0.5)
        assert got["disk.inflight"] == pytest.approx(2.0)
        assert got["mem.refault"] == pytest.approx(300.0)
        assert got["cg.cpu.user"] == pytest.approx(1.0)
        assert got["cg.psi.io"] == pytest.approx(0.25)
        assert got["cg.mem.limit"] == 1 << 30
        assert got["cg.app.read_ops"] == pytest.approx(300.0)
        assert got["cg.io.read_bytes"] == pytest.approx(150 * 4096)
    else:
        assert got["cg.io.reads"] == pytest.approx(1000.0)
        assert got["cg.io.read_bytes"] == pytest.approx(4096000.0)
        assert got["cg.mem.limit"] == 8000000 * 1024  # unlimited: MemTotal


def test_only_the_chosen_device_is_recorded(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(store, node="h", device="vda1", proc=proc)
        collector.sample(1000.0)
        proc_tree(tmp_path, 1)
        collector.sample(1001.0)
        collector.flush()
        counters = set(store.read_frame("counter")["counter"])
    disks = {c for c in counters if c.startswith("disk.")}
    assert disks and all(c.startswith("disk.vda1.") for c in disks)


def test_a_workload_cgroup_that_goes_away_is_not_an_error(tmp_path: Path) -> None:
    import shutil

    proc = proc_tree(tmp_path, 0)
    cg, sys_root = pure_v2(tmp_path, 0)
    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(
            store, node="h", cgroup="work", proc=proc, sys_root=sys_root, cgroup_root=cg
        )
        collector.sample(1000.0)
        pure_v2(tmp_path, 1)
        collector.sample(1001.0)
        shutil.rmtree(cg / "work")  # the workload ended and its cgroup was removed
        collector.sample(1002.0)
        collector.flush()
        frame = store.read_frame("counter")
    workload = frame[frame["counter"].str.startswith("workload.")]
    assert workload["time"].nunique() == 1  # the interval while it existed
    assert frame["time"].nunique() == 2  # the machine's counters go on


def test_workload_counters_are_in_base_units() -> None:
    for name, cumulative in [
        ("workload.cpu.user", True),
        ("workload.psi.io", True),
        ("workload.io.reads", True),
        ("workload.io.read_bytes", True),
        ("workload.app.read_ops", True),
        ("workload.mem.refault", True),
        ("workload.mem.anon", False),
        ("workload.mem.limit", False),
        ("disk.vda.reads", True),
        ("disk.vda.weighted_ms", True),
        ("vmstat.workingset_refault_file", True),
    ]:
        unit = _unit(name, cumulative)
        assert to_base(unit) == (unit, 1.0), name


def test_run_stops_after_seconds(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    with Store(tmp_path / "s.duckdb") as store:
        collector = Collector(store, node="h", proc=proc, batch=100)
        collector.run(0.1, threading.Event(), seconds=0.5)
        intervals = store.read_frame("counter", name="collector.interval_s")
    # samples at 0, .1, … .5 s: five intervals, fewer if the machine is slow (a sample that
    # takes longer than the interval skips grid points), but the last one is taken at the end
    # (it was 4 to 5 intervals summing to 0.5 ± 0.15 s: not so on a busy machine)
    assert 1 <= len(intervals) <= 5
    assert intervals["value"].sum() >= 0.5 - 0.01 * 0.1


# -- options and bad input ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seconds", "lots"], "--seconds: not a duration"),
        (["--interval", "0"], "--interval"),
        (["--out", "counters.txt"], "write a .csv or a .parquet"),
        (["--out", "c.csv", "--store", "s.duckdb"], "--store and --out"),
        (["--keep-raw", "soon"], "--keep-raw"),
        (["--cgroup", "perfsleuth-no-such-cgroup"], "no cgroup 'perfsleuth-no-such-cgroup'"),
        (["--device", "sdz"], "no block device 'sdz'"),
    ],
)
@LINUX
def test_bad_options_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "collect", "--samples", "1", *args)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_help_fits_one_screen(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "collect", "--help")
    assert code == 0
    assert len(out.splitlines()) <= 30
    for option in ("--store", "--out", "--seconds", "--cgroup", "--device", "--samples"):
        assert option in out


def test_bottleneck_collect_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "bottleneck", "collect", "-o", "x.csv")
    assert code == 2
    assert "collect" in err


# -- on this machine: a real cgroup, then bottleneck infer ------------------------------------


def _cgroups_writable() -> str | None:
    if not Path("/proc/self/stat").exists():
        return "needs Linux /proc"
    if os.geteuid() != 0:
        return "creating cgroups needs root"
    root = Path("/sys/fs/cgroup")
    if not ((root / "cgroup.controllers").exists() or (root / "unified").is_dir()):
        return "no cgroup v2 hierarchy"
    return None


@pytest.fixture
def busy_cgroup() -> Iterator[Cgroup]:
    """A fresh cgroup holding one busy loop; both gone afterwards."""
    reason = _cgroups_writable()
    if reason is not None:
        pytest.skip(reason)
    from perfsleuth.bottleneck.linux import add_to_cgroup, temporary_cgroup

    with temporary_cgroup(f"perfsleuth-test-{uuid.uuid4().hex[:8]}") as group:
        burner = subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
        )
        try:
            add_to_cgroup(group, burner.pid)
            yield group
        finally:
            burner.kill()
            burner.wait()


@pytest.mark.slow
@pytest.mark.integration
def test_collect_a_cgroup_into_the_store_then_infer(
    busy_cgroup: Cgroup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``collect --store --seconds --cgroup`` then ``bottleneck infer STORE``: the workload's
    counters reach the inference (what ``bottleneck collect`` + ``infer FILE`` gave)."""
    store = tmp_path / "s.duckdb"
    done = collect(
        "--store", str(store), "--seconds", "2", "--interval", "250ms",
        "--cgroup", busy_cgroup.name, "--node", "here",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Store(store, read_only=True) as db:
        frame = db.read_frame("counter")
        processes = db.read_frame("process")
    assert len(processes) > 0  # still the collector: processes too
    mapped = from_collector(frame)
    means = mapped.groupby("counter")["value"].mean()
    cg = {c for c in means.index if c.startswith("cg.")}
    assert {"cg.cpu.user", "cg.cpu.system", "cg.mem.anon", "cg.mem.limit"} <= cg
    assert {"cg.app.read_ops", "cg.io.read_bytes"} <= cg
    # one busy loop in the cgroup: about one core, less when other work shares the machine
    # (it was "more than 0.3 cores": not so on a busy machine)
    assert 0 < means["cg.cpu.user"] <= 1.1
    assert means["cpu.user"] >= means["cg.cpu.user"] - 0.05  # the machine includes it

    # windows of an hour: two seconds of samples fall in one (unless they straddle the hour)
    windows = BottleneckDetector(window="1h", min_utilisation=0.1).analyse(frame).windows
    assert 1 <= len(windows) <= 2
    assert {"cg.cpu.user", "cpu.user", "disk.reads"} <= set(windows[0].inference.columns)

    code, out, err = run(
        capsys, "--format", "json", "bottleneck", "infer", str(store),
        "--min-utilisation", "0.1", "--window", "1h",
    )  # fmt: skip
    assert code in (0, 1), err
    findings = json.loads(out)["findings"]
    assert [f["kind"] for f in findings] == ["bottleneck"]
    assert findings[0]["entity"] == "here"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_collect_into_a_counter_file_then_infer(
    busy_cgroup: Cgroup, tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    """``collect --out FILE`` writes the counter frame (no store left behind), and
    ``bottleneck infer FILE`` reads it as it read ``bottleneck collect``'s file."""
    device = next(iter(sorted(_disks())), None)
    if device is None:
        pytest.skip("no block device")
    out = tmp_path / f"counters{suffix}"
    done = collect(
        "--out", str(out), "--seconds", "1", "--interval", "250ms",
        "--cgroup", busy_cgroup.name, "--device", device, "--no-io",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "counters) →" in done.stderr
    assert not list(tmp_path.glob("*.duckdb"))
    frame = pd.read_csv(out) if suffix == ".csv" else pd.read_parquet(out)
    assert list(frame.columns) == ["time", "entity", "counter", "value", "unit"]
    counters = set(frame["counter"])
    assert "collector.interval_s" in counters and "workload.cpu.user" in counters
    assert {c.split(".")[1] for c in counters if c.startswith("disk.")} == {device}
    assert not any(c.startswith("workload.app.") for c in counters)  # --no-io
    code, out_text, err = run(
        capsys, "--format", "json", "bottleneck", "infer", str(out),
        "--min-utilisation", "0.1", "--window", "1h",
    )  # fmt: skip
    assert code in (0, 1), err
    assert [f["kind"] for f in json.loads(out_text)["findings"]] == ["bottleneck"]


def _disks() -> set[str]:
    from perfsleuth.sources.procfs import IGNORED_DEVICES, read_diskstats

    return {
        d
        for d in read_diskstats()
        if not d.startswith(IGNORED_DEVICES) and Path(f"/sys/block/{d}").exists()
    }
