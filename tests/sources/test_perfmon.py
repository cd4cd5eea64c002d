"""Windows perfmon CSV (relog -f csv) imports: counters and per-process frames.

tests/data/perfmon/relog.csv is hand-written in relog's layout (see its README): there is no
Windows machine here to produce a real one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.errors import DataError, SourceError
from perfsleuth.processes.scanner import scan
from perfsleuth.sources.perfmon import perfmon_processes, read_perfmon

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "perfmon" / "relog.csv"


def test_counters_in_utc_with_fractions() -> None:
    frame = read_perfmon(SAMPLE)
    assert set(frame["entity"]) == {"WEB01"}
    # 09:00 Pacific Daylight Time (bias 420 min) is 16:00 UTC
    assert frame["time"].min().floor("s") == pd.Timestamp("2024-05-01 16:00:00", tz="UTC")
    assert frame["time"].nunique() == 6
    total = frame[frame["counter"] == "Processor(_Total)\\% Processor Time"]
    assert set(total["unit"]) == {"fraction"} and (total["value"] < 1).all()
    memory = frame[frame["counter"] == "Memory\\Available Bytes"]
    assert memory["value"].iat[0] == 6.2e9
    # blank cells (w3wp#1 after it exited) are left out, not zeros
    gone = frame[frame["counter"] == "Process(w3wp#1)\\% Processor Time"]
    assert len(gone) == 4


def test_process_frame_for_the_checks() -> None:
    frame = perfmon_processes(SAMPLE)
    assert sorted(frame.groupby(["name", "pid"]).size().items()) == [
        (("sqlservr", 1840), 6),
        (("w3wp", 4412), 6),
        (("w3wp", 5120), 4),
    ]
    assert (frame["ncpu"] == 2.0).all() and set(frame["os"]) == {"Windows"}
    sql = frame[frame["name"] == "sqlservr"]
    assert sql["cpu"].to_numpy() == pytest.approx(1.0, abs=0.01)
    assert sql["rss_bytes"].iat[0] == 1.2e9
    assert (sql["io_bytes"] > 0).all()  # bytes/s x the 15 s interval
    assert (frame["machine_cpu"] <= 2.0).all()
    assert scan(frame) == []  # 90 seconds of data: too short for any check, and no error


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("(PDH-CSV 4.0)", "(CSV)", 1), r"relog\.csv:1: column .*not a perfmon"),
        (
            lambda t: t.replace('"1840"', '"18x0"', 1),
            r"relog\.csv:2: column .*sqlservr.*ID Process.*not a number",
        ),
        (
            lambda t: t.replace('"05/01/2024 09:00:15', '"2024-05-01 09:00:15', 1),
            r"relog\.csv:3: column .*PDH-CSV.*not a time",
        ),
        (
            lambda t: t.replace("\\\\WEB01\\Memory\\Available Bytes", "Available Bytes", 1),
            r":1: column 'Available Bytes': not a counter path",
        ),
        (lambda t: t.replace('","1840"', '"', 1), r"relog\.csv:2: 18 fields, the header has 19"),
    ],
)
def test_bad_input_names_file_line_and_column(
    edit: Callable[[str], str], message: str, tmp_path: Path
) -> None:
    path = tmp_path / "relog.csv"
    path.write_text(edit(SAMPLE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_perfmon(path)


def test_missing_file_and_no_process_counters(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read"):
        read_perfmon(tmp_path / "absent.csv")
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    keep = 2  # the time and the first counter
    path = tmp_path / "memory.csv"
    path.write_text("\n".join(",".join(line.split(",")[:keep]) for line in lines), encoding="utf-8")
    assert len(read_perfmon(path)) == 6
    with pytest.raises(DataError, match="no Process"):
        perfmon_processes(path)
