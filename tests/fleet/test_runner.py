"""Fleet runs: the same findings in process, from a local pool and from a Dask LocalCluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import tomli_w

from perfsleuth.datasets.fleet import FleetRun, simulate_fleet
from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.findings import Finding
from perfsleuth.fleet import Coverage, plan, scan_fleet, scan_task
from perfsleuth.processes.scanner import scan
from perfsleuth.store import Store
from tests.test_cli import run


@pytest.fixture(scope="module")
def fleet() -> FleetRun:
    return simulate_fleet(16, days=2, interval="30m", seed=11)


@pytest.fixture(scope="module")
def expected(fleet: FleetRun) -> list[Finding]:
    findings = scan(fleet.frame, fleet.rules)
    assert len({f.entity.split("/")[0] for f in findings}) >= 4  # something to compare
    return findings


@pytest.fixture(scope="module")
def by_node(fleet: FleetRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hive-partitioned Parquet, node=<name>/..., without a node column in the files."""
    root = tmp_path_factory.mktemp("by-node")
    table = pa.Table.from_pandas(fleet.frame, preserve_index=False)
    ds.write_dataset(
        table,
        root,
        format="parquet",
        partitioning=ds.partitioning(pa.schema([("node", pa.string())]), flavor="hive"),
    )
    return root


@pytest.fixture(scope="module")
def dask_client() -> Iterator[object]:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=40,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def test_plan_keeps_each_node_in_one_task(by_node: Path, fleet: FleetRun) -> None:
    tasks = plan(by_node, tasks=5)
    assert 1 < len(tasks) <= 5
    nodes = [node for task in tasks for _, node in task.files]
    assert sorted(set(nodes)) == sorted(fleet.nodes["node"])
    seen: set[str | None] = set()
    for task in tasks:
        mine = {node for _, node in task.files}
        assert not mine & seen
        seen |= mine


def test_in_process_equals_the_scanner(
    by_node: Path, fleet: FleetRun, expected: list[Finding]
) -> None:
    assert scan_fleet(plan(by_node, tasks=4), fleet.rules, workers=1) == expected


def test_local_pool_equals_the_scanner(
    by_node: Path, fleet: FleetRun, expected: list[Finding]
) -> None:
    seen: list[tuple[int, int]] = []
    found = scan_fleet(
        plan(by_node, tasks=6),
        fleet.rules,
        workers=2,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert found == expected
    assert seen[-1] == (len(seen), len(seen)) and [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.slow
def test_dask_local_cluster_equals_the_local_pool(
    by_node: Path, fleet: FleetRun, expected: list[Finding], dask_client: object
) -> None:
    seen: list[int] = []
    found = scan_fleet(
        plan(by_node, tasks=6),
        fleet.rules,
        client=dask_client,
        progress=lambda done, total: seen.append(done),
    )
    assert found == expected
    assert seen == list(range(1, len(seen) + 1))
    kinds = ["cpu_loop", "hum"]
    only = scan_fleet(plan(by_node, tasks=3), fleet.rules, kinds, client=dask_client)
    assert only == [f for f in expected if f.kind.value in kinds]


@pytest.mark.slow
def test_dask_by_scheduler_address(by_node: Path, fleet: FleetRun, dask_client: object) -> None:
    address = dask_client.scheduler.address  # type: ignore[attr-defined]
    assert address.startswith("tcp://127.0.0.1:")
    found = scan_fleet(plan(by_node, tasks=2), fleet.rules, ["cpu_loop"], scheduler=address)
    assert found == scan_fleet(plan(by_node, tasks=2), fleet.rules, ["cpu_loop"], workers=1)


def test_flat_files_with_several_nodes_each(
    fleet: FleetRun, expected: list[Finding], tmp_path: Path
) -> None:
    names = sorted(fleet.nodes["node"])
    for i in range(0, len(names), 5):
        part = fleet.frame[fleet.frame["node"].isin(names[i : i + 5])]
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), tmp_path / f"{i}.parquet")
    assert scan_fleet(plan(tmp_path, tasks=8), fleet.rules, workers=2) == expected
    single = tmp_path / "0.parquet"
    assert scan_fleet(plan(single), fleet.rules) == [
        f for f in expected if f.entity.split("/")[0] in names[:5]
    ]


