"""A webhook URL's credentials and token are never printed, stored or rendered: ``analyze``
with such a URL leaves no trace of them on stderr, in the report, the findings, the outbox or
the store; the outbox is private; a later run delivers with HTTP basic auth."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import duckdb
import pytest

from perfsleuth.cli import main
from tests.run.conftest import DataFiles

SECRETS = ("hookuser7", "s3cr3t-pw", "t0k3n-value")


class _Hook:
    def __init__(self) -> None:
        self.port = 0
        self.up = False
        self.received: list[tuple[str | None, str]] = []


@pytest.fixture
def hook() -> Iterator[_Hook]:
    state = _Hook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            state.received.append((self.headers.get("Authorization"), self.path))
            self.send_response(204 if state.up else 503)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _everything_written(folder: Path, config: Path) -> str:
    """The text of every file under ``folder`` but ``config`` and of every table of its
    stores."""
    texts = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p != config):
        if path.suffix == ".duckdb":
            con = duckdb.connect(str(path), read_only=True)
            try:
                for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
                    texts.append(json.dumps(con.execute(f'SELECT * FROM "{table}"').fetchall(),
                                            default=str))  # fmt: skip
            finally:
                con.close()
        elif path.suffix != ".wal":
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def test_webhook_secrets_never_leave_the_config(
    data_files: DataFiles, tmp_path: Path, hook: _Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://hookuser7:s3cr3t-pw@127.0.0.1:{hook.port}/hook?token=t0k3n-value"
    config = tmp_path / "perfsleuth.toml"
    config.write_text(
        f'[store]\npath = "s.duckdb"\n[[sources]]\npath = "{data_files.metric}"\n'
        f'[analyze]\nfamilies = ["changepoints"]\n[notify]\nwebhook = "{url}"\n',
        encoding="utf-8",
    )
    with pytest.raises(SystemExit) as code:
        main(["analyze", str(config)])
    out, err = capsys.readouterr()
    assert code.value.code == 0, err
    assert f"webhook http://***@127.0.0.1:{hook.port}/hook?token=***: HTTP 503" in err
    written = _everything_written(tmp_path, config)
    assert "<html" in written and "HTTP 503" in written  # the report says what failed
    for secret in SECRETS:
        assert secret not in out + err, secret
        assert secret not in written, secret
    outbox = tmp_path / "s.duckdb.outbox"
    modes = {p: p.stat().st_mode & 0o777 for p in [outbox, *outbox.rglob("*")]}
    assert len(modes) == 4  # the folders, the state, the webhook item kept for a retry
    assert all(m == (0o700 if p.is_dir() else 0o600) for p, m in modes.items()), modes
    # the server was asked with the credentials as basic auth, the token in its query
    authorization = "Basic " + base64.b64encode(b"hookuser7:s3cr3t-pw").decode()
    assert hook.received == [(authorization, "/hook?token=t0k3n-value")]

    hook.up = True  # the next run delivers what was kept
    with pytest.raises(SystemExit) as code:
        main(["analyze", str(config)])
    out, err = capsys.readouterr()
    assert code.value.code == 0, err
    assert "kept" in err and not list((outbox / "pending").iterdir())
    assert [a for a, _ in hook.received[1:]] == [authorization] * (len(hook.received) - 1)
    assert not any(secret in out + err for secret in SECRETS)
