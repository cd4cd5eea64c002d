"""Time per bottleneck inference, one window (DESIGN §4 target: ≤ 50 ms).

Simulated windows of the six scenarios (12 samples averaged, every counter of the built-in Linux
model) are inferred one at a time; the script prints the time per inference (median, 90th
percentile, worst) and, for scale, the time of one model evaluation for a batch of workloads.

Run: .venv/bin/python benchmarks/bottleneck.py [--windows 60]
"""

from __future__ import annotations

import os
import sys

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# This file is named like the optional "bottleneck" package pandas probes for: take its folder
# off the import path, or pandas imports this script instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from perfsleuth.bottleneck.infer import infer  # noqa: E402
from perfsleuth.bottleneck.model import load_model  # noqa: E402
from perfsleuth.datasets.counters import SCENARIOS, simulate_scenario  # noqa: E402

TARGET_MS = 50.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--windows", type=int, default=60)
    args = parser.parse_args()
    model = load_model()
    names = list(SCENARIOS)
    windows = []
    for i in range(args.windows):
        run = simulate_scenario(names[i % len(names)], model=model, seed=i, samples=12)
        windows.append(run.frame.groupby("counter")["value"].mean().to_dict())
    infer(model, windows[0])  # warm caches (imports, the scan grid)
    times = []
    right = 0
    for i, observed in enumerate(windows):
        started = time.perf_counter()
        result = infer(model, observed, seed=i)
        times.append(time.perf_counter() - started)
        right += result.bottleneck == SCENARIOS[names[i % len(names)]]
    ms = np.array(times) * 1000
    batch = np.tile(model.priors.median_w(), (68, 1))
    started = time.perf_counter()
    for _ in range(200):
        model.predict(batch)
    per_batch = (time.perf_counter() - started) / 200 * 1000
    print(f"bottleneck inference, {len(ms)} windows ({len(model.parameters)} parameters, "
          f"{len(model.counters)} counters, {len(model.spec.formula)} formulas)")
    print(f"  per inference: median {np.median(ms):.1f} ms, 90th pct "
          f"{np.quantile(ms, 0.9):.1f} ms, worst {ms.max():.1f} ms (target ≤ {TARGET_MS:.0f} ms: "
          f"{'met' if np.median(ms) <= TARGET_MS else 'missed'} at the median)")
    print(f"  model evaluation, batch of 68 workloads: {per_batch:.2f} ms")
    print(f"  bottleneck right in {right} of {len(ms)} windows")
    print(f"  load average while timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
