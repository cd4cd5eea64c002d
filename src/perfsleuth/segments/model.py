"""What the segment detector works on and what it makes of it, step by step.

* :class:`Windows` — the columns of a workload frame the detector reads, as arrays in time order;
* :class:`Piece` — one segment of the optimal segmentation, classified (normal or anomaly);
* :class:`Boundary` — where one reconciled period of normal windows meets the next, and the
  verdict (workload change or application change).

:mod:`.detector` builds them and :mod:`.explain` words them as findings; both import them from
here, so neither imports the other's module for its types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.segments.kernels.cpumodel import CostChange, CpuModel, fit_cpu_model
from perfsleuth.segments.kernels.ownstep import OwnStep
from perfsleuth.segments.kernels.signature import SignatureChange

__all__ = ["Boundary", "BoundaryKind", "FloatArray", "Label", "Piece", "Windows"]

FloatArray = NDArray[np.float64]
Label = Literal["normal", "anomaly"]
BoundaryKind = Literal["workload_change", "application_change"]


@dataclass(frozen=True, slots=True)
class Windows:
    """The columns the detector needs, as arrays, one entry (row) per window, sorted by time."""

    start: NDArray[np.datetime64]
    width: FloatArray
    types: tuple[str, ...]
    counts: FloatArray
    latency: FloatArray  # mean latency per window and type (s), NaN where no transactions
    cpu: FloatArray  # CPU-seconds per window
    cores: FloatArray

    def when(self, i: int) -> datetime:
        """Start of window i (UTC)."""
        stamp: datetime = pd.Timestamp(self.start[i]).tz_localize("UTC").to_pydatetime()
        return stamp

    def end(self, i: int) -> datetime:
        """End of window i (UTC)."""
        return self.when(i) + timedelta(seconds=float(self.width[i]))

    def seconds(self, a: int, b: int) -> float:
        """How long the windows ``[a, b)`` last, in seconds (their widths added up)."""
        return float(self.width[a:b].sum())

    def model(self, rows: NDArray[np.intp], alpha: float) -> CpuModel:
        """The CPU model (stepwise selection at ``alpha``) of the windows ``rows``."""
        return fit_cpu_model(
            self.counts[rows], self.cpu[rows], self.width[rows], names=self.types, alpha=alpha
        )


@dataclass(frozen=True, slots=True)
class Piece:
    """One segment of the optimal segmentation and what the detector made of it.

    ``start``/``stop`` are window indices (the segment is ``[start, stop)``); ``rules`` the
    anomaly rules that fired (``"idle"``, ``"short"``, ``"residual"``, ``"signature"``);
    ``idle_util`` the fitted idle overhead ``C0`` as a share of the machine (NaN without a
    model); ``excess`` the mean CPU-seconds per window above the neighbouring normal models
    (NaN without neighbours), ``z`` its size in standard errors; ``absorbed_into`` the index of
    the piece a non-anomalous short piece joined (or −1).
    """

    start: int
    stop: int
    label: Label
    model: CpuModel | None
    idle_util: float
    rules: tuple[str, ...]
    excess: float
    z: float
    absorbed_into: int = -1

    @property
    def windows(self) -> int:
        return self.stop - self.start


@dataclass(frozen=True, slots=True)
class Boundary:
    """Where one normal group of windows meets the next, and the verdict of reconciliation.

    ``kind`` is ``"workload_change"`` or ``"application_change"``; ``index`` the first window of
    the later group (or segment); ``before``/``after`` the two sides' ``[start, stop)`` window
    ranges. ``excess`` is the joint model's worst extra relative error, ``p_value`` the Chow
    test's; ``changes`` the signature comparison (service times with the common conditions of
    each window taken out, :func:`~perfsleuth.segments.kernels.signature.compare_service`);
    ``unconfirmed`` a workload change whose CPU models differ although no transaction type's
    service time changed and the CPU singles out no type whose cost shifted (see ``confirm``).
    For application changes: ``named`` the transaction types named as changed, the most
    certain first (``tentative`` when none stood out clearly and the likeliest is named), and
    ``costs`` their CPU cost per transaction before and the shift after, with intervals
    (:func:`~perfsleuth.segments.kernels.cpumodel.cost_change`); ``own`` the steps of the own
    latency of every type found changed (:mod:`~perfsleuth.segments.kernels.ownstep`; those
    that rose are ``named``, those that fell are reported beside them; empty when the CPU named
    the types); ``end_of_data`` an application change found only by the end-of-data bars (too
    little data after it for the full bar: lower confidence).
    """

    index: int
    kind: BoundaryKind
    before: tuple[int, int]
    after: tuple[int, int]
    excess: float
    p_value: float
    changes: tuple[SignatureChange, ...] = ()
    coef_before: dict[str, float] = field(default_factory=dict)
    coef_after: dict[str, float] = field(default_factory=dict)
    unconfirmed: bool = False
    named: tuple[str, ...] = ()
    tentative: bool = False
    costs: tuple[CostChange, ...] = ()
    own: tuple[OwnStep, ...] = ()
    end_of_data: bool = False
