"""Unit normalisation: every stored value is in a base unit (seconds, bytes, fraction, count).

Readers convert once, here, so detectors never guess whether a latency is in ms or µs.
"""

from __future__ import annotations

import math

__all__ = ["BASE_UNITS", "format_growth", "format_quantity", "format_seconds", "to_base"]

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


# Printing values for people (the inverse direction: base units to readable text).


def _number(value: float) -> str:
    if value != 0.0 and abs(value) >= 1000.0:
        return f"{value:,.0f}"
    return f"{value:.3g}"


_TIME_UNITS = ((3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_BYTE_UNITS = ((2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"))


def format_quantity(value: float, unit: str, *, like: float | None = None) -> str:
    """``value`` (in a base unit) as a person reads it: 0.0121 s → "12.1 ms".

    ``like`` picks the scale (so two values in one sentence share a unit); default ``value``.
    """
    ref = abs(value if like is None else like)
    if unit == "s":
        if ref >= 120.0:
            factor, name = next(((f, u) for f, u in _TIME_UNITS if ref >= 2 * f), (1.0, "s"))
        else:
            factor, name = next(((f, u) for f, u in _TIME_UNITS[2:] if ref >= f), (1e-9, "ns"))
        return f"{_number(value / factor)} {name}"
    if unit == "bytes":
        factor, name = next(((f, u) for f, u in _BYTE_UNITS if ref >= f), (1.0, "B"))
        return f"{_number(value / factor)} {name}"
    if unit == "fraction":
        return f"{_number(100.0 * value)}%"
    if unit in ("", "count"):
        return _number(value)
    if unit.startswith("/"):
        return f"{_number(value)}{unit}"
    return f"{_number(value)} {unit}"


def format_growth(
    rate: float, unit: str, *, like: float | None = None, relative: bool = False
) -> str:
    """A growth per reading, signed, the amount as :func:`format_quantity` writes it:
    "+0.8 GB/reading"; ``relative``: a rate, a fraction of the level per reading
    (0.035 → "+3.5%/reading", whatever ``unit``)."""
    if relative:
        percent = 100.0 * rate
        shown = f"{percent:+.1f}" if abs(percent) >= 0.1 or percent == 0 else f"{percent:+.2g}"
        return f"{shown}%/reading"
    return f"{'-' if rate < 0 else '+'}{format_quantity(abs(rate), unit, like=like)}/reading"


def format_seconds(value: float) -> str:
    """Seconds per transaction as people read them: 0.0123 → "12.3 ms", 4.5e-5 → "45 µs"."""
    if math.isnan(value):
        return "n/a"
    size = abs(value)
    if size >= 1.0 or size == 0.0:
        return f"{value:.3g} s"
    if size >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"
