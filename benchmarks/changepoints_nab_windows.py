"""Why is each NAB window missed? One line per labelled window of the issue's 24 NAB series.

For every window of the chosen half(s) of ``benchmarks/changepoints_accuracy.py``'s ``nab``
group: whether the defaults put a change point in it (``point``) or, failing that, a spike
finding (``spike``: the most extreme observation of a run of ``ChangePoints.notable_spikes()``),
how many of the spikes they list (``ChangePoints.spikes``) lie in it, and which
gate of the judgement holds a change point back — the search re-run with one gate off at a
time:

* ``spike``: the "not a spike" judgement off (a shift may rest on one observation);
* ``floor``: ``min_effect=0, min_relative_change=0``;
* ``cost``: ``penalty=0``;
* ``test``: ``alpha=0.99`` (the significance test nearly off);
* ``all``: all four off together;
* ``cands``: all four off and the seeded candidates proposed at α = .99 instead of .05.

A window that only ``all`` or ``cands`` hits is held back by several gates together; one that
none hits has no candidate there under the noise model (the noise's own wander explains it).
Gates interact (a point removed changes its neighbours' segments), so a single-gate line is the
effect of that gate in the whole search, not of one comparison.

Run: ``.venv/bin/python benchmarks/changepoints_nab_windows.py [--half tune]``
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints_accuracy import MIRROR_DEFAULT, NAB_DEFAULT, STRUCCHANGE_DEFAULT, corpus
from kernel_patch import patched

from perfsleuth import find_change_points

_OFF = {"min_effect": 0.0, "min_relative_change": 0.0, "penalty": 0.0, "alpha": 0.99}


@contextlib.contextmanager
def _patched(spike_rule: bool = True, candidate_alpha: float | None = None) -> Iterator[None]:
    values: dict[str, Any] = {}
    if not spike_rule:
        values["_beyond_one_observation"] = lambda *args: True
    if candidate_alpha is not None:
        values["_CANDIDATE_ALPHA"] = candidate_alpha
    with patched(values):
        yield


def _points(x: np.ndarray, spike_rule: bool = True, candidate_alpha: float | None = None,
            **options: Any) -> tuple[int, ...]:  # fmt: skip
    with _patched(spike_rule, candidate_alpha):
        return find_change_points(x, **options).indices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("tune", "held-out"), help="only this half")
    args = parser.parse_args()
    cases, notes = corpus(Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), ["nab"],
                          Path(MIRROR_DEFAULT))  # fmt: skip
    for note in notes:
        print("#", note)
    tally: dict[str, int] = {}
    for case in cases:
        if args.half and case.half != args.half:
            continue
        x = np.asarray(case.values, dtype=float)
        res = find_change_points(x)
        runs = {
            "spike": _points(x, spike_rule=False),
            "floor": _points(x, min_effect=0.0, min_relative_change=0.0),
            "cost": _points(x, penalty=0.0),
            "test": _points(x, alpha=0.99),
            "all": _points(x, spike_rule=False, **_OFF),
            "cands": _points(x, spike_rule=False, candidate_alpha=0.99, **_OFF),
        }
        print(f"{case.half:8} {case.name:40} n={len(x):6} points={len(res.indices)} "
              + " ".join(f"{k}={len(v)}" for k, v in runs.items()))  # fmt: skip
        shown = [r.index for r in res.notable_spikes()]
        for a, b in case.windows or []:
            hit = any(a <= i <= b for i in res.indices)
            spiked = any(a <= i <= b for i in shown)
            spikes = [s for s in res.spikes if a <= s <= b]
            by = [k for k, v in runs.items() if any(a <= i <= b for i in v)]
            singles = [k for k in by if k not in ("all", "cands")]
            why = (
                "point" if hit
                else "+".join(singles) if singles
                else "several" if "all" in by
                else "candidates" if "cands" in by
                else "no candidate"
            )  # fmt: skip
            key = why if why in ("point", "several", "candidates", "no candidate") else "one gate"
            if spiked and not hit:
                key = f"spike finding ({key})"
            tally[key] = tally.get(key, 0) + 1
            near = [r.index for r in res.rejected if a <= r.index <= b]
            flag = "yes" if spiked else "no "
            print(f"    [{a}, {b}] ({b - a + 1}) {why:14} spike finding: {flag} "
                  f"spikes in window: {len(spikes)} "
                  f"off-hits: {','.join(by) or '-'} rejected in window: {near[:6]}")  # fmt: skip
    print("#", args.half or "both halves", tally)


if __name__ == "__main__":
    main()
