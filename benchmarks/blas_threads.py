"""BLAS threads per family: CPU and wall time with OpenBLAS's default threads and with one.

On a busy host OpenBLAS's threads spin while they wait for each other, and the spin counts as
CPU (the segments detector: 1,800 windows at load 4.7 took 6.1 s of CPU with two threads, 1.2 s
with one). This script measures every family's typical workload both ways, in fresh processes
(one per workload and arm, one warm-up call then one timed call), first at the machine's own
load and then with a co-tenant (``stress-ng --cpu N`` at the script's own nice, started and
stopped here), and prints the CPU and wall seconds side by side with their ratios, the load
average (1 min) before each run, and whether the results are bit for bit the same (a SHA-256 of
every field of the returned analysis or fit: arrays by their bytes, floats by ``repr``).

Arms: ``default`` runs with perfsleuth's BLAS limit switched off (``perfsleuth.blas`` made a
no-op), i.e. OpenBLAS's default of one thread per CPU; ``one`` runs inside
``threadpool_limits(1, "blas")`` set here; ``shipped`` runs perfsleuth as it is.

Workloads: the changepoints, processes and bottleneck detectors on the demo's data
(``perfsleuth.demo``), the segments detector on ``segmentation.py``'s 1,800 windows × 14 types,
the workload detector on 9,130 of them (a month of 5-minute windows), and the entry points users
call directly: ``find_change_points`` on a 10⁵-point real-shaped series (``changepoints.py``),
``fit_mix_model`` LAR and OLS on 9,130 × 96 (``mix_model.py``) and one fleet task of 100 nodes
(``fleet.py``'s data, ``scan_task``: the fleet scan's unit of work).

Run (a recording: the co-tenant matters)::

    machine record .venv/bin/python benchmarks/blas_threads.py [--only segments,fleet]
        [--stress 2] [--no-quiet] [--repeat 1]
    .venv/bin/python benchmarks/blas_threads.py --explain fit_mix_model  # what differs, how much
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _bench(name: str) -> Any:
    """A sibling benchmark module (for its data generators)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the workloads: each returns the call to time (set-up done outside it) ---


def _demo(attr: str) -> Any:
    from perfsleuth.demo import demo_data

    return getattr(demo_data(7), attr)


def changepoints_detector() -> Callable[[], Any]:
    from perfsleuth.changepoints.detector import ChangePointDetector

    frame = _demo("metric")
    return lambda: ChangePointDetector().analyse(frame)


def changepoints_kernel() -> Callable[[], Any]:
    from perfsleuth import find_change_points

    values, _ = _bench("changepoints").real_shaped(100_000, 10, seed=100_010)
    return lambda: find_change_points(values)


def workload_detector() -> Callable[[], Any]:
    from perfsleuth.workload.detector import MixAnomalyDetector

    bench = _bench("segmentation")  # 9,130 windows (a month of 5 minutes) × 14 types
    frame = bench.detector_frame(*bench.make_data(9_130))
    return lambda: MixAnomalyDetector().analyse(frame)


def workload_kernel() -> Callable[[], Any]:
    from perfsleuth import fit_mix_model

    x, y = _bench("mix_model").workload(9_130, 96, seed=9_226)
    return lambda: (fit_mix_model(x, y, method="lar"), fit_mix_model(x, y, method="ols"))


def segments_detector() -> Callable[[], Any]:
    from perfsleuth.segments.detector import SegmentDetector

    bench = _bench("segmentation")
    frame = bench.detector_frame(*bench.make_data(1_800))
    return lambda: SegmentDetector().analyse(frame)


def processes_detector() -> Callable[[], Any]:
    from perfsleuth.demo import demo_data
    from perfsleuth.processes.detector import ProcessDetector

    data = demo_data(7)
    return lambda: ProcessDetector(rules=data.rules).analyse(data.processes)


