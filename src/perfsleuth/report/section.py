"""What a family's report section is: plain data the page renders the same way for all.

A :class:`Section` holds a title, text, an optional HTML fragment our own code escaped, plotly
figures and small tables; each family's ``report.section(analysis)`` builds one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from markupsafe import Markup

if TYPE_CHECKING:
    from plotly.graph_objects import Figure

__all__ = ["Cell", "Section", "Table"]


Cell: TypeAlias = str | int | float
"""A table cell: text is shown as is (escaped); numbers are right-aligned, floats to 6 digits."""


@dataclass(frozen=True, slots=True)
class Table:
    """A small table for a :class:`Section`: column headings and rows of cells."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(row) for row in self.rows))
        for number, row in enumerate(self.rows, 1):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table row {number} has {len(row)} cell(s) for {len(self.columns)} column(s)"
                )


@dataclass(frozen=True, slots=True, eq=False)
class Section:
    """A part of the report for one detector family, shown after the findings.

    Parameters
    ----------
    title
        The section's heading.
    intro
        A paragraph of plain text (escaped) under the heading.
    fragment
        HTML our own code produced with every data string escaped (e.g.
        ``Markup(fit.summary().html)``). Only a :class:`markupsafe.Markup` is inserted as HTML;
        a plain ``str`` is escaped like any other text.
    figures
        plotly figures (``plotly.graph_objects.Figure``), drawn in a two-column grid (an odd
        last one takes the full width). Every data string in them must already be escaped for
        plotly.js, which reads text as a small subset of HTML.
    tables
        Small tables shown beside the fragment.
    family
        The detector family the section belongs to (a key of
        :data:`perfsleuth.families.FAMILIES`, e.g. ``"changepoints"``): the page shows it
        in that family's block, before the family's findings. Empty: after the blocks.
    """

    title: str
    intro: str = ""
    fragment: Markup | str | None = None
    figures: Sequence[Figure] = ()
    tables: Sequence[Table] = ()
    family: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "figures", tuple(self.figures))
        object.__setattr__(self, "tables", tuple(self.tables))
