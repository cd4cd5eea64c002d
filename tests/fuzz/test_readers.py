"""Fuzzing every reader through the command line: success, or exit 2 with one error line.

Each test writes a hostile file — the frame contracts as CSV and Parquet, wide files, web logs,
pgbench logs, transaction and aggregated tables, sar JSON, pidstat output, perfmon CSV — and
runs the command a user would (``detect``, ``changepoints``, ``workload``, ``import``) through
``perfsleuth.cli.main``, sometimes with the messy-input options. Files start from plausible
rows or the real samples in ``tests/data`` and are bent: absurd numbers, times in any unit or
none, control characters, invalid UTF-8, cut lines, repeated lines.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz.support import (
    FUZZ,
    cells,
    csv_text,
    mutated,
    nasty_text,
    numbers,
    run_cli,
    times,
    toml_values,
)

DATA = Path(__file__).resolve().parents[1] / "data"

good_number = st.floats(0, 100).map(lambda v: f"{v:.3f}")
names = st.sampled_from(["web", "db", "a"]) | nasty_text
units = st.sampled_from(["", "ms", "s", "%", "bytes", "MiB", "furlongs"]) | nasty_text
integers = st.integers(1, 99_999).map(str) | st.integers(-(10**20), 10**20).map(str) | nasty_text

GOOD: dict[str, Any] = {
    "number": good_number,
    "name": st.sampled_from(["web", "db"]),
    "unit": st.sampled_from(["", "ms"]),
    "int": st.integers(1, 99_999).map(str),
    "fraction": st.floats(0, 1).map(lambda v: f"{v:.3f}"),
}
HOSTILE: dict[str, Any] = {
    "number": numbers,
    "name": names,
    "unit": units,
    "int": integers,
    "fraction": numbers,
    "time": times,
}
CONTRACTS: dict[str, dict[str, str]] = {
    "metric": {
        "time": "time", "entity": "name", "metric": "name", "value": "number", "unit": "unit"
    },
    "counter": {"time": "time", "entity": "name", "counter": "name", "value": "number"},
    "process": {
        "time": "time", "node": "name", "pid": "int", "name": "name", "user": "name",
        "cpu": "fraction", "rss_bytes": "number", "ncpu": "number", "os": "name",
    },
    "workload": {
        "time": "time", "window_s": "number", "n[a]": "number", "rt_sum[a]": "number",
        "n[b]": "number", "rt_sum[b]": "number", "cpu_util": "fraction",
    },
}  # fmt: skip
FAMILY = {"metric": "changepoints", "counter": "bottleneck", "process": "processes"}
MESSY = [
    ["--missing", "drop"],
    ["--disorder", "sort"],
    ["--duplicates", "first"],
    ["--time-unit", "ms"],
    ["--tz", "America/New_York"],
    ["--since", "2024-01-01"],
    ["--until", "2000-01-01T00:00:00Z"],
    ["--tz", "Mars/Olympus"],
]


def options_for(*flags: str) -> st.SearchStrategy[list[str]]:
    """Up to two of the messy-input options (those in ``flags``; all without)."""
    choices = [o for o in MESSY if not flags or o[0] in flags]
    return st.lists(st.sampled_from(choices), max_size=2, unique_by=lambda o: o[0]).map(
        lambda options: [word for option in options for word in option]
    )


messy = options_for()
repairs = options_for("--missing", "--disorder", "--duplicates", "--since", "--until")


@st.composite
def rows(draw: st.DrawFn, columns: dict[str, str], most: int = 10) -> list[list[str]]:
    """Up to ``most`` plausible rows a minute apart, then up to three cells made hostile."""
    start = draw(st.integers(1_600_000_000, 1_800_000_000))
    kinds = list(columns.values())
    out = [
        [str(start + 60 * i) if kind == "time" else draw(GOOD[kind]) for kind in kinds]
        for i in range(draw(st.integers(0, most)))
    ]
    for _ in range(draw(st.integers(0, 3)) if out else 0):
        i, j = draw(st.integers(0, len(out) - 1)), draw(st.integers(0, len(kinds) - 1))
        out[i][j] = draw(HOSTILE[kinds[j]])
    return out


@st.composite
def header(draw: st.DrawFn, columns: Sequence[str]) -> list[str]:
    """The columns, sometimes with one dropped, renamed or repeated."""
    names_ = list(columns)
    change = draw(st.sampled_from(["keep", "keep", "keep", "drop", "rename", "repeat"]))
    i = draw(st.integers(0, len(names_) - 1))
    if change == "drop":
        del names_[i]
    elif change == "rename":
        names_[i] = draw(nasty_text)
    elif change == "repeat":
        names_.append(names_[i])
    return names_


def _write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


@st.composite
def frame_csv(draw: st.DrawFn, contract: str) -> bytes:
    columns = CONTRACTS[contract]
    names_ = draw(header(list(columns)))
    body = draw(rows(columns))
    width = len(names_)
    text = csv_text(names_, [(row + row)[:width] for row in body])
    return draw(mutated(text.encode("utf-8", "surrogatepass")))


@given(contract=st.sampled_from(sorted(CONTRACTS)), data=st.data(), options=messy)
@FUZZ
def test_frame_csv(contract: str, data: st.DataObject, options: list[str]) -> None:
    content = data.draw(frame_csv(contract))
    family = FAMILY.get(contract, "workload")
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "frame.csv", content)
        args = ["detect", str(path), "--contract", contract, "-f", family, *options]
        run_cli(args).check()


@st.composite
def parquet_frame(draw: st.DrawFn, contract: str) -> pd.DataFrame:
    columns = CONTRACTS[contract]
    n = draw(st.integers(0, 8))
    frame: dict[str, Any] = {}
    for name, kind in columns.items():
        style = draw(st.sampled_from(["typed", "typed", "text"]))
        if kind == "time" and style == "typed":
            stamps = draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n))
            frame[name] = pd.to_datetime(np.asarray(stamps, dtype=np.int64), unit="ns", utc=True)
        elif kind in ("number", "fraction", "int") and style == "typed":
            values = st.floats(allow_nan=True, allow_infinity=True)
            frame[name] = np.asarray(draw(st.lists(values, min_size=n, max_size=n)))
        else:
            strategy = st.one_of(GOOD.get(kind, times), HOSTILE[kind])
            frame[name] = draw(st.lists(strategy, min_size=n, max_size=n))
    return pd.DataFrame(frame)


@given(contract=st.sampled_from(sorted(CONTRACTS)), data=st.data(), options=messy)
@FUZZ
def test_frame_parquet(contract: str, data: st.DataObject, options: list[str]) -> None:
    frame = data.draw(parquet_frame(contract))
    family = FAMILY.get(contract, "workload")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "frame.parquet"
        try:
            frame.to_parquet(path)
        except (ValueError, TypeError, OverflowError, UnicodeEncodeError):
            return  # pyarrow cannot write it: no such file can reach a reader
        args = ["detect", str(path), "--contract", contract, "-f", family, *options]
        run_cli(args).check()


@given(
    time_name=st.sampled_from(["time", "timestamp", "ts", "when"]),
    values=st.integers(1, 3),
    data=st.data(),
    name_columns=st.booleans(),
    options=messy,
)
@FUZZ
def test_wide_file(
    time_name: str, values: int, data: st.DataObject, name_columns: bool, options: list[str]
) -> None:
    columns = {time_name: "time", **{f"v{i}": "number" for i in range(values)}}
    text = csv_text(list(columns), data.draw(rows(columns, most=14)))
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    named = ["-c", "v0"] if name_columns else []
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "wide.csv", content)
        run_cli(["changepoints", str(path), *named, *options]).check()


clf_time = st.one_of(
    st.just("10/Oct/2000:13:55:36 -0700"),
    st.datetimes().map(lambda d: d.strftime("%d/%b/%Y:%H:%M:%S +0000")),
    nasty_text,
)


@st.composite
def log_line(draw: st.DrawFn) -> str:
    method = draw(st.sampled_from(["GET", "POST", "-"]) | nasty_text)
    target = draw(st.sampled_from(["/a", "/api/users/7?x=1", "/"]) | nasty_text)
    agent = draw(st.sampled_from(["Mozilla/5.0", "Opera 8.50", "-"]) | nasty_text)
    tail = draw(st.sampled_from(["", f' "-" "{agent}"']))
    latency = draw(st.sampled_from(["", " 1500", " 0.250", ' "0.1"']) | numbers.map(" ".__add__))
    when = draw(clf_time)
    return f'192.0.2.1 - - [{when}] "{method} {target} HTTP/1.1" 200 2326{tail}{latency}'


@given(data=st.data(), options=st.sampled_from([[], ["--since", "2000-10-10"], ["--strict"]]))
@FUZZ
def test_web_log(data: st.DataObject, options: list[str]) -> None:
    text = "\n".join(data.draw(st.lists(log_line(), max_size=12))) + "\n"
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "access.log", content)
        run_cli(["workload", str(path), "--source", "weblog", "--window", "1m", *options]).check()


@st.composite
def pgbench_line(draw: st.DrawFn) -> str:
    fields = [
        draw(st.one_of(st.just("0"), integers)),
        draw(st.one_of(st.just("7"), integers)),
        draw(st.one_of(st.just("2241"), st.just("skipped"), numbers)),
        draw(st.one_of(st.just("0"), integers)),
        draw(st.one_of(st.integers(1_600_000_000, 1_800_000_000).map(str), numbers)),
        draw(st.one_of(st.integers(0, 999_999).map(str), numbers)),
    ]
    return " ".join(fields[: draw(st.integers(3, 6))])


@given(data=st.data())
@FUZZ
def test_pgbench_log(data: st.DataObject) -> None:
    text = "\n".join(data.draw(st.lists(pgbench_line(), max_size=12))) + "\n"
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "pgbench_log.123", content)
        run_cli(["workload", str(path), "--source", "pgbench", "--window", "1m"]).check()


TABLES = {
    "table": {"time": "time", "type": "name", "latency": "number"},
    "aggregated": {"time": "time", "type": "name", "count": "number", "rt_sum": "number"},
}


@given(source=st.sampled_from(sorted(TABLES)), data=st.data(), options=messy)
@FUZZ
def test_transaction_tables(source: str, data: st.DataObject, options: list[str]) -> None:
    columns = TABLES[source]
    text = csv_text(data.draw(header(list(columns))), data.draw(rows(columns, most=12)))
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "tx.csv", content)
        outcome = run_cli(["workload", str(path), "--source", source, *options])
        outcome.check()
        if {"--missing", "--disorder", "--duplicates"} & set(options):
            assert outcome.code == 2  # a table of transactions takes none of these: said so


def _json_mutation(value: Any, draw: st.DrawFn) -> Any:
    """Replace one value somewhere in parsed JSON (recursively, by a drawn path)."""
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        if draw(st.booleans()):
            return {**value, key: draw(toml_values | st.none())}
        return {**value, key: _json_mutation(value[key], draw)}
    if isinstance(value, list) and value:
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], _json_mutation(value[i], draw), *value[i + 1 :]]
    return draw(toml_values | st.none())


SAR = json.loads((DATA / "sysstat" / "sar.json").read_text())


@given(data=st.data(), options=repairs)
@FUZZ
def test_sar_json(data: st.DataObject, options: list[str]) -> None:
    document = SAR
    for _ in range(data.draw(st.integers(1, 3))):
        document = _json_mutation(document, data.draw)
    content = data.draw(mutated(json.dumps(document).encode()))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "sar.json", content)
        run_cli(["import", "sar", str(path), "--store", f"{folder}/s.duckdb", *options]).check()


def _token_mutation(text: str, draw: st.DrawFn) -> str:
    """Replace one whitespace-separated token of one line with a hostile cell."""
    lines = text.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    tokens = lines[i].split(" ")
    j = draw(st.integers(0, len(tokens) - 1))
    tokens[j] = draw(cells)
    lines[i] = " ".join(tokens)
    return "\n".join(lines) + "\n"


@given(
    sample=st.sampled_from(["pidstat-epoch.txt", "pidstat-clock.txt"]),
    data=st.data(),
    options=options_for("--missing", "--disorder", "--duplicates", "--since", "--until", "--tz"),
)
@FUZZ
def test_pidstat(sample: str, data: st.DataObject, options: list[str]) -> None:
    text = (DATA / "sysstat" / sample).read_text()
    for _ in range(data.draw(st.integers(1, 3))):
        text = _token_mutation(text, data.draw)
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "pidstat.txt", content)
        run_cli(["import", "pidstat", str(path), "--store", f"{folder}/s.duckdb", *options]).check()


PERFMON = (DATA / "perfmon" / "relog.csv").read_text(encoding="utf-8-sig")


@given(data=st.data(), options=repairs)
@FUZZ
def test_perfmon(data: st.DataObject, options: list[str]) -> None:
    table = [line.split('","') for line in PERFMON.strip("\r\n").split("\r\n")]
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(table) - 1))
        j = data.draw(st.integers(0, len(table[i]) - 1))
        table[i][j] = data.draw(cells).replace('"', "")
    text = "\r\n".join('","'.join(row) for row in table) + "\r\n"
    content = data.draw(mutated(text.encode("utf-8", "surrogatepass")))
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "relog.csv", content)
        run_cli(["import", "perfmon", str(path), "--store", f"{folder}/s.duckdb", *options]).check()


SHAPES = {
    "constant": lambda i, n: 5.0,
    "zeros": lambda i, n: 0.0,
    "step": lambda i, n: 1.0 if i < n // 2 else 1e6,
    "huge": lambda i, n: 1e99 if i % 2 else -1e99,
    "tiny": lambda i, n: 1e-300 * (i % 3),
    "ramp": lambda i, n: float(i) ** 3,
    "spike": lambda i, n: 1e99 if i == n // 3 else 1.0,
}


@given(
    contract=st.sampled_from(sorted(CONTRACTS)),
    shape=st.sampled_from(sorted(SHAPES)),
    n=st.sampled_from([1, 2, 3, 30, 120]),
    step=st.sampled_from([1, 60, 3600]),
)
@FUZZ
def test_valid_but_degenerate_frames_reach_every_family(
    contract: str, shape: str, n: int, step: int
) -> None:
    # every cell valid, the values degenerate: what the families' kernels must survive
    value = SHAPES[shape]
    columns = CONTRACTS[contract]
    rows_ = []
    for i in range(n):
        row = []
        for name, kind in columns.items():
            if kind == "time":
                row.append(str(1_700_000_000 + step * i))
            elif kind in ("number", "fraction"):
                v = abs(value(i, n)) if name != "value" else value(i, n)
                row.append(repr(min(v, 1.0) if kind == "fraction" else v))
            elif name == "pid":
                row.append("7")
            else:
                row.append({"unit": "", "os": "Linux", "ncpu": "2"}.get(name, "web"))
        rows_.append(row)
    with tempfile.TemporaryDirectory() as folder:
        path = _write(Path(folder), "frame.csv", csv_text(list(columns), rows_))
        run_cli(["detect", str(path), "--contract", contract]).check()
