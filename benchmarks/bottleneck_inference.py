"""Time per bottleneck inference, one window (DESIGN §4 target: ≤ 50 ms).

Simulated windows of the six scenarios (12 samples averaged, every counter of the built-in Linux
model) are inferred one at a time; the script prints the time per inference (median, 90th
percentile, worst) and, for scale, the time of one model evaluation for a batch of workloads;
then the synthetic recovery over the same windows: how often the bottleneck is right, and the
relative error of each scenario's key parameters (its load and request size).

Run: .venv/bin/python benchmarks/bottleneck_inference.py [--windows 60]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from perfsleuth.bottleneck.kernels.infer import infer  # noqa: E402
from perfsleuth.bottleneck.kernels.model import load_model  # noqa: E402
from perfsleuth.datasets.counters import SCENARIOS, simulate_scenario  # noqa: E402

TARGET_MS = 50.0
# The parameters each scenario is about (as in tests/bottleneck/test_infer.py).
KEY = {
    "seq_read": ("seq_read_bw",),
    "seq_write": ("seq_write_bw",),
    "rand_read": ("rand_read_rate", "rand_read_size"),
    "rand_write": ("rand_write_rate", "rand_write_size"),
    "cpu": ("app_cpu",),
    "memory": ("rand_read_rate", "rand_read_size"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--windows", type=int, default=60)
    args = parser.parse_args()
    model = load_model()
    names = list(SCENARIOS)
    windows = []
    runs = []
    for i in range(args.windows):
        run = simulate_scenario(names[i % len(names)], model=model, seed=i, samples=12)
        runs.append(run)
        windows.append(run.frame.groupby("counter")["value"].mean().to_dict())
    infer(model, windows[0])  # warm caches (imports, the scan grid)
    times = []
    right = 0
    errors: dict[tuple[str, str], list[float]] = {}
    for i, observed in enumerate(windows):
        started = time.perf_counter()
        result = infer(model, observed, seed=i)
        times.append(time.perf_counter() - started)
        right += result.bottleneck == runs[i].bottleneck
        for name in KEY[runs[i].scenario]:
            errors.setdefault((runs[i].scenario, name), []).append(
                abs(result.value(name) / runs[i].value(name) - 1)
            )
    ms = np.array(times) * 1000
    batch = np.tile(model.priors.median_w(), (68, 1))
    started = time.perf_counter()
    for _ in range(200):
        model.predict(batch)
    per_batch = (time.perf_counter() - started) / 200 * 1000
    print(
        f"bottleneck inference, {len(ms)} windows ({len(model.parameters)} parameters, "
        f"{len(model.counters)} counters, {len(model.spec.formula)} formulas)"
    )
    print(
        f"  per inference: median {np.median(ms):.1f} ms, 90th pct "
        f"{np.quantile(ms, 0.9):.1f} ms, worst {ms.max():.1f} ms (target ≤ {TARGET_MS:.0f} ms: "
        f"{'met' if np.median(ms) <= TARGET_MS else 'missed'} at the median)"
    )
    print(f"  model evaluation, batch of 68 workloads: {per_batch:.2f} ms")
    print(f"  bottleneck right in {right} of {len(ms)} windows ({right / len(ms):.1%})")
    print("  relative error of the key parameters (median / 95th pct / share within 10%):")
    for (scenario, name), values in errors.items():
        e = np.array(values)
        print(
            f"    {scenario:10s} {name:16s} {np.median(e):6.1%} / {np.quantile(e, 0.95):6.1%}"
            f" / {np.mean(e <= 0.10):6.1%}  (n = {len(e)})"
        )
    print(f"  load average while timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
