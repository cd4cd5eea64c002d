"""Fleet runs: the per-node process checks mapped over partitions, locally or on Dask.

The unit of work is a :class:`Task`: a few partitions (Parquet files, or nodes of a store).
:func:`scan_task` is pure — it reads its partitions straight into numpy columns, checks them
as the process contract does, and runs :func:`perfsleuth.processes.scanner.scan_columns` on
all of its nodes at once (one pass over the columns, no group per node) — so a local process
pool and a Dask cluster run the very same function on the very same tasks, and their results
are identical. A task whose data the quick checks doubt (a missing value, a duplicate, text
where numbers belong) goes through :func:`perfsleuth.frames.normalise`, which names the file,
row and column. Rows may come in any order.

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
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.findings import Finding, ordered
from perfsleuth.frames import MAX_VALUE, TIME_BOUNDS_NS, normalise
from perfsleuth.processes.periods import Columns, RepeatedRows
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.processes.scanner import ColumnsScan, scan_columns, skip_nodes

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Coverage", "Task", "plan", "scan_fleet", "scan_task"]

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
    from perfsleuth.store import Store

    # through the store: it also holds what a running collector has not folded in yet
    with Store(path, read_only=True) as db:
        return set(db.process_nodes())


def _where(task: Task) -> str:
    return task.store or (task.files[0][0] if task.files else "<task>")


def _read_task(task: Task) -> Columns:
    """A task's rows as columns: straight from Arrow when plainly valid, else through the
    contract's checks (which name the file, row and column of what is wrong)."""
    if task.store is not None:
        return Columns.of(normalise(_read_store(task), "process", source=task.store))
    table = _read_table(task)
    quick = _quick_columns(table)
    if quick is not None:
        return quick
    return Columns.of(_checked(table.to_pandas(), task))


def _checked(frame: pd.DataFrame, task: Task) -> pd.DataFrame:
    # the periods do not depend on the order of the rows: partitions need not be sorted
    return normalise(frame, "process", source=_where(task), disorder="sort")


def _frame_of(task: Task) -> pd.DataFrame:
    return _read_store(task) if task.store is not None else _read_table(task).to_pandas()


def _read_table(task: Task) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    text: list[str] | None = None
    for path, node in task.files:
        try:
            if text is None:  # the task's files share their columns, as a dataset's do
                text = [c for c in _TEXT if c in pq.read_schema(path).names]
            try:
                # text stays dictionary-encoded (decoding every name is most of a read); one
                # worker per CPU already: no reader threads, no read-ahead
                file = pq.ParquetFile(path, read_dictionary=text, pre_buffer=False)
            except KeyError:  # this file lacks one of them
                file = pq.ParquetFile(path, pre_buffer=False)
            table = file.read(use_threads=False)
        except (OSError, pa.ArrowInvalid) as exc:
            raise SourceError(f"{path}: cannot read Parquet: {exc}") from exc
        if node is not None and "node" not in table.column_names:
            codes = pa.array(np.zeros(table.num_rows, np.int32))
            table = table.append_column(
                "node", pa.DictionaryArray.from_arrays(codes, pa.array([node]))
            )
        tables.append(table)
    return pa.concat_tables(tables, promote_options="permissive").unify_dictionaries()


def _read_store(task: Task) -> pd.DataFrame:
    from perfsleuth.processes.scanner import attach_nodes
    from perfsleuth.store import Store

    store = str(task.store)
    with Store(store, read_only=True) as db:
        frame = db.read_frame("process", node=list(task.nodes))
        table = db.read_frame("node", node=list(task.nodes))
    frame = frame.drop(columns=["io_bytes"]) if frame["io_bytes"].isna().all() else frame
    if len(table) and len(frame):
        frame = attach_nodes(frame, table, source=store)
    return frame


_NEEDED = ("time", "node", "pid", "name", "user", "cpu", "rss_bytes")
_TEXT = ("node", "name", "user", "os")
_NUMBERS = ("cpu", "rss_bytes", "ncpu", "machine_cpu", "volume")
_SPARSE = ("file_bytes", "start_time", "cpu_wait")  # may be unknown (NaN) for some rows


