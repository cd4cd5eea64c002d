"""Time per bottleneck inference, one window (DESIGN §4 target: ≤ 50 ms).

Simulated windows of the six scenarios (12 samples averaged, every counter of the built-in Linux
model) are inferred one at a time; the script prints the time per inference (median, 90th
percentile, worst) and, for scale, the time of one model evaluation for a batch of workloads;
then the synthetic recovery over the same windows: how often the bottleneck is right, and the
relative error of each scenario's key parameters (its load and request size).

With ``--real``, the recorded real corpora instead (``tests/data/bottleneck/corpus-r*.parquet``
and ``controlled/corpus-r*.parquet``: the collector's counters of 15 recordings each, one window
per recording) goes end to end
through the CLI, ``perfsleuth bottleneck infer FILE`` in a fresh process, each file ``--repeat``
times. Printed per file: the wall time and the CPU time (user + system: on a shared machine the
wall time is mostly waiting for a CPU) per window, and the CPU time less what starting the CLI at
all takes (``perfsleuth --help``, the peer every command pays): the per-window cost of reading,
mapping, inferring and writing the findings, as a ratio to the 50 ms target. The commands run
from compiled bytecode (a scratch cache, warmed by one untimed run), as an installed
perfsleuth does, even where ``PYTHONDONTWRITEBYTECODE`` is set.

Run: .venv/bin/python benchmarks/bottleneck_inference.py [--windows 60]
     .venv/bin/python benchmarks/bottleneck_inference.py --real [--repeat 3]
     .venv/bin/python benchmarks/bottleneck_inference.py --real --compare /tmp/old/src
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import atexit  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from perfsleuth.bottleneck.kernels.infer import infer  # noqa: E402
from perfsleuth.bottleneck.kernels.model import load_model  # noqa: E402
from perfsleuth.datasets.counters import SCENARIOS, simulate_scenario  # noqa: E402

TARGET_MS = 50.0
# The parameters each scenario is about (as in tests/bottleneck/test_infer.py).
KEY = {
    "seq_read": ("seq_read_bw",),
    "seq_write": ("seq_write_bw",),
    "rand_read": ("rand_read_rate", "rand_read_size"),
    "rand_write": ("rand_write_rate", "rand_write_size"),
    "cpu": ("app_cpu",),
    "memory": ("rand_read_rate", "rand_read_size"),
}


CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "bottleneck"
CLI = Path(sys.executable).parent / "perfsleuth"


# An installed perfsleuth runs from compiled bytecode; with PYTHONDONTWRITEBYTECODE set (as in
# some shells) every call would compile perfsleuth's own modules again, so the commands write
# their bytecode to a scratch cache instead (kept out of the source tree) and are warmed first.
_PYCACHE = tempfile.mkdtemp(prefix="perfsleuth-pycache-")
atexit.register(shutil.rmtree, _PYCACHE, ignore_errors=True)


def _environment(source: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = _PYCACHE
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _timed(command: list[str], source: Path | None = None) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of ``command`` run to its end (with
    ``source``: perfsleuth imported from that ``src`` directory instead)."""
    env = _environment(source)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def _best(command: list[str], repeat: int) -> tuple[float, float]:
    """The least wall time and the least CPU time of ``repeat`` runs (after one to warm the
    bytecode cache)."""
    _timed(command)
    runs = [_timed(command) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def real(repeat: int) -> None:
    """End to end through the CLI on the recorded real counters.

    On a shared machine the wall time is mostly waiting for a CPU; the CPU time the command
    used is what it would take on an idle one, so both are printed."""
    start_wall, start_cpu = _best([str(CLI), "--help"], repeat)
    print(
        f"bottleneck inference end to end through the CLI on recorded real counters "
        f"({CORPUS}); best of {repeat}; CLI start-up (perfsleuth --help): wall "
        f"{start_wall * 1000:.0f} ms, CPU {start_cpu * 1000:.0f} ms"
    )
    per_window = []
    for path in sorted(CORPUS.glob("**/corpus-r*.parquet")):
        windows = pd.read_parquet(path, columns=["entity"])["entity"].nunique()
        command = [str(CLI), "--format", "json", "bottleneck", "infer", str(path)]
        wall, cpu = _best(command, repeat)
        inference = (cpu - start_cpu) / windows
        per_window.append(inference)
        print(
            f"  {path.relative_to(CORPUS)}: {windows} windows; wall {wall:.2f} s "
            f"({wall / windows * 1000:.0f} "
            f"ms per window); CPU {cpu:.2f} s ({cpu / windows * 1000:.0f} ms per window, "
            f"{inference * 1000:.0f} ms without start-up: {inference * 1000 / TARGET_MS:.2f} × "
            f"the {TARGET_MS:.0f} ms target)"
        )
    # the cost of one more window: every recording in one file against one file's worth
    with tempfile.TemporaryDirectory() as scratch:
        whole = Path(scratch) / "corpus.parquet"
        frames = [pd.read_parquet(p) for p in sorted(CORPUS.glob("**/corpus-r*.parquet"))]
        pd.concat(frames, ignore_index=True).to_parquet(whole)
        windows = int(sum(f["entity"].nunique() for f in frames))
        command = [str(CLI), "--format", "json", "bottleneck", "infer", str(whole)]
        wall, cpu = _best(command, repeat)
    one_file = windows // len(frames)
    marginal = (cpu - (start_cpu + per_window[0] * one_file)) / (windows - one_file)
    print(
        f"  all {windows} windows in one file: wall {wall:.2f} s, CPU {cpu:.2f} s; each window "
        f"beyond the first file's {one_file} costs {marginal * 1000:.0f} ms of CPU "
        f"({marginal * 1000 / TARGET_MS:.2f} × the target)"
    )
    worst = max(per_window) * 1000
    print(
        f"  worst file: {worst:.0f} ms of CPU per window without start-up "
        f"({'met' if worst <= TARGET_MS else 'missed'}); load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )


def compare(source: Path, repeat: int) -> None:
    """CPU time of each corpus file through the CLI with this tree's perfsleuth and with the
    one in ``source`` (e.g. ``git archive HEAD src | tar -x -C /tmp/old``: ``/tmp/old/src``),
    the two alternating so that both meet the same load; the least of ``repeat`` each."""
    command = [sys.executable, "-c", "from perfsleuth.cli import main; main()"]
    print(f"CPU time through the CLI, this tree against {source} (least of {repeat}, alternating)")
    for path in sorted(CORPUS.glob("**/corpus-r*.parquet")):
        args = [*command, "--format", "json", "bottleneck", "infer", str(path)]
        new, old = [], []
        _timed(args), _timed(args, source)  # warm both bytecode caches
        for _ in range(repeat):
            new.append(_timed(args)[1])
            old.append(_timed(args, source)[1])
        print(
            f"  {path.relative_to(CORPUS)}: {min(old):.2f} s → {min(new):.2f} s "
            f"({(min(new) - min(old)) / 15 * 1000:+.0f} ms per window)"
        )
    print(f"  load average {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--windows", type=int, default=60)
    parser.add_argument("--real", action="store_true", help="the recorded corpus, via the CLI")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--compare", type=Path, help="with --real: against perfsleuth's src directory SRC"
    )
    args = parser.parse_args()
    if args.real and args.compare is not None:
        compare(args.compare, args.repeat)
        return
    if args.real:
        real(args.repeat)
        return
    model = load_model()
    names = list(SCENARIOS)
    windows = []
    runs = []
    for i in range(args.windows):
        run = simulate_scenario(names[i % len(names)], model=model, seed=i, samples=12)
        runs.append(run)
        windows.append(run.frame.groupby("counter")["value"].mean().to_dict())
    infer(model, windows[0])  # warm caches (imports, the scan grid)
    times = []
    right = 0
    errors: dict[tuple[str, str], list[float]] = {}
    for i, observed in enumerate(windows):
        started = time.perf_counter()
        result = infer(model, observed, seed=i)
        times.append(time.perf_counter() - started)
        right += result.bottleneck == runs[i].bottleneck
        for name in KEY[runs[i].scenario]:
            errors.setdefault((runs[i].scenario, name), []).append(
                abs(result.value(name) / runs[i].value(name) - 1)
            )
    ms = np.array(times) * 1000
    batch = np.tile(model.priors.median_w(), (68, 1))
    started = time.perf_counter()
    for _ in range(200):
        model.predict(batch)
    per_batch = (time.perf_counter() - started) / 200 * 1000
    print(
        f"bottleneck inference, {len(ms)} windows ({len(model.parameters)} parameters, "
        f"{len(model.counters)} counters, {len(model.spec.formula)} formulas)"
    )
    print(
        f"  per inference: median {np.median(ms):.1f} ms, 90th pct "
        f"{np.quantile(ms, 0.9):.1f} ms, worst {ms.max():.1f} ms (target ≤ {TARGET_MS:.0f} ms: "
        f"{'met' if np.median(ms) <= TARGET_MS else 'missed'} at the median)"
    )
    print(f"  model evaluation, batch of 68 workloads: {per_batch:.2f} ms")
    print(f"  bottleneck right in {right} of {len(ms)} windows ({right / len(ms):.1%})")
    print("  relative error of the key parameters (median / 95th pct / share within 10%):")
    for (scenario, name), values in errors.items():
        e = np.array(values)
        print(
            f"    {scenario:10s} {name:16s} {np.median(e):6.1%} / {np.quantile(e, 0.95):6.1%}"
            f" / {np.mean(e <= 0.10):6.1%}  (n = {len(e)})"
        )
    print(f"  load average while timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
