"""Performance anomalies the transaction mix cannot explain (Kelly 2005; DESIGN §2.2).

A workload frame's windows are fitted with the transaction-mix model
``y_i = Σ_j a_j N_ij`` (:func:`perfsleuth.workload.kernels.fit_mix_model`, LAR by default). A
window is judged by ``ratio = observed / fitted`` summed response time and by its robust z,

    z_i = (log ratio_i − median log ratio) / sd_i,

with the median taken over the windows the model was fitted on and ``sd_i`` a robust noise
scale for that window (see "Noise scale"). The log makes "3× too slow" and "3× too fast" equally
far from 1 and makes the scale relative, as response-time noise is.

* **slow** (``workload_anomaly``): ``z ≥ threshold`` **and** ``ratio ≥ min_ratio``;
* **too fast** (aborted or failing transactions): ``z ≤ −threshold`` **and**
  ``ratio ≤ too_fast_ratio``.

Both conditions, because each alone fails somewhere: on a model that fits very well (MAD of 2%)
z alone flags a 10% excess, which nobody should be paged for; on a noisy one (MAD of 30%) the
ratio alone flags ordinary noise. Defaults: ``threshold = 5`` robust standard deviations and
``min_ratio = 1.5`` (Kelly: on real systems the model is "almost never off by more than a factor
of two"). On the simulator (:mod:`perfsleuth.datasets.transactions`) with no fault — 140 runs of
3 days, with and without a workload shift, 1-, 5- and 15-minute windows, 7 or 20 types, peak
utilisation .3 or .5, noisy or not: 258,000 windows — they raise no false alarm (the largest
|z| seen was 4.8; with ``threshold = 4`` there were 8 false episodes, all single slow windows at
night with a few hundred transactions). With a workload shift and one fault per run (20 runs
each) they catch every bottleneck of 2× or more, every stuck pool adding ≥ 0.05 s per
transaction (≈ 2×), every episode where ≥ 60% of transactions abort, and 15 of 20 bottlenecks
of 1.5× (a 1.5× fault sits on the ``min_ratio`` floor).

**Noise scale.** The spread of log ratios is not the same for every window: a sum over a few
hundred transactions, some of them 600 ms reports, is noisier than one over thousands of page
views. Each window gets ``sd² = σ² + τ² / n_eff`` with ``n_eff = (Σ_j a_j N_ij)² /
Σ_j a_j² N_ij`` its effective number of transactions (what the relative noise of a sum of
independent response times scales with); σ² and τ² come from a median regression of the reference
windows' squared deviations on ``(1, 1/n_eff)`` (see :func:`_noise_model`). With a single MAD,
1-minute windows in quiet hours gave 134 false episodes in 86,400 windows (threshold 4); with
this, 7.
The windows a LAR fit interpolates (zero residual) are left out, and the variance is scaled by
n/(n − rank) since in-sample residuals understate the noise (it matters in the online warm-up).

Windows with fewer than ``min_transactions`` transactions are not judged (a handful of requests
says little about a window), nor are windows whose fitted value is not positive (possible with
negative LAR coefficients) or that contain a type the model has never seen.

**Fit, flag, refit.** LAR is little moved by a few anomalous windows, but a long episode does
pull it. So the model is fitted on every judged window, the flagged windows are set aside, the
model is refitted on the rest and every window is judged again against the refit (once). This
has a limit: an episode that holds a large share of the frame's response time (in one simulated
day, 40 busy-hour windows at 2×: 31% of it) is absorbed by the first fit and nothing is
flagged. Give the offline detector several days; online, flagged windows never enter the
history, so an episode that started after the warm-up cannot teach the model.

**Episodes.** Flagged windows in the same direction are grouped into episodes, bridging up to
``max_gap`` unflagged windows between them, but never across a hole in the data. One finding per
episode: from the first window's start to the last window's end. Its ratio is the episode's
total observed over total fitted response time; severity ``ERROR`` when that ratio is at least
``error_ratio`` (or at most ``1 / error_ratio`` for too-fast episodes), else ``WARNING``.

**One analysis.** :meth:`MixAnomalyDetector.analyse` returns a :class:`MixAnalysis`: the
findings, the fit the windows were judged against, the other method's fit on the same windows
(LAR against OLS, as Kelly compares them) and every window's judgement. The report and the
notifications draw from it; nothing downstream fits or judges again, so the NAE a report shows
is the ``nae`` of the findings.

**Online** (:meth:`MixAnomalyDetector.judge_online`): at the close of each window the model is
refitted on the trailing ``history`` (windows already judged anomalous are left out of it), and
the newest window is judged alone against it; episodes are reported as they open and close.
"""

