"""The embedded DuckDB store: round-trips, idempotency, transactions, schema versions, errors."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfsleuth import store as store_module
from perfsleuth.errors import DataError, StoreError
from perfsleuth.findings import Evidence, Finding, Kind, Severity, ordered
from perfsleuth.frames import normalise
from perfsleuth.incidents import find_incidents
from perfsleuth.store import MIGRATIONS, SCHEMA_VERSION, TABLES, Store
from tests.conftest import T0, make_finding
from tests.support.processes import die_with_parent

HOSTILE = [
    'it\'s "quoted"',
    "'); DROP TABLE samples; --",
    "<script>alert(1)</script>",
    "naïve ☃ 日本語 🚀",
    "back\\slash\nnew line\ttab",
    "%s {0} $1 ?",
]


def metric_frame(
    entity: str = "web-1", metric: str = "rt", n: int = 5, offset: float = 0.0, unit: str = "ms"
) -> pd.DataFrame:
    raw = pd.DataFrame(
        {
            "time": [f"2024-05-01T09:{m:02d}:00Z" for m in range(n)],
            "entity": entity,
            "metric": metric,
            "value": np.arange(n, dtype=float) + offset,
            "unit": unit,
        }
    )
    return normalise(raw, "metric")


def counter_frame() -> pd.DataFrame:
    raw = pd.DataFrame(
        {
            "time": [1714554000.0, 1714554010.5, 1714554000.0],
            "entity": ["db-1", "db-1", "db-2"],
            "counter": ["disk_read", "disk_read", "disk_read"],
            "value": [1.5, 2.5, 3.0],
            "unit": ["MiB", "MiB", "KB"],
        }
    )
    return normalise(raw, "counter")


def process_frame(*, io: bool = True) -> pd.DataFrame:
    raw = pd.DataFrame(
        {
            "time": ["2024-05-01T09:00:00Z", "2024-05-01T10:00:00Z"] * 2,
            "node": ["n1", "n1", "n2", "n2"],
            "pid": [101, 101, 7, 7],
            "name": ["java", "java", "sshd", "sshd"],
            "user": ["app", "app", "root", "root"],
            "cpu": [1.0, 0.98, 0.01, 0.0],
            "rss_bytes": [2e9, 2.1e9, 5e6, 5e6],
        }
    )
    if io:
        raw["io_bytes"] = [0.0, 4096.0, 12.0, 0.0]
    return normalise(raw, "process")


def workload_frame(start: int = 0, n: int = 3) -> pd.DataFrame:
    minutes = range(start, start + n)
    raw = pd.DataFrame(
        {
            "time": [f"2024-05-01T09:{m:02d}:00Z" for m in minutes],
            "window_s": 60.0,
            "n[GET /]": [10.0 + m for m in minutes],
            "rt_sum[GET /]": [1.25 + m for m in minutes],
            "n[POST /buy]": [2.0] * n,
            "rt_sum[POST /buy]": [0.5] * n,
            "cpu_util": [0.25] * n,
        }
    )
    return normalise(raw, "workload")


def node_frame() -> pd.DataFrame:
    return normalise(
        pd.DataFrame({"node": ["n2", "n1"], "ncpu": [8, 4], "os": ["windows", "linux"]}), "node"
    )


def same(read: pd.DataFrame, written: pd.DataFrame) -> None:
    """``read`` holds exactly ``written`` (same columns, order, dtypes, values)."""
    pd.testing.assert_frame_equal(read, written.reset_index(drop=True))


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store(tmp_path / "s.duckdb") as opened:
        yield opened


# -- round-trips --------------------------------------------------------------------------------


def test_metric_round_trip_keeps_values_units_utc_times_and_dtypes(store: Store) -> None:
    frame = metric_frame()
    assert store.write_frame(frame, "metric") == 5
    read = store.read_frame("metric")
    same(read, frame)
    assert list(read.columns) == ["time", "entity", "metric", "value", "unit"]
    assert str(read["time"].dtype) == "datetime64[ns, UTC]"
    assert read["unit"].tolist() == ["s"] * 5  # normalise converted ms to s
    assert read["value"].tolist() == [0.0, 0.001, 0.002, 0.003, 0.004]


def test_counter_round_trip_and_kept_apart_from_metrics(store: Store) -> None:
    frame = counter_frame()
    store.write_frame(frame, "counter")
    clash = normalise(
        pd.DataFrame(
            {"time": [1714554000.0], "entity": ["db-1"], "metric": ["disk_read"], "value": [9.0]}
        ),
        "metric",
    )
    store.write_frame(clash, "metric")
    read = store.read_frame("counter")
    same(read, frame)
    assert list(read.columns) == ["time", "entity", "counter", "value", "unit"]
    assert store.read_frame("metric")["value"].tolist() == [9.0]
    assert store.read_frame("metric")["unit"].tolist() == [""]


def test_times_in_other_zones_are_stored_as_utc(store: Store) -> None:
    frame = metric_frame(unit="s")
    local = frame.assign(time=frame["time"].dt.tz_convert("America/New_York"))
    store.write_frame(local, "metric")
    read = store.read_frame("metric")
    same(read, frame)
    assert read["time"].iloc[0] == pd.Timestamp("2024-05-01T09:00:00Z")


@pytest.mark.parametrize("io", [True, False])
def test_process_round_trip(store: Store, io: bool) -> None:
    frame = process_frame(io=io)
    assert store.write_frame(frame, "process") == 4
    read = store.read_frame("process")
    assert list(read.columns) == [
        "time", "node", "pid", "name", "user", "cpu", "rss_bytes", "io_bytes",
    ]  # fmt: skip
    expected = frame if io else frame.assign(io_bytes=np.nan)
    same(read, expected[list(read.columns)])
    assert read["pid"].dtype == np.int64


def test_process_io_bytes_may_be_partly_unknown(store: Store) -> None:
    frame = process_frame()
    frame.loc[1, "io_bytes"] = np.nan
    store.write_frame(frame, "process")
    read = store.read_frame("process")
    assert read["io_bytes"].isna().tolist() == [False, True, False, False]


def test_process_node_context_round_trips(store: Store) -> None:
    frame = process_frame().assign(
        ncpu=2.0, machine_cpu=[0.5, 1.0, 1.5, 2.0], volume=np.nan, file_bytes=1e6, os="Linux"
    )
    frame.loc[0, "volume"] = 10.0
    store.write_frame(frame, "process")
    read = store.read_frame("process")
    for column in ("ncpu", "machine_cpu", "volume", "file_bytes", "os"):
        assert read[column].tolist() == frame[column].tolist() or column == "volume"
    assert read["volume"].isna().tolist() == [False, True, True, True]
    # without the context, the frame reads back as written (no empty columns)
    store.write_frame(process_frame().assign(node="other"), "process")
    assert "machine_cpu" not in store.read_frame("process", node="other").columns


def test_a_version_1_store_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
    for statement in MIGRATIONS[1]:
        con.execute(statement)
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute(
        "INSERT INTO processes VALUES "
        "('n1', 7, 'java', '2024-05-01T09:00:00Z', 'app', .5, 1e6, NULL)"
    )
    con.close()
    with Store(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        read = store.read_frame("process")
        assert read["pid"].tolist() == [7] and "ncpu" not in read.columns


def test_workload_round_trip_keeps_column_order(store: Store) -> None:
    frame = workload_frame()
    assert store.write_frame(frame, "workload", source="shop") == 3
    read = store.read_frame("workload", source="shop")
    same(read, frame)
    assert store.stats()["workload"] == 3 * 5  # stored long: one row per window and column


def test_workload_new_columns_come_after_the_first_ones(store: Store) -> None:
    store.write_frame(workload_frame(0, 2), "workload")
    later = workload_frame(2, 2)
    later.insert(2, "n[DELETE /x]", [1.0, 3.0])
    store.write_frame(later, "workload")
    read = store.read_frame("workload")
    assert list(read.columns) == [
        "time", "window_s", "n[GET /]", "rt_sum[GET /]", "n[POST /buy]", "rt_sum[POST /buy]",
        "cpu_util", "n[DELETE /x]",
    ]  # fmt: skip
    assert read["n[DELETE /x]"].isna().tolist() == [True, True, False, False]
    assert read["n[GET /]"].tolist() == [10.0, 11.0, 12.0, 13.0]


def test_workload_sources_are_separate(store: Store) -> None:
    store.write_frame(workload_frame(0, 2), "workload", source="a")
    store.write_frame(workload_frame(0, 3), "workload", source="b")
    assert len(store.read_frame("workload", source="a")) == 2
    assert len(store.read_frame("workload", source="b")) == 3
    with pytest.raises(DataError, match=r"several workloads \('a', 'b'\); pass source="):
        store.read_frame("workload")
    empty = store.read_frame("workload", source="nope")
    assert list(empty.columns) == ["time", "window_s"]
    assert empty.empty


def test_workload_rewrite_with_new_window_length_updates_the_whole_window(store: Store) -> None:
    store.write_frame(workload_frame(), "workload")
    shorter = workload_frame().iloc[[1]][["time", "window_s", "n[GET /]"]].assign(window_s=30.0)
    store.write_frame(shorter, "workload")
    read = store.read_frame("workload")
    assert read["window_s"].tolist() == [60.0, 30.0, 60.0]
    assert store.stats()["workload"] == 15


def test_node_round_trip_sorted_by_node(store: Store) -> None:
    store.write_frame(node_frame(), "node")
    read = store.read_frame("node")
    same(read, node_frame().sort_values("node"))
    store.write_frame(node_frame().assign(ncpu=16.0).iloc[[0]], "node")
    assert store.read_frame("node")["ncpu"].tolist() == [4.0, 16.0]
    assert store.stats()["nodes"] == 2


# -- idempotency --------------------------------------------------------------------------------


def test_rewriting_a_batch_is_idempotent(store: Store) -> None:
    for contract, frame in [
        ("metric", metric_frame()),
        ("counter", counter_frame()),
        ("process", process_frame()),
        ("workload", workload_frame()),
        ("node", node_frame()),
    ]:
        store.write_frame(frame, contract)
        before = store.stats()
        first = store.read_frame(contract)
        store.write_frame(frame, contract)
        assert store.stats() == before, contract
        same(store.read_frame(contract), first)


def test_newer_value_for_a_stored_key_replaces_it(store: Store) -> None:
    store.write_frame(metric_frame(), "metric")
    store.write_frame(metric_frame(offset=100.0).iloc[2:], "metric")
    read = store.read_frame("metric")
    assert read["value"].tolist() == pytest.approx([0.0, 0.001, 0.102, 0.103, 0.104])
    assert store.stats()["samples"] == 5


def test_last_row_wins_within_one_batch(store: Store) -> None:
    frame = metric_frame(n=2)
    repeated = pd.concat([frame, frame.assign(value=[7.0, 8.0])], ignore_index=True)
    assert store.write_frame(repeated, "metric") == 2
    assert store.read_frame("metric")["value"].tolist() == [7.0, 8.0]


def test_empty_frames_write_nothing(store: Store) -> None:
    assert store.write_frame(metric_frame().iloc[:0], "metric") == 0
    assert store.write_frame(pd.DataFrame(columns=["node", "ncpu", "os"]), "node") == 0
    assert store.write_frame(workload_frame().iloc[:0], "workload") == 0
    assert set(store.stats().values()) == {0}
    empty = store.read_frame("metric")
    assert empty.empty
    assert list(empty.columns) == ["time", "entity", "metric", "value", "unit"]
    assert str(empty["time"].dtype) == "datetime64[ns, UTC]"


# -- validation ---------------------------------------------------------------------------------


def test_missing_columns_are_named(store: Store) -> None:
    frame = metric_frame().drop(columns=["metric"])
    with pytest.raises(DataError, match=r"<frame>: metric frame is missing column\(s\) 'metric'"):
        store.write_frame(frame, "metric")
    with pytest.raises(DataError, match=r"web\.csv: process frame is missing .*'user'"):
        store.write_frame(process_frame().drop(columns="user"), "process", source="web.csv")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.assign(time=f["time"].dt.tz_localize(None)), "column 'time'.*timezone-aware"),
        (lambda f: f.assign(time=f["time"].astype(str)), "column 'time'.*normalise"),
        (lambda f: f.assign(entity=1), "column 'entity': expected text"),
        (lambda f: f.assign(value="3"), "column 'value': expected numbers"),
        (lambda f: f.assign(value=[1.0, math.nan, 2, 3, 4]), r"column 'value'.*nan \(row 1\)"),
        (lambda f: f.assign(value=[1.0, 2, math.inf, 3, 4]), r"column 'value'.*inf \(row 2\)"),
        (lambda f: f.assign(unit=[None, "s", "s", "s", "s"]), "column 'unit'"),
    ],
)
def test_bad_values_are_rejected_and_nothing_is_written(
    store: Store, change: Any, message: str
) -> None:
    with pytest.raises(DataError, match=message):
        store.write_frame(change(metric_frame()), "metric")
    assert store.stats()["samples"] == 0


def test_unknown_contract_and_non_frames_are_errors(store: Store) -> None:
    with pytest.raises(DataError, match="unknown frame contract 'metrics'"):
        store.write_frame(metric_frame(), "metrics")
    with pytest.raises(DataError, match="expected a pandas DataFrame"):
        store.write_frame([1, 2], "metric")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="unknown frame contract"):
        store.read_frame("samples")


def test_fractional_pids_are_rejected(store: Store) -> None:
    with pytest.raises(DataError, match="column 'pid'"):
        store.write_frame(process_frame().assign(pid=[1.5, 1.5, 2.0, 2.0]), "process")


# -- hostile text -------------------------------------------------------------------------------


def test_hostile_strings_survive_every_table(store: Store) -> None:
    frames = [metric_frame(entity=text, metric=text, n=2) for text in HOSTILE]
    metrics = normalise(pd.concat(frames, ignore_index=True), "metric")
    store.write_frame(metrics, "metric")
    same(store.read_frame("metric"), metrics)
    for text in HOSTILE:
        assert len(store.series(text, text)) == 2

    procs = process_frame().assign(node=HOSTILE[1], name=HOSTILE[2], user=HOSTILE[3])
    store.write_frame(procs, "process")
    assert store.read_frame("process", node=HOSTILE[1])["user"].tolist() == [HOSTILE[3]] * 4

    wide = workload_frame().rename(columns={"n[GET /]": f"n[{HOSTILE[1]}]"})
    store.write_frame(wide, "workload", source=HOSTILE[0])
    same(store.read_frame("workload", source=HOSTILE[0]), wide)

    finding = dataclasses.replace(
        make_finding(entity=HOSTILE[1], metric=HOSTILE[2], explanation=HOSTILE[3]),
        evidence=(Evidence(HOSTILE[0], HOSTILE[4], HOSTILE[5]),),
        detector=HOSTILE[2],
    )
    store.write_findings([finding], run_id=HOSTILE[1])
    assert store.findings(entity=HOSTILE[1], run_id=HOSTILE[1]) == [finding]

    store.append_history(HOSTILE[2], HOSTILE[1], HOSTILE[3])
    assert store.history(HOSTILE[2])["text"].tolist() == [HOSTILE[3]]
    assert set(store.stats()) == set(TABLES)  # every table is still there


# -- filters ------------------------------------------------------------------------------------


def test_read_filters(store: Store) -> None:
    frames = [metric_frame("a", "rt"), metric_frame("a", "qlen"), metric_frame("b", "rt")]
    store.write_frame(pd.concat(frames, ignore_index=True), "metric")
    assert set(store.read_frame("metric", entity="a")["metric"]) == {"rt", "qlen"}
    assert set(store.read_frame("metric", name="rt")["entity"]) == {"a", "b"}
    assert len(store.read_frame("metric", entity=["a", "b"], name=["rt"])) == 10
    window = store.read_frame(
        "metric", start=T0 + timedelta(minutes=1), end=T0 + timedelta(minutes=3)
    )
    assert sorted(set(window["time"].dt.minute)) == [1, 2]  # start <= time < end
    assert len(store.series("a", "rt", start="2024-05-01T09:03:00+00:00")) == 2

    store.write_frame(process_frame(), "process")
    assert set(store.read_frame("process", node="n2")["name"]) == {"sshd"}
    assert set(store.read_frame("process", name="java")["node"]) == {"n1"}
    store.write_frame(node_frame(), "node")
    assert store.read_frame("node", node=["n1"])["os"].tolist() == ["linux"]
    store.write_frame(workload_frame(), "workload", source="w")
    assert len(store.read_frame("workload", source="w", start=T0 + timedelta(minutes=2))) == 1


def test_read_is_sorted_by_series_then_time(store: Store) -> None:
    frame = pd.concat([metric_frame("b", "x"), metric_frame("a", "y"), metric_frame("a", "x")])
    store.write_frame(frame.iloc[::-1], "metric")
    read = store.read_frame("metric")
    expected = read.sort_values(["entity", "metric", "time"], ignore_index=True)
    same(read, expected)


@pytest.mark.parametrize(
    ("contract", "filters"),
    [
        ("metric", {"node": "n1"}),
        ("counter", {"source": "x"}),
        ("process", {"entity": "e"}),
        ("workload", {"name": "n"}),
        ("node", {"start": T0}),
    ],
)
def test_filters_that_do_not_apply_are_errors(
    store: Store, contract: str, filters: dict[str, Any]
) -> None:
    with pytest.raises(DataError, match="cannot be filtered by"):
        store.read_frame(contract, **filters)


def test_naive_filter_times_are_errors(store: Store) -> None:
    with pytest.raises(DataError, match="start must be timezone-aware"):
        store.read_frame("metric", start=datetime(2024, 5, 1))
    with pytest.raises(DataError, match="end: not a time"):
        store.read_frame("metric", end="yesterday-ish")


# -- findings -----------------------------------------------------------------------------------


def test_findings_round_trip_with_units_and_non_finite_evidence(store: Store) -> None:
    finding = dataclasses.replace(
        make_finding(length=30),
        evidence=(
            Evidence("mean_before", 0.012, "s"),
            Evidence("t", math.inf),
            Evidence("low", -math.inf, "bytes"),
            Evidence("phi", math.nan),
            Evidence("count", 12, "count"),
            Evidence("saturated", True),
            Evidence("process", "java"),
            Evidence("numpy", np.float64(0.5), "fraction"),
        ),
    )
    assert store.write_findings([finding]) == 1
    [again] = store.findings()
    assert again.to_json() == finding.to_json()
    assert again.id == finding.id
    assert Finding.from_dict(again.to_dict()).to_dict() == finding.to_dict()
    assert math.isnan(float(again.evidence_dict()["phi"]))
    assert again.evidence_dict()["low"] == -math.inf
    assert type(again.evidence_dict()["count"]) is int
    assert again.evidence_dict()["saturated"] is True
    assert [e.unit for e in again.evidence] == [e.unit for e in finding.evidence]


def test_findings_order_and_filters(store: Store) -> None:
    low = make_finding(minutes=0, severity=Severity.INFO, entity="a")
    late = make_finding(minutes=10, severity=Severity.ERROR, entity="b")
    early = make_finding(minutes=5, severity=Severity.ERROR, entity="a", kind=Kind.CPU_LOOP)
    run = store.begin_run("scan")
    store.write_findings([low, late], run_id="old")
    store.write_findings([early], run_id=run)
    assert store.findings() == [early, late, low]
    assert store.findings(kind="cpu_loop") == [early]
    assert store.findings(kind=Kind.CHANGE_POINT, entity="a") == [low]
    assert store.findings(min_severity="error") == [early, late]
    assert store.findings(min_severity=Severity.CRITICAL) == []
    assert store.findings(since=T0 + timedelta(minutes=5)) == [early, late]
    assert store.findings(run_id=run) == [early]
    with pytest.raises(DataError, match="unknown finding kind 'loop'"):
        store.findings(kind="loop")
    with pytest.raises(DataError, match="unknown severity"):
        store.findings(min_severity="loud")


def test_writing_a_finding_again_keeps_first_seen(store: Store) -> None:
    finding = make_finding()
    day1 = datetime(2024, 5, 2, 6, 0, tzinfo=UTC)
    day2 = day1 + timedelta(days=1)
    store.write_findings([finding], run_id="run-1", at=day1)
    assert store.seen(finding.id) == (day1, day1)
    worse = dataclasses.replace(
        finding,
        severity=Severity.CRITICAL,
        explanation="still rising",
        evidence=(Evidence("days", 2, "count"),),
    )
    assert worse.id == finding.id
    store.write_findings([worse], run_id="run-2", at=day2)
    assert store.seen(finding.id) == (day1, day2)
    assert store.findings() == [worse]
    assert store.findings(run_id="run-2") == [worse]
    assert store.findings(run_id="run-1") == []
    assert store.stats()["findings"] == 1
    assert store.seen("no-such-id") is None


def test_write_findings_without_time_uses_now(store: Store) -> None:
    before = datetime.now(UTC)
    store.write_findings([make_finding(), make_finding()])  # a repeat collapses
    seen = store.seen(make_finding().id)
    assert seen is not None
    assert before - timedelta(seconds=1) <= seen[0] <= datetime.now(UTC)
    assert store.stats()["findings"] == 1
    assert store.write_findings([]) == 0
    with pytest.raises(DataError, match="expected a Finding"):
        store.write_findings([make_finding().to_dict()])  # type: ignore[list-item]


TEXT = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters=["\x00"]), max_size=12
)
EVIDENCE_VALUE = st.one_of(
    st.floats(), st.integers(min_value=-(2**80), max_value=2**80), st.booleans(), TEXT
)
FINDINGS = st.builds(
    Finding,
    kind=st.sampled_from(Kind),
    entity=TEXT,
    metric=TEXT,
    start=st.datetimes(
        min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
    ),
    end=st.just(datetime(2200, 1, 2, tzinfo=UTC)),
    severity=st.sampled_from(Severity),
    explanation=TEXT.filter(lambda s: bool(s.strip())),
    evidence=st.lists(st.builds(Evidence, TEXT, EVIDENCE_VALUE, TEXT), max_size=4).map(tuple),
    detector=TEXT,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FINDINGS, max_size=6))
def test_any_set_of_findings_round_trips(findings: list[Finding]) -> None:
    with Store(":memory:") as memory:
        assert memory.write_findings(findings) == len({f.id for f in findings})
        latest = {f.id: f for f in findings}
        expected = ordered(latest.values())
        got = memory.findings()
        assert [f.to_json() for f in got] == [f.to_json() for f in expected]
        assert [f.id for f in got] == [f.id for f in expected]


# -- runs, history, stats -----------------------------------------------------------------------


def test_runs_are_recorded(store: Store) -> None:
    run = store.begin_run("perfsleuth scan --fleet")
    runs = store.runs()
    assert runs["status"].tolist() == ["running"]
    assert runs["finished"].isna().all()
    store.finish_run(run, status="ok", n_findings=3)
    runs = store.runs()
    assert runs.loc[0, "run_id"] == run
    assert runs.loc[0, "command"] == "perfsleuth scan --fleet"
    assert runs.loc[0, "n_findings"] == 3
    assert runs.loc[0, "finished"] >= runs.loc[0, "started"]
    with pytest.raises(StoreError, match="no run 'nope' to finish"):
        store.finish_run("nope", status="ok", n_findings=0)


def test_history_is_append_only_and_ordered(store: Store) -> None:
    store.append_history("n1", "alert", "cpu loop: java", time=T0 + timedelta(hours=1))
    store.append_history("n2", "ticket", "opened T-1", time=T0)
    store.append_history("n1", "alert", "cpu loop: java again", time=T0 + timedelta(hours=1))
    everything = store.history()
    assert list(everything.columns) == ["node", "time", "kind", "text"]
    assert everything["text"].tolist() == ["opened T-1", "cpu loop: java", "cpu loop: java again"]
    assert str(everything["time"].dtype) == "datetime64[ns, UTC]"
    assert store.history("n1")["kind"].tolist() == ["alert", "alert"]
    store.append_history("n3", "note", "now")
    assert store.history("n3")["time"].iloc[0] > pd.Timestamp(T0)


def test_stats_counts_every_table(store: Store) -> None:
    store.write_frame(metric_frame(), "metric")
    store.write_frame(counter_frame(), "counter")
    store.write_frame(process_frame(), "process")
    store.write_frame(node_frame(), "node")
    store.write_findings([make_finding()])
    run = store.begin_run("x")
    store.write_incidents(find_incidents([make_finding()]), run_id=run)
    store.append_history("n1", "note", "hello")
    assert store.stats() == {
        "samples": 8, "processes": 4, "nodes": 2, "workload": 0, "findings": 1,
        "incidents": 1, "runs": 1, "node_history": 1,
    }  # fmt: skip


def test_incidents_are_kept_per_run_as_told(store: Store) -> None:
    first, second = make_finding(), make_finding(entity="db-1", minutes=300)
    incidents = find_incidents([first, second])
    run = store.begin_run("analyze")
    assert store.write_incidents(incidents, run_id=run) == 2
    assert store.write_incidents([], run_id=run) == 0
    stored = store.incidents(run_id=run)
    assert [{k: v for k, v in i.items() if k != "run_id"} for i in stored] == [
        i.to_dict() for i in incidents
    ]
    assert store.incidents(run_id="another") == []
    later = store.begin_run("analyze")
    store.write_incidents(incidents[:1], run_id=later)
    assert [i["run_id"] for i in store.incidents()] == [later, run, run]  # newest run first


# -- files, reopening, schema -------------------------------------------------------------------


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "store.duckdb"
    with Store(path) as first:
        first.write_frame(metric_frame(), "metric")
        first.write_frame(process_frame(), "process")
        first.write_frame(workload_frame(), "workload")
        first.write_frame(node_frame(), "node")
        first.write_findings([make_finding()], run_id="r")
        first.append_history("n1", "note", "hi")
        stats = first.stats()
    for _ in range(3):
        with Store(path) as again:
            assert again.stats() == stats
            same(again.read_frame("metric"), metric_frame())
            same(again.read_frame("workload"), workload_frame())
            assert again.findings() == [make_finding()]


def test_read_only_store_reads_but_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as writable:
        writable.write_frame(metric_frame(), "metric")
    with Store(path, read_only=True) as reader:
        same(reader.read_frame("metric"), metric_frame())
        with pytest.raises(StoreError, match="read-only"):
            reader.write_frame(metric_frame(), "metric")
        with pytest.raises(StoreError, match="read-only"):
            reader.begin_run("x")
    with pytest.raises(StoreError, match=r"missing\.duckdb: no store here"):
        Store(tmp_path / "missing.duckdb", read_only=True)


def test_closed_store_says_so(tmp_path: Path) -> None:
    opened = Store(tmp_path / "s.duckdb")
    opened.close()
    opened.close()
    with pytest.raises(StoreError, match="closed"):
        opened.stats()


def test_schema_version_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as opened:
        assert opened.schema_version == SCHEMA_VERSION
    con = duckdb.connect(str(path))
    try:
        rows = con.execute("SELECT key, value FROM meta").fetchall()
    finally:
        con.close()
    assert rows == [("schema_version", str(SCHEMA_VERSION))]
    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))


def test_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(StoreError, match=r"s\.duckdb: written by a newer perfsleuth"):
        Store(path)


def test_adding_a_schema_version_is_one_migration_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as old:
        old.write_frame(metric_frame(), "metric")
    step = ("CREATE TABLE alerts (id VARCHAR PRIMARY KEY, sent TIMESTAMPTZ)",)
    monkeypatch.setitem(MIGRATIONS, SCHEMA_VERSION + 1, step)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with Store(path, read_only=False) as upgraded:
        assert upgraded.schema_version == SCHEMA_VERSION + 1
        same(upgraded.read_frame("metric"), metric_frame())
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM alerts").fetchone() == (0,)
    finally:
        con.close()


def test_not_a_duckdb_file_is_refused_with_its_path(tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_text("time,entity\n" * 100)
    with pytest.raises(StoreError, match=r"notes\.duckdb: not a DuckDB database file") as info:
        Store(path)
    assert "\n" not in str(info.value)
    assert path.read_text() == "time,entity\n" * 100  # left untouched
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path)


def test_foreign_duckdb_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE things (x INTEGER)")
    con.close()
    with pytest.raises(StoreError, match=r"other\.duckdb: a DuckDB database but not a perfsleuth"):
        Store(path)


def test_store_locked_by_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    holder = textwrap.dedent(
        f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r})
        print("ready", flush=True)
        sys.stdin.read()
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
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        held = rf"s\.duckdb: store is in use by another process \(PID {proc.pid}\)"
        with pytest.raises(StoreError, match=held):
            Store(path)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
    with Store(path) as free_again:
        assert free_again.stats()["samples"] == 0


# -- transactions -------------------------------------------------------------------------------


REAL_INSERT = store_module._insert_latest


def failing_after_insert(exc: BaseException) -> Any:
    """A stand-in for the store's insert step that inserts, then fails before the commit."""

    def insert_then_fail(*args: Any) -> int:
        REAL_INSERT(*args)
        raise exc

    return insert_then_fail


