"""Durations written the way people write them: ``"30s"``, ``"5m"``, ``"2h"``, ``"1h30m"``.

:data:`Duration` is the pydantic type every parameter class and config section uses, so a
duration is parsed, bounded and printed back one way everywhere.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

__all__ = ["MAX_SECONDS", "Duration", "format_duration", "parse_duration"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

MAX_SECONDS = 100 * 365 * 86400.0
"""Longest accepted duration (a century): longer ones are typos, and overflow timedelta."""


def parse_duration(value: object) -> timedelta:
    """Parse ``"30s"``, ``"5m"``, ``"2h"``, ``"1h30m"``, a number of seconds, or a timedelta.

    Raises ``ValueError`` (with the accepted forms) for anything else, for zero or negative
    spans and for spans longer than :data:`MAX_SECONDS`.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        parts = _DURATION.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"not a duration: {value!r} (write e.g. '30s', '5m', '2h', '1h30m')")
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    else:
        raise ValueError(f"not a duration: {value!r}")
    if not math.isfinite(seconds) or not seconds > 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    if seconds > MAX_SECONDS:
        raise ValueError(f"duration {value!r} is longer than a century")
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The shortest ``parse_duration`` spelling: ``timedelta(minutes=90)`` → ``"90m"``."""
    seconds = value.total_seconds()
    for unit in ("w", "d", "h", "m", "s"):
        count = seconds / _UNIT_SECONDS[unit]
        if count >= 1 and count == int(count):
            return f"{int(count)}{unit}"
    return f"{round(seconds * 1000)}ms"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^(\d+(\.\d+)?(ms|s|m|h|d|w))+$",
            "examples": ["30s", "5m", "2h"],
        }
    ),
]
"""A positive time span written as ``"30s"``, ``"5m"``, ``"2h"`` (or seconds as a number)."""
