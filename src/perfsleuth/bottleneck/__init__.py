"""Bottleneck inference and upgrade advice after Blake & Breese (1995) (DESIGN §2.5).

A declarative model (:mod:`~perfsleuth.bottleneck.model`, TOML compiled by a safe expression
compiler) predicts OS counters from workload parameters; calibration fits its machine
characteristics; inference finds the most probable workload given observed counters, each
resource's chance of being the bottleneck, and the cheapest upgrade that meets a target.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Model", "load_model"]


def __getattr__(name: str) -> Any:
    # Lazy: the CLI imports perfsleuth.bottleneck.cli at start-up: no numpy or pandas yet.
    if name in __all__:
        return getattr(importlib.import_module("perfsleuth.bottleneck.model"), name)
    raise AttributeError(f"module 'perfsleuth.bottleneck' has no attribute {name!r}")
