"""The checks: pure functions of :class:`~perfsleuth.processes.periods.Periods` and the rules.

Each check looks at every process of every node at once (masks and counts over the period
matrices), then writes a finding for each hit. The pathologies (Kaminski 2003, §3 and the
appendix; DESIGN §2.4):

* :func:`cpu_loops` — the simple loop: a process that wants a whole CPU (``mean ± deviation``
  per OS) for at least ``hours + extra_hours`` periods **in a row** within a window ("it must
  loop for a span of time": a job that works and rests in turns is not a loop). What it
  wanted is its CPU plus its run-queue wait when the source measures the wait (the collector
  does): a loop starved by other work still wants a whole CPU, and is still a loop. Without
  the wait, as in the paper, only periods in which the machine is not saturated are judged
  (saturated ones neither count nor break the run).
* :func:`constrained_loops` — loops that cannot get a whole CPU because they compete with each
  other: with the wait, loops as above that got less than the band on a saturated machine
  alongside other such loops; without it, the paper's two ways on saturated periods: every
  process above the cull is on the review list for that period, pairs are judged over the
  periods **both** are on the list (means and σ recomputed per pair): correlation ≥
  ``correlation`` over at least ``hours`` shared periods ("real variable work present"); when
  no pair on the node passes that in the window, the means test (each one's CPU within
  ``means_sigmas`` σ of the other's mean in at least ``hours`` shared periods, "dormant
  machine"), only for steady suspects (σ/μ ≤ ``means_max_cv``); a suspect that follows the
  business volume (correlation ≥ ``max_volume_correlation``) is work, not a loop.
* :func:`hums` — at least ``hum.min_cpu`` (below the loop band, and not wanting a whole CPU)
  in ``hum.hours`` periods of a window, steadily (σ/μ ≤ ``hum.max_cv``), and, with a volume,
  unrelated to it. Saturated periods count when the wait shows it was not a starved loop.
* :func:`ramps`, :func:`saw_tooths` — per process over its life (a process's identity is its
  node, pid and start time: short-lived processes are churn, never a ramp), and per process
  *name* only for the groups the rules mark ``by_name`` (a service restarted under new pids),
  with :mod:`perfsleuth.processes.kernels`.
* :func:`caps` — a named group's CPU above ``max_cpu_fraction`` of the box (or its memory
  above ``max_rss_bytes``) in at least ``min_periods`` periods of a window.
* :func:`capture` — Σ process CPU / machine CPU outside ``[low, high]`` in at least
  ``min_fraction`` of the busy periods.

Findings of consecutive windows for the same subject are merged into one. The entity is
``node/name[pid]`` for a process, ``node/name`` for a name, ``node/group`` for a group and
``node`` for the machine; the evidence always holds ``node`` (notifications key on it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from perfsleuth.errors import DataError
from perfsleuth.findings import Evidence, Finding, Kind, Severity
from perfsleuth.processes.kernels import _MAX_POINTS, SawTooth, find_ramp, find_saw_tooth
from perfsleuth.processes.periods import Periods
from perfsleuth.processes.rules import ProcessRules, matches

__all__ = [
    "CHECKS",
    "CheckName",
    "Scan",
    "caps",
    "capture",
    "constrained_loops",
    "cpu_loops",
    "hums",
    "min_life",
    "ramps",
    "saw_tooths",
]

Check = Callable[["Scan"], list[Finding]]

CheckName = Literal[
    "cpu_loop",
    "constrained_loop",
    "hum",
    "memory_ramp",
    "saw_tooth",
    "cap_exceeded",
    "capture_ratio",
]
"""The name of a check: what its findings carry as ``kind`` and ``detector``."""

_EPS = 1e-9
Float = NDArray[np.float64]
Int = NDArray[np.int64]
Bool = NDArray[np.bool_]


# -- shared helpers ---------------------------------------------------------------------------


def need_ncpu(data: Periods, check: str) -> None:
    """Raise :class:`DataError` when the nodes' CPU count is unknown."""
    if not np.isfinite(data.ncpu).all():
        node = data.nodes[int(np.flatnonzero(~np.isfinite(data.ncpu))[0])]
        raise DataError(
            f"node {node!r}: the {check} check needs the machine's CPU count: give the "
            "command a node table with --nodes nodes.csv (columns node, ncpu, os), add an "
            "'ncpu' column to the process frame, or join one in Python with "
            "perfsleuth.processes.scanner.attach_nodes"
        )


def _corr(a: Float, b: Float) -> float:
    if len(a) < 3 or a.std() == 0 or b.std() == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


@dataclass
class _Hit:
    """One window's verdict for one subject, to be merged with its neighbours."""

    window: int
    first: int
    last: int
    count: int
    values: list[float] = field(default_factory=list)
    extra: dict[str, float | int | str] = field(default_factory=dict)


def _merged(hits: list[_Hit]) -> Iterator[list[_Hit]]:
    """Runs of hits in consecutive windows."""
    run: list[_Hit] = []
    for hit in sorted(hits, key=lambda h: h.window):
        if run and hit.window != run[-1].window + 1:
            yield run
            run = []
        run.append(hit)
    if run:
        yield run


