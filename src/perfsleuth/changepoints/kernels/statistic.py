"""The statistic and its noise measures: the optimal 2-partition and the paper's T from prefix
sums, the lag-1 autocorrelations the test looks φ up with, the Yeo–Johnson transform that takes
skewness out before T is judged, and the small segment helpers every stage uses (design notes:
:mod:`.search`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from perfsleuth.changepoints.kernels import grid
from perfsleuth.changepoints.kernels.results import Split
from perfsleuth.errors import DataError, NotEnoughDataError
from perfsleuth.stats import robust as robust_mod
from perfsleuth.stats.sums import paired

FloatArray = NDArray[np.float64]
_SplitIndex = int | NDArray[np.intp]  # one split's, or many splits' at once

_TIE = 1e-9  # relative tolerance under which two splits count as equally good


def _as_columns(values: ArrayLike, what: str = "values", allow_nan: bool = False) -> FloatArray:
    """Validated float64 array of shape (n, k): 1-D input becomes one column. ``allow_nan``:
    NaN (a missing reading) passes; ±inf never does."""
    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{what} must be numeric: {exc}") from exc
    if x.ndim == 1:
        x = x[:, None]
    elif x.ndim != 2:
        raise DataError(f"{what} must be 1-D (one series) or 2-D (n × k), got {x.ndim}-D")
    if x.shape[1] == 0:
        raise DataError(f"{what} has no columns")
    bad = ~np.isfinite(x)
    if allow_nan:
        bad &= ~np.isnan(x)
    if bad.any():
        row, col = (int(v) for v in np.argwhere(bad)[0])
        kind = "NaN" if math.isnan(x[row, col]) else "an infinite value"
        where = f"index {row}" if x.shape[1] == 1 else f"row {row}, column {col}"
        hint = " (or pass missing='drop')" if kind == "NaN" and what == "values" else ""
        raise DataError(
            f"{what} contain {kind} at {where}; drop or fill missing values first{hint}"
        )
    return x


def _centre(x: FloatArray) -> FloatArray:
    # Subtracting the first row first keeps constant columns exactly zero (a mean of n copies
    # of 0.1 is not exactly 0.1), then centring makes the prefix sums small.
    xc: FloatArray = x - x[0]
    xc -= xc.mean(axis=0)
    return xc


def _ssq(part: FloatArray) -> float:
    d = part - part.mean(axis=0)
    return float(np.einsum("ij,ij->", d, d))


def _ratio(whole: float, within: float) -> float:
    if whole <= 0.0:
        return 1.0  # constant segment: no evidence of anything
    if within <= 0.0:
        return math.inf  # both parts constant, the whole is not: a perfect step
    return whole / within


def _paper_terms(
    sums: tuple[FloatArray, FloatArray, FloatArray], a: _SplitIndex, i: _SplitIndex, b: _SplitIndex
) -> tuple[Any, Any, Any]:
    """The paper's sums of squares about [a, b)'s mean (whole) and about each part's at ``i``
    (within), and the numerator of the segment's lag-1 autocorrelation under "no change", from
    the prefix sums of one column: scalars for int indices, arrays for index arrays (the same
    operations, so the same bits)."""
    ps, ps2, lag = sums
    length = b - a
    total = ps[b, 0] - ps[a, 0]
    mean = total / length
    whole = ps2[b, 0] - ps2[a, 0] - total * mean
    left = ps[i, 0] - ps[a, 0]
    right = total - left
    within = whole - (left * left / (i - a) + right * right / (b - i) - total * mean)
    num = (
        lag[b - 1, 0] - lag[a, 0]
        - mean * ((ps[b - 1, 0] - ps[a, 0]) + (ps[b, 0] - ps[a + 1, 0]))
        + (length - 1) * mean * mean
    )  # fmt: skip
    return whole, within, num


def _paper_statistics_1d(
    sums: tuple[FloatArray, FloatArray, FloatArray],
    a: NDArray[np.intp],
    i: NDArray[np.intp],
    b: NDArray[np.intp],
) -> tuple[FloatArray, FloatArray]:
    """``_Round.paper_statistic`` of one column at many splits at once: the paper's T at
    each ``i`` of [a, b) and the segment's lag-1 autocorrelation under "no change"."""
    whole, within, num = _paper_terms(sums, a, i, b)
    positive = whole > 0
    phi = np.where(positive, num / np.where(positive, whole, 1.0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(positive, np.where(within > 0, whole / within, math.inf), 1.0)  # _ratio
    return t, phi


def _partition(xc: FloatArray, min_size: int) -> Split:
    """Optimal split of centred (n, k) data; the caller guarantees n >= 2 * min_size."""
    n = xc.shape[0]
    lo, hi = min_size, n - min_size  # allowed values of k = size of the left part
    s = np.cumsum(xc[:hi], axis=0)[lo - 1 :]  # s[i] = sum of the first lo + i rows
    k = np.arange(lo, hi + 1, dtype=np.float64)
    between = np.einsum("ij,ij->i", s, s) * (n / (k * (n - k)))
    best = float(between.max())
    offset = int(np.argmax(between >= best * (1.0 - _TIE))) if best > 0.0 else 0
    index = lo + offset
    whole = float(np.einsum("ij,ij->", xc, xc))
    left, right = _ssq(xc[:index]), _ssq(xc[index:])
    return Split(index, n, whole, left, right, _ratio(whole, left + right))


def two_partition(x: ArrayLike, *, min_size: int = 1) -> Split:
    """Fisher's optimal 2-partition of ``x`` (minimum total within-part SSQ), in O(n).

    ``x`` is 1-D, or 2-D (n × k) with the SSQs summed over columns — columns are used as given,
    so put them on a common scale first (:func:`find_change_points` does). Both parts have at
    least ``min_size`` observations.

    >>> s = two_partition([95, 105, 510, 490])
    >>> s.index, s.ssq_within, s.statistic
    (2, 250.0, 641.0)
    """
    _check_min_size(min_size)
    data = _as_columns(x)
    n = data.shape[0]
    if n < max(2 * min_size, 2):
        raise NotEnoughDataError(
            f"cannot split {n} observations into two parts of at least {min_size}"
        )
    return _partition(_centre(data), min_size)


_JUMP_TAIL_INDEX: float | None = 3.0  # tail index the lone-jump test is calibrated for
_JUMP_SAMPLE = 16  # other moves the lone-jump test looks at before all of them


def _lone_jump(segment: FloatArray, at: int, alpha: float) -> bool:
    """Whether the step into ``segment[at]`` is the segment's one outsized move: its first
    difference, about their median, at least ``alpha ** (-1 / 3)`` times every other one.

    A random walk explains any shift of its segment means (the paper's T, tested at the
    segment's lag-1 autocorrelation near 1, is never significant), but not a single move
    many times its others: a level shift is one difference, a spike two of opposite signs.
    For independent moves with a tail no heavier than a power law of index 3 (the "cubic
    law" of price returns, heavier than Gaussian or exponential noise), the largest of them
    exceeds c times the next largest with probability at most c⁻³, whatever the scale and
    however many there are: so c = α^(−1/3) (2.7 at α = .05) keeps the level."""
    if _JUMP_TAIL_INDEX is None or at < 1 or segment.size < 4:
        return False
    c = alpha ** (-1.0 / _JUMP_TAIL_INDEX)
    # Quick necessary condition from a few other moves u (every |u − m| ≤ |jump − m| / c, m
    # the median): c · range(u) / 2 ≤ |jump − m| ≤ min |jump − u| / (1 − 1/c). Most
    # candidates of long series fail it, without the O(length) median.
    step = segment[at] - segment[at - 1]
    t = np.arange(0, segment.size - 1, max(1, segment.size // _JUMP_SAMPLE))
    sample = segment[t[t != at - 1] + 1] - segment[t[t != at - 1]]
    if sample.size >= 2:
        nearest = float(np.min(np.abs(step - sample)))
        if c * float(np.ptp(sample)) / 2 > nearest / (1.0 - 1.0 / c):
            return False
    d = np.diff(segment)
    # (np.median's value by selection: its introselect took 1.2 of a 10⁵-reading search's
    # 170 ms here, each of three transforms looking for a lone jump to align)
    dev = np.abs(d - robust_mod.median(d))
    jump = float(dev[at - 1])
    dev[at - 1] = 0.0
    return jump > 0 and jump >= c * float(dev.max())


_SYMMETRISE_FIT_POINTS = 4096  # λ is fitted on at most about this many evenly spaced points
_LAMBDA_MIN, _LAMBDA_MAX = -1.0, 3.0  # Yeo–Johnson λ: no stronger than a reciprocal on either tail
_ALIGNED_JUMP_ALPHA = 0.05  # level of the lone jump whose sides λ is fitted aligned (default α)
_TREND_T = 3.0  # |t| of a within-segment slope above which the stretch trends (step 6's bar)


def _symmetrised(
    xc: FloatArray, unit: Callable[[FloatArray, int], float] | None = None
) -> FloatArray:
    """Per column, the Yeo–Johnson power transform with λ fitted by maximum likelihood, centred
    and scaled back to the column's standard deviation.

    The column is first standardised by its median and its typical spread (``unit(column,
    step)``, default :func:`_typical_spread`; so the result does not depend on the series'
    units or offset; `benchmarks/changepoints_fragments.py` tries other units).
    For Gaussian noise the fitted λ is ≈ 1 and the transform nearly the identity, so the
    Gaussian FPA table still applies; for right-skewed
    noise (response times, queue lengths) it shortens the long tail that the optimal split
    otherwise cuts off as a "change" (module docstring, "Skewed noise"). Being smooth and
    monotone it keeps the size of a shift, unlike ranks, whose T cannot exceed ≈ 2.75 however
    large the step (below the critical value in persistent noise). Keeping each column's
    standard deviation keeps the weights the joint search gives the columns.
    """
    unit = unit or _typical_spread
    out = np.zeros_like(xc)
    step = max(1, xc.shape[0] // _SYMMETRISE_FIT_POINTS)
    for j in range(xc.shape[1]):
        column = xc[:, j]
        spread = float(np.std(column))
        if spread <= 0.0 or not np.any(column != column[0]):
            continue  # constant: stays exactly zero
        z = (column - robust_mod.median(column)) / (unit(column, step) or spread)
        # For λ < 0 the transform squeezes everything above the median under a ceiling of
        # 1/|λ| and stretches what lies below: fitted λ = −10 on a latency series with bursts
        # of slow queries, small moves among its fast values became two false change points;
        # fitted λ = −3 on weekly case counts of 0–3, an outbreak of 14–47 fitted under the
        # ceiling. So λ stops at the reciprocal (−1), the end of Tukey's ladder of powers,
        # and at its mirror image on the other tail (3).
        fit = _without_lone_jump(z)[::step]
        lam = min(max(_yeojohnson_lambda(fit), _LAMBDA_MIN), _LAMBDA_MAX)
        y = _yeojohnson(z, lam)
        y -= y.mean()
        size = float(np.std(y))
        if size > 0.0 and math.isfinite(size):
            out[:, j] = y * (spread / size)
        else:
            out[:, j] = column
    return out


def _without_lone_jump(z: FloatArray) -> FloatArray:
    """``z`` with the two sides of its one outsized move at their common mean, where it has
    one (:func:`_lone_jump` at ``_ALIGNED_JUMP_ALPHA``), the move is its best split (the step
    whose two levels make the mixture) and each side is level noise (its own slope's |t| at
    most ``_TREND_T``); else ``z`` itself.

    λ is fitted to the noise's skew, not to a step's: the two levels of a step are a mixture
    that λ reads as skew, and the transform then squeezes the step. 8 σ over the last 15 of
    600 readings of AR(1) noise (φ .8), the newest readings where an operator looks first,
    was found in .05 of series, now .54 (`changepoints_short_noise.py --at .975`). A busy
    period of M/M/1 response times builds up over several moves and is no lone jump, so
    their skew still tells it from a step (false positives the same in 11 of 12 cells, one
    fewer in the twelfth). A side that trends (a line, a growth) is no level noise: without
    that gate, of 5,000 pieced series (`changepoints_pieced.py`) 248 got worse and 145
    better, lines bent into staircases; with it, 13 and 20."""
    if z.size < 4:
        return z
    at = int(np.argmax(np.abs(np.diff(z)))) + 1  # the lone jump's test is cheap to fail
    if not _lone_jump(z, at, _ALIGNED_JUMP_ALPHA) or _partition(_centre(z[:, None]), 1).index != at:
        return z
    sides = (z[:at], z[at:])
    if any(abs(robust_mod.within_slope(side, [])[1]) > _TREND_T for side in sides):
        return z
    mean = float(z.mean())
    return np.concatenate([side - (float(side.mean()) - mean) for side in sides])


def _yeojohnson_lambda(x: FloatArray) -> float:
    """``scipy.stats.yeojohnson_normmax(x)`` (scipy 1.17), the same bits in an eighth of the
    time: the same bounds and bounded minimisation of the same negative log-likelihood,
    whose parts that do not depend on λ are computed once (scipy's goes through its array-API
    and NaN-policy wrappers every evaluation: 4.4 ms of a search's fit on 4,096 points, six
    times a 10⁵ search). A test pins it to scipy's."""
    from scipy import optimize

    with np.errstate(invalid="ignore"):
        if not np.all(np.isfinite(x)):
            raise ValueError("Yeo-Johnson input must be finite.")
        if np.all(x == 0):
            return 1.0
        info = np.finfo(np.float64)
        # scipy's bounds: the transform of 20 times the largest value stays within half the
        # float exponent range
        log1p_max_x = np.log1p(20 * np.max(np.abs(x)))
        log_eps = np.log(info.eps)
        lb = (np.log(info.tiny) - log_eps) / 2 / log1p_max_x
        ub = (np.log(info.max) + log_eps) / 2 / log1p_max_x
        if np.all(x < 0):
            lb, ub = 2 - ub, 2 - lb
        elif np.any(x < 0):
            lb, ub = max(2 - ub, lb), min(2 - lb, ub)
        # each side by its positions, found once: a mask's scatter mispredicts a branch at
        # every other reading, in each of the fit's evaluations (4,096 readings: .90 → .65 ms)
        pos = x >= 0
        plus, minus = np.flatnonzero(pos), np.flatnonzero(~pos)
        up, down = np.log1p(x[plus]), np.log1p(-x[minus])
        jacobian = np.sum(np.sign(x) * np.log1p(np.abs(x)), axis=0)
        n = x.shape[0]

        def negative_llf(lmb: float) -> FloatArray:
            y = np.empty_like(x, dtype=np.float64)  # (every reading is on one side)
            y[plus] = up if abs(lmb) < info.eps else np.expm1(lmb * up) / lmb
            y[minus] = -np.expm1((2 - lmb) * down) / (2 - lmb) if abs(lmb - 2) > info.eps else -down
            sigma = np.var(y, axis=0)
            log_sigma = np.log(sigma) if sigma >= info.smallest_normal else -np.inf
            llf = np.asarray(-n / 2 * log_sigma + (lmb - 1) * jacobian)
            llf[np.isinf(llf)] = -np.inf
            return -llf

        return float(optimize.fminbound(negative_llf, lb, ub, xtol=1.48e-08))


def _yeojohnson(x: FloatArray, lam: float) -> FloatArray:
    """``scipy.stats.yeojohnson(x, lmbda=lam)`` (scipy 1.17) of a float column: the same
    operations, without the array-API indexing wrappers that cost half its time (a search
    transforms every column once; a test pins it to scipy's)."""
    eps = np.finfo(np.float64).eps
    out = np.empty_like(x, dtype=np.float64)  # (every reading is on one side)
    # each side gathered and written back by its positions, not by its mask: the signs of
    # noise about its median alternate at random, and a mask's gather or scatter mispredicts
    # a branch at every other reading (10⁶ readings: some 5 ms each of the four; 30 → 16 ms)
    pos = x >= 0
    up, down = np.flatnonzero(pos), np.flatnonzero(~pos)
    if abs(lam) < eps:
        out[up] = np.log1p(x[up])
    else:  # ((x + 1) ** λ − 1) / λ, stably
        out[up] = np.expm1(lam * np.log1p(x[up])) / lam
    if abs(lam - 2) > eps:
        out[down] = -np.expm1((2 - lam) * np.log1p(-x[down])) / (2 - lam)
    else:
        out[down] = -np.log1p(-x[down])
    return out


_GUARD_SUBSAMPLES = 5  # interleaved subsamples whose median spread no single reading sets
_GUARD_MIN_READINGS = 8  # readings each of them needs


def _typical_spread(column: FloatArray, step: int) -> float:
    """The median of the standard deviations of the ``step`` interleaved subsamples
    ``column[j::step]`` (λ is fitted on one of them): the spread of ``column`` when it has no
    gross outliers, but not set by a few values, which sit in a few subsamples (median of
    means, applied to the variance). The plain standard deviation of a 10⁶-point latency
    series was 799 MADs, set by two values 7·10⁵ times the median; in that unit the bulk spans
    ±0.001, where every admissible λ is linear, and 530 ordinary spikes became segments.

    Under five subsamples the median is no guard (of one, it is the plain standard deviation):
    one reading 3,000 σ up among 200 set it, the bulk spanned a sliver, and the reading, some
    200 bulk σ after the transform, hid a step of 4 σ beside it in 40 of 40 series
    (`benchmarks/changepoints_gross_spike.py`). So the unit is at most twice the median over
    five subsamples: it bound 2 of the 213 such transforms the public corpora's searches fit,
    and from five subsamples on the median is never above it. Capped, not switched, the unit
    stays continuous in the readings."""
    spread = _median_subsample_std(column, step)
    count = min(max(step, _GUARD_SUBSAMPLES), column.size // _GUARD_MIN_READINGS)
    if count <= step or count < 3:
        return spread
    guard = _median_subsample_std(column, count)
    return min(spread, 2.0 * guard)


def _median_subsample_std(column: FloatArray, count: int) -> float:
    """The median of the standard deviations of ``column[j::count]``, j < ``count`` (the
    readings past the last whole round left out)."""
    if count == 1:
        return float(np.std(column))
    blocks = column[: column.size // count * count].reshape(-1, count)
    return float(np.median(np.std(blocks, axis=0)))


def _lag1_columns(xc: FloatArray) -> FloatArray:
    num = np.einsum("ij,ij->j", xc[1:], xc[:-1])
    den = np.einsum("ij,ij->j", xc, xc)
    out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


_PHI_BOUND_SE = 2.0  # standard errors added to the difference-based φ (a one-sided 97.7% bound)


def _difference_phi_bound(xc: FloatArray) -> FloatArray:
    """Per column, an upper confidence bound for φ that level shifts do not inflate.

    For AR(1) noise the first differences have lag-1 autocorrelation ``−(1 − φ)/2``, so
    ``φ = 1 + 2 ρ_d``; a shift is a single large difference, winsorised away (5 robust σ)
    before ρ_d is estimated. Its standard error is about ``1.41/√n`` (Bartlett), twice that of
    the usual estimate, so the bound adds two of them: the test uses ``min(r, bound)``, which
    under no change is the usual estimate r except in the ~2% of series where the bound falls
    below it, and which a large shift, which drives r towards 1, cannot inflate.
    """
    d = np.diff(xc, axis=0)
    if d.shape[0] < 3:
        return np.ones(xc.shape[1])
    centre = np.median(d, axis=0)
    spread = np.array([robust_mod.robust_scale(d[:, j]) for j in range(d.shape[1])])
    d = np.clip(d, centre - 5 * spread, centre + 5 * spread)
    d = d - d.mean(axis=0)
    num = np.einsum("ij,ij->j", d[1:], d[:-1])
    den = np.einsum("ij,ij->j", d, d)
    rho = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    bound: FloatArray = 1.0 + 2.0 * rho + _PHI_BOUND_SE * 1.41 / math.sqrt(xc.shape[0])
    return bound


def _residual_lag1_columns(xc: FloatArray, index: int) -> FloatArray:
    e = np.empty_like(xc)
    e[:index] = xc[:index] - xc[:index].mean(axis=0)
    e[index:] = xc[index:] - xc[index:].mean(axis=0)
    num = np.einsum("ij,ij->j", e[1:], e[:-1]) - e[index] * e[index - 1]  # not across the split
    den = np.einsum("ij,ij->j", e, e)
    out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return out


def lag1_autocorrelation(x: ArrayLike) -> float:
    """Sample lag-1 autocorrelation ``Σ (x_t − x̄)(x_{t+1} − x̄) / Σ (x_t − x̄)²`` of a 1-D series.

    A constant series gives 0. This is the estimate under "no change"; a level shift inflates it.
    """
    data = _as_columns(x)
    if data.shape[1] != 1:
        raise ValueError("lag1_autocorrelation takes a 1-D series")
    if data.shape[0] < 2:
        return 0.0
    return float(_lag1_columns(_centre(data))[0])


def residual_lag1_autocorrelation(x: ArrayLike, split: int) -> float:
    """Lag-1 autocorrelation of the residuals about the means of ``x[:split]`` and ``x[split:]``.

    The product straddling the split is left out, so a level shift at ``split`` does not inflate
    it. Under no change it is biased low at the optimal split (see the module docstring).
    """
    data = _as_columns(x)
    if data.shape[1] != 1:
        raise ValueError("residual_lag1_autocorrelation takes a 1-D series")
    if not 0 < split < data.shape[0]:
        raise ValueError(f"split must be in 1..{data.shape[0] - 1}, got {split}")
    return float(_residual_lag1_columns(_centre(data), split)[0])


def _effective_columns(xc: FloatArray) -> float:
    """How many independent columns the centred segment is worth: ``(tr Ω)² / tr(Ω²)``.

    Ω is the columns' covariance with each column's long-run variance factor
    ``√((1 + r) / (1 − r))`` applied (r its lag-1 autocorrelation), so correlated columns, or
    one column much more persistent than the others, count as fewer. Between 1 and the number
    of columns.
    """
    n, k = xc.shape
    cov = xc.T @ xc / n
    var = np.diag(cov)
    if not np.all(var > 0):
        return float(max(1, int(np.count_nonzero(var > 0))))
    r = np.clip(np.einsum("ij,ij->j", xc[1:], xc[:-1]) / (n * var), -0.9, 0.99)
    f = np.sqrt((1 + r) / (1 - r))
    omega = cov * np.outer(f, f)
    ratio = float(np.trace(omega) ** 2 / np.sum(omega * omega))
    return min(float(k), max(1.0, ratio))


def _noise_scale(x: FloatArray) -> FloatArray:
    """Per-column noise scale from first differences, robust to level shifts."""
    d = np.diff(x, axis=0)
    mad = np.median(np.abs(d - np.median(d, axis=0)), axis=0) * (1.4826 / math.sqrt(2.0))
    rms = np.sqrt(np.mean(d * d, axis=0) / 2.0)
    scale = np.where(mad > 0, mad, rms)  # mostly-flat columns (e.g. a clean step) have MAD 0
    return np.where(scale > 0, scale, 1.0)  # constant columns contribute nothing anyway


def _moves(x: FloatArray, magnitude: FloatArray) -> NDArray[np.intp]:
    """The rows of ``x`` (n × dims) at which some column moves from the row before by more than
    float rounding at ``magnitude`` (per column), in order."""
    tolerance = np.array([grid.float_sigma(float(v)) for v in magnitude])
    return np.flatnonzero(np.any(np.abs(np.diff(x, axis=0)) > tolerance, axis=1)) + 1


def _still_until(moves: NDArray[np.intp], at: list[int], n: int) -> list[int]:
    """For each row in ``at``, the end (exclusive) of the run of unmoving rows it starts: the
    first of ``moves`` after it, or ``n``."""
    if moves.size == 0:
        return [n] * len(at)
    after = np.searchsorted(moves, np.array(at), side="right")
    # (no copy of ``moves`` with n appended: the pruning asks every round, 10⁶ rows each)
    found: list[int] = np.where(
        after < moves.size, moves[np.minimum(after, moves.size - 1)], n
    ).tolist()
    return found


def _moving_between(moves: NDArray[np.intp], lo: int, hi: int) -> NDArray[np.intp]:
    """The rows of ``moves`` (sorted) strictly between ``lo`` and ``hi``."""
    return moves[np.searchsorted(moves, lo, side="right") : np.searchsorted(moves, hi)]


def _check_min_size(min_size: int) -> None:
    if isinstance(min_size, bool) or not isinstance(min_size, int | np.integer):
        raise ValueError(f"min_size must be an integer, got {min_size!r}")
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")


def _in_units(values: FloatArray, unit: FloatArray | None) -> tuple[float, ...]:
    """Per-column ``values`` of the rescaled copy back in the series' units (``_rescaled``), as
    Python floats (a product past the float range is inf, not a numpy warning)."""
    own = values.tolist()
    return tuple(own if unit is None else (u * v for u, v in zip(unit.tolist(), own, strict=True)))


def _spread(part: FloatArray, unit: FloatArray) -> tuple[float, ...]:
    return _in_units(part.std(axis=0), unit)


def _mean(part: FloatArray, unit: FloatArray | None = None) -> tuple[float, ...]:
    """Column means of ``part`` (not empty), times ``unit`` per column (the means of values
    near the float range are taken on their rescaled copy: their sum would overflow). The sum
    over the count is ``mean``'s own arithmetic, without its overhead: a search reports
    hundreds of dropped candidates, two means each."""
    return _in_units(part.sum(axis=0) / part.shape[0], unit)


def _segment_means(x: FloatArray, cuts: list[int]) -> FloatArray:
    """Each observation's segment mean (segments bounded by ``cuts``)."""
    bounds = [0, *cuts, x.shape[0]]
    out: FloatArray = np.repeat(_means(x, bounds), np.diff(bounds), axis=0)
    return out


def _segment_medians(column: FloatArray, bounds: list[int]) -> FloatArray:
    """The median of each segment ``column[a:b]`` (``bounds``: 0 … n, no segment empty), by
    one sort of the values within their segments (a long series' first pruning measures tens
    of thousands of segments: one ``median`` call each took 0.7 s at 10⁶ readings, this 0.09)."""
    edges = np.asarray(bounds)
    lengths = np.diff(edges)
    ordered = column[np.lexsort((column, np.repeat(np.arange(lengths.size), lengths)))]
    middle: FloatArray = (
        ordered[edges[:-1] + (lengths - 1) // 2] + ordered[edges[:-1] + lengths // 2]
    ) / 2
    return middle


def _means(x: FloatArray, bounds: list[int]) -> FloatArray:
    """The means (a row per segment) of ``x[a:b]`` for consecutive ``a, b`` of ``bounds``, in
    one pass (a long series' first pruning measures about ten thousand segments, three times;
    one ``mean`` call each cost 1.5 µs). The sums are sequential, not pairwise as ``mean``'s:
    they differ in the last bits."""
    pairs = list(itertools.pairwise(bounds))
    if any(b <= a for a, b in pairs):  # an empty segment: its mean is NaN, as numpy warns
        return np.array([x[a:b].mean(axis=0) for a, b in pairs])
    edges = np.asarray(bounds)
    sums: FloatArray = np.add.reduceat(x, edges[:-1], axis=0)
    return sums / np.diff(edges)[:, None]


def _prefixes(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The cumulative sums of ``x`` and of ``y`` (n × d each) along the rows, from a row of
    0, in one running sum (``sums.paired``), each copied out whole (strided halves would slow
    the seeded splits' gathers)."""
    both = np.empty((x.shape[0] + 1, x.shape[1]), dtype=np.complex128)  # (not zeros: calloc)
    both[0] = 0.0
    np.cumsum(paired(x, y), axis=0, out=both[1:])
    return np.array(both.real), np.array(both.imag)
