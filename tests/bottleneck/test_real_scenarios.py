"""Plumbing with real components: fio in a real cgroup, watched by perfsleuth's collector.

The live accuracy experiment (workloads beside co-tenants, judged on the bottleneck named) is a
script, ``scripts/bottleneck_real.py live``, whose results ``docs/bottleneck.md`` records; the
recorded corpus is judged deterministically in ``test_corpus.py``. This test asserts only what
holds however busy the machine is: the counters a workload's cgroup produces reach the store
and the model under their exact names and units, and they add up to what fio itself did —
fio reads a file of known size once (direct I/O, so every byte comes from the device) and the
bytes the cgroup's io.stat counted, summed over the samples, match fio's own count.

Needs root (cgroups) and fio.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from perfsleuth.bottleneck.importers import to_model_counters
from perfsleuth.bottleneck.linux import add_to_cgroup, temporary_cgroup
from perfsleuth.bottleneck.workloads import fio_path
from perfsleuth.collect import Collector
from perfsleuth.sources.procfs import block_device_of
from perfsleuth.store import Store
from tests.support.processes import die_with_parent

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SIZE = 32 << 20
"""Bytes fio reads: enough to span several samples, little enough for any disk under load."""

TOLERANCE = 1 << 20
"""Bytes the count may miss, or read beside fio's reads: file metadata and what the shell and
fio load of themselves (72 KiB seen when cached; on a fresh machine fio's own binary, not yet
cached, is read as well and is allowed for on top: 1.06 MiB seen)."""


def _unavailable() -> str | None:
    if fio_path() is None:
        return "fio is not installed (scripts/install-system-deps.sh)"
    if os.geteuid() != 0:
        return "creating cgroups needs root"
    root = Path("/sys/fs/cgroup")
    if not ((root / "cgroup.controllers").exists() or (root / "blkio").is_dir()):
        return "no cgroup I/O controller"
    return None


def _write(path: Path, size: int) -> None:
    block = os.urandom(1 << 20)
    with path.open("wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)
        handle.flush()
        os.fsync(handle.fileno())


def _total(frame: pd.DataFrame, counter: str) -> float:
    """Σ rate × interval of a rate counter: what it counted over the collection."""
    wide = frame.pivot_table(index="time", columns="counter", values="value", aggfunc="sum")
    both = wide[[counter, "collector.interval_s"]].dropna()
    return float((both[counter] * both["collector.interval_s"]).sum())


@pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))
def test_fio_reads_reach_the_model_as_the_cgroups_bytes(tmp_path: Path) -> None:
    fio = fio_path()
    assert fio is not None
    data = Path("/var/tmp") / f"perfsleuth-plumbing-{os.getpid()}.bin"
    device = block_device_of(data.parent)
    name = f"perfsleuth-plumbing-{os.getpid()}"
    command = [
        fio,
        "--name=plumbing",
        f"--filename={data}",
        f"--size={SIZE}",
        "--rw=read",
        "--bs=1M",
        "--direct=1",
        "--ioengine=psync",
        "--output-format=json",
        # a process's I/O in the interval it exits in is lost where io.stat does not count
        # (the /proc/<pid>/io fallback): one process (threads), lingering for two samples
        "--thread",
        "--name=linger",
        "--stonewall",
        "--ioengine=null",
        "--rw=read",
        "--bs=4k",
        "--size=4k",
        "--time_based",
        "--runtime=2",
        "--rate_iops=1",
    ]
    # fio's binary, its libraries and the shell are read from disk when not cached, and the
    # cgroup counts those reads too: a run before the measurement puts them in the page cache
    subprocess.run(
        ["/bin/sh", "-c", 'exec "$@"', "warm", fio, "--version"], check=True, capture_output=True
    )
    try:
        _write(data, SIZE)
        with (
            temporary_cgroup(name) as group,
            Store(tmp_path / "collect.duckdb") as store,
        ):
            collector = Collector(store, node="plumbing", batch=1000, cgroup=name, device=device)
            stop = threading.Event()
            sampler = threading.Thread(target=collector.run, args=(0.5, stop))
            sampler.start()
            try:
                time.sleep(1.2)  # a baseline sample before fio starts
                # fio runs nothing before it is in the cgroup: it waits for "go" on stdin
                process = subprocess.Popen(
                    ["/bin/sh", "-c", 'read go && exec "$@"', "plumbing", *command],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    preexec_fn=die_with_parent,  # noqa: PLW1509 (only prctl runs in the child)
                )
                try:
                    add_to_cgroup(group, process.pid)
                    out, err = process.communicate("go\n", timeout=300)
                finally:
                    if process.poll() is None:
                        process.kill()
                        process.wait()
                assert process.returncode == 0, err
                time.sleep(1.2)  # a sample after fio is done
            finally:
                stop.set()
                sampler.join(timeout=60)
            frame = store.read_frame("counter")
    finally:
        data.unlink(missing_ok=True)
    assert not sampler.is_alive()
    read = float(json.loads(out[out.index("{") :])["jobs"][0]["read"]["io_bytes"])
    assert read == SIZE

    units = frame.drop_duplicates("counter").set_index("counter")["unit"]
    assert units["workload.io.read_bytes"] == "bytes/s"
    assert units[f"disk.{device}.read_bytes"] == "bytes/s"
    assert units["collector.interval_s"] == "s"
    counted = _total(frame, "workload.io.read_bytes")
    loaded = Path(fio).stat().st_size  # in case the page cache dropped the binary since the warm-up
    assert read - TOLERANCE <= counted <= read + TOLERANCE + loaded, (counted, read)
    # the device saw the cgroup's reads and whatever its neighbours read
    assert _total(frame, f"disk.{device}.read_bytes") >= read - TOLERANCE

    # into the model's names: the workload's cgroup as cg.*, the device as disk.*
    model = to_model_counters(frame)
    assert {"cg.io.read_bytes", "disk.read_bytes"} <= set(model["counter"])
    per_sample = model[model["counter"] == "cg.io.read_bytes"].set_index("time")["value"]
    stored = frame[frame["counter"] == "workload.io.read_bytes"].set_index("time")["value"]
    pd.testing.assert_series_equal(
        per_sample.sort_index(), stored.sort_index(), check_names=False, check_freq=False
    )