class Scan:
    """One :class:`Periods` and the rules, with what the checks share (computed once)."""

    def __init__(self, data: Periods, rules: ProcessRules) -> None:
        self.data = data
        self.rules = rules
        self.node_of = data.node_of
        self.window = data.window()
        self.n_windows = int(self.window.max()) + 1 if self.window.size else 0
        seconds = data.period.total_seconds()
        self.word = "hours" if seconds == 3600 else f"periods of {seconds:g} s"
        os_rules = [rules.os_rule(o) for o in data.os]
        self.low = np.array([r.low for r in os_rules])[self.node_of]
        self.high = np.array([r.high for r in os_rules])[self.node_of]
        self.hours = np.array([r.hours for r in os_rules], dtype=np.int64)
        never = rules.never_alert
        quiet_node = np.array([matches(n, never.nodes) for n in data.nodes], dtype=np.bool_)
        quiet_name = np.array([matches(n, never.processes) for n in data.names], dtype=np.bool_)
        quiet_user = np.array([matches(u, never.users) for u in data.users], dtype=np.bool_)
        self.alertable: Bool = ~(
            quiet_node[self.node_of] | quiet_name[data.name_code] | quiet_user[data.user_code]
        )
        self._extra: dict[tuple[str, int, str], int] = {}
        self._series: dict[str, tuple[_Series, Bool] | None] = {}
        self._teeth: dict[tuple[str, int], SawTooth | None] = {}
        self._loop_state: tuple[Bool, Bool] | None = None
        self._loop_runs: dict[tuple[int, int], tuple[int, int, int]] | None = None

    def extra(self, p: int, kind: str) -> int:
        """Exception hours of process row ``p`` for ``kind``."""
        n = int(self.node_of[p])
        key = (kind, int(self.data.name_code[p]), self.data.os[n])
        if key not in self._extra:
            self._extra[key] = self.rules.extra_hours(self.data.name(p), key[2], kind)
        return self._extra[key]

    def series(self, column: str) -> tuple[_Series, Bool] | None:
        """The series ramps and saw-tooths read in ``column``, and which could be saw-tooths."""
        if column not in self._series:
            s = _series(self, column)
            self._series[column] = (
                None if s is None else (s, _may_saw(s.values, s.by_name, self.rules))
            )
        return self._series[column]

    def tooth(self, column: str, k: int) -> SawTooth | None:
        """The saw-tooth of series ``k`` of ``column`` (found once for both checks)."""
        if (column, k) not in self._teeth:
            got = self.series(column)
            tooth = None
            if got is not None and got[1][k]:
                s = got[0]
                n = int(s.node_of[k])
                values = _saw_input(s.values[k, : int(self.data.length[n])], bool(s.by_name[k]))
                tooth = find_saw_tooth(values, **_ramp_policy(self.rules))  # type: ignore[arg-type]
            self._teeth[(column, k)] = tooth
        return self._teeth[(column, k)]

    def rows_window(self) -> Int:
        """Window of each (process, period)."""
        windows: Int = self.window[self.node_of]
        return windows

    def in_runs(self, mask: Bool, breaking: Bool, needed: Int) -> Bool:
        """Periods of ``mask`` in a stretch of at least ``needed`` (per row) of them within a
        window; ``breaking`` periods end a stretch, the rest neither count nor end one."""
        windows = self.rows_window()
        ends = breaking.copy()
        ends[:, 1:] |= windows[:, 1:] != windows[:, :-1]  # a window starts a new stretch
        stretch = np.cumsum(ends, axis=1) + (np.arange(len(mask)) * (mask.shape[1] + 1))[:, None]
        sizes = np.bincount(stretch[mask], minlength=int(stretch.max()) + 1 if stretch.size else 0)
        long_enough = sizes[stretch] >= needed[:, None]
        kept: Bool = mask & long_enough
        return kept

    def counts(self, mask: Bool) -> Int:
        """True periods of ``mask`` (processes × periods) per (process, window)."""
        rows, cols = np.nonzero(mask)
        flat = rows * self.n_windows + self.window[self.node_of[rows], cols]
        counts: Int = np.bincount(flat, minlength=len(mask) * self.n_windows).reshape(
            len(mask), self.n_windows
        )
        return counts

    def span(self, n: int, window: int) -> slice:
        """The periods of window ``window`` of node ``n``."""
        where = np.flatnonzero(self.window[n, : int(self.data.length[n])] == window)
        return slice(int(where[0]), int(where[-1]) + 1) if len(where) else slice(0, 0)

    def finding(
        self,
        kind: Kind,
        n: int,
        entity: str,
        metric: str,
        first: int,
        last: int,
        severity: Severity,
        explanation: str,
        evidence: list[Evidence],
    ) -> Finding:
        """A finding about node ``n`` from its period ``first`` to the end of ``last``."""
        return Finding(
            kind=kind,
            entity=f"{self.data.nodes[n]}/{entity}" if entity else self.data.nodes[n],
            metric=metric,
            start=self.data.start(n, first),
            end=self.data.end(n, last),
            severity=severity,
            explanation=explanation,
            evidence=tuple(evidence),
            detector=kind.value,
        )

    def evidence(self, p: int) -> list[Evidence]:
        """Who process row ``p`` is: node, name, pid, user, OS."""
        n = int(self.node_of[p])
        return [
            Evidence("node", self.data.nodes[n]),
            Evidence("process", self.data.name(p)),
            Evidence("pid", int(self.data.pid[p])),
            Evidence("user", self.data.user(p)),
            Evidence("os", self.data.os[n]),
        ]

    def day(self, n: int, t: int) -> str:
        return f"{self.data.start(n, t):%Y-%m-%d %H:%M} UTC"

    # -- loops: what wanting a whole CPU looks like, for cpu_loop and constrained_loop --------

    def loop_state(self) -> tuple[Bool, Bool]:
        """``(looping, breaking)`` per (process, period); the rest is neutral (not judged)."""
        if self._loop_state is None:
            data = self.data
            covered = data.covered[self.node_of]
            known = data.has_wait()
            wanted = data.runnable()
            judged = covered & (known | ~data.saturated[self.node_of])
            # the cull weeds out processes that use little; one that wants a whole CPU does not
            looping = (
                judged
                & data.present
                & (wanted >= self.low[:, None] - _EPS)
                & (wanted <= self.high[:, None] + _EPS)
                & (known | (data.cpu >= self.rules.settings.cull_cpu - _EPS))
            )
            # absent while its node was sampled: not running, so not looping
            breaking = covered & ~looping & (judged | ~data.present)
            self._loop_state = (looping, breaking)
        return self._loop_state

    def loop_runs(self) -> dict[tuple[int, int], tuple[int, int, int]]:
        """(process, window) → (first, last, looping periods) of its longest run of looping
        periods (neutral periods skipped), for runs of at least the OS's ``hours``."""
        if self._loop_runs is None:
            looping, breaking = self.loop_state()
            windows = self.rows_window()
            count = np.cumsum(looping, axis=1, dtype=np.int64)
            starts_window = np.ones_like(looping)
            starts_window[:, 1:] = windows[:, 1:] != windows[:, :-1]
            base = np.where(
                breaking, count, np.where(starts_window, count - looping, np.iinfo(np.int64).min)
            )
            run = count - np.maximum.accumulate(base, axis=1)
            needed = self.hours[self.node_of]
            out: dict[tuple[int, int], tuple[int, int, int]] = {}
            rows = np.flatnonzero((run >= needed[:, None]).any(axis=1))
            for p in rows.tolist():
                for w in np.unique(windows[p][run[p] >= needed[p]]).tolist():
                    inside = windows[p] == w
                    length = int(run[p][inside].max())
                    end = int(np.flatnonzero(inside & (run[p] == length))[0])
                    begin = end
                    while begin > 0 and not breaking[p, begin - 1] and windows[p, begin - 1] == w:
                        begin -= 1
                    first = begin + int(np.argmax(looping[p, begin : end + 1]))
                    out[(p, w)] = (first, end, length)
            self._loop_runs = out
        return self._loop_runs

    def contending(self, p: int, w: int) -> list[int]:
        """The other loops process row ``p``'s loop in window ``w`` was starved by: when it
        got less than the band on average, its wait was measured, and other processes of its
        node looped in at least the OS's ``hours`` of the same periods (else none)."""
        first, last, _ = self.loop_runs()[(p, w)]
        looping, _ = self.loop_state()
        data = self.data
        periods = np.flatnonzero(looping[p, first : last + 1]) + first
        known = data.has_wait()[p, periods]
        if known.mean() < 0.5 or data.cpu[p, periods].mean() >= self.low[p] - _EPS:
            return []
        n = int(self.node_of[p])
        hours = int(self.hours[n])
        return [
            q
            for q in range(int(data.bounds[n]), int(data.bounds[n + 1]))
            if q != p and (q, w) in self.loop_runs() and looping[q, periods].sum() >= hours
        ]


