"""Scan process frames: one pure per-node function, mapped over the nodes of a frame.

:func:`scan_node` is what a fleet runner maps over partitions (locally or on Dask): it reads one
node's rows and the rules and returns findings, with no state and no I/O. :func:`scan` runs it
for every node of a frame. :func:`attach_nodes` joins a node table (``node, ncpu, os``) into a
process frame, since the checks expect the node's context on its rows.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from perfsleuth.errors import DataError
from perfsleuth.findings import Finding, ordered
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.process.checks import CHECKS
from perfsleuth.process.periods import NodePeriods, node_periods
from perfsleuth.process.rules import DEFAULT_RULES, ProcessRules

__all__ = ["attach_nodes", "periods_of", "scan", "scan_node"]


def periods_of(frame: pd.DataFrame, rules: ProcessRules = DEFAULT_RULES) -> NodePeriods:
    """One node's rows as period matrices, with the rules' period, window and saturation."""
    settings = rules.settings
    return node_periods(
        frame,
        period=settings.period,
        per_window=settings.periods_per_window,
        saturation=settings.saturation,
    )


def scan_node(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """Every check in ``kinds`` (default: all) on one node's rows of a process frame."""
    chosen = list(CHECKS) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in CHECKS]
    if unknown:
        raise DataError(f"unknown process check(s) {unknown}; known: {', '.join(CHECKS)}")
    if len(frame) == 0:
        return []
    node = str(frame["node"].iat[0])
    if rules.never_node(node):
        return []
    data = periods_of(frame, rules)
    findings: list[Finding] = []
    for kind in chosen:
        findings.extend(CHECKS[kind](data, rules))
    return findings


def scan(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """:func:`scan_node` for each node of a process frame (normalised here if it is not)."""
    if len(frame) == 0:
        return []
    coverage = coverage_of(frame)
    if coverage is None or coverage.contract != "process":
        frame = normalise(frame, "process")
    chosen = None if kinds is None else list(kinds)
    findings: list[Finding] = []
    for _, rows in frame.groupby("node", sort=True, observed=True):
        findings.extend(scan_node(rows, rules, chosen))
    return ordered(findings)


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
