#!/usr/bin/env python3
"""The end-of-data bar of the application-change search, calibrated on the recorded corpus.

Every own-latency search the detector makes over windows that reach the end of the data is
traced; of each, the upward steps with under twice ``min_duration`` of data after them (the
steps the end-of-data bars judge, :meth:`SegmentDetector._application_step`) are printed
with their t, the end-of-data bar (a search over those splits only), the same with the error
known, for a lasting step of at least ``min_change`` past that the run's own history's bar
(:meth:`SegmentDetector._history_bar`), the full bar (every split), whether they last and
whether they are the real change (the changed type, within 10 s of ``change_at``) — so that
the bars' margin at real changes and at everything else (mix changes, noise) can be read
side by side. A step is listed even when a step of the search passed the full bar (``not
asked``: then the end-of-data bars are not asked).

Usage::

    .venv/bin/python benchmarks/segments_end_steps.py --half tune
    .venv/bin/python benchmarks/segments_end_steps.py --runs c09 h02
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from numpy.typing import NDArray
from segments_accuracy import CORPUS, analyse_run, configurations
from segments_own_phases import application_steps

from perfsleuth.datasets.segments import RunTruth
from perfsleuth.segments import detector
from perfsleuth.segments.kernels.ownstep import OwnStep


def traced(run: str, window_s: int, cpu: str, truth: RunTruth) -> list[str]:
    """One line per upward step near the end of the data, for one configuration."""
    lines: list[str] = []
    change = np.datetime64(truth.change_at.replace(tzinfo=None), "ns")

    def observe(
        self: detector.SegmentDetector,
        data: Any,
        part: NDArray[np.intp],
        least: int,
        at_end: bool,
        steps: list[OwnStep],
        found: Any,
    ) -> None:
        if not at_end:
            return
        n = len(part)

        def full_bar(s: Any) -> float:
            return self._step_bar(s, len(steps), n, least)

        # the end-of-data bar is asked only when no step passed the full one
        asked = not any(
            s.score >= full_bar(s) and s.lasting and s.ratio - 1.0 >= self.min_change for s in steps
        )
        for s in steps:
            if n - s.index >= 2 * least or s.shift <= 0:
                continue
            full = full_bar(s)
            end = self._step_bar(s, len(steps), n, least, end=True)
            known = self._step_bar(s, len(steps), n, least, end=True, known=True)
            # the run's own history's bar, asked of lasting steps up past the known-error bar
            history = (
                f" known {known:.2f} history bar {self._history_bar(data, part, s, least):.2f}"
                if s.score >= known and s.lasting and s.ratio - 1.0 >= self.min_change
                else f" known {known:.2f}"
            )
            at = data.start[part[s.index]]
            off = float((at - change) / np.timedelta64(1, "s"))
            real = s.name in truth.changed and abs(off) <= 10
            after = float(data.width[part[s.index :]].sum())
            lines.append(
                f"{run:<4} {window_s}s {cpu:<3} {s.name:<3} {after:>4.0f} s after "
                f"({off:+6.0f} s from change) ratio {s.ratio:.2f} t {s.score:+5.2f} end bar "
                f"{end:.2f}{history} full bar {full:.2f} ({s.dof} dof) "
                f"{'lasts' if s.lasting else 'fades'} {'REAL' if real else 'other'} "
                f"{'asked' if asked else 'not asked'}"
                + ("  CUT" if found is not None and found[1] == s.name else "")
            )

    with application_steps(observe):
        analyse_run(CORPUS / run, window_s, cpu)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--half", choices=("tune", "held"))
    parser.add_argument("--runs", nargs="*", default=[])
    args = parser.parse_args(argv)
    for run, window_s, cpu, truth in configurations(CORPUS, args.half, args.runs):
        for line in traced(run, window_s, cpu, truth):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
