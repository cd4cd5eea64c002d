"""Several columns searched jointly: a jump some columns share, on null and real series.

The joint test spreads a jump that some columns share over all of them and tests it at the φ
of their segment, near 1 for random walks: two airlines' share prices, each found alone at its
jump, were found jointly not at all. One column's lone jump (``level._lone_jump``) is therefore
also a route to significance for several columns, each column judged at α / columns (a union
bound). This prints, before (``--compare SRC``: another source tree) and now:

* the share of null series with a point (no change; 2 and 3 columns of independent Gaussian,
  AR(1) φ .5 and .9, Gaussian and Student-t(3) random walks, and correlated AR(1) φ .5; n 100,
  300, 1,000; ``--reps`` series each, seeded);
* the points found jointly on pairs of real series from the ``short`` corpus that share an
  annotated change (read from fetched snapshots, as ``changepoints_accuracy.py`` reads them).

Run: .venv/bin/python benchmarks/changepoints_joint_jumps.py [--compare /path/to/other/src]
[--reps 200]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import source_trees  # noqa: E402

NULLS = ("gaussian", "ar1-.5", "ar1-.9", "walk", "walk-t3", "correlated")
SIZES = (100, 300, 1000)
PAIRS = (
    ("stock_delta_air_lines", "stock_southwest_airlines"),
    ("seatbelts_drivers", "seatbelts_front", "seatbelts_van_drivers"),
    ("california_accidents_total", "california_fatal_share"),
    ("us_gnp_nominal", "us_gnp_real"),
    ("outbreak_measles_aachen", "outbreak_measles_leer"),
)


def null_series(kind: str, n: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    # imported here, once the worker's source tree leads sys.path: it imports perfsleuth
    from changepoints_innovations import ar1

    if kind == "gaussian":
        return rng.standard_normal((n, dims))
    if kind.startswith("ar1"):
        phi = float(kind.split("-")[1])
        return np.column_stack([ar1(n, phi, rng) for _ in range(dims)])
    if kind == "walk":
        return np.cumsum(rng.standard_normal((n, dims)), axis=0)
    if kind == "walk-t3":
        return np.cumsum(rng.standard_t(3, (n, dims)), axis=0)
    common = ar1(n, 0.5, rng)  # correlated .5 between columns
    return np.column_stack([0.5 * common + np.sqrt(0.75) * ar1(n, 0.5, rng) for _ in range(dims)])


def measure(reps: int) -> dict[str, object]:
    """Null shares and the real pairs' points with the perfsleuth on ``sys.path``."""
    from perfsleuth.changepoints.kernels.search import find_change_points

    nulls: dict[str, float] = {}
    for kind in NULLS:
        for n in SIZES:
            for dims in (2, 3):
                rng = np.random.default_rng([n, dims, NULLS.index(kind)])
                hits = sum(
                    bool(find_change_points(null_series(kind, n, dims, rng)).indices)
                    for _ in range(reps)
                )
                nulls[f"{kind} n={n} d={dims}"] = hits / reps
    import changepoints_accuracy as accuracy

    cases, _ = accuracy.corpus(accuracy.NAB_DEFAULT, accuracy.STRUCCHANGE_DEFAULT, ["short"])
    by_name = {c.name: c for c in cases}
    real: dict[str, object] = {}
    for names in PAIRS:
        if not all(name in by_name for name in names):
            continue
        columns = [np.asarray(by_name[name].values, float).ravel() for name in names]
        x = np.column_stack(columns)
        real[" + ".join(names)] = {
            "truth": [list(by_name[name].points) for name in names],
            "joint": list(find_change_points(x).indices),
        }
    return {"nulls": nulls, "real": real}


def main() -> None:
    args = source_trees.arguments(__doc__ or "")
    results = source_trees.results(__file__, args, lambda: measure(args.reps))
    labels = list(results)
    print(f"share of {args.reps} null series with a point ({' → '.join(labels)})")
    for key in results["now"]["nulls"]:
        print(f"  {key:24s} " + " → ".join(f"{results[k]['nulls'][key]:.3f}" for k in labels))
    print("real series sharing an annotated change: points found jointly")
    for key, now in results["now"]["real"].items():
        found = " → ".join(str(results[k]["real"][key]["joint"]) for k in labels)
        print(f"  {key}: truth {now['truth']}; {found}")


if __name__ == "__main__":
    main()
