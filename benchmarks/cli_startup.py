"""The fixed cost of a perfsleuth command: CPU time of whole CLI calls, and what they import.

Each case is one ``perfsleuth`` call in a fresh process, run from compiled bytecode (a scratch
cache, warmed by one untimed call) as an installed perfsleuth runs, even where
``PYTHONDONTWRITEBYTECODE`` is set:

* ``--help``: the start-up every command pays (Typer and the command tree);
* ``no-op run``: the run path with no analysis work: ``bottleneck infer`` on a three-row
  counter CSV of a counter the model does not read (the command, the detector and its model
  set up, the file read and validated, no window to infer, JSON printed);
* ``infer 1 window``: ``bottleneck infer`` on one real recording (``cpu-bound#7`` of
  ``tests/data/bottleneck/controlled/corpus-r7.parquet``, written to its own Parquet file);
* ``infer 15 windows``: ``bottleneck infer`` on ``controlled/corpus-r7.parquet``, and on the
  same rows as a CSV;
* ``changepoints CSV``: ``changepoints`` on a real latency series
  (``benchmarks/data/changepoints/pg_cycle_change_latency.csv``);
* ``demo`` (with ``--demo``): ``perfsleuth demo`` into a scratch folder (several seconds).

Printed per case: the least and the median CPU time (user + system) of ``--repeat`` calls, and
the load average before and after. With ``--compare SRC`` every case also runs with the
perfsleuth in ``SRC`` (e.g. ``git archive HEAD src | tar -x -C /tmp/old``: ``/tmp/old/src``),
the two alternating so that both meet the same load.

``--imports`` prints, per case, the call's whole import time and the cumulative import time of
each heavy library where it is first imported (``python -X importtime``, one call; nested:
pandas includes numpy and pyarrow when it is what imports them).

``--stages`` splits the CPU time of ``bottleneck infer`` on ``controlled/corpus-r7.parquet``
into stages (each import, building the command, reading, validating, the analysis, printing),
the least of ``--repeat`` calls per stage (with ``--compare SRC``, both trees alternating).

``--answers SRC`` checks that every committed real counter file
(``tests/data/bottleneck/**/*.parquet`` and the incident recording's counters), read as Parquet
and as CSV, gives byte-identical ``--format json`` output with this tree and with ``SRC``.

Run: .venv/bin/python benchmarks/cli_startup.py [--repeat 7] [--compare /tmp/old/src] [--demo]
         [--only="--help,no-op run"]
     .venv/bin/python benchmarks/cli_startup.py --imports
     .venv/bin/python benchmarks/cli_startup.py --stages [--compare /tmp/old/src]
     .venv/bin/python benchmarks/cli_startup.py --answers /tmp/old/src
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
ONE_WINDOW = "cpu-bound#7"
HEAVY = ("pandas", "pyarrow", "numpy", "scipy", "pydantic", "typer", "duckdb", "jinja2", "plotly")
HEAVY += ("rich",)


@dataclass(frozen=True)
class Case:
    name: str
    args: Callable[[Path], list[str]]  # perfsleuth's arguments, given a scratch folder


def _cases(demo: bool) -> list[Case]:
    r7 = DATA / "bottleneck" / "controlled" / "corpus-r7.parquet"
    latency = ROOT / "benchmarks" / "data" / "changepoints" / "pg_cycle_change_latency.csv"
    cases = [
        Case("--help", lambda _: ["--help"]),
        Case("no-op run", lambda d: ["--format", "json", "bottleneck", "infer", str(d / "3.csv")]),
        Case(
            "infer 1 window",
            lambda d: ["--format", "json", "bottleneck", "infer", str(d / "one.parquet")],
        ),
        Case("infer 15 windows", lambda _: ["--format", "json", "bottleneck", "infer", str(r7)]),
        Case(
            "infer 15 windows CSV",
            lambda d: ["--format", "json", "bottleneck", "infer", str(d / "r7.csv")],
        ),
        Case("changepoints CSV", lambda _: ["--format", "json", "changepoints", str(latency)]),
    ]
    if demo:
        cases.append(Case("demo", lambda d: _demo(_fresh(d))))
    return cases


def _fresh(folder: Path) -> Path:
    """A new empty folder in ``folder`` (the demo writes a store: each call starts afresh)."""
    return Path(tempfile.mkdtemp(dir=folder))


def _demo(out: Path) -> list[str]:
    return ["--format", "json", "demo", "--out", str(out), "--store", str(out / "demo.duckdb")]


def _inputs(folder: Path) -> None:
    """The scratch inputs: three rows of an unknown counter, one real window, corpus-r7 as
    a CSV."""
    import pandas as pd

    (folder / "3.csv").write_text(
        "time,entity,counter,value\n"
        "2026-01-01T00:00:00Z,host,unknown.counter,1.0\n"
        "2026-01-01T00:00:01Z,host,unknown.counter,1.1\n"
        "2026-01-01T00:00:02Z,host,unknown.counter,0.9\n",
        encoding="utf-8",
    )
    frame = pd.read_parquet(DATA / "bottleneck" / "controlled" / "corpus-r7.parquet")
    frame[frame["entity"] == ONE_WINDOW].to_parquet(folder / "one.parquet")
    frame.to_csv(folder / "r7.csv", index=False)


# An installed perfsleuth runs from compiled bytecode; with PYTHONDONTWRITEBYTECODE set (as in
# some shells) every call would compile again, so the calls write their bytecode to a scratch
# cache (out of the source tree), warmed by a first call.
def _environment(source: Path | None, cache: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
    }
    env["PYTHONPYCACHEPREFIX"] = str(cache / ("old" if source is not None else "new"))
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _command(args: list[str], flags: tuple[str, ...] = ()) -> list[str]:
    # the console script's own code, so that PYTHONPATH can point at another tree
    return [sys.executable, *flags, "-c", "from perfsleuth.cli import main; main()", *args]


def _cpu(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """CPU time (user + system) of one call; it must exit 0 (no finding is at --fail-on)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(_command(args), check=True, capture_output=True, env=env, cwd=cwd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timings(cases: list[Case], repeat: int, old: Path | None, folder: Path) -> None:
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if old is not None:
        trees.append((str(old), old))
    print(
        f"CPU time (user + system) of one perfsleuth call, least and median of {repeat}"
        + (", the trees alternating" if old is not None else "")
        + f"; load average {_load()} (1/5/15 min) on {os.cpu_count()} CPUs at the start"
    )
    for case in cases:
        envs = {name: _environment(source, folder / "pycache") for name, source in trees}
        for env in envs.values():
            _cpu(case.args(folder), env, folder)  # warm the bytecode cache
        times: dict[str, list[float]] = {name: [] for name in envs}
        for _ in range(repeat):
            for name, env in envs.items():
                times[name].append(_cpu(case.args(folder), env, folder))
        cells = [
            f"{name}: {min(t):.3f} s (median {statistics.median(t):.3f})"
            for name, t in times.items()
        ]
        if old is not None:
            new, was = min(times["this tree"]), min(times[str(old)])
            cells.append(f"{was:.3f} → {new:.3f} s ({new - was:+.3f} s, {new / was:.2f}×)")
        print(f"  {case.name:24s} " + "; ".join(cells))
    print(f"  load average at the end {_load()}")


def imports(cases: list[Case], folder: Path) -> None:
    """Per case, the import time of the call, of perfsleuth's own modules (their own time,
    without what they import) and of each heavy library (cumulative, where first imported)."""
    env = _environment(None, folder / "pycache")
    line = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)")
    print(f"heavy imports per call (python -X importtime, one call); load average {_load()}")
    for case in cases:
        args = case.args(folder)
        _cpu(args, env, folder)  # warm the bytecode cache
        done = subprocess.run(
            _command(args, ("-X", "importtime")),
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
        )
        total: dict[str, int] = {}
        overall = own = 0
        for match in line.finditer(done.stderr):
            alone, cumulative = int(match.group(1)), int(match.group(2))
            name, depth = match.group(4), len(match.group(3))
            overall += cumulative if depth == 0 else 0
            own += alone if name.split(".")[0] == "perfsleuth" else 0
            if name in HEAVY and name not in total:
                total[name] = cumulative
        shown = ", ".join(f"{k} {v / 1000:.0f}" for k, v in total.items())
        print(
            f"  {case.name:24s} all imports {overall / 1000:.0f} ms, perfsleuth's own "
            f"{own / 1000:.0f} ms; {shown} ms"
        )


