"""The Prometheus source against a real Prometheus + node-exporter + process-exporter."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfsleuth.errors import SourceError
from perfsleuth.frames import normalise, workload_types
from perfsleuth.sources.prometheus import (
    Prometheus,
    counter_frame,
    metric_frame,
    process_frame,
    workload_frame,
)
from tests.support.processes import die_with_parent
from tests.support.prometheus import PrometheusStack, missing_prometheus, prometheus_stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

if reason := missing_prometheus():  # pragma: no cover - the CI machine has the Debian packages
    pytest.skip(reason, allow_module_level=True)

STEP = timedelta(seconds=1)
HISTOGRAM = "prometheus_http_request_duration_seconds"
# a process that uses ~0.3 of a CPU (by its own CPU clock, so a busy machine does not change
# it) and holds 64 MiB resident; its command name is the name of the symlink that runs it
BURNER = """
import time
block = bytearray(64 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
while True:
    wall, cpu = time.monotonic(), time.process_time()
    while time.process_time() - cpu < 0.03:
        pass
    time.sleep(max(0.0, 0.1 - (time.monotonic() - wall)))
"""


@pytest.fixture(scope="module")
def burner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("burner")
    name = "psburner"
    (folder / name).symlink_to(Path(sys.executable).resolve())
    process = subprocess.Popen(
        [str(folder / name), "-c", BURNER],
        preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
    )
    try:
        yield name
    finally:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, burner: str) -> Iterator[PrometheusStack]:
    with prometheus_stack(tmp_path_factory.mktemp("prom")) as running:
        running.wait_for(f'namedprocess_namegroup_num_procs{{groupname="{burner}"}}', samples=8)
        yield running


def _last(seconds: int) -> tuple[datetime, datetime]:
    end = datetime.now(UTC).replace(microsecond=0)
    return end - timedelta(seconds=seconds), end


def test_stack_stops_everything(tmp_path: Path) -> None:
    with prometheus_stack(tmp_path) as running:
        pids = [int(p) for p in subprocess.check_output(["pgrep", "-f", str(tmp_path)]).split()]
        assert len(pids) >= 2  # prometheus and process-exporter name the directory
        assert running.url.startswith("http://127.0.0.1:")
    time.sleep(0.2)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_node_exporter_counters(stack: PrometheusStack) -> None:
    start, end = _last(6)
    frame = counter_frame(Prometheus(stack.url), start, end, STEP)
    frame = normalise(frame, "counter")
    assert set(frame["entity"]) == {stack.node_instance}
    assert frame["time"].min() >= pd.Timestamp(start) and frame["time"].max() <= pd.Timestamp(end)
    counters = set(frame["counter"])
    assert {"cpu.idle", "cpu.user", "cpu.system", "mem.MemTotal", "disk.read_bytes"} <= counters
    # CPU seconds by mode add up to the number of CPUs (node-exporter counts every mode)
    cpu = frame[frame["counter"].str.startswith("cpu.")].groupby("time")["value"].sum()
    assert cpu.iloc[-3:].to_numpy() == pytest.approx(os.cpu_count(), rel=0.1)
    total = frame.loc[frame["counter"] == "mem.MemTotal", "value"].iloc[-1]
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        kib = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
    assert total == kib * 1024


def test_metric_frame_fills_names_from_labels(stack: PrometheusStack) -> None:
    start, end = _last(4)
    frame = metric_frame(
        Prometheus(stack.url),
        start,
        end,
        STEP,
        {"up.{job}": "up", "scrape_s": "scrape_duration_seconds"},
    )
    frame = normalise(frame, "metric")
    assert {"up.node", "up.process", "up.prometheus", "scrape_s"} <= set(frame["metric"])
    assert (frame.loc[frame["metric"].str.startswith("up."), "value"] == 1.0).all()


def test_process_exporter_groups(stack: PrometheusStack, burner: str) -> None:
    start, end = _last(6)
    frame = normalise(process_frame(Prometheus(stack.url), start, end, STEP), "process")
    assert set(frame["node"]) == {stack.process_instance}
    assert (frame["pid"] == 0).all()
    mine = frame[frame["name"] == burner]
    assert len(mine) >= 5
    # it burns at most 0.3 cores, less when the machine is busy (it was "0.3 ± 0.1": not so
    # on a busy machine)
    assert 0 < mine["cpu"].median() <= 0.4
    assert (mine["rss_bytes"] > 64 << 20).all()
    assert "prometheus" in set(frame["name"])


def _get(url: str, times: int) -> None:
    for _ in range(times):
        with urllib.request.urlopen(url, timeout=5) as answer:
            answer.read()


def test_http_histogram_gives_exact_counts_per_window(stack: PrometheusStack) -> None:
    client = Prometheus(stack.url)
    buildinfo = f"{stack.url}/api/v1/status/buildinfo"
    flags = f"{stack.url}/api/v1/status/flags"
    _get(buildinfo, 1)  # both series exist (and are scraped) before the measured range
    _get(flags, 1)
    stack.wait_for(f'{HISTOGRAM}_count{{handler="/api/v1/status/flags"}}', samples=2)
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    while datetime.now(UTC) < start:
        time.sleep(0.05)
    for _ in range(3):
        _get(buildinfo, 10)
        _get(flags, 4)
        time.sleep(1.0)
    time.sleep(3 * stack.scrape_interval)  # the last requests are scraped
    end = datetime.now(UTC).replace(microsecond=0)
    frame = workload_frame(client, HISTOGRAM, start, end, STEP, selector='job="prometheus"')
    frame = normalise(frame, "workload")
    assert {"/api/v1/status/buildinfo", "/api/v1/status/flags"} <= set(workload_types(frame))
    assert (frame["window_s"] == 1.0).all()
    assert frame["n[/api/v1/status/buildinfo]"].sum() == 30
    assert frame["n[/api/v1/status/flags]"].sum() == 12
    spent = frame["rt_sum[/api/v1/status/buildinfo]"].sum()
    assert 0 < spent < 30 * 0.5  # seconds: these requests take microseconds to milliseconds
    assert np.array_equal(frame["n[/api/v1/status/flags]"], frame["n[/api/v1/status/flags]"] // 1)


def test_chunked_range_equals_one_request(stack: PrometheusStack) -> None:
    start, end = _last(10)
    query = 'up{job="node"}'
    whole = Prometheus(stack.url).query_range(query, start, end, STEP)
    chunked = Prometheus(stack.url, max_points=3).query_range(query, start, end, STEP)
    assert len(whole) == len(chunked) == 1
    assert whole[0].labels == chunked[0].labels
    np.testing.assert_array_equal(whole[0].times, chunked[0].times)
    np.testing.assert_array_equal(whole[0].values, chunked[0].values)
    assert len(whole[0].times) == 11


def test_bad_query_is_a_source_error_without_retry(stack: PrometheusStack) -> None:
    start, end = _last(4)
    client = Prometheus(stack.url, retries=3, backoff=5.0)
    began = time.monotonic()
    with pytest.raises(SourceError, match=r"refused 'rate\(up\)': 400"):
        client.query_range("rate(up)", start, end, STEP)
    assert time.monotonic() - began < 2.0  # no backoff: a 4xx is not retried


def test_unknown_histogram_is_a_source_error(stack: PrometheusStack) -> None:
    start, end = _last(4)
    with pytest.raises(SourceError, match="no_such_metric_count/_sum"):
        workload_frame(Prometheus(stack.url), "no_such_metric", start, end, STEP)
