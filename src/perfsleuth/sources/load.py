"""Read sources into frames: one function per kind of source, one entry point.

:func:`read_source` reads one source (a :mod:`perfsleuth.sources.specs` model: a file, a
Prometheus server, a store, web logs, pgbench logs, transaction tables) into a normalised frame
of its contract; :func:`load` reads several and joins those of the same contract. Relative
paths are resolved against ``base`` (the config file's folder). Every command and the config
read their inputs through here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, SourceError
from perfsleuth.frames import normalise
from perfsleuth.progress import PROGRESS
from perfsleuth.sources.files import input_name, is_stdin
from perfsleuth.sources.specs import (
    AggregatedSource,
    FileSource,
    PerfmonSource,
    PgbenchSource,
    PidstatSource,
    PrometheusSource,
    SarSource,
    Source,
    StoreSource,
    TransactionsSource,
    WeblogSource,
)

if TYPE_CHECKING:
    from perfsleuth.sources.prometheus import Prometheus
    from perfsleuth.sources.transactions import Rejects, Transactions
    from perfsleuth.store import Store

__all__ = ["Loaded", "SourceInfo", "frames_summary", "load", "read_source", "source_label"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What one source gave: its label, contract and rows, and the time span they cover.

    ``note`` is the reader's own account (files, lines, transactions per type) and ``rejects``
    the input lines it left out, when the source is a log.
    """

    label: str
    contract: str
    rows: int
    first: datetime | None
    last: datetime | None
    note: str = ""
    rejects: Rejects | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class Loaded:
    """Frames by contract (normalised), and what each source contributed."""

    frames: dict[str, pd.DataFrame]
    sources: tuple[SourceInfo, ...]

    @property
    def newest(self) -> datetime | None:
        """The newest sample time over every source (None when nothing was read)."""
        lasts = [s.last for s in self.sources if s.last is not None]
        return max(lasts) if lasts else None

    @property
    def oldest(self) -> datetime | None:
        """The oldest sample time over every source (None when nothing was read)."""
        firsts = [s.first for s in self.sources if s.first is not None]
        return min(firsts) if firsts else None

    @property
    def rejected(self) -> dict[str, Rejects]:
        """Input lines left out, by source label (for the report's data coverage)."""
        return {s.label: s.rejects for s in self.sources if s.rejects and s.rejects.count}


def source_label(source: Source, *, base: Path | None = None, store: Path | None = None) -> str:
    """A short name of a source for messages, the report and the store."""
    if isinstance(source, PrometheusSource):
        return f"{source.url} ({source.contract})"
    if isinstance(source, StoreSource):
        path = source.path if source.path is not None else store
        return f"store {_resolve(path, base) if path is not None else '?'} ({source.contract})"
    if isinstance(source, WeblogSource | PgbenchSource):
        return ", ".join(input_name(_resolve(p, base)) for p in source.paths)
    return input_name(_resolve(source.path, base))


def _resolve(path: Path, base: Path | None) -> Path:
    path = path.expanduser()
    if base is None or path.is_absolute() or is_stdin(path):
        return path
    return base / path


def load(
    sources: Sequence[Source],
    *,
    base: Path | None = None,
    now: datetime | None = None,
    store_path: Path | None = None,
    store: Store | None = None,
) -> Loaded:
    """Read every source; those of the same contract are joined into one frame.

    Parameters
    ----------
    base
        Folder relative paths are taken from (the config file's); the working folder if None.
    now
        End of Prometheus ranges (default: the clock).
    store_path
        The store a ``kind = "store"`` source without a path reads.
    store
        An open store: a store source of the same file reads through it (DuckDB will not open
        a file twice in one process with different settings).

    Raises
    ------
    SourceError
        A source could not be read (a file is missing, Prometheus does not answer, ...).
    DataError
        A source's data break their contract.
    """
    when = (now or datetime.now(UTC)).astimezone(UTC)
    parts: dict[str, list[pd.DataFrame]] = {}
    labels: dict[str, list[str]] = {}
    infos: list[SourceInfo] = []
    for source in sources:
        frame, info = read_source(source, base=base, now=when, store_path=store_path, store=store)
        parts.setdefault(info.contract, []).append(frame)
        labels.setdefault(info.contract, []).append(info.label)
        infos.append(info)
        log.info("%s: %d row(s) of %s", info.label, len(frame), info.contract)
        if not len(frame) and (getattr(source, "since", None) or getattr(source, "until", None)):
            log.warning("%s: no rows between since and until", info.label)
    frames = {
        contract: _join(contract, pieces, labels[contract]) for contract, pieces in parts.items()
    }
    return Loaded({c: f for c, f in frames.items() if len(f)}, tuple(infos))