def test_failed_write_rolls_back_completely(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    store.write_frame(metric_frame(), "metric")
    before = store.read_frame("metric")
    # Overlaps the stored rows (their delete has run) and adds new ones (inserted, not committed).
    update = metric_frame(offset=50.0, n=8)
    monkeypatch.setattr(store_module, "_insert_latest", failing_after_insert(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        store.write_frame(update, "metric")
    same(store.read_frame("metric"), before)
    assert store.stats()["samples"] == 5

    failure = duckdb.IOException("disk full")
    monkeypatch.setattr(store_module, "_insert_latest", failing_after_insert(failure))
    with pytest.raises(StoreError, match=r"could not write metric frame, nothing was stored"):
        store.write_frame(update, "metric")
    same(store.read_frame("metric"), before)

    monkeypatch.undo()
    assert store.write_frame(update, "metric") == 8  # the store still works afterwards
    assert store.stats()["samples"] == 8


def test_failed_workload_write_leaves_no_new_columns(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.write_frame(workload_frame(0, 2), "workload")
    before = store.read_frame("workload")
    wider = workload_frame(1, 3).assign(**{"n[PUT /]": 1.0})
    monkeypatch.setattr(store_module, "_insert_latest", failing_after_insert(RuntimeError("x")))
    with pytest.raises(RuntimeError):
        store.write_frame(wider, "workload")
    monkeypatch.undo()
    same(store.read_frame("workload"), before)
    store.write_frame(workload_frame(0, 1).assign(**{"n[HEAD /]": 2.0}), "workload")
    assert list(store.read_frame("workload").columns)[-1] == "n[HEAD /]"


def test_sub_microsecond_times_are_one_key(store: Store) -> None:
    frame = metric_frame(n=1, unit="s")
    nudged = frame.assign(time=frame["time"] + pd.Timedelta(nanoseconds=300), value=9.0)
    store.write_frame(pd.concat([frame, nudged], ignore_index=True), "metric")
    read = store.read_frame("metric")
    assert read["value"].tolist() == [9.0]
    assert read["time"].iloc[0] == frame["time"].iloc[0]
    late = frame.assign(time=frame["time"] + pd.Timedelta(nanoseconds=700), value=5.0)
    store.write_frame(late, "metric")
    assert store.read_frame("metric")["value"].tolist() == [5.0]


def test_writers_in_threads_keep_keys_unique(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    frame = metric_frame(n=50)
    errors: list[BaseException] = []

    def write(offset: float) -> None:
        try:
            with Store(path) as mine:
                for _ in range(4):
                    mine.write_frame(frame.assign(value=frame["value"] + offset), "metric")
        except BaseException as exc:  # reported below: a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(float(i),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []  # serialised per file: no write-write conflicts between stores
    with Store(path) as shared:
        assert shared.stats()["samples"] == 50


# -- files that are not stores, damaged stores, killed runs -------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("data.csv", b"time,entity,metric,value\n2024-05-01T09:00:00Z,a,m,1\n", "a CSV file"),
        ("data.parquet", b"PAR1" + b"\0" * 64 + b"PAR1", "a Parquet file"),
        ("data.json", b'{"time": "2024-05-01T09:00:00Z", "value": 1}\n', "JSON"),
        ("empty.duckdb", b"", "empty"),
    ],
)
def test_a_data_file_as_store_is_refused_and_left_untouched(
    tmp_path: Path, name: str, content: bytes, kind: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    for read_only in (False, True):
        with pytest.raises(StoreError, match=rf"{name}: not a DuckDB database file .*{kind}"):
            Store(path, read_only=read_only)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no WAL, no segments


def _kept_in_the_wal(path: Path) -> None:
    """A store whose last committed rows are only in its write-ahead log (a killed writer)."""
    Store(path).close()
    script = textwrap.dedent(
        f"""
        import os
        import pandas as pd
        from perfsleuth.store import Store
        store = Store({str(path)!r})
        store.write_frame(pd.DataFrame({{
            "time": pd.date_range("2024-05-01", periods=5, freq="min", tz="UTC"),
            "entity": "wal", "metric": "rt", "value": [1.0, 2.0, 3.0, 4.0, 5.0]}}), "metric")
        os._exit(0)  # no close, no checkpoint: the rows are committed in the WAL only
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert path.with_name(path.name + ".wal").stat().st_size > 0


def test_committed_rows_in_the_wal_are_replayed(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    _kept_in_the_wal(path)
    with Store(path, read_only=True) as store:
        assert store.read_frame("metric")["value"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_damaged_wal_header_is_refused_and_its_rows_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    _kept_in_the_wal(path)
    wal = path.with_name(path.name + ".wal")
    intact = wal.read_bytes()
    wal.write_bytes(b"\0" * 16 + intact[16:])
    damaged = wal.read_bytes()
    # DuckDB skips such a log silently and drops it at the next write; perfsleuth refuses
    for read_only in (False, True):
        with pytest.raises(StoreError, match=r"write-ahead log s\.duckdb\.wal .* damaged") as info:
            Store(path, read_only=read_only)
        assert "\n" not in str(info.value)
    assert wal.read_bytes() == damaged  # the refused open left the log as it was
    wal.write_bytes(intact)  # restored (from a backup, say): every committed row is there
    with Store(path) as store:
        assert store.read_frame("metric")["value"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("kept", [3, 40, 0.5, -1])
def test_a_log_torn_in_its_first_commit_opens_with_nothing_lost(
    tmp_path: Path, kept: float
) -> None:
    """A writer killed mid-commit leaves a log with no complete commit: the commit never
    returned, so nothing committed is in it and the store opens (a collector restarts)."""
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.write_frame(metric_frame(entity="before", n=4), "metric")
    _kept_in_the_wal(path)  # the 5 rows' commit, in the log only
    wal = path.with_name(path.name + ".wal")
    intact = wal.read_bytes()
    cut = int(kept * len(intact)) if isinstance(kept, float) else kept % len(intact)
    wal.write_bytes(intact[:cut])  # torn in the header, the first entry, mid-way, at the end
    for read_only in (True, False):
        with Store(path, read_only=read_only) as store:
            frame = store.read_frame("metric")
            assert sorted(set(frame["entity"])) == ["before"]
    with Store(path) as store:  # and it takes new writes
        store.write_frame(metric_frame(entity="after", n=4), "metric")
    with Store(path, read_only=True) as store:
        assert sorted(set(store.read_frame("metric")["entity"])) == ["after", "before"]


def test_damaged_wal_entry_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    _kept_in_the_wal(path)
    wal = path.with_name(path.name + ".wal")
    data = bytearray(wal.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 16] = b"\xff" * 16
    wal.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"write-ahead log s\.duckdb\.wal is damaged") as info:
        Store(path)
    assert "\n" not in str(info.value)
    assert wal.read_bytes() == bytes(data)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a store with rows in several blocks (written once: it takes a while)."""
    path = tmp_path_factory.mktemp("filled") / "s.duckdb"
    with Store(path) as store:
        for k in range(40):  # enough rows for several blocks
            store.write_frame(metric_frame(entity=f"e{k}", n=50), "metric")
        store.write_findings([make_finding()])
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0.25, 0.5, 0.75, 0.95])
def test_truncated_store_is_one_clear_error_and_is_not_changed(
    tmp_path: Path, filled: bytes, keep: float
) -> None:
    path = tmp_path / "s.duckdb"
    path.write_bytes(filled[: int(len(filled) * keep)])
    cut = path.read_bytes()
    for read_only in (True, False):
        with pytest.raises(StoreError) as info, Store(path, read_only=read_only) as store:
            store.read_frame("metric")
            store.findings()
            store.write_frame(metric_frame(entity="new"), "metric")
        message = str(info.value)
        assert "\n" not in message and "in use" not in message
        assert "truncated" in message or "corrupt" in message, message
        assert path.read_bytes() == cut


@pytest.mark.parametrize("offset", [4096, 8192, 12288])
def test_corrupt_header_block_is_said_to_be_corrupt_not_in_use(
    tmp_path: Path, filled: bytes, offset: int
) -> None:
    path = tmp_path / "s.duckdb"
    data = bytearray(filled)
    data[offset : offset + 512] = b"\xff" * 512
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=r"s\.duckdb: the store file is corrupt") as info:
        Store(path, read_only=True)
    assert "in use" not in str(info.value)
    assert path.read_bytes() == bytes(data)


def test_a_killed_run_is_marked_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    script = textwrap.dedent(
        f"""
        import os, signal
        from perfsleuth.store import Store
        store = Store({str(path)!r})
        store.begin_run("perfsleuth analyze killed.toml")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], timeout=120, check=False)
    assert killed.returncode == -9
    with Store(path, read_only=True) as reader:  # a reader changes nothing
        assert reader.runs()["status"].tolist() == ["running"]
    with Store(path) as store:
        mine = store.begin_run("perfsleuth analyze mine.toml")
        with Store(path) as again:  # this process's own run is not another's killed one
            runs = again.runs().set_index("command")["status"]
        assert runs.to_dict() == {
            "perfsleuth analyze killed.toml": "interrupted",
            "perfsleuth analyze mine.toml": "running",
        }
        store.finish_run(mine, status="ok", n_findings=0)


def test_a_reader_waits_while_another_process_holds_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.write_frame(metric_frame(), "metric")
    holder = textwrap.dedent(
        f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r})
        print("ready", flush=True)
        sys.stdin.readline()
        con.close()
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
        with pytest.raises(store_module.StoreInUseError, match="in use by another process"):
            Store(path, read_only=True, wait=0)
        got: list[pd.DataFrame] = []
        reader = threading.Thread(
            target=lambda: got.append(Store(path, read_only=True, wait=120).read_frame("metric"))
        )
        reader.start()  # waits for the holder to let go ...
        proc.stdin.write("done\n")
        proc.stdin.flush()
        reader.join(timeout=180)
        assert not reader.is_alive()
        same(got[0], metric_frame())  # ... then reads
    finally:
        proc.kill()
        proc.communicate()


def test_a_run_command_is_stored_without_credentials(store: Store) -> None:
    store.begin_run("perfsleuth import --url https://bob:hunter22@prom.example/x?token=abc123")
    command = store.runs()["command"].iloc[0]
    assert "hunter22" not in command and "abc123" not in command and "bob" not in command
    assert "https://***@prom.example/x?token=***" in command


# -- segments: what the collector commits beside the store --------------------------------------


def _segment_parts(node: str, t0: pd.Timestamp, n: int) -> dict[str, pd.DataFrame]:
    times = [t0 + pd.Timedelta(seconds=k) for k in range(n)]
    processes = pd.DataFrame(
        {
            "node": node, "pid": 42, "name": "java", "time": times, "user": "app",
            "cpu": [0.5] * n, "rss_bytes": [1e6] * n,
            "io_bytes": [None if k == 0 else 10.0 * k for k in range(n)],  # unreadable once
            "start_time": 1.7e9, "cpu_wait": [0.01] * n,
        }
    )  # fmt: skip
    counters = pd.DataFrame(
        {"entity": node, "name": "cpu.user", "time": times, "value": [1.0] * n, "unit": "cores"}
    )
    nodes = pd.DataFrame({"node": [node], "ncpu": [4.0], "os": ["Linux"]})
    starts = pd.DataFrame(
        {
            "node": [node], "pid": [42], "start_time": [pd.Timestamp("2024-05-01T08:00:00Z")],
            "name": ["java"], "user": ["app"], "first_seen": [times[0]], "last_seen": [times[-1]],
        }
    )  # fmt: skip
    return {"processes": processes, "counters": counters, "nodes": nodes, "starts": starts}


def _commit(path: Path, node: str, t0: pd.Timestamp, n: int = 3) -> store_module.Segment:
    return store_module.append_segment(
        path,
        node=node,
        last=(t0 + pd.Timedelta(seconds=n - 1)).to_pydatetime(),
        parts=_segment_parts(node, t0, n),
        state={"node": node, "n": n},
    )


T_SEG = pd.Timestamp("2024-05-01T09:00:00Z")


def test_segments_are_read_with_the_tables_then_folded_in_once(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        store.write_frame(process_frame(), "process")
        written = store.stats()
    first = _commit(path, "c1", T_SEG)
    _commit(path, "c1", T_SEG + pd.Timedelta(minutes=1))
    _commit(path, "c2", T_SEG)
    with Store(path, read_only=True) as reader:  # a reader sees the segments, folds nothing
        read = reader.read_frame("process")
        counters = reader.read_frame("counter")
        nodes = reader.read_frame("node")
        stats = reader.stats()
        assert reader.process_nodes() == ["c1", "c2", "n1", "n2"]
    assert len(read) == 4 + 9 and read["io_bytes"].isna().sum() == 3
    assert read.loc[read["node"] == "c1", "cpu_wait"].tolist() == [0.01] * 6
    assert len(counters) == 9 and set(counters["unit"]) == {"cores"}
    assert nodes.to_dict("list") == {"node": ["c1", "c2"], "ncpu": [4.0, 4.0], "os": ["Linux"] * 2}
    assert stats["processes"] == written["processes"] + 9 and stats["samples"] == 9
    assert store_module.read_segment_state(first) == {"node": "c1", "n": 3}

    with Store(path) as store:  # a writer folds them in
        pd.testing.assert_frame_equal(store.read_frame("process"), read)
        pd.testing.assert_frame_equal(store.read_frame("counter"), counters)
        assert store.stats() == stats
        assert store.compact() == 0  # once
        with store.transaction("look") as con:
            starts = con.execute("SELECT node, pid FROM process_starts ORDER BY node").fetchall()
    assert starts == [("c1", 42), ("c2", 42)]
    left = store_module.list_segments(path)  # each node's newest stays: its collector resumes
    assert [seg.name for seg in left] == sorted(
        [store_module.list_segments(path, node=node)[-1].name for node in ("c1", "c2")]
    )
    with Store(path, read_only=True) as reader:
        pd.testing.assert_frame_equal(reader.read_frame("process"), read)
        assert reader.stats() == stats


def test_segments_left_by_a_crash_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    folder = store_module.segment_dir(path)
    _commit(path, "c1", T_SEG)
    # a writer killed mid-segment: a hidden folder readers ignore
    (folder / ".tmp-seg-crashed").mkdir()
    (folder / ".tmp-seg-crashed" / "processes.parquet").write_bytes(b"PAR1 torn")
    # a fold killed after its transaction failed: nothing recorded, nothing removed
    monkeypatch.setattr(store_module, "_fold", _fold_then_fail)
    with pytest.raises(StoreError, match="nothing was stored"):
        Store(path)
    monkeypatch.undo()
    assert len(store_module.list_segments(path)) == 1
    with Store(path, read_only=True) as reader:
        assert len(reader.read_frame("process")) == 3
    # a fold killed after its commit, before removing the folders: recorded, so read once
    second = _commit(path, "c1", T_SEG + pd.Timedelta(minutes=1))
    with Store(path) as store:
        assert len(store.read_frame("process")) == 6
    kept = tmp_path / "kept"
    shutil.copytree(second.path, kept)  # as if its removal had not happened
    old = _commit(path, "c1", T_SEG - pd.Timedelta(minutes=1))  # older than the newest
    with Store(path) as store:
        assert len(store.read_frame("process")) == 9
    shutil.copytree(kept, old.path.with_name(".del-" + old.name))  # removal cut short
    with Store(path, read_only=True) as reader:
        assert len(reader.read_frame("process")) == 9
        assert len(reader.read_frame("counter")) == 9
    with Store(path) as store:  # the next writer tidies up
        assert len(store.read_frame("process")) == 9
    assert not list(folder.glob(".del-*"))
    assert (folder / ".tmp-seg-crashed").exists()  # not stale yet: it might be a live writer


def _fold_then_fail(con: duckdb.DuckDBPyConnection, segments: Any) -> None:
    REAL_FOLD(con, segments)
    raise duckdb.IOException("disk full")


REAL_FOLD = store_module._fold


def test_a_damaged_segment_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store(path).close()
    segment = _commit(path, "c1", T_SEG)
    (segment.path / "processes.parquet").write_bytes(b"not parquet")
    reader = Store(path, read_only=True)
    with pytest.raises(StoreError, match=r"could not read its process frame") as info:
        reader.read_frame("process")
    reader.close()
    assert "processes.parquet" in str(info.value) and "\n" not in str(info.value)
