"""``perfsleuth verify``: one-dimensional sweeps, predicted vs actual counters, error model.

As in Blake & Breese §3.2, each sweep runs a synthetic workload that exercises one service
while one workload parameter takes a series of values (the request size of sequential reads,
say), logs the real counters, and applies the same workloads to the model. The comparison is
the paper's figures 3–4; the residuals of all cases train the Gaussian error model
(:func:`~perfsleuth.bottleneck.kernels.errormodel.learn_error_model`).

The workload of a case is known: fio's own rates and request sizes and its user CPU; the
cgroup's resident memory; and what other processes did meanwhile (machine counters minus the
cgroup's), which on a shared host is part of the truth.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import pandas as pd

from perfsleuth.bottleneck.kernels.calibration import job_parameters
from perfsleuth.bottleneck.kernels.errormodel import ErrorModel, learn_error_model
from perfsleuth.bottleneck.kernels.model import Model
from perfsleuth.bottleneck.workloads import Job, JobResult, run_job

__all__ = [
    "Case",
    "Sweep",
    "default_sweeps",
    "known_workload",
    "learn_from_cases",
    "run_sweeps",
    "sweep_table",
]

log = logging.getLogger(__name__)
Array = npt.NDArray[np.float64]
_KIB, _MIB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Sweep:
    """A series of jobs varying one workload parameter."""

    name: str
    parameter: str
    levels: tuple[float, ...]
    jobs: tuple[Job, ...]
    memory_limit: int | None = None
    warmup: float = 1.0


@dataclass(frozen=True, eq=False)
class Case:
    """One verification run: the known workload, the observed and the predicted counters."""

    sweep: str
    parameter: str
    level: float
    w: Array
    inputs: dict[str, float]
    observed: Array
    """The model's counters in order; NaN where not observed."""
    predicted: Array


def default_sweeps(file: str, *, quick: bool = False) -> list[Sweep]:
    """The sweeps ``perfsleuth verify`` runs; ``quick`` runs fewer levels on a smaller file."""
    size = 256 * _MIB if quick else _MIB * 1024
    base = Job("read", file=file, file_size=size)

    def sizes(full: Sequence[int], short: Sequence[int]) -> tuple[int, ...]:
        return tuple(short if quick else full)

    rr = sizes((4 * _KIB, 16 * _KIB, 64 * _KIB, 256 * _KIB), (4 * _KIB, 64 * _KIB))
    sr = sizes((4 * _KIB, 32 * _KIB, 256 * _KIB, _MIB), (4 * _KIB, _MIB))
    rw = sizes((4 * _KIB, 64 * _KIB, 256 * _KIB), (4 * _KIB, 64 * _KIB))
    loads = (25, 50, 100) if not quick else (50, 100)
    limit = 128 * _MIB
    extents = (64 * _MIB, 256 * _MIB, 512 * _MIB) if not quick else (64 * _MIB, 256 * _MIB)
    return [
        Sweep(
            "direct random reads",
            "rand_read_size",
            tuple(map(float, rr)),
            tuple(replace(base, kind="randread", size=s, depth=4) for s in rr),
        ),
        Sweep(
            "buffered sequential reads",
            "seq_read_size",
            tuple(map(float, sr)),
            tuple(replace(base, size=s, direct=False) for s in sr),
        ),
        Sweep(
            "direct random writes",
            "rand_write_size",
            tuple(map(float, rw)),
            tuple(replace(base, kind="randwrite", size=s, depth=4) for s in rw),
        ),
        Sweep(
            "CPU burner",
            "app_cpu",
            tuple(v / 100 for v in loads),
            tuple(Job("cpu", cpu_load=v) for v in loads),
        ),
        Sweep(
            "cached random reads over an extent, 128 MiB cgroup",
            "rand_read_extent",
            tuple(map(float, extents)),
            tuple(
                replace(base, kind="randread", direct=False, extent=e, random_map=False)
                for e in extents
            ),
            memory_limit=limit,
            warmup=3.0,
        ),
    ]


