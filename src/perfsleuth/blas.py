"""One BLAS thread while perfsleuth's own linear algebra runs: :func:`one_blas_thread`.

Why: perfsleuth's least-squares problems are small (windows × types, a series' segments), and
on a busy host OpenBLAS's threads spin while they wait for one another — the spin is CPU and
buys nothing. With a co-tenant on this 2-core machine (``benchmarks/blas_threads.py``,
``docs/architecture.md``) the segments detector took up to 14.6 s of CPU with two threads and
1.2 s with one, ``fit_mix_model`` (LAR and OLS, 9,130 × 96) up to 3.4 s and 0.46 s; on a quiet
host the second thread bought no wall time. One thread also gives the same bits on every
machine, whatever its number of CPUs.

Every detector's ``analyse`` (:class:`perfsleuth.analysis.DetectorMixin`) and the entry points
users call directly (``find_change_points``, ``fit_mix_model``) run under it; the limit is
process-wide only while one of them runs (nested calls share it), so a user's own numpy keeps
its threads. Like threadpoolctl, it is meant for calls from the main thread, where every
perfsleuth command runs its detectors: this OpenBLAS (0.3.30/0.3.31, pthreads) ignored a limit
set from another thread once the main thread had set and restored one. This module imports
nothing heavy: threadpoolctl and numpy load at the first limited call.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["one_blas_thread"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _controller() -> Any:
    """threadpoolctl's view of the BLAS libraries perfsleuth calls: numpy's, and scipy's once
    scipy is in use (numpy and scipy each carry their own OpenBLAS; importing scipy here would
    cost the commands that never use it, such as ``bottleneck infer``)."""
    return _controller_of("scipy" in sys.modules)


@functools.cache
def _controller_of(with_scipy: bool) -> Any:
    """The controller, found once per case (finding the libraries takes 2 ms)."""
    import numpy  # noqa: F401 -- loads numpy's BLAS

    if with_scipy:
        import scipy.linalg  # noqa: F401 -- loads scipy's BLAS
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class _SharedLimit:
    """One BLAS thread while any limited call runs, in any thread; the threads restored when
    the last one ends (BLAS threads are per process, so the limit is counted, not nested)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._limiter: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                self._limiter = _controller().limit(limits=1, user_api="blas")
            self._running += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                self._limiter.restore_original_limits()
                self._limiter = None


_LIMIT = _SharedLimit()


def one_blas_thread(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` run with one BLAS thread (the caller's threads restored when the last limited
    call ends); see the module docstring for why."""
    if getattr(fn, "__one_blas_thread__", False):
        return fn

    @functools.wraps(fn)
    def limited(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with _LIMIT:
            return fn(*args, **kwargs)

    limited.__one_blas_thread__ = True  # type: ignore[attr-defined]
    return limited
