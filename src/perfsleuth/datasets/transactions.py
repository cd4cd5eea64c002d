"""A multi-type transactional service, windowed into a **workload** frame, with known faults.

The model behind Kelly's transaction-mix regression, made concrete so detectors have a truth:

* **Types** have fixed service times (demands) ``S_j`` and base shares of the mix.
* **Load** follows a day: arrivals peak mid-afternoon and bottom out before dawn (15% of peak),
  with 5% window-to-window jitter. The **mix** drifts too: each type's share swings by a factor
  of up to ``e^{±mix_drift}`` over the day, with its own phase, so the composition is never the
  same twice; on top of that each type's share wanders on its own (AR(1), one-hour memory).
  Independent variation across types is what makes per-type service times identifiable.
* **Counts** per window and type are Poisson. The machine has ``cpu_cores`` cores; the work done
  in a window gives ``cpu_util`` (plus 3% background).
* **Queueing**: each transaction's mean response time is ``S_j · q(U)`` with Sakasegawa's M/M/c
  approximation ``q(U) = 1 + U^(√(2(c+1)) − 1) / (c (1 − U))``: at the default peak of 0.3
  (plus background) on four cores response times are ≤ 4% above service times, 13% after the
  default workload shift; at 0.8 they are 1.8× (the regime where the mix model, which has no
  queueing term, stops explaining response time — Kelly §4).
* **Noise**: per-transaction response times are Gamma with coefficient of variation ``cv``
  (1 = exponential), summed per window exactly (a sum of N Gamma(k, θ) is Gamma(Nk, θ)); and a
  per-window lognormal factor (``window_noise``) for interference the model cannot see.

Faults (:class:`Fault`, by window index) are what the mix cannot explain:

* ``"bottleneck"`` — a resource saturated by something outside the workload (a CPU hog, a
  failing disk): every response time is multiplied by ``magnitude`` (default 3) and ``cpu_util``
  rises toward saturation.
* ``"stuck_pool"`` — a connection pool too small or leaking: every transaction also waits for a
  connection, an exponential wait of mean ``magnitude`` seconds (default 0.1 s, about twice the
  mean service time of the default mix); the CPU is not busier.
* ``"too_fast"`` — a share ``magnitude`` (default 0.8) of transactions abort after 5% of their
  service time: counts look normal, response time is far below what the mix explains.

A :class:`WorkloadShift` changes load and mix (more of the expensive types) with no fault: a
detector must not flag it, since the per-type service times did not change. A :class:`Release`
is the application change: one type's service time is multiplied from a window on, so its CPU
cost per transaction and its response time both rise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from perfsleuth.errors import ConfigError
from perfsleuth.frames import normalise

__all__ = [
    "DEFAULT_TYPES",
    "Episode",
    "Fault",
    "Release",
    "TransactionRun",
    "TransactionType",
    "WorkloadShift",
    "simulate_transactions",
    "transaction_scenario",
]

FaultKind = Literal["bottleneck", "stuck_pool", "too_fast"]

_DEFAULT_MAGNITUDE: dict[str, float] = {"bottleneck": 3.0, "stuck_pool": 0.1, "too_fast": 0.8}
_ABORTED_FRACTION_OF_SERVICE = 0.05
_BACKGROUND_UTIL = 0.03
_DAY_S = 86_400.0
_MIX_MEMORY_S = 3600.0
_START = datetime(2024, 5, 1, 0, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class TransactionType:
    """One transaction type: name, service time (s) and base share of the mix."""

    name: str
    service_time: float
    share: float


DEFAULT_TYPES: tuple[TransactionType, ...] = (
    TransactionType("browse", 0.012, 0.40),
    TransactionType("search", 0.045, 0.20),
    TransactionType("add_to_cart", 0.020, 0.15),
    TransactionType("login", 0.030, 0.10),
    TransactionType("checkout", 0.150, 0.08),
    TransactionType("account", 0.060, 0.05),
    TransactionType("report", 0.600, 0.02),
)
"""An e-commerce site: mean service time of the base mix ≈ 47 ms."""


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault over windows ``start .. start + windows − 1``; ``magnitude`` None = the default."""

    kind: FaultKind
    start: int
    windows: int
    magnitude: float | None = None


