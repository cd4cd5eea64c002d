"""Prometheus HTTP API source: counter, process and workload frames from standard exporters.

:class:`Prometheus` calls ``/api/v1/query_range`` in chunks of at most 11,000 points per series
(Prometheus' limit), with a timeout per request and retries with exponential backoff on
connection errors and 5xx answers. The frame builders use what the standard exporters publish:

* :func:`counter_frame` — node-exporter counters as rates (CPU by mode in cores, disk and
  network bytes per second, memory gauges), ``entity`` = the ``instance`` label.
* :func:`process_frame` — process-exporter groups (per-PID series do not belong in
  Prometheus): ``name`` = ``groupname``, ``pid`` = 0, ``cpu`` in cores, ``rss_bytes``.
* :func:`workload_frame` — an HTTP request histogram or summary: per handler, the increase of
  ``<metric>_count`` over each window gives ``n[<handler>]`` and of ``<metric>_sum`` gives
  ``rt_sum[<handler>]`` (seconds).
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pandas as pd

from perfsleuth.errors import ConfigError, SourceError

__all__ = [
    "MAX_POINTS",
    "NODE_COUNTERS",
    "Prometheus",
    "Series",
    "counter_frame",
    "metric_frame",
    "process_frame",
    "workload_frame",
]

logger = logging.getLogger(__name__)

MAX_POINTS = 11_000
"""Prometheus refuses a range query that would return more points than this per series."""

NODE_COUNTERS: dict[str, str] = {
    "cpu.{mode}": "sum by (instance, mode) (rate(node_cpu_seconds_total[{w}]))",
    "disk.read_bytes": "sum by (instance) (rate(node_disk_read_bytes_total[{w}]))",
    "disk.write_bytes": "sum by (instance) (rate(node_disk_written_bytes_total[{w}]))",
    "net.receive_bytes": "sum by (instance) (rate(node_network_receive_bytes_total[{w}]))",
    "net.transmit_bytes": "sum by (instance) (rate(node_network_transmit_bytes_total[{w}]))",
    "mem.MemAvailable": "node_memory_MemAvailable_bytes",
    "mem.MemTotal": "node_memory_MemTotal_bytes",
    "load1": "node_load1",
}
"""Counter name (``{label}`` filled from the series) → PromQL (``{w}``: the rate window)."""


@dataclass(frozen=True, slots=True)
class Series:
    """One returned series: its labels, times (Unix seconds) and values."""

    labels: dict[str, str]
    times: np.ndarray
    values: np.ndarray


class Prometheus:
    """A client of one Prometheus server's HTTP API.

    Parameters
    ----------
    url
        Base URL, e.g. ``http://127.0.0.1:9090``.
    timeout
        Seconds allowed per HTTP request.
    retries
        Further attempts after a connection error, a timeout or a 5xx answer (a 4xx answer
        means the query is wrong and is not retried).
    backoff
        Seconds before the first retry; doubled before each next one.
    max_points
        Points per series and request; longer ranges are split into chunks of this many steps.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_points: int = MAX_POINTS,
    ) -> None:
        if not timeout > 0:
            raise ConfigError(f"timeout must be positive, got {timeout}")
        if retries < 0:
            raise ConfigError(f"retries must not be negative, got {retries}")
        if not backoff >= 0:
            raise ConfigError(f"backoff must not be negative, got {backoff}")
        if not 2 <= max_points <= MAX_POINTS:
            raise ConfigError(f"max_points must be in 2..{MAX_POINTS}, got {max_points}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_points = max_points

    def _get(self, path: str, params: dict[str, str]) -> object:
        address = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                with urllib.request.urlopen(address, timeout=self.timeout) as answer:
                    body = json.loads(answer.read())
            except urllib.error.HTTPError as exc:
                with exc:
                    text = exc.read().decode("utf-8", "replace")[:300]
                if exc.code < 500:  # the query is wrong: retrying will not help
                    raise SourceError(
                        f"{self.url}: {path} refused {params.get('query')!r}: {exc.code} {text}"
                    ) from exc
                last = f"HTTP {exc.code} {text}"
            except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
                last = str(getattr(exc, "reason", exc))
            except json.JSONDecodeError as exc:
                last = f"answer is not JSON ({exc})"
            else:
                if not isinstance(body, dict) or body.get("status") != "success":
                    raise SourceError(f"{self.url}: {path} failed: {body}")
                return body.get("data")
            logger.info("%s: attempt %d failed: %s", self.url, attempt + 1, last)
        what = f" {params['query']!r}" if "query" in params else ""
        raise SourceError(
            f"{self.url}: {path}{what} failed after {self.retries + 1} attempt(s): {last}"
        )

    def query_range(
        self, query: str, start: datetime, end: datetime, step: timedelta
    ) -> list[Series]:
        """Run a range query, in chunks of at most ``max_points`` steps; series merged.

        Stamps are ``start``, ``start + step``, ... up to ``end``, as Prometheus evaluates them.
        """
        seconds = step.total_seconds()
        if not seconds > 0:
            raise ConfigError(f"step must be positive, got {step}")
        if start.tzinfo is None or end.tzinfo is None:
            raise ConfigError("start and end must be timezone-aware")
        t0, t1 = start.timestamp(), end.timestamp()
        span = seconds * (self.max_points - 1)
        merged: dict[tuple[tuple[str, str], ...], tuple[list[float], list[float]]] = {}
        chunk_start = t0
        while chunk_start <= t1:
            chunk_end = min(chunk_start + span, t1)
            data = self._get(
                "/api/v1/query_range",
                {"query": query, "start": f"{chunk_start:.3f}", "end": f"{chunk_end:.3f}",
                 "step": f"{seconds:g}"},
            )  # fmt: skip
            results = data.get("result", []) if isinstance(data, dict) else []
            for item in results:
                key = tuple(sorted(item.get("metric", {}).items()))
                times, values = merged.setdefault(key, ([], []))
                for stamp, value in item.get("values", []):
                    if times and float(stamp) <= times[-1]:
                        continue  # chunk edges share a point
                    times.append(float(stamp))
                    values.append(float(value))
            chunk_start = chunk_end + seconds
        return [
            Series(dict(key), np.asarray(times), np.asarray(values))
            for key, (times, values) in merged.items()
        ]


def _stamps(times: np.ndarray) -> pd.DatetimeIndex:
    # Prometheus stamps are float seconds with millisecond precision: round before converting
    millis = np.round(np.asarray(times, dtype=np.float64) * 1000.0).astype(np.int64)
    return pd.DatetimeIndex(pd.to_datetime(millis, unit="ms", utc=True))


class _Labels(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _long(series: list[Series], name: str, column: str) -> pd.DataFrame:
    frames = []
    for s in series:
        keep = np.isfinite(s.values)
        if not keep.any():
            continue
        frames.append(
            pd.DataFrame(
                {
                    "time": _stamps(s.times[keep]),
                    "entity": s.labels.get("instance", ""),
                    column: name.format_map(_Labels(s.labels)),
                    "value": s.values[keep],
                }
            )
        )
    if not frames:
        return pd.DataFrame(
            {
                "time": pd.Series([], dtype="datetime64[ns, UTC]"),
                "entity": pd.Series([], dtype=str),
                column: pd.Series([], dtype=str),
                "value": pd.Series([], dtype=np.float64),
            }
        )
    return pd.concat(frames, ignore_index=True)


def _window(step: timedelta) -> str:
    # rate() needs at least two scrapes in its window; four steps is a safe margin
    return f"{max(4, math.ceil(4 * step.total_seconds()))}s"


def _frame_of(
    client: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    queries: Mapping[str, str],
    column: str,
) -> pd.DataFrame:
    window = _window(step)
    parts = [
        _long(client.query_range(query.replace("{w}", window), start, end, step), name, column)
        for name, query in queries.items()
    ]
    parts = [part for part in parts if len(part)]
    if not parts:
        raise SourceError(
            f"{client.url}: no series in range for any of {', '.join(map(repr, queries))}"
        )
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["entity", column, "time"], ignore_index=True)


def counter_frame(
    client: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    queries: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Node-exporter counters as a counter frame (``time, entity, counter, value``).

    ``queries`` maps a counter name (``{label}`` is filled from each series' labels) to PromQL
    (``{w}`` is replaced by a rate window of four steps); :data:`NODE_COUNTERS` by default.
    ``entity`` is the series' ``instance`` label. Series with no sample in range are left out;
    no series at all is a :class:`SourceError`.
    """
    return _frame_of(client, start, end, step, NODE_COUNTERS if queries is None else queries,
                     "counter")  # fmt: skip


def metric_frame(
    client: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    queries: Mapping[str, str],
) -> pd.DataFrame:
    """Any PromQL series as a metric frame (``time, entity, metric, value``).

    Same conventions as :func:`counter_frame`: metric name → PromQL, ``{label}`` in the name
    and ``{w}`` in the query are filled in, ``entity`` is the ``instance`` label.
    """
    return _frame_of(client, start, end, step, queries, "metric")


def process_frame(
    client: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    *,
    selector: str = "",
) -> pd.DataFrame:
    """process-exporter groups as a process frame (one row per group and step).

    ``node`` is the exporter's ``instance`` label, ``name`` the ``groupname``, ``pid`` 0 and
    ``user`` ``"group"`` (groups have neither); ``cpu`` is cores used (user + system, rate over
    four steps) and ``rss_bytes`` the group's resident memory. ``selector`` adds label
    matchers (``job="process"``).
    """
    window = _window(step)
    extra = f",{selector}" if selector else ""
    cpu = client.query_range(
        "sum by (instance, groupname) "
        f"(rate(namedprocess_namegroup_cpu_seconds_total{{{selector}}}[{window}]))",
        start,
        end,
        step,
    )
    rss = client.query_range(
        "sum by (instance, groupname) "
        f'(namedprocess_namegroup_memory_bytes{{memtype="resident"{extra}}})',
        start,
        end,
        step,
    )

    def frame(series: list[Series], column: str) -> pd.DataFrame:
        rows = [
            pd.DataFrame(
                {
                    "time": _stamps(s.times),
                    "node": s.labels.get("instance", ""),
                    "name": s.labels.get("groupname", ""),
                    column: s.values,
                }
            )
            for s in series
            if len(s.times)
        ]
        if not rows:
            raise SourceError(
                f"{client.url}: no process-exporter series (namedprocess_namegroup_*) in range"
            )
        return pd.concat(rows, ignore_index=True)

    out = frame(cpu, "cpu").merge(frame(rss, "rss_bytes"), on=["time", "node", "name"])
    out = out[np.isfinite(out["cpu"]) & np.isfinite(out["rss_bytes"])]
    out.insert(2, "pid", 0)
    out.insert(4, "user", "group")
    return out.sort_values(["node", "name", "time"], ignore_index=True)


def _increases(values: np.ndarray) -> np.ndarray:
    """Increase between consecutive samples of a counter; a drop is a reset (from zero)."""
    step = np.diff(values)
    return np.where(step < 0, values[1:], step)


def workload_frame(
    client: Prometheus,
    metric: str,
    start: datetime,
    end: datetime,
    step: timedelta,
    *,
    label: str = "handler",
    selector: str = "",
) -> pd.DataFrame:
    """Per-window request counts and summed response times per ``label`` value.

    ``metric`` is the histogram's (or summary's) base name, e.g.
    ``http_request_duration_seconds``; ``selector`` adds label matchers (``job="web"``).

    The raw ``_count`` and ``_sum`` series are read at every step and differenced here, per
    series (a decrease is a counter reset), then summed per ``label`` value: a window
    ``[t, t + step)`` gets exactly the requests counted between the values Prometheus holds at
    ``t`` and ``t + step`` — no ``increase()`` extrapolation, integer counts. Windows where a
    type has no series are 0 for that type. Raises :class:`SourceError` when the metric has no
    series by ``label`` in range.
    """
    match = f"{{{selector}}}" if selector else ""
    seconds = step.total_seconds()
    columns: dict[str, pd.Series] = {}
    for prefix, suffix in (("n", "_count"), ("rt_sum", "_sum")):
        for s in client.query_range(f"{metric}{suffix}{match}", start, end, step):
            name = s.labels.get(label, "")
            keep = np.isfinite(s.values)
            times, values = s.times[keep], s.values[keep]
            if not name or len(times) < 2:
                continue
            # only consecutive stamps one step apart make a window (a series can have holes)
            whole = np.isclose(np.diff(times), seconds, rtol=0.0, atol=1e-3)
            increase = pd.Series(_increases(values)[whole], index=_stamps(times[:-1][whole]))
            column = f"{prefix}[{name}]"
            columns[column] = (
                increase if column not in columns else columns[column].add(increase, fill_value=0)
            )
    if not columns:
        raise SourceError(
            f"{client.url}: no {metric}_count/_sum series by {label!r} with two or more points "
            "in range"
        )
    table = pd.DataFrame(columns).sort_index().fillna(0.0)
    out = table.reset_index(names="time")
    out.insert(1, "window_s", seconds)
    ordered = ["time", "window_s"]
    names = sorted({c.split("[", 1)[1][:-1] for c in columns})
    for name in names:
        ordered += [c for c in (f"n[{name}]", f"rt_sum[{name}]") if c in out.columns]
    return out[ordered]
