"""pgbench per-transaction logs (-l): the layouts of the PostgreSQL 15 manual, bad lines, files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.errors import ConfigError, DataError, SourceError
from perfsleuth.frames import workload_types
from perfsleuth.sources.pgbench import find_pgbench_logs, read_pgbench, script_names

# The examples of `man pgbench` (PostgreSQL 15), "Per-Transaction Logging".
PLAIN = """\
0 199 2241 0 1175850568 995598
0 200 2465 0 1175850568 998079
0 201 2513 0 1175850569 608
0 202 2038 0 1175850569 2663
"""
RATE_LIMITED = """\
0 81 4621 0 1412881037 912698 3005
0 82 6173 0 1412881037 914578 4304
0 83 skipped 0 1412881037 914578 5217
0 83 skipped 0 1412881037 914578 5099
0 83 4722 0 1412881037 916203 3108
0 84 4142 0 1412881037 918023 2333
0 85 2465 0 1412881037 919759 740
"""
RETRIES = """\
3 0 47423 0 1499414498 34501 3
3 1 8333 0 1499414498 42848 0
0 0 failed 0 1499414498 84905 9
2 0 serialization 0 1499414498 86248 9
1 3 41718 1 1499414498 67879 4
"""
RATE_AND_RETRIES = "0 5 1200 2 1700000000 5 310 0\n"  # --rate and --max-tries: 8 fields


def write(tmp_path: Path, name: str, text: str, *, zipped: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if zipped else text.encode())
    return path


def test_plain_log(tmp_path: Path) -> None:
    tx = read_pgbench(write(tmp_path, "pgbench_log.4242", PLAIN), at="end")
    rec = tx.records
    assert rec["latency"].tolist() == pytest.approx([2241e-6, 2465e-6, 2513e-6, 2038e-6])
    assert rec["time"].iat[0] == pd.Timestamp(1175850568995598, unit="us", tz="UTC")
    assert rec["time"].iat[2] == pd.Timestamp("2007-04-06 09:09:29.000608", tz="UTC")
    assert tx.types == ["script0"]
    assert tx.rejects.count == 0 and not tx.untimed


def test_transactions_are_filed_by_start_time_by_default(tmp_path: Path) -> None:
    # Kelly's model counts the transactions that began in a window: completion - latency.
    tx = read_pgbench(write(tmp_path, "p.1", PLAIN))
    assert tx.records["time"].iat[0] == pd.Timestamp(1175850568995598 - 2241, unit="us", tz="UTC")
    assert tx.records["time"].iat[2] == pd.Timestamp(1175850569000608 - 2513, unit="us", tz="UTC")
    with pytest.raises(ConfigError, match="at must be"):
        read_pgbench(write(tmp_path, "p.1", PLAIN), at="middle")  # type: ignore[arg-type]


def test_skipped_and_failed_are_counted_not_timed(tmp_path: Path) -> None:
    tx = read_pgbench([write(tmp_path, "a.1", RATE_LIMITED), write(tmp_path, "b.2", RETRIES)])
    assert dict(tx.untimed) == {"skipped": 2, "failed": 1, "serialization": 1}
    assert len(tx.records) == 5 + 3
    assert tx.rejects.count == 0
    assert "2 transaction(s) logged as skipped" in tx.summary()


def test_eight_fields(tmp_path: Path) -> None:
    tx = read_pgbench(write(tmp_path, "p.1", RATE_AND_RETRIES), scripts=["a", "b", "c"])
    assert tx.records["type"].tolist() == ["c"]
    assert tx.records["latency"].tolist() == pytest.approx([0.0012])


def test_script_names(tmp_path: Path) -> None:
    path = write(tmp_path, "p.1", RETRIES)
    assert read_pgbench(path, scripts=["select", "update"]).types == ["select", "update"]
    assert read_pgbench(path, scripts={0: "zero", 1: "one"}).types == ["one", "zero"]
    assert script_names(["sql/point_select.sql@10", "/x/update.sql", "tpcb-like@2"]) == [
        "point_select",
        "update",
        "tpcb-like",
    ]
    with pytest.raises(ConfigError, match="not unique"):
        script_names(["a/x.sql", "b/x.sql"])
    with pytest.raises(ConfigError):
        read_pgbench(path, scripts={-1: "x"})
    with pytest.raises(ConfigError):
        read_pgbench(path, scripts=["ok", ""])


def test_unknown_script_number_is_a_bad_line_when_names_are_given(tmp_path: Path) -> None:
    path = write(tmp_path, "p.1", PLAIN + "0 203 1000 3 1175850569 9000\n")
    assert read_pgbench(path).types == ["script0", "script3"]  # no names: every id is a type
    tx = read_pgbench(path, scripts=["only"])
    assert tx.types == ["only"]
    assert [(b.line, b.field, b.reason) for b in tx.rejects.examples] == [
        (5, "script_no", "unknown script number: '3'")
    ]
    with pytest.raises(DataError, match=r"p\.1:5: column 'script_no': unknown script number"):
        read_pgbench(path, scripts=["only"], strict=True)


BAD = """\
0 1 1000 0 1700000000 1
0 2 1000 0 1700000000
0 3 -15 0 1700000000 3
0 4 1.5ms 0 1700000000 4

