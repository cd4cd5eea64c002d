"""The recorded real corpus (``tests/data/bottleneck/``): real counters of workloads run in
cgroups beside co-tenants on a shared 2-core machine, judged with the built-in model's defaults.

Deterministic: the recordings are committed and the inference is seeded, so what is asserted
here does not depend on the machine running the tests. The thresholds are the measured results
(``benchmarks/bottleneck_accuracy.py``, recorded in ``docs/bottleneck.md``) less a small margin;
repetitions 3–4 are held out from tuning and must do as well as the tuned half.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.bottleneck.detector import BottleneckDetector

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from bottleneck_accuracy import (
    CONTROLLED,
    CORPORA,
    CORPUS,
    INPUTS,
    SCHEDSTAT,
    STATES,
    brier,
    judge,
    load_corpus,
)

pytestmark = pytest.mark.slow

DIRECT = ("seq-read", "seq-write", "rand-read", "rand-write", "reads-with-cpu")
"""Scenarios of direct (O_DIRECT) I/O."""


@pytest.fixture(scope="module")
def judged() -> pd.DataFrame:
    frame, labels = load_corpus(CORPUS)
    return judge(frame, labels)


@pytest.fixture(scope="module")
def controlled() -> pd.DataFrame:
    frame, labels = load_corpus(CONTROLLED)
    return judge(frame, labels)


def test_the_corpus_is_what_its_readme_says() -> None:
    frame, labels = load_corpus(CORPUS)
    assert len(labels) == 60 and labels["entity"].is_unique
    assert set(frame["entity"]) == set(labels["entity"])
    assert labels.groupby("half").size().to_dict() == {"held-out": 30, "tune": 30}
    # 1 Hz for 24 s: at least 20 samples of each recording
    samples = frame[frame["counter"] == "collector.interval_s"].groupby("entity").size()
    assert samples.min() >= 20


@pytest.mark.parametrize("half", ["tune", "held-out"])
def test_each_half_names_the_measured_bottleneck(judged: pd.DataFrame, half: str) -> None:
    mine = judged[judged["half"] == half]
    right = mine["headline"] == mine["measured"]
    assert int(right.sum()) >= 28, mine[~right].to_string()
    # what the model cannot mistake: idle, memory thrash, CPU-bound and starved workloads
    plain = mine[mine["built"].isin(["none", "memory", "cpu"])]
    assert (plain["headline"] == plain["built"]).all(), plain.to_string()
    # one window per recording: windows follow the data, not the wall clock's minutes
    assert (mine["windows"] == 1).all()


@pytest.mark.parametrize("half", ["tune", "held-out"])
def test_probabilities_are_honest(judged: pd.DataFrame, half: str) -> None:
    mine = judged[judged["half"] == half].assign(expected=lambda t: t["measured"])
    score, baseline = brier(mine)
    assert score < 0.1 < baseline
    p = mine[[f"p.{s}" for s in STATES]].to_numpy()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-9)
    # the headline is the most probable state
    assert (mine["headline"].to_numpy() == np.array(STATES)[p.argmax(axis=1)]).all()


def test_the_inference_is_deterministic() -> None:
    frame, _ = load_corpus(CORPUS)
    one = frame[frame["entity"] == "memcg-thrash#3"]
    first = BottleneckDetector().analyse(one).entities[0].overall
    again = BottleneckDetector().analyse(one).entities[0].overall
    assert first.states == again.states
    np.testing.assert_array_equal(first.p_state, again.p_state)


def test_the_controlled_corpus_is_what_its_readme_says() -> None:
    frame, labels = load_corpus(CONTROLLED)
    assert len(labels) == 60 and labels["entity"].is_unique
    assert set(frame["entity"]) == set(labels["entity"])
    assert labels.groupby("half").size().to_dict() == {"held-out": 30, "tune": 30}
    assert set(labels["repetition"]) == {5, 6, 7, 8}
    # 1 Hz for 18 s: at least 15 samples of each recording
    samples = frame[frame["counter"] == "collector.interval_s"].groupby("entity").size()
    assert samples.min() >= 15


@pytest.mark.parametrize("half", ["tune", "held-out"])
def test_under_two_cpu_hogs_each_half_names_the_built_bottleneck(
    controlled: pd.DataFrame, half: str
) -> None:
    # the held-out conditions of issue 20: two CPU hogs beside the workload, nothing else
    mine = controlled[controlled["half"] == half]
    right = mine["headline"] == mine["built"]
    assert int(right.sum()) >= 28, mine[~right].to_string()
    # direct I/O is the disk's, whatever the hogs do to the CPU; idle, CPU-bound, starved and
    # memory thrash are never mistaken
    direct = mine[mine["built"].isin(["none", "memory", "cpu"]) | mine["scenario"].isin(DIRECT)]
    assert (direct["headline"] == direct["built"]).all(), direct.to_string()
    assert (mine["windows"] == 1).all()


@pytest.mark.parametrize("half", ["tune", "held-out"])
def test_under_two_cpu_hogs_confident_headlines_are_right(
    controlled: pd.DataFrame, half: str
) -> None:
    mine = controlled[controlled["half"] == half].assign(expected=lambda t: t["built"])
    p_head = np.array([row[f"p.{row['headline']}"] for _, row in mine.iterrows()])
    confident = mine[p_head >= 0.95]
    wrong = confident[confident["headline"] != confident["built"]]
    # every confident headline is right but the buffered writes', which the measurements
    # call CPU-bound (their threads runnable 60-65% of the time, the device busy 28-32%)
    assert (wrong["scenario"] == "buffered-write").all(), wrong.to_string()
    assert (wrong["headline"] == wrong["measured"]).all(), wrong.to_string()
    assert len(confident) - len(wrong) >= 0.5 * len(mine), confident.to_string()
    score, baseline = brier(mine)
    assert score < 0.2 < baseline


def test_under_two_cpu_hogs_the_cgroup_files_alone_suffice() -> None:
    # a frame with the cgroup's cpu.stat and PSI but not the collector's per-thread schedstat
    # counters: CPU-bound work must still be told from idle and from the disk
    frame, labels = load_corpus(CONTROLLED)
    table = judge(frame, labels, drop=SCHEDSTAT)
    for half in ("tune", "held-out"):
        mine = table[table["half"] == half]
        right = mine["headline"] == mine["built"]
        assert int(right.sum()) >= 27, mine[~right].to_string()
        plain = mine[mine["built"].isin(["none", "memory"]) | mine["scenario"].isin(DIRECT)]
        assert (plain["headline"] == plain["built"]).all(), plain.to_string()


SHARED = CORPORA["shared"]
JUDGED = ("none", "memory", "cpu")
"""Built labels no measurement contradicts here: idle, memory thrash, CPU-bound and starved
(direct I/O, by scenario, joins them); buffered writes are CPU-bound by measurement."""


def test_the_shared_corpus_is_what_its_readme_says() -> None:
    frame, labels = load_corpus(SHARED)
    assert labels["entity"].is_unique and set(frame["entity"]) == set(labels["entity"])
    assert set(labels["repetition"]) <= {10, 11, 12, 13}
    assert (labels.groupby("repetition").size() == 15).all()
    assert set(labels.loc[labels["repetition"].isin([10, 11]), "half"]) == {"tune"}
    assert set(labels.loc[labels["repetition"].isin([12, 13]), "half"]) <= {"held-out"}
    samples = frame[frame["counter"] == "collector.interval_s"].groupby("entity").size()
    assert samples.min() >= 20


@pytest.mark.parametrize("inputs", list(INPUTS))
@pytest.mark.parametrize("corpus", ["controlled", "shared"])
def test_beside_cpu_hogs_the_judged_kinds_need_no_per_thread_counter(
    corpus: str, inputs: str
) -> None:
    """Issue 20's held-out kinds (idle → none, direct I/O → disk, CPU-bound or starved →
    cpu, memory thrash → memory) with every counter the collector records, with the host's
    and the cgroup's own files only (no schedstat, no /proc/<pid>/io), and without the
    cgroup's CPU pressure either: in both halves of both corpora recorded beside CPU hogs."""
    frame, labels = load_corpus(CORPORA[corpus])
    table = judge(frame, labels, drop=INPUTS[inputs])
    for half in ("tune", "held-out"):
        mine = table[table["half"] == half]
        if not len(mine):
            continue
        plain = mine[mine["built"].isin(JUDGED) | mine["scenario"].isin(DIRECT)]
        assert (plain["headline"] == plain["built"]).all(), plain.to_string()
        assert (mine["windows"] == 1).all()
        right = mine["headline"] == mine["built"]
        # at most the buffered write of each repetition (CPU-bound by measurement) missed
        assert int(right.sum()) >= len(mine) - len(mine) // 15, mine[~right].to_string()
