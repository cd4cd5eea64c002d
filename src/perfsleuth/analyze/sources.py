"""Read every ``[[sources]]`` entry of a config into frames, one per contract.

Files are read with :func:`perfsleuth.sources.files.read_frame`, Prometheus with
:mod:`perfsleuth.sources.prometheus` (a trailing ``range`` ending now), stores with
:meth:`perfsleuth.store.Store.read_frame`. Sources of the same contract are joined into one frame.
Relative paths are resolved against ``base`` (the config file's folder).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from perfsleuth.config import Config, FileSource, PrometheusSource, StoreSource
from perfsleuth.errors import DataError, SourceError
from perfsleuth.frames import normalise

if TYPE_CHECKING:
    from perfsleuth.sources.prometheus import Prometheus
    from perfsleuth.store import Store

__all__ = ["Loaded", "SourceInfo", "load_sources", "source_label"]

log = logging.getLogger(__name__)

AnySource = FileSource | PrometheusSource | StoreSource


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What one source gave: its label, contract and rows, and the time span they cover."""

    label: str
    contract: str
    rows: int
    first: datetime | None
    last: datetime | None


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


def source_label(source: AnySource, *, base: Path | None = None, store: Path | None = None) -> str:
    """A short name of a source for messages, the report and the store."""
    if isinstance(source, FileSource):
        return str(_resolve(source.path, base))
    if isinstance(source, PrometheusSource):
        return f"{source.url} ({source.contract})"
    path = source.path if source.path is not None else store
    return f"store {_resolve(path, base) if path is not None else '?'} ({source.contract})"


def _resolve(path: Path, base: Path | None) -> Path:
    path = path.expanduser()
    if base is None or path.is_absolute():
        return path
    return base / path


def load_sources(
    config: Config,
    *,
    base: Path | None = None,
    now: datetime | None = None,
    store_path: Path | None = None,
    store: Store | None = None,
) -> Loaded:
    """Read every source of ``config``; raise on the first that fails.

    Parameters
    ----------
    base
        Folder relative paths are taken from (the config file's); the working folder if None.
    now
        End of Prometheus ranges (default: the clock).
    store_path
        The store a ``kind = "store"`` source without a path reads (default ``[store] path``).
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
    default_store = store_path if store_path is not None else _resolve(config.store.path, base)
    parts: dict[str, list[pd.DataFrame]] = {}
    labels: dict[str, list[str]] = {}
    infos: list[SourceInfo] = []
    for source in config.sources:
        label = source_label(source, base=base, store=default_store)
        if isinstance(source, FileSource):
            frame = _read_file(source, base)
        elif isinstance(source, PrometheusSource):
            frame = _read_prometheus(source, when, label)
        else:
            path = _resolve(source.path, base) if source.path is not None else default_store
            frame = _read_store(source, path, label, store)
        parts.setdefault(source.contract, []).append(frame)
        labels.setdefault(source.contract, []).append(label)
        infos.append(_info(label, source.contract, frame))
        log.info("%s: %d row(s) of %s", label, len(frame), source.contract)
    frames = {
        contract: _join(contract, pieces, labels[contract]) for contract, pieces in parts.items()
    }
    return Loaded({c: f for c, f in frames.items() if len(f)}, tuple(infos))


def _info(label: str, contract: str, frame: pd.DataFrame) -> SourceInfo:
    if len(frame) == 0 or "time" not in frame.columns:
        return SourceInfo(label, contract, len(frame), None, None)
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
    from perfsleuth.sources.files import read_frame, read_table

    path = _resolve(source.path, base)
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    frame = read_frame(
        path,
        source.contract,
        columns=source.columns or None,
        missing=source.missing,
        disorder=source.disorder,
        duplicates=source.duplicates,
    )
    if source.nodes is not None:
        if source.contract != "process":
            raise DataError(f"{path}: nodes = ... applies to process sources only")
        from perfsleuth.process.scanner import attach_nodes

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
            from perfsleuth.process.scanner import attach_nodes

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