def read_source(
    source: Source,
    *,
    base: Path | None = None,
    now: datetime | None = None,
    store_path: Path | None = None,
    store: Store | None = None,
) -> tuple[pd.DataFrame, SourceInfo]:
    """One source as a normalised frame of its contract, and what it gave."""
    label = source_label(source, base=base, store=store_path)
    # progress (a terminal sees it by default): big files take a while
    log.info("reading %s (%s) ...", label, source.kind, extra=PROGRESS)
    note, rejects = "", None
    if isinstance(source, FileSource):
        frame = _read_file(source, base)
    elif isinstance(source, PrometheusSource):
        when = (now or datetime.now(UTC)).astimezone(UTC)
        frame = _read_prometheus(source, when, label)
    elif isinstance(source, StoreSource):
        path = _resolve(source.path, base) if source.path is not None else store_path
        if path is None:
            raise SourceError(f"{label}: which store? give its path")
        frame = _read_store(source, path, label, store)
    elif isinstance(source, AggregatedSource):
        frame = _read_aggregated(source, base)
    elif isinstance(source, SarSource | PidstatSource | PerfmonSource):
        frame = _read_system_log(source, base)
    else:
        transactions = _read_transactions(source, base).between(source.since, source.until)
        note, rejects = transactions.summary(), transactions.rejects
        frame = transactions.workload(source.window)
    logs = AggregatedSource | WeblogSource | PgbenchSource | TransactionsSource
    if isinstance(source, logs) and (source.cpu is not None or source.cpu_url is not None):
        frame = _attach_cpu(frame, source, base, store)
    return frame, _info(label, source.contract, frame, note, rejects)


def _read_transactions(
    source: WeblogSource | PgbenchSource | TransactionsSource, base: Path | None
) -> Transactions:
    from perfsleuth.sources import pgbench, transactions, weblog

    if isinstance(source, WeblogSource):
        rules = weblog.load_rules(_resolve(source.rules, base)) if source.rules else None
        return weblog.read_weblog(
            [_resolve(p, base) for p in source.paths],
            rules=rules,
            latency_unit=source.unit,
            strict=source.strict,
        )
    if isinstance(source, PgbenchSource):
        paths = [_resolve(p, base) for p in source.paths]
        return pgbench.read_pgbench(
            paths[0] if len(paths) == 1 else paths,
            scripts=source.scripts or None,
            strict=source.strict,
        )
    return transactions.read_transactions(
        _resolve(source.path, base),
        columns=source.columns or None,
        unit=source.unit,
        strict=source.strict,
        time_unit=source.time_unit,
        tz=source.tz,
    )


