"""Spikes as findings: the scale spikes are judged on, and how many NAB windows the shown runs hit.

Three parts, each a table:

* ``scale`` — seeded synthetic series (Gaussian with three spikes of +20–40 σ; 120 Gaussian
  readings with a step and four spikes; lognormal with two readings ×20; and clean Gaussian,
  lognormal σ = 1 and exponential noise of 2,000 readings): the spikes listed, and the two
  largest runs, with the share of each residual tail left out of the spike scale's fit
  (``_SPIKE_FIT_TAIL``) set to each of ``--tails``;
* ``nab`` — with each of those shares, the NAB windows hit by the change points and the
  ``notable_spikes(k)`` runs, per half, for k = 1, 2, 3;
* ``random`` — the control: k runs per series drawn at random among all of a series' runs
  (``--draws`` times, fixed seed) instead of the k largest;
* ``alternatives`` (``--alternatives``) — two other ways to spend the budget, not adopted: at
  most max(F, ⌈n / L⌉) change points per series, the largest effects (a budget growing with the
  length), with 2 or 3 spike findings, scored on NAB and on the machine and short groups (F1,
  margin 5); a search for changes of volatility (the defaults on |x_t − x_{t−1}|, each
  point at t + 1) added to the change points and 2 spike findings; spike findings chosen by a
  threshold on their size (T robust σ) instead of, or besides, a count; runs left out within
  20 or 50 readings of a change point instead of ``min_size``; and spikes judged on the
  series' own scale (no transform).

Run: ``.venv/bin/python benchmarks/changepoints_spikes.py [--tails 0.01,0.025,0.05,0.1]``
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints_accuracy import (
    MIRROR_DEFAULT,
    NAB_DEFAULT,
    STRUCCHANGE_DEFAULT,
    Case,
    corpus,
    f1_margin,
)

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels import spikes


def synthetic() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    gauss = 20.0 + rng.normal(0.0, 1.0, 300)
    gauss[[50, 120, 250]] += [40.0, 30.0, 20.0]
    logn = np.exp(rng.normal(0.0, 0.5, 2000))
    logn[[300, 900]] *= 20.0
    step = np.r_[np.full(65, 12.0), np.full(55, 30.0)] + rng.standard_normal(120)
    step[[20, 90, 91, 100]] += [60.0, 45.0, 50.0, 20.0]
    return {
        "gauss 300, +40/+30/+20σ at 50/120/250": gauss,
        "step 120, spikes at 20, 90-91, 100": step,
        "lognormal 2000, ×20 at 300/900": logn,
        "clean gaussian 2000": rng.normal(0.0, 1.0, 2000),
        "clean lognormal σ=1 2000": np.exp(rng.normal(0.0, 1.0, 2000)),
        "clean exponential 2000": rng.exponential(1.0, 2000),
    }


def hits(cases: list[Case], found: dict[str, list[int]]) -> dict[str, str]:
    out: dict[str, list[int]] = {}
    for case in cases:
        row = out.setdefault(case.half, [0, 0, 0])
        row[0] += sum(any(a <= i <= b for i in found[case.name]) for a, b in case.windows or [])
        row[1] += len(case.windows or [])
        row[2] += len(found[case.name])
    return {half: f"{h}/{w} with {n}" for half, (h, w, n) in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tails", default="0.01,0.025,0.05,0.1")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--alternatives", action="store_true", help="only the alternatives")
    args = parser.parse_args()
    if args.alternatives:
        alternatives()
        return
    cases, _ = corpus(Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), ["nab"], Path(MIRROR_DEFAULT))
    default = spikes._SPIKE_FIT_TAIL
    results = {}
    for tail in [float(t) for t in args.tails.split(",")]:
        spikes._SPIKE_FIT_TAIL = tail  # type: ignore[misc]
        print(f"## tail {tail}" + (" (default)" if tail == default else ""))
        for name, x in synthetic().items():
            res = find_change_points(x)
            runs = [r.index for r in res.notable_spikes()]
            print(f"  {name:40} spikes {len(res.spikes):3} {list(res.spikes)[:6]} shown {runs}")
        results = {c.name: find_change_points(np.asarray(c.values, float)) for c in cases}
        for k in (1, 2, 3):
            found = {
                name: [*r.indices, *(s.index for s in r.notable_spikes(k))]
                for name, r in results.items()
            }
            print(f"  nab, {k} spike finding(s) per series: {hits(cases, found)}")
    spikes._SPIKE_FIT_TAIL = default  # type: ignore[misc]
    results = {c.name: find_change_points(np.asarray(c.values, float)) for c in cases}
    rng = np.random.default_rng(0)
    for k in (1, 2, 3):
        tally: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for _ in range(args.draws):
            found = {}
            for name, r in results.items():
                runs = r.notable_spikes(len(r.spike_runs))
                pick = rng.permutation(len(runs))[:k]
                found[name] = [*r.indices, *(runs[j].index for j in pick)]
            for half, text in hits(cases, found).items():
                tally[half][text.split()[0]] += 1
        print(f"## random {k} run(s) per series, {args.draws} draws: " + "; ".join(
            f"{half} {sorted(c.items())}" for half, c in tally.items()
        ))  # fmt: skip


def alternatives() -> None:
    cases, _ = corpus(Path(NAB_DEFAULT), Path(STRUCCHANGE_DEFAULT), ["nab", "machine", "short"],
                      Path(MIRROR_DEFAULT))  # fmt: skip
    results = {(c.group, c.name): find_change_points(np.asarray(c.values, float)) for c in cases}
    nab = [c for c in cases if c.group == "nab"]
    for floor, length in [(0, 0), (3, 1000), (6, 500), (6, 1000), (6, 2000), (8, 1000)]:
        for k in (2, 3):
            found, scores = {}, collections.defaultdict(list)
            for case in cases:
                r = results[case.group, case.name]
                cap = max(floor, -(-case.n // length)) if length else len(r.indices)
                points = [p.index for p in r.ranked()[:cap]]
                if case.group == "nab":
                    found[case.name] = [*points, *(s.index for s in r.notable_spikes(k))]
                else:
                    scores[case.group, case.half].append(f1_margin(case.points or [], points))
            f1 = "; ".join(f"{g} {h} {np.mean(v):.3f}" for (g, h), v in sorted(scores.items()))
            label = f"at most max({floor}, n/{length})" if length else "no cap"
            print(f"cap {label}, {k} spike findings: nab {hits(nab, found)}; F1 {f1}")
    found = {}
    for case in nab:
        r = results[case.group, case.name]
        volatile = find_change_points(np.abs(np.diff(np.asarray(case.values, float))))
        found[case.name] = [*r.indices, *(s.index for s in r.notable_spikes()),
                            *(i + 1 for i in volatile.indices)]  # fmt: skip
    print(f"volatility changes added: nab {hits(nab, found)}")
    for threshold in (8.0, 10.0, 20.0, 50.0):
        for top in (None, 2):
            found = {}
            for case in nab:
                r = results[case.group, case.name]
                runs = [s for s in r.notable_spikes(len(r.spike_runs)) if s.size > threshold]
                found[case.name] = [*r.indices, *(s.index for s in runs[:top])]
            print(f"spike runs beyond {threshold:g} σ, at most {top}: nab {hits(nab, found)}")
    for gap in (20, 50):
        found = {}
        for case in nab:
            r = results[case.group, case.name]
            apart = [
                run
                for run in r.spike_runs
                if not any(run.start - gap <= i <= run.stop - 1 + gap for i in r.indices)
            ]
            found[case.name] = [*r.indices, *(s.index for s in apart[:2])]  # fmt: skip
        print(f"runs within {gap} readings of a change point left out: nab {hits(nab, found)}")
    saved = spikes._bulk_symmetrised
    spikes._bulk_symmetrised = lambda column: column - np.median(column)  # type: ignore[assignment]
    try:
        found = {}
        for case in nab:
            r = find_change_points(np.asarray(case.values, float))
            found[case.name] = [*r.indices, *(s.index for s in r.notable_spikes())]
        print(f"spikes on the series' own scale: nab {hits(nab, found)}")
        for name, x in synthetic().items():
            print(f"  {name:40} spikes {len(find_change_points(x).spikes)}")
    finally:
        spikes._bulk_symmetrised = saved  # type: ignore[assignment]


if __name__ == "__main__":
    main()
