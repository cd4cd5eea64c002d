"""The embedded store: one DuckDB file holding samples, frames, findings, runs and node history.

Nothing to start or configure: ``Store(path)`` opens (or creates) the file. Every write is one
transaction, done in bulk (the batch is registered with DuckDB and copied by ``INSERT ...
SELECT``), so a failure part-way leaves the store as it was.

Idempotency rule
    Rows are keyed (samples: frame, entity, name, time; processes: node, pid, name, time;
    workload: source, time, column; nodes: node). Writing a key that is already stored
    **replaces** its row: the newest write wins. A collector that restarts and re-sends a batch
    therefore changes nothing, and a corrected value overwrites the old one. Within one batch
    the last row with a key wins. Times are stored with microsecond precision (DuckDB's
    ``TIMESTAMPTZ``), so times that differ by less than a microsecond are the same key.

The big tables (samples, processes, workload) have no index: uniqueness is kept by the write
path (delete the batch's keys, then insert them, in one transaction, serialised per file within
the process; DuckDB lets only one process write a file). A DuckDB primary key on them made
writes ~4x slower and files ~8x larger (1.2 GB for 10 M samples) for no gain in reads.

Findings are keyed by :attr:`Finding.id`; writing one again updates ``last_seen``, ``run_id``,
severity, explanation and evidence but keeps ``first_seen``, so later steps can tell a new
pathology from one that persists.

Segments: writing beside readers
    DuckDB lets one process write a file, and no other process open it meanwhile. So the
    collector does not hold the store: it commits each batch as a **segment**, a folder of
    Parquet files (and its restart state) in ``<store>.segments/``, written under a hidden name,
    flushed to disk and renamed into place — a segment is there whole or not at all. Every read
    of the store sees its tables **and** the segments not folded in yet. Whoever opens the store
    for writing (``analyze``, ``watch``, the collector when the store is free) **compacts**:
    inserts the segments' rows whose keys are not stored yet and records the segments' names,
    in one transaction, then deletes their folders. Readers and compaction never overlap (a
    reader holds DuckDB's shared lock, compaction its exclusive one), so a reader never sees a
    segment twice or misses one; a crash at any point leaves each segment either pending or
    recorded (see ``docs/operations.md``).

Runs
    Each run records the process that began it; a run still ``running`` when another process
    opens the store for writing was killed (that process no longer holds the store) and is
    marked ``interrupted``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time as _time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

import duckdb
import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, StoreError, located
from perfsleuth.findings import Evidence, Finding, Kind, Severity, ordered

if TYPE_CHECKING:
    from perfsleuth.incidents import Incident

__all__ = [
    "DEFAULT_STORE_PATH",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "Segment",
    "Store",
    "StoreInUseError",
    "append_segment",
    "check_store_file",
    "list_segments",
    "read_segment_state",
    "segment_dir",
]

logger = logging.getLogger(__name__)

DEFAULT_STORE_PATH: Final = Path("perfsleuth.duckdb")

SCHEMA_VERSION: Final = 4
"""Version of the schema this code writes; a store with a higher version is refused."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE samples (
            frame VARCHAR NOT NULL CHECK (frame IN ('metric', 'counter')),
            entity VARCHAR NOT NULL,
            name VARCHAR NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            value DOUBLE NOT NULL,
            unit VARCHAR NOT NULL DEFAULT ''
        )""",
        """CREATE TABLE processes (
            node VARCHAR NOT NULL,
            pid BIGINT NOT NULL,
            name VARCHAR NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            "user" VARCHAR NOT NULL,
            cpu DOUBLE NOT NULL,
            rss_bytes DOUBLE NOT NULL,
            io_bytes DOUBLE
        )""",
        """CREATE TABLE nodes (
            node VARCHAR PRIMARY KEY,
            ncpu DOUBLE NOT NULL,
            os VARCHAR NOT NULL
        )""",
        """CREATE TABLE workload (
            source VARCHAR NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            window_s DOUBLE NOT NULL,
            "column" VARCHAR NOT NULL,
            value DOUBLE NOT NULL
        )""",
        # The order workload columns were first written in, so reads give back the same frame.
        """CREATE TABLE workload_columns (
            source VARCHAR NOT NULL,
            "column" VARCHAR NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (source, "column")
        )""",
        """CREATE TABLE findings (
            id VARCHAR PRIMARY KEY,
            run_id VARCHAR,
            kind VARCHAR NOT NULL,
            entity VARCHAR NOT NULL,
            metric VARCHAR NOT NULL,
            start TIMESTAMPTZ NOT NULL,
            "end" TIMESTAMPTZ NOT NULL,
            severity INTEGER NOT NULL,
            explanation VARCHAR NOT NULL,
            evidence VARCHAR NOT NULL,
            detector VARCHAR NOT NULL,
            first_seen TIMESTAMPTZ NOT NULL,
            last_seen TIMESTAMPTZ NOT NULL
        )""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY,
            started TIMESTAMPTZ NOT NULL,
            finished TIMESTAMPTZ,
            command VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            n_findings INTEGER
        )""",
        "CREATE SEQUENCE node_history_seq",
        """CREATE TABLE node_history (
            seq BIGINT NOT NULL DEFAULT nextval('node_history_seq'),
            node VARCHAR NOT NULL,
            time TIMESTAMPTZ NOT NULL,
            kind VARCHAR NOT NULL,
            "text" VARCHAR NOT NULL
        )""",
    ),
    # The process frame's optional per-row node context (frames.PROCESS), kept as given.
    2: tuple(
        f"ALTER TABLE processes ADD COLUMN {column} {kind}"
        for column, kind in (
            ("ncpu", "DOUBLE"),
            ("machine_cpu", "DOUBLE"),
            ("volume", "DOUBLE"),
            ("file_bytes", "DOUBLE"),
            ("os", "VARCHAR"),
        )
    ),
    # Runs know their process (to tell a killed run); the collector's segments and the process
    # lives it saw (before: a collector table) are folded into the store by whoever writes it.
    3: (
        "ALTER TABLE runs ADD COLUMN pid BIGINT",
        # what the collector adds to a process row: its start time (Unix seconds; with the pid,
        # the process's identity) and the cores it waited for in a run queue
        "ALTER TABLE processes ADD COLUMN IF NOT EXISTS start_time DOUBLE",
        "ALTER TABLE processes ADD COLUMN IF NOT EXISTS cpu_wait DOUBLE",
        """CREATE TABLE IF NOT EXISTS process_starts (
            node VARCHAR NOT NULL,
            pid BIGINT NOT NULL,
            start_time TIMESTAMPTZ NOT NULL,
            name VARCHAR NOT NULL,
            "user" VARCHAR NOT NULL,
            first_seen TIMESTAMPTZ NOT NULL,
            last_seen TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (node, pid, start_time)
        )""",
        """CREATE TABLE segments (
            name VARCHAR PRIMARY KEY,
            compacted TIMESTAMPTZ NOT NULL
        )""",
    ),
    # A run's incidents (perfsleuth.incidents): the story and chain as told, finding ids as JSON.
    4: (
        """CREATE TABLE incidents (
            run_id VARCHAR NOT NULL,
            id VARCHAR NOT NULL,
            start TIMESTAMPTZ NOT NULL,
            "end" TIMESTAMPTZ NOT NULL,
            severity INTEGER NOT NULL,
            entities VARCHAR NOT NULL,
            title VARCHAR NOT NULL,
            story VARCHAR NOT NULL,
            chain VARCHAR NOT NULL,
            findings VARCHAR NOT NULL,
            PRIMARY KEY (run_id, id)
        )""",
    ),
}
"""Schema changes by version: the SQL that takes a store from ``version - 1`` to ``version``.

