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

import json
import logging
import math
import time
import urllib.error
import urllib.parse
import urllib.request
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
    """A client of one Prometheus server's HTTP API."""

    def __init__(
        self, url: str, *, timeout: float = 10.0, retries: int = 3, backoff: float = 0.5
    ) -> None:
        if not timeout > 0:
            raise ConfigError(f"timeout must be positive, got {timeout}")
        if retries < 0:
            raise ConfigError(f"retries must not be negative, got {retries}")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

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
                text = exc.read().decode("utf-8", "replace")[:300]
                if exc.code < 500:  # the query is wrong: retrying will not help
                    raise SourceError(
                        f"{self.url}: {path} refused {params.get('query')!r}: {exc.code} {text}"
                    ) from exc
                last = f"HTTP {exc.code} {text}"
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                last = str(getattr(exc, "reason", exc))
            except json.JSONDecodeError as exc:
                last = f"answer is not JSON ({exc})"
            else:
                if not isinstance(body, dict) or body.get("status") != "success":
                    raise SourceError(f"{self.url}: {path} failed: {body}")
                return body.get("data")
            logger.info("%s: attempt %d failed: %s", self.url, attempt + 1, last)
        raise SourceError(
            f"{self.url}: {path} failed after {self.retries + 1} attempt(s): {last}"
        )

    def query_range(
        self, query: str, start: datetime, end: datetime, step: timedelta
    ) -> list[Series]:
        """Run a range query, in chunks of at most :data:`MAX_POINTS` steps; series merged."""
        seconds = step.total_seconds()
        if not seconds > 0:
            raise ConfigError(f"step must be positive, got {step}")
        if start.tzinfo is None or end.tzinfo is None:
            raise ConfigError("start and end must be timezone-aware")
        t0, t1 = start.timestamp(), end.timestamp()
        span = seconds * (MAX_POINTS - 1)
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


def _long(series: list[Series], name: str) -> pd.DataFrame:
    frames = []
    for s in series:
        keep = np.isfinite(s.values)
        frames.append(
            pd.DataFrame(
                {
                    "time": pd.to_datetime(s.times[keep], unit="s", utc=True),
                    "entity": s.labels.get("instance", ""),
                    "name": name.format(**s.labels) if "{" in name else name,
                    "value": s.values[keep],
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["time", "entity", "name", "value"])
    return pd.concat(frames, ignore_index=True)


def _window(step: timedelta) -> str:
    # rate() needs at least two scrapes in its window; four steps is a safe margin
    return f"{max(4, math.ceil(4 * step.total_seconds()))}s"


def counter_frame(
    client: Prometheus,
    start: datetime,
    end: datetime,
    step: timedelta,
    queries: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Node-exporter counters as a counter frame (``time, entity, counter, value``)."""
    chosen = NODE_COUNTERS if queries is None else queries
    window = _window(step)
    parts = []
    for name, query in chosen.items():
        series = client.query_range(query.replace("{w}", window), start, end, step)
        parts.append(_long(series, name))
    out = pd.concat(parts, ignore_index=True).rename(columns={"name": "counter"})
    return out.sort_values(["entity", "counter", "time"], ignore_index=True)


def process_frame(
    client: Prometheus, start: datetime, end: datetime, step: timedelta
) -> pd.DataFrame:
    """process-exporter groups as a process frame (one row per group and step)."""
    window = _window(step)
    cpu = client.query_range(
        "sum by (instance, groupname) "
        f"(rate(namedprocess_namegroup_cpu_seconds_total[{window}]))",
        start,
        end,
        step,
    )
    rss = client.query_range(
        'sum by (instance, groupname) (namedprocess_namegroup_memory_bytes{memtype="resident"})',
        start,
        end,
        step,
    )

    def frame(series: list[Series], column: str) -> pd.DataFrame:
        rows = [
            pd.DataFrame(
                {
                    "time": pd.to_datetime(s.times, unit="s", utc=True),
                    "node": s.labels.get("instance", ""),
                    "name": s.labels.get("groupname", ""),
                    column: s.values,
                }
            )
            for s in series
        ]
        if not rows:
            return pd.DataFrame(columns=["time", "node", "name", column])
        return pd.concat(rows, ignore_index=True)

    out = frame(cpu, "cpu").merge(frame(rss, "rss_bytes"), on=["time", "node", "name"])
    out = out[np.isfinite(out["cpu"]) & np.isfinite(out["rss_bytes"])]
    out.insert(2, "pid", 0)
    out.insert(4, "user", "group")
    return out.sort_values(["node", "name", "time"], ignore_index=True)


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
    """
    seconds = f"{step.total_seconds():g}s"
    match = f"{{{selector}}}" if selector else ""
    counts = client.query_range(
        f"sum by ({label}) (increase({metric}_count{match}[{seconds}]))", start, end, step
    )
    sums = client.query_range(
        f"sum by ({label}) (increase({metric}_sum{match}[{seconds}]))", start, end, step
    )
    columns: dict[str, pd.Series] = {}
    for prefix, series in (("n", counts), ("rt_sum", sums)):
        for s in series:
            name = s.labels.get(label, "")
            if not name:
                continue
            index = pd.to_datetime(s.times, unit="s", utc=True)
            columns[f"{prefix}[{name}]"] = pd.Series(s.values, index=index)
    if not columns:
        raise SourceError(f"{client.url}: no {metric}_count/_sum series by {label} in range")
    table = pd.DataFrame(columns).sort_index()
    table = table.fillna(0.0)
    # increase() over [t - step, t]: the window starts one step before the stamp
    out = table.reset_index(names="time")
    out["time"] = out["time"] - step
    out.insert(1, "window_s", step.total_seconds())
    ordered = ["time", "window_s"]
    names = sorted({c.split("[", 1)[1][:-1] for c in columns})
    for name in names:
        ordered += [c for c in (f"n[{name}]", f"rt_sum[{name}]") if c in out.columns]
    return out[ordered]
