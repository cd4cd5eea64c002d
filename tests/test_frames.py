"""The frame contracts: every bad input gets an error naming file, line and column."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.errors import DataError, SourceError
from perfsleuth.frames import coverage_of, normalise, workload_types
from perfsleuth.sources.files import read_frame

HEADER = "time,entity,metric,value\n"
ROW1 = "2024-01-01T00:00:00Z,web,rt,5\n"
ROW2 = "2024-01-01T00:01:00Z,web,rt,6\n"

# (name, file text, message pattern): the acceptance list of issue 2 plus its relatives.
BAD_CSV = [
    (
        "malformed row",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,6,9\n",
        r"bad\.csv:3: malformed row: Expected 4 fields",
    ),
    (
        "extra field in the first row",
        HEADER + "2024-01-01T00:00:00Z,web,rt,6,9\n" + ROW2,
        r"bad\.csv:2: malformed row: Expected 4 fields in line 2, saw 5",
    ),
    (
        "short row",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt\n",
        r"bad\.csv:3: malformed row: expected 4 fields, saw 3",
    ),
    (
        "repeated header",
        "time,entity,metric,value,value\n2024-01-01T00:00:00Z,web,rt,5,1\n",
        r"bad\.csv:1: header repeats column\(s\) \['value'\]",
    ),
    (
        "missing column",
        "time,entity,value\n2024-01-01T00:00:00Z,web,5\n",
        r"bad\.csv: metric frame is missing column\(s\) 'metric'",
    ),
    ("backwards time", HEADER + ROW2 + ROW1, r"bad\.csv:3: column 'time': time goes backwards"),
    (
        "NaN value",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,NaN\n",
        r"bad\.csv:3: column 'value': missing value",
    ),
    (
        "empty value",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,\n",
        r"bad\.csv:3: column 'value': missing value",
    ),
    ("empty file", "", r"bad\.csv: empty file"),
    ("header only", HEADER, r"bad\.csv: no data rows"),
    ("blank lines only", HEADER + "\n\n", r"bad\.csv: no data rows"),
    (
        "text in a number",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,fast\n",
        r"bad\.csv:3: column 'value': not a number: 'fast'",
    ),
    (
        "huge value",
        HEADER + "2024-01-01T00:00:00Z,web,rt,1e999\n",
        r"bad\.csv:2: column 'value': value out of range",
    ),
    (
        "bad time",
        HEADER + ROW1 + "yesterday,web,rt,6\n",
        r"bad\.csv:3: column 'time': not a time: 'yesterday'",
    ),
    (
        # epoch milliseconds are read now (time_unit="auto"); one among seconds is still refused
        "epoch in ms among seconds",
        HEADER + "1704067200,web,rt,5\n1704067260,web,rt,5\n1704067320000,web,rt,5\n",
        r"bad\.csv:4: column 'time': not a Unix time in seconds",
    ),
    (
        "text among Unix seconds",
        HEADER + "1704067200,web,rt,5\n1704067260,web,rt,5\nsoon,web,rt,5\n",
        r"bad\.csv:4: column 'time': not a time: 'soon'",
    ),
    (
        "year 9999",
        HEADER + ROW1 + "9999-01-01T00:00:00Z,web,rt,6\n",
        r"bad\.csv:3: column 'time': time '9999-01-01T00:00:00Z' is outside the years 1900",
    ),
    (
        "value too large to square",
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,1e155\n",
        r"bad\.csv:3: column 'value': value out of range: '1e155' \(magnitudes above 1e\+100",
    ),
    (
        "blank time",
        HEADER + ROW1 + ",web,rt,6\n",
        r"bad\.csv:3: column 'time': missing time; to skip such rows, use --missing drop",
    ),
    (
        "conflicting duplicate",
        HEADER + ROW1 + "2024-01-01T00:00:00Z,web,rt,7\n",
        r"bad\.csv:3: column 'time': duplicate .* than line 2",
    ),
    (
        "empty entity",
        HEADER + "2024-01-01T00:00:00Z,,rt,5\n",
        r"bad\.csv:2: column 'entity': empty name",
    ),
    (
        "unknown unit",
        "time,entity,metric,value,unit\n2024-01-01T00:00:00Z,web,rt,5,furlongs\n",
        r"bad\.csv:2: column 'unit': unknown unit 'furlongs'",
    ),
    (
        "line after a quoted newline",
        HEADER + '2024-01-01T00:00:00Z,"we\nb",rt,5\n2024-01-01T00:01:00Z,web,rt,x\n',
        r"bad\.csv:4: column 'value': not a number",
    ),
    (
        "line after a blank line",
        HEADER + ROW1 + "\n" + "2024-01-01T00:02:00Z,web,rt,x\n",
        r"bad\.csv:4: column 'value'",
    ),
]


@pytest.mark.parametrize(("case", "text", "pattern"), BAD_CSV, ids=[c[0] for c in BAD_CSV])
def test_bad_csv_names_file_line_and_column(
    write_csv: Callable[[str, str], Path], case: str, text: str, pattern: str
) -> None:
    path = write_csv("bad.csv", text)
    with pytest.raises(DataError, match=pattern):
        read_frame(path, "metric")


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        read_frame(tmp_path / "nope.csv", "metric")


def test_good_csv_is_normalised(write_csv: Callable[[str, str], Path]) -> None:
    path = write_csv(
        "ok.csv",
        "time,entity,metric,value,unit\n"
        "2024-01-01T01:00:00+01:00,web,rt,5,ms\n"
        "2024-01-01T00:01:00Z,web,rt,6,ms\n"
        "\n"
        "2024-01-01T00:01:00Z,web,rt,6,ms\n"  # identical repeat: dropped
        "2024-01-01T00:02:00Z,web,rt,7,ms\n"
        "2024-01-01T00:03:00Z,web,rt,7,ms\n"
        "2024-01-01T00:11:00Z,web,rt,7,ms\n",
    )
    frame = read_frame(path, "metric")
    assert str(frame["time"].dtype) == "datetime64[ns, UTC]"
    assert frame["time"].iloc[0] == pd.Timestamp("2024-01-01T00:00:00Z")
    np.testing.assert_allclose(frame["value"], [0.005, 0.006, 0.007, 0.007, 0.007])
    assert set(frame["unit"]) == {"s"}
    coverage = coverage_of(frame)
    assert coverage is not None
    assert (coverage.rows, coverage.series, coverage.dropped_duplicates) == (5, 1, 1)
    assert len(coverage.gaps) == 1  # 1 min steps, then 8 min
    assert coverage.gaps[0].start == pd.Timestamp("2024-01-01T00:03:00Z")


def test_policies_repair_when_asked(write_csv: Callable[[str, str], Path]) -> None:
    path = write_csv(
        "messy.csv",
        HEADER + ROW2 + ROW1 + "2024-01-01T00:00:00Z,web,rt,9\n2024-01-01T00:02:00Z,web,rt,nan\n",
    )
    frame = read_frame(path, "metric", missing="drop", disorder="sort", duplicates="first")
    assert list(frame["value"]) == [5.0, 6.0]
    coverage = coverage_of(frame)
    assert coverage is not None
    assert (coverage.dropped_missing, coverage.dropped_duplicates) == (1, 1)


def test_backwards_time_names_both_fixes_when_sorting_would_meet_a_repeat(
    write_csv: Callable[[str, str], Path],
) -> None:
    # a clock set back: 00:00 comes again with another value, so sorting alone is not enough
    repeat = "2024-01-01T00:00:00Z,web,rt,9\n"
    path = write_csv("clock.csv", HEADER + ROW1 + ROW2 + repeat)
    both = r"clock\.csv:4: .*--disorder sort .*; it also repeats times with different values; "
    with pytest.raises(DataError, match=both + r"to keep the first, use --duplicates first"):
        read_frame(path, "metric")
    # the same time in another series is no repeat; one with the same value is dropped quietly
    other_series = "2024-01-01T00:01:00Z,db,rt,3\n2024-01-01T00:00:00Z,db,rt,9\n"
    for rest in (other_series, ROW1):
        path = write_csv("clock.csv", HEADER + ROW1 + ROW2 + rest)
        with pytest.raises(DataError, match="backwards") as refused:
            read_frame(path, "metric")
        assert "--duplicates" not in str(refused.value)


def test_epoch_seconds_and_naive_times_are_utc() -> None:
    frame = normalise(
        pd.DataFrame(
            {"time": [1704067200, 1704067260.5], "entity": "a", "metric": "m", "value": [1, 2]}
        ),
        "metric",
    )
    assert frame["time"].iloc[1] == pd.Timestamp("2024-01-01T00:01:00.5Z")
    naive = normalise(
        pd.DataFrame(
            {"time": pd.to_datetime(["2024-01-01"]), "entity": "a", "metric": "m", "value": [1.0]}
        ),
        "metric",
    )
    assert naive["time"].iloc[0] == pd.Timestamp("2024-01-01T00:00:00Z")


def test_series_are_independent_for_ordering() -> None:
    frame = normalise(
        pd.DataFrame(
            {
                "time": ["2024-01-01T00:05:00Z", "2024-01-01T00:00:00Z"],
                "entity": ["a", "b"],
                "metric": "m",
                "value": [1.0, 2.0],
            }
        ),
        "metric",
    )
    assert list(frame["entity"]) == ["a", "b"]


def test_in_memory_errors_name_the_row() -> None:
    frame = pd.DataFrame({"time": [0, 1], "entity": "a", "metric": "m", "value": [1.0, np.nan]})
    with pytest.raises(DataError, match=r"<frame>: column 'value': missing value .*\(row 1\)"):
        normalise(frame, "metric", time_unit="s")  # seconds near 1970: said


def test_empty_frame_with_the_right_columns_is_valid() -> None:
    frame = normalise(pd.DataFrame(columns=["time", "entity", "metric", "value"]), "metric")
    assert frame.empty
    coverage = coverage_of(frame)
    assert coverage is not None and coverage.rows == 0 and coverage.start is None


def test_constant_and_hostile_names_pass_through_unchanged() -> None:
    hostile = "<script>alert(1)</script>'; DROP TABLE x; --"
    frame = normalise(
        pd.DataFrame({"time": [0, 60], "entity": hostile, "metric": "m", "value": [3.0, 3.0]}),
        "metric",
        time_unit="s",
    )
    assert set(frame["entity"]) == {hostile}


PROCESS_ROWS = {
    "time": ["2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z"],
    "node": "n1",
    "pid": ["42", "42"],
    "name": "java",
    "user": "app",
    "cpu": [0.5, 1.0],
    "rss_bytes": [1e9, 1.1e9],
}


def test_process_frame() -> None:
    frame = normalise(pd.DataFrame(PROCESS_ROWS), "process")
    assert frame["pid"].dtype == np.int64


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"pid": ["42", "4.5"]}, r"column 'pid': not an integer"),
        ({"cpu": [0.5, -1.0]}, r"column 'cpu': must not be negative"),
    ],
)
def test_bad_process_frames(change: dict[str, object], pattern: str) -> None:
    with pytest.raises(DataError, match=pattern):
        normalise(pd.DataFrame({**PROCESS_ROWS, **change}), "process")


def test_workload_frame() -> None:
    frame = pd.DataFrame(
        {
            "time": ["2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z"],
            "window_s": [300, 300],
            "n[browse]": [10, 12],
            "rt_sum[browse]": [1.5, 1.7],
            "n[buy]": [1, 0],
            "cpu_util": [0.3, 0.35],
        }
    )
    normalised = normalise(frame, "workload")
    assert workload_types(normalised) == ["browse", "buy"]
    with pytest.raises(DataError, match=r"rt_sum\[pay\] has no matching n\[pay\]"):
        normalise(frame.assign(**{"rt_sum[pay]": [1.0, 1.0]}), "workload")
    with pytest.raises(DataError, match=r"column 'cpu_util': must be a fraction"):
        normalise(frame.assign(cpu_util=[30.0, 35.0]), "workload")
    with pytest.raises(DataError, match=r"at least one n\[<type>\]"):
        normalise(frame[["time", "window_s"]], "workload")


def test_parquet_errors_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    pd.DataFrame(
        {"time": [0.0, 1.0], "entity": "a", "metric": "m", "value": [1.0, np.inf]}
    ).to_parquet(path)
    with pytest.raises(DataError, match=r"m\.parquet: column 'value': value out of range.*row 1"):
        read_frame(path, "metric", time_unit="s")


def test_normalised_frames_write_to_parquet_with_their_coverage(tmp_path: Path) -> None:
    frame = normalise(
        pd.DataFrame({"time": [0, 60, 120, 900], "entity": "a", "metric": "m", "value": 1.0}),
        "metric",
        time_unit="s",
    )
    frame.to_parquet(tmp_path / "f.parquet")
    again = pd.read_parquet(tmp_path / "f.parquet")
    assert coverage_of(again) == coverage_of(frame)
    coverage = coverage_of(again)
    assert coverage is not None and len(coverage.gaps) == 1


def test_errors_name_the_source_column_after_renaming(
    write_csv: Callable[[str, str], Path],
) -> None:
    path = write_csv("renamed.csv", "ts,host,m,v\n2024-01-01T00:00:00Z,web,rt,5\nnever,web,rt,6\n")
    with pytest.raises(DataError, match=r"renamed\.csv:3: column 'ts': not a time"):
        read_frame(
            path, "metric", columns={"ts": "time", "host": "entity", "m": "metric", "v": "value"}
        )


# -- messy input, accepted one way (issue 16) ---------------------------------------------------


def _metric(times: list[object], values: list[float] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        {"time": times, "entity": "a", "metric": "m", "value": values or [1.0] * len(times)}
    )


@pytest.mark.parametrize(
    ("stamps", "unit"),
    [
        ([1704067200, 1704067260], "auto"),  # seconds
        ([1704067200000, 1704067260000], "auto"),  # milliseconds: refused before issue 16
        ([1704067200000000, 1704067260000000], "auto"),  # microseconds
        ([1704067200000000000, 1704067260000000000], "auto"),  # nanoseconds
        (["1704067200000", "1704067260000"], "auto"),  # as CSV text
        ([1704067200000, 1704067260000], "ms"),
        ([1704067200.0, 1704067260.0], "s"),
    ],
)
def test_numeric_times_in_any_unit(stamps: list[object], unit: str) -> None:
    frame = normalise(_metric(stamps), "metric", time_unit=unit)  # type: ignore[arg-type]
    assert list(frame["time"]) == [
        pd.Timestamp("2024-01-01T00:00:00Z"),
        pd.Timestamp("2024-01-01T00:01:00Z"),
    ]


def test_a_given_time_unit_is_not_second_guessed() -> None:
    with pytest.raises(
        DataError, match=r"column 'time': not a Unix time in seconds: 1704067200000"
    ):
        normalise(_metric([1704067200000]), "metric", time_unit="s")
    with pytest.raises(DataError, match="time_unit must be one of"):
        normalise(_metric([1704067200]), "metric", time_unit="minutes")  # type: ignore[arg-type]


def test_naive_times_are_taken_in_the_given_zone() -> None:
    frame = normalise(
        _metric(["2024-07-01 12:00", "2024-07-01T12:01:00Z", "2024-07-01T12:02:00+02:00"]),
        "metric",
        tz="Europe/Paris",
        disorder="sort",
    )
    assert sorted(frame["time"]) == [
        pd.Timestamp("2024-07-01T10:00:00Z"),  # naive: Paris summer time
        pd.Timestamp("2024-07-01T10:02:00Z"),  # its own offset wins
        pd.Timestamp("2024-07-01T12:01:00Z"),
    ]
    naive = pd.to_datetime(["2024-01-15 12:00"])  # naive datetimes (Parquet) too
    assert normalise(_metric(list(naive)), "metric", tz="Europe/Paris")["time"].iat[0] == (
        pd.Timestamp("2024-01-15T11:00:00Z")
    )
    with pytest.raises(DataError, match="unknown time zone 'Mars/Olympus'"):
        normalise(_metric(["2024-07-01 12:00"]), "metric", tz="Mars/Olympus")


def test_daylight_saving_changes_in_local_times() -> None:
    # the autumn hour, twice in order: the first pass is summer time, the second winter time
    autumn = ["2024-10-27 01:30", "2024-10-27 02:30", "2024-10-27 02:30", "2024-10-27 03:30"]
    frame = normalise(_metric(autumn, [1.0, 2.0, 3.0, 4.0]), "metric", tz="Europe/Paris")
    assert list(frame["time"].dt.strftime("%H:%M")) == ["23:30", "00:30", "01:30", "02:30"]
    # the spring hour does not exist: refused, naming its line
    spring = _metric(["2024-03-31 01:30", "2024-03-31 02:30"])
    with pytest.raises(DataError, match=r"\(row 1\).*|'2024-03-31 02:30' does not exist"):
        normalise(spring, "metric", tz="Europe/Paris")


def test_since_and_until_keep_rows_before_any_check() -> None:
    frame = _metric(
        ["2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z", "bad"],
        [1.0, 2.0, 3.0, 4.0],
    )
    # the bad time is refused, named by its row
    with pytest.raises(DataError, match=r"not a time: 'bad'.*\(row 3\)"):
        normalise(frame, "metric", since="2024-01-01T00:01:00Z")
    kept = normalise(
        frame.iloc[:3], "metric", since="2024-01-01T00:01:00Z", until="2024-01-01 00:02"
    )
    assert list(kept["value"]) == [2.0]
    coverage = coverage_of(kept)
    assert coverage is not None and coverage.rows == 1
    # a naive bound is in tz
    paris = normalise(frame.iloc[:3], "metric", since="2024-01-01 01:01", tz="Europe/Paris")
    assert list(paris["value"]) == [2.0, 3.0]
    with pytest.raises(DataError, match="since: not a time: 'soon'"):
        normalise(frame.iloc[:3], "metric", since="soon")


def test_a_missing_time_is_a_missing_value() -> None:
    frame = _metric(["2024-01-01T00:00:00Z", "", "2024-01-01T00:02:00Z"], [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match=r"missing time; to skip such rows, use --missing drop"):
        normalise(frame, "metric")
    kept = normalise(frame, "metric", missing="drop")
    assert list(kept["value"]) == [1.0, 3.0]
    coverage = coverage_of(kept)
    assert coverage is not None and coverage.dropped_missing == 1


@pytest.mark.parametrize(
    ("value", "refused"), [(1e100, False), (-1e100, False), (1.1e100, True), (1e155, True)]
)
def test_values_beyond_1e100_are_refused(value: float, refused: bool) -> None:
    frame = _metric(["2024-01-01T00:00:00Z"], [value])
    if refused:
        with pytest.raises(DataError, match=r"value out of range: .*magnitudes above 1e"):
            normalise(frame, "metric")
    else:
        assert normalise(frame, "metric")["value"].iat[0] == value


def test_errors_say_how_to_accept_what_they_refuse(
    write_csv: Callable[[str, str], Path],
) -> None:
    advice = {
        HEADER + ROW1 + "2024-01-01T00:01:00Z,web,rt,\n": "--missing drop",
        HEADER + ROW2 + ROW1: "--disorder sort",
        HEADER + ROW1 + "2024-01-01T00:00:00Z,web,rt,7\n": "--duplicates first",
    }
    for text, flag in advice.items():
        key, value = flag.removeprefix("--").split()
        with pytest.raises(DataError) as error:
            read_frame(write_csv("messy.csv", text), "metric")
        # the same name on the command line, in a config and in Python
        assert f"use {flag} ({key} = '{value}' in a config or in Python)" in str(error.value)


def test_times_out_of_range_are_refused_not_overflowed() -> None:
    for stamp in ("9999-01-01T00:00:00Z", "1677-01-01T00:00:00Z", "2100-01-01T00:00:00Z"):
        with pytest.raises(DataError, match="is outside the years 1900 to 2099"):
            normalise(_metric([stamp]), "metric")
    # the widest span: its steps and gaps still fit in nanoseconds (292 years)
    span = ["1900-01-01T00:00:00Z", "2000-01-01T00:00:00Z", "2099-12-31T23:59:59Z"]
    assert len(normalise(_metric(span), "metric")) == 3


def test_times_are_kept_to_the_microsecond() -> None:
    # a Parquet time 1 ns past the second warned ("Discarding nonzero nanoseconds") wherever it
    # became a Python datetime, e.g. in the run's incidents (found by tests/fuzz)
    stamps = pd.to_datetime([1_700_000_000_123_456_789, 1_700_000_001_000_000_001], utc=True)
    out = normalise(_metric(list(stamps)), "metric")
    assert [t.value for t in out["time"]] == [1_700_000_000_123_456_000, 1_700_000_001_000_000_000]
    assert out["time"].max().to_pydatetime().microsecond == 0  # no warning (an error here)
    text = normalise(_metric(["1700000000.5", "2024-01-01T00:00:00.123456789Z"]), "metric")
    assert [t.value % 1000 for t in text["time"]] == [0, 0]


@pytest.mark.parametrize("width", [0.0, 1e99, 4e9])
def test_a_window_lasts_more_than_nothing_and_less_than_a_century(width: float) -> None:
    # 1e99 s made the window's end overflow a timestamp (found by tests/fuzz)
    frame = pd.DataFrame(
        {"time": ["2024-01-01T00:00:00Z"], "window_s": [width], "n[a]": [1.0], "rt_sum[a]": [1.0]}
    )
    with pytest.raises(DataError, match=r"column 'window_s': a window must last more than 0 s"):
        normalise(frame, "workload")


def test_numbers_in_the_years_1900_to_2099_are_calendar_years() -> None:
    years = normalise(_metric([1950, 1951.0]), "metric")["time"]
    assert list(years) == [pd.Timestamp("1950-01-01T00:00Z"), pd.Timestamp("1951-01-01T00:00Z")]
    given = normalise(_metric(["2024"]), "metric", time_unit="year")  # text, as CSV cells are
    assert list(given["time"]) == [pd.Timestamp("2024-01-01T00:00Z")]
    with pytest.raises(DataError, match=r"column 'time': year '1899' is outside the years 1900"):
        normalise(_metric(["2024", "1899"]), "metric", time_unit="year")
    # an explicit unit is taken at its word: 1950 seconds after 1970
    seconds = normalise(_metric([1950]), "metric", time_unit="s")["time"]
    assert list(seconds) == [pd.Timestamp("1970-01-01T00:32:30Z")]


def test_a_guessed_unit_that_puts_times_near_1970_is_refused() -> None:
    with pytest.raises(DataError, match=r"column 'time': not a clock time: 5 as Unix seconds"):
        normalise(_metric([1_700_000_000, 5]), "metric")  # a stray count among clock times
    with pytest.raises(DataError, match=r"not a clock time: 3 as Unix milliseconds"):
        normalise(_metric([1_700_000_000_000, 1_700_000_060_000, 3]), "metric")
    # ten days and more after 1970 is a clock, however odd
    assert len(normalise(_metric([864_000, 864_060]), "metric")) == 2
