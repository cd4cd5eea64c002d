"""Transaction-mix models after Kelly (2005): aggregate response time explained by the mix.

For window i, ``y_i = Σ_j a_j N_ij`` with no intercept (a window without transactions has no
response time). ``y_i`` is the *summed* response time of the transactions that began in the
window, ``N_ij`` their count by type, and ``a_j`` — seconds per transaction — estimates type j's
service time when load is light. The figure of merit is the normalised aggregate error
``NAE = Σ|e_i| / Σy_i``, which least absolute residuals (LAR) minimises by construction; OLS is
offered for comparison (it minimises Σe², so its NAE is never lower than LAR's).

Design choices
--------------
**LAR as the dual LP.** The primal LP, ``min 1ᵀ(e⁺ + e⁻)`` s.t. ``Xa + e⁺ − e⁻ = y``,
``e± ≥ 0``, has n rows and p + 2n columns. Its dual is

    max yᵀu   s.t.   Xᵀu = 0,   −1 ≤ u ≤ 1,

with only p rows and n boxed columns, which simplex methods solve far faster. HiGHS solves it as
``min −yᵀu``; the coefficients are recovered from the row duals: ``a = −(row dual of Xᵀu = 0)``
(stationarity: ``−y = Xλ + μ``, μ the bound multipliers, so ``y − X(−λ) = −μ`` are the
residuals). Complementary slackness says ``u_i = sign(e_i)`` wherever ``e_i ≠ 0``: the windows
with ``u_i`` strictly inside (−1, 1) are the ones the fit interpolates. Every solve is checked
by its duality gap (``Σ|e|`` against ``yᵀu``), and a gap above 10⁻⁶ (relative) is a
:class:`~perfsleuth.errors.ConvergenceWarning`.

**Scaling.** Columns of X are divided by their Euclidean norms and y by its mean, so HiGHS'
absolute tolerances (10⁻⁷) mean the same whatever the units (ms or s, ten or ten thousand
transactions per window). Coefficients are scaled back.

**Large n: Portnoy–Koenker preprocessing.** Simplex iterations grow with p (about 7p here) and
each costs O(nnz(X)), so for n above ``_DIRECT_MAX`` windows the problem is first solved on a
seeded subsample of m windows; windows whose residual under that fit is large relative to their
leverage are *globbed*: their ``u_i`` is fixed at the sign of their residual and their
contribution moves to the right-hand side, ``X_Sᵀu_S = −X_Fᵀ s_F``. The reduced LP (M ≈ 4m
windows) is solved; windows whose fixed sign the reduced fit contradicts are moved back into
the LP (added as columns at their old bound, so the current basis stays primal feasible and
HiGHS warm-starts) until none is left. The answer is then exactly optimal for the full problem
(primal and dual feasible with complementary slackness), which the duality-gap check confirms.
If the reduced LP is infeasible (too much globbed), M doubles; beyond n/2 the full LP is solved.
This is what brings 100,000 × 100 from ~13 s to ~4 s. HiGHS is driven through the bindings
SciPy ships (``scipy.optimize._highspy``) because ``linprog`` offers no warm start; if those
private bindings move, the direct solve falls back to ``linprog(method="highs-ds")``.

**Degenerate input.** A type with no transactions in any window (an all-zero column) has no
identifiable service time: its coefficient is NaN (with a note) and it is left out of the fit;
``fitted`` treats it as contributing nothing, which is exact since its counts are all zero.
Collinear types (rank-deficient X, e.g. two types that always occur together in a fixed ratio)
give a :class:`~perfsleuth.errors.CollinearityWarning` naming them; the fit is still optimal, but
the split of time between those types is arbitrary. NaN/±inf, negative counts or negative
response times are a :class:`~perfsleuth.errors.DataError`; fewer windows than identifiable
types + 1 is a :class:`~perfsleuth.errors.NotEnoughDataError`.

LAR solutions need not be unique (the LP may have an optimal face); the one returned is a vertex
and the same on every run: the subsample is drawn from a fixed seed and HiGHS is deterministic.
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from perfsleuth.analysis import Summary
from perfsleuth.blas import one_blas_thread
from perfsleuth.errors import CollinearityWarning, ConvergenceWarning, DataError, NotEnoughDataError
from perfsleuth.units import format_seconds

__all__ = ["MixFit", "fit_mix_model"]

FloatArray = NDArray[np.float64]
Method = Literal["lar", "ols"]

_DIRECT_MAX = 20_000  # above this many windows LAR uses Portnoy-Koenker preprocessing
_GAP_TOL = 1e-6  # relative duality gap above which the LAR answer is suspect
_COLLINEAR = 1e-7  # smallest/largest singular value of the scaled X below which we warn
_SEED = 20050601  # subsample seed: any fixed number; fixed so results are reproducible
_QUANTILES = (0.50, 0.90, 0.99)


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class MixFit:
    """A fitted transaction-mix model ``y_i = Σ_j coef_j · N_ij`` (arrays are read-only).

    Attributes
    ----------
    coef
        Seconds per transaction of each type (service-time estimates under light load); NaN for
        a type with no transactions at all.
    names
        Type names, in column order.
    fitted, residuals
        ``ŷ_i`` and ``e_i = y_i − ŷ_i`` per window (seconds).
    nae
        Normalised aggregate error ``Σ|e_i| / Σy_i`` (NaN when ``Σy = 0``).
    method
        ``"lar"`` or ``"ols"``.
    abs_rel_error
        ``|e_i| / y_i`` per window, NaN where ``y_i = 0``.
    rank
        Numerical rank of the count matrix over the identified types.
    notes
        Plain-language remarks on the fit (unseen types, negative coefficients, collinearity).
    """

    coef: FloatArray
    names: tuple[str, ...]
    fitted: FloatArray
    residuals: FloatArray
    nae: float
    method: Method
    abs_rel_error: FloatArray
    rank: int
    notes: tuple[str, ...]

    @property
    def n_windows(self) -> int:
        return len(self.fitted)

    def predict(self, counts: ArrayLike) -> FloatArray:
        """``ŷ`` for new windows; NaN for a window with transactions of a type never fitted."""
        x = np.asarray(counts, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.coef):
            raise DataError(
                f"counts must have shape (windows, {len(self.coef)}), got {np.shape(counts)}"
            )
        known = ~np.isnan(self.coef)
        out: FloatArray = x[:, known] @ self.coef[known]
        unknown = (x[:, ~known] != 0).any(axis=1)
        out[unknown] = np.nan
        return out

    def error_quantiles(self) -> dict[float, float]:
        """Quantiles (50/90/99%) of ``|e|/y`` over windows with ``y > 0``."""
        values = self.abs_rel_error[~np.isnan(self.abs_rel_error)]
        if len(values) == 0:
            return dict.fromkeys(_QUANTILES, math.nan)
        qs = np.quantile(values, _QUANTILES)
        return {q: float(v) for q, v in zip(_QUANTILES, qs, strict=True)}

    def summary(self) -> Summary:
        """Coefficients (per-type service times), NAE and the ``|e|/y`` distribution."""
        return _summarise(self)


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------


@one_blas_thread  # small problems: more BLAS threads only spin on a busy host (perfsleuth.blas)
def fit_mix_model(
    counts: ArrayLike,
    response: ArrayLike,
    *,
    method: Method = "lar",
    names: Sequence[str] | None = None,
) -> MixFit:
    """Fit Kelly's transaction-mix model ``y_i = Σ_j a_j N_ij`` (no intercept).

    Parameters
    ----------
    counts
        (windows × types) transactions of each type that began in each window; ≥ 0.
    response
        Per-window **summed** response time ``y_i`` (seconds); ≥ 0.
    method
        ``"lar"`` (least absolute residuals: minimises NAE; the default) or ``"ols"``.
    names
        Type names (default ``x0, x1, …``).

    Returns
    -------
    MixFit
    """
    if method not in ("lar", "ols"):
        raise ValueError(f"method must be 'lar' or 'ols', got {method!r}")
    x, y, labels = _validated(counts, response, names)
    n, p = x.shape
    seen = (x != 0).any(axis=0)
    notes: list[str] = [
        f"{labels[j]}: no transactions in any window; its service time is unknown (NaN)"
        for j in np.flatnonzero(~seen)
    ]
    k = int(seen.sum())
    if k == 0:
        raise NotEnoughDataError("no transactions in any window: nothing to fit")
    if n < k + 1:
        raise NotEnoughDataError(
            f"{n} window(s) for {k} transaction type(s): need at least {k + 1}"
        )
    xs = x[:, seen]
    col_scale = np.sqrt(np.einsum("ij,ij->j", xs, xs))
    xs = xs / col_scale
    y_scale = float(np.mean(y))
    if y_scale == 0.0:
        y_scale = 1.0
    ys = y / y_scale
    rank, collinear = _rank(xs, [labels[j] for j in np.flatnonzero(seen)])
    if collinear:
        warnings.warn(collinear, CollinearityWarning, stacklevel=2)
        notes.append(collinear)
    beta = _lar(xs, ys) if method == "lar" else np.linalg.lstsq(xs, ys, rcond=None)[0]
    coef = np.full(p, np.nan)
    coef[seen] = beta / col_scale * y_scale
    fitted = x[:, seen] @ coef[seen]
    residuals = y - fitted
    total = float(y.sum())
    nae = float(np.abs(residuals).sum() / total) if total > 0 else math.nan
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rel = np.where(y > 0, np.abs(residuals) / np.where(y > 0, y, 1.0), np.nan)
    negative = [labels[j] for j in np.flatnonzero(seen & (coef < 0))]
    if negative:
        notes.append(
            "negative service time for "
            + ", ".join(negative)
            + ": the model is compensating (collinear types, or time that is not service time)"
        )
    return MixFit(
        coef=_frozen(coef),
        names=tuple(labels),
        fitted=_frozen(fitted),
        residuals=_frozen(residuals),
        nae=nae,
        method=method,
        abs_rel_error=_frozen(rel),
        rank=rank,
        notes=tuple(notes),
    )


def _validated(
    counts: ArrayLike, response: ArrayLike, names: Sequence[str] | None
) -> tuple[FloatArray, FloatArray, list[str]]:
    try:
        x = np.array(counts, dtype=np.float64, ndmin=2)
        y = np.array(response, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise DataError(f"counts and response must be numeric arrays: {exc}") from exc
    if np.ndim(counts) == 1:
        x = x.T  # one type: a column
    if x.ndim != 2:
        raise DataError(f"counts must be 2-D (windows × types), got {x.ndim} dimensions")
    n, p = x.shape
    if p == 0:
        raise DataError("counts has no transaction types (no columns)")
    if len(y) != n:
        raise DataError(f"counts has {n} window(s) but response has {len(y)}")
    if n == 0:
        raise NotEnoughDataError("no windows to fit")
    for label, a in (("counts", x), ("response", y)):
        bad = ~np.isfinite(a)
        if bad.any():
            where = np.argwhere(bad)[0]
            raise DataError(f"{label} has NaN or infinite values (first at index {tuple(where)})")
        neg = a < 0
        if neg.any():
            where = np.argwhere(neg)[0]
            raise DataError(
                f"{label} must not be negative (first at index {tuple(where)}: {a[tuple(where)]})"
            )
    if names is None:
        labels = [f"x{j}" for j in range(p)]
    else:
        labels = [str(name) for name in names]
        if len(labels) != p:
            raise DataError(f"{len(labels)} name(s) for {p} column(s) of counts")
    return x, y, labels


def _frozen(a: FloatArray) -> FloatArray:
    a = np.ascontiguousarray(a, dtype=np.float64)
    a.setflags(write=False)
    return a


def _rank(xs: FloatArray, labels: list[str]) -> tuple[int, str]:
    """Numerical rank of the column-scaled X, and a warning text naming a collinear set."""
    gram = xs.T @ xs
    w, v = np.linalg.eigh(gram)
    sv = np.sqrt(np.clip(w, 0.0, None))
    top = float(sv[-1])
    small = sv <= _COLLINEAR * top
    rank = int((~small).sum())
    if not small.any():
        return rank, ""
    # the eigenvector of the smallest singular value is (nearly) a null combination of columns
    weights = np.abs(v[:, 0])
    involved = [labels[j] for j in np.flatnonzero(weights >= 0.1 * weights.max())]
    return rank, (
        f"transaction types {', '.join(involved)} are (nearly) collinear: their counts move "
        "together, so the model cannot tell their service times apart (rank "
        f"{rank} of {len(labels)})"
    )


# --------------------------------------------------------------------------------------------
# LAR: the dual LP with HiGHS
# --------------------------------------------------------------------------------------------


def _lar(xs: FloatArray, ys: FloatArray) -> FloatArray:
    n, p = xs.shape
    if _core is None:
        beta, u = _lar_linprog(xs, ys)
    elif n <= _DIRECT_MAX:
        beta, u = _DualLP(xs, ys, np.zeros(p)).solve()
    else:
        beta, u = _lar_preprocessed(xs, ys)
    _check_gap(xs, ys, beta, u)
    return beta


def _check_gap(xs: FloatArray, ys: FloatArray, beta: FloatArray, u: FloatArray) -> None:
    primal = float(np.abs(ys - xs @ beta).sum())
    dual = float(ys @ u)
    infeasible = float(np.abs(xs.T @ u).max(initial=0.0))
    scale = max(primal, 1.0)
    if abs(primal - dual) > _GAP_TOL * scale or infeasible > 1e-6 * math.sqrt(len(ys)):
        warnings.warn(
            f"LAR solution is not exactly optimal (duality gap {abs(primal - dual) / scale:.2g}, "
            f"dual infeasibility {infeasible:.2g}); coefficients may be slightly off",
            ConvergenceWarning,
            stacklevel=3,
        )


def _lar_preprocessed(xs: FloatArray, ys: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Portnoy & Koenker (1997) preprocessing: solve on a subsample, glob the sure windows."""
    n, p = xs.shape
    m = int(min(n, max(20 * p, round(math.sqrt(p) * n ** (2 / 3) / 4))))
    rng = np.random.default_rng(_SEED)
    sub = np.sort(rng.choice(n, size=m, replace=False))
    beta, _ = _DualLP(xs[sub], ys[sub], np.zeros(p)).solve()
    r = ys - xs @ beta
    # Leverage-normalised residual: how sure we are of a window's residual sign under the
    # subsample fit (the fit's error at x_i grows with x_i's Mahalanobis norm).
    gram = xs[sub].T @ xs[sub] / m
    w, v = np.linalg.eigh(gram)
    w = np.maximum(w, w[-1] * 1e-12)
    z = (xs @ v) / np.sqrt(w)
    score = np.abs(r) / np.maximum(np.sqrt(np.einsum("ij,ij->i", z, z)), 1e-300)
    signs = np.where(r >= 0, 1.0, -1.0)
    order = np.argsort(score, kind="stable")
    size = 4 * m
    while size < n // 2:
        inside = np.zeros(n, dtype=bool)
        inside[order[:size]] = True
        result = _solve_globbed(xs, ys, inside, signs)
        if result is not None:
            return result
        size *= 2
    return _DualLP(xs, ys, np.zeros(p)).solve()


