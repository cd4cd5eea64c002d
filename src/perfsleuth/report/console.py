"""Findings as a Rich table for the terminal, and text made safe to print on one."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from perfsleuth.findings import Finding, Severity, ordered
from perfsleuth.report.common import format_time, summary_counts

__all__ = ["SEVERITY_STYLES", "findings_table", "one_line", "printable", "summary_counts"]

# C0 controls but newline and tab, DEL, C1 controls (U+009B is a one-character CSI), and the
# bidirectional overrides that make text read differently from what it is.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe for a terminal: control characters shown as escapes (``\\x1b``), not obeyed.

    Data (process names, URLs, log lines) may hold ANSI escape sequences that would move the
    cursor, recolour or retitle the terminal, or a carriage return that hides what precedes it.
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def one_line(text: str) -> str:
    """``text`` (a name from the data) for a place in one line of a message: printable, and a
    line break shown as ``\\n``, so a name cannot start a line of its own (one that reads
    ``perfsleuth: error: ...``)."""
    return printable(text).replace("\n", "\\n")


SEVERITY_STYLES: dict[Severity, str] = {
    Severity.CRITICAL: "bold white on red",
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
    Severity.DEBUG: "dim",
}


def findings_table(findings: Iterable[Finding], *, title: str | None = None) -> Table:
    """A table of findings, most severe first, then by start time.

    Every cell is a :class:`rich.text.Text`, so square brackets in data (process names, URLs)
    are shown as they are, never read as Rich markup, and control characters are escaped
    (:func:`printable`).
    """
    table = Table(title=title, show_lines=False, expand=False, header_style="bold")
    table.add_column("severity", no_wrap=True)
    table.add_column("kind", overflow="fold")
    table.add_column("entity", overflow="fold")
    table.add_column("metric", overflow="fold")
    # start above end in one column: two 20-character columns would crowd out the explanation
    table.add_column("start / end (UTC)", no_wrap=True)
    table.add_column("explanation", overflow="fold")
    for finding in ordered(findings):
        table.add_row(
            Text(finding.severity.name.lower(), style=SEVERITY_STYLES[finding.severity]),
            Text(finding.kind.value),
            Text(printable(finding.entity)),
            Text(printable(finding.metric)),
            Text(_span(finding)),
            Text(printable(finding.explanation)),
        )
    return table


def _span(finding: Finding) -> str:
    start, end = format_time(finding.start), format_time(finding.end)
    return start if start == end else f"{start}\n{end}"
