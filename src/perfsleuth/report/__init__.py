"""Reports of findings and analyses: a self-contained HTML page, console tables, JSON lines.

Each family draws its own analysis (``perfsleuth.<family>.report.section``); this package holds
the page around those sections (:mod:`.html`), the shared plot helpers (:mod:`.plots`), and the
console and JSON renderers. plotly is imported only when a figure is drawn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each name is imported from its module when first used (PEP 562), so that printing JSON does
# not import rich (console) or the HTML page's modules.
_HOME = {
    "Section": "html",
    "Table": "html",
    "render_html": "html",
    "write_html": "html",
    "findings_table": "console",
    "summary_counts": "console",
    "render_findings": "formats",
    "render_json": "formats",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"perfsleuth.report.{home}"), name)
    globals()[name] = value
    return value