def _read_system_log(
    source: SarSource | PidstatSource | PerfmonSource, base: Path | None
) -> pd.DataFrame:
    """Data other tools already collect: sar, pidstat, Windows perfmon."""
    path = _resolve(source.path, base)
    if isinstance(source, SarSource):
        from perfsleuth.sources.sysstat import read_sar

        return read_sar(
            path,
            missing=source.missing,
            disorder=source.disorder,
            duplicates=source.duplicates,
            since=source.since,
            until=source.until,
        )
    if isinstance(source, PidstatSource):
        from perfsleuth.sources.sysstat import read_pidstat

        return read_pidstat(
            path,
            node=source.node,
            tz=source.tz,
            missing=source.missing,
            disorder=source.disorder,
            duplicates=source.duplicates,
            since=source.since,
            until=source.until,
        )
    from perfsleuth.sources.perfmon import perfmon_processes, read_perfmon

    read = read_perfmon if source.contract == "counter" else perfmon_processes
    return read(
        path,
        missing=source.missing,
        disorder=source.disorder,
        duplicates=source.duplicates,
        since=source.since,
        until=source.until,
    )


def _read_aggregated(source: AggregatedSource, base: Path | None) -> pd.DataFrame:
    from perfsleuth.sources.transactions import read_aggregated

    return read_aggregated(
        _resolve(source.path, base),
        columns=source.columns or None,
        window=source.window,
        unit=source.unit,
        time_unit=source.time_unit,
        tz=source.tz,
        since=source.since,
        until=source.until,
    )


def _attach_cpu(
    frame: pd.DataFrame,
    source: AggregatedSource | WeblogSource | PgbenchSource | TransactionsSource,
    base: Path | None,
    open_store: Store | None,
) -> pd.DataFrame:
    """The windows' CPU: a CPU table, or the CPU of the processes ``cpu_of`` names (from a
    store, a process table or process-exporter), aligned to the windows by time overlap."""
    from perfsleuth.sources.cpu import attach_cpu, prometheus_service_cpu, read_cpu, service_cpu

    if len(frame) == 0:
        return frame
    if source.cpu_url is not None:
        width = float(frame["window_s"].min())
        cpu = prometheus_service_cpu(
            source.cpu_url,
            source.cpu_of,
            frame["time"].min().to_pydatetime(),
            (frame["time"].max() + pd.Timedelta(seconds=width)).to_pydatetime(),
            timedelta(seconds=width),
        )
        where = source.cpu_url
    else:
        path = _resolve(source.cpu, base)  # type: ignore[arg-type]
        where = str(path)
        if not source.cpu_of:
            cpu = read_cpu(path, unit=source.cpu_unit)
        else:
            if path.suffix.lower() in (".duckdb", ".db"):
                spec = StoreSource(kind="store", path=path, contract="process")
                processes = _read_store(spec, path, where, open_store)
            else:
                processes = _read_file(FileSource(path=path, contract="process"), None)
            cpu = service_cpu(processes, source.cpu_of, source=where)
    before = len(frame)
    out = attach_cpu(frame, cpu)
    if len(out) < before:
        log.warning(
            "%d window(s) not wholly covered by the CPU samples of %s left out",
            before - len(out),
            where,
        )
    return out


def _info(
    label: str, contract: str, frame: pd.DataFrame, note: str, rejects: Rejects | None
) -> SourceInfo:
    if len(frame) == 0 or "time" not in frame.columns:
        return SourceInfo(label, contract, len(frame), None, None, note, rejects)
    times = frame["time"]
    first, last = times.min(), times.max()
    if contract == "workload" and "window_s" in frame.columns:
        # a window's samples run to its end
        last = last + pd.to_timedelta(float(frame["window_s"].iloc[-1]), unit="s")
    # Prometheus stamps are float seconds: drop the nanosecond noise datetime cannot hold
    return SourceInfo(
        label,
        contract,
        len(frame),
        first.floor("us").to_pydatetime(),
        last.floor("us").to_pydatetime(),
        note,
        rejects,
    )


def _join(contract: str, pieces: Sequence[pd.DataFrame], labels: Sequence[str]) -> pd.DataFrame:
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return pd.DataFrame()
    if len(pieces) == 1:
        return pieces[0]
    if contract == "workload":
        raise DataError(
            f"{' and '.join(labels)}: more than one workload source; a run reads one workload"
        )
    return normalise(
        pd.concat(pieces, ignore_index=True), contract, source=", ".join(labels), disorder="sort"
    )


