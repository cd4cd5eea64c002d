"""What the fuzz tests share: running the command line in-process, judging how it ended, and
strategies for hostile input (cells, times, bytes, TOML values).

The property every fuzz test checks, on every reader and every config or model loader:
``perfsleuth`` either succeeds (exit 0, or 1 for findings) or exits 2 with one
``perfsleuth: error: ...`` message — never an exception escaping ``main`` (a traceback).
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from perfsleuth.cli import main

__all__ = [
    "FUZZ",
    "Outcome",
    "cells",
    "csv_text",
    "mutated",
    "nasty_text",
    "numbers",
    "run_cli",
    "times",
    "toml_mutation",
    "toml_values",
]

_HUNT = int(os.environ.get("PERFSLEUTH_FUZZ_EXAMPLES", "0"))

FUZZ = settings(
    max_examples=_HUNT or 12,
    deadline=None,
    derandomize=not _HUNT,  # the same examples on every run: CI failures reproduce
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""Every fuzz test's settings: deterministic, no deadline (the machine may be busy), and few
enough examples that the whole suite stays under about two minutes. To hunt for bugs, set
``PERFSLEUTH_FUZZ_EXAMPLES=200``: that many random (not derandomized) examples per test."""


@dataclass(frozen=True)
class Outcome:
    """How one command-line run ended."""

    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith("perfsleuth: error: ")]

    def check(self, *names: str) -> None:
        """Success, or exit 2 with exactly one error message; with ``names``, the message names
        one of them (the file it is about)."""
        assert "Traceback" not in self.err, self.err
        assert self.code in (0, 1, 2), self
        if self.code == 2:
            assert len(self.errors) == 1, self.err
            if names:
                assert any(name in self.errors[0] for name in names), self.errors[0]
        else:
            assert not self.errors, self.err


def run_cli(args: Sequence[str]) -> Outcome:
    """Run ``perfsleuth args`` in this process (``perfsleuth.cli.main``)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
            code: Any = 0
        except SystemExit as exc:
            code = exc.code
    if code is None:
        code = 0
    return Outcome(code if isinstance(code, int) else 2, out.getvalue(), err.getvalue())


# -- strategies ---------------------------------------------------------------------------------

NASTY = [
    "", " ", "nan", "NaN", "inf", "-inf", "1e155", "-1e308", "1e400", "0", "-1", "1e-320",
    "9" * 40, "0x10", "1_000", " 5 ", "fast", "\x1b[31mred", "1,5", "None", "null", "TRUE",
    "\u202eevil", "\x00", "\r", "2024-01-01T00:00:00Z", '"', "'", "\\", "-", "9" * 400,
]  # fmt: skip

nasty_text = st.sampled_from(NASTY) | st.text(max_size=12)
"""Short text, often one of the values readers trip over."""

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(0, 1000).map(lambda v: f"{v:.3f}"),
    st.sampled_from(NASTY),
)
"""A number as a file holds it: mostly plausible, sometimes absurd or not a number at all."""

_moments = st.datetimes(min_value=datetime(1800, 1, 1), max_value=datetime(2300, 1, 1))
times = st.one_of(
    _moments.map(lambda d: d.isoformat()),
    _moments.map(lambda d: d.isoformat() + "Z"),
    _moments.map(lambda d: d.strftime("%Y-%m-%d %H:%M:%S")),
    st.integers(-(10**19), 10**19).map(str),  # epoch in any unit, or none
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["2024-03-10 02:30", "2024-11-03 01:30", "yesterday", "2024-13-01", "0"]),
    st.sampled_from(NASTY),
)
"""A time as a file holds it: ISO 8601, Unix times in any unit, or nonsense."""

cells = st.one_of(numbers, times, nasty_text)


def csv_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """CSV the csv module writes (quoting what needs it), so cells arrive as generated."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> bytes:
    """``base`` unchanged, or with a few byte-level edits: inserted bytes (control characters,
    invalid UTF-8, NUL), a cut, a repeated or deleted line."""
    data = bytearray(base)
    edits = draw(st.sampled_from([0, 0, 0, 1, 2, 3]))  # half the files come through intact
    for _ in range(edits):
        kind = draw(st.sampled_from(["insert", "cut", "repeat", "delete", "nothing"]))
        at = draw(st.integers(0, len(data)))
        if kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
                [b"\xff\xfe", b"\x00", b"\x1b[2J", b'"', b",", b"\n", b"\r", b"{", b"["]
            ))  # fmt: skip
        elif kind == "cut":
            del data[at:]
        elif kind in ("repeat", "delete"):
            lines = bytes(data).split(b"\n")
            if lines:
                i = draw(st.integers(0, len(lines) - 1))
                if kind == "repeat":
                    lines.insert(i, lines[i])
                else:
                    del lines[i]
                data = bytearray(b"\n".join(lines))
    return bytes(data)


toml_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e308, 1e-308, 10**19, 2**63 - 1]),
    st.sampled_from(["99999999999w", "1ms", "0s", "-5m", "1e400s", "", "linux", "%", "x" * 300]),
    st.text(max_size=10),
    st.booleans(),
    st.lists(st.integers(-5, 5) | st.text(max_size=3), max_size=3),
    st.dictionaries(st.text(min_size=1, max_size=5), st.integers(-3, 3), max_size=2),
)
"""A value to put where a config or model file has another."""


def _leaves(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in parsed TOML (tables and arrays are walked into)."""
    out = [path] if path else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += _leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _leaves(value, (*path, i))
    return out


@st.composite
def toml_mutation(draw: st.DrawFn, seed: dict[str, Any]) -> dict[str, Any]:
    """``seed`` (parsed TOML) with one to three values replaced, removed or added."""
    data = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = _leaves(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(toml_values)
        elif action == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=6))] = draw(toml_values)
    return data
