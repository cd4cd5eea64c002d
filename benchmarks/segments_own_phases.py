#!/usr/bin/env python3
"""Why an application change was found where there was none: each type's own latency per phase,
and the own-latency search step by step (docs/segments.md, "False application changes").

For each configuration ``RUN:WINDOW_S:CPU`` of the recorded corpus (``benchmarks/data/
segments/``), as :mod:`segments_accuracy` reads it:

* **per phase** (the run's ``truth.json``): each type's own log latency
  (:func:`~perfsleuth.segments.kernels.ownstep.own_latency` on all windows, weighted mean over
  the windows wholly inside the phase), the phase's mix and rate; ``*`` marks the phases after
  the real change, ``h`` those the hog overlaps;
* **the search** (``--search``): every call of the detector's own-latency search — the windows
  searched, and per type where its own latency steps most, the ratio, ``t``, the bar and
  whether it lasts (``PASS``: an application change).

Usage::

    .venv/bin/python benchmarks/segments_own_phases.py r04:5:db r08:1:db --search
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
from perfsleuth.segments.kernels.ownstep import OwnStep, own_latency, own_steps
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
        "phase        " + " ".join(f"{t:>6}" for t in data.types) + "  mix (weights), rate",
    ]
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
        lines.append(
            f"{phase['start'][11:19]} {marks} "
            + " ".join(f"{v:+6.2f}" for v in means)
            + f"  {mix}, {phase['rate']:.0f}/s"
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


def traced_search(run: str, window_s: int, cpu: str) -> str:
    """Every own-latency search the detector makes on one configuration."""
    lines: list[str] = []

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

    with application_steps(observe):
        analyse_run(CORPUS / run, window_s, cpu)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", nargs="+", help="RUN:WINDOW_S:CPU, e.g. r04:5:db")
    parser.add_argument("--search", action="store_true", help="trace the own-latency search")
    args = parser.parse_args(argv)
    for config in args.configs:
        run, window_s, cpu = config.split(":")
        print(phases(run, int(window_s), cpu))
        if args.search:
            print(traced_search(run, int(window_s), cpu))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
