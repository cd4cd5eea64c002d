"""perfsleuth: automated performance diagnosis from the monitoring data a team already has.

The public API is imported lazily so that ``import perfsleuth`` (and ``perfsleuth --help``)
stays fast; heavy libraries load when a function that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "find_change_points": "perfsleuth.stats.changepoint",
    "ChangePoints": "perfsleuth.stats.changepoint",
    "fit_mix_model": "perfsleuth.stats.mixmodel",
    "MixFit": "perfsleuth.stats.mixmodel",
    "diagnose": "perfsleuth.diagnose",
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
    "ChangePoints",
    "Evidence",
    "Finding",
    "Kind",
    "MixFit",
    "PerfsleuthError",
    "Severity",
    "Store",
    "diagnose",
    "find_change_points",
    "fit_mix_model",
    "normalise",
    "read_frame",
]

if TYPE_CHECKING:
    from perfsleuth.diagnose import diagnose
    from perfsleuth.errors import PerfsleuthError
    from perfsleuth.findings import Evidence, Finding, Kind, Severity
    from perfsleuth.frames import normalise
    from perfsleuth.sources.files import read_frame
    from perfsleuth.stats.changepoint import ChangePoints, find_change_points
    from perfsleuth.stats.mixmodel import MixFit, fit_mix_model
    from perfsleuth.store import Store


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'perfsleuth' has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*globals(), *__all__]
