"""How often the watch test's fake Prometheus series shows a spike finding, over clock alignments.

``tests/run/test_watch.py`` serves 10 minutes of 5 s latency samples, a step from 10 to 20 ms
5 minutes before "now", with noise seeded by each sample's time: the data depend on the clock.
This replays that series at 400 alignments of "now" and counts those whose change points give a
spike finding (a second alert in the test), for Gaussian and for uniform noise of the same SD
(0.5 ms). Run: ``.venv/bin/python benchmarks/changepoints_clock_spikes.py``.
"""

from __future__ import annotations

import numpy as np

from perfsleuth import find_change_points

SD = 0.0005  # s
HALF_WIDTH = SD * 3**0.5  # a uniform of this half-width has standard deviation SD


def noise(t: float, kind: str) -> float:
    rng = np.random.default_rng(round(t * 1000) % 2**32)
    return float(
        rng.normal(0.0, SD) if kind == "gaussian" else rng.uniform(-HALF_WIDTH, HALF_WIDTH)
    )


def main(alignments: int = 400, start: float = 1.8e9) -> None:
    for kind in ("gaussian", "uniform"):
        spiky = one_point = 0
        for k in range(alignments):
            now = start + k * 1.37
            times = np.arange(now - 600.0, now + 2.5, 5.0)
            values = np.where(times < now - 300.0, 0.010, 0.020)
            values = values + np.array([noise(t, kind) for t in times])
            found = find_change_points(values)
            spiky += bool(found.notable_spikes())
            one_point += len(found.indices) == 1
        print(
            f"{kind}: {spiky} of {alignments} alignments with a spike finding, "
            f"{one_point} with exactly one change point"
        )


if __name__ == "__main__":
    main()
