"""A throw-away real Prometheus + node-exporter + process-exporter on 127.0.0.1, for tests.

Usage::

    from tests.support.prometheus import missing_prometheus, prometheus_stack

    if reason := missing_prometheus():
        pytest.skip(reason, allow_module_level=True)

    @pytest.fixture(scope="module")
    def stack(tmp_path_factory):
        with prometheus_stack(tmp_path_factory.mktemp("prom")) as running:
            running.wait_for('up{job="node"}', samples=5)  # a few scrapes in the TSDB
            yield running

    def test_something(stack):
        client = Prometheus(stack.url)  # e.g. http://127.0.0.1:41234
        ...

:func:`prometheus_stack` picks free loopback ports, writes the configurations into a directory
(``root``; a temporary one when not given), starts the three Debian binaries with a scrape
interval of ``scrape_interval`` seconds (default 1 s), waits until every scrape target reports
``up`` (raises :class:`TimeoutError` with the log tails otherwise), yields a
:class:`PrometheusStack` and, on leaving the block (also on error), stops every process
(SIGTERM, then SIGKILL after 10 s).

Scrape jobs and their ``instance`` labels (available as attributes of the stack):

* ``prometheus`` — Prometheus itself (``stack.prometheus_instance``); it exposes the
  ``prometheus_http_request_duration_seconds`` histogram per ``handler``: a real HTTP request
  histogram (every API call a test makes adds requests to it);
* ``node`` — node-exporter (``stack.node_instance``), default collectors;
* ``process`` — process-exporter (``stack.process_instance``), one group per command name
  (``groupname`` = ``comm``), without per-thread metrics or smaps;
* any ``extra_targets`` given as ``{"job": ["127.0.0.1:port", ...]}`` (e.g. a test's own app).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import die_with_parent

__all__ = ["BINARIES", "PrometheusStack", "missing_prometheus", "prometheus_stack"]

BINARIES = {
    "prometheus": "prometheus",
    "node": "prometheus-node-exporter",
    "process": "prometheus-process-exporter",
}
"""Scrape job → Debian binary (packages of the same names)."""

_PROCESS_CONFIG = """\
process_names:
  - name: "{{.Comm}}"
    cmdline:
      - '.+'
"""


def missing_prometheus() -> str | None:
    """Why the stack cannot run here (a skip reason), or None when all binaries are found."""
    absent = [binary for binary in BINARIES.values() if shutil.which(binary) is None]
    if absent:
        return f"not installed: {', '.join(absent)} (see scripts/install-system-deps.sh)"
    return None


@dataclass(frozen=True)
class PrometheusStack:
    """A running stack: the Prometheus base URL and each job's ``instance`` label."""

    url: str
    prometheus_instance: str
    node_instance: str
    process_instance: str
    root: Path
    scrape_interval: float

    def query(self, promql: str) -> list[dict[str, object]]:
        """Run an instant query and return its ``result`` list."""
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(address, timeout=10) as answer:
            body = json.loads(answer.read())
        if body.get("status") != "success":
            raise RuntimeError(f"query {promql!r} failed: {body}")
        result: list[dict[str, object]] = body["data"]["result"]
        return result

    def wait_for(self, promql: str, *, samples: int = 1, timeout: float = 60.0) -> None:
        """Wait until ``count_over_time((promql)[1h:<interval>])`` reaches ``samples``.

        Use it to let a few scrapes land before querying a range (rates need two or more).
        """
        step = f"{max(1, round(self.scrape_interval))}s"
        probe = f"min(count_over_time(({promql})[1h:{step}]))"
        deadline = time.monotonic() + timeout
        seen = 0.0
        while time.monotonic() < deadline:
            result = self.query(probe)
            if result:
                value = result[0].get("value")
                if isinstance(value, list):
                    seen = float(value[1])
                    if seen >= samples:
                        return
            time.sleep(self.scrape_interval / 2)
        raise TimeoutError(f"{promql!r}: {seen:g} of {samples} samples after {timeout:g} s")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _config(interval: float, jobs: Mapping[str, Sequence[str]]) -> str:
    seconds = f"{interval:g}s"
    lines = [
        "global:",
        f"  scrape_interval: {seconds}",
        f"  scrape_timeout: {seconds}",
        f"  evaluation_interval: {seconds}",
        "scrape_configs:",
    ]
    for job, targets in jobs.items():
        lines += [
            f"  - job_name: {json.dumps(job)}",
            "    static_configs:",
            f"      - targets: {json.dumps(list(targets))}",
        ]
    return "\n".join(lines) + "\n"


