"""Build ``src/perfsleuth/stats/data/fpa_table.npz``: simulated FPA critical values (see
``perfsleuth.stats.fpa`` for what the table holds and how it is extrapolated).

    .venv/bin/python scripts/make_fpa_table.py            # the shipped table (~15 min, 1 core)
    .venv/bin/python scripts/make_fpa_table.py --dry-run  # print the plan and the work, no run

The result is deterministic for a given seed and grid; the seed, grids and replicates per length
are stored in the file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from perfsleuth.stats.fpa import (
    MIN_SEGMENT_GRID,
    PHI_GRID,
    TABLE_PATH,
    TAIL_PROB_GRID,
    build_table,
    default_n_grid,
)

SEED = 19910521  # the paper's conference: SIGMETRICS, May 1991
REPS_MAX = 40_000  # replicates for short series (n <= BUDGET / REPS_MAX)
BUDGET = 2e8  # simulated observations per (n, φ) cell for longer series
REPS_MIN = 2_000
N_SIMULATED_MAX = 40_000  # longer lengths are extrapolated (module docstring of fpa)


def reps_for(n: int) -> int:
    return int(min(REPS_MAX, max(REPS_MIN, BUDGET / n)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TABLE_PATH)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    args = parser.parse_args(argv)

    n_grid = default_n_grid()
    simulated = [n for n in n_grid if n <= N_SIMULATED_MAX]
    work = sum(n * reps_for(n) for n in simulated) * len(PHI_GRID)
    print(
        f"n grid: {len(n_grid)} lengths {n_grid[0]}..{n_grid[-1]}; simulated up to "
        f"{simulated[-1]}; phi: {len(PHI_GRID)} values; min_segment: {MIN_SEGMENT_GRID}; "
        f"tail probabilities: {len(TAIL_PROB_GRID)}; {work:.3g} simulated observations",
        file=sys.stderr,
    )
    if args.dry_run:
        return 0
    table = build_table(
        n_grid=n_grid,
        phi_grid=PHI_GRID,
        min_segments=MIN_SEGMENT_GRID,
        tail_probs=TAIL_PROB_GRID,
        reps=reps_for,
        seed=args.seed,
        n_simulated_max=N_SIMULATED_MAX,
        progress=lambda line: print(line, file=sys.stderr),
    )
    table.save(args.out)
    slopes = table.slope[np.isfinite(table.slope)]
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1024:.0f} KiB) in {table.seconds:.0f} s; "
        f"extrapolation: n(T-1) grows by {slopes.min():.3g}..{slopes.max():.3g} per log log n",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
