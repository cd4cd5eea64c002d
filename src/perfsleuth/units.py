"""Unit normalisation: every stored value is in a base unit (seconds, bytes, fraction, count).

Readers convert once, here, so detectors never guess whether a latency is in ms or µs.
"""

from __future__ import annotations

__all__ = ["BASE_UNITS", "to_base"]

# unit (as users write it, lower-cased) -> (base unit, factor to multiply by)
_FACTORS: dict[str, tuple[str, float]] = {
    # time
    "ns": ("s", 1e-9),
    "us": ("s", 1e-6),
    "µs": ("s", 1e-6),
    "μs": ("s", 1e-6),
    "ms": ("s", 1e-3),
    "s": ("s", 1.0),
    "sec": ("s", 1.0),
    "seconds": ("s", 1.0),
    "min": ("s", 60.0),
    "h": ("s", 3600.0),
    # data
    "b": ("bytes", 1.0),
    "bytes": ("bytes", 1.0),
    "kb": ("bytes", 1e3),
    "mb": ("bytes", 1e6),
    "gb": ("bytes", 1e9),
    "tb": ("bytes", 1e12),
    "kib": ("bytes", 2.0**10),
    "mib": ("bytes", 2.0**20),
    "gib": ("bytes", 2.0**30),
    "tib": ("bytes", 2.0**40),
    # ratios
    "%": ("fraction", 0.01),
    "percent": ("fraction", 0.01),
    "fraction": ("fraction", 1.0),
    # plain numbers
    "": ("", 1.0),
    "count": ("count", 1.0),
    "1": ("", 1.0),
    "/s": ("/s", 1.0),
    "1/s": ("/s", 1.0),
    "ops/s": ("/s", 1.0),
    "req/s": ("/s", 1.0),
    # data rates
    "b/s": ("bytes/s", 1.0),
    "bytes/s": ("bytes/s", 1.0),
    "kb/s": ("bytes/s", 1e3),
    "mb/s": ("bytes/s", 1e6),
    "kib/s": ("bytes/s", 2.0**10),
    "mib/s": ("bytes/s", 2.0**20),
    "cores": ("cores", 1.0),
}

BASE_UNITS = frozenset(base for base, _ in _FACTORS.values())


def to_base(unit: str) -> tuple[str, float]:
    """Return ``(base_unit, factor)`` for ``unit``; unknown units raise ``KeyError``.

    >>> to_base("ms")
    ('s', 0.001)
    """
    key = unit.strip()
    if key not in _FACTORS:
        key = key.lower()
    return _FACTORS[key]
