"""Shared fixtures: findings and frames built the way detectors and readers build them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfsleuth.findings import Evidence, Finding, Kind, Severity

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
