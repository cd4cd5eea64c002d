"""An M/M/1 FCFS queue, the system Berry & Hellerstein simulate (§4 of their paper).

Customers arrive in a Poisson stream and are served one at a time in arrival order with
exponential service times. At customer ``change_at`` the arrival rate and/or the mean service
time change, so change-point detectors have a known truth.

Waiting times follow Lindley's recursion ``W[i] = max(0, W[i-1] + S[i-1] - A[i])``, solved in
closed form as ``W = X - min(0, cummin(X))`` with ``X`` the cumulative sum of ``S[i-1] - A[i]`` —
vectorised, no Python loop. The first customer's wait is drawn from the stationary M/M/1 waiting
time distribution and ``warmup`` customers are simulated and dropped before the first one
returned (so queue lengths count the customers already present), so there is no start-up
transient to mistake for a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from perfsleuth.errors import ConfigError

__all__ = ["MM1Run", "simulate_mm1"]


@dataclass(frozen=True, slots=True)
class MM1Run:
    """One simulated run; arrays are indexed by customer (0-based), times in seconds."""

    arrival: np.ndarray
    """Arrival instants, seconds since the start."""
    service: np.ndarray
    """Service times, seconds."""
    response: np.ndarray
    """Response times (wait + service), seconds."""
    queue_length: np.ndarray
    """Customers in the system seen by each arrival (not counting itself)."""
    change_at: int | None
    """Index of the first customer after the change, or None."""
    rho_before: float
    rho_after: float

    def to_metric_frame(
        self,
        *,
        entity: str = "mm1",
        start: datetime | None = None,
        interval_s: float | None = None,
    ) -> pd.DataFrame:
        """A metric frame of ``response_time`` (s) and ``queue_length``.

        With ``interval_s`` None, one row per customer at its arrival; otherwise the mean of
        each metric over the customers arriving in each ``interval_s``-second interval (rows
        at interval starts; intervals with no arrival are absent), as a monitoring agent
        reports them.
        """
        origin = pd.Timestamp(start or datetime(2024, 1, 1, tzinfo=UTC))
        seconds, response, queue = self.arrival, self.response, self.queue_length.astype(float)
        if interval_s is not None:
            if not interval_s > 0:
                raise ConfigError(f"interval_s must be positive, got {interval_s}")
            bucket = np.floor(self.arrival / interval_s).astype(np.int64)
            buckets, first, counts = np.unique(bucket, return_index=True, return_counts=True)
            seconds = buckets * interval_s
            response = np.add.reduceat(response, first) / counts
            queue = np.add.reduceat(queue, first) / counts
        times = origin + pd.to_timedelta(np.round(seconds * 1e6).astype("int64"), unit="us")
        n = len(seconds)
        return pd.DataFrame(
            {
                "time": np.concatenate([times, times]),
                "entity": entity,
                "metric": np.repeat(["response_time", "queue_length"], n),
                "value": np.concatenate([response, queue]),
                "unit": np.repeat(["s", "count"], n),
            }
        )


def simulate_mm1(
    n: int,
    *,
    arrival_rate: float,
    service_time: float,
    change_at: int | None = None,
    new_arrival_rate: float | None = None,
    new_service_time: float | None = None,
    seed: int = 0,
    warmup: int = 1000,
) -> MM1Run:
    """Simulate ``n`` customers of an M/M/1 FCFS queue.

    Parameters
    ----------
    n
        Number of customers.
    arrival_rate
        Arrivals per second before the change.
    service_time
        Mean service time in seconds before the change.
    change_at
        First customer (0-based) that sees the new parameters; None for no change.
    new_arrival_rate, new_service_time
        Parameters from ``change_at`` on (default: unchanged).
    seed
        Seed of the random generator; the same seed gives the same run.
    warmup
        Customers simulated before the first one returned, then dropped.
    """
    if n < 1:
        raise ConfigError(f"n must be at least 1, got {n}")
    new_arrival_rate = arrival_rate if new_arrival_rate is None else new_arrival_rate
    new_service_time = service_time if new_service_time is None else new_service_time
    for name, value in [
        ("arrival_rate", arrival_rate),
        ("service_time", service_time),
        ("new_arrival_rate", new_arrival_rate),
        ("new_service_time", new_service_time),
    ]:
        if not (np.isfinite(value) and value > 0):
            raise ConfigError(f"{name} must be a positive number, got {value}")
    rho_before, rho_after = arrival_rate * service_time, new_arrival_rate * new_service_time
    if change_at is not None and not 0 < change_at < n:
        raise ConfigError(f"change_at must be in 1..{n - 1}, got {change_at}")
    if rho_before >= 1:
        raise ConfigError(f"the queue must be stable before the change (rho={rho_before:.3f} >= 1)")

    if warmup < 0:
        raise ConfigError(f"warmup must not be negative, got {warmup}")

    rng = np.random.default_rng(seed)
    total = n + warmup
    split = total if change_at is None else warmup + change_at
    before = np.arange(total) < split
    rate = np.where(before, arrival_rate, new_arrival_rate)
    mean_service = np.where(before, service_time, new_service_time)
    gaps = rng.exponential(1.0, total) / rate
    service = rng.exponential(1.0, total) * mean_service
    arrival = np.cumsum(gaps)

    # Stationary start: wait is 0 w.p. 1-rho, else Exp(mu - lambda).
    mu = 1.0 / service_time
    first_wait = 0.0
    if rng.random() < rho_before:
        first_wait = rng.exponential(1.0 / (mu - arrival_rate))
    steps = np.concatenate([[first_wait], service[:-1] - gaps[1:]])
    walk = np.cumsum(steps)
    wait = walk - np.minimum(0.0, np.minimum.accumulate(walk))
    response = wait + service
    departure = arrival + response
    # FCFS: departures are increasing, so those gone by arrival i are a prefix of the first i.
    queue_length = np.arange(total) - np.searchsorted(departure, arrival, side="right")
    kept = slice(warmup, None)
    origin = arrival[warmup - 1] if warmup else 0.0
    return MM1Run(
        arrival=arrival[kept] - origin,
        service=service[kept],
        response=response[kept],
        queue_length=queue_length[kept],
        change_at=change_at,
        rho_before=rho_before,
        rho_after=rho_after,
    )
