"""Imports of sysstat data: ``sar``/``sadc`` files (via ``sadf -j``) and ``pidstat -h`` output.

* :func:`read_sar` — a counter frame (``time, entity, counter, value, unit``) from the JSON
  ``sadf -j`` writes, or from a binary ``sa`` file (``sadc``'s output; ``sadf`` is run on it).
  Every numeric field of every activity becomes a counter named ``<activity>.<field>``
  (``cpu-load.user``, ``memory.memfree``, ``network.net-dev.rxkB``); ``entity`` is the host
  name, or ``<host>:<item>`` for per-item activities (``vm:cpu=all``, ``vm:disk-device=vda``,
  ``vm:iface=eth0``, ``vm:line=1`` for a serial line, ``vm:number=5,device=coretemp-isa-0000``
  for a sensor: every field that names the item, so items sharing a device stay apart).
  Values are converted to base units (percentages to fractions, kB to bytes) and ``unit``
  says which. Times are the ends of sar's intervals, in UTC.
* :func:`read_pidstat` — a process frame from ``pidstat -h`` (one line per task and interval;
  ``-H`` for Unix times, ``-U`` for user names, ``-u -r -d`` for CPU, memory and I/O):
  ``cpu`` = ``%CPU`` / 100 (cores; do not use ``-I``), ``rss_bytes`` = ``RSS`` kB × 1024,
  ``io_bytes`` = (``kB_rd/s`` + ``kB_wr/s``) × 1024 × the interval.

Malformed input raises :class:`~perfsleuth.errors.DataError` naming the file, the line (or the
JSON path) and the field. A path of ``-`` reads standard input.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError, SourceError, located
from perfsleuth.frames import normalise
from perfsleuth.sources.files import input_name, is_stdin, read_bytes

__all__ = ["SADF_ACTIVITIES", "read_pidstat", "read_sar"]

SADF_ACTIVITIES = ("-A",)
"""``sadf -j <file> -- <activities>`` used on binary ``sa`` files: all of them."""

# Fields of a per-item activity's items that name the item rather than measure it (sadf -j):
# CPUs, disks, file systems, Fibre Channel hosts, interfaces, interrupts, serial lines, sensor
# and battery numbers and their chips, USB devices.
_ITEM_KEYS = frozenset(
    ("cpu", "disk-device", "filesystem", "fchost", "iface", "intr", "line", "number", "device",
     "bus_number", "idvendor", "idprod")
)  # fmt: skip

_PIDSTAT_BANNER = re.compile(
    r"^\S+\s+\S+\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+)\s+\S+\s+\((?P<ncpu>\d+)\s+CPU\)"
)


def _unit(activity: str, field: str) -> str:
    if field.endswith("-percent") or activity == "cpu-load" or field.startswith("%"):
        return "%"
    if field.endswith("kB") or activity == "memory":  # sar's kB are KiB
        return "kib"
    return ""


def _sadf(path: Path, raw: bytes) -> str:
    binary = shutil.which("sadf")
    name = input_name(path)
    if binary is None:
        raise SourceError(f"{name}: a binary sa file needs sadf (Debian package sysstat)")
    with tempfile.TemporaryDirectory(prefix="perfsleuth-sa-") as scratch:
        if is_stdin(path):  # sadf reads files only
            path = Path(scratch) / "sa"
            path.write_bytes(raw)
        # absolute: a name like "-1" is sadf's "yesterday's file", "-x" an option
        done = subprocess.run(
            [binary, "-j", str(path.absolute()), "--", *SADF_ACTIVITIES],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise SourceError(f"{name}: sadf -j failed: {done.stderr.strip()[:300]}")
    return done.stdout


def read_sar(
    path: str | Path,
    *,
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Read ``sadf -j`` JSON (or a binary ``sa`` file) into a normalised counter frame.

    ``missing``, ``disorder``, ``duplicates``, ``since`` and ``until`` are
    :func:`perfsleuth.frames.normalise`'s.
    """
    path = Path(path)
    source = input_name(path)
    raw = read_bytes(path)
    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark: JSON saved by an editor
    if not raw.strip():
        raise DataError(f"{source}: empty file (expected sadf -j JSON or a binary sa file)")
    text = raw.decode("utf-8", "replace") if raw.lstrip()[:1] == b"{" else _sadf(path, raw)
    path = Path(source)  # as the messages below name it (<stdin> for -)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        message = located(f"not valid JSON: {exc.msg}", source=source, line=exc.lineno)
        raise DataError(message) from None
    except RecursionError:
        raise DataError(f"{source}: not valid JSON: nested too deeply") from None
    rows: list[tuple[datetime, str, str, float, str, str]] = []
    hosts = _get(document, ("sysstat", "hosts"), list, path)
    for h, host in enumerate(hosts):
        where = f"sysstat.hosts[{h}]"
        name = str(_get(host, ("nodename",), str, path, where))
        zone = _zone(host, path, where)
        for s, record in enumerate(_get(host, ("statistics",), list, path, where)):
            here = f"{where}.statistics[{s}]"
            if not isinstance(record, dict):
                raise DataError(f"{path}: {here}: expected an object")
            if "timestamp" not in record:
                if record:  # its counters cannot be placed in time: say so, do not drop them
                    raise DataError(f"{path}: {here}: a record without a timestamp")
                continue
            stamp = _stamp(record["timestamp"], zone, path, f"{here}.timestamp")
            for activity, value in record.items():
                if activity != "timestamp":
                    _flatten(rows, stamp, name, activity, value, path, f"{here}.{activity}")
    if not rows:
        raise DataError(f"{source}: no statistics records in this sar file")
    frame = pd.DataFrame(
        [row[:5] for row in rows], columns=["time", "entity", "counter", "value", "unit"]
    )
    paths = [row[5] for row in rows]  # errors name a value by its path in the document
    return normalise(
        frame,
        "counter",
        source=source,
        locate=lambda pos: paths[pos],
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
        since=since,
        until=until,
    )