def _solve_globbed(
    xs: FloatArray, ys: FloatArray, inside: NDArray[np.bool_], signs: FloatArray
) -> tuple[FloatArray, FloatArray] | None:
    """Reduced LP over the windows ``inside``; None when it is infeasible (glob too heavy)."""
    outside = ~inside
    idx = np.flatnonzero(inside)
    rhs = -(xs[outside].T @ signs[outside])
    lp = _DualLP(xs[idx], ys[idx], rhs)
    solved = lp.try_solve()
    if solved is None:
        return None
    beta, _ = solved
    for _ in range(100):
        e = ys - xs @ beta
        wrong = np.flatnonzero(outside & (signs * e < -1e-9 * (1.0 + np.abs(ys))))
        if len(wrong) == 0:
            break
        outside[wrong] = False
        idx = np.concatenate([idx, wrong])
        rhs = rhs + xs[wrong].T @ signs[wrong]
        lp.add(xs[wrong], ys[wrong], signs[wrong], rhs)
        solved = lp.try_solve()
        if solved is None:  # adding columns only relaxes the LP, so this is numerical trouble
            return None
        beta, _ = solved
    else:
        return None
    u = signs.copy()
    u[idx] = lp.col_value()
    return beta, u


try:  # SciPy's bindings of HiGHS (private, but the only way to warm-start HiGHS from SciPy)
    import scipy.optimize._highspy._core as _core_module

    _core: Any = _core_module
