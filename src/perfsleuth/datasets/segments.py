"""A transactional server whose workload, background load and code change over time: the
30-hour experiment of Cherkasova et al. (2008, §6) as a seeded simulation.

Each window of ``window_s`` seconds:

* **counts** of each type are Poisson with mean ``rate · share_i · window_s``; the phase says
  how the rate and the shares move (load steps, a fixed mix, or a "non-stationary" mix whose
  shares and rate wander from window to window, like the paper's random TPC-W process);
* **CPU** used by the server (CPU-seconds) is ``idle · window_s`` plus, per transaction, a
  Gamma-distributed CPU demand with mean ``demand_i`` (plus the phase's ``extra_i``: the
  application change) and coefficient of variation ``cv``, plus a **hog**'s CPU when the phase
  has one: a background process using a fresh uniform share of ``hog`` cores every window;
* **latency** of type i: its service time (CPU demand plus ``wait`` seconds of non-CPU work)
  stretched by ``1 / (1 − U)`` (U = the machine's utilisation), times lognormal noise per window.

``cpu_util`` is CPU-seconds / (window_s · cores), the contract's fraction of the machine.
:func:`cherkasova_scenario` is the paper's seven phases; :class:`Phase` builds others.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from perfsleuth.errors import ConfigError, DataError
from perfsleuth.findings import Finding, Kind
from perfsleuth.frames import normalise

__all__ = [
    "PAPER_TYPES",
    "Phase",
    "RunScore",
    "RunTruth",
    "SegmentScenario",
    "ServerType",
    "cherkasova_scenario",
    "score_run",
    "simulate_segments",
]

PhaseKind = Literal["workload", "anomaly", "application_change"]
_START = datetime(2024, 6, 3, 0, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ServerType:
    """A transaction type: CPU demand per transaction (s) and non-CPU wait (s)."""

    name: str
    demand: float
    wait: float = 0.002


PAPER_TYPES: tuple[ServerType, ...] = (
    ServerType("home", 0.008),
    ServerType("new_products", 0.012),
    ServerType("best_sellers", 0.020),
    ServerType("product_detail", 0.004),
    ServerType("search", 0.010),
    ServerType("cart", 0.006),
    ServerType("buy", 0.015),
)
"""Seven types loosely after TPC-W's; ``home`` is the one the paper slows down."""


@dataclass(frozen=True, slots=True)
class Phase:
    """A stretch of ``windows`` windows.

    Parameters
    ----------
    windows
        Length in windows.
    shares
        Base share of each type (normalised); types left out have share 0.
    rates
        Transactions per second: the phase steps through these in equal parts (the paper's
        200, 400, …, 1000 emulated browsers).
    wander
        Log-scale standard deviation of window-to-window noise on each share and on the rate
        (0: a fixed mix; the paper's non-stationary mix is about 0.5).
    hog
        Cores a background hog uses, drawn uniformly in ``(low, high)`` every window; None: no
        hog.
    extra
        Extra CPU seconds per transaction by type: the application change.
    label
        What the phase is, for the ground truth.
    """

    windows: int
    shares: Mapping[str, float]
    rates: Sequence[float]
    wander: float = 0.0
    hog: tuple[float, float] | None = None
    extra: Mapping[str, float] = field(default_factory=dict)
    label: str = ""

    @property
    def kind(self) -> PhaseKind:
        if self.hog is not None:
            return "anomaly"
        if any(v != 0 for v in self.extra.values()):
            return "application_change"
        return "workload"


@dataclass(frozen=True, slots=True)
class SegmentScenario:
    """A simulated run: the workload frame, its phases and where each begins (window index)."""

    frame: pd.DataFrame
    phases: tuple[Phase, ...]
    starts: tuple[int, ...]
    types: tuple[ServerType, ...]
    window_s: float
    cores: int

    @property
    def boundaries(self) -> tuple[int, ...]:
        """First window of every phase after the first."""
        return self.starts[1:]

    def phase_of(self, window: int) -> int:
        """Index of the phase window ``window`` belongs to."""
        return int(np.searchsorted(np.asarray(self.starts), window, side="right")) - 1


