"""One BLAS thread while perfsleuth's linear algebra runs (perfsleuth.blas), and only then.

On a busy host more BLAS threads only spin (``benchmarks/blas_threads.py``); these tests check
where the limit is in force, not how fast anything is. Every family's detector is checked in
``test_detector_contract.py``; here, the entry points users call directly and the limit itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from perfsleuth import find_change_points, fit_mix_model
from perfsleuth.blas import one_blas_thread
from perfsleuth.changepoints.kernels.search import ChangePoints
from perfsleuth.workload.kernels import MixFit


def blas_threads() -> int:
    """The most threads any loaded BLAS library would use now."""
    return max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")


def _series() -> tuple[Any, ...]:
    rng = np.random.default_rng(3)
    return (np.r_[rng.normal(10, 1, 300), rng.normal(14, 1, 300)],)


def _mix() -> tuple[Any, ...]:
    rng = np.random.default_rng(3)
    counts = rng.poisson(50, (200, 4)).astype(float)
    return counts, counts @ np.array([0.01, 0.02, 0.03, 0.04]) * rng.lognormal(0, 0.1, 200)


@pytest.mark.parametrize(
    ("call", "result", "arguments"),
    [(find_change_points, ChangePoints, _series), (fit_mix_model, MixFit, _mix)],
    ids=["find_change_points", "fit_mix_model"],
)
def test_entry_points_compute_with_one_blas_thread(
    call: Callable[..., Any],
    result: type,
    arguments: Callable[[], tuple[Any, ...]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    built = result.__init__

    def spy(self: Any, *args: Any, **kwargs: Any) -> None:  # the result is made at the end
        seen.append(blas_threads())
        built(self, *args, **kwargs)

    monkeypatch.setattr(result, "__init__", spy)
    with threadpool_limits(limits=2, user_api="blas"):
        call(*arguments())
        after = blas_threads()
    assert seen == [1]
    assert after == 2  # the caller's threads are back


def test_nested_calls_share_the_limit_and_restore_the_callers_threads() -> None:
    seen: list[tuple[str, int]] = []

    @one_blas_thread
    def inner() -> None:
        seen.append(("inner", blas_threads()))

    @one_blas_thread
    def outer() -> None:
        inner()  # leaving it does not lift the outer call's limit
        seen.append(("outer, after inner", blas_threads()))

    with threadpool_limits(limits=2, user_api="blas"):
        outer()
        after = blas_threads()
    assert seen == [("inner", 1), ("outer, after inner", 1)]
    assert after == 2


def test_a_limited_function_stays_itself() -> None:
    def f(x: int) -> int:
        """Doubles."""
        return 2 * x

    limited = one_blas_thread(f)
    assert limited(3) == 6
    assert limited.__doc__ == "Doubles." and limited.__name__ == "f"
    assert one_blas_thread(limited) is limited  # wrapped once
