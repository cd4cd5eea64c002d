"""Recall and points of the defaults on the speed benchmark's real-shaped series, over seeds.

`benchmarks/changepoints.py` times one series per size × shifts (seed n + k). A change to the
search moves those single series by chance; this runs 20 other seeds (1,000–1,019) a cell,
n = 2,000, 5,000 and 10,000 with 2, 10 and 50 shifts (cells whose shifts would sit under 10
readings apart are skipped), and prints the mean recall (a point within max(3, n/100) of a
shift) and the points found in all.

Run: .venv/bin/python benchmarks/changepoints_real_shaped_recall.py [--seeds 20] [--additive]; with
``PYTHONPATH=<other tree>/src`` for another version of the code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from perfsleuth import find_change_points

sys.path.insert(0, str(Path(__file__).resolve().parent))

from changepoints import real_shaped, recall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--additive", action="store_true", help="the series not exponentiated (a gauge)"
    )
    args = parser.parse_args()
    print("| n | shifts | recall | points |")
    print("|---|---|---|---|")
    for n in (2_000, 5_000, 10_000):
        for k in (2, 10, 50):
            if n // (4 * (k + 1)) < 10:
                continue
            found = []
            points = 0
            for seed in range(1_000, 1_000 + args.seeds):
                x, cuts = real_shaped(n, k, seed, additive=args.additive)
                indices = list(find_change_points(x).indices)
                found.append(recall(cuts, indices, n))
                points += len(indices)
            print(f"| {n:,} | {k} | {np.mean(found):.3f} | {points} |", flush=True)


if __name__ == "__main__":
    main()
