"""Ramps, saw-tooths, caps and capture ratio: the checks on small frames."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.findings import Finding
from perfsleuth.processes.checks import CheckName
from perfsleuth.processes.kernels import find_ramp
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules
from tests.processes.conftest import detect, frame

MIB = 2.0**20
HOURS = 48


def _scan_rss(
    rss: np.ndarray, kinds: list[CheckName], rules: ProcessRules = DEFAULT_RULES
) -> list[Finding]:
    cpu = [0.02] * len(rss)
    return detect(frame({("app", 7): cpu}, rss={("app", 7): list(rss)}), rules, *kinds)


def test_bumpy_leak_is_a_ramp_and_daily_cycle_is_not() -> None:
    rng = np.random.default_rng(1)
    hours = np.arange(HOURS, dtype=float)
    daily = 60 * MIB * np.exp(-0.5 * (((hours % 24) - 13) / 3) ** 2)
    leak = 300 * MIB + 4 * MIB * hours + daily + rng.normal(0, 2 * MIB, HOURS)
    found = _scan_rss(leak, ["memory_ramp"])
    assert len(found) == 1
    ev = found[0].evidence_dict()
    assert ev["slope_per_day"] == pytest.approx(96 * MIB, rel=0.2)
    assert not _scan_rss(300 * MIB + daily + rng.normal(0, 2 * MIB, HOURS), ["memory_ramp"])


# (growth over 48 h as a fraction of the start, expected a ramp)
GROWTH_CASES = [(0.10, False), (0.20, False), (0.40, True), (2.0, True)]


@pytest.mark.parametrize(("growth", "expected"), GROWTH_CASES)
def test_ramp_effect_size_floor(growth: float, expected: bool) -> None:
    start = 400 * MIB
    rss = start * (1 + growth * np.linspace(0, 1, HOURS))
    assert bool(_scan_rss(rss, ["memory_ramp"])) is expected


def test_ramp_minimum_duration_and_time_to_limit() -> None:
    rss = 100 * MIB + 20 * MIB * np.arange(11.0)  # 11 hours < 12 h
    assert not find_ramp(rss, alpha=0.001, min_periods=12, min_growth=0.25, min_growth_bytes=MIB)
    rss = 100 * MIB + 20 * MIB * np.arange(HOURS, dtype=float)
    rules = ProcessRules(ramp={"limit_bytes": "2 GiB"})
    (finding,) = _scan_rss(rss, ["memory_ramp"], rules)
    ev = finding.evidence_dict()
    # 1040 MiB now, 480 MiB a day: (2048 - 1040) / 480 = 2.1 days
    assert ev["days_to_limit"] == pytest.approx(2.1, abs=0.05)


def test_saw_tooth_period_and_not_a_ramp() -> None:
    phase = (np.arange(HOURS) % 6) / 6
    rss = 50 * MIB + 600 * MIB * phase
    (found,) = _scan_rss(rss, ["saw_tooth", "memory_ramp"])
    assert found.kind.value == "saw_tooth"
    assert found.evidence_dict()["period"] == 6 * 3600
    assert found.evidence_dict()["teeth"] == 7


def test_file_saw_tooth_from_file_bytes() -> None:
    files = list(200 * MIB * ((np.arange(HOURS) % 8) / 8))
    data = frame({("logwriter", 4): [0.01] * HOURS}, files={("logwriter", 4): files})
    (found,) = detect(data, DEFAULT_RULES, "saw_tooth")
    assert found.metric == "file_bytes"
    assert found.evidence_dict()["period"] == 8 * 3600


# (tools CPU as a fraction of the 4-CPU box, hours, expected)
CAP_CASES = [(0.09, 5, False), (0.10, 5, False), (0.11, 1, True), (0.3, 3, True)]


@pytest.mark.parametrize(("share", "hours", "expected"), CAP_CASES)
def test_tools_cap(share: float, hours: int, expected: bool) -> None:
    cpu = [share * 4 / 2] * hours + [0.0] * (24 - hours)
    data = frame({("backup_agent", 3): cpu, ("antivirus_scan", 4): cpu, ("app", 5): [0.5] * 24})
    found = detect(data, DEFAULT_RULES, "cap_exceeded")
    assert bool(found) is expected
    if expected:
        assert found[0].entity == "n1/tools"
        assert found[0].evidence_dict()["stealth"] is True


def test_memory_cap_for_a_user_group() -> None:
    rules = ProcessRules(
        groups=({"name": "batch", "users": ("etl",), "max_rss_bytes": "1 GiB"},)  # type: ignore[arg-type]
    )
    data = frame(
        {("loader", 3): [0.1] * 24},
        rss={("loader", 3): [2e9] * 2 + [1e8] * 22},
        users={"loader": "etl"},
    )
    (found,) = detect(data, rules, "cap_exceeded")
    assert found.metric == "rss_bytes"
    assert found.evidence_dict()["periods_over"] == 2


# (machine CPU / captured CPU, expected a capture-ratio finding)
CAPTURE_CASES = [(1.0, False), (1.1, False), (1.5, True), (0.7, True)]


@pytest.mark.parametrize(("factor", "expected"), CAPTURE_CASES)
def test_capture_ratio(factor: float, expected: bool) -> None:
    cpu = list(0.5 + 0.3 * np.sin(np.arange(24)))
    data = frame({("app", 1): cpu}, machine=[c * factor for c in cpu])
    assert bool(detect(data, DEFAULT_RULES, "capture_ratio")) is expected
