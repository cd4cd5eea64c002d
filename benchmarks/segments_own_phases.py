#!/usr/bin/env python3
"""Why an application change was found where there was none: each type's own latency per phase,
and the own-latency search step by step (docs/segments-history.md, "False application changes").

For each configuration ``RUN:WINDOW_S:CPU`` of the recorded corpus (``benchmarks/data/
segments/``), as :mod:`segments_accuracy` reads it:

* **per phase** (the run's ``truth.json``): each type's own log latency
  (:func:`~perfsleuth.segments.kernels.ownstep.own_latency` on all windows, weighted mean over
  the windows wholly inside the phase), the mean latency of all its transactions (ms), the
  ``spread`` of the types' mean latencies (max − min of their logs: near 0 where the load
  generator is seconds behind its schedule and every type waits alike), the phase's mix and
  rate; ``*`` marks the phases after the real change, ``h`` those the hog overlaps; then the
  changed type's phase means after less before, in the phase means' own scatter;
* **the search** (``--search``): every call of the detector's own-latency search — the windows
  searched, and per type where its own latency steps most, the ratio, ``t``, the bar and
  whether it lasts (``PASS``: an application change); ``--at-change``: also every type's step
  at the true change (:func:`~perfsleuth.segments.kernels.ownstep.step_at`, the known split's
  error) in each search that holds it.

Usage::

    .venv/bin/python benchmarks/segments_own_phases.py r04:5:db r08:1:db --search
    .venv/bin/python benchmarks/segments_own_phases.py r02:1:db r07:5:db --search --at-change
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from segments_accuracy import CORPUS, analyse_run

from perfsleuth.cli.inputs import WorkloadFormat, workload_source
from perfsleuth.segments import detector
from perfsleuth.segments.kernels.ownstep import OwnStep, own_latency, own_steps, step_at
from perfsleuth.sources.load import read_source


def _seconds(stamp: str) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp()


def phases(run: str, window_s: int, cpu: str) -> str:
    """The per-phase table of one configuration."""
    folder = CORPUS / run
    truth = json.loads((folder / "truth.json").read_text())
    spec = workload_source(
        [folder / f"agg_{window_s}s.csv"], WorkloadFormat.aggregated, cpu=folder / f"cpu_{cpu}.csv"
    )
    data = detector._read(read_source(spec)[0])
    block = max(1, detector._block(data) // 2)
    own, weight = own_latency(data.latency, data.counts, names=data.types, block=block)
    start = data.start.astype("datetime64[ms]").astype(np.float64) / 1e3
    hog = [_seconds(h) for h in truth["hog"]]
    lines = [
        f"{run} {window_s}s {cpu}: changed {','.join(truth['changed'])} at "
        f"{truth['change_at'][11:19]}, hog {truth['hog'][0][11:19]}-{truth['hog'][1][11:19]}",
        "phase        "
        + " ".join(f"{t:>6}" for t in data.types)
        + "   mean ms  spread  mix (weights), rate",
    ]
    latency, counts = np.asarray(data.latency, float), np.asarray(data.counts, float)
    changed = [data.types.index(t) for t in truth["changed"]]
    before: list[list[float]] = [[] for _ in changed]
    after: list[list[float]] = [[] for _ in changed]
    for phase in truth["phases"]:
        a, b = _seconds(phase["start"]), _seconds(phase["end"])
        inside = (start >= a) & (start + window_s <= b)
        means = []
        for j in range(len(data.types)):
            mass = weight[inside, j]
            total = float(mass.sum())
            means.append(float(mass @ np.nan_to_num(own[inside, j])) / total if total else np.nan)
        marks = ("*" if phase["changed"] else " ") + ("h" if a < hog[1] and b > hog[0] else " ")
        mix = " ".join(f"{t}:{w}" for t, w in phase["weights"].items())
        # the phase's mean latency of all transactions, and how far apart the types' mean
        # latencies are (max - min of their logs): a load generator seconds behind its
        # schedule gives every type the same latency, and the spread collapses
        n = counts[inside].sum(axis=0)
        typed = np.nansum(latency[inside] * counts[inside], axis=0) / np.where(n > 0, n, 1.0)
        spread = float(np.ptp(np.log(typed[n > 0]))) if (n > 0).sum() > 1 else np.nan
        for k, j in enumerate(changed):
            (after if phase["changed"] else before)[k].append(means[j])
        lines.append(
            f"{phase['start'][11:19]} {marks} "
            + " ".join(f"{v:+6.2f}" for v in means)
            + f"  {1e3 * typed @ n / max(n.sum(), 1.0):8.1f}  {spread:6.2f}"
            + f"  {mix}, {phase['rate']:.0f}/s"
        )
    for k, j in enumerate(changed):
        b, a = np.array(before[k]), np.array(after[k])
        noise = float(np.std(b, ddof=1)) if len(b) > 1 else np.nan
        step = float(a.mean() - b.mean())
        lines.append(
            f"{data.types[j]}: phase means after - before {step:+.2f} (sd of the phase "
            f"means before {noise:.2f}; t over phases "
            f"{step / (noise * np.sqrt(1 / len(a) + 1 / len(b))):+.2f})"
        )
    return "\n".join(lines)


Observer = Callable[
    [detector.SegmentDetector, Any, NDArray[np.intp], int, bool, list[OwnStep], Any], None
]


@contextlib.contextmanager
def application_steps(observe: Observer) -> Iterator[None]:
    """While open, every own-latency search of the detector also calls ``observe(detector,
    data, part, least, at_end, steps, found)``: the searched windows, each type's largest step
    there (:func:`own_steps`) and what the search returned."""
    original = detector.SegmentDetector._application_step

    def traced(
        self: detector.SegmentDetector,
        data: Any,
        part: NDArray[np.intp],
        least: int,
        *,
        at_end: bool = False,
        **more: Any,
    ) -> tuple[int, str, bool] | None:
        found = original(self, data, part, least, at_end=at_end, **more)
        steps = own_steps(
            data.latency, data.counts, part, names=data.types, block=detector._block(data),
            least=least,
        )  # fmt: skip
        observe(self, data, part, least, at_end, steps, found)
        return found

    detector.SegmentDetector._application_step = traced  # type: ignore[method-assign]
    try:
        yield
    finally:
        detector.SegmentDetector._application_step = original  # type: ignore[method-assign]


def traced_search(run: str, window_s: int, cpu: str, at_change: bool = False) -> str:
    """Every own-latency search the detector makes on one configuration; ``at_change``: in
    each search that holds the true change, also every type's step at the true split
    (:func:`step_at`, not searched for) against the same bar."""
    lines: list[str] = []
    change = _seconds(json.loads((CORPUS / run / "truth.json").read_text())["change_at"])

    def observe(
        self: detector.SegmentDetector,
        data: Any,
        part: NDArray[np.intp],
        least: int,
        at_end: bool,
        steps: list[OwnStep],
        found: Any,
    ) -> None:
        def clock(i: int) -> str:
            return str(data.start[i])[11:19]

        lines.append(f"  searched {clock(part[0])}-{clock(part[-1])} ({len(part)} windows)")
        for s in steps:
            bar = self._step_bar(s, len(steps), len(part), least)
            passed = s.score >= bar and s.lasting and s.ratio - 1.0 >= self.min_change
            lines.append(
                f"    {s.name} at {clock(part[s.index])} ratio {s.ratio:.2f} t {s.score:+.2f} "
                f"bar {bar:.2f} ({s.dof} dof) {'lasts' if s.lasting else 'fades'}"
                + ("  PASS" if passed else "")
                + ("  CUT" if found is not None and found[:2] == (s.index, s.name) else "")
            )
        starts = data.start[part].astype("datetime64[ns]").astype(np.int64) / 1e9
        split = int(np.searchsorted(starts, change))
        if not at_change or not least <= split <= len(part) - least:
            return
        lines.append(f"    at the true change {clock(part[split])}:")
        for s in step_at(
            data.latency, data.counts, part, split, names=data.types, block=detector._block(data)
        ):
            bar = self._step_bar(s, len(steps), len(part), least)
            lines.append(
                f"      {s.name} ratio {s.ratio:.2f} t {s.score:+.2f} bar {bar:.2f} "
                f"({s.dof} dof) {'lasts' if s.lasting else 'fades'}"
            )

    with application_steps(observe):
        analyse_run(CORPUS / run, window_s, cpu)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", help="RUN:WINDOW_S:CPU, e.g. r04:5:db")
    parser.add_argument("--search", action="store_true", help="trace the own-latency search")
    parser.add_argument(
        "--at-change", action="store_true", help="with --search: the steps at the true change"
    )
    args = parser.parse_args(argv)
    for config in args.configs:
        run, window_s, cpu = config.split(":")
        print(phases(run, int(window_s), cpu))
        if args.search:
            print(traced_search(run, int(window_s), cpu, args.at_change))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