def _read_file(source: FileSource, base: Path | None) -> pd.DataFrame:
    from perfsleuth.sources.files import read_frame, read_metric, read_table

    path = _resolve(source.path, base)
    if not is_stdin(path) and not path.exists():
        raise SourceError(f"{path}: no such file")
    if source.nodes is not None and source.contract != "process":
        raise DataError(f"{path}: nodes = ... applies to process sources only")
    if source.contract == "metric" or (source.contract == "counter" and source.values):
        frame = read_metric(
            path,
            columns=source.columns or None,
            values=source.values,
            time_column=source.time_column,
            entity=source.entity,
            unit=source.unit,
            missing=source.missing,
            disorder=source.disorder,
            duplicates=source.duplicates,
            time_unit=source.time_unit,
            tz=source.tz,
            since=source.since,
            until=source.until,
        )
        if source.contract == "metric":
            return frame
        # a wide counter file: its columns are counters, not metrics
        return normalise(frame.rename(columns={"metric": "counter"}), "counter", source=str(path))
    frame = read_frame(
        path,
        source.contract,
        columns=source.columns or None,
        missing=source.missing,
        disorder=source.disorder,
        duplicates=source.duplicates,
        time_unit=source.time_unit,
        tz=source.tz,
        since=source.since,
        until=source.until,
    )
    if source.nodes is not None:
        from perfsleuth.processes.scanner import attach_nodes

        nodes = _resolve(source.nodes, base)
        table, _ = read_table(nodes)
        frame = attach_nodes(frame, table, source=str(nodes))
    return frame


def _read_prometheus(source: PrometheusSource, now: datetime, label: str) -> pd.DataFrame:
    from perfsleuth.sources import prometheus as prom

    client = prom.Prometheus(
        source.url, timeout=source.timeout.total_seconds(), retries=source.retries
    )
    # On the step grid (as Grafana does): the same samples come back at the same times on every
    # check, so stored rows are replaced, not duplicated, and refits see the same points.
    step = source.step.total_seconds()
    now = datetime.fromtimestamp(math.floor(now.timestamp() / step) * step, tz=UTC)
    start = now - math.floor(source.range.total_seconds() / step) * source.step
    if source.contract == "metric":
        frame = _metric_frame(client, source, start, now)
    elif source.contract == "counter":
        queries = dict(prom.NODE_COUNTERS) if source.preset == "node" else {}
        queries.update(source.queries)
        frame = prom.counter_frame(client, start, now, source.step, queries)
    elif source.contract == "process":
        frame = prom.process_frame(client, start, now, source.step, selector=source.selector)
        if source.node_context and len(frame):
            frame = _node_context(client, frame, start, now, source.step, label)
    else:
        frame = prom.workload_frame(
            client,
            source.metric,
            start,
            now,
            source.step,
            label=source.label,
            selector=source.selector,
        )
    if len(frame) == 0:
        log.warning("%s: no samples in the last %s", label, source.range)
        return frame
    return normalise(frame, source.contract, source=label, disorder="sort", missing="drop")


def _metric_frame(
    client: Prometheus, source: PrometheusSource, start: datetime, end: datetime
) -> pd.DataFrame:
    rows: list[pd.DataFrame] = []
    window = f"{max(4, math.ceil(4 * source.step.total_seconds()))}s"  # as counter_frame's {w}
    for name, query in source.queries.items():
        for series in client.query_range(query.replace("{w}", window), start, end, source.step):
            labels = series.labels
            try:
                metric = name.format_map(_Labels(labels)) if "{" in name else name
            except ValueError as exc:
                raise DataError(f"{source.url}: query name {name!r}: {exc}") from None
            entity = labels.get(source.entity_label) or labels.get("job") or "prometheus"
            rows.append(
                pd.DataFrame(
                    {
                        "time": pd.to_datetime(
                            np.round(series.times * 1000).astype(np.int64), unit="ms", utc=True
                        ),
                        "entity": entity,
                        "metric": metric,
                        "value": series.values,
                        "unit": source.unit,
                    }
                )
            )
    if not rows:
        return pd.DataFrame(columns=["time", "entity", "metric", "value", "unit"])
    return pd.concat(rows, ignore_index=True)


