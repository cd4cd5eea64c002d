"""Run the cases of issue 16 part A (storage, crash safety, secrets, outputs, bounds) through
the command line and print, for each, how it ended: exit code, first error line, and what
happened to the data.

Run it against the working tree, and against any other version of the package for a
before/after table, e.g. the last commit exported with ``git archive``::

    .venv/bin/python scripts/safe_operation_cases.py
    git archive HEAD src | tar -x -C /tmp/head
    PYTHONPATH=/tmp/head/src .venv/bin/python scripts/safe_operation_cases.py

Each case runs ``perfsleuth`` in a fresh process on small files written to a temporary folder;
servers (a webhook, a hostile Prometheus) listen on 127.0.0.1 in this process; a collector it
starts is stopped; nothing is left behind. A child that could grow without bound (an endless
Prometheus answer, before) gets a 2 GiB address-space limit and a time limit.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MAIN = "import sys; from perfsleuth.cli import main; sys.argv[0] = 'perfsleuth'; main()"
SECRETS = ("hookuser7", "s3cr3t-pw", "t0k3n-value")


def _limits() -> None:
    """preexec_fn: at most 2 GiB of address space, and die with this script."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run(args: list[str], *, cwd: Path, timeout: float = 300) -> tuple[int | str, str, str]:
    """``perfsleuth args``: exit code (or "killed after N s"), stdout, stderr."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", MAIN, *args],
            capture_output=True,
            timeout=timeout,
            cwd=cwd,
            env={**os.environ, "COLUMNS": "200"},
            check=False,
            preexec_fn=_limits,
        )
    except subprocess.TimeoutExpired:
        return f"still running after {timeout:g} s (killed)", "", ""
    out, err = (b.decode("utf-8", "backslashreplace") for b in (done.stdout, done.stderr))
    return done.returncode, out, err


def python(code: str, *, cwd: Path) -> str:
    """Run ``code`` with the same package in a fresh process; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        check=False,
    )
    errors = done.stderr.strip().splitlines()
    return done.stdout.strip() or (errors[-1] if errors else "")


def said(code: int | str, err: str) -> str:
    """Exit code and the first error line (or the traceback's last line)."""
    if isinstance(code, str):
        return code
    lines = [line for line in err.splitlines() if line.strip()]
    if "Traceback" in err:
        return f"exit {code}, TRACEBACK {lines[-1][:140]}"
    errors = [line for line in lines if "rror" in line]
    return f"exit {code}" + (f": {errors[0].strip()[:220]}" if errors else "")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.exists() else "absent"