def _quick_columns(table: pa.Table) -> Columns | None:
    """The columns of a process table when they are plainly valid (typed as the contract
    says, no missing or negative value), else None. Repeated rows are found when the periods
    are built (:class:`~perfsleuth.processes.periods.RepeatedRows`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = set(table.column_names)
    if not set(_NEEDED) <= names or table.num_rows == 0:
        return None
    time = table.column("time")
    if not pa.types.is_timestamp(time.type) or time.null_count:
        return None
    try:
        nanos = pc.cast(time, pa.timestamp("ns", time.type.tz)).to_numpy().view(np.int64)
    except pa.ArrowInvalid:  # a time beyond nanoseconds' 1677..2262
        return None
    if len(nanos) and (nanos.min() < TIME_BOUNDS_NS[0] or nanos.max() >= TIME_BOUNDS_NS[1]):
        return None  # the contract's checks name the row and say why
    pid = table.column("pid")
    if not pa.types.is_integer(pid.type) or pid.null_count:
        return None
    numbers: dict[str, NDArray[np.float64]] = {}
    for column in (*_NUMBERS, *_SPARSE):
        if column not in names:
            continue
        values = table.column(column)
        if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
            return None
        array = values.to_numpy().astype(np.float64, copy=False)
        if column in _NUMBERS and not np.isfinite(array).all():
            return None
        if (np.abs(array) > MAX_VALUE).any():  # as the contract refuses them (NaN passes)
            return None
        if (array < 0).any():  # NaN compares False: a sparse column's unknowns pass
            return None
        numbers[column] = array
    text: dict[str, tuple[NDArray[np.int64], list[str]]] = {}
    for column in _TEXT:
        if column not in names:
            continue
        values = table.column(column)
        if values.null_count:
            return None
        if not pa.types.is_dictionary(values.type):
            values = pc.dictionary_encode(values)
        chunks = values.chunks
        # one dictionary for every chunk (the table's dictionaries are unified)
        dictionary = [str(v) for v in chunks[0].dictionary.to_pylist()] if chunks else []
        if "" in dictionary or any(
            not c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:]
        ):
            return None
        indices = np.concatenate(
            [c.indices.to_numpy(zero_copy_only=False).astype(np.int64) for c in chunks]
        )
        order = np.argsort(np.array(dictionary, dtype=object))  # codes follow sorted values
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        text[column] = (rank[indices], [dictionary[i] for i in order])
    cols = Columns(
        node=text["node"][0],
        nodes=text["node"][1],
        time=nanos,
        pid=pid.to_numpy().astype(np.int64, copy=False),
        name=text["name"][0],
        names=text["name"][1],
        user=text["user"][0],
        users=text["user"][1],
        cpu=numbers["cpu"],
        rss_bytes=numbers["rss_bytes"],
        optional={k: v for k, v in numbers.items() if k not in ("cpu", "rss_bytes")},
        os=text["os"][0] if "os" in text else None,
        os_names=text["os"][1] if "os" in text else [],
    )
    return cols


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the checks could see across the nodes of some tasks (add them with ``+``).

    ``blind[check]`` counts the nodes that had fewer periods than the check needs, and
    ``examples[check]`` names a few of them with what they had.
    """

    nodes: int = 0
    covered: int = 0
    saturated: int = 0
    blind: tuple[tuple[str, int], ...] = ()
    examples: tuple[tuple[str, str], ...] = ()

    def __add__(self, other: Coverage) -> Coverage:
        blind = dict(self.blind)
        for check, count in other.blind:
            blind[check] = blind.get(check, 0) + count
        return Coverage(
            self.nodes + other.nodes,
            self.covered + other.covered,
            self.saturated + other.saturated,
            tuple(sorted(blind.items())),
            (self.examples + other.examples)[:50],
        )

    def lines(self) -> list[str]:
        """For people: the checks that lacked periods somewhere, or that none did."""
        share = self.saturated / self.covered if self.covered else 0.0
        if not self.blind:
            return [
                f"every check had the periods it needs on all {self.nodes} node(s) "
                f"({share:.0%} of the periods saturated)"
            ]
        out = []
        for check, count in self.blind:
            shown = [text for c, text in self.examples if c == check][:5]
            out.append(
                f"{check} lacked periods on {count} of {self.nodes} node(s): " + "; ".join(shown)
            )
        return out


