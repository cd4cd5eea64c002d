"""``perfsleuth watch``: raise and clear at each window close, survive outages and restarts."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np
import pandas as pd
import pytest

from perfsleuth.cli import main
from perfsleuth.config import Config, load_config
from perfsleuth.store import Store
from perfsleuth.watch import AlertEvent, Watcher, alert_id
from tests.run.conftest import workload_until

WORKLOAD = """
[store]
path = "watch.duckdb"

[[sources]]
path = "workload.parquet"
contract = "workload"

[analyze]
families = ["workload"]

[watch]
name = "shop"
every = "{every}"
backoff_max = "15m"
"""

# The seeded shop: a stuck connection pool on day 2, 14:00-14:40 (8 windows of 5 minutes).
DURING = "2024-05-02 14:25"
AFTER = "2024-05-02 15:30"


def _config(folder: Path, every: str = "5m") -> Config:
    path = folder / "perfsleuth.toml"
    path.write_text(WORKLOAD.format(every=every), encoding="utf-8")
    return load_config(path)


def _check(config: Config, folder: Path) -> list[AlertEvent]:
    with Watcher(config, base=folder) as watcher:
        result = watcher.check()
    assert result.ok, result.error
    return list(result.events)


def test_raise_restart_and_clear(tmp_path: Path) -> None:
    config = _config(tmp_path)
    data = tmp_path / "workload.parquet"

    workload_until(DURING, data)
    events = _check(config, tmp_path)
    # day 1's bottleneck ended long ago: history, not news; the stuck pool is happening now
    assert [(e.state, e.finding.start) for e in events] == [
        ("raised", datetime(2024, 5, 2, 14, 0, tzinfo=UTC))
    ]
    assert "RAISED" in events[0].line() and "service/response_time" in events[0].line()
    raised = events[0].alert_id

    # a restart with a window more: the same episode, nothing raised again
    workload_until("2024-05-02 14:30", data)
    assert _check(config, tmp_path) == []

    # the pool recovered at 14:40: the alert clears once the newest data are past it
    workload_until(AFTER, data)
    events = _check(config, tmp_path)
    assert [(e.state, e.alert_id) for e in events] == [("cleared", raised)]
    assert events[0].reason.startswith("ended 2024-05-02 14:40")

    # and it stays cleared on the next check and after another restart
    assert _check(config, tmp_path) == []
    with Watcher(config, base=tmp_path) as watcher:
        states = watcher.alerts()
    assert states[raised][0] == "cleared"
    assert sorted(state for state, _ in states.values()) == ["cleared", "ended"]


def test_outage_backs_off_says_so_and_resumes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    data = tmp_path / "workload.parquet"
    hidden = tmp_path / "away.parquet"
    workload_until(DURING, data)
    waits: list[float] = []
    messages: list[str] = []
    events: list[AlertEvent] = []

    def sleep(seconds: float) -> bool:
        waits.append(seconds)
        if len(waits) == 1:
            data.rename(hidden)  # the source goes away
        elif len(waits) == 3:
            hidden.rename(data)  # and comes back
        return False

    with Watcher(
        config, base=tmp_path, sleep=sleep, on_status=messages.append, on_event=events.append
    ) as watcher:
        watcher.run(checks=5)
        states = watcher.alerts()

    assert [e.state for e in events] == ["raised"]  # not cleared by the outage, not raised again
    assert sorted(state for state, _ in states.values()) == ["ended", "open"]
    assert [round(w) for w in waits[1:3]] == [300, 600]  # every, then doubling
    # then back to every, less the time the check took (seconds when the machine is busy)
    assert 240 < waits[3] <= 300 and len(waits) == 4
    assert len(messages) == 3
    assert "source unavailable (attempt 1 failed)" in messages[0]
    assert "away" not in messages[0] and "workload.parquet: no such file" in messages[0]
    assert "alerts unchanged; retrying in 5 min" in messages[0]
    assert "(attempt 2 failed)" in messages[1] and "retrying in 10 min" in messages[1]
    assert "sources answer again after 2 failed attempt(s)" in messages[2]
    assert "resuming" in messages[2]


def test_backoff_is_capped(tmp_path: Path) -> None:
    watcher = Watcher(_config(tmp_path, every="1m"), base=tmp_path)
    waits = []
    for failures in range(1, 8):
        watcher.failures = failures
        waits.append(watcher.backoff())
    assert waits == [timedelta(minutes=m) for m in (1, 2, 4, 8, 15, 15, 15)]


def _series(values: np.ndarray) -> pd.DataFrame:
    times = pd.date_range("2024-05-01", periods=len(values), freq="1min", tz="UTC")
    return pd.DataFrame({"time": times, "entity": "api", "metric": "latency", "value": values})


def test_a_finding_no_longer_found_clears(tmp_path: Path) -> None:
    (tmp_path / "perfsleuth.toml").write_text(
        '[store]\npath = "w.duckdb"\n[[sources]]\npath = "latency.csv"\n'
        '[analyze]\nfamilies = ["changepoints"]\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "perfsleuth.toml")
    rng = np.random.default_rng(1)
    shifted = np.r_[rng.normal(10, 1, 100), rng.normal(20, 1, 100)]
    _series(shifted).to_csv(tmp_path / "latency.csv", index=False)
    events = _check(config, tmp_path)
    assert [e.state for e in events] == ["raised"]
    assert events[0].finding.kind.value == "change_point"
    assert _check(config, tmp_path) == []  # an event is raised once

    # the same span re-read (a backfill corrected it): no change point any more
    _series(rng.normal(10, 1, 200)).to_csv(tmp_path / "latency.csv", index=False)
    events = _check(config, tmp_path)
    assert [(e.state, e.reason) for e in events] == [("cleared", "no longer found")]


def test_alert_identity_ignores_the_end(tmp_path: Path) -> None:
    from tests.conftest import make_finding

    assert alert_id(make_finding(length=5)) == alert_id(make_finding(length=30))
    assert alert_id(make_finding(minutes=1)) != alert_id(make_finding())


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    out, err = capsys.readouterr()
    code = exit_.value.code
    return (code if isinstance(code, int) else 0), out, err


def test_cli_watch_raises_once_across_restarts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path)
    workload_until(DURING, tmp_path / "workload.parquet")
    config = str(tmp_path / "perfsleuth.toml")

    code, out, err = _main(["--fail-on", "error", "watch", config, "--checks", "1"], capsys)
    assert code == 1, err
    lines = out.splitlines()
    assert len(lines) == 1 and " RAISED  ERROR " in lines[0]

    code, out, err = _main(["--fail-on", "error", "watch", config, "--checks", "1"], capsys)
    assert (code, out) == (0, ""), err

    workload_until(AFTER, tmp_path / "workload.parquet")
    code, out, err = _main(["--format", "jsonl", "watch", config, "--checks", "1"], capsys)
    assert code == 0, err
    event = json.loads(out)
    assert event["event"] == "cleared" and event["finding"]["kind"] == "workload_anomaly"
    with Store(tmp_path / "watch.duckdb", read_only=True) as db:
        assert len(db.runs()) == 3 and db.findings(kind="workload_anomaly")


def test_cli_watch_reports_an_outage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _config(tmp_path, every="10ms")
    code, out, err = _main(
        ["watch", str(tmp_path / "perfsleuth.toml"), "--checks", "2", "--every", "20ms"], capsys
    )
    # every check failed: exit 2 (it was 0), saying so on one line after the outage notes
    assert code == 2 and out == ""
    assert err.count("source unavailable") == 2
    assert "workload.parquet: no such file" in err and "retrying in" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("perfsleuth: error: watch: all 2 check(s) failed")
    assert last.endswith("workload.parquet: no such file")


def test_cli_watch_with_one_good_check_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path)
    workload_until(DURING, tmp_path / "workload.parquet")
    code, _, err = _main(
        ["watch", str(tmp_path / "perfsleuth.toml"), "--checks", "1", "--every", "20ms"], capsys
    )
    assert code == 0, err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('every = "5ms"', r"watch\.every: 5ms is out of range: give 10ms to 1d"),
        ('every = "2d"', r"watch\.every: 2d is out of range"),
        ('backoff_max = "52w"', r"watch\.backoff_max: 52w is out of range"),
        ('grace = "365d"', r"watch\.grace: 365d is out of range: give 1s to 30d"),
    ],
)
def test_watch_durations_have_sane_ranges(tmp_path: Path, line: str, message: str) -> None:
    from perfsleuth.errors import ConfigError

    path = tmp_path / "w.toml"
    path.write_text(f"[watch]\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"w\.toml:2: {message}"):
        load_config(path)
    with pytest.raises(ConfigError, match="every: 2ms is out of range"):
        Watcher(_config(tmp_path), base=tmp_path, every=timedelta(milliseconds=2))


# ------------------------------------------------------- over HTTP: a Prometheus that goes away


class _FakePrometheus:
    """A minimal ``/api/v1/query_range`` on 127.0.0.1 that can be stopped and started again on
    the same port: latency 10 ms, then 20 ms from ``shift`` (Unix seconds) on."""

    def __init__(self, shift: float) -> None:
        self.shift = shift
        self.port = 0
        self.requests = 0
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests += 1
                query = parse_qs(urlparse(self.path).query)
                start, end = float(query["start"][0]), float(query["end"][0])
                step = float(query["step"][0])
                times = np.arange(start, end + step / 2, step)
                # Noise fixed per sample time (seeded by it) so a check after a restart sees
                # the same data: this test is about the watcher, not about the detector's
                # false-positive rate. White noise, sd 0.5 ms under a 10 ms step: a periodic
                # wave (tried before) has almost no long-run variance at some phases, which
                # no real latency has. Uniform, so that no reading is a spike finding: with
                # Gaussian noise 2 of 400 clock alignments gave one, a second alert.
                noise = [
                    np.random.default_rng(round(t * 1000) % 2**32).uniform(-0.000866, 0.000866)
                    for t in times
                ]
                values = np.where(times < fake.shift, 0.010, 0.020) + np.asarray(noise)
                body = {
                    "status": "success",
                    "data": {
                        "resultType": "matrix",
                        "result": [
                            {
                                "metric": {"instance": "api:9100", "job": "api"},
                                "values": [
                                    [t, f"{v:.6f}"] for t, v in zip(times, values, strict=True)
                                ],
                            }
                        ],
                    },
                }
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None


def test_prometheus_outage_and_restart(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    fake = _FakePrometheus(shift=(now - timedelta(minutes=5)).timestamp())
    fake.start()
    try:
        (tmp_path / "perfsleuth.toml").write_text(
            f"""
