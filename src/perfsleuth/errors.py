"""The perfsleuth exception hierarchy.

Every error the library raises on purpose derives from :class:`PerfsleuthError`, and each
subclass also inherits the builtin a caller would naturally catch (``ValueError`` for bad data
or configuration, ``OSError`` for sources that cannot be read or reached).
"""

from __future__ import annotations

__all__ = [
    "CollinearityWarning",
    "ConfigError",
    "ConvergenceWarning",
    "DataError",
    "NotEnoughDataError",
    "OutputError",
    "PerfsleuthError",
    "PerfsleuthWarning",
    "SourceError",
    "StoreError",
    "located",
]


class PerfsleuthError(Exception):
    """Base class of every error perfsleuth raises on purpose."""


class ConfigError(PerfsleuthError, ValueError):
    """A configuration file or parameter is invalid; the message names the key path."""


class DataError(PerfsleuthError, ValueError):
    """Input data violates a frame contract; the message names file, line and field."""


class NotEnoughDataError(DataError):
    """The input is valid but too short for the method asked of it."""


class SourceError(PerfsleuthError, OSError):
    """A source could not be read or reached (file missing, server down, timeout)."""


class OutputError(PerfsleuthError, OSError):
    """An output (the report, a findings file) could not be written; the message names it."""


class StoreError(PerfsleuthError, OSError):
    """The embedded store could not be opened or written; nothing stored before is lost."""


class PerfsleuthWarning(UserWarning):
    """Base class of perfsleuth warnings."""


class CollinearityWarning(PerfsleuthWarning):
    """Regressors are (nearly) collinear; coefficients are not individually identified."""


class ConvergenceWarning(PerfsleuthWarning):
    """An iterative solver stopped before meeting its tolerance."""


def located(message: str, *, source: str, line: int | None = None, field: str | None = None) -> str:
    """Prefix ``message`` with ``source:line: field`` the way compilers do, for error messages."""
    where = source
    if line is not None:
        where += f":{line}"
    if field is not None:
        where += f": column {field!r}"
    return f"{where}: {message}"
