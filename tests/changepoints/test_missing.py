"""Missing readings (NaN) in ``find_change_points``: an error by default, dropped on request
with every position still one of the input's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfsleuth.changepoints.kernels.search import find_change_points
from perfsleuth.errors import DataError


def _with_gaps(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.r_[rng.normal(10.0, 1.0, 100), rng.normal(14.0, 1.0, 100)]
    x[160] = 40.0  # a spike
    gaps = np.array([0, 1, 50, 99, 100, 101, 159, 199])
    x[gaps] = np.nan
    return x, gaps


def test_a_nan_is_an_error_naming_its_index_and_the_way_out() -> None:
    x, _ = _with_gaps()
    with pytest.raises(DataError, match=r"NaN at index 0; .*missing='drop'"):
        find_change_points(x)


def test_dropped_readings_leave_every_position_one_of_the_inputs() -> None:
    x, gaps = _with_gaps()
    rows = np.setdiff1d(np.arange(x.size), gaps)
    found = find_change_points(x, missing="drop")
    alone = find_change_points(x[rows])  # the search of the observed readings
    # the shift starts at 100, which is missing like 101: its point is the first reading seen
    assert alone.indices == (96,) and found.indices == (102,) == (rows[96],)
    assert found.n == x.size and found.points[0].stop == x.size
    assert [(s.start, s.stop) for s in found.segments] == [(0, 102), (102, 200)]
    assert found.spikes == (160,) and found.spike_runs[0].index == 160
    assert x[found.spike_runs[0].start] == 40.0
    assert found.fitted is not None and found.fitted.shape == (200, 1)
    assert np.isnan(found.fitted[gaps, 0]).all() and np.isfinite(found.fitted[rows, 0]).all()
    assert np.array_equal(found.fitted[rows], alone.fitted)
    assert found.points[0].mean_after == alone.points[0].mean_after


def test_dropping_rows_of_several_columns_and_the_papers_search() -> None:
    x, _ = _with_gaps()
    both = np.column_stack([x, np.r_[np.zeros(100), np.ones(100)] + np.arange(200) % 2])
    assert find_change_points(both, missing="drop").indices == (102,)
    assert find_change_points(x, missing="drop", robust=False).indices == (102,)


def test_drop_is_only_for_nan() -> None:
    x, _ = _with_gaps()
    x[5] = np.inf
    with pytest.raises(DataError, match="infinite value at index 5"):
        find_change_points(x, missing="drop")
    with pytest.raises(ValueError, match="missing must be"):
        find_change_points([1.0, 2.0], missing="skip")  # type: ignore[arg-type]


def test_nothing_observed_is_no_change() -> None:
    found = find_change_points([np.nan] * 5, missing="drop")
    assert found.indices == () and found.n == 5 and found.segments == ()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=0, max_size=60),
    st.lists(st.booleans(), min_size=60, max_size=60),
)
def test_dropped_rows_map_every_position_back(values: list[float], gap: list[bool]) -> None:
    x = np.array(values, dtype=float)
    x[np.array(gap[: x.size], dtype=bool)] = np.nan
    rows = np.flatnonzero(~np.isnan(x))
    found = find_change_points(x, missing="drop")
    alone = find_change_points(x[rows])
    assert found.n == x.size
    assert found.indices == tuple(int(rows[i]) for i in alone.indices)
    assert found.spikes == tuple(int(rows[i]) for i in alone.spikes)
    if found.segments:  # they tile every row, missing ones included
        assert found.segments[0].start == 0 and found.segments[-1].stop == x.size
        assert all(a.stop == b.start for a, b in itertools.pairwise(found.segments))