[store]
path = "w.duckdb"
[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:{fake.port}"
queries = {{ latency = "latency_seconds" }}
unit = "s"
step = "5s"
range = "10m"
retries = 0
timeout = "2s"
[analyze]
families = ["changepoints"]
[watch]
every = "1m"
""",
            encoding="utf-8",
        )
        config = load_config(tmp_path / "perfsleuth.toml")
        waits: list[float] = []
        messages: list[str] = []

        def sleep(seconds: float) -> bool:
            waits.append(seconds)
            if len(waits) == 1:
                fake.stop()  # Prometheus goes away
            elif len(waits) == 3:
                fake.start()  # and comes back on the same port
            return False

        with Watcher(config, base=tmp_path, sleep=sleep, on_status=messages.append) as watcher:
            watcher.run(checks=4)
            first = list(watcher.events)
        # a restart: the change point is not raised again
        with Watcher(config, base=tmp_path, sleep=sleep) as again:
            assert again.check().ok
            assert again.events == []
    finally:
        fake.stop()

    assert [(e.state, e.finding.kind.value, e.finding.entity) for e in first] == [
        ("raised", "change_point", "api:9100")
    ]
    assert "source unavailable (attempt 1 failed)" in messages[0]
    assert f"127.0.0.1:{fake.port}" in messages[0] and "retrying in 60 s" in messages[0]
    assert "retrying in 2 min" in messages[1]
    assert "sources answer again after 2 failed attempt(s)" in messages[2]


def test_raised_alerts_are_notified_once(tmp_path: Path) -> None:
    path = tmp_path / "perfsleuth.toml"
    path.write_text(
        WORKLOAD.format(every="5m") + '\n[notify]\ntickets = "tickets"\n', encoding="utf-8"
    )
    config = load_config(path)
    workload_until(DURING, tmp_path / "workload.parquet")
    assert [e.state for e in _check(config, tmp_path)] == ["raised"]
    tickets = list((tmp_path / "tickets").glob("*.json"))
    assert len(tickets) == 1
    ticket = json.loads(tickets[0].read_text(encoding="utf-8"))
    assert ticket["kind"] == "workload_anomaly" and ticket["start"].startswith("2024-05-02T14:00")
    workload_until("2024-05-02 14:30", tmp_path / "workload.parquet")
    assert _check(config, tmp_path) == []
    assert len(list((tmp_path / "tickets").glob("*.json"))) == 1


def test_an_alert_is_not_cleared_when_its_detector_could_not_judge(tmp_path: Path) -> None:
    config = _config(tmp_path)
    data = tmp_path / "workload.parquet"
    workload_until(DURING, data)
    (raised,) = _check(config, tmp_path)
    # a truncated file: too few windows to fit the model, so the detector is skipped
    pd.read_parquet(data).tail(5).to_parquet(data)
    messages: list[str] = []
    with Watcher(config, base=tmp_path, on_status=messages.append) as watcher:
        result = watcher.check()
        assert result.ok and result.events == ()
        assert watcher.alerts()[raised.alert_id][0] == "open"
