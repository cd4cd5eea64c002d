"""The lazy detector registry: names map to ``"module:Class"`` and are imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from perfsleuth.detectors.base import Detector
from perfsleuth.errors import ConfigError

__all__ = ["DETECTORS", "create", "detector_class", "names"]

DETECTORS: dict[str, str] = {
    "changepoint": "perfsleuth.detectors.changepoint:ChangePointDetector",
    "workload_mix": "perfsleuth.detectors.workload:MixAnomalyDetector",
    "workload_segments": "perfsleuth.detectors.segments:SegmentDetector",
    "cpu_loop": "perfsleuth.process.detectors:CpuLoopDetector",
    "constrained_loop": "perfsleuth.process.detectors:ConstrainedLoopDetector",
    "hum": "perfsleuth.process.detectors:HumDetector",
    "memory_ramp": "perfsleuth.process.detectors:MemoryRampDetector",
    "saw_tooth": "perfsleuth.process.detectors:SawToothDetector",
    "cap_exceeded": "perfsleuth.process.detectors:CapExceededDetector",
    "capture_ratio": "perfsleuth.process.detectors:CaptureRatioDetector",
    "bottleneck": "perfsleuth.bottleneck.detector:BottleneckDetector",
}


def names() -> list[str]:
    """Every registered detector name."""
    return sorted(DETECTORS)


def detector_class(name: str) -> type[Detector]:
    """Import and return the class registered as ``name``."""
    try:
        target = DETECTORS[name]
    except KeyError:
        raise ConfigError(f"unknown detector {name!r}; known: {', '.join(names())}") from None
    module, _, attr = target.partition(":")
    cls: type[Detector] = getattr(importlib.import_module(module), attr)
    return cls


def create(name: str, params: Mapping[str, Any] | None = None, *, source: str = "") -> Detector:
    """Build detector ``name`` from plain parameters (as read from TOML), validating them."""
    from perfsleuth.config import validation_message

    cls = detector_class(name)
    try:
        detector: Detector = TypeAdapter(cls).validate_python(dict(params or {}))
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, source=source or f"detectors.{name}")) from exc
    return detector
