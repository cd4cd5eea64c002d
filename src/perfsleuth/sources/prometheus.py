"""Prometheus HTTP API source: counter, process and workload frames from standard exporters.

:class:`Prometheus` calls ``/api/v1/query_range`` in chunks of at most 11,000 points per series
(Prometheus' limit), with a timeout per request and a bounded number of retries with
exponential backoff (capped) on connection errors and 5xx answers. An answer is read in pieces
up to a size limit and checked before it is used: an endless, binary or malformed answer is one
:class:`~perfsleuth.errors.SourceError`, never a memory blow-up or a traceback. Credentials in
the URL (``http://user:password@host``) are sent as HTTP basic auth and never shown. The frame
builders use what the standard exporters publish:

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
from typing import Any, Final

import numpy as np
import pandas as pd

from perfsleuth.errors import ConfigError, SourceError
from perfsleuth.urls import basic_auth, redact

__all__ = [
    "MAX_BACKOFF",
    "MAX_BYTES",
    "MAX_POINTS",
    "MAX_RETRIES",
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

MAX_RETRIES: Final = 10
"""Most retries of one request (each after a wait twice the last, up to :data:`MAX_BACKOFF`)."""

MAX_BACKOFF: Final = 30.0
"""Longest wait between two attempts, in seconds."""

MAX_TIMEOUT: Final = 600.0
"""Longest time allowed for one request, in seconds."""

MAX_BYTES: Final = 64 * 2**20
"""Default limit on one answer's size (11,000 points of a few hundred series fit well)."""