To change the schema, add ``SCHEMA_VERSION + 1: (...)`` here and bump :data:`SCHEMA_VERSION`;
opening an older store applies the missing steps in one transaction.
"""

TABLES: Final = (
    "samples",
    "processes",
    "nodes",
    "workload",
    "findings",
    "incidents",
    "runs",
    "node_history",
)
"""Tables counted by :meth:`Store.stats`."""

_CONTRACTS: Final = ("metric", "counter", "process", "workload", "node")
_FILTERS: Final[dict[str, frozenset[str]]] = {
    "metric": frozenset({"entity", "name", "start", "end"}),
    "counter": frozenset({"entity", "name", "start", "end"}),
    "process": frozenset({"node", "name", "start", "end"}),
    "workload": frozenset({"source", "start", "end"}),
    "node": frozenset({"node"}),
}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_BATCH: Final = "_perfsleuth_batch"
_PID = re.compile(r"PID (\d+)")

# DuckDB admits one writing process per file, but several connections inside a process share
# one database; writes are serialised per file here so that delete-then-insert keeps keys unique.
_LOCKS: dict[str, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


# DuckDB shares one database instance per file within a process; a connection opened while
# another thread is still creating that instance can miss its pandas scan function
# ("Table Function with name pandas_scan does not exist"), so connections open one at a time.
_CONNECT_LOCK = threading.Lock()


def _write_lock(key: str) -> threading.RLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.RLock())


# Stores open in this process, per file: only the first opening replays the write-ahead log.
_OPEN: dict[str, int] = {}

# A run begun before this module was imported was begun by another process, whatever its pid.
_LOADED: Final = datetime.now(UTC)

DEFAULT_WAIT: Final = 10.0
"""Seconds a store waits for another process to let go of the file (e.g. a short compaction)."""


class StoreInUseError(StoreError):
    """Another process holds the store file (DuckDB admits one writer, or several readers)."""


class Store:
    """An embedded DuckDB store of frames, findings, runs and node history.

    Parameters
    ----------
    path
        Database file; created with its parent folders (and the schema) if new.
        ``":memory:"`` gives a throw-away store.
    read_only
        Open without taking the write lock, so several processes can read at once; writes
        raise :class:`StoreError`.
    wait
        Seconds to keep retrying while another process holds the file (the collector folds its
        segments in for a moment now and then); 0 fails at once.

    Raises
    ------
    StoreInUseError
        Another process still holds the file after ``wait`` seconds.
    StoreError
        The file is not a DuckDB database (or not a perfsleuth store), is truncated or corrupt,
        has a write-ahead log that cannot be replayed, or was written by a newer perfsleuth.
        Nothing in the file is changed then.

    Notes
    -----
    A store is not thread-safe: use one per thread (they may share a file). Opening a store
    for writing folds in the collector's pending segments (:meth:`compact`) and marks runs
    left ``running`` by a killed process as ``interrupted``.
    """

    def __init__(
        self,
        path: str | PathLike[str] = DEFAULT_STORE_PATH,
        *,
        read_only: bool = False,
        wait: float = DEFAULT_WAIT,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.memory = str(path) == ":memory:"
        self._con: duckdb.DuckDBPyConnection | None = None
        self._key = ":memory:" if self.memory else str(self.path.resolve())
        if not self.memory:
            if self.path.is_dir():
                raise StoreError(f"{self.path}: is a folder, not a store file; pass a file path")
            if read_only and not self.path.exists():
                raise StoreError(f"{self.path}: no store here; check the path or write to it first")
            check_store_file(self.path)
            if not read_only:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(
                        f"{self.path}: cannot create its folder ({exc.strerror}); "
                        "choose a writable path"
                    ) from exc
        self._lock = threading.RLock() if self.memory else _write_lock(self._key)
        con = self._connect(wait)
        # measured once the file is ours: before, a writer closing meanwhile (the collector
        # folding in) would checkpoint and remove a log we would then think skipped
        wal = _wal_bytes(self.path) if not self.memory else 0
        with _LOCKS_GUARD:
            first = _OPEN.get(self._key, 0) == 0
            _OPEN[self._key] = _OPEN.get(self._key, 0) + 1
        self._con = con
        try:
            con.execute("SET TimeZone = 'UTC'")
            if wal and first:
                self._check_replay(wal)
            self._prepare_schema()
            if not read_only and not self.memory:
                self._mark_interrupted()
                self.compact()
        except BaseException:
            self.close()
            raise

    def _connect(self, wait: float) -> duckdb.DuckDBPyConnection:
        """Connect, retrying while another process holds the file, for up to ``wait`` seconds."""
        deadline = _time.monotonic() + max(wait, 0.0)
        pause = 0.05
        while True:
            try:
                with _CONNECT_LOCK:
                    return duckdb.connect(
                        ":memory:" if self.memory else str(self.path), read_only=self.read_only
                    )
            except duckdb.Error as exc:
                left = deadline - _time.monotonic()
                if not _is_lock(_first_line(exc)) or left <= 0:
                    raise _open_error(self.path, exc) from exc
                logger.debug("%s: held by another process; retrying", self.path)
                _time.sleep(min(pause, left))
                pause = min(pause * 2, 0.5)

    def _check_replay(self, wal: int) -> None:
        """Refuse a store whose write-ahead log DuckDB skipped instead of replaying.

        DuckDB reports an empty log in two cases. A log torn during its first commit (a writer
        killed mid-commit) held nothing committed: the commit never returned, so opening is
        safe. A log whose header is damaged is ignored silently and would be dropped at the
        next write, with the committed rows in it: that store is refused.
        """
        row = _first_row(self._connection(), "SELECT wal_size FROM pragma_database_size()")
        skipped = row is not None and str(row[0]).strip() in ("0 bytes", "0")
        if skipped and _wal_starts_as_duckdb_writes_it(self.path):
            logger.info(
                "%s: its write-ahead log holds no complete commit (torn by a kill)", self.path
            )
        elif skipped:
            raise StoreError(
                f"{self.path}: its write-ahead log {self.path.name}.wal ({wal:,} bytes of "
                "committed changes) is damaged and cannot be replayed; the store was not opened, "
                "so nothing in it is lost: keep both files and restore them from a backup, or "
                "move the .wal aside to open the store without those changes"
            )

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store; closing twice is harmless."""
        if self._con is not None:
            con, self._con = self._con, None
            with _LOCKS_GUARD:
                left = _OPEN.get(self._key, 1) - 1
                if left:
                    _OPEN[self._key] = left
                else:
                    _OPEN.pop(self._key, None)
            con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._con is None else ("read-only" if self.read_only else "open")
        return f"Store({str(self.path)!r}, {state})"

    @property
    def schema_version(self) -> int:
        """Schema version recorded in the store."""
        with self._reading("its schema version") as con:
            version = self._version(con)
        return 0 if version is None else version

    # -- frames ---------------------------------------------------------------------------------

    def write_frame(self, frame: pd.DataFrame, contract: str, *, source: str = "") -> int:
        """Store a frame; rows whose key is already stored are replaced.

        Parameters
        ----------
        frame
            A frame honouring ``contract``, as :func:`perfsleuth.frames.normalise` returns it
            (``time`` timezone-aware; names as text; finite numbers). Extra columns are ignored,
            except in workload frames, where every column is kept.
        contract
            ``"metric"``, ``"counter"``, ``"process"``, ``"workload"`` or ``"node"``.
        source
            The workload a workload frame belongs to (part of its key). Other contracts use it
            only to name the frame in error messages.

        Returns
        -------
        int
            Rows stored (for workload frames: windows), after collapsing repeated keys.

        Raises
        ------
        DataError
            A column is missing or holds the wrong kind of values; nothing is written.
        StoreError
            The database refused the write; nothing is written.
        """
        spec = _contract(contract)
        where = source or "<frame>"
        if not isinstance(frame, pd.DataFrame):
            raise DataError(f"{where}: expected a pandas DataFrame, got {type(frame).__name__}")
        batch = _PREPARE[spec](frame, where)
        if batch is None:
            return 0
        started = _time.perf_counter()
        with self._transaction(f"write {spec} frame") as con:
            written = _WRITERS[spec](con, batch, source)
        logger.debug("stored %d %s rows in %.3f s", written, spec, _time.perf_counter() - started)
        return written

    def read_frame(
        self,
        contract: str,
        *,
        entity: str | Sequence[str] | None = None,
        name: str | Sequence[str] | None = None,
        node: str | Sequence[str] | None = None,
        start: datetime | pd.Timestamp | str | None = None,
        end: datetime | pd.Timestamp | str | None = None,
        source: str | None = None,
    ) -> pd.DataFrame:
        """Read stored rows back as a frame of ``contract``.

        Parameters
        ----------
        contract
            ``"metric"``, ``"counter"``, ``"process"``, ``"workload"`` or ``"node"``.
        entity, name, node
            Keep only these entities (metric, counter), metric/counter/process names, or nodes
            (process, node); a string or a sequence of strings.
        start, end
            Keep times with ``start <= time < end`` (timezone-aware).
        source
            The workload to read. If omitted, the only workload stored is read.

        Returns
        -------
        pandas.DataFrame
            Exactly the contract's columns: metric ``time, entity, metric, value, unit``;
            counter ``time, entity, counter, value, unit``; process ``time, node, pid, name,
            user, cpu, rss_bytes, io_bytes`` (``io_bytes`` NaN where unknown); workload
            ``time, window_s`` then its columns in the order first written; node ``node, ncpu,
            os``. ``time`` is ``datetime64[ns, UTC]``; rows are sorted by series, then time.

        Raises
        ------
        DataError
            A filter does not apply to ``contract``, or a time is not timezone-aware.
        """
        spec = _contract(contract)
        given = {
            key
            for key, value in (
                ("entity", entity),
                ("name", name),
                ("node", node),
                ("start", start),
                ("end", end),
                ("source", source),
            )
            if value is not None
        }
        wrong = sorted(given - _FILTERS[spec])
        if wrong:
            allowed = ", ".join(sorted(_FILTERS[spec]))
            raise DataError(
                f"{spec} frames cannot be filtered by {', '.join(wrong)} (allowed: {allowed})"
            )
        where: list[str] = []
        params: list[Any] = []
        _time_filter(where, params, start, end, "w.time" if spec == "workload" else "time")
        with self._reading(f"its {spec} frame") as con:
            if spec in ("metric", "counter"):
                where.insert(0, "frame = ?")
                params.insert(0, spec)
                _name_filter(where, params, "entity", entity)
                _name_filter(where, params, "name", name)
                sql = (
                    f"SELECT time, entity, name AS {spec}, value, unit "
                    f"FROM {self._samples(con, spec)} "
                    f"WHERE {' AND '.join(where)} ORDER BY entity, name, time"
                )
                return _frame(con, sql, params)
            if spec == "process":
                _name_filter(where, params, "node", node)
                _name_filter(where, params, "name", name)
                sql = (
                    'SELECT time, node, pid, name, "user", cpu, rss_bytes, '
                    f"{_OPTIONAL_PROCESS_SQL} FROM {self._processes(con)} {_where(where)} "
                    "ORDER BY node, pid, name, time"
                )
                frame = _frame(con, sql, params)
                # io_bytes is always there (NaN when unknown); the node context only when given
                context = [c for c in _OPTIONAL_PROCESS if c != "io_bytes"]
                return frame.drop(columns=[c for c in context if frame[c].isna().all()])
            if spec == "node":
                _name_filter(where, params, "node", node)
                sql = f"SELECT node, ncpu, os FROM {self._nodes(con)} {_where(where)} ORDER BY node"
                return _frame(con, sql, params)
            return self._read_workload(con, source, where, params)

    def series(
        self,
        entity: str,
        metric: str,
        *,
        start: datetime | pd.Timestamp | str | None = None,
        end: datetime | pd.Timestamp | str | None = None,
    ) -> pd.DataFrame:
        """One metric series (a metric frame), e.g. to plot a finding in its context."""
        return self.read_frame("metric", entity=entity, name=metric, start=start, end=end)

    def _read_workload(
        self,
        con: duckdb.DuckDBPyConnection,
        source: str | None,
        where: list[str],
        params: list[Any],
    ) -> pd.DataFrame:
        if source is None:
            sources = [
                row[0]
                for row in con.execute(
                    "SELECT DISTINCT source FROM workload_columns ORDER BY source"
                ).fetchall()
            ]
            if len(sources) > 1:
                listed = ", ".join(repr(s) for s in sources[:10])
                raise DataError(f"the store holds several workloads ({listed}); pass source=")
            source = sources[0] if sources else ""
        names = dict(
            con.execute(
                'SELECT position, "column" FROM workload_columns WHERE source = ?', [source]
            ).fetchall()
        )
        rows = con.sql(
            "SELECT epoch_us(w.time) AS t, w.window_s, c.position, w.value "
            "FROM workload w JOIN workload_columns c ON c.source = w.source "
            'AND c."column" = w."column" '
            f"WHERE {' AND '.join(['w.source = ?', *where])}",
            params=[source, *params],
        ).to_arrow_table()
        micros = rows.column("t").to_numpy()
        times, row_of = np.unique(micros, return_inverse=True)
        positions = rows.column("position").to_numpy()
        present = np.unique(positions)
        matrix = np.full((len(times), len(present)), np.nan)
        matrix[row_of, np.searchsorted(present, positions)] = rows.column("value").to_numpy()
        window = np.empty(len(times))
        window[row_of] = rows.column("window_s").to_numpy()
        out = pd.DataFrame(
            {
                "time": pd.to_datetime(times, unit="us", utc=True).astype("datetime64[ns, UTC]"),
                "window_s": window,
            }
        )
        data = pd.DataFrame(matrix, columns=[names[int(p)] for p in present])
        return pd.concat([out, data], axis=1)

    # -- findings -------------------------------------------------------------------------------

    def write_findings(
        self,
        findings: Iterable[Finding],
        *,
        run_id: str | None = None,
        at: datetime | None = None,
    ) -> int:
        """Store findings; one already stored is updated and keeps its ``first_seen``.

        Parameters
        ----------
        findings
            Findings to store; repeats of one id collapse to the last.
        run_id
            The run that found them (see :meth:`begin_run`); replaces the stored run id.
        at
            When they were seen (``first_seen`` of new ones, ``last_seen`` of all); now if
            omitted.

        Returns
        -------
        int
            Findings written (new and updated).
        """
        latest: dict[str, Finding] = {}
        for finding in findings:
            if not isinstance(finding, Finding):
                raise DataError(f"expected a Finding, got {type(finding).__name__}")
            latest[finding.id] = finding
        if not latest:
            return 0
        seen = _aware(at, "at") if at is not None else datetime.now(UTC)
        items = list(latest.values())
        batch = pd.DataFrame(
            {
                "id": list(latest),
                "kind": [f.kind.value for f in items],
                "entity": [f.entity for f in items],
                "metric": [f.metric for f in items],
                "start": _timestamps([f.start for f in items]),
                "end": _timestamps([f.end for f in items]),
                "severity": np.array([int(f.severity) for f in items], dtype="int32"),
                "explanation": [f.explanation for f in items],
                "evidence": [_evidence_json(f) for f in items],
                "detector": [f.detector for f in items],
            }
        )
        with self._transaction("write findings") as con:
            con.register(_BATCH, batch)
            try:
                con.execute(
                    f"""INSERT INTO findings
                    SELECT id, ?, kind, entity, metric, start, "end", severity, explanation,
                           evidence, detector, ?, ? FROM {_BATCH}
                    ON CONFLICT (id) DO UPDATE SET
                        run_id = excluded.run_id, last_seen = excluded.last_seen,
                        severity = excluded.severity, explanation = excluded.explanation,
                        evidence = excluded.evidence""",
                    [run_id, seen, seen],
                )
            finally:
                _unregister(con)
        logger.debug("stored %d findings (run %s)", len(items), run_id)
        return len(items)

    def findings(
        self,
        *,
        kind: Kind | str | None = None,
        entity: str | None = None,
        since: datetime | pd.Timestamp | str | None = None,
        min_severity: Severity | int | str | None = None,
        run_id: str | None = None,
    ) -> list[Finding]:
        """Stored findings in :func:`perfsleuth.findings.ordered` order (most severe first).

        Parameters
        ----------
        kind, entity
            Keep only findings of this kind / about this entity.
        since
            Keep findings that end at or after this time (data time, timezone-aware).
        min_severity
            Keep findings at least this severe (a :class:`Severity`, its name or number).
        run_id
            Keep findings last seen by this run.
        """
        where: list[str] = []
        params: list[Any] = []
        if kind is not None:
            try:
                where.append("kind = ?")
                params.append(Kind(kind).value)
            except ValueError:
                known = ", ".join(k.value for k in Kind)
                raise DataError(f"unknown finding kind {kind!r}; expected one of {known}") from None
        if entity is not None:
            where.append("entity = ?")
            params.append(entity)
        if since is not None:
            where.append('"end" >= ?')
            params.append(_aware(since, "since"))
        if min_severity is not None:
            try:
                level = Severity.parse(min_severity)
            except ValueError as exc:
                raise DataError(str(exc)) from None
            where.append("severity >= ?")
            params.append(int(level))
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        with self._reading("its findings") as con:
            rows = con.execute(
                'SELECT id, kind, entity, metric, epoch_us(start), epoch_us("end"), severity, '
                f"explanation, evidence, detector FROM findings {_where(where)}",
                params,
            ).fetchall()
        return ordered(self._finding(row) for row in rows)

    def seen(self, finding_id: str) -> tuple[datetime, datetime] | None:
        """``(first_seen, last_seen)`` of a stored finding, or None if it is not stored."""
        with self._reading("its findings") as con:
            row = _first_row(
                con,
                "SELECT epoch_us(first_seen), epoch_us(last_seen) FROM findings WHERE id = ?",
                [finding_id],
            )
        return None if row is None else (_from_micros(row[0]), _from_micros(row[1]))

    def _finding(self, row: tuple[Any, ...]) -> Finding:
        (fid, kind, entity, metric, start, end, severity, explanation, evidence, detector) = row
        try:
            return Finding(
                kind=Kind(kind),
                entity=entity,
                metric=metric,
                start=_from_micros(start),
                end=_from_micros(end),
                severity=Severity(severity),
                explanation=explanation,
                evidence=tuple(Evidence.from_dict(e) for e in json.loads(evidence)),
                detector=detector,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{self.path}: stored finding {fid} is unreadable: {exc}") from exc

    # -- incidents ------------------------------------------------------------------------------

    def write_incidents(self, incidents: Iterable[Incident], *, run_id: str) -> int:
        """Store a run's incidents (as :meth:`perfsleuth.incidents.Incident.to_dict` tells
        them); a run's incidents are written once, with its findings."""
        rows = [incident.to_dict() for incident in incidents]
        if not rows:
            return 0
        with self._transaction("write incidents") as con:
            for row in rows:
                con.execute(
                    "INSERT OR REPLACE INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        run_id,
                        row["id"],
                        datetime.fromisoformat(str(row["start"])),
                        datetime.fromisoformat(str(row["end"])),
                        int(Severity.parse(str(row["severity"]))),
                        json.dumps(row["entities"], ensure_ascii=False),
                        row["title"],
                        row["story"],
                        json.dumps(row["chain"], ensure_ascii=False, allow_nan=False),
                        json.dumps(row["findings"]),
                    ],
                )
        return len(rows)

    def incidents(self, *, run_id: str | None = None) -> list[dict[str, Any]]:
        """Stored incidents, as :meth:`~perfsleuth.incidents.Incident.to_dict` gives them plus
        their ``run_id``: the newest run's first, most severe then earliest within a run."""
        where: list[str] = []
        params: list[Any] = []
        if run_id is not None:
            where.append("i.run_id = ?")
            params.append(run_id)
        with self._reading("its incidents") as con:
            rows = con.execute(
                'SELECT i.run_id, i.id, i.start, i."end", i.severity, i.entities, i.title, '
                "i.story, i.chain, i.findings FROM incidents i "
                f"LEFT JOIN runs r USING (run_id) {_where(where)} "
                "ORDER BY r.started DESC, i.severity DESC, i.start, i.id",
                params,
            ).fetchall()
        return [
            {
                "run_id": run,
                "id": ident,
                "start": start.astimezone(UTC).isoformat(),
                "end": end.astimezone(UTC).isoformat(),
                "severity": Severity(severity).name.lower(),
                "entities": json.loads(entities),
                "title": title,
                "story": story,
                "chain": json.loads(chain),
                "findings": json.loads(findings),
            }
            for run, ident, start, end, severity, entities, title, story, chain, findings in rows
        ]

    # -- runs and history -----------------------------------------------------------------------

    def begin_run(self, command: str) -> str:
        """Record the start of a run (e.g. one CLI command) and return its id.

        Credentials in URLs in ``command`` are not stored (:func:`perfsleuth.urls.redact_text`).
        """
        from perfsleuth.urls import redact_text

        run_id = uuid.uuid4().hex
        with self._transaction("begin run") as con:
            con.execute(
                "INSERT INTO runs (run_id, started, finished, command, status, n_findings, pid) "
                "VALUES (?, ?, NULL, ?, 'running', NULL, ?)",
                [run_id, datetime.now(UTC), redact_text(command), os.getpid()],
            )
        return run_id

    def finish_run(self, run_id: str, *, status: str, n_findings: int) -> None:
        """Record how a run ended (``status`` such as ``"ok"``, ``"failed"``, ``"interrupted"``)."""
        if not status.strip():
            raise DataError("a run status must not be empty")
        with self._transaction("finish run") as con:
            row = _first_row(
                con,
                "UPDATE runs SET finished = ?, status = ?, n_findings = ? WHERE run_id = ?",
                [datetime.now(UTC), status, int(n_findings), run_id],
            )
            if row is None or row[0] == 0:
                raise StoreError(f"{self.path}: no run {run_id!r} to finish; use begin_run first")

    def runs(self) -> pd.DataFrame:
        """Recorded runs, oldest first: run_id, started, finished, command, status, n_findings."""
        with self._reading("its runs") as con:
            out = _frame(
                con,
                "SELECT run_id, started, finished, command, status, n_findings FROM runs "
                "ORDER BY started, run_id",
                [],
            )
        out["n_findings"] = out["n_findings"].astype("Int64")
        return out

    def append_history(self, node: str, kind: str, text: str, time: datetime | None = None) -> None:
        """Append an event (an alert sent, a ticket opened, ...) to a node's history."""
        when = datetime.now(UTC) if time is None else _aware(time, "time")
        with self._transaction("append history") as con:
            con.execute(
                'INSERT INTO node_history (node, time, kind, "text") VALUES (?, ?, ?, ?)',
                [node, when, kind, text],
            )

    def history(self, node: str | None = None) -> pd.DataFrame:
        """Node history (node, time, kind, text), oldest first, for one node or all."""
        where: list[str] = []
        params: list[Any] = []
        _name_filter(where, params, "node", node)
        with self._reading("its node history") as con:
            return _frame(
                con,
                f'SELECT node, time, kind, "text" FROM node_history {_where(where)} '
                "ORDER BY time, seq",
                params,
            )

    def stats(self) -> dict[str, int]:
        """Row count of each table in :data:`TABLES`, with the rows of pending segments."""
        with self._reading("its row counts") as con:
            sources = {
                "samples": self._samples(con, None),
                "processes": self._processes(con),
                "nodes": self._nodes(con),
            }
            return {
                table: int(_scalar(con, f"SELECT count(*) FROM {sources.get(table, table)}"))
                for table in TABLES
            }

    def process_nodes(self) -> list[str]:
        """Nodes with process rows (stored or in pending segments), sorted."""
        with self._reading("its process nodes") as con:
            rows = con.execute(
                f"SELECT DISTINCT node FROM {self._processes(con)} ORDER BY node"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def transaction(self, what: str) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A write transaction on the store's connection, for modules with their own tables.

        The collector uses it to commit samples and its restart cursor together. ``what`` names
        the work in the :class:`StoreError` raised if the database refuses it (then nothing of
        the transaction is stored).
        """
        return self._transaction(what)

    # -- segments -------------------------------------------------------------------------------

    def compact(self) -> int:
        """Fold the collector's pending segments into the tables, then delete their folders.

        One transaction inserts each segment's rows whose keys are not stored yet and records
        the segments' names; only then are the folders removed (the newest one of each node is
        kept: the collector resumes from it). A crash at any point leaves each segment pending
        (read as a segment, folded next time) or recorded (ignored, removed next time): never
        lost, never counted twice. Returns the number of segments folded; a read-only or
        in-memory store folds nothing.
        """
        if self.read_only or self.memory:
            return 0
        with self._lock:
            con = self._connection()
            with self._reading("its segments"):
                pending = self._pending_segments(con)
            if pending:
                started = _time.perf_counter()
                with self._transaction("fold the collector's segments into the store") as con:
                    _fold(con, pending)
                    con.execute(
                        "INSERT INTO segments SELECT unnest(?::VARCHAR[]), ?",
                        [[seg.name for seg in pending], datetime.now(UTC)],
                    )
                logger.info(
                    "%s: folded %d segment(s) in %.3f s",
                    self.path,
                    len(pending),
                    _time.perf_counter() - started,
                )
            if pending or segment_dir(self.path).is_dir():
                self._tidy_segments()
        return len(pending)

    def _pending_segments(self, con: duckdb.DuckDBPyConnection) -> list[Segment]:
        """Committed segments not folded into the tables yet, oldest first."""
        if self.memory:
            return []
        found = list_segments(self.path)
        if not found:
            return []
        folded = {row[0] for row in con.execute("SELECT name FROM segments").fetchall()}
        return [seg for seg in found if seg.name not in folded]

    def _tidy_segments(self) -> None:
        """Remove folded segments (but the newest of each node) and half-written leftovers."""
        folder = segment_dir(self.path)
        found = list_segments(self.path)
        con = self._connection()
        with self._reading("its segments"):
            folded = {row[0] for row in con.execute("SELECT name FROM segments").fetchall()}
        newest = {seg.node: seg.name for seg in found}  # found is sorted: the last wins
        for seg in found:
            if seg.name in folded and newest[seg.node] != seg.name:
                _remove(seg.path, folder / f".del-{seg.name}")
        now = _time.time()
        for leftover in folder.glob(".*") if folder.is_dir() else ():
            # .del-*: a removal cut short; .tmp-*: a writer that died mid-segment
            try:
                stale = leftover.name.startswith(".del-") or (
                    now - leftover.stat().st_mtime > _STALE_TMP
                )
            except OSError:
                continue
            if stale:
                shutil.rmtree(leftover, ignore_errors=True)
        on_disk = {seg.name for seg in list_segments(self.path)}
        gone = sorted(folded - on_disk)
        if gone:  # names are unique: a removed segment never comes back
            with self._transaction("forget removed segments") as con:
                con.execute("DELETE FROM segments WHERE list_contains(?::VARCHAR[], name)", [gone])

    def _samples(self, con: duckdb.DuckDBPyConnection, frame: str | None) -> str:
        """The samples table, with the counters of pending segments (``frame``: which frame
        will be read, so other frames need no file read)."""
        pending = [] if frame == "metric" else self._pending_segments(con)
        if not pending:
            return "samples"
        files = _files(pending, "counters")
        return (
            "(SELECT frame, entity, name, time, value, unit FROM samples UNION ALL "
            f"SELECT 'counter', entity, name, time, value, unit FROM read_parquet({files}))"
        )

    def _processes(self, con: duckdb.DuckDBPyConnection) -> str:
        pending = self._pending_segments(con)
        if not pending:
            return "processes"
        files = _files(pending, "processes")
        return (
            "(SELECT * FROM processes UNION ALL BY NAME "
            f"SELECT * FROM read_parquet({files}, union_by_name = true))"
        )

    def _nodes(self, con: duckdb.DuckDBPyConnection) -> str:
        pending = self._pending_segments(con)
        if not pending:
            return "nodes"
        files = _files(pending, "nodes")
        # the newest word on a node wins: segments are newer than the table, later ones newer
        return (
            "(SELECT node, ncpu, os FROM (SELECT node, ncpu, os, '' AS src FROM nodes UNION ALL "
            f"SELECT node, ncpu, os, filename AS src FROM read_parquet({files}, filename = true)) "
            "QUALIFY row_number() OVER (PARTITION BY node ORDER BY src DESC) = 1)"
        )

    # -- internals ------------------------------------------------------------------------------

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise StoreError(f"{self.path}: store is closed; open it again")
        return self._con

    @contextmanager
    def _reading(self, what: str) -> Iterator[duckdb.DuckDBPyConnection]:
        """The connection, with DuckDB's errors (a truncated or corrupt file) as one clear
        :class:`StoreError`."""
        con = self._connection()
        with self._lock:  # compaction in another thread of this process must not remove files
            try:
                yield con
            except duckdb.Error as exc:
                raise _store_error(self.path, exc, f"read {what}") from exc

    @contextmanager
    def _transaction(self, what: str) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connection()
        if self.read_only:
            raise StoreError(
                f"{self.path}: store opened read-only; open it without read_only to {what}"
            )
        with self._lock:
            try:
                con.execute("BEGIN TRANSACTION")
            except duckdb.Error as exc:
                raise _store_error(self.path, exc, what, stored=False) from exc
            try:
                yield con
            except BaseException as exc:
                _rollback(con)
                if isinstance(exc, duckdb.Error):
                    raise _store_error(self.path, exc, what, stored=False) from exc
                raise
            try:
                con.execute("COMMIT")
            except duckdb.Error as exc:
                _rollback(con)
                raise _store_error(self.path, exc, what, stored=False) from exc

    @staticmethod
    def _version(con: duckdb.DuckDBPyConnection) -> int | None:
        has_meta = _scalar(
            con,
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = 'meta'",
        )
        if not has_meta:
            return None
        row = _first_row(con, "SELECT value FROM meta WHERE key = 'schema_version'")
        return None if row is None else int(row[0])

    def _prepare_schema(self) -> None:
        con = self._connection()
        try:
            version = self._version(con)
            n_tables = _scalar(
                con,
                "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database()",
            )
        except duckdb.Error as exc:
            raise _store_error(self.path, exc, "read the store's schema") from exc
        except ValueError as exc:
            raise StoreError(f"{self.path}: cannot read the store's schema: {exc}") from exc
        if version is None and n_tables:
            raise StoreError(
                f"{self.path}: a DuckDB database but not a perfsleuth store; choose another path"
            )
        current = 0 if version is None else version
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer perfsleuth (schema version {current}, this one "
                f"reads up to {SCHEMA_VERSION}); upgrade perfsleuth"
            )
        if current == SCHEMA_VERSION:
            return
        if self.read_only:
            raise StoreError(
                f"{self.path}: schema version {current} needs upgrading to {SCHEMA_VERSION}; "
                "open it once without read_only"
            )
        with self._transaction("create the schema") as con:
            con.execute(
                "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)"
            )
            for step in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    con.execute(statement)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
            )
        logger.info("%s: schema version %d -> %d", self.path, current, SCHEMA_VERSION)

    def _mark_interrupted(self) -> None:
        """Mark ``interrupted`` the runs another process left ``running``.

        This process holds the file for writing, so no other process can still be in a run
        of this store: its process was killed (or lost power) before it could finish it.
        """
        left = "status = 'running' AND (pid IS NULL OR pid <> ? OR started < ?)"
        params = [os.getpid(), _LOADED]
        with self._reading("its runs") as con:
            if not _scalar(con, f"SELECT count(*) FROM runs WHERE {left}", params):
                return  # the usual case: no write, so opening stays cheap
        with self._transaction("mark interrupted runs") as con:
            row = _first_row(con, f"UPDATE runs SET status = 'interrupted' WHERE {left}", params)
        if row is not None and row[0]:
            logger.warning(
                "%s: %d run(s) left running by a process that was killed are marked interrupted",
                self.path,
                row[0],
            )


# -- frame preparation: validate cheaply, return the batch to register (None when empty) --------


@dataclass(frozen=True, slots=True)
class _Batch:
    """Validated rows ready to register with DuckDB; ``pos`` orders repeats of a key."""

    rows: pd.DataFrame
    windows: pd.DataFrame | None = None  # workload: one row per window (time, window_s)
    columns: tuple[str, ...] = ()  # workload: value columns in frame order


_Prepare = Callable[[pd.DataFrame, str], "_Batch | None"]
_Write = Callable[[duckdb.DuckDBPyConnection, _Batch, str], int]


def _contract(contract: str) -> str:
    if contract not in _CONTRACTS:
        raise DataError(
            f"unknown frame contract {contract!r}; expected one of {', '.join(_CONTRACTS)}"
        )
    return contract


def _require(frame: pd.DataFrame, columns: Sequence[str], contract: str, where: str) -> bool:
    """Check ``columns`` are present; return False when the frame is empty (nothing to do)."""
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        have = ", ".join(map(str, frame.columns)) or "none"
        raise DataError(
            f"{where}: {contract} frame is missing column(s) {', '.join(map(repr, absent))} "
            f"(columns present: {have})"
        )
    return len(frame) > 0


def _time_values(frame: pd.DataFrame, where: str) -> pd.Series:
    raw = frame["time"]
    if not isinstance(raw.dtype, pd.DatetimeTZDtype):
        raise DataError(
            located(
                f"expected timezone-aware datetimes, got {raw.dtype}; "
                "pass the frame through perfsleuth.frames.normalise() first",
                source=where,
                field="time",
            )
        )
    if raw.isna().any():
        raise DataError(located("missing time", source=where, field="time"))
    # A copy, because DuckDB cannot scan timestamps from a reversed (negative-stride) view.
    return raw.dt.tz_convert("UTC").reset_index(drop=True).copy()


def _text_values(frame: pd.DataFrame, column: str, where: str) -> pd.Series:
    raw = frame[column]
    if isinstance(raw.dtype, pd.StringDtype):
        ok = True
    else:
        ok = raw.dtype == object and pd.api.types.infer_dtype(raw, skipna=True) in (
            "string",
            "empty",
        )
    if not ok:
        raise DataError(located(f"expected text, got {raw.dtype}", source=where, field=column))
    if raw.isna().any():
        pos = int(np.flatnonzero(raw.isna().to_numpy())[0])
        raise DataError(located(f"missing text (row {pos})", source=where, field=column))
    return raw.reset_index(drop=True)


def _number_values(
    frame: pd.DataFrame, column: str, where: str, *, nullable: bool = False
) -> np.ndarray[Any, np.dtype[np.float64]]:
    raw = frame[column]
    if pd.api.types.is_bool_dtype(raw.dtype) or not pd.api.types.is_numeric_dtype(raw.dtype):
        raise DataError(located(f"expected numbers, got {raw.dtype}", source=where, field=column))
    values: np.ndarray[Any, np.dtype[np.float64]] = raw.to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isfinite(values)
    if nullable:
        bad &= ~np.isnan(values)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise DataError(
            located(
                f"not a finite number: {float(values[pos])} (row {pos})", source=where, field=column
            )
        )
    return np.ascontiguousarray(values)


def _prepare_samples(name: str) -> _Prepare:
    def prepare(frame: pd.DataFrame, where: str) -> _Batch | None:
        if not _require(frame, ("time", "entity", name, "value"), name, where):
            return None
        unit: pd.Series | str = (
            _text_values(frame, "unit", where) if "unit" in frame.columns else ""
        )
        rows = pd.DataFrame(
            {
                "entity": _text_values(frame, "entity", where),
                "name": _text_values(frame, name, where),
                "time": _time_values(frame, where),
                "value": _number_values(frame, "value", where),
                "unit": unit,
                "pos": np.arange(len(frame)),
            }
        )
        return _Batch(rows)

    return prepare


_OPTIONAL_PROCESS: Final = (
    *("io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes", "start_time", "cpu_wait"),
    "os",  # the one text column: last
)
_OPTIONAL_PROCESS_SQL: Final = ", ".join(_OPTIONAL_PROCESS)


def _prepare_process(frame: pd.DataFrame, where: str) -> _Batch | None:
    required = ("time", "node", "pid", "name", "user", "cpu", "rss_bytes")
    if not _require(frame, required, "process", where):
        return None
    pid = frame["pid"]
    if pd.api.types.is_integer_dtype(pid.dtype) and not pid.isna().any():
        pids = np.ascontiguousarray(pid.to_numpy(dtype="int64"))
    else:
        floats = _number_values(frame, "pid", where)
        if (floats % 1 != 0).any():
            raise DataError(located("expected whole numbers", source=where, field="pid"))
        pids = floats.astype("int64")
    optional: dict[str, Any] = {
        column: (
            _number_values(frame, column, where, nullable=True)
            if column in frame.columns
            else np.full(len(frame), np.nan)
        )
        for column in _OPTIONAL_PROCESS[:-1]
    }
    no_os = pd.Series([None] * len(frame), dtype=object)
    optional["os"] = _text_values(frame, "os", where) if "os" in frame.columns else no_os
    rows = pd.DataFrame(
        {
            "node": _text_values(frame, "node", where),
            "pid": pids,
            "name": _text_values(frame, "name", where),
            "time": _time_values(frame, where),
            "user": _text_values(frame, "user", where),
            "cpu": _number_values(frame, "cpu", where),
            "rss_bytes": _number_values(frame, "rss_bytes", where),
            **optional,
            "pos": np.arange(len(frame)),
        }
    )
    return _Batch(rows)


def _prepare_node(frame: pd.DataFrame, where: str) -> _Batch | None:
    if not _require(frame, ("node", "ncpu", "os"), "node", where):
        return None
    rows = pd.DataFrame(
        {
            "node": _text_values(frame, "node", where),
            "ncpu": _number_values(frame, "ncpu", where),
            "os": _text_values(frame, "os", where),
            "pos": np.arange(len(frame)),
        }
    )
    return _Batch(rows)


def _prepare_workload(frame: pd.DataFrame, where: str) -> _Batch | None:
    if not _require(frame, ("time", "window_s"), "workload", where):
        return None
    names = [c for c in frame.columns if c not in ("time", "window_s")]
    odd = [c for c in names if not isinstance(c, str) or not c]
    if odd:
        raise DataError(f"{where}: workload column names must be non-empty text, got {odd[0]!r}")
    if len(set(names)) != len(names):
        raise DataError(f"{where}: workload frame repeats a column name")
    times = _time_values(frame, where)
    window = _number_values(frame, "window_s", where)
    n, k = len(frame), len(names)
    values = np.empty((n, k))
    for j, column in enumerate(names):
        values[:, j] = _number_values(frame, column, where, nullable=True)
    # Long form, row-major (window by window, columns in frame order); NaN is not stored.
    flat = values.ravel()
    keep = ~np.isnan(flat)
    stamps = pd.DatetimeIndex(times).as_unit("us")
    rows = pd.DataFrame(
        {
            "time": stamps.repeat(k)[keep],
            "window_s": np.repeat(window, k)[keep],
            "column": pd.array(np.tile(np.array(names, dtype=object), n)[keep], dtype="str"),
            "value": flat[keep],
            "pos": np.arange(n * k)[keep],
        }
    )
    windows = pd.DataFrame({"time": stamps, "window_s": window}).drop_duplicates(
        "time", keep="last"
    )
    return _Batch(rows, windows, tuple(names))


_PREPARE: Final[dict[str, _Prepare]] = {
    "metric": _prepare_samples("metric"),
    "counter": _prepare_samples("counter"),
    "process": _prepare_process,
    "node": _prepare_node,
    "workload": _prepare_workload,
}


# -- writers: run inside the caller's transaction, with the batch already validated -------------


def _replace_rows(
    con: duckdb.DuckDBPyConnection,
    table: str,
    keys: Sequence[str],
    columns: Sequence[str],
    rows: pd.DataFrame,
    fixed: dict[str, str] | None = None,
    params: Sequence[Any] = (),
) -> int:
    """Delete the keys of ``rows`` from ``table``, then insert ``rows`` (last per key wins).

    ``fixed`` maps table columns to SQL expressions (``?`` taken from ``params``) that are the
    same for every row, such as the frame of a sample. Returns the rows inserted.
    """
    fixed = fixed or {}
    con.register(_BATCH, rows)
    try:
        match = " AND ".join(
            [f"t.{_q(c)} = {expr}" for c, expr in fixed.items()]
            + [f"t.{_q(k)} = b.{_q(k)}" for k in keys]
        )
        bounds: list[Any] = []
        if "time" in keys:
            # Lets DuckDB skip row groups outside the batch's time range: collectors send recent
            # data, so the delete touches only the newest part of a big table.
            match += " AND t.time BETWEEN ? AND ?"
            bounds = [rows["time"].min().floor("us"), rows["time"].max().ceil("us")]
        con.execute(f"DELETE FROM {table} t USING {_BATCH} b WHERE {match}", [*params, *bounds])
        partition = ", ".join(_q(k) for k in keys)
        select = ", ".join(fixed.get(c, _q(c)) for c in columns)
        return _insert_latest(
            con,
            f"INSERT INTO {table} ({', '.join(_q(c) for c in columns)}) "
            f"SELECT {select} FROM {_BATCH} "
            f"QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY pos DESC) = 1",
            params,
        )
    finally:
        _unregister(con)


def _insert_latest(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> int:
    row = _first_row(con, sql, params)
    return 0 if row is None else int(row[0])


def _write_samples(frame_kind: str) -> _Write:
    def write(con: duckdb.DuckDBPyConnection, batch: _Batch, source: str) -> int:
        return _replace_rows(
            con,
            "samples",
            ("entity", "name", "time"),
            ("frame", "entity", "name", "time", "value", "unit"),
            batch.rows,
            fixed={"frame": "?"},
            params=[frame_kind],
        )

    return write


def _write_process(con: duckdb.DuckDBPyConnection, batch: _Batch, source: str) -> int:
    return _replace_rows(
        con,
        "processes",
        ("node", "pid", "name", "time"),
        ("node", "pid", "name", "time", "user", "cpu", "rss_bytes", *_OPTIONAL_PROCESS),
        batch.rows,
    )


def _write_node(con: duckdb.DuckDBPyConnection, batch: _Batch, source: str) -> int:
    return _replace_rows(con, "nodes", ("node",), ("node", "ncpu", "os"), batch.rows)


def _write_workload(con: duckdb.DuckDBPyConnection, batch: _Batch, source: str) -> int:
    known = {
        row[0]
        for row in con.execute(
            'SELECT "column" FROM workload_columns WHERE source = ?', [source]
        ).fetchall()
    }
    new = [c for c in batch.columns if c not in known]
    if new:
        first = int(
            _scalar(
                con,
                "SELECT coalesce(max(position), -1) + 1 FROM workload_columns WHERE source = ?",
                [source],
            )
        )
        con.execute(
            "INSERT INTO workload_columns SELECT ?, unnest(?::VARCHAR[]), unnest(?::INTEGER[])",
            [source, new, list(range(first, first + len(new)))],
        )
    if len(batch.rows):
        _replace_rows(
            con,
            "workload",
            ("time", "column"),
            ("source", "time", "window_s", "column", "value"),
            batch.rows,
            fixed={"source": "?"},
            params=[source],
        )
    windows = batch.windows if batch.windows is not None else pd.DataFrame()
    # The window length belongs to the window: keep it equal on every column stored for it.
    con.register(_BATCH, windows)
    try:
        con.execute(
            f"UPDATE workload SET window_s = b.window_s FROM {_BATCH} b "
            "WHERE workload.source = ? AND workload.time = b.time "
            "AND workload.window_s <> b.window_s",
            [source],
        )
    finally:
        _unregister(con)
    return len(windows)


_WRITERS: Final[dict[str, _Write]] = {
    "metric": _write_samples("metric"),
    "counter": _write_samples("counter"),
    "process": _write_process,
    "node": _write_node,
    "workload": _write_workload,
}


# -- small helpers --------------------------------------------------------------------------------


def _q(identifier: str) -> str:
    """Quote an identifier from this module's own schema (never data)."""
    return '"' + identifier.replace('"', '""') + '"'


