"""Local collection: per-process samples and OS counters from ``/proc`` into the store."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Collector", "Commit", "Rollup"]


def __getattr__(name: str) -> Any:
    # Lazy: the CLI imports perfsleuth.collect.cli at start-up: no numpy or pandas yet.
    if name in __all__:
        return getattr(importlib.import_module("perfsleuth.collect.collector"), name)
    raise AttributeError(f"module 'perfsleuth.collect' has no attribute {name!r}")
