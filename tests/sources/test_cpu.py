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
    path = write_csv(
        "cpu.csv",
        "ts,busy\n2024-06-03T00:00:10Z,50\n2024-06-03T00:00:40Z,70\n2024-06-03T00:02:30Z,20\n",
    )
    cpu = read_cpu(path, columns={"ts": "time", "busy": "cpu_util"}, unit="%")
    assert cpu["cpu_util"].tolist() == pytest.approx([0.5, 0.7, 0.2])
    frame = cherkasova_scenario(0, windows=1).frame.drop(columns="cpu_util")
    out = attach_cpu(frame, cpu)
    assert out["time"].dt.strftime("%H:%M").tolist() == ["00:00", "00:02"]
    assert out["cpu_util"].tolist() == pytest.approx([0.6, 0.2])
    assert out["cpu_cores"].tolist() == [2.0, 2.0]  # kept from the frame: the table had none


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