def simulate_segments(
    phases: Sequence[Phase],
    *,
    types: Sequence[ServerType] = PAPER_TYPES,
    window_s: float = 60.0,
    cores: int = 2,
    idle: float = 0.01,
    cv: float = 0.5,
    latency_noise: float = 0.1,
    start: datetime = _START,
    seed: int = 0,
) -> SegmentScenario:
    """Simulate the phases one after the other; see the module docstring for the model.

    ``idle`` is the CPU (cores) the system uses with no transactions. Utilisation is capped at
    0.97 (a saturated window is still a window); keep rates below the machine's capacity.
    """
    if not phases:
        raise ConfigError("need at least one phase")
    if window_s <= 0 or cores < 1 or idle < 0 or cv < 0 or latency_noise < 0:
        raise ConfigError("window_s, cores must be positive; idle, cv, latency_noise >= 0")
    names = [t.name for t in types]
    if len(set(names)) != len(names):
        raise ConfigError("type names must be unique")
    demand = np.array([t.demand for t in types])
    wait = np.array([t.wait for t in types])
    rng = np.random.default_rng(seed)
    rows_n, rows_cpu, rows_extra = [], [], []
    starts = []
    at = 0
    for number, phase in enumerate(phases):
        unknown = (set(phase.shares) | set(phase.extra)) - set(names)
        if unknown:
            raise ConfigError(f"phase {number}: unknown type(s) {sorted(unknown)}")
        if phase.windows < 1 or not phase.rates or min(phase.rates) <= 0:
            raise ConfigError(f"phase {number}: needs windows >= 1 and positive rates")
        starts.append(at)
        at += phase.windows
        base = np.array([phase.shares.get(n, 0.0) for n in names], dtype=np.float64)
        if base.sum() <= 0:
            raise ConfigError(f"phase {number}: shares must not all be 0")
        step = np.minimum(
            np.arange(phase.windows) * len(phase.rates) // phase.windows, len(phase.rates) - 1
        )
        rate = np.asarray(phase.rates, dtype=np.float64)[step]
        shares = np.tile(base, (phase.windows, 1))
        if phase.wander > 0:
            rate = rate * np.exp(rng.normal(0.0, phase.wander, phase.windows))
            shares = shares * np.exp(rng.normal(0.0, phase.wander, shares.shape))
        shares /= shares.sum(axis=1, keepdims=True)
        counts = rng.poisson(rate[:, None] * window_s * shares).astype(np.float64)
        extra = np.array([phase.extra.get(n, 0.0) for n in names])
        per_tx = demand + extra
        shape = np.where(counts > 0, counts / max(cv, 1e-6) ** 2, 1.0)
        work = (
            np.where(counts > 0, rng.gamma(shape, per_tx * max(cv, 1e-6) ** 2), 0.0)
            if cv > 0
            else counts * per_tx
        )
        cpu = idle * window_s + work.sum(axis=1)
        if phase.hog is not None:
            low, high = phase.hog
            cpu = cpu + rng.uniform(low, high, phase.windows) * window_s
        rows_n.append(counts)
        rows_cpu.append(cpu)
        rows_extra.append(np.tile(extra, (phase.windows, 1)))
    counts = np.vstack(rows_n)
    cpu = np.concatenate(rows_cpu)
    extra = np.vstack(rows_extra)
    util = np.minimum(cpu / (window_s * cores), 0.97)
    service = demand[None, :] + extra + wait[None, :]
    latency = service / (1.0 - util)[:, None]
    latency = latency * np.exp(rng.normal(0.0, latency_noise, latency.shape))
    rt_sum = np.where(counts > 0, counts * latency, 0.0)
    m = len(cpu)
    times = pd.Timestamp(start).tz_convert("UTC") + pd.to_timedelta(np.arange(m) * window_s, "s")
    columns: dict[str, object] = {"time": times, "window_s": np.full(m, float(window_s))}
    columns.update({f"n[{n}]": counts[:, j] for j, n in enumerate(names)})
    columns.update({f"rt_sum[{n}]": rt_sum[:, j] for j, n in enumerate(names)})
    columns["cpu_util"] = util
    columns["cpu_cores"] = np.full(m, float(cores))
    frame = normalise(pd.DataFrame(columns), "workload", source="simulated:segments")
    return SegmentScenario(frame, tuple(phases), tuple(starts), tuple(types), window_s, cores)


def cherkasova_scenario(
    seed: int = 0, *, windows: int = 60, window_s: float = 60.0, home_extra: float = 0.005
) -> SegmentScenario:
    """The seven phases of the paper's experiment, ``windows`` windows each:

    1. browsing mix, load in five steps;
    2. non-stationary mix with a CPU hog (0.1–0.9 of a core, random every window) — anomaly;
    3. shopping mix, five load steps;
    4. ordering mix, five load steps;
    5. non-stationary mix;
    6. non-stationary mix, ``home`` costs ``home_extra`` more CPU — application change;
    7. the same with twice that — application change again.
    """
    browsing = {
        "home": 0.30,
        "new_products": 0.15,
        "best_sellers": 0.12,
        "product_detail": 0.25,
        "search": 0.15,
        "cart": 0.02,
        "buy": 0.01,
    }
    shopping = {
        "home": 0.20,
        "new_products": 0.10,
        "best_sellers": 0.10,
        "product_detail": 0.20,
        "search": 0.20,
        "cart": 0.12,
        "buy": 0.08,
    }
    ordering = {"home": 0.10, "new_products": 0.05, "best_sellers": 0.05, "product_detail": 0.15,
                "search": 0.15, "cart": 0.25, "buy": 0.25}  # fmt: skip
    steps = [10.0, 20.0, 30.0, 40.0, 50.0]
    phases = (
        Phase(windows, browsing, steps, label="browsing mix"),
        Phase(windows, shopping, [30.0], wander=0.5, hog=(0.1, 0.9),
              label="non-stationary mix + CPU hog"),
        Phase(windows, shopping, steps, label="shopping mix"),
        Phase(windows, ordering, steps, label="ordering mix"),
        Phase(windows, shopping, [30.0], wander=0.5, label="non-stationary mix"),
        Phase(windows, shopping, [30.0], wander=0.5, extra={"home": home_extra},
              label=f"home +{home_extra * 1e3:g} ms"),
        Phase(windows, shopping, [30.0], wander=0.5, extra={"home": 2 * home_extra},
              label=f"home +{2 * home_extra * 1e3:g} ms"),
    )  # fmt: skip
    return simulate_segments(phases, window_s=window_s, seed=seed)


