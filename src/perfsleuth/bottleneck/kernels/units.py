"""Units of model quantities: a scale factor and powers of base dimensions.

A model file writes units as text (``"B/s"``, ``"s/op"``, ``"page/s"``, ``"1"``); the loader
parses them and checks every formula's units (DESIGN §2.5: "units consistent"). Base dimensions
are bytes (``B``), seconds (``s``), operations (``op``) and pages (``page``); CPU use in cores
is CPU-seconds per second, so ``cores`` is dimensionless. A prefixed unit (``KiB``, ``ms``)
carries its factor, and quantities only add when both dimensions and factor agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["DIMENSIONLESS", "Unit", "parse_unit"]

# symbol -> (factor, base dimension or None for dimensionless)
_SYMBOLS: dict[str, tuple[float, str | None]] = {
    "1": (1.0, None),
    "fraction": (1.0, None),
    "ratio": (1.0, None),
    "cores": (1.0, None),
    "count": (1.0, None),
    "%": (0.01, None),
    "B": (1.0, "B"),
    "byte": (1.0, "B"),
    "bytes": (1.0, "B"),
    "kB": (1e3, "B"),
    "MB": (1e6, "B"),
    "GB": (1e9, "B"),
    "KiB": (2.0**10, "B"),
    "MiB": (2.0**20, "B"),
    "GiB": (2.0**30, "B"),
    "TiB": (2.0**40, "B"),
    "s": (1.0, "s"),
    "ms": (1e-3, "s"),
    "us": (1e-6, "s"),
    "µs": (1e-6, "s"),
    "ns": (1e-9, "s"),
    "min": (60.0, "s"),
    "h": (3600.0, "s"),
    "Hz": (1.0, "s^-1"),
    "op": (1.0, "op"),
    "ops": (1.0, "op"),
    "io": (1.0, "op"),
    "page": (1.0, "page"),
    "pages": (1.0, "page"),
}
_TOKEN = re.compile(r"\s*([*/·]?)\s*([A-Za-zµ%1]+)(?:\^(-?\d+(?:/\d+)?))?\s*")


@dataclass(frozen=True, slots=True)
class Unit:
    """``factor`` × Π base^power; ``dims`` is sorted and holds no zero powers."""

    factor: float = 1.0
    dims: tuple[tuple[str, Fraction], ...] = ()

    @staticmethod
    def of(factor: float, powers: dict[str, Fraction]) -> Unit:
        return Unit(factor, tuple(sorted((d, p) for d, p in powers.items() if p != 0)))

    def __mul__(self, other: Unit) -> Unit:
        powers = dict(self.dims)
        for dim, power in other.dims:
            powers[dim] = powers.get(dim, Fraction(0)) + power
        return Unit.of(self.factor * other.factor, powers)

    def __truediv__(self, other: Unit) -> Unit:
        return self * other ** Fraction(-1)

    def __pow__(self, power: Fraction) -> Unit:
        return Unit.of(self.factor ** float(power), {d: p * power for d, p in self.dims})

    @property
    def dimensionless(self) -> bool:
        return not self.dims

    def same(self, other: Unit) -> bool:
        """Same dimensions and the same scale (so values can be added as they are)."""
        return self.dims == other.dims and _close(self.factor, other.factor)

    def __str__(self) -> str:
        up = [_power(d, p) for d, p in self.dims if p > 0]
        down = [_power(d, -p) for d, p in self.dims if p < 0]
        text = "·".join(up) or "1"
        if down:
            text += "/" + ("·".join(down) if len(down) == 1 else "(" + "·".join(down) + ")")
        if not _close(self.factor, 1.0):
            text = f"{self.factor:g}×{text}"
        return text


DIMENSIONLESS = Unit()


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def _power(dim: str, power: Fraction) -> str:
    return dim if power == 1 else f"{dim}^{power}"


def parse_unit(text: str) -> Unit:
    """Parse ``"B/s"``, ``"s/op"``, ``"KiB"``, ``"page/s"``, ``"B^2"``, ``"1"``.

    Factors are separated by ``*`` (or ``·``); each ``/`` divides by the factor after it, so
    ``"B/op/s"`` is bytes per operation per second. Raises ``ValueError`` naming the bad part.
    """
    source = text.strip()
    if not source:
        return DIMENSIONLESS
    unit = DIMENSIONLESS
    position = 0
    first = True
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None or match.end() == position:
            raise ValueError(f"cannot read unit {text!r} at {source[position:]!r}")
        op, symbol, power_text = match.groups()
        if first and op in ("*", "·"):
            raise ValueError(f"unit {text!r} starts with {op!r}")
        if not first and not op:
            raise ValueError(
                f"unit {text!r}: write '*' or '/' between {symbol!r} and what precedes"
            )
        if symbol not in _SYMBOLS:
            known = ", ".join(sorted(s for s in _SYMBOLS if s != "1"))
            raise ValueError(f"unknown unit {symbol!r} in {text!r} (known: 1, {known})")
        factor, base = _SYMBOLS[symbol]
        part = Unit(factor, ())
        if base == "s^-1":
            part = Unit.of(factor, {"s": Fraction(-1)})
        elif base is not None:
            part = Unit.of(factor, {base: Fraction(1)})
        if power_text is not None:
            part = part ** Fraction(power_text)
        unit = unit / part if op == "/" else unit * part
        position = match.end()
        first = False
    return unit
