"""Anomaly, application change or workload change? (Cherkasova et al. 2008; DESIGN §2.3).

A workload frame's CPU time per window (``cpu_util`` × ``window_s`` × ``cpu_cores``) is explained
by the transactions served: ``cpu_t = C0·L_t + Σ_i C_i·N_it``
(:mod:`perfsleuth.segments.kernels.cpumodel`). The detector

1. **segments** the time axis where that model changes
   (:func:`perfsleuth.segments.kernels.segmentation.segment_regression`, the paper's cost with
   λ derived from ``allowed_error``);
2. fits each segment's model (NNLS, stepwise F-test selection) and finds the **anomalous**
   segments — CPU the workload does not explain:

   * *idle rule* (the paper's): the segment's idle overhead ``C0`` exceeds ``idle_util`` of the
     machine — and significantly so: holding ``C0`` to ``idle_util`` must make the fit worse
     (F-test at ``alpha``, :func:`~perfsleuth.segments.kernels.cpumodel.idle_test`), since
     when the counts move together ``C0`` trades off against the transactions' costs;
   * *short rule* (the paper's): the segment is shorter than ``min_windows``, i.e. no model held
     for long;
   * *residual rule* (ours): the segment's CPU against the **neighbouring normal models** (the
     nearest normal segment before and after it). Its mean excess must be at least
     ``threshold`` standard errors (the neighbour's residual noise / √windows) and
     ``allowed_error`` of its CPU, in the same direction against every neighbour. A short
     segment's own ``C0`` is meaningless (a handful of windows fit anything), but the
     neighbour's model is not, so this rule stays reliable where the paper's rules guess.

   * *signature rule* (ours; the paper's two techniques together): a long segment whose CPU
     the residual rule finds in excess — higher than the normal segments on both sides
     predict — while no transaction type's service time grew enough to account for it (the
     added service time × transactions of the types that got slower must make up half the
     excess CPU; contention alone slows some types more than others) against the neighbours
     (:mod:`perfsleuth.segments.kernels.signature`, below): the CPU goes to something other
     than the transactions. The signature "is not capable of detecting
     abnormal resource consumption caused by processes unrelated to the application" (the
     paper), which is exactly what makes it tell such a process from a changed application.
     Unlike the segment's own ``C0``, neither rule needs costs that the segment's few windows
     cannot separate from an offset.

   A short segment is anomalous when the residual rule confirms it (it is otherwise a window or
   two that fell between two regimes, and joins the neighbour that explains it best); a
   long one when the signature rule fires, or, lacking a normal segment on both sides (at
   either end of the data), when the idle rule does.
   Consecutive anomalous segments form one ``workload_anomaly`` finding.
3. **reconciles** consecutive normal segments (anomalies filtered out): walking in time, the
   next segment is fitted jointly with the group of segments reconciled so far. If one model
   explains both — its extra relative error on either side, ``sqrt((SSE_joint − SSE_own −
   optimism) / n) / mean CPU``, is at most ``allowed_error`` (the optimism, σ² per coefficient
   the side's own fit has more than its share of the joint one, is what noise alone gains a
   separate fit) — the boundary is a ``workload_change`` (INFO): the
   same application under another mix or load. Otherwise it is an ``application_change``, and
   a new group begins, when the difference is significant (Chow F-test at ``alpha``: more than
   the noise of the two fits) and the signature names a type whose service time changed
   (``confirm``, ours: both techniques must agree). A linear CPU model is not exact, and under a
   very different mix or load its error can exceed ``allowed_error`` with no transaction having
   changed at all; such a boundary is reported as a workload change that says so. With
   ``confirm=False`` the paper's rule decides alone: a model that does not reconcile, with a
   significant Chow F-test at ``alpha``, is an application change. An application change
   between adjacent periods is then moved (``min_windows // 2`` windows at most) to where
   the two periods' own models fit best, ``sqrt(SSE_before) + sqrt(SSE_after)``: the
   segmentation's ``min_size`` can push a boundary off when noise cuts the later period
   once more (that cut is then reconciled away, the boundary stays where it was pushed).
4. names the changed types, with two witnesses. The **regression**: the type whose CPU cost,
   let to differ after the boundary in one joint fit, best explains the change
   (:func:`~perfsleuth.segments.kernels.cpumodel.cost_shifts`; named when its partial F-test is
   significant at ``alpha`` over the types tried) — CPU per transaction is what a code change
   moves, and contention from outside the application leaves it alone. The
   **signature** compares across every application change
   (:mod:`perfsleuth.segments.kernels.signature`): the per-type service time
   ``S_i = median R_i·(1 − U)`` before and after, with confidence intervals, names the type(s)
   whose service time changed by at least ``min_change`` and by how much — beyond the slow-down
   the others share, which is load or contention that ``1 − U`` did not remove, not code (see
   :func:`~perfsleuth.segments.kernels.signature.compare_signatures`). ``signature_util`` names
   the utilisation column used for U (default ``cpu_util``). On a machine where other
   processes spin, the machine-wide utilisation sits near 100% and ``1 − U`` near 0: use the
   server's.

:meth:`SegmentDetector.analyse` returns all of it as a :class:`SegmentAnalysis` (segments,
periods, their models and signatures, boundaries and the findings); :mod:`.explain` words the
findings, and :mod:`.report` draws the analysis without fitting anything again. Findings record
:data:`CHECK` (``"workload_segments"``) as their ``detector``.

Units: ``cpu_util`` is a fraction of the whole machine; with ``cpu_cores`` the model is in
CPU-seconds (``C0`` in cores), without it in machine-seconds (as if one core).
"""

