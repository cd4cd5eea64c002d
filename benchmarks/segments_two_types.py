#!/usr/bin/env python3
"""Two types changed at once on a simulated busy host: is the application change found at
its time, and nothing else?

A host like the recorded runs' (``benchmarks/data/segments/README.md``): five types, nine
phases of 45–55 s, each its own mix and rate; a common stretch and tilt redrawn every 30 s
(the co-tenants), each type's own latency moved by ``exp(N(0, --shock))`` with every mix
(what a linear yardstick misses), per-window noise ``--noise / √transactions``. From the
start of phase 6, 7 or 8 (drawn), the types changed do ``--factor`` times the work. 1 s
windows, and the same run summed into 5 s windows.

Per seed, the detector's application-change search
(:meth:`~perfsleuth.segments.detector.SegmentDetector._located` on all the windows, as if none
were anomalous) is run, and counted: the change found (a cut within 10 s of it; and whether
the naming, :meth:`~perfsleuth.segments.detector.SegmentDetector._own_named` at that cut,
names a changed type first, every changed type, and a type that did not change), found late
or early (a cut, but none within 10 s), and false cuts (every other cut), for

* ``none``: nothing changed (false cuts only);
* ``one``: one type changed (each seed its own, drawn);
* ``two``: two types changed at once (each seed its own pair, drawn).

Usage::

    .venv/bin/python benchmarks/segments_two_types.py --seeds 40
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from perfsleuth.segments.detector import SegmentDetector
from perfsleuth.segments.model import Windows

NAMES = ("t0", "t1", "t2", "t3", "t4")
SERVICE = np.array([0.002, 0.004, 0.005, 0.009, 0.040])


def busy_host(
    seed: int,
    changed: tuple[str, ...],
    factor: float,
    shock: float,
    noise: float,
    hog: float = 0.0,
    spread: float = 0.5,
    spared: int = 0,
) -> tuple[np.ndarray, np.ndarray, int, tuple[int, int]]:
    """Latency and counts per 1 s window, the first window after the change, and the hog's
    windows ``[start, stop)`` (empty when ``hog`` is 0): 60 s from 15–35 s into phase 2, 3
    or 4 (as in the recorded runs), each type slowed by ``exp(N(hog, spread × hog))`` —
    a hog slows some types more than others — but ``spared`` types (drawn) not at all."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(45, 56, size=9)
    edges = np.concatenate([[0], np.cumsum(lengths)])
    m = int(edges[-1])
    counts = np.zeros((m, len(NAMES)))
    latency = np.zeros((m, len(NAMES)))
    level = np.log(SERVICE) - np.log(SERVICE).mean()
    for a, b in itertools.pairwise(edges):
        mix = rng.dirichlet(np.ones(len(NAMES)) * 2.0)
        counts[a:b] = rng.poisson(rng.uniform(60, 150) * mix, size=(b - a, len(NAMES)))
        latency[a:b] = np.exp(rng.normal(0.0, shock, size=len(NAMES)))
    for start in range(0, m, 30):
        stretch, tilt = rng.normal(0.0, 0.5), rng.normal(0.0, 0.25)
        latency[start : start + 30] *= np.exp(np.log(SERVICE) + stretch + tilt * level)
    shocks = rng.normal(0.0, 1.0, size=(m, len(NAMES)))
    latency *= np.exp(shocks * noise / np.sqrt(np.maximum(counts, 1)))
    at = int(edges[int(rng.integers(5, 8))])
    for name in changed:
        latency[at:, NAMES.index(name)] *= factor
    span = (0, 0)
    if hog > 0:
        # drawn from its own stream: the runs with and without a hog are otherwise the same
        draw = np.random.default_rng(seed + 1_000_000)
        start = int(edges[int(draw.integers(1, 4))] + draw.integers(15, 36))
        span = (start, start + 60)
        slowed = draw.normal(hog, spread * hog, size=len(NAMES))
        slowed[draw.permutation(len(NAMES))[:spared]] = 0.0
        latency[start : start + 60] *= np.exp(slowed)
    return latency, counts, at, span


def windows(latency: np.ndarray, counts: np.ndarray, width: int) -> Windows:
    """The 1 s windows summed into ``width`` s windows (transaction-weighted latency)."""
    m = len(counts) // width * width
    n = counts[:m].reshape(-1, width, len(NAMES)).sum(axis=1)
    total = np.nan_to_num(latency[:m] * counts[:m]).reshape(-1, width, len(NAMES)).sum(axis=1)
    mean = np.where(n > 0, total / np.where(n > 0, n, 1.0), np.nan)
    k = len(n)
    start = np.datetime64("2026-01-01T00:00:00") + np.arange(k) * np.timedelta64(width, "s")
    return Windows(
        start=start.astype("datetime64[ns]"),
        width=np.full(k, float(width)),
        types=NAMES,
        counts=n,
        latency=mean,
        cpu=np.zeros(k),
        cores=np.full(k, 2.0),
    )


