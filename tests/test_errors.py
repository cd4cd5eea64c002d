from __future__ import annotations

import pytest

from perfsleuth import errors


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.ConfigError, ValueError),
        (errors.DataError, ValueError),
        (errors.NotEnoughDataError, ValueError),
        (errors.SourceError, OSError),
        (errors.OutputError, OSError),
        (errors.StoreError, OSError),
    ],
)
def test_every_error_is_a_perfsleuth_error_and_its_builtin(cls: type, builtin: type) -> None:
    assert issubclass(cls, errors.PerfsleuthError)
    assert issubclass(cls, builtin)


def test_not_enough_data_is_a_data_error() -> None:
    assert issubclass(errors.NotEnoughDataError, errors.DataError)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"source": "a.csv"}, "a.csv: bad"),
        ({"source": "a.csv", "line": 3}, "a.csv:3: bad"),
        ({"source": "a.csv", "line": 3, "field": "value"}, "a.csv:3: column 'value': bad"),
    ],
)
def test_located_names_file_line_and_column(kwargs: dict[str, object], expected: str) -> None:
    assert errors.located("bad", **kwargs) == expected  # type: ignore[arg-type]
