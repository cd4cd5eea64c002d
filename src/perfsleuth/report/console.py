"""Findings as a Rich table for the terminal, and text from the data made safe to show: control
characters escaped, on one line, and a long name by its ends (also for the HTML report and
e-mail subjects)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from rich.table import Table
from rich.text import Text

from perfsleuth.findings import Finding, Severity, ordered
from perfsleuth.report.common import format_time, summary_counts

__all__ = [
    "HTML_NAME_SHOWN",
    "SEVERITY_STYLES",
    "by_its_ends",
    "explanation_shown",
    "findings_table",
    "long_words_by_their_ends",
    "names_shown",
    "one_line",
    "printable",
    "shown_name",
    "summary_counts",
]

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


# a name longer than this is shown by its ends (a table cell of 5,000 characters buries the rest);
# the HTML report, with more room, shows up to HTML_NAME_SHOWN
NAME_SHOWN = 80
HTML_NAME_SHOWN = 200


def shown_name(name: str, limit: int = NAME_SHOWN) -> str:
    """A name from the data as a terminal table or a subject line shows it: on one line, tabs
    escaped too, and a long one :func:`by_its_ends`; the stored and JSON findings keep it
    whole."""
    return by_its_ends(one_line(name).replace("\t", "\\t"), limit, len(name))


def by_its_ends(text: str, limit: int = NAME_SHOWN, length: int | None = None) -> str:
    """``text`` if at most ``limit`` characters, else its two ends with its ``length`` (of
    the name it shows; default its own) between, e.g. ``aaaa...(5,000 characters)...zzzz``.
    (ASCII dots: a subject line with a non-ASCII character is sent as RFC 2047 encoded words,
    and Python's e-mail folding drops the space between two of them.)"""
    if len(text) <= limit:
        return text
    keep = max(limit - 24, 2)  # the marker takes about 24 characters
    head, tail = text[: keep - keep // 3], text[len(text) - keep // 3 :]
    return f"{head}...({len(text) if length is None else length:,} characters)...{tail}"


_WORD = re.compile(r"\S+")


def long_words_by_their_ends(text: str, limit: int = HTML_NAME_SHOWN) -> str:
    """``text`` with every run of non-blank characters longer than ``limit`` shown
    :func:`by_its_ends`: prose has no such words, so they are names from the data (a section's
    intro, caption or table cell names a series in passing) and each is shortened where it
    stands."""
    if len(text) <= limit:
        return text
    return _WORD.sub(lambda m: by_its_ends(m.group(), limit), text)


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
    (:func:`printable`). Entity and metric names are shown by :func:`shown_name`, in their
    columns and in the explanation.
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
            Text(shown_name(finding.entity)),
            Text(shown_name(finding.metric)),
            Text(_span(finding)),
            Text(printable(explanation_shown(finding))),
        )
    return table


def explanation_shown(
    finding: Finding, limit: int = NAME_SHOWN, show: Callable[[str, int], str] = shown_name
) -> str:
    """The explanation with the finding's own names as ``show`` shows them (one that breaks
    a line or floods the page)."""
    return names_shown(finding.explanation, (finding.entity, finding.metric), limit, show)


def names_shown(
    text: str,
    names: Iterable[str],
    limit: int = NAME_SHOWN,
    show: Callable[[str, int], str] = shown_name,
) -> str:
    """``text`` with each of ``names`` in it as ``show`` (:func:`shown_name`, or for a page
    :func:`by_its_ends`) shows it, also where a sentence starts with it capitalised (an
    incident's story)."""
    for name in sorted(set(names), key=len, reverse=True):
        shown = show(name, limit)
        if name and shown != name:
            text = text.replace(name, shown)
            text = text.replace(name[0].upper() + name[1:], shown[0].upper() + shown[1:])
    return text


def _span(finding: Finding) -> str:
    start, end = format_time(finding.start), format_time(finding.end)
    return start if start == end else f"{start}\n{end}"