def _stages_of_one_call(path: str) -> None:
    """One ``bottleneck infer`` call in this process, its CPU time split into stages: the
    imports first, timed in the order the command makes them, then the command with the run
    path's parts wrapped (each stage's own time). Prints them as JSON."""
    import contextlib
    import io
    import json
    import time

    times: dict[str, float] = {}
    clock = [time.process_time()]

    def mark(name: str) -> None:
        now = time.process_time()
        times[name] = times.get(name, 0.0) + now - clock[0]
        clock[0] = now

    import typer

    mark("import typer")
    from perfsleuth import cli

    mark("import perfsleuth.cli")
    try:
        cli._command("bottleneck")
    except TypeError:  # a tree before the lazy registry: one command of all of them
        cli._command()  # type: ignore[call-arg]
    mark("build the Click command")
    import pydantic
    import pydantic.plugin._loader
    import typer._adapters

    mark("import pydantic (Typer's option parsing)")
    import numpy

    mark("import numpy")
    import pyarrow

    mark("import pyarrow")
    import pandas

    mark("import pandas (rest)")
    import perfsleuth.pipeline

    mark("import perfsleuth.pipeline (rest)")
    from perfsleuth.bottleneck import detector

    mark("import the bottleneck detector and kernels")
    import pyarrow.dataset
    import pyarrow.parquet

    mark("import pyarrow.parquet, pyarrow.dataset")
    import perfsleuth.bottleneck.cli as command
    from perfsleuth.sources import files

    rest = "the command, Typer's parsing, the plan"
    inside: list[str] = []

    def wrap(owner: object, attr: str, name: str) -> None:
        function = getattr(owner, attr)

        def wrapped(*args: object, **kwargs: object) -> object:
            mark(inside[-1] if inside else rest)
            inside.append(name)
            try:
                return function(*args, **kwargs)
            finally:
                mark(name)
                inside.pop()

        setattr(owner, attr, wrapped)

    wrap(files, "read_table", "read the file")
    wrap(files, "normalise", "validate the frame (normalise)")
    wrap(detector.BottleneckDetector, "analyse", "the bottleneck analysis")
    wrap(perfsleuth.pipeline, "incidents_of", "incidents")
    wrap(command, "emit", "print the JSON")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        cli.main(["--format", "json", "bottleneck", "infer", path])
    mark(rest)
    del typer, numpy, pyarrow, pandas, pydantic
    print(json.dumps(times))


