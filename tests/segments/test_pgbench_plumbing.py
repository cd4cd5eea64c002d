"""Real PostgreSQL + pgbench → the tables ``perfsleuth workload --source aggregated`` reads.

A plumbing test of the live experiment's data path (``scripts/cherkasova_experiment.py``; its
accuracy is recorded in docs/segments.md, not tested here): pgbench's per-transaction logs
become the per-window, per-type table, the server's own CPU a per-second table, and the CLI's
reader joins them. Everything asserted is exact — counts, names, units — so the test passes
however busy the machine is.
"""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from perfsleuth.errors import PerfsleuthError
from perfsleuth.sources.pgbench import read_pgbench
from tests.support.postgres import find_postgres_bindir, temporary_postgres
from tests.support.processes import die_with_parent

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {"cheap": "SELECT 1;\n", "dear": "SELECT count(*) FROM generate_series(1, 20000);\n"}


def _missing() -> str | None:
    try:
        bindir = find_postgres_bindir()
    except PerfsleuthError as exc:
        return str(exc)
    return None if (bindir / "pgbench").is_file() else f"no pgbench in {bindir}"


if reason := _missing():  # pragma: no cover - the CI machine has the Debian packages
    pytest.skip(reason, allow_module_level=True)


def _experiment() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "cherkasova_experiment", ROOT / "scripts" / "cherkasova_experiment.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_pgbench_counts_names_and_server_cpu_reach_the_frame(tmp_path: Path) -> None:
    from perfsleuth.cli.inputs import WorkloadFormat, workload_source
    from perfsleuth.sources.load import read_source

    exp = _experiment()
    logs = tmp_path / "logs"
    logs.mkdir()
    files = []
    for name, sql in SCRIPTS.items():
        path = tmp_path / f"{name}.sql"
        path.write_text(sql)
        files.append(f"--file={path}@1")
    with temporary_postgres(tmp_path) as server:
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        groups = {g: exp.Group() for g in ("pgbench", "hog", "cotenant")}
        args = [str(server.tool("pgbench")), "-n", "--client=2", "--jobs=1", "--time=6",
                "--rate=40", "--random-seed=7", "--log", "--log-prefix=run", *files]  # fmt: skip
        with exp.Sampler(postmaster, groups, offset=0.3) as sampler:
            process = subprocess.Popen(
                args,
                env=server.env(),
                cwd=logs,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # noqa: PLW1509 - no threads touch it before exec
            )
            groups["pgbench"].start(process)
            assert process.stdout is not None
            with process.stdout:
                text = process.stdout.read().decode(errors="replace")
            assert groups["pgbench"].reap(process) == 0, text
        raw = sampler.frame()
    (line,) = [line for line in text.splitlines() if "processed:" in line]
    processed = int(line.split(":")[1].split("/")[0])
    assert processed > 0

    frame = read_pgbench(logs, scripts=list(SCRIPTS)).workload("1s")
    assert int(sum(frame[f"n[{t}]"].sum() for t in SCRIPTS)) == processed
    table = exp.aggregated_table(frame)
    assert sorted(set(table["type"])) == sorted(SCRIPTS)
    assert int(table["count"].sum()) == processed
    table.to_csv(tmp_path / "agg_1s.csv", index=False)
    cores = os.cpu_count() or 1
    cpu = exp.cpu_tables(raw, cores)["db"]
    # one row per second sampled in which the clock ticked: only the sampler's last sample at
    # exit may follow the one before within a tick (a 6 of 7 rows failure under load)
    ticked = int((raw["jiffies"].diff().iloc[1:] > 0).sum())
    assert len(cpu) == ticked >= len(raw) - 2
    assert cpu["cpu_util"].between(0, 1).all() and (cpu["cpu_cores"] == cores).all()
    cpu.to_csv(tmp_path / "cpu_db.csv", index=False)

    spec = workload_source(
        [tmp_path / "agg_1s.csv"], WorkloadFormat.aggregated, cpu=tmp_path / "cpu_db.csv"
    )
    joined, _ = read_source(spec)
    assert sorted(c for c in joined.columns if c.startswith("n[")) == [
        f"n[{t}]" for t in sorted(SCRIPTS)
    ]
    assert (joined["window_s"] == 1.0).all()
    # the CPU table joins every window the samples wholly cover: all but the partial edges
    windows = table["time"].nunique()
    assert windows - 2 <= len(joined) <= windows
    assert joined["cpu_util"].notna().all() and (joined["cpu_cores"] == cores).all()
    inner = table[table["time"].isin(joined["time"].astype("int64") // 10**9)]
    assert int(sum(joined[f"n[{t}]"].sum() for t in SCRIPTS)) == int(inner["count"].sum())
    assert math.isclose(
        float(np.sum([joined[f"rt_sum[{t}]"].sum() for t in SCRIPTS])),
        float(inner["rt_sum"].sum()),
        rel_tol=1e-6,
    )
