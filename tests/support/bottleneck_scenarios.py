"""Real bottleneck scenarios on this machine, each in its own cgroup (the issue's acceptance
test; ``scripts/bottleneck_real.py`` prints the confusion table).

Six workloads whose bottleneck is known by construction: sequential reads and writes (1 MiB,
direct, 4 threads), random reads and writes (32 KiB, direct, 4 threads), a CPU burner on every
core, and buffered random 4 KiB reads over 1 GiB in a cgroup limited to 128 MiB of memory
(page-cache thrashing: more memory, not a faster disk, is the fix). Each runs while the
workload's cgroup and the machine are sampled; the window's mean counters go to the inference.

Disk scenarios use direct I/O so the device, not the kernel's copying, limits them; the
machine is shared, so other processes' load is part of what the model must see through (it
infers it as background from machine minus cgroup counters).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.infer import Inference, infer
from perfsleuth.bottleneck.kernels.model import Model
from perfsleuth.bottleneck.workloads import Job, JobResult, run_job

__all__ = ["SCENARIOS", "Outcome", "RealScenario", "confusion", "run_scenarios"]

log = logging.getLogger(__name__)
_KIB, _MIB = 1024, 1 << 20


@dataclass(frozen=True)
class RealScenario:
    name: str
    expected: str
    job: Job
    memory_limit: int | None = None
    warmup: float = 1.0


def scenarios(file: str, file_size: int = 1 << 30) -> tuple[RealScenario, ...]:
    base = Job("read", file=file, file_size=file_size, engine="psync")
    return (
        RealScenario("sequential read", "disk", replace(base, size=_MIB, depth=4)),
        RealScenario("sequential write", "disk", replace(base, kind="write", size=_MIB, depth=4)),
        RealScenario(
            "random read", "disk", replace(base, kind="randread", size=32 * _KIB, depth=4)
        ),
        RealScenario(
            "random write", "disk", replace(base, kind="randwrite", size=32 * _KIB, depth=4)
        ),
        RealScenario("CPU-bound", "cpu", Job("cpu", threads=2, cpu_load=100)),
        RealScenario(
            "page-cache thrashing",
            "memory",
            replace(base, kind="randread", size=4 * _KIB, depth=2, direct=False, random_map=False),
            memory_limit=128 * _MIB,
            warmup=4.0,
        ),
    )


SCENARIOS = tuple(s.name for s in scenarios("/var/tmp/x"))


@dataclass(frozen=True, eq=False)
class Outcome:
    scenario: RealScenario
    run: int
    result: JobResult
    inference: Inference

    @property
    def correct(self) -> bool:
        return self.inference.bottleneck == self.scenario.expected


def run_scenarios(
    model: Model,
    *,
    error_model: ErrorModel | None = None,
    runs: int = 3,
    seconds: float = 8.0,
    file: str = "/var/tmp/perfsleuth-real.bin",
    only: Sequence[str] | None = None,
    progress: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run every scenario ``runs`` times (interleaved: run 1 of each, then run 2 …)."""
    chosen = [s for s in scenarios(file) if only is None or s.name in only]
    outcomes = []
    try:
        for number in range(1, runs + 1):
            for scenario in chosen:
                group = "perfsleuth-real-" + scenario.name.replace(" ", "-").lower()
                result = run_job(
                    scenario.job,
                    seconds=seconds,
                    warmup=scenario.warmup,
                    cgroup=group,
                    memory_limit=scenario.memory_limit,
                )
                inference = infer(model, result.counters(), error_model=error_model, seed=number)
                outcome = Outcome(scenario, number, result, inference)
                outcomes.append(outcome)
                if progress is not None:
                    progress(outcome)
    finally:
        Path(file).unlink(missing_ok=True)
    return outcomes


def confusion(outcomes: Sequence[Outcome], resources: Sequence[str]) -> str:
    """Rows: scenario (expected resource); columns: the inferred bottleneck; cells: runs."""
    names = list(dict.fromkeys(o.scenario.name for o in outcomes))
    width = max(len(n) for n in names) + 12
    lines = ["scenario (expected)".ljust(width) + "".join(r.rjust(8) for r in resources)]
    for name in names:
        mine = [o for o in outcomes if o.scenario.name == name]
        label = f"{name} ({mine[0].scenario.expected})"
        counts = [sum(o.inference.bottleneck == r for o in mine) for r in resources]
        lines.append(label.ljust(width) + "".join(str(c).rjust(8) for c in counts))
    right = sum(o.correct for o in outcomes)
    per_run: dict[int, list[bool]] = {}
    for o in outcomes:
        per_run.setdefault(o.run, []).append(o.correct)
    runs = ", ".join(f"run {k}: {sum(v)}/{len(v)}" for k, v in sorted(per_run.items()))
    lines.append(f"correct: {right} of {len(outcomes)} ({runs})")
    return "\n".join(lines)
