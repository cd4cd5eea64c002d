"""Unit parsing and algebra for model files."""

from __future__ import annotations

from fractions import Fraction

import pytest

from perfsleuth.bottleneck.kernels.units import DIMENSIONLESS, Unit, parse_unit


@pytest.mark.parametrize(
    ("text", "factor", "dims"),
    [
        ("1", 1.0, ()),
        ("", 1.0, ()),
        ("cores", 1.0, ()),
        ("%", 0.01, ()),
        ("B", 1.0, (("B", Fraction(1)),)),
        ("KiB", 1024.0, (("B", Fraction(1)),)),
        ("B/s", 1.0, (("B", Fraction(1)), ("s", Fraction(-1)))),
        ("B/op/s", 1.0, (("B", Fraction(1)), ("op", Fraction(-1)), ("s", Fraction(-1)))),
        ("s/op", 1.0, (("op", Fraction(-1)), ("s", Fraction(1)))),
        ("page/s", 1.0, (("page", Fraction(1)), ("s", Fraction(-1)))),
        ("ms", 1e-3, (("s", Fraction(1)),)),
        ("Hz", 1.0, (("s", Fraction(-1)),)),
        ("B^2", 1.0, (("B", Fraction(2)),)),
        ("op*s", 1.0, (("op", Fraction(1)), ("s", Fraction(1)))),
    ],
)
def test_parse(text: str, factor: float, dims: tuple[tuple[str, Fraction], ...]) -> None:
    unit = parse_unit(text)
    assert unit.factor == pytest.approx(factor)
    assert unit.dims == dims


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("furlongs", "unknown unit 'furlongs'"),
        ("B s", "write '\\*' or '/'"),
        ("*B", "starts with"),
        ("B/", "cannot read"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_unit(text)


def test_algebra_and_equality() -> None:
    rate, size = parse_unit("op/s"), parse_unit("B/op")
    assert (rate * size).same(parse_unit("B/s"))
    assert (size / size).same(DIMENSIONLESS)
    assert not parse_unit("KiB").same(parse_unit("B"))
    assert (parse_unit("s") ** Fraction(-1)).same(parse_unit("Hz"))
    assert str(parse_unit("B/s")) == "B/s"
    assert str(Unit()) == "1"
