"""Windows aligned to the data: steady stretches of the counters, cut where they change.

Counters are averaged over a window before inference, so a window should hold one state of
the machine: a window that straddles the start of a job averages two workloads into one that
never ran. :func:`steady_windows` finds the stretches where the counters are steady (binary
segmentation of the standardised counters, every counter at once), then cuts each stretch
into windows of at most ``max_size`` samples, of equal length, none shorter than
``min_size``. Windows start at the first sample, not at a wall-clock boundary.

A change is kept when splitting a stretch there removes more squared deviation than
``penalty · k · log(n)`` (k counters, n samples): with counters in units of their noise, a
shift of about one noise unit in every counter over a stretch of a few dozen samples, or a
few units in one; finer changes are noise for the purpose of averaging.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

__all__ = ["noise_scale", "steady_windows"]

Array = npt.NDArray[np.float64]


def noise_scale(x: Array) -> Array:
    """Per column, the noise of a series from its first differences (robust: MAD / √2 × 1.4826,
    so a level shift hardly counts); 0 for a constant column."""
    if len(x) < 3:
        return np.zeros(x.shape[1])
    diff = np.diff(x, axis=0)
    mad = np.median(np.abs(diff - np.median(diff, axis=0)), axis=0)
    out: Array = 1.4826 * mad / math.sqrt(2.0)
    return out


def steady_windows(
    x: Array, *, min_size: int, max_size: int, penalty: float = 2.0
) -> list[tuple[int, int]]:
    """``[start, stop)`` sample ranges covering ``x`` (n samples × k standardised counters):
    steady stretches, each cut into equal windows of at most ``max_size`` samples.

    ``min_size`` is the fewest samples a stretch or window may have (a recording shorter than
    that is one window). Deterministic; O(n² k) at worst, for the few hundred samples a
    counter frame holds per entity."""
    n = len(x)
    if n == 0:
        return []
    min_size = max(int(min_size), 1)
    max_size = max(int(max_size), min_size)
    x = np.asarray(x, dtype=np.float64).reshape(n, -1)
    threshold = penalty * max(x.shape[1], 1) * math.log(max(n, 2))
    breaks = sorted(_split(x, 0, n, min_size, threshold))
    bounds = [0, *breaks, n]
    out: list[tuple[int, int]] = []
    for start, stop in itertools.pairwise(bounds):
        length = stop - start
        parts = max(1, min(math.ceil(length / max_size), length // min_size))
        edges = np.linspace(start, stop, parts + 1).round().astype(int)
        out.extend((int(a), int(b)) for a, b in itertools.pairwise(edges))
    return out


def _split(x: Array, start: int, stop: int, min_size: int, threshold: float) -> list[int]:
    """Binary segmentation of ``x[start:stop]``: the split that removes the most squared
    deviation, kept when that exceeds ``threshold``, then each side again."""
    length = stop - start
    if length < 2 * min_size:
        return []
    part = x[start:stop]
    cumulative = np.cumsum(part, axis=0)
    total = cumulative[-1]
    sizes = np.arange(1, length, dtype=np.float64)[:, None]
    left = cumulative[:-1]
    # squared deviation removed by splitting after each prefix (between-part sum of squares)
    gain = (left / sizes - (total - left) / (length - sizes)) ** 2 * sizes * (length - sizes)
    gain = gain.sum(axis=1) / length
    valid = np.arange(1, length)
    allowed = (valid >= min_size) & (valid <= length - min_size)
    gain = np.where(allowed, gain, -np.inf)
    best = int(np.argmax(gain))
    if not gain[best] > threshold:
        return []
    at = start + best + 1
    return [
        *_split(x, start, at, min_size, threshold),
        at,
        *_split(x, at, stop, min_size, threshold),
    ]