_PIECE: Final = 1 << 16

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
        Base URL, e.g. ``http://127.0.0.1:9090``; ``user:password@`` in it is sent as HTTP
        basic auth (and shown as ``***``).
    timeout
        Seconds allowed per HTTP request, the answer's whole body included (at most
        :data:`MAX_TIMEOUT`).
    retries
        Further attempts after a connection error, a timeout, a malformed answer or a 5xx
        answer (a 4xx answer means the query is wrong and is not retried); at most
        :data:`MAX_RETRIES`.
    backoff
        Seconds before the first retry; doubled before each next one, up to
        :data:`MAX_BACKOFF`.
    max_points
        Points per series and request; longer ranges are split into chunks of this many steps.
    max_bytes
        Largest answer read; a larger one is refused (not retried: it would be as large again).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_points: int = MAX_POINTS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        if not 0 < timeout <= MAX_TIMEOUT:
            raise ConfigError(f"timeout must be in (0, {MAX_TIMEOUT:g}] seconds, got {timeout}")
        if not 0 <= retries <= MAX_RETRIES:
            raise ConfigError(f"retries must be in 0..{MAX_RETRIES}, got {retries}")
        if not 0 <= backoff <= MAX_BACKOFF:
            raise ConfigError(f"backoff must be in 0..{MAX_BACKOFF:g} seconds, got {backoff}")
        if not 2 <= max_points <= MAX_POINTS:
            raise ConfigError(f"max_points must be in 2..{MAX_POINTS}, got {max_points}")
        if max_bytes < 1024:
            raise ConfigError(f"max_bytes must be at least 1024, got {max_bytes}")
        bare, self._auth = basic_auth(url)
        self._base = bare.rstrip("/")
        self.url = redact(self._base)  # as messages show it: no credentials
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_points = max_points
        self.max_bytes = max_bytes

    def _get(self, path: str, params: dict[str, str]) -> object:
        request = urllib.request.Request(
            f"{self._base}{path}?{urllib.parse.urlencode(params)}",
            headers={"Accept": "application/json", "User-Agent": "perfsleuth"}
            | ({"Authorization": self._auth} if self._auth else {}),
        )
        query = f" {params['query']!r}" if "query" in params else ""
        what = f"{self.url}: {path}{query}"
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(self.backoff * 2 ** (attempt - 1), MAX_BACKOFF))
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                    raw = self._body(answer, what)
                body = json.loads(raw.decode("utf-8"))
            except SourceError:  # too large: it would be as large again
                raise
            except urllib.error.HTTPError as exc:
                with exc:
                    text = exc.read(300).decode("utf-8", "replace")
                if exc.code < 500:  # the query is wrong: retrying will not help
                    raise SourceError(
                        f"{self.url}: {path} refused{query}: {exc.code} {_shown(text)}"
                    ) from exc
                last = f"HTTP {exc.code} {_shown(text)}"
            except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
                last = str(getattr(exc, "reason", exc))
            except UnicodeDecodeError as exc:
                last = f"answer is not UTF-8 text (byte {exc.start} is {raw[exc.start]:#04x})"
            except json.JSONDecodeError as exc:
                last = f"answer is not JSON ({exc})"
            else:
                if not isinstance(body, dict) or body.get("status") != "success":
                    error = body.get("error", body) if isinstance(body, dict) else body
                    raise SourceError(f"{what}: failed: {_shown(str(error))}")
                return body.get("data")
            logger.info("%s: attempt %d failed: %s", what, attempt + 1, last)
        raise SourceError(f"{what} failed after {self.retries + 1} attempt(s): {last}")

    def _body(self, answer: Any, what: str) -> bytes:
        """The answer's body, read in pieces: at most ``max_bytes``, within ``timeout``."""
        declared = answer.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise SourceError(self._too_big(what, int(declared)))
        deadline = time.monotonic() + self.timeout
        pieces: list[bytes] = []
        size = 0
        while piece := answer.read1(_PIECE):  # what has come, not a full piece: a drip times out
            size += len(piece)
            if size > self.max_bytes:
                raise SourceError(self._too_big(what, size))
            if time.monotonic() > deadline:
                raise TimeoutError(f"answer not complete after {self.timeout:g} s ({size:,} bytes)")
            pieces.append(piece)
        return b"".join(pieces)

    def _too_big(self, what: str, size: int) -> str:
        return (
            f"{what}: the answer is larger than {self.max_bytes / 2**20:g} MiB "
            f"({size:,} bytes read); ask for less (a shorter range, a longer step, a narrower "
            "query)"
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
            for labels, points in _matrix(data, f"{self.url}: {query!r}"):
                times, values = merged.setdefault(tuple(sorted(labels.items())), ([], []))
                for stamp, value in points:
                    if times and stamp <= times[-1]:
                        continue  # chunk edges share a point
                    times.append(stamp)
                    values.append(value)
            chunk_start = chunk_end + seconds
        return [
            Series(dict(key), np.asarray(times), np.asarray(values))
            for key, (times, values) in merged.items()
        ]


def _shown(text: str) -> str:
    """A server's text fit for one line of a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= 300 else flat[:300] + "…"


def _matrix(data: object, what: str) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """The series of a range query's ``data``, checked: labels are text, each point a time
    and a number (Prometheus writes values as strings: "1.5", "NaN", "+Inf")."""

    def bad(message: str) -> SourceError:
        return SourceError(f"{what}: malformed answer: {message}")

    if not isinstance(data, dict) or not isinstance(data.get("result", []), list):
        raise bad("no list of series under data.result")
    out = []
    for n, item in enumerate(data.get("result", [])):
        labels = item.get("metric", {}) if isinstance(item, dict) else None
        raw = item.get("values", []) if isinstance(item, dict) else None
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise bad(f"series {n}: labels are not text")
        if not isinstance(raw, list):
            raise bad(f"series {n} {_shown(str(labels))}: values are not a list")
        points = []
        for i, point in enumerate(raw):
            try:
                stamp, value = point
                parsed = float(stamp), float(value)
            except (TypeError, ValueError):
                shown = _shown(repr(point))
                raise bad(
                    f"series {n} {_shown(str(labels))}: point {i} is not [time, number]: {shown}"
                ) from None
            if not math.isfinite(parsed[0]):
                raise bad(f"series {n}: point {i} has no finite time: {_shown(repr(point))}")
            points.append(parsed)
        out.append((labels, points))
    return out


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