def fleet_task() -> Callable[[], Any]:
    from perfsleuth.fleet import plan, scan_task

    root = Path(tempfile.mkdtemp(prefix="perfsleuth-blas-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    _bench("fleet").generate(root, nodes=100, hours=24, procs=200, seed=7)
    (task,) = plan(root, tasks=1)
    return lambda: scan_task(task)


def bottleneck_detector() -> Callable[[], Any]:
    from perfsleuth.bottleneck.detector import BottleneckDetector
    from perfsleuth.demo import _upgrade_catalogue

    frame = _demo("counters")
    detector = BottleneckDetector(upgrades=str(_upgrade_catalogue()), target_factor=2.0)
    return lambda: detector.analyse(frame)


ARMS = ("default", "one", "shipped")

WORKLOADS: dict[str, Callable[[], Callable[[], Any]]] = {
    "changepoints": changepoints_detector,
    "find_change_points": changepoints_kernel,
    "workload": workload_detector,
    "fit_mix_model": workload_kernel,
    "segments": segments_detector,
    "processes": processes_detector,
    "fleet": fleet_task,
    "bottleneck": bottleneck_detector,
}


# --- one measurement (in a fresh process) ---


def _canonical(obj: Any, out: Any, depth: int = 0) -> None:
    """Feed every value of ``obj`` to the hash ``out``, exactly (arrays by their bytes)."""
    import numpy as np
    import pandas as pd

    if depth > 40:
        raise RecursionError("result nested too deep to hash")
    if isinstance(obj, np.ndarray):
        out.update(f"nd{obj.dtype}{obj.shape}".encode())
        out.update(obj.tobytes() if obj.dtype != object else repr(obj.tolist()).encode())
    elif isinstance(obj, pd.DataFrame | pd.Series | pd.Index):
        out.update(repr(type(obj)).encode())
        _canonical(pd.util.hash_pandas_object(obj, index=True).to_numpy(), out, depth + 1)
        if isinstance(obj, pd.DataFrame):
            for column in obj.columns:
                _canonical(obj[column].to_numpy(), out, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out.update(type(obj).__name__.encode())
        for field in dataclasses.fields(obj):
            out.update(field.name.encode())
            _canonical(getattr(obj, field.name), out, depth + 1)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            out.update(repr(key).encode())
            _canonical(value, out, depth + 1)
    elif isinstance(obj, list | tuple):
        out.update(f"seq{len(obj)}".encode())
        for value in obj:
            _canonical(value, out, depth + 1)
    elif type(obj).__repr__ is object.__repr__:  # its repr is its address: hash its state
        out.update(type(obj).__name__.encode())
        state = getattr(obj, "__dict__", None) or {
            slot: getattr(obj, slot, None) for slot in getattr(type(obj), "__slots__", ())
        }
        _canonical(state, out, depth + 1)
    else:  # functions' reprs carry their address
        out.update(re.sub(r" at 0x[0-9a-f]+", "", repr(obj)).encode())


class _NoLimit:
    """Stands for threadpoolctl's controller: limits nothing."""

    def limit(self, **_: object) -> Any:
        return self

    def restore_original_limits(self) -> None:
        pass


@contextlib.contextmanager
def _arm(arm: str) -> Iterator[None]:
    from threadpoolctl import threadpool_limits

    if arm == "one":
        with threadpool_limits(limits=1, user_api="blas"):
            yield
        return
    if arm == "default":  # perfsleuth's own limit (perfsleuth.blas) made a no-op
        import perfsleuth.blas

        perfsleuth.blas._controller = _NoLimit  # type: ignore[assignment]
    yield  # shipped: as a user runs it


def child(name: str, arm: str) -> None:
    """Time workload ``name`` in arm ``arm``; print one JSON line."""
    call = WORKLOADS[name]()
    with _arm(arm):
        call()  # warm-up: imports, caches, first-call costs out of the timing
        cpu, wall = time.process_time(), time.perf_counter()
        result = call()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    digest = hashlib.sha256()
    _canonical(result, digest)
    print(json.dumps({"cpu": cpu, "wall": wall, "digest": digest.hexdigest()[:16]}))


def explain(name: str) -> None:
    """Where workload ``name``'s result differs between the arms: each differing field and its
    largest relative difference (one process, the default arm's call first)."""
    import numpy as np

    call = WORKLOADS[name]()
    with _arm("default"):
        default = call()
    with _arm("one"):
        one = call()

    def walk(a: Any, b: Any, path: str) -> None:
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            for field in dataclasses.fields(a):
                walk(getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}")
        elif isinstance(a, list | tuple) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
        elif isinstance(a, np.ndarray | float) and np.issubdtype(np.asarray(a).dtype, np.floating):
            x, y = np.asarray(a), np.asarray(b)
            if x.shape == y.shape and not np.array_equal(x, y, equal_nan=True):
                scale = np.maximum(np.abs(x), np.finfo(float).tiny)
                print(f"  {path}: largest relative difference {np.max(np.abs(x - y) / scale):.2g}")
        elif repr(a) != repr(b):
            print(f"  {path}: {a!r} != {b!r}")

    print(f"{name}: fields whose values differ, default against one thread")
    walk(default, one, "result")


# --- the table ---


def _run(name: str, arm: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, arm],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # sets in the results iterate alike
    )
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def table(names: list[str], condition: str, repeat: int) -> None:
    print(f"\n{condition} ({time.strftime('%H:%M:%S', time.gmtime())} UTC)")
    print(
        f"{'':<20}{'CPU s: default':>15}{'one':>7}{'shipped':>9}{'ratio':>7}"
        f"{'wall s: default':>17}{'one':>7}{'shipped':>9}{'ratio':>7}"
        f"{'load':>7}  same bits (one/shipped)"
    )
    for name, again in ((n, r) for r in range(repeat) for n in names):
        load = os.getloadavg()[0]
        runs = {arm: _run(name, arm) for arm in ARMS}
        cpu = [runs[arm]["cpu"] for arm in ARMS]
        wall = [runs[arm]["wall"] for arm in ARMS]
        same = [runs[arm]["digest"] == runs["default"]["digest"] for arm in ARMS[1:]]
        label = f"{name} #{again + 1}" if repeat > 1 else name
        print(
            f"{label:<20}{cpu[0]:>15.2f}{cpu[1]:>7.2f}{cpu[2]:>9.2f}{cpu[0] / cpu[1]:>7.2f}"
            f"{wall[0]:>17.2f}{wall[1]:>7.2f}{wall[2]:>9.2f}{wall[0] / wall[1]:>7.2f}"
            f"{load:>7.2f}  {'/'.join('yes' if s else 'NO' for s in same)}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "ARM"), help=argparse.SUPPRESS)
    parser.add_argument("--only", help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    parser.add_argument("--stress", type=int, default=2, help="stress-ng --cpu N (0: none)")
    parser.add_argument("--no-quiet", action="store_true", help="skip the run without stress")
    parser.add_argument("--explain", metavar="WORKLOAD", help="print where its results differ")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every workload (spread)")
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.explain:
        explain(args.explain)
        return
    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; known: {', '.join(WORKLOADS)}")
    import numpy  # noqa: F401 -- numpy and scipy each carry their own BLAS: load both
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    blas = [
        f"{i['internal_api']} {i['version']} ({i['num_threads']} threads)"
        for i in threadpool_info()
    ]
    print(
        f"CPU and wall seconds of one timed call (after one warm-up) per workload and arm, each "
        f"in a fresh process: default = BLAS's own threads ({'; '.join(blas)}), one = one "
        f"thread (threadpool_limits), shipped = as perfsleuth runs it; ratio = default / one; "
        f"load = 1-min load average before the workload's three runs; same bits = the result "
        f"of one and of shipped against default's"
    )
    if not args.no_quiet:
        table(names, "the machine's own load", args.repeat)
    if args.stress:
        stress = shutil.which("stress-ng")
        if stress is None:
            sys.exit("stress-ng not found")
        hog = subprocess.Popen(
            [stress, "--cpu", str(args.stress), "--timeout", "3600s", "--quiet"],
            stdin=subprocess.DEVNULL,
        )
        try:
            time.sleep(30)  # let the load average see the co-tenant
            table(names, f"co-tenant stress-ng --cpu {args.stress} (nice 0)", args.repeat)
        finally:
            hog.terminate()
            hog.wait(timeout=30)


if __name__ == "__main__":
    main()
