"""The process family's detectors: one per pathology, all reading the **process** frame.

Each is a frozen parameter class holding the rules (:class:`ProcessRules`, the built-in ones by
default) whose ``detect`` runs one per-node check of :mod:`perfsleuth.process.checks` on every
node. In TOML the parameters are the rules file's tables under ``[detectors.<name>.rules]``;
``perfsleuth processes scan --rules`` reads a rules file directly.
"""

from __future__ import annotations

from typing import ClassVar

import pandas as pd
from pydantic import Field
from pydantic.dataclasses import dataclass

from perfsleuth.detectors.base import PARAMS
from perfsleuth.findings import Finding
from perfsleuth.process.rules import DEFAULT_RULES, ProcessRules
from perfsleuth.process.scanner import scan

__all__ = [
    "CapExceededDetector",
    "CaptureRatioDetector",
    "ConstrainedLoopDetector",
    "CpuLoopDetector",
    "HumDetector",
    "MemoryRampDetector",
    "SawToothDetector",
]


@dataclass(frozen=True, config=PARAMS)
class _ProcessDetector:
    name: ClassVar[str] = ""
    contract: ClassVar[str] = "process"

    rules: ProcessRules = Field(default_factory=lambda: DEFAULT_RULES)

    def detect(self, frame: pd.DataFrame) -> list[Finding]:
        """Findings of this detector's check on every node of ``frame``."""
        return scan(frame, self.rules, kinds=(self.name,))


@dataclass(frozen=True, config=PARAMS)
class CpuLoopDetector(_ProcessDetector):
    """Simple loops: about one CPU for ``hours`` periods of a window on an unsaturated machine."""

    name: ClassVar[str] = "cpu_loop"


@dataclass(frozen=True, config=PARAMS)
class ConstrainedLoopDetector(_ProcessDetector):
    """Constrained loops on saturated machines (correlation, or means within 2σ when dormant)."""

    name: ClassVar[str] = "constrained_loop"


@dataclass(frozen=True, config=PARAMS)
class HumDetector(_ProcessDetector):
    """Hums and shrieks: steady CPU all day, unrelated to business volume."""

    name: ClassVar[str] = "hum"


@dataclass(frozen=True, config=PARAMS)
class MemoryRampDetector(_ProcessDetector):
    """Ramps: a significant, sustained rise in memory or open-file size (Theil–Sen)."""

    name: ClassVar[str] = "memory_ramp"


@dataclass(frozen=True, config=PARAMS)
class SawToothDetector(_ProcessDetector):
    """Saw-tooths: ramps that reset, with their period."""

    name: ClassVar[str] = "saw_tooth"


@dataclass(frozen=True, config=PARAMS)
class CapExceededDetector(_ProcessDetector):
    """Named process groups above their CPU or memory cap."""

    name: ClassVar[str] = "cap_exceeded"


@dataclass(frozen=True, config=PARAMS)
class CaptureRatioDetector(_ProcessDetector):
    """Capture ratio (Σ process CPU / machine CPU) out of range."""

    name: ClassVar[str] = "capture_ratio"