@dataclass(frozen=True, slots=True)
class WorkloadShift:
    """From window ``start`` (for ``windows`` windows, None = to the end): load × ``load``, and
    the share of each type × ``mix[j]`` (default: the more expensive half of the types × 1.6,
    the cheaper half × 0.8; with the default mix that is 37% more work per transaction)."""

    start: int
    load: float = 1.2
    mix: tuple[float, ...] | None = None
    windows: int | None = None


@dataclass(frozen=True, slots=True)
class Release:
    """From window ``start`` on, transaction type ``type`` costs ``factor`` × its service time
    (a new version of it: more CPU per transaction and a longer response time)."""

    start: int
    type: str
    factor: float = 2.0


@dataclass(frozen=True, slots=True)
class Episode:
    """Ground truth: windows ``first .. last`` (inclusive), from ``start`` to ``end`` (UTC)."""

    kind: str
    first: int
    last: int
    start: pd.Timestamp
    end: pd.Timestamp


@dataclass(frozen=True, slots=True)
class TransactionRun:
    """A simulated run: the normalised workload frame and what is true about it."""

    frame: pd.DataFrame
    types: tuple[str, ...]
    service_times: tuple[float, ...]
    """True per-type service times (s), in the order of ``types``."""
    faults: tuple[Episode, ...]
    workload_changes: tuple[Episode, ...]
    window_s: float

    def service_time(self, name: str) -> float:
        return self.service_times[self.types.index(name)]

    def fault_windows(self) -> NDArray[np.bool_]:
        """True for every window inside a fault episode."""
        mask = np.zeros(len(self.frame), dtype=bool)
        for episode in self.faults:
            mask[episode.first : episode.last + 1] = True
        return mask


