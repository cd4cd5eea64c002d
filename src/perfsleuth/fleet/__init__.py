"""Fleet runs: one pure per-node function mapped over partitions, locally or on Dask."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Coverage", "Task", "plan", "scan_fleet", "scan_task"]


def __getattr__(name: str) -> Any:
    # Lazy: the CLI imports perfsleuth.fleet.cli at start-up, which must not pull in pandas.
    if name in __all__:
        return getattr(importlib.import_module("perfsleuth.fleet.runner"), name)
    raise AttributeError(f"module 'perfsleuth.fleet' has no attribute {name!r}")
