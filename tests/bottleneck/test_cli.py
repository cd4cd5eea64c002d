"""``perfsleuth bottleneck …``, ``calibrate`` and ``verify`` on the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perfsleuth.bottleneck import measure
from perfsleuth.bottleneck.detector import load_setup
from perfsleuth.bottleneck.kernels.calibration import load_profile
from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.cli import main

EXAMPLE = Path(__file__).parents[2] / "src/perfsleuth/bottleneck/examples/upgrades.toml"
FIO = Path(__file__).parents[1] / "data" / "bottleneck" / "fio"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 0 if code is None else 2), out, err


def test_simulate_then_infer_with_upgrades_and_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    counters = tmp_path / "memory.csv"
    code, _, err = run(
        capsys,
        "bottleneck",
        "simulate",
        "memory",
        "-o",
        str(counters),
        "--samples",
        "12",
        "--seed",
        "2",
    )
    assert code == 0, err
    assert "bottleneck memory" in err
    report = tmp_path / "report.html"
    code, out, err = run(
        capsys,
        "--format",
        "json",
        "--fail-on",
        "error",
        "bottleneck",
        "infer",
        str(counters),
        "--upgrades",
        str(EXAMPLE),
        "--target",
        "1.2x",
        "--report",
        str(report),
    )
    assert code == 1, err  # an error-severity bottleneck
    findings = json.loads(out)["findings"]
    assert [f["kind"] for f in findings] == ["bottleneck", "upgrade"]
    assert findings[0]["metric"] == "memory"
    page = report.read_text()
    assert "Bottlenecks: resource use inferred" in page
    assert "upgrades for" in page


def test_check_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "bottleneck", "check")
    assert code == 0
    assert "golden case(s) pass" in out
    assert "counters: cpu.user, cpu.system, cpu.runqueue," in out  # what --map may target
    broken = tmp_path / "m.toml"
    broken.write_text('[model]\nname = "x"\n')
    code, _, err = run(capsys, "bottleneck", "check", str(broken))
    assert code == 2
    assert "m.toml" in err and "parameters" in err


def test_bad_target_and_bad_counters(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    counters = tmp_path / "c.csv"
    counters.write_text("time,entity,counter,value\n2024-01-01T00:00:00Z,h,cpu.user,\n")
    code, _, err = run(capsys, "bottleneck", "infer", str(counters))
    assert code == 2
    assert "c.csv:2" in err and "value" in err
    code, _, err = run(capsys, "bottleneck", "infer", str(counters), "--target", "lots")
    assert code == 2
    assert "--target" in err


def test_calibrate_warns_on_a_busy_machine_and_widens_the_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 20: a busy (shared) machine is calibrated with a warning, not refused; the profile
    # carries how much wider the inference's errors are
    monkeypatch.setattr(measure, "machine_busy", lambda seconds=1.0: 0.9)
    monkeypatch.setattr(measure, "_check_direct", lambda target: None)
    monkeypatch.setattr(measure.Plan, "device_runs", lambda self: [])
    monkeypatch.setattr(measure.Plan, "cpu_jobs", lambda self, path: [])
    code, _, err = run(
        capsys,
        "calibrate",
        "--out",
        str(tmp_path / "p.toml"),
        "--file",
        str(tmp_path / "scratch.bin"),
    )
    assert code == 0, err
    assert "warning: the machine is 90% busy" in err and "1.90x" in err
    assert 'error_scale = "1.900"' in (tmp_path / "p.toml").read_text()
    model, errors = load_setup(None, str(tmp_path / "p.toml"), None)
    plain = ErrorModel.default(model)
    np.testing.assert_allclose(errors.sd, plain.sd * 1.9)


def test_calibrate_from_existing_fio_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, "calibrate", "--from-fio", str(FIO), "--out", str(tmp_path / "p.toml")
    )
    assert code == 0, err
    assert "buffered-read.json: job 'buffered': buffered I/O left out" in err
    assert "from 4 fio runs" in err
    profile = load_profile(tmp_path / "p.toml")
    x, y = profile.tables["read_a"]
    assert x == [1.0, 4.0] and all(v > 0 for v in y)
    code, _, err = run(capsys, "calibrate", "--from-fio", str(tmp_path))
    assert code == 2 and "no fio JSON results" in err


def test_json_inference_imports_neither_the_store_nor_the_console_renderer() -> None:
    # the fixed cost of every call: duckdb is for --store, rich for the table format
    corpus = Path(__file__).parents[1] / "data" / "bottleneck" / "controlled" / "corpus-r5.parquet"
    script = (
        "import sys\n"
        "from perfsleuth.cli import main\n"
        "try:\n"
        f"    main(['--format', 'json', 'bottleneck', 'infer', {str(corpus)!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('duckdb', 'rich', 'perfsleuth.store', 'perfsleuth.report.html')\n"
        "print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(done.stdout)["findings"]
    assert done.stderr.strip().splitlines()[-1] == "[]"


def _wide_csv(path: Path) -> None:
    """A user's wide counter CSV: both cores busy in user mode, 18 threads runnable."""
    rows = ["ts,usr,sys,util,rkb,runq"]
    rows += [f"2026-01-01T00:00:{s:02d}Z,1.9,0.05,0.01,1000.0,18" for s in range(30)]
    path.write_text("\n".join(rows) + "\n")


