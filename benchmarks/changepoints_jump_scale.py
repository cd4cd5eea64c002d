"""The lone jump judged on the series' own scale: null shares under skewed and heavy-tailed noise,
and the power it buys for steps in persistent noise.

A level point may pass by its segment's one outsized move (``level._lone_jump``), whatever the
test says. The move is judged on the series' own scale; this prints, before (``--compare SRC``:
another source tree) and now:

* the share of null series with a point (no change; one column; n 100, 300, 1,000; ``--reps``
  series each, seeded): independent Student-t(3) and lognormal (σ 1) readings; AR(1) noise with
  Student-t(3) innovations (φ .5 and .9) and with exponential ones (φ .8, right-skewed, as
  latencies are); AR(1) noise of φ .8 whose innovations are Gaussian with one in 100 multiplied
  by 20 (bursts that decay); Gaussian and Student-t(3) random walks;
* the share of series with a point within 5 readings of a step of 6 marginal σ at a third of
  120 readings of Gaussian AR(1) noise (φ .8 and .9), and of a step there undone at two thirds
  (both edges).

Run: .venv/bin/python benchmarks/changepoints_jump_scale.py [--compare /path/to/other/src]
[--reps 200]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np  # noqa: E402
import source_trees  # noqa: E402
from scipy.signal import lfilter  # noqa: E402

NULLS = (
    "t3",
    "lognormal",
    "ar1-t3-.5",
    "ar1-t3-.9",
    "ar1-exp-.8",
    "ar1-bursts-.8",
    "walk",
    "walk-t3",
)
SIZES = (100, 300, 1000)
STEPS = ("step-.8", "step-.9", "bump-.8", "bump-.9")


def _filtered(e: np.ndarray, phi: float) -> np.ndarray:
    out: np.ndarray = lfilter([1.0], [1.0, -phi], e)
    return out


def null_series(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "t3":
        return rng.standard_t(3, n)
    if kind == "lognormal":
        return rng.lognormal(0.0, 1.0, n)
    if kind.startswith("ar1-t3"):
        return _filtered(rng.standard_t(3, n), float(kind.rsplit("-", 1)[1]))
    if kind == "ar1-exp-.8":
        return _filtered(rng.exponential(1.0, n), 0.8)
    if kind == "ar1-bursts-.8":
        e = rng.standard_normal(n)
        e[rng.random(n) < 0.01] *= 20.0
        return _filtered(e, 0.8)
    if kind == "walk":
        return np.cumsum(rng.standard_normal(n))
    return np.cumsum(rng.standard_t(3, n))


def step_series(kind: str, rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    """120 readings of Gaussian AR(1) noise of unit marginal variance, 6 σ lower from 40 (and
    back at 80 for a bump); the edges to find."""
    shape, phi_text = kind.split("-")
    phi = float(phi_text)
    x = 50.0 + _filtered(rng.standard_normal(120), phi) * np.sqrt(1.0 - phi * phi)
    back = 80 if shape == "bump" else 120
    x[40:back] -= 6.0
    return x, [40] if back == 120 else [40, 80]


def measure(reps: int) -> dict[str, float]:
    """Null shares and step power with the perfsleuth on ``sys.path``."""
    from perfsleuth.changepoints.kernels.search import find_change_points

    out: dict[str, float] = {}
    for kind in NULLS:
        for n in SIZES:
            rng = np.random.default_rng([n, NULLS.index(kind)])
            hits = sum(
                bool(find_change_points(null_series(kind, n, rng)).indices) for _ in range(reps)
            )
            out[f"null {kind} n={n}"] = hits / reps
    for kind in STEPS:
        rng = np.random.default_rng([120, 100 + STEPS.index(kind)])
        found = 0
        for _ in range(reps):
            x, edges = step_series(kind, rng)
            points = find_change_points(x).indices
            found += all(any(abs(i - e) <= 5 for i in points) for e in edges)
        out[f"power {kind} n=120, 6 σ"] = found / reps
    return out


def main() -> None:
    args = source_trees.arguments(__doc__ or "")
    results = source_trees.results(__file__, args, lambda: measure(args.reps))
    labels = list(results)
    print(f"share of {args.reps} series a cell: " + " | ".join(labels))
    print("| cell | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for cell in results["now"]:
        print(f"| {cell} | " + " | ".join(f"{results[lb][cell]:.3f}" for lb in labels) + " |")


if __name__ == "__main__":
    main()
