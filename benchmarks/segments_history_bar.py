#!/usr/bin/env python3
"""How often the end-of-data bars pass a step where nothing changed, on a simulated busy host.

The host of ``tests/segments/kernels/test_ownstep.py`` (five types; a common stretch and tilt
redrawn every 30 windows, a new mix every 45, per-window noise shrinking with the
transactions), 300 windows, 20-window blocks, ``least`` 30, with one type (``t1``, mostly
round trips) whose own latency moves by a random amount with every mix (normal, sd
``--shock`` in logs) — the noise the end-of-data bar must not mistake for a change. Per seed,
the detector's end-of-data decision (:meth:`SegmentDetector._application_step`'s rule: a
lasting step up of at least 10% with under ``2 × least`` windows after it) is made with

* ``t quantile``: the end-of-data bar with its degrees of freedom (the sixth round's), and
* ``history``: that, or the bar with the error known together with the run's own history's
  (:func:`~perfsleuth.segments.kernels.ownstep.history_bar`; this round's),

and the number of seeds with a false change is printed (a step past the full bar counts for
both), then the number found with each type made ``--factor`` times as heavy 45 windows before
the end in turn (ten seeds).

Usage::

    .venv/bin/python benchmarks/segments_history_bar.py --seeds 50 --shock 0 0.1 0.2
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from perfsleuth.segments.kernels.ownstep import history_bar, own_steps, step_bar

NAMES = ("t0", "t1", "t2", "t3", "t4")
SERVICE = np.array([0.002, 0.004, 0.005, 0.009, 0.040])
M, BLOCK, LEAST, ALPHA = 300, 20, 30, 0.05


def busy_host(
    seed: int, shock: float, changed: str | None = None, factor: float = 1.5, at: int = 255
) -> tuple[np.ndarray, np.ndarray]:
    """Latency and counts per window (as the kernel tests' host), t1's own latency moved by
    ``exp(N(0, shock))`` per mix; ``changed`` does ``factor`` times the work from window
    ``at``."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((M, len(NAMES)))
    latency = np.zeros((M, len(NAMES)))
    level = np.log(SERVICE) - np.log(SERVICE).mean()
    for start in range(0, M, 45):
        mix = rng.dirichlet(np.ones(len(NAMES)) * 2.0)
        rate = rng.uniform(40, 120)
        counts[start : start + 45] = rng.poisson(rate * mix, size=(min(45, M - start), len(NAMES)))
    for start in range(0, M, 30):
        stretch, tilt = rng.normal(0.0, 0.5), rng.normal(0.0, 0.25)
        latency[start : start + 30] = np.exp(np.log(SERVICE) + stretch + tilt * level)
    noise = rng.normal(0.0, 1.0, size=(M, len(NAMES))) * 0.3 / np.sqrt(np.maximum(counts, 1))
    latency = latency * np.exp(noise)
    moves = np.random.default_rng(1000 + seed)
    for start in range(0, M, 45):
        latency[start : start + 45, 1] *= math.exp(moves.normal(0.0, shock))
    if changed is not None:
        latency[at:, NAMES.index(changed)] *= factor
    latency[counts == 0] = np.nan
    return latency, counts


def decisions(latency: np.ndarray, counts: np.ndarray) -> tuple[str | None, str | None]:
    """The type passed at the end of the data by each rule (None: none)."""
    rows = np.arange(M)
    steps = own_steps(latency, counts, rows, names=NAMES, block=BLOCK, least=LEAST)
    full = [
        s
        for s in steps
        if s.score >= step_bar(ALPHA, len(steps), LEAST / M, s.dof, one_sided=True)
        and s.lasting
        and s.ratio >= 1.1
    ]
    if full:  # the full search's find, the same for both rules
        top = max(full, key=lambda s: s.shift).name
        return top, top
    old = new = None
    for s in steps:
        if M - s.index >= 2 * LEAST or not (s.lasting and s.ratio >= 1.1):
            continue

        def bar(dof: float) -> float:
            return step_bar(
                ALPHA / 2, len(steps), LEAST / M, dof, one_sided=True, last_share=2 * LEAST / M
            )

        if s.score >= bar(s.dof):
            old = new = old or s.name
        elif s.score >= bar(math.inf) and s.score >= history_bar(
            latency, counts, rows, s.index, names=NAMES, block=BLOCK, least=LEAST,
            level=ALPHA / 2,
        ):  # fmt: skip
            new = new or s.name
    return old, new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--shock", type=float, nargs="*", default=[0.0, 0.1, 0.2])
    parser.add_argument("--factor", type=float, default=1.5)
    args = parser.parse_args(argv)
    for shock in args.shock:
        false = np.zeros(2)
        for seed in range(args.seeds):
            got = decisions(*busy_host(seed, shock))
            false += [got[0] is not None, got[1] is not None]
        found = np.zeros(2)
        trials = 0
        for seed in range(min(args.seeds, 10)):
            for name in NAMES:
                got = decisions(*busy_host(seed, shock, changed=name, factor=args.factor))
                found += [got[0] == name, got[1] == name]
                trials += 1
        print(
            f"t1's own latency moved by sd {shock:.2f} per mix: false end-of-data changes "
            f"{int(false[0])}/{args.seeds} (t quantile) -> {int(false[1])}/{args.seeds} "
            f"(history); each type {args.factor}x as heavy 45 windows before the end, found "
            f"{int(found[0])}/{trials} -> {int(found[1])}/{trials}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
