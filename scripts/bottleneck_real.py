"""Real bottleneck scenarios on this machine and the confusion table (issue 8's acceptance).

Six workloads, each in its own cgroup — sequential read, sequential write, random read, random
write (direct I/O), CPU-bound, page-cache thrashing in a 128 MiB cgroup — run ``--runs`` times;
each run's counters (machine and cgroup) go to the inference and the inferred bottleneck is
compared with the scenario's.

Run (as root, with fio): .venv/bin/python scripts/bottleneck_real.py [--runs 3]
    [--calibration PROFILE] [--error-model ERRORS] [--seconds 8] [--save OUT.json]

Without --calibration the machine is calibrated first (quick plan, forced when busy: this is a
shared machine) and the profile saved to --save-calibration. --save keeps each run's window
counters, fio's numbers and the inference, so the inference can be re-run offline.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from perfsleuth.bottleneck.explain import explain
from perfsleuth.bottleneck.kernels.calibration import apply_profile, load_profile
from perfsleuth.bottleneck.kernels.errormodel import ErrorModel
from perfsleuth.bottleneck.kernels.model import load_model
from perfsleuth.bottleneck.measure import Plan, calibrate, machine_busy

# the scenarios are a test harness (tests/support), not part of the library
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.bottleneck_scenarios import Outcome, confusion, run_scenarios


def _record(o: Outcome) -> dict[str, object]:
    inf = o.inference
    return {
        "scenario": o.scenario.name,
        "expected": o.scenario.expected,
        "run": o.run,
        "inferred": inf.bottleneck,
        "correct": o.correct,
        "fio": {"iops": o.result.iops, "bw": o.result.bw, "usr": o.result.usr, "sys": o.result.sys},
        "counters": o.result.counters(),
        "utilisation": dict(zip(inf.resources, map(float, inf.utilisation), strict=True)),
        "p_bottleneck": dict(zip(inf.resources, map(float, inf.p_bottleneck), strict=True)),
        "w": dict(zip(inf.parameters, map(float, inf.w), strict=True)),
        "misfit": inf.misfit,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0, help="sampled per run")
    parser.add_argument("--calibration", type=Path, help="an existing calibration profile")
    parser.add_argument(
        "--save-calibration", type=Path, default=Path("/var/tmp/perfsleuth-real-calibration.toml")
    )
    parser.add_argument("--error-model", type=Path, help="an error model from perfsleuth verify")
    parser.add_argument("--file", default="/var/tmp/perfsleuth-real.bin")
    parser.add_argument("--save", type=Path, help="write every run's counters and answer (JSON)")
    args = parser.parse_args()

    model = load_model()
    if args.calibration is None:
        print(f"calibrating (machine {machine_busy(1.0):.0%} busy) ...", file=sys.stderr)
        profile = calibrate(
            model,
            plan=Plan.quick(),
            force=True,
            path=args.file.replace(".bin", "-calibrate.bin"),
            progress=lambda m: print("  " + m, file=sys.stderr),
        )
        profile.save(args.save_calibration)
        print(f"calibration: {args.save_calibration}", file=sys.stderr)
    else:
        profile = load_profile(args.calibration)
    model = apply_profile(model, profile)
    errors = None if args.error_model is None else ErrorModel.load(args.error_model, model)

    def show(o: Outcome) -> None:
        utils = " ".join(
            f"{r} {u:4.0%}"
            for r, u in zip(o.inference.resources, o.inference.utilisation, strict=True)
        )
        mark = "ok " if o.correct else "MISS"
        did = (
            f"fio {o.result.iops:8,.0f} IOPS {o.result.bw / 2**20:7,.1f} MiB/s"
            if o.scenario.job.kind != "cpu"
            else f"fio {o.result.usr:.2f} cores user      "
        )
        print(
            f"{mark} run {o.run} {o.scenario.name:22s} expected {o.scenario.expected:6s} "
            f"inferred {o.inference.bottleneck:6s} | {did} | {utils} | "
            f"{explain(model, o.inference)}",
            flush=True,
        )

    started = time.monotonic()
    load = os.getloadavg()[0]
    outcomes = run_scenarios(
        model,
        error_model=errors,
        runs=args.runs,
        seconds=args.seconds,
        file=args.file,
        progress=show,
    )
    print()
    print(confusion(outcomes, model.resource_names))
    print(
        f"({time.monotonic() - started:.0f} s; load average {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end; error model: "
        f"{'learned' if errors else 'model defaults'})"
    )
    if args.save is not None:
        args.save.write_text(json.dumps([_record(o) for o in outcomes], indent=1))
        print(f"runs saved: {args.save}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
