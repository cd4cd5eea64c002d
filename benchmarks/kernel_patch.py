"""Patching a change-point kernel function for a diagnostic run, wherever it is called from.

The kernels' modules import each other's helpers by name (``from ...statistic import
_segment_means``), so a function is bound in every module that calls it, and setting it on one
module leaves the others calling the original. :func:`patched` replaces it in all of them.
Used by the diagnostic benchmarks that trace or switch off a gate of the search
(``changepoints_short_misses.py``, ``changepoints_nab_windows.py``, ``changepoints_profile.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import perfsleuth.changepoints.kernels as kernels_package


def kernel_modules() -> list[ModuleType]:
    """Every module of ``perfsleuth.changepoints.kernels``, imported."""
    return [
        importlib.import_module(f"{kernels_package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(kernels_package.__path__)
    ]


def bindings(name: str) -> list[ModuleType]:
    """The kernel modules that bind ``name`` to the object the module defining it holds (a
    constant by value is bound per module too: each module that reads it)."""
    holders = [m for m in kernel_modules() if name in vars(m)]
    if not holders:
        raise AttributeError(f"no change-point kernel module has {name!r}")
    defined = [m for m in holders if getattr(vars(m)[name], "__module__", None) == m.__name__]
    original = vars((defined or holders)[0])[name]
    return [m for m in holders if vars(m)[name] is original]


@contextlib.contextmanager
def patched(values: dict[str, Any]) -> Iterator[None]:
    """Each ``name`` of ``values`` replaced in every kernel module that binds it, then restored."""
    saved = [(m, name, vars(m)[name]) for name in values for m in bindings(name)]
    try:
        for module, name, _ in saved:
            setattr(module, name, values[name])
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