def _where(clauses: Sequence[str]) -> str:
    return f"WHERE {' AND '.join(clauses)}" if clauses else ""


def _name_filter(
    where: list[str], params: list[Any], column: str, value: str | Sequence[str] | None
) -> None:
    if value is None:
        return
    if isinstance(value, str):
        where.append(f"{_q(column)} = ?")
        params.append(value)
    else:
        values = list(value)
        if not all(isinstance(v, str) for v in values):
            raise DataError(f"{column} filter must be text or a sequence of text")
        where.append(f"list_contains(?::VARCHAR[], {_q(column)})")
        params.append(values)


def _time_filter(
    where: list[str],
    params: list[Any],
    start: datetime | pd.Timestamp | str | None,
    end: datetime | pd.Timestamp | str | None,
    column: str,
) -> None:
    if start is not None:
        where.append(f"{column} >= ?")
        params.append(_aware(start, "start"))
    if end is not None:
        where.append(f"{column} < ?")
        params.append(_aware(end, "end"))


def _aware(value: datetime | pd.Timestamp | str, name: str) -> datetime:
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{name}: not a time: {value!r}") from exc
    if stamp.tzinfo is None:
        raise DataError(f"{name} must be timezone-aware (UTC), got {value!r}")
    if pd.isna(stamp):
        raise DataError(f"{name}: not a time: {value!r}")
    result: datetime = stamp.tz_convert("UTC").to_pydatetime(warn=False)
    return result.astimezone(UTC)


