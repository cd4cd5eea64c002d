"""Whether two source trees' change-point defaults give the same points, series by series.

Speed work must not move a point unnoticed: this runs ``find_change_points(values)`` (the
defaults) on every series of ``benchmarks/changepoints_accuracy.py``'s corpora (``--groups``,
both halves) and on ``benchmarks/changepoints.py``'s ``real_shaped`` series (``--sizes`` × 2,
10, 50 shifts, exponentiated and additive, and two-column stacks of them at the smallest size,
for the joint search), once with another tree's ``src`` first on PYTHONPATH and once with this
tree's, each in its own process, and prints per series whether the indices are identical, and
the largest relative difference of the kept points' p-values, effects and statistics (0 when
bit-for-bit), and whether the whole result is bit-for-bit the same (every field of every kept
and dropped point, the spikes, trend, period and fitted values: one digest).

``--trends R`` adds R seeded series per cell of trend shapes (a ramp; a ramp with two steps up,
or three of either sign; a staircase; exponential growth; a crash in growth; two bends; a ramp
with one step) × 60, 120, 300 and 1,000 readings × AR(1) noise of φ 0, .5 and .8: the trend's two
starts, its alternation and its kinks run on them (only the series that differ are listed).

Run: .venv/bin/python benchmarks/changepoints_same.py --compare /work/main/src
[--groups nab,machine,events,short] [--sizes 10000,100000] [--trends 25]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

HERE = Path(__file__).resolve().parent
OWN_SRC = HERE.parent / "src"
SHIFTS = (2, 10, 50)
TREND_SHAPES = (
    "ramp", "ramp_steps_up", "ramp_steps_mixed", "staircase", "growth", "crash_in_growth",
    "bends", "ramp_one_step",
)  # fmt: skip
TREND_SIZES = (60, 120, 300, 1000)
TREND_PHIS = (0.0, 0.5, 0.8)


def trend_shape(shape: str, n: int, phi: float, seed: int) -> npt.NDArray[np.float64]:
    """One seeded series of a trend shape (``TREND_SHAPES``) in AR(1) noise of unit stationary
    variance (innovations × √(1 − φ²), started at 0)."""
    from scipy.signal import lfilter

    rng = np.random.default_rng([TREND_SHAPES.index(shape), n, round(10 * phi), seed])
    noise = lfilter([1.0], [1.0, -phi], rng.standard_normal(n)) * math.sqrt(1.0 - phi * phi)
    t = np.arange(n)
    x = noise.copy()
    if shape == "ramp":
        x += 6.0 * t / n
    elif shape in ("ramp_steps_up", "ramp_steps_mixed"):
        x += 4.0 * t / n
        k = 2 if shape == "ramp_steps_up" else 3
        for cut in sorted(rng.choice(np.arange(n // 6, 5 * n // 6), k, replace=False)):
            sign = 1.0 if shape == "ramp_steps_up" else rng.choice([-1.0, 1.0])
            x[cut:] += sign * rng.uniform(2.0, 5.0)
    elif shape == "staircase":
        steps = int(rng.integers(3, 8))
        for cut in np.linspace(0, n, steps + 2)[1:-1].astype(int):
            x[cut:] += rng.uniform(0.5, 2.5)
    elif shape == "growth":
        x = np.exp(0.06 * t * (120 / n) + 0.05 * noise)
    elif shape == "crash_in_growth":
        level = np.exp(3.0 * t / n)
        level[int(rng.uniform(0.4, 0.7) * n) :] *= 0.85
        x = level * np.exp(0.03 * noise)
    elif shape == "bends":
        first, second = sorted(rng.choice(np.arange(n // 5, 4 * n // 5), 2, replace=False))
        x += (12.0 * np.maximum(t - first, 0) - 16.0 * np.maximum(t - second, 0)) / n
    else:  # ramp_one_step
        x += 5.0 * t / n
        x[int(rng.uniform(0.3, 0.7) * n) :] += rng.uniform(2.0, 5.0)
    return x


def series(
    groups: list[str], sizes: list[int], trends: int = 0
) -> list[tuple[str, npt.NDArray[np.float64]]]:
    """(name, values) of every series compared, in a fixed order."""
    sys.path.insert(0, str(HERE))
    import changepoints_accuracy as accuracy

    import changepoints as speed

    cases, notes = accuracy.corpus(
        accuracy.NAB_DEFAULT, accuracy.STRUCCHANGE_DEFAULT, groups, accuracy.MIRROR_DEFAULT
    )
    for note in notes:
        print(note, file=sys.stderr)
    out = [(f"{c.group}/{c.half}/{c.name}", c.values) for c in cases]
    for n in sizes:
        for k in SHIFTS:
            out.append((f"real_shaped/{n}x{k}", speed.real_shaped(n, k, seed=n + k)[0]))
            gauge = speed.real_shaped(n, k, seed=n + k, additive=True)[0]
            out.append((f"real_shaped/{n}x{k} additive", gauge))
    if sizes:
        n = min(sizes)
        for k in SHIFTS:
            a, b = speed.real_shaped(n, k, seed=n + k)[0], speed.real_shaped(n, k, seed=k)[0]
            out.append((f"real_shaped/{n}x{k} two columns", np.column_stack([a, b])))
    for shape in TREND_SHAPES:
        for n in TREND_SIZES:
            for phi in TREND_PHIS:
                for seed in range(trends):
                    x = trend_shape(shape, n, phi, seed)
                    out.append((f"trends/{shape}/{n}/φ {phi}/{seed}", x))
    return out


def dump(groups: list[str], sizes: list[int], trends: int, path: Path) -> None:
    """Run the defaults on every series with whatever ``perfsleuth`` imports; write JSON."""
    import perfsleuth
    from perfsleuth.changepoints.kernels.search import find_change_points

    results: dict[str, object] = {"source": str(Path(perfsleuth.__file__).parent)}
    cpu = 0.0
    for name, values in series(groups, sizes, trends):
        t0 = time.process_time()
        found = find_change_points(values)
        cpu += time.process_time() - t0
        results[name] = {
            "indices": list(found.indices),
            "p": [p.p_value for p in found.points],
            "effect": [p.effect for p in found.points],
            "statistic": [p.statistic for p in found.points],
            "slope": [s for p in found.points for s in (*p.slope_before, *p.slope_after)],
            "digest": digest(found),
        }
    results["cpu"] = cpu
    path.write_text(json.dumps(results))


def digest(found: object) -> str:
    """One hash of everything a result holds (float reprs round-trip, so equal digests are
    equal bits)."""
    fitted = getattr(found, "fitted", None)
    text = repr(dataclasses.replace(found, fitted=None))  # type: ignore[type-var]
    # the scale of the model and a log-scale point's level (2026-11-29) are new: their
    # defaults are no difference
    text = text.replace(", scale='linear'", "").replace(", level_at=()", "")
    blob = text.encode() + (b"" if fitted is None else np.ascontiguousarray(fitted).tobytes())
    return hashlib.sha256(blob).hexdigest()


def _gap(a: list[float], b: list[float]) -> float:
    """Largest relative difference of two equally long lists (inf/NaN equal to themselves)."""
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        worst = max(worst, abs(x - y) / max(abs(x), abs(y)))
    return worst


def compare(other: Path, groups: list[str], sizes: list[int], trends: int) -> int:
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, src in (("other", other), ("this", OWN_SRC)):
            out = Path(tmp) / f"{label}.json"
            env = {**os.environ, "PYTHONPATH": str(src)}
            cmd = [sys.executable, __file__, "--dump", str(out)]
            cmd += ["--groups", ",".join(groups), "--sizes", ",".join(map(str, sizes))]
            cmd += ["--trends", str(trends)]
            subprocess.run(cmd, check=True, env=env)
            runs[label] = json.loads(out.read_text())
    before, after = runs["other"], runs["this"]
    print(f"other: {before.pop('source')}  ({before.pop('cpu'):.1f} CPU s)")
    print(f"this:  {after.pop('source')}  ({after.pop('cpu'):.1f} CPU s)")
    differ = exact = 0
    for name, old in before.items():
        new = after[name]
        same = old["indices"] == new["indices"]
        differ += not same
        bits = old.get("digest") == new.get("digest")
        exact += bits
        if bits:
            detail = "bit-for-bit"
        elif same:
            keys = ("p", "effect", "statistic", "slope")
            gaps = [_gap(old.get(key, []), new.get(key, [])) for key in keys]
            detail = "p {:.1e}, effect {:.1e}, T {:.1e}, slopes {:.1e}".format(*gaps)
        else:
            detail = f"{len(old['indices'])} → {len(new['indices'])} points"
        if not (bits and name.startswith("trends/")):  # thousands: only the ones that differ
            print(f"{'same' if same else 'DIFFERENT'}  {name}  ({detail})")
    print(f"{len(before) - differ} of {len(before)} series give the same points")
    print(f"{exact} of {len(before)} series give bit-for-bit the same result")
    return 1 if differ else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="the other tree's src directory")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--groups", default="nab,machine,events,short")
    parser.add_argument("--sizes", default="10000,100000", help="real_shaped lengths")
    parser.add_argument("--trends", type=int, default=0, help="seeded series per trend cell")
    args = parser.parse_args()
    groups = [g for g in args.groups.split(",") if g]
    sizes = [int(v) for v in args.sizes.split(",") if v]
    if args.dump:
        dump(groups, sizes, args.trends, args.dump)
    elif args.compare:
        raise SystemExit(compare(args.compare, groups, sizes, args.trends))
    else:
        parser.error("give --compare SRC")


if __name__ == "__main__":
    main()
