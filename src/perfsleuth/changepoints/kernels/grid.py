"""The resolution a series was recorded at: the grid its values lie on.

Monitoring data is often quantised — disk usage in whole GB, memory in MB, counts, a
percentage to one decimal. Values recorded on a grid of step q carry a rounding error of up
to q/2, σ = q/√12 for a quantity that moves through the grid: no noise can be measured finer
than that. A slowly growing quantity recorded coarser than its noise is an exact staircase,
whose residuals about its steps are exactly 0; without this floor every step of it was
infinitely significant and the staircase fitted better than the line it is (a line rising 1
unit per 10 readings, rounded: 20 level points).

The grid is a decimal one: every value an integer multiple of q, q = g / 10^k with g the
greatest common divisor of the values scaled by the smallest 10^k (k ≤ 6) that makes them
integers up to float rounding. Real-valued data has none (q = 0), found on the first few
values, so it costs nothing measurable at 10⁶ readings.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

_DECIMALS = 6  # most decimal places a grid may have (a percentage to 6 decimals)
_EXACT = 2.0**52  # beyond this, scaled values are integers whatever they were
_TOLERANCE = 1e-12  # relative distance from an integer that float rounding explains
_SAMPLE = 256  # values tried first: real-valued data fails on them
_FLOAT_DIGITS_LOST = 1e-12  # of the values' magnitude: noise finer than this is float rounding


def float_sigma(magnitude: float) -> float:
    """The finest noise values of this ``magnitude`` (their largest absolute value) can show:
    a double holds 15–16 significant digits, and the arithmetic of any pipeline (a sum, a
    rate, a unit conversion) loses the last few (a cumulative sum of 600 readings of 0.3 is
    off its line by 11 ε a reading). Finer "noise" is float rounding: about an exact line
    (0.1 a reading) it made 103 kinks, each ~90 of its σ."""
    return _FLOAT_DIGITS_LOST * magnitude


def grid_step(column: FloatArray) -> float:
    """The largest q such that every value of ``column`` is an integer multiple of q (up to
    float rounding), among decimal steps g / 10^k; 0 when there is none (real-valued data,
    a constant zero column)."""
    for k in range(_DECIMALS + 1):
        scale = 10.0**k
        if _integers(column[:_SAMPLE] * scale) and _integers(scaled := column * scale):
            # the sample's divisor first: when it is 1 (most integer data), so is the whole's
            divisor = _gcd(scaled[:_SAMPLE])
            if divisor != 1:
                divisor = _gcd(scaled)
            return divisor / scale if divisor else 0.0
    return 0.0


def rounding_sigma(x: FloatArray) -> FloatArray:
    """Per column of ``x`` (n × k), the σ of its rounding error, q/√12 (0 without a grid)."""
    return np.array([grid_step(x[:, j]) for j in range(x.shape[1])]) / math.sqrt(12.0)


def _gcd(scaled: FloatArray) -> int:
    return int(np.gcd.reduce(np.abs(np.rint(scaled).astype(np.int64))))


def _integers(scaled: FloatArray) -> bool:
    top = float(np.max(np.abs(scaled))) if scaled.size else 0.0
    if top >= _EXACT:
        return False  # too coarse a float to tell (and int64 would not hold it)
    off = np.abs(scaled - np.rint(scaled))
    return bool(np.all(off <= _TOLERANCE * np.maximum(1.0, np.abs(scaled))))
