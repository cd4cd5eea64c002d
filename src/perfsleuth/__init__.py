"""perfsleuth: automated performance diagnosis from the monitoring data a team already has.

The public API is imported lazily so that ``import perfsleuth`` (and ``perfsleuth --help``)
stays fast; heavy libraries load when a function that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "find_change_points": "perfsleuth.changepoints.kernels.search",
    "ChangePoints": "perfsleuth.changepoints.kernels.search",
    "fit_mix_model": "perfsleuth.workload.kernels",
    "MixFit": "perfsleuth.workload.kernels",
    "ChangePointDetector": "perfsleuth.changepoints.detector",
    "MixAnomalyDetector": "perfsleuth.workload.detector",
    "SegmentDetector": "perfsleuth.segments.detector",
    "ProcessDetector": "perfsleuth.processes.detector",
    "BottleneckDetector": "perfsleuth.bottleneck.detector",
    "diagnose": "perfsleuth.pipeline",
    "run": "perfsleuth.pipeline",
    "Plan": "perfsleuth.pipeline",
    "Input": "perfsleuth.pipeline",
    "Step": "perfsleuth.pipeline",
    "Outputs": "perfsleuth.pipeline",
    "Finding": "perfsleuth.findings",
    "Evidence": "perfsleuth.findings",
    "Kind": "perfsleuth.findings",
    "Severity": "perfsleuth.findings",
    "Store": "perfsleuth.store",
    "normalise": "perfsleuth.frames",
    "read_frame": "perfsleuth.sources.files",
    "PerfsleuthError": "perfsleuth.errors",
}

__all__ = [
    "BottleneckDetector",
    "ChangePointDetector",
    "ChangePoints",
    "Evidence",
    "Finding",
    "Input",
    "Kind",
    "MixAnomalyDetector",
    "MixFit",
    "Outputs",
    "PerfsleuthError",
    "Plan",
    "ProcessDetector",
    "SegmentDetector",
    "Severity",
    "Step",
    "Store",
    "diagnose",
    "find_change_points",
    "fit_mix_model",
    "normalise",
    "read_frame",
    "run",
]

if TYPE_CHECKING:
    from perfsleuth.bottleneck.detector import BottleneckDetector
    from perfsleuth.changepoints.detector import ChangePointDetector
    from perfsleuth.changepoints.kernels.search import ChangePoints, find_change_points
    from perfsleuth.errors import PerfsleuthError
    from perfsleuth.findings import Evidence, Finding, Kind, Severity
    from perfsleuth.frames import normalise
    from perfsleuth.pipeline import Input, Outputs, Plan, Step, diagnose, run
    from perfsleuth.processes.detector import ProcessDetector
    from perfsleuth.segments.detector import SegmentDetector
    from perfsleuth.sources.files import read_frame
    from perfsleuth.store import Store
    from perfsleuth.workload.detector import MixAnomalyDetector
    from perfsleuth.workload.kernels import MixFit, fit_mix_model


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'perfsleuth' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*globals(), *__all__]
