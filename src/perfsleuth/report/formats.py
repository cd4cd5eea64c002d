"""Findings as text for stdout: a table for people, JSON or JSON lines for programs."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from typing import Literal

from perfsleuth.findings import Finding, write_jsonl

__all__ = ["FORMATS", "Format", "render_findings"]

Format = Literal["table", "json", "jsonl"]
FORMATS: tuple[Format, ...] = ("table", "json", "jsonl")


def render_findings(findings: Iterable[Finding], fmt: Format, *, width: int | None = None) -> str:
    """Render findings as ``"table"``, ``"json"`` (an array, indent 2) or ``"jsonl"``.

    The result ends with a newline unless it is empty (JSON lines of no findings). ``table``
    keeps the findings' severity order; ``json`` and ``jsonl`` keep the order given. ``width``
    only applies to ``table`` (default 120 columns); the table never holds ANSI escape codes.
    """
    items = list(findings)
    if fmt == "json":
        return (
            json.dumps([f.to_dict() for f in items], indent=2, ensure_ascii=False, allow_nan=False)
            + "\n"
        )
    if fmt == "jsonl":
        return write_jsonl(items)
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
