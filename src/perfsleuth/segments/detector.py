"""Anomaly, application change or workload change? (Cherkasova et al. 2008; DESIGN §2.3).

A workload frame's CPU time per window (``cpu_util`` × ``window_s`` × ``cpu_cores``) is explained
by the transactions served: ``cpu_t = C0·L_t + Σ_i C_i·N_it``
(:mod:`perfsleuth.segments.kernels.cpumodel`). The detector

1. **checks the CPU it was given**: the model explains the CPU of the service's own processes.
   The whole machine's CPU on a shared host is mostly other work, and once it saturates it
   says nothing of the transactions; both are warned about (:attr:`SegmentAnalysis.warnings`).
2. **segments** the time axis where that model changes
   (:func:`~perfsleuth.segments.kernels.segmentation.segment_regression`). The default cost is
   Gaussian, ``Σ SSE_m/σ² + β`` per segment with σ the windows' own noise: a change is cut out
   when it stands out of that noise over the windows it lasts. The paper's cost
   (``cost="paper"``, ``Σ sqrt(SSE_m)`` + an entropy penalty from ``allowed_error``) cannot cut
   a change smaller than about twice one window's noise however long it lasts — on a busy
   host, with windows of a few seconds, every application change is.
3. fits each segment's model (NNLS, stepwise F-test selection) and finds the **anomalous**
   segments — CPU the workload does not explain. Against the **neighbouring normal models** (the
   nearest normal segment before and after it), a segment whose CPU is higher by at least
   ``threshold`` standard errors and by at least ``allowed_error`` of its CPU, for every
   neighbour, is in excess (*residual rule*). Between two neighbours the excess came and went:
   an anomaly (a process outside the workload, whatever it does to the latencies: a hog slows
   some types more than others). At either end of the data, with one neighbour, it did not
   go; there the paper's *idle rule* may fire too (``C0`` above ``idle_util`` of the machine,
   significantly), and the stretch is an anomaly unless a change of code explains it
   (*signature rule*: a type's own latency steps up for good where it begins, step 4, judged
   against all the normal segments on that side and the short segments between it and the
   end of the data, which it then explains too — an application change near the end of the
   data is not lost in an anomaly, at any window size). A short segment
   (under ``min_duration`` seconds, or too few windows for a model of its own) is an anomaly
   when the residual rule fires in either direction — beside an anomaly, only when its excess
   is at least half the anomaly's (nearer it than none); otherwise it joins the neighbour
   that explains it best, never one across an anomaly. An anomaly's edge windows are moved
   to it only when they are outliers with an excess nearer its own than none (``_refine``).
   Consecutive anomalous segments form one stretch. Each stretch is then placed, and kept,
   by its excess over **one CPU model of all the normal windows** (``_anomalies``,
   :mod:`~perfsleuth.segments.kernels.excess`): within it and ``min_duration`` seconds
   either side, the anomaly is the stretch whose excess explains the windows best (by
   likelihood, window by window, not where a segment happened to be cut), reported as a
   ``workload_anomaly`` when its mean excess is ``threshold`` times the model's spread over
   every other stretch as long as it — a neighbour's model, fitted on one mix, misses the
   next mix by 10–60% on a busy host; one model of all the mixes misses each by less. A kept
   stretch under ``min_anomaly`` seconds is a **burst** (a client reconnecting, a CPU sample
   a window late): counted in a warning, not reported.
4. **finds the application changes** in every window no anomaly is reported in (a stretch
   the segmentation set apart that no anomaly kept, or a burst, is normal here too) by binary
   segmentation of each type's **own latency**
   (:mod:`~perfsleuth.segments.kernels.ownstep`): its latency with the window's common stretch
   and tilt, fitted on the other types, taken out. Load, mix, co-tenants and queueing move
   every type together (a common wait lengthens short transactions relatively more: the
   tilt; a type that is mostly round trips feels the stretch more than one for one: its own
   sensitivity, fitted beside its step); a change of code moves one. A window counts by
   what it can show of a type's own work (its gain: near 0 where every type waits alike, as
   when the load generator is seconds behind its schedule). A cut is an
   application change where a type's own latency steps **up** (more work) by at least
   ``min_change``, beyond
   :func:`~perfsleuth.segments.kernels.ownstep.step_bar` (the split searched for, Bonferroni
   over the types, at ``alpha``), **lasts** (the later half of the windows after it keeps
   half the step; where the windows searched end at an earlier cut, also with all the windows
   after them to the end of the data: for good) and **holds in every later workload
   regime** (each stretch of one mix and rate to the end of the data,
   :func:`~perfsleuth.segments.kernels.mix.mix_regimes`, that holds ``min_duration``
   seconds and as many typical windows' worth of the type keeps half the step: a change of
   code moves a type whatever the mix, a type whose time follows the mix — a writer waiting
   on the log and the disk — moves with it); both sides last ``min_duration`` seconds;
   the most certain such step (largest t) cuts first, then both sides are searched again.
   At the end of the data, when no step
   passes, a step with under twice ``min_duration`` after it is judged against the **end-of-data
   bar** (the splits that leave so little after them only, at ``alpha / 2``) — or, where the windows
   before it hold three minutes or more, against that bar with the error known together with **the
   run's own history's** (:func:`~perfsleuth.segments.kernels.ownstep.history_bar`: how far the
   run's own mixes step at the end of series drawn from those windows) — and reported as a tentative
   application change (lower confidence: a warning) after which the search stops. The CPU models
   are not asked: on a busy host a linear CPU model misses by 7–33% between mixes with no code
   changed, and the CPU per transaction moves with the co-tenants (at a doubled type's change in
   the last phase its own CPU cost shift was negative in 8 of 13 searches). The periods between
   application changes are **reconciled** into workload changes: each cut of the segmentation
   inside a period is a ``workload_change`` (INFO), which says whether one CPU model explains
   both sides within ``allowed_error`` (extra relative error of the joint model, net of what
   noise alone costs it) or, if not, whether the difference is significant (Chow F-test at
   ``alpha``). With ``confirm=False`` the paper's rule decides instead: consecutive periods
   merge while their CPU models differ by at most ``allowed_error`` or not significantly, and
   each change left is placed where the two periods' models fit best.
5. **names the changed types**: at an application change, the types whose own latency stepped
   up for good between the two periods (beyond the normal quantile at ``alpha`` shared over
   the types, at least ``min_change``, lasting), one at a time by the hypothesis that explains
   the steps best — the type which, once it is no yardstick, leaves the other types' steps
   smallest (one type's change tilts the yardstick, so the type at the other end of the cost
   range seems to move too); where that type leaves another slower, the pair of types that
   does (two types changed at once are each in the other's yardstick); each type found is no
   yardstick for the next, nor is a type whose step passed the bar in step 4 but did not hold
   in every later workload regime (its own time moves with the mix). When none does
   (the paper's rule), the types whose CPU cost alone shifted
   (:func:`~perfsleuth.segments.kernels.cpumodel.shift_test`), else, tentatively, the type
   whose own latency rose most. Their CPU cost per transaction before and its shift after, with
   bootstrap intervals, come from one CPU model of both periods in which only their costs may
   move (:func:`~perfsleuth.segments.kernels.cpumodel.cost_change`), and the service times of
   the signature (:func:`~perfsleuth.segments.kernels.signature.compare_service`) are reported
   beside them. An application change with less than ``min_duration`` seconds of data after it
   is still reported, as a warning that says so.

:meth:`SegmentDetector.analyse` returns all of it as a :class:`SegmentAnalysis`; :mod:`.explain`
words the findings, and :mod:`.report` draws the analysis without fitting anything again.
Findings record :data:`CHECK` (``"workload_segments"``) as their ``detector``.

Units: ``cpu_util`` is a fraction of the whole machine; with ``cpu_cores`` the model is in
CPU-seconds (``C0`` in cores), without it in machine-seconds (as if one core).
"""

from __future__ import annotations

import html
import itertools
import logging
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass
from scipy.stats import f as f_dist
from scipy.stats import norm

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.findings import Finding
from perfsleuth.frames import coverage_of, normalise, workload_types
from perfsleuth.segments.explain import CHECK, anomaly_finding, change_findings
from perfsleuth.segments.kernels.cpumodel import (
    CostChange,
    CpuModel,
    ShiftTest,
    cost_change,
    fit_cpu_model,
    idle_test,
    shift_test,
)
from perfsleuth.segments.kernels.excess import excess_stretch, stretch_spread
from perfsleuth.segments.kernels.mix import mix_regimes
from perfsleuth.segments.kernels.ownstep import (
    OwnStep,
    history_bar,
    own_steps,
    regime_steps,
    step_at,
    step_bar,
)
from perfsleuth.segments.kernels.segmentation import Segmentation, segment_regression
from perfsleuth.segments.kernels.signature import (
    Signature,
    SignatureChange,
    compare_service,
    service_index,
)
from perfsleuth.segments.model import Boundary, FloatArray, Piece, Windows

