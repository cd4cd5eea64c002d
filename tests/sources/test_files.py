"""Frames from files: wide files (one or many value columns), standard input, and real NAB
series whose times repeat or go backwards (tests/data/nab, MIT licence)."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfsleuth.errors import DataError
from perfsleuth.frames import coverage_of
from perfsleuth.sources.files import CsvRecords, read_frame, read_metric, read_table

NAB = Path(__file__).resolve().parents[1] / "data" / "nab"
EXCHANGE = NAB / "exchange-2_cpc_results.csv"  # 2011-08-24 12:00:01 twice (lines 52, 53)
LATENCY = NAB / "ec2_request_latency_system_failure.csv"  # 12 rows at 03:00 on DST day
TEMPERATURE = NAB / "machine_temperature_system_failure.csv"  # back to 02:00 at line 63


def stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


# -- wide files ---------------------------------------------------------------------------------


def test_a_timestamp_value_file_is_read_as_wide() -> None:
    frame = read_frame(EXCHANGE, "metric", duplicates="first")
    assert set(frame["entity"]) == {"exchange-2_cpc_results"}
    assert set(frame["metric"]) == {"value"}
    assert len(frame) == 100  # 101 rows, one repeated hour
    coverage = coverage_of(frame)
    assert coverage is not None and coverage.dropped_duplicates == 1


@pytest.mark.parametrize(
    ("path", "pattern", "fix"),
    [
        (
            EXCHANGE,
            r"exchange-2_cpc_results\.csv:53: column 'timestamp': duplicate .* than line 52; "
            r"to keep the first, use --duplicates first",
            {"duplicates": "first"},
        ),
        (
            LATENCY,
            r"ec2_request_latency_system_failure\.csv:61: column 'timestamp': duplicate "
            r".*2014-03-09 03:00:00\+00:00 .* than line 60",
            {"duplicates": "first"},
        ),
        (
            TEMPERATURE,
            r"machine_temperature_system_failure\.csv:63: column 'timestamp': time goes backwards "
            r"to 2014-01-07T02:00:00\+00:00 .*; to accept unsorted input, use --disorder sort "
            r".*; it also repeats times with different values; to keep the first, use "
            r"--duplicates first",
            {"disorder": "sort", "duplicates": "first"},
        ),
    ],
)
def test_real_series_with_repeated_or_backward_times(
    path: Path, pattern: str, fix: dict[str, str]
) -> None:
    with pytest.raises(DataError, match=pattern):
        read_frame(path, "metric")
    frame = read_frame(path, "metric", **fix)  # type: ignore[arg-type]
    assert frame["time"].is_monotonic_increasing and not frame["time"].duplicated().any()


def test_the_daylight_saving_hour_of_a_real_series() -> None:
    # NAB stamps the skipped 02:xx samples of 2014-03-09 all 03:00: twelve rows, one time
    raw, _ = read_table(LATENCY)
    assert (raw["timestamp"] == "2014-03-09 03:00:00").sum() == 12
    frame = read_frame(LATENCY, "metric", duplicates="first")
    coverage = coverage_of(frame)
    assert coverage is not None and coverage.dropped_duplicates == 11
    # read in the zone it was recorded in, 03:00 local is 07:00 UTC (EDT, UTC-4)
    local = read_frame(LATENCY, "metric", duplicates="first", tz="America/New_York")
    assert pd.Timestamp("2014-03-09T07:00:00Z") in set(local["time"])


def test_wide_files_with_several_value_columns(write_csv: Callable[[str, str], Path]) -> None:
    path = write_csv("host.csv", "ts,latency_ms,cpu\n1700000000,20,0.5\n1700000060,21,0.6\n")
    with pytest.raises(DataError, match=r"host\.csv: a wide file with 2 value columns"):
        read_frame(path, "metric")
    frame = read_metric(path, values=["latency_ms", "cpu"], entity="web-1", unit="")
    assert sorted(set(frame["metric"])) == ["cpu", "latency_ms"]
    assert set(frame["entity"]) == {"web-1"}
    one = read_metric(path, values=["cpu"], time_column="ts")
    assert list(one["value"]) == [0.5, 0.6]


def test_a_time_and_a_text_column_says_which_value_is_not_a_number(
    write_csv: Callable[[str, str], Path],
) -> None:
    """A wide file whose values carry thousands separators is not read as wide (a text column
    means a long file missing columns), and the error shows the first value that is not a
    number, with its line; naming the columns then reports that cell as a bad value."""
    text = 'time,value\n2024-01-01T00:00:00Z,12\n\n2024-01-01T00:01:00Z,"10,386.5"\n'
    path = write_csv("thousands.csv", text)
    with pytest.raises(DataError) as caught:
        read_metric(path)
    assert "missing column(s) 'entity', 'metric'" in str(caught.value)
    assert "its column 'value' is not numeric: line 4 holds '10,386.5'" in str(caught.value)
    with pytest.raises(DataError, match=r"thousands\.csv:4: column 'value': not a number"):
        read_metric(path, values=["value"])


def test_a_long_file_missing_a_column_is_not_taken_for_wide(
    write_csv: Callable[[str, str], Path],
) -> None:
    path = write_csv("long.csv", "time,entity,value\n2024-01-01T00:00:00Z,web,5\n")
    with pytest.raises(DataError, match=r"metric frame is missing column\(s\) 'metric'"):
        read_frame(path, "metric")
    with pytest.raises(DataError, match=r"long\.csv: no column\(s\) 'when'"):
        read_metric(path, values=["value"], time_column="when")
    with pytest.raises(DataError, match=r"long\.csv: not a wide file"):
        read_metric(path, time_column="entity")


# -- standard input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("timestamp;value\n2024-01-01 00:00;10,5\n2024-01-01 00:05;-0,25\n", [10.5, -0.25]),
        ("timestamp\tvalue\n2024-01-01 00:00\t10.5\n2024-01-01 00:05\t7\n", [10.5, 7.0]),
        ('"timestamp";"value"\n"2024-01-01 00:00";"3,0"\n"2024-01-01 00:05";"4"\n', [3.0, 4.0]),
    ],
)
def test_semicolon_and_tab_separated_files_are_read(
    write_csv: Callable[[str, str], Path], text: str, values: list[float]
) -> None:
    # the separator is the header's (a comma, else a tab, else a semicolon); a semicolon file's
    # numbers may have a decimal comma, as the spreadsheets of such locales write them
    frame = read_metric(write_csv("series.csv", text))
    assert frame["value"].tolist() == values


def test_errors_in_a_semicolon_file_name_their_line(
    write_csv: Callable[[str, str], Path],
) -> None:
    rows = [f"2024-01-01 00:{m:02d};{m},5" for m in range(0, 30, 5)]
    bad = rows[:]
    bad[3] = "2024-01-01 00:15;fast"
    with pytest.raises(DataError, match=r"bad\.csv:5: column 'value': not a number: 'fast'"):
        read_metric(write_csv("bad.csv", "time;value\n" + "\n".join(bad) + "\n"))
    short = rows[:]
    short[4] = "2024-01-01 00:20"
    with pytest.raises(DataError, match=r"short\.csv:6: malformed row: expected 2 fields, saw 1"):
        read_metric(write_csv("short.csv", "time;value\n" + "\n".join(short) + "\n"))
    # a comma that is not a decimal comma stays text, refused as a number
    with pytest.raises(DataError, match=r"t\.csv:2: column 'value': not a number: '1,000,5'"):
        read_metric(write_csv("t.csv", "time;value\n2024-01-01 00:00;1,000,5\n"), values=["value"])


def test_csv_from_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    stdin(monkeypatch, EXCHANGE.read_bytes())
    frame = read_frame("-", "metric", duplicates="first")
    assert len(frame) == 100 and set(frame["entity"]) == {"stdin"}
    stdin(monkeypatch, b"time,entity,metric,value\n2024-01-01T00:00:00Z,a,m,fast\n")
    with pytest.raises(DataError, match=r"<stdin>:2: column 'value': not a number: 'fast'"):
        read_frame("-", "metric")


def test_parquet_from_standard_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    frame = pd.DataFrame({"time": [1.7e9, 1.7e9 + 60], "entity": "a", "metric": "m", "value": 1})
    frame.to_parquet(tmp_path / "f.parquet")
    stdin(monkeypatch, (tmp_path / "f.parquet").read_bytes())
    assert len(read_frame("-", "metric")) == 2


@pytest.mark.parametrize(("suffix", "module"), [(".gz", "gzip"), (".bz2", "bz2"), (".xz", "lzma")])
def test_a_compressed_csv_reads_and_its_errors_name_the_line(
    tmp_path: Path, suffix: str, module: str
) -> None:
    import importlib

    opener = importlib.import_module(module).open
    good = tmp_path / f"good.csv{suffix}"
    with opener(good, "wt", encoding="utf-8") as out:
        out.write("time,entity,metric,value\n1700000000,a,m,1\n1700000060,a,m,\n")
    with pytest.raises(DataError, match=r"good\.csv.*:3.*value"):
        read_frame(good, "metric")  # the missing value (a row ending in "") is located
    assert len(read_frame(good, "metric", missing="drop")) == 1


# -- where a CSV's records are --------------------------------------------------------------------

_CELL = st.text(alphabet='ab1 ,\n"\r\t.-:Z\u00e9', max_size=4)


@given(rows=st.lists(st.lists(_CELL, max_size=4), max_size=8), end=st.sampled_from(["", "\n"]))
def test_csv_records_are_counted_as_the_csv_module_reads_them(
    rows: list[list[str]], end: str
) -> None:
    # unquoted rows (the counting in numpy) and whatever quoting and line ends the cells need
    # (the csv module): the same first line and field count of every record either way
    for text in (
        "\n".join(",".join(c.replace('"', "").replace("\r", "") for c in r) for r in rows) + end,
        "\n".join(",".join(f'"{c}"' if set(c) & set('",\n\r') else c for c in r) for r in rows)
        + end,
    ):
        data = text.encode("utf-8")
        reader = csv.reader(io.StringIO(text, newline=""))
        expected, start = [], 1
        for record in reader:
            expected.append((start, len(record)))
            start = reader.line_num + 1
        records = CsvRecords(data)
        assert [records.record(i) for i in range(len(expected))] == expected
