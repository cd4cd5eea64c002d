"""Findings: the one result type every detector returns and everything downstream consumes.

Store, report, alerts and exit codes see only :class:`Finding`. A finding is immutable, has
timezone-aware UTC ``start <= end``, a plain one-sentence explanation, and typed evidence.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import IntEnum, StrEnum
from typing import Any

from perfsleuth.errors import DataError

__all__ = [
    "Evidence",
    "EvidenceValue",
    "Finding",
    "Kind",
    "Severity",
    "ordered",
    "read_jsonl",
    "write_jsonl",
]

EvidenceValue = float | int | str | bool


class Kind(StrEnum):
    """What a finding says happened."""

    CHANGE_POINT = "change_point"
    SPIKE = "spike"
    WORKLOAD_ANOMALY = "workload_anomaly"
    WORKLOAD_CHANGE = "workload_change"
    APPLICATION_CHANGE = "application_change"
    CPU_LOOP = "cpu_loop"
    CONSTRAINED_LOOP = "constrained_loop"
    HUM = "hum"
    MEMORY_RAMP = "memory_ramp"
    SAW_TOOTH = "saw_tooth"
    CAP_EXCEEDED = "cap_exceeded"
    CAPTURE_RATIO = "capture_ratio"
    BOTTLENECK = "bottleneck"
    UPGRADE = "upgrade"


class Severity(IntEnum):
    """How urgent a finding is; the values follow :mod:`logging` levels."""

    DEBUG = 10
    INFO = 20
    WARNING = 30
    ERROR = 40
    CRITICAL = 50

    @classmethod
    def parse(cls, text: str | int) -> Severity:
        """Accept a name (any case) or a number, as given on the command line or in config."""
        if isinstance(text, int):
            return cls(text)
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.name.lower() for s in cls)
            raise ValueError(f"unknown severity {text!r}; expected one of {names}") from None


@dataclass(frozen=True, slots=True)
class Evidence:
    """One named fact backing a finding, with its unit ("" when dimensionless)."""

    name: str
    value: EvidenceValue
    unit: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.value, float | int | str | bool):
            # numpy scalars are common here; store plain Python values so JSON round-trips.
            item = getattr(self.value, "item", None)
            if item is None:
                raise TypeError(f"evidence {self.name!r}: unsupported value {self.value!r}")
            object.__setattr__(self, "value", item())

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf; keep it readable and lossless
            return {"name": self.name, "value": value, "unit": self.unit, "nonfinite": True}
        return {"name": self.name, "value": value, "unit": self.unit}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        value = data["value"]
        if data.get("nonfinite"):
            value = float(value)
        return cls(name=str(data["name"]), value=value, unit=str(data.get("unit", "")))


def _utc(value: datetime, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got naive {value.isoformat()}")
    return value.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Finding:
    """Something a detector found, in a form a person paged at 3 a.m. can act on."""

    kind: Kind
    entity: str
    metric: str
    start: datetime
    end: datetime
    severity: Severity
    explanation: str
    evidence: tuple[Evidence, ...] = field(default=())
    detector: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))
        object.__setattr__(self, "severity", Severity(self.severity))
        object.__setattr__(self, "start", _utc(self.start, "start"))
        object.__setattr__(self, "end", _utc(self.end, "end"))
        object.__setattr__(self, "evidence", tuple(self.evidence))
        if self.start > self.end:
            raise ValueError(f"finding starts after it ends: {self.start} > {self.end}")
        if not self.explanation.strip():
            raise ValueError("a finding needs an explanation")

    @property
    def id(self) -> str:
        """Stable identity: the same finding found again gets the same id (used to de-duplicate)."""
        key = "\x1f".join(
            [
                self.kind.value,
                self.entity,
                self.metric,
                self.start.isoformat(),
                self.end.isoformat(),
                self.detector,
            ]
        )
        return hashlib.blake2b(key.encode(), digest_size=12).hexdigest()

    def evidence_dict(self) -> dict[str, EvidenceValue]:
        return {e.name: e.value for e in self.evidence}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind.value,
            "entity": self.entity,
            "metric": self.metric,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "severity": self.severity.name.lower(),
            "explanation": self.explanation,
            "evidence": [e.to_dict() for e in self.evidence],
            "detector": self.detector,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            kind=Kind(data["kind"]),
            entity=str(data["entity"]),
            metric=str(data["metric"]),
            start=datetime.fromisoformat(data["start"]),
            end=datetime.fromisoformat(data["end"]),
            severity=Severity.parse(data["severity"]),
            explanation=str(data["explanation"]),
            evidence=tuple(Evidence.from_dict(e) for e in data.get("evidence", ())),
            detector=str(data.get("detector", "")),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> Finding:
        return cls.from_dict(json.loads(text))


def ordered(findings: Iterable[Finding]) -> list[Finding]:
    """Most severe first, then earliest start: the order people read findings in.

    The rest of the key only makes the order total, so output is deterministic.
    """
    return sorted(
        findings,
        key=lambda f: (-f.severity, f.start, f.end, f.entity, f.metric, f.kind.value, f.detector),
    )


def write_jsonl(findings: Iterable[Finding]) -> str:
    """Findings as JSON lines, one finding per line."""
    return "".join(f.to_json() + "\n" for f in findings)


def read_jsonl(text: str, *, source: str = "<findings>") -> list[Finding]:
    """Parse JSON lines written by :func:`write_jsonl`; errors name the line."""
    findings = []
    # lines end at "\n" only: a name may hold U+2028 or NEL, which str.splitlines breaks at
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            findings.append(Finding.from_json(line))
        except KeyError as exc:
            raise DataError(f"{source}:{number}: not a finding: no field {exc}") from exc
        except (ValueError, TypeError) as exc:
            raise DataError(f"{source}:{number}: not a finding: {exc}") from exc
    return findings
