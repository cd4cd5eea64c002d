"""Table-style tests of the loop rules' edges (Kaminski 2003, §3.1–3.2 and the appendix)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from perfsleuth.errors import DataError
from perfsleuth.findings import Kind
from perfsleuth.processes.rules import ExceptionRule, NeverAlert, ProcessRules
from tests.processes.conftest import detect, frame

RULES = ProcessRules()


def _loop_hours(hours: int, level: float = 1.0, total: int = 24) -> list[float]:
    return [level] * hours + [0.01] * (total - hours)


# (looping hours of 24, CPU level, OS, expected a cpu_loop)
SIMPLE_LOOP_CASES = [
    (8, 1.00, "Linux", True),  # exactly 8 of 24 hours qualifies
    (7, 1.00, "Linux", False),  # one short
    (24, 1.00, "Linux", True),
    (8, 0.95, "Linux", True),  # lower bound of .05 around 1.00 is inclusive
    (8, 1.05, "Linux", True),  # upper bound inclusive
    (8, 0.94, "Linux", False),  # just below the band
    (8, 1.06, "Linux", False),  # just above: a busy multithreaded process, not a loop
    (8, 0.84, "Windows 2000", True),  # .92 - .08
    (8, 1.00, "Windows 2000", True),  # .92 + .08
    (8, 0.83, "Windows 2000", False),
    (8, 0.90, "Solaris", False),  # unknown OS: the default line (.95..1.05)
    (8, 0.95, "Solaris", True),
]


@pytest.mark.parametrize(("hours", "level", "os", "expected"), SIMPLE_LOOP_CASES)
def test_simple_loop_edges(hours: int, level: float, os: str, expected: bool) -> None:
    data = frame({("spin", 10): _loop_hours(hours, level)}, os=os)
    found = detect(data, RULES, "cpu_loop")
    assert bool(found) is expected
    if expected:
        ev = found[0].evidence_dict()
        assert ev["looping_periods"] == hours
        assert ev["needed_periods"] == 8
        assert found[0].entity == "n1/spin[10]"


# (extra hours for "statpkg", looping hours, expected a cpu_loop)
EXCEPTION_CASES = [
    (0, 8, True),
    (8, 15, False),  # 8 + 8 = 16 needed
    (8, 16, True),  # the paper's 16 of 24
    (16, 23, False),  # 24 needed: only a process looping all day triggers
    (16, 24, True),
    (17, 24, False),  # more than 24 - 8: never triggers
]


@pytest.mark.parametrize(("extra", "hours", "expected"), EXCEPTION_CASES)
def test_exception_adds_hours(extra: int, hours: int, expected: bool) -> None:
    rules = ProcessRules(exceptions=(ExceptionRule(process="stat*", extra_hours=extra),))
    data = frame({("statpkg", 10): _loop_hours(hours)})
    assert bool(detect(data, rules, "cpu_loop")) is expected


def test_exception_is_per_os() -> None:
    rules = ProcessRules(
        exceptions=(ExceptionRule(process="sqlservr", os=("windowsnt",), extra_hours=12),)
    )
    hours = _loop_hours(10, 0.92)
    assert not detect(frame({("sqlservr", 1): hours}, os="Windows NT"), rules, "cpu_loop")
    assert detect(frame({("sqlservr", 1): hours}, os="Windows 2000"), rules, "cpu_loop")


def test_never_alert_lists() -> None:
    data = frame({("render", 3): _loop_hours(24)}, users={"render": "farm"})
    assert detect(data, RULES, "cpu_loop")
    for never in (
        NeverAlert(processes=("rend*",)),
        NeverAlert(users=("farm",)),
        NeverAlert(nodes=("n1",)),
    ):
        assert not detect(data, ProcessRules(never_alert=never), "cpu_loop")


def test_saturated_hours_do_not_count() -> None:
    # 10 looping hours; the machine (4 CPUs, saturation .9) is full in 3 of them: 7 remain
    machine = [3.8] * 3 + [1.5] * 7 + [0.2] * 14
    data = frame({("spin", 10): _loop_hours(10)}, machine=machine)
    assert not detect(data, RULES, "cpu_loop")
    machine = [3.8] * 2 + [1.5] * 8 + [0.2] * 14
    data = frame({("spin", 10): _loop_hours(10)}, machine=machine)
    assert detect(data, RULES, "cpu_loop")


def test_each_day_is_judged_on_its_own_and_days_merge() -> None:
    # 6 looping hours at the end of day 1 and 6 at the start of day 2: 12 in a row, 6 per day
    split = [0.01] * 18 + [1.0] * 12 + [0.01] * 18
    assert not detect(frame({("spin", 10): split}), RULES, "cpu_loop")
    both = [1.0] * 48
    found = detect(frame({("spin", 10): both}), RULES, "cpu_loop")
    assert len(found) == 1
    assert found[0].evidence_dict()["windows"] == 2
    assert (found[0].end - found[0].start).total_seconds() == 48 * 3600


def test_missing_ncpu_is_a_clear_error() -> None:
    data = frame({("spin", 10): _loop_hours(8)}).drop(columns=["ncpu"])
    with pytest.raises(DataError, match="ncpu"):
        detect(data, RULES, "cpu_loop")


def test_cpu_is_cpu_seconds_over_the_hour() -> None:
    # sampled every 10 minutes; the process runs at one CPU in 5 of 6 samples: 0.83 an hour
    values = ([1.0] * 5 + [np.nan]) * 24
    other = [0.01] * 144
    data = frame({("spin", 10): values, ("cron", 2): other}, step="10min")
    assert not detect(data, RULES, "cpu_loop")
    values = [1.0] * 144
    assert detect(frame({("spin", 10): values, ("cron", 2): other}, step="10min"), RULES)


# -- constrained loops ------------------------------------------------------------------------


def _constrained(
    hours: int, *, work: bool, rng: np.random.Generator
) -> dict[tuple[str, int], Sequence[float]]:
    """Three loops on a 2-CPU machine, saturated for ``hours`` of 24."""
    idle = 24 - hours
    demand = 0.6 + 0.5 * np.sin(np.linspace(0, np.pi, hours)) if work else np.zeros(hours)
    share = (2.0 - demand) / 3
    procs: dict[tuple[str, int], Sequence[float]] = {}
    # orthogonal wiggles (Walsh patterns): each loop within 1 sigma of its mean, uncorrelated
    walsh = [np.resize(np.repeat([1.0, -1.0], width), hours) for width in (1, 2, 4)]
    for k, pid in enumerate((21, 22, 23)):
        noise = 0.01 * walsh[k] + rng.normal(0, 1e-4, hours)
        procs[(("spin", "perl", "ksh")[k], pid)] = [*list(share + noise), *[0.01] * idle]
    if work:
        procs[("httpd", 5)] = [*list(demand), *[0.05] * idle]
    return procs


# (saturated hours, real variable work present, expected number of constrained loops)
CONSTRAINED_CASES = [
    (8, True, 3),  # correlation test, exactly 8 shared hours
    (7, True, 0),
    (8, False, 3),  # dormant: means within 2 sigma
    (7, False, 0),
    (24, False, 3),
]


@pytest.mark.parametrize(("hours", "work", "expected"), CONSTRAINED_CASES)
def test_constrained_loop_edges(hours: int, work: bool, expected: int) -> None:
    rng = np.random.default_rng(hours)
    procs = _constrained(hours, work=work, rng=rng)
    machine = [2.0] * hours + [0.2] * (24 - hours)
    found = detect(frame(procs, ncpu=2, machine=machine), RULES, "constrained_loop")
    assert len(found) == expected
    for finding in found:
        assert finding.kind is Kind.CONSTRAINED_LOOP
        assert finding.evidence_dict()["method"] == ("correlation" if work else "means")
    assert not any("httpd" in f.entity for f in found)


def test_constrained_needs_a_saturated_machine() -> None:
    procs = _constrained(24, work=False, rng=np.random.default_rng(1))
    assert not detect(frame(procs, ncpu=8, machine=[2.0] * 24), RULES, "constrained_loop")


def test_correlated_work_following_volume_is_not_a_loop() -> None:
    # two workers on a saturated machine both follow business volume: work, not loops
    volume = 100 + 900 * np.sin(np.linspace(0, np.pi, 24))
    a = 0.3 + 0.6 * volume / 1000
    procs = {("httpd", 1): list(a), ("java", 2): list(a * 0.9 + 0.02)}
    data = frame(procs, ncpu=2, machine=[2.0] * 24, volume=list(volume))
    assert not detect(data, RULES, "constrained_loop")
    assert detect(data.drop(columns=["volume"]), RULES, "constrained_loop")  # the paper's rule


def test_constrained_exception_hours() -> None:
    procs = _constrained(12, work=False, rng=np.random.default_rng(2))
    machine = [2.0] * 12 + [0.2] * 12
    rules = ProcessRules(exceptions=(ExceptionRule(process="ksh", extra_hours=8),))
    found = detect(frame(procs, ncpu=2, machine=machine), rules, "constrained_loop")
    assert sorted(f.entity for f in found) == ["n1/perl[22]", "n1/spin[21]"]


# -- hums -------------------------------------------------------------------------------------

# (level, relative wobble, humming hours, expected)
HUM_CASES = [
    (0.3, 0.05, 24, True),
    (0.3, 0.05, 20, True),  # exactly the 20 hours asked for
    (0.3, 0.05, 19, False),
    (0.09, 0.05, 24, False),  # below 10% of a CPU
    (0.3, 0.5, 24, False),  # not steady
    (1.0, 0.01, 24, False),  # a loop, not a hum
]


@pytest.mark.parametrize(("level", "wobble", "hours", "expected"), HUM_CASES)
def test_hum_edges(level: float, wobble: float, hours: int, expected: bool) -> None:
    rng = np.random.default_rng(5)
    values = level * (1 + wobble * rng.choice([-1.0, 1.0], 24))
    values[hours:] = 0.01
    assert bool(detect(frame({("pollerd", 9): list(values)}), RULES, "hum")) is expected


def test_hum_following_volume_is_work() -> None:
    volume = 500 + 400 * np.sin(np.linspace(0, 2 * np.pi, 24))
    cpu = 0.3 * (1 + 0.2 * (volume - 500) / 400)
    data = frame({("pollerd", 9): list(cpu)}, volume=list(volume))
    assert not detect(data, ProcessRules(hum={"max_cv": 0.5}), "hum")
    assert detect(data.drop(columns=["volume"]), ProcessRules(hum={"max_cv": 0.5}), "hum")