except ImportError:  # pragma: no cover - depends on the SciPy build
    _core = None


class _DualLP:
    """``min −yᵀu  s.t.  Xᵀu = rhs,  −1 ≤ u ≤ 1`` in HiGHS, one column per window."""

    def __init__(self, xs: FloatArray, ys: FloatArray, rhs: FloatArray) -> None:
        n, p = xs.shape
        self.p = p
        a = sparse.csr_matrix(xs)  # rows of X = columns of Xᵀ: CSR of X is CSC of Xᵀ
        lp = _core.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = p
        lp.a_matrix_.num_col_ = n
        lp.a_matrix_.num_row_ = p
        lp.a_matrix_.format_ = _core.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a.indptr.astype(np.int32)
        lp.a_matrix_.index_ = a.indices.astype(np.int32)
        lp.a_matrix_.value_ = a.data
        lp.col_cost_ = -ys
        lp.col_lower_ = np.full(n, -1.0)
        lp.col_upper_ = np.full(n, 1.0)
        lp.row_lower_ = rhs.copy()
        lp.row_upper_ = rhs.copy()
        self.highs = _core._Highs()
        self.highs.setOptionValue("output_flag", False)
        # Presolve costs more than it saves on these wide, dense LPs (0.35 s of 0.8 s at
        # 9,130 × 96) and would drop the basis we warm-start from.
        self.highs.setOptionValue("presolve", "off")
        self.highs.setOptionValue("random_seed", 0)
        self.highs.passModel(lp)

    def solve(self) -> tuple[FloatArray, FloatArray]:
        """``(beta, u)``: scaled coefficients (minus the row duals) and the dual point."""
        solved = self.try_solve()
        if solved is None:
            status = self.highs.modelStatusToString(self.highs.getModelStatus())
            raise _solver_failed(status)
        return solved

    def try_solve(self) -> tuple[FloatArray, FloatArray] | None:
        """Like :meth:`solve`, but None when the LP is infeasible (a reduced LP can be)."""
        self.highs.run()
        if self.highs.getModelStatus() != _core.HighsModelStatus.kOptimal:
            return None
        solution = self.highs.getSolution()
        beta = -np.asarray(solution.row_dual, dtype=np.float64)
        return beta, np.asarray(solution.col_value, dtype=np.float64)

    def col_value(self) -> FloatArray:
        return np.asarray(self.highs.getSolution().col_value, dtype=np.float64)

    def add(self, xs: FloatArray, ys: FloatArray, at: FloatArray, rhs: FloatArray) -> None:
        """Add windows as columns, nonbasic at bound ``at`` (±1), with the new right-hand side.

        The windows were globbed at ``u = at``, so moving them into the LP at that bound and
        taking their contribution out of the right-hand side leaves the current point, and the
        current basis, primal feasible: HiGHS resumes from it.
        """
        basis = self.highs.getBasis()
        status = _core.HighsBasisStatus
        a = sparse.csr_matrix(xs)
        k = len(ys)
        self.highs.addCols(
            k,
            -ys,
            np.full(k, -1.0),
            np.full(k, 1.0),
            int(a.nnz),
            a.indptr.astype(np.int32),
            a.indices.astype(np.int32),
            a.data,
        )
        for row in range(self.p):
            self.highs.changeRowBounds(row, float(rhs[row]), float(rhs[row]))
        basis.col_status = list(basis.col_status) + [
            status.kUpper if s > 0 else status.kLower for s in at
        ]
        self.highs.setBasis(basis)


