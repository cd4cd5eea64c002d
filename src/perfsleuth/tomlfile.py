"""TOML files read one way: errors name the file, the line and the key path.

Every TOML file perfsleuth reads (the config, process rules, bottleneck models, calibrations,
error models, upgrade catalogues, web-log rules) goes through :func:`read_toml` and, when it has
a pydantic schema, :func:`load_toml`. A file that cannot be read, is not UTF-8, is not TOML or
nests absurdly deep is a :class:`~perfsleuth.errors.ConfigError` with one line per problem, e.g.
``rules.toml:12: os.linux.mean: Input should be a valid number``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from perfsleuth.errors import ConfigError

__all__ = ["TomlDocument", "load_toml", "parse_toml", "read_toml", "validate", "validation_message"]

_T = TypeVar("_T")

_MAX_BYTES = 16 * 2**20  # no configuration file is this large; refuse before parsing it
_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')\s*(?:\.\s*[^=]+)?=")
_BLAMED = re.compile(r"^([A-Za-z_][\w.]*): ")

Locate = Callable[[Sequence[str | int]], int | None]


@dataclass(frozen=True, eq=False)
class TomlDocument:
    """A parsed TOML file: its data, and where each table and key was written."""

    source: str
    data: dict[str, Any]
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)

    def line(self, path: Sequence[str | int]) -> int | None:
        """The line of ``path`` (e.g. ``("os", "linux", "mean")``) or of its nearest parent."""
        key = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None


def parse_toml(text: str, *, source: str) -> TomlDocument:
    """Parse TOML ``text`` (read from ``source``, named in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML: nested too deeply") from None
    return TomlDocument(source, data, _key_lines(text))


def read_toml(path: str | Path, *, what: str = "file") -> TomlDocument:
    """Read and parse a TOML file; ``what`` ("config", "rules", …) words the errors."""
    target = Path(path)
    try:
        size = target.stat().st_size
        if size > _MAX_BYTES:
            raise ConfigError(f"{target}: {size:,} bytes is too large for a {what} file")
        raw = target.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{target}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")  # an editor's byte-order mark is no TOML error
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{target}:{line}: not UTF-8 text (byte {exc.start})") from None
    return parse_toml(text, source=str(target))


def validate(
    schema: type[_T],
    data: Any,
    *,
    source: str,
    locate: Locate | None = None,
    prefix: str = "",
    tags: Collection[str] = (),
    label: Callable[[str], str] | None = None,
) -> _T:
    """``data`` as an instance of ``schema`` (a pydantic model or dataclass).

    Errors become one :class:`ConfigError` naming ``source``, the line (when ``locate`` finds
    it) and the key path (after ``prefix``, e.g. ``"detectors.changepoints"``).
    """
    try:
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return schema.model_validate(data)  # type: ignore[return-value]
        return TypeAdapter(schema).validate_python(data)
    except ValidationError as exc:
        raise ConfigError(
            validation_message(
                exc, source=source, locate=locate, prefix=prefix, tags=tags, label=label
            )
        ) from None
    except (OverflowError, ZeroDivisionError, RecursionError) as exc:
        where = f"{source}: {prefix}" if prefix else source
        raise ConfigError(f"{where}: value out of range: {exc}") from None


def load_toml(path: str | Path, schema: type[_T], *, what: str = "file") -> _T:
    """Read ``path`` and validate it against ``schema``; every error names file:line: key."""
    document = read_toml(path, what=what)
    return validate(schema, document.data, source=document.source, locate=document.line)


def validation_message(
    exc: ValidationError,
    *,
    source: str,
    locate: Locate | None = None,
    prefix: str = "",
    tags: Collection[str] = (),
    label: Callable[[str], str] | None = None,
) -> str:
    """One line per problem, each naming the file, its line when known, and the key path.

    ``tags`` are the tags of discriminated unions (pydantic puts them in the error location;
    they are not keys anybody wrote, so they are left out). ``label`` words a key path the way
    its writer knows it (a command's ``--min-size`` for ``min_size``).
    """
    lines = []
    base: list[str | int] = [int(p) if p.isdigit() else p for p in prefix.split(".") if p]
    for error in exc.errors():
        raw = list(error["loc"])
        # a union's tag follows the list index it was chosen for: sources.0.file.path
        loc: list[str | int] = [
            *base,
            *(
                p
                for i, p in enumerate(raw)
                if not (p in tags and i and isinstance(raw[i - 1], int))
            ),
        ]
        message = error["msg"]
        if error["type"] == "value_error":
            message = message.removeprefix("Value error, ")
            # a model validator names the key it blames first: "queries: ..."
            blamed = _BLAMED.match(message)
            if blamed:
                loc.extend(blamed.group(1).split("."))
                message = message[blamed.end() :]
        path = ".".join(str(p) for p in loc) or "(top level)"
        if label is not None:
            path = label(path)
        line = locate(loc) if locate is not None else None
        where = f"{source}:{line}" if line else source
        lines.append(f"{where}: {path}: {message}")
    return "\n".join(lines)


def _key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """Best effort map of key paths to the line they are written on.

    Handles ``[a.b]``, ``[[a]]`` (numbered from 0), and ``key =`` / ``"key" =`` / ``a.b =``
    inside the current table; anything fancier maps to its nearest parent.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    counts: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    for number, raw in enumerate(text.splitlines(), 1):
        header = _HEADER.match(raw)
        if header:
            path = tuple(_split_key(header.group(2)))
            if header.group(1) == "[[":
                index = counts.get(path, -1) + 1
                counts[path] = index
                table = (*_resolved(path, counts), index)
            else:
                table = _resolved(path, counts)
            lines.setdefault(table, number)
            continue
        key = _KEY.match(raw)
        if key:
            dotted = raw.split("=", 1)[0]
            lines.setdefault((*table, *_split_key(dotted)), number)
    return lines


def _resolved(
    path: tuple[str, ...], counts: dict[tuple[str | int, ...], int]
) -> tuple[str | int, ...]:
    """``[a.b]`` under ``[[a]]`` number i is ``a, i, b``."""
    out: list[str | int] = []
    for part in path:
        out.append(part)
        index = counts.get(tuple(out))
        if index is not None and tuple(out) != path:
            out.append(index)
    return tuple(out)


def _split_key(text: str) -> list[str]:
    return [p.strip().strip("\"'") for p in text.strip().split(".") if p.strip()]