def simulate_transactions(
    n_windows: int = 864,
    *,
    types: int | Sequence[TransactionType] = DEFAULT_TYPES,
    window_s: float = 300.0,
    peak_util: float = 0.3,
    cpu_cores: int = 4,
    mix_drift: float = 0.6,
    mix_noise: float = 0.3,
    cv: float = 1.0,
    window_noise: float = 0.05,
    faults: Sequence[Fault] = (),
    shifts: Sequence[WorkloadShift] = (),
    releases: Sequence[Release] = (),
    start: datetime = _START,
    seed: int = 0,
) -> TransactionRun:
    """Simulate ``n_windows`` windows of ``window_s`` seconds of a transactional service.

    Parameters
    ----------
    n_windows
        Number of windows (default 864: three days of 5-minute windows).
    types
        The transaction types, or a number of types to draw (service times log-uniform from
        2 ms to 1 s, shares from a Dirichlet).
    window_s
        Window width in seconds.
    peak_util
        CPU utilisation (0..1) from the workload at the busiest window before any shift.
    cpu_cores
        Cores of the simulated machine.
    mix_drift
        Amplitude (log scale) of each type's daily swing in share.
    mix_noise
        Standard deviation (log scale) of each type's own slow wander in share (AR(1) with a
        one-hour memory), independent across types.
    cv
        Coefficient of variation of a single transaction's response time.
    window_noise
        Standard deviation of the per-window lognormal interference factor.
    faults, shifts, releases
        Injected faults, workload shifts and releases (window indices).
    start
        Start of the first window (timezone-aware).
    seed
        Seed of everything random: the same seed gives the same frame.
    """
    if n_windows < 1:
        raise ConfigError(f"n_windows must be at least 1, got {n_windows}")
    if not 0.0 < peak_util < 1.0:
        raise ConfigError(f"peak_util must be in (0, 1), got {peak_util}")
    if window_s <= 0 or cpu_cores < 1 or cv <= 0 or window_noise < 0:
        raise ConfigError("window_s, cpu_cores and cv must be positive, window_noise ≥ 0")
    if start.tzinfo is None:
        raise ConfigError("start must be timezone-aware")
    rng = np.random.default_rng(seed)
    kinds = _types(types, rng)
    names = tuple(t.name for t in kinds)
    service = np.array([t.service_time for t in kinds])
    share = np.array([t.share for t in kinds])
    share = share / share.sum()
    k = len(kinds)

    offsets = np.arange(n_windows) * window_s
    origin = pd.Timestamp(start).tz_convert("UTC")
    times = origin + pd.to_timedelta(offsets, unit="s")
    clock = origin.hour * 3600 + origin.minute * 60 + origin.second + offsets + window_s / 2
    phase_of_day = 2 * math.pi * clock / _DAY_S

    # Load: minimum 15% of peak at ~04:00, peak at ~16:00, plus jitter.
    daily = 0.15 + 0.85 * (0.5 - 0.5 * np.cos(phase_of_day - 2 * math.pi * 4 / 24)) ** 1.5
    jitter = np.exp(rng.normal(0.0, 0.05, n_windows))
    phases = rng.uniform(0.0, 2 * math.pi, k)
    wander = _ar1(rng, n_windows, k, math.exp(-window_s / _MIX_MEMORY_S), mix_noise)
    weights = share * np.exp(mix_drift * np.sin(phase_of_day[:, None] + phases[None, :]) + wander)
    weights /= weights.sum(axis=1, keepdims=True)
    # Scale arrivals so the busiest window (in expectation, before shifts) is at peak_util.
    demand_per_tx = weights @ service
    rate = peak_util * cpu_cores / float(np.max(daily * demand_per_tx))  # transactions / s
    load = rate * daily * jitter

    changes: list[Episode] = []
    heavy_first = np.argsort(-service, kind="stable")
    for shift in shifts:
        first, last = _span(shift.start, shift.windows, n_windows, "workload shift")
        if shift.mix is None:
            mix = np.full(k, 0.8)
            mix[heavy_first[: max(1, k // 2)]] = 1.6
        else:
            if len(shift.mix) != k:
                raise ConfigError(f"workload shift mix has {len(shift.mix)} factors for {k} types")
            mix = np.asarray(shift.mix, dtype=float)
        window = slice(first, last + 1)
        load[window] *= shift.load
        weights[window] *= mix
        weights[window] /= weights[window].sum(axis=1, keepdims=True)
        changes.append(_episode("workload_change", first, last, times, window_s))

    counts = rng.poisson(load[:, None] * window_s * weights).astype(np.float64)
    # Service time per window and type: a release changes one type's from its window on.
    cost = np.tile(service, (n_windows, 1))
    for release in releases:
        if release.type not in names:
            raise ConfigError(f"release of unknown type {release.type!r}; types: {names}")
        if release.factor <= 0:
            raise ConfigError(f"a release's factor must be > 0, got {release.factor}")
        first, last = _span(release.start, None, n_windows, "release")
        cost[first:, names.index(release.type)] *= release.factor
        changes.append(_episode("application_change", first, last, times, window_s))
    util = np.minimum((counts * cost).sum(axis=1) / (window_s * cpu_cores) + _BACKGROUND_UTIL, 0.98)
    q = 1.0 + util ** (math.sqrt(2 * (cpu_cores + 1)) - 1) / (cpu_cores * (1.0 - util))
    shape = counts / cv**2
    mean_rt = cost * q[:, None]
    rt_sum = np.where(counts > 0, rng.gamma(np.maximum(shape, 1e-12), mean_rt * cv**2), 0.0)
    rt_sum *= np.exp(rng.normal(0.0, window_noise, n_windows))[:, None]

    episodes: list[Episode] = []
    for fault in faults:
        if fault.kind not in _DEFAULT_MAGNITUDE:
            known = ", ".join(_DEFAULT_MAGNITUDE)
            raise ConfigError(f"unknown fault kind {fault.kind!r}; known: {known}")
        first, last = _span(fault.start, fault.windows, n_windows, f"{fault.kind} fault")
        window = slice(first, last + 1)
        size = _DEFAULT_MAGNITUDE[fault.kind] if fault.magnitude is None else fault.magnitude
        if fault.kind == "bottleneck":
            if size <= 1:
                raise ConfigError(f"a bottleneck's magnitude is a factor > 1, got {size}")
            rt_sum[window] *= size
            util[window] = np.minimum(util[window] + 0.8 * (1 - util[window]), 0.99)
        elif fault.kind == "stuck_pool":
            if size <= 0:
                raise ConfigError(f"a stuck pool's magnitude is a wait > 0 s, got {size}")
            n = counts[window]
            rt_sum[window] += np.where(n > 0, rng.gamma(np.maximum(n, 1e-12), size), 0.0)
        else:
            if not 0 < size <= 1:
                raise ConfigError(f"too_fast's magnitude is a share in (0, 1], got {size}")
            keep = 1 - size + size * _ABORTED_FRACTION_OF_SERVICE
            rt_sum[window] *= keep
            util[window] = _BACKGROUND_UTIL + (util[window] - _BACKGROUND_UTIL) * keep
        episodes.append(_episode(fault.kind, first, last, times, window_s))

    columns: dict[str, object] = {"time": times, "window_s": np.full(n_windows, window_s)}
    columns.update({f"n[{name}]": counts[:, j] for j, name in enumerate(names)})
    columns.update({f"rt_sum[{name}]": rt_sum[:, j] for j, name in enumerate(names)})
    columns["cpu_util"] = util
    columns["cpu_cores"] = np.full(n_windows, float(cpu_cores))
    frame = normalise(pd.DataFrame(columns), "workload", source="simulated:transactions")
    return TransactionRun(
        frame=frame,
        types=names,
        service_times=tuple(float(s) for s in service),
        faults=tuple(episodes),
        workload_changes=tuple(changes),
        window_s=float(window_s),
    )


def transaction_scenario(seed: int = 0, *, window_s: float = 300.0) -> TransactionRun:
    """Three days of the default service with one of each fault and a workload shift.

    * day 1, 10:00–10:30 — ``bottleneck`` (response times × 3);
    * day 2, 00:00 on — workload shift: load × 1.2, expensive types × 1.6 (no fault);
    * day 2, 14:00–14:40 — ``stuck_pool`` (0.1 s extra wait per transaction);
    * day 3, 09:00–09:20 — ``too_fast`` (80% of transactions abort).

    Times are for 5-minute windows; another ``window_s`` keeps the same clock times.
    """
    per_hour = 3600.0 / window_s

    def at(day: int, hour: float) -> int:
        return round((day * 24 + hour) * per_hour)

    def length(minutes: float) -> int:
        return max(1, round(minutes * 60 / window_s))

    return simulate_transactions(
        at(3, 0),
        window_s=window_s,
        faults=(
            Fault("bottleneck", at(0, 10), length(30)),
            Fault("stuck_pool", at(1, 14), length(40)),
            Fault("too_fast", at(2, 9), length(20)),
        ),
        shifts=(WorkloadShift(at(1, 0)),),
        seed=seed,
    )


def _types(
    types: int | Sequence[TransactionType], rng: np.random.Generator
) -> list[TransactionType]:
    if isinstance(types, int):
        if types < 1:
            raise ConfigError(f"need at least one transaction type, got {types}")
        service = np.exp(rng.uniform(math.log(0.002), math.log(1.0), types))
        share = rng.dirichlet(np.full(types, 2.0))
        return [
            TransactionType(f"t{j:02d}", float(s), float(w))
            for j, (s, w) in enumerate(zip(service, share, strict=True))
        ]
    kinds = list(types)
    if not kinds:
        raise ConfigError("need at least one transaction type")
    if len({t.name for t in kinds}) != len(kinds):
        raise ConfigError("transaction type names must be unique")
    for t in kinds:
        if t.service_time <= 0 or t.share <= 0:
            raise ConfigError(f"{t.name}: service time and share must be positive")
    return kinds


def _ar1(rng: np.random.Generator, n: int, k: int, phi: float, sd: float) -> NDArray[np.float64]:
    """k independent stationary AR(1) series of length n with marginal standard deviation sd."""
    shocks = rng.normal(0.0, sd * math.sqrt(1 - phi * phi), (n, k))
    out = np.empty((n, k))
    out[0] = rng.normal(0.0, sd, k)
    for t in range(1, n):
        out[t] = phi * out[t - 1] + shocks[t]
    return out


def _span(start: int, windows: int | None, n: int, what: str) -> tuple[int, int]:
    last = n - 1 if windows is None else start + windows - 1
    if not 0 <= start <= last < n:
        raise ConfigError(f"{what} at windows {start}..{last} is outside 0..{n - 1}")
    return start, last


def _episode(kind: str, first: int, last: int, times: pd.DatetimeIndex, window_s: float) -> Episode:
    return Episode(
        kind=kind,
        first=first,
        last=last,
        start=times[first],
        end=times[last] + pd.Timedelta(seconds=window_s),
    )
