"""Unit normalisation: every unit a reader or the collector writes has a base unit."""

from __future__ import annotations

import pytest

from perfsleuth.units import BASE_UNITS, to_base


@pytest.mark.parametrize(
    ("unit", "base", "factor"),
    [
        ("ms", "s", 1e-3),
        ("MiB", "bytes", 2.0**20),
        ("%", "fraction", 0.01),
        ("1/s", "/s", 1.0),
        ("B/s", "bytes/s", 1.0),
        ("MiB/s", "bytes/s", 2.0**20),
        ("cores", "cores", 1.0),
    ],
)
def test_to_base(unit: str, base: str, factor: float) -> None:
    assert to_base(unit) == (base, factor)
    assert base in BASE_UNITS


def test_collector_units_are_base_units() -> None:
    from perfsleuth.collect.collector import _unit

    for name, cumulative in [
        ("cpu.user", True),
        ("disk.sda.read_bytes", True),
        ("mem.MemAvailable", False),
        ("vmstat.pgfault", True),
    ]:
        unit = _unit(name, cumulative)
        assert to_base(unit) == (unit, 1.0), name


def test_unknown_unit_raises() -> None:
    with pytest.raises(KeyError):
        to_base("furlongs")
