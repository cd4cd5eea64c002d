"""Bottleneck inference from node-exporter counters read through a real Prometheus."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from perfsleuth.bottleneck.detector import BottleneckDetector
from perfsleuth.bottleneck.importers import prometheus_queries
from perfsleuth.frames import normalise
from perfsleuth.sources.prometheus import Prometheus, counter_frame
from tests.support.prometheus import PrometheusStack, missing_prometheus, prometheus_stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]

if reason := missing_prometheus():  # pragma: no cover - the CI machine has the Debian packages
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusStack]:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with prometheus_stack(tmp_path_factory.mktemp("prom")) as running:
            running.wait_for('up{job="node"}', samples=10)
            yield running
    finally:
        for p in burners:
            p.kill()
            p.wait(timeout=10)


def test_node_exporter_counters_in_the_models_names(stack: PrometheusStack) -> None:
    end = datetime.now(UTC).replace(microsecond=0)
    start = end - timedelta(seconds=8)
    frame = counter_frame(
        Prometheus(stack.url), start, end, timedelta(seconds=1), prometheus_queries()
    )
    frame = normalise(frame, "counter")
    counters = set(frame["counter"])
    # the stack's node-exporter runs the default collectors: no workingset_refault_file
    assert counters == set(prometheus_queries()) - {"mem.refault"}
    means = frame.groupby("counter")["value"].mean()
    assert means["cpu.user"] >= 1.0  # two busy loops on a 2-CPU machine
    assert 0.0 <= means["disk.busy"] <= 1.0

    windows = BottleneckDetector(min_utilisation=0.1).analyse(frame).windows
    assert {w.entity for w in windows} == {stack.node_instance}
    inference = windows[-1].inference
    assert set(inference.columns) == counters
    assert inference.util("cpu") >= 0.5
