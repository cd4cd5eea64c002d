"""The process checks on the recorded corpus (tests/data/processes/, see its README).

Each recording is ``perfsleuth``'s own collector on this 2-core machine under a co-tenant load
while a scenario played; its JSON says which processes must be found as what and which must
stay quiet. Scanned with the paper's rules scaled to minutes (10 s periods, 30 min windows),
every planted pathology is found and nothing is said about the legitimate on/off job, the
measurement tools or the churn — in the half tuned on (``t*``) and in the held-out half
(``h*``) alike. ``benchmarks/process_accuracy.py`` prints the same as a table.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perfsleuth.findings import Finding, Kind
from perfsleuth.frames import normalise
from perfsleuth.processes.detector import ProcessDetector
from perfsleuth.processes.rules import ExceptionRule, ProcessRules

CORPUS = Path(__file__).parents[1] / "data" / "processes"
RECORDINGS = sorted(p.stem for p in CORPUS.glob("*.parquet"))
SCALED = ProcessRules.model_validate({"settings": {"period": "10s", "window": "30m"}})


@cache
def recording(name: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    frame = pd.read_parquet(CORPUS / f"{name}.parquet")
    truth = json.loads((CORPUS / f"{name}.json").read_text())
    return normalise(frame, "process", source=f"{name}.parquet"), truth


def about(finding: Finding, truth: dict[str, Any]) -> str | None:
    """The scenario role, tool or churn a finding is about (None: something else)."""
    evidence = finding.evidence_dict()
    pid = evidence.get("pid")
    for role, pids in truth["pids"].items():
        if pid in pids:
            return str(role)
    name = str(evidence.get("process", ""))
    return name if name in truth["quiet"] else None


def test_the_corpus_has_both_halves_and_every_pathology() -> None:
    assert {n[0] for n in RECORDINGS} == {"t", "h"}
    kinds = {k for n in RECORDINGS for ks in recording(n)[1]["find"].values() for k in ks}
    assert {"cpu_loop", "constrained_loop", "hum", "memory_ramp", "saw_tooth"} <= kinds
    planted = {r["mode"] for n in RECORDINGS for r in recording(n)[1]["roles"]}
    assert planted == {"loop", "hum", "leak", "sawmem", "sawfile", "onoff", "churn"}


@pytest.mark.parametrize("name", RECORDINGS)
def test_found_and_quiet(name: str) -> None:
    frame, truth = recording(name)
    findings = ProcessDetector(rules=SCALED).detect(frame)
    found = {(about(f, truth), f.kind.value) for f in findings}
    for role, kinds in truth["find"].items():
        assert any((role, kind) in found for kind in kinds), (role, sorted(map(str, found)))
    quiet = set(truth["quiet"]) | set(truth["tools"])
    noisy = [f.entity for f in findings if about(f, truth) in quiet]
    assert not noisy


@pytest.mark.parametrize("name", RECORDINGS)
def test_without_the_wait_the_blind_spot_is_said(name: str) -> None:
    frame, truth = recording(name)
    analysis = ProcessDetector(rules=SCALED).analyse(frame.drop(columns=["cpu_wait"]))
    (node,) = analysis.nodes
    hum = next(c for c in node.coverage if c.check == "hum")
    if node.saturated_share == 1.0:  # this machine was saturated in every period
        assert hum.available == 0 and "no run-queue wait" in hum.why
        assert "hum needs 20 periods judged" in analysis.coverage_lines()[0]
    quiet = set(truth["quiet"]) | set(truth["tools"])
    assert not [f.entity for f in analysis.findings if about(f, truth) in quiet]


def test_the_default_hour_says_why_it_finds_nothing() -> None:
    frame, _ = recording(RECORDINGS[0])
    analysis = ProcessDetector().analyse(frame)
    assert not [f for f in analysis.findings if f.kind is not Kind.CAPTURE_RATIO]
    (line,) = analysis.coverage_lines()
    assert "less than one period (1h)" in line and "set [settings] period" in line


def test_what_grows_is_named_with_its_series_and_its_period() -> None:
    # a leak is a ramp of the memory, a log truncated in turn a saw-tooth of the file, a cache
    # cleared in turn one of the memory; a tooth is as long as the scenario made it (to within
    # one 10 s period: a reset falls anywhere inside a period)
    metrics = {"leaker": "rss_bytes", "logwriter": "file_bytes", "cachesrv": "rss_bytes"}
    checked = 0
    for name in RECORDINGS:
        frame, truth = recording(name)
        saws = [r for r in truth["roles"] if r["mode"] in ("sawmem", "sawfile")]
        every = {r["name"]: float(r["args"][-1]) for r in saws}
        for f in ProcessDetector(rules=SCALED).detect(frame):
            role = about(f, truth)
            if role not in metrics or f.kind.value not in truth["find"][role]:
                continue
            assert f.metric == metrics[role], (name, role, f.metric)
            if f.kind is Kind.SAW_TOOTH:
                period = float(f.evidence_dict()["period"])
                assert abs(period - every[role]) <= 10.0, (name, role, period, every[role])
            checked += 1
    assert checked >= 12  # every leak, log and cache of the corpus


@pytest.mark.parametrize("name", [n for n in RECORDINGS if n[1] in "12"])
def test_a_legitimate_loop_on_the_exception_list_is_not_reported(name: str) -> None:
    # the exception list asks more looping periods of a named process than a window holds
    frame, truth = recording(name)
    loops = {"cpu_loop", "constrained_loop"}

    def looped(rules: ProcessRules) -> bool:
        found = ProcessDetector(rules=rules).detect(frame)
        return any(about(f, truth) == "spinloop" and f.kind.value in loops for f in found)

    excepted = SCALED.model_copy(
        update={"exceptions": (ExceptionRule(process="spinloop", extra_hours=180),)}
    )
    assert looped(SCALED) and not looped(excepted)
