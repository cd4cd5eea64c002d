"""What every detector is: a frozen, validated parameter class with ``detect(frame)``.

Parameters are declared once as a pydantic dataclass with ``extra="forbid"``, so Python
construction, TOML configuration and the JSON schema agree. Constructors only store parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Protocol, runtime_checkable

import pandas as pd
from pydantic import ConfigDict, TypeAdapter

from perfsleuth.findings import Finding

__all__ = ["PARAMS", "Detector", "params_of"]

PARAMS = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
"""The pydantic config every detector parameter class uses: unknown parameters are errors."""


@runtime_checkable
class Detector(Protocol):
    """A detector: ``name`` (registry key), ``contract`` (frame it reads), ``detect``."""

    name: ClassVar[str]
    contract: ClassVar[str]

    def detect(self, frame: pd.DataFrame) -> list[Finding]:
        """Return findings for ``frame`` (``[]`` when there is nothing to report)."""
        ...


def params_of(detector: Detector) -> dict[str, Any]:
    """The detector's parameters as plain TOML/JSON values (durations as ``"5m"``)."""
    assert dataclasses.is_dataclass(detector)
    data: dict[str, Any] = TypeAdapter(type(detector)).dump_python(detector, mode="json")
    return data
