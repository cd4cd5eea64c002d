"""Real PostgreSQL + pgbench: the throw-away server, and a short changing-mix run end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.errors import PerfsleuthError
from perfsleuth.frames import workload_types
from perfsleuth.sources.files import read_frame
from perfsleuth.sources.pgbench import read_pgbench
from tests.support.postgres import find_postgres_bindir, temporary_postgres

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TYPES = ["branch_report", "point_select", "range_scan", "small_update"]


def _have_postgres() -> str | None:
    try:
        bindir = find_postgres_bindir()
    except PerfsleuthError as exc:
        return str(exc)
    if not (bindir / "pgbench").is_file():
        return f"no pgbench in {bindir}"
    return None


skip_reason = _have_postgres()
if skip_reason:  # pragma: no cover - the CI machine has the Debian packages
    pytest.skip(skip_reason, allow_module_level=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_temporary_server_starts_listens_locally_and_cleans_up(tmp_path: Path) -> None:
    with temporary_postgres(tmp_path) as server:
        root = server.root
        assert server.host == "127.0.0.1" and server.port > 0
        assert server.psql("SHOW listen_addresses").strip() == "127.0.0.1"
        assert server.psql("SHOW unix_socket_directories").strip() == str(server.socket_dir)
        assert server.psql("SELECT 6 * 7").strip() == "42"
        pid = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        assert _alive(pid)
        if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as the postgres user
            assert server.data_dir.stat().st_uid != 0
    assert not _alive(pid)
    assert not root.exists()


def test_server_stops_when_the_body_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="boom"), temporary_postgres(tmp_path) as server:
        pid = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        raise RuntimeError("boom")
    assert not _alive(pid)
    assert not server.root.exists()


def test_bad_sql_is_a_source_error(tmp_path: Path) -> None:
    with temporary_postgres(tmp_path) as server, pytest.raises(PerfsleuthError, match="psql"):
        server.psql("SELEC 1")


@pytest.mark.slow
def test_pgbench_mix_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "mix"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "pgbench_mix.py"),
            "--out",
            str(out),
            "--duration",
            "30",
            "--window",
            "5s",
            "--scale",
            "1",
            "--jitter",
            "0",  # the phases' own weights, so the shares below are predictable
            "--pg-parent",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    # the frame honours the workload contract after a round trip through Parquet
    frame = read_frame(out / "workload.parquet", "workload")
    assert workload_types(frame) == TYPES
    assert 5 <= len(frame) <= 10  # ~30 s of load in 5 s windows
    assert (frame["window_s"] == 5.0).all()
    for t in TYPES:
        assert frame[f"n[{t}]"].sum() > 0, t
        busy = frame[f"n[{t}]"] > 0
        mean = frame.loc[busy, f"rt_sum[{t}]"].sum() / frame.loc[busy, f"n[{t}]"].sum()
        assert 10e-6 < mean < 1.0, (t, mean)  # plausible: 10 µs .. 1 s
    assert frame["cpu_util"].between(0, 1).all() and frame["cpu_util"].max() > 0

    # the logs parse strictly (no bad line) and agree with the frame
    logs = out / "logs"
    run_order = ["point_select", "small_update", "range_scan", "branch_report"]  # -f order
    tx = read_pgbench(logs, scripts=run_order, strict=True)
    assert tx.rejects.count == 0
    assert frame.filter(regex=r"^n\[").to_numpy().sum() == len(tx.records)
    means = tx.records.groupby("type", observed=True)["latency"].mean()
    assert means["branch_report"] > 3 * means["point_select"]  # clearly different costs

    # the mix really changes between phases
    phases = json.loads((out / "phases.json").read_text())
    assert [p["name"] for p in phases] == [
        "steady",
        "read_heavy",
        "write_heavy",
        "reports",
        "surge",
    ]
    share = {}
    for p in phases:
        inside = tx.records["time"].between(pd.Timestamp(p["start"]), pd.Timestamp(p["end"]))
        counts = tx.records.loc[inside, "type"].value_counts()
        share[p["name"]] = counts / counts.sum()
        assert counts.sum() > 0, p["name"]
    assert share["read_heavy"]["point_select"] > 0.8
    assert share["read_heavy"].get("branch_report", 0) == 0  # weight 0 in that phase
    assert share["write_heavy"]["small_update"] > 0.45
    assert share["reports"]["branch_report"] > 0.07
    assert len(list(logs.iterdir())) >= 2 * len(phases)  # -j 2: a log per thread
    assert (out / "summary.txt").read_text().startswith("10 file(s)")
