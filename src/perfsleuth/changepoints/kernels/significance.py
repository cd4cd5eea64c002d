"""Whether a split is significant: the :class:`SignificanceTest` protocol and its three tests —
:class:`FPATest` (the FPA table of :mod:`.fpa`, the default), :class:`PaperTest` (the paper's
fitted α = .05 curve) and :class:`FTest` (the F distribution the paper shows to be wrong)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from perfsleuth.changepoints.kernels import fpa
from perfsleuth.changepoints.kernels.results import Assessment

FloatArray = NDArray[np.float64]


@runtime_checkable
class SignificanceTest(Protocol):
    """Decides whether a candidate split is a change point.

    ``n`` is the tested segment's length, ``phi`` its lag-1 autocorrelation under H0, ``dims`` the
    number of columns, ``min_size`` the search's smallest part (the null distribution of an
    optimal split depends on the split range).
    """

    @property
    def name(self) -> str: ...

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment: ...


@dataclass(frozen=True, slots=True)
class FPATest:
    """Simulated FPA critical values and p-values (the default); ``table=None`` uses the
    shipped table."""

    table: fpa.FPATable | None = None
    phi_estimated: bool = True  # φ is the tested segment's own estimate (False: φ is known)

    @property
    def name(self) -> str:
        return "fpa"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment:
        est = self.phi_estimated
        if self.table is not None or dims <= 1:
            table = fpa.load_table() if self.table is None else self.table
            return Assessment(
                *table.critical_and_p_value(statistic, n, phi, alpha, min_size, phi_estimated=est)
            )
        # Between tabulated column counts, log(T − 1) and log p are interpolated in 1/k.
        lo = fpa.table_dims(math.floor(dims))
        hi = min((k for k in fpa.DIMS_GRID if k >= dims), default=lo)
        w = 0.0 if hi == lo else (1 / lo - 1 / dims) / (1 / lo - 1 / hi)
        ends = [
            fpa.load_table(k).critical_and_p_value(
                statistic, n, phi, alpha, min_size, phi_estimated=est
            )
            for k in (lo, hi)
        ]
        crit, pval = [c for c, _ in ends], [p for _, p in ends]
        return Assessment(
            1.0 + math.exp((1 - w) * math.log(crit[0] - 1) + w * math.log(crit[1] - 1)),
            _log_mix(pval[0], pval[1], w),
        )

    def assess_many(
        self, requests: Sequence[tuple[float, int, float, float]], *, dims: float, min_size: int
    ) -> list[Assessment]:
        """:meth:`assess` of many (T, n, φ, α), the same verdicts: one table's curves
        interpolated at once (:meth:`fpa.FPATable.critical_and_p_values`)."""
        if self.table is None and dims > 1:
            return [
                self.assess(t, n=n, phi=phi, alpha=alpha, dims=dims, min_size=min_size)
                for t, n, phi, alpha in requests
            ]
        table = fpa.load_table() if self.table is None else self.table
        looked_up = table.critical_and_p_values(
            requests, min_size, phi_estimated=self.phi_estimated
        )
        return [Assessment(*verdict) for verdict in looked_up]


def _assessed(
    test: SignificanceTest,
    requests: Sequence[tuple[float, int, float, float]],
    dims: float,
    min_size: int,
) -> list[Assessment]:
    """``test``'s verdicts on many (T, n, φ, α): at once where the test can look them up so
    (the FPA table's), else one by one."""
    if isinstance(test, FPATest):
        return test.assess_many(requests, dims=dims, min_size=min_size)
    return [
        test.assess(t, n=n, phi=phi, alpha=alpha, dims=dims, min_size=min_size)
        for t, n, phi, alpha in requests
    ]


def _log_mix(a: float, b: float, w: float) -> float:
    if a <= 0.0 or b <= 0.0:
        return (1 - w) * a + w * b
    return math.exp((1 - w) * math.log(a) + w * math.log(b))


@dataclass(frozen=True, slots=True)
class PaperTest:
    """The paper's fitted curve, eq. (8): α = .05 only, no p-value, unrestricted split range."""

    @property
    def name(self) -> str:
        return "paper"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment:
        if not math.isclose(alpha, 0.05):
            raise ValueError(
                f"the paper's critical values are for alpha = 0.05 only (asked {alpha:g}); "
                "use alpha=0.05 and alpha_spending='none' with method='paper'"
            )
        return Assessment(fpa.paper_critical_value(n, phi), math.nan)


@dataclass(frozen=True, slots=True)
class FTest:
    """(n − 2)(T − 1) ~ F(d, d(n − 2)): the paper's straw man, far too liberal here."""

    @property
    def name(self) -> str:
        return "f"

    def assess(
        self, statistic: float, *, n: int, phi: float, alpha: float, dims: float, min_size: int
    ) -> Assessment:
        return Assessment(
            fpa.f_critical_value(n, alpha, dims=round(dims)),
            fpa.f_p_value(statistic, n, dims=round(dims)),
        )


_TESTS: dict[str, SignificanceTest] = {"fpa": FPATest(), "paper": PaperTest(), "f": FTest()}
