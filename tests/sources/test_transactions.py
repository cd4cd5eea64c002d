"""Windowing of transaction records, generic transaction tables and pre-aggregated tables."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfsleuth.errors import ConfigError, DataError
from perfsleuth.frames import normalise, workload_types
from perfsleuth.sources.transactions import (
    RejectCounter,
    read_aggregated,
    read_line_chunks,
    read_transactions,
    window_transactions,
)

T0 = pd.Timestamp("2024-05-01 09:00", tz="UTC")


def records(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    """(time offset like '4m59s', type, latency seconds) rows."""
    return pd.DataFrame(
        {
            "time": [T0 + pd.Timedelta(offset) for offset, _, _ in rows],
            "type": [t for _, t, _ in rows],
            "latency": [lat for _, _, lat in rows],
        }
    )


def column(frame: pd.DataFrame, name: str) -> list[float]:
    return [round(float(v), 9) for v in frame[name]]


# -- windowing: table-style cases ---------------------------------------------------------------

# (records, window, expected window starts as offsets, {column: values})
WINDOW_CASES = [
    (
        [("0s", "a", 0.1), ("4min59s", "a", 0.3), ("5min", "a", 0.5)],
        "5m",
        ["0s", "5min"],
        {"n[a]": [2, 1], "rt_sum[a]": [0.4, 0.5], "rt_mean[a]": [0.2, 0.5]},
    ),
    (  # an empty window inside the range is kept with zeros; rt_mean is 0 there
        [("1min", "a", 0.2), ("11min", "a", 0.4)],
        "5m",
        ["0s", "5min", "10min"],
        {"n[a]": [1, 0, 1], "rt_sum[a]": [0.2, 0, 0.4], "rt_mean[a]": [0.2, 0, 0.4]},
    ),
    (  # two types, each with its own counts and sums; a type absent from a window counts 0
        [("0s", "buy", 1.0), ("10s", "browse", 0.1), ("20s", "browse", 0.3), ("70s", "buy", 2.0)],
        "1m",
        ["0s", "1min"],
        {
            "n[browse]": [2, 0],
            "n[buy]": [1, 1],
            "rt_sum[browse]": [0.4, 0],
            "rt_sum[buy]": [1.0, 2.0],
            "rt_mean[browse]": [0.2, 0],
        },
    ),
    (  # sub-second windows
        [("0s", "a", 0.01), ("0.25s", "a", 0.02), ("0.5s", "a", 0.03)],
        0.5,
        ["0s", "0.5s"],
        {"n[a]": [2, 1], "rt_sum[a]": [0.03, 0.03]},
    ),
    (  # records out of time order are fine
        [("9min", "a", 0.5), ("1min", "a", 0.1)],
        timedelta(minutes=5),
        ["0s", "5min"],
        {"n[a]": [1, 1], "rt_sum[a]": [0.1, 0.5]},
    ),
]


@pytest.mark.parametrize(("rows", "window", "starts", "expected"), WINDOW_CASES)
def test_window_cases(
    rows: list[tuple[str, str, float]],
    window: object,
    starts: list[str],
    expected: dict[str, list[float]],
) -> None:
    frame = window_transactions(records(rows), window)  # type: ignore[arg-type]
    width = pd.Timedelta(seconds=float(frame["window_s"].iat[0]))
    times = frame["time"]
    # every window starts on a multiple of the width since the epoch
    assert ((times - pd.Timestamp(0, tz="UTC")) % width == pd.Timedelta(0)).all()
    assert list(times) == [T0 + pd.Timedelta(s) for s in starts]
    for name, values in expected.items():
        assert column(frame, name) == pytest.approx(values), name
    assert frame[[c for c in frame.columns if c.startswith("n[")]].to_numpy().sum() == len(rows)


def test_odd_width_alignment() -> None:
    # 2024-05-01 09:00:00 UTC = 1714554000 s = 7 * 244936285 + 5: the 7 s window holding it
    # started 5 s earlier, the next one starts 2 s later.
    assert 1714554000 % 7 == 5
    rows = [("0s", "a", 0.1), ("1.9s", "a", 0.1), ("2s", "a", 0.1), ("8.9s", "a", 0.1)]
    frame = window_transactions(records([*rows, ("9s", "a", 0.1)]), 7)
    assert list(frame["time"]) == [T0 + pd.Timedelta(s) for s in ("-5s", "2s", "9s")]
    assert column(frame, "n[a]") == [2, 2, 1]
    assert frame["window_s"].tolist() == [7.0] * 3


def test_before_1970_floors_not_truncates() -> None:
    rec = pd.DataFrame(
        {"time": pd.to_datetime(["1969-12-31 23:59:59"], utc=True), "type": ["a"], "latency": [1]}
    )
    frame = window_transactions(rec, "1m")
    assert frame["time"].iat[0] == pd.Timestamp("1969-12-31 23:59:00", tz="UTC")


@pytest.mark.parametrize("window", ["30s", "5m", "1h", "1h30m", 90, 0.25, timedelta(seconds=45)])
def test_any_width(window: object) -> None:
    rng = np.random.default_rng(3)
    rec = pd.DataFrame(
        {
            "time": T0 + pd.to_timedelta(rng.uniform(0, 7200, 500), unit="s"),
            "type": rng.choice(["x", "y", "z"], 500),
            "latency": rng.exponential(0.05, 500),
        }
    )
    frame = window_transactions(rec, window)  # type: ignore[arg-type]
    assert frame["n[x]"].sum() + frame["n[y]"].sum() + frame["n[z]"].sum() == 500
    total = sum(frame[f"rt_sum[{t}]"].sum() for t in "xyz")
    assert total == pytest.approx(rec["latency"].sum())
    steps = frame["time"].diff().dropna().unique()
    assert len(steps) == 1  # contiguous: empty windows are kept


def test_types_sorted_whatever_the_input_order() -> None:
    a = window_transactions(records([("0s", "zeta", 1), ("1s", "alpha", 1), ("2s", "mid", 1)]))
    b = window_transactions(records([("0s", "mid", 1), ("1s", "zeta", 1), ("2s", "alpha", 1)]))
    assert workload_types(a) == workload_types(b) == ["alpha", "mid", "zeta"]
    assert list(a.columns[:5]) == ["time", "window_s", "n[alpha]", "n[mid]", "n[zeta]"]


def test_categorical_types_and_unused_categories() -> None:
    rec = records([("0s", "b", 1), ("1s", "a", 2)])
    rec["type"] = pd.Categorical(rec["type"], categories=["b", "unused", "a"])
    frame = window_transactions(rec)
    assert workload_types(frame) == ["a", "b"]
    assert column(frame, "rt_sum[a]") == [2.0]


def test_result_honours_the_workload_contract() -> None:
    frame = window_transactions(records([("0s", "a", 0.1), ("20min", "b", 0.2)]))
    again = normalise(frame, "workload")
    pd.testing.assert_frame_equal(frame, again)
    assert str(frame["time"].dtype) == "datetime64[ns, UTC]"


def test_naive_times_are_utc() -> None:
    rec = records([("0s", "a", 1.0)])
    rec["time"] = rec["time"].dt.tz_localize(None)
    assert window_transactions(rec)["time"].iat[0] == T0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.drop(columns="latency"), "lack column"),
        (lambda r: r.iloc[0:0], "no transactions"),
        (lambda r: r.assign(latency=[-1.0, 1.0]), "row 0: latency must be"),
        (lambda r: r.assign(latency=[1.0, np.nan]), "row 1: latency must be"),
        (lambda r: r.assign(latency=[1.0, np.inf]), "row 1: latency must be"),
        (lambda r: r.assign(time=[T0, pd.NaT]), "row 1: column 'time': missing time"),
        (lambda r: r.assign(time=["x", "y"]), "must hold datetimes"),
        (lambda r: r.assign(type=["a", None]), "row 1: column 'type': missing type"),
        (lambda r: r.assign(time=[T0, T0 + pd.Timedelta(days=3650)]), "too many"),
    ],
)
def test_window_input_errors(change: Callable[[pd.DataFrame], pd.DataFrame], message: str) -> None:
    rec = records([("0s", "a", 1.0), ("1s", "a", 1.0)])
    with pytest.raises(DataError, match=message):
        window_transactions(change(rec), "1s", max_windows=100_000)


@pytest.mark.parametrize("window", ["5 parsecs", "0s", -5, "", "m5"])
def test_bad_window_is_a_config_error(window: object) -> None:
    with pytest.raises(ConfigError, match="window"):
        window_transactions(records([("0s", "a", 1.0)]), window)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    offsets=st.lists(st.floats(0, 86_400, allow_nan=False), min_size=1, max_size=60),
    width=st.sampled_from([1, 7, 60, 300, 3600]),
    data=st.data(),
)
def test_windowing_conserves_counts_and_time(
    offsets: list[float], width: int, data: st.DataObject
) -> None:
    types = data.draw(
        st.lists(st.sampled_from("abc"), min_size=len(offsets), max_size=len(offsets))
    )
    lat = data.draw(
        st.lists(st.floats(0, 10, allow_nan=False), min_size=len(offsets), max_size=len(offsets))
    )
    rec = pd.DataFrame(
        {"time": T0 + pd.to_timedelta(offsets, unit="s"), "type": types, "latency": lat}
    )
    frame = window_transactions(rec, width)
    for t in set(types):
        mine = rec[rec["type"] == t]
        assert frame[f"n[{t}]"].sum() == len(mine)
        assert frame[f"rt_sum[{t}]"].sum() == pytest.approx(mine["latency"].sum(), abs=1e-9)
        # each record sits in the window that contains its time
        for when, latency in zip(mine["time"], mine["latency"], strict=True):
            row = frame[(frame["time"] <= when) & (when < frame["time"] + pd.Timedelta(width, "s"))]
            assert len(row) == 1 and row[f"n[{t}]"].iat[0] >= 1
            assert row[f"rt_sum[{t}]"].iat[0] >= latency - 1e-12


def test_millions_of_records_are_fast() -> None:
    n = 2_000_000
    rng = np.random.default_rng(0)
    rec = pd.DataFrame(
        {
            "time": pd.to_datetime(1_699_920_000 + rng.uniform(0, 86_400, n), unit="s", utc=True),
            "type": pd.Categorical.from_codes(rng.integers(0, 40, n), [f"t{i}" for i in range(40)]),
            "latency": rng.exponential(0.01, n),
        }
    )
    frame = window_transactions(rec, "1m")
    assert len(frame) == 1440 and frame.filter(regex=r"^n\[").to_numpy().sum() == n


# -- reading lines -----------------------------------------------------------------------------


def test_line_chunks_plain_gzip_crlf_and_bad_utf8(tmp_path: Path) -> None:
    text = b"one\r\ntwo \xff\xfe\nthree"
    plain = tmp_path / "plain.log"
    plain.write_bytes(text)
    zipped = tmp_path / "zipped.log"  # gzip is told by its magic bytes, not the name
    zipped.write_bytes(gzip.compress(text))
    for path in (plain, zipped):
        counter = RejectCounter()
        chunks = list(read_line_chunks(path, counter, chunk_lines=2))
        assert chunks == [(1, ["one", "two \ufffd\ufffd"]), (3, ["three"])]
        assert counter.count == 0


def test_truncated_gzip_is_one_rejected_line_after_the_good_ones(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(b"line %d\n" % i for i in range(1000)))
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    counter = RejectCounter()
    lines = [line for _, chunk in read_line_chunks(path, counter) for line in chunk]
    assert 0 < len(lines) < 1000
    assert counter.count == 1
    bad = counter.result().examples[0]
    assert bad.line == len(lines) + 1 and "gzip" in bad.reason
    with pytest.raises(DataError, match=rf"cut\.log\.gz:{len(lines) + 1}: gzip data ends early"):
        list(read_line_chunks(path, RejectCounter(strict=True)))


def test_reject_examples_are_capped() -> None:
    counter = RejectCounter(max_examples=2)
    codes = np.array([0, 1, 1, 2, 1], dtype=np.int8)
    counter.add_chunk("f.log", lambda i: 10 + i, codes, ["bad a", "bad b"])
    result = counter.result()
    assert result.count == 4
    assert dict(result.by_reason) == {"bad a": 3, "bad b": 1}
    assert [b.line for b in result.examples] == [11, 12]
    assert "and 2 more" in result.summary()
    with pytest.raises(DataError, match=r"^f\.log:11: bad a$"):
        RejectCounter(strict=True).add_chunk("f.log", lambda i: 10 + i, codes, ["bad a", "bad b"])


# -- generic transaction tables ------------------------------------------------------------------

GOOD_CSV = (
    "ts,endpoint,elapsed\n"
    "2024-05-01T09:00:01Z,search,120\n"
    "2024-05-01T11:00:02+02:00,buy,800\n"
    "1714554003,search,80\n"
)


def test_read_transactions_csv_with_mapping_and_unit(
    write_csv: Callable[[str, str], Path],
) -> None:
    path = write_csv("tx.csv", GOOD_CSV)
    tx = read_transactions(
        path, columns={"ts": "time", "endpoint": "type", "elapsed": "latency"}, unit="ms"
    )
    assert tx.rejects.count == 0 and tx.lines == 3
    assert tx.types == ["buy", "search"]
    assert tx.records["latency"].tolist() == pytest.approx([0.12, 0.8, 0.08])
    assert list(tx.records["time"]) == [T0 + pd.Timedelta(seconds=s) for s in (1, 2, 3)]
    frame = tx.workload("1m")
    assert column(frame, "n[search]") == [2] and column(frame, "rt_sum[buy]") == [0.8]


BAD_TX_CSV = (
    "time,type,latency,unit\n"  # 1
    "2024-05-01T09:00:00Z,a,5,ms\n"  # 2 good
    "\n"  # 3 blank, skipped
    "yesterday,a,5,ms\n"  # 4 bad time
    "2024-05-01T09:00:00Z,,5,ms\n"  # 5 empty type
    "2024-05-01T09:00:00Z,a,-1,s\n"  # 6 negative
    "2024-05-01T09:00:00Z,a,fast,s\n"  # 7 not a number
    '2024-05-01T09:00:00Z,"multi\nline",1,furlong\n'  # 8-9 unknown unit
    "2024-05-01T09:00:00Z,b,2,us\n"  # 10 good
)


def test_read_transactions_counts_bad_rows_with_line_numbers(
    write_csv: Callable[[str, str], Path],
) -> None:
    tx = read_transactions(write_csv("bad.csv", BAD_TX_CSV))
    assert len(tx.records) == 2
    assert tx.records["latency"].tolist() == pytest.approx([0.005, 2e-6])
    found = [(b.line, b.field, b.reason.split(":")[0]) for b in tx.rejects.examples]
    assert found == [
        # the frames' range since issue 16 (was "Unix seconds, years 1900 to 2199")
        (4, "time", "not a time (ISO 8601 or Unix times, years 1900 to 2099)"),
        (5, "type", "empty type"),
        (6, "latency", "latency is negative"),
        (7, "latency", "latency is not a number"),
        (8, "unit", "unknown latency unit"),
    ]
    assert tx.rejects.count == 5
    assert "bad.csv:6: column 'latency': latency is negative: '-1'" in tx.rejects.summary()


def test_times_out_of_range_are_rejected_not_wrapped(
    write_csv: Callable[[str, str], Path],
) -> None:
    text = (
        "time,type,latency\n"
        "3000-01-01T00:00:00Z,a,1\n"  # would overflow nanoseconds
        "99999999999,a,1\n"  # ms mistaken for s
        "1899-12-31T23:59:59Z,a,1\n"
        "2100-01-01T00:00:00Z,a,1\n"  # out since issue 16: times fit 292 years of ns
        "2099-12-31T23:59:59Z,a,1\n"  # the last second accepted (was 2199-12-31T23:59:59)
    )
    tx = read_transactions(write_csv("range.csv", text))
    assert [b.line for b in tx.rejects.examples] == [2, 3, 4, 5]
    assert list(tx.records["time"]) == [pd.Timestamp("2099-12-31T23:59:59Z")]


def test_read_transactions_strict_names_the_first_bad_line(
    write_csv: Callable[[str, str], Path],
) -> None:
    with pytest.raises(DataError, match=r"bad\.csv:4: column 'time': not a time.*'yesterday'"):
        read_transactions(write_csv("bad.csv", BAD_TX_CSV), strict=True)


def test_read_transactions_parquet_rows(tmp_path: Path) -> None:
    path = tmp_path / "tx.parquet"
    pd.DataFrame(
        {
            "time": [T0, T0, pd.NaT],
            "type": ["a", "b", "a"],
            "latency": [0.5, -2.0, 1.0],
        }
    ).to_parquet(path)
    tx = read_transactions(path)
    assert len(tx.records) == 1
    assert [(b.line, b.row, b.field) for b in tx.rejects.examples] == [
        (2, True, "latency"),
        (3, True, "time"),
    ]
    assert tx.rejects.examples[0].where().startswith(f"{path}: row 2: column 'latency': ")
    with pytest.raises(DataError, match=r"tx\.parquet: row 2: column 'latency'"):
        read_transactions(path, strict=True)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"empty file"),
        ("time,type,latency\n", r"no data rows"),
        ("time,kind,latency\n2024-05-01T09:00:00Z,a,1\n", r"missing column\(s\) 'type'"),
        (
            "time,type,latency\n2024-05-01T09:00:00Z,a,1\n2024-05-01T09:00:00Z,a,1,9\n",
            r"x\.csv:3: malformed row",
        ),
        ("time,type,latency\nnope,a,1\n", r"no usable transactions in 1 line"),
    ],
)
def test_read_transactions_unusable_files(
    write_csv: Callable[[str, str], Path], text: str, message: str
) -> None:
    with pytest.raises(DataError, match=message):
        read_transactions(write_csv("x.csv", text))


def test_read_transactions_bad_unit_option(write_csv: Callable[[str, str], Path]) -> None:
    with pytest.raises(ConfigError, match="not a time unit"):
        read_transactions(write_csv("x.csv", GOOD_CSV), unit="bytes")


# -- pre-aggregated tables -----------------------------------------------------------------------

AGG_CSV = (
    "time,type,count,rt_mean\n"
    "2024-05-01T09:00:00Z,browse,10,0.1\n"
    "2024-05-01T09:00:00Z,buy,2,0.5\n"
    "2024-05-01T09:00:00Z,browse,5,0.4\n"  # a second server: added up
    "2024-05-01T09:05:00Z,browse,4,0.25\n"  # buy absent: 0
    "2024-05-01T09:15:00Z,buy,1,1.0\n"  # 09:10 has no rows: not invented
)


def test_read_aggregated_means_to_sums(write_csv: Callable[[str, str], Path]) -> None:
    frame = read_aggregated(write_csv("agg.csv", AGG_CSV))
    assert workload_types(frame) == ["browse", "buy"]
    assert list(frame["time"]) == [T0 + pd.Timedelta(minutes=m) for m in (0, 5, 15)]
    assert frame["window_s"].tolist() == [300.0] * 3  # the most common step
    assert column(frame, "n[browse]") == [15, 4, 0]
    assert column(frame, "rt_sum[browse]") == pytest.approx([3.0, 1.0, 0.0])
    assert column(frame, "rt_mean[browse]") == pytest.approx([0.2, 0.25, 0.0])
    assert column(frame, "rt_sum[buy]") == pytest.approx([1.0, 0.0, 1.0])


def test_read_aggregated_sums_in_ms_with_mapping_and_window(tmp_path: Path) -> None:
    path = tmp_path / "agg.parquet"
    pd.DataFrame(
        {"t": [T0, T0], "tx": ["a", "b"], "n": [3, 4], "total_ms": [30.0, 8.0]}
    ).to_parquet(path)
    frame = read_aggregated(
        path,
        columns={"t": "time", "tx": "type", "n": "count", "total_ms": "rt_sum"},
        window="1m",
        unit="ms",
    )
    assert frame["window_s"].tolist() == [60.0]
    assert column(frame, "rt_sum[a]") == [0.03] and column(frame, "rt_mean[b]") == [0.002]


@pytest.mark.parametrize(
    ("bad_row", "message"),
    [
        ("2024-05-01T09:05:00Z,buy,-1,0.5", r"agg\.csv:3: column 'count': count must be"),
        ("2024-05-01T09:05:00Z,buy,x,0.5", r"agg\.csv:3: column 'count'"),
        ("2024-05-01T09:05:00Z,buy,1,-0.5", r"agg\.csv:3: column 'rt_mean': must be a number"),
        ("later,buy,1,0.5", r"agg\.csv:3: column 'time': not a time"),
        ("2024-05-01T09:05:00Z,,1,0.5", r"agg\.csv:3: column 'type': empty type"),
    ],
)
def test_read_aggregated_fails_on_the_first_bad_row(
    write_csv: Callable[[str, str], Path], bad_row: str, message: str
) -> None:
    text = "time,type,count,rt_mean\n2024-05-01T09:00:00Z,buy,1,0.5\n" + bad_row + "\n"
    with pytest.raises(DataError, match=message):
        read_aggregated(write_csv("agg.csv", text))


def test_read_aggregated_needs_a_response_column_and_a_width(
    write_csv: Callable[[str, str], Path],
) -> None:
    with pytest.raises(DataError, match="'rt_sum' or 'rt_mean'"):
        read_aggregated(write_csv("a.csv", "time,type,count\n2024-05-01T09:00:00Z,a,1\n"))
    one = write_csv("b.csv", "time,type,count,rt_sum\n2024-05-01T09:00:00Z,a,1,1\n")
    with pytest.raises(DataError, match="one window only"):
        read_aggregated(one)
    assert read_aggregated(one, window="5m")["window_s"].tolist() == [300.0]
