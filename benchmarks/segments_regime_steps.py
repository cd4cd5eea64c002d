#!/usr/bin/env python3
"""Does each step the own-latency search passes hold in every later workload regime?
(docs/segments.md, "Application changes: a type's own latency"; segments-history.md, the
fourteenth round.)

For each configuration ``RUN:WINDOW_S:CPU`` of the recorded corpus (or every configuration of
``--half``/``--group``/``--only``), the detector runs as :mod:`segments_accuracy` runs it, and
every step its regime test judges (:meth:`SegmentDetector._in_each_regime`) is printed: when
it is, the type, the step (log), the step each later regime keeps as a share of it
(:func:`~perfsleuth.segments.kernels.ownstep.regime_steps`), the smallest share, the verdict,
and whether the step is at the real change (within 10 s) and of a changed type (``true``) or
not (``FALSE``). With ``--regimes`` also the mix regimes' starts
(:func:`~perfsleuth.segments.kernels.mix.mix_regimes`) against the phases' (truth.json).
The summary gives, for true and false steps, the smallest share each had: the rule's margin.

Usage::

    .venv/bin/python benchmarks/segments_regime_steps.py h19:5:db --regimes
    machine heavy .venv/bin/python benchmarks/segments_regime_steps.py --half tune
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from segments_accuracy import CORPUS, CPUS, WINDOWS, halves

from perfsleuth.cli.inputs import WorkloadFormat, workload_source
from perfsleuth.datasets.segments import RunTruth
from perfsleuth.segments import detector
from perfsleuth.segments.kernels import ownstep
from perfsleuth.segments.kernels.mix import mix_regimes
from perfsleuth.sources.load import read_source

Judged = tuple[float, str, float, tuple[float, ...], bool]


@contextlib.contextmanager
def judged_steps(out: list[Judged]) -> Iterator[None]:
    """While open, every step the regime test judges is appended to ``out``: (its window's
    start in epoch seconds, type, step, the later regimes' steps, verdict)."""
    original = detector.SegmentDetector._in_each_regime
    shifts: list[tuple[float, ...]] = []
    inner = ownstep.regime_steps

    def recorded(*args: Any, **kwargs: Any) -> tuple[float, ...]:
        shifts.append(inner(*args, **kwargs))
        return shifts[-1]

    def traced(
        self: detector.SegmentDetector,
        data: Any,
        part: NDArray[np.intp],
        beyond: NDArray[np.intp] | None,
        step: ownstep.OwnStep,
        *more: Any,
    ) -> bool:
        verdict = original(self, data, part, beyond, step, *more)
        at = data.start[int(part[step.index])].astype("datetime64[ms]").astype(np.float64) / 1e3
        out.append((float(at), step.name, step.shift, shifts[-1], verdict))
        return verdict

    detector.SegmentDetector._in_each_regime = traced  # type: ignore[method-assign]
    detector.regime_steps = recorded  # type: ignore[assignment]
    try:
        yield
    finally:
        detector.SegmentDetector._in_each_regime = original  # type: ignore[method-assign]
        detector.regime_steps = inner


def configuration(
    run: str, window_s: int, cpu: str, regimes: bool
) -> tuple[str, list[float], list[float]]:
    """The printed lines of one configuration, and the smallest share of each true and each
    false step judged there."""
    folder = CORPUS / run
    truth = RunTruth.read(folder / "truth.json")
    spec = workload_source(
        [folder / f"agg_{window_s}s.csv"], WorkloadFormat.aggregated, cpu=folder / f"cpu_{cpu}.csv"
    )
    frame = read_source(spec)[0]
    judged: list[Judged] = []
    with judged_steps(judged):
        detector.SegmentDetector().detect(frame)
    change = truth.change_at.timestamp()
    lines = [f"{run} {window_s}s {cpu}: changed {','.join(truth.changed)} at "
             f"{truth.change_at:%H:%M:%S}"]  # fmt: skip
    if regimes:
        data = detector._read(frame)
        labels = mix_regimes(data.counts, data.width, detector.SegmentDetector()._least(data))
        starts = [str(data.start[i])[11:19] for i in np.flatnonzero(np.diff(labels)) + 1]
        lines.append(f"  phases  {' '.join(f'{p:%H:%M:%S}' for p in truth.phase_starts[1:])}")
        lines.append(f"  regimes {' '.join(starts)}")
    true, false = [], []
    seen = set()
    for at, name, shift, later, verdict in judged:
        key = (round(at), name)
        if key in seen:
            continue
        seen.add(key)
        real = abs(at - change) <= 10 and name in truth.changed
        shares = [x / shift for x in later] if shift else []
        least = min(shares, default=float("nan"))
        (true if real else false).append(least)
        clock = np.datetime64(int(at * 1e3), "ms").astype(str)[11:19]
        lines.append(
            f"  {clock} {name} step {shift:+.3f} shares {' '.join(f'{s:.2f}' for s in shares)}"
            f"  least {least:.2f} {'holds' if verdict else 'FAILS'} "
            f"{'true' if real else 'FALSE'}"
        )
    return "\n".join(lines), true, false


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="*", help="RUN:WINDOW_S:CPU, e.g. h19:5:db")
    parser.add_argument("--half", choices=["tune", "held"])
    parser.add_argument("--group")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--regimes", action="store_true", help="the mix regimes' starts too")
    args = parser.parse_args(argv)
    configs = [(c.split(":")[0], int(c.split(":")[1]), c.split(":")[2]) for c in args.configs]
    if not configs:
        for run, (group, half) in sorted(halves(CORPUS).items()):
            if (args.half and half != args.half) or (args.group and group != args.group):
                continue
            if args.only and run not in args.only:
                continue
            configs += [(run, w, cpu) for w in WINDOWS for cpu in CPUS]
    true: list[float] = []
    false: list[float] = []
    for run, window_s, cpu in configs:
        text, t, f = configuration(run, window_s, cpu, args.regimes)
        print(text)
        true += t
        false += f
    for label, shares in (("true", true), ("false", false)):
        held = sum(s >= 0.5 for s in shares if not np.isnan(s))
        least = " ".join(f"{s:.2f}" for s in sorted(shares)[:12])
        print(f"{label} steps judged: {len(shares)}; smallest shares {least}; holding half: {held}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
