"""Scan process frames: every node's periods built in one pass, every check run on them.

:func:`scan_columns` is the one computation: it turns the rows of any number of nodes into
their :class:`~perfsleuth.processes.periods.Periods` (nodes in chunks of about
:data:`CHUNK_ROWS` rows, so memory stays bounded) and runs the chosen checks on all of them at
once. Everything else goes through it:

* :func:`scan_nodes` — ``(node, NodeCheck)`` for every node of a frame, in node order; the
  detector (:class:`~perfsleuth.processes.detector.ProcessDetector`) builds its analysis from it;
* :func:`scan` — its findings, ordered; :func:`scan_node` and :func:`check_node` — one node's;
* the fleet runner reads each task's partitions as :class:`~perfsleuth.processes.periods.Columns`
  and calls :func:`scan_columns` itself (no pandas frame in between).

:func:`attach_nodes` joins a node table (``node, ncpu, os``) into a process frame, since the
checks expect the node's context on its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from perfsleuth.errors import DataError
from perfsleuth.findings import Finding, ordered
from perfsleuth.frames import coverage_of, normalise
from perfsleuth.processes.checks import CHECKS, CheckName, Scan, min_life
from perfsleuth.processes.coverage import CheckCoverage, coverage
from perfsleuth.processes.periods import Columns, NodePeriods, Periods, build
from perfsleuth.processes.rules import DEFAULT_RULES, ProcessRules

__all__ = [
    "CHUNK_ROWS",
    "ColumnsScan",
    "NodeCheck",
    "attach_nodes",
    "check_node",
    "scan",
    "scan_columns",
    "scan_node",
    "scan_nodes",
    "skip_nodes",
]

CHUNK_ROWS = 2_000_000
"""Rows scanned together (whole nodes): bigger frames are scanned node chunk by node chunk."""


@dataclass(frozen=True, slots=True, eq=False)
class NodeCheck:
    """One node as scanned: its periods, what it offered each check, and the findings."""

    periods: NodePeriods
    coverage: tuple[CheckCoverage, ...]
    findings: tuple[Finding, ...]
    saturated: int
    covered: int


def _chosen(kinds: Iterable[str] | None) -> list[CheckName]:
    chosen = list(CHECKS) if kinds is None else list(kinds)
    unknown = [k for k in chosen if k not in CHECKS]
    if unknown:
        raise DataError(f"unknown process check(s) {unknown}; known: {', '.join(CHECKS)}")
    return cast(list[CheckName], chosen)


def _chunks(cols: Columns) -> Iterator[Columns]:
    """Whole nodes, about CHUNK_ROWS rows at a time."""
    if len(cols) <= CHUNK_ROWS:
        yield cols
        return
    order = np.argsort(cols.node, kind="stable")
    per_node = np.bincount(cols.node, minlength=len(cols.nodes))
    ends = np.cumsum(per_node)
    start = 0
    while start < len(order):
        stop = int(ends[np.searchsorted(ends, start + CHUNK_ROWS, side="right") - 1])
        stop = stop if stop > start else int(ends[np.searchsorted(ends, start, side="right")])
        yield cols.take(order[start:stop])
        start = stop


@dataclass(frozen=True, slots=True, eq=False)
class ColumnsScan:
    """What :func:`scan_columns` found in one chunk of nodes."""

    periods: Periods
    findings: tuple[Finding, ...]
    coverage: list[tuple[CheckCoverage, ...]]


def scan_columns(
    cols: Columns, rules: ProcessRules = DEFAULT_RULES, kinds: Iterable[str] | None = None
) -> Iterator[ColumnsScan]:
    """Build the periods of every node of ``cols`` (a chunk at a time) and run the checks.

    Nodes the never-alert list covers must already be left out (see :func:`skip_nodes`).
    """
    chosen = _chosen(kinds)
    for chunk in _chunks(cols):
        if not len(chunk):
            continue
        data = build(chunk, rules, min_life=min_life(rules, chosen))
        scan_ = Scan(data, rules)
        findings: list[Finding] = []
        for kind in chosen:
            findings.extend(CHECKS[kind](scan_))
        yield ColumnsScan(data, tuple(findings), coverage(data, rules, tuple(chosen)))


def skip_nodes(cols: Columns, rules: ProcessRules) -> tuple[Columns, list[str]]:
    """``cols`` without the nodes the never-alert list covers, and those nodes' names."""
    never = [i for i, node in enumerate(cols.nodes) if rules.never_node(node)]
    if not never:
        return cols, []
    present = np.bincount(cols.node, minlength=len(cols.nodes)) > 0
    skipped = [cols.nodes[i] for i in never if present[i]]
    keep = ~np.isin(cols.node, never)
    return cols.take(np.flatnonzero(keep)), skipped


def _columns(frame: pd.DataFrame) -> Columns:
    info = coverage_of(frame)
    if info is None or info.contract != "process":
        frame = normalise(frame, "process")
    return Columns.of(frame)


def scan_nodes(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> Iterator[tuple[str, NodeCheck | None]]:
    """``(node, NodeCheck)`` for each node of a process frame, in node order; ``None`` for
    nodes the never-alert list covers (nothing is computed for them).

    The frame is normalised here if it is not a normalised process frame already.
    """
    chosen = _chosen(kinds)
    if len(frame) == 0:
        return
    cols, skipped = skip_nodes(_columns(frame), rules)
    results: dict[str, NodeCheck | None] = dict.fromkeys(skipped)
    for part in scan_columns(cols, rules, chosen):
        results.update(_per_node(part))
    for node in sorted(results):
        yield node, results[node]


def _per_node(part: ColumnsScan) -> dict[str, NodeCheck]:
    data = part.periods
    index = {name: n for n, name in enumerate(data.nodes)}
    found: dict[int, list[Finding]] = {}
    for finding in part.findings:
        node = finding.evidence_dict().get("node")
        found.setdefault(index[str(node)], []).append(finding)
    saturated = (data.saturated & data.covered).sum(axis=1)
    covered = data.covered.sum(axis=1)
    present = np.bincount(data.node_of, minlength=len(data.nodes))
    out = {}
    for n, name in enumerate(data.nodes):
        if not data.length[n] > 0 or (not present[n] and not data.processes[n]):
            continue
        out[name] = NodeCheck(
            periods=data.node(n),
            coverage=part.coverage[n],
            findings=tuple(found.get(n, ())),
            saturated=int(saturated[n]),
            covered=int(covered[n]),
        )
    return out


def check_node(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> NodeCheck | None:
    """Every check in ``kinds`` (default: all, in :data:`CHECKS` order) on one node's rows.

    ``None`` when there are no rows or the never-alert list covers the node.
    """
    if len(frame) == 0:
        return None
    nodes = frame["node"].unique()
    if len(nodes) != 1:
        raise DataError(f"check_node takes one node's rows, got {len(nodes)} nodes")
    for _, checked in scan_nodes(frame, rules, kinds):
        return checked
    return None


def scan_node(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """The findings of :func:`check_node` (``[]`` for an empty or never-alerted node)."""
    checked = check_node(frame, rules, kinds)
    return [] if checked is None else list(checked.findings)


def scan(
    frame: pd.DataFrame,
    rules: ProcessRules = DEFAULT_RULES,
    kinds: Iterable[str] | None = None,
) -> list[Finding]:
    """Every node's findings, most severe first."""
    if len(frame) == 0:
        _chosen(kinds)
        return []
    cols, _ = skip_nodes(_columns(frame), rules)
    return ordered(f for part in scan_columns(cols, rules, kinds) for f in part.findings)


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
