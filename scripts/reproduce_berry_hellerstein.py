"""Reproduce Berry & Hellerstein (1991) §4 on simulated M/M/1 FCFS queues.

Writes ``results.json`` and ``results.md`` (plain-text tables) to ``--out``:

(a) false-positive rate at α = .05 with no change, N ∈ {100, 1000}, ρ ∈ {.1, .2, .5, .8}, on
    response times and on queue lengths, for the FPA test, the paper's fitted curve (Eq. 8) and
    the F distribution (figure 5; the paper quotes ≈ .95 false positives for the F test at
    N = 1000, ρ = .1) — each on the raw values as in the paper — and for perfsleuth's default
    search (seeded candidates, each point judged between its neighbours by the FPA test,
    practical-significance floors and penalty, cycle, trend and skewness handled; see
    ``docs/changepoints.md``);
(b) power vs Δρ (figure 9): base ρ ∈ {.2, .5}, Δρ ∈ {0, .05, .1, .2, .3}, change of the mean
    service time at mid-series (f = .5), N ∈ {100, 1000} (``--change arrival``: of the arrival
    rate);
(c) candidate accuracy (figure 10): the fraction f̂ of observations the optimal 2-partition puts
    after its split, against the true f = .5, for ρ ∈ {.2, .5}, Δρ ∈ {.1, .3};
(d) §4.4: power on queue lengths vs response times for the same Δρ as changes of the arrival
    rate (the paper's claim is about those: queue lengths are the more sensitive);
(e) the ceiling of (b) and (d): power of the difference of means at the known change, calibrated
    on series with no change (:func:`oracle_power`), for both readings of Δρ.

How this follows the paper's simulation (§3, §4.1):

* Observations are the response times of *successive customers*, unaggregated ("with
  unaggregated response times", §4.1) — every customer, not spaced samples. Queue lengths are the
  number in system seen by each arriving customer.
* Arrival rate normalised to λ = 1, so the mean service time s is the utilisation ρ (§4.1).
* Initial transient of 60,000 customers dropped before the N observed (as in the figure-5
  simulations); ``simulate_mm1`` also starts from the stationary waiting-time distribution.
* Figure 5 uses 100 replications; the replicate count for figures 9/10 is not legible in our copy
  (they show 90% confidence intervals). We default to ``--reps 400`` per cell (SE of a .05 rate
  ≈ .011) and report 90% Wilson intervals; ``--quick`` uses 100, the paper's count.
* The change in utilisation Δρ affects the final fN arrivals, f = .5. With λ normalised to 1
  it is a change of the mean **service time** s → s + Δρ (``factor="service"``, the default):
  §4.1 "normalize s by λ (i.e., λ = 1), so the magnitude of s can be interpreted as utilization
  (ρ). A change in performance factors consists of a change in utilization Δρ" — with λ = 1
  fixed, ρ moves only through s; and §4.4's worked example of ρ + Δρ = (λ + Δλ)(s + Δs) is
  "Δs = .1, Δλ = 0; so Δρ = .1". The mean response time s/(1 − ρ) then goes .25 → .43 for
  ρ .2 → .3 (+71%), against .25 → .29 (+14%) when the arrival rate carries the change
  (λ' = (ρ + Δρ)/s, ``factor="arrival"``, which (d) uses: §4.4's queue lengths against
  response times). Until 2026-11-28 this script changed the arrival rate for (b), and the
  power of figure 9 looked out of reach (ceiling .41 on response times at N = 1000, ρ .2 → .3).
* A false positive / detection is the first (top-level) test of FindChangePoints rejecting H0 at
  α = .05 (``max_depth=0``; with no change only this test can create the first point, and every
  test is at α as in the paper, ``alpha_spending="none"``). The candidate for (c) is Fisher's
  optimal 2-partition of the whole series (``min_size=5``), significant or not.

Run: .venv/bin/python scripts/reproduce_berry_hellerstein.py --out /tmp/bh [--reps R] [--quick]
[--change arrival]
(``--defaults-fp [--reps R] [--seed-set K]`` prints only the false positives of the defaults,
both metrics, on the reproduction's series or, with K above 4, on another set as large;
``--defaults-power [--reps R] [--change arrival] [--seed-set K]`` their power;
``--defaults-spikes [--reps R]`` the spike findings the defaults show on the same series)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perfsleuth.changepoints.kernels.search import find_change_points, two_partition
from perfsleuth.datasets import simulate_mm1

ALPHA = 0.05
WARMUP = 60_000  # the paper's initial transient
METHODS = ("fpa", "paper", "f", "defaults")
METRICS = ("response", "queue_length")
F_SHIFT = 0.5


@dataclass(frozen=True)
class Rate:
    hits: int
    reps: int

    @property
    def p(self) -> float:
        return self.hits / self.reps

    def wilson90(self) -> tuple[float, float]:
        z, n, p = 1.6449, self.reps, self.p
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def as_dict(self) -> dict[str, float | int]:
        lo, hi = self.wilson90()
        return {"rate": self.p, "hits": self.hits, "reps": self.reps, "ci90": [lo, hi]}

    def __str__(self) -> str:
        lo, hi = self.wilson90()
        return f"{self.p:.3f} [{lo:.2f},{hi:.2f}]"


FACTORS = ("service", "arrival")


def run(n: int, rho: float, delta_rho: float, seed: int, factor: str = "service"):
    """One replicate: λ = 1, s = ρ; when Δρ > 0 the utilisation becomes ρ + Δρ at mid-series
    through the mean service time (``factor="service"``, the paper's §4.1) or the arrival rate
    (``"arrival"``)."""
    change: dict[str, float] = {}
    if delta_rho > 0:
        change = {"change_at": round(n * (1 - F_SHIFT))}
        if factor == "service":
            change["new_service_time"] = rho + delta_rho
        elif factor == "arrival":
            change["new_arrival_rate"] = 1.0 + delta_rho / rho
        else:
            raise ValueError(f"factor must be one of {FACTORS}, got {factor!r}")
    return simulate_mm1(n, arrival_rate=1.0, service_time=rho, seed=seed, warmup=WARMUP, **change)


def rejects(x: np.ndarray, method: str) -> bool:
    """The paper's test (raw values, every test at α, top level only), or with
    ``method="defaults"`` perfsleuth's default search (``find_change_points(x)``)."""
    if method == "defaults":
        return len(find_change_points(x).indices) > 0
    cp = find_change_points(
        x,
        alpha=ALPHA,
        method=method,  # type: ignore[arg-type]
        alpha_spending="none",
        max_depth=0,
        robust=False,
        min_effect=0.0,
    )
    return len(cp.indices) > 0


def _seed(*parts: float) -> int:
    """A deterministic seed per (experiment, cell, replicate)."""
    return int(np.random.SeedSequence([round(p * 1000) for p in parts]).generate_state(1)[0])


def false_positives(
    n: int, rho: float, reps: int, methods=METHODS, metrics=METRICS, seed_set: int = 1
):
    """The share of series with no change in which each method rejects (``seed_set``: 1, the
    reproduction's series; a number above 4, as many other series)."""
    hits = {(m, k): 0 for m in methods for k in metrics}
    for r in range(reps):
        sim = run(n, rho, 0.0, _seed(seed_set, n, rho, r))
        for k in metrics:
            x = np.asarray(getattr(sim, k), dtype=float)
            for m in methods:
                hits[m, k] += rejects(x, m)
    return {key: Rate(h, reps) for key, h in hits.items()}


def power_and_accuracy(
    n: int,
    rho: float,
    delta_rho: float,
    reps: int,
    metrics=METRICS,
    method: str = "fpa",
    factor: str = "service",
    seed_set: int = 2,
):
    """Detections per metric (``method``'s) and the candidates' f̂ when Δρ moves ``factor``
    (the same seeds for either factor; ``seed_set``: 2, the reproduction's series; a number
    above 4, as many other series)."""
    hits = dict.fromkeys(metrics, 0)
    fhat: list[float] = []
    for r in range(reps):
        sim = run(n, rho, delta_rho, _seed(seed_set, n, rho, delta_rho, r), factor)
        for k in metrics:
            hits[k] += rejects(np.asarray(getattr(sim, k), dtype=float), method)
        split = two_partition(sim.response, min_size=5)
        fhat.append((n - split.index) / n)
    return {k: Rate(h, reps) for k, h in hits.items()}, np.asarray(fhat)


def oracle_power(
    n: int, rho: float, delta_rho: float, reps: int, factor: str = "service"
) -> dict[str, Rate]:
    """The most any mean-change test at α = .05 can do here: the difference of the two halves'
    means at the *known* change (f = .5), with its critical value the (1 − α) quantile of the
    same difference in ``reps`` series with no change (exact calibration, whatever the
    dependence and the tails). A test that has to find the change too has less power."""
    half = round(n * (1 - F_SHIFT))

    def gaps(delta: float, experiment: int) -> dict[str, np.ndarray]:
        out: dict[str, list[float]] = {k: [] for k in METRICS}
        for r in range(reps):
            sim = run(n, rho, delta, _seed(experiment, n, rho, delta, r), factor)
            for k in METRICS:
                x = np.asarray(getattr(sim, k), dtype=float)
                out[k].append(abs(x[half:].mean() - x[:half].mean()))
        return {k: np.asarray(v) for k, v in out.items()}

    null, shifted = gaps(0.0, 3), gaps(delta_rho, 4)
    return {
        k: Rate(int(np.sum(shifted[k] > np.quantile(null[k], 1 - ALPHA))), reps) for k in METRICS
    }


def accuracy_summary(fhat: np.ndarray) -> dict[str, float]:
    err = fhat - F_SHIFT
    return {
        "median_fhat": float(np.median(fhat)),
        "q10_fhat": float(np.quantile(fhat, 0.1)),
        "q90_fhat": float(np.quantile(fhat, 0.9)),
        "p_within_0.05": float(np.mean(np.abs(err) <= 0.05)),
        "p_within_0.10": float(np.mean(np.abs(err) <= 0.10)),
        "p_late": float(np.mean(err < -0.05)),
        "p_early": float(np.mean(err > 0.05)),
    }


def print_defaults_false_positives(reps: int, seed_set: int = 1) -> None:
    """The false-positive table of ``find_change_points(x)`` (the defaults), both metrics."""
    print(f"perfsleuth defaults, false positives at α = .05, {reps} series per cell (90% CI), "
          f"seed set {seed_set}")  # fmt: skip
    print("| N | ρ | response | queue length |")
    print("|---|---|---|---|")
    for n in (100, 1000):
        for rho in (0.2, 0.5, 0.8):
            rates = false_positives(n, rho, reps, methods=("defaults",), seed_set=seed_set)
            cells = " | ".join(str(rates["defaults", k]) for k in METRICS)
            print(f"| {n} | {rho} | {cells} |", flush=True)


def print_defaults_power(reps: int, factor: str, seed_set: int = 2) -> None:
    """The power of ``find_change_points(x)`` (the defaults), both metrics, ρ = .2: the issue's
    bar is ≥ .8 at N = 1000, Δρ = .1 on response times."""
    print(f"perfsleuth defaults, power (change of the {factor}), {reps} series per cell (90% CI), "
          f"seed set {seed_set}")  # fmt: skip
    print("| N | ρ | Δρ | response | queue length |")
    print("|---|---|---|---|---|")
    for n in (100, 1000):
        for d in (0.1, 0.3):
            rates, _ = power_and_accuracy(
                n, 0.2, d, reps, method="defaults", factor=factor, seed_set=seed_set
            )
            cells = " | ".join(str(rates[k]) for k in METRICS)
            print(f"| {n} | 0.2 | {d} | {cells} |", flush=True)


def print_defaults_spike_findings(reps: int) -> None:
    """How many spike findings the defaults show on M/M/1 series with no change: the share of
    series with at least one, and the mean per series (``ChangePoints.notable_spikes()``)."""
    print(f"perfsleuth defaults, spike findings with no change, {reps} series per cell")
    print("| N | ρ | response: share, mean | queue length: share, mean |")
    print("|---|---|---|---|")
    for n in (100, 1000):
        for rho in (0.2, 0.5, 0.8):
            shown = {k: [] for k in METRICS}
            for r in range(reps):
                sim = run(n, rho, 0.0, _seed(1, n, rho, r))
                for k in METRICS:
                    found = find_change_points(np.asarray(getattr(sim, k), dtype=float))
                    shown[k].append(len(found.notable_spikes()))
            cells = " | ".join(
                f"{np.mean(np.array(v) > 0):.3f}, {np.mean(v):.2f}" for v in shown.values()
            )
            print(f"| {n} | {rho} | {cells} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="output directory (the whole reproduction)")
    parser.add_argument("--reps", type=int, default=400, help="replicates per cell (400)")
    parser.add_argument("--quick", action="store_true", help="100 replicates (the paper's)")
    parser.add_argument(
        "--defaults-fp",
        action="store_true",
        help="only the false positives of perfsleuth's defaults (ρ = .2, .5, .8), printed",
    )
    parser.add_argument(
        "--defaults-power",
        action="store_true",
        help="only the power of perfsleuth's defaults (ρ = .2, Δρ = .1 and .3), printed",
    )
    parser.add_argument(
        "--defaults-spikes",
        action="store_true",
        help="only the spike findings of perfsleuth's defaults with no change, printed",
    )
    parser.add_argument(
        "--seed-set",
        type=int,
        help="with --defaults-fp or --defaults-power: other series (a number above 4; the "
        "reproduction's are 1 and 2)",
    )
    parser.add_argument(
        "--change",
        choices=FACTORS,
        default="service",
        help="what carries Δρ in (b): the mean service time (the paper's §4.1) or arrival rate",
    )
    args = parser.parse_args()
    if args.seed_set is not None and args.seed_set <= 4:
        parser.error(
            f"--seed-set must be above 4 (1–4 are the reproduction's), got {args.seed_set}"
        )
    reps = 100 if args.quick else args.reps
    if args.defaults_fp:
        print_defaults_false_positives(reps, args.seed_set or 1)
        return
    if args.defaults_power:
        print_defaults_power(reps, args.change, args.seed_set or 2)
        return
    if args.defaults_spikes:
        print_defaults_spike_findings(reps)
        return
    if args.out is None:
        parser.error(
            "--out is required unless --defaults-fp, --defaults-power or --defaults-spikes"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    lines: list[str] = [
        f"# Berry & Hellerstein (1991) §4 reproduction — {reps} replicates/cell",
        "",
    ]
    result: dict[str, object] = {"reps": reps, "alpha": ALPHA, "warmup": WARMUP}

    # (a)
    lines += [
        "## (a) False-positive rate, α = .05, no change (90% Wilson CI)",
        "paper: FPA/Eq.8 ≈ .05 (fig. 9 at Δρ=0); F test ≈ .95 at N=1000, ρ=.1 (fig. 5)",
        "",
        "| N | ρ | metric | FPA | paper Eq.8 | F | perfsleuth defaults |",
        "|---|---|---|---|---|---|---|",
    ]
    fp_out = []
    for n in (100, 1000):
        for rho in (0.1, 0.2, 0.5, 0.8):
            rates = false_positives(n, rho, reps)
            for k in METRICS:
                cells = [str(rates[m, k]) for m in METHODS]
                lines.append(f"| {n} | {rho} | {k} | " + " | ".join(cells) + " |")
                fp_out.append(
                    {"n": n, "rho": rho, "metric": k} | {m: rates[m, k].as_dict() for m in METHODS}
                )
    result["false_positives"] = fp_out

    # (b), (c)
    lines += [
        "",
        f"## (b) Power vs Δρ (FPA, α=.05, change of the {args.change} at f=.5), both metrics",
        "paper fig. 9: P(accept H0) falls with Δρ, faster for larger N and smaller ρ",
        "",
        "| N | ρ | Δρ | power: response | power: queue length |",
        "|---|---|---|---|---|",
    ]
    acc_lines = [
        "",
        "## (c) Candidate accuracy (fig. 10): f̂ = fraction after the optimal split, true f = .5",
        "paper: mass near f=.5, better for larger Δρ, larger N, smaller ρ; late > early at high ρ",
        "",
        "| N | ρ | Δρ | median f̂ | 10–90% f̂ | P(|f̂−f|≤.05) | P(|f̂−f|≤.10) | late | early |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    pw_out, acc_out = [], []
    for n in (100, 1000):
        for rho in (0.2, 0.5):
            for d in (0.0, 0.05, 0.1, 0.2, 0.3):
                rates, fhat = power_and_accuracy(n, rho, d, reps, factor=args.change)
                lines.append(
                    f"| {n} | {rho} | {d} | {rates['response']} | {rates['queue_length']} |"
                )
                pw_out.append(
                    {"n": n, "rho": rho, "delta_rho": d} | {k: rates[k].as_dict() for k in METRICS}
                )
                if d in (0.1, 0.3):
                    s = accuracy_summary(fhat)
                    acc_out.append({"n": n, "rho": rho, "delta_rho": d} | s)
                    acc_lines.append(
                        f"| {n} | {rho} | {d} | {s['median_fhat']:.3f} | "
                        f"{s['q10_fhat']:.2f}–{s['q90_fhat']:.2f} | {s['p_within_0.05']:.2f} | "
                        f"{s['p_within_0.10']:.2f} | {s['p_late']:.2f} | {s['p_early']:.2f} |"
                    )
    result["power"] = {"factor": args.change, "cells": pw_out}

    # (d) §4.4: the same Δρ carried by the arrival rate, queue lengths against response times
    lines += [
        "",
        "## (d) §4.4: queue lengths vs response times, Δρ a change of the arrival rate (FPA)",
        "paper: queue lengths are often more sensitive than response times",
        "",
        "| N | ρ | Δρ | power: response | power: queue length |",
        "|---|---|---|---|---|",
    ]
    queue_out = []
    for n in (100, 1000):
        for d in (0.1, 0.3):
            rates, _ = power_and_accuracy(n, 0.2, d, reps, factor="arrival")
            lines.append(f"| {n} | 0.2 | {d} | {rates['response']} | {rates['queue_length']} |")
            queue_out.append(
                {"n": n, "rho": 0.2, "delta_rho": d} | {k: rates[k].as_dict() for k in METRICS}
            )
    result["queue_vs_response"] = queue_out

    lines += [
        "",
        "## (e) Ceiling: power of the known-location difference of means, calibrated exactly",
        "",
        "| change of | N | ρ | Δρ | response | queue length |",
        "|---|---|---|---|---|---|",
    ]
    oracle_out = []
    for factor in FACTORS:
        for n in (100, 1000):
            for d in (0.1, 0.3):
                rates = oracle_power(n, 0.2, d, reps, factor)
                lines.append(
                    f"| {factor} | {n} | 0.2 | {d} | {rates['response']} | "
                    f"{rates['queue_length']} |"
                )
                oracle_out.append(
                    {"factor": factor, "n": n, "rho": 0.2, "delta_rho": d}
                    | {k: rates[k].as_dict() for k in METRICS}
                )
    result["oracle_power"] = oracle_out
    result["accuracy"] = acc_out
    lines += acc_lines
    lines += ["", f"elapsed {time.perf_counter() - t0:.0f} s"]
    (args.out / "results.json").write_text(json.dumps(result, indent=2))
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
