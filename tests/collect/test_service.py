"""The systemd unit in packaging/: valid, and its ExecStart runs the collector as written."""

from __future__ import annotations

import configparser
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfsleuth.store import Store

UNIT = Path(__file__).resolve().parents[2] / "packaging" / "perfsleuth-collect.service"


def _service() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(UNIT, encoding="utf-8")
    return parser["Service"]


def test_exec_start_options_run_the_collector(tmp_path: Path) -> None:
    argv = shlex.split(_service()["ExecStart"])
    assert Path(argv[0]).name == "perfsleuth" and argv[1] == "collect"
    options = argv[2:]
    store = tmp_path / "unit.duckdb"
    options[options.index("--store") + 1] = str(store)
    options[options.index("--interval") + 1] = "200ms"  # keep the test short
    done = subprocess.run(
        [sys.executable, "-c", "from perfsleuth.cli import main; main()", "collect",
         *options, "--samples", "3", "--batch", "2"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Store(store, read_only=True) as db:
        frame = db.read_frame("process")
    assert frame["time"].nunique() == 2  # three samples give two intervals


def test_unit_stops_gracefully_and_restarts() -> None:
    service = _service()
    assert service["KillSignal"] == "SIGTERM"
    assert service["Restart"] == "on-failure"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    # point ExecStart at an executable that exists here: verify checks that it does
    text = UNIT.read_text(encoding="utf-8")
    binary = shlex.split(_service()["ExecStart"])[0]
    local = tmp_path / "perfsleuth-collect.service"
    local.write_text(text.replace(binary, sys.executable), encoding="utf-8")
    done = subprocess.run(
        ["systemd-analyze", "verify", str(local)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    problems = [line for line in done.stderr.splitlines() if str(local) in line]
    assert done.returncode == 0 and not problems, done.stderr