def known_workload(model: Model, result: JobResult) -> tuple[dict[str, float], dict[str, float]]:
    """The workload parameters (and inputs) of a finished job, from fio and the counters."""
    c = result.counters()
    job = result.job
    values: dict[str, float] = {
        "app_cpu": result.usr,
        "app_sys": 0.0,  # a fio job's kernel time is its I/O's
        "seq_read_bw": 0.0,
        "seq_write_bw": 0.0,
        "rand_read_rate": 0.0,
        "rand_write_rate": 0.0,
        "io_depth": float(max(job.depth, 1)),
    }
    if "cg.mem.anon" in c:
        values["app_ram"] = max(c["cg.mem.anon"], 1.0)
    machine_cpu = c.get("cpu.user", 0.0) + c.get("cpu.system", 0.0)
    group_cpu = c.get("cg.cpu.user", result.usr) + c.get("cg.cpu.system", result.sys)
    values["bg_cpu"] = max(machine_cpu - group_cpu, 1e-4)
    values["bg_read_bw"] = max(c.get("disk.read_bytes", 0.0) - c.get("cg.io.read_bytes", 0.0), 1.0)
    values["bg_write_bw"] = max(
        c.get("disk.write_bytes", 0.0) - c.get("cg.io.write_bytes", 0.0), 1.0
    )
    values.update(
        job_parameters(
            job.kind,
            job.size,
            job.direct,
            result.iops,
            result.bw,
            float(job.extent or job.file_size),
        )
    )
    inputs = {}
    for info in model.inputs:
        if info.counter in c:
            inputs[info.name] = c[info.counter]
    known = {k: v for k, v in values.items() if k in model.parameters}
    return known, inputs


def case_of(model: Model, sweep: Sweep, level: float, result: JobResult) -> Case:
    values, inputs = known_workload(model, result)
    w = model.workload(_clip(model, values), source=f"sweep {sweep.name!r}")
    predicted, _ = model.predict(w[None, :], inputs)
    counters = result.counters()
    observed = np.array([counters.get(c, math.nan) for c in model.counter_columns])
    return Case(sweep.name, sweep.parameter, level, w, inputs, observed, predicted[0])


def _clip(model: Model, values: dict[str, float]) -> dict[str, float]:
    out = {}
    for name, value in values.items():
        j = model.parameters.index(name)
        out[name] = float(np.clip(value, model.priors.lower[j], model.priors.upper[j]))
    return out


def run_sweeps(
    model: Model,
    sweeps: Sequence[Sweep],
    *,
    seconds: float = 3.0,
    cgroup: str = "perfsleuth-verify",
    progress: Callable[[str], None] | None = None,
) -> list[Case]:
    """Run every sweep's jobs, each in its own cgroup, and compare with the model."""
    say = progress or (lambda _: None)
    cases = []
    for sweep in sweeps:
        for level, job in zip(sweep.levels, sweep.jobs, strict=True):
            result = run_job(
                job,
                seconds=seconds,
                warmup=sweep.warmup,
                cgroup=cgroup,
                memory_limit=sweep.memory_limit,
            )
            case = case_of(model, sweep, level, result)
            cases.append(case)
            say(f"{sweep.name}: {sweep.parameter} = {level:g}: " + _brief(model, case))
    return cases


def _brief(model: Model, case: Case) -> str:
    parts = []
    for column in ("disk.reads", "disk.read_bytes", "disk.writes", "cpu.system", "cg.cpu.user"):
        j = model.counter_columns.index(column) if column in model.counter_columns else -1
        if j >= 0 and math.isfinite(case.observed[j]):
            parts.append(f"{column} {case.observed[j]:.3g} (model {case.predicted[j]:.3g})")
    return ", ".join(parts)


def sweep_table(model: Model, cases: Sequence[Case]) -> pd.DataFrame:
    """Long table: sweep, parameter, level, counter, observed, predicted, error (g scale)."""
    errors = ErrorModel.default(model)
    rows = []
    for case in cases:
        g_obs = errors.transform(case.observed)
        g_pred = errors.transform(case.predicted)
        for j, column in enumerate(model.counter_columns):
            if math.isfinite(case.observed[j]):
                rows.append(
                    {
                        "sweep": case.sweep,
                        "parameter": case.parameter,
                        "level": case.level,
                        "counter": column,
                        "observed": float(case.observed[j]),
                        "predicted": float(case.predicted[j]),
                        "error": float(g_obs[j] - g_pred[j]),
                    }
                )
    return pd.DataFrame(
        rows, columns=["sweep", "parameter", "level", "counter", "observed", "predicted", "error"]
    )


def learn_from_cases(model: Model, cases: Sequence[Case], *, source: str = "verify") -> ErrorModel:
    """The error model learned from the cases (shrunk toward the model's defaults)."""
    predicted = np.vstack([c.predicted for c in cases])
    observed = np.vstack([c.observed for c in cases])
    return learn_error_model(model, predicted, observed, source=source)
