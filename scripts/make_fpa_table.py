"""Build the shipped FPA tables: ``src/perfsleuth/changepoints/kernels/data/fpa_table.npz``
(one column) and ``fpa_table_d{k}.npz`` (k columns searched jointly); see
``perfsleuth.changepoints.kernels.fpa`` for what a table holds and how it is extrapolated.

    .venv/bin/python scripts/make_fpa_table.py            # the 1-D table (~12 min, 1 core)
    .venv/bin/python scripts/make_fpa_table.py --dims 4   # the 4-column table (cheaper plan)
    .venv/bin/python scripts/make_fpa_table.py --dry-run  # print the plan and the work, no run

The result is deterministic for a given seed, grid and number of columns; the seed, grids and
replicates per length are stored in the file.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsleuth.changepoints.kernels.fpa import (
    DIMS_GRID,
    MIN_SIZE_GRID,
    PHI_GRID,
    TAIL_PROB_GRID,
    build_table,
    default_n_grid,
    table_path,
)

SEED = 19910521  # the paper's conference: SIGMETRICS, May 1991


@dataclass(frozen=True)
class Plan:
    """Replicates per length: ``min(reps_max, max(reps_min, budget / n))`` (a replicate is one
    series of n observations in each of the ``dims`` columns), simulated up to
    ``n_simulated_max`` and extrapolated beyond (module docstring of fpa)."""

    reps_max: int
    budget: float
    reps_min: int
    n_simulated_max: int

    def reps_for(self, n: int) -> int:
        return int(min(self.reps_max, max(self.reps_min, self.budget / n)))


ONE_COLUMN = Plan(reps_max=40_000, budget=2e8, reps_min=2_000, n_simulated_max=40_000)
# Several columns cost dims times as much per replicate, and are a refinement of a conservative
# fallback (the 1-D table at the largest φ): a tenth of the replicates, simulated to 10⁴.
SEVERAL_COLUMNS = Plan(reps_max=4_000, budget=2e7, reps_min=2_000, n_simulated_max=10_000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, default=1, choices=DIMS_GRID, help="columns")
    parser.add_argument("--out", type=Path, help="default: the shipped table for --dims")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    args = parser.parse_args(argv)

    plan = ONE_COLUMN if args.dims == 1 else SEVERAL_COLUMNS
    out: Path = args.out if args.out is not None else table_path(args.dims)
    n_grid = default_n_grid()
    simulated = [n for n in n_grid if n <= plan.n_simulated_max]
    work = sum(n * plan.reps_for(n) for n in simulated) * len(PHI_GRID) * args.dims
    print(
        f"dims: {args.dims}; n grid: {len(n_grid)} lengths {n_grid[0]}..{n_grid[-1]}; simulated "
        f"up to {simulated[-1]}; phi: {len(PHI_GRID)} values; min_size: {MIN_SIZE_GRID}; "
        f"tail probabilities: {len(TAIL_PROB_GRID)}; {work:.3g} simulated observations",
        file=sys.stderr,
    )
    if args.dry_run:
        return 0
    table = build_table(
        n_grid=n_grid,
        phi_grid=PHI_GRID,
        min_sizes=MIN_SIZE_GRID,
        tail_probs=TAIL_PROB_GRID,
        reps=plan.reps_for,
        seed=args.seed,
        n_simulated_max=plan.n_simulated_max,
        dims=args.dims,
        progress=lambda line: print(line, file=sys.stderr),
    )
    table.save(out)
    slopes = table.slope[np.isfinite(table.slope)]
    print(
        f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB) in {table.seconds:.0f} s; "
        f"extrapolation: n(T-1) grows by {slopes.min():.3g}..{slopes.max():.3g} per log log n",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
