"""Notifications with a real SMTP server (aiosmtpd on 127.0.0.1) and a real HTTP webhook."""

from __future__ import annotations

import base64
import email
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import Message
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from perfsleuth.datasets.fleet import SCENARIOS, simulate_fleet
from perfsleuth.findings import Finding
from perfsleuth.notify import NotifySettings, Outbox, notify, sparkline
from perfsleuth.processes.detector import ProcessAnalysis, ProcessDetector
from perfsleuth.store import Store

pytestmark = pytest.mark.integration

NOW = datetime(2024, 3, 6, 6, 0, tzinfo=UTC)


class _Inbox:
    """aiosmtpd handler keeping messages; ``fail`` answers DATA with a temporary error."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []
        self.fail = False

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.fail:
            return "451 4.3.0 mailbox temporarily unavailable"
        message = email.message_from_bytes(envelope.content)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def smtp() -> Iterator[tuple[_Inbox, int]]:
    from aiosmtpd.controller import Controller

    inbox = _Inbox()
    port = _free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


@pytest.fixture(scope="module")
def fleet() -> tuple[ProcessAnalysis, list[Finding]]:
    run = simulate_fleet(len(SCENARIOS), interval="15m", seed=4)
    analysis = ProcessDetector(rules=run.rules).analyse(run.frame)
    return analysis, list(analysis.findings)


def _settings(port: int, tmp_path: Path, **extra: Any) -> NotifySettings:
    return NotifySettings(
        recipients=("ops@example.com",),
        analysts=("ron@example.com",),
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_timeout=timedelta(seconds=5),
        tickets=str(tmp_path / "tickets"),
        **extra,
    )


def _parts(message: Message) -> tuple[str, str]:
    text = html = ""
    for part in message.walk():
        if part.get_content_type() == "text/plain":
            text = part.get_payload(decode=True).decode()  # type: ignore[union-attr]
        elif part.get_content_type() == "text/html":
            html = part.get_payload(decode=True).decode()  # type: ignore[union-attr]
    return text, html


def test_one_summary_per_audience_with_graphs(
    smtp: tuple[_Inbox, int], fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    inbox, port = smtp
    analysis, findings = fleet
    with Store(":memory:") as store:
        report = notify(
            findings,
            _settings(port, tmp_path),
            outbox=tmp_path / "outbox",
            store=store,
            graphs=analysis.graphs(),
            now=NOW,
        )
        history = store.history()
    assert not report.kept and not report.errors
    assert len(inbox.messages) == 2  # analysts (everything) and recipients (public): one each
    by_rcpt = {tuple(rcpt): message for _, rcpt, message in inbox.messages}
    text, html = _parts(by_rcpt[("ron@example.com",)])
    assert html.count("<svg") == len(findings)
    for finding in findings:
        assert finding.explanation.split(":")[0] in text
    public_text, public_html = _parts(by_rcpt[("ops@example.com",)])
    stealthy = [f for f in findings if f.kind.value in ("capture_ratio", "cap_exceeded")]
    assert stealthy
    for finding in stealthy:
        assert finding.id not in public_text  # FYEO: only the analysts hear about these
    assert "<svg" in public_html
    # tickets for the public findings only; history for every finding
    tickets = list((tmp_path / "tickets").glob("*.json"))
    assert len(tickets) == len(findings) - len(stealthy)
    ticket = json.loads(tickets[0].read_text())
    assert {"kind", "entity", "evidence", "node", "explanation"} <= set(ticket)
    assert len(history) == len(findings)
    assert not Outbox(tmp_path / "outbox").pending()


def test_failing_smtp_keeps_alerts_and_a_later_run_sends_them(
    smtp: tuple[_Inbox, int], fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    inbox, port = smtp
    _, findings = fleet
    settings = _settings(port, tmp_path)
    inbox.fail = True
    first = notify(findings, settings, outbox=tmp_path / "outbox", now=NOW)
    assert len(first.kept) == 2 and all("451" in e for e in first.errors)
    assert not inbox.messages
    pending = Outbox(tmp_path / "outbox").pending()
    assert {item.channel for _, item in pending} == {"email"}
    inbox.fail = False
    with Store(":memory:") as store:
        later = notify([], settings, outbox=tmp_path / "outbox", store=store, now=NOW)
    assert len(inbox.messages) == 2
    assert not later.kept and not Outbox(tmp_path / "outbox").pending()
    subjects = [m["Subject"] for _, _, m in inbox.messages]
    assert all("patholog" in s for s in subjects)


def test_unreachable_server_is_kept_too(
    fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    _, findings = fleet
    port = _free_port()  # nobody listens there
    report = notify(findings, _settings(port, tmp_path), outbox=tmp_path / "ob", now=NOW)
    assert any("Connection refused" in e or "refused" in e.lower() for e in report.errors)
    assert sum(item.channel == "email" for _, item in Outbox(tmp_path / "ob").pending()) == 2


def test_repeat_daily_and_duplicates_within_a_run(
    smtp: tuple[_Inbox, int], fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    inbox, port = smtp
    _, findings = fleet
    settings = _settings(port, tmp_path)
    box = tmp_path / "outbox"
    first = notify([*findings, *findings], settings, outbox=box, now=NOW)
    assert first.suppressed_duplicates == len(findings)
    assert len(first.due) == len(findings)
    same_day = notify(findings, settings, outbox=box, now=NOW + timedelta(hours=6))
    assert not same_day.due and same_day.not_due == len(findings)
    assert len(inbox.messages) == 2
    next_day = notify(findings, settings, outbox=box, now=NOW + timedelta(days=1))
    assert len(next_day.due) == len(findings)
    assert len(inbox.messages) == 4
    text, _ = _parts(inbox.messages[-1][2])
    assert "still present" in text and "(new)" not in text


def test_stealth_mode_sends_only_to_the_analysts(
    smtp: tuple[_Inbox, int], fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    inbox, port = smtp
    _, findings = fleet
    notify(findings, _settings(port, tmp_path, stealth=True), outbox=tmp_path / "ob", now=NOW)
    assert [rcpt for _, rcpt, _ in inbox.messages] == [["ron@example.com"]]
    assert not (tmp_path / "tickets").exists()


def test_webhook_gets_one_json_summary(
    fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    _, findings = fleet
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        settings = NotifySettings(webhook=url)
        report = notify(findings, settings, outbox=tmp_path / "ob", now=NOW)
    finally:
        server.shutdown()
        server.server_close()
    assert len(received) == 1, report.errors
    kinds = {f["kind"] for f in received[0]["findings"]}
    assert "cpu_loop" in kinds and "capture_ratio" not in kinds
    assert not Outbox(tmp_path / "ob").pending()


def test_sparkline_escapes_and_breaks_at_gaps() -> None:
    svg = sparkline([1.0, 2.0, float("nan"), 3.0, 4.0], marks=(2.5,), label="<b>&x")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "&lt;b&gt;&amp;x" in svg
    assert svg.count("<polyline") == 2
    assert "stroke-dasharray" in svg


@dataclass
class _Hook:
    """A webhook that wants HTTP basic auth (401 without it) and what it was sent."""

    port: int = 0
    expected: str = "Basic " + base64.b64encode(b"alice:pa:ss@1").decode()
    received: list[tuple[str | None, str, dict[str, Any]]] = field(default_factory=list)


@pytest.fixture
def auth_hook() -> Iterator[_Hook]:
    hook = _Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            authorization = self.headers.get("Authorization")
            hook.received.append((authorization, self.path, body))
            self.send_response(204 if authorization == hook.expected else 401)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    hook.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_webhook_credentials_go_as_basic_auth_and_stay_out_of_the_outbox(
    fleet: tuple[ProcessAnalysis, list[Finding]],
    tmp_path: Path,
    auth_hook: _Hook,
    caplog: pytest.LogCaptureFixture,
) -> None:
    hook, port = auth_hook, auth_hook.port
    _, findings = fleet
    secret = f"http://alice:pa%3Ass%401@127.0.0.1:{port}/hook?token=t0k3n"
    wrong = NotifySettings(webhook=secret.replace("pa%3Ass%401", "nope"))
    box = tmp_path / "ob"
    report = notify(findings, wrong, outbox=box, now=NOW)  # refused: kept for the next run
    assert report.kept and hook.received[0][0] != hook.expected
    assert report.errors == [f"webhook http://***@127.0.0.1:{port}/hook?token=***: HTTP 401"]
    for path in [box, *box.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        if path.is_file():
            text = path.read_text()
            assert "t0k3n" not in text and "nope" not in text and "alice" not in text

    report = notify(findings, NotifySettings(webhook=secret), outbox=box, now=NOW)
    assert report.delivered and not report.kept and not Outbox(box).pending()
    authorization, posted, body = hook.received[-1]
    assert authorization == hook.expected  # percent-decoded: alice / pa:ss@1
    assert posted == "/hook?token=t0k3n"  # the token is the webhook's own business
    assert body["findings"]
    logged = " ".join(record.getMessage() for record in caplog.records)
    assert "t0k3n" not in logged and "nope" not in logged and "pa%3Ass" not in logged


def test_unresolvable_webhook_host_is_named_without_credentials(
    fleet: tuple[ProcessAnalysis, list[Finding]], tmp_path: Path
) -> None:
    _, findings = fleet
    settings = NotifySettings(webhook="http://alice:s3cret@127.0.0.1:9/hook?token=t0k3n")
    report = notify(findings[:1], settings, outbox=tmp_path / "ob", now=NOW)
    (error,) = report.errors
    assert error.startswith("webhook http://***@127.0.0.1:9/hook?token=***: ")
    assert "refused" in error.lower()  # the host is 127.0.0.1, not "alice:s3cret@127.0.0.1"
    assert "s3cret" not in error and "t0k3n" not in error


def test_webhook_must_be_http(tmp_path: Path) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="http:// or https://"):
        NotifySettings(webhook="file:///etc/passwd")
