"""Fleet runs: the per-node process checks mapped over partitions, locally or on Dask.

The unit of work is a :class:`Task`: a few partitions (Parquet files, or nodes of a store).
:func:`scan_task` is pure — it reads its partitions, normalises them and runs
:func:`perfsleuth.processes.scanner.scan_node` per node — so a local process pool and a Dask
cluster run the very same function on the very same tasks, and their results are identical.

Layouts read: a folder partitioned by node (``node=<name>/*.parquet``, as
``pyarrow.dataset.write_dataset(..., partitioning=["node"], partitioning_flavor="hive")``
writes it; the ``node`` column may be left out of the files), any folder of Parquet files
(each file a partition, several nodes per file allowed), one Parquet file, or a store.

Dask workers started by a nanny get ``MALLOC_TRIM_THRESHOLD_=65536`` by default
(``distributed.nanny.pre-spawn-environ``); with a scan's many short-lived arrays that nearly
doubles the CPU time per task. Clusters dedicated to fleet scans should drop that variable
(``benchmarks/fleet.py`` shows how).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pandas as pd

from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.findings import Finding, ordered
from perfsleuth.frames import normalise
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.processes.scanner import scan_node

__all__ = ["Task", "plan", "scan_fleet", "scan_task"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

Progress = Callable[[int, int], None]
"""Called with (tasks done, tasks in all) as tasks finish."""


@dataclass(frozen=True, slots=True)
class Task:
    """Partitions to scan together: Parquet files (with the node each is for, if known from a
    ``node=`` folder) or node names of a store."""

    files: tuple[tuple[str, str | None], ...] = ()
    store: str | None = None
    nodes: tuple[str, ...] = ()


def _node_of(path: Path, root: Path) -> str | None:
    for part in path.relative_to(root).parts[:-1]:
        if part.startswith("node="):
            return part[len("node=") :]
    return None


def _chunks(items: Sequence[_T], n_tasks: int) -> list[list[_T]]:
    size = max(1, -(-len(items) // max(1, n_tasks)))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def plan(source: Path, *, tasks: int = 64) -> list[Task]:
    """Split ``source`` (a Parquet folder or file, or a ``.duckdb`` store) into about ``tasks``
    tasks, keeping each node's partitions in one task."""
    if tasks < 1:
        raise ConfigError(f"tasks must be at least 1, got {tasks}")
    if not source.exists():
        raise SourceError(f"{source}: no such file or folder")
    if source.is_file() and source.suffix in (".duckdb", ".db"):
        from perfsleuth.store import Store

        with Store(source, read_only=True) as db:
            listed = set(db.read_frame("node")["node"])
        nodes = sorted(listed | _process_nodes(source))
        return [
            Task(store=str(source), nodes=tuple(str(n) for n in chunk))
            for chunk in _chunks(nodes, tasks)
        ]
    if source.is_file():
        return [Task(files=((str(source), None),))]
    files = sorted(p for p in source.rglob("*.parquet") if p.is_file())
    if not files:
        raise SourceError(f"{source}: no Parquet files in this folder")
    by_node: dict[str | None, list[tuple[str, str | None]]] = {}
    for path in files:
        node = _node_of(path, source)
        key = node if node is not None else str(path)
        by_node.setdefault(key, []).append((str(path), node))
    groups = [by_node[k] for k in sorted(by_node, key=str)]
    return [
        Task(files=tuple(f for group in chunk for f in group)) for chunk in _chunks(groups, tasks)
    ]


def _process_nodes(path: Path) -> set[str]:
    # the Store has no read-only query method; a second read-only connection is allowed
    import duckdb

    try:
        with duckdb.connect(str(path), read_only=True) as con:
            rows = con.execute("SELECT DISTINCT node FROM processes").fetchall()
    except duckdb.Error as exc:
        raise SourceError(f"{path}: cannot list the nodes of the store: {exc}") from exc
    return {str(row[0]) for row in rows}