def _timestamps(values: Sequence[datetime]) -> pd.Series:
    micros = [(v - _EPOCH) // timedelta(microseconds=1) for v in values]
    return pd.Series(pd.to_datetime(np.array(micros, dtype="int64"), unit="us", utc=True))


def _from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _evidence_json(finding: Finding) -> str:
    return json.dumps([e.to_dict() for e in finding.evidence], ensure_ascii=False, allow_nan=False)


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any]) -> pd.DataFrame:
    """Run a query into pandas via Arrow, with times as ``datetime64[ns, UTC]``."""
    # DuckDB's own .df() warns under pandas 3 for TIMESTAMPTZ columns; Arrow is also faster.
    out = con.sql(sql, params=list(params)).to_arrow_table().to_pandas()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.DatetimeTZDtype):
            out[column] = out[column].dt.tz_convert("UTC").astype("datetime64[ns, UTC]")
    return out


def _first_row(
    con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()
) -> tuple[Any, ...] | None:
    # fetchall, not fetchone: DuckDB 2 refuses other work while a result is not read to its end.
    rows = con.execute(sql, list(params)).fetchall()
    return rows[0] if rows else None


def _scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] = ()) -> Any:
    row = _first_row(con, sql, params)
    return None if row is None else row[0]


def _unregister(con: duckdb.DuckDBPyConnection) -> None:
    # after a failed statement DuckDB refuses this too: the first error is the one to report
    try:
        con.unregister(_BATCH)
    except duckdb.Error:
        logger.debug("unregistering the batch after a failed write raised", exc_info=True)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # the transaction may already be gone with the failed statement
        logger.debug("rollback after a failed write raised", exc_info=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _is_lock(text: str) -> bool:
    # not just "lock": a corrupt *block* must not pass for a store in use
    return "Could not set lock" in text or "Conflicting lock" in text


def _open_error(path: Path, exc: duckdb.Error) -> StoreError:
    text = _first_line(exc)
    if _is_lock(text):
        pid = _PID.search(text)
        holder = f" (PID {pid.group(1)})" if pid else ""
        return StoreInUseError(
            f"{path}: store is in use by another process{holder}; "
            "wait for it to finish or stop it, then retry"
        )
    if "not a valid DuckDB database" in text:
        return StoreError(
            f"{path}: not a DuckDB database file; move it aside or choose another store path"
        )
    if "different configuration" in text:
        return StoreError(
            f"{path}: already open in this process with a different read_only setting; "
            "close it first"
        )
    return _store_error(path, exc, "open the store")


def _store_error(path: Path, exc: duckdb.Error, doing: str, *, stored: bool = True) -> StoreError:
    """One line for a DuckDB error: a damaged file is said to be damaged, whatever was asked."""
    text = _first_line(exc)
    kept = "" if stored else ", nothing was stored"
    if _is_lock(text):
        return _open_error(path, exc)
    if "replaying WAL" in text or "Corrupt WAL" in text:
        return StoreError(
            f"{path}: its write-ahead log {path.name}.wal is damaged ({text}); the store was not "
            "changed: keep both files and restore them from a backup, or move the .wal aside to "
            "open the store without its last changes"
        )
    if "Could not read enough bytes" in text:
        return StoreError(
            f"{path}: the store file is truncated (it ends before the data it lists){kept}; "
            "restore it from a backup, or move it aside and start a new store"
        )
    if "Corrupt database file" in text or "checksum" in text.lower() or "corrupt" in text.lower():
        return StoreError(
            f"{path}: the store file is corrupt ({text}){kept}; restore it from a backup, or "
            "move it aside and start a new store"
        )
    if not stored:
        return StoreError(f"{path}: could not {doing}, nothing was stored: {text}")
    return StoreError(f"{path}: could not {doing}: {text}")


def _wal_bytes(path: Path) -> int:
    try:
        return path.with_name(path.name + ".wal").stat().st_size
    except OSError:
        return 0


# every DuckDB log starts with its version entry: field 100 (the entry type) = 98 (a version
# entry), then field 101 (the log format); uint16 field ids, varint values
_WAL_START: Final = b"\x64\x00\x62\x65\x00"


def _wal_starts_as_duckdb_writes_it(path: Path) -> bool:
    """Whether the store's log starts with an intact version entry, or is torn inside it."""
    try:
        with path.with_name(path.name + ".wal").open("rb") as log:
            head = log.read(len(_WAL_START))
    except OSError:
        return False
    return _WAL_START.startswith(head)


_DUCKDB_MAGIC: Final = b"DUCK"  # bytes 8..11 of every DuckDB database file


def check_store_file(path: str | PathLike[str]) -> None:
    """Refuse ``path`` if it exists and is not a DuckDB database, without changing it.

    DuckDB 2 opens some other files (a CSV file, say) as a database that keeps nothing, so a
    ``--store`` pointing at a data file must be refused here, before DuckDB sees it.
    """
    where = Path(path)
    try:
        with open(where, "rb") as handle:
            head = handle.read(512)
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise StoreError(f"{where}: is a folder, not a store file; pass a file path") from None
    except OSError as exc:
        raise StoreError(f"{where}: cannot read it ({exc.strerror or exc})") from exc
    if head[8:12] == _DUCKDB_MAGIC:
        return
    raise StoreError(
        f"{where}: not a DuckDB database file{_looks_like(head)}; perfsleuth left it untouched: "
        "choose another store path"
    )


def _looks_like(head: bytes) -> str:
    if not head:
        return " (it is empty)"
    if head.startswith(b"PAR1"):
        return " (it is a Parquet file)"
    if head.startswith(b"SQLite format 3"):
        return " (it is an SQLite database)"
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return ""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        return " (it looks like JSON)"
    first = stripped.splitlines()[0] if stripped else ""
    if "," in first or ";" in first or "\t" in first:
        return " (it looks like a CSV file)"
    return " (it is a text file)"


# -- segments: written by the collector beside the store, read and folded in by the store ---------

SEGMENTS_SUFFIX: Final = ".segments"
_SEGMENT_NAME = re.compile(r"^seg-(\d{20})-([0-9a-f]{8})-([0-9a-f]{8})$")
_STALE_TMP: Final = 3600.0  # seconds: a half-written segment this old belongs to a dead writer

_SEGMENT_PARTS: Final[dict[str, dict[str, str]]] = {
    "processes": {
        "node": "text", "pid": "int", "name": "text", "time": "time", "user": "text",
        "cpu": "float", "rss_bytes": "float", "io_bytes": "float",
    },
    "counters": {
        "entity": "text", "name": "text", "time": "time", "value": "float", "unit": "text",
    },
    "nodes": {"node": "text", "ncpu": "float", "os": "text"},
    "starts": {
        "node": "text", "pid": "int", "start_time": "time", "name": "text", "user": "text",
        "first_seen": "time", "last_seen": "time",
    },
}  # fmt: skip
"""The files of a segment and the columns each must have."""

_SEGMENT_OPTIONAL: Final = {
    **{c: "float" for c in ("start_time", "cpu_wait", "machine_cpu", "ncpu", "volume")},
    **{"file_bytes": "float", "os": "text"},
}
"""Types of the columns a process row may add (any other column is kept as pyarrow reads it)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """One committed segment: its folder, the time of its last sample and its node's key."""

    path: Path
    last_us: int
    node: str

    @property
    def name(self) -> str:
        return self.path.name


def segment_dir(path: str | PathLike[str]) -> Path:
    """The folder of the segments committed beside the store file ``path``."""
    where = Path(path)
    return where.with_name(where.name + SEGMENTS_SUFFIX)


def _node_key(node: str) -> str:
    return hashlib.blake2b(node.encode("utf-8"), digest_size=4).hexdigest()


def list_segments(path: str | PathLike[str], *, node: str | None = None) -> list[Segment]:
    """Committed segments beside the store ``path`` (folded or not), oldest first.

    ``node`` keeps only the segments of that node.
    """
    folder = segment_dir(path)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StoreError(f"{folder}: cannot list the segments ({exc.strerror or exc})") from exc
    key = None if node is None else _node_key(node)
    found = []
    for name in names:
        match = _SEGMENT_NAME.match(name)
        if match and (key is None or match[2] == key):
            found.append(Segment(folder / name, int(match[1]), match[2]))
    return sorted(found, key=lambda seg: seg.name)


def append_segment(
    path: str | PathLike[str],
    *,
    node: str,
    last: datetime,
    parts: Mapping[str, pd.DataFrame],
    state: Mapping[str, Any],
) -> Segment:
    """Commit one segment beside the store ``path``: all of it, or nothing.

    Parameters
    ----------
    node
        The node whose samples these are (segments of one node are ordered by ``last``).
    last
        Time of the segment's last sample.
    parts
        A frame for each part of :data:`_SEGMENT_PARTS` (``processes``, ``counters``,
        ``nodes``, ``starts``), with at least its columns.
    state
        What the writer needs to resume (JSON values); :func:`read_segment_state` returns it.

    Notes
    -----
    The files are written into a hidden folder, flushed to disk, and the folder is renamed
    into place: a reader (or a crash) sees the whole segment or none of it.
    """
    import pyarrow.parquet as pq

    folder = segment_dir(path)
    stamp = (_aware(last, "last") - _EPOCH) // timedelta(microseconds=1)
    name = f"seg-{stamp:020d}-{_node_key(node)}-{uuid.uuid4().hex[:8]}"
    tmp = folder / f".tmp-{name}"
    try:
        tmp.mkdir(parents=True)
        for part, columns in _SEGMENT_PARTS.items():
            table = _arrow(parts[part], columns, part)
            with open(tmp / f"{part}.parquet", "wb") as handle:
                pq.write_table(table, handle, compression="zstd")
                handle.flush()
                os.fsync(handle.fileno())
        with open(tmp / "state.json", "w", encoding="utf-8") as handle:
            json.dump(dict(state), handle, allow_nan=False)
            handle.flush()
            os.fsync(handle.fileno())
        _fsync_dir(tmp)
        os.rename(tmp, folder / name)
        _fsync_dir(folder)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"{folder}: cannot write a segment ({exc.strerror or exc})") from exc
    return Segment(folder / name, stamp, _node_key(node))


