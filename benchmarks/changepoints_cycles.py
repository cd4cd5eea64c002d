"""Which series the cycle stage finds a period in (``perfsleuth.stats.robust.detect_period``).

Three tables, all at the search's own ``min_period`` (2 ``min_size``: 10 from 20 readings on):

* **R datasets** (R's datasets package, from a snapshot of wch/r-source under /work/.mirror):
  seasonal ones with a trend (co2, AirPassengers, UKgas, JohnsonJohnson — quarterly, so its 4
  is below the search's shortest period and shown at ``min_period`` 2 as well), seasonal ones
  without much (nottem, USAccDeaths, UKDriverDeaths, ldeaths), and non-seasonal ones (Nile,
  LakeHuron, WWWusage, BJsales, austres, uspop, treering; lynx and sunspot.year have real
  cycles of about 10 and 11 years): the period found and the points of ``find_change_points``;
  ``--shifts S,..`` also adds a level shift of S times the series' noise σ about its cycle and
  trend (the MAD of its differences over a year, or lag 1 for non-seasonal ones, ÷ √2) at 60%
  of the series, and prints the points found then (``l`` a level point, ``s`` a slope point).
* **Nulls**: seeded series with no cycle — AR(1) noise (φ 0–.95), random walks, a trend in
  AR(1) noise, one large level shift (8 σ) in AR(1) noise, exponential growth with AR(1)
  noise — n from 40 to 10⁴: the share in which a (false) period is found.
* **Seasonal**: the same with a sine cycle of period 12 (and 50 at n ≥ 400) and amplitude 1 or
  2 noise σ added on a trend (a "co2"): the share in which the period is found (±1), and the
  share in which the search removes another cycle besides it.
* **Windows** (``--only windows``): R's datasets cut into 36, 48 and 60 readings, one window
  every 12: the share in which the seasonal ones' year is found, lynx's and the sunspots'
  cycles, and any period in the others (real series with no cycle); in the seasonal
  windows, the points with no shift added and how often a ``--shifts`` shift at 60% is
  found.
* **Two cycles** (``--only two``): hourly series of 8 or 24 weeks (``--weeks``) with a daily
  sine and a weekly pattern (weekends lower), of 1 or 2 noise σ each (or one of them alone),
  AR(1) noise (φ 0 or .5) on a trend rising 20 σ, with or without a level shift of 3 σ at
  60%: the cycles the search removes (``ChangePoints.periods``), the share in which the
  shift is found (a level point within 5 readings) and the other points per series.

The speed benchmark's real-shaped series (``benchmarks/changepoints.py``, period 288) are
listed with ``--speed``; ``--only lags`` tables how exactly periods of 24–288 readings are read
from 3.5–30 cycles (``--reps``/10 series a cell). Seeded, so two versions of ``src`` see the
same series (``PYTHONPATH=<src> .venv/bin/python benchmarks/changepoints_cycles.py``).

The periods are those the search removes (its cycle stage, every cycle in turn; on a version of
``src`` that removed one, that one). Run: ``.venv/bin/python benchmarks/changepoints_cycles.py
[--reps 200] [--shifts 4,8] [--speed] [--only r|null|seasonal|windows|two|speed|lags]``
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.signal import lfilter

from perfsleuth import find_change_points
from perfsleuth.changepoints.kernels.search import _without_cycle
from perfsleuth.stats.robust import detect_period

FloatArray = npt.NDArray[np.float64]

R_SOURCE = Path("/work/.mirror/wch+r-source/repo")
SEASONAL = ("co2", "AirPassengers", "UKgas", "JohnsonJohnson", "nottem", "USAccDeaths",
            "UKDriverDeaths", "ldeaths")  # fmt: skip
OTHERS = ("Nile", "LakeHuron", "lynx", "sunspot.year", "WWWusage", "BJsales", "austres", "uspop",
          "treering")  # fmt: skip
SIZES = (40, 100, 400, 1000, 10_000)
PHIS = (0.0, 0.5, 0.8, 0.9, 0.95)


def r_series(name: str) -> FloatArray:
    """The values of the ts object ``name`` written as R source in R's datasets package."""
    git = R_SOURCE / ".git" if (R_SOURCE / ".git").exists() else R_SOURCE
    file = "UKLungDeaths" if name in ("ldeaths", "mdeaths", "fdeaths") else name
    path = f"HEAD:src/library/datasets/data/{file}.R"
    text = subprocess.run(
        ["git", f"--git-dir={git}", "show", path], check=True, capture_output=True, text=True
    ).stdout
    start = re.search(rf'^"?{re.escape(name)}"?\s*<-', text, re.MULTILINE)
    if start is None:
        raise ValueError(f"{name}: no assignment in {path}")
    body = text[start.end() :]
    body = body[body.index("c(") + 2 :]
    numbers = re.findall(r"-?\d*\.?\d+(?:e-?\d+)?", body[: body.index(")")])
    return np.array([float(v) for v in numbers])