0 5 1000 0 17 5
0 6 1000 0 1700000000 1000000
1700000010 12 34567 123456789 1200 8000 0
x y z 0 1700000000 8
0 7 1000 0 1700000000 9 10 11 12
0 8 2000 0 1700000001 10
"""
BAD_EXPECTED = [
    (2, None, "expected 6 to 8 fields"),
    (3, "time", "latency is negative"),
    (4, "time", "latency is not a number of microseconds"),
    (6, "time_epoch", "time_epoch is not a Unix time between 2000 and 2100"),
    (7, "time_us", "time_us must be below 1000000"),
    (8, "time_epoch", "time_epoch is not a Unix time between 2000 and 2100"),  # aggregated log
    (9, None, "expected 6 to 8 fields"),
    (10, None, "expected 6 to 8 fields"),
]


@pytest.mark.parametrize("chunk_lines", [100_000, 1, 4])
def test_bad_lines_counted_with_line_numbers(tmp_path: Path, chunk_lines: int) -> None:
    tx = read_pgbench(write(tmp_path, "bad.log.1", BAD), chunk_lines=chunk_lines)
    assert len(tx.records) == 2 and tx.lines == 10
    got = [(b.line, b.field, b.reason.split(" (")[0].split(":")[0]) for b in tx.rejects.examples]
    assert got == BAD_EXPECTED
    assert tx.rejects.count == len(BAD_EXPECTED)


def test_strict_stops_at_the_first_bad_line(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"bad\.log\.1:2: expected 6 to 8 fields"):
        read_pgbench(write(tmp_path, "bad.log.1", BAD), strict=True)
    with pytest.raises(DataError, match=r"neg\.1:5: column 'time': latency is negative: '-15'"):
        read_pgbench(write(tmp_path, "neg.1", PLAIN + "0 3 -15 0 1700000000 3\n"), strict=True)


def test_gzip_log(tmp_path: Path) -> None:
    tx = read_pgbench(write(tmp_path, "pgbench_log.9.gz", BAD, zipped=True))
    assert [b.line for b in tx.rejects.examples] == [n for n, _, _ in BAD_EXPECTED]


@pytest.mark.parametrize(("text", "message"), [("", "empty"), ("junk\n", "no usable")])
def test_unusable_logs(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(DataError, match=message):
        read_pgbench(write(tmp_path, "pgbench_log.1", text))


def test_a_folder_of_thread_logs(tmp_path: Path) -> None:
    write(tmp_path, "pgbench_log.4242", PLAIN)
    write(tmp_path, "pgbench_log.4242.1", RATE_LIMITED)
    write(tmp_path, "phase2.77.gz", RETRIES, zipped=True)
    write(tmp_path, "notes.txt", "not a log\n")
    write(tmp_path, "script.sql", "SELECT 1;\n")
    names = [p.name for p in find_pgbench_logs(tmp_path)]
    assert names == ["pgbench_log.4242", "pgbench_log.4242.1", "phase2.77.gz"]
    tx = read_pgbench(tmp_path)
    assert len(tx.sources) == 3 and len(tx.records) == 4 + 5 + 3
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match="no pgbench logs"):
        read_pgbench(empty)
    with pytest.raises(SourceError):
        find_pgbench_logs(tmp_path / "missing")


def test_workload_frame(tmp_path: Path) -> None:
    lines = "".join(
        f"{c} {i} {1000 * (s + 1)} {s} {1700000000 + i} {c * 1000}\n"
        for i in range(120)
        for c in range(2)
        for s in range(2)
    )
    tx = read_pgbench(write(tmp_path, "pgbench_log.1", lines), scripts=["select", "update"])
    frame = tx.workload("1m")
    assert workload_types(frame) == ["select", "update"]
    assert frame["n[select]"].sum() == 240 and frame["n[update]"].sum() == 240
    busy = frame["n[update]"] > 0
    assert frame.loc[busy, "rt_mean[update]"].tolist() == pytest.approx([0.002] * busy.sum())
    # 1700000000 s is 22:13:20 UTC, less 1 or 2 ms: the first 1-minute window starts at 22:13
    assert frame["time"].iat[0] == pd.Timestamp("2023-11-14 22:13", tz="UTC")