def test_store_source(fleet: FleetRun, tmp_path: Path) -> None:
    path = tmp_path / "fleet.duckdb"
    frame = fleet.frame.drop(columns=["ncpu", "os"])
    with Store(path) as db:
        db.write_frame(frame, "process")
        db.write_frame(fleet.nodes[["node", "ncpu", "os"]], "node")
    tasks = plan(path, tasks=3)
    assert sorted(n for t in tasks for n in t.nodes) == sorted(fleet.nodes["node"])
    found = scan_fleet(tasks, fleet.rules, workers=2)
    assert found == scan(fleet.frame, fleet.rules)


def test_bad_sources_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        plan(tmp_path / "absent")
    with pytest.raises(SourceError, match="no Parquet files"):
        plan(tmp_path)
    with pytest.raises(ConfigError, match="tasks"):
        plan(tmp_path, tasks=0)
    broken = tmp_path / "node=web-1" / "part.parquet"
    broken.parent.mkdir()
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(SourceError, match=r"web-1.*part\.parquet: cannot read Parquet"):
        scan_task(plan(tmp_path)[0])


def test_bad_rows_name_file_and_column(fleet: FleetRun, tmp_path: Path) -> None:
    frame = fleet.frame[fleet.frame["node"] == "node0000"].copy()
    frame.loc[frame.index[3], "cpu"] = -1.0
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    with pytest.raises(DataError, match=r"bad\.parquet.*'cpu'.*negative"):
        scan_fleet(plan(path), fleet.rules)
    # what the quick read does not vouch for goes through the contract's checks
    frame.loc[frame.index[3], "cpu"] = float("nan")
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    with pytest.raises(DataError, match=r"bad\.parquet.*'cpu'.*missing"):
        scan_fleet(plan(path), fleet.rules)
    frame = frame.assign(pid=frame["pid"].astype(str))
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    with pytest.raises(DataError, match=r"bad\.parquet"):
        scan_fleet(plan(path), fleet.rules)


def test_repeated_rows_are_dropped_or_named(fleet: FleetRun, tmp_path: Path) -> None:
    frame = fleet.frame[fleet.frame["node"] == "node0002"]
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.Table.from_pandas(pd.concat([frame, frame.iloc[:5]])), path)
    assert scan_fleet(plan(path), fleet.rules) == scan(frame, fleet.rules)
    clash = frame.iloc[:1].assign(cpu=frame["cpu"].iat[0] + 0.5)
    pq.write_table(pa.Table.from_pandas(pd.concat([frame, clash])), path)
    with pytest.raises(DataError, match=r"twice\.parquet.*duplicate"):
        scan_fleet(plan(path), fleet.rules)


def test_coverage_of_a_fleet(by_node: Path, fleet: FleetRun) -> None:
    seen: list[Coverage] = []
    scan_fleet(plan(by_node, tasks=3), fleet.rules, workers=2, seen=seen.append)
    total = sum(seen, Coverage())
    assert len(seen) == 3 and total.nodes == len(fleet.nodes)
    assert total.covered == 16 * 48  # two days of one-hour periods on every node
    # saturated constrained-loop nodes without a run-queue wait: the loop rules cannot judge
    lines = total.lines()
    assert any(line.startswith("cpu_loop lacked periods on ") for line in lines)
    assert all("no run-queue wait" in line for line in lines if line.startswith("cpu_loop"))


def test_cli_scan(
    by_node: Path,
    fleet: FleetRun,
    expected: list[Finding],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text(tomli_w.dumps(fleet.rules.model_dump(mode="json", exclude_none=True)))
    code, out, err = run(
        capsys, "--format", "jsonl", "fleet", "scan", str(by_node), "--rules", str(rules),
        "--tasks", "4", "--workers", "2",
    )  # fmt: skip
    assert code in (0, 1)
    found = [json.loads(line) for line in out.splitlines()]
    assert [(f["kind"], f["entity"]) for f in found] == [(f.kind.value, f.entity) for f in expected]
    assert "scanning" in err and "4/4" in err  # the progress bar is on stderr
    assert "coverage: " in err  # and what the checks could see
    code, out, err = run(capsys, "fleet", "scan", str(by_node / "nope"), "--no-progress")
    assert code == 2 and "no such file" in err and not out


@pytest.mark.slow
def test_unreachable_scheduler_is_a_source_error(by_node: Path) -> None:
    pytest.importorskip("distributed")
    with pytest.raises(
        SourceError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"
    ):
        scan_fleet(plan(by_node, tasks=2), scheduler="tcp://127.0.0.1:9")