# --------------------------------------------------------------------------------------------
# Recorded runs: their ground truth, and how findings are judged against it
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunTruth:
    """What was done in a recorded run (``truth.json`` of ``scripts/cherkasova_experiment.py``).

    ``change_at`` is when the heavier script(s) of ``changed`` began; ``hog`` the hog's start
    and end (None without one); ``phase_starts`` when each phase (a new mix and rate) began.
    """

    types: tuple[str, ...]
    changed: tuple[str, ...]
    change_at: datetime
    hog: tuple[datetime, datetime] | None
    phase_starts: tuple[datetime, ...]

    @classmethod
    def read(cls, path: str | Path) -> RunTruth:
        """Read a ``truth.json``; a missing key is a :class:`DataError` naming the file."""
        try:
            raw = json.loads(Path(path).read_text())
            hog = raw.get("hog") or []
            return cls(
                types=tuple(raw["types"]),
                changed=tuple(raw["changed"]),
                change_at=datetime.fromisoformat(raw["change_at"]),
                hog=(datetime.fromisoformat(hog[0]), datetime.fromisoformat(hog[1]))
                if len(hog) == 2
                else None,
                phase_starts=tuple(datetime.fromisoformat(p["start"]) for p in raw["phases"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DataError(f"{path}: not a run's ground truth: {exc!r}") from None


@dataclass(frozen=True, slots=True)
class RunScore:
    """One configuration of a recorded run, judged (times in seconds, finding − truth).

    ``change_offset_s`` is the nearest application change's start against the real change
    (None: none reported); ``named`` the types it names, in order; ``hog_edges_s`` the
    anomalies over the hog (first start, last end) against the hog's edges (None: none);
    ``false_application`` application changes away from the real one (at a mix change or under
    the hog); ``false_anomalies`` anomalies that do not overlap the hog.
    """

    change_offset_s: float | None
    named: tuple[str, ...]
    first_right: bool
    all_named: bool
    hog_edges_s: tuple[float, float] | None
    hog_required: bool
    false_application: int
    false_anomalies: int
    tolerance_s: float

    @property
    def change_found(self) -> bool:
        return self.change_offset_s is not None and abs(self.change_offset_s) <= self.tolerance_s

    @property
    def hog_found(self) -> bool:
        return self.hog_edges_s is not None and max(map(abs, self.hog_edges_s)) <= self.tolerance_s

    @property
    def passed(self) -> bool:
        """The issue's bar: the change within the tolerance with a changed type named first,
        the hog's edges within it when its CPU is in the series, no false application change."""
        hog = self.hog_found or not self.hog_required
        return self.change_found and self.first_right and hog and self.false_application == 0


def score_run(
    findings: Sequence[Finding], truth: RunTruth, *, hog_in_cpu: bool, tolerance_s: float = 10.0
) -> RunScore:
    """Judge one configuration's findings against the run's truth (see :class:`RunScore`)."""
    apps = [f for f in findings if f.kind == Kind.APPLICATION_CHANGE]
    offsets = [(f.start - truth.change_at).total_seconds() for f in apps]
    near = min(range(len(apps)), key=lambda i: abs(offsets[i])) if apps else None
    offset = offsets[near] if near is not None else None
    matched = near is not None and abs(offsets[near]) <= tolerance_s
    named: tuple[str, ...] = ()
    if near is not None:
        text = str(apps[near].evidence_dict().get("changed_types", ""))
        named = tuple(t for t in text.split(",") if t)
    anomalies = [f for f in findings if f.kind == Kind.WORKLOAD_ANOMALY]
    edges = None
    over: list[Finding] = []
    if truth.hog is not None:
        start, end = truth.hog
        over = [f for f in anomalies if f.start < end and f.end > start]
        if over:
            edges = (
                (min(f.start for f in over) - start).total_seconds(),
                (max(f.end for f in over) - end).total_seconds(),
            )
    return RunScore(
        change_offset_s=None if offset is None else round(offset, 3),
        named=named,
        first_right=matched and bool(named) and named[0] in truth.changed,
        all_named=matched and set(truth.changed) <= set(named),
        hog_edges_s=None if edges is None else (round(edges[0], 3), round(edges[1], 3)),
        hog_required=hog_in_cpu and truth.hog is not None,
        false_application=len(apps) - (1 if matched else 0),
        false_anomalies=len(anomalies) - len(over),
        tolerance_s=tolerance_s,
    )
