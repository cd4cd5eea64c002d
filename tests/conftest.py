"""Shared fixtures: findings and frames built the way detectors and readers build them."""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings

from perfsleuth.findings import Evidence, Finding, Kind, Severity

# Property tests draw the same examples on every run, so a CI failure reproduces and a green
# run stays green; PERFSLEUTH_HYPOTHESIS=hunt draws fresh ones (and keeps what fails).
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("hunt", derandomize=False)
settings.load_profile(os.environ.get("PERFSLEUTH_HYPOTHESIS", "deterministic"))

# scripts/test.sh installs every component the tests use, so there a skipped test means a
# check that did not run: it fails instead (PERFSLEUTH_NO_SKIPS=1), naming what was missing.
NO_SKIPS = os.environ.get("PERFSLEUTH_NO_SKIPS") == "1"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report: pytest.TestReport = yield
    if NO_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped where every component should be installed: {reason}"
    return report


T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def make_finding(
    *,
    kind: Kind = Kind.CHANGE_POINT,
    entity: str = "web-1",
    metric: str = "response_time",
    minutes: int = 0,
    length: int = 0,
    severity: Severity = Severity.WARNING,
    explanation: str = "mean response time rose from 12 ms to 30 ms",
) -> Finding:
    start = T0 + timedelta(minutes=minutes)
    return Finding(
        kind=kind,
        entity=entity,
        metric=metric,
        start=start,
        end=start + timedelta(minutes=length),
        severity=severity,
        explanation=explanation,
        evidence=(
            Evidence("mean_before", 0.012, "s"),
            Evidence("mean_after", 0.030, "s"),
            Evidence("p_value", 0.001),
        ),
        detector="test",
    )


@pytest.fixture
def finding_factory() -> Callable[..., Finding]:
    return make_finding


@pytest.fixture
def write_csv(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path/name`` and return the path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
