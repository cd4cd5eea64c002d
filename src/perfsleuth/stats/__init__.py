"""Pure numerical kernels: numpy arrays in, frozen dataclasses out; no pandas, no I/O.

* :mod:`perfsleuth.stats.changepoint` — hierarchical change-point search (Berry & Hellerstein).
* :mod:`perfsleuth.stats.fpa` — null distribution of its statistic (simulated FPA table).
"""

from perfsleuth.stats.changepoint import ChangePoint, ChangePoints, find_change_points

__all__ = ["ChangePoint", "ChangePoints", "find_change_points"]