from __future__ import annotations

import dataclasses
import html
import logging
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal, TypeVar, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import Field
from pydantic.dataclasses import dataclass as pydantic_dataclass

from perfsleuth.analysis import PARAMS, DetectorMixin, Summary
from perfsleuth.durations import Duration, parse_duration
from perfsleuth.errors import CollinearityWarning, DataError, NotEnoughDataError
from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.frames import coverage_of, normalise, workload_types
from perfsleuth.units import format_seconds
from perfsleuth.workload.kernels import Method, MixFit, fit_mix_model

__all__ = [
    "CHECK",
    "MixAnalysis",
    "MixAnomalyDetector",
    "OnlineEvent",
    "Verdict",
    "WindowJudgement",
]

CHECK = "workload_mix"
"""What findings of this family record as their ``detector``."""

log = logging.getLogger(__name__)

FloatArray = NDArray[np.float64]
Verdict = Literal["slow", "too_fast", "normal", "unjudged"]
_Array = TypeVar("_Array", bound="np.ndarray[Any, Any]")
_MIN_SCALE = 1e-3  # floor of the robust scale (log units): a perfect fit must not divide by 0
_SLOW, _FAST = 1, -1
_HOLE = 1.5  # a step longer than this many window widths is a hole in the data
_MIN_NOISE_WINDOWS = 10  # fewer reference windows: one noise scale for all
_CHI2_1_MEDIAN = 0.454936423119572  # median of the χ² distribution with 1 degree of freedom


@dataclass(frozen=True, slots=True)
class WindowJudgement:
    """How one window compares with the model: ``verdict`` is ``"slow"``, ``"too_fast"``,
    ``"normal"`` or ``"unjudged"`` (too few transactions, unseen type, or still warming up)."""

    index: int
    time: datetime
    observed: float
    fitted: float
    ratio: float
    z: float
    verdict: Verdict