def cuts(data: Windows, anomaly: tuple[int, int] = (0, 0)) -> list[int]:
    """The application changes' first windows the detector's search finds; ``anomaly``: the
    windows ``[start, stop)`` the CPU segmentation judged an anomaly and reported (left out
    of the search, as :meth:`~perfsleuth.segments.detector.SegmentDetector.analyse` leaves
    them out), none when empty."""
    m = len(data.counts)
    a, b = anomaly
    normal = [(0, a), (b, m)] if b > a else [(0, m)]
    groups, _ = SegmentDetector()._located(data, [s for s in normal if s[1] > s[0]])
    return [g[0][0] for g in groups[1:]]


def named(data: Windows, cut: int) -> list[str]:
    """The types the detector's naming (its own-latency steps) names at ``cut``, in order."""
    m = len(data.counts)
    steps, _ = SegmentDetector()._own_named(data, np.arange(cut), np.arange(cut, m))
    return [s.name for s in steps if s.shift > 0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--factor", type=float, default=1.6)
    parser.add_argument("--shock", type=float, default=0.1)
    parser.add_argument("--noise", type=float, default=0.6)
    parser.add_argument("--cases", nargs="*", default=["none", "one", "two"])
    parser.add_argument(
        "--without",
        nargs="*",
        default=[],
        choices=["for-good"],
        help="switch off the check that a step lasts for good (the tenth round's)",
    )
    parser.add_argument(
        "--hog",
        type=float,
        default=0.0,
        help="add a 60 s hog that slows each type by exp(N(HOG, SPREAD × HOG)) (0: none)",
    )
    parser.add_argument("--spread", type=float, default=0.5, help="see --hog")
    parser.add_argument("--spared", type=int, default=0, help="types the hog does not slow")
    parser.add_argument(
        "--anomaly",
        choices=["unseen", "reported"],
        default="unseen",
        help="the hog's windows searched as normal ones (its CPU not in the series, as in "
        "`db`) or reported as an anomaly and left out (as in `all`)",
    )
    args = parser.parse_args(argv)
    if "for-good" in args.without:
        SegmentDetector._for_good = lambda *a, **k: True  # type: ignore[method-assign]
    started = time.process_time()
    for case in args.cases:
        for width in (1, 5):
            found = late = false = first = every = extra = at_hog = 0
            offsets = []
            for seed in range(args.seeds):
                pick = np.random.default_rng(10_000 + seed).permutation(len(NAMES))
                changed = tuple(NAMES[i] for i in pick[: {"none": 0, "one": 1, "two": 2}[case]])
                latency, counts, at, hog = busy_host(
                    seed,
                    changed,
                    args.factor,
                    args.shock,
                    args.noise,
                    args.hog,
                    args.spread,
                    args.spared,
                )
                data = windows(latency, counts, width)
                seen = args.anomaly == "reported"
                anomaly = (hog[0] // width, -(-hog[1] // width)) if seen else (0, 0)
                got = [c * width for c in cuts(data, anomaly)]
                near = [c for c in got if abs(c - at) <= 10]
                if changed:
                    found += bool(near)
                    names = named(data, near[0] // width) if near else []
                    first += bool(names) and names[0] in changed
                    every += set(changed) <= set(names)
                    extra += bool(set(names) - set(changed))
                    late += bool(got) and not near
                    offsets += [min(got, key=lambda c: abs(c - at)) - at] if got else []
                false += len(got) - min(len(near), 1)
                at_hog += sum(
                    1 for c in got if abs(c - at) > 10 and min(abs(c - e) for e in hog) <= 10
                )
            spread = " ".join(f"{o:+d}" for o in offsets if abs(o) > 10)
            print(
                f"{case:<4} {width} s: found {found}/{args.seeds if case != 'none' else 0} "
                f"(a changed type named first {first}, all named {every}, another named "
                f"{extra}), "
                f"elsewhere only {late}, false cuts {false}"
                + (f" ({at_hog} at the hog's edges)" if args.hog > 0 else "")
                + (f"; off by (s) {spread}" if spread else "")
            )
    print(f"CPU {time.process_time() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
