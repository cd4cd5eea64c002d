"""The benchmark scripts that reach into the change-point kernels still run.

These scripts wrap or call private kernel functions (``kernel_patch.patched``, or
``search._alternate``, ``seeded.refine``, ``robust._period_in_octave`` directly) to trace or
rebuild one stage of a search, and produce numbers quoted in ``docs/changepoints.md``. A
kernel's changed signature breaks them only when they run: on 2026-12-02 four had (a new
argument of ``refine`` and of ``_alternate``, a fourth value of ``_long_run_scale``, the
period search's centred sums). Each runs here on its synthetic series with its smallest
options (the ones that read the fetched corpora cannot run on a fresh machine;
``changepoints_short_misses.py``'s tracer is run on a synthetic case instead)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import changepoints_accuracy as accuracy  # noqa: E402
import changepoints_short_misses as misses  # noqa: E402

SCRIPTS = [
    ("changepoints_bumps", "--size", "100", "--reps", "5", "--mm1", "100,0.8", "--reps-mm1", "2"),
    ("changepoints_cycle_choice", "--reps", "1"),
    ("changepoints_cycle_levels", "--reps", "1", "--sizes", "2000", "--only", "stairs"),
    ("changepoints_fragments", "--sizes", "10000", "--shifts", "2"),
    ("changepoints_gross_spike", "--seeds", "2"),
    ("changepoints_jump_scale", "--reps", "2"),
    ("changepoints_kinks", "--null", "--power", "--competitions", "--reps", "2"),
    ("changepoints_profile", "--size", "1000", "--shifts", "2"),
    ("changepoints_trend_bic",),
    ("changepoints_trend_size", "--reps", "2", "--sizes", "120", "--phis", ".5", "--explain"),
]


@pytest.mark.parametrize("script", SCRIPTS, ids=[s[0] for s in SCRIPTS])
def test_a_script_that_reaches_into_the_kernels_runs(script: tuple[str, ...]) -> None:
    name, *args = script
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert any(ch.isdigit() for ch in done.stdout), done.stdout  # it printed its numbers


def test_the_misses_tracer_attributes_a_synthetic_series() -> None:
    """A step the defaults find and one too small for them: the tracer (which wraps the
    search's stages) reports the found one as no miss and gives the other a gate."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal(200)
    values[60:] += 6.0  # found
    values[140:] += 0.3  # below every floor
    case = accuracy.Case("short", "synthetic", values, points=[60, 140], half="tune")
    verdicts = misses.Verdicts()
    misses.diagnose(case, verdicts)
    assert verdicts.annotated == 2
    assert [m[1] for m in verdicts.misses] == [140]
    assert verdicts.misses[0][2] in misses.GATES