def _solver_failed(status: str) -> DataError:
    # The full dual LP is always feasible (u = 0) and bounded, so failure is numerical trouble,
    # which in practice comes from data spanning too many orders of magnitude.
    return DataError(
        f"HiGHS could not solve the LAR problem ({status}); check the counts and response "
        "times for values many orders of magnitude apart"
    )


def _lar_linprog(xs: FloatArray, ys: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The same dual LP through the public ``linprog`` (no warm start, so no preprocessing)."""
    from scipy.optimize import linprog

    p = xs.shape[1]
    res = linprog(
        -ys,
        A_eq=sparse.csc_matrix(xs.T),
        b_eq=np.zeros(p),
        bounds=(-1.0, 1.0),
        method="highs-ds",
        options={"presolve": False},
    )
    if res.status != 0:
        raise _solver_failed(str(res.message))
    return -np.asarray(res.eqlin.marginals, dtype=np.float64), np.asarray(res.x, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def _summarise(fit: MixFit) -> Summary:
    quantiles = fit.error_quantiles()
    title = f"Transaction-mix model ({fit.method.upper()}, no intercept)"
    nae = "n/a" if math.isnan(fit.nae) else f"{100 * fit.nae:.1f}%"
    known = fit.abs_rel_error[~np.isnan(fit.abs_rel_error)]
    within = f"{100 * float(np.mean(known <= 0.1)):.0f}%" if len(known) else "n/a"
    head = [
        ("windows", f"{fit.n_windows:,}"),
        ("transaction types", f"{len(fit.names)} (rank {fit.rank})"),
        ("NAE = Σ|e|/Σy", nae),
        ("windows within 10%", within),
    ] + [
        (f"|e|/y {round(100 * q)}th percentile", "n/a" if math.isnan(v) else f"{100 * v:.1f}%")
        for q, v in quantiles.items()
    ]
    rows = [(name, format_seconds(float(c))) for name, c in zip(fit.names, fit.coef, strict=True)]

    width = max([len(k) for k, _ in head] + [len(n) for n, _ in rows] + [len("type")])
    lines = [title, "=" * len(title)]
    lines += [f"{k:<{width}}  {v}" for k, v in head]
    lines += ["", f"{'type':<{width}}  service time (s per transaction)"]
    lines += [f"{n:<{width}}  {v}" for n, v in rows]
    lines += [f"note: {note}" for note in fit.notes]

    esc = html.escape
    parts = [
        '<div class="perfsleuth-mixfit">',
        f"<h3>{esc(title)}</h3>",
        "<table><tbody>",
        *(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in head),
        "</tbody></table>",
        "<table><thead><tr><th>type</th><th>service time (s per transaction)</th></tr></thead>",
        "<tbody>",
        *(f"<tr><td>{esc(n)}</td><td>{esc(v)}</td></tr>" for n, v in rows),
        "</tbody></table>",
    ]
    if fit.notes:
        parts += ["<ul>", *(f"<li>{esc(note)}</li>" for note in fit.notes), "</ul>"]
    parts.append("</div>")
    return Summary(text="\n".join(lines), html="\n".join(parts))
