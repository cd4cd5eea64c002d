"""Reports of findings and analyses: a self-contained HTML page, console tables, JSON lines.

Each family draws its own analysis (``perfsleuth.<family>.report.section``); this package holds
the page around those sections (:mod:`.html`), the shared plot helpers (:mod:`.plots`), and the
console and JSON renderers. plotly is imported only when a figure is drawn.
"""

from __future__ import annotations

from perfsleuth.report.console import findings_table, summary_counts
from perfsleuth.report.formats import render_findings, render_json
from perfsleuth.report.html import Section, Table, render_html, write_html

__all__ = [
    "Section",
    "Table",
    "findings_table",
    "render_findings",
    "render_html",
    "render_json",
    "summary_counts",
    "write_html",
]