def search_min_period(n: int) -> int:
    return 2 * max(1, min(5, n // 4))


def ar1(rng: np.random.Generator, n: int, phi: float) -> FloatArray:
    """AR(1) noise of unit marginal variance."""
    x: FloatArray = lfilter([1.0], [1.0, -phi], rng.standard_normal(n))
    return x * math.sqrt(1.0 - phi * phi)


def null_series(kind: str, n: int, phi: float, seed: int) -> FloatArray:
    rng = np.random.default_rng(seed)
    t = np.arange(n) / n
    if kind == "walk":
        return np.cumsum(rng.standard_normal(n))
    e = ar1(rng, n, phi)
    if kind == "ar1":
        return e
    if kind == "trend":
        return e + 10.0 * t
    if kind == "step":
        return e + np.where(t < rng.uniform(0.2, 0.8), 0.0, 8.0)
    if kind == "exp":
        return np.exp(3.0 * t) * (10.0 + e)
    raise ValueError(kind)


def seasonal_series(n: int, phi: float, period: int, amplitude: float, seed: int) -> FloatArray:
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return ar1(rng, n, phi) + amplitude * np.sin(2 * np.pi * t / period) + 20.0 * t / n


def periods_of(x: FloatArray) -> tuple[int, ...]:
    """The cycles the search's first stage removes, shortest first."""
    found = _without_cycle(x[:, None], search_min_period(x.size) // 2)[1]
    if isinstance(found, tuple):
        return found
    return () if found is None else (int(found),)  # a version that removed one cycle


def period_of(x: FloatArray) -> int | None:
    """The first (shortest) of them."""
    found = periods_of(x)
    return found[0] if found else None


def two_cycles(n: int, phi: float, daily: float, weekly: float, shift: float, seed: int):
    """Hourly readings: a daily sine and weekends ``weekly`` lower, AR(1) noise on a trend
    rising 20 σ, and a level shift of ``shift`` at 60% (returned with the series)."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    weekend = (t // 24) % 7 >= 5
    x = ar1(rng, n, phi) + daily * np.sin(2 * np.pi * t / 24) - weekly * weekend + 20.0 * t / n
    at = int(0.6 * n)
    return x + np.where(t < at, 0.0, shift), at


def r_table(shifts: list[float]) -> None:
    head = "".join(f" with a {s:g} σ shift at 60% |" for s in shifts)
    print("| series | n | periods | period (min 2) | points |" + head)
    print("|---|---|---|---|---|" + "---|" * len(shifts))
    for name in (*SEASONAL, *OTHERS):
        x = r_series(name)
        cells = [name, str(x.size), str(periods_of(x) or None),
                 str(detect_period(x, min_period=2)), points(x)]  # fmt: skip
        at = int(0.6 * x.size)
        # the noise about cycle and trend: differences over a year (or a lag of 1)
        lag = 4 if name in ("JohnsonJohnson", "UKgas") else 12 if name in SEASONAL else 1
        d = x[lag:] - x[:-lag]
        sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
        for shift in shifts:
            y = x + np.where(np.arange(x.size) < at, 0.0, shift * sigma)
            cells.append(f"{points(y)} (at {at})")
        print("| " + " | ".join(cells) + " |")


def points(x: FloatArray) -> str:
    found = find_change_points(x).points
    return "[" + ", ".join(f"{p.index} {p.kind[0]}" for p in found) + "]"


def null_table(reps: int) -> None:
    print(f"\nshare of {reps} series with no cycle in which a period is found")
    print("| series | φ | " + " | ".join(f"n = {n}" for n in SIZES) + " |")
    print("|---|---|" + "---|" * len(SIZES))
    rows = [("ar1", phi) for phi in PHIS] + [("walk", 1.0)]
    rows += [(kind, phi) for kind in ("trend", "step", "exp") for phi in (0.0, 0.8)]
    for kind, phi in rows:
        cells = []
        for n in SIZES:
            r = reps if n < 10_000 else max(1, reps // 4)
            found = sum(
                period_of(null_series(kind, n, phi, 7919 * n + s)) is not None for s in range(r)
            )
            cells.append(f"{found / r:.3f}")
        print(f"| {kind} | {phi:g} | " + " | ".join(cells) + " |")


def seasonal_table(reps: int) -> None:
    print(f"\nshare of {reps} seasonal series on a trend (rise 20 σ) whose period is found (±1);")
    print("in brackets, the share in which another cycle is removed as well")
    print("| period | amplitude (σ) | φ | " + " | ".join(f"n = {n}" for n in SIZES) + " |")
    print("|---|---|---|" + "---|" * len(SIZES))
    for period in (12, 50):
        for amplitude in (1.0, 2.0):
            for phi in (0.0, 0.5, 0.8):
                cells = []
                for n in SIZES:
                    if n < 3 * period:
                        cells.append("–")
                        continue
                    r = reps if n < 10_000 else max(1, reps // 4)
                    hits = more = 0
                    for s in range(r):
                        x = seasonal_series(n, phi, period, amplitude, 104_729 * n + s)
                        found = periods_of(x)
                        hit = any(abs(p - period) <= 1 for p in found)
                        hits += hit
                        more += len(found) > hit
                    cells.append(f"{hits / r:.3f} ({more / r:.3f})")
                row = f"| {period} | {amplitude:g} | {phi:g} | "
                print(row + " | ".join(cells) + " |")


def two_table(reps: int, weeks_list: tuple[int, ...] = (8, 24)) -> None:
    print(f"\n{reps} hourly series of a daily and a weekly cycle on a trend (rise 20 σ)")
    print("| weeks | φ | daily (σ) | weekly (σ) | shift (σ) | cycles removed (series) |"
          " shift found | other points per series |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for weeks in weeks_list:
        n = 168 * weeks
        for phi in (0.0, 0.5):
            for daily, weekly in ((2.0, 1.0), (1.0, 2.0), (2.0, 0.0), (0.0, 2.0)):
                for shift in (0.0, 3.0):
                    seen: dict[tuple[int, ...], int] = {}
                    found = others = 0
                    for s in range(reps):
                        x, at = two_cycles(n, phi, daily, weekly, shift, 1000 * n + s)
                        cp = find_change_points(x)
                        cycles = getattr(cp, "periods", None) or (
                            () if cp.period is None else (cp.period,)
                        )
                        seen[cycles] = seen.get(cycles, 0) + 1
                        near = [
                            p for p in cp.points if p.kind == "level" and abs(p.index - at) <= 5
                        ]
                        found += bool(near and shift)
                        others += len(cp.points) - len(near)
                    cycles = ", ".join(
                        f"{list(k)} {v}" for k, v in sorted(seen.items(), key=lambda kv: -kv[1])[:3]
                    )
                    shifts = f"{found / reps:.2f}" if shift else "–"
                    print(f"| {weeks} | {phi:g} | {daily:g} | {weekly:g} | {shift:g} | {cycles} |"
                          f" {shifts} | {others / reps:.2f} |")  # fmt: skip


def speed_table() -> None:
    from changepoints import PERIOD, real_shaped

    print(f"\nthe speed benchmark's real-shaped series (period {PERIOD})")
    print("| n | shifts | periods |")
    print("|---|---|---|")
    for n, k in ((10_000, 2), (100_000, 2), (100_000, 10), (100_000, 50), (1_000_000, 2),
                 (1_000_000, 10), (1_000_000, 50)):  # fmt: skip
        x, _ = real_shaped(n, k, seed=n + k)
        print(f"| {n} | {k} | {periods_of(x) or None} |")


# real cycles beside SEASONAL's year: lynx trappings (about 10 years), yearly sunspots (about 11)
CYCLIC = {"lynx": 10, "sunspot.year": 11}
QUARTERLY = ("UKgas", "JohnsonJohnson")  # a year of 4, under the search's shortest period
WINDOW_LENGTHS = (36, 48, 60)


def windows_table(shifts: list[float]) -> None:
    """R's datasets cut into windows of 36, 48 and 60 readings, one every 12: how often
    ``detect_period`` finds the monthly seasonal ones' year (12 ± 1), the real cycles of lynx
    and sunspots (their period ± 2), and any period in the others (OTHERS less those two);
    then, in the seasonal windows, the points ``find_change_points`` reports with no shift
    added, and how often a shift of each size at 60% (σ from the differences over a year, as
    :func:`r_table`) is found within 2 readings."""
    from perfsleuth.stats.robust import detect_period

    groups = {
        "seasonal: the year": ({name: 12 for name in SEASONAL if name not in QUARTERLY}, 1),
        "lynx, sunspots: their cycle": (CYCLIC, 2),
        "no cycle: any period": ({name: 0 for name in OTHERS if name not in CYCLIC}, None),
    }
    heads = [*groups, "seasonal: points, no shift", *(f"seasonal: {v:g} σ found" for v in shifts)]
    print("\nR's datasets in windows (one every 12 readings): found / windows")
    print("| windows of | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    for length in WINDOW_LENGTHS:
        cells = []
        for periods, reach in groups.values():
            found = total = 0
            for name, period in periods.items():
                x = r_series(name)
                for start in range(0, x.size - length + 1, 12):
                    p = detect_period(x[start : start + length], min_period=10)
                    total += 1
                    found += p is not None and (reach is None or abs(p - period) <= reach)
            cells.append(f"{found} / {total}")
        at = int(0.6 * length)
        quiet, hits, total = 0, [0] * len(shifts), 0
        for name in groups["seasonal: the year"][0]:
            x = r_series(name)
            d = x[12:] - x[:-12]
            sigma = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2.0)
            for start in range(0, x.size - length + 1, 12):
                window = x[start : start + length]
                total += 1
                quiet += len(find_change_points(window).indices)
                for j, shift in enumerate(shifts):
                    y = window + np.where(np.arange(length) < at, 0.0, shift * sigma)
                    hits[j] += any(abs(i - at) <= 2 for i in find_change_points(y).indices)
        cells += [f"{quiet} in {total}", *(f"{h} / {total}" for h in hits)]
        print(f"| {length} | " + " | ".join(cells) + " |")


def lags_table(reps: int) -> None:
    """How exactly ``detect_period`` reads a period from few cycles: sines of 24, 50, 168 and
    288 readings over 3.5–30 periods, ±3 σ and ±10 σ alternately, random phases, AR(1) noise
    (φ .6, unit innovations × .8)."""
    from scipy.signal import lfilter

    from perfsleuth.stats.robust import detect_period

    print(f"\nperiod read by detect_period, {reps} series a cell (random phases)")
    print("| period | n | exact | ±1 | none | further | further ones |")
    print("|---|---|---|---|---|---|---|")
    for period in (24, 50, 168, 288):
        for cycles in (3.5, 4, 5.2, 8, 12, 30):
            n = int(cycles * period)
            found = []
            for seed in range(reps):
                rng = np.random.default_rng(seed)
                t = np.arange(n)
                amplitude = 3.0 if seed % 2 else 10.0
                phase = rng.uniform(0, 2 * np.pi)
                noise = lfilter([1.0], [1.0, -0.6], rng.normal(0, 1, n)) * 0.8
                x = 50 + amplitude * np.sin(2 * np.pi * t / period + phase) + noise
                found.append(detect_period(x, min_period=10))
            exact = sum(p == period for p in found)
            near = sum(p is not None and abs(p - period) == 1 for p in found)
            none = sum(p is None for p in found)
            far = sorted({p for p in found if p is not None and abs(p - period) > 1})
            print(f"| {period} | {n} | {exact} | {near} | {none} | {reps - exact - near - none} "
                  f"| {far} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--shifts", default="4,8", help="level shifts added, in noise σ")
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--weeks", default="8,24", help="--only two: the series' lengths, weeks")
    parser.add_argument(
        "--only",
        choices=("r", "null", "seasonal", "two", "speed", "lags", "windows"),
        default=None,
    )
    args = parser.parse_args()
    if args.only in (None, "r"):
        r_table([float(v) for v in args.shifts.split(",") if v])
    if args.only in (None, "null"):
        null_table(args.reps)
    if args.only in (None, "seasonal"):
        seasonal_table(args.reps)
    if args.only in (None, "windows"):
        windows_table([float(v) for v in args.shifts.split(",") if v])
    if args.only in (None, "two"):
        two_table(max(1, args.reps // 10), tuple(int(w) for w in args.weeks.split(",")))
    if args.speed or args.only == "speed":
        speed_table()
    if args.only == "lags":
        lags_table(max(1, args.reps // 10))


if __name__ == "__main__":
    main()