def test_a_wide_csv_mapped_onto_the_model_by_flags_or_a_toml_file(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    # issue 20: the columns of a wide counter CSV, named as the user's tool names them
    counters = tmp_path / "web-1.csv"
    _wide_csv(counters)
    pairs = ["usr=cpu.user", "sys=cpu.system", "util=disk.busy", "rkb=disk.read_bytes"]
    flags = [part for pair in [*pairs, "runq=cpu.runqueue"] for part in ("--map", pair)]
    code, out, err = run(
        capsys, "--format", "json", "bottleneck", "infer", str(counters), *flags,
        "--time-column", "ts",
    )  # fmt: skip
    assert code == 0, err
    (finding,) = json.loads(out)["findings"]
    assert finding["entity"] == "web-1" and finding["metric"] == "cpu"
    columns = tmp_path / "columns.toml"
    columns.write_text(
        'time_column = "ts"\nentity = "web"\n[columns]\n'
        + "".join(f'{a} = "{b}"\n' for a, b in (p.split("=") for p in pairs))
    )
    code, out, err = run(
        capsys, "--format", "json", "bottleneck", "infer", str(counters), "--map", str(columns)
    )
    assert code == 0, err
    (finding,) = json.loads(out)["findings"]
    assert finding["entity"] == "web" and finding["metric"] == "cpu"
    # too few counters for an answer: said, not silently "No findings."
    code, out, err = run(capsys, "bottleneck", "infer", str(counters), "--map", "usr=cpu.user")
    assert code == 0, err
    assert "web-1: 1 of the model's counters (cpu.user), 3 needed: not inferred" in caplog.text


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (["usr=cpu.usr"], "--map 'usr=cpu.usr': 'cpu.usr' is not a counter of the model"),
        (["usr="], "--map 'usr=': expected COLUMN=COUNTER"),
        (["usr=cpu.user", "sys=cpu.user"], "more than one column mapped to cpu.user"),
        (["usr=cpu.user", "usr=cpu.system"], "column 'usr' is already mapped to 'cpu.user'"),
        (["columns.toml"], "columns.toml:2: columns.usr: Input should be a valid string"),
        (["missing.toml"], "missing.toml: cannot read column map"),
        (["nosuch=cpu.user"], "--map: web-1.csv has no column 'nosuch' (its columns: ts, usr,"),
    ],
)
def test_a_bad_column_map_is_a_clear_error(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mapping: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    _wide_csv(tmp_path / "web-1.csv")
    (tmp_path / "columns.toml").write_text("[columns]\nusr = 3\n")
    flags = [part for item in mapping for part in ("--map", item)]
    code, _, err = run(capsys, "bottleneck", "infer", "web-1.csv", *flags)
    assert code == 2
    assert message in err
    code, _, err = run(capsys, "bottleneck", "infer", "web-1.csv", "--time-column", "ts")
    assert code == 2 and "give --map too" in err


def test_sar_run_queue_and_major_faults_reach_the_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    sar = Path(__file__).parents[1] / "data" / "sysstat" / "sar.json"
    code, out, err = run(capsys, "--format", "json", "bottleneck", "infer", str(sar))
    assert code == 0, err
    (finding,) = json.loads(out)["findings"]
    assert finding["metric"] == "cpu"
    evidence = {e["name"]: e["value"] for e in finding["evidence"]}
    assert evidence["observed.cpu.runqueue"] == pytest.approx(4.0)  # sar -q runq-sz
