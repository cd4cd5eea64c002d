"""``perfsleuth demo``: every family on seeded data, one report with a block per family."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from perfsleuth.demo import demo_data, run_demo
from perfsleuth.findings import Kind
from perfsleuth.frames import coverage_of
from perfsleuth.pipeline import RunResult
from perfsleuth.report.common import FAMILIES, family_of
from perfsleuth.store import Store
from tests.support.chromium import body_tag, browse
from tests.test_report import figures

FAMILY_KEYS = list(FAMILIES)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    folder = tmp_path_factory.mktemp("demo")
    return run_demo(folder / "out", folder / "s.duckdb")


def test_every_family_finds_what_was_planted(demo: RunResult) -> None:
    by_family: dict[str, set[tuple[Kind, str]]] = {k: set() for k in FAMILY_KEYS}
    for f in demo.findings:
        if f.entity not in ("shop", "app-1"):  # the incident estate: its own test below
            by_family[family_of(f)].add((f.kind, f.entity.split("/")[0]))
    assert {e for _, e in by_family["changepoints"]} == {"checkout", "search"}  # not inventory
    # checkout's load rises from ρ = .5 to .8: the ordinary tail of the busier (noisier) queue
    # is no spike (judged on one scale for the whole series it gave 4 spike findings)
    assert (Kind.SPIKE, "checkout") not in by_family["changepoints"]
    assert {k for k, _ in by_family["workload"]} == {Kind.WORKLOAD_ANOMALY}
    assert {e for _, e in by_family["workload"]} == {"webshop"}
    assert {k for k, _ in by_family["segments"]} == {
        Kind.WORKLOAD_ANOMALY,
        Kind.WORKLOAD_CHANGE,
        Kind.APPLICATION_CHANGE,
    }
    assert {k for k, _ in by_family["processes"]} == {
        Kind.CPU_LOOP,
        Kind.CONSTRAINED_LOOP,
        Kind.HUM,
        Kind.MEMORY_RAMP,
        Kind.SAW_TOOTH,
        Kind.CAP_EXCEEDED,
        Kind.CAPTURE_RATIO,
    }
    bottlenecks = {
        f.entity: str(f.evidence_dict().get("bottleneck", ""))
        for f in demo.findings
        if f.kind is Kind.BOTTLENECK and f.entity != "app-1"
    }
    assert set(bottlenecks) == {"db-1", "web-1", "cache-1"}
    upgraded = {f.entity for f in demo.findings if f.kind is Kind.UPGRADE}
    assert upgraded - {"app-1"} == set(bottlenecks)


def test_demo_report_has_a_block_and_a_section_per_family(demo: RunResult) -> None:
    assert tuple(dict.fromkeys(step.family for step in demo.steps)) == tuple(FAMILY_KEYS)
    assert demo.report is not None
    page = demo.report.read_text(encoding="utf-8")
    blocks = re.findall(r'<section class="family-block" id="family-(\w+)">', page)
    assert blocks == FAMILY_KEYS
    parts = page.split('<section class="family-block"')[1:]
    for key, part in zip(FAMILY_KEYS, parts, strict=True):
        assert '<section class="family" id="section-' in part, f"{key} has no section"
        assert 'class="plot plot-section"' in part, f"{key} section has no plot"
        assert '<article class="finding' in part, f"{key} has no findings"
    fig = figures(page)["timeline-figure"]
    rows = {y for t in fig["data"] if t["mode"] == "markers" for y in t["y"]}
    assert len(rows) == len(FAMILY_KEYS)
    assert 'id="coverage"' in page
    coverage = page.split('id="coverage"', 1)[1]
    covered = [c for f in demo.loaded.frames.values() if (c := coverage_of(f)) is not None]
    for c in covered:
        assert c.source in coverage
    assert {c.contract for c in covered} == {"metric", "workload", "process", "counter"}


def test_the_shop_release_is_one_incident_with_the_whole_chain(demo: RunResult) -> None:
    shop = {"shop", "app-1"}
    mine = [i for i in demo.incidents if shop & set(i.entities)]
    assert len(mine) == 1, [i.story for i in mine]
    incident = mine[0]
    assert {f.entity for f in incident.findings} == shop  # nothing unrelated inside
    links = {link.step: link for link in incident.chain}
    assert not links["when"].missing and "Shop/latency" in links["when"].text
    released = datetime(2024, 5, 4, 9, 0, tzinfo=UTC)
    assert abs(links["when"].findings[0].start - released) <= timedelta(minutes=2)
    (release,) = [f for f in links["application"].findings if f.kind is Kind.APPLICATION_CHANGE]
    assert "checkout" in release.explanation and release.start == released
    assert not links["resource"].missing and "CPU is the bottleneck" in links["resource"].text
    assert links["process"].text == "no process data for app-1"
    assert "No process data for app-1." in incident.story
    others = [f for i in demo.incidents if i is not incident for f in i.findings]
    assert not shop & {f.entity for f in others}
    assert len(others) + len(incident.findings) == len(demo.findings)


def test_demo_report_opens_with_the_incidents(demo: RunResult) -> None:
    assert demo.report is not None and demo.jsonl is not None
    page = demo.report.read_text(encoding="utf-8")
    assert page.index('id="incidents"') < page.index('id="summary"') < page.index('id="findings"')
    # a section per incident of several findings, one note for those of one finding
    told = [i for i in demo.incidents if not i.alone]
    alone = len(demo.incidents) - len(told)
    assert told and alone
    assert page.count('<section class="family" id="incident-') == len(told) + 1
    assert f"{alone} findings on their own" in page
    written = json.loads(demo.jsonl.with_name("incidents.json").read_text(encoding="utf-8"))
    assert [i["id"] for i in written] == [i.id for i in demo.incidents]
    ids = {f.id for f in demo.findings}
    assert sorted(x for i in written for x in i["findings"]) == sorted(ids)


def test_demo_stores_everything(demo: RunResult) -> None:
    assert demo.report is not None
    with Store(demo.report.parent.parent / "s.duckdb", read_only=True) as store:
        assert len(store.findings()) == len(demo.findings)
        stored = store.incidents(run_id=demo.run_id)
        assert [i["id"] for i in stored] == [i.id for i in demo.incidents]
        assert stored[0]["story"] == demo.incidents[0].story
        assert {x for i in stored for x in i["findings"]} == {f.id for f in demo.findings}
        assert len(store.read_frame("process")) > 0
        assert len(store.read_frame("counter")) > 0
        for source in ("webshop", "bookstore"):
            assert len(store.read_frame("workload", source=source)) > 0


def test_families_share_one_calendar() -> None:
    data = demo_data(7)
    frames = (data.metric, data.webshop, data.bookstore, data.processes, data.counters, data.shop)
    starts = [f["time"].min() for f in frames]
    ends = [f["time"].max() for f in frames]
    assert min(starts).date().isoformat() == "2024-05-01"
    assert max(ends).date().isoformat() <= "2024-05-04"


@pytest.mark.integration
def test_demo_report_renders_in_chromium_without_console_errors(
    demo: RunResult, tmp_path: Path
) -> None:
    assert demo.report is not None
    dom, console = browse(demo.report, tmp_path)
    body = body_tag(dom)
    expected = re.search(r'data-plots-expected="(\d+)"', body)
    assert expected and int(expected.group(1)) >= 40
    assert f'data-plots="{expected.group(1)}"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    timeline = dom.split('id="timeline"', 1)[1].split("</section>", 1)[0]
    assert 'class="main-svg"' in timeline
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)


def test_demo_command_counts_findings_per_family(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_cli import run

    code, out, err = run(
        capsys, "demo", "--out", str(tmp_path / "out"), "--store", str(tmp_path / "s.duckdb")
    )
    assert code == 0, err
    for title in FAMILIES.values():
        assert re.search(rf"^{re.escape(title)}: [1-9]\d* finding\(s\)$", err, re.M), title
    assert "finding(s) in the demo data" in out
