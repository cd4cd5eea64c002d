"""CPU samples → ``cpu_util`` per workload window."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from perfsleuth.datasets.segments import cherkasova_scenario
from perfsleuth.errors import ConfigError, DataError
from perfsleuth.sources.cpu import attach_cpu, read_cpu


def test_samples_are_averaged_per_window_and_empty_windows_dropped(
    write_csv: Callable[[str, str], Path],
) -> None:
    # Samples describe the time since the previous one, ``(previous, time]``: every 30 s for two
    # minutes, then a minute each. Each window gets the overlap-weighted mean of the samples it
    # shares time with; windows no sample wholly covers (from 00:04 on) are dropped.
    path = write_csv(
        "cpu.csv",
        "ts,busy\n2024-06-03T00:00:30Z,50\n2024-06-03T00:01:00Z,70\n2024-06-03T00:01:30Z,20\n"
        "2024-06-03T00:02:00Z,40\n2024-06-03T00:03:00Z,10\n2024-06-03T00:04:00Z,90\n",
    )
    cpu = read_cpu(path, columns={"ts": "time", "busy": "cpu_util"}, unit="%")
    assert cpu["cpu_util"].tolist() == pytest.approx([0.5, 0.7, 0.2, 0.4, 0.1, 0.9])
    frame = cherkasova_scenario(0, windows=1).frame.drop(columns="cpu_util")
    for stamps in ("auto", "end"):
        out = attach_cpu(frame, cpu, stamps=stamps)
        assert out["time"].dt.strftime("%H:%M").tolist() == ["00:00", "00:01", "00:02", "00:03"]
        assert out["cpu_util"].tolist() == pytest.approx([0.6, 0.3, 0.1, 0.9])
        assert out["cpu_cores"].tolist() == [2.0] * 4  # kept from the frame: the table had none


def test_samples_off_the_grid_are_split_by_overlap(write_csv: Callable[[str, str], Path]) -> None:
    # 40 s samples straddle the 60 s windows: 00:00 is 40 s at 30% + 20 s at 60%.
    path = write_csv(
        "cpu.csv",
        "time,cpu_util\n2024-06-03T00:00:40Z,0.3\n2024-06-03T00:01:20Z,0.6\n"
        "2024-06-03T00:02:00Z,0.9\n",
    )
    frame = cherkasova_scenario(0, windows=1).frame.drop(columns="cpu_util")
    out = attach_cpu(frame, read_cpu(path), stamps="end")
    assert out["time"].dt.strftime("%H:%M").tolist() == ["00:00", "00:01"]
    assert out["cpu_util"].tolist() == pytest.approx(
        [(40 * 0.3 + 20 * 0.6) / 60, (20 * 0.6 + 40 * 0.9) / 60]
    )


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "time,cpu_util\n2024-06-03T00:00:10Z,0.5\n2024-06-03T00:00:40Z,abc\n",
            r"cpu.csv:3: .*abc",
        ),
        ("time,cpu_util\n2024-06-03T00:00:10Z,1.5\n", "within 0..1"),
        ("time,load\n2024-06-03T00:00:10Z,0.5\n", "missing column.*'cpu_util'"),
        ("time,cpu_util\nyesterday,0.5\n", r"cpu.csv:2: .*'time'"),
    ],
)
def test_bad_tables_name_file_line_and_column(
    write_csv: Callable[[str, str], Path], text: str, match: str
) -> None:
    with pytest.raises(DataError, match=match):
        read_cpu(write_csv("cpu.csv", text))


def test_unknown_unit(write_csv: Callable[[str, str], Path]) -> None:
    with pytest.raises(ConfigError, match="unit"):
        read_cpu(write_csv("cpu.csv", "time,cpu_util\n"), unit="permille")
