"""The CPU model of Cherkasova et al. (2008): CPU time explained by the transactions served.

From the utilisation law, for every monitoring window t of width ``L_t``

    U_t · L_t = C0 · L_t + Σ_i N_it · C_i,

where ``U_t · L_t`` is the CPU time used in the window (CPU-seconds: utilisation of the whole
machine × window width × cores), ``N_it`` the transactions of type i in it, ``C_i`` the CPU time
one transaction of type i costs (seconds) and ``C0`` the "idle" overhead that keeps the system up
(CPU-seconds per second of window, i.e. cores busy with no transactions). The paper writes the
intercept per window; with windows of equal width the two are the same up to the factor L.
Making the intercept's regressor the window width lets windows of unequal width be mixed.

**Non-negative least squares.** Costs cannot be negative, so the fit is NNLS (scipy's
``nnls``, Lawson–Hanson), as in the paper. Columns are scaled to unit root mean square and the
response to unit mean first, so tolerances do not depend on units.

**Stepwise selection.** The paper adds transaction types one at a time: the candidate whose
inclusion gives the lowest error enters if a partial F-test says it improves the model
significantly, ``F = (SSE_before − SSE_after) / (SSE_after / (n − k))`` against ``F(1, n − k)``
with ``k`` the number of coefficients after entry (the intercept included); the first candidate
that fails ends the search and the types left out get cost 0. ``C0`` is always in the model (it
is what the anomaly rule reads). With NNLS the F distribution is an approximation (a coefficient
pinned at zero does not use a degree of freedom); it is the paper's rule, used as a stopping
rule rather than a test of record. Types with no transactions in the data have cost NaN
(unknown), not 0.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import lsq_linear, nnls
from scipy.stats import chi2
from scipy.stats import f as f_dist
from scipy.stats import norm as norm_dist

from perfsleuth.analysis import Summary
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.units import format_seconds

__all__ = [
    "CostChange",
    "CostShift",
    "CpuModel",
    "ExcessSource",
    "IdleTest",
    "ShiftTest",
    "Step",
    "TypeShift",
    "cost_change",
    "cost_shifts",
    "excess_source",
    "fit_cpu_model",
    "idle_test",
    "shift_test",
]

FloatArray = NDArray[np.float64]
Selection = Literal["stepwise", "all"]


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the stepwise search: the best candidate and its partial F-test."""

    name: str
    sse_before: float
    sse_after: float
    f: float
    p_value: float
    entered: bool


@dataclass(frozen=True, slots=True, eq=False)
class CpuModel:
    """A fitted CPU model ``cpu_t = idle · L_t + Σ_i coef_i · N_it`` (arrays read-only).

    Attributes
    ----------
    idle
        ``C0``: CPU-seconds per second of window spent with no transactions (cores).
    coef
        ``C_i``: CPU-seconds per transaction of each type; 0 for a type the stepwise search
        left out, NaN for a type with no transactions in the data.
    names
        Type names in column order.
    selected
        The types in the model, in the order they entered.
    steps
        The stepwise search, one :class:`Step` per candidate tried (the last may have failed).
    fitted, residuals
        Per window: modelled CPU-seconds and observed minus modelled.
    sse
        Σ residuals² (CPU-seconds²).
    scale
        Mean observed CPU-seconds per window (what relative errors are relative to).
    selection, alpha
        How types were chosen (``"stepwise"`` or ``"all"``) and the F-test level.
    """

    idle: float
    coef: FloatArray
    names: tuple[str, ...]
    selected: tuple[str, ...]
    steps: tuple[Step, ...]
    fitted: FloatArray
    residuals: FloatArray
    sse: float
    scale: float
    selection: Selection
    alpha: float

    @property
    def n_windows(self) -> int:
        return len(self.fitted)

    @property
    def n_params(self) -> int:
        """Coefficients in the model: ``C0`` and the selected types."""
        return 1 + len(self.selected)

    @property
    def dof(self) -> int:
        """Residual degrees of freedom, ``n − k`` (at least 0)."""
        return max(self.n_windows - self.n_params, 0)

    @property
    def rmse(self) -> float:
        """Root mean square error per window (CPU-seconds)."""
        return math.sqrt(self.sse / self.n_windows)

    @property
    def relative_rmse(self) -> float:
        """RMS error as a share of the mean CPU-seconds per window (NaN if that is 0)."""
        return self.rmse / self.scale if self.scale > 0 else math.nan

    @property
    def noise(self) -> float:
        """Residual standard deviation with the degrees-of-freedom correction,
        ``sqrt(SSE / (n − k))`` (NaN with no degrees of freedom left)."""
        return math.sqrt(self.sse / self.dof) if self.dof > 0 else math.nan

    def predict(self, counts: ArrayLike, window_s: ArrayLike) -> FloatArray:
        """Modelled CPU-seconds for new windows; NaN where a type of unknown cost occurs."""
        x, width = _design(counts, window_s, len(self.coef))
        known = ~np.isnan(self.coef)
        out: FloatArray = self.idle * width + x[:, known] @ self.coef[known]
        unknown = (x[:, ~known] != 0).any(axis=1)
        out[unknown] = np.nan
        return out

    def summary(self) -> Summary:
        """The model for people: idle overhead, per-type CPU cost, the stepwise search."""
        return _summarise(self)


