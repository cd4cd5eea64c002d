"""The real bottleneck scenarios on this machine (issue 8): ``scripts/bottleneck_real.py`` runs
a quick calibration, then sequential and random reads and writes (direct I/O), a CPU burner and
page-cache thrashing, each in its own cgroup, and the inference must name the right bottleneck
in at least 5 of the 6.

Needs root (cgroups), fio and a file system with O_DIRECT under /var/tmp; about two minutes.
On a shared machine, run it under the measurement lock: ``flock /tmp/perfsleuth-measure.lock
.venv/bin/python -m pytest tests/bottleneck/test_real_scenarios.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPT = Path(__file__).parents[2] / "scripts" / "bottleneck_real.py"


def _unavailable() -> str | None:
    if shutil.which("fio") is None:
        return "fio is not installed (scripts/install-system-deps.sh)"
    if os.geteuid() != 0:
        return "creating cgroups needs root"
    root = Path("/sys/fs/cgroup")
    if not ((root / "cgroup.controllers").exists() or (root / "memory").is_dir()):
        return "no cgroup memory controller"
    return None


@pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))
def test_real_scenarios_find_the_right_bottleneck(tmp_path: Path) -> None:
    saved = tmp_path / "runs.json"
    scratch = Path("/var/tmp") / f"perfsleuth-real-test-{os.getpid()}.bin"
    command = [
        sys.executable,
        str(SCRIPT),
        "--runs",
        "1",
        "--seconds",
        "5",
        "--file",
        str(scratch),
        "--save-calibration",
        str(tmp_path / "calibration.toml"),
        "--save",
        str(saved),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=420, check=False)
    finally:
        scratch.unlink(missing_ok=True)
        Path(str(scratch).replace(".bin", "-calibrate.bin")).unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "correct:" in done.stdout  # the confusion table
    runs = json.loads(saved.read_text())
    assert len(runs) == 6
    right = [r["scenario"] for r in runs if r["correct"]]
    table = done.stdout[done.stdout.find("scenario (expected)") :]
    assert len(right) >= 5, table
    # a run's inferred utilisations and probabilities are numbers a person can read
    for r in runs:
        assert sum(r["p_bottleneck"].values()) == pytest.approx(1.0)
        assert all(u >= 0 for u in r["utilisation"].values())
