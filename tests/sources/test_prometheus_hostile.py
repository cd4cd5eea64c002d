"""The Prometheus client against a real local HTTP server serving hostile answers: endless,
binary or malformed bodies are one clear error (never a traceback or a memory blow-up),
retries and waits are bounded, and credentials in the URL go as HTTP basic auth, unshown."""

from __future__ import annotations

import base64
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from perfsleuth.cli import main
from perfsleuth.config import load_config
from perfsleuth.errors import ConfigError, SourceError
from perfsleuth.sources.prometheus import MAX_BACKOFF, MAX_RETRIES, Prometheus

T0 = datetime(2024, 5, 1, tzinfo=UTC)
STEP = timedelta(seconds=10)
CHUNK = b" " * (1 << 16)


def _answer(values: object, labels: object = None) -> bytes:
    series = {"metric": {"instance": "a"} if labels is None else labels, "values": values}
    body = {"status": "success", "data": {"resultType": "matrix", "result": [series]}}
    return json.dumps(body).encode()


class Hostile:
    """What the server does next (``mode``), what it was sent, and how much it wrote."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.authorization: list[str | None] = []
        self.written = 0


@pytest.fixture
def hostile() -> Iterator[tuple[str, Hostile]]:
    state = Hostile()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.authorization.append(self.headers.get("Authorization"))
            with contextlib.suppress(OSError):  # the client hung up: what endless answers get
                self._answer(state.mode)

        def _answer(self, mode: str) -> None:
            if mode == "auth" and self.headers.get("Authorization") != _basic("alice", "s3:cr@t"):
                self._send(401, b'{"status": "error", "error": "unauthorized"}')
            elif mode in ("ok", "auth"):
                self._send(200, _answer([[T0.timestamp(), "1.5"], [T0.timestamp() + 10, "NaN"]]))
            elif mode == "endless":  # a body that never ends, as fast as the socket takes it
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"status": "success", "data": {"result": [')
                while state.written < 2**30:  # a bound for the server, not the client
                    self.wfile.write(CHUNK)
                    state.written += len(CHUNK)
            elif mode == "declared":
                self.send_response(200)
                self.send_header("Content-Length", str(10**12))
                self.end_headers()
            elif mode == "drip":  # a byte now and then: never complete
                self.send_response(200)
                self.end_headers()
                for _ in range(100):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)
            elif mode == "error-endless":
                self.send_response(400)
                self.end_headers()
                while state.written < 2**30:
                    self.wfile.write(b"x" * len(CHUNK))
                    state.written += len(CHUNK)
            else:
                self._send(200, BODIES[mode])

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


BODIES = {
    "nul": b"\x00" * 64,
    "nul-first": b"\x00" + _answer([[1.0, "1"]]),
    "binary": bytes(range(256)) * 4,
    "word": _answer([[T0.timestamp(), "fast"]]),
    "nul-value": _answer([[T0.timestamp(), "1\x00"]]),
    "short-point": _answer([[T0.timestamp()]]),
    "no-time": _answer([["soon", "1"]]),
    "infinite-time": _answer([[1e400, "1"]]),
    "labels": _answer([[T0.timestamp(), "1"]], labels={"instance": 5}),
    "values": _answer({"not": "a list"}),
    "result": b'{"status": "success", "data": {"result": "everything"}}',
    "huge-error": json.dumps({"status": "error", "error": "e" * 200_000}).encode(),
}

MESSAGES = {
    "nul": "answer is not JSON",
    "nul-first": "answer is not JSON",
    "binary": "answer is not UTF-8 text",
    "word": r"point 0 is not \[time, number\]: .*'fast'",
    "nul-value": r"point 0 is not \[time, number\]",
    "short-point": r"point 0 is not \[time, number\]",
    "no-time": r"point 0 is not \[time, number\]",
    "infinite-time": "point 0 has no finite time",
    "labels": "labels are not text",
    "values": "values are not a list",
    "result": "no list of series under data.result",
    "huge-error": "failed: e+…$",
}


@pytest.mark.parametrize("mode", sorted(BODIES))
def test_malformed_answers_are_one_line_errors(hostile: tuple[str, Hostile], mode: str) -> None:
    url, state = hostile
    state.mode = mode
    with pytest.raises(SourceError, match=MESSAGES[mode]) as info:
        Prometheus(url, retries=0).query_range("up", T0, T0 + STEP, STEP)
    message = str(info.value)
    assert "\n" not in message and len(message) < 700
    assert message.startswith(f"{url}: ")


def test_an_endless_answer_stops_at_the_size_limit(hostile: tuple[str, Hostile]) -> None:
    url, state = hostile
    state.mode = "endless"
    client = Prometheus(url, retries=3, max_bytes=4 * 2**20)
    with pytest.raises(SourceError, match=r"larger than 4 MiB .* ask for less") as info:
        client.query_range("up", T0, T0 + STEP, STEP)
    assert "\n" not in str(info.value)
    assert len(state.authorization) == 1  # as large again next time: not retried
    assert state.written < 64 * 2**20  # read no further than the limit (and socket buffers)


def test_a_declared_huge_answer_is_refused_before_reading(hostile: tuple[str, Hostile]) -> None:
    url, state = hostile
    state.mode = "declared"
    with pytest.raises(SourceError, match=r"larger than 64 MiB \(1,000,000,000,000 bytes"):
        Prometheus(url).query_range("up", T0, T0 + STEP, STEP)


def test_an_answer_that_never_completes_times_out(hostile: tuple[str, Hostile]) -> None:
    url, state = hostile
    state.mode = "drip"
    began = time.monotonic()
    with pytest.raises(SourceError, match=r"failed after 2 attempt\(s\): answer not complete"):
        Prometheus(url, timeout=0.5, retries=1, backoff=0.0).query_range("up", T0, T0 + STEP, STEP)
    assert time.monotonic() - began < 8.0  # two attempts of 0.5 s, not 100 drips of 0.1 s


def test_an_endless_error_answer_is_read_no_further(hostile: tuple[str, Hostile]) -> None:
    url, state = hostile
    state.mode = "error-endless"
    with pytest.raises(SourceError, match=r"refused 'up': 400 x+$"):
        Prometheus(url).query_range("up", T0, T0 + STEP, STEP)


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown(
    hostile: tuple[str, Hostile],
) -> None:
    url, state = hostile
    state.mode = "auth"
    secret = url.replace("http://", "http://alice:s3%3Acr%40t@")  # percent-encoded : and @
    client = Prometheus(secret)
    (series,) = client.query_range("up", T0, T0 + STEP, STEP)
    assert series.values[0] == 1.5
    assert state.authorization == [_basic("alice", "s3:cr@t")]
    assert "s3" not in client.url and "alice" not in client.url
    state.mode = "word"  # an error message names the server, not its credentials
    with pytest.raises(SourceError) as info:
        client.query_range("up", T0, T0 + STEP, STEP)
    assert "alice" not in str(info.value) and "s3" not in str(info.value)
    assert str(info.value).startswith(f"{url}: ")


def test_retries_and_waits_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=f"retries must be in 0..{MAX_RETRIES}"):
        Prometheus("http://127.0.0.1:9", retries=MAX_RETRIES + 1)
    with pytest.raises(ConfigError, match="backoff must be in"):
        Prometheus("http://127.0.0.1:9", backoff=MAX_BACKOFF + 1)
    with pytest.raises(ConfigError, match="timeout must be in"):
        Prometheus("http://127.0.0.1:9", timeout=10**9)
    waits: list[float] = []
    monkeypatch.setattr("perfsleuth.sources.prometheus.time.sleep", waits.append)
    client = Prometheus("http://127.0.0.1:9", retries=MAX_RETRIES, backoff=2.0, timeout=1.0)
    with pytest.raises(SourceError, match=f"failed after {MAX_RETRIES + 1} attempt"):
        client.query_range("up", T0, T0 + STEP, STEP)
    assert waits[:4] == [2.0, 4.0, 8.0, 16.0]
    assert len(waits) == MAX_RETRIES and max(waits) == MAX_BACKOFF


def test_config_refuses_unbounded_retries_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        '[[sources]]\nkind = "prometheus"\nurl = "http://127.0.0.1:9"\n'
        'queries = { up = "up" }\nretries = 1000000\n'
    )
    with pytest.raises(ConfigError, match=r"p\.toml:5: sources\.0\.retries: 1000000 is out"):
        load_config(path)


def test_analyze_on_a_hostile_server_exits_2_with_one_line(
    hostile: tuple[str, Hostile], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, state = hostile
    config = tmp_path / "p.toml"
    config.write_text(
        f'[store]\npath = "s.duckdb"\n[[sources]]\nkind = "prometheus"\nurl = "{url}"\n'
        'queries = { up = "up" }\nretries = 0\n[analyze]\nfamilies = ["changepoints"]\n'
    )
    for mode in ("nul-value", "word", "binary"):
        state.mode = mode
        with pytest.raises(SystemExit) as code:
            main(["analyze", str(config)])
        err = capsys.readouterr().err
        assert code.value.code == 2, err
        assert err.count("\n") == 1 and "Traceback" not in err