__all__ = [
    "CHECK",
    "Boundary",
    "CpuModel",
    "Piece",
    "SegmentAnalysis",
    "SegmentDetector",
    "Segmentation",
    "Signature",
]

log = logging.getLogger(__name__)

_SATURATED = 0.95  # a window at least this busy (share of the machine) is saturated
_BLOCK_S = 20.0  # seconds of windows pooled per block in the signature's uncertainty

Stats = tuple[float, float, dict[str, float], dict[str, float]]


@dataclass(frozen=True, slots=True, eq=False)
class SegmentAnalysis:
    """A workload frame segmented, classified and reconciled: the findings and what they rest on.

    Arrays have one entry per window, in time order, and are read-only.

    Attributes
    ----------
    detector
        The parameters the frame was analysed with.
    findings
        One ``workload_anomaly`` finding per episode, then one ``workload_change`` or
        ``application_change`` finding per boundary, in time order.
    times
        Window starts (``datetime64[ns]``, UTC).
    width
        Window lengths (seconds).
    cpu
        CPU-seconds used per window (``cpu_util × window_s × cpu_cores``).
    cores
        Cores per window (1 when the frame has no ``cpu_cores``).
    types
        The transaction types (``n[<type>]`` columns), in the models' column order.
    segmentation
        The optimal segmentation of the CPU model (None without windows).
    pieces
        The segmentation's segments as classified (:class:`Piece`).
    episodes
        The anomalous stretches as reported, ``[start, stop)`` window ranges, after short normal
        pieces between anomalous ones were bridged and outlying edge windows joined them.
    groups
        The reconciled periods of normal windows: each a tuple of ``[start, stop)`` ranges, in
        time order.
    models
        Each group's joint CPU model.
    signatures
        Each group's application signature (service times with the windows' common conditions
        taken out, :func:`~perfsleuth.segments.kernels.signature.service_index`).
    boundaries
        Where one group meets the next, with the verdict (:class:`Boundary`), in time order.
    fitted
        Per window, the CPU-seconds its group's model predicts (NaN in anomalous windows).
    warnings
        What is doubtful about the CPU given (saturated, mostly other work), in sentences.
    """

    detector: SegmentDetector
    findings: tuple[Finding, ...]
    times: NDArray[np.datetime64]
    width: FloatArray
    cpu: FloatArray
    cores: FloatArray
    types: tuple[str, ...]
    segmentation: Segmentation | None
    pieces: tuple[Piece, ...]
    episodes: tuple[tuple[int, int], ...]
    groups: tuple[tuple[tuple[int, int], ...], ...]
    models: tuple[CpuModel, ...]
    signatures: tuple[Signature, ...]
    boundaries: tuple[Boundary, ...]
    fitted: FloatArray
    warnings: tuple[str, ...] = ()

    @property
    def n_windows(self) -> int:
        return len(self.cpu)

    def edge(self, i: int) -> np.datetime64:
        """Start of window ``i``, or the end of the last window when ``i`` is the number of
        windows (so ``edge(stop)`` ends a ``[start, stop)`` range)."""
        m = self.n_windows
        if i < m:
            start: np.datetime64 = self.times[i]
            return start
        end: np.datetime64 = self.times[m - 1] + np.timedelta64(
            round(float(self.width[m - 1]) * 1e9), "ns"
        )
        return end

    def summary(self) -> Summary:
        """The segments with their labels, then each boundary with its kind and, for an
        application change, the transaction types named."""
        kinds = [b.kind for b in self.boundaries]
        head = (
            f"{self.n_windows} windows, {len(self.types)} transaction types, allowed error "
            f"{100 * self.detector.allowed_error:g}%: {len(self.pieces)} segment(s), "
            f"{len(self.episodes)} anomalous stretch(es), "
            f"{kinds.count('workload_change')} workload change(s), "
            f"{kinds.count('application_change')} application change(s); "
            f"{len(self.findings)} finding(s)."
        )
        segments = [self._piece_line(p) for p in self.pieces]
        boundaries = [self._boundary_line(b) for b in self.boundaries]
        lines = [head, *(f"Warning: {w}" for w in self.warnings)]
        if segments:
            lines += ["Segments:", *(f"  {line}" for line in segments)]
        if boundaries:
            lines += ["Boundaries:", *(f"  {line}" for line in boundaries)]
        parts = [f"<p>{html.escape(head)}</p>"]
        parts += [f"<p><strong>Warning:</strong> {html.escape(w)}</p>" for w in self.warnings]
        for caption, items in (("Segments", segments), ("Boundaries", boundaries)):
            if items:
                listed = "".join(f"<li>{html.escape(item)}</li>" for item in items)
                parts.append(f"<p>{caption}:</p><ul>{listed}</ul>")
        return Summary(text="\n".join(lines), html="".join(parts))

    def _clock(self, i: int) -> str:
        return str(np.datetime_as_string(self.edge(i), unit="s")).replace("T", " ")

    def _piece_line(self, piece: Piece) -> str:
        if piece.absorbed_into >= 0:
            verdict = "normal, joined a neighbour"
        elif piece.label == "anomaly":
            verdict = f"anomaly ({', '.join(piece.rules)})"
        else:
            verdict = piece.label
        return (
            f"{self._clock(piece.start)} to {self._clock(piece.stop)} UTC, "
            f"{piece.windows} window(s): {verdict}"
        )

    def _boundary_line(self, boundary: Boundary) -> str:
        line = f"{self._clock(boundary.index)} UTC: {boundary.kind.replace('_', ' ')}"
        if boundary.kind == "application_change":
            named = ", ".join(boundary.named) if boundary.named else "no single type"
            line += f" (changed: {named}{', tentatively' if boundary.tentative else ''})"
        elif boundary.unconfirmed:
            line += " (CPU models differ, no type's own latency rose for good)"
        return line


