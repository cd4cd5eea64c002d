"""End to end: ``perfsleuth analyze`` on a real Prometheus (itself, node-exporter and
process-exporter on 127.0.0.1) plus a file; the report is checked in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from perfsleuth.cli import main
from perfsleuth.store import Store
from tests.run.conftest import DataFiles
from tests.support.chromium import body_tag, browse
from tests.support.processes import die_with_parent
from tests.support.prometheus import PrometheusStack, missing_prometheus, prometheus_stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

if reason := missing_prometheus():
    pytest.skip(reason, allow_module_level=True)

CONFIG = """
[store]
path = "store.duckdb"

[output]
dir = "out"

[[sources]]
path = "{latency}"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "metric"
queries = {{ "scrape_duration.{{job}}" = "scrape_duration_seconds", "up.{{job}}" = "up" }}
unit = "s"
step = "1s"
range = "2m"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "counter"
preset = "node"
step = "1s"
range = "2m"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "process"
step = "1s"
range = "2m"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "workload"
metric = "prometheus_http_request_duration_seconds"
step = "2s"
range = "2m"

[analyze]
title = "perfsleuth on a real Prometheus"
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusStack]:
    with prometheus_stack(tmp_path_factory.mktemp("prom")) as running:
        running.wait_for('up{job="node"}', samples=12)
        for _ in range(20):  # requests for the HTTP histogram (the transaction mix)
            with urllib.request.urlopen(f"{running.url}/api/v1/query?query=up", timeout=10):
                pass
        running.wait_for('up{job="process"}', samples=15)
        yield running


def test_analyze_real_prometheus_and_a_file(
    stack: PrometheusStack,
    data_files: DataFiles,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "perfsleuth.toml"
    config.write_text(CONFIG.format(latency=data_files.metric, url=stack.url), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["--format", "json", "analyze", str(config)])
    out, err = capsys.readouterr()
    assert exit_.value.code == 0, err

    # every source gave rows
    read = dict(re.findall(r"read: (.+?): ([\d,]+) row\(s\)", err))
    assert len(read) == 5, err
    assert all(int(rows.replace(",", "")) > 0 for rows in read.values()), read

    assert "processes skipped" not in err and "bottleneck skipped" not in err, err
    findings = json.loads(out)["findings"]
    assert {"change_point"} <= {f["kind"] for f in findings}  # from the file
    with Store(tmp_path / "store.duckdb", read_only=True) as db:
        counters = db.read_frame("counter")
        assert stack.node_instance in set(counters["entity"])
        assert {"cpu.user", "mem.MemTotal"} <= set(counters["counter"])
        metrics = db.read_frame("metric")
        assert {"scrape_duration.node", "up.prometheus"} <= set(metrics["metric"])
        processes = db.read_frame("process")
        assert "prometheus" in set(processes["name"])
        nodes = db.read_frame("node")  # ncpu joined from node-exporter on the same host
        assert stack.process_instance in set(nodes["node"]) and (nodes["ncpu"] >= 1).all()
        assert len(db.findings()) == len(findings)

    page = tmp_path / "out" / "report.html"
    text = page.read_text(encoding="utf-8")
    assert "This run: sources and families" in text and stack.url in text

    dom, console = browse(page, tmp_path)
    body = body_tag(dom)
    expected = re.search(r'data-plots-expected="(\d+)"', body)
    assert expected and int(expected.group(1)) > 0, body
    assert f'data-plots="{expected.group(1)}"' in body, f"not every figure was drawn: {body}"
    assert "data-errors" not in body and 'id="ps-error"' not in dom
    errors = [line for line in console if re.search(r"uncaught|error", line, re.IGNORECASE)]
    assert not errors, "\n".join(errors)


WATCH = """
[store]
path = "watch.duckdb"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "metric"
queries = {{ "scrape_duration.{{job}}" = "scrape_duration_seconds" }}
unit = "s"
step = "1s"
range = "1m"
retries = 0
timeout = "2s"

[[sources]]
kind = "prometheus"
url = "{url}"
contract = "counter"
preset = "node"
step = "1s"
range = "1m"
retries = 0
timeout = "2s"

[analyze]
families = ["changepoints", "bottleneck"]

[watch]
every = "1s"
backoff_max = "4s"
"""


def _pid_of(marker: str) -> int:
    """Our Prometheus: the process whose command line names its (private) TSDB folder."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if (
                cmdline
                and cmdline[0].endswith(b"prometheus")
                and marker.encode() in b" ".join(cmdline)
            ):
                return int(entry.name)
    raise LookupError(f"no prometheus process for {marker}")


def _ready(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"{url} not ready after {timeout:g} s")


def test_watch_survives_a_prometheus_restart(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Prometheus stops (the source goes away) and starts again on the same port and TSDB."""
    from perfsleuth.config import load_config
    from perfsleuth.watch import Watcher

    root = tmp_path_factory.mktemp("prom-watch")
    restarted: subprocess.Popen[bytes] | None = None
    with prometheus_stack(root) as stack:
        stack.wait_for('up{job="node"}', samples=10)
        (tmp_path / "perfsleuth.toml").write_text(WATCH.format(url=stack.url), encoding="utf-8")
        config = load_config(tmp_path / "perfsleuth.toml")
        pid = _pid_of(str(root / "tsdb"))
        command = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        messages: list[str] = []
        waits: list[float] = []

        def sleep(seconds: float) -> bool:
            nonlocal restarted
            waits.append(seconds)
            if len(waits) == 1:  # Prometheus goes away
                os.kill(pid, signal.SIGTERM)
                deadline = time.monotonic() + 30
                while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                    if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                        break  # exited; its parent (the stack) reaps it
                    time.sleep(0.1)
            elif len(waits) == 3:  # and comes back: same port, same TSDB
                with (root / "prometheus-restarted.log").open("wb") as log:
                    restarted = subprocess.Popen(
                        [part.decode() for part in command],
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        cwd=root,
                        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
                    )
                _ready(stack.url)
            return False

        try:
            with Watcher(config, base=tmp_path, sleep=sleep, on_status=messages.append) as first:
                first.run(checks=4)
                raised = {e.alert_id for e in first.events if e.state == "raised"}
            # a restart of watch itself: what was raised is not raised again
            with Watcher(config, base=tmp_path) as again:
                assert again.check().ok
                assert not raised & {e.alert_id for e in again.events if e.state == "raised"}
                stored = again.alerts()
        finally:
            if restarted is not None:
                restarted.terminate()
                try:
                    restarted.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    restarted.kill()
                    restarted.wait(timeout=10)

    assert [round(w) for w in waits[1:3]] == [1, 2], waits  # every, then doubled
    assert "source unavailable (attempt 1 failed)" in messages[0]
    assert "Connection refused" in messages[0] and "retrying in 1 s" in messages[0]
    assert "(attempt 2 failed)" in messages[1] and "retrying in 2 s" in messages[1]
    assert "sources answer again after 2 failed attempt(s)" in messages[2]
    assert all(stored[key][0] in ("open", "cleared", "expired") for key in raised)
    with Store(tmp_path / "watch.duckdb", read_only=True) as db:
        runs = db.runs()
        assert len(runs) == 3 and set(runs["status"]) == {"ok"}  # failed checks store nothing
