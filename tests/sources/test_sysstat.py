"""sar (sadf -j) and pidstat imports, on real samples made with sysstat 12.6 (tests/data/sysstat).

sar.json: ``sadc -S DISK 1 4 sa.bin; sadf -j sa.bin -- -u -P ALL -r -q -d -n DEV`` (host ``vm``,
2 CPUs, 3 one-second records). pidstat-*.txt: ``pidstat -h [-H] -u -r -d -U -p ALL -C
'spinner|sleep' 1 N`` with a process named ``spinner`` using ~0.3 of a CPU.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.errors import DataError, SourceError
from perfsleuth.frames import coverage_of
from perfsleuth.sources.sysstat import read_pidstat, read_sar

DATA = Path(__file__).resolve().parents[1] / "data" / "sysstat"


def test_sar_json_counters_units_and_entities() -> None:
    frame = read_sar(DATA / "sar.json")
    assert coverage_of(frame) is not None
    assert frame["time"].nunique() == 3
    assert frame["time"].min() == pd.Timestamp("2026-11-24 06:06:41", tz="UTC")
    assert {"vm", "vm:cpu=all", "vm:cpu=0", "vm:cpu=1", "vm:disk-device=vda", "vm:iface=lo"} <= set(
        frame["entity"]
    )
    cpu = frame[frame["entity"] == "vm:cpu=all"].pivot(
        index="time", columns="counter", values="value"
    )
    modes = ["user", "nice", "system", "iowait", "steal", "idle"]
    # percentages became fractions that add up to one
    assert cpu[[f"cpu-load.{m}" for m in modes]].sum(axis=1).to_numpy() == pytest.approx(
        1.0, abs=0.02
    )
    first = json.loads((DATA / "sar.json").read_text())["sysstat"]["hosts"][0]["statistics"][0]
    free = frame[(frame["counter"] == "memory.memfree") & (frame["entity"] == "vm")]
    assert free["value"].iat[0] == first["memory"]["memfree"] * 1024  # kB are KiB
    assert set(free["unit"]) == {"bytes"}
    ldavg = frame[frame["counter"] == "queue.ldavg-1"]["value"].iat[0]
    assert ldavg == first["queue"]["ldavg-1"]


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("sadf") is None, reason="needs sadf (sysstat)")
def test_binary_sa_file_goes_through_sadf() -> None:
    frame = read_sar(DATA / "sa.bin")
    json_frame = read_sar(DATA / "sar.json")
    # sadf -A adds activities, and its CPU fields are -u ALL's (usr, sys, irq, ...): every
    # other counter of the JSON export is there with the same values
    assert {"cpu-load.usr", "cpu-load.sys", "cpu-load.irq"} <= set(frame["counter"])
    json_frame = json_frame[~json_frame["counter"].isin(["cpu-load.user", "cpu-load.system"])]
    common = frame.merge(json_frame, on=["time", "entity", "counter"], suffixes=("", "_json"))
    assert len(common) == len(json_frame)
    assert common["value"].to_numpy() == pytest.approx(common["value_json"].to_numpy())
    assert frame["counter"].nunique() > json_frame["counter"].nunique()


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("sadf") is None, reason="needs sadc/sadf (sysstat)")
def test_fresh_sadc_recording(tmp_path: Path) -> None:
    sadc = Path("/usr/lib/sysstat/sadc")
    if not sadc.exists():
        pytest.skip("no sadc")
    subprocess.run([str(sadc), "1", "3", str(tmp_path / "sa")], check=True, timeout=30)
    frame = read_sar(tmp_path / "sa")
    assert frame["time"].nunique() == 2
    assert "cpu-load.idle" in set(frame["counter"])


def test_pidstat_unix_times() -> None:
    frame = read_pidstat(DATA / "pidstat-epoch.txt")
    assert set(frame["node"]) == {"vm"} and set(frame["user"]) == {"root"}
    assert frame["time"].nunique() == 3 and frame["time"].min() == pd.Timestamp(
        1795500392, unit="s", tz="UTC"
    )
    spinner = frame[frame["name"] == "spinner"]
    assert spinner["pid"].unique().tolist() == [17095]
    assert spinner["cpu"].tolist() == pytest.approx([0.2941, 0.29, 0.29])
    assert spinner["rss_bytes"].iat[0] == 13428 * 1024
    assert (frame["ncpu"] == 2.0).all() and (frame["io_bytes"] == 0.0).all()


def test_pidstat_clock_times_use_the_banner_date() -> None:
    frame = read_pidstat(DATA / "pidstat-clock.txt", node="web-1")
    assert set(frame["node"]) == {"web-1"}
    assert sorted(frame["time"].unique()) == [
        pd.Timestamp("2026-11-24 06:06:35", tz="UTC"),
        pd.Timestamp("2026-11-24 06:06:36", tz="UTC"),
    ]
    shifted = read_pidstat(DATA / "pidstat-clock.txt", tz="Europe/Paris")
    assert shifted["time"].min() == pd.Timestamp("2026-11-24 05:06:35", tz="UTC")


def test_pidstat_past_midnight(tmp_path: Path) -> None:
    lines = (DATA / "pidstat-clock.txt").read_text().splitlines()
    text = "\n".join(
        line.replace("06:06:35", "23:59:59").replace("06:06:36", "00:00:00") for line in lines
    )
    path = tmp_path / "p.txt"
    path.write_text(text)
    times = sorted(read_pidstat(path)["time"].unique())
    assert times[1] - times[0] == pd.Timedelta(seconds=1)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("  13428 ", "  13x28 ", 1),
            r"pidstat\.txt:\d+: column 'RSS': not a number",
        ),
        (lambda t: t.replace("%CPU", "%CPUX"), r"pidstat\.txt:3: pidstat header lacks %CPU"),
        (
            lambda t: t.replace("06:06:35        root     15833", "6h        root     15833"),
            r":4: column 'Time': not a time",
        ),
        (lambda t: "\n".join(t.splitlines()[3:]), r":1: data before a '# Time"),
        (lambda t: t.replace("0  sleep\n", "0\n", 1), r":4: 18 fields, header has 19"),
    ],
)
def test_bad_pidstat_names_file_line_and_field(edit, message: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "pidstat.txt"
    path.write_text(edit((DATA / "pidstat-clock.txt").read_text()))
    with pytest.raises(DataError, match=message):
        read_pidstat(path)


def test_bad_sar_names_file_and_path(tmp_path: Path) -> None:
    document = json.loads((DATA / "sar.json").read_text())
    document["sysstat"]["hosts"][0]["statistics"][1]["queue"]["runq-sz"] = [1]
    path = tmp_path / "sar.json"
    path.write_text(json.dumps(document, indent=1))
    with pytest.raises(
        DataError, match=r"sar\.json: .*statistics\[1\]\.queue\.runq-sz\[0\]: expected an object"
    ):
        read_sar(path)
    path.write_text('{"sysstat": {"hosts": [ {"nodename": "x",\n "statistics": [} ] } }')
    with pytest.raises(DataError, match=r"sar\.json:2: not valid JSON"):
        read_sar(path)
    path.write_text('{"other": 1}')
    with pytest.raises(DataError, match="sysstat: missing"):
        read_sar(path)
    with pytest.raises(SourceError, match="cannot read"):
        read_sar(tmp_path / "absent.json")


# -- sysstat's own test files (tests/data/sysstat/upstream, sysstat commit c1eb661a) ------------

UPSTREAM = DATA / "upstream"


def test_serial_lines_of_sysstats_own_test_file_stay_apart() -> None:
    # two serial lines whose only difference is their number ("line": 0 and 1) used to be one
    # entity with two values per time: "duplicate ... with a different value"
    frame = read_sar(UPSTREAM / "expected.sadf-j")
    serial = frame[frame["counter"] == "serial.rcvin"]
    assert sorted(set(serial["entity"])) == ["SYSSTAT.TEST:line=0", "SYSSTAT.TEST:line=1"]
    assert frame["time"].nunique() == 5
    usb = {e for e in frame["entity"] if "bus_number" in e}
    assert "SYSSTAT.TEST:bus_number=3,idvendor=174c,idprod=55aa" in usb
    assert "serial.line" not in set(frame["counter"])  # the line number names, it is no counter


def test_sensors_sharing_a_chip_stay_apart() -> None:
    frame = read_sar(UPSTREAM / "expected.data-11.6.5-sadf-j")
    temperature = frame[frame["counter"] == "power-management.temperature.degC"]
    assert len(temperature) == 9 and temperature["entity"].is_unique
    assert "linux.home:number=5,device=coretemp-isa-0000" in set(temperature["entity"])
    frequencies = read_sar(UPSTREAM / "expected.data-wghfreq-sadf-j")
    assert "SYSSTAT.TEST:number=all" in set(frequencies["entity"])


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("sadf") is None, reason="needs sadf (sysstat)")
def test_a_file_name_like_an_option_is_not_passed_to_sadf_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "-1" is sadf's "yesterday's file" and "-x..." an option: the path is passed absolute
    monkeypatch.chdir(tmp_path)
    for name in ("-1", "-j"):
        shutil.copy(UPSTREAM / "data-12.0.0", tmp_path / name)
        frame = read_sar(Path(name))
        assert set(frame["entity"]) >= {"linux.home"}
        assert set(frame["time"]) == {pd.Timestamp("2019-06-30 05:39:34", tz="UTC")}


def test_a_sar_record_without_a_timestamp_is_an_error_not_a_loss(tmp_path: Path) -> None:
    document = json.loads((DATA / "sar.json").read_text())
    del document["sysstat"]["hosts"][0]["statistics"][2]["timestamp"]
    path = tmp_path / "sar.json"
    path.write_text(json.dumps(document))
    with pytest.raises(DataError, match=r"statistics\[2\]: a record without a timestamp"):
        read_sar(path)


def test_sar_options_and_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO((DATA / "sar.json").read_bytes()))
    )
    frame = read_sar(Path("-"), since=datetime(2026, 11, 24, 6, 6, 42, tzinfo=UTC))
    assert frame["time"].nunique() == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("1795500392", "99999999999999999999", 1), "outside the years"),
        (lambda t: t.replace("  17095  ", "  nan  ", 1), "column 'pid': not an integer: nan"),
        (lambda t: t.replace("  17095  ", "  1e30  ", 1), "column 'pid': not an integer"),
        # a later header without its Time column: a KeyError before (found by tests/fuzz)
        (lambda t: t.replace("# Time", "# 0.0").replace("# 0.0", "# Time", 1), "lacks Time"),
    ],
)
def test_pidstat_numbers_that_do_not_fit(edit, message: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "pidstat.txt"
    path.write_text(edit((DATA / "pidstat-epoch.txt").read_text()))
    with pytest.raises(DataError, match=message):
        read_pidstat(path)