@dataclass(frozen=True, slots=True, eq=False)
class MixAnalysis:
    """A workload frame judged against its transaction mix: the findings and what they rest on.

    Arrays have one entry per window, in time order, and are read-only.

    Attributes
    ----------
    detector
        The parameters the windows were judged with.
    findings
        One ``workload_anomaly`` finding per episode; their ``nae`` is ``fit.nae``.
    types
        The transaction types (``n[<type>]`` columns), in the fits' column order.
    start
        Window starts (``datetime64[ns]``, UTC).
    width
        Window lengths (seconds).
    observed
        Summed response time ``y`` per window (seconds).
    fitted
        ``ŷ`` per window under ``fit`` (NaN for a window with a type ``fit`` never saw).
    ratio, z
        ``observed / fitted`` and the robust z of its log (NaN where not judged).
    verdict
        ``"slow"``, ``"too_fast"``, ``"normal"`` or ``"unjudged"`` per window.
    reference
        Positions of the windows ``fit`` and ``comparison`` were fitted on: the windows with
        enough transactions, less the anomalous ones when enough remain.
    fit
        The model the windows were judged against (``detector.method``); None without windows.
    comparison
        The other regression (OLS for LAR, LAR for OLS) on the same reference windows.
    """

    detector: MixAnomalyDetector
    findings: tuple[Finding, ...]
    types: tuple[str, ...]
    start: NDArray[np.datetime64]
    width: FloatArray
    observed: FloatArray
    fitted: FloatArray
    ratio: FloatArray
    z: FloatArray
    verdict: NDArray[np.str_]
    reference: NDArray[np.intp]
    fit: MixFit | None
    comparison: MixFit | None
    events: tuple[OnlineEvent, ...] = ()
    """Online replay (``detector.online``): every episode event in the order it was known."""

    @property
    def n_windows(self) -> int:
        return len(self.observed)

    @property
    def lar(self) -> MixFit | None:
        """The least-absolute-residuals fit (``fit`` or ``comparison``)."""
        return self._by_method("lar")

    @property
    def ols(self) -> MixFit | None:
        """The least-squares fit (``fit`` or ``comparison``)."""
        return self._by_method("ols")

    @property
    def flagged(self) -> NDArray[np.bool_]:
        """Windows judged anomalous (slow or too fast)."""
        return np.asarray((self.verdict == "slow") | (self.verdict == "too_fast"), dtype=bool)

    @property
    def windows(self) -> tuple[WindowJudgement, ...]:
        """Every window's judgement, in time order."""
        return tuple(self.window(i) for i in range(self.n_windows))

    def window(self, i: int) -> WindowJudgement:
        """The judgement of window ``i`` (0-based, in time order)."""
        return WindowJudgement(
            index=i,
            time=_utc(self.start[i]),
            observed=float(self.observed[i]),
            fitted=float(self.fitted[i]),
            ratio=float(self.ratio[i]),
            z=float(self.z[i]),
            verdict=cast(Verdict, str(self.verdict[i])),
        )

    def summary(self) -> Summary:
        """The fitted model (service times, NAE, ``|e|/y``) and a line per anomaly episode."""
        if self.fit is None:
            text = "No windows: nothing to model."
            return Summary(text=text, html=f"<p>{html.escape(text)}</p>")
        model = self.fit.summary()
        slow = int((self.verdict == "slow").sum())
        fast = int((self.verdict == "too_fast").sum())
        head = (
            f"{self.n_windows:,} windows judged against the {self.fit.method.upper()} fit: "
            f"{slow} slower and {fast} faster than the mix explains; "
            f"{len(self.findings)} episode(s)."
        )
        lines = [model.text, "", head, *(f"  {f.explanation}" for f in self.findings)]
        items = "".join(f"<li>{html.escape(f.explanation)}</li>" for f in self.findings)
        return Summary(
            text="\n".join(lines),
            html=model.html
            + f"<p>{html.escape(head)}</p>"
            + (f"<ul>{items}</ul>" if items else ""),
        )

    def _by_method(self, method: Method) -> MixFit | None:
        for fit in (self.fit, self.comparison):
            if fit is not None and fit.method == method:
                return fit
        return None


@dataclass(frozen=True, slots=True)
class OnlineEvent:
    """An episode as known at the close of window ``index`` (the window that told us).

    ``state`` is ``"opened"`` (its first anomalous window), ``"closed"`` (it is over:
    ``max_gap + 1`` windows without a flag followed it, the direction flipped, or the data has a
    hole), or ``"ongoing"`` (still open when the data ended). ``finding`` covers the episode's
    anomalous windows up to then.
    """

    state: Literal["opened", "closed", "ongoing"]
    index: int
    time: datetime
    finding: Finding


@dataclass(frozen=True, slots=True)
class _Windows:
    """The columns of a workload frame the model needs, as arrays, sorted by time."""

    start: NDArray[np.datetime64]
    width: FloatArray
    types: tuple[str, ...]
    counts: FloatArray
    rt: FloatArray
    cpu_util: FloatArray | None

    @property
    def y(self) -> FloatArray:
        return np.asarray(self.rt.sum(axis=1), dtype=np.float64)

    @property
    def total(self) -> FloatArray:
        return np.asarray(self.counts.sum(axis=1), dtype=np.float64)

    def when(self, i: int) -> datetime:
        return _utc(self.start[i])

    def end(self, i: int) -> datetime:
        return self.when(i) + timedelta(seconds=float(self.width[i]))

    def contiguous(self, i: int, j: int) -> bool:
        """Windows i < j with no hole in the data between them."""
        steps = np.diff(self.start[i : j + 1]).astype("timedelta64[ns]").astype(np.float64) / 1e9
        return bool(np.all(steps <= _HOLE * self.width[i:j]))


@dataclass(frozen=True, slots=True)
class _Judged:
    fitted: FloatArray
    ratio: FloatArray
    z: FloatArray
    verdict: NDArray[np.int8]  # +1 slow, -1 too fast, 0 normal
    judged: NDArray[np.bool_]