# -- simple loops -----------------------------------------------------------------------------


def _loop_hits(scan: Scan, kind: str, contending: bool) -> dict[int, list[_Hit]]:
    """Loop runs of each process row long enough (with its exception hours), that are (or are
    not) loops contending with other loops."""
    data = scan.data
    looping, _ = scan.loop_state()
    hits: dict[int, list[_Hit]] = {}
    for (p, w), (first, last, length) in sorted(scan.loop_runs().items()):
        if not scan.alertable[p]:
            continue
        needed = int(scan.hours[scan.node_of[p]]) + scan.extra(p, kind)
        if length < needed:
            continue
        partners = scan.contending(p, w)
        if bool(partners) != contending:
            continue
        periods = np.flatnonzero(looping[p, first : last + 1]) + first
        n = int(scan.node_of[p])
        span = scan.span(n, w)
        wait = data.wait[p, periods] if data.wait is not None else np.full(len(periods), np.nan)
        hit = _Hit(w, first, last, length)
        hit.values = data.cpu[p, periods].tolist()
        hit.extra = {
            "needed": needed,
            "extra": needed - int(scan.hours[n]),
            "of": span.stop - span.start,
            "wait": float(np.nanmean(wait)) if np.isfinite(wait).any() else float("nan"),
            "saturated": float(data.saturated[n, periods].mean()),
            "partners": ", ".join(sorted(data.label(q) for q in partners)),
        }
        hits.setdefault(p, []).append(hit)
    return hits


