"""Where one default change-point search spends its time: CPU seconds and page faults per kernel.

Times ``find_change_points`` with its defaults on ``benchmarks/changepoints.py``'s
``real_shaped(n, k, seed=n + k)`` series (after one warm-up run on the same series), with each of
the search's main kernels wrapped to add up its CPU time, its calls and the minor page faults
taken inside it (fresh large arrays cost a fault per 4 kB page: the first speed rounds found
a sixth of a 10⁶ search in them), and so is each stage of a description (the trend's starts,
the kinks, the checks after them) and each level search. Kernels called inside another are
counted in both.

Run: .venv/bin/python benchmarks/changepoints_profile.py [--size N] [--shifts K]
(another source tree: ``PYTHONPATH=<its src>`` in front). Report the load average (``uptime``)
with the numbers.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import collections  # noqa: E402
import functools  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_patch import bindings  # noqa: E402

from changepoints import real_shaped  # noqa: E402
from perfsleuth.changepoints.kernels import level, search  # noqa: E402
from perfsleuth.stats import robust  # noqa: E402

# the kernels' functions, wrapped in every kernel module that calls them (``kernel_patch``)
KERNELS = [
    "seeded_candidates", "greedy", "prune", "refine", "_long_run_scale", "_residual_scale",
    "_symmetrised", "_prefixes", "_segment_means", "_significant_slopes", "_without_cycle",
    "_spikes", "_with_kinks", "judge", "best_kink",
]  # fmt: skip
# the stages of a description (``search._describe``), each with the level searches it runs
STAGES = [
    "_cycle_follows_level", "_with_trend", "_alternate", "_hidden_steps", "_prune_with_trend",
    "_with_bends", "find_kinks", "_steps_beside", "_beside", "_lines_of_a_flat",
    "_steps_under_the_floor", "_ramp_instead_of_a_trend", "_breaks", "_at_still_edges",
]  # fmt: skip

seconds: collections.Counter[str] = collections.Counter()
faults: collections.Counter[str] = collections.Counter()
calls: collections.Counter[str] = collections.Counter()


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        f0, t0 = _faults(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds[name] += time.process_time() - t0
            faults[name] += _faults() - f0
            calls[name] += 1

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--shifts", type=int, default=2)
    args = parser.parse_args()
    x, _ = real_shaped(args.size, args.shifts, seed=args.size + args.shifts)
    search.find_change_points(x)  # warm-up: tables, caches, imports
    for name in KERNELS + STAGES:
        modules = bindings(name)
        wrapped = counted(name, vars(modules[0])[name])
        for module in modules:
            setattr(module, name, wrapped)
    robust.persistence = counted("persistence", robust.persistence)  # type: ignore[assignment]
    level._Practical.run = counted("level search", level._Practical.run)  # type: ignore[method-assign]
    f0, t0 = _faults(), time.process_time()
    found = search.find_change_points(x)
    total, total_faults = time.process_time() - t0, _faults() - f0
    print(
        f"n = {args.size}, {args.shifts} shifts: {len(found.indices)} points, "
        f"{total:.3f} CPU s, {total_faults} page faults"
    )
    for name, cpu in seconds.most_common():
        print(
            f"  {name:20s} {cpu:7.3f} s ({cpu / total:4.0%})  {calls[name]:5d} calls  "
            f"{faults[name]:7d} faults"
        )


if __name__ == "__main__":
    main()
