"""What every family is made of: a detector, the analysis it returns, and the family descriptor.

* A **detector** is a frozen, validated parameter class (a pydantic dataclass with
  :data:`PARAMS`: unknown parameters are errors) with one job, ``analyse(frame) -> Analysis``;
  ``detect(frame)`` is ``analyse(frame).findings``. Constructors only store parameters.
* An **analysis** is a frozen result: the findings *and* everything the report and the
  notifications draw (fits, segments, periods, probabilities), so nothing downstream fits or
  searches again. Its ``summary()`` renders it as text and HTML.
* A **family** descriptor (:class:`Family`) names one family's detector, report section and the
  kinds of finding it reports; :mod:`perfsleuth.families` lists them, and the config, the run
  path and the report read that list.

This module imports nothing heavy, so descriptors can be read without pandas or numpy.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from perfsleuth.blas import one_blas_thread
from perfsleuth.findings import Finding

if TYPE_CHECKING:
    import pandas as pd
    from pydantic import ConfigDict

    from perfsleuth.report.section import Section

__all__ = [
    "PARAMS",
    "Analysis",
    "Detector",
    "DetectorMixin",
    "Family",
    "Summary",
    "params_of",
]

PARAMS: ConfigDict = {"extra": "forbid", "arbitrary_types_allowed": False, "allow_inf_nan": False}
"""The pydantic config every detector parameter class uses: unknown parameters are errors, and
so is a NaN or an infinity (``alpha = nan`` was refused as "should be less than 1")."""


@dataclass(frozen=True, slots=True)
class Summary:
    """A result rendered for people: ``text`` (plain, fixed width) and ``html`` (escaped)."""

    text: str
    html: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:  # shown by Jupyter
        return self.html


@runtime_checkable
class Analysis(Protocol):
    """What a detector found and everything drawn from it (one frozen object per run)."""

    @property
    def findings(self) -> tuple[Finding, ...]: ...

    def summary(self) -> Summary:
        """The analysis as text and HTML (what a person reads first)."""
        ...


@runtime_checkable
class Detector(Protocol):
    """A detector: ``name`` (its family), ``contract`` (the frame it reads), ``analyse``."""

    name: ClassVar[str]
    contract: ClassVar[str]

    def analyse(self, frame: pd.DataFrame) -> Analysis:
        """Everything this detector concludes from ``frame``."""
        ...

    def detect(self, frame: pd.DataFrame) -> list[Finding]:
        """``analyse(frame).findings`` as a list (``[]`` when there is nothing to report)."""
        ...


class DetectorMixin:
    """``detect`` for detectors that define ``analyse`` (one way to get findings), and every
    ``analyse`` run with one BLAS thread (:mod:`perfsleuth.blas`: on a busy host more threads
    spin, costing CPU for nothing) whoever calls it: the run path, the fleet, a user."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "analyse" in cls.__dict__:
            cls.analyse = one_blas_thread(cls.__dict__["analyse"])  # type: ignore[method-assign]

    def analyse(self, frame: pd.DataFrame) -> Analysis:  # pragma: no cover - overridden
        raise NotImplementedError

    def detect(self, frame: pd.DataFrame) -> list[Finding]:
        """The findings of :meth:`analyse`."""
        return list(self.analyse(frame).findings)


def params_of(detector: Detector) -> dict[str, Any]:
    """The detector's parameters as plain TOML/JSON values (durations as ``"5m"``).

    Unset optional parameters are left out: TOML has no null, and absent means unset.
    """
    from pydantic import TypeAdapter

    if not dataclasses.is_dataclass(detector):
        raise TypeError(f"{type(detector).__name__} is not a parameter dataclass")
    data: dict[str, Any] = TypeAdapter(type(detector)).dump_python(
        detector, mode="json", exclude_none=True
    )
    return data


def _load(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True, slots=True)
class Family:
    """One detector family (one paper): how to build its detector and draw its analysis.

    Parameters
    ----------
    name
        The family's one name: its package, its command, its config table
        (``[detectors.<name>]``) and its block in the report.
    title
        Heading in the report, with the paper it implements.
    question
        The question it answers, as an operator would ask it.
    contract
        The frame contract its detector reads (``perfsleuth.frames``).
    detector
        ``"module:Class"`` of its detector (imported on first use).
    section
        ``"module:function"`` drawing its analysis as a report :class:`Section`.
    kinds
        The kinds of finding it reports, each with the first thing to do about one.
    checks
        The names its findings carry in ``Finding.detector`` (their stable identity).
    about
        What its findings' entities name: a ``"service"`` (the one a workload frame
        describes), a ``"node"`` (a host, or a process on one), or a ``"series"``'s entity,
        which may be either. Incidents relate findings through it.
    """

    name: str
    title: str
    question: str
    contract: str
    detector: str
    section: str
    kinds: Mapping[str, str]
    checks: tuple[str, ...]
    about: Literal["series", "service", "node"] = "series"

    def detector_class(self) -> type[Detector]:
        """The detector class (imported now)."""
        cls: type[Detector] = _load(self.detector)
        return cls

    def render(self, analysis: Analysis, *, max_points: int = 5000) -> Section:
        """The report section of ``analysis`` (drawn from it, never recomputed)."""
        draw: Callable[..., Section] = _load(self.section)
        return draw(analysis, max_points=max_points)
