"""Process and workload pathologies after Kaminski (CMG 2003; DESIGN §2.4).

* :mod:`~perfsleuth.process.rules` — the TOML rules file (per-OS loop lines, groups,
  exceptions, never-alert lists, notification settings) and its built-in defaults;
* :mod:`~perfsleuth.process.periods` — one node's frame as per-period matrices;
* :mod:`~perfsleuth.process.ramps` — ramp and saw-tooth kernels (numpy only);
* :mod:`~perfsleuth.process.checks` — the per-node checks, pure functions;
* :mod:`~perfsleuth.process.scanner` — the per-node scan and its map over a frame's nodes;
* :mod:`~perfsleuth.process.detectors` — the registered detectors;
* :mod:`~perfsleuth.process.collect` — a small /proc sampler (used by the real-process tests).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DEFAULT_RULES", "ProcessRules", "attach_nodes", "load_rules", "scan", "scan_node"]

# Lazy: the CLI imports perfsleuth.process.cli at start-up, which must not pull in pandas.
_WHERE = {
    "DEFAULT_RULES": "rules",
    "ProcessRules": "rules",
    "load_rules": "rules",
    "attach_nodes": "scanner",
    "scan": "scanner",
    "scan_node": "scanner",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"perfsleuth.process.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'perfsleuth.process' has no attribute {name!r}")
