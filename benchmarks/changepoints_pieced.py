"""Series pieced from idle stretches, constants, lines, rounded lines, exponential noise,
growth by a rate and Poisson counts: do the defaults run on all of them, and where two source
trees differ, whose points are nearer the pieces' bounds?

The series are ``tests/changepoints/test_hostile_values.py``'s ``_pieced(default_rng(seed))``
(1–5 pieces of 3–150 readings), nothing chosen on them. Warnings count as errors. ``--out``
writes each series' points and its pieces' bounds (a JSON list). ``--diff A B`` compares two
such files: over the series whose points differ, the mean F1 against the bounds (margin 5,
``changepoints_accuracy.f1_margin``; a bound between two pieces that look alike counts too)
and the indices in all.

Run: .venv/bin/python benchmarks/changepoints_pieced.py [--seeds N] [--out FILE]
(another tree: ``PYTHONPATH=<its src>`` in front), then ``--diff OLD.json NEW.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT), str(ROOT.parent / "tests" / "changepoints")]

from changepoints_accuracy import f1_margin  # noqa: E402
from test_hostile_values import _piece  # noqa: E402

from perfsleuth import find_change_points  # noqa: E402


def pieced(seed: int) -> tuple[np.ndarray, list[int]]:
    """``_pieced(default_rng(seed))`` and the bounds between its pieces."""
    g = np.random.default_rng(seed)
    pieces, bounds = [], []
    for _ in range(int(g.integers(1, 6))):
        pieces.append(_piece(g, int(g.integers(0, 7)), int(g.integers(3, 150))))
        bounds.append(sum(p.size for p in pieces))
    return np.concatenate(pieces), bounds[:-1]


def run(seeds: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for seed in range(seeds):
        x, bounds = pieced(seed)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                found = find_change_points(x)
            points = [[p.index, p.kind] for p in found.points]
            rows.append({"seed": seed, "bounds": bounds, "points": points, "error": None})
        except Exception as error:  # counted and named, not hidden
            rows.append({"seed": seed, "bounds": bounds, "points": [], "error": repr(error)})
    return rows


def diff(old: list[dict], new: list[dict]) -> None:
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a["points"] != b["points"]]
    print(f"{len(changed)} of {len(new)} series differ")
    if not changed:
        return
    f1 = [0.0, 0.0]
    indices = [0, 0]
    worse = []
    better = 0
    for pair in changed:
        scores = []
        for side, row in enumerate(pair):
            at = sorted({i for i, _ in row["points"]})
            scores.append(f1_margin(row["bounds"], at))
            f1[side] += scores[-1]
            indices[side] += len(at)
        better += scores[1] > scores[0]
        if scores[1] < scores[0]:
            worse.append(pair[1]["seed"])
    m = len(changed)
    print(f"their mean F1 against the bounds {f1[0] / m:.3f} → {f1[1] / m:.3f}, "
          f"indices {indices[0]} → {indices[1]}; F1 better in {better}, worse in "
          f"{len(worse)} (seeds {worse[:20]})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1500)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.diff:
        diff(*(json.loads(p.read_text()) for p in args.diff))
        return
    rows = run(args.seeds)
    errors = [r for r in rows if r["error"]]
    print(f"{len(rows)} series, {len(errors)} raised")
    for row in errors[:10]:
        print(f"  seed {row['seed']}: {row['error']}")
    if args.out:
        args.out.write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