@pydantic_dataclass(frozen=True, config=PARAMS)
class SegmentDetector(DetectorMixin):
    """Anomalies, workload changes and application changes in the CPU model of a service.

    Parameters
    ----------
    allowed_error
        ε_allow: the CPU model's allowed average error, as a share of the mean CPU: the effect
        size an application change must exceed (and, with the paper's cost, what sets λ).
    idle_util
        The idle overhead expected with no transactions, as a fraction of the machine; a
        segment at either end of the data whose fitted ``C0`` is above it is anomalous (the
        paper's first rule).
    min_windows
        Fewest windows the detector needs to start; 0 (default) means ``2 × (types + 1)``.
    min_duration
        Seconds: a segment shorter than this is "short" (the paper's second rule, in time rather
        than windows, so that it means the same for 1 s and 5 min windows), and an application
        change with less data after it is reported as a warning.
    threshold
        Standard errors of excess CPU, against the neighbouring models, for the residual rule.
    min_anomaly
        Seconds: an excess of CPU shorter than this is a **burst** (a client reconnecting, a
        CPU sample that lands a window late), counted in a warning, not an anomaly.
    alpha
        Level of the F-tests (stepwise selection, reconciliation), of the bar a type's own
        latency step must clear, and of the signature's "stands out" (a type's change beyond
        the two-sided normal quantile at ``alpha``).
    min_change
        Smallest relative change that counts as changed: of a type's own latency against the
        other types' (what names an application change), and of its service time (signature).
    confidence
        Level of the confidence intervals (signature and CPU cost shifts).
    min_size
        Fewest windows per segment in the segmentation; 0 (default) means the model's
        coefficients + 1 (types + 2), so every segment has a residual to judge.
    confirm
        Call a model change an application change only when a type's own latency rose
        against the other types' and stayed; otherwise it is reported as a workload change
        (the CPU model's error under a new mix or load). False: the paper's rule, the
        regression alone decides.
    entity
        The finding's entity: the service the frame describes.
    cost
        The segmentation's cost: ``"gaussian"`` (default) or ``"paper"`` (see step 2 of the
        module docstring).
    """

    name: ClassVar[str] = "segments"
    contract: ClassVar[str] = "workload"

    allowed_error: float = Field(default=0.03, gt=0.0, lt=1.0)
    idle_util: float = Field(default=0.05, ge=0.0, lt=1.0)
    min_windows: int = Field(default=0, ge=0)
    min_duration: float = Field(default=30.0, ge=0.0)
    threshold: float = Field(default=4.0, gt=0.0)
    min_anomaly: float = Field(default=15.0, ge=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_change: float = Field(default=0.1, ge=0.0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    min_size: int = Field(default=0, ge=0)
    confirm: bool = True
    entity: str = Field(default="service", min_length=1)
    cost: Literal["gaussian", "paper"] = "gaussian"

    def analyse(self, frame: pd.DataFrame) -> SegmentAnalysis:
        """Segment, classify, reconcile and name the changed types; see the module docstring.

        ``workload_anomaly``, ``workload_change`` and ``application_change`` findings; an empty
        frame gives an analysis with no windows and no findings.
        """
        # one BLAS thread, as every detector's analyse (perfsleuth.blas: DetectorMixin)
        if len(frame) == 0:
            return _empty(self)
        data = _read(frame)
        m, k = data.counts.shape
        least = self.min_windows if self.min_windows else 2 * (k + 1)
        if m < least:
            raise NotEnoughDataError(
                f"{m} window(s): the segment detector needs at least {least} (min_windows)"
            )
        warnings = cpu_warnings(data, self.alpha)
        for warning in warnings:
            log.warning("%s: %s", self.entity, warning)
        design = np.column_stack([data.width, data.counts])
        seg = segment_regression(
            design,
            data.cpu,
            cost=self.cost,
            allowed_error=self.allowed_error,
            min_size=min(self._min_size(k), m),
        )
        pieces = self._classify(data, seg)
        spans = _extend([(p.start, p.stop) for p in pieces if _hosts(p)], pieces)
        spans = self._refine(data, spans, max(1, self._min_size(k) // 2))
        episodes, bursts = self._anomalies(data, spans)
        if bursts:
            warnings.append(_bursts_warning(data, bursts, self.min_anomaly))
            log.warning("%s: %s", self.entity, warnings[-1])
        # the search for changes of code reads every window not reported as an anomaly: a
        # stretch the segmentation set apart that no anomaly kept is normal in the report,
        # and in the search (c07 1 s all: 173 s of two mixes left out, the change missed)
        groups, models, boundaries = self._reconcile(data, _unreported(spans, pieces, episodes))
        signatures = tuple(self._signature(data, _rows(g)) for g in groups)
        fitted = np.full(m, np.nan)
        for g, model in zip(groups, models, strict=True):
            rows = _rows(g)
            fitted[rows] = model.predict(data.counts[rows], data.width[rows])
        between = _gaps(episodes, m)
        findings = [anomaly_finding(self, data, e, between, pieces) for e in episodes]
        findings += change_findings(self, data, boundaries, groups)
        return SegmentAnalysis(
            detector=self,
            findings=tuple(findings),
            times=_readonly(data.start),
            width=_readonly(data.width),
            cpu=_readonly(data.cpu),
            cores=_readonly(data.cores),
            types=data.types,
            segmentation=seg,
            pieces=tuple(pieces),
            episodes=tuple(episodes),
            groups=tuple(groups),
            models=tuple(models),
            signatures=signatures,
            boundaries=tuple(boundaries),
            fitted=_readonly(fitted),
            warnings=tuple(warnings),
        )

    def _min_size(self, k: int) -> int:
        return self.min_size if self.min_size else k + 2

    def _short(self, data: Windows, a: int, b: int) -> bool:
        """Too short to stand as a regime: under ``min_duration`` seconds, or fewer windows
        than a model of its own needs."""
        return data.seconds(a, b) < self.min_duration or b - a < self._min_size(len(data.types))

    # -- anomalies ----------------------------------------------------------------------------

    def _classify(self, data: Windows, seg: Segmentation) -> list[Piece]:
        spans = seg.segments()
        k = len(data.types)
        models: list[CpuModel | None] = []
        idle: list[float] = []
        for a, b in spans:
            rows = np.arange(a, b)
            model = data.model(rows, self.alpha) if b - a >= k + 2 else None
            models.append(model)
            cores = float(np.mean(data.cores[rows]))
            idle.append(model.idle / cores if model is not None else math.nan)
        is_short = [self._short(data, a, b) for a, b in spans]
        idle_high = [
            (not s) and math.isfinite(u) and u > self.idle_util and self._idle_above(data, a, b)
            for s, u, (a, b) in zip(is_short, idle, spans, strict=True)
        ]
        memo: dict[tuple[int, tuple[int, ...]], bool] = {}

        def tail(i: int, near: list[int]) -> list[int]:
            """The short pieces between piece ``i`` (its neighbour before it) and the end of
            the data: under ``min_duration`` seconds each (a segmentation in windows cuts
            them at 1 s, not at 5 s), data after a change in piece i all the same."""
            after = list(range(i + 1, len(spans))) if near[0] < i else []
            return after if all(is_short[j] for j in after) else []

        def released(i: int, near: list[int]) -> bool:
            """Whether a type's own latency steps up for good where piece ``i`` meets its one
            neighbour ``near``: extra CPU from there to the end of the data that a change of
            code explains (:meth:`_application_step`), judged against every reference piece
            on that side (the more windows, the surer the step)."""
            key = (i, tuple(near))
            if key not in memo:
                # the reference pieces on the neighbour's side, not piece i itself (it is added
                # once below; before, the first piece's windows were searched twice)
                side = [
                    j
                    for j in range(len(spans))
                    if j != i and reference[j] and (j < i) == (near[0] < i)
                ]
                # searched with the short pieces after it, so that the end of the data means
                # the same in time at every window size
                pieces_in = (
                    [spans[j] for j in side] + [spans[i]] + [spans[j] for j in tail(i, near)]
                )
                rows = _rows(sorted(pieces_in))
                least = self._least(data)
                # a change in the last minute of the data is judged as _located judges it
                at_end = bool(rows[-1] == len(data.cpu) - 1)
                memo[key] = (
                    len(rows) >= 2 * least
                    and self._application_step(data, rows, least, at_end=at_end) is not None
                )
            return memo[key]

        # Long segments first, against the long segments not found anomalous (repeat until
        # the set of references settles: an anomaly must not serve as another's reference).
        reference = [not sh for sh in is_short]
        long_anomaly = [False] * len(spans)
        unreleased = [False] * len(spans)  # at an end of the data, no change of code explains it
        explained = [False] * len(spans)  # a short piece after a change that explains its CPU
        verdicts: list[list[tuple[float, float, float]]] = [[] for _ in spans]
        for _ in range(len(spans)):
            explained = [False] * len(spans)
            for i, (a, b) in enumerate(spans):
                if is_short[i]:
                    continue
                near = [j for j in _neighbours(reference, i) if models[j] is not None]
                rows = np.arange(a, b)
                verdicts[i] = [self._excess(data, rows, models[j]) for j in near]  # type: ignore[arg-type]
                fires = _agree(verdicts[i], self.threshold, self.allowed_error)[0]
                # More CPU than the neighbours' models explain (more, not less: a process
                # outside the workload adds CPU) that came and went; at either end of the
                # data, where it did not go, only when no change of code explains it
                more = fires and verdicts[i][0][0] > 0
                if len(near) == 2:
                    long_anomaly[i] = more
                else:  # the idle rule judges the ends of the data too
                    unreleased[i] = bool(near) and not released(i, near)
                    for j in tail(i, near) if near and not unreleased[i] else []:
                        explained[j] = True
                    long_anomaly[i] = (more or idle_high[i]) and (not near or unreleased[i])
            settled = [not sh and not x for sh, x in zip(is_short, long_anomaly, strict=True)]
            if settled == reference:
                break
            reference = settled
        pieces: list[Piece] = []
        for i, (a, b) in enumerate(spans):
            rows = np.arange(a, b)
            if is_short[i]:
                near = [j for j in _neighbours(reference, i) if models[j] is not None]
                verdicts[i] = [self._excess(data, rows, models[j]) for j in near]  # type: ignore[arg-type]
            fires, excess, z = _agree(verdicts[i], self.threshold, self.allowed_error)
            anomalous = fires if is_short[i] else long_anomaly[i]
            if is_short[i] and fires and explained[i]:
                anomalous = False  # the extra CPU of a change of code just before it
            elif is_short[i] and fires:
                # next to an anomaly, a short piece is where its edge may lie: its tail (an
                # excess nearer the anomaly's than none) or normal windows the linear model
                # misses between mixes (nearer none)
                beside = [
                    _agree(verdicts[j], self.threshold, self.allowed_error)[1]
                    for j in (i - 1, i + 1)
                    if 0 <= j < len(spans) and long_anomaly[j]
                ]
                anomalous = not beside or any(
                    excess * e > 0 and 2 * abs(excess) >= abs(e) for e in beside
                )
            rules = [
                name
                for name, on in (
                    ("short", is_short[i]),
                    ("idle", idle_high[i]),
                    ("residual", fires),
                    ("signature", unreleased[i]),
                )
                if on
            ]
            pieces.append(
                Piece(
                    start=a,
                    stop=b,
                    label="anomaly" if anomalous else "normal",
                    model=models[i],
                    idle_util=idle[i],
                    rules=tuple(rules) if anomalous else (),
                    excess=excess,
                    z=z,
                )
            )
        return _absorb(data, pieces, reference, is_short, self)

    def _idle_above(self, data: Windows, a: int, b: int) -> bool:
        """The idle rule's test: no model with ``C0 ≤ idle_util`` fits (F-test at ``alpha``)."""
        rows = np.arange(a, b)
        cap = self.idle_util * float(np.mean(data.cores[rows]))
        test = idle_test(data.counts[rows], data.cpu[rows], data.width[rows], cap)
        return test.p_value < self.alpha

    def _service_changes(
        self, data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]
    ) -> tuple[SignatureChange, ...]:
        """Signature comparison of two sets of windows (see :func:`compare_service`)."""
        if len(before) == 0 or len(after) == 0:
            return ()
        return compare_service(
            data.latency,
            data.counts,
            before,
            after,
            names=data.types,
            min_change=self.min_change,
            confidence=self.confidence,
            block=_block(data),
        )

    def _signature(self, data: Windows, rows: NDArray[np.intp]) -> Signature:
        return service_index(
            data.latency[rows],
            data.counts[rows],
            names=data.types,
            confidence=self.confidence,
            block=_block(data),
        )

    def _excess(
        self, data: Windows, rows: NDArray[np.intp], model: CpuModel
    ) -> tuple[float, float, float]:
        """(mean excess CPU-seconds per window, its z, its share of the CPU) against a model."""
        predicted = model.predict(data.counts[rows], data.width[rows])
        ok = np.isfinite(predicted)
        if not ok.any():
            return math.nan, math.nan, math.nan
        residual = data.cpu[rows][ok] - predicted[ok]
        excess = float(residual.mean())
        noise = model.noise if math.isfinite(model.noise) else model.rmse
        se = max(noise, 1e-12 * max(model.scale, 1e-300)) / math.sqrt(int(ok.sum()))
        level = float(data.cpu[rows][ok].mean())
        share = excess / level if level > 0 else math.copysign(math.inf, excess)
        return excess, excess / se, share

    # -- reconciliation -----------------------------------------------------------------------

    def _reconcile(
        self, data: Windows, normal: list[tuple[int, int]]
    ) -> tuple[list[tuple[tuple[int, int], ...]], list[CpuModel], list[Boundary]]:
        """Group consecutive normal spans into periods of one application (step 4 of the
        module docstring) and name what changed between them."""
        drifting: set[str] = set()
        groups, late = (
            self._located(data, normal, drifting)
            if self.confirm
            else (self._merged(data, normal), set())
        )
        boundaries = []
        for i in range(len(groups) - 1):
            change = self._change(data, groups[i], groups[i + 1])
            change = replace(change, end_of_data=change.index in late)
            boundaries.append(
                self._name(data, change, _rows(groups[i]), _rows(groups[i + 1]), drifting)
            )
        for group in groups:
            # within a period of one application, the CPU model's other cuts: workloads
            for j in range(1, len(group)):
                left, right = group[:j], group[j:]
                excess, p_value, coef_l, coef_r = self._joins(data, left, right)
                boundaries.append(
                    Boundary(
                        index=right[0][0],
                        kind="workload_change",
                        before=(left[0][0], left[-1][1]),
                        after=(right[0][0], right[-1][1]),
                        excess=excess,
                        p_value=p_value,
                        coef_before=coef_l,
                        coef_after=coef_r,
                        unconfirmed=excess > self.allowed_error,
                    )
                )
        boundaries.sort(key=lambda b: b.index)
        frozen = [tuple(g) for g in groups]
        models = [data.model(_rows(g), self.alpha) for g in frozen]
        return frozen, models, boundaries

    def _merged(self, data: Windows, normal: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
        """The paper's reconciliation: consecutive groups merge, the most alike first, while
        one CPU model explains both within ``allowed_error`` or their difference is not
        significant (Chow test at ``alpha``); each change left is then placed where the two
        periods' models fit best (:meth:`_relocate`)."""
        groups: list[list[tuple[int, int]]] = [[span] for span in normal]
        while len(groups) > 1:
            stats = [self._joins(data, groups[i], groups[i + 1]) for i in range(len(groups) - 1)]
            alike = [st[0] <= self.allowed_error or st[1] >= self.alpha for st in stats]
            mergeable = [i for i in range(len(stats)) if alike[i]]
            if not mergeable:
                break
            i = min(mergeable, key=lambda j: stats[j][0])
            groups[i] = groups[i] + groups[i + 1]
            del groups[i + 1]
        self._relocate(data, groups)
        return groups

    def _located(
        self, data: Windows, normal: list[tuple[int, int]], drifting: set[str] | None = None
    ) -> tuple[list[list[tuple[int, int]]], set[int]]:
        """Application changes: where one transaction type's own latency steps for good, by
        binary segmentation of the normal windows.

        A type's own latency is its latency with the window's common stretch and tilt, fitted
        on the other types, taken out (:mod:`~perfsleuth.segments.kernels.ownstep`): load,
        mix, co-tenants and queueing move every type together, a change of code moves one.
        In the windows searched, the step of each type's own latency is found where it is
        largest (:func:`own_steps`); the most certain that is an application change
        (:meth:`_application_step`) cuts them, and both sides are searched again. Both sides
        of a cut last at least ``min_duration`` seconds. Returns the periods, each a list of
        spans, and the cuts found only by the end-of-data bar (:meth:`_application_step`);
        ``drifting`` (when given) gets the types whose step passed the bar but did not hold in
        every later workload regime.

        """
        spans = sorted(normal)
        rows = _rows(spans)
        least = self._least(data)
        cuts: list[int] = []
        named: dict[int, str] = {}  # offset into rows of each cut → its type
        late: set[int] = set()
        pending = [(0, len(rows))]
        while pending:
            lo, hi = pending.pop()
            part = rows[lo:hi]
            if len(part) < 2 * least:
                continue
            # a part that ends at a cut: its step must last for good, to the end of the data
            # (the types of the cuts after it no yardstick)
            known = tuple(sorted({name for c, name in named.items() if c >= hi}))
            found = self._application_step(
                data,
                part,
                least,
                at_end=hi == len(rows),
                beyond=rows[hi:],
                known=known,
                drifting=drifting,
            )
            if found is None:
                continue
            at, name, tentative = found
            cuts.append(int(part[at]))
            named[lo + at] = name
            if tentative:
                # found by the end-of-data bars only: the windows before it were searched
                # with it just now and no step passed the full bar; a cut this uncertain
                # opens no new search of them (without it, r08 5 s all's tentative change
                # let a mix change at the hog's end pass the full bar)
                late.add(int(part[at]))
                continue
            pending += [(lo, lo + at), (lo + at, hi)]
        marks = set(cuts)
        pieces = []
        for a, b in spans:
            edges = [a, *sorted(c for c in marks if a < c < b), b]
            pieces += list(itertools.pairwise(edges))
        groups: list[list[tuple[int, int]]] = [[]]
        for a, b in pieces:
            if groups[-1] and a in marks:
                groups.append([])
            groups[-1].append((a, b))
        return [g for g in groups if g], late

    def _least(self, data: Windows) -> int:
        """Fewest windows on either side of an application change: ``min_duration`` seconds,
        and at least a model's worth."""
        seconds = math.ceil(self.min_duration / float(np.median(data.width)))
        return max(self._min_size(len(data.types)), seconds)

    def _application_step(
        self,
        data: Windows,
        part: NDArray[np.intp],
        least: int,
        *,
        at_end: bool = False,
        beyond: NDArray[np.intp] | None = None,
        known: tuple[str, ...] = (),
        drifting: set[str] | None = None,
    ) -> tuple[int, str, bool] | None:
        """Where in the windows ``part`` one type's own latency steps in a way only a change
        of code explains (offset into ``part``) and that type, or None. The step must reach
        :func:`step_bar` (searched over splits and types, at ``alpha``), slow the type's own
        latency down by at least ``min_change``, last (the later half of the windows after
        it keeps half of it). Of the steps that do, the most certain (largest t): which types
        changed is the naming's question (:meth:`_own_named`), this one only places the cut.

        ``beyond``: the windows after ``part`` to the end of the data (``part`` ends at a cut
        found earlier). A change of code lasts for good, not only to the end of the windows
        searched: the step must also last over ``part`` and ``beyond`` together, the types
        ``known`` (those of the cuts in ``beyond``) no yardstick (:meth:`_for_good`)."""
        steps = own_steps(
            data.latency,
            data.counts,
            part,
            names=data.types,
            block=_block(data),
            least=least,
        )
        n = len(part)

        def passes(step: OwnStep, bar: float) -> bool:
            return step.score >= bar and step.lasting and step.ratio - 1.0 >= self.min_change

        def passes_at_end(step: OwnStep) -> bool:
            if n - step.index >= 2 * least:
                return False
            if passes(step, self._step_bar(step, len(steps), n, least, end=True)):
                return True
            # the end-of-data bar allows for an error estimated from few blocks (its t
            # quantile); the run's own history, where it holds enough mixes to draw from,
            # says instead how far its own mixes step there, never below the bar with the
            # error known (drawn only for a step that passes that one)
            known = self._step_bar(step, len(steps), n, least, end=True, known=True)
            return passes(step, known) and passes(step, self._history_bar(data, part, step, least))

        passing = [
            step for step in steps if passes(step, self._step_bar(step, len(steps), n, least))
        ]
        if beyond is not None and len(beyond):
            passing = [s for s in passing if self._for_good(data, part, beyond, s, known)]
        tentative = False
        if not passing and at_end:
            # the end of the data: a step with under twice ``min_duration`` after it has too
            # few blocks after it for the bar of a search over every split; the end-of-data
            # bars judge it, and it is reported as tentative (lower confidence)
            passing = [step for step in steps if passes_at_end(step)]
            tentative = True
        # the most certain step cuts first, not the largest in logs: a type with a few
        # transactions a window steps far and loosely, and the tilt a cheap type's change
        # gives the yardstick shows on the dearest type (c14: t4, 1% of a phase's mix,
        # +0.51 at t 7.6 cut 35 s before t0's real +0.46 at t 14.6) — of those that hold in
        # every later workload, not only on average; a type whose step does not moves with
        # the mix (``drifting``: no yardstick when naming)
        for top in sorted(passing, key=lambda s: -s.score):
            if self._in_each_regime(data, part, beyond, top, known, least):
                return top.index, top.name, tentative
            if drifting is not None:
                drifting.add(top.name)
        return None

    def _for_good(
        self,
        data: Windows,
        part: NDArray[np.intp],
        beyond: NDArray[np.intp],
        step: OwnStep,
        known: tuple[str, ...],
    ) -> bool:
        """Whether ``step`` (found in ``part``) still lasts when the windows ``beyond`` it to
        the end of the data are added: its type's own latency at the same split, the types
        ``known`` to change later no yardstick (:func:`step_at`), keeps at least half of the
        step in the later half of all the windows after it. Binary segmentation searches the
        windows before a cut as if they were all the data; a mix that slows one type until
        the change the cut found looks like a step that lasts there, and fades after it (r13
        1 s ``db``: ``t3``'s own latency +0.28 in the two phases before ``t2``'s change, −0.11
        after)."""
        rows = np.concatenate([part, beyond])
        found = step_at(
            data.latency,
            data.counts,
            rows,
            step.index,
            names=data.types,
            block=_block(data),
            exclude=[name for name in known if name != step.name],
            only=[step.name],
        )
        return any(s.lasting and s.shift > 0 for s in found)

    def _in_each_regime(
        self,
        data: Windows,
        part: NDArray[np.intp],
        beyond: NDArray[np.intp] | None,
        step: OwnStep,
        known: tuple[str, ...],
        least: int,
    ) -> bool:
        """Whether ``step`` (found in ``part``) holds in each later workload regime: in every
        stretch of one mix and rate (:func:`mix_regimes`) from the split to the end of the
        data (``part`` and ``beyond``) with at least ``least`` windows there, holding as much
        of the type as ``least`` typical windows (a stretch where the load generator lags
        shows nothing of it), the type's own latency keeps at least half of the step
        (:func:`regime_steps`; the types ``known`` to change later no yardstick). A change of
        code moves a type for good, whatever the mix; a type whose time depends on the others'
        (a writer waiting on the log and the disk while the mix writes more) steps at a mix
        change and comes back under another mix (h19: ``t1``'s latency against ``t2``'s .63 in
        the first two phases, .92 at the third, .59 in the seventh), which the later half of
        all the windows after it does not see."""
        rows = part if beyond is None else np.concatenate([part, beyond])
        regimes = mix_regimes(data.counts, data.width, least)[rows]
        shifts = regime_steps(
            data.latency,
            data.counts,
            rows,
            step.index,
            regimes,
            name=step.name,
            names=data.types,
            block=_block(data),
            exclude=[name for name in known if name != step.name],
            least=least,
        )
        return all(x >= 0.5 * step.shift for x in shifts)

    def _step_bar(
        self,
        step: OwnStep,
        types: int,
        n: int,
        least: int,
        *,
        end: bool = False,
        known: bool = False,
    ) -> float:
        """The t a searched step of ``types`` types over ``n`` windows (``least`` either side)
        must reach (:func:`step_bar`, one-sided). ``end``: the end-of-data bar — the splits
        that leave under ``2 × least`` windows after them only, a second look at windows the
        search over every split found nothing in, so at half the level (Bonferroni over the
        two looks; at the full level the tuned halves gained a false application change).
        ``known``: as if the step's error were known (the normal quantile, not the t quantile
        of its degrees of freedom)."""
        dof = math.inf if known else step.dof
        if not end:
            return step_bar(self.alpha, types, least / n, dof, one_sided=True)
        return step_bar(
            self.alpha / 2, types, least / n, dof, one_sided=True, last_share=2 * least / n
        )

    def _history_bar(
        self, data: Windows, part: NDArray[np.intp], step: OwnStep, least: int
    ) -> float:
        """The t a step at the end of the windows ``part`` must reach by the run's own history
        (:func:`history_bar`, at ``alpha / 2``): the largest step up any type makes at the
        seams of series drawn from the windows before it — this run's mixes and spells of
        contention at their own size, and the error as estimated from so few blocks."""
        return history_bar(
            data.latency,
            data.counts,
            part,
            step.index,
            names=data.types,
            block=_block(data),
            least=least,
            level=self.alpha / 2,
            min_change=self.min_change,
        )

    def _cpu_changed(
        self, data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]
    ) -> tuple[tuple[str, ...], float] | None:
        """The types whose CPU cost shifted between two periods, the most certain first, and
        the largest ``|t|`` — or None (:meth:`ShiftTest.changed`, in the direction the CPU
        moved; HAC lag one signature block)."""
        least = self._min_size(len(data.types))
        if len(before) < least or len(after) < least:
            return None
        if min(data.width[before].sum(), data.width[after].sum()) < self.min_duration:
            return None  # a side too short to stand as a regime pins no cost down
        test = _shift_test(data, before, after)
        direction = self._direction(data, before, after)
        named = test.changed(self.alpha, self.min_change, direction)
        if not named:
            return None
        # it lasts: between the earlier half of before and the later half of after, each type
        # named still shifts significantly and at least half as far (a mix that the linear
        # model misses shifts costs only while it runs)
        early, late = before[: len(before) // 2], after[len(after) // 2 :]
        if len(early) < least or len(late) < least:
            return None
        bar = float(norm.ppf(1 - self.alpha / (2 * len(test.shifts))))
        near = {s.name: s for s in test.shifts}
        kept = {s.name: s for s in _shift_test(data, early, late).shifts}
        for name in named:
            if name not in kept or kept[name].t * direction < bar:
                return None
            if kept[name].shift * direction < 0.5 * abs(near[name].shift):
                return None
        return named, max(abs(near[name].t) for name in named)

    def _change(
        self, data: Windows, left: list[tuple[int, int]], right: list[tuple[int, int]]
    ) -> Boundary:
        """The application change between two groups, before its types are named."""
        excess, p_value, coef_l, coef_r = self._joins(data, left, right)
        return Boundary(
            index=right[0][0],
            kind="application_change",
            before=(left[0][0], left[-1][1]),
            after=(right[0][0], right[-1][1]),
            excess=excess,
            p_value=p_value,
            changes=self._service_changes(data, _rows(left), _rows(right)),
            coef_before=coef_l,
            coef_after=coef_r,
        )

    def _direction(self, data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]) -> int:
        """+1 when the later windows use more CPU than the earlier ones' model predicts, else −1."""
        model = fit_cpu_model(
            data.counts[before], data.cpu[before], data.width[before], selection="all"
        )
        predicted = model.predict(data.counts[after], data.width[after])
        ok = np.isfinite(predicted)
        return 1 if float(np.sum(data.cpu[after][ok] - predicted[ok])) >= 0 else -1

    def _relocate(self, data: Windows, groups: list[list[tuple[int, int]]]) -> None:
        """Move each application change to where the two periods' CPU models fit best.

        The segmentation places a boundary by the models of the segments on either side, each
        free to fit its own stretch; where a type's cost changed at a change of mix, a segment
        spanning a few mixes can take part of the change into its costs, and the cut lands a
        mix or two off. Reconciled, each period's model rests on all its windows: the boundary
        moves, within the two spans that meet there (never leaving a period under ``min_size``
        windows), to the split that minimises the least-squares error of the period before
        plus the period after (the least-squares break date; ties keep the nearest). In place.
        """
        least = self._min_size(len(data.types))
        for i in range(len(groups) - 1):
            left, right = groups[i], groups[i + 1]
            at = right[0][0]
            if left[-1][1] != at:
                continue  # an anomaly lies between: its edges were placed by _refine
            lo, hi = left[-1][0], right[0][1]
            others_l, others_r = (
                _rows(left[:-1]) if len(left) > 1 else None,
                (_rows(right[1:]) if len(right) > 1 else None),
            )
            # a period keeps at least ``least`` windows; its other spans count towards them
            first = lo + (least if others_l is None else 1)
            last = hi - (least if others_r is None else 1)
            costs: dict[int, float] = {}
            for x in range(first, last + 1):
                total = 0.0
                for span, others in (((lo, x), others_l), ((x, hi), others_r)):
                    rows = np.arange(*span)
                    if others is not None:
                        rows = np.concatenate([others, rows])
                    total += _lstsq_sse(data, rows)
                costs[x] = total
            if not costs:
                continue
            best = min(costs, key=lambda x: (costs[x], abs(x - at)))
            if best != at:
                left[-1] = (left[-1][0], best)
                right[0] = (best, right[0][1])

    def _joins(
        self, data: Windows, group: list[tuple[int, int]], other: list[tuple[int, int]]
    ) -> Stats:
        """How much worse one model explains ``group`` and ``other`` together: the worst side's
        extra relative error and the Chow test's p-value, and the two sides' own per-type
        costs."""
        left, right = _rows(group), _rows(other)
        both = np.concatenate([left, right])
        own_l, own_r = data.model(left, self.alpha), data.model(right, self.alpha)
        joint = data.model(both, self.alpha)
        k_sep = own_l.n_params + own_r.n_params
        # Noise alone makes the joint fit worse than the two own fits: under one model, a
        # side's own fit (p_own coefficients) gains σ²·(p_own − p_joint·n_side/n) on it in
        # expectation (each fit's optimism is σ² per coefficient; the joint fit spends its
        # coefficients over both sides). That part is noise, not a difference of models: with
        # windows as noisy as a few seconds of a real server's, it alone can exceed
        # ``allowed_error`` on a short period.
        spare = len(both) - k_sep
        sigma2 = (own_l.sse + own_r.sse) / spare if spare > 0 else 0.0
        worst = 0.0
        for rows, own, part in ((left, own_l, slice(0, len(left))), (right, own_r, None)):
            res = joint.residuals[part] if part is not None else joint.residuals[len(left) :]
            optimism = sigma2 * max(own.n_params - joint.n_params * len(rows) / len(both), 0.0)
            gap = max(float(res @ res) - own.sse - optimism, 0.0) / len(rows)
            level = float(data.cpu[rows].mean())
            worst = max(worst, math.sqrt(gap) / level if level > 0 else math.inf)
        df1 = max(k_sep - joint.n_params, 1)
        df2 = len(both) - k_sep
        sep = own_l.sse + own_r.sse
        gain = joint.sse - sep
        if df2 <= 0 or gain <= 0:
            p_value = 1.0
        elif sep <= 0:
            p_value = 0.0
        else:
            p_value = float(f_dist.sf((gain / df1) / (sep / df2), df1, df2))
        coef_l = dict(zip(data.types, map(float, own_l.coef), strict=True))
        coef_r = dict(zip(data.types, map(float, own_r.coef), strict=True))
        return worst, p_value, coef_l, coef_r

    # -- naming -------------------------------------------------------------------------------

    def _name(
        self,
        data: Windows,
        boundary: Boundary,
        before: NDArray[np.intp],
        after: NDArray[np.intp],
        drifting: set[str] | frozenset[str] = frozenset(),
    ) -> Boundary:
        """The types an application change names, the most certain first, and their CPU cost
        shifts (step 5 of the module docstring). ``before`` and ``after`` are the two periods'
        windows: ``boundary.before`` spans an anomaly between a period's spans, whose CPU would
        turn the direction the CPU moved around."""
        own, slower = self._own_named(data, before, after, drifting)
        named = [step.name for step in own if step.shift > 0]
        tentative = False
        if not named:
            # no type's own latency stood out: the CPU may still name the types
            by_cpu = self._cpu_changed(data, before, after)
            named = list(by_cpu[0]) if by_cpu else []
        if not named and slower:
            named, tentative = [slower], True
        costs: tuple[CostChange, ...] = ()
        if named:
            rows = np.concatenate([before, after])
            late = np.arange(len(rows)) >= len(before)
            costs = cost_change(
                data.counts[rows],
                data.cpu[rows],
                data.width[rows],
                late,
                names=data.types,
                changed=named,
                confidence=self.confidence,
                block=_block(data),
            )
        return replace(
            boundary, named=tuple(named), tentative=tentative, costs=costs, own=tuple(own)
        )

    def _own_named(
        self,
        data: Windows,
        before: NDArray[np.intp],
        after: NDArray[np.intp],
        drifting: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[list[OwnStep], str | None]:
        """The steps of the types whose own latency stepped for good between two periods, in
        the order they explain the steps, and the type whose own latency rose most (None if
        none rose).

        A type's own latency is measured against the others, so one type's change shows in
        the others too (its rise tilts the yardstick: the type at the other end of the cost
        range seems to rise with it; a type made faster makes the rest seem slower). So the
        types that changed are found one at a time, each by the hypothesis that explains the
        steps best: of the types whose step counts either way (beyond the normal quantile at
        ``alpha`` shared over the types, at least ``min_change``, lasting), the one which,
        once no yardstick, leaves the others' steps smallest (sum of their squared t). Each
        type found is no yardstick for the next; those that got slower are named, those that
        got faster reported beside them. The types ``drifting`` (a step of theirs passed the
        bar but did not hold in every later workload regime: their own time moves with the
        mix) are no yardstick either."""
        rows = np.concatenate([before, after])
        bar = float(norm.ppf(1 - self.alpha / (2 * len(data.types))))

        def steps(exclude: list[str]) -> dict[str, OwnStep]:
            found = step_at(
                data.latency,
                data.counts,
                rows,
                len(before),
                names=data.types,
                block=_block(data),
                exclude=[*exclude, *sorted(set(drifting) - set(exclude))],
            )
            return {s.name: s for s in found if s.name not in exclude}

        def fit(s: OwnStep) -> bool:
            return abs(s.score) >= bar and s.lasting and abs(s.ratio - 1.0) >= self.min_change

        changed: list[str] = []
        found: list[OwnStep] = []
        slower: str | None = None
        while len(changed) < len(data.types) - 2:
            now = steps(changed)
            rising = [s for s in now.values() if s.shift > 0]
            if slower is None and rising:
                slower = max(rising, key=lambda s: s.shift).name
            fits = [s for s in now.values() if fit(s)]
            if not fits:
                break
            # a type that got slower is what an application change is about: the first type
            # found is one of them; then whichever explains the rest best
            slowed = [s.name for s in fits if s.shift > 0]
            names = slowed if not changed and slowed else [s.name for s in fits]

            def left(names: tuple[str, ...]) -> float:
                # the others' steps once the types named are no yardstick (mean squared t:
                # a pair leaves one type fewer)
                rest = steps([*changed, *names])
                return sum(s.score**2 for s in rest.values()) / max(len(rest), 1)

            hypotheses: dict[tuple[str, ...], list[OwnStep]] = {(n,): [now[n]] for n in names}
            best = min(hypotheses, key=left)
            if not changed and any(s.shift > 0 and fit(s) for s in steps(list(best)).values()):
                # the type that explains the steps best leaves another type slower: two types
                # changed at once? Each is in the other's yardstick, and the shadow a cheap
                # type's rise casts on the dearest (the tilt) can explain more than either
                # alone (c16: t0 and t2 doubled; t4 alone left t2 at t +15.6 and the others'
                # steps at a mean squared t of 114, t0 and t2 together at 4.8). A pair is a
                # hypothesis when each of its types, the other no yardstick, got slower and
                # stands out — alone, one may not (c17 5 s all: t4 +2.7, not lasting, beside
                # t3; with t3 no yardstick +11.8). Only then: a pair has more freedom than a
                # type (the two dearest types together undo the tilt a cheap type's change
                # gives them: r01, t0 changed, leaves the others' steps smaller with t3 and
                # t4 than with t0, whose steps none stands out once t0 is no yardstick)
                pairs: dict[tuple[str, ...], list[OwnStep]] = {}
                up = [s.name for s in now.values() if s.shift > 0]
                for pair in itertools.combinations(up, 2):
                    each = [steps([other]).get(name) for name, other in (pair, pair[::-1])]
                    mine = [s for s in each if s is not None and s.shift > 0 and fit(s)]
                    if len(mine) == 2:
                        pairs[pair] = sorted(mine, key=lambda s: -s.score)
                # and it must explain the steps better than that type and the one found after
                # it would (either way: a type made faster makes the others seem slower)
                second = [n for n, s in steps(list(best)).items() if fit(s)]
                then = min((left((*best, n)) for n in second), default=math.inf)
                if pairs and left(min(pairs, key=left)) < then:
                    hypotheses = pairs
                    best = min(pairs, key=left)
            for step in hypotheses[best]:
                changed.append(step.name)
                found.append(step)
        return found, slower

    # -- anomaly edges ------------------------------------------------------------------------

    def _refine(
        self, data: Windows, spans: list[tuple[int, int]], most: int
    ) -> list[tuple[int, int]]:
        """Move the edges between normal spans and anomalies to where the data says.

        The segmentation's boundaries can miss an anomaly's edge by a few windows: a segment
        has at least ``min_size`` windows, and an anomaly's first windows may be mild. So,
        at most ``most`` windows per edge, (1) edge windows of a span that its model, fitted
        without them, leaves far off (at least ``threshold`` residual standard deviations and
        ``allowed_error`` of their CPU) join the anomaly, then (2) anomalous windows next to the
        span that this cleaned span's model explains join the span. In that order, and with
        (1) judged against the span's core, so that anomalous windows inside a span neither mask
        each other nor inflate the noise that step (2) judges by.
        """
        m = len(data.cpu)
        spans = sorted(spans)
        out: list[tuple[int, int]] = []
        for i, span in enumerate(spans):
            a, b = span
            floor = out[-1][1] if out else 0
            ceiling = spans[i + 1][0] if i + 1 < len(spans) else m
            for side in ("left", "right"):
                touches = (a > floor) if side == "left" else (b < ceiling)
                # Judge the edge windows against the span's core, fitted without any of the
                # ``most`` windows that may be peeled: two anomalous windows at the edge would
                # otherwise mask each other (each inflates the noise the other is judged by).
                core = np.arange(a + most, b) if side == "left" else np.arange(a, b - most)
                fixed = data.model(core, self.alpha) if len(core) >= len(data.types) + 2 else None
                gap = np.arange(floor, a) if side == "left" else np.arange(b, ceiling)
                peeled = 0
                while touches and peeled < most and b - a > most:
                    edge = a if side == "left" else b - 1
                    rest = np.arange(a + 1, b) if side == "left" else np.arange(a, b - 1)
                    model = fixed if fixed is not None else data.model(rest, self.alpha)
                    if not self._outlier(data, edge, model) or not _nearer(data, edge, gap, model):
                        break
                    a, b = (a + 1, b) if side == "left" else (a, b - 1)
                    peeled += 1
            # then grow, judged by the model of the span freed of its anomalous edges
            model = data.model(np.arange(a, b), self.alpha)
            grown = 0
            while a > floor and grown < most and not self._outlier(data, a - 1, model):
                a, grown = a - 1, grown + 1
            grown = 0
            while b < ceiling and grown < most and not self._outlier(data, b, model):
                b, grown = b + 1, grown + 1
            out.append((a, b))
        return out

    def _anomalies(
        self, data: Windows, spans: list[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The anomalies and the bursts, ``[start, stop)`` window ranges in order: the
        stretches the normal ``spans`` leave, each placed, and kept, by its excess over one CPU
        model of all the normal windows (:mod:`~perfsleuth.segments.kernels.excess`); one
        that lasts under ``min_anomaly`` seconds is a burst.

        Each stretch is searched again, with ``min_duration`` seconds either side (not into
        another), for the stretch whose excess explains the windows best
        (:func:`excess_stretch`). It is an anomaly when its mean excess per second is
        ``threshold`` times the model's spread over every other stretch as long as it
        (:func:`stretch_spread`); when too long to compare with the rest, the segmentation's
        verdict stands. The spread is not a window's noise: a linear model misses one mix by
        more than another, and a stretch of CPU it misses by no more than that is not reported.
        """
        m = len(data.cpu)
        episodes = _gaps(spans, m)
        normal = _rows(spans) if spans else np.empty(0, dtype=np.intp)
        if len(normal) < 2 * (len(data.types) + 2):
            return episodes, []
        design = np.column_stack([data.width, data.counts])
        beta, *_ = np.linalg.lstsq(design[normal], data.cpu[normal], rcond=None)
        excess = data.cpu - design @ beta
        rate = excess / data.width
        noise = float(np.std(rate[normal]))  # the model's misses on normal windows, mixes' too
        if not noise > 0:
            return episodes, []
        width = float(np.median(data.width))

        def anomalous(s: int, e: int) -> bool:
            level = float(excess[s:e].sum() / data.width[s:e].sum())
            rest = np.r_[0:s, e:m]  # every other stretch as long as this one
            spread = stretch_spread(excess[rest], data.width[rest], e - s)
            if not math.isfinite(spread):
                return True  # too long to compare with the rest: the segmentation's verdict
            return level >= self.threshold * spread

        reach = max(1, math.ceil(self.min_duration / width))
        kept: list[tuple[int, int]] = []
        for i, (a, b) in enumerate(episodes):
            lo = max(a - reach, episodes[i - 1][1] if i else 0)
            hi = min(b + reach, episodes[i + 1][0] if i + 1 < len(episodes) else m)
            s, e = excess_stretch(rate, noise, lo, hi)
            if e > s and anomalous(s, e):
                kept.append((s, e))
        # a few seconds of CPU at a client's restart is no episode of interference; judged
        # after merging, so that a hog found in pieces still counts its whole length
        kept = _merged(kept)
        bursts = [(s, e) for s, e in kept if data.seconds(s, e) < self.min_anomaly]
        return [k for k in kept if k not in bursts], bursts

    def _outlier(self, data: Windows, i: int, model: CpuModel) -> bool:
        """Whether ``model`` leaves window i at least ``threshold`` residual standard deviations
        and ``allowed_error`` of its CPU unexplained (True also when it cannot tell)."""
        noise = model.noise
        predicted = float(model.predict(data.counts[[i]], data.width[[i]])[0])
        if not (math.isfinite(noise) and noise > 0 and math.isfinite(predicted)):
            return True
        residual = abs(float(data.cpu[i]) - predicted)
        return residual >= self.threshold * noise and residual >= self.allowed_error * float(
            data.cpu[i]
        )


# --------------------------------------------------------------------------------------------
# The CPU given
# --------------------------------------------------------------------------------------------


def cpu_warnings(data: Windows, alpha: float = 0.05) -> list[str]:
    """What is doubtful about the CPU series, in sentences (empty when nothing is).

    * **Saturated**: a fifth of the windows or more at 95% of the machine or above. A saturated
      CPU is a ceiling, not what the transactions cost; latencies then measure the queue.
    * **Mostly other work**: the part of the CPU no transaction explains (the fitted idle
      overhead, one model over all windows) is over half of it — the CPU of the machine or of
      other processes rather than the service's own.
    """
    out = []
    machine = data.width * data.cores
    util = data.cpu / machine
    busy = float(np.mean(util >= _SATURATED))
    if busy >= 0.2:
        out.append(
            f"the CPU given is saturated ({100 * _SATURATED:.0f}% of the machine or more) in "
            f"{100 * busy:.0f}% of the windows: a saturated CPU says nothing of what the "
            "transactions cost; give the service's own processes' CPU (--cpu-of NAME)"
        )
    model = fit_cpu_model(data.counts, data.cpu, data.width, selection="all", alpha=alpha)
    total = float(data.cpu.sum())
    other = model.idle * float(data.width.sum()) / total if total > 0 else math.nan
    if math.isfinite(other) and other > 0.5:
        out.append(
            f"{100 * other:.0f}% of the CPU given is not explained by the transactions (an "
            f"idle overhead of {model.idle:.2g} cores): it looks like the machine's CPU or "
            "other processes', not the service's; give the service's own processes' CPU "
            "(--cpu-of NAME), or, if it is theirs already, their work outside the "
            "transactions (background, idle) is most of it"
        )
    return out


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _bursts_warning(data: Windows, bursts: list[tuple[int, int]], min_anomaly: float) -> str:
    """The sentence that counts the bursts: when each started and how long it lasted."""
    where = ", ".join(
        f"{np.datetime_as_string(data.start[s], unit='s')} ({data.seconds(s, e):g} s)"
        for s, e in bursts
    )
    return (
        f"{len(bursts)} burst(s) of CPU the transactions do not explain, each under "
        f"{min_anomaly:g} s, not reported as anomalies: {where}"
    )


def _readonly(a: NDArray[Any]) -> NDArray[Any]:
    """A read-only view of ``a`` (the analysis is frozen; its arrays too)."""
    view = a.view()
    view.setflags(write=False)
    return view


def _empty(detector: SegmentDetector) -> SegmentAnalysis:
    """The analysis of a frame with no windows: nothing segmented, nothing found."""
    nothing = _readonly(np.empty(0, dtype=np.float64))
    return SegmentAnalysis(
        detector=detector,
        findings=(),
        times=_readonly(np.empty(0, dtype="datetime64[ns]")),
        width=nothing,
        cpu=nothing,
        cores=nothing,
        types=(),
        segmentation=None,
        pieces=(),
        episodes=(),
        groups=(),
        models=(),
        signatures=(),
        boundaries=(),
        fitted=nothing,
    )


def _block(data: Windows) -> int:
    """Windows per block of the signature's uncertainty: about ``_BLOCK_S`` seconds, at least
    two windows."""
    return max(2, round(_BLOCK_S / float(np.median(data.width))))


def _shift_test(data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]) -> ShiftTest:
    """Every type's CPU-cost shift from the windows ``before`` to ``after`` (HAC lag one
    signature block)."""
    rows = np.concatenate([before, after])
    return shift_test(
        data.counts[rows],
        data.cpu[rows],
        data.width[rows],
        np.arange(len(rows)) >= len(before),
        names=data.types,
        lag=_block(data),
    )


def _rows(spans: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> NDArray[np.intp]:
    # no spans (every window an anomaly, e.g. a CPU that does not move with the load): no rows
    return np.concatenate([np.empty(0, np.intp), *(np.arange(a, b) for a, b in spans)]).astype(
        np.intp
    )


def _lstsq_sse(data: Windows, rows: NDArray[np.intp]) -> float:
    """Least-squares error of the CPU model of every type over ``rows``."""
    design = np.column_stack([data.width[rows], data.counts[rows]])
    y = data.cpu[rows]
    beta, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ beta
    return float(residual @ residual)


def _nearer(data: Windows, i: int, gap: NDArray[np.intp], model: CpuModel) -> bool:
    """Whether window ``i``'s excess over ``model`` is the anomaly's way and likelier under
    the anomaly's ``gap`` (normal with its windows' mean and spread of excess) than under
    ``model`` (no excess, its noise): the edge between them lies where the one explains the
    data better."""
    rows = np.append(gap, i)
    excess = data.cpu[rows] - model.predict(data.counts[rows], data.width[rows])
    inside = excess[:-1][np.isfinite(excess[:-1])]
    if len(inside) < 2 or not (math.isfinite(model.noise) and model.noise > 0):
        return True
    level = float(np.mean(inside))
    if excess[-1] * level <= 0:
        return False  # off the other way: not the anomaly's excess
    spread = max(float(np.std(inside, ddof=1)), model.noise)
    anomalous = norm.logpdf(excess[-1], level, spread)
    return bool(anomalous >= norm.logpdf(excess[-1], 0.0, model.noise))


def _neighbours(reference: list[bool], i: int) -> list[int]:
    """The nearest reference piece before ``i`` and after it (those that exist)."""
    out = []
    for j in range(i - 1, -1, -1):
        if reference[j]:
            out.append(j)
            break
    for j in range(i + 1, len(reference)):
        if reference[j]:
            out.append(j)
            break
    return out


def _agree(
    verdicts: list[tuple[float, float, float]], threshold: float, share: float
) -> tuple[bool, float, float]:
    """Residual rule: every neighbour sees a large excess in the same direction.

    Returns (fires, mean excess, the z closest to 0 — the most forgiving neighbour's).
    """
    usable = [v for v in verdicts if math.isfinite(v[0])]
    if not usable:
        return False, math.nan, math.nan
    excess = float(np.mean([v[0] for v in usable]))
    mild = min(usable, key=lambda v: abs(v[1]))
    signs = {math.copysign(1.0, v[1]) for v in usable}
    fires = len(signs) == 1 and all(abs(v[1]) >= threshold and abs(v[2]) >= share for v in usable)
    return fires, excess, mild[1]


def _absorb(
    data: Windows,
    pieces: list[Piece],
    reference: list[bool],
    short: list[bool],
    det: SegmentDetector,
) -> list[Piece]:
    """Short pieces that are not anomalous join the neighbouring reference piece that explains
    them best (they are windows that fell between regimes, not periods of their own); not one
    across an anomaly (normal windows are not bridged into it): with none on their side they
    stand as a normal period of their own."""
    out = list(pieces)
    for i, piece in enumerate(pieces):
        if piece.label != "normal" or not short[i]:
            continue
        rows = np.arange(piece.start, piece.stop)
        best, best_z = -1, math.inf
        for j in _neighbours(reference, i):
            between = range(min(i, j) + 1, max(i, j))
            if any(pieces[t].label == "anomaly" for t in between):
                continue
            model = pieces[j].model
            if model is None:
                continue
            _, z, _ = det._excess(data, rows, model)
            if math.isfinite(z) and abs(z) < best_z:
                best, best_z = j, abs(z)
        if best < 0:
            continue  # no reference anywhere: keep it as a normal period of its own
        out[i] = replace(piece, absorbed_into=best)
    return out


def _extend(normal: list[tuple[int, int]], pieces: list[Piece]) -> list[tuple[int, int]]:
    """Normal spans grown by the short pieces absorbed into them (adjacent ones only: a piece
    absorbed across an anomaly is left out rather than bridged)."""
    spans = {s: list(s) for s in normal}
    pending = [p for p in pieces if p.absorbed_into >= 0]
    while pending:  # repeat: a piece may touch its host only once a piece between has joined
        left = []
        for p in pending:
            host = pieces[p.absorbed_into]
            span = spans.get((host.start, host.stop))
            if span is not None and p.stop == span[0]:
                span[0] = p.start
            elif span is not None and p.start == span[1]:
                span[1] = p.stop
            else:
                left.append(p)
        if len(left) == len(pending):
            break  # not adjacent to their host (an anomaly between): left out
        pending = left
    return sorted((a, b) for a, b in spans.values())


def _unreported(
    spans: list[tuple[int, int]], pieces: list[Piece], episodes: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The normal ``spans`` and every other window no anomaly of ``episodes`` holds: the
    windows of the segmentation's pieces that neither covers, in runs within each piece (so
    that the CPU model's cuts between them stay workload changes)."""
    if not pieces:
        return sorted(spans)
    covered = np.zeros(pieces[-1].stop, dtype=bool)
    for a, b in [*spans, *episodes]:
        covered[a:b] = True
    out = list(spans)
    for piece in pieces:
        free = np.flatnonzero(~covered[piece.start : piece.stop]) + piece.start
        for run in np.split(free, np.flatnonzero(np.diff(free) > 1) + 1) if len(free) else []:
            out.append((int(run[0]), int(run[-1]) + 1))
    return sorted(out)


def _hosts(piece: Piece) -> bool:
    """A normal piece that stands on its own (not absorbed into a neighbour)."""
    return piece.label == "normal" and piece.absorbed_into < 0


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, stop)`` ranges with those that overlap or touch merged, in order."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _gaps(spans: list[tuple[int, int]], m: int) -> list[tuple[int, int]]:
    """The stretches of windows no normal span covers: the anomalous episodes. Short pieces
    that could not join a host (an anomaly on both sides) fall in them: bridged."""
    out, at = [], 0
    for a, b in sorted(spans):
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < m:
        out.append((at, m))
    return out


def _read(frame: pd.DataFrame) -> Windows:
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "workload":
        frame = normalise(frame, "workload")
    if "cpu_util" not in frame.columns:
        raise DataError(
            "the segment detector needs CPU utilisation per window: the workload frame has no "
            "'cpu_util' column (fraction of the machine, 0..1)"
        )
    types = workload_types(frame)
    n_cols = [f"n[{t}]" for t in types]
    rt_cols = [f"rt_sum[{t}]" for t in types]
    absent = [c for c in rt_cols if c not in frame.columns]
    if absent:
        raise DataError(f"the signature needs summed response times: missing {', '.join(absent)}")
    frame = frame.sort_values("time", kind="stable")
    times = frame["time"]
    needed = ["window_s", "cpu_util", *n_cols, *rt_cols]
    if "cpu_cores" in frame.columns:
        needed.append("cpu_cores")
    for column in dict.fromkeys(needed):
        values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(values)
        if bad.any():
            at = times.iat[int(np.flatnonzero(bad)[0])]
            raise DataError(
                f"workload frame: column {column!r}: missing or infinite value in the window at "
                f"{at.isoformat()}; normalise(frame, 'workload', missing='drop') skips such windows"
            )
    counts = frame[n_cols].to_numpy(dtype=np.float64)
    rt = frame[rt_cols].to_numpy(dtype=np.float64)
    width = frame["window_s"].to_numpy(dtype=np.float64)
    if (width <= 0).any():
        raise DataError("workload frame: column 'window_s' must be positive")
    cores = (
        frame["cpu_cores"].to_numpy(dtype=np.float64)
        if "cpu_cores" in frame.columns
        else np.ones(len(frame))
    )
    if (cores <= 0).any():
        raise DataError("workload frame: column 'cpu_cores' must be positive")
    util = frame["cpu_util"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        latency = np.where(counts > 0, rt / np.where(counts > 0, counts, 1.0), np.nan)
    start = times.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    return Windows(
        start=start,
        width=width,
        types=tuple(types),
        counts=counts,
        latency=latency,
        cpu=util * width * cores,
        cores=cores,
    )
