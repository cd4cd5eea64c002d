"""Reports of findings: a self-contained HTML page, Rich console tables, JSON and JSON lines.

plotly is imported only when a figure is drawn, so importing this package stays light.
"""

from __future__ import annotations

from perfsleuth.report.changepoint import changepoint_section
from perfsleuth.report.console import findings_table, summary_counts
from perfsleuth.report.formats import render_findings
from perfsleuth.report.html import Section, Table, render_html, write_html
from perfsleuth.report.workload import workload_section

__all__ = [
    "Section",
    "Table",
    "changepoint_section",
    "findings_table",
    "render_findings",
    "render_html",
    "summary_counts",
    "workload_section",
    "write_html",
]