def metric_csv(path: Path, *, entity: str = "api", shift: int = 100) -> Path:
    """A latency series with a level shift half-way: the change-point family finds it."""
    lines = ["time,entity,metric,value"]
    for i in range(2 * shift):
        level = 10.0 if i < shift else 30.0
        stamp = f"2024-05-01T{i // 60:02d}:{i % 60:02d}:00Z"
        lines.append(f"{stamp},{entity},latency,{level + (i * 7919 % 13) / 13:.3f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def metric_rows(store: Path, entity: str, cwd: Path) -> str:
    return python(
        f"""
        from perfsleuth.store import Store
        with Store({str(store)!r}, read_only=True) as s:
            f = s.read_frame("metric")
            print(int((f["entity"] == {entity!r}).sum()))
        """,
        cwd=cwd,
    )


# -- storage ----------------------------------------------------------------------------------


def case_store_is_a_csv_file(tmp: Path) -> str:
    data = metric_csv(tmp / "data.csv")
    other = metric_csv(tmp / "other.csv", entity="db")
    before = digest(other)
    code, _, err = run(["detect", str(data), "--store", str(other)], cwd=tmp)
    kept = python(
        f"""
        import duckdb
        try:
            con = duckdb.connect({str(other)!r}, read_only=True)
            print(con.execute("SELECT count(*) FROM findings").fetchone()[0], "findings kept")
        except Exception as exc:
            print("nothing kept:", type(exc).__name__)
        """,
        cwd=tmp,
    )
    same = "unchanged" if digest(other) == before else "CHANGED"
    return f"{said(code, err)}; other.csv {same}; {kept}"


def _store_with_rows(tmp: Path) -> Path:
    store = tmp / "s.duckdb"
    run(["detect", str(metric_csv(tmp / "data.csv")), "--store", str(store)], cwd=tmp)
    return store


def case_truncated_store(tmp: Path) -> str:
    store = _store_with_rows(tmp)
    size = store.stat().st_size
    with open(store, "r+b") as handle:
        handle.truncate(size // 2)
    code, _, err = run(["report", "--store", str(store), "-o", str(tmp / "r.html")], cwd=tmp)
    return said(code, err)


def case_corrupt_block(tmp: Path) -> str:
    store = _store_with_rows(tmp)
    data = bytearray(store.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4096] = os.urandom(4096)
    store.write_bytes(bytes(data))
    code, _, err = run(["report", "--store", str(store), "-o", str(tmp / "r.html")], cwd=tmp)
    return said(code, err)


def _rows_in_the_wal(tmp: Path) -> Path:
    """A store whose last committed rows (entity "wal") are only in its write-ahead log."""
    store = _store_with_rows(tmp)
    python(
        f"""
        import os
        import pandas as pd
        from perfsleuth.store import Store
        s = Store({str(store)!r})
        s.write_frame(pd.DataFrame({{
            "time": pd.date_range("2024-06-01", periods=5, freq="min", tz="UTC"),
            "entity": "wal", "metric": "rt", "value": [1.0, 2.0, 3.0, 4.0, 5.0]}}), "metric")
        os._exit(0)
        """,
        cwd=tmp,
    )
    return store


def case_damaged_wal_header_then_a_write(tmp: Path) -> str:
    store = _rows_in_the_wal(tmp)
    wal = store.with_name(store.name + ".wal")
    intact = wal.read_bytes()
    wal.write_bytes(b"\0" * 16 + intact[16:])
    code, _, err = run(["detect", str(metric_csv(tmp / "b.csv", entity="b")), "--store",
                        str(store)], cwd=tmp)  # fmt: skip
    wal.write_bytes(intact)  # restored, as from a backup: are the committed rows still there?
    return f"{said(code, err)}; committed WAL rows after restoring the log: " + metric_rows(
        store, "wal", tmp
    )


def case_killed_run(tmp: Path) -> str:
    store = _store_with_rows(tmp)
    python(
        f"""
        import os
        from perfsleuth.store import Store
        s = Store({str(store)!r})
        s.begin_run("perfsleuth analyze (killed)")
        os._exit(0)
        """,
        cwd=tmp,
    )
    run(["detect", str(tmp / "data.csv"), "--store", str(store)], cwd=tmp)
    return "statuses afterwards: " + python(
        f"""
        from perfsleuth.store import Store
        with Store({str(store)!r}, read_only=True) as s:
            print(", ".join(s.runs()["status"]))
        """,
        cwd=tmp,
    )


def case_report_and_analyze_beside_a_live_collector(tmp: Path) -> str:
    store = tmp / "live.duckdb"
    config = tmp / "live.toml"
    config.write_text(
        f'[store]\npath = "{store}"\n[output]\ndir = "{tmp / "out"}"\n'
        '[[sources]]\nkind = "store"\ncontract = "process"\n'
        '[analyze]\nfamilies = ["processes"]\n',
        encoding="utf-8",
    )
    collector = subprocess.Popen(
        [sys.executable, "-c", MAIN, "collect", "--store", str(store), "--interval", "200ms",
         "--batch", "5", "--commits"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
        preexec_fn=_limits,  # noqa: PLW1509 (setrlimit and prctl only)
    )  # fmt: skip
    try:
        assert collector.stdout is not None
        collector.stdout.readline()  # its first commit
        collector.stdout.readline()
        report = run(["report", "--store", str(store), "-o", str(tmp / "r.html")], cwd=tmp)
        analyze = run(["analyze", str(config)], cwd=tmp)
        alive = collector.poll() is None
    finally:
        collector.send_signal(signal.SIGTERM)
        try:
            collector.communicate(timeout=60)
        finally:
            collector.kill()
    return (
        f"report: {said(report[0], report[2])}; analyze: {said(analyze[0], analyze[2])}; "
        f"collector {'still running' if alive else 'DIED'}"
    )


# -- secrets ----------------------------------------------------------------------------------


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def case_webhook_url_with_credentials(tmp: Path) -> str:
    received: list[str | None] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append(self.headers.get("Authorization"))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    data = metric_csv(tmp / "data.csv")
    with serve(Hook) as port:
        url = f"http://hookuser7:s3cr3t-pw@127.0.0.1:{port}/hook?token=t0k3n-value"
        config = tmp / "perfsleuth.toml"
        config.write_text(
            f'[store]\npath = "s.duckdb"\n[output]\ndir = "out"\n[[sources]]\npath = "{data}"\n'
            f'[analyze]\nfamilies = ["changepoints"]\n[notify]\nwebhook = "{url}"\n',
            encoding="utf-8",
        )
        code, out, err = run(["analyze", str(config)], cwd=tmp)
    leaks = []
    if any(s in out + err for s in SECRETS):
        leaks.append("stdout/stderr")
    for path in sorted(p for p in tmp.rglob("*") if p.is_file() and p.name != config.name):
        if path.suffix != ".duckdb" and any(s.encode() in path.read_bytes() for s in SECRETS):
            leaks.append(str(path.relative_to(tmp)))
    outbox = [p for p in tmp.rglob("*.json") if "outbox" in str(p)]
    modes = sorted({oct(p.stat().st_mode & 0o777) for p in outbox})
    expected = "Basic " + base64.b64encode(b"hookuser7:s3cr3t-pw").decode()
    sent = f"{len(received)} POST(s), basic auth {'right' if expected in received else 'absent'}"
    return (
        f"exit {code}; secrets in: {', '.join(leaks) or 'nothing'}; outbox files "
        f"{', '.join(modes) or 'none'}; webhook got {sent}"
    )


# -- outputs ----------------------------------------------------------------------------------


def case_report_is_the_input(tmp: Path) -> str:
    data = metric_csv(tmp / "in.csv")
    before = digest(data)
    code, _, err = run(["detect", str(data), "--report", str(data)], cwd=tmp)
    return f"{said(code, err)}; in.csv {'unchanged' if digest(data) == before else 'OVERWRITTEN'}"


def case_config_report_outside_the_output_folder(tmp: Path) -> str:
    data = metric_csv(tmp / "data.csv")
    before = digest(data)
    (tmp / "out").mkdir()
    config = tmp / "perfsleuth.toml"
    config.write_text(
        f'[store]\npath = "s.duckdb"\n[output]\ndir = "out"\n[[sources]]\npath = "{data}"\n'
        '[analyze]\nfamilies = ["changepoints"]\nreport = "../data.csv"\n',
        encoding="utf-8",
    )
    code, _, err = run(["analyze", str(config)], cwd=tmp)
    same = "unchanged" if digest(data) == before else "OVERWRITTEN"
    return f"{said(code, err)}; data.csv {same}"


# -- bounds -----------------------------------------------------------------------------------


def _prometheus_config(tmp: Path, port: int, *, retries: int = 0) -> Path:
    config = tmp / "prom.toml"
    config.write_text(
        f'[store]\npath = "s.duckdb"\n[output]\ndir = "out"\n'
        f'[[sources]]\nkind = "prometheus"\nurl = "http://127.0.0.1:{port}"\n'
        'queries = { latency = "latency_seconds" }\nunit = "s"\nstep = "5s"\nrange = "10m"\n'
        f'retries = {retries}\ntimeout = "30s"\n'
        '[analyze]\nfamilies = ["changepoints"]\n',
        encoding="utf-8",
    )
    return config


def _answering(body: Callable[[Any], None]) -> type[BaseHTTPRequestHandler]:
    class Answer(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with contextlib.suppress(OSError):  # the client gave up: fine
                body(self)

        def log_message(self, *args: Any) -> None:
            pass

    return Answer


def case_prometheus_endless_answer(tmp: Path) -> str:
    def endless(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()
        handler.wfile.write(b'{"status":"success","data":{"resultType":"matrix","result":[')
        chunk = b'{"metric":{},"values":[[1,"1"]]},' * 4096
        while True:
            handler.wfile.write(chunk)

    with serve(_answering(endless)) as port:
        began = time.monotonic()
        code, _, err = run(["analyze", str(_prometheus_config(tmp, port))], cwd=tmp, timeout=120)
    return f"{said(code, err)} (after {time.monotonic() - began:.0f} s, under a 2 GiB limit)"


def case_prometheus_nul_body(tmp: Path) -> str:
    def nul(handler: Any) -> None:
        data = b"\0" * 64
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    with serve(_answering(nul)) as port:
        code, _, err = run(["analyze", str(_prometheus_config(tmp, port))], cwd=tmp)
    return said(code, err)


def case_prometheus_non_numeric_values(tmp: Path) -> str:
    def words(handler: Any) -> None:
        data = (
            b'{"status":"success","data":{"resultType":"matrix","result":'
            b'[{"metric":{"instance":"a"},"values":[[1714521600,"fast"],[1714521605,"slow"]]}]}}'
        )
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    with serve(_answering(words)) as port:
        code, _, err = run(["analyze", str(_prometheus_config(tmp, port))], cwd=tmp)
    return said(code, err)


def case_unbounded_retries(tmp: Path) -> str:
    with serve(_answering(lambda handler: handler.send_error(503))) as port:
        config = _prometheus_config(tmp, port, retries=1000)
        code, _, err = run(["analyze", str(config)], cwd=tmp, timeout=120)
    return said(code, err)


def case_watch_checks_all_failed(tmp: Path) -> str:
    config = tmp / "w.toml"
    config.write_text(
        f'[store]\npath = "s.duckdb"\n[[sources]]\npath = "{tmp / "missing.csv"}"\n'
        '[analyze]\nfamilies = ["changepoints"]\n',
        encoding="utf-8",
    )
    code, _, err = run(["watch", str(config), "--checks", "2", "--every", "20ms"], cwd=tmp)
    lines = [line for line in err.splitlines() if line.strip()]
    return f"exit {code}; last line: {lines[-1][:160] if lines else '(none)'}"


CASES: list[Callable[[Path], str]] = [
    case_store_is_a_csv_file,
    case_truncated_store,
    case_corrupt_block,
    case_damaged_wal_header_then_a_write,
    case_killed_run,
    case_report_and_analyze_beside_a_live_collector,
    case_webhook_url_with_credentials,
    case_report_is_the_input,
    case_config_report_outside_the_output_folder,
    case_prometheus_endless_answer,
    case_prometheus_nul_body,
    case_prometheus_non_numeric_values,
    case_unbounded_retries,
    case_watch_checks_all_failed,
]


def main() -> None:
    import perfsleuth

    print(f"# perfsleuth from {Path(perfsleuth.__file__).parent}")
    only = sys.argv[1:]
    for case in CASES:
        name = case.__name__.removeprefix("case_")
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="perfsleuth-16a-") as folder:
            try:
                outcome = case(Path(folder))
            except Exception as exc:  # a case that cannot run says so; the others still run
                outcome = f"case failed to run: {type(exc).__name__}: {exc}"
        print(f"| {name} | {outcome.replace('|', '/')} |", flush=True)


if __name__ == "__main__":
    main()
