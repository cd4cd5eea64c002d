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
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time as _time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import duckdb
import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, StoreError, located
from perfsleuth.findings import Evidence, Finding, Kind, Severity, ordered

__all__ = [
    "DEFAULT_STORE_PATH",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "TABLES",
    "Store",
]

logger = logging.getLogger(__name__)

DEFAULT_STORE_PATH: Final = Path("perfsleuth.duckdb")

SCHEMA_VERSION: Final = 2
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
}
"""Schema changes by version: the SQL that takes a store from ``version - 1`` to ``version``.

To change the schema, add ``SCHEMA_VERSION + 1: (...)`` here and bump :data:`SCHEMA_VERSION`;
opening an older store applies the missing steps in one transaction.
"""

TABLES: Final = ("samples", "processes", "nodes", "workload", "findings", "runs", "node_history")
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

    Raises
    ------
    StoreError
        The file is locked by another process, is not a DuckDB database (or not a perfsleuth
        store), or was written by a newer perfsleuth.

    Notes
    -----
    A store is not thread-safe: use one per thread (they may share a file).
    """

    def __init__(
        self, path: str | PathLike[str] = DEFAULT_STORE_PATH, *, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        memory = str(path) == ":memory:"
        self._con: duckdb.DuckDBPyConnection | None = None
        if not memory:
            if self.path.is_dir():
                raise StoreError(f"{self.path}: is a folder, not a store file; pass a file path")
            if read_only and not self.path.exists():
                raise StoreError(f"{self.path}: no store here; check the path or write to it first")
            if not read_only:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(
                        f"{self.path}: cannot create its folder ({exc.strerror}); "
                        "choose a writable path"
                    ) from exc
        self._lock = threading.RLock() if memory else _write_lock(str(self.path.resolve()))
        try:
            with _CONNECT_LOCK:
                con = duckdb.connect(":memory:" if memory else str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            raise StoreError(_open_message(self.path, exc)) from exc
        self._con = con
        try:
            con.execute("SET TimeZone = 'UTC'")
            self._prepare_schema()
        except BaseException:
            self.close()
            raise

    # -- lifetime -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the store; closing twice is harmless."""
        if self._con is not None:
            con, self._con = self._con, None
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
        version = self._version(self._connection())
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
        con = self._connection()
        where: list[str] = []
        params: list[Any] = []
        _time_filter(where, params, start, end, "w.time" if spec == "workload" else "time")
        if spec in ("metric", "counter"):
            where.insert(0, "frame = ?")
            params.insert(0, spec)
            _name_filter(where, params, "entity", entity)
            _name_filter(where, params, "name", name)
            sql = (
                f"SELECT time, entity, name AS {spec}, value, unit FROM samples "
                f"WHERE {' AND '.join(where)} ORDER BY entity, name, time"
            )
            return _frame(con, sql, params)
        if spec == "process":
            _name_filter(where, params, "node", node)
            _name_filter(where, params, "name", name)
            sql = (
                f'SELECT time, node, pid, name, "user", cpu, rss_bytes, {_OPTIONAL_PROCESS_SQL} '
                f"FROM processes {_where(where)} ORDER BY node, pid, name, time"
            )
            frame = _frame(con, sql, params)
            # io_bytes is always there (NaN when unknown); the node context only when given
            context = [c for c in _OPTIONAL_PROCESS if c != "io_bytes"]
            return frame.drop(columns=[c for c in context if frame[c].isna().all()])
        if spec == "node":
            _name_filter(where, params, "node", node)
            sql = f"SELECT node, ncpu, os FROM nodes {_where(where)} ORDER BY node"
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
                con.unregister(_BATCH)
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
        rows = (
            self._connection()
            .execute(
                'SELECT id, kind, entity, metric, epoch_us(start), epoch_us("end"), severity, '
                f"explanation, evidence, detector FROM findings {_where(where)}",
                params,
            )
            .fetchall()
        )
        return ordered(self._finding(row) for row in rows)

    def seen(self, finding_id: str) -> tuple[datetime, datetime] | None:
        """``(first_seen, last_seen)`` of a stored finding, or None if it is not stored."""
        row = _first_row(
            self._connection(),
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

    # -- runs and history -----------------------------------------------------------------------

    def begin_run(self, command: str) -> str:
        """Record the start of a run (e.g. one CLI command) and return its id."""
        run_id = uuid.uuid4().hex
        with self._transaction("begin run") as con:
            con.execute(
                "INSERT INTO runs VALUES (?, ?, NULL, ?, 'running', NULL)",
                [run_id, datetime.now(UTC), command],
            )
        return run_id

    def finish_run(self, run_id: str, *, status: str, n_findings: int) -> None:
        """Record how a run ended (``status`` such as ``"ok"`` or ``"failed"``)."""
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
        out = _frame(
            self._connection(),
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
        return _frame(
            self._connection(),
            f'SELECT node, time, kind, "text" FROM node_history {_where(where)} ORDER BY time, seq',
            params,
        )

    def stats(self) -> dict[str, int]:
        """Row count of each table in :data:`TABLES`."""
        con = self._connection()
        return {table: int(_scalar(con, f"SELECT count(*) FROM {table}")) for table in TABLES}

    def transaction(self, what: str) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        """A write transaction on the store's connection, for modules with their own tables.

        The collector uses it to commit samples and its restart cursor together. ``what`` names
        the work in the :class:`StoreError` raised if the database refuses it (then nothing of
        the transaction is stored).
        """
        return self._transaction(what)

    # -- internals ------------------------------------------------------------------------------

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            raise StoreError(f"{self.path}: store is closed; open it again")
        return self._con

    @contextmanager
    def _transaction(self, what: str) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connection()
        if self.read_only:
            raise StoreError(
                f"{self.path}: store opened read-only; open it without read_only to {what}"
            )
        with self._lock:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
            except BaseException as exc:
                _rollback(con)
                if isinstance(exc, duckdb.Error):
                    raise StoreError(
                        f"{self.path}: could not {what}, nothing was stored: {_first_line(exc)}"
                    ) from exc
                raise
            try:
                con.execute("COMMIT")
            except duckdb.Error as exc:
                _rollback(con)
                raise StoreError(
                    f"{self.path}: could not {what}, nothing was stored: {_first_line(exc)}"
                ) from exc

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
        except (duckdb.Error, ValueError) as exc:
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


_OPTIONAL_PROCESS: Final = ("io_bytes", "ncpu", "machine_cpu", "volume", "file_bytes", "os")
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
        con.unregister(_BATCH)


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
        con.unregister(_BATCH)
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


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # the transaction may already be gone with the failed statement
        logger.debug("rollback after a failed write raised", exc_info=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _open_message(path: Path, exc: duckdb.Error) -> str:
    text = _first_line(exc)
    if "lock" in text.lower():
        pid = _PID.search(text)
        holder = f" (PID {pid.group(1)})" if pid else ""
        return (
            f"{path}: store is in use by another process{holder}; "
            "wait for it to finish or stop it, then retry"
        )
    if "not a valid DuckDB database" in text:
        return f"{path}: not a DuckDB database file; move it aside or choose another store path"
    if "different configuration" in text:
        return (
            f"{path}: already open in this process with a different read_only setting; "
            "close it first"
        )
    return f"{path}: cannot open the store: {text}"