@pydantic_dataclass(frozen=True, config=PARAMS)
class MixAnomalyDetector(DetectorMixin):
    """Windows whose response time the transaction mix cannot explain (Kelly 2005).

    Parameters
    ----------
    method
        Regression: ``"lar"`` (least absolute residuals, robust; default) or ``"ols"``.
    threshold
        Robust z a window must reach: log(observed/fitted) in robust standard deviations of
        windows like it (see "Noise scale" in the module docstring).
    min_ratio
        A slow window's observed response time must also be at least this multiple of fitted.
    too_fast_ratio
        A too-fast window's observed response time must also be at most this multiple of fitted.
    error_ratio
        Episodes at least this many times slower (or faster) than fitted are ``ERROR``.
    min_windows
        Fewest judged windows to fit a model on (also the warm-up of the online mode).
    min_transactions
        Windows with fewer transactions are not judged.
    max_gap
        Unflagged windows bridged inside an episode.
    entity
        The finding's entity: the service the workload frame describes.
    online
        Replay the windows as if live, each judged against a model refitted on this trailing
        history before it (:meth:`judge_online`); the findings are then the replay's episodes
        (the plots still show the model of the whole frame). Unset: judge offline.
    """

    name: ClassVar[str] = "workload"
    contract: ClassVar[str] = "workload"

    method: Literal["lar", "ols"] = "lar"
    threshold: float = Field(default=5.0, gt=0.0)
    min_ratio: float = Field(default=1.5, gt=1.0)
    too_fast_ratio: float = Field(default=0.5, gt=0.0, lt=1.0)
    error_ratio: float = Field(default=3.0, gt=1.0)
    min_windows: int = Field(default=24, ge=2)
    min_transactions: int = Field(default=10, ge=1)
    max_gap: int = Field(default=1, ge=0)
    entity: str = Field(default="service", min_length=1)
    online: Duration | None = None

    # -- offline ------------------------------------------------------------------------------

    def analyse(self, frame: pd.DataFrame) -> MixAnalysis:
        """Every window judged against the mix; one ``workload_anomaly`` finding per episode of
        unexplained (slow or too fast) windows, and both fits the report draws."""
        if len(frame) == 0:
            return _empty(self)
        data = _windows(frame)
        judged, fit, reference = self._offline(data)
        other: Method = "ols" if fit.method == "lar" else "lar"
        comparison = self._fit(data, reference, method=other)
        findings = tuple(
            self._finding(data, judged, windows, fit, nae=fit.nae)
            for windows in _episodes(data, judged.verdict, self.max_gap)
        )
        analysis = MixAnalysis(
            detector=self,
            findings=findings,
            types=data.types,
            start=_readonly(data.start),
            width=_readonly(data.width),
            observed=_readonly(data.y),
            fitted=_readonly(judged.fitted),
            ratio=_readonly(judged.ratio),
            z=_readonly(judged.z),
            verdict=_readonly(_verdicts(judged)),
            reference=_readonly(reference),
            fit=fit,
            comparison=comparison,
        )
        if self.online is None:
            return analysis
        events = tuple(self.judge_online(frame, history=self.online))
        episodes = tuple(e.finding for e in events if e.state != "opened")
        return dataclasses.replace(analysis, findings=episodes, events=events)

    def judge(self, frame: pd.DataFrame) -> list[WindowJudgement]:
        """Every window's verdict as :meth:`analyse` judged it (``analyse(frame).windows``)."""
        return list(self.analyse(frame).windows)

    def _offline(self, data: _Windows) -> tuple[_Judged, MixFit, NDArray[np.intp]]:
        """Fit on every judgeable window, set the flagged ones aside, refit and judge again.

        Returns the judgements, the fit they were made against, and the windows it was fitted on.
        """
        everything = np.arange(len(data.width))
        base = np.flatnonzero(self._judgeable(data))
        fit = self._fit(data, base)
        judged = self._judge(data, fit, base, everything)
        kept = base[judged.verdict[base] == 0]
        if len(kept) < len(base) and len(kept) >= self._needed(data, kept):
            fit = self._fit(data, kept)
            judged = self._judge(data, fit, kept, everything)
            return judged, fit, kept
        return judged, fit, base

    # -- online -------------------------------------------------------------------------------

    def judge_online(
        self, frame: pd.DataFrame, *, history: str | timedelta | int = "7d"
    ) -> Iterator[OnlineEvent]:
        """Replay ``frame`` window by window as if live, yielding episode events.

        At each window the model is refitted on the trailing ``history`` (a duration such as
        ``"7d"``, or a number of windows) before it, leaving out windows already judged
        anomalous, and the window is judged against that fit alone. Windows are not judged
        until the history holds enough windows (``min_windows``).
        """
        if isinstance(history, bool):
            raise DataError(f"history must be a duration or a number of windows, got {history}")
        if isinstance(history, int):
            if history < 2:
                raise DataError(f"history must be at least 2 windows, got {history}")
            span: int | np.timedelta64 = history
        else:
            try:
                seconds = parse_duration(history).total_seconds()
            except ValueError as exc:
                raise DataError(str(exc)) from None
            span = np.timedelta64(round(seconds * 1e9), "ns")
        if len(frame) == 0:
            return
        data = _windows(frame)
        n = len(data.width)
        base = self._judgeable(data)
        verdict = np.zeros(n, dtype=np.int8)
        fitted, ratio, z = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        judged = np.zeros(n, dtype=bool)
        current: list[int] = []
        last_fit: MixFit | None = None

        def event(state: Literal["opened", "closed", "ongoing"], at: int) -> OnlineEvent:
            now = _Judged(fitted, ratio, z, verdict, judged)
            nae = last_fit.nae if last_fit is not None else math.nan
            finding = self._finding(data, now, list(current), last_fit, nae=nae)
            return OnlineEvent(state, at, data.when(at), finding)

        for t in range(n):
            if current and not data.contiguous(current[-1], t):
                yield event("closed", t)  # a hole in the data ends the episode
                current = []
            if base[t]:
                if isinstance(span, int):
                    lo = max(0, t - span)
                else:
                    lo = int(np.searchsorted(data.start, data.start[t] - span, side="left"))
                pool = lo + np.flatnonzero(base[lo:t] & (verdict[lo:t] == 0))
                if len(pool) >= self._needed(data, pool):
                    fit = self._fit(data, pool)
                    one = self._judge(data, fit, pool, np.array([t]))
                    fitted[t], ratio[t], z[t] = one.fitted[t], one.ratio[t], one.z[t]
                    judged[t], verdict[t] = one.judged[t], one.verdict[t]
                    if verdict[t] != 0:
                        if current and verdict[t] != verdict[current[0]]:
                            yield event("closed", t)  # the direction flipped
                            current = []
                        last_fit = fit
                        current.append(t)
                        if len(current) == 1:
                            yield event("opened", t)
                        continue
            if current and t - current[-1] > self.max_gap:
                yield event("closed", t)  # max_gap + 1 windows without a flag: over
                current = []
        if current:
            yield event("ongoing", n - 1)

    # -- internals ----------------------------------------------------------------------------

    def _judgeable(self, data: _Windows) -> NDArray[np.bool_]:
        return np.asarray(data.total >= self.min_transactions)

    def _needed(self, data: _Windows, rows: NDArray[np.intp]) -> int:
        seen = int((data.counts[rows] != 0).any(axis=0).sum())
        return max(self.min_windows, seen + 1)

    def _fit(
        self, data: _Windows, rows: NDArray[np.intp], *, method: Method | None = None
    ) -> MixFit:
        needed = self._needed(data, rows)
        if len(rows) < needed:
            raise NotEnoughDataError(
                f"{len(rows)} window(s) with at least {self.min_transactions} transactions; "
                f"the transaction-mix model needs at least {needed}"
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CollinearityWarning)
            fit = fit_mix_model(
                data.counts[rows],
                data.y[rows],
                method=self.method if method is None else method,
                names=data.types,
            )
        for warning in caught:
            if issubclass(warning.category, CollinearityWarning):
                log.info("%s: %s", self.entity, warning.message)
            else:
                warnings.warn_explicit(
                    warning.message, warning.category, warning.filename, warning.lineno
                )
        return fit

    def _judge(
        self,
        data: _Windows,
        fit: MixFit,
        reference: NDArray[np.intp],
        rows: NDArray[np.intp],
    ) -> _Judged:
        """Ratio, robust z and verdict of windows ``rows`` against ``fit`` (NaN/0 elsewhere).

        The centre and scale of log(observed/fitted) come from the ``reference`` windows.
        """
        n = len(data.width)
        ref_logs, _, ref_inv = self._log_ratio(data, fit, reference)
        # The windows a LAR fit interpolates (one per coefficient) have zero residual and say
        # nothing about the noise; in-sample residuals also understate it by about n/(n − p).
        keep = np.isfinite(ref_logs) & (np.abs(ref_logs) > 1e-9)
        inflation = len(reference) / max(len(reference) - fit.rank, 1)
        centre, (sigma2, tau2) = _noise_model(ref_logs[keep], ref_inv[keep])
        noise = (sigma2 * inflation, tau2 * inflation)
        logs, predicted, inv_neff = self._log_ratio(data, fit, rows)
        ok = np.isfinite(logs)
        z_rows = (logs - centre) / _scale(noise, inv_neff)
        ratio_rows = np.exp(logs)
        fitted, ratio, z = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        judged = np.zeros(n, dtype=bool)
        verdict = np.zeros(n, dtype=np.int8)
        fitted[rows] = predicted
        ratio[rows[ok]] = ratio_rows[ok]
        z[rows[ok]] = z_rows[ok]
        judged[rows[ok]] = True
        verdict[rows[ok]] = self._classify(ratio_rows[ok], z_rows[ok])
        return _Judged(fitted, ratio, z, verdict, judged)

    def _classify(self, ratio: FloatArray, z: FloatArray) -> NDArray[np.int8]:
        """+1 slow, −1 too fast, 0 normal: both the robust z and the ratio must be far off."""
        verdict = np.zeros(len(ratio), dtype=np.int8)
        verdict[(z >= self.threshold) & (ratio >= self.min_ratio)] = _SLOW
        verdict[(z <= -self.threshold) & (ratio <= self.too_fast_ratio)] = _FAST
        return verdict

    def _log_ratio(
        self, data: _Windows, fit: MixFit, rows: NDArray[np.intp]
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """For ``rows``: log(observed / fitted) (NaN where not judgeable), the fitted values,
        and 1 / the effective number of transactions.

        A window with transactions but (almost) no response time gets log(1e-6), not −inf:
        it is as "too fast" as a window can be, and its z stays finite. The effective number of
        transactions, ``(Σ_j a_j N_ij)² / Σ_j a_j² N_ij``, is how many equally long transactions
        would give the window's sum the same relative noise: a few slow reports count for less
        than many quick page views.
        """
        counts = data.counts[rows]
        predicted = fit.predict(counts)
        y = data.y[rows]
        coef = np.nan_to_num(np.asarray(fit.coef), nan=0.0)
        spread = counts @ (coef * coef)
        ok = (data.total[rows] >= self.min_transactions) & np.isfinite(predicted) & (predicted > 0)
        ok &= spread > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            safe = np.where(ok, predicted, 1.0)
            logs = np.where(ok, np.log(np.maximum(y / safe, 1e-6)), np.nan)
            inv_neff = np.where(ok, spread / (safe * safe), np.nan)
        return logs, predicted, inv_neff

    def _finding(
        self,
        data: _Windows,
        judged: _Judged,
        windows: list[int],
        fit: MixFit | None,
        *,
        nae: float,
    ) -> Finding:
        flagged = [i for i in windows if judged.verdict[i] != 0]
        first, last = windows[0], windows[-1]
        slow = judged.verdict[flagged[0]] == _SLOW
        observed = float(data.y[flagged].sum())
        expected = float(judged.fitted[flagged].sum())
        ratio = observed / expected
        transactions = float(data.total[flagged].sum())
        worst = max(flagged, key=lambda i: abs(float(judged.z[i])))
        severe = ratio >= self.error_ratio if slow else ratio <= 1.0 / self.error_ratio
        top, top_ratio = _top_type(data, judged, flagged, fit, slow=slow)
        evidence = [
            Evidence("observed", observed, "s"),
            Evidence("fitted", expected, "s"),
            Evidence("ratio", ratio),
            Evidence("mean_observed", observed / transactions, "s"),
            Evidence("mean_fitted", expected / transactions, "s"),
            Evidence("transactions", int(transactions), "count"),
            Evidence("windows", len(flagged), "count"),
            Evidence("span_windows", last - first + 1, "count"),
            Evidence("worst_window", data.when(worst).isoformat()),
            Evidence("worst_ratio", float(judged.ratio[worst])),
            Evidence("robust_z", float(judged.z[worst])),
            Evidence("direction", "slow" if slow else "too_fast"),
        ]
        if math.isfinite(nae):
            evidence.append(Evidence("nae", nae))
        if top:
            evidence += [Evidence("top_type", top), Evidence("top_type_ratio", top_ratio)]
        if data.cpu_util is not None:
            util = data.cpu_util[flagged]
            util = util[np.isfinite(util)]
            if len(util):
                evidence.append(Evidence("cpu_util", float(util.mean()), "fraction"))
        return Finding(
            kind=Kind.WORKLOAD_ANOMALY,
            entity=self.entity,
            metric="response_time",
            start=data.when(first),
            end=data.end(last),
            severity=Severity.ERROR if severe else Severity.WARNING,
            explanation=_explain(
                self.entity,
                slow,
                ratio,
                observed,
                expected,
                transactions,
                len(flagged),
                data.when(first),
                data.end(last),
                top,
                top_ratio,
            ),
            evidence=tuple(evidence),
            detector=CHECK,
        )


# --------------------------------------------------------------------------------------------
# Noise scale
# --------------------------------------------------------------------------------------------


def _noise_model(logs: FloatArray, inv_neff: FloatArray) -> tuple[float, tuple[float, float]]:
    """Centre and noise model ``sd² = σ² + τ² / n_eff`` of log ratios, fitted robustly.

    For Gaussian noise the median of ``d_i² / sd_i²`` (d the deviation from the median) is the
    median of χ²₁, 0.4549, so the conditional median of ``d²`` is ``0.4549 (σ² + τ² h)`` with
    ``h = 1/n_eff``: a median regression of ``d²`` on ``(1, h)`` without intercept — LAR again —
    estimates both, robust to the anomalies among the windows. A negative estimate is set to 0
    and the other refitted alone.
    """
    if len(logs) == 0:
        return 0.0, (math.inf, 0.0)
    centre = float(np.median(logs))
    d2 = (logs - centre) ** 2
    overall = float(np.median(d2)) / _CHI2_1_MEDIAN
    if len(logs) < _MIN_NOISE_WINDOWS:
        return centre, (overall, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CollinearityWarning)  # h constant: σ², τ² not apart
        fit = fit_mix_model(np.column_stack([np.ones(len(logs)), inv_neff]), d2)
    sigma2, tau2 = (float(c) / _CHI2_1_MEDIAN for c in fit.coef)
    if not tau2 >= 0:  # also NaN
        return centre, (overall, 0.0)
    if not sigma2 >= 0:
        alone = fit_mix_model(inv_neff[:, None], d2)
        return centre, (0.0, max(float(alone.coef[0]) / _CHI2_1_MEDIAN, 0.0))
    return centre, (sigma2, tau2)


def _scale(noise: tuple[float, float], inv_neff: FloatArray) -> FloatArray:
    sigma2, tau2 = noise
    with np.errstate(invalid="ignore"):
        sd = np.sqrt(sigma2 + tau2 * inv_neff)
    return np.asarray(np.maximum(sd, _MIN_SCALE), dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Frame → arrays
# --------------------------------------------------------------------------------------------


def _windows(frame: pd.DataFrame) -> _Windows:
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "workload":
        frame = normalise(frame, "workload")
    types = workload_types(frame)
    n_cols = [f"n[{t}]" for t in types]
    rt_cols = [f"rt_sum[{t}]" for t in types]
    absent = [c for c in rt_cols if c not in frame.columns]
    if absent:
        raise DataError(
            f"the transaction-mix model needs summed response times: missing {', '.join(absent)}"
        )
    frame = frame.sort_values("time", kind="stable")
    times = frame["time"]
    for column in ["window_s", *n_cols, *rt_cols]:
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
    if (counts < 0).any() or (rt < 0).any():
        raise DataError("workload frame: counts and summed response times must not be negative")
    start = times.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    util = None
    if "cpu_util" in frame.columns:
        util = frame["cpu_util"].to_numpy(dtype=np.float64, na_value=np.nan)
    return _Windows(
        start=start,
        width=frame["window_s"].to_numpy(dtype=np.float64),
        types=tuple(types),
        counts=counts,
        rt=rt,
        cpu_util=util,
    )


# --------------------------------------------------------------------------------------------
# Episodes and words
# --------------------------------------------------------------------------------------------


def _episodes(data: _Windows, verdict: NDArray[np.int8], max_gap: int) -> list[list[int]]:
    """Flagged windows grouped: same direction, ≤ max_gap unflagged between, no data hole."""
    episodes: list[list[int]] = []
    for i in np.flatnonzero(verdict != 0).tolist():
        if episodes:
            last = episodes[-1][-1]
            if verdict[last] == verdict[i] and i - last <= max_gap + 1 and data.contiguous(last, i):
                episodes[-1].extend(range(last + 1, i + 1))
                continue
        episodes.append([i])
    return episodes


def _top_type(
    data: _Windows, judged: _Judged, flagged: list[int], fit: MixFit | None, *, slow: bool
) -> tuple[str, float]:
    """The type whose response time is furthest from what its service time explains.

    Uses each type's own summed response time against ``coef_j · N_ij``.
    """
    if fit is None or len(data.types) < 2:
        return "", math.nan
    coef = np.nan_to_num(np.asarray(fit.coef), nan=0.0)
    expected = data.counts[flagged].sum(axis=0) * coef
    observed = data.rt[flagged].sum(axis=0)
    valid = expected > 0
    if not valid.any():
        return "", math.nan
    excess = np.where(valid, observed - expected, 0.0)
    j = int(np.argmax(excess) if slow else np.argmin(excess))
    if not valid[j]:
        return "", math.nan
    return data.types[j], float(observed[j] / expected[j])


def _span_text(start: datetime, end: datetime) -> str:
    day = start.strftime("%Y-%m-%d")
    left = start.strftime("%Y-%m-%d %H:%M")
    right = (
        end.strftime("%H:%M") if end.strftime("%Y-%m-%d") == day else end.strftime("%Y-%m-%d %H:%M")
    )
    return f"from {left} to {right} UTC"


def _explain(
    entity: str,
    slow: bool,
    ratio: float,
    observed: float,
    expected: float,
    transactions: float,
    windows: int,
    start: datetime,
    end: datetime,
    top: str,
    top_ratio: float,
) -> str:
    mean_obs = format_seconds(observed / transactions)
    mean_exp = format_seconds(expected / transactions)
    count = f"{windows} window" + ("s" if windows != 1 else "")
    when = f"{count} {_span_text(start, end)}"
    if slow:
        text = (
            f"{entity}: response time {ratio:.1f}× what the transaction mix explains "
            f"(mean {mean_obs} per transaction vs {mean_exp} expected, "
            f"{transactions:,.0f} transactions) for {when}"
        )
        if top:
            text += f"; largest excess in {top} ({top_ratio:.1f}× its modelled time)"
        return text
    text = (
        f"{entity}: transactions finished much faster than the transaction mix explains "
        f"({ratio:.2f}×: mean {mean_obs} per transaction vs {mean_exp} expected, "
        f"{transactions:,.0f} transactions) for {when}; aborted or failing transactions?"
    )
    return text


def _verdicts(judged: _Judged) -> NDArray[np.str_]:
    named = np.where(
        judged.verdict == _SLOW, "slow", np.where(judged.verdict == _FAST, "too_fast", "normal")
    )
    return np.asarray(np.where(judged.judged, named, "unjudged"), dtype=np.str_)


def _empty(detector: MixAnomalyDetector) -> MixAnalysis:
    """The analysis of a frame without windows: nothing judged, nothing fitted."""
    nothing = _readonly(np.empty(0, dtype=np.float64))
    return MixAnalysis(
        detector=detector,
        findings=(),
        types=(),
        start=_readonly(np.empty(0, dtype="datetime64[ns]")),
        width=nothing,
        observed=nothing,
        fitted=nothing,
        ratio=nothing,
        z=nothing,
        verdict=_readonly(np.empty(0, dtype=np.str_)),
        reference=_readonly(np.empty(0, dtype=np.intp)),
        fit=None,
        comparison=None,
    )


def _readonly(array: _Array) -> _Array:
    out = array.copy()
    out.setflags(write=False)
    return out


def _utc(stamp: np.datetime64) -> datetime:
    when: datetime = pd.Timestamp(stamp).tz_localize("UTC").to_pydatetime()
    return when