def _get(node: Any, keys: tuple[str, ...], kind: type, path: Path, where: str = "") -> Any:
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            at = f"{where}.{key}" if where else key
            raise DataError(f"{path}: {at}: missing (is this sadf -j output?)")
        node = node[key]
        where = f"{where}.{key}" if where else key
    if not isinstance(node, kind):
        raise DataError(f"{path}: {where}: expected {kind.__name__}, got {type(node).__name__}")
    return node


def _zone(host: dict[str, Any], path: Path, where: str) -> ZoneInfo | None:
    name = host.get("timezone", "UTC")
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        return None  # only needed when a record's times are not UTC; checked there


def _stamp(stamp: Any, zone: ZoneInfo | None, path: Path, where: str) -> datetime:
    if not isinstance(stamp, dict):
        raise DataError(f"{path}: {where}: expected an object with date and time")
    try:
        moment = datetime.fromisoformat(f"{stamp['date']}T{stamp['time']}")
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: {where}: bad date/time {stamp!r}: {exc}") from exc
    if stamp.get("utc", 1) == 1:
        return moment.replace(tzinfo=UTC)
    if zone is None:
        raise DataError(f"{path}: {where}: local times in an unknown time zone; run sadf -t")
    try:
        return moment.replace(tzinfo=zone).astimezone(UTC)
    except (OverflowError, ValueError):
        raise DataError(f"{path}: {where}: time {stamp!r} is out of range") from None


