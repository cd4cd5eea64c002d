"""Identity (node + pid + start time), churn, starvation (run-queue wait, saturation with a
margin) and the rules' durations, on small hand-built frames (10 s periods)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from perfsleuth.errors import DataError
from perfsleuth.findings import Finding, Kind
from perfsleuth.processes import periods as periods_module
from perfsleuth.processes.detector import ProcessDetector
from perfsleuth.processes.periods import Columns, build
from perfsleuth.processes.rules import Group, ProcessRules

START = pd.Timestamp("2024-03-04", tz="UTC")  # a whole number of 30 min windows since 1970
RULES = ProcessRules.model_validate({"settings": {"period": "10s", "window": "30m"}})
MIB = 2.0**20


def rows(
    name: str,
    pid: int,
    cpu: Sequence[float],
    *,
    first: int = 0,
    rss: Sequence[float] | None = None,
    wait: Sequence[float] | None = None,
    start: float | None = None,
) -> list[dict[str, object]]:
    """One process's samples, one per 10 s period from period ``first``; NaN cpu = absent."""
    out = []
    for i, c in enumerate(cpu):
        if not np.isfinite(c):
            continue
        row: dict[str, object] = {
            "time": START + pd.Timedelta(seconds=10 * (first + i)),
            "node": "n1",
            "pid": pid,
            "name": name,
            "user": "app",
            "cpu": float(c),
            "rss_bytes": float(rss[i]) if rss is not None else 20 * MIB,
            "ncpu": 2.0,
            "os": "Linux",
        }
        if wait is not None:
            row["cpu_wait"] = float(wait[i])
        if start is not None:
            row["start_time"] = start
        out.append(row)
    return out