def stages(repeat: int, old: Path | None, folder: Path) -> None:
    """The least CPU time of each stage of ``bottleneck infer`` on corpus-r7 over ``repeat``
    fresh processes (this tree, and ``old`` alternating when given)."""
    import json

    path = str(DATA / "bottleneck" / "controlled" / "corpus-r7.parquet")
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if old is not None:
        trees.append((str(old), old))
    least: dict[str, dict[str, float]] = {name: {} for name, _ in trees}
    print(
        f"CPU time per stage of bottleneck infer on controlled/corpus-r7.parquet (15 windows), "
        f"least of {repeat} calls each; load average {_load()} at the start"
    )
    for i in range(repeat + 1):
        for name, source in trees:
            env = _environment(source, folder / "pycache")
            done = subprocess.run(
                [sys.executable, __file__, "--stages-of-one-call", path],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            if i == 0:
                continue  # warms the bytecode cache
            for stage, seconds in json.loads(done.stdout).items():
                least[name][stage] = min(seconds, least[name].get(stage, seconds))
    names = list(least["this tree"])
    for stage in names:
        cells = [f"{least[name].get(stage, 0.0) * 1000:6.1f}" for name, _ in trees]
        print(f"  {stage:45s} " + " → ".join(reversed(cells)) + " ms")
    totals = [sum(least[name].values()) * 1000 for name, _ in trees]
    print(f"  {'sum of the least':45s} " + " → ".join(f"{t:6.1f}" for t in reversed(totals)))
    print(f"  load average at the end {_load()}")


def answers(old: Path, folder: Path) -> int:
    """Whether every committed real counter file gives the same JSON with both trees."""
    import pandas as pd

    files = sorted((DATA / "bottleneck").glob("**/*.parquet"))
    files.append(DATA / "incidents" / "pgbench_release" / "counters.parquet")
    inputs: list[Path] = []
    for path in files:
        csv = folder / f"{path.parent.name}-{path.stem}.csv"
        pd.read_parquet(path).to_csv(csv, index=False)
        inputs += [path, csv]
    different = 0
    for path in inputs:
        args = ["--format", "json", "bottleneck", "infer", str(path)]
        outputs = []
        for source in (None, old):
            env = _environment(source, folder / "pycache")
            done = subprocess.run(
                _command(args), check=False, capture_output=True, env=env, cwd=folder
            )
            outputs.append((done.returncode, done.stdout))
        same = outputs[0] == outputs[1]
        different += not same
        findings = outputs[0][1].count(b'"kind": "bottleneck"')
        print(
            f"  {path.name}: {'identical' if same else 'DIFFERENT'} "
            f"({len(outputs[0][1]):,} bytes, {findings} bottleneck finding(s), exit "
            f"{outputs[0][0]} / {outputs[1][0]})"
        )
    print(f"{len(inputs) - different} of {len(inputs)} outputs identical")
    return 1 if different else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--compare", type=Path, help="also time perfsleuth's src directory SRC")
    parser.add_argument("--demo", action="store_true", help="also time perfsleuth demo")
    parser.add_argument("--only", help="the cases to run, comma-separated (e.g. --help,demo)")
    parser.add_argument("--imports", action="store_true", help="heavy imports per case")
    parser.add_argument("--answers", type=Path, help="compare JSON outputs with SRC")
    parser.add_argument("--stages", action="store_true", help="CPU per stage of infer")
    parser.add_argument("--stages-of-one-call", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stages_of_one_call is not None:
        _stages_of_one_call(args.stages_of_one_call)
        return
    with tempfile.TemporaryDirectory(prefix="perfsleuth-startup-") as scratch:
        folder = Path(scratch)
        if args.answers is not None:
            sys.exit(answers(args.answers.resolve(), folder))
        old = args.compare.resolve() if args.compare is not None else None
        if args.stages:
            stages(args.repeat, old, folder)
            return
        _inputs(folder)
        cases = _cases(args.demo)
        if args.only is not None:
            chosen = args.only.split(",")
            cases = [c for c in cases if c.name in chosen]
        if args.imports:
            imports(cases, folder)
            return
        timings(cases, args.repeat, old, folder)


if __name__ == "__main__":
    main()