from __future__ import annotations

import html
import logging
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass
from scipy.stats import f as f_dist

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.findings import Finding
from perfsleuth.frames import coverage_of, normalise, workload_types
from perfsleuth.segments.explain import CHECK, anomaly_finding, change_findings, named_types
from perfsleuth.segments.kernels.cpumodel import (
    CostShift,
    CpuModel,
    cost_shifts,
    fit_cpu_model,
    idle_test,
)
from perfsleuth.segments.kernels.segmentation import Segmentation, segment_regression
from perfsleuth.segments.kernels.signature import (
    Signature,
    SignatureChange,
    application_signature,
    compare_signatures,
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

_UTIL_MAX = 0.999  # R·(1 − U) is meaningless at saturation; cap U just below 1


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
        Each group's application signature.
    boundaries
        Where one group meets the next, with the verdict (:class:`Boundary`), in time order.
    fitted
        Per window, the CPU-seconds its group's model predicts (NaN in anomalous windows).
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
        lines = [head]
        if segments:
            lines += ["Segments:", *(f"  {line}" for line in segments)]
        if boundaries:
            lines += ["Boundaries:", *(f"  {line}" for line in boundaries)]
        parts = [f"<p>{html.escape(head)}</p>"]
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
            line += f" (changed: {named})"
        elif boundary.unconfirmed:
            line += " (CPU models differ, no service time changed)"
        return line


@pydantic_dataclass(frozen=True, config=PARAMS)
class SegmentDetector(DetectorMixin):
    """Anomalies, workload changes and application changes in the CPU model of a service.

    Parameters
    ----------
    allowed_error
        ε_allow: the CPU model's allowed average error, as a share of the mean CPU. It sets the
        segmentation's λ and is the effect size an application change must exceed.
    idle_util
        The idle overhead expected with no transactions, as a fraction of the machine; a
        segment whose fitted ``C0`` is above it is anomalous (the paper's first rule).
    min_windows
        Segments shorter than this are "short" (the paper's second rule); 0 (default) means
        ``2 × (types + 1)``, twice what a model needs.
    threshold
        Standard errors of excess CPU, against the neighbouring models, for the residual rule.
    alpha
        Level of the F-tests (stepwise selection and reconciliation).
    min_change
        Smallest relative change of a type's service time that counts as changed.
    confidence
        Level of the signatures' confidence intervals.
    min_size
        Fewest windows per segment in the segmentation; 0 (default) means the model's
        coefficients + 1 (types + 2), so every segment has a residual to judge. The paper
        allowed single windows; with noise well above ``allowed_error`` that lets the
        segmentation chop the series into error-free scraps.
    confirm
        Call a model change an application change only when the signature names a type whose
        service time changed; otherwise it is reported as a workload change (the CPU model's
        error under a new mix or load). False: the paper's rule, the regression alone decides.
    signature_util
        Frame column with the utilisation (fraction 0..1) used in ``S = R·(1 − U)``.
    entity
        The finding's entity: the service the frame describes.
    """

    name: ClassVar[str] = "segments"
    contract: ClassVar[str] = "workload"

    allowed_error: float = Field(default=0.03, gt=0.0, lt=1.0)
    idle_util: float = Field(default=0.05, ge=0.0, lt=1.0)
    min_windows: int = Field(default=0, ge=0)
    threshold: float = Field(default=4.0, gt=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_change: float = Field(default=0.1, ge=0.0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    min_size: int = Field(default=0, ge=0)
    confirm: bool = True
    signature_util: str = Field(default="cpu_util", min_length=1)
    entity: str = Field(default="service", min_length=1)

    def analyse(self, frame: pd.DataFrame) -> SegmentAnalysis:
        """Segment, classify, reconcile and compare signatures; see the module docstring.

        ``workload_anomaly``, ``workload_change`` and ``application_change`` findings; an empty
        frame gives an analysis with no windows and no findings.
        """
        if len(frame) == 0:
            return _empty(self)
        data = _read(frame, self.signature_util)
        m, k = data.counts.shape
        short = self.min_windows if self.min_windows else 2 * (k + 1)
        if m < short:
            raise NotEnoughDataError(
                f"{m} window(s): the segment detector needs at least {short} (min_windows)"
            )
        design = np.column_stack([data.width, data.counts])
        smallest = self.min_size if self.min_size else k + 2
        seg = segment_regression(
            design, data.cpu, allowed_error=self.allowed_error, min_size=min(smallest, m)
        )
        pieces = self._classify(data, seg, short)
        spans = _extend([(p.start, p.stop) for p in pieces if _hosts(p)], pieces)
        spans = self._refine(data, spans, max(1, short // 2))
        groups, models, boundaries = self._reconcile(data, spans)
        signatures = tuple(
            application_signature(
                data.latency[_rows(g)],
                data.sig_util[_rows(g)],
                names=data.types,
                confidence=self.confidence,
            )
            for g in groups
        )
        fitted = np.full(m, np.nan)
        for g, model in zip(groups, models, strict=True):
            rows = _rows(g)
            fitted[rows] = model.predict(data.counts[rows], data.width[rows])
        episodes = _gaps(spans, m)
        stop_of = {g[0][0]: g[-1][1] for g in groups}
        boundaries = [
            replace(b, named=named_types(self, data, b, stop_of[b.index]))
            if b.kind == "application_change"
            else b
            for b in boundaries
        ]
        findings = [anomaly_finding(self, data, e, spans, pieces) for e in episodes]
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
        )

    # -- anomalies ----------------------------------------------------------------------------

    def _classify(self, data: Windows, seg: Segmentation, short: int) -> list[Piece]:
        spans = seg.segments()
        models: list[CpuModel | None] = []
        idle: list[float] = []
        for a, b in spans:
            rows = np.arange(a, b)
            model = data.model(rows, self.alpha) if b - a >= 2 else None
            models.append(model)
            cores = float(np.mean(data.cores[rows]))
            idle.append(model.idle / cores if model is not None else math.nan)
        is_short = [b - a < short for a, b in spans]
        idle_high = [
            (not s) and math.isfinite(u) and u > self.idle_util and self._idle_above(data, a, b)
            for s, u, (a, b) in zip(is_short, idle, spans, strict=True)
        ]
        # Long segments first, against the long segments not found anomalous (repeat until
        # the set of references settles: an anomaly must not serve as another's reference).
        reference = [not sh for sh in is_short]
        long_anomaly = [False] * len(spans)
        steady = [False] * len(spans)
        verdicts: list[list[tuple[float, float, float]]] = [[] for _ in spans]
        for _ in range(len(spans)):
            for i, (a, b) in enumerate(spans):
                if is_short[i]:
                    continue
                near = [j for j in _neighbours(reference, i) if models[j] is not None]
                rows = np.arange(a, b)
                verdicts[i] = [self._excess(data, rows, models[j]) for j in near]  # type: ignore[arg-type]
                fires = _agree(verdicts[i], self.threshold, self.allowed_error)[0]
                # CPU the neighbours' models cannot explain, while no transaction type got
                # slower: something outside the transactions is using the CPU
                # (more CPU, not less: a process outside the workload adds CPU; and than on
                # both sides: one neighbour's model alone differs from this one's by the
                # linear model's error under another workload as readily as by an anomaly)
                steady[i] = (
                    fires
                    and len(near) == 2
                    and verdicts[i][0][0] > 0
                    and not self._explained_by_service(
                        data, _rows([spans[j] for j in near]), rows, verdicts[i][0][0]
                    )
                )
                long_anomaly[i] = steady[i] or (idle_high[i] and len(near) < 2)
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
            rules = [
                name
                for name, on in (
                    ("short", is_short[i]),
                    ("idle", idle_high[i]),
                    ("residual", fires),
                    ("signature", steady[i]),
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
        return _absorb(data, pieces, reference, short, self)

    def _idle_above(self, data: Windows, a: int, b: int) -> bool:
        """The idle rule's test: no model with ``C0 ≤ idle_util`` fits (F-test at ``alpha``)."""
        rows = np.arange(a, b)
        cap = self.idle_util * float(np.mean(data.cores[rows]))
        test = idle_test(data.counts[rows], data.cpu[rows], data.width[rows], cap)
        return test.p_value < self.alpha

    def _explained_by_service(
        self, data: Windows, around: NDArray[np.intp], rows: NDArray[np.intp], excess: float
    ) -> bool:
        """Whether the types whose service time grew account for at least half of ``excess``
        (CPU-seconds per window): their added service time × their transactions per window.
        Contention from a background process slows some types more than others; only a
        change in what the transactions do adds CPU in proportion to them."""
        changes = self._service_changes(data, around, rows)
        counts = data.counts[rows].mean(axis=0)
        added = sum(
            max(c.after - c.before * c.common, 0.0) * counts[data.types.index(c.name)]
            for c in changes
            if c.changed and c.ratio > c.common
        )
        return bool(added >= 0.5 * excess)

    def _service_changes(
        self, data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]
    ) -> tuple[SignatureChange, ...]:
        """Signature comparison of two sets of windows (see :func:`compare_signatures`)."""
        return compare_signatures(
            self._signature(data, before), self._signature(data, after), min_change=self.min_change
        )

    def _signature(self, data: Windows, rows: NDArray[np.intp]) -> Signature:
        return application_signature(
            data.latency[rows], data.sig_util[rows], names=data.types, confidence=self.confidence
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
        """Group consecutive normal spans into periods of one application (see step 3 of the
        module docstring), merging the most alike neighbours first, so a period split by noise
        is whole again before its signature is compared with the next one's."""
        groups: list[list[tuple[int, int]]] = [[span] for span in normal]
        boundaries: list[Boundary] = []

        def merge(
            i: int,
            kind_stats: tuple[float, float, dict[str, float], dict[str, float]],
            changes: tuple[SignatureChange, ...],
            unconfirmed: bool,
        ) -> None:
            excess, p_value, coef_l, coef_r = kind_stats
            left, right = groups[i], groups[i + 1]
            boundaries.append(
                Boundary(
                    index=right[0][0],
                    kind="workload_change",
                    before=(left[0][0], left[-1][1]),
                    after=(right[0][0], right[-1][1]),
                    excess=excess,
                    p_value=p_value,
                    changes=changes,
                    coef_before=coef_l,
                    coef_after=coef_r,
                    unconfirmed=unconfirmed,
                )
            )
            groups[i] = left + right
            del groups[i + 1]

        # 1. one model explains both within the allowed error: the same application
        while len(groups) > 1:
            stats = [self._joins(data, groups[i], groups[i + 1]) for i in range(len(groups) - 1)]
            i = min(range(len(stats)), key=lambda j: stats[j][0])
            if stats[i][0] > self.allowed_error:
                break
            merge(i, stats[i], (), False)
        # 2. the models differ: an application change if the signature names a changed type
        #    (``confirm``) or, the paper's rule, if the difference is significant
        while len(groups) > 1:
            stats = [self._joins(data, groups[i], groups[i + 1]) for i in range(len(groups) - 1)]
            changes = [
                self._service_changes(data, _rows(groups[i]), _rows(groups[i + 1]))
                for i in range(len(groups) - 1)
            ]
            # the models must differ significantly (Chow) for any verdict of change; with
            # ``confirm`` the signature must also name a changed type
            alike = [st[1] >= self.alpha for st in stats]
            if self.confirm:
                alike = [
                    same or not any(c.changed for c in ch)
                    for same, ch in zip(alike, changes, strict=True)
                ]
            mergeable = [i for i in range(len(stats)) if alike[i]]
            if not mergeable:
                break
            i = min(mergeable, key=lambda j: stats[j][0])
            merge(i, stats[i], changes[i], self.confirm)
        self._relocate(data, groups)
        for i in range(len(groups) - 1):
            excess, p_value, coef_l, coef_r = self._joins(data, groups[i], groups[i + 1])
            left, right = groups[i], groups[i + 1]
            boundaries.append(
                Boundary(
                    index=right[0][0],
                    kind="application_change",
                    before=(left[0][0], left[-1][1]),
                    after=(right[0][0], right[-1][1]),
                    excess=excess,
                    p_value=p_value,
                    changes=self._service_changes(data, _rows(left), _rows(right)),
                    coef_before=coef_l,
                    coef_after=coef_r,
                    shifts=self._cost_shifts(data, _rows(left), _rows(right)),
                )
            )
        boundaries.sort(key=lambda b: b.index)
        frozen = [tuple(g) for g in groups]
        models = [data.model(_rows(g), self.alpha) for g in frozen]
        return frozen, models, boundaries

    def _relocate(self, data: Windows, groups: list[list[tuple[int, int]]]) -> None:
        """Move each application change to where the two periods' CPU models fit best.

        The segmentation's segments have at least ``min_size`` windows, so a spurious cut
        inside the later period (noise, a burst of contention) can push the real boundary a
        few windows off, into the earlier period. Within ``min_windows // 2`` windows of the
        boundary (never emptying a span), it moves to the split that minimises the paper's
        error term ``sqrt(SSE)`` of the period before plus the period after (each reconciled
        group of spans, fitted with its own NNLS model of every type: the segmentation's own
        segment cost; the stepwise selection's choice of types jumps from one split to the
        next, and its error with it). In place.
        """
        reach = max(1, (self.min_windows or 2 * (len(data.types) + 1)) // 2)
        for i in range(len(groups) - 1):
            left, right = groups[i], groups[i + 1]
            at = right[0][0]
            if left[-1][1] != at:
                continue  # an anomaly lies between: its edges were placed by _refine
            lo, hi = left[-1][0], right[0][1]
            costs: dict[int, float] = {}
            for x in range(max(lo + 1, at - reach), min(hi - 1, at + reach) + 1):
                costs[x] = sum(
                    math.sqrt(
                        fit_cpu_model(
                            data.counts[rows], data.cpu[rows], data.width[rows], selection="all"
                        ).sse
                    )
                    for rows in (_rows([*left[:-1], (lo, x)]), _rows([(x, hi), *right[1:]]))
                )
            if not costs:
                continue
            best = min(costs, key=lambda x: (costs[x], abs(x - at)))
            if best != at:
                left[-1] = (left[-1][0], best)
                right[0] = (best, right[0][1])

    def _cost_shifts(
        self, data: Windows, before: NDArray[np.intp], after: NDArray[np.intp]
    ) -> tuple[CostShift, ...]:
        rows = np.concatenate([before, after])
        late = np.arange(len(rows)) >= len(before)
        return cost_shifts(
            data.counts[rows], data.cpu[rows], data.width[rows], late, names=data.types
        )

    def _joins(
        self, data: Windows, group: list[tuple[int, int]], other: list[tuple[int, int]]
    ) -> tuple[float, float, dict[str, float], dict[str, float]]:
        """How much worse one model explains ``group`` and ``span`` together: the worst side's
        extra relative error and the Chow test's p-value (see the module docstring), and the
        two sides' own per-type costs."""
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

    # -- findings -----------------------------------------------------------------------------

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
                peeled = 0
                while touches and peeled < most and b - a > most:
                    edge = a if side == "left" else b - 1
                    rest = np.arange(a + 1, b) if side == "left" else np.arange(a, b - 1)
                    model = fixed if fixed is not None else data.model(rest, self.alpha)
                    if not self._outlier(data, edge, model):
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
# Helpers
# --------------------------------------------------------------------------------------------


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


def _rows(spans: tuple[tuple[int, int], ...] | list[tuple[int, int]]) -> NDArray[np.intp]:
    return np.concatenate([np.arange(a, b) for a, b in spans]).astype(np.intp)


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
    data: Windows, pieces: list[Piece], reference: list[bool], short: int, det: SegmentDetector
) -> list[Piece]:
    """Short pieces that are not anomalous join the neighbouring reference piece that explains
    them best (they are windows that fell between regimes, not periods of their own)."""
    out = list(pieces)
    for i, piece in enumerate(pieces):
        if piece.label != "normal" or piece.windows >= short:
            continue
        rows = np.arange(piece.start, piece.stop)
        best, best_z = -1, math.inf
        for j in _neighbours(reference, i):
            model = pieces[j].model
            if model is None:
                continue
            _, z, _ = det._excess(data, rows, model)
            if math.isfinite(z) and abs(z) < best_z:
                best, best_z = j, abs(z)
        if best < 0:
            continue  # no reference anywhere: keep it as a normal period of its own
        out[i] = Piece(
            piece.start, piece.stop, piece.label, piece.model, piece.idle_util, piece.rules,
            piece.excess, piece.z, absorbed_into=best,
        )  # fmt: skip
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


def _hosts(piece: Piece) -> bool:
    """A normal piece that stands on its own (not absorbed into a neighbour)."""
    return piece.label == "normal" and piece.absorbed_into < 0


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


def _read(frame: pd.DataFrame, sig_column: str) -> Windows:
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "workload":
        frame = normalise(frame, "workload")
    if "cpu_util" not in frame.columns:
        raise DataError(
            "the segment detector needs CPU utilisation per window: the workload frame has no "
            "'cpu_util' column (fraction of the machine, 0..1)"
        )
    if sig_column not in frame.columns:
        raise DataError(f"workload frame: no column {sig_column!r} for the signature's U")
    types = workload_types(frame)
    n_cols = [f"n[{t}]" for t in types]
    rt_cols = [f"rt_sum[{t}]" for t in types]
    absent = [c for c in rt_cols if c not in frame.columns]
    if absent:
        raise DataError(f"the signature needs summed response times: missing {', '.join(absent)}")
    frame = frame.sort_values("time", kind="stable")
    times = frame["time"]
    needed = ["window_s", "cpu_util", *n_cols, *rt_cols, sig_column]
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
    sig_util = frame[sig_column].to_numpy(dtype=np.float64)
    if ((sig_util < 0) | (sig_util > 1)).any():
        raise DataError(f"workload frame: column {sig_column!r} must be a fraction in 0..1")
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
        sig_util=np.minimum(sig_util, _UTIL_MAX),
    )
