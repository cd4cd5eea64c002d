"""Numerics shared by the families: numpy arrays in, frozen dataclasses out; no pandas, no I/O.

* :mod:`perfsleuth.stats.robust` — robust scale, Yeo–Johnson, cycle and trend removal.
* :mod:`perfsleuth.stats.sums` — two running sums in the time of one.

Each family keeps its own kernels in ``perfsleuth.<family>.kernels``.
"""
