"""The contract every registered detector must pass (STYLE.md "Tests").

A new detector family adds a sample frame for its contract to ``SAMPLES`` and is then held to
the same rules as every other: empty input, NaNs, ordered times, determinism, TOML round-trip.
"""

from __future__ import annotations

import contextlib
import functools
import tomllib
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import tomli_w
from threadpoolctl import threadpool_limits

from perfsleuth.analysis import Analysis, Detector, Summary, params_of
from perfsleuth.demo import demo_frames
from perfsleuth.errors import ConfigError, DataError, NotEnoughDataError
from perfsleuth.families import create, family, from_options, names
from perfsleuth.findings import Finding
from tests.test_blas import blas_threads


def _metric_sample() -> pd.DataFrame:
    return demo_frames(seed=7)["metric"]


def _workload_sample() -> pd.DataFrame:
    return demo_frames(seed=7)["workload"]


@functools.cache
def _process_fleet() -> pd.DataFrame:
    from perfsleuth.datasets.fleet import SCENARIOS, simulate_fleet
    from perfsleuth.frames import normalise

    run = simulate_fleet(len(SCENARIOS), interval="15m", seed=3)
    return normalise(run.frame, "process", source="fleet")


def _process_sample() -> pd.DataFrame:
    return _process_fleet().copy()


def _counter_sample() -> pd.DataFrame:
    from perfsleuth.datasets.counters import simulate_scenario

    return simulate_scenario("rand_read", seed=7, samples=12).frame


SAMPLES: dict[str, Callable[[], pd.DataFrame]] = {
    "metric": _metric_sample,
    "workload": _workload_sample,
    "process": _process_sample,
    "counter": _counter_sample,
}

DETECTORS = names()


def _sample(detector: Detector) -> pd.DataFrame:
    if detector.contract not in SAMPLES:
        pytest.fail(f"no sample frame for contract {detector.contract!r}: add one to SAMPLES")
    return SAMPLES[detector.contract]()


def test_every_detector_is_registered_lazily() -> None:
    assert DETECTORS, "no detector is registered"
    for name in DETECTORS:
        cls = family(name).detector_class()
        assert cls.name == name
        assert cls.contract == family(name).contract


@pytest.mark.parametrize("name", DETECTORS)
def test_analyse_holds_the_findings_and_summarises_them(name: str) -> None:
    detector = create(name)
    frame = _sample(detector)
    analysis = detector.analyse(frame)
    assert isinstance(analysis, Analysis)
    assert list(analysis.findings) == detector.detect(frame)
    summary = analysis.summary()
    assert isinstance(summary, Summary) and summary.text.strip() and summary.html.strip()
    section = family(name).render(analysis)
    assert section.family == name


@pytest.mark.parametrize("name", DETECTORS)
def test_empty_frame_gives_no_findings_or_not_enough_data(name: str) -> None:
    detector = create(name)
    empty = _sample(detector).iloc[0:0]
    with contextlib.suppress(NotEnoughDataError):
        assert detector.detect(empty) == []


@pytest.mark.parametrize("name", DETECTORS)
def test_findings_are_well_formed_and_deterministic(name: str) -> None:
    detector = create(name)
    frame = _sample(detector)
    first = detector.detect(frame)
    assert first, f"{name} found nothing in its sample frame, which has known problems"
    assert detector.detect(frame.copy()) == first
    for finding in first:
        assert isinstance(finding, Finding)
        assert finding.start <= finding.end
        assert finding.detector in family(name).checks
        assert finding.explanation.strip()


@pytest.mark.parametrize("name", DETECTORS)
def test_nans_are_rejected_clearly_or_skipped(name: str) -> None:
    detector = create(name)
    frame = _sample(detector).copy()
    numeric = frame.select_dtypes("number").columns
    frame.loc[frame.index[::7], numeric[-1]] = np.nan
    try:
        findings = detector.detect(frame)
    except DataError:
        return
    for finding in findings:
        for evidence in finding.evidence:
            assert not (isinstance(evidence.value, float) and np.isnan(evidence.value)), finding


@pytest.mark.parametrize("name", DETECTORS)
def test_parameters_round_trip_through_toml(name: str) -> None:
    detector = create(name)
    text = tomli_w.dumps({"detectors": {name: params_of(detector)}})
    again = create(name, tomllib.loads(text)["detectors"][name])
    assert again == detector


@pytest.mark.parametrize("name", DETECTORS)
def test_unknown_parameters_are_errors(name: str) -> None:
    with pytest.raises(ConfigError, match="no_such_parameter"):
        create(name, {"no_such_parameter": 1})


def test_a_command_option_error_names_the_flag_as_typed() -> None:
    """A command's bad option is named as the user typed it, not as the config spells it."""
    with pytest.raises(ConfigError, match=r"^options: --min-size: .*greater than or equal to 1$"):
        from_options("changepoints", {"min_size": 0})
    with pytest.raises(ConfigError, match=r"^options: --min-change: "):
        from_options(
            "changepoints",
            {"min_relative_change": -1.0},
            flags={"min_relative_change": "--min-change"},
        )
    with pytest.raises(ConfigError, match=r"^options: --allowed-error: "):
        from_options("segments", {"allowed_error": -2.0})


@pytest.mark.parametrize("name", DETECTORS)
def test_analyse_runs_with_one_blas_thread(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a busy host more BLAS threads only spin (perfsleuth.blas): every family's analysis
    runs with one, and the caller's threads are back afterwards."""
    seen: list[int] = []
    checked = Finding.__post_init__

    def spy(self: Finding) -> None:  # findings are made inside the analysis
        seen.append(blas_threads())
        checked(self)

    monkeypatch.setattr(Finding, "__post_init__", spy)
    detector = create(name)
    with threadpool_limits(limits=2, user_api="blas"):
        detector.analyse(_sample(detector))
        after = blas_threads()
    assert seen, f"{name} found nothing in its sample frame, which has known problems"
    assert set(seen) == {1}
    assert after == 2
