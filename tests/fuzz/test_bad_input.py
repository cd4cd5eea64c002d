"""Regression tests of the bad-input sweep (``scripts/bad_input_sweep.py``): each case a bad
input that once ended in a traceback, a silent wrong result or a message that did not say
what was wrong, and what it gives now — through the command line, in this process.

Every failing run must leave a store that already held findings holding them still.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.frames import workload_types
from perfsleuth.store import Store
from tests.fuzz.support import Outcome, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"


def _metric_csv(entity: str = "web", n: int = 120) -> str:
    rng = np.random.default_rng(0)
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = [
        f"{(start + pd.Timedelta(minutes=i)).isoformat()},{entity},latency,"
        f"{(10 if i < n // 2 else 20) + rng.normal():.3f},ms"
        for i in range(n)
    ]
    return "time,entity,metric,value,unit\n" + "\n".join(rows) + "\n"


def _workload_frame(types: tuple[str, str] = ("home", "buy"), cpu: float | None = None) -> str:
    """A workload frame of 60 five-minute windows; CPU follows the load unless ``cpu``."""
    rng = np.random.default_rng(2)
    header = "time,window_s," + ",".join(f'"n[{t}]","rt_sum[{t}]"' for t in types) + ",cpu_util"
    rows = []
    for i in range(60):
        a, b = int(rng.integers(50, 150)), int(rng.integers(10, 60))
        util = cpu if cpu is not None else 0.05 + 0.002 * a + 0.006 * b
        when = (pd.Timestamp("2024-05-01T00:00:00Z") + pd.Timedelta(minutes=5 * i)).isoformat()
        rows.append(f"{when},300,{a},{a * 0.02:.3f},{b},{b * 0.08:.3f},{util:.3f}")
    return header + "\n" + "\n".join(rows) + "\n"


def _error(outcome: Outcome) -> str:
    outcome.check()
    assert outcome.code == 2, outcome
    return outcome.errors[0]


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, set[str]]:
    """A store already holding findings, and their ids."""
    path = tmp_path / "held.duckdb"
    data = tmp_path / "held.csv"
    data.write_text(_metric_csv())
    run_cli(["changepoints", str(data), "--store", str(path)]).check()
    with Store(path) as db:
        held = {f.id for f in db.findings()}
    assert held
    return path, held


def _still_holds(store: tuple[Path, set[str]]) -> None:
    path, held = store
    with Store(path) as db:
        assert held <= {f.id for f in db.findings()}


# -- CSV files ------------------------------------------------------------------------------


def test_an_unterminated_quote_names_its_line(tmp_path: Path, store: tuple[Path, set[str]]) -> None:
    # before: "malformed row: EOF inside string starting at row 3" (no line; pandas' record 3)
    path = tmp_path / "q.csv"
    path.write_text(
        'time,entity,metric,value\n2024-05-01T00:00:00Z,"a\nb",m,1\n'
        '2024-05-01T00:01:00Z,a,m,2\n2024-05-01T00:02:00Z,"a,m,3\n2024-05-01T00:03:00Z,a,m,4\n'
    )
    message = _error(run_cli(["changepoints", str(path), "--store", str(store[0])]))
    assert f"{path}:5: malformed row: a quoted field opens here and is never closed" in message
    _still_holds(store)


def test_a_folder_is_not_a_missing_file(tmp_path: Path) -> None:
    # before: "dd: no such file"
    (tmp_path / "dd").mkdir()
    for args in (["changepoints"], ["detect"], ["processes", "scan"], ["bottleneck", "infer"]):
        message = _error(run_cli([*args, str(tmp_path / "dd")]))
        assert message.endswith("dd: is a folder, not a file"), message


@pytest.mark.parametrize(
    ("content", "line", "what"),
    [
        (
            bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8)),
            1,
            "binary data, not CSV text",
        ),
        (_metric_csv().encode() + b"x\0y\n", 122, "binary data, not CSV text"),
        (
            _metric_csv().encode() + b"\xff\xfe,1\n",
            122,
            "not UTF-8 text (byte 5762 is 0xff): a Latin-1 or Windows-1252 file? Save it as UTF-8",
        ),
    ],
    ids=["random bytes", "a NUL byte", "not UTF-8"],
)
def test_binary_data_is_named_as_such(
    tmp_path: Path, store: tuple[Path, set[str]], content: bytes, line: int, what: str
) -> None:
    # before: "malformed row: Expected 1 fields in line 3, saw 2" for random bytes; text in a
    # single-byte encoding (no control bytes) is told from binary data, with the fix
    path = tmp_path / "bin.csv"
    path.write_bytes(content)
    message = _error(run_cli(["changepoints", str(path), "--store", str(store[0])]))
    assert f"bin.csv:{line}: {what}" in message
    _still_holds(store)


def test_a_compressed_csv_is_no_binary_data(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "m.csv.gz"
    path.write_bytes(gzip.compress(_metric_csv().encode()))
    run_cli(["changepoints", str(path)]).check()
    assert run_cli(["changepoints", str(path)]).code == 0


# -- names ----------------------------------------------------------------------------------


def test_a_transaction_type_may_hold_a_newline(tmp_path: Path) -> None:
    # before: workload "needs at least one n[<type>] column"; segments a traceback
    frame = pd.DataFrame({"time": [0], "window_s": [300.0], "n[a\nb]": [1.0], "n[c]": [2.0]})
    assert workload_types(frame) == ["a\nb", "c"]
    path = tmp_path / "w.csv"
    path.write_text(_workload_frame(("web\nfake: error", "buy")))
    outcome = run_cli(["segments", str(path), "--source", "frame"])
    outcome.check()
    assert outcome.code in (0, 1)


def test_segments_without_a_normal_window_is_no_traceback(tmp_path: Path) -> None:
    # a CPU that does not move with the load: every window an anomaly, none left to search
    # before: ValueError: need at least one array to concatenate
    path = tmp_path / "w.csv"
    path.write_text(_workload_frame(cpu=0.5))
    outcome = run_cli(["--format", "jsonl", "segments", str(path), "--source", "frame"])
    outcome.check()
    assert outcome.code == 0
    assert [json.loads(line)["kind"] for line in outcome.out.splitlines()] == ["workload_anomaly"]


def test_findings_with_a_line_separator_in_a_name_read_back(tmp_path: Path) -> None:
    # perfsleuth's own JSON lines keep U+2028 and NEL raw; str.splitlines cut them in two
    data = tmp_path / "m.csv"
    data.write_text(_metric_csv("web\u2028x\x85y"))
    found = run_cli(["--format", "jsonl", "changepoints", str(data)])
    assert found.code == 0
    findings = tmp_path / "f.jsonl"
    findings.write_text(found.out, encoding="utf-8")
    outcome = run_cli(["report", "--findings", str(findings), "-o", str(tmp_path / "r.html")])
    outcome.check()
    assert outcome.code == 0
    assert "web\u2028x\x85y" in (tmp_path / "r.html").read_text(encoding="utf-8")


# -- outputs --------------------------------------------------------------------------------


def test_a_report_that_cannot_be_written_is_named(
    tmp_path: Path, store: tuple[Path, set[str]]
) -> None:
    # before: IsADirectoryError / NotADirectoryError / PermissionError tracebacks
    data = tmp_path / "m.csv"
    data.write_text(_metric_csv())
    message = _error(
        run_cli(["changepoints", str(data), "--store", str(store[0]), "--report", str(tmp_path)])
    )
    assert message.endswith(f"{tmp_path}: is a folder; give a file path for the report")
    _still_holds(store)  # and this run's findings are kept too: the store is written first
    found = run_cli(["--format", "jsonl", "changepoints", str(data)]).out
    findings = tmp_path / "f.jsonl"
    findings.write_text(found)
    inside_a_file = data / "r.html"  # its folder is a file: it cannot be made
    message = _error(run_cli(["report", "--findings", str(findings), "-o", str(inside_a_file)]))
    assert message.startswith(f"perfsleuth: error: {inside_a_file}: cannot write the report: ")
    message = _error(run_cli(["processes", "scan", str(DATA / "processes" / "h1.parquet"),
                              "--coverage", str(tmp_path)]))  # fmt: skip
    assert message.endswith("is a folder; give a file path for the coverage file")


# -- findings files, configs, sar, perfmon ---------------------------------------------------


def test_a_findings_file_that_is_not_text_or_lacks_a_field(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    out = ["-o", str(tmp_path / "r.html")]
    path.write_bytes(b"\xf8\x00\x01")  # before: UnicodeDecodeError traceback
    message = _error(run_cli(["report", "--findings", str(path), *out]))
    assert message.endswith("f.jsonl:1: not UTF-8 text (byte 0): a binary file?")
    path.write_text('{"kind": "change_point"}\n')  # before: "not a finding: 'entity'"
    message = _error(run_cli(["report", "--findings", str(path), *out]))
    assert message.endswith("f.jsonl:1: not a finding: no field 'entity'")


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    # before: report "Unexpected UTF-8 BOM", config "Invalid statement", sar "sadf -j failed"
    data = tmp_path / "m.csv"
    data.write_text(_metric_csv())
    findings = tmp_path / "f.jsonl"
    findings.write_bytes(
        b"\xef\xbb\xbf" + run_cli(["--format", "jsonl", "changepoints", str(data)]).out.encode()
    )
    report = run_cli(["report", "--findings", str(findings), "-o", str(tmp_path / "r.html")])
    assert report.code == 0 and "report:" in report.err
    config = tmp_path / "c.toml"
    config.write_bytes(b"\xef\xbb\xbf" + f"[[sources]]\npath = {json.dumps(str(data))}\n".encode())
    assert run_cli(["config", "check", str(config)]).code == 0
    sar = tmp_path / "sar.json"
    sar.write_bytes(b"\xef\xbb\xbf" + (DATA / "sysstat" / "sar.json").read_bytes())
    imported = run_cli(["import", "sar", str(sar), "--store", str(tmp_path / "s.duckdb")])
    imported.check()
    assert imported.code == 0


def test_sar_errors_name_the_value_by_its_path(
    tmp_path: Path, store: tuple[Path, set[str]]
) -> None:
    # before: "column 'value': value out of range ... (row 80)", a row of no file
    document = json.loads((DATA / "sysstat" / "sar.json").read_text())
    document["sysstat"]["hosts"][0]["statistics"][1]["cpu-load"][0]["user"] = 1e308
    sar = tmp_path / "sar.json"
    sar.write_text(json.dumps(document, indent=1))
    message = _error(run_cli(["import", "sar", str(sar), "--store", str(store[0])]))
    assert message.endswith("(at sysstat.hosts[0].statistics[1].cpu-load[0].user)"), message
    _still_holds(store)
    sar.write_text("")  # before: "sadf -j failed: Invalid system activity file"
    message = _error(run_cli(["import", "sar", str(sar), "--store", str(store[0])]))
    assert message.endswith("sar.json: empty file (expected sadf -j JSON or a binary sa file)")
    _still_holds(store)


def test_a_nan_in_perfmon_is_no_missing_sample(
    tmp_path: Path, store: tuple[Path, set[str]]
) -> None:
    # relog writes " " for a missing sample; "NaN" was silently taken for one
    text = (DATA / "perfmon" / "relog.csv").read_bytes().decode("utf-8-sig")
    lines = text.split("\r\n")
    cells = lines[3].split('","')
    cells[2] = "NaN"
    lines[3] = '","'.join(cells)
    path = tmp_path / "relog.csv"
    path.write_bytes("\r\n".join(lines).encode())
    message = _error(run_cli(["import", "perfmon", str(path), "--store", str(store[0])]))
    assert "relog.csv:4: column " in message and "Processor(0)" in message
    assert message.endswith("not a number: 'NaN'")
    _still_holds(store)


# -- families' own readers -------------------------------------------------------------------


def _process_frame() -> pd.DataFrame:
    times = pd.date_range("2024-05-01", periods=48, freq="5min", tz="UTC")
    return pd.DataFrame(
        {
            "time": times.repeat(2),
            "node": "node-1",
            "pid": np.tile([101, 202], 48),
            "name": np.tile(["spin", "web"], 48),
            "user": "app",
            "cpu": np.tile([0.98, 0.1], 48),
            "rss_bytes": 1e8,
            "ncpu": 2.0,
            "os": "Linux",
        }
    )


def test_fleet_scan_checks_values_and_times_as_the_contract_does(tmp_path: Path) -> None:
    # before: 1e308 read as a CPU share (findings); a time in 1500 a pyarrow traceback
    frame = _process_frame()
    frame.loc[7, "cpu"] = 1e308
    path = tmp_path / "huge.parquet"
    frame.to_parquet(path)
    args = ["--workers", "1", "--no-progress"]
    message = _error(run_cli(["fleet", "scan", str(path), *args]))
    assert "huge.parquet: column 'cpu': value out of range" in message
    frame = _process_frame()
    frame["time"] = frame["time"].astype("datetime64[us, UTC]")
    frame.loc[5, "time"] = pd.Timestamp("1500-01-01", tz="UTC")
    path = tmp_path / "old.parquet"
    frame.to_parquet(path)
    message = _error(run_cli(["fleet", "scan", str(path), *args]))
    assert "old.parquet: column 'time': time '1500-01-01T00:00:00+00:00' is outside" in message


def test_a_negative_counter_names_its_file(tmp_path: Path, store: tuple[Path, set[str]]) -> None:
    path = tmp_path / "c.csv"
    run_cli(["bottleneck", "simulate", "cpu", "-o", str(path), "--samples", "30"]).check()
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.loc[15, "value"] = "-5"
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    path.write_text(buffer.getvalue())
    message = _error(run_cli(["bottleneck", "infer", str(path), "--store", str(store[0])]))
    assert message.startswith(f"perfsleuth: error: {path}: counter '"), message
    assert "negative value -5" in message
    _still_holds(store)


def test_a_huge_latency_is_a_rejected_line(tmp_path: Path) -> None:
    # before: "column 'rt_sum[buy]': value out of range ... (row 50)": a window, no line
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = [
        f"{(start + pd.Timedelta(seconds=2 * i)).isoformat()},t{i % 2},0.05" for i in range(1500)
    ]
    rows[50] = rows[50].rsplit(",", 1)[0] + ",1e308"
    path = tmp_path / "tx.csv"
    path.write_text("time,type,latency\n" + "\n".join(rows) + "\n")
    outcome = run_cli(["workload", str(path), "--source", "table", "--window", "1m"])
    assert f"{path}:52: column 'latency': latency out of range (above 1e+100): '1e308'" in (
        outcome.err
    )
    outcome = run_cli(["workload", str(path), "--source", "table", "--window", "1m", "--strict"])
    assert "tx.csv:52: column 'latency': latency out of range" in _error(outcome)


def test_a_nan_parameter_is_named_as_not_finite(tmp_path: Path) -> None:
    # before: "alpha: Input should be less than 1" (NaN fails every comparison)
    data = tmp_path / "m.csv"
    data.write_text(_metric_csv())
    message = _error(run_cli(["changepoints", str(data), "--alpha", "nan"]))
    assert message.endswith("options: --alpha: Input should be a finite number")
    config = tmp_path / "c.toml"
    config.write_text(
        f"[[sources]]\npath = {json.dumps(str(data))}\n\n[detectors.changepoints]\nalpha = nan\n"
    )
    message = _error(run_cli(["config", "check", str(config)]))
    assert message.endswith(
        "c.toml:5: detectors.changepoints.alpha: Input should be a finite number"
    )


def test_a_name_with_a_line_break_cannot_forge_an_error_line(tmp_path: Path) -> None:
    # before: "coverage: web" then a line of its own "perfsleuth: error: forged: 4 period(s) ..."
    forged = "web\nperfsleuth: error: forged"
    frame = _process_frame()
    frame["node"] = forged
    path = tmp_path / "p.parquet"
    frame.to_parquet(path)
    for args in (["processes", "scan", str(path)], ["fleet", "scan", str(path), "--workers", "1"]):
        outcome = run_cli([*args])
        outcome.check()  # success, and no line of stderr reads as an error
        assert "web\\nperfsleuth: error: forged" in outcome.err
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = [
        f"{(start + pd.Timedelta(seconds=2 * i)).isoformat()},{i % 2},0.05" for i in range(1500)
    ]
    table = tmp_path / "tx.csv"
    table.write_text("time,type,latency\n" + "\n".join(rows).replace(",1,", f',"{forged}",') + "\n")
    outcome = run_cli(["workload", str(table), "--source", "table", "--window", "1m"])
    outcome.check()
    assert "ms  web\\nperfsleuth: error: forged" in outcome.err


def test_fleet_scan_of_no_rows_is_an_error(tmp_path: Path) -> None:
    # before: exit 0, "every check had the periods it needs on all 0 node(s)"
    path = tmp_path / "empty.parquet"
    _process_frame().iloc[:0].to_parquet(path)
    message = _error(run_cli(["fleet", "scan", str(path), "--workers", "1", "--no-progress"]))
    assert message.endswith("empty.parquet: no process samples (no data rows)")


def test_a_mapped_wide_column_is_named_as_the_file_names_it(tmp_path: Path) -> None:
    # before: "column 'cpu.system': not a number" — the model's counter, no column of the file
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = [f"{(start + pd.Timedelta(seconds=i)).isoformat()},{50 + i % 5},10" for i in range(300)]
    rows[99] = rows[99].rsplit(",", 1)[0] + ",fast"
    path = tmp_path / "wide.csv"
    path.write_text("time,usr,sys\n" + "\n".join(rows) + "\n")
    args = ["bottleneck", "infer", str(path), "--map", "usr=cpu.user", "--map", "sys=cpu.system"]
    message = _error(run_cli(args))
    assert message.endswith("wide.csv:101: column 'sys': not a number: 'fast'")


def test_a_saved_frame_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    # before: workload --save FOLDER: IsADirectoryError from pyarrow (a traceback)
    start = pd.Timestamp("2024-05-01T00:00:00Z")
    rows = [
        f"{(start + pd.Timedelta(seconds=2 * i)).isoformat()},t{i % 2},0.05" for i in range(1500)
    ]
    path = tmp_path / "tx.csv"
    path.write_text("time,type,latency\n" + "\n".join(rows) + "\n")
    args = ["workload", str(path), "--source", "table", "--window", "1m", "--save", str(tmp_path)]
    message = _error(run_cli(args))
    assert message.endswith(f"{tmp_path}: is a folder; give a file path for the workload frame")
    saved = tmp_path / "out" / "w.parquet"
    run_cli([*args[:-1], str(saved)]).check()
    assert len(pd.read_parquet(saved)) == 50 and not list(saved.parent.glob(".*.tmp"))
    message = _error(run_cli(["bottleneck", "simulate", "cpu", "-o", str(tmp_path)]))
    assert message.endswith(f"{tmp_path}: is a folder; give a file path for the counter frame")