def _host(instance: str) -> str:
    return instance.rsplit(":", 1)[0] if ":" in instance else instance


def _node_context(
    client: Prometheus,
    frame: pd.DataFrame,
    start: datetime,
    end: datetime,
    step: timedelta,
    label: str,
) -> pd.DataFrame:
    """Join ``ncpu``, ``os`` and ``machine_cpu`` from node-exporter on the process' host.

    process-exporter and node-exporter are different scrape targets (``instance`` differs by
    port), so they are matched by host. Without node-exporter the frame is returned as is.
    """
    window = f"{max(4, math.ceil(4 * step.total_seconds()))}s"
    cores = client.query_range(
        'count by (instance) (node_cpu_seconds_total{mode="idle"})', start, end, step
    )
    busy = client.query_range(
        f'sum by (instance) (rate(node_cpu_seconds_total{{mode!="idle"}}[{window}]))',
        start,
        end,
        step,
    )
    ncpu = {
        _host(s.labels.get("instance", "")): float(s.values[-1]) for s in cores if len(s.values)
    }
    hosts = frame["node"].astype(str).map(_host)
    if not ncpu or not hosts.isin(list(ncpu)).all():
        log.info("%s: no node-exporter CPU count for every host; ncpu not added", label)
        return frame
    out = frame.copy()
    out["ncpu"] = hosts.map(ncpu)
    out["os"] = "Linux"
    rows = [
        pd.DataFrame(
            {
                "_host": _host(s.labels.get("instance", "")),
                "_ms": np.round(s.times * 1000).astype(np.int64),
                "machine_cpu": s.values,
            }
        )
        for s in busy
    ]
    if rows:
        machine = pd.concat(rows, ignore_index=True).drop_duplicates(["_host", "_ms"])
        out["_host"] = hosts
        out["_ms"] = (out["time"].astype("int64") // 1_000_000).round(-1)
        machine["_ms"] = machine["_ms"].round(-1)
        out = out.merge(machine, on=["_host", "_ms"], how="left").drop(columns=["_host", "_ms"])
        if out["machine_cpu"].isna().any():
            out = out.drop(columns=["machine_cpu"])  # partial: better none than holes
    return out


class _Labels(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _read_store(
    source: StoreSource, path: Path, label: str, open_store: Store | None
) -> pd.DataFrame:
    from perfsleuth.store import Store

    if open_store is not None and _same_file(open_store.path, path):
        return _from_store(source, open_store, label)
    if not path.exists():
        raise SourceError(f"{path}: no such store")
    with Store(path, read_only=True) as db:
        return _from_store(source, db, label)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _from_store(source: StoreSource, db: Store, label: str) -> pd.DataFrame:
    if source.contract == "workload":
        frame = db.read_frame("workload", source=source.source)
    else:
        frame = db.read_frame(source.contract)
    if source.contract == "process" and len(frame):
        nodes = db.read_frame("node")
        if len(nodes):
            from perfsleuth.processes.scanner import attach_nodes

            frame = attach_nodes(frame, nodes, source=label)
    if len(frame) and source.range is not None:
        newest = frame["time"].max()
        frame = frame[frame["time"] > newest - pd.Timedelta(source.range)]
    if len(frame) == 0:
        return frame
    return normalise(frame.reset_index(drop=True), source.contract, source=label)


def frames_summary(frames: Mapping[str, pd.DataFrame]) -> str:
    """``"metric 1,200 rows, workload 864 rows"``: for log lines."""
    return ", ".join(f"{c} {len(f):,} rows" for c, f in sorted(frames.items())) or "no data"
