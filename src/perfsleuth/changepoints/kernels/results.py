"""What a change-point search returns: the splits and verdicts, the change points, segments and
spike runs, and the :class:`ChangePoints` that holds them (frozen; indices are 0-based positions of
the first observation of the new segment)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import grid

FloatArray = NDArray[np.float64]
Scale = Literal["linear", "log"]  # the scale a description is on (step 6)
T = TypeVar("T")


class Later(Sequence[T]):
    """A tuple of ``count`` items that ``build`` makes when first read, then keeps: a search
    drops hundreds of candidates at 10⁵ readings and thousands at 10⁶, and making each a
    :class:`ChangePoint` (its verdict looked up, its means taken) was 7% of a 10⁵-reading
    search (``benchmarks/changepoints.py``), for a list most callers never read. Until then it
    keeps what ``build`` needs (for a search's dropped candidates, the series, for their
    means). It is equal to the tuple of its items, hashes as that tuple, and is pickled as it."""

    __slots__ = ("_build", "_count", "_items")

    def __init__(self, count: int, build: Callable[[], Sequence[T]]):
        self._count = count
        self._build: Callable[[], Sequence[T]] | None = build
        self._items: tuple[T, ...] = ()

    @classmethod
    def joined(cls, *parts: Sequence[T]) -> Later[T]:
        """The items of ``parts`` in order, none of them read until this is."""
        return cls(sum(len(part) for part in parts), lambda: [v for part in parts for v in part])

    def _read(self) -> tuple[T, ...]:
        if self._build is not None:
            self._items, self._build = tuple(self._build()), None  # what it held is freed
        return self._items

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, k: int) -> T: ...
    @overload
    def __getitem__(self, k: slice) -> tuple[T, ...]: ...
    def __getitem__(self, k: int | slice) -> T | tuple[T, ...]:
        return self._read()[k]

    def __iter__(self) -> Iterator[T]:
        return iter(self._read())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Later):
            other = other._read()
        return self._read() == other

    def __hash__(self) -> int:
        return hash(self._read())

    def __repr__(self) -> str:
        return repr(self._read())

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (self._read(),)


@dataclass(frozen=True, slots=True)
class Split:
    """Fisher's optimal 2-partition of one segment.

    ``index`` is the 0-based index (within the segment) of the first observation of the right
    part. ``statistic`` is T = SSQ(whole) / (SSQ(left) + SSQ(right)); the paper's D is
    ``ssq_within``.
    """

    index: int
    n: int
    ssq_whole: float
    ssq_left: float
    ssq_right: float
    statistic: float

    @property
    def ssq_within(self) -> float:
        return self.ssq_left + self.ssq_right


@dataclass(frozen=True, slots=True)
class Assessment:
    """A significance test's verdict ingredients: reject when statistic > critical_value."""

    critical_value: float
    p_value: float  # NaN when the test has no p-value (the paper's fitted curve)


@dataclass(frozen=True, slots=True)
class ChangePoint:
    """One tested candidate.

    ``index`` is the first observation of the new segment. ``mean_before``/``mean_after`` (one
    value per column) are the means of the final segments either side; for a rejected candidate,
    of the two parts of its segment. ``start``/``stop`` bound the segment that was tested and
    ``alpha`` is the level it was tested at (after spending). ``shift`` is the jump of the level
    in the adjusted series (cycle and trend removed; per column) and ``effect``
    the largest ``|shift|`` in noise standard deviations (robust σ of the residuals about the
    segment means). ``spread_before``/``spread_after`` are the standard deviations of the raw
    values in the final segments either side. With ``robust``, ``statistic`` is T of the tested
    segment after its skewness-removing transform.

    ``kind`` is ``"level"`` (the mean jumps) or ``"slope"`` (the growth rate changes, the line
    stays continuous: :mod:`perfsleuth.changepoints.kernels.kinks`). A slope point has
    ``slope_before``/``slope_after`` (per reading, in the series' units), ``shift`` 0,
    ``statistic``/``critical_value`` its z² and the kink table's bar, and ``effect`` how far
    the slope change moves the line over its shorter side, in noise σ. A level and a slope
    point at the same index are a crash where the growth changes (Perron's model C: the level
    jumps and the segments either side each have their own line): there too ``level_at`` and
    ``shift`` are the model's value at the point and its jump, and :attr:`before_after` the
    level just before and after it (a crash of 40 in growth of 2 a reading: the means rose).

    ``scale`` is where the point was found: ``"linear"`` (the series' own values) or
    ``"log"`` (their logarithm, for a positive series growing by a rate: the detector keeps
    the description that explains the values better). On ``"log"`` a level point is a
    relative shift of the growing level: ``level_at`` is the model's value at the point and
    ``shift`` its jump there, both in the series' units, and :attr:`before_after` gives the
    level just before and after the point (not the segment means, which the growth moves);
    a slope point's ``slope_before``/``slope_after`` are growth *rates* per reading (0.02: +2%
    a reading).
    """

    index: int
    statistic: float
    critical_value: float
    p_value: float
    alpha: float
    phi: float
    phi_residual: float
    level: int
    start: int
    stop: int
    mean_before: tuple[float, ...]
    mean_after: tuple[float, ...]
    shift: tuple[float, ...] = ()
    effect: float = math.nan
    spread_before: tuple[float, ...] = ()
    spread_after: tuple[float, ...] = ()
    strength: float = math.nan
    kind: Literal["level", "slope"] = "level"
    slope_before: tuple[float, ...] = ()
    slope_after: tuple[float, ...] = ()
    scale: Scale = "linear"
    level_at: tuple[float, ...] = ()

    @property
    def significant(self) -> bool:
        return self.statistic > self.critical_value

    @property
    def before_after(self) -> tuple[float, float]:
        """What changed, in the first column: the means (a level point) or the growth per
        reading (a slope point); on the log scale and at a break, the level just before and
        after a level point."""
        if self.kind == "slope":
            return self.slope_before[0], self.slope_after[0]
        if self.level_at:
            after, jump = self.level_at[0], self.shift[0]
            before = after - jump
            # a line from 0 (idle readings, then growth): its value there is 0, not rounding
            if abs(before) <= grid.float_sigma(max(abs(after), abs(jump))):
                before = 0.0
            return before, after
        return self.mean_before[0], self.mean_after[0]


