"""Two running sums in one complex running sum: the same bits as each alone."""

from __future__ import annotations

import numpy as np
import pytest

from perfsleuth.stats.sums import paired


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 100_003])
def test_paired_running_sums_are_each_arrays_own(n: int) -> None:
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n) * 1e6
    b = rng.standard_t(2, n) ** 3
    a[::7] = -0.0  # signed zeros keep their sign as in the plain sum
    both = np.cumsum(paired(a, b))
    assert _same_bits(np.ascontiguousarray(both.real), np.cumsum(a))
    assert _same_bits(np.ascontiguousarray(both.imag), np.cumsum(b))
    backwards = np.cumsum(paired(a[::-1], b[::-1]))[::-1]
    assert _same_bits(np.ascontiguousarray(backwards.real), np.cumsum(a[::-1])[::-1].copy())


def test_paired_running_sums_along_either_axis() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((500, 3)), rng.exponential(size=(500, 3))
    for axis in (0, 1):
        both = np.cumsum(paired(a, b), axis=axis)
        assert _same_bits(np.ascontiguousarray(both.real), np.cumsum(a, axis=axis))
        assert _same_bits(np.ascontiguousarray(both.imag), np.cumsum(b, axis=axis))