def fit_cpu_model(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    *,
    names: Sequence[str] | None = None,
    selection: Selection = "stepwise",
    alpha: float = 0.05,
) -> CpuModel:
    """Fit ``cpu_t = C0 · L_t + Σ_i C_i · N_it`` by NNLS, with stepwise selection of types.

    Parameters
    ----------
    counts
        (windows × types) transactions of each type in each window; ≥ 0.
    cpu_seconds
        (windows,) CPU time used in each window, in CPU-seconds (utilisation of the whole
        machine × window width × cores); ≥ 0.
    window_s
        Window width in seconds: one number or one per window.
    names
        Type names (default ``x0, x1, …``).
    selection
        ``"stepwise"`` (forward selection with a partial F-test, the paper's) or ``"all"``.
    alpha
        Level of the partial F-test a type must pass to enter.

    Raises
    ------
    DataError
        Bad shapes, NaN/inf or negative values, widths that are not positive.
    NotEnoughDataError
        No windows.
    """
    if selection not in ("stepwise", "all"):
        raise ValueError(f"selection must be 'stepwise' or 'all', got {selection!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    x, width = _design(counts, window_s, None)
    try:
        y = np.array(cpu_seconds, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"cpu_seconds must be numeric: {exc}") from exc
    n, p = x.shape
    if len(y) != n:
        raise DataError(f"counts has {n} window(s) but cpu_seconds has {len(y)}")
    if n == 0:
        raise NotEnoughDataError("no windows to fit")
    _check(x, "counts")
    _check(y, "cpu_seconds")
    labels = [f"x{j}" for j in range(p)] if names is None else [str(s) for s in names]
    if len(labels) != p:
        raise DataError(f"{len(labels)} name(s) for {p} column(s) of counts")

    design = np.column_stack([width, x])
    col = np.sqrt(np.mean(design * design, axis=0))
    seen = col > 0
    col[~seen] = 1.0
    scale = float(np.mean(y))
    ys = y / scale if scale > 0 else y
    xs = design / col
    candidates = [j for j in range(1, p + 1) if seen[j]]

    active = [0]
    beta, sse = _nnls(xs, ys, active)
    steps: list[Step] = []
    if selection == "all":
        active += candidates
        beta, sse = _nnls(xs, ys, active)
    else:
        while len(active) <= len(candidates):
            k = len(active) + 1
            if n - k <= 0:
                break
            trials = [(j, *_nnls(xs, ys, [*active, j])) for j in candidates if j not in active]
            j, b_new, sse_new = min(trials, key=lambda t: (t[2], t[0]))
            f_stat, p_value = _partial_f(sse, sse_new, n - k)
            entered = p_value < alpha
            steps.append(
                Step(labels[j - 1], sse * scale**2, sse_new * scale**2, f_stat, p_value, entered)
            )
            if not entered:
                break
            active.append(j)
            beta, sse = b_new, sse_new

    full = np.zeros(p + 1)
    full[active] = beta
    coef = full / col * (scale if scale > 0 else 1.0)
    coef[1:][~seen[1:]] = np.nan
    fitted = design[:, active] @ coef[active]
    residuals = y - fitted
    return CpuModel(
        idle=float(coef[0]),
        coef=_frozen(coef[1:]),
        names=tuple(labels),
        selected=tuple(labels[j - 1] for j in active[1:]),
        steps=tuple(steps),
        fitted=_frozen(fitted),
        residuals=_frozen(residuals),
        sse=float(residuals @ residuals),
        scale=scale,
        selection=selection,
        alpha=alpha,
    )


@dataclass(frozen=True, slots=True)
class IdleTest:
    """Is the idle overhead above ``cap``? The F-test of ``C0 ≤ cap`` against ``C0 ≥ 0``.

    ``idle`` is the unconstrained estimate (cores); ``f`` and ``p_value`` compare the error with
    ``C0`` held to at most ``cap`` against the error without that limit (1 and ``n − k`` degrees
    of freedom). A small p-value means no model with a normal idle overhead explains the CPU.
    """

    idle: float
    cap: float
    f: float
    p_value: float


def idle_test(
    counts: ArrayLike, cpu_seconds: ArrayLike, window_s: ArrayLike, cap: float
) -> IdleTest:
    """Test whether the idle overhead ``C0`` exceeds ``cap`` (cores), all types in the model.

    The paper flags a segment whose fitted ``C0`` exceeds the idle overhead a service provider
    expects. When the transactions' counts move together (a fixed mix under steady load) ``C0``
    trades off against their costs and its estimate alone says little; this asks instead
    whether holding ``C0 ≤ cap`` makes the fit significantly worse.
    """
    x, width = _design(counts, window_s, None)
    y = np.array(cpu_seconds, dtype=np.float64).reshape(-1)
    if len(y) != x.shape[0]:
        raise DataError(f"counts has {x.shape[0]} window(s) but cpu_seconds has {len(y)}")
    _check(x, "counts")
    _check(y, "cpu_seconds")
    if not cap >= 0:
        raise ValueError(f"cap must be >= 0, got {cap}")
    design = np.column_stack([width, x[:, (x != 0).any(axis=0)]])
    col = np.sqrt(np.mean(design * design, axis=0))
    scale = float(np.mean(y)) if float(np.mean(y)) > 0 else 1.0
    xs, ys = design / col, y / scale
    free, rnorm = nnls(xs, ys)
    sse_free = float(rnorm) ** 2
    idle = float(free[0] / col[0] * scale)
    dof = len(y) - design.shape[1]
    if idle <= cap or dof <= 0:
        return IdleTest(idle, cap, 0.0, 1.0)
    upper = np.full(design.shape[1], np.inf)
    upper[0] = cap * col[0] / scale
    held = lsq_linear(xs, ys, bounds=(np.zeros(design.shape[1]), upper), method="bvls")
    sse_held = float(np.sum((xs @ held.x - ys) ** 2))
    f_stat, p_value = _partial_f(sse_held, sse_free, dof)
    return IdleTest(idle, cap, f_stat, p_value)


@dataclass(frozen=True, slots=True)
class CostShift:
    """How one type's CPU cost changed between two periods, as one regression sees it.

    ``shift`` is CPU-seconds per transaction after minus before; ``gain`` how much letting the
    cost shift lowers the joint SSE (CPU-seconds²), ``f`` and ``p_value`` its partial F-test.
    """

    name: str
    shift: float
    gain: float
    f: float
    p_value: float


def cost_shifts(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    after: ArrayLike,
    *,
    names: Sequence[str],
) -> tuple[CostShift, ...]:
    """Which type's CPU cost changed between the windows before and ``after`` (a mask)?

    One model is fitted to both periods, every cost ``≥ 0`` and common to both, with the idle
    overhead free to differ after (so a change of level is not laid on a type). Then, type by
    type, that type's cost may differ after (an extra regressor ``N_it·[t after]``, of either
    sign): the partial F-test of the SSE it saves says whether, and ``shift`` by how much, its
    cost changed. Types seen on one side only are left out. Sorted by gain, largest first.

    The signature (:mod:`perfsleuth.segments.kernels.signature`) names a changed type from
    latencies, which contention from outside the application stretches type by type; this names
    it from the CPU, which such contention leaves alone.
    """
    x, width, y, late = _two_periods(counts, cpu_seconds, window_s, after, names)
    n = x.shape[0]
    seen = (x != 0).any(axis=0)
    design = np.column_stack([width, x[:, seen], width * late])
    col = np.sqrt(np.mean(design * design, axis=0))
    col[col == 0] = 1.0
    scale = float(np.mean(y)) if float(np.mean(y)) > 0 else 1.0
    xs, ys = design / col, y / scale
    q = xs.shape[1]
    low = np.zeros(q)
    low[-1] = -np.inf  # the idle overhead's shift may have either sign

    def sse(matrix: FloatArray, lower: FloatArray) -> tuple[float, FloatArray]:
        fit = lsq_linear(matrix, ys, bounds=(lower, np.full(len(lower), np.inf)), method="bvls")
        return float(np.sum((matrix @ fit.x - ys) ** 2)), np.asarray(fit.x)

    base, _ = sse(xs, low)
    dof = n - q - 1
    out = []
    for j in np.flatnonzero(seen & (x[late] != 0).any(axis=0) & (x[~late] != 0).any(axis=0)):
        extra = x[:, j] * late
        norm = math.sqrt(float(np.mean(extra * extra)))
        if dof <= 0 or norm == 0:
            continue
        shifted, beta = sse(np.column_stack([xs, extra / norm]), np.append(low, -np.inf))
        f_stat, p_value = _partial_f(base, shifted, dof)
        out.append(
            CostShift(
                str(names[int(j)]),
                float(beta[-1] / norm * scale),
                (base - shifted) * scale**2,
                f_stat,
                p_value,
            )
        )
    return tuple(sorted(out, key=lambda c: -c.gain))


@dataclass(frozen=True, slots=True)
class TypeShift:
    """One type's CPU cost after a boundary against before, in the joint shift regression.

    ``before`` is its cost before (CPU-seconds per transaction; may be ≤ 0 when the data do
    not pin it down), ``shift`` after minus before, ``se`` the shift's standard error (HAC),
    ``t`` = shift / se.
    """

    name: str
    before: float
    shift: float
    se: float
    t: float

    @property
    def relative(self) -> float:
        """``shift / before`` (NaN when the cost before is not positive)."""
        return self.shift / self.before if self.before > 0 else math.nan


@dataclass(frozen=True, slots=True, eq=False)
class ShiftTest:
    """Every type's CPU-cost shift across a boundary, from one regression (:func:`shift_test`).

    ``shifts`` are sorted by ``|t|``, largest first; ``cov`` is the shifts' covariance (HAC,
    CPU-seconds², read-only), rows and columns in the order of ``shifts``.
    """

    shifts: tuple[TypeShift, ...]
    cov: FloatArray

    def changed(self, alpha: float, min_change: float, direction: int) -> tuple[str, ...]:
        """The types whose cost changed, the most certain first — or () for "no type".

        A type is named when its shift, in ``direction`` (+1 dearer, −1 cheaper), is
        significant (Bonferroni over the types tested: ``|t|`` beyond the normal quantile at
        ``alpha / (2·types)``), at least ``min_change`` of its cost before, and leaves it a
        positive cost. Every type whose cost is known named at once is no change of code:
        CPU used outside the application (contention, a slower machine) stretches every
        type's cost alike. The verdict holds only when nothing else moved: no type changed the
        other way (significantly and by ``min_change``), and the types not named shifted by no
        more than ``min_change`` of their cost, jointly (Wald test at ``alpha`` of the part of
        each shift beyond that). A linear CPU model that misses under
        a new mix trades one type's cost against another's — shifts of both signs, costs
        driven below zero — while a change of code moves the types it touches and leaves the
        rest.
        """
        if not self.shifts:
            return ()
        bar = float(norm_dist.ppf(1 - alpha / (2 * len(self.shifts))))
        if any(
            s.t * direction <= -bar and -s.relative * direction >= min_change for s in self.shifts
        ):
            return ()
        named = [
            i
            for i, s in enumerate(self.shifts)
            if s.t * direction >= bar
            and s.relative * direction >= min_change
            and s.before + s.shift > 0
        ]
        rest = [i for i in range(len(self.shifts)) if i not in named]
        if not named or all(self.shifts[i].before <= 0 for i in rest):
            return ()  # nothing, or every type alike: CPU used outside the application
        if rest:
            # the rest's shifts beyond ``min_change`` of their cost: smaller moves are
            # "unchanged" by the same measure that names a type
            b = np.array([self.shifts[i].shift for i in rest])
            floor = min_change * np.abs([self.shifts[i].before for i in rest])
            b = np.sign(b) * np.maximum(np.abs(b) - floor, 0.0)
            wald = float(b @ np.linalg.pinv(self.cov[np.ix_(rest, rest)]) @ b)
            if float(chi2.sf(wald, len(rest))) < alpha:
                return ()
        return tuple(self.shifts[i].name for i in named)


def shift_test(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    after: ArrayLike,
    *,
    names: Sequence[str],
    lag: int,
) -> ShiftTest:
    """Which types' CPU cost shifted between the windows before and ``after`` (a mask)?

    One least-squares regression of the CPU on the idle overhead and every type's count, with
    an after-shift term for the idle overhead and for every type seen on both sides:
    ``cpu_t = C0·L_t + Σ_i C_i·N_it + [t after]·(D0·L_t + Σ_i D_i·N_it)``. The shifts ``D_i``
    are estimated together, so each is net of the others and of a change of level. Their
    covariance is heteroscedasticity- and autocorrelation-consistent (Newey–West, Bartlett
    weights up to ``lag`` windows): consecutive windows share their errors, and the model's
    misfit under one mix lasts as long as the mix. Unconstrained, so a cost the data cannot pin
    down shows as a wide interval rather than a bound.
    """
    x, width, y, late = _two_periods(counts, cpu_seconds, window_s, after, names)
    n, p = x.shape
    both = np.flatnonzero((x[late] != 0).any(axis=0) & (x[~late] != 0).any(axis=0))
    design = np.column_stack([width, x, width * late, x[:, both] * late[:, None]])
    col = np.sqrt(np.mean(design * design, axis=0))
    col[col == 0] = 1.0
    z = design / col
    q = z.shape[1]
    if n <= q or len(both) == 0:
        return ShiftTest((), _frozen(np.zeros((0, 0))))
    beta, *_ = np.linalg.lstsq(z, y, rcond=None)
    residual = y - z @ beta
    scores = z * residual[:, None]
    meat = scores.T @ scores
    for k in range(1, min(int(lag), n - 1) + 1):
        cross = scores[k:].T @ scores[:-k]
        meat += (1 - k / (int(lag) + 1)) * (cross + cross.T)
    bread = np.linalg.pinv(z.T @ z)
    cov = bread @ meat @ bread * n / (n - q)  # small-sample correction
    first = p + 2  # columns: L, N_1..N_p, L·after, then the shifts
    cols = first + np.arange(len(both))
    units = col[cols]
    shift = beta[cols] / units
    cov_shift = cov[np.ix_(cols, cols)] / np.outer(units, units)
    se = np.sqrt(np.maximum(np.diag(cov_shift), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, shift / se, np.copysign(np.inf, shift))
    order = np.argsort(-np.abs(t), kind="stable")
    shifts = tuple(
        TypeShift(
            str(names[int(both[m])]),
            float(beta[1 + both[m]] / col[1 + both[m]]),
            float(shift[m]),
            float(se[m]),
            float(t[m]),
        )
        for m in order
    )
    return ShiftTest(shifts, _frozen(cov_shift[np.ix_(order, order)]))


@dataclass(frozen=True, slots=True)
class CostChange:
    """One type's CPU cost per transaction before and after a boundary, with an interval.

    ``before`` is its cost in one model of both periods (NaN when that model leaves the type
    out: then no share can be given), ``shift`` the change after (CPU-seconds per
    transaction), ``low``/``high`` the interval of ``shift`` at ``confidence``.
    """

    name: str
    before: float
    shift: float
    low: float
    high: float
    confidence: float

    @property
    def relative(self) -> float:
        """``shift / before`` (NaN when the cost before is unknown or 0)."""
        return self.shift / self.before if self.before > 0 else math.nan

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.low > 0 or self.high < 0


def cost_change(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    after: ArrayLike,
    *,
    names: Sequence[str],
    changed: Sequence[str],
    confidence: float = 0.95,
    block: int = 10,
    replicates: int = 200,
    seed: int = 0,
) -> tuple[CostChange, ...]:
    """How much the CPU cost of the types ``changed`` moved between the windows before and
    ``after`` (a mask), with intervals.

    One model is fitted to both periods — every cost ``≥ 0`` and common to both — with one
    extra regressor per changed type, its count after the boundary, whose coefficient (of either
    sign) is the shift. Nothing else may differ: the shift is what the types named carry. The
    intervals come from a moving-block bootstrap (``replicates`` resamples of blocks of
    ``block`` consecutive windows, drawn within each period, seeded): consecutive windows share
    their errors, and the model's misfit between mixes is counted as noise.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    x, width, y, late = _two_periods(counts, cpu_seconds, window_s, after, names)
    n, p = x.shape
    which = [list(names).index(c) for c in changed]
    design = np.column_stack([width, x, x[:, which] * late[:, None]])
    col = np.sqrt(np.mean(design * design, axis=0))
    col[col == 0] = 1.0
    scale = float(np.mean(y)) if float(np.mean(y)) > 0 else 1.0
    lower = np.zeros(design.shape[1])
    lower[p + 1 :] = -np.inf

    def fit(rows: NDArray[np.intp]) -> FloatArray:
        got = lsq_linear(
            design[rows] / col,
            y[rows] / scale,
            bounds=(lower, np.full(len(lower), np.inf)),
            method="bvls",
        )
        coef: FloatArray = np.asarray(got.x) / col * scale
        return coef

    beta = fit(np.arange(n))
    rng = np.random.default_rng(seed)
    early_rows, late_rows = np.flatnonzero(~late), np.flatnonzero(late)
    draws = np.array(
        [
            fit(np.concatenate([_blocks(early_rows, block, rng), _blocks(late_rows, block, rng)]))
            for _ in range(replicates)
        ]
    )
    tail = 100 * (1 - confidence) / 2
    out = []
    for k, j in enumerate(which):
        shift = float(beta[p + 1 + k])
        low, high = np.percentile(draws[:, p + 1 + k], [tail, 100 - tail])
        base = float(beta[1 + j])
        out.append(
            CostChange(
                str(names[j]), base if base > 0 else math.nan, shift, float(low), float(high),
                confidence,
            )
        )  # fmt: skip
    return tuple(out)


def _blocks(rows: NDArray[np.intp], block: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """A moving-block bootstrap resample of ``rows`` (as long as ``rows``)."""
    n = len(rows)
    size = min(max(int(block), 1), n)
    if n == 0:
        return rows
    starts = rng.integers(0, n - size + 1, size=math.ceil(n / size))
    picked: NDArray[np.intp] = np.concatenate([rows[s : s + size] for s in starts])
    return picked[:n]


@dataclass(frozen=True, slots=True)
class ExcessSource:
    """What best explains the CPU a stretch of windows uses beyond a reference model.

    Each candidate is one regressor fitted to the residuals (least squares through the
    origin): ``idle`` — a constant extra (cores, like a process outside the workload); ``scale``
    — every type costing the same share more (contention stretching all the work); and each
    type's count — one type costing more per transaction (a change of its code). ``sse`` maps
    each candidate (``"idle"``, ``"scale"``, or a type name) to the error left; ``noise`` is the
    reference model's residual variance per window.
    """

    sse: dict[str, float]
    noise: float

    @property
    def best_type(self) -> str | None:
        """The type whose cost explains the excess best (None without types)."""
        types = {k: v for k, v in self.sse.items() if k not in ("idle", "scale")}
        return min(types, key=lambda k: types[k]) if types else None

    def type_wins(self, level: float) -> bool:
        """Whether :attr:`best_type` explains the excess better than both the idle and the
        scale explanation by more than chance (the gain in units of the noise beyond the χ²
        quantile at ``level``, one degree of freedom)."""
        best = self.best_type
        if best is None or not (self.noise > 0 and math.isfinite(self.noise)):
            return False
        other = min(self.sse["idle"], self.sse["scale"])
        return (other - self.sse[best]) / self.noise > float(chi2.ppf(1 - level, 1))


def excess_source(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    reference: ArrayLike,
    *,
    names: Sequence[str],
) -> ExcessSource:
    """Explain the CPU of the windows not in ``reference`` (a mask) beyond the model of the
    windows in it (NNLS, every type): a constant extra, a common scale, or one type's cost
    (see :class:`ExcessSource`)."""
    x, width = _design(counts, window_s, None)
    y = np.array(cpu_seconds, dtype=np.float64).reshape(-1)
    ref = np.array(reference, dtype=bool).reshape(-1)
    if len(y) != x.shape[0] or len(ref) != x.shape[0]:
        raise DataError("counts, cpu_seconds and reference must have one row per window")
    model = fit_cpu_model(x[ref], y[ref], width[ref], names=names, selection="all")
    fitted = model.predict(x[~ref], width[~ref])
    ok = np.isfinite(fitted)
    residual = (y[~ref] - fitted)[ok]
    candidates = {"idle": width[~ref][ok], "scale": fitted[ok]}
    for j, name in enumerate(names):
        candidates[str(name)] = x[~ref][ok, j]
    sse = {}
    for key, column in candidates.items():
        norm2 = float(column @ column)
        gain = float(column @ residual) ** 2 / norm2 if norm2 > 0 else 0.0
        sse[key] = float(residual @ residual) - gain
    return ExcessSource(sse, model.noise**2 if math.isfinite(model.noise) else math.nan)


# --------------------------------------------------------------------------------------------
# Internals
# --------------------------------------------------------------------------------------------


def _two_periods(
    counts: ArrayLike,
    cpu_seconds: ArrayLike,
    window_s: ArrayLike,
    after: ArrayLike,
    names: Sequence[str],
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """Counts, window widths, CPU seconds and the after-mask of a two-period comparison,
    checked to agree in length and to be finite."""
    x, width = _design(counts, window_s, None)
    y = np.array(cpu_seconds, dtype=np.float64).reshape(-1)
    late = np.array(after, dtype=bool).reshape(-1)
    n, p = x.shape
    if len(y) != n or len(late) != n:
        raise DataError(f"counts has {n} window(s); cpu_seconds {len(y)}, after {len(late)}")
    if len(names) != p:
        raise DataError(f"{len(names)} name(s) for {p} column(s) of counts")
    _check(x, "counts")
    _check(y, "cpu_seconds")
    return x, width, y, late


def _design(counts: ArrayLike, window_s: ArrayLike, p: int | None) -> tuple[FloatArray, FloatArray]:
    try:
        x = np.array(counts, dtype=np.float64, ndmin=2)
        width = np.array(window_s, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"counts and window_s must be numeric: {exc}") from exc
    if np.ndim(counts) == 1:
        x = x.T
    if x.ndim != 2:
        raise DataError(f"counts must be 2-D (windows × types), got shape {np.shape(counts)}")
    if p is not None and x.shape[1] != p:
        raise DataError(f"counts must have {p} column(s), got {x.shape[1]}")
    if len(width) == 1:
        width = np.full(x.shape[0], width[0])
    if len(width) != x.shape[0]:
        raise DataError(f"window_s has {len(width)} value(s) for {x.shape[0]} window(s)")
    if not (np.isfinite(width).all() and (width > 0).all()):
        raise DataError("window_s must be positive and finite")
    return x, width


def _check(a: FloatArray, label: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        raise DataError(
            f"{label} has NaN or infinite values (first at {tuple(np.argwhere(bad)[0])})"
        )
    if (a < 0).any():
        where = tuple(np.argwhere(a < 0)[0])
        raise DataError(f"{label} must not be negative (first at {where}: {a[where]})")


def _nnls(xs: FloatArray, ys: FloatArray, columns: list[int]) -> tuple[FloatArray, float]:
    beta, rnorm = nnls(xs[:, columns], ys)
    return beta, float(rnorm) ** 2


def _partial_f(sse_before: float, sse_after: float, dof: int) -> tuple[float, float]:
    gain = sse_before - sse_after
    if gain <= 0:
        return 0.0, 1.0
    if sse_after <= 1e-24 * max(sse_before, 1e-300):
        return math.inf, 0.0
    f_stat = gain / (sse_after / dof)
    return f_stat, float(f_dist.sf(f_stat, 1, dof))


def _frozen(a: FloatArray) -> FloatArray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _summarise(model: CpuModel) -> Summary:
    title = f"CPU model (NNLS, {model.selection} selection)"
    rel = model.relative_rmse
    head = [
        ("windows", f"{model.n_windows:,}"),
        ("types in the model", f"{len(model.selected)} of {len(model.names)}"),
        ("idle overhead C0", f"{model.idle:.4g} CPU-s per s"),
        ("RMS error", f"{model.rmse:.4g} CPU-s per window"),
        ("relative RMS error", "n/a" if math.isnan(rel) else f"{100 * rel:.2f}%"),
    ]
    entry = {s.name: s for s in model.steps if s.entered}
    rows = []
    for name, c in zip(model.names, model.coef, strict=True):
        step = entry.get(name)
        f_text = "" if step is None else f"{step.f:.4g}"
        p_text = "" if step is None else f"{step.p_value:.3g}"
        rank = model.selected.index(name) + 1 if name in model.selected else None
        rows.append(
            (name, format_seconds(float(c)), "" if rank is None else str(rank), f_text, p_text)
        )
    failed = [s for s in model.steps if not s.entered]
    notes = [
        f"stopped: {s.name} would improve SSE only by an F of {s.f:.3g} (p = {s.p_value:.3g} "
        f">= {model.alpha:g})"
        for s in failed
    ]
    head_w = max(len(k) for k, _ in head)
    name_w = max([len(r[0]) for r in rows] + [4])
    lines = [title, "=" * len(title)]
    lines += [f"{k:<{head_w}}  {v}" for k, v in head]
    lines += ["", f"{'type':<{name_w}}  {'CPU per tx':>10}  entered  {'F':>8}  p-value"]
    lines += [f"{r[0]:<{name_w}}  {r[1]:>10}  {r[2]:>7}  {r[3]:>8}  {r[4]}" for r in rows]
    lines += [f"note: {note}" for note in notes]

    esc = html.escape
    parts = [
        '<div class="perfsleuth-cpumodel">',
        f"<h3>{esc(title)}</h3>",
        "<table><tbody>",
        *(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in head),
        "</tbody></table>",
        "<table><thead><tr><th>type</th><th>CPU per transaction</th><th>entered</th>"
        "<th>F</th><th>p-value</th></tr></thead><tbody>",
        *("<tr>" + "".join(f"<td>{esc(cell)}</td>" for cell in row) + "</tr>" for row in rows),
        "</tbody></table>",
    ]
    if notes:
        parts += ["<ul>", *(f"<li>{esc(note)}</li>" for note in notes), "</ul>"]
    parts.append("</div>")
    return Summary(text="\n".join(lines), html="\n".join(parts))
