"""Counters of the local collector (``perfsleuth collect``) as the Linux model's counters."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.bottleneck.importers import (
    COLLECTOR_MARK,
    from_collector,
    from_sar,
    is_collector_frame,
    is_sar_frame,
    to_model_counters,
)
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.cli import main
from perfsleuth.collect.collector import Collector
from perfsleuth.config import parse_config
from perfsleuth.errors import DataError
from perfsleuth.sources.load import load
from perfsleuth.sources.sysstat import read_sar
from perfsleuth.store import Store

T0 = pd.Timestamp("2024-05-01T12:00:00Z")


def collector_frame(values: dict[str, float], samples: int = 3) -> pd.DataFrame:
    rows = [
        (T0 + pd.Timedelta(seconds=i), "node-a", name, value)
        for i in range(samples)
        for name, value in {**values, COLLECTOR_MARK: 1.0}.items()
    ]
    return pd.DataFrame(rows, columns=["time", "entity", "counter", "value"])


def as_dict(frame: pd.DataFrame) -> dict[str, float]:
    return {str(k): float(v) for k, v in frame.groupby("counter")["value"].mean().items()}


# collector counters → (model column, value); sums of CPU fields, io_ms in ms per second
CASES = [
    ({"cpu.user": 1.5, "cpu.nice": 0.25}, {"cpu.user": 1.75}),
    ({"cpu.system": 0.2, "cpu.irq": 0.01, "cpu.softirq": 0.04}, {"cpu.system": 0.25}),
    ({"cpu.user": 1.0}, {"cpu.user": 1.0}),  # an old kernel without nice: the field alone
    (
        {"disk.vda.read_bytes": 4e6, "disk.vda.write_bytes": 1e6, "disk.vda.io_ms": 250.0},
        {"disk.read_bytes": 4e6, "disk.write_bytes": 1e6, "disk.busy": 0.25},
    ),
    # the collector's own cgroup and minor faults are not the model's; the machine's memory is
    ({"cgroup.cpu.user": 0.3, "mem.MemTotal": 8e9, "vmstat.pgfault": 10.0}, {"mem.total": 8e9}),
    (  # request counts and the queue (weighted_ms in ms per second)
        {
            "disk.vda.read_bytes": 1.0,
            "disk.vda.reads": 10.0,
            "disk.vda.writes": 2.0,
            "disk.vda.weighted_ms": 1500.0,
        },
        {"disk.read_bytes": 1.0, "disk.reads": 10.0, "disk.writes": 2.0, "disk.inflight": 1.5},
    ),
    (
        {"vmstat.workingset_refault_file": 30.0, "vmstat.workingset_refault": 99.0},
        {"mem.refault": 30.0},
    ),
    ({"vmstat.workingset_refault": 99.0}, {"mem.refault": 99.0}),  # a kernel before 5.9
    (  # perfsleuth collect --cgroup: the workload's counters, in the model's units already
        {"workload.cpu.user": 0.5, "workload.mem.limit": 1e9, "workload.app.read_ops": 7.0},
        {"cg.cpu.user": 0.5, "cg.mem.limit": 1e9, "cg.app.read_ops": 7.0},
    ),
]


@pytest.mark.parametrize(("given", "expected"), CASES)
def test_mapping(given: dict[str, float], expected: dict[str, float]) -> None:
    out = from_collector(collector_frame(given))
    assert as_dict(out) == pytest.approx(expected)
    assert set(out.columns) == {"time", "entity", "counter", "value"}
    assert (out["entity"] == "node-a").all()


@pytest.mark.parametrize(
    ("disks", "busiest"),
    [
        ({"vda": 1e6, "vda1": 9e6}, "vda"),  # a partition's bytes are its disk's too
        ({"nvme0n1": 1e3, "nvme0n1p2": 5e3, "sda": 2e3}, "sda"),
        ({"sda": 1e3, "sdb": 5e3, "sdb1": 5e3}, "sdb"),
    ],
)
def test_the_busiest_whole_disk_is_used(disks: dict[str, float], busiest: str) -> None:
    values = {f"disk.{d}.read_bytes": v for d, v in disks.items()}
    out = from_collector(collector_frame(values))
    assert as_dict(out) == {"disk.read_bytes": disks[busiest]}


def test_a_chosen_disk_and_a_missing_one() -> None:
    frame = collector_frame({"disk.vda.read_bytes": 1.0, "disk.vdb.read_bytes": 7.0})
    assert as_dict(from_collector(frame, device="vda")) == {"disk.read_bytes": 1.0}
    with pytest.raises(DataError, match=r"no disk 'sdz'.*vda, vdb"):
        from_collector(frame, device="sdz")


def test_recognised_only_by_the_collector_mark() -> None:
    frame = collector_frame({"cpu.user": 1.0})
    assert is_collector_frame(frame)
    assert not is_collector_frame(frame[frame["counter"] != COLLECTOR_MARK])
    assert from_collector(frame.iloc[:0]).empty


def _burners(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_inference_from_a_real_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The collector samples this machine while two CPU burners run; the store's counters
    go to the detector and to ``perfsleuth bottleneck infer STORE``."""
    path = tmp_path / "collected.duckdb"
    burners = _burners(2)
    try:
        with Store(path) as store:
            collector = Collector(store, node="here", batch=100, with_io=False)
            for _ in range(7):
                collector.sample()
                time.sleep(0.4)
            collector.flush()
    finally:
        for p in burners:
            p.kill()
            p.wait()
    with Store(path, read_only=True) as store:
        frame = store.read_frame("counter")
    assert is_collector_frame(frame)
    mapped = as_dict(from_collector(frame))
    assert {"cpu.user", "cpu.system", "disk.read_bytes", "disk.write_bytes", "disk.busy"} <= set(
        mapped
    )
    # two busy loops on a 2-CPU machine: at least most of the machine's CPU is user time
    assert mapped["cpu.user"] >= 1.0

    detector = BottleneckDetector(window=pd.Timedelta(minutes=1), min_utilisation=0.1)
    windows = detector.analyse(frame).windows
    assert len(windows) == 1
    inference = windows[0].inference
    # every mapped counter the model predicts is used (the machine's pressure, dirty pages and
    # memory size are mapped too: context and inputs, not predictions)
    assert set(inference.columns) == set(mapped) & set(load_model().counter_columns)
    # the burners alone take half the machine; other work on a shared machine only adds to it
    assert inference.util("cpu") >= 0.5

    with pytest.raises(SystemExit) as exit_info:
        main(["--format", "json", "bottleneck", "infer", str(path), "--min-utilisation", "0.1"])
    out, err = capsys.readouterr()
    assert exit_info.value.code in (0, 1, None), err
    findings = json.loads(out)["findings"]
    assert [f["kind"] for f in findings] == ["bottleneck"]
    assert findings[0]["entity"] == "here"


