"""Seeded OS-counter scenarios from a bottleneck model: forward model + Gaussian error model.

Each scenario draws a workload whose bottleneck is known by construction — sequential reads or
writes, random (direct) reads or writes loading the disk, a CPU-bound workload, or buffered
random reads over a working set several times the cgroup's memory (page-cache thrashing) —
predicts its counters with the model, and adds noise from the error model on the
``asinh(counter / scale)`` scale, one independent draw per sample. The truth (workload,
utilisations, bottleneck) comes with the counter frame, for tests, the demo and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.model import Model, load_model
from perfsleuth.errors import ConfigError

__all__ = ["SCENARIOS", "CounterRun", "scenario_workload", "simulate_counters", "simulate_scenario"]

Array = npt.NDArray[np.float64]

SCENARIOS: dict[str, str] = {
    "seq_read": "disk",
    "seq_write": "disk",
    "rand_read": "disk",
    "rand_write": "disk",
    "cpu": "cpu",
    "memory": "memory",
}
"""Scenario name → the resource that is its bottleneck by construction."""

_KIB = 1024.0
_MIB = 1024.0**2


@dataclass(frozen=True, eq=False)
class CounterRun:
    """A simulated run: the counter frame and the truth behind it."""

    scenario: str
    frame: pd.DataFrame
    w: Array
    inputs: dict[str, float]
    utilisation: dict[str, float]
    bottleneck: str
    parameters: tuple[str, ...]

    def value(self, name: str) -> float:
        return float(self.w[self.parameters.index(name)])


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def scenario_workload(
    model: Model, scenario: str, rng: np.random.Generator
) -> tuple[Array, dict[str, float]]:
    """A workload (and inputs) for ``scenario`` of the built-in Linux model's parameters."""
    if scenario not in SCENARIOS:
        raise ConfigError(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    needed = {"rand_read_rate", "seq_read_bw", "seq_write_bw", "rand_write_rate", "app_cpu"}
    if not needed <= set(model.parameters):
        raise ConfigError(
            f"scenarios need the Linux model's parameters; {model.name!r} lacks "
            f"{', '.join(sorted(needed - set(model.parameters)))}"
        )
    background = {
        "app_cpu": _log_uniform(rng, 0.005, 0.05),
        "app_ram": _log_uniform(rng, 16 * _MIB, 512 * _MIB),
        "seq_read_bw": _log_uniform(rng, 1e3, 1e5),
        "seq_read_size": _log_uniform(rng, 64 * _KIB, 1024 * _KIB),
        "seq_write_bw": _log_uniform(rng, 1e3, 1e5),
        "seq_write_size": _log_uniform(rng, 64 * _KIB, 1024 * _KIB),
        "rand_read_rate": _log_uniform(rng, 0.5, 20.0),
        "rand_read_size": _log_uniform(rng, 4 * _KIB, 64 * _KIB),
        "rand_read_extent": _log_uniform(rng, 64 * _MIB, 8192 * _MIB),
        "rand_read_direct": float(rng.uniform(0.0, 1.0)),
        "rand_write_rate": _log_uniform(rng, 0.5, 20.0),
        "rand_write_size": _log_uniform(rng, 4 * _KIB, 64 * _KIB),
        "io_depth": _log_uniform(rng, 1.0, 16.0),
        "bg_cpu": _log_uniform(rng, 0.01, 0.3),
        "bg_read_bw": _log_uniform(rng, 1e3, 1e5),
        "bg_write_bw": _log_uniform(rng, 1e3, 1e5),
        # its threads mostly wait for I/O or sleep, and get a CPU when they want one
        "idle_threads": _log_uniform(rng, 0.5, 4.0),
        "cpu_grant": float(rng.uniform(0.85, 1.0)),
        "rand_read_mapped": float(rng.uniform(0.0, 0.05)),
        "disk_speed": _log_uniform(rng, 0.7, 1.4),
    }
    background["app_sys"] = 0.002  # a little kernel work of its own (no draw: seeds keep
    # the scenarios they had)
    background = {k: v for k, v in background.items() if k in model.parameters}
    inputs: dict[str, float] = {}
    target = float(rng.uniform(0.6, 1.0))
    if scenario == "seq_read":
        background["seq_read_bw"] = 1.0
        return _scaled(model, background, "seq_read_bw", "disk", target, inputs), inputs
    if scenario == "seq_write":
        background["seq_write_bw"] = 1.0
        return _scaled(model, background, "seq_write_bw", "disk", target, inputs), inputs
    if scenario == "rand_read":
        background.update(rand_read_direct=1.0, rand_read_rate=1.0)
        background["rand_read_size"] = _log_uniform(rng, 4 * _KIB, 256 * _KIB)
        return _scaled(model, background, "rand_read_rate", "disk", target, inputs), inputs
    if scenario == "rand_write":
        background["rand_write_rate"] = 1.0
        background["rand_write_size"] = _log_uniform(rng, 4 * _KIB, 256 * _KIB)
        return _scaled(model, background, "rand_write_rate", "disk", target, inputs), inputs
    if scenario == "cpu":
        ncpu = model.constants.get("ncpu", 1.0)
        background["app_cpu"] = target * ncpu
        if "idle_threads" in background:  # its threads run (or wait to) as long as it is busy
            demand = background["app_cpu"] / background["cpu_grant"]
            background["idle_threads"] = demand * (1.0 / target - 1.0)
        return model.workload(background, source=f"scenario {scenario}"), inputs
    # memory: buffered random reads over an extent several times the cgroup's memory
    limit = _log_uniform(rng, 128 * _MIB, 2048 * _MIB)
    inputs["mem_limit"] = limit
    background.update(
        rand_read_direct=float(rng.uniform(0.0, 0.05)),
        rand_read_extent=limit * float(rng.uniform(2.0, 8.0)),
        rand_read_size=_log_uniform(rng, 4 * _KIB, 32 * _KIB),
        app_ram=min(background["app_ram"], 0.25 * limit),
        rand_read_rate=1.0,
    )
    disk_target = float(rng.uniform(0.2, 0.9))
    return _scaled(model, background, "rand_read_rate", "disk", disk_target, inputs), inputs


def _scaled(
    model: Model,
    values: dict[str, float],
    rate: str,
    resource: str,
    target: float,
    inputs: dict[str, float],
) -> Array:
    """Set ``rate`` so that the stream alone takes ``target`` of ``resource`` (utilisation is
    linear in a stream's rate)."""
    j = model.resource_names.index(resource)
    values = dict(values)
    values[rate] = 0.0
    w0 = model.workload(values)
    values[rate] = 1.0
    w1 = model.workload(values)
    _, u = model.predict(np.vstack([w0, w1]), inputs)
    per_unit = float(u[1, j] - u[0, j])
    values[rate] = max(target - float(u[0, j]), 0.05) / per_unit
    return model.workload(values)


def simulate_counters(
    model: Model,
    w: Array,
    *,
    inputs: dict[str, float] | None = None,
    rng: np.random.Generator,
    samples: int = 12,
    interval_s: float = 5.0,
    start: datetime | None = None,
    entity: str = "sim",
    error_model: ErrorModel | None = None,
    noise: float = 1.0,
    columns: tuple[str, ...] | None = None,
) -> pd.DataFrame:
    """A counter frame of ``samples`` noisy observations of workload ``w`` (every counter the
    model predicts, or ``columns``), plus the inputs' counters (a cgroup's memory limit)."""
    errors = ErrorModel.default(model) if error_model is None else error_model
    counters, _ = model.predict(w[None, :], inputs)
    g = errors.transform(counters[0])
    eps = rng.multivariate_normal(errors.mean, errors.cov, size=samples, method="cholesky")
    values = errors.scale * np.sinh(g + noise * eps)
    # rates and levels a real collector reports cannot go below zero; changes of levels can
    unsigned = np.array([not c.signed for c in model.counters], dtype=bool)
    values = np.where(unsigned, np.maximum(values, 0.0), values)
    origin = pd.Timestamp(start or datetime(2024, 5, 1, 12, 0, tzinfo=UTC))
    times = origin + pd.to_timedelta(np.arange(samples) * interval_s, unit="s")
    keep = [i for i, c in enumerate(model.counter_columns) if columns is None or c in columns]
    rows = {
        "time": np.repeat(times, len(keep)),
        "entity": entity,
        "counter": np.tile([model.counter_columns[i] for i in keep], samples),
        "value": values[:, keep].reshape(-1),
    }
    frame = pd.DataFrame(rows)
    extra = []
    for info in model.inputs:
        if inputs and info.name in inputs:
            extra.append(
                pd.DataFrame(
                    {
                        "time": times,
                        "entity": entity,
                        "counter": info.counter,
                        "value": float(inputs[info.name]),
                    }
                )
            )
    if extra:
        frame = pd.concat([frame, *extra], ignore_index=True)
    return frame.sort_values(["counter", "time"], kind="stable").reset_index(drop=True)


def simulate_scenario(
    scenario: str,
    *,
    model: Model | None = None,
    seed: int = 0,
    samples: int = 12,
    interval_s: float = 5.0,
    entity: str | None = None,
    noise: float = 1.0,
    error_model: ErrorModel | None = None,
    columns: tuple[str, ...] | None = None,
    start: datetime | None = None,
) -> CounterRun:
    """One seeded run of ``scenario`` (see :data:`SCENARIOS`) with its truth."""
    chosen = load_model() if model is None else model
    rng = np.random.default_rng(seed)
    w, inputs = scenario_workload(chosen, scenario, rng)
    frame = simulate_counters(
        chosen,
        w,
        inputs=inputs,
        rng=rng,
        samples=samples,
        interval_s=interval_s,
        entity=entity or f"sim-{scenario}",
        error_model=error_model,
        noise=noise,
        columns=columns,
        start=start,
    )
    _, utils = chosen.predict(w[None, :], inputs)
    utilisation = dict(zip(chosen.resource_names, map(float, utils[0]), strict=True))
    return CounterRun(
        scenario=scenario,
        frame=frame,
        w=w,
        inputs=inputs,
        utilisation=utilisation,
        bottleneck=max(utilisation, key=lambda r: utilisation[r]),
        parameters=chosen.parameters,
    )
