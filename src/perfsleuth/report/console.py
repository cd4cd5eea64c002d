"""Findings as a Rich table for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text

from perfsleuth.findings import Finding, Severity, ordered
from perfsleuth.report.common import format_time, summary_counts

__all__ = ["SEVERITY_STYLES", "findings_table", "summary_counts"]

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
    are shown as they are, never read as Rich markup.
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
            Text(finding.entity),
            Text(finding.metric),
            Text(_span(finding)),
            Text(finding.explanation),
        )
    return table


def _span(finding: Finding) -> str:
    start, end = format_time(finding.start), format_time(finding.end)
    return start if start == end else f"{start}\n{end}"
