"""Two running sums for the time of one.

numpy's cumulative sum adds each value to the sum it has just stored, so it waits on that
store every step (about 3.5 ns a value here, where an addition or a product over an array
takes .25). A complex array carries two such chains in one: complex addition adds the real
and the imaginary parts apart, each as a float addition, so the running sum of
``a + i b`` is the running sums of ``a`` and of ``b``, the same bits, in the time of one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["paired"]


def paired(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.complex128]:
    """A complex array of ``a`` (its real parts) and ``b`` (its imaginary parts), one shape:
    ``np.cumsum`` of it, along any axis, holds both arrays' in ``.real`` and ``.imag``."""
    out = np.empty(np.shape(a), dtype=np.complex128)
    out.real = a
    out.imag = b
    return out