SAR = Path(__file__).parents[1] / "data" / "sysstat" / "sar.json"


def sar_frame(entity: str, values: dict[str, float]) -> pd.DataFrame:
    rows = [(T0, entity, name, value) for name, value in values.items()]
    return pd.DataFrame(rows, columns=["time", "entity", "counter", "value"])


def test_sar_counters_in_the_models_names() -> None:
    frame = pd.concat(
        [
            sar_frame(
                "h:cpu=all",
                {
                    "cpu-load.user": 0.5,
                    "cpu-load.nice": 0.1,
                    "cpu-load.system": 0.2,
                    "cpu-load.idle": 0.2,
                },
            ),
            sar_frame("h:cpu=0", {"cpu-load.user": 0.6}),
            sar_frame("h:cpu=1", {"cpu-load.user": 0.6}),
            sar_frame(
                "h:disk-device=vda",
                {"disk.rkB": 1e6, "disk.wkB": 2e6, "disk.util-percent": 0.4, "disk.aqu-sz": 1.5},
            ),
            sar_frame("h:disk-device=vda1", {"disk.rkB": 9e6}),
            sar_frame("h", {"memory.memfree": 1e9}),
        ]
    )
    assert is_sar_frame(frame) and not is_collector_frame(frame)
    out = from_sar(frame)
    assert set(out["entity"]) == {"h"}
    assert as_dict(out) == pytest.approx(
        {
            "cpu.user": 1.2,
            "cpu.system": 0.4,
            "disk.read_bytes": 1e6,
            "disk.write_bytes": 2e6,
            "disk.busy": 0.4,
            "disk.inflight": 1.5,
        }
    )
    assert to_model_counters(frame).equals(out)
    with pytest.raises(DataError, match="no disk 'sdz'"):
        from_sar(frame, device="sdz")
    # without per-CPU lines the number of CPUs is unknown: no CPU counters, not wrong ones
    alone = from_sar(frame[~frame["entity"].isin(["h:cpu=0", "h:cpu=1"])])
    assert not set(alone["counter"]) & {"cpu.user", "cpu.system"}