def cpu_loops(scan: Scan) -> list[Finding]:
    """The simple loop (see the module docstring)."""
    data, rules = scan.data, scan.rules
    need_ncpu(data, "cpu_loop")
    findings = []
    for p, plist in sorted(_loop_hits(scan, "cpu_loop", contending=False).items()):
        n = int(scan.node_of[p])
        rule = rules.os_rule(data.os[n])
        label, node = data.label(p), data.nodes[n]
        for run in _merged(plist):
            values = [v for h in run for v in h.values]
            best = max(run, key=lambda h: h.count)
            mean = float(np.mean(values))
            wait = float(best.extra["wait"])
            since = (
                f"{best.count} of {best.extra['of']} {scan.word} in a row "
                f"(from {scan.day(n, run[0].first)})"
            )
            if math.isfinite(wait) and mean < rule.low - _EPS:
                explanation = (
                    f"{label} on {node} wanted a whole CPU for {since}: it used {mean:.2f} and "
                    f"waited for a CPU {wait:.2f} of the time, on a machine saturated in "
                    f"{float(best.extra['saturated']):.0%} of them: a CPU loop held back by "
                    "other work. Stop it and ask the owner to fix the code."
                )
            else:
                spare = "" if math.isfinite(wait) else " while the machine had CPU to spare"
                explanation = (
                    f"{label} on {node} used {mean:.2f} of a CPU for {since}{spare}: a CPU "
                    "loop. Stop it and ask the owner to fix the code."
                )
            evidence = [
                *scan.evidence(p),
                Evidence("looping_periods", best.count),
                Evidence("needed_periods", int(best.extra["needed"])),
                Evidence("exception_hours", int(best.extra["extra"])),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("band_low", round(rule.low, 4), "cores"),
                Evidence("band_high", round(rule.high, 4), "cores"),
                Evidence("ncpu", float(data.ncpu[n])),
            ]
            if math.isfinite(wait):
                evidence.append(Evidence("mean_wait", round(wait, 4), "cores"))
                evidence.append(
                    Evidence("saturated_share", round(float(best.extra["saturated"]), 4))
                )
            findings.append(
                scan.finding(
                    Kind.CPU_LOOP,
                    n,
                    label,
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- constrained loops ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Pair:
    i: int
    j: int
    method: str
    statistic: float
    periods: NDArray[np.intp]


def _pairs(scan: Scan, n: int, span: slice, review: Bool, cpu: Float) -> list[_Pair]:
    """The paper's pairs on one node's window (``review`` and ``cpu``: its processes ×
    periods; pairs and periods are numbered within the node)."""
    rules = scan.rules
    rule = rules.os_rule(scan.data.os[n])
    policy = rules.constrained
    review = review[:, span]
    candidates = np.flatnonzero(review.sum(axis=1) >= rule.hours)
    volume = None if scan.data.volume is None else scan.data.volume[n, span]
    shared_sets = []
    for a, i in enumerate(candidates.tolist()):
        for j in candidates[a + 1 :].tolist():
            shared = np.flatnonzero(review[i] & review[j])
            if len(shared) < rule.hours:
                continue
            x, y = cpu[i, span][shared], cpu[j, span][shared]
            if volume is not None:
                v = volume[shared]
                if any(
                    _corr(s, v) >= policy.max_volume_correlation  # follows business: work
                    for s in (x, y)
                ):
                    continue
            shared_sets.append((int(i), int(j), shared, x, y))
    pairs = []
    for i, j, shared, x, y in shared_sets:
        r = _corr(x, y)
        if math.isfinite(r) and r >= policy.correlation:
            pairs.append(_Pair(i, j, "correlation", r, shared + span.start))
    if pairs:
        return pairs
    k = policy.means_sigmas
    for i, j, shared, x, y in shared_sets:
        mx, my, sx, sy = x.mean(), y.mean(), x.std(ddof=1), y.std(ddof=1)
        if (
            not (mx > 0 and my > 0)
            or sx / mx > policy.means_max_cv
            or sy / my > policy.means_max_cv
        ):
            continue
        within = (np.abs(x - my) <= k * sy) & (np.abs(y - mx) <= k * sx)
        if within.sum() >= rule.hours:
            pairs.append(_Pair(i, j, "means", float(abs(mx - my)), shared[within] + span.start))
    return pairs


def constrained_loops(scan: Scan) -> list[Finding]:
    """Constrained loops (see the module docstring)."""
    data, rules = scan.data, scan.rules
    need_ncpu(data, "constrained_loop")
    hits = _loop_hits(scan, "constrained_loop", contending=True)
    measured = set(hits)
    # the paper's pairs, on saturated periods without a measured wait, kept only where a
    # process stays on the review list for `hours` periods in a row: a loop loops on, a job
    # that works and rests in turns competes only in its working stretches. What ends a
    # stretch is resting (under half the cull, or gone); unsaturated or unsampled periods,
    # and a starved loop's dips just under the cull, neither count nor end it.
    saturated = (data.saturated & data.covered)[scan.node_of]
    known = data.has_wait()
    cull = rules.settings.cull_cpu
    review = (data.cpu > cull) & data.present & saturated & ~known
    breaking = saturated & ~known & ~((data.cpu > cull / 2) & data.present)
    review &= scan.in_runs(review, breaking, scan.hours[scan.node_of])
    counts = scan.counts(review)
    suspects = counts >= scan.hours[scan.node_of][:, None]
    for n, w in sorted(
        {(int(scan.node_of[p]), int(w)) for p, w in zip(*np.nonzero(suspects), strict=True)}
    ):
        lo, hi = int(data.bounds[n]), int(data.bounds[n + 1])
        if suspects[lo:hi, w].sum() < 2:
            continue
        span = scan.span(n, w)
        hours = int(scan.hours[n])
        by_process: dict[int, list[tuple[int, _Pair]]] = {}
        for pair in _pairs(scan, n, span, review[lo:hi], data.cpu[lo:hi]):
            by_process.setdefault(pair.i, []).append((pair.j, pair))
            by_process.setdefault(pair.j, []).append((pair.i, pair))
        for q, partners in by_process.items():
            p = lo + q
            if not scan.alertable[p] or p in measured:
                continue
            needed = hours + scan.extra(p, "constrained_loop")
            kept = [(r, pair) for r, pair in partners if len(pair.periods) >= needed]
            if not kept:
                continue
            periods = np.unique(np.concatenate([pair.periods for _, pair in kept]))
            longest = max(kept, key=lambda rp: len(rp[1].periods))[1]
            hit = _Hit(w, int(periods[0]), int(periods[-1]), len(longest.periods))
            hit.values = data.cpu[p, periods].tolist()
            hit.extra = {
                "partners": ", ".join(sorted({data.label(lo + r) for r, _ in kept})),
                "method": longest.method,
                "statistic": longest.statistic,
                "needed": needed,
                "of": span.stop - span.start,
            }
            hits.setdefault(p, []).append(hit)
    findings = []
    for p, plist in sorted(hits.items()):
        n = int(scan.node_of[p])
        label, node = data.label(p), data.nodes[n]
        for run in _merged(plist):
            best = max(run, key=lambda h: h.count)
            mean = float(np.mean([v for h in run for v in h.values]))
            method = str(best.extra.get("method", "wait"))
            if method == "wait":
                how = (
                    f"it wanted a whole CPU but got {mean:.2f} (it waited "
                    f"{float(best.extra['wait']):.2f} of a CPU in the run queue)"
                )
            elif method == "correlation":
                how = f"its CPU moved with theirs (correlation {best.extra['statistic']:.2f})"
            else:
                how = "its CPU stayed within 2σ of theirs on an otherwise static machine"
            explanation = (
                f"{label} on {node} took {mean:.2f} of a CPU for {best.count} of "
                f"{best.extra['of']} {scan.word} on a saturated machine, competing with "
                f"{best.extra['partners']}; {how}: a constrained loop."
            )
            evidence = [
                *scan.evidence(p),
                Evidence("partners", str(best.extra["partners"])),
                Evidence("method", method),
            ]
            if method == "wait":
                evidence.append(Evidence("mean_wait", round(float(best.extra["wait"]), 4), "cores"))
            else:
                name = "correlation" if method == "correlation" else "mean_gap"
                evidence.append(Evidence(name, round(float(best.extra["statistic"]), 4)))
            evidence += [
                Evidence("shared_periods", best.count),
                Evidence("needed_periods", int(best.extra["needed"])),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("ncpu", float(data.ncpu[n])),
            ]
            findings.append(
                scan.finding(
                    Kind.CONSTRAINED_LOOP,
                    n,
                    label,
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- hums -------------------------------------------------------------------------------------


def hums(scan: Scan) -> list[Finding]:
    """Steady consumption all day, unrelated to business volume."""
    data, rules = scan.data, scan.rules
    need_ncpu(data, "hum")
    policy = rules.hum
    known = data.has_wait()
    # what it takes when it gets the CPU: a poller on a starved machine gets less, not a hum less
    level = data.uncontended()
    humming = (
        data.present
        & data.covered[scan.node_of]
        & (known | ~data.saturated[scan.node_of])
        & (level >= max(policy.min_cpu, rules.settings.cull_cpu) - _EPS)
        & (level < scan.low[:, None] - _EPS)
        & (data.runnable() < scan.low[:, None] - _EPS)
    )
    counts = scan.counts(humming)
    hits: dict[int, list[_Hit]] = {}
    rows, windows = np.nonzero((counts >= policy.hours) & scan.alertable[:, None])
    for p, w in zip(rows.tolist(), windows.tolist(), strict=True):
        if counts[p, w] < policy.hours + scan.extra(p, "hum"):
            continue
        n = int(scan.node_of[p])
        where = np.flatnonzero(humming[p] & (scan.window[n] == w))
        values = level[p, where]
        cv = float(values.std() / values.mean())
        if cv > policy.max_cv:
            continue
        r = float("nan")
        if data.volume is not None:
            r = _corr(values, data.volume[n, where])
            if math.isfinite(r) and abs(r) >= policy.max_volume_correlation:
                continue
        span = scan.span(n, w)
        hit = _Hit(w, int(where[0]), int(where[-1]), int(counts[p, w]))
        hit.values = values.tolist()
        hit.extra = {
            "cv": cv,
            "r": r,
            "of": span.stop - span.start,
            "got": float(data.cpu[p, where].mean()),
        }
        hits.setdefault(p, []).append(hit)
    findings = []
    for p, plist in sorted(hits.items()):
        n = int(scan.node_of[p])
        label, node = data.label(p), data.nodes[n]
        for run in _merged(plist):
            best = max(run, key=lambda h: h.count)
            values = [v for h in run for v in h.values]
            mean = float(np.mean(values))
            volume_note = (
                f", unrelated to business volume (correlation {best.extra['r']:.2f})"
                if best.extra["r"] == best.extra["r"]
                else ""
            )
            kind_word = "shriek" if mean >= 0.5 * rules.os_rule(data.os[n]).mean else "hum"
            got = float(np.mean([h.extra["got"] for h in run]))
            starved = (
                f" when it got a CPU (it got {got:.2f}: other work kept it waiting)"
                if got < 0.8 * mean
                else ""
            )
            explanation = (
                f"{label} on {node} used a steady {mean:.2f} of a CPU{starved} in "
                f"{best.count} of {best.extra['of']} {scan.word}{volume_note}: a {kind_word} "
                "(polling with nothing to do?)."
            )
            evidence = [
                *scan.evidence(p),
                Evidence("humming_periods", best.count),
                Evidence("windows", len(run)),
                Evidence("mean_cpu", round(mean, 4), "cores"),
                Evidence("cv", round(float(best.extra["cv"]), 4)),
                Evidence("ncpu", float(data.ncpu[n])),
            ]
            if best.extra["r"] == best.extra["r"]:
                evidence.append(Evidence("volume_correlation", round(float(best.extra["r"]), 4)))
            findings.append(
                scan.finding(
                    Kind.HUM,
                    n,
                    label,
                    "cpu",
                    run[0].first,
                    run[-1].last,
                    Severity.INFO,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- ramps and saw-tooths ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Series:
    """The series ramps and saw-tooths look at: one per process over its life (``row`` into
    the periods), then one per name of the groups aggregated by name (``row`` -1)."""

    node_of: Int
    row: Int
    values: Float
    by_name: Bool

    def describe(self, data: Periods, k: int) -> tuple[str, str, str, tuple[int, ...]]:
        """``(label, name, user, pids)`` of series ``k``."""
        p = int(self.row[k])
        if p >= 0:
            pid = int(data.pid[p])
            return data.label(p), data.name(p), data.user(p), (pid,)
        named, j = data.by_name, k - int(np.count_nonzero(self.row >= 0))
        return named.name[j], named.name[j], named.user[j], named.pids[j]


def _series(scan: Scan, column: str) -> _Series | None:
    data = scan.data
    if column not in data.columns:
        return None
    named = data.by_name
    rows = np.arange(len(scan.node_of), dtype=np.int64)
    if len(named.name):  # members of a by-name group are followed by name only
        code = {name: c for c, name in enumerate(data.names)}
        width = len(data.names)
        pairs = zip(named.node_of.tolist(), named.name, strict=True)
        grouped = [n * width + code[name] for n, name in pairs]
        rows = rows[~np.isin(scan.node_of * width + data.name_code, grouped)]
    values = data.columns[column][rows]
    if column in named.columns:
        values = np.concatenate([values, named.columns[column]], axis=0)
    k = len(named.name) if column in named.columns else 0
    return _Series(
        node_of=np.concatenate([scan.node_of[rows], named.node_of[:k]]).astype(np.int64),
        row=np.concatenate([rows, np.full(k, -1, dtype=np.int64)]),
        values=values,
        by_name=np.concatenate([np.zeros(len(rows), dtype=np.bool_), np.ones(k, dtype=np.bool_)]),
    )


def _saw_input(values: Float, by_name: bool) -> Float:
    """What the saw-tooth kernel reads: a name's series with 0 where none ran (a restart is a
    reset); a process's series over its life only, gaps carried forward (its end is not one)."""
    if by_name:
        return values
    finite = np.flatnonzero(np.isfinite(values))
    if not len(finite):
        return values[:0]
    life = values[finite[0] : finite[-1] + 1].copy()
    index = np.where(np.isfinite(life), np.arange(len(life)), 0)
    return life[np.maximum.accumulate(index)]


def _may_ramp(series: Float, min_periods: int, rules: ProcessRules) -> Bool:
    """Rows of ``series`` for which :func:`find_ramp` could find a ramp (a vectorised pre-check).

    Conservative: a row marked False is one where ``find_ramp`` returns None, so skipping it
    changes no result. Theil–Sen's slope is a median of pairwise slopes, so it reaches the
    slope the policy needs only if at least half of the pairwise slopes do; the needed rise
    uses the row's minimum in place of its starting level (a lower bound).
    """
    policy = rules.ramp
    t = series.shape[1]
    finite = np.isfinite(series)
    count = finite.sum(axis=1)
    first = np.argmax(finite, axis=1)
    last = t - 1 - np.argmax(finite[:, ::-1], axis=1)
    possible: Bool = (count >= 6) & (last - first + 1 >= min_periods)
    if t > _MAX_POINTS or not possible.any():
        return possible  # long series are thinned by the test: no shortcut
    i, j = np.triu_indices(t, k=1)
    gap = (j - i).astype(np.float64)
    span = np.maximum(last - first, 1).astype(np.float64)
    floor = np.where(finite, series, np.inf).min(axis=1)
    floor = np.where(np.isfinite(floor), np.maximum(floor, 0.0), 0.0)
    slope = np.maximum(policy.min_growth_bytes, policy.min_growth * floor) / span * (1.0 - 1e-9)
    # Half the pairs steep needs a steep pair at least `reach` apart (fewer pairs are closer),
    # so a complete row whose range is under slope × reach cannot ramp: most rows stop here.
    closer = np.cumsum(t - np.arange(1, t))  # pairs at most d apart, d = 1, 2, ...
    reach = int(np.searchsorted(closer, len(i) - len(i) // 2)) + 1
    with np.errstate(invalid="ignore"):
        spread = np.where(finite, series, -np.inf).max(axis=1) - floor
    possible &= (count < t) | (spread >= slope * reach)
    candidates = np.flatnonzero(possible)
    step = max(1, 4_000_000 // max(1, len(i)))  # rows per block: bounded memory
    for lo in range(0, len(candidates), step):
        rows = candidates[lo : lo + step]
        block = series[rows]
        with np.errstate(invalid="ignore"):
            rise = block[:, j] - block[:, i]
            valid = np.isfinite(rise)
            steep = rise >= slope[rows, None] * gap  # a pairwise slope at least the one needed
        pairs = valid.sum(axis=1)
        possible[rows] = steep.sum(axis=1) >= pairs - pairs // 2
    return possible


def _may_saw(series: Float, by_name: Bool, rules: ProcessRules) -> Bool:
    """Rows for which :func:`find_saw_tooth` could find a saw-tooth: enough resets (its first
    test, on the values it would read; False rows give None)."""
    policy = rules.ramp
    if series.shape[1] < policy.min_tooth_periods + 1:
        return np.zeros(len(series), dtype=np.bool_)
    # a process's gaps carried forward, a name's as 0 (see _saw_input): NaN never resets
    index = np.where(np.isfinite(series), np.arange(series.shape[1]), 0)
    carried = np.take_along_axis(series, np.maximum.accumulate(index, axis=1), axis=1)
    values = np.where(by_name[:, None], np.nan_to_num(series, nan=0.0), np.nan_to_num(carried))
    shifted = np.concatenate([values[:, :1], values[:, :-2]], axis=1)
    before = np.maximum(values[:, :-1], shifted)
    hits = (before >= policy.min_growth_bytes) & (
        values[:, 1:] <= (1.0 - policy.reset_drop) * before
    )
    ends = hits & ~np.concatenate([hits[:, 1:], np.zeros((len(hits), 1), dtype=bool)], axis=1)
    return np.asarray(ends.sum(axis=1) >= policy.min_teeth)


def _ramp_policy(rules: ProcessRules) -> dict[str, float | int]:
    policy = rules.ramp
    return {
        "reset_drop": policy.reset_drop,
        "min_teeth": policy.min_teeth,
        "min_tooth_periods": policy.min_tooth_periods,
        "min_rise": policy.min_growth_bytes,
        "max_step": policy.max_step,
    }


def _human(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 60:.3g} min" if seconds >= 60 else f"{seconds:.3g} s"


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB" if abs(value) < 2**30 * 10 else f"{value / 2**30:,.1f} GiB"


_WHAT = {"rss_bytes": "memory (RSS)", "file_bytes": "open files"}


def _series_evidence(
    data: Periods, n: int, name: str, user: str, pids: tuple[int, ...], by_name: bool, column: str
) -> list[Evidence]:
    out = [Evidence("node", data.nodes[n]), Evidence("process", name)]
    if by_name:
        shown = " ".join(map(str, pids[:10])) + (" ..." if len(pids) > 10 else "")
        out.append(Evidence("pids", shown))
    else:
        out.append(Evidence("pid", int(pids[0])))
    return [*out, Evidence("user", user), Evidence("os", data.os[n]), Evidence("metric", column)]


def _offset(s: _Series, k: int) -> int:
    """Where the saw-tooth kernel's input (a process's life) starts in its node's periods."""
    if s.by_name[k]:
        return 0
    finite = np.flatnonzero(np.isfinite(s.values[k]))
    return int(finite[0]) if len(finite) else 0


def ramps(scan: Scan) -> list[Finding]:
    """Sustained, significant rises in memory (or open-file size), per process over its life
    (and per name for the groups aggregated by name)."""
    data, rules = scan.data, scan.rules
    policy = rules.ramp
    min_periods = rules.ramp_periods
    period_h = data.period.total_seconds() / 3600
    findings = []
    for column in policy.columns:
        got = scan.series(column)
        if got is None:
            continue
        s = got[0]
        for k in np.flatnonzero(_may_ramp(s.values, min_periods, rules)).tolist():
            n = int(s.node_of[k])
            label, name, user, pids = s.describe(data, k)
            if rules.never(data.nodes[n], name, user):
                continue
            series = s.values[k, : int(data.length[n])]
            if scan.tooth(column, k) is not None:
                continue  # a ramp that resets is reported as a saw-tooth
            ramp = find_ramp(
                series,
                alpha=policy.alpha,
                min_periods=min_periods,
                min_growth=policy.min_growth,
                min_growth_bytes=policy.min_growth_bytes,
            )
            if ramp is None:
                continue
            per_day = ramp.trend.slope * 24 / period_h
            now = float(series[np.isfinite(series)][-1])
            evidence = [
                *_series_evidence(data, n, name, user, pids, bool(s.by_name[k]), column),
                Evidence("slope_per_day", round(per_day), "bytes"),
                Evidence("rise", round(ramp.rise), "bytes"),
                Evidence("start_level", round(ramp.level_start), "bytes"),
                Evidence("end_level", round(ramp.level_end), "bytes"),
                Evidence("p_value", float(f"{ramp.trend.p_value:.3g}")),
                Evidence("duration_periods", ramp.stop - ramp.start),
            ]
            limit_note = ""
            severity = Severity.WARNING
            if policy.limit_bytes > 0:
                days = max(policy.limit_bytes - now, 0.0) / per_day
                evidence.append(Evidence("days_to_limit", round(days, 2), "d"))
                evidence.append(Evidence("limit", round(policy.limit_bytes), "bytes"))
                limit_note = (
                    f"; at this rate it reaches {_mib(policy.limit_bytes)} in {days:.1f} days"
                )
                if days < 1:
                    severity = Severity.ERROR
            explanation = (
                f"{label} on {data.nodes[n]}: {_WHAT.get(column, column)} grew from "
                f"{_mib(ramp.level_start)} to {_mib(ramp.level_end)} "
                f"(+{_mib(per_day)} a day, p = {ramp.trend.p_value:.1g}) and never came back "
                f"down{limit_note}: a leak or an ever-growing file."
            )
            findings.append(
                scan.finding(
                    Kind.MEMORY_RAMP,
                    n,
                    label,
                    column,
                    ramp.start,
                    ramp.stop - 1,
                    severity,
                    explanation,
                    evidence,
                )
            )
    return findings


def saw_tooths(scan: Scan) -> list[Finding]:
    """Ramps that reset (leaks cleared or restarted, log files truncated, rollback segments)."""
    data, rules = scan.data, scan.rules
    findings = []
    for column in rules.ramp.columns:
        got = scan.series(column)
        if got is None:
            continue
        s, may = got
        for k in np.flatnonzero(may).tolist():
            n = int(s.node_of[k])
            label, name, user, pids = s.describe(data, k)
            if rules.never(data.nodes[n], name, user):
                continue
            tooth = scan.tooth(column, k)
            if tooth is None:
                continue
            at = _offset(s, k)
            seconds = tooth.period * data.period.total_seconds()
            evidence = [
                *_series_evidence(data, n, name, user, pids, bool(s.by_name[k]), column),
                Evidence("teeth", len(tooth.resets)),
                Evidence("period", round(seconds, 3), "s"),
                Evidence("peak", round(tooth.peak), "bytes"),
                Evidence("rise", round(tooth.rise), "bytes"),
                Evidence("first_reset", f"{data.start(n, at + tooth.resets[0]):%Y-%m-%d %H:%M}"),
            ]
            if tooth.regularity == tooth.regularity:
                evidence.append(Evidence("regularity_cv", round(tooth.regularity, 3)))
            explanation = (
                f"{label} on {data.nodes[n]}: {_WHAT.get(column, column)} climbs to about "
                f"{_mib(tooth.peak)} and is reset every {_human(seconds)} "
                f"({len(tooth.resets)} times): a saw-tooth. Something is cleaning up after a "
                "leak or a growing file; check what happens at the peaks."
            )
            first = at + max(0, tooth.resets[0] - round(tooth.period))
            findings.append(
                scan.finding(
                    Kind.SAW_TOOTH,
                    n,
                    label,
                    column,
                    first,
                    at + tooth.resets[-1],
                    Severity.WARNING,
                    explanation,
                    evidence,
                )
            )
    return findings


# -- caps and capture ratio -------------------------------------------------------------------


def caps(scan: Scan) -> list[Finding]:
    """Named groups above their cap (e.g. "Tools never above 10% of a box")."""
    data, rules = scan.data, scan.rules
    if not data.groups:
        return []
    findings = []
    for group in rules.groups:
        series = data.groups.get(group.name)
        if series is None:
            continue
        tests: list[tuple[str, Float, float]] = []
        if group.max_cpu_fraction > 0 and (series.cpu > 0).any():
            need_ncpu(data, "cap_exceeded")
            tests.append(("cpu", series.cpu / data.ncpu[:, None], group.max_cpu_fraction))
        if group.max_rss_bytes > 0 and "rss_bytes" in data.columns:
            tests.append(("rss_bytes", series.rss, group.max_rss_bytes))
        for metric, values, cap in tests:
            over = (values > cap) & data.covered
            rows, cols = np.nonzero(over)
            flat = rows * scan.n_windows + scan.window[rows, cols]
            counts = np.bincount(flat, minlength=len(over) * scan.n_windows).reshape(
                len(over), scan.n_windows
            )
            flagged = np.nonzero(counts >= group.min_periods)
            by_node: dict[int, list[_Hit]] = {}
            for n, w in zip(*flagged, strict=True):
                where = np.flatnonzero(over[n] & (scan.window[n] == w))
                hit = _Hit(int(w), int(where[0]), int(where[-1]), len(where))
                hit.values = values[n, where].tolist()
                by_node.setdefault(int(n), []).append(hit)
            for n, hits in sorted(by_node.items()):
                load = {name: v for (node, name), v in series.load.items() if node == n}
                top = sorted(load, key=lambda m: (-load[m], m))
                for run in _merged(hits):
                    peak = max(v for h in run for v in h.values)
                    count = sum(h.count for h in run)
                    if metric == "cpu":
                        what, shown, limit = "of the machine's CPU", f"{peak:.0%}", f"{cap:.0%}"
                    else:
                        what, shown, limit = "of memory", _mib(peak), _mib(cap)
                    explanation = (
                        f"The {group.name} workload on {data.nodes[n]} ({', '.join(top[:3])}) took "
                        f"up to {shown} {what} in {count} {scan.word}, above its cap of {limit}."
                    )
                    unit = "fraction" if metric == "cpu" else "bytes"
                    evidence = [
                        Evidence("node", data.nodes[n]),
                        Evidence("group", group.name),
                        Evidence("members", ", ".join(top[:8])),
                        Evidence("periods_over", count),
                        Evidence("peak", round(peak, 4), unit),
                        Evidence("cap", cap, unit),
                        Evidence("stealth", group.stealth),
                    ]
                    findings.append(
                        scan.finding(
                            Kind.CAP_EXCEEDED,
                            n,
                            group.name,
                            metric,
                            run[0].first,
                            run[-1].last,
                            Severity.WARNING,
                            explanation,
                            evidence,
                        )
                    )
    return findings


def capture(scan: Scan) -> list[Finding]:
    """Σ process CPU / machine CPU: how much of the machine's work the process data explains."""
    data, rules = scan.data, scan.rules
    if not data.has_machine:
        return []
    policy = rules.capture
    busy = data.covered & (data.busy >= policy.min_busy)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(busy, data.captured / data.busy, np.nan)
    out = busy & ((ratio < policy.low) | (ratio > policy.high))
    n_busy = busy.sum(axis=1)
    share = out.sum(axis=1) / np.maximum(n_busy, 1)
    findings = []
    for n in np.flatnonzero((n_busy >= 3) & (share >= policy.min_fraction)).tolist():
        values = ratio[n][busy[n]]
        outside = float(share[n])
        median = float(np.median(values))
        where = np.flatnonzero(busy[n])
        direction = "less" if median < 1 else "more"
        explanation = (
            f"On {data.nodes[n]} the processes account for {median:.0%} of the machine's CPU "
            f"(median over {len(values)} periods; {outside:.0%} outside "
            f"{policy.low:.0%}–{policy.high:.0%}): the process data captures {direction} than "
            "the machine used, so per-process checks there are "
            + ("blind to part of the work." if median < 1 else "double-counting.")
        )
        evidence = [
            Evidence("node", data.nodes[n]),
            Evidence("median_ratio", round(median, 4)),
            Evidence("p10_ratio", round(float(np.quantile(values, 0.1)), 4)),
            Evidence("p90_ratio", round(float(np.quantile(values, 0.9)), 4)),
            Evidence("periods", len(values)),
            Evidence("share_outside", round(outside, 4)),
        ]
        findings.append(
            scan.finding(
                Kind.CAPTURE_RATIO,
                n,
                "",
                "capture_ratio",
                int(where[0]),
                int(where[-1]),
                Severity.INFO,
                explanation,
                evidence,
            )
        )
    return findings


CHECKS: dict[CheckName, Check] = {
    "cpu_loop": cpu_loops,
    "constrained_loop": constrained_loops,
    "hum": hums,
    "memory_ramp": ramps,
    "saw_tooth": saw_tooths,
    "cap_exceeded": caps,
    "capture_ratio": capture,
}
"""Check name (= the findings' ``kind`` and ``detector``) → function, in the order the detector
runs them."""


def min_life(rules: ProcessRules, checks: Sequence[str]) -> int:
    """The fewest periods a process must be present in to be the subject of one of ``checks``:
    processes seen less are churn (they count in the machine's and the groups' totals only)."""
    needs = [1 << 30]
    hours = min(r.hours for r in rules.os.values())
    if "cpu_loop" in checks or "constrained_loop" in checks:
        needs.append(hours)
    if "hum" in checks:
        needs.append(rules.hum.hours)
    if "memory_ramp" in checks:
        needs.append(6)  # find_ramp's fewest points
    if "saw_tooth" in checks:
        needs.append(rules.ramp.min_tooth_periods + 1)
    return min(needs)
