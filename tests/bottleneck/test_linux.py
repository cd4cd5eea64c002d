"""The Linux counter reader on fixture /proc and cgroup trees (hybrid v1+v2 and pure v2)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfsleuth.bottleneck.linux import Cgroup, LinuxCounters, Reading
from perfsleuth.errors import SourceError

TICKS = os.sysconf("SC_CLK_TCK")


def proc_tree(root: Path, step: int) -> Path:
    """A /proc whose counters grow by fixed amounts per step."""
    proc = root / "proc"
    proc.mkdir(exist_ok=True)
    t = TICKS * step
    (proc / "stat").write_text(
        f"cpu  {100 + t} {0} {50 + t // 2} 1000 {5} {0} {0} 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"
    )
    reads, sectors = 1000 * step, 8000 * step
    writes, wsectors = 10 * step, 2048 * step
    (proc / "diskstats").write_text(
        f" 254 0 vda {reads} 0 {sectors} 10 {writes} 0 {wsectors} 5 0 {500 * step} {2000 * step} "
        "0 0 0 0 0 0\n 254 1 vda1 1 0 1 1 1 0 1 1 0 1 1 0 0 0 0 0 0\n"
    )
    (proc / "vmstat").write_text(
        f"nr_file_pages 1000\nworkingset_refault_file {300 * step}\npgmajfault {7 * step}\n"
    )
    (proc / "meminfo").write_text("MemTotal: 8000000 kB\nMemAvailable: 6000000 kB\n")
    for pid, scale in ((41, 1), (42, 2)):
        folder = proc / str(pid)
        folder.mkdir(exist_ok=True)
        (folder / "io").write_text(
            f"rchar: {4096 * 100 * step * scale}\nwchar: 0\nsyscr: {100 * step * scale}\n"
            f"syscw: 0\nread_bytes: {4096 * 50 * step * scale}\nwrite_bytes: 0\n"
        )
    return proc


def hybrid_cgroups(root: Path, step: int, limit: int = 1 << 30) -> Path:
    cg = root / "cgroup"
    unified = cg / "unified" / "work"
    memory = cg / "memory" / "work"
    for folder in (unified, memory):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "cgroup.procs").write_text("41\n42\n")
    (unified / "cpu.stat").write_text(
        f"usage_usec {1_500_000 * step}\nuser_usec {1_000_000 * step}\n"
        f"system_usec {500_000 * step}\n"
    )
    (unified / "io.pressure").write_text(
        f"some avg10=0 avg60=0 avg300=0 total={250_000 * step}\n"
        "full avg10=0 avg60=0 avg300=0 total=0\n"
    )
    (memory / "memory.stat").write_text(
        f"cache 100\nrss {64 << 20}\nworkingset_refault_file {200 * step}\n"
    )
    (memory / "memory.limit_in_bytes").write_text(f"{limit}\n")
    return cg


def read(counters: LinuxCounters, at: float) -> Reading:
    reading = counters.read()
    return Reading(at, reading.wall, reading.values, reading.pids)


def test_machine_and_hybrid_cgroup_rates(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    cg = hybrid_cgroups(tmp_path, 0)
    counters = LinuxCounters(
        device="vda", cgroup="work", proc=proc, cgroup_root=cg, entity="host/work"
    )
    before = read(counters, 0.0)
    proc_tree(tmp_path, 2)
    hybrid_cgroups(tmp_path, 2)
    rates = counters.rates(before, read(counters, 2.0))
    assert rates["cpu.user"] == pytest.approx(1.0)
    assert rates["cpu.system"] == pytest.approx(0.5, abs=1 / TICKS)
    assert rates["disk.reads"] == pytest.approx(1000.0)
    assert rates["disk.read_bytes"] == pytest.approx(8000 * 512)
    assert rates["disk.writes"] == pytest.approx(10.0)
    assert rates["disk.busy"] == pytest.approx(0.5)
    assert rates["disk.inflight"] == pytest.approx(2.0)
    assert rates["mem.refault"] == pytest.approx(300.0)
    assert rates["cg.cpu.user"] == pytest.approx(1.0)
    assert rates["cg.cpu.system"] == pytest.approx(0.5)
    assert rates["cg.psi.io"] == pytest.approx(0.25)
    assert rates["cg.mem.anon"] == 64 << 20
    assert rates["cg.mem.limit"] == 1 << 30
    assert rates["cg.mem.refault"] == pytest.approx(200.0)
    # per-process sums: pid 41 reads 100/s, pid 42 200/s
    assert rates["cg.app.read_ops"] == pytest.approx(300.0)
    assert rates["cg.app.read_bytes"] == pytest.approx(300 * 4096 * 100 / 100)
    assert rates["cg.io.read_bytes"] == pytest.approx(150 * 4096)


def test_unlimited_cgroup_reports_memtotal_and_resets_are_not_negative(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 5)
    cg = hybrid_cgroups(tmp_path, 5, limit=9223372036854771712)
    counters = LinuxCounters(device="vda", cgroup="work", proc=proc, cgroup_root=cg)
    before = read(counters, 0.0)
    proc_tree(tmp_path, 1)  # every counter went backwards: a reset
    rates = counters.rates(before, read(counters, 1.0))
    assert rates["cg.mem.limit"] == 8000000 * 1024
    assert rates["disk.reads"] == 0.0
    assert all(v >= 0 for v in rates.values())


def test_pure_v2(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    cg = tmp_path / "cg2"
    work = cg / "work"
    work.mkdir(parents=True)
    (cg / "cgroup.controllers").write_text("cpu io memory\n")
    (work / "cgroup.procs").write_text("41\n")
    (work / "cpu.stat").write_text("user_usec 0\nsystem_usec 0\n")
    (work / "memory.stat").write_text("anon 1000\nfile 0\nworkingset_refault_file 0\n")
    (work / "memory.max").write_text("max\n")
    (work / "io.stat").write_text("254:0 rbytes=0 wbytes=0 rios=0 wios=0 dbytes=0 dios=0\n")
    sys_root = tmp_path / "sys"
    (sys_root / "block" / "vda").mkdir(parents=True)
    (sys_root / "block" / "vda" / "dev").write_text("254:0\n")
    counters = LinuxCounters(
        device="vda", cgroup="work", proc=proc, cgroup_root=cg, sys_root=sys_root
    )
    assert counters.cgroup is not None and counters.cgroup.memory_v1 is None
    before = read(counters, 0.0)
    (work / "cpu.stat").write_text("user_usec 2000000\nsystem_usec 0\n")
    (work / "io.stat").write_text("254:0 rbytes=4096000 wbytes=0 rios=1000 wios=0\n")
    rates = counters.rates(before, read(counters, 1.0))
    assert rates["cg.cpu.user"] == pytest.approx(2.0)
    assert rates["cg.io.reads"] == pytest.approx(1000.0)
    assert rates["cg.io.read_bytes"] == pytest.approx(4096000.0)
    assert rates["cg.mem.anon"] == 1000
    assert rates["cg.mem.limit"] == 8000000 * 1024


def test_errors_name_what_is_missing(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    with pytest.raises(SourceError, match="no device 'sdz'"):
        LinuxCounters(device="sdz", proc=proc)
    with pytest.raises(SourceError, match="no cgroup 'absent'"):
        Cgroup.find("absent", tmp_path)
    counters = LinuxCounters(device="vda", proc=proc)
    reading = counters.read()
    with pytest.raises(SourceError, match="out of order"):
        counters.rates(reading, reading)


def test_sample_rows_form_a_counter_frame(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, 0)
    counters = LinuxCounters(device="vda", proc=proc, entity="h")
    assert counters.sample() == []
    proc_tree(tmp_path, 1)
    rows = counters.sample()
    assert {r["entity"] for r in rows} == {"h"}
    assert {"cpu.user", "disk.reads", "mem.refault"} <= {r["counter"] for r in rows}