@pytest.mark.skipif(not SAR.exists(), reason="no sar sample")
def test_inference_from_a_real_sar_file(capsys: pytest.CaptureFixture[str]) -> None:
    frame = read_sar(SAR)
    mapped = from_sar(frame)
    assert {"cpu.user", "cpu.system", "disk.read_bytes", "disk.busy"} <= set(mapped["counter"])
    windows = BottleneckDetector(min_utilisation=0.1).analyse(frame).windows
    assert len(windows) == 1
    assert set(windows[0].inference.columns) == set(mapped["counter"])
    with pytest.raises(SystemExit) as exit_info:
        main(["--format", "json", "bottleneck", "infer", str(SAR), "--min-utilisation", "0.01"])
    out, err = capsys.readouterr()
    assert exit_info.value.code in (0, 1, None), err
    assert [f["kind"] for f in json.loads(out)["findings"]] == ["bottleneck"]


def test_sar_u_all_names_reach_the_model() -> None:
    """``sar -u ALL`` names the shares ``usr`` and ``sys`` (issue 20: they never reached the
    model, so a CPU-saturated minute read as "No findings.")."""
    frame = pd.concat(
        [
            sar_frame(
                "h:cpu=all", {"cpu-load.usr": 0.9, "cpu-load.nice": 0.0, "cpu-load.sys": 0.05}
            ),
            sar_frame("h:cpu=0", {"cpu-load.usr": 0.9}),
            sar_frame("h:cpu=1", {"cpu-load.usr": 0.9}),
        ]
    )
    assert as_dict(from_sar(frame)) == pytest.approx({"cpu.user": 1.8, "cpu.system": 0.1})
    upstream = read_sar(SAR.parent / "upstream" / "expected.sadf-j")
    assert {"cpu.user", "cpu.system"} <= set(from_sar(upstream)["counter"])


def test_a_wide_counter_csv_mapped_onto_the_model_from_the_config(tmp_path: Path) -> None:
    """Issue 20: a wide CSV of a user's own counters (a time column, one column per counter,
    named as the user's tool names them) reaches the model through a [[sources]] entry."""
    times = pd.date_range("2026-01-01", periods=30, freq="1s", tz="UTC")
    pd.DataFrame(
        {
            "ts": times.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "usr": 1.9,  # both cores busy in user mode
            "sys": 0.05,
            "util": 0.01,
            "rkb": 1000.0,
        }
    ).to_csv(tmp_path / "web-1.csv", index=False)
    mapping = {"usr": "cpu.user", "sys": "cpu.system", "util": "disk.busy"}
    config = parse_config(
        {
            "sources": [
                {
                    "path": "web-1.csv",
                    "contract": "counter",
                    "time_column": "ts",
                    "columns": {**mapping, "rkb": "disk.read_bytes"},
                    "values": [*mapping.values(), "disk.read_bytes"],
                }
            ]
        },
        source="perfsleuth.toml",
    )
    frame = load(config.sources, base=tmp_path).frames["counter"]
    assert set(frame["entity"]) == {"web-1"}
    assert set(frame["counter"]) == {"cpu.user", "cpu.system", "disk.busy", "disk.read_bytes"}
    assert len(frame) == 4 * 30
    (entity,) = BottleneckDetector().analyse(frame).entities
    assert entity.state == "cpu"