def _flatten(
    rows: list[tuple[datetime, str, str, float, str, str]],
    stamp: datetime,
    entity: str,
    activity: str,
    value: Any,
    path: Path,
    where: str,
) -> None:
    if isinstance(value, dict):
        for field, item in value.items():
            if isinstance(item, dict | list):
                _flatten(rows, stamp, entity, f"{activity}.{field}", item, path, f"{where}.{field}")
            else:
                _number(rows, stamp, entity, activity, field, item, path, f"{where}.{field}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise DataError(f"{path}: {where}[{i}]: expected an object")
            ids = _item_name(item, i)
            name = f"{entity}:{','.join(f'{k}={v}' for k, v in ids)}"
            fields = {k: v for k, v in item.items() if k not in dict(ids)}
            _flatten(rows, stamp, name, activity, fields, path, f"{where}[{i}]")


def _item_name(item: dict[str, Any], index: int) -> list[tuple[str, Any]]:
    """The fields naming an item of a list (every one: sensors on one chip share ``device``),
    else its first text field, else its place in the list."""
    ids = [(k, v) for k, v in item.items() if k in _ITEM_KEYS and not isinstance(v, dict | list)]
    if ids:
        return ids
    text = next(((k, v) for k, v in item.items() if isinstance(v, str)), None)
    return [text] if text is not None else [("item", index)]


def _number(
    rows: list[tuple[datetime, str, str, float, str, str]],
    stamp: datetime,
    entity: str,
    activity: str,
    field: str,
    item: Any,
    path: Path,
    where: str,
) -> None:
    if isinstance(item, bool) or not isinstance(item, int | float):
        if isinstance(item, str):
            return  # descriptive text (e.g. a filesystem's mount point) is not a counter
        raise DataError(f"{path}: {where}: expected a number, got {item!r}")
    rows.append((stamp, entity, f"{activity}.{field}", float(item), _unit(activity, field), where))


_PIDSTAT_COLUMNS = {"Time", "PID", "%CPU", "RSS", "Command"}
_FIRST_EPOCH, _END_EPOCH = -2_208_988_800, 4_102_444_800  # 1900-01-01, 2100-01-01 (the frames')


def read_pidstat(
    path: str | Path,
    *,
    node: str | None = None,
    tz: str = "UTC",
    missing: Literal["error", "drop"] = "error",
    disorder: Literal["error", "sort"] = "error",
    duplicates: Literal["error", "first"] = "error",
    since: datetime | None = None,
    until: datetime | None = None,
) -> pd.DataFrame:
    """Read ``pidstat -h`` output into a normalised process frame.

    ``node`` defaults to the host name in pidstat's banner line. Clock times (without ``-H``)
    are taken in time zone ``tz`` on the banner's date (a time earlier than the one before is
    the next day); Unix times (``-H``) need no zone. ``missing``, ``disorder``, ``duplicates``,
    ``since`` and ``until`` are :func:`perfsleuth.frames.normalise`'s.
    """
    path = Path(path)
    lines = read_bytes(path).decode("utf-8", errors="replace").splitlines()
    source = input_name(path)
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise DataError(f"unknown time zone {tz!r}") from exc
    host, day, ncpu = None, None, None
    header: list[str] | None = None
    records: list[dict[str, Any]] = []
    previous: datetime | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        banner = _PIDSTAT_BANNER.match(line)
        if banner and header is None:
            host, ncpu = banner["host"], int(banner["ncpu"])
            day = _banner_date(banner["date"], source, number)
            continue
        if line.startswith("#"):
            header = line[1:].split()
            absent = sorted(_PIDSTAT_COLUMNS - set(header))
            if absent:
                raise DataError(
                    located(
                        f"pidstat header lacks {', '.join(absent)}; run pidstat -h -u -r",
                        source=source,
                        line=number,
                    )
                )
            continue
        if header is None:
            raise DataError(
                located("data before a '# Time ...' header (pidstat -h output?)", source=source,
                        line=number)
            )  # fmt: skip
        if line.startswith("Average"):
            continue
        fields = line.split(None, len(header) - 1)
        if len(fields) != len(header):
            raise DataError(
                located(f"{len(fields)} fields, header has {len(header)}", source=source,
                        line=number)
            )  # fmt: skip
        row = dict(zip(header, fields, strict=True))
        moment = _pidstat_time(row["Time"], day, zone, previous, source, number)
        previous = moment
        record: dict[str, Any] = {"time": moment, "_line": number}
        for column in ("PID", "%CPU", "RSS", "kB_rd/s", "kB_wr/s"):
            if column not in row:
                continue
            try:
                record[column] = float(row[column])
            except ValueError:
                raise DataError(
                    located(f"not a number: {row[column]!r}", source=source, line=number,
                            field=column)
                ) from None  # fmt: skip
        record["user"] = row.get("USER", row.get("UID", ""))
        record["name"] = row["Command"].strip()
        records.append(record)
    if not records:
        raise DataError(f"{source}: no pidstat samples")
    raw = pd.DataFrame.from_records(records)
    frame = pd.DataFrame(
        {
            "time": raw["time"],
            "node": node if node is not None else host or path.stem,
            "pid": raw["PID"],  # the contract checks that each is an integer
            "name": raw["name"],
            "user": raw["user"],
            "cpu": raw["%CPU"] / 100.0,
            "rss_bytes": raw["RSS"] * 1024.0,
        }
    )
    if "kB_rd/s" in raw and "kB_wr/s" in raw:
        interval = _interval(raw["time"])
        frame["io_bytes"] = (raw["kB_rd/s"] + raw["kB_wr/s"]) * 1024.0 * interval
    if ncpu is not None:
        frame["ncpu"] = float(ncpu)
    lines_of = raw["_line"].to_numpy()
    return normalise(
        frame,
        "process",
        source=source,
        locate=lambda pos: int(lines_of[pos]),
        missing=missing,
        disorder=disorder,
        duplicates=duplicates,
        since=since,
        until=until,
    )


def _banner_date(text: str, source: str, line: int) -> date:
    for pattern in ("%Y-%m-%d", "%m/%d/%y", "%m/%d/%Y", "%d/%m/%y"):
        try:
            return datetime.strptime(text, pattern).date()
        except ValueError:
            continue
    raise DataError(located(f"cannot read the banner date {text!r}", source=source, line=line))


def _pidstat_time(
    text: str, day: date | None, zone: ZoneInfo, previous: datetime | None, source: str, line: int
) -> datetime:
    if text.isascii() and text.isdigit():
        seconds = int(text)
        if not _FIRST_EPOCH <= seconds < _END_EPOCH:
            raise DataError(
                located(f"not a Unix time in seconds: {text} (outside the years 1900 to 2099)",
                        source=source, line=line, field="Time")
            )  # fmt: skip
        return datetime.fromtimestamp(seconds, UTC)
    if day is None:
        raise DataError(
            located("clock time without the banner's date", source=source, line=line, field="Time")
        )
    try:
        clock = datetime.strptime(text, "%H:%M:%S").time()
    except ValueError:
        raise DataError(
            located(f"not a time: {text!r} (expected HH:MM:SS or Unix seconds)", source=source,
                    line=line, field="Time")
        ) from None  # fmt: skip
    moment = datetime.combine(day, clock, zone).astimezone(UTC)
    while previous is not None and moment < previous - timedelta(hours=12):
        moment += timedelta(days=1)  # past midnight
    return moment


def _interval(times: pd.Series) -> float:
    stamps = np.unique(pd.DatetimeIndex(times).asi8)
    if len(stamps) < 2:
        return 1.0  # one report: pidstat's usual 1 s
    return float(np.median(np.diff(stamps))) / 1e9
