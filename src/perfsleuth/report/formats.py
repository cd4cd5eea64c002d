"""Findings as text for stdout: a table for people, JSON or JSON lines for programs."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping
from typing import Literal

from perfsleuth.findings import Finding, write_jsonl

__all__ = ["FORMATS", "Format", "render_findings", "render_json"]

Format = Literal["table", "json", "jsonl"]
FORMATS: tuple[Format, ...] = ("table", "json", "jsonl")


def render_findings(findings: Iterable[Finding], fmt: Format, *, width: int | None = None) -> str:
    """Render findings as ``"table"``, ``"json"`` (an array, indent 2) or ``"jsonl"``.

    The result ends with a newline unless it is empty (JSON lines of no findings). ``table``
    keeps the findings' severity order; ``json`` and ``jsonl`` keep the order given. ``width``
    only applies to ``table`` (default 120 columns); the table never holds ANSI escape codes,
    and no format holds a control character unescaped (JSON escapes C0 itself; C1 controls and
    bidirectional overrides are written ``\\u009b`` here, which JSON reads back the same).
    """
    items = list(findings)
    if fmt == "json":
        text = json.dumps(
            [f.to_dict() for f in items], indent=2, ensure_ascii=False, allow_nan=False
        )
        return _escaped(text) + "\n"
    if fmt == "jsonl":
        return _escaped(write_jsonl(items))
    if fmt == "table":
        # rich is imported here so that JSON output does not pay for it.
        from rich.console import Console

        from perfsleuth.report.console import findings_table

        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=120 if width is None else width,
            force_terminal=False,
            color_system=None,
            no_color=True,
            highlight=False,
            emoji=False,
        )
        if items:
            console.print(findings_table(items))
        else:
            console.print("No findings.", markup=False)
        return buffer.getvalue()
    raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")


def render_json(findings: Iterable[Finding], incidents: Iterable[Mapping[str, object]]) -> str:
    """A run's answer as one JSON object (indent 2): ``{"findings": [...], "incidents": [...]}``.

    ``incidents`` are :meth:`perfsleuth.incidents.Incident.to_dict` records; each names its
    findings (and each link of its chain its own) by finding id, so a program can join them.
    """
    document = {
        "findings": [f.to_dict() for f in findings],
        "incidents": [dict(incident) for incident in incidents],
    }
    return _escaped(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"


# Controls JSON leaves as they are (it escapes only U+0000..U+001F): DEL, C1, bidi overrides.
_UNESCAPED = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(json_text: str) -> str:
    """JSON text with the controls above as ``\\uXXXX`` (they occur only inside strings)."""
    return _UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)