def _read_task(task: Task) -> pd.DataFrame:
    if task.store is not None:
        from perfsleuth.processes.scanner import attach_nodes
        from perfsleuth.store import Store

        with Store(task.store, read_only=True) as db:
            frame = db.read_frame("process", node=list(task.nodes))
            table = db.read_frame("node", node=list(task.nodes))
        frame = frame.drop(columns=["io_bytes"]) if frame["io_bytes"].isna().all() else frame
        if len(table) and len(frame):
            frame = attach_nodes(frame, table, source=task.store)
        return frame
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for path, node in task.files:
        try:
            table = pq.read_table(path)
        except (OSError, pa.ArrowInvalid) as exc:
            raise SourceError(f"{path}: cannot read Parquet: {exc}") from exc
        if node is not None and "node" not in table.column_names:
            table = table.append_column("node", pa.array([node] * table.num_rows, pa.string()))
        tables.append(table)
    if not tables:
        return pd.DataFrame()
    combined = pa.concat_tables(tables, promote_options="default")
    return combined.to_pandas()


def scan_task(
    task: Task, rules: ProcessRules = DEFAULT_RULES, kinds: Sequence[str] | None = None
) -> list[Finding]:
    """Read one task's partitions and run the process checks on each of its nodes."""
    frame = _read_task(task)
    if len(frame) == 0:
        return []
    where = task.store or (task.files[0][0] if task.files else "<task>")
    frame = normalise(frame, "process", source=where)
    # pandas deep-copies attrs (the coverage report) on every operation: drop it, it is not used
    frame.attrs = {}
    # Categorical text: the per-node grouping by (pid, name) is several times faster on codes
    # than on Arrow strings; categories sort like the strings, so results do not change.
    for column in ("node", "name", "user"):
        frame[column] = frame[column].astype("category")
    findings: list[Finding] = []
    for _, rows in frame.groupby("node", sort=True, observed=True):
        findings.extend(scan_node(rows, rules, kinds))
    return findings


def _pool(workers: int | None) -> ProcessPoolExecutor:
    import multiprocessing as mp

    # fork: workers start in milliseconds and inherit the imports
    context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    return ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1, mp_context=context)


def scan_fleet(
    tasks: Iterable[Task],
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Sequence[str] | None = None,
    *,
    scheduler: str | None = None,
    client: object | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
) -> list[Finding]:
    """Run :func:`scan_task` on every task and return all findings, ordered.

    Parameters
    ----------
    scheduler
        Address of a Dask scheduler (``tcp://host:8786``); needs the ``fleet`` extra.
    client
        A ``distributed.Client`` to use instead of connecting to ``scheduler``.
    workers
        Processes of the local pool (default: one per CPU; 1 runs in this process).
    """
    todo = list(tasks)
    chosen = None if kinds is None else list(kinds)
    if scheduler is not None or client is not None:
        return _scan_dask(todo, rules, chosen, scheduler, client, progress)
    findings: list[Finding] = []
    if workers == 1 or len(todo) <= 1:
        for done, task in enumerate(todo, 1):
            findings.extend(scan_task(task, rules, chosen))
            if progress is not None:
                progress(done, len(todo))
        return ordered(findings)
    with _pool(workers) as pool:
        pending: set[Future[list[Finding]]] = {
            pool.submit(scan_task, task, rules, chosen) for task in todo
        }
        done = 0
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                findings.extend(future.result())
                done += 1
                if progress is not None:
                    progress(done, len(todo))
    return ordered(findings)


def _scan_dask(
    todo: list[Task],
    rules: ProcessRules,
    kinds: list[str] | None,
    scheduler: str | None,
    client: object | None,
    progress: Progress | None,
) -> list[Finding]:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:
        raise ConfigError(
            "a Dask scheduler needs the fleet extra: pip install 'perfsleuth[fleet]'"
        ) from exc
    own = client is None
    try:
        active = Client(scheduler, timeout="10s") if client is None else client  # type: ignore[no-untyped-call]
    except OSError as exc:
        raise SourceError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from exc
    if not isinstance(active, Client):
        raise DataError(f"client must be a distributed.Client, got {type(active).__name__}")
    try:
        futures = active.map(scan_task, todo, rules=rules, kinds=kinds, pure=False)
        findings: list[Finding] = []
        for done, future in enumerate(as_completed(futures), 1):  # type: ignore[no-untyped-call]
            findings.extend(future.result())
            if progress is not None:
                progress(done, len(todo))
        return ordered(findings)
    finally:
        if own:
            active.close()  # type: ignore[no-untyped-call]
