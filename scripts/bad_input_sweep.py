"""Sweep every command that reads user files with a systematic set of bad inputs, and print a
table: for each case and command, how it ended.

Run it against the working tree, or another version of the package for a before/after table::

    .venv/bin/python scripts/bad_input_sweep.py [--only CASE,...] [--commands CMD,...]
    git archive main src | tar -x -C /tmp/main
    PYTHONPATH=/tmp/main/src .venv/bin/python scripts/bad_input_sweep.py

Each case bends one valid input of a command (an empty file, a header only, a malformed line,
NaN, huge values, duplicated or backwards times, hostile names, a directory, a binary file, a
BOM, CRLF line ends, a Parquet file with wrong dtypes, a read-only store ...) and runs
``perfsleuth`` in this process (``perfsleuth.cli.main``) with ``--store`` pointing at a store that
already holds findings. Each outcome is one of

* ``ok N``      exit 0/1, N findings printed (JSON lines counted);
* ``E[flw]``    exit 2 with exactly one ``perfsleuth: error:`` line naming the file (f), a line,
  row or JSON path (l) and a field (w) — a dot where the pattern did not see one (a heuristic:
  read the messages with ``--verbose``);
* ``TRACEBACK`` an exception escaped ``main``;
* ``+err``      appended when a successful run printed a line that reads as an error;
* ``LOST``      appended when the store no longer holds the findings it held before.

The read-only store case runs as user ``nobody`` (``setpriv``; the sweep runs as root).
``--verbose`` prints each error message on stderr. Nothing is left behind (a temporary folder).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


# -- valid inputs, one per command ------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    """A valid CSV input as rows of text, and which of its columns play which part."""

    header: list[str]
    rows: list[list[str]]
    time: int  # column of the time
    value: int  # a numeric column
    name: int  # a text column that names something (entity, node, type)
    nonnegative: bool = True  # whether the value column cannot be negative
    series: tuple[int, ...] = ()  # columns that say which series a row belongs to

    def text(self, rows: list[list[str]] | None = None, header: bool = True) -> str:
        buffer = io.StringIO()
        import csv

        writer = csv.writer(buffer, lineterminator="\n")
        if header:
            writer.writerow(self.header)
        writer.writerows(self.rows if rows is None else rows)
        return buffer.getvalue()

    def rows_of_first_series(self) -> list[int]:
        key = [self.rows[0][i] for i in self.series]
        return [k for k, row in enumerate(self.rows) if [row[i] for i in self.series] == key]


def _iso(i: int, step: int = 60) -> str:
    return (pd.Timestamp("2024-05-01T00:00:00Z") + pd.Timedelta(seconds=step * i)).isoformat()


def metric_table() -> Table:
    rng = np.random.default_rng(0)
    rows = [
        [_iso(i), "web", "latency", f"{(10 if i < 60 else 20) + rng.normal():.3f}", "ms"]
        for i in range(120)
    ]
    return Table(["time", "entity", "metric", "value", "unit"], rows, 0, 3, 1, True, (1, 2))


def transactions_table() -> Table:
    rng = np.random.default_rng(1)
    rows = []
    for i in range(3000):
        kind = "home" if i % 3 else "buy"
        latency = (20 if kind == "home" else 80) * (1 + 0.1 * rng.normal())
        rows.append([_iso(i, 2), kind, f"{abs(latency):.3f}"])
    return Table(["time", "type", "latency"], rows, 0, 2, 1, True, ())


def workload_frame_table() -> Table:
    rng = np.random.default_rng(2)
    rows = []
    for i in range(60):
        a, b = int(rng.integers(50, 150)), int(rng.integers(10, 60))
        cpu = min(0.95, 0.002 * a + 0.006 * b + 0.02 * rng.normal() + 0.05)
        rows.append([_iso(i, 300), "300", str(a), f"{a * 0.02:.3f}", str(b), f"{b * 0.08:.3f}",
                     f"{max(cpu, 0.01):.3f}"])  # fmt: skip
    header = ["time", "window_s", "n[home]", "rt_sum[home]", "n[buy]", "rt_sum[buy]", "cpu_util"]
    return Table(header, rows, 0, 6, -1, True, ())  # names: the types in the header


def process_table() -> Table:
    rows = []
    for i in range(24 * 12):
        for pid, name, cpu in ((101, "spin", 0.98), (202, "web", 0.1 + 0.05 * (i % 3))):
            rows.append([_iso(i, 300), "node-1", str(pid), name, "app", f"{cpu:.3f}",
                         str(100_000_000 + 1000 * i), "2", "Linux"])  # fmt: skip
    header = ["time", "node", "pid", "name", "user", "cpu", "rss_bytes", "ncpu", "os"]
    return Table(header, rows, 0, 5, 1, True, (1, 2, 3))


def counter_table(folder: Path) -> Table:
    path = folder / "simulated.csv"
    _run(["bottleneck", "simulate", "cpu", "-o", str(path), "--samples", "30"])
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return Table(list(frame.columns), frame.values.tolist(), 0, 3, 1, False, (1, 2))


# -- running the command line -----------------------------------------------------------------


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    trace: str = ""

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("perfsleuth: error: ")]


def _run(args: list[str], stdin: bytes | None = None) -> Outcome:
    from perfsleuth.cli import main

    out, err = io.StringIO(), io.StringIO()
    trace = ""
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code: object = 0
        except SystemExit as exc:
            code = exc.code
        except BaseException:
            code, trace = "traceback", traceback.format_exc()
        finally:
            sys.stdin = old_stdin
    return Outcome(code if isinstance(code, int) else (0 if code is None else -1), out.getvalue(),
                   err.getvalue(), trace)  # fmt: skip


def _run_as_nobody(args: list[str]) -> Outcome:
    """``perfsleuth args`` in a process of user nobody: a store it cannot write."""
    code = "import sys; from perfsleuth.cli import main; sys.argv[0] = 'perfsleuth'; main()"
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code,
         *args],
        capture_output=True, text=True, check=False, env={**os.environ, "HOME": "/tmp"},
    )  # fmt: skip
    trace = done.stderr if "Traceback" in done.stderr else ""
    return Outcome(done.returncode, done.stdout, done.stderr, trace)


def _stored_findings(store: Path) -> set[str]:
    from perfsleuth.store import Store

    with Store(store) as s:
        return {f.id for f in s.findings()}


# -- the cases --------------------------------------------------------------------------------


@dataclass
class Input:
    """What a case hands a command: the file to read (bytes, a folder, nothing), its suffix."""

    content: bytes | None  # None: no such file
    suffix: str = ".csv"
    folder: bool = False
    parquet: pd.DataFrame | None = None
    readonly_store: bool = False
    note: str = ""


def _edit(table: Table, at: int, column: int, value: str) -> bytes:
    rows = [list(row) for row in table.rows]
    rows[at][column] = value
    return table.text(rows).encode()


def _mid(table: Table) -> int:
    return table.rows_of_first_series()[len(table.rows_of_first_series()) // 2]


def _dup_time(table: Table) -> bytes:
    mine = table.rows_of_first_series()
    k, prev = mine[len(mine) // 2], mine[len(mine) // 2 - 1]
    rows = [list(row) for row in table.rows]
    rows[k][table.time] = rows[prev][table.time]
    rows[k][table.value] = str(float(rows[prev][table.value]) * 1.01)
    return table.text(rows).encode()


def _backwards(table: Table) -> bytes:
    mine = table.rows_of_first_series()
    k, prev = mine[len(mine) // 2], mine[len(mine) // 2 - 1]
    rows = [list(row) for row in table.rows]
    rows[k][table.time], rows[prev][table.time] = rows[prev][table.time], rows[k][table.time]
    return table.text(rows).encode()


def _gap(table: Table) -> bytes:
    n = len(table.rows)
    keep = table.rows[: n // 3] + table.rows[2 * n // 3 :]
    return table.text(keep).encode()


def _constant(table: Table) -> bytes:
    rows = [list(row) for row in table.rows]
    for row in rows:
        row[table.value] = "0.5"
    return table.text(rows).encode()


def _names(table: Table, name: str) -> bytes:
    if table.name < 0:  # a workload frame: its transaction types are named in the header
        header = [column.replace("home", name) for column in table.header]
        return replace(table, header=header).text().encode()
    rows = [list(row) for row in table.rows]
    for row in rows:
        row[table.name] = name
    return table.text(rows).encode()


def _wrong_dtypes(table: Table) -> pd.DataFrame:
    frame = pd.DataFrame(table.rows, columns=table.header)  # every column text
    frame.iloc[len(frame) // 2, table.value] = "fast"
    frame[frame.columns[table.time]] = pd.to_datetime(frame.iloc[:, table.time]).astype("int64")
    return frame


def _bool_values(table: Table) -> pd.DataFrame:
    frame = pd.DataFrame(table.rows, columns=table.header)
    frame[frame.columns[table.value]] = [i % 2 == 0 for i in range(len(frame))]
    frame[frame.columns[table.time]] = pd.to_datetime(frame.iloc[:, table.time])
    return frame


TABLE_CASES: dict[str, Callable[[Table], Input]] = {
    "valid (baseline)": lambda t: Input(t.text().encode()),
    "empty file": lambda t: Input(b""),
    "header only": lambda t: Input(t.text([]).encode()),
    "extra field": lambda t: Input(
        t.text().replace("\n", ",9\n", 5).replace(",9\n", "\n", 4).encode()
    ),
    "missing field": lambda t: Input(
        "\n".join(
            line.rpartition(",")[0] if i == 5 else line
            for i, line in enumerate(t.text().split("\n"))
        ).encode()
    ),
    "unterminated quote": lambda t: Input(_edit(t, 4, t.name, "QUOTE").replace(b"QUOTE", b'"web')),
    "non-numeric cell": lambda t: Input(_edit(t, _mid(t), t.value, "fast")),
    "NaN": lambda t: Input(_edit(t, _mid(t), t.value, "NaN")),
    "inf": lambda t: Input(_edit(t, _mid(t), t.value, "inf")),
    "empty cell": lambda t: Input(_edit(t, _mid(t), t.value, "")),
    "1e308": lambda t: Input(_edit(t, _mid(t), t.value, "1e308")),
    "-1e308": lambda t: Input(_edit(t, _mid(t), t.value, "-1e308")),
    "negative": lambda t: Input(_edit(t, _mid(t), t.value, "-5")),
    "bad time": lambda t: Input(_edit(t, _mid(t), t.time, "2024-13-45T99:00")),
    "time out of range": lambda t: Input(_edit(t, _mid(t), t.time, "1500-01-01T00:00:00Z")),
    "duplicate time": lambda t: Input(_dup_time(t)),
    "backwards time": lambda t: Input(_backwards(t)),
    "gap": lambda t: Input(_gap(t)),
    "constant": lambda t: Input(_constant(t)),
    "one row": lambda t: Input(t.text(t.rows[:1]).encode()),
    "unicode name": lambda t: Input(_names(t, "Ωμέγα-服务-😀")),
    "newline in name": lambda t: Input(_names(t, "web\nperfsleuth: error: forged")),
    "<script> name": lambda t: Input(_names(t, "<script>alert(1)</script>")),
    "quotes in name": lambda t: Input(_names(t, "he said \"hi\" 'x'")),
    "10k-char name": lambda t: Input(_names(t, "x" * 10_000)),
    "line separator in name": lambda t: Input(_names(t, "web\u2028x\x85y")),
    "name --c": lambda t: Input(_names(t, "--c")),
    "directory": lambda t: Input(None, folder=True),
    "missing file": lambda t: Input(None),
    "binary file": lambda t: Input(
        bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8))
    ),
    "UTF-8 BOM": lambda t: Input(b"\xef\xbb\xbf" + t.text().encode()),
    "CRLF": lambda t: Input(t.text().replace("\n", "\r\n").encode()),
    "parquet wrong dtypes": lambda t: Input(b"", ".parquet", parquet=_wrong_dtypes(t)),
    "parquet bool values": lambda t: Input(b"", ".parquet", parquet=_bool_values(t)),
    "parquet not parquet": lambda t: Input(t.text().encode(), ".parquet"),
    "read-only store": lambda t: Input(t.text().encode(), readonly_store=True),
}


GENERIC: dict[str, Callable[[bytes], Input]] = {
    "valid (baseline)": Input,
    "empty file": lambda b: Input(b""),
    "directory": lambda b: Input(None, folder=True),
    "missing file": lambda b: Input(None),
    "binary file": TABLE_CASES["binary file"],
    "UTF-8 BOM": lambda b: Input(b"\xef\xbb\xbf" + b),
    "CRLF": lambda b: Input(b.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")),
    "read-only store": lambda b: Input(b, readonly_store=True),
}


_NAMES = {  # the specific cases named as the table's rows are
    "non_numeric_cell": "non-numeric cell",
    "hostile_name": "<script> name",
    "name_dashes": "name --c",
    "malformed": "malformed (cut)",
}


def _generic(base: bytes, suffix: str, **specific: Callable[[], Input]) -> dict[str, Input]:
    cases = {name: make(base) for name, make in GENERIC.items()}
    cases.update(
        {_NAMES.get(name, name.replace("_", " ")): make() for name, make in specific.items()}
    )
    for given in cases.values():
        given.suffix = suffix
    return cases


def sar_cases() -> dict[str, Input]:
    base = json.loads((DATA / "sysstat" / "sar.json").read_text())

    def edit(change: Callable[[dict], None]) -> Input:
        document = json.loads(json.dumps(base))
        change(document["sysstat"]["hosts"][0])
        return Input(json.dumps(document, indent=1).encode())

    def cpu(value: object) -> Callable[[dict], None]:
        return lambda host: host["statistics"][1]["cpu-load"][0].update(user=value)

    def stamps(host: dict, first: int, second: int) -> None:
        stats = host["statistics"]
        stats[first]["timestamp"], stats[second]["timestamp"] = (
            stats[second]["timestamp"], stats[first]["timestamp"])  # fmt: skip

    text = json.dumps(base, indent=1).encode()
    return _generic(
        text, ".json",
        malformed=lambda: Input(text[: len(text) // 2]),
        non_numeric_cell=lambda: edit(cpu("fast")),
        NaN=lambda: Input(edit(cpu(12345.678)).content.replace(b"12345.678", b"NaN")),
        empty_cell=lambda: edit(cpu(None)),
        **{"1e308": lambda: edit(cpu(1e308)), "-1e308": lambda: edit(cpu(-1e308))},
        negative=lambda: edit(cpu(-5)),
        bad_time=lambda: edit(lambda h: h["statistics"][1]["timestamp"].update(time="25:99:00")),
        duplicate_time=lambda: edit(lambda h: h["statistics"][1].update(
            timestamp=h["statistics"][0]["timestamp"])),
        backwards_time=lambda: edit(lambda h: stamps(h, 0, 1)),
        one_row=lambda: edit(lambda h: h.update(statistics=h["statistics"][:1])),
        header_only=lambda: edit(lambda h: h.update(statistics=[])),
        hostile_name=lambda: edit(lambda h: h.update(nodename="<script>\n--c")),
    )  # fmt: skip


def pidstat_cases() -> dict[str, Input]:
    text = (DATA / "sysstat" / "pidstat-epoch.txt").read_text()
    lines = text.splitlines(keepends=True)
    data = [i for i, line in enumerate(lines) if line[:1].isdigit()]
    k = data[3]  # the spinner of the first report

    def token(index: int, value: str) -> Input:
        fields = lines[k].split()
        fields[index] = value
        return Input("".join([*lines[:k], "  ".join(fields) + "\n", *lines[k + 1 :]]).encode())

    def time_of(line: int, value: str) -> str:
        return value + lines[line][len(lines[line].split()[0]) :]

    later = [i for i in data if lines[i].rstrip().endswith("spinner")][2]
    banner = "".join(lines[: data[0]])
    return _generic(
        text.encode(), ".txt",
        missing_field=lambda: Input("".join(
            [*lines[:k], " ".join(lines[k].split()[:5]) + "\n", *lines[k + 1 :]]).encode()),
        non_numeric_cell=lambda: token(7, "fast"),
        NaN=lambda: token(7, "nan"),
        **{"1e308": lambda: token(7, "1e308"), "-1e308": lambda: token(7, "-1e308")},
        negative=lambda: token(7, "-5.00"),
        bad_time=lambda: token(0, "17955x0392"),
        duplicate_time=lambda: Input("".join(
            [*lines[: k + 1], lines[k].replace("29.41", "30.00"), *lines[k + 1 :]]).encode()),
        backwards_time=lambda: Input("".join(
            [*lines[:later], time_of(later, lines[data[0]].split()[0]), *lines[later + 1 :]]
        ).encode()),
        header_only=lambda: Input(banner.encode()),
        hostile_name=lambda: token(-1, "<script>alert(1)</script>"),
        name_dashes=lambda: token(-1, "--c"),
        unicode_name=lambda: token(-1, "Ωμέγα-😀"),
    )  # fmt: skip


def perfmon_cases() -> dict[str, Input]:
    raw = (DATA / "perfmon" / "relog.csv").read_bytes()
    text = raw.decode("utf-8-sig")
    rows = [line.split('","') for line in text.strip("\r\n").split("\r\n")]

    def cell(i: int, j: int, value: str) -> Input:
        table = [list(row) for row in rows]
        table[i][j] = value
        return Input(("\r\n".join('","'.join(r) for r in table) + "\r\n").encode())

    def join(table: list[list[str]]) -> Input:
        return Input(("\r\n".join('","'.join(r) for r in table) + "\r\n").encode())

    stamp = lambda i: rows[i][0]  # noqa: E731
    return _generic(
        raw, ".csv",
        header_only=lambda: join(rows[:1]),
        extra_field=lambda: join([*rows[:2], [*rows[2], "1.0"], *rows[3:]]),
        unterminated_quote=lambda: Input(("\r\n".join('","'.join(r) for r in rows[:3])
                                          + '\r\n"05/01/2024 09:01:00.000,"1\r\n').encode()),
        non_numeric_cell=lambda: cell(3, 2, "fast"),
        NaN=lambda: cell(3, 2, "NaN"),
        empty_cell=lambda: cell(3, 2, " "),
        **{"1e308": lambda: cell(3, 2, "1e308"), "-1e308": lambda: cell(3, 2, "-1e308")},
        negative=lambda: cell(3, 2, "-5"),
        bad_time=lambda: cell(3, 0, '"13/45/2024 99:00:00.000'),
        duplicate_time=lambda: cell(3, 0, stamp(2)),
        backwards_time=lambda: join([rows[0], rows[1], rows[3], rows[2], *rows[4:]]),
        one_row=lambda: join(rows[:2]),
        hostile_name=lambda: Input(raw.replace(b"sqlservr", b"<script>--c")),
    )  # fmt: skip


def findings_cases(folder: Path) -> dict[str, Input]:
    seed = folder / "findings-seed.csv"
    seed.write_text(metric_table().text())
    done = _run(["--format", "jsonl", "changepoints", str(seed)])
    lines = done.out.splitlines()
    first = json.loads(lines[0])

    def edit(**change: object) -> Input:
        return Input((json.dumps({**first, **change}, ensure_ascii=False) + "\n").encode())

    def evidence(value: float) -> Input:
        items = [dict(first["evidence"][0], value=value), *first["evidence"][1:]]
        return edit(evidence=items)

    return _generic(
        done.out.encode(), ".jsonl",
        malformed=lambda: Input((lines[0][: len(lines[0]) // 2] + "\n").encode()),
        missing_field=lambda: Input((json.dumps({k: v for k, v in first.items()
                                                 if k != "start"}) + "\n").encode()),
        non_numeric_cell=lambda: edit(severity="fast"),
        NaN=lambda: Input(evidence(12345.678).content.replace(b"12345.678", b"NaN")),
        **{"1e308": lambda: evidence(1e308)},
        bad_time=lambda: edit(start="2024-13-45T99:00"),
        backwards_time=lambda: edit(start="2024-05-02T00:00:00+00:00"),
        hostile_name=lambda: edit(entity="<script>alert(1)</script>\n--c"),
        line_separator_in_name=lambda: edit(entity="web\u2028x\x85y"),
        header_only=lambda: Input(b"\n"),
    )  # fmt: skip


def config_cases(folder: Path) -> dict[str, Input]:
    data = folder / "config-data.csv"
    data.write_text(metric_table().text())
    base = (f'[[sources]]\npath = {json.dumps(str(data))}\ncontract = "metric"\n\n'
            '[analyze]\nfamilies = ["changepoints"]\n')  # fmt: skip

    def text(value: str) -> Input:
        return Input(value.encode())

    return _generic(
        base.encode(), ".toml",
        malformed=lambda: text(base.replace('contract = "metric"', 'contract = "metric')),
        unknown_key=lambda: text(base + "colour = 1\n"),
        non_numeric_cell=lambda: text(base + "\n[detectors.changepoints]\nalpha = \"fast\"\n"),
        NaN=lambda: text(base + "\n[detectors.changepoints]\nalpha = nan\n"),
        **{"1e308": lambda: text(base + "\n[detectors.changepoints]\nmin_size = 1e308\n")},
        negative=lambda: text(base + "\n[detectors.changepoints]\nmin_size = -5\n"),
        bad_time=lambda: text(base.replace('contract = "metric"',
                                           'contract = "metric"\nsince = "2024-13-45"')),
        hostile_name=lambda: text(base.replace(str(data), "<script>\\n--c")),
    )  # fmt: skip


def fleet_cases(folder: Path) -> dict[str, Input]:
    table = process_table()
    cases: dict[str, Input] = {}
    for name, make in TABLE_CASES.items():
        given = make(table)
        if given.content and given.suffix == ".csv" and not given.readonly_store:
            try:
                frame = pd.read_csv(io.BytesIO(given.content))
            except Exception:
                continue
            if "time" in frame:
                frame["time"] = pd.to_datetime(frame["time"], errors="coerce", utc=True)
            given = Input(b"", ".parquet", parquet=frame)
        elif given.content is not None and given.parquet is None:
            given.suffix = ".parquet"
        cases[name] = given
    cases.pop("read-only store", None)  # fleet scan keeps no store
    return cases


@dataclass
class Command:
    """A command: the words to run it on a file and a store, and the inputs to try."""

    name: str
    cases: Callable[[Path], dict[str, Input]]
    words: Callable[[Path, Path], list[str]]  # (file, store) -> arguments


def _table(make: Callable[[Path], Table]) -> Callable[[Path], dict[str, Input]]:
    return lambda folder: {name: case(make(folder)) for name, case in TABLE_CASES.items()}


def _commands(folder: Path) -> list[Command]:
    config = folder / "analyze.toml"

    def analyze(path: Path, store: Path) -> list[str]:
        config.write_text(
            f'[[sources]]\npath = {json.dumps(str(path))}\ncontract = "metric"\n\n'
            f'[analyze]\nfamilies = ["changepoints"]\n\n[store]\npath = {json.dumps(str(store))}\n'
        )
        return ["analyze", str(config), "--no-notify", "--no-report"]

    report = folder / "report.html"
    return [
        Command("changepoints", _table(lambda f: metric_table()),
                lambda p, s: ["changepoints", str(p), "--store", str(s)]),
        Command("detect", _table(lambda f: metric_table()),
                lambda p, s: ["detect", str(p), "--store", str(s)]),
        Command("workload", _table(lambda f: transactions_table()),
                lambda p, s: ["workload", str(p), "--source", "table", "--window", "1m",
                              "--store", str(s)]),
        Command("segments", _table(lambda f: workload_frame_table()),
                lambda p, s: ["segments", str(p), "--source", "frame", "--store", str(s)]),
        Command("processes", _table(lambda f: process_table()),
                lambda p, s: ["processes", "scan", str(p), "--store", str(s)]),
        Command("bottleneck", _table(counter_table),
                lambda p, s: ["bottleneck", "infer", str(p), "--store", str(s)]),
        Command("analyze", _table(lambda f: metric_table()), analyze),
        Command("import sar", lambda f: sar_cases(),
                lambda p, s: ["import", "sar", str(p), "--store", str(s)]),
        Command("import pidstat", lambda f: pidstat_cases(),
                lambda p, s: ["import", "pidstat", str(p), "--store", str(s)]),
        Command("import perfmon", lambda f: perfmon_cases(),
                lambda p, s: ["import", "perfmon", str(p), "--store", str(s)]),
        Command("report", findings_cases,
                lambda p, s: ["report", "--findings", str(p), "--store", str(s), "-o",
                              str(report)]),
        Command("config check", config_cases, lambda p, s: ["config", "check", str(p)]),
        Command("fleet scan", fleet_cases,
                lambda p, s: ["fleet", "scan", str(p), "--workers", "1", "--tasks", "1",
                              "--no-progress"]),
    ]  # fmt: skip


def _judge(outcome: Outcome, names: tuple[str, ...]) -> str:
    if outcome.trace:
        last = [line for line in outcome.trace.splitlines() if line.strip()][-1]
        return f"TRACEBACK {last[:90]}"
    if outcome.code in (0, 1):
        lines = [line for line in outcome.out.splitlines() if line.startswith("{")]
        return f"ok {len(lines)}" + (" +err" if outcome.errors else "")
    if outcome.code != 2 or len(outcome.errors) != 1:
        return f"exit {outcome.code} ({len(outcome.errors)} error lines)"
    message = outcome.errors[0]
    flags = (
        "f" if any(name in message for name in names) else ".",
        "l" if re.search(r":\d+:|\brow \d+|line \d+|\(at \w", message) else ".",
        "w" if re.search(r"column '|field|key |counter '", message) else ".",
    )
    return "E" + "".join(flags)


def sweep(
    only: set[str] | None, commands: set[str] | None, verbose: bool
) -> list[tuple[str, str, str]]:
    results: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        folder.chmod(0o755)  # the read-only case runs as nobody, who reads the inputs
        seed_store = folder / "seed.duckdb"
        seed = folder / "seed.csv"
        seed.write_text(metric_table().text())
        first = _run(["changepoints", str(seed), "--store", str(seed_store)])
        held = _stored_findings(seed_store)
        assert held, first
        for command in _commands(folder):
            if commands and command.name not in commands:
                continue
            for case, given in command.cases(folder).items():
                if only and case not in only:
                    continue
                work = folder / "case"
                shutil.rmtree(work, ignore_errors=True)
                work.mkdir()
                path = work / f"input{given.suffix}"
                if given.folder:
                    path.mkdir()
                elif given.parquet is not None:
                    given.parquet.to_parquet(path)
                elif given.content is not None:
                    path.write_bytes(given.content)
                store = work / "store.duckdb"
                shutil.copy(seed_store, store)
                args = ["--format", "jsonl", *command.words(path, store)]
                if given.readonly_store:
                    os.chmod(work, 0o777)
                    os.chmod(store, 0o444)  # ... but not write the store
                    outcome = _run_as_nobody(args)
                    os.chmod(store, 0o644)
                else:
                    outcome = _run(args)
                verdict = _judge(outcome, (path.name, store.name))
                if held - _stored_findings(store):
                    verdict += " LOST"
                results.append((case, command.name, verdict))
                if verbose:
                    shown = outcome.errors[0] if outcome.errors else outcome.trace[-300:]
                    print(f"{command.name:12} {case:22} {verdict:12} {shown[:400]}",
                          file=sys.__stderr__)  # fmt: skip
    return results


def table_of(results: list[tuple[str, str, str]]) -> str:
    cases = list(dict.fromkeys(case for case, _, _ in results))
    commands = list(dict.fromkeys(command for _, command, _ in results))
    cell = {(case, command): verdict for case, command, verdict in results}
    lines = ["| case | " + " | ".join(commands) + " |", "|---" * (len(commands) + 1) + "|"]
    for case in cases:
        lines.append(f"| {case} | " + " | ".join(cell.get((case, c), "") for c in commands) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated cases")
    parser.add_argument("--commands", help="comma-separated commands")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    commands = set(args.commands.split(",")) if args.commands else None
    print(table_of(sweep(only, commands, args.verbose)))


if __name__ == "__main__":
    main()
