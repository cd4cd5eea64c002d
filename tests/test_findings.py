from __future__ import annotations

import dataclasses
import json
import math
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfsleuth.errors import DataError
from perfsleuth.findings import Evidence, Finding, Kind, Severity, read_jsonl, write_jsonl
from tests.conftest import make_finding


def test_finding_is_frozen() -> None:
    finding = make_finding()
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.entity = "other"  # type: ignore[misc]


def test_json_round_trip_is_exact() -> None:
    finding = make_finding(length=5)
    again = Finding.from_json(finding.to_json())
    assert again == finding
    assert again.id == finding.id


def test_non_finite_evidence_round_trips_through_strict_json() -> None:
    finding = dataclasses.replace(
        make_finding(), evidence=(Evidence("t", math.inf), Evidence("phi", math.nan))
    )
    text = finding.to_json()
    json.loads(text)  # strict JSON: no bare NaN/Infinity tokens
    again = Finding.from_json(text)
    assert again.evidence[0].value == math.inf
    assert math.isnan(float(again.evidence[1].value))


def test_numpy_scalars_become_python_values() -> None:
    evidence = Evidence("n", np.int64(3), "count")
    assert type(evidence.value) is int
    assert Evidence("x", np.float64(0.5)).value == 0.5


def test_times_are_normalised_to_utc() -> None:
    cet = timezone(timedelta(hours=1))
    finding = dataclasses.replace(
        make_finding(),
        start=datetime(2024, 1, 1, 1, tzinfo=cet),
        end=datetime(2024, 1, 1, 2, tzinfo=cet),
    )
    assert finding.start == datetime(2024, 1, 1, 0, tzinfo=UTC)
    assert finding.start.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"start": datetime(2024, 1, 1)}, "timezone-aware"),
        ({"end": datetime(2020, 1, 1, tzinfo=UTC)}, "starts after it ends"),
        ({"explanation": "  "}, "explanation"),
        ({"kind": "not_a_kind"}, "not_a_kind"),
    ],
)
def test_invalid_findings_are_rejected(change: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(make_finding(), **change)  # type: ignore[arg-type]


def test_id_is_stable_and_distinguishes_findings() -> None:
    assert make_finding().id == make_finding().id
    assert make_finding().id != make_finding(minutes=1).id
    assert make_finding().id != make_finding(entity="web-2").id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("warning", Severity.WARNING),
        ("ERROR", Severity.ERROR),
        (" info ", Severity.INFO),
        (50, Severity.CRITICAL),
    ],
)
def test_severity_parse(text: str | int, expected: Severity) -> None:
    assert Severity.parse(text) is expected


def test_severity_parse_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="expected one of"):
        Severity.parse("loud")


def test_jsonl_round_trip_and_errors_name_the_line() -> None:
    findings = [make_finding(minutes=i) for i in range(3)]
    assert read_jsonl(write_jsonl(findings)) == findings
    text = write_jsonl(findings[:1]) + "{not json}\n"
    with pytest.raises(DataError, match=r"f\.jsonl:2: not a finding"):
        read_jsonl(text, source="f.jsonl")


names = st.text(min_size=1, max_size=30)
values = st.one_of(
    st.floats(allow_nan=False), st.integers(-(2**53), 2**53), st.text(max_size=20), st.booleans()
)


@given(
    kind=st.sampled_from(Kind),
    entity=names,
    metric=names,
    seconds=st.integers(0, 10**9),
    length=st.integers(0, 10**6),
    severity=st.sampled_from(Severity),
    explanation=names.filter(str.strip),
    evidence=st.lists(st.tuples(names, values, st.sampled_from(["", "s", "bytes"])), max_size=5),
)
def test_any_finding_round_trips(
    kind: Kind,
    entity: str,
    metric: str,
    seconds: int,
    length: int,
    severity: Severity,
    explanation: str,
    evidence: list[tuple[str, float | int | str | bool, str]],
) -> None:
    start = datetime(2000, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    finding = Finding(
        kind=kind,
        entity=entity,
        metric=metric,
        start=start,
        end=start + timedelta(seconds=length),
        severity=severity,
        explanation=explanation,
        evidence=tuple(Evidence(*e) for e in evidence),
        detector="x",
    )
    assert Finding.from_json(finding.to_json()) == finding