def _targets_up(url: str, jobs: Mapping[str, Sequence[str]]) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/targets", timeout=5) as answer:
            body = json.loads(answer.read())
    except (OSError, ValueError) as exc:
        return False, f"Prometheus not answering: {exc}"
    active = body.get("data", {}).get("activeTargets", [])
    health = {(t["labels"].get("job"), t["labels"].get("instance")): t["health"] for t in active}
    down = [
        f"{job}/{target}={health.get((job, target), 'absent')}"
        for job, targets in jobs.items()
        for target in targets
        if health.get((job, target)) != "up"
    ]
    return not down, ", ".join(down)


@contextmanager
def prometheus_stack(
    root: Path | None = None,
    *,
    scrape_interval: float = 1.0,
    extra_targets: Mapping[str, Sequence[str]] | None = None,
    startup_timeout: float = 60.0,
) -> Iterator[PrometheusStack]:
    """Start Prometheus, node-exporter and process-exporter on 127.0.0.1; stop them after.

    Parameters
    ----------
    root
        Directory for configurations, the TSDB and logs (``*.log``); a temporary directory,
        removed afterwards, when None.
    scrape_interval
        Seconds between scrapes of every target (also the scrape timeout).
    extra_targets
        More scrape jobs: job name → ``host:port`` targets. They must be up within
        ``startup_timeout`` too.
    startup_timeout
        Seconds to wait for every target to be ``up``.
    """
    reason = missing_prometheus()
    if reason:
        raise FileNotFoundError(reason)
    with ExitStack() as cleanup:
        if root is None:
            root = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="prom-")))
        root.mkdir(parents=True, exist_ok=True)
        ports = {job: _free_port() for job in BINARIES}
        instance = {job: f"127.0.0.1:{port}" for job, port in ports.items()}
        jobs: dict[str, Sequence[str]] = {job: [address] for job, address in instance.items()}
        for job, targets in (extra_targets or {}).items():
            if job in jobs:
                raise ValueError(f"job name {job!r} is taken by the stack")
            jobs[job] = list(targets)

        (root / "prometheus.yml").write_text(_config(scrape_interval, jobs), encoding="utf-8")
        (root / "process-exporter.yml").write_text(_PROCESS_CONFIG, encoding="utf-8")
        commands = {
            "node": [
                BINARIES["node"],
                f"--web.listen-address={instance['node']}",
                f"--collector.textfile.directory={root}",
            ],
            "process": [
                BINARIES["process"],
                "-web.listen-address",
                instance["process"],
                "-config.path",
                str(root / "process-exporter.yml"),
                "-threads=false",
                "-gather-smaps=false",
            ],
            "prometheus": [
                BINARIES["prometheus"],
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'tsdb'}",
                f"--web.listen-address={instance['prometheus']}",
                "--storage.tsdb.retention.time=1d",
            ],
        }
        logs = {job: root / f"{job}.log" for job in commands}
        processes: dict[str, subprocess.Popen[bytes]] = {}
        for job, command in commands.items():
            with logs[job].open("wb") as log:
                processes[job] = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    cwd=root,
                    env={**os.environ, "GOMAXPROCS": "1"},
                    preexec_fn=die_with_parent,  # noqa: PLW1509 (no threads run at start-up)
                )
            cleanup.callback(_stop, processes[job])

        url = f"http://{instance['prometheus']}"
        deadline = time.monotonic() + startup_timeout
        while True:
            dead = {job: p.returncode for job, p in processes.items() if p.poll() is not None}
            if dead:
                details = "\n".join(f"--- {job}.log\n{_tail(logs[job])}" for job in dead)
                raise RuntimeError(f"exited during start-up: {dead}\n{details}")
            up, problem = _targets_up(url, jobs)
            if up:
                break
            if time.monotonic() > deadline:
                details = "\n".join(f"--- {job}.log\n{_tail(path)}" for job, path in logs.items())
                raise TimeoutError(
                    f"targets not up after {startup_timeout:g} s: {problem}\n{details}"
                )
            time.sleep(0.25)

        yield PrometheusStack(
            url=url,
            prometheus_instance=instance["prometheus"],
            node_instance=instance["node"],
            process_instance=instance["process"],
            root=root,
            scrape_interval=scrape_interval,
        )