def read_segment_state(segment: Segment) -> dict[str, Any] | None:
    """The writer's state saved with ``segment`` (None if the segment is gone or damaged)."""
    try:
        with open(segment.path / "state.json", encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _arrow(frame: pd.DataFrame, columns: Mapping[str, str], part: str) -> Any:
    import pyarrow as pa

    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"segment part {part!r} lacks column(s) {', '.join(missing)}")
    types = {
        "text": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "time": pa.timestamp("us", tz="UTC"),
    }
    arrays = {}
    for column in frame.columns:
        kind = columns.get(column, _SEGMENT_OPTIONAL.get(column))
        values = frame[column]
        if kind == "time":
            stamps = pd.to_datetime(values, utc=True).dt.floor("us")
            arrays[column] = pa.array(stamps, type=types[kind])
        elif kind == "float":  # NaN is stored as null: unknown
            numbers = values.to_numpy(dtype="float64", na_value=np.nan)
            arrays[column] = pa.array(numbers, type=types[kind], from_pandas=True)
        elif kind is not None:
            arrays[column] = pa.array(values.tolist(), type=types[kind])
        else:  # a column a newer writer added: kept as pyarrow reads it
            arrays[column] = pa.array(values)
    return pa.table(arrays)


def _fsync_dir(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove(folder: Path, hidden: Path) -> None:
    """Remove a folder so that no reader can see it half-removed: hide it, then delete it."""
    try:
        os.rename(folder, hidden)
    except OSError:
        return
    shutil.rmtree(hidden, ignore_errors=True)


def _files(segments: Sequence[Segment], part: str) -> str:
    """A SQL list of the ``part`` files of ``segments``."""
    quoted = ("'" + str(seg.path / f"{part}.parquet").replace("'", "''") + "'" for seg in segments)
    return "[" + ", ".join(quoted) + "]"


def _fold(con: duckdb.DuckDBPyConnection, segments: Sequence[Segment]) -> None:
    """Insert the rows of ``segments`` whose keys are not stored yet (inside a transaction)."""
    processes = _files(segments, "processes")
    have = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM read_parquet({processes}, "
                                         "union_by_name = true)").fetchall()}  # fmt: skip
    table = [row[1] for row in con.execute("PRAGMA table_info('processes')").fetchall()]
    columns = ", ".join(_q(c) for c in table if c in have)
    _insert_absent(
        con,
        "processes",
        f"SELECT {columns} FROM read_parquet({processes}, union_by_name = true)",
        columns,
        ("node", "pid", "name", "time"),
    )
    _insert_absent(
        con,
        "samples",
        "SELECT 'counter' AS frame, entity, name, time, value, unit "
        f"FROM read_parquet({_files(segments, 'counters')})",
        "frame, entity, name, time, value, unit",
        ("frame", "entity", "name", "time"),
    )
    con.execute(
        "INSERT INTO nodes SELECT node, ncpu, os FROM read_parquet("
        f"{_files(segments, 'nodes')}, filename = true) "
        "QUALIFY row_number() OVER (PARTITION BY node ORDER BY filename DESC) = 1 "
        "ON CONFLICT (node) DO UPDATE SET ncpu = excluded.ncpu, os = excluded.os"
    )
    con.execute(
        "INSERT INTO process_starts SELECT node, pid, start_time, any_value(name), "
        'any_value("user"), min(first_seen), max(last_seen) '
        f"FROM read_parquet({_files(segments, 'starts')}) GROUP BY node, pid, start_time "
        "ON CONFLICT DO UPDATE SET "
        "last_seen = greatest(process_starts.last_seen, excluded.last_seen)"
    )


def _insert_absent(
    con: duckdb.DuckDBPyConnection, table: str, select: str, columns: str, keys: Sequence[str]
) -> None:
    bounds = _first_row(con, f"SELECT min(time), max(time) FROM ({select})")
    if bounds is None or bounds[0] is None:
        return
    match = " AND ".join(f"t.{_q(k)} = b.{_q(k)}" for k in keys)
    # the time range lets DuckDB skip the row groups of older data
    con.execute(
        f"INSERT INTO {table} ({columns}) SELECT {columns} FROM ({select}) b "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE {match} AND t.time BETWEEN ? AND ?)",
        [bounds[0], bounds[1]],
    )