def frame(
    *processes: list[dict[str, object]], machine: Sequence[float] | None = None
) -> pd.DataFrame:
    data = pd.DataFrame([r for p in processes for r in p])
    if machine is not None:
        period = ((data["time"] - START).dt.total_seconds() // 10).astype(int)
        data["machine_cpu"] = np.asarray(machine, dtype=float)[period]
    return data


def found(data: pd.DataFrame, kind: Kind, rules: ProcessRules = RULES) -> list[Finding]:
    return [f for f in ProcessDetector(rules=rules).detect(data) if f.kind is kind]


# -- identity ---------------------------------------------------------------------------------


def test_a_reused_pid_is_two_processes_with_start_times() -> None:
    # pid 700 lives twice; each life grows 30 MiB over 12 periods, then a new life starts low
    grow = [20 * MIB + 2.5 * MIB * i for i in range(12)]
    first = rows("worker", 700, [0.01] * 12, rss=grow, start=1.0e9)
    second = rows("worker", 700, [0.01] * 12, first=12, rss=grow, start=1.0e9 + 130)
    data = frame(first, second)
    ramps = found(data, Kind.MEMORY_RAMP)
    assert len(ramps) == 2  # each life is a ramp of its own ...
    assert {f.start for f in ramps} == {START, START + pd.Timedelta(seconds=120)}
    # ... where (pid, name) alone sees one process whose memory fell: a saw-tooth of one tooth
    merged = found(data.drop(columns=["start_time"]), Kind.MEMORY_RAMP)
    assert len(merged) <= 1


def test_a_process_that_changes_its_name_stays_one_process() -> None:
    # exec: the same pid and start time, named "sh" for a period, then "worker"
    data = frame(
        rows("sh", 701, [1.0], start=5.0), rows("worker", 701, [1.0] * 23, first=1, start=5.0)
    )
    data = data.assign(ncpu=4.0, machine_cpu=1.0)
    (loop,) = found(data, Kind.CPU_LOOP)
    assert loop.entity == "n1/worker[701]"  # its name now
    assert loop.evidence_dict()["looping_periods"] == 24  # both names, one process


def test_short_lived_processes_are_churn_not_a_ramp_or_saw_tooth() -> None:
    # 24 short-lived "python3" processes in turn, each growing to 180 MiB in its 3 periods
    grow = [60 * MIB, 120 * MIB, 180 * MIB]
    lives = [
        rows("python3", 900 + k, [0.05] * 3, first=3 * k, rss=grow, start=k) for k in range(24)
    ]
    data = frame(*lives)
    assert not found(data, Kind.MEMORY_RAMP) and not found(data, Kind.SAW_TOOTH)
    (node,) = ProcessDetector(rules=RULES).analyse(data).nodes
    assert (node.processes, node.churn) == (24, 24)
    # followed by name, as a group may ask, their sum is a saw-tooth: only when asked
    by_name = RULES.model_copy(
        update={"groups": (Group(name="py", processes=("python3",), by_name=True),)}
    )
    (tooth,) = found(data, Kind.SAW_TOOTH, by_name)
    assert tooth.entity == "n1/python3" and "pids" in tooth.evidence_dict()


# -- starvation -------------------------------------------------------------------------------

# (cpu per period, wait per period, machine busy cores of 2, kind expected or None)
STARVED = [
    # a loop that wants a whole CPU but gets 0.4: still a loop
    ([0.4] * 24, [0.6] * 24, [2.0] * 24, Kind.CPU_LOOP),
    # the same without the wait: the paper's rule cannot judge a saturated machine
    ([0.4] * 24, None, [2.0] * 24, None),
    # a loop that gets its CPU on a machine with CPU to spare
    ([1.0] * 24, [0.0] * 24, [1.2] * 24, Kind.CPU_LOOP),
    # starved far under the cull (0.05 of a CPU): still wants a whole one
    ([0.05] * 24, [0.95] * 24, [2.0] * 24, Kind.CPU_LOOP),
    # a legitimate job: a whole CPU for 3 periods, then 3 idle, in turn (never 8 in a row)
    ([1.0, 1.0, 1.0, 0.0, 0.0, 0.0] * 4, [0.0] * 24, [1.2] * 24, None),
]


@pytest.mark.parametrize(("cpu", "wait", "machine", "kind"), STARVED)
def test_loops_are_judged_on_what_they_want(
    cpu: list[float], wait: list[float] | None, machine: list[float], kind: Kind | None
) -> None:
    data = frame(rows("spin", 800, cpu, wait=wait), machine=machine)
    loops = found(data, Kind.CPU_LOOP) + found(data, Kind.CONSTRAINED_LOOP)
    assert [f.kind for f in loops] == ([kind] if kind else [])


def test_two_loops_starving_each_other_are_constrained_loops() -> None:
    a = rows("crunch_a", 810, [0.5] * 12, wait=[0.5] * 12)
    b = rows("crunch_b", 811, [0.5] * 12, wait=[0.5] * 12)
    data = frame(a, b, machine=[2.0] * 12)
    loops = found(data, Kind.CONSTRAINED_LOOP)
    assert sorted(f.entity for f in loops) == ["n1/crunch_a[810]", "n1/crunch_b[811]"]
    assert all(f.evidence_dict()["method"] == "wait" for f in loops)
    assert loops[0].evidence_dict()["partners"] in ("crunch_a[810]", "crunch_b[811]")
    assert not found(data, Kind.CPU_LOOP)


def test_a_starved_poller_is_a_hum_at_what_it_takes_alone() -> None:
    # it polls for 0.3 of a CPU; starved, it gets 0.1 and waits 0.6 (sleeps the rest)
    data = frame(rows("pollerd", 820, [0.1] * 24, wait=[0.6] * 24), machine=[2.0] * 24)
    (hum,) = found(data, Kind.HUM)
    assert hum.evidence_dict()["mean_cpu"] == pytest.approx(0.25)  # 0.1 / (1 - 0.6)
    assert "other work kept it waiting" in hum.explanation
    assert not found(data, Kind.CPU_LOOP) and not found(data, Kind.CONSTRAINED_LOOP)


# (machine busy cores of 2 per period, saturated periods expected) with level .9, margin .1
SATURATION = [
    ([1.9, 1.7, 1.9, 1.0], [True, True, True, False]),  # a dip within the margin stays saturated
    ([1.0, 1.7, 1.0, 1.0], [False, False, False, False]),  # near, but never at the level
    ([1.7, 1.7, 1.9, 1.5], [True, True, True, False]),  # a stretch that reaches the level
    ([1.9, 1.5, 1.7, 1.7], [True, False, False, False]),  # 1.5 is below the margin: a break
]


@pytest.mark.parametrize(("machine", "expected"), SATURATION)
def test_saturation_has_a_margin(machine: list[float], expected: list[bool]) -> None:
    data = frame(rows("x", 1, [0.01] * len(machine)), machine=machine)
    periods = build(Columns.of(data), RULES)
    assert periods.saturated[0].tolist() == expected


# -- rules, memory and silence ----------------------------------------------------------------


def test_durations_follow_the_period_unless_given() -> None:
    rules = ProcessRules.model_validate({"settings": {"period": "10s"}})
    assert rules.settings.periods_per_window == 24 and rules.ramp_periods == 12
    assert RULES.settings.periods_per_window == 180 and RULES.ramp_periods == 12
    given = ProcessRules.model_validate(
        {"settings": {"period": "10s", "window": "30m"}, "ramp": {"min_duration": "5m"}}
    )
    assert given.ramp_periods == 30


BAD = [
    ({"settings": {"period": "1ms"}}, "at least 1s"),
    ({"settings": {"period": "10s"}, "ramp": {"min_duration": "15s"}}, "whole number of periods"),
    ({"settings": {"period": "10s"}, "ramp": {"min_duration": "10s"}}, "at least two"),
    ({"settings": {"period": "10s"}, "hum": {"hours": 30}}, "hum.hours = 30 exceeds"),
]


@pytest.mark.parametrize(("rules", "message"), BAD)
def test_inconsistent_durations_are_errors(rules: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ProcessRules.model_validate(rules)


def test_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(periods_module, "MAX_CELLS", 100)
    data = frame(*(rows(f"p{k}", k, [0.01] * 24) for k in range(10)))
    with pytest.raises(DataError, match=r"10 processes × 24 periods of 0:00:10.*longer"):
        ProcessDetector(rules=RULES).detect(data)


def test_silence_is_explained() -> None:
    data = frame(rows("spin", 800, [1.0] * 28), machine=[1.2] * 28)
    hourly = ProcessDetector().analyse(data.assign(ncpu=2.0))
    assert not hourly.findings
    (line,) = hourly.coverage_lines()
    assert "the data spans 4.5 min, less than one period (1h)" in line
    assert "set [settings] period" in line
    scaled = ProcessDetector(rules=RULES).analyse(data)
    assert [f.kind for f in scaled.findings] == [Kind.CPU_LOOP]
    assert scaled.coverage_lines() == [
        "n1: 28 period(s) of 10s with data, 0% saturated, 0 short-lived process(es); "
        "every check had the periods it needs"
    ]
    node = scaled.coverage_dict()["nodes"][0]  # type: ignore[index]
    assert {c["check"]: (c["available"], c["needed"]) for c in node["checks"]}["hum"] == (28, 20)


def test_without_the_wait_a_saturated_machine_is_a_blind_spot_it_names() -> None:
    data = frame(rows("pollerd", 820, [0.1] * 24), machine=[2.0] * 24)
    analysis = ProcessDetector(rules=RULES, checks=("hum",)).analyse(data)
    assert not analysis.findings
    (line,) = analysis.coverage_lines()
    assert "hum needs 20 periods judged in a window, the data has 0" in line
    assert "no run-queue wait (cpu_wait)" in line