@dataclass(frozen=True, slots=True)
class Segment:
    """Observations ``start`` to ``stop - 1`` with their mean (one value per column)."""

    start: int
    stop: int
    mean: tuple[float, ...]

    @property
    def length(self) -> int:
        return self.stop - self.start


DEFAULT_TOP_SPIKES = 3  # spike runs per series reported as findings, the largest


@dataclass(frozen=True, slots=True)
class SpikeRun:
    """Spikes close together: observations ``start`` to ``stop - 1`` hold ``count`` spikes, no
    two consecutive ones more than ``min_size`` apart. ``index`` is the most extreme, ``size``
    its distance from the model in robust noise σ of its segment (on the symmetrised scale, as
    spikes are judged); where residuals are tied (``_scaled_distance``: at least half at one
    value, or a quarter at a lattice's mode), it may be the normal quantile of its tail
    probability, σ of a normal reading as rare."""

    start: int
    stop: int
    index: int
    size: float
    count: int


@dataclass(frozen=True, slots=True)
class ChangePoints:
    """Result of :func:`find_change_points`.

    ``indices`` are sorted 0-based indices, each the first observation of a new segment;
    ``points`` carry the evidence for each, in index order: one point an index, but two at a
    crash where the growth changes, a level and a slope point; ``segments`` cover ``0..n``;
    ``rejected`` holds, for the paper's search (``robust=False``), the last, non-significant
    candidate of every segment that was long enough to test and the significant ones dropped by
    the effect-size floor; for the default search, every candidate it dropped, judged on its
    last segment (for plots and for asking "why not here?"), made when first read
    (:class:`Later`). With ``robust``: ``periods`` are
    the removed cycles (observations), shortest first, and ``period`` the longest of them or
    None, ``spikes`` the observations far from the model (kept in the data; ``outliers`` counts
    them) and ``spike_runs`` the same spikes grouped into runs, largest first, ``trend`` the
    removed slope per observation (per column; 0 when none).
    ``fitted`` (n × dims) is the model in the series' units: segment levels plus trend plus
    cycle (NaN at the rows ``missing="drop"`` left out). ``scale`` is the scale of that model:
    ``"linear"``, or ``"log"`` when a positive one-column series with a trend is better
    described on the logarithm of its values (a growth by a rate: levels are relative,
    ``trend`` is then the growth rate per reading, e^slope − 1, and the cycle multiplies).
    """

    indices: tuple[int, ...]
    points: tuple[ChangePoint, ...]
    segments: tuple[Segment, ...]
    rejected: Sequence[ChangePoint]  # a tuple, or a :class:`Later` one
    n: int
    dims: int
    method: str
    alpha: float
    min_size: int
    robust: bool = False
    min_effect: float = 0.0
    spikes: tuple[int, ...] = ()
    periods: tuple[int, ...] = ()
    trend: tuple[float, ...] = ()
    fitted: FloatArray | None = dataclasses.field(default=None, compare=False, repr=False)
    min_relative_change: float = 0.0
    penalty: float = 0.0
    spike_runs: tuple[SpikeRun, ...] = ()
    scale: Scale = "linear"

    @property
    def period(self) -> int | None:
        """The longest cycle removed (observations), or None."""
        return self.periods[-1] if self.periods else None

    @property
    def outliers(self) -> int:
        """How many spikes the series has (none is clipped: they stay in every mean)."""
        return len(self.spikes)

    def ranked(self) -> tuple[ChangePoint, ...]:
        """The change points, largest effect first."""
        return tuple(sorted(self.points, key=lambda p: (-p.effect, p.index)))

    def notable_spikes(self, top: int = DEFAULT_TOP_SPIKES) -> tuple[SpikeRun, ...]:
        """The ``top`` largest spike runs apart from every change point (none within
        ``min_size`` readings): a step leaves its worst-fitted readings at its edge, and its
        change point already shows them (on NAB 16 of the 42 largest two runs per series)."""
        apart = [
            run
            for run in self.spike_runs
            if not any(run.start - self.min_size <= i <= run.stop - 1 + self.min_size
                       for i in self.indices)
        ]  # fmt: skip
        return tuple(apart[:top])


def _starts(points: Sequence[ChangePoint]) -> tuple[int, ...]:
    """The segment starts of ``points`` (sorted by index): a level and a slope point at one
    reading (a break, :func:`_breaks`) start one segment."""
    return tuple(dict.fromkeys(p.index for p in points))
