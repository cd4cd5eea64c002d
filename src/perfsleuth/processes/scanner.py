"""Scan process frames: one pure per-node function, mapped over the nodes of a frame.

:func:`check_node` is the one computation: it turns one node's rows into its
:class:`~perfsleuth.processes.periods.NodePeriods` once and runs the chosen checks on them.
Everything else goes through it:

* :func:`scan_node` — its findings only; what a fleet runner maps over partitions (locally or
  on Dask): no state, no I/O;
* :func:`scan_nodes` — :func:`check_node` for every node of a frame, in node order; the
  detector (:class:`~perfsleuth.processes.detector.ProcessDetector`) builds its analysis from it;
* :func:`scan` — the findings of :func:`scan_nodes`, ordered (a convenience).

:func:`attach_nodes` joins a node table (``node, ncpu, os``) into a process frame, since the
checks expect the node's context on its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

import pandas as pd

from perfsleuth.errors import DataError
from perfsleuth.findings import Finding, ordered
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.processes.checks import CHECKS, CheckName
from perfsleuth.processes.periods import NodePeriods, node_periods
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules

__all__ = ["NodeCheck", "attach_nodes", "check_node", "scan", "scan_node", "scan_nodes"]


@dataclass(frozen=True, slots=True, eq=False)
class NodeCheck:
    """One node's periods and what the checks found on them (in check order)."""

    periods: NodePeriods
    findings: tuple[Finding, ...]


def _chosen(kinds: Iterable[str] | None) -> list[CheckName]:
    chosen = list(CHECKS) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in CHECKS]
    if unknown:
        raise DataError(f"unknown process check(s) {unknown}; known: {', '.join(CHECKS)}")
    return cast(list[CheckName], chosen)


def check_node(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> NodeCheck | None:
    """Every check in ``kinds`` (default: all, in :data:`CHECKS` order) on one node's rows.

    The node's periods are computed once and shared by the checks. ``None`` when there are
    no rows or the never-alert list covers the node (nothing is computed for it).
    """
    chosen = _chosen(kinds)
    if len(frame) == 0:
        return None
    node = str(frame["node"].iat[0])
    if rules.never_node(node):
        return None
    settings = rules.settings
    data = node_periods(
        frame,
        period=settings.period,
        per_window=settings.periods_per_window,
        saturation=settings.saturation,
    )
    findings: list[Finding] = []
    for kind in chosen:
        findings.extend(CHECKS[kind](data, rules))
    return NodeCheck(data, tuple(findings))


def scan_node(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """The findings of :func:`check_node` (``[]`` for an empty or never-alerted node)."""
    checked = check_node(frame, rules, kinds)
    return [] if checked is None else list(checked.findings)


def scan_nodes(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> Iterator[tuple[str, NodeCheck | None]]:
    """``(node, check_node(rows))`` for each node of a process frame, in node order.

    The frame is normalised here if it is not a normalised process frame already.
    """
    chosen = _chosen(kinds)
    if len(frame) == 0:
        return
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "process":
        frame = normalise(frame, "process")
    for node, rows in frame.groupby("node", sort=True, observed=True):
        yield str(node), check_node(rows, rules, chosen)


def scan(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """Every node's findings (:func:`scan_nodes`), most severe first."""
    return ordered(
        finding
        for _, checked in scan_nodes(frame, rules, kinds)
        if checked is not None
        for finding in checked.findings
    )


def attach_nodes(
    frame: pd.DataFrame, nodes: pd.DataFrame, *, source: str = "nodes"
) -> pd.DataFrame:
    """Copy ``ncpu`` and ``os`` of a node table onto each row of a process frame.

    Columns the process frame already has win; a node of the frame missing from the table is
    an error naming it.
    """
    table = normalise(nodes, "node", source=source)
    wanted = [c for c in ("ncpu", "os") if c not in frame.columns]
    if not wanted:
        return frame
    missing = sorted(set(frame["node"].astype(str)) - set(table["node"]))
    if missing:
        raise DataError(f"{source}: no row for node(s) {', '.join(map(repr, missing[:5]))}")
    mapping = table.set_index("node")
    out = frame.copy()
    for column in wanted:
        out[column] = out["node"].astype(str).map(mapping[column])
    out.attrs = dict(frame.attrs)
    return out