def _coverage(part: ColumnsScan) -> Coverage:
    data = part.periods
    blind: dict[str, int] = {}
    examples: list[tuple[str, str]] = []
    for n, items in enumerate(part.coverage):
        for item in items:
            if not item.possible:
                blind[item.check] = blind.get(item.check, 0) + 1
                if sum(1 for c, _ in examples if c == item.check) < 5:
                    text = f"{data.nodes[n]} has {item.available} {item.unit}, needs {item.needed}"
                    examples.append((item.check, text + (f" ({item.why})" if item.why else "")))
    return Coverage(
        nodes=len(data.nodes),
        covered=int(data.covered.sum()),
        saturated=int((data.saturated & data.covered).sum()),
        blind=tuple(sorted(blind.items())),
        examples=tuple(examples),
    )


def scan_task(
    task: Task, rules: ProcessRules = DEFAULT_RULES, kinds: Sequence[str] | None = None
) -> list[Finding]:
    """Read one task's partitions and run the process checks on all of its nodes at once."""
    return _scan_task(task, rules, kinds)[0]


def _scan_task(
    task: Task, rules: ProcessRules, kinds: Sequence[str] | None
) -> tuple[list[Finding], Coverage]:
    """:func:`scan_task`, and what the checks could see."""
    cols, _ = skip_nodes(_read_task(task), rules)
    if not len(cols):
        return [], Coverage()
    try:
        parts = list(scan_columns(cols, rules, kinds))
    except RepeatedRows:  # the contract drops identical repeats and names conflicting ones
        frame = _checked(_frame_of(task), task)
        cols, _ = skip_nodes(Columns.of(frame), rules)
        parts = list(scan_columns(cols, rules, kinds))
    seen = Coverage()
    for part in parts:
        seen = seen + _coverage(part)
    return [f for part in parts for f in part.findings], seen


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
    seen: Callable[[Coverage], None] | None = None,
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
    progress
        Called with (tasks done, tasks in all) as tasks finish.
    seen
        Called with what the checks could see on each task's nodes, as tasks finish.
    """
    todo = list(tasks)
    chosen = None if kinds is None else list(kinds)
    if scheduler is not None or client is not None:
        return _scan_dask(todo, rules, chosen, scheduler, client, progress, seen)
    findings: list[Finding] = []
    if workers == 1 or len(todo) <= 1:
        for done, task in enumerate(todo, 1):
            found, covered = _scan_task(task, rules, chosen)
            findings.extend(found)
            if seen is not None:
                seen(covered)
            if progress is not None:
                progress(done, len(todo))
        return ordered(findings)
    with _pool(workers) as pool:
        pending: set[Future[tuple[list[Finding], Coverage]]] = {
            pool.submit(_scan_task, task, rules, chosen) for task in todo
        }
        done = 0
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                found, covered = future.result()
                findings.extend(found)
                if seen is not None:
                    seen(covered)
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
    seen: Callable[[Coverage], None] | None,
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
        futures = active.map(_scan_task, todo, rules=rules, kinds=kinds, pure=False)
        findings: list[Finding] = []
        for done, future in enumerate(as_completed(futures), 1):  # type: ignore[no-untyped-call]
            found, covered = future.result()
            findings.extend(found)
            if seen is not None:
                seen(covered)
            if progress is not None:
                progress(done, len(todo))
        return ordered(findings)
    finally:
        if own:
            active.close()  # type: ignore[no-untyped-call]
